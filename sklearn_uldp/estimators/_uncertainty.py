"""Standard errors and confidence intervals of distribution estimates.

Two sources of uncertainty, documented in the user guide ("Error bars and
tests"):

* **linear**: the empirical estimator p_hat = a f + b is linear in observed
  frequencies, so its variance is known exactly,
  ``Var[p_hat(x)] = a(x)^2 Var[f(x)]`` (``Channel.estimator_variance``); it
  is evaluated at a plug-in distribution (the estimate projected onto the
  simplex) and gives normal (Wald) intervals;
* **bootstrap**: for the non-linear estimates (threshold, projections, EM,
  personalized), a *parametric* bootstrap: new sufficient statistics are
  simulated from the fitted distribution through the channel, the estimator
  is refitted on each, and the spread of the refits gives standard errors
  and percentile intervals. It accounts for the non-negativity and the
  boundary (categories estimated at zero), which Fisher information does
  not.
"""

from __future__ import annotations

import contextlib
import warnings
import weakref
from numbers import Integral
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.stats import norm
from sklearn.base import clone

from ..utils._random import check_random_generator
from ..utils._typing import ArrayLike, RandomStateLike
from ._projection import project_to_simplex

if TYPE_CHECKING:
    from ..mechanisms._channel import Channel, ReportStatistics

__all__ = ["simulate_statistics", "linear_standard_errors", "score_intervals"]


def simulate_statistics(
    channel: Channel,
    p: ArrayLike,
    n: int,
    random_state: RandomStateLike = None,
    *,
    size: int | None = None,
    keep_reports: bool = False,
) -> ReportStatistics | list[ReportStatistics]:
    """Sufficient statistics of ``n`` simulated reports of users drawn from ``p``.

    For one-symbol reports the histogram of outputs is drawn directly (it is
    multinomial with the channel's output distribution ``forward(p)``), which
    costs O(outputs) however large ``n`` is; bit-vector reports are
    privatized user by user with the channel's sampler.

    Parameters
    ----------
    channel : Channel
    p : array-like of shape (k,)
        Distribution of the true values over ``channel.categories``.
    n : int
        Number of reports.
    random_state : None, int or Generator, default=None
        The simulation's randomness (not privacy noise for real users).
    size : int or None, default=None
        Number of independent datasets; ``None`` returns one statistics
        object, an int a list of them.
    keep_reports : bool, default=False
        Keep what the exact likelihood of bit-vector reports needs (EM).

    Returns
    -------
    stats : ReportStatistics or list of ReportStatistics

    Examples
    --------
    >>> from sklearn_uldp import RandomizedResponse
    >>> from sklearn_uldp.estimators import simulate_statistics
    >>> channel = RandomizedResponse(1.0, categories=[0, 1, 2]).fit().channel_
    >>> stats = simulate_statistics(channel, [0.5, 0.3, 0.2], 1000, random_state=0)
    >>> stats.n, int(stats.counts.sum())
    (1000, 1000)
    """
    from ..mechanisms._channel import ReportStatistics

    rng = check_random_generator(random_state)
    p = _as_distribution(p, channel.n_categories)
    n = int(n)
    reps = 1 if size is None else int(size)
    if channel.histogram_reports:
        forward = channel.forward  # type: ignore[attr-defined]  # CategoricalChannel
        m = np.clip(np.asarray(forward(p), dtype=np.float64), 0.0, None)
        m /= m.sum()
        hists = rng.multinomial(n, m, size=reps)
        out = [ReportStatistics(channel, n, h.astype(np.int64)) for h in hists]
    else:
        out = []
        for _ in range(reps):
            codes = np.repeat(np.arange(channel.n_categories), rng.multinomial(n, p))
            reports = channel.sample(codes, rng)
            out.append(
                channel.statistics(channel.encode_reports(reports), keep_reports=keep_reports)
            )
    return out[0] if size is None else out


def linear_standard_errors(
    channel: Channel, stats: ReportStatistics, p: ArrayLike | None = None
) -> np.ndarray:
    """Standard errors of the channel's unbiased (linear) estimate.

    ``sqrt(Var[p_hat(x)])`` with the exact variance of the linear estimator
    (``Channel.estimator_variance``) evaluated at ``p``; by default the
    plug-in, the unbiased estimate projected onto the simplex.

    Parameters
    ----------
    channel : Channel
    stats : ReportStatistics
    p : array-like of shape (k,) or None, default=None

    Returns
    -------
    se : ndarray of shape (k,)

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp import RandomizedResponse
    >>> from sklearn_uldp.estimators import linear_standard_errors
    >>> channel = RandomizedResponse(1.0, categories=[0, 1, 2]).fit().channel_
    >>> stats = channel.statistics(np.array([0] * 500 + [1] * 300 + [2] * 200))
    >>> linear_standard_errors(channel, stats).round(3).tolist()
    [0.043, 0.04, 0.035]
    """
    if p is None:
        p = project_to_simplex(channel.unbiased_estimate(stats))
    var = np.asarray(channel.estimator_variance(np.asarray(p, float), stats.n), dtype=float)
    return np.sqrt(np.clip(var, 0.0, None))


def score_intervals(
    channel: Channel, stats: ReportStatistics, level: float, p: ArrayLike | None = None
) -> np.ndarray:
    """Intervals of each p(x) from the linear estimator, its variance taken at the edge.

    The set of values ``t`` of ``p(x)`` that the unbiased (linear) estimate
    ``p_hat(x)`` does not reject at level ``level``::

        {t in [0, 1] : (p_hat(x) - t)^2 <= z^2 Var_t[p_hat(x)]},

    with ``z = Phi^-1(1 - level / 2)`` and the channel's exact variance
    (``Channel.estimator_variance``) evaluated at the distribution that puts
    ``t`` on ``x`` and spreads ``1 - t`` over the other categories in
    proportion to the plug-in ``p`` (by default the unbiased estimate projected
    onto the simplex). This is the score (Wilson) interval of a proportion,
    for any channel: near zero, where the plug-in variance of a Wald interval
    is too small or the point estimate is pulled towards it, the variance at
    the interval's edge keeps the coverage. The linear estimate is an average
    of per-report contributions of mean p(x), so its variance is
    ``(L_x(p) - p(x)^2) / n`` with ``L_x`` linear in p: quadratic in ``t``,
    known from one evaluation at the plug-in and one per category at a point
    mass (cached per channel), and the bounds are the roots of a quadratic.

    Parameters
    ----------
    channel : Channel
    stats : ReportStatistics
    level : float in (0, 1)
        1 - confidence level of each interval.
    p : array-like of shape (k,) or None, default=None
        The plug-in distribution of the other categories.

    Returns
    -------
    intervals : ndarray of shape (k, 2)
        Within [0, 1]. When no value of ``p(x)`` in [0, 1] is consistent
        with the estimate (far below 0 or above 1), the interval is the
        nearest end point, ``[0, 0]`` or ``[1, 1]``.

    Examples
    --------
    1,000 users, none of them holding "a":

    >>> from sklearn_uldp import UtilityOptimizedRR
    >>> from sklearn_uldp.estimators import score_intervals, simulate_statistics
    >>> urr = UtilityOptimizedRR(1.0, categories=list("abc"), sensitive=["a", "b"])
    >>> channel = urr.fit().channel_
    >>> stats = simulate_statistics(channel, [0.0, 0.3, 0.7], 1000, random_state=0)
    >>> channel.unbiased_estimate(stats).round(3).tolist()
    [0.041, 0.275, 0.684]
    >>> score_intervals(channel, stats, 0.05).round(3).tolist()
    [[0.0, 0.104], [0.21, 0.341], [0.623, 0.748]]
    """
    p_hat = np.asarray(channel.unbiased_estimate(stats), dtype=float)
    k, n = p_hat.size, stats.n
    if p is None:
        p = project_to_simplex(p_hat)
    q = np.asarray(p, dtype=float)
    z2 = float(norm.ppf(1.0 - level / 2.0)) ** 2
    # The linear estimate is an average of per-report contributions c_x(y)
    # of mean p(x), so Var[p_hat(x)] = (L_x(p) - p(x)^2) / n with L_x linear
    # in p (the second moment of c_x). Along t -> (1 - t) rest_x + t e_x:
    # V(t) = ((1 - t) L_x(rest_x) + t L_x(e_x) - t^2) / n, where
    # L_x(rest_x) = (L_x(q) - q(x) L_x(e_x)) / (1 - q(x)).
    L_q = n * _variances(channel, q, n) + q**2
    L_e = _own_second_moments(channel)
    with np.errstate(divide="ignore", invalid="ignore"):
        L_rest = (L_q - q * L_e) / (1.0 - q)
    for x in np.flatnonzero(~(q < 1.0 - 1e-12)):
        # All the plug-in mass on x: spread the rest uniformly.
        rest = np.full(k, 1.0 / (k - 1))
        rest[x] = 0.0
        L_rest[x] = n * _variances(channel, rest, n)[x] + rest[x] ** 2
    c0, c1, c2 = L_rest / n, (L_e - L_rest) / n, np.full(k, -1.0 / n)
    _check_quadratic(channel, q, n, c0, c1, c2)
    # (p_hat - t)^2 - z^2 V(t) <= 0  <=>  a t^2 + b t + c <= 0, a = 1 + z^2/n
    a = 1.0 - z2 * c2
    b = -(2.0 * p_hat + z2 * c1)
    c = p_hat**2 - z2 * c0
    disc = b**2 - 4.0 * a * c
    root = np.sqrt(np.clip(disc, 0.0, None))
    lo = np.clip((-b - root) / (2.0 * a), 0.0, 1.0)
    hi = np.clip((-b + root) / (2.0 * a), 0.0, 1.0)
    # No t in [0, 1] passes (the estimate is far outside it): the nearest end.
    empty = (disc < 0) | (lo > hi) | ((hi <= 0) & (p_hat < 0)) | ((lo >= 1) & (p_hat > 1))
    edge = np.where(p_hat < 0.5, 0.0, 1.0)
    lo = np.where(empty, edge, lo)
    hi = np.where(empty, edge, hi)
    return np.column_stack([lo, hi])


def _variances(channel, p, n):
    return np.asarray(channel.estimator_variance(np.asarray(p, float), n), dtype=float)


#: Second moment L_x(e_x) of each category's contribution when every user
#: holds it, per channel (k evaluations of the variance; a k-vector).
_OWN_MOMENTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _own_second_moments(channel):
    try:
        return _OWN_MOMENTS[channel]
    except (KeyError, TypeError):
        pass
    k = channel.n_categories
    out = np.empty(k)
    for x in range(k):
        e = np.zeros(k)
        e[x] = 1.0
        out[x] = _variances(channel, e, 1)[x] + 1.0
    with contextlib.suppress(TypeError):
        _OWN_MOMENTS[channel] = out
    return out


def _check_quadratic(channel, q, n, c0, c1, c2):
    """The variance formula against one direct evaluation (t = 1/4, x = 0)."""
    t = 0.25
    rest = q.copy()
    rest[0] = 0.0
    if rest.sum() <= 0:
        return
    dist = (1.0 - t) * rest / rest.sum()
    dist[0] += t
    direct = _variances(channel, dist, n)[0]
    if not np.isclose(c0[0] + t * c1[0] + t * t * c2[0], direct, rtol=1e-6, atol=1e-15):
        raise ValueError(  # pragma: no cover - every channel here passes
            f"{channel!r}: the variance of its linear estimator is not the "
            "second moment of per-report contributions minus p(x)^2; use "
            "method='normal' or 'percentile' (parametric bootstrap)."
        )


def _as_distribution(p: Any, k: int) -> np.ndarray:
    p = np.asarray(p, dtype=float)
    if p.shape != (k,) or not np.isfinite(p).all():
        raise ValueError(
            f"Expected a distribution over the channel's {k} categories, got an "
            f"array of shape {p.shape}."
        )
    if np.any(p < 0) or not np.isclose(p.sum(), 1.0, atol=1e-9):
        p = project_to_simplex(p)
    return p / p.sum()


def bootstrap_replicates(estimator, n_resamples, random_state):
    """Refits of ``estimator`` on statistics simulated from its estimate.

    Returns an array of shape (n_resamples, k).
    """
    channel, stats = estimator.channel_, estimator.statistics_
    p = estimator._simulation_distribution()
    sims = simulate_statistics(
        channel, p, stats.n, random_state, size=n_resamples, keep_reports=_needs_reports(estimator)
    )
    template = clone(estimator)
    template.set_params(mechanism=None)
    reps = []
    with warnings.catch_warnings():
        # a refit that stops early is still a draw of the estimator as used
        warnings.simplefilter("ignore")
        for s in sims:
            reps.append(clone(template).fit_statistics(s).distribution_)
    return np.asarray(reps)


def _needs_reports(estimator):
    # a wrapper (PersonalizedEstimator) refits through its inner estimator
    inner = getattr(estimator, "estimator_", None)
    return bool(getattr(inner, "_needs_reports", estimator._needs_reports))


def check_interval_args(alpha, method, simultaneous, n_resamples):
    if not (isinstance(alpha, float | int) and 0 < alpha < 1):
        raise ValueError(
            f"alpha must be a level in (0, 1), such as 0.05 for 95% intervals; got {alpha!r}."
        )
    if method not in ("auto", "score", "linear", "normal", "percentile"):
        raise ValueError(
            f"method must be 'auto', 'score', 'linear', 'normal' or 'percentile'; got {method!r}."
        )
    if not isinstance(simultaneous, bool | np.bool_):
        raise ValueError(f"simultaneous must be True or False; got {simultaneous!r}.")
    if not isinstance(n_resamples, Integral) or n_resamples < 2:
        raise ValueError(
            f"n_resamples must be an integer >= 2 (200 or more for 95% "
            f"intervals); got {n_resamples!r}."
        )


def normal_interval(center, se, level):
    """``center -+ z se`` with ``z = Phi^-1(1 - level / 2)``, clipped to [0, 1]."""
    z = norm.ppf(1.0 - level / 2.0)
    lo = np.clip(center - z * se, 0.0, 1.0)
    hi = np.clip(center + z * se, 0.0, 1.0)
    return np.column_stack([lo, hi])
