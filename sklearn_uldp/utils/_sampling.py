"""Fast exact samplers used on the privatization hot path."""

import functools

import numpy as np
import scipy.sparse as sp

from ._numba import numba, use_compiled  # compiled passes; the same output in numpy

__all__ = [
    "bernoulli_matrix",
    "bernoulli_xor",
    "bernoulli_or_coin",
    "bernoulli_positions",
    "bernoulli_position_chunks",
    "randomized_response_codes",
    "narrow_code_dtype",
    "unary_sparse_rows",
]

# Users per pass of randomized_response_codes and gaps per batch of
# bernoulli_position_chunks: the temporaries of one pass (about 1 MB and 3 MB)
# stay in the L2 (or L3) cache, which makes the handful of elementwise passes
# much cheaper than streaming n-sized temporaries through memory, while the
# Python overhead per pass stays negligible. (Sizes tuned by measurement.)
_USER_CHUNK = 1 << 15
_GAP_BATCH = 1 << 17
_BYTE_BLOCK = 1 << 20  # cells per block of bernoulli_matrix
_PREFIX_ROWS = 32  # see _cumulative_positions
# Gaps are looked up from 16-bit uniforms (see _gap_table). The table leaves
# about 1.7e-4 / q of the draws to the exact fallback, so below this q the
# exponential path is used instead.
_TABLE_BITS = 16
_TABLE_MIN_Q = 1.0 / 512
# Rows per step of unary_sparse_rows: bounds its per-row temporaries when a
# chunk of positions spans many rows (small q times s).
_ROW_BATCH = 1 << 16
_INT32_MAX = np.iinfo(np.int32).max
#: "numba" (one compiled pass per chunk, the GIL released) or "numpy"
#: (elementwise passes); the two give the same codes from the same uniforms.
_KERNEL = "numba" if numba is not None else "numpy"


def _rr_kernel(u, codes, out, keep_prob, scale, k):  # pragma: no cover - numba
    # randomized_response_codes' arithmetic, one user at a time: kept users
    # never compute the (possibly huge) scaled value, so nothing is clipped.
    for i in range(u.size):
        if u[i] < keep_prob:
            out[i] = codes[i]
        else:
            t = np.int64((u[i] - keep_prob) * scale)
            if t > k - 2:
                t = k - 2
            if t >= codes[i]:
                t += 1
            out[i] = t


if numba is not None:
    _rr_kernel = numba.njit(nogil=True, cache=True)(_rr_kernel)


def bernoulli_matrix(shape, q, rng, *, out=None):
    """Independent Bernoulli(q) draws as a boolean array of ``shape``.

    Each cell consumes one uniform random byte B: the cell is 1 if
    B < floor(256 q), 0 if B > floor(256 q), and only on a tie (probability
    1/256) a float64 uniform U decides, 1 if U < 256 q - floor(256 q). So
    P(cell = 1) = q exactly (to float64 resolution), at about one eighth of
    the random bits and memory traffic of comparing float64 uniforms, which
    matters for RAPPOR-type reports with n * k cells. The cells are drawn in
    blocks of 2^20, so that the bytes are compared twice (for the ones and
    for the ties) while they are in cache.

    Parameters
    ----------
    shape : tuple of int
    q : float in [0, 1]
    rng : numpy.random.Generator
    out : ndarray of bool or uint8 of ``shape``, default=None
        C-contiguous destination (written as 0/1), to avoid a copy.

    Returns
    -------
    bits : ndarray of bool (or ``out``)
    """
    size = int(np.prod(shape))
    if out is None:
        out = np.empty(shape, dtype=bool)
    flat = out.reshape(-1).view(bool)
    if q <= 0.0 or q >= 1.0:
        flat[:] = q >= 1.0
        return out
    scaled = q * 256.0
    threshold = int(np.floor(scaled))
    for lo in range(0, size, _BYTE_BLOCK):
        hi = min(size, lo + _BYTE_BLOCK)
        raw = rng.bit_generator.random_raw((hi - lo + 7) // 8)
        byte = raw.view(np.uint8)[: hi - lo]
        block = flat[lo:hi]
        np.less(byte, threshold, out=block)
        ties = np.flatnonzero(byte == threshold)
        if ties.size:
            block[ties] = rng.random(ties.size) < (scaled - threshold)
    return out


def bernoulli_xor(cells, q, rng):
    """XOR independent Bernoulli(q) draws into the 0/1 ``cells``, in place.

    The draws are exactly those of ``bernoulli_matrix(cells.shape, q, rng)``
    (the same random bytes, block by block, and the same uniforms on ties),
    so the result is ``cells ^ bernoulli_matrix(cells.shape, q, rng)`` for
    the same state of ``rng`` -- flipping each cell with probability q, as
    symmetric unary rounds do -- without the matrix of draws: one compiled
    pass per block (numpy's three passes without numba).

    Parameters
    ----------
    cells : C-contiguous ndarray of uint8 or bool (0/1)
    q : float in [0, 1]
    rng : numpy.random.Generator

    Returns
    -------
    cells : the same array

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp.utils._sampling import bernoulli_matrix, bernoulli_xor
    >>> cells = np.zeros((2, 5), dtype=np.uint8)
    >>> a = bernoulli_xor(cells.copy(), 0.3, np.random.default_rng(0))
    >>> b = bernoulli_matrix((2, 5), 0.3, np.random.default_rng(0))
    >>> bool((a == b).all())
    True
    """
    if not cells.flags.c_contiguous:
        raise ValueError("bernoulli_xor needs a C-contiguous array of cells.")
    flat = cells.reshape(-1).view(np.uint8)
    size = flat.size
    if q <= 0.0:
        return cells
    if q >= 1.0:
        flat ^= 1
        return cells
    scaled = q * 256.0
    threshold = int(np.floor(scaled))
    compiled = numba is not None and use_compiled(size // 8)  # the same draws either way
    ties = np.empty(_TIE_CAPACITY, dtype=np.int64) if compiled else None
    for lo in range(0, size, _BYTE_BLOCK):
        hi = min(size, lo + _BYTE_BLOCK)
        raw = rng.bit_generator.random_raw((hi - lo + 7) // 8)
        block = flat[lo:hi]
        count = -1
        if ties is not None:
            count = _xor_below_kernel(block, raw, threshold, ties)
        if 0 <= count <= _TIE_CAPACITY:
            where = ties[:count]
        else:  # numpy (or more ties than the kernel lists: ~60 standard deviations)
            byte = raw.view(np.uint8)[: hi - lo]
            if count < 0:
                block ^= byte < threshold
            where = np.flatnonzero(byte == threshold)
        if where.size:
            block[where] ^= rng.random(where.size) < (scaled - threshold)
    return cells


#: Ties listed per block by the compiled pass (16 times their expectation).
_TIE_CAPACITY = _BYTE_BLOCK // 16


def _xor_below_kernel(block, raw, threshold, ties):  # pragma: no cover - compiled by numba
    """``block ^= byte < threshold`` and the ties' indices, in order (numba).

    ``raw`` holds the block's random bytes as 64-bit words; the ties are
    found eight bytes at a time (a word has a byte equal to the threshold
    iff ``w ^ t*0x0101..`` has a zero byte), so only the words holding one
    (one in 32) are scanned byte by byte. Returns the number of ties
    (listed up to the capacity of ``ties``).
    """
    n = block.size
    byte = raw.view(np.uint8)
    t = np.uint8(threshold)
    for i in range(n):
        block[i] ^= np.uint8(byte[i] < t)
    return _tie_kernel(raw, n, threshold, ties)


def bernoulli_or_coin(cells, q, rng, buffer=None):
    """The optimized-unary round, in place: a 1 cell becomes a fair coin, a 0
    cell a Bernoulli(q) draw.

    The draws are exactly those of ``flips = bernoulli_matrix(cells.shape,
    q, rng)`` followed by ``coins = rng.integers(0, 2, size=ones,
    dtype=np.uint8)`` (``ones`` the number of 1 cells), and the result is
    ``flips`` with the 1 cells' positions, in row-major order, replaced by
    ``coins``: what ``cells[...] = flips; cells.reshape(-1)[ones_at] = coins``
    gives, without the list of positions (one compiled pass after the
    draws, numpy's passes without numba).

    Parameters
    ----------
    cells : C-contiguous ndarray of uint8 (0/1)
    q : float in [0, 1]
    rng : numpy.random.Generator
    buffer : C-contiguous ndarray of uint8 of at least ``cells.size``, default=None
        Scratch space (reused across calls) for the flips where they are
        drawn as a matrix (without numba, or q below 1/256).

    Returns
    -------
    cells : the same array

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp.utils._sampling import bernoulli_matrix, bernoulli_or_coin
    >>> cells = np.array([[1, 0, 0, 1, 0]], dtype=np.uint8)
    >>> rng = np.random.default_rng(0)
    >>> flips = bernoulli_matrix(cells.shape, 0.2, rng).view(np.uint8)
    >>> flips[cells == 1] = rng.integers(0, 2, size=2, dtype=np.uint8)
    >>> bool((bernoulli_or_coin(cells, 0.2, np.random.default_rng(0)) == flips).all())
    True
    """
    if not cells.flags.c_contiguous or cells.dtype != np.uint8:
        raise ValueError("bernoulli_or_coin needs a C-contiguous uint8 array of cells.")
    flat = cells.reshape(-1)
    size = flat.size
    scaled = q * 256.0
    threshold = int(np.floor(scaled)) if 0.0 < q < 1.0 else 0
    if numba is None or threshold < 1 or not use_compiled(size // 8):
        if buffer is None:
            buffer = np.empty(size, dtype=np.uint8)
        draws = buffer.reshape(-1)[:size]
        # numpy, or q outside [1/256, 1): the flips drawn as bernoulli_matrix
        # draws them, then the coins at the 1 cells' positions
        ones = np.flatnonzero(flat)
        bernoulli_matrix(flat.shape, q, rng, out=draws)
        flat[:] = draws
        flat[ones] = rng.integers(0, 2, size=ones.size, dtype=np.uint8)
        return cells
    # The random bytes block by block, as bernoulli_matrix draws them; each
    # tie (byte == threshold) is decided by its uniform at once (the next
    # draws of the stream) and its byte replaced by threshold - 1 (a one) or
    # 255 (a zero), so that afterwards ``byte < threshold`` is the draw.
    # The blocks' bytes are kept as drawn (no copy) until the coins are.
    ties = np.empty(_TIE_CAPACITY, dtype=np.int64)
    blocks = []
    for lo in range(0, size, _BYTE_BLOCK):
        hi = min(size, lo + _BYTE_BLOCK)
        raw = rng.bit_generator.random_raw((hi - lo + 7) // 8)
        byte = raw.view(np.uint8)[: hi - lo]
        count = _tie_kernel(raw, hi - lo, threshold, ties)
        where = ties[:count] if count <= _TIE_CAPACITY else np.flatnonzero(byte == threshold)
        if where.size:
            ones = rng.random(where.size) < (scaled - threshold)
            byte[where] = np.where(ones, threshold - 1, 255)
        blocks.append((lo, hi, byte))
    coins = _fair_coins(rng, int(np.count_nonzero(flat)))
    used = 0
    for lo, hi, byte in blocks:
        used = _or_coin_kernel(flat[lo:hi], byte, threshold, coins, used)
    return cells


#: Bit generators whose 32-bit draws are the halves of their 64-bit words,
#: the low half first and the high half kept in the state for the next
#: ("has_uint32", "uinteger"): for them ``Generator.integers(0, 2, size=n,
#: dtype=np.uint8)`` is the top bit of each byte of those 32-bit draws, in
#: order (numpy's buffered Lemire draw of a uint8 below 2), which
#: :func:`_fair_coins` reads from ``random_raw`` directly.
#: tests/longitudinal/test_oue_round.py checks each against ``Generator.integers``.
_HALVES_BIT_GENERATORS = ("PCG64", "PCG64DXSM", "SFC64", "Philox", "AESCounter")


def _fair_coins(rng, n):
    """The ``n`` fair coins ``rng.integers(0, 2, size=n, dtype=np.uint8)``
    draws (0/1 bytes), and one spare 0 after them (a compiled loop may read
    one past the last)."""
    bit_generator = rng.bit_generator
    cls = type(bit_generator)
    known = cls.__name__ in _HALVES_BIT_GENERATORS and cls.__module__.split(".")[0] in (
        "numpy",
        "randomgen",
    )
    coins = np.zeros(n + 1, dtype=np.uint8)
    if not known or n == 0:
        coins[:n] = rng.integers(0, 2, size=n, dtype=np.uint8)
        return coins
    state = bit_generator.state
    need = (n + 3) // 4  # 32-bit draws
    words = np.empty(need, dtype="<u4")
    start = 0
    if state["has_uint32"]:
        words[0] = state["uinteger"]
        start, need = 1, need - 1
    n64 = (need + 1) // 2
    if n64:
        raw = bit_generator.random_raw(n64)
        halves = np.empty(2 * n64, dtype="<u4")
        halves[0::2] = raw & np.uint64(0xFFFFFFFF)
        halves[1::2] = raw >> np.uint64(32)
        words[start:] = halves[:need]
    if start or n64:  # the state as n 8-bit draws leave it
        state = bit_generator.state  # after random_raw
        state["has_uint32"] = int(need % 2)
        if n64:
            state["uinteger"] = int(raw[-1] >> np.uint64(32))
        bit_generator.state = state
    np.right_shift(words.view(np.uint8)[:n], 7, out=coins[:n])
    return coins


def _tie_kernel(raw, n, threshold, ties):  # pragma: no cover - compiled by numba
    """The indices of the bytes equal to ``threshold`` among the first ``n``
    bytes of ``raw`` (64-bit words), in order, up to the capacity of
    ``ties``; returns their number (see :func:`_xor_below_kernel`)."""
    byte = raw.view(np.uint8)
    t = np.uint8(threshold)
    ones = np.uint64(0x0101010101010101)
    highs = np.uint64(0x8080808080808080)
    pattern = np.uint64(threshold) * ones
    capacity = ties.size
    count = 0
    for w in range((n + 7) // 8):
        x = raw[w] ^ pattern
        if (x - ones) & ~x & highs:
            for i in range(8 * w, min(n, 8 * w + 8)):
                if byte[i] == t:
                    if count < capacity:
                        ties[count] = i
                    count += 1
    return count


def _or_coin_kernel(cells, draws, threshold, coins, used):  # pragma: no cover - numba
    """``cells[i] = coins[c] if cells[i] else draws[i] < threshold``, c
    counting the 1 cells from ``used`` on; returns the coins used after
    these cells (numba; integer arithmetic, not a select, which numba
    compiles to a branch here: the 1 cells fall at random, and a
    mispredicted branch per cell costs more)."""
    c = used
    t = np.uint8(threshold)
    for i in range(cells.size):
        one = np.int64(cells[i])
        below = np.int64(draws[i] < t)
        cells[i] = np.uint8(below + one * (np.int64(coins[c]) - below))
        c += one
    return c


if numba is not None:
    _tie_kernel = numba.njit(nogil=True, cache=True)(_tie_kernel)
    # after _tie_kernel: numba compiles the call to the compiled scan
    _xor_below_kernel = numba.njit(nogil=True, cache=True)(_xor_below_kernel)
    _or_coin_kernel = numba.njit(nogil=True, cache=True)(_or_coin_kernel)


def bernoulli_positions(length, q, rng):
    """Sorted positions of the ones in ``length`` independent Bernoulli(q) cells.

    The concatenation of :func:`bernoulli_position_chunks`: the cost is
    proportional to the number of ones (about ``q * length``), not to
    ``length``, which makes sparse RAPPOR-type reports (small q) cheap to
    sample.

    Parameters
    ----------
    length : int
    q : float in [0, 1]
    rng : numpy.random.Generator

    Returns
    -------
    positions : ndarray of int64
    """
    parts = list(bernoulli_position_chunks(length, q, rng))
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def bernoulli_position_chunks(length, q, rng):
    """Sorted positions of the ones in ``length`` Bernoulli(q) cells, in chunks.

    Yields int64 arrays of increasing positions, each chunk's after the
    previous chunk's, so a caller can scatter the ones chunk by chunk while
    the chunk is in cache, without materializing all ``q * length``
    positions. (Scattering in sorted order is also markedly faster.)

    The gaps between ones are drawn as Geometric(q) numbers of trials
    T = G + 1 (G zeros, then a one): with V uniform on (0, 1], G =
    floor(log V / log(1 - q)) has P(G >= g) = P(V <= (1 - q)^g) =
    (1 - q)^g exactly. By memorylessness the cells after the last one drawn
    are again i.i.d., so drawing gaps in batches and discarding the positions
    past ``length`` samples exactly ``length`` independent cells.

    For q >= 1/512 each gap costs 16 random bits and one table lookup (see
    :func:`_gap_table`): V's top 16 bits pick one of 2^16 equal intervals,
    and on an interval where G is constant that value is the gap, exactly.
    On the few intervals where G jumps (about 1.7e-4 / q of the draws) the
    low bits are drawn as a fresh float64 uniform W, V = (r - W) / 2^16 with
    the interval's r, and G is computed from V. So every gap is exactly
    Geometric(q) to float64 resolution (the same resolution as computing G
    from a float64 uniform directly), at a fraction of its random bits and
    arithmetic. Smaller q uses G = floor(E / -log(1 - q)) with E ~ Exp(1).

    Parameters
    ----------
    length : int
    q : float in [0, 1]
    rng : numpy.random.Generator

    Yields
    ------
    positions : ndarray of int64
        Never empty.
    """
    length = int(length)
    if q <= 0.0 or length <= 0:
        return
    if q >= 1.0:
        for lo in range(0, length, _GAP_BATCH):
            yield np.arange(lo, min(length, lo + _GAP_BATCH), dtype=np.int64)
        return
    log1mq = float(np.log1p(-q))
    table = _gap_table(float(q)) if q >= _TABLE_MIN_Q else None
    start = 0  # first cell not decided yet
    while start < length:
        mean = (length - start) * q
        size = min(_GAP_BATCH, int(mean + 6.0 * np.sqrt(mean * (1.0 - q)) + 16))
        size = -(-size // _PREFIX_ROWS) * _PREFIX_ROWS  # whole rows of the block
        if table is not None:
            # Four 16-bit uniforms per 64 raw bits; the lookup gives G + 1, or
            # 0 where the interval straddles a jump of G.
            raw = rng.bit_generator.random_raw((size + 3) // 4).view(np.uint16)
            steps = np.take(table, raw[:size])  # faster than table[raw]
            undecided = np.flatnonzero(steps == 0)
            if undecided.size:
                r = float(1 << _TABLE_BITS) - raw[undecided]
                # V = (r - W) / 2^16 > 0: uniform on the interval (r - 1, r] / 2^16.
                # V >= 2^-69, so G + 1 <= 69 log(2) / q + 1 < 2^16 for the
                # q >= 1/512 of this path: it fits the uint16 steps.
                V = (r - rng.random(undecided.size)) * 2.0**-_TABLE_BITS
                steps[undecided] = _floor_steps(np.log(V) / log1mq, length)
        else:
            steps = _floor_steps(rng.standard_exponential(size) / -log1mq, length)
        positions = _cumulative_positions(steps, start)
        if positions[-1] >= length:
            end = np.searchsorted(positions, length)
            if end:
                yield positions[:end]
            return
        yield positions
        start = int(positions[-1]) + 1


def _cumulative_positions(steps, start):
    """Sorted positions of the ones after ``start``, given the trials to each.

    The cumulative sum of the trials, but with the trials taken column by
    column of a (_PREFIX_ROWS, m) block: numpy's cumsum is a serial loop,
    while the column sums are _PREFIX_ROWS - 1 vectorized row additions (and
    one transposing copy sorts them). The draws are i.i.d., so this fixed
    reordering of them changes nothing in distribution.
    """
    if steps.size < 64 * _PREFIX_ROWS:  # too small for the vectorized rows
        positions = np.cumsum(steps, dtype=np.int64)
        positions += start - 1
        return positions
    block = steps.astype(np.int64, copy=False).reshape(_PREFIX_ROWS, -1)
    for i in range(1, _PREFIX_ROWS):
        np.add(block[i], block[i - 1], out=block[i])
    offset = np.cumsum(block[-1])  # the column totals, accumulated
    offset -= block[-1]
    offset += start - 1
    block += offset
    return block.T.ravel()


def _floor_steps(g, length):
    """floor(g) + 1 as int64 (trials up to the next one), capped at ``length``.

    A gap of ``length`` cells or more runs past the end either way; the cap
    keeps the cast and the cumulative sum from overflowing for tiny q.
    """
    np.floor(g, out=g)
    np.minimum(g, float(length), out=g)
    g += 1.0
    return g.astype(np.int64)


@functools.lru_cache(maxsize=32)
def _gap_table(q):
    """Geometric(q) trials G + 1 by the top 16 bits of the uniform, 0 if not decided.

    Entry v covers U in [v, v + 1) / 2^16, i.e. V = 1 - U in
    ((2^16 - v - 1), 2^16 - v] / 2^16. G(V) = floor(log V / log(1 - q)) is
    monotone, so it is constant on the interval iff it takes the same value at
    both ends; otherwise (and on the last interval, where G is unbounded) the
    entry is 0 and the sampler computes G from V drawn within the interval.

    Parameters
    ----------
    q : float in [_TABLE_MIN_Q, 1)

    Returns
    -------
    table : ndarray of uint16 of shape (2^16,)
        Decided entries are at most G(2^-15) + 1 <= 10.4 / q + 1 < 2^16.
    """
    m = 1 << _TABLE_BITS
    V = np.arange(m, -1, -1, dtype=np.float64) / m  # V at U = v / 2^16, v = 0..2^16
    with np.errstate(divide="ignore"):
        G = np.floor(np.log(V) / np.log1p(-q))  # +inf at V = 0
    table = np.where(G[:-1] == G[1:], G[:-1] + 1.0, 0.0).astype(np.uint16)
    table.setflags(write=False)
    return table


def narrow_code_dtype(k):
    """The narrowest unsigned type that holds the codes ``0 .. k - 1`` (uint8
    up to k = 256, uint16 up to 65,536), else intp.

    Examples
    --------
    >>> from sklearn_uldp.utils._sampling import narrow_code_dtype
    >>> [narrow_code_dtype(k).__name__ for k in (2, 256, 257, 70_000)]
    ['uint8', 'uint8', 'uint16', 'int64']
    """
    if k <= 1 << 8:
        return np.uint8
    if k <= 1 << 16:
        return np.uint16
    return np.intp


def randomized_response_codes(codes, k, keep_prob, rng, *, out=None):
    """k-ary randomized response of codes in 0..k-1, from one uniform per user.

    Each code is kept with probability ``keep_prob`` and otherwise replaced by
    one of the k - 1 other codes uniformly at random, independently per user.

    One float64 uniform U decides both: the user keeps its code iff
    U < keep_prob (probability keep_prob, exactly as with a separate draw).
    Given a move, U is uniform on [keep_prob, 1) (on the 2^-53 grid), so
    t = floor((U - keep_prob) / (1 - keep_prob) * (k - 1)) is uniform on
    0..k-2 up to the rounding of the grid into k - 1 bins: each bin receives
    (1 - keep_prob) 2^53 / (k - 1) grid points, +-1 point of boundary
    rounding, i.e. uniform to float64 resolution (a relative error of order
    k 2^-53), the same resolution as comparing a float64 uniform with
    keep_prob. (Rounding can give t = k - 1 for U next to 1; it is clipped to
    k - 2, which moves that ~2^-53 probability to one bin.) The target
    t + (t >= code) then skips the user's own code: uniform over the k - 1
    other codes. A moved user's U - keep_prob is >= 0 exactly (a float
    difference has the sign of the exact one), so truncating the scaled
    value to an integer is the floor.

    The users are processed in chunks that fit in the L2 cache: each chunk's
    uniforms are drawn, then mapped to codes in one compiled pass that
    releases the GIL (so columns privatized in threads run in parallel), or,
    without numba, in a few elementwise numpy passes that give the same codes.

    Parameters
    ----------
    codes : ndarray of integers of shape (n,)
        Codes in 0..k-1 (intp, or a narrower unsigned type that holds k).
    k : int
    keep_prob : float in [0, 1]
    rng : numpy.random.Generator
    out : ndarray of integers of shape (n,), default=None
        Where to write the codes (any integer type that holds k - 1, e.g.
        uint8 for k <= 256: an eighth of the memory of intp codes); a new
        intp array by default. The codes are the same whatever the types.

    Returns
    -------
    out : ndarray of shape (n,)
    """
    codes = np.asarray(codes)
    if codes.dtype.kind not in "iu":
        codes = codes.astype(np.intp)
    n = codes.size
    if out is None:
        out = np.empty(n, dtype=np.intp)
    if k < 2 or keep_prob >= 1.0:
        out[:] = codes
        return out
    scale = (k - 1) / (1.0 - keep_prob)
    if _KERNEL == "numba" and use_compiled(n):  # the same codes either way
        u = np.empty(min(_USER_CHUNK, n))
        for lo in range(0, n, _USER_CHUNK):
            hi = min(n, lo + _USER_CHUNK)
            uu = u[: hi - lo]
            rng.random(out=uu)
            _rr_kernel(uu, codes[lo:hi], out[lo:hi], keep_prob, scale, k)
        return out
    # Kept users' values lie in (-keep_prob * scale, 0); clip them when that
    # is beyond what the cast to int64 can represent (huge epsilon).
    clip = keep_prob * scale >= 2.0**62
    # np.copyto(where=) branches per element: when more than a few percent of
    # the users keep (and a few percent move), its mispredictions cost more
    # than the two passes of an arithmetic select.
    blend = 1.0 / 32 < keep_prob < 31.0 / 32
    m = min(_USER_CHUNK, n)
    u = np.empty(m)
    keep = np.empty(m, dtype=bool)
    skip = np.empty(m, dtype=bool)
    diff = np.empty(m, dtype=np.intp) if blend else None
    # The arithmetic below runs on intp (the kept users' truncated values are
    # negative): into ``out`` directly when it is intp, else through a buffer.
    wide = None if out.dtype == np.intp else np.empty(m, dtype=np.intp)
    for lo in range(0, n, _USER_CHUNK):
        hi = min(n, lo + _USER_CHUNK)
        uu, kk, ss = u[: hi - lo], keep[: hi - lo], skip[: hi - lo]
        o = out[lo:hi] if wide is None else wide[: hi - lo]
        c = codes[lo:hi]
        rng.random(out=uu)
        np.less(uu, keep_prob, out=kk)
        uu -= keep_prob
        uu *= scale
        if clip:
            np.maximum(uu, -1.0, out=uu)
        # Truncation is floor for moved users (uu >= 0); kept users are
        # overwritten below.
        np.copyto(o, uu, casting="unsafe")
        np.minimum(o, k - 2, out=o)
        np.greater_equal(o, c, out=ss)
        o += ss
        if blend:  # o += (c - o) * keep
            d = diff[: hi - lo]
            np.subtract(c, o, out=d)
            d *= kk
            o += d
        else:
            np.copyto(o, c, where=kk)
        if wide is not None:
            out[lo:hi] = o
    return out


def unary_sparse_rows(codes, own_bit, s_codes, rank, n_cols, q, rng):
    """CSR array of unary-encoding reports: sparse noise plus each user's own bit.

    With n = ``codes.size`` and s = ``s_codes.size``, the stream of n * s
    cells (user i's sensitive column ``s_codes[c]`` is cell i * s + c) is
    sampled by :func:`bernoulli_position_chunks` ``(n * s, q, rng)``, and row
    i's set columns are exactly::

        {s_codes[c] : cell i * s + c is a one, c != rank[codes[i]]}
        | {codes[i] if own_bit[i]},

    i.e. each user's own sensitive cell is removed from the noise and redrawn
    as its own bit, and a non-sensitive input's own bit is its only bit
    outside ``s_codes``. For the same generator state this consumes the same
    draws, and gives the same reports, as scattering
    :func:`bernoulli_positions` into a COO matrix and summing duplicates.

    The chunks of positions are consumed in order and turned into column
    indices while they are in cache; the positions of a row that continues
    in the next chunk are carried over to it, so that each user's own cell
    (or, for a non-sensitive input, the place of its own column among the
    sensitive ones) is found by one binary search within its row, and the own
    bits are merged in order (an O(nnz) insertion, no sort). Temporaries are
    bounded by the chunk size plus one row's ones (and at most ``_ROW_BATCH``
    rows per step); only the output grows with n.

    Parameters
    ----------
    codes : ndarray of int of shape (n,)
        Input codes in 0..n_cols-1.
    own_bit : ndarray of bool or uint8 of shape (n,)
        Each user's own bit (nonzero: set).
    s_codes : ndarray of int of shape (s,)
        The sensitive columns, strictly increasing (``np.flatnonzero`` of the
        sensitive mask).
    rank : ndarray of int of shape (n_cols,)
        ``rank[x]`` is the index of x in ``s_codes``, or -1 if x is not
        sensitive.
    n_cols : int
        Number of columns k (categories).
    q : float in [0, 1]
        Probability of each noise cell.
    rng : numpy.random.Generator

    Returns
    -------
    reports : scipy.sparse.csr_array of uint8 of shape (n, n_cols)
        Data all ones, in canonical format (indices sorted within each row,
        no duplicates; flagged as such). ``indices`` and ``indptr`` are int32
        when nnz < 2^31 (and n_cols <= 2^31), else int64.
    """
    codes = np.asarray(codes, dtype=np.intp)
    s_codes = np.asarray(s_codes, dtype=np.intp)
    n, s, k = codes.size, s_codes.size, int(n_cols)
    if s > 1 and np.any(s_codes[1:] <= s_codes[:-1]):
        raise ValueError("s_codes must be strictly increasing.")
    sensitive = np.asarray(rank) >= 0
    # A code's cell among the sensitive columns: its own cell if sensitive,
    # else the first sensitive column after it (its own bit goes before).
    slot = np.searchsorted(s_codes, np.arange(k))
    wide = k - 1 > _INT32_MAX
    columns = None if s == k else s_codes.astype(np.int64 if wide else np.int32)
    cap = _nnz_capacity(n, s, q)
    indices = np.empty(cap, dtype=np.int64 if wide or cap > _INT32_MAX else np.int32)
    indptr = np.zeros(n + 1, dtype=np.int64)
    nnz = 0

    def emit(lo, hi, pos):
        """Append rows lo..hi-1, given the sorted stream positions of exactly those rows."""
        nonlocal indices, nnz
        for a in range(lo, hi, _ROW_BATCH):
            b = min(hi, a + _ROW_BATCH)
            split = pos.size if b == hi else int(np.searchsorted(pos, b * s))
            seg, pos = pos[:split], pos[split:]
            base = np.arange(a, b, dtype=np.int64) * s  # each row's cell 0
            c = codes[a:b]
            key = base + slot[c]
            start = np.searchsorted(seg, base)
            size = np.diff(start, append=seg.size)  # noise ones per row
            at = np.searchsorted(seg, key)
            if seg.size:  # at == seg.size only where every position is < key
                present = sensitive[c] & (np.take(seg, at, mode="clip") == key)
            else:
                present = np.zeros(b - a, dtype=bool)
            own = np.asarray(own_bit[a:b], dtype=bool)
            add = own & ~present  # own bit to insert (not in the stream)
            drop = present & ~own  # a one of the stream in the own cell, redrawn 0
            local = np.repeat(base, size)
            np.subtract(seg, local, out=local)  # column among the sensitive ones
            vals = local if columns is None else np.take(columns, local)
            where = at[add]
            if drop.any():
                gone = at[drop]
                vals = np.delete(vals, gone)
                # An insertion before a dropped one lands where that one was.
                where -= np.searchsorted(gone, where)
            where += np.arange(where.size)  # indices in the merged block
            m = vals.size + where.size
            if nnz + m > indices.size:
                indices = _grown(indices, nnz, nnz + m)
            out = indices[nnz : nnz + m]
            if where.size:
                mask = np.ones(m, dtype=bool)
                mask[where] = False
                out[mask] = vals
                out[where] = c[add]
            else:
                out[...] = vals
            counts = size + add
            counts -= drop
            np.cumsum(counts, out=indptr[a + 1 : b + 1])
            indptr[a + 1 : b + 1] += nnz
            nnz += m

    carry = np.zeros(0, dtype=np.int64)
    done = 0  # rows emitted
    for chunk in bernoulli_position_chunks(n * s, q, rng):
        pos = np.concatenate([carry, chunk]) if carry.size else chunk
        # Rows before the one of the next position get no more ones; the
        # positions of the last row so far wait for the rest of the row.
        upto = (int(pos[-1]) + 1) // s
        split = int(np.searchsorted(pos, upto * s))
        emit(done, upto, pos[:split])
        carry, done = pos[split:], upto
    emit(done, n, carry)

    dtype = np.int32 if nnz <= _INT32_MAX and not wide else np.int64
    if indices.size - nnz > nnz // 8 or indices.dtype != dtype:
        indices = indices[:nnz].astype(dtype)  # do not keep a large slack
    else:
        indices = indices[:nnz]
    reports = sp.csr_array(
        (np.ones(nnz, dtype=np.uint8), indices, indptr.astype(dtype)), shape=(n, k)
    )
    reports.has_canonical_format = True  # sorted, no duplicates by construction
    return reports


def _nnz_capacity(n, s, q):
    """Initial room for the column indices of :func:`unary_sparse_rows`.

    nnz is at most the ones of the stream, Binomial(n s, q), plus n own bits;
    the margin of 8 standard deviations makes a reallocation practically never
    needed, at a negligible over-allocation.
    """
    mean = n * s * q
    return int(min(n * s + n, mean + n + 8.0 * np.sqrt(mean) + 1024))


def _grown(array, used, need):
    """A larger copy of ``array[:used]`` with room for ``need`` elements."""
    size = max(need, used + used // 4)
    dtype = np.int64 if size > _INT32_MAX else array.dtype
    out = np.empty(size, dtype=dtype)
    out[:used] = array[:used]
    return out


def randomized_response_move_counts(k, keep_prob):
    """Exact channel realized by :func:`randomized_response_codes`, in grid points.

    The sampler draws U = j 2**-53 (j uniform in [0, 2**53)), keeps the code
    iff U < keep_prob, and otherwise maps U to a move t in 0..k-2 by float64
    arithmetic. That map is non-decreasing in j, so the first j of each t is
    found by a binary search replaying the sampler's own operations: the
    counts are exact, not a bound.

    Parameters
    ----------
    k : int
        Number of categories (>= 2).
    keep_prob : float in (0, 1)

    Returns
    -------
    kept : int
        Grid points for which the code is kept (P(keep) = kept 2**-53).
    moves : ndarray of int64 of shape (k - 1,)
        Grid points mapped to each move t (the t-th other code in order).

    Examples
    --------
    >>> from sklearn_uldp.utils._sampling import randomized_response_move_counts
    >>> kept, moves = randomized_response_move_counts(3, 0.5)
    >>> kept == 2**52, moves.tolist() == [2**51, 2**51]
    (True, True)
    """
    total = 1 << 53
    kept = min(total, int(np.ceil(np.ldexp(float(keep_prob), 53))))
    if k < 2 or kept >= total:
        return kept, np.zeros(max(k - 1, 0), dtype=np.int64)
    scale = (k - 1) / (1.0 - keep_prob)
    clip = keep_prob * scale >= 2.0**62

    def move_of(j):
        u = j.astype(np.float64) * 2.0**-53  # exact: j < 2**53
        u -= keep_prob
        u *= scale
        if clip:
            np.maximum(u, -1.0, out=u)
        return np.minimum(u.astype(np.intp), k - 2)

    targets = np.arange(1, k - 1, dtype=np.int64)
    lo = np.full(targets.size, kept, dtype=np.int64)
    hi = np.full(targets.size, total, dtype=np.int64)
    while (lo < hi).any():  # at most 54 rounds
        mid = (lo + hi) // 2
        above = move_of(np.minimum(mid, total - 1)) >= targets
        hi = np.where(above, mid, hi)
        lo = np.where(above, lo, np.minimum(mid + 1, hi))
    first = np.concatenate([[kept], lo, [total]])
    return kept, np.diff(first)
