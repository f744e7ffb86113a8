"""EM at the ULDP paper's largest scale: k = 12,800, n = 240,000, epsilon = 6.

Murakami & Kawamoto (USENIX Security 2019, Sec. 6) report EM times of
3121 s (RR), 1258 s (uRR), 5225 s (RAPPOR) and 1073 s (uRAP) for the US
Census data at this size. This script times privatization and EM of the four
mechanisms on synthetic data of the same size (a Dirichlet(0.3)
distribution; s = 2,432 sensitive categories, as in the paper's census
setting), and reports how much memory the exact likelihood keeps.

Run::

    python benchmarks/bench_em_scale.py                    # all four
    python benchmarks/bench_em_scale.py --mechanisms rappor --repeats 3 --n-jobs 2
"""

import argparse
import resource
import statistics
import time

import numpy as np

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
        return UtilityOptimizedRR(epsilon, sensitive=sensitive, categories=cats,
                                  random_state=seed)
    if name == "rappor":
        return RAPPOR(epsilon, categories=cats, random_state=seed)
    return UtilityOptimizedRAPPOR(epsilon, sensitive=sensitive, categories=cats,
                                  random_state=seed)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, default=12_800)
    parser.add_argument("--n", type=int, default=240_000)
    parser.add_argument("--s", type=int, default=2_432)
    parser.add_argument("--epsilon", type=float, default=6.0)
    parser.add_argument("--mechanisms", nargs="+", default=list(PAPER_SECONDS),
                        choices=list(PAPER_SECONDS))
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--n-jobs", type=int, default=None,
                        help="threads per EM step (EMEstimator(n_jobs=...))")
    args = parser.parse_args(argv)

    rng = np.random.default_rng(args.seed)
    p = rng.dirichlet(np.full(args.k, 0.3))
    X = rng.choice(args.k, size=(args.n, 1), p=p)
    true = np.bincount(X.ravel(), minlength=args.k) / args.n

    print(f"k={args.k} n={args.n} s={args.s} epsilon={args.epsilon} "
          f"repeats={args.repeats} n_jobs={args.n_jobs}")
    print("| mechanism | privatize s | EM s (median) | iterations | EM store MB "
          "| TV | paper EM s |")
    print("|---|---|---|---|---|---|---|")
    for name in args.mechanisms:
        priv_times, em_times, iters = [], [], []
        for rep in range(args.repeats):
            mech = make_mechanism(name, args.k, args.s, args.epsilon, args.seed + rep)
            t0 = time.perf_counter()
            reports = mech.fit(X).transform(X)
            priv_times.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            em = EMEstimator(n_jobs=args.n_jobs).fit(reports)
            em_times.append(time.perf_counter() - t0)
            iters.append(em.n_iter_)
            del reports
        extra = em.statistics_.extra
        store_mb = extra.nbytes / 1e6 if extra is not None else 0.0
        print(f"| {name} | {statistics.median(priv_times):.2f} | "
              f"{statistics.median(em_times):.2f} | {iters} | {store_mb:.0f} | "
              f"{total_variation(em.distribution_, true):.4f} | "
              f"{PAPER_SECONDS[name]} |", flush=True)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {peak:.0f} MB")


if __name__ == "__main__":
    main()
