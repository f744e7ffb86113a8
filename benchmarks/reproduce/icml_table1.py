"""ICML paper, Table 1: Gowalla check-ins under LDP (HR) and block-structured LDP.

Acharya, Bonawitz, Kairouz, Ramage & Sun (ICML 2020), Sec. 7: 3,671,812
Gowalla check-ins over a 125 x 350 grid (25N-50N x 130W-60W rounded to 0.2
degrees: 43,750 locations); the truth is their empirical distribution; blocks
are an (m1 x m2) grid (m1 equal parts in latitude, m2 in longitude); TV error
averaged over 100 runs: LDP 0.591, (5, 7) 0.298, (25, 35) 0.108, (25, 70) 0.082.

Stand-in data: the Gowalla data are not available offline. As in
``examples/plot_checkin_blocks.py``, a check-in-like data set of the same size
on the same grid is generated: 300 "cities" with Zipf(1.3) popularity, each a
Gaussian blob one to a few cells wide, plus 0.5 % uniform rural check-ins.
**Its concentration was picked among a few hand-made settings so that the LDP
row comes out near the paper's 0.591**: that row agrees by construction and is
no evidence; the blocked rows are the test. eps = 1 (the paper's Table 1 does
not restate eps; its synthetic experiments use 1), empirical estimate
projected onto the simplex. ``--quick``: 1/20 of the check-ins (183,590), one
run.
"""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import parse_args, print_trends, pyplot, save_figure, save_results, timer  # noqa: E402

from sklearn_uldp import BlockHadamardResponse, EmpiricalEstimator, HadamardResponse  # noqa: E402
from sklearn_uldp.metrics import total_variation  # noqa: E402
from sklearn_uldp.utils import spawn_generators  # noqa: E402

N_LAT, N_LON = 125, 350
N_CHECKINS = 3_671_812
EPSILON = 1.0
PAPER = {"LDP": 0.591, "(5, 7)": 0.298, "(25, 35)": 0.108, "(25, 70)": 0.082}
SETTINGS = {"LDP": None, "(5, 7)": (5, 7), "(25, 35)": (25, 35), "(25, 70)": (25, 70)}


def make_checkins(n, seed=2020):
    """Check-in cells (row-major over the grid), as in the gallery example."""
    rng = np.random.default_rng(seed)
    n_cities = 300
    city_lat = rng.uniform(5, N_LAT - 5, size=n_cities)
    city_lon = rng.uniform(10, N_LON - 10, size=n_cities)
    popularity = 1.0 / np.arange(1, n_cities + 1) ** 1.3
    popularity /= popularity.sum()
    spread = rng.uniform(0.3, 1.5, size=n_cities)  # blob radius, in cells
    rural = rng.random(n) < 0.005
    city = rng.choice(n_cities, p=popularity, size=n)
    lat = np.where(
        rural, rng.uniform(0, N_LAT, size=n), city_lat[city] + spread[city] * rng.standard_normal(n)
    )
    lon = np.where(
        rural, rng.uniform(0, N_LON, size=n), city_lon[city] + spread[city] * rng.standard_normal(n)
    )
    lat = np.clip(np.round(lat), 0, N_LAT - 1).astype(np.int64)
    lon = np.clip(np.round(lon), 0, N_LON - 1).astype(np.int64)
    return lat * N_LON + lon


def grid_blocks(m1, m2):
    """Block label of every cell for an (m1 x m2) grid of blocks."""
    cells = np.arange(N_LAT * N_LON)
    lat, lon = cells // N_LON, cells % N_LON
    return (lat // (N_LAT // m1)) * m2 + lon // (N_LON // m2)


def main(argv=None):
    args = parse_args(__doc__, argv, default_runs=10)
    n = N_CHECKINS // 20 if args.quick else N_CHECKINS
    runs = 1 if args.quick else args.runs
    k = N_LAT * N_LON
    categories = np.arange(k)
    with timer("data") as t_data:
        cells = make_checkins(n)  # the generator's own seed: the tuned setting
    p_true = np.bincount(cells, minlength=k) / n
    X = cells.reshape(-1, 1)
    streams = iter(spawn_generators(args.seed, len(SETTINGS) * runs))
    rows = []
    with timer("Table 1") as t_all:
        for name, grid in SETTINGS.items():
            if grid is None:
                mech = HadamardResponse(EPSILON, categories=categories)
            else:
                mech = BlockHadamardResponse(
                    EPSILON, blocks=grid_blocks(*grid), categories=categories
                )
            tv = []
            for _ in range(runs):
                mech.set_params(random_state=next(streams)).fit()
                est = EmpiricalEstimator(projection="simplex").fit(mech.transform(X))
                tv.append(total_variation(p_true, est.distribution_))
            rows.append(
                {
                    "(m1, m2)": name,
                    "TV (ours)": float(np.mean(tv)),
                    "TV sd": float(np.std(tv)),
                    "TV (paper)": PAPER[name],
                    "ours / paper": float(np.mean(tv)) / PAPER[name],
                    "bits per report": mech.channel_.report_bits,
                    "runs": runs,
                }
            )
    tvs = [r["TV (ours)"] for r in rows]
    trends = {
        "TV decreases LDP > (5, 7) > (25, 35) > (25, 70)": bool(
            all(a > b for a, b in zip(tvs[:-1], tvs[1:], strict=True))
        ),
        "LDP row agrees by construction (generator tuned on it)": True,
    }
    print_trends("Trends of the paper (Sec. 7):", trends)
    meta = {
        "paper": "Acharya et al. 2020, Sec. 7, Table 1",
        "n": n,
        "cells": k,
        "cells visited": int(np.count_nonzero(p_true)),
        "epsilon": EPSILON,
        "trends": trends,
        "stand-in": "generated check-ins; concentration tuned so the LDP "
        "row is near the paper's 0.591",
        "seconds": {"data": t_data.seconds, "table": t_all.seconds},
    }
    save_results(
        "icml_table1",
        rows,
        args,
        columns=[
            "(m1, m2)",
            "TV (ours)",
            "TV (paper)",
            "ours / paper",
            "TV sd",
            "bits per report",
            "runs",
        ],
        meta=meta,
    )
    if args.plot:
        _plot(rows, args.out)
    return {"rows": rows, "trends": trends}


def _plot(rows, out):
    plt = pyplot()

    fig, ax = plt.subplots(figsize=(5, 3.2))
    x = np.arange(len(rows))
    ax.bar(x - 0.2, [r["TV (ours)"] for r in rows], 0.4, label="ours")
    ax.bar(x + 0.2, [r["TV (paper)"] for r in rows], 0.4, label="paper")
    ax.set_xticks(x, [r["(m1, m2)"] for r in rows])
    ax.set_ylabel("TV error")
    ax.set_title("Check-ins, eps = 1 (cf. Acharya et al. 2020, Table 1)")
    ax.legend()
    save_figure(fig, Path(out) / "icml_table1.png", dpi=120)


if __name__ == "__main__":
    main()
