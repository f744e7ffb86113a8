"""The collector's side of range queries: grids, consistency, response matrices, answers."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from numbers import Real
from typing import Any, TypeVar

import numpy as np
import pandas as pd
from scipy.stats import norm
from sklearn.base import BaseEstimator, clone
from sklearn.exceptions import NotFittedError
from sklearn.utils._param_validation import HasMethods, Interval

from ..estimators._empirical import threshold_estimate
from ..estimators._projection import project_to_simplex
from ..exceptions import ReportMismatchError
from ..mechanisms._channel import Channel, ReportStatistics
from ._consistency import make_consistent
from ._one_report import _OneReportEstimatorMixin, _reduce_statistics
from ._range import RangeQueryPrivatizer
from ._range_channel import RangeQueryChannel

__all__ = ["RangeQueryEstimator", "as_range_channel", "reduce_range_statistics"]

#: The family-wise level of each grid's significance threshold (issue 32:
#: measured on eight pairs of columns of three real tables, "Marginals" page).
DEFAULT_THRESHOLD = 0.8

_EstT = TypeVar("_EstT", bound="RangeQueryEstimator")

#: Iterative proportional fitting (response matrices, queries over three or
#: more columns) stops when every constraint holds within _IPF_TOL, when a
#: sweep changes no cell by more than _IPF_STALL (the constraints disagree
#: by round-off, as consistent grids do after their last clipping), or after
#: _IPF_MAX_ITER sweeps.
_IPF_TOL = 1e-10
_IPF_STALL = 1e-15
_IPF_MAX_ITER = 2000

_HINTS = {
    "estimator": (
        "Pass None (the unbiased estimate of each grid, made consistent and "
        "non-negative) or an unfitted distribution estimator such as EMEstimator()."
    ),
    "mechanism": (
        "Pass None (reports that carry their spec), the fitted RangeQueryPrivatizer, "
        "its channel_ or its spec() dict."
    ),
}


def as_range_channel(mechanism: Any) -> RangeQueryChannel:
    """The :class:`RangeQueryChannel` a privatizer, channel or spec describes.

    Parameters
    ----------
    mechanism : RangeQueryPrivatizer, RangeQueryChannel or dict

    Returns
    -------
    channel : RangeQueryChannel
    """
    if isinstance(mechanism, RangeQueryChannel):
        return mechanism
    if isinstance(mechanism, Mapping):
        channel = Channel.from_dict(mechanism)
    elif hasattr(mechanism, "channel_"):
        channel = mechanism.channel_
    elif isinstance(mechanism, RangeQueryPrivatizer):
        # a rule by name ("auto", "smooth") reads the number of users
        if isinstance(mechanism.bounds, str) or (
            isinstance(mechanism.granularity, str) and mechanism.n_users is None
        ):
            raise ValueError(
                "mechanism is an unfitted RangeQueryPrivatizer whose reports depend on "
                "the data (bounds='auto', or granularity="
                f"{mechanism.granularity!r} without n_users): pass the fitted "
                "privatizer's channel_ or spec() instead, or its n_users."
            )
        channel = clone(mechanism).fit().channel_
    else:
        raise TypeError(
            "mechanism must be a fitted RangeQueryPrivatizer, its channel_ or its spec() "
            f"dict; got {type(mechanism).__name__}."
        )
    if not isinstance(channel, RangeQueryChannel):
        raise ReportMismatchError(
            f"{channel!r} is not the spec of range-query reports: a RangeQueryEstimator "
            "estimates the reports of a RangeQueryPrivatizer."
        )
    return channel


def reduce_range_statistics(
    batches: Any, mechanism: Any = None, *, keep_reports: bool = False
) -> ReportStatistics:
    """Sum the sufficient statistics of batches (or Dask partitions) of range-query reports.

    Parameters
    ----------
    batches : iterable of report batches, or a Dask DataFrame
        In-memory batches may carry their spec; a Dask DataFrame is reduced on
        its workers (one task per partition, a tree of sums) and only the
        statistics come back.
    mechanism : RangeQueryPrivatizer, RangeQueryChannel or dict, default=None
        Needed for a Dask DataFrame and for batches that do not carry it.
    keep_reports : bool, default=False
        Keep what the exact likelihood of bit-vector oracles needs (for
        ``RangeQueryEstimator(estimator=EMEstimator())``); the default
        estimate needs the counts only.

    Returns
    -------
    statistics : ReportStatistics
        Feed it to :meth:`RangeQueryEstimator.fit_statistics`.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp.marginals import (RangeQueryEstimator, RangeQueryPrivatizer,
    ...                                     reduce_range_statistics)
    >>> priv = RangeQueryPrivatizer(2.0, bounds={"a": (0, 1), "b": (0, 1)},
    ...                             granularity=(4, 2), random_state=0).fit()
    >>> X = np.random.default_rng(0).random((3000, 2))
    >>> stats = reduce_range_statistics(priv.transform(b) for b in np.array_split(X, 3))
    >>> RangeQueryEstimator().fit_statistics(stats).n_reports_
    3000
    """
    return _reduce_statistics(
        batches, mechanism, keep_reports, as_range_channel, "RangeQueryPrivatizer"
    )


class RangeQueryEstimator(_OneReportEstimatorMixin, BaseEstimator):
    """Answer range queries over numeric columns from HDG or TDG reports.

    Each grid is estimated from its users' reports: by default the unbiased
    (linear) estimate of its cells with a significance threshold (the cells
    not significantly above zero at family-wise level ``threshold`` share
    the mass left over, as in :class:`~sklearn_uldp.ThresholdEstimator`);
    with ``threshold=None`` the paper's unbiased estimate; with
    ``estimator``, any distribution estimator of the package
    (``EMEstimator()``, ...). With
    ``consistency``, the grids that share a column are made to agree on it
    (a 1-D grid, summed into the 2-D bins, with the 2-D grids' margins) and
    non-negative: the marginals' projections (see
    :class:`~sklearn_uldp.marginals.MarginalEstimator`), which here are the
    paper's weighted averages and Norm-Sub, and never increase the weighted
    squared error. Then:

    * a query over one column is read from its 1-D grid (HDG) or from the
      2-D grids' margins (TDG);
    * over two columns, from the pair's **response matrix** (HDG): the
      ``g1 x g1`` table of maximum entropy whose margins are the two 1-D
      grids and whose 2-D bins sum to the pair's 2-D grid (the paper's
      weighted updates, iterative proportional fitting); TDG reads the 2-D
      grid;
    * over three or more, from the table of maximum entropy over "inside /
      outside each range" whose pairs are the pairs' answers (the paper's
      weighted updates over the 2^k such cells).

    Within a cell the users are taken as spread evenly (a partially covered
    cell counts in proportion to the part covered).

    ``partial_fit`` only adds statistics (they add up across batches,
    partitions and machines, :func:`reduce_range_statistics`); the estimates
    are computed at first use.

    Parameters
    ----------
    consistency : bool, default=True
        Make the grids agree on shared columns (and non-negative).
    estimator : DistributionEstimator or None, default=None
        The template estimator of each grid (cloned per grid); None is the
        unbiased estimate, thresholded (``threshold``) and projected onto
        the simplex.
    threshold : float in (0, 1) or None, default=0.8
        With ``estimator=None``: the family-wise significance level of each
        grid's threshold (Bonferroni over its cells; 0.8 measured on real
        tables, see the "Marginals" page: lower error on sparse pairs of
        columns, e.g. -10 % at epsilon = 1 on the flights' distance x air
        time, and 4 % lower on average over held-out pairs, up to 15 %
        higher on some). None: the unbiased estimate (the paper's).
        Ignored when ``estimator`` is given (that estimator is the grids'
        estimate).
    mechanism : RangeQueryPrivatizer, RangeQueryChannel, dict or None, default=None
        The spec of the reports, when they do not carry it.

    Attributes
    ----------
    channel_ : RangeQueryChannel
    statistics_ : ReportStatistics
    n_reports_ : int
    columns_ : list of str
    bounds_ : dict of {str: (float, float)}
    grids_ : list of tuple of str
        The grids with at least one report.
    consistency_info_ : dict or None
        Rounds and residual disagreement of the consistency step.
    n_features_in_ : int
    feature_names_in_ : ndarray
        When fitted on a DataFrame of reports.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from sklearn_uldp.marginals import RangeQueryEstimator, RangeQueryPrivatizer
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame(rng.uniform(0, 1, size=(60_000, 3)), columns=["a", "b", "c"])
    >>> priv = RangeQueryPrivatizer(2.0, bounds={c: (0, 1) for c in "abc"},
    ...                             random_state=0)
    >>> est = RangeQueryEstimator().fit(priv.fit_transform(df))
    >>> answers = est.query_many([{"a": (0, 0.5)}, {"a": (0, 0.5), "b": (0.5, 1)},
    ...                           {"a": (0, 0.5), "b": (0, 0.5), "c": (0, 0.5)}])
    >>> np.round(answers, 1).tolist()       # 1/2, 1/4, 1/8
    [0.5, 0.2, 0.1]
    """

    _parameter_constraints: dict[str, list[Any]] = {
        "consistency": ["boolean"],
        "estimator": [HasMethods(["fit_statistics"]), None],
        "threshold": [Interval(Real, 0, 1, closed="neither"), None],
        "mechanism": [HasMethods(["transform"]), Channel, dict, None],
    }

    def __init__(
        self,
        consistency: bool = True,
        estimator: Any = None,
        threshold: float | None = DEFAULT_THRESHOLD,
        *,
        mechanism: Any = None,
    ) -> None:
        self.consistency = consistency
        self.estimator = estimator
        self.threshold = threshold
        self.mechanism = mechanism

    # What the shared fitting (_OneReportEstimatorMixin) needs to know.
    _hints = _HINTS
    _channel_class = RangeQueryChannel
    _report_kind = "range-query"
    _reduce_name = "reduce_range_statistics"
    _privatizer_name = "RangeQueryPrivatizer"
    _as_channel = staticmethod(as_range_channel)

    # ------------------------------------------------------------ fitting
    def _keep_reports(self):
        return self.estimator is not None and bool(getattr(self.estimator, "_needs_reports", False))

    # ------------------------------------------------------------ estimates
    def _check_fitted(self):
        if not hasattr(self, "statistics_"):
            raise NotFittedError(
                f"This {type(self).__name__} instance is not fitted yet. Call 'fit' with "
                "range-query reports before using this estimator."
            )

    @property
    def columns_(self) -> list[str]:
        """The numeric columns, in order."""
        self._check_fitted()
        return list(self.channel_.columns)

    @property
    def bounds_(self) -> dict[str, tuple[float, float]]:
        """Each column's public range."""
        self._check_fitted()
        return dict(zip(self.channel_.columns, self.channel_.bounds, strict=True))

    @property
    def grids_(self) -> list[tuple[str, ...]]:
        """The grids with at least one report, in the channel's order."""
        result = self._result()
        return [self.channel_.grids[j] for j in result["measured"]]

    @property
    def consistency_info_(self) -> dict | None:
        """``n_iter``, ``gap`` and ``negative`` of the consistency step (None without it)."""
        return self._result()["consistency"]

    def _result(self):
        self._check_fitted()
        if getattr(self, "_cache", None) is None:
            self._cache = self._estimate()
        return self._cache

    def _axes(self, j):
        """Axis names and shape of grid j's table for the consistency step."""
        channel = self.channel_
        grid = channel._positions[j]
        if len(grid) == 1:
            p = grid[0]
            if channel.g2 is None:
                return (f"{p}",), (channel.g1,)
            # A 1-D grid as (2-D bin, 1-D bin within it): it shares axis p
            # with the 2-D grids.
            r = channel.g1 // channel.g2
            return (f"{p}", f"{p}:fine"), (channel.g2, r)
        return tuple(f"{p}" for p in grid), (channel.g2,) * len(grid)

    def _estimate(self):
        channel = self.channel_
        parts = self.statistics_.extra.parts
        measured, linear, tables = [], {}, []
        for j, part in enumerate(parts):
            if part is None or part.n == 0:
                continue
            sub = channel.channels[j]
            measured.append(j)
            p_lin = np.asarray(sub.unbiased_estimate(part), dtype=float)
            linear[j] = p_lin
            if self.estimator is None:
                start = p_lin
                if self.threshold is not None:
                    start = threshold_estimate(sub, part, self.threshold)[0]
            else:
                est = clone(self.estimator).fit_statistics(part)
                start = np.clip(np.asarray(est.distribution_, dtype=float), 0.0, None)
            tables.append(start)
        if not measured:
            raise ValueError("No grid has a report: fit on at least one report.")
        weights = [self._weight(j) for j in measured]
        axes = [self._axes(j) for j in measured]
        info = None
        if self.consistency and len(measured) > 1:
            shaped = [t.reshape(shape) for t, (_, shape) in zip(tables, axes, strict=True)]
            shaped, info = make_consistent(shaped, [names for names, _ in axes], weights)
            tables = [t.ravel() for t in shaped]
        else:
            tables = [project_to_simplex(t) for t in tables]
        return {
            "measured": measured,
            "linear": linear,
            "tables": dict(zip(measured, tables, strict=True)),
            "weights": dict(zip(measured, weights, strict=True)),
            "consistency": info,
            "matrices": {},
        }

    def _weight(self, j):
        """1 / the mean per-cell variance of grid j's unbiased estimate (uniform data)."""
        sub = self.channel_.channels[j]
        n = self.statistics_.extra.parts[j].n
        k = sub.n_categories
        var = np.asarray(sub.estimator_variance(np.full(k, 1.0 / k), n), dtype=float)
        mean = float(np.mean(var))
        return 1.0 / mean if mean > 0 else 1e300

    # ------------------------------------------------------------ the distributions
    def _one_way(self, p):
        """Column p's distribution over its finest bins (HDG: g1; TDG: g2).

        HDG reads the 1-D grid; without a report of it (very few users), the
        2-D grids' margin spread evenly over the 1-D bins of each 2-D bin.
        """
        result = self._result()
        channel = self.channel_
        if channel.method == "hdg":
            j = channel._positions.index((p,))
            if j in result["tables"]:
                return result["tables"][j]
            if channel.g2 is None:
                raise ValueError(
                    f"The grid of column {channel.columns[p]!r} has no report: fit on more reports."
                )
        total, weight = 0.0, 0.0
        for j in result["measured"]:
            grid = channel._positions[j]
            if len(grid) == 2 and p in grid:
                table = result["tables"][j].reshape(channel.g2, channel.g2)
                proj = table.sum(axis=1 - grid.index(p))
                coef = result["weights"][j] / channel.g2
                total, weight = total + coef * proj, weight + coef
        if weight == 0:
            raise ValueError(
                f"No grid holding column {channel.columns[p]!r} has a report: fit on more reports."
            )
        margin = total / weight
        if channel.method == "hdg":
            r = channel.g1 // channel.g2
            return np.repeat(margin / r, r)
        return margin

    def _pair(self, p, q):
        """The pair's table over the finest bins, axes (p, q), p < q."""
        result = self._result()
        channel = self.channel_
        j = channel._positions.index((p, q))
        if j not in result["tables"]:
            raise ValueError(
                f"The 2-D grid of columns {[channel.columns[p], channel.columns[q]]} has "
                "no report: fit on more reports."
            )
        coarse = result["tables"][j].reshape(channel.g2, channel.g2)
        if channel.method == "tdg":
            return coarse
        if (p, q) not in result["matrices"]:
            result["matrices"][(p, q)] = response_matrix(self._one_way(p), self._one_way(q), coarse)
        return result["matrices"][(p, q)]

    def histogram(self, columns: Sequence[str]) -> pd.Series | pd.DataFrame:
        """The estimated distribution of one or two columns over their finest bins.

        Parameters
        ----------
        columns : list of one or two str

        Returns
        -------
        probabilities : Series or DataFrame
            One column: a Series on the bins (a pandas ``IntervalIndex``). Two:
            a DataFrame, rows the first column's bins, columns the second's
            (HDG: the response matrix; TDG: the 2-D grid).

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_uldp.marginals import RangeQueryEstimator, RangeQueryPrivatizer
        >>> priv = RangeQueryPrivatizer(2.0, bounds={"a": (0, 1), "b": (0, 1)},
        ...                             granularity=(4, 2), random_state=0)
        >>> X = np.random.default_rng(0).random((20_000, 2))
        >>> est = RangeQueryEstimator().fit(priv.fit_transform(X))
        >>> est.histogram(["a", "b"]).shape
        (4, 4)
        """
        positions = self._positions_of(columns)
        if len(positions) == 1:
            p = positions[0]
            values = self._one_way(p)
            return pd.Series(values, index=self._intervals(p, values.size), name="probability")
        if len(positions) != 2:
            raise ValueError("histogram reads one or two columns.")
        p, q = positions
        table = self._pair(min(p, q), max(p, q))
        if p > q:
            table = table.T
        return pd.DataFrame(
            table,
            index=self._intervals(p, table.shape[0]),
            columns=self._intervals(q, table.shape[1]),
        )

    def _intervals(self, p, n_bins):
        name = self.channel_.columns[p]
        edges = self.channel_.edges(name, n_bins)
        return pd.IntervalIndex.from_breaks(edges, closed="left", name=name)

    # ------------------------------------------------------------ queries
    def _positions_of(self, columns):
        self._check_fitted()
        if isinstance(columns, str):
            columns = [columns]
        columns = [str(c) for c in columns]
        unknown = [c for c in columns if c not in self.channel_.columns]
        if unknown:
            raise KeyError(
                f"{unknown} are not columns of these reports; the columns are "
                f"{list(self.channel_.columns)}."
            )
        if len(set(columns)) != len(columns) or not columns:
            raise ValueError("Name each column once, and at least one column.")
        return [self.channel_.columns.index(c) for c in columns]

    def _parse(self, query):
        """A query as (positions in increasing order, lows, highs)."""
        if not isinstance(query, Mapping) or not query:
            raise ValueError(
                "A query is a non-empty dict {column: (low, high)}, e.g. "
                "{'distance': (500, 1000), 'air_time': (60, 120)}."
            )
        positions, lows, highs = [], [], []
        for column, rng in query.items():
            p = self._positions_of([column])[0]
            if isinstance(rng, (str, bytes)) or not hasattr(rng, "__len__") or len(rng) != 2:
                raise ValueError(
                    f"The range of column {column!r} must be a pair (low, high); None "
                    "leaves a side open."
                )
            low_b, high_b = self.channel_.bounds[p]
            values = []
            for v, default in zip(rng, (low_b, high_b), strict=True):
                if v is None:
                    values.append(default)
                    continue
                if isinstance(v, (bool, np.bool_)) or not isinstance(v, Real) or math.isnan(v):
                    raise ValueError(f"The range of column {column!r} must hold numbers (or None).")
                values.append(float(v))
            if values[0] > values[1]:
                raise ValueError(
                    f"The range of column {column!r} is empty: its low exceeds its high."
                )
            positions.append(p)
            lows.append(values[0])
            highs.append(values[1])
        order = np.argsort(positions)
        return (
            tuple(int(positions[i]) for i in order),
            [lows[i] for i in order],
            [highs[i] for i in order],
        )

    def _overlap(self, p, n_bins, lows, highs):
        """(Q, n_bins): the part of each bin within each query's range on column p."""
        edges = self.channel_.edges(self.channel_.columns[p], n_bins)
        lows = np.asarray(lows, dtype=float)[:, None]
        highs = np.asarray(highs, dtype=float)[:, None]
        left = np.maximum(edges[:-1], lows)
        right = np.minimum(edges[1:], highs)
        return np.clip(right - left, 0.0, None) / (edges[1:] - edges[:-1])

    def query(self, query: Mapping[str, Any]) -> float:
        """The estimated fraction of users whose row lies in a box.

        Parameters
        ----------
        query : dict of {str: (float or None, float or None)}
            Column -> closed range ``(low, high)`` (None leaves a side open);
            columns left out are not restricted.

        Returns
        -------
        fraction : float

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_uldp.marginals import RangeQueryEstimator, RangeQueryPrivatizer
        >>> rng = np.random.default_rng(0)
        >>> X = rng.uniform(0, 100, size=(40_000, 2))
        >>> priv = RangeQueryPrivatizer(2.0, bounds={"x0": (0, 100), "x1": (0, 100)},
        ...                             random_state=0)
        >>> est = RangeQueryEstimator().fit(priv.fit_transform(X))
        >>> round(est.query({"x0": (None, 50)}), 1), round(est.query({"x1": (20, 60)}), 1)
        (0.5, 0.4)
        """
        return float(self.query_many([query])[0])

    def query_many(self, queries: Sequence[Mapping[str, Any]]) -> np.ndarray:
        """The answers of many queries (vectorized over the queries of each set of columns).

        Parameters
        ----------
        queries : list of dict
            Queries as for :meth:`query`.

        Returns
        -------
        fractions : ndarray of shape (n_queries,)
        """
        self._result()
        if isinstance(queries, Mapping) or isinstance(queries, (str, bytes)):
            raise TypeError("queries must be a list of dicts; for one query use query().")
        parsed = [self._parse(q) for q in queries]
        out = np.empty(len(parsed), dtype=float)
        groups: dict[tuple[int, ...], list[int]] = {}
        for i, (positions, _, _) in enumerate(parsed):
            groups.setdefault(positions, []).append(i)
        for positions, rows in groups.items():
            lows = np.asarray([parsed[i][1] for i in rows], dtype=float)
            highs = np.asarray([parsed[i][2] for i in rows], dtype=float)
            out[rows] = self._answer(positions, lows, highs)
        return np.clip(out, 0.0, 1.0)

    def _weights(self, p, n_bins, lows, highs, t):
        return self._overlap(p, n_bins, lows[:, t], highs[:, t])

    def _answer(self, positions, lows, highs):
        if len(positions) == 1:
            (p,) = positions
            table = self._one_way(p)
            return self._weights(p, table.size, lows, highs, 0) @ table
        if len(positions) == 2:
            p, q = positions
            table = self._pair(p, q)
            wp = self._weights(p, table.shape[0], lows, highs, 0)
            wq = self._weights(q, table.shape[1], lows, highs, 1)
            return np.einsum("qi,ij,qj->q", wp, table, wq)
        # Three or more columns: the pairs' 2x2 tables (inside/outside each
        # range), then the table of maximum entropy over the 2^k cells.
        k = len(positions)
        pairs = {}
        for a, b in itertools.combinations(range(k), 2):
            table = self._pair(positions[a], positions[b])
            wa = self._weights(positions[a], table.shape[0], lows, highs, a)
            wb = self._weights(positions[b], table.shape[1], lows, highs, b)
            inside = np.einsum("qi,ij,qj->q", wa, table, wb)
            in_a = wa @ table.sum(axis=1)
            in_b = wb @ table.sum(axis=0)
            two = np.empty((len(lows), 2, 2))
            two[:, 1, 1] = inside
            two[:, 1, 0] = in_a - inside
            two[:, 0, 1] = in_b - inside
            two[:, 0, 0] = 1.0 - in_a - in_b + inside
            pairs[(a, b)] = np.clip(two, 0.0, None)
        joint = _maxent_boxes(pairs, k, len(lows))
        return joint[(slice(None),) + (1,) * k]

    def confidence_interval(self, query: Mapping[str, Any], alpha: float = 0.05):
        """A confidence interval for the fraction of users in a box of one or two columns.

        The truth lies between the mass of the cells *inside* the box and
        the mass of the cells the box *meets*, whatever the users' spread
        within a cell; each of these is a sum of cells of one grid, whose
        unbiased (linear) estimate has a known variance. The interval is
        ``[inside - z se, met + z se]`` for the grid holding the box's
        columns (a 2-D grid for two columns; for one, its 1-D grid under
        HDG, the 2-D grids' margins combined under TDG). Under HDG, a box
        over two columns that cuts through 2-D cells is also bounded above
        by the mass of the 1-D cells it meets on each column (finer); the
        smallest upper bound is taken, with the quantile ``z`` of
        ``1 - alpha / (2 K)`` for K bounds (Bonferroni), so the interval
        covers the truth with probability at least ``1 - alpha`` (normal
        approximation). For a box on the cells' edges it is the normal
        interval of the linear estimate. The variance of a sum of cells is
        taken as the sum of the cells' variances at the consistent estimate,
        an upper bound for the package's oracles (their cells' statistics
        are negatively correlated or uncorrelated).

        Parameters
        ----------
        query : dict of {str: (float, float)}
            One or two columns.
        alpha : float in (0, 1), default=0.05

        Returns
        -------
        (lower, upper) : tuple of float

        Raises
        ------
        ValueError
            For three or more columns: their answer comes from the maximum-
            entropy combination of the pairs, whose error is the model's, not
            sampling noise.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_uldp.marginals import RangeQueryEstimator, RangeQueryPrivatizer
        >>> X = np.random.default_rng(0).uniform(0, 1, size=(50_000, 2))
        >>> priv = RangeQueryPrivatizer(2.0, bounds={"x0": (0, 1), "x1": (0, 1)},
        ...                             random_state=0)
        >>> est = RangeQueryEstimator().fit(priv.fit_transform(X))
        >>> low, high = est.confidence_interval({"x0": (0, 0.5), "x1": (0, 0.5)})
        >>> bool(low < 0.25 < high)
        True
        """
        if not (isinstance(alpha, Real) and 0 < alpha < 1):
            raise ValueError(f"alpha must be a level in (0, 1), such as 0.05; got {alpha!r}.")
        positions, lows, highs = self._parse(query)
        if len(positions) > 2:
            raise ValueError(
                f"A query over {len(positions)} columns is answered from the maximum-"
                "entropy combination of its pairs, whose error is the model's (the "
                "dependence the pairs cannot see), not sampling noise: it has no "
                "confidence interval. Intervals cover queries over one or two columns."
            )
        result = self._result()
        channel = self.channel_
        if len(positions) == 2:
            main = [(channel._positions.index(positions), 1.0)]
        elif channel.method == "hdg":
            main = [(channel._positions.index(positions), 1.0)]
        else:
            p = positions[0]
            holders = [j for j in result["measured"] if p in channel._positions[j]]
            coefs = np.asarray([result["weights"][j] for j in holders])
            main = list(zip(holders, coefs / coefs.sum(), strict=True))
        lower_bounds = [self._bound(main, positions, lows, highs, inner=True)]
        upper_bounds = [self._bound(main, positions, lows, highs, inner=False)]
        if len(positions) == 2 and channel.method == "hdg":
            # The 1-D grids bound the box above on the columns along which it
            # cuts through 2-D cells (decided by the box alone, not the data).
            for t, p in enumerate(positions):
                w = self._overlap(p, channel.g2, [lows[t]], [highs[t]])[0]
                if ((w > 0) & (w < 1.0 - 1e-12)).any():
                    j = channel._positions.index((p,))
                    upper_bounds.append(
                        self._bound([(j, 1.0)], (p,), [lows[t]], [highs[t]], inner=False)
                    )
        low = max(
            value - float(norm.ppf(1.0 - alpha / (2 * len(lower_bounds)))) * math.sqrt(var)
            for value, var in lower_bounds
        )
        high = min(
            value + float(norm.ppf(1.0 - alpha / (2 * len(upper_bounds)))) * math.sqrt(var)
            for value, var in upper_bounds
        )
        low = float(np.clip(low, 0.0, 1.0))
        return low, max(low, float(np.clip(high, 0.0, 1.0)))

    def _bound(self, sources, positions, lows, highs, *, inner):
        """The linear estimate of the cells inside (or met by) the box, and its variance."""
        result = self._result()
        channel = self.channel_
        value = variance = 0.0
        for j, lam in sources:
            if j not in result["tables"]:
                raise ValueError("The grid this query needs has no report: fit on more reports.")
            inside, meets = self._cell_sets(j, positions, lows, highs)
            cells = inside if inner else meets
            sub = channel.channels[j]
            n = self.statistics_.extra.parts[j].n
            var = np.asarray(sub.estimator_variance(result["tables"][j], n), dtype=float)
            value += lam * float(result["linear"][j][cells].sum())
            variance += lam**2 * float(var[cells].sum())
        return value, variance

    def _cell_sets(self, j, positions, lows, highs):
        """Grid j's cells inside the box, and the cells it meets (boolean, flat)."""
        channel = self.channel_
        grid = channel._positions[j]
        n_bins = channel.g1 if len(grid) == 1 else channel.g2
        inside, meets = [], []
        for p in grid:
            if p in positions:
                t = positions.index(p)
                w = self._overlap(p, n_bins, [lows[t]], [highs[t]])[0]
                inside.append(w >= 1.0 - 1e-12)
                meets.append(w > 0.0)
            else:
                inside.append(np.ones(n_bins, dtype=bool))
                meets.append(np.ones(n_bins, dtype=bool))
        inner = np.ones((), dtype=bool)
        outer = np.ones((), dtype=bool)
        for a, b in zip(inside, meets, strict=True):
            inner = np.multiply.outer(inner, a)
            outer = np.multiply.outer(outer, b)
        return inner.ravel(), outer.ravel()

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.requires_fit = True
        return tags


def response_matrix(
    rows: np.ndarray,
    columns: np.ndarray,
    coarse: np.ndarray,
    *,
    tol: float = _IPF_TOL,
    max_iter: int = _IPF_MAX_ITER,
) -> np.ndarray:
    """HDG's response matrix of a pair: the ``g1 x g1`` table from its three grids.

    The table of maximum entropy (starting from the uniform one) whose row
    sums are ``rows`` (the first column's 1-D grid), whose column sums are
    ``columns`` (the second's) and whose sums over the ``r x r`` blocks
    (``r = g1 / g2``) are ``coarse`` (the pair's 2-D grid): iterative
    proportional fitting, the paper's weighted updates, until every sum is
    within ``tol`` (consistent grids) or ``max_iter`` sweeps.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp.marginals._range_estimator import response_matrix
    >>> rows = cols = np.array([0.1, 0.4, 0.4, 0.1])
    >>> coarse = np.array([[0.5, 0.0], [0.0, 0.5]])
    >>> response_matrix(rows, cols, coarse).round(2).tolist()[1]
    [0.08, 0.32, 0.0, 0.0]
    """
    rows = np.asarray(rows, dtype=float)
    columns = np.asarray(columns, dtype=float)
    coarse = np.asarray(coarse, dtype=float)
    g1, g2 = rows.size, coarse.shape[0]
    r = g1 // g2
    table = np.full((g1, g1), 1.0 / (g1 * g1))
    for _ in range(max_iter):
        before = table
        current = table.sum(axis=1)
        table = table * _ratio(rows, current)[:, None]
        current = table.sum(axis=0)
        table *= _ratio(columns, current)[None, :]
        blocks = table.reshape(g2, r, g2, r).sum(axis=(1, 3))
        factor = _ratio(coarse, blocks)
        table = (table.reshape(g2, r, g2, r) * factor[:, None, :, None]).reshape(g1, g1)
        gap = max(
            float(np.abs(table.sum(axis=1) - rows).max()),
            float(np.abs(table.sum(axis=0) - columns).max()),
        )
        if gap <= tol or float(np.abs(table - before).max()) <= _IPF_STALL:
            break
    return table


def _ratio(target, current):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(current > 0, target / current, 0.0)


def _maxent_boxes(pairs, k, n_queries, tol=_IPF_TOL, max_iter=_IPF_MAX_ITER):
    """(Q, 2, ..., 2): per query, the maximum-entropy table with the pairs' 2x2 tables."""
    table = np.full((n_queries,) + (2,) * k, 0.5**k)
    others = {(a, b): tuple(1 + c for c in range(k) if c not in (a, b)) for (a, b) in pairs}
    for _ in range(max_iter):
        before = table
        for (a, b), target in pairs.items():
            current = table.sum(axis=others[(a, b)])
            table = table * np.expand_dims(_ratio(target, current), others[(a, b)])
        gap = max(
            float(np.abs(table.sum(axis=others[key]) - target).max())
            for key, target in pairs.items()
        )
        if gap <= tol or float(np.abs(table - before).max()) <= _IPF_STALL:
            break
    return table
