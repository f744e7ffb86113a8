"""Distances between distributions (mathematics §5)."""

from __future__ import annotations

from collections.abc import Callable

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


_Loss = Callable[[ArrayLike, ArrayLike], float]


def _documented(returns: str, example: str) -> Callable[[_Loss], _Loss]:
    """Complete a loss's one-line docstring with the sections every loss shares.

    The example is the loss between ``[0.5, 0.5]`` and ``[0.25, 0.75]``.
    """

    def decorate(loss: _Loss) -> _Loss:
        name = loss.__name__
        loss.__doc__ = f"""{(loss.__doc__ or "").strip()}

    Parameters
    ----------
    p_true, p_est : array-like of shape (k,)

    Returns
    -------
    {returns} : float

    Examples
    --------
    >>> from sklearn_uldp.metrics import {name}
    >>> {name}([0.5, 0.5], [0.25, 0.75])
    {example}
    """
        return loss

    return decorate


@_documented("loss", "0.5")
def l1_loss(p_true: ArrayLike, p_est: ArrayLike) -> float:
    """l1 loss ``sum_x abs(p_est(x) - p_true(x))``."""
    t, e = _pair(p_true, p_est)
    return float(np.abs(e - t).sum())


@_documented("distance", "0.25")
def total_variation(p_true: ArrayLike, p_est: ArrayLike) -> float:
    """Total variation distance, half the l1 loss."""
    return 0.5 * l1_loss(p_true, p_est)


@_documented("loss", "0.125")
def l2_loss(p_true: ArrayLike, p_est: ArrayLike) -> float:
    """Squared l2 loss sum_x (p_est(x) - p_true(x))^2 (the ULDP paper's "l2 loss")."""
    t, e = _pair(p_true, p_est)
    return float(np.square(e - t).sum())


@_documented("mse", "0.0625")
def mean_squared_error(p_true: ArrayLike, p_est: ArrayLike) -> float:
    """Mean squared error over categories, ``l2_loss / k``."""
    t, e = _pair(p_true, p_est)
    return float(np.square(e - t).mean())
