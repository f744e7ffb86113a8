"""Consistency of measured marginals: shared lower marginals agree.

Two measured marginals that share columns C estimate the marginal over C
twice, with independent noise. CALM (Zhang et al., CCS 2018), after PriView
(Qardaji, Yang & Li, SIGMOD 2014), replaces both by their weighted average
and spreads the correction over the cells of each marginal, for every shared
set C in order of size, then clears negative cells and repeats.

Here every step is an orthogonal projection, in one fixed weighted norm
``||x||_W^2 = sum_A w_A sum_u x_A(u)^2`` (``w_A``: the inverse of marginal
A's mean per-cell variance), onto a convex set that holds the true
marginals:

* the step of a set C is the W-projection onto the linear subspace
  ``{every marginal containing C has the same projection on C}``: its
  solution is CALM's, the average weighted by ``w_A / f_A`` (``f_A`` cells
  of A per cell of C) and the correction spread evenly over each fiber;
* the non-negativity step projects each marginal onto the probability
  simplex (Euclidean, hence W, since ``w_A`` is constant within A).

A projection onto a closed convex set S never moves a point away from any
point of S; the true marginals lie in every set, so **no step increases the
W-distance to the truth**, for every realization of the noise (not only on
average). Going through the sets C by size makes the result consistent on
all of them in one pass (the step of C preserves every projection the
earlier steps fixed); alternating with the simplex step converges to
marginals that are both consistent and non-negative (projections onto
convex sets with a common point). The proof is on the "Marginals" page.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from ..estimators._projection import project_to_simplex

__all__ = ["make_consistent", "shared_subsets", "weighted_distance"]


def shared_subsets(marginals: Sequence[tuple[str, ...]]) -> list[tuple[tuple[str, ...], list[int]]]:
    """Every set of columns two or more marginals share, smallest first.

    Returns ``(subset, indices of the marginals containing it)`` pairs; the
    empty set (the total mass) comes first.
    """
    holders: dict[tuple[str, ...], list[int]] = {}
    for j, m in enumerate(marginals):
        for size in range(len(m) + 1):
            for subset in itertools.combinations(m, size):
                holders.setdefault(subset, []).append(j)
    shared = [(s, idx) for s, idx in holders.items() if len(idx) > 1]
    shared.sort(key=lambda item: (len(item[0]), [str(c) for c in item[0]]))
    return shared


def _plan(shared, marginals, shapes):
    """Per shared set, per marginal holding it: the axes summed out and the
    shape a correction on the set is broadcast with (fixed for the run, so
    that each step is a few numpy calls)."""
    plan = []
    for subset, holders in shared:
        steps = []
        for j in holders:
            axes = tuple(a for a, c in enumerate(marginals[j]) if c not in subset)
            shape = tuple(1 if a in axes else n for a, n in enumerate(shapes[j]))
            steps.append((j, axes, shape))
        plan.append(steps)
    return plan


def _consistency_step(tables, weights, steps):
    projections = []
    factors = []
    for j, axes, _ in steps:
        proj = tables[j].sum(axis=axes)
        projections.append(proj)
        factors.append(tables[j].size / max(proj.size, 1))
    coef = np.array([weights[j] / f for (j, _, _), f in zip(steps, factors, strict=True)])
    target = sum(c * p for c, p in zip(coef, projections, strict=True)) / coef.sum()
    for (j, _, shape), proj, f in zip(steps, projections, factors, strict=True):
        delta = (target - proj) / f
        tables[j] = tables[j] + delta.reshape(shape)


def make_consistent(
    tables: Sequence[np.ndarray],
    marginals: Sequence[tuple[str, ...]],
    weights: Sequence[float],
    *,
    nonnegative: bool = True,
    tol: float = 1e-10,
    max_iter: int = 1000,
) -> tuple[list[np.ndarray], dict]:
    """Make measured marginals agree on every shared set of columns.

    Parameters
    ----------
    tables : list of ndarray
        One table per marginal, one axis per column (in the marginal's
        order), summing to 1.
    marginals : list of tuple of str
        The columns of each table.
    weights : list of float
        ``w_A > 0`` per marginal: the inverse of its mean per-cell variance.
    nonnegative : bool, default=True
        Alternate with the projection of each table onto the simplex until
        both hold (CALM's repeated consistency and non-negativity).
    tol : float, default=1e-10
        Largest disagreement (and negative cell) accepted.
    max_iter : int, default=1000
        Rounds of (consistency, non-negativity).

    Returns
    -------
    tables : list of ndarray
        The consistent tables (new arrays).
    info : dict
        ``n_iter``, ``gap`` (the largest disagreement left) and
        ``negative`` (the most negative cell left, 0 when none).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp.marginals._consistency import make_consistent
    >>> ab = np.array([[0.3, 0.2], [0.1, 0.4]])   # a's margin: 0.5, 0.5
    >>> ac = np.array([[0.4, 0.2], [0.3, 0.1]])   # a's margin: 0.6, 0.4
    >>> (ab2, ac2), info = make_consistent([ab, ac], [("a", "b"), ("a", "c")], [1.0, 1.0])
    >>> ab2.sum(axis=1).round(3).tolist(), ac2.sum(axis=1).round(3).tolist()
    ([0.55, 0.45], [0.55, 0.45])
    """
    tables = [np.array(t, dtype=float) for t in tables]
    marginals = [tuple(m) for m in marginals]
    weights = [float(w) for w in weights]
    if any(not np.isfinite(w) or w <= 0 for w in weights):
        raise ValueError("weights must be finite numbers > 0.")
    shared = shared_subsets(marginals)
    plan = _plan(shared, marginals, [t.shape for t in tables])
    info = {"n_iter": 0, "gap": 0.0, "negative": 0.0}
    for it in range(1, max_iter + 1):
        info["n_iter"] = it
        for steps in plan:
            _consistency_step(tables, weights, steps)
        # One pass makes the tables consistent (each step keeps what the
        # earlier, smaller sets fixed): what is left is round-off.
        info["gap"] = _largest_gap(tables, plan)
        info["negative"] = min(0.0, min(float(t.min()) for t in tables))
        if not nonnegative or info["negative"] >= -tol:
            break
        tables = [project_to_simplex(t.ravel()).reshape(t.shape) for t in tables]
        info["gap"] = _largest_gap(tables, plan)
        info["negative"] = 0.0
        if info["gap"] <= tol:
            break
    if nonnegative:
        # Cells within tol of 0 (round-off of the last consistency pass).
        tables = [np.maximum(t, 0.0) for t in tables]
    return tables, info


def _largest_gap(tables, plan):
    gap = 0.0
    for steps in plan:
        projections = [tables[j].sum(axis=axes) for j, axes, _ in steps]
        for p in projections[1:]:
            gap = max(gap, float(np.abs(p - projections[0]).max(initial=0.0)))
    return gap


def weighted_distance(
    tables: Sequence[np.ndarray], truth: Sequence[np.ndarray], weights: Sequence[float]
) -> float:
    """``sqrt(sum_A w_A ||table_A - truth_A||^2)``: the norm consistency never increases."""
    return float(
        np.sqrt(
            sum(
                w * float(np.sum((np.asarray(t) - np.asarray(u)) ** 2))
                for t, u, w in zip(tables, truth, weights, strict=True)
            )
        )
    )


def no_interaction(table: np.ndarray, tol: float = 1e-10, max_iter: int = 500) -> np.ndarray:
    """The table of maximum entropy with the same margins on every set of all but one axis.

    For two axes, the product of the two one-way margins; for more, iterative
    proportional fitting of those margins (the model without the table's
    highest-order interaction).
    """
    table = np.asarray(table, dtype=float)
    d = table.ndim
    if d < 2:
        return table.copy()
    if d == 2:
        return np.outer(table.sum(axis=1), table.sum(axis=0))
    out = np.full(table.shape, table.sum() / table.size)
    targets = [(axis, table.sum(axis=axis, keepdims=True)) for axis in range(d)]
    for _ in range(max_iter):
        worst = 0.0
        for axis, target in targets:
            current = out.sum(axis=axis, keepdims=True)
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.where(current > 0, target / current, 0.0)
            worst = max(worst, float(np.abs(current - target).max()))
            out = out * ratio
        if worst <= tol:
            break
    return out


def shrink_interactions(
    tables: Sequence[np.ndarray], noise: Sequence[float]
) -> tuple[list[np.ndarray], list[float]]:
    """Shrink each table's highest-order interaction towards none (James-Stein).

    Each table t (two or more axes) is moved towards ``b``, its
    no-interaction model (:func:`no_interaction`), by the positive-part
    James-Stein factor ``lambda = max(0, 1 - V / ||t - b||^2)``, with ``V``
    the expected squared norm of the noise in the interaction (the
    estimate's variance summed over the cells, times the interaction's share
    of the dimensions, ``prod(k_i - 1) / prod(k_i)``). ``b`` has the same
    margins on every smaller set of axes, and so has every point between t
    and b: consistency and non-negativity are kept.

    Returns the tables and the factors ``lambda`` (1: kept, 0: no interaction).
    """
    out, factors = [], []
    for table, v in zip(tables, noise, strict=True):
        table = np.asarray(table, dtype=float)
        if table.ndim < 2:
            out.append(table.copy())
            factors.append(1.0)
            continue
        base = no_interaction(table)
        share = float(np.prod([k - 1 for k in table.shape]) / table.size)
        observed = float(np.sum((table - base) ** 2))
        lam = 0.0 if observed <= 0 else max(0.0, 1.0 - share * float(v) / observed)
        out.append(base + lam * (table - base))
        factors.append(lam)
    return out, factors
