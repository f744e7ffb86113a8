"""Text columns of a DataFrame are encoded through pandas, with the same result.

A column of strings (``str``, object of ``str``, or ``category`` with text
categories) is factorized once and only its distinct values are looked up in
the domain (``mechanisms/_text_columns.py``). These tests run each case twice,
with that path and with it turned off (every value as a Python object, the
general path), and require the same seeded reports and the same errors.
"""

import warnings

import numpy as np
import pandas as pd
import pytest
from _pytest.monkeypatch import MonkeyPatch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sklearn_uldp.estimators._base as estimators_base
import sklearn_uldp.mechanisms._base as mechanisms_base
import sklearn_uldp.mechanisms._randomized_response as rr_module
from sklearn_uldp.compose import DataFramePrivatizer
from sklearn_uldp.estimators import EmpiricalEstimator
from sklearn_uldp.exceptions import UninformativeEstimateWarning
from sklearn_uldp.mechanisms import RAPPOR, RandomizedResponse, UtilityOptimizedRR
from sklearn_uldp.mechanisms._text_columns import FactorizedColumns, text_columns

DOMAIN = ["a", "b", "c", "dé", ""]
OUTSIDE = ["zz", "A", "a "]


def _as(values, kind):
    if kind == "category":
        return pd.Series(pd.Categorical(values, categories=DOMAIN + OUTSIDE))
    if kind == "str":
        return pd.Series(values, dtype="string")
    return pd.Series(values, dtype=object)


def _outcome(make, frame, general):
    """(reports or None, error message or None) of a seeded transform (a
    mechanism fitted on the domain alone for one column, on the frame else)."""
    with MonkeyPatch.context() as patch:
        if general:
            patch.setattr(mechanisms_base, "text_columns", lambda frame: None)
        try:
            mech = make().fit() if frame.shape[1] == 1 else make().fit(frame)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return np.asarray(mech.transform(frame), dtype=object), None
        except ValueError as exc:
            return None, str(exc)


#: A column as an outsider may hand it over: labels of the domain, others, missing ones.
VALUES = st.lists(
    st.one_of(st.sampled_from(DOMAIN), st.sampled_from(OUTSIDE), st.none()),
    min_size=1,
    max_size=30,
)

MECHANISMS = [
    lambda: RandomizedResponse(epsilon=1.0, categories=DOMAIN, random_state=3),
    lambda: UtilityOptimizedRR(
        epsilon=1.0, categories=DOMAIN, sensitive=["a", "b"], random_state=3
    ),
    lambda: RAPPOR(epsilon=1.0, categories=DOMAIN, random_state=3),
]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    values=VALUES,
    kind=st.sampled_from(["category", "str", "object"]),
    which=st.integers(0, len(MECHANISMS) - 1),
)
def test_same_reports_and_errors_as_the_general_path(values, kind, which):
    frame = _as(values, kind).to_frame("x")
    before = frame.copy()
    fast = _outcome(MECHANISMS[which], frame, general=False)
    general = _outcome(MECHANISMS[which], frame, general=True)
    pd.testing.assert_frame_equal(frame, before)  # the input is never modified
    assert (fast[1] is None) == (general[1] is None)
    assert fast[1] == general[1]
    if fast[0] is not None:
        np.testing.assert_array_equal(fast[0], general[0])


@pytest.mark.parametrize("kind", ["category", "str", "object"])
def test_several_columns_keep_their_own_streams(kind):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {c: _as(list(np.array(DOMAIN, dtype=object)[rng.integers(0, 5, 400)]), kind) for c in "pq"}
    )

    def make():
        return RandomizedResponse(epsilon=1.0, categories=DOMAIN, random_state=5)

    fast, _ = _outcome(make, frame, general=False)
    general, _ = _outcome(make, frame, general=True)
    np.testing.assert_array_equal(fast, general)
    assert not np.array_equal(fast[:, 0], fast[:, 1])  # not one stream twice


def test_only_text_columns_are_factorized():
    text = pd.DataFrame({"x": pd.Series(["a", "b"], dtype="string")})
    assert isinstance(text_columns(text), FactorizedColumns)
    # numbers, booleans, mixed objects (1 and True hash alike) and empty
    # frames keep the general path
    for frame in (
        pd.DataFrame({"x": [1, 2]}),
        pd.DataFrame({"x": pd.Categorical([True, False])}),
        pd.DataFrame({"x": pd.Series(["a", 1], dtype=object)}),
        pd.DataFrame({"x": pd.Series([True, 1], dtype=object)}),
        pd.DataFrame({"x": pd.Series([], dtype="string")}),
        pd.DataFrame({"x": pd.Categorical([1, 2])}),
    ):
        assert text_columns(frame) is None


def test_feature_names_are_still_checked():
    mech = RandomizedResponse(epsilon=1.0, categories=DOMAIN, random_state=0)
    mech.fit(pd.DataFrame({"x": pd.Series(["a"], dtype="string")}))
    with pytest.raises(ValueError, match="feature names"):
        mech.transform(pd.DataFrame({"y": pd.Series(["a"], dtype="string")}))


@pytest.mark.parametrize("kind", ["category", "str"])
def test_dataframe_privatizer_on_text_columns_matches_the_general_path(kind):
    rng = np.random.default_rng(1)
    frame = pd.DataFrame(
        {c: _as(list(np.array(DOMAIN, dtype=object)[rng.integers(0, 5, 300)]), kind) for c in "pq"}
    )

    def privatize():
        priv = DataFramePrivatizer(
            {c: RandomizedResponse(epsilon=1.0, categories=DOMAIN) for c in "pq"}, random_state=2
        )
        return priv.fit(frame).transform(frame)

    fast = privatize()
    with MonkeyPatch.context() as patch:
        patch.setattr(mechanisms_base, "text_columns", lambda frame: None)
        general = privatize()
    pd.testing.assert_frame_equal(fast, general)


def test_missing_values_of_text_columns_are_still_refused():
    frame = pd.DataFrame({"p": pd.Series(["a", None, "b"], dtype="string")})
    priv = DataFramePrivatizer(
        {"p": RandomizedResponse(epsilon=1.0, categories=DOMAIN)}, random_state=0
    )
    with pytest.raises(ValueError, match="1 missing"):
        priv.fit(frame).transform(frame)
    cat = pd.DataFrame({"p": pd.Categorical(["a", None, "b"], categories=DOMAIN)})
    with pytest.raises(ValueError, match="1 missing"):
        priv.fit(cat).transform(cat)


def _estimate(reports, mechanism, general):
    """(statistics' counts or None, error message or None) of an estimate."""
    with MonkeyPatch.context() as patch, warnings.catch_warnings():
        warnings.simplefilter("ignore", UninformativeEstimateWarning)
        if general:
            patch.setattr(rr_module, "text_report_codes", lambda reports, categories: None)
            patch.setattr(estimators_base, "text_series", lambda reports: None)
        try:
            est = EmpiricalEstimator(mechanism=mechanism).fit(reports)
        except ValueError as exc:
            return None, str(exc)
    return est.statistics_.counts, None


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    values=VALUES,
    kind=st.sampled_from(["category", "str", "object"]),
    frame=st.booleans(),
    sensitive=st.booleans(),
)
def test_text_reports_are_counted_as_by_the_general_path(values, kind, frame, sensitive):
    # Reports as an outsider may hand them over: tampered labels and missing
    # ones included, in a Series or a one-column DataFrame.
    mech = (
        UtilityOptimizedRR(epsilon=1.0, categories=DOMAIN, sensitive=["a", "b"])
        if sensitive
        else RandomizedResponse(epsilon=1.0, categories=DOMAIN)
    ).fit()
    reports = _as(values, kind)
    if frame:
        reports = reports.to_frame("x")
    fast = _estimate(reports, mech, False)
    general = _estimate(reports, mech, True)
    assert fast[1] == general[1]
    if fast[0] is not None:
        np.testing.assert_array_equal(fast[0], general[0])


@pytest.mark.parametrize("kind", ["category", "str", "object"])
@pytest.mark.parametrize("strategy", ["sample", "sample+fake"])
def test_sampled_text_columns_match_the_general_path(kind, strategy):
    # SMP reads each column once and privatizes the rows that sampled it:
    # the factorized column serves both (a subset of its rows included).
    rng = np.random.default_rng(2)
    frame = pd.DataFrame(
        {c: _as(list(np.array(DOMAIN, dtype=object)[rng.integers(0, 5, 500)]), kind) for c in "pqr"}
    )

    def privatize():
        priv = DataFramePrivatizer(
            {c: RandomizedResponse(epsilon=1.0, categories=DOMAIN) for c in "pqr"},
            strategy=strategy,
            random_state=4,
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return priv.fit(frame).transform(frame)

    fast = privatize()
    with MonkeyPatch.context() as patch:
        patch.setattr(mechanisms_base, "text_columns", lambda frame: None)
        general = privatize()
    pd.testing.assert_frame_equal(fast, general)
