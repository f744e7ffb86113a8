"""Extension of the ULDP paper's Fig. 7: many attributes, split vs sample vs fake data.

The paper (Murakami & Kawamoto, USENIX Security 2019, Sec. 6.2) privatizes
each person's 4 to 9 census attributes as one joint category and leaves
many attributes to future work (Sec. 7). This run keeps Fig. 7's setting
(the census stand-in ``load_census_tuples``, n = 240,000, epsilon in {0.1,
1, 6}, EM) and measures what a collector of marginals gets, the mean over
the attributes of the total variation of each attribute's estimated
distribution, for every way of reporting the row at the same budget per
person (epsilon for the whole row):

* ``joint``: the paper's total category (the tuple, |X| = 400..12,800),
  estimated by EM, marginals summed from the joint estimate (RAPPOR beyond
  6 attributes is skipped, as in the Fig. 7 script: its reports are |X|
  bits);
* ``SPL``: each attribute with epsilon / d (``strategy="split"``);
* ``SMP``: one sampled attribute with epsilon (``strategy="sample"``);
* ``RS+FD``: one sampled attribute among fakes, each attribute at
  ln(1 + (e^eps - 1) / d), so that the row spends epsilon
  (``strategy="sample+fake"``), and ``RS+FD (attr. eps)``: each attribute
  at epsilon, the row spending ln(1 + d (e^eps - 1)) (Arcolezi et al.'s
  comparison, marked: a weaker row guarantee).

Mechanisms: RR, RAPPOR (basic), uRR, uRAP. The paper's sensitive tuples
are those with 1-13 weeks worked; per attribute, the "work" column has the
sensitive value "1-13" and the others are all sensitive (uRR = RR and uRAP
= RAPPOR on them): a person's other attributes are never released, which
protects more than the joint uRR/uRAP (it releases a non-sensitive tuple).

Usage::

    python benchmarks/reproduce/uldp_fig7_attributes.py --plot    # full run
    python benchmarks/reproduce/uldp_fig7_attributes.py --quick
    python benchmarks/reproduce/uldp_fig7_attributes.py --runs 1 --attributes 4 6 9 --epsilons 1

``--attributes`` and ``--epsilons`` run a subset of the grid (default: 4 to
9 attributes, epsilon in {0.1, 1, 6}) at the full n.
"""

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import parse_args, pyplot, save_figure, save_results, timer  # noqa: E402
from uldp_fig5_fig10 import census_data, make_mechanism, mean_sd  # noqa: E402

from sklearn_uldp import (  # noqa: E402
    RAPPOR,
    EMEstimator,
    RandomizedResponse,
    UtilityOptimizedRAPPOR,
    UtilityOptimizedRR,
)
from sklearn_uldp.compose import DataFramePrivatizer  # noqa: E402
from sklearn_uldp.metrics import total_variation  # noqa: E402

MECHS = ("RR", "RAPPOR", "uRR", "uRAP")
METHODS = ("joint", "SPL", "SMP", "RS+FD", "RS+FD (attr. eps)")
SENSITIVE_WORK = "1-13"


def column_mechanism(mech, eps, column, categories, seed):
    cats = list(categories)
    sens = [SENSITIVE_WORK] if column == "work" else cats
    if mech == "RR" or (mech == "uRR" and column != "work"):
        return RandomizedResponse(eps, categories=cats, random_state=seed)
    if mech == "RAPPOR" or (mech == "uRAP" and column != "work"):
        return RAPPOR(eps, categories=cats, random_state=seed)
    if mech == "uRR":
        return UtilityOptimizedRR(eps, sensitive=sens, categories=cats, random_state=seed)
    return UtilityOptimizedRAPPOR(eps, sensitive=sens, categories=cats, random_state=seed)


def true_marginals(data):
    """Each attribute's distribution over the whole table (from the tuples')."""
    parts = np.array([c.split("|") for c in data.categories], dtype=object)
    out = {}
    for a, name in enumerate(data.attribute_names):
        labels = sorted(set(parts[:, a]))
        out[name] = {lab: float(data.distribution[parts[:, a] == lab].sum()) for lab in labels}
    return out, parts


def marginal_tv(truth, estimates):
    tvs = []
    for name, dist in truth.items():
        labels = list(dist)
        p = np.array([dist[lab] for lab in labels])
        q = np.array([estimates[name].get(lab, 0.0) for lab in labels])
        tvs.append(total_variation(p, q))
    return float(np.mean(tvs))


def run_joint(mech, eps, data, parts, seed):
    reports = make_mechanism(mech, eps, data.categories, data.sensitive, seed).fit_transform(
        data.frame
    )
    p_hat = EMEstimator(shrinkage=None, init="threshold").fit(reports).distribution_
    return {
        name: {lab: float(p_hat[parts[:, a] == lab].sum()) for lab in sorted(set(parts[:, a]))}
        for a, name in enumerate(data.attribute_names)
    }


def run_strategy(method, mech, eps, data, seed):
    cols = list(data.attributes.columns)
    d = len(cols)
    strategy = {"SPL": "split", "SMP": "sample"}.get(method, "sample+fake")
    if method == "SPL":
        col_eps = eps / d
    elif method == "RS+FD":
        col_eps = float(np.log1p(np.expm1(eps) / d))  # the row spends eps
    else:
        col_eps = eps
    cats = {c: sorted(set(data.attributes[c])) for c in cols}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        priv = DataFramePrivatizer(
            {c: column_mechanism(mech, col_eps, c, cats[c], None) for c in cols},
            strategy=strategy,
            random_state=seed,
        )
        reports = priv.fit_transform(data.attributes)
    est = priv.estimate(reports, EMEstimator())
    return {c: dict(zip(est[c].index, est[c].to_numpy(), strict=True)) for c in cols}, priv


def run(args, rows):
    n_users = 240_000
    attrs = list(range(4, 10))
    epsilons = (0.1, 1.0, 6.0)
    if args.quick:
        n_users, attrs, epsilons = 20_000, [4, 9], (1.0,)
    attrs = args.attributes or attrs
    epsilons = tuple(args.epsilons or epsilons)
    for n_attr in attrs:
        data = census_data(args.seed, n_attributes=n_attr, n_users=n_users)
        truth, parts = true_marginals(data)
        for eps in epsilons:
            for mech in MECHS:
                for method in METHODS:
                    if method == "joint" and mech == "RAPPOR" and n_attr > (4 if args.quick else 6):
                        continue
                    tvs, secs, row_eps = [], [], eps
                    for r in range(args.runs):
                        seed = args.seed + 100 * r + n_attr
                        start = time.perf_counter()
                        if method == "joint":
                            est = run_joint(mech, eps, data, parts, seed)
                        else:
                            est, priv = run_strategy(method, mech, eps, data, seed)
                            row_eps = priv.epsilon_spent_
                        secs.append(time.perf_counter() - start)
                        tvs.append(marginal_tv(truth, est))
                    (tv,), (tv_sd,) = mean_sd(np.asarray(tvs)[:, None])
                    rows.append(
                        {
                            "n_attributes": n_attr,
                            "epsilon": eps,
                            "mechanism": mech,
                            "method": method,
                            "row_epsilon": float(row_eps),
                            "TV": float(tv),
                            "TV_sd": float(tv_sd),
                            "runs": len(tvs),
                            "seconds": float(np.mean(secs)),
                        }
                    )
                    print(
                        f"attrs={n_attr} eps={eps:g} {mech} {method}: marginal TV={tv:.4g} "
                        f"(sd {tv_sd:.2g}, row eps {row_eps:.3g}, {np.mean(secs):.1f} s)",
                        flush=True,
                    )


def plot(rows, args):
    plt = pyplot()

    eps_list = sorted({r["epsilon"] for r in rows})
    fig, axes = plt.subplots(
        len(MECHS), len(eps_list), figsize=(4.2 * len(eps_list), 3.2 * len(MECHS)), squeeze=False
    )
    for i, mech in enumerate(MECHS):
        for j, eps in enumerate(eps_list):
            ax = axes[i, j]
            for method in METHODS:
                pts = sorted(
                    (r["n_attributes"], r["TV"])
                    for r in rows
                    if r["epsilon"] == eps and r["mechanism"] == mech and r["method"] == method
                )
                if pts:
                    style = ":" if method.endswith("(attr. eps)") else "-"
                    ax.plot(*zip(*pts, strict=True), style, marker="o", ms=3, label=method)
            ax.set_yscale("log")
            ax.set_title(f"{mech}, eps={eps:g}")
            ax.set_xlabel("number of attributes")
            ax.set_ylabel("mean marginal TV")
    axes[0, 0].legend(fontsize=7)
    save_figure(fig, Path(args.out) / "uldp_fig7_attributes.png", dpi=100, announce=True)


def main(argv=None):
    grid = argparse.ArgumentParser(add_help=False)
    grid.add_argument("--attributes", type=int, nargs="+", choices=range(4, 10), default=None)
    grid.add_argument("--epsilons", type=float, nargs="+", default=None)
    grid_args, rest = grid.parse_known_args(argv)
    args = parse_args(__doc__, rest, default_runs=2)
    args.attributes, args.epsilons = grid_args.attributes, grid_args.epsilons
    if args.quick:
        args.runs = 1
    rows = []
    with timer("total") as t:
        run(args, rows)
    meta = {
        "figure": "extension of the ULDP paper's Fig. 7: marginal TV vs number of attributes",
        "seconds": t.seconds,
        "metric": "mean over the attributes of the TV of each attribute's EM estimate",
    }
    save_results(
        "uldp_fig7_attributes",
        rows,
        args,
        columns=[
            "n_attributes",
            "epsilon",
            "mechanism",
            "method",
            "row_epsilon",
            "TV",
            "TV_sd",
            "runs",
            "seconds",
        ],
        meta=meta,
    )
    if args.plot:
        plot(rows, args)
    return rows, meta


if __name__ == "__main__":
    main()
