"""Base class of the distribution estimators."""

from sklearn.base import BaseEstimator, clone
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from ..exceptions import ReportMismatchError
from ..mechanisms._base import BaseMechanism
from ..mechanisms._channel import Channel
from ..mechanisms._reports import get_channel
from ._projection import project_to_simplex

import numpy as np

__all__ = ["DistributionEstimator", "as_channel"]


def as_channel(mechanism):
    """Return the channel (public spec) described by ``mechanism``.

    Parameters
    ----------
    mechanism : BaseMechanism, Channel or dict
        A fitted mechanism, an unfitted one with explicit ``categories``, a
        channel, or a spec dict (``Channel.to_dict()``).

    Returns
    -------
    channel : Channel
    """
    if isinstance(mechanism, Channel):
        return mechanism
    if isinstance(mechanism, dict):
        return Channel.from_dict(mechanism)
    if isinstance(mechanism, BaseMechanism):
        if hasattr(mechanism, "channel_"):
            return mechanism.channel_
        if isinstance(mechanism.categories, str):
            raise ValueError(
                f"mechanism={mechanism!r} is not fitted and has categories='auto', "
                "so its domain is unknown. Pass the fitted mechanism (or its "
                "spec), or give it explicit categories."
            )
        return clone(mechanism).fit().channel_
    raise TypeError(
        "mechanism must be a mechanism (fitted, or with explicit categories), a "
        f"Channel or a spec dict; got {type(mechanism).__name__}."
    )


class DistributionEstimator(BaseEstimator):
    """Base class: estimate the distribution of true values from reports.

    The estimator learns which channel produced the reports from the reports
    themselves (mechanisms attach their channel to what ``transform``
    returns) or from the ``mechanism`` parameter (a fitted mechanism, a
    channel, or a spec dict) for reports collected elsewhere. When both are
    available they must agree. Everything else goes through the channel
    contract (sufficient statistics, linear estimator, likelihood), so any
    estimator works with any mechanism.

    ``fit``/``partial_fit`` only accumulate sufficient statistics (which add
    up across chunks); the estimate is computed on first access to
    ``distribution_`` and cached, so chunked fitting gives exactly the
    one-shot result.

    Parameters
    ----------
    mechanism : BaseMechanism, Channel, dict or None, default=None
        The mechanism that produced the reports, for reports that do not
        carry it.

    Attributes
    ----------
    channel_ : Channel
        The channel of the reports.
    categories_ : ndarray of shape (k,)
        The domain; ``distribution_`` is aligned with it.
    statistics_ : ReportStatistics
        The accumulated sufficient statistics.
    n_reports_ : int
        Number of reports seen.
    distribution_ : ndarray of shape (k,)
        The estimate of the distribution of the true values.
    """

    _parameter_constraints = {"mechanism": [None, BaseMechanism, Channel, dict]}

    #: Whether the estimate needs each report (exact likelihood of bit vectors)
    #: rather than the additive counts alone.
    _needs_reports = False

    def __init__(self, *, mechanism=None):
        self.mechanism = mechanism

    # --------------------------------------------------------------- fitting
    def fit(self, X, y=None):
        """Estimate the distribution from reports.

        Parameters
        ----------
        X : array-like, DataFrame or sparse matrix
            Reports as returned by a mechanism's ``transform``.
        y : None
            Ignored.

        Returns
        -------
        self : object
        """
        for attr in ("channel_", "statistics_", "n_reports_", "_cache"):
            self.__dict__.pop(attr, None)
        return self.partial_fit(X)

    def partial_fit(self, X, y=None):
        """Add a batch of reports to the sufficient statistics.

        Parameters
        ----------
        X : array-like, DataFrame or sparse matrix
            A batch of reports from the same mechanism as earlier batches.
        y : None
            Ignored.

        Returns
        -------
        self : object
        """
        self._validate_params()
        channel = self._resolve_channel(X)
        codes = channel.encode_reports(X)
        stats = channel.statistics(codes, keep_reports=self._needs_reports)
        if hasattr(self, "statistics_"):
            self.statistics_ = self.statistics_ + stats
        else:
            self.channel_ = channel
            self.categories_ = channel.categories
            self.statistics_ = stats
        self.n_reports_ = self.statistics_.n
        self._cache = None
        return self

    def fit_statistics(self, statistics):
        """Fit from precomputed sufficient statistics (e.g. summed over machines).

        Parameters
        ----------
        statistics : ReportStatistics
            Output of ``channel.statistics`` (summed with ``+``).

        Returns
        -------
        self : object
        """
        self._validate_params()
        if self.mechanism is not None and as_channel(self.mechanism) != statistics.channel:
            raise ReportMismatchError(
                "The statistics come from another mechanism than `mechanism`."
            )
        self.channel_ = statistics.channel
        self.categories_ = statistics.channel.categories
        self.statistics_ = statistics
        self.n_reports_ = statistics.n
        self._cache = None
        return self

    def _resolve_channel(self, X):
        carried = get_channel(X)
        given = as_channel(self.mechanism) if self.mechanism is not None else None
        fitted = getattr(self, "channel_", None)
        if carried is None and given is None and fitted is None:
            raise ValueError(
                "The reports do not say which mechanism produced them. Pass "
                "reports as returned by a mechanism's transform, or give the "
                "mechanism: "
                f"{type(self).__name__}(mechanism=fitted_mechanism_or_spec)."
            )
        channel = carried if carried is not None else (
            given if given is not None else fitted)
        for other, what in ((given, "the `mechanism` parameter"),
                            (fitted, "the reports this estimator was fitted on")):
            if other is not None and other != channel:
                raise ReportMismatchError(
                    f"The reports come from {channel!r}, but {what} describes "
                    f"{other!r} (differences: "
                    f"{', '.join(channel.describe_difference(other))}). Estimate "
                    "with the channel of the mechanism that produced the reports."
                )
        return channel

    # ------------------------------------------------------------ estimation
    def _estimate(self):
        """Return ``(distribution, extra_attributes)`` from ``statistics_``."""
        raise NotImplementedError

    def _fitted_result(self):
        if not hasattr(self, "statistics_"):
            raise NotFittedError(
                f"This {type(self).__name__} instance is not fitted yet. Call "
                "'fit' with reports before using this estimator."
            )
        if getattr(self, "_cache", None) is None:
            self._cache = self._estimate()
        return self._cache

    @property
    def distribution_(self):
        """Estimated distribution of the true values, aligned with categories_."""
        return self._fitted_result()[0].copy()

    def _likelihood_distribution(self):
        """The estimate as a point of the simplex (for likelihoods)."""
        p = self._fitted_result()[0]
        if np.all(p >= 0) and np.isclose(p.sum(), 1.0):
            return p
        return project_to_simplex(p)

    # ----------------------------------------------------- report-level API
    def _codes(self, X):
        check_is_fitted(self, "statistics_")
        self._resolve_channel(X)
        return self.channel_.encode_reports(X)

    def predict_proba(self, X):
        """Posterior P(true category | report) under the fitted distribution.

        Parameters
        ----------
        X : array-like, DataFrame or sparse matrix
            Reports from the same mechanism.

        Returns
        -------
        proba : ndarray of shape (n_reports, k)
            Row i is the posterior of report i; invertible reports are
            one-hot. Columns follow ``categories_``.
        """
        codes = self._codes(X)
        L = self.channel_.likelihood(codes)
        post = L * self._likelihood_distribution()[None, :]
        total = post.sum(axis=1, keepdims=True)
        # A report impossible under the estimate (zero mass on every category
        # that can produce it) falls back to a uniform prior.
        empty = total[:, 0] <= 0
        if empty.any():
            post[empty] = L[empty]
            total[empty] = L[empty].sum(axis=1, keepdims=True)
        return post / total

    def score(self, X, y=None):
        """Mean log-likelihood of the reports under the fitted distribution.

        Parameters
        ----------
        X : array-like, DataFrame or sparse matrix
            Reports from the same mechanism.
        y : None
            Ignored.

        Returns
        -------
        score : float
            Average log Q(report) (higher is better); ``-inf`` when a report is
            impossible under the estimate.
        """
        codes = self._codes(X)
        stats = self.channel_.statistics(codes, keep_reports=True)
        return self.channel_.log_likelihood(
            stats, self._likelihood_distribution()) / stats.n

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.categorical = True
        tags.input_tags.string = True
        tags.input_tags.sparse = True
        tags.requires_fit = True
        return tags
