"""The collector's side of marginal release: every marginal, and synthetic rows."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from numbers import Real
from typing import Any, TypeVar

import numpy as np
import pandas as pd
from scipy.stats import norm
from sklearn.base import BaseEstimator, clone
from sklearn.exceptions import NotFittedError
from sklearn.utils._param_validation import HasMethods

from ..estimators import DistributionEstimator, EMEstimator
from ..exceptions import ReportMismatchError, UninformativeEstimateWarning
from ..mechanisms._channel import Channel, ReportStatistics
from ..utils._random import check_random_generator
from ..utils._validation import is_missing
from ._channel import MarginalChannel
from ._consistency import make_consistent, shrink_interactions
from ._maxent import MaxEntModel
from ._one_report import _OneReportEstimatorMixin, _reduce_statistics
from ._privatizer import MarginalPrivatizer

__all__ = ["MarginalEstimator", "as_marginal_channel", "reduce_marginal_statistics"]

_EstT = TypeVar("_EstT", bound="MarginalEstimator")

_HINTS = {
    "estimator": (
        "Pass None (EMEstimator(), the package's default estimate) or an unfitted "
        "distribution estimator such as EmpiricalEstimator(projection='simplex')."
    ),
    "mechanism": (
        "Pass None (reports that carry their spec), the fitted MarginalPrivatizer, "
        "its channel_ or its spec() dict."
    ),
}


def as_marginal_channel(mechanism: Any) -> MarginalChannel:
    """The :class:`MarginalChannel` a privatizer, channel or spec describes.

    Parameters
    ----------
    mechanism : MarginalPrivatizer, MarginalChannel or dict
        A fitted privatizer, its channel, or its spec (``spec()``).

    Returns
    -------
    channel : MarginalChannel
    """
    if isinstance(mechanism, MarginalChannel):
        return mechanism
    if isinstance(mechanism, dict):
        channel = Channel.from_dict(mechanism)
    elif isinstance(mechanism, Channel):
        channel = mechanism  # another family's reports: refused below
    elif hasattr(mechanism, "channel_"):
        channel = mechanism.channel_
    elif isinstance(mechanism, MarginalPrivatizer):
        # An unfitted privatizer (e.g. cloned with its estimator, as scikit-learn's
        # searches do) describes its reports when its domains are declared.
        if (
            isinstance(mechanism.categories, str)
            or mechanism.marginal_size == "auto"
            and (mechanism.n_users is None and mechanism.marginals is None)
        ):
            raise ValueError(
                "mechanism is an unfitted MarginalPrivatizer whose reports depend on the "
                "data (categories='auto', or marginal_size='auto' without n_users): pass "
                "the fitted privatizer's channel_ or spec() instead (a Channel is shared "
                "by clones)."
            )
        channel = clone(mechanism).fit().channel_
    else:
        raise TypeError(
            "mechanism must be a fitted MarginalPrivatizer, its channel_ or its spec() "
            f"dict; got {type(mechanism).__name__}."
        )
    if not isinstance(channel, MarginalChannel):
        raise ReportMismatchError(
            f"{channel!r} is not the spec of marginal reports: a MarginalEstimator "
            "estimates the reports of a MarginalPrivatizer (one column's reports go "
            "to a distribution estimator such as EMEstimator)."
        )
    return channel


def reduce_marginal_statistics(
    batches: Any, mechanism: Any = None, *, keep_reports: bool = True
) -> ReportStatistics:
    """Sum the sufficient statistics of batches (or Dask partitions) of marginal reports.

    Parameters
    ----------
    batches : iterable of report batches, or a Dask DataFrame
        In-memory batches may carry their spec; a Dask DataFrame (whose
        partitions carry nothing) is reduced on its workers, one task per
        partition and a tree of sums, and only the statistics come back.
    mechanism : MarginalPrivatizer, MarginalChannel or dict, default=None
        Needed for a Dask DataFrame and for batches that do not carry it.
    keep_reports : bool, default=True
        Keep what the exact likelihood of bit-vector oracles needs (EM, the
        default estimate); False keeps counts only.

    Returns
    -------
    statistics : ReportStatistics
        Feed it to :meth:`MarginalEstimator.fit_statistics`.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp.marginals import (MarginalPrivatizer, MarginalEstimator,
    ...                                     reduce_marginal_statistics)
    >>> priv = MarginalPrivatizer(2.0, categories={"a": [0, 1], "b": [0, 1]},
    ...                           random_state=0).fit()
    >>> X = np.random.default_rng(0).integers(0, 2, size=(3000, 2))
    >>> stats = reduce_marginal_statistics(priv.transform(b) for b in np.array_split(X, 3))
    >>> MarginalEstimator().fit_statistics(stats).n_reports_
    3000
    """
    return _reduce_statistics(
        batches, mechanism, keep_reports, as_marginal_channel, "MarginalPrivatizer"
    )


class MarginalEstimator(_OneReportEstimatorMixin, BaseEstimator):
    """Estimate marginals of a table from marginal reports, and synthesize rows.

    Each measured marginal is estimated from its users' reports by a
    distribution estimator over its cells (``estimator``, EM's default
    estimate unless told otherwise), through its own channel; with
    ``consistency``, the marginals that share columns are then made to agree
    on them (CALM's post-processing, here a sequence of projections that
    never increases the weighted squared error: see Notes). Then:

    * :meth:`marginal` returns the estimate of any set of columns: a
      measured marginal or a subset of one (its projection), or any other
      set, read from the maximum-entropy table that has the measured
      marginals (a log-linear model fitted by iterative proportional
      fitting);
    * :meth:`marginal_confidence_intervals` gives intervals for a measured
      marginal or a subset of one;
    * :meth:`synthesize` draws a table of rows from the maximum-entropy
      model, with the same columns and categories.

    ``partial_fit`` only adds statistics (they add up across batches,
    partitions and machines, :func:`reduce_marginal_statistics`); the
    estimates are computed at first use.

    Parameters
    ----------
    consistency : bool, default=True
        Make the marginals agree on their shared columns.
    estimator : DistributionEstimator or None, default=None
        The template estimator of each marginal (cloned per marginal); None
        is ``EMEstimator()``.
    interaction_shrinkage : bool, default=True
        Shrink the highest-order interaction of each measured marginal
        (for a pair: its departure from the product of its margins) towards
        none, by the positive-part James-Stein factor ``max(0, 1 - V / D)``
        (D: the squared size of the estimated interaction, V: the expected
        squared size of its noise). It keeps the marginal's lower-order
        margins, so consistency too; on the flights table it gave 22% and
        20% less total variation than consistency alone at epsilon = 1 and
        2 (see the "Marginals" page). It matters where the noise of a
        marginal is comparable to its interaction (small budgets, many
        cells); False keeps each marginal's estimate.
    mechanism : MarginalPrivatizer, MarginalChannel, dict or None, default=None
        The spec of the reports, when they do not carry it.

    Attributes
    ----------
    channel_ : MarginalChannel
    statistics_ : ReportStatistics
    n_reports_ : int
    columns_ : list of str
    categories_ : dict of {str: ndarray}
    marginals_ : list of tuple of str
        The measured marginals (those with at least one report).
    estimators_ : list of DistributionEstimator or None
        The fitted estimator of each of the channel's marginals (None for a
        marginal without reports).
    consistency_info_ : dict or None
        Rounds and residual disagreement of the consistency step.
    interaction_factors_ : dict of {tuple of str: float}
        The James-Stein factor of each measured marginal's interaction.
    maxent_residual_ : float
        How far the maximum-entropy model is from the measured marginals.
    n_features_in_ : int
    feature_names_in_ : ndarray
        When fitted on a DataFrame of reports.

    Notes
    -----
    The consistency step is a sequence of orthogonal projections, in the
    norm ``sum_A w_A ||p_A||^2`` (``w_A``: the inverse mean per-cell
    variance of marginal A's oracle with its users), onto convex sets that
    hold the true marginals (agreement on each shared set of columns; the
    simplex). A projection onto a convex set never moves a point away from
    a point of the set, so the consistent estimate is never farther from
    the truth in that norm than the estimates it started from, for every
    realization of the noise. In other norms (total variation) it is an
    empirical matter, measured in ``benchmarks/bench_marginals.py``.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from sklearn_uldp.marginals import MarginalPrivatizer, MarginalEstimator
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"a": rng.integers(0, 2, 30_000),
    ...                    "b": rng.integers(0, 3, 30_000),
    ...                    "c": rng.integers(0, 2, 30_000)})
    >>> priv = MarginalPrivatizer(
    ...     2.0, categories={"a": [0, 1], "b": [0, 1, 2], "c": [0, 1]},
    ...     marginals=[("a", "b"), ("b", "c")], random_state=0)
    >>> est = MarginalEstimator().fit(priv.fit_transform(df))
    >>> est.marginal(["b"]).round(1).tolist()        # measured twice, one answer
    [0.3, 0.3, 0.3]
    >>> est.marginal(["a", "c"]).shape               # never measured: maximum entropy
    (4,)
    >>> est.synthesize(5, random_state=0).dtypes.astype(str).tolist()
    ['category', 'category', 'category']
    """

    _parameter_constraints: dict[str, list[Any]] = {
        "consistency": ["boolean"],
        "interaction_shrinkage": ["boolean"],
        "estimator": [HasMethods(["fit_statistics"]), None],
        "mechanism": [HasMethods(["transform"]), Channel, dict, None],
    }

    def __init__(
        self,
        consistency: bool = True,
        estimator: DistributionEstimator | None = None,
        *,
        interaction_shrinkage: bool = True,
        mechanism: Any = None,
    ) -> None:
        self.consistency = consistency
        self.estimator = estimator
        self.interaction_shrinkage = interaction_shrinkage
        self.mechanism = mechanism

    # What the shared fitting (_OneReportEstimatorMixin) needs to know.
    _hints = _HINTS
    _channel_class = MarginalChannel
    _report_kind = "marginal"
    _reduce_name = "reduce_marginal_statistics"
    _privatizer_name = "MarginalPrivatizer"
    _as_channel = staticmethod(as_marginal_channel)

    # ------------------------------------------------------------ fitting
    def _template(self):
        return EMEstimator() if self.estimator is None else self.estimator

    def _keep_reports(self):
        return bool(getattr(self._template(), "_needs_reports", False))

    # ------------------------------------------------------------ estimates
    @property
    def columns_(self) -> list[str]:
        """The columns of the rows, in order."""
        self._check_fitted()
        return list(self.channel_.columns)

    @property
    def categories_(self) -> dict[str, np.ndarray]:
        """Each column's domain."""
        self._check_fitted()
        return dict(zip(self.channel_.columns, self.channel_.domains, strict=True))

    @property
    def estimators_(self) -> list[DistributionEstimator | None]:
        """The fitted estimator of each marginal (None without reports)."""
        return list(self._result()["estimators"])

    @property
    def marginals_(self) -> list[tuple[str, ...]]:
        """The measured marginals (with at least one report), in the channel's order."""
        result = self._result()
        return [self.channel_.marginals[j] for j in result["measured"]]

    @property
    def interaction_factors_(self) -> dict[tuple[str, ...], float]:
        """Marginal -> the James-Stein factor its interaction was kept at (1: all, 0: none)."""
        result = self._result()
        return {
            self.channel_.marginals[j]: float(f)
            for j, f in zip(result["measured"], result["factors"], strict=True)
        }

    @property
    def maxent_residual_(self) -> float:
        """Largest difference between a measured marginal and the maximum-entropy model's.

        0 up to round-off when the (consistent) marginals are those of some
        table; otherwise iterative proportional fitting converges to the
        table nearest in Kullback-Leibler divergence, and this is how far.
        """
        return float(self._model().residual)

    @property
    def consistency_info_(self) -> dict | None:
        """``n_iter``, ``gap`` and ``negative`` of the consistency step (None without it)."""
        return self._result()["consistency"]

    def _check_fitted(self):
        if not hasattr(self, "statistics_"):
            raise NotFittedError(
                f"This {type(self).__name__} instance is not fitted yet. Call 'fit' with "
                "marginal reports before using this estimator."
            )

    def _result(self):
        self._check_fitted()
        if getattr(self, "_cache", None) is None:
            self._cache = self._estimate()
        return self._cache

    def _estimate(self):
        channel = self.channel_
        parts = self.statistics_.extra.parts
        template = self._template()
        estimators, measured, uninformative = [], [], 0
        for j, part in enumerate(parts):
            if part is None or part.n == 0:
                estimators.append(None)
                continue
            est = clone(template)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", UninformativeEstimateWarning)
                est.fit_statistics(part)
            for w in caught:
                if issubclass(w.category, UninformativeEstimateWarning):
                    uninformative += 1
                else:
                    warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
            estimators.append(est)
            measured.append(j)
        if not measured:
            raise ValueError("No marginal has a report: fit on at least one report.")
        if uninformative:
            warnings.warn(
                f"In {uninformative} of the {len(measured)} measured marginals no cell "
                "stands out from the noise (their estimates are uniform, or nearly): "
                "collect more reports, spend a larger epsilon, or measure fewer or "
                "smaller marginals.",
                UninformativeEstimateWarning,
                stacklevel=4,
            )
        shapes = [channel.cell_shape(j) for j in measured]
        tables = [
            np.clip(np.asarray(estimators[j].distribution_, dtype=float), 0.0, None)
            for j in measured
        ]
        tables = [
            (t / t.sum() if t.sum() > 0 else np.full(t.size, 1.0 / t.size)).reshape(shape)
            for t, shape in zip(tables, shapes, strict=True)
        ]
        weights = [self._weight(j) for j in measured]
        info = None
        if self.consistency and len(measured) > 1:
            tables, info = make_consistent(
                tables, [channel.marginals[j] for j in measured], weights
            )
        factors = [1.0] * len(measured)
        if self.interaction_shrinkage:
            noise = [
                float(
                    np.sum(
                        channel.channels[j].estimator_variance(
                            t.ravel(), self.statistics_.extra.parts[j].n
                        )
                    )
                )
                for j, t in zip(measured, tables, strict=True)
            ]
            tables, factors = shrink_interactions(tables, noise)
        return {
            "estimators": estimators,
            "measured": measured,
            "tables": tables,
            "weights": weights,
            "consistency": info,
            "factors": factors,
            "model": None,
        }

    def _weight(self, j):
        """1 / the mean per-cell variance of marginal j's unbiased estimate (uniform data)."""
        sub = self.channel_.channels[j]
        n = self.statistics_.extra.parts[j].n
        k = sub.n_categories
        var = np.asarray(sub.estimator_variance(np.full(k, 1.0 / k), n), dtype=float)
        mean = float(np.mean(var))
        return 1.0 / mean if mean > 0 else 1e300

    # ------------------------------------------------------------ queries
    def _check_columns(self, columns):
        self._check_fitted()
        if isinstance(columns, str):
            columns = [columns]
        if not isinstance(columns, (list, tuple, pd.Index, np.ndarray)) or len(columns) == 0:
            raise ValueError(
                "columns must be a non-empty list of column names, e.g. ['origin', 'carrier']."
            )
        columns = [str(c) for c in columns]
        unknown = [c for c in columns if c not in self.channel_.columns]
        if unknown:
            raise KeyError(
                f"{unknown} are not columns of these reports; the columns are "
                f"{list(self.channel_.columns)}."
            )
        if len(set(columns)) != len(columns):
            raise ValueError("columns names a column twice.")
        return columns

    def _covering(self, columns):
        """Indices (into the measured list) of the measured marginals holding ``columns``."""
        result = self._result()
        wanted = set(columns)
        return [
            i for i, j in enumerate(result["measured"]) if wanted <= set(self.channel_.marginals[j])
        ]

    def _combined(self, columns, covering):
        """The weighted average of the covering tables' projections, axes as ``columns``."""
        result = self._result()
        total, weight_sum = 0.0, 0.0
        for i in covering:
            j = result["measured"][i]
            marginal = self.channel_.marginals[j]
            table = result["tables"][i]
            proj = _projection(table, marginal, columns)
            coef = result["weights"][i] / (table.size / proj.size)
            total = total + coef * proj
            weight_sum += coef
        return total / weight_sum

    def _model(self):
        result = self._result()
        if result["model"] is None:
            channel = self.channel_
            position = {c: p for p, c in enumerate(channel.columns)}
            cliques = [tuple(position[c] for c in channel.marginals[j]) for j in result["measured"]]
            result["model"] = MaxEntModel(channel.sizes, cliques, result["tables"])
        return result["model"]

    def _index(self, columns):
        """The product of the columns' domains, each level in its domain's order."""
        domains = self.categories_
        levels = []
        for c in columns:
            domain = domains[c]
            if is_missing(np.asarray(domain, dtype=object)).any():
                levels.append(pd.Index(np.asarray(domain, dtype=object), dtype=object))
            else:
                # Categorical levels keep the domain's order (also in unstack).
                levels.append(pd.CategoricalIndex(domain, categories=domain))
        return pd.MultiIndex.from_product(levels, names=list(columns))

    def marginal(self, columns: Sequence[str]) -> pd.Series:
        """The estimated distribution of a set of columns.

        Parameters
        ----------
        columns : list of str
            The columns, in the order of the result's levels. A measured
            marginal or a subset of one is its (consistent) estimate; any
            other set is read from the maximum-entropy table of the measured
            marginals.

        Returns
        -------
        probabilities : Series
            On a MultiIndex (the product of the columns' domains, one level
            per column, in the domain's order), summing to 1; ``.unstack()``
            gives a two-way table.

        Examples
        --------
        >>> import numpy as np, pandas as pd
        >>> from sklearn_uldp.marginals import MarginalPrivatizer, MarginalEstimator
        >>> rng = np.random.default_rng(0)
        >>> x = rng.integers(0, 2, 20_000)
        >>> df = pd.DataFrame({"x": x, "y": x ^ (rng.random(20_000) < 0.1)})
        >>> priv = MarginalPrivatizer(2.0, categories={"x": [0, 1], "y": [0, 1]},
        ...                           random_state=0)
        >>> est = MarginalEstimator().fit(priv.fit_transform(df))
        >>> table = est.marginal(["x", "y"]).unstack()   # about [[0.45, 0.05], [0.05, 0.45]]
        >>> table.shape, table.index.name, table.columns.name
        ((2, 2), 'x', 'y')
        >>> bool(abs(table.loc[0, 0] - 0.45) < 0.02 and abs(table.loc[0, 1] - 0.05) < 0.02)
        True
        """
        columns = self._check_columns(columns)
        covering = self._covering(columns)
        if covering:
            table = self._combined(columns, covering)
        else:
            position = {c: p for p, c in enumerate(self.channel_.columns)}
            table = self._model().marginal([position[c] for c in columns])
        values = np.clip(np.asarray(table, dtype=float).ravel(), 0.0, None)
        values = values / values.sum() if values.sum() > 0 else values
        return pd.Series(values, index=self._index(columns), name="probability")

    def marginal_confidence_intervals(
        self, columns: Sequence[str], alpha: float = 0.05
    ) -> pd.DataFrame:
        """Confidence intervals of each cell of a measured marginal or a subset of one.

        Score intervals of the unbiased (linear) estimate, as
        ``DistributionEstimator.confidence_intervals(method="score")``: the
        values t of the cell's probability that the estimate does not
        reject, its variance taken at t. A cell of a subset sums cells of
        each measured marginal that holds it, and several marginals are
        combined with the weights of the consistency step; the variance of
        the sum is taken as the sum of the cells' variances, which is exact
        for one cell and an upper bound for the oracles whose cells'
        statistics are negatively correlated (k-RR, unary encoding, subset
        selection and their utility-optimized versions), so the intervals
        are then conservative.

        Parameters
        ----------
        columns : list of str
        alpha : float in (0, 1), default=0.05
            1 - the confidence level of each interval.

        Returns
        -------
        intervals : DataFrame
            Columns ``lower`` and ``upper``, indexed as :meth:`marginal`.

        Raises
        ------
        ValueError
            For a set no measured marginal holds: its estimate comes from
            the maximum-entropy model, whose error is the model's, not
            sampling noise.

        Examples
        --------
        >>> import numpy as np, pandas as pd
        >>> from sklearn_uldp.marginals import MarginalPrivatizer, MarginalEstimator
        >>> rng = np.random.default_rng(0)
        >>> df = pd.DataFrame({"x": rng.integers(0, 2, 20_000), "y": rng.integers(0, 2, 20_000)})
        >>> priv = MarginalPrivatizer(2.0, categories={"x": [0, 1], "y": [0, 1]},
        ...                           random_state=0)
        >>> est = MarginalEstimator().fit(priv.fit_transform(df))
        >>> ci = est.marginal_confidence_intervals(["x"], alpha=0.05)
        >>> list(ci.columns), bool((ci["lower"] < 0.5).all() and (ci["upper"] > 0.5).all())
        (['lower', 'upper'], True)
        """
        if not (isinstance(alpha, Real) and 0 < alpha < 1):
            raise ValueError(f"alpha must be a level in (0, 1), such as 0.05; got {alpha!r}.")
        columns = self._check_columns(columns)
        covering = self._covering(columns)
        if not covering:
            raise ValueError(
                f"No measured marginal holds the columns {columns}: their estimate comes "
                "from the maximum-entropy model of the measured marginals, whose error is "
                "the model's (the dependence it cannot see), not sampling noise, so it has "
                "no confidence interval. Measure a marginal that holds them."
            )
        result = self._result()
        center, c0, c1, c2 = 0.0, 0.0, 0.0, 0.0
        coefs = []
        for i in covering:
            table = result["tables"][i]
            proj_size = int(np.prod([len(self.categories_[c]) for c in columns]))
            coefs.append(result["weights"][i] / (table.size / proj_size))
        coefs = np.asarray(coefs) / np.sum(coefs)
        for lam, i in zip(coefs, covering, strict=True):
            j = result["measured"][i]
            t_lin, q0, q1, q2 = self._score_terms(j, result["tables"][i], columns)
            center = center + lam * t_lin
            c0, c1, c2 = c0 + lam**2 * q0, c1 + lam**2 * q1, c2 + lam**2 * q2
        z2 = float(norm.ppf(1.0 - alpha / 2.0)) ** 2
        a = 1.0 - z2 * c2
        b = -(2.0 * center + z2 * c1)
        c = center**2 - z2 * c0
        disc = b**2 - 4.0 * a * c
        root = np.sqrt(np.clip(disc, 0.0, None))
        lo = np.clip((-b - root) / (2.0 * a), 0.0, 1.0)
        hi = np.clip((-b + root) / (2.0 * a), 0.0, 1.0)
        empty = (disc < 0) | (lo > hi)
        edge = np.where(center < 0.5, 0.0, 1.0)
        lo, hi = np.where(empty, edge, lo), np.where(empty, edge, hi)
        return pd.DataFrame({"lower": lo.ravel(), "upper": hi.ravel()}, index=self._index(columns))

    def _score_terms(self, j, table, columns):
        """Linear estimate of each cell of ``columns`` from marginal j, and the
        coefficients of its variance as a quadratic in the cell's probability t."""
        channel = self.channel_
        sub = channel.channels[j]
        stats = self.statistics_.extra.parts[j]
        n = stats.n
        marginal = channel.marginals[j]
        shape = channel.cell_shape(j)
        p_lin = np.asarray(sub.unbiased_estimate(stats), dtype=float).reshape(shape)
        center = _projection(p_lin, marginal, columns).ravel()
        plug = np.asarray(table, dtype=float).reshape(shape)
        # Each cell of marginal j -> its cell of `columns` (a fiber per cell).
        ids = _fiber_ids(shape, marginal, columns).ravel()
        n_cells = int(ids.max()) + 1
        q = plug.ravel()
        c0, c1, c2 = np.zeros(n_cells), np.zeros(n_cells), np.zeros(n_cells)
        for v in range(n_cells):
            inside = ids == v
            mass = q[inside].sum()
            w = np.where(inside, q / mass, 0.0) if mass > 0 else inside / inside.sum()
            rest = np.where(inside, 0.0, q)
            if rest.sum() > 0:
                r0 = rest / rest.sum()
            else:
                r0 = (~inside) / max(int((~inside).sum()), 1)
            if not (~inside).any():
                r0 = w
            second0 = n * np.asarray(sub.estimator_variance(r0, n), dtype=float) + r0**2
            second1 = n * np.asarray(sub.estimator_variance(w, n), dtype=float) + w**2
            c0[v] = second0[inside].sum() / n
            c1[v] = (second1[inside].sum() - second0[inside].sum()) / n
            c2[v] = -float(np.sum(w[inside] ** 2)) / n
        return center, c0, c1, c2

    # ------------------------------------------------------------ synthesis
    def synthesize(self, n_samples: int, random_state: Any = None) -> pd.DataFrame:
        """A table of rows drawn from the maximum-entropy model of the marginals.

        Parameters
        ----------
        n_samples : int
            Number of rows.
        random_state : None, int or Generator, default=None
            ``None``: fresh OS entropy (nothing stored); an int for a
            reproducible table.

        Returns
        -------
        table : DataFrame
            The columns of the reports, each a pandas ``category`` column over
            its domain (an object column when the domain holds a missing-value
            marker). For a product domain of at most 2^22 cells, the rows are
            a systematic sample of the model (each joint value gets the
            floor or the ceiling of ``n_samples p(x)`` rows), so the table's
            marginals equal the model's up to one row per joint value;
            otherwise independent draws from a tree-structured model.

        Examples
        --------
        >>> import numpy as np, pandas as pd
        >>> from sklearn_uldp.marginals import MarginalPrivatizer, MarginalEstimator
        >>> rng = np.random.default_rng(0)
        >>> df = pd.DataFrame({"x": rng.integers(0, 2, 5_000), "y": rng.integers(0, 3, 5_000)})
        >>> priv = MarginalPrivatizer(2.0, categories={"x": [0, 1], "y": [0, 1, 2]},
        ...                           random_state=0)
        >>> est = MarginalEstimator().fit(priv.fit_transform(df))
        >>> table = est.synthesize(1_000, random_state=0)
        >>> table.shape, list(table["y"].cat.categories)
        ((1000, 2), [0, 1, 2])
        """
        if (
            isinstance(n_samples, bool)
            or not isinstance(n_samples, (int, np.integer))
            or n_samples < 0
        ):
            raise ValueError(f"n_samples must be an integer >= 0, got {n_samples!r}.")
        rng = check_random_generator(random_state)
        codes = self._model().sample_codes(int(n_samples), rng)
        columns: dict[str, Any] = {}
        for p, c in enumerate(self.channel_.columns):
            domain = self.channel_.domains[p]
            missing = is_missing(np.asarray(domain, dtype=object))
            if missing.any():
                values = np.asarray(domain, dtype=object)[codes[:, p]]
                columns[c] = pd.Series(values, dtype=object)
            else:
                columns[c] = pd.Categorical.from_codes(codes[:, p], categories=pd.Index(domain))
        return pd.DataFrame(columns)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.requires_fit = True
        tags.input_tags.categorical = True
        return tags


def _projection(table, marginal, columns):
    """``table`` (axes = ``marginal``) summed onto ``columns``, axes in that order."""
    keep = [marginal.index(c) for c in columns]
    rest = tuple(a for a in range(len(marginal)) if a not in keep)
    proj = np.asarray(table).sum(axis=rest)
    order = sorted(keep)
    return np.transpose(proj, [order.index(a) for a in keep])


def _fiber_ids(shape, marginal, columns):
    """For each cell of the marginal, the flat index of its cell of ``columns``."""
    grids = np.indices(shape)
    sizes = [shape[marginal.index(c)] for c in columns]
    if not columns:
        return np.zeros(shape, dtype=np.intp)
    return np.ravel_multi_index(tuple(grids[marginal.index(c)] for c in columns), sizes)
