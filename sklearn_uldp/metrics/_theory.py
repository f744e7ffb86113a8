"""Closed-form utility of the empirical estimator (mathematics §2).

For every mechanism here the empirical estimate is linear per category,
``p_hat(x) = a(x) f(x) + b(x)`` with ``f(x)`` the frequency of a statistic
whose count is Binomial(n, m(x)) when the n users' values are i.i.d. from p.
Hence ``E||p_hat - p||_2^2 = sum_x a(x)^2 m(x)(1 - m(x)) / n`` exactly and,
by the normal approximation, ``E||p_hat - p||_1 ~ sqrt(2 / (pi n)) sum_x
|a(x)| sqrt(m(x)(1 - m(x)))`` (Murakami & Kawamoto, Props. 6, 9, 14).
For a fixed population (values not redrawn) the variance is
``sum_i Var(statistic | x_i)``, never larger: these formulas are then upper
bounds.

:func:`ubd_converse_bound` is the other side: the smallest worst-case
expected squared l2 loss any ULDP mechanism and estimator can reach
(arXiv 2509.24173), which the utility-optimized block design with its
optimal design reaches.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from ..mechanisms._base import as_channel
from ..mechanisms._block_design import ubd_converse_bound
from ..utils._docstrings import fill_doc

if TYPE_CHECKING:
    from ..mechanisms._base import BaseMechanism
    from ..mechanisms._channel import Channel

__all__ = [
    "expected_l2_loss",
    "expected_l1_loss",
    "expected_total_variation",
    "ubd_converse_bound",
]


def _sections(returns: str) -> str:
    """The Parameters and Returns sections every expected loss shares."""
    return f"""
        Parameters
        ----------
        mechanism : fitted mechanism, mechanism with explicit categories, Channel or spec
        p : array-like of shape (k,)
            True distribution (users i.i.d. from p).
        n : int
            Number of users.

        Returns
        -------
        {returns} : float
        """


_DOCS = {"loss": _sections("loss"), "distance": _sections("distance")}


def _channel_and_p(mechanism, p):
    channel = as_channel(mechanism)
    p = np.asarray(p, dtype=float)
    if p.shape != (channel.n_categories,):
        raise ValueError(f"p must be a distribution over the {channel.n_categories} categories.")
    return channel, p


@fill_doc(_DOCS)
def expected_l2_loss(
    mechanism: BaseMechanism | Channel | dict[str, Any], p: ArrayLike, n: int
) -> float:
    """Exact expected squared l2 loss of the empirical estimator.

    %(loss)s

    Examples
    --------
    >>> from sklearn_uldp import RandomizedResponse
    >>> from sklearn_uldp.metrics import expected_l2_loss
    >>> mech = RandomizedResponse(epsilon=1.0, categories=[0, 1])
    >>> round(expected_l2_loss(mech, [0.5, 0.5], n=1000), 6)
    0.002341
    """
    channel, p = _channel_and_p(mechanism, p)
    return float(channel.estimator_variance(p, n).sum())


@fill_doc(_DOCS)
def expected_l1_loss(
    mechanism: BaseMechanism | Channel | dict[str, Any], p: ArrayLike, n: int
) -> float:
    """Large-n expected l1 loss of the empirical estimator.

    %(loss)s

    Examples
    --------
    >>> from sklearn_uldp import UtilityOptimizedRR
    >>> from sklearn_uldp.metrics import expected_l1_loss
    >>> mech = UtilityOptimizedRR(epsilon=1.0, sensitive=[0], categories=[0, 1, 2])
    >>> round(expected_l1_loss(mech, [0.2, 0.3, 0.5], n=10_000), 4)
    0.0171
    """
    channel, p = _channel_and_p(mechanism, p)
    sd = np.sqrt(channel.estimator_variance(p, n))
    return float(np.sqrt(2.0 / np.pi) * sd.sum())


@fill_doc(_DOCS)
def expected_total_variation(
    mechanism: BaseMechanism | Channel | dict[str, Any], p: ArrayLike, n: int
) -> float:
    """Large-n expected total variation of the empirical estimator (l1 / 2).

    %(distance)s

    Examples
    --------
    >>> from sklearn_uldp import NonPrivate
    >>> from sklearn_uldp.metrics import expected_total_variation
    >>> tv = expected_total_variation(NonPrivate(categories=[0, 1]), [0.5, 0.5], 100)
    >>> round(tv, 4)
    0.0399
    """
    return 0.5 * expected_l1_loss(mechanism, p, n)
