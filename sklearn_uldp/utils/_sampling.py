"""Fast exact samplers used on the privatization hot path."""

import numpy as np

__all__ = ["bernoulli_matrix"]


def bernoulli_matrix(shape, q, rng):
    """Independent Bernoulli(q) draws as a boolean array of ``shape``.

    Each cell consumes one uniform random byte B: the cell is 1 if
    B < floor(256 q), 0 if B > floor(256 q), and only on a tie (probability
    1/256) a float64 uniform U decides, 1 if U < 256 q - floor(256 q). So
    P(cell = 1) = q exactly (to float64 resolution), at about one eighth of
    the random bits and memory traffic of comparing float64 uniforms, which
    matters for RAPPOR-type reports with n * k cells.

    Parameters
    ----------
    shape : tuple of int
    q : float in [0, 1]
    rng : numpy.random.Generator

    Returns
    -------
    bits : ndarray of bool
    """
    size = int(np.prod(shape))
    if q <= 0.0:
        return np.zeros(shape, dtype=bool)
    if q >= 1.0:
        return np.ones(shape, dtype=bool)
    raw = rng.bit_generator.random_raw((size + 7) // 8)
    byte = raw.view(np.uint8)[:size]
    scaled = q * 256.0
    threshold = int(np.floor(scaled))
    bits = byte < threshold
    ties = np.flatnonzero(byte == threshold)
    if ties.size:
        bits[ties] = rng.random(ties.size) < (scaled - threshold)
    return bits.reshape(shape)
