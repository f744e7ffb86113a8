"""Helpers of the frequency oracles' samplers and counts (compiled by numba).

Each loop here is plain Python over numpy arrays, compiled by numba when it
is installed (the "fast" extra); its callers keep a numpy path of the same
computation for when it is not, and the tests run both. Random bits come
only from the caller's numpy ``Generator`` (``random_raw`` and ``random``),
so a seeded PCG64 and the "secure" generator drive every draw alike.
"""

from __future__ import annotations

import mmap

import numpy as np

from ..utils._numba import HAVE_NUMBA, numba

__all__ = [
    "HAVE_NUMBA",
    "report_array",
    "bit_matrix_counts",
    "sketch_fill",
    "sketch_fill_numpy",
    "linear_hash_blocks",
]

# Arrays from this size on are mapped by report_array (numpy asks for huge
# pages from 4 MB on), and populated in one call from _POPULATE_BYTES on.
_MAP_BYTES = 1 << 22
_POPULATE_BYTES = 1 << 26
# madvise(2) advice (Linux >= 5.14): fault in, writable, the whole range now.
# Python's mmap module does not name it (3.11), but passes any advice on.
_MADV_POPULATE_WRITE = 23
_MAP_PRIVATE = getattr(mmap, "MAP_PRIVATE", None)


def report_array(shape, dtype, *, zeros=False):
    """A new array of reports, mapped in one go, without huge-page requests.

    numpy asks the kernel for transparent huge pages (``madvise``) on every
    array of 4 MB or more. Where the kernel compacts memory on demand for
    such requests (Linux's default ``defrag=madvise``), a fragmented machine
    then spends seconds of system time on the first touch of a GB of
    reports -- up to twice the sampler's own CPU time -- and huge pages buy
    nothing for an array the sampler writes once, row by row. So a large
    array is an anonymous private memory map of the standard library's
    :mod:`mmap` (zero pages, no huge-page request; the kernel still uses
    huge pages where they are free with THP ``enabled=always``), viewed by
    numpy, and is populated by one ``madvise(MADV_POPULATE_WRITE)``
    (:meth:`mmap.mmap.madvise`; Linux >= 5.14, a no-op elsewhere), which
    maps its pages a third cheaper than a page fault per 4 kB page would as
    the sampler first writes them. The map lives as long as the array (and
    its views) and is unmapped with it. Small arrays, and platforms without
    private anonymous maps (Windows), get a plain numpy array.
    """
    dtype = np.dtype(dtype)
    size = int(np.prod(shape, dtype=np.int64))
    nbytes = size * dtype.itemsize
    if nbytes < _MAP_BYTES or _MAP_PRIVATE is None:
        return (np.zeros if zeros else np.empty)(shape, dtype=dtype)
    mapped = mmap.mmap(-1, nbytes, flags=_MAP_PRIVATE)  # anonymous: zero-filled
    if nbytes >= _POPULATE_BYTES and hasattr(mapped, "madvise"):
        try:
            mapped.madvise(_MADV_POPULATE_WRITE)
        except OSError:  # older kernel: the pages fault in as usual
            pass
    return np.frombuffer(mapped, dtype=dtype, count=size).reshape(shape)


def bit_matrix_counts(words, k, n_groups, counts, sizes):  # pragma: no cover - numba
    """Column counts and row sums of 0/1 bytes, 8 bytes at a time (numba).

    ``words`` is the uint64 view of ``8 n_groups`` rows of k >= 8 bytes (a
    group of 8 rows is exactly k words, and a word holds bytes of at most
    two rows). Adds the sum of column c to ``counts[c]``
    (int64) and writes the sum of row r of group g to ``sizes[8 g + r]``.
    Returns the bitwise OR of all the words, whose bytes are all 0 or 1 iff
    every byte of the rows is.

    Columns: the words of up to 255 groups are added as 64-bit integers;
    each byte of the sum counts one (row in group, column) cell and cannot
    carry into the next (each group adds at most 1), and byte b of word w
    of a group is column ``(8 w + b) mod k``. Rows: row r of a group spans
    bytes ``[r k, (r + 1) k)``, the whole words inside plus the masked ends
    of its boundary words, added as 64-bit integers over at most 248 words
    at a time (so that no byte passes 255); the bytes of such a sum are
    added in pairs into 16-bit lanes, and one multiplication by
    0x0001000100010001 adds the four lanes (in its top 16 bits).
    """
    acc = np.zeros(k, np.uint64)
    pairs = np.uint64(0x00FF00FF00FF00FF)
    ones16 = np.uint64(0x0001000100010001)
    eight = np.uint64(8)
    full = np.uint64(0xFFFFFFFFFFFFFFFF)
    top = np.uint64(48)
    head_w = np.empty(8, np.int64)
    head_m = np.zeros(8, np.uint64)
    tail_w = np.empty(8, np.int64)
    tail_m = np.zeros(8, np.uint64)
    first = np.empty(8, np.int64)
    last = np.empty(8, np.int64)
    for r in range(8):
        s = r * k
        e = s + k
        first[r] = (s + 7) // 8
        last[r] = e // 8
        head_w[r] = -1
        tail_w[r] = -1
        if s % 8:
            head_w[r] = s // 8
            head_m[r] = full << np.uint64(8 * (s % 8))
        if e % 8:
            tail_w[r] = e // 8
            tail_m[r] = full >> np.uint64(8 * (8 - e % 8))
    seen = np.uint64(0)
    g0 = 0
    while g0 < n_groups:
        g1 = min(n_groups, g0 + 255)
        acc[:] = 0
        for g in range(g0, g1):
            base = g * k
            for w in range(k):
                x = words[base + w]
                acc[w] += x
                seen |= x
            for r in range(8):
                total = np.uint64(0)
                lo = first[r]
                while lo < last[r]:
                    hi = min(last[r], lo + 248)
                    run = np.uint64(0)
                    for w in range(lo, hi):
                        run += words[base + w]
                    run = (run & pairs) + ((run >> eight) & pairs)
                    total += (run * ones16) >> top
                    lo = hi
                ends = np.uint64(0)
                if head_w[r] >= 0:
                    ends += words[base + head_w[r]] & head_m[r]
                if tail_w[r] >= 0:
                    ends += words[base + tail_w[r]] & tail_m[r]
                ends = (ends & pairs) + ((ends >> eight) & pairs)
                total += (ends * ones16) >> top
                sizes[8 * g + r] = np.int64(total)
        for w in range(k):
            x = acc[w]
            for b in range(8):
                counts[(8 * w + b) % k] += np.int64((x >> np.uint64(8 * b)) & np.uint64(255))
        g0 = g1
    return seen


def sketch_fill(out, words, threshold, ties, fraction, hashes, buckets, own, start):
    """Rows ``[j, v]`` of count-mean-sketch reports from random bytes (numba).

    Row i's m bits are its random bytes B (``words[i]`` as bytes, the row's
    first m of them): 1 if ``B < threshold``, and on a tie (``B ==
    threshold``) 1 if the next float64 uniform of ``ties`` is below
    ``fraction`` -- :func:`~sklearn_uldp.utils._sampling.bernoulli_matrix`'s
    exact Bernoulli cells -- then the bit of ``buckets[i]`` is replaced by
    ``own[i]`` and ``out[i, 0]`` is ``hashes[i]``. Ties are found 8 bytes at
    a time (a byte of ``word ^ threshold * 0x0101...01`` is zero). Returns
    the first row not done: a row that runs out of tie uniforms is left for
    a new call from that row (``start``), with the same bytes and fresh
    uniforms.
    """
    n_rows = out.shape[0]
    m = out.shape[1] - 1
    n_words = words.shape[1]
    ones = np.uint64(0x0101010101010101)
    highs = np.uint64(0x8080808080808080)
    pattern = np.uint64(threshold) * ones
    n_ties = ties.size
    pos = 0
    for i in range(start, n_rows):
        row = out[i]
        cells = words[i].view(np.uint8)
        for c in range(m):
            row[c + 1] = cells[c] < threshold
        for w in range(n_words):
            x = words[i, w] ^ pattern
            if (x - ones) & ~x & highs:
                for c in range(8 * w, min(m, 8 * w + 8)):
                    if cells[c] == threshold:
                        if pos == n_ties:
                            return i
                        row[c + 1] = ties[pos] < fraction
                        pos += 1
        row[buckets[i] + 1] = own[i]
        row[0] = hashes[i]
    return n_rows


def sketch_fill_numpy(out, words, threshold, ties, fraction, hashes, buckets, own, start):
    """:func:`sketch_fill` in numpy: the same rows from the same bytes and uniforms.

    The compiled loop's numpy twin for small jobs (nothing to compile) and
    installs without numba. It reads the bytes and the tie uniforms in the
    loop's order (the ties of row i, by increasing bucket, before those of
    row i + 1), so it writes the same rows bit for bit and stops at the
    same row when the uniforms run out: row i is done iff the ties of rows
    ``start..i`` number at most ``ties.size``. Rows from the returned one on
    are left to the next call (their contents are overwritten then).
    """
    n_rows = out.shape[0]
    m = out.shape[1] - 1
    cells = words[start:].view(np.uint8)[:, :m]
    bits = out[start:, 1:]
    np.less(cells, threshold, out=bits)
    tie_rows, tie_cols = np.nonzero(cells == threshold)  # row-major: the loop's order
    per_row = np.bincount(tie_rows, minlength=n_rows - start)
    done = int(np.searchsorted(np.cumsum(per_row), ties.size, side="right"))
    used = int(per_row[:done].sum())
    bits[tie_rows[:used], tie_cols[:used]] = ties[:used] < fraction
    rows = np.arange(done)
    bits[rows, buckets[start : start + done]] = own[start : start + done]
    out[start : start + done, 0] = hashes[start : start + done]
    return start + done


def linear_hash_blocks(seeds, codes, code_blocks, base, table, g, out):  # pragma: no cover
    """``out[i] = <d(seeds[i]), d(codes[i])> mod g``, the linear hash (numba).

    The base-g digits go ``m`` at a time: ``base = g^m`` (at most 256),
    ``code_blocks[x]`` holds code x's base-``base`` digits (least
    significant first) and ``table[A, X]`` the inner product of the m
    base-g digits of A and X, mod g. The seed's blocks are peeled off one
    by one; a 64-bit division by a divisor known only at run time costs tens
    of cycles, so each quotient is taken from the float product
    ``a * (1 / base)`` (exact to one unit for a < 2^53) and corrected by its
    remainder. The cost per user is a few operations per block of m digits:
    k = 10^5 (11 ternary digits) takes 3 blocks where k = 100 takes 1.
    """
    n_blocks = code_blocks.shape[1]
    inv = 1.0 / base
    inv_g = 1.0 / g
    for i in range(seeds.size):
        a = seeds[i]
        row = code_blocks[codes[i]]
        acc = 0
        for j in range(n_blocks):
            q = np.int64(a * inv)
            rem = a - q * base
            if rem < 0:
                q -= 1
                rem += base
            elif rem >= base:
                q += 1
                rem -= base
            acc += np.int64(table[rem, row[j]])
            a = q
        q = np.int64(acc * inv_g)
        rem = acc - q * g
        if rem < 0:
            rem += g
        elif rem >= g:
            rem -= g
        out[i] = rem


if numba is not None:
    linear_hash_blocks = numba.njit(nogil=True, cache=True)(linear_hash_blocks)
    bit_matrix_counts = numba.njit(nogil=True, cache=True)(bit_matrix_counts)
    sketch_fill = numba.njit(nogil=True, cache=True)(sketch_fill)
