"""Choosing a mechanism by its expected loss, among all the package has.

multi-freq-ldpy's "ADP" picks between GRR and OUE by their variance; this
chooser compares every frequency oracle of the package, LDP and
utility-optimized, by the exact expected loss of each channel's unbiased
estimator (``Channel.estimator_variance``), and returns the best one with the
whole table.
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
    from ..mechanisms._base import BaseMechanism

__all__ = ["choose_mechanism", "choose_strategy"]

_LOSSES = ("l2", "l1", "tv")


def _ldp_candidates(epsilon, categories):
    """(name, unfitted mechanism) pairs of RR, RAPPOR and OUE, which every choice weighs."""
    from ..mechanisms import RAPPOR, RandomizedResponse

    return [
        ("RR", RandomizedResponse(epsilon, categories=categories)),
        ("RAPPOR", RAPPOR(epsilon, categories=categories)),
        ("OUE", RAPPOR(epsilon, theta=0.5, categories=categories)),
    ]


def _candidates(epsilon, categories, sensitive_mask, sensitive=None):
    """(name, unfitted mechanism) pairs; ULDP ones only with a sensitive set."""
    from ..mechanisms import (
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
    from ..mechanisms._hadamard import UtilityOptimizedHadamardResponse
    from ..mechanisms._utility_optimized_subset import UtilityOptimizedSubsetSelection

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
    >>> from sklearn_uldp.model_selection._choose import choose_mechanism
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


# ------------------------------------------------------------------ tables
#: Mechanisms compared per column by :func:`choose_strategy`: those whose
#: fake reports and row privacy are known in closed form, so that every
#: strategy can use them.
_STRATEGY_CANDIDATES = ("RR", "RAPPOR", "OUE", "uRR", "uRAP", "uOUE")


def _strategy_candidates(epsilon, categories, mask, sensitive):
    from ..mechanisms import UtilityOptimizedOUE, UtilityOptimizedRAPPOR, UtilityOptimizedRR

    out = _ldp_candidates(epsilon, categories)
    if not mask.all():
        sens = {"sensitive": sensitive, "categories": categories}
        out += [
            ("uRR", UtilityOptimizedRR(epsilon, **sens)),
            ("uRAP", UtilityOptimizedRAPPOR(epsilon, **sens)),
            ("uOUE", UtilityOptimizedOUE(epsilon, **sens)),
        ]
    return out


def choose_strategy(
    columns: dict[str, Any],
    epsilon: float,
    *,
    sensitive: dict[str, Any] | None = None,
    attribute_epsilon: float | None = None,
    prior: dict[str, ArrayLike] | None = None,
    n: int | None = None,
    loss: Literal["l2", "l1", "tv"] = "tv",
) -> tuple[Any, pd.DataFrame]:
    """The strategy and the per-column mechanisms with the smallest expected loss.

    For a table whose every row is one person's d attributes, compares the
    three strategies of :class:`~sklearn_uldp.compose.DataFramePrivatizer`
    at the same guarantees: each person's row spends at most ``epsilon``
    (``epsilon_spent_``) and each attribute at most ``attribute_epsilon``
    (``attribute_epsilons_``, rows that differ in that attribute only):

    * ``"split"``: every column at ``min(attribute_epsilon, epsilon / d)``,
      reported by the n people;
    * ``"sample"`` (SMP): every column at ``min(attribute_epsilon,
      epsilon)``, reported by n / d people on average;
    * ``"sample+fake"`` (RS+FD): every attribute at
      ``t = min(attribute_epsilon, ln(1 + (e^epsilon - 1) / d))``, the
      sampled column privatized at ``ln(1 + d (e^t - 1))`` among fakes, so
      that the row spends ``epsilon`` (exact for identical columns of k-RR
      or unary encoding with zero fakes; the privatizer computes its exact
      budgets, see ``epsilon_spent_``).

    In each, every column gets the mechanism with the smallest expected loss
    of its per-attribute channel's unbiased estimator (worst case over
    distributions, or under ``prior``), among k-RR, basic RAPPOR, OUE and,
    for columns with a sensitive set, uRR, uRAP and uOUE; RS+FD uses zero
    fakes for unary encoding and random ones otherwise. The strategy with
    the smallest mean loss over the columns wins.

    With ``attribute_epsilon`` left at ``epsilon``, RS+FD is never chosen:
    its reports are a post-processing of SMP's at the inner budget (fill
    the other columns with fakes, drop the index), so at an equal row
    budget SMP's are at least as informative. It can win when the
    attributes must be better protected than the row (``attribute_epsilon
    < epsilon``), typically at small budgets with ``epsilon`` near
    ``ln(1 + d (e^attribute_epsilon - 1))``, where "split" gives each
    column only epsilon / d and "sample" cannot use more than
    ``attribute_epsilon``.

    Parameters
    ----------
    columns : dict of {str: int or array-like}
        Column -> its number of categories (0..k-1) or its categories.
    epsilon : float
        Budget of a person's whole row (> 0).
    sensitive : dict of {str: array-like}, default=None
        Column -> its sensitive categories (columns left out: every
        category sensitive, LDP mechanisms only).
    attribute_epsilon : float, default=None
        Budget of each attribute; None means ``epsilon``.
    prior : dict of {str: array-like}, default=None
        Column -> a distribution of its values; the worst case otherwise.
    n : int, default=None
        Number of people (None: 1); it scales every loss alike.
    loss : {"l2", "l1", "tv"}, default="tv"

    Returns
    -------
    privatizer : DataFramePrivatizer
        Unfitted, with the chosen strategy and mechanisms.
    table : pandas.DataFrame
        One row per (strategy, column), the chosen strategy first, then by
        mean loss: ``mechanism`` (its name in the literature, e.g. "OUE"),
        ``builds`` (the class and non-default parameters the privatizer
        holds, e.g. ``"RAPPOR(theta=0.5)"`` for OUE), ``epsilon`` (the
        column's budget: the inner one for RS+FD), ``loss`` and
        ``mean_loss`` (of the strategy).

    Examples
    --------
    >>> from sklearn_uldp.model_selection import choose_strategy
    >>> cols = {"age": 8, "sex": ["f", "m"], "job": 20, "vote": 4, "town": 50}
    >>> priv, table = choose_strategy(cols, 1.0, n=100_000)
    >>> priv.strategy, list(table.index.names)
    ('sample', ['strategy', 'column'])
    >>> table.loc["sample", "job"][["mechanism", "builds"]].tolist()
    ['OUE', 'RAPPOR(theta=0.5)']
    >>> job = priv.mechanisms["job"]  # what the table names
    >>> type(job).__name__, job.theta
    ('RAPPOR', 0.5)
    >>> from sklearn_uldp.mechanisms import amplified_epsilon
    >>> row = amplified_epsilon(1.0, 5)  # each attribute 1.0, the row 2.26
    >>> priv, table = choose_strategy(cols, row, attribute_epsilon=1.0)
    >>> priv.strategy
    'sample+fake'
    """
    from ..compose import DataFramePrivatizer
    from ..mechanisms._attribute_sampling import SampledFakeChannel, supported_fakes

    if not isinstance(columns, dict) or not columns:
        raise ValueError(
            "columns must be a non-empty dict {column: number of categories or "
            "categories}, e.g. {'age': 8, 'sex': ['f', 'm']}."
        )
    epsilon = check_epsilon(epsilon)
    attribute_epsilon = epsilon if attribute_epsilon is None else check_epsilon(attribute_epsilon)
    if loss not in _LOSSES:
        raise ValueError(f"loss must be one of {list(_LOSSES)}, got {loss!r}.")
    sensitive = dict(sensitive or {})
    prior = dict(prior or {})
    unknown = sorted((set(sensitive) | set(prior)) - set(columns), key=str)
    if unknown:
        raise ValueError(
            f"sensitive/prior name columns {unknown} that are not in columns {list(columns)[:10]}."
        )
    if n is None:
        n = 1
    elif isinstance(n, bool) or not isinstance(n, Real) or not n >= 1:
        raise ValueError(f"n must be a number of people >= 1, got {n!r}.")
    d = len(columns)
    domains, masks = {}, {}
    for name, k in columns.items():
        if isinstance(k, Integral) and not isinstance(k, bool):
            if k < 2:
                raise ValueError(f"Column {name!r} needs at least 2 categories, got {k}.")
            domains[name] = np.arange(int(k))
        else:
            domains[name] = check_categories(k)
        masks[name] = (
            check_sensitive(sensitive[name], domains[name])
            if name in sensitive
            else np.ones(len(domains[name]), dtype=bool)
        )
    budgets = {
        "split": min(attribute_epsilon, epsilon / d),
        "sample": min(attribute_epsilon, epsilon),
    }
    if d >= 2:
        budgets["sample+fake"] = min(attribute_epsilon, math.log1p(math.expm1(epsilon) / d))
    else:
        del budgets["sample"]
    rows: list[dict[str, Any]] = []
    chosen: dict[str, dict[str, Any]] = {}
    for strategy, eps in budgets.items():
        inner = math.log1p(d * math.expm1(eps)) if strategy == "sample+fake" else eps
        users = n / d if strategy == "sample" else n
        chosen[strategy] = {}
        for name in columns:
            best = None
            for short, mech in _strategy_candidates(
                inner, domains[name], masks[name], sensitive.get(name, masks[name])
            ):
                try:
                    channel = clone(mech).fit().channel_
                except ValueError:
                    continue  # a budget this sampler cannot realize
                if strategy == "sample+fake":
                    channel = SampledFakeChannel(
                        channel.categories, channel, d, supported_fakes(channel)[0]
                    )
                if name in prior:
                    value = _loss_at(channel, _as_prior(prior[name], name, channel), users, loss)
                else:
                    value = _worst_case(channel, masks[name], users, loss)[0]
                if best is None or value < best[0] * (1 - 1e-9):
                    best = (value, short, mech)
            # RS+FD's mechanisms take the attribute's budget (the privatizer
            # amplifies it); the others their own.
            assert best is not None  # k-RR realizes every budget checked above
            chosen[strategy][name] = clone(best[2]).set_params(epsilon=eps)
            rows.append(
                {
                    "strategy": strategy,
                    "column": name,
                    "mechanism": best[1],
                    "builds": _built(best[2]),
                    "epsilon": inner,
                    "loss": best[0],
                }
            )
    table = pd.DataFrame(rows)
    table["mean_loss"] = table.groupby("strategy")["loss"].transform("mean")
    order = table.groupby("strategy", sort=False)["mean_loss"].first().sort_values(kind="stable")
    table["_rank"] = table["strategy"].map({s: i for i, s in enumerate(order.index)})
    table = table.sort_values(["_rank"], kind="stable").drop(columns="_rank")
    table = table.set_index(["strategy", "column"])
    best_strategy = order.index[0]
    privatizer = DataFramePrivatizer(
        {name: clone(m) for name, m in chosen[best_strategy].items()}, strategy=best_strategy
    )
    return privatizer, table


def _built(mechanism):
    """The class and non-default parameters of a candidate, e.g. ``RAPPOR(theta=0.5)``
    (its budget and domain are the table's other columns)."""
    defaults = type(mechanism)().get_params() if _default_constructible(mechanism) else {}
    changed = [
        f"{key}={value!r}"
        for key, value in mechanism.get_params(deep=False).items()
        if key not in ("epsilon", "categories", "sensitive", "random_state")
        and (key not in defaults or repr(defaults[key]) != repr(value))
    ]
    return f"{type(mechanism).__name__}({', '.join(changed)})"


def _default_constructible(mechanism):
    try:
        type(mechanism)()
    except TypeError:
        return False
    return True


def _as_prior(p, name, channel):
    p = np.asarray(p, dtype=float)
    if p.shape != (channel.n_categories,) or (p < 0).any() or not np.isclose(p.sum(), 1.0):
        raise ValueError(
            f"prior[{name!r}] must be a distribution over the column's "
            f"{channel.n_categories} categories (non-negative, summing to 1)."
        )
    return p
