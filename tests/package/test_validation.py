"""Bad input gets a clear error: what is wrong AND how to fix it.

Every ``match=`` below checks both halves of the message.
"""

import warnings

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from sklearn_uldp import (
    RAPPOR,
    EMEstimator,
    EmpiricalEstimator,
    NonPrivate,
    PrivacyLeakWarning,
    RandomizedResponse,
    ReportMismatchError,
    ThresholdEstimator,
    UtilityOptimizedRAPPOR,
    UtilityOptimizedRR,
)
from sklearn_uldp.mechanisms import get_channel

CATS = ["a", "b", "c"]
X = np.array([["a"], ["b"], ["c"], ["a"]], dtype=object)
ESTIMATORS = [EmpiricalEstimator, ThresholdEstimator, EMEstimator]


def all_mechanisms(categories=CATS, sensitive=("a",), **params):
    sensitive = list(sensitive)
    return [
        RandomizedResponse(categories=categories, **params),
        RAPPOR(categories=categories, **params),
        UtilityOptimizedRR(sensitive=sensitive, categories=categories, **params),
        UtilityOptimizedRAPPOR(sensitive=sensitive, categories=categories, **params),
        NonPrivate(categories=categories),
    ]


MECH_IDS = ["RR", "RAPPOR", "uRR", "uRAP", "NonPrivate"]
EPSILON_MECHS = [RandomizedResponse, RAPPOR, UtilityOptimizedRR, UtilityOptimizedRAPPOR]


def _with_params(cls, **params):
    if cls in (UtilityOptimizedRR, UtilityOptimizedRAPPOR):
        params.setdefault("sensitive", ["a"])
    return cls(categories=CATS, **params)


# ------------------------------------------------------------- the domain
@pytest.mark.parametrize("mech", all_mechanisms(), ids=MECH_IDS)
def test_unknown_category(mech):
    bad = np.array([["a"], ["z"], ["zz"], ["z"]], dtype=object)
    msg = r"3 values \(2 distinct: text\) of unknown categories.*add the values to `categories`"
    with pytest.raises(ValueError, match=msg):
        mech.fit(bad)
    mech.fit(X)
    with pytest.raises(ValueError, match=msg):
        mech.transform(bad)


@pytest.mark.parametrize("mech", all_mechanisms(), ids=MECH_IDS)
@pytest.mark.parametrize("missing", [None, np.nan, pd.NA])
def test_missing_value_not_a_category(mech, missing):
    bad = np.array([["a"], [missing], ["b"]], dtype=object)
    msg = (
        r"X contains 1 missing values \(NaN/None\).*Impute or drop them, or "
        r"add a missing-value marker to categories"
    )
    with pytest.raises(ValueError, match=msg):
        mech.fit(bad)
    mech.fit(X)
    with pytest.raises(ValueError, match=msg):
        mech.transform(bad)


def test_nan_in_numeric_column_not_a_category():
    with pytest.raises(ValueError, match="missing values.*Impute or drop"):
        RandomizedResponse(categories=[1.0, 2.0]).fit(np.array([[1.0], [np.nan]]))


def test_missing_values_with_auto_categories():
    with pytest.raises(ValueError, match="missing values.*explicit categories"):
        RandomizedResponse().fit(np.array([["a"], [None], ["b"]], dtype=object))


@pytest.mark.parametrize("marker", [None, np.nan])
@pytest.mark.parametrize("mech_index", range(5), ids=MECH_IDS)
def test_missing_value_as_a_category(marker, mech_index):
    cats = ["a", "b", marker]
    mech = all_mechanisms(categories=cats, sensitive=[marker], random_state=0)[mech_index]
    # Every missing marker in X is the missing category, also in a batch that
    # holds nothing else.
    X_miss = np.array([["a"], [None], ["b"], [np.nan], [pd.NA]] * 40, dtype=object)
    reports = mech.fit_transform(X_miss)
    assert mech.transform(np.array([[None], [np.nan]], dtype=object)).shape[0] == 2
    if isinstance(mech, (UtilityOptimizedRR, UtilityOptimizedRAPPOR)):
        assert_array_equal(mech.sensitive_mask_, [False, False, True])
    for cls in ESTIMATORS:
        est = cls().fit(reports)
        assert est.distribution_.shape == (3,)
        proba = est.predict_proba(reports)
        assert_allclose(proba.sum(axis=1), 1.0)
        assert np.isfinite(est.score(reports))
    if isinstance(mech, NonPrivate):  # exact: 3 of 5 values are missing
        assert_allclose(EmpiricalEstimator().fit(reports).distribution_, [0.2, 0.2, 0.6])


def test_nan_as_a_numeric_category():
    mech = RandomizedResponse(categories=[1.0, 2.0, np.nan], random_state=0)
    X_num = np.array([[1.0], [np.nan], [2.0]] * 50)
    X_before = X_num.copy()
    reports = mech.fit_transform(X_num)
    assert_array_equal(X_num, X_before)
    assert reports.dtype == np.float64 and np.isnan(reports).any()
    est = EMEstimator().fit(reports)  # NaN reports are legitimate here
    assert_allclose(est.predict_proba(reports).sum(axis=1), 1.0)
    assert est.__class__(mechanism=mech).__sklearn_tags__().input_tags.allow_nan


def test_nan_as_a_numeric_category_chunks_and_spec():
    mech = RandomizedResponse(categories=[1.0, 2.0, np.nan], random_state=0)
    reports = mech.fit_transform(np.array([[1.0], [np.nan], [2.0]] * 50))
    assert mech.channel_ == mech.channel_
    EmpiricalEstimator().fit(reports).partial_fit(reports)
    EmpiricalEstimator(mechanism=mech.spec()).fit(np.asarray(reports))


def test_reports_that_are_all_the_missing_category():
    mech = NonPrivate(categories=["a", "b", None]).fit()
    reports = mech.transform(np.array([[None], [None]], dtype=object))
    assert_allclose(EmpiricalEstimator().fit(reports).distribution_, [0, 0, 1])


@pytest.mark.parametrize("bad", [["a", "b", "a"], ["a", None, np.nan, "b"]])
@pytest.mark.parametrize("mech_index", range(5), ids=MECH_IDS)
def test_duplicate_categories(bad, mech_index):
    mech = all_mechanisms(categories=bad)[mech_index]
    with pytest.raises(ValueError, match=r"duplicates .*remove the repeated values"):
        mech.fit()


@pytest.mark.parametrize(
    "categories, msg",
    [
        (["a"], "at least two values"),
        ([["a", "b"], ["c", "d"]], "one-dimensional"),
        ("abc", r"parameter of RandomizedResponse must be .*Pass the public domain"),
        (3, r"parameter of RandomizedResponse must be .*Pass the public domain"),
    ],
)
def test_bad_categories(categories, msg):
    with pytest.raises(ValueError, match=msg):
        RandomizedResponse(categories=categories).fit()


def test_auto_categories_warn_about_the_leak():
    with pytest.warns(
        PrivacyLeakWarning, match=r"reveals which values occur.*categories=\[\.\.\.\]"
    ):
        mech = RandomizedResponse(random_state=0).fit(X)
    assert_array_equal(mech.categories_, CATS)
    with pytest.raises(ValueError, match=r"X is required.*categories=\[\.\.\.\]"):
        RandomizedResponse().fit()
    # Explicit categories: no warning.
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        RandomizedResponse(categories=CATS).fit(X)


# -------------------------------------------------------------- parameters
EPSILON_FIX = r"pass a finite number > 0 such as 1\.0"


@pytest.mark.parametrize("cls", EPSILON_MECHS)
@pytest.mark.parametrize("epsilon", [0, 0.0, -1.0, np.nan, np.inf, -np.inf])
def test_bad_epsilon_value(cls, epsilon):
    mech = _with_params(cls, epsilon=epsilon)
    with pytest.raises(ValueError, match=rf"'epsilon' parameter .*Got .* instead.*{EPSILON_FIX}"):
        mech.fit()


@pytest.mark.parametrize("cls", EPSILON_MECHS)
def test_infinite_epsilon_points_to_nonprivate(cls):
    with pytest.raises(ValueError, match="epsilon.*inf.*NonPrivate()"):
        _with_params(cls, epsilon=np.inf).fit()


@pytest.mark.parametrize("cls", EPSILON_MECHS)
@pytest.mark.parametrize("epsilon", ["1.0", None, [1.0], 1j])
def test_bad_epsilon_type(cls, epsilon):
    with pytest.raises(
        (TypeError, ValueError), match=rf"'epsilon' parameter .*Got .* instead.*{EPSILON_FIX}"
    ):
        _with_params(cls, epsilon=epsilon).fit()


@pytest.mark.parametrize("cls", EPSILON_MECHS)
def test_boolean_epsilon(cls):
    with pytest.raises(TypeError, match="epsilon must be a positive real number"):
        _with_params(cls, epsilon=True).fit()


@pytest.mark.parametrize("cls", [RAPPOR, UtilityOptimizedRAPPOR])
@pytest.mark.parametrize("theta", [0, 0.0, 1, 1.0, -0.2, 1.5, np.nan, "0.5"])
def test_bad_theta(cls, theta):
    with pytest.raises(
        ValueError,
        match=r"'theta' parameter .*Got .* instead.*strictly between 0 and 1.*"
        r"theta=None",
    ):
        _with_params(cls, theta=theta).fit()


@pytest.mark.parametrize("cls", [UtilityOptimizedRR, UtilityOptimizedRAPPOR])
def test_sensitive_values_outside_the_domain(cls):
    with pytest.raises(
        ValueError,
        match=r"sensitive holds 1 value\(s\) that are not categories \(of 2\).*"
        r"add them to `categories` or fix their spelling",
    ):
        cls(sensitive=["a", "z"], categories=CATS).fit()


@pytest.mark.parametrize("cls", [UtilityOptimizedRR, UtilityOptimizedRAPPOR])
@pytest.mark.parametrize(
    "sensitive",
    [[], [False, False, False], lambda c: False, np.array([], dtype=object)],
    ids=["empty-list", "all-false-mask", "false-predicate", "empty-array"],
)
def test_empty_sensitive_set_points_to_nonprivate(cls, sensitive):
    with pytest.raises(
        ValueError,
        match=r"sensitive set is empty.*releases every value unchanged.*"
        r"Mark at least one category sensitive, or use NonPrivate\(\)",
    ):
        cls(sensitive=sensitive, categories=CATS).fit()


@pytest.mark.parametrize("cls", [UtilityOptimizedRR, UtilityOptimizedRAPPOR])
def test_bad_sensitive(cls):
    with pytest.raises(ValueError, match="more than once.*List each sensitive"):
        cls(sensitive=["a", "a"], categories=CATS).fit()
    with pytest.raises(ValueError, match=r"'sensitive' parameter .*Got None.*boolean mask"):
        cls(sensitive=None, categories=CATS).fit()
    # The three accepted forms give the same mask.
    masks = [
        cls(sensitive=s, categories=CATS).fit().sensitive_mask_
        for s in (["b"], [False, True, False], lambda c: c == "b")
    ]
    for mask in masks:
        assert_array_equal(mask, [False, True, False])


@pytest.mark.parametrize("mech", all_mechanisms(random_state=-1)[:4], ids=MECH_IDS[:4])
def test_bad_random_state(mech):
    with pytest.raises(ValueError, match=r"'random_state' .*non-negative int"):
        mech.fit()


# ------------------------------------------------------------------- input
@pytest.mark.parametrize("mech", all_mechanisms(), ids=MECH_IDS)
def test_two_columns_to_a_mechanism(mech):
    # Several columns share the domain: one block of reports per column, and
    # a transform must get the columns the mechanism was fitted on.
    two = np.hstack([X, X])
    assert mech.fit(two).n_features_in_ == 2
    frame = pd.DataFrame({"city": X[:, 0], "sex": X[:, 0]})
    assert_array_equal(mech.fit(frame).feature_names_in_, ["city", "sex"])
    bad = frame.assign(sex=["a", "z", "c", "a"])
    with pytest.raises(ValueError, match=r"1 value \(text\) of unknown categories"):
        mech.transform(bad)
    mech.fit(X)
    with pytest.raises(ValueError, match="X has 2 features, but .* expecting 1"):
        mech.transform(two)


@pytest.mark.parametrize("mech", all_mechanisms(), ids=MECH_IDS)
def test_sparse_input_to_a_mechanism(mech):
    import scipy.sparse as sp

    with pytest.raises(TypeError, match="Sparse input is not supported.*one column"):
        mech.fit(sp.csr_array(np.ones((3, 1))))


@pytest.mark.parametrize("mech", all_mechanisms(), ids=MECH_IDS)
def test_unfitted_mechanism(mech):
    for call in (
        lambda: mech.transform(X),
        mech.get_feature_names_out,
        mech.spec,
        mech.channel_matrix,
    ):
        with pytest.raises(NotFittedError, match="not fitted yet.*Call 'fit'"):
            call()


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_unfitted_estimator(cls):
    est = cls()
    reports = RandomizedResponse(categories=CATS).fit_transform(X)
    for call in (
        lambda: est.predict_proba(reports),
        lambda: est.score(reports),
        lambda: est.distribution_,
    ):
        with pytest.raises(NotFittedError, match="not fitted yet.*Call 'fit'"):
            call()


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_reports_without_a_channel(cls):
    reports = np.asarray(RandomizedResponse(categories=CATS).fit_transform(X))
    assert get_channel(reports) is None
    msg = (
        r"reports do not say which mechanism produced them.*"
        rf"{cls.__name__}\(mechanism=fitted_mechanism_or_spec\)"
    )
    with pytest.raises(ValueError, match=msg):
        cls().fit(reports)
    with pytest.raises(ValueError, match=msg):
        cls().partial_fit(reports.tolist())


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_unfitted_auto_mechanism_as_mechanism(cls):
    with pytest.raises(ValueError, match=r"categories='auto'.*mechanism=fitted\.channel_"):
        cls(mechanism=RandomizedResponse()).fit(np.array([["a"]], dtype=object))
    with pytest.raises(ValueError, match=r"'mechanism' parameter .*Got 'rr'"):
        cls(mechanism="rr").fit(np.array([["a"]], dtype=object))


# ---------------------------------------------------- reports and channels
def _rr(**params):
    return RandomizedResponse(**{"categories": CATS, "random_state": 0, **params}).fit()


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_reports_with_the_wrong_shape(cls):
    rr = _rr()
    # Two columns of k-RR reports are the blocks of a mechanism on two
    # columns: pooled.
    assert cls(mechanism=rr).fit(np.array([["a", "b"]] * 3, dtype=object)).n_reports_ == 6
    rap = RAPPOR(categories=CATS).fit()
    with pytest.raises(
        ReportMismatchError,
        match=r"0/1 matrices of shape \(n, 3\); got shape \(3, 4\).*another "
        r"mechanism or domain",
    ):
        cls(mechanism=rap).fit(np.ones((3, 4), dtype=np.uint8))
    with pytest.raises(ReportMismatchError, match=r"got 1D array instead.*reshape\(1, -1\)"):
        cls(mechanism=rap).fit(np.ones(3, dtype=np.uint8))
    # After fit, a batch with another number of columns.
    est = cls().fit(rap.transform(X))
    with pytest.raises(
        ReportMismatchError,
        match=r"X has 2 features, but .* expecting 3 .*another mechanism",
    ):
        est.predict_proba(np.ones((2, 2), dtype=np.uint8))


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_report_values_the_mechanism_cannot_produce(cls):
    with pytest.raises(
        ReportMismatchError, match=r"1 value \(text\) outside the outputs.*another mechanism"
    ):
        cls(mechanism=_rr()).fit(np.array([["a"], ["z"]], dtype=object))
    rap = RAPPOR(categories=CATS).fit()
    with pytest.raises(ReportMismatchError, match="only 0 and 1"):
        cls(mechanism=rap).fit(np.full((2, 3), 2, dtype=np.uint8))
    with pytest.raises(ReportMismatchError, match=r"NaN or infinity.*Drop the corrupted reports"):
        cls(mechanism=rap).fit(np.array([[0.0, 1.0, np.nan]]))


@pytest.mark.parametrize("cls", ESTIMATORS)
@pytest.mark.parametrize(
    "other, difference",
    [
        (lambda: _rr(epsilon=2.0), r"epsilon: 2\.0 vs 1\.0"),
        (lambda: _rr(categories=["a", "b", "c", "d"]), "categories"),
        (lambda: RAPPOR(categories=CATS).fit(), "mechanism 'rappor' vs 'rr'"),
        (
            lambda: UtilityOptimizedRR(sensitive=["a"], categories=CATS).fit(),
            "mechanism 'urr' vs 'rr'",
        ),
    ],
    ids=["epsilon", "categories", "rappor", "urr"],
)
def test_reports_from_another_mechanism(cls, other, difference):
    reports = other().transform(X)
    fix = "Estimate with the channel of the mechanism that produced the reports"
    # Against the `mechanism` parameter ...
    with pytest.raises(
        ReportMismatchError,
        match=rf"`mechanism` parameter .*differences: {difference}.*{fix}",
    ):
        cls(mechanism=_rr()).fit(reports)
    # ... and against the reports seen in fit.
    est = cls().fit(_rr().transform(X))
    for method in (est.partial_fit, est.predict_proba, est.score):
        with pytest.raises(
            ReportMismatchError,
            match=rf"reports this estimator was fitted on .*differences: "
            rf"{difference}.*{fix}",
        ):
            method(reports)


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_reports_from_another_theta_or_sensitive_set(cls):
    a = RAPPOR(theta=0.5, categories=CATS).fit()
    b = RAPPOR(theta=0.75, categories=CATS).fit()
    with pytest.raises(ReportMismatchError, match=r"differences: theta: 0\.75 vs 0\.5"):
        cls(mechanism=a).fit(b.transform(X))
    c = UtilityOptimizedRR(sensitive=["a"], categories=CATS).fit()
    d = UtilityOptimizedRR(sensitive=["b"], categories=CATS).fit()
    with pytest.raises(ReportMismatchError, match=r"differences: sensitive"):
        cls(mechanism=c).fit(d.transform(X))


# ------------------------------------------------------ pandas column types
@pytest.mark.parametrize("mech_index", range(5), ids=MECH_IDS)
@pytest.mark.parametrize(
    "column, categories",
    [
        (pd.Series(pd.Categorical(["a", "b", "c", "a"] * 10)), CATS),
        (pd.Series(pd.Categorical(["a", "b", "a"] * 10, categories=["a", "b", "c"])), CATS),
        (pd.Series(["a", "b", "c", "a"] * 10, dtype="string"), CATS),
        (pd.Series(["a", "b", "c", "a"] * 10, dtype=object), CATS),
        (pd.Series([1, 2, 3, 1] * 10, dtype="int64"), [1, 2, 3]),
        (pd.Series([1, 2, 3, 1] * 10, dtype="Int64"), [1, 2, 3]),
        (pd.Series([1, 2, 3, 1] * 10, dtype="int8"), [1, 2, 3]),
        (pd.Series([True, False, True] * 10), [False, True]),
    ],
    ids=["category", "category-unused-level", "string", "object", "int64", "Int64", "int8", "bool"],
)
def test_pandas_column_types(mech_index, column, categories):
    mech = all_mechanisms(categories=categories, sensitive=categories[:1], random_state=0)[
        mech_index
    ]
    frame = column.rename("col").to_frame()
    before = frame.copy()
    reports = mech.fit_transform(frame)
    pd.testing.assert_frame_equal(frame, before)
    assert_array_equal(mech.feature_names_in_, ["col"])
    assert reports.shape[0] == len(frame)
    est = EmpiricalEstimator().fit(reports)
    assert est.distribution_.shape == (len(categories),)
    assert_array_equal(est.categories_, categories)
    if isinstance(mech, NonPrivate):  # exact frequencies
        counts = column.value_counts(normalize=True)
        assert_allclose(est.distribution_, [counts.get(c, 0.0) for c in categories])
    # A Series works like a one-column DataFrame.
    assert mech.fit_transform(column).shape[0] == len(column)


@pytest.mark.parametrize("mech_index", range(5), ids=MECH_IDS)
def test_declared_categories_of_a_categorical_column(mech_index):
    """categories='auto' on pandas 'category' columns uses their declared
    categories (unused ones included, in order), as DataFramePrivatizer does,
    and learns nothing from the values: no PrivacyLeakWarning (issue 13)."""
    column = pd.Series(pd.Categorical(["b", "a"] * 10, categories=["c", "a", "b"]), name="x")
    mech = all_mechanisms(categories="auto", sensitive=["a"], random_state=0)[mech_index]
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        mech.fit(column)
    assert_array_equal(mech.categories_, ["c", "a", "b"])
    two = pd.DataFrame(
        {
            "x": column,
            "y": pd.Categorical(["d", "a"] * 10, categories=["a", "d"]),
        }
    )
    assert_array_equal(clone(mech).fit(two).categories_, ["c", "a", "b", "d"])
    # Not every column categorical: the domain is learned (and warned about).
    mixed = two.assign(y=two["y"].astype(object))
    with pytest.warns(PrivacyLeakWarning):
        clone(mech).fit(mixed)
    with pytest.raises(ValueError, match="missing values"):
        clone(mech).fit(pd.Series(pd.Categorical(["a", None], categories=["a", "b"])))


def test_urr_with_most_categories_sensitive_warns_it_behaves_like_rr():
    cats = list(range(122))
    with pytest.warns(UserWarning, match=r"102 of the 122 categories are sensitive.*1\.7%.*2\.2%"):
        UtilityOptimizedRR(epsilon=1.0, categories=cats, sensitive=cats[:102]).fit()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # Few sensitive values, or a pass-through probability >= 5 %: silent.
        UtilityOptimizedRR(epsilon=1.0, categories=cats, sensitive=cats[:10]).fit()
        UtilityOptimizedRR(epsilon=5.0, categories=cats, sensitive=cats[:102]).fit()
