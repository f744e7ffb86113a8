#!/usr/bin/env python
"""Pairwise marginals of a real table: marginal release against the alternatives.

On the flights table of ``sklearn_uldp.datasets.load_flights`` (328,521
departures; origin, carrier, season, departure period, haul: 10 pairs of
columns), side by side in one run, for each budget and repeat (fresh noise
each repeat, the methods in turn):

``independence``
    The product of the *exact* one-way marginals (no noise: the error of
    ignoring the dependence between columns).
``full joint``
    Every user reports the joint value of the 5 columns (3,456 cells;
    ``JointEncoder``-style) with OUE, estimated by EM (the package's default
    estimate, and the maximum-likelihood estimate); the pairs are sums of it.
``split by pair``
    The users split at random into 10 groups, one per pair; each group
    reports its pair's joint value with k-RR or OUE, whichever has the
    smaller variance, estimated by EM (both estimates, as above).
``marginals``
    ``MarginalPrivatizer`` (the oracle of least variance per pair) and
    ``MarginalEstimator``: without consistency nor interaction shrinkage
    (each pair's EM estimate alone), with consistency, and the default
    (consistency and interaction shrinkage); and the synthetic table of the
    default's ``synthesize`` (as many rows as the table).
``utility-optimized``
    ``MarginalPrivatizer(sensitive=data.sensitive)`` against the LDP one,
    on the non-sensitive cells (the sum over a pair's non-sensitive cells of
    |p_hat - p| / 2, mean over the pairs).

The numbers reported: mean total variation of the ten pairwise marginals
(mean and standard deviation over the repeats), and the consistency step's
weighted squared distance to the true marginals before and after (the norm
in which it never increases; see ``docs/marginals.md``).

Usage::

    python benchmarks/bench_marginals.py --repeats 5 --json benchmarks/marginals.json
    python benchmarks/bench_marginals.py --quick
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import time
import warnings

import numpy as np

from sklearn_uldp import RAPPOR, EMEstimator, RandomizedResponse
from sklearn_uldp.datasets import load_flights
from sklearn_uldp.exceptions import UninformativeEstimateWarning
from sklearn_uldp.marginals import MarginalEstimator, MarginalPrivatizer
from sklearn_uldp.marginals._consistency import weighted_distance


def _cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class _Timer:
    def __enter__(self):
        self.wall, self.cpu = time.perf_counter(), _cpu()
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self.wall
        self.cpu = _cpu() - self.cpu


def _pairs(columns):
    return list(itertools.combinations(columns, 2))


def _true_pairs(codes, sizes, columns):
    out = {}
    for a, b in _pairs(range(len(columns))):
        flat = codes[:, a] * sizes[b] + codes[:, b]
        out[(columns[a], columns[b])] = np.bincount(flat, minlength=sizes[a] * sizes[b]) / len(
            codes
        )
    return out


def _tv(estimates, truth):
    return float(np.mean([0.5 * np.abs(estimates[p] - truth[p]).sum() for p in truth]))


def _joint_pairs(joint, sizes, columns):
    out = {}
    for a, b in _pairs(range(len(columns))):
        rest = tuple(i for i in range(len(columns)) if i not in (a, b))
        out[(columns[a], columns[b])] = joint.reshape(sizes).sum(axis=rest).ravel()
    return out


def _oracle(k, eps, seed):
    """k-RR or OUE over k cells, whichever has the smaller variance."""
    rr = RandomizedResponse(eps, categories=np.arange(k), random_state=seed).fit()
    oue = RAPPOR(eps, theta=0.5, categories=np.arange(k), random_state=seed, packed_output=True)
    oue.fit()
    u = np.full(k, 1.0 / k)
    var = [m.channel_.estimator_variance(u, 1).sum() for m in (rr, oue)]
    return rr if var[0] <= var[1] else oue


def full_joint(codes, sizes, columns, eps, seed):
    k = int(np.prod(sizes))
    flat = np.ravel_multi_index(codes.T, sizes)
    mech = RAPPOR(eps, theta=0.5, categories=np.arange(k), random_state=seed, packed_output=True)
    reports = mech.fit_transform(flat.reshape(-1, 1))
    default = EMEstimator().fit(reports).distribution_
    mle = EMEstimator(shrinkage=None).fit(reports).distribution_
    return _joint_pairs(default, sizes, columns), _joint_pairs(mle, sizes, columns)


def split_by_pair(codes, sizes, columns, eps, seed):
    rng = np.random.default_rng(seed)
    pairs = _pairs(range(len(columns)))
    groups = np.array_split(rng.permutation(len(codes)), len(pairs))
    default, mle = {}, {}
    for (a, b), rows in zip(pairs, groups, strict=True):
        k = sizes[a] * sizes[b]
        mech = _oracle(k, eps, int(rng.integers(2**31)))
        reports = mech.transform((codes[rows, a] * sizes[b] + codes[rows, b]).reshape(-1, 1))
        key = (columns[a], columns[b])
        default[key] = EMEstimator().fit(reports).distribution_
        mle[key] = EMEstimator(shrinkage=None).fit(reports).distribution_
    return default, mle


def marginals(data, eps, seed, sensitive=None):
    priv = MarginalPrivatizer(
        eps, categories=data.categories, sensitive=sensitive, random_state=seed
    )
    reports = priv.fit_transform(data.frame)
    plain = MarginalEstimator(consistency=False, interaction_shrinkage=False).fit(reports)
    consistent = MarginalEstimator(interaction_shrinkage=False).fit(reports)
    default = MarginalEstimator().fit(reports)
    return priv, plain, consistent, default


def _pair_estimates(est, columns):
    return {p: est.marginal(list(p)).to_numpy() for p in _pairs(columns)}


def _non_sensitive_tv(estimates, truth, masks):
    values = []
    for (a, b), t in truth.items():
        keep = np.outer(~masks[a], ~masks[b]).ravel()
        values.append(0.5 * np.abs(estimates[(a, b)] - t)[keep].sum())
    return float(np.mean(values))


def run(epsilons, repeats, n_rows=None):
    data = load_flights()
    if n_rows:
        data.frame = data.frame.sample(n_rows, random_state=0).reset_index(drop=True)
    columns = list(data.categories)
    sizes = [len(data.categories[c]) for c in columns]
    codes = np.column_stack([data.frame[c].cat.codes.to_numpy() for c in columns]).astype(np.intp)
    truth = _true_pairs(codes, sizes, columns)
    ones = [np.bincount(codes[:, j], minlength=sizes[j]) / len(codes) for j in range(len(columns))]
    independence = {
        (columns[a], columns[b]): np.outer(ones[a], ones[b]).ravel()
        for a, b in _pairs(range(len(columns)))
    }
    masks = {
        c: np.isin(data.categories[c], data.sensitive.get(c, data.categories[c])) for c in columns
    }
    rows = []
    for eps in epsilons:
        for rep in range(repeats):
            seed = 1000 * rep + int(10 * eps)
            record = {"epsilon": eps, "repeat": rep, "independence": _tv(independence, truth)}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UninformativeEstimateWarning)
                with _Timer() as t:
                    priv, plain, consistent, default = marginals(data, eps, seed)
                    ours = _pair_estimates(default, columns)
                record["time marginals"] = (t.wall, t.cpu)
                record["marginals (no consistency)"] = _tv(_pair_estimates(plain, columns), truth)
                record["marginals (consistency)"] = _tv(_pair_estimates(consistent, columns), truth)
                record["marginals"] = _tv(ours, truth)
                res_plain, res_cons = plain._result(), consistent._result()
                measured = [consistent.channel_.marginals[j] for j in res_cons["measured"]]
                true_tables = [
                    truth[m].reshape([len(data.categories[c]) for c in m]) for m in measured
                ]
                record["W before"] = weighted_distance(
                    res_plain["tables"], true_tables, res_cons["weights"]
                )
                record["W after"] = weighted_distance(
                    res_cons["tables"], true_tables, res_cons["weights"]
                )
                with _Timer() as t:
                    synthetic = default.synthesize(len(data.frame), random_state=seed)
                record["time synthesize"] = (t.wall, t.cpu)
                syn_codes = np.column_stack(
                    [synthetic[c].cat.codes.to_numpy() for c in columns]
                ).astype(np.intp)
                record["synthetic"] = _tv(_true_pairs(syn_codes, sizes, columns), truth)
                record["oracles"] = sorted(set(priv.oracles_))
                with _Timer() as t:
                    split_default, split_mle = split_by_pair(codes, sizes, columns, eps, seed)
                record["time split"] = (t.wall, t.cpu)
                record["split by pair (EM default)"] = _tv(split_default, truth)
                record["split by pair (MLE)"] = _tv(split_mle, truth)
                with _Timer() as t:
                    joint_default, joint_mle = full_joint(codes, sizes, columns, eps, seed)
                record["time joint"] = (t.wall, t.cpu)
                record["full joint (EM default)"] = _tv(joint_default, truth)
                record["full joint (MLE)"] = _tv(joint_mle, truth)
                _, _, _, uldp = marginals(data, eps, seed, sensitive=data.sensitive)
                record["utility-optimized: non-sensitive cells"] = _non_sensitive_tv(
                    _pair_estimates(uldp, columns), truth, masks
                )
                record["LDP: non-sensitive cells"] = _non_sensitive_tv(ours, truth, masks)
                record["utility-optimized"] = _tv(_pair_estimates(uldp, columns), truth)
            print(json.dumps({k: v for k, v in record.items()}), flush=True)
            rows.append(record)
    return rows


METHODS = [
    "independence",
    "full joint (EM default)",
    "full joint (MLE)",
    "split by pair (EM default)",
    "split by pair (MLE)",
    "marginals (no consistency)",
    "marginals (consistency)",
    "marginals",
    "synthetic",
    "utility-optimized",
    "LDP: non-sensitive cells",
    "utility-optimized: non-sensitive cells",
]


def report(rows):
    epsilons = sorted({r["epsilon"] for r in rows})
    lines = ["| method | " + " | ".join(f"ε = {e:g}" for e in epsilons) + " |"]
    lines.append("|---|" + "---|" * len(epsilons))
    for m in METHODS:
        cells = []
        for e in epsilons:
            v = np.array([r[m] for r in rows if r["epsilon"] == e])
            cells.append(f"{v.mean():.4f} ± {v.std(ddof=1) if len(v) > 1 else 0:.4f}")
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("| time (wall s, CPU s) | " + " | ".join(f"ε = {e:g}" for e in epsilons) + " |")
    lines.append("|---|" + "---|" * len(epsilons))
    for key in ("time marginals", "time synthesize", "time split", "time joint"):
        cells = []
        for e in epsilons:
            v = np.array([r[key] for r in rows if r["epsilon"] == e])
            cells.append(f"{v[:, 0].mean():.1f} ({v[:, 1].mean():.1f})")
        lines.append(f"| {key[5:]} | " + " | ".join(cells) + " |")
    lines.append("")
    checks = []
    for e in epsilons:
        sub = [r for r in rows if r["epsilon"] == e]

        def mean(key, sub=sub):
            return float(np.mean([r[key] for r in sub]))

        best_split = min(mean("split by pair (EM default)"), mean("split by pair (MLE)"))
        best_joint = min(mean("full joint (EM default)"), mean("full joint (MLE)"))
        checks += [
            (f"ε={e:g}: marginals below independence", mean("marginals") < mean("independence")),
            (f"ε={e:g}: marginals below the full joint", mean("marginals") < best_joint),
            (f"ε={e:g}: marginals no worse than split by pair", mean("marginals") <= best_split),
            (
                f"ε={e:g}: consistency never farther in its norm (every repeat)",
                all(r["W after"] <= r["W before"] * (1 + 1e-9) for r in sub),
            ),
            (
                f"ε={e:g}: consistency no worse in TV (every repeat)",
                all(r["marginals (consistency)"] <= r["marginals (no consistency)"] for r in sub),
            ),
            (
                f"ε={e:g}: synthetic within the estimate's own + 0.02 (every repeat)",
                all(r["synthetic"] <= r["marginals"] + 0.02 for r in sub),
            ),
            (
                f"ε={e:g}: utility-optimized below LDP on non-sensitive cells",
                mean("utility-optimized: non-sensitive cells") < mean("LDP: non-sensitive cells"),
            ),
        ]
    lines += [f"- [{'x' if ok else ' '}] {name}" for name, ok in checks]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epsilons", type=float, nargs="+", default=[1.0, 2.0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="50,000 rows, 2 repeats")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    load = os.getloadavg()
    rows = run(args.epsilons, 2 if args.quick else args.repeats, 50_000 if args.quick else None)
    text = report(rows)
    print(f"\nload average at start: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    print(text)
    if args.json:
        with open(args.json, "x", encoding="utf-8") as f:  # never overwrite a result
            json.dump({"load": load, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
