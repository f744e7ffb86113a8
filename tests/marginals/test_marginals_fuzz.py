"""Marginal release as an outsider uses it: generated parameters, tables, reports and specs.

Every outcome must be a result or a clear error (ValueError, TypeError,
KeyError with a message; InvalidSpecError and ReportMismatchError are
ValueErrors): never an IndexError, an AttributeError or a numpy error from
deep inside, and no message may quote a user's value. Plus the interaction
shrinkage's properties on generated tables.
"""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sklearn_uldp.exceptions import (
    InvalidSpecError,
    PrivacyLeakWarning,
    UninformativeEstimateWarning,
)
from sklearn_uldp.marginals import MarginalEstimator, MarginalPrivatizer
from sklearn_uldp.marginals._consistency import no_interaction, shrink_interactions
from sklearn_uldp.mechanisms import Channel

SETTINGS = settings(
    max_examples=60,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)

CLEAR = (ValueError, TypeError, KeyError)
SECRET = "zz-SECRET-zz"
CATS = {"a": [0, 1, 2], "b": ["x", "y"], "c": [True, False]}


def _clear(exc):
    """A clear error: one of the types above, with a message, quoting no secret."""
    assert isinstance(exc, CLEAR), f"{type(exc).__name__}: {exc}"
    message = str(exc)
    assert message.strip(" '\""), f"{type(exc).__name__} without a message"
    assert SECRET not in message, message


values = st.one_of(
    st.integers(-3, 4),
    st.sampled_from(["x", "y", "z", SECRET, "", None]),
    st.booleans(),
    st.floats(allow_nan=True, allow_infinity=True),
)


@st.composite
def tables(draw):
    n = draw(st.integers(1, 12))
    columns = draw(st.sets(st.sampled_from(["a", "b", "c", "d"]), min_size=1, max_size=4))
    frame = {}
    for c in sorted(columns):
        kind = draw(st.sampled_from(["domain", "any", "category"]))
        if kind == "domain" and c in CATS:
            frame[c] = draw(st.lists(st.sampled_from(CATS[c]), min_size=n, max_size=n))
        else:
            frame[c] = draw(st.lists(values, min_size=n, max_size=n))
        if kind == "category":
            frame[c] = pd.Series(frame[c], dtype=object).astype("category")
    return pd.DataFrame(frame)


parameters = st.fixed_dictionaries(
    {},
    optional={
        "epsilon": st.one_of(
            st.floats(allow_nan=True, allow_infinity=True), st.integers(-2, 800), st.just("1")
        ),
        "marginal_size": st.one_of(st.integers(-1, 5), st.just("auto"), st.just(1.5)),
        "marginals": st.one_of(
            st.none(),
            st.lists(
                st.lists(st.sampled_from(["a", "b", "c", "z", SECRET]), max_size=3).map(tuple),
                max_size=3,
            ),
            st.just("ab"),
        ),
        "mechanism": st.sampled_from(["auto", "RR", "OUE", "uRR", "uBD", "CMS", "nope"]),
        "sensitive": st.one_of(
            st.none(),
            st.dictionaries(
                st.sampled_from(["a", "b", "c", "z"]),
                st.one_of(
                    st.lists(st.sampled_from([0, 1, 2, "x", "y", True, SECRET]), max_size=3),
                    st.just([True, False, False]),
                ),
                max_size=3,
            ),
        ),
        "n_users": st.one_of(st.none(), st.integers(-1, 10**6)),
    },
)


@SETTINGS
@given(table=tables(), params=parameters, declared=st.booleans())
def test_privatizer_gives_reports_or_a_clear_error(table, params, declared):
    priv = MarginalPrivatizer(
        random_state=0, **params, categories=dict(CATS) if declared else "auto"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        try:
            reports = priv.fit_transform(table)
        except Exception as exc:  # noqa: BLE001 - classified here
            _clear(exc)
            return
    assert len(reports) == len(table)
    assert priv.channel_.encode_reports(reports).n == len(table)
    assert math.isfinite(priv.epsilon_spent_)


@st.composite
def tampered(draw):
    priv = MarginalPrivatizer(1.0, categories=CATS, mechanism=draw(st.sampled_from(["RR", "OUE"])))
    priv.set_params(random_state=0).fit()
    table = pd.DataFrame({"a": [0, 1, 2, 0], "b": ["x", "y", "x", "y"], "c": [True, False] * 2})
    reports = np.asarray(priv.transform(table)).copy()
    how = draw(st.sampled_from(["cell", "float", "shape", "object", "frame"]))
    if how == "cell":
        i = draw(st.integers(0, reports.shape[0] - 1))
        j = draw(st.integers(0, reports.shape[1] - 1))
        reports[i, j] = draw(st.integers(-(2**63), 2**63 - 1))
        return priv, reports
    if how == "float":
        return priv, reports + draw(st.floats(allow_nan=True, allow_infinity=True))
    if how == "shape":
        width = draw(st.integers(0, 4))
        return priv, np.zeros((draw(st.integers(0, 3)), width), dtype=np.int64)
    if how == "object":
        out = reports.astype(object)
        out[0, 1] = draw(values)
        return priv, out
    frame = pd.DataFrame(reports, columns=priv.get_feature_names_out())
    return priv, frame.rename(columns={"report": draw(st.sampled_from(["report", "r", SECRET]))})


@SETTINGS
@given(case=tampered())
def test_estimator_takes_reports_or_gives_a_clear_error(case):
    priv, reports = case
    try:
        with warnings.catch_warnings():
            # a few reports of tampered values: nothing stands out, as it says
            warnings.simplefilter("ignore", UninformativeEstimateWarning)
            est = MarginalEstimator(mechanism=priv.channel_).fit(reports)
    except Exception as exc:  # noqa: BLE001 - classified here
        _clear(exc)
        return
    assert np.isclose(est.marginal(["a", "b"]).sum(), 1.0)


def _mutations():
    keys = ["columns", "domains", "marginals", "channels", "sensitive", "epsilon", "mechanism"]
    junk = st.one_of(
        st.none(),
        st.integers(-3, 3),
        st.text(max_size=3),
        st.lists(st.integers(0, 3), max_size=3),
        st.lists(st.lists(st.sampled_from(["a", "b", 0, 1, True]), max_size=3), max_size=3),
        st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
    )
    return st.tuples(st.sampled_from(keys), st.one_of(junk, st.just("__drop__")))


@SETTINGS
@given(mutation=_mutations(), sensitive=st.booleans())
def test_tampered_specs_are_refused_clearly(mutation, sensitive):
    priv = MarginalPrivatizer(
        1.0, categories=CATS, sensitive={"a": [2], "b": ["y"]} if sensitive else None
    ).fit()
    spec = json.loads(priv.channel_.to_json())
    key, value = mutation
    if value == "__drop__":
        spec.pop(key, None)
    else:
        spec[key] = value
    try:
        channel = Channel.from_dict(spec)
    except InvalidSpecError as exc:
        _clear(exc)
        return
    # Accepted: then it is a valid spec, equal to its own round trip.
    assert Channel.from_json(channel.to_json()) == channel


# ------------------------------------------------------------------ shrinkage
arrays = st.integers(2, 4).flatmap(
    lambda k: st.lists(st.floats(0.0, 1.0), min_size=k * 3, max_size=k * 3).map(
        lambda v, k=k: np.asarray(v).reshape(k, 3)
    )
)


@SETTINGS
@given(table=arrays, noise=st.floats(0.0, 1.0))
def test_shrinkage_keeps_margins_and_moves_towards_no_interaction(table, noise):
    if table.sum() <= 0:
        return
    table = table / table.sum()
    (shrunk,), (lam,) = shrink_interactions([table], [noise])
    base = no_interaction(table)
    assert 0.0 <= lam <= 1.0
    assert np.allclose(shrunk.sum(axis=0), table.sum(axis=0), atol=1e-12)
    assert np.allclose(shrunk.sum(axis=1), table.sum(axis=1), atol=1e-12)
    assert shrunk.min() >= -1e-15
    assert np.allclose(shrunk, base + lam * (table - base))
    if noise == 0:
        assert lam == 1.0 or np.allclose(table, base)


def test_three_way_no_interaction_keeps_the_pairs():
    rng = np.random.default_rng(0)
    table = rng.dirichlet(np.ones(24)).reshape(2, 3, 4)
    base = no_interaction(table)
    for axis in range(3):
        assert np.allclose(base.sum(axis=axis), table.sum(axis=axis), atol=1e-9)


def test_shrinkage_helps_on_weak_interactions_and_can_be_turned_off():
    rng = np.random.default_rng(0)
    n = 40_000
    table = pd.DataFrame(
        {
            "a": rng.integers(0, 4, n),
            "b": rng.integers(0, 4, n),
            "c": rng.integers(0, 4, n),
        }
    )
    table["b"] = np.where(rng.random(n) < 0.1, table["a"], table["b"])  # weak dependence
    cats = {c: [0, 1, 2, 3] for c in "abc"}
    errors = {True: 0.0, False: 0.0}
    for seed in range(4):
        reports = MarginalPrivatizer(0.5, categories=cats, random_state=seed).fit_transform(table)
        for shrink in (True, False):
            est = MarginalEstimator(interaction_shrinkage=shrink).fit(reports)
            for pair in (["a", "b"], ["a", "c"], ["b", "c"]):
                truth = table.groupby(pair).size() / n
                errors[shrink] += (
                    0.5 * np.abs(est.marginal(pair).to_numpy() - truth.to_numpy()).sum()
                )
            if not shrink:
                assert all(f == 1.0 for f in est.interaction_factors_.values())
    assert errors[True] < 0.9 * errors[False], errors


@pytest.mark.parametrize("shrink", [True, False])
def test_shrinkage_keeps_consistency(shrink):
    rng = np.random.default_rng(1)
    table = pd.DataFrame({c: rng.integers(0, 3, 20_000) for c in "abc"})
    cats = {c: [0, 1, 2] for c in "abc"}
    reports = MarginalPrivatizer(1.0, categories=cats, random_state=0).fit_transform(table)
    est = MarginalEstimator(interaction_shrinkage=shrink).fit(reports)
    result = est._result()
    margins = [t.sum(axis=1) for t in result["tables"][:2]]  # a, from (a,b) and (a,c)
    assert np.allclose(margins[0], margins[1], atol=1e-9)
