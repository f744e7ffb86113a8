"""The empirical (unbiased) estimator and the significance-threshold estimator."""

from __future__ import annotations

from numbers import Real
from typing import Any, Literal

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from ..mechanisms._base import BaseMechanism
from ..mechanisms._channel import Channel
from ..utils._docstrings import fill_doc
from ._base import ESTIMATOR_DOCS, DistributionEstimator
from ._projection import clip_and_normalize, project_to_simplex
from ._significance import significance_threshold

__all__ = ["EmpiricalEstimator", "ThresholdEstimator"]


@fill_doc(ESTIMATOR_DOCS)
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
    %(mechanism_and_fitted)s
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

    def __init__(
        self,
        *,
        projection: Literal["simplex", "clip"] | None = None,
        mechanism: BaseMechanism | Channel | dict[str, Any] | None = None,
    ) -> None:
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

    def _uncertainty_method(self):
        return "linear" if self.projection is None else "bootstrap"

    @property
    def unbiased_distribution_(self) -> np.ndarray:
        """The unbiased estimate before any projection."""
        return self._fitted_result()[1]["unbiased"].copy()


def threshold_estimate(channel, stats, alpha):
    """Significance-threshold estimate and its threshold.

    Keeps the unbiased estimate where it exceeds
    ``T(x) = Phi^-1(1 - alpha / k) * sqrt(Var0(x))`` (Bonferroni; Wang et al.
    2017, Murakami & Kawamoto 2019, Sec. 6.2) and spreads the remaining mass
    uniformly over the categories below the threshold; if the kept mass
    exceeds one it is rescaled to one and the rest get zero.

    Categories with an exact estimate (the channel's ``exact_categories``) keep it
    and never receive mass, and an estimate equal to a zero threshold
    (``p_hat == T == 0``: no report of the category, and none expected when
    p(x) = 0) is not "below" it: it stays at zero. Otherwise the left-over
    mass of the sensitive categories would be spread over every empty
    non-sensitive category, which makes emp+thr worse than emp on exactly
    the utility-optimized mechanisms.

    Returns
    -------
    p : ndarray of shape (k,)
    threshold : ndarray of shape (k,)
    kept : ndarray of bool of shape (k,)
        Categories whose estimate was kept (significant or exact).
    """
    p_hat, threshold, exact = significance_threshold(channel, stats, alpha)
    k = p_hat.size
    kept = exact | (p_hat > threshold)
    p = np.where(kept, np.maximum(p_hat, 0.0), 0.0)
    total = float(p.sum())
    # Only a category whose estimate is statistically indistinguishable from
    # noise shares the left-over mass; p_hat == T == 0 is "no evidence and
    # no noise", not "insignificant".
    below = ~kept & (threshold > 0.0)
    if total > 1.0 or not below.any():
        if total > 0:
            p = p / total
        else:  # nothing kept and nothing below: spread over all
            p = np.full(k, 1.0 / k)
    else:
        p[below] = (1.0 - total) / below.sum()
    return p, threshold, kept


@fill_doc(ESTIMATOR_DOCS)
class ThresholdEstimator(DistributionEstimator):
    """Empirical estimate with a significance threshold ("emp+thr").

    Following Wang et al. (2017) and Murakami & Kawamoto (2019, Sec. 6.2),
    estimates below ``T(x) = Phi^-1(1 - alpha / k) sqrt(Var0(x))`` (Var0 the
    variance of the unbiased estimate when p(x) = 0, Bonferroni-corrected
    over the k categories) are treated as noise: the mass not kept,
    ``1 - sum(kept)``, is spread uniformly over them. Categories whose
    estimate is exact (reported only through invertible outputs, such as
    non-sensitive values under uRR or uRAP) keep their estimate and never
    receive that mass.

    Parameters
    ----------
    alpha : float in (0, 1), default=0.05
        Family-wise significance level.
    %(mechanism_and_fitted)s
    threshold_ : ndarray of shape (k,)
        T(x) for each category.
    significant_ : ndarray of bool of shape (k,)
        Categories whose estimate was kept (above the threshold, or exact).

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

    def __init__(
        self,
        alpha: float = 0.05,
        *,
        mechanism: BaseMechanism | Channel | dict[str, Any] | None = None,
    ) -> None:
        self.alpha = alpha
        self.mechanism = mechanism

    def _estimate(self):
        p, threshold, kept = threshold_estimate(self.channel_, self.statistics_, self.alpha)
        return p, {"threshold": threshold, "significant": kept}

    @property
    def threshold_(self) -> float:
        """The significance threshold T(x) of each category."""
        return self._fitted_result()[1]["threshold"].copy()

    @property
    def significant_(self) -> np.ndarray:
        """Mask of the categories whose estimate exceeded the threshold."""
        return self._fitted_result()[1]["significant"].copy()
