#!/usr/bin/env python
"""How sklearn-uldp scales with k and n (issue #25), side by side in one run.

Sections (``--sections``; each cell runs in a fresh process, so that its peak
memory is its own, and with ``--baseline DIR`` the same cell runs again,
alternately, with the source tree DIR first on ``PYTHONPATH`` -- e.g. a
checkout of an older commit -- under the same load):

* ``memory``: OUE at k = 10,000 and 1000, n = 10^6 (``--memory-cells``):
  privatize, then the empirical and threshold estimates (and EM with
  ``--memory-em``), with the peak resident memory of the process, for
  packed, dense and sparse reports (dense and sparse reports at k = 10,000
  take 10 and 20 GB at n = 10^6: they run at n = 10^5 by default).
* ``estimation``: OUE estimation from reports (``EmpiricalEstimator``:
  reports in, frequency vector out) at k = 1000 (n = 10^6) and k = 10,000
  (n = 10^5), against pure-ldp's ``aggregate_all`` + ``estimate_all`` and
  multi-freq-ldpy's ``UE_Aggregator_MI``, both fed a 2-D int32 array (their
  fastest correct input: a list of arrays is slower, and uint8 rows
  overflow in their Python ``sum``).
* ``default``: ``EMEstimator()`` (emp+thr shrunk towards the MLE) against
  ``EMEstimator(shrinkage=None)`` on RAPPOR at the ULDP paper's scale
  (k = 12,800, n = 240,000, eps = 6), OUE k = 1000, n = 10^6, eps = 1 and
  OUE k = 200, n = 200,000, eps = 1, with multi-freq-ldpy's IBU on the OUE
  cases (its defaults, nb_iter = 10,000, tol = 1e-12).
* ``k-growth``: per-user cost (fit + transform, n = 10^6, best of 3) of
  k-RR and OLH at k = 10^2 ... 10^5, and its ratio to a floor: one uniform
  per user (``Generator.random(n)``), the least any sampler draws.
* ``parallel``: where threads and Dask pay on this machine: a 4-column
  ``DataFramePrivatizer`` (k-RR, k = 100) with ``n_jobs=1``, ``n_jobs=2``
  (threads) and the default, on a Dask DataFrame of 2 partitions with the
  threaded scheduler and with a ``LocalCluster`` of 2 worker processes
  (start-up timed apart); one EM product (``em_gradient``) and the whole MLE
  on packed OUE reports (k = 64) with 1 and 2 threads and the default.
  Measure it when the machine is otherwise idle: two workers cannot beat one
  on cores that other jobs keep busy.
* ``import``: ``import sklearn_uldp`` against ``import sklearn`` (best of 5
  fresh interpreters).

Run::

    python benchmarks/bench_scale.py                          # every section
    python benchmarks/bench_scale.py --sections estimation default
    python benchmarks/bench_scale.py --sections k-growth --baseline ../main-checkout

Times are wall seconds (CPU seconds of all the process's threads in
brackets where they differ); record the load average printed at the top
(the machine is shared: ratios in one run survive load, absolute times do
not).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _measure import (  # noqa: E402
    RESULT_PREFIX,
    cell_result,
    compiled_warmup,
    peak_rss_mb,
    run_cell_process,
    timed,
    tv_distance,
    zipf_probabilities,
)


def _zipf_data(k, n, seed=0, s=1.1):
    return np.random.default_rng(seed).choice(k, size=n, p=zipf_probabilities(k, s))


# --------------------------------------------------------------- cells
def cell_memory(k, n, eps, form, estimators):
    import sklearn_uldp as su

    X = _zipf_data(k, n).reshape(-1, 1)
    true = np.bincount(X.ravel(), minlength=k) / n
    kwargs = {"sparse_output": True} if form == "sparse" else {}
    if form == "packed":
        kwargs = {"packed_output": True}
    mech = su.RAPPOR(eps, theta=0.5, categories=np.arange(k), random_state=0, **kwargs)
    makers = {
        "emp": su.EmpiricalEstimator,
        "thresh": su.ThresholdEstimator,
        "em": su.EMEstimator,
    }
    # compiled loops loaded (or compiled) at their first call: not timed
    with compiled_warmup():
        warm = mech.fit(X[:2000]).transform(X[:2000])
        for name in estimators:
            makers[name]().fit(warm)
    del warm
    base = peak_rss_mb()
    reports, wall, cpu = timed(lambda: mech.fit(X).transform(X))
    out = {"privatize": [wall, cpu], "after_privatize_mb": peak_rss_mb(), "base_mb": base}
    for name in estimators:
        est, wall, cpu = timed(lambda name=name: makers[name]().fit(reports))
        out[name] = [wall, cpu, tv_distance(est.distribution_, true)]
        del est
    out["peak_mb"] = peak_rss_mb()
    return out


def cell_estimation(library, k, n, eps, form):
    X = _zipf_data(k, n)
    true = np.bincount(X, minlength=k) / n
    import sklearn_uldp as su

    kwargs = {"packed_output": True} if form == "packed" else {}
    mech = su.RAPPOR(eps, theta=0.5, categories=np.arange(k), random_state=0, **kwargs)
    reports = mech.fit_transform(X.reshape(-1, 1))
    if library == "sklearn_uldp":
        with compiled_warmup():
            su.EmpiricalEstimator().fit(reports[:1000])  # loaded, not timed
        best = None
        for _ in range(3):
            est, wall, cpu = timed(lambda r=reports: su.EmpiricalEstimator().fit(r).distribution_)
            best = min(best or (wall, cpu), (wall, cpu))
        return {"time": list(best), "tv": tv_distance(est, true)}
    # the anchors get the same reports, as a 2-D int32 array (untimed)
    dense = reports.toarray() if hasattr(reports, "toarray") else np.asarray(reports)
    as_int = np.asarray(dense, dtype=np.int32)
    del reports, dense
    from _anchors import compat_shims

    compat_shims()
    warnings.simplefilter("ignore")
    if library == "multi_freq_ldpy":
        from multi_freq_ldpy.pure_frequency_oracles.UE import UE_Aggregator_MI

        est, wall, cpu = timed(lambda: UE_Aggregator_MI(as_int, eps, True))
        return {"time": [wall, cpu], "tv": tv_distance(est, true)}
    from pure_ldp.frequency_oracles.unary_encoding import UEServer

    def pure():
        server = UEServer(epsilon=eps, d=k, use_oue=True, index_mapper=lambda x: x)
        server.aggregate_all(as_int)
        return np.asarray(server.estimate_all(range(k), suppress_warnings=True)) / n

    est, wall, cpu = timed(pure)
    return {"time": [wall, cpu], "tv": tv_distance(est, true)}


def cell_default(case, ibu=True):
    import sklearn_uldp as su

    if case == "rappor-paper":
        k, n, eps, theta = 12_800, 240_000, 6.0, None
        rng = np.random.default_rng(0)
        p = rng.dirichlet(np.full(k, 0.3))
        X = rng.choice(k, size=n, p=p)
    else:
        k, n = (1000, 1_000_000) if case == "oue-1000" else (200, 200_000)
        eps, theta = 1.0, 0.5
        X = _zipf_data(k, n)
    true = np.bincount(X, minlength=k) / n
    mech = su.RAPPOR(eps, theta=theta, categories=np.arange(k), random_state=0)
    if case == "rappor-paper":
        mech.set_params(sparse_output=True)
    reports = mech.fit_transform(X.reshape(-1, 1))
    with compiled_warmup():
        su.EMEstimator().fit(reports[:2000])  # compiled loops loaded, not timed
    out = {}
    for name, kwargs in (("mle", {"shrinkage": None}), ("default", {})):
        em, wall, cpu = timed(lambda kwargs=kwargs: su.EMEstimator(**kwargs).fit(reports))
        out[name] = [wall, cpu, tv_distance(em.distribution_, true), int(em.n_iter_)]
    if case != "rappor-paper" and ibu:
        from multi_freq_ldpy.pure_frequency_oracles.UE import UE_Aggregator_IBU

        as_int = np.asarray(reports, dtype=np.int32)
        del reports
        est, wall, cpu = timed(lambda: UE_Aggregator_IBU(as_int, k, eps, optimal=True))
        out["ibu"] = [wall, cpu, tv_distance(est, true), 0]
    return out


def cell_k_growth(mechanism, k, n):
    import sklearn_uldp as su

    X = _zipf_data(k, n).reshape(-1, 1)

    def make():
        if mechanism == "krr":
            return su.RandomizedResponse(1.0, categories=np.arange(k), random_state=0)
        return su.OptimizedLocalHashing(1.0, categories=np.arange(k), random_state=0)

    with compiled_warmup():
        make().fit(X[:1000]).transform(X[:1000])
    # CPU time of this (one-threaded) process, best of 5: the machine's load
    # inflates it far less than the wall time
    runs = [timed(lambda: make().fit(X).transform(X)) for _ in range(5)]
    rng = np.random.default_rng(0)
    floors = [timed(lambda: rng.random(n)) for _ in range(5)]
    return {
        "ns": min(r[2] for r in runs) / n * 1e9,
        "wall_ns": min(r[1] for r in runs) / n * 1e9,
        "floor_ns": min(f[2] for f in floors) / n * 1e9,
    }


def cell_parallel(job, n, mode):
    import pandas as pd

    import sklearn_uldp as su

    # n_jobs of each mode: one thread, two, and the default (None)
    n_jobs = {"serial": 1, "threads": 2, "default": None}.get(mode)
    if job in ("em", "em-fit"):
        k = 64
        mech = su.RAPPOR(1.0, theta=0.5, categories=np.arange(k), random_state=0)
        if "packed_output" in mech.get_params():
            mech.set_params(packed_output=True)
        reports = mech.fit_transform(_zipf_data(k, n).reshape(-1, 1))
        stats = su.EMEstimator(shrinkage=None, n_jobs=1).partial_fit(reports).statistics_
        del reports
        if job == "em-fit":
            # the whole MLE (the same iterations whatever the threads)
            su.EMEstimator(shrinkage=None, n_jobs=n_jobs).fit_statistics(stats)
            best = min(
                timed(lambda: su.EMEstimator(shrinkage=None, n_jobs=n_jobs).fit_statistics(stats))[
                    1:
                ]
                for _ in range(2)
            )
            return {"time": list(best), "startup": 0.0}
        p = np.full(k, 1.0 / k)
        channel = stats.channel
        channel.em_gradient(stats, p, n_jobs=n_jobs)
        best = min(
            timed(lambda: channel.em_gradient(stats, p, n_jobs=n_jobs))[1:] for _ in range(5)
        )
        return {"time": list(best), "startup": 0.0}
    from sklearn_uldp.compose import DataFramePrivatizer

    rng = np.random.default_rng(0)
    df = pd.DataFrame({f"c{j}": rng.integers(0, 100, n) for j in range(4)})

    def privatizer(n_jobs=None):
        return DataFramePrivatizer(
            {f"c{j}": su.RandomizedResponse(1.0, categories=np.arange(100)) for j in range(4)},
            n_jobs=n_jobs,
        ).fit(df.head(1000))

    if mode in ("serial", "threads", "default"):
        priv = privatizer(n_jobs)
        priv.transform(df.head(1000))
        best = min(timed(lambda: priv.transform(df))[1:] for _ in range(3))
        return {"time": list(best), "startup": 0.0}
    import dask
    import dask.dataframe as dd

    from sklearn_uldp.parallel import privatize_partitions

    priv = privatizer(1)
    ddf = dd.from_pandas(df, npartitions=2)
    if mode == "dask-threads":
        with dask.config.set(scheduler="threads", num_workers=2):
            privatize_partitions(dd.from_pandas(df.head(1000), npartitions=2), priv).compute()
            best = min(
                timed(lambda: privatize_partitions(ddf, priv).compute())[1:] for _ in range(3)
            )
        return {"time": list(best), "startup": 0.0}
    from dask.distributed import Client, LocalCluster

    start = time.perf_counter()
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        client.wait_for_workers(2)
        startup = time.perf_counter() - start
        privatize_partitions(dd.from_pandas(df.head(1000), npartitions=2), priv).compute()
        persisted = client.persist(ddf)
        best = min(
            timed(lambda: privatize_partitions(persisted, priv).compute())[1:] for _ in range(3)
        )
    return {"time": list(best), "startup": startup}


CELLS = {
    "memory": cell_memory,
    "estimation": cell_estimation,
    "default": cell_default,
    "k-growth": cell_k_growth,
    "parallel": cell_parallel,
}


# -------------------------------------------------------------- parent
def _run(section, kwargs, path=None, timeout=3600):
    env = dict(os.environ)
    if path is not None:
        env["PYTHONPATH"] = os.pathsep.join([path] + [p for p in [env.get("PYTHONPATH")] if p])
    try:
        done = run_cell_process(__file__, [section, kwargs], timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout {timeout} s"}
    result = cell_result(done)
    if result is not None:
        return result
    tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["?"]
    return {"error": f"exit {done.returncode}: {tail[0][:160]}"}


def _sides(args):
    return [("this", None)] + ([("baseline", args.baseline)] if args.baseline else [])


def _s(pair):
    wall, cpu = pair[0], pair[1]
    return f"{wall:.3g}" if abs(wall - cpu) < 0.15 * wall else f"{wall:.3g} ({cpu:.3g})"


def section_memory(args):
    print("\n### OUE memory (privatize + estimate)\n")
    print("eps = 1; peak MB is the process's resident high-water mark\n")
    print("| code | k | n | reports | privatize s | emp s | thresh s | EM s | EM TV | peak MB |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for spec in args.memory_cells:
        k, n, form = spec.split(":")
        k, n = int(k), int(n)
        for side, path in _sides(args):
            if side == "baseline" and form == "packed":
                continue
            r = _run(
                "memory",
                {
                    "k": k,
                    "n": n,
                    "eps": 1.0,
                    "form": form,
                    "estimators": ["emp", "thresh"] + ["em"] * args.memory_em,
                },
                path,
                timeout=args.timeout,
            )
            head = f"| {side} | {k:,} | {n:,} | {form} |"
            if "error" in r:
                print(f"{head} {r['error']} | | | | | |", flush=True)
                continue
            em = r.get("em")
            em_cells = f"{_s(em)} | {em[2]:.4f}" if em else "- | -"
            print(
                f"{head} {_s(r['privatize'])} | {_s(r['emp'])} | {_s(r['thresh'])} | "
                f"{em_cells} | {r['peak_mb']:.0f} |",
                flush=True,
            )


def section_estimation(args):
    print("\n### OUE estimation (reports in, frequency vector out)\n")
    print(
        "| code | k | n | eps | sklearn-uldp s | multi-freq-ldpy MI s | pure-ldp s "
        "| faster anchor / sklearn-uldp, wall (CPU) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for k, n in ((1000, args.n_estimation), (10_000, args.n_estimation_10k)):
        for eps in args.epsilons:
            anchors = {}
            for library in ("multi_freq_ldpy", "pure_ldp"):
                r = _run(
                    "estimation",
                    {"library": library, "k": k, "n": n, "eps": eps, "form": "dense"},
                    timeout=args.timeout,
                )
                anchors[library] = r
            runs = [("this", None, "packed"), ("this", None, "dense")]
            runs += [("baseline", args.baseline, "dense")] if args.baseline else []
            for side, path, form in runs:
                r = _run(
                    "estimation",
                    {"library": "sklearn_uldp", "k": k, "n": n, "eps": eps, "form": form},
                    path,
                    timeout=args.timeout,
                )
                if "error" in r:
                    print(f"| {side} | {k} | {n:,} | {eps} | {r['error']} | | | |")
                    continue
                cells, times = [], []
                for library in ("multi_freq_ldpy", "pure_ldp"):
                    a = anchors[library]
                    if "error" in a:
                        cells.append(a["error"])
                    else:
                        cells.append(_s(a["time"]))
                        times.append(a["time"])
                # the faster anchor, in wall and in CPU time (CPU time is the
                # fairer one on a loaded machine)
                wall = min(t[0] for t in times) / r["time"][0] if times else float("nan")
                cpu = min(t[1] for t in times) / r["time"][1] if times else float("nan")
                print(
                    f"| {side} ({form}) | {k} | {n:,} | {eps} | {_s(r['time'])} | "
                    f"{cells[0]} | {cells[1]} | {wall:.1f}x ({cpu:.1f}x) |",
                    flush=True,
                )


def section_default(args):
    print("\n### The default estimate against the MLE (and IBU)\n")
    print(
        "| code | case | MLE s | MLE TV | default s | default TV | default / MLE, wall (CPU) "
        "| IBU s | IBU TV |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for case in args.default_cases:
        for _ in range(args.repeats):
            for side, path in _sides(args):
                # IBU runs once per case (it is the same code on both sides)
                r = _run(
                    "default", {"case": case, "ibu": side == "this"}, path, timeout=args.timeout
                )
                if "error" in r:
                    print(f"| {side} | {case} | {r['error']} | | | | | | |", flush=True)
                    continue
                mle, dflt, ibu = r["mle"], r["default"], r.get("ibu")
                print(
                    f"| {side} | {case} | {_s(mle)} | {mle[2]:.4f} | {_s(dflt)} | "
                    f"{dflt[2]:.4f} | {dflt[0] / mle[0]:.2f} ({dflt[1] / mle[1]:.2f}) | "
                    + (f"{_s(ibu)} | {ibu[2]:.4f} |" if ibu else "- | - |"),
                    flush=True,
                )


def section_k_growth(args):
    print("\n### Privatization cost per user against k (fit + transform, n = 10^6)\n")
    print("CPU ns per user, best of 5 (the wall time, best of 5, in brackets)\n")
    ks = (100, 1000, 10_000, 100_000)
    print(
        "| code | mechanism | "
        + " | ".join(f"k={k:,} ns" for k in ks)
        + " | 1e5 / 1e2 | floor ratio (1e2, 1e5) |"
    )
    print("|---|---|" + "---|" * len(ks) + "---|---|")
    for mechanism in ("krr", "olh"):
        for _ in range(args.repeats):
            for side, path in _sides(args):
                res = [
                    _run("k-growth", {"mechanism": mechanism, "k": k, "n": 1_000_000}, path)
                    for k in ks
                ]
                if any("error" in r for r in res):
                    print(
                        f"| {side} | {mechanism} | " + " | ".join(r.get("error", "") for r in res)
                    )
                    continue
                ns = [r["ns"] for r in res]
                floors = [r["ns"] / r["floor_ns"] for r in res]
                print(
                    f"| {side} | {mechanism} | "
                    + " | ".join(f"{r['ns']:.0f} ({r['wall_ns']:.0f})" for r in res)
                    + f" | {ns[-1] / ns[0]:.2f} | {floors[0]:.2f}, {floors[-1]:.2f} |",
                    flush=True,
                )


_PARALLEL_MODES = ("serial", "threads", "default", "dask-threads", "dask-processes")


def section_parallel(args):
    print("\n### Where parallelism pays (2 cores)\n")
    print(
        "Best of 3 (EM products: 5; EM fits: 2) in a fresh process per cell; the "
        "load average is the machine's 1-minute load before the row's cells\n"
    )
    print(
        "| code | job | n | one thread s | 2 threads s | default s | Dask threads s "
        "| Dask 2 processes s (+ start-up) | 2 workers: best speed-up | default / one thread |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    jobs = [
        ("dfp", args.parallel_n, _PARALLEL_MODES),
        ("em", args.parallel_em_n, ("serial", "threads", "default")),
        ("em-fit", args.parallel_em_fit_n, ("serial", "threads", "default")),
    ]
    for job, sizes, modes in jobs:
        for n in sizes:
            for side, path in _sides(args):
                load = os.getloadavg()[0]
                res = {
                    m: _run("parallel", {"job": job, "n": n, "mode": m}, path, timeout=args.timeout)
                    for m in modes
                }
                cells = []
                for m in _PARALLEL_MODES:
                    r = res.get(m)
                    if r is None:
                        cells.append("-")
                    elif "error" in r:
                        cells.append(r["error"][:40])
                    else:
                        extra = f" (+{r['startup']:.1f})" if m == "dask-processes" else ""
                        cells.append(_s(r["time"]) + extra)
                ok = {m: r["time"][0] for m, r in res.items() if "error" not in r}
                serial = ok.get("serial", float("nan"))
                speedup = serial / min(
                    (v for m, v in ok.items() if m not in ("serial", "default")),
                    default=float("nan"),
                )
                default = ok.get("default", float("nan")) / serial
                print(
                    f"| {side} | {job} | {n:,} | "
                    + " | ".join(cells)
                    + f" | {speedup:.2f}x | {default:.2f} (load {load:.1f}) |",
                    flush=True,
                )


_IMPORTS = {
    "sklearn": "import sklearn",
    "sklearn_uldp": "import sklearn_uldp",
    "first use": "from sklearn_uldp import RandomizedResponse, EMEstimator",
}


def section_import(args):
    print("\n### Import time (best of 5 fresh interpreters, alternating)\n")
    print(
        "| code | `import sklearn` s | `import sklearn_uldp` s | ratio | "
        "`from sklearn_uldp import RandomizedResponse, EMEstimator` s | ratio |"
    )
    print("|---|---|---|---|---|---|")
    import tempfile

    sides = _sides(args)
    runs = {side: {name: [] for name in _IMPORTS} for side, _ in sides}
    for _ in range(5):
        for side, path in sides:  # alternately, under the same load
            env = dict(os.environ)
            if path:
                env["PYTHONPATH"] = path
            for name, statement in _IMPORTS.items():
                code = (
                    "import time; t = time.perf_counter(); "
                    f"{statement}; print(time.perf_counter() - t)"
                )
                # from a neutral directory: ``python -c`` puts the working
                # directory first on sys.path, before PYTHONPATH
                out = subprocess.run(
                    [sys.executable, "-c", code],
                    env=env,
                    capture_output=True,
                    text=True,
                    cwd=tempfile.gettempdir(),
                )
                runs[side][name].append(float(out.stdout) if out.returncode == 0 else float("nan"))
    for side, _ in sides:
        best = {name: min(values) for name, values in runs[side].items()}
        base = best["sklearn"]
        print(
            f"| {side} | {base:.2f} | {best['sklearn_uldp']:.2f} | "
            f"{best['sklearn_uldp'] / base:.2f} | {best['first use']:.2f} | "
            f"{best['first use'] / base:.2f} |",
            flush=True,
        )


SECTIONS = {
    "memory": section_memory,
    "estimation": section_estimation,
    "default": section_default,
    "k-growth": section_k_growth,
    "parallel": section_parallel,
    "import": section_import,
}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cell", help=argparse.SUPPRESS)
    parser.add_argument("--sections", nargs="+", default=list(SECTIONS), choices=list(SECTIONS))
    parser.add_argument(
        "--baseline", default=None, help="source tree of other code, run side by side"
    )
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=3600)
    parser.add_argument(
        "--memory-cells",
        nargs="+",
        default=[
            "10000:1000000:packed",
            "1000:1000000:packed",
            "1000:1000000:dense",
            "1000:1000000:sparse",
            "10000:100000:dense",
            "10000:100000:sparse",
        ],
        help="k:n:form of each memory cell (form: packed, dense or sparse)",
    )
    parser.add_argument("--memory-em", action="store_true", help="EM too in the memory section")
    parser.add_argument("--n-estimation", type=int, default=1_000_000)
    parser.add_argument("--n-estimation-10k", type=int, default=100_000)
    parser.add_argument("--epsilons", type=float, nargs="+", default=[1.0])
    parser.add_argument(
        "--default-cases", nargs="+", default=["rappor-paper", "oue-1000", "oue-200"]
    )
    parser.add_argument(
        "--parallel-n", type=int, nargs="+", default=[100_000, 2_000_000, 20_000_000]
    )
    parser.add_argument(
        "--parallel-em-n", type=int, nargs="+", default=[10_000, 100_000, 1_000_000, 10_000_000]
    )
    parser.add_argument("--parallel-em-fit-n", type=int, nargs="+", default=[10_000_000])
    args = parser.parse_args(argv)
    if args.cell:
        section, kwargs = json.loads(args.cell)
        warnings.simplefilter("ignore")
        print(RESULT_PREFIX + json.dumps(CELLS[section](**kwargs)), flush=True)
        return
    import platform

    import sklearn_uldp

    print(
        f"# bench_scale: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}, "
        f"sklearn-uldp from {os.path.dirname(sklearn_uldp.__file__)}"
        + (f", baseline {args.baseline}" if args.baseline else "")
    )
    for section in args.sections:
        SECTIONS[section](args)
    print(f"\nload average at the end: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
