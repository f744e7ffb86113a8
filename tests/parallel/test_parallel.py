"""Scale-out: statistics reduced over batches/partitions equal one-shot fitting."""

import numpy as np
import pandas as pd
import pytest

from sklearn_uldp import (
    EMEstimator,
    EmpiricalEstimator,
    RandomizedResponse,
    UtilityOptimizedRAPPOR,
    UtilityOptimizedRR,
)
from sklearn_uldp.exceptions import ReportMismatchError
from sklearn_uldp.parallel import privatize_partitions, reduce_statistics, statistics_of

CATS = list("abcdefgh")


def _data(n=6000, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {"v": rng.choice(CATS, p=[0.3, 0.2, 0.1, 0.1, 0.1, 0.1, 0.05, 0.05], size=n)}
    )


# Pinned floats (tests/README.md): tolerances that hold on any processor.
# Statistics reduced over batches, partitions or workers hold the same counts,
# but the bit-vector terms are summed block by block in another order (1e-10
# relative), and EM, which stops at a tolerance, carries that difference into
# its estimate (1e-9 absolute). A lost or doubled batch moves them by 1e-3.
@pytest.mark.pinned
@pytest.mark.parametrize(
    "mech",
    [
        RandomizedResponse(1.0, categories=CATS, random_state=0),
        UtilityOptimizedRR(1.0, sensitive=["g", "h"], categories=CATS, random_state=0),
        UtilityOptimizedRAPPOR(1.0, sensitive=["g", "h"], categories=CATS, random_state=0),
    ],
)
def test_reduced_statistics_equal_one_shot(mech):
    X = _data()
    mech.fit(X)
    reports = mech.transform(X)
    batches = [reports[i : i + 1000] for i in range(0, len(X), 1000)]
    stats = reduce_statistics(batches, keep_reports=True, n_jobs=2)
    for est in (EmpiricalEstimator(), EMEstimator()):
        one_shot = type(est)().fit(reports).distribution_
        reduced = type(est)().fit_statistics(stats).distribution_
        np.testing.assert_allclose(reduced, one_shot, rtol=0, atol=1e-9)


def test_partitions_get_independent_reproducible_streams():
    mech = RandomizedResponse(0.5, categories=CATS, random_state=0).fit()
    same = _data(2000)
    parts = [same, same.copy()]
    a = privatize_partitions(parts, mech, random_state=1)
    b = privatize_partitions(parts, mech, random_state=1)
    # Reproducible with an integer seed ...
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    # ... and identical inputs in two partitions get different noise (at
    # eps=0.5, k=8 about 80% of reports change, so equality would be a
    # shared stream).
    assert np.mean(np.asarray(a[0]) == np.asarray(a[1])) < 0.5
    # The original mechanism's own stream is untouched: its next transform
    # is the one it would have drawn without the partitions.
    fresh = RandomizedResponse(0.5, categories=CATS, random_state=0).fit()
    np.testing.assert_array_equal(
        np.asarray(mech.transform(same)), np.asarray(fresh.transform(same))
    )


def test_statistics_need_a_mechanism_for_plain_reports():
    mech = RandomizedResponse(1.0, categories=CATS, random_state=0).fit()
    plain = np.asarray(mech.transform(_data(100)))
    with pytest.raises(ValueError, match="mechanism="):
        statistics_of(plain)
    assert statistics_of(plain, mech).n == 100
    other = RandomizedResponse(2.0, categories=CATS).fit()
    with pytest.raises(ReportMismatchError):
        statistics_of(mech.transform(_data(10)), other)


def test_dask_partitions_round_trip():
    dd = pytest.importorskip("dask.dataframe")
    X = _data(4000)
    ddf = dd.from_pandas(X, npartitions=4)
    mech = UtilityOptimizedRR(1.0, sensitive=["g", "h"], categories=CATS, random_state=0).fit()
    reports = privatize_partitions(ddf, mech, random_state=3)
    local = reports.compute(scheduler="sync")
    assert local.shape == (4000, 1)
    assert set(local.iloc[:, 0]) <= set(CATS)
    # Reproducible, and the partitions do not share a stream.
    again = privatize_partitions(ddf, mech, random_state=3).compute(scheduler="sync")
    pd.testing.assert_frame_equal(local, again)
    stats = reduce_statistics(reports, mech)
    assert stats.n == 4000
    expected = EmpiricalEstimator(mechanism=mech).fit(local).distribution_
    np.testing.assert_allclose(EmpiricalEstimator().fit_statistics(stats).distribution_, expected)
    with pytest.raises(ValueError, match="mechanism="):
        reduce_statistics(reports)


def test_column_transformer_same_integer_seed_gives_independent_columns():
    from sklearn.compose import ColumnTransformer

    X = pd.DataFrame({"a": np.zeros(4000, dtype=int), "b": np.zeros(4000, dtype=int)})
    ct = ColumnTransformer(
        [
            ("a", RandomizedResponse(0.1, categories=list(range(10)), random_state=0), ["a"]),
            ("b", RandomizedResponse(0.1, categories=list(range(10)), random_state=0), ["b"]),
        ]
    )
    out = ct.fit_transform(X).astype(int)
    # Same seed, same domain, same values: a shared stream would make the
    # columns equal; independent streams agree only by chance (~1/10 + keep).
    agreement = np.mean(out[:, 0] == out[:, 1])
    assert agreement < 0.3
    # ... and the seed still makes the result reproducible.
    again = ct.fit_transform(X).astype(int)
    np.testing.assert_array_equal(out, again)


@pytest.mark.pinned
def test_sparse_report_slices_keep_the_channel_for_partial_fit():
    import pickle

    from sklearn_uldp import RAPPOR

    X = _data(3000)
    mech = RAPPOR(1.0, categories=CATS, sparse_output=True, random_state=0).fit(X)
    reports = mech.transform(X)
    est = EMEstimator()
    for lo in range(0, 3000, 1000):
        est.partial_fit(reports[lo : lo + 1000])
    np.testing.assert_allclose(
        est.distribution_, EMEstimator().fit(reports).distribution_, atol=1e-9
    )
    restored = pickle.loads(pickle.dumps(reports))
    assert restored.channel == mech.channel_
    assert (restored != reports).nnz == 0


@pytest.mark.pinned
def test_em_on_reports_kept_on_dask_workers():
    distributed = pytest.importorskip("distributed")
    dd = pytest.importorskip("dask.dataframe")
    from sklearn_uldp import RAPPOR, UtilityOptimizedBlockDesign
    from sklearn_uldp.parallel import WorkerBitRows

    X = _data(6000)
    ddf = dd.from_pandas(X, npartitions=3)
    mechanisms = [
        UtilityOptimizedRAPPOR(1.0, sensitive=["g", "h"], categories=CATS),
        RAPPOR(0.5, theta=0.5, categories=CATS),  # dense: packed stores
        UtilityOptimizedBlockDesign(
            1.0, sensitive=list("defgh"), subset_size=2, categories=CATS
        ),  # needs the row sizes
    ]
    with distributed.Client(
        processes=False, n_workers=2, threads_per_worker=1, dashboard_address=None
    ):
        for mech in mechanisms:
            mech.fit(X)
            reports = privatize_partitions(ddf, mech, random_state=0)
            stats = reduce_statistics(reports, mech, keep_reports="workers")
            assert isinstance(stats.extra, WorkerBitRows)
            assert len(stats.extra.futures) == 3
            one_shot = EMEstimator(tol=1e-10, mechanism=mech).fit(reports.compute())
            local = one_shot.statistics_.extra
            assert stats.extra.n_rows == local.n_rows > 0
            np.testing.assert_array_equal(stats.extra.row_size_counts(), local.row_size_counts())
            # working-set stores are built on the workers too
            columns = np.arange(0, local.n_cols, 2)
            b = np.linspace(0.1, 1.0, columns.size)
            for x, y in zip(
                stats.extra.restrict(columns).em_terms(0.3, b),
                local.restrict(columns).em_terms(0.3, b),
                strict=True,
            ):
                np.testing.assert_allclose(x, y, rtol=1e-10)
            on_workers = EMEstimator(tol=1e-10).fit_statistics(stats)
            assert on_workers.converged_
            np.testing.assert_allclose(on_workers.distribution_, one_shot.distribution_, atol=1e-9)
            assert on_workers.log_likelihood_ == pytest.approx(one_shot.log_likelihood_, rel=1e-10)
        # counts suffice for one-symbol reports: nothing stays on the workers
        rr = RandomizedResponse(1.0, categories=CATS).fit(X)
        rr_reports = privatize_partitions(ddf, rr, random_state=0)
        assert reduce_statistics(rr_reports, rr, keep_reports="workers").extra is None
    with pytest.raises(ValueError, match="Client"):
        reduce_statistics(reports, mechanisms[0], keep_reports="workers")
    with pytest.raises(ValueError, match="Dask collection"):
        reduce_statistics([reports.compute()], mechanisms[0], keep_reports="workers")


# ------------------------------------------------------- issue 13, item 1
class _Unpicklable(np.ndarray):
    """Data that cannot be sent to another process (proves work stays here)."""

    def __reduce__(self):
        raise TypeError("sent to another process")


def test_reduce_statistics_n_jobs_uses_no_processes():
    mech = UtilityOptimizedRR(1.0, sensitive=["g", "h"], categories=CATS, random_state=0).fit()
    X = _data(3000)[["v"]].to_numpy()
    batches = [np.asarray(mech.transform(c)).view(_Unpicklable) for c in np.array_split(X, 4)]
    one = reduce_statistics(batches, mech)
    two = reduce_statistics(batches, mech, n_jobs=2)
    np.testing.assert_array_equal(one.counts, two.counts)


def test_small_search_with_n_jobs_runs_here(monkeypatch):
    from sklearn_uldp.model_selection import PrivacyUtilitySearchCV

    X = _data(2000)[["v"]].to_numpy().view(_Unpicklable)
    kw = dict(n_repeats=2, random_state=0)
    grid = {"epsilon": [0.5, 2.0]}
    one = PrivacyUtilitySearchCV(RandomizedResponse(categories=CATS), grid, **kw).fit(X)
    two = PrivacyUtilitySearchCV(RandomizedResponse(categories=CATS), grid, n_jobs=2, **kw).fit(X)
    np.testing.assert_array_equal(one.cv_results_["mean_loss"], two.cv_results_["mean_loss"])


def test_large_search_uses_the_processes_with_the_same_results(monkeypatch):
    from sklearn_uldp.model_selection import PrivacyUtilitySearchCV, _search

    X = _data(2000)[["v"]].to_numpy()
    kw = dict(n_repeats=2, random_state=0)
    grid = {"epsilon": [0.5, 2.0]}
    one = PrivacyUtilitySearchCV(RandomizedResponse(categories=CATS), grid, **kw).fit(X)
    calls = []
    real = _search.Parallel

    def spy(*args, **kwargs):
        calls.append(kwargs.get("n_jobs"))
        return real(*args, **kwargs)

    monkeypatch.setattr(_search, "_PARALLEL_BREAK_EVEN", 0.0)
    monkeypatch.setattr(_search, "Parallel", spy)
    two = PrivacyUtilitySearchCV(RandomizedResponse(categories=CATS), grid, n_jobs=2, **kw).fit(X)
    assert calls == [2]
    np.testing.assert_array_equal(one.cv_results_["mean_loss"], two.cv_results_["mean_loss"])


def _two_columns():
    """400 rows of column "v" and its copy "w"."""
    X = _data(400)
    X["w"] = X["v"]
    return X


def _privatized_two_columns(dd, **kwargs):
    """A DataFramePrivatizer (k-RR on each of the two columns) and its lazy dask reports."""
    from sklearn_uldp.compose import DataFramePrivatizer

    priv = DataFramePrivatizer(
        {
            "v": RandomizedResponse(1.0, categories=CATS),
            "w": RandomizedResponse(1.0, categories=CATS),
        },
        **kwargs,
    )
    return priv, priv.fit_transform(dd.from_pandas(_two_columns(), npartitions=2))


def test_multi_column_dask_frame_fails_before_compute():
    dd = pytest.importorskip("dask.dataframe")
    X = _two_columns()
    ddf = dd.from_pandas(X, npartitions=2)
    blind = UtilityOptimizedRR(1.0, sensitive=["g"], categories=CATS).fit()
    with pytest.raises(ValueError, match="has 2.*DataFramePrivatizer"):
        privatize_partitions(ddf, blind)  # failed only at compute time
    named = UtilityOptimizedRR(1.0, sensitive=["g"], categories=CATS).fit(X[["w"]])
    reports = privatize_partitions(ddf, named, random_state=0)  # selects "w"
    assert reports.compute().shape == (400, 1)
    other = UtilityOptimizedRR(1.0, sensitive=["g"], categories=CATS).fit(
        X[["v"]].rename(columns={"v": "zz"})
    )
    with pytest.raises(ValueError, match="lacks"):
        privatize_partitions(ddf, other)


def test_array_partitions_of_a_named_mechanism_do_not_warn():
    import warnings

    X = _data(800)
    mech = UtilityOptimizedRR(1.0, sensitive=["g"], categories=CATS).fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        parts = privatize_partitions(np.array_split(X.to_numpy(), 8), mech, random_state=0)
    assert sum(len(p) for p in parts) == 800


def test_privatizer_partitions_hold_no_seed_in_the_graph():
    dd = pytest.importorskip("dask.dataframe")
    cloudpickle = pytest.importorskip("cloudpickle")
    priv, lazy = _privatized_two_columns(dd)
    blob = cloudpickle.dumps(dict(lazy.__dask_graph__()))
    assert b"SeedSequence" not in blob and b"PCG64" not in blob
    a, b = lazy.compute(), lazy.compute()
    assert (a["v"] != b["v"]).mean() > 0.2  # fresh noise at every compute


def test_reducing_a_multi_column_dask_frame_fails_before_compute():
    dd = pytest.importorskip("dask.dataframe")
    priv, lazy = _privatized_two_columns(dd, random_state=0)
    with pytest.raises(ValueError, match="report_columns"):
        reduce_statistics(lazy, mechanism=priv.mechanisms_["v"])
    stats = reduce_statistics(lazy[priv.report_columns("v")], mechanism=priv.mechanisms_["v"])
    assert stats.n == 400
