"""Plots in scikit-learn's Display style (needs the ``plot`` extra)."""

from ._displays import DistributionDisplay, GridHeatmapDisplay, PrivacyUtilityDisplay

__all__ = [
    "PrivacyUtilityDisplay",
    "DistributionDisplay",
    "GridHeatmapDisplay",
]
