"""The compiled loops of the bit-row store (numba), with their numpy-free
signatures: the EM terms of a packed or CSR block, row selection, row sums,
row sizes and the segment's log-likelihood sum. :mod:`._bit_rows` decides
when they run (its ``_KERNEL`` switch, which tests flip to compare them with
the numpy paths) and holds the numpy versions beside each call.
"""

from __future__ import annotations

import math

import numpy as np

try:  # optional: compiled products (several times faster per EM step)
    import numba
except ImportError:  # pragma: no cover - numba is optional
    numba = None  # type: ignore[assignment]


# Rows per chunk of the compiled packed loop: the chunk's bytes stay in cache
# while each byte position is read twice (gather, then scatter). 128 rows (16
# kB at k = 1000) took 25-30 % less time per EM pass than 1024 at k = 10,000
# (1.25 kB rows: 1024 of them overflow the second-level cache), the same at
# k <= 1000. A multiple of 16 (the logarithms' groups of rows), so the sums
# do not depend on it: every row and byte is added in the same order.
_LOOP_ROWS = 128


def _packed_loop(packed, table, A, weights, acc, out):
    """One packed block's terms (compiled by numba).

    ``D_i = A + sum_j table[j, packed[i, j]]``; ``acc[j, v]`` accumulates
    ``w_i / D_i`` over the rows whose byte j is v. Returns ``sum w_i / D_i``
    and ``sum w_i log D_i`` (``w_i = 1`` when ``weights`` is empty). When
    ``out`` is not empty, ``out[i] = D_i`` (as :func:`_packed_row_sums`).
    """
    n_rows, n_bytes = packed.shape
    weighted = weights.size > 0
    record = out.size > 0
    sum_inv = 0.0
    sum_log = 0.0
    # Byte position by byte position over a chunk of rows (that stays in
    # cache): the table row and the accumulator row of one position (2 kB
    # each) stay in the first-level cache, where row by row every byte
    # would touch another part of 256 n_bytes doubles.
    chunk = _LOOP_ROWS
    d = np.empty(chunk)
    for lo in range(0, n_rows, chunk):
        hi = min(n_rows, lo + chunk)
        m = hi - lo
        d[:m] = A
        for j in range(n_bytes):
            table_j = table[j]
            for i in range(m):
                d[i] += table_j[packed[lo + i, j]]
        if record:
            for i in range(m):
                out[lo + i] = d[i]
        if weighted:
            for i in range(m):
                sum_log += weights[lo + i] * math.log(d[i])
        else:
            # One logarithm per 16 rows (of their product, when it is a
            # normal number): with few bytes a row the logarithms were
            # about a third of the loop.
            for start in range(0, m, 16):
                stop = min(m, start + 16)
                product = 1.0
                for i in range(start, stop):
                    product *= d[i]
                if 1e-300 < product < 1e300:
                    sum_log += math.log(product)
                else:
                    for i in range(start, stop):
                        sum_log += math.log(d[i])
        for i in range(m):
            inv = 1.0 / d[i]
            if weighted:
                inv *= weights[lo + i]
            sum_inv += inv
            d[i] = inv
        for j in range(n_bytes):
            acc_j = acc[j]
            for i in range(m):
                acc_j[packed[lo + i, j]] += d[i]
    return sum_inv, sum_log


def _sparse_loop(indptr, indices, b, A, weights, t, out):
    """One CSR block's terms in one pass (compiled by numba); see _packed_loop."""
    n_rows = indptr.size - 1
    weighted = weights.size > 0
    record = out.size > 0
    sum_inv = 0.0
    sum_log = 0.0
    for i in range(n_rows):
        lo = indptr[i]
        hi = indptr[i + 1]
        # Four partial sums: one running sum is a chain of dependent
        # additions (a floating-point addition's latency per set bit); four
        # let the gathers overlap. The scatter below is unrolled alike.
        # (About 20 % less time per set bit; one logarithm per row costs
        # nothing measurable here, unlike in the packed loop.)
        d0 = 0.0
        d1 = 0.0
        d2 = 0.0
        d3 = 0.0
        at = lo
        while at + 4 <= hi:
            d0 += b[indices[at]]
            d1 += b[indices[at + 1]]
            d2 += b[indices[at + 2]]
            d3 += b[indices[at + 3]]
            at += 4
        while at < hi:
            d0 += b[indices[at]]
            at += 1
        d = A + ((d0 + d1) + (d2 + d3))
        if record:
            out[i] = d
        inv = 1.0 / d
        log_d = math.log(d)
        if weighted:
            inv *= weights[i]
            log_d *= weights[i]
        sum_inv += inv
        sum_log += log_d
        # A row's columns are distinct: the four updates are independent.
        at = lo
        while at + 4 <= hi:
            j0 = indices[at]
            j1 = indices[at + 1]
            j2 = indices[at + 2]
            j3 = indices[at + 3]
            t[j0] += inv
            t[j1] += inv
            t[j2] += inv
            t[j3] += inv
            at += 4
        while at < hi:
            t[indices[at]] += inv
            at += 1
    return sum_inv, sum_log


def _index_dtype(n_cols):
    """Column indices of a sparse block: unsigned (see the module docstring)."""
    return np.uint16 if n_cols <= 1 << 16 else np.uint32


def _sparse_select(indptr, indices, new_index, out_indptr, out):
    """The block on the columns ``new_index`` keeps (>= 0), renumbered:
    writes its CSR arrays to ``out_indptr`` and ``out`` (of at least as many
    entries as ``indices``) and returns its number of set bits (compiled by
    numba).

    One pass, branch-free: about half of the bits of a working set are
    kept, at random, so a branch on each would be mispredicted half of the
    time.
    """
    n_rows = indptr.size - 1
    pos = 0
    for i in range(n_rows):
        out_indptr[i] = pos
        for at in range(indptr[i], indptr[i + 1]):
            j = new_index[indices[at]]
            out[pos] = j
            pos += j >= 0
    out_indptr[n_rows] = pos
    return pos


def _packed_select(packed, columns, out):
    """``out`` = the bits of ``columns`` of every packed row, packed again."""
    n_rows = packed.shape[0]
    for i in range(n_rows):
        for c in range(columns.size):
            old = columns[c]
            bit = (packed[i, old >> 3] >> (old & 7)) & 1
            out[i, c >> 3] |= bit << (c & 7)


def _packed_row_sums(packed, table, A, out):
    """``out[i] = A + sum_j table[j, packed[i, j]]`` (compiled by numba)."""
    n_rows, n_bytes = packed.shape
    for lo in range(0, n_rows, _LOOP_ROWS):
        hi = min(n_rows, lo + _LOOP_ROWS)
        for i in range(lo, hi):
            out[i] = A
        # byte position by byte position, as in _packed_loop
        for j in range(n_bytes):
            table_j = table[j]
            for i in range(lo, hi):
                out[i] += table_j[packed[i, j]]


def _packed_row_sizes(packed, popcount, out):
    """``out[i]`` = set bits of packed row i (compiled by numba)."""
    n_rows, n_bytes = packed.shape
    for i in range(n_rows):
        size = 0
        for j in range(n_bytes):
            size += popcount[packed[i, j]]
        out[i] = size


def _sparse_row_sums(indptr, indices, b, A, out):
    """``out[i] = A + sum_{j in row i} b[j]`` (compiled by numba)."""
    for i in range(indptr.size - 1):
        d = 0.0
        for at in range(indptr[i], indptr[i + 1]):
            d += b[indices[at]]
        out[i] = A + d


def _segment_sum_log(d0, d1, w, weights):
    """``sum_i weights_i log((1 - w) d0_i + w d1_i)`` (compiled by numba;
    ``weights`` empty: all ones), one logarithm per 16 rows when unweighted."""
    n = d0.size
    v = 1.0 - w
    total = 0.0
    if weights.size:
        for i in range(n):
            total += weights[i] * math.log(v * d0[i] + w * d1[i])
        return total
    for start in range(0, n, 16):
        stop = min(n, start + 16)
        product = 1.0
        for i in range(start, stop):
            product *= v * d0[i] + w * d1[i]
        if 1e-300 < product < 1e300:
            total += math.log(product)
        else:
            for i in range(start, stop):
                total += math.log(v * d0[i] + w * d1[i])
    return total


if numba is not None:
    # nogil: threads run blocks concurrently; cache: compiled once per install.
    _packed_loop = numba.njit(nogil=True, cache=True)(_packed_loop)
    _sparse_loop = numba.njit(nogil=True, cache=True)(_sparse_loop)
    _sparse_select = numba.njit(nogil=True, cache=True)(_sparse_select)
    _packed_select = numba.njit(nogil=True, cache=True)(_packed_select)
    _packed_row_sums = numba.njit(nogil=True, cache=True)(_packed_row_sums)
    _sparse_row_sums = numba.njit(nogil=True, cache=True)(_sparse_row_sums)
    _packed_row_sizes = numba.njit(nogil=True, cache=True)(_packed_row_sizes)
    _segment_sum_log = numba.njit(nogil=True, cache=True)(_segment_sum_log)
