"""The public spec of marginal reports: one sub-channel per measured marginal.

A user of :class:`~sklearn_uldp.marginals.MarginalPrivatizer` holds a row of
d categorical columns, is assigned one marginal (a set of columns) uniformly
at random, independently of the row, and reports the joint value of that
marginal's columns through the marginal's own frequency oracle. The reports
of different marginals come from different channels (different domains, and
often different oracles: k-RR for a small product domain, OUE or subset
selection for a large one), so the spec is a composite:
:class:`MarginalChannel` holds the columns and their domains, the measured
marginals, and one ordinary channel spec per marginal, whose categories are
the codes ``0 .. K - 1`` of the marginal's cells (row-major over its
columns, in the order of ``columns``).

Report layout (one row per user, integers): column ``marginal`` is the
index of the user's marginal; the oracle's report follows in ``W`` words of
64 bits (``report``, or ``report_0 .. report_{W-1}``), W the largest width
of the marginals:

* a one-symbol oracle (k-RR, uRR, local hashing, Hadamard response, ...)
  puts its report (an integer) in the first word, the others are 0;
* a bit-vector oracle (OUE, RAPPOR, uOUE, uRAP, subset selection, uBD,
  uSS) packs its K bits little-endian, 8 to a byte and 8 bytes to a word
  (bit j of the report is bit ``j % 64`` of word ``j // 64``): the
  layout of :class:`~sklearn_uldp.mechanisms.PackedReports`, read in place.

So reports are a dense int64 table whatever the oracles, ``(1 + W) * 8``
bytes a user, that pandas, Parquet and Dask keep as they are.
"""

from __future__ import annotations

import itertools
import math
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..exceptions import ReportMismatchError
from ..mechanisms._channel import (
    Channel,
    ReportStatistics,
    _hashable,
)
from ..mechanisms._oracle_kernels import report_array
from ..mechanisms._reports import PackedReports
from ..mechanisms._subset_selection import SubsetSelectionChannel
from ..utils._numba import HAVE_NUMBA as _HAVE_NUMBA
from ..utils._numba import numba, use_compiled
from ..utils._validation import check_channel_categories, safe_ndim
from ._one_report import _OneReportChannelMixin

__all__ = ["MarginalChannel", "MarginalStatistics", "MAX_MATRIX_CELLS"]

#: Largest exact matrix (rows x outputs) :meth:`MarginalChannel.matrix` builds.
MAX_MATRIX_CELLS = 1 << 22

#: The report words' bytes are the int64 table's own (little-endian) bytes.
_LITTLE_ENDIAN = sys.byteorder == "little"

#: Name of the report column holding the index of the user's marginal.
MARGINAL_COLUMN = "marginal"

_ESTIMATE_HINT = (
    "These are the reports of a MarginalPrivatizer (one marginal per user, each "
    "with its own channel): estimate them with sklearn_uldp.marginals.MarginalEstimator."
)


def _words_of(n_bits):
    """64-bit words that hold ``n_bits`` bits."""
    return -(-int(n_bits) // 64)


class MarginalStatistics:
    """The per-marginal parts of the statistics of marginal reports.

    One :class:`~sklearn_uldp.mechanisms.ReportStatistics` per measured
    marginal (``None`` for a marginal no report of the batch measured); they
    add up marginal by marginal, so the statistics of chunks, partitions and
    machines sum to those of all the reports.

    Parameters
    ----------
    parts : sequence of ReportStatistics or None
        One entry per marginal, in the channel's order.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp.marginals import MarginalPrivatizer
    >>> priv = MarginalPrivatizer(2.0, categories={"a": [0, 1], "b": [0, 1, 2]},
    ...                           random_state=0).fit()
    >>> X = np.random.default_rng(0).integers(0, 2, size=(100, 2))
    >>> channel = priv.channel_
    >>> stats = channel.statistics(channel.encode_reports(priv.transform(X)))
    >>> [part.n for part in stats.extra.parts]
    [100]
    """

    def __init__(self, parts: Sequence[ReportStatistics | None]) -> None:
        self.parts = tuple(parts)

    def __add__(self, other: MarginalStatistics) -> MarginalStatistics:
        if not isinstance(other, MarginalStatistics) or len(other.parts) != len(self.parts):
            return NotImplemented
        out = []
        for a, b in zip(self.parts, other.parts, strict=True):
            out.append(b if a is None else a if b is None else a + b)
        return MarginalStatistics(out)

    def spill(self, directory: Any = None) -> MarginalStatistics:
        """Every part with its per-report store in files (see ``ReportStatistics.spill``)."""
        return MarginalStatistics([None if p is None else p.spill(directory) for p in self.parts])

    def __repr__(self) -> str:
        sizes = [0 if p is None else p.n for p in self.parts]
        return f"MarginalStatistics(n_per_marginal={sizes})"


class _MarginalCodes:
    """Encoded marginal reports: the assignment and each marginal's codes.

    ``parts`` is a list (one entry per marginal), or a function that makes
    it when first asked: the reports counted in one pass over the table
    (``counted``: each marginal's number of reports and bit counts) are
    split by marginal only when their statistics keep the reports (EM).
    """

    def __init__(self, n, assignment, parts, counted=None):
        self.n = int(n)
        self.assignment = assignment
        self._parts = parts
        self.counted = counted

    @property
    def parts(self):
        if callable(self._parts):
            self._parts = self._parts()
        return self._parts

    @property
    def shape(self):  # for code that asks how many reports a batch holds
        return (self.n,)

    def __len__(self):
        return self.n


class MarginalChannel(_OneReportChannelMixin, Channel):
    """The spec of marginal reports: the columns, the marginals and their channels.

    Each user is assigned one of the L marginals uniformly at random,
    independently of their row, and reports the marginal's joint value
    through its channel. Conditional on the (data-independent) marginal, a
    report is an ordinary report of that channel, over the cells of the
    marginal (codes ``0 .. K - 1``, row-major over its columns in the order
    of ``columns``); so ``Q((l, y) | x) = Q_l(y | x_A) / L`` for a row x,
    its projection x_A on the marginal's columns A, and
    :meth:`matrix` is that law over every row of the product domain (small
    domains). Budget: ``epsilon`` is the sub-channels' common budget, what
    one report spends (see ``docs/marginals.md`` for the proof, and for the
    utility-optimized version's row-level guarantee).

    Parameters
    ----------
    columns : list of str
        The column names, in order.
    domains : list of array-like
        The public domain of each column (at least two values each).
    marginals : list of list of str
        The measured marginals, each a set of columns listed in the order of
        ``columns``; no two alike.
    channels : list of Channel or dict
        One channel (or spec) per marginal, over the categories
        ``0 .. K - 1`` with K the product of the marginal's domain sizes;
        one-symbol (``"categorical"``) or bit-vector (``"bits"``) reports,
        all with the same ``epsilon``.
    sensitive : list of array-like of bool or None, default=None
        Per column, a boolean mask over its domain (True: sensitive); None
        for plain LDP. A cell of a marginal is sensitive when any of its
        parts is, and each channel's sensitive set must be exactly that.

    Attributes
    ----------
    epsilon : float
        The budget one report spends.
    n_marginals : int
    cells : tuple of int
        K, the number of cells of each marginal.
    n_words : int
        W, the 64-bit words of a report after the marginal's index.

    Examples
    --------
    >>> from sklearn_uldp.marginals import MarginalPrivatizer
    >>> from sklearn_uldp.mechanisms import Channel
    >>> priv = MarginalPrivatizer(
    ...     1.0, categories={"a": [0, 1], "b": ["x", "y", "z"], "c": [0, 1]}).fit()
    >>> channel = priv.channel_
    >>> channel.marginals
    (('a', 'b'), ('a', 'c'), ('b', 'c'))
    >>> channel.cells, channel.report_columns()
    ((6, 4, 6), ['marginal', 'report'])
    >>> Channel.from_json(channel.to_json()) == channel
    True
    """

    name = "marginals"
    report_format = "marginals"
    # What the reports are (docs/architecture.md, "The contract each new
    # family implements"): rows of several columns, not one column's
    # categories, read by their own estimator.
    has_categories = False
    default_estimator_path = "sklearn_uldp.marginals:MarginalEstimator"
    estimator_base_path = None
    missing_report_dtype = "Int64"
    _spec_field_schemas = {
        "columns": {
            "type": "array",
            "items": {"type": "string"},
            "minItems": 1,
            "uniqueItems": True,
            "description": "The column names, in order.",
        },
        "domains": {
            "type": "array",
            "items": {"type": "array", "minItems": 2},
            "minItems": 1,
            "description": "The public domain of each column (at least two values each).",
        },
        "marginals": {
            "type": "array",
            "items": {"type": "array", "items": {"type": "string"}, "minItems": 1},
            "minItems": 1,
            "description": (
                "The measured marginals: lists of column names, in the order of columns."
            ),
        },
        "channels": {
            "type": "array",
            "items": {"type": "object"},
            "minItems": 1,
            "description": (
                "One channel spec per marginal, over the codes 0..K-1 of its cells "
                "(row-major over its columns)."
            ),
        },
        "sensitive": {
            "type": ["array", "null"],
            "items": {"type": "array", "items": {"type": "boolean"}},
            "description": (
                "Per column, a boolean mask over its domain (true: sensitive); null for plain LDP."
            ),
        },
    }

    _estimate_hint = _ESTIMATE_HINT  # for _OneReportChannelMixin

    def __init__(
        self,
        columns: Sequence[str],
        domains: Sequence[Any],
        marginals: Sequence[Sequence[str]],
        channels: Sequence[Channel | Mapping[str, Any]],
        sensitive: Sequence[Any] | None = None,
    ) -> None:
        self.columns = _check_columns(columns)
        self.domains = _check_domains(domains, self.columns)
        self.marginals = _check_marginals(marginals, self.columns)
        self.sizes = tuple(len(d) for d in self.domains)
        position = {c: j for j, c in enumerate(self.columns)}
        self.positions = tuple(tuple(position[c] for c in m) for m in self.marginals)
        self.cells = tuple(math.prod(self.sizes[j] for j in pos) for pos in self.positions)
        self.sensitive = _check_column_masks(sensitive, self.columns, self.sizes)
        self.channels = _check_channels(channels, self)
        epsilons = {float(c.epsilon) for c in self.channels}
        if len(epsilons) != 1:
            raise ValueError(
                f"The marginals' channels spend different budgets ({sorted(epsilons)}); "
                "one report spends the row's epsilon, so every marginal's channel "
                "must have the same epsilon."
            )
        self.epsilon = epsilons.pop()
        self.widths = tuple(
            1 if c.histogram_reports else _words_of(c.n_categories) for c in self.channels
        )
        self.n_words = max(self.widths)

    # ------------------------------------------------------------ identity
    @property
    def n_marginals(self) -> int:
        """L, the number of measured marginals."""
        return len(self.marginals)

    @property
    def categories(self):
        raise AttributeError(
            "A MarginalChannel describes rows of several columns (its domains are "
            "in .domains), not one column of categories. " + _ESTIMATE_HINT
        )

    @property
    def n_categories(self) -> int:
        """The number of rows of the product domain (the rows of :meth:`matrix`)."""
        return math.prod(self.sizes)

    def get_params(self) -> dict[str, Any]:
        return {
            "columns": list(self.columns),
            "domains": [d.tolist() for d in self.domains],
            "marginals": [list(m) for m in self.marginals],
            "channels": [c.to_dict() for c in self.channels],
            "sensitive": None if self.sensitive is None else [m.tolist() for m in self.sensitive],
        }

    def _domain_spec(self):
        return {}  # the domains are parameters

    def _domain_key(self):
        return ()

    def _key(self):
        params = (
            tuple(self.columns),
            tuple(tuple(_domain_tuple(d)) for d in self.domains),
            self.marginals,
            tuple(c._key() for c in self.channels),
            None if self.sensitive is None else tuple(_hashable(m) for m in self.sensitive),
        )
        return (self.name, params)

    def __repr__(self) -> str:
        names = sorted({type(c).__name__.replace("Channel", "") for c in self.channels})
        return (
            f"MarginalChannel(columns={list(self.columns)}, n_marginals={self.n_marginals}, "
            f"epsilon={self.epsilon!r}, oracles={names}"
            + (", utility-optimized" if self.sensitive is not None else "")
            + ")"
        )

    def describe_difference(self, other):
        if type(self) is not type(other):
            return super().describe_difference(other)
        diffs = []
        if self.columns != other.columns:
            diffs.append("columns")
        if [tuple(_domain_tuple(d)) for d in self.domains] != [
            tuple(_domain_tuple(d)) for d in other.domains
        ]:
            diffs.append("domains")
        if self.marginals != other.marginals:
            diffs.append("marginals")
        if self.epsilon != other.epsilon:
            diffs.append(f"epsilon: {self.epsilon!r} vs {other.epsilon!r}")
        if len(self.channels) == len(other.channels):
            for j, (a, b) in enumerate(zip(self.channels, other.channels, strict=True)):
                if a != b:
                    diffs.append(f"channel of marginal {j}: {', '.join(a.describe_difference(b))}")
        sens = [
            None if s.sensitive is None else [m.tolist() for m in s.sensitive]
            for s in (self, other)
        ]
        if sens[0] != sens[1]:
            diffs.append("sensitive")
        if not diffs and self != other:
            diffs.append("channels")  # a difference the fields above do not name
        return diffs

    # ------------------------------------------------------------ structure
    def marginal_index(self, columns: Sequence[str]) -> int:
        """The index of the marginal over ``columns`` (any order), or KeyError."""
        wanted = set(columns)
        for j, m in enumerate(self.marginals):
            if set(m) == wanted:
                return j
        raise KeyError(
            f"{sorted(map(str, wanted))} is not a measured marginal; the marginals are "
            f"{[list(m) for m in self.marginals]}."
        )

    def cell_shape(self, j: int) -> tuple[int, ...]:
        """The domain sizes of marginal ``j``'s columns (its table's shape)."""
        return tuple(self.sizes[p] for p in self.positions[j])

    def cell_sensitive(self, j: int) -> np.ndarray:
        """Which cells of marginal ``j`` are sensitive (any part sensitive)."""
        shape = self.cell_shape(j)
        if self.sensitive is None:
            return np.ones(math.prod(shape), dtype=bool)
        out = np.zeros(shape, dtype=bool)
        for axis, p in enumerate(self.positions[j]):
            view = [1] * len(shape)
            view[axis] = shape[axis]
            out = out | self.sensitive[p].reshape(view)
        return out.ravel()

    @property
    def sensitive_mask(self) -> np.ndarray:
        """Over the rows of the product domain: True when any part is sensitive."""
        if self.sensitive is None:
            return np.ones(self.n_categories, dtype=bool)
        out = np.zeros(self.sizes, dtype=bool)
        for axis, mask in enumerate(self.sensitive):
            view = [1] * len(self.sizes)
            view[axis] = self.sizes[axis]
            out = out | mask.reshape(view)
        return out.ravel()

    def report_columns(self) -> list[str]:
        """Names of the report columns: ``marginal``, then the report's words."""
        if self.n_words == 1:
            return [MARGINAL_COLUMN, "report"]
        return [MARGINAL_COLUMN, *[f"report_{w}" for w in range(self.n_words)]]

    @property
    def report_width(self) -> int:
        """The marginal's index and the report's ``n_words`` words."""
        return 1 + self.n_words

    # A row's reports are not one attribute's column of DataFramePrivatizer.
    def sampled_channel(self, n_attributes: int) -> Channel:
        raise ValueError(
            "A MarginalChannel reports rows of several columns (one marginal per "
            "user); it is not one attribute's column of a sampling strategy: "
            "MarginalPrivatizer itself chooses what each user reports."
        )

    @property
    def report_bits(self) -> float:
        """Bits of one report: the index and the largest oracle report."""
        return float(math.log2(self.n_marginals) + max(c.report_bits for c in self.channels))

    def cell_codes(self, j: int, codes: np.ndarray) -> np.ndarray:
        """Codes of marginal ``j``'s cells from per-column codes of shape (n, d)."""
        pos = self.positions[j]
        return np.ravel_multi_index(tuple(codes[:, p] for p in pos), self.cell_shape(j))

    # ------------------------------------------------------------ the exact law
    def _rows(self):
        n_rows = self.n_categories
        return np.stack(np.unravel_index(np.arange(n_rows), self.sizes), axis=1)

    def _composite(self, matrices):
        n_rows = self.n_categories
        n_out = sum(m.shape[1] for m in matrices)
        if n_rows * n_out > MAX_MATRIX_CELLS:
            raise ValueError(
                f"The exact matrix would have {n_rows} rows x {n_out} outputs, more "
                f"than {MAX_MATRIX_CELLS} cells: check each marginal's channel "
                "instead (channel.channels[j].matrix(), over that marginal's cells)."
            )
        rows = self._rows()
        blocks = [m[self.cell_codes(j, rows)] / self.n_marginals for j, m in enumerate(matrices)]
        return np.hstack(blocks)

    def matrix(self) -> np.ndarray:
        """Q((l, y) | x) over every row x of the product domain (small domains).

        Rows are the rows of the product domain, row-major over ``columns``
        (``np.unravel_index(i, sizes)``); columns are, marginal after
        marginal, that marginal's channel's outputs (:meth:`output_labels`).
        """
        return self._composite([c.matrix() for c in self.channels])

    def realized_matrix(self) -> np.ndarray:
        """:meth:`matrix` with each channel as its float64 sampler realizes it.

        The marginal's index is drawn by ``Generator.integers``, which is
        exactly uniform, so only the channels' probabilities are rounded.
        """
        return self._composite([c.realized_matrix() for c in self.channels])

    def output_labels(self) -> np.ndarray:
        """``(marginal, output label)`` of each column of :meth:`matrix`."""
        labels = [(j, y) for j, c in enumerate(self.channels) for y in c.output_labels()]
        out = np.empty(len(labels), dtype=object)
        out[:] = labels
        return out

    @property
    def n_outputs(self) -> int:
        return int(sum(c.n_outputs for c in self.channels))

    def protected_outputs(self) -> np.ndarray:
        """Y_P: the protected outputs of every marginal's channel, in :meth:`matrix` order."""
        return np.concatenate([np.asarray(c.protected_outputs(), bool) for c in self.channels])

    # ------------------------------------------------------------ users
    def sample(self, codes: Any, rng: np.random.Generator, *, assignment: Any = None) -> np.ndarray:
        """Reports of rows given as per-column codes of shape (n, d).

        Parameters
        ----------
        codes : array-like of int of shape (n, d)
            Each row's codes (0 .. size - 1 per column).
        rng : numpy.random.Generator
            The noise of the oracles.
        assignment : array-like of int of shape (n,), default=None
            Each row's marginal; drawn uniformly from ``rng`` when None
            (simulations). The privatizer draws it from a stream of its own
            that never reads the data.

        Returns
        -------
        reports : ndarray of int64 of shape (n, 1 + n_words)
        """
        codes = np.asarray(codes, dtype=np.intp)
        if codes.ndim != 2 or codes.shape[1] != len(self.columns):
            raise ValueError(
                f"codes must have shape (n, {len(self.columns)}), one column per "
                f"column of the channel; got {codes.shape}."
            )
        return self.sample_cells(
            codes.shape[0], lambda j, rows: self.cell_codes(j, codes[rows]), rng, assignment
        )

    def sample_cells(self, n, cells_of, rng, assignment=None, groups=None):
        """Reports of n rows whose cells ``cells_of(j, rows)`` gives, marginal by marginal.

        The engine of :meth:`sample`, for callers that compute the cells of
        a marginal's rows themselves (range queries read them from binned
        numbers): ``cells_of(j, rows)`` returns the codes of marginal j's
        cells for the row indices ``rows``; ``groups``, when given, holds
        each marginal's rows (in increasing order) as the caller found them.
        """
        if assignment is None:
            assignment = rng.integers(0, self.n_marginals, size=n)
        assignment = np.asarray(assignment, dtype=np.intp)
        # (mapped without a huge-page request: see report_array)
        out = report_array((n, 1 + self.n_words), np.int64, zeros=True)
        out[:, 0] = assignment
        if groups is None:
            groups = _group_rows(assignment, self.n_marginals)
        for j, (channel, rows) in enumerate(zip(self.channels, groups, strict=True)):
            if rows.size == 0:
                continue
            cells = cells_of(j, rows)
            if channel.histogram_reports:  # one output symbol
                outputs = channel.sample(cells, rng)
                out[rows, 1] = np.asarray(channel.decode(outputs), dtype=np.int64)
            elif isinstance(channel, SubsetSelectionChannel) and _LITTLE_ENDIAN:
                # Each row's packed bits straight into its report words.
                n_bytes = -(-channel.n_categories // 8)
                table = out.view(np.uint8)[:, 8 : 8 + n_bytes]
                channel.sample(cells, rng, packed=True, out=table, rows=rows)
            else:
                out[rows, 1 : 1 + self.widths[j]] = _sample_words(
                    channel, cells, rng, self.widths[j]
                )
        return out

    # ------------------------------------------------------------ collector
    def encode_reports(self, reports: Any) -> _MarginalCodes:
        """Validate marginal reports; split them by marginal and encode each part.

        Accepts the int64 table :meth:`sample` returns (a numpy array or a
        DataFrame with the columns :meth:`report_columns`, in any order).
        Each part is checked by its marginal's channel (an output it cannot
        produce, a set padding bit, ... is refused).
        """
        table = self._report_table(reports)
        counted = self._count_subsets(table)
        if counted is not None:  # every report valid, counted in one pass
            return self._counted_codes(table, counted)
        return _MarginalCodes(table.shape[0], table[:, 0], self._split(table))

    def _counted_codes(self, table, counted):
        """Codes of reports counted by :meth:`_count_subsets` (split only if asked)."""
        return _MarginalCodes(table.shape[0], table[:, 0], lambda: self._split(table), counted)

    def _count_subsets(self, table):
        """Subset-selection reports counted and checked in one compiled pass, or None.

        For a table of subset-selection reports only (HDG's and TDG's
        grids by default), from ``COMPILE_MIN_WORK`` words: each row's
        marginal index, its bits past its marginal's cells (none), its
        number of set bits (the channel's d) and the bit counts per
        marginal (see :func:`_count_subset_table`). None when a report is
        not valid (the split path then names what is wrong) or the table is
        of other oracles or small.
        """
        n = table.shape[0]
        if not (
            _HAVE_NUMBA
            and use_compiled(n * self.n_words)
            and all(isinstance(c, SubsetSelectionChannel) for c in self.channels)
        ):
            return None
        n_bits = np.array([c.n_categories for c in self.channels], dtype=np.int64)
        sizes = np.array([c.subset_size for c in self.channels], dtype=np.int64)
        counts = np.zeros((self.n_marginals, 64 * self.n_words), dtype=np.int64)
        n_rows = np.zeros(self.n_marginals, dtype=np.int64)
        lanes = np.zeros((self.n_marginals, self.n_words, 8), dtype=np.uint64)
        in_lanes = np.zeros(self.n_marginals, dtype=np.int64)
        if _count_subset_table(table, n_bits, sizes, counts, n_rows, lanes, in_lanes):
            return None
        return n_rows, [counts[j, :k].copy() for j, k in enumerate(n_bits.tolist())]

    def _split(self, table):
        """Each marginal's reports, gathered and encoded by its channel (checked)."""
        n = table.shape[0]
        assignment = table[:, 0]
        if n and (assignment.min() < 0 or assignment.max() >= self.n_marginals):
            bad = int(((assignment < 0) | (assignment >= self.n_marginals)).sum())
            raise ReportMismatchError(
                f"{bad} reports name a marginal outside 0..{self.n_marginals - 1}: "
                "they come from another privatizer (or were altered)."
            )
        parts: list[Any] = []
        for j, (channel, rows) in enumerate(
            zip(self.channels, _group_rows(assignment, self.n_marginals), strict=True)
        ):
            if rows.size == 0:
                parts.append(None)
                continue
            # (a fresh, contiguous gather of the rows: viewed, not copied again;
            # np.take is several times faster than fancy indexing of rows and
            # a slice of columns)
            full = np.take(table, rows, axis=0).astype("<i8", copy=False)
            width = self.widths[j]
            if width < self.n_words and full[:, 1 + width :].any():
                raise ReportMismatchError(
                    f"{int((full[:, 1 + width :] != 0).any(axis=1).sum())} reports of "
                    f"marginal {j} use report words past its {width}: they come from "
                    "another privatizer (or were altered)."
                )
            if channel.histogram_reports:  # one output symbol
                parts.append(channel.encode_reports(full[:, 1]))
            else:
                data = full.view(np.uint8)[:, 8 : 8 * (1 + width)]
                n_bytes = -(-channel.n_categories // 8)
                if (data[:, n_bytes:] != 0).any():
                    raise ReportMismatchError(
                        f"Reports of marginal {j} set bits past its "
                        f"{channel.n_categories} cells: they come from another "
                        "privatizer (or were altered)."
                    )
                packed = PackedReports(data[:, :n_bytes], channel.n_categories, channel)
                parts.append(channel.encode_reports(packed))
        return parts

    def _report_table(self, reports):
        names = self.report_columns()
        if isinstance(reports, pd.Series):
            reports = reports.to_frame()
        if isinstance(reports, pd.DataFrame):
            absent = [c for c in names if c not in reports.columns]
            if absent or reports.shape[1] != len(names):
                raise ReportMismatchError(
                    f"Marginal reports have the columns {names}; got {reports.shape[1]} "
                    f"columns (missing: {absent}). " + _ESTIMATE_HINT
                )
            # One block of int64 columns is read without a copy (only read here).
            arr = reports[names].to_numpy() if names else np.zeros((0, 0))
        else:
            arr = np.asarray(reports)
        if arr.ndim != 2 or arr.shape[1] != len(names):
            raise ReportMismatchError(
                f"Marginal reports are a table of shape (n, {len(names)}) (columns "
                f"{names}); got shape {arr.shape}. " + _ESTIMATE_HINT
            )
        if arr.dtype.kind not in "iu":
            if arr.dtype.kind == "O" and arr.size:
                try:
                    as_int = arr.astype(np.int64)
                except (TypeError, ValueError, OverflowError):
                    as_int = None
                if as_int is not None and np.array_equal(as_int, arr.astype(object)):
                    arr = as_int
            if arr.dtype.kind not in "iu":
                raise ReportMismatchError(
                    f"Marginal reports are integers (int64); got dtype {arr.dtype}. "
                    "Pass them as the privatizer returned them (a file read back may "
                    "need dtype=int64)."
                )
        return arr.astype(np.int64, copy=False)

    def statistics(self, codes: Any, *, keep_reports: bool = False) -> ReportStatistics:
        """Sufficient statistics: reports per marginal, and each marginal's own.

        ``counts`` is the number of reports of each marginal (the assignment
        histogram); ``extra`` a :class:`MarginalStatistics`. They add up.
        """
        if not isinstance(codes, _MarginalCodes):
            codes = self.encode_reports(codes)
        if codes.counted is not None and not keep_reports:
            n_rows, bit_counts = codes.counted
            parts = [
                None if m == 0 else ReportStatistics(channel, int(m), bits)
                for channel, m, bits in zip(self.channels, n_rows.tolist(), bit_counts, strict=True)
            ]
            return ReportStatistics(self, codes.n, n_rows.copy(), MarginalStatistics(parts))
        counts = np.bincount(codes.assignment, minlength=self.n_marginals).astype(np.int64)
        parts = [
            None if part is None else channel.statistics(part, keep_reports=keep_reports)
            for channel, part in zip(self.channels, codes.parts, strict=True)
        ]
        return ReportStatistics(self, codes.n, counts, MarginalStatistics(parts))


# ------------------------------------------------------------------ helpers
def _domain_tuple(domain):
    from ..mechanisms._channel import _MISSING, _is_missing_scalar

    return [_MISSING if _is_missing_scalar(v) else v for v in domain.tolist()]


def _check_columns(columns):
    if isinstance(columns, (str, bytes)) or not isinstance(
        columns, (list, tuple, np.ndarray, pd.Index)
    ):
        raise ValueError(f"columns must be a list of column names, got {type(columns).__name__}.")
    names = list(columns)
    if not names:
        raise ValueError("columns must name at least one column.")
    bad = [j for j, c in enumerate(names) if not isinstance(c, str) or not c]
    if bad:
        raise ValueError(
            f"columns must be non-empty strings; entries at positions {bad[:5]} are not."
        )
    if len(set(names)) != len(names):
        raise ValueError("columns must be distinct; some name appears twice.")
    return tuple(names)


def _check_domains(domains, columns):
    if isinstance(domains, (str, bytes)) or not isinstance(domains, (list, tuple)):
        raise ValueError("domains must be a list holding each column's list of values.")
    if len(domains) != len(columns):
        raise ValueError(
            f"domains must hold one domain per column ({len(columns)}), got {len(domains)}."
        )
    out = []
    for name, domain in zip(columns, domains, strict=True):
        if isinstance(domain, (str, bytes, Mapping)) or safe_ndim(domain) != 1:
            raise ValueError(f"The domain of column {name!r} must be a flat list of values.")
        try:
            out.append(check_channel_categories(domain))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"The domain of column {name!r} is invalid: {exc}") from None
    return tuple(out)


def _check_marginals(marginals, columns):
    if isinstance(marginals, (str, bytes)) or not isinstance(marginals, (list, tuple)):
        raise ValueError("marginals must be a list of lists of column names.")
    if not marginals:
        raise ValueError("marginals must hold at least one marginal.")
    position = {c: j for j, c in enumerate(columns)}
    out = []
    for j, m in enumerate(marginals):
        if isinstance(m, (str, bytes)) or not isinstance(m, (list, tuple)) or not m:
            raise ValueError(f"Marginal {j} must be a non-empty list of column names.")
        unknown = [c for c in m if not isinstance(c, str) or c not in position]
        if unknown:
            raise ValueError(f"Marginal {j} names {len(unknown)} column(s) that are not columns.")
        pos = [position[c] for c in m]
        if len(set(pos)) != len(pos):
            raise ValueError(f"Marginal {j} names a column twice.")
        if pos != sorted(pos):
            raise ValueError(
                f"Marginal {j} must list its columns in the order of columns (its cell "
                "codes are row-major in that order)."
            )
        out.append(tuple(m))
    if len(set(out)) != len(out):
        raise ValueError("marginals must be distinct; a marginal appears twice.")
    return tuple(out)


def _check_column_masks(sensitive, columns, sizes):
    if sensitive is None:
        return None
    if isinstance(sensitive, (str, bytes, Mapping)) or not isinstance(sensitive, (list, tuple)):
        raise ValueError("sensitive must be None or a list of boolean masks, one per column.")
    if len(sensitive) != len(columns):
        raise ValueError(
            f"sensitive must hold one mask per column ({len(columns)}), got {len(sensitive)}."
        )
    out = []
    for name, mask, k in zip(columns, sensitive, sizes, strict=True):
        values = np.asarray(mask, dtype=object).ravel() if safe_ndim(mask) == 1 else None
        if values is None or values.size != k:
            raise ValueError(
                f"The sensitive mask of column {name!r} must have one entry per value ({k})."
            )
        if not all(isinstance(v, (bool, np.bool_)) for v in values.tolist()):
            raise TypeError(
                f"The sensitive mask of column {name!r} must hold booleans (true/false)."
            )
        arr = values.astype(bool)
        if not arr.any():
            raise ValueError(
                f"The sensitive mask of column {name!r} marks no value sensitive; mark at "
                "least one (a column with nothing sensitive would be released in the "
                "clear by utility-optimized oracles)."
            )
        out.append(arr)
    return tuple(out)


def _check_channels(channels, composite):
    if isinstance(channels, (str, bytes, Mapping)) or not isinstance(channels, (list, tuple)):
        raise ValueError("channels must be a list of channel specs, one per marginal.")
    if len(channels) != len(composite.marginals):
        raise ValueError(
            f"channels must hold one channel per marginal ({len(composite.marginals)}), "
            f"got {len(channels)}."
        )
    out = []
    for j, spec in enumerate(channels):
        channel = Channel.from_dict(spec) if isinstance(spec, Mapping) else spec
        if not isinstance(channel, Channel):
            raise TypeError(f"The channel of marginal {j} must be a channel or its spec dict.")
        if isinstance(channel, MarginalChannel) or not (
            channel.histogram_reports or channel.bit_vector_reports
        ):
            raise ValueError(
                f"The channel of marginal {j} ({type(channel).__name__}) is not a "
                "one-symbol or bit-vector frequency oracle."
            )
        if getattr(channel, "missing_reports", False) or channel.memoized_reports:
            raise ValueError(
                f"The channel of marginal {j} ({type(channel).__name__}) samples "
                "attributes or memoizes reports: a marginal's oracle reports one value "
                "once."
            )
        k = composite.cells[j]
        cats = np.asarray(channel.categories)
        if (
            cats.shape != (k,)
            or cats.dtype.kind not in "iu"
            or not np.array_equal(cats, np.arange(k))
        ):
            raise ValueError(
                f"The channel of marginal {j} must be over the codes 0..{k - 1} of its "
                f"{k} cells; it has {cats.size} categories."
            )
        expected = composite.cell_sensitive(j)
        if not np.array_equal(np.asarray(channel.sensitive_mask, dtype=bool), expected):
            raise ValueError(
                f"The sensitive set of marginal {j}'s channel is not the cells with a "
                "sensitive part (a cell is sensitive when any of its columns' values "
                "is): the spec is inconsistent."
            )
        out.append(channel)
    return tuple(out)


#: Up to this many marginals, each one's rows are found by a comparison
#: pass over the assignment; beyond, by one sort.
_MASK_GROUPS = 8


def _group_rows(assignment, n_groups):
    """The row indices of each marginal, in increasing order.

    Few marginals (HDG's three grids for two columns): one comparison pass
    per marginal, twice as fast as the sort at 10^6 rows. Many: one stable
    sort, by radix for 8- and 16-bit integers (linear time; four times
    faster than numpy's stable sort of int64 at 10^6 rows).
    """
    if n_groups <= _MASK_GROUPS:
        return [np.flatnonzero(assignment == j) for j in range(n_groups)]
    if n_groups <= np.iinfo(np.uint16).max:
        order = np.argsort(assignment.astype(np.uint16, copy=False), kind="stable")
    else:
        order = np.argsort(assignment, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(np.bincount(assignment, minlength=n_groups))])
    return [order[bounds[j] : bounds[j + 1]] for j in range(n_groups)]


def _count_subset_table(
    table, n_bits, sizes, counts, n_rows, lanes, in_lanes
):  # pragma: no cover - numba
    """Count and check subset-selection reports in one pass (compiled by numba).

    ``table`` is the int64 report table (any layout); row i's marginal g =
    ``table[i, 0]`` has ``n_bits[g]`` cells and reports ``sizes[g]`` of
    them. Adds the row's bits to ``counts[g]`` (int64, a column per bit of
    the report words) and the row to ``n_rows[g]``. Returns 1 at the first
    row whose marginal index is out of range, which sets a bit past its
    cells (in its words or past them) or does not hold exactly ``sizes[g]``
    bits; else 0.

    The bits are counted eight columns at a time: ``(x >> p) & 0x0101...01``
    holds bit p of each byte of a word in that byte, and added to a 64-bit
    word (``lanes[g, w, p]``) counts up to 255 rows in each byte without a
    carry into the next; every 255 rows of a marginal (``in_lanes``) the
    bytes are added to ``counts`` and cleared. The sum of a word's eight
    slices, times 0x0101...01, gives its number of bits in its top byte.
    Every row reads all its words, whatever its marginal's width (a branch
    on the marginal, random from row to row, would be mispredicted often):
    a word past the width must be 0 and adds nothing.
    """
    n_groups = n_bits.shape[0]
    n_words = table.shape[1] - 1
    ones = np.uint64(0x0101010101010101)
    byte = np.uint64(255)
    top = np.uint64(56)
    zero = np.uint64(0)
    # The bits of each marginal's words past its cells.
    outside = np.zeros((n_groups, n_words), dtype=np.uint64)
    for g in range(n_groups):
        for w in range(n_words):
            left = n_bits[g] - 64 * w
            if left <= 0:
                outside[g, w] = ~zero
            elif left < 64:
                outside[g, w] = ~((np.uint64(1) << np.uint64(left)) - np.uint64(1))
    for i in range(table.shape[0]):
        g = table[i, 0]
        if g < 0 or g >= n_groups:
            return 1
        stray = zero
        size = 0
        for w in range(n_words):
            x = np.uint64(table[i, 1 + w])
            stray |= x & outside[g, w]
            total = zero
            for p in range(8):
                part = (x >> np.uint64(p)) & ones
                lanes[g, w, p] += part
                total += part
            size += np.int64((total * ones) >> top)
        if stray != zero or size != sizes[g]:
            return 1
        n_rows[g] += 1
        in_lanes[g] += 1
        if in_lanes[g] == 255:
            _spill_lanes(lanes, counts, g, byte)
            in_lanes[g] = 0
    for g in range(n_groups):
        _spill_lanes(lanes, counts, g, byte)
    return 0


def _spill_lanes(lanes, counts, g, byte):  # pragma: no cover - numba
    """Add marginal g's byte lanes to its bit counts and clear them."""
    for w in range(lanes.shape[1]):
        for p in range(8):
            x = lanes[g, w, p]
            if x:
                for b in range(8):
                    counts[g, 64 * w + 8 * b + p] += np.int64((x >> np.uint64(8 * b)) & byte)
                lanes[g, w, p] = 0


if _HAVE_NUMBA:
    _spill_lanes = numba.njit(nogil=True, cache=True)(_spill_lanes)
    _count_subset_table = numba.njit(nogil=True, cache=True)(_count_subset_table)


def _sample_packed(channel, cells, rng):
    """Packed (little-endian) bit rows of a bit-vector channel."""
    try:
        return channel.sample(cells, rng, packed=True)
    except TypeError:  # a channel without a packed sampler
        bits = np.asarray(channel.sample(cells, rng))
        return np.packbits(bits.astype(np.uint8), axis=1, bitorder="little")


def _sample_words(channel, cells, rng, width):
    """Packed bit rows of a bit-vector channel as (n, width) little-endian words.

    A channel whose packed sampler takes ``out`` (subset selection) writes
    the rows' bytes straight into the words; the others' packed rows are
    copied in.
    """
    if isinstance(channel, SubsetSelectionChannel):
        words = report_array((len(cells), width), np.dtype("<i8"), zeros=True)
        n_bytes = -(-channel.n_categories // 8)
        channel.sample(cells, rng, packed=True, out=words.view(np.uint8)[:, :n_bytes])
        return words.astype(np.int64, copy=False)
    return _pack_words(_sample_packed(channel, cells, rng), width)


def _pack_words(packed, width):
    """Bytes of shape (n, b) as (n, width) little-endian 64-bit words."""
    words = np.zeros((packed.shape[0], width), dtype="<i8")
    words.view(np.uint8)[:, : packed.shape[1]] = packed
    # int64 is "<i8" on little-endian machines: no second copy there.
    return words.astype(np.int64, copy=False)


def all_subsets(columns, size):
    """Every set of ``size`` columns, in the order of ``columns``."""
    return [tuple(c) for c in itertools.combinations(columns, size)]
