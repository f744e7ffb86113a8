"""Compact store of bit-vector reports for the exact likelihood (EM).

The likelihood of RAPPOR-type reports has no fixed-size sufficient statistic:
each protected report enters through ``D_i = A + sum_{j in y_i} b_j``, so EM
must see every report's set (sensitive) bits at every step. This module keeps
them as compactly as their density allows and evaluates the two products of
an EM step block by block:

* a sparse block stores CSR row pointers (int32, local to the block) and
  column indices (int16 when the columns fit, else int32): 2 bytes per set bit
  for k <= 32767. Products reuse one shared buffer of unit data, so the store
  never holds the 8-byte data array a scipy matrix would.
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
"""

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.sparse as sp
from joblib import effective_n_jobs

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


class _SparseBlock:
    """CSR rows without a data array (the data are all ones)."""

    __slots__ = ("indptr", "indices", "n_cols")

    def __init__(self, indptr, indices, n_cols):
        # Copies: a block never shares memory with the caller's arrays.
        self.indptr = indptr.astype(np.int32)
        index_dtype = np.int16 if n_cols <= np.iinfo(np.int16).max else np.int32
        self.indices = indices.astype(index_dtype)
        self.n_cols = n_cols

    @property
    def n_rows(self):
        return self.indptr.size - 1

    @property
    def nbytes(self):
        return self.indptr.nbytes + self.indices.nbytes

    def row_sizes(self):
        return np.diff(self.indptr)

    def em_terms(self, A, b, ones):
        nnz = int(self.indptr[-1])
        # scipy wants int32/int64 indices: the int16 ones are widened per
        # block, a transient of 4 bytes per set bit of this block only.
        M = sp.csr_array(
            (ones[:nnz], self.indices.astype(np.int32, copy=False), self.indptr),
            shape=(self.n_rows, self.n_cols), copy=False,
        )
        D = A + M @ b
        inv = 1.0 / D
        return float(inv.sum()), float(np.log(D).sum()), M.T @ inv

    def restrict(self, new_index, columns):
        """The block on ``columns``; ``new_index`` maps old to new columns (or -1)."""
        index = new_index.astype(self.indices.dtype, copy=False).take(self.indices)
        kept = index >= 0
        # Kept bits per row by reduceat over the non-empty rows (an empty
        # row's "segment" would be the next row's first bit). np.compress
        # and reduceat are several times faster here than a boolean index
        # and a cumsum over every bit.
        sizes = np.diff(self.indptr)
        nonempty = sizes > 0
        per_row = np.zeros(sizes.size, dtype=np.int64)
        if kept.size:
            per_row[nonempty] = np.add.reduceat(
                kept, self.indptr[:-1][nonempty], dtype=np.int64)
        indptr = np.zeros(sizes.size + 1, dtype=np.int64)
        np.cumsum(per_row, out=indptr[1:])
        return _SparseBlock(indptr, np.compress(kept, index), columns.size)


class _PackedBlock:
    """Rows of bits packed 8 per byte (little-endian within a byte)."""

    __slots__ = ("packed", "n_cols")

    def __init__(self, packed, n_cols):
        self.packed = packed
        self.n_cols = n_cols

    @property
    def n_rows(self):
        return self.packed.shape[0]

    @property
    def nbytes(self):
        return self.packed.nbytes

    def row_sizes(self):
        return _POPCOUNT[self.packed].sum(axis=1)

    def em_terms(self, A, b, tables):
        table, offsets = tables
        n_bytes = self.packed.shape[1]
        step = max(1, _GATHER_BYTES // n_bytes)
        flat = table.ravel()
        sum_inv = sum_log = 0.0
        weight = np.zeros(flat.size)
        for lo in range(0, self.n_rows, step):
            # Flat index of (byte position j, byte value v) = 256 j + v.
            index = self.packed[lo:lo + step] + offsets
            D = A + flat.take(index).sum(axis=1)
            inv = 1.0 / D
            sum_inv += float(inv.sum())
            sum_log += float(np.log(D).sum())
            weight += np.bincount(
                index.ravel(), weights=np.repeat(inv, n_bytes), minlength=flat.size
            )
        t = (weight.reshape(n_bytes, 256) @ _BYTE_BITS).ravel()[: self.n_cols]
        return sum_inv, sum_log, t

    def restrict(self, new_index, columns):
        """The block on ``columns``; ``new_index`` maps old to new columns (or -1)."""
        step = max(1, _GATHER_BYTES // max(1, self.packed.shape[1]))
        parts = [
            np.packbits(
                np.unpackbits(self.packed[lo:lo + step], axis=1, count=self.n_cols,
                              bitorder="little")[:, columns],
                axis=1, bitorder="little")
            for lo in range(0, self.n_rows, step)
        ]
        packed = (np.concatenate(parts) if parts
                  else np.zeros((0, -(-columns.size // 8)), dtype=np.uint8))
        return _PackedBlock(packed, columns.size)


class BitRows:
    """Set bits of protected bit-vector reports, in compact blocks.

    The per-report part of the sufficient statistics of RAPPOR-type channels
    (see the module docstring). Rows are cut into blocks at fixed multiples of
    ``block_rows`` counted from the first row, whatever the chunks they were
    appended in, and all blocks of a store have one layout, so chunked and
    one-shot statistics give bit-identical products. Appending is O(chunk);
    adding two stores shares the full blocks of the first.

    Parameters
    ----------
    n_cols : int
        Number of bit columns (the sensitive categories).
    density : float
        Expected fraction of set cells, which chooses the layout (packed bits
        when it is at least ``_PACKED_DENSITY``, else sparse indices) and the
        block size.
    """

    def __init__(self, n_cols, density):
        self.n_cols = int(n_cols)
        self.density = float(density)
        self.packed = self.density >= _PACKED_DENSITY
        if self.packed:
            rows = _BLOCK_NNZ // max(1, -(-self.n_cols // 8))
        else:
            rows = _BLOCK_NNZ // max(1.0, self.density * self.n_cols)
        self.block_rows = int(min(_BLOCK_ROWS, max(1, rows)))
        self._blocks = []  # full blocks of block_rows rows
        self._tail = []    # pieces (packed arrays or (indptr, indices)) of the rest
        self._tail_rows = 0
        self._tail_block = None  # the tail as a block, built for products

    # ------------------------------------------------------------- building
    def append_dense(self, bits):
        """Append rows given as a dense (m, n_cols) 0/1 uint8 array."""
        if bits.shape[0] == 0:
            return
        if self.packed:
            self._append(np.packbits(bits, axis=1, bitorder="little"))
            return
        step = max(1, _BLOCK_NNZ // max(1, self.n_cols))
        for lo in range(0, bits.shape[0], step):  # bounds the index temporaries
            block = bits[lo:lo + step]
            rows, cols = np.divmod(np.flatnonzero(block.view(bool)), self.n_cols)
            indptr = np.zeros(block.shape[0] + 1, dtype=np.int64)
            np.cumsum(np.bincount(rows, minlength=block.shape[0]), out=indptr[1:])
            self._append((indptr, cols))

    def append_sparse(self, indptr, indices):
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
            rows = np.repeat(np.arange(hi - lo), np.diff(indptr[lo:hi + 1]))
            bits[rows, indices[indptr[lo]:indptr[hi]]] = 1
            self._append(np.packbits(bits, axis=1, bitorder="little"))

    def _append(self, piece):
        self._tail_block = None
        self._tail.append(piece)
        self._tail_rows += _piece_rows(piece)
        if self._tail_rows < self.block_rows:
            return
        whole = self._joined_tail()
        n_full = self._tail_rows // self.block_rows
        for i in range(n_full):
            lo, hi = i * self.block_rows, (i + 1) * self.block_rows
            self._blocks.append(self._make_block(_cut(whole, lo, hi)))
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
            + [ip[1:] + off for (ip, _), off in zip(self._tail, offsets, strict=True)])
        return indptr, np.concatenate([ix for _, ix in self._tail])

    def _make_block(self, piece):
        if self.packed:
            return _PackedBlock(np.ascontiguousarray(piece), self.n_cols)
        return _SparseBlock(piece[0], piece[1], self.n_cols)

    def _all_blocks(self):
        if not self._tail:
            return self._blocks
        if self._tail_block is None:  # the partial last block, built once
            self._tail = [self._joined_tail()]
            self._tail_block = self._make_block(self._tail[0])
        return self._blocks + [self._tail_block]

    def __add__(self, other):
        if (other.n_cols, other.packed, other.block_rows) != (
                self.n_cols, self.packed, self.block_rows):
            raise ValueError("Cannot add bit rows of different layouts.")
        total = BitRows(self.n_cols, self.density)
        total._blocks = list(self._blocks)
        total._tail, total._tail_rows = list(self._tail), self._tail_rows
        for piece in [_block_piece(b) for b in other._blocks] + other._tail:
            total._append(piece)
        return total

    # ------------------------------------------------------------- querying
    @property
    def n_rows(self):
        return len(self._blocks) * self.block_rows + self._tail_rows

    @property
    def nbytes(self):
        """Bytes held by the store (what the EM likelihood keeps per report)."""
        return sum(block.nbytes for block in self._all_blocks())

    def row_sizes(self):
        """Number of set bits of every row, in order."""
        blocks = self._all_blocks()
        if not blocks:
            return np.zeros(0, dtype=np.int64)
        return np.concatenate([block.row_sizes() for block in blocks])

    def row_size_counts(self):
        """How many rows have each number of set bits (index = set bits)."""
        return np.bincount(self.row_sizes(), minlength=self.n_cols + 1)

    def restrict(self, columns, n_jobs=None):
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
            Threads restricting blocks concurrently.

        Returns
        -------
        BitRows
        """
        columns = np.asarray(columns, dtype=np.intp)
        new_index = np.full(self.n_cols, -1, dtype=np.int32)
        new_index[columns] = np.arange(columns.size, dtype=np.int32)
        blocks = _map_blocks(lambda block: block.restrict(new_index, columns),
                             self._all_blocks(), n_jobs)
        restricted = BitRows(columns.size, self.density)
        restricted.packed, restricted.block_rows = self.packed, self.block_rows
        restricted._blocks = blocks[:len(self._blocks)]
        if self._tail:
            restricted._tail_block = blocks[-1]
            restricted._tail = [_block_piece(blocks[-1])]
            restricted._tail_rows = self._tail_rows
        return restricted

    def em_terms(self, A, b, n_jobs=None):
        """``sum_i 1/D_i``, ``sum_i log D_i`` and ``Y^T (1/D)`` for ``D = A + Y b``.

        Parameters
        ----------
        A : float
        b : ndarray of shape (n_cols,)
        n_jobs : int or None, default=None
            Threads evaluating blocks concurrently (scipy's sparse products
            and numpy's gathers release the GIL); ``None`` means 1 unless in
            a ``joblib.parallel_config`` context. The blocks' terms are added
            in block order whatever the threads, so the result is
            bit-identical.

        Returns
        -------
        sum_inv, sum_log : float
        t : ndarray of shape (n_cols,)
        """
        b = np.asarray(b, dtype=float)
        if not self.n_cols:  # e.g. restricted to no column: D_i = A for all
            return self.n_rows / A, self.n_rows * float(np.log(A)), np.zeros(0)
        blocks = self._all_blocks()
        if self.packed:
            shared = _byte_tables(b)
        else:
            shared = _unit_data(max((int(blk.indptr[-1]) for blk in blocks), default=0))
        terms = _map_blocks(lambda block: block.em_terms(A, b, shared), blocks, n_jobs)
        return add_em_terms(terms, self.n_cols)


def _map_blocks(function, blocks, n_jobs):
    """``[function(block) for block in blocks]``, on threads when asked.

    scipy's sparse products and numpy's gathers release the GIL, so blocks
    evaluate concurrently; the results keep the blocks' order.
    """
    n_threads = min(len(blocks), effective_n_jobs(n_jobs))
    if n_threads <= 1:
        return [function(block) for block in blocks]
    with ThreadPoolExecutor(max_workers=n_threads) as pool:
        return list(pool.map(function, blocks))


_UNIT_DATA = np.ones(0)


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


def _piece_rows(piece):
    return piece.shape[0] if isinstance(piece, np.ndarray) else piece[0].size - 1


def _cut(piece, lo, hi):
    """Rows lo:hi of a packed array or of a CSR pair (indptr rebased to 0)."""
    if isinstance(piece, np.ndarray):
        return piece[lo:hi]
    indptr, indices = piece
    return indptr[lo:hi + 1] - indptr[lo], indices[indptr[lo]:indptr[hi]]


def _block_piece(block):
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
