"""sklearn-uldp: utility-optimized local differential privacy, the scikit-learn way.

Mechanisms (:mod:`sklearn_uldp.mechanisms`) privatize a categorical column on
the users' side; estimators (:mod:`sklearn_uldp.estimators`) estimate the
distribution of the true values from the reports on the collector's side;
:mod:`sklearn_uldp.privacy` verifies the guarantees on the exact channel and
keeps the budget; :mod:`sklearn_uldp.metrics` measures and predicts the
utility; :mod:`sklearn_uldp.compose`, :mod:`sklearn_uldp.model_selection`,
:mod:`sklearn_uldp.plotting` and :mod:`sklearn_uldp.parallel` carry the
data-science workflow.
"""

from . import (
    compose,
    datasets,
    estimators,
    heavy_hitters,
    mechanisms,
    metrics,
    model_selection,
    parallel,
    plotting,
    privacy,
    stats,
)
from ._show_versions import show_versions
from ._version import __version__ as __version__
from .compose import DataFramePrivatizer, JointEncoder
from .estimators import (
    DistributionEstimator,
    EMEstimator,
    EmpiricalEstimator,
    LongitudinalEstimator,
    PersonalizedEstimator,
    ThresholdEstimator,
)
from .exceptions import BudgetError, PrivacyLeakWarning, ReportMismatchError
from .heavy_hitters import (
    BloomRAPPOR,
    BloomRAPPORDecoder,
    HeavyHitterEstimator,
    PrefixExtendingMethod,
    TreeHist,
    UtilityOptimizedHeavyHitters,
)
from .mechanisms import (
    RAPPOR,
    BinaryLocalHashing,
    BinaryOptimalResponse,
    BlockHadamardResponse,
    CountMeanSketch,
    DBitFlipPM,
    HadamardCountMeanSketch,
    HadamardResponse,
    HighLowHadamardResponse,
    LongitudinalGRR,
    LongitudinalLocalHashing,
    LongitudinalUE,
    NonPrivate,
    OptimizedLocalHashing,
    PersonalizedMechanism,
    RandomizedResponse,
    SubsetSelection,
    UtilityOptimizedBlockDesign,
    UtilityOptimizedHadamardResponse,
    UtilityOptimizedLongitudinalRAPPOR,
    UtilityOptimizedLongitudinalRR,
    UtilityOptimizedOUE,
    UtilityOptimizedRAPPOR,
    UtilityOptimizedRR,
    UtilityOptimizedSubsetSelection,
    get_channel,
)
from .model_selection import PrivacyUtilitySearchCV, choose_mechanism
from .privacy import BudgetAccountant

__all__ = [
    # ULDP mechanisms and their LDP baselines (Murakami & Kawamoto 2019)
    "RandomizedResponse",
    "RAPPOR",
    "UtilityOptimizedRR",
    "UtilityOptimizedRAPPOR",
    "UtilityOptimizedOUE",
    "NonPrivate",
    "PersonalizedMechanism",
    # context-aware LDP and the Hadamard family (Acharya et al. 2020), uBD
    "BinaryOptimalResponse",
    "HadamardResponse",
    "HighLowHadamardResponse",
    "BlockHadamardResponse",
    "UtilityOptimizedBlockDesign",
    "UtilityOptimizedHadamardResponse",
    "UtilityOptimizedSubsetSelection",
    # plain-LDP frequency oracles
    "OptimizedLocalHashing",
    "BinaryLocalHashing",
    "SubsetSelection",
    "CountMeanSketch",
    "HadamardCountMeanSketch",
    # collection over time: memoized (longitudinal) mechanisms
    "LongitudinalGRR",
    "LongitudinalUE",
    "LongitudinalLocalHashing",
    "DBitFlipPM",
    "UtilityOptimizedLongitudinalRR",
    "UtilityOptimizedLongitudinalRAPPOR",
    # estimators
    "DistributionEstimator",
    "EmpiricalEstimator",
    "ThresholdEstimator",
    "EMEstimator",
    "PersonalizedEstimator",
    "LongitudinalEstimator",
    # heavy hitters over open domains (strings, large integers)
    "PrefixExtendingMethod",
    "TreeHist",
    "HeavyHitterEstimator",
    "BloomRAPPOR",
    "BloomRAPPORDecoder",
    "UtilityOptimizedHeavyHitters",
    # workflow
    "DataFramePrivatizer",
    "JointEncoder",
    "PrivacyUtilitySearchCV",
    "choose_mechanism",
    "BudgetAccountant",
    "get_channel",
    "show_versions",
    # warnings and errors
    "PrivacyLeakWarning",
    "BudgetError",
    "ReportMismatchError",
    # subpackages
    "compose",
    "datasets",
    "estimators",
    "heavy_hitters",
    "mechanisms",
    "metrics",
    "model_selection",
    "parallel",
    "plotting",
    "privacy",
    "stats",
]
