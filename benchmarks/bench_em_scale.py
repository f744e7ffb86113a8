"""EM at the ULDP paper's largest scale: k = 12,800, n = 240,000, epsilon = 6.

Murakami & Kawamoto (USENIX Security 2019, Sec. 6) report EM times of
3121 s (RR), 1258 s (uRR), 5225 s (RAPPOR) and 1073 s (uRAP) for the US
Census data at this size. This script times privatization and EM of the four
mechanisms on synthetic data of the same size (a Dirichlet(0.3)
distribution; s = 2,432 sensitive categories, as in the paper's census
setting), and reports how much memory the exact likelihood keeps.

Bit-vector reports are collected as sparse CSR matrices (``sparse_output=True``;
the dense 240,000 x 12,800 matrix would take 3 GB), and the time to reduce
them to sufficient statistics (``partial_fit``) is reported apart from EM
(the first access to ``distribution_``).

Run::

    python benchmarks/bench_em_scale.py                    # all four
    python benchmarks/bench_em_scale.py --mechanisms rappor --repeats 3 --n-jobs 2
    python benchmarks/bench_em_scale.py --mechanisms rappor --no-working-set
    python benchmarks/bench_em_scale.py --mechanisms rappor --exact   # the MLE only
"""

import argparse
import statistics
import time

import numpy as np
from _measure import peak_rss_mb

from sklearn_uldp import (
    RAPPOR,
    EMEstimator,
    RandomizedResponse,
    UtilityOptimizedRAPPOR,
    UtilityOptimizedRR,
)
from sklearn_uldp.metrics import total_variation

PAPER_SECONDS = {"rr": 3121, "urr": 1258, "rappor": 5225, "urap": 1073}


def make_mechanism(name, k, s, epsilon, seed):
    cats = np.arange(k)
    sensitive = cats[:s]
    if name == "rr":
        return RandomizedResponse(epsilon, categories=cats, random_state=seed)
    if name == "urr":
        return UtilityOptimizedRR(epsilon, sensitive=sensitive, categories=cats, random_state=seed)
    if name == "rappor":
        return RAPPOR(epsilon, categories=cats, random_state=seed, sparse_output=True)
    return UtilityOptimizedRAPPOR(
        epsilon, sensitive=sensitive, categories=cats, random_state=seed, sparse_output=True
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, default=12_800)
    parser.add_argument("--n", type=int, default=240_000)
    parser.add_argument("--s", type=int, default=2_432)
    parser.add_argument("--epsilon", type=float, default=6.0)
    parser.add_argument(
        "--mechanisms", nargs="+", default=list(PAPER_SECONDS), choices=list(PAPER_SECONDS)
    )
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--n-jobs", type=int, default=None, help="threads per EM step (EMEstimator(n_jobs=...))"
    )
    parser.add_argument(
        "--no-working-set",
        action="store_true",
        help="EM on all categories (EMEstimator(working_set=False))",
    )
    parser.add_argument(
        "--exact",
        action="store_true",
        help="the maximum-likelihood estimate, not shrunk (EMEstimator(shrinkage=None))",
    )
    args = parser.parse_args(argv)

    rng = np.random.default_rng(args.seed)
    p = rng.dirichlet(np.full(args.k, 0.3))
    X = rng.choice(args.k, size=(args.n, 1), p=p)
    true = np.bincount(X.ravel(), minlength=args.k) / args.n

    print(
        f"k={args.k} n={args.n} s={args.s} epsilon={args.epsilon} "
        f"repeats={args.repeats} n_jobs={args.n_jobs} "
        f"working_set={not args.no_working_set} exact={args.exact}"
    )
    print(
        "| mechanism | privatize s | statistics s | EM s | statistics + EM, CPU s "
        "| iterations | working sets | EM store MB | TV | paper EM s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in args.mechanisms:
        times = {"privatize": [], "statistics": [], "em": [], "cpu": []}
        iters = []
        for rep in range(args.repeats):
            mech = make_mechanism(name, args.k, args.s, args.epsilon, args.seed + rep)
            t0 = time.perf_counter()
            reports = mech.fit(X).transform(X)
            t1 = time.perf_counter()
            em = EMEstimator(
                n_jobs=args.n_jobs,
                working_set=not args.no_working_set,
                **({"shrinkage": None} if args.exact else {}),
            )
            cpu = time.process_time()  # all threads of the process
            em.partial_fit(reports)  # sufficient statistics only
            t2 = time.perf_counter()
            estimate = em.distribution_  # EM runs on first access
            t3 = time.perf_counter()
            cpu = time.process_time() - cpu
            for key, seconds in zip(times, (t1 - t0, t2 - t1, t3 - t2, cpu), strict=True):
                times[key].append(seconds)
            iters.append(em.n_iter_)
            del reports
        extra = em.statistics_.extra
        store_mb = extra.nbytes / 1e6 if extra is not None else 0.0
        sets = em.working_sets_
        median = {key: statistics.median(v) for key, v in times.items()}
        print(
            f"| {name} | {median['privatize']:.2f} | {median['statistics']:.2f} | "
            f"{median['em']:.2f} | {median['cpu']:.2f} | {iters} | {sets or '-'} | "
            f"{store_mb:.0f} | "
            f"{total_variation(estimate, true):.4f} | {PAPER_SECONDS[name]} |",
            flush=True,
        )
    peak = peak_rss_mb()
    print(f"peak RSS {peak:.0f} MB")


if __name__ == "__main__":
    main()
