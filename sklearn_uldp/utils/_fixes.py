"""Compatibility shims for the oldest supported versions of the dependencies.

CI runs the test suite against the lowest numpy, scipy, scikit-learn and pandas
that ``pyproject.toml`` allows, so every shim here is exercised. Remove a shim
when the corresponding lower bound is raised past the version it covers.
"""

from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["bitwise_count"]

# The number of set bits of every byte value, for a vectorized popcount.
_BYTE_POPCOUNT = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)


def _bitwise_count(x: ArrayLike) -> np.ndarray:
    """Number of 1-bits in the absolute value of each integer (numpy < 2).

    Same results as :func:`numpy.bitwise_count` (numpy >= 2.0), which is
    used when available: a table lookup over the bytes of each integer, so
    no Python loop over the elements.

    Parameters
    ----------
    x : array-like of int
        Integers (signed or unsigned, any width).

    Returns
    -------
    count : ndarray of uint8
        The popcount of ``abs(x)``, with the shape of ``x``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp.utils._fixes import _bitwise_count
    >>> _bitwise_count(np.array([0, 1, 7, 255, 1 << 40])).tolist()
    [0, 1, 3, 8, 1]
    """
    arr = np.asarray(x)
    if arr.dtype.kind == "i":  # numpy.bitwise_count counts the bits of |x|
        arr = np.abs(arr)
    flat = np.ascontiguousarray(arr).reshape(-1)
    per_byte = _BYTE_POPCOUNT[flat.view(np.uint8)]
    per_byte = per_byte.reshape(flat.size, arr.dtype.itemsize)
    return per_byte.sum(axis=1, dtype=np.uint8).reshape(arr.shape)


# numpy >= 2.0 has it; the fallback is defined (and its doctest run) on every
# version. getattr keeps the type checker quiet on numpy 1.x stubs.
bitwise_count: Callable[..., np.ndarray] = getattr(np, "bitwise_count", _bitwise_count)
