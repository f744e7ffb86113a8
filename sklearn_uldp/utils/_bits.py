"""Bit-packed rows: the layout of packed reports and its compiled kernels.

A row of ``n_bits`` bits takes ``ceil(n_bits / 8)`` bytes: bit j is bit
``j % 8`` (least significant first) of byte ``j // 8``, as
``np.packbits(bits, axis=1, bitorder="little")`` writes it, and the padding
bits of the last byte (``j >= n_bits``) are 0. Rows follow each other in a
C-ordered ``(n, ceil(n_bits / 8))`` uint8 array.

The kernels are plain Python over numpy arrays, compiled by numba when it is
installed; each has a numpy path of the same result for when it is not (the
tests run both):

* :func:`column_counts` -- how many rows set each bit. Eight rows of
  ``B`` bytes are exactly ``B`` 64-bit words, so the words of groups of 8
  rows are added position by position, vectorized over the words of a
  group: 16 groups at a time through a tree of carry-save adders into
  bit-sliced counters (about 5 bitwise operations a word, half the cost of
  shifting every word into nibble lanes), whose carries of 16 are counted
  in nibble lanes (bits b and b + 4 of each byte at the bottom of its
  nibbles, added as 64-bit integers), spread into byte lanes and those into
  the counts.
* :func:`masked_row_counts` -- set bits of each row within a mask.
* :func:`packed_to_csr` -- the column indices of the set bits, row by row.
* :func:`bernoulli_packed` -- rows of i.i.d. Bernoulli(q) bits written in
  the packed layout, 64 cells per machine word (see its docstring).
"""

from __future__ import annotations

import numpy as np

from ._numba import numba, use_compiled
from ._threads import map_threads

__all__ = [
    "packed_width",
    "pack_rows",
    "unpack_rows",
    "column_counts",
    "masked_row_counts",
    "packed_to_csr",
    "bernoulli_packed",
    "set_packed_bits",
    "write_own_bits",
]

#: "numba" (compiled loops) or "numpy"; tests compare the two.
_KERNEL = "numba" if numba is not None else "numpy"

_POPCOUNT8 = np.array([bin(v).count("1") for v in range(256)], dtype=np.uint8)
# Rows per numpy step (bounds the unpacked temporaries: 32 MB of bytes).
_NUMPY_CELLS = 1 << 25
# Bytes from which column_counts splits the rows between threads.
_THREAD_BYTES = 1 << 22
# Words of a group whose lanes (96 bytes a word) are kept at once: 24 kB,
# in the first-level cache.
_TILE_WORDS = 256


def packed_width(n_bits: int) -> int:
    """Bytes of a packed row of ``n_bits`` bits."""
    return -(-int(n_bits) // 8)


def pack_rows(bits: np.ndarray) -> np.ndarray:
    """Dense 0/1 rows ``(m, n_bits)`` as packed rows ``(m, ceil(n_bits / 8))``."""
    bits = np.asarray(bits, dtype=np.uint8)
    m, n_bits = bits.shape if bits.ndim == 2 else (0, 0)
    if m >= 64 and (n_bits <= 16 or (bits.flags.f_contiguous and n_bits <= 64)):
        return _pack_by_columns(bits)
    return np.packbits(bits, axis=1, bitorder="little")


def _pack_by_columns(bits):
    """``np.packbits(bits, axis=1, bitorder="little")`` one bit column at a
    time: numpy packs short rows (and Fortran-ordered ones) byte by byte, 2-5
    times slower than these n_bits vectorized passes (k = 10: 2.8 -> 1.5 ms
    a 10^5 rows; 0.8 ms Fortran-ordered, as a DataFrame's columns give them)."""
    m, n_bits = bits.shape
    out = np.zeros((m, packed_width(n_bits)), dtype=np.uint8)
    bit = np.empty(m, dtype=np.uint8)
    for j in range(n_bits):
        np.not_equal(bits[:, j], 0, out=bit.view(bool))  # any nonzero is a 1
        if j & 7:
            np.left_shift(bit, j & 7, out=bit)
        np.bitwise_or(out[:, j >> 3], bit, out=out[:, j >> 3])
    return out


def unpack_rows(packed: np.ndarray, n_bits: int) -> np.ndarray:
    """Packed rows as dense 0/1 uint8 rows ``(m, n_bits)``."""
    return np.unpackbits(packed, axis=1, count=int(n_bits), bitorder="little")


# ---------------------------------------------------------------- counting
def _csa(a, b, c):  # pragma: no cover - numba
    """Carry-save adder of three words, bit by bit: ``(carries, sums)``."""
    u = a ^ b
    return (a & b) | (u & c), u ^ c


def _spread_lanes(lanes, width, w0, n_bytes, counts, weight):  # pragma: no cover - numba
    """``counts[8 p + b]`` += ``weight`` x byte t of ``lanes[b, w]`` (p of word w0 + w)."""
    byte = np.uint64(255)
    for b in range(8):
        for w in range(width):
            x = lanes[b, w]
            for t in range(8):
                p = (8 * (w0 + w) + t) % n_bytes
                counts[8 * p + b] += weight * np.int64((x >> np.uint64(8 * t)) & byte)


def _nibbles_to_lanes(nibbles, lanes, width):  # pragma: no cover - numba
    """Each nibble lane (up to 15) spread into two byte lanes (up to 255)."""
    low_nibbles = np.uint64(0x0F0F0F0F0F0F0F0F)
    four = np.uint64(4)
    for b in range(4):
        for w in range(width):
            x = nibbles[b, w]
            lanes[b, w] += x & low_nibbles
            lanes[b + 4, w] += (x >> four) & low_nibbles


def _word_column_counts(words, n_bytes, n_groups, counts):  # pragma: no cover - numba
    """``counts[8 p + b]`` += rows of the word groups whose byte p has bit b set.

    ``words``: the uint64 view of ``8 n_groups`` rows of ``n_bytes`` bytes
    (group g = words ``[g n_bytes, (g + 1) n_bytes)``; byte t of word w is
    byte position ``(8 w + t) % n_bytes`` of one of the group's rows).

    A positional population count per word position w, over the groups: the
    words of 16 groups go through a Harley-Seal tree of carry-save adders
    into bit-sliced counters (ones, twos, fours, eights: each bit of the
    word keeps its count below 16 in four words), about 5 bitwise operations
    a word, and out of it comes one word of "sixteens". Those are counted in
    two tiers of lanes: ``(x >> b) & 0x1111...`` puts bits b and b + 4 of
    every byte at the bottom of its two nibbles (up to 15 sixteens), each
    nibble lane is then spread into two byte lanes (up to 225), which are
    spread into the counts. The last groups (fewer than 16) go straight into
    nibble lanes, and the bit-sliced remainders into the counts. The words
    of a group are taken in tiles of ``_TILE_WORDS``, so that the tile's
    counters stay in the first-level cache whatever k.
    """
    nib_mask = np.uint64(0x1111111111111111)
    one = np.uint64(1)
    tile = min(_TILE_WORDS, n_bytes)
    sliced = np.zeros((4, tile), np.uint64)  # ones, twos, fours, eights
    nibbles = np.zeros((4, tile), np.uint64)
    lanes = np.zeros((8, tile), np.uint64)
    n_blocks = n_groups // 16
    s = n_bytes  # stride between the groups of a block
    for w0 in range(0, n_bytes, tile):
        width = min(tile, n_bytes - w0)
        sliced[:, :] = 0
        b0 = 0
        while b0 < n_blocks:
            b1 = min(n_blocks, b0 + 225)  # a byte lane counts up to 225 sixteens
            lanes[:, :] = 0
            for n0 in range(b0, b1, 15):  # a nibble lane counts up to 15
                nibbles[:, :] = 0
                for blk in range(n0, min(b1, n0 + 15)):
                    base = blk * 16 * s + w0
                    for w in range(width):
                        at = base + w
                        ones = sliced[0, w]
                        twos = sliced[1, w]
                        fours = sliced[2, w]
                        eights = sliced[3, w]
                        two_a, ones = _csa(ones, words[at], words[at + s])
                        two_b, ones = _csa(ones, words[at + 2 * s], words[at + 3 * s])
                        four_a, twos = _csa(twos, two_a, two_b)
                        two_a, ones = _csa(ones, words[at + 4 * s], words[at + 5 * s])
                        two_b, ones = _csa(ones, words[at + 6 * s], words[at + 7 * s])
                        four_b, twos = _csa(twos, two_a, two_b)
                        eight_a, fours = _csa(fours, four_a, four_b)
                        two_a, ones = _csa(ones, words[at + 8 * s], words[at + 9 * s])
                        two_b, ones = _csa(ones, words[at + 10 * s], words[at + 11 * s])
                        four_a, twos = _csa(twos, two_a, two_b)
                        two_a, ones = _csa(ones, words[at + 12 * s], words[at + 13 * s])
                        two_b, ones = _csa(ones, words[at + 14 * s], words[at + 15 * s])
                        four_b, twos = _csa(twos, two_a, two_b)
                        eight_b, fours = _csa(fours, four_a, four_b)
                        sixteens, eights = _csa(eights, eight_a, eight_b)
                        sliced[0, w] = ones
                        sliced[1, w] = twos
                        sliced[2, w] = fours
                        sliced[3, w] = eights
                        nibbles[0, w] += sixteens & nib_mask
                        nibbles[1, w] += (sixteens >> one) & nib_mask
                        nibbles[2, w] += (sixteens >> np.uint64(2)) & nib_mask
                        nibbles[3, w] += (sixteens >> np.uint64(3)) & nib_mask
                _nibbles_to_lanes(nibbles, lanes, width)
            _spread_lanes(lanes, width, w0, n_bytes, counts, 16)
            b0 = b1
        # the last groups (fewer than 16), one nibble round
        nibbles[:, :] = 0
        for g in range(16 * n_blocks, n_groups):
            base = g * s + w0
            for b in range(4):
                shift = np.uint64(b)
                for w in range(width):
                    nibbles[b, w] += (words[base + w] >> shift) & nib_mask
        lanes[:, :] = 0
        _nibbles_to_lanes(nibbles, lanes, width)
        _spread_lanes(lanes, width, w0, n_bytes, counts, 1)
        # the bit-sliced remainders, weights 1, 2, 4, 8
        for w in range(width):
            for i in range(64):
                c = np.int64(0)
                for level in range(4):
                    c += np.int64((sliced[level, w] >> np.uint64(i)) & one) << level
                if c:
                    p = (8 * (w0 + w) + i // 8) % n_bytes
                    counts[8 * p + i % 8] += c


def _byte_column_counts(rows, counts):  # pragma: no cover - numba
    """``counts[8 p + b]`` += rows whose byte p has bit b set, byte by byte."""
    for i in range(rows.shape[0]):
        for p in range(rows.shape[1]):
            v = rows[i, p]
            for b in range(8):
                counts[8 * p + b] += (v >> b) & 1


def _masked_row_counts(rows, positions, masks, out):  # pragma: no cover - numba
    """``out[i]`` = set bits of row i within ``masks`` at byte ``positions``."""
    for i in range(rows.shape[0]):
        total = 0
        for at in range(positions.size):
            total += _POPCOUNT8[rows[i, positions[at]] & masks[at]]
        out[i] = total


def _fill_csr(rows, indptr, indices):  # pragma: no cover - numba
    """Column indices of the set bits of each row, at ``indptr``."""
    for i in range(rows.shape[0]):
        at = indptr[i]
        for p in range(rows.shape[1]):
            v = np.int64(rows[i, p])
            while v:
                low = v & -v
                # the bit's index: low is a power of two below 256
                t = 0
                while (1 << t) != low:
                    t += 1
                indices[at] = 8 * p + t
                at += 1
                v ^= low


if numba is not None:
    _csa = numba.njit(nogil=True, cache=True, inline="always")(_csa)
    _spread_lanes = numba.njit(nogil=True, cache=True)(_spread_lanes)
    _nibbles_to_lanes = numba.njit(nogil=True, cache=True)(_nibbles_to_lanes)
    _word_column_counts = numba.njit(nogil=True, cache=True)(_word_column_counts)
    _byte_column_counts = numba.njit(nogil=True, cache=True)(_byte_column_counts)
    _masked_row_counts = numba.njit(nogil=True, cache=True)(_masked_row_counts)
    _fill_csr = numba.njit(nogil=True, cache=True)(_fill_csr)


def _check_rows(rows):
    rows = np.asarray(rows)
    if rows.ndim != 2 or rows.dtype != np.uint8:
        raise TypeError("packed rows are a 2-D uint8 array")
    return np.ascontiguousarray(rows)


def column_counts(rows: np.ndarray, n_jobs: int | None = None) -> np.ndarray:
    """How many rows set each bit: int64 of shape ``(8 * n_bytes,)``.

    Index ``j`` counts bit j of the packed layout, padding bits included
    (so a caller checks that those are zero).

    Parameters
    ----------
    rows : ndarray of uint8 of shape (n, n_bytes)
    n_jobs : int or None, default=None
        Threads (the compiled loop releases the GIL); ``None``: all cores
        unless a ``joblib.parallel_config`` context sets ``n_jobs``.

    Returns
    -------
    counts : ndarray of int64 of shape (8 * n_bytes,)
    """
    rows = _check_rows(rows)
    n, n_bytes = rows.shape
    counts = np.zeros(8 * n_bytes, dtype=np.int64)
    if n == 0 or n_bytes == 0:
        return counts
    if _KERNEL != "numba" or not use_compiled(rows.size // 8):
        step = max(1, _NUMPY_CELLS // (8 * n_bytes))
        for lo in range(0, n, step):
            bits = np.unpackbits(rows[lo : lo + step], axis=1, bitorder="little")
            counts += bits.sum(axis=0, dtype=np.int64)
        return counts
    # First row whose address is a multiple of 8 (then every 8th row is):
    # the groups of 8 rows from there are whole, aligned words.
    address = rows.__array_interface__["data"][0]
    start = next((r for r in range(min(8, n)) if (address + r * n_bytes) % 8 == 0), n)
    n_groups = (n - start) // 8 if start < n else 0
    stop = start + 8 * n_groups
    if start:
        _byte_column_counts(rows[:start], counts)
    if stop < n:
        _byte_column_counts(rows[stop:], counts)
    if n_groups:
        words = rows[start:stop].reshape(-1).view(np.uint64)
        parts = _split_groups(n_groups, n_groups * 8 * n_bytes, n_jobs)
        partial = map_threads(
            lambda bounds: _counts_of_groups(words, n_bytes, *bounds), parts, n_jobs
        )
        for part in partial:
            counts += part
    return counts


def _split_groups(n_groups, n_bytes_total, n_jobs):
    from ._threads import n_threads

    parts = min(n_threads(n_jobs), max(1, n_bytes_total // _THREAD_BYTES), n_groups)
    bounds = np.linspace(0, n_groups, parts + 1).astype(np.int64)
    return [(int(bounds[i]), int(bounds[i + 1])) for i in range(parts)]


def _counts_of_groups(words, n_bytes, g0, g1):
    counts = np.zeros(8 * n_bytes, dtype=np.int64)
    _word_column_counts(words[g0 * n_bytes : g1 * n_bytes], n_bytes, g1 - g0, counts)
    return counts


def masked_row_counts(rows: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Set bits of each row within ``mask``.

    Parameters
    ----------
    rows : ndarray of uint8 of shape (n, n_bytes)
    mask : ndarray of uint8 of shape (n_bytes,)
        The packed bits to count (e.g. the non-sensitive categories).

    Returns
    -------
    counts : ndarray of int64 of shape (n,)
    """
    rows = _check_rows(rows)
    mask = np.asarray(mask, dtype=np.uint8)
    positions = np.flatnonzero(mask)
    out = np.zeros(rows.shape[0], dtype=np.int64)
    if not positions.size or not rows.shape[0]:
        return out
    if _KERNEL == "numba" and use_compiled(rows.shape[0] * positions.size // 64):
        _masked_row_counts(rows, positions.astype(np.int64), mask[positions], out)
        return out
    step = max(1, _NUMPY_CELLS // max(1, positions.size))
    for lo in range(0, rows.shape[0], step):
        block = rows[lo : lo + step][:, positions] & mask[positions]
        out[lo : lo + step] = _POPCOUNT8[block].sum(axis=1, dtype=np.int64)
    return out


def packed_to_csr(rows: np.ndarray, n_bits: int) -> tuple[np.ndarray, np.ndarray]:
    """CSR ``(indptr, indices)`` (int64, sorted by row then column) of packed rows."""
    rows = _check_rows(rows)
    full = np.full(rows.shape[1], 255, dtype=np.uint8)
    sizes = masked_row_counts(rows, full)
    indptr = np.zeros(rows.shape[0] + 1, dtype=np.int64)
    np.cumsum(sizes, out=indptr[1:])
    if _KERNEL == "numba" and use_compiled(rows.size // 8):
        indices = np.empty(int(indptr[-1]), dtype=np.int64)
        _fill_csr(rows, indptr, indices)
        return indptr, indices
    parts = []
    step = max(1, _NUMPY_CELLS // max(1, 8 * rows.shape[1]))
    for lo in range(0, rows.shape[0], step):
        bits = unpack_rows(rows[lo : lo + step], 8 * rows.shape[1])
        parts.append(np.flatnonzero(bits) % bits.shape[1])
    indices = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
    return indptr, indices.astype(np.int64)


# ---------------------------------------------------------------- sampling
def _bernoulli_words(out, words, levels, ties, fraction, mask, codes, own, start):
    """Rows of Bernoulli cells from random words, packed (compiled by numba).

    Each cell has a random byte B whose 8 binary digits, most significant
    first, are the cell's bits in the 8 words ``words[i, 8 w : 8 w + 8]``
    of its row i and output word w. A cell is 1 when B < T, 0 when B > T
    and, on a tie B == T, when the next uniform of ``ties`` is below
    ``fraction``: exactly :func:`~sklearn_uldp.utils._sampling.bernoulli_matrix`'s
    law, for 64 cells at once. ``levels[j]`` is all ones when digit j of T
    is 1, else 0: bit-sliced, the comparison decides a cell at the first
    digit where B and T differ (1 when T's digit is the 1), and the cells
    still undecided after 8 digits are the ties.

    Then the row is ANDed with ``mask`` (when not empty) and the bit of
    ``codes[i]`` is set to ``own[i]`` (when ``codes`` is not empty).
    Returns the first row not done: a row that runs out of tie uniforms is
    left for a new call from that row with fresh uniforms (the same words).
    """
    n_rows, n_bytes = out.shape
    n_words = (n_bytes + 7) // 8
    byte = np.uint64(255)
    n_ties = ties.size
    masked = mask.size > 0
    with_own = codes.size > 0
    pos = 0
    for i in range(start, n_rows):
        row = out[i]
        draws = words[i]
        for w in range(n_words):
            res = np.uint64(0)
            undecided = ~np.uint64(0)
            for j in range(8):
                u = draws[8 * w + j]
                t = levels[j]
                res |= undecided & ~u & t
                undecided &= ~(u ^ t)
            while undecided:
                low = undecided & (~undecided + np.uint64(1))
                if pos == n_ties:
                    return i
                if ties[pos] < fraction:
                    res |= low
                pos += 1
                undecided ^= low
            for t in range(min(8, n_bytes - 8 * w)):
                row[8 * w + t] = np.uint8((res >> np.uint64(8 * t)) & byte)
        if masked:
            for p in range(n_bytes):
                row[p] &= mask[p]
        if with_own:
            c = codes[i]
            bit = np.uint8(1 << (c & 7))
            if own[i]:
                row[c >> 3] |= bit
            else:
                row[c >> 3] &= ~bit
    return n_rows


def _set_positions(out, positions, s, s_codes):  # pragma: no cover - numba
    """Set the bit of each stream position (row ``pos // s``, sensitive column
    ``s_codes[pos % s]``; ``s_codes`` empty: column ``pos % s``)."""
    mapped = s_codes.size > 0
    for at in range(positions.size):
        pos = positions[at]
        r = pos // s
        c = pos - r * s
        if mapped:
            c = s_codes[c]
        out[r, c >> 3] |= np.uint8(1 << (c & 7))


if numba is not None:
    _bernoulli_words = numba.njit(nogil=True, cache=True)(_bernoulli_words)
    _set_positions = numba.njit(nogil=True, cache=True)(_set_positions)

_NO_CODES = np.zeros(0, dtype=np.int64)
_NO_MASK = np.zeros(0, dtype=np.uint8)
# Rows per call of the compiled sampler: its random words (8 bytes a cell)
# stay within about 2 MB.
_SAMPLER_WORDS = 1 << 18


def bernoulli_packed(out, q, rng, *, mask=None, codes=None, own=None):
    """Fill packed rows with i.i.d. Bernoulli(q) bits (then mask and own bits).

    Every cell follows the law of
    :func:`~sklearn_uldp.utils._sampling.bernoulli_matrix` -- one random
    byte B, 1 if B < floor(256 q), and on a tie a float64 uniform below
    256 q - floor(256 q) -- so P(1) is the same realized probability. With
    numba, 64 cells are decided at once by bit-sliced comparison of their
    bytes with floor(256 q) (see :func:`_bernoulli_words`) and written
    straight into the packed rows: no byte per cell is ever stored. Without
    numba, rows are drawn by ``bernoulli_matrix`` in chunks and packed.

    Parameters
    ----------
    out : ndarray of uint8 of shape (m, n_bytes)
        C-contiguous packed rows, overwritten (padding bits included: pass
        ``mask`` to clear them).
    q : float in [0, 1]
    rng : numpy.random.Generator
    mask : ndarray of uint8 of shape (n_bytes,) or None
        ANDed with every row (the columns that may be set, padding cleared).
    codes, own : ndarray of shape (m,) or None
        Then the bit ``codes[i]`` of row i is set to ``own[i]``.
    """
    from ._sampling import bernoulli_matrix

    m, n_bytes = out.shape
    codes = _NO_CODES if codes is None else np.asarray(codes, dtype=np.int64)
    own_bits = np.zeros(0, dtype=np.uint8) if own is None else np.asarray(own).view(np.uint8)
    mask = _NO_MASK if mask is None else np.asarray(mask, dtype=np.uint8)
    if m == 0:
        return out
    # (Not by size, as the other loops here: the compiled sampler draws other
    # random words than the numpy one, and the path must not change a seeded
    # output.)
    if q <= 0.0 or q >= 1.0 or _KERNEL != "numba":
        step = max(1, _NUMPY_CELLS // (8 * n_bytes))
        for lo in range(0, m, step):
            hi = min(m, lo + step)
            bits = bernoulli_matrix((hi - lo, 8 * n_bytes), q, rng).view(np.uint8)
            out[lo:hi] = pack_rows(bits)
        if mask.size:
            out &= mask
        if codes.size:
            write_own_bits(out, codes, own_bits)
        return out
    scaled = q * 256.0
    threshold = int(np.floor(scaled))
    fraction = scaled - threshold
    levels = np.array(
        [0xFFFFFFFFFFFFFFFF if (threshold >> (7 - j)) & 1 else 0 for j in range(8)],
        dtype=np.uint64,
    )
    row_words = 8 * -(-n_bytes // 8)
    step = max(1, _SAMPLER_WORDS // row_words)
    for lo in range(0, m, step):
        hi = min(m, lo + step)
        words = rng.bit_generator.random_raw((hi - lo) * row_words).reshape(hi - lo, row_words)
        done = 0
        while done < hi - lo:
            # A tie has probability 1/256: spares for 6 sigma more. A row
            # that runs out is redone from its own words with fresh
            # uniforms, which are independent of the words: every cell
            # keeps its exact law.
            mean = (hi - lo - done) * 8 * n_bytes / 256.0
            ties = rng.random(int(mean + 6.0 * np.sqrt(mean)) + 64)
            done = _bernoulli_words(
                out[lo:hi],
                words,
                levels,
                ties,
                fraction,
                mask,
                codes[lo:hi] if codes.size else codes,
                own_bits[lo:hi] if codes.size else own_bits,
                done,
            )
    return out


def set_packed_bits(out, positions, s, s_codes=None):
    """Set the bits of stream positions in packed rows.

    Position ``pos`` of a stream of ``s`` cells per row is row ``pos // s``
    and column ``s_codes[pos % s]`` (``pos % s`` when ``s_codes`` is None).
    """
    positions = np.asarray(positions, dtype=np.int64)
    mapped = _NO_CODES if s_codes is None else np.asarray(s_codes, dtype=np.int64)
    if _KERNEL == "numba" and use_compiled(positions.size):
        _set_positions(out, positions, int(s), mapped)
        return
    rows, cols = np.divmod(positions, int(s))
    if mapped.size:
        cols = mapped[cols]
    flat = out.reshape(-1)
    np.bitwise_or.at(
        flat, rows * out.shape[1] + (cols >> 3), np.left_shift(1, cols & 7).astype(np.uint8)
    )


def write_own_bits(out, codes, own):
    """Set bit ``codes[i]`` of packed row i to ``own[i]`` (0/1), for every row."""
    codes = np.asarray(codes, dtype=np.int64)
    flat = out.reshape(-1)
    index = np.arange(codes.size, dtype=np.int64) * out.shape[1] + (codes >> 3)
    bit = np.left_shift(1, codes & 7).astype(np.uint8)
    current = flat[index]
    current &= ~bit
    current |= bit * np.asarray(own, dtype=np.uint8)
    flat[index] = current
