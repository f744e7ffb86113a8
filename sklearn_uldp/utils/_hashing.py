"""Seeded, vectorized hash families for the hashing frequency oracles.

Two families, both evaluated with numpy on whole arrays (no per-user loop):

* :func:`linear_hash` -- the *linear family over GF(g)* used by local hashing
  (OLH, BLH). A category x < g^r is written in base g, ``d(x)`` (r digits),
  and the seed is a vector ``a`` of r digits; ``h_a(x) = <a, d(x)> mod g``.
  For g prime and x != x', ``d(x) - d(x')`` is a non-zero vector of GF(g)^r,
  so ``<a, d(x) - d(x')>`` is exactly uniform on GF(g) when ``a`` is uniform:
  the collision probability is **exactly** 1/g for every pair (the family is
  universal with no slack), which is what makes local hashing's estimator
  exactly unbiased with a *finite* seed space of g^r seeds. Adding an offset
  b (``<a, d(x)> + b``) would make the family pairwise independent, but it
  cannot change any estimate (given ``(a, y - b)``, b is independent of x),
  so it is not drawn.

* :func:`mersenne_hash` -- the Carter-Wegman family
  ``h_{a,b}(x) = ((a x + b) mod P) mod m`` with the Mersenne prime
  P = 2^61 - 1, evaluated in uint64 without overflow (32-bit limbs and the
  identity 2^61 = 1 mod P). For x != x' < P and (a, b) uniform on
  [1, P) x [0, P), ``(a x + b) mod P`` and ``(a x' + b) mod P`` are two
  distinct uniform values (pairwise independent), so after ``mod m`` the
  collision probability is at most 1/m + m/P (< 1/m + 2^-50 for m <= 2^10).
  The count-mean sketches draw their h public hash functions from it with
  :func:`hash_parameters` (SplitMix64 from one public integer seed, so that a
  spec rebuilds the same functions on any platform and numpy version).

References
----------
Carter & Wegman, "Universal classes of hash functions", JCSS 1979.
Wang, Blocki, Li & Jha, "Locally Differentially Private Protocols for
Frequency Estimation", USENIX Security 2017 (local hashing).
"""

import numpy as np

from ._fixes import bitwise_count

__all__ = [
    "MERSENNE_61",
    "n_digits",
    "linear_hash",
    "linear_hash_table",
    "hash_parameters",
    "mersenne_hash",
    "premix",
    "is_prime",
]

#: The Mersenne prime 2^61 - 1.
MERSENNE_61 = (1 << 61) - 1
_P = np.uint64(MERSENNE_61)
_MASK32 = np.uint64(0xFFFFFFFF)
_MASK29 = np.uint64((1 << 29) - 1)


def is_prime(g):
    """Whether the integer ``g`` is a prime (trial division; g is small).

    Examples
    --------
    >>> from sklearn_uldp.utils._hashing import is_prime
    >>> [g for g in range(20) if is_prime(g)]
    [2, 3, 5, 7, 11, 13, 17, 19]
    """
    g = int(g)
    if g < 2:
        return False
    f = 2
    while f * f <= g:
        if g % f == 0:
            return False
        f += 1
    return True


def n_digits(k, g):
    """Smallest r >= 1 with g^r >= k: base-g digits of a category code < k.

    Examples
    --------
    >>> from sklearn_uldp.utils._hashing import n_digits
    >>> n_digits(1000, 2), n_digits(1000, 3), n_digits(100, 53)
    (10, 7, 2)
    """
    r, size = 1, int(g)
    while size < k:
        size *= int(g)
        r += 1
    return r


def _digits(values, g, r):
    """(len(values), r) base-g digits, least significant first."""
    values = np.asarray(values, dtype=np.int64)
    return (values[:, None] // (g ** np.arange(r, dtype=np.int64))[None, :]) % g


def linear_hash(seeds, codes, g, r):
    """``h_a(x) = <d(a), d(x)> mod g`` elementwise, for seeds a < g^r, codes x < g^r.

    Parameters
    ----------
    seeds, codes : array-like of int, broadcastable
    g : int
        A prime (the hash range).
    r : int
        Number of base-g digits.

    Returns
    -------
    h : ndarray of int64, values in [0, g)

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp.utils._hashing import linear_hash
    >>> linear_hash(np.array([5, 5, 6]), np.array([3, 1, 1]), 2, 3).tolist()
    [1, 1, 0]
    """
    seeds = np.asarray(seeds, dtype=np.int64)
    codes = np.asarray(codes, dtype=np.int64)
    if g == 2:  # the parity of the common bits: one popcount
        return (bitwise_count(seeds & codes) & 1).astype(np.int64)
    out = np.zeros(np.broadcast_shapes(seeds.shape, codes.shape), dtype=np.int64)
    a, x = seeds.copy(), codes.copy()
    for _ in range(r):  # r passes over the users, not a loop over users
        out += (a % g) * (x % g)
        a //= g
        x //= g
    return out % g


def linear_hash_table(g, r, k, seeds=None):
    """The table ``T[a, x] = h_a(x)`` for seeds ``a`` (all g^r by default), x < k.

    Computed as one small matrix product of digit matrices (exact in float64:
    every entry is at most r (g - 1)^2).

    Returns
    -------
    T : ndarray of shape (n_seeds, k), dtype uint8 (g <= 256) or uint16
    """
    if seeds is None:
        seeds = np.arange(g**r, dtype=np.int64)
    A = _digits(seeds, g, r).astype(np.float64)
    X = _digits(np.arange(k), g, r).astype(np.float64)
    dtype = np.uint8 if g <= 256 else np.uint16
    return np.fmod(A @ X.T, g).astype(dtype)


def _splitmix64(state):
    """SplitMix64 outputs for the uint64 states ``state`` (wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        z = state + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def premix(x):
    """An injective scrambling of category codes into [0, 2^61 - 1).

    SplitMix64 is a bijection of uint64; reducing it mod P maps two codes
    to one value with probability about 2^-61 per pair. Pairwise
    universality of :func:`mersenne_hash` holds for any distinct inputs, but
    for one *fixed* function, consecutive small codes x = 0, 1, 2, ... make
    ``a x + b`` an arithmetic progression that may not wrap around P (e.g.
    every code in one bucket when a is a multiple of m); scrambled inputs
    avoid such degenerate members.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp.utils._hashing import premix, MERSENNE_61
    >>> y = premix(np.arange(1000))
    >>> bool((y < MERSENNE_61).all()), np.unique(y).size
    (True, 1000)
    """
    x = np.asarray(x).astype(np.uint64)
    return _splitmix64(x) % _P


def hash_parameters(seed, n_functions):
    """Parameters (a, b) of ``n_functions`` members of :func:`mersenne_hash`'s family.

    Deterministic in ``seed`` (a public integer of the spec): SplitMix64 of
    ``seed * 2^32 + 2 j`` and ``... + 2 j + 1``, reduced to a in [1, P) and
    b in [0, P). The reduction's bias is below 2^-60 per value.

    Examples
    --------
    >>> from sklearn_uldp.utils._hashing import hash_parameters
    >>> a, b = hash_parameters(0, 3)
    >>> a.dtype.name, a.shape, bool((a >= 1).all())
    ('uint64', (3,), True)
    """
    j = np.arange(2 * int(n_functions), dtype=np.uint64)
    with np.errstate(over="ignore"):
        states = np.uint64(int(seed) & 0xFFFFFFFF) * np.uint64(1 << 32) + j
    z = _splitmix64(states)
    a = np.uint64(1) + z[0::2] % (_P - np.uint64(1))
    b = z[1::2] % _P
    return a, b


def _fold(s):
    """s mod P for s < 2^64 (one fold, then a conditional subtraction)."""
    s = (s & _P) + (s >> np.uint64(61))
    return s - _P * (s >= _P).astype(np.uint64)


def mersenne_hash(a, b, x, m):
    """``((a x + b) mod (2^61 - 1)) mod m`` elementwise, in uint64 without overflow.

    Parameters
    ----------
    a, b : array-like of uint64, a in [1, P), b in [0, P)
    x : array-like of int, 0 <= x < 2^61 - 1
    m : int
        The hash range.

    Returns
    -------
    h : ndarray of int64, values in [0, m)

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp.utils._hashing import mersenne_hash, MERSENNE_61
    >>> a, b, x = 2**60 + 12345, 987654321, 2**40 + 7
    >>> h = mersenne_hash(np.uint64(a), np.uint64(b), np.int64(x), 1000)
    >>> int(h) == ((a * x + b) % MERSENNE_61) % 1000
    True
    """
    a = np.asarray(a, dtype=np.uint64)
    b = np.asarray(b, dtype=np.uint64)
    x = np.asarray(x).astype(np.uint64)
    a0, a1 = a & _MASK32, a >> np.uint64(32)  # a1 < 2^29
    x0, x1 = x & _MASK32, x >> np.uint64(32)  # x1 < 2^29
    # a x = a1 x1 2^64 + (a1 x0 + a0 x1) 2^32 + a0 x0, and 2^61 = 1 (mod P):
    # 2^64 = 8, and mid 2^32 = (mid >> 29) 2^61 + (mid & (2^29 - 1)) 2^32.
    low = a0 * x0  # < 2^64
    mid = a1 * x0 + a0 * x1  # < 2^62
    high = a1 * x1  # < 2^58
    s = _fold(low)
    s = s + (mid >> np.uint64(29)) + ((mid & _MASK29) << np.uint64(32))
    s = _fold(s)
    s = _fold(s + (high << np.uint64(3)))
    s = _fold(s + b)
    return (s % np.uint64(m)).astype(np.int64)
