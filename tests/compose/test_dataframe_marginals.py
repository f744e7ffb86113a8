"""``DataFramePrivatizer(strategy="marginals")``: marginal release of a table's columns.

The strategy hands the declared columns (domains, sensitive values, budget)
to a :class:`~sklearn_uldp.marginals.MarginalPrivatizer`; these tests check
that the release is the marginal privatizer's (same channel, guarantee
checked on the exact channel), that its estimates find a strong association
which independence misses, and that what it cannot take is refused clearly.
"""

import json
import pickle

import numpy as np
import pandas as pd
import pytest

from sklearn_uldp import RandomizedResponse, UtilityOptimizedRR
from sklearn_uldp.compose import DataFramePrivatizer
from sklearn_uldp.marginals import (
    MarginalEstimator,
    check_marginal_uldp,
    marginal_privatizer_from,
)
from sklearn_uldp.numeric import PiecewiseMechanism

CATEGORIES = {"a": ["x", "y", "z"], "b": ["u", "v"], "c": ["p", "q"]}


def _table(n=40_000, seed=0):
    # b follows a (70% of rows), c is independent: the pair (a, b) is far
    # from the product of its margins.
    rng = np.random.default_rng(seed)
    a = rng.choice(CATEGORIES["a"], n, p=[0.5, 0.3, 0.2])
    b = np.where(rng.random(n) < 0.7, np.where(a == "x", "u", "v"), rng.choice(["u", "v"], n))
    return pd.DataFrame({"a": a, "b": b, "c": rng.choice(["p", "q"], n)})


def _privatizer(epsilon=2.0, sensitive=None, **params):
    mechanisms = {c: RandomizedResponse(epsilon, categories=cats) for c, cats in CATEGORIES.items()}
    if sensitive is not None:
        mechanisms["a"] = UtilityOptimizedRR(
            epsilon, sensitive=sensitive, categories=CATEGORIES["a"]
        )
    return DataFramePrivatizer(mechanisms, strategy="marginals", **params)


def _crosstab(df, a, b):
    return pd.crosstab(df[a], df[b], normalize=True).to_numpy().ravel()


def test_same_release_as_the_marginal_privatizer_of_the_declaration():
    df = _table(2_000)
    priv = _privatizer(sensitive=["x"], random_state=0).fit(df)
    direct = marginal_privatizer_from(priv).fit()
    assert priv.marginal_privatizer_.channel_ == direct.channel_
    assert priv.marginal_privatizer_.marginals_ == [("a", "b"), ("a", "c"), ("b", "c")]
    assert priv.channels_ == {"marginals": direct.channel_}


@pytest.mark.parametrize("sensitive", [None, ["x"]])
def test_guarantee_on_the_exact_channel(sensitive):
    priv = _privatizer(1.0, sensitive=sensitive, random_state=0).fit(_table(500))
    check = check_marginal_uldp(priv.marginal_privatizer_)
    assert check.satisfied, check.reasons
    assert check.worst_log_ratio <= 1.0 + 1e-9
    assert priv.epsilon_spent_ == 1.0
    assert priv.attribute_epsilons_ == {"a": 1.0, "b": 1.0, "c": 1.0}
    assert priv.exposure(3) == 3.0 and priv.epsilon_perm_spent_ == np.inf


def test_estimates_find_the_association_independence_misses():
    df = _table()
    priv = _privatizer(2.0, random_state=1)
    reports = priv.fit_transform(df)
    assert list(reports.columns) == ["marginal", "report"] and len(reports) == len(df)
    assert reports.index.equals(df.index)
    est = priv.marginal_estimator(reports)
    truth = _crosstab(df, "a", "b")
    tv = 0.5 * np.abs(est.marginal(["a", "b"]).to_numpy() - truth).sum()
    independent = np.outer(
        df["a"].value_counts(normalize=True).sort_index(),
        df["b"].value_counts(normalize=True).sort_index(),
    ).ravel()
    # independence is 0.25 away; a third of 40,000 users at epsilon = 2
    # estimates six cells within a few hundredths
    assert 0.5 * np.abs(independent - truth).sum() > 0.2
    assert tv < 0.05
    one_way = priv.estimate(reports)
    assert list(one_way) == ["a", "b", "c"]
    for c in one_way:
        assert one_way[c].index.tolist() == CATEGORIES[c]
        freq = df[c].value_counts(normalize=True).reindex(CATEGORIES[c]).to_numpy()
        assert np.abs(one_way[c].to_numpy() - freq).max() < 0.03
    intervals = est.marginal_confidence_intervals(["a", "b"], alpha=0.01)
    assert (
        (intervals["lower"].to_numpy() <= truth + 1e-12)
        & (truth <= intervals["upper"].to_numpy() + 1e-12)
    ).mean() >= 5 / 6


def test_spec_file_rebuilds_the_estimate(tmp_path):
    df = _table(5_000)
    priv = _privatizer(1.0, random_state=2)
    reports = priv.fit_transform(df)
    path = priv.save_spec(tmp_path / "spec.json")
    document = json.loads(path.read_text())
    assert document["strategy"]["name"] == "marginals"
    assert document["epsilon_per_person"] == 1.0
    assert document["report_columns"] == ["marginal", "report"]
    bare = pd.DataFrame(reports.to_numpy(), columns=reports.columns)  # no attrs
    est = MarginalEstimator(mechanism=document["marginals"]).fit(bare)
    np.testing.assert_array_equal(
        est.marginal(["a", "c"]).to_numpy(),
        priv.marginal_estimator(reports).marginal(["a", "c"]).to_numpy(),
    )


def test_randomness_seeded_reproducible_and_fresh_never_stored():
    df = _table(3_000)
    one = _privatizer(random_state=5).fit_transform(df)
    two = _privatizer(random_state=5).fit_transform(df)
    pd.testing.assert_frame_equal(one, two)
    other = _privatizer(random_state=6).fit_transform(df)
    assert (one["report"] != other["report"]).mean() > 0.3
    fresh = _privatizer()
    first = fresh.fit_transform(df)
    assert fresh.marginal_privatizer_.random_state is None
    copy = pickle.loads(pickle.dumps(fresh))
    assert (copy.transform(df)["marginal"] != first["marginal"]).mean() > 0.3


def test_array_input_pandas_category_domains_and_missing_category():
    df = _table(2_000)
    arrays = _privatizer(random_state=0).set_output(transform="default")
    reports = arrays.fit_transform(df)
    assert reports.shape == (2_000, 2)
    typed = df.astype("category")
    typed.loc[:9, "c"] = np.nan
    auto = DataFramePrivatizer(
        {c: RandomizedResponse(1.0) for c in CATEGORIES},
        strategy="marginals",
        missing="category",
        random_state=0,
    ).fit(typed)
    assert list(auto.marginal_privatizer_.categories_["c"]) == ["p", "q", "(missing)"]
    assert auto.transform(typed).shape == (2_000, 2)


def test_marginal_size():
    df = _table(2_000)
    priv = _privatizer(marginal_size=3, random_state=0).fit(df)
    assert priv.marginal_privatizer_.marginals_ == [("a", "b", "c")]
    with pytest.raises(ValueError, match="marginal_size"):
        _privatizer(marginal_size=0).fit(df)


@pytest.mark.parametrize(
    "change, fragment",
    [
        ({"b": RandomizedResponse(1.0, categories=CATEGORIES["b"])}, "different budgets"),
        ({"c": PiecewiseMechanism(2.0, bounds=(0.0, 1.0))}, "numeric"),
    ],
)
def test_refused_declarations_say_why(change, fragment):
    mechanisms = {c: RandomizedResponse(2.0, categories=cats) for c, cats in CATEGORIES.items()}
    mechanisms.update(change)
    df = _table(100)
    df["c"] = np.linspace(0, 1, 100) if fragment == "numeric" else df["c"]
    with pytest.raises(ValueError, match=fragment) as info:
        DataFramePrivatizer(mechanisms, strategy="marginals").fit(df)
    for value in ("x", "y", "u", "v"):
        assert repr(value) not in str(info.value)  # no user value in the message


def test_refused_uses_say_what_to_do():
    df = _table(200)
    with pytest.raises(ValueError, match="remainder must be 'drop'"):
        _privatizer(remainder="passthrough").fit(df.assign(w=1))
    priv = _privatizer(random_state=0)
    reports = priv.fit_transform(df)
    with pytest.raises(ValueError, match="marginal_estimator"):
        priv.column_reports(reports, "a")
    split = DataFramePrivatizer(
        {c: RandomizedResponse(1.0, categories=cats) for c, cats in CATEGORIES.items()}
    ).fit(df)
    with pytest.raises(ValueError, match="strategy='marginals'"):
        split.marginal_estimator(reports)
    with pytest.raises(ValueError, match="user_secrets"):
        priv.transform(df, user_secrets=[bytes(16)] * len(df))


def test_dask_is_refused_with_the_way_out():
    dd = pytest.importorskip("dask.dataframe")
    frame = dd.from_pandas(_table(200), npartitions=2)
    with pytest.raises(ValueError, match="MarginalPrivatizer"):
        _privatizer().fit(frame)
