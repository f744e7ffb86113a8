"""Reweighing for fairness with a privatized sensitive attribute.

Kamiran & Calders ("Data preprocessing techniques for classification without
discrimination", KAIS 2012) weight each training row by

    w(s, y) = P(s) P(y) / P(s, y),

so that in the weighted data the sensitive group s and the label y are
independent; a classifier trained with these ``sample_weight`` no longer
learns the group's association with the label from the data's imbalance.

Here the users privatize their group (e.g. sex) before it leaves the device,
and the collector only sees a report ``r_i`` through the channel ``Q(r | s)``.
The rates ``P(s)`` and ``P(s | y)`` are estimated from the reports with the
package's estimators (with intervals), and each row's weight is taken through
the channel:

* ``"inverse"``: ``w_i = sum_s h_s(r_i) w(s, y_i)``, where ``h_s(r)`` is the
  channel's inverse (``sum_r Q(r | s') h_s(r) = 1[s = s']``): an unbiased
  estimate of ``1[s_i = s]``, so the weighted count of every true cell
  ``(s, y)`` has the expectation ``n P(s) P(y)`` of Kamiran & Calders' weights.
  Some weights can be negative; they are clipped to ``clip`` (0 by default),
  which keeps them usable at the price of some bias;
* ``"posterior"``: ``w_i = sum_s P(s | r_i, y_i) w(s, y_i)``, the posterior
  mean of the weight given the report (Bayes' rule with the channel and the
  estimated ``P(s | y)``): positive and of low variance, but shrunk towards 1
  as the noise grows (at no information, every weight is 1).

With a utility-optimized mechanism (``UtilityOptimizedRR(sensitive=[...])``)
only the sensitive groups are randomized: a report of a non-sensitive group
is that group, so its rows get their exact weight.
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import _num_samples, check_array, check_is_fitted, validate_data

from ..estimators import EMEstimator
from ..mechanisms import BaseMechanism, CategoricalChannel, Channel
from ..mechanisms._base import RANDOM_STATE_CONSTRAINT
from ..utils._typing import RandomStateLike
from ..utils._validation import check_epsilon
from ._common import check_labels, posterior_weights, privatized_codes

__all__ = ["PrivatizedGroupReweighter"]


class PrivatizedGroupReweighter(BaseEstimator):
    """Kamiran & Calders' reweighing from a privatized sensitive attribute.

    ``fit(S, y)`` privatizes the sensitive attribute ``S`` as the users would
    (default: k-RR at ``epsilon``; a utility-optimized mechanism randomizes
    only the sensitive groups), or takes its reports with their spec; it
    estimates the group rates (with confidence intervals) and gives each row
    the weight ``P(s) P(y) / P(s, y)`` of its group taken through the channel
    (:attr:`sample_weight_`), for any estimator's ``sample_weight``.

    Parameters
    ----------
    sensitive : int or str, default=0
        The column of ``X`` that holds the sensitive attribute (position, or
        name for a DataFrame); the other columns are not read.
    epsilon : float, default=1.0
        The budget of one user's report of their group.
    mechanism : BaseMechanism, Channel, dict or None, default=None
        ``None``: k-RR over the groups. A mechanism (e.g.
        ``UtilityOptimizedRR(sensitive=["female"])``) is cloned and given
        ``epsilon``. A channel or spec dict: ``S`` holds reports of it.
    method : {"inverse", "posterior"}, default="inverse"
        How a row's weight is taken through the channel (see the module's
        documentation): the unbiased inverse (clipped) or the posterior mean.
    clip : (float, float or None), default=(0.0, None)
        Bounds of the ``"inverse"`` weights (``None``: no upper bound),
        before the weights are scaled to mean 1.
    alpha : float, default=0.05
        1 - the level of the intervals of ``rates_``.
    random_state : None, "secure", int, Generator, SeedSequence or RandomState, default=None
        Source of the privatization noise. ``None``: fresh OS entropy at
        every fit; an int for reproducible simulations only.

    Attributes
    ----------
    groups_ : ndarray of shape (k,)
        The groups (the channel's categories).
    classes_ : ndarray of shape (K,)
        The labels.
    rates_ : DataFrame
        One row per group: ``share`` (estimated ``P(s)``), ``share_low``,
        ``share_high`` (its interval, the estimators' ``confidence_intervals``)
        and ``P(y=c | s)`` for every label c.
    conditional_intervals_ : dict of {label: ndarray of shape (k, 2)}
        Intervals of ``P(s | y = c)``.
    weights_table_ : DataFrame
        ``w(s, y) = P(s) P(y) / P(s, y)`` (groups x labels).
    sample_weight_ : ndarray of shape (n_samples,)
        The rows' weights (mean 1), for ``estimator.fit(X, y, sample_weight=...)``.
    channel_ : Channel
    epsilon_spent_ : float
        The budget one user spends (the group is reported once).

    References
    ----------
    Kamiran & Calders, "Data preprocessing techniques for classification
    without discrimination", Knowledge and Information Systems 33, 2012.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp.learning import PrivatizedGroupReweighter
    >>> rng = np.random.default_rng(0)
    >>> s = rng.choice(["f", "m"], size=50_000)
    >>> y = (rng.random(50_000) < np.where(s == "m", 0.6, 0.3)).astype(int)
    >>> rw = PrivatizedGroupReweighter(epsilon=2.0, random_state=0).fit(s.reshape(-1, 1), y)
    >>> rw.weights_table_.round(2).to_numpy().tolist()  # truly [[0.79, 1.5], [1.38, 0.75]]
    [[0.79, 1.49], [1.37, 0.75]]
    >>> w = rw.sample_weight_   # weighted, group and label are independent:
    >>> [round(float(np.average(y[s == g], weights=w[s == g])), 2) for g in ("f", "m")]
    [0.45, 0.45]
    """

    _parameter_constraints: dict[str, list[Any]] = {
        "sensitive": [Integral, str],
        "epsilon": [Interval(Real, 0, None, closed="neither")],
        "mechanism": [None, BaseMechanism, Channel, dict],
        "method": [StrOptions({"inverse", "posterior"})],
        "clip": [tuple, list],
        "alpha": [Interval(Real, 0, 1, closed="neither")],
        "random_state": RANDOM_STATE_CONSTRAINT,
    }

    def __init__(
        self,
        sensitive: int | str = 0,
        epsilon: float = 1.0,
        mechanism: Any = None,
        method: str = "inverse",
        *,
        clip: tuple[float, float | None] = (0.0, None),
        alpha: float = 0.05,
        random_state: RandomStateLike = None,
    ) -> None:
        self.sensitive = sensitive
        self.epsilon = epsilon
        self.mechanism = mechanism
        self.method = method
        self.clip = clip
        self.alpha = alpha
        self.random_state = random_state

    def fit(self, X: Any, y: Any) -> PrivatizedGroupReweighter:
        """Privatize the groups (or read their reports) and weigh the rows.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            A table whose column ``sensitive`` holds each row's group
            (privatized here: a simulation of the users) or its reports
            (carrying their channel, e.g. a mechanism's pandas output, or of
            the channel given as ``mechanism``).
        y : array-like of shape (n_samples,)
            The labels (clean: reweighing balances the groups within labels).

        Returns
        -------
        self : PrivatizedGroupReweighter
        """
        self._validate_params()
        check_epsilon(self.epsilon)
        low, high = self._clip_bounds()
        S = self._sensitive_column(X)
        n = _num_samples(S)
        labels = check_labels(y, n)
        privatized = privatized_codes(
            S, n, self.mechanism, self.epsilon, self.random_state, what="group"
        )
        channel, codes = privatized.channel, privatized.codes
        classes, label_codes = np.unique(labels, return_inverse=True)
        L = np.asarray(channel.likelihood(codes), dtype=float)
        k, K = L.shape[1], classes.size
        share_est = self._estimator(channel, codes)
        share = share_est.distribution_
        label_share = np.bincount(label_codes, minlength=K) / n
        conditional = np.empty((k, K))
        intervals = {}
        for c in range(K):
            rows = label_codes == c
            est = self._estimator(channel, codes[rows])
            conditional[:, c] = est.distribution_
            intervals[classes[c]] = est.confidence_intervals(self.alpha)
        # w(s, y) = P(s) P(y) / P(s, y) = P(s) / P(s | y); an empty cell (no
        # row can hold it) gets weight 0.
        with np.errstate(divide="ignore", invalid="ignore"):
            table = np.where(conditional > 0, share[:, None] / conditional, 0.0)
        if self.method == "posterior":
            post = posterior_weights(L, conditional[:, label_codes].T)
            weights = np.sum(post * table[:, label_codes].T, axis=1)
        else:
            H = _channel_inverse(channel, L, codes)
            weights = np.sum(H * table[:, label_codes].T, axis=1)
            weights = np.clip(weights, low, high)
        total = weights.sum()
        if not total > 0:
            raise ValueError(
                "Every weight was clipped to 0: the reports carry too little about "
                "the groups at this budget. Use method='posterior', a larger epsilon "
                "or a lower clip bound."
            )
        self.sample_weight_ = weights * (n / total)
        joint = conditional * label_share[None, :]
        groups = np.asarray(channel.categories)
        share_ci = share_est.confidence_intervals(self.alpha)
        with np.errstate(divide="ignore", invalid="ignore"):
            label_rates = np.where(share[:, None] > 0, joint / share[:, None], np.nan)
        rates = pd.DataFrame(
            {"share": share, "share_low": share_ci[:, 0], "share_high": share_ci[:, 1]},
            index=pd.Index(groups, name="group"),
        )
        for c, label in enumerate(classes):
            rates[f"P(y={label})"] = label_rates[:, c]
        self.groups_ = groups
        self.classes_ = classes
        self.rates_ = rates
        self.conditional_intervals_ = intervals
        self.weights_table_ = pd.DataFrame(table, index=groups, columns=classes)
        self.channel_ = channel
        self._epsilon_spent = privatized.epsilon_spent
        return self

    def _sensitive_column(self, X):
        """The column ``sensitive`` of X (reports keep their channel), after
        scikit-learn's checks of X (2-D, not sparse, finite, not empty)."""
        check_array(
            X,
            dtype=None,
            accept_sparse=False,
            ensure_all_finite=True,
            ensure_min_samples=1,
            input_name="X",
            estimator=self,
        )
        validate_data(self, X, reset=True, skip_check_array=True)
        key = self.sensitive
        if isinstance(X, pd.DataFrame):
            if isinstance(key, str):
                if key not in X.columns:
                    raise ValueError(
                        f"sensitive={key!r} is not a column of X ({X.shape[1]} columns)."
                    )
                column = X[key]
            else:
                column = X.iloc[:, self._position(key, X.shape[1])]
            column.attrs = dict(X.attrs)  # the reports' channel, if they carry one
            return column
        if isinstance(key, str):
            raise ValueError(
                f"sensitive={key!r} names a column, but X has no column names: pass its "
                "position, or X as a DataFrame."
            )
        arr = X if isinstance(X, np.ndarray) else np.asarray(X, dtype=object)
        return arr[:, self._position(key, arr.shape[1])]

    @staticmethod
    def _position(key, width):
        if not -width <= int(key) < width:
            raise ValueError(f"sensitive={key} is out of range: X has {width} columns.")
        return int(key)

    def _estimator(self, channel, codes):
        stats = channel.statistics(codes, keep_reports=True)
        return EMEstimator(mechanism=channel).fit_statistics(stats)

    def _clip_bounds(self):
        clip = self.clip
        if len(clip) != 2:
            raise ValueError(f"clip must be a pair (low, high), got {clip!r}.")
        low, high = clip
        low = -np.inf if low is None else float(low)
        high = np.inf if high is None else float(high)
        if not low < high or not low >= 0:
            raise ValueError(
                f"clip=({low}, {high}) must satisfy 0 <= low < high: sample weights are "
                "non-negative."
            )
        return low, high

    @property
    def epsilon_spent_(self) -> float:
        """The budget one user spends: the group, reported once."""
        check_is_fitted(self, "sample_weight_")
        return self._epsilon_spent

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.input_tags.categorical = True
        tags.input_tags.string = True
        tags.non_deterministic = True
        return tags


def _channel_inverse(channel, L, codes):
    """``h_s(r_i)`` for every row and group: the channel's right inverse at the
    row's report (one-symbol channels: ``H = Q^T (Q Q^T)^{-1}``)."""
    if not isinstance(channel, CategoricalChannel):
        raise ValueError(
            f"method='inverse' needs a one-symbol channel's matrix; {channel!r} sends "
            "bit vectors. Use method='posterior'."
        )
    Q = np.asarray(channel.matrix(), dtype=float)
    H = Q.T @ np.linalg.inv(Q @ Q.T)  # (n_outputs, k), Q H = I
    return H[np.asarray(codes, dtype=np.int64)]
