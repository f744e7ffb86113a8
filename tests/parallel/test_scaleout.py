"""Scale-out that is right or refuses (Dask partitions of a privatized table).

Reducing a column with its mechanism under a sampling strategy, users who
share a secret across partitions, heavy hitters on Dask and lazy input to a
mechanism's own transform: each either gives the one-machine result or a
clear error saying what to do.
"""

import numpy as np
import pandas as pd
import pytest

from sklearn_uldp import EMEstimator, RandomizedResponse
from sklearn_uldp.compose import DataFramePrivatizer
from sklearn_uldp.numeric import HybridMechanism, MeanEstimator
from sklearn_uldp.parallel import privatize_partitions, reduce_statistics, statistics_of

dd = pytest.importorskip("dask.dataframe")
dask = pytest.importorskip("dask")

STRATEGIES = ["split", "sample", "sample+fake"]
TRUE_A = [0.7, 0.2, 0.1]


def _table(n=60_000, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "a": rng.choice(["x", "y", "z"], p=TRUE_A, size=n),
            "b": rng.choice(["u", "v"], size=n),
            "c": rng.uniform(0, 10, size=n),
        }
    )


def _privatizer(strategy, seed=0):
    return DataFramePrivatizer(
        {
            "a": RandomizedResponse(1.0, categories=["x", "y", "z"]),
            "b": RandomizedResponse(1.0, categories=["u", "v"]),
            "c": HybridMechanism(1.0, bounds=(0, 10)),
        },
        strategy=strategy,
        random_state=seed,
    )


@pytest.fixture(scope="module")
def privatized():
    """(privatizer, persisted lazy reports, computed reports) per strategy."""
    df = _table()
    out = {}
    with dask.config.set(scheduler="sync"):
        ddf = dd.from_pandas(df, npartitions=4)
        for strategy in STRATEGIES:
            priv = _privatizer(strategy)
            lazy = priv.fit_transform(ddf).persist()
            out[strategy] = (priv, lazy, lazy.compute())
    return out


@pytest.mark.parametrize("strategy", ["sample", "sample+fake"])
@pytest.mark.parametrize("column", ["a", "c"])
def test_reducing_a_sampled_column_with_its_mechanism_is_refused(privatized, strategy, column):
    # The workflow page's former recipe: under "sample+fake" it counted the
    # fakes as real reports ([0.52, 0.265, 0.215] for [0.7, 0.2, 0.1]),
    # under "sample" it raised a ReportMismatchError, and a numeric column's
    # mechanism was a TypeError.
    priv, lazy, reports = privatized[strategy]
    mech = priv.mechanisms_[column]
    cols = priv.report_columns(column)
    hint = rf"priv\.channels_\['{column}'\]"
    with pytest.raises(ValueError, match=hint):
        reduce_statistics(lazy[cols], mechanism=mech)
    with pytest.raises(ValueError, match=hint):  # plain in-memory reports
        statistics_of(reports[cols].to_numpy(), mechanism=mech)
    with pytest.raises(ValueError, match=hint):  # reports carrying the column's channel
        statistics_of(priv.column_reports(reports, column), mechanism=mech)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_reducing_with_the_columns_channel_is_the_one_machine_estimate(privatized, strategy):
    priv, lazy, reports = privatized[strategy]
    with dask.config.set(scheduler="sync"):
        stats = {
            name: reduce_statistics(lazy[priv.report_columns(name)], mechanism=priv.channels_[name])
            for name in priv.mechanisms_
        }
    for name, reduced in stats.items():
        one = statistics_of(priv.column_reports(reports, name))
        assert reduced.n == one.n
        np.testing.assert_array_equal(np.asarray(reduced.counts), np.asarray(one.counts))
    a = EMEstimator().fit_statistics(stats["a"]).distribution_
    np.testing.assert_allclose(a, priv.estimate(reports)["a"].to_numpy(), rtol=0, atol=1e-12)
    # Right, not only consistent: within 4 standard errors (at most 0.028 at
    # this n, d = 3 and eps = 1) of the truth, where counting the fakes as
    # real reports gave 0.18 too little for "x".
    assert np.abs(a - TRUE_A).max() < 0.04
    mean = MeanEstimator().fit_statistics(stats["c"]).mean_
    assert mean == pytest.approx(priv.estimate(reports)["c"]["mean"], rel=1e-10)
    if strategy == "split":  # the column's channel is the mechanism's
        for name, mech in priv.mechanisms_.items():
            cols = priv.report_columns(name)
            with dask.config.set(scheduler="sync"):
                by_mech = reduce_statistics(lazy[cols], mechanism=mech)
            assert by_mech.n == stats[name].n


def test_numeric_mechanism_reduces_plain_reports():
    X = _table(3000)[["c"]]
    mech = HybridMechanism(1.0, bounds=(0, 10), random_state=0).fit(X)
    batches = [np.asarray(mech.transform(X.iloc[i::3])) for i in range(3)]
    by_mech = reduce_statistics(batches, mechanism=mech)  # was a TypeError
    by_channel = reduce_statistics(batches, mechanism=mech.channel_)
    assert by_mech.n == by_channel.n == 3000
    np.testing.assert_array_equal(np.asarray(by_mech.counts), np.asarray(by_channel.counts))


def test_an_unfitted_or_foreign_mechanism_gets_a_clear_error():
    with pytest.raises(TypeError, match="not fitted: fit it first"):
        statistics_of(np.zeros((3, 1)), mechanism=HybridMechanism(1.0, bounds=(0, 1)))
    with pytest.raises(TypeError, match="got str"):
        statistics_of(np.zeros((3, 1)), mechanism="rr")


# ----------------------------------------------------------- user secrets
def _secret_table(n=1000, seed=1):
    from sklearn_uldp.utils import generate_user_secrets

    rng = np.random.default_rng(seed)
    secrets = generate_user_secrets(n, random_state=seed)
    return pd.DataFrame(
        {"a": rng.choice(["x", "y"], size=n), "secret": pd.Series(list(secrets), dtype=object)}
    )


def _memoized():
    from sklearn_uldp.longitudinal import LongitudinalGRR

    return LongitudinalGRR(2.0, 1.0, categories=["x", "y"])


@pytest.mark.parametrize("whole_table", [True, False])
def test_a_secret_shared_across_dask_partitions_is_refused(whole_table):
    frame = _secret_table()
    shared = frame.copy()
    shared.loc[900, "secret"] = shared.loc[10, "secret"]  # partitions 0 and 3
    if whole_table:
        mech = DataFramePrivatizer({"a": _memoized()}, random_state=0).fit(frame[["a"]])
    else:
        mech = _memoized().set_params(random_state=0).fit(frame[["a"]])
    with dask.config.set({"dataframe.convert-string": False, "scheduler": "sync"}):
        ddf = dd.from_pandas(shared, npartitions=4)
        # In memory, transform refuses the same table.
        with pytest.raises(ValueError, match="share a user secret"):
            mech.transform(shared[["a"]], user_secrets=shared["secret"])
        lazy = privatize_partitions(ddf[["a"]], mech, user_secrets=ddf["secret"])
        with pytest.raises(ValueError, match=r"1 row\(s\) hold a user secret that another row"):
            lazy.compute()
        # Distinct secrets: privatized as before.
        ddf = dd.from_pandas(frame, npartitions=4)
        out = privatize_partitions(ddf[["a"]], mech, user_secrets=ddf["secret"]).compute()
    assert out.shape == (1000, 1)


def test_a_secret_shared_across_in_memory_partitions_is_refused():
    frame = _secret_table()
    mech = _memoized().set_params(random_state=0).fit(frame[["a"]])
    parts = [frame.iloc[:500][["a"]], frame.iloc[500:][["a"]]]
    secrets = [frame["secret"].iloc[:500].tolist(), frame["secret"].iloc[500:].tolist()]
    secrets[1][7] = secrets[0][3]
    with pytest.raises(ValueError, match=r"in partitions \[0, 1\]"):
        privatize_partitions(parts, mech, user_secrets=secrets)


def test_the_secrets_fingerprints_are_keyed_and_unlinkable():
    from sklearn_uldp.parallel._secrets import fingerprints, repeated_secrets

    frame = _secret_table(200)
    a = fingerprints(frame["secret"], "nonce-1")
    assert a.equals(fingerprints(frame["secret"], "nonce-1"))
    # Another call's nonce gives unrelated fingerprints (rounds are not linked).
    b = fingerprints(frame["secret"], "nonce-2")
    assert not (a.to_numpy() == b.to_numpy()).any()
    # Nothing of a 32-byte secret (the key itself) shows in its fingerprint.
    head = np.frombuffer(b"".join(s[:8] for s in frame["secret"]), dtype="<u8")
    assert not np.isin(head, a.to_numpy()).any()
    # Only a count comes back from the workers.
    with dask.config.set({"dataframe.convert-string": False, "scheduler": "sync"}):
        count = repeated_secrets(dd.from_pandas(frame["secret"], npartitions=3)).compute()
    assert int(count) == 0


# ----------------------------------------------------------- heavy hitters
@pytest.mark.parametrize("kind", ["PrefixExtendingMethod", "TreeHist"])
def test_heavy_hitters_privatize_and_reduce_on_dask(kind):
    from sklearn_uldp import heavy_hitters as hh

    rng = np.random.default_rng(0)
    words = rng.choice(["apple", "banana", "cherry", "date"], p=[0.4, 0.3, 0.2, 0.1], size=8000)
    df = pd.DataFrame({"w": words})
    mech = getattr(hh, kind)(epsilon=4.0, top_k=3).fit(df)
    with dask.config.set(scheduler="sync"):
        ddf = dd.from_pandas(df, npartitions=4)
        lazy = privatize_partitions(ddf, mech, random_state=0)  # was a NotFittedError
        assert lazy.dtypes["w"] == np.int64
        stats = reduce_statistics(lazy, mechanism=mech)
        assert stats.n == 8000
        np.testing.assert_array_equal(stats.counts, hh.reduce_reports(lazy, mechanism=mech).counts)
        reports = lazy.compute()
        # The Series is the one-column frame.
        assert privatize_partitions(ddf["w"], mech, random_state=0).compute().equals(reports)
    reduced = hh.HeavyHitterEstimator().fit_statistics(stats).heavy_hitters_frame_
    direct = hh.HeavyHitterEstimator(mechanism=mech).fit(reports).heavy_hitters_frame_
    pd.testing.assert_frame_equal(reduced, direct)
    assert list(direct.index[:2]) == ["apple", "banana"]


# ------------------------------------------------------------ lazy input
def test_a_dask_series_is_a_one_column_table():
    df = _table(400)
    priv = DataFramePrivatizer(
        {"a": RandomizedResponse(1.0, categories=["x", "y", "z"])}, random_state=3
    )
    with dask.config.set(scheduler="sync"):
        ddf = dd.from_pandas(df, npartitions=2)
        lazy = priv.fit(ddf["a"]).transform(ddf["a"])  # was a TypeError
        assert hasattr(lazy, "__dask_graph__")
        assert lazy.compute().equals(priv.transform(ddf[["a"]]).compute())
        assert priv.fit_transform(ddf["a"]).compute().equals(lazy.compute())


@pytest.mark.parametrize("on", ["frame", "series"])
def test_a_mechanisms_own_transform_refuses_lazy_input(on):
    from sklearn_uldp.heavy_hitters import PrefixExtendingMethod

    df = _table(100)
    ddf = dd.from_pandas(df, npartitions=2)
    for mech, col in [
        (RandomizedResponse(1.0, categories=["x", "y", "z"]), "a"),
        (HybridMechanism(1.0, bounds=(0, 10)), "c"),
        (PrefixExtendingMethod(epsilon=2.0), "a"),
    ]:
        mech.fit(df[[col]])
        X = ddf[[col]] if on == "frame" else ddf[col]
        # It computed the collection and returned in-memory reports.
        with pytest.raises(TypeError, match="privatize_partitions"):
            mech.transform(X)


def test_secrets_across_partitions_refused_exactly_when_shared():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from sklearn_uldp.parallel._secrets import check_distinct_across
    from sklearn_uldp.utils import generate_user_secrets

    pool = list(generate_user_secrets(12, random_state=5))

    @settings(max_examples=60, deadline=None)
    @given(st.lists(st.lists(st.integers(0, 11), max_size=6, unique=True), max_size=4))
    def check(parts):
        secrets = [[pool[i] for i in part] for part in parts]
        flat = [i for part in parts for i in part]
        if len(flat) == len(set(flat)):
            check_distinct_across(secrets)
            return
        with pytest.raises(ValueError, match="another row of another partition") as info:
            check_distinct_across(secrets)
        assert all(s.hex() not in str(info.value) for s in pool)  # counts only

    check()
