"""The optimal theta of utility-optimized RAPPOR (mathematics §2.5)."""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import minimize_scalar

from ..utils._validation import check_epsilon

__all__ = ["optimal_theta", "urap_expected_l2_loss"]


def _prior(prior, k):
    if prior is None or (isinstance(prior, str) and prior == "uniform"):
        return np.full(k, 1.0 / k)
    p = np.asarray(prior, dtype=float)
    if p.shape != (k,) or np.any(p < 0) or not np.isfinite(p).all() or p.sum() <= 0:
        raise ValueError(
            f"prior must be 'uniform' or a non-negative array over the {k} categories."
        )
    return p / p.sum()


def _mask(sensitive):
    mask = np.asarray(sensitive, dtype=bool).ravel()
    if mask.size < 2 or not mask.any():
        raise ValueError(
            "sensitive must be a boolean mask over at least two categories with "
            "at least one sensitive category."
        )
    return mask


def urap_expected_l2_loss(
    theta: float | ArrayLike,
    epsilon: float,
    sensitive: ArrayLike,
    prior: Literal["uniform"] | ArrayLike = "uniform",
    n: int = 1,
) -> float | np.ndarray:
    """Expected squared l2 loss of the empirical uRAP estimator as a function of theta.

    ``E||p_hat - p||_2^2 = sum_x a_x^2 m_x (1 - m_x) / n`` (mathematics §2)
    with, on sensitive bits, ``a = 1/(theta - d1)``, ``m = d1 + (theta - d1)
    p_x`` and, on non-sensitive bits, ``a = 1/(1 - d2)``, ``m = (1 - d2) p_x``
    (mathematics §2.5).

    Parameters
    ----------
    theta : float or array-like
        Values in (0, 1).
    epsilon : float
    sensitive : array-like of bool of shape (k,)
        Sensitive mask (all True gives generalized RAPPOR).
    prior : "uniform" or array-like of shape (k,), default="uniform"
        The distribution p the loss is computed under.
    n : int, default=1
        Number of users (the loss scales as 1/n).

    Returns
    -------
    loss : float or ndarray
        Same shape as ``theta``.

    Examples
    --------
    >>> from sklearn_uldp.model_selection import urap_expected_l2_loss
    >>> loss = urap_expected_l2_loss([0.3, 0.5, 0.9], 1.0, [True, False, False],
    ...                              n=1000)
    >>> bool(loss[1] < loss[0] and loss[1] < loss[2])
    True
    """
    E = np.exp(check_epsilon(epsilon))
    mask = _mask(sensitive)
    p = _prior(prior, mask.size)
    th = np.asarray(theta, dtype=float)[..., None]
    d1 = th / ((1.0 - th) * E + th)
    one_minus_d2 = 1.0 - ((1.0 - th) * E + th) / E
    a_s = 1.0 / (th - d1)
    m_s = d1 + (th - d1) * p
    a_n = 1.0 / one_minus_d2
    m_n = one_minus_d2 * p
    var = np.where(mask, a_s**2 * m_s * (1.0 - m_s), a_n**2 * m_n * (1.0 - m_n))
    loss = var.sum(axis=-1) / n
    return float(loss) if np.ndim(theta) == 0 else loss


def optimal_theta(
    epsilon: float, sensitive: ArrayLike, prior: Literal["uniform"] | ArrayLike = "uniform"
) -> float:
    """The theta of uRAP that minimizes the expected l2 loss (mathematics §2.5).

    The paper leaves theta free; the expected squared l2 loss of the
    empirical estimator is a closed-form function of theta
    (:func:`urap_expected_l2_loss`) and this returns its minimizer over
    (0, 1) for the given prior (``n`` only scales the loss). With every
    category sensitive and a vanishing prior mass per category this tends to
    OUE's theta = 1/2; non-sensitive categories push theta up (their bits
    are kept with probability 1 - d2 = theta (e^eps - 1) / e^eps).

    Parameters
    ----------
    epsilon : float
        Privacy budget.
    sensitive : array-like of bool of shape (k,)
        Sensitive mask over the categories.
    prior : "uniform" or array-like of shape (k,), default="uniform"
        The distribution the loss is averaged under (a guess of p).

    Returns
    -------
    theta : float

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp.model_selection import optimal_theta
    >>> mask = np.zeros(400, dtype=bool); mask[:76] = True
    >>> round(optimal_theta(1.0, mask), 3)
    0.503
    >>> round(optimal_theta(1.0, np.ones(1000, dtype=bool)), 2)   # ~ OUE
    0.5
    """
    check_epsilon(epsilon)
    mask = _mask(sensitive)
    p = _prior(prior, mask.size)

    def loss(t):
        return urap_expected_l2_loss(t, epsilon, mask, p)

    # A coarse grid guards against a non-unimodal loss; Brent refines.
    grid = np.linspace(1e-3, 1 - 1e-3, 999)
    values = np.asarray(urap_expected_l2_loss(grid, epsilon, mask, p))
    i = int(np.argmin(values))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]
    res = minimize_scalar(loss, bounds=(lo, hi), method="bounded", options={"xatol": 1e-10})
    best = float(res.x) if res.fun <= values[i] else float(grid[i])
    return best
