#!/usr/bin/env python
"""Benchmark LDP frequency estimation: sklearn-uldp vs pure-ldp vs multi-freq-ldpy.

For every (library, mechanism, k, epsilon) cell the script measures

* wall time to privatise all ``n`` users,
* wall time of each frequency estimator the library offers
  (empirical/unbiased, simplex-projected, thresholded, EM/IBU),
* total-variation distance ``0.5 * ||est - true||_1`` between each estimate and
  the true empirical distribution of the data,
* peak resident memory (``ru_maxrss``) of the process that ran the cell.

Each cell (and each repeat) runs in a fresh Python subprocess, so one cell's
memory high-water mark cannot pollute another's and a per-cell timeout can kill
a slow cell cleanly.  The data (a Zipf distribution over ``k`` categories) is
drawn once per ``k`` with a fixed seed by the parent, saved to a temporary
``.npy`` file, and loaded by every cell: all libraries see identical data.

Run ``python benchmarks/bench_frequency_estimation.py --help`` for options and
see ``benchmarks/README.md`` for details.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from importlib import metadata

import numpy as np

LIBRARIES = ("sklearn_uldp", "sklearn_uldp_chunked", "pure_ldp", "multi_freq_ldpy")
MECHANISMS = ("krr", "oue")
ESTIMATORS = ("emp", "proj", "thresh", "em")
RESULT_PREFIX = "@@RESULT@@"


# --------------------------------------------------------------------------- #
# helpers
# --------------------------------------------------------------------------- #
def zipf_probabilities(k: int, s: float) -> np.ndarray:
    w = 1.0 / np.arange(1, k + 1, dtype=float) ** s
    return w / w.sum()


def make_data(n: int, k: int, s: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.choice(k, size=n, p=zipf_probabilities(k, s)).astype(np.int64)


def tv_distance(est, true) -> float:
    """Total variation 0.5 * L1.  The estimate is used as is (not renormalised),
    so unbiased estimates with negative entries are penalised honestly."""
    est = np.asarray(est, dtype=float).ravel()
    return 0.5 * float(np.abs(est - true).sum())


def maxrss_mb() -> float:
    # Linux reports ru_maxrss in KiB.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _import_sklearn_uldp():
    try:
        import sklearn_uldp  # noqa: F401
    except ImportError:
        # Fallback for an un-installed checkout: the repo root is our parent dir.
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        if root not in sys.path:
            sys.path.append(root)
        import sklearn_uldp  # noqa: F401
    return sklearn_uldp


_BASELINE_MB = []


def mark_baseline():
    """Called by a runner once imports, JIT warm-up and setup are done: memory
    used after this point is attributed to privatisation + estimation."""
    _BASELINE_MB.append(maxrss_mb())


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


# --------------------------------------------------------------------------- #
# per-library cell runners.  Each returns a dict:
#   {"privatize_s": float, "estimators": {name: {"time_s", "tv", "note"}}}
# Estimation times include any counting/aggregation of the raw reports that the
# estimator needs (i.e. "reports in -> frequency vector out").
# --------------------------------------------------------------------------- #
def run_sklearn_uldp(mech_name, X, k, eps, seed, true, opts):
    mod = _import_sklearn_uldp()
    cats = np.arange(k)
    X2 = X.reshape(-1, 1)
    if mech_name == "krr":
        mech = mod.RandomizedResponse(epsilon=eps, categories=cats, random_state=seed)
    else:
        kw = {"sparse_output": True} if opts.get("sparse_output") else {}
        mech = mod.RAPPOR(epsilon=eps, theta=0.5, categories=cats, random_state=seed, **kw)
    mark_baseline()

    def priv():
        mech.fit(X2)
        return mech.transform(X2)

    reports, t_priv = _timed(priv)

    factories = {
        "emp": lambda: mod.EmpiricalEstimator(),
        "proj": lambda: mod.EmpiricalEstimator(projection="simplex"),
        "thresh": lambda: mod.ThresholdEstimator(alpha=0.05),
        "em": lambda: mod.EMEstimator(),
    }
    ests = {}
    for name, make in factories.items():
        try:
            def fit_and_read():
                e = make().fit(reports)
                return e, np.asarray(e.distribution_)  # include a lazy distribution_

            (est, dist), t = _timed(fit_and_read)
            ests[name] = {"time_s": t, "tv": tv_distance(dist, true), "note": _em_note(est)}
        except Exception as e:  # keep going; report the failure
            ests[name] = {"error": f"{type(e).__name__}: {e}"}
    return {"privatize_s": t_priv, "estimators": ests}


def run_sklearn_uldp_chunked(mech_name, X, k, eps, seed, true, opts):
    """Memory-bounded mode: privatise + partial_fit chunk by chunk.

    EM keeps the bit-vector reports it needs in files (``report_store="disk"``),
    so that no estimator's memory grows with n.
    """
    mod = _import_sklearn_uldp()
    cats = np.arange(k)
    X2 = X.reshape(-1, 1)
    chunk = int(opts.get("chunk_size", 100_000))
    if mech_name == "krr":
        mech = mod.RandomizedResponse(epsilon=eps, categories=cats, random_state=seed)
    else:
        kw = {"sparse_output": True} if opts.get("sparse_output") else {}
        mech = mod.RAPPOR(epsilon=eps, theta=0.5, categories=cats, random_state=seed, **kw)

    ests = {
        "emp": mod.EmpiricalEstimator(),
        "proj": mod.EmpiricalEstimator(projection="simplex"),
        "thresh": mod.ThresholdEstimator(alpha=0.05),
        "em": mod.EMEstimator(report_store="disk"),
    }
    mark_baseline()
    times = dict.fromkeys(ests, 0.0)
    errors = {}
    t_priv = 0.0
    t0 = time.perf_counter()
    mech.fit(X2)
    t_priv += time.perf_counter() - t0
    for start in range(0, X2.shape[0], chunk):
        t0 = time.perf_counter()
        rep = mech.transform(X2[start:start + chunk])
        t_priv += time.perf_counter() - t0
        for name, est in ests.items():
            if name in errors:
                continue
            try:
                t0 = time.perf_counter()
                est.partial_fit(rep)
                times[name] += time.perf_counter() - t0
            except Exception as e:
                errors[name] = f"{type(e).__name__}: {e}"
        del rep
    out = {}
    for name, est in ests.items():
        if name in errors:
            out[name] = {"error": errors[name]}
            continue
        try:
            # distribution_ may be computed lazily; include that in the time.
            dist, t = _timed(lambda: np.asarray(est.distribution_))
            out[name] = {"time_s": times[name] + t, "tv": tv_distance(dist, true),
                         "note": _em_note(est)}
        except Exception as e:
            out[name] = {"error": f"{type(e).__name__}: {e}"}
    return {"privatize_s": t_priv, "estimators": out}


def _em_note(est) -> str:
    parts = []
    n_iter = getattr(est, "n_iter_", None)
    if n_iter is not None:
        parts.append(f"it={int(n_iter)}")
    max_iter = getattr(est, "max_iter", None)
    if n_iter is not None and max_iter is not None and int(n_iter) >= int(max_iter):
        parts.append("CAP")
    conv = getattr(est, "converged_", None)
    if conv is not None and not conv:
        parts.append("not-converged")
    return " ".join(parts)


def run_pure_ldp(mech_name, X, k, eps, seed, true, opts):
    import random

    from pure_ldp.frequency_oracles.direct_encoding import DEClient, DEServer
    from pure_ldp.frequency_oracles.unary_encoding import UEClient, UEServer

    random.seed(seed)
    np.random.seed(seed)
    identity = lambda x: x  # noqa: E731  (default index_mapper is x-1 for 1-based data)
    if mech_name == "krr":
        client = DEClient(epsilon=eps, d=k, index_mapper=identity)
        server = DEServer(epsilon=eps, d=k, index_mapper=identity)
    else:
        client = UEClient(epsilon=eps, d=k, use_oue=True, index_mapper=identity)
        server = UEServer(epsilon=eps, d=k, use_oue=True, index_mapper=identity)
    n = X.shape[0]
    data = X.tolist()  # the library is per-item Python; feed it Python ints (untimed)
    mark_baseline()

    # Per-user Python loop: this is the library's API (privatise one item).
    reports, t_priv = _timed(lambda: [client.privatise(v) for v in data])

    # Aggregation (also a per-report Python loop) is shared by all estimators;
    # its time is added to each estimator's time.
    _, t_agg = _timed(lambda: server.aggregate_all(reports))
    domain = list(range(k))
    ests = {}
    for name, norm in (("emp", 0), ("proj", 2), ("thresh", 3)):
        try:
            est, t = _timed(lambda: server.estimate_all(domain, suppress_warnings=True,
                                                        normalization=norm))
            ests[name] = {"time_s": t_agg + t, "tv": tv_distance(np.asarray(est) / n, true),
                          "note": {0: "", 2: "norm=2", 3: "norm=3 cut"}[norm]}
        except Exception as e:
            ests[name] = {"error": f"{type(e).__name__}: {e}"}
    return {"privatize_s": t_priv, "estimators": ests}


def run_multi_freq_ldpy(mech_name, X, k, eps, seed, true, opts):
    import numba
    from multi_freq_ldpy.pure_frequency_oracles.GRR import (
        GRR_Aggregator_IBU,
        GRR_Aggregator_MI,
        GRR_Client,
    )
    from multi_freq_ldpy.pure_frequency_oracles.UE import (
        UE_Aggregator_IBU,
        UE_Aggregator_MI,
        UE_Client,
    )

    @numba.njit
    def _numba_seed(s):  # numba has its own RNG state, separate from numpy's
        np.random.seed(s)

    nb_iter, tol = int(opts.get("ibu_iter", 10000)), float(opts.get("ibu_tol", 1e-12))
    k = int(k)
    eps = float(eps)
    data = X.tolist()

    # Warm-up: trigger numba JIT compilation outside the timed region.
    if mech_name == "krr":
        warm = [GRR_Client(v, k, eps) for v in data[:10]]
        GRR_Aggregator_IBU(warm, k, eps, nb_iter=2)
    else:
        warm = [UE_Client(v, k, eps, True) for v in data[:10]]
        UE_Aggregator_IBU(warm, k, eps, True, nb_iter=2)
    del warm
    _numba_seed(seed)
    mark_baseline()

    # Per-user Python loop over a numba-jitted single-user client.
    if mech_name == "krr":
        reports, t_priv = _timed(lambda: [GRR_Client(v, k, eps) for v in data])
        mi = lambda: GRR_Aggregator_MI(reports, k, eps)  # noqa: E731
        ibu = lambda: GRR_Aggregator_IBU(reports, k, eps, nb_iter=nb_iter, tol=tol)  # noqa: E731
        p = np.exp(eps) / (np.exp(eps) + k - 1)
        q = (1 - p) / (k - 1)
    else:
        reports, t_priv = _timed(lambda: [UE_Client(v, k, eps, True) for v in data])
        mi = lambda: UE_Aggregator_MI(reports, eps, True)  # noqa: E731
        ibu = lambda: UE_Aggregator_IBU(reports, k, eps, True, nb_iter=nb_iter, tol=tol)  # noqa: E731
        p, q = 0.5, 1 / (np.exp(eps) + 1)

    ests = {}
    try:
        est, t = _timed(mi)
        ests["emp"] = {"time_s": t, "tv": tv_distance(est, true), "note": "MI clip+renorm"}
    except Exception as e:
        ests["emp"] = {"error": f"{type(e).__name__}: {e}"}
    try:
        est, t = _timed(ibu)
        ests["em"] = {"time_s": t, "tv": tv_distance(est, true),
                      "note": _ibu_note(est, reports, mech_name, k, p, q, tol, nb_iter)}
    except Exception as e:
        ests["em"] = {"error": f"{type(e).__name__}: {e}"}
    return {"privatize_s": t_priv, "estimators": ests}


def _ibu_note(est, reports, mech_name, k, p, q, tol, nb_iter):
    """IBU does not report its iteration count; take one more IBU step (untimed)
    and flag 'CAP' if it would still move by >= tol, i.e. it hit nb_iter."""
    if mech_name == "krr":
        obs = np.bincount(np.asarray(reports), minlength=k).astype(float)
    else:
        obs = np.zeros(k)
        for r in reports:
            obs += r
    obs /= obs.sum()
    A = np.full((k, k), q)
    np.fill_diagonal(A, p)
    est = np.asarray(est, dtype=float)
    nxt = est * (A @ (obs / (A @ est)))
    delta = float(np.abs(nxt - est).max())
    return f"CAP({nb_iter}) d={delta:.1e}" if delta >= tol else "conv"


RUNNERS = {
    "sklearn_uldp": run_sklearn_uldp,
    "sklearn_uldp_chunked": run_sklearn_uldp_chunked,
    "pure_ldp": run_pure_ldp,
    "multi_freq_ldpy": run_multi_freq_ldpy,
}


# --------------------------------------------------------------------------- #
# child process entry point
# --------------------------------------------------------------------------- #
def run_cell(cell: dict) -> dict:
    warnings.simplefilter("ignore")
    lib, mech, k, eps = cell["library"], cell["mechanism"], cell["k"], cell["epsilon"]
    X = np.load(cell["data_path"])
    true = np.bincount(X, minlength=k) / X.shape[0]
    res = RUNNERS[lib](mech, X, k, eps, cell["seed"], true, cell.get("opts", {}))
    # Baseline = high-water mark after imports, data load and library setup
    # (incl. numba JIT warm-up), as recorded by the runner via mark_baseline().
    res.update(baseline_mb=_BASELINE_MB[0] if _BASELINE_MB else float("nan"),
               peak_mb=maxrss_mb())
    return res


# --------------------------------------------------------------------------- #
# parent: machine info, grid, subprocesses, table
# --------------------------------------------------------------------------- #
def _version(dist):
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def machine_info() -> dict:
    cpu = platform.processor() or "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    ram_gb = None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal"):
                    ram_gb = int(line.split()[1]) / 1024 ** 2
                    break
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    try:
        loadavg = " ".join(open("/proc/loadavg").read().split()[:3])
    except OSError:
        loadavg = "n/a"
    return {
        "loadavg": loadavg,
        "cpu": cpu,
        "cores": os.cpu_count(),
        "usable_cores": usable,
        "ram_gb": round(ram_gb, 1) if ram_gb else None,
        "os": platform.platform(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scikit-learn": _version("scikit-learn"),
        "sklearn-uldp": (_version("sklearn-uldp") if _version("sklearn-uldp") != "not installed"
                         else "not installed (imported from the checkout)"),
        "pure-ldp": _version("pure-ldp"),
        "multi-freq-ldpy": _version("multi-freq-ldpy"),
        "numba": _version("numba"),
    }


def library_available(lib: str) -> str | None:
    """Return None if importable in a child, else a reason string."""
    code = {
        "sklearn_uldp": "import sys; sys.path.append(sys.argv[1]); import sklearn_uldp",
        "pure_ldp": "import pure_ldp.frequency_oracles",
        "multi_freq_ldpy": "import multi_freq_ldpy.pure_frequency_oracles.GRR",
    }[lib.replace("_chunked", "")]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    r = subprocess.run([sys.executable, "-c", code, root], capture_output=True, text=True)
    if r.returncode == 0:
        return None
    last = (r.stderr.strip().splitlines() or ["import failed"])[-1]
    return last


THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
               "NUMBA_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")


def child_env(threads: int) -> dict:
    env = dict(os.environ)
    if threads > 0:
        env.update({v: str(threads) for v in THREAD_VARS})
    return env


def spawn_cell(cell: dict, timeout: float | None, env: dict | None = None) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--cell", json.dumps(cell)]
    t0 = time.perf_counter()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"status": f"timeout>{timeout:g}s"}
    wall = time.perf_counter() - t0
    for line in r.stdout.splitlines():
        if line.startswith(RESULT_PREFIX):
            res = json.loads(line[len(RESULT_PREFIX):])
            res.update(status="ok", wall_s=wall)
            return res
    tail = (r.stderr.strip().splitlines() or [f"exit code {r.returncode}"])[-1]
    if r.returncode < 0:
        tail = f"killed by signal {-r.returncode} (OOM?)"
    return {"status": f"failed: {tail}"[:200]}


def aggregate_repeats(runs: list[dict]) -> dict:
    ok = [r for r in runs if r.get("status") == "ok"]
    if not ok:
        return {"status": runs[0].get("status", "failed")}
    out = {
        "status": "ok",
        "repeats": len(ok),
        "privatize_s": statistics.median(r["privatize_s"] for r in ok),
        "peak_mb": max(r["peak_mb"] for r in ok),
        "baseline_mb": max(r["baseline_mb"] for r in ok),
        "estimators": {},
    }
    for name in ESTIMATORS:
        vals = [r["estimators"].get(name) for r in ok if name in r["estimators"]]
        if not vals:
            continue
        good = [v for v in vals if "error" not in v]
        if not good:
            out["estimators"][name] = {"error": vals[0]["error"]}
            continue
        tvs = [v["tv"] for v in good]
        out["estimators"][name] = {
            "time_s": statistics.median(v["time_s"] for v in good),
            "tv": statistics.fmean(tvs),
            "tv_sd": statistics.stdev(tvs) if len(tvs) > 1 else None,
            "note": "; ".join(sorted({v.get("note", "") for v in good} - {""})),
        }
    return out


def fmt_time(x):
    return "—" if x is None else (f"{x:.3g}" if x < 100 else f"{x:.0f}")


def render_table(rows: list[dict]) -> str:
    head = ["library", "mech", "k", "eps", "privatize s"]
    for e in ESTIMATORS:
        head += [f"{e} s", f"{e} TV"]
    head += ["peak MB", "Δ MB", "notes"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        r = row["result"]
        cells = [row["library"], row["mechanism"], str(row["k"]), f"{row['epsilon']:g}"]
        if r.get("status") != "ok":
            cells += ["—"] * (1 + 2 * len(ESTIMATORS) + 2) + [r.get("status", "")]
        else:
            cells.append(fmt_time(r["privatize_s"]))
            notes = []
            for e in ESTIMATORS:
                v = r["estimators"].get(e)
                if v is None:
                    cells += ["—", "—"]
                elif "error" in v:
                    cells += ["err", "err"]
                    notes.append(f"{e}: {v['error'][:80]}")
                else:
                    tv = f"{v['tv']:.4f}"
                    if v.get("tv_sd") is not None:
                        tv += f"±{v['tv_sd']:.4f}"
                    cells += [fmt_time(v["time_s"]), tv]
                    if v.get("note"):
                        notes.append(f"{e}: {v['note']}")
            cells += [f"{r['peak_mb']:.0f}", f"{r['peak_mb'] - r['baseline_mb']:.0f}",
                      "; ".join(notes)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def render_machine(info: dict, args, n: int) -> str:
    lines = [
        "## Machine",
        "",
        f"- CPU: {info['cpu']} ({info['cores']} logical cores, {info['usable_cores']} usable)",
        f"- RAM: {info['ram_gb']} GB",
        f"- OS: {info['os']}",
        f"- Python {info['python']}, numpy {info['numpy']}, scikit-learn {info['scikit-learn']}, "
        f"numba {info['numba']}",
        f"- sklearn-uldp {info['sklearn-uldp']}, pure-ldp {info['pure-ldp']}, "
        f"multi-freq-ldpy {info['multi-freq-ldpy']}",
        "",
        "## Setup",
        "",
        f"- n = {n:,} users, data ~ Zipf(s={args.zipf_s}) over k categories, data seed {args.seed}",
        f"- repeats = {args.repeats} (times: median; TV: mean±sd; peak MB: max over repeats)",
        f"- chunk size (sklearn_uldp_chunked) = {args.chunk_size:,}",
        f"- IBU (multi_freq_ldpy): nb_iter={args.ibu_iter}, tol={args.ibu_tol:g}",
        f"- per-cell timeout: {args.max_cell_seconds or 'none'}",
        f"- threads per cell (BLAS/OpenMP/numba): "
        f"{args.threads if args.threads > 0 else 'environment default'}",
        f"- load average at start (1/5/15 min): {info['loadavg']} — "
        "other processes on the machine skew timings",
    ]
    return "\n".join(lines)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--n", type=int, default=1_000_000, help="number of users")
    p.add_argument("--k", type=int, nargs="+", default=[100, 1000], help="domain sizes")
    p.add_argument("--epsilon", type=float, nargs="+", default=[0.5, 1.0, 4.0])
    p.add_argument("--mechanisms", nargs="+", choices=MECHANISMS, default=list(MECHANISMS))
    p.add_argument("--libraries", nargs="+", choices=LIBRARIES, default=list(LIBRARIES))
    p.add_argument("--repeats", type=int, default=1,
                   help="independent privatisation seeds per cell (each in its own process)")
    p.add_argument("--quick", action="store_true",
                   help="smoke run: n=20000 (unless --n is given explicitly), 1 repeat")
    p.add_argument("--seed", type=int, default=0, help="data seed")
    p.add_argument("--zipf-s", type=float, default=1.1, help="Zipf exponent of the data")
    p.add_argument("--chunk-size", type=int, default=100_000,
                   help="chunk size for sklearn_uldp_chunked")
    p.add_argument("--sparse-output", action="store_true",
                   help="sklearn_uldp RAPPOR: sparse_output=True (CSR reports)")
    p.add_argument("--ibu-iter", type=int, default=10000,
                   help="multi_freq_ldpy IBU nb_iter (library default 10000)")
    p.add_argument("--ibu-tol", type=float, default=1e-12,
                   help="multi_freq_ldpy IBU tol (library default 1e-12)")
    p.add_argument("--max-cell-seconds", type=float, default=None,
                   help="kill a cell (one repeat) after this many seconds and mark it skipped")
    p.add_argument("--threads", type=int, default=1,
                   help="BLAS/OpenMP/numba threads in each cell (sets OMP_NUM_THREADS etc.); "
                        "0 = leave the environment alone")
    p.add_argument("--output", default=None, help="write the markdown report here")
    p.add_argument("--json", default=None, help="also dump raw per-cell results as JSON")
    p.add_argument("--cell", default=None, help=argparse.SUPPRESS)  # internal: child mode
    args = p.parse_args(argv)
    if args.quick:
        if not any(a == "--n" or a.startswith("--n=") for a in (argv or sys.argv[1:])):
            args.n = 20_000
        args.repeats = 1
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.cell is not None:
        res = run_cell(json.loads(args.cell))
        print(RESULT_PREFIX + json.dumps(res), flush=True)
        return 0

    info = machine_info()
    header = render_machine(info, args, args.n)
    print(header, flush=True)

    unavailable = {}
    for lib in dict.fromkeys(args.libraries):
        reason = library_available(lib)
        if reason:
            unavailable[lib] = reason
            print(f"\n[skip] {lib}: not importable ({reason})", flush=True)

    env = child_env(args.threads)
    rows = []
    opts = {"chunk_size": args.chunk_size, "sparse_output": args.sparse_output,
            "ibu_iter": args.ibu_iter, "ibu_tol": args.ibu_tol}
    with tempfile.TemporaryDirectory(prefix="uldp_bench_") as tmp:
        for k in args.k:
            X = make_data(args.n, k, args.zipf_s, args.seed)
            path = os.path.join(tmp, f"data_k{k}.npy")
            np.save(path, X)
            del X
            for mech in args.mechanisms:
                for eps in args.epsilon:
                    for lib in args.libraries:
                        if lib in unavailable:
                            continue
                        runs = []
                        for rep in range(args.repeats):
                            cell = {"library": lib, "mechanism": mech, "k": k, "epsilon": eps,
                                    "seed": 1000 + rep, "data_path": path, "opts": opts}
                            r = spawn_cell(cell, args.max_cell_seconds, env)
                            runs.append(r)
                            if r.get("status") != "ok":
                                break  # don't repeat a timed-out/failed cell
                        agg = aggregate_repeats(runs)
                        rows.append({"library": lib, "mechanism": mech, "k": k,
                                     "epsilon": eps, "result": agg, "runs": runs})
                        msg = (f"privatize {agg['privatize_s']:.2f}s, peak {agg['peak_mb']:.0f} MB"
                               if agg["status"] == "ok" else agg["status"])
                        print(f"  done {lib:22s} {mech} k={k} eps={eps:g}: {msg}",
                              file=sys.stderr, flush=True)

    table = render_table(rows)
    legend = (
        "Columns: `privatize s` = time to privatise all n users; `<est> s` = time from raw "
        "reports to a frequency vector (includes counting/aggregation); `<est> TV` = "
        "0.5·L1 to the true empirical distribution (estimate not renormalised); "
        "`peak MB` = ru_maxrss of the cell's process; `Δ MB` = peak minus the high-water mark "
        "after imports, data load and library setup (incl. numba JIT warm-up). Estimators: emp = unbiased frequency oracle "  # noqa: E501
        "(multi_freq_ldpy: MI, clipped at 0 and renormalised); proj = simplex projection "
        "(pure_ldp normalization=2); thresh = sklearn_uldp ThresholdEstimator(alpha=0.05) / "
        "pure_ldp normalization=3 (threshold cut); em = sklearn_uldp EMEstimator "
        "(report_store=\"disk\" in sklearn_uldp_chunked) / "
        "multi_freq_ldpy IBU. `CAP` = EM stopped at its iteration cap."
    )
    report = "\n\n".join([header, "## Results", table, legend])
    if unavailable:
        report += "\n\nSkipped (not importable): " + ", ".join(
            f"{k} ({v})" for k, v in unavailable.items())
    print("\n## Results\n\n" + table + "\n\n" + legend, flush=True)
    if args.output:
        with open(args.output, "w") as f:
            f.write(report + "\n")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": info, "args": vars(args), "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
