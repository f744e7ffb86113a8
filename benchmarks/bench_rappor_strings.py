#!/usr/bin/env python
"""Bloom-filter RAPPOR decoding on google/rappor's documented simulation settings.

google/rappor's published demo (``gh-pages/examples/report.html`` and its
three ``dist.png`` plots) simulates 100,000 clients reporting 700,000 values
(7 each) of 50 distinct strings ``v1 .. v50`` drawn from an exponential, a
Gaussian or a uniform distribution (``tests/gen_counts.R``'s ``ComputePdf``),
with k = 16 bits, h = 2 hashes, m = 64 cohorts, p = 0.5, q = 0.75, f = 0.5.
This script draws the same simulation with sklearn-uldp's
:class:`~sklearn_uldp.heavy_hitters.BloomRAPPOR` (each client with a secret,
hence one cohort, reporting its 7 values in 7 rounds with memoized PRRs)
and decodes against
the 50 true strings plus ``--extra`` strings that nobody holds, with each
method of :class:`~sklearn_uldp.heavy_hitters.BloomRAPPORDecoder`
(Benjamini-Hochberg at ``--alpha``). It prints the strings detected among
the 50, the false discoveries, the total variation to the true
distribution, and google/rappor's figures read off its published plots.

Examples
--------
python benchmarks/bench_rappor_strings.py --repeats 5
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from scipy.stats import norm

#: google/rappor's published demo, read off gh-pages/examples/*_report/dist.png:
#: (strings detected among the 50, false discoveries).
GOOGLE = {"exp": (16, 1), "gauss": (37, 0), "unif": (49, 1)}


def pdf(distr, n):
    x = np.arange(1, n + 1)
    if distr == "exp":
        w = 5 / n * np.exp(-5 / n * x)
    elif distr == "gauss":
        half = n / 2
        w = norm.pdf(np.arange(-half + 1, half + 1), scale=n / 6)
    else:
        w = np.ones(n)
    return w / w.sum()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=100_000)
    parser.add_argument("--per-client", type=int, default=7)
    parser.add_argument("--values", type=int, default=50)
    parser.add_argument("--extra", type=int, default=50)
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--methods", nargs="+", default=["lasso", "nnls", "em"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    from sklearn_uldp.heavy_hitters import BloomRAPPOR, BloomRAPPORDecoder
    from sklearn_uldp.utils import generate_user_secrets

    names = np.asarray([f"v{i}" for i in range(1, args.values + 1)], dtype=object)
    candidates = [f"v{i}" for i in range(1, args.values + args.extra + 1)]
    rng = np.random.default_rng(args.seed)
    print(
        f"# {args.clients} clients x {args.per_client} values, {args.values} strings, "
        f"{len(candidates)} candidates, k=16 h=2 m=64 p=0.5 q=0.75 f=0.5, "
        f"BH alpha={args.alpha}, load {os.getloadavg()}"
    )
    print(
        "| distribution | method | detected of 50 | false discoveries | TV | time (s) "
        "| google/rappor (detected, false) |"
    )
    print("|---|---|---|---|---|---|---|")
    for distr in ("exp", "gauss", "unif"):
        p = pdf(distr, args.values)
        res = {m: [] for m in args.methods}
        for _ in range(args.repeats):
            n = args.clients * args.per_client
            X = names[rng.choice(args.values, p=p, size=n)]
            mech = BloomRAPPOR(
                n_bits=16,
                n_hashes=2,
                n_cohorts=64,
                p=0.5,
                q=0.75,
                f=0.5,
                random_state=int(rng.integers(2**31)),
            ).fit()
            # As google's simulation: each client keeps one cohort and reports
            # its values one after another (round t holds every client's t-th
            # value), its PRR memoized per value with its secret.
            secrets = generate_user_secrets(args.clients, random_state=int(rng.integers(2**31)))
            rounds = X.reshape(args.per_client, args.clients)
            reports = np.concatenate(
                [np.asarray(mech.transform(values, user_secrets=secrets)) for values in rounds]
            )
            shares = np.asarray([np.mean(X == v) for v in names])
            for method in args.methods:
                t = time.perf_counter()
                dec = BloomRAPPORDecoder(
                    candidates, method=method, alpha=args.alpha, mechanism=mech
                ).fit(reports)
                secs = time.perf_counter() - t
                det = set(dec.detected_.index)
                tp = len(det & set(names))
                fp = len(det - set(names))
                est = dec.estimates_["proportion"]
                true_p = np.zeros(len(candidates))
                true_p[: args.values] = shares
                tv = 0.5 * np.abs(est.to_numpy() - true_p).sum()
                res[method].append((tp, fp, tv, secs))
        for method in args.methods:
            tp, fp, tv, secs = np.mean(res[method], axis=0)
            g = GOOGLE[distr]
            print(
                f"| {distr} | {method} | {tp:.1f} | {fp:.1f} | {tv:.3f} | {secs:.1f} | "
                f"{g[0]}, {g[1]} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
