"""ULDP paper, Figures 5 and 10: epsilon vs TV and MSE (common mechanism).

Murakami & Kawamoto, USENIX Security 2019, Sec. 6.2 and Appendix E.3: RR,
RAPPOR, uRR and uRAP, each with the estimators "emp", "emp+thr"
(alpha = 0.05) and "EM" (the maximum-likelihood estimate by EM started from
emp+thr: ``EMEstimator(shrinkage=None)``; the package's default
``EMEstimator()`` shrinks it, which the paper did not), plus "no privacy"
(the users' empirical distribution), for epsilon from 0.1 to 10 and
epsilon = ln|X|, on

- the location stand-in (the paper: 359,054 Foursquare check-ins in
  Manhattan, 25 x 25 regions, |X_S| = 15, n = 179,527 users, a random half):
  ``make_location_grid(179_527, n_population=359_054, land_fraction=0.45)``;
- the census stand-in (the paper: 1990 US Census, |X| = 400, |X_S| = 76,
  n = 1,229,143): ``load_census_tuples()``, the 1980 US Census extract of
  AER::Fertility, |X| = 400, |X_S| = 80, n = 127,327 (a random half).

The true distribution is the population's frequencies (the paper: "all
people"), so "no privacy" has the sampling error of the half. TV is the
paper's utility (Fig. 5); the MSE of Fig. 10 is the squared l2 loss
sum_x (p_hat(x) - p(x))^2 (the paper's "l2 loss"). Each point is the mean over
``--runs`` realizations of the reports (the paper: 100; default 5 here, as
RAPPOR's EM at epsilon = 0.1 takes about a minute per realization); ``TV_sd``
and ``MSE_sd`` are the sample standard deviations over them, ``runs`` their
number.

Usage::

    python benchmarks/reproduce/uldp_fig5_fig10.py            # full (about 20 min)
    python benchmarks/reproduce/uldp_fig5_fig10.py --quick    # seconds
    python benchmarks/reproduce/uldp_fig5_fig10.py --plot     # also draw the figure
"""

import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import cell, parse_args, pyplot, save_figure, save_results, timer  # noqa: E402

from sklearn_uldp import (  # noqa: E402
    RAPPOR,
    EMEstimator,
    EmpiricalEstimator,
    RandomizedResponse,
    ThresholdEstimator,
    UtilityOptimizedRAPPOR,
    UtilityOptimizedRR,
)
from sklearn_uldp.datasets import load_census_tuples, make_location_grid  # noqa: E402
from sklearn_uldp.metrics import l2_loss, total_variation  # noqa: E402

MECHANISMS = {
    "RR": RandomizedResponse,
    "RAPPOR": RAPPOR,
    "uRR": UtilityOptimizedRR,
    "uRAP": UtilityOptimizedRAPPOR,
}
# The paper's "EM" is the exact maximum-likelihood estimate, started from
# emp+thr; EMEstimator()'s default shrinks it towards emp+thr.
ESTIMATORS = {
    "emp": lambda: EmpiricalEstimator(),
    "emp+thr": lambda: ThresholdEstimator(alpha=0.05),
    "EM": lambda: EMEstimator(shrinkage=None, init="threshold"),
}
CENSUS_HALF = 127_327  # a random half of the 254,654 people

# What the paper states in words (Sec. 6.2) about Fig. 5.
PAPER_CLAIMS = [
    "our mechanisms outperform the existing mechanisms by one or two orders of magnitude",
    "more effective on location data (|X_S|/|X| = 0.024) than on census data",
    "uRR provides almost the same performance as no privacy at epsilon = ln|X|",
    "emp+thr and EM significantly outperform emp",
    "EM outperforms emp+thr for RAPPOR and uRAP at large epsilon; close otherwise",
]


# ---------------------------------------------------------------- helpers
# (also imported by uldp_fig6_fig11.py and uldp_fig7_fig12.py)


def location_data(seed, n_users=179_527):
    """The Foursquare/Manhattan stand-in at the paper's sizes (Sec. 6.1)."""
    data = make_location_grid(n_users, n_population=359_054, land_fraction=0.45, random_state=seed)
    data.name = "location"
    return data


def census_data(seed, n_attributes=4, n_users=CENSUS_HALF):
    """The census stand-in: ``n_users`` people drawn at random."""
    data = load_census_tuples(n_attributes, n_users=n_users, random_state=seed)
    data.name = "census"
    return data


def make_mechanism(name, epsilon, categories, sensitive, seed):
    kwargs = {"epsilon": float(epsilon), "categories": categories, "random_state": seed}
    if name in ("uRR", "uRAP"):
        kwargs["sensitive"] = sensitive
    return MECHANISMS[name](**kwargs)


def evaluate(name, epsilon, data, sensitive, seed, estimators, *, em_max_iter=None):
    """Privatize once and score each estimator: ``{est: (tv, l2, seconds)}``."""
    mech = make_mechanism(name, epsilon, data.categories, sensitive, seed)
    reports = mech.fit_transform(data.frame)
    out = {}
    for est_name in estimators:
        est = ESTIMATORS[est_name]()
        if est_name == "EM" and em_max_iter is not None:
            est.set_params(max_iter=em_max_iter)
        start = time.perf_counter()
        p_hat = est.fit(reports).distribution_
        out[est_name] = (
            total_variation(data.distribution, p_hat),
            l2_loss(data.distribution, p_hat),
            time.perf_counter() - start,
        )
    return out


def mean_sd(values):
    """Mean and sample standard deviation (``ddof=1``) of ``values``, along axis 0.

    The spread of a point over its realizations (or random cases); the
    standard deviation is NaN (``-`` in the tables) for a single run.
    """
    values = np.asarray(values, dtype=float)
    if len(values) < 2:
        return values.mean(axis=0), np.full(values.shape[1:], np.nan)
    return values.mean(axis=0), values.std(axis=0, ddof=1)


#: The table columns of :func:`loss_columns` but ``runs``.
LOSS_COLUMNS = ["TV", "TV_sd", "MSE", "MSE_sd"]


def loss_columns(values):
    """The ``TV``, ``TV_sd``, ``MSE``, ``MSE_sd`` and ``runs`` cells of a point.

    ``values`` holds one ``(TV, squared l2 loss, ...)`` row per realization.
    """
    (tv, l2, *_), (tv_sd, l2_sd, *_) = mean_sd(values)
    return {"TV": tv, "TV_sd": tv_sd, "MSE": l2, "MSE_sd": l2_sd, "runs": len(values)}


def label_loss_axes(ax, metric, xlabel, title, *, log_x=True):
    """Log-scaled ``metric`` against ``xlabel`` (log-scaled too if ``log_x``), titled."""
    if log_x:
        ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(metric)
    ax.set_title(title)


def save_loss_figure(fig, args, metric, figures):
    """Write the TV figure (``uldp_fig<figures[0]>.png`` in ``--out``) or the MSE one."""
    number = figures[0] if metric == "TV" else figures[1]
    save_figure(fig, Path(args.out) / f"uldp_fig{number}.png", dpi=110, announce=True)


def plot_tv_and_mse(plot, rows, args):
    """With ``--plot``, draw the TV figure, then the MSE one."""
    if args.plot:
        for metric in ("TV", "MSE"):
            plot(rows, args, metric)


def epsilons(k, quick, name="location"):
    if quick:  # census: the large budgets only (RAPPOR's EM is slow at 0.1)
        grid = [0.1, 1.0, math.log(k)] if name == "location" else [1.0, math.log(k)]
    else:
        grid = [0.1, 0.2, 0.5, 1.0, 2.0, 5.0, math.log(k), 10.0]
    return sorted(set(round(e, 4) for e in grid))


# ------------------------------------------------------------------- main


def run(data, args, rows):
    k = len(data.categories)
    np_tv = total_variation(data.distribution, data.empirical)
    np_l2 = l2_loss(data.distribution, data.empirical)
    for eps in epsilons(k, args.quick, data.name):
        for mech in MECHANISMS:
            acc = {e: [] for e in ESTIMATORS}
            for r in range(args.runs):
                res = evaluate(
                    mech, eps, data, data.sensitive, args.seed + 1000 * r + 1, list(ESTIMATORS)
                )
                for e, v in res.items():
                    acc[e].append(v)
            for e, vals in acc.items():
                vals = np.asarray(vals)
                rows.append(
                    {
                        "data": data.name,
                        "epsilon": eps,
                        "mechanism": mech,
                        "estimator": e,
                        **loss_columns(vals),
                        "seconds": mean_sd(vals)[0][2],
                        "no_privacy_TV": np_tv,
                        "no_privacy_MSE": np_l2,
                    }
                )
            print(
                f"{data.name} eps={eps:g} {mech}: "
                + ", ".join(f"{e} TV={np.mean([v[0] for v in acc[e]]):.4g}" for e in acc),
                flush=True,
            )


def summarize(rows):
    """Ratios behind the paper's claims, per dataset."""
    out = {}
    for name in sorted({r["data"] for r in rows}):
        sub = [r for r in rows if r["data"] == name]

        def tv(m, e, eps, sub=sub):
            return cell(sub, "TV", mechanism=m, estimator=e, epsilon=eps)

        eps_list = sorted({r["epsilon"] for r in sub})
        ln_k = max(e for e in eps_list if e < 10.0) if len(eps_list) > 3 else eps_list[-1]
        ratios = {}
        for eps in eps_list:
            ratios[eps] = {
                "RR/uRR (EM)": tv("RR", "EM", eps) / tv("uRR", "EM", eps),
                "RAPPOR/uRAP (EM)": tv("RAPPOR", "EM", eps) / tv("uRAP", "EM", eps),
                "best LDP / best ULDP (EM)": min(tv("RR", "EM", eps), tv("RAPPOR", "EM", eps))
                / min(tv("uRR", "EM", eps), tv("uRAP", "EM", eps)),
            }
        out[name] = {
            "ratios": ratios,
            "uRR_EM_over_no_privacy_at_ln_k": tv("uRR", "EM", ln_k) / sub[0]["no_privacy_TV"],
            "ln_k": ln_k,
        }
    return out


def plot(rows, args, metric="TV"):
    plt = pyplot()

    names = sorted({r["data"] for r in rows})
    fig, axes = plt.subplots(len(names), 3, figsize=(13, 3.8 * len(names)), squeeze=False)
    styles = {"RR": "o-", "RAPPOR": "s-", "uRR": "^-", "uRAP": "v-"}
    for i, name in enumerate(names):
        sub = [r for r in rows if r["data"] == name]
        k_eps = sorted({r["epsilon"] for r in sub})
        for j, est in enumerate(ESTIMATORS):
            ax = axes[i, j]
            for mech, st in styles.items():
                ys = [cell(sub, metric, mechanism=mech, estimator=est, epsilon=e) for e in k_eps]
                ax.plot(k_eps, ys, st, label=mech, ms=4)
            ax.plot(k_eps, [sub[0][f"no_privacy_{metric}"]] * len(k_eps), "k--", label="no privacy")
            ax.axvline(math.log(400 if name == "census" else 625), color="k", lw=2)
            label_loss_axes(ax, metric, "epsilon", f"{name} ({est})")
        axes[i, 0].legend(fontsize=7)
    save_loss_figure(fig, args, metric, (5, 10))


def main(argv=None):
    args = parse_args(__doc__, argv, default_runs=5)
    if args.quick:
        args.runs = min(args.runs, 1)
    rows = []
    with timer("total") as t:
        datasets = [location_data(args.seed), census_data(args.seed)]
        if args.quick:  # fewer users: the same trends, seconds instead of minutes
            datasets = [
                location_data(args.seed, n_users=20_000),
                census_data(args.seed, n_users=10_000),
            ]
        for data in datasets:
            run(data, args, rows)
    summary = summarize(rows)
    for name, s in summary.items():
        print(f"\n{name}: TV ratios LDP/ULDP (EM) per epsilon:")
        for eps, r in s["ratios"].items():
            print(f"  eps={eps:g}: " + ", ".join(f"{k}={v:.3g}" for k, v in r.items()))
        print(
            f"  uRR EM / no privacy at ln|X| = {s['uRR_EM_over_no_privacy_at_ln_k']:.3g}"
            " (paper: 'almost the same')"
        )
    print("\nThe paper's claims (Sec. 6.2):\n- " + "\n- ".join(PAPER_CLAIMS))
    meta = {
        "figure": "ULDP paper Figs 5 (TV) and 10 (MSE = squared l2 loss)",
        "datasets": {
            d.name: {"k": len(d.categories), "k_S": len(d.sensitive), "n": len(d.frame)}
            for d in datasets
        },
        "paper_claims": PAPER_CLAIMS,
        "summary": summary,
        "seconds": t.seconds,
        "em": "EMEstimator(shrinkage=None), started from emp+thr (the paper's EM)",
    }
    save_results(
        "uldp_fig5_fig10",
        rows,
        args,
        columns=[
            "data",
            "epsilon",
            "mechanism",
            "estimator",
            *LOSS_COLUMNS,
            "no_privacy_TV",
            "no_privacy_MSE",
            "seconds",
        ],
        meta=meta,
    )
    plot_tv_and_mse(plot, rows, args)
    return rows, meta


if __name__ == "__main__":
    main()
