"""scikit-learn conformance of every public estimator and transformer.

``parametrize_with_checks`` runs scikit-learn's estimator checks on one
instance (or more) of EVERY public estimator class of the package: the
mechanisms, the estimators, and the composites. :data:`CHECKED` maps each
class to a factory of the instances checked, and
:func:`test_every_public_estimator_is_checked` fails when a class exported by
the package is neither there nor in :data:`NOT_CHECKED` (with the reason).

Mechanisms take several columns (each privatized with its own stream, see
docs/architecture.md, "Several columns per mechanism") and are checked over a
public integer domain that holds the checks' rounded data (CHECK_CATS), so
every mechanism whose domain can hold that data passes every check. The
checks that still fail are listed in :func:`expected_failed_checks` with the
reason, run in strict xfail mode (a listed check that starts passing fails the
suite), and :func:`test_expected_failures_fail_for_the_stated_reason`
verifies that each one fails for exactly that reason and no other. They are
of three kinds: an estimator accepts only the reports of its mechanism (the
checks feed it random matrices); the binary mechanism's domain has two values
(the checks' data hold more); and two classes read a fixed column layout or
output labels.

Every property such a check was meant to verify is then tested on valid data
(one categorical column, or real reports) by the tests below it, or in the
module the reason names.
"""

import contextlib
import copy
import importlib
import inspect
import pickle
import pkgutil
import re
import traceback
import unittest
import warnings
from functools import partial

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
import sklearn
from _repo import REPO_ROOT
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import BaseEstimator, clone
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.utils._testing import create_memmap_backed_data
from sklearn.utils.estimator_checks import (
    estimator_checks_generator,
    parametrize_with_checks,
)
from sklearn.utils.fixes import parse_version
from sklearn.utils.validation import check_is_fitted

import sklearn_uldp
from sklearn_uldp import (
    RAPPOR,
    BinaryOptimalResponse,
    BlockHadamardResponse,
    DataFramePrivatizer,
    DistributionEstimator,
    EMEstimator,
    EmpiricalEstimator,
    HadamardResponse,
    HighLowHadamardResponse,
    JointEncoder,
    NonPrivate,
    PersonalizedEstimator,
    PersonalizedMechanism,
    PrivacyLeakWarning,
    PrivacyUtilitySearchCV,
    RandomizedResponse,
    ReportMismatchError,
    RobustFrequencyEstimator,
    ThresholdEstimator,
    UtilityOptimizedBlockDesign,
    UtilityOptimizedOUE,
    UtilityOptimizedRAPPOR,
    UtilityOptimizedRR,
)
from sklearn_uldp.learning import (
    LabelPrivacyClassifier,
    LDPLinearRegression,
    LDPLinearSVC,
    LDPLogisticRegression,
    LDPNaiveBayes,
    PrivatizedGroupReweighter,
)
from sklearn_uldp.longitudinal import (
    DBitFlipPM,
    LongitudinalEstimator,
    LongitudinalGRR,
    LongitudinalLocalHashing,
    LongitudinalUE,
    UtilityOptimizedLongitudinalRAPPOR,
    UtilityOptimizedLongitudinalRR,
)
from sklearn_uldp.marginals import (
    MarginalEstimator,
    MarginalPrivatizer,
    RangeQueryEstimator,
    RangeQueryPrivatizer,
)
from sklearn_uldp.mechanisms import (
    BaseMechanism,
    BinaryLocalHashing,
    CountMeanSketch,
    HadamardCountMeanSketch,
    OptimizedLocalHashing,
    SubsetSelection,
    TransformedSubsetSelection,
    UtilityOptimizedBlockedHadamardResponse,
    UtilityOptimizedHadamardCountMeanSketch,
    UtilityOptimizedHadamardResponse,
    UtilityOptimizedLocalHashing,
    UtilityOptimizedSubsetSelection,
    UtilityOptimizedUnaryEncoding,
    get_channel,
)
from sklearn_uldp.numeric import (
    BaseNumericMechanism,
    Binner,
    DuchiMechanism,
    HybridMechanism,
    MeanEstimator,
    MultiNumericMechanism,
    PiecewiseMechanism,
    SquareWave,
    SquareWaveEstimator,
    UtilityOptimizedOneBitMechanism,
)

# ----------------------------------------------------------------- instances
CATS = [0, 1, 2, 3, 4, 5]
MECHANISM_IDS = ["RR", "RAPPOR", "uRR", "uRAP", "NonPrivate"]


def make_mechanisms():
    """The mechanisms whose properties the tests below check on one column."""
    return [
        RandomizedResponse(epsilon=1.0, categories=CATS, random_state=0),
        RAPPOR(epsilon=1.0, categories=CATS, random_state=0),
        UtilityOptimizedRR(epsilon=1.0, sensitive=[0, 1], categories=CATS, random_state=0),
        UtilityOptimizedRAPPOR(epsilon=1.0, sensitive=[0, 1], categories=CATS, random_state=0),
        NonPrivate(categories=CATS),
    ]


# Estimators are built with `mechanism=` a fitted mechanism: a one-value-per-user
# mechanism (reports are one column) and a bit-vector one (reports are k bits).
RR_3 = RandomizedResponse(epsilon=1.0, categories=[0, 1, 2], random_state=0).fit()
RAPPOR_3 = RAPPOR(epsilon=1.0, categories=[0, 1, 2], random_state=0).fit()
ESTIMATOR_CLASSES = [EmpiricalEstimator, ThresholdEstimator, EMEstimator]
ESTIMATOR_IDS = [f"{cls.__name__}-{kind}" for kind in ("RR", "RAPPOR") for cls in ESTIMATOR_CLASSES]


def make_estimators():
    return [cls(mechanism=mech) for mech in (RR_3, RAPPOR_3) for cls in ESTIMATOR_CLASSES]


def _is_bits(obj):
    return isinstance(obj, (RAPPOR, UtilityOptimizedRAPPOR))


# --------------------------------------- every public class and its instances
# The checks' data are rounded (X - X.min()) values, shifted by their mean in
# check_positive_only_tag_during_fit: integers in -5..14.
CHECK_CATS = list(range(-5, 15))


def _mechanism(cls, **params):
    """Default construction: the integer domain CHECK_CATS, 0 and 1 sensitive
    when the mechanism has a sensitive set, seeded; ``params`` override."""
    accepted = inspect.signature(cls).parameters
    default = {"categories": CHECK_CATS, "sensitive": [0, 1], "random_state": 0}
    default = {k: v for k, v in default.items() if k in accepted}
    return [cls(**{**default, **params})]


# k-RR over the checks' integer domain: its reports are the checks' values.
RR_CHECK = RandomizedResponse(epsilon=1.0, categories=CHECK_CATS, random_state=0).fit()


def _estimator(cls):
    """With a one-value-per-user mechanism (whose reports the checks' data
    are) and with a bit-vector one."""
    return [cls(mechanism=mech) for mech in (RR_CHECK, RAPPOR_3)]


# Marginal reports over two columns of the checks' integer domain.
MARGINAL_CHECK = MarginalPrivatizer(
    1.0, categories={"x0": CHECK_CATS, "x1": CHECK_CATS}, mechanism="RR", random_state=0
).fit()

# Range-query reports over two numeric columns (HDG, explicit grids).
RANGE_CHECK = RangeQueryPrivatizer(
    1.0, bounds={"x0": (-10.0, 20.0), "x1": (-10.0, 20.0)}, granularity=(4, 2), random_state=0
).fit()

# Personalized reports over a domain of 20 cells, one tag column ("home"):
# the checks' rounded noise (values 0..~10) stays inside the domain.
PUM_20 = dict(categories=list(range(20)), tags=["home"])

# Numeric mechanisms: a public range that holds most of the checks' data (the
# rest is clipped, with a ClippingWarning); estimators on their reports.
NUMERIC_BOUNDS = (-10.0, 20.0)


def _numeric(cls, **params):
    return [cls(bounds=NUMERIC_BOUNDS, random_state=0, **params)]


def _numeric_estimator(cls, mechanism, **params):
    return [cls(mechanism=mechanism(bounds=NUMERIC_BOUNDS).fit(), **params)]


# class -> factory(cls) returning the instances that go through the checks.
# A new public mechanism with the usual parameters is one line:
#     NewMechanism: _mechanism,
CHECKED = {
    RandomizedResponse: _mechanism,
    OptimizedLocalHashing: _mechanism,
    BinaryLocalHashing: _mechanism,
    SubsetSelection: _mechanism,
    CountMeanSketch: _mechanism,
    HadamardCountMeanSketch: _mechanism,
    UtilityOptimizedSubsetSelection: _mechanism,
    UtilityOptimizedHadamardResponse: _mechanism,
    RAPPOR: _mechanism,
    UtilityOptimizedRR: _mechanism,
    UtilityOptimizedRAPPOR: _mechanism,
    NonPrivate: _mechanism,
    UtilityOptimizedOUE: _mechanism,
    # the utility-optimized transformation (tests/mechanisms/test_frontier.py)
    UtilityOptimizedUnaryEncoding: _mechanism,
    UtilityOptimizedLocalHashing: _mechanism,
    UtilityOptimizedHadamardCountMeanSketch: partial(_mechanism, n_buckets=16, n_hashes=8),
    UtilityOptimizedBlockedHadamardResponse: _mechanism,
    TransformedSubsetSelection: _mechanism,
    UtilityOptimizedBlockDesign: _mechanism,
    HadamardResponse: _mechanism,
    HighLowHadamardResponse: _mechanism,
    BlockHadamardResponse: partial(_mechanism, blocks=[list(range(-5, 5)), list(range(5, 15))]),
    BinaryOptimalResponse: partial(_mechanism, categories=[0, 1]),
    PersonalizedMechanism: partial(_mechanism, **PUM_20),
    EmpiricalEstimator: _estimator,
    ThresholdEstimator: _estimator,
    EMEstimator: _estimator,
    # detection and recovery from fake users (tests/robustness/)
    RobustFrequencyEstimator: _estimator,
    PersonalizedEstimator: lambda cls: [
        cls(mechanism=PersonalizedMechanism(**PUM_20, random_state=0).fit())
    ],
    # The multi-column object: one mechanism on the first column, the other
    # columns passed through (the checks' rounded noise is in 0..~10).
    DataFramePrivatizer: lambda cls: [
        cls(
            [("x0", RandomizedResponse(categories=list(range(12)), random_state=0), [0])],
            remainder="passthrough",
        )
    ],
    JointEncoder: lambda cls: [cls()],
    # Marginal release: every pair of the checks' columns, domains learned
    # from the data (categories="auto"); the estimator with the spec of a
    # privatizer over two columns of CHECK_CATS.
    MarginalPrivatizer: lambda cls: [cls(random_state=0)],
    MarginalEstimator: lambda cls: [cls(mechanism=MARGINAL_CHECK.channel_)],
    # Range queries: every column of the checks' data, its range learned from
    # the data (bounds="auto"); the estimator with the spec of a privatizer
    # over two columns.
    RangeQueryPrivatizer: lambda cls: [cls(random_state=0)],
    RangeQueryEstimator: lambda cls: [cls(mechanism=RANGE_CHECK.channel_)],
    DuchiMechanism: _numeric,
    PiecewiseMechanism: _numeric,
    HybridMechanism: _numeric,
    SquareWave: _numeric,
    UtilityOptimizedOneBitMechanism: partial(_numeric, sensitive=(0.0, 1.0)),
    MultiNumericMechanism: _numeric,
    Binner: lambda cls: [cls(bounds=NUMERIC_BOUNDS)],
    MeanEstimator: partial(_numeric_estimator, mechanism=PiecewiseMechanism),
    SquareWaveEstimator: partial(_numeric_estimator, mechanism=SquareWave, n_bins=16),
    # Memoized mechanisms: seeded, so rows without user_secrets are
    # simulated users (see docs/longitudinal.md).
    LongitudinalGRR: _mechanism,
    LongitudinalUE: _mechanism,
    LongitudinalLocalHashing: _mechanism,
    DBitFlipPM: _mechanism,
    UtilityOptimizedLongitudinalRR: _mechanism,
    UtilityOptimizedLongitudinalRAPPOR: _mechanism,
    # Learners on privatized data (sklearn_uldp.learning): every row of the
    # checks' data is a user, whose label (or pair, gradient, group) is
    # privatized at fit; numeric learners read the checks' data within
    # NUMERIC_BOUNDS.
    LabelPrivacyClassifier: lambda cls: [cls(LogisticRegression(), epsilon=4.0, random_state=0)],
    LDPNaiveBayes: lambda cls: [cls(epsilon=4.0, random_state=0)],
    LDPLogisticRegression: partial(_numeric, epsilon=4.0),
    LDPLinearSVC: partial(_numeric, epsilon=4.0),
    LDPLinearRegression: lambda cls: [
        cls(
            epsilon=4.0,
            solver=solver,
            bounds=NUMERIC_BOUNDS,
            target_bounds=NUMERIC_BOUNDS,
            random_state=0,
        )
        for solver in ("sgd", "moments")
    ],
    PrivatizedGroupReweighter: lambda cls: [cls(random_state=0)],
}

# Public estimator classes that do not go through the checks, and why.
NOT_CHECKED = {
    BaseMechanism: "abstract base class of the mechanisms (no channel).",
    DistributionEstimator: (
        "base class of the estimators; it is checked through its concrete "
        "subclasses EmpiricalEstimator, ThresholdEstimator and EMEstimator."
    ),
    BaseNumericMechanism: "abstract base class of the numeric mechanisms (no channel).",
    LongitudinalEstimator: (
        "a container of one fitted estimator per round, fitted on a list or "
        "dict of report arrays (one per round); the per-round estimators are "
        "checked classes (EmpiricalEstimator, ThresholdEstimator, EMEstimator) "
        "and its surface is tested in tests/longitudinal/test_longitudinal.py."
    ),
    PrivacyUtilitySearchCV: (
        "a search that builds and simulates the mechanisms itself from a raw "
        "column (like GridSearchCV, which scikit-learn checks only around a "
        "base estimator); its surface is tested in tests/model_selection/test_search.py."
    ),
}
# The open-domain family (sklearn_uldp.heavy_hitters) takes one column of
# items (text, bytes or integers up to 2^64) with no domain, and its
# collectors only their protocol's reports (integer codes, or Bloom rows of a
# fixed width): scikit-learn's checks feed numeric matrices of 2 to 10
# float columns, which every one of them refuses with a clear error, so
# about 28 of the 41 checks of each class would be listed as expected
# failures. Their properties (fit returns self, no parameter or input
# modified, clone/pickle, partial_fit == fit, errors on foreign reports,
# pandas output) are tested on items and real reports in
# tests/heavy_hitters/test_heavy_hitters.py.
_OPEN_DOMAIN = (
    "open-domain mechanism/collector (one column of items, or its protocol's "
    "reports only); tested in tests/heavy_hitters/test_heavy_hitters.py."
)
NOT_CHECKED.update(
    {
        sklearn_uldp.PrefixExtendingMethod: _OPEN_DOMAIN,
        sklearn_uldp.TreeHist: _OPEN_DOMAIN,
        sklearn_uldp.HeavyHitterEstimator: _OPEN_DOMAIN,
        sklearn_uldp.BloomRAPPOR: _OPEN_DOMAIN,
        sklearn_uldp.BloomRAPPORDecoder: _OPEN_DOMAIN,
        sklearn_uldp.UtilityOptimizedHeavyHitters: _OPEN_DOMAIN,
        sklearn_uldp.heavy_hitters.UtilityOptimizedLocalHashingHeavyHitters: (
            _OPEN_DOMAIN.replace("test_heavy_hitters", "test_frontier_heavy_hitters")
        ),
    }
)


def _public_estimator_classes():
    """Every BaseEstimator subclass in the __all__ of the package or of one of
    its public subpackages, as exported when the tests run."""
    modules = [sklearn_uldp] + [
        importlib.import_module(f"sklearn_uldp.{info.name}")
        for info in pkgutil.iter_modules(sklearn_uldp.__path__)
        if info.ispkg and not info.name.startswith("_")
    ]
    classes = set()
    for module in modules:
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name, None)
            if inspect.isclass(obj) and issubclass(obj, BaseEstimator):
                classes.add(obj)
    return classes


def all_instances():
    return [est for cls, factory in CHECKED.items() for est in factory(cls)]


def test_every_public_estimator_is_checked():
    """A public estimator cannot be forgotten by the check suite."""
    public = _public_estimator_classes()
    missing = public - set(CHECKED) - set(NOT_CHECKED)
    assert not missing, (
        "Public estimators not in test_common.CHECKED (add `Class: _mechanism,` "
        "or a factory) nor in NOT_CHECKED (with the reason): "
        f"{sorted(c.__name__ for c in missing)}"
    )
    # ... and the tables name only public classes.
    stale = (set(CHECKED) | set(NOT_CHECKED)) - public
    assert not stale, sorted(c.__name__ for c in stale)
    for cls, factory in CHECKED.items():
        assert all(type(est) is cls for est in factory(cls)), cls


# --------------------------------------------------- expected failed checks
SINGLE_COLUMN = "tests/package/test_common.py::"

# The binary mechanism (domain [0, 1]): checks whose data hold other values.
# check -> the test of the same property on binary data.
BINARY_XFAILS = {
    check: "test_binary_mechanism_on_binary_data"
    for check in (
        "check_estimators_overwrite_params",
        "check_dont_overwrite_parameters",
        "check_estimators_fit_returns_self",
        "check_readonly_memmap_input",
        "check_n_features_in_after_fitting",
        "check_positive_only_tag_during_fit",
        "check_estimators_dtypes",
        "check_f_contiguous_array_estimator",
        "check_transformer_data_not_an_array",
        "check_transformer_general",
        "check_transformer_preserve_dtypes",
        "check_fit2d_1sample",
        "check_dict_unchanged",
        "check_fit_idempotent",
        "check_fit_check_is_fitted",
        "check_n_features_in",
        "check_fit2d_predict1d",
    )
}
BINARY_XFAILS["check_fit2d_1feature"] = "test_binary_mechanism_refuses_other_values"

# Estimator with RAPPOR over 3 categories (reports: 3 bit columns). Checks
# fed another number of columns: check -> (columns fed, test).
RAPPOR_ESTIMATOR_SHAPE_XFAILS = {
    "check_estimators_overwrite_params": (2, "test_estimator_keeps_params_and_dict"),
    "check_estimators_fit_returns_self": (2, "test_estimator_fit_returns_self_and_takes_y"),
    "check_readonly_memmap_input": (2, "test_estimator_report_containers"),
    "check_n_features_in_after_fitting": (4, "test_estimator_n_features_in"),
    "check_positive_only_tag_during_fit": (4, "test_estimator_negative_labels"),
    "check_estimators_dtypes": (5, "test_estimator_report_containers"),
    "check_dtype_object": (10, "test_estimator_report_containers"),
    "check_fit2d_1sample": (10, "test_estimator_one_report_and_empty"),
    "check_fit2d_1feature": (1, "test_estimator_n_features_in"),
    "check_fit_idempotent": (2, "test_estimator_fit_idempotent"),
    "check_fit_check_is_fitted": (2, "test_estimator_fit_returns_self_and_takes_y"),
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


# Mechanisms that read their input by column layout rather than one column.
# PersonalizedMechanism: X is n_reports=1 value column then the tag column.
PUM_COLUMN_XFAILS = [
    "check_fit_score_takes_y",
    "check_dont_overwrite_parameters",
    "check_n_features_in_after_fitting",
    "check_positive_only_tag_during_fit",
    "check_estimators_dtypes",
    "check_complex_data",
    "check_dtype_object",
    "check_estimators_empty_data_messages",
    "check_estimators_pickle",
    "check_f_contiguous_array_estimator",
    "check_transformer_data_not_an_array",
    "check_transformer_general",
    "check_fit2d_1sample",
    "check_fit2d_1feature",
    "check_dict_unchanged",
    "check_fit2d_predict1d",
]

PERSONALIZED_ESTIMATOR_XFAILS = {
    "check_positive_only_tag_during_fit": (
        "negative values are not outputs of the channel (its outputs are the "
        "domain and the bot labels) and are refused (ReportMismatchError)",
        "test_personalized_estimator_refuses_foreign_reports",
        r"outside the outputs of",
    ),
}

# JointEncoder maps each row to a string label ("0.0|3.0|1.0"); these checks
# compare two outputs numerically (assert_allclose), so they fail on any
# string output. Each property is tested on the labels in the test named.
JOINT_ENCODER_XFAILS = {
    "check_pipeline_consistency": "test_joint_encoder_array_input",
    "check_estimators_pickle": "test_joint_encoder_array_input",
    "check_transformer_data_not_an_array": "test_joint_encoder_array_input",
    "check_transformer_general": "test_joint_encoder_array_input",
    "check_methods_sample_order_invariance": "test_joint_encoder_array_input",
    "check_methods_subset_invariance": "test_joint_encoder_array_input",
    "check_fit_idempotent": "test_joint_encoder_array_input",
}

# The learners of sklearn_uldp.learning privatize at fit: each row of the
# checks' data is a user whose label, pair, gradient or group gets fresh
# noise. Two kinds of checks cannot pass for that reason alone; each property
# is tested on enough users (or with the noise accounted for) in the test named.
LEARNING_TESTS = "tests/learning/test_learning.py::"
LEARNERS = (
    LabelPrivacyClassifier,
    LDPNaiveBayes,
    LDPLogisticRegression,
    LDPLinearSVC,
    LDPLinearRegression,
    PrivatizedGroupReweighter,
)
# The accuracy (R^2) thresholds of these checks, asserted bare, on 30 to 300
# rows: LDP-SGD's users each report one noisy gradient, so a few hundred
# users move the model by little more than noise.
_FEW_USERS = (
    "the check's data are 30 to 300 users, and each LDP-SGD user reports one "
    "perturbed gradient: too few to reach the check's accuracy (R^2) threshold"
)
_BARE_ASSERT = r"^$"
LEARNING_XFAILS = {
    LabelPrivacyClassifier: {
        check: (
            "fit privatizes the labels afresh, so a row repeated twice gets two "
            "independent label reports while a row of weight 2 gets one: the two "
            "fits differ by the noise, not by the weights (which multiply the "
            "posterior weights)",
            "test_label_privacy_sample_weight",
            r"fitting with `sample_weight` is not equivalent",
        )
        for check in (
            "check_sample_weight_equivalence_on_dense_data",
            "check_sample_weight_equivalence_on_sparse_data",
        )
    },
    LDPLogisticRegression: {
        "check_classifiers_train": (_FEW_USERS, "test_ldp_sgd_classifiers_learn", _BARE_ASSERT)
    },
    LDPLinearSVC: {
        "check_classifiers_train": (_FEW_USERS, "test_ldp_sgd_classifiers_learn", _BARE_ASSERT)
    },
    LDPLinearRegression: {
        "check_regressors_train": (
            _FEW_USERS.replace(
                "LDP-SGD user reports one perturbed gradient",
                "user reports one perturbed gradient (or row)",
            ),
            "test_ldp_linear_regression_recovers_coefficients",
            _BARE_ASSERT,
        )
    },
}

# A check that fails because of a defect of the class, not of the check's
# data, is listed with a reason starting with KNOWN_DEFECT and the fix to
# make (strict: the fix makes it XPASS and fails the suite, so the entry is
# removed with the fix). None is listed today.
KNOWN_DEFECT = "KNOWN DEFECT, to fix: "

# assert_allclose on string arrays: numpy >= 2 fails on the subtraction,
# numpy < 2 (CI's lower-bound job) earlier, on isfinite.
STR_COMPARISON = (
    r"unsupported operand type\(s\) for -: 'str' and 'str'"
    r"|ufunc 'isfinite' not supported for the input types"
)

# scikit-learn 1.6's check_positive_only_tag_during_fit subtracts in place from
# an int32 X for categorical-tagged estimators, failing before it reaches the
# estimator (fixed in 1.7); CI's lower-bound job runs 1.6.
SKLEARN_16_XFAILS = (
    {
        "check_positive_only_tag_during_fit": "scikit-learn < 1.7: the check fails on its "
        "own int32 data (fixed in 1.7). "
        f"Negative values are tested in {SINGLE_COLUMN}test_mechanism_negative_categories."
    }
    if parse_version(sklearn.__version__) < parse_version("1.7")
    else {}
)


# Estimators of numeric reports: the checks feed them random floats, which
# are not outputs of the channel (reports lie on its grid of 2**16 cells, or
# are two fixed values); check -> the test of the property on real reports.
NUMERIC_ESTIMATOR_XFAILS = {
    check: "test_numeric_estimators_on_real_reports"
    for check in (
        "check_fit_score_takes_y",
        "check_estimators_overwrite_params",
        "check_dont_overwrite_parameters",
        "check_estimators_fit_returns_self",
        "check_readonly_memmap_input",
        "check_n_features_in_after_fitting",
        "check_positive_only_tag_during_fit",
        "check_estimators_dtypes",
        "check_dtype_object",
        "check_pipeline_consistency",
        "check_estimators_nan_inf",
        "check_estimators_pickle",
        "check_f_contiguous_array_estimator",
        "check_methods_sample_order_invariance",
        "check_methods_subset_invariance",
        "check_fit2d_1sample",
        "check_fit2d_1feature",
        "check_dict_unchanged",
        "check_fit_idempotent",
        "check_fit_check_is_fitted",
        "check_n_features_in",
        "check_fit2d_predict1d",
    )
}


def _expected_failures(estimator):
    """{check_name: (reason, regex the failure's message must match)}."""
    name = type(estimator).__name__
    out = {}
    if isinstance(estimator, LEARNERS):
        return {
            check: (f"{why}. Tested in {LEARNING_TESTS}{test}.", pattern)
            for check, (why, test, pattern) in LEARNING_XFAILS.get(type(estimator), {}).items()
        }
    if isinstance(estimator, (BaseNumericMechanism, Binner)):
        return {
            "check_fit1d": (
                f"a 1-D array is one column for {name}, as for every mechanism of the "
                "package, so fitting on it succeeds. Tested in "
                f"{SINGLE_COLUMN}test_numeric_one_d_input_is_one_column.",
                r"Did not raise",
            )
        }
    if isinstance(estimator, (MeanEstimator, SquareWaveEstimator)):
        return {
            check: (
                f"reports of {type(estimator.mechanism).__name__} are values of its "
                "finite output grid; this check feeds random floats, which the "
                f"channel refuses (ReportMismatchError). Tested on real reports in "
                f"{SINGLE_COLUMN}{test}.",
                r"cannot produce",
            )
            for check, test in NUMERIC_ESTIMATOR_XFAILS.items()
        }
    if isinstance(estimator, DataFramePrivatizer):
        return out  # the multi-column object passes every check
    if isinstance(estimator, (MarginalPrivatizer, MarginalEstimator)):
        return _marginal_failures(estimator)
    if isinstance(estimator, (RangeQueryPrivatizer, RangeQueryEstimator)):
        return _range_failures(estimator)
    if isinstance(estimator, JointEncoder):
        return {
            check: (
                f"{name} outputs string joint labels, which this check compares "
                "numerically (assert_allclose). Tested on the labels in "
                f"{SINGLE_COLUMN}{test}.",
                STR_COMPARISON,
            )
            for check, test in JOINT_ENCODER_XFAILS.items()
        }
    if isinstance(estimator, PersonalizedMechanism):
        for check in PUM_COLUMN_XFAILS:
            out[check] = (
                f"{name} reads X as n_reports value columns then one column per "
                "tag (here 1 + 1); this check fits it on another number of "
                "numeric columns, which it refuses, naming the value and tag "
                "columns. Tested on a valid layout in "
                f"{SINGLE_COLUMN}test_personalized_mechanism_layout.",
                r"value columns \(\[.*\]\) besides the tag columns",
            )
        out["check_fit_idempotent"] = (
            f"reports of {name} mix the domain's values with the bot label "
            "'⊥home' (an object array), which this check compares numerically. "
            f"Tested in {SINGLE_COLUMN}test_personalized_mechanism_layout.",
            STR_COMPARISON,
        )
        return out
    if isinstance(estimator, BinaryOptimalResponse):
        for check, test in BINARY_XFAILS.items():
            out[check] = (
                f"{name} has a binary domain (here [0, 1]); this check's data "
                "hold other integers, which are refused as unknown categories "
                "(a ValueError naming them). Tested on binary data in "
                f"{SINGLE_COLUMN}{test}.",
                r"unknown categor",
            )
        return out
    if isinstance(estimator, BaseMechanism):
        return out  # every check passes
    mech = type(estimator.mechanism).__name__
    if isinstance(estimator, PersonalizedEstimator):
        for check, (why, test, pattern) in PERSONALIZED_ESTIMATOR_XFAILS.items():
            out[check] = (f"{why}. Tested in {SINGLE_COLUMN}{test}.", pattern)
        return out
    if isinstance(estimator.mechanism, RandomizedResponse):
        return out  # the checks' data are reports of k-RR over CHECK_CATS
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


# The marginal estimator reads integer tables [marginal index, report] of its
# privatizer; these checks feed random numbers of other widths or values.
MARGINAL_ESTIMATOR_XFAILS = (
    "check_fit_score_takes_y",
    "check_estimators_overwrite_params",
    "check_dont_overwrite_parameters",
    "check_estimators_fit_returns_self",
    "check_readonly_memmap_input",
    "check_n_features_in_after_fitting",
    "check_positive_only_tag_during_fit",
    "check_estimators_dtypes",
    "check_dtype_object",
    "check_pipeline_consistency",
    "check_estimators_nan_inf",
    "check_estimators_pickle",
    "check_f_contiguous_array_estimator",
    "check_methods_sample_order_invariance",
    "check_methods_subset_invariance",
    "check_fit2d_1sample",
    "check_fit2d_1feature",
    "check_dict_unchanged",
    "check_fit_idempotent",
    "check_fit_check_is_fitted",
    "check_n_features_in",
    "check_fit2d_predict1d",
)

#: Checks that feed the range-query estimator random numbers as reports (the
#: marginal estimator's list: the reports have the same layout).
RANGE_ESTIMATOR_XFAILS = MARGINAL_ESTIMATOR_XFAILS


def _marginal_failures(estimator):
    if isinstance(estimator, MarginalPrivatizer):
        return {}  # every check passes
    return {
        check: (
            "marginal reports are integer tables [marginal index, report] of the "
            "privatizer's spec; this check feeds random numbers of another width or "
            "values, which the spec refuses (ReportMismatchError). Tested on real "
            f"reports in {SINGLE_COLUMN}test_marginal_estimator_on_real_reports.",
            r"Marginal reports are|name a marginal outside",
        )
        for check in MARGINAL_ESTIMATOR_XFAILS
    }


def _range_failures(estimator):
    if isinstance(estimator, RangeQueryPrivatizer):
        return {}  # every check passes
    return {
        check: (
            "range-query reports are integer tables [grid index, report] of the "
            "privatizer's spec; this check feeds random numbers of another width or "
            "values, which the spec refuses (ReportMismatchError). Tested on real "
            "reports in tests/marginals/test_range_queries_estimator.py::"
            "test_partial_fit_and_reduced_statistics_equal_fit.",
            r"Range-query reports are|Reports are integers|grid outside|Grid |reports of grid",
        )
        for check in RANGE_ESTIMATOR_XFAILS
    }


def expected_failed_checks(estimator):
    return {
        **SKLEARN_16_XFAILS,
        **{check: reason for check, (reason, _) in _expected_failures(estimator).items()},
    }


# ``xfail_strict`` appeared in scikit-learn 1.7; on 1.6 listed checks that
# start passing are reported as XPASS instead of failing.
_STRICT = (
    {"xfail_strict": True}
    if "xfail_strict" in inspect.signature(parametrize_with_checks).parameters
    else {}
)


@parametrize_with_checks(
    all_instances(),
    expected_failed_checks=expected_failed_checks,
    **_STRICT,
)
def test_sklearn_compatible_estimator(estimator, check):
    try:
        with _expected_leak_warnings(estimator):
            check(estimator)
    except unittest.SkipTest:
        raise
    except Exception as exc:
        # Re-raise with the traceback as text: pytest would otherwise parse
        # the 5000-line estimator_checks.py for every frame of every expected
        # failure (about 1 s each), which dominated the runtime.
        text = "".join(traceback.format_exception(exc))
        raise AssertionError(f"{type(exc).__name__}: {exc}\n\n{text}") from None


def _expected_leak_warnings(estimator):
    """Expect the PrivacyLeakWarning of a domain learned from the checks' data.

    ``JointEncoder()`` and ``LDPNaiveBayes()`` (categories="auto") learn
    their domains at every fit, which is what the warning says; elsewhere a PrivacyLeakWarning is an
    error of the suite (pyproject.toml's filterwarnings).
    """
    quiet = contextlib.ExitStack()
    if isinstance(estimator, JointEncoder) and isinstance(estimator.categories, str):
        quiet.enter_context(warnings.catch_warnings())
        warnings.filterwarnings(
            "ignore", message=".*learns the joint domain", category=PrivacyLeakWarning
        )
    if isinstance(estimator, LDPNaiveBayes) and isinstance(estimator.categories, str):
        quiet.enter_context(warnings.catch_warnings())
        warnings.filterwarnings(
            "ignore", message=".*learns each feature's domain", category=PrivacyLeakWarning
        )
    if isinstance(estimator, RangeQueryPrivatizer) and isinstance(estimator.bounds, str):
        quiet.enter_context(warnings.catch_warnings())
        warnings.filterwarnings(
            "ignore", message=".*learns the ranges", category=PrivacyLeakWarning
        )
    if isinstance(estimator, MarginalPrivatizer) and isinstance(estimator.categories, str):
        quiet.enter_context(warnings.catch_warnings())
        warnings.filterwarnings(
            "ignore", message=".*learns the domains", category=PrivacyLeakWarning
        )
    return quiet


def _expected_failure_cases():
    for estimator in all_instances():
        expected = _expected_failures(estimator)
        for est, check in estimator_checks_generator(estimator, mark=None):
            name = getattr(check, "func", check).__name__
            if name in expected:
                label = re.sub(r"\s+", "", repr(est))[:40]
                yield pytest.param(est, check, expected[name][1], id=f"{label}-{name}")


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
    with pytest.raises(Exception) as info, _expected_leak_warnings(estimator):
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
    for estimator in all_instances():
        for reason in expected_failed_checks(estimator).values():
            if reason.startswith(KNOWN_DEFECT):
                continue  # names the fix instead
            tests = re.findall(r"(tests/[\w/]+\.py)::(\w+)", reason)
            assert tests, reason
            for path, test in tests:
                if path == SINGLE_COLUMN[:-2]:
                    assert test in names, test
                else:  # a test of another module: its file defines it
                    source = (REPO_ROOT / path).read_text(encoding="utf-8")
                    assert f"def {test}(" in source, (path, test)


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


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32, np.float64, object, str])
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
    assert_array_equal(np.asarray(restored.transform(X)), np.asarray(mechanism.transform(X)))


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
        assert_array_equal(
            np.asarray(after[key], dtype=object), np.asarray(snapshot[key], dtype=object)
        )
    public = [k for k in vars(mechanism) if not k.startswith("_") and not k.endswith("_")]
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


def test_mechanism_1d_input_is_one_column(mechanism):
    """A 1-D array or list is one column, like a Series (issue 13); after a
    fit on several columns it is ambiguous and refused."""
    X = _column()
    expected = np.asarray(clone(mechanism).fit_transform(X))
    for flat in (X[:, 0], X[:, 0].tolist(), pd.Series(X[:, 0])):
        assert_array_equal(np.asarray(clone(mechanism).fit_transform(flat)), expected)
    fitted = clone(mechanism).fit(X)
    assert fitted.transform(X[:5, 0]).shape[0] == 5
    fitted.fit(np.hstack([X, X]))
    with pytest.raises(ValueError, match="Reshape your data"):
        fitted.transform(X[:, 0])


def test_mechanism_complex_input(mechanism):
    with pytest.raises(ValueError, match="Complex data not supported"):
        mechanism.fit(np.array([[1 + 1j], [2 + 0j]]))


def test_mechanism_tags(mechanism):
    tags = mechanism.__sklearn_tags__()
    assert tags.input_tags.categorical and tags.input_tags.string
    # NaN is accepted only as a declared category (a missing-value marker).
    assert not tags.input_tags.allow_nan
    with_marker = clone(mechanism).set_params(categories=[*CATS, None])
    assert with_marker.__sklearn_tags__().input_tags.allow_nan
    assert (
        not clone(mechanism).set_params(categories="auto").__sklearn_tags__().input_tags.allow_nan
    )
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
        assert_allclose(est.predict_proba(data), reference.predict_proba(R), err_msg=name)
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
        assert_allclose(clone(estimator).fit(flat).distribution_, estimator.distribution_)


def test_estimator_rejects_nan_inf_reports(estimator):
    R = np.asarray(_reports_for(estimator)).astype(float)
    estimator.fit(R)
    for bad_value in (np.nan, np.inf):
        bad = R.copy()
        bad[0, 0] = bad_value
        for method in ("fit", "partial_fit", "predict_proba", "score"):
            with pytest.raises(ReportMismatchError, match="NaN or infinity"):
                getattr(clone(estimator).fit(R) if method != "fit" else clone(estimator), method)(
                    bad
                )


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
            assert_allclose(est.distribution_, clone(estimator).fit(dense).distribution_)
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


# ------------------------------------- classes with their own input layout
def test_binary_mechanism_refuses_other_values():
    mech = BinaryOptimalResponse(categories=[0, 1], random_state=0)
    X = np.array([[0], [1], [1], [0]])
    assert mech.fit_transform(X).shape == (4, 1)
    with pytest.raises(ValueError, match=r"unknown categor.*2"):
        mech.transform(np.array([[0], [2]]))
    # With categories="auto" the column's values make the domain: a third
    # value is refused at fit, saying how to fix it.
    with (
        pytest.warns(PrivacyLeakWarning),
        pytest.raises(
            ValueError,
            match=r"the column holds 3 distinct value\(s\)\. Pass categories=\[a, b\]",
        ),
    ):
        BinaryOptimalResponse().fit(np.array([[0], [1], [2]]))
    with pytest.raises(ValueError, match=r"categories has 3 distinct"):
        BinaryOptimalResponse(categories=[0, 1, 2]).fit()


def test_binary_mechanism_on_binary_data():
    """What the checks listed in BINARY_XFAILS verify, on values of [0, 1]:
    several columns and dtypes, containers, fit/transform contract, params,
    pickling, reproducibility, one sample and 1-D input."""
    rng = np.random.default_rng(0)
    X = rng.integers(0, 2, size=(40, 3))
    mech = BinaryOptimalResponse(categories=[0, 1], random_state=0)
    params = copy.deepcopy(mech.get_params())
    with pytest.raises(NotFittedError):
        mech.transform(X)
    assert mech.fit(X, np.arange(40)) is mech
    assert mech.get_params() == params
    assert mech.n_features_in_ == 3
    out = mech.transform(X)
    assert out.shape == X.shape
    assert set(np.unique(np.asarray(out))) <= {0, 1}
    # fit_transform == fit().transform, refitting restarts the seeded stream,
    # and successive transforms draw fresh noise.
    first = np.asarray(clone(mech).fit_transform(X))
    assert_array_equal(np.asarray(clone(mech).fit(X).transform(X)), first)
    assert_array_equal(np.asarray(mech.fit(X).transform(X)), first)
    assert not np.array_equal(np.asarray(mech.transform(X)), first)
    before = dict(vars(mech))
    mech.transform(X)
    assert vars(mech).keys() == before.keys()
    # Containers and dtypes give the same reports; numeric dtypes are kept.
    for data in (
        X.tolist(),
        np.asfortranarray(X),
        create_memmap_backed_data(X),
        pd.DataFrame(X, columns=["x0", "x1", "x2"]),
    ):
        assert_array_equal(np.asarray(clone(mech).fit_transform(data)), first)
    for dtype in (np.int32, np.float32, np.float64):
        assert clone(mech).fit_transform(X.astype(dtype)).dtype == dtype
    restored = pickle.loads(pickle.dumps(mech.fit(X)))
    assert_array_equal(np.asarray(restored.transform(X)), np.asarray(mech.transform(X)))
    assert clone(mech).fit_transform(np.array([[1]])).shape == (1, 1)
    with pytest.raises(ValueError, match="X has 2 features, but .* expecting 3"):
        mech.transform(X[:, :2])
    with pytest.raises(ValueError, match="Reshape your data"):
        mech.transform(X[:, 0])
    # Negative labels are ordinary categories.
    neg = BinaryOptimalResponse(categories=[-1, 0], random_state=0)
    assert neg.fit_transform(X - 1).shape == X.shape


def _pum_data(n=60, seed=0):
    rng = np.random.default_rng(seed)
    values = rng.integers(0, 20, n)
    home = rng.integers(0, 20, n).astype(object)
    home[::3] = None  # no sensitive home for these users
    return pd.DataFrame({"cell": values, "home": home})


def test_personalized_mechanism_layout():
    X = _pum_data()
    mech = PersonalizedMechanism(**PUM_20, random_state=0)
    R = mech.fit_transform(X)
    assert R.shape == (X.shape[0], 1)
    assert mech.n_features_in_ == 2
    assert_array_equal(mech.feature_names_in_, ["cell", "home"])
    # Refitting restarts the seeded stream: fit is idempotent on the (object)
    # reports, which mix cells and the bot label.
    assert_array_equal(np.asarray(mech.fit_transform(X), dtype=object), np.asarray(R, dtype=object))
    assert "⊥home" in set(np.asarray(R, dtype=object).ravel().tolist())
    # In an array the tag is the last column: 3 columns are 2 value columns,
    # 1 column is none.
    cells = X[["cell"]].to_numpy()
    for bad in (np.hstack([cells, cells, cells]), cells):
        with pytest.raises(
            ValueError,
            match=r"value columns \(\[.*\]\) "
            "besides the tag columns",
        ):
            clone(mech).fit(bad)
    restored = pickle.loads(pickle.dumps(mech))
    assert_array_equal(
        np.asarray(restored.transform(X), dtype=object), np.asarray(mech.transform(X), dtype=object)
    )


def _pum_reports(n=60):
    mech = PersonalizedMechanism(**PUM_20, random_state=0)
    return mech, mech.fit_transform(_pum_data(n))


def test_personalized_estimator_refuses_foreign_reports():
    mech, R = _pum_reports()
    est = PersonalizedEstimator(mechanism=mech).fit(R)
    assert est.distribution_.shape == (20,)
    with pytest.raises(ReportMismatchError, match="outside the outputs of"):
        PersonalizedEstimator(mechanism=mech).fit(np.array([[-1], [3]]))


def test_personalized_estimator_1d_reports():
    mech, R = _pum_reports()
    est = PersonalizedEstimator(mechanism=mech).fit(R)
    flat = np.asarray(R, dtype=object)[:, 0]
    assert_allclose(
        PersonalizedEstimator(mechanism=mech).fit(flat).distribution_, est.distribution_
    )
    # Users who sent several reports: a 1-D array cannot say which values
    # belong together, so it is refused as scikit-learn refuses 1-D X.
    mech2 = PersonalizedMechanism(**PUM_20, n_reports=2, random_state=0)
    data = _pum_data()
    R2 = mech2.fit_transform(data.assign(cell2=data["cell"])[["cell", "cell2", "home"]])
    est2 = PersonalizedEstimator(mechanism=mech2).fit(R2)
    with pytest.raises(ValueError, match="Reshape your data"):
        est2.predict_proba(np.asarray(R2, dtype=object)[0])


def test_personalized_estimator_input_validation():
    mech, R = _pum_reports()
    est = PersonalizedEstimator(mechanism=mech).fit(R)
    assert est.n_features_in_ == 1
    assert not hasattr(est, "feature_names_in_")
    with pytest.raises(
        ValueError,
        match=r"X has 2 features, but "
        r"PersonalizedEstimator is expecting 1 features",
    ):
        est.predict_proba(np.hstack([np.asarray(R, dtype=object)] * 2))
    # No report columns: refused as scikit-learn words it, not reshaped
    # into "0 sample(s)".
    with pytest.raises(ValueError, match=r"0 feature\(s\) \(shape=\(60, 0\)\)"):
        PersonalizedEstimator(mechanism=mech).fit(np.empty((60, 0)))
    for sparse in (sp.csr_array, sp.csr_matrix):
        with pytest.raises(TypeError, match="Sparse input is not supported"):
            PersonalizedEstimator(mechanism=mech).fit(sparse(np.ones((3, 1))))
        with pytest.raises(TypeError, match="Sparse input is not supported"):
            est.predict_proba(sparse(np.ones((3, 1))))
    frame = pd.DataFrame({"report": np.asarray(R, dtype=object)[:, 0]})
    named = PersonalizedEstimator(mechanism=mech).fit(frame)
    assert_array_equal(named.feature_names_in_, ["report"])


def test_personalized_estimator_predict_proba_one_row_per_user():
    mech = PersonalizedMechanism(**PUM_20, n_reports=2, random_state=0)
    data = _pum_data(90)
    X = data.assign(cell2=data["cell"][::-1].to_numpy())[["cell", "cell2", "home"]]
    R = mech.fit_transform(X)
    est = PersonalizedEstimator(mechanism=mech).fit(R)
    assert est.n_features_in_ == 2 and est.n_reports_ == 180
    before = copy.deepcopy(est.__dict__)
    proba = est.predict_proba(R)
    # predict_proba and score leave the fitted estimator as it was.
    est.score(R)
    assert est.__dict__.keys() == before.keys()
    assert_allclose(est.distribution_, before["_cache"][0])
    assert proba.shape == (90, 2 * 20)
    assert_allclose(proba.reshape(90, 2, 20).sum(axis=2), 1.0)
    # One row per user: permuting and slicing users permutes and slices rows.
    order = np.random.default_rng(0).permutation(90)
    R_arr = np.asarray(R, dtype=object)
    assert_allclose(est.predict_proba(R_arr[order]), proba[order])
    assert_allclose(est.predict_proba(R_arr[10:20]), proba[10:20])
    # Report j of user i is column block j of row i.
    single = PersonalizedEstimator(mechanism=mech).fit(R)
    assert_allclose(proba.reshape(-1, 20)[1], single.predict_proba(R_arr[:1]).reshape(2, 20)[1])


def test_joint_encoder_array_input():
    rng = np.random.default_rng(0)
    X = rng.integers(0, 3, size=(50, 2))
    enc = JointEncoder()
    with pytest.warns(PrivacyLeakWarning):
        labels = enc.fit_transform(X)
    # Columns of an array are named by position, as OneHotEncoder names them;
    # feature_names_in_ exists only after a DataFrame.
    assert enc.columns_ == ["x0", "x1"] and enc.n_features_in_ == 2
    assert not hasattr(enc, "feature_names_in_")
    assert labels["joint"].tolist()[:2] == [f"{a}|{b}" for a, b in X[:2]]
    assert enc.categories_.tolist()[:2] == ["0|0", "0|1"]
    out = labels["joint"].to_numpy()
    # The properties of the checks that compare outputs numerically, on the
    # string labels: order and subset invariance, idempotent fit, pickling,
    # lists as input, and a Pipeline.
    order = rng.permutation(50)
    assert_array_equal(enc.transform(X[order])["joint"], out[order])
    assert_array_equal(enc.transform(X[5:9])["joint"], out[5:9])
    with pytest.warns(PrivacyLeakWarning):
        assert_array_equal(clone(enc).fit(X).transform(X)["joint"], out)
    restored = pickle.loads(pickle.dumps(enc))
    assert_array_equal(restored.transform(X)["joint"], out)
    assert_array_equal(enc.transform(X.tolist())["joint"], out)
    from sklearn.pipeline import make_pipeline

    with pytest.warns(PrivacyLeakWarning):
        assert_array_equal(make_pipeline(clone(enc)).fit_transform(X)["joint"], out)
    # Explicit domains name an array's columns x0, x1, ... (a subset may be
    # joined); a DataFrame's by its names.
    cats = {"x1": [0, 1, 2], "x0": [0, 1, 2]}
    sub = JointEncoder(cats).fit(np.column_stack([X, X[:, :1]]))
    assert sub.n_features_in_ == 3
    assert sub.transform(np.column_stack([X, X[:, :1]]))["joint"][0] == f"{X[0, 1]}|{X[0, 0]}"
    with pytest.raises(KeyError, match=r"\['a'\] are not in X.*x0"):
        JointEncoder({"a": [0, 1]}).fit(X)
    frame = pd.DataFrame(X, columns=["a", "b"])
    named = JointEncoder({"b": [0, 1, 2], "a": [0, 1, 2]}).fit(frame)
    assert_array_equal(named.feature_names_in_, ["a", "b"])
    assert_array_equal(
        named.transform(frame)["joint"], sub.transform(np.column_stack([X, X[:, :1]]))["joint"]
    )
    with pytest.raises(
        ValueError, match="X has 1 features, but JointEncoder is expecting 2 features"
    ):
        enc.transform(X[:, :1])
    # Invalid input: sparse, empty, NaN without a missing-value marker, a
    # joint domain too large to enumerate.
    with pytest.raises(TypeError, match="Sparse input is not supported"):
        JointEncoder().fit(sp.csr_array(X))
    with pytest.raises(ValueError, match=r"0 sample\(s\)"):
        JointEncoder().fit(np.empty((0, 2)))
    with pytest.raises(ValueError, match=r"0 feature\(s\)"):
        JointEncoder().fit(pd.DataFrame(index=range(3)))
    with_nan = X.astype(float)
    with_nan[0, 0] = np.nan
    with pytest.warns(PrivacyLeakWarning), pytest.raises(ValueError, match="missing values.*NaN"):
        JointEncoder().fit(with_nan)
    with pytest.raises(ValueError, match=r"missing values \(None/NaN\)"):
        JointEncoder({"x0": [0.0, 1.0, 2.0], "x1": [0.0, 1.0, 2.0]}).fit(X.astype(float)).transform(
            with_nan
        )
    marked = JointEncoder({"x0": [0.0, 1.0, 2.0, np.nan], "x1": [0.0, 1.0, 2.0]})
    assert marked.fit(with_nan).transform(with_nan)["joint"][0] == f"nan|{float(X[0, 1])}"
    wide = rng.permutation(200 * 6).reshape(200, 6)
    with (
        pytest.warns(PrivacyLeakWarning),
        pytest.raises(ValueError, match="joint domain would have 6.4e\\+13 combinations"),
    ):
        JointEncoder().fit(wide)


# ===================================================================
# Numeric columns: the checks' properties on valid data
# ===================================================================
NUMERIC_MECHANISMS = [
    cls(bounds=NUMERIC_BOUNDS, random_state=0)
    for cls in (DuchiMechanism, PiecewiseMechanism, HybridMechanism, SquareWave)
] + [
    UtilityOptimizedOneBitMechanism(bounds=NUMERIC_BOUNDS, sensitive=(0.0, 1.0), random_state=0),
    Binner(bounds=NUMERIC_BOUNDS),
]


@pytest.mark.parametrize("mech", NUMERIC_MECHANISMS, ids=lambda m: type(m).__name__)
def test_numeric_one_d_input_is_one_column(mech):
    x = np.random.default_rng(0).uniform(-10, 20, size=50)
    one_d = clone(mech).fit(x).transform(x)
    two_d = clone(mech).fit(x.reshape(-1, 1)).transform(x.reshape(-1, 1))
    assert np.shape(one_d) == np.shape(two_d) == (50, 1)
    if isinstance(mech, Binner):
        assert np.array_equal(one_d, two_d)
    else:
        assert np.array_equal(np.asarray(one_d), np.asarray(two_d))  # same seeded stream
    fitted = clone(mech).fit(np.column_stack([x, x]))
    with pytest.raises(ValueError, match="Expected 2D array"):
        fitted.transform(x)


# Pinned floats (tests/README.md): tolerances that hold on any processor.
# A mean over the same reports in reverse order: 1e-10 relative.
@pytest.mark.pinned
@pytest.mark.parametrize(
    "mechanism, estimator",
    [(PiecewiseMechanism, MeanEstimator()), (SquareWave, SquareWaveEstimator(n_bins=16))],
    ids=["MeanEstimator", "SquareWaveEstimator"],
)
def test_numeric_estimators_on_real_reports(mechanism, estimator):
    """What the checks test, on reports of the estimator's mechanism: fit
    returns self and takes y, keeps params and __dict__ keys, is idempotent
    and invariant to the order of the reports, pickles, counts the report
    columns (n_features_in_, names), refuses other widths, NaN, complex,
    empty and sparse reports with clear messages."""
    mech = mechanism(bounds=NUMERIC_BOUNDS, random_state=0)
    X = np.random.default_rng(0).uniform(-10, 20, size=(300, 1))
    reports = mech.fit_transform(X)
    est = clone(estimator).set_params(mechanism=mech)
    params = est.get_params()
    assert est.fit(reports, np.zeros(300)) is est
    assert est.get_params() == params
    result = est.mean_ if hasattr(est, "mean_") else est.distribution_.copy()
    keys = set(vars(est))
    est.fit(reports)
    assert set(vars(est)) == keys
    again = est.mean_ if hasattr(est, "mean_") else est.distribution_
    assert np.array_equal(result, again)
    shuffled = clone(est).fit(np.asarray(reports)[::-1].copy())
    if hasattr(est, "mean_"):
        assert shuffled.mean_ == pytest.approx(est.mean_, rel=1e-10)
    else:
        assert np.array_equal(shuffled.distribution_, est.distribution_)
    subset = clone(est).fit(np.asarray(reports)[:100])
    assert subset.n_reports_ == 100
    restored = pickle.loads(pickle.dumps(est))
    assert restored.n_reports_ == est.n_reports_ and restored.channel_ == est.channel_
    assert est.n_features_in_ == 1
    frame = pd.DataFrame(np.asarray(reports), columns=["age"])
    named = clone(est).fit(frame)
    assert list(named.feature_names_in_) == ["age"]
    with pytest.raises(ValueError, match="features"):
        named.partial_fit(np.asarray(mech.fit_transform(np.column_stack([X, X]))))
    with pytest.raises(ReportMismatchError, match="NaN"):
        clone(est).fit(np.array([[np.nan]]))
    with pytest.raises(ValueError, match="[Cc]omplex"):
        clone(est).fit(np.asarray(reports) + 1j)
    with pytest.raises(ValueError, match="0 sample"):
        clone(est).fit(np.empty((0, 1)))
    with pytest.raises(TypeError, match="[Ss]parse"):
        clone(est).fit(sp.csr_array(np.asarray(reports)))
    with pytest.raises(ReportMismatchError, match="cannot produce"):
        clone(est).fit(X)
    assert est.__sklearn_tags__().requires_fit


def test_marginal_estimator_on_real_reports():
    """What the checks test, on marginal reports: fit returns self and takes y,
    keeps params and __dict__ keys, is idempotent and invariant to the order of
    the reports, pickles, counts the report columns, refuses other widths, NaN,
    complex, empty and sparse reports with clear messages."""
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"x0": rng.integers(-5, 15, 300), "x1": rng.integers(-5, 15, 300)})
    reports = MARGINAL_CHECK.transform(X)
    est = MarginalEstimator(mechanism=MARGINAL_CHECK.channel_)
    params = est.get_params()
    assert est.fit(reports, np.zeros(300)) is est
    assert est.get_params() == params
    result = est.marginal(["x0", "x1"]).to_numpy()
    keys = set(vars(est))
    est.fit(reports)
    assert set(vars(est)) == keys
    assert np.array_equal(result, est.marginal(["x0", "x1"]).to_numpy())
    shuffled = clone(est).fit(np.asarray(reports)[::-1].copy())
    assert np.allclose(shuffled.marginal(["x0", "x1"]), result, rtol=0, atol=1e-12)
    assert clone(est).fit(np.asarray(reports)[:100]).n_reports_ == 100
    restored = pickle.loads(pickle.dumps(est))
    assert restored.n_reports_ == est.n_reports_ and restored.channel_ == est.channel_
    assert est.n_features_in_ == 2 and list(est.feature_names_in_) == ["marginal", "report"]
    with pytest.raises(ReportMismatchError, match="shape"):
        clone(est).fit(np.zeros((10, 3), dtype=int))
    with pytest.raises(ValueError, match="NaN"):
        clone(est).fit(np.array([[0, np.nan]]))
    with pytest.raises(ValueError, match="[Cc]omplex"):
        clone(est).fit(np.asarray(reports) + 1j)
    with pytest.raises(ValueError, match="0 sample"):
        clone(est).fit(np.empty((0, 2)))
    with pytest.raises(TypeError, match="[Ss]parse"):
        clone(est).fit(sp.csr_array(np.asarray(reports)))
    with pytest.raises(ReportMismatchError, match="integers"):
        clone(est).fit(np.asarray(reports) + 0.5)
    assert est.__sklearn_tags__().requires_fit
