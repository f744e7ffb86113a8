"""Wang et al.'s Piecewise and Hybrid mechanisms for means of bounded values.

Wang, Xiao, Yang, Zhao, Hui, Shin, Shin & Yu, "Collecting and Analyzing
Multidimensional Data with Local Differential Privacy", ICDE 2019
(Algorithms 2 and 3). On the unit scale t in [-1, 1], the Piecewise
Mechanism (PM) reports a value in [-C, C], ``C = (e^{eps/2} + 1) /
(e^{eps/2} - 1)``, with density ``p = (e^eps - e^{eps/2}) / (2 e^{eps/2} +
2)`` on the band ``[l(t), l(t) + C - 1]``, ``l(t) = (C + 1) t / 2 - (C - 1) /
2``, and ``p / e^eps`` elsewhere; it is unbiased with variance

    t^2 / (e^{eps/2} - 1) + (e^{eps/2} + 3) / (3 (e^{eps/2} - 1)^2).

Here the output range is cut into :data:`~sklearn_uldp.numeric.GRID_CELLS`
cells and the band is a whole number L of cells (``L = round(M / (e^{eps/2}
+ 1))``, the paper's band length rounded to the grid); the range is then
``C' = 1 / (kappa (1 - L / M))`` with ``kappa = (pc - qc) L``, which makes
the report exactly unbiased (the band starts at cell ``(M - L)(t + 1)/2``).
``C'`` equals the paper's C up to the rounding of L (relative 1e-4 or less
for eps <= 8), and so does the variance (:meth:`PiecewiseChannel.variance`
gives the exact one).

The Hybrid Mechanism (HM) runs PM with probability ``alpha = 1 -
e^{-eps/2}`` and Duchi et al.'s mechanism otherwise, when that lowers the
worst-case variance (eps above about 0.61; below it, HM is Duchi's
mechanism). Its worst-case variance is never above the better of Duchi's
and PM's.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..utils._typing import ArrayLike
from ._band import BandChannel, band_masses
from ._base import GRID_CELLS, NumericChannel, _EpsilonBoundsMechanism
from ._docs import fill_numeric_doc, mechanism_doc
from ._duchi import DuchiChannel
from ._kernels import fused_reports, hybrid_codes

__all__ = [
    "PiecewiseMechanism",
    "PiecewiseChannel",
    "HybridMechanism",
    "HybridChannel",
    "closed_form_variance",
]


def piecewise_band_length(epsilon, cells=GRID_CELLS):
    """The paper's band length ``(C - 1) / (2 C)`` of the range, in whole cells."""
    half = math.exp(min(epsilon, 1400.0) / 2.0)
    return max(1, int(round(cells / (half + 1.0))))


def closed_form_variance(mechanism: str, epsilon: float, t: ArrayLike = 0.0) -> np.ndarray:
    """The papers' closed-form variance of one report on the unit scale [-1, 1].

    These are the continuous mechanisms' variances (Wang et al., ICDE 2019,
    Lemmas 1 and 3 and Eq. (5)); the channels' :meth:`variance` methods give
    the exact ones of the implemented (gridded) mechanisms, equal to them up
    to the grid (relative 1e-4 or less for eps <= 8).

    Parameters
    ----------
    mechanism : {"duchi", "piecewise", "hybrid"}
    epsilon : float
    t : array-like, default=0.0
        Inputs on the unit scale.

    Returns
    -------
    variance : ndarray

    Examples
    --------
    >>> from sklearn_uldp.numeric import closed_form_variance
    >>> [round(float(closed_form_variance(m, 1.0, 0.0)), 3)
    ...  for m in ("duchi", "piecewise", "hybrid")]
    [4.683, 3.682, 4.289]
    """
    t = np.asarray(t, dtype=float)
    e = math.exp(epsilon)
    h = math.exp(epsilon / 2.0)
    duchi = ((e + 1.0) / (e - 1.0)) ** 2 - t**2
    piecewise = t**2 / (h - 1.0) + (h + 3.0) / (3.0 * (h - 1.0) ** 2)
    if mechanism == "duchi":
        return duchi
    if mechanism == "piecewise":
        return piecewise
    if mechanism == "hybrid":
        alpha = hybrid_alpha(epsilon)
        return alpha * piecewise + (1.0 - alpha) * duchi
    raise ValueError(f"mechanism must be 'duchi', 'piecewise' or 'hybrid', got {mechanism!r}.")


def hybrid_alpha(epsilon):
    """The probability of the Piecewise branch in Wang et al.'s Hybrid Mechanism.

    ``1 - e^{-eps/2}`` when that mixture's worst-case variance is below
    Duchi's (eps above eps* ~ 0.6106; the paper rounds it to 0.61), else 0.
    """
    if epsilon > 1400.0:  # e^{eps/2} overflows; the Piecewise branch is certain
        return 1.0
    h = math.exp(epsilon / 2.0)
    duchi = 1.0 / math.tanh(epsilon / 2.0) ** 2  # ((e^eps + 1) / (e^eps - 1))^2
    mixture = (h + 3.0) / (3.0 * h * (h - 1.0)) + duchi / h
    return 1.0 - 1.0 / h if mixture < duchi else 0.0


@fill_numeric_doc
class PiecewiseChannel(BandChannel):
    """Wang et al.'s Piecewise Mechanism on an output grid of ``GRID_CELLS`` cells.

    %(channel_parameters)s

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp.numeric import PiecewiseChannel
    >>> channel = PiecewiseChannel((-1, 1), epsilon=2.0)
    >>> channel.n_outputs, round(float(channel.output_values().max()), 3)
    (65536, 2.164)
    >>> P = channel.output_probabilities([-1.0, 1.0])
    >>> round(float(np.log((P[0] / P[1]).max())), 6)  # the largest log-ratio
    2.0
    """

    name = "piecewise"
    unbiased_reports = True
    fake_refusal = None
    _mechanism_title = "the Piecewise mechanism"
    _band_length = staticmethod(piecewise_band_length)

    @staticmethod
    def _fake_band(epsilon):
        """(qc, pc, L) of the band at ``epsilon``: a fake report's law is
        F(j) = qc + (pc - qc) g(j) / (M - L).

        With a uniform input the band start s is uniform on [0, M - L], and the
        mean overlap of cell j with the band [s, s + L] is g(j) / (M - L),
        ``g(j) = min(M - L, y) - max(0, y - L)`` at the cell's midpoint y (g is
        linear within each cell: its kinks L and M - L are whole cells).
        """
        length = piecewise_band_length(epsilon, GRID_CELLS)
        qc, pc = band_masses(epsilon, length, GRID_CELLS)
        return qc, pc, length

    def fake_law(self, fake="random", matrix=None):
        qc, pc, length = self._fake_band(self.epsilon)
        y = np.arange(GRID_CELLS) + 0.5
        g = np.minimum(GRID_CELLS - length, y) - np.maximum(0.0, y - length)
        return qc + (pc - qc) * g / (GRID_CELLS - length)

    @classmethod
    def fake_ratio_classes_at(cls, epsilon):
        """(R+, R-) at the two extreme cells: the edge (g = 1/2) and the middle (g = L).

        Every cell's probability ranges over [qc, pc] as the input moves (the
        band covers it or not: L <= M / 2), so every class lies on R+ = e^eps R-
        with R- = qc / F(j): the attribute's budget grows with R- and
        Dinkelbach's choice is an extreme, so the two extreme cells give the
        guarantees exactly.
        """
        qc, pc, length = cls._fake_band(epsilon)
        free = GRID_CELLS - length
        fake = qc + (pc - qc) * np.array([0.5, float(length)]) / free
        return pc / fake, qc / fake

    def __init__(self, bounds: Any, epsilon: float) -> None:
        super().__init__(bounds, epsilon)
        cells, length = self.law.cells, self.law.length
        #: Half-width C' of the output range on the unit scale.
        self.scale = 1.0 / (self.law.kappa * (1.0 - length / cells))

    @property
    def output_grid(self):
        """``(first, step)``: report j is ``first + (j + 0.5) * step`` (column units)."""
        half = (self.high - self.low) / 2.0
        return self.low + (1.0 - self.scale) * half, 2.0 * self.scale / self.law.cells * half

    def density(self, y: ArrayLike, values: ArrayLike) -> np.ndarray:
        """Density of a report at ``y`` given the input (both in column units).

        The probability of the cell holding y divided by its width: the
        density of the report spread uniformly over its cell (0 outside the
        report range). ``y`` and ``values`` broadcast.
        """
        y, values = np.broadcast_arrays(np.asarray(y, float), np.asarray(values, float))
        half = (self.high - self.low) / 2.0
        width = 2.0 * self.scale / self.law.cells
        cell = np.floor((self.to_unit_unclipped(y) + self.scale) / width)
        inside = (cell >= 0) & (cell < self.law.cells)
        cell = np.clip(cell, 0, self.law.cells - 1)
        mass = self.law.interval_mass(self.starts(values), self.starts(values), cell, cell + 1.0)
        return np.where(inside, mass / (width * half), 0.0)

    def to_unit_unclipped(self, y):
        """Column units to the unit scale, without clipping (for reports)."""
        low, high = self.bounds
        return (np.asarray(y, dtype=float) - low) * (2.0 / (high - low)) - 1.0

    def _nearest_codes(self, values):
        width = 2.0 * self.scale / self.law.cells
        cell = np.rint((self.to_unit_unclipped(values) + self.scale) / width - 0.5)
        return np.clip(cell, 0, self.law.cells - 1).astype(np.int64)

    def _unit_variance(self, t):
        law = self.law
        cells, length = law.cells, law.length
        width = 2.0 * self.scale / cells
        s = (cells - length) * (t + 1.0) / 2.0
        f = s - np.floor(s)
        return (
            law.qc * width**2 * cells * (cells**2 - 1.0) / 12.0
            + (law.pc - law.qc) * length * width**2 * ((length**2 - 1.0) / 12.0 + f * (1.0 - f))
            + t**2 * (1.0 / law.kappa - 1.0)
        )

    def variance(self, values):
        half = (self.high - self.low) / 2.0
        return self._unit_variance(self.to_unit(values)) * half**2

    def worst_case_variance(self):
        # The t^2 term dominates: the worst input is an end of the range,
        # up to the rounding term f(1 - f) <= 1/4 (bounded here).
        half = (self.high - self.low) / 2.0
        width = 2.0 * self.scale / self.law.cells
        bound = self._unit_variance(np.float64(1.0)) + self.law.kappa * width**2 / 4.0
        return float(bound * half**2)


@fill_numeric_doc
class HybridChannel(NumericChannel):
    """Wang et al.'s Hybrid Mechanism: Piecewise with probability alpha, else Duchi.

    Output codes ``0 .. GRID_CELLS - 1`` are the Piecewise cells, then
    Duchi's ``-C`` and ``+C``.

    %(channel_parameters)s

    Examples
    --------
    >>> from sklearn_uldp.numeric import HybridChannel
    >>> channel = HybridChannel((-1, 1), epsilon=2.0)
    >>> round(channel.alpha, 4), channel.n_outputs
    (0.6321, 65538)
    """

    name = "hybrid"
    unbiased_reports = True
    fake_refusal = None

    def __init__(self, bounds: Any, epsilon: float) -> None:
        super().__init__(bounds, epsilon)
        self._check_budget(f"the Hybrid mechanism at epsilon={self.epsilon!r}")
        self.alpha = hybrid_alpha(self.epsilon)
        self.piecewise = PiecewiseChannel(self.bounds, self.epsilon)
        self.duchi = DuchiChannel(self.bounds, self.epsilon)

    def fake_law(self, fake="random", matrix=None):
        # Piecewise's cells weighted by alpha, then Duchi's two symbols
        return np.concatenate(
            [self.alpha * self.piecewise.fake_law(), (1.0 - self.alpha) * self.duchi.fake_law()]
        )

    @classmethod
    def fake_ratio_classes_at(cls, epsilon):
        # Hybrid's cells are alpha times Piecewise's (in Q and in F alike), its
        # two symbols 1 - alpha times Duchi's: the ratios are theirs.
        duchi = DuchiChannel.fake_ratio_classes_at(epsilon)
        if hybrid_alpha(epsilon) == 0.0:
            return duchi
        band = PiecewiseChannel.fake_ratio_classes_at(epsilon)
        return np.concatenate([band[0], duchi[0]]), np.concatenate([band[1], duchi[1]])

    def _draw_probabilities(self, epsilon):
        alpha = hybrid_alpha(epsilon)
        duchi = DuchiChannel._draw_probabilities(epsilon)
        if alpha == 0.0:
            return duchi
        qc, _ = band_masses(epsilon, piecewise_band_length(epsilon), GRID_CELLS)
        return np.array([alpha * qc, (1.0 - alpha) * duchi[0], alpha, 1.0 - alpha])

    @property
    def n_outputs(self):
        return self.piecewise.n_outputs + 2

    def _grid_run(self):
        return 0, self.piecewise.n_outputs  # then Duchi's two values

    def _output_values(self):
        return np.concatenate([self.piecewise.output_values(), self.duchi.output_values()])

    def output_probabilities(self, values):
        values = np.atleast_1d(values)
        return np.concatenate(
            [
                self.alpha * self.piecewise.output_probabilities(values),
                (1.0 - self.alpha) * self.duchi.output_probabilities(values),
            ],
            axis=1,
        )

    def _codes(self, values, uniforms):
        law = self.piecewise.law
        return hybrid_codes(
            self.piecewise.starts(values),
            self.duchi.plus_probability(values),
            uniforms,
            self.alpha,
            law.cells,
            law.length,
            law.qc,
            law.pc,
        )

    def _fused(self, values, uniforms, out):
        # the same bounds in both parts: the band's low/high are Duchi's
        params = {**self.duchi._fused_params(), **self.piecewise.law.fused_params(self.piecewise)}
        return fused_reports("hybrid", values, uniforms, out, alpha=self.alpha, **params)

    def two_point_reports(self):
        # With alpha > 0 every report is Piecewise's (a continuum) with
        # probability alpha >= 1 - e^{-eps*/2} ~ 0.26: no input's reports are
        # restricted to Duchi's two values. With alpha = 0 it is Duchi's.
        return self.duchi.two_point_reports() if self.alpha == 0.0 else None

    def variance(self, values):
        return self.alpha * self.piecewise.variance(values) + (
            1.0 - self.alpha
        ) * self.duchi.variance(values)

    def worst_case_variance(self):
        ends = np.array([self.low, 0.5 * (self.low + self.high), self.high])
        half = (self.high - self.low) / 2.0
        width = 2.0 * self.piecewise.scale / self.piecewise.law.cells
        slack = self.alpha * self.piecewise.law.kappa * width**2 / 4.0 * half**2
        return float(np.max(self.variance(ends)) + slack)


@mechanism_doc("PiecewiseChannel")
class PiecewiseMechanism(_EpsilonBoundsMechanism):
    """Wang et al.'s Piecewise Mechanism for the mean of a bounded numeric column.

    Each value x is reported as a number of the range ``mid +- half C``
    (``mid``, ``half``: centre and half-width of ``bounds``, ``C = (e^{eps/2}
    + 1) / (e^{eps/2} - 1)``), drawn with a density ``e^eps`` times higher on
    a band of width ``(C - 1) half`` around x than elsewhere. Each report is
    an unbiased estimate of its value (the mean of the reports estimates the
    mean: :class:`~sklearn_uldp.numeric.MeanEstimator`), with a variance
    lower than Duchi's mechanism's for budgets above about 1.3. Reports lie
    on a grid of 2**16 cells of the output range (far below the noise).

    %(mechanism_sections)s

    See Also
    --------
    HybridMechanism : Never worse than Piecewise or Duchi.
    MeanEstimator : Estimates the mean (with a confidence interval).

    %(wang_references)s

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp import MeanEstimator, PiecewiseMechanism
    >>> X = np.random.default_rng(0).uniform(20, 60, size=(50_000, 1))
    >>> mech = PiecewiseMechanism(epsilon=2.0, bounds=(0, 100), random_state=0)
    >>> est = MeanEstimator().fit(mech.fit_transform(X))
    >>> bool(abs(est.mean_ - X.mean()) < 4 * est.standard_error_)
    True
    """

    _channel_class = PiecewiseChannel


@mechanism_doc("HybridChannel")
class HybridMechanism(_EpsilonBoundsMechanism):
    """Wang et al.'s Hybrid Mechanism for the mean of a bounded numeric column.

    Each value is privatized by the Piecewise Mechanism with probability
    ``alpha = 1 - e^{-eps/2}`` and by Duchi et al.'s otherwise (``alpha = 0``
    below eps ~ 0.61, where Duchi's is better). Both are unbiased and
    epsilon-LDP, so the mixture is too, and its worst-case variance is never
    above the better worst case of the two. Above eps* ~ 0.61 its variance
    is the same for every input (the x^2 terms of the two components cancel
    at that alpha); below, it is Duchi's, ``c^2 - x^2`` on the scale [-1, 1],
    largest at the centre (at eps=0.5: 16.67 at the centre, 15.67 at the
    ends). The default choice for means.

    %(mechanism_sections)s

    See Also
    --------
    DuchiMechanism, PiecewiseMechanism : Its two components.
    MeanEstimator : Estimates the mean (with a confidence interval).

    %(wang_references)s

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp import HybridMechanism, MeanEstimator
    >>> X = np.random.default_rng(0).uniform(20, 60, size=(50_000, 1))
    >>> mech = HybridMechanism(epsilon=1.0, bounds=(0, 100), random_state=0)
    >>> est = MeanEstimator().fit(mech.fit_transform(X))
    >>> low, high = est.confidence_interval(alpha=0.05)
    >>> bool(low < X.mean() < high)
    True
    """

    _channel_class = HybridChannel
