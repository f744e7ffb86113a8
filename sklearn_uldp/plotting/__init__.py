"""Plots in scikit-learn's Display style (needs the ``plot`` extra)."""

from ._displays import (
    DistributionDisplay,
    ErrorBarDisplay,
    GridHeatmapDisplay,
    PrivacyUtilityDisplay,
)

__all__ = [
    "PrivacyUtilityDisplay",
    "DistributionDisplay",
    "ErrorBarDisplay",
    "GridHeatmapDisplay",
]
