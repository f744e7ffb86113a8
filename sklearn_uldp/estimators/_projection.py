"""Projections of unbiased estimates onto the probability simplex."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from ..utils._docstrings import fill_doc

#: The signature both projections share, documented once.
_DOCS = {
    "v_to_p": """
        Parameters
        ----------
        v : array-like of shape (k,)

        Returns
        -------
        p : ndarray of shape (k,)
        """,
}

__all__ = ["project_to_simplex", "clip_and_normalize"]


@fill_doc(_DOCS)
def project_to_simplex(v: ArrayLike) -> np.ndarray:
    """Euclidean projection of ``v`` onto the probability simplex.

    The result is ``max(v - tau, 0)`` with the shift ``tau`` that makes it sum
    to one (Held et al. 1974; Duchi et al. 2008). This is also the "Norm-Sub"
    post-processing of Wang et al. (2020): clip negatives and subtract the
    same amount from every positive entry until the sum is one.

    It is computed stably for inputs of any magnitude (unbiased estimates
    at tiny epsilon have entries in the millions): the result sums to one
    within a few units in the last place.

    %(v_to_p)s

    Examples
    --------
    >>> from sklearn_uldp.estimators import project_to_simplex
    >>> project_to_simplex([0.7, 0.5, -0.2]).round(2).tolist()
    [0.6, 0.4, 0.0]
    """
    v = np.asarray(v, dtype=float)
    if v.ndim != 1 or v.size == 0:
        raise ValueError(f"Expected a non-empty 1-D vector to project, got shape {v.shape}.")
    if not np.all(np.isfinite(v)):
        raise ValueError("Cannot project a vector with NaN or inf entries.")
    # The projection commutes with shifts of all entries, and only entries
    # within 1 of the maximum can be in its support (each is v_i - tau <= 1
    # and max(v) - tau <= 1). Shifting by the maximum keeps those entries
    # small, so the cumulative sums below do not lose the digits that matter
    # to cancellation (unbiased estimates at tiny epsilon are ~1e6 in size).
    with np.errstate(over="ignore"):
        w = v - v.max()
    w = np.where(np.isfinite(w), w, -np.inf)
    candidates = w[w > -1.0]
    u = np.sort(candidates)[::-1]
    css = np.cumsum(u) - 1.0
    ind = np.arange(1, u.size + 1)
    rho = np.nonzero(u - css / ind > 0)[0][-1]
    tau = css[rho] / (rho + 1.0)
    # Refine tau on its support with an exactly rounded sum (Michelot's
    # fixed point): the support is that of the projection, tau solves
    # sum(w_S - tau) = 1 to the last bit.
    for _ in range(10):
        support = w > tau
        new_tau = (math.fsum(w[support]) - 1.0) / int(support.sum())
        if new_tau == tau:
            break
        tau = new_tau
    p = np.maximum(w - tau, 0.0)
    # Rounding of w - tau leaves the sum off by a few ulps of the entries:
    # a last rescaling makes it 1 to within k ulps of 1.
    total = math.fsum(p)
    return p / total if total > 0 else np.full(v.size, 1.0 / v.size)


@fill_doc(_DOCS)
def clip_and_normalize(v: ArrayLike) -> np.ndarray:
    """Clip negative entries to zero and rescale to sum one ("Norm-Cut").

    %(v_to_p)s
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
