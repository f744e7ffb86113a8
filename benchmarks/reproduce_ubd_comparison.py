"""Reproduce the comparison of the utility-optimized block design paper.

arXiv 2509.24173 ("Fundamental Limit of Discrete Distribution Estimation
under Utility-Optimized Local Differential Privacy") compares six ULDP
mechanisms -- uRR, uRAP, uOUE, uHR, uSS and its uBD -- by the MSE of the
estimated distribution against epsilon, on the 2023 ACS PUMS person records
(six attributes crossed into k = 277 observed categories; the sensitive set
is the "and" combination of conditions, s = 35 categories holding 4.6 % of
the people, or the "or" combination, s = 253 categories holding 59 %). Its
public code (github.com/phy811/uBD, ``Save_MSE_ULDP.m``) draws m = 20
subsamples of R = 50 000 people, runs every mechanism on each at 50 budgets in
each of three ranges

    [0.1, eps_L], [eps_L, eps_H], [eps_H, 10],
    eps_L = ln sqrt((s-1)(s-2)/2),  eps_H = ln(k - s + sqrt((k-1)(k-2)/2)),

(the ranges where the optimal design uses one subset size h > 1, a mixture
of sizes, and h = 1, i.e. uRR), and reports ``mean((p_hat - p)^2)`` over the
k categories, each decoder's estimate clipped at 0 and renormalized.

This script does the same on *generated* data of the same shape (k = 277,
the same s and the same sensitive mass, a Zipf-like profile; the census file
is not redistributed), with the package's mechanisms: uRAP with the
reference's theta (basic RAPPOR's), uBD with ``subset_size="optimal"`` (the
paper's design and its projection decoder), uHR as
:class:`~sklearn_uldp.mechanisms._hadamard.UtilityOptimizedHadamardResponse`.
It prints, per budget, the exact MSE of each unbiased estimator (closed
form), the simulated MSE with the reference's clip-and-renormalize
post-processing, and the converse bound; then, per range, who wins in our
run beside the paper's reading.

Usage::

    python benchmarks/reproduce_ubd_comparison.py                   # both settings, quick
    python benchmarks/reproduce_ubd_comparison.py --setting and --points 50 --replicates 20
"""

import argparse
import math
import time

import numpy as np

from sklearn_uldp import (
    UtilityOptimizedBlockDesign,
    UtilityOptimizedOUE,
    UtilityOptimizedRAPPOR,
    UtilityOptimizedRR,
)
from sklearn_uldp.mechanisms._block_design import ubd_converse_bound
from sklearn_uldp.mechanisms._hadamard import UtilityOptimizedHadamardResponse
from sklearn_uldp.mechanisms._utility_optimized_subset import (
    UtilityOptimizedSubsetSelection,
)

K = 277
SETTINGS = {  # s and the share of people in X_S, as in the paper's data
    "and": (35, 0.0457),
    "or": (253, 0.5903),
}
MECHANISMS = ("uRR", "uRAP", "uOUE", "uHR", "uSS", "uBD")

#: The paper's reading, per range, as its analysis states it: uBD reaches
#: the converse bound in every range; below eps_L its design is one size
#: h > 1 (a block design, like the order-optimal unary and Hadamard
#: mechanisms at high privacy), between eps_L and eps_H a mixture of sizes,
#: above eps_H h = 1, where uBD is uRR.
PAPER_READING = {
    0: "uBD lowest; the unary/Hadamard baselines (uRAP, uOUE, uHR) next, uRR worst",
    1: "uBD lowest (a mixture of subset sizes), uRR and uSS close",
    2: "uBD = uRR lowest (h = 1); uSS equal when its h is 1",
}


def make_paper_like_data(setting, n_total=1_000_000, random_state=0):
    """A population of the paper's shape: (values, p, sensitive mask)."""
    s, mass = SETTINGS[setting]
    rng = np.random.default_rng(random_state)
    weights = 1.0 / np.arange(1, K + 1) ** 1.1
    rng.shuffle(weights)
    sensitive = np.zeros(K, dtype=bool)
    sensitive[:s] = True
    p = np.where(
        sensitive,
        weights / weights[sensitive].sum() * mass,
        weights / weights[~sensitive].sum() * (1 - mass),
    )
    values = rng.choice(K, p=p, size=n_total)
    p = np.bincount(values, minlength=K) / n_total  # the population's own p
    return values, p, sensitive


def epsilon_ranges(s, k=K):
    eps_l = math.log(math.sqrt((s - 1) * (s - 2) / 2))
    eps_h = math.log(k - s + math.sqrt((k - 1) * (k - 2) / 2))
    return [(0.1, eps_l), (eps_l, eps_h), (eps_h, 10.0)]


def mechanism(name, epsilon, sensitive):
    common = {"sensitive": sensitive, "categories": np.arange(K)}
    return {
        "uRR": lambda: UtilityOptimizedRR(epsilon, **common),
        "uRAP": lambda: UtilityOptimizedRAPPOR(epsilon, theta=None, **common),
        "uOUE": lambda: UtilityOptimizedOUE(epsilon, **common),
        "uHR": lambda: UtilityOptimizedHadamardResponse(epsilon, **common),
        "uSS": lambda: UtilityOptimizedSubsetSelection(epsilon, **common),
        "uBD": lambda: UtilityOptimizedBlockDesign(epsilon, subset_size="optimal", **common),
    }[name]()


def _clip_normalize(p_hat):
    p_hat = np.maximum(p_hat, 0.0)
    total = p_hat.sum()
    return p_hat / total if total > 0 else np.full(p_hat.size, 1.0 / p_hat.size)


def run(setting, points, replicates, size, random_state=0):
    values, p, sensitive = make_paper_like_data(setting, random_state=random_state)
    s = int(sensitive.sum())
    rng = np.random.default_rng(random_state + 1)
    subsamples = [rng.choice(values, size=size, replace=False) for _ in range(replicates)]
    rows = []
    for seg, (lo, hi) in enumerate(epsilon_ranges(s)):
        for eps in np.linspace(lo, hi, points):
            row = {
                "range": seg,
                "epsilon": float(eps),
                "bound": ubd_converse_bound(K, s, eps, n=size) / K,
            }
            for name in MECHANISMS:
                mech = mechanism(name, eps, sensitive).fit()
                channel = mech.channel_
                row[f"{name} exact"] = float(channel.estimator_variance(p, size).sum()) / K
                if replicates:
                    errs = []
                    for r, sub in enumerate(subsamples):
                        mech.set_params(random_state=1000 * r + seg)
                        reports = mech.fit().transform(sub[:, None])
                        stats = channel.statistics(channel.encode_reports(reports))
                        p_hat = _clip_normalize(channel.unbiased_estimate(stats))
                        errs.append(np.mean((p_hat - p) ** 2))
                    row[f"{name} sim"] = float(np.mean(errs))
            rows.append(row)
    return rows, s


def _ordering(values, names, rtol=1e-6):
    """'a < b = c < ...' from values (ties within rtol shown as '=')."""
    order = np.argsort(values, kind="stable")
    text = names[order[0]]
    for prev, cur in zip(order[:-1], order[1:], strict=True):
        same = values[cur] <= values[prev] * (1 + rtol)
        text += (" = " if same else " < ") + names[cur]
    return text


def _table(rows, kind):
    print(f"{'eps':>6} " + " ".join(f"{m:>10}" for m in MECHANISMS) + f" {'bound':>10}")
    for row in rows:
        print(
            f"{row['epsilon']:6.2f} "
            + " ".join(f"{row[f'{m} {kind}']:10.3e}" for m in MECHANISMS)
            + f" {row['bound']:10.3e}"
        )


def report(setting, rows, s, replicates):
    print(
        f"\n=== setting {setting!r}: k = {K}, s = {s} "
        f"(ranges: {', '.join(f'[{a:.2f}, {b:.2f}]' for a, b in epsilon_ranges(s))})"
    )
    print(
        "Exact MSE per category of each unbiased estimator (closed form) and "
        "the converse bound (worst case over distributions)"
    )
    _table(rows, "exact")
    if replicates:
        print(
            f"\nSimulated MSE per category, {replicates} subsample(s), estimates "
            "clipped at 0 and renormalized as in the reference code"
        )
        _table(rows, "sim")
    print("\nwho wins where (exact MSE summed over the range)")
    for seg in range(3):
        seg_rows = [r for r in rows if r["range"] == seg]
        exact = np.array([[r[f"{m} exact"] for m in MECHANISMS] for r in seg_rows])
        gap = float(
            np.max(exact[:, MECHANISMS.index("uBD")] / np.array([r["bound"] for r in seg_rows]))
        )
        print(
            f"  range {seg}: ours  : {_ordering(exact.sum(axis=0), MECHANISMS)} "
            f"(uBD / converse bound <= {gap:.4f})"
        )
        print(f"           paper : {PAPER_READING[seg]}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--setting", choices=[*SETTINGS, "both"], default="both")
    parser.add_argument("--points", type=int, default=6, help="budgets per range (the paper: 50)")
    parser.add_argument(
        "--replicates",
        type=int,
        default=3,
        help="subsamples simulated per budget (the paper: 20; 0: exact only)",
    )
    parser.add_argument(
        "--size", type=int, default=50_000, help="users per subsample (the paper: 50 000)"
    )
    args = parser.parse_args(argv)
    start = time.perf_counter()
    for setting in SETTINGS if args.setting == "both" else [args.setting]:
        rows, s = run(setting, args.points, args.replicates, args.size)
        report(setting, rows, s, args.replicates)
    print(f"\n({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
