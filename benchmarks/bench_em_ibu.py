"""Exact EM on large bit-vector uploads, side by side with multi-freq-ldpy.

Times, in one run and on the same reports, the exact maximum-likelihood EM
of sklearn-uldp (``EMEstimator``, SQUAREM with zeroing steps, distinct-row
compression, compiled products on all cores) and multi-freq-ldpy's
iterative Bayesian update (IBU) and matrix-inversion (MI) aggregators for
optimized unary encoding (OUE), plus the package's own large EM cases:

* ``oue``: OUE, k = 1000, n = 10^6, epsilon = 1. multi-freq-ldpy's IBU
  works on the bit counts (each bit's marginal, not the likelihood of the
  reports), so it is cheaper per iteration and less accurate; EM uses every
  report. The estimates "emp" and "emp+thr" are compared with MI.
* ``urap``: uRAP, k = 52, epsilon = 1, n = 2 * 10^6, with 10, 26 and 52
  sensitive categories.
* ``urap-low``: uRAP with 200 sensitive values of 400, epsilon = 0.1.
* ``rappor``: RAPPOR, k = 12,800, n = 240,000, epsilon = 6 (the ULDP
  paper's largest scale, as ``bench_em_scale.py``).

Wall times include computing the statistics from the reports (``fit``);
CPU times add up every thread of the process (a measure that a shared
machine's load inflates less).
multi-freq-ldpy's aggregators get the reports as an int32 array: they add
the report vectors with Python's ``sum``, which overflows in uint8.

Run::

    python benchmarks/bench_em_ibu.py                 # everything (peak ~6 GB)
    python benchmarks/bench_em_ibu.py --cases oue --n-oue 200000
    # rappor, alternately with this code and an older checkout, 3 runs each
    python benchmarks/bench_em_ibu.py --cases rappor --baseline ../old --repeats 3
"""

import argparse
import os

import numpy as np
from _measure import compiled_warmup, timed

from sklearn_uldp import (
    RAPPOR,
    EMEstimator,
    EmpiricalEstimator,
    ThresholdEstimator,
    UtilityOptimizedRAPPOR,
)
from sklearn_uldp.mechanisms import _bit_rows
from sklearn_uldp.metrics import total_variation


def _timed(function):
    """``function()`` and its (wall, CPU) seconds (all threads)."""
    result, wall, cpu = timed(function)
    return result, (wall, cpu)


def _data(k, n, alpha, seed):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(k, alpha))
    X = rng.choice(k, size=(n, 1), p=p)
    return X, np.bincount(X.ravel(), minlength=k) / n


def _row(case, method, seconds, tv, note=""):
    wall, cpu = seconds
    print(f"| {case} | {method} | {wall:.2f} | {cpu:.2f} | {tv:.4f} | {note} |", flush=True)


def _exact_em():
    """``EMEstimator`` returning the exact maximum-likelihood estimate."""
    if "shrinkage" in EMEstimator().get_params():  # the default may be shrunk
        return EMEstimator(shrinkage=None)
    return EMEstimator()


def _em_note(em):
    info = em._fitted_result()[1]
    return (
        f"{em.n_iter_} iterations, {info['n_evaluations']} evaluations, "
        f"gap {em.duality_gap_:.1e} <= tol {em.tol_:.1e}: {em.converged_}"
    )


def bench_oue(n, seed):
    from multi_freq_ldpy.pure_frequency_oracles.UE import (
        UE_Aggregator_IBU,
        UE_Aggregator_MI,
    )

    k, eps = 1000, 1.0
    X, true = _data(k, n, 0.3, seed)
    mech = RAPPOR(eps, theta=0.5, categories=np.arange(k), random_state=seed)
    reports = mech.fit_transform(X)  # uint8 (n, k)
    case = f"OUE k={k} n={n} eps={eps}"
    with compiled_warmup():  # the compiled loops loaded (or compiled), untimed
        EMEstimator().fit(reports[:2000])
    em, seconds = _timed(lambda: _exact_em().fit(reports))  # noqa: F821 (called before `del reports`)
    _row(
        case,
        "sklearn-uldp EM (exact MLE)",
        seconds,
        total_variation(em.distribution_, true),
        _em_note(em),
    )
    em, seconds = _timed(lambda: EMEstimator().fit(reports))  # noqa: F821 (called before `del reports`)
    _row(
        case,
        "sklearn-uldp EMEstimator() (the default)",
        seconds,
        total_variation(em.distribution_, true),
        _em_note(em),
    )
    for name, est in [("emp", EmpiricalEstimator()), ("emp+thr", ThresholdEstimator())]:
        fitted, seconds = _timed(lambda est=est: est.fit(reports))  # noqa: F821 (called before `del reports`)
        _row(case, f"sklearn-uldp {name}", seconds, total_variation(fitted.distribution_, true))
    as_int = reports.astype(np.int32)
    del reports
    ibu, seconds = _timed(lambda: UE_Aggregator_IBU(as_int, k, eps, optimal=True))
    _row(
        case,
        "multi-freq-ldpy IBU",
        seconds,
        total_variation(ibu, true),
        "defaults: nb_iter=10000, tol=1e-12",
    )
    mi, seconds = _timed(lambda: UE_Aggregator_MI(as_int, eps, optimal=True))
    mi = np.clip(mi, 0, None)
    _row(case, "multi-freq-ldpy MI", seconds, total_variation(mi / mi.sum(), true))


def bench_urap(n, sensitive, seed, k=52, eps=1.0):
    X, true = _data(k, n, 1.0, seed)
    for s in sensitive:
        mech = UtilityOptimizedRAPPOR(
            eps, sensitive=np.arange(s), categories=np.arange(k), random_state=seed
        )
        reports = mech.fit_transform(X)
        em, seconds = _timed(lambda reports=reports: _exact_em().fit(reports))
        em.distribution_  # noqa: B018 - fitted already
        store = em.statistics_.extra
        distinct = store.distinct_rows()
        _row(
            f"uRAP k={k} s={s} n={n} eps={eps}",
            "sklearn-uldp EM (exact MLE)",
            seconds,
            total_variation(em.distribution_, true),
            f"{_em_note(em)}; {distinct.n_rows} distinct of {store.n_rows} protected rows",
        )


def bench_rappor(seed, k=12_800, n=240_000, eps=6.0, label=""):
    X, true = _data(k, n, 0.3, seed)
    mech = RAPPOR(eps, categories=np.arange(k), random_state=seed, sparse_output=True)
    reports = mech.fit_transform(X)
    # Compiled loops are loaded (or compiled) at their first call: not timed.
    with compiled_warmup():
        _exact_em().fit(reports[:1000])
    em, seconds = _timed(lambda: _exact_em().fit(reports))
    _row(
        f"RAPPOR k={k} n={n} eps={eps}",
        f"sklearn-uldp EM (exact MLE){label}",
        seconds,
        total_variation(em.distribution_, true),
        f"{_em_note(em)}; mean log-likelihood {em.log_likelihood_:.10f}",
    )


def bench_rappor_side_by_side(seed, baseline, repeats):
    """The ``rappor`` case, alternately with this code and the code at
    ``baseline`` (a source tree put first on ``PYTHONPATH``), each run in a
    fresh process, so that both see the same load."""
    import subprocess
    import sys

    for _ in range(repeats):
        for label, path in (("", None), (f" [{baseline}]", baseline)):
            env = dict(os.environ)
            if path is not None:
                env["PYTHONPATH"] = os.pathsep.join(
                    [path] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
                )
            subprocess.run(
                [
                    sys.executable,
                    os.path.abspath(__file__),
                    "--cases",
                    "rappor",
                    "--seed",
                    str(seed),
                    "--label",
                    label,
                    "--no-header",
                ],
                env=env,
                check=True,
            )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--cases",
        nargs="+",
        default=["oue", "urap", "urap-low", "rappor"],
        choices=["oue", "urap", "urap-low", "rappor"],
    )
    parser.add_argument("--n-oue", type=int, default=1_000_000)
    parser.add_argument("--n-urap", type=int, default=2_000_000)
    parser.add_argument("--n-urap-low", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--baseline",
        default=None,
        help="source tree of other code to time the rappor case with, "
        "side by side (alternate runs in fresh processes)",
    )
    parser.add_argument("--repeats", type=int, default=1, help="runs of each side with --baseline")
    parser.add_argument("--label", default="", help=argparse.SUPPRESS)
    parser.add_argument("--no-header", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if not args.no_header:
        print(
            f"cores: {os.cpu_count()}, load average: {os.getloadavg()[0]:.1f}, "
            f"products: {_bit_rows._KERNEL}"
        )
        print("| case | method | wall s | CPU s | TV | note |")
        print("|---|---|---|---|---|---|", flush=True)
    if "oue" in args.cases:
        bench_oue(args.n_oue, args.seed)
    if "urap" in args.cases:
        bench_urap(args.n_urap, [10, 26, 52], args.seed)
    if "urap-low" in args.cases:
        bench_urap(args.n_urap_low, [200], args.seed, k=400, eps=0.1)
    if "rappor" in args.cases:
        if args.baseline is None:
            bench_rappor(args.seed, label=args.label)
        else:
            bench_rappor_side_by_side(args.seed, args.baseline, args.repeats)


if __name__ == "__main__":
    main()
