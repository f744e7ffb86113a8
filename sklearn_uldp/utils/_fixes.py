"""Compatibility shims for the oldest supported versions of the dependencies.

CI runs the test suite against the lowest numpy, scipy, scikit-learn and pandas
that ``pyproject.toml`` allows, so every shim here is exercised. Remove a shim
when the corresponding lower bound is raised past the version it covers.
"""

import numpy as np

__all__ = ["bitwise_count"]

if hasattr(np, "bitwise_count"):  # numpy >= 2.0
    bitwise_count = np.bitwise_count
else:
    # The number of set bits of every byte value, for a vectorized popcount.
    _BYTE_POPCOUNT = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)

    def bitwise_count(x):
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
        >>> from sklearn_uldp.utils._fixes import bitwise_count
        >>> bitwise_count(np.array([0, 1, 7, 255, 1 << 40])).tolist()
        [0, 1, 3, 8, 1]
        """
        x = np.asarray(x)
        if x.dtype.kind == "i":  # numpy.bitwise_count counts the bits of |x|
            x = np.abs(x)
        flat = np.ascontiguousarray(x).reshape(-1)
        per_byte = _BYTE_POPCOUNT[flat.view(np.uint8)]
        per_byte = per_byte.reshape(flat.size, x.dtype.itemsize)
        return per_byte.sum(axis=1, dtype=np.uint8).reshape(x.shape)
