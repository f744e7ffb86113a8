"""The public spec of range-query reports: grids over bounded numeric columns.

A user of :class:`~sklearn_uldp.marginals.RangeQueryPrivatizer` holds a row
of d numbers, each in its column's public range ``[low, high]``. Each column
is cut into equal-width bins; HDG (Yang, Wang, Li, Cheng & Su, *Answering
Multi-Dimensional Range Queries under Local Differential Privacy*, VLDB
2021) measures a **1-D grid** of every column (``g1`` bins) and a **2-D
grid** of every pair of columns (``g2 x g2`` cells, each 2-D bin the union
of ``g1 / g2`` consecutive 1-D bins), TDG only the 2-D grids. Each user is
assigned one grid uniformly at random, independently of the row, and
reports the grid's cell holding the row through that grid's frequency
oracle: marginal release (:class:`MarginalChannel`) over binned columns.

So :class:`RangeQueryChannel` *is* a marginal channel over "virtual"
columns, the 1-D bins of every column (``"0:1d"``, ``"1:1d"``, ...) and its
2-D bins (``"0:2d"``, ...); its spec holds what a collector reads (the
columns, their bounds, the method, the granularities, the oracles, the
sensitive ranges), and the grids and cells follow from them.

Binning (the one function users and collector share, :func:`bin_codes`): a
value ``x`` (clipped to ``[low, high]``) falls in the 1-D bin
``floor((x - low) / (high - low) * g)`` (the last bin holds ``high``), and
in the 2-D bin ``(1-D bin) // (g1 / g2)``. Both are non-decreasing functions
of ``x`` in floating point, which is what the sensitive cells rely on: with
``sensitive_ranges``, a cell is sensitive when, along one of its columns,
its bins include the bin of a point of a sensitive range, so the cell of a
row whose value lies in a sensitive range is always sensitive (see
``docs/marginals.md``).

Report layout: the marginal reports' (``grid``, then the oracle's report in
64-bit words; see :mod:`sklearn_uldp.marginals._channel`).
"""

from __future__ import annotations

import itertools
import math
import numbers
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..exceptions import ReportMismatchError
from ..mechanisms._channel import Channel, ReportStatistics
from ..numeric._base import check_bounds
from ..utils._numba import HAVE_NUMBA, numba, use_compiled
from ..utils._validation import safe_ndim
from ._channel import MAX_MATRIX_CELLS, MarginalChannel, _check_columns, _MarginalCodes
from ._one_report import _OneReportChannelMixin

__all__ = [
    "RangeQueryChannel",
    "METHODS",
    "bin_codes",
    "range_grids",
    "sensitive_bins",
]

#: The narrow dtypes of finest bins that :meth:`RangeQueryChannel.sample` takes as they are.
_NARROW_CODES = (np.dtype(np.uint8), np.dtype(np.uint16))

#: The two designs of the paper.
METHODS = ("hdg", "tdg")

#: Name of the report column holding the index of the user's grid.
GRID_COLUMN = "grid"

_ESTIMATE_HINT = (
    "These are the reports of a RangeQueryPrivatizer (one grid cell per user): "
    "estimate them with sklearn_uldp.marginals.RangeQueryEstimator."
)


def bin_codes(values: Any, low: float, high: float, n_bins: int) -> np.ndarray:
    """The equal-width bin of each value of ``[low, high]`` (``0 .. n_bins - 1``).

    ``floor((x - low) / (high - low) * n_bins)``, the last bin closed (it holds
    ``high``). Values must already lie in ``[low, high]`` (the privatizer
    clips them). A non-decreasing function of ``x`` in floating point (each
    operation rounds monotonically), so a range ``[a, b]`` meets exactly the
    bins ``bin(a) .. bin(b)``.

    Examples
    --------
    >>> from sklearn_uldp.marginals._range_channel import bin_codes
    >>> bin_codes([0.0, 2.5, 5.0, 9.99, 10.0], 0.0, 10.0, 4).tolist()
    [0, 1, 2, 3, 3]
    """
    values = np.asarray(values, dtype=float)
    # The same operations in the same order, in place (one temporary).
    scaled = np.subtract(values, low)
    scaled /= high - low
    scaled *= n_bins
    np.floor(scaled, out=scaled)
    codes = scaled.astype(np.int64)
    return np.clip(codes, 0, n_bins - 1, out=codes)


def _bin_column(values, low, high, n_bins, out):  # pragma: no cover - numba
    """:func:`bin_codes` of one column in one pass (compiled by numba).

    The same floating-point operations in the same order (no fast-math:
    each rounds as numpy's), so the same bins; ``out`` may be strided.
    Returns 1 at the first value not within ``[low, high]`` (NaN
    included: the caller then checks and clips the values and bins them
    again), else 0.
    """
    width = high - low
    scale = float(n_bins)
    last = n_bins - 1
    for i in range(values.shape[0]):
        value = values[i]
        if not (value >= low and value <= high):
            return 1
        code = np.int64(np.floor((value - low) / width * scale))
        out[i] = min(max(code, 0), last)
    return 0


if HAVE_NUMBA:
    _bin_column = numba.njit(nogil=True, cache=True)(_bin_column)


def _group_cells(
    assignment, fine, first, second, coarse, g2, n_bins, order, cells, bounds
):  # pragma: no cover - numba
    """Each grid's rows (in order) and cells, by a counting sort (compiled by numba).

    Row i of grid g = ``assignment[i]``: its cell is ``fine[i, first[g]]``
    for a 1-D grid (``second[g] < 0``), else ``coarse[fine[i, first[g]]] *
    g2 + coarse[fine[i, second[g]]]``. Grid g's rows go to
    ``order[bounds[g]:bounds[g + 1]]`` and their cells to the same slice of
    ``cells``. Returns 1 (nothing written) when a grid index or a bin is
    out of range, else 0.
    """
    n = assignment.shape[0]
    n_grids = first.shape[0]
    for i in range(n):
        g = assignment[i]
        if g < 0 or g >= n_grids:
            return 1
        for p in range(fine.shape[1]):
            if fine[i, p] < 0 or fine[i, p] >= n_bins:
                return 1
        bounds[g + 1] += 1
    for g in range(n_grids):
        bounds[g + 1] += bounds[g]
    at = bounds[:-1].copy()
    for i in range(n):
        g = assignment[i]
        k = at[g]
        at[g] = k + 1
        order[k] = i
        a = fine[i, first[g]]
        if second[g] < 0:
            cells[k] = a
        else:
            cells[k] = coarse[a] * g2 + coarse[fine[i, second[g]]]
    return 0


if HAVE_NUMBA:
    _group_cells = numba.njit(nogil=True, cache=True)(_group_cells)


def range_grids(n_columns: int, method: str) -> list[tuple[int, ...]]:
    """The grids of a design, as tuples of column positions.

    HDG: every column alone (a 1-D grid), then every pair (a 2-D grid); TDG:
    every pair. With one column, HDG measures its 1-D grid only.

    Examples
    --------
    >>> from sklearn_uldp.marginals._range_channel import range_grids
    >>> range_grids(3, "hdg")
    [(0,), (1,), (2,), (0, 1), (0, 2), (1, 2)]
    >>> range_grids(3, "tdg")
    [(0, 1), (0, 2), (1, 2)]
    """
    pairs: list[tuple[int, ...]] = list(itertools.combinations(range(n_columns), 2))
    if method == "tdg":
        return pairs
    singles: list[tuple[int, ...]] = [(j,) for j in range(n_columns)]
    return singles + pairs


def sensitive_bins(ranges: Any, low: float, high: float, n_bins: int) -> np.ndarray:
    """Which bins of ``[low, high]`` hold a point of one of the (clipped) ``ranges``.

    ``ranges`` is a list of closed ranges ``(a, b)``, already clipped to the
    bounds; the bins ``bin(a) .. bin(b)`` of each are sensitive (the bins of
    every point of ``[a, b]``, by the monotonicity of :func:`bin_codes`).
    """
    mask = np.zeros(n_bins, dtype=bool)
    for a, b in ranges:
        first, last = bin_codes([a, b], low, high, n_bins)
        mask[first : last + 1] = True
    return mask


class RangeQueryChannel(_OneReportChannelMixin, Channel):
    """The spec of range-query reports: bounded columns, grids and their oracles.

    Each user is assigned one grid uniformly at random, independently of the
    row, and reports the grid's cell holding the row through the grid's
    channel (over the codes ``0 .. K - 1`` of its cells, row-major over its
    columns). For a row x and its cell ``x_A`` in grid A,
    ``Q((A, y) | x) = Q_A(y | x_A) / L``; the law depends on the row only
    through its 1-D bins (HDG; the 2-D bins for TDG), so :meth:`matrix` over
    the product of those bins is the exact channel of every row. Budget:
    ``epsilon`` is the grids' common budget, what one report spends
    (``docs/marginals.md`` has the proof, and the row-level guarantee of
    ``sensitive_ranges``).

    Parameters
    ----------
    columns : list of str
        The numeric columns, in order.
    bounds : list of (float, float)
        The public range ``[low, high]`` of each column.
    method : {"hdg", "tdg"}
        HDG measures the 1-D grid of every column and the 2-D grid of every
        pair; TDG the 2-D grids only (at least two columns).
    g1 : int or None
        Bins of a 1-D grid (HDG; None for TDG).
    g2 : int or None
        Bins per column of a 2-D grid (a divisor of ``g1`` for HDG; None
        for HDG over one column).
    channels : list of Channel or dict
        One channel (or spec) per grid, in the order of :func:`range_grids`,
        over the codes of the grid's cells; all with the same ``epsilon``.
    sensitive_ranges : list of (list of (float, float) or None) or None, default=None
        Per column, its sensitive closed ranges (within its bounds), or None
        for a column sensitive in every value; None for plain LDP. A cell
        is sensitive when, along one of its columns, its bins meet a
        sensitive range; each channel's sensitive set must be exactly that.

    Attributes
    ----------
    epsilon : float
    grids : tuple of tuple of str
        The columns of each grid, in the order of the reports' ``grid``.
    cells : tuple of int
        K, the number of cells of each grid.
    grid_channel : MarginalChannel
        The same reports as marginal reports over the binned columns.

    Examples
    --------
    >>> from sklearn_uldp.marginals import RangeQueryPrivatizer
    >>> from sklearn_uldp.mechanisms import Channel
    >>> priv = RangeQueryPrivatizer(
    ...     1.0, bounds={"x": (0, 10), "y": (0, 1)}, granularity=(8, 4)).fit()
    >>> channel = priv.channel_
    >>> channel.grids, channel.cells
    ((('x',), ('y',), ('x', 'y')), (8, 8, 16))
    >>> Channel.from_json(channel.to_json()) == channel
    True
    """

    name = "range_queries"
    report_format = "marginals"
    # What the reports are (docs/architecture.md, "The contract each new
    # family implements"): rows of bounded numbers, not one column's
    # categories, read by their own estimator.
    has_categories = False
    default_estimator_path = "sklearn_uldp.marginals:RangeQueryEstimator"
    estimator_base_path = None
    missing_report_dtype = "Int64"
    _spec_field_schemas = {
        "columns": {
            "type": "array",
            "items": {"type": "string"},
            "minItems": 1,
            "uniqueItems": True,
            "description": "The numeric columns, in order.",
        },
        "bounds": {
            "type": "array",
            "items": {
                "type": "array",
                "items": {"type": "number"},
                "minItems": 2,
                "maxItems": 2,
            },
            "minItems": 1,
            "description": "The public range [low, high] of each column.",
        },
        "method": {
            "enum": list(METHODS),
            "description": "hdg: 1-D grids of every column and 2-D grids of every pair; "
            "tdg: 2-D grids only.",
        },
        "g1": {
            "type": ["integer", "null"],
            "minimum": 2,
            "description": "Bins of a 1-D grid (HDG), null for TDG.",
        },
        "g2": {
            "type": ["integer", "null"],
            "minimum": 2,
            "description": "Bins per column of a 2-D grid, null for HDG over one column.",
        },
        "channels": {
            "type": "array",
            "items": {"type": "object"},
            "minItems": 1,
            "description": "One channel spec per grid, over the codes 0..K-1 of its cells.",
        },
        "sensitive_ranges": {
            "type": ["array", "null"],
            "items": {
                "type": ["array", "null"],
                "items": {
                    "type": "array",
                    "items": {"type": "number"},
                    "minItems": 2,
                    "maxItems": 2,
                },
            },
            "description": (
                "Per column, its sensitive closed ranges [a, b] (null: every value "
                "sensitive); null for plain LDP."
            ),
        },
    }

    _estimate_hint = _ESTIMATE_HINT  # for _OneReportChannelMixin

    def __init__(
        self,
        columns: Sequence[str],
        bounds: Sequence[Any],
        method: str,
        g1: int | None,
        g2: int | None,
        channels: Sequence[Channel | Mapping[str, Any]],
        sensitive_ranges: Sequence[Any] | None = None,
    ) -> None:
        self.columns = _check_columns(columns)
        self.bounds = _check_column_bounds(bounds, self.columns)
        if method not in METHODS:
            raise ValueError(f"method must be one of {list(METHODS)}, got {method!r}.")
        self.method = method
        d = len(self.columns)
        if method == "tdg" and d < 2:
            raise ValueError(
                "TDG measures the 2-D grids of pairs of columns: it needs at least two "
                "columns (use method='hdg' for one)."
            )
        self.g1 = _check_granularity(g1, "g1", required=method == "hdg")
        self.g2 = _check_granularity(g2, "g2", required=d >= 2)
        if method == "tdg" and self.g1 is not None:
            raise ValueError("TDG has no 1-D grids: g1 must be null.")
        if d < 2 and self.g2 is not None:
            raise ValueError("With one column there are no 2-D grids: g2 must be null.")
        if self.g1 is not None and self.g2 is not None and self.g1 % self.g2:
            raise ValueError(
                f"g2 = {self.g2} must divide g1 = {self.g1}: a 2-D bin is the union of "
                "g1 / g2 consecutive 1-D bins."
            )
        self.sensitive_ranges = _check_sensitive_ranges(sensitive_ranges, self.columns, self.bounds)
        positions = range_grids(d, method)
        self.grids = tuple(tuple(self.columns[p] for p in grid) for grid in positions)
        self._positions = tuple(positions)
        # The marginal channel over the binned ("virtual") columns.
        names, domains, masks = [], [], []
        if method == "hdg":
            for j in range(d):
                names.append(f"{j}:1d")
                domains.append(np.arange(self.g1))
                masks.append(self._column_mask(j, self.g1))
        if d >= 2:
            for j in range(d):
                names.append(f"{j}:2d")
                domains.append(np.arange(self.g2))
                masks.append(self._column_mask(j, self.g2))
        marginals = [
            [f"{grid[0]}:1d"] if len(grid) == 1 else [f"{p}:2d" for p in grid] for grid in positions
        ]
        try:
            self.grid_channel = MarginalChannel(
                names,
                [list(dom) for dom in domains],
                marginals,
                channels,
                None if self.sensitive_ranges is None else masks,
            )
        except ValueError as exc:
            raise ValueError(_grid_wording(str(exc))) from None
        self.channels = self.grid_channel.channels
        self.cells = self.grid_channel.cells
        self.epsilon = self.grid_channel.epsilon

    def _column_mask(self, j, n_bins):
        if self.sensitive_ranges is None or self.sensitive_ranges[j] is None:
            return np.ones(n_bins, dtype=bool)
        low, high = self.bounds[j]
        return sensitive_bins(self.sensitive_ranges[j], low, high, n_bins)

    # ------------------------------------------------------------ identity
    @property
    def fine_bins(self) -> int:
        """Bins per column of a row's finest code: ``g1`` (HDG), ``g2`` (TDG)."""
        return int(self.g1 if self.method == "hdg" else self.g2)

    @property
    def n_grids(self) -> int:
        """L, the number of grids."""
        return len(self.grids)

    @property
    def categories(self):
        raise AttributeError(
            "A RangeQueryChannel describes rows of bounded numbers (their ranges are "
            "in .bounds), not one column of categories. " + _ESTIMATE_HINT
        )

    @property
    def n_categories(self) -> int:
        """Rows of :meth:`matrix`: the product of every column's finest bins."""
        return self.fine_bins ** len(self.columns)

    @property
    def sensitive_mask(self) -> np.ndarray:
        """Over the rows of :meth:`matrix`: True when a part's bin meets a sensitive range."""
        d = len(self.columns)
        out = np.zeros((self.fine_bins,) * d, dtype=bool)
        for j in range(d):
            view = [1] * d
            view[j] = self.fine_bins
            out = out | self._column_mask(j, self.fine_bins).reshape(view)
        return out.ravel()

    def get_params(self) -> dict[str, Any]:
        return {
            "columns": list(self.columns),
            "bounds": [list(b) for b in self.bounds],
            "method": self.method,
            "g1": self.g1,
            "g2": self.g2,
            "channels": [c.to_dict() for c in self.channels],
            "sensitive_ranges": None
            if self.sensitive_ranges is None
            else [None if r is None else [list(p) for p in r] for r in self.sensitive_ranges],
        }

    def _domain_spec(self):
        return {}  # the ranges are parameters

    def _domain_key(self):
        return ()

    def _key(self):
        params = (
            tuple(self.columns),
            tuple(self.bounds),
            self.method,
            self.g1,
            self.g2,
            tuple(c._key() for c in self.channels),
            None
            if self.sensitive_ranges is None
            else tuple(None if r is None else tuple(r) for r in self.sensitive_ranges),
        )
        return (self.name, params)

    def __repr__(self) -> str:
        names = sorted({type(c).__name__.replace("Channel", "") for c in self.channels})
        grains = f"g1={self.g1}, g2={self.g2}" if self.method == "hdg" else f"g2={self.g2}"
        return (
            f"RangeQueryChannel(columns={list(self.columns)}, method={self.method!r}, "
            f"{grains}, epsilon={self.epsilon!r}, oracles={names}"
            + (", utility-optimized" if self.sensitive_ranges is not None else "")
            + ")"
        )

    def describe_difference(self, other):
        if type(self) is not type(other):
            return super().describe_difference(other)
        diffs = []
        for key in ("columns", "bounds", "method", "g1", "g2"):
            if getattr(self, key) != getattr(other, key):
                diffs.append(key)
        if self.epsilon != other.epsilon:
            diffs.append(f"epsilon: {self.epsilon!r} vs {other.epsilon!r}")
        if len(self.channels) == len(other.channels):
            for j, (a, b) in enumerate(zip(self.channels, other.channels, strict=True)):
                if a != b:
                    diffs.append(f"channel of grid {j}: {', '.join(a.describe_difference(b))}")
        else:
            diffs.append("channels")
        if self.sensitive_ranges != other.sensitive_ranges:
            diffs.append("sensitive_ranges")
        if not diffs and self != other:
            diffs.append("channels")
        return diffs

    # ------------------------------------------------------------ structure
    def grid_index(self, columns: Sequence[str]) -> int:
        """The index of the grid over ``columns`` (any order), or KeyError."""
        wanted = set(columns)
        for j, grid in enumerate(self.grids):
            if set(grid) == wanted:
                return j
        raise KeyError(
            f"No grid covers exactly the columns {sorted(map(str, wanted))}; the grids are "
            f"{[list(g) for g in self.grids]}."
        )

    def cell_sensitive(self, j: int) -> np.ndarray:
        """Which cells of grid ``j`` are sensitive."""
        return self.grid_channel.cell_sensitive(j)

    def edges(self, column: str, n_bins: int) -> np.ndarray:
        """The ``n_bins + 1`` edges of a column's equal-width bins."""
        low, high = self.bounds[self.columns.index(column)]
        return low + (high - low) * np.arange(n_bins + 1) / n_bins

    def fine_codes(self, values: np.ndarray) -> np.ndarray:
        """Each row's finest bins (n, d) from values (n, d) within the bounds."""
        values = np.asarray(values, dtype=float)
        # Column-major: each column's bins are read whole (grid_cells).
        out = np.empty(values.shape, dtype=np.int64, order="F")
        # One compiled pass per column from COMPILE_MIN_WORK values (the
        # same operations in the same order: the same bins), else numpy's.
        compiled = use_compiled(values.size)
        for j, (low, high) in enumerate(self.bounds):
            if not compiled or _bin_column(
                values[:, j], float(low), float(high), self.fine_bins, out[:, j]
            ):  # (numpy's codes for values outside the bounds, as before)
                out[:, j] = bin_codes(values[:, j], low, high, self.fine_bins)
        return out

    def _fine_codes_within(self, values: np.ndarray) -> np.ndarray | None:
        """:meth:`fine_codes` of unchecked values in one compiled pass a column,
        or None when one is not a number within its bounds (or the job is
        small): the caller checks and clips them then.

        The codes are of the narrowest of uint8 and uint16 that holds them
        (int64 past), which :meth:`sample` takes as they are: a fresh array
        of a byte a value rather than eight (the kernel's first touch of
        fresh memory is a large part of a large privatize's CPU time).
        """
        values = np.asarray(values, dtype=float)
        if not use_compiled(values.size):
            return None
        narrow = [t for t in _NARROW_CODES if self.fine_bins <= np.iinfo(t).max + 1]
        dtype = narrow[0] if narrow else np.dtype(np.int64)
        out = np.empty(values.shape, dtype=dtype, order="F")
        for j, (low, high) in enumerate(self.bounds):
            if _bin_column(values[:, j], float(low), float(high), self.fine_bins, out[:, j]):
                return None
        return out

    def virtual_codes(self, fine: np.ndarray) -> np.ndarray:
        """The codes of the binned columns of :attr:`grid_channel` from the finest bins."""
        fine = np.asarray(fine, dtype=np.int64)
        if self.method == "tdg":
            return fine
        if len(self.columns) < 2:
            return fine
        return np.hstack([fine, fine // (self.g1 // self.g2)])

    def report_columns(self) -> list[str]:
        """Names of the report columns: ``grid``, then the report's words."""
        return [GRID_COLUMN, *self.grid_channel.report_columns()[1:]]

    @property
    def report_width(self) -> int:
        """The grid's index and the report's words."""
        return self.grid_channel.report_width

    # A row's reports are not one attribute's column of DataFramePrivatizer.
    def sampled_channel(self, n_attributes: int) -> Channel:
        raise ValueError(
            "A RangeQueryChannel reports rows of several numeric columns (one grid "
            "cell per user); it is not one attribute's column of a sampling "
            "strategy: RangeQueryPrivatizer itself chooses what each user reports."
        )

    @property
    def report_bits(self) -> float:
        return self.grid_channel.report_bits

    # ------------------------------------------------------------ the exact law
    def _rows(self):
        d = len(self.columns)
        return np.stack(np.unravel_index(np.arange(self.n_categories), (self.fine_bins,) * d), 1)

    def _composite(self, matrices):
        n_rows = self.n_categories
        n_out = sum(m.shape[1] for m in matrices)
        if n_rows * n_out > MAX_MATRIX_CELLS:
            raise ValueError(
                f"The exact matrix would have {n_rows} rows x {n_out} outputs, more "
                f"than {MAX_MATRIX_CELLS} cells: check each grid's channel instead "
                "(channel.channels[j].matrix(), over that grid's cells)."
            )
        virtual = self.virtual_codes(self._rows())
        blocks = [
            m[self.grid_channel.cell_codes(j, virtual)] / self.n_grids
            for j, m in enumerate(matrices)
        ]
        return np.hstack(blocks)

    def matrix(self) -> np.ndarray:
        """Q((A, y) | x) over the product of the columns' finest bins (small grids).

        Rows are the tuples of finest bins, row-major over ``columns``
        (``np.unravel_index(i, (fine_bins,) * d)``): every row of the data
        has the law of its tuple. Columns are, grid after grid, that grid's
        channel's outputs.
        """
        return self._composite([c.matrix() for c in self.channels])

    def realized_matrix(self) -> np.ndarray:
        """:meth:`matrix` with each channel as its float64 sampler realizes it."""
        return self._composite([c.realized_matrix() for c in self.channels])

    def output_labels(self) -> np.ndarray:
        """``(grid, output label)`` of each column of :meth:`matrix`."""
        return self.grid_channel.output_labels()

    @property
    def n_outputs(self) -> int:
        return self.grid_channel.n_outputs

    def protected_outputs(self) -> np.ndarray:
        """Y_P: the protected outputs of every grid's channel, in :meth:`matrix` order."""
        return self.grid_channel.protected_outputs()

    # ------------------------------------------------------------ users
    def sample(self, fine: Any, rng: np.random.Generator, *, assignment: Any = None) -> np.ndarray:
        """Reports of rows given by their finest bins, shape (n, d).

        Parameters
        ----------
        fine : array-like of int of shape (n, d)
            Each row's bins (:meth:`fine_codes`).
        rng : numpy.random.Generator
            The noise of the oracles.
        assignment : array-like of int of shape (n,), default=None
            Each row's grid; uniform from ``rng`` when None (simulations).
            The privatizer draws it from a stream of its own.

        Returns
        -------
        reports : ndarray of int64 of shape (n, 1 + n_words)
        """
        fine = np.asarray(fine)
        if fine.dtype not in _NARROW_CODES:  # (narrow codes as they are)
            fine = fine.astype(np.int64, copy=False)
        if fine.ndim != 2 or fine.shape[1] != len(self.columns):
            raise ValueError(
                f"fine must have shape (n, {len(self.columns)}), one column per column "
                f"of the channel; got {fine.shape}."
            )
        grouped = self._group_cells(fine, assignment)
        if grouped is not None:  # checked, grouped and binned in one compiled pass
            groups, cells = grouped
            return self.grid_channel.sample_cells(
                fine.shape[0], lambda j, rows: cells[j], rng, assignment, groups
            )
        fine = fine.astype(np.int64, copy=False)
        if fine.size and (fine.min() < 0 or fine.max() >= self.fine_bins):
            raise ValueError(f"fine bins must lie in 0..{self.fine_bins - 1}.")
        columns = [np.ascontiguousarray(fine[:, j]) for j in range(fine.shape[1])]
        return self.grid_channel.sample_cells(
            fine.shape[0], lambda j, rows: self.grid_cells(j, columns, rows), rng, assignment
        )

    def _group_cells(self, fine, assignment):
        """Each grid's rows and cells in one compiled pass (large jobs), or None.

        The rows of each grid in increasing order (as ``_group_rows``) and
        their cells (as :meth:`grid_cells`); None for a small job, without
        an assignment, or when a grid index or a bin is out of range (the
        caller's checks then say which).
        """
        n = fine.shape[0]
        if assignment is None or not use_compiled(n * max(1, fine.shape[1])):
            return None
        assignment = np.asarray(assignment)
        if assignment.shape != (n,) or assignment.dtype.kind not in "iu":
            return None
        n_grids = len(self._positions)
        first = np.array([g[0] for g in self._positions], dtype=np.int64)
        second = np.array([g[1] if len(g) > 1 else -1 for g in self._positions], dtype=np.int64)
        coarse = np.arange(self.fine_bins, dtype=np.int64)
        if self.method == "hdg" and self.g2 is not None:
            coarse //= self.g1 // self.g2
        # Narrow rows and cells (the sampler indexes with them as they are):
        # fresh memory of 5 bytes a row rather than 16.
        order = np.empty(n, dtype=np.int32 if n < 1 << 31 else np.intp)
        most = max(c.n_categories for c in self.channels)
        cells = np.empty(
            n, dtype=np.uint8 if most <= 256 else np.uint16 if most <= 1 << 16 else np.int64
        )
        bounds = np.zeros(n_grids + 1, dtype=np.int64)
        if _group_cells(
            assignment.astype(np.intp, copy=False),
            fine,
            first,
            second,
            coarse,
            int(self.g2 or 0),
            self.fine_bins,
            order,
            cells,
            bounds,
        ):
            return None
        edges = bounds.tolist()
        groups = [order[edges[j] : edges[j + 1]] for j in range(n_grids)]
        return groups, [cells[edges[j] : edges[j + 1]] for j in range(n_grids)]

    def grid_cells(self, j: int, columns: Sequence[np.ndarray], rows: Any = None) -> np.ndarray:
        """The codes of grid j's cells holding rows given by their finest bins.

        ``columns`` holds each column's finest bins (one array per column);
        ``rows`` selects rows (all when None). The same codes as
        ``grid_channel.cell_codes(j, virtual_codes(fine))``, without building
        the binned columns of every grid.
        """
        grid = self._positions[j]
        picked = [columns[p] if rows is None else columns[p][rows] for p in grid]
        if len(grid) == 1:
            return picked[0]
        # Each finest bin's 2-D bin from a table of fine_bins entries (an
        # integer division per row is several times slower than the lookup).
        coarse = np.arange(self.fine_bins, dtype=np.int64)
        if self.method == "hdg":
            coarse //= self.g1 // self.g2
        return np.take(coarse * self.g2, picked[0]) + np.take(coarse, picked[1])

    # ------------------------------------------------------------ collector
    def encode_reports(self, reports: Any):
        """Validate range-query reports and split them by grid (see :meth:`statistics`)."""
        names = self.report_columns()
        if isinstance(reports, pd.Series):
            reports = reports.to_frame()
        if isinstance(reports, pd.DataFrame):
            absent = [c for c in names if c not in reports.columns]
            if absent or reports.shape[1] != len(names):
                raise ReportMismatchError(
                    f"Range-query reports have the columns {names}; got "
                    f"{reports.shape[1]} columns (missing: {absent}). " + _ESTIMATE_HINT
                )
            # One block of int64 columns is read without a copy (only read here).
            table = reports[names].to_numpy()
        else:
            table = np.asarray(reports)
        if table.ndim != 2 or table.shape[1] != len(names):
            raise ReportMismatchError(
                f"Range-query reports are a table of shape (n, {len(names)}) (columns "
                f"{names}); got shape {table.shape}. " + _ESTIMATE_HINT
            )
        try:
            table = self.grid_channel._report_table(table)
        except ReportMismatchError as exc:
            raise ReportMismatchError(str(exc).replace("Marginal reports", "Reports")) from None
        counted = self.grid_channel._count_subsets(table)
        if counted is not None:  # every report valid (checked in the same pass)
            return self.grid_channel._counted_codes(table, counted)
        grid = table[:, 0]
        if grid.size and (grid.min() < 0 or grid.max() >= self.n_grids):
            bad = int(((grid < 0) | (grid >= self.n_grids)).sum())
            raise ReportMismatchError(
                f"{bad} reports name a grid outside 0..{self.n_grids - 1}: they come "
                "from another privatizer (or were altered)."
            )
        try:
            return self.grid_channel.encode_reports(table)
        except ReportMismatchError as exc:
            message = str(exc).replace("marginal ", "grid ").replace("Marginal ", "Grid ")
            raise ReportMismatchError(message) from None

    def statistics(self, codes: Any, *, keep_reports: bool = False) -> ReportStatistics:
        """Sufficient statistics: reports per grid and each grid's own; they add up.

        ``counts`` is the number of reports of each grid; ``extra`` a
        :class:`~sklearn_uldp.marginals.MarginalStatistics` (one part per grid).
        """
        if not isinstance(codes, _MarginalCodes):
            codes = self.encode_reports(codes)
        stats = self.grid_channel.statistics(codes, keep_reports=keep_reports)
        return ReportStatistics(self, stats.n, stats.counts, stats.extra)


# ------------------------------------------------------------------ helpers
def _grid_wording(message):
    """A message of the marginal channel, in the words of grids."""
    for old, new in (
        ("marginals'", "grids'"),
        ("marginals", "grids"),
        ("marginal", "grid"),
        (
            "a sensitive part (a cell is sensitive when any of its columns' values is)",
            "a bin meeting a sensitive range",
        ),
    ):
        message = message.replace(old, new)
    return message


def _check_column_bounds(bounds, columns):
    if isinstance(bounds, (str, bytes, Mapping)) or not isinstance(bounds, (list, tuple)):
        raise ValueError("bounds must be a list holding each column's (low, high).")
    if len(bounds) != len(columns):
        raise ValueError(
            f"bounds must hold one (low, high) per column ({len(columns)}), got {len(bounds)}."
        )
    out = []
    for name, pair in zip(columns, bounds, strict=True):
        try:
            out.append(check_bounds(pair, name=f"the bounds of column {name!r}"))
        except (TypeError, ValueError) as exc:
            raise ValueError(str(exc)) from None
    return tuple(out)


def _check_granularity(value, name, *, required):
    if value is None:
        if required:
            raise ValueError(f"{name} must be an integer >= 2 (the number of bins).")
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 2:
        raise ValueError(f"{name} must be an integer >= 2 (the number of bins), got {value!r}.")
    return int(value)


def _check_sensitive_ranges(ranges, columns, bounds):
    if ranges is None:
        return None
    if isinstance(ranges, (str, bytes, Mapping)) or not isinstance(ranges, (list, tuple)):
        raise ValueError(
            "sensitive_ranges must be None or a list with one entry per column (a "
            "list of [a, b] ranges, or null for a column sensitive in every value)."
        )
    if len(ranges) != len(columns):
        raise ValueError(
            f"sensitive_ranges must hold one entry per column ({len(columns)}), got {len(ranges)}."
        )
    out = []
    for name, entry, (low, high) in zip(columns, ranges, bounds, strict=True):
        if entry is None:
            out.append(None)
            continue
        out.append(check_column_ranges(entry, low, high, name))
    if all(entry is None for entry in out):
        raise ValueError(
            "sensitive_ranges makes every value of every column sensitive: that is "
            "plain LDP; pass None."
        )
    return tuple(out)


def check_column_ranges(entry: Any, low: float, high: float, name: str) -> tuple:
    """One column's sensitive ranges: closed pairs ``a <= b`` meeting the bounds.

    Each range is clipped to the bounds (a value outside them is clipped
    onto them before it is binned, and clipping keeps a value of ``[a, b]``
    in the clipped range); sorted, as a tuple of float pairs. Messages name
    the column and the position of a bad range, never its values.
    """
    if isinstance(entry, (str, bytes, Mapping)) or not isinstance(entry, (list, tuple, np.ndarray)):
        raise ValueError(f"The sensitive ranges of column {name!r} must be a list of (a, b) pairs.")
    items = list(entry)
    if len(items) == 2 and all(
        isinstance(v, numbers.Real) and not isinstance(v, bool) for v in items
    ):
        items = [tuple(items)]  # a single (a, b) pair
    if not items:
        raise ValueError(
            f"Column {name!r} is listed with no sensitive range: list at least one, or "
            "leave the column out to make every value sensitive (a column with nothing "
            "sensitive would be released in the clear by utility-optimized oracles)."
        )
    out = []
    for i, pair in enumerate(items):
        if isinstance(pair, (str, bytes)) or safe_ndim(pair) != 1 or len(pair) != 2:
            raise ValueError(f"Sensitive range {i} of column {name!r} must be a pair (a, b).")
        a, b = pair
        for v in (a, b):
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
                raise TypeError(
                    f"Sensitive range {i} of column {name!r} must hold two real numbers."
                )
        a, b = float(a), float(b)
        if not (math.isfinite(a) and math.isfinite(b)):
            raise ValueError(f"Sensitive range {i} of column {name!r} must be finite.")
        if a > b:
            raise ValueError(
                f"Sensitive range {i} of column {name!r} is empty (its start exceeds its "
                "end): give (a, b) with a <= b."
            )
        if b < low or a > high:
            raise ValueError(
                f"Sensitive range {i} of column {name!r} lies outside the column's "
                "bounds: every value is clipped to the bounds, so it would protect no "
                "one. Widen the bounds or fix the range."
            )
        out.append((max(a, low), min(b, high)))
    return tuple(sorted(set(out)))
