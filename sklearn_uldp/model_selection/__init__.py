"""Privacy/utility search (see the workflow issue; grows here)."""

from ..mechanisms._theta import optimal_theta, urap_expected_l2_loss
from ._choose import choose_mechanism, choose_strategy
from ._search import PrivacyUtilitySearchCV, make_simulation_scorer, true_distribution

__all__ = [
    "PrivacyUtilitySearchCV",
    "choose_mechanism",
    "choose_strategy",
    "make_simulation_scorer",
    "true_distribution",
    "optimal_theta",
    "urap_expected_l2_loss",
]
