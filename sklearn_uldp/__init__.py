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

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the names, for type checkers and IDEs (imported lazily below)
    __version__: str
    from . import (
        compose,
        datasets,
        estimators,
        mechanisms,
        metrics,
        model_selection,
        parallel,
        plotting,
        privacy,
        stats,
    )
    from .compose import DataFramePrivatizer, JointEncoder
    from .estimators import (
        DistributionEstimator,
        EMEstimator,
        EmpiricalEstimator,
        PersonalizedEstimator,
        ThresholdEstimator,
    )
    from .exceptions import BudgetError, PrivacyLeakWarning, ReportMismatchError
    from .mechanisms import (
        RAPPOR,
        BinaryLocalHashing,
        BinaryOptimalResponse,
        BlockHadamardResponse,
        CountMeanSketch,
        HadamardCountMeanSketch,
        HadamardResponse,
        HighLowHadamardResponse,
        NonPrivate,
        OptimizedLocalHashing,
        PersonalizedMechanism,
        RandomizedResponse,
        SubsetSelection,
        UtilityOptimizedBlockDesign,
        UtilityOptimizedHadamardResponse,
        UtilityOptimizedOUE,
        UtilityOptimizedRAPPOR,
        UtilityOptimizedRR,
        UtilityOptimizedSubsetSelection,
        get_channel,
    )
    from .model_selection import PrivacyUtilitySearchCV, choose_mechanism
    from .privacy import BudgetAccountant

# Every public name is imported from its subpackage at its first use (PEP 562
# module __getattr__): ``import sklearn_uldp`` loads none of them, and
# ``from sklearn_uldp import RandomizedResponse`` loads the mechanisms only
# (not pandas-heavy composition, plotting, Dask or the search). The names
# and subpackages are those listed under TYPE_CHECKING above; add a new one
# to both places.
_LAZY_NAMES = {
    "DataFramePrivatizer": "compose",
    "JointEncoder": "compose",
    "DistributionEstimator": "estimators",
    "EMEstimator": "estimators",
    "EmpiricalEstimator": "estimators",
    "PersonalizedEstimator": "estimators",
    "ThresholdEstimator": "estimators",
    "BudgetError": "exceptions",
    "PrivacyLeakWarning": "exceptions",
    "ReportMismatchError": "exceptions",
    "RAPPOR": "mechanisms",
    "BinaryLocalHashing": "mechanisms",
    "BinaryOptimalResponse": "mechanisms",
    "BlockHadamardResponse": "mechanisms",
    "CountMeanSketch": "mechanisms",
    "HadamardCountMeanSketch": "mechanisms",
    "HadamardResponse": "mechanisms",
    "HighLowHadamardResponse": "mechanisms",
    "NonPrivate": "mechanisms",
    "OptimizedLocalHashing": "mechanisms",
    "PersonalizedMechanism": "mechanisms",
    "RandomizedResponse": "mechanisms",
    "SubsetSelection": "mechanisms",
    "UtilityOptimizedBlockDesign": "mechanisms",
    "UtilityOptimizedHadamardResponse": "mechanisms",
    "UtilityOptimizedOUE": "mechanisms",
    "UtilityOptimizedRAPPOR": "mechanisms",
    "UtilityOptimizedRR": "mechanisms",
    "UtilityOptimizedSubsetSelection": "mechanisms",
    "get_channel": "mechanisms",
    "PrivacyUtilitySearchCV": "model_selection",
    "choose_mechanism": "model_selection",
    "BudgetAccountant": "privacy",
}
_SUBPACKAGES = frozenset(
    {
        "compose",
        "datasets",
        "estimators",
        "mechanisms",
        "metrics",
        "model_selection",
        "parallel",
        "plotting",
        "privacy",
        "stats",
    }
)


def _version() -> str:
    # The version is written once, in pyproject.toml; the installed metadata
    # carries it. A source tree that was never installed has no metadata.
    # (Read at first use: the metadata lookup scans the installed packages.)
    try:
        from importlib.metadata import version

        return version("sklearn-uldp")
    except ImportError:  # pragma: no cover - PackageNotFoundError is an ImportError
        return "0+unknown"


def __getattr__(name: str) -> object:
    if name == "__version__":
        value: object = _version()
        globals()[name] = value
        return value
    if name in _SUBPACKAGES:
        return importlib.import_module(f"{__name__}.{name}")
    module = _LAZY_NAMES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # later accesses skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


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
    # estimators
    "DistributionEstimator",
    "EmpiricalEstimator",
    "ThresholdEstimator",
    "EMEstimator",
    "PersonalizedEstimator",
    # workflow
    "DataFramePrivatizer",
    "JointEncoder",
    "PrivacyUtilitySearchCV",
    "choose_mechanism",
    "BudgetAccountant",
    "get_channel",
    # warnings and errors
    "PrivacyLeakWarning",
    "BudgetError",
    "ReportMismatchError",
    # subpackages
    "compose",
    "datasets",
    "estimators",
    "mechanisms",
    "metrics",
    "model_selection",
    "parallel",
    "plotting",
    "privacy",
    "stats",
]
