"""Base class of the distribution estimators."""

from __future__ import annotations

import copy
import warnings
from numbers import Integral
from typing import Any, TypeVar

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import (
    _check_feature_names,
    check_array,
    check_is_fitted,
)

from ..exceptions import ReportMismatchError, UninformativeEstimateWarning
from ..mechanisms._base import BaseMechanism, as_channel
from ..mechanisms._channel import Channel, ReportStatistics
from ..mechanisms._reports import PackedReports, get_channel, is_packed_frame
from ..mechanisms._text_columns import text_series
from ..utils._docstrings import fill_doc
from ..utils._typing import RandomStateLike, ReportsLike
from ..utils._validation import is_missing
from ._default_score import warn_if_default_score_compares_mechanisms
from ._projection import project_to_simplex
from ._significance import significance_threshold
from ._uncertainty import (
    bootstrap_replicates,
    check_interval_args,
    linear_standard_errors,
    normal_interval,
    score_intervals,
)

# as_channel lives with the mechanisms (it turns one into a channel); it is
# re-exported here, where users of the estimators have always found it.
__all__ = ["DistributionEstimator", "as_channel"]

_Y_IGNORED = """
        y : None
            Ignored.

        Returns
        -------
        self : object
        """

#: Docstring fragments of the distribution estimators (``fill_doc``): the
#: ``mechanism`` parameter and the fitted attributes every one of them has.
ESTIMATOR_DOCS = {
    "mechanism_and_fitted": """
        mechanism : BaseMechanism, Channel, dict or None, default=None
            The mechanism that produced the reports, when they do not carry it.

        Attributes
        ----------
        channel_ : Channel
        categories_ : ndarray of shape (k,)
        statistics_ : ReportStatistics
        n_reports_ : int
        distribution_ : ndarray of shape (k,)
        """,
    "y_ignored": _Y_IGNORED,
    "partial_fit_params": """
        Parameters
        ----------
        X : array-like, DataFrame or sparse matrix
            A batch of reports from the same mechanism as earlier batches."""
    + _Y_IGNORED,
    "score_params": """
        Parameters
        ----------
        X : array-like, DataFrame or sparse matrix
            Reports from the same mechanism.
        y : None
            Ignored.

        Returns
        -------
        score : float
        """,
    "set_params": """
        Parameters
        ----------
        **params : dict
            Estimator parameters.

        Returns
        -------
        self : object
        """,
}

# fit returns the estimator itself, typed as its own class.
_EstimatorT = TypeVar("_EstimatorT", bound="DistributionEstimator")


def _report_columns(X):
    """Number of report columns (1 for a 1-D array of one value per user)."""
    shape = getattr(X, "shape", None)
    if shape is None:
        shape = np.shape(X)
    return 1 if len(shape) < 2 else int(shape[1])


def _report_width(channel):
    """Number of report columns one report of ``channel`` takes."""
    return int(channel.report_width)


def _pooled_blocks(X, width):
    """Reports of c input columns (c blocks of ``width`` report columns, from a
    mechanism fitted on several columns) as n * c reports of one block, block
    after block; ``(X, 1)`` when ``X`` is one block (or not a multiple)."""
    n_columns = _report_columns(X)
    if n_columns <= width or n_columns % width:
        return X, 1
    c = n_columns // width
    if isinstance(X, PackedReports):
        data = np.concatenate([X.block(j).data for j in range(c)], axis=0)
        index = None if X.index is None else X.index.T.reshape(-1, 1)
        return PackedReports(data, X.n_bits, X.channel, index), c
    if sp.issparse(X):
        X = sp.csr_array(X)
        return sp.vstack([X[:, j * width : (j + 1) * width] for j in range(c)], format="csr"), c
    arr = X.to_numpy() if hasattr(X, "to_numpy") else np.asarray(X)
    return np.concatenate([arr[:, j * width : (j + 1) * width] for j in range(c)], axis=0), c


def _packed_if_frame(X, channel):
    """Packed reports given as a DataFrame of binary columns (Parquet, Dask;
    :meth:`PackedReports.to_frame`) as :class:`PackedReports`."""
    if channel.bit_vector_reports and is_packed_frame(X):
        return PackedReports.from_frame(X, _report_width(channel), channel)
    return X


def _check_reports(X, channel, estimator):
    """Generic checks of a batch of reports, before the channel decodes them.

    The channel's ``encode_reports`` checks that the values are outputs it can
    produce; this catches what is never a report, with scikit-learn's usual
    messages: no reports, no columns, complex numbers, NaN/infinity (unless a
    category is NaN/inf), 3-D arrays, a 1-D vector given for bit-vector
    reports, sparse input for one-value-per-user reports.
    """
    bits = channel.bit_vector_reports
    name = type(estimator).__name__
    if isinstance(X, PackedReports):
        # Validated by their constructor (2-D uint8 rows) and by the
        # channel's encode_reports (bits per report, padding): never unpacked.
        if not channel.packed_reports:
            raise TypeError(
                f"Got packed bit-vector reports, but {channel!r} does not send bit "
                "vectors; packed reports come from the RAPPOR family, subset "
                "selection, uBD and the count-mean sketch (packed_output=True)."
            )
        if len(X) < 1:
            raise ValueError(
                f"Found array with 0 sample(s) (shape={X.shape}) while a minimum of 1 "
                f"is required by {name}."
            )
        return
    if sp.issparse(X) and not bits:
        raise TypeError(
            f"Got sparse reports, but {channel!r} sends one value per user, so its "
            "reports are dense; sparse reports come from the RAPPOR family "
            "(sparse_output=True). Pass the reports as a dense array."
        )
    if bits and not sp.issparse(X) and len(np.shape(X)) == 1:
        raise ReportMismatchError(
            f"Expected 2D array of bit-vector reports of shape (n, "
            f"{channel.n_categories}), got 1D array instead. Reshape your data "
            "using reports.reshape(1, -1) if it is a single report."
        )
    if not bits and text_series(X) is not None:
        return  # one column of text labels: the channel checks each of them
    arr = check_array(
        X,
        accept_sparse="csr" if bits else False,
        dtype=None,
        ensure_2d=False,
        ensure_all_finite=False,
        ensure_min_samples=1,
        ensure_min_features=1,
        input_name="reports",
        estimator=name,
    )
    # A channel whose reports may be missing (a sampled attribute's column,
    # compose's strategy="sample") handles missing values itself.
    missing_ok = getattr(channel, "missing_reports", False)
    if (
        not missing_ok
        and not sp.issparse(arr)
        and arr.dtype.kind == "f"
        and not np.isfinite(arr).all()
    ):
        labels = np.asarray(channel.categories)
        nan_ok = not bits and bool(is_missing(labels).any())
        inf_ok = not bits and labels.dtype.kind == "f" and bool(np.isinf(labels).any())
        bad = (np.isnan(arr).any() and not nan_ok) or (np.isinf(arr).any() and not inf_ok)
        if bad:
            raise ReportMismatchError(
                f"Reports contain NaN or infinity, which {channel!r} cannot "
                "produce (they are not among its outputs). Drop the corrupted "
                "reports, or estimate with the mechanism that produced them."
            )


_ABSTRACT_MESSAGE = (
    "DistributionEstimator is the base class of the estimators and estimates "
    "nothing itself: use EmpiricalEstimator (unbiased), ThresholdEstimator "
    "(emp+thr) or EMEstimator (maximum likelihood, the default estimate); a "
    "subclass must implement _estimate()."
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

    ``partial_fit`` only accumulates sufficient statistics (which add up
    across chunks); the estimate is computed on first access to
    ``distribution_`` and cached, so chunked fitting gives exactly the
    one-shot result. ``fit`` computes it at once (so ``predict_proba`` and
    ``score`` never change the fitted estimator).

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
        Number of reports seen (n times c for the pooled reports of a
        mechanism on c columns).
    distribution_ : ndarray of shape (k,)
        The estimate of the distribution of the true values.
    standard_errors_ : ndarray of shape (k,)
        Standard error of each entry of ``distribution_``: exact for the
        linear unbiased estimate, parametric bootstrap otherwise (see
        :meth:`confidence_intervals`).
    n_features_in_ : int
        Number of report columns (1 for one value per user, k for bit
        vectors; times c for a mechanism on c columns).
    feature_names_in_ : ndarray of shape (n_report_columns,)
        Report column names, when fitted on a DataFrame of reports.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp import DistributionEstimator, EMEstimator, RandomizedResponse
    >>> X = np.array([["a"]] * 60 + [["b"]] * 30 + [["c"]] * 10, dtype=object)
    >>> mech = RandomizedResponse(epsilon=2.0, categories=["a", "b", "c"], random_state=0)
    >>> est = EMEstimator().fit(mech.fit_transform(X))
    >>> isinstance(est, DistributionEstimator), est.n_reports_
    (True, 100)
    >>> est.distribution_.round(2).tolist()
    [0.62, 0.23, 0.15]
    """

    _parameter_constraints: dict[str, list[Any]] = {
        "mechanism": [None, BaseMechanism, Channel, dict]
    }

    #: Whether the estimate needs each report (exact likelihood of bit vectors)
    #: rather than the additive counts alone.
    _needs_reports = False

    def __init__(
        self, *, mechanism: BaseMechanism | Channel | dict[str, Any] | None = None
    ) -> None:
        self.mechanism = mechanism

    def __sklearn_clone__(self):
        mechanism = self.mechanism
        if not isinstance(mechanism, Channel):
            return super().__sklearn_clone__()
        # A channel is an immutable public spec, not an estimator: the clone
        # shares it. (sklearn's clone would call its get_params(deep=False),
        # which Channel.get_params does not take.)
        template = copy.copy(self)
        template.mechanism = None
        new = super(DistributionEstimator, template).__sklearn_clone__()
        new.mechanism = mechanism
        return new

    #: Fitted state that ``fit`` discards before starting over.
    _fitted_attributes: tuple[str, ...] = (
        "channel_",
        "statistics_",
        "n_reports_",
        "_cache",
        "n_features_in_",
        "feature_names_in_",
    )

    def _forget_fit(self):
        for attr in self._fitted_attributes:
            self.__dict__.pop(attr, None)

    @fill_doc(ESTIMATOR_DOCS)
    def set_params(self, **params):
        """Set parameters; a fitted estimate is recomputed on next access.

        %(set_params)s
        """
        super().set_params(**params)
        # The cached estimate depends on the parameters (projection, alpha,
        # tol, ...), the sufficient statistics do not.
        self.__dict__.pop("_cache", None)
        return self

    # --------------------------------------------------------------- fitting
    @fill_doc(ESTIMATOR_DOCS)
    def fit(self: _EstimatorT, X: ReportsLike, y: object = None) -> _EstimatorT:
        """Estimate the distribution from reports.

        Parameters
        ----------
        X : array-like, DataFrame or sparse matrix
            Reports as returned by a mechanism's ``transform``. The reports
            of a mechanism fitted on several columns (one block per column)
            are pooled: the estimate is then the distribution of the values
            of all those columns. Estimate one column from its block,
            ``mechanism.column_reports(reports, column)``.
        %(y_ignored)s
        """
        self._forget_fit()
        self.partial_fit(X)
        # One-shot fit computes the estimate now (warnings such as EM's
        # ConvergenceWarning come from fit, and predict_proba/score do not
        # change the estimator); partial_fit stays lazy.
        self._fitted_result()
        return self

    @fill_doc(ESTIMATOR_DOCS)
    def partial_fit(self: _EstimatorT, X: ReportsLike, y: object = None) -> _EstimatorT:
        """Add a batch of reports to the sufficient statistics.

        %(partial_fit_params)s
        """
        self._validate_params()
        self._check_concrete()
        channel = self._resolve_channel(X)
        X = _packed_if_frame(X, channel)
        first = not hasattr(self, "statistics_")
        if first:
            _check_reports(X, channel, self)
        else:
            self._check_later_batch(X, channel)
        # Several blocks (a mechanism on several columns) are pooled: every
        # block holds reports of the same channel, and counts add up.
        pooled, _ = _pooled_blocks(X, _report_width(channel))
        codes = channel.encode_reports(pooled)
        stats = channel.statistics(codes, keep_reports=self._needs_reports)
        if first:
            self.channel_ = channel
            self.categories_ = channel.categories
            self.statistics_ = self._kept_statistics(stats)
            self.n_features_in_ = _report_columns(X)
            _check_feature_names(self, X, reset=True)
        else:
            self.statistics_ = self.statistics_ + stats
        self.n_reports_ = self.statistics_.n
        self._cache = None
        return self

    def fit_statistics(self: _EstimatorT, statistics: ReportStatistics) -> _EstimatorT:
        """Fit from precomputed sufficient statistics (e.g. summed over machines).

        Like :meth:`fit`, it computes the estimate at once (statistics kept on
        Dask workers are read while their client is running).

        Parameters
        ----------
        statistics : ReportStatistics
            Output of ``channel.statistics`` (summed with ``+``).

        Returns
        -------
        self : object
        """
        self._validate_params()
        self._check_concrete()
        if self.mechanism is not None and as_channel(self.mechanism) != statistics.channel:
            raise ReportMismatchError(
                "The statistics come from another mechanism than `mechanism`."
            )
        self.channel_ = statistics.channel
        self.categories_ = statistics.channel.categories
        self.statistics_ = self._kept_statistics(statistics)
        self.n_reports_ = statistics.n
        self._cache = None
        self._fitted_result()
        return self

    def _kept_statistics(self, stats):
        """The statistics as this estimator keeps them (EM may spill them)."""
        return stats

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
        channel = carried if carried is not None else (given if given is not None else fitted)
        if not channel.has_categories:
            own = channel.default_estimator_path or ""
            raise ReportMismatchError(
                f"{type(self).__name__} estimates a distribution over categories; these "
                f"are reports of {channel!r}, which has none. Estimate them with "
                f"{own.rpartition(':')[2] or 'its own estimator'} (numeric columns: "
                "MeanEstimator, or SquareWaveEstimator for SquareWave), or bin a numeric "
                "column first (sklearn_uldp.Binner) for a categorical mechanism."
            )
        for other, what in (
            (given, "the `mechanism` parameter"),
            (fitted, "the reports this estimator was fitted on"),
        ):
            if other is not None and other is not channel and other != channel:
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
        raise TypeError(_ABSTRACT_MESSAGE)

    def _check_concrete(self):
        if type(self)._estimate is DistributionEstimator._estimate:
            raise TypeError(_ABSTRACT_MESSAGE.replace("DistributionEstimator", type(self).__name__))

    def _fitted_result(self):
        if not hasattr(self, "statistics_"):
            raise NotFittedError(
                f"This {type(self).__name__} instance is not fitted yet. Call "
                "'fit' with reports before using this estimator."
            )
        if getattr(self, "_cache", None) is None:
            self._cache = self._estimate()
            self._warn_if_uninformative()
        return self._cache

    #: Family-wise level of the significance test behind ``n_significant_``
    #: (ThresholdEstimator uses its own ``alpha``).
    _significance_alpha = 0.05

    def _significant_mask(self):
        """Categories whose unbiased estimate is significantly above zero."""
        info = self._fitted_result()[1]
        if "significant_categories" not in info:
            alpha = getattr(self, "alpha", self._significance_alpha)
            p_hat, threshold, exact = significance_threshold(self.channel_, self.statistics_, alpha)
            # An exact category is proven by any report of it; the others
            # must clear the noise threshold of the emp+thr estimate.
            info["significant_categories"] = np.where(exact, p_hat > 0, p_hat > threshold)
        return info["significant_categories"]

    @property
    def n_significant_(self) -> int:
        """Number of categories the reports show to be held by someone.

        Categories whose unbiased estimate exceeds the significance
        threshold of :class:`ThresholdEstimator` (family-wise level 0.05,
        or the estimator's ``alpha``; Bonferroni over the categories), plus
        the categories with an exact estimate that some report names. 0
        means that the estimate is uninformative: the threshold estimate and
        EM's default are then exactly uniform, and fitting issues an
        :class:`~sklearn_uldp.exceptions.UninformativeEstimateWarning`.
        """
        return int(self._significant_mask().sum())

    def _warn_if_uninformative(self):
        try:
            n_significant = self.n_significant_
        except (AttributeError, TypeError, ValueError):  # pragma: no cover - custom channels
            return
        if n_significant:
            return
        p = self._cache[0]
        uniform = p.size > 1 and bool(np.allclose(p, p.mean(), rtol=0, atol=1e-9))
        # One message per estimator and outcome (no counts in it), so that
        # Python's default filter shows it once in a loop of simulations.
        warnings.warn(
            "No category stands out from the noise in these reports: none is "
            "significantly above zero (n_significant_ = 0), so the estimate of "
            f"{type(self).__name__} is "
            + ("exactly uniform" if uniform else "mostly noise")
            + ". Collect more reports, spend a larger epsilon, or merge categories.",
            UninformativeEstimateWarning,
            stacklevel=4,
        )

    @property
    def distribution_(self) -> np.ndarray:
        """Estimated distribution of the true values, aligned with ``categories_``."""
        return self._fitted_result()[0].copy()

    def _likelihood_distribution(self):
        """The estimate as a point of the simplex (for likelihoods)."""
        p = self._fitted_result()[0]
        if np.all(p >= 0) and np.isclose(p.sum(), 1.0):
            return p
        return project_to_simplex(p)

    # ----------------------------------------------------------- uncertainty
    #: Number of parametric-bootstrap refits behind ``standard_errors_`` of
    #: the non-linear estimates (and the default of ``confidence_intervals``).
    _n_resamples = 200

    def _uncertainty_method(self):
        """ "linear" when the estimate is the channel's linear unbiased one."""
        return "bootstrap"

    def _simulation_distribution(self):
        """The fitted distribution over ``channel_.categories`` (bootstrap truth)."""
        return self._likelihood_distribution()

    def _bootstrap(self, n_resamples, random_state):
        """(n_resamples, k) refits on statistics simulated from the estimate."""
        info = self._fitted_result()[1]
        cacheable = isinstance(random_state, Integral)
        key = (int(n_resamples), random_state if cacheable else None)
        cache = info.setdefault("bootstrap_replicates", {})
        if not cacheable or key not in cache:
            reps = bootstrap_replicates(self, int(n_resamples), random_state)
            if not cacheable:
                return reps
            cache[key] = reps
        return cache[key]

    def _linear_standard_errors(self):
        k = self.channel_.n_categories
        if self._fitted_result()[0].shape != (k,):
            raise ValueError(
                f"{type(self).__name__} estimates a distribution over other "
                "categories than its channel's, so the linear estimator's "
                "variance does not apply: use method='normal' or 'percentile' "
                "(parametric bootstrap)."
            )
        return linear_standard_errors(self.channel_, self.statistics_)

    @property
    def standard_errors_(self) -> np.ndarray:
        """Standard error of each entry of ``distribution_``.

        Exact for the linear unbiased estimate (``EmpiricalEstimator()``
        without projection): the square root of the channel's
        ``estimator_variance`` at the estimate projected onto the simplex.
        For every other estimate (projections, threshold, EM, personalized)
        the standard deviation of 200 parametric-bootstrap refits (reports
        simulated from the fitted distribution through the channel, seed 0);
        see :meth:`confidence_intervals`.
        """
        self._fitted_result()  # NotFittedError before anything else
        if self._uncertainty_method() == "linear":
            return self._linear_standard_errors()
        return self._bootstrap(self._n_resamples, 0).std(axis=0, ddof=1)

    def confidence_intervals(
        self,
        alpha: float = 0.05,
        method: str = "auto",
        simultaneous: bool = False,
        *,
        n_resamples: int | None = None,
        random_state: RandomStateLike = 0,
    ) -> np.ndarray:
        """Confidence intervals for each entry of ``distribution_``.

        Parameters
        ----------
        alpha : float in (0, 1), default=0.05
            1 - confidence level (0.05 for 95% intervals).
        method : {"auto", "score", "linear", "normal", "percentile"}, default="auto"
            ``"score"``: the values of p(x) that the linear unbiased
            estimate does not reject, with its exact variance evaluated at
            each candidate value (a score, or Wilson, interval; see
            :func:`~sklearn_uldp.estimators.score_intervals`). It holds its
            level near zero and does not depend on how an estimator
            shrinks, so it is the same interval for every estimator of the
            channel's categories. ``"linear"``: estimate -+ z times the
            linear estimator's exact standard error at the estimate (Wald).
            ``"normal"``: estimate -+ z times ``standard_errors_``.
            ``"percentile"``: quantiles of the parametric-bootstrap refits.
            ``"auto"`` is ``"score"``, or ``"normal"`` (bootstrap standard
            errors) for an estimate over other categories than the
            channel's (:class:`PersonalizedEstimator`). Wald intervals
            around a shrunk estimate (the threshold's, EM's default)
            under-cover small categories at small budgets: measured
            coverage on the "Error bars and tests" page of the user guide.
        simultaneous : bool, default=False
            Bonferroni over the k categories: each interval at level
            ``alpha / k``, so that all k cover at once with probability at
            least ``1 - alpha``.
        n_resamples : int or None, default=None
            Bootstrap refits (``"normal"`` and ``"percentile"`` for
            non-linear estimates); ``None`` means 200. Percentile intervals
            need ``n_resamples`` well above ``2 / level``.
        random_state : None, int or Generator, default=0
            Seed of the bootstrap simulation (results with an int seed are
            cached).

        Returns
        -------
        intervals : ndarray of shape (k, 2)
            Lower and upper bounds, clipped to [0, 1].

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_uldp import RandomizedResponse, EmpiricalEstimator
        >>> channel = RandomizedResponse(2.0, categories=[0, 1, 2]).fit().channel_
        >>> # 10,000 reports: 5,000 of output 0, 3,000 of 1, 2,000 of 2
        >>> stats = channel.statistics(np.repeat([0, 1, 2], [5000, 3000, 2000]))
        >>> est = EmpiricalEstimator().fit_statistics(stats)
        >>> est.distribution_.round(3).tolist()
        [0.578, 0.284, 0.137]
        >>> est.confidence_intervals(0.05).round(3).tolist()
        [[0.564, 0.593], [0.271, 0.298], [0.126, 0.149]]
        """
        p = self._fitted_result()[0]
        n_resamples = self._n_resamples if n_resamples is None else n_resamples
        check_interval_args(alpha, method, simultaneous, n_resamples)
        level = alpha / p.size if simultaneous else alpha
        if method == "auto":
            # Intervals around a shrunk estimate (threshold, EM's default)
            # miss small categories at small budgets: the shrinkage biases
            # the centre by about a standard error. The score interval of
            # the linear estimate is unbiased and holds near zero. Percentile
            # intervals of EM miss true zeros (EM puts some mass on every
            # category, so do its refits): measured coverage 58%.
            k = self.channel_.n_categories
            method = "score" if p.shape == (k,) else "normal"
        if method == "score":
            self._linear_standard_errors()  # refuses other categories clearly
            return score_intervals(self.channel_, self.statistics_, level)
        if method == "linear":
            return normal_interval(p, self._linear_standard_errors(), level)
        if method == "normal":
            se = (
                self._linear_standard_errors()
                if self._uncertainty_method() == "linear"
                else self._bootstrap(n_resamples, random_state).std(axis=0, ddof=1)
            )
            return normal_interval(p, se, level)
        reps = self._bootstrap(n_resamples, random_state)
        if n_resamples * level / 2.0 < 1.0:
            warnings.warn(
                f"{n_resamples} bootstrap refits cannot resolve the "
                f"{level / 2:.2g} quantile of a {'simultaneous ' * simultaneous}"
                "interval: its bounds are the extreme refits. Pass n_resamples "
                f">= {int(np.ceil(20 / level))}, or method='normal'.",
                UserWarning,
                stacklevel=2,
            )
        lo, hi = np.quantile(reps, [level / 2.0, 1.0 - level / 2.0], axis=0)
        return np.column_stack([np.clip(lo, 0.0, 1.0), np.clip(hi, 0.0, 1.0)])

    # ----------------------------------------------------- report-level API
    def _check_later_batch(self, X, channel):
        """Checks of a later batch against the first: shape, names, values."""
        _check_reports(X, channel, self)
        n_features = _report_columns(X)
        expected = getattr(self, "n_features_in_", n_features)
        if (
            expected > 1
            and not sp.issparse(X)
            and not isinstance(X, PackedReports)
            and len(np.shape(X)) == 1
        ):
            raise ReportMismatchError(
                f"Expected 2D array, got 1D array instead: {type(self).__name__} "
                f"was fitted on {expected} report columns. Reshape your data "
                "using reports.reshape(1, -1) if it holds a single row of reports."
            )
        if n_features != expected:
            raise ReportMismatchError(
                f"X has {n_features} features, but {type(self).__name__} is "
                f"expecting {expected} features as input (the report columns of "
                f"{channel!r}). Were these reports produced by another mechanism "
                "or domain?"
            )
        _check_feature_names(self, X, reset=False)

    def _codes(self, X):
        """Codes of the (pooled) reports, and the number of blocks pooled."""
        check_is_fitted(self, "statistics_")
        self._resolve_channel(X)
        X = _packed_if_frame(X, self.channel_)
        self._check_later_batch(X, self.channel_)
        pooled, blocks = _pooled_blocks(X, _report_width(self.channel_))
        return self.channel_.encode_reports(pooled), blocks

    def predict_proba(self, X: ReportsLike) -> np.ndarray:
        """Posterior P(true category | report) under the fitted distribution.

        Parameters
        ----------
        X : array-like, DataFrame or sparse matrix
            Reports from the same mechanism.

        Returns
        -------
        proba : ndarray of shape (n_reports, k) or (n_reports, c * k)
            Row i is the posterior of report i; invertible reports are
            one-hot. Columns follow ``categories_``. For the reports of a
            mechanism on c columns, block j (columns ``j*k`` to ``(j+1)*k``)
            is the posterior of column j's report; so is a user's j-th value
            when each user reports c values (``PersonalizedMechanism(n_reports=c)``,
            whose ``categories_`` are its intermediate domain, bots included).
        """
        codes, blocks = self._codes(X)
        L = self.channel_.likelihood(codes)
        post = L * self._likelihood_distribution()[None, :]
        total = post.sum(axis=1, keepdims=True)
        # A report impossible under the estimate (zero mass on every category
        # that can produce it) falls back to a uniform prior.
        empty = total[:, 0] <= 0
        if empty.any():
            post[empty] = L[empty]
            total[empty] = L[empty].sum(axis=1, keepdims=True)
        post /= total
        if blocks > 1:
            k = post.shape[1]
            post = post.reshape(blocks, -1, k).transpose(1, 0, 2).reshape(-1, blocks * k)
        return post

    @fill_doc(ESTIMATOR_DOCS)
    def score(self, X: ReportsLike, y: object = None) -> float:
        """Mean log-likelihood of the reports under the fitted distribution.

        %(score_params)s
            Average log Q(report) (higher is better); ``-inf`` when a report is
            impossible under the estimate. It compares estimates of the same
            reports only: a score that follows a comparable one (the same
            estimator and parameters, as many reports) of another mechanism's
            reports warns, which is what a scikit-learn search varying the
            mechanism with this default score does (pass
            ``make_simulation_scorer()``).
        """
        codes, _ = self._codes(X)
        stats = self.channel_.statistics(codes, keep_reports=True)
        warn_if_default_score_compares_mechanisms(self, self.channel_, stats.n)
        return self.channel_.log_likelihood(stats, self._likelihood_distribution()) / stats.n

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.categorical = True
        tags.input_tags.string = True
        # Sparse reports are bit vectors (RAPPOR family): when the mechanism
        # is known and sends one value per user, sparse input is refused.
        tags.input_tags.sparse = True
        channel = None
        if self.mechanism is not None:
            try:
                channel = as_channel(self.mechanism)
            except (TypeError, ValueError):
                channel = None
        if channel is not None:
            tags.input_tags.sparse = channel.bit_vector_reports
            tags.input_tags.allow_nan = tags.input_tags.sparse is False and bool(
                is_missing(np.asarray(channel.categories)).any()
            )
        tags.requires_fit = True
        return tags
