"""The collector's side of collection over time: one estimate per round."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, clone
from sklearn.utils.validation import check_is_fitted

from ..estimators._base import DistributionEstimator
from ..estimators._empirical import EmpiricalEstimator
from ..exceptions import ReportMismatchError
from ..mechanisms._base import BaseMechanism
from ..mechanisms._channel import Channel
from ..mechanisms._reports import attach_channel, get_channel

__all__ = ["LongitudinalEstimator"]


class LongitudinalEstimator(BaseEstimator):
    """The distribution of every round of a repeated collection, with error bars.

    Fits one clone of ``estimator`` per round on that round's reports (any
    estimator of the package: the end-to-end channel of one report is an
    ordinary channel) and lays the results side by side: ``distributions_``
    and ``standard_errors_`` have one row per round, :meth:`confidence_intervals`
    one block of intervals per round, ``est[label]`` is a round's fitted
    estimator (e.g. for :func:`~sklearn_uldp.stats.two_sample_test`, the
    test of a change between two rounds), :meth:`to_frame` gives a tidy
    table for plots. Every round must come from the same channel (the same
    spec): a longitudinal mechanism's memoized answers are tied to it.

    Parameters
    ----------
    estimator : DistributionEstimator or None, default=None
        The per-round estimator (cloned for each round); ``None`` is
        ``EmpiricalEstimator()``, whose standard errors are exact.
    mechanism : BaseMechanism, Channel, dict or None, default=None
        The mechanism of the reports, for reports that do not carry it.

    Attributes
    ----------
    rounds_ : ndarray of shape (n_rounds,)
        The round labels, in order.
    estimators_ : list of DistributionEstimator
        The fitted per-round estimators.
    channel_ : Channel
        The channel of every round's reports.
    categories_ : ndarray of shape (k,)
    n_reports_ : ndarray of int of shape (n_rounds,)
    distributions_ : ndarray of shape (n_rounds, k)
    standard_errors_ : ndarray of shape (n_rounds, k)

    Notes
    -----
    :func:`~sklearn_uldp.stats.two_sample_test` on two rounds
    (``two_sample_test(est[a], est[b])``) assumes the two rounds' reports
    independent. Reports of the same
    users in two rounds of a memoized mechanism are not: they share the
    permanent answers, which correlates them *positively* (given the value,
    a user's two reports are two noisy copies of one answer), so the
    covariance of the difference of the two rounds' statistics is *smaller*
    than the test assumes. The test is then conservative: when no value
    changed, it rejects at most as often as ``alpha`` says (a simulation in
    the test suite checks it); a change it detects is real. Rounds of
    disjoint users are independent and the test is exact (asymptotically).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp.longitudinal import LongitudinalEstimator
    >>> from sklearn_uldp.longitudinal import LongitudinalGRR
    >>> rng = np.random.default_rng(0)
    >>> mech = LongitudinalGRR(2.0, 1.0, categories=[0, 1, 2], random_state=0).fit()
    >>> day1 = rng.choice(3, p=[.5, .3, .2], size=(20_000, 1))
    >>> day2 = np.where(rng.random((20_000, 1)) < .2, 2, day1)  # drift to 2
    >>> est = LongitudinalEstimator().fit([mech.transform(day1), mech.transform(day2)])
    >>> est.distributions_.round(1).tolist()
    [[0.5, 0.3, 0.2], [0.4, 0.2, 0.4]]
    >>> from sklearn_uldp.stats import two_sample_test
    >>> est.confidence_intervals().shape, bool(two_sample_test(est[0], est[1]).pvalue < 1e-6)
    ((2, 3, 2), True)
    """

    _parameter_constraints: dict[str, list[Any]] = {
        "estimator": [None, DistributionEstimator],
        "mechanism": [None, BaseMechanism, Channel, dict],
    }

    def __init__(
        self,
        estimator: DistributionEstimator | None = None,
        *,
        mechanism: BaseMechanism | Channel | dict[str, Any] | None = None,
    ) -> None:
        self.estimator = estimator
        self.mechanism = mechanism

    def __sklearn_clone__(self):
        """A clone sharing ``mechanism`` when it is a channel (an immutable
        public spec, not an estimator; as DistributionEstimator's clone does)."""
        if isinstance(self.mechanism, Channel):
            new = clone(copy.copy(self).set_params(mechanism=None))
            new.mechanism = self.mechanism
            return new
        return super().__sklearn_clone__()

    def _template(self):
        est = EmpiricalEstimator() if self.estimator is None else self.estimator
        est = clone(est)
        if self.mechanism is not None:
            est.set_params(mechanism=self.mechanism)
        return est

    def fit(self, X: Any, y: object = None, *, rounds: Any = None) -> LongitudinalEstimator:
        """Estimate the distribution of every round.

        Parameters
        ----------
        X : list or dict of report arrays, or one report array
            The reports of each round: a list or tuple (rounds 0, 1, ...) or
            a dict ``{label: reports}``; or the reports of all rounds
            stacked, with ``rounds`` giving each row's round (without
            ``rounds``, one array is one round).
        y : None
            Ignored.
        rounds : array-like of shape (n_reports,), default=None
            The round of each row of ``X`` (when ``X`` is one array); the
            rounds are ordered by first appearance.

        Returns
        -------
        self : object
        """
        self._validate_params()
        labels, batches = _split_rounds(X, rounds)
        if not batches:
            raise ValueError("No rounds: pass the reports of at least one round.")
        template = self._template()
        estimators, channel = [], None
        for label, reports in zip(labels, batches, strict=True):
            carried = get_channel(reports)
            if channel is not None and carried is not None and carried != channel:
                differences = ", ".join(channel.describe_difference(carried))
                raise ReportMismatchError(
                    f"The reports of round {label!r} come from {carried!r}, but earlier "
                    f"rounds from {channel!r} (differences: {differences}). Every round of "
                    "a longitudinal collection must use the same spec: the users' "
                    "memoized answers are tied to it, and a new spec spends "
                    "epsilon_perm again. Estimate each spec's rounds separately."
                )
            est = clone(template)
            if channel is not None and est.mechanism is None:
                est.set_params(mechanism=channel)
            est.fit(reports)
            channel = est.channel_
            estimators.append(est)
        self.rounds_ = np.asarray(labels, dtype=object)
        self.estimators_ = estimators
        self.channel_ = estimators[-1].channel_
        self.categories_ = self.channel_.categories
        self.n_reports_ = np.array([e.n_reports_ for e in estimators], dtype=np.int64)
        return self

    @property
    def distributions_(self) -> np.ndarray:
        """The estimate of every round, one row per round."""
        check_is_fitted(self, "estimators_")
        return np.vstack([e.distribution_ for e in self.estimators_])

    @property
    def standard_errors_(self) -> np.ndarray:
        """The standard errors of every round's estimate, one row per round."""
        check_is_fitted(self, "estimators_")
        return np.vstack([e.standard_errors_ for e in self.estimators_])

    def confidence_intervals(self, alpha: float = 0.05, **kwargs: Any) -> np.ndarray:
        """Confidence intervals of every round's estimate.

        Parameters
        ----------
        alpha : float in (0, 1), default=0.05
        **kwargs
            Passed to each round's
            :meth:`~sklearn_uldp.estimators.DistributionEstimator.confidence_intervals`
            (``method``, ``simultaneous``, ``n_resamples``, ``random_state``).

        Returns
        -------
        intervals : ndarray of shape (n_rounds, k, 2)
        """
        check_is_fitted(self, "estimators_")
        return np.stack([e.confidence_intervals(alpha, **kwargs) for e in self.estimators_])

    def _index(self, label):
        if label in list(self.rounds_):
            return list(self.rounds_).index(label)
        if isinstance(label, (int, np.integer)) and -len(self.rounds_) <= label < len(self.rounds_):
            return int(label) % len(self.rounds_)
        raise KeyError(
            f"{label!r} is not a round of this estimator; its rounds are {list(self.rounds_)} "
            "(pass a label or a position)."
        )

    def __getitem__(self, label: Any) -> DistributionEstimator:
        """The fitted estimator of one round (by label, or by position).

        Test whether the distribution changed between two rounds with
        :func:`~sklearn_uldp.stats.two_sample_test` on two rounds'
        estimators: ``two_sample_test(est["mon"], est["tue"])`` (see Notes
        of the class for what it assumes).
        """
        check_is_fitted(self, "estimators_")
        return self.estimators_[self._index(label)]

    def to_frame(self, alpha: float = 0.05, **kwargs: Any) -> pd.DataFrame:
        """A tidy table: one row per (round, category).

        Parameters
        ----------
        alpha : float in (0, 1), default=0.05
            Level of the intervals.
        **kwargs
            Passed to :meth:`confidence_intervals`.

        Returns
        -------
        frame : DataFrame
            Columns ``round``, ``category``, ``estimate``, ``std_error``,
            ``lower``, ``upper``, ``n_reports``.
        """
        check_is_fitted(self, "estimators_")
        n_rounds, k = len(self.rounds_), len(self.categories_)
        ci = self.confidence_intervals(alpha, **kwargs)
        return pd.DataFrame(
            {
                "round": np.repeat(self.rounds_, k),
                "category": np.tile(np.asarray(self.categories_, dtype=object), n_rounds),
                "estimate": self.distributions_.ravel(),
                "std_error": self.standard_errors_.ravel(),
                "lower": ci[:, :, 0].ravel(),
                "upper": ci[:, :, 1].ravel(),
                "n_reports": np.repeat(self.n_reports_, k),
            }
        )


def _split_rounds(X, rounds):
    """(labels, batches) of the rounds' reports."""
    if rounds is not None:
        if isinstance(X, (list, tuple, Mapping)):
            raise ValueError(
                "rounds= labels the rows of one report array; X is already split "
                "into rounds. Pass one of the two."
            )
        labels_per_row = np.asarray(rounds, dtype=object).ravel()
        n = np.shape(X)[0]
        if labels_per_row.shape[0] != n:
            raise ValueError(
                f"rounds has {labels_per_row.shape[0]} labels for {n} rows of reports."
            )
        labels = pd.unique(pd.Series(labels_per_row, dtype=object))
        codes = pd.Index(labels).get_indexer(labels_per_row)
        batches = [_rows(X, codes == j) for j in range(len(labels))]
        return list(labels), batches
    if isinstance(X, Mapping):
        return list(X.keys()), list(X.values())
    if isinstance(X, (list, tuple)):
        return list(range(len(X))), list(X)
    if hasattr(X, "shape"):  # one array, DataFrame or sparse matrix: one round
        return [0], [X]
    raise TypeError(
        "X must be a list of report arrays (one per round), a dict {round: reports}, "
        "or one report array (one round, or rows labelled with rounds=); got "
        f"{type(X).__name__}."
    )


def _rows(X, mask):
    """Rows of reports (array, DataFrame or sparse), keeping the channel."""
    channel = get_channel(X)
    if hasattr(X, "iloc"):
        part = X.iloc[np.flatnonzero(mask)]
    else:
        part = X[np.flatnonzero(mask)]
    return part if channel is None else attach_channel(part, channel)
