"""The collector's side of the numeric family: channel resolution and statistics.

A numeric estimator learns which channel produced the reports from the
reports themselves (mechanisms attach their channel) or from its
``mechanism`` parameter (a fitted mechanism, a channel or a spec dict), and
refuses reports of another channel
(:class:`~sklearn_uldp.exceptions.ReportMismatchError`), as the categorical
estimators do. ``partial_fit`` only adds the histogram of output codes
(integers, so chunked fitting equals one-shot fitting bit for bit); the
estimate is computed from the accumulated statistics.
"""

from __future__ import annotations

from typing import Any, TypeVar

import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.utils.validation import _check_feature_names, check_array, check_is_fitted

from ..exceptions import ReportMismatchError
from ..mechanisms._base import check_not_sampled_column
from ..mechanisms._channel import Channel, ReportStatistics
from ..mechanisms._registry import spec_class
from ..mechanisms._reports import get_channel
from ..utils._typing import ReportsLike
from ._base import BaseNumericMechanism, NumericChannel

__all__ = ["NumericEstimatorBase", "as_numeric_channel"]

_EstimatorT = TypeVar("_EstimatorT", bound="NumericEstimatorBase")

_FITTED = ("channel_", "statistics_", "n_reports_", "n_features_in_", "feature_names_in_")


def as_numeric_channel(mechanism: Any) -> Channel:
    """The channel described by a numeric mechanism, a channel or a spec dict.

    Parameters
    ----------
    mechanism : BaseNumericMechanism, Channel or dict
        A fitted mechanism, an unfitted one with explicit ``bounds``, a
        channel, or a spec (``Channel.to_dict()``).

    Returns
    -------
    channel : Channel
        The mechanism's channel (``channel_``), or the channel of the spec.

    Examples
    --------
    >>> from sklearn_uldp import PiecewiseMechanism
    >>> from sklearn_uldp.numeric import as_numeric_channel
    >>> as_numeric_channel(PiecewiseMechanism(epsilon=1.0, bounds=(0, 1)))
    PiecewiseChannel(bounds=(0.0, 1.0), epsilon=1.0)
    """
    if isinstance(mechanism, Channel):
        return mechanism
    if isinstance(mechanism, dict):
        return Channel.from_dict(mechanism)
    check_not_sampled_column(mechanism)
    if hasattr(mechanism, "channel_"):
        return mechanism.channel_
    if isinstance(mechanism, BaseNumericMechanism) or hasattr(mechanism, "bounds"):
        if isinstance(getattr(mechanism, "bounds", None), str):
            raise ValueError(
                f"mechanism={mechanism!r} is not fitted and has bounds='auto', so its "
                "range is unknown. Pass the fitted mechanism's channel "
                "(mechanism=fitted.channel_) or spec (fitted.spec()), or give it "
                "explicit bounds."
            )
        return clone(mechanism).fit().channel_
    raise TypeError(
        "mechanism must be a numeric mechanism (fitted, or with explicit bounds), "
        f"a Channel or a spec dict; got {type(mechanism).__name__}."
    )


def pooled_reports(X):
    """Reports of c columns (one mechanism on c columns) as n * c reports."""
    if hasattr(X, "to_numpy"):
        arr = X.to_numpy()
    else:
        arr = np.asarray(X)
    if arr.ndim == 2 and arr.shape[1] > 1:
        return arr.reshape(-1, order="F")
    return arr


class NumericEstimatorBase(BaseEstimator):
    """Base of the estimators from numeric reports (resolution, statistics).

    Subclasses check the channel kind (:meth:`_check_channel`) and compute
    their estimate from ``statistics_``.
    """

    _parameter_constraints: dict[str, list[Any]] = {
        "mechanism": [None, BaseNumericMechanism, Channel, dict],
    }

    def __init__(self, mechanism: Any = None) -> None:
        self.mechanism = mechanism

    # ------------------------------------------------------------------ hooks
    def _check_channel(self, channel):
        # MultiNumericChannel (``_multi``, built on the estimators' helpers of
        # ``_mean``): through the registry, so that the imports point one way.
        if not isinstance(channel, (NumericChannel, spec_class("multi_numeric"))):
            raise ReportMismatchError(
                f"{type(self).__name__} estimates from the reports of a numeric "
                f"mechanism; got reports of {channel!r}. Use a categorical "
                "estimator (EMEstimator, EmpiricalEstimator) for categorical reports."
            )

    def _forget_estimate(self):
        self.__dict__.pop("_cache", None)

    def _forget_fit(self):
        for attr in _FITTED:
            self.__dict__.pop(attr, None)
        self._forget_estimate()

    # -------------------------------------------------------------------- fit
    def fit(self: _EstimatorT, X: ReportsLike, y: object = None) -> _EstimatorT:
        """Estimate from a batch of reports.

        Parameters
        ----------
        X : array-like of shape (n_reports,) or (n_reports, n_columns)
            Reports of a numeric mechanism (several columns of one mechanism
            are pooled).
        y : None
            Ignored.

        Returns
        -------
        self : object
        """
        self._forget_fit()
        self.partial_fit(X)
        self._estimate()
        return self

    def partial_fit(self: _EstimatorT, X: ReportsLike, y: object = None) -> _EstimatorT:
        """Add a batch of reports (their histogram of output codes).

        Parameters
        ----------
        X : array-like of shape (n_reports,) or (n_reports, n_columns)
        y : None
            Ignored.

        Returns
        -------
        self : object
        """
        self._validate_params()
        channel = self._resolve_channel(X)
        previous = getattr(self, "channel_", None)
        if previous is not None and channel != previous:
            raise ReportMismatchError(
                "This batch of reports comes from another mechanism than the "
                f"earlier ones: {previous.describe_difference(channel)}. Fit "
                "separate estimators (or call fit to start over)."
            )
        stats = self._statistics(channel, X)
        columns = 1 if len(np.shape(X)) < 2 else int(np.shape(X)[1])
        if getattr(self, "statistics_", None) is None:
            self.n_features_in_ = columns
            _check_feature_names(self, X, reset=True)
        else:
            if columns != self.n_features_in_:
                raise ValueError(
                    f"X has {columns} features, but {type(self).__name__} is expecting "
                    f"{self.n_features_in_} features as input (the report columns of "
                    "the earlier batches)."
                )
            _check_feature_names(self, X, reset=False)
        self._add(stats)
        return self

    def fit_statistics(self: _EstimatorT, statistics: ReportStatistics) -> _EstimatorT:
        """Estimate from sufficient statistics summed elsewhere.

        Parameters
        ----------
        statistics : ReportStatistics
            E.g. the sum of ``channel.statistics(channel.encode_reports(chunk))``
            over chunks or machines.

        Returns
        -------
        self : object
        """
        if not isinstance(statistics, ReportStatistics):
            raise TypeError(
                f"statistics must be a ReportStatistics, got {type(statistics).__name__}."
            )
        self._check_channel(statistics.channel)
        if self.mechanism is not None:
            declared = as_numeric_channel(self.mechanism)
            if declared != statistics.channel:
                raise ReportMismatchError(
                    "The statistics come from another mechanism than `mechanism`: "
                    f"{declared.describe_difference(statistics.channel)}."
                )
        self._forget_fit()
        self._add(statistics)
        self._estimate()
        return self

    def _statistics(self, channel, X):
        # What is never a report, with scikit-learn's usual messages (empty,
        # sparse, complex, 3-D); the channel then checks the values.
        check_array(
            X,
            accept_sparse=False,
            dtype=None,
            ensure_2d=False,
            ensure_all_finite=False,
            ensure_min_samples=1,
            input_name="reports",
            estimator=type(self).__name__,
        )
        rows = getattr(channel, "row_statistics", None)
        if rows is not None:  # several attributes per row, reported together
            return rows(X)
        values = pooled_reports(X)
        one_pass = getattr(channel, "_statistics_of", None)
        if one_pass is not None:  # the numeric channels: no array of codes
            return one_pass(values)
        return channel.statistics(channel.encode_reports(values))

    def _add(self, stats):
        if getattr(self, "statistics_", None) is None:
            self.channel_ = stats.channel
            self.statistics_ = stats
        else:
            self.statistics_ = self.statistics_ + stats
        self.n_reports_ = int(self.statistics_.n)
        self._forget_estimate()

    def _resolve_channel(self, X):
        attached = get_channel(X)
        declared = None if self.mechanism is None else as_numeric_channel(self.mechanism)
        if attached is None and declared is None:
            raise ValueError(
                "The reports carry no channel (they were converted to a plain "
                "array, or read from a file): pass the mechanism that produced "
                f"them, {type(self).__name__}(mechanism=fitted_mechanism or its spec)."
            )
        if attached is not None and declared is not None and attached != declared:
            raise ReportMismatchError(
                "The reports were produced by another mechanism than `mechanism`: "
                f"{declared.describe_difference(attached)}. Pass the mechanism that "
                "produced them."
            )
        channel = attached if attached is not None else declared
        self._check_channel(channel)
        return channel

    def _estimate(self):
        """Compute (and cache) the estimate from ``statistics_``."""
        check_is_fitted(self, "statistics_")
        cache = self.__dict__.get("_cache")
        if cache is None:
            cache = self._compute()
            self.__dict__["_cache"] = cache
        return cache

    def _compute(self):
        raise NotImplementedError

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()  # fitted before use, no target: the defaults
        tags.input_tags.allow_nan = False
        return tags
