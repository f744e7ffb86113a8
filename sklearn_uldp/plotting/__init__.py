"""Plots in scikit-learn's Display style (needs the ``plot`` extra)."""

__all__ = []
