"""ULDP paper, Figures 6 and 11: |X_S| vs TV and MSE at epsilon = 0.1 and ln|X|.

Murakami & Kawamoto, USENIX Security 2019, Sec. 6.2 and Appendix E.3: the
sensitive set X_S is drawn at random from X, its size going from 1 to |X|;
each point is the mean over random choices of X_S (the paper: one hundred
cases; ``--runs`` here, default 5, one realization of the reports per case);
``TV_sd`` and ``MSE_sd`` are the sample standard deviations over the cases
(over ``--runs`` realizations for RR and RAPPOR, which ignore X_S), ``runs``
their number. The
estimators are "emp" and "EM" (``EMEstimator(shrinkage=None)``, the exact
maximum-likelihood estimate started from emp+thr); the paper omits
"emp+thr" here as it is very close to "EM". RR and RAPPOR do not depend on
X_S (flat lines). Data: the stand-ins of ``uldp_fig5_fig10.py`` (location:
|X| = 625, n = 179,527; census: |X| = 400, n = 127,327).

The paper's statements: uRAP is best at epsilon = 0.1 and uRR at ln|X|; uRR
is close to no privacy at ln|X| while |X_S| < 100; uRAP is close to no
privacy while |X_S| < 20 (the paper notes |X|^(3/4) = 125 and 89 for its two
datasets), then its error rises quickly with |X_S|.

Usage::

    python benchmarks/reproduce/uldp_fig6_fig11.py            # full (about 25 min)
    python benchmarks/reproduce/uldp_fig6_fig11.py --quick    # seconds
"""

import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import cell, parse_args, pyplot, save_results, timer  # noqa: E402
from uldp_fig5_fig10 import (  # noqa: E402
    LOSS_COLUMNS,
    census_data,
    evaluate,
    label_loss_axes,
    location_data,
    loss_columns,
    plot_tv_and_mse,
    save_loss_figure,
)

from sklearn_uldp.metrics import l2_loss, total_variation  # noqa: E402

PAPER_CLAIMS = [
    "uRAP is best at epsilon = 0.1, uRR at epsilon = ln|X|",
    "uRR is close to no privacy at ln|X| while |X_S| < 100",
    "uRAP is close to no privacy at ln|X| while |X_S| < 20, then rises rapidly",
]


def sizes(k, quick):
    if quick:
        return [1, 10, 100]
    grid = [1, 3, 10, 30, 100, 300, k]
    return sorted(set(s for s in grid if s <= k))


def run(data, args, rows):
    k = len(data.categories)
    rng = np.random.default_rng(args.seed)
    np_tv = total_variation(data.distribution, data.empirical)
    np_l2 = l2_loss(data.distribution, data.empirical)
    for eps in (0.1, round(math.log(k), 4)):
        # RR and RAPPOR ignore X_S: evaluated once per case, not per size.
        base = {}
        for mech in ("RR", "RAPPOR"):
            vals = [
                evaluate(mech, eps, data, None, args.seed + 7 * r + 3, ["emp", "EM"])
                for r in range(args.runs)
            ]
            base[mech] = {e: [v[e][:2] for v in vals] for e in ("emp", "EM")}
        for size in sizes(k, args.quick):
            acc = {m: {e: [] for e in ("emp", "EM")} for m in ("uRR", "uRAP")}
            for r in range(args.runs):
                sensitive = data.categories[rng.choice(k, size=size, replace=False)]
                for mech in ("uRR", "uRAP"):
                    res = evaluate(mech, eps, data, sensitive, args.seed + 7 * r + 5, ["emp", "EM"])
                    for e in res:
                        acc[mech][e].append(res[e][:2])
            for mech in ("RR", "RAPPOR", "uRR", "uRAP"):
                for e in ("emp", "EM"):
                    vals = base[mech][e] if mech in base else acc[mech][e]
                    rows.append(
                        {
                            "data": data.name,
                            "epsilon": eps,
                            "size_S": size,
                            "mechanism": mech,
                            "estimator": e,
                            **loss_columns(vals),
                            "no_privacy_TV": np_tv,
                            "no_privacy_MSE": np_l2,
                        }
                    )
            em = {r["mechanism"]: r["TV"] for r in rows[-8:] if r["estimator"] == "EM"}
            print(
                f"{data.name} eps={eps:g} |X_S|={size}: "
                + ", ".join(f"{m} EM TV={v:.4g}" for m, v in em.items()),
                flush=True,
            )


def plot(rows, args, metric="TV"):
    plt = pyplot()

    panels = sorted({(r["data"], r["epsilon"]) for r in rows})
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.8), squeeze=False)
    for ax, (name, eps) in zip(axes[0], panels, strict=True):
        sub = [r for r in rows if r["data"] == name and r["epsilon"] == eps]
        xs = sorted({r["size_S"] for r in sub})
        for c, mech in enumerate(("RR", "RAPPOR", "uRR", "uRAP")):
            for est, st in (("emp", ":"), ("EM", "-")):
                ys = [cell(sub, metric, size_S=x, mechanism=mech, estimator=est) for x in xs]
                ax.plot(xs, ys, st, marker="o", ms=3, color=f"C{c}", label=f"{mech} ({est})")
        ax.plot(xs, [sub[0][f"no_privacy_{metric}"]] * len(xs), "k--", label="no privacy")
        label_loss_axes(ax, metric, "|X_S|", f"{name}, eps={eps:g}")
    axes[0, 0].legend(fontsize=6)
    save_loss_figure(fig, args, metric, (6, 11))


def main(argv=None):
    args = parse_args(__doc__, argv, default_runs=5)
    rows = []
    with timer("total") as t:
        if args.quick:
            args.runs = min(args.runs, 2)
            datasets = [location_data(args.seed, n_users=20_000)]
        else:
            datasets = [location_data(args.seed), census_data(args.seed)]
        for data in datasets:
            run(data, args, rows)
    meta = {
        "figure": "ULDP paper Figs 6 (TV) and 11 (MSE = squared l2 loss)",
        "datasets": {d.name: {"k": len(d.categories), "n": len(d.frame)} for d in datasets},
        "paper_claims": PAPER_CLAIMS,
        "cases_per_size": args.runs,
        "seconds": t.seconds,
        "em": "EMEstimator(shrinkage=None), started from emp+thr (the paper's EM)",
    }
    print("\nThe paper's claims (Sec. 6.2):\n- " + "\n- ".join(PAPER_CLAIMS))
    save_results(
        "uldp_fig6_fig11",
        rows,
        args,
        columns=[
            "data",
            "epsilon",
            "size_S",
            "mechanism",
            "estimator",
            *LOSS_COLUMNS,
            "runs",
            "no_privacy_TV",
        ],
        meta=meta,
    )
    plot_tv_and_mse(plot, rows, args)
    return rows, meta


if __name__ == "__main__":
    main()
