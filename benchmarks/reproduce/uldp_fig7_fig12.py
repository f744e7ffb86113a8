"""ULDP paper, Figures 7 and 12: number of attributes vs TV and MSE (census).

Murakami & Kawamoto, USENIX Security 2019, Sec. 6.2 and Appendix E.3: the
census tuples get 4 to 9 attributes (|X| from 400 to 12,800, |X_S| from 76 to
2,432; the five added attributes are non-sensitive binary ones),
n = 240,000 users, epsilon in {0.1, 1, 6 (= ln 400)}, "EM" only (the
maximum-likelihood estimate by EM started from emp+thr:
``EMEstimator(shrinkage=None)``), mean over ten realizations of the reports.

Stand-in: ``load_census_tuples(n_attributes)`` (the 1980 US Census extract
AER::Fertility; |X| = 400 to 12,800, |X_S| = 80 to 2,560; the 5th and 6th
attributes are the table's, the 7th to 9th are generated), n = 240,000 of
its 254,654 people. Each point is the mean over ``--runs`` realizations
(default 3; the paper: 10); ``TV_sd`` and ``MSE_sd`` are the sample
standard deviations over them, ``runs`` their number. ``--attributes`` and
``--epsilons`` restrict the run to some numbers of attributes and budgets.

The paper's statements: the TV grows with the number of attributes, the
utility-optimized mechanisms stay better; at epsilon = 0.1 with 9
attributes the TV of RR, RAPPOR and uRR (EM) is almost 1 while uRAP's is much
smaller; "EM" took 3121, 1258, 5225 and 1073 s for RR, uRR, RAPPOR and uRAP
at epsilon = 6 with 9 attributes (Xeon E5-2620 v3, 6 cores), roughly linear
in the number of attributes, "emp" and "emp+thr" under one second. Our EM
times are printed beside them (2 cores, shared).

Usage::

    python benchmarks/reproduce/uldp_fig7_fig12.py            # full (about 20 min)
    python benchmarks/reproduce/uldp_fig7_fig12.py --quick    # seconds
    python benchmarks/reproduce/uldp_fig7_fig12.py --rappor-large   # RAPPOR, 7-9 attributes
    python benchmarks/reproduce/uldp_fig7_fig12.py --attributes 9 --epsilons 0.1 6
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import parse_args, pyplot, save_results, timer  # noqa: E402
from uldp_fig5_fig10 import (  # noqa: E402
    LOSS_COLUMNS,
    census_data,
    label_loss_axes,
    loss_columns,
    make_mechanism,
    save_loss_figure,
)

from sklearn_uldp import EMEstimator, ThresholdEstimator  # noqa: E402
from sklearn_uldp.metrics import l2_loss, total_variation  # noqa: E402

PAPER_EM_SECONDS = {"RR": 3121, "uRR": 1258, "RAPPOR": 5225, "uRAP": 1073}
PAPER_CLAIMS = [
    "TV increases with the number of attributes; uRR/uRAP stay better than RR/RAPPOR",
    "epsilon = 0.1, 9 attributes: TV of RR, RAPPOR and uRR (EM) almost 1",
    "epsilon = 0.1, 9 attributes: TV of uRAP (EM) much smaller than 1",
    "EM at epsilon = 6, 9 attributes: 3121 s (RR), 1258 s (uRR), 5225 s (RAPPOR), 1073 s (uRAP)",
    "emp and emp+thr take under one second even with 9 attributes",
]
MECHS = ("RR", "RAPPOR", "uRR", "uRAP")
_RAPPOR_LARGE_HELP = """
RAPPOR is run up to 6 attributes only (its EM over 12,800-bit reports is the
slow part); ``--rappor-large`` runs it alone for 7 to 9 attributes and
writes uldp_fig7_fig12_rappor_large. ``--attributes A [A ...]`` and
``--epsilons E [E ...]`` run a subset of the grid (4-9 attributes, epsilon in
{0.1, 1, 6}) and write ``<name>_subset``.
"""


def run(args, rows):
    n_users = 240_000
    attrs = list(range(4, 10))
    epsilons = (0.1, 1.0, 6.0)
    mechs = MECHS
    if args.quick:
        n_users, attrs, epsilons = 10_000, [4, 9], (0.1, 6.0)
    if args.rappor_large:
        attrs, mechs = [7, 8, 9], ("RAPPOR",)
    if args.attributes:
        attrs = [a for a in attrs if a in args.attributes]
    if args.epsilons:
        epsilons = tuple(e for e in epsilons if any(abs(e - x) < 1e-9 for x in args.epsilons))
    for n_attr in attrs:
        data = census_data(args.seed, n_attributes=n_attr, n_users=n_users)
        k = len(data.categories)
        np_tv = total_variation(data.distribution, data.empirical)
        for eps in epsilons:
            for mech in mechs:
                if mech == "RAPPOR" and n_attr > (4 if args.quick else 6) and not args.rappor_large:
                    continue  # reports of k bits each: too slow here beyond 6 attributes
                tvs, l2s, em_s, thr_s = [], [], [], []
                for r in range(args.runs):
                    reports = make_mechanism(
                        mech, eps, data.categories, data.sensitive, args.seed + 100 * r + n_attr
                    ).fit_transform(data.frame)
                    start = time.perf_counter()
                    ThresholdEstimator(alpha=0.05).fit(reports)
                    thr_s.append(time.perf_counter() - start)
                    start = time.perf_counter()
                    p_hat = EMEstimator(shrinkage=None, init="threshold").fit(reports).distribution_
                    em_s.append(time.perf_counter() - start)
                    tvs.append(total_variation(data.distribution, p_hat))
                    l2s.append(l2_loss(data.distribution, p_hat))
                    del reports
                loss = loss_columns(np.column_stack([tvs, l2s]))
                rows.append(
                    {
                        "n_attributes": n_attr,
                        "k": k,
                        "k_S": len(data.sensitive),
                        "epsilon": eps,
                        "mechanism": mech,
                        **loss,
                        "no_privacy_TV": np_tv,
                        "EM_seconds": float(np.mean(em_s)),
                        "thr_seconds": float(np.mean(thr_s)),
                        "paper_EM_seconds": (
                            PAPER_EM_SECONDS[mech] if (n_attr == 9 and eps == 6.0) else None
                        ),
                    }
                )
                print(
                    f"attrs={n_attr} k={k} eps={eps:g} {mech}: EM TV={loss['TV']:.4g} "
                    f"(sd {loss['TV_sd']:.2g}, {len(tvs)} runs, {np.mean(em_s):.1f} s)",
                    flush=True,
                )


def plot(rows, args, metric="TV"):
    plt = pyplot()

    eps_list = sorted({r["epsilon"] for r in rows})
    fig, axes = plt.subplots(1, len(eps_list), figsize=(4.2 * len(eps_list), 3.8), squeeze=False)
    for ax, eps in zip(axes[0], eps_list, strict=True):
        sub = [r for r in rows if r["epsilon"] == eps]
        for mech in MECHS:
            pts = sorted((r["n_attributes"], r[metric]) for r in sub if r["mechanism"] == mech)
            if pts:
                ax.plot(*zip(*pts, strict=True), marker="o", ms=4, label=f"{mech} (EM)")
        pts = sorted({(r["n_attributes"], r["no_privacy_TV"]) for r in sub})
        if metric == "TV":
            ax.plot(*zip(*pts, strict=True), "k--", label="no privacy")
        label_loss_axes(ax, metric, "number of attributes", f"census, eps={eps:g}", log_x=False)
    axes[0, 0].legend(fontsize=7)
    save_loss_figure(fig, args, metric, (7, 12))


def main(argv=None):
    # One option of this script only: RAPPOR beyond 6 attributes (k-bit
    # reports, 384 MB of bits at 9 attributes) is a separate, long run.
    own = argparse.ArgumentParser(add_help=False)
    own.add_argument("--rappor-large", action="store_true")
    own.add_argument("--attributes", type=int, nargs="+", default=None)
    own.add_argument("--epsilons", type=float, nargs="+", default=None)
    own_args, rest = own.parse_known_args(argv)
    args = parse_args(__doc__ + _RAPPOR_LARGE_HELP, rest, default_runs=3)
    args.rappor_large = own_args.rappor_large
    args.attributes, args.epsilons = own_args.attributes, own_args.epsilons
    if args.quick:  # two realizations: enough to record a spread
        args.runs = min(args.runs, 2)
    rows = []
    with timer("total") as t:
        run(args, rows)
    print("\nThe paper's claims (Sec. 6.2):\n- " + "\n- ".join(PAPER_CLAIMS))
    meta = {
        "figure": "ULDP paper Figs 7 (TV) and 12 (MSE = squared l2 loss)",
        "paper_claims": PAPER_CLAIMS,
        "paper_em_seconds_eps6_9attrs": PAPER_EM_SECONDS,
        "seconds": t.seconds,
        "em": "EMEstimator(shrinkage=None), started from emp+thr (the paper's EM)",
    }
    name = "uldp_fig7_fig12_rappor_large" if args.rappor_large else "uldp_fig7_fig12"
    if args.attributes or args.epsilons:  # a subset: do not overwrite the full run
        name += "_subset"
    save_results(
        name,
        rows,
        args,
        columns=[
            "n_attributes",
            "k",
            "k_S",
            "epsilon",
            "mechanism",
            *LOSS_COLUMNS,
            "runs",
            "no_privacy_TV",
            "EM_seconds",
            "paper_EM_seconds",
            "thr_seconds",
        ],
        meta=meta,
    )
    if args.plot:
        merged = _merged_rows(rows, args)
        plot(merged, args, "TV")
        plot(merged, args, "MSE")
    return rows, meta


def _merged_rows(rows, args):
    """This run's rows plus those of the other run (main or --rappor-large) in --out."""
    import json

    other = "uldp_fig7_fig12" if args.rappor_large else "uldp_fig7_fig12_rappor_large"
    path = Path(args.out) / f"{other}.json"
    if args.quick or not path.exists():
        return rows
    mine = {(r["n_attributes"], r["epsilon"], r["mechanism"]) for r in rows}
    extra = [
        r
        for r in json.loads(path.read_text())["rows"]
        if (r["n_attributes"], r["epsilon"], r["mechanism"]) not in mine
    ]
    return rows + extra


if __name__ == "__main__":
    main()
