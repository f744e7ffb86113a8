#!/usr/bin/env python
"""Benchmark the memoized (longitudinal) oracles: sklearn-uldp vs multi-freq-ldpy.

Two parts, side by side with multi-freq-ldpy's ``long_freq_est`` in one run:

``variance``
    For n users, k in {10, 100}, (epsilon_perm, epsilon_1) in {(1, 0.5),
    (2, 1), (4, 2)} and the mechanisms L-GRR (exact parameters and
    multi-freq-ldpy's, ``parametrization="arcolezi"``), L-OSUE and L-SUE:
    the per-category variance of the unbiased estimate over ``--reps``
    independent populations (each with its own secrets: memoization
    included), against the closed form (``estimator_variance``) and, for the
    unary ones, multi-freq-ldpy's ``VAR_Long_Pure``; the same for
    multi-freq-ldpy's own L-OSUE / L-SUE clients (``--anchor-reps``).
    Ratios are pooled over categories (sum of empirical variances over sum
    of theoretical ones), with a bootstrap standard error over the
    replications.

``speed``
    At n users and k categories: wall and CPU time to privatize (secrets
    checked and the permanent answers derived: memoization included) and to
    estimate (reports in, frequency vector out), for L-OSUE, L-SUE, L-OUE,
    L-SOUE and L-GRR, against multi-freq-ldpy's clients and MI aggregators
    (``--repeats``: best of, ours and the anchor measured in turn). The anchors
    privatize user by user in Python; an anchor slower than
    ``--anchor-cap`` users is timed on that many users and extrapolated
    linearly (marked ``~``).

Examples
--------
python benchmarks/bench_longitudinal.py                    # both parts
python benchmarks/bench_longitudinal.py --part speed --n 1000000 --k 10 100 --repeats 2
python benchmarks/bench_longitudinal.py --part variance --reps 30
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _anchors import compat_shims  # noqa: E402
from _measure import compiled_warmup, zipf_probabilities  # noqa: E402

from sklearn_uldp import EmpiricalEstimator  # noqa: E402
from sklearn_uldp.longitudinal import LongitudinalGRR, LongitudinalUE  # noqa: E402
from sklearn_uldp.utils import check_user_secrets, generate_user_secrets  # noqa: E402

KINDS = {
    "L-GRR": dict(cls=LongitudinalGRR, params={}),
    "L-GRR (arcolezi)": dict(cls=LongitudinalGRR, params={"parametrization": "arcolezi"}),
    "L-OSUE": dict(cls=LongitudinalUE, params={"permanent": "OUE", "instantaneous": "SUE"}),
    "L-SUE": dict(cls=LongitudinalUE, params={"permanent": "SUE", "instantaneous": "SUE"}),
}
#: The speed part also times the unary encodings with an OUE instantaneous round.
SPEED_KINDS = {
    **KINDS,
    "L-OUE": dict(cls=LongitudinalUE, params={"permanent": "OUE", "instantaneous": "OUE"}),
    "L-SOUE": dict(cls=LongitudinalUE, params={"permanent": "SUE", "instantaneous": "OUE"}),
}
ANCHOR_NAMES = {k: k.replace("-", "_") for k in ("L-GRR", "L-OSUE", "L-SUE", "L-OUE", "L-SOUE")}


def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def timed(fn):
    w0, c0 = time.perf_counter(), cpu()
    out = fn()
    return out, time.perf_counter() - w0, cpu() - c0


def make_mech(kind, k, eps_perm, eps_1, seed=0):
    spec = SPEED_KINDS[kind]
    return spec["cls"](
        eps_perm, eps_1, categories=range(k), random_state=seed, **spec["params"]
    ).fit()


# ----------------------------------------------------------------- anchors
def anchor_modules():
    compat_shims()
    from multi_freq_ldpy.long_freq_est import (
        L_GRR,
        L_OSUE,
        L_OUE,
        L_SOUE,
        L_SUE,
        Variance_LONG_PURE,
    )

    return {
        "L-GRR": L_GRR,
        "L-OSUE": L_OSUE,
        "L-SUE": L_SUE,
        "L-OUE": L_OUE,
        "L-SOUE": L_SOUE,
        "var": Variance_LONG_PURE,
    }


def anchor_client(mods, kind, x, k, eps_perm, eps_1):
    name = ANCHOR_NAMES[kind]
    client = getattr(mods[kind], f"{name}_Client")
    return [client(int(v), k, eps_perm, eps_1) for v in x]


def anchor_aggregate(mods, kind, reports, k, eps_perm, eps_1):
    if kind == "L-GRR":
        return mods[kind].L_GRR_Aggregator_MI(reports, k, eps_perm, eps_1)
    name = ANCHOR_NAMES[kind]
    return getattr(mods[kind], f"{name}_Aggregator_MI")(reports, eps_perm, eps_1)


def anchor_unbiased(kind, reports, ch):
    """The anchor's reports estimated without clipping (its MI before the
    projection), with the composed per-bit probabilities: unbiased."""
    counts = np.sum(np.asarray(reports), axis=0)
    n = len(reports)
    p1, q1, p2, q2 = ch.p1, ch.q1, ch.p2, ch.q2
    return (counts - n * q1 * (p2 - q2) - n * q2) / (n * (p1 - q1) * (p2 - q2))


# ---------------------------------------------------------------- variance
def variance_part(args, mods):
    rows = []
    for k in args.k_var:
        p = zipf_probabilities(k)
        for eps_perm, eps_1 in ((1.0, 0.5), (2.0, 1.0), (4.0, 2.0)):
            for kind in KINDS:
                mech = make_mech(kind, k, eps_perm, eps_1)
                ch = mech.channel_
                ests = []
                for rep in range(args.reps):
                    rng = np.random.default_rng([args.seed, k, rep])
                    X = rng.choice(k, p=p, size=(args.n_var, 1))
                    secrets = generate_user_secrets(args.n_var, random_state=1000 * k + rep)
                    reports = mech.transform(X, user_secrets=secrets)
                    ests.append(EmpiricalEstimator().fit(reports).distribution_)
                theory = ch.estimator_variance(p, args.n_var)
                ratio, se = pooled_ratio(np.array(ests), theory, args.seed)
                row = dict(
                    k=k,
                    eps=(eps_perm, eps_1),
                    kind=kind,
                    theory=theory.mean(),
                    ratio=ratio,
                    se=se,
                    tv=np.mean(0.5 * np.abs(np.array(ests) - p).sum(1)),
                )
                if kind in ("L-OSUE", "L-SUE"):
                    row["var_long_pure"] = float(
                        np.mean(
                            mods["var"].VAR_Long_Pure(
                                ch.p1,
                                ch.q1,
                                ch.p2,
                                ch.q2,
                                args.n_var,
                                p if kind == "L-SUE" else 0.0,
                            )
                        )
                    )
                    row["ours_at_same_f"] = float(
                        np.mean(theory if kind == "L-SUE" else ch.null_variance(args.n_var))
                    )
                    if args.anchor_reps:
                        aests = []
                        for rep in range(args.anchor_reps):
                            rng = np.random.default_rng([args.seed, k, rep, 7])
                            x = rng.choice(k, p=p, size=args.n_var)
                            np.random.seed(rep)  # the anchor draws from numpy's global state
                            reps_ = anchor_client(mods, kind, x, k, eps_perm, eps_1)
                            aests.append(anchor_unbiased(kind, reps_, ch))
                        row["anchor_ratio"], row["anchor_se"] = pooled_ratio(
                            np.array(aests), theory, args.seed
                        )
                rows.append(row)
                print_row(row, flush=True)
            exact = [r for r in rows if r["k"] == k and r["eps"] == (eps_perm, eps_1)]
            a = {r["kind"]: r for r in exact}
            print(
                f"    L-GRR exact / arcolezi variance: "
                f"{a['L-GRR']['theory'] / a['L-GRR (arcolezi)']['theory']:.3f} (closed form), "
                f"TV {a['L-GRR']['tv']:.4f} vs {a['L-GRR (arcolezi)']['tv']:.4f}",
                flush=True,
            )
    return rows


def pooled_ratio(ests, theory, seed):
    """sum_j var_j / sum_j theory_j, and its bootstrap s.e. over replications."""

    def ratio(e):
        return float(e.var(axis=0, ddof=1).sum() / theory.sum())

    rng = np.random.default_rng(seed)
    boots = [ratio(ests[rng.integers(0, len(ests), len(ests))]) for _ in range(200)]
    return ratio(ests), float(np.std(boots, ddof=1))


def print_row(r, flush=False):
    extra = ""
    if "var_long_pure" in r:
        extra = (
            f"  VAR_Long_Pure {r['var_long_pure']:.3e} vs ours {r['ours_at_same_f']:.3e}"
            f" (rel. diff {abs(r['var_long_pure'] / r['ours_at_same_f'] - 1):.1e})"
        )
        if "anchor_ratio" in r:
            extra += f"  anchor emp/closed {r['anchor_ratio']:.3f} ± {r['anchor_se']:.3f}"
    print(
        f"k={r['k']:3d} eps={r['eps']} {r['kind']:17s} closed {r['theory']:.3e}  "
        f"emp/closed {r['ratio']:.3f} ± {r['se']:.3f}{extra}",
        flush=flush,
    )


# ------------------------------------------------------------------- speed
def speed_part(args, mods):
    out = []
    for k in args.k:
        out += speed_cells(args, mods, k)
    return out


def speed_cells(args, mods, k):
    n = args.n
    p = zipf_probabilities(k)
    X = np.random.default_rng(args.seed).choice(k, p=p, size=(n, 1))
    secrets = generate_user_secrets(n)  # once per user, kept across rounds
    if args.keys_once:
        # checked once, untimed, as a collector simulating many rounds (or a
        # client keeping its key) does: each round then skips the check
        secrets = check_user_secrets(secrets)
    print(
        f"\nspeed: n={n}, k={k}, epsilon_perm={args.eps_perm}, epsilon_1={args.eps_1}; "
        f"{'user keys checked once' if args.keys_once else 'raw secrets checked each call'}; "
        f"best of {args.repeats}, ours and the anchor in turn; ratio = anchor / ours"
    )
    print(
        f"{'mechanism':10s} {'library':16s} {'privatize wall':>15s} {'cpu':>8s}   "
        f"{'estimate wall':>14s} {'cpu':>8s}"
    )
    out = []
    for kind in args.kinds:
        mech = make_mech(kind, k, args.eps_perm, args.eps_1, seed=None)
        mech.set_params(random_state=None)
        mech.fit()
        with compiled_warmup():  # the compiled kernels, loaded or compiled untimed
            mech.transform(X[:1000], user_secrets=secrets[:1000])
            EmpiricalEstimator().fit(mech.transform(X[:1000], user_secrets=secrets[:1000]))
        cap = min(n, args.anchor_cap if kind == "L-GRR" else args.anchor_cap_ue)
        x = X[:, 0]
        anchor_client(mods, kind, x[:50], k, args.eps_perm, args.eps_1)  # numba compiles
        best = {}

        def keep(name, wall, cpu_s):
            old = best.get(name)
            best[name] = (wall, cpu_s) if old is None else (min(old[0], wall), min(old[1], cpu_s))

        for rep in range(args.repeats):  # ours and the anchor in turn: drift hits both
            reports, w_priv, c_priv = timed(lambda: mech.transform(X, user_secrets=secrets))
            est, w_est, c_est = timed(lambda: EmpiricalEstimator().fit(reports).distribution_)
            keep("priv", w_priv, c_priv)
            keep("est", w_est, c_est)
            reports = None  # free it before the anchor runs
            np.random.seed(args.seed + rep)
            rep_, w_a, c_a = timed(
                lambda: anchor_client(mods, kind, x[:cap], k, args.eps_perm, args.eps_1)
            )
            keep("a_priv", w_a * n / cap, c_a * n / cap)
            full = rep_ if cap == n else [rep_[i % cap] for i in range(n)]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                a_est, w_ae, c_ae = timed(
                    lambda: anchor_aggregate(mods, kind, full, k, args.eps_perm, args.eps_1)
                )
            keep("a_est", w_ae, c_ae)
            full = rep_ = None
        ours = dict(
            kind=kind,
            k=k,
            lib="sklearn-uldp",
            priv=best["priv"],
            est=best["est"],
            tv=0.5 * float(np.abs(est - p).sum()),
        )
        print_speed(ours)
        anchor = dict(
            kind=kind,
            k=k,
            lib="multi-freq-ldpy",
            priv=best["a_priv"],
            est=best["a_est"],
            extrapolated=cap < n,
            tv=0.5 * float(np.abs(np.asarray(a_est) - p).sum()) if cap == n else None,
        )
        print_speed(anchor)
        print(
            f"{'':10s} {'ratio':16s} {anchor['priv'][0] / ours['priv'][0]:14.1f}x "
            f"{anchor['priv'][1] / ours['priv'][1]:7.1f}x   "
            f"{anchor['est'][0] / ours['est'][0]:13.1f}x {anchor['est'][1] / ours['est'][1]:7.1f}x",
            flush=True,
        )
        out += [ours, anchor]
    return out


def print_speed(r):
    mark = "~" if r.get("extrapolated") else " "
    print(
        f"{r['kind']:10s} {r['lib']:16s} {mark}{r['priv'][0]:13.3f}s {r['priv'][1]:7.3f}s   "
        f"{r['est'][0]:13.3f}s {r['est'][1]:7.3f}s",
        flush=True,
    )


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--part", choices=["variance", "speed", "both"], default="both")
    ap.add_argument("--n", type=int, default=1_000_000, help="users for the speed part")
    ap.add_argument("--k", type=int, nargs="+", default=[100], help="categories for the speed part")
    ap.add_argument(
        "--kinds",
        nargs="+",
        default=["L-OSUE", "L-SUE", "L-OUE", "L-SOUE", "L-GRR"],
        choices=sorted(SPEED_KINDS),
        help="mechanisms of the speed part",
    )
    ap.add_argument(
        "--repeats", type=int, default=1, help="speed part: best of, ours and the anchor in turn"
    )
    ap.add_argument(
        "--keys-once",
        action="store_true",
        help="speed part: check the user secrets once (untimed) and pass their UserKeys to "
        "every call, the per-round cost of a run of many rounds (default: raw secrets, "
        "checked in every call)",
    )
    ap.add_argument("--eps-perm", type=float, default=2.0)
    ap.add_argument("--eps-1", type=float, default=1.0)
    ap.add_argument(
        "--anchor-cap",
        type=int,
        default=20_000,
        help="users the anchor's L-GRR client privatizes (then extrapolated)",
    )
    ap.add_argument(
        "--anchor-cap-ue",
        type=int,
        default=1_000_000,
        help="users the anchor's unary clients privatize (then extrapolated)",
    )
    ap.add_argument("--n-var", type=int, default=100_000, help="users for the variance part")
    ap.add_argument("--k-var", type=int, nargs="+", default=[10, 100])
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--anchor-reps", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    print(f"load average: {os.getloadavg()}, cpus: {os.cpu_count()}")
    mods = anchor_modules()
    if args.part in ("variance", "both"):
        variance_part(args, mods)
    if args.part in ("speed", "both"):
        speed_part(args, mods)
    print(f"load average: {os.getloadavg()}")


if __name__ == "__main__":
    main()
