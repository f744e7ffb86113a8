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
    """One ChaCha quarter round on a group of lanes (numba). Every step is
    cast to uint32 (wrapping arithmetic), which keeps the lanes in 32-bit
    vector registers."""
    for lane in range(a.size):
        a[lane] = np.uint32(a[lane] + b[lane])
        v = np.uint32(d[lane] ^ a[lane])
        d[lane] = (v << np.uint32(16)) | (v >> np.uint32(16))
        c[lane] = np.uint32(c[lane] + d[lane])
        v = np.uint32(b[lane] ^ c[lane])
        b[lane] = (v << np.uint32(12)) | (v >> np.uint32(20))
        a[lane] = np.uint32(a[lane] + b[lane])
        v = np.uint32(d[lane] ^ a[lane])
        d[lane] = (v << np.uint32(8)) | (v >> np.uint32(24))
        c[lane] = np.uint32(c[lane] + d[lane])
        v = np.uint32(b[lane] ^ c[lane])
        b[lane] = (v << np.uint32(7)) | (v >> np.uint32(25))


def _rounds_kernel(x):  # pragma: no cover - compiled by numba
    """20 ChaCha rounds on a (16, lanes) uint32 state (numba): the rows are
    the state words, so every quarter round is a loop over lanes."""
    for _ in range(10):
        _quarter_kernel(x[0], x[4], x[8], x[12])
        _quarter_kernel(x[1], x[5], x[9], x[13])
        _quarter_kernel(x[2], x[6], x[10], x[14])
        _quarter_kernel(x[3], x[7], x[11], x[15])
        _quarter_kernel(x[0], x[5], x[10], x[15])
        _quarter_kernel(x[1], x[6], x[11], x[12])
        _quarter_kernel(x[2], x[7], x[8], x[13])
        _quarter_kernel(x[3], x[4], x[9], x[14])


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


def _cells_kernel(
    keys, ctx, values, n_blocks, sigma, thr, live, frac, marked, thr_m, live_m, frac_m, out, pending
):  # pragma: no cover - compiled by numba
    """The cells of :func:`prf_bernoulli` in one pass over the keystream (numba).

    For each group of ``_KERNEL_LANES`` users: their keystream blocks (as
    :func:`_stream_kernel` computes them) go to a small buffer that stays
    in L1 cache, and each user's cells are read off it at once -- the
    thresholds, the ties resolved by the words after the cells, the marked
    cells -- so the keystream never goes to memory. Exactly the rules of
    :func:`prf_bernoulli` (and the result of the numpy pass). A tie whose
    word lies beyond the drawn blocks is listed in ``pending`` as (row,
    word position, column, probability's fraction) for the caller; returns
    their number (listed up to the capacity of ``pending``).
    """
    n, m = out.shape
    h = marked.shape[1]
    lanes = 32
    per_row = thr.shape[0] > 1
    n_words = 8 * n_blocks  # 64-bit words drawn per user
    w0 = (m + 7) // 8  # the first word after the cells' bytes
    capacity = pending.shape[0]
    count = 0
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
            hit = np.uint8(0)
            for j in range(m):  # one vectorized pass: the cells and where ties are
                byte = np.uint16(cells[j])
                t = thr[r, j]
                out[i, j] = byte < t
                tie = np.uint8(byte == t) & np.uint8(live[r, j])
                ties[j] = tie
                hit |= tie
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
                            out[i, j] = np.float64(word >> np.uint64(11)) * scale < frac[r, j]
                        else:
                            if count < capacity:
                                pending[count, 0] = i
                                pending[count, 1] = pos
                                pending[count, 2] = j
                                pending[count, 3] = -1
                            count += 1
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
                        out[i, j] = np.float64(word >> np.uint64(11)) * scale < frac_m[i, c]
                    else:
                        if count < capacity:
                            pending[count, 0] = i
                            pending[count, 1] = pos
                            pending[count, 2] = j
                            pending[count, 3] = c
                        count += 1
    return count


if numba is not None:
    # The quarter rounds are inlined into the rounds (one vector loop each);
    # the rounds (and a group's set-up) are compiled functions that the
    # kernels call once per block of 32 users (inlining them too would
    # double the compile time).
    _quarter_kernel = numba.njit(nogil=True, cache=True, inline="always")(_quarter_kernel)
    _rounds_kernel = numba.njit(nogil=True, cache=True)(_rounds_kernel)
    _group_state_kernel = numba.njit(nogil=True, cache=True)(_group_state_kernel)
    _stream_kernel = numba.njit(nogil=True, cache=True)(_stream_kernel)
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
