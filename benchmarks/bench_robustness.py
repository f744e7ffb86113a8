#!/usr/bin/env python
"""Poisoning attacks and their recovery, per frequency oracle, LDP against ULDP.

Cao, Jia & Gong's setting (USENIX Security 2021): n genuine users hold values
of a domain of k items drawn from a Zipf law (exponent 1.1, item 0 the most
frequent), an attacker adds ``share * n`` fake users who promote three rare
targets (the last three items). For every mechanism and attack
(:func:`sklearn_uldp.robustness.poison`: ``"mga"``, ``"random input"``,
``"random report"``) the script prints

* ``gain``: the targets' summed frequency, poisoned estimate minus clean
  estimate (both the projected unbiased estimate of the same mechanism);
* ``gain rec``: the same after :class:`~sklearn_uldp.robustness.RobustFrequencyEstimator`;
* ``removed``: ``1 - gain rec / gain`` (the share of the gain the recovery removes);
* ``TV oth``: the total variation to the truth over the other items
  (restricted, not renormalized), recovered / clean (the acceptance bound is 1.5);
* ``found``: whether the detected targets are exactly the three targets
  (``-`` none found), and the estimated number of fake users;
* ``clean FP``: targets detected on the clean reports (false alarms).

Utility-optimized mechanisms are run twice: with the targets sensitive
(``S`` = the rare half of the domain) and with the targets non-sensitive
(``S`` = the frequent half), where the fake users' best reports are the clear
(invertible) reports of the targets, which no test can tell from genuine
holders' reports.

Medians over ``--repeats`` runs (seeds 0, 1, ...). Example::

    python benchmarks/bench_robustness.py --n 100000 --repeats 3 --output /tmp/robustness.md
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

ATTACKS = ("mga", "random input", "random report")


def _mechanisms(k, eps, names):
    from sklearn_uldp import (
        RAPPOR,
        HadamardResponse,
        OptimizedLocalHashing,
        RandomizedResponse,
        SubsetSelection,
        UtilityOptimizedBlockDesign,
        UtilityOptimizedHadamardResponse,
        UtilityOptimizedOUE,
        UtilityOptimizedRAPPOR,
        UtilityOptimizedRR,
        UtilityOptimizedSubsetSelection,
    )
    from sklearn_uldp.mechanisms import (
        UtilityOptimizedBlockedHadamardResponse,
        UtilityOptimizedLocalHashing,
        UtilityOptimizedUnaryEncoding,
    )

    cats = list(range(k))
    rare, frequent = cats[k // 2 :], cats[: k // 2]
    plain = {
        "OUE": lambda: RAPPOR(eps, theta=0.5, categories=cats),
        "RAPPOR": lambda: RAPPOR(eps, categories=cats),
        "k-RR": lambda: RandomizedResponse(eps, categories=cats),
        "OLH": lambda: OptimizedLocalHashing(eps, categories=cats),
        "SS": lambda: SubsetSelection(eps, categories=cats),
        "HR": lambda: HadamardResponse(eps, categories=cats),
    }
    uldp = {
        "uRR": lambda S: UtilityOptimizedRR(eps, sensitive=S, categories=cats),
        "uRAP": lambda S: UtilityOptimizedRAPPOR(eps, sensitive=S, categories=cats),
        "uOUE": lambda S: UtilityOptimizedOUE(eps, sensitive=S, categories=cats),
        "uUE": lambda S: UtilityOptimizedUnaryEncoding(eps, sensitive=S, categories=cats),
        "uSS": lambda S: UtilityOptimizedSubsetSelection(eps, sensitive=S, categories=cats),
        "uBD": lambda S: UtilityOptimizedBlockDesign(eps, sensitive=S, categories=cats),
        "uHR": lambda S: UtilityOptimizedHadamardResponse(eps, sensitive=S, categories=cats),
        "uHR-blocked": lambda S: UtilityOptimizedBlockedHadamardResponse(
            eps, sensitive=S, categories=cats
        ),
        "uLH": lambda S: UtilityOptimizedLocalHashing(eps, sensitive=S, categories=cats),
    }
    out = []
    for name, make in plain.items():
        if names is None or name in names:
            out.append((name, "LDP", make))
    for name, make in uldp.items():
        if names is None or name in names:
            out.append((name, "T sensitive", lambda make=make: make(rare)))
            out.append((name, "T clear", lambda make=make: make(frequent)))
    return out


def run_cell(make, attack, n, k, share, seed):
    from sklearn_uldp.robustness import RobustFrequencyEstimator, poison

    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, k + 1) ** 1.1
    p /= p.sum()
    X = rng.choice(k, size=(n, 1), p=p)
    truth = np.bincount(X.ravel(), minlength=k) / n
    targets = np.arange(k - 3, k)
    others = np.setdiff1d(np.arange(k), targets)
    mech = make().set_params(random_state=seed + 1)
    reports = mech.fit_transform(X)
    poisoned = poison(
        reports, int(share * n), targets=targets, attack=attack, random_state=seed + 2
    )
    clean_fit = RobustFrequencyEstimator().fit(reports)
    clean = clean_fit.poisoned_distribution_
    t0 = time.process_time()
    est = RobustFrequencyEstimator().fit(poisoned)
    est.distribution_  # noqa: B018 (the estimate is computed at first access)
    seconds = time.process_time() - t0
    gain = est.poisoned_distribution_[targets].sum() - clean[targets].sum()
    gain_rec = est.distribution_[targets].sum() - clean[targets].sum()

    def tv_others(q):
        return 0.5 * np.abs(q[others] - truth[others]).sum()

    found = est.suspected_targets_
    return {
        "gain": gain,
        "gain_rec": gain_rec,
        "tv_ratio": tv_others(est.distribution_) / tv_others(clean),
        "exact": found.size == 3 and set(found.tolist()) == set(targets.tolist()),
        "none": found.size == 0,
        "n_fake": est.n_fake_estimate_,
        "clean_fp": clean_fit.suspected_targets_.size,
        "seconds": seconds,
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--k", type=int, default=64)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--share", type=float, default=0.05, help="fake users / genuine users")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--mechanisms", nargs="+", default=None)
    parser.add_argument("--attacks", nargs="+", default=list(ATTACKS), choices=ATTACKS)
    parser.add_argument("--output", default=None, help="write the markdown table here too")
    args = parser.parse_args(argv)

    header = (
        "| mechanism | targets | attack | gain | gain rec | removed | TV oth rec/clean "
        "| found | n_fake est | clean FP | CPU s |\n|---|---|---|---|---|---|---|---|---|---|---|"
    )
    lines = [
        f"n = {args.n}, k = {args.k}, eps = {args.epsilon}, fake users = "
        f"{int(args.share * args.n)}, three rare targets, medians of {args.repeats} runs; "
        f"load {os.getloadavg()[0]:.2f}",
        "",
        header,
    ]
    print("\n".join(lines), flush=True)
    for name, kind, make in _mechanisms(args.k, args.epsilon, args.mechanisms):
        for attack in args.attacks:
            try:
                cells = [
                    run_cell(make, attack, args.n, args.k, args.share, seed)
                    for seed in range(args.repeats)
                ]
            except Exception as exc:  # a family poison does not support
                line = f"| {name} | {kind} | {attack} | {type(exc).__name__}: {exc} |"
                lines.append(line)
                print(line, flush=True)
                continue

            def med(key, cells=cells):
                return float(np.median([c[key] for c in cells]))

            gain, gain_rec = med("gain"), med("gain_rec")
            removed = np.median(
                [1 - c["gain_rec"] / c["gain"] for c in cells if c["gain"] > 0] or [np.nan]
            )
            exact = sum(c["exact"] for c in cells)
            none = sum(c["none"] for c in cells)
            found = f"{exact}/{len(cells)} exact" + (f", {none} none" if none else "")
            line = (
                f"| {name} | {kind} | {attack} | {gain:.4f} | {gain_rec:.4f} | {removed:.0%} "
                f"| {med('tv_ratio'):.2f} | {found} | {med('n_fake'):.0f} "
                f"| {sum(c['clean_fp'] for c in cells)} | {med('seconds'):.1f} |"
            )
            lines.append(line)
            print(line, flush=True)
    lines.append("")
    lines.append(f"load after: {os.getloadavg()[0]:.2f}")
    if args.output:
        with open(args.output, "x", encoding="utf-8") as fh:
            fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
