"""Joint distribution of two privatized columns, and a test of independence."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from scipy.stats import chi2

from ..estimators._em import maximize_likelihood
from ..exceptions import ReportMismatchError
from ..mechanisms._base import as_channel
from ..mechanisms._reports import get_channel
from ..utils._random import check_random_generator
from ..utils._typing import RandomStateLike, ReportsLike

if TYPE_CHECKING:
    from ..mechanisms._base import BaseMechanism
    from ..mechanisms._channel import Channel

__all__ = ["AssociationResult", "association_test", "joint_distribution"]

#: Largest number of (distinct report pair x category pair) likelihood
#: entries held at once; beyond it the joint EM would not fit in memory.
_MAX_ENTRIES = 50_000_000


@dataclass(frozen=True)
class AssociationResult:
    """Result of :func:`association_test`.

    Attributes
    ----------
    statistic : float
        Likelihood-ratio statistic ``2 (LL(joint) - LL(independent))``.
    dof : int
        ``(k_a - 1)(k_b - 1)``.
    pvalue : float
    method : str
        ``"chi2"`` or ``"bootstrap"``.
    joint : ndarray of shape (k_a, k_b)
        Maximum-likelihood joint distribution (rows: categories of column a).
    marginal_a, marginal_b : ndarray
        Maximum-likelihood marginals (the fit under independence).
    categories_a, categories_b : ndarray

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp import RandomizedResponse
    >>> from sklearn_uldp.stats import association_test
    >>> a = np.random.default_rng(0).integers(0, 2, size=(5000, 1))
    >>> ra = RandomizedResponse(2.0, categories=[0, 1], random_state=1).fit_transform(a)
    >>> rb = RandomizedResponse(2.0, categories=[0, 1], random_state=2).fit_transform(a)
    >>> result = association_test(ra, rb)   # the same values: strongly associated
    >>> result.method, result.dof, bool(result.pvalue < 1e-6), result.joint.shape
    ('chi2', 1, True, (2, 2))
    """

    statistic: float
    dof: int
    pvalue: float
    method: str
    joint: np.ndarray = field(repr=False)
    marginal_a: np.ndarray = field(repr=False)
    marginal_b: np.ndarray = field(repr=False)
    categories_a: np.ndarray = field(repr=False)
    categories_b: np.ndarray = field(repr=False)

    def __iter__(self):  # statistic, dof, pvalue = association_test(...)
        return iter((self.statistic, self.dof, self.pvalue))


def _channel_of(reports, mechanism, which):
    carried = get_channel(reports)
    given = as_channel(mechanism) if mechanism is not None else None
    if carried is None and given is None:
        raise ValueError(
            f"reports_{which} do not say which mechanism produced them: pass "
            f"channel_{which}=fitted_mechanism_or_spec."
        )
    if carried is not None and given is not None and carried != given:
        raise ReportMismatchError(
            f"reports_{which} come from {carried!r} but channel_{which} is {given!r}."
        )
    return carried if carried is not None else given


class _PairLikelihood:
    """Q_a(y_i | x) and Q_b(z_i | x') for the distinct report pairs."""

    def __init__(self, channel_a, codes_a, channel_b, codes_b):
        self.ka, self.kb = channel_a.n_categories, channel_b.n_categories
        if channel_a.histogram_reports and channel_b.histogram_reports:
            # One-symbol reports: the histogram of output pairs is sufficient.
            pairs = np.column_stack([np.asarray(codes_a, np.int64), np.asarray(codes_b, np.int64)])
            uniq, counts = np.unique(pairs, axis=0, return_counts=True)
            codes_a, codes_b = uniq[:, 0], uniq[:, 1]
            self.w = counts.astype(float)
        else:
            self.w = np.ones(_n_rows(codes_a))
        if self.w.size * (self.ka + self.kb) > _MAX_ENTRIES:
            raise ValueError(
                f"{self.w.size} distinct report pairs over {self.ka} x {self.kb} "
                "categories are too many for the joint EM; test a sample of the "
                "users, or merge rare categories."
            )
        self.La = np.asarray(channel_a.likelihood(codes_a), dtype=float)
        self.Lb = np.asarray(channel_b.likelihood(codes_b), dtype=float)
        self.n = float(self.w.sum())

    def joint_gradient(self, p):
        P = p.reshape(self.ka, self.kb)
        m = np.einsum("ij,ij->i", self.La @ P, self.Lb)
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.where(m > 0, self.w / m, 0.0)
            ll = float(self.w @ np.log(m))
        g = self.La.T @ (self.Lb * r[:, None]) / self.n
        return g.ravel(), ll

    def marginal_gradient(self, L):
        def gradient(p):
            m = L @ p
            with np.errstate(divide="ignore", invalid="ignore"):
                r = np.where(m > 0, self.w / m, 0.0)
                ll = float(self.w @ np.log(m))
            return L.T @ r / self.n, ll

        return gradient

    def fit(self, tol):
        ka, kb = self.ka, self.kb
        pa, info_a = maximize_likelihood(
            self.marginal_gradient(self.La), np.full(ka, 1.0 / ka), tol=tol
        )
        pb, info_b = maximize_likelihood(
            self.marginal_gradient(self.Lb), np.full(kb, 1.0 / kb), tol=tol
        )
        # start the joint at the independent fit (mixed with uniform so that
        # every cell can move)
        p0 = 0.99 * np.outer(pa, pb).ravel() + 0.01 / (ka * kb)
        P, info = maximize_likelihood(self.joint_gradient, p0, tol=tol, max_iter=100_000)
        ll_ind = self.marginal_gradient(self.La)(pa)[1] + self.marginal_gradient(self.Lb)(pb)[1]
        converged = info["converged"] and info_a["converged"] and info_b["converged"]
        return P.reshape(ka, kb), pa, pb, info["log_likelihood"], ll_ind, converged


def _n_rows(codes):
    return codes.shape[0] if hasattr(codes, "shape") and len(codes.shape) else len(codes)


def _fit_pairs(channel_a, codes_a, channel_b, codes_b):
    lik = _PairLikelihood(channel_a, codes_a, channel_b, codes_b)
    # The statistic is 2 n times a mean log-likelihood difference, and EM's
    # certificate bounds each fit's mean gap by tol: 2 n tol <= 1e-3.
    tol = min(1e-6, 5e-4 / lik.n)
    P, pa, pb, ll_joint, ll_ind, converged = lik.fit(tol)
    stat = max(0.0, 2.0 * (ll_joint - ll_ind))
    return P, pa, pb, stat, converged


def joint_distribution(
    reports_a: ReportsLike,
    reports_b: ReportsLike,
    channel_a: BaseMechanism | Channel | dict[str, Any] | None = None,
    channel_b: BaseMechanism | Channel | dict[str, Any] | None = None,
) -> np.ndarray:
    """Maximum-likelihood joint distribution of two privatized columns.

    Each user privatized two values independently (one mechanism per
    column), so a pair of reports has likelihood ``Q_a(y | x) Q_b(z | x')``:
    the product channel ``Q_a (x) Q_b`` of the pair (x, x'). EM over the
    k_a x k_b cells (on the histogram of report pairs for one-symbol
    reports) gives the joint distribution, as google/rappor's association
    analysis does.

    Parameters
    ----------
    reports_a, reports_b : array-like, DataFrame or sparse matrix
        Reports of the same users, in the same order.
    channel_a, channel_b : BaseMechanism, Channel, dict or None
        The mechanisms, when the reports do not carry them.

    Returns
    -------
    joint : ndarray of shape (k_a, k_b)

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp import RandomizedResponse
    >>> from sklearn_uldp.stats import joint_distribution
    >>> rng = np.random.default_rng(0)
    >>> a = rng.integers(0, 2, size=20000)
    >>> b = np.where(rng.random(20000) < 0.9, a, 1 - a)   # b mostly equals a
    >>> ra = RandomizedResponse(2.0, categories=[0, 1], random_state=1).fit_transform(a[:, None])
    >>> rb = RandomizedResponse(2.0, categories=[0, 1], random_state=2).fit_transform(b[:, None])
    >>> joint_distribution(ra, rb).round(1).tolist()
    [[0.4, 0.1], [0.0, 0.5]]
    """
    return association_test(reports_a, reports_b, channel_a, channel_b).joint


def association_test(
    reports_a: ReportsLike,
    reports_b: ReportsLike,
    channel_a: BaseMechanism | Channel | dict[str, Any] | None = None,
    channel_b: BaseMechanism | Channel | dict[str, Any] | None = None,
    *,
    method: Literal["chi2", "bootstrap"] = "chi2",
    n_resamples: int = 200,
    random_state: RandomStateLike = None,
) -> AssociationResult:
    """Test whether two privatized columns of the same users are independent.

    Fits the joint distribution by EM over the product channel (see
    :func:`joint_distribution`) and the product of the two marginals (the
    maximum-likelihood fit under independence, which separates into one EM
    per column), and compares them with the likelihood-ratio statistic
    ``G = 2 (LL(joint) - LL(marginal_a x marginal_b))``.

    Parameters
    ----------
    reports_a, reports_b : array-like, DataFrame or sparse matrix
        Reports of the same users, in the same order.
    channel_a, channel_b : BaseMechanism, Channel, dict or None, default=None
        The mechanisms, when the reports do not carry them.
    method : {"chi2", "bootstrap"}, default="chi2"
        ``"chi2"``: p-value from the chi-square distribution with
        ``(k_a - 1)(k_b - 1)`` degrees of freedom (Wilks; reliable when the
        fitted cells are away from zero). ``"bootstrap"``: parametric
        bootstrap under independence: ``n_resamples`` datasets of the same
        size are simulated from the fitted marginals through both
        channels, and the p-value is the share of their statistics at
        least as large, ``(1 + #{G* >= G}) / (1 + n_resamples)`` (valid
        also on the boundary, at the cost of refitting).
    n_resamples : int, default=200
        Bootstrap datasets (``method="bootstrap"``).
    random_state : None, int or Generator, default=None
        Seed of the bootstrap simulation.

    Returns
    -------
    result : AssociationResult
        ``statistic``, ``dof``, ``pvalue`` (also unpackable in that order),
        ``method``, the fitted ``joint`` and marginals.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp import UtilityOptimizedRR
    >>> from sklearn_uldp.stats import association_test
    >>> rng = np.random.default_rng(0)
    >>> a = rng.integers(0, 3, size=20000)
    >>> b = np.where(rng.random(20000) < 0.5, a, rng.integers(0, 3, size=20000))
    >>> mech_a = UtilityOptimizedRR(1.0, sensitive=[0], categories=[0, 1, 2], random_state=1)
    >>> mech_b = UtilityOptimizedRR(1.0, sensitive=[0], categories=[0, 1, 2], random_state=2)
    >>> res = association_test(mech_a.fit_transform(a[:, None]),
    ...                        mech_b.fit_transform(b[:, None]))
    >>> res.dof, bool(res.pvalue < 1e-6)
    (4, True)
    """
    if method not in ("chi2", "bootstrap"):
        raise ValueError(f"method must be 'chi2' or 'bootstrap'; got {method!r}.")
    ca = _channel_of(reports_a, channel_a, "a")
    cb = _channel_of(reports_b, channel_b, "b")
    codes_a, codes_b = ca.encode_reports(reports_a), cb.encode_reports(reports_b)
    n = _n_rows(codes_a)
    if _n_rows(codes_b) != n:
        raise ValueError(
            f"reports_a has {n} reports and reports_b {_n_rows(codes_b)}: the "
            "test needs the two reports of each user, in the same order."
        )
    P, pa, pb, stat, converged = _fit_pairs(ca, codes_a, cb, codes_b)
    if not converged:
        warnings.warn(
            "EM did not reach its tolerance; the statistic is approximate.",
            RuntimeWarning,
            stacklevel=2,
        )
    dof = (ca.n_categories - 1) * (cb.n_categories - 1)
    if method == "chi2":
        pvalue = float(chi2.sf(stat, dof))
    else:
        rng = check_random_generator(random_state)
        exceed = 0
        for _ in range(int(n_resamples)):
            xa = rng.choice(ca.n_categories, size=n, p=pa)
            xb = rng.choice(cb.n_categories, size=n, p=pb)
            sa = _sampled_codes(ca, ca.sample(xa, rng))
            sb = _sampled_codes(cb, cb.sample(xb, rng))
            exceed += _fit_pairs(ca, sa, cb, sb)[3] >= stat
        pvalue = (1.0 + exceed) / (1.0 + int(n_resamples))
    return AssociationResult(
        float(stat),
        int(dof),
        float(pvalue),
        method,
        P,
        pa,
        pb,
        np.asarray(ca.categories),
        np.asarray(cb.categories),
    )


def _sampled_codes(channel, out):
    # one-symbol samplers return output codes already; bit vectors go
    # through the channel's own encoding (dense or sparse)
    return channel.encode_reports(out) if channel.bit_vector_reports else out
