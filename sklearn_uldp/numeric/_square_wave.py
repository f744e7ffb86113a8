"""Li et al.'s Square Wave mechanism and its EM / EMS distribution estimator.

Li, Wang, Lopuhaä-Zwakenberg, Skoric & Li, "Estimating Numerical
Distributions under Local Differential Privacy", SIGMOD 2020. On the unit
scale v in [0, 1], the report has density ``p = e^eps / (2 b e^eps + 1)`` on
``[v - b, v + b]`` and ``q = 1 / (2 b e^eps + 1)`` elsewhere on ``[-b, 1 +
b]``, with the band half-width that maximizes the mutual information
between a uniform input and the report (the paper's Eq. (4)):

    b = (eps e^eps - e^eps + 1) / (2 e^eps (e^eps - 1 - eps)).

Here the output range is cut into :data:`~sklearn_uldp.numeric.GRID_CELLS`
cells and the band is ``L = round(M 2b / (1 + 2b))`` whole cells (so ``b`` is
rounded to ``L / (2 (M - L))``); see :mod:`sklearn_uldp.numeric._band`.

The estimator discretizes the input range into ``n_bins`` bins and the
output range into ``n_output_bins`` bins, builds the exact transition
matrix between them (each entry is the mean, over a value uniform in the
input bin, of the probability of the output bin: an exact integral of a
piecewise-linear function), and maximizes the likelihood of the histogram
of reports by EM, optionally smoothing the estimate between steps with the
binomial kernel [1, 2, 1] / 4 (EMS, the paper's default and ours). Each step
costs two products with the (n_output_bins, n_bins) matrix, whatever the
number of reports.
"""

from __future__ import annotations

import math
import warnings
from numbers import Integral, Real
from typing import Any

import numpy as np
from sklearn.utils._param_validation import Interval

from ..exceptions import ConvergenceWarning, ReportMismatchError
from ..utils._random import check_random_generator
from ..utils._typing import ArrayLike, RandomStateLike
from ._band import BandChannel
from ._base import GRID_CELLS, _EpsilonBoundsMechanism
from ._docs import fill_numeric_doc, mechanism_doc
from ._estimator_base import NumericEstimatorBase
from ._kernels import band_em
from ._sampled import report_law

__all__ = [
    "SquareWave",
    "SquareWaveChannel",
    "SquareWaveEstimator",
    "square_wave_band",
    "BandTransition",
]


def square_wave_band(epsilon: float) -> float:
    """The paper's optimal band half-width b on the unit scale [0, 1].

    Parameters
    ----------
    epsilon : float
        The privacy budget of a report.

    Returns
    -------
    band : float
        ``b = (eps e^eps - e^eps + 1) / (2 e^eps (e^eps - 1 - eps))``.

    Examples
    --------
    >>> from sklearn_uldp.numeric import square_wave_band
    >>> round(square_wave_band(1.0), 4)
    0.2561
    """
    if epsilon > 300.0:  # e^eps e^eps overflows: b ~ eps e^-eps / 2
        return 0.5 * epsilon * math.exp(-epsilon)
    e = math.exp(epsilon)
    growth = math.expm1(epsilon)
    numerator = epsilon * e - growth
    denominator = 2.0 * e * (growth - epsilon)
    return numerator / denominator


def _band_length(epsilon, cells=GRID_CELLS):
    b = square_wave_band(epsilon)
    return int(min(max(round(cells * 2.0 * b / (1.0 + 2.0 * b)), 1), cells - 1))


@fill_numeric_doc
class SquareWaveChannel(BandChannel):
    """Li et al.'s Square Wave channel on an output grid of ``GRID_CELLS`` cells.

    %(channel_parameters)s

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp.numeric import SquareWaveChannel
    >>> channel = SquareWaveChannel((0, 1), epsilon=1.0)
    >>> round(channel.band, 4), channel.n_outputs
    (0.2561, 65536)
    >>> P = channel.output_probabilities([0.0, 1.0])
    >>> round(float(np.log((P[0] / P[1]).max())), 6)
    1.0
    """

    name = "square_wave"
    fake_refusal = (
        "its estimate is a distribution over bins, which the fakes would mix "
        "with the distribution of a uniform input; de-mixing it is not implemented"
    )
    _mechanism_title = "the Square Wave mechanism"
    _band_length = staticmethod(_band_length)

    def __init__(self, bounds: Any, epsilon: float) -> None:
        super().__init__(bounds, epsilon)
        cells, length = self.law.cells, self.law.length
        #: The band half-width b on the unit scale, rounded to the grid.
        self.band = length / (2.0 * (cells - length))

    def to_unit(self, values):
        """Values mapped onto [0, 1] (the paper's domain)."""
        low, high = self.bounds
        return np.clip((np.asarray(values, dtype=float) - low) / (high - low), 0.0, 1.0)

    def from_unit(self, unit: ArrayLike) -> np.ndarray:
        low, high = self.bounds
        return low + np.asarray(unit, dtype=float) * (high - low)

    @property
    def cell_width(self):
        """Width of an output cell on the unit scale."""
        return (1.0 + 2.0 * self.band) / self.law.cells

    @property
    def output_grid(self):
        """``(first, step)``: report j is ``first + (j + 0.5) * step`` (column units)."""
        width = self.high - self.low
        return self.low - self.band * width, self.cell_width * width

    def density(self, y: ArrayLike, values: ArrayLike) -> np.ndarray:
        """Density of a report at ``y`` given the input (both in column units).

        The probability of the cell holding y divided by its width (0 outside
        the report range); ``y`` and ``values`` broadcast.
        """
        y, values = np.broadcast_arrays(np.asarray(y, float), np.asarray(values, float))
        low, high = self.bounds
        unit = (y - low) / (high - low)
        cell = np.floor((unit + self.band) / self.cell_width)
        inside = (cell >= 0) & (cell < self.law.cells)
        cell = np.clip(cell, 0, self.law.cells - 1)
        starts = self.starts(values)
        mass = self.law.interval_mass(starts, starts, cell, cell + 1.0)
        return np.where(inside, mass / (self.cell_width * (high - low)), 0.0)

    def _nearest_codes(self, values):
        low, high = self.bounds
        unit = (np.asarray(values, dtype=float) - low) / (high - low)
        cell = np.rint((unit + self.band) / self.cell_width - 0.5)
        return np.clip(cell, 0, self.law.cells - 1).astype(np.int64)

    def transition_matrix(self, n_bins: int, n_output_bins: int) -> np.ndarray:
        """Exact P(output bin | input bin), shape ``(n_output_bins, n_bins)``.

        Entry (J, i) is the mean, over a value uniform in input bin i (``n_bins``
        equal bins of the bounds), of the probability that the report falls
        in output bin J (``n_output_bins`` equal groups of cells, so
        ``n_output_bins`` must divide ``GRID_CELLS``). Columns sum to 1.
        """
        cells = self.law.cells
        if cells % n_output_bins:
            raise ValueError(
                f"n_output_bins={n_output_bins} must divide the {cells} cells of the "
                "report grid (a power of 2 up to 65536, e.g. 1024)."
            )
        group = cells // n_output_bins
        span = cells - self.law.length
        edges = np.linspace(0.0, 1.0, n_bins + 1) * span
        out_edges = np.arange(n_output_bins + 1, dtype=float) * group
        return self.law.interval_mass(
            edges[None, :-1], edges[None, 1:], out_edges[:-1, None], out_edges[1:, None]
        )


class BandTransition:
    """The transition matrix of :meth:`SquareWaveChannel.transition_matrix` as
    an operator: products with it and its transpose in O(n_bins + n_output_bins).

    With theta uniform within each input bin, the band start s has a
    piecewise-constant density, so the probability of output bin J is
    ``qc g sum(theta) + (pc - qc) * int_J [R(y) - R(y - L)] dy`` (R: the CDF of
    s, piecewise linear), a difference of its piecewise-quadratic
    antiderivative at fixed points; the transpose is the same construction
    on the output side. No (n_output_bins, n_bins) matrix is formed.
    """

    def __init__(self, channel, n_bins, n_output_bins):
        law = channel.law
        cells, length = float(law.cells), float(law.length)
        if law.cells % n_output_bins:
            raise ValueError(
                f"n_output_bins={n_output_bins} must divide the {law.cells} cells of "
                "the report grid (a power of 2 up to 65536, e.g. 1024)."
            )
        self.n_bins, self.n_output_bins = int(n_bins), int(n_output_bins)
        self.qc, self.pc = law.qc, law.pc
        self.group = cells / n_output_bins  # output bin width g (cells)
        self.width = (cells - length) / n_bins  # input bin width w (start units)
        self.span = cells - length
        self.cells = cells
        out_edges = np.arange(self.n_output_bins + 1) * self.group
        in_edges = np.arange(self.n_bins + 1) * self.width
        self._fwd = [
            self._locate(out_edges, self.width, self.n_bins, self.span),
            self._locate(out_edges - length, self.width, self.n_bins, self.span),
        ]
        self._adj = [
            self._locate(in_edges, self.group, self.n_output_bins, cells),
            self._locate(in_edges + length, self.group, self.n_output_bins, cells),
        ]
        # The numpy path's plans: both point sets of a product in one gather.
        self._fwd_plan = self._gather_plan(self._fwd, self.n_bins)
        self._adj_plan = self._gather_plan(self._adj, self.n_output_bins)

    @staticmethod
    def _locate(points, step, n, end):
        """(piece index, offset in it, below 0, beyond end, excess) of points."""
        below = points <= 0.0
        beyond = points >= end
        index = np.clip(np.floor(points / step), 0, n - 1).astype(np.intp)
        offset = np.clip(points, 0.0, end) - index * step
        excess = np.clip(points - end, 0.0, None)
        return index, offset, below, beyond, excess

    @staticmethod
    def _gather_plan(located, n):
        """Two located point sets as one gather (index, offset, offset^2 / 2)
        into the antiderivatives extended by one piece: a point beyond the
        end reads piece ``n`` (the end values, a zero value) at its excess,
        a point below 0 reads piece 0 at offset 0 (zeros). The same floats as
        evaluating the two sets apart, cases and all (+ 0.0 changes none)."""
        index, offset = [], []
        for at, off, below, beyond, excess in located:
            index.append(np.where(beyond, n, at))
            offset.append(np.where(beyond, excess, np.where(below, 0.0, off)))
        index, offset = np.concatenate(index), np.concatenate(offset)
        return index, offset, 0.5 * offset * offset, located[0][0].shape[0]

    @staticmethod
    def _antiderivative(values, step, plan):
        """The second antiderivative of a piecewise-constant function (pieces of
        width ``step`` holding ``values``, 0 before the first) at the planned
        points (see ``_gather_plan``): two arrays, one per point set."""
        index, offset, half_square, split = plan
        n = values.shape[0]
        first = np.zeros(n + 1)  # at piece starts
        np.cumsum(values, out=first[1:])
        first *= step
        second = np.zeros(n + 1)
        np.cumsum(first[:-1] * step + values * (0.5 * step * step), out=second[1:])
        padded = np.zeros(n + 1)
        padded[:n] = values
        out = second[index] + first[index] * offset + padded[index] * half_square
        return out[:split], out[split:]

    def forward(self, theta):
        """Probabilities of the output bins, ``Q @ theta``."""
        density = np.asarray(theta, dtype=float) / self.width
        top, low = self._antiderivative(density, self.width, self._fwd_plan)
        band = np.diff(top) - np.diff(low)
        return self.qc * self.group * float(np.sum(theta)) + (self.pc - self.qc) * band

    def adjoint(self, v):
        """``Q.T @ v``."""
        v = np.asarray(v, dtype=float)
        lower, upper = self._antiderivative(v, self.group, self._adj_plan)
        band = (np.diff(upper) - np.diff(lower)) / self.width
        return self.qc * self.group * float(np.sum(v)) + (self.pc - self.qc) * band


@mechanism_doc("SquareWaveChannel")
class SquareWave(_EpsilonBoundsMechanism):
    """Li et al.'s Square Wave mechanism, to estimate a numeric distribution.

    Each value x of ``bounds=(low, high)`` is reported as a number of the
    range ``[low - b w, high + b w]`` (w = high - low, b the paper's optimal
    band half-width), drawn with a density ``e^eps`` times higher within
    ``b w`` of x than elsewhere. Close values give close reports, which is
    what makes the distribution (and its quantiles) estimable:
    :class:`~sklearn_uldp.numeric.SquareWaveEstimator`. Reports lie on a grid
    of 2**16 cells of the output range.

    %(mechanism_sections)s

    See Also
    --------
    SquareWaveEstimator : Estimates the distribution, CDF and quantiles.
    Binner : The binned route to any categorical mechanism.

    References
    ----------
    Z. Li, T. Wang, M. Lopuhaä-Zwakenberg, B. Skoric, N. Li, "Estimating
    Numerical Distributions under Local Differential Privacy", SIGMOD 2020.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp import SquareWave, SquareWaveEstimator
    >>> X = np.random.default_rng(0).normal(50, 10, size=(50_000, 1)).clip(0, 100)
    >>> reports = SquareWave(epsilon=2.0, bounds=(0, 100), random_state=0).fit_transform(X)
    >>> est = SquareWaveEstimator(n_bins=64).fit(reports)
    >>> bool(abs(est.quantile(0.5) - 50) < 3)
    True
    """

    _channel_class = SquareWaveChannel


def _smooth(theta):
    """Binomial smoothing [1, 2, 1] / 4, the end rows renormalized (as the paper)."""
    out = np.empty_like(theta)
    out[1:-1] = 0.25 * theta[:-2] + 0.5 * theta[1:-1] + 0.25 * theta[2:]
    out[0] = (2.0 * theta[0] + theta[1]) / 3.0
    out[-1] = (theta[-2] + 2.0 * theta[-1]) / 3.0
    return out / out.sum()


def expectation_maximization(
    operator, counts, *, smoothing, tol, max_iter, theta=None, use_numba=True
):
    """EM (or EMS) for a histogram of outputs through a channel operator.

    ``operator`` has ``forward(theta)`` (output probabilities) and
    ``adjoint(v)``; returns ``(theta, info)`` and stops when the
    log-likelihood per report improves by less than ``tol`` between two steps.
    """
    h = np.asarray(counts, dtype=float)
    n = h.sum()
    k = operator.n_bins
    theta = np.full(k, 1.0 / k) if theta is None else np.asarray(theta, float).copy()
    if use_numba and isinstance(operator, BandTransition):
        compiled = band_em(operator, h, theta, smoothing=smoothing, tol=tol, max_iter=max_iter)
        if compiled is not None:
            return compiled
    seen = h > 0
    hs = h[seen]
    tiny = np.finfo(float).tiny
    m = np.maximum(operator.forward(theta), tiny)
    ll = float(hs @ np.log(m[seen])) / n
    ratio = np.zeros_like(h)
    converged = False
    it = 0
    while it < max_iter:
        it += 1
        ratio[seen] = hs / m[seen]
        theta = theta * operator.adjoint(ratio)
        theta /= theta.sum()
        if smoothing:
            theta = _smooth(theta)
        m = np.maximum(operator.forward(theta), tiny)
        new = float(hs @ np.log(m[seen])) / n
        if abs(new - ll) < tol:
            ll = new
            converged = True
            break
        ll = new
    return theta, {"n_iter": it, "converged": converged, "log_likelihood": ll * n}


class SquareWaveEstimator(NumericEstimatorBase):
    """Estimate a numeric distribution from Square Wave reports (EM or EMS).

    The input range is cut into ``n_bins`` equal bins; ``distribution_`` is
    the estimated probability of each, by maximum likelihood over the
    histogram of reports in ``n_output_bins`` output bins (EM), smoothed
    between steps by the binomial kernel [1, 2, 1] / 4 (EMS, Li et al.'s
    default, which suppresses the spurious spikes of plain EM). Each step
    costs two products with the (n_output_bins, n_bins) transition matrix,
    independent of the number of reports; ``partial_fit`` adds histograms,
    so chunked fitting equals ``fit``.

    Parameters
    ----------
    mechanism : SquareWave, Channel, dict or None, default=None
        The mechanism that produced the reports, for reports that do not
        carry it.
    n_bins : int, default=1024
        Bins of the estimated distribution (equal widths over the bounds).
    n_output_bins : int or None, default=None
        Bins of the report histogram: a power of 2 that divides the 2**16
        report cells; None for ``n_bins`` rounded up to a power of 2.
    smoothing : bool, default=True
        EMS (True) or plain EM (False).
    tol : float, default=1e-8
        Stop when the log-likelihood per report improves by less (the
        reference implementation stops at 1e-3 in total, 1e-8 per report
        at n = 1e5; EMS is a smoothed fixed point, so stopping also
        regularizes: see ``docs/numerical.md``).
    max_iter : int, default=10_000

    Attributes
    ----------
    channel_ : SquareWaveChannel
    statistics_ : ReportStatistics
        Histogram of report cells.
    n_reports_ : int
    distribution_ : ndarray of shape (n_bins,)
        Estimated probability of each bin.
    bin_edges_ : ndarray of shape (n_bins + 1,)
        The bins, in the column's units.
    cdf_ : ndarray of shape (n_bins,)
        The estimated CDF at each bin's right edge.
    mean_ : float
        The mean of the estimated distribution (values uniform within bins).
    n_iter_ : int
    converged_ : bool

    See Also
    --------
    SquareWave : The mechanism.
    MeanEstimator : The mean from unbiased reports (Hybrid, ...).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp import SquareWave, SquareWaveEstimator
    >>> rng = np.random.default_rng(0)
    >>> X = rng.beta(2, 5, size=(100_000, 1)) * 100
    >>> reports = SquareWave(epsilon=1.0, bounds=(0, 100), random_state=0).fit_transform(X)
    >>> est = SquareWaveEstimator(n_bins=128).fit(reports)
    >>> est.distribution_.shape, round(float(est.distribution_.sum()), 6)
    ((128,), 1.0)
    >>> q = est.quantile([0.25, 0.5, 0.75])
    >>> bool(np.all(np.abs(q - np.quantile(X, [0.25, 0.5, 0.75])) < 4))
    True
    """

    _parameter_constraints: dict[str, list[Any]] = {
        **NumericEstimatorBase._parameter_constraints,
        "n_bins": [Interval(Integral, 2, None, closed="left")],
        "n_output_bins": [None, Interval(Integral, 2, GRID_CELLS, closed="both")],
        "smoothing": ["boolean"],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(
        self,
        mechanism: Any = None,
        *,
        n_bins: int = 1024,
        n_output_bins: int | None = None,
        smoothing: bool = True,
        tol: float = 1e-8,
        max_iter: int = 10_000,
    ) -> None:
        self.mechanism = mechanism
        self.n_bins = n_bins
        self.n_output_bins = n_output_bins
        self.smoothing = smoothing
        self.tol = tol
        self.max_iter = max_iter

    def _check_channel(self, channel):
        super()._check_channel(channel)
        if not isinstance(report_law(channel), SquareWaveChannel):
            raise ReportMismatchError(
                f"SquareWaveEstimator estimates from Square Wave reports; got reports of "
                f"{channel!r}. Use MeanEstimator for the mean mechanisms."
            )

    def _output_bins(self):
        if self.n_output_bins is not None:
            out = int(self.n_output_bins)
            if GRID_CELLS % out:
                raise ValueError(
                    f"n_output_bins={out} must divide the {GRID_CELLS} report cells: "
                    "pass a power of 2 (e.g. 1024)."
                )
            return out
        return min(GRID_CELLS, 1 << max(1, int(self.n_bins - 1).bit_length()))

    def _transition(self):
        key = (self.channel_, int(self.n_bins), self._output_bins())
        cached = self.__dict__.get("_transition_cache")
        if cached is None or cached[0] != key:
            operator = BandTransition(
                report_law(self.channel_), int(self.n_bins), self._output_bins()
            )
            cached = (key, operator)
            self.__dict__["_transition_cache"] = cached
        return cached[1]

    def _histogram(self, counts):
        out = self._output_bins()
        return np.asarray(counts).reshape(out, -1).sum(axis=1)

    def _fit_counts(self, counts, theta=None):
        return expectation_maximization(
            self._transition(),
            self._histogram(counts),
            smoothing=self.smoothing,
            tol=self.tol,
            max_iter=self.max_iter,
            theta=theta,
        )

    def _compute(self):
        self._validate_params()
        theta, info = self._fit_counts(self.statistics_.counts)
        if not info["converged"]:
            warnings.warn(
                f"EM did not converge in max_iter={self.max_iter} steps (tol={self.tol}); "
                "raise max_iter or tol.",
                ConvergenceWarning,
                stacklevel=3,
            )
        return {"distribution": theta, **info}

    # ----------------------------------------------------------- the estimate
    @property
    def distribution_(self) -> np.ndarray:
        """Estimated probability of each bin."""
        return self._estimate()["distribution"]

    @property
    def n_iter_(self) -> int:
        """EM steps run."""
        return int(self._estimate()["n_iter"])

    @property
    def converged_(self) -> bool:
        """Whether the log-likelihood settled within ``tol`` before ``max_iter``."""
        return bool(self._estimate()["converged"])

    @property
    def bin_edges_(self) -> np.ndarray:
        """Edges of the bins, in the column's units."""
        low, high = self.channel_.bounds
        return np.linspace(low, high, int(self.n_bins) + 1)

    @property
    def cdf_(self) -> np.ndarray:
        """The estimated CDF at each bin's right edge."""
        return np.cumsum(self.distribution_)

    @property
    def mean_(self) -> float:
        """Mean of the estimated distribution (values uniform within bins)."""
        edges = self.bin_edges_
        return float(np.dot(self.distribution_, 0.5 * (edges[:-1] + edges[1:])))

    def quantile(self, q: ArrayLike) -> Any:
        """Quantiles of the estimated distribution (linear within bins).

        Parameters
        ----------
        q : float or array-like of floats in [0, 1]
            The fractions (0.5: the median).

        Returns
        -------
        quantiles : float or ndarray
            The values below which fractions ``q`` of the distribution lie
            (a float for a float ``q``).
        """
        return _quantiles(self.distribution_, self.bin_edges_, q)

    # ------------------------------------------------------------- intervals
    def bootstrap(self, n_resamples: int = 100, random_state: RandomStateLike = None) -> np.ndarray:
        """Distributions refitted on reports simulated from the estimate.

        A parametric bootstrap: each resample is a histogram of ``n_reports_``
        reports drawn from the estimated distribution through the channel
        (multinomial over the output bins), fitted exactly as the data were.

        Parameters
        ----------
        n_resamples : int, default=100
        random_state : None, int or Generator, default=None

        Returns
        -------
        replicates : ndarray of shape (n_resamples, n_bins)
        """
        if not (isinstance(n_resamples, Integral) and n_resamples >= 2):
            raise ValueError(f"n_resamples must be an integer >= 2, got {n_resamples!r}.")
        rng = check_random_generator(random_state)
        outputs = self._transition().forward(self.distribution_)
        outputs = np.clip(outputs, 0.0, None)
        outputs /= outputs.sum()
        group = GRID_CELLS // self._output_bins()
        replicates = np.empty((n_resamples, int(self.n_bins)))
        for r in range(n_resamples):
            hist = rng.multinomial(self.n_reports_, outputs)
            # _fit_counts aggregates cells into output bins: spread each bin's
            # count on its first cell (the aggregation only sums them back).
            cells = np.zeros(GRID_CELLS, dtype=np.int64)
            cells[::group] = hist
            replicates[r] = self._fit_counts(cells)[0]
        return replicates

    def confidence_interval(
        self,
        what: str = "quantile",
        q: ArrayLike = 0.5,
        *,
        alpha: float = 0.05,
        n_resamples: int = 100,
        random_state: RandomStateLike = None,
        method: str = "basic",
    ) -> tuple[Any, Any]:
        """Intervals of the parametric bootstrap (:meth:`bootstrap`).

        Parameters
        ----------
        what : {"quantile", "cdf", "distribution", "mean"}, default="quantile"
            The quantity: quantiles ``q``, the CDF at each bin's right edge,
            each bin's probability, or the mean.
        q : float or array-like, default=0.5
            The quantile levels (for ``what="quantile"``).
        alpha : float in (0, 1), default=0.05
        n_resamples : int, default=100
        random_state : None, int or Generator, default=None
        method : {"basic", "percentile"}, default="basic"
            "percentile": the alpha/2 and 1 - alpha/2 quantiles of the
            replicates. "basic": those quantiles reflected about the
            estimate, ``(2 t - t*_{1-alpha/2}, 2 t - t*_{alpha/2})``
            (clipped to the quantity's range), which removes the bias of the
            refit to first order. With EMS the refit smooths an estimate
            that is already smooth, so the replicates sit off the estimate
            on the side away from the truth and the percentile interval
            misses it.

        Returns
        -------
        (low, high) : floats or ndarrays

        Warnings
        --------
        With EMS (``smoothing=True``, the default) neither interval holds
        its nominal level: EMS trades bias for variance and a bootstrap
        around the smoothed estimate cannot see all of the bias. Measured
        (Beta(2, 5) x 100, 20,000 users, eps=1, ``n_bins=64``, 100 data
        sets, nominal 95 %): the CDF at the bins' edges between the 5th
        and 95th percentile had median coverage 0.84 "basic", 0.57
        "percentile"; quantiles 0.1 to 0.9: 0.88 and 0.59. See
        ``docs/numerical.md``. For a calibrated interval of the mean, use a
        mean mechanism and :class:`MeanEstimator`.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_uldp import SquareWave, SquareWaveEstimator
        >>> X = np.random.default_rng(0).uniform(20, 60, size=(20_000, 1))
        >>> reports = SquareWave(epsilon=2.0, bounds=(0, 100), random_state=0).fit_transform(X)
        >>> est = SquareWaveEstimator(n_bins=32).fit(reports)
        >>> low, high = est.confidence_interval("quantile", 0.5, n_resamples=20, random_state=0)
        >>> bool(low < high)
        True
        """
        if what not in ("quantile", "cdf", "distribution", "mean"):
            raise ValueError(
                f"what must be 'quantile', 'cdf', 'distribution' or 'mean', got {what!r}."
            )
        if method not in ("basic", "percentile"):
            raise ValueError(
                f"method must be 'basic' (bias-corrected, the default) or 'percentile', "
                f"got {method!r}."
            )
        if not (isinstance(alpha, Real) and 0 < alpha < 1):
            raise ValueError(f"alpha must be in (0, 1), got {alpha!r}.")
        replicates = self.bootstrap(n_resamples, random_state)
        edges = self.bin_edges_
        centres = 0.5 * (edges[:-1] + edges[1:])
        if what == "quantile":
            values = np.array([_quantiles(r, edges, q) for r in replicates])
            estimate = _quantiles(self.distribution_, edges, q)
            support = (edges[0], edges[-1])
        elif what == "cdf":
            values = np.cumsum(replicates, axis=1)
            estimate, support = np.cumsum(self.distribution_), (0.0, 1.0)
        elif what == "distribution":
            values, estimate, support = replicates, self.distribution_, (0.0, 1.0)
        else:
            values = replicates @ centres
            estimate, support = self.distribution_ @ centres, (edges[0], edges[-1])
        low, high = np.quantile(values, [alpha / 2, 1 - alpha / 2], axis=0)
        if method == "basic":
            low, high = (
                np.clip(2.0 * estimate - high, *support),
                np.clip(2.0 * estimate - low, *support),
            )
        if np.ndim(low) == 0:
            return float(low), float(high)
        return low, high


def _quantiles(distribution, edges, q):
    q_arr = np.asarray(q, dtype=float)
    if np.any(~((q_arr >= 0) & (q_arr <= 1))):
        raise ValueError(f"q must lie in [0, 1], got {q!r}.")
    cdf = np.concatenate([[0.0], np.cumsum(distribution)])
    cdf /= cdf[-1]
    # The CDF is piecewise linear (uniform within bins); flat stretches
    # (empty bins) take their left end.
    idx = np.clip(np.searchsorted(cdf, q_arr, side="left"), 1, len(edges) - 1)
    lo, hi = cdf[idx - 1], cdf[idx]
    with np.errstate(invalid="ignore", divide="ignore"):
        frac = np.where(hi > lo, (q_arr - lo) / (hi - lo), 0.0)
    out = edges[idx - 1] + np.clip(frac, 0.0, 1.0) * (edges[idx] - edges[idx - 1])
    return float(out) if out.ndim == 0 else out
