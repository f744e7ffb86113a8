"""Choosing a strategy for a table, and (re-exported) a mechanism for a column.

``choose_mechanism`` lives with the mechanisms
(``sklearn_uldp/mechanisms/_choose.py``: it reads nothing but their channels,
and ``marginals``, which ``compose`` builds on, needs it); it is public here.
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any, Literal

import numpy as np
import pandas as pd
from sklearn.base import clone

from ..mechanisms._choose import _LOSSES, _ldp_candidates, _loss_at, _worst_case, choose_mechanism
from ..utils._typing import ArrayLike
from ..utils._validation import check_categories, check_epsilon, check_sensitive

__all__ = ["choose_mechanism", "choose_strategy"]

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
