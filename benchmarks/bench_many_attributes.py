#!/usr/bin/env python
"""Many attributes per user: SPL, SMP and RS+FD, sklearn-uldp vs multi-freq-ldpy.

Three sections, each side by side with multi-freq-ldpy's clients and
aggregators (``multi_freq_ldpy.mdim_freq_est``) in one run:

``mse``
    Per-attribute MSE of the unbiased estimate (mean over attributes and
    categories of (p_hat - p)^2) at n users, d attributes of k categories,
    budget epsilon, for SPL[GRR], SPL[OUE], SMP[GRR], SMP[OUE],
    RS+FD[GRR], RS+FD[OUE-z], RS+FD[OUE-r] (``amplification="paper"``, the
    anchors' epsilon'), against the closed forms (the per-attribute
    channels' ``estimator_variance``: Arcolezi et al.'s Variance_RSpFD for
    RS+FD) with the z-score of the difference (Monte Carlo error from the
    repeats). Fresh data each repeat, drawn from a fixed random distribution
    per attribute, so that the closed form is exact. The anchors run on the
    ``--anchor-eps`` slice: their clients' reports estimated without
    post-processing (the same linear formulas: their sampler against the
    closed form) and their aggregators' clipped and normalized estimates
    (against ours with ``projection="clip"``).
``speed``
    Privatize and estimate n = 10^6 users, d in {3, 6, 10} (``--speed-d``),
    k = 10, epsilon = 1: ``DataFramePrivatizer.fit_transform`` +
    ``estimate`` against the anchors' client loop + aggregator, wall and
    CPU seconds (``--speed-repeats``: best of, ours and the anchor in turn).
    ``--report-formats wide compact`` also times the SMP cells with
    ``report_format="compact"`` (one report block instead of d k columns),
    in the same turns (wide, compact, anchor), with the reports' size.
``real``
    The CCES 2016 survey (``load_election_survey``: 64,600 people, 12
    categorical attributes, k = 2..51) at a row budget epsilon = 1: mean TV
    over the attributes for SPL (epsilon/12 per column), SMP (epsilon) and
    RS+FD (attribute budget epsilon, row epsilon'; and attribute budget
    ln(1 + (e - 1)/12), row epsilon), for the mechanism families RR, OUE,
    uRR, uOUE and each column's best of them (``choose_strategy``), with
    the empirical estimate projected on the simplex and EM; the anchors'
    SPL/SMP/RS+FD[ADP] on the same table.

Usage::

    nice python benchmarks/bench_many_attributes.py --sections mse speed real \
        --json benchmarks/many_attributes.json
    python benchmarks/bench_many_attributes.py --quick      # minutes
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import time
import warnings

import numpy as np
import pandas as pd

from sklearn_uldp import (
    RAPPOR,
    EMEstimator,
    EmpiricalEstimator,
    RandomizedResponse,
    UtilityOptimizedOUE,
    UtilityOptimizedRR,
)
from sklearn_uldp.compose import DataFramePrivatizer
from sklearn_uldp.metrics import total_variation

PROTOCOLS = ("SPL-GRR", "SPL-OUE", "SMP-GRR", "SMP-OUE", "RSFD-GRR", "RSFD-OUE-z", "RSFD-OUE-r")


def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def load():
    return os.getloadavg()[0]


# ---------------------------------------------------------------- ours
def privatizer(protocol, d, k, eps, report_format="wide"):
    strategy, _, mech = protocol.partition("-")
    cats = list(range(k))
    col_eps = eps / d if strategy == "SPL" else eps

    def one():
        if mech == "GRR":
            return RandomizedResponse(col_eps, categories=cats)
        return RAPPOR(col_eps, theta=0.5, categories=cats)

    params = {"SPL": {}, "SMP": {"strategy": "sample", "report_format": report_format}}.get(
        strategy
    )
    if params is None:
        params = {
            "strategy": "sample+fake",
            "amplification": "paper",
            "fake": {"GRR": "random", "OUE-z": "zero", "OUE-r": "random"}[mech],
        }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return DataFramePrivatizer({f"a{j}": one() for j in range(d)}, **params)


def closed_form(priv, protocol, p, n, d):
    """Mean over attributes and categories of the estimator's variance."""
    return float(np.mean(variances(priv, protocol, p, n, d)))


def draw(p, n, rng):
    return pd.DataFrame({f"a{j}": rng.choice(len(pj), p=pj, size=n) for j, pj in enumerate(p)})


def variances(priv, protocol, p, n, d):
    """Each attribute's per-category variance of the unbiased estimate."""
    out = []
    for j, channel in enumerate(priv.channels_.values()):
        if protocol.startswith("SMP"):
            out.append(channel.base.estimator_variance(p[j], n / d))
        else:
            out.append(channel.estimator_variance(p[j], n))
    return out


def standardized(errors, var):
    """Per attribute, the mean over categories of err^2 / Var: mean 1, and a
    variance of at most 2 (that of a chi-square with one degree of freedom;
    the categories' errors are dependent, the bound holds whatever)."""
    return np.array([np.mean(e**2 / v) for e, v in zip(errors, var, strict=True)])


def ours_mse(protocol, n, d, k, eps, reps, seed, projection=None):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(k), size=d)
    priv = privatizer(protocol, d, k, eps)
    sq, u = [], []
    for r in range(reps):
        X = draw(p, n, rng)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            priv.set_params(random_state=seed * 1000 + r)
            reports = priv.fit_transform(X)
        est = priv.estimate(reports, EmpiricalEstimator(projection=projection))
        errors = [est[f"a{j}"].to_numpy() - p[j] for j in range(d)]
        sq.append([np.mean(e**2) for e in errors])
        u.append(standardized(errors, variances(priv, protocol, p, n, d)))
    sq, u = np.asarray(sq).ravel(), np.asarray(u).ravel()
    # the ratio MSE / closed form (each attribute weighted by its variance)
    # and its z with the conservative standard error sqrt(2 / (reps d))
    return p, priv, float(sq.mean()), float(u.mean()), float((u.mean() - 1) / np.sqrt(2 / u.size))


# ---------------------------------------------------------------- anchors
def anchor_reports(protocol, X, k, eps):
    """(reports, aggregate) of multi-freq-ldpy's client loop and aggregator."""
    from multi_freq_ldpy.mdim_freq_est import RSpFD_solution as R
    from multi_freq_ldpy.mdim_freq_est import SMP_solution as S
    from multi_freq_ldpy.mdim_freq_est import SPL_solution as P

    d = X.shape[1]
    lk = [k] * d
    client, aggregate = {
        "SPL-GRR": (
            lambda x: P.SPL_GRR_Client(x, lk, d, eps),
            lambda r: P.SPL_GRR_Aggregator_MI(r, lk, d, eps),
        ),
        "SPL-OUE": (
            lambda x: P.SPL_UE_Client(x, lk, d, eps),
            lambda r: P.SPL_UE_Aggregator_MI(r, d, eps),
        ),
        "SMP-GRR": (
            lambda x: S.SMP_GRR_Client(x, lk, d, eps),
            lambda r: S.SMP_GRR_Aggregator_MI(r, lk, d, eps),
        ),
        "SMP-OUE": (
            lambda x: S.SMP_UE_Client(x, lk, d, eps),
            lambda r: S.SMP_UE_Aggregator_MI(r, d, eps),
        ),
        "RSFD-GRR": (
            lambda x: R.RSpFD_GRR_Client(x, lk, d, eps),
            lambda r: R.RSpFD_GRR_Aggregator_MI(r, lk, d, eps),
        ),
        "RSFD-OUE-z": (
            lambda x: R.RSpFD_UE_zero_Client(x, lk, d, eps),
            lambda r: R.RSpFD_UE_zero_Aggregator_MI(r, lk, d, eps),
        ),
        "RSFD-OUE-r": (
            lambda x: R.RSpFD_UE_rnd_Client(x, lk, d, eps),
            lambda r: R.RSpFD_UE_rnd_Aggregator_MI(r, lk, d, eps),
        ),
    }[protocol]
    start, c0 = time.perf_counter(), cpu()
    reports = [client(x) for x in X]
    mid, c1 = time.perf_counter(), cpu()
    est = aggregate(reports)
    end, c2 = time.perf_counter(), cpu()
    return (
        reports,
        [np.asarray(e, dtype=float) for e in est],
        (mid - start, c1 - c0),
        (end - mid, c2 - c1),
    )


def anchor_unbiased(protocol, reports, priv, d):
    """Their reports, estimated with the linear formulas (no clipping)."""
    channels = list(priv.channels_.values())
    out = []
    if protocol.startswith("SMP"):
        for j, ch in enumerate(channels):
            vals = [r[1] for r in reports if r[0] == j]
            rep = np.asarray(vals)
            codes = ch.base.encode_reports(rep if rep.ndim == 2 else rep.astype(np.int64))
            out.append(ch.base.unbiased_estimate(ch.base.statistics(codes)))
        return out
    for j, ch in enumerate(channels):
        col = [r[j] for r in reports]
        rep = np.asarray(col)
        codes = ch.encode_reports(rep if rep.ndim == 2 else rep.astype(np.int64))
        out.append(ch.unbiased_estimate(ch.statistics(codes)))
    return out


def section_mse(args, rows):
    grid = [(d, k, e) for d in args.d for k in args.k for e in args.eps]
    for d, k, eps in grid:
        for number, protocol in enumerate(PROTOCOLS):
            seed = 1000 * d + 10 * k + int(10 * eps) + 100_000 * number
            t0 = time.perf_counter()
            p, priv, mse, ratio, z = ours_mse(protocol, args.n, d, k, eps, args.reps, seed)
            row = {
                "section": "mse",
                "protocol": protocol,
                "d": d,
                "k": k,
                "epsilon": eps,
                "n": args.n,
                "reps": args.reps,
                "closed_form": closed_form(priv, protocol, p, args.n, d),
                "ours_mse": mse,
                "ours_ratio": ratio,
                "ours_z": z,
                "ours_seconds": time.perf_counter() - t0,
                "load": load(),
            }
            if eps in args.anchor_eps and not args.no_anchors:
                rng = np.random.default_rng(seed + 1)
                X = draw(p, args.anchor_n, rng).to_numpy()
                np.random.seed(seed % 2**32)  # the anchors draw from numpy's global state
                reports, clipped, t_client, t_agg = anchor_reports(protocol, X, k, eps)
                raw = anchor_unbiased(protocol, reports, priv, d)
                u = standardized(
                    [raw[j] - p[j] for j in range(d)],
                    variances(priv, protocol, p, args.anchor_n, d),
                )
                _, _, mse_c, _, _ = ours_mse(
                    protocol, args.anchor_n, d, k, eps, args.reps, seed, "clip"
                )
                row.update(
                    anchor_n=args.anchor_n,
                    anchor_ratio=float(u.mean()),
                    anchor_z=float((u.mean() - 1) / np.sqrt(2 / u.size)),
                    anchor_clipped_mse=float(
                        np.mean([np.mean((clipped[j] - p[j]) ** 2) for j in range(d)])
                    ),
                    anchor_client_seconds=t_client[0],
                    ours_clipped_mse=mse_c,
                )
            rows.append(row)
            print(json.dumps(row), flush=True)


def section_speed(args, rows):
    for d in args.speed_d:
        for protocol in args.speed_protocols:
            rows.append(speed_cell(args, protocol, d))
            print(json.dumps(rows[-1]), flush=True)


def speed_cell(args, protocol, d):
    """One cell: ours and the anchor in turn ``--speed-repeats`` times, the
    best of each (CPU and wall seconds)."""
    n, k, eps = args.speed_n, args.speed_k, 1.0
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(k), size=d)
    X = draw(p, n, rng)
    m = args.speed_anchor_n or n
    best = {}

    def keep(key, value):
        best[key] = min(best.get(key, np.inf), value)

    row = {"section": "speed", "protocol": protocol, "n": n, "d": d, "k": k, "epsilon": eps}
    formats = [
        f for f in getattr(args, "report_formats", ["wide"]) if f == "wide" or protocol[:3] == "SMP"
    ]
    # Warm-up, untimed: both sides' compiled loops are loaded (or compiled)
    # at their first call; a timed call must not pay for it.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for fmt in formats:
            warm = privatizer(protocol, d, k, eps, fmt)
            warm.estimate(warm.fit_transform(X))
    if not args.no_anchors:
        anchor_reports(protocol, X.to_numpy()[:200], k, eps)
    row["load_before"] = load()
    for _ in range(args.speed_repeats):
        for fmt in formats:
            key = "ours" if fmt == "wide" else f"ours_{fmt}"
            priv = privatizer(protocol, d, k, eps, fmt)
            start, c0 = time.perf_counter(), cpu()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                reports = priv.fit_transform(X)
            mid, c1 = time.perf_counter(), cpu()
            est = priv.estimate(reports)
            end, c2 = time.perf_counter(), cpu()
            row[f"{key}_bytes"] = int(reports.memory_usage(index=False).sum())
            reports = None  # free it before the next run
            keep(f"{key}_privatize", mid - start)
            keep(f"{key}_privatize_cpu", c1 - c0)
            keep(f"{key}_estimate", end - mid)
            keep(f"{key}_estimate_cpu", c2 - c1)
            row[f"{key}_tv"] = float(
                np.mean([total_variation(p[j], est[f"a{j}"].to_numpy()) for j in range(d)])
            )
        if args.no_anchors:
            continue
        _, clipped, t_client, t_agg = anchor_reports(protocol, X.to_numpy()[:m], k, eps)
        keep("anchor_privatize", t_client[0])
        keep("anchor_privatize_cpu", t_client[1])
        keep("anchor_estimate", t_agg[0])
        keep("anchor_estimate_cpu", t_agg[1])
        row["anchor_tv"] = float(np.mean([total_variation(p[j], clipped[j]) for j in range(d)]))
    row.update(best)
    if not args.no_anchors:
        scale = n / m
        row["anchor_n"] = m
        row["speedup_privatize_cpu"] = (
            scale * best["anchor_privatize_cpu"] / best["ours_privatize_cpu"]
        )
        row["speedup_total_cpu"] = (
            scale
            * (best["anchor_privatize_cpu"] + best["anchor_estimate_cpu"])
            / (best["ours_privatize_cpu"] + best["ours_estimate_cpu"])
        )
        if "ours_compact_privatize_cpu" in best:
            row["compact_speedup_privatize_cpu"] = (
                scale * best["anchor_privatize_cpu"] / best["ours_compact_privatize_cpu"]
            )
            row["compact_speedup_total_cpu"] = (
                scale
                * (best["anchor_privatize_cpu"] + best["anchor_estimate_cpu"])
                / (best["ours_compact_privatize_cpu"] + best["ours_compact_estimate_cpu"])
            )
    row["load_after"] = load()
    return row


# -------------------------------------------------------------- real table
FAMILIES = ("RR", "OUE", "uRR", "uOUE", "best")


def family_mechanisms(data, family, strategy, eps_row, eps_attr):
    cols = list(data.frame.columns)
    d = len(cols)
    if strategy == "split":
        eps = eps_row / d
    elif strategy == "sample":
        eps = eps_row
    else:
        eps = eps_attr
    if family == "best":
        from sklearn_uldp.model_selection import choose_strategy

        columns = {c: data.categories[c] for c in cols}
        sens = {c: s for c, s in data.sensitive.items() if len(s) < len(data.categories[c])}
        row = eps_row
        attr = None if strategy != "sample+fake" else eps_attr
        if strategy == "sample+fake":
            row = float(np.log1p(d * np.expm1(eps_attr)))
        priv, table = choose_strategy(
            columns, row, sensitive=sens, attribute_epsilon=attr, n=len(data.frame)
        )
        picked = table.loc[strategy]
        from sklearn.base import clone

        from sklearn_uldp.model_selection._choose import _strategy_candidates

        out = {}
        for c in cols:
            name = picked.loc[c, "mechanism"]
            mask = np.isin(np.asarray(data.categories[c], dtype=object), data.sensitive[c])
            for short, mech in _strategy_candidates(
                eps, data.categories[c], mask, data.sensitive[c]
            ):
                if short == name:
                    out[c] = clone(mech)
        return out
    out = {}
    for c in cols:
        cats, sens = data.categories[c], data.sensitive[c]
        out[c] = {
            "RR": lambda: RandomizedResponse(eps, categories=cats),
            "OUE": lambda: RAPPOR(eps, theta=0.5, categories=cats),
            "uRR": lambda: UtilityOptimizedRR(eps, sensitive=sens, categories=cats),
            "uOUE": lambda: UtilityOptimizedOUE(eps, sensitive=sens, categories=cats),
        }[family]()
    return out


def section_real(args, rows):
    from sklearn_uldp.datasets import load_election_survey

    data = load_election_survey()
    df = data.frame
    d = df.shape[1]
    eps = 1.0
    truth = {c: data.distribution[c].to_numpy() for c in df}
    settings = [
        ("split", eps, None),
        ("sample", eps, None),
        ("sample+fake", None, eps),  # attribute eps, row eps'
        ("sample+fake", None, float(np.log1p(np.expm1(eps) / d))),  # row eps
    ]
    for family in FAMILIES:
        for strategy, row_eps, attr_eps in settings:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                mechs = family_mechanisms(data, family, strategy, row_eps or eps, attr_eps)
            tv = {"emp+simplex": [], "EM": []}
            start = time.perf_counter()
            for r in range(args.real_reps):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    priv = DataFramePrivatizer(mechs, strategy=strategy, random_state=r)
                    reports = priv.fit_transform(df)
                for name, est in (("emp+simplex", None), ("EM", EMEstimator())):
                    dist = priv.estimate(reports, est)
                    tv[name].append(
                        np.mean([total_variation(truth[c], dist[c].to_numpy()) for c in df])
                    )
            row = {
                "section": "real",
                "family": family,
                "strategy": strategy,
                "row_epsilon": priv.epsilon_spent_,
                "attribute_epsilon": max(priv.attribute_epsilons_.values()),
                "mechanisms": {c: type(m).__name__ for c, m in mechs.items()}
                if family == "best"
                else None,
                "tv_emp_simplex": float(np.mean(tv["emp+simplex"])),
                "tv_emp_simplex_sd": float(np.std(tv["emp+simplex"], ddof=1))
                if args.real_reps > 1
                else None,
                "tv_em": float(np.mean(tv["EM"])),
                "tv_em_sd": float(np.std(tv["EM"], ddof=1)) if args.real_reps > 1 else None,
                "reps": args.real_reps,
                "seconds": time.perf_counter() - start,
                "load": load(),
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
    if args.no_anchors:
        return
    from multi_freq_ldpy.mdim_freq_est import RSpFD_solution as R
    from multi_freq_ldpy.mdim_freq_est import SMP_solution as S
    from multi_freq_ldpy.mdim_freq_est import SPL_solution as P

    X = np.column_stack([df[c].cat.codes.to_numpy() for c in df])
    lk = [len(data.categories[c]) for c in df]
    for name, client, aggregate in (
        (
            "SPL-ADP",
            lambda x: P.SPL_ADP_Client(x, lk, d, eps),
            lambda r: P.SPL_ADP_Aggregator_MI(r, lk, d, eps),
        ),
        (
            "SMP-ADP",
            lambda x: S.SMP_ADP_Client(x, lk, d, eps),
            lambda r: S.SMP_ADP_Aggregator_MI(r, lk, d, eps),
        ),
        (
            "RSFD-ADP",
            lambda x: R.RSpFD_ADP_Client(x, lk, d, eps),
            lambda r: R.RSpFD_ADP_Aggregator_MI(r, lk, d, eps),
        ),
    ):
        np.random.seed(0)
        start = time.perf_counter()
        est = aggregate([client(x) for x in X])
        rows.append(
            row := {
                "section": "real",
                "family": "multi-freq-ldpy ADP",
                "strategy": name,
                "tv_their_aggregator": float(
                    np.mean(
                        [
                            total_variation(truth[c], np.asarray(est[j], float))
                            for j, c in enumerate(df)
                        ]
                    )
                ),
                "seconds": time.perf_counter() - start,
                "load": load(),
            }
        )
        print(json.dumps(row), flush=True)


def _fmt(x, digits=3):
    if x is None or (isinstance(x, float) and not np.isfinite(x)):
        return "-"
    return f"{x:.{digits}g}"


def render(rows):
    """Markdown tables of a run's rows (the docs' "Measurements")."""
    out = []
    mse = [r for r in rows if r["section"] == "mse"]
    if mse:
        n, reps = mse[0]["n"], mse[0]["reps"]
        out += [
            f"**Per-attribute MSE against the closed forms** (n = {n:,}, unbiased "
            f"estimates, {reps} uploads with fresh data per cell; the mean of "
            "(p̂ − p)² / Var over attributes, categories and uploads, 1 when the "
            "MSE is the closed form; and the largest |z| of its deviation over the "
            "protocols, with the conservative standard error √(2 / (uploads · d))):",
            "",
            "| d | k | ε | " + " | ".join(PROTOCOLS) + " | max \\|z\\| |",
            "|" + "---|" * (len(PROTOCOLS) + 4),
        ]
        cells = {}
        for r in mse:
            cells.setdefault((r["d"], r["k"], r["epsilon"]), {})[r["protocol"]] = r
        for (d, k, e), by in sorted(cells.items()):
            ratios = [
                _fmt(by[p]["ours_mse"] / by[p]["closed_form"]) if p in by else "-"
                for p in PROTOCOLS
            ]
            zmax = max(abs(by[p]["ours_z"]) for p in by)
            out.append(f"| {d} | {k} | {e:g} | " + " | ".join(ratios) + f" | {zmax:.2g} |")
        zs = np.array([abs(r["ours_z"]) for r in mse])
        out += [
            "",
            f"{len(zs)} cells: |z| > 2 in {int((zs > 2).sum())}, > 3 in {int((zs > 3).sum())} "
            f"(a normal z would give about {0.046 * len(zs):.1f} and {0.0027 * len(zs):.1f}; "
            "this standard error is an upper bound, so fewer are expected).",
            "",
        ]
        anchored = [r for r in mse if "anchor_ratio" in r]
        if anchored:
            out += [
                "**multi-freq-ldpy on the same cells** (one upload of "
                f"n = {anchored[0]['anchor_n']:,} per cell; its clients' reports "
                "estimated without post-processing, the same ratio with its z; and "
                "its aggregators' clipped, normalized estimates "
                'against ours with `projection="clip"`):',
                "",
                "| d | k | ε | protocol | theirs / closed form (z) | their aggregator MSE "
                "| ours, clipped |",
                "|---|---|---|---|---|---|---|",
            ]
            for r in anchored:
                out.append(
                    f"| {r['d']} | {r['k']} | {r['epsilon']:g} | {r['protocol']} | "
                    f"{r['anchor_ratio']:.3g} ({r['anchor_z']:+.2g}) | "
                    f"{_fmt(r['anchor_clipped_mse'])} | {_fmt(r['ours_clipped_mse'])} |"
                )
            out.append("")
    speed = [r for r in rows if r["section"] == "speed"]
    if speed:
        out += [
            f"**Speed** (n = {speed[0]['n']:,}, k = {speed[0]['k']}, ε = 1; seconds, wall "
            "(CPU), the best of the runs, ours and the anchor in turn; an anchor run on "
            "fewer users is scaled to n, marked ~; load average before each row in the "
            "last column):",
            "",
            "| protocol | d | ours: privatize | ours: estimate | multi-freq-ldpy: privatize | "
            "multi-freq-ldpy: estimate | CPU ratio privatize | CPU ratio total | "
            "TV ours / theirs | load |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        compact = [r for r in speed if "ours_compact_privatize" in r]
        for r in speed:
            nan = float("nan")
            scale = r["n"] / r.get("anchor_n", r["n"])
            mark = "~" if scale != 1 else ""
            theirs_p = (
                f"{mark}{scale * r.get('anchor_privatize', nan):.1f} "
                f"({scale * r.get('anchor_privatize_cpu', nan):.1f})"
            )
            theirs_e = (
                f"{r.get('anchor_estimate', nan):.2f} ({r.get('anchor_estimate_cpu', nan):.2f})"
            )
            tv = f"{r['ours_tv']:.3f} / {r.get('anchor_tv', nan):.3f}"
            out.append(
                f"| {r['protocol']} | {r.get('d', 6)} | {r['ours_privatize']:.2f} "
                f"({r['ours_privatize_cpu']:.2f}) | {r['ours_estimate']:.2f} "
                f"({r['ours_estimate_cpu']:.2f}) | {theirs_p} | {theirs_e} | "
                f"{r.get('speedup_privatize_cpu', nan):.1f}× | "
                f"{r.get('speedup_total_cpu', nan):.1f}× | {tv} | {r['load_before']:.1f} |"
            )
        out.append("")
        if compact:
            out += [
                "**SMP's report formats** (the same runs: wide, compact and the "
                "anchor in turn; CPU seconds, best of the runs; reports' size in MB):",
                "",
                "| protocol | d | wide: privatize | wide: total | wide MB | compact: "
                "privatize | compact: total | compact MB | compact CPU ratio privatize | "
                "compact CPU ratio total | load |",
                "|---|---|---|---|---|---|---|---|---|---|---|",
            ]
            for r in compact:
                nan = float("nan")
                out.append(
                    f"| {r['protocol']} | {r['d']} | {r['ours_privatize_cpu']:.3f} | "
                    f"{r['ours_privatize_cpu'] + r['ours_estimate_cpu']:.3f} | "
                    f"{r['ours_bytes'] / 1e6:.0f} | {r['ours_compact_privatize_cpu']:.3f} | "
                    f"{r['ours_compact_privatize_cpu'] + r['ours_compact_estimate_cpu']:.3f} | "
                    f"{r['ours_compact_bytes'] / 1e6:.0f} | "
                    f"{r.get('compact_speedup_privatize_cpu', nan):.1f}× | "
                    f"{r.get('compact_speedup_total_cpu', nan):.1f}× | {r['load_before']:.1f} |"
                )
            out.append("")
    real = [r for r in rows if r["section"] == "real" and "tv_em" in r]
    if real:
        out += [
            "**The CCES survey** (64,600 people, 12 attributes, row budget 1 unless "
            "marked; mean TV over the attributes, mean ± sd over "
            f"{real[0]['reps']} uploads):",
            "",
            "| family | strategy | row ε | attribute ε | TV emp+simplex | TV EM |",
            "|---|---|---|---|---|---|",
        ]
        for r in real:
            out.append(
                f"| {r['family']} | {r['strategy']} | {r['row_epsilon']:.3g} | "
                f"{r['attribute_epsilon']:.3g} | {r['tv_emp_simplex']:.4f} ± "
                f"{_fmt(r['tv_emp_simplex_sd'], 2)} | {r['tv_em']:.4f} ± {_fmt(r['tv_em_sd'], 2)} |"
            )
        theirs = [r for r in rows if r["section"] == "real" and "tv_their_aggregator" in r]
        for r in theirs:
            out.append(
                f"| multi-freq-ldpy ADP | {r['strategy']} | "
                f"{'ε′ (paper)' if r['strategy'].startswith('RSFD') else '1'} | "
                f"{'1' if r['strategy'].startswith('RSFD') else '-'} | "
                f"{r['tv_their_aggregator']:.4f} (their aggregator) | - |"
            )
        out.append("")
    return "\n".join(out)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sections", nargs="+", default=["mse", "speed", "real"])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--d", type=int, nargs="+", default=[3, 6, 10])
    parser.add_argument("--k", type=int, nargs="+", default=[2, 10, 50])
    parser.add_argument("--eps", type=float, nargs="+", default=[0.5, 1.0, 4.0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--anchor-eps", type=float, nargs="*", default=[1.0])
    parser.add_argument("--anchor-n", type=int, default=100_000)
    parser.add_argument("--speed-n", type=int, default=1_000_000)
    parser.add_argument("--speed-anchor-n", type=int, default=None)
    parser.add_argument(
        "--speed-protocols",
        nargs="+",
        default=["SPL-GRR", "SPL-OUE", "SMP-GRR", "SMP-OUE", "RSFD-GRR", "RSFD-OUE-z"],
    )
    parser.add_argument("--speed-d", type=int, nargs="+", default=[3, 6, 10])
    parser.add_argument("--speed-k", type=int, default=10)
    parser.add_argument(
        "--report-formats",
        nargs="+",
        choices=["wide", "compact"],
        default=["wide"],
        help="SMP's report formats to time (wide, compact or both, in turn)",
    )
    parser.add_argument(
        "--speed-repeats", type=int, default=1, help="best of; ours and the anchor in turn"
    )
    parser.add_argument("--real-reps", type=int, default=5)
    parser.add_argument("--no-anchors", action="store_true")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", default=None)
    parser.add_argument(
        "--render", nargs="+", default=None, help="JSON files of earlier runs: print markdown"
    )
    args = parser.parse_args(argv)
    if args.render:
        rows = [r for path in args.render for r in json.load(open(path))]
        print(render(rows))
        return rows
    if args.quick:
        args.n, args.anchor_n, args.reps, args.real_reps = 20_000, 5_000, 2, 2
        args.d, args.k, args.eps = [3], [10], [1.0]
        args.speed_n, args.speed_anchor_n = 100_000, 5_000
    rows = []
    print(f"# uptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    for section in args.sections:
        {"mse": section_mse, "speed": section_speed, "real": section_real}[section](args, rows)
    print(f"# uptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    print(render(rows))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return rows


if __name__ == "__main__":
    main()
