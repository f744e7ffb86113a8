"""The collector of the heavy-hitter protocols."""

from __future__ import annotations

import warnings
from numbers import Integral, Real
from operator import add
from typing import Any, TypeVar

import numpy as np
import pandas as pd
from scipy.stats import norm
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ..exceptions import ReportMismatchError, UninformativeEstimateWarning
from ..mechanisms._channel import ReportStatistics
from ..utils._dask import tree_sum_of_partitions
from ..utils._docstrings import fill_doc
from ..utils._typing import ReportsLike
from ..utils._validation import validate_params_with_hints
from ._mechanism import OpenDomainMechanism, get_protocol
from ._protocol import PrefixProtocol, _Protocol, protocol_from_dict

__all__ = ["HeavyHitterEstimator", "as_protocol", "reduce_reports"]

_DOCS = {
    "y_ignored": """
        y : None
            Ignored.

        Returns
        -------
        self : object
        """,
}


def as_protocol(mechanism):
    """The protocol described by a fitted open-domain mechanism, a protocol or a spec."""
    if isinstance(mechanism, _Protocol):
        return mechanism
    if isinstance(mechanism, dict):
        return protocol_from_dict(mechanism)
    if isinstance(mechanism, OpenDomainMechanism):
        if not hasattr(mechanism, "channel_"):
            return mechanism.__sklearn_clone__().fit().channel_
        return mechanism.channel_
    raise TypeError(
        "mechanism must be an open-domain mechanism (PrefixExtendingMethod, TreeHist, "
        "UtilityOptimizedHeavyHitters, BloomRAPPOR), its channel_ or its spec dict; "
        f"got {type(mechanism).__name__}."
    )


def _is_dask(obj):
    return hasattr(obj, "__dask_graph__") and hasattr(obj, "to_delayed")


def _statistics(batch, protocol):
    return protocol.statistics(protocol.encode_reports(batch))


def reduce_reports(batches: Any, mechanism: Any = None) -> ReportStatistics:
    """Sum the sufficient statistics of batches of open-domain reports.

    Parameters
    ----------
    batches : iterable of report batches, or a Dask DataFrame / Array
        In-memory batches may carry their protocol; a Dask collection is
        reduced on its workers (one task per partition, a tree of sums), and
        only the statistics come back.
    mechanism : fitted mechanism, protocol or spec dict, default=None
        Needed for Dask collections and for batches that do not carry it.

    Returns
    -------
    statistics : ReportStatistics
        Feed it to :meth:`HeavyHitterEstimator.fit_statistics`.

    Examples
    --------
    >>> from sklearn_uldp.heavy_hitters import PrefixExtendingMethod, reduce_reports
    >>> mech = PrefixExtendingMethod(epsilon=2.0, random_state=0).fit()
    >>> stats = reduce_reports([mech.transform(["a", "b"]), mech.transform(["c"])])
    >>> stats.n
    3
    """
    protocol = None if mechanism is None else as_protocol(mechanism)
    if _is_dask(batches):
        if protocol is None:
            raise ValueError(
                "Dask partitions do not carry the protocol: pass mechanism= (the fitted "
                "mechanism or its spec)."
            )
        return tree_sum_of_partitions(batches, _statistics, add, protocol)
    total = None
    for batch in batches:
        carried = get_protocol(batch)
        use = carried if carried is not None else protocol
        if use is None:
            raise ValueError("These reports do not carry their protocol; pass mechanism=.")
        if protocol is not None and carried is not None and carried != protocol:
            raise ReportMismatchError("A batch comes from another protocol than `mechanism`.")
        part = _statistics(batch, use)
        total = part if total is None else total + part
    if total is None:
        raise ValueError("No batches of reports were given.")
    return total


_EstimatorT = TypeVar("_EstimatorT", bound="HeavyHitterEstimator")


def _groups_without_reports(protocol, stats):
    """``(empty, groups)``: how many of a prefix protocol's groups have no report.

    PEM and TreeHist estimate each prefix length from its own group of users
    (drawn at random) and the kept items from the held-out group: a group
    without reports has no estimate (0 / 0), and its level could only rank
    at random. With few reports and many groups (long items: one group per
    ``step_bits`` bits of ``8 max_bytes``) that happens.
    """
    if not isinstance(protocol, PrefixProtocol):
        return 0, 0
    per_group = protocol.group_tables(stats).sum(axis=(1, 2))
    return int(np.sum(per_group == 0)), int(per_group.size)


class HeavyHitterEstimator(BaseEstimator):
    """Discover the most frequent items from open-domain reports.

    Reads the protocol (public spec) from the reports (or ``mechanism``),
    accumulates its sufficient statistics (additive: ``partial_fit`` on
    chunks equals ``fit`` on all the reports, exactly) and decodes: the
    prefix protocols walk their tree of candidates (PEM: the ``top_k``
    largest per level; TreeHist: those above the significance threshold),
    the utility-optimized protocol counts the non-sensitive items reported
    in clear and estimates the public sensitive list.

    Parameters
    ----------
    top_k : int or None, default=None
        Number of heavy hitters returned; None: the protocol's ``top_k``.
    mechanism : fitted mechanism, protocol or dict, default=None
        For reports that do not carry their protocol.
    width : int or None, default=None
        Candidates kept per level while decoding (None: the protocol's).
    alpha : float in (0, 1), default=0.05
        Level of the confidence intervals of ``heavy_hitters_frame_``.
    report : {"significant", "positive", "top_k"}, default="significant"
        Which of the ``top_k`` best candidates ``heavy_hitters_`` and
        ``heavy_hitters_frame_`` list. "significant": those whose confidence
        interval lies above 0 (a one-sided test of "frequency > 0" at level
        ``alpha / 2`` per item), so few reports give a short list rather
        than noise; "positive": those with a positive estimate; "top_k":
        all of them, whatever their estimate (unbiased, so some are
        negative where the true frequency is near 0). ``candidates_`` always
        holds every candidate. See the "Few reports" section of the Heavy
        hitters page for the measurements behind the default.

    Attributes
    ----------
    protocol_ : protocol
        The public spec of the reports.
    statistics_ : ReportStatistics
        The accumulated sufficient statistics.
    n_reports_ : int
    candidates_ : DataFrame
        Every candidate of the last level: ``item``, ``frequency`` (the
        unbiased estimate), ``std_error``, ``score`` (the estimate divided by
        its null standard error: a z-statistic of "frequency > 0"), largest
        first.
    heavy_hitters_ : Series
        At most ``top_k`` items (those ``report`` keeps) and their estimated
        frequencies, largest first.
    heavy_hitters_frame_ : DataFrame
        The same with ``std_error``, ``score``, ``lower`` and ``upper``
        (normal confidence interval at level ``1 - alpha``).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp.heavy_hitters import PrefixExtendingMethod, HeavyHitterEstimator
    >>> words = np.random.default_rng(1).choice(["cat", "dog", "emu"], p=[.6, .3, .1],
    ...                                         size=60_000)
    >>> mech = PrefixExtendingMethod(epsilon=4.0, top_k=3, max_bytes=4, random_state=0)
    >>> est = HeavyHitterEstimator().fit(mech.fit_transform(words))
    >>> est.heavy_hitters_.round(1).to_dict()
    {'cat': 0.6, 'dog': 0.3, 'emu': 0.1}
    >>> list(est.heavy_hitters_frame_.columns)
    ['frequency', 'std_error', 'score', 'lower', 'upper']
    """

    _parameter_constraints: dict[str, list[Any]] = {
        "top_k": [Interval(Integral, 1, None, closed="left"), None],
        "mechanism": [None, OpenDomainMechanism, _Protocol, dict],
        "width": [Interval(Integral, 1, None, closed="left"), None],
        "alpha": [Interval(Real, 0, 1, closed="neither")],
        "report": [StrOptions({"significant", "positive", "top_k"})],
    }

    def __init__(
        self,
        top_k: int | None = None,
        *,
        mechanism: Any = None,
        width: int | None = None,
        alpha: float = 0.05,
        report: str = "significant",
    ) -> None:
        self.top_k = top_k
        self.mechanism = mechanism
        self.width = width
        self.alpha = alpha
        self.report = report

    # ------------------------------------------------------------------ fit
    @fill_doc(_DOCS)
    def fit(self: _EstimatorT, X: ReportsLike, y: object = None) -> _EstimatorT:
        """Fit on all the reports (a batch, or a Dask collection).

        Parameters
        ----------
        X : array-like of shape (n, 1) or (n,), DataFrame, or Dask collection
            Reports of an open-domain mechanism.
        %(y_ignored)s
        """
        validate_params_with_hints(self, {})
        for attr in ("statistics_", "protocol_", "n_reports_", "_decoded"):
            self.__dict__.pop(attr, None)
        if _is_dask(X):
            if self.mechanism is None:
                raise ValueError("Pass mechanism= to fit on a Dask collection.")
            return self.fit_statistics(reduce_reports(X, self.mechanism))
        self.partial_fit(X)
        _ = self.candidates_  # decode now, so that fit fully fits
        return self

    @fill_doc(_DOCS)
    def partial_fit(self: _EstimatorT, X: ReportsLike, y: object = None) -> _EstimatorT:
        """Add a batch of reports (sufficient statistics add up).

        Parameters
        ----------
        X : array-like of shape (n, 1) or (n,), or DataFrame
        %(y_ignored)s
        """
        validate_params_with_hints(self, {})
        protocol = self._resolve(X)
        if hasattr(self, "protocol_") and protocol != self.protocol_:
            raise ReportMismatchError(
                "This batch comes from another protocol than the earlier ones: "
                + "; ".join(self.protocol_.describe_difference(protocol))
            )
        stats = protocol.statistics(protocol.encode_reports(X))
        return self._add_statistics(stats)

    def fit_statistics(self: _EstimatorT, statistics: ReportStatistics) -> _EstimatorT:
        """Fit from sufficient statistics summed elsewhere (:func:`reduce_reports`).

        Parameters
        ----------
        statistics : ReportStatistics

        Returns
        -------
        self : object
        """
        validate_params_with_hints(self, {})
        if not isinstance(statistics, ReportStatistics) or not isinstance(
            statistics.channel, _Protocol
        ):
            raise TypeError(
                "statistics must be the ReportStatistics of open-domain reports "
                "(reduce_reports or protocol.statistics)."
            )
        for attr in ("statistics_", "protocol_", "n_reports_", "_decoded"):
            self.__dict__.pop(attr, None)
        self._add_statistics(statistics)
        _ = self.candidates_
        return self

    def _add_statistics(self, stats):
        if self.mechanism is not None and stats.channel != as_protocol(self.mechanism):
            raise ReportMismatchError("The reports come from another protocol than `mechanism`.")
        self.protocol_ = stats.channel
        self.statistics_ = stats if not hasattr(self, "statistics_") else self.statistics_ + stats
        self.n_reports_ = int(self.statistics_.n)
        self.__dict__.pop("_decoded", None)
        return self

    def _resolve(self, X):
        carried = get_protocol(X)
        given = None if self.mechanism is None else as_protocol(self.mechanism)
        if carried is not None and given is not None and carried != given:
            raise ReportMismatchError(
                "The reports carry another protocol than `mechanism`: "
                + "; ".join(given.describe_difference(carried))
            )
        protocol = carried if carried is not None else given
        if protocol is None:
            raise ValueError(
                "These reports do not carry their protocol (plain arrays lose it): pass "
                "mechanism= (the fitted mechanism, its protocol_ or its spec())."
            )
        return protocol

    # --------------------------------------------------------------- results
    @property
    def candidates_(self) -> pd.DataFrame:
        if not hasattr(self, "statistics_"):
            raise NotFittedError(
                "This HeavyHitterEstimator is not fitted yet; call fit or partial_fit."
            )
        decoded = self.__dict__.get("_decoded")
        if decoded is None:
            empty, groups = _groups_without_reports(self.protocol_, self.statistics_)
            if empty:
                # Nothing can be estimated: say why, list nothing (never NaN).
                name = {"pem": "PEM", "treehist": "TreeHist"}[self.protocol_.name]
                warnings.warn(
                    f"{name} estimates each prefix length from its own group of users, "
                    f"and {empty} of its {groups} groups received no report "
                    f"({int(self.statistics_.n):,} reports in all): no item can be "
                    "estimated, so heavy_hitters_ and candidates_ are empty. Collect "
                    "more reports (thousands per group for useful estimates), or use "
                    "fewer groups: a smaller max_bytes or a larger step_bits.",
                    UninformativeEstimateWarning,
                    stacklevel=3,
                )
                decoded = self._decoded = pd.DataFrame(
                    {
                        "item": pd.Series([], dtype=object),
                        "frequency": pd.Series([], dtype=float),
                        "std_error": pd.Series([], dtype=float),
                        "score": pd.Series([], dtype=float),
                    }
                )
                return decoded
            decoded = self._decoded = self.protocol_.decode(self.statistics_, width=self.width)
            if self.report == "significant" and self.heavy_hitters_frame_.empty:
                warnings.warn(
                    f"No candidate's frequency is significantly above 0 in these "
                    f"{int(self.statistics_.n):,} reports (no {1 - self.alpha:.0%} "
                    "confidence interval lies above 0): heavy_hitters_ is empty. The "
                    "estimates of every candidate are in candidates_; collect more "
                    "reports or spend a larger budget, or pass report='top_k' to list "
                    "the best candidates anyway.",
                    UninformativeEstimateWarning,
                    stacklevel=3,
                )
        return decoded

    @property
    def heavy_hitters_frame_(self) -> pd.DataFrame:
        k = self.protocol_.top_k if self.top_k is None else int(self.top_k)
        frame = self.candidates_.set_index("item")
        z = norm.isf(self.alpha / 2)
        frame["lower"] = frame["frequency"] - z * frame["std_error"]
        frame["upper"] = frame["frequency"] + z * frame["std_error"]
        if self.report == "significant":
            frame = frame[frame["lower"] > 0]
        elif self.report == "positive":
            frame = frame[frame["frequency"] > 0]
        return frame.head(k)

    @property
    def heavy_hitters_(self) -> pd.Series:
        return self.heavy_hitters_frame_["frequency"].rename("frequency")

    def confidence_intervals(self, alpha: float | None = None) -> pd.DataFrame:
        """Normal confidence intervals of the heavy hitters' frequencies.

        Parameters
        ----------
        alpha : float or None, default=None
            1 - confidence level (None: the estimator's ``alpha``).

        Returns
        -------
        intervals : DataFrame with columns ``lower`` and ``upper``
        """
        check_is_fitted(self, "statistics_")
        frame = self.heavy_hitters_frame_
        z = norm.isf((self.alpha if alpha is None else float(alpha)) / 2)
        return pd.DataFrame(
            {
                "lower": frame["frequency"] - z * frame["std_error"],
                "upper": frame["frequency"] + z * frame["std_error"],
            },
            index=frame.index,
        )

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.requires_fit = True
        tags.non_deterministic = False
        tags.input_tags.two_d_array = True
        tags.input_tags.one_d_array = True
        return tags
