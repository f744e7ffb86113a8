"""Compiled collector loop of the keyed local hashing (numba, optional).

The support of K candidates under h hash functions is ``h K`` hash
evaluations; numpy evaluates them on (h, block) temporaries, numba in one
pass without them. Both compute :func:`~sklearn_uldp.utils._hashing.mersenne_hash`
exactly (the same 32-bit limbs and folds), and the tests compare them.
"""

from __future__ import annotations

import numpy as np

from ..utils._numba import HAVE_NUMBA, numba

__all__ = ["HAVE_NUMBA", "keyed_support"]

_P = np.uint64((1 << 61) - 1)


def _fold(s):  # pragma: no cover - compiled
    s = (s & np.uint64(0x1FFFFFFFFFFFFFFF)) + (s >> np.uint64(61))
    if s >= np.uint64(0x1FFFFFFFFFFFFFFF):
        s -= np.uint64(0x1FFFFFFFFFFFFFFF)
    return s


def keyed_support(table, a, b, keys, out):  # pragma: no cover - compiled
    """``out[i] = sum_j table[j, ((a_j keys_i + b_j) mod P) mod g]`` (numba)."""
    h, g = table.shape
    m32 = np.uint64(0xFFFFFFFF)
    m29 = np.uint64((1 << 29) - 1)
    gg = np.uint64(g)
    for i in range(keys.shape[0]):
        x = np.uint64(keys[i])
        x0 = x & m32
        x1 = x >> np.uint64(32)
        total = 0.0
        for j in range(h):
            aj = a[j]
            a0 = aj & m32
            a1 = aj >> np.uint64(32)
            low = a0 * x0
            mid = a1 * x0 + a0 * x1
            high = a1 * x1
            s = _fold(low)
            s = s + (mid >> np.uint64(29)) + ((mid & m29) << np.uint64(32))
            s = _fold(s)
            s = _fold(s + (high << np.uint64(3)))
            s = _fold(s + b[j])
            total += table[j, s % gg]
        out[i] = total
    return out


if numba is not None:
    _fold = numba.njit(inline="always", cache=True)(_fold)
    keyed_support = numba.njit(nogil=True, cache=True)(keyed_support)
