"""From a DataFramePrivatizer's declaration to marginal release.

``DataFramePrivatizer`` gives each column its own mechanism; marginal
release chooses one oracle per *set* of columns, over the set's product
domain, and its reports are one row per user (the marginal, then the
oracle's report), not one block of columns per mechanism. So it is a
separate object, :class:`MarginalPrivatizer`, and
:func:`marginal_privatizer_from` reads a DataFramePrivatizer's declaration
(each column's domain, sensitive values and budget) to build one: the
strategy ``"marginals"`` of ``DataFramePrivatizer`` delegates to it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._privatizer import MarginalPrivatizer

__all__ = ["marginal_privatizer_from", "one_way_estimates"]


def _declared(mechanisms):
    """(column, mechanism) pairs of a DataFramePrivatizer's ``mechanisms``."""
    if isinstance(mechanisms, Mapping):
        return list(mechanisms.items())
    out = []
    for entry in mechanisms:
        name, mech, columns = entry
        if isinstance(mech, str):  # "drop"
            continue
        cols = [columns] if isinstance(columns, str) else list(columns)
        if len(cols) != 1:
            raise ValueError(
                f"Mechanism {name!r} selects {len(cols)} columns; marginal release needs "
                "one declared column per mechanism."
            )
        out.append((cols[0], mech))
    return out


def marginal_privatizer_from(
    privatizer: Any,
    *,
    marginal_size: int | str = 2,
    marginals: Any = None,
    mechanism: Any = "auto",
) -> MarginalPrivatizer:
    """The MarginalPrivatizer of a DataFramePrivatizer's columns.

    Each declared mechanism gives its column's domain (``categories``,
    which must be explicit), its sensitive values (``sensitive``, for a
    utility-optimized mechanism) and the budget (every mechanism must have
    the same ``epsilon``: a user sends one report, which spends it). The
    mechanisms' classes are not used: each marginal gets the oracle of
    least variance for its product domain (or ``mechanism``).

    Parameters
    ----------
    privatizer : DataFramePrivatizer
        Fitted or not; read through ``get_params()``.
    marginal_size, marginals, mechanism
        As for :class:`MarginalPrivatizer`.

    Returns
    -------
    privatizer : MarginalPrivatizer
        Unfitted, with the DataFramePrivatizer's ``random_state``.

    Examples
    --------
    >>> from sklearn_uldp import RandomizedResponse, UtilityOptimizedRR
    >>> from sklearn_uldp.compose import DataFramePrivatizer
    >>> from sklearn_uldp.marginals import marginal_privatizer_from
    >>> dfp = DataFramePrivatizer({
    ...     "marital": UtilityOptimizedRR(1.0, sensitive=["divorced"],
    ...                                   categories=["married", "single", "divorced"]),
    ...     "region": RandomizedResponse(1.0, categories=["north", "south"]),
    ... })
    >>> priv = marginal_privatizer_from(dfp).fit()
    >>> priv.marginals_, priv.epsilon_spent_
    ([('marital', 'region')], 1.0)
    >>> {c: m.tolist() for c, m in priv.sensitive_.items()}
    {'marital': [False, False, True], 'region': [True, True]}
    """
    params = privatizer.get_params(deep=False)
    declared = _declared(params["mechanisms"])
    if not declared:
        raise ValueError("The privatizer declares no mechanism.")
    categories, sensitive, epsilons = {}, {}, set()
    for column, mech in declared:
        column = str(column)
        mech_params = mech.get_params(deep=False)
        cats = mech_params.get("categories", "auto")
        if isinstance(cats, str):
            raise ValueError(
                f"The mechanism of column {column!r} has categories='auto'; marginal "
                "release needs every column's public domain: pass categories=[...]."
            )
        categories[column] = cats
        if "epsilon" not in mech_params:
            raise ValueError(
                f"The mechanism of column {column!r} ({type(mech).__name__}) has no "
                "epsilon; marginal release spends one budget per user."
            )
        epsilons.add(float(mech_params["epsilon"]))
        if mech_params.get("sensitive") is not None:
            sensitive[column] = mech_params["sensitive"]
    if len(epsilons) != 1:
        raise ValueError(
            f"The columns' mechanisms have different budgets ({sorted(epsilons)}): a user "
            "of marginal release sends one report, so give every mechanism the same "
            "epsilon (the budget of a user's row)."
        )
    return MarginalPrivatizer(
        epsilon=epsilons.pop(),
        marginal_size=marginal_size,
        marginals=marginals,
        mechanism=mechanism,
        categories=categories,
        sensitive=sensitive or None,
        random_state=params.get("random_state"),
    )


def one_way_estimates(estimator: Any, columns: Any = None) -> dict[str, Any]:
    """Each column's distribution from a fitted MarginalEstimator.

    What ``DataFramePrivatizer.estimate`` returns for the other strategies:
    column -> a Series over its domain.

    Parameters
    ----------
    estimator : MarginalEstimator
        Fitted.
    columns : list of str, default=None
        The columns (all by default).

    Returns
    -------
    estimates : dict of {str: Series}

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from sklearn_uldp.marginals import (MarginalEstimator, MarginalPrivatizer,
    ...                                     one_way_estimates)
    >>> df = pd.DataFrame({"x": np.arange(3000) % 2, "y": np.arange(3000) % 3})
    >>> priv = MarginalPrivatizer(2.0, categories={"x": [0, 1], "y": [0, 1, 2]},
    ...                           random_state=0)
    >>> est = MarginalEstimator().fit(priv.fit_transform(df))
    >>> {c: s.index.tolist() for c, s in one_way_estimates(est).items()}
    {'x': [0, 1], 'y': [0, 1, 2]}
    """
    columns = estimator.columns_ if columns is None else list(columns)
    out = {}
    for c in columns:
        series = estimator.marginal([c])
        series.index = series.index.get_level_values(0)
        out[c] = series
    return out
