"""ULDP paper, utility theory: expected l1 / l2 losses of RR, RAPPOR, uRR, uRAP vs simulation.

Murakami & Kawamoto (USENIX Security 2019), Sec. 4.3 and App. D-E: the
expected l1 loss of the empirical estimate of uRR (Prop. 6) and uRAP
(Prop. 9), maximized by the uniform distribution p_UN over the non-sensitive
values X_N (Props. 7 and 10, for eps < ln(|X_N| + 1), resp. 2 ln(|X_N|/2 + 1)),
the l2 loss (Prop. 14 and App. E), and those of RR and RAPPOR (Kairouz et
al. 2016, the paper's [29]). :mod:`sklearn_uldp.metrics` computes them for any
channel: ``expected_l2_loss`` exactly, ``expected_l1_loss`` by the normal
(large-n) approximation the propositions use.

This script checks them against simulation: on the 25 x 25 location grid with
15 sensitive cells (k = 625, the size of the paper's Foursquare domain), users
i.i.d. from (a) p_UN, the worst case of Props. 7 and 10, and (b) the generated
location distribution of :func:`sklearn_uldp.datasets.make_location_grid`; the
raw (unprojected) empirical estimate; mean l1 and l2 over the runs, beside
the theory, over eps. The paper also shows (Sec. 4.3) that uRR and uRAP lose
much less than RR and RAPPOR when |X_S| << |X|, and that at eps = ln|X| uRR
is close to the non-private loss; the table shows both.
The paper's comparisons with the non-private loss at eps = ln|X| (uRR and
uRAP "almost the same", RR "twice larger", RAPPOR larger by a root of |X|
whose index the OCR of our copy lost; |X|^(1/4) = 5 fits) are in the last
column. ``--quick``: n = 5,000, p_UN only, three budgets, 3 runs.
"""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import cell, parse_args, print_trends, pyplot, save_figure, save_results, timer  # noqa: E402

from sklearn_uldp import (  # noqa: E402
    RAPPOR,
    EmpiricalEstimator,
    NonPrivate,
    RandomizedResponse,
    UtilityOptimizedRAPPOR,
    UtilityOptimizedRR,
)
from sklearn_uldp.datasets import make_location_grid  # noqa: E402
from sklearn_uldp.metrics import expected_l1_loss, expected_l2_loss, l1_loss  # noqa: E402
from sklearn_uldp.utils import spawn_generators  # noqa: E402

K = 625


def mechanisms(epsilon, sensitive, categories):
    return {
        "RR": RandomizedResponse(epsilon, categories=categories),
        "RAPPOR": RAPPOR(epsilon, categories=categories),
        "uRR": UtilityOptimizedRR(epsilon, sensitive=sensitive, categories=categories),
        "uRAP": UtilityOptimizedRAPPOR(epsilon, sensitive=sensitive, categories=categories),
    }


def main(argv=None):
    args = parse_args(__doc__, argv, default_runs=20)
    n = 5_000 if args.quick else 20_000
    runs = 3 if args.quick else args.runs
    epsilons = (
        [0.1, 1.0, float(np.log(K))]
        if args.quick
        else [0.1, 0.5, 1.0, 2.0, 4.0, float(np.log(K)), 10.0]
    )
    grid = make_location_grid(1000, random_state=args.seed)
    categories = np.arange(K)
    sensitive_mask = np.isin(grid.categories, grid.sensitive)
    sensitive = categories[sensitive_mask]
    p_un = np.where(sensitive_mask, 0.0, 1.0 / (~sensitive_mask).sum())
    dists = {"p_UN (worst case)": p_un, "location grid": grid.distribution}
    if args.quick:
        dists.pop("location grid")
    streams = iter(spawn_generators(args.seed, 8192))
    rows = []
    with timer("theory vs simulation") as t_all:
        for dist, p in dists.items():
            base = NonPrivate(categories=categories)
            nonprivate_l1 = expected_l1_loss(base, p, n)
            for eps in epsilons:
                for name, mech in mechanisms(eps, sensitive, categories).items():
                    l1s, l2s = [], []
                    for _ in range(runs):
                        X = next(streams).choice(K, p=p, size=(n, 1))
                        mech.set_params(random_state=next(streams)).fit()
                        est = EmpiricalEstimator().fit(mech.transform(X))
                        l1s.append(l1_loss(p, est.distribution_))
                        l2s.append(float(np.sum((p - est.distribution_) ** 2)))
                    th1 = expected_l1_loss(mech.channel_, p, n)
                    th2 = expected_l2_loss(mech.channel_, p, n)
                    rows.append(
                        {
                            "distribution": dist,
                            "epsilon": eps,
                            "mechanism": name,
                            "l1 (sim)": float(np.mean(l1s)),
                            "l1 (theory)": th1,
                            "l1 sim/theory": float(np.mean(l1s)) / th1,
                            "l2 (sim)": float(np.mean(l2s)),
                            "l2 (theory)": th2,
                            "l2 sim/theory": float(np.mean(l2s)) / th2,
                            "l1 theory / non-private": th1 / nonprivate_l1,
                            "runs": runs,
                        }
                    )
    r1 = [r["l1 sim/theory"] for r in rows]
    r2 = [r["l2 sim/theory"] for r in rows]

    def th(dist, eps, name):
        return cell(rows, "l1 (theory)", distribution=dist, epsilon=eps, mechanism=name)

    trends = {
        "l1 sim/theory (min, max)": (min(r1), max(r1)),
        "l2 sim/theory (min, max)": (min(r2), max(r2)),
        "uRR < RR and uRAP < RAPPOR at every eps (theory)": all(
            th(d, e, "uRR") < th(d, e, "RR") and th(d, e, "uRAP") < th(d, e, "RAPPOR")
            for d in dists
            for e in epsilons
        ),
    }
    for name, claim in (
        ("uRR", "almost 1"),
        ("uRAP", "almost 1"),
        ("RR", "2"),
        ("RAPPOR", "|X|^(1/4) = 5"),
    ):
        ratio = cell(
            rows,
            "l1 theory / non-private",
            distribution="p_UN (worst case)",
            mechanism=name,
            epsilon=float(np.log(K)),
        )
        trends[f"{name} l1 / non-private l1 at eps = ln|X| (paper: {claim})"] = ratio
    print_trends("Theory vs simulation, and the paper's claims (Sec. 4.3):", trends)
    meta = {
        "paper": "Murakami & Kawamoto 2019, Sec. 4.3, Props. 6-10, 14; App. D-E",
        "n": n,
        "k": K,
        "n_sensitive": int(sensitive.size),
        "estimator": "empirical (unprojected)",
        "trends": trends,
        "seconds": t_all.seconds,
    }
    save_results(
        "uldp_theory",
        rows,
        args,
        columns=[
            "distribution",
            "epsilon",
            "mechanism",
            "l1 (sim)",
            "l1 (theory)",
            "l1 sim/theory",
            "l2 (sim)",
            "l2 (theory)",
            "l2 sim/theory",
            "l1 theory / non-private",
        ],
        meta=meta,
    )
    if args.plot:
        _plot(rows, dists, epsilons, args.out)
    return {"rows": rows, "trends": trends}


def _plot(rows, dists, epsilons, out):
    plt = pyplot()

    fig, axes = plt.subplots(2, len(dists), figsize=(9, 7), sharex=True, squeeze=False)
    for j, dist in enumerate(dists):
        for i, loss in enumerate(("l1", "l2")):
            ax = axes[i, j]
            for c, name in enumerate(("RR", "RAPPOR", "uRR", "uRAP")):
                sel = [r for r in rows if r["distribution"] == dist and r["mechanism"] == name]
                ax.loglog(
                    epsilons,
                    [r[f"{loss} (theory)"] for r in sel],
                    "-",
                    color=f"C{c}",
                    label=f"{name} (theory)",
                )
                ax.loglog(epsilons, [r[f"{loss} (sim)"] for r in sel], "o", color=f"C{c}")
            ax.set_title(f"{dist}: {loss}")
            ax.set_xlabel("epsilon")
    axes[0, 0].legend(fontsize=7)
    fig.suptitle("Expected loss (lines) vs simulation (dots), empirical estimate")
    save_figure(fig, Path(out) / "uldp_theory.png", dpi=120)


if __name__ == "__main__":
    main()
