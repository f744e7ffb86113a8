"""``DataFramePrivatizer(strategy="marginals")``: each person reports one marginal.

The columns' mechanisms declare what marginal release needs (each column's
domain, its sensitive values, the budget); the release itself is a
:class:`~sklearn_uldp.marginals.MarginalPrivatizer`: each person is assigned
one set of columns at random and reports its joint value through the oracle
of least variance for that product domain. The mechanisms' own classes are
not used to privatize (the oracle is chosen per marginal), so the reports
are the marginal privatizer's (``marginal``, then the oracle's report), not
one block of columns per mechanism.

Module-level imports of ``marginals`` are avoided: importing ``compose``
should not load marginal release until a privatizer uses it (the import
graph is the same either way, see ``tests/test_layering.py``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..numeric._base import BaseNumericMechanism
from . import _memoized as _memo

__all__ = ["MARGINALS", "check_marginals", "fit_marginals", "marginal_frame"]

#: The strategy's name (``DataFramePrivatizer(strategy=MARGINALS)``).
MARGINALS = "marginals"


def check_marginals(priv, fitting):
    """Refuse what marginal release cannot take, before anything is fitted."""
    if priv.remainder != "drop":
        raise ValueError(
            "strategy='marginals' reports one marginal of the declared columns per "
            "person: remainder must be 'drop' (privatize a remaining column by "
            "declaring its mechanism, or copy it outside the privatizer)."
        )
    epsilons = set()
    for name, mech, _ in fitting:
        if isinstance(mech, str):
            continue
        if isinstance(mech, BaseNumericMechanism):
            raise ValueError(
                f"Mechanism {name!r} is numeric; strategy='marginals' takes categorical "
                "columns (bin the column on public cut points first, or use "
                "sklearn_uldp.marginals.RangeQueryPrivatizer for range queries)."
            )
        if _memo.memoizes(mech):
            raise ValueError(
                f"Mechanism {name!r} memoizes (several rounds); strategy='marginals' "
                "sends one fresh report per person: use a one-shot mechanism."
            )
        if "epsilon" not in mech.get_params():
            raise ValueError(
                f"Mechanism {name!r} ({type(mech).__name__}) has no epsilon; "
                "strategy='marginals' spends one budget per person."
            )
        epsilons.add(float(mech.get_params()["epsilon"]))
    if len(epsilons) > 1:
        raise ValueError(
            f"The mechanisms have different budgets ({sorted(epsilons)}): under "
            "strategy='marginals' a person sends one report, which spends one "
            "epsilon: give every mechanism the same epsilon."
        )


def marginal_frame(priv, X, positions):
    """The privatized columns of ``X``, named by their mechanisms."""
    names = list(positions)
    if isinstance(X, pd.DataFrame):
        data = {name: X.iloc[:, positions[name][0]] for name in names}
        return pd.DataFrame(data, index=X.index, copy=False)
    arr = np.asarray(X, dtype=object) if not isinstance(X, np.ndarray) else X
    return pd.DataFrame({name: arr[:, positions[name][0]] for name in names}, copy=False)


def fit_marginals(priv, frame, seed):
    """The fitted MarginalPrivatizer of the fitted mechanisms' columns."""
    from ..marginals import MarginalPrivatizer

    categories, sensitive, epsilon = {}, {}, None
    for name, mech in priv.mechanisms_.items():
        categories[name] = list(mech.categories_)
        mask = getattr(mech, "sensitive_mask_", None)
        if mask is not None and not np.all(mask):
            sensitive[name] = np.asarray(mask, dtype=bool)
        epsilon = float(mech.get_params()["epsilon"])
    marginal_privatizer = MarginalPrivatizer(
        epsilon=epsilon,
        marginal_size=priv.marginal_size,
        categories=categories,
        sensitive=sensitive or None,
        random_state=seed,
    )
    return marginal_privatizer.fit(frame)


def spec_document(priv, format_name):
    """The spec file of marginal release: the composite channel, the budget."""
    marginal_privatizer = priv.marginal_privatizer_
    return {
        "format": format_name,
        "version": 1,
        "epsilon_per_person": float(marginal_privatizer.epsilon_spent_),
        "strategy": {
            "name": MARGINALS,
            "marginals": [list(m) for m in marginal_privatizer.marginals_],
            "oracles": list(marginal_privatizer.oracles_),
        },
        "marginals": marginal_privatizer.channel_.to_dict(),
        "report_columns": [str(c) for c in marginal_privatizer.get_feature_names_out()],
    }


def marginal_estimator(priv, reports: Any, estimator: Any = None, **params: Any):
    """A MarginalEstimator fitted on the reports of ``priv``."""
    from ..marginals import MarginalEstimator

    est = MarginalEstimator(
        estimator=estimator, mechanism=priv.marginal_privatizer_.channel_, **params
    )
    if isinstance(reports, pd.DataFrame):
        reports = reports[[str(c) for c in priv.marginal_privatizer_.get_feature_names_out()]]
    return est.fit(reports)


def one_way(est, columns):
    """Column -> its distribution (what ``estimate`` returns for the other strategies)."""
    from ..marginals import one_way_estimates

    return one_way_estimates(est, columns)


class MarginalStrategyMixin:
    """The methods of :class:`DataFramePrivatizer` under ``strategy="marginals"``
    (kept here with the strategy's other pieces; they read the privatizer's
    own helpers through ``self``)."""

    def _refuse_dask_marginals(self):
        if self.strategy == MARGINALS:
            raise ValueError(
                "strategy='marginals' privatizes in-memory tables: privatize each "
                "partition with sklearn_uldp.marginals.MarginalPrivatizer (its "
                "statistics add up: reduce_marginal_statistics), or compute the "
                "Dask DataFrame's partitions one at a time."
            )

    def _transform_marginals(self, X):
        """Privatize under ``strategy="marginals"``: one marginal per person."""
        X = self._check_input(X)
        positions = self._fitted_positions(X)
        X = self._prepared(X, positions)
        frame = marginal_frame(self, X, positions)
        marginal_privatizer = self.marginal_privatizer_
        pandas = self._output_config() == "pandas" or (
            self._output_config() is None and isinstance(X, pd.DataFrame)
        )
        marginal_privatizer.set_output(transform="pandas" if pandas else "default")
        reports = marginal_privatizer.transform(frame)
        if pandas and not isinstance(X, pd.DataFrame):
            reports.index = pd.RangeIndex(len(reports))
        return reports

    def _check_marginals(self, what):
        if self._fitted_strategy_name() != MARGINALS:
            raise ValueError(
                f"{what} reads the reports of strategy='marginals'; this privatizer "
                f"was fitted with strategy={self._fitted_strategy!r}."
            )

    def marginal_estimator(self, reports: Any, estimator: Any = None, **params: Any) -> Any:
        """The collector's estimate of every marginal, under ``strategy="marginals"``.

        Parameters
        ----------
        reports : DataFrame or array-like
            Output of :meth:`transform` (its ``marginal`` and ``report``
            columns; other columns are ignored).
        estimator : DistributionEstimator, default=None
            Template estimator of each marginal (``EMEstimator()`` by default).
        **params
            Other parameters of :class:`~sklearn_uldp.marginals.MarginalEstimator`
            (``consistency``, ``interaction_shrinkage``).

        Returns
        -------
        estimator : MarginalEstimator
            Fitted: ``marginal(columns)`` for any set of columns (named by
            the mechanisms), ``marginal_confidence_intervals``, ``synthesize``.

        Examples
        --------
        >>> import numpy as np, pandas as pd
        >>> from sklearn_uldp import RandomizedResponse
        >>> from sklearn_uldp.compose import DataFramePrivatizer
        >>> rng = np.random.default_rng(0)
        >>> df = pd.DataFrame({"a": rng.choice(["x", "y"], 20_000),
        ...                    "b": rng.choice(["u", "v", "w"], 20_000)})
        >>> priv = DataFramePrivatizer(
        ...     {c: RandomizedResponse(2.0, categories=sorted(set(df[c]))) for c in df},
        ...     strategy="marginals", random_state=0)
        >>> reports = priv.fit_transform(df)
        >>> list(reports.columns), priv.epsilon_spent_
        (['marginal', 'report'], 2.0)
        >>> est = priv.marginal_estimator(reports)
        >>> est.marginal(["a", "b"]).shape
        (6,)
        """
        self._check_marginals("marginal_estimator")
        return marginal_estimator(self, reports, estimator, **params)
