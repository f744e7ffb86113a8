"""Privacy/utility search (see the workflow issue; grows here)."""

from ._choose import choose_mechanism, choose_strategy
from ._search import PrivacyUtilitySearchCV, make_simulation_scorer, true_distribution
from ._theta import optimal_theta, urap_expected_l2_loss

__all__ = [
    "PrivacyUtilitySearchCV",
    "choose_mechanism",
    "choose_strategy",
    "make_simulation_scorer",
    "true_distribution",
    "optimal_theta",
    "urap_expected_l2_loss",
]
