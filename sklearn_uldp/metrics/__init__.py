"""Utility measures and the closed-form utility theory of the mechanisms."""

from ._losses import l1_loss, l2_loss, mean_squared_error, total_variation
from ._personalized import personalized_loss_terms
from ._theory import (
    expected_l1_loss,
    expected_l2_loss,
    expected_total_variation,
    ubd_converse_bound,
)

__all__ = [
    "l1_loss",
    "l2_loss",
    "mean_squared_error",
    "total_variation",
    "expected_l1_loss",
    "expected_l2_loss",
    "expected_total_variation",
    "personalized_loss_terms",
    "ubd_converse_bound",
]
