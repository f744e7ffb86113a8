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

import warnings
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
    if channel.report_format == "categorical":
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
    the interval's edge keeps the coverage. The variance is a quadratic
    polynomial in ``t`` for every channel (the statistics are linear in p
    and the variance is their second moment minus the squared mean), so
    three evaluations per category give it and the bounds are the roots of a
    quadratic.

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
    >>> import numpy as np
    >>> from sklearn_uldp import RandomizedResponse
    >>> from sklearn_uldp.estimators import score_intervals
    >>> channel = RandomizedResponse(1.0, categories=[0, 1, 2]).fit().channel_
    >>> stats = channel.statistics(np.array([0] * 500 + [1] * 300 + [2] * 200))
    >>> score_intervals(channel, stats, 0.05).round(3).tolist()
    [[0.588, 0.757], [0.224, 0.382], [0.03, 0.164]]
    """
    p_hat = np.asarray(channel.unbiased_estimate(stats), dtype=float)
    k, n = p_hat.size, stats.n
    if p is None:
        p = project_to_simplex(p_hat)
    p = np.asarray(p, dtype=float)
    z2 = float(norm.ppf(1.0 - level / 2.0)) ** 2
    points = (0.0, 0.5, 1.0, 0.25)
    var = np.empty((k, len(points)))
    for x in range(k):
        rest = p.copy()
        rest[x] = 0.0
        total = rest.sum()
        if total > 0:
            rest /= total
        else:
            rest = np.full(k, 1.0 / (k - 1))
            rest[x] = 0.0
        for j, t in enumerate(points):
            dist = (1.0 - t) * rest
            dist[x] += t
            var[x, j] = np.asarray(channel.estimator_variance(dist, n), dtype=float)[x]
    # V(t) = c0 + c1 t + c2 t^2 through t = 0, 1/2, 1; checked at t = 1/4.
    c0 = var[:, 0]
    c2 = 2.0 * (var[:, 2] - 2.0 * var[:, 1] + var[:, 0])
    c1 = var[:, 2] - var[:, 0] - c2
    quadratic = np.allclose(
        c0 + 0.25 * c1 + 0.0625 * c2, var[:, 3], rtol=1e-6, atol=1e-12 * max(1.0, var.max())
    )
    if not quadratic:  # pragma: no cover - every channel here is quadratic
        raise ValueError(
            f"{channel!r}: the variance of its linear estimator is not quadratic "
            "in p(x); use method='normal' or 'percentile' (parametric bootstrap)."
        )
    # (p_hat - t)^2 - z^2 V(t) <= 0  <=>  a t^2 + b t + c <= 0
    a = 1.0 - z2 * c2
    b = -(2.0 * p_hat + z2 * c1)
    c = p_hat**2 - z2 * c0
    # a = 1 - z^2 c2 > 0 unless the variance grows faster in t than the
    # squared distance (a handful of reports at a tiny budget): then no
    # value of [0, 1] can be excluded.
    wide = ~(a > 0)
    a = np.where(wide, 1.0, a)
    disc = b**2 - 4.0 * a * c
    root = np.sqrt(np.clip(disc, 0.0, None))
    lo = np.clip((-b - root) / (2.0 * a), 0.0, 1.0)
    hi = np.clip((-b + root) / (2.0 * a), 0.0, 1.0)
    # No t in [0, 1] passes (the estimate is far outside it): the nearest end.
    empty = (disc < 0) | (lo > hi) | ((hi <= 0) & (p_hat < 0)) | ((lo >= 1) & (p_hat > 1))
    edge = np.where(p_hat < 0.5, 0.0, 1.0)
    lo = np.where(wide, 0.0, np.where(empty, edge, lo))
    hi = np.where(wide, 1.0, np.where(empty, edge, hi))
    return np.column_stack([lo, hi])


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
