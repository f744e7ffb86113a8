#!/usr/bin/env python
"""First use after an install: import, privatize and the first fit, in fresh processes.

numba compiles a loop at its first call in an install and caches it; the
package sends small jobs through numpy paths (``utils._numba.use_compiled``)
so that a first fit on a sample compiles nothing. This script measures what
a user sees right after ``pip install .``: for each case, a fresh Python
process with an **empty numba cache** (``NUMBA_CACHE_DIR`` set to a new
temporary directory, which numba then uses instead of the install's
``__pycache__``: the state of a fresh install), then a second process with
that cache (every later run). Each process times ``import sklearn_uldp`` and
the case's classes (scikit-learn, scipy, numba included), the privatization
and the first ``fit``; with ``--numba-events`` it also lists the loops numba
compiled.

Run it with the interpreter of the environment to measure (e.g. a fresh
``python -m venv /tmp/v && /tmp/v/bin/pip install .``)::

    /tmp/v/bin/python benchmarks/bench_first_use.py
    /tmp/v/bin/python benchmarks/bench_first_use.py --n 10000 100000 --cases rappor-em sw

The goal (issue 36): the first fit of any estimator within 1.5 s.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

CASES = {
    "rr-em": ("RandomizedResponse(1.0, categories=cats, random_state=0)", "EMEstimator()"),
    "urr-em": (
        "UtilityOptimizedRR(1.0, sensitive=cats[:2], categories=cats, random_state=0)",
        "EMEstimator()",
    ),
    "rappor-em": ("RAPPOR(1.0, categories=cats, random_state=0)", "EMEstimator()"),
    "rappor-emp": ("RAPPOR(1.0, categories=cats, random_state=0)", "EmpiricalEstimator()"),
    "oue-em": ("RAPPOR(1.0, theta=0.5, categories=cats, random_state=0)", "EMEstimator()"),
    "urap-em": (
        "UtilityOptimizedRAPPOR(1.0, sensitive=cats[:2], categories=cats, random_state=0)",
        "EMEstimator()",
    ),
    "olh-em": ("OptimizedLocalHashing(1.0, categories=cats, random_state=0)", "EMEstimator()"),
    "hr-em": ("HadamardResponse(1.0, categories=cats, random_state=0)", "EMEstimator()"),
    "ss-em": ("SubsetSelection(1.0, categories=cats, random_state=0)", "EMEstimator()"),
    "cms-em": ("CountMeanSketch(1.0, categories=cats, random_state=0)", "EMEstimator()"),
    "cms-emp": ("CountMeanSketch(1.0, categories=cats, random_state=0)", "EmpiricalEstimator()"),
    "hcms-em": (
        "HadamardCountMeanSketch(1.0, categories=cats, random_state=0)",
        "EMEstimator()",
    ),
    "hybrid-mean": ("HybridMechanism(1.0, bounds=(0, k), random_state=0)", "MeanEstimator()"),
    "sw": ("SquareWave(1.0, bounds=(0, k), random_state=0)", "SquareWaveEstimator()"),
    "lue-em": ("LongitudinalUE(2.0, 1.0, categories=cats, random_state=0)", "EMEstimator()"),
    "lgrr-em": ("LongitudinalGRR(2.0, 1.0, categories=cats, random_state=0)", "EMEstimator()"),
}

_CHILD = r"""
import json, sys, time, warnings
warnings.simplefilter("ignore")
events = []
if {events}:
    from numba.core import event

    class _Listener(event.Listener):
        def on_start(self, ev):
            pass

        def on_end(self, ev):
            f = ev.data["dispatcher"].py_func
            if f.__module__.startswith("sklearn_uldp"):
                events.append(f.__module__.rsplit(".", 1)[-1] + "." + f.__qualname__)

    event.register("numba:compile", _Listener())
t0 = time.perf_counter()
import numpy as np
from sklearn_uldp import {mech_cls}, {est_cls}
import sklearn_uldp as su
t1 = time.perf_counter()
n, k = {n}, {k}
cats = np.arange(k)
rng = np.random.default_rng(0)
X = rng.integers(0, k, size=(n, 1))
if "{mech_cls}" in ("HybridMechanism", "SquareWave"):
    X = X + rng.random((n, 1))
mech = su.{mech}
if "{mech_cls}".startswith("Longitudinal"):
    from sklearn_uldp.utils import generate_user_secrets
    secrets = generate_user_secrets(n, random_state=0)
    t1b = time.perf_counter()
    reports = mech.fit().transform(X, user_secrets=secrets)
else:
    t1b = time.perf_counter()
    reports = mech.fit_transform(X)
t2 = time.perf_counter()
su.{est}.fit(reports)
t3 = time.perf_counter()
print(json.dumps({{"import": t1 - t0, "privatize": t2 - t1b, "fit": t3 - t2, "compiled": events}}))
"""


def run(case, n, k, cache, events):
    mech, est = CASES[case]
    code = _CHILD.format(
        events=events,
        mech=mech,
        est=est,
        mech_cls=mech.split("(")[0],
        est_cls=est.split("(")[0],
        n=n,
        k=k,
    )
    env = dict(os.environ, NUMBA_CACHE_DIR=cache)
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False
    )
    if out.returncode:
        return {"error": out.stderr.strip().splitlines()[-1][:80]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    ap.add_argument("--n", type=int, nargs="+", default=[10_000])
    ap.add_argument("--k", type=int, default=20)
    ap.add_argument("--numba-events", action="store_true", help="list the compiled loops")
    args = ap.parse_args(argv)
    import platform

    print(
        f"# first use: {sys.executable}, {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}\n"
    )
    print(
        "| case | n | k | fresh: import s | privatize s | **first fit s** | "
        "cached: import s | privatize s | fit s | compiled (fresh) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    worst = 0.0
    for n in args.n:
        for case in args.cases:
            with tempfile.TemporaryDirectory(prefix="numba-cache-") as cache:
                fresh = run(case, n, args.k, cache, args.numba_events)
                cached = run(case, n, args.k, cache, False)
            if "error" in fresh or "error" in cached:
                print(
                    f"| {case} | {n:,} | {args.k} | {fresh.get('error') or cached.get('error')} |"
                )
                continue
            worst = max(worst, fresh["fit"])
            names = ", ".join(fresh["compiled"]) if args.numba_events else "-"
            print(
                f"| {case} | {n:,} | {args.k} | {fresh['import']:.2f} | {fresh['privatize']:.2f} "
                f"| **{fresh['fit']:.2f}** | {cached['import']:.2f} | {cached['privatize']:.2f} "
                f"| {cached['fit']:.2f} | {names or '-'} |",
                flush=True,
            )
    print(
        f"\nslowest first fit: {worst:.2f} s (goal: 1.5 s); load average {os.getloadavg()[0]:.2f}"
    )


if __name__ == "__main__":
    main()
