"""The XChaCha20 keystream of the per-user PRF, for a batch of users at once.

ChaCha20 (RFC 8439) with the 192-bit nonce of draft-irtf-cfrg-xchacha,
evaluated by a compiled kernel (numba, several users per vector register) or,
without numba or for small batches, by the same rounds vectorized with numpy
over the users; both give the same words and are checked against the
published test vectors. :mod:`sklearn_uldp.utils._secrets` builds the PRF's
draws (uniforms, integers, Bernoulli cells) on these words; the compiled
kernels that turn the keystream straight into Bernoulli cells live here too,
beside the rounds they inline.

References
----------
Nir & Langley, "ChaCha20 and Poly1305 for IETF Protocols", RFC 8439, 2018.
Arciszewski, "XChaCha: eXtended-nonce ChaCha and AEAD_XChaCha20_Poly1305",
draft-irtf-cfrg-xchacha-03, 2020.
"""

from __future__ import annotations

import sys

import numpy as np

from ._numba import numba, use_compiled  # compiled kernels (same output as the numpy rounds)

#: The compiled kernels read the keystream's bytes in memory order, which is
#: the little-endian order the PRF is defined in on little-endian machines.
_LITTLE_ENDIAN = sys.byteorder == "little"
_MASK32 = np.uint64(0xFFFFFFFF)
# "expand 32-byte k", the ChaCha constants (RFC 8439 §2.3).
_SIGMA = np.array([0x61707865, 0x3320646E, 0x79622D32, 0x6B206574], dtype=np.uint32)
# Users per chunk of the numpy rounds (16 state words of uint32 each: ~4 MB).
_NUMPY_LANES = 1 << 16
# Users per group of the compiled kernel (its inner loops run over them, so
# that the compiler keeps a group's state in vector registers).
_KERNEL_LANES = 32


# ---------------------------------------------------------------- the rounds
# The 8 quarter rounds of a ChaCha double round, as (a, b, c, d) word indices.
_QUARTERS = (
    (0, 4, 8, 12),
    (1, 5, 9, 13),
    (2, 6, 10, 14),
    (3, 7, 11, 15),
    (0, 5, 10, 15),
    (1, 6, 11, 12),
    (2, 7, 8, 13),
    (3, 4, 9, 14),
)


def _rounds_numpy(x):
    """20 ChaCha rounds on a (16, m) uint32 state, in place (numpy arithmetic
    on uint32 wraps modulo 2**32, and shifts drop the carried-out bits)."""
    t = np.empty_like(x[0])
    for _ in range(10):
        for a, b, c, d in _QUARTERS:
            for p, q, r, s in ((a, b, d, 16), (c, d, b, 12), (a, b, d, 8), (c, d, b, 7)):
                # p += q; r ^= p; r <<<= s
                x[p] += x[q]
                x[r] ^= x[p]
                np.left_shift(x[r], s, out=t)
                x[r] >>= 32 - s
                x[r] |= t


def _stream_numpy(keys, ctx, values, first_blocks, n_blocks):
    """Keystream words (n, 16 * n_blocks) uint32 of XChaCha20, numpy rounds."""
    n = keys.shape[0]
    out = np.empty((n, 16 * n_blocks), dtype=np.uint32)
    for lo in range(0, n, _NUMPY_LANES):
        hi = min(n, lo + _NUMPY_LANES)
        m = hi - lo
        x = np.empty((16, m), dtype=np.uint32)
        x[0:4] = _SIGMA[:, None]
        x[4:12] = keys[lo:hi].T
        x[12:16] = ctx[:, None]
        _rounds_numpy(x)  # HChaCha20: no feed-forward
        sub = np.concatenate([x[0:4], x[12:16]])
        state = np.empty((16, m), dtype=np.uint32)
        state[0:4] = _SIGMA[:, None]
        state[4:12] = sub
        state[13] = 0
        state[14] = values[lo:hi, 0]
        state[15] = values[lo:hi, 1]
        for b in range(n_blocks):
            state[12] = first_blocks[lo:hi] + np.uint32(b)
            x = state.copy()
            _rounds_numpy(x)
            x += state
            out[lo:hi, 16 * b : 16 * (b + 1)] = x.T
    return out


def _quarter_kernel(a, b, c, d):  # pragma: no cover - compiled by numba
    """One ChaCha quarter round on four words (numba, inlined). Every step
    is cast to uint32 (wrapping arithmetic)."""
    a = np.uint32(a + b)
    v = np.uint32(d ^ a)
    d = np.uint32((v << np.uint32(16)) | (v >> np.uint32(16)))
    c = np.uint32(c + d)
    v = np.uint32(b ^ c)
    b = np.uint32((v << np.uint32(12)) | (v >> np.uint32(20)))
    a = np.uint32(a + b)
    v = np.uint32(d ^ a)
    d = np.uint32((v << np.uint32(8)) | (v >> np.uint32(24)))
    c = np.uint32(c + d)
    v = np.uint32(b ^ c)
    b = np.uint32((v << np.uint32(7)) | (v >> np.uint32(25)))
    return a, b, c, d


def _rounds_kernel(x):  # pragma: no cover - compiled by numba
    """20 ChaCha rounds on a (16, lanes) uint32 state (numba): the rows are
    the state words. Each double round is one loop over the lanes whose
    body holds a lane's 16 words in locals: the compiler keeps them in
    vector registers (a register a word, several lanes a register) for the
    8 quarter rounds, which halves the time of a quarter round per loop
    over the lanes (each loading and storing its four words)."""
    for _ in range(10):
        for lane in range(x.shape[1]):
            x0, x1, x2, x3 = x[0, lane], x[1, lane], x[2, lane], x[3, lane]
            x4, x5, x6, x7 = x[4, lane], x[5, lane], x[6, lane], x[7, lane]
            x8, x9, x10, x11 = x[8, lane], x[9, lane], x[10, lane], x[11, lane]
            x12, x13, x14, x15 = x[12, lane], x[13, lane], x[14, lane], x[15, lane]
            x0, x4, x8, x12 = _quarter_kernel(x0, x4, x8, x12)
            x1, x5, x9, x13 = _quarter_kernel(x1, x5, x9, x13)
            x2, x6, x10, x14 = _quarter_kernel(x2, x6, x10, x14)
            x3, x7, x11, x15 = _quarter_kernel(x3, x7, x11, x15)
            x0, x5, x10, x15 = _quarter_kernel(x0, x5, x10, x15)
            x1, x6, x11, x12 = _quarter_kernel(x1, x6, x11, x12)
            x2, x7, x8, x13 = _quarter_kernel(x2, x7, x8, x13)
            x3, x4, x9, x14 = _quarter_kernel(x3, x4, x9, x14)
            x[0, lane], x[1, lane], x[2, lane], x[3, lane] = x0, x1, x2, x3
            x[4, lane], x[5, lane], x[6, lane], x[7, lane] = x4, x5, x6, x7
            x[8, lane], x[9, lane], x[10, lane], x[11, lane] = x8, x9, x10, x11
            x[12, lane], x[13, lane], x[14, lane], x[15, lane] = x12, x13, x14, x15


def _group_state_kernel(keys, ctx, values, sigma, g, m, rows, x, state):  # pragma: no cover
    """The XChaCha20 states of the users ``g .. g + m - 1``, one per lane (numba).

    Fills ``rows`` (each lane's user; spare lanes repeat the last one) and
    ``state`` (but the block counter, word 12): the HChaCha20 subkey of
    each user's key and context, the nonce's last words from ``values``.
    ``x`` is scratch.
    """
    lanes = x.shape[1]
    for lane in range(lanes):
        rows[lane] = g + min(lane, m - 1)  # spare lanes repeat the last user
    for w in range(4):
        for lane in range(lanes):
            x[w, lane] = sigma[w]
            x[12 + w, lane] = ctx[w]
    for w in range(8):
        for lane in range(lanes):
            x[4 + w, lane] = keys[rows[lane], w]
    _rounds_kernel(x)  # HChaCha20: the subkey, no feed-forward
    for w in range(4):
        for lane in range(lanes):
            state[w, lane] = sigma[w]
            state[4 + w, lane] = x[w, lane]
            state[8 + w, lane] = x[12 + w, lane]
    for lane in range(lanes):
        state[13, lane] = 0
        state[14, lane] = values[rows[lane], 0]
        state[15, lane] = values[rows[lane], 1]


def _stream_kernel(keys, ctx, values, first_blocks, n_blocks, sigma, out):  # pragma: no cover
    """Keystream words of XChaCha20 into ``out`` (n, 16 * n_blocks), numba.

    Users are processed in groups of ``_KERNEL_LANES``: the group's states
    sit side by side, so the inner loops of the rounds run over users.
    """
    n = keys.shape[0]
    lanes = 32
    x = np.empty((16, lanes), np.uint32)
    state = np.empty((16, lanes), np.uint32)
    rows = np.empty(lanes, np.int64)
    for g in range(0, n, lanes):
        m = min(lanes, n - g)
        _group_state_kernel(keys, ctx, values, sigma, g, m, rows, x, state)
        for b in range(n_blocks):
            for lane in range(lanes):
                state[12, lane] = first_blocks[rows[lane]] + b
            for w in range(16):
                for lane in range(lanes):
                    x[w, lane] = state[w, lane]
            _rounds_kernel(x)
            for w in range(16):
                for lane in range(lanes):
                    x[w, lane] = np.uint32(x[w, lane] + state[w, lane])
            for lane in range(m):
                for w in range(16):
                    out[g + lane, 16 * b + w] = x[w, lane]


def _threshold_kernel(raw, thr, live, out, tie_rows, tie_cols):  # pragma: no cover
    """Cells ``raw < threshold`` (numba), listing the ties a uniform resolves.

    ``thr`` and ``live`` have one row, or one per user. Returns the number
    of ties (listed in row-major order up to the capacity of ``tie_rows``).
    """
    n, m = out.shape
    per_row = thr.shape[0] > 1
    capacity = tie_rows.size
    count = 0
    for i in range(n):
        r = i if per_row else 0
        for j in range(m):
            out[i, j] = raw[i, j] < thr[r, j]
        for j in range(m):
            if raw[i, j] == thr[r, j] and live[r, j]:
                if count < capacity:
                    tie_rows[count] = i
                    tie_cols[count] = j
                count += 1
    return count


def _word_beyond(state, lane, pos, st1, x1):  # pragma: no cover - compiled by numba
    """64-bit word ``pos`` of the stream of one lane of a group's ``state``,
    from its own block (numba): the words a tie reads past the drawn blocks.
    ``st1`` and ``x1`` are (16, 1) scratch (the rounds on one lane)."""
    for w in range(16):
        st1[w, 0] = state[w, lane]
    st1[12, 0] = np.uint32(pos // 8)
    for w in range(16):
        x1[w, 0] = st1[w, 0]
    _rounds_kernel(x1)
    k = 2 * (pos % 8)
    lo = np.uint32(x1[k, 0] + st1[k, 0])
    hi = np.uint32(x1[k + 1, 0] + st1[k + 1, 0])
    return (np.uint64(hi) << np.uint64(32)) | np.uint64(lo)


def _flip_cells(
    cells, flip_bytes, offset, t0, t1, l0, l1, flags, flip_ties, count
):  # pragma: no cover - compiled by numba
    """Flip each 0/1 cell c when its byte is below ``t_c`` (numba).

    ``t0``, ``t1`` are uint16 thresholds (0..256), ``l0``, ``l1`` uint8
    flags. A byte equal to ``t_c`` where ``l_c`` (a fraction to decide)
    leaves the cell as it is and is listed in ``flip_ties`` as ``2 *
    (offset + j) + c`` (in order, up to its capacity); returns ``count``
    plus their number. A function of its own, called on a group's
    contiguous cells: its first loop compiles to one vectorized pass in
    16-bit lanes (selects on the cell, no arithmetic that numba would widen
    to 64 bits: four times the speed), the ties found from ``flags`` eight
    at a time.
    """
    n = cells.size
    capacity = flip_ties.size
    for j in range(n):
        c = cells[j]
        fb = np.uint16(flip_bytes[j])
        ft = t1 if c else t0
        cells[j] = c ^ np.uint8(fb < ft)
        flags[j] = np.uint8(fb == ft) & (l1 if c else l0)
    words = flags.view(np.uint64)
    for w in range((n + 7) // 8):
        if words[w] == 0:
            continue
        for j in range(8 * w, min(n, 8 * w + 8)):
            if flags[j]:
                if count < capacity:
                    flip_ties[count] = 2 * (offset + j) + np.int64(cells[j])
                count += 1
    return count


def _cells_kernel(
    keys,
    ctx,
    values,
    n_blocks,
    sigma,
    thr,
    live,
    frac,
    marked,
    thr_m,
    live_m,
    frac_m,
    out,
    flip_bytes,
    flip_thr,
    flip_live,
    flip_ties,
):  # pragma: no cover - compiled by numba
    """The cells of :func:`prf_bernoulli` in one pass over the keystream (numba).

    For each group of ``_KERNEL_LANES`` users: their keystream blocks (as
    :func:`_stream_kernel` computes them) go to a small buffer that stays
    in L1 cache, and each user's cells are read off it at once -- the
    thresholds, the ties resolved by the words after the cells, the marked
    cells -- so the keystream never goes to memory. Exactly the rules of
    :func:`prf_bernoulli` (and the result of the numpy pass). A tie whose
    word lies beyond the drawn blocks reads it from its own block
    (:func:`_word_beyond`, one tie in many hundreds).

    With ``flip_bytes`` (one random byte per cell, row-major; empty for
    none), each group's finished cells are then flipped by
    :func:`_flip_cells` with the thresholds ``flip_thr`` of a 0 and a 1 cell
    (a tie of a ``flip_live`` threshold listed in ``flip_ties``). Returns the
    number of those ties (listed up to the capacity of ``flip_ties``).
    """
    n, m = out.shape
    h = marked.shape[1]
    lanes = 32
    per_row = thr.shape[0] > 1
    n_words = 8 * n_blocks  # 64-bit words drawn per user
    w0 = (m + 7) // 8  # the first word after the cells' bytes
    flipping = flip_bytes.size > 0
    f0, f1 = np.uint16(flip_thr[0]), np.uint16(flip_thr[1])
    l0, l1 = np.uint8(flip_live[0]), np.uint8(flip_live[1])
    count = 0
    st1 = np.empty((16, 1), np.uint32)
    flags = np.zeros(8 * ((lanes * m + 7) // 8), np.uint8)
    x1 = np.empty((16, 1), np.uint32)
    x = np.empty((16, lanes), np.uint32)
    state = np.empty((16, lanes), np.uint32)
    rows = np.empty(lanes, np.int64)
    buf = np.empty((lanes, 16 * n_blocks), np.uint32)
    buf8 = buf.view(np.uint8)
    ties = np.zeros(8 * ((m + 7) // 8), np.uint8)  # padded: read 8 columns at a time
    ties64 = ties.view(np.uint64)
    scale = 2.0**-53
    for g in range(0, n, lanes):
        gm = min(lanes, n - g)
        _group_state_kernel(keys, ctx, values, sigma, g, gm, rows, x, state)
        for b in range(n_blocks):
            for lane in range(lanes):
                state[12, lane] = b
            for w in range(16):
                for lane in range(lanes):
                    x[w, lane] = state[w, lane]
            _rounds_kernel(x)
            for lane in range(gm):
                for w in range(16):
                    buf[lane, 16 * b + w] = np.uint32(x[w, lane] + state[w, lane])
        for lane in range(gm):
            i = g + lane
            r = i if per_row else 0
            cells = buf8[lane]
            out_row, thr_row, live_row = out[i], thr[r], live[r]
            # One vectorized pass in 16-bit lanes: the cells and where ties
            # are. Rows as 1-D views and no reduction in the loop (an OR of
            # the ties there was widened to 64-bit lanes): the ties' words
            # are checked after, 8 columns at a time.
            for j in range(m):
                byte = np.uint16(cells[j])
                t = thr_row[j]
                out_row[j] = byte < t
                ties[j] = np.uint8(byte == t) & np.uint8(live_row[j])
            hit = False
            for block in range(ties64.size):
                if ties64[block] != 0:
                    hit = True
                    break
            if hit:  # ties (one cell in 256): the t-th unmarked one reads word w0 + t
                for c in range(h):
                    ties[marked[i, c]] = 0
                rank = 0
                for block in range(ties64.size):  # 8 columns at a time
                    if ties64[block] == 0:
                        continue
                    for j in range(8 * block, min(m, 8 * block + 8)):
                        if not ties[j]:
                            continue
                        pos = w0 + rank
                        rank += 1
                        if pos < n_words:
                            word = (np.uint64(buf[lane, 2 * pos + 1]) << np.uint64(32)) | np.uint64(
                                buf[lane, 2 * pos]
                            )
                        else:
                            word = _word_beyond(state, lane, pos, st1, x1)
                        out[i, j] = np.float64(word >> np.uint64(11)) * scale < frac[r, j]
            for c in range(h):  # the marked cells, the c-th tie reading word w0 + m + c
                j = marked[i, c]
                byte = np.uint16(cells[j])
                t = thr_m[i, c]
                out[i, j] = byte < t
                if byte == t and live_m[i, c]:
                    pos = w0 + m + c
                    if pos < n_words:
                        word = (np.uint64(buf[lane, 2 * pos + 1]) << np.uint64(32)) | np.uint64(
                            buf[lane, 2 * pos]
                        )
                    else:
                        word = _word_beyond(state, lane, pos, st1, x1)
                    out[i, j] = np.float64(word >> np.uint64(11)) * scale < frac_m[i, c]
        if flipping:  # the group's flips, one vectorized pass
            count = _flip_cells(
                out[g : g + gm].reshape(-1),
                flip_bytes[g * m : (g + gm) * m],
                g * m,
                f0,
                f1,
                l0,
                l1,
                flags,
                flip_ties,
                count,
            )
    return count


if numba is not None:
    # The quarter rounds are inlined into the rounds (one vector loop a double round);
    # the rounds (and a group's set-up) are compiled functions that the
    # kernels call once per block of 32 users (inlining them too would
    # double the compile time).
    _quarter_kernel = numba.njit(nogil=True, cache=True, inline="always")(_quarter_kernel)
    _rounds_kernel = numba.njit(nogil=True, cache=True)(_rounds_kernel)
    _group_state_kernel = numba.njit(nogil=True, cache=True)(_group_state_kernel)
    _stream_kernel = numba.njit(nogil=True, cache=True)(_stream_kernel)
    _word_beyond = numba.njit(nogil=True, cache=True)(_word_beyond)
    _flip_cells = numba.njit(nogil=True, cache=True)(_flip_cells)
    _threshold_kernel = numba.njit(nogil=True, cache=True)(_threshold_kernel)
    _cells_kernel = numba.njit(nogil=True, cache=True)(_cells_kernel)


def _stream_work(n, n_blocks):
    """The work of ``n`` users' keystreams for ``use_compiled``: 4 a block
    (and the subkey's block). The numpy rounds take about 1.2 us a user and
    block; below ``COMPILE_MIN_WORK`` (32,768 users of one block) they cost
    less than compiling the kernels (several seconds), and give the same
    words."""
    return 4 * n * (n_blocks + 1)


def _keystream(keys, ctx, values, first_blocks, n_blocks, *, compiled=None):
    """(n, 16 * n_blocks) uint32 keystream words (compiled when available and
    the batch is large enough: :func:`_stream_work`)."""
    n = keys.shape[0]
    first_blocks = np.ascontiguousarray(first_blocks, dtype=np.uint32)
    if compiled is None:
        compiled = numba is not None and use_compiled(_stream_work(n, n_blocks))
    if not n or not n_blocks:
        return np.zeros((n, 16 * n_blocks), dtype=np.uint32)
    if compiled:
        out = np.empty((n, 16 * n_blocks), dtype=np.uint32)
        _stream_kernel(keys, ctx, values, first_blocks, int(n_blocks), _SIGMA, out)
        return out
    return _stream_numpy(keys, ctx, values, first_blocks, int(n_blocks))


def _le_words(data, count):
    """``count`` little-endian uint32 words of a bytes-like object."""
    return np.frombuffer(bytes(data), dtype="<u4", count=count).astype(np.uint32)


def _xchacha20_keystream(key, nonce, n_bytes, *, counter=0, compiled=None):
    """XChaCha20 keystream bytes for one (key, 24-byte nonce): the test hook.

    The published XChaCha20 construction: subkey = HChaCha20(key, nonce[:16]),
    then ChaCha20 with the subkey, the 96-bit nonce ``0^4 || nonce[16:]`` and
    the block counter from ``counter``.
    """
    keys = _le_words(key, 8)[None, :]
    ctx = _le_words(nonce[:16], 4)
    values = _le_words(nonce[16:24], 2)[None, :]
    n_blocks = -(-int(n_bytes) // 64)
    words = _keystream(keys, ctx, values, np.array([counter]), n_blocks, compiled=compiled)
    return words.astype("<u4").tobytes()[:n_bytes]


def _hchacha20(key, nonce16):
    """HChaCha20(key, 16-byte input) -> 32-byte subkey (test hook)."""
    x = np.empty((16, 1), dtype=np.uint32)
    x[0:4, 0] = _SIGMA
    x[4:12, 0] = _le_words(key, 8)
    x[12:16, 0] = _le_words(nonce16, 4)
    _rounds_numpy(x)
    return np.concatenate([x[0:4, 0], x[12:16, 0]]).astype("<u4").tobytes()


def _chacha20_block(key, counter, nonce12):
    """The RFC 8439 ChaCha20 block function (test hook, numpy rounds)."""
    state = np.empty((16, 1), dtype=np.uint32)
    state[0:4, 0] = _SIGMA
    state[4:12, 0] = _le_words(key, 8)
    state[12, 0] = counter
    state[13:16, 0] = _le_words(nonce12, 3)
    x = state.copy()
    _rounds_numpy(x)
    x += state
    return x[:, 0].astype("<u4").tobytes()


# -------------------------------------------------------------- the secrets
