"""The "band on a grid" law shared by the Piecewise and Square Wave mechanisms.

Both papers' mechanisms output, for an input x, a value whose density is
``p`` on an interval (the band) that moves with x and ``q = p / e^eps``
elsewhere on a fixed output range. Here the output range is cut into ``M``
cells (:data:`~sklearn_uldp.numeric.GRID_CELLS`), the band is ``L`` whole
cells long (``L`` an integer, the papers' band length rounded to the grid)
and starts at a real position ``s(x)`` in ``[0, M - L]`` (cell units). The
output is a cell, whose probability is

    qc + (pc - qc) * overlap(cell, [s, s + L]),   pc = e^eps qc,
    qc = 1 / (M + (e^eps - 1) L)

(a cell covered by the band has mass ``pc``, one outside ``qc``, and the two
cells at the band's ends a mixture of both). Every cell's mass lies in
``[qc, pc]``, so any two inputs' laws are within a factor ``e^eps`` of each
other on every cell: the law is epsilon-LDP exactly, whatever ``s``. It is
the law of the papers' continuous output rounded down to the cell (a band
of ``L`` cells starting at ``s`` covers ``[s, s + L]``), so the rounding is a
post-processing of the papers' mechanism with the band length rounded to
the grid.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._base import GRID_CELLS, NumericChannel
from ._kernels import band_codes, fused_reports

__all__ = ["BandLaw", "BandChannel"]


class BandLaw:
    """The cell law of a band of ``length`` cells on ``cells`` cells at ``epsilon``.

    Parameters
    ----------
    epsilon : float
    length : int
        Band length in cells, ``1 <= length < cells``.
    cells : int, default=GRID_CELLS
    """

    def __init__(self, epsilon, length, cells=GRID_CELLS):
        self.epsilon = float(epsilon)
        self.cells = int(cells)
        self.length = int(min(max(length, 1), self.cells - 1))
        self.qc, self.pc = band_masses(self.epsilon, self.length, self.cells)

    @property
    def kappa(self):
        """``(pc - qc) L``: the slope of the band centre in the output's mean."""
        return (self.pc - self.qc) * self.length

    def probabilities(self, starts):
        """Cell masses, one row per band start (shape ``(len(starts), cells)``)."""
        starts = np.asarray(starts, dtype=float).reshape(-1, 1)
        left = np.arange(self.cells, dtype=float)
        overlap = np.clip(
            np.minimum(left + 1.0, starts + self.length) - np.maximum(left, starts), 0.0, 1.0
        )
        return self.qc + (self.pc - self.qc) * overlap

    def codes(self, starts, uniforms):
        """Cells of band ``starts`` for one float64 uniform each (inverse CDF)."""
        return band_codes(starts, uniforms, self.cells, self.length, self.qc, self.pc)

    def fused_params(self, channel):
        """Parameters of the compiled one-pass sampler of ``channel``."""
        low, high = channel.bounds
        return {
            "low": low,
            "high": high,
            "width": high - low,
            "span": float(self.cells - self.length),
            "m": float(self.cells),
            "length": float(self.length),
            "qc": self.qc,
            "pc": self.pc,
            "first": channel.output_grid[0],
            "step": channel.output_grid[1],
        }

    def interval_mass(self, s0, s1, a, b):
        """Mean over starts uniform on ``[s0, s1]`` of the mass of cells ``[a, b)``.

        Exact: the overlap of ``[a, b]`` with ``[s, s + L]`` is piecewise
        linear in s, so its mean over an interval of starts is a difference of
        piecewise-quadratic antiderivatives (``_clamp_integral``). All
        arguments broadcast; ``s0 == s1`` gives the mass at that start.
        """
        s0, s1, a, b = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (s0, s1, a, b)))
        width = b - a
        length = float(self.length)
        span = s1 - s0
        point = span <= 0
        with np.errstate(invalid="ignore", divide="ignore"):
            mean_overlap = (
                _clamp_integral(s1 + length - a, width)
                - _clamp_integral(s0 + length - a, width)
                - _clamp_integral(s1 - a, width)
                + _clamp_integral(s0 - a, width)
            ) / np.where(point, 1.0, span)
        at_point = np.clip(np.minimum(b, s0 + length) - np.maximum(a, s0), 0.0, None)
        mean_overlap = np.where(point, at_point, mean_overlap)
        return self.qc * width + (self.pc - self.qc) * mean_overlap


def _clamp_integral(x, width):
    """Antiderivative of ``clip(x, 0, width)`` that is 0 at x <= 0."""
    x = np.asarray(x, dtype=float)
    inside = np.clip(x, 0.0, width)
    return 0.5 * inside**2 + width * np.clip(x - width, 0.0, None)


def band_masses(epsilon, length, cells):
    """``(qc, pc)`` of a band law; ``(0, inf)``-like values where e^eps overflows."""
    with np.errstate(over="ignore"):
        growth = float(np.expm1(np.float64(epsilon)))
    if not math.isfinite(growth):
        return 0.0, 1.0 / length
    qc = 1.0 / (cells + growth * length)
    return qc, qc * (growth + 1.0)


class BandChannel(NumericChannel):
    """A channel whose output is a cell of a :class:`BandLaw`, the band starting
    ``(M - L)`` cells times the value's fraction of the bounds (the Piecewise
    and Square Wave channels).

    Subclasses give the band's length in cells (``_band_length``, a function
    of epsilon), the mechanism's name for the budget error
    (``_mechanism_title``) and the report of each cell (``output_grid``).
    """

    _mechanism_title: str

    @staticmethod
    def _band_length(epsilon: float) -> int:
        raise NotImplementedError

    def __init__(self, bounds: Any, epsilon: float) -> None:
        super().__init__(bounds, epsilon)
        self._check_budget(f"{self._mechanism_title} at epsilon={self.epsilon!r}")
        self.law = BandLaw(self.epsilon, self._band_length(self.epsilon))

    def _draw_probabilities(self, epsilon):
        qc, _ = band_masses(epsilon, self._band_length(epsilon), GRID_CELLS)
        return np.array([qc])

    @property
    def n_outputs(self):
        return self.law.cells

    def _grid_run(self):
        return 0, self.law.cells

    @property
    def output_grid(self) -> tuple[float, float]:
        """``(first, step)``: report j is ``first + (j + 0.5) * step`` (column units)."""
        raise NotImplementedError

    def _output_values(self):
        first, step = self.output_grid
        return first + (np.arange(self.law.cells) + 0.5) * step

    def starts(self, values):
        """The band's first cell (real) for each value: ``(M - L)`` times its
        fraction of the bounds (``(M - L)(t + 1) / 2`` on the scale [-1, 1])."""
        return (self.law.cells - self.law.length) * self.unit_fraction(values)

    def output_probabilities(self, values):
        return self.law.probabilities(self.starts(np.atleast_1d(values)))

    def _codes(self, values, uniforms):
        return self.law.codes(self.starts(values), uniforms)

    def _fused(self, values, uniforms, out):
        return fused_reports("band", values, uniforms, out, **self.law.fused_params(self))
