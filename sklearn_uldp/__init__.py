"""sklearn-uldp: utility-optimized local differential privacy, the scikit-learn way.

Mechanisms (:mod:`sklearn_uldp.mechanisms`) privatize a categorical column on
the users' side; estimators (:mod:`sklearn_uldp.estimators`) estimate the
distribution of the true values from the reports on the collector's side;
:mod:`sklearn_uldp.privacy` verifies the guarantees on the exact channel and
:mod:`sklearn_uldp.metrics` measures and predicts the utility.
"""

from . import datasets, estimators, mechanisms, metrics, privacy
from .estimators import (
    DistributionEstimator,
    EMEstimator,
    EmpiricalEstimator,
    ThresholdEstimator,
)
from .exceptions import BudgetError, PrivacyLeakWarning, ReportMismatchError
from .mechanisms import (
    RAPPOR,
    NonPrivate,
    RandomizedResponse,
    UtilityOptimizedRAPPOR,
    UtilityOptimizedRR,
    get_channel,
)

__version__ = "0.1.0.dev0"

__all__ = [
    "RandomizedResponse",
    "RAPPOR",
    "UtilityOptimizedRR",
    "UtilityOptimizedRAPPOR",
    "NonPrivate",
    "DistributionEstimator",
    "EmpiricalEstimator",
    "ThresholdEstimator",
    "EMEstimator",
    "get_channel",
    "PrivacyLeakWarning",
    "BudgetError",
    "ReportMismatchError",
    "datasets",
    "estimators",
    "mechanisms",
    "metrics",
    "privacy",
]

from .estimators import PersonalizedEstimator  # noqa: E402
from .mechanisms import PersonalizedMechanism  # noqa: E402

__all__ += ["PersonalizedMechanism", "PersonalizedEstimator"]

from .mechanisms import (  # noqa: E402
    BinaryOptimalResponse,
    BlockHadamardResponse,
    HadamardResponse,
    HighLowHadamardResponse,
    UtilityOptimizedBlockDesign,
    UtilityOptimizedOUE,
)

__all__ += [
    "BinaryOptimalResponse", "HadamardResponse", "HighLowHadamardResponse",
    "BlockHadamardResponse", "UtilityOptimizedBlockDesign", "UtilityOptimizedOUE",
]

from . import compose, model_selection, plotting  # noqa: E402
from .compose import DataFramePrivatizer, JointEncoder  # noqa: E402
from .model_selection import PrivacyUtilitySearchCV  # noqa: E402
from .privacy import BudgetAccountant  # noqa: E402

__all__ += [
    "DataFramePrivatizer", "JointEncoder", "PrivacyUtilitySearchCV",
    "BudgetAccountant", "compose", "model_selection", "plotting",
]
