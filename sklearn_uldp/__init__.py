"""sklearn-uldp: utility-optimized local differential privacy, the scikit-learn way.

Mechanisms (:mod:`sklearn_uldp.mechanisms`) privatize a categorical column on
the users' side; estimators (:mod:`sklearn_uldp.estimators`) estimate the
distribution of the true values from the reports on the collector's side;
:mod:`sklearn_uldp.longitudinal` collects from the same users round after
round (memoized reports); :mod:`sklearn_uldp.privacy` verifies the
guarantees on the exact channel and keeps the budget;
:mod:`sklearn_uldp.metrics` measures and predicts the utility;
:mod:`sklearn_uldp.marginals` estimates the marginals of many columns,
answers range queries over numeric columns and synthesizes tables;
:mod:`sklearn_uldp.compose`, :mod:`sklearn_uldp.model_selection`,
:mod:`sklearn_uldp.plotting` and :mod:`sklearn_uldp.parallel` carry the
data-science workflow; :mod:`sklearn_uldp.learning` trains models on
privatized labels, pairs, gradients and rows;
:mod:`sklearn_uldp.robustness` simulates fake users' poisoning attacks and
estimates robustly against them.
"""

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the names, for type checkers and IDEs (imported lazily below)
    from . import (
        compose,
        datasets,
        estimators,
        heavy_hitters,
        learning,
        longitudinal,
        marginals,
        mechanisms,
        metrics,
        model_selection,
        numeric,
        parallel,
        plotting,
        privacy,
        robustness,
        stats,
    )
    from ._show_versions import show_versions
    from ._version import __version__ as __version__
    from .compose import DataFramePrivatizer, JointEncoder
    from .estimators import (
        DistributionEstimator,
        EMEstimator,
        EmpiricalEstimator,
        PersonalizedEstimator,
        ThresholdEstimator,
    )
    from .exceptions import BudgetError, ClippingWarning, PrivacyLeakWarning, ReportMismatchError
    from .heavy_hitters import (
        BloomRAPPOR,
        BloomRAPPORDecoder,
        HeavyHitterEstimator,
        PrefixExtendingMethod,
        TreeHist,
        UtilityOptimizedHeavyHitters,
    )
    from .learning import (
        LabelPrivacyClassifier,
        LDPLinearRegression,
        LDPLinearSVC,
        LDPLogisticRegression,
        LDPNaiveBayes,
        PrivatizedGroupReweighter,
    )
    from .longitudinal import (
        DBitFlipPM,
        LongitudinalEstimator,
        LongitudinalGRR,
        LongitudinalLocalHashing,
        LongitudinalUE,
        UtilityOptimizedLongitudinalRAPPOR,
        UtilityOptimizedLongitudinalRR,
    )
    from .marginals import (
        MarginalEstimator,
        MarginalPrivatizer,
        RangeQueryEstimator,
        RangeQueryPrivatizer,
    )
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
        TransformedSubsetSelection,
        UtilityOptimizedBlockDesign,
        UtilityOptimizedBlockedHadamardResponse,
        UtilityOptimizedHadamardCountMeanSketch,
        UtilityOptimizedHadamardResponse,
        UtilityOptimizedLocalHashing,
        UtilityOptimizedOUE,
        UtilityOptimizedRAPPOR,
        UtilityOptimizedRR,
        UtilityOptimizedSubsetSelection,
        UtilityOptimizedUnaryEncoding,
        get_channel,
        to_utility_optimized,
    )
    from .model_selection import PrivacyUtilitySearchCV, choose_mechanism
    from .numeric import (
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
    from .privacy import BudgetAccountant
    from .robustness import RobustFrequencyEstimator

# Every public name is imported from its module at its first use (PEP 562
# module __getattr__): ``import sklearn_uldp`` loads none of them, and
# ``from sklearn_uldp import RandomizedResponse`` loads the mechanisms only
# (not pandas-heavy composition, plotting, Dask or the search). The names are
# those imported under TYPE_CHECKING above; add a new one to both places
# (tests/package/test_scale.py checks that they agree with __all__). The other
# names of __all__ are the subpackages (``_SUBPACKAGES``, below it).
_LAZY_NAMES = {
    "__version__": "_version",
    "show_versions": "_show_versions",
    "DataFramePrivatizer": "compose",
    "JointEncoder": "compose",
    "DistributionEstimator": "estimators",
    "EMEstimator": "estimators",
    "EmpiricalEstimator": "estimators",
    "LongitudinalEstimator": "longitudinal",
    "PersonalizedEstimator": "estimators",
    "ThresholdEstimator": "estimators",
    "BudgetError": "exceptions",
    "ClippingWarning": "exceptions",
    "PrivacyLeakWarning": "exceptions",
    "ReportMismatchError": "exceptions",
    "BloomRAPPOR": "heavy_hitters",
    "BloomRAPPORDecoder": "heavy_hitters",
    "HeavyHitterEstimator": "heavy_hitters",
    "PrefixExtendingMethod": "heavy_hitters",
    "TreeHist": "heavy_hitters",
    "UtilityOptimizedHeavyHitters": "heavy_hitters",
    "LabelPrivacyClassifier": "learning",
    "LDPNaiveBayes": "learning",
    "LDPLogisticRegression": "learning",
    "LDPLinearSVC": "learning",
    "LDPLinearRegression": "learning",
    "PrivatizedGroupReweighter": "learning",
    "MarginalEstimator": "marginals",
    "MarginalPrivatizer": "marginals",
    "RangeQueryEstimator": "marginals",
    "RangeQueryPrivatizer": "marginals",
    "RAPPOR": "mechanisms",
    "BinaryLocalHashing": "mechanisms",
    "BinaryOptimalResponse": "mechanisms",
    "BlockHadamardResponse": "mechanisms",
    "CountMeanSketch": "mechanisms",
    "DBitFlipPM": "longitudinal",
    "HadamardCountMeanSketch": "mechanisms",
    "HadamardResponse": "mechanisms",
    "HighLowHadamardResponse": "mechanisms",
    "LongitudinalGRR": "longitudinal",
    "LongitudinalLocalHashing": "longitudinal",
    "LongitudinalUE": "longitudinal",
    "NonPrivate": "mechanisms",
    "OptimizedLocalHashing": "mechanisms",
    "PersonalizedMechanism": "mechanisms",
    "RandomizedResponse": "mechanisms",
    "SubsetSelection": "mechanisms",
    "TransformedSubsetSelection": "mechanisms",
    "UtilityOptimizedBlockDesign": "mechanisms",
    "UtilityOptimizedBlockedHadamardResponse": "mechanisms",
    "UtilityOptimizedHadamardCountMeanSketch": "mechanisms",
    "UtilityOptimizedLocalHashing": "mechanisms",
    "UtilityOptimizedUnaryEncoding": "mechanisms",
    "to_utility_optimized": "mechanisms",
    "UtilityOptimizedHadamardResponse": "mechanisms",
    "UtilityOptimizedLongitudinalRAPPOR": "longitudinal",
    "UtilityOptimizedLongitudinalRR": "longitudinal",
    "UtilityOptimizedOUE": "mechanisms",
    "UtilityOptimizedRAPPOR": "mechanisms",
    "UtilityOptimizedRR": "mechanisms",
    "UtilityOptimizedSubsetSelection": "mechanisms",
    "get_channel": "mechanisms",
    "PrivacyUtilitySearchCV": "model_selection",
    "choose_mechanism": "model_selection",
    "Binner": "numeric",
    "DuchiMechanism": "numeric",
    "HybridMechanism": "numeric",
    "MeanEstimator": "numeric",
    "MultiNumericMechanism": "numeric",
    "PiecewiseMechanism": "numeric",
    "SquareWave": "numeric",
    "SquareWaveEstimator": "numeric",
    "UtilityOptimizedOneBitMechanism": "numeric",
    "BudgetAccountant": "privacy",
    "RobustFrequencyEstimator": "robustness",
}


def __getattr__(name: str) -> object:
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
    # the utility-optimized transformation of any LDP oracle (He et al. 2025)
    "to_utility_optimized",
    "UtilityOptimizedUnaryEncoding",
    "UtilityOptimizedLocalHashing",
    "TransformedSubsetSelection",
    "UtilityOptimizedHadamardCountMeanSketch",
    "UtilityOptimizedBlockedHadamardResponse",
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
    # marginals of many columns, range queries, synthetic tables
    "MarginalPrivatizer",
    "MarginalEstimator",
    "RangeQueryPrivatizer",
    "RangeQueryEstimator",
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
    # numeric columns (means, distributions, quantiles)
    "DuchiMechanism",
    "PiecewiseMechanism",
    "HybridMechanism",
    "UtilityOptimizedOneBitMechanism",
    "MultiNumericMechanism",
    "MeanEstimator",
    "SquareWave",
    "SquareWaveEstimator",
    "Binner",
    "ClippingWarning",
    # learning on privatized data (labels, pairs, gradients, groups)
    "LabelPrivacyClassifier",
    "LDPNaiveBayes",
    "LDPLogisticRegression",
    "LDPLinearSVC",
    "LDPLinearRegression",
    "PrivatizedGroupReweighter",
    # robustness to fake users (poisoning attacks and recovery)
    "RobustFrequencyEstimator",
    # subpackages
    "compose",
    "datasets",
    "estimators",
    "heavy_hitters",
    "learning",
    "longitudinal",
    "marginals",
    "mechanisms",
    "metrics",
    "model_selection",
    "numeric",
    "parallel",
    "plotting",
    "privacy",
    "robustness",
    "stats",
]

#: The public names that are not in the table above: the subpackages.
_SUBPACKAGES = frozenset(__all__).difference(_LAZY_NAMES)
