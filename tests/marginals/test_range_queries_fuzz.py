"""Range queries as an outsider uses them: generated parameters, tables, queries and specs.

Every outcome must be a result or a clear error (ValueError, TypeError,
KeyError with a message; InvalidSpecError and ReportMismatchError are
ValueErrors): never an IndexError, an AttributeError or a numpy error from
deep inside, and no message may quote a user's value. Plus the properties
that hold for every input: reports carry their spec, answers are fractions,
a value in a sensitive range lands in a sensitive cell.
"""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sklearn_uldp.exceptions import ClippingWarning, InvalidSpecError, PrivacyLeakWarning
from sklearn_uldp.marginals import RangeQueryEstimator, RangeQueryPrivatizer
from sklearn_uldp.mechanisms import Channel, get_channel

SETTINGS = settings(
    max_examples=50,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)

CLEAR = (ValueError, TypeError, KeyError)
SECRET = 987654.321
BOUNDS = {"a": (0.0, 10.0), "b": (-1.0, 1.0)}


def _clear(exc):
    """A clear error: one of the types above, with a message, quoting no secret."""
    assert isinstance(exc, CLEAR), f"{type(exc).__name__}: {exc}"
    message = str(exc)
    assert message.strip(" '\""), f"{type(exc).__name__} without a message"
    assert str(SECRET) not in message and "987654" not in message, message


numbers = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-20, 20),
    st.just(SECRET),
)
cells = st.one_of(numbers, st.sampled_from(["x", "", None, True]))


@st.composite
def tables(draw):
    n = draw(st.integers(1, 10))
    columns = draw(st.sets(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=3))
    frame = {}
    for c in sorted(columns):
        if draw(st.booleans()):
            frame[c] = draw(st.lists(st.floats(-2.0, 12.0), min_size=n, max_size=n))
        else:
            frame[c] = draw(st.lists(cells, min_size=n, max_size=n))
    return pd.DataFrame(frame)


ranges = st.one_of(
    st.lists(st.tuples(numbers, numbers), max_size=3),
    st.tuples(numbers, numbers),
    st.just("low"),
    st.none(),
)

parameters = st.fixed_dictionaries(
    {},
    optional={
        "epsilon": st.one_of(st.floats(allow_nan=True), st.integers(-2, 50), st.just("1")),
        "bounds": st.one_of(
            st.just("auto"),
            st.just(BOUNDS),
            st.dictionaries(
                st.sampled_from(["a", "b", "z", ""]),
                st.one_of(st.tuples(numbers, numbers), numbers, st.just("x")),
                max_size=3,
            ),
        ),
        "method": st.sampled_from(["hdg", "tdg", "grid", 3]),
        "granularity": st.one_of(
            st.just("auto"),
            st.integers(-1, 12),
            st.tuples(st.one_of(st.none(), st.integers(-1, 12)), st.integers(-1, 6)),
            st.just((4, 2, 1)),
        ),
        "sensitive_ranges": st.one_of(
            st.none(), st.dictionaries(st.sampled_from(["a", "b", "z"]), ranges, max_size=2)
        ),
        "mechanism": st.sampled_from(["auto", "RR", "OLH", "uRR", "nope"]),
    },
)


@SETTINGS
@given(table=tables(), params=parameters)
def test_privatizer_gives_reports_or_a_clear_error(table, params):
    params.setdefault("bounds", BOUNDS)
    params.setdefault("granularity", (4, 2))
    priv = RangeQueryPrivatizer(random_state=0, **params)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            warnings.simplefilter("ignore", ClippingWarning)
            reports = priv.fit_transform(table)
    except Exception as exc:  # noqa: BLE001 - classified here
        _clear(exc)
        return
    assert get_channel(reports) == priv.channel_
    assert len(reports) == len(table)
    est = RangeQueryEstimator().fit(reports)
    column = priv.columns_[0]
    try:
        answer = est.query({column: (None, None)})
    except ValueError as exc:  # a grid without a report (a handful of users)
        assert "no report" in str(exc)
        return
    assert math.isclose(answer, 1.0, abs_tol=1e-9)


queries = st.dictionaries(
    st.sampled_from(["a", "b", "z", 0]),
    st.one_of(
        st.tuples(st.one_of(numbers, st.none()), st.one_of(numbers, st.none())),
        numbers,
        st.text(max_size=2),
    ),
    max_size=3,
)

_FITTED = {}


def _fitted(method):
    if method not in _FITTED:
        rng = np.random.default_rng(0)
        X = pd.DataFrame({"a": rng.uniform(0, 10, 3_000), "b": rng.uniform(-1, 1, 3_000)})
        granularity = (4, 2) if method == "hdg" else 3
        priv = RangeQueryPrivatizer(
            1.0, bounds=BOUNDS, method=method, granularity=granularity, random_state=0
        )
        _FITTED[method] = RangeQueryEstimator().fit(priv.fit_transform(X))
    return _FITTED[method]


@SETTINGS
@given(query=queries, method=st.sampled_from(["hdg", "tdg"]), alpha=st.floats(-1, 2))
def test_queries_give_fractions_or_a_clear_error(query, method, alpha):
    est = _fitted(method)
    try:
        answer = est.query(query)
    except Exception as exc:  # noqa: BLE001 - classified here
        _clear(exc)
        return
    assert 0.0 <= answer <= 1.0
    try:
        low, high = est.confidence_interval(query, alpha=alpha)
    except Exception as exc:  # noqa: BLE001 - classified here
        _clear(exc)
        return
    assert 0.0 <= low <= high <= 1.0


def _mutations():
    keys = ["columns", "bounds", "method", "g1", "g2", "channels", "sensitive_ranges", "epsilon"]
    junk = st.one_of(
        st.none(),
        st.integers(-3, 9),
        st.text(max_size=3),
        st.lists(st.integers(0, 3), max_size=3),
        st.lists(st.lists(st.one_of(st.integers(-2, 12), st.none()), max_size=3), max_size=3),
        st.lists(
            st.one_of(st.none(), st.lists(st.lists(st.floats(-5, 15), max_size=3), max_size=2)),
            max_size=3,
        ),
        st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
    )
    return st.tuples(st.sampled_from(keys), st.one_of(junk, st.just("__drop__")))


@SETTINGS
@given(mutation=_mutations(), sensitive=st.booleans(), method=st.sampled_from(["hdg", "tdg"]))
def test_tampered_specs_are_refused_clearly(mutation, sensitive, method):
    priv = RangeQueryPrivatizer(
        1.0,
        bounds=BOUNDS,
        method=method,
        granularity=(4, 2) if method == "hdg" else 3,
        sensitive_ranges={"a": [(8.0, 10.0)], "b": [(0.5, 1.0)]} if sensitive else None,
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
    assert Channel.from_json(channel.to_json()) == channel


@SETTINGS
@given(
    low=st.floats(-1e6, 1e6),
    width=st.floats(1e-6, 1e6),
    g2=st.integers(2, 8),
    r=st.integers(1, 6),
    start=st.floats(0, 1),
    length=st.floats(0, 1),
    values=st.lists(st.floats(0, 1), min_size=1, max_size=20),
)
def test_a_sensitive_value_lands_in_a_sensitive_cell(low, width, g2, r, start, length, values):
    high = low + width
    if not high > low:
        return
    a = low + start * width
    b = min(high, a + length * width)
    try:
        priv = RangeQueryPrivatizer(
            1.0,
            bounds={"x": (low, high), "y": (0.0, 1.0)},
            granularity=(g2 * r, g2),
            sensitive_ranges={"x": [(a, b)], "y": [(0.99, 1.0)]},
        ).fit()
    except ValueError as exc:  # bounds too narrow for their magnitude (numeric's rule)
        assert "too narrow" in str(exc)
        return
    channel = priv.channel_
    x = np.clip(np.asarray([a, b] + [a + v * (b - a) for v in values]), a, b)
    table = np.column_stack([x, np.zeros_like(x)])
    columns = [np.ascontiguousarray(c) for c in channel.fine_codes(table).T]
    for j, grid in enumerate(channel.grids):
        if "x" in grid:
            assert channel.cell_sensitive(j)[channel.grid_cells(j, columns)].all()
