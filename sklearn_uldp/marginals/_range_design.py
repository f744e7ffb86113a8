"""The granularities of HDG and TDG: how many bins each grid cuts a column into.

Yang, Wang, Li, Cheng & Su (VLDB 2021) choose the granularities before
collecting anything, from the number of users, the budget and the number of
columns: a grid with more cells answers a range query with fewer partially
covered cells (less *non-uniformity error*, the error of assuming that the
users of a cell are spread evenly over it) but sums more noisy cells (more
*noise error*). With the per-cell variance ``V`` of the grid's oracle (its
users are ``n / m`` of the n users, m the number of grids), their guideline
minimizes

* for a 1-D grid of g bins: ``E1(g) = g V + (alpha1 / g)^2``;
* for a 2-D grid of g x g cells: ``E2(g) = (g^2 / 4) V + (2 alpha2 / g)^2``

(a 2-D query over half of each column covers g^2 / 4 cells; its partially
covered cells lie along its four edges, about 2 / g of the users), with
``alpha1 = 0.7`` and ``alpha2 = 0.03``, the constants of the authors'
experiments (as in their code). Here ``alpha2`` is 0.12 by default: measured
on eight pairs of numeric columns of three real tables other than the
benchmark's (``benchmarks/bench_range_granularity.py``), it gave HDG a 7 %
smaller error on random boxes than 0.03 (geometric mean over the pairs and
budgets; smaller at each of epsilon = 0.5, 1 and 2), and no larger one on
the benchmark's pair. That is HDG's default; TDG's 2-D grids, which no 1-D
grid corrects, take the exponent-3 model (``e`` below: the squared
non-uniformity term ``(2 alpha2)^2 / g^e``, with ``alpha2 = 0.21``) by
default, measured on real and synthetic data. With the variance of
optimized local hashing,
``V = 4 e^eps / ((e^eps - 1)^2 n / m)``, the minimizers are the paper's
closed forms ``g1 = (n (e^eps - 1)^2 alpha1^2 / (2 m e^eps))^(1/3)`` and
``g2 = (2 alpha2 (e^eps - 1) sqrt(n / (m e^eps)))^(1/2)``.

:func:`choose_granularity` minimizes the same two functions over the
integers with the *exact* per-cell variance of the oracle that will measure
each grid (the one of least variance for its number of cells, as
:func:`~sklearn_uldp.marginals.choose_oracle` picks it: k-RR for a few cells,
subset selection or local hashing for many), instead of the paper's powers
of two; the 1-D granularity is a multiple of the 2-D one, so that the 1-D
bins nest in the 2-D bins. The derivation is on the "Marginals" page.
The paper's guideline is ``alpha2=PAPER_ALPHA_2, exponent=2`` (for HDG
``exponent`` may be left out; TDG's default exponent is 3).
"""

from __future__ import annotations

import math
from numbers import Integral
from typing import Any

import numpy as np
import pandas as pd

from ..utils._validation import check_epsilon
from ._design import MAX_CELLS, choose_oracle
from ._range_channel import METHODS

__all__ = [
    "choose_granularity",
    "ALPHA_1",
    "ALPHA_2",
    "EXPONENT",
    "PAPER_ALPHA_2",
    "FITTED_ALPHA_1",
    "FITTED_ALPHA_2",
    "FITTED_EXPONENT",
    "SMOOTH_ALPHA_1",
    "SMOOTH_ALPHA_2",
    "SMOOTH_EXPONENT",
    "TDG_EXPONENT",
    "MAX_G1",
]

#: The non-uniformity constant of 1-D grids in the paper's guideline.
ALPHA_1 = 0.7
#: The non-uniformity constant of 2-D grids: 4 times the paper's 0.03, whose
#: 2-D grids were too coarse on eight pairs of three real tables
#: (benchmarks/bench_range_granularity.py; "Marginals" page). Pass
#: alpha2=PAPER_ALPHA_2 for the paper's guideline.
ALPHA_2 = 0.12
#: The paper's (and its code's) constant of 2-D grids.
PAPER_ALPHA_2 = 0.03
#: The paper's non-uniformity exponent: the squared non-uniformity error of
#: a grid of granularity g falls as g^-2.
EXPONENT = 2.0
#: The largest non-uniformity exponent accepted (``g ** e`` stays a float).
MAX_EXPONENT = 16
#: The alternative model measured in issue 32 (``exponent=3``): the squared
#: non-uniformity error falls as g^-3 (a cut cell's misplaced share itself
#: shrinks with the cell where the density is smooth at that scale), with
#: constants fitted on a sweep of (g1, g2) over two pairs of columns
#: (benchmarks/bench_range_granularity.py; "Marginals" page). Not the
#: default: on held-out pairs it is 15 % better at epsilon = 4 and level at
#: epsilon 0.5 to 2, and it does not bring HDG below the 16 x 16 grid at 1.
FITTED_EXPONENT = 3.0
FITTED_ALPHA_1 = 2.4
FITTED_ALPHA_2 = 0.21
#: A rule for smooth data (``exponent=4``): the squared non-uniformity error
#: falls as g^-4 (a density close to linear within a cell). From a study of
#: 29 rules on real tables and smooth synthetic data
#: (bench_range_granularity.py --rules; "Marginals" page): not the study's
#: pre-registered pick (which missed its criterion) but, chosen afterwards,
#: the lowest synthetic score among the rules within 2 % of the default on
#: the real pairs; then confirmed on fresh noise in a second pre-registered
#: run: HDG's error 0.86 times the default's on six synthetic families (0.71
#: at epsilon = 4), 1.02 times on nine real pairs. Not the default: it
#: leaves HDG above the 16 x 16 grid on one of the benchmark's three sets of
#: boxes at epsilon = 2.
SMOOTH_EXPONENT = 4.0
SMOOTH_ALPHA_1 = 7.6
SMOOTH_ALPHA_2 = 0.362
#: TDG's own default model: the exponent-3 rule (FITTED_*). TDG has no 1-D
#: grids to correct the cells a box cuts, and its one rule need not be
#: HDG's; a TDG-only confirmation on a third draw of fresh noise, boxes and
#: synthetic data (bench_range_granularity.py --rules --confirm "e=3 k=+0"
#: --tdg-only --fresh 2; "Marginals" page) gave TDG's error 0.96 times the
#: exponent-2 rule's on nine real pairs and 0.81 times on six synthetic
#: families.
TDG_EXPONENT = FITTED_EXPONENT
#: Largest 1-D granularity: HDG answers a pair's queries from a g1 x g1
#: response matrix (8 MB of float64 at 1024).
MAX_G1 = 1024
#: Largest 2-D granularity (a 2-D grid has g2^2 cells, at most MAX_CELLS).
MAX_G2 = int(math.isqrt(MAX_CELLS))


#: (cells, epsilon, oracle name) -> (oracle, per-cell variance of one user):
#: a design is recomputed at every fit (searches, benchmarks), and the
#: oracles' table costs tens of milliseconds per number of cells.
_VARIANCES: dict = {}
_MAX_CACHED = 4096


def _variance(n_cells, epsilon, n_users, mechanism, cache):
    """Mean per-cell variance of the grid's oracle at the uniform distribution."""
    key = (n_cells, float(epsilon), mechanism) if isinstance(mechanism, str) else None
    found = _VARIANCES.get(key) if key is not None else None
    if found is None:
        name, mech = choose_oracle(n_cells, epsilon, None, mechanism, cache=cache)
        var = mech.channel_.estimator_variance(np.full(n_cells, 1.0 / n_cells), 1)
        found = (name, float(np.mean(var)))
        if key is not None:
            if len(_VARIANCES) >= _MAX_CACHED:
                _VARIANCES.clear()
            _VARIANCES[key] = found
    name, var = found
    return name, var / n_users


def _local_minimum(candidates, start, cost):
    """The local minimum of ``cost`` over the sorted ``candidates`` reached from ``start``."""
    i = int(np.argmin(np.abs(np.asarray(candidates, dtype=float) - start)))
    values = {i: cost(candidates[i])}
    while True:
        best = i
        for j in (i - 1, i + 1):
            if 0 <= j < len(candidates):
                if j not in values:
                    values[j] = cost(candidates[j])
                if values[j] < values[best]:
                    best = j
        if best == i:
            return candidates[i], values
        i = best


def choose_granularity(
    n: int,
    epsilon: float,
    n_columns: int,
    method: str = "hdg",
    *,
    mechanism: Any = "auto",
    alpha1: float | None = None,
    alpha2: float | None = None,
    exponent: float | None = None,
    max_g1: int = MAX_G1,
    max_g2: int = MAX_G2,
    cache: dict | None = None,
) -> tuple[int | None, int | None, pd.DataFrame]:
    """The granularities (g1, g2) of HDG or TDG from n, epsilon and the columns.

    Minimizes the error model of a 1-D grid, ``g V(g) + alpha1^2 / g^e``,
    and of a 2-D grid, ``(g^2 / 4) V(g^2) + (2 alpha2)^2 / g^e``, where
    ``V(K)`` is the per-cell variance (at the uniform distribution) of the
    oracle of least variance for K cells with ``n / m`` users, m the number
    of grids, and ``e`` the non-uniformity exponent (the paper's 2, HDG's
    default; TDG's is 3). First
    g2 over the integers 2 .. ``max_g2``, then g1 over the multiples of g2
    up to ``max_g1``. With ``e = 2`` and the variance of local hashing (the
    same for every K) these are the paper's closed forms.

    Parameters
    ----------
    n : int
        Number of users.
    epsilon : float
    n_columns : int
        d, the number of numeric columns.
    method : {"hdg", "tdg"}, default="hdg"
    mechanism : "auto", str or mechanism, default="auto"
        The oracle of each grid (see :func:`~sklearn_uldp.marginals.choose_oracle`).
    alpha1, alpha2 : float or None, default=None
        The non-uniformity constants. None: the paper's 0.7 for 1-D grids,
        and for 2-D grids 0.12, four times the paper's 0.03 (measured on
        real tables, see the module notes; pass ``alpha2=0.03`` for the
        paper's guideline, and ``exponent=2`` with TDG); with
        ``exponent=3`` (TDG's default), the constants fitted with it (2.4
        and 0.21); with ``exponent=4``, the smooth-data rule's (7.6 and
        0.362); with any other exponent, the exponent-2 rule's (0.7 and
        0.12).
    exponent : float or None, default=None
        ``e``, how fast the squared non-uniformity error falls with the
        granularity (in (0, 16]). None: 2 (the paper's) for HDG, 3 for TDG
        (TDG's own rule, measured on real and synthetic data: "Marginals"
        page). ``3`` is the alternative model
        measured on real tables (better at epsilon = 4, level at 0.5 to 2;
        "Marginals" page); ``4`` the rule for smooth data (coarser grids
        where n or epsilon is large: 14 % lower error than the default on
        smooth synthetic data, 2 % higher on real tables; "Marginals" page).
    max_g1, max_g2 : int, default=1024, 256
    cache : dict, default=None
        The oracles' tables already computed (shared with
        :func:`~sklearn_uldp.marginals.choose_oracle`).

    Returns
    -------
    g1 : int or None
        None for TDG.
    g2 : int or None
        None for HDG over one column.
    table : DataFrame
        The candidates evaluated: ``grid`` ("1-D" or "2-D"), ``g``,
        ``cells``, ``oracle``, ``noise`` (the variance term), ``non_uniformity``
        (the squared bias term) and ``error`` (their sum); the chosen ones
        marked in ``chosen``. Its ``attrs`` hold the model used:
        ``method``, ``exponent``, ``alpha1`` and ``alpha2``.

    Examples
    --------
    >>> from sklearn_uldp.marginals import choose_granularity
    >>> g1, g2, table = choose_granularity(1_000_000, 1.0, 2)
    >>> g1 % g2, g2
    (0, 12)
    >>> choose_granularity(1_000_000, 1.0, 2, method="tdg")[:2]  # TDG's own rule
    (None, 12)
    >>> choose_granularity(1_000_000, 1.0, 2, method="tdg", alpha2=0.03, exponent=2)[1]
    8
    >>> choose_granularity(1_000_000, 1.0, 2, alpha2=0.03)[1]  # the paper's constant
    6
    >>> choose_granularity(1_000_000, 4.0, 2, exponent=3)[:2]  # fewer, coarser cells
    (88, 22)
    >>> choose_granularity(1_000_000, 4.0, 2, exponent=4)[:2]  # smooth data: fewer still
    (64, 16)
    """
    epsilon = check_epsilon(epsilon)
    if isinstance(n, bool) or not isinstance(n, Integral) or n < 1:
        raise ValueError(f"n must be a number of users >= 1, got {n!r}.")
    if isinstance(n_columns, bool) or not isinstance(n_columns, Integral) or n_columns < 1:
        raise ValueError(f"n_columns must be an integer >= 1, got {n_columns!r}.")
    if method not in METHODS:
        raise ValueError(f"method must be one of {list(METHODS)}, got {method!r}.")
    d = int(n_columns)
    if method == "tdg" and d < 2:
        raise ValueError("TDG needs at least two columns (pairs); use method='hdg'.")
    if exponent is None:
        exponent = TDG_EXPONENT if method == "tdg" else EXPONENT
    # the constants chosen with each model; other exponents take the default's
    constants = (ALPHA_1, ALPHA_2)
    if exponent == FITTED_EXPONENT:
        constants = (FITTED_ALPHA_1, FITTED_ALPHA_2)
    elif exponent == SMOOTH_EXPONENT:
        constants = (SMOOTH_ALPHA_1, SMOOTH_ALPHA_2)
    if alpha1 is None:
        alpha1 = constants[0]
    if alpha2 is None:
        alpha2 = constants[1]
    for name, value in (("alpha1", alpha1), ("alpha2", alpha2), ("exponent", exponent)):
        if isinstance(value, bool) or not (
            isinstance(value, (int, float)) and math.isfinite(value) and value > 0
        ):
            raise ValueError(f"{name} must be a number > 0, got {value!r}.")
    if exponent > MAX_EXPONENT:
        # g ** exponent overflows a float for large exponents; and a model
        # whose error falls that fast says that any grid is fine enough.
        raise ValueError(
            f"exponent must be at most {MAX_EXPONENT} (the paper's is 2), got {exponent!r}."
        )
    pairs = d * (d - 1) // 2
    m = pairs if method == "tdg" else d + pairs
    users = n / m
    # The closed forms with local hashing's variance: where the search starts.
    v_olh = 4.0 * math.exp(epsilon) / (math.expm1(epsilon) ** 2 * users)
    cache = {} if cache is None else cache
    rows: list[dict] = []

    def cost(kind, g):
        cells = g if kind == "1-D" else g * g
        oracle, v = _variance(cells, epsilon, users, mechanism, cache)
        if kind == "1-D":
            noise, bias = g * v, alpha1**2 / g**exponent
        else:
            noise, bias = g * g * v / 4.0, (2.0 * alpha2) ** 2 / g**exponent
        rows.append(
            {
                "grid": kind,
                "g": g,
                "cells": cells,
                "oracle": oracle,
                "noise": noise,
                "non_uniformity": bias,
                "error": noise + bias,
            }
        )
        return noise + bias

    g2 = None
    if d >= 2:
        top = max(2, min(int(max_g2), MAX_G2))
        # (g V / 2 = e (2 alpha2)^2 / g^(e + 1))
        start = (8.0 * exponent * alpha2**2 / v_olh) ** (1.0 / (exponent + 2.0))
        g2, _ = _local_minimum(list(range(2, top + 1)), start, lambda g: cost("2-D", g))
    g1 = None
    if method == "hdg":
        base = 2 if g2 is None else g2
        top = max(base, int(max_g1))
        candidates = [base * k for k in range(1, top // base + 1)]
        if g2 is None:
            candidates = list(range(2, top + 1))
        # (V = e alpha1^2 / g^(e + 1))
        start = (exponent * alpha1**2 / v_olh) ** (1.0 / (exponent + 1.0))
        g1, _ = _local_minimum(candidates, start, lambda g: cost("1-D", g))
    table = pd.DataFrame(rows).drop_duplicates(["grid", "g"]).reset_index(drop=True)
    table["chosen"] = ((table["grid"] == "1-D") & (table["g"] == g1)) | (
        (table["grid"] == "2-D") & (table["g"] == g2)
    )
    # the model that chose them, for whoever reads the table later
    table.attrs.update(
        method=method, exponent=float(exponent), alpha1=float(alpha1), alpha2=float(alpha2)
    )
    return g1, g2, table
