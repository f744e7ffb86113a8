"""Bit-vector reports kept in files: memory that does not grow with n."""

import gc
import os
import pickle
import tracemalloc

import numpy as np
import pytest
from _channels import random_bits

from sklearn_uldp import RAPPOR, EMEstimator, UtilityOptimizedRAPPOR
from sklearn_uldp.mechanisms import BitRows, RandomizedResponse, _bit_rows
from sklearn_uldp.parallel import reduce_statistics


@pytest.fixture
def small_blocks(bit_row_blocks):
    # Small blocks so that a few thousand rows span many files.
    bit_row_blocks(64, nnz=1000)


def assert_same_terms(a, b):
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)


def spilled_block_files(store):
    return sorted(os.listdir(store.directory))


@pytest.mark.usefixtures("small_blocks")
@pytest.mark.parametrize("density", [0.05, 0.5])  # sparse and packed layouts
def test_spilled_store_has_the_same_rows_and_products(density):
    k = 21
    bits = random_bits(1000, k, density)
    store = BitRows(k, density)
    store.append_dense(bits)
    spilled = store.spill()
    n_full = 1000 // store.block_rows
    assert n_full > 3
    # Every full block is a file; memory holds the partial last block only.
    assert len(spilled_block_files(spilled)) == n_full
    assert spilled.memory_nbytes < store.nbytes / n_full
    assert spilled.nbytes == store.nbytes
    assert store.directory is None and store.memory_nbytes == store.nbytes
    assert spilled.n_rows == 1000
    np.testing.assert_array_equal(spilled.row_sizes(), bits.sum(axis=1))
    b = np.random.default_rng(1).random(k)
    assert_same_terms(spilled.em_terms(0.7, b), store.em_terms(0.7, b))
    assert_same_terms(spilled.em_terms(0.7, b, n_jobs=2), store.em_terms(0.7, b))


@pytest.mark.usefixtures("small_blocks")
@pytest.mark.parametrize("density", [0.05, 0.5])
def test_chunks_added_to_a_spilled_store_are_spilled(density):
    k = 13
    bits = random_bits(2000, k, density, seed=2)
    whole = BitRows(k, density)
    whole.append_dense(bits)
    total = BitRows(k, density)
    total.append_dense(bits[:150])
    total = total.spill()
    first = total
    for lo in range(150, 2000, 170):
        chunk = BitRows(k, density)
        chunk.append_dense(bits[lo : lo + 170])
        total = total + chunk
        # memory: the partial last block, never the rows added so far
        assert total.memory_nbytes < whole.nbytes / 10
        assert total.directory == first.directory
    assert total.n_rows == 2000 and first.n_rows == 150  # operands unchanged
    b = np.random.default_rng(3).random(k)
    assert_same_terms(total.em_terms(1.1, b), whole.em_terms(1.1, b))


@pytest.mark.usefixtures("small_blocks")
@pytest.mark.parametrize("density", [0.05, 0.5])
def test_restricted_spilled_store_is_spilled_and_its_files_go_with_it(density):
    k = 19
    columns = [0, 3, 5, 18]
    bits = random_bits(700, k, density, seed=4)
    store = BitRows(k, density)
    store.append_dense(bits)
    spilled = store.spill()
    before = spilled_block_files(spilled)
    restricted = spilled.restrict(columns, n_jobs=2)
    assert restricted.directory == spilled.directory
    assert restricted.memory_nbytes < restricted.nbytes / 5
    assert len(spilled_block_files(spilled)) == 2 * len(before)
    b = np.random.default_rng(5).random(len(columns))
    assert_same_terms(restricted.em_terms(0.7, b), store.restrict(columns).em_terms(0.7, b))
    del restricted
    gc.collect()
    assert spilled_block_files(spilled) == before


@pytest.mark.usefixtures("small_blocks")
def test_spill_directory_is_removed_with_the_last_store_using_it(tmp_path):
    store = BitRows(10, 0.5)
    store.append_dense(random_bits(500, 10, 0.5))
    spilled = store.spill(tmp_path)
    directory = spilled.directory
    assert os.path.dirname(directory) == str(tmp_path)
    chunk = BitRows(10, 0.5)
    chunk.append_dense(random_bits(300, 10, 0.5, seed=1))
    total = spilled + chunk
    del spilled
    gc.collect()
    assert os.path.isdir(directory)  # `total` still reads its blocks
    del total
    gc.collect()
    assert not os.path.exists(directory)
    assert os.listdir(tmp_path) == []


@pytest.mark.usefixtures("small_blocks")
@pytest.mark.parametrize("damage", ["remove", "truncate"])
def test_missing_or_truncated_block_files_are_reported(damage):
    store = BitRows(10, 0.05)
    store.append_dense(random_bits(400, 10, 0.05))
    spilled = store.spill()
    victim = os.path.join(spilled.directory, spilled_block_files(spilled)[1])
    if damage == "remove":
        os.remove(victim)
    else:
        with open(victim, "r+b") as file:
            file.truncate(os.path.getsize(victim) - 1)
    with pytest.raises(OSError, match="missing or truncated.*Fit the estimator again"):
        spilled.em_terms(1.0, np.ones(10))


@pytest.mark.usefixtures("small_blocks")
def test_pickled_spilled_store_spills_again_with_its_data(tmp_path):
    store = BitRows(12, 0.05)
    store.append_dense(random_bits(800, 12, 0.05))
    spilled = store.spill(tmp_path)
    copy = pickle.loads(pickle.dumps(spilled))
    assert copy.directory is not None and copy.directory != spilled.directory
    assert os.path.dirname(copy.directory) == str(tmp_path)
    assert len(spilled_block_files(copy)) == len(spilled_block_files(spilled))
    # The pickle carries the rows, not paths: it outlives the original files.
    payload = pickle.dumps(spilled)
    directory = spilled.directory
    del spilled
    gc.collect()
    assert not os.path.exists(directory)
    b = np.linspace(0.1, 1.0, 12)
    assert_same_terms(pickle.loads(payload).em_terms(0.5, b), store.em_terms(0.5, b))


@pytest.mark.usefixtures("small_blocks")
@pytest.mark.parametrize(
    "make_mechanism",
    [
        lambda: RAPPOR(1.0, theta=0.5, categories=list(range(30)), random_state=0),
        lambda: RAPPOR(5.0, categories=list(range(30)), random_state=0),
        lambda: UtilityOptimizedRAPPOR(
            1.0, sensitive=list(range(12)), categories=list(range(30)), random_state=0
        ),
    ],
    ids=["OUE eps=1", "RAPPOR eps=5", "uRAP"],
)
def test_em_on_reports_on_disk_is_em_in_memory(make_mechanism, tmp_path):
    X = np.random.default_rng(0).integers(0, 30, size=(6000, 1))
    reports = make_mechanism().fit(X).transform(X)
    in_memory = EMEstimator().fit(reports)
    on_disk = EMEstimator(report_store=tmp_path)
    for lo in range(0, 6000, 700):
        on_disk.partial_fit(reports[lo : lo + 700])
    store = on_disk.statistics_.extra
    assert store.directory.startswith(str(tmp_path))
    assert len(spilled_block_files(store)) >= 10
    np.testing.assert_array_equal(on_disk.distribution_, in_memory.distribution_)
    assert on_disk.n_iter_ == in_memory.n_iter_
    assert on_disk.working_sets_ == in_memory.working_sets_
    # a one-shot fit and fit_statistics spill too; refitting frees the files
    one_shot = EMEstimator(report_store="disk").fit(reports)
    np.testing.assert_array_equal(one_shot.distribution_, in_memory.distribution_)
    directory = one_shot.statistics_.extra.directory
    one_shot.fit(reports)
    gc.collect()
    assert not os.path.exists(directory)
    from_stats = EMEstimator(report_store="disk").fit_statistics(in_memory.statistics_)
    assert from_stats.statistics_.extra.directory is not None
    assert in_memory.statistics_.extra.directory is None  # the input is unchanged
    # and a fitted estimator pickles with its reports
    restored = pickle.loads(pickle.dumps(on_disk))
    restored.partial_fit(reports[:500])
    assert restored.statistics_.extra.directory != store.directory
    assert restored.n_reports_ == 6500


def _peak_bytes_of_chunked_em(mech, X, chunk, report_store):
    """Peak traced memory of partial_fit over chunks, then EM."""
    # One thread: with more, the blocks in flight at the peak depend on timing.
    em = EMEstimator(report_store=report_store, n_jobs=1)
    reports = [mech.transform(X[lo : lo + chunk]) for lo in range(0, len(X), chunk)]
    gc.collect()
    tracemalloc.start()
    try:
        for batch in reports:
            em.partial_fit(batch)
        em.distribution_  # noqa: B018 -- runs EM
        return tracemalloc.get_traced_memory()[1], em
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize(
    "epsilon",
    # packed and sparse layouts; the packed one under tracemalloc is a long run
    [pytest.param(1.0, marks=pytest.mark.slow), 3.0],
)
def test_memory_of_chunked_em_on_disk_does_not_grow_with_n(epsilon, monkeypatch):
    # Blocks of 2048 rows and small gathers: 64,000 reports span 31 blocks,
    # and the per-block temporaries are small next to the store.
    monkeypatch.setattr(_bit_rows, "_BLOCK_ROWS", 2048)
    monkeypatch.setattr(_bit_rows, "_GATHER_BYTES", 1 << 14)
    k, chunk = 256, 4000
    X = np.random.default_rng(0).integers(0, k, size=(64_000, 1))
    mech = RAPPOR(epsilon, theta=0.5, categories=list(range(k)), random_state=0).fit(X)
    # (the reports themselves are made before tracing: they are the caller's)
    small, _ = _peak_bytes_of_chunked_em(mech, X[:16_000], chunk, "disk")
    large, em = _peak_bytes_of_chunked_em(mech, X, chunk, "disk")
    store_bytes = em.statistics_.extra.nbytes
    assert store_bytes > 1.5e6
    # 4x the reports: the store grows by 3/4 of its size; the peak must not.
    assert large - small < 0.1 * store_bytes
    # In memory it does (the test can fail).
    in_memory, _ = _peak_bytes_of_chunked_em(mech, X, chunk, "memory")
    assert in_memory - large > 0.6 * store_bytes


def test_report_store_must_be_memory_disk_or_an_existing_directory(tmp_path):
    R = RAPPOR(1.0, theta=0.5, categories=[0, 1, 2], random_state=0).fit_transform(
        np.array([[0], [1], [2]])
    )
    missing = tmp_path / "missing"
    with pytest.raises(ValueError, match="neither 'memory', 'disk' nor an existing"):
        EMEstimator(report_store=str(missing)).fit(R)
    with pytest.raises(ValueError, match="neither"):
        EMEstimator(report_store="disc").fit(R)
    with pytest.raises(ValueError, match="report_store"):
        EMEstimator(report_store=3).fit(R)


def test_report_store_is_ignored_when_counts_suffice():
    mech = RandomizedResponse(1.0, categories=[0, 1, 2], random_state=0).fit()
    R = mech.transform(np.array([[0], [1], [2], [2]]))
    em = EMEstimator(report_store="disk").fit(R)
    assert em.statistics_.extra is None
    stats = em.statistics_
    assert stats.spill() is stats


@pytest.mark.parametrize("n_jobs", [None, 2])  # in this process, and in workers
def test_reduce_statistics_keeps_reports_on_disk(n_jobs):
    # Default block sizes (worker processes do not see a monkeypatch): 65,536
    # rows a block, so 200,000 reports make 3 files and a partial block.
    n = 200_000
    X = np.random.default_rng(0).integers(0, 20, size=(n, 1))
    mech = RAPPOR(1.0, theta=0.5, categories=list(range(20)), random_state=0).fit(X)
    batches = [mech.transform(X[lo : lo + 30_000]) for lo in range(0, n, 30_000)]
    in_memory = reduce_statistics(batches, keep_reports=True, n_jobs=n_jobs)
    on_disk = reduce_statistics(batches, keep_reports="disk", n_jobs=n_jobs)
    assert in_memory.extra.directory is None
    assert len(spilled_block_files(on_disk.extra)) == 3
    assert on_disk.extra.memory_nbytes < on_disk.extra.nbytes / 4
    assert on_disk.n == n
    np.testing.assert_array_equal(on_disk.counts, in_memory.counts)
    b = np.linspace(0.2, 1.0, 20)
    assert_same_terms(on_disk.extra.em_terms(0.3, b), in_memory.extra.em_terms(0.3, b))
    np.testing.assert_array_equal(
        EMEstimator().fit_statistics(on_disk).distribution_,
        EMEstimator().fit_statistics(in_memory).distribution_,
    )


def test_reduce_statistics_rejects_unknown_keep_reports():
    mech = RAPPOR(1.0, categories=[0, 1], random_state=0).fit()
    batch = mech.transform(np.array([[0], [1]]))
    for bad in ["memory", "Disk", 2, None]:
        with pytest.raises(ValueError, match="keep_reports must be"):
            reduce_statistics([batch], keep_reports=bad)
