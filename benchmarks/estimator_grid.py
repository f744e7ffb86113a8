"""Which distribution estimate should ``EMEstimator()`` return by default?

Compares, on the ULDP paper's grid (Murakami & Kawamoto, USENIX Security
2019, Sec. 6), the package's estimators with prototypes of regularized EM.
Baselines:

* ``emp``   the linear unbiased estimate (``EmpiricalEstimator``);
* ``thr``   emp+thr, with the corrected significance threshold (categories
  whose estimate is exact, null variance 0, keep it and never receive
  redistributed mass; an estimate equal to a zero threshold is not below it);
* ``proj``  the Euclidean projection of emp onto the simplex (Norm-Sub);
* ``mle``   the exact maximum-likelihood estimate (accelerated EM to the
  duality-gap certificate, started from emp+thr: the EM of the paper).

Candidates, all on the segment from emp+thr (``t``) to the MLE (``m``),
``p(w) = (1 - w) t + w m``; the log-likelihood is concave, so it increases
along the segment. ``df`` = (number of categories with null variance > 0) - 1,
the parameters the reports only see through noise; by Wilks' theorem the
deviance of the truth, 2 (LL_max - LL(p_true)), is about chi2_df, whose
standard deviation is sqrt(2 df):

* ``segC``  the smallest w with LL_max - LL(p(w)) <= C sqrt(df / 2), i.e. a
  deviance within C standard deviations of chi2_df (bisection on w);
* ``js``    positive-part James-Stein weight towards t, in the Fisher metric:
  w = (1 - (df - 2) / (2 (LL_max - LL(t))))_+;
* ``sjC``   (the previous default, C = 4) the larger of the two weights:
  shrink as Stein's risk argument says, but never to a fit more than C
  standard deviations of the deviance worse than the maximum likelihood;
* ``pool4`` (recommended) as ``sj4`` with Stein's numerator counting only the
  noise emp+thr removes: 0.4 (b - 1), b = the number of categories it pools
  (below the threshold). emp+thr follows emp, and so shares the MLE's noise,
  on the categories it keeps; the MLE keeps about half (0.4 on this grid) of
  the pooled block's noise, whose small masses sit near the positivity bound;
* ``pool``  the same Stein weight without the deviance cap; ``kjs`` the
  James-Stein numerator scaled by 0.4 (kappa (df - 2)).

``--dump DIR`` also saves, per cell, emp+thr, the MLE, the truth and the
log-likelihood on 41 points of the segment for every run (used to calibrate
the factor 0.4 offline, on this grid and on --seed 1).

Explored in the pilots and dropped (still selectable with --estimators):
``emsig``/``emsig0`` (EM on the significant support, the insignificant block
uniform / zero: within noise of emp+thr), ``dp`` and ``sdn``/``sdn2`` (plain
EM from uniform or from emp+thr stopped by a discrepancy rule: slow on
bit-vector reports and no better than the segment), ``sel`` (emp+thr or MLE
by a likelihood-ratio test).

Every cell (mechanism x epsilon x dataset) draws ``--runs`` independent
samples of users and reports; all estimators see the same reports, so the
differences are paired. The table gives TV and l2 (mean +- s.e.) and, for
each candidate, the paired difference to the best of emp/thr/proj/mle in that
cell (by mean), with its standard error.

Reports of the one-symbol channels (RR, uRR, HR) are simulated through their
sufficient statistic (the output histogram is a sum of multinomials, exactly
the law of the histogram of n privatized reports), so those cells use the
paper's n. Bit-vector channels (RAPPOR, uRAP, uOUE, uBD) need every report for
the likelihood: their reports are drawn with the channel's own sampler at
``--n-bits`` users (default 20,000).

Usage::

    python benchmarks/estimator_grid.py --quick --out benchmarks/results/grid_quick.md
    python benchmarks/estimator_grid.py --runs 20 --out benchmarks/results/grid.md
"""

import argparse
import os
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from scipy.stats import chi2, norm  # noqa: E402

from sklearn_uldp import (  # noqa: E402
    RAPPOR,
    HadamardResponse,
    RandomizedResponse,
    UtilityOptimizedBlockDesign,
    UtilityOptimizedOUE,
    UtilityOptimizedRAPPOR,
    UtilityOptimizedRR,
)
from sklearn_uldp.datasets import location_distribution  # noqa: E402
from sklearn_uldp.estimators import maximize_likelihood  # noqa: E402
from sklearn_uldp.estimators._em import auto_tol, noisy_df  # noqa: E402
from sklearn_uldp.estimators._projection import project_to_simplex  # noqa: E402
from sklearn_uldp.mechanisms import CategoricalChannel, ReportStatistics  # noqa: E402

BASELINES = ["emp", "thr", "proj", "mle"]


# --------------------------------------------------------------------- data
def location_data(seed=0):
    """The 25 x 25 grid of the paper (k = 625, 15 sensitive), n = 179,527."""
    rng = np.random.default_rng(seed)
    p = location_distribution((25, 25), random_state=rng)
    sensitive = np.zeros(625, dtype=bool)
    sensitive[rng.choice(625, size=15, replace=False)] = True
    return {"name": "location", "p": p, "sensitive": sensitive, "n": 179_527}


def census_data():
    """A census-like table: age 8 x income 5 x marital 5 x sex 2 (k = 400).

    Modelled on the paper's US Census (1990) table: children (age 0) are never
    married and have no income, so many cells are structurally empty; the
    sensitive cells are "divorced" (ages 2-7) and "unemployed" (ages 2-3, not
    divorced): s = 60 + 16 = 76, as in the paper. n = 1,229,143.
    """
    age = np.array([0.17, 0.10, 0.16, 0.17, 0.13, 0.09, 0.08, 0.10])
    # marital: never, married, widowed, divorced, separated
    marital = np.array(
        [
            [1.0, 0, 0, 0, 0],
            [0.95, 0.04, 0, 0.005, 0.005],
            [0.55, 0.38, 0.002, 0.05, 0.018],
            [0.20, 0.62, 0.01, 0.13, 0.04],
            [0.10, 0.66, 0.03, 0.17, 0.04],
            [0.06, 0.67, 0.08, 0.16, 0.03],
            [0.05, 0.60, 0.22, 0.10, 0.03],
            [0.04, 0.42, 0.45, 0.07, 0.02],
        ]
    )
    # income: none/NA, unemployed, low, middle, high
    income = np.array(
        [
            [1.0, 0, 0, 0, 0],
            [0.60, 0.08, 0.26, 0.05, 0.01],
            [0.08, 0.07, 0.40, 0.37, 0.08],
            [0.05, 0.05, 0.30, 0.45, 0.15],
            [0.06, 0.04, 0.28, 0.45, 0.17],
            [0.15, 0.04, 0.30, 0.38, 0.13],
            [0.50, 0.02, 0.28, 0.15, 0.05],
            [0.75, 0.003, 0.18, 0.05, 0.017],
        ]
    )
    male = np.array(
        [
            [0.51, 0.5, 0.5, 0.5, 0.5],
            [0.51, 0.45, 0.3, 0.5, 0.5],
            [0.53, 0.47, 0.3, 0.45, 0.45],
            [0.55, 0.5, 0.2, 0.42, 0.42],
            [0.55, 0.5, 0.2, 0.42, 0.42],
            [0.55, 0.5, 0.2, 0.42, 0.42],
            [0.55, 0.52, 0.17, 0.4, 0.4],
            [0.5, 0.6, 0.15, 0.35, 0.35],
        ]
    )
    p = np.zeros((8, 5, 5, 2))
    sens = np.zeros((8, 5, 5, 2), dtype=bool)
    for a in range(8):
        for i in range(5):
            for m in range(5):
                w = age[a] * income[a, i] * marital[a, m]
                p[a, i, m, 0] = w * male[a, m]
                p[a, i, m, 1] = w * (1 - male[a, m])
    sens[2:, :, 3, :] = True
    sens[2:4, 1, [0, 1, 2, 4], :] = True
    p = p.ravel() / p.sum()
    sensitive = sens.ravel()
    assert sensitive.sum() == 76
    return {"name": "census", "p": p, "sensitive": sensitive, "n": 1_229_143}


MECHANISMS = {
    "RR": lambda eps, cats, s: RandomizedResponse(eps, categories=cats),
    "RAPPOR": lambda eps, cats, s: RAPPOR(eps, categories=cats),
    "uRR": lambda eps, cats, s: UtilityOptimizedRR(eps, sensitive=s, categories=cats),
    "uRAP": lambda eps, cats, s: UtilityOptimizedRAPPOR(eps, sensitive=s, categories=cats),
    "uOUE": lambda eps, cats, s: UtilityOptimizedOUE(eps, sensitive=s, categories=cats),
    "uBD": lambda eps, cats, s: UtilityOptimizedBlockDesign(
        eps, sensitive=s, subset_size="auto", categories=cats
    ),
    "HR": lambda eps, cats, s: HadamardResponse(eps, categories=cats),
}


def make_channel(mech_name, eps, data):
    k = data["p"].size
    cats = np.arange(k)
    return MECHANISMS[mech_name](eps, cats, cats[data["sensitive"]]).fit().channel_


def simulate(channel, p, n, rng, cache):
    """Statistics of n users drawn from p and privatized by ``channel``."""
    k = p.size
    if isinstance(channel, CategoricalChannel):
        Q = cache.get("Q")
        if Q is None:
            Q = cache["Q"] = channel.matrix()
        users = rng.multinomial(n, p)
        hist = np.zeros(Q.shape[1], dtype=np.int64)
        for x in np.flatnonzero(users):  # k categories, not n users
            hist += rng.multinomial(users[x], Q[x])
        return ReportStatistics(channel, int(n), hist)
    codes = rng.choice(k, size=n, p=p)
    stats = None
    step = max(1, 4_000_000 // k)
    for lo in range(0, n, step):
        rep = channel.sample(codes[lo : lo + step], rng)
        s = channel.statistics(rep, keep_reports=True)
        stats = s if stats is None else stats + s
    return stats


# --------------------------------------------------------------- estimators
def _null_variance(channel, stats):
    try:  # channels that can plug the statistics into the null variance
        return channel.null_variance(stats.n, stats=stats)
    except TypeError:
        return channel.null_variance(stats.n)


def threshold_parts(channel, stats, alpha=0.05):
    """emp, its threshold and the three kinds of categories.

    kept: significant (p_hat > T with T > 0) or exact and positive (T = 0,
    p_hat > 0); below: insignificant (T > 0, p_hat <= T); the others are
    exact zeros (T = 0, p_hat <= 0), which keep 0.
    """
    p_hat = channel.unbiased_estimate(stats)
    k = p_hat.size
    var0 = np.asarray(_null_variance(channel, stats), dtype=float)
    threshold = norm.ppf(1.0 - alpha / k) * np.sqrt(var0)
    exact = var0 <= 0.0
    kept = p_hat > threshold
    below = ~kept & ~exact
    return p_hat, kept, below


def est_thr(channel, stats, parts):
    p_hat, kept, below = parts
    k = p_hat.size
    p = np.where(kept, p_hat, 0.0)
    total = p.sum()
    if total >= 1.0 or not below.any():
        return p / total if total > 0 else np.full(k, 1.0 / k)
    p[below] = (1.0 - total) / below.sum()
    return p


#: EM's tolerance: the fraction of the statistical scale df / (2 n) it stops
#: at (--tol-fraction; None: the package's), and what df counts (--tol-df:
#: "noisy", the categories of positive null variance minus one, as
#: EMEstimator(tol="auto") does; "all", k - 1, as it did until 2026-12).
TOL_FRACTION = [None]
TOL_DF = ["noisy"]


def _auto_tol(k, n, channel=None, stats=None):
    df = k - 1
    if TOL_DF[0] == "noisy" and channel is not None:
        df = noisy_df(channel, stats)
    if TOL_FRACTION[0] is None:
        return auto_tol(df, n)
    return float(np.clip(TOL_FRACTION[0] * max(df, 1) / (2.0 * n), 1e-8, 1e-3))


def _mix(p, w=1e-2):
    return (1 - w) * p + w / p.size


def est_mle(channel, stats, p_thr):
    k = p_thr.size
    p, info = maximize_likelihood(
        lambda q: channel.em_gradient(stats, q),
        _mix(p_thr),
        tol=_auto_tol(k, stats.n, channel, stats),
        restrict=lambda a: channel.restricted_em_gradient(stats, a),
    )
    return p, info


def est_emsig(channel, stats, parts, p_thr, pool=True):
    """EM over the significant support; the insignificant block is uniform.

    Parameters: one mass per kept category and (``pool``) one mass for the
    block of insignificant categories, spread uniformly inside it. The EM
    factor of the block is the mean of g over it (the derivative of the
    log-likelihood along the block's uniform direction), so this is the
    plain EM of the reduced model, and its maximum-likelihood point is
    certified by the same duality gap.
    """
    p_hat, kept, below = parts
    k = p_hat.size
    idx = np.flatnonzero(kept)
    nb = int(below.sum()) if pool else 0
    m = idx.size + (1 if nb else 0)
    if m == 0:
        return np.full(k, 1.0 / k)
    if m == 1:
        p = np.zeros(k)
        if idx.size:
            p[idx] = 1.0
        else:
            p[below] = 1.0 / nb
        return p

    def expand(q):
        p = np.zeros(k)
        p[idx] = q[: idx.size]
        if nb:
            p[below] = q[-1] / nb
        return p

    def grad(q):
        g, ll = channel.em_gradient(stats, expand(q))
        gq = g[idx]
        if nb:
            gq = np.append(gq, g[below].mean())
        return gq, ll

    q0 = p_thr[idx]
    if nb:
        q0 = np.append(q0, p_thr[below].sum())
    if q0.sum() <= 0:
        q0 = np.ones(m)
    q0 = _mix(q0 / q0.sum())
    q, info = maximize_likelihood(grad, q0, tol=_auto_tol(m, stats.n))
    return expand(q)


def _free_df(ctx):
    """Free parameters: the categories not known exactly to be zero, minus 1."""
    _, kept, below = ctx["parts"]
    return max(int((kept | below).sum()) - 1, 1)


def _noisy_df(ctx):
    """Categories whose estimate is noisy (null variance > 0), minus 1."""
    return max(int(ctx["noisy"].sum()) - 1, 1)


def _slack(ctx, scale=1.0):
    return scale * 0.5 * chi2.ppf(0.5, _free_df(ctx))


def em_path_stop(ctx, start, slack, max_iter=5000):
    """Plain EM from ``start`` until LL >= LL_max - slack (discrepancy principle).

    The start itself is returned when it is already that close to the maximum.
    """
    channel, stats = ctx["channel"], ctx["stats"]
    target = ctx["info"]["log_likelihood"] - slack
    p = start
    g, ll = channel.em_gradient(stats, p)
    if ll >= target:
        return p
    # EM maps keep zeros at zero: give every category that is not an exact
    # zero a little mass so that it can move.
    _, kept, below = ctx["parts"]
    free = kept | below
    p = np.where(free, 0.999 * p + 0.001 * free / free.sum(), 0.0)
    p /= p.sum()
    for _ in range(max_iter):
        g, ll = channel.em_gradient(stats, p)
        if ll >= target:
            break
        p = p * g
        p /= p.sum()
    return p


def segment_stop(ctx, start, slack, n_bisect=14):
    """The point nearest ``start`` on the segment to the MLE with LL >= LL_max - slack.

    The log-likelihood is concave, so it increases along the segment from
    ``start`` to the maximum-likelihood point: bisection on the weight finds
    the first point within ``slack`` of the maximum.
    """
    channel, stats = ctx["channel"], ctx["stats"]
    target = ctx["info"]["log_likelihood"] - slack
    mle = ctx["mle"]
    if channel.em_gradient(stats, start)[1] >= target:
        return start
    lo, hi = 0.0, 1.0
    for _ in range(n_bisect):
        mid = 0.5 * (lo + hi)
        if channel.em_gradient(stats, (1 - mid) * start + mid * mle)[1] >= target:
            hi = mid
        else:
            lo = mid
    return (1 - hi) * start + hi * mle


def james_stein(ctx, start):
    """Positive-part James-Stein shrinkage of the MLE towards ``start``.

    In the Fisher metric the squared distance from ``start`` to the MLE is
    about 2 (LL_max - LL(start)) and the noise of the MLE about df, so the
    weight of the MLE is (1 - (df - 2) / (2 (LL_max - LL(start))))_+.
    """
    channel, stats = ctx["channel"], ctx["stats"]
    gap = ctx["info"]["log_likelihood"] - channel.em_gradient(stats, start)[1]
    df = _noisy_df(ctx)
    lam = max(0.0, 1.0 - (df - 2) / (2.0 * gap)) if gap > 0 else 1.0
    return (1 - lam) * start + lam * ctx["mle"]


def shrunk_mle(ctx, start, c, kappa=1.0, pooled=False):
    """Recommended default: James-Stein weight, capped by a deviance tolerance.

    The weight of the MLE on the segment from ``start`` (emp+thr) is the
    larger of the positive-part James-Stein weight and the smallest weight
    whose log-likelihood is within ``c * sqrt(df / 2)`` of the maximum (``c``
    standard deviations of the deviance 2 (LL_max - LL) of the truth,
    chi2_df by Wilks): shrink as Stein's risk argument says, but never to a
    fit that is significantly worse than the maximum likelihood.
    """
    channel, stats = ctx["channel"], ctx["stats"]
    ll_max = ctx["info"]["log_likelihood"]
    gap = ll_max - channel.em_gradient(stats, start)[1]
    df = _noisy_df(ctx)
    slack = c * np.sqrt(df / 2.0)
    if gap <= slack:  # start fits as well as the maximum, up to the noise
        lam_fit = 0.0
    else:
        lo, hi = 0.0, 1.0
        for _ in range(14):
            mid = 0.5 * (lo + hi)
            p = (1 - mid) * start + mid * ctx["mle"]
            if channel.em_gradient(stats, p)[1] >= ll_max - slack:
                hi = mid
            else:
                lo = mid
        lam_fit = hi
    # Stein's numerator: the MLE's noise that the target does not share.
    # Against an independent target that is all of it, df - 2 (``sj``);
    # emp+thr follows emp on the kept categories and shares their noise, so
    # only the pooled block's n_below - 1 free parameters count, and the
    # MLE's positivity constraints leave a fraction kappa of that (``pool``).
    num = kappa * (int(ctx["parts"][2].sum()) - 1) if pooled else kappa * (df - 2)
    lam_js = min(1.0, max(0.0, 1.0 - num / (2.0 * gap))) if gap > 0 else 1.0
    lam = max(lam_fit, lam_js)
    return (1 - lam) * start + lam * ctx["mle"]


def select_thr_mle(ctx, slack):
    ll_thr = ctx["channel"].em_gradient(ctx["stats"], ctx["thr"])[1]
    if ll_thr >= ctx["info"]["log_likelihood"] - slack:
        return ctx["thr"]
    return ctx["mle"]


CANDIDATES = {
    "emsig": lambda c: est_emsig(c["channel"], c["stats"], c["parts"], c["thr"]),
    "emsig0": lambda c: est_emsig(c["channel"], c["stats"], c["parts"], c["thr"], pool=False),
    "dp": lambda c: em_path_stop(c, np.full(c["thr"].size, 1.0 / c["thr"].size), _slack(c)),
    "sdn": lambda c: em_path_stop(c, c["thr"], np.sqrt(_noisy_df(c) / 2)),
    "js": lambda c: james_stein(c, c["thr"]),
    "sj2": lambda c: shrunk_mle(c, c["thr"], 2.0),
    "sj3": lambda c: shrunk_mle(c, c["thr"], 3.0),
    "sj4": lambda c: shrunk_mle(c, c["thr"], 4.0),
    # kappa < 1: emp+thr is computed from the same reports as the MLE, so
    # only part of the MLE's noise is independent of the target (see kjs).
    "kjs": lambda c: shrunk_mle(c, c["thr"], 4.0, kappa=0.4),
    "pool4": lambda c: shrunk_mle(c, c["thr"], 4.0, kappa=0.4, pooled=True),
    "pool": lambda c: shrunk_mle(c, c["thr"], np.inf, kappa=0.4, pooled=True),
    "seg1": lambda c: segment_stop(c, c["thr"], 1 * np.sqrt(_noisy_df(c) / 2)),
    "seg2": lambda c: segment_stop(c, c["thr"], 2 * np.sqrt(_noisy_df(c) / 2)),
    "seg3": lambda c: segment_stop(c, c["thr"], 3 * np.sqrt(_noisy_df(c) / 2)),
    "seg4": lambda c: segment_stop(c, c["thr"], 4 * np.sqrt(_noisy_df(c) / 2)),
    "sdn2": lambda c: em_path_stop(c, c["thr"], 2 * np.sqrt(_noisy_df(c) / 2)),
    "sel": lambda c: select_thr_mle(c, _slack(c)),
}


def losses(p_est, p):
    d = p_est - p
    return 0.5 * np.abs(d).sum(), float(np.sqrt(np.square(d).sum()))


W_GRID = np.linspace(0.0, 1.0, 41)


def dump_run(ctx, p):
    """Everything an offline study of weights on the segment needs (one run)."""
    channel, stats = ctx["channel"], ctx["stats"]
    t, m = ctx["thr"], ctx["mle"]
    _, kept, below = ctx["parts"]
    ll = [channel.em_gradient(stats, (1 - w) * t + w * m)[1] for w in W_GRID]
    return {
        "t": t,
        "m": m,
        "emp": ctx["parts"][0],
        "ll": np.array(ll),
        "ll_max": ctx["info"]["log_likelihood"],
        "ll_true": channel.em_gradient(stats, p)[1],
        "noisy": ctx["noisy"],
        "kept": kept,
        "below": below,
        "n": stats.n,
    }


def run_cell(mech_name, eps, data, runs, n_bits, seed, estimators, dump=None):
    channel = make_channel(mech_name, eps, data)
    n = data["n"] if isinstance(channel, CategoricalChannel) else n_bits
    p = data["p"]
    rng = np.random.default_rng(seed)
    cache = {}
    out = {e: [] for e in estimators}
    timing = {e: 0.0 for e in estimators}
    for _ in range(runs):
        stats = simulate(channel, p, n, rng, cache)
        t = time.perf_counter()
        parts = threshold_parts(channel, stats)
        p_thr = est_thr(channel, stats, parts)
        t_thr = time.perf_counter() - t
        res = {"emp": parts[0], "thr": p_thr, "proj": project_to_simplex(parts[0])}
        t = time.perf_counter()
        p_mle, info = est_mle(channel, stats, p_thr)
        timing["mle"] += time.perf_counter() - t + t_thr
        res["mle"] = p_mle
        ctx = {
            "channel": channel,
            "stats": stats,
            "parts": parts,
            "thr": p_thr,
            "mle": p_mle,
            "info": info,
            "noisy": np.asarray(_null_variance(channel, stats)) > 0,
        }
        for e in estimators:
            if e in res:
                continue
            t = time.perf_counter()
            res[e] = CANDIDATES[e](ctx)
            timing[e] += time.perf_counter() - t + t_thr
        for e in estimators:
            out[e].append(losses(res[e], p))
        if dump is not None:
            dump.append(dump_run(ctx, p))
    return {e: np.array(v) for e, v in out.items()}, n, timing


def fmt(x, s):
    return f"{x:.4f} ± {s:.4f}"


def summarize(cell, runs):
    """Per estimator: mean and s.e. of TV and l2; paired diff to best baseline."""
    rows = {}
    for metric in (0, 1):
        means = {e: v[:, metric].mean() for e, v in cell.items()}
        best = min(BASELINES, key=lambda e: means[e])
        for e, v in cell.items():
            x = v[:, metric]
            d = x - cell[best][:, metric]
            rows.setdefault(e, []).append(
                (
                    x.mean(),
                    x.std(ddof=1) / np.sqrt(runs),
                    d.mean(),
                    d.std(ddof=1) / np.sqrt(runs),
                    best,
                )
            )
    return rows


def write(args, lines, summary, estimators, t_all, compact):
    lines = list(lines)
    if compact:
        lines = [
            f"Best of emp/thr/proj/mle in each cell (by mean) against "
            f"``{args.recommended}``; Δ is the paired difference (mean ± s.e.), "
            "negative when it is more accurate.",
            "",
            "| dataset | mechanism | ε | n | best TV | "
            f"{args.recommended} TV | Δ TV | best l2 | {args.recommended} l2 | Δ l2 |",
            "|---|---|---|---|---|---|---|---|---|---|",
            *compact,
            "",
            "All estimators:",
            "",
            *lines,
        ]
    lines += [
        "",
        "Summary over the cells (loss = paired difference to the best of "
        "emp/thr/proj/mle in the cell, by mean):",
        "",
        "| estimator | cells | TV: worse by > 2 s.e. | TV: largest loss | "
        "TV: mean relative change | l2: worse by > 2 s.e. | l2: largest loss |",
        "|---|---|---|---|---|---|---|",
    ]
    for e in estimators:
        s = summary[e]
        lines.append(
            f"| {e} | {s['cells']} | {s['tv_lose']} | {s['tv_max']:.4f} "
            f"({s['tv_where']}) | {100 * np.mean(s['tv_rel']):+.1f} % | "
            f"{s['l2_lose']} | {s['l2_max']:.4f} ({s['l2_where']}) |"
        )
    header = (
        f"Runs per cell: {args.runs}; bit-vector mechanisms at n = "
        f"{args.n_bits}; total {time.perf_counter() - t_all:.0f} s.\n\n"
    )
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as fh:
        fh.write(header + "\n".join(lines) + "\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="Markdown file to write")
    ap.add_argument(
        "--quick", action="store_true", help="a reduced grid that runs in under two minutes"
    )
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument(
        "--n-bits", type=int, default=20_000, help="users for the bit-vector mechanisms"
    )
    ap.add_argument("--mechanisms", default=",".join(MECHANISMS))
    ap.add_argument("--epsilons", default="0.1,0.5,1,2,4,lnk,10")
    ap.add_argument("--datasets", default="location,census")
    ap.add_argument("--estimators", default="emp,thr,proj,mle,sj4,pool4")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--tol-df",
        choices=["noisy", "all"],
        default="noisy",
        help="what EM's tolerance counts as the statistical scale: the noisy "
        "categories (the package's rule) or all k - 1 (the rule until 2026-12)",
    )
    ap.add_argument(
        "--tol-fraction",
        type=float,
        default=None,
        help="EM's duality-gap tolerance as a fraction of (k - 1) / (2 n) "
        "(default: the package's, that of EMEstimator(tol='auto'))",
    )
    ap.add_argument(
        "--dump",
        default=None,
        help="directory for per-cell .npz files (emp+thr, MLE, the truth "
        "and the log-likelihood along the segment, per run)",
    )
    ap.add_argument(
        "--recommended", default="pool4", help="the candidate compared with the best baseline first"
    )
    args = ap.parse_args(argv)
    TOL_FRACTION[0] = args.tol_fraction
    TOL_DF[0] = args.tol_df
    if args.quick:
        args.runs = min(args.runs, 5)
        args.mechanisms = "RR,uRR,HR,uRAP"
        args.epsilons = "0.5,1,lnk"
        args.datasets = "location"
        args.n_bits = min(args.n_bits, 5000)
    estimators = args.estimators.split(",")
    datasets = {"location": location_data, "census": census_data}
    lines = [
        "| dataset | mechanism | ε | n | estimator | TV | Δ TV vs best | "
        "l2 | Δ l2 vs best | time (s/run) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    t_all = time.perf_counter()
    summary = {}
    compact = []
    for dname in args.datasets.split(","):
        data = datasets[dname]()
        k = data["p"].size
        for mech_name in args.mechanisms.split(","):
            for e_txt in args.epsilons.split(","):
                eps = float(np.log(k)) if e_txt == "lnk" else float(e_txt)
                t0 = time.perf_counter()
                dump = [] if args.dump else None
                cell, n, timing = run_cell(
                    mech_name, eps, data, args.runs, args.n_bits, args.seed, estimators, dump=dump
                )
                if dump:
                    os.makedirs(args.dump, exist_ok=True)
                    np.savez_compressed(
                        os.path.join(args.dump, f"{dname}_{mech_name}_{e_txt}.npz"),
                        p=data["p"],
                        eps=eps,
                        w_grid=W_GRID,
                        **{key: np.array([d[key] for d in dump]) for key in dump[0]},
                    )
                rows = summarize(cell, args.runs)
                e_lbl = f"ln k={eps:.2f}" if e_txt == "lnk" else e_txt
                for e in estimators:
                    (tv, tvs, dtv, dtvs, btv), (l2, l2s, dl2, dl2s, bl2) = rows[e]
                    s = summary.setdefault(
                        e,
                        {
                            "cells": 0,
                            "tv_lose": 0,
                            "l2_lose": 0,
                            "tv_max": 0.0,
                            "l2_max": 0.0,
                            "tv_where": "-",
                            "l2_where": "-",
                            "tv_rel": [],
                        },
                    )
                    where = f"{dname} {mech_name} {e_lbl}"
                    s["cells"] += 1
                    s["tv_rel"].append(dtv / (tv - dtv))
                    s["tv_lose"] += int(dtv > 2 * dtvs and dtv > 0)
                    s["l2_lose"] += int(dl2 > 2 * dl2s and dl2 > 0)
                    if dtv > s["tv_max"]:
                        s["tv_max"], s["tv_where"] = dtv, where
                    if dl2 > s["l2_max"]:
                        s["l2_max"], s["l2_where"] = dl2, where
                    tm = timing.get(e, 0.0) / args.runs
                    lines.append(
                        f"| {dname} | {mech_name} | {e_lbl} | {n} | {e} | "
                        f"{fmt(tv, tvs)} | {dtv:+.4f} ± {dtvs:.4f} ({btv}) | "
                        f"{fmt(l2, l2s)} | {dl2:+.4f} ± {dl2s:.4f} ({bl2}) | "
                        f"{tm:.3f} |"
                    )
                short = "  ".join(f"{e}={rows[e][0][0]:.4f}" for e in estimators)
                if args.recommended in rows:
                    (tv, tvs, dtv, dtvs, btv), (l2, l2s, dl2, dl2s, bl2) = rows[args.recommended]
                    compact.append(
                        f"| {dname} | {mech_name} | {e_lbl} | {n} | "
                        f"{btv} {rows[btv][0][0]:.4f} | {fmt(tv, tvs)} | "
                        f"{dtv:+.4f} ± {dtvs:.4f} | {bl2} {rows[bl2][1][0]:.4f} | "
                        f"{fmt(l2, l2s)} | {dl2:+.4f} ± {dl2s:.4f} |"
                    )
                write(args, lines, summary, estimators, t_all, compact)
                print(
                    f"{dname:8s} {mech_name:6s} eps={e_lbl:10s} "
                    f"[{time.perf_counter() - t0:6.1f}s] TV: {short}",
                    flush=True,
                )
    write(args, lines, summary, estimators, t_all, compact)
    return 0


if __name__ == "__main__":
    sys.exit(main())
