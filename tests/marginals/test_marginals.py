"""Marginal release, the users' side: the spec, the exact channel, the sampler, randomness.

The guarantees are checked on the exact channel over rows
(``MarginalChannel.realized_matrix``), the sampler against that channel
with chi-square tests a wrong sampler fails, and the assignment of
marginals for independence from the data.
"""

from __future__ import annotations

import json
import pickle

import numpy as np
import pandas as pd
import pytest
from _chisquare import chi_square_pvalue
from sklearn.base import clone

from sklearn_uldp.exceptions import InvalidSpecError, PrivacyLeakWarning, ReportMismatchError
from sklearn_uldp.marginals import (
    MarginalChannel,
    MarginalEstimator,
    MarginalPrivatizer,
    check_marginal_uldp,
    choose_marginals,
    choose_oracle,
    marginal_privatizer_from,
)
from sklearn_uldp.mechanisms import Channel, get_channel
from sklearn_uldp.privacy import audit_mechanism, check_ldp, check_uldp

CATS = {"a": [0, 1, 2], "b": ["x", "y"], "c": [0, 1]}
SENSITIVE = {"a": [2], "b": ["y"], "c": [1]}
LDP_ORACLES = ["RR", "OUE", "OLH", "SS", "HR", "RAPPOR"]
ULDP_ORACLES = ["uRR", "uOUE", "uHR", "uBD", "uSS", "uRAP"]


def _rows(channel):
    """Every row of the product domain, as a DataFrame of the columns' values."""
    rows = channel._rows()
    return pd.DataFrame(
        {
            c: np.asarray(d, dtype=object)[rows[:, j]]
            for j, (c, d) in enumerate(zip(channel.columns, channel.domains, strict=True))
        }
    )


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


# ------------------------------------------------------------------ the spec
@pytest.mark.parametrize("sensitive", [None, SENSITIVE])
def test_spec_round_trips_through_json(sensitive):
    priv = MarginalPrivatizer(1.0, categories=CATS, sensitive=sensitive).fit()
    spec = priv.spec()
    assert spec["mechanism"] == "marginals"
    text = json.dumps(spec)
    again = Channel.from_json(text)
    assert again == priv.channel_ and hash(again) == hash(priv.channel_)
    assert again.to_dict() == spec
    # reports carry it, also through pandas attrs and pickling
    X = pd.DataFrame({"a": [0, 1, 2, 0], "b": ["x", "y", "x", "x"], "c": [0, 1, 1, 0]})
    frame = priv.transform(X)
    assert get_channel(frame) == priv.channel_
    array = priv.set_output(transform="default").transform(X)
    assert pickle.loads(pickle.dumps(array)).channel == priv.channel_


def test_spec_validates_against_the_schema():
    jsonschema = pytest.importorskip("jsonschema")
    from sklearn_uldp.mechanisms import spec_json_schema

    schema = spec_json_schema()
    assert "marginals" in schema["$defs"]
    spec = MarginalPrivatizer(1.0, categories=CATS, sensitive=SENSITIVE).fit().spec()
    assert jsonschema.Draft202012Validator(schema).is_valid(spec)
    bad = dict(spec, columns="a")
    assert not jsonschema.Draft202012Validator(schema).is_valid(bad)


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
        (("columns",), ["a", "a", "c"], "distinct"),
        (("domains",), [[0, 1, 2], ["x"], [0, 1]], "invalid"),
        (("marginals",), [["b", "a"], ["a", "c"], ["b", "c"]], "order"),
        (("marginals",), [["a", "b"], ["a", "b"], ["b", "c"]], "distinct"),
        (("marginals",), [["a", "z"], ["a", "c"], ["b", "c"]], "not columns"),
        (("channels", 0, "epsilon"), 2.0, "same epsilon"),
        (("channels", 0, "categories"), [0, 1, 2, 3, 4, 6], "codes 0..5"),
        (("sensitive", 0), [False, False, False], "no value"),
        (("sensitive", 0), [True, False, False], "inconsistent"),
        (("channels",), [], "one channel per marginal"),
    ],
)
def test_tampered_specs_are_refused(path, value, message):
    spec = MarginalPrivatizer(1.0, categories=CATS, sensitive=SENSITIVE, mechanism="uRR").fit()
    with pytest.raises(InvalidSpecError, match=message):
        Channel.from_dict(_tamper(spec.spec(), path, value))


def test_a_composite_inside_a_composite_is_refused():
    inner = MarginalPrivatizer(1.0, categories={"a": [0, 1], "b": [0, 1]}).fit().spec()
    outer = MarginalPrivatizer(1.0, categories={"a": [0, 1], "b": [0, 1]}).fit().spec()
    outer["channels"] = [inner]
    with pytest.raises(InvalidSpecError, match="frequency oracle"):
        Channel.from_dict(outer)


def test_channels_differ_by_value():
    a = MarginalPrivatizer(1.0, categories=CATS).fit().channel_
    b = MarginalPrivatizer(2.0, categories=CATS).fit().channel_
    c = MarginalPrivatizer(1.0, categories=CATS, marginals=[("a", "b")]).fit().channel_
    assert a != b and a != c
    assert any("epsilon" in d for d in a.describe_difference(b))
    assert "marginals" in a.describe_difference(c)


# ------------------------------------------------------------------ the exact channel
@pytest.mark.parametrize("oracle", LDP_ORACLES)
def test_ldp_reports_are_epsilon_ldp_on_the_exact_channel(oracle):
    priv = MarginalPrivatizer(1.0, categories=CATS, mechanism=oracle).fit()
    channel = priv.channel_
    Q = channel.matrix()
    assert Q.shape[0] == 12 and np.allclose(Q.sum(axis=1), 1.0)
    check = check_ldp(channel)
    assert check.satisfied
    assert check.worst_log_ratio == pytest.approx(1.0, abs=1e-9)
    # The blocks are each marginal's channel, divided by the number of marginals.
    rows = channel._rows()
    start = 0
    for j, sub in enumerate(channel.channels):
        block = Q[:, start : start + sub.n_outputs]
        assert np.allclose(block, sub.matrix()[channel.cell_codes(j, rows)] / 3)
        start += sub.n_outputs
    assert check_marginal_uldp(priv).definition == "LDP"


@pytest.mark.parametrize("oracle", ["auto", *ULDP_ORACLES])
def test_utility_optimized_reports_keep_the_row_level_guarantee(oracle):
    priv = MarginalPrivatizer(1.0, categories=CATS, sensitive=SENSITIVE, mechanism=oracle).fit()
    channel = priv.channel_
    for sub in channel.channels:
        assert check_uldp(sub)
    check = check_marginal_uldp(priv)
    assert check.satisfied, check.reasons
    assert check.worst_log_ratio == pytest.approx(1.0, abs=1e-9)
    # Invertible outputs exist (non-sensitive cells pass), so plain LDP fails:
    assert not check_ldp(channel).satisfied


def test_the_row_level_check_catches_a_leak(monkeypatch):
    priv = MarginalPrivatizer(1.0, categories=CATS, sensitive=SENSITIVE, mechanism="uRR").fit()
    channel = priv.channel_
    sub = channel.channels[0]  # uRR over (a, b): cell 5 = (2, "y") is sensitive
    leaky = sub.realized_matrix().copy()
    invertible = np.flatnonzero(~np.asarray(sub.protected_outputs(), bool))[0]
    leaky[5, :] *= 0.9
    leaky[5, invertible] += 0.1  # a sensitive cell sometimes sent in the clear
    monkeypatch.setattr(sub, "realized_matrix", lambda: leaky)
    check = check_marginal_uldp(priv)
    assert not check.satisfied
    assert any("unprotected output" in r for r in check.reasons)


def test_the_row_level_check_catches_a_budget_overrun(monkeypatch):
    priv = MarginalPrivatizer(1.0, categories=CATS, sensitive=SENSITIVE, mechanism="uRR").fit()
    sub = priv.channel_.channels[0]
    loud = sub.realized_matrix().copy()
    protected = np.flatnonzero(np.asarray(sub.protected_outputs(), bool))
    loud[5, protected] = loud[5, protected] * np.linspace(0.5, 1.5, protected.size)
    loud[5] /= loud[5].sum()
    monkeypatch.setattr(sub, "realized_matrix", lambda: loud)
    assert not check_marginal_uldp(priv).satisfied


@pytest.mark.parametrize("oracle", ["RR", "OUE", "OLH", "SS", "uRR", "uOUE", "uBD"])
def test_the_sampler_draws_the_exact_channel(oracle):
    sensitive = SENSITIVE if oracle.startswith("u") else None
    priv = MarginalPrivatizer(
        1.0, categories=CATS, sensitive=sensitive, mechanism=oracle, random_state=0
    ).fit()
    channel = priv.channel_
    Q = channel.realized_matrix()
    rows = _rows(channel)
    n = 30_000
    for i in (0, 5, 11):  # a non-sensitive row, rows with sensitive parts
        X = rows.iloc[np.repeat(i, n)].reset_index(drop=True)
        out = _output_columns(channel, priv.transform(X))
        counts = np.bincount(out, minlength=Q.shape[1])
        assert chi_square_pvalue(counts, Q[i]) > 1e-4


def test_a_wrong_sampler_fails_the_chi_square():
    # The test above would fail for a sampler at another budget.
    priv = MarginalPrivatizer(1.0, categories=CATS, mechanism="RR", random_state=0).fit()
    other = MarginalPrivatizer(1.5, categories=CATS, mechanism="RR", random_state=0).fit()
    rows = _rows(priv.channel_)
    X = rows.iloc[np.repeat(3, 30_000)].reset_index(drop=True)
    out = _output_columns(other.channel_, other.transform(X))
    counts = np.bincount(out, minlength=priv.channel_.n_outputs)
    assert chi_square_pvalue(counts, priv.channel_.matrix()[3]) < 1e-6


def _row_sampler(priv):
    """The privatizer as a callable over row indices (for the audit)."""
    channel = priv.channel_
    rows = _rows(channel)

    def sampler(values, rng):
        X = rows.iloc[np.asarray(values, dtype=int)].reset_index(drop=True)
        return _output_columns(channel, channel.sample(priv._codes(X), rng))

    return sampler


def test_each_marginal_passes_the_audit():
    priv = MarginalPrivatizer(1.0, categories=CATS, sensitive=SENSITIVE, mechanism="uRR").fit()
    for mech in priv.mechanisms_:
        result = audit_mechanism(mech, n_samples=20_000, random_state=0)
        assert result.passed, result


@pytest.mark.parametrize("actual, passes", [(1.0, True), (3.0, False)])
def test_the_audit_of_rows_that_differ_in_sensitive_values(actual, passes):
    # Rows that differ only in column a, between two sensitive values: every
    # event must stay within e^eps, both ways (the row-level guarantee). A
    # privatizer drawing at a larger budget than claimed is caught.
    sensitive = {"a": [1, 2], "b": ["y"], "c": [1]}
    priv = MarginalPrivatizer(
        actual, categories=CATS, sensitive=sensitive, mechanism="uRR", random_state=0
    ).fit()
    rows = _rows(priv.channel_)
    pairs = [
        (i, j)
        for i in range(len(rows))
        for j in range(len(rows))
        if i < j
        and rows.iloc[i]["a"] in (1, 2)
        and rows.iloc[j]["a"] in (1, 2)
        and (rows.iloc[i][["b", "c"]] == rows.iloc[j][["b", "c"]]).all()
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
def test_the_assignment_is_uniform_and_independent_of_the_rows():
    cats = {"a": [0, 1], "b": [0, 1], "c": [0, 1], "d": [0, 1]}
    priv = MarginalPrivatizer(1.0, categories=cats, random_state=0).fit()
    n = 60_000
    zeros = pd.DataFrame(np.zeros((n, 4), dtype=int), columns=list(cats))
    ones = pd.DataFrame(np.ones((n, 4), dtype=int), columns=list(cats))
    a = np.asarray(priv.transform(zeros))[:, 0]
    counts = np.bincount(a, minlength=6)
    assert chi_square_pvalue(counts, np.full(6, 1 / 6)) > 1e-4
    # With a seed, the stream of the assignment never reads the data: the
    # same call on other rows draws the same marginals.
    again = MarginalPrivatizer(1.0, categories=cats, random_state=0).fit()
    b = np.asarray(again.transform(ones))[:, 0]
    assert np.array_equal(a, b)
    # And the oracles' noise does read its own stream: reports differ.
    assert not np.array_equal(priv.transform(zeros), again.transform(ones))


def test_a_wrong_assignment_fails_the_chi_square():
    counts = np.bincount(
        np.random.default_rng(0).choice(6, 60_000, p=[0.2, 0.16, 0.16, 0.16, 0.16, 0.16])
    )
    assert chi_square_pvalue(counts, np.full(6, 1 / 6)) < 1e-6


# ------------------------------------------------------------------ randomness
def _table(n=500, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {"a": rng.integers(0, 3, n), "b": rng.choice(["x", "y"], n), "c": rng.integers(0, 2, n)}
    )


def test_none_draws_fresh_entropy_and_stores_nothing():
    X = _table()
    priv = MarginalPrivatizer(1.0, categories=CATS).fit()
    first, second = np.asarray(priv.transform(X)), np.asarray(priv.transform(X))
    assert not np.array_equal(first, second)
    state = pickle.dumps(priv)
    assert "_transform_calls" not in priv.__dict__
    copy = pickle.loads(state)
    assert not np.array_equal(
        np.asarray(copy.transform(X)), np.asarray(clone(priv).fit().transform(X))
    )


def test_seeds_reproduce_and_calls_differ():
    X = _table()
    a = MarginalPrivatizer(1.0, categories=CATS, random_state=3).fit()
    b = MarginalPrivatizer(1.0, categories=CATS, random_state=3).fit()
    first = np.asarray(a.transform(X))
    assert np.array_equal(first, np.asarray(b.transform(X)))
    assert not np.array_equal(first, np.asarray(a.transform(X)))


def test_secure_random_state():
    X = _table()
    priv = MarginalPrivatizer(1.0, categories=CATS, random_state="secure").fit()
    assert np.asarray(priv.transform(X)).shape == (500, 2)


# ------------------------------------------------------------------ design
def test_choose_oracle_picks_by_variance():
    assert choose_oracle(4, 1.0)[0] == "RR"
    assert choose_oracle(200, 1.0)[0] in ("SS", "OUE")
    mask = np.zeros(64, dtype=bool)
    mask[:2] = True
    assert choose_oracle(64, 1.0, sensitive=mask)[0].startswith("u")
    with pytest.raises(ValueError, match="one of"):
        choose_oracle(4, 1.0, mechanism="nope")


def test_a_utility_optimized_name_on_an_all_sensitive_marginal_is_its_ldp_twin():
    # c is left out of sensitive (every value sensitive): so is every cell of
    # (a, c) and (b, c), a cell being sensitive when any part is.
    priv = MarginalPrivatizer(
        1.0, categories=CATS, sensitive={"a": [2], "b": ["y"]}, mechanism="uOUE"
    ).fit()
    assert priv.oracles_ == ["uOUE", "OUE", "OUE"]


def test_auto_marginal_size_follows_the_error_analysis():
    binary = {c: 2 for c in "abcde"}
    marginals, table = choose_marginals(binary, n=100_000, epsilon=1.0)
    assert int(table.index[0]) == 3 and len(marginals) == 10
    assert table["predicted_tv"].iloc[0] == table["predicted_tv"].min()
    wide = {"a": 3, "b": 16, "c": 4, "d": 4, "e": 3}
    assert int(choose_marginals(wide, n=300_000, epsilon=1.0)[1].index[0]) == 2
    priv = MarginalPrivatizer(1.0, marginal_size="auto", categories={c: [0, 1] for c in "abcde"})
    with pytest.raises(ValueError, match="n_users"):
        priv.fit()
    priv.set_params(n_users=100_000).fit()
    assert len(priv.marginals_[0]) == 3 and priv.design_ is not None


def test_explicit_marginals_of_several_sizes():
    priv = MarginalPrivatizer(
        1.0, categories=CATS, marginals=[("b", "a"), ("c",)], random_state=0
    ).fit()
    assert priv.marginals_ == [("a", "b"), ("c",)]
    assert priv.channel_.cells == (6, 2)
    with pytest.raises(ValueError, match="twice"):
        MarginalPrivatizer(1.0, categories=CATS, marginals=[("a", "b"), ("b", "a")]).fit()
    with pytest.raises(ValueError, match="not among"):
        MarginalPrivatizer(1.0, categories=CATS, marginals=[("a", "z")]).fit()


# ------------------------------------------------------------------ inputs and errors
def test_categories_auto_learns_and_warns():
    X = _table()
    with pytest.warns(PrivacyLeakWarning, match="a"):
        priv = MarginalPrivatizer(1.0, random_state=0).fit(X)
    assert priv.columns_ == ["a", "b", "c"]
    assert priv.categories_["b"].tolist() == ["x", "y"]
    declared = X.astype("category")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        MarginalPrivatizer(1.0).fit(declared)


def test_arrays_are_read_by_position():
    priv = MarginalPrivatizer(1.0, categories={"a": [0, 1], "b": [0, 1, 2]}, random_state=0).fit()
    X = np.array([[0, 2], [1, 0], [1, 1]])
    reports = priv.transform(X)
    assert reports.shape == (3, 2) and reports.channel == priv.channel_


SECRET = "SECRET-VALUE-123"


def test_errors_never_quote_a_value():
    priv = MarginalPrivatizer(1.0, categories={"a": ["p", "q"], "b": [0, 1]}).fit()
    bad = pd.DataFrame({"a": ["p", SECRET], "b": [0, 1]})
    with pytest.raises(ValueError) as info:
        priv.transform(bad)
    assert SECRET not in str(info.value) and "'a'" in str(info.value)
    with pytest.raises(ValueError) as info:
        MarginalPrivatizer(
            1.0, categories={"a": ["p", "q"], "b": [0, 1]}, sensitive={"a": [SECRET]}
        ).fit()
    assert SECRET not in str(info.value)
    missing = pd.DataFrame({"a": ["p", None], "b": [0, 1]})
    with pytest.raises(ValueError, match="missing"):
        priv.transform(missing)


@pytest.mark.parametrize(
    "params, message",
    [
        ({"epsilon": 0.0}, "epsilon"),
        ({"epsilon": -1.0}, "epsilon"),
        ({"marginal_size": 0}, "marginal_size"),
        ({"marginal_size": 4}, "larger than"),
        ({"categories": {"a": "xy", "b": [0, 1]}}, "flat list"),
        ({"sensitive": {"z": [1]}}, "not privatized"),
        ({"sensitive": {"a": [0, 1, 2], "b": ["x", "y"], "c": [0, 1]}}, "plain LDP"),
        ({"mechanism": "CMS"}, "one of"),
    ],
)
def test_bad_parameters_say_what_is_wrong(params, message):
    base = {"epsilon": 1.0, "categories": CATS}
    with pytest.raises(ValueError, match=message):
        MarginalPrivatizer(**{**base, **params}).fit()


def test_a_sketch_template_is_refused():
    from sklearn_uldp import CountMeanSketch

    with pytest.raises(ValueError, match="cannot measure a marginal"):
        MarginalPrivatizer(1.0, categories=CATS, mechanism=CountMeanSketch(1.0)).fit()


def test_a_template_mechanism_is_cloned_per_marginal():
    from sklearn_uldp import OptimizedLocalHashing

    template = OptimizedLocalHashing(3.0, random_state=5)
    priv = MarginalPrivatizer(1.0, categories=CATS, mechanism=template).fit()
    assert priv.oracles_ == ["OptimizedLocalHashing"] * 3
    assert all(m.epsilon == 1.0 and m.random_state is None for m in priv.mechanisms_)
    assert template.epsilon == 3.0  # not modified


def test_foreign_reports_are_refused():
    priv = MarginalPrivatizer(1.0, categories=CATS, mechanism="RR", random_state=0).fit()
    channel = priv.channel_
    reports = np.asarray(priv.transform(_table()))
    for bad in (
        np.column_stack([reports[:, 0] + 3, reports[:, 1]]),  # no such marginal
        np.column_stack([reports[:, 0], reports[:, 1] + 100]),  # not an output
        reports.astype(float) + 0.5,
        reports[:, :1],
    ):
        with pytest.raises(ReportMismatchError):
            channel.encode_reports(bad)


def test_bits_reports_with_padding_set_are_refused():
    priv = MarginalPrivatizer(1.0, categories=CATS, mechanism="OUE", random_state=0).fit()
    reports = np.asarray(priv.transform(_table())).copy()
    reports[0, 1] |= 1 << 40  # past the marginal's cells
    with pytest.raises(ReportMismatchError, match="past"):
        priv.channel_.encode_reports(reports)


# ------------------------------------------------------------------ workflow
def test_pipeline_clone_and_set_params():
    from sklearn.pipeline import make_pipeline

    X = _table(5000)
    pipe = make_pipeline(
        MarginalPrivatizer(1.0, categories=CATS, random_state=0), MarginalEstimator()
    )
    pipe.fit(X)
    assert pipe[-1].channel_ == pipe[0].channel_
    pipe.set_params(marginalprivatizer__epsilon=2.0).fit(X)
    assert pipe[-1].channel_.epsilon == 2.0
    twin = clone(pipe)
    assert not hasattr(twin[0], "channel_")


def test_epsilon_spent_is_one_report():
    priv = MarginalPrivatizer(1.5, categories=CATS).fit()
    assert priv.epsilon_spent_ == 1.5
    assert list(priv.get_feature_names_out()) == ["marginal", "report"]


def test_from_a_dataframe_privatizer():
    from sklearn_uldp import RandomizedResponse, UtilityOptimizedRR
    from sklearn_uldp.compose import DataFramePrivatizer

    dfp = DataFramePrivatizer(
        {
            "a": UtilityOptimizedRR(1.0, sensitive=[2], categories=[0, 1, 2]),
            "b": RandomizedResponse(1.0, categories=["x", "y"]),
            "c": RandomizedResponse(1.0, categories=[0, 1]),
        },
        random_state=0,
    )
    priv = marginal_privatizer_from(dfp).fit()
    assert priv.marginals_ == [("a", "b"), ("a", "c"), ("b", "c")]
    assert priv.sensitive_["a"].tolist() == [False, False, True]
    assert priv.random_state == 0
    dfp.set_params(b=RandomizedResponse(2.0, categories=["x", "y"]))
    with pytest.raises(ValueError, match="same epsilon"):
        marginal_privatizer_from(dfp)


def test_partitions_privatize_with_their_own_streams():
    from sklearn_uldp.parallel import privatize_partitions

    priv = MarginalPrivatizer(1.0, categories=CATS, random_state=0).fit()
    parts = [_table(100, 0), _table(100, 1)]
    out = privatize_partitions(parts, priv, random_state=1)
    again = privatize_partitions(parts, priv, random_state=1)
    assert all(np.array_equal(a, b) for a, b in zip(out, again, strict=True))
    assert all(get_channel(o) == priv.channel_ for o in out)
    assert isinstance(priv.channel_, MarginalChannel)
