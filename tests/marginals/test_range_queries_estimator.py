"""Range queries, the collector's side: unbiased grids, consistency, answers, intervals.

Statistical tests against the truth use tolerances in standard errors (from
the oracles' exact variance), and each comes with a wrong estimate that
fails it.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy.stats import chi2

from sklearn_uldp import EMEstimator
from sklearn_uldp.exceptions import ReportMismatchError
from sklearn_uldp.marginals import (
    RangeQueryEstimator,
    RangeQueryPrivatizer,
    reduce_range_statistics,
)
from sklearn_uldp.marginals._maxent import MaxEntModel
from sklearn_uldp.marginals._range_estimator import _maxent_boxes, response_matrix

BOUNDS = {"a": (0.0, 8.0), "b": (0.0, 4.0), "c": (0.0, 1.0)}


def _table(n, seed=0):
    """Three dependent columns: b follows a, c follows b (a chain)."""
    rng = np.random.default_rng(seed)
    a = rng.beta(2, 3, n) * 8
    b = np.clip(a / 2 + rng.normal(0, 0.5, n), 0, 4)
    c = np.clip(b / 4 + rng.normal(0, 0.15, n), 0, 1)
    return pd.DataFrame({"a": a, "b": b, "c": c})


def _truth(table, query):
    inside = np.ones(len(table), dtype=bool)
    for column, (low, high) in query.items():
        values = table[column].to_numpy()
        inside &= (values >= low) & (values <= high)
    return float(inside.mean())


def _grid_truth(channel, table, j):
    """The true distribution of grid j's cells."""
    values = table[list(channel.columns)].to_numpy()
    virtual = channel.virtual_codes(channel.fine_codes(values))
    cells = channel.grid_channel.cell_codes(j, virtual)
    return np.bincount(cells, minlength=channel.cells[j]) / len(table)


# ------------------------------------------------------------------ unbiased grids
@pytest.mark.parametrize(
    "method, oracle",
    [("hdg", "auto"), ("hdg", "RR"), ("hdg", "OLH"), ("tdg", "OUE"), ("hdg", "uRR")],
)
def test_every_cell_is_within_a_few_standard_errors_of_the_truth(method, oracle):
    table = _table(60_000, seed=1)
    sensitive = {"a": [(6.0, 8.0)], "b": [(3.0, 4.0)], "c": [(0.9, 1.0)]}
    priv = RangeQueryPrivatizer(
        1.5,
        bounds=BOUNDS,
        method=method,
        granularity=(8, 4) if method == "hdg" else 4,
        sensitive_ranges=sensitive if oracle.startswith("u") else None,
        mechanism=oracle,
        random_state=2,
    )
    est = RangeQueryEstimator().fit(priv.fit_transform(table))
    channel = est.channel_
    z2 = []
    for j, sub in enumerate(channel.channels):
        truth = _grid_truth(channel, table, j)
        n = est.statistics_.extra.parts[j].n
        var = sub.estimator_variance(truth, n)
        exact = var == 0  # cells of invertible outputs only, none held
        z = (est._result()["linear"][j][~exact] - truth[~exact]) / np.sqrt(var[~exact])
        assert np.abs(z).max() < 4.5, (j, np.abs(z).max())
        z2.append(z**2)
    stat = float(np.concatenate(z2).sum())
    dof = sum(len(z) for z in z2)
    assert chi2.cdf(stat, dof * 1.15) > 1e-4 and chi2.sf(stat, dof * 0.85) > 1e-4, (stat, dof)


def test_a_biased_estimate_fails_the_cell_test():
    table = _table(60_000, seed=1)
    priv = RangeQueryPrivatizer(1.5, bounds=BOUNDS, granularity=(8, 4), random_state=2)
    est = RangeQueryEstimator().fit(priv.fit_transform(table))
    channel = est.channel_
    wrong = np.roll(_grid_truth(channel, table, 0), 1)
    var = channel.channels[0].estimator_variance(wrong, est.statistics_.extra.parts[0].n)
    z = (est._result()["linear"][0] - wrong) / np.sqrt(var)
    assert np.abs(z).max() > 4.5


# ------------------------------------------------------------------ answers
def _aligned_queries(channel, rng, n_queries, columns):
    """Boxes whose sides lie on the 2-D bins' edges (no partial cell)."""
    queries = []
    for _ in range(n_queries):
        query = {}
        for c in columns:
            edges = channel.edges(c, channel.g2)
            i, k = np.sort(rng.choice(len(edges), 2, replace=False))
            query[c] = (float(edges[i]), float(edges[k]))
        queries.append(query)
    return queries


@pytest.mark.parametrize("method", ["hdg", "tdg"])
def test_answers_are_within_a_few_standard_errors(method):
    table = _table(80_000, seed=3)
    priv = RangeQueryPrivatizer(
        2.0,
        bounds=BOUNDS,
        method=method,
        granularity=(8, 4) if method == "hdg" else 4,
        random_state=3,
    )
    est = RangeQueryEstimator().fit(priv.fit_transform(table))
    rng = np.random.default_rng(0)
    z = []
    for columns in (["a"], ["b", "c"], ["a", "c"]):
        for query in _aligned_queries(est.channel_, rng, 15, columns):
            # The interval at alpha with z = 1 is the answer +- one standard
            # error of the linear estimate (aligned boxes: no partial cell).
            low, high = est.confidence_interval(query, alpha=2 * (1 - 0.8413447460685429))
            se = (high - low) / 2
            truth = _truth(table, query)
            if se > 0:
                z.append((est.query(query) - truth) / se)
    z = np.asarray(z)
    assert np.abs(z).max() < 5, np.abs(z).max()
    assert np.mean(z**2) < 2.0  # consistency makes the answers no noisier on average


def test_answers_of_the_wrong_columns_fail_the_test():
    table = _table(80_000, seed=3)
    priv = RangeQueryPrivatizer(2.0, bounds=BOUNDS, granularity=(8, 4), random_state=3)
    est = RangeQueryEstimator().fit(priv.fit_transform(table))
    query = {"a": (0.0, 2.0), "b": (0.0, 1.0)}
    swapped = {"a": (0.0, 4.0), "b": (0.0, 0.5)}  # the box with its sides exchanged
    low, high = est.confidence_interval(query, alpha=0.3173)
    assert abs(est.query(swapped) - _truth(table, query)) / ((high - low) / 2) > 5


def test_queries_over_three_columns_follow_the_pairs():
    # b follows a and c follows b: the maximum-entropy table given the pairs
    # is the chain itself, so the answers are close to the truth.
    table = _table(200_000, seed=4)
    priv = RangeQueryPrivatizer(4.0, bounds=BOUNDS, granularity=(16, 8), random_state=4)
    est = RangeQueryEstimator().fit(priv.fit_transform(table))
    rng = np.random.default_rng(1)
    errors, independent = [], []
    for _ in range(30):
        query = {}
        for c, (low, high) in BOUNDS.items():
            lo, hi = np.sort(rng.uniform(low, high, 2))
            query[c] = (lo, hi)
        truth = _truth(table, query)
        errors.append(abs(est.query(query) - truth))
        product = np.prod([_truth(table, {c: r}) for c, r in query.items()])
        independent.append(abs(product - truth))
    assert np.mean(errors) < 0.02 and np.mean(errors) < 0.5 * np.mean(independent)


def test_the_batched_maximum_entropy_is_the_marginals_model():
    rng = np.random.default_rng(0)
    for k in (3, 4):
        joint = rng.dirichlet(np.ones(2**k)).reshape((2,) * k)
        pairs = {}
        for a, b in itertools.combinations(range(k), 2):
            rest = tuple(c for c in range(k) if c not in (a, b))
            pairs[(a, b)] = joint.sum(axis=rest)[None]
        ours = _maxent_boxes(pairs, k, 1)[0]
        model = MaxEntModel([2] * k, list(pairs), [t[0] for t in pairs.values()])
        assert np.allclose(ours, model.marginal(tuple(range(k))), atol=1e-8)


def test_the_response_matrix_has_the_grids_sums():
    rng = np.random.default_rng(2)
    joint = rng.dirichlet(np.full(64, 0.3)).reshape(8, 8)
    rows, columns = joint.sum(axis=1), joint.sum(axis=0)
    coarse = joint.reshape(4, 2, 4, 2).sum(axis=(1, 3))
    M = response_matrix(rows, columns, coarse)
    assert np.allclose(M.sum(axis=1), rows, atol=1e-9)
    assert np.allclose(M.sum(axis=0), columns, atol=1e-9)
    assert np.allclose(M.reshape(4, 2, 4, 2).sum(axis=(1, 3)), coarse, atol=1e-9)
    # Within a block it is the maximum-entropy (product) split of the margins
    # that reach it, not the joint's finer structure: closer than a uniform
    # spread, never exact in general.
    uniform = np.kron(coarse, np.full((2, 2), 0.25))
    assert np.abs(M - joint).sum() < np.abs(uniform - joint).sum()


def test_hdg_beats_its_own_2d_grid_on_unaligned_queries():
    # The 1-D grids locate the users within the 2-D bins (the point of HDG).
    table = _table(150_000, seed=5)
    priv = RangeQueryPrivatizer(2.0, bounds=BOUNDS, granularity=(16, 4), random_state=5)
    est = RangeQueryEstimator().fit(priv.fit_transform(table))
    rng = np.random.default_rng(3)
    hdg, coarse = [], []
    grid = est._result()["tables"][est.channel_.grid_index(["a", "b"])].reshape(4, 4)
    for _ in range(100):
        query = {c: tuple(np.sort(rng.uniform(*BOUNDS[c], 2))) for c in ("a", "b")}
        truth = _truth(table, query)
        hdg.append(abs(est.query(query) - truth))
        wa = est._overlap(0, 4, [query["a"][0]], [query["a"][1]])[0]
        wb = est._overlap(1, 4, [query["b"][0]], [query["b"][1]])[0]
        coarse.append(abs(wa @ grid @ wb - truth))
    assert np.mean(hdg) < 0.7 * np.mean(coarse)


# ------------------------------------------------------------------ consistency
def test_consistency_makes_grids_agree():
    table = _table(30_000, seed=6)
    for method, granularity in (("hdg", (8, 4)), ("tdg", 4)):
        priv = RangeQueryPrivatizer(
            1.0, bounds=BOUNDS, method=method, granularity=granularity, random_state=0
        )
        est = RangeQueryEstimator().fit(priv.fit_transform(table))
        channel, result = est.channel_, est._result()
        for column in channel.columns:
            margins = []
            for j, grid in enumerate(channel.grids):
                t = result["tables"][j]
                if grid == (column,):
                    margins.append(t.reshape(channel.g2, -1).sum(axis=1))
                elif column in grid:
                    t = t.reshape(channel.g2, channel.g2)
                    margins.append(t.sum(axis=1 - grid.index(column)))
            for other in margins[1:]:
                assert np.allclose(other, margins[0], rtol=0, atol=1e-8)
        assert all(t.min() >= 0 and np.isclose(t.sum(), 1) for t in result["tables"].values())
        loose = RangeQueryEstimator(consistency=False).fit(priv.transform(table))
        tables = loose._result()["tables"]
        a_1d = tables[channel.grid_index(["a", "b"])].reshape(4, 4).sum(axis=1)
        a_2d = tables[channel.grid_index(["a", "c"])].reshape(4, 4).sum(axis=1)
        assert not np.allclose(a_1d, a_2d, atol=1e-6)


# ------------------------------------------------------------------ intervals
def test_interval_coverage():
    # Aligned boxes: the normal interval of the linear estimate (about 95%).
    # Boxes cutting through cells: the truth lies between the cells inside
    # and the cells met, so the interval is conservative.
    rng = np.random.default_rng(0)
    aligned, cutting, narrow = [], [], []
    bounds = {"a": (0.0, 8.0), "b": (0.0, 4.0)}
    for rep in range(60):
        table = _table(8_000, seed=100 + rep)[["a", "b"]]
        priv = RangeQueryPrivatizer(
            1.0, bounds=bounds, granularity=(8, 4), mechanism="RR", random_state=rep
        )
        est = RangeQueryEstimator().fit(priv.fit_transform(table))
        for query in _aligned_queries(est.channel_, rng, 3, ["a", "b"]) + [{"a": (0.0, 4.0)}]:
            truth = _truth(table, query)
            low, high = est.confidence_interval(query)
            aligned.append(low <= truth <= high)
            low, high = est.confidence_interval(query, alpha=0.7)
            narrow.append(low <= truth <= high)
        query = {c: tuple(np.sort(rng.uniform(*bounds[c], 2))) for c in bounds}
        low, high = est.confidence_interval(query)
        cutting.append(low <= _truth(table, query) <= high)
    assert 0.9 <= np.mean(aligned) <= 0.99, np.mean(aligned)
    assert np.mean(cutting) >= 0.93, np.mean(cutting)
    assert np.mean(narrow) < 0.5, np.mean(narrow)  # 30% intervals cover about 30%


def test_intervals_refuse_three_columns():
    table = _table(5_000)
    est = RangeQueryEstimator().fit(
        RangeQueryPrivatizer(1.0, bounds=BOUNDS, granularity=(4, 2)).fit_transform(table)
    )
    with pytest.raises(ValueError, match="maximum-entropy"):
        est.confidence_interval({c: (0, 1) for c in BOUNDS})
    with pytest.raises(ValueError, match="alpha"):
        est.confidence_interval({"a": (0, 1)}, alpha=1.5)


# ------------------------------------------------------------------ fit, partial_fit, statistics
def test_partial_fit_and_reduced_statistics_equal_fit():
    table = _table(20_000, seed=7)
    priv = RangeQueryPrivatizer(1.0, bounds=BOUNDS, granularity=(8, 4), random_state=0).fit()
    reports = priv.transform(table)
    whole = RangeQueryEstimator().fit(reports)
    chunks = RangeQueryEstimator()
    for part in np.array_split(np.arange(len(reports)), 4):
        chunks.partial_fit(reports.iloc[part])
    stats = reduce_range_statistics(
        [reports.iloc[p] for p in np.array_split(np.arange(len(reports)), 3)]
    )
    reduced = RangeQueryEstimator().fit_statistics(stats)
    assert chunks.n_reports_ == whole.n_reports_ == reduced.n_reports_ == 20_000
    assert np.array_equal(chunks.statistics_.counts, whole.statistics_.counts)
    queries = [
        {"a": (1, 3)},
        {"a": (1, 3), "b": (0.5, 2)},
        {"a": (1, 5), "b": (1, 2), "c": (0, 0.5)},
    ]
    for other in (chunks, reduced):
        assert np.allclose(other.query_many(queries), whole.query_many(queries), rtol=0, atol=1e-12)


def test_dask_partitions_reduce_to_the_same_statistics():
    dd = pytest.importorskip("dask.dataframe")
    table = _table(6_000, seed=8)
    priv = RangeQueryPrivatizer(1.0, bounds=BOUNDS, granularity=(8, 4), random_state=0).fit()
    reports = priv.transform(table)
    ddf = dd.from_pandas(pd.DataFrame(reports), npartitions=3)
    stats = reduce_range_statistics(ddf, priv)
    assert stats.n == 6_000
    query = {"a": (2, 6), "c": (0.2, 0.8)}
    assert RangeQueryEstimator().fit_statistics(stats).query(query) == pytest.approx(
        RangeQueryEstimator().fit(reports).query(query), abs=1e-12
    )
    with pytest.raises(ValueError, match="mechanism="):
        reduce_range_statistics(ddf)


def test_reports_of_another_privatizer_are_refused():
    table = _table(2_000)
    a = RangeQueryPrivatizer(1.0, bounds=BOUNDS, granularity=(4, 2), random_state=0).fit()
    b = RangeQueryPrivatizer(2.0, bounds=BOUNDS, granularity=(4, 2), random_state=0).fit()
    est = RangeQueryEstimator().fit(a.transform(table))
    with pytest.raises(ReportMismatchError, match="epsilon"):
        est.partial_fit(b.transform(table))
    with pytest.raises(ReportMismatchError):
        RangeQueryEstimator(mechanism=b).fit(a.transform(table))
    plain = np.asarray(a.transform(table))
    with pytest.raises(ValueError, match="mechanism="):
        RangeQueryEstimator().fit(plain)
    assert RangeQueryEstimator(mechanism=a.spec()).fit(plain).n_reports_ == 2_000
    altered = plain.copy()
    altered[0, 0] = 7
    with pytest.raises(ReportMismatchError, match="grid outside"):
        RangeQueryEstimator(mechanism=a).fit(altered)
    with pytest.raises(ReportMismatchError, match="shape"):
        RangeQueryEstimator(mechanism=a).fit(plain[:, :1])


def test_reports_with_bits_past_their_grid_are_refused():
    # 1-D grids of 16 cells report one word, the 2-D grids of 256 cells
    # four: a 1-D grid's report with a word past its own, or a bit past its
    # 16 cells, comes from another privatizer (or was altered).
    table = _table(3_000, seed=3)
    priv = RangeQueryPrivatizer(1.0, bounds=BOUNDS, granularity=(16, 16), random_state=0)
    plain = np.asarray(priv.fit_transform(table))
    assert plain.shape[1] == 5
    assert RangeQueryEstimator(mechanism=priv).fit(plain).n_reports_ == 3_000
    row = int(np.flatnonzero(plain[:, 0] == 0)[0])
    for column, value, message in ((3, 1, "report words past its 1"), (1, 1 << 20, "past its 16")):
        altered = plain.copy()
        altered[row, column] |= value
        with pytest.raises(ReportMismatchError, match=message):
            RangeQueryEstimator(mechanism=priv).fit(altered)


def test_an_estimator_template_per_grid():
    table = _table(20_000, seed=9)
    priv = RangeQueryPrivatizer(2.0, bounds=BOUNDS, granularity=(8, 4), random_state=0)
    reports = priv.fit_transform(table)
    em = RangeQueryEstimator(estimator=EMEstimator()).fit(reports)
    query = {"a": (2.0, 6.0), "b": (1.0, 3.0)}
    assert abs(em.query(query) - _truth(table, query)) < 0.05
    stats = reduce_range_statistics([reports], keep_reports=True)
    again = RangeQueryEstimator(estimator=EMEstimator()).fit_statistics(stats)
    assert again.query(query) == pytest.approx(em.query(query), abs=1e-9)


# ------------------------------------------------------------------ the query API
def test_query_api():
    table = _table(20_000, seed=10)
    priv = RangeQueryPrivatizer(2.0, bounds=BOUNDS, granularity=(8, 4), random_state=0)
    est = RangeQueryEstimator().fit(priv.fit_transform(table))
    assert est.columns_ == ["a", "b", "c"] and est.bounds_["b"] == (0.0, 4.0)
    assert est.grids_[:3] == [("a",), ("b",), ("c",)]
    assert est.query({"a": (None, None)}) == pytest.approx(1.0)
    assert est.query({"a": (-100, 100)}) == pytest.approx(1.0)  # clipped to the bounds
    assert est.query({"a": (1, 3), "b": (0, 2)}) == est.query({"b": (0, 2), "a": (1, 3)})
    queries = [{"a": (1, 3)}, {"b": (0, 2), "a": (1, 3)}, {"c": (0, 0.4)}, {"a": (2, 2.5)}]
    assert np.allclose(est.query_many(queries), [est.query(q) for q in queries])
    hist = est.histogram(["b", "a"])
    assert hist.shape == (8, 8) and hist.index.name == "b" and hist.columns.name == "a"
    assert np.allclose(hist.to_numpy().T, est.histogram(["a", "b"]).to_numpy())
    one = est.histogram("a")
    assert isinstance(one.index, pd.IntervalIndex) and one.sum() == pytest.approx(1.0)
    for bad, error in [
        ({}, ValueError),
        ({"z": (0, 1)}, KeyError),
        ({"a": (3, 1)}, ValueError),
        ({"a": ("x", 1)}, ValueError),
        ({"a": 1}, ValueError),
    ]:
        with pytest.raises(error):
            est.query(bad)
    with pytest.raises(TypeError):
        est.query_many({"a": (0, 1)})


@pytest.mark.parametrize("rule", ["auto", "smooth"])
def test_an_unfitted_privatizer_with_a_rule_by_name_needs_its_number_of_users(rule):
    """The estimator (and the Dask reduction) rebuild an unfitted privatizer's
    channel; a granularity chosen by a rule needs n_users to be the same."""
    table = _table(4_000)
    priv = RangeQueryPrivatizer(1.0, bounds=BOUNDS, granularity=rule, random_state=0)
    reports = priv.fit_transform(table)
    with pytest.raises(ValueError, match=f"granularity='{rule}' without n_users"):
        RangeQueryEstimator(
            mechanism=RangeQueryPrivatizer(1.0, bounds=BOUNDS, granularity=rule)
        ).fit(reports)
    with pytest.raises(ValueError, match=f"granularity='{rule}' without n_users"):
        reduce_range_statistics(
            [reports], RangeQueryPrivatizer(1.0, bounds=BOUNDS, granularity=rule)
        )
    # with the number of users the privatizer's grids are rebuilt: the same channel
    same = RangeQueryPrivatizer(1.0, bounds=BOUNDS, granularity=rule, n_users=4_000)
    assert RangeQueryEstimator(mechanism=same).fit(reports).n_reports_ == 4_000


def test_unfitted_and_set_params():
    from sklearn.exceptions import NotFittedError

    est = RangeQueryEstimator()
    with pytest.raises(NotFittedError):
        est.query({"a": (0, 1)})
    table = _table(5_000)
    reports = RangeQueryPrivatizer(1.0, bounds=BOUNDS, granularity=(4, 2)).fit_transform(table)
    est.fit(reports)
    before = est.consistency_info_
    est.set_params(consistency=False)
    assert before is not None and est.consistency_info_ is None


def test_utility_optimized_grids_are_better_where_nothing_is_sensitive():
    # The non-sensitive cells of each grid: the utility-optimized oracles
    # report them in the clear to most of their users. Their error after
    # consistency, against plain LDP at the same budget.
    table = _table(60_000, seed=11)
    sensitive = {"a": [(5.0, 8.0)], "b": [(3.0, 4.0)], "c": [(0.75, 1.0)]}
    errors = {"ldp": [], "uldp": []}
    for rep in range(3):
        for kind, ranges in (("ldp", None), ("uldp", sensitive)):
            priv = RangeQueryPrivatizer(
                1.0, bounds=BOUNDS, granularity=(8, 4), sensitive_ranges=ranges, random_state=rep
            )
            est = RangeQueryEstimator().fit(priv.fit_transform(table))
            mask_channel = (
                RangeQueryPrivatizer(
                    1.0, bounds=BOUNDS, granularity=(8, 4), sensitive_ranges=sensitive
                )
                .fit()
                .channel_
            )
            total = 0.0
            for j in range(est.channel_.n_grids):
                cells = ~mask_channel.cell_sensitive(j)
                t = est._result()["tables"][j]
                total += np.abs(t - _grid_truth(est.channel_, table, j))[cells].sum()
            errors[kind].append(total)
    assert np.mean(errors["uldp"]) < 0.75 * np.mean(errors["ldp"]), errors


def test_a_grid_without_reports():
    # A handful of users: a 1-D grid may have no report; its column is then
    # read from the 2-D grids' margins.
    table = _table(3, seed=12)[["a", "b"]]
    priv = RangeQueryPrivatizer(
        1.0, bounds={"a": BOUNDS["a"], "b": BOUNDS["b"]}, granularity=(4, 2), random_state=1
    )
    priv.fit(table)
    channel = priv.channel_
    fine = channel.fine_codes(table.to_numpy())
    # every user assigned the 2-D grid
    reports = channel.sample(fine, np.random.default_rng(0), assignment=np.full(3, 2))
    est = RangeQueryEstimator(mechanism=priv).fit(reports)
    assert est.grids_ == [("a", "b")]
    assert est.query({"a": (None, None)}) == pytest.approx(1.0)
    assert est.histogram("a").shape == (4,)
