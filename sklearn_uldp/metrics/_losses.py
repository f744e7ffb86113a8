"""Distances between distributions (mathematics §5)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["l1_loss", "total_variation", "l2_loss", "mean_squared_error"]


def _pair(p_true: ArrayLike, p_est: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    a = np.asarray(p_true, dtype=np.float64)
    b = np.asarray(p_est, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(
            "Both distributions must be 1-D arrays over the same categories; "
            f"got shapes {a.shape} and {b.shape}."
        )
    return a, b


def l1_loss(p_true: ArrayLike, p_est: ArrayLike) -> float:
    """l1 loss ``sum_x abs(p_est(x) - p_true(x))``.

    Parameters
    ----------
    p_true, p_est : array-like of shape (k,)

    Returns
    -------
    loss : float

    Examples
    --------
    >>> from sklearn_uldp.metrics import l1_loss
    >>> l1_loss([0.5, 0.5], [0.25, 0.75])
    0.5
    """
    t, e = _pair(p_true, p_est)
    return float(np.abs(e - t).sum())


def total_variation(p_true: ArrayLike, p_est: ArrayLike) -> float:
    """Total variation distance, half the l1 loss.

    Parameters
    ----------
    p_true, p_est : array-like of shape (k,)

    Returns
    -------
    distance : float

    Examples
    --------
    >>> from sklearn_uldp.metrics import total_variation
    >>> total_variation([0.5, 0.5], [0.25, 0.75])
    0.25
    """
    return 0.5 * l1_loss(p_true, p_est)


def l2_loss(p_true: ArrayLike, p_est: ArrayLike) -> float:
    """Squared l2 loss sum_x (p_est(x) - p_true(x))^2 (the ULDP paper's "l2 loss").

    Parameters
    ----------
    p_true, p_est : array-like of shape (k,)

    Returns
    -------
    loss : float

    Examples
    --------
    >>> from sklearn_uldp.metrics import l2_loss
    >>> l2_loss([0.5, 0.5], [0.25, 0.75])
    0.125
    """
    t, e = _pair(p_true, p_est)
    return float(np.square(e - t).sum())


def mean_squared_error(p_true: ArrayLike, p_est: ArrayLike) -> float:
    """Mean squared error over categories, ``l2_loss / k``.

    Parameters
    ----------
    p_true, p_est : array-like of shape (k,)

    Returns
    -------
    mse : float

    Examples
    --------
    >>> from sklearn_uldp.metrics import mean_squared_error
    >>> mean_squared_error([0.5, 0.5], [0.25, 0.75])
    0.0625
    """
    t, e = _pair(p_true, p_est)
    return float(np.square(e - t).mean())
