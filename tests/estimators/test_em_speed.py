"""Exact EM on large bit-vector uploads: the ingredients of its speed.

Not timed: each test pins a mechanism of the speed (iterations, evaluations,
memory layout, distinct rows, compiled products equal to the numpy ones,
memory of the statistics) so that a regression shows as a failure, not as a
slower benchmark.
"""

import pickle
import threading
import tracemalloc

import joblib
import numpy as np
import pytest
import scipy.sparse as sp

from sklearn_uldp import (
    RAPPOR,
    EMEstimator,
    RandomizedResponse,
    UtilityOptimizedRAPPOR,
)
from sklearn_uldp.estimators import maximize_likelihood
from sklearn_uldp.mechanisms import _bit_rows, _rappor
from sklearn_uldp.mechanisms._bit_rows import BitRows

# The exact maximum-likelihood estimate (the default estimate may be shrunk).
_MLE = {"shrinkage": None} if "shrinkage" in EMEstimator().get_params() else {}


def _reports(mech, k, n, alpha=0.3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.choice(k, size=(n, 1), p=rng.dirichlet(np.full(k, alpha)))
    return mech.fit_transform(X)


def _random_bits(n, k, density, seed=0):
    return (np.random.default_rng(seed).random((n, k)) < density).astype(np.uint8)


# ----------------------------------------------------------------- iterations
def test_em_with_zeros_at_the_optimum_takes_few_iterations():
    # RR, k = 100, eps = 1, a skewed distribution: the maximum-likelihood
    # point has zeros. Shrinking SQUAREM's step to stay in the simplex took
    # 1,282 iterations (5,123 evaluations); zeroing steps take a handful.
    k = 100
    R = _reports(RandomizedResponse(1.0, categories=np.arange(k), random_state=0), k, 100_000)
    em = EMEstimator(tol=1e-8, **_MLE).fit(R)
    assert em.converged_ and em.duality_gap_ <= 1e-8  # the certificate
    assert em.n_iter_ <= 60
    assert (em.distribution_ == 0).sum() >= 5  # zeros are exact
    # the same maximum as plain EM run far (to the last digits it reaches)
    slow = EMEstimator(acceleration=None, tol=1e-6, max_iter=100_000, **_MLE).fit(R)
    assert em.log_likelihood_ >= slow.log_likelihood_ - 1e-9


def test_squarem_costs_two_evaluations_per_iteration():
    # No stabilising map: an iteration is two evaluations (three before),
    # plus one for a rare monotonicity fall-back.
    k = 1000
    R = _reports(RAPPOR(1.0, theta=0.5, categories=np.arange(k), random_state=0), k, 20_000)
    em = EMEstimator(working_set=False, **_MLE).fit(R)
    info = em._fitted_result()[1]
    assert em.converged_
    assert info["n_evaluations"] <= 2.3 * em.n_iter_ + 2


def test_zeroed_categories_come_back_when_the_gradient_asks():
    # Start with categories at exactly zero that the optimum needs: the
    # certificate max(g) - 1 <= tol covers them, so EM must revive them.
    channel = RandomizedResponse(1.0, categories=[0, 1, 2, 3]).fit().channel_
    stats = channel.statistics(np.repeat([0, 1, 2, 3], [400, 300, 200, 100]))
    p, info = maximize_likelihood(
        lambda q: channel.em_gradient(stats, q), np.array([0.5, 0.5, 0.0, 0.0]), tol=1e-9
    )
    assert info["converged"] and info["gap"] <= 1e-9
    assert p[2] > 0.01  # revived
    q, _ = maximize_likelihood(lambda q: channel.em_gradient(stats, q), np.full(4, 0.25), tol=1e-9)
    np.testing.assert_allclose(p, q, atol=1e-5)


# ----------------------------------------------------------- distinct rows
# Pinned floats (tests/README.md): tolerances that hold on any processor.
# The EM terms (sums of 1/D and log D over the reports, and the products with
# the bits) computed by the compiled kernels, the numpy fallbacks, per distinct
# row or per block, and by dense products: the same sums in other orders, so
# 1e-10 relative (the error of a sum of n terms grows with n; a wrong kernel
# is off by 1e-3 and more). A report's row sum (a few terms): 1e-12.
@pytest.mark.pinned
def test_repeated_rows_are_kept_once_with_their_multiplicity():
    # uRAP with 10 sensitive values: at most 2^10 patterns for 10^5 reports.
    k, s = 52, 10
    mech = UtilityOptimizedRAPPOR(
        1.0, sensitive=np.arange(s), categories=np.arange(k), random_state=0
    )
    R = _reports(mech, k, 100_000, alpha=1.0)
    store = mech.channel_.statistics(mech.channel_.encode_reports(R), keep_reports=True).extra
    distinct = store.distinct_rows()
    assert distinct.n_rows <= 2**s < store.n_rows / 50
    assert distinct.distinct_rows() is distinct
    b = np.random.default_rng(0).random(s)
    whole = BitRows(s, store.density)
    whole._distinct = whole  # products over every row, as before
    for block in store._all_blocks():
        whole.append_dense(np.unpackbits(block.packed, axis=1, count=s, bitorder="little"))
    for got, want in zip(store.em_terms(0.7, b), whole.em_terms(0.7, b), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-10)
    # restricting the distinct rows merges them further, same products
    columns = np.array([1, 4, 7])
    restricted = store.restrict(columns)
    assert restricted.distinct_rows().n_rows <= 8
    for got, want in zip(
        restricted.em_terms(0.7, b[columns]),
        whole.restrict(columns).em_terms(0.7, b[columns]),
        strict=True,
    ):
        np.testing.assert_allclose(got, want, rtol=1e-10)


def test_unique_rows_are_not_compressed():
    # OUE-like rows are all distinct: the store is its own distinct store,
    # decided from the first block (no pass over the others).
    store = BitRows(200, 0.3)
    store.append_dense(_random_bits(5000, 200, 0.3))
    assert store.distinct_rows() is store


def test_em_on_distinct_rows_is_the_same_estimate(monkeypatch):
    k, s = 30, 8
    mech = UtilityOptimizedRAPPOR(
        1.0, sensitive=np.arange(s), categories=np.arange(k), random_state=0
    )
    R = _reports(mech, k, 50_000, alpha=1.0)
    fast = EMEstimator(tol=1e-9, **_MLE).fit(R)
    assert fast.statistics_.extra.distinct_rows().n_rows <= 2**s
    monkeypatch.setattr(_bit_rows, "_DISTINCT_MAX_FRACTION", 0.0)
    slow = EMEstimator(tol=1e-9, **_MLE).fit(R)
    assert slow.statistics_.extra.distinct_rows() is slow.statistics_.extra
    np.testing.assert_allclose(fast.distribution_, slow.distribution_, atol=1e-6)


# ------------------------------------------------------------ products
@pytest.mark.pinned
@pytest.mark.parametrize("density", [0.05, 0.5])  # sparse and packed layouts
@pytest.mark.parametrize("weighted", [False, True])
def test_compiled_products_equal_numpy_products(density, weighted, monkeypatch):
    pytest.importorskip("numba")
    monkeypatch.setattr(_bit_rows, "_BLOCK_ROWS", 97)
    k = 37
    bits = _random_bits(1000, k, density, seed=1)
    b = np.random.default_rng(2).random(k)
    weights = np.random.default_rng(3).integers(1, 9, 1000).astype(float)
    terms = {}
    for kernel in ("numpy", "numba"):
        monkeypatch.setattr(_bit_rows, "_KERNEL", kernel)
        store = BitRows(k, density)
        store.append_dense(bits)
        store._distinct = store
        if weighted:
            store._weights = weights
        terms[kernel] = store.em_terms(0.3, b, n_jobs=2)
        # and on a working set (packed: the compiled column selection)
        columns = np.array([0, 3, 9, 10, 11, 30, 36])
        restricted = store.restrict(columns)
        restricted._distinct = restricted
        terms[kernel + "-restricted"] = restricted.em_terms(0.3, b[columns])
    for a, c in zip(terms["numpy"], terms["numba"], strict=True):
        np.testing.assert_allclose(a, c, rtol=1e-10)
    for a, c in zip(terms["numpy-restricted"], terms["numba-restricted"], strict=True):
        np.testing.assert_allclose(a, c, rtol=1e-10)


@pytest.mark.pinned
def test_compiled_products_of_extreme_probabilities(monkeypatch):
    # The compiled loop takes one logarithm per 16 rows (of their product);
    # products out of the normal range take them row by row.
    pytest.importorskip("numba")
    bits = np.zeros((40, 16), dtype=np.uint8)
    bits[::3, 2] = 1
    for A, scale in ((1e-30, 1e-30), (1e30, 1e30), (0.5, 1.0)):
        b = np.full(16, scale)
        terms = {}
        for kernel in ("numpy", "numba"):
            monkeypatch.setattr(_bit_rows, "_KERNEL", kernel)
            store = BitRows(16, 0.5)
            store.append_dense(bits)
            store._distinct = store
            terms[kernel] = store.em_terms(A, b)
        for a, c in zip(terms["numpy"], terms["numba"], strict=True):
            np.testing.assert_allclose(a, c, rtol=1e-10)


def test_restricted_packed_blocks_are_row_ordered():
    # A Fortran-ordered block made every product copy it back (a quarter of
    # a step); the restricted store's blocks are C-ordered whatever kernel.
    store = BitRows(300, 0.5)
    store.append_dense(_random_bits(3000, 300, 0.5))
    columns = np.arange(0, 300, 3)
    kernels = [("numpy",), ("numba",)] if getattr(_bit_rows, "numba", None) else [()]
    for kernel in kernels:
        with pytest.MonkeyPatch.context() as patch:
            if kernel:
                patch.setattr(_bit_rows, "_KERNEL", kernel[0])
            for block in store.restrict(columns)._all_blocks():
                assert block.packed.flags.c_contiguous


def test_threads_by_default():
    # Threads change the time of a product, not its value: all cores unless
    # a joblib context says otherwise.
    assert _bit_rows._n_threads(None) == joblib.cpu_count(only_physical_cores=False)
    with joblib.parallel_config(n_jobs=1):
        assert _bit_rows._n_threads(None) == 1
    assert _bit_rows._n_threads(1) == 1


# ------------------------------------------------------------ statistics
def test_oue_column_sums_in_uint8_slabs_are_exact():
    for n in (0, 7, 255, 256, 1000):
        bits = _random_bits(n, 13, 0.5, seed=n)
        # C order (compiled loop when numba is installed), else uint8 slabs
        for layout in (bits, np.asfortranarray(bits)):
            np.testing.assert_array_equal(
                _rappor._column_sums(layout), bits.sum(axis=0, dtype=np.int64)
            )
    ones = np.ones((70_000, 3), dtype=np.uint8)  # no uint8/uint16 overflow
    for layout in (ones, np.asfortranarray(ones)):
        np.testing.assert_array_equal(_rappor._column_sums(layout), [70_000] * 3)


def test_statistics_of_int32_csr_reports_keep_a_small_memory():
    # np.bincount widens int32 indices to int64: 8 bytes per set bit at once
    # (1.17 GB for an OUE upload); in chunks it is bounded.
    k, n = 1000, 20_000
    mech = RAPPOR(1.0, theta=0.5, categories=np.arange(k), random_state=0)
    dense = _reports(mech, k, n)
    csr = sp.csr_array(dense)
    csr = sp.csr_array(
        (csr.data, csr.indices.astype(np.int32), csr.indptr.astype(np.int32)), shape=csr.shape
    )
    assert csr.indices.dtype == np.int32
    nnz = csr.nnz
    channel = mech.channel_
    tracemalloc.start()
    try:
        stats = channel.statistics(csr)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert nnz * 8 > 4e7
    assert peak < 2 * nnz
    np.testing.assert_array_equal(stats.counts, dense.sum(axis=0))


def test_sparse_sampling_writes_int32_indices():
    pytest.importorskip("numba")
    bits = _random_bits(500, 77, 0.4)
    bits[-1] = 1
    csr = _rappor._dense_bits_to_csr(bits)
    assert csr.indices.dtype == np.int32 and csr.indptr.dtype == np.int32
    assert csr.has_canonical_format
    np.testing.assert_array_equal(csr.toarray(), bits)


# ------------------------------------------------------------ progress
def test_verbose_reports_iterations_log_likelihood_and_gap(capsys):
    R = _reports(RandomizedResponse(1.0, categories=np.arange(5), random_state=0), 5, 2000)
    em = EMEstimator(verbose=2, **_MLE).fit(R)
    em.distribution_  # noqa: B018 - runs EM
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if line.startswith("EM iteration")]
    assert len(lines) == em.n_iter_
    assert "log-likelihood" in lines[-1] and "duality gap" in lines[-1]
    em = EMEstimator(verbose=0, **_MLE).fit(R)
    em.distribution_  # noqa: B018
    assert "EM iteration" not in capsys.readouterr().out


# ------------------------------------------------- RAPPOR at the paper's scale
# (k = 12,800, n = 240,000: 1.45e8 set bits; every pass over them counts)
def test_sampler_reports_are_not_checked_again_when_fitted(monkeypatch):
    # The sampler writes canonical CSR and flags it; the flag survives the
    # conversion in encode_reports, so a fit makes no O(nnz) check of the
    # order of the indices (scipy's, 0.1-0.3 s at the paper's scale).
    k, n = 300, 3000
    mech = RAPPOR(2.0, categories=np.arange(k), random_state=0, sparse_output=True)
    reports = _reports(mech, k, n)
    expected = reports.toarray().sum(axis=0)
    calls = []

    def check(*args):
        calls.append(1)
        return True

    # scipy >= 1.11 imports the check into _compressed; older versions call
    # it through the _sparsetools module
    for module in (sp._compressed, sp._sparsetools):
        if hasattr(module, "csr_has_canonical_format"):
            monkeypatch.setattr(module, "csr_has_canonical_format", check)
    em = EMEstimator(**_MLE).fit(reports)
    assert calls == []
    np.testing.assert_array_equal(em.statistics_.counts, expected)
    # reports of unknown origin are still checked
    plain = sp.csr_array((reports.data, reports.indices, reports.indptr), shape=reports.shape)
    mech.channel_.encode_reports(plain)
    assert calls == [1]


@pytest.mark.pinned
def test_working_set_store_is_selected_in_one_compiled_pass(monkeypatch):
    # One compiled pass per block (map, keep, renumber), where the numpy
    # selection made five (take, compare, reduceat, cumsum, compress).
    pytest.importorskip("numba")
    monkeypatch.setattr(_bit_rows, "_BLOCK_ROWS", 97)
    k = 40
    bits = _random_bits(1000, k, 0.05, seed=7)
    store = BitRows(k, 0.05)
    store.append_dense(bits)
    n_blocks = len(store._all_blocks())
    calls = []
    select = _bit_rows._sparse_select

    def counted(*args):
        calls.append(1)
        return select(*args)

    monkeypatch.setattr(_bit_rows, "_sparse_select", counted)
    columns = np.array([39, 0, 3, 17, 18, 25])
    b = np.random.default_rng(8).random(columns.size)
    got = store.restrict(columns, n_jobs=2)
    assert len(calls) == n_blocks > 5
    np.testing.assert_array_equal(got.row_sizes(), bits[:, columns].sum(axis=1))
    monkeypatch.setattr(_bit_rows, "_KERNEL", "numpy")
    want = store.restrict(columns)
    for x, y in zip(got.em_terms(0.4, b), want.em_terms(0.4, b), strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-10)


@pytest.mark.pinned
def test_compiled_sparse_products_allocate_no_unit_data(monkeypatch):
    # The unit data of scipy's products (8 bytes per set bit of the largest
    # block, 32 MB) are not allocated when the compiled loop runs.
    pytest.importorskip("numba")
    k = 50
    store = BitRows(k, 0.05)
    store.append_dense(_random_bits(3000, k, 0.05, seed=9))
    b = np.random.default_rng(10).random(k)
    monkeypatch.setattr(_bit_rows, "_KERNEL", "numpy")
    want = store.em_terms(0.6, b)

    def no_unit_data(size):
        raise AssertionError("unit data allocated for the compiled products")

    monkeypatch.setattr(_bit_rows, "_KERNEL", "numba")
    monkeypatch.setattr(_bit_rows, "_unit_data", no_unit_data)
    for x, y in zip(store.em_terms(0.6, b), want, strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-10)


@pytest.mark.pinned
@pytest.mark.parametrize("k, dtype", [(300, np.uint16), (40_000, np.uint16), (70_000, np.uint32)])
def test_sparse_blocks_keep_unsigned_column_indices(k, dtype):
    # Compiled code indexing with a signed integer checks for a negative
    # (wrap-around) index at every access: unsigned indices take a quarter
    # less time per set bit in the products and the working-set selection.
    rng = np.random.default_rng(11)
    n = 200
    sizes = rng.integers(0, 30, n)
    indptr = np.concatenate([[0], np.cumsum(sizes)])
    indices = np.concatenate(
        [np.sort(rng.choice(k, size, replace=False)) for size in sizes]
    ).astype(np.int32)
    store = BitRows(k, 0.001)
    store.append_sparse(indptr, indices)
    assert all(block.indices.dtype == dtype for block in store._all_blocks())
    columns = np.array([k - 1, 0, k // 2, 7])
    restricted = store.restrict(columns)
    assert all(block.indices.dtype == np.uint16 for block in restricted._all_blocks())
    dense = sp.csr_array((np.ones(indices.size), indices, indptr), shape=(n, k))
    b = rng.random(k)
    sum_inv, sum_log, t = store.em_terms(0.5, b)
    D = 0.5 + dense @ b
    np.testing.assert_allclose([sum_inv, sum_log], [(1 / D).sum(), np.log(D).sum()], rtol=1e-10)
    np.testing.assert_allclose(t, dense.T @ (1 / D), rtol=1e-10)
    sub = restricted.em_terms(0.5, b[columns])
    D = 0.5 + dense[:, columns] @ b[columns]
    np.testing.assert_allclose(sub[2], dense[:, columns].T @ (1 / D), rtol=1e-10)


# ------------------------------------------------- the default's shrinkage
def _segment_cases():
    from sklearn_uldp import (
        SubsetSelection,
        UtilityOptimizedBlockDesign,
        UtilityOptimizedSubsetSelection,
    )

    cats = list(range(12))
    return {
        "oue": RAPPOR(1.0, theta=0.5, categories=cats, random_state=0),  # packed store
        "rappor": RAPPOR(4.0, categories=cats, random_state=0),  # sparse store
        "urap": UtilityOptimizedRAPPOR(1.0, sensitive=cats[:5], categories=cats, random_state=0),
        "ss": SubsetSelection(1.0, categories=cats, random_state=0),
        "ubd": UtilityOptimizedBlockDesign(
            1.0, sensitive=cats[:7], categories=cats, random_state=0
        ),
        "uss": UtilityOptimizedSubsetSelection(
            1.0, sensitive=cats[:7], categories=cats, random_state=0
        ),
    }


def _use_kernel_in_blocks(kernel, monkeypatch):
    if kernel == "numba":
        pytest.importorskip("numba")
    monkeypatch.setattr(_bit_rows, "_KERNEL", kernel)
    monkeypatch.setattr(_bit_rows, "_BLOCK_ROWS", 97)  # several blocks


def _segment_ends(name):
    """A fitted channel's statistics of 3000 reports and the segment's ends p0 (with a zero), p1.

    Returns the generator too: the tests draw on from where it stands.
    """
    mech = _segment_cases()[name]
    reports = _reports(mech, 12, 3000, seed=4)
    channel = mech.channel_
    stats = channel.statistics(channel.encode_reports(reports), keep_reports=True)
    rng = np.random.default_rng(5)
    p0, p1 = rng.dirichlet(np.ones(12)), rng.dirichlet(np.ones(12))
    p0[3] = 0.0  # zeros, as emp+thr has
    p0 /= p0.sum()
    return channel, stats, rng, p0, p1


@pytest.mark.pinned
@pytest.mark.parametrize("kernel", ["numpy", "numba"])
@pytest.mark.parametrize("name", sorted(_segment_cases()))
def test_segment_log_likelihood_is_the_log_likelihood_on_the_segment(name, kernel, monkeypatch):
    # The default estimate's shrinkage reads the reports twice and then
    # evaluates the likelihood anywhere on the segment from emp+thr to the
    # MLE: it must equal the channel's own log-likelihood at each point.
    _use_kernel_in_blocks(kernel, monkeypatch)
    channel, stats, rng, p0, p1 = _segment_ends(name)
    on_segment = channel.segment_log_likelihood(stats, p0, p1)
    for w in (0.0, 0.3, 1.0, 0.75, 0.0):  # in any order, ends included
        expected = channel.em_gradient(stats, (1 - w) * p0 + w * p1)[1]
        assert on_segment(w) == pytest.approx(expected, rel=1e-10)


@pytest.mark.pinned
@pytest.mark.parametrize("kernel", ["numpy", "numba"])
@pytest.mark.parametrize("name", sorted(_segment_cases()))
def test_segment_from_the_recorded_em_passes(name, kernel, monkeypatch):
    # The default estimate takes the segment's row sums from the EM passes
    # at its start (1 - c) p0 + c uniform and its end p1, recorded, and the
    # uniform distribution's from the rows' sizes: the same likelihood,
    # without reading the reports (symmetric channels) and without keeping
    # anything once the context is left.
    _use_kernel_in_blocks(kernel, monkeypatch)
    reads = []
    for block in (_bit_rows._SparseBlock, _bit_rows._PackedBlock):
        original = block.row_sums

        def counted(self, *args, _original=original, **kwargs):
            reads.append(1)
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(block, "row_sums", counted)
    channel, stats, rng, p0, p1 = _segment_ends(name)
    uniform = np.full(12, 1 / 12)
    start = 0.99 * p0 + 0.01 * uniform
    with channel.recording_row_sums(stats):
        channel.em_gradient(stats, start)  # EM's first pass
        channel.em_gradient(stats, rng.dirichlet(np.ones(12)))  # its middle ones
        channel.em_gradient(stats, p1)  # its last
        on_segment = channel.segment_log_likelihood(
            stats, p0, p1, p0_parts=[(1 / 0.99, start), (-0.01 / 0.99, uniform)]
        )
        values = [on_segment(w) for w in (0.0, 0.3, 1.0, 0.75)]
    for w, value in zip((0.0, 0.3, 1.0, 0.75), values, strict=True):
        expected = channel.em_gradient(stats, (1 - w) * p0 + w * p1)[1]
        assert value == pytest.approx(expected, rel=1e-10)
    if name in ("oue", "rappor", "ss"):  # one value of b at the uniform distribution
        assert reads == []
    store = stats.extra
    assert store._row_sums_record is None  # nothing kept after the context


@pytest.mark.pinned
def test_recorded_row_sums_are_neither_pickled_nor_kept_for_files(tmp_path):
    store = BitRows(n_cols=20, density=0.5)
    rng = np.random.default_rng(0)
    bits = (rng.random((500, 20)) < 0.5).astype(np.uint8)  # all rows distinct
    store.append_dense(bits)
    b = rng.random(20)
    with store.recording_row_sums():
        store.em_terms(1.0, b)
        assert pickle.loads(pickle.dumps(store))._row_sums_record is None
        recorded, _ = store.row_sums(1.0, b)
        assert recorded is store._row_sums_record.first[2]  # no pass
        assert not recorded.flags.writeable
        # another thread sees no record of this one (its own fit would
        # neither read nor end it)
        seen = []
        worker = threading.Thread(target=lambda: seen.append(store._row_sums_record))
        worker.start()
        worker.join()
        assert seen == [None]
    np.testing.assert_allclose(recorded, 1.0 + bits @ b, rtol=1e-10)
    np.testing.assert_array_equal(recorded, store.row_sums(1.0, b)[0])  # as a pass computes
    spilled = store.spill(tmp_path)
    with spilled.recording_row_sums():
        spilled.em_terms(1.0, b)
        assert spilled._row_sums_record.first is None  # 16 bytes a row: not for files
    # one value of b (the uniform distribution): from the rows' sizes
    uniform_sums, _ = store.row_sums(0.5, np.full(20, 0.25))
    np.testing.assert_array_equal(uniform_sums, 0.5 + 0.25 * bits.sum(axis=1))


def test_default_estimate_reads_the_reports_as_often_as_the_mle(monkeypatch):
    # The shrinkage's 20 bisection steps used to cost 20 passes over the
    # reports (2-3 times the MLE's own cost at the paper's scale), then two
    # passes for the segment's ends; now the ends' row sums come from the
    # EM passes at its start and end (recorded), and the uniform
    # distribution's from the rows' sizes: no pass besides the MLE's.
    mech = RAPPOR(6.0, categories=list(range(1000)), random_state=0)
    reports = _reports(mech, 1000, 20_000, seed=7)
    passes = {"em_terms": 0, "row_sums": 0, "block_row_sums": 0}
    counted_methods = [
        (BitRows, "em_terms", "em_terms"),
        (BitRows, "row_sums", "row_sums"),
        (_bit_rows._SparseBlock, "row_sums", "block_row_sums"),
        (_bit_rows._PackedBlock, "row_sums", "block_row_sums"),
    ]
    for owner, method, key in counted_methods:
        original = getattr(owner, method)

        def counted(self, *args, _original=original, _key=key, **kwargs):
            passes[_key] += 1
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(owner, method, counted)
    mle = EMEstimator(shrinkage=None).fit(reports)
    em_passes = passes["em_terms"]
    default = EMEstimator().fit(reports)
    assert 0 < default.shrinkage_weight_ < 1
    assert passes["em_terms"] == 2 * em_passes  # the MLE's, nothing more
    assert passes["row_sums"] == 3  # the EM's start and end, and uniform
    assert passes["block_row_sums"] == 0  # all three without reading a bit
    # init given otherwise: the target's sums cost one pass over the reports
    EMEstimator(init="uniform").fit(reports)
    assert passes["block_row_sums"] > 0
    assert mle.n_iter_ == default.n_iter_
