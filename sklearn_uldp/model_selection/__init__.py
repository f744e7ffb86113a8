"""Privacy/utility search (see the workflow issue; grows here)."""

__all__ = []

from ._search import (  # noqa: E402
    PrivacyUtilitySearchCV,
    make_simulation_scorer,
    true_distribution,
)
from ._theta import optimal_theta, urap_expected_l2_loss  # noqa: E402

__all__ += [
    "PrivacyUtilitySearchCV",
    "make_simulation_scorer",
    "true_distribution",
    "optimal_theta",
    "urap_expected_l2_loss",
]
