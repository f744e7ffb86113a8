#!/usr/bin/env python
"""Benchmark the hashing and subset oracles: sklearn-uldp vs pure-ldp vs multi-freq-ldpy.

Mechanisms: optimized and binary local hashing (OLH, BLH; both anchors),
subset selection (SS; multi-freq-ldpy), Apple's count-mean sketch and its
Hadamard variant (CMS, HCMS; pure-ldp). For every (mechanism, k, epsilon,
library) cell, in a fresh subprocess (so that the peak memory is the cell's
own and a timeout can stop a slow cell):

* wall time to privatize the n users,
* wall time of each estimator ("reports in, frequency vector out": counting
  and aggregation included): ``emp`` (unbiased), ``thresh`` (significance
  threshold; pure-ldp's threshold cut), ``em`` (EM; multi-freq-ldpy's IBU),
* total variation 0.5 ||p_hat - p||_1 to the data's empirical distribution,
* peak resident memory of the cell.

The data are Zipf(1.1) draws over k categories, identical for all libraries.
At the end the script prints, for each cell, the ratios anchor time /
sklearn-uldp time (privatization, and estimation with the matching
estimator). A cell that exceeds ``--timeout`` is reported as such (its time is
then a lower bound for the ratio).

Examples
--------
python benchmarks/bench_oracles.py --quick            # n = 1e5
python benchmarks/bench_oracles.py                    # n = 1e6, k in {100, 1000}
python benchmarks/bench_oracles.py --mechanisms olh --k 100 --eps 1
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

# the anchors' compatibility shims, shared with the other benchmark scripts
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

MECHANISMS = ("olh", "blh", "ss", "cms", "hcms")
ANCHORS = {
    "olh": ("pure_ldp", "multi_freq_ldpy"),
    "blh": ("pure_ldp", "multi_freq_ldpy"),
    "ss": ("multi_freq_ldpy",),
    "cms": ("pure_ldp",),
    "hcms": ("pure_ldp",),
}
#: Sketch sizes, the same for both libraries.
CMS_M, CMS_H = 256, 256
HCMS_M, HCMS_H = 1024, 256


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


# ------------------------------------------------------------------- shims
# ----------------------------------------------------------------- runners
def run_sklearn_uldp(mech, X, k, eps, seed, true):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, root)
    from sklearn_uldp import EMEstimator, EmpiricalEstimator, ThresholdEstimator
    from sklearn_uldp.mechanisms._count_mean_sketch import (
        CountMeanSketch,
        HadamardCountMeanSketch,
    )
    from sklearn_uldp.mechanisms._local_hashing import (
        BinaryLocalHashing,
        OptimizedLocalHashing,
    )
    from sklearn_uldp.mechanisms._subset_selection import SubsetSelection

    cats = np.arange(k)
    make = {
        "olh": lambda: OptimizedLocalHashing(eps, categories=cats, random_state=seed),
        "blh": lambda: BinaryLocalHashing(eps, categories=cats, random_state=seed),
        "ss": lambda: SubsetSelection(eps, categories=cats, random_state=seed),
        "cms": lambda: CountMeanSketch(
            eps, n_buckets=CMS_M, n_hashes=CMS_H, categories=cats, random_state=seed
        ),
        "hcms": lambda: HadamardCountMeanSketch(
            eps, n_buckets=HCMS_M, n_hashes=HCMS_H, categories=cats, random_state=seed
        ),
    }[mech]
    m = make()
    X2 = X.reshape(-1, 1)
    base = peak_rss_mb()
    reports, t_priv = _timed(lambda: m.fit(X2).transform(X2))
    out = {}
    for name, est in (
        ("emp", EmpiricalEstimator()),
        ("thresh", ThresholdEstimator()),
        ("em", EMEstimator()),
    ):
        try:
            dist, t = _timed(lambda: np.asarray(est.fit(reports).distribution_))
            note = f"it={est.n_iter_}" if hasattr(est, "n_iter_") else ""
            out[name] = {"time_s": t, "tv": tv_distance(dist, true), "note": note}
        except Exception as e:  # report and go on
            out[name] = {"error": f"{type(e).__name__}: {e}"[:120]}
    params = {
        "olh": lambda: f"g={m.hash_range_}",
        "ss": lambda: f"d={m.subset_size_}",
        "blh": lambda: "g=2",
        "cms": lambda: f"m={CMS_M},h={CMS_H}",
        "hcms": lambda: f"m={HCMS_M},h={HCMS_H}",
    }[mech]()
    return {
        "privatize_s": t_priv,
        "estimators": out,
        "baseline_mb": base,
        "params": params,
        "report_bits": float(m.channel_.report_bits),
    }


def run_pure_ldp(mech, X, k, eps, seed, true):
    import random

    compat_shims()
    random.seed(seed)
    np.random.seed(seed)
    identity = lambda x: x  # noqa: E731  (the default maps 1-based items)
    data = X.tolist()
    domain = list(range(k))
    if mech in ("olh", "blh"):
        from pure_ldp.frequency_oracles.local_hashing import LHClient, LHServer

        olh = mech == "olh"
        client = LHClient(epsilon=eps, d=k, use_olh=olh, index_mapper=identity)
        server = LHServer(epsilon=eps, d=k, use_olh=olh, index_mapper=identity)
        params = f"g={server.g}"
    else:
        from pure_ldp.frequency_oracles.apple_cms import CMSClient, CMSServer

        had = mech == "hcms"
        m, h = (HCMS_M, HCMS_H) if had else (CMS_M, CMS_H)
        server = CMSServer(epsilon=eps, k=h, m=m, is_hadamard=had)
        client = CMSClient(epsilon=eps, hash_funcs=server.get_hash_funcs(), m=m, is_hadamard=had)
        params = f"m={m},h={h}"
    base = peak_rss_mb()
    reports, t_priv = _timed(lambda: [client.privatise(v) for v in data])
    _, t_agg = _timed(lambda: server.aggregate_all(reports))
    out = {}
    for name, norm in (("emp", 0), ("thresh", 3)):
        try:
            est, t = _timed(
                lambda: server.estimate_all(domain, suppress_warnings=True, normalization=norm)
            )
            out[name] = {
                "time_s": t_agg + t,
                "tv": tv_distance(np.asarray(est) / len(data), true),
                "note": "" if norm == 0 else "cut",
            }
        except Exception as e:
            out[name] = {"error": f"{type(e).__name__}: {e}"[:120]}
    return {"privatize_s": t_priv, "estimators": out, "baseline_mb": base, "params": params}


def run_multi_freq_ldpy(mech, X, k, eps, seed, true, ibu_iter=10000, ibu_tol=1e-12):
    import numba

    compat_shims()

    @numba.njit
    def _seed(s):
        np.random.seed(s)

    data = X.tolist()
    k, eps = int(k), float(eps)
    if mech in ("olh", "blh"):
        from multi_freq_ldpy.pure_frequency_oracles.LH import (
            LH_Aggregator_IBU,
            LH_Aggregator_MI,
            LH_Client,
        )

        olh = mech == "olh"
        client = lambda v: LH_Client(v, k, eps, olh)  # noqa: E731
        mi = lambda r: LH_Aggregator_MI(r, k, eps, olh)  # noqa: E731
        ibu = lambda r: LH_Aggregator_IBU(  # noqa: E731
            r, k, eps, olh, nb_iter=ibu_iter, tol=ibu_tol
        )
        params = f"g={int(round(np.exp(eps))) + 1 if olh else 2}"
    else:
        from multi_freq_ldpy.pure_frequency_oracles.SS import (
            SS_Aggregator_IBU,
            SS_Aggregator_MI,
            SS_Client,
        )

        client = lambda v: SS_Client(v, k, eps)  # noqa: E731
        mi = lambda r: SS_Aggregator_MI(r, k, eps)  # noqa: E731
        ibu = lambda r: SS_Aggregator_IBU(r, k, eps, nb_iter=ibu_iter, tol=ibu_tol)  # noqa: E731
        params = f"d={int(max(1, np.rint(k / (np.exp(eps) + 1))))}"
    warm = [client(v) for v in data[:10]]  # numba JIT outside the timed part
    mi(warm)
    _seed(seed)
    base = peak_rss_mb()
    reports, t_priv = _timed(lambda: [client(v) for v in data])
    out = {}
    for name, fn in (("emp", mi), ("em", ibu)):
        try:
            est, t = _timed(lambda: fn(reports))
            out[name] = {
                "time_s": t,
                "tv": tv_distance(est, true),
                "note": "MI clip+renorm" if name == "emp" else "IBU",
            }
        except Exception as e:
            out[name] = {"error": f"{type(e).__name__}: {e}"[:120]}
    return {"privatize_s": t_priv, "estimators": out, "baseline_mb": base, "params": params}


RUNNERS = {
    "sklearn_uldp": run_sklearn_uldp,
    "pure_ldp": run_pure_ldp,
    "multi_freq_ldpy": run_multi_freq_ldpy,
}


def run_cell(cell):
    warnings.simplefilter("ignore")
    X = np.load(cell["data_path"])
    k = cell["k"]
    true = np.bincount(X, minlength=k) / X.shape[0]
    res = RUNNERS[cell["library"]](cell["mechanism"], X, k, cell["epsilon"], cell["seed"], true)
    res["peak_mb"] = peak_rss_mb()
    return res


def spawn(cell, timeout, threads):
    try:
        r = run_cell_process(__file__, cell, timeout=timeout, env=child_env(threads))
    except subprocess.TimeoutExpired:
        return {"status": f"timeout>{timeout:g}s"}
    res = cell_result(r)
    if res is not None:
        res["status"] = "ok"
        return res
    return {"status": f"failed: {failure_tail(r)}"[:200]}


# ------------------------------------------------------------------ report
def _fmt_time(res, key=None):
    if res.get("status") != "ok":
        return res.get("status", "?")
    if key is None:
        return f"{res['privatize_s']:.2f}"
    e = res["estimators"].get(key)
    if e is None:
        return "-"
    if "error" in e:
        return "error"
    return f"{e['time_s']:.2f}"


def _best(res, key):
    e = res.get("estimators", {}).get(key, {}) if res.get("status") == "ok" else {}
    return e.get("time_s"), e.get("tv")


def print_table(results, n):
    print(f"\n## Hashing and subset oracles, n = {n:,}\n")
    print(
        "| mech | k | eps | library | params | privatize s | emp s (TV) | thresh s (TV) "
        "| em s (TV) | peak MB |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for (mech, k, eps, lib), res in results.items():
        cols = []
        for key in ("emp", "thresh", "em"):
            t, d = _best(res, key)
            cols.append("-" if t is None else f"{t:.2f} ({d:.3f})")
        params = res.get("params", "")
        peak = f"{res['peak_mb']:.0f}" if res.get("status") == "ok" else ""
        print(
            f"| {mech} | {k} | {eps:g} | {lib} | {params} | {_fmt_time(res)} | "
            + " | ".join(cols)
            + f" | {peak} |"
        )
    print("\n### Ratios (anchor time / sklearn-uldp time; '>' = anchor timed out)\n")
    print(
        "| mech | k | eps | anchor | privatize | emp | em vs IBU | TV ours (best) "
        "| TV anchor (best) |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    cells = sorted({key[:3] for key in results})
    for mech, k, eps in cells:
        ours = results.get((mech, k, eps, "sklearn_uldp"), {})
        if ours.get("status") != "ok":
            continue
        for lib in ANCHORS[mech]:
            theirs = results.get((mech, k, eps, lib))
            if theirs is None:
                continue
            if theirs.get("status") != "ok" and not theirs.get("status", "").startswith("timeout"):
                print(f"| {mech} | {k} | {eps:g} | {lib} | {theirs.get('status')} | | | | |")
                continue
            timeout = theirs.get("status", "").startswith("timeout")

            def ratio(a, b):
                if timeout:
                    return f">{theirs['status'].split('>')[1].rstrip('s')}/{b:.2f}"
                return "-" if a is None or b is None else f"{a / b:.0f}x"

            if timeout:
                limit = float(theirs["status"].split(">")[1].rstrip("s"))
                r_priv = f">{limit / ours['privatize_s']:.0f}x"
                r_emp = f">{limit / _best(ours, 'emp')[0]:.0f}x"
                r_em = f">{limit / _best(ours, 'em')[0]:.0f}x" if _best(ours, "em")[0] else "-"
                tv_theirs = "-"
            else:
                r_priv = ratio(theirs["privatize_s"], ours["privatize_s"])
                r_emp = ratio(_best(theirs, "emp")[0], _best(ours, "emp")[0])
                r_em = ratio(_best(theirs, "em")[0], _best(ours, "em")[0])
                tvs = [v.get("tv") for v in theirs["estimators"].values() if "tv" in v]
                tv_theirs = f"{min(tvs):.3f}" if tvs else "-"
            tv_ours = min(v["tv"] for v in ours["estimators"].values() if "tv" in v)
            print(
                f"| {mech} | {k} | {eps:g} | {lib} | {r_priv} | {r_emp} | {r_em} | "
                f"{tv_ours:.3f} | {tv_theirs} |"
            )


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cell", help=argparse.SUPPRESS)
    ap.add_argument("--quick", action="store_true", help="n = 1e5 instead of 1e6")
    ap.add_argument("--n", type=int, default=None)
    ap.add_argument("--k", type=int, nargs="+", default=[100, 1000])
    ap.add_argument("--eps", type=float, nargs="+", default=[0.5, 1.0, 4.0])
    ap.add_argument("--mechanisms", nargs="+", default=list(MECHANISMS), choices=MECHANISMS)
    ap.add_argument(
        "--libraries", nargs="+", default=["sklearn_uldp", "pure_ldp", "multi_freq_ldpy"]
    )
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per cell (default 600)")
    ap.add_argument(
        "--threads", type=int, default=1, help="BLAS/numba threads per cell (0: library default)"
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", help="also write the raw results to this file")
    args = ap.parse_args(argv)
    if args.cell:
        print(RESULT_PREFIX + json.dumps(run_cell(json.loads(args.cell))))
        return
    n = args.n or (100_000 if args.quick else 1_000_000)
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for k in args.k:
            rng = np.random.default_rng(args.seed)
            path = os.path.join(tmp, f"x_{k}.npy")
            np.save(path, rng.choice(k, size=n, p=zipf_probabilities(k)).astype(np.int64))
            for mech in args.mechanisms:
                for eps in args.eps:
                    for lib in ("sklearn_uldp", *ANCHORS[mech]):
                        if lib not in args.libraries:
                            continue
                        cell = {
                            "library": lib,
                            "mechanism": mech,
                            "k": k,
                            "epsilon": eps,
                            "seed": args.seed,
                            "data_path": path,
                        }
                        res = spawn(cell, args.timeout, args.threads)
                        results[(mech, k, eps, lib)] = res
                        print(
                            f"{mech} k={k} eps={eps:g} {lib}: {res.get('status')}"
                            + (
                                f" priv {res['privatize_s']:.2f}s"
                                if res.get("status") == "ok"
                                else ""
                            ),
                            file=sys.stderr,
                            flush=True,
                        )
    print_table(results, n)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"|".join(map(str, key)): v for key, v in results.items()}, f, indent=1)


if __name__ == "__main__":
    main()
