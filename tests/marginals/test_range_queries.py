"""Range queries, the users' side: the spec, the exact channel, the sampler, randomness.

The guarantees are checked on the exact channel over rows
(``RangeQueryChannel.realized_matrix``, over the tuples of finest bins, on
which a row's law depends), the sampler against that channel with chi-square
tests a wrong sampler fails, the grid assignment for uniformity and
independence from the data, and the sensitive-range rule on the binning
itself.
"""

from __future__ import annotations

import json
import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from _chisquare import chi_square_pvalue
from sklearn.base import clone

from sklearn_uldp.exceptions import (
    ClippingWarning,
    InvalidSpecError,
    PrivacyLeakWarning,
    ReportMismatchError,
)
from sklearn_uldp.marginals import (
    RangeQueryChannel,
    RangeQueryEstimator,
    RangeQueryPrivatizer,
    check_marginal_uldp,
    check_range_uldp,
    choose_granularity,
)
from sklearn_uldp.marginals._range_channel import bin_codes, range_grids
from sklearn_uldp.mechanisms import Channel, get_channel
from sklearn_uldp.privacy import audit_mechanism, check_ldp, check_uldp

BOUNDS = {"a": (0.0, 10.0), "b": (-1.0, 1.0)}
SENSITIVE = {"a": [(8.0, 10.0)], "b": [(0.6, 1.0)]}
LDP_ORACLES = ["RR", "OUE", "OLH", "SS"]
ULDP_ORACLES = ["uRR", "uOUE", "uBD", "uSS"]


def _privatizer(method="hdg", granularity=(4, 2), sensitive=None, **params):
    if method == "tdg" and isinstance(granularity, tuple):
        granularity = granularity[1] + 1
    return RangeQueryPrivatizer(
        1.0,
        bounds=BOUNDS,
        method=method,
        granularity=granularity,
        sensitive_ranges=sensitive,
        **params,
    ).fit()


def _centers(channel):
    """A point of every tuple of finest bins (its center), as a DataFrame."""
    rows = channel._rows()
    values = {}
    for j, c in enumerate(channel.columns):
        edges = channel.edges(c, channel.fine_bins)
        values[c] = ((edges[:-1] + edges[1:]) / 2)[rows[:, j]]
    return pd.DataFrame(values)


def _output_columns(channel, reports):
    """The column of channel.matrix() of each report (int64 table)."""
    reports = np.asarray(reports)
    offsets = np.cumsum([0] + [c.n_outputs for c in channel.channels])
    out = np.full(len(reports), -1)
    for j, sub in enumerate(channel.channels):
        rows = np.flatnonzero(reports[:, 0] == j)
        labels = sub.output_labels()
        if sub.report_format == "bits":
            k = sub.n_categories
            data = np.ascontiguousarray(reports[rows, 1:].astype("<i8")).view(np.uint8)
            values = np.unpackbits(data, axis=1, bitorder="little")[:, :k]
            keys = [tuple(np.asarray(lab).tolist()) for lab in labels]
        else:
            values = reports[rows, 1:2]
            keys = [(v,) for v in np.asarray(labels).tolist()]
        lookup = {key: i for i, key in enumerate(keys)}
        uniques, inverse = np.unique(values, axis=0, return_inverse=True)
        position = np.array([lookup[tuple(u)] for u in uniques.tolist()])
        out[rows] = offsets[j] + position[inverse.ravel()]
    assert (out >= 0).all()
    return out


# ------------------------------------------------------------------ the design
def test_grids_of_each_method():
    assert range_grids(3, "hdg") == [(0,), (1,), (2,), (0, 1), (0, 2), (1, 2)]
    assert range_grids(3, "tdg") == [(0, 1), (0, 2), (1, 2)]
    assert range_grids(1, "hdg") == [(0,)]
    priv = _privatizer()
    assert priv.grids_ == [("a",), ("b",), ("a", "b")]
    assert priv.channel_.cells == (4, 4, 4) and priv.granularity_ == (4, 2)
    tdg = _privatizer("tdg")
    assert tdg.grids_ == [("a", "b")] and tdg.granularity_ == (None, 3)
    one = RangeQueryPrivatizer(1.0, bounds={"a": (0, 1)}, granularity=8).fit()
    assert one.grids_ == [("a",)] and one.granularity_ == (8, None)


def test_auto_granularity_is_the_papers_guideline():
    # With local hashing's variance (the same for every number of cells) the
    # minimizers are the paper's closed forms, rounded to the nearest integer
    # candidate (the error model is convex in g).
    n, eps, d = 1_000_000, 1.0, 2
    m = d + d * (d - 1) // 2
    e = np.exp(eps)
    g1_paper = (n * (e - 1) ** 2 * 0.7**2 / (2 * m * e)) ** (1 / 3)
    g2_paper = np.sqrt(2 * 0.03 * (e - 1) * np.sqrt(n / (m * e)))
    # (the package's default alpha2 is 4 times the paper's: pass the paper's)
    g1, g2, table = choose_granularity(n, eps, d, mechanism="OLH", alpha1=0.7, alpha2=0.03)
    assert abs(g2 - g2_paper) < 1 and g1 % g2 == 0 and abs(g1 - g1_paper) <= g2
    chosen = table[table["chosen"]]
    assert set(chosen["grid"]) == {"1-D", "2-D"}
    for kind in ("1-D", "2-D"):
        rows = table[table["grid"] == kind]
        assert rows.loc[rows["chosen"], "error"].iloc[0] == rows["error"].min()
    # More users: finer grids; a smaller budget: coarser ones.
    assert choose_granularity(10 * n, eps, d)[1] > choose_granularity(n, eps, d)[1]
    assert choose_granularity(n, 0.5, d)[0] < choose_granularity(n, eps, d)[0]
    # TDG spends every user on the 2-D grids: finer 2-D grids than HDG's.
    assert choose_granularity(n, eps, d, "tdg")[1] >= g2
    priv = RangeQueryPrivatizer(1.0, bounds=BOUNDS)
    with pytest.raises(ValueError, match="n_users"):
        priv.fit()
    priv.set_params(n_users=n).fit()
    assert priv.granularity_ == choose_granularity(n, 1.0, 2)[:2]
    assert priv.design_ is not None


@pytest.mark.parametrize(
    "granularity, message",
    [((6, 4), "divide"), ((4, 2, 1), "pair"), ((1, 1), ">= 2"), ((2048, 2), "more than")],
)
def test_bad_granularities_are_refused(granularity, message):
    with pytest.raises(ValueError, match=message):
        RangeQueryPrivatizer(1.0, bounds=BOUNDS, granularity=granularity).fit()


def test_tdg_needs_pairs_and_no_1d_granularity():
    with pytest.raises(ValueError, match="tdg"):
        RangeQueryPrivatizer(1.0, bounds={"a": (0, 1)}, method="tdg", granularity=4).fit()
    with pytest.raises(ValueError, match="no 1-D grids"):
        RangeQueryPrivatizer(1.0, bounds=BOUNDS, method="tdg", granularity=(4, 2)).fit()
    assert RangeQueryPrivatizer(
        1.0, bounds=BOUNDS, method="tdg", granularity=(None, 4)
    ).fit().granularity_ == (None, 4)


# ------------------------------------------------------------------ the spec
@pytest.mark.parametrize("method", ["hdg", "tdg"])
@pytest.mark.parametrize("sensitive", [None, SENSITIVE])
def test_spec_round_trips_through_json(method, sensitive):
    priv = _privatizer(method, sensitive=sensitive)
    spec = priv.spec()
    assert spec["mechanism"] == "range_queries"
    again = Channel.from_json(json.dumps(spec))
    assert again == priv.channel_ and hash(again) == hash(priv.channel_)
    assert again.to_dict() == spec
    X = pd.DataFrame({"a": [1.0, 9.0, 5.0], "b": [0.0, 0.9, -0.5]})
    frame = priv.transform(X)
    assert get_channel(frame) == priv.channel_
    array = priv.set_output(transform="default").transform(X)
    assert pickle.loads(pickle.dumps(array)).channel == priv.channel_


def test_spec_validates_against_the_schema():
    jsonschema = pytest.importorskip("jsonschema")
    from sklearn_uldp.mechanisms import spec_json_schema

    schema = spec_json_schema()
    assert "range_queries" in schema["$defs"]
    validator = jsonschema.Draft202012Validator(schema)
    for method in ("hdg", "tdg"):
        assert validator.is_valid(_privatizer(method, sensitive=SENSITIVE).spec())
    bad = dict(_privatizer().spec(), method="grid")
    assert not validator.is_valid(bad)


def _tamper(spec, path, value):
    spec = json.loads(json.dumps(spec))
    target = spec
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return spec


@pytest.mark.parametrize(
    "path, value, message",
    [
        (("columns",), ["a", "a"], "distinct"),
        (("bounds",), [[0, 10], [1, 1]], "not a range"),
        (("bounds",), [[0, 10]], "one \\(low, high\\) per column"),
        (("method",), "grid", "method"),
        (("g1",), 5, "divide"),
        (("g1",), 1, ">= 2"),
        (("g2",), None, "g2"),
        (("channels", 0, "epsilon"), 2.0, "same epsilon"),
        (("channels", 0, "categories"), [0, 1, 2, 5], "codes 0..3"),
        (("channels",), [], "one channel per grid"),
        (("sensitive_ranges", 0), [[20, 30]], "outside"),
        (("sensitive_ranges", 0), [[9, 8]], "empty"),
        (("sensitive_ranges", 0), [], "no sensitive range"),
        (("sensitive_ranges", 0), [[0, 10]], "inconsistent"),
        (("sensitive_ranges",), [None, None], "plain LDP"),
    ],
)
def test_tampered_specs_are_refused(path, value, message):
    spec = _privatizer(sensitive=SENSITIVE, mechanism="uRR").spec()
    with pytest.raises(InvalidSpecError, match=message):
        Channel.from_dict(_tamper(spec, path, value))


def test_tdg_spec_with_a_1d_granularity_is_refused():
    spec = _privatizer("tdg").spec()
    with pytest.raises(InvalidSpecError, match="g1 must be null"):
        Channel.from_dict(dict(spec, g1=4))


def test_channels_differ_by_value():
    a = _privatizer().channel_
    b = RangeQueryPrivatizer(2.0, bounds=BOUNDS, granularity=(4, 2)).fit().channel_
    c = RangeQueryPrivatizer(1.0, bounds=BOUNDS, granularity=(8, 2)).fit().channel_
    d = RangeQueryPrivatizer(1.0, bounds={"a": (0, 20), "b": BOUNDS["b"]}, granularity=(4, 2)).fit()
    assert len({a, b, c, d.channel_}) == 4
    assert any("epsilon" in x for x in a.describe_difference(b))
    assert "g1" in a.describe_difference(c) and "bounds" in a.describe_difference(d.channel_)


def test_range_reports_are_not_marginal_or_column_reports():
    priv = _privatizer()
    reports = priv.transform(pd.DataFrame({"a": [1.0, 2.0], "b": [0.0, 0.5]}))
    from sklearn_uldp import EMEstimator
    from sklearn_uldp.marginals import MarginalEstimator

    with pytest.raises(ReportMismatchError, match="RangeQueryEstimator"):
        EMEstimator().fit(reports)
    with pytest.raises(ReportMismatchError, match="not the spec of marginal reports"):
        MarginalEstimator().fit(reports)
    with pytest.raises(AttributeError, match="bounded numbers"):
        priv.channel_.categories  # noqa: B018


# ------------------------------------------------------------------ the exact channel
@pytest.mark.parametrize("method", ["hdg", "tdg"])
@pytest.mark.parametrize("oracle", LDP_ORACLES)
def test_ldp_reports_are_epsilon_ldp_on_the_exact_channel(method, oracle):
    priv = _privatizer(method, mechanism=oracle)
    channel = priv.channel_
    Q = channel.matrix()
    assert Q.shape[0] == channel.fine_bins**2 and np.allclose(Q.sum(axis=1), 1.0)
    check = check_ldp(channel)
    assert check.satisfied and check.worst_log_ratio == pytest.approx(1.0, abs=1e-9)
    # The blocks are each grid's channel at the row's cell, divided by L.
    virtual = channel.virtual_codes(channel._rows())
    start = 0
    for j, sub in enumerate(channel.channels):
        block = Q[:, start : start + sub.n_outputs]
        cells = channel.grid_channel.cell_codes(j, virtual)
        assert np.allclose(block, sub.matrix()[cells] / channel.n_grids)
        start += sub.n_outputs
    assert check_range_uldp(priv).definition == "LDP"


@pytest.mark.parametrize("method", ["hdg", "tdg"])
@pytest.mark.parametrize("oracle", ["auto", *ULDP_ORACLES])
def test_utility_optimized_reports_keep_the_row_level_guarantee(method, oracle):
    priv = _privatizer(method, sensitive=SENSITIVE, mechanism=oracle)
    channel = priv.channel_
    for sub in channel.channels:
        assert check_uldp(sub)
    check = check_range_uldp(priv)
    assert check.satisfied, check.reasons
    assert check.worst_log_ratio == pytest.approx(1.0, abs=1e-9)
    assert not check_ldp(channel).satisfied  # non-sensitive cells pass in the clear
    # The same reports, as marginal reports over the binned columns.
    assert check_marginal_uldp(channel.grid_channel).satisfied


def test_a_column_left_out_is_sensitive_everywhere():
    priv = _privatizer(sensitive={"a": [(8.0, 10.0)]}, mechanism="uRR")
    channel = priv.channel_
    assert channel.cell_sensitive(0).tolist() == [False, False, False, True]
    assert channel.cell_sensitive(1).all() and channel.cell_sensitive(2).all()
    assert priv.oracles_ == ["uRR", "RR", "RR"]
    assert check_range_uldp(priv).satisfied


def test_a_value_in_a_sensitive_range_always_falls_in_a_sensitive_cell():
    # The rule relies on the binning being monotone: the bins of [a, b] are
    # bin(a) .. bin(b). Values at the ranges' ends and at the bins' edges,
    # with awkward floats, through every granularity.
    rng = np.random.default_rng(0)
    bounds = {"a": (0.1, 0.7), "b": (-3.0, 1e6)}
    ranges = {"a": [(0.1, 0.1), (0.3, 1 / 3), (0.55, 0.7)], "b": [(2.5, 7.25), (1e6, 1e6)]}
    for g1, g2 in [(6, 3), (10, 5), (12, 4), (30, 6)]:
        priv = RangeQueryPrivatizer(
            1.0, bounds=bounds, granularity=(g1, g2), sensitive_ranges=ranges
        ).fit()
        channel = priv.channel_
        for c in ("a", "b"):
            low, high = bounds[c]
            edges = channel.edges(c, g1)
            points = [np.linspace(a, b, 101) for a, b in ranges[c]]
            points += [np.asarray([a, b, np.nextafter(b, -np.inf)]) for a, b in ranges[c]]
            points.append(edges[(edges >= ranges[c][0][0]) & (edges <= ranges[c][0][1])])
            values = np.concatenate(points)
            other = rng.uniform(*bounds["b" if c == "a" else "a"], size=values.size)
            table = np.column_stack([values, other] if c == "a" else [other, values])
            virtual = channel.virtual_codes(channel.fine_codes(table))
            for j, grid in enumerate(channel.grids):
                if c in grid:
                    cells = channel.grid_channel.cell_codes(j, virtual)
                    assert channel.cell_sensitive(j)[cells].all(), (g1, g2, c, grid)


def test_bin_codes_is_monotone_and_closed_at_the_top():
    rng = np.random.default_rng(1)
    for low, high, g in [(0.0, 1.0, 7), (-1e-3, 2e5, 33), (0.1, 0.3, 10)]:
        x = np.sort(np.concatenate([rng.uniform(low, high, 5_000), [low, high]]))
        codes = bin_codes(x, low, high, g)
        assert (np.diff(codes) >= 0).all() and codes[0] == 0 and codes[-1] == g - 1


def test_the_row_level_check_catches_a_leak(monkeypatch):
    priv = _privatizer(sensitive=SENSITIVE, mechanism="uRR")
    sub = priv.channel_.channels[0]  # uRR over a's bins: bin 3 is sensitive
    leaky = sub.realized_matrix().copy()
    invertible = np.flatnonzero(~np.asarray(sub.protected_outputs(), bool))[0]
    leaky[3, :] *= 0.9
    leaky[3, invertible] += 0.1  # a sensitive cell sometimes sent in the clear
    monkeypatch.setattr(sub, "realized_matrix", lambda: leaky)
    check = check_range_uldp(priv)
    assert not check.satisfied
    assert any("unprotected output" in r for r in check.reasons)


def test_the_row_level_check_catches_a_budget_overrun(monkeypatch):
    priv = _privatizer(sensitive=SENSITIVE, mechanism="uRR")
    sub = priv.channel_.channels[2]
    loud = sub.realized_matrix().copy()
    protected = np.flatnonzero(np.asarray(sub.protected_outputs(), bool))
    loud[3, protected] = loud[3, protected] * np.linspace(0.5, 1.5, protected.size)
    loud[3] /= loud[3].sum()
    monkeypatch.setattr(sub, "realized_matrix", lambda: loud)
    assert not check_range_uldp(priv).satisfied


# ------------------------------------------------------------------ the sampler
@pytest.mark.parametrize(
    "method, oracle", [("hdg", "RR"), ("hdg", "OLH"), ("tdg", "SS"), ("hdg", "uRR"), ("tdg", "uBD")]
)
def test_the_sampler_draws_the_exact_channel(method, oracle):
    sensitive = SENSITIVE if oracle.startswith("u") else None
    priv = _privatizer(method, sensitive=sensitive, mechanism=oracle, random_state=0)
    channel = priv.channel_
    Q = channel.realized_matrix()
    rows = _centers(channel)
    n = 30_000
    last = len(rows) - 1  # a row in both sensitive ranges
    for i in (0, 5, last):
        X = rows.iloc[np.repeat(i, n)].reset_index(drop=True)
        out = _output_columns(channel, priv.transform(X))
        counts = np.bincount(out, minlength=Q.shape[1])
        assert chi_square_pvalue(counts, Q[i]) > 1e-4


def test_a_wrong_sampler_fails_the_chi_square():
    priv = _privatizer(mechanism="RR", random_state=0)
    other = RangeQueryPrivatizer(
        1.5, bounds=BOUNDS, granularity=(4, 2), mechanism="RR", random_state=0
    ).fit()
    rows = _centers(priv.channel_)
    X = rows.iloc[np.repeat(6, 30_000)].reset_index(drop=True)
    out = _output_columns(other.channel_, other.transform(X))
    counts = np.bincount(out, minlength=priv.channel_.n_outputs)
    assert chi_square_pvalue(counts, priv.channel_.matrix()[6]) < 1e-6


def _row_sampler(priv):
    """The privatizer as a callable over row indices (for the audit)."""
    channel = priv.channel_
    rows = _centers(channel)

    def sampler(values, rng):
        X = rows.iloc[np.asarray(values, dtype=int)].to_numpy()
        return _output_columns(channel, channel.sample(channel.fine_codes(X), rng))

    return sampler


def test_each_grid_passes_the_audit():
    priv = _privatizer(sensitive=SENSITIVE, mechanism="uRR")
    for seed, mech in enumerate(priv.mechanisms_):
        # Seeded: the audit's bound is a 95 % statement, so under fresh
        # noise a correct grid fails it now and then (about 1 % of runs).
        mech.set_params(random_state=seed)
        result = audit_mechanism(mech, n_samples=20_000, random_state=0)
        assert result.passed, result


@pytest.mark.parametrize("actual, passes", [(1.0, True), (3.0, False)])
def test_the_audit_of_rows_that_differ_in_sensitive_values(actual, passes):
    # Rows that differ only in column a, both in a's sensitive range: every
    # event stays within e^eps both ways. A privatizer drawing at a larger
    # budget than claimed is caught.
    priv = RangeQueryPrivatizer(
        actual,
        bounds=BOUNDS,
        granularity=(4, 2),
        sensitive_ranges={"a": [(5.0, 10.0)], "b": [(0.6, 1.0)]},
        mechanism="uRR",
        random_state=0,
    ).fit()
    rows = priv.channel_._rows()  # (a bin, b bin); a's bins 2 and 3 are sensitive
    pairs = [
        (i, j)
        for i in range(len(rows))
        for j in range(len(rows))
        if i < j and rows[i, 0] >= 2 and rows[j, 0] >= 2 and rows[i, 1] == rows[j, 1]
    ]
    result = audit_mechanism(
        _row_sampler(priv),
        pairs=pairs[:3],
        n_samples=40_000,
        sensitive=lambda x: True,
        epsilon=1.0,
        random_state=0,
    )
    assert result.passed is passes, result


# ------------------------------------------------------------------ the assignment
@pytest.mark.parametrize("method", ["hdg", "tdg"])
def test_the_assignment_is_uniform_and_independent_of_the_rows(method):
    bounds = {c: (0.0, 1.0) for c in "abcd"}
    priv = RangeQueryPrivatizer(
        1.0,
        bounds=bounds,
        method=method,
        granularity=(4, 2) if method == "hdg" else 2,
        random_state=0,
    ).fit()
    n_grids = priv.channel_.n_grids
    assert n_grids == (10 if method == "hdg" else 6)
    n = 60_000
    zeros = pd.DataFrame(np.zeros((n, 4)), columns=list(bounds))
    ones = pd.DataFrame(np.ones((n, 4)), columns=list(bounds))
    a = np.asarray(priv.transform(zeros))[:, 0]
    counts = np.bincount(a, minlength=n_grids)
    assert chi_square_pvalue(counts, np.full(n_grids, 1 / n_grids)) > 1e-4
    # With a seed, the assignment's stream never reads the data.
    again = clone(priv).fit()
    assert np.array_equal(a, np.asarray(again.transform(ones))[:, 0])
    assert not np.array_equal(priv.transform(zeros), again.transform(ones))


def test_a_wrong_assignment_fails_the_chi_square():
    p = np.full(10, 0.1)
    p[0], p[1] = 0.12, 0.08
    counts = np.bincount(np.random.default_rng(0).choice(10, 60_000, p=p), minlength=10)
    assert chi_square_pvalue(counts, np.full(10, 0.1)) < 1e-6


# ------------------------------------------------------------------ randomness
def _table(n=500, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"a": rng.uniform(0, 10, n), "b": rng.uniform(-1, 1, n)})


def test_none_draws_fresh_entropy_and_stores_nothing():
    X = _table()
    priv = _privatizer()
    first, second = np.asarray(priv.transform(X)), np.asarray(priv.transform(X))
    assert not np.array_equal(first, second)
    assert "_transform_calls" not in priv.__dict__
    copy = pickle.loads(pickle.dumps(priv))
    assert not np.array_equal(
        np.asarray(copy.transform(X)), np.asarray(clone(priv).fit().transform(X))
    )
    assert "random" not in json.dumps(priv.spec())


def test_seeds_reproduce_and_calls_differ():
    X = _table()
    a = _privatizer(random_state=3)
    b = _privatizer(random_state=3)
    first = np.asarray(a.transform(X))
    assert np.array_equal(first, np.asarray(b.transform(X)))
    assert not np.array_equal(first, np.asarray(a.transform(X)))


def test_secure_random_state():
    priv = _privatizer(random_state="secure")
    assert np.asarray(priv.transform(_table())).shape[0] == 500


# ------------------------------------------------------------------ inputs and errors
def test_bounds_auto_learns_and_warns():
    X = _table()
    with pytest.warns(PrivacyLeakWarning, match="learns the ranges"):
        priv = RangeQueryPrivatizer(1.0, granularity=(4, 2), random_state=0).fit(X)
    assert priv.columns_ == ["a", "b"]
    assert priv.bounds_["a"] == (X["a"].min(), X["a"].max())


def test_values_outside_the_bounds_are_clipped_with_a_count():
    priv = _privatizer()
    X = pd.DataFrame({"a": [-5.0, 3.0, 12.0, 20.0], "b": [0.0, 0.0, 0.0, 0.0]})
    with pytest.warns(ClippingWarning, match="3 of 4 values of column a"):
        priv.transform(X)
    assert X["a"].tolist() == [-5.0, 3.0, 12.0, 20.0]  # the input is not modified


def test_arrays_are_read_by_position_and_frames_by_name():
    priv = _privatizer(random_state=0)
    X = np.array([[1.0, 0.5], [9.0, -0.5]])
    reports = priv.transform(X)
    assert reports.shape == (2, 2) and reports.channel == priv.channel_
    frame = pd.DataFrame({"b": [0.5, -0.5], "extra": ["x", "y"], "a": [1.0, 9.0]})
    assert np.asarray(priv.transform(frame)).shape == (2, 2)


SECRET = 123456.789


def test_errors_never_quote_a_value():
    priv = _privatizer()
    with pytest.raises(ValueError) as info:
        priv.transform(pd.DataFrame({"a": [SECRET, np.nan], "b": [0.0, 0.0]}))
    assert str(SECRET) not in str(info.value) and "1 missing" in str(info.value)
    with pytest.raises(ValueError) as info:
        priv.transform(pd.DataFrame({"a": [SECRET, np.inf], "b": [0.0, 0.0]}))
    assert str(SECRET) not in str(info.value)
    with pytest.warns(ClippingWarning) as caught:
        priv.transform(pd.DataFrame({"a": [SECRET], "b": [0.0]}))
    assert all(str(SECRET) not in str(w.message) for w in caught)
    with pytest.raises(ValueError) as info:
        RangeQueryPrivatizer(
            1.0, bounds=BOUNDS, granularity=(4, 2), sensitive_ranges={"a": [(SECRET, SECRET)]}
        ).fit()
    assert str(SECRET) not in str(info.value) and "outside" in str(info.value)
    with pytest.raises(TypeError):
        priv.transform(pd.DataFrame({"a": ["text", "more"], "b": [0.0, 0.0]}))


@pytest.mark.parametrize(
    "params, error, message",
    [
        ({"bounds": {"a": (1, 1)}}, ValueError, "not a range"),
        ({"bounds": {"a": (0, 1)}, "sensitive_ranges": {"z": [(0, 1)]}}, ValueError, "not"),
        ({"bounds": {"a": (0, 1)}, "sensitive_ranges": {}}, ValueError, "plain LDP"),
        ({"bounds": {"a": (0, 1)}, "sensitive_ranges": {"a": "low"}}, ValueError, "pairs"),
        ({"bounds": {"a": (0, 1)}, "method": "grid"}, ValueError, "method"),
        ({"bounds": {"a": (0, 1)}, "epsilon": -1}, ValueError, "epsilon"),
    ],
)
def test_bad_parameters_say_what_is_wrong(params, error, message):
    params = {"granularity": 4, **params}
    with pytest.raises(error, match=message):
        RangeQueryPrivatizer(**params).fit()


def test_a_single_sensitive_pair_is_one_range():
    priv = RangeQueryPrivatizer(
        1.0, bounds={"a": (0, 10)}, granularity=5, sensitive_ranges={"a": (8, 12)}
    ).fit()
    assert priv.sensitive_ranges_ == {"a": ((8.0, 10.0),)}  # clipped to the bounds
    assert priv.channel_.cell_sensitive(0).tolist() == [False, False, False, False, True]


def test_pipeline_and_budget():
    from sklearn.pipeline import make_pipeline

    X = _table(20_000, seed=2)
    pipe = make_pipeline(
        RangeQueryPrivatizer(2.0, bounds=BOUNDS, granularity=(8, 4), random_state=0),
        RangeQueryEstimator(),
    ).fit(X)
    est = pipe[-1]
    assert abs(est.query({"a": (0, 5)}) - 0.5) < 0.05
    pipe.set_params(rangequeryprivatizer__epsilon=1.0).fit(X)
    assert pipe[-1].channel_.epsilon == 1.0
    assert pipe[0].epsilon_spent_ == 1.0
    from sklearn_uldp.privacy import BudgetAccountant

    accountant = BudgetAccountant(total=2.0)
    accountant.spend(pipe[0])
    assert accountant.remaining == pytest.approx(1.0)


def test_no_warning_on_a_clean_run():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        priv = _privatizer(random_state=0)
        RangeQueryEstimator().fit(priv.transform(_table(2_000)))


def test_channel_rejects_bins_outside_the_grid():
    channel = _privatizer().channel_
    with pytest.raises(ValueError, match="0..3"):
        channel.sample(np.array([[0, 4]]), np.random.default_rng(0))
    assert isinstance(channel, RangeQueryChannel)


def test_the_cells_of_the_sampler_are_the_binned_columns_cells():
    # The sampler computes each grid's cells from the bins directly; the exact
    # channel reads them through the marginal channel over binned columns.
    rng = np.random.default_rng(0)
    bounds = {"a": (0, 1), "b": (0, 2), "c": (0, 3)}
    for method, granularity in (("hdg", (12, 4)), ("tdg", 5)):
        channel = (
            RangeQueryPrivatizer(1.0, bounds=bounds, method=method, granularity=granularity)
            .fit()
            .channel_
        )
        fine = rng.integers(0, channel.fine_bins, size=(1_000, 3))
        columns = [fine[:, j] for j in range(3)]
        for j in range(channel.n_grids):
            assert np.array_equal(
                channel.grid_cells(j, columns),
                channel.grid_channel.cell_codes(j, channel.virtual_codes(fine)),
            )
