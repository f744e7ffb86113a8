"""Distribution estimation from the reports of the personalized mechanism (PUM).

Murakami & Kawamoto 2019, Sec. 5.3-5.4: estimate the distribution r
of the intermediate values over ``Z = X ∪ {⊥1..⊥κ}`` with any common-scenario
estimator, then map back to X with background knowledge π̂_k of where users
tagged ``k`` are: ``p̂(x) = r̂(x) + Σ_k r̂(⊥k) π̂_k(x)``.
"""

from __future__ import annotations

from typing import Any, TypeVar

import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import _check_feature_names

from ..exceptions import ReportMismatchError
from ..mechanisms._base import BaseMechanism
from ..mechanisms._channel import Channel
from ..mechanisms._personalized import split_bots
from ..mechanisms._reports import Reports, attach_channel
from ..utils._docstrings import fill_doc
from ..utils._typing import ArrayLike, ReportsLike
from ._base import ESTIMATOR_DOCS, DistributionEstimator, _check_reports, _report_columns
from ._em import EMEstimator
from ._projection import project_to_simplex

_PersonalizedT = TypeVar("_PersonalizedT", bound="PersonalizedEstimator")

__all__ = ["PersonalizedEstimator"]


def _check_pum_reports(X, channel, estimator):
    """scikit-learn's input checks on the reports as given, before stacking.

    Stacking reshapes ``(n, t)`` into ``(n * t, 1)``: an ``(n, 0)`` array would
    become ``(0, 1)`` and be reported as "0 sample(s)", so the checks (no
    reports, no columns, NaN, complex, 3-D) run on the array as given.
    """
    if sp.issparse(X) and not channel.bit_vector_reports:
        raise TypeError(
            f"Sparse input is not supported for the reports of {channel!r}: it "
            "sends one value per report (uRR), so its reports are dense; only "
            "the bit vectors of the uRAP variant may be sparse. Pass the "
            "reports as a dense array (e.g. reports.toarray())."
        )
    _check_reports(X, channel, estimator)


def _stack_reports(X, channel):
    """Turn (n, t) / (n, t*|Z|) reports into one report per row, user-major."""
    k_z = channel.n_categories
    if sp.issparse(X):
        X = sp.csr_array(X)
        if X.shape[1] % k_z:
            raise ReportMismatchError(
                f"Bit-vector reports have {X.shape[1]} columns, not a multiple of |Z| = {k_z}."
            )
        t = X.shape[1] // k_z
        return attach_channel(sp.csr_array(X.reshape((X.shape[0] * t, k_z))), channel)
    if hasattr(X, "to_numpy"):
        X = X.to_numpy()
    arr = np.asarray(X)
    if not channel.bit_vector_reports:
        if arr.ndim not in (1, 2):
            raise ReportMismatchError(
                f"Reports of {channel!r} have shape (n,) or (n, n_reports); got shape {arr.shape}."
            )
        return Reports(arr.reshape(-1, 1), channel)
    if arr.ndim != 2 or arr.shape[1] % k_z:
        raise ReportMismatchError(
            f"Bit-vector reports of {channel!r} have shape (n, n_reports * {k_z}); "
            f"got shape {arr.shape}."
        )
    return Reports(arr.reshape(-1, k_z), channel)


def _n_users(X):
    """Number of users (rows) of a batch of reports; a 1-D array is one column."""
    shape = getattr(X, "shape", None)
    return int(shape[0]) if shape is not None else len(X)


class PersonalizedEstimator(DistributionEstimator):
    """Estimate the distribution from the reports of a PersonalizedMechanism.

    First the distribution r over the intermediate domain
    ``Z = X ∪ {⊥1..⊥κ}`` is estimated by ``estimator`` (any distribution
    estimator: empirical, threshold, EM) exactly as in the common scenario;
    then ``p̂(x) = r̂(x) + Σ_k r̂(⊥k) π̂_k(x)`` (Murakami & Kawamoto 2019,
    eq. (21)). π̂_k is the background knowledge of the distribution of
    the values users tag ``k`` (e.g. a map of "home" POIs); a tag without
    background knowledge gets π̂_k ∝ r̂ over the non-sensitive X_N.

    Theorem 1 bounds the loss:
    ``l1(p̂, p) <= l1(r̂, r) + Σ_k r̂(⊥k) l1(π̂_k, π_k) <= l1(r̂, r) + loss_bound_``
    with ``loss_bound_ = 2 Σ_k |r̂(⊥k)|`` computable from the reports alone
    (see :func:`~sklearn_uldp.metrics.personalized_loss_terms` for both terms
    when the truth is known).

    Reports from users who sent ``t`` values (``n_reports=t``) are accepted
    as returned by the mechanism (shape ``(n, t)`` or ``(n, t * |Z|)``) and
    are treated as ``n * t`` reports of the budget ``epsilon / t``: the
    estimate is the distribution of all reported values.

    Parameters
    ----------
    estimator : DistributionEstimator or None, default=None
        Estimator of r over Z; ``None`` uses ``EMEstimator()``. It is cloned.
    background : dict or None, default=None
        Tag -> distribution over X (array of length k in ``categories_``
        order, a Series indexed by category, or a dict category -> weight;
        missing categories get 0). Weights are normalised. Tags not listed
        use π̂_k ∝ max(r̂, 0) over X_N.
    mechanism : PersonalizedMechanism, Channel, dict or None, default=None
        The producing mechanism (or its spec), for reports that do not
        carry it.

    Attributes
    ----------
    estimator_ : DistributionEstimator
        The fitted estimator of r over Z.
    channel_ : Channel
        The common mechanism Q_cmn over Z.
    categories_ : ndarray of shape (k,)
        The domain X; ``distribution_`` is aligned with it.
    intermediate_categories_ : ndarray of shape (k + κ,)
        Z (X followed by the bots).
    tags_ : list of str
        The tags, in bot order.
    statistics_ : ReportStatistics
    n_reports_ : int
        Number of (stacked) reports seen.
    distribution_ : ndarray of shape (k,)
        p̂ over X.
    intermediate_distribution_ : ndarray of shape (k + κ,)
        r̂ over Z.
    bot_masses_ : dict
        Tag -> r̂(⊥k).
    tag_distributions_ : dict
        Tag -> the π̂_k used (a distribution over X).
    loss_bound_ : float
        ``2 Σ_k |r̂(⊥k)|``, the computable bound on the second term of
        Theorem 1.
    n_features_in_ : int
        Number of report columns of one user: ``t`` values (uRR) or
        ``t * |Z|`` bits (uRAP) for ``n_reports = t``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Report column names, when fitted on a DataFrame of reports.

    Notes
    -----
    The bots are recognised from the channel alone: they are the trailing
    categories whose labels start with ``"⊥"``, a prefix that
    :class:`~sklearn_uldp.PersonalizedMechanism` reserves. π̂_k without
    background knowledge uses ``max(r̂, 0)`` so that it is a distribution
    (Theorem 1's computable bound needs l1(π̂_k, π_k) <= 2). Setting
    ``background`` on a fitted estimator re-maps the cached r̂ without
    re-estimating it.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from sklearn_uldp import PersonalizedMechanism, PersonalizedEstimator
    >>> rng = np.random.default_rng(0)
    >>> cats = list("abcdef")
    >>> home = rng.choice(["c", "d"], size=20000)
    >>> cell = np.where(rng.random(20000) < 0.3, home,
    ...                 rng.choice(cats, size=20000))
    >>> X = pd.DataFrame({"cell": cell, "home": home})
    >>> mech = PersonalizedMechanism(np.log(6), sensitive=["a"], tags=["home"],
    ...                              categories=cats, random_state=0)
    >>> reports = mech.fit_transform(X)
    >>> est = PersonalizedEstimator(background={"home": {"c": 1, "d": 1}})
    >>> est = est.fit(reports)
    >>> round(est.bot_masses_["home"], 2)   # 0.3 + 0.7 / 6 = 0.42 at home
    0.41
    >>> est.distribution_.round(2).tolist()
    [0.12, 0.11, 0.26, 0.26, 0.12, 0.12]
    >>> round(est.loss_bound_, 2)
    0.81

    Changing ``background`` on a fitted estimator re-maps r̂ without
    re-running the estimation over Z; without background knowledge the home
    mass is spread over X_N in proportion to r̂ (a poor guess here):

    >>> est.set_params(background=None).distribution_.round(2).tolist()
    [0.11, 0.21, 0.11, 0.11, 0.23, 0.22]
    """

    _fitted_attributes = DistributionEstimator._fitted_attributes + ("estimator_",)

    _parameter_constraints = {
        "estimator": [None, DistributionEstimator],
        "background": [None, dict],
        "mechanism": [None, BaseMechanism, Channel, dict],
    }

    def __init__(
        self,
        estimator: DistributionEstimator | None = None,
        *,
        background: dict[str, ArrayLike | pd.Series | dict[Any, float]] | None = None,
        mechanism: BaseMechanism | Channel | dict[str, Any] | None = None,
    ) -> None:
        self.estimator = estimator
        self.background = background
        self.mechanism = mechanism

    # --------------------------------------------------------------- fitting
    @fill_doc(ESTIMATOR_DOCS)
    def fit(self: _PersonalizedT, X: ReportsLike, y: object = None) -> _PersonalizedT:
        """Estimate the distribution from PUM reports.

        Parameters
        ----------
        X : array-like, DataFrame or sparse matrix
            Reports as returned by ``PersonalizedMechanism.transform``.
        %(y_ignored)s
        """
        return super().fit(X, y)

    @fill_doc(ESTIMATOR_DOCS)
    def partial_fit(self: _PersonalizedT, X: ReportsLike, y: object = None) -> _PersonalizedT:
        """Add a batch of PUM reports.

        %(partial_fit_params)s
        """
        self._validate_params()
        channel = self._resolve_channel(X)
        first = not hasattr(self, "estimator_")
        if first:
            _check_pum_reports(X, channel, self)
        else:
            self._check_later_batch(X, channel)
        stacked = _stack_reports(X, channel)
        if first:
            self._set_channel(channel)
            inner = EMEstimator() if self.estimator is None else self.estimator
            self.estimator_ = clone(inner)
            # The report columns of one user: t values (uRR) or t * |Z| bits
            # (uRAP); later batches and predict_proba must have as many.
            self.n_features_in_ = _report_columns(X)
            _check_feature_names(self, X, reset=True)
        self.estimator_.partial_fit(stacked)
        self.statistics_ = self.estimator_.statistics_
        self.n_reports_ = self.statistics_.n
        self._cache = None
        return self

    def fit_statistics(self: _PersonalizedT, statistics: Any) -> _PersonalizedT:
        """Fit from precomputed sufficient statistics of Q_cmn reports.

        Parameters
        ----------
        statistics : ReportStatistics
            Statistics of (stacked) reports of the common mechanism.

        Returns
        -------
        self : object
        """
        self._validate_params()
        inner = EMEstimator() if self.estimator is None else self.estimator
        self.estimator_ = clone(inner).fit_statistics(statistics)
        self._set_channel(statistics.channel)
        self.statistics_ = statistics
        self.n_reports_ = statistics.n
        self._cache = None
        self._fitted_result()
        return self

    def _check_later_batch(self, X, channel):
        if sp.issparse(X):
            _check_pum_reports(X, channel, self)
        expected = getattr(self, "n_features_in_", 1)
        if expected != 1 and not sp.issparse(X) and len(np.shape(X)) == 1:
            # A 1-D array is one report per user, but these users sent
            # several: it cannot be told which values belong together.
            raise ValueError(
                f"Expected 2D array of reports of shape (n_users, {expected}), "
                "got 1D array instead (a 1-D array is one report per user). "
                "Reshape your data using reports.reshape(1, -1) if it holds "
                "the reports of a single user."
            )
        super()._check_later_batch(X, channel)

    def _set_channel(self, channel):
        n_x, tags = split_bots(channel)
        self.channel_ = channel
        self.categories_ = channel.categories[:n_x]
        self.intermediate_categories_ = channel.categories
        self.tags_ = tags
        self._n_x = n_x
        self._background = self._check_background(tags)

    def _check_background(self, tags):
        background = {} if self.background is None else dict(self.background)
        unknown = sorted(set(background) - set(tags), key=str)
        if unknown:
            raise ValueError(
                f"background has tags {unknown} that the mechanism does not use; "
                f"its tags are {tags}."
            )
        cats = self.categories_
        index = pd.Index(cats)
        out = {}
        for tag, value in background.items():
            if value is None:
                continue
            if isinstance(value, dict):
                value = pd.Series(value, dtype=object)
            if isinstance(value, pd.Series):
                if not value.index.is_unique:
                    raise ValueError(
                        f"background[{tag!r}] lists a category more than once; "
                        "give each category one weight."
                    )
                extra = value.index[index.get_indexer(value.index) < 0]
                if len(extra):
                    raise ValueError(
                        f"background[{tag!r}] has categories {list(extra[:5])} outside the domain."
                    )
                value = value.reindex(index, fill_value=0.0).to_numpy(dtype=object)
            try:
                value = np.asarray(value, dtype=float)
            except (TypeError, ValueError):
                # E.g. a list of categories: weights are numbers, and the
                # categories of a partial support are named by a dict.
                raise ValueError(
                    f"background[{tag!r}] must hold numeric weights: an array of "
                    f"{len(cats)} weights in categories_ order, or a dict/Series "
                    "{category: weight} (e.g. {'c': 1, 'd': 1} for uniform over "
                    f"'c' and 'd'); got {value!r:.80}."
                ) from None
            if value.shape != (len(cats),):
                raise ValueError(
                    f"background[{tag!r}] must be a distribution over the "
                    f"{len(cats)} categories, got shape {value.shape}."
                )
            if not np.isfinite(value).all() or (value < 0).any() or value.sum() <= 0:
                raise ValueError(
                    f"background[{tag!r}] must be non-negative, finite and not all zero."
                )
            out[tag] = value / value.sum()
        return out

    @fill_doc(ESTIMATOR_DOCS)
    def set_params(self, **params):
        """Set parameters; a new ``background`` applies without refitting.

        The estimate r̂ over Z does not depend on the background knowledge,
        so changing ``background`` on a fitted estimator only recomputes the
        (cheap) mapping back to X. Other changes need a new ``fit``.

        %(set_params)s
        """
        super().set_params(**params)
        if "background" in params and hasattr(self, "estimator_"):
            self._background = self._check_background(self.tags_)
            self._cache = None
        return self

    # ------------------------------------------------------------ estimation
    def _estimate(self):
        r = np.asarray(self.estimator_.distribution_, dtype=float)
        n_x = self._n_x
        r_x, r_bots = r[:n_x], r[n_x:]
        non_sensitive = ~np.asarray(self.channel_.sensitive_mask[:n_x], dtype=bool)
        if not non_sensitive.any():
            non_sensitive = np.ones(n_x, dtype=bool)
        fallback = np.where(non_sensitive, np.clip(r_x, 0.0, None), 0.0)
        if fallback.sum() > 0:
            fallback = fallback / fallback.sum()
        else:
            fallback = non_sensitive / non_sensitive.sum()
        pis = {tag: self._background.get(tag, fallback) for tag in self.tags_}
        p = r_x.copy()
        for mass, tag in zip(r_bots, self.tags_, strict=True):
            p += mass * pis[tag]
        info = {
            "intermediate": r,
            "bot_masses": {tag: float(m) for tag, m in zip(self.tags_, r_bots, strict=True)},
            "tag_distributions": pis,
            "loss_bound": float(2.0 * np.abs(r_bots).sum()),
        }
        return p, info

    def _simulation_distribution(self):
        # the bootstrap simulates reports of the common mechanism, over Z
        return project_to_simplex(self._fitted_result()[1]["intermediate"])

    def _info(self):
        return self._fitted_result()[1]

    @property
    def intermediate_distribution_(self) -> np.ndarray:
        """r̂ over Z = X ∪ bots (aligned with ``intermediate_categories_``)."""
        return self._info()["intermediate"].copy()

    @property
    def bot_masses_(self) -> dict[str, float]:
        """Tag -> r̂(⊥k), the estimated share of reports sent through each bot."""
        return dict(self._info()["bot_masses"])

    @property
    def tag_distributions_(self) -> dict[str, np.ndarray]:
        """Tag -> π̂_k, the distribution over X used for that bot."""
        return {t: v.copy() for t, v in self._info()["tag_distributions"].items()}

    @property
    def loss_bound_(self) -> float:
        """``2 Σ_k |r̂(⊥k)|``: bound on the second term of Theorem 1."""
        return self._info()["loss_bound"]

    # ----------------------------------------------------- report-level API
    def _check_fitted(self):
        if not hasattr(self, "estimator_"):
            raise NotFittedError(
                f"This {type(self).__name__} instance is not fitted yet. Call "
                "'fit' with reports before using this estimator."
            )

    def predict_proba(self, X: ReportsLike) -> np.ndarray:
        """Posterior P(true value | report) over X.

        ``P(x | y) = P(z = x | y) + Σ_k P(z = ⊥k | y) π̂_k(x)`` with the
        posterior over Z under r̂.

        Parameters
        ----------
        X : array-like, DataFrame or sparse matrix
            Reports from the same mechanism, one row per user, with as many
            columns as the reports ``fit`` saw.

        Returns
        -------
        proba : ndarray of shape (n_users, n_reports * k)
            One row per row of ``X``. With ``n_reports = t`` reports per user,
            columns ``j * k`` to ``(j + 1) * k`` are the posterior of report
            ``j`` (``proba.reshape(n_users, t, k)`` separates them); with one
            report per user the shape is ``(n_users, k)``.
        """
        post_z = self._stacked_posterior(X)
        info = self._info()
        pis = np.stack([info["tag_distributions"][t] for t in self.tags_])
        proba = post_z[:, : self._n_x] + post_z[:, self._n_x :] @ pis
        # Stacked rows are user-major: row i * t + j is report j of user i.
        return proba.reshape(_n_users(X), -1)

    def _stacked_posterior(self, X):
        """P(z | report) over Z for each report, stacked user-major."""
        self._check_fitted()
        channel = self._resolve_channel(X)
        self._check_later_batch(X, channel)
        return self.estimator_.predict_proba(_stack_reports(X, channel))

    @fill_doc(ESTIMATOR_DOCS)
    def score(self, X: ReportsLike, y: object = None) -> float:
        """Mean log-likelihood of the (stacked) reports under r̂.

        %(score_params)s
        """
        self._check_fitted()
        channel = self._resolve_channel(X)
        self._check_later_batch(X, channel)
        return self.estimator_.score(_stack_reports(X, channel))
