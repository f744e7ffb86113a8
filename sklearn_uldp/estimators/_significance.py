"""The significance test of the unbiased estimate, shared by the estimators.

Which categories the reports show to be held by someone: the null variance
``Var0(x)`` of the channel's unbiased estimate (its variance when p(x) = 0),
the Bonferroni threshold ``T(x) = Phi^-1(1 - alpha / k) * sqrt(Var0(x))``
(Wang et al. 2017; Murakami & Kawamoto 2019, Sec. 6.2), and the categories
whose estimate is exact. The threshold estimator (``_empirical``) builds its
estimate on it and every estimator's ``n_significant_`` (``_base``) counts
with it; it lives here, below both, so that neither imports the other.
"""

from __future__ import annotations

import inspect

import numpy as np
from scipy.stats import norm

__all__ = ["exact_categories", "null_variance", "significance_threshold"]


def null_variance(channel, stats):
    """Var0(x) of the channel's unbiased estimate, given the statistics.

    Channels whose null variance depends on unknown masses (blocked Hadamard
    variants) can use the statistics to estimate them; older channels that
    only take ``n`` get ``n``.
    """
    method = channel.null_variance
    try:
        takes_stats = "stats" in inspect.signature(method).parameters
    except (TypeError, ValueError):  # builtins without a signature
        takes_stats = False
    var0 = method(stats.n, stats=stats) if takes_stats else method(stats.n)
    return np.broadcast_to(np.asarray(var0, dtype=float), (channel.n_categories,)).copy()


def exact_categories(channel, var0=None, stats=None):
    """Mask of the categories whose unbiased estimate is exact.

    A category reported only through invertible outputs (a non-sensitive
    value under uRR, uRAP, uOUE, uBD or high-low Hadamard response) has an
    estimate with no noise at p(x) = 0: a report of it is proof. Such an
    estimate is never "insignificant", and no mass is ever moved onto it.
    Uses the channel's ``exact_categories`` when it has one, otherwise the
    categories that are not sensitive and have zero null variance.
    """
    mask = getattr(channel, "exact_categories", None)
    if mask is not None:
        return np.asarray(mask, dtype=bool).copy()
    if var0 is None:
        var0 = null_variance(channel, stats)
    return (np.asarray(var0) == 0.0) & ~np.asarray(channel.sensitive_mask, bool)


def significance_threshold(channel, stats, alpha):
    """The unbiased estimate, its threshold and the exact categories.

    Returns
    -------
    p_hat : ndarray of shape (k,)
        The channel's unbiased estimate.
    threshold : ndarray of shape (k,)
        ``Phi^-1(1 - alpha / k) * sqrt(Var0(x))``: a category is significant
        when ``p_hat`` exceeds it (family-wise level ``alpha``).
    exact : ndarray of bool of shape (k,)
        Categories whose estimate is exact (see :func:`exact_categories`).
    """
    p_hat = np.asarray(channel.unbiased_estimate(stats), dtype=float)
    var0 = null_variance(channel, stats)
    threshold = norm.ppf(1.0 - alpha / p_hat.size) * np.sqrt(var0)
    return p_hat, threshold, exact_categories(channel, var0)
