"""Plots in scikit-learn's Display style (needs the ``plot`` extra)."""

__all__ = []

from ._displays import (  # noqa: E402
    DistributionDisplay,
    GridHeatmapDisplay,
    PrivacyUtilityDisplay,
)

__all__ += ["PrivacyUtilityDisplay", "DistributionDisplay", "GridHeatmapDisplay"]
