"""The empirical (unbiased) estimator and the significance-threshold estimator."""

from numbers import Real

import numpy as np
from scipy.stats import norm
from sklearn.utils._param_validation import Interval, StrOptions

from ._base import DistributionEstimator
from ._projection import clip_and_normalize, project_to_simplex

__all__ = ["EmpiricalEstimator", "ThresholdEstimator"]


class EmpiricalEstimator(DistributionEstimator):
    """The empirical estimator: the channel's linear unbiased inverse ("emp").

    For every mechanism here the estimate of each category is
    ``a(x) * f(x) + b(x)`` where ``f(x)`` is the observed frequency of the
    statistic attached to ``x`` (a report value, a bit, a set membership)
    (Kairouz et al. 2016; Murakami & Kawamoto 2019, Sec. 2.5). It is unbiased,
    but entries can be negative and need not sum to one; ``projection`` maps
    it onto the probability simplex.

    Parameters
    ----------
    projection : {None, "simplex", "clip"}, default=None
        ``None`` keeps the unbiased estimate; ``"simplex"`` is the Euclidean
        projection onto the simplex (equal to Wang et al.'s "Norm-Sub");
        ``"clip"`` clips negatives and rescales.
    mechanism : BaseMechanism, Channel, dict or None, default=None
        The mechanism that produced the reports, when they do not carry it.

    Attributes
    ----------
    channel_ : Channel
    categories_ : ndarray of shape (k,)
    statistics_ : ReportStatistics
    n_reports_ : int
    distribution_ : ndarray of shape (k,)
    unbiased_distribution_ : ndarray of shape (k,)
        The estimate before projection.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp import RandomizedResponse, EmpiricalEstimator
    >>> rng = np.random.default_rng(0)
    >>> X = rng.choice(["a", "b", "c"], p=[0.6, 0.3, 0.1], size=(20000, 1))
    >>> mech = RandomizedResponse(epsilon=2.0, categories=["a", "b", "c"],
    ...                           random_state=0)
    >>> est = EmpiricalEstimator().fit(mech.fit_transform(X))
    >>> est.distribution_.round(1).tolist()
    [0.6, 0.3, 0.1]
    """

    _parameter_constraints = {
        **DistributionEstimator._parameter_constraints,
        "projection": [None, StrOptions({"simplex", "clip"})],
    }

    def __init__(self, *, projection=None, mechanism=None):
        self.projection = projection
        self.mechanism = mechanism

    def _estimate(self):
        unbiased = self.channel_.unbiased_estimate(self.statistics_)
        if self.projection == "simplex":
            p = project_to_simplex(unbiased)
        elif self.projection == "clip":
            p = clip_and_normalize(unbiased)
        else:
            p = unbiased
        return p, {"unbiased": unbiased}

    @property
    def unbiased_distribution_(self):
        """The unbiased estimate before any projection."""
        return self._fitted_result()[1]["unbiased"].copy()


def threshold_estimate(channel, stats, alpha):
    """Significance-threshold estimate (SPEC 3) and its threshold.

    Keeps the unbiased estimate where it exceeds
    ``T(x) = Phi^-1(1 - alpha / k) * sqrt(Var0(x))`` (Bonferroni) and spreads
    the remaining mass uniformly over the categories below the threshold; if
    the kept mass exceeds one it is rescaled to one and the rest get zero.
    """
    p_hat = channel.unbiased_estimate(stats)
    k = p_hat.size
    threshold = norm.ppf(1.0 - alpha / k) * np.sqrt(channel.null_variance(stats.n))
    kept = p_hat > threshold
    total = float(p_hat[kept].sum())
    p = np.where(kept, p_hat, 0.0)
    below = ~kept
    if total > 1.0 or not below.any():
        if total > 0:
            p = p / total
        else:  # nothing significant and nothing below: cannot happen for k >= 1
            p = np.full(k, 1.0 / k)
    else:
        p[below] = (1.0 - total) / below.sum()
    return p, threshold, kept


class ThresholdEstimator(DistributionEstimator):
    """Empirical estimate with a significance threshold ("emp+thr").

    Following Wang et al. (2017) and Murakami & Kawamoto (2019, Sec. 6.2),
    estimates below ``T(x) = Phi^-1(1 - alpha / k) sqrt(Var0(x))`` (Var0 the
    variance of the unbiased estimate when p(x) = 0, Bonferroni-corrected
    over the k categories) are treated as noise: the mass not kept,
    ``1 - sum(kept)``, is spread uniformly over them (SPEC 3).

    Parameters
    ----------
    alpha : float in (0, 1), default=0.05
        Family-wise significance level.
    mechanism : BaseMechanism, Channel, dict or None, default=None
        The mechanism that produced the reports, when they do not carry it.

    Attributes
    ----------
    channel_ : Channel
    categories_ : ndarray of shape (k,)
    statistics_ : ReportStatistics
    n_reports_ : int
    distribution_ : ndarray of shape (k,)
    threshold_ : ndarray of shape (k,)
        T(x) for each category.
    significant_ : ndarray of bool of shape (k,)
        Categories whose estimate was kept.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp import UtilityOptimizedRR, ThresholdEstimator
    >>> cats = list(range(10))
    >>> X = np.random.default_rng(0).choice(3, size=(5000, 1))
    >>> mech = UtilityOptimizedRR(epsilon=1.0, sensitive=[0, 9], categories=cats,
    ...                           random_state=0)
    >>> est = ThresholdEstimator().fit(mech.fit_transform(X))
    >>> bool(np.isclose(est.distribution_.sum(), 1.0))
    True
    """

    _parameter_constraints = {
        **DistributionEstimator._parameter_constraints,
        "alpha": [Interval(Real, 0, 1, closed="neither")],
    }

    def __init__(self, alpha=0.05, *, mechanism=None):
        self.alpha = alpha
        self.mechanism = mechanism

    def _estimate(self):
        p, threshold, kept = threshold_estimate(
            self.channel_, self.statistics_, self.alpha
        )
        return p, {"threshold": threshold, "significant": kept}

    @property
    def threshold_(self):
        """The significance threshold T(x) of each category."""
        return self._fitted_result()[1]["threshold"].copy()

    @property
    def significant_(self):
        """Mask of the categories whose estimate exceeded the threshold."""
        return self._fitted_result()[1]["significant"].copy()
