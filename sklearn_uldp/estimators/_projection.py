"""Projections of unbiased estimates onto the probability simplex."""

import numpy as np

__all__ = ["project_to_simplex", "clip_and_normalize"]


def project_to_simplex(v):
    """Euclidean projection of ``v`` onto the probability simplex.

    The result is ``max(v - tau, 0)`` with the shift ``tau`` that makes it sum
    to one (Held et al. 1974; Duchi et al. 2008). This is also the "Norm-Sub"
    post-processing of Wang et al. (2020): clip negatives and subtract the
    same amount from every positive entry until the sum is one.

    Parameters
    ----------
    v : array-like of shape (k,)

    Returns
    -------
    p : ndarray of shape (k,)

    Examples
    --------
    >>> from sklearn_uldp.estimators import project_to_simplex
    >>> project_to_simplex([0.7, 0.5, -0.2]).round(2).tolist()
    [0.6, 0.4, 0.0]
    """
    v = np.asarray(v, dtype=float)
    if not np.all(np.isfinite(v)):
        raise ValueError("Cannot project a vector with NaN or inf entries.")
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - 1.0
    ind = np.arange(1, v.size + 1)
    rho = np.nonzero(u - css / ind > 0)[0][-1]
    tau = css[rho] / (rho + 1.0)
    return np.maximum(v - tau, 0.0)


def clip_and_normalize(v):
    """Clip negative entries to zero and rescale to sum one ("Norm-Cut").

    Parameters
    ----------
    v : array-like of shape (k,)

    Returns
    -------
    p : ndarray of shape (k,)
        Uniform when no entry is positive.

    Examples
    --------
    >>> from sklearn_uldp.estimators import clip_and_normalize
    >>> clip_and_normalize([0.6, 0.6, -0.2]).round(2).tolist()
    [0.5, 0.5, 0.0]
    """
    p = np.clip(np.asarray(v, dtype=float), 0.0, None)
    total = p.sum()
    if total <= 0:
        return np.full(p.size, 1.0 / p.size)
    return p / total
