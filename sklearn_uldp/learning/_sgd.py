"""Linear models trained on privatized gradients (Wang et al.'s LDP-SGD), and
linear regression from privatized rows (moment correction).

**LDP-SGD** (Wang, Xiao, Yang, Zhao, Hui, Shin, Shin & Yu, "Collecting and
Analyzing Multidimensional Data with Local Differential Privacy", ICDE 2019,
Section V). The collector runs stochastic gradient descent over the users,
in batches: at step t it sends the current parameters ``beta_t`` to a batch
G_t of users who have not taken part yet; each computes the gradient of their
loss at ``beta_t`` on their own row, clips each coordinate to ``[-1, 1]``,
and reports it by the paper's Algorithm 4: m of the D coordinates drawn at
random, each through the Piecewise or Hybrid mechanism at ``epsilon / m``,
scaled by ``D / m`` (the others 0). The report is an unbiased estimate of the
clipped gradient, and the collector steps with the batch's mean:

    beta_{t+1} = beta_t - eta_t (mean_{i in G_t} g*_i + lambda beta_t),
    eta_t = eta_0 / sqrt(t + 1).

No user reports twice, so each user spends ``epsilon`` (the batches are
disjoint: parallel composition across users, one report per user). The
perturbation of one coordinate of a clipped gradient ``g`` has variance

    Var[g*_j] = (D / m) Var_M(g_j; epsilon / m) + (D / m - 1) g_j^2,

with ``Var_M`` the mechanism's variance (Wang et al.'s Eqs. (14)-(15));
:func:`gradient_variance` computes it (exact on the package's output grid,
or the paper's continuous closed form).

The ridge term ``lambda beta_t`` is added by the collector (it is public),
not by the users: the same expected step as the paper's loss
``l + lambda/2 ||beta||^2``, without spending noise on it.

**Moment correction** (non-interactive). Each user privatizes their row
``(x, y)`` once, with the numeric mechanisms (every attribute at ``epsilon /
(d + 1)``, or m of them at ``epsilon / m``). The reports are unbiased and their
noises independent across attributes, so the cross moments of the reports
are unbiased for those of the data, and only the diagonal carries the noise:

    E[x* x*^T] = E[x x^T] + diag(E[Var_j(x_j)]),

where ``Var_j(t) = v0 + v1 t + v2 t^2`` is the mechanism's (known) variance,
a quadratic in the value for Piecewise, Hybrid and Duchi. Taking
expectations, ``E[x*_j^2] = (1 + v2) E[x_j^2] + v1 E[x_j] + v0``, which gives
``E[x_j^2]``; least squares then solves the corrected normal equations,
regularized so the estimated second-moment matrix stays positive definite.
"""

from __future__ import annotations

import math
import warnings
from numbers import Integral, Real
from typing import Any

import numpy as np
from scipy.special import log_softmax
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, column_or_1d, validate_data

from ..exceptions import ClippingWarning
from ..mechanisms._base import RANDOM_STATE_CONSTRAINT
from ..numeric import (
    MultiNumericChannel,
    MultiNumericMechanism,
    check_bounds,
    optimal_sampled_attributes,
)
from ..numeric import closed_form_variance as _closed_form_variance
from ..utils._docstrings import fill_doc
from ..utils._random import check_random_generator
from ..utils._typing import ArrayLike, RandomStateLike
from ..utils._validation import check_epsilon
from ._common import sub_random_states

__all__ = [
    "LDPLogisticRegression",
    "LDPLinearSVC",
    "LDPLinearRegression",
    "privatize_gradients",
    "gradient_variance",
]

_UNIT = (-1.0, 1.0)


# ------------------------------------------------------ gradient perturbation
def _n_sampled(n_sampled, epsilon, D):
    if n_sampled == "auto":
        return optimal_sampled_attributes(float(epsilon), D)
    m = int(n_sampled)
    if not 1 <= m <= D:
        raise ValueError(f"n_sampled={m} must be between 1 and the {D} gradient coordinates.")
    return m


def _gradient_mechanism(epsilon, mechanism, D, m, random_state):
    """Algorithm 4 as the package's MultiNumericMechanism on [-1, 1]^D."""
    mech = MultiNumericMechanism(
        epsilon=epsilon,
        bounds=[_UNIT] * D,
        mechanism=mechanism,
        strategy="sample",
        n_sampled=m,
        random_state=random_state,
    )
    return mech.fit()


def _perturb(mech, G):
    """Unbiased perturbed gradients: sampled coordinates' reports times D / m."""
    D = G.shape[1]
    m = mech.n_sampled_
    reports = np.asarray(mech.transform(G), dtype=float)
    return np.nan_to_num(reports, nan=0.0) * (D / m)


def privatize_gradients(
    gradients: ArrayLike,
    epsilon: float,
    *,
    mechanism: str = "hybrid",
    n_sampled: int | str = "auto",
    random_state: RandomStateLike = None,
) -> np.ndarray:
    """Each user's report of their gradient: Wang et al.'s Algorithm 4 after clipping.

    Every coordinate is clipped to ``[-1, 1]``; ``m`` of the D coordinates
    are drawn at random, each reported through ``mechanism`` at ``epsilon /
    m`` (:class:`~sklearn_uldp.MultiNumericMechanism`) and scaled by
    ``D / m``; the others are 0. Each row is an unbiased estimate of its
    clipped gradient and spends ``epsilon``.

    Parameters
    ----------
    gradients : array-like of shape (n_users, D)
    epsilon : float
        The budget of one user's report.
    mechanism : {"hybrid", "piecewise", "duchi"}, default="hybrid"
    n_sampled : int or "auto", default="auto"
        m; ``"auto"`` is Wang et al.'s ``max(1, min(D, floor(epsilon / 2.5)))``.
    random_state : None, "secure", int, Generator, SeedSequence or RandomState, default=None

    Returns
    -------
    reports : ndarray of shape (n_users, D)

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp.learning import privatize_gradients
    >>> G = np.tile([0.5, -0.2, 3.0], (200_000, 1))   # the last is clipped to 1
    >>> R = privatize_gradients(G, epsilon=4.0, random_state=0)
    >>> R.mean(axis=0).round(1).tolist()
    [0.5, -0.2, 1.0]
    """
    G = np.clip(np.asarray(gradients, dtype=float), -1.0, 1.0)
    if G.ndim != 2:
        raise ValueError(f"gradients must be a 2-D array (users x coordinates), got {G.shape}.")
    eps = check_epsilon(epsilon)
    m = _n_sampled(n_sampled, eps, G.shape[1])
    return _perturb(_gradient_mechanism(eps, mechanism, G.shape[1], m, random_state), G)


def gradient_variance(
    gradients: ArrayLike,
    epsilon: float,
    *,
    mechanism: str = "hybrid",
    n_sampled: int | str = "auto",
    exact: bool = True,
) -> np.ndarray:
    """Variance of each coordinate of :func:`privatize_gradients`' reports.

    ``Var[g*_j] = (D / m) Var_M(g_j; epsilon / m) + (D / m - 1) g_j^2`` for a
    clipped gradient ``g``: the report is ``(D / m) M(g_j)`` with probability
    ``m / D`` and 0 otherwise, so ``E[g*_j^2] = (D / m) (Var_M + g_j^2)``.
    This is Wang et al.'s Eq. (14) (Piecewise) and Eq. (15) (Hybrid).

    Parameters
    ----------
    gradients : array-like of shape (n, D)
        Gradients (clipped to ``[-1, 1]`` here).
    epsilon : float
    mechanism : {"hybrid", "piecewise", "duchi"}, default="hybrid"
    n_sampled : int or "auto", default="auto"
    exact : bool, default=True
        ``True``: the mechanisms' exact variance on the package's output
        grid (:meth:`~sklearn_uldp.numeric.PiecewiseChannel.variance`);
        ``False``: the paper's continuous closed form
        (:func:`~sklearn_uldp.numeric.closed_form_variance`). They agree to
        about 1e-4 relative.

    Returns
    -------
    variance : ndarray of shape (n, D)

    Examples
    --------
    >>> from sklearn_uldp.learning import gradient_variance
    >>> gradient_variance([[0.0, 1.0]], 4.0, mechanism="piecewise", exact=False).round(3).tolist()
    [[0.17, 1.483]]
    """
    G = np.clip(np.asarray(gradients, dtype=float), -1.0, 1.0)
    if G.ndim != 2:
        raise ValueError(f"gradients must be a 2-D array (users x coordinates), got {G.shape}.")
    eps = check_epsilon(epsilon)
    D = G.shape[1]
    m = _n_sampled(n_sampled, eps, D)
    if exact:
        channel: Any = MultiNumericChannel([_UNIT] * D, eps, mechanism, m).attribute_channel(0)
        var = np.asarray(channel.variance(G.ravel()), dtype=np.float64).reshape(G.shape)
    else:
        var = _closed_form_variance(mechanism, eps / m, G)
    return (D / m) * var + (D / m - 1.0) * G**2


# --------------------------------------------------------------- the models
def _check_pairs(bounds, d, name):
    """One (low, high) pair per feature, from one pair or a list."""
    if isinstance(bounds, (str, bytes)):
        raise TypeError(f"{name} must be a pair (low, high) or a list of pairs, got {bounds!r}.")
    arr = np.asarray(bounds, dtype=object)
    if arr.ndim == 1:
        return [check_bounds(bounds, name=name)] * d
    pairs = [check_bounds(b, name=f"{name}[{j}]") for j, b in enumerate(bounds)]
    if len(pairs) != d:
        raise ValueError(f"{name} gives {len(pairs)} ranges for {d} features.")
    return pairs


def _to_unit(X, pairs, what):
    """Features mapped onto [-1, 1] (clipped, with a ClippingWarning counting them)."""
    low = np.array([p[0] for p in pairs])
    high = np.array([p[1] for p in pairs])
    outside = (X < low) | (X > high)
    if outside.any():
        warnings.warn(
            f"{int(outside.sum())} of {X.size} {what} lie outside their bounds and were "
            "clipped to them (each user clips their own values). Widen the bounds if "
            "they are valid data: the bounds are public and fixed before collection.",
            ClippingWarning,
            stacklevel=4,
        )
    X = np.clip(X, low, high)
    return (X - low) * (2.0 / (high - low)) - 1.0, low, high


def _unit_to_original(beta, intercept, low, high):
    """Coefficients of unit-scale features as coefficients of the original ones."""
    a = 2.0 / (high - low)
    b = -2.0 * low / (high - low) - 1.0
    return beta * a, intercept + float(beta @ b)


class _LDPSGDBase(BaseEstimator):
    """LDP-SGD over users in disjoint batches (see the module docstring)."""

    _parameter_constraints: dict[str, list[Any]] = {
        "epsilon": [Interval(Real, 0, None, closed="neither")],
        "mechanism": [StrOptions({"hybrid", "piecewise", "duchi"})],
        "bounds": ["array-like"],
        "batch_size": [StrOptions({"auto"}), Interval(Integral, 1, None, closed="left")],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "alpha": [Interval(Real, 0, None, closed="left")],
        "n_sampled": [StrOptions({"auto"}), Interval(Integral, 1, None, closed="left")],
        "fit_intercept": ["boolean"],
        "average": ["boolean"],
        "random_state": RANDOM_STATE_CONSTRAINT,
    }

    #: It privatizes its training data in fit(X, y) (what
    #: PrivacyUtilitySearchCV reads to search it on held-out clean rows).
    _privatizes_in_fit = True

    #: The loss's name (set by the subclasses).
    _loss = "log_loss"

    def _gradients(self, Z, y, W):
        """Each user's gradient of the loss at ``W`` (rows: outputs, columns:
        the D inputs), flattened to ``R * D`` coordinates."""
        scores = Z @ W.T  # (B, R)
        if W.shape[0] == 1:  # binary (y in {-1, +1}) or regression
            z = scores[:, 0]
            if self._loss == "log_loss":
                factor = -y / (1.0 + np.exp(np.clip(y * z, -500, 500)))
            elif self._loss == "hinge":
                factor = np.where(y * z < 1.0, -y, 0.0)
            else:  # squared loss
                factor = 2.0 * (z - y)
            return factor[:, None] * Z
        onehot = np.zeros_like(scores)
        onehot[np.arange(y.size), y.astype(np.int64)] = 1.0
        if self._loss == "log_loss":  # multinomial: softmax minus the one-hot label
            scores = scores - scores.max(axis=1, keepdims=True)
            proba = np.exp(scores)
            proba /= proba.sum(axis=1, keepdims=True)
            factor = proba - onehot
        else:  # one-vs-rest hinge losses, summed
            signs = 2.0 * onehot - 1.0
            factor = np.where(signs * scores < 1.0, -signs, 0.0)
        return (factor[:, :, None] * Z[:, None, :]).reshape(y.size, -1)

    def _batch_size(self, n, D):
        if self.batch_size != "auto":
            return min(int(self.batch_size), n)
        # Wang et al.: |G| = Omega(D log D / eps^2) keeps the batch's noise
        # in check; at least sqrt(n) keeps the number of steps near sqrt(n).
        eps = float(self.epsilon)
        noise = D * math.log(D + 1.0) / min(eps, 4.0) ** 2
        return int(min(n, max(1, math.ceil(max(noise, math.sqrt(n))))))

    def _sgd(self, Xu, yu, mechanism, n_outputs=1):
        """Run LDP-SGD on unit-scale features and targets.

        Returns ``(W, intercepts)``: coefficients of shape (n_outputs, d) and
        intercepts of shape (n_outputs,). A user's gradient has ``n_outputs *
        (d + 1)`` coordinates (the intercept's included), all reported at once.
        """
        n, d = Xu.shape
        Z = np.hstack([np.ones((n, 1)), Xu]) if self.fit_intercept else Xu
        R = int(n_outputs)
        D = R * Z.shape[1]
        eps = check_epsilon(self.epsilon)
        m = _n_sampled(self.n_sampled, eps, D)
        B = self._batch_size(n, D)
        T = n // B
        if T < 1:
            raise ValueError(f"batch_size={B} exceeds the {n} users: every step needs a batch.")
        noise_state, order_state = sub_random_states(self.random_state, 2)
        mech = _gradient_mechanism(eps, mechanism, D, m, noise_state)
        # Users join in a random order, each in one batch only (fresh entropy
        # per fit with random_state=None: the order is part of the noise).
        order = check_random_generator(order_state).permutation(n)
        beta = np.zeros(D)
        total = np.zeros(D)
        n_avg = 0
        ridge = np.full((R, Z.shape[1]), float(self.alpha))
        if self.fit_intercept:
            ridge[:, 0] = 0.0  # the intercepts are not penalized
        ridge = ridge.ravel()
        for t in range(T):
            rows = order[t * B : (t + 1) * B]
            G = self._gradients(Z[rows], yu[rows], beta.reshape(R, -1))
            np.clip(G, -1.0, 1.0, out=G)
            step = _perturb(mech, G).mean(axis=0) + ridge * beta
            beta = beta - (float(self.learning_rate) / math.sqrt(t + 1.0)) * step
            if self.average and t >= T // 2:
                total += beta
                n_avg += 1
        if self.average and n_avg:
            beta = total / n_avg
        self.n_iter_ = T
        self.batch_size_ = B
        self.n_users_ = T * B
        self.n_sampled_ = m
        self.channel_ = mech.channel_
        W = beta.reshape(R, -1)
        if self.fit_intercept:
            return W[:, 1:], W[:, 0].copy()
        return W, np.zeros(R)

    def _unit_features(self, X, reset):
        X = validate_data(self, X, reset=reset, dtype=np.float64, ensure_min_samples=1)
        if reset:
            self._pairs = _check_pairs(self.bounds, X.shape[1], "bounds")
        return _to_unit(X, self._pairs, "feature values")

    @property
    def epsilon_spent_(self) -> float:
        """The budget one user spends: one perturbed gradient at ``epsilon``."""
        check_is_fitted(self, "coef_")
        return float(self.epsilon)


_SGD_PARAMS = """
    epsilon : float, default=1.0
        The budget of one user's report (each user reports one gradient).
    mechanism : {"hybrid", "piecewise", "duchi"}, default="hybrid"
        The numeric mechanism of each sampled gradient coordinate.
    bounds : (float, float) or list of (float, float), default=(-1.0, 1.0)
        The public range of the features (one pair for all, or one each);
        users clip their values to it (with a ClippingWarning).
    batch_size : int or "auto", default="auto"
        Users per step. ``"auto"``: ``max(D log(D + 1) / eps^2, sqrt(n))``
        (Wang et al.'s order ``D log D / eps^2``, eps capped at 4).
    learning_rate : float, default=1.0
        ``eta_0`` of the schedule ``eta_t = eta_0 / sqrt(t + 1)``.
    alpha : float, default=1e-4
        Ridge penalty lambda (the paper's 1e-4), added by the collector.
    n_sampled : int or "auto", default="auto"
        Gradient coordinates each user reports (m); ``"auto"``: Wang et
        al.'s ``max(1, min(D, floor(epsilon / 2.5)))``.
    fit_intercept : bool, default=True
    average : bool, default=False
        Return the average of the iterates of the second half of the run
        (Polyak-Ruppert averaging) instead of the last one.
    random_state : None, "secure", int, Generator, SeedSequence or RandomState, default=None
        Source of the users' order and of their noise. ``None``: fresh OS
        entropy at every fit (nothing stored); an int for reproducible
        simulations only.
"""

_SGD_ATTRIBUTES = """
    coef_ : ndarray of shape (n_features,) or (n_rows, n_features)
        In the features' units (classifiers: one row, or one per class).
    intercept_ : float or ndarray of shape (n_rows,)
    n_iter_ : int
        SGD steps (batches of users).
    batch_size_ : int
    n_users_ : int
        Users who reported (``n_iter_ * batch_size_``; the remainder of
        ``n_samples`` took no part).
    n_sampled_ : int
    channel_ : MultiNumericChannel
        The public spec of a gradient report.
    epsilon_spent_ : float
        Each user's budget: ``epsilon`` (one report; batches are disjoint).
    n_features_in_ : int
    feature_names_in_ : ndarray
"""


#: Docstring fragments of the LDP-SGD classifiers (``fill_doc``).
SGD_DOCS = {"sgd_params": _SGD_PARAMS, "sgd_attributes": _SGD_ATTRIBUTES}


class _LDPLinearClassifier(ClassifierMixin, _LDPSGDBase):
    def __init__(
        self,
        epsilon: float = 1.0,
        *,
        mechanism: str = "hybrid",
        bounds: Any = (-1.0, 1.0),
        batch_size: int | str = "auto",
        learning_rate: float = 1.0,
        alpha: float = 1e-4,
        n_sampled: int | str = "auto",
        fit_intercept: bool = True,
        average: bool = False,
        random_state: RandomStateLike = None,
    ) -> None:
        self.epsilon = epsilon
        self.mechanism = mechanism
        self.bounds = bounds
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.alpha = alpha
        self.n_sampled = n_sampled
        self.fit_intercept = fit_intercept
        self.average = average
        self.random_state = random_state

    def fit(self, X: ArrayLike, y: ArrayLike) -> _LDPLinearClassifier:
        """Run LDP-SGD: each row is a user who reports one perturbed gradient.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Numeric features within ``bounds``.
        y : array-like of shape (n_samples,)
            Labels. Two classes: Wang et al.'s binary model (one row of
            coefficients); more: one row per class (the multinomial logistic
            loss, or one-vs-rest hinge losses), all in one gradient of
            ``n_classes * (n_features + 1)`` coordinates per user.

        Returns
        -------
        self : object
        """
        self._validate_params()
        Xu, low, high = self._unit_features(X, reset=True)
        y = np.asarray(column_or_1d(y, warn=True))
        if y.shape[0] != Xu.shape[0]:
            raise ValueError(f"X has {Xu.shape[0]} rows but y has {y.shape[0]} labels.")
        check_classification_targets(y)
        classes, codes = np.unique(y, return_inverse=True)
        if classes.size < 2:
            raise ValueError(
                f"y has {classes.size} class (one label for every row): a classifier "
                "needs at least two labels."
            )
        self.classes_ = classes
        if classes.size == 2:  # Wang et al.'s binary model, y in {-1, +1}
            W, b = self._sgd(Xu, np.where(codes == 1, 1.0, -1.0), self.mechanism)
        else:
            W, b = self._sgd(Xu, codes.astype(float), self.mechanism, classes.size)
        pairs = [_unit_to_original(w, b0, low, high) for w, b0 in zip(W, b, strict=True)]
        self.coef_ = np.array([c for c, _ in pairs])
        self.intercept_ = np.array([i for _, i in pairs])
        return self

    def decision_function(self, X: ArrayLike) -> np.ndarray:
        """``x^T coef_ + intercept_``: positive for ``classes_[1]`` (binary), or
        one score per class.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
        """
        check_is_fitted(self, "coef_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        scores = X @ self.coef_.T + self.intercept_
        return scores[:, 0] if scores.shape[1] == 1 else scores

    def predict(self, X: ArrayLike) -> np.ndarray:
        """The predicted class of each row.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        labels : ndarray of shape (n_samples,)
        """
        scores = self.decision_function(X)
        if scores.ndim == 1:
            return self.classes_[(scores > 0).astype(np.int64)]
        return self.classes_[np.argmax(scores, axis=1)]


@fill_doc(SGD_DOCS)
class LDPLogisticRegression(_LDPLinearClassifier):
    """Logistic regression trained by LDP-SGD (Wang et al., ICDE 2019).

    Each row of ``X`` is a user, who takes part in one step only: the user
    computes the gradient of the logistic loss at the current coefficients
    on their row, clips it to ``[-1, 1]`` per coordinate and reports it
    through Algorithm 4 (m sampled coordinates, Piecewise or Hybrid noise at
    ``epsilon / m``, scaled by D / m). The collector averages a batch of
    reports and steps. Each user spends ``epsilon``.

    Parameters
    ----------
    %(sgd_params)s

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    %(sgd_attributes)s

    See Also
    --------
    LDPLinearSVC : The hinge loss.
    privatize_gradients, gradient_variance : A user's report and its variance.

    References
    ----------
    Wang, Xiao, Yang, Zhao, Hui, Shin, Shin & Yu, "Collecting and Analyzing
    Multidimensional Data with Local Differential Privacy", ICDE 2019.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp.learning import LDPLogisticRegression
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, size=(100_000, 2))
    >>> y = (X[:, 0] - X[:, 1] > 0).astype(int)
    >>> clf = LDPLogisticRegression(epsilon=4.0, random_state=0).fit(X, y)
    >>> clf.batch_size_, clf.n_iter_, clf.epsilon_spent_  # 315 batches of 317 users
    (317, 315, 4.0)
    >>> bool(clf.score(X, y) > 0.9)
    True
    """

    _loss = "log_loss"

    def predict_proba(self, X: ArrayLike) -> np.ndarray:
        """Probabilities of ``classes_`` (the logistic model's).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
        """
        return np.exp(self.predict_log_proba(X))

    def predict_log_proba(self, X: ArrayLike) -> np.ndarray:
        """Logarithm of :meth:`predict_proba`.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        log_proba : ndarray of shape (n_samples, n_classes)
        """
        z = self.decision_function(X)
        if z.ndim == 1:
            return -np.column_stack([np.logaddexp(0.0, z), np.logaddexp(0.0, -z)])
        return log_softmax(z, axis=1)


@fill_doc(SGD_DOCS)
class LDPLinearSVC(_LDPLinearClassifier):
    """A linear SVM (hinge loss) trained by LDP-SGD (Wang et al., ICDE 2019).

    As :class:`LDPLogisticRegression`, with the hinge loss ``max(0, 1 - y x^T
    beta)`` (the paper's SVM).

    Parameters
    ----------
    %(sgd_params)s

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    %(sgd_attributes)s

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp.learning import LDPLinearSVC
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, size=(100_000, 2))
    >>> y = np.where(X[:, 0] + X[:, 1] > 0, "yes", "no")
    >>> svm = LDPLinearSVC(epsilon=4.0, random_state=0).fit(X, y)
    >>> bool(svm.score(X, y) > 0.9)
    True
    """

    _loss = "hinge"


class LDPLinearRegression(RegressorMixin, _LDPSGDBase):
    """Linear regression from privatized data: LDP-SGD or moment correction.

    ``solver="sgd"``: Wang et al.'s LDP-SGD on the squared loss (each user
    reports one perturbed gradient, see :class:`LDPLogisticRegression`).
    ``solver="moments"``: non-interactive; each user privatizes their row
    ``(x, y)`` once with the numeric mechanisms (every attribute at ``epsilon
    / (d + 1)``, or ``n_sampled`` of them at ``epsilon / n_sampled``), and
    the least-squares fit solves the normal equations of the reports with
    the noise's known contribution subtracted (``E[x* x*^T] = E[x x^T] +
    diag(E[noise variances])``; see ``docs/learning.md``). The reports can be
    kept and reused for other regressions at no further cost in privacy.

    Parameters
    ----------
    epsilon : float, default=1.0
        The budget of one user (one gradient, or one row of reports).
    solver : {"sgd", "moments"}, default="sgd"
    mechanism : {"auto", "hybrid", "piecewise", "duchi"}, default="auto"
        ``"auto"``: Hybrid for ``"sgd"``, Piecewise for ``"moments"`` (whose
        squared reports identify the second moments at every budget; Duchi's
        reports are +-C, whose square says nothing of the value, and Hybrid is
        Duchi's below eps/attribute ~ 0.61).
    bounds : (float, float) or list of (float, float), default=(-1.0, 1.0)
        The public range of the features.
    target_bounds : (float, float), default=(-1.0, 1.0)
        The public range of the target.
    batch_size, learning_rate, alpha, n_sampled, fit_intercept, average
        As in :class:`LDPLogisticRegression` (for ``"sgd"``). For
        ``"moments"``, ``alpha`` is the ridge penalty of the normal equations
        and ``n_sampled`` the attributes each user reports ("auto": all of
        them; at least 2, for the cross moments).
    random_state : None, "secure", int, Generator, SeedSequence or RandomState, default=None

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    intercept_ : float
    n_iter_ : int
        SGD steps (0 for ``"moments"``).
    second_moments_ : ndarray of shape (d + 2, d + 2)
        ``"moments"``: the corrected estimate of ``E[z z^T]``, ``z = (1,
        x, y)`` on the unit scale.
    channel_ : MultiNumericChannel
    epsilon_spent_ : float
    n_features_in_ : int
    feature_names_in_ : ndarray

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp.learning import LDPLinearRegression
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, size=(200_000, 2))
    >>> y = np.clip(0.5 * X[:, 0] - 0.3 * X[:, 1] + 0.1 * rng.normal(size=200_000), -1, 1)
    >>> reg = LDPLinearRegression(epsilon=4.0, solver="moments", random_state=0).fit(X, y)
    >>> reg.coef_.round(1).tolist()
    [0.5, -0.3]
    >>> sgd = LDPLinearRegression(epsilon=4.0, random_state=0).fit(X, y)
    >>> sgd.coef_.round(1).tolist()
    [0.5, -0.3]
    """

    _parameter_constraints: dict[str, list[Any]] = {
        **_LDPSGDBase._parameter_constraints,
        "solver": [StrOptions({"sgd", "moments"})],
        "mechanism": [StrOptions({"auto", "hybrid", "piecewise", "duchi"})],
        "target_bounds": ["array-like"],
    }

    _loss = "squared"

    def __init__(
        self,
        epsilon: float = 1.0,
        *,
        solver: str = "sgd",
        mechanism: str = "auto",
        bounds: Any = (-1.0, 1.0),
        target_bounds: Any = (-1.0, 1.0),
        batch_size: int | str = "auto",
        learning_rate: float = 1.0,
        alpha: float = 1e-4,
        n_sampled: int | str = "auto",
        fit_intercept: bool = True,
        average: bool = False,
        random_state: RandomStateLike = None,
    ) -> None:
        self.epsilon = epsilon
        self.solver = solver
        self.mechanism = mechanism
        self.bounds = bounds
        self.target_bounds = target_bounds
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.alpha = alpha
        self.n_sampled = n_sampled
        self.fit_intercept = fit_intercept
        self.average = average
        self.random_state = random_state

    def fit(self, X: ArrayLike, y: ArrayLike) -> LDPLinearRegression:
        """Fit from the users' privatized gradients or rows (simulated here).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : object
        """
        self._validate_params()
        Xu, low, high = self._unit_features(X, reset=True)
        y = np.asarray(column_or_1d(y, warn=True), dtype=np.float64)
        if y.shape[0] != Xu.shape[0]:
            raise ValueError(f"X has {Xu.shape[0]} rows but y has {y.shape[0]} targets.")
        if not np.isfinite(y).all():
            raise ValueError(
                "y contains NaN or infinity; every user reports a finite target within "
                "target_bounds."
            )
        (ylow, yhigh) = check_bounds(self.target_bounds, name="target_bounds")
        yu, _, _ = _to_unit(y.reshape(-1, 1), [(ylow, yhigh)], "target values")
        yu = yu[:, 0]
        if self.solver == "sgd":
            mechanism = "hybrid" if self.mechanism == "auto" else self.mechanism
            W, b = self._sgd(Xu, yu, mechanism)
            beta, b0 = W[0], float(b[0])
        else:
            beta, b0 = self._moments(Xu, yu)
        # Back to the target's units: y = mid + half * y_u.
        half, mid = (yhigh - ylow) / 2.0, (yhigh + ylow) / 2.0
        coef, intercept = _unit_to_original(beta * half, b0 * half + mid, low, high)
        self.coef_ = coef
        self.intercept_ = float(intercept)
        return self

    def predict(self, X: ArrayLike) -> np.ndarray:
        """``x^T coef_ + intercept_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        y : ndarray of shape (n_samples,)
        """
        check_is_fitted(self, "coef_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return X @ self.coef_ + self.intercept_

    def _moments(self, Xu, yu):
        n, d = Xu.shape
        mechanism = "piecewise" if self.mechanism == "auto" else self.mechanism
        eps = check_epsilon(self.epsilon)
        D = d + 1
        m = D if self.n_sampled == "auto" else int(self.n_sampled)
        if not 2 <= m <= D:
            raise ValueError(
                f"solver='moments' needs each user to report at least 2 of the {D} "
                f"attributes (features and target) for the cross moments; got n_sampled={m}."
            )
        (state,) = sub_random_states(self.random_state, 1)
        mech = MultiNumericMechanism(
            epsilon=eps,
            bounds=[_UNIT] * D,
            mechanism=mechanism,
            strategy="split" if m == D else "sample",
            n_sampled="auto" if m == D else m,
            random_state=state,
        ).fit()
        R = np.asarray(mech.transform(np.column_stack([Xu, yu])), dtype=float)
        S = corrected_second_moments(R, mech.channel_)
        self.second_moments_ = S
        self.channel_ = mech.channel_
        self.n_iter_ = 0
        self.n_users_ = n
        self.n_sampled_ = m
        return _solve_normal_equations(S, float(self.alpha), self.fit_intercept)


def _variance_quadratic(channel):
    """(v0, v1, v2) with Var(t) = v0 + v1 t + v2 t^2 on the unit scale."""
    v_minus, v_zero, v_plus = (float(v) for v in channel.variance(np.array([-1.0, 0.0, 1.0])))
    return v_zero, (v_plus - v_minus) / 2.0, (v_plus + v_minus) / 2.0 - v_zero


def corrected_second_moments(reports: np.ndarray, channel: MultiNumericChannel) -> np.ndarray:
    """The unbiased estimate of ``E[z z^T]``, ``z = (1, attributes)``, from reports.

    Off the diagonal, the mean of ``r_j r_l`` over the users who reported both
    (independent noises: unbiased); on the diagonal, ``E[x_j^2] = (E[r_j^2] -
    v0 - v1 E[x_j]) / (1 + v2)``, the mechanism's variance ``v0 + v1 t + v2
    t^2`` subtracted.
    """
    R = np.asarray(reports, dtype=float)
    shown = ~np.isnan(R)
    R0 = np.where(shown, R, 0.0)
    both = shown.T.astype(float) @ shown.astype(float)
    if (both <= 0).any():
        raise ValueError(
            "Some pairs of attributes were never reported by the same user: too few "
            "users for the cross moments (or n_sampled too small)."
        )
    S = (R0.T @ R0) / both
    counts = shown.sum(axis=0)
    mean = R0.sum(axis=0) / counts
    for j in range(R.shape[1]):
        v0, v1, v2 = _variance_quadratic(channel.attribute_channel(j))
        if 1.0 + v2 <= 1e-9:
            raise ValueError(
                f"The {channel.attribute_mechanism} mechanism at epsilon="
                f"{channel.epsilon / channel.n_sampled:.3g} per attribute reports two "
                "values (+-C) whose square does not depend on the input, so the second "
                "moments are not identifiable: use mechanism='piecewise'."
            )
        S[j, j] = (S[j, j] - v0 - v1 * mean[j]) / (1.0 + v2)
    out = np.empty((R.shape[1] + 1, R.shape[1] + 1))
    out[0, 0] = 1.0
    out[0, 1:] = out[1:, 0] = mean
    out[1:, 1:] = S
    return out


def _solve_normal_equations(S, alpha, fit_intercept):
    """Least squares from the second moments of z = (1, x, y), kept positive definite.

    The estimated ``E[x x^T]`` (with the intercept's row) is symmetrized and
    its eigenvalues are floored at 1e-6 of its trace / dimension (noise can
    make the estimate indefinite); the ridge ``alpha`` (not on the
    intercept) is added before solving.
    """
    A = S[:-1, :-1]
    b = S[:-1, -1]
    if not fit_intercept:
        A, b = A[1:, 1:], b[1:]
    A = (A + A.T) / 2.0
    w, V = np.linalg.eigh(A)
    floor = 1e-6 * max(float(np.trace(A)) / A.shape[0], 1e-12)
    A = (V * np.maximum(w, floor)) @ V.T
    ridge = np.full(A.shape[0], alpha)
    if fit_intercept:
        ridge[0] = 0.0
    beta = np.linalg.solve(A + np.diag(ridge), b)
    if fit_intercept:
        return beta[1:], float(beta[0])
    return beta, 0.0
