#!/usr/bin/env python
"""uLH at scale: utility-optimized local hashing against OLH, ours and the anchors'.

The goal of issue 35: at k = 100,000 categories, n = 10^6 users, 1 % of the
categories sensitive (every 100th, so the most frequent value is one of
them), Zipf(1.1) data and eps = 1,

* total variation of uLH's estimate at most 0.8 x OLH's (the same estimator
  for both: the unbiased ``emp`` and the default ``EMEstimator``),
* peak memory of the uLH cell at most 1.5 GB,
* uLH's privatize + estimate at least 10 x faster than the faster anchor's
  OLH (pure-ldp's ``LHClient``/``LHServer``, multi-freq-ldpy's
  ``LH_Client``/``LH_Aggregator_MI``).

Every cell runs in a fresh interpreter (its own peak memory, imports and JIT
compilation included in nothing but its own first call: the sklearn-uldp
cells time a warm-up-free first run), ours and the anchors alternately, so
drift of the machine's load cancels in the ratios. The anchors estimate one
category at a time over all reports (O(n k): 10^11 hash evaluations here),
so at full size they are stopped at ``--timeout`` (their time is then a lower
bound), and also timed on ``--anchor-n`` users, whose per-user privatization
and per-(user, category) estimation rates give an extrapolated time for n
(shown with ``~``).

``--open-domain`` also compares the two utility-optimized heavy-hitter
protocols on text items: UtilityOptimizedHeavyHitters (an eps/2 oracle for
the sensitive items) against UtilityOptimizedLocalHashingHeavyHitters (uLH at
the whole budget): the mean squared error of the sensitive items and of the
non-sensitive top items, per epsilon.

    python benchmarks/bench_ulh.py                 # the issue's cell
    python benchmarks/bench_ulh.py --n 200000 --timeout 60 --open-domain
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _anchors import compat_shims  # noqa: E402
from _measure import (  # noqa: E402
    RESULT_PREFIX,
    cell_result,
    child_env,
    failure_tail,
    peak_rss_mb,
    run_cell_process,
    tv_distance,
    zipf_probabilities,
)


def _timed(fn):
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - t0, time.process_time() - c0


# ----------------------------------------------------------------- cells
def run_ours(cell, X, true):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, root)
    from sklearn_uldp import EMEstimator, EmpiricalEstimator
    from sklearn_uldp.mechanisms import OptimizedLocalHashing, UtilityOptimizedLocalHashing

    k, eps, seed = cell["k"], cell["epsilon"], cell["seed"]
    cats = np.arange(k)
    if cell["mechanism"] == "ulh":
        mech = UtilityOptimizedLocalHashing(
            eps, sensitive=cats[:: cell["every"]], categories=cats, random_state=seed
        )
    else:
        mech = OptimizedLocalHashing(eps, categories=cats, random_state=seed)
    X2 = X.reshape(-1, 1)
    reports, t_priv, c_priv = _timed(lambda: mech.fit(X2).transform(X2))
    out = {"privatize_s": t_priv, "privatize_cpu": c_priv, "estimators": {}}
    for name, est in (("emp", EmpiricalEstimator()), ("em", EMEstimator())):
        dist, t, c = _timed(lambda: np.asarray(est.fit(reports).distribution_))
        out["estimators"][name] = {"time_s": t, "cpu_s": c, "tv": tv_distance(dist, true)}
    out["g"] = int(mech.hash_range_)
    return out


def _anchor_olh(library, k, eps, seed):
    """(privatize one value, estimate all k from the reports) of an anchor's OLH."""
    import random

    compat_shims()
    random.seed(seed)
    np.random.seed(seed)
    if library == "pure_ldp":
        from pure_ldp.frequency_oracles.local_hashing import LHClient, LHServer

        identity = lambda x: x  # noqa: E731  (the default maps 1-based items)
        client = LHClient(epsilon=eps, d=k, use_olh=True, index_mapper=identity)
        server = LHServer(epsilon=eps, d=k, use_olh=True, index_mapper=identity)

        def estimate(reports):
            server.aggregate_all(reports)
            est = server.estimate_all(list(range(k)), suppress_warnings=True)
            return np.asarray(est) / len(reports)

        return client.privatise, estimate
    from multi_freq_ldpy.pure_frequency_oracles.LH import LH_Aggregator_MI, LH_Client

    return (
        lambda v: LH_Client(v, k, eps, True),
        lambda reports: np.asarray(LH_Aggregator_MI(reports, k, eps, True)),
    )


def run_anchor(cell, X, true):
    privatize, estimate = _anchor_olh(cell["library"], cell["k"], cell["epsilon"], cell["seed"])
    privatize(int(X[0]))  # imports and JIT outside the timed part
    data = X.tolist()
    reports, t_priv, c_priv = _timed(lambda: [privatize(v) for v in data])
    dist, t_est, c_est = _timed(lambda: estimate(reports))
    return {
        "privatize_s": t_priv,
        "privatize_cpu": c_priv,
        "estimators": {
            "emp": {"time_s": t_est, "cpu_s": c_est, "tv": tv_distance(dist, true)},
        },
    }


def run_cell(cell):
    warnings.simplefilter("ignore")
    X = np.load(cell["data_path"])[: cell["n"]]
    true = np.bincount(X, minlength=cell["k"]) / X.size
    runner = run_ours if cell["library"] == "sklearn_uldp" else run_anchor
    res = runner(cell, X, true)
    res["peak_mb"] = peak_rss_mb()
    return res


def spawn(cell, timeout, threads):
    start = time.perf_counter()
    try:
        done = run_cell_process(__file__, cell, timeout=timeout, env=child_env(threads))
    except subprocess.TimeoutExpired:
        return {"status": "timeout", "wall_s": time.perf_counter() - start}
    res = cell_result(done)
    if res is None:
        return {"status": f"failed: {failure_tail(done)}"[:200]}
    res["status"] = "ok"
    return res


# ------------------------------------------------------------ open domain
def open_domain(n, k, epsilons, repeats, seed):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, root)
    from sklearn_uldp.heavy_hitters import (
        HeavyHitterEstimator,
        UtilityOptimizedHeavyHitters,
        UtilityOptimizedLocalHashingHeavyHitters,
    )

    items = np.array([f"item{j}" for j in range(k)], dtype=object)
    sensitive = list(items[::50])
    top = [items[j] for j in range(40) if j % 50]
    print(
        f"\n## Open domain: {k} text items, {len(sensitive)} sensitive, n = {n}, "
        f"{repeats} repeats\n"
    )
    print("| eps | protocol | g | MSE sensitive | MSE non-sensitive top | time (s) |")
    print("|---|---|---|---|---|---|")
    for eps in epsilons:
        for cls in (UtilityOptimizedHeavyHitters, UtilityOptimizedLocalHashingHeavyHitters):
            mse_s, mse_n, times = [], [], []
            for rep in range(repeats):
                rng = np.random.default_rng(seed + rep)
                X = items[rng.choice(k, size=n, p=zipf_probabilities(k))]
                true = dict(zip(*np.unique(X, return_counts=True), strict=True))
                mech = cls(epsilon=eps, sensitive=sensitive, random_state=seed + rep).fit()
                t0 = time.perf_counter()
                table = HeavyHitterEstimator().fit(mech.transform(X)).candidates_
                times.append(time.perf_counter() - t0)
                est = dict(zip(table["item"], table["frequency"], strict=True))
                mse_s.append(
                    np.mean([(est.get(x, 0) - true.get(x, 0) / n) ** 2 for x in sensitive])
                )
                mse_n.append(np.mean([(est.get(x, 0) - true.get(x, 0) / n) ** 2 for x in top]))
            print(
                f"| {eps:g} | {cls.__name__} | {mech.protocol_.oracle.hash_range} | "
                f"{np.mean(mse_s):.3g} | {np.mean(mse_n):.3g} | {np.median(times):.2f} |"
            )


# ----------------------------------------------------------------- report
def _fmt(res, key="emp"):
    if res.get("status") != "ok":
        return f">{res['wall_s']:.0f}" if res.get("status") == "timeout" else res.get("status")
    total = res["privatize_s"] + res["estimators"][key]["time_s"]
    return f"{total:.2f}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cell", help=argparse.SUPPRESS)
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--k", type=int, default=100_000)
    ap.add_argument("--every", type=int, default=100, help="every so-many-th category is sensitive")
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per anchor cell")
    ap.add_argument("--anchor-n", type=int, nargs="+", default=[300, 600])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--open-domain", action="store_true")
    ap.add_argument("--open-n", type=int, default=200_000)
    ap.add_argument("--json", help="also write the raw results here")
    args = ap.parse_args(argv)
    if args.cell:
        print(RESULT_PREFIX + json.dumps(run_cell(json.loads(args.cell))))
        return
    print(f"load before: {os.getloadavg()}", file=sys.stderr)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "x.npy")
        rng = np.random.default_rng(args.seed)
        np.save(path, rng.choice(args.k, size=args.n, p=zipf_probabilities(args.k)))
        base = {"k": args.k, "epsilon": args.epsilon, "seed": args.seed, "data_path": path}
        plan = []
        for rep in range(args.repeats):
            plan += [
                {"library": "sklearn_uldp", "mechanism": "ulh", "n": args.n, "rep": rep},
                {"library": "pure_ldp", "n": args.n, "rep": rep},
                {"library": "sklearn_uldp", "mechanism": "olh", "n": args.n, "rep": rep},
                {"library": "multi_freq_ldpy", "n": args.n, "rep": rep},
            ]
        for small in args.anchor_n:
            plan += [
                {"library": lib, "n": small, "rep": 0} for lib in ("pure_ldp", "multi_freq_ldpy")
            ]
        for cell in plan:
            cell = {**base, "every": args.every, **cell}
            load = os.getloadavg()[0]
            res = spawn(cell, args.timeout, args.threads)
            res["load"] = load
            results.append((cell, res))
            print(
                f"{cell['library']} {cell.get('mechanism', 'olh')} n={cell['n']}: "
                f"{res['status']} total {_fmt(res)} s (load {load:.1f})",
                file=sys.stderr,
                flush=True,
            )
    print(f"load after: {os.getloadavg()}", file=sys.stderr)
    report(results, args)
    if args.open_domain:
        open_domain(args.open_n, 10_000, [0.5, 1.0, 2.0, 4.0], 3, args.seed)
    if args.json:
        with open(args.json, "w") as f:
            json.dump([{"cell": c, "result": r} for c, r in results], f, indent=1)


def report(results, args):
    full = [(c, r) for c, r in results if c["n"] == args.n]
    print(
        f"\n## k = {args.k}, n = {args.n}, eps = {args.epsilon:g}, "
        f"{args.k // args.every} sensitive categories, Zipf(1.1)\n"
    )
    print(
        "| library | oracle | rep | privatize (s) | emp (s) | em (s) | TV emp | TV em "
        "| peak MB | load |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for cell, res in full:
        name = cell.get("mechanism", "olh")
        if res.get("status") != "ok":
            print(
                f"| {cell['library']} | {name} | {cell['rep']} | {_fmt(res)} (all) "
                f"| | | | | | {res['load']:.1f} |"
            )
            continue
        est = res["estimators"]
        em = est.get("em", {})
        print(
            f"| {cell['library']} | {name} | {cell['rep']} | {res['privatize_s']:.2f} | "
            f"{est['emp']['time_s']:.2f} | {em.get('time_s', float('nan')):.2f} | "
            f"{est['emp']['tv']:.3f} | {em.get('tv', float('nan')):.3f} | "
            f"{res['peak_mb']:.0f} | {res['load']:.1f} |"
        )
    # extrapolation of the anchors from the small runs
    print(
        "\n| anchor | n | privatize (s) | estimate (s) | per user (us) | per user x category (ns) |"
    )
    print("|---|---|---|---|---|---|")
    rates = {}
    for cell, res in results:
        if cell["library"] == "sklearn_uldp" or cell["n"] == args.n or res.get("status") != "ok":
            continue
        priv = res["privatize_s"] / cell["n"]
        est = res["estimators"]["emp"]["time_s"] / (cell["n"] * args.k)
        rates.setdefault(cell["library"], []).append((priv, est))
        print(
            f"| {cell['library']} | {cell['n']} | {res['privatize_s']:.2f} | "
            f"{res['estimators']['emp']['time_s']:.2f} | {priv * 1e6:.1f} | {est * 1e9:.2f} |"
        )
    ours = [
        r["privatize_s"] + r["estimators"]["emp"]["time_s"]
        for c, r in full
        if c["library"] == "sklearn_uldp"
        and c.get("mechanism") == "ulh"
        and r.get("status") == "ok"
    ]
    tv = {
        m: [
            r["estimators"][e]["tv"]
            for c, r in full
            if c.get("mechanism") == m and r.get("status") == "ok"
            for e in ("emp",)
        ]
        for m in ("ulh", "olh")
    }
    tv_em = {
        m: [
            r["estimators"]["em"]["tv"]
            for c, r in full
            if c.get("mechanism") == m and r.get("status") == "ok"
        ]
        for m in ("ulh", "olh")
    }
    print()
    if ours:
        best = min(ours)
        print(f"uLH privatize + emp: {best:.2f} s (best of {len(ours)})")
        for lib, rs in rates.items():
            priv, est = np.mean(rs, axis=0)
            extrapolated = (priv + est * args.k) * args.n
            bound = [
                r.get("wall_s", np.nan)
                for c, r in full
                if c["library"] == lib and r.get("status") == "timeout"
            ]
            measured = [
                r["privatize_s"] + r["estimators"]["emp"]["time_s"]
                for c, r in full
                if c["library"] == lib and r.get("status") == "ok"
            ]
            text = f"{lib}: ~{extrapolated:.0f} s extrapolated (ratio ~{extrapolated / best:.0f}x)"
            if measured:
                text += f", measured {min(measured):.0f} s (ratio {min(measured) / best:.0f}x)"
            elif bound:
                text += f", stopped after {min(bound):.0f} s (ratio > {min(bound) / best:.0f}x)"
            print(text)
    if tv["ulh"] and tv["olh"]:
        print(
            f"TV emp: uLH {np.mean(tv['ulh']):.3f} vs OLH {np.mean(tv['olh']):.3f} "
            f"(ratio {np.mean(tv['ulh']) / np.mean(tv['olh']):.3f}); "
            f"TV em: uLH {np.mean(tv_em['ulh']):.3f} vs OLH {np.mean(tv_em['olh']):.3f} "
            f"(ratio {np.mean(tv_em['ulh']) / np.mean(tv_em['olh']):.3f})"
        )


if __name__ == "__main__":
    main()
