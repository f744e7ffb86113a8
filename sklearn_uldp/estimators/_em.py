"""Maximum-likelihood estimation by (accelerated) EM."""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Callable
from numbers import Integral, Real
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike
from sklearn.utils._param_validation import Interval, StrOptions

from ..exceptions import ConvergenceWarning
from ..mechanisms._base import BaseMechanism
from ..mechanisms._channel import Channel
from ..utils._docstrings import fill_doc
from ._base import ESTIMATOR_DOCS, DistributionEstimator
from ._empirical import threshold_estimate
from ._projection import project_to_simplex

__all__ = ["EMEstimator", "maximize_likelihood"]

#: ``gradient(p) -> (g, log_likelihood)``, as Channel.em_gradient.
_Gradient = Callable[[np.ndarray], tuple[np.ndarray, float]]

# Mass of the uniform distribution mixed into the initial point: EM updates
# are multiplicative, so a category that starts at exactly zero never moves.
_INIT_UNIFORM_WEIGHT = 1e-2
# Working sets (see maximize_likelihood): a bounded number of them before EM
# falls back to all categories.
_MAX_WORKING_SETS = 10
# Iterations without zeroing steps after one that failed (see _squarem).
_CLIP_PAUSE = 10
# tol="auto": this fraction of the statistical scale of the duality gap,
# df / (2 n) nats a report, df the parameters the reports see only through
# noise (the categories of positive null variance, minus one; Wilks). Until
# this release it was 0.01 (k - 1) / (2 n): every category counted, which
# for a utility-optimized channel (exact non-sensitive estimates, df far
# below k - 1) stopped EM early by the scale of the exact part, and for the
# bit-vector channels (df = k - 1) asked twice the EM evaluations that 0.04
# needs at k = 1000 (OUE, n = 10^6: 87 against 45). At 4 % the
# optimization error in parameter space is about a fifth of the statistical
# error (sqrt(0.04)); the default estimate's accuracy on the estimator grid
# is unchanged (docs/estimator_choice.md, "The tolerance").
_AUTO_TOL_FRACTION = 0.04


def auto_tol(df: int, n_reports: int) -> float:
    """The duality-gap tolerance of ``EMEstimator(tol="auto")``.

    ``_AUTO_TOL_FRACTION df / (2 n)``, clipped to [1e-8, 1e-3].

    Parameters
    ----------
    df : int
        Parameters the reports see through noise: the categories whose
        estimate has a positive null variance, minus one (at least 1).
    n_reports : int

    Returns
    -------
    tol : float

    Examples
    --------
    >>> from sklearn_uldp.estimators._em import auto_tol
    >>> round(auto_tol(999, 1_000_000), 12)
    1.998e-05
    """
    scale = max(int(df), 1) / (2.0 * max(n_reports, 1))
    return float(np.clip(_AUTO_TOL_FRACTION * scale, 1e-8, 1e-3))


def noisy_df(channel: Any, stats: Any) -> int:
    """The categories whose estimate has a positive null variance, minus one
    (at least 1): the parameters the reports see only through noise (all k
    but one for LDP channels; the sensitive block for utility-optimized ones)."""
    null_variance = getattr(channel, "null_variance", None)
    if null_variance is None:
        return max(int(channel.n_categories) - 1, 1)
    noisy = np.asarray(null_variance(stats.n, stats=stats)) > 0
    return max(int(np.count_nonzero(noisy)) - 1, 1)


def maximize_likelihood(
    gradient: _Gradient,
    p0: ArrayLike,
    *,
    tol: float = 1e-5,
    max_iter: int = 10_000,
    acceleration: Literal["squarem"] | None = "squarem",
    restrict: Callable[[np.ndarray], _Gradient | None] | None = None,
    callback: Callable[[int, float, float], object] | None = None,
) -> tuple[np.ndarray, dict[str, Any]]:
    """Maximize a channel likelihood over the simplex by EM (optionally SQUAREM).

    Parameters
    ----------
    gradient : callable
        ``gradient(p) -> (g, log_likelihood)`` with
        ``g(x) = (1/n) sum_i Q(y_i|x) / m_p(y_i)``; the EM map is ``p * g``.
    p0 : ndarray of shape (k,)
        Strictly positive starting point in the simplex.
    tol : float
        Stop when the duality gap ``max(g) - 1`` is at most ``tol``. By
        concavity, ``(LL(p*) - LL(p)) / n <= max(g) - 1`` for the maximum
        likelihood point ``p*``, so ``tol`` bounds the per-report
        log-likelihood left on the table: a certificate, not a heuristic.
    max_iter : int
        Maximum number of iterations (each costs one to three EM maps).
    acceleration : {"squarem", None}
        SQUAREM (Varadhan & Roland 2008, scheme S3) extrapolates two EM
        maps, with a monotone fall-back and without the optional stabilising
        map (two evaluations an iteration). Categories the extrapolation
        drives below zero are set to zero (an active set: EM maps keep them
        there, and they restart from a small mass when the optimality
        conditions ask for them), so the acceleration does not stall when
        the maximum-likelihood point has zeros; after a zeroing step that
        lowers the likelihood, steps are shrunk into the simplex instead for
        a few iterations.
    restrict : callable or None
        ``restrict(active) -> gradient on the categories of the mask active``
        (or None when that would not be markedly cheaper), as
        :meth:`~sklearn_uldp.mechanisms.Channel.restricted_em_gradient`.
        Given, EM runs on working sets: the categories whose EM factor
        exceeds one at the start (the others are on their way to zero),
        later those with mass plus those violating the optimality conditions
        ``g <= 1 + tol``. Each working set is solved to ``tol``, then the
        gradient over all categories either certifies the result or names
        the categories to add; so the certificate is the same as without
        working sets, and each step costs in proportion to the working set.
    callback : callable or None
        ``callback(n_iter, log_likelihood, gap)`` after every iteration
        (``gap`` is that of the categories in play: of the working set
        while EM runs on one), e.g. to show progress.

    Returns
    -------
    p, info : ndarray, dict
        ``info`` holds ``n_iter``, ``converged``, ``gap``, ``log_likelihood``,
        ``n_evaluations`` and ``working_sets`` (the size of each working set).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp import RandomizedResponse
    >>> from sklearn_uldp.estimators import maximize_likelihood
    >>> channel = RandomizedResponse(epsilon=1.0, categories=[0, 1, 2]).fit().channel_
    >>> stats = channel.statistics(np.array([0] * 50 + [1] * 30 + [2] * 20))
    >>> p, info = maximize_likelihood(lambda q: channel.em_gradient(stats, q),
    ...                               np.full(3, 1 / 3))
    >>> p.round(2).tolist(), info["converged"]
    ([0.77, 0.23, 0.0], True)
    """
    p = np.asarray(p0, dtype=float)
    k = p.size
    g, ll = gradient(p)
    info: dict[str, Any] = {"n_iter": 0, "n_evaluations": 1, "working_sets": []}
    # First working set: the categories EM would raise, or that keep at least
    # an average share after one EM map; the others are on their way down.
    active = (g > 1.0) | (p * g >= 1.0 / k)
    # The mass each category last had in play: one that re-enters starts
    # there (from a tiny mass EM would take many maps to raise it).
    last = p.copy()
    while (
        restrict is not None
        and g.max() - 1.0 > tol
        and info["n_iter"] < max_iter
        and len(info["working_sets"]) < _MAX_WORKING_SETS
    ):
        restricted = restrict(active)
        if restricted is None:
            break
        q = _normalize(np.where(p[active] > 0.0, p[active], last[active]))
        g_active, ll_active = restricted(q)
        info["n_evaluations"] += 1
        if not np.isfinite(ll_active):  # reports impossible without the others
            del restricted
            break
        info["working_sets"].append(int(active.sum()))
        q, _, _, sub = _squarem(
            restricted,
            q,
            g_active,
            ll_active,
            tol=tol,
            max_iter=max_iter - info["n_iter"],
            acceleration=acceleration,
            callback=_shifted(callback, info["n_iter"]),
        )
        del restricted  # free the working set's store before the full pass
        info["n_iter"] += sub["n_iter"]
        info["n_evaluations"] += sub["n_evaluations"]
        p = np.zeros(k)
        p[active] = q
        last[active] = np.maximum(q, _INIT_UNIFORM_WEIGHT / k)
        g, ll = gradient(p)
        info["n_evaluations"] += 1
        # Solved to tol on the working set, so any gap left is outside it:
        # the categories that should have mass enter, those that faded leave.
        active = (active & ((p > tol / k) | (g >= 1.0))) | (g > 1.0 + tol)
    if g.max() - 1.0 > tol and (p == 0.0).any():
        # All categories from here on. EM maps keep zeros at zero: those left
        # out start again from their last mass.
        p = _normalize(np.where(p == 0.0, last, p))
        g, ll = gradient(p)
        info["n_evaluations"] += 1
    p, g, ll, run = _squarem(
        gradient,
        p,
        g,
        ll,
        tol=tol,
        max_iter=max_iter - info["n_iter"],
        acceleration=acceleration,
        callback=_shifted(callback, info["n_iter"]),
    )
    info["n_iter"] += run["n_iter"]
    info["n_evaluations"] += run["n_evaluations"]
    info.update(
        converged=bool(g.max() - 1.0 <= tol), gap=float(g.max() - 1.0), log_likelihood=float(ll)
    )
    return p, info


def _shifted(callback, offset):
    """``callback`` with iteration numbers counted from ``offset``."""
    if callback is None:
        return None
    return lambda it, ll, gap: callback(offset + it, ll, gap)


def _squarem(gradient, p, g, ll, *, tol, max_iter, acceleration, callback=None):
    """EM (or SQUAREM) from ``p``, whose ``gradient`` is ``(g, ll)``, to ``tol``.

    Returns ``p, g, ll`` at the end and ``{"n_iter", "n_evaluations"}``
    (evaluations after the given one).
    """
    n_eval = 0
    it = 0
    clip_after = 0  # first iteration that may set categories to zero
    for it in range(1, max_iter + 1):  # noqa: B007 - 'it' is reported
        if it > 1 and callback is not None:
            callback(it - 1, ll, float(g.max() - 1.0))
        if g.max() - 1.0 <= tol:
            it -= 1
            break
        revive = (p == 0.0) & (g > 1.0 + tol)
        if revive.any():
            # Zeroed categories the optimality conditions want back: EM
            # cannot move a zero, so they restart from a small mass.
            p = _normalize(np.where(revive, _INIT_UNIFORM_WEIGHT / p.size, p))
            g, ll = gradient(p)
            n_eval += 1
        p1 = _normalize(p * g)
        if acceleration is None:
            p = p1
            g, ll = gradient(p)
            n_eval += 1
            continue
        g1, ll1 = gradient(p1)
        p2 = _normalize(p1 * g1)
        n_eval += 1
        r = p1 - p
        v = (p2 - p1) - r
        norm_v = _norm(v)
        if norm_v == 0.0:
            p = p2
            g, ll = gradient(p)
            n_eval += 1
            continue
        alpha = min(-1.0, -_norm(r) / norm_v)
        step = p - 2.0 * alpha * r + alpha**2 * v
        llc = -np.inf
        if alpha < -1.0 and step.min() <= 0.0 and it >= clip_after:
            # Categories the extrapolation drives below zero are set to zero
            # (an active set: EM maps keep them there until the gradient
            # asks for them back, see above); shrinking the step until it
            # stays in the simplex stalls the acceleration as soon as a
            # category of the maximum-likelihood point is zero.
            candidate = _normalize(np.maximum(step, 0.0))
            gc, llc = gradient(candidate)
            n_eval += 1
            if not (np.isfinite(llc) and llc >= ll1):
                # Too far out: shrink the steps for a while instead.
                clip_after = it + _CLIP_PAUSE
                llc = -np.inf
        if llc == -np.inf:
            # Backtrack towards alpha = -1 (which gives p2, always feasible)
            # until the extrapolation stays strictly inside the simplex.
            while alpha < -1.0 and step.min() <= 0.0:
                alpha = (alpha - 1.0) / 2.0
                if alpha > -1.0 - 1e-3:
                    alpha = -1.0
                step = p - 2.0 * alpha * r + alpha**2 * v
            candidate = p2 if alpha >= -1.0 else _normalize(step)
            gc, llc = gradient(candidate)
            n_eval += 1
        # No stabilising EM map from the extrapolated point (Varadhan &
        # Roland's optional step): the next iteration's first map is that
        # map, so each iteration costs two evaluations instead of three
        # (30-40 % fewer evaluations to the same gap on RR, RAPPOR, OUE and
        # uRAP problems).
        if np.isfinite(llc) and (llc >= ll1 or not np.isfinite(ll1)):
            p, g, ll = candidate, gc, llc
        else:  # monotonicity fall-back: plain EM is guaranteed not to decrease
            p = p2
            g, ll = gradient(p)
            n_eval += 1
    else:
        if it and callback is not None:  # the last iteration (max_iter reached)
            callback(it, ll, float(g.max() - 1.0))
    return p, g, ll, {"n_iter": it, "n_evaluations": n_eval}


def _normalize(p):
    return p / p.sum()


def _norm(v):
    # Not np.linalg.norm: BLAS dispatch of tiny dot products costs
    # milliseconds when the BLAS threads compete for busy cores.
    return float(np.sqrt(np.square(v).sum()))


# Fraction of the pooled block's noise that the MLE keeps (see the docstring
# below and the "Choosing the default estimate" page): 1/2 is the exact value
# for one coordinate whose true value sits on the positivity bound
# (E max(Z, 0)^2 = 1/2); 0.4 is the value the ULDP grid supports: 4 cells of
# 98 lose (TV and l2 together), 4 with 0.37 and 0.42, 10 with 0.3 and 0.5.
_STEIN_FRACTION = 0.4


def shrink_towards_mle(
    log_likelihood: Callable[[np.ndarray], float],
    target: np.ndarray,
    p_mle: np.ndarray,
    ll_max: float,
    df: int,
    *,
    n_pooled: int | None = None,
    deviance_sd: float = 4.0,
    n_bisect: int = 20,
    on_segment: Callable[[float], float] | None = None,
) -> tuple[np.ndarray, float]:
    """Shrink ``target`` towards the maximum-likelihood estimate ``p_mle``.

    Returns ``((1 - w) target + w p_mle, w)`` with ``w`` the larger of two
    weights, with ``gap = ll_max - log_likelihood(target)`` (half the squared
    Fisher distance from ``target`` to the MLE):

    - a Stein weight ``1 - 0.4 (n_pooled - 1) / (2 gap)`` (clipped to
      [0, 1]). Stein's argument shrinks an estimate towards a target by the
      part of its noise the target does not share: for a fixed target all
      of it (James-Stein, ``df - 2``). The significance-threshold target is
      computed from the same reports: it follows the unbiased estimate, and
      so shares the MLE's noise, on the categories it keeps, and pools the
      ``n_pooled`` insignificant ones, whose ``n_pooled - 1`` free
      parameters are the noise it removes. Those categories have small true
      masses, where the MLE sits on or near the positivity bound and keeps
      only a fraction of that noise (1/2 for a mass exactly at the bound);
      0.4 is the fraction the ULDP grid supports.
    - the smallest weight whose point has a log-likelihood within
      ``deviance_sd`` standard deviations ``sqrt(df / 2)`` of the maximum (by
      Wilks' theorem the deviance of the truth is about chi2 with ``df``
      degrees of freedom): never a fit significantly worse than the maximum
      likelihood. The log-likelihood is concave along the segment, so this
      weight is found by bisection.

    See the "Choosing the default estimate" page of the documentation.

    Parameters
    ----------
    log_likelihood : callable
        ``q -> total log-likelihood`` of the reports at ``q``.
    target, p_mle : ndarray of shape (k,)
    ll_max : float
        ``log_likelihood(p_mle)``.
    df : int
        Degrees of freedom of the noisy part of the model.
    n_pooled : int or None, default=None
        Number of categories the target pools (estimates below the
        significance threshold, which share the left-over mass). ``None``
        means all the noisy ones, ``df + 1``.
    deviance_sd : float, default=4.0
    n_bisect : int, default=20
    on_segment : callable or None, default=None
        ``w -> log_likelihood((1 - w) target + w p_mle)``, when it is cheaper
        than ``log_likelihood`` of that point (bit-vector channels:
        :meth:`~sklearn_uldp.mechanisms.Channel.segment_log_likelihood`).
        Every log-likelihood this function needs lies on that segment.

    Returns
    -------
    p : ndarray of shape (k,)
    weight : float

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp.estimators._em import shrink_towards_mle
    >>> ll = lambda q: -float(np.sum((q - [0.5, 0.5]) ** 2)) * 1e4
    >>> p, w = shrink_towards_mle(ll, np.array([1.0, 0.0]), np.array([0.5, 0.5]),
    ...                           0.0, df=1)
    >>> round(w, 2)
    1.0
    """
    if on_segment is None:

        def on_segment(w):
            return log_likelihood((1 - w) * target + w * p_mle)

    gap = ll_max - on_segment(0.0)
    if not gap > 0:
        return p_mle.copy(), 1.0
    if n_pooled is None:
        n_pooled = df + 1
    w_stein = min(1.0, max(0.0, 1.0 - _STEIN_FRACTION * (n_pooled - 1) / (2.0 * gap)))
    slack = deviance_sd * np.sqrt(df / 2.0)
    w_fit = 0.0
    if gap > slack and w_stein < 1.0:  # (the bisection cannot raise w = 1)
        lo, hi = 0.0, 1.0
        for _ in range(n_bisect):
            mid = 0.5 * (lo + hi)
            if on_segment(mid) >= ll_max - slack:
                hi = mid
            else:
                lo = mid
        w_fit = hi
    w = max(w_stein, w_fit)
    return (1.0 - w) * target + w * p_mle, float(w)


@fill_doc(ESTIMATOR_DOCS)
class EMEstimator(DistributionEstimator):
    """Maximum-likelihood estimate of the distribution by EM ("EM").

    The EM reconstruction (iterative Bayesian update; Agrawal & Aggarwal
    2001; Murakami & Kawamoto 2019, Sec. 2.5) repeats
    ``p(x) <- p(x) * (1/n) sum_i Q(y_i|x) / sum_x' Q(y_i|x') p(x')``, computed
    with the channel's structure: on the histogram of outputs for
    categorical reports (O(k) per step for RR/uRR), with two sparse products
    over the set bits for RAPPOR-type reports (once per distinct report
    when reports repeat, in compiled loops on all cores when numba is
    installed). SQUAREM acceleration with zeroing steps and a duality-gap
    stopping rule make it reach the maximum-likelihood estimate (to ``tol``)
    even where plain EM crawls (large k, small epsilon, zeros in the
    estimate).

    Parameters
    ----------
    tol : float or "auto", default="auto"
        Stop when ``max_x g(x) - 1 <= tol``, which bounds the mean
        log-likelihood gap to the maximum likelihood per report. ``"auto"``
        sets it to 4% of the statistical scale of that gap, ``0.04 df /
        (2 n)``, df the categories whose estimate is noisy (positive null
        variance) minus one: by Wilks' theorem the maximum likelihood exceeds
        the likelihood of the truth by about df / 2 nats. Clipped to [1e-8,
        1e-3]. The optimization error is then about a fifth of the
        statistical error in parameter space, at a fraction of the
        iterations a fixed tiny tolerance costs. (Until this release:
        ``0.01 (k - 1) / (2 n)``, twice the iterations at k = 1000 for
        estimates no more accurate; see ``docs/estimator_choice.md``.)
    max_iter : int, default=10000
        Maximum number of (accelerated) iterations.
    init : {"threshold", "uniform", "empirical"} or array-like, default="threshold"
        Starting point: the emp+thr estimate (as in the ULDP paper), the
        uniform distribution, the projected empirical estimate, or a given
        distribution. It is mixed with 1% of the uniform distribution so that
        every category can move.
    acceleration : {"squarem", None}, default="squarem"
        ``None`` runs plain EM.
    working_set : bool, default=True
        Run EM on working sets of categories (see :func:`maximize_likelihood`)
        where the channel makes that cheaper (bit-vector reports, whose
        steps cost in proportion to the set bits of the categories in play).
        The convergence certificate is the same; ``False`` runs every step
        on all categories.
    n_jobs : int or None, default=None
        Threads sharing each EM step on bit-vector reports (RAPPOR, OUE,
        uRAP, uBD), whose steps cost time proportional to the number of
        reports; ``None`` means all cores unless a
        ``joblib.parallel_config`` context sets ``n_jobs`` (threads, not
        processes: the blocks of reports are shared, not copied). The
        estimate does not depend on it (to the last bit). One-symbol
        reports need O(k) per step and ignore it.
    report_store : {"memory", "disk"} or path-like, default="memory"
        Where EM keeps the reports it needs (bit-vector reports, whose
        likelihood has no fixed-size statistic; at most k/8 bytes a
        report). ``"disk"`` keeps them in files under the system's temporary
        directory (``TMPDIR``), a path in files under that existing
        directory: memory then holds one block of reports per thread and
        the last partial block, so fitting chunk by chunk
        (``partial_fit``) keeps a memory that does not grow with the number
        of reports, for an EM step that reads the files back (from the
        operating system's cache when they fit in it). The estimate is
        the same to the last bit. The files are removed with the fitted
        statistics (refit, deletion, or exit). Applies to statistics from
        the next ``fit``/``partial_fit``/``fit_statistics`` on; other
        channels keep only counts and ignore it.
    verbose : int, default=0
        ``1`` shows a progress bar (tqdm, when installed) for fits that last
        more than two seconds, with the iteration, the mean log-likelihood
        per report and the duality gap; ``2`` prints them after every
        iteration instead.
    shrinkage : float or None, default=4.0
        The default estimate is the significance-threshold estimate (emp+thr)
        shrunk towards the maximum-likelihood estimate: by a Stein weight
        that counts only the noise emp+thr removes (the categories it pools),
        and at least far enough that its log-likelihood is within
        ``shrinkage`` standard deviations of the chi-square deviance of the
        maximum (:func:`shrink_towards_mle`). It is within noise of the best
        of emp, emp+thr, projection and MLE across the ULDP paper's grid and
        far better than the MLE at small budgets (see the "Choosing the
        default estimate" page). ``None`` returns the exact
        maximum-likelihood estimate.
    %(mechanism_and_fitted)s
    n_iter_ : int
        Iterations run.
    converged_ : bool
        Whether the duality gap reached ``tol``.
    duality_gap_ : float
        Final ``max(g) - 1`` (over all categories).
    working_sets_ : list of int
        Sizes of the working sets EM ran on, in order (empty when it ran on
        all categories throughout).
    tol_ : float
        The tolerance used (resolved from ``"auto"``).
    log_likelihood_ : float
        Mean log-likelihood per report at the estimate.
    mle_distribution_ : ndarray of shape (k,)
        The maximum-likelihood estimate (equal to ``distribution_`` when
        ``shrinkage=None``). ``n_iter_``, ``converged_`` and
        ``duality_gap_`` describe its fit.
    shrinkage_weight_ : float
        Weight of the maximum-likelihood estimate in ``distribution_`` (1.0
        when ``shrinkage=None``).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp import UtilityOptimizedRAPPOR, EMEstimator
    >>> cats = list("abcdef")
    >>> X = np.random.default_rng(0).choice(cats, p=[.4, .3, .1, .1, .05, .05],
    ...                                     size=(20000, 1))
    >>> mech = UtilityOptimizedRAPPOR(epsilon=2.0, sensitive=["e", "f"],
    ...                               categories=cats, random_state=0)
    >>> em = EMEstimator().fit(mech.fit_transform(X))
    >>> em.converged_, em.distribution_.round(2).tolist()
    (True, [0.39, 0.31, 0.1, 0.1, 0.05, 0.05])
    """

    _parameter_constraints = {
        **DistributionEstimator._parameter_constraints,
        "tol": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "init": [StrOptions({"threshold", "uniform", "empirical"}), "array-like"],
        "acceleration": [None, StrOptions({"squarem"})],
        "working_set": ["boolean"],
        "n_jobs": [None, Integral],
        "report_store": [StrOptions({"memory", "disk"}), str, os.PathLike],
        "verbose": ["verbose"],
        "shrinkage": [None, Interval(Real, 0, None, closed="neither")],
    }

    _needs_reports = True

    def __init__(
        self,
        *,
        tol: float | Literal["auto"] = "auto",
        max_iter: int = 10_000,
        init: Literal["threshold", "uniform", "empirical"] | ArrayLike = "threshold",
        acceleration: Literal["squarem"] | None = "squarem",
        working_set: bool = True,
        n_jobs: int | None = None,
        report_store: Literal["memory", "disk"] | str | os.PathLike[str] = "memory",
        verbose: int = 0,
        shrinkage: float | None = 4.0,
        mechanism: BaseMechanism | Channel | dict[str, Any] | None = None,
    ) -> None:
        self.tol = tol
        self.max_iter = max_iter
        self.init = init
        self.acceleration = acceleration
        self.working_set = working_set
        self.n_jobs = n_jobs
        self.report_store = report_store
        self.verbose = verbose
        self.shrinkage = shrinkage
        self.mechanism = mechanism

    def _kept_statistics(self, stats):
        store = self.report_store
        if isinstance(store, str) and store == "memory":
            return stats
        if isinstance(store, str) and store == "disk":
            return stats.spill()
        if not os.path.isdir(store):
            raise ValueError(
                f"report_store={store!r} is neither 'memory', 'disk' nor an "
                "existing directory: create the directory, or pass 'disk' for "
                "the system's temporary directory."
            )
        return stats.spill(store)

    def _initial_point(self):
        k = self.channel_.n_categories
        uniform = np.full(k, 1.0 / k)
        if isinstance(self.init, str):
            if self.init == "uniform":
                return uniform
            if self.init == "empirical":
                p = project_to_simplex(self.channel_.unbiased_estimate(self.statistics_))
            else:
                p = threshold_estimate(self.channel_, self.statistics_, 0.05)[0]
        else:
            try:
                p = np.asarray(self.init, dtype=float)
            except (TypeError, ValueError):
                p = None
            # Scaling by the maximum first keeps huge finite weights finite.
            ok = (
                p is not None
                and p.shape == (k,)
                and np.isfinite(p).all()
                and not np.any(p < 0)
                and p.max() > 0
            )
            if ok:
                p = p / p.max()
                p = p / p.sum()
            if not ok or not np.isfinite(p).all():
                raise ValueError(
                    f"init must be a vector of {k} finite non-negative weights "
                    "with a positive sum (a distribution over categories_, "
                    f"normalized to sum to 1), got {self.init!r:.80}. Pass "
                    "e.g. init='uniform' or init=np.ones(k)."
                )
        return (1.0 - _INIT_UNIFORM_WEIGHT) * p + _INIT_UNIFORM_WEIGHT * uniform

    def _estimate(self):
        channel, stats = self.channel_, self.statistics_
        tol = self.tol
        if tol == "auto":
            tol = auto_tol(noisy_df(channel, stats), stats.n)
        init = self._initial_point()
        # The shrinkage checks the likelihood between the threshold estimate
        # and the MLE: the EM passes at its start and end keep their row
        # sums for it (bit-vector channels), so it reads no report again.
        recording = (
            channel.recording_row_sums(stats)
            if self.shrinkage is not None
            else contextlib.nullcontext()
        )
        with recording:
            p, info = self._maximize(init, tol)
            info["tol"] = tol
            info["mle"] = p
            info["shrinkage_weight"] = 1.0
            if self.shrinkage is not None:
                p = self._shrunk(p, info, init)
        return p, info

    def _maximize(self, init, tol):
        channel, stats = self.channel_, self.statistics_
        with _Progress(self.verbose, stats.n, tol) as progress:
            p, info = maximize_likelihood(
                lambda q: channel.em_gradient(stats, q, n_jobs=self.n_jobs),
                init,
                tol=tol,
                max_iter=self.max_iter,
                acceleration=self.acceleration,
                restrict=(
                    (
                        lambda active: channel.restricted_em_gradient(
                            stats, active, n_jobs=self.n_jobs
                        )
                    )
                    if self.working_set
                    else None
                ),
                callback=progress.update,
            )
        if not info["converged"]:
            warnings.warn(
                f"EM stopped after {info['n_iter']} iterations with duality gap "
                f"{info['gap']:.2e} > tol={tol:.2e}. Increase max_iter or tol.",
                ConvergenceWarning,
                stacklevel=4,
            )
        return p, info

    def _shrunk(self, p_mle, info, init):
        """emp+thr shrunk towards the MLE (see :func:`shrink_towards_mle`)."""
        channel, stats = self.channel_, self.statistics_
        target, threshold, kept = threshold_estimate(channel, stats, 0.05)
        noisy = channel.null_variance(stats.n, stats=stats) > 0
        df = max(int(np.count_nonzero(noisy)) - 1, 1)
        # the insignificant categories emp+thr pools (as threshold_estimate does)
        n_pooled = int(np.count_nonzero(~kept & (threshold > 0.0)))

        def log_likelihood(q):
            return channel.em_gradient(stats, q, n_jobs=self.n_jobs)[1]

        # Every log-likelihood needed lies on the segment from the target to
        # the MLE: bit-vector channels then need the per-report sums at its
        # two ends only, not a pass per bisection step. EM ended at the MLE,
        # and (default init) started at (1 - c) target + c uniform: the sums
        # kept from those two passes give both ends (those of the uniform
        # distribution come from the reports' sizes).
        p0_parts = None
        if isinstance(self.init, str) and self.init == "threshold":
            c = _INIT_UNIFORM_WEIGHT
            uniform = np.full(target.size, 1.0 / target.size)
            p0_parts = [(1.0 / (1.0 - c), init), (-c / (1.0 - c), uniform)]
        on_segment = channel.segment_log_likelihood(
            stats, target, p_mle, n_jobs=self.n_jobs, p0_parts=p0_parts
        )
        p, weight = shrink_towards_mle(
            log_likelihood,
            target,
            p_mle,
            info["log_likelihood"],
            df,
            n_pooled=n_pooled,
            deviance_sd=self.shrinkage,
            on_segment=on_segment,
        )
        if weight < 1.0:
            info["log_likelihood"] = on_segment(weight)
        info["shrinkage_weight"] = weight
        return p

    @property
    def tol_(self) -> float:
        """The duality-gap tolerance used."""
        return self._fitted_result()[1]["tol"]

    @property
    def n_iter_(self) -> int:
        """Number of iterations run."""
        return self._fitted_result()[1]["n_iter"]

    @property
    def converged_(self) -> bool:
        """Whether the duality gap reached ``tol``."""
        return self._fitted_result()[1]["converged"]

    @property
    def duality_gap_(self) -> float:
        """``max(g) - 1`` at the estimate: bound on the mean log-likelihood gap."""
        return self._fitted_result()[1]["gap"]

    @property
    def working_sets_(self) -> list[int]:
        """Sizes of the working sets EM ran on (empty: all categories)."""
        return list(self._fitted_result()[1]["working_sets"])

    @property
    def mle_distribution_(self) -> np.ndarray:
        """The maximum-likelihood estimate."""
        return self._fitted_result()[1]["mle"].copy()

    @property
    def shrinkage_weight_(self) -> float:
        """Weight of the maximum-likelihood estimate in ``distribution_``."""
        return self._fitted_result()[1]["shrinkage_weight"]

    @property
    def log_likelihood_(self) -> float:
        """Mean log-likelihood per report at the estimate."""
        return self._fitted_result()[1]["log_likelihood"] / self.statistics_.n


class _Progress:
    """Iterations of an EM fit: a tqdm bar (``verbose >= 1``, shown after two
    seconds) and a line per iteration (``verbose >= 2``)."""

    def __init__(self, verbose, n, tol):
        self.verbose, self.n, self.tol = int(verbose), max(int(n), 1), tol
        self.bar = None

    def __enter__(self):
        if self.verbose == 1:
            try:
                from tqdm.auto import tqdm
            except ImportError:  # pragma: no cover - tqdm is an optional extra
                tqdm = None
            if tqdm is not None:
                # delay: quick fits show nothing.
                self.bar = tqdm(desc="EM", unit=" it", delay=2.0, leave=False)
        return self

    def update(self, n_iter, log_likelihood, gap):
        if self.bar is not None:
            self.bar.update(n_iter - self.bar.n)
            self.bar.set_postfix_str(
                f"log-lik {log_likelihood / self.n:.6g}, gap {gap:.2e} (tol {self.tol:.1e})",
                refresh=False,
            )
        if self.verbose >= 2:
            print(
                f"EM iteration {n_iter}: mean log-likelihood "
                f"{log_likelihood / self.n:.10g}, duality gap {gap:.3e} "
                f"(tol {self.tol:.2e})",
                flush=True,
            )

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.close()
        return False
