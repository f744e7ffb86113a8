"""ICML paper, Fig. 2: Hadamard response (LDP) vs block-structured HR, synthetic data.

Acharya, Bonawitz, Kairouz, Ramage & Sun (ICML 2020), Sec. 7: k = 1000,
eps = 1, m in {10, 20, 50, 100} equal blocks of consecutive values,
n = 1000 * 2^i users (i = 0..9), four distributions -- uniform, Geo(0.95),
Zipf(1) (p(i) proportional to 1/(i + 1)) and a randomly permuted Geo(0.95)
that spreads the heavy values over several blocks -- and the TV error, each
point the mean of 10 repetitions. Geo(0.95) is p(i) proportional to 0.95^i,
as in the authors' Hadamard-response code (the paper prints
(1 - lambda)^i lambda, which would put 95 % of the mass on one value). The
estimate is the empirical (unbiased) one projected onto the simplex, as in
that code.

The paper's claims (text): block-structured HR is consistently better than
HR, and the larger m, the better. The plot is read only for these trends.
``--quick``: i in {0, 2, 4}, 2 repetitions.
"""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import cell, parse_args, print_trends, pyplot, save_figure, save_results, timer  # noqa: E402

from sklearn_uldp import BlockHadamardResponse, EmpiricalEstimator, HadamardResponse  # noqa: E402
from sklearn_uldp.metrics import total_variation  # noqa: E402
from sklearn_uldp.utils import spawn_generators  # noqa: E402

K, EPSILON = 1000, 1.0
BLOCK_COUNTS = (10, 20, 50, 100)


def distributions(seed):
    """The four distributions of Fig. 2 (the permutation drawn from ``seed``)."""
    geo = 0.95 ** np.arange(K)
    zipf = 1.0 / np.arange(1, K + 1)
    return {
        "Uniform": np.full(K, 1.0 / K),
        "Geo(0.95)": geo / geo.sum(),
        "Zipf(1)": zipf / zipf.sum(),
        "Geo(0.95), permuted": np.random.default_rng(seed).permutation(geo / geo.sum()),
    }


def make_mechanism(m, random_state):
    """HR for m = 1 (plain LDP), block HR with m equal blocks otherwise."""
    categories = np.arange(K)
    if m == 1:
        return HadamardResponse(EPSILON, categories=categories, random_state=random_state)
    return BlockHadamardResponse(
        EPSILON, blocks=categories // (K // m), categories=categories, random_state=random_state
    )


def main(argv=None):
    args = parse_args(__doc__, argv, default_runs=10)
    exponents = (0, 2, 4) if args.quick else tuple(range(10))
    runs = 2 if args.quick else args.runs
    sizes = [1000 * 2**i for i in exponents]
    settings = (1,) + BLOCK_COUNTS
    dists = distributions(args.seed)
    streams = iter(spawn_generators(args.seed, len(dists) * len(settings) * len(sizes) * runs * 2))
    rows = []
    with timer("Fig. 2") as t_all:
        for name, p in dists.items():
            for m in settings:
                for n in sizes:
                    tv = []
                    for _ in range(runs):
                        X = next(streams).choice(K, p=p, size=(n, 1))
                        mech = make_mechanism(m, next(streams)).fit()
                        est = EmpiricalEstimator(projection="simplex").fit(mech.transform(X))
                        tv.append(total_variation(p, est.distribution_))
                    rows.append(
                        {
                            "distribution": name,
                            "mechanism": "HR (LDP)" if m == 1 else f"block HR m={m}",
                            "m": m,
                            "n": n,
                            "TV": float(np.mean(tv)),
                            "TV sd": float(np.std(tv)),
                            "runs": runs,
                        }
                    )

    def tv(name, m, n):
        return cell(rows, "TV", distribution=name, m=m, n=n)

    # The paper's trends, at every n (and at the largest n alone).
    trends = {}
    for name in dists:
        trends[f"{name}: every block HR beats HR at the largest n"] = all(
            tv(name, m, sizes[-1]) < tv(name, 1, sizes[-1]) for m in BLOCK_COUNTS
        )
        beats = sum(tv(name, m, n) < tv(name, 1, n) for m in BLOCK_COUNTS for n in sizes)
        trends[f"{name}: block HR beats HR at (m, n) points"] = (
            f"{beats}/{len(BLOCK_COUNTS) * len(sizes)}"
        )
        order = sum(
            all(
                tv(name, a, n) >= tv(name, b, n)
                for a, b in zip(settings[:-1], settings[1:], strict=True)
            )
            for n in sizes
        )
        trends[f"{name}: TV decreasing in m (HR, 10, 20, 50, 100) at n points"] = (
            f"{order}/{len(sizes)}"
        )
    print_trends("Trends of the paper (Sec. 7):", trends)
    largest = [
        {
            "distribution": name,
            **{("HR" if m == 1 else f"m={m}"): tv(name, m, sizes[-1]) for m in settings},
        }
        for name in dists
    ]
    meta = {
        "paper": "Acharya et al. 2020, Sec. 7, Fig. 2",
        "k": K,
        "epsilon": EPSILON,
        "sizes": sizes,
        "trends": trends,
        "estimator": "empirical, projected onto the simplex",
        "tv_at_largest_n": largest,
        "seconds": t_all.seconds,
    }
    save_results(
        "icml_fig2",
        rows,
        args,
        columns=["distribution", "mechanism", "n", "TV", "TV sd", "runs"],
        meta=meta,
    )
    save_results(
        "icml_fig2_largest_n",
        largest,
        args,
        columns=["distribution", "HR"] + [f"m={m}" for m in BLOCK_COUNTS],
        meta={"n": sizes[-1], "trends": trends},
    )
    if args.plot:
        _plot(rows, dists, settings, sizes, args.out)
    return {"rows": rows, "sizes": sizes, "trends": trends}


def _plot(rows, dists, settings, sizes, out):
    plt = pyplot()

    fig, axes = plt.subplots(1, 4, figsize=(15, 3.6), sharey=True)
    for ax, name in zip(axes, dists, strict=True):
        for m in settings:
            ys = [cell(rows, "TV", distribution=name, m=m, n=n) for n in sizes]
            ax.loglog(sizes, ys, marker="o", label="HR (LDP)" if m == 1 else f"m = {m}")
        ax.set_title(name)
        ax.set_xlabel("n")
    axes[0].set_ylabel("TV error")
    axes[0].legend(fontsize=8)
    fig.suptitle(f"k = {K}, eps = {EPSILON} (cf. Acharya et al. 2020, Fig. 2)")
    save_figure(fig, Path(out) / "icml_fig2.png", dpi=120)


if __name__ == "__main__":
    main()
