"""Classifiers trained on privatized labels (label local differential privacy).

Each user keeps their features ``x`` (public to the learner, or already
shared) and privatizes their label ``y`` before it leaves the device, through
a categorical mechanism of the package. The collector sees ``(x_i, report_i)``
and the channel ``Q(report | label)``. A stock classifier trained on the
reports learns ``P(report | x) = sum_c P(c | x) Q(report | c)``, a flattened
version of ``P(label | x)``: its probabilities are biased towards uniform, so
its log-loss is poor even where its decisions are right.

:class:`LabelPrivacyClassifier` corrects this for any scikit-learn
classifier, by one of three methods (``docs/learning.md`` derives them):

* ``"posterior"``: each report becomes k weighted rows ``(x_i, c)`` with
  weight ``P(label = c | x_i, report_i)`` (Bayes' rule with the channel and a
  prior), and the classifier is fitted with those ``sample_weight``; with the
  right prior the weighted risk equals the clean risk in expectation. The
  prior is refined by EM: the fitted classifier's ``P(c | x)`` becomes the
  next prior, so the fit converges to the maximum-likelihood fit of the
  noisy labels;
* ``"forward"``: the classifier is fitted on the reports as labels and its
  probabilities are mapped back through the channel at prediction time,
  ``P(label | x) = argmax_p sum_r P(r | x) log (p Q)(r)`` on the simplex;
* ``"rr_with_prior"``: Ghazi et al.'s RR-with-prior (NeurIPS 2021), a label
  mechanism that uses a prior: users are split into stages; the first
  stage's users report through k-RR; the model fitted so far gives each
  later user a prior ``P(c | x)``, and the user reports by k-RR restricted to
  the prior's k* most likely labels (k* maximizing the probability of a
  correct report). The posterior correction then trains on all of them.
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin, clone
from sklearn.pipeline import Pipeline
from sklearn.utils import _safe_indexing
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import (
    _check_sample_weight,
    _num_samples,
    check_is_fitted,
    has_fit_parameter,
    validate_data,
)

from ..estimators import EMEstimator
from ..mechanisms import (
    BaseMechanism,
    CategoricalChannel,
    Channel,
    RandomizedResponse,
    as_channel,
    get_channel,
)
from ..mechanisms._base import RANDOM_STATE_CONSTRAINT
from ..utils._random import check_random_generator
from ..utils._typing import ArrayLike, RandomStateLike
from ..utils._validation import check_epsilon
from ._common import (
    check_labels,
    invert_on_simplex,
    posterior_weights,
    privatized_codes,
    sub_random_states,
)

__all__ = [
    "LabelPrivacyClassifier",
    "rr_with_prior_sizes",
    "rr_with_prior_likelihood",
    "debiased_log_loss",
]

#: Largest channel matrix (labels x outputs) the forward correction builds.
_MAX_FORWARD_MATRIX = 1 << 22


# ------------------------------------------------------------ RR-with-prior
def rr_with_prior_sizes(prior: ArrayLike, epsilon: float) -> tuple[np.ndarray, np.ndarray]:
    """Ghazi et al.'s top-k sets: the k* most likely labels of each prior.

    RR-with-prior (Ghazi, Golowich, Kumar, Manurangsi & Zhang, "Deep
    Learning with Label Differential Privacy", NeurIPS 2021, Algorithm 2)
    reports by k-RR over the ``k`` labels the prior ranks first, with
    ``k* = argmax_k e^eps / (e^eps + k - 1) * (mass of the top k)``, the
    probability that the report is the true label.

    Parameters
    ----------
    prior : array-like of shape (n, K)
        One prior per user (rows sum to 1).
    epsilon : float

    Returns
    -------
    order : ndarray of shape (n, K)
        The labels of each row by decreasing prior (ties by label order).
    sizes : ndarray of int of shape (n,)
        k* of each row (1 <= k* <= K).

    Examples
    --------
    >>> from sklearn_uldp.learning import rr_with_prior_sizes
    >>> order, sizes = rr_with_prior_sizes([[0.25, 0.25, 0.25, 0.25],
    ...                                     [0.9, 0.05, 0.03, 0.02]], 1.0)
    >>> sizes.tolist()  # k-RR under a uniform prior; the top label alone when sure
    [4, 1]
    """
    P = np.asarray(prior, dtype=float)
    eps = check_epsilon(epsilon)
    K = P.shape[1]
    order = np.argsort(-P, axis=1, kind="stable")
    top_mass = np.cumsum(np.take_along_axis(P, order, axis=1), axis=1)
    e = math.exp(min(eps, 700.0))
    k = np.arange(1, K + 1)
    gain = top_mass * (e / (e + k - 1.0))
    return order, gain.argmax(axis=1) + 1


def rr_with_prior_likelihood(
    reports: ArrayLike, order: ArrayLike, sizes: ArrayLike, epsilon: float
) -> np.ndarray:
    """``Q_i(report_i | c)`` of RR-with-prior for every user and label.

    A user whose top-k set is ``S`` (the first ``k`` labels of ``order``)
    reports ``y`` with probability ``e^eps / (e^eps + k - 1)`` if ``y`` is
    the true label and in ``S``, ``1 / (e^eps + k - 1)`` for each other label
    of ``S``, and uniformly over ``S`` (``1 / k`` each) when the true label is
    not in ``S``. Every ratio of two true labels' probabilities of one report
    is within ``[e^-eps, e^eps]``: the mechanism is eps-LDP for the label,
    whatever the prior (which depends on the public features and on other
    users' reports only).

    Parameters
    ----------
    reports : array-like of int of shape (n,)
        Reported label codes (each in its row's set).
    order, sizes : arrays
        From :func:`rr_with_prior_sizes`.
    epsilon : float

    Returns
    -------
    likelihood : ndarray of shape (n, K)
    """
    order = np.asarray(order)
    sizes = np.asarray(sizes, dtype=np.int64)
    reports = np.asarray(reports, dtype=np.int64)
    n, K = order.shape
    e = math.exp(min(check_epsilon(epsilon), 700.0))
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.arange(K)[None, :], axis=1)
    in_set = rank < sizes[:, None]
    denom = e + sizes - 1.0
    L = np.where(in_set, (1.0 / denom)[:, None], (1.0 / sizes)[:, None])
    rows = np.arange(n)
    L[rows, reports] = np.where(in_set[rows, reports], e / denom, L[rows, reports])
    return L


def _sample_rr_with_prior(codes, order, sizes, epsilon, rng):
    """Draw the RR-with-prior reports of true label codes (vectorized)."""
    n, K = order.shape
    e = math.exp(min(epsilon, 700.0))
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.arange(K)[None, :], axis=1)
    rows = np.arange(n)
    true_rank = rank[rows, codes]
    in_set = true_rank < sizes
    keep = in_set & (rng.random(n) < e / (e + sizes - 1.0))
    # Otherwise a uniform label of the set, other than the true one when it
    # is in the set: draw a rank among the others and skip the true rank.
    others = np.where(in_set, sizes - 1, sizes)
    draw = np.floor(rng.random(n) * np.maximum(others, 1)).astype(np.int64)
    draw = np.where(in_set & (draw >= true_rank), draw + 1, draw)
    draw = np.minimum(draw, sizes - 1)
    out_rank = np.where(keep, true_rank, draw)
    return order[rows, out_rank]


def debiased_log_loss(reports: Any, proba: ArrayLike, *, mechanism: Any = None) -> float:
    """The log-loss on the true labels, estimated without bias from label reports.

    Where only privatized labels exist (a deployment has no clean validation
    labels), the log-loss of the reports is not that of the labels. With the
    channel's inverse ``H`` (``sum_r Q(r | c') H[r, c] = 1[c = c']``), the
    per-report loss ``sum_c H[r_i, c] (-log p_i(c))`` has expectation
    ``-log p_i(y_i)`` given the row and its true label (Natarajan, Dhillon,
    Ravikumar & Tewari, NeurIPS 2013), so its mean estimates the clean
    log-loss without bias (it can be negative on few reports).

    Parameters
    ----------
    reports : array-like
        One label report per row, carrying its channel (a mechanism's
        output), or of ``mechanism``.
    proba : array-like of shape (n, k)
        Predicted probabilities of the channel's categories, in their order
        (e.g. :meth:`LabelPrivacyClassifier.predict_proba`).
    mechanism : BaseMechanism, Channel, dict or None, default=None
        The channel, for reports that do not carry it.

    Returns
    -------
    loss : float

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp import RandomizedResponse
    >>> from sklearn_uldp.learning import debiased_log_loss
    >>> y = np.random.default_rng(0).integers(0, 2, size=200_000)
    >>> proba = np.where(y[:, None] == [0, 1], 0.8, 0.2)   # clean log-loss: -log 0.8 = 0.223
    >>> reports = RandomizedResponse(1.0, categories=[0, 1], random_state=0).fit_transform(
    ...     y.reshape(-1, 1))
    >>> round(debiased_log_loss(reports, proba), 2)
    0.22
    """
    P = np.asarray(proba, dtype=float)
    if get_channel(reports) is None and mechanism is None:
        raise ValueError(
            "The reports do not say which mechanism produced them: pass reports as "
            "a mechanism returned them, or mechanism=spec_or_fitted_mechanism."
        )
    privatized = privatized_codes(reports, P.shape[0], _as_spec(mechanism), 1.0, None, what="label")
    channel = privatized.channel
    if not isinstance(channel, CategoricalChannel):
        raise ValueError(
            f"The debiased log-loss needs a one-symbol channel's matrix; {channel!r} sends "
            "bit vectors."
        )
    if P.ndim != 2 or P.shape[1] != channel.n_categories:
        raise ValueError(
            f"proba must have one column per category of the channel ({channel.n_categories}), "
            f"got shape {P.shape}."
        )
    Q = np.asarray(channel.matrix(), dtype=float)
    H = Q.T @ np.linalg.inv(Q @ Q.T)
    with np.errstate(divide="ignore"):
        losses = -np.log(P)
    per_report = np.einsum("ic,ic->i", H[np.asarray(privatized.codes, dtype=np.int64)], losses)
    return float(per_report.mean())


def _as_spec(mechanism):
    """A channel for ``privatized_codes`` (which privatizes when given a mechanism)."""
    if mechanism is None or isinstance(mechanism, (Channel, dict)):
        return mechanism
    return as_channel(mechanism)


# ---------------------------------------------------------------- helpers
def _fit_with_weights(estimator, X, y, sample_weight):
    """Fit ``estimator`` with ``sample_weight`` (a Pipeline's last step gets it)."""
    if sample_weight is None:
        return estimator.fit(X, y)
    if isinstance(estimator, Pipeline):
        name = estimator.steps[-1][0]
        return estimator.fit(X, y, **{f"{name}__sample_weight": sample_weight})
    return estimator.fit(X, y, sample_weight=sample_weight)


def _accepts_sample_weight(estimator):
    final = estimator.steps[-1][1] if isinstance(estimator, Pipeline) else estimator
    return final != "passthrough" and has_fit_parameter(final, "sample_weight")


def _aligned_proba(estimator, X, k):
    """``predict_proba`` with one column per label code 0..k-1 (0 for labels
    the fitted estimator never saw)."""
    proba = np.asarray(estimator.predict_proba(X), dtype=float)
    classes = np.asarray(estimator.classes_).astype(np.int64)
    out = np.zeros((proba.shape[0], k))
    out[:, classes] = proba
    return out


def _expanded(X, W, sample_weight):
    """Each row i repeated for every label c with W[i, c] > 0, weighted W[i, c]."""
    n, k = W.shape
    weights = W if sample_weight is None else W * sample_weight[:, None]
    rows, labels = np.nonzero(weights > 0)
    return _safe_indexing(X, rows), labels, weights[rows, labels]


class LabelPrivacyClassifier(MetaEstimatorMixin, ClassifierMixin, BaseEstimator):
    """A classifier trained on privatized labels, with the channel's noise corrected.

    ``fit(X, y)`` either privatizes the labels ``y`` as the users would
    (default: k-RR at ``epsilon``; any categorical mechanism of the package,
    utility-optimized ones with sensitive classes too), or takes label
    *reports* that carry their spec (the reports a mechanism returned, or
    reports collected elsewhere with ``mechanism=spec``). It then trains
    ``estimator`` with a correction for the noise, so that
    :meth:`predict_proba` estimates ``P(true label | x)``:

    * ``"posterior"``: posterior weights ``P(label = c | x, report)`` for any
      estimator accepting ``sample_weight`` (each report expanded to k
      weighted rows), the prior refined by EM from the package's estimate of
      the label distribution (or from the forward correction when
      ``estimator`` has ``predict_proba``);
    * ``"forward"``: fit on the reports, invert the channel on the predicted
      probabilities (``P(report | x) = Q^T P(label | x)``, solved on the
      simplex);
    * ``"rr_with_prior"``: Ghazi et al.'s RR-with-prior, a label mechanism
      that uses a prior from the model of earlier stages, then the posterior
      correction.

    The features are not privatized (label privacy): use the other learners
    of :mod:`sklearn_uldp.learning` when they are private too.

    Parameters
    ----------
    estimator : classifier
        Any scikit-learn classifier (or Pipeline ending in one). ``"posterior"``
        and ``"rr_with_prior"`` need ``sample_weight`` in its ``fit``;
        ``"forward"`` needs ``predict_proba``.
    epsilon : float, default=1.0
        The budget of one user's label report (overrides the ``epsilon`` of
        ``mechanism``, so a grid search can vary it).
    mechanism : BaseMechanism, Channel, dict or None, default=None
        How labels are privatized. ``None``: k-RR over the classes. A
        mechanism (e.g. ``UtilityOptimizedRR(sensitive=[...])``): cloned,
        given ``epsilon`` and, if its ``categories`` is ``"auto"``, the
        classes of ``y``. A channel or spec dict: ``y`` holds reports of that
        channel collected elsewhere (nothing is privatized). Reports that
        carry their channel (a mechanism's output) are recognized whatever
        ``mechanism`` is, and must agree with a channel given here.
    method : {"auto", "posterior", "forward", "rr_with_prior"}, default="auto"
        ``"auto"``: ``"posterior"`` when ``estimator`` accepts
        ``sample_weight``, else ``"forward"``.
    max_iter : int, default=10
        EM steps of the posterior correction (one fit of ``estimator`` each).
        With ``max_iter=1`` and an estimator without ``predict_proba``, the
        weights use the estimated label distribution as the prior of every
        row.
    tol : float, default=1e-2
        EM stops when no posterior weight moves by more than ``tol``.
    n_stages : int, default=2
        Stages of ``"rr_with_prior"`` (equal shares of the users).
    random_state : None, "secure", int, Generator, SeedSequence or RandomState, default=None
        Source of the privatization noise and of the stage split. ``None``:
        fresh OS entropy at every fit (nothing stored); ``"secure"``: a
        cryptographically secure generator; an int for reproducible
        simulations only. Independent streams per mechanism and stage are
        spawned from it.

    Attributes
    ----------
    estimator_ : classifier
        The fitted estimator (on label codes ``0..k-1``).
    classes_ : ndarray of shape (k,)
        The labels (the channel's categories).
    channel_ : Channel
        The channel of the label reports (of the first stage for
        ``"rr_with_prior"``).
    method_ : str
        The method used.
    prior_ : ndarray of shape (k,)
        The label distribution estimated from the reports
        (:class:`~sklearn_uldp.EMEstimator`).
    n_iter_ : int
        Fits of ``estimator`` (EM steps; 1 for ``"forward"``).
    epsilon_spent_ : float
        The budget one user's label spends (each label is reported once).
    n_features_in_ : int
    feature_names_in_ : ndarray

    See Also
    --------
    LDPLogisticRegression : When the features are private too.

    References
    ----------
    Ghazi, Golowich, Kumar, Manurangsi & Zhang, "Deep Learning with Label
    Differential Privacy", NeurIPS 2021.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn_uldp.learning import LabelPrivacyClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(4000, 2))
    >>> y = (X[:, 0] + 0.5 * X[:, 1] + rng.logistic(size=4000) > 0).astype(int)
    >>> clf = LabelPrivacyClassifier(LogisticRegression(), epsilon=1.0, random_state=0)
    >>> clf.fit(X, y).method_, clf.epsilon_spent_
    ('posterior', 1.0)
    >>> clf.predict_proba(X[:2]).shape
    (2, 2)
    >>> bool(abs(clf.estimator_.coef_[0, 0] - 1.0) < 0.2)  # the clean slope is 1
    True
    """

    #: It privatizes its training data in fit(X, y) (what
    #: PrivacyUtilitySearchCV reads to search it on held-out clean rows).
    _privatizes_in_fit = True

    _parameter_constraints: dict[str, list[Any]] = {
        "estimator": [HasMethods(["fit", "predict"])],
        "epsilon": [Interval(Real, 0, None, closed="neither")],
        "mechanism": [None, BaseMechanism, Channel, dict],
        "method": [StrOptions({"auto", "posterior", "forward", "rr_with_prior"})],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "n_stages": [Interval(Integral, 2, None, closed="left")],
        "random_state": RANDOM_STATE_CONSTRAINT,
    }

    def __init__(
        self,
        estimator: Any,
        epsilon: float = 1.0,
        mechanism: Any = None,
        method: str = "auto",
        *,
        max_iter: int = 10,
        tol: float = 1e-2,
        n_stages: int = 2,
        random_state: RandomStateLike = None,
    ) -> None:
        self.estimator = estimator
        self.epsilon = epsilon
        self.mechanism = mechanism
        self.method = method
        self.max_iter = max_iter
        self.tol = tol
        self.n_stages = n_stages
        self.random_state = random_state

    # ------------------------------------------------------------- fitting
    def fit(self, X: Any, y: Any, sample_weight: ArrayLike | None = None) -> LabelPrivacyClassifier:
        """Privatize the labels (or read label reports) and fit with the correction.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            The features, as ``estimator`` takes them.
        y : array-like of shape (n_samples,)
            True labels (privatized here: a simulation of the users), or
            label reports that carry their channel (a mechanism's output),
            or reports of the channel given as ``mechanism``.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights of the users (e.g. :class:`PrivatizedGroupReweighter`'s),
            multiplied into the posterior weights.

        Returns
        -------
        self : LabelPrivacyClassifier
        """
        self._validate_params()
        check_epsilon(self.epsilon)
        X = _indexable(X)
        validate_data(self, X, reset=True, skip_check_array=True)
        n = _num_samples(X)
        if sample_weight is not None:
            sample_weight = _check_sample_weight(sample_weight, np.empty(n))
        method = self._resolve_method()
        if method == "rr_with_prior":
            self._fit_rr_with_prior(X, y, n, sample_weight)
            self.method_ = method
            return self
        channel, codes = self._label_reports(y, n)
        L = np.asarray(channel.likelihood(codes), dtype=float)
        k = L.shape[1]
        self.prior_ = self._estimated_prior(channel, codes)
        self.method_ = method
        if method == "forward":
            self._fit_forward(X, channel, codes, sample_weight)
        else:
            init = self._initial_prior(X, channel, codes, sample_weight, k)
            self._fit_posterior(X, L, init, sample_weight)
        return self

    def _resolve_method(self):
        estimator = self.estimator
        weighted = _accepts_sample_weight(estimator)
        method = self.method
        if method == "auto":
            method = "posterior" if weighted else "forward"
        if method in ("posterior", "rr_with_prior") and not weighted:
            raise ValueError(
                f"method={method!r} fits {type(estimator).__name__} with sample_weight "
                "(the posterior weights), which its fit does not accept. Use "
                "method='forward' (needs predict_proba), or an estimator that takes "
                "sample_weight."
            )
        if method == "forward" and not hasattr(estimator, "predict_proba"):
            raise ValueError(
                f"method='forward' inverts the channel on the probabilities of "
                f"{type(estimator).__name__}, which has no predict_proba. Use "
                "method='posterior' (sample_weight), or a probabilistic estimator."
            )
        if method == "rr_with_prior":
            if self.mechanism is not None:
                raise ValueError(
                    "method='rr_with_prior' privatizes the labels with its own "
                    "mechanism (k-RR over each user's top-k labels under the prior), "
                    "so it takes no `mechanism`: leave mechanism=None."
                )
            if not hasattr(estimator, "predict_proba"):
                raise ValueError(
                    "method='rr_with_prior' takes each later stage's prior from the "
                    f"model's predict_proba, which {type(estimator).__name__} lacks."
                )
        return method

    def _label_reports(self, y, n):
        """(channel, report codes): the reports given, or those of the users
        privatizing ``y`` through the mechanism."""
        privatized = privatized_codes(
            y, n, self.mechanism, self.epsilon, self.random_state, what="label"
        )
        self.channel_ = privatized.channel
        self.classes_ = np.asarray(privatized.channel.categories)
        self._epsilon_spent = privatized.epsilon_spent
        return privatized.channel, privatized.codes

    def _check_labels(self, y, n):
        return check_labels(y, n)

    def _estimated_prior(self, channel, codes):
        """The label distribution estimated from the reports (EM)."""
        est = EMEstimator(mechanism=channel)
        return est.fit_statistics(channel.statistics(codes, keep_reports=True)).distribution_

    def _forward_matrix(self, channel):
        if not isinstance(channel, CategoricalChannel):
            raise ValueError(
                f"The forward correction trains the estimator on the reports as "
                f"labels, so it needs one-symbol reports; {channel!r} sends bit "
                "vectors. Use method='posterior'."
            )
        if channel.n_categories * channel.n_outputs > _MAX_FORWARD_MATRIX:
            raise ValueError(
                f"The forward correction needs the channel matrix, here "
                f"{channel.n_categories} x {channel.n_outputs} entries; use "
                "method='posterior'."
            )
        return np.asarray(channel.matrix(), dtype=float)

    def _fit_forward(self, X, channel, codes, sample_weight):
        Q = self._forward_matrix(channel)
        est = _fit_with_weights(clone(self.estimator), X, codes, sample_weight)
        self.estimator_ = est
        self._Q = Q
        self._n_reports = int(codes.shape[0])
        self.n_iter_ = 1

    def _forward_proba(self, estimator, X, Q, n_reports=None):
        """The channel inverted on the estimator's report probabilities; with
        ``n_reports``, smoothed by one pseudo-report spread over the labels."""
        M = _aligned_proba(estimator, X, Q.shape[1])
        p = invert_on_simplex(M, Q)
        if n_reports is None:
            return p
        # Where the estimated report probabilities leave the channel's image
        # (estimation error), the inverse sits on the simplex's boundary: a
        # probability 0 that the log-loss punishes without bound. One
        # pseudo-report (Laplace) keeps every probability above
        # 1 / (k (n + 1)), a floor that vanishes as n grows.
        k = p.shape[1]
        return (n_reports * p + 1.0 / k) / (n_reports + 1.0)

    def _initial_prior(self, X, channel, codes, sample_weight, k):
        """The forward correction's P(c | x) when available, else the estimated
        label distribution for every row."""
        if hasattr(self.estimator, "predict_proba") and isinstance(channel, CategoricalChannel):
            if channel.n_categories * channel.n_outputs <= _MAX_FORWARD_MATRIX:
                Q = np.asarray(channel.matrix(), dtype=float)
                plain = _fit_with_weights(clone(self.estimator), X, codes, sample_weight)
                return self._forward_proba(plain, X, Q)
        return np.broadcast_to(self.prior_, (_n_rows(X), k))

    def _fit_posterior(self, X, L, prior, sample_weight):
        """EM over the true labels: weights from the prior, fit, new prior."""
        k = L.shape[1]
        W = posterior_weights(L, prior)
        probabilistic = hasattr(self.estimator, "predict_proba")
        n_iter = 0
        est = None
        for _ in range(int(self.max_iter)):
            Xe, ye, we = _expanded(X, W, sample_weight)
            est = _fit_with_weights(clone(self.estimator), Xe, ye, we)
            n_iter += 1
            if not probabilistic:
                break
            W_new = posterior_weights(L, _aligned_proba(est, X, k))
            moved = np.abs(W_new - W)
            if sample_weight is not None:  # rows of weight 0 take no part
                moved = moved[sample_weight > 0]
            change = float(moved.max()) if moved.size else 0.0
            W = W_new
            if change <= self.tol:
                break
        self.estimator_ = est
        self.n_iter_ = n_iter

    def _fit_rr_with_prior(self, X, y, n, sample_weight):
        if get_channel(y) is not None:
            raise ValueError(
                "method='rr_with_prior' privatizes the labels itself (each stage's "
                "prior comes from the model of the earlier stages): pass the true "
                "labels, not reports."
            )
        labels = self._check_labels(y, n)
        classes = np.unique(labels)
        codes = np.searchsorted(classes, labels)
        k = classes.size
        eps = float(self.epsilon)
        # One stream each, spawned from one root: the first stage's k-RR, the
        # split into stages, and the RR-with-prior draws of each later stage.
        states = sub_random_states(self.random_state, 1 + int(self.n_stages))
        split_rng = check_random_generator(states[1])
        stage_rngs = [check_random_generator(state) for state in states[2:]]
        stage = np.empty(n, dtype=np.int64)
        stage[split_rng.permutation(n)] = np.arange(n) * int(self.n_stages) // max(n, 1)
        # Stage 0: k-RR (RR-with-prior under a uniform prior is k-RR).
        first = np.flatnonzero(stage == 0)
        mech = RandomizedResponse(epsilon=eps, categories=list(classes), random_state=states[0])
        rep = mech.fit_transform(labels[first].reshape(-1, 1))
        channel = mech.channel_
        L = np.zeros((n, k))
        L[first] = channel.likelihood(channel.encode_reports(rep))
        self.channel_ = channel
        self.classes_ = classes
        self._epsilon_spent = eps
        first_codes = channel.encode_reports(rep)
        self.prior_ = self._estimated_prior(channel, first_codes)
        done = first
        sw = sample_weight
        Xd = _safe_indexing(X, done)
        w0 = None if sw is None else sw[done]
        init = self._initial_prior(Xd, channel, first_codes, w0, k)
        self._fit_posterior(Xd, L[done], init, w0)
        total_iter = self.n_iter_
        for s in range(1, int(self.n_stages)):
            rows = np.flatnonzero(stage == s)
            if rows.size == 0:
                continue
            Xs = _safe_indexing(X, rows)
            prior = _aligned_proba(self.estimator_, Xs, k)
            order, sizes = rr_with_prior_sizes(prior, eps)
            reports = _sample_rr_with_prior(codes[rows], order, sizes, eps, stage_rngs[s - 1])
            L[rows] = rr_with_prior_likelihood(reports, order, sizes, eps)
            done = np.concatenate([done, rows])
            Xd = _safe_indexing(X, done)
            init = _aligned_proba(self.estimator_, Xd, k)
            self._fit_posterior(Xd, L[done], init, None if sw is None else sw[done])
            total_iter += self.n_iter_
        self.n_iter_ = total_iter

    # ---------------------------------------------------------- prediction
    def _has_proba(self):
        return hasattr(self.estimator, "predict_proba")

    @available_if(_has_proba)
    def predict_proba(self, X: Any) -> np.ndarray:
        """Estimated ``P(true label | x)``, columns in ``classes_`` order.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
        """
        check_is_fitted(self, "estimator_")
        _check_2d(X)
        X = _indexable(X)
        validate_data(self, X, reset=False, skip_check_array=True)
        k = self.classes_.size
        if self.method_ == "forward":
            return self._forward_proba(self.estimator_, X, self._Q, self._n_reports)
        return _aligned_proba(self.estimator_, X, k)

    @available_if(_has_proba)
    def predict_log_proba(self, X: Any) -> np.ndarray:
        """Logarithm of :meth:`predict_proba`.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        log_proba : ndarray of shape (n_samples, n_classes)
        """
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    def predict(self, X: Any) -> np.ndarray:
        """The most likely true label of each row.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        labels : ndarray of shape (n_samples,)
        """
        check_is_fitted(self, "estimator_")
        if self._has_proba():
            return self.classes_[np.argmax(self.predict_proba(X), axis=1)]
        _check_2d(X)
        X = _indexable(X)
        validate_data(self, X, reset=False, skip_check_array=True)
        return self.classes_[np.asarray(self.estimator_.predict(X)).astype(np.int64)]

    @property
    def epsilon_spent_(self) -> float:
        """The budget one user's label spends (reported once)."""
        check_is_fitted(self, "estimator_")
        return self._epsilon_spent

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        from sklearn.utils import get_tags

        inner = get_tags(self.estimator)
        tags.input_tags.sparse = inner.input_tags.sparse
        tags.input_tags.allow_nan = inner.input_tags.allow_nan
        tags.input_tags.categorical = inner.input_tags.categorical
        tags.input_tags.string = inner.input_tags.string
        tags.non_deterministic = True
        return tags


def _n_rows(X):
    return _num_samples(X)


def _indexable(X):
    """X in a form whose rows can be selected: sparse as CSR, array-likes
    without rows (e.g. objects with ``__array__`` only) as arrays."""
    if sp.issparse(X):
        return X.tocsr()
    if hasattr(X, "iloc") or isinstance(X, (np.ndarray, list)):
        return X
    return np.asarray(X)


def _check_2d(X):
    if getattr(X, "ndim", 2) == 1 or (isinstance(X, list) and X and np.ndim(X[0]) == 0):
        raise ValueError(
            "Expected 2D array, got 1D array instead. Reshape your data either using "
            "array.reshape(-1, 1) if your data has a single feature or "
            "array.reshape(1, -1) if it contains a single sample."
        )
