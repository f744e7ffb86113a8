"""Compact store of bit-vector reports for the exact likelihood (EM).

The likelihood of RAPPOR-type reports has no fixed-size sufficient statistic:
each protected report enters through ``D_i = A + sum_{j in y_i} b_j``, so EM
must see every report's set (sensitive) bits at every step. This module keeps
them as compactly as their density allows and evaluates the two products of
an EM step block by block:

* a sparse block stores CSR row pointers (int32, local to the block) and
  column indices (uint16 when the columns fit, else uint32): 2 bytes per set
  bit for k <= 65536. Unsigned, because compiled code indexing with a
  signed integer checks for negative (wrap-around) indices at every access:
  the products take a quarter less time with unsigned ones. The store never
  holds the 8-byte data array a scipy matrix would: the compiled products
  need none, and the numpy ones reuse one shared buffer of unit data.
* a packed block stores the bits themselves, 8 per byte (``np.packbits``):
  s / 8 bytes per report whatever the density. Its products go through
  per-byte lookup tables: with ``T[j, v] = sum_t b[8 j + t] bit_t(v)``, a
  report's sum is ``sum_j T[j, byte_j]`` (one gather per byte) and the
  adjoint accumulates ``1 / D_i`` per (byte position, byte value) with one
  ``bincount`` before a (B, 256) @ (256, 8) product.

Dense reports (density >= ``_PACKED_DENSITY``, e.g. OUE at eps <= 2) are
packed: about as fast as sparse products there, and 4-26 times smaller than
2-byte indices. Blocks are bounded (rows and set bits), so the temporaries of
a product do not grow with n, and the blocks of one EM step are independent:
threads evaluate them concurrently (``n_jobs``), and their terms are added in
block order, so the result does not depend on the number of threads.

Two things make a step cheap whatever n:

* rows that repeat are kept once, with their multiplicity (the store's
  *distinct rows*, built once at the first product): with few sensitive
  columns, or few set bits, most reports share a handful of patterns (uRAP
  with 10 sensitive values has at most 1,024 of them), and a step then costs
  in proportion to the patterns, not to the reports. The patterns are kept
  (in memory, also for a store kept in files) when they are at most half
  of the rows and take at most 64 MB; else the products run on every row.
* when numba is installed, each block's two products are one compiled loop
  (look up, add, divide, scatter, with the GIL released so that threads run
  blocks on all cores; one logarithm per 16 rows), several times faster
  than the numpy expression of the same sums, which is used otherwise.

A store can also keep its full blocks in files (:meth:`BitRows.spill`): each
product reads a block back, uses it and lets it go, so the memory of a store
fitted chunk by chunk stays at about one block per thread plus the partial
last block, whatever the number of reports. A block's file holds its raw
arrays (the store knows their dtypes and sizes), read whole, not
memory-mapped, so the pages they pass through are the operating system's
cache, not the process's memory. A block's file is removed with the last
store that uses it, the directory with its last block.

Reports are private data, so the directory is created 0700 and the block
files 0600 (whatever the umask), and a directory left behind by a killed
process is removed by the next spill on the same machine: its name holds the
owner's host and process id, and a spill removes the directories of this
user and host whose process no longer exists (never one of a live process).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike

from ..utils._bits import pack_rows, packed_to_csr, unpack_rows
from ..utils._numba import use_compiled
from ..utils._threads import imap_threads, map_threads, n_threads
from ._bit_rows_kernels import (
    _index_dtype,
    _packed_loop,
    _packed_row_sizes,
    _packed_row_sums,
    _packed_select,
    _sparse_loop,
    _sparse_row_sums,
    _sparse_select,
)
from ._spill import _SpillDirectory, _SpilledBlock

try:  # optional: compiled products (several times faster per EM step)
    import numba
except ImportError:  # pragma: no cover - numba is optional
    numba = None  # type: ignore[assignment]

__all__ = ["BitRows"]

# A block holds at most this many rows / set bits: it bounds the unit-data
# buffer of the sparse products and every per-block temporary.
_BLOCK_ROWS = 1 << 16
_BLOCK_NNZ = 1 << 22
# Pack a block when at least this fraction of its cells is set. The packed
# products cost about one gather and one bincount update per byte, sparse ones
# about two updates per set bit: they break even near a density of 0.2.
_PACKED_DENSITY = 0.2
# Bytes gathered per sub-step of the packed products (bounds the index array).
_GATHER_BYTES = 1 << 20

# _BYTE_BITS[v, t] = bit t of byte v (little-endian, as np.packbits(bitorder="little")).
_BYTE_BITS = ((np.arange(256)[:, None] >> np.arange(8)[None, :]) & 1).astype(float)
_POPCOUNT = _BYTE_BITS.sum(axis=1).astype(np.int64)
_POPCOUNT_BYTES = _POPCOUNT.astype(np.uint8)  # the compiled loop's (smaller) table

# Distinct rows (see the module docstring) are looked for when a row takes at
# most this many bytes (512 columns), and kept when they are at most this
# fraction of the rows and take at most this many bytes.
_DISTINCT_MAX_ROW_BYTES = 64
_DISTINCT_MAX_FRACTION = 0.5
_DISTINCT_MAX_BYTES = 1 << 26

# "numba" (compiled loops) or "numpy"; tests compare the two.
_KERNEL = "numba" if numba is not None else "numpy"


_NO_WEIGHTS = np.zeros(0)
# A store's D_i are held for the default estimate's segment's two ends (16
# bytes a distinct row; _bit_rows_segment.py): beyond this many rows the
# segment is evaluated through em_gradient.
_SEGMENT_MAX_ROWS = 1 << 26
_NO_OUTPUT = np.zeros(0)  # em_terms records no row sums


class _SparseBlock:
    """CSR rows without a data array (the data are all ones)."""

    __slots__ = ("indptr", "indices", "n_cols")

    @classmethod
    def from_arrays(cls, arrays, n_cols):
        """The block of the arrays ``arrays()`` gave (read back from a file)."""
        indptr, indices = arrays
        return cls(indptr, indices, n_cols, copy=False)

    def __init__(self, indptr, indices, n_cols, copy=True):
        # Copies: a block never shares memory with the caller's arrays (a
        # slice would keep the whole joined tail alive). Blocks read back
        # from a file own their arrays already.
        self.indptr = indptr.astype(np.int32, copy=copy)
        index_dtype = _index_dtype(n_cols)
        self.indices = indices.astype(index_dtype, copy=copy)
        self.n_cols = n_cols

    @property
    def nnz(self):
        return int(self.indptr[-1])

    def arrays(self):
        return self.indptr, self.indices

    @property
    def n_rows(self):
        return self.indptr.size - 1

    @property
    def nbytes(self):
        return self.indptr.nbytes + self.indices.nbytes

    def row_sizes(self, compiled=True):
        return np.diff(self.indptr)

    def em_terms(self, A, b, ones, weights=None, out=None, compiled=True):
        if compiled and _KERNEL == "numba":
            t = np.zeros(self.n_cols)
            sum_inv, sum_log = _sparse_loop(
                self.indptr,
                self.indices,
                b,
                float(A),
                _NO_WEIGHTS if weights is None else weights,
                t,
                _NO_OUTPUT if out is None else out,
            )
            return sum_inv, sum_log, t
        nnz = self.nnz
        # scipy wants int32/int64 indices: the uint16 ones are widened per
        # block, a transient of 4 bytes per set bit of this block only.
        M = sp.csr_array(
            (ones[:nnz], self.indices.astype(np.int32, copy=False), self.indptr),
            shape=(self.n_rows, self.n_cols),
            copy=False,
        )
        D = A + M @ b
        if out is not None:
            out[:] = D
        inv = 1.0 / D
        log_d = np.log(D)
        if weights is not None:
            inv *= weights
            log_d *= weights
        return float(inv.sum()), float(log_d.sum()), M.T @ inv

    def row_sums(self, A, b, shared, compiled=True):
        if compiled and _KERNEL == "numba":
            out = np.empty(self.n_rows)
            _sparse_row_sums(self.indptr, self.indices, b, float(A), out)
            return out
        M = sp.csr_array(
            (shared[: self.nnz], self.indices.astype(np.int32, copy=False), self.indptr),
            shape=(self.n_rows, self.n_cols),
            copy=False,
        )
        return A + M @ b

    def restrict(self, new_index, columns, scratch=None, compiled=True):
        """The block on ``columns``; ``new_index`` maps old to new columns (or -1).

        ``scratch``: a ``threading.local`` for the compiled selection's buffer.
        """
        if compiled and _KERNEL == "numba" and scratch is not None:
            # Written to a scratch buffer of the thread (reused from block to
            # block: a new one per block would cost as many page faults as
            # the kernel's work), then copied at its size.
            dtype = _index_dtype(columns.size)
            buffer = getattr(scratch, "buffer", None)
            if buffer is None or buffer.dtype != dtype or buffer.size < self.indices.size:
                buffer = scratch.buffer = np.empty(self.indices.size, dtype=dtype)
            indptr = np.empty(self.indptr.size, dtype=np.int32)
            # A signed map (-1: dropped) of 2 bytes a column when it fits:
            # the lookup table stays small in the first-level cache.
            small = self.n_cols <= np.iinfo(np.int16).max + 1
            nnz = _sparse_select(
                self.indptr,
                self.indices,
                new_index.astype(np.int16 if small else np.int32),
                indptr,
                buffer,
            )
            return _SparseBlock(indptr, buffer[:nnz], columns.size)
        index = new_index.take(self.indices)
        kept = index >= 0
        # Kept bits per row by reduceat over the non-empty rows (an empty
        # row's "segment" would be the next row's first bit). np.compress
        # and reduceat are several times faster here than a boolean index
        # and a cumsum over every bit.
        sizes = np.diff(self.indptr)
        nonempty = sizes > 0
        per_row = np.zeros(sizes.size, dtype=np.int64)
        if kept.size:
            per_row[nonempty] = np.add.reduceat(kept, self.indptr[:-1][nonempty], dtype=np.int64)
        indptr = np.zeros(sizes.size + 1, dtype=np.int64)
        np.cumsum(per_row, out=indptr[1:])
        return _SparseBlock(indptr, np.compress(kept, index), columns.size)


class _PackedBlock:
    """Rows of bits packed 8 per byte (little-endian within a byte)."""

    __slots__ = ("packed", "n_cols")

    @classmethod
    def from_arrays(cls, arrays, n_cols):
        """The block of the arrays ``arrays()`` gave (read back from a file)."""
        (packed,) = arrays
        return cls(packed, n_cols)

    def __init__(self, packed, n_cols):
        self.packed = packed
        self.n_cols = n_cols

    @property
    def n_rows(self):
        return self.packed.shape[0]

    @property
    def nbytes(self):
        return self.packed.nbytes

    nnz = 0  # packed products need no unit data

    def arrays(self):
        return (self.packed,)

    def row_sizes(self, compiled=True):
        if compiled and _KERNEL == "numba":
            out = np.empty(self.n_rows, dtype=np.int64)
            _packed_row_sizes(self.packed, _POPCOUNT_BYTES, out)
            return out
        return _POPCOUNT[self.packed].sum(axis=1)

    def em_terms(self, A, b, tables, weights=None, out=None, compiled=True):
        table, offsets = tables
        n_bytes = self.packed.shape[1]
        if compiled and _KERNEL == "numba":
            acc = np.zeros((n_bytes, 256))
            sum_inv, sum_log = _packed_loop(
                self.packed,
                table,
                float(A),
                _NO_WEIGHTS if weights is None else weights,
                acc,
                _NO_OUTPUT if out is None else out,
            )
            t = (acc @ _BYTE_BITS).ravel()[: self.n_cols]
            return sum_inv, sum_log, t
        step = max(1, _GATHER_BYTES // n_bytes)
        flat = table.ravel()
        sum_inv = sum_log = 0.0
        weight = np.zeros(flat.size)
        for lo in range(0, self.n_rows, step):
            # Flat index of (byte position j, byte value v) = 256 j + v.
            index = self.packed[lo : lo + step] + offsets
            D = A + flat.take(index).sum(axis=1)
            if out is not None:
                out[lo : lo + step] = D
            inv = 1.0 / D
            log_d = np.log(D)
            if weights is not None:
                inv *= weights[lo : lo + step]
                log_d *= weights[lo : lo + step]
            sum_inv += float(inv.sum())
            sum_log += float(log_d.sum())
            weight += np.bincount(
                index.ravel(), weights=np.repeat(inv, n_bytes), minlength=flat.size
            )
        t = (weight.reshape(n_bytes, 256) @ _BYTE_BITS).ravel()[: self.n_cols]
        return sum_inv, sum_log, t

    def row_sums(self, A, b, tables, compiled=True):
        table, offsets = tables
        out = np.empty(self.n_rows)
        if compiled and _KERNEL == "numba":
            _packed_row_sums(self.packed, table, float(A), out)
            return out
        flat = table.ravel()
        step = max(1, _GATHER_BYTES // max(1, self.packed.shape[1]))
        for lo in range(0, self.n_rows, step):
            out[lo : lo + step] = A + flat.take(self.packed[lo : lo + step] + offsets).sum(axis=1)
        return out

    def restrict(self, new_index, columns, scratch=None, compiled=True):
        """The block on ``columns``; ``new_index`` maps old to new columns (or -1)."""
        if compiled and _KERNEL == "numba":
            packed = np.zeros((self.n_rows, -(-columns.size // 8)), dtype=np.uint8)
            _packed_select(np.ascontiguousarray(self.packed), columns.astype(np.int64), packed)
            return _PackedBlock(packed, columns.size)
        step = max(1, _GATHER_BYTES // max(1, self.packed.shape[1]))
        parts = [
            np.packbits(
                np.unpackbits(
                    self.packed[lo : lo + step], axis=1, count=self.n_cols, bitorder="little"
                )[:, columns],
                axis=1,
                bitorder="little",
            )
            for lo in range(0, self.n_rows, step)
        ]
        # packbits of the column selection is Fortran-ordered: every product
        # would copy it back to rows (a quarter of a step), so copy once here.
        packed = (
            np.ascontiguousarray(np.concatenate(parts))
            if parts
            else np.zeros((0, -(-columns.size // 8)), dtype=np.uint8)
        )
        return _PackedBlock(packed, columns.size)


#: A block of a store: in memory (sparse or packed) or in a file.
_Block = _SparseBlock | _PackedBlock | _SpilledBlock
#: Rows being appended: packed bytes, or CSR (indptr, indices).
_Piece = np.ndarray | tuple[np.ndarray, np.ndarray]


class _RowSumsRecord:
    """The row sums ``D`` of a store's EM passes while it records them.

    Keeps the first pass's and the latest pass's ``(A, b, D)``: an EM run's
    first evaluation is at its starting point and its last at the point it
    returns (see :meth:`BitRows.recording_row_sums`).
    """

    __slots__ = ("first", "last")

    def __init__(self):
        self.first = self.last = None

    @staticmethod
    def keeps(store):
        """Whether passes over ``store`` (a store of distinct rows) are recorded."""
        return store.directory is None and store.n_rows <= _SEGMENT_MAX_ROWS

    def keep(self, A, b, D):
        D.flags.writeable = False  # handed out by row_sums: read only
        entry = (float(A), b.copy(), D)
        if self.first is None:
            self.first = entry
        else:
            self.last = entry

    def find(self, A, b):
        """The recorded ``D`` of exactly these ``(A, b)``, or None."""
        for entry in (self.last, self.first):
            if entry is not None and entry[0] == float(A) and np.array_equal(entry[1], b):
                return entry[2]
        return None


# The records of the stores recording in this thread, by id(store): per
# thread, so that two fits sharing one store (threads of a search) neither
# read nor end each other's record, and never in the store or its pickle.
_RECORDS = threading.local()


def _records():
    records = getattr(_RECORDS, "by_store", None)
    if records is None:
        records = _RECORDS.by_store = {}
    return records


class BitRows:
    """Set bits of protected bit-vector reports, in compact blocks.

    The per-report part of the sufficient statistics of RAPPOR-type channels
    (see the module docstring). Rows are cut into blocks at fixed multiples of
    ``block_rows`` counted from the first row, whatever the chunks they were
    appended in, and all blocks of a store have one layout, so chunked and
    one-shot statistics give bit-identical products. Appending is O(chunk);
    adding two stores shares the full blocks of the first. A spilled store
    (:meth:`spill`) keeps its full blocks in files, and so does every store
    made from it by adding or restricting.

    Parameters
    ----------
    n_cols : int
        Number of bit columns (the sensitive categories).
    density : float
        Expected fraction of set cells, which chooses the layout (packed bits
        when it is at least 0.2, else 2- or 4-byte column indices) and the
        block size.

    Attributes
    ----------
    n_rows : int
        Rows kept.
    nbytes : int
        Bytes of the kept rows, in memory or in files.
    memory_nbytes : int
        Bytes of the kept rows held in memory.
    directory : str or None
        Where a spilled store keeps its blocks.

    Examples
    --------
    The store of a uRAP channel's statistics, for EM:

    >>> import numpy as np
    >>> from sklearn_uldp import UtilityOptimizedRAPPOR
    >>> X = np.random.default_rng(0).integers(0, 50, size=(10_000, 1))
    >>> mech = UtilityOptimizedRAPPOR(1.0, sensitive=list(range(10)),
    ...                               categories=list(range(50)), random_state=0)
    >>> reports = mech.fit_transform(X)
    >>> codes = mech.channel_.encode_reports(reports)
    >>> store = mech.channel_.statistics(codes, keep_reports=True).extra
    >>> store.n_rows <= 10_000, store.n_cols, store.packed
    (True, 10, True)
    >>> sum_inv, sum_log, t = store.em_terms(1.0, np.full(10, 0.5))
    >>> t.shape
    (10,)
    """

    def __init__(self, n_cols: int, density: float) -> None:
        self.n_cols = int(n_cols)
        self.density = float(density)
        self.packed = self.density >= _PACKED_DENSITY
        rows: float  # an int for packed blocks, a float for sparse ones
        if self.packed:
            rows = _BLOCK_NNZ // max(1, -(-self.n_cols // 8))
        else:
            rows = _BLOCK_NNZ // max(1.0, self.density * self.n_cols)
        self.block_rows = int(min(_BLOCK_ROWS, max(1, rows)))
        self._blocks: list[_Block] = []  # full blocks of block_rows rows
        # pieces (packed arrays or (indptr, indices)) of the rest
        self._tail: list[_Piece] = []
        self._tail_rows = 0
        # the tail as a block, built for products
        self._tail_block: _SparseBlock | _PackedBlock | None = None
        # _SpillDirectory of a store kept in files
        self._spill: _SpillDirectory | None = None
        # Multiplicity of each row (a store of distinct rows), else None.
        self._weights: np.ndarray | None = None
        # The store of this one's distinct rows with their multiplicities:
        # None before the first product, this store when not worth it.
        self._distinct: BitRows | None = None

    # ------------------------------------------------------------- building
    def append_dense(self, bits: np.ndarray) -> None:
        """Append rows given as a dense (m, n_cols) 0/1 uint8 array."""
        if bits.shape[0] == 0:
            return
        if self.packed:
            self._append(pack_rows(bits))
            return
        step = max(1, _BLOCK_NNZ // max(1, self.n_cols))
        for lo in range(0, bits.shape[0], step):  # bounds the index temporaries
            block = bits[lo : lo + step]
            rows, cols = np.divmod(np.flatnonzero(block.view(bool)), self.n_cols)
            indptr = np.zeros(block.shape[0] + 1, dtype=np.int64)
            np.cumsum(np.bincount(rows, minlength=block.shape[0]), out=indptr[1:])
            self._append((indptr, cols))

    def append_sparse(self, indptr: np.ndarray, indices: np.ndarray) -> None:
        """Append rows given in CSR form (``indptr`` starting at 0)."""
        m = indptr.size - 1
        if m == 0:
            return
        if not self.packed:
            self._append((np.asarray(indptr, dtype=np.int64), indices))
            return
        step = max(1, _BLOCK_NNZ // max(1, self.n_cols))
        for lo in range(0, m, step):
            hi = min(m, lo + step)
            bits = np.zeros((hi - lo, self.n_cols), dtype=np.uint8)
            rows = np.repeat(np.arange(hi - lo), np.diff(indptr[lo : hi + 1]))
            bits[rows, indices[indptr[lo] : indptr[hi]]] = 1
            self._append(np.packbits(bits, axis=1, bitorder="little"))

    def append_packed(self, rows: np.ndarray, columns: ArrayLike | None = None) -> None:
        """Append packed rows (the layout of
        :class:`~sklearn_uldp.mechanisms.PackedReports`).

        Rows of ``n_cols`` bits, or of more bits of which ``columns``
        (increasing) are kept, in that order (e.g. the sensitive categories
        of uRAP reports). Rows of ``n_cols`` bits going to packed blocks are
        kept as read-only views of ``rows``, not copied: packed reports are
        the store's own layout, and a copy would double the memory of EM on
        them (1.25 GB for OUE at k = 10,000 and 10^6 reports). The caller
        must not modify them afterwards; every other case copies.
        """
        m = rows.shape[0]
        if m == 0:
            return
        if columns is None and self.packed:
            # In one piece: the full blocks are cut from it as views (pieces
            # appended apart would be joined, i.e. copied, into blocks).
            view = np.ascontiguousarray(rows).view()
            view.flags.writeable = False  # a view of the caller's reports
            self._append(view)
            return
        if columns is not None:
            columns = np.asarray(columns, dtype=np.int64)
        step = max(1, _BLOCK_NNZ // max(1, 8 * rows.shape[1]))  # bounds the temporaries
        for lo in range(0, m, step):
            piece = rows[lo : lo + step]
            if columns is not None:
                piece = _select_packed(piece, columns)
            if self.packed:
                self._append(piece)
            else:
                indptr, indices = packed_to_csr(piece, self.n_cols)
                self._append((indptr, indices))

    def _append(self, piece):
        self._tail_block = None
        self._distinct = None
        self._tail.append(piece)
        self._tail_rows += _piece_rows(piece)
        if self._tail_rows < self.block_rows:
            return
        whole = self._joined_tail()
        n_full = self._tail_rows // self.block_rows
        pieces = [
            _cut(whole, i * self.block_rows, (i + 1) * self.block_rows) for i in range(n_full)
        ]
        # Blocks are made on all cores (copies to 2-byte indices or packed
        # bytes, and the page faults of their new memory: most of the time
        # to the statistics of a large upload); kept in order.
        blocks = _map_blocks(self._make_block, pieces, None if n_full > 1 else 1)
        self._blocks.extend(self._kept(block) for block in blocks)
        rest = _cut(whole, n_full * self.block_rows, self._tail_rows)
        self._tail_rows -= n_full * self.block_rows
        self._tail = [rest] if self._tail_rows else []

    def _joined_tail(self):
        if len(self._tail) == 1:
            return self._tail[0]
        if self.packed:
            return np.concatenate(self._tail)
        offsets = np.cumsum([0] + [int(ip[-1]) for ip, _ in self._tail[:-1]])
        indptr = np.concatenate(
            [self._tail[0][0][:1]]
            + [ip[1:] + off for (ip, _), off in zip(self._tail, offsets, strict=True)]
        )
        return indptr, np.concatenate([ix for _, ix in self._tail])

    def _make_block(self, piece):
        if self.packed:
            return _PackedBlock(np.ascontiguousarray(piece), self.n_cols)
        return _SparseBlock(piece[0], piece[1], self.n_cols)

    def _kept(self, block):
        """A full block as this store keeps it: in memory, or in a file."""
        if self._spill is None or isinstance(block, _SpilledBlock):
            return block
        return _SpilledBlock(block, self._spill)

    def _all_blocks(self):
        if not self._tail:
            return self._blocks
        if self._tail_block is None:  # the partial last block, built once
            self._tail = [self._joined_tail()]
            self._tail_block = self._make_block(self._tail[0])
        return self._blocks + [self._tail_block]

    def __add__(self, other: BitRows) -> BitRows:
        if (other.n_cols, other.packed, other.block_rows) != (
            self.n_cols,
            self.packed,
            self.block_rows,
        ):
            raise ValueError("Cannot add bit rows of different layouts.")
        total = BitRows(self.n_cols, self.density)
        total._spill = self._spill
        total._blocks = list(self._blocks)
        total._tail, total._tail_rows = list(self._tail), self._tail_rows
        for piece in [_block_piece(b) for b in other._blocks] + other._tail:
            total._append(piece)
        return total

    def spill(self, directory: str | os.PathLike[str] | None = None) -> BitRows:
        """The same rows, with the full blocks kept in files.

        For EM on more reports than fit in memory, or to keep the memory of
        chunked fitting from growing with the number of reports: the store
        then holds in memory only its partial last block (fewer than
        ``block_rows`` rows), and every product reads the blocks back one
        at a time per thread. Rows appended, or stores added, to a spilled
        store are spilled too. Products are bit-identical to those of the
        store in memory.

        Parameters
        ----------
        directory : path-like or None, default=None
            Where to create the store's private directory: ``None`` for the
            system's temporary directory (``TMPDIR``; choose a disk rather
            than a RAM-backed ``tmpfs`` for the memory to be saved). The
            directory (mode 0700, files 0600) is removed when no store uses
            it any more; one left by a killed process is removed by the next
            spill into the same parent on the same machine.

        Returns
        -------
        BitRows
            A new store; this one is unchanged (blocks of it already in
            files are shared, not copied: files are never modified).

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_uldp.mechanisms import BitRows
        >>> bits = (np.random.default_rng(0).random((200_000, 40)) < 0.3).astype(np.uint8)
        >>> store = BitRows(40, density=0.3)
        >>> store.append_dense(bits)
        >>> on_disk = store.spill()
        >>> on_disk.n_rows, on_disk.memory_nbytes < store.memory_nbytes / 3
        (200000, True)
        >>> b = np.linspace(0.1, 1.0, 40)
        >>> [float(x) == float(y) for x, y in zip(store.em_terms(1.0, b)[:2],
        ...                                      on_disk.em_terms(1.0, b)[:2])]
        [True, True]
        """
        spilled = BitRows(self.n_cols, self.density)
        spilled.packed, spilled.block_rows = self.packed, self.block_rows
        spilled._spill = _SpillDirectory(directory)
        spilled._blocks = [spilled._kept(block) for block in self._blocks]
        spilled._tail, spilled._tail_rows = list(self._tail), self._tail_rows
        return spilled

    # ------------------------------------------------------------- querying
    @property
    def n_rows(self) -> int:
        return len(self._blocks) * self.block_rows + self._tail_rows

    @property
    def nbytes(self) -> int:
        """Bytes of the kept rows (what the EM likelihood keeps per report),
        wherever they are kept."""
        return sum(block.nbytes for block in self._all_blocks())

    @property
    def memory_nbytes(self) -> int:
        """Bytes of the kept rows held in memory (all of them unless spilled)."""
        return sum(
            block.nbytes for block in self._all_blocks() if not isinstance(block, _SpilledBlock)
        )

    @property
    def directory(self) -> str | None:
        """The directory of a spilled store's blocks (None in memory)."""
        return None if self._spill is None else self._spill.path

    def row_sizes(self) -> np.ndarray:
        """Number of set bits of every row, in order."""
        blocks = self._all_blocks()
        if not blocks:
            return np.zeros(0, dtype=np.int64)
        compiled = self._compiled()
        return np.concatenate([block.row_sizes(compiled) for block in blocks])

    def row_size_counts(self) -> np.ndarray:
        """How many rows have each number of set bits (index = set bits)."""
        return np.bincount(self.row_sizes(), minlength=self.n_cols + 1)

    def restrict(self, columns: ArrayLike, n_jobs: int | None = None) -> BitRows:
        """The store on a subset of its columns, for products on that subset.

        EM on a working set of categories (the others at probability zero)
        only needs the bits of those columns: a store of the set bits of
        ``columns`` makes each product cost in proportion to them. Blocks
        keep their rows, so the products are those of the full store with
        the other columns' ``b`` set to zero.

        Parameters
        ----------
        columns : array-like of int
            Columns to keep, in their new order.
        n_jobs : int or None, default=None
            Threads restricting blocks concurrently (``None``: all cores
            unless a ``joblib.parallel_config`` context sets ``n_jobs``).

        Returns
        -------
        BitRows
        """
        columns = np.asarray(columns, dtype=np.intp)
        if self._distinct is not None and self._distinct is not self:
            # Its distinct rows give the same products for fewer rows.
            return self._distinct.restrict(columns, n_jobs=n_jobs)
        new_index = np.full(self.n_cols, -1, dtype=np.int32)
        new_index[columns] = np.arange(columns.size, dtype=np.int32)
        scratch = threading.local()  # one buffer per thread, for this call only
        compiled = self._compiled()
        blocks = _map_blocks(
            lambda block: block.restrict(new_index, columns, scratch, compiled),
            self._all_blocks(),
            n_jobs,
        )
        restricted = BitRows(columns.size, self.density)
        restricted.packed, restricted.block_rows = self.packed, self.block_rows
        restricted._spill = self._spill
        restricted._weights = self._weights
        restricted._blocks = blocks[: len(self._blocks)]
        if self._tail:
            restricted._tail_block = blocks[-1]
            restricted._tail = [_block_piece(blocks[-1])]
            restricted._tail_rows = self._tail_rows
        return restricted

    def em_terms(
        self, A: float, b: ArrayLike, n_jobs: int | None = None
    ) -> tuple[float, float, np.ndarray]:
        """``sum_i 1/D_i``, ``sum_i log D_i`` and ``Y^T (1/D)`` for ``D = A + Y b``.

        Parameters
        ----------
        A : float
        b : ndarray of shape (n_cols,)
        n_jobs : int or None, default=None
            Threads evaluating blocks concurrently (the compiled products,
            scipy's sparse products and numpy's gathers release the GIL);
            ``None`` means all cores unless a ``joblib.parallel_config``
            context sets ``n_jobs``. The blocks' terms are added in block
            order whatever the threads, so the result is bit-identical.

        Returns
        -------
        sum_inv, sum_log : float
        t : ndarray of shape (n_cols,)
        """
        b = np.asarray(b, dtype=float)
        if not self.n_cols:  # e.g. restricted to no column: D_i = A for all
            n = self.n_rows if self._weights is None else float(self._weights.sum())
            return n / A, n * float(np.log(A)), np.zeros(0)
        store = self.distinct_rows()
        blocks = store._all_blocks()
        compiled = store._compiled()
        shared = _shared_tables(store, blocks, b, compiled)
        weights = store._weights
        rows = store.block_rows
        record = self._row_sums_record
        # Each block writes its rows' D to its own slice (threads never share one).
        D = np.empty(store.n_rows) if record is not None and record.keeps(store) else None
        items = [
            (
                block,
                None if weights is None else weights[i * rows : (i + 1) * rows],
                None if D is None else D[i * rows : (i + 1) * rows],
            )
            for i, block in enumerate(blocks)
        ]
        n_jobs = _serial_if_small(store, n_jobs)
        terms = _imap_blocks(
            lambda item: item[0].em_terms(A, b, shared, item[1], item[2], compiled), items, n_jobs
        )
        result = add_em_terms(terms, self.n_cols)
        if record is not None and D is not None:
            record.keep(A, b, D)
        return result

    @contextlib.contextmanager
    def recording_row_sums(self) -> Iterator[None]:
        """Keep the row sums ``D`` of the :meth:`em_terms` calls made within.

        The first call's and the latest call's ``D`` (one float per
        distinct row each) are kept, and :meth:`row_sums` of the same
        ``(A, b)`` returns them without reading the reports: an EM run
        starts at its initial point and ends at the point it returns, so
        the default estimate's check of the likelihood between them needs
        no pass of its own (see :func:`segment_log_likelihood`). While
        recording, a pass holds up to three such arrays (the two kept and
        its own: 24 bytes a distinct row, against s / 8 bytes a row for the
        packed reports themselves). Stores kept in files, or with more than
        ``2**26`` distinct rows, record nothing (memory in proportion to
        the rows would undo what the files save). The arrays
        :meth:`row_sums` returns from the record are the kept ones, read
        only. The record belongs to the calling thread (two fits sharing a
        store in threads keep their own) and is never pickled.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_uldp.mechanisms import BitRows
        >>> store = BitRows(n_cols=3, density=0.5)
        >>> store.append_dense(np.array([[1, 0, 1], [0, 1, 0]], dtype=np.uint8))
        >>> b = np.array([0.5, 0.25, 0.125])
        >>> with store.recording_row_sums():
        ...     _ = store.em_terms(1.0, b)
        ...     D, _ = store.row_sums(1.0, b)  # the recorded sums
        >>> D.tolist()
        [1.625, 1.25]
        """
        records = _records()
        previous = records.get(id(self))
        records[id(self)] = _RowSumsRecord()
        try:
            yield
        finally:
            if previous is None:
                del records[id(self)]
            else:
                records[id(self)] = previous

    def row_sums(
        self, A: float, b: ArrayLike, n_jobs: int | None = None
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """``D = A + Y b`` for every distinct row, and the rows' multiplicities.

        The per-report half of :meth:`em_terms` (no adjoint): what the
        log-likelihood along a segment needs (see
        :func:`segment_log_likelihood`).

        Parameters
        ----------
        A : float
        b : ndarray of shape (n_cols,)
        n_jobs : int or None, default=None
            Threads evaluating blocks concurrently, as in :meth:`em_terms`.

        Returns
        -------
        D : ndarray of shape (n_distinct,)
            One value per row of :meth:`distinct_rows`, in order.
        weights : ndarray of shape (n_distinct,) or None
            Their multiplicities (None: every row once).
        """
        b = np.asarray(b, dtype=float)
        store = self.distinct_rows()
        if not self.n_cols:
            return np.full(store.n_rows, float(A)), store._weights
        record = self._row_sums_record
        recorded = None if record is None else record.find(A, b)
        if recorded is not None:
            return recorded, store._weights
        if b.min() == b.max():
            # One value for every column (e.g. the uniform distribution of a
            # symmetric channel): D_i = A + b_0 |y_i|, from the row sizes.
            return float(A) + float(b[0]) * store.row_sizes(), store._weights
        blocks = store._all_blocks()
        compiled = store._compiled()
        shared = _shared_tables(store, blocks, b, compiled)
        n_jobs = _serial_if_small(store, n_jobs)
        parts = list(
            _imap_blocks(lambda block: block.row_sums(A, b, shared, compiled), blocks, n_jobs)
        )
        D = np.concatenate(parts) if parts else np.zeros(0)
        return D, store._weights

    @property
    def _row_sums_record(self) -> _RowSumsRecord | None:
        """This thread's record of this store's row sums (recording_row_sums), or None."""
        return _records().get(id(self))

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_distinct"] = None  # rebuilt at the first product
        return state

    def _compiled(self) -> bool:
        """Whether this store's products run the compiled loops: numba is
        installed and the store holds at least ``COMPILE_MIN_WORK`` words of
        8 bytes of packed rows (2 MB), below which the numpy products of an
        EM fit cost less than compiling the loops (see ``utils._numba``).
        The choice depends on the store's size alone, so its products are
        the same whatever was compiled before."""
        return _KERNEL == "numba" and use_compiled(self.n_rows * -(-self.n_cols // 64))

    def distinct_rows(self) -> BitRows:
        """The store of the distinct rows, each with its multiplicity.

        Built at the first call (one pass over the blocks) and kept; EM's
        products run on it. When distinct rows are more than half of the
        rows (e.g. OUE with many categories, where nearly every report is
        unique), or a row takes more than 64 bytes, or the distinct rows
        would take more than 64 MB, this store itself is returned. The
        choice depends on the rows only, not on how they were appended or
        kept (memory or files), so products stay bit-identical across those.

        Returns
        -------
        BitRows
            A store in memory whose rows are distinct, with multiplicities,
            or this store.
        """
        if self._distinct is None:
            self._distinct = _distinct_rows(self) or self
        return self._distinct


def _map_blocks(function, blocks, n_jobs):
    """``[function(block) for block in blocks]``, on threads when asked.

    scipy's sparse products and numpy's gathers release the GIL, so blocks
    evaluate concurrently; the results keep the blocks' order.
    """
    return map_threads(function, blocks, n_jobs)


def _imap_blocks(function, blocks, n_jobs):
    """``function(block)`` for each block, in order, as the results come.

    Consumed as they come, per-block results (e.g. EM terms of length k) are
    not all held at once, whatever the number of blocks.
    """
    return imap_threads(function, blocks, n_jobs)


#: Threads for ``n_jobs`` (see :func:`~sklearn_uldp.utils._threads.n_threads`).
_n_threads = n_threads

# A product over fewer bytes of kept rows runs on one thread by default:
# about a millisecond of work, of the order of starting and joining threads
# (see the "parallel" section of benchmarks/bench_scale.py).
_THREAD_MIN_BYTES = 1 << 20


def _serial_if_small(store, n_jobs):
    """``n_jobs``, or 1 when it is the default and ``store`` is small."""
    if n_jobs is None and store.nbytes < _THREAD_MIN_BYTES:
        return 1
    return n_jobs


def _row_bytes(block):
    """A block's rows as packed bytes, (m, ceil(n_cols / 8)) C-ordered uint8."""
    if isinstance(block, _SpilledBlock):
        block = block.load()
    if isinstance(block, _PackedBlock):
        return np.ascontiguousarray(block.packed)
    bits = np.zeros((block.n_rows, block.n_cols), dtype=np.uint8)
    bits[np.repeat(np.arange(block.n_rows), block.row_sizes()), block.indices.astype(np.intp)] = 1
    return np.packbits(bits, axis=1, bitorder="little")


def _row_keys(rows):
    """One sortable key per row of packed bytes (uint64, or raw bytes)."""
    n_bytes = rows.shape[1]
    if n_bytes <= 8:
        padded = np.zeros((rows.shape[0], 8), dtype=np.uint8)
        padded[:, :n_bytes] = rows
        return padded.view("<u8").ravel()
    return np.ascontiguousarray(rows).view(f"V{n_bytes}").ravel()


def _key_rows(keys, n_bytes):
    """Packed bytes of keys made by _row_keys."""
    if n_bytes <= 8:
        return np.ascontiguousarray(keys.astype("<u8").view(np.uint8).reshape(-1, 8)[:, :n_bytes])
    return np.frombuffer(keys.tobytes(), dtype=np.uint8).reshape(-1, n_bytes).copy()


# Rows of at most this many bytes (16 columns) are told apart by a count
# per possible key (65,536 of them) rather than a sort.
_DISTINCT_TABLE_BYTES = 2


def _distinct_keys(keys, n_bytes, weights):
    """The sorted distinct ``keys`` (of ``_row_keys``) and their
    multiplicities (summed ``weights``), as ``np.unique`` and
    ``np.bincount`` of its inverse give them: for short rows, one pass of
    counts over every possible key instead of a sort (the same keys, and
    the same sums in the same order)."""
    if n_bytes <= _DISTINCT_TABLE_BYTES:
        codes = keys.astype(np.intp)
        size = 1 << (8 * n_bytes)
        present = np.flatnonzero(np.bincount(codes, minlength=size))
        counts = np.bincount(codes, weights=weights, minlength=size)[present]
        return present.astype(keys.dtype), counts
    unique, inverse = np.unique(keys, return_inverse=True)
    return unique, np.bincount(inverse.ravel(), weights=weights, minlength=unique.size)


def _distinct_rows(store):
    """The distinct rows of ``store`` with multiplicities, or None (see
    :meth:`BitRows.distinct_rows`)."""
    n_bytes = -(-store.n_cols // 8)
    n_rows = store.n_rows
    if n_rows < 2 or not store.n_cols or n_bytes > _DISTINCT_MAX_ROW_BYTES:
        return None
    limit = min(_DISTINCT_MAX_FRACTION * n_rows, _DISTINCT_MAX_BYTES / n_bytes)
    weights = store._weights
    parts = []  # (distinct keys, multiplicities) of blocks not merged yet
    held = 0

    def merge():
        keys = np.concatenate([k for k, _ in parts])
        keys, inverse = np.unique(keys, return_inverse=True)
        counts = np.bincount(
            inverse.ravel(), weights=np.concatenate([c for _, c in parts]), minlength=keys.size
        )
        return keys, counts

    for i, block in enumerate(store._all_blocks()):
        w = None if weights is None else weights[i * store.block_rows : (i + 1) * store.block_rows]
        row_keys = _row_keys(_row_bytes(block))
        keys, counts = _distinct_keys(row_keys, n_bytes, w)
        # One block tells whether rows repeat (a cheap way out for OUE).
        if i == 0 and keys.size > _DISTINCT_MAX_FRACTION * row_keys.size:
            return None
        parts.append((keys, counts))
        held += keys.size
        if held > 4 * limit:  # merged now and then: bounded memory
            parts = [merge()]
            held = parts[0][0].size
            if held > limit:
                return None
    keys, counts = merge()
    if keys.size > limit:
        return None
    distinct = BitRows(store.n_cols, store.density)
    distinct.packed = store.packed
    rows = _key_rows(keys, n_bytes)
    if distinct.packed:
        distinct._append(rows)
    else:
        distinct.append_dense(np.unpackbits(rows, axis=1, count=store.n_cols, bitorder="little"))
    distinct._weights = counts.astype(float)
    distinct._distinct = distinct
    return distinct


_UNIT_DATA = np.ones(0)


def _shared_tables(store, blocks, b, compiled=True):
    """What every block's product with ``b`` reads: byte tables for packed
    blocks, else the numpy loop's unit data (None for the compiled loop,
    which needs none: 32 MB allocated and faulted in for nothing)."""
    if store.packed:
        return _byte_tables(b)
    if compiled and _KERNEL == "numba":
        return None
    return _unit_data(max((blk.nnz for blk in blocks), default=0))


def _unit_data(size):
    """A read-only array of at least ``size`` ones, shared by every product.

    At most one block's set bits (``_BLOCK_NNZ``, 32 MB), allocated once per
    process instead of once per EM evaluation.
    """
    global _UNIT_DATA
    if _UNIT_DATA.size < size:
        data = np.ones(size)
        data.flags.writeable = False
        _UNIT_DATA = data
    return _UNIT_DATA


def add_em_terms(terms, n_cols):
    """Add per-block (or per-partition) EM terms in their order, as they arrive."""
    t = np.zeros(n_cols)
    sum_inv = sum_log = 0.0
    for block_inv, block_log, block_t in terms:
        sum_inv += block_inv
        sum_log += block_log
        t += block_t
    return sum_inv, sum_log, t


def _select_packed(rows, columns):
    """Packed rows of the bits ``columns`` of packed ``rows``, in that order."""
    if _KERNEL == "numba" and use_compiled(rows.shape[0] * -(-columns.size // 64)):
        out = np.zeros((rows.shape[0], -(-columns.size // 8)), dtype=np.uint8)
        _packed_select(np.ascontiguousarray(rows), columns, out)
        return out
    bits = unpack_rows(rows, 8 * rows.shape[1])
    return pack_rows(bits[:, columns])


def _piece_rows(piece):
    return piece.shape[0] if isinstance(piece, np.ndarray) else piece[0].size - 1


def _cut(piece, lo, hi):
    """Rows lo:hi of a packed array or of a CSR pair (indptr rebased to 0)."""
    if isinstance(piece, np.ndarray):
        return piece[lo:hi]
    indptr, indices = piece
    return indptr[lo : hi + 1] - indptr[lo], indices[indptr[lo] : indptr[hi]]


def _block_piece(block):
    if isinstance(block, _SpilledBlock):
        block = block.load()
    if isinstance(block, _PackedBlock):
        return block.packed
    return block.indptr.astype(np.int64), block.indices


def _byte_tables(b):
    """Per-byte lookup tables of ``b``: ``T[j, v] = sum_t b[8 j + t] bit_t(v)``."""
    n_bytes = -(-b.size // 8)
    padded = np.zeros(n_bytes * 8)
    padded[: b.size] = b
    table = padded.reshape(n_bytes, 8) @ _BYTE_BITS.T  # (n_bytes, 256)
    offsets = (np.arange(n_bytes) * 256).astype(np.intp)
    return table, offsets
