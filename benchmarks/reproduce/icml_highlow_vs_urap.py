"""ICML paper, Sec. 5.1: high-low HR has uRAP's sample complexity with O(log k) bits.

Acharya, Bonawitz, Kairouz, Ramage & Sun (ICML 2020) propose, for
(A, eps)-high-low LDP, a Hadamard-response scheme "that has the same sample
complexity as (Murakami & Kawamoto, 2018) [uRAP] with a much smaller
communication budget" (Sec. 1.2, Theorem 3). The paper has no experiment for
it; this script measures the claim: k = 1000, eps = 1, |A| = s sensitive
values, users i.i.d. from the uniform distribution over the non-sensitive
values (the worst case of uRAP's l1 loss, Murakami & Kawamoto, Prop. 10) and
from the uniform distribution over all values, n from 1,000 to 100,000, the
TV error of the empirical estimate projected onto the simplex (mean over the
runs), the large-n expected TV of the unprojected empirical estimate
(:func:`sklearn_uldp.metrics.expected_total_variation`) and the bits per
report. "Same sample complexity" is read as: the TV ratio high-low HR / uRAP
stays bounded (near 1) across n and s. ``--quick``: n up to 10,000, one run.
"""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import cell, parse_args, print_trends, pyplot, save_figure, save_results, timer  # noqa: E402

from sklearn_uldp import (  # noqa: E402
    EmpiricalEstimator,
    HighLowHadamardResponse,
    UtilityOptimizedRAPPOR,
)
from sklearn_uldp.metrics import expected_total_variation, total_variation  # noqa: E402
from sklearn_uldp.utils import spawn_generators  # noqa: E402

K, EPSILON = 1000, 1.0


def main(argv=None):
    args = parse_args(__doc__, argv, default_runs=5)
    sizes = [1_000, 10_000] if args.quick else [1_000, 10_000, 100_000]
    s_values = [10, 100] if args.quick else [10, 50, 200]
    runs = 1 if args.quick else args.runs
    categories = np.arange(K)
    streams = iter(spawn_generators(args.seed, 4096))
    rows = []
    with timer("high-low HR vs uRAP") as t_all:
        for s in s_values:
            sensitive = categories[:s]
            dists = {
                "uniform over X_N": np.r_[np.zeros(s), np.full(K - s, 1 / (K - s))],
                "uniform": np.full(K, 1 / K),
            }
            mechs = {
                "high-low HR": HighLowHadamardResponse(
                    EPSILON, sensitive=sensitive, categories=categories
                ),
                "uRAP": UtilityOptimizedRAPPOR(EPSILON, sensitive=sensitive, categories=categories),
            }
            for dist, p in dists.items():
                for n in sizes:
                    row = {"s": s, "distribution": dist, "n": n, "runs": runs}
                    for name, mech in mechs.items():
                        tv = []
                        for _ in range(runs):
                            X = next(streams).choice(K, p=p, size=(n, 1))
                            mech.set_params(random_state=next(streams)).fit()
                            est = EmpiricalEstimator(projection="simplex").fit(mech.transform(X))
                            tv.append(total_variation(p, est.distribution_))
                        row[f"TV {name}"] = float(np.mean(tv))
                        row[f"expected TV {name}"] = expected_total_variation(mech.channel_, p, n)
                        row[f"bits {name}"] = mech.channel_.report_bits
                    row["ratio HL/uRAP"] = row["TV high-low HR"] / row["TV uRAP"]
                    rows.append(row)
    ratios = [r["ratio HL/uRAP"] for r in rows]
    trends = {
        "TV ratio high-low HR / uRAP (min, max)": (min(ratios), max(ratios)),
        "same sample complexity (ratio within [0.5, 2])": bool(
            0.5 <= min(ratios) and max(ratios) <= 2.0
        ),
        "bits per report: high-low HR, uRAP": (rows[0]["bits high-low HR"], rows[0]["bits uRAP"]),
    }
    print_trends("The paper's claim (Sec. 1.2 / 5.1):", trends)
    meta = {
        "paper": "Acharya et al. 2020, Sec. 5.1, Theorem 3 (no experiment)",
        "k": K,
        "epsilon": EPSILON,
        "trends": trends,
        "estimator": "empirical, projected onto the simplex",
        "seconds": t_all.seconds,
    }
    save_results(
        "icml_highlow_vs_urap",
        rows,
        args,
        columns=[
            "s",
            "distribution",
            "n",
            "TV high-low HR",
            "TV uRAP",
            "ratio HL/uRAP",
            "expected TV high-low HR",
            "expected TV uRAP",
            "bits high-low HR",
            "bits uRAP",
        ],
        meta=meta,
    )
    if args.plot:
        _plot(rows, s_values, sizes, args.out)
    return {"rows": rows, "trends": trends}


def _plot(rows, s_values, sizes, out):
    plt = pyplot()

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5), sharey=True)
    for ax, dist in zip(axes, ["uniform over X_N", "uniform"], strict=True):
        for i, s in enumerate(s_values):
            for name, style in (("high-low HR", "-o"), ("uRAP", "--s")):
                ys = [cell(rows, f"TV {name}", s=s, distribution=dist, n=n) for n in sizes]
                ax.loglog(sizes, ys, style, color=f"C{i}", label=f"{name}, s={s}")
        ax.set_title(dist)
        ax.set_xlabel("n")
    axes[0].set_ylabel("TV error")
    axes[0].legend(fontsize=7)
    fig.suptitle(f"k = {K}, eps = {EPSILON}: high-low HR vs uRAP")
    save_figure(fig, Path(out) / "icml_highlow_vs_urap.png", dpi=120)


if __name__ == "__main__":
    main()
