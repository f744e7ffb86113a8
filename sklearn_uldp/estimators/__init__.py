"""Distribution estimators: from reports to an estimate of the true distribution.

Every estimator works with every mechanism through the channel contract
(sufficient statistics, linear estimator, likelihood); see
``docs/architecture.md``. The estimator of collection over time,
``LongitudinalEstimator``, lives in :mod:`sklearn_uldp.longitudinal` (its old
name here is a deprecated alias).
"""

from ._base import DistributionEstimator, as_channel
from ._em import EMEstimator, maximize_likelihood
from ._empirical import EmpiricalEstimator, ThresholdEstimator
from ._personalized import PersonalizedEstimator
from ._projection import clip_and_normalize, project_to_simplex
from ._table import TableSpec
from ._uncertainty import linear_standard_errors, score_intervals, simulate_statistics

__all__ = [
    "DistributionEstimator",
    "EmpiricalEstimator",
    "ThresholdEstimator",
    "EMEstimator",
    "as_channel",
    "maximize_likelihood",
    "project_to_simplex",
    "clip_and_normalize",
    "PersonalizedEstimator",
    "linear_standard_errors",
    "simulate_statistics",
    "score_intervals",
    "TableSpec",
]


def __getattr__(name):
    # A deprecated alias: ``longitudinal`` sits beside ``estimators`` and
    # imports it, so this import is the one exemption of the layering test
    # (tests/package/test_layering.py, ``DEPRECATED_ALIASES``).
    if name == "LongitudinalEstimator":
        from .. import longitudinal
        from ..utils._deprecation import moved_alias

        return moved_alias(longitudinal, name, __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
