"""Choosing a frequency oracle by its expected loss, among all the package has.

multi-freq-ldpy's "ADP" picks between GRR and OUE by their variance; this
chooser compares every frequency oracle of the package, LDP and
utility-optimized, by the exact expected loss of each channel's unbiased
estimator (``Channel.estimator_variance``), and returns the best one with the
whole table.

It lives with the mechanisms (it reads nothing but their channels) and is
public as :func:`sklearn_uldp.model_selection.choose_mechanism`: the
subpackages above ``mechanisms`` that choose an oracle for a domain
(``marginals``) import it from here, not from ``model_selection``, which
builds on ``compose`` (``choose_strategy`` returns a DataFramePrivatizer),
while ``compose`` builds on ``marginals`` (``strategy="marginals"``).
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from numbers import Integral, Real
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd
from scipy.optimize import minimize_scalar
from sklearn.base import clone

from ..utils._typing import ArrayLike
from ..utils._validation import check_categories, check_epsilon, check_sensitive

if TYPE_CHECKING:
    from ._base import BaseMechanism

__all__ = ["choose_mechanism"]

_LOSSES = ("l2", "l1", "tv")


def _ldp_candidates(epsilon, categories):
    """(name, unfitted mechanism) pairs of RR, RAPPOR and OUE, which every choice weighs."""
    from . import RAPPOR, RandomizedResponse

    return [
        ("RR", RandomizedResponse(epsilon, categories=categories)),
        ("RAPPOR", RAPPOR(epsilon, categories=categories)),
        ("OUE", RAPPOR(epsilon, theta=0.5, categories=categories)),
    ]


def _candidates(epsilon, categories, sensitive_mask, sensitive=None):
    """(name, unfitted mechanism) pairs; ULDP ones only with a sensitive set."""
    from . import (
        HadamardResponse,
        TransformedSubsetSelection,
        UtilityOptimizedBlockDesign,
        UtilityOptimizedBlockedHadamardResponse,
        UtilityOptimizedHadamardCountMeanSketch,
        UtilityOptimizedLocalHashing,
        UtilityOptimizedOUE,
        UtilityOptimizedRAPPOR,
        UtilityOptimizedRR,
        UtilityOptimizedUnaryEncoding,
    )
    from ._hadamard import UtilityOptimizedHadamardResponse
    from ._utility_optimized_subset import UtilityOptimizedSubsetSelection

    cats = {"categories": categories}
    out = _ldp_candidates(epsilon, categories)
    out.append(("HR", HadamardResponse(epsilon, block_size="auto", **cats)))
    # Oracles that may live in optional modules of the package.
    for module, names in (
        ("_local_hashing", (("OLH", "OptimizedLocalHashing"), ("BLH", "BinaryLocalHashing"))),
        ("_subset_selection", (("SS", "SubsetSelection"),)),
        ("_count_mean_sketch", (("CMS", "CountMeanSketch"), ("HCMS", "HadamardCountMeanSketch"))),
    ):
        try:
            mod = importlib.import_module(f"sklearn_uldp.mechanisms.{module}")
        except ImportError:  # pragma: no cover - module not in this version
            continue
        for short, cls_name in names:
            cls = getattr(mod, cls_name, None)
            if cls is not None:
                out.append((short, cls(epsilon, **cats)))
    if sensitive_mask is not None and not sensitive_mask.all():
        # the user's own description of X_S (readable in reprs), as checked
        sens = {"sensitive": sensitive_mask if sensitive is None else sensitive, **cats}
        out += [
            ("uRR", UtilityOptimizedRR(epsilon, **sens)),
            ("uRAP", UtilityOptimizedRAPPOR(epsilon, theta="optimal", **sens)),
            ("uOUE", UtilityOptimizedOUE(epsilon, **sens)),
            ("uHR", UtilityOptimizedHadamardResponse(epsilon, **sens)),
            ("uSS", UtilityOptimizedSubsetSelection(epsilon, **sens)),
            ("uBD", UtilityOptimizedBlockDesign(epsilon, subset_size="optimal", **sens)),
            # He et al.'s transformations (USENIX Security 2025): OUE's, subset
            # selection's (uBD with one subset size), OLH's, HCMS's, blocked HR's
            ("uUE", UtilityOptimizedUnaryEncoding(epsilon, **sens)),
            ("uSS (He)", TransformedSubsetSelection(epsilon, **sens)),
            ("uLH", UtilityOptimizedLocalHashing(epsilon, **sens)),
            ("uHCMS", UtilityOptimizedHadamardCountMeanSketch(epsilon, **sens)),
            ("uHR (blocked)", UtilityOptimizedBlockedHadamardResponse(epsilon, **sens)),
        ]
    return out


def _loss_at(channel, p, n, loss):
    var = np.clip(channel.estimator_variance(p, n), 0.0, None)
    if loss == "l2":
        return float(var.sum())
    l1 = float(math.sqrt(2.0 / math.pi) * np.sqrt(var).sum())
    return l1 if loss == "l1" else 0.5 * l1


def _worst_case(channel, mask, n, loss):
    """Largest expected loss over distributions, and where it is reached.

    The loss is a concave function of p (a sum of concave functions of
    affine maps of p) and, for every channel here, invariant under
    permutations inside X_S and inside X_N; so its maximum over the simplex
    is on the segment p_b = b U(X_S) + (1 - b) U(X_N) (average any maximizer
    over those permutations). A 1-D concave maximization in b.
    """
    k = mask.size
    if mask.all() or not mask.any():
        p = np.full(k, 1.0 / k)
        return _loss_at(channel, p, n, loss), 1.0

    def p_of(b):
        return np.where(mask, b / mask.sum(), (1.0 - b) / (~mask).sum())

    grid = np.linspace(0.0, 1.0, 21)
    vals = [_loss_at(channel, p_of(b), n, loss) for b in grid]
    i = int(np.argmax(vals))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]
    res = minimize_scalar(
        lambda b: -_loss_at(channel, p_of(b), n, loss),
        bounds=(lo, hi),
        method="bounded",
        options={"xatol": 1e-6},
    )
    if -res.fun > vals[i]:
        return float(-res.fun), float(res.x)
    return float(vals[i]), float(grid[i])


def choose_mechanism(
    k: int | ArrayLike,
    epsilon: float,
    sensitive: ArrayLike | Callable[[Any], bool] | None = None,
    prior: ArrayLike | None = None,
    n: int | None = None,
    loss: Literal["l2", "l1", "tv"] = "l2",
    *,
    rtol: float = 1e-3,
) -> tuple[BaseMechanism, pd.DataFrame]:
    """The mechanism with the smallest expected loss, and the table of all.

    Every frequency oracle of the package is a candidate: the LDP ones (RR,
    RAPPOR, OUE, Hadamard response with the best block size, and OLH, BLH,
    subset selection, CMS and HCMS) and, given a sensitive set, the
    utility-optimized ones (uRR, uRAP with the optimal theta, uOUE, uHR, uSS
    and uBD with the optimal design, and He et al.'s transformations of OUE,
    subset selection, OLH, HCMS and blocked HR: uUE, "uSS (He)" (uBD with
    subset selection's size over X_S), uLH, uHCMS and "uHR (blocked)"; see
    :func:`~sklearn_uldp.mechanisms.to_utility_optimized`). An LDP mechanism also satisfies ULDP
    (every output protected), so it stays a candidate when some values are
    not sensitive. Each is scored by the exact expected loss of its channel's
    unbiased estimator (``Channel.estimator_variance``):

    * with a ``prior``: the expected loss when the users' values are i.i.d.
      from it;
    * without: the worst case over all distributions (the guarantee that
      holds whatever the data). The loss is concave in the distribution and
      symmetric inside X_S and inside X_N, so the worst case is found on the
      segment between the uniform distributions of X_S and of X_N.

    For uBD the worst case equals the converse bound
    (:func:`~sklearn_uldp.metrics.ubd_converse_bound`) up to the optimizer's
    tolerance: no ULDP mechanism can do better in the worst case.

    Parameters
    ----------
    k : int or array-like of shape (k,)
        The number of categories (they are then 0..k-1) or the categories.
    epsilon : float
        Privacy budget (> 0).
    sensitive : array-like, boolean mask or callable, default=None
        The sensitive categories X_S (as for the mechanisms). None: every
        category is sensitive, and only LDP mechanisms are compared.
    prior : array-like of shape (k,), default=None
        A distribution of the users' values; None for the worst case.
    n : int, default=None
        Number of users; the losses are for n users (None: n = 1, i.e. n
        times the loss). It does not change the ranking.
    loss : {"l2", "l1", "tv"}, default="l2"
        Expected squared l2 loss (exact), or the large-n expected l1 loss or
        total variation (normal approximation).
    rtol : float, default=1e-3
        Candidates whose loss is within this relative tolerance of the
        smallest are ties; a tie goes to the smaller report, then to the
        simpler mechanism (the order of the table's construction: RR,
        RAPPOR, OUE, HR, ..., uRR, uRAP, uOUE, uHR, uSS, uBD, uUE, ...). E.g. at
        epsilon = ln k with few sensitive values the optimal uBD design is
        almost uRR and uRR is chosen.

    Returns
    -------
    mechanism : BaseMechanism
        The best mechanism, unfitted, with ``categories`` set.
    table : pandas.DataFrame
        One row per candidate, the chosen one first, then by loss: ``loss``, ``report_bits`` (size
        of one report), ``worst_at`` (the mass on X_S of the worst
        distribution, NaN with a prior), ``params`` (the parameters chosen
        by the candidate's own optimizer) and ``mechanism`` (an unfitted
        instance).

    Examples
    --------
    >>> import math
    >>> from sklearn_uldp.model_selection import choose_mechanism
    >>> mech, table = choose_mechanism(100, math.log(100), sensitive=[0, 1, 2])
    >>> type(mech).__name__
    'UtilityOptimizedRR'
    >>> mech, table = choose_mechanism(100, 1.0)
    >>> table.index[0] in ("SS", "OUE")   # the middle-epsilon LDP oracles
    True
    >>> list(table.columns)
    ['loss', 'report_bits', 'worst_at', 'params', 'mechanism']
    """
    if isinstance(k, Integral) and not isinstance(k, bool):
        if k < 2:
            raise ValueError(f"k must be at least 2 categories, got {k}.")
        categories = np.arange(int(k))
    else:
        categories = check_categories(k)
    epsilon = check_epsilon(epsilon)
    if loss not in _LOSSES:
        raise ValueError(f"loss must be one of {list(_LOSSES)}, got {loss!r}.")
    if n is None:
        n = 1
    elif isinstance(n, bool) or not isinstance(n, Real) or not n >= 1:
        raise ValueError(f"n must be a number of users >= 1, got {n!r}.")
    kk = len(categories)
    mask = np.ones(kk, dtype=bool) if sensitive is None else check_sensitive(sensitive, categories)
    if prior is not None:
        prior = np.asarray(prior, dtype=float)
        if (
            prior.shape != (kk,)
            or not np.isfinite(prior).all()
            or (prior < 0).any()
            or not np.isclose(prior.sum(), 1.0)
        ):
            raise ValueError(
                f"prior must be a distribution over the {kk} categories "
                "(non-negative, summing to 1); pass None for the worst case."
            )
    rows = []
    for name, mech in _candidates(epsilon, categories, mask, sensitive):
        try:
            fitted = clone(mech).fit()
        except ValueError:
            continue  # e.g. a budget this oracle's sampler cannot realize
        channel = fitted.channel_
        if prior is not None:
            value, where = _loss_at(channel, prior, n, loss), np.nan
        else:
            value, where = _worst_case(channel, mask, n, loss)
        params = {}
        for key in ("theta_", "subset_size_"):
            try:
                params[key.rstrip("_")] = getattr(fitted, key)
            except AttributeError:
                pass
        for key in ("b", "hash_range", "n_buckets"):
            if hasattr(channel, key) and getattr(channel, key) is not None:
                params[key] = getattr(channel, key)
        try:
            bits = float(channel.report_bits)
        except NotImplementedError:  # pragma: no cover
            bits = np.nan
        rows.append(
            {
                "name": name,
                "loss": value,
                "report_bits": bits,
                "worst_at": where,
                "params": params,
                "mechanism": mech,
            }
        )
    table = pd.DataFrame(rows).set_index("name").sort_values("loss", kind="stable")
    table.index.name = None
    best = table["loss"].iloc[0]
    ties = table[table["loss"] <= best * (1.0 + rtol)]
    order = {row["name"]: i for i, row in enumerate(rows)}
    choice = min(ties.index, key=lambda name: (ties.loc[name, "report_bits"], order[name]))
    table = pd.concat([table.loc[[choice]], table.drop(index=choice)])
    return clone(table["mechanism"].iloc[0]), table
