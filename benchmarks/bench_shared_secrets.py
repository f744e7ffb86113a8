"""Cost of refusing user secrets shared across Dask partitions.

Privatizing a memoized column on Dask with ``user_secrets`` now
fingerprints every secret (keyed PRF, 128 bits) and deduplicates the
fingerprints on the workers before any partition is privatized. This script
times the whole privatization (computed, after a warm-up that compiles the
kernels, as a long-lived worker has) with the check and without it
(``repeated_secrets`` replaced by a constant 0), side by side in fresh
processes, alternately, and prints the ratio.

    python benchmarks/bench_shared_secrets.py --n 1000000 --partitions 8 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time


def _run(variant, n, partitions):
    import dask
    import dask.dataframe as dd
    import numpy as np
    import pandas as pd

    from sklearn_uldp.compose import DataFramePrivatizer
    from sklearn_uldp.longitudinal import LongitudinalGRR
    from sklearn_uldp.parallel import _secrets
    from sklearn_uldp.utils import generate_user_secrets

    if variant == "without":  # the former path: no cross-partition check
        _secrets.repeated_secrets = lambda secrets: 0
    rng = np.random.default_rng(0)
    cats = [f"c{i}" for i in range(20)]
    frame = pd.DataFrame(
        {
            "app": rng.choice(cats, size=n),
            "secret": pd.Series(list(generate_user_secrets(n, random_state=1)), dtype=object),
        }
    )
    priv = DataFramePrivatizer(
        {"app": LongitudinalGRR(2.0, 1.0, categories=cats)}, random_state=0
    ).fit(frame[["app"]].head(1000))
    with dask.config.set({"dataframe.convert-string": False, "scheduler": "threads"}):
        # A worker compiles the kernels once: warm them up on a few rows.
        few = dd.from_pandas(frame.head(2000), npartitions=2)
        priv.transform(few[["app"]], user_secrets=few["secret"]).compute()
        ddf = dd.from_pandas(frame, npartitions=partitions).persist()
        start = time.perf_counter()
        out = priv.transform(ddf[["app"]], user_secrets=ddf["secret"]).compute()
        seconds = time.perf_counter() - start
    assert len(out) == n
    return seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--variant", choices=["with", "without"])
    args = parser.parse_args()
    if args.variant:
        print(json.dumps(_run(args.variant, args.n, args.partitions)))
        return
    times = {"with": [], "without": []}
    for _ in range(args.repeats):
        for variant in ("without", "with"):  # alternately, fresh processes
            cmd = [sys.executable, __file__, "--variant", variant, "--n", str(args.n)]
            cmd += ["--partitions", str(args.partitions)]
            out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
            times[variant].append(float(out.strip().splitlines()[-1]))
    best = {k: min(v) for k, v in times.items()}
    print(f"n = {args.n:,}, {args.partitions} partitions, best of {args.repeats}:")
    for variant, seconds in best.items():
        print(f"  {variant:7s} the check: {seconds:6.2f} s  (all: {times[variant]})")
    print(f"  ratio with/without: {best['with'] / best['without']:.2f}")


if __name__ == "__main__":
    main()
