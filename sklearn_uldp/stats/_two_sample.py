"""Did the distribution change? A two-sample test on privatized uploads."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.stats import chi2, norm

from ..estimators._projection import project_to_simplex
from ..exceptions import ReportMismatchError
from ..mechanisms._block_design import UtilityOptimizedBlockDesignChannel
from ..mechanisms._channel import ReportStatistics
from ..mechanisms._rappor import UnaryEncodingChannel

__all__ = ["TwoSampleResult", "two_sample_test"]


@dataclass(frozen=True)
class TwoSampleResult:
    """Result of :func:`two_sample_test`.

    Attributes
    ----------
    statistic : float
        The test statistic.
    dof : int or None
        Degrees of freedom of its chi-square null distribution (None for
        the Bonferroni max-z test).
    pvalue : float
    method : str
        ``"chi2-homogeneity"``, ``"wald-bits"`` or ``"bonferroni-z"``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp import EmpiricalEstimator, RandomizedResponse
    >>> from sklearn_uldp.stats import two_sample_test
    >>> mech = RandomizedResponse(1.0, categories=[0, 1, 2], random_state=0).fit()
    >>> X = np.random.default_rng(0).choice(3, size=(4000, 1))
    >>> first = EmpiricalEstimator().fit(mech.transform(X[:2000]))
    >>> second = EmpiricalEstimator().fit(mech.transform(X[2000:]))
    >>> result = two_sample_test(first, second)
    >>> result.method, result.dof
    ('chi2-homogeneity', 2)
    >>> statistic, dof, pvalue = result  # unpacks like scipy's results
    """

    statistic: float
    dof: int | None
    pvalue: float
    method: str

    def __iter__(self):  # statistic, dof, pvalue = two_sample_test(a, b)
        return iter((self.statistic, self.dof, self.pvalue))


def _as_statistics(obj, which):
    if isinstance(obj, ReportStatistics):
        return obj
    stats = getattr(obj, "statistics_", None)
    if isinstance(stats, ReportStatistics):
        return stats
    raise TypeError(
        f"{which} must be a ReportStatistics (channel.statistics(codes)) or a "
        f"fitted distribution estimator; got {type(obj).__name__}."
    )


def two_sample_test(a: ReportStatistics | Any, b: ReportStatistics | Any) -> TwoSampleResult:
    """Test whether two uploads of the same channel come from one distribution.

    Under the null hypothesis the true values of both uploads are drawn from
    the same distribution p, so their reports have the same distribution.
    The test works on the sufficient statistics alone:

    * one-symbol reports (RR, uRR, Hadamard response, ...): Pearson's
      chi-square test of homogeneity of the two histograms of outputs
      (outputs never seen in either upload dropped), with ``J - 1`` degrees
      of freedom for J outputs seen. Since the channel is injective on
      distributions, equal output distributions mean equal p;
    * RAPPOR-family bit vectors (RAPPOR, OUE, uRAP, uOUE): a Wald test on the
      difference of the bit frequencies with their exact covariance. Given
      x the bits are independent and only x's own bit depends on x, so one
      report's bits have covariance ``diag(m (1 - m)) + diag(u^2) - u u^T``
      with ``u = p / a`` (``a`` the slope of the linear estimator); it is
      evaluated at the pooled estimate. Chi-square with one degree of
      freedom per bit (one fewer when every report sets exactly one bit);
    * other bit vectors (uBD): the largest absolute z-score of the
      difference of the two linear estimates, Bonferroni-corrected over the
      k categories (valid whatever the correlations; conservative).

    Parameters
    ----------
    a, b : ReportStatistics or fitted DistributionEstimator
        Statistics of the two uploads (or estimators fitted on them), from
        the same channel.

    Returns
    -------
    result : TwoSampleResult
        ``statistic``, ``dof``, ``pvalue`` (also unpackable in that order)
        and ``method``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp import UtilityOptimizedRR
    >>> from sklearn_uldp.stats import two_sample_test
    >>> mech = UtilityOptimizedRR(1.0, sensitive=[0], categories=[0, 1, 2],
    ...                           random_state=0).fit()
    >>> rng = np.random.default_rng(0)
    >>> def upload(p):
    ...     X = rng.choice(3, p=p, size=(5000, 1))
    ...     return mech.channel_.statistics(mech.channel_.encode_reports(mech.transform(X)))
    >>> same = two_sample_test(upload([.5, .3, .2]), upload([.5, .3, .2]))
    >>> changed = two_sample_test(upload([.5, .3, .2]), upload([.4, .3, .3]))
    >>> bool(same.pvalue > 0.01), bool(changed.pvalue < 1e-6), changed.dof
    (True, True, 2)
    """
    sa, sb = _as_statistics(a, "a"), _as_statistics(b, "b")
    channel = sa.channel
    if sb.channel != channel:
        raise ReportMismatchError(
            "The two uploads come from different channels "
            f"({', '.join(channel.describe_difference(sb.channel))}); a "
            "two-sample test needs reports of the same mechanism."
        )
    na, nb = int(sa.n), int(sb.n)
    if na == 0 or nb == 0:
        raise ValueError("Both uploads need at least one report.")
    if channel.histogram_reports:
        return _homogeneity(np.asarray(sa.counts, float), np.asarray(sb.counts, float))
    if isinstance(channel, UnaryEncodingChannel) and not isinstance(
        channel, UtilityOptimizedBlockDesignChannel
    ):
        return _wald_bits(channel, sa, sb)
    return _bonferroni_z(channel, sa, sb)


def _homogeneity(ca, cb):
    total = ca + cb
    seen = total > 0
    ca, cb, total = ca[seen], cb[seen], total[seen]
    dof = int(seen.sum()) - 1
    if dof < 1:
        return TwoSampleResult(0.0, 0, 1.0, "chi2-homogeneity")
    na, nb = ca.sum(), cb.sum()
    ea, eb = total * na / (na + nb), total * nb / (na + nb)
    stat = float(((ca - ea) ** 2 / ea).sum() + ((cb - eb) ** 2 / eb).sum())
    return TwoSampleResult(stat, dof, float(chi2.sf(stat, dof)), "chi2-homogeneity")


def _wald_bits(channel, sa, sb):
    na, nb = sa.n, sb.n
    fa, fb = sa.counts / na, sb.counts / nb
    pooled = sa + sb
    m = pooled.counts / pooled.n
    p = project_to_simplex(channel.unbiased_estimate(pooled))
    u = p / channel.coef_a
    w = m * (1.0 - m) + u**2
    keep = w > 0
    d, u, w = (fa - fb)[keep], u[keep], w[keep]
    scale = 1.0 / na + 1.0 / nb
    s = float((u**2 / w).sum())
    quad = float((d**2 / w).sum())
    if 1.0 - s > 1e-9:  # Sherman-Morrison
        quad += float((d * u / w).sum()) ** 2 / (1.0 - s)
        dof = int(keep.sum())
    else:  # every report sets exactly one bit: diag(1/w) is a g-inverse
        dof = int(keep.sum()) - 1
    if dof < 1:
        return TwoSampleResult(0.0, 0, 1.0, "wald-bits")
    stat = quad / scale
    return TwoSampleResult(stat, dof, float(chi2.sf(stat, dof)), "wald-bits")


def _bonferroni_z(channel, sa, sb):
    pooled = sa + sb
    p = project_to_simplex(channel.unbiased_estimate(pooled))
    var = channel.estimator_variance(p, sa.n) + channel.estimator_variance(p, sb.n)
    diff = channel.unbiased_estimate(sa) - channel.unbiased_estimate(sb)
    ok = var > 0
    if not ok.any():
        return TwoSampleResult(0.0, None, 1.0, "bonferroni-z")
    z = float(np.max(np.abs(diff[ok]) / np.sqrt(var[ok])))
    pvalue = min(1.0, int(ok.sum()) * 2.0 * float(norm.sf(z)))
    return TwoSampleResult(z, None, pvalue, "bonferroni-z")
