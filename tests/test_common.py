"""scikit-learn conformance of every public mechanism and estimator.

``parametrize_with_checks`` runs scikit-learn's estimator checks. Most of them
fit on random numeric matrices with several features, while a mechanism
privatizes ONE categorical column and an estimator only accepts the reports of
its mechanism; those checks are listed in :func:`expected_failed_checks` with
the reason, run in strict xfail mode (a listed check that starts passing
fails the suite), and :func:`test_expected_failures_fail_for_the_stated_reason`
verifies that each one fails for exactly that reason and no other.

Every property such a check was meant to verify is then tested on valid data
(one categorical column, or real reports) by the tests below it; each reason
names that test.
"""

import copy
import inspect
import pickle
import re
import traceback
import unittest

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
import sklearn
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.utils._testing import create_memmap_backed_data
from sklearn.utils.estimator_checks import (
    estimator_checks_generator,
    parametrize_with_checks,
)
from sklearn.utils.fixes import parse_version
from sklearn.utils.validation import check_is_fitted

from sklearn_uldp import (
    RAPPOR,
    EMEstimator,
    EmpiricalEstimator,
    NonPrivate,
    RandomizedResponse,
    ReportMismatchError,
    ThresholdEstimator,
    UtilityOptimizedRAPPOR,
    UtilityOptimizedRR,
)
from sklearn_uldp.mechanisms import get_channel

# ----------------------------------------------------------------- instances
CATS = [0, 1, 2, 3, 4, 5]
MECHANISM_IDS = ["RR", "RAPPOR", "uRR", "uRAP", "NonPrivate"]


def make_mechanisms():
    return [
        RandomizedResponse(epsilon=1.0, categories=CATS, random_state=0),
        RAPPOR(epsilon=1.0, categories=CATS, random_state=0),
        UtilityOptimizedRR(
            epsilon=1.0, sensitive=[0, 1], categories=CATS, random_state=0
        ),
        UtilityOptimizedRAPPOR(
            epsilon=1.0, sensitive=[0, 1], categories=CATS, random_state=0
        ),
        NonPrivate(categories=CATS),
    ]


# Estimators are built with `mechanism=` a fitted mechanism: a one-value-per-user
# mechanism (reports are one column) and a bit-vector one (reports are k bits).
RR_3 = RandomizedResponse(epsilon=1.0, categories=[0, 1, 2], random_state=0).fit()
RAPPOR_3 = RAPPOR(epsilon=1.0, categories=[0, 1, 2], random_state=0).fit()
ESTIMATOR_CLASSES = [EmpiricalEstimator, ThresholdEstimator, EMEstimator]
ESTIMATOR_IDS = [
    f"{cls.__name__}-{kind}" for kind in ("RR", "RAPPOR") for cls in ESTIMATOR_CLASSES
]


def make_estimators():
    return [cls(mechanism=mech) for mech in (RR_3, RAPPOR_3)
            for cls in ESTIMATOR_CLASSES]


def _is_bits(obj):
    return isinstance(obj, (RAPPOR, UtilityOptimizedRAPPOR))


# --------------------------------------------------- expected failed checks
SINGLE_COLUMN = "tests/test_common.py::"

# check -> (number of numeric features the check fits a mechanism on,
#           the test of the same property on one categorical column)
MECHANISM_XFAILS = {
    "check_fit_score_takes_y": (3, "test_mechanism_fit_returns_self_and_takes_y"),
    "check_estimators_overwrite_params": (2, "test_mechanism_fit_keeps_params"),
    "check_dont_overwrite_parameters": (3, "test_mechanism_fit_keeps_params"),
    "check_estimators_fit_returns_self": (
        2, "test_mechanism_fit_returns_self_and_takes_y"),
    "check_readonly_memmap_input": (2, "test_mechanism_input_containers"),
    "check_n_features_in_after_fitting": (4, "test_mechanism_n_features_in"),
    "check_positive_only_tag_during_fit": (
        4, "test_mechanism_negative_categories"),
    "check_estimators_dtypes": (5, "test_mechanism_input_dtypes"),
    "check_dtype_object": (10, "test_mechanism_input_dtypes"),
    "check_estimators_pickle": (3, "test_mechanism_pickle_round_trip"),
    "check_f_contiguous_array_estimator": (3, "test_mechanism_input_containers"),
    "check_transformer_data_not_an_array": (3, "test_mechanism_input_containers"),
    "check_transformer_general": (3, "test_mechanism_reproducible"),
    "check_transformer_preserve_dtypes": (3, "test_mechanism_input_dtypes"),
    "check_fit2d_1sample": (10, "test_mechanism_one_sample_and_empty"),
    "check_dict_unchanged": (3, "test_mechanism_transform_keeps_dict"),
    "check_fit_idempotent": (2, "test_mechanism_reproducible"),
    "check_fit_check_is_fitted": (
        2, "test_mechanism_fit_returns_self_and_takes_y"),
    "check_n_features_in": (2, "test_mechanism_n_features_in"),
    "check_fit2d_predict1d": (3, "test_mechanism_rejects_1d_input"),
}
# Only run for deterministic estimators (NonPrivate among the mechanisms).
DETERMINISTIC_XFAILS = {
    "check_pipeline_consistency": (3, "test_deterministic_invariances"),
    "check_methods_sample_order_invariance": (3, "test_deterministic_invariances"),
    "check_methods_subset_invariance": (3, "test_deterministic_invariances"),
}

# Estimator with a one-value-per-user mechanism: check -> (columns fed, test).
RR_ESTIMATOR_XFAILS = {
    "check_fit_score_takes_y": (3, "test_estimator_fit_returns_self_and_takes_y"),
    "check_estimators_overwrite_params": (2, "test_estimator_keeps_params_and_dict"),
    "check_dont_overwrite_parameters": (3, "test_estimator_keeps_params_and_dict"),
    "check_estimators_fit_returns_self": (
        2, "test_estimator_fit_returns_self_and_takes_y"),
    "check_readonly_memmap_input": (2, "test_estimator_report_containers"),
    "check_n_features_in_after_fitting": (4, "test_estimator_n_features_in"),
    "check_positive_only_tag_during_fit": (4, "test_estimator_negative_labels"),
    "check_estimators_dtypes": (5, "test_estimator_report_containers"),
    "check_dtype_object": (10, "test_estimator_report_containers"),
    "check_pipeline_consistency": (3, "test_deterministic_invariances"),
    "check_estimators_nan_inf": (3, "test_estimator_rejects_nan_inf_reports"),
    "check_estimators_pickle": (3, "test_estimator_pickle_round_trip"),
    "check_f_contiguous_array_estimator": (3, "test_estimator_report_containers"),
    "check_methods_sample_order_invariance": (3, "test_deterministic_invariances"),
    "check_methods_subset_invariance": (3, "test_deterministic_invariances"),
    "check_fit2d_1sample": (10, "test_estimator_one_report_and_empty"),
    "check_dict_unchanged": (3, "test_estimator_keeps_params_and_dict"),
    "check_fit_idempotent": (2, "test_estimator_fit_idempotent"),
    "check_fit_check_is_fitted": (
        2, "test_estimator_fit_returns_self_and_takes_y"),
    "check_n_features_in": (2, "test_estimator_n_features_in"),
    "check_fit2d_predict1d": (3, "test_estimator_1d_reports"),
}
# Estimator with RAPPOR over 3 categories (reports: 3 bit columns). Checks
# fed another number of columns: check -> (columns fed, test).
RAPPOR_ESTIMATOR_SHAPE_XFAILS = {
    "check_estimators_overwrite_params": (2, "test_estimator_keeps_params_and_dict"),
    "check_estimators_fit_returns_self": (
        2, "test_estimator_fit_returns_self_and_takes_y"),
    "check_readonly_memmap_input": (2, "test_estimator_report_containers"),
    "check_n_features_in_after_fitting": (4, "test_estimator_n_features_in"),
    "check_positive_only_tag_during_fit": (4, "test_estimator_negative_labels"),
    "check_estimators_dtypes": (5, "test_estimator_report_containers"),
    "check_dtype_object": (10, "test_estimator_report_containers"),
    "check_fit2d_1sample": (10, "test_estimator_one_report_and_empty"),
    "check_fit2d_1feature": (1, "test_estimator_n_features_in"),
    "check_fit_idempotent": (2, "test_estimator_fit_idempotent"),
    "check_fit_check_is_fitted": (
        2, "test_estimator_fit_returns_self_and_takes_y"),
    "check_n_features_in": (2, "test_estimator_n_features_in"),
}
# ... and checks fed 3 columns of values other than 0/1 (3 * uniform, rounded).
RAPPOR_ESTIMATOR_VALUE_XFAILS = {
    "check_dont_overwrite_parameters": "test_estimator_keeps_params_and_dict",
    "check_f_contiguous_array_estimator": "test_estimator_report_containers",
    "check_methods_sample_order_invariance": "test_deterministic_invariances",
    "check_methods_subset_invariance": "test_deterministic_invariances",
    "check_dict_unchanged": "test_estimator_keeps_params_and_dict",
    "check_fit2d_predict1d": "test_estimator_1d_reports",
}


def _expected_failures(estimator):
    """{check_name: (reason, regex the failure's message must match)}."""
    name = type(estimator).__name__
    out = {}
    if not hasattr(estimator, "mechanism"):  # a mechanism
        table = dict(MECHANISM_XFAILS)
        if isinstance(estimator, NonPrivate):
            table.update(DETERMINISTIC_XFAILS)
        for check, (n, test) in table.items():
            out[check] = (
                f"{name} privatizes ONE categorical column (X of shape (n, 1)); "
                f"this check fits it on {n} numeric features, which it refuses "
                "('privatizes one column'). Tested on one column in "
                f"{SINGLE_COLUMN}{test}.",
                rf"privatizes one column, got {n}\b",
            )
        if _is_bits(estimator):
            reason, pattern = out["check_transformer_preserve_dtypes"]
            out["check_transformer_preserve_dtypes"] = (
                reason + " On one column it would fail too: the reports are "
                "uint8 bits, but the preserves_dtype tag still claims float64 "
                f"({SINGLE_COLUMN}"
                "test_bit_vector_mechanisms_do_not_claim_to_preserve_dtype).",
                pattern,
            )
        return out
    mech = type(estimator.mechanism).__name__
    if isinstance(estimator.mechanism, RandomizedResponse):
        for check, (n, test) in RR_ESTIMATOR_XFAILS.items():
            out[check] = (
                f"reports of {mech} are one value per user (one column); this "
                f"check fits {name} on {n} numeric columns, which the channel "
                "refuses (ReportMismatchError). Tested on real reports in "
                f"{SINGLE_COLUMN}{test}.",
                rf"Expected reports of shape \(n,\) or \(n, 1\), got shape "
                rf"\(\d+, {n}\)",
            )
        return out
    for check, (n, test) in RAPPOR_ESTIMATOR_SHAPE_XFAILS.items():
        out[check] = (
            f"reports of {mech} over 3 categories are 3 bit columns; this check "
            f"fits {name} on {n} columns, which the channel refuses "
            "(ReportMismatchError). Tested on real reports in "
            f"{SINGLE_COLUMN}{test}.",
            rf"shape \(n, 3\); got shape \(\d+, {n}\)",
        )
    for check in ("check_estimator_sparse_array", "check_estimator_sparse_matrix"):
        out[check] = (
            f"fit on the check's sparse 0/1 matrix succeeds (valid {mech} "
            "reports), but the check then treats predict_proba as a "
            "classifier's: it reads tags.classifier_tags.multi_class (None for "
            "a non-classifier) and expects (n, 2) or (n, 4) probabilities, "
            f"while {name} returns the posterior over the 3 categories. Tested "
            f"in {SINGLE_COLUMN}test_estimator_sparse_reports.",
            r"'NoneType' object has no attribute 'multi_class'",
        )
    for check, test in RAPPOR_ESTIMATOR_VALUE_XFAILS.items():
        out[check] = (
            f"reports of {mech} are 0/1 bits; this check feeds {name} values "
            "other than 0 and 1 (rounded 3 * uniform noise), which the channel "
            "refuses (ReportMismatchError). Tested on real reports in "
            f"{SINGLE_COLUMN}{test}.",
            r"must hold only 0 and 1",
        )
    return out


def expected_failed_checks(estimator):
    return {check: reason for check, (reason, _) in
            _expected_failures(estimator).items()}


# ``xfail_strict`` appeared in scikit-learn 1.7; on 1.6 listed checks that
# start passing are reported as XPASS instead of failing.
_STRICT = (
    {"xfail_strict": True}
    if "xfail_strict" in inspect.signature(parametrize_with_checks).parameters
    else {}
)


@parametrize_with_checks(
    make_mechanisms() + make_estimators(),
    expected_failed_checks=expected_failed_checks,
    **_STRICT,
)
def test_sklearn_compatible_estimator(estimator, check):
    try:
        check(estimator)
    except unittest.SkipTest:
        raise
    except Exception as exc:
        # Re-raise with the traceback as text: pytest would otherwise parse
        # the 5000-line estimator_checks.py for every frame of every expected
        # failure (about 1 s each), which dominated the runtime.
        text = "".join(traceback.format_exception(exc))
        raise AssertionError(f"{type(exc).__name__}: {exc}\n\n{text}") from None


def _expected_failure_cases():
    for estimator in make_mechanisms() + make_estimators():
        expected = _expected_failures(estimator)
        for est, check in estimator_checks_generator(estimator, mark=None):
            name = getattr(check, "func", check).__name__
            if name in expected:
                label = re.sub(r"\s+", "", repr(est))[:40]
                yield pytest.param(est, check, expected[name][1],
                                   id=f"{label}-{name}")


@pytest.mark.parametrize("estimator, check, pattern", list(_expected_failure_cases()))
def test_expected_failures_fail_for_the_stated_reason(estimator, check, pattern):
    """Each expected failure fails, and only for the reason given above."""
    name = getattr(check, "func", check).__name__
    if name == "check_positive_only_tag_during_fit" and parse_version(
        sklearn.__version__
    ) < parse_version("1.7"):
        pytest.skip(
            "scikit-learn 1.6's version of this check subtracts in place from "
            "an int32 X of categorical-tagged estimators and fails before it "
            "reaches the estimator (fixed in 1.7)."
        )
    with pytest.raises(Exception) as info:
        check(estimator)
    messages = []
    exc = info.value
    while exc is not None:  # the check may wrap the estimator's error
        messages.append(str(exc))
        exc = exc.__cause__ or exc.__context__
    assert any(re.search(pattern, m) for m in messages), messages


def test_expected_failures_name_existing_tests():
    """Every reason points to a test of this module that exists."""
    names = set(globals())
    for estimator in make_mechanisms() + make_estimators():
        for reason in expected_failed_checks(estimator).values():
            tests = re.findall(r"::(\w+)", reason)
            assert tests, reason
            for test in tests:
                assert test in names, test


# ===================================================================
# The same properties on valid data: one categorical column / real reports
# ===================================================================
def _column(n=60, seed=0, dtype=np.int64):
    rng = np.random.default_rng(seed)
    return rng.integers(0, len(CATS), size=(n, 1)).astype(dtype)


@pytest.fixture(params=range(5), ids=MECHANISM_IDS)
def mechanism(request):
    return make_mechanisms()[request.param]


@pytest.fixture(params=range(6), ids=ESTIMATOR_IDS)
def estimator(request):
    return make_estimators()[request.param]


def _reports_for(estimator, n=80, seed=0):
    """Real reports of the estimator's mechanism (a fresh seeded clone)."""
    mech = clone(estimator.mechanism).set_params(random_state=seed)
    X = np.random.default_rng(seed).integers(0, 3, size=(n, 1))
    return mech.fit(X).transform(X)


# ------------------------------------------------------------- mechanisms
def test_mechanism_fit_returns_self_and_takes_y(mechanism):
    X = _column()
    with pytest.raises(NotFittedError):
        check_is_fitted(mechanism)
    with pytest.raises(NotFittedError):
        mechanism.transform(X)
    y = np.arange(X.shape[0])
    assert mechanism.fit(X, y) is mechanism
    check_is_fitted(mechanism)
    assert mechanism.fit_transform(X, y).shape[0] == X.shape[0]


def test_mechanism_n_features_in(mechanism):
    X = _column()
    assert not hasattr(mechanism, "n_features_in_")
    mechanism.fit(X)
    assert mechanism.n_features_in_ == 1
    assert not hasattr(mechanism, "feature_names_in_")
    with pytest.raises(ValueError, match="X has 2 features, but .* expecting 1"):
        mechanism.transform(np.hstack([X, X]))

    frame = pd.DataFrame({"city": X[:, 0]})
    mechanism.fit(frame)
    assert mechanism.n_features_in_ == 1
    assert_array_equal(mechanism.feature_names_in_, ["city"])
    with pytest.raises(ValueError, match="feature names should match"):
        mechanism.transform(pd.DataFrame({"town": X[:, 0]}))


@pytest.mark.parametrize(
    "dtype", [np.int32, np.int64, np.float32, np.float64, object, str]
)
def test_mechanism_input_dtypes(mechanism, dtype):
    categories = np.asarray(CATS).astype(dtype).tolist()
    mechanism.set_params(categories=categories)
    if "sensitive" in mechanism.get_params():
        mechanism.set_params(sensitive=categories[:2])
    X = _column(dtype=dtype)
    X_before = X.copy()
    out = mechanism.fit_transform(X)
    assert_array_equal(X, X_before)
    if _is_bits(mechanism):
        assert out.shape == (X.shape[0], len(CATS))
        assert out.dtype == np.uint8
    else:
        assert out.shape == X.shape
        assert set(np.asarray(out).ravel().tolist()) <= set(categories)
        if np.dtype(dtype).kind in "iuf":  # numeric input dtypes are preserved
            assert out.dtype == X.dtype


def test_mechanism_negative_categories(mechanism):
    # input_tags.positive_only is False: negative values are ordinary labels.
    cats = [-3, -2, -1, 0, 1, 2]
    params = {"categories": cats}
    if "sensitive" in mechanism.get_params():
        params["sensitive"] = [-3]
    X = _column() - 3
    out = mechanism.set_params(**params).fit_transform(X)
    assert out.shape[0] == X.shape[0]


def test_mechanism_input_containers(mechanism):
    X = _column()
    expected = clone(mechanism).fit_transform(X)
    variants = {
        "list": X.tolist(),
        "fortran": np.asfortranarray(X),
        "readonly memmap": create_memmap_backed_data(X),
        "DataFrame": pd.DataFrame({"x0": X[:, 0]}),
        "Series": pd.Series(X[:, 0], name="x0"),
    }
    for name, data in variants.items():
        out = clone(mechanism).fit_transform(data)
        assert_array_equal(np.asarray(out), np.asarray(expected), err_msg=name)


def test_mechanism_pickle_round_trip(mechanism):
    X = _column()
    mechanism.fit(X)
    restored = pickle.loads(pickle.dumps(mechanism))
    assert restored.channel_ == mechanism.channel_
    assert restored.get_params() == mechanism.get_params()
    # The random stream is part of the state: both produce the same reports.
    assert_array_equal(np.asarray(restored.transform(X)),
                       np.asarray(mechanism.transform(X)))


def test_mechanism_reproducible(mechanism):
    X = _column(n=200)
    a = np.asarray(clone(mechanism).fit_transform(X))
    b = np.asarray(clone(mechanism).fit(X).transform(X))
    assert_array_equal(a, b)  # fit_transform == fit().transform
    mechanism.fit(X)
    first = np.asarray(mechanism.transform(X))
    mechanism.fit(X)  # refitting restarts the seeded stream (idempotent fit)
    assert_array_equal(np.asarray(mechanism.transform(X)), first)
    if not isinstance(mechanism, NonPrivate):
        # ... while successive transforms draw fresh noise.
        assert not np.array_equal(np.asarray(mechanism.transform(X)), first)


def test_mechanism_fit_keeps_params(mechanism):
    params = mechanism.get_params()
    snapshot = copy.deepcopy(params)
    mechanism.fit(_column())
    after = mechanism.get_params()
    for key, value in params.items():
        assert after[key] is value, key
        assert_array_equal(np.asarray(after[key], dtype=object),
                           np.asarray(snapshot[key], dtype=object))
    public = [k for k in vars(mechanism) if not k.startswith("_")
              and not k.endswith("_")]
    assert sorted(public) == sorted(params)


def test_mechanism_transform_keeps_dict(mechanism):
    X = _column()
    mechanism.fit(X)
    before = dict(vars(mechanism))
    mechanism.transform(X)
    assert vars(mechanism).keys() == before.keys()
    for key, value in before.items():
        assert vars(mechanism)[key] is value, key


def test_mechanism_one_sample_and_empty(mechanism):
    out = mechanism.fit_transform(np.array([[2]]))
    assert out.shape[0] == 1
    with pytest.raises(ValueError, match=r"0 sample\(s\) \(shape=\(0, 1\)\)"):
        mechanism.fit(np.empty((0, 1), dtype=np.int64))
    with pytest.raises(ValueError, match=r"0 feature\(s\)"):
        mechanism.fit(np.empty((5, 0), dtype=np.int64))


def test_mechanism_rejects_1d_input(mechanism):
    X = _column()
    mechanism.fit(X)
    with pytest.raises(ValueError, match="Reshape your data"):
        mechanism.transform(X[:, 0])


def test_mechanism_complex_input(mechanism):
    with pytest.raises(ValueError, match="Complex data not supported"):
        mechanism.fit(np.array([[1 + 1j], [2 + 0j]]))


def test_mechanism_tags(mechanism):
    tags = mechanism.__sklearn_tags__()
    assert tags.input_tags.categorical and tags.input_tags.string
    assert tags.input_tags.allow_nan  # NaN may be a category
    assert not tags.input_tags.positive_only
    assert tags.requires_fit
    assert tags.non_deterministic is not isinstance(mechanism, NonPrivate)


@pytest.mark.parametrize("cls", [RAPPOR, UtilityOptimizedRAPPOR])
def test_bit_vector_mechanisms_do_not_claim_to_preserve_dtype(cls):
    mech = cls(categories=CATS, **({"sensitive": [0]} if cls is not RAPPOR else {}))
    X = _column(dtype=np.float64)
    assert mech.fit_transform(X).dtype != np.float64
    assert mech.__sklearn_tags__().transformer_tags.preserves_dtype == []


# -------------------------------------------------------------- estimators
def test_estimator_fit_returns_self_and_takes_y(estimator):
    R = _reports_for(estimator)
    with pytest.raises(NotFittedError):
        check_is_fitted(estimator)
    for method in ("predict_proba", "score"):
        with pytest.raises(NotFittedError):
            getattr(estimator, method)(R)
    y = np.zeros(R.shape[0])
    assert estimator.fit(R, y) is estimator
    check_is_fitted(estimator)
    assert np.isfinite(estimator.score(R, y))
    assert estimator.partial_fit(R, y) is estimator


def test_estimator_n_features_in(estimator):
    R = _reports_for(estimator)
    n_cols = 3 if _is_bits(estimator.mechanism) else 1
    assert not hasattr(estimator, "n_features_in_")
    estimator.fit(R)
    assert estimator.n_features_in_ == n_cols
    assert not hasattr(estimator, "feature_names_in_")
    bad = np.hstack([np.asarray(R), np.asarray(R)[:, :1]])
    for method in ("predict_proba", "score", "partial_fit"):
        with pytest.raises(
            ValueError,
            match=rf"X has {n_cols + 1} features|shape \(n, 3\); got shape",
        ):
            getattr(estimator, method)(bad)

    mech = clone(estimator.mechanism).set_output(transform="pandas")
    frame = pd.DataFrame({"city": np.random.default_rng(0).integers(0, 3, 50)})
    R_df = mech.fit_transform(frame)
    estimator.fit(R_df)
    assert_array_equal(estimator.feature_names_in_, R_df.columns)
    renamed = R_df.rename(columns=lambda c: "other_" + c)
    with pytest.raises(ValueError, match="feature names should match"):
        estimator.predict_proba(renamed)


def test_estimator_report_containers(estimator):
    R = _reports_for(estimator)
    reference = clone(estimator).fit(R)
    arr = np.asarray(R)
    variants = {
        "fortran": np.asfortranarray(arr),
        "readonly memmap": create_memmap_backed_data(arr),
        "list": arr.tolist(),
        "DataFrame": pd.DataFrame(arr),
        "int32": arr.astype(np.int32),
        "float32": arr.astype(np.float32),
        "float64": arr.astype(np.float64),
    }
    if _is_bits(estimator.mechanism):
        variants["bool"] = arr.astype(bool)
        variants["csr"] = sp.csr_array(arr)
    else:
        variants["object"] = arr.astype(object)
    for name, data in variants.items():
        before = copy.deepcopy(data)
        est = clone(estimator).fit(data)
        assert_allclose(est.distribution_, reference.distribution_, err_msg=name)
        assert_allclose(est.predict_proba(data), reference.predict_proba(R),
                        err_msg=name)
        if isinstance(data, np.ndarray):
            assert_array_equal(data, before)


def test_estimator_negative_labels():
    # positive_only is False: reports may be any labels of the domain.
    mech = RandomizedResponse(categories=[-2, -1, 0], random_state=0)
    X = np.random.default_rng(0).integers(-2, 1, size=(100, 1))
    R = mech.fit_transform(X)
    for cls in ESTIMATOR_CLASSES:
        est = cls(mechanism=mech.channel_).fit(np.asarray(R))
        assert est.predict_proba(np.asarray(R)).shape == (100, 3)


def test_estimator_pickle_round_trip(estimator):
    R = _reports_for(estimator)
    estimator.fit(R)
    restored = pickle.loads(pickle.dumps(estimator))
    assert restored.channel_ == estimator.channel_
    assert_array_equal(restored.distribution_, estimator.distribution_)
    assert_array_equal(restored.predict_proba(R), estimator.predict_proba(R))
    assert restored.score(R) == estimator.score(R)
    # partial_fit continues from the restored statistics.
    restored.partial_fit(R)
    assert restored.n_reports_ == 2 * R.shape[0]


def test_estimator_fit_idempotent(estimator):
    R = _reports_for(estimator)
    estimator.fit(R)
    first = estimator.distribution_
    proba = estimator.predict_proba(R)
    estimator.fit(R)
    assert_array_equal(estimator.distribution_, first)
    assert_array_equal(estimator.predict_proba(R), proba)
    assert estimator.n_reports_ == R.shape[0]


def test_estimator_keeps_params_and_dict(estimator):
    R = _reports_for(estimator)
    params = estimator.get_params(deep=False)
    estimator.fit(R)
    for key, value in params.items():
        assert estimator.get_params(deep=False)[key] is value, key
    assert not hasattr(estimator.mechanism, "statistics_")
    before = dict(vars(estimator))
    estimator.predict_proba(R)
    estimator.score(R)
    assert vars(estimator).keys() == before.keys()
    for key, value in before.items():
        assert vars(estimator)[key] is value, key


def test_estimator_one_report_and_empty(estimator):
    R = _reports_for(estimator)
    est = clone(estimator).fit(R[:1])
    assert est.n_reports_ == 1
    assert est.predict_proba(R[:1]).shape == (1, 3)
    with pytest.raises(ValueError, match=r"0 sample\(s\)"):
        clone(estimator).fit(np.asarray(R)[:0])
    with pytest.raises(ValueError, match=r"0 feature\(s\) \(shape=\(4, 0\)\)"):
        clone(estimator).fit(np.empty((4, 0)))


def test_estimator_1d_reports(estimator):
    R = _reports_for(estimator)
    estimator.fit(R)
    if _is_bits(estimator.mechanism):
        # One bit vector passed as 1-D is ambiguous: ask to reshape.
        with pytest.raises(ValueError, match="Reshape your data"):
            estimator.predict_proba(np.asarray(R)[0])
    else:
        # One value per user: (n,) and (n, 1) are the same reports.
        flat = np.asarray(R)[:, 0]
        assert_allclose(estimator.predict_proba(flat), estimator.predict_proba(R))
        assert_allclose(clone(estimator).fit(flat).distribution_,
                        estimator.distribution_)


def test_estimator_rejects_nan_inf_reports(estimator):
    R = np.asarray(_reports_for(estimator)).astype(float)
    estimator.fit(R)
    for bad_value in (np.nan, np.inf):
        bad = R.copy()
        bad[0, 0] = bad_value
        for method in ("fit", "partial_fit", "predict_proba", "score"):
            with pytest.raises(ReportMismatchError, match="NaN or infinity"):
                getattr(clone(estimator).fit(R) if method != "fit"
                        else clone(estimator), method)(bad)


def test_estimator_complex_reports(estimator):
    with pytest.raises(ValueError, match="Complex data not supported"):
        estimator.fit(np.array([[1 + 1j], [0 + 0j]]))


def test_estimator_sparse_reports(estimator):
    R = _reports_for(estimator)
    dense = np.asarray(R)
    if _is_bits(estimator.mechanism):
        assert estimator.__sklearn_tags__().input_tags.sparse
        for fmt in (sp.csr_array, sp.csr_matrix, sp.csc_array, sp.coo_matrix):
            est = clone(estimator).fit(fmt(dense))
            assert_allclose(est.distribution_, clone(estimator).fit(dense)
                            .distribution_)
            assert_allclose(est.predict_proba(fmt(dense)), est.predict_proba(dense))
    else:
        assert not estimator.__sklearn_tags__().input_tags.sparse
        with pytest.raises(TypeError, match="sparse"):
            estimator.fit(sp.csr_array(dense.astype(float)))


def test_estimator_tags(estimator):
    tags = estimator.__sklearn_tags__()
    assert tags.requires_fit and tags.input_tags.categorical
    assert not tags.input_tags.positive_only
    # Without a mechanism the reports may be sparse bit vectors.
    assert type(estimator)().__sklearn_tags__().input_tags.sparse
    nan_mech = RandomizedResponse(categories=["a", np.nan]).fit()
    assert type(estimator)(mechanism=nan_mech).__sklearn_tags__().input_tags.allow_nan


# ------------------------------------- deterministic methods: invariances
def _deterministic_cases():
    yield pytest.param("NonPrivate", id="NonPrivate")
    for eid in ESTIMATOR_IDS:
        yield pytest.param(eid, id=eid)


@pytest.mark.parametrize("case", list(_deterministic_cases()))
def test_deterministic_invariances(case):
    """Row order / subsets / a Pipeline do not change deterministic outputs."""
    from sklearn.pipeline import make_pipeline

    if case == "NonPrivate":
        est = NonPrivate(categories=CATS)
        X = _column()
        est.fit(X)
        methods = {"transform": lambda e, Z: np.asarray(e.transform(Z))}
        pipe_out = np.asarray(make_pipeline(clone(est)).fit(X).transform(X))
        assert_array_equal(pipe_out, methods["transform"](est, X))
    else:
        est = make_estimators()[ESTIMATOR_IDS.index(case)]
        X = _reports_for(est)
        est.fit(X)
        methods = {"predict_proba": lambda e, Z: e.predict_proba(Z)}
        pipe = make_pipeline(clone(est)).fit(X)
        assert_allclose(pipe.predict_proba(X), est.predict_proba(X))
        assert_allclose(pipe.score(X), est.score(X))
    rng = np.random.default_rng(1)
    perm = rng.permutation(X.shape[0])
    for name, method in methods.items():
        full = method(est, X)
        assert_allclose(method(est, X[perm]), full[perm], err_msg=name)
        for batch in np.array_split(np.arange(X.shape[0]), 4):
            assert_allclose(method(est, X[batch]), full[batch], err_msg=name)


def test_reports_keep_the_channel_through_slicing():
    mech = RandomizedResponse(categories=CATS, random_state=0)
    R = mech.fit_transform(_column())
    assert get_channel(R[::2]) == mech.channel_
    assert get_channel(np.asarray(R)) is None
