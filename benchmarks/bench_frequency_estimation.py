#!/usr/bin/env python
"""Benchmark LDP frequency estimation: sklearn-uldp vs pure-ldp vs multi-freq-ldpy.

Mechanisms: k-ary randomized response (``krr``), OUE (``oue``), optimized and
binary local hashing (``olh``, ``blh``; anchors pure-ldp OLH/BLH, pure-ldp's
fast local hashing FLH, multi-freq-ldpy OLH/BLH), subset selection (``ss``;
multi-freq-ldpy), Apple's count-mean sketches (``cms``, ``hcms``; pure-ldp) and
Hadamard response (``hr``; pure-ldp's Hadamard mechanism and Hadamard
response).

For every (library, mechanism, k, epsilon) cell the script measures

* wall time to privatise all ``n`` users,
* wall time of each frequency estimator the library offers
  (empirical/unbiased, simplex-projected, thresholded, EM/IBU),
* total-variation distance ``0.5 * ||est - true||_1`` between each estimate and
  the true empirical distribution of the data,
* peak resident memory (``ru_maxrss``) of the process that ran the cell.

Each cell (and each repeat) runs in a fresh Python subprocess, so one cell's
memory high-water mark cannot pollute another's and a per-cell timeout can kill
a slow cell cleanly. Inside a cell, the library is first warmed up on a small
slice (imports, JIT compilation, first allocations), then timed. An anchor
estimator whose full run would exceed ``--anchor-cap`` seconds (predicted
from a run on the first ``--anchor-subsample`` reports, or stopped at the cap)
is reported with its time extrapolated linearly in n and no TV, marked ``~``
in the tables: no number is invented.  The data (a Zipf distribution over ``k`` categories) is
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
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from importlib import metadata

import numpy as np

# the anchors' compatibility shims, shared with the other benchmark scripts
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _anchors import compat_shims  # noqa: E402
from _measure import (  # noqa: E402
    RESULT_PREFIX,
    THREAD_VARS,
    cell_result,
    compiled_warmup,
    failure_tail,
    peak_rss_mb,
    run_cell_process,
    tv_distance,
    zipf_probabilities,
)
from _measure import child_env as _child_env  # noqa: E402

LIBRARIES = ("sklearn_uldp", "sklearn_uldp_chunked", "pure_ldp", "multi_freq_ldpy")
MECHANISMS = ("krr", "oue", "olh", "blh", "ss", "cms", "hcms", "hr")
#: The variants each library runs for a mechanism (a library without the
#: mechanism is skipped). sklearn_uldp_chunked exists for krr and oue only.
VARIANTS = {
    # hr_auto: HadamardResponse(block_size="auto"), blocked HR for large
    # epsilon, which pure-ldp's Hadamard response switches to above eps = 1
    # (the plain "hr" is our default and the one the verdicts use).
    "sklearn_uldp": {**{m: (m,) for m in MECHANISMS}, "hr": ("hr", "hr_auto")},
    "sklearn_uldp_chunked": {"krr": ("krr",), "oue": ("oue",)},
    "pure_ldp": {
        "krr": ("krr",),
        "oue": ("oue",),
        "olh": ("olh", "flh"),
        "blh": ("blh",),
        "cms": ("cms",),
        "hcms": ("hcms",),
        "hr": ("hm", "hr"),
    },
    "multi_freq_ldpy": {
        "krr": ("krr",),
        "oue": ("oue",),
        "olh": ("olh",),
        "blh": ("blh",),
        "ss": ("ss",),
    },
}
#: Sketch sizes (both libraries), and pure-ldp FLH's number of hash functions.
CMS_M, CMS_H = 256, 256
HCMS_M, HCMS_H = 1024, 256
FLH_FUNCTIONS = 1000
ESTIMATORS = ("emp", "proj", "thresh", "em")


# --------------------------------------------------------------------------- #
# helpers
# --------------------------------------------------------------------------- #
def make_data(n: int, k: int, s: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.choice(k, size=n, p=zipf_probabilities(k, s)).astype(np.int64)


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
    _BASELINE_MB.append(peak_rss_mb())


class Seconds(float):
    """Wall-clock seconds, with the process's CPU seconds as ``.cpu``.

    On a shared machine the wall time includes the time spent waiting for a
    core; the CPU time (user + system, this process only) does not.
    """

    def __new__(cls, wall, cpu):
        obj = super().__new__(cls, wall)
        obj.cpu = float(cpu)
        return obj

    def __reduce__(self):  # through the pipe of a forked, capped call
        return (Seconds, (float(self), self.cpu))


def _timed(fn):
    c0, t0 = time.process_time(), time.perf_counter()
    out = fn()
    return out, Seconds(time.perf_counter() - t0, time.process_time() - c0)


def _cpu(t):
    return getattr(t, "cpu", None)


def _runner_output(t_priv, estimators, params):
    """What a runner returns: privatisation wall and CPU seconds, estimators, parameters."""
    return {
        "privatize_s": t_priv,
        "privatize_cpu_s": _cpu(t_priv),
        "estimators": estimators,
        "params": params,
    }


# --------------------------------------------------------------------------- #
# per-library cell runners.  Each returns a dict:
#   {"privatize_s": float, "estimators": {name: {"time_s", "tv", "note"}}}
# Estimation times include any counting/aggregation of the raw reports that the
# estimator needs (i.e. "reports in -> frequency vector out").
# --------------------------------------------------------------------------- #
def _make_mechanism(mod, mech_name, k, eps, seed, opts):
    cats = np.arange(k)
    kw = {"sparse_output": True} if opts.get("sparse_output") else {}
    if opts.get("packed_output"):
        kw = {"packed_output": True}
    make = {
        "krr": lambda: mod.RandomizedResponse(epsilon=eps, categories=cats, random_state=seed),
        "oue": lambda: mod.RAPPOR(epsilon=eps, theta=0.5, categories=cats, random_state=seed, **kw),
        "olh": lambda: mod.OptimizedLocalHashing(eps, categories=cats, random_state=seed),
        "blh": lambda: mod.BinaryLocalHashing(eps, categories=cats, random_state=seed),
        "ss": lambda: mod.SubsetSelection(eps, categories=cats, random_state=seed, **kw),
        "cms": lambda: mod.CountMeanSketch(
            eps, n_buckets=CMS_M, n_hashes=CMS_H, categories=cats, random_state=seed
        ),
        "hcms": lambda: mod.HadamardCountMeanSketch(
            eps, n_buckets=HCMS_M, n_hashes=HCMS_H, categories=cats, random_state=seed
        ),
        "hr": lambda: mod.HadamardResponse(epsilon=eps, categories=cats, random_state=seed),
        "hr_auto": lambda: mod.HadamardResponse(
            epsilon=eps, block_size="auto", categories=cats, random_state=seed
        ),
    }
    return make[mech_name]()


def _params_note(mech):
    for attr, label in (("hash_range_", "g"), ("subset_size_", "d")):
        if hasattr(mech, attr):
            return f"{label}={getattr(mech, attr)}"
    b = getattr(getattr(mech, "channel_", None), "b", None)
    return "" if b is None else f"block size {b}"


def run_sklearn_uldp(mech_name, X, k, eps, seed, true, opts):
    mod = _import_sklearn_uldp()
    X2 = X.reshape(-1, 1)
    factories = {
        "emp": lambda: mod.EmpiricalEstimator(),
        "proj": lambda: mod.EmpiricalEstimator(projection="simplex"),
        "thresh": lambda: mod.ThresholdEstimator(alpha=0.05),
        "em": lambda: mod.EMEstimator(),
    }
    # Warm-up on a slice (lazy imports, numba compilation, first allocations),
    # with another seed so that the timed run's draws are untouched.
    warm = X2[: int(opts.get("warmup", 20_000))]
    wmech = _make_mechanism(mod, mech_name, k, eps, seed + 1, opts)
    with compiled_warmup():  # the loops of the full size, not the slice's numpy paths
        wrep = wmech.fit(warm).transform(warm)
        for make in factories.values():
            try:
                np.asarray(make().fit(wrep).distribution_)
            except Exception:  # noqa: S110  (the timed run reports the error)
                pass
    del wmech, wrep
    mech = _make_mechanism(mod, mech_name, k, eps, seed, opts)
    mark_baseline()

    def priv():
        mech.fit(X2)
        return mech.transform(X2)

    reports, t_priv = _timed(priv)

    ests = {}
    for name, make in factories.items():
        try:

            def fit_and_read():
                e = make().fit(reports)
                return e, np.asarray(e.distribution_)  # include a lazy distribution_

            (est, dist), t = _timed(fit_and_read)
            ests[name] = {
                "time_s": t,
                "cpu_s": _cpu(t),
                "tv": tv_distance(dist, true),
                "note": _em_note(est),
            }
        except Exception as e:  # keep going; report the failure
            ests[name] = {"error": f"{type(e).__name__}: {e}"}
    return _runner_output(t_priv, ests, _params_note(mech))


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
        if opts.get("packed_output"):
            kw = {"packed_output": True}
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
        rep = mech.transform(X2[start : start + chunk])
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
            out[name] = {
                "time_s": times[name] + t,
                "tv": tv_distance(dist, true),
                "note": _em_note(est),
            }
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


# --------------------------------------------------------------------------- #
# anchors: compatibility shims, a per-call time cap, extrapolation
# --------------------------------------------------------------------------- #
_CHILD_PEAK_MB = []


def _capped(fn, cap):
    """Run ``fn()`` in a forked copy of this process, stopped after ``cap`` s.

    Returns ``(result, None)`` or ``(None, reason)``. The fork sees the
    reports and the anchor's (not yet used) server as they are, and leaves
    them untouched, so a stopped or sub-sampled call cannot spoil the next
    one; its peak memory counts as the cell's.
    """
    import multiprocessing as mp

    ctx = mp.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)

    def target():
        try:
            out = ("ok", fn())
        except BaseException as e:  # noqa: BLE001  (reported to the parent)
            out = ("error", f"{type(e).__name__}: {e}"[:200])
        send.send(out + (peak_rss_mb(),))
        send.close()

    proc = ctx.Process(target=target, daemon=True)
    proc.start()
    send.close()
    try:
        # poll(None) waits without limit (--anchor-cap 0)
        if not recv.poll(None if cap == float("inf") else cap):
            return None, f"stopped at the {cap:g} s cap"
        status, out, rss = recv.recv()
    except EOFError:
        proc.join()
        return None, f"child died (exit code {proc.exitcode}; out of memory?)"
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join()
    _CHILD_PEAK_MB.append(rss)
    return (out, None) if status == "ok" else (None, out)


def _anchor_estimates(jobs, reports, true, opts):
    """Time an anchor's estimators, each job under the per-call cap.

    ``jobs`` is a list of callables ``job(reports) -> {name: (seconds,
    frequency vector, note)}`` with the estimator names in ``job.names``.
    Each job first runs on the first ``anchor_subsample`` reports; when its
    time scaled by n / m exceeds the cap, or the full run is stopped at the
    cap, the full-n time is reported as that linear extrapolation
    (``extrapolated``) and the TV as unknown; when even the subsample is
    stopped, as the lower bound cap * n / m (``lower_bound``).
    """
    n = len(reports)
    cap = float(opts.get("anchor_cap") or "inf")  # 0: no cap
    m = int(opts.get("anchor_subsample") or 0)
    wanted = opts.get("anchor_estimators")
    if wanted:
        # --anchor-estimators: a job none of whose names is wanted is not run
        # at all (its names are absent from the cell: "—" in the tables).
        jobs = [job for job in jobs if set(job.names) & set(wanted)]
    out = {}
    for job in jobs:
        sub, why = (None, None)
        if 0 < m < n:
            sub, why = _capped(lambda: job(reports[:m]), cap)
            if sub is None and why.startswith("stopped"):
                # Even the subsample exceeded the cap: a lower bound only.
                for name in job.names:
                    out[name] = {
                        "time_s": cap * n / m,
                        "cpu_s": None,
                        "tv": None,
                        "extrapolated": True,
                        "lower_bound": True,
                        "note": f"> {cap:g} s on {m:,} reports, so > x{n / m:g}",
                    }
                continue
            if sub is None:
                out.update({"?": {"error": f"on {m:,} reports: {why}"}})
                continue
            # The names of one job share its work (pure-ldp's estimates are
            # post-processing of one aggregation, counted in each name's
            # time), so the call's time is the largest, not the sum.
            predicted = max(t for t, _, _ in sub.values()) * n / m
            if predicted > cap:
                why = f"predicted {predicted:.0f} s > cap {cap:g} s"
        full = None
        if why is None:
            full, why = _capped(lambda: job(reports), cap)
        if full is not None:
            for name, (t, est, note) in full.items():
                out[name] = {
                    "time_s": t,
                    "cpu_s": _cpu(t),
                    "tv": tv_distance(est, true),
                    "note": note,
                }
        elif sub is not None:
            for name, (t, _, note) in sub.items():
                out[name] = {
                    "time_s": t * n / m,
                    "cpu_s": _cpu(t) and _cpu(t) * n / m,
                    "tv": None,
                    "extrapolated": True,
                    "note": "; ".join(
                        filter(None, [note, f"~time x{n / m:g} from {m:,} reports ({why})"])
                    ),
                }
        else:
            out.update({"?": {"error": why}})
    return out


def _pure_ldp_pair(variant, k, eps):
    """(client, server, note) of a pure-ldp oracle over the codes 0..k-1."""
    identity = lambda x: x  # noqa: E731  (the default maps 1-based items)
    if variant == "krr":
        from pure_ldp.frequency_oracles.direct_encoding import DEClient, DEServer

        return (
            DEClient(epsilon=eps, d=k, index_mapper=identity),
            DEServer(epsilon=eps, d=k, index_mapper=identity),
            "",
        )
    if variant == "oue":
        from pure_ldp.frequency_oracles.unary_encoding import UEClient, UEServer

        return (
            UEClient(epsilon=eps, d=k, use_oue=True, index_mapper=identity),
            UEServer(epsilon=eps, d=k, use_oue=True, index_mapper=identity),
            "",
        )
    if variant in ("olh", "blh"):
        from pure_ldp.frequency_oracles.local_hashing import LHClient, LHServer

        olh = variant == "olh"
        server = LHServer(epsilon=eps, d=k, use_olh=olh, index_mapper=identity)
        return (
            LHClient(epsilon=eps, d=k, use_olh=olh, index_mapper=identity),
            server,
            f"g={server.g}",
        )
    if variant == "flh":
        from pure_ldp.frequency_oracles.local_hashing import FastLHClient, FastLHServer

        # The server's table of FLH_FUNCTIONS x k hashes is set-up, not timed.
        server = FastLHServer(eps, k, FLH_FUNCTIONS, use_olh=True, index_mapper=identity)
        client = FastLHClient(eps, k, FLH_FUNCTIONS, use_olh=True, index_mapper=identity)
        return client, server, f"FLH g={server.g}, {FLH_FUNCTIONS} functions"
    if variant in ("cms", "hcms"):
        from pure_ldp.frequency_oracles.apple_cms import CMSClient, CMSServer

        had = variant == "hcms"
        m, h = (HCMS_M, HCMS_H) if had else (CMS_M, CMS_H)
        server = CMSServer(epsilon=eps, k=h, m=m, is_hadamard=had)
        client = CMSClient(epsilon=eps, hash_funcs=server.get_hash_funcs(), m=m, is_hadamard=had)
        return client, server, f"m={m},h={h}"
    if variant == "hm":
        from pure_ldp.frequency_oracles.hadamard_mechanism import (
            HadamardMechClient,
            HadamardMechServer,
        )

        # Its fast Walsh-Hadamard transform needs a power-of-2 domain.
        d = 1 << (k - 1).bit_length()
        server = HadamardMechServer(eps, d, 1, use_optimal_t=True, index_mapper=identity)
        client = HadamardMechClient(eps, d, 1, use_optimal_t=True, index_mapper=identity)
        return client, server, f"Hadamard mechanism t={server.t}"
    if variant == "hr":
        from pure_ldp.frequency_oracles.hadamard_response import (
            HadamardResponseClient,
            HadamardResponseServer,
        )

        server = HadamardResponseServer(eps, k, index_mapper=identity)
        client = HadamardResponseClient(eps, k, server.get_hash_funcs(), index_mapper=identity)
        return client, server, "Hadamard response"
    raise ValueError(f"pure-ldp has no {variant!r}")


def run_pure_ldp(variant, X, k, eps, seed, true, opts):
    import random

    compat_shims()
    client, server, params = _pure_ldp_pair(variant, k, eps)
    data = X.tolist()  # the library is per-item Python; feed it Python ints (untimed)
    for v in data[:1000]:  # warm-up
        list(client.privatise(v)) if variant == "hm" else client.privatise(v)
    random.seed(seed)
    np.random.seed(seed)
    mark_baseline()

    # Per-user Python loop: this is the library's API (privatise one item).
    # The Hadamard mechanism returns a lazy zip: materialise it (timed).
    if variant == "hm":
        reports, t_priv = _timed(lambda: [list(client.privatise(v)) for v in data])
    else:
        reports, t_priv = _timed(lambda: [client.privatise(v) for v in data])

    domain = list(range(k))

    def job(reps):
        # Aggregation (a per-report Python loop) is shared by all estimators;
        # its time is added to each estimator's time.
        _, t_agg = _timed(lambda: server.aggregate_all(reps))
        res = {}
        for name, norm in (("emp", 0), ("proj", 2), ("thresh", 3)):
            est, t = _timed(
                lambda: server.estimate_all(domain, suppress_warnings=True, normalization=norm)
            )
            res[name] = (
                Seconds(t_agg + t, t_agg.cpu + t.cpu),
                np.asarray(est, dtype=float) / len(reps),
                {0: "", 2: "norm=2", 3: "norm=3 cut"}[norm],
            )
        return res

    job.names = ("emp", "proj", "thresh")
    ests = _anchor_estimates([job], reports, true, opts)
    return _runner_output(t_priv, ests, params)


def run_multi_freq_ldpy(variant, X, k, eps, seed, true, opts):
    import numba

    compat_shims()
    from multi_freq_ldpy.pure_frequency_oracles import GRR, LH, SS, UE

    @numba.njit
    def _numba_seed(s):  # numba has its own RNG state, separate from numpy's
        np.random.seed(s)

    nb_iter, tol = int(opts.get("ibu_iter", 10000)), float(opts.get("ibu_tol", 1e-12))
    k = int(k)
    eps = float(eps)
    data = X.tolist()
    params = ""
    if variant == "krr":
        client = lambda v: GRR.GRR_Client(v, k, eps)  # noqa: E731
        mi = lambda r: GRR.GRR_Aggregator_MI(r, k, eps)  # noqa: E731
        ibu = lambda r, it=nb_iter: GRR.GRR_Aggregator_IBU(r, k, eps, nb_iter=it, tol=tol)  # noqa: E731,E501
    elif variant == "oue":
        client = lambda v: UE.UE_Client(v, k, eps, True)  # noqa: E731
        mi = lambda r: UE.UE_Aggregator_MI(r, eps, True)  # noqa: E731
        ibu = lambda r, it=nb_iter: UE.UE_Aggregator_IBU(r, k, eps, True, nb_iter=it, tol=tol)  # noqa: E731,E501
    elif variant in ("olh", "blh"):
        olh = variant == "olh"
        client = lambda v: LH.LH_Client(v, k, eps, olh)  # noqa: E731
        mi = lambda r: LH.LH_Aggregator_MI(r, k, eps, olh)  # noqa: E731
        ibu = lambda r, it=nb_iter: LH.LH_Aggregator_IBU(r, k, eps, olh, nb_iter=it, tol=tol)  # noqa: E731,E501
        params = f"g={int(round(np.exp(eps))) + 1 if olh else 2}"
    elif variant == "ss":
        client = lambda v: SS.SS_Client(v, k, eps)  # noqa: E731
        mi = lambda r: SS.SS_Aggregator_MI(r, k, eps)  # noqa: E731
        ibu = lambda r, it=nb_iter: SS.SS_Aggregator_IBU(r, k, eps, nb_iter=it, tol=tol)  # noqa: E731,E501
        params = f"d={int(max(1, np.rint(k / (np.exp(eps) + 1))))}"
    else:
        raise ValueError(f"multi-freq-ldpy has no {variant!r}")

    # Warm-up: numba JIT compilation and first allocations, outside the timing.
    warm = [client(v) for v in data[:1000]]
    mi(warm)
    ibu(warm, 2)
    del warm
    _numba_seed(seed)
    np.random.seed(seed)
    mark_baseline()

    # Per-user Python loop over a numba-jitted single-user client.
    reports, t_priv = _timed(lambda: [client(v) for v in data])

    def mi_job(reps):
        est, t = _timed(lambda: mi(reps))
        return {"emp": (t, np.asarray(est, dtype=float), "MI clip+renorm")}

    def ibu_job(reps):
        est, t = _timed(lambda: ibu(reps))
        note = (
            _ibu_note(est, reps, variant, k, eps, tol, nb_iter)
            if variant in ("krr", "oue") and len(reps) == len(reports)
            else "IBU"
        )
        return {"em": (t, np.asarray(est, dtype=float), note)}

    mi_job.names, ibu_job.names = ("emp",), ("em",)
    ests = _anchor_estimates([mi_job, ibu_job], reports, true, opts)
    return _runner_output(t_priv, ests, params)


def _ibu_note(est, reports, mech_name, k, eps, tol, nb_iter):
    """IBU does not report its iteration count; take one more IBU step (untimed)
    and flag 'CAP' if it would still move by >= tol, i.e. it hit nb_iter."""
    if mech_name == "krr":
        p = np.exp(eps) / (np.exp(eps) + k - 1)
        q = (1 - p) / (k - 1)
    else:
        p, q = 0.5, 1 / (np.exp(eps) + 1)
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
    variant = cell.get("variant", mech)
    res = RUNNERS[lib](variant, X, k, eps, cell["seed"], true, cell.get("opts", {}))
    # Baseline = high-water mark after imports, data load and library setup
    # (incl. numba JIT warm-up), as recorded by the runner via mark_baseline().
    # Anchor estimators run in forks (for the time cap): their peaks count.
    res.update(
        baseline_mb=_BASELINE_MB[0] if _BASELINE_MB else float("nan"),
        peak_mb=max([peak_rss_mb(), *_CHILD_PEAK_MB]),
    )
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
                    ram_gb = int(line.split()[1]) / 1024**2
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
        "sklearn-uldp": (
            _version("sklearn-uldp")
            if _version("sklearn-uldp") != "not installed"
            else "not installed (imported from the checkout)"
        ),
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


def child_env(threads: int) -> dict:
    return _child_env(threads, THREAD_VARS + ("VECLIB_MAXIMUM_THREADS",))


def spawn_cell(cell: dict, timeout: float | None, env: dict | None = None) -> dict:
    t0 = time.perf_counter()
    try:
        r = run_cell_process(__file__, cell, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"status": f"timeout>{timeout:g}s"}
    wall = time.perf_counter() - t0
    res = cell_result(r)
    if res is not None:
        res.update(status="ok", wall_s=wall)
        return res
    tail = failure_tail(r)
    if r.returncode < 0:
        tail = f"killed by signal {-r.returncode} (OOM?)"
    return {"status": f"failed: {tail}"[:200]}


def _median_or_none(values):
    values = list(values)
    return None if not values or None in values else statistics.median(values)


def aggregate_repeats(runs: list[dict]) -> dict:
    ok = [r for r in runs if r.get("status") == "ok"]
    if not ok:
        return {"status": runs[0].get("status", "failed")}
    out = {
        "status": "ok",
        "repeats": len(ok),
        "privatize_s": statistics.median(r["privatize_s"] for r in ok),
        "privatize_cpu_s": _median_or_none(r.get("privatize_cpu_s") for r in ok),
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
        tvs = [v["tv"] for v in good if v.get("tv") is not None]
        out["estimators"][name] = {
            "time_s": statistics.median(v["time_s"] for v in good),
            "cpu_s": _median_or_none(v.get("cpu_s") for v in good),
            "extrapolated": any(v.get("extrapolated") for v in good),
            "lower_bound": any(v.get("lower_bound") for v in good),
            "tv": statistics.fmean(tvs) if tvs else None,
            "tv_sd": statistics.stdev(tvs) if len(tvs) > 1 else None,
            "note": "; ".join(sorted({v.get("note", "") for v in good} - {""})),
        }
    errors = [v["error"] for r in ok for v in r["estimators"].values() if "error" in v]
    if errors:
        out["estimators"]["?"] = {"error": errors[0]}
    out["params"] = ok[0].get("params", "")
    return out


def fmt_time(x):
    return "—" if x is None else (f"{x:.3g}" if x < 100 else f"{x:.0f}")


def render_table(rows: list[dict]) -> str:
    head = ["library", "mech", "k", "eps", "params", "privatize s"]
    for e in ESTIMATORS:
        head += [f"{e} s", f"{e} TV"]
    head += ["peak MB", "Δ MB", "notes"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        r = row["result"]
        cells = [
            _label(row),
            row["mechanism"],
            str(row["k"]),
            f"{row['epsilon']:g}",
            r.get("params", ""),
        ]
        if r.get("status") != "ok":
            cells += ["—"] * (1 + 2 * len(ESTIMATORS) + 2) + [r.get("status", "")]
        else:
            cells.append(_pair(r["privatize_s"], r.get("privatize_cpu_s")))
            notes = []
            for e in ESTIMATORS:
                v = r["estimators"].get(e)
                if v is None:
                    cells += ["—", "—"]
                elif "error" in v:
                    cells += ["err", "err"]
                    notes.append(f"{e}: {v['error'][:80]}")
                else:
                    tv = "n/a" if v.get("tv") is None else f"{v['tv']:.4f}"
                    if v.get("tv_sd") is not None:
                        tv += f"±{v['tv_sd']:.4f}"
                    mark = ">" if v.get("lower_bound") else "~" if v.get("extrapolated") else ""
                    cells += [mark + _pair(v["time_s"], v.get("cpu_s")), tv]
                    if v.get("note"):
                        notes.append(f"{e}: {v['note']}")
            if "?" in r["estimators"]:
                notes.append(f"error: {r['estimators']['?']['error'][:80]}")
            cells += [
                f"{r['peak_mb']:.0f}",
                f"{r['peak_mb'] - r['baseline_mb']:.0f}",
                "; ".join(notes),
            ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


LEGEND = (
    "Columns: `privatize s` = time to privatise all n users; `<est> s` = time from raw "
    "reports to a frequency vector (includes counting/aggregation); `<est> TV` = "
    "0.5·L1 to the true empirical distribution (estimate not renormalised); "
    "`peak MB` = ru_maxrss of the cell's process; `Δ MB` = peak minus the high-water mark "
    "after imports, data load and library setup (incl. numba JIT warm-up). Estimators: emp = unbiased frequency oracle "  # noqa: E501
    "(multi_freq_ldpy: MI, clipped at 0 and renormalised); proj = simplex projection "
    "(pure_ldp normalization=2); thresh = sklearn_uldp ThresholdEstimator(alpha=0.05) / "
    "pure_ldp normalization=3 (threshold cut); em = sklearn_uldp EMEstimator "
    '(report_store="disk" in sklearn_uldp_chunked) / '
    "multi_freq_ldpy IBU. `CAP` = EM stopped at its iteration cap. Times are wall-clock "
    "seconds with the process's CPU seconds in parentheses; `~` = extrapolated (see Setup)."
)


SUMMARY_LEGEND = (
    "Ratios are the faster anchor's time over ours (privatization: the anchor with the "
    "smaller privatization time; estimation: our unbiased `emp` against the fastest "
    "anchor unbiased estimator, pure-ldp normalization=0 or multi-freq-ldpy MI; `EM / IBU`: "
    "multi-freq-ldpy's IBU over our EMEstimator). `~` = the anchor's time is a linear "
    "extrapolation from a subsample (its call would have exceeded the cap); `>` = even "
    "the subsample exceeded the cap, so the time (cap x n / subsample) is a lower bound. "
    "TV ok: the lowest TV among our estimators is no higher than the lowest TV among the anchors' "
    "estimators that ran on all n reports (one run each: differences of a few percent "
    "are within the noise)."
)


def _label(row) -> str:
    lib, variant = row["library"], row.get("variant", row["mechanism"])
    return lib if variant == row["mechanism"] else f"{lib} ({variant})"


ANCHOR_LIBRARIES = ("pure_ldp", "multi_freq_ldpy")


def _pair(wall, cpu):
    return fmt_time(wall) + ("" if cpu is None else f" ({fmt_time(cpu)})")


def _ratio_cols(a_wall, a_cpu, o_wall, o_cpu, approx):
    """Ratio (anchor / ours) and the 10x verdict, on wall and on CPU time."""
    rw = a_wall / o_wall if o_wall else float("inf")
    rc = a_cpu / o_cpu if a_cpu is not None and o_cpu else None
    ratio = f"{approx}{rw:.0f}" + ("" if rc is None else f" / {approx}{rc:.0f}")
    verdict = ("yes" if rw >= 10 else "NO") + (
        "" if rc is None else " / " + ("yes" if rc >= 10 else "NO")
    )
    return [ratio, verdict]


def render_summary(rows: list[dict]) -> str:
    """Ours against the faster anchor, cell by cell, with the goals' verdicts.

    Goals: privatization and estimation (unbiased estimator against the
    anchors' unbiased ones) at least 10 times faster than the faster anchor,
    and a TV no worse than the best anchor estimator's (among those that ran
    on all n reports).
    """
    head = [
        "mech",
        "k",
        "eps",
        "privatize ours s (CPU)",
        "faster anchor s (CPU)",
        "ratio wall / CPU",
        "≥10× wall / CPU",
        "emp ours s (CPU)",
        "faster anchor emp s (CPU)",
        "ratio wall / CPU",
        "≥10× wall / CPU",
        "EM / IBU ratio",
        "TV ours best (est)",
        "TV ours emp",
        "TV best anchor (est)",
        "TV ok",
        "peak MB ours / anchor",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    keys = list(dict.fromkeys((r["mechanism"], r["k"], r["epsilon"]) for r in rows))
    for mech, k, eps in keys:
        cell = [
            r
            for r in rows
            if (r["mechanism"], r["k"], r["epsilon"]) == (mech, k, eps)
            and r["result"].get("status") == "ok"
        ]
        ours = next(
            (r["result"] for r in cell if r["library"] == "sklearn_uldp" and r["variant"] == mech),
            None,
        )
        anchors = [r for r in cell if r["library"] in ANCHOR_LIBRARIES]
        if ours is None or not anchors:
            continue
        fa = min(anchors, key=lambda r: r["result"]["privatize_s"])
        far = fa["result"]
        priv_cols = [
            _pair(ours["privatize_s"], ours.get("privatize_cpu_s")),
            f"{_pair(far['privatize_s'], far.get('privatize_cpu_s'))} ({_label(fa)})",
            *_ratio_cols(
                far["privatize_s"],
                far.get("privatize_cpu_s"),
                ours["privatize_s"],
                ours.get("privatize_cpu_s"),
                "",
            ),
        ]
        emps = [
            (r["result"]["estimators"]["emp"], _label(r))
            for r in anchors
            if "time_s" in r["result"]["estimators"].get("emp", {})
        ]
        ours_emp = ours["estimators"].get("emp", {})
        if emps and "time_s" in ours_emp:
            ae, _ = min(emps, key=lambda e: e[0]["time_s"])
            approx = ">" if ae.get("lower_bound") else "~" if ae.get("extrapolated") else ""
            est_cols = [
                _pair(ours_emp["time_s"], ours_emp.get("cpu_s")),
                approx + _pair(ae["time_s"], ae.get("cpu_s")),
                *_ratio_cols(
                    ae["time_s"], ae.get("cpu_s"), ours_emp["time_s"], ours_emp.get("cpu_s"), approx
                ),
            ]
        else:
            est_cols = ["—"] * 4
        ibus = [
            r["result"]["estimators"]["em"]
            for r in anchors
            if r["library"] == "multi_freq_ldpy"
            and "time_s" in r["result"]["estimators"].get("em", {})
        ]
        ours_em = ours["estimators"].get("em", {})
        if ibus and "time_s" in ours_em:
            ib = ibus[0]
            em_ratio = (
                ">" if ib.get("lower_bound") else "~" if ib.get("extrapolated") else ""
            ) + f"{ib['time_s'] / ours_em['time_s']:.0f}"
        else:
            em_ratio = "—"
        ours_tv = [(v["tv"], e) for e, v in ours["estimators"].items() if v.get("tv") is not None]
        anc_tv = [
            (v["tv"], f"{_label(r)} {e}")
            for r in anchors
            for e, v in r["result"]["estimators"].items()
            if v.get("tv") is not None
        ]
        best = min(ours_tv) if ours_tv else None
        abest = min(anc_tv) if anc_tv else None
        tv_ok = "—" if best is None or abest is None else "yes" if best[0] <= abest[0] else "NO"
        lines.append(
            "| "
            + " | ".join(
                [
                    mech,
                    str(k),
                    f"{eps:g}",
                    *priv_cols,
                    *est_cols,
                    em_ratio,
                    "—" if best is None else f"{best[0]:.4f} ({best[1]})",
                    "n/a" if ours_emp.get("tv") is None else f"{ours_emp['tv']:.4f}",
                    "n/a (no anchor ran on all n)"
                    if abest is None
                    else f"{abest[0]:.4f} ({abest[1]})",
                    tv_ok,
                    f"{ours['peak_mb']:.0f} / {fa['result']['peak_mb']:.0f}",
                ]
            )
            + " |"
        )
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
        f"- anchor estimators: per-call cap {args.anchor_cap:g} s; a call predicted (from "
        f"the first {args.anchor_subsample:,} reports) or found to exceed it is reported "
        "with its time extrapolated linearly in n (`~`) and no TV",
        *(
            [f"- anchor variants run: only {', '.join(args.anchor_variants)}"]
            if getattr(args, "anchor_variants", None)
            else []
        ),
        *(
            [f"- anchor estimator calls run: only those giving {', '.join(args.anchor_estimators)}"]
            if getattr(args, "anchor_estimators", None)
            else []
        ),
        f"- warm-up before timing: {args.warmup:,} users (sklearn-uldp), 1,000 (anchors)",
        f"- threads per cell (BLAS/OpenMP/numba): "
        f"{args.threads if args.threads > 0 else 'environment default'}",
        f"- load average at start (1/5/15 min): {info['loadavg']} — "
        "other processes on the machine skew timings",
    ]
    return "\n".join(lines)


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    p.add_argument("--n", type=int, default=1_000_000, help="number of users")
    p.add_argument("--k", type=int, nargs="+", default=[100, 1000], help="domain sizes")
    p.add_argument("--epsilon", type=float, nargs="+", default=[0.5, 1.0, 4.0])
    p.add_argument("--mechanisms", nargs="+", choices=MECHANISMS, default=list(MECHANISMS))
    p.add_argument("--libraries", nargs="+", choices=LIBRARIES, default=list(LIBRARIES))
    p.add_argument(
        "--repeats",
        type=int,
        default=1,
        help="independent privatisation seeds per cell (each in its own process)",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="smoke run: n=20000 (unless --n is given explicitly), 1 repeat",
    )
    p.add_argument("--seed", type=int, default=0, help="data seed")
    p.add_argument("--zipf-s", type=float, default=1.1, help="Zipf exponent of the data")
    p.add_argument(
        "--chunk-size", type=int, default=100_000, help="chunk size for sklearn_uldp_chunked"
    )
    p.add_argument(
        "--sparse-output",
        action="store_true",
        help="sklearn_uldp RAPPOR: sparse_output=True (CSR reports)",
    )
    p.add_argument(
        "--packed-output",
        action="store_true",
        help="sklearn_uldp RAPPOR and SS: packed_output=True (k/8 bytes a report)",
    )
    p.add_argument(
        "--ibu-iter",
        type=int,
        default=10000,
        help="multi_freq_ldpy IBU nb_iter (library default 10000)",
    )
    p.add_argument(
        "--ibu-tol",
        type=float,
        default=1e-12,
        help="multi_freq_ldpy IBU tol (library default 1e-12)",
    )
    p.add_argument(
        "--anchor-cap",
        type=float,
        default=120.0,
        help="per-call time cap (s) of an anchor estimator; beyond it the time "
        "is extrapolated from --anchor-subsample reports and TV not reported "
        "(0 = no cap)",
    )
    p.add_argument(
        "--anchor-subsample",
        type=int,
        default=20_000,
        help="reports an anchor estimator first runs on, to predict its full "
        "time (0 = always try all n, stopped at --anchor-cap)",
    )
    p.add_argument(
        "--anchor-variants",
        nargs="+",
        default=None,
        metavar="[LIBRARY:]VARIANT",
        help="run only these anchor variants (e.g. flh, pure_ldp:olh, "
        "multi_freq_ldpy:olh); other anchor variants of the chosen mechanisms "
        "are skipped. Default: all",
    )
    p.add_argument(
        "--anchor-estimators",
        nargs="+",
        choices=ESTIMATORS,
        default=None,
        help="run only the anchor estimator calls that give one of these "
        "(pure-ldp: one aggregation gives emp, proj and thresh; "
        "multi-freq-ldpy: emp = MI, em = IBU). Default: all",
    )
    p.add_argument(
        "--warmup",
        type=int,
        default=20_000,
        help="users of the untimed warm-up run of sklearn-uldp in each cell",
    )
    p.add_argument(
        "--max-cell-seconds",
        type=float,
        default=None,
        help="kill a cell (one repeat) after this many seconds and mark it skipped",
    )
    p.add_argument(
        "--threads",
        type=int,
        default=1,
        help="BLAS/OpenMP/numba threads in each cell (sets OMP_NUM_THREADS etc.); "
        "0 = leave the environment alone",
    )
    p.add_argument("--output", default=None, help="write the markdown report here")
    p.add_argument("--json", default=None, help="also dump raw per-cell results as JSON")
    p.add_argument(
        "--cells-log",
        default=None,
        metavar="JSONL",
        help="append each finished cell here as one JSON line (default: a "
        "cells.jsonl in the run's temporary directory)",
    )
    p.add_argument(
        "--from-cells",
        nargs="+",
        default=None,
        metavar="JSONL",
        help="render the tables from the cells.jsonl files that runs leave "
        "beside their data (a run still going, or several runs together)",
    )
    p.add_argument("--cell", default=None, help=argparse.SUPPRESS)  # internal: child mode
    args = p.parse_args(argv)
    if args.quick:
        if not any(a == "--n" or a.startswith("--n=") for a in (argv or sys.argv[1:])):
            args.n = 20_000
        args.repeats = 1
    return args


def _render_from_cells(args, header):
    # A cell measured again (a later line, or a later file) replaces the
    # earlier, except that a run limited by --anchor-estimators only replaces
    # the estimators it ran: the others are kept from the earlier line (same
    # seeds, so the same reports).
    cells, raw = {}, {}
    for path in args.from_cells:
        with open(path) as f:
            for line in f:
                rec = json.loads(line)
                c, res = rec["cell"], dict(rec["result"], status="ok")
                key = (
                    c["library"],
                    c["mechanism"],
                    c.get("variant", c["mechanism"]),
                    c["k"],
                    c["epsilon"],
                )
                if c.get("opts", {}).get("anchor_estimators") and key in raw:
                    kept = {e: v for e, v in raw[key]["estimators"].items() if e != "?"}
                    res["estimators"] = {**kept, **res["estimators"]}
                raw[key] = res
                row = {
                    "library": c["library"],
                    "mechanism": c["mechanism"],
                    "variant": c.get("variant", c["mechanism"]),
                    "k": c["k"],
                    "epsilon": c["epsilon"],
                    "result": aggregate_repeats([res]),
                }
                cells[key] = row
    rows = list(cells.values())
    order = {m: i for i, m in enumerate(MECHANISMS)}
    libs = {lib: i for i, lib in enumerate(LIBRARIES)}
    rows.sort(
        key=lambda r: (
            order[r["mechanism"]],
            r["k"],
            r["epsilon"],
            libs[r["library"]],
            r["variant"],
        )
    )
    report = "\n\n".join(
        [
            header,
            "## Results",
            render_table(rows),
            LEGEND,
            "## Against the faster anchor",
            render_summary(rows),
            SUMMARY_LEGEND,
        ]
    )
    print(report, flush=True)
    if args.output:
        with open(args.output, "w") as f:
            f.write(report + "\n")
    return 0


def _run_repeats(args, lib, mech, variant, k, eps, path, opts, env):
    runs = []
    for rep in range(args.repeats):
        cell = {
            "library": lib,
            "mechanism": mech,
            "variant": variant,
            "k": k,
            "epsilon": eps,
            "seed": 1000 + rep,
            "data_path": path,
            "opts": opts,
            "cells_log": args.cells_log and os.path.abspath(args.cells_log),
        }
        r = spawn_cell(cell, args.max_cell_seconds, env)
        runs.append(r)
        if r.get("status") != "ok":
            break  # don't repeat a timed-out/failed cell
    agg = aggregate_repeats(runs)
    row = {
        "library": lib,
        "mechanism": mech,
        "variant": variant,
        "k": k,
        "epsilon": eps,
        "result": agg,
        "runs": runs,
    }
    msg = (
        f"privatize {agg['privatize_s']:.2f}s, peak {agg['peak_mb']:.0f} MB"
        if agg["status"] == "ok"
        else agg["status"]
    )
    print(f"  done {_label(row):28s} {mech} k={k} eps={eps:g}: {msg}", file=sys.stderr, flush=True)
    return row


def _variant_selected(args, lib, variant) -> bool:
    """--anchor-variants: keep an anchor variant named as VARIANT or LIBRARY:VARIANT."""
    if not args.anchor_variants or lib not in ANCHOR_LIBRARIES:
        return True
    return variant in args.anchor_variants or f"{lib}:{variant}" in args.anchor_variants


def main(argv=None):
    args = parse_args(argv)
    if args.cell is not None:
        cell = json.loads(args.cell)
        res = run_cell(cell)
        print(RESULT_PREFIX + json.dumps(res), flush=True)
        # Each finished cell also goes to --cells-log (default: cells.jsonl
        # beside the data), so that a long run can be read, or rendered with
        # --from-cells, before it ends.
        log = cell.get("cells_log") or os.path.join(
            os.path.dirname(cell["data_path"]), "cells.jsonl"
        )
        with open(log, "a") as f:
            f.write(json.dumps({"cell": cell, "result": res}) + "\n")
        return 0

    info = machine_info()
    header = render_machine(info, args, args.n)
    print(header, flush=True)
    if args.from_cells:
        return _render_from_cells(args, header)

    unavailable = {}
    for lib in dict.fromkeys(args.libraries):
        reason = library_available(lib)
        if reason:
            unavailable[lib] = reason
            print(f"\n[skip] {lib}: not importable ({reason})", flush=True)

    env = child_env(args.threads)
    rows = []
    opts = {
        "chunk_size": args.chunk_size,
        "sparse_output": args.sparse_output,
        "packed_output": args.packed_output,
        "ibu_iter": args.ibu_iter,
        "ibu_tol": args.ibu_tol,
        "anchor_cap": args.anchor_cap,
        "anchor_subsample": args.anchor_subsample,
        "anchor_estimators": args.anchor_estimators,
        "warmup": args.warmup,
    }
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
                        for variant in VARIANTS[lib].get(mech, ()):
                            if not _variant_selected(args, lib, variant):
                                continue
                            rows.append(
                                _run_repeats(args, lib, mech, variant, k, eps, path, opts, env)
                            )

    table = render_table(rows)
    summary = render_summary(rows)
    legend = LEGEND
    report = "\n\n".join(
        [
            header,
            "## Results",
            table,
            legend,
            "## Against the faster anchor",
            summary,
            SUMMARY_LEGEND,
        ]
    )
    if unavailable:
        report += "\n\nSkipped (not importable): " + ", ".join(
            f"{k} ({v})" for k, v in unavailable.items()
        )
    print("\n## Results\n\n" + table + "\n\n" + legend, flush=True)
    print("\n## Against the faster anchor\n\n" + summary + "\n\n" + SUMMARY_LEGEND, flush=True)
    if args.output:
        with open(args.output, "w") as f:
            f.write(report + "\n")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": info, "args": vars(args), "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
