"""Fast exact samplers used on the privatization hot path."""

import numpy as np

__all__ = ["bernoulli_matrix"]


def bernoulli_matrix(shape, q, rng, *, out=None):
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
    raw = rng.bit_generator.random_raw((size + 7) // 8)
    byte = raw.view(np.uint8)[:size]
    scaled = q * 256.0
    threshold = int(np.floor(scaled))
    np.less(byte, threshold, out=flat)
    ties = np.flatnonzero(byte == threshold)
    if ties.size:
        flat[ties] = rng.random(ties.size) < (scaled - threshold)
    return out


def bernoulli_positions(length, q, rng):
    """Sorted positions of the ones in ``length`` independent Bernoulli(q) cells.

    Gaps between ones are geometric: with E ~ Exp(1) and lambda = -log(1 - q),
    floor(E / lambda) is the number of zeros before the next one, exactly
    Geometric(q). The cost is proportional to the number of ones (about
    ``q * length``), not to ``length``, which makes sparse RAPPOR-type reports
    (small q) cheap to sample.

    Parameters
    ----------
    length : int
    q : float in [0, 1)
    rng : numpy.random.Generator

    Returns
    -------
    positions : ndarray of int64
    """
    if q <= 0.0 or length == 0:
        return np.zeros(0, dtype=np.int64)
    if q >= 1.0:
        return np.arange(length, dtype=np.int64)
    lam = -np.log1p(-q)
    parts = []
    start = 0  # position of the next cell not yet decided
    while start < length:
        remaining = length - start
        mean = remaining * q
        draws = int(mean + 6.0 * np.sqrt(mean * (1.0 - q)) + 16)
        gaps = np.floor(rng.standard_exponential(draws) / lam).astype(np.int64)
        positions = start + np.cumsum(gaps + 1) - 1
        inside = positions < length
        if inside.all():
            parts.append(positions)
            start = int(positions[-1]) + 1
        else:
            parts.append(positions[inside])
            break
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
