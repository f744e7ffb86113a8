"""The mean of a bounded numeric column from unbiased reports, with intervals.

The mean mechanisms (Duchi, Piecewise, Hybrid, the utility-optimized one-bit
mechanism) report for each user a number whose expectation is the user's
value, so the mean of the reports is an unbiased estimate of the mean of the
values, with the standard error of a sample mean. The intervals:

* ``"normal"``: mean +- z_{1-alpha/2} s / sqrt(n) (s: the reports' standard
  deviation). Reports are bounded, so it is asymptotically exact; at small n
  with skewed reports (Duchi's two values with most users at one end) it
  under-covers, and with two-valued reports it misses its level at many n
  however large (the lattice of a binomial count).
* ``"bernstein"``: Bernstein's inequality with the channel's bounds: a report
  lies within R of the mean and has variance at most sigma^2 (the channel's
  worst-case noise variance plus the largest variance of a value in the
  bounds), so ``P(|mean - mu| >= s) <= 2 exp(-n s^2 / (2 sigma^2 + 2 R s / 3))``
  for every n and every distribution of the values: never below its level,
  wider than the normal interval.
* ``"clopper-pearson"``: for channels whose reports always take one of two
  values (Duchi's, Hybrid's below eps* ~ 0.61, the one-bit mechanism whose
  sensitive range is the whole of the bounds), the exact binomial interval
  of the share of high reports, mapped to the mean. Valid at every n when
  the users' values are equal; when they differ the count is a sum of
  Bernoulli variables with different means, which Hoeffding (1956, Theorem
  4) showed falls in any interval reaching at least one count either side of
  its mean np at least as often as the binomial count with that mean (so
  the level holds unless n p (1 - p) is tiny).
* ``"auto"`` (default): Clopper-Pearson's for two-valued channels; for the
  others the normal interval widened by one lattice step of the mean
  (``(high - low) / n`` with high, low the two values that some inputs'
  reports are restricted to, e.g. the one-bit mechanism's "+" and "-"; 0
  for Piecewise and Hybrid) when Cochran's rule for the sample mean of a
  skewed population, ``n >= 25 g^2``, holds for the largest skewness g that
  the channel's reports can have (``g <= W / sigma_min``: W the spread of the
  report values, sigma_min the smallest noise standard deviation of a
  report; so the choice depends on n and the channel only, never on the
  data), and n >= 100; else Bernstein's.

The choice was made by exact binomial coverage for two-valued reports and
Monte Carlo for the others (``benchmarks/bench_numeric.py --sections
coverage``, ``docs/numerical.md``).
"""

from __future__ import annotations

import math
from numbers import Real
from typing import Any

import numpy as np
from scipy.stats import beta, norm

from ..exceptions import ReportMismatchError
from ..mechanisms._channel import Channel
from ._estimator_base import NumericEstimatorBase

__all__ = [
    "MeanEstimator",
    "bernstein_half_width",
    "interval_bounds",
    "mean_interval",
    "normal_sample_size",
]

#: Smallest sample for the normal interval under ``method="auto"``.
_AUTO_MIN_N = 100
#: Cochran's constant: the normal interval needs n >= 25 g^2 (g: skewness).
_COCHRAN = 25.0


def bernstein_half_width(
    n: float, variance_bound: float, range_bound: float, alpha: float
) -> float:
    """Half-width s of the two-sided Bernstein interval of a sample mean.

    Solves ``2 exp(-n s^2 / (2 v + 2 R s / 3)) = alpha`` for s, for n
    independent reports within R of the mean with variance at most v.

    Examples
    --------
    >>> from sklearn_uldp.numeric import bernstein_half_width
    >>> round(bernstein_half_width(100, 1.0, 3.0, 0.05), 3)
    0.311
    """
    log_term = math.log(2.0 / alpha)
    a = 2.0 * range_bound * log_term / 3.0
    return (a + math.sqrt(a * a + 8.0 * n * variance_bound * log_term)) / (2.0 * n)


class MeanEstimator(NumericEstimatorBase):
    """Estimate the mean of a bounded numeric column from unbiased reports.

    The reports of :class:`~sklearn_uldp.numeric.DuchiMechanism`,
    :class:`~sklearn_uldp.numeric.PiecewiseMechanism`,
    :class:`~sklearn_uldp.numeric.HybridMechanism` and
    :class:`~sklearn_uldp.numeric.UtilityOptimizedOneBitMechanism` are
    unbiased estimates of their users' values; their mean is the estimate.
    The reports carry their channel (or pass ``mechanism``); reports of
    several columns of one mechanism are pooled. For a
    :class:`~sklearn_uldp.numeric.MultiNumericMechanism` the estimate is one
    mean per attribute.

    ``partial_fit`` adds the histogram of output codes, so chunked fitting
    equals ``fit`` exactly.

    Parameters
    ----------
    mechanism : mechanism, Channel, dict or None, default=None
        The mechanism that produced the reports, for reports that do not
        carry it (read from a file, converted to plain arrays).

    Attributes
    ----------
    channel_ : Channel
        The channel of the reports.
    statistics_ : ReportStatistics
        The histogram of output codes.
    n_reports_ : int
        Number of reports.
    mean_ : float or ndarray of shape (n_attributes,)
        The estimated mean, in the column's units.
    standard_error_ : float or ndarray
        Its estimated standard error (the reports' standard deviation over
        sqrt(n)).

    See Also
    --------
    SquareWaveEstimator : The whole distribution (and quantiles).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp import HybridMechanism, MeanEstimator
    >>> ages = np.random.default_rng(0).integers(18, 90, size=(20_000, 1))
    >>> reports = HybridMechanism(epsilon=1.0, bounds=(0, 120),
    ...                           random_state=0).fit_transform(ages)
    >>> est = MeanEstimator().fit(reports)
    >>> low, high = est.confidence_interval(alpha=0.05)
    >>> bool(low < ages.mean() < high), round(float(est.standard_error_), 1)
    (True, 0.9)
    """

    def _check_channel(self, channel):
        super()._check_channel(channel)
        if not getattr(channel, "unbiased_reports", False):
            raise ReportMismatchError(
                f"MeanEstimator needs reports that are unbiased estimates of the "
                f"values (Duchi, Piecewise, Hybrid, utility-optimized one-bit); got "
                f"reports of {channel!r}. Estimate its distribution instead "
                "(SquareWaveEstimator for SquareWave), whose mean_ is the mean."
            )

    # --------------------------------------------------------------- moments
    def _compute(self):
        stats = self.statistics_
        channel = self.channel_
        moments = getattr(channel, "report_moments", None)
        if moments is not None:  # several attributes (MultiNumericChannel)
            return moments(stats)
        out = _moments(channel.output_values(), stats.counts, stats.n)
        bounds = interval_bounds(channel)
        out["variance_bound"], out["range_bound"], out["skewness_bound"] = bounds
        return out

    @property
    def mean_(self) -> Any:
        """The estimated mean (column units)."""
        return self._estimate()["mean"]

    @property
    def standard_error_(self) -> Any:
        """The estimated standard error of :attr:`mean_`."""
        cache = self._estimate()
        return cache["std"] / np.sqrt(cache["n"])

    # ------------------------------------------------------------- intervals
    _interval_methods = ("auto", "normal", "bernstein", "clopper-pearson")

    def confidence_interval(self, alpha: float = 0.05, method: str = "auto") -> tuple[Any, Any]:
        """A confidence interval for the mean at level ``1 - alpha``.

        Parameters
        ----------
        alpha : float in (0, 1), default=0.05
        method : {"auto", "normal", "bernstein", "clopper-pearson"}, default="auto"
            "normal": the Wald interval (asymptotic); "bernstein": Bernstein's
            inequality with the channel's bounds (valid for every n, wider);
            "clopper-pearson": the exact binomial interval, for channels whose
            reports always take one of two values (Duchi's; valid for every
            n); "auto": Clopper-Pearson's for those channels, else the normal
            interval widened by one lattice step of the mean from
            :func:`normal_sample_size` reports on (Cochran's rule with the
            largest skewness the channel allows), Bernstein's below. See
            :func:`mean_interval` and ``docs/numerical.md``.

        Returns
        -------
        (low, high) : floats, or ndarrays of shape (n_attributes,)
        """
        if not (isinstance(alpha, Real) and 0 < alpha < 1):
            raise ValueError(f"alpha must be in (0, 1), got {alpha!r}.")
        if method not in self._interval_methods:
            raise ValueError(
                f"method must be one of {list(self._interval_methods)}, got {method!r}."
            )
        cache = self._estimate()
        mean = np.asarray(cache["mean"], dtype=float)
        n = np.asarray(cache["n"], dtype=float)
        std = np.asarray(cache["std"], dtype=float)
        channel = self.channel_
        if mean.ndim == 0:
            return mean_interval(channel, mean, std, n, alpha=alpha, method=method)
        low, high = np.empty(mean.shape), np.empty(mean.shape)
        for j in range(mean.shape[0]):  # MultiNumericChannel: one channel per attribute
            low[j], high[j] = mean_interval(
                channel.attribute_channel(j), mean[j], std[j], n[j], alpha=alpha, method=method
            )
        return low, high

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = False
        return tags


def interval_bounds(channel):
    """(v, R, g) of one report, whatever the distribution of the values:
    its variance is at most v, it lies within R of the mean, and the
    absolute skewness of the reports' distribution is at most g.

    Var[report] = E[Var[report | x]] + Var[x] <= the channel's worst-case
    noise variance + ((high - low) / 2)^2, and the mean lies in the bounds.
    The skewness: |E (Y - mu)^3| <= W E (Y - mu)^2 for reports spread over
    W, and Var[Y] >= sigma_min^2 (the smallest noise variance), so
    |g| <= W / sigma_min.
    """
    cached = channel.__dict__.get("_interval_bounds")
    if cached is not None:
        return cached
    values = channel.output_values()
    half = (channel.high - channel.low) / 2.0
    variance = channel.worst_case_variance() + half**2
    reach = max(float(values.max()) - channel.low, channel.high - float(values.min()))
    grid = np.unique(
        np.concatenate([channel.default_inputs(), np.linspace(channel.low, channel.high, 4097)])
    )
    smallest = float(np.min(channel.variance(grid)))
    spread = float(values.max() - values.min())
    skew = spread / math.sqrt(smallest) if smallest > 0 else np.inf
    cached = (variance, reach, skew)
    channel.__dict__["_interval_bounds"] = cached
    return cached


def mean_interval(
    channel: Channel,
    mean: Any,
    std: Any,
    n: Any,
    *,
    alpha: float = 0.05,
    method: str = "auto",
) -> tuple[Any, Any]:
    """The interval of :meth:`MeanEstimator.confidence_interval`, vectorized.

    For the reports of one channel with sample mean ``mean``, standard
    deviation ``std`` (``ddof=1``) and count ``n`` (arrays broadcast), e.g.
    over the samples of a Monte Carlo study.

    Parameters
    ----------
    channel : Channel
        A channel with unbiased reports (Duchi, Piecewise, Hybrid, one-bit).
    mean, std, n : float or array-like
    alpha : float in (0, 1), default=0.05
    method : {"auto", "normal", "bernstein", "clopper-pearson"}, default="auto"

    Returns
    -------
    (low, high) : floats, or ndarrays of the broadcast shape

    Examples
    --------
    >>> from sklearn_uldp.numeric import DuchiChannel, mean_interval
    >>> channel = DuchiChannel((0, 1), epsilon=1.0)  # reports -0.58 or 1.58
    >>> low, high = mean_interval(channel, 0.5, 1.0, 400)
    >>> round(low, 3), round(high, 3)
    (0.392, 0.608)
    """
    mean, std, n = np.broadcast_arrays(
        np.asarray(mean, dtype=float), np.asarray(std, dtype=float), np.asarray(n, dtype=float)
    )
    if method not in MeanEstimator._interval_methods:
        raise ValueError(
            f"method must be one of {', '.join(map(repr, MeanEstimator._interval_methods))}, "
            f"got {method!r}."
        )
    if not (isinstance(alpha, Real) and 0 < alpha < 1):
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}.")
    # Channels other than the numeric ones (e.g. a custom unbiased channel)
    # say nothing about two-valued reports: the general rule applies.
    two_point_reports = getattr(channel, "two_point_reports", None)
    two_point = two_point_reports() if two_point_reports is not None else None
    every = two_point is not None and two_point[2]
    if method == "clopper-pearson" and not every:
        raise ValueError(
            f"method='clopper-pearson' needs reports that always take one of two values "
            f"(Duchi's mechanism, Hybrid below epsilon ~ 0.61, the one-bit mechanism "
            f"whose sensitive range is the whole of the bounds); {channel!r} reports "
            "more values. Use method='auto' (or 'bernstein', valid at every n)."
        )
    if method == "clopper-pearson" or (method == "auto" and every):
        low, high = _clopper_pearson(two_point[0], two_point[1], mean, n, alpha)
    else:
        if method in ("auto", "bernstein"):
            v, r, g = interval_bounds(channel)
            bern = np.vectorize(
                lambda ni: bernstein_half_width(ni, v, r, alpha) if ni > 0 else np.inf,
                otypes=[float],
            )(n)
        if method == "bernstein":
            half = bern
        else:
            with np.errstate(divide="ignore", invalid="ignore"):
                half = norm.ppf(1.0 - alpha / 2.0) * std / np.sqrt(n)
            if method == "auto":
                # One lattice step of the mean: with reports restricted to two
                # values (all users sensitive) the mean is a binomial count's,
                # whose normal interval misses its level by ~0.005 at many n
                # however large; the step restores it (exact binomial sums).
                if two_point is not None:
                    half = half + (two_point[1] - two_point[0]) / n
                normal = (n >= _AUTO_MIN_N) & (std > 0) & (n >= _COCHRAN * g**2)
                half = np.where(normal, half, bern)
        low, high = mean - half, mean + half
    if np.ndim(low) == 0:
        return float(low), float(high)
    return low, high


def _clopper_pearson(minus, plus, mean, n, alpha):
    """Clopper-Pearson's interval for reports in {minus, plus}, mapped to the mean."""
    spread = plus - minus
    k = np.clip(np.rint((mean - minus) * n / spread), 0, n)
    with np.errstate(invalid="ignore"):
        p_low = np.where(k > 0, beta.ppf(alpha / 2.0, k, n - k + 1.0), 0.0)
        p_high = np.where(k < n, beta.ppf(1.0 - alpha / 2.0, k + 1.0, n - k), 1.0)
    return minus + spread * p_low, minus + spread * p_high


def _moments(values, counts, n):
    """Mean, standard deviation and skewness of reports from their histogram."""
    counts = np.asarray(counts)
    seen = counts > 0
    v = np.asarray(values, dtype=float)[seen]
    c = counts[seen].astype(float)
    if n == 0:
        raise ValueError("No reports: fit on at least one report.")
    if v.size < 2:  # one distinct report: no spread (exactly, not by rounding)
        return {"mean": float(v[0]), "std": 0.0, "n": int(n), "skewness": np.inf}
    mean = float(np.dot(c, v) / n)
    dev = v - mean
    dev2 = dev * dev
    m2 = float(np.dot(c, dev2))
    var = m2 / (n - 1) if n > 1 else 0.0
    m3 = float(np.dot(c, dev2 * dev)) / n  # (dev**3 calls pow: 100x slower)
    pop_var = m2 / n
    skew = m3 / pop_var**1.5 if pop_var > 0 else np.inf
    out = {"mean": mean, "std": math.sqrt(var), "n": int(n), "skewness": skew}
    return out


def normal_sample_size(channel: Channel) -> int:
    """Reports from which ``method="auto"`` uses the (widened) normal interval.

    ``max(100, 25 g^2)`` with g the largest skewness the channel's reports
    can have (:func:`interval_bounds`): Cochran's rule for the normal
    approximation of a sample mean, made independent of the data. (For
    channels whose reports always take one of two values, such as Duchi's,
    ``"auto"`` uses Clopper-Pearson's interval at every n instead.)

    Examples
    --------
    >>> from sklearn_uldp.numeric import HybridChannel, normal_sample_size
    >>> normal_sample_size(HybridChannel((0, 1), epsilon=1.0))
    389
    """
    skew = interval_bounds(channel)[2]
    return int(max(_AUTO_MIN_N, math.ceil(_COCHRAN * skew**2)))
