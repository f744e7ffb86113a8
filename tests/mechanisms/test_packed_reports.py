"""Packed bit-vector reports (``packed_output=True``): the format and its paths.

The format is pinned (bit order, padding, blocks of several columns), the
packed samplers are tested against the exact channels (chi-square over
whole reports, with a mutated sampler that must fail), and every consumer
gives what it gives on the same reports dense: estimators, EM, partial_fit
on chunks, statistics of batches, multi-column blocks.
"""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from _chisquare import chi_square_pvalue
from scipy import stats

from sklearn_uldp import (
    RAPPOR,
    EMEstimator,
    EmpiricalEstimator,
    SubsetSelection,
    ThresholdEstimator,
    UtilityOptimizedBlockDesign,
    UtilityOptimizedOUE,
    UtilityOptimizedRAPPOR,
    UtilityOptimizedSubsetSelection,
)
from sklearn_uldp.exceptions import ReportMismatchError
from sklearn_uldp.mechanisms import PackedReports, get_channel
from sklearn_uldp.parallel import privatize_partitions, reduce_statistics, statistics_of
from sklearn_uldp.utils import _bits


def _mechanisms(k=11):
    cats = list(range(k))
    return {
        "rappor": RAPPOR(1.0, categories=cats),  # dense noise, all sensitive
        "oue_gaps": RAPPOR(4.0, theta=0.5, categories=cats),  # sparse noise (gaps)
        "urap": UtilityOptimizedRAPPOR(0.5, sensitive=cats[:7], categories=cats),  # masked
        "urap_gaps": UtilityOptimizedRAPPOR(1.0, sensitive=cats[:3], categories=cats),
        "uoue": UtilityOptimizedOUE(1.0, sensitive=cats[:6], categories=cats),
        "ss": SubsetSelection(1.0, categories=cats),
        "ss_complement": SubsetSelection(1.0, subset_size=k - 2, categories=cats),
        "ubd": UtilityOptimizedBlockDesign(1.0, sensitive=cats[:7], categories=cats),
        "ubd_mixture": UtilityOptimizedBlockDesign(
            1.0, sensitive=cats[:7], subset_size="optimal", categories=cats
        ),
        "uss": UtilityOptimizedSubsetSelection(1.0, sensitive=cats[:7], categories=cats),
    }


NAMES = sorted(_mechanisms())


def _data(k, n, seed=0):
    rng = np.random.default_rng(seed)
    return rng.choice(k, size=(n, 1), p=rng.dirichlet(np.ones(k)))


# ------------------------------------------------------------------ format
def test_bit_order_and_padding_are_pinned():
    # bit j of a report is bit j % 8 (least significant first) of byte j // 8
    bits = np.zeros((2, 10), dtype=np.uint8)
    bits[0, [0, 9]] = 1
    bits[1, [3, 8]] = 1
    packed = PackedReports.from_dense(bits)
    assert packed.data.tolist() == [[1, 2], [8, 1]]
    assert packed.shape == (2, 10) and packed.row_bytes == 2 and len(packed) == 2
    np.testing.assert_array_equal(packed.data, np.packbits(bits, axis=1, bitorder="little"))
    np.testing.assert_array_equal(packed.toarray(), bits)
    np.testing.assert_array_equal(np.asarray(packed), bits)
    np.testing.assert_array_equal(packed.tocsr().toarray(), bits)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("k", [11, 16])  # padding bits, and whole bytes
def test_round_trip_packed_dense_sparse(name, k):
    mech = _mechanisms(k)[name].set_params(packed_output=True, random_state=0)
    reports = mech.fit_transform(_data(k, 3000))
    assert isinstance(reports, PackedReports)
    assert reports.channel == mech.channel_ == get_channel(reports)
    assert reports.data.dtype == np.uint8 and reports.data.shape == (3000, -(-k // 8))
    assert reports.shape == (3000, k)
    if k % 8:  # the padding bits of the last byte are 0
        assert not (reports.data[:, -1] >> (k % 8)).any()
    dense = reports.toarray()
    assert dense.dtype == np.uint8 and dense.shape == (3000, k)
    sparse = reports.tocsr()
    np.testing.assert_array_equal(sparse.toarray(), dense)
    again = PackedReports.from_dense(dense, channel=mech.channel_)
    np.testing.assert_array_equal(again.data, reports.data)
    # every form gives the same statistics
    channel = mech.channel_
    for form in (reports, dense, sparse):
        stats_ = channel.statistics(channel.encode_reports(form), keep_reports=True)
        np.testing.assert_array_equal(
            stats_.counts,
            channel.statistics(channel.encode_reports(dense)).counts,
        )
        assert (
            stats_.extra.n_rows
            == channel.statistics(channel.encode_reports(dense), keep_reports=True).extra.n_rows
        )


# Pinned floats (tests/README.md): tolerances that hold on any processor.
# Packed and dense reports give the same counts (compared exactly); the
# per-report posteriors and mean log-likelihood go through other kernels:
# 1e-10 relative. The CLI's CSV holds the estimate's repr (1e-12).
@pytest.mark.pinned
@pytest.mark.parametrize("name", ["rappor", "urap", "ss", "ubd_mixture", "uss"])
def test_estimates_from_packed_equal_estimates_from_dense(name):
    mech = _mechanisms()[name].set_params(packed_output=True, random_state=1)
    reports = mech.fit_transform(_data(11, 5000, seed=1))
    dense = reports.toarray()
    for make in (EmpiricalEstimator, ThresholdEstimator, EMEstimator):
        np.testing.assert_array_equal(
            make().fit(reports).distribution_, make().fit(dense).distribution_
        )
    em = EMEstimator().fit(reports)
    np.testing.assert_allclose(
        em.predict_proba(reports[:50]), em.predict_proba(dense[:50]), rtol=1e-10
    )
    assert em.score(reports[:50]) == pytest.approx(em.score(dense[:50]), rel=1e-10)


@pytest.mark.parametrize("name", ["oue_gaps", "urap", "ubd"])
def test_partial_fit_on_packed_chunks_equals_fit(name):
    mech = _mechanisms()[name].set_params(packed_output=True, random_state=2)
    reports = mech.fit_transform(_data(11, 6000, seed=2))
    for make in (EmpiricalEstimator, EMEstimator):
        whole = make().fit(reports)
        chunked = make()
        for lo in range(0, 6000, 1700):  # rows sliced from the packed reports
            chunk = reports[lo : lo + 1700]
            assert isinstance(chunk, PackedReports) and chunk.channel == mech.channel_
            chunked.partial_fit(chunk)
        np.testing.assert_array_equal(chunked.distribution_, whole.distribution_)
        # packed and dense chunks mix
        mixed = make().partial_fit(reports[:3000]).partial_fit(reports[3000:].toarray())
        np.testing.assert_array_equal(mixed.distribution_, whole.distribution_)


def test_statistics_of_packed_batches_add_up():
    mech = RAPPOR(2.0, theta=0.5, categories=list(range(11)), packed_output=True).fit()
    X = _data(11, 4000, seed=3)
    batches = privatize_partitions(np.array_split(X, 4), mech, random_state=3)
    assert all(isinstance(b, PackedReports) for b in batches)
    total = reduce_statistics(batches, keep_reports=True)
    one = statistics_of(PackedReports(np.concatenate([b.data for b in batches]), 11, mech.channel_))
    np.testing.assert_array_equal(total.counts, one.counts)
    assert total.n == 4000
    np.testing.assert_array_equal(
        EMEstimator().fit_statistics(total).distribution_,
        EMEstimator()
        .fit(PackedReports(np.concatenate([b.data for b in batches]), 11, mech.channel_))
        .distribution_,
    )


def test_several_columns_are_blocks_of_bytes():
    X = np.column_stack([_data(11, 2000, seed=4), _data(11, 2000, seed=5)])
    mech = RAPPOR(1.0, categories=list(range(11)), packed_output=True, random_state=4)
    reports = mech.fit_transform(X)
    assert reports.data.shape == (2000, 4) and reports.n_blocks == 2
    assert reports.shape == (2000, 22)
    dense = reports.toarray()
    dense_mech = RAPPOR(1.0, categories=list(range(11)), random_state=4).fit(X)
    for j in (0, 1):
        block = mech.column_reports(reports, j)
        np.testing.assert_array_equal(block.toarray(), dense[:, 11 * j : 11 * (j + 1)])
        np.testing.assert_array_equal(
            EmpiricalEstimator().fit(block).distribution_,
            EmpiricalEstimator().fit(dense_mech.column_reports(dense, j)).distribution_,
        )
    # pooled: the estimate of both columns' values
    np.testing.assert_array_equal(
        EMEstimator().fit(reports).distribution_, EMEstimator().fit(dense).distribution_
    )


def test_rows_pickle_and_indexing_keep_the_channel():
    mech = SubsetSelection(1.0, categories=list(range(11)), packed_output=True, random_state=0)
    reports = mech.fit_transform(_data(11, 100))
    restored = pickle.loads(pickle.dumps(reports))
    assert restored.channel == mech.channel_
    np.testing.assert_array_equal(restored.data, reports.data)
    for key in (slice(10, 20), np.arange(5), reports.data[:, 0] > 0, 7, (slice(0, 3), slice(None))):
        part = reports[key]
        assert isinstance(part, PackedReports) and part.channel == mech.channel_
        assert part.shape[1] == 11
    with pytest.raises(IndexError, match="rows only"):
        reports[:, 3]


def test_bad_packed_reports_are_refused_with_a_hint():
    mech = RAPPOR(1.0, categories=list(range(11)), packed_output=True, random_state=0)
    reports = mech.fit_transform(_data(11, 100))
    bad = reports.data.copy()
    bad[5, 1] |= 0x80  # bit 15: a padding bit
    with pytest.raises(ReportMismatchError, match="padding bits"):
        EmpiricalEstimator().fit(PackedReports(bad, 11, mech.channel_))
    with pytest.raises(ReportMismatchError, match="bits"):
        EmpiricalEstimator(mechanism=mech).fit(PackedReports(reports.data, 12))
    with pytest.raises(ValueError, match="packbits"):
        PackedReports(reports.data.astype(np.int64), 11)
    with pytest.raises(ValueError, match="choose one"):
        RAPPOR(1.0, categories=[0, 1], sparse_output=True, packed_output=True).fit()
    # uRAP: at most one non-sensitive bit per report
    urap = UtilityOptimizedRAPPOR(1.0, sensitive=[0], categories=list(range(11))).fit()
    two = np.zeros((1, 11), dtype=np.uint8)
    two[0, [4, 5]] = 1
    with pytest.raises(ReportMismatchError, match="non-sensitive"):
        EmpiricalEstimator(mechanism=urap).fit(PackedReports.from_dense(two))
    ss = SubsetSelection(1.0, subset_size=3, categories=list(range(11))).fit()
    with pytest.raises(ReportMismatchError, match="subset_size=3"):
        EmpiricalEstimator(mechanism=ss).fit(PackedReports.from_dense(two))


# --------------------------------------------------- samplers vs channels
def _output_index(channel, data):
    """Column of the channel matrix of each packed report."""
    labels = _bits.pack_rows(channel.output_labels().astype(np.uint8))
    width = labels.shape[1]
    weights = 256 ** np.arange(width, dtype=np.int64)
    lookup = np.full(256**width, -1, dtype=np.int64)
    lookup[labels.astype(np.int64) @ weights] = np.arange(labels.shape[0])
    index = lookup[data.astype(np.int64) @ weights]
    assert (index >= 0).all(), "a report that is no output of the channel"
    return index


def _pvalue(channel, data, x):
    Q = channel.realized_matrix() if hasattr(channel, "realized_matrix") else channel.matrix()
    counts = np.bincount(_output_index(channel, data), minlength=Q.shape[1])
    return chi_square_pvalue(counts, Q[x])


def _packed_pvalues(name, k, kernel, monkeypatch, n=40_000, seed=0):
    from sklearn_uldp.mechanisms import _subset_selection

    monkeypatch.setattr(_bits, "_KERNEL", kernel)
    monkeypatch.setattr(_subset_selection, "_KERNEL", kernel)
    mech = (
        _mechanisms(k)[name]
        .set_params(packed_output=True, random_state=seed)
        .fit(np.arange(k).reshape(-1, 1))
    )
    channel = mech.channel_
    pvalues = []
    for x in (0, k // 2, k - 1):
        reports = mech.transform(np.full((n, 1), x))
        pvalues.append(_pvalue(channel, reports.data, x))
    return pvalues


@pytest.mark.parametrize("kernel", ["numba", "numpy"])
@pytest.mark.parametrize("name", NAMES)
def test_packed_sampler_matches_the_channel(name, kernel, monkeypatch):
    if kernel == "numba":
        pytest.importorskip("numba")
    # k = 9: two bytes a report, 7 padding bits
    pvalues = _packed_pvalues(name, 9, kernel, monkeypatch)
    assert min(pvalues) > 1e-6 / len(pvalues), pvalues


def test_a_wrong_packed_sampler_fails(monkeypatch):
    # The bit-sliced comparison with the threshold's digits in the wrong
    # order (least significant first) draws Bernoulli(q') for another q'.
    pytest.importorskip("numba")
    original = _bits.bernoulli_packed

    def wrong(out, q, rng, **kwargs):
        return original(out, _bits_reversed(q), rng, **kwargs)

    monkeypatch.setattr("sklearn_uldp.mechanisms._rappor.bernoulli_packed", wrong)
    pvalues = _packed_pvalues("rappor", 9, "numba", monkeypatch)
    assert min(pvalues) < 1e-9


def _bits_reversed(q):
    t = int(q * 256)
    return (int(f"{t:08b}"[::-1], 2) + (q * 256 - t)) / 256


# ----------------------------------------------------------------- kernels
@pytest.mark.parametrize("k", [1, 7, 8, 13, 64, 200, 2100])  # 2100: two tiles
def test_kernels_equal_their_numpy_paths(k, monkeypatch):
    pytest.importorskip("numba")
    rng = np.random.default_rng(k)
    bits = (rng.random((1037, k)) < 0.3).astype(np.uint8)
    packed = _bits.pack_rows(bits)
    mask = _bits.pack_rows((rng.random((1, k)) < 0.5).astype(np.uint8))[0]
    results = {}
    for kernel in ("numba", "numpy"):
        monkeypatch.setattr(_bits, "_KERNEL", kernel)
        # rows starting off a word boundary, split between threads
        results[kernel] = [
            _bits.column_counts(packed[3:], n_jobs=2),
            _bits.masked_row_counts(packed, mask),
            *_bits.packed_to_csr(packed, k),
        ]
    for a, b in zip(results["numba"], results["numpy"], strict=True):
        np.testing.assert_array_equal(a, b)
    counts = results["numba"][0]
    np.testing.assert_array_equal(counts[:k], bits[3:].sum(axis=0))
    assert not counts[k:].any()
    matrix = sp.csr_array(bits)
    np.testing.assert_array_equal(results["numba"][2], matrix.indptr)
    np.testing.assert_array_equal(results["numba"][3], matrix.indices)


@pytest.mark.parametrize(
    "n,k,density",
    [
        (8 * 16 * 226 + 13, 8, 1.0),  # past 225 blocks of 16 groups: a byte-lane flush
        (8 * 16 * 15 * 2 + 8 * 15 + 5, 100, 1.0),  # every counter full; 15 groups left over
        (8 * 16 * 3 + 7, 2100, 0.5),  # two tiles
        (8 * 15 + 3, 64, 0.7),  # no whole block of 16 groups
    ],
)
def test_column_counts_carry_save_tree_counts_exactly(n, k, density):
    # The compiled count adds 16 groups of 8 rows at a time through carry-save
    # adders; dense rows fill every bit-sliced counter and nibble lane.
    pytest.importorskip("numba")
    bits = (np.random.default_rng(n).random((n, k)) < density).astype(np.uint8)
    packed = _bits.pack_rows(bits)
    for n_jobs in (1, 2):
        counts = _bits.column_counts(packed, n_jobs=n_jobs)
        np.testing.assert_array_equal(counts[:k], bits.sum(axis=0))
        assert not counts[k:].any()


@pytest.mark.parametrize("q", [0.3, 1 / 256, 0.5 + 1e-9])
def test_bernoulli_packed_rates_ties_and_own_bits(q):
    pytest.importorskip("numba")
    n, k = 20_000, 70
    out = np.empty((n, _bits.packed_width(k)), dtype=np.uint8)
    codes = np.arange(n) % k
    own = np.arange(n) % 3 == 0
    mask = _bits.pack_rows(np.ones((1, k), dtype=np.uint8))[0]
    _bits.bernoulli_packed(out, q, np.random.default_rng(0), mask=mask, codes=codes, own=own)
    bits = _bits.unpack_rows(out, 8 * out.shape[1])
    assert not bits[:, k:].any()  # masked padding
    np.testing.assert_array_equal(bits[np.arange(n), codes], own)
    noise = bits[:, :k].astype(bool)
    noise[np.arange(n), codes] = False
    cells = n * (k - 1)
    rate = noise.sum() / cells
    # the realized probability of the byte law, within 5 standard errors
    scaled = q * 256
    p = (np.floor(scaled) + (scaled - np.floor(scaled))) / 256
    assert abs(rate - p) < 5 * np.sqrt(p * (1 - p) / cells)


# ---------------------------------------------- tables: Dask and Parquet
def test_frames_of_packed_reports_round_trip_through_parquet(tmp_path):
    pytest.importorskip("pyarrow")
    import pandas as pd

    mech = UtilityOptimizedRAPPOR(
        1.0, sensitive=[0, 1, 2], categories=list(range(11)), packed_output=True, random_state=0
    )
    reports = mech.fit_transform(_data(11, 2000, seed=6))
    frame = reports.to_frame(["age"])
    assert list(frame.columns) == ["age"] and get_channel(frame) == mech.channel_
    assert frame["age"].iloc[0] == reports.data[0].tobytes()
    frame.to_parquet(tmp_path / "reports.parquet")
    back = pd.read_parquet(tmp_path / "reports.parquet")
    np.testing.assert_array_equal(PackedReports.from_frame(back, 11).data, reports.data)
    # estimators read the table form directly (with the spec, since a
    # Parquet file read back carries no channel)
    for make in (EmpiricalEstimator, EMEstimator):
        np.testing.assert_array_equal(
            make(mechanism=mech).fit(back).distribution_, make().fit(reports).distribution_
        )
    # bytes objects (e.g. from another writer) are read too
    objects = pd.DataFrame({"age": [row.tobytes() for row in reports.data]})
    np.testing.assert_array_equal(
        EmpiricalEstimator(mechanism=mech).fit(objects).distribution_,
        EmpiricalEstimator().fit(reports).distribution_,
    )
    wrong = pd.DataFrame({"age": [b"\x00"] * 5})
    with pytest.raises(ValueError, match="2 bytes"):
        EmpiricalEstimator(mechanism=mech).fit(wrong)


def test_dask_partitions_of_packed_reports():
    dd = pytest.importorskip("dask.dataframe")
    import pandas as pd

    X = pd.DataFrame({"age": _data(11, 6000, seed=7).ravel()})
    mech = RAPPOR(1.0, theta=0.5, categories=list(range(11)), packed_output=True).fit(X)
    reports = privatize_partitions(dd.from_pandas(X, npartitions=3), mech, random_state=1)
    assert list(reports.columns) == ["age"]
    assert "binary" in str(reports.dtypes["age"])
    stats_ = reduce_statistics(reports, mechanism=mech, keep_reports=True)
    local = reports.compute()
    assert stats_.n == 6000
    np.testing.assert_array_equal(
        EMEstimator().fit_statistics(stats_).distribution_,
        EMEstimator(mechanism=mech).fit(local).distribution_,
    )
    # the same partitions privatized as packed batches in memory
    batches = privatize_partitions(
        [X.iloc[lo : lo + 2000] for lo in range(0, 6000, 2000)], mech, random_state=1
    )
    np.testing.assert_array_equal(
        np.concatenate([b.data for b in batches]),
        PackedReports.from_frame(local, 11).data,
    )


def test_pandas_output_is_one_binary_column_per_input_column():
    pytest.importorskip("pyarrow")
    import pandas as pd

    X = pd.DataFrame({"a": _data(11, 3000, seed=8).ravel(), "b": _data(11, 3000, seed=9).ravel()})
    X.index += 100
    mech = RAPPOR(1.0, categories=list(range(11)), packed_output=True, random_state=2)
    reports = mech.fit(X).transform(X)  # a PackedReports (numpy output)
    frame = mech.set_output(transform="pandas").fit(X).transform(X)
    assert list(frame.columns) == ["a", "b"] == list(mech.get_feature_names_out())
    assert (frame.index == X.index).all() and get_channel(frame) == mech.channel_
    np.testing.assert_array_equal(PackedReports.from_frame(frame).data, reports.data)
    for j, name in enumerate(["a", "b"]):
        for block in (mech.column_reports(frame, name), mech.column_reports(reports, j)):
            np.testing.assert_array_equal(
                EmpiricalEstimator().fit(block).distribution_,
                EmpiricalEstimator().fit(reports.block(j).toarray()).distribution_,
            )
    with pytest.raises(ValueError, match="2 block"):
        mech.column_reports(reports.block(0), 1)


def test_dataframe_privatizer_keeps_packed_columns(tmp_path):
    pytest.importorskip("pyarrow")
    dd = pytest.importorskip("dask.dataframe")
    import pandas as pd

    from sklearn_uldp import DataFramePrivatizer, RandomizedResponse

    X = pd.DataFrame({"a": _data(11, 4000, seed=10).ravel(), "b": _data(3, 4000).ravel()})

    def privatizer(**kwargs):
        return DataFramePrivatizer(
            {
                "a": RAPPOR(1.0, categories=list(range(11)), packed_output=True),
                "b": RandomizedResponse(1.0, categories=[0, 1, 2]),
            },
            random_state=0,
            **kwargs,
        )

    priv = privatizer()
    reports = priv.fit_transform(X)
    assert list(reports.columns) == ["a", "b"] and priv.report_columns("a") == ["a"]
    assert "binary" in str(reports.dtypes["a"]) and reports["a"].iloc[0].__len__() == 2
    dense = PackedReports.from_frame(reports[["a"]], 11).toarray()
    expected = EmpiricalEstimator(projection="simplex", mechanism=priv.mechanisms_["a"]).fit(dense)
    emp = EmpiricalEstimator(projection="simplex")  # the former default of estimate
    estimate = priv.estimate(reports, emp)["a"].to_numpy()
    np.testing.assert_array_equal(estimate, expected.distribution_)
    # Parquet keeps the bytes; the estimate of the file is the same
    reports.to_parquet(tmp_path / "r.parquet")
    back = pd.read_parquet(tmp_path / "r.parquet")
    np.testing.assert_array_equal(priv.estimate(back, emp)["a"].to_numpy(), expected.distribution_)
    # Dask partitions keep packed partitions too
    lazy = priv.transform(dd.from_pandas(X, npartitions=2))
    assert "binary" in str(lazy.dtypes["a"])
    assert priv.estimate(lazy.compute())["a"].shape == (11,)
    # a table is needed to hold them, and the sampling strategies do not
    with pytest.raises(ValueError, match="set_output"):
        priv.transform(X.to_numpy())
    with pytest.raises(ValueError, match="strategy='split'"):
        privatizer(strategy="sample").fit(X)


@pytest.mark.pinned
def test_cli_writes_and_estimates_packed_parquet(tmp_path, capsys):
    pytest.importorskip("pyarrow")
    import json

    import pandas as pd

    from sklearn_uldp.cli import main
    from sklearn_uldp.mechanisms import Channel

    X = pd.DataFrame({"a": _data(11, 5000, seed=11).ravel()})
    X.to_csv(tmp_path / "in.csv", index=False)
    out = tmp_path / "r.parquet"
    common = ["--columns", "a", "--mechanism", "urap", "--epsilon", "1"]
    common += ["--categories", "a=0..10", "--sensitive", "a=0,1", "--no-progress"]
    args = ["privatize", tmp_path / "in.csv", "-o", out, *common, "--random-state", "1"]
    assert main([str(a) for a in [*args, "--packed", "--chunksize", "700"]]) == 0
    spec = json.loads((tmp_path / "r.parquet.spec.json").read_text())
    assert spec["report_columns"] == {"a": ["a"]}
    frame = pd.read_parquet(out)
    assert list(frame.columns) == ["a"] and {len(v) for v in frame["a"]} == {2}
    bits = np.unpackbits(
        np.frombuffer(b"".join(frame["a"]), np.uint8).reshape(-1, 2), axis=1, bitorder="little"
    )
    assert not bits[:, 11:].any()  # padding bits are 0
    channel = Channel.from_dict(spec["columns"]["a"])
    expected = EmpiricalEstimator(mechanism=channel).fit(bits[:, :11])
    est = tmp_path / "est.csv"
    estimate = ["estimate", out, "--spec", tmp_path / "r.parquet.spec.json", "-o", est]
    assert main([str(a) for a in [*estimate, "--estimator", "emp", "--no-progress"]]) == 0
    np.testing.assert_allclose(
        pd.read_csv(est)["estimate"].to_numpy(), expected.distribution_, atol=1e-12
    )
    capsys.readouterr()
    csv = ["privatize", tmp_path / "in.csv", "-o", tmp_path / "r.csv", *common, "--packed"]
    assert main([str(a) for a in csv]) == 2
    assert "CSV cannot hold" in capsys.readouterr().err


@pytest.mark.parametrize("kernel", ["numba", "numpy"])
@pytest.mark.parametrize("density", [0.05, 0.5])  # sparse and packed stores
def test_store_appends_packed_rows_as_dense_ones(kernel, density, monkeypatch):
    from sklearn_uldp.mechanisms import _bit_rows
    from sklearn_uldp.mechanisms._bit_rows import BitRows

    if kernel == "numba":
        pytest.importorskip("numba")
    monkeypatch.setattr(_bit_rows, "_KERNEL", kernel)
    monkeypatch.setattr(_bit_rows, "_BLOCK_ROWS", 300)
    rng = np.random.default_rng(0)
    bits = (rng.random((1000, 21)) < density).astype(np.uint8)
    columns = np.array([0, 2, 3, 9, 15, 20])
    b = rng.random(columns.size)
    for cols in (None, columns):
        n_cols = 21 if cols is None else cols.size
        dense, packed = BitRows(n_cols, density), BitRows(n_cols, density)
        dense.append_dense(np.ascontiguousarray(bits if cols is None else bits[:, cols]))
        rows = _bits.pack_rows(bits)
        packed.append_packed(rows[:400], cols)
        packed.append_packed(rows[400:], cols)
        weights = b if cols is not None else rng.random(21)
        for x, y in zip(dense.em_terms(0.5, weights), packed.em_terms(0.5, weights), strict=True):
            np.testing.assert_array_equal(x, y)
        np.testing.assert_array_equal(dense.row_sizes(), packed.row_sizes())
    # whole packed rows are kept as read-only views (no second copy of a
    # large upload); selected columns are new arrays
    store = BitRows(21, 0.5)
    rows = _bits.pack_rows(bits)
    store.append_packed(rows)
    assert len(store._all_blocks()) == 4  # 300-row blocks
    for block in store._all_blocks():
        assert np.shares_memory(block.packed, rows) and not block.packed.flags.writeable
    selected = BitRows(columns.size, 0.5)
    selected.append_packed(rows, columns)
    assert not any(np.shares_memory(blk.packed, rows) for blk in selected._all_blocks())


def test_em_on_packed_reports_keeps_no_second_copy():
    mech = RAPPOR(1.0, theta=0.5, categories=list(range(64)), packed_output=True, random_state=0)
    reports = mech.fit_transform(_data(64, 5000))
    em = EMEstimator(working_set=False).fit(reports)
    store = em.statistics_.extra
    assert store.nbytes == reports.nbytes
    assert all(np.shares_memory(b.packed, reports.data) for b in store._all_blocks())
    # and the statistics of a large upload allocate no copy of its rows
    import tracemalloc

    big = mech.transform(_data(64, 200_000))
    tracemalloc.start()
    try:
        EMEstimator().partial_fit(big)
        assert tracemalloc.get_traced_memory()[1] < big.nbytes / 4
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("split", [False, True])
def test_dense_reports_are_checked_and_counted_in_one_pass(split, monkeypatch):
    # Estimating from dense reports reads them once: encode_reports checks
    # the bytes and sums the columns in one compiled pass (two threads on
    # large uploads), and statistics uses those sums.
    pytest.importorskip("numba")
    from sklearn_uldp.mechanisms import _rappor

    monkeypatch.setattr(_rappor, "_COUNTED_CELLS", 1000)
    monkeypatch.setattr(_rappor, "_SPLIT_BYTES", 1000 if split else 1 << 40)
    mech = RAPPOR(1.0, theta=0.5, categories=list(range(40)), random_state=0)
    reports = mech.fit_transform(_data(40, 5000))
    channel = mech.channel_
    codes = channel.encode_reports(reports)
    assert isinstance(codes, _rappor._CountedBits)
    np.testing.assert_array_equal(codes.bit_counts, np.asarray(reports).sum(axis=0))
    assert codes[:10].bit_counts is None  # slices carry no sums
    calls = []
    monkeypatch.setattr(_rappor, "_column_sums", lambda b: calls.append(1) or b.sum(axis=0))
    stats_ = channel.statistics(codes)
    assert not calls
    np.testing.assert_array_equal(stats_.counts, codes.bit_counts)
    bad = np.asarray(reports).copy()
    bad[4900, 7] = 2  # in the second half
    with pytest.raises(ReportMismatchError, match="only 0 and 1"):
        channel.encode_reports(bad)


# ------------------------------------------------------ count-mean sketch
def _cms(**kwargs):
    from sklearn_uldp import CountMeanSketch

    params = {"n_buckets": 11, "n_hashes": 3, "categories": list(range(20)), "random_state": 0}
    return CountMeanSketch(2.0, packed_output=True, **{**params, **kwargs})


def test_count_mean_sketch_packs_its_bits_beside_the_hash_index():
    mech = _cms()
    reports = mech.fit_transform(_data(20, 4000, seed=8))
    assert isinstance(reports, PackedReports) and reports.shape == (4000, 12)
    assert reports.data.shape == (4000, 2) and reports.index.shape == (4000, 1)
    assert not (reports.data[:, -1] >> 3).any()  # 11 bits: 5 padding bits
    dense = reports.toarray()
    assert dense.dtype == np.uint8
    np.testing.assert_array_equal(dense[:, 0], reports.index[:, 0])
    np.testing.assert_array_equal(
        np.packbits(dense[:, 1:], axis=1, bitorder="little"), reports.data
    )
    for make in (EmpiricalEstimator, ThresholdEstimator, EMEstimator):
        np.testing.assert_array_equal(
            make().fit(reports).distribution_, make().fit(dense).distribution_
        )
    whole = EMEstimator().fit(reports)
    chunked = EMEstimator().partial_fit(reports[:1500]).partial_fit(reports[1500:])
    np.testing.assert_array_equal(chunked.distribution_, whole.distribution_)
    # several columns: blocks of bytes and one index column each
    X = np.column_stack([_data(20, 1000, seed=9), _data(20, 1000, seed=10)])
    two = _cms().fit_transform(X)
    assert two.index.shape == (1000, 2) and two.shape == (1000, 24)
    np.testing.assert_array_equal(two.toarray()[:, 12:], two.block(1).toarray())
    wide = _cms(n_hashes=300).fit_transform(_data(20, 100))
    assert wide.index.dtype == np.uint16 and wide.toarray().dtype == np.uint16
    with pytest.raises(TypeError, match="no sparse form"):
        reports.tocsr()
    bad = PackedReports(reports.data, 11, mech.channel_, np.full((4000, 1), 3, np.uint8))
    with pytest.raises(ReportMismatchError, match="Hash indices"):
        EmpiricalEstimator().fit(bad)


@pytest.mark.parametrize("kernel", ["numba", "numpy"])
def test_packed_count_mean_sketch_sampler_matches_the_channel(kernel, monkeypatch):
    if kernel == "numba":
        pytest.importorskip("numba")
    monkeypatch.setattr(_bits, "_KERNEL", kernel)
    mech = _cms(n_buckets=3, n_hashes=2, categories=list(range(5)), random_state=1).fit()
    channel = mech.channel_
    Q = channel.realized_matrix()
    pvalues = []
    for x in (0, 2, 4):
        reports = mech.transform(np.full((40_000, 1), x))
        outputs = reports.index[:, 0].astype(np.int64) * 8 + reports.data[:, 0]
        counts = np.bincount(outputs, minlength=Q.shape[1])
        assert counts[Q[x] == 0].sum() == 0
        pvalues.append(stats.chisquare(counts, Q[x] * counts.sum()).pvalue)
    assert min(pvalues) > 1e-6 / 3, pvalues


# ------------------------------------------------------- as an outsider
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 40),
    k=st.integers(2, 30),
    blocks=st.integers(1, 3),
    seed=st.integers(0, 2**32 - 1),
)
def test_any_bits_round_trip(n, k, blocks, seed):
    bits = (np.random.default_rng(seed).random((n, k * blocks)) < 0.4).astype(np.uint8)
    packed = PackedReports.from_dense(bits, n_bits=k)
    assert packed.n_blocks == blocks and packed.shape == bits.shape
    np.testing.assert_array_equal(packed.toarray(), bits)
    np.testing.assert_array_equal(packed.tocsr().toarray(), bits)
    for j in range(blocks):
        np.testing.assert_array_equal(packed.block(j).toarray(), bits[:, j * k : (j + 1) * k])


@pytest.mark.filterwarnings("ignore::sklearn_uldp.exceptions.UninformativeEstimateWarning")
@settings(max_examples=60, deadline=None)
@given(
    data=st.lists(st.integers(0, 255), min_size=2, max_size=60),
    k=st.integers(2, 16),
)
def test_any_bytes_are_estimated_or_refused_clearly(data, k):
    # Arbitrary bytes handed to an estimator as packed reports: either they
    # are reports of the mechanism, or a ReportMismatchError says why not.
    width = -(-k // 8)
    rows = np.array(data[: len(data) // width * width], dtype=np.uint8).reshape(-1, width)
    if not len(rows):
        return
    for mech in (
        RAPPOR(1.0, categories=list(range(k))).fit(),
        UtilityOptimizedRAPPOR(1.0, sensitive=[0], categories=list(range(k))).fit(),
        SubsetSelection(1.0, subset_size=1, categories=list(range(k))).fit(),
    ):
        try:
            est = EmpiricalEstimator(mechanism=mech).fit(PackedReports(rows, k))
        except ReportMismatchError:
            continue
        assert est.distribution_.shape == (k,) and np.isfinite(est.distribution_).all()
