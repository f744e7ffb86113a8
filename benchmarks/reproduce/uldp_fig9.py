"""ULDP paper, Fig. 9: POI distribution vs true distribution, for "home" and "workplace".

Murakami & Kawamoto (USENIX Security 2019), Sec. 6.2, Fig. 9 shows, over the
25 x 25 Manhattan grid, the distribution of POIs tagged "home" (resp.
"workplace"), the background knowledge of case (II), next to the true
distribution pi_k of the users at home (resp. at work). The figure has no
numbers; its message is that the POI distribution resembles pi_k without
being equal to it. Table 1 gives a number for it indirectly: the second term
of Theorem 1 divided by the bot mass is the mass-weighted mean
l1(pi_hat_k, pi_k). With the paper's bot mass 24,572 / 359,054 = 0.0684,
Table 1's second terms imply about 7.34e-2 / 0.0684 = 1.07 for case (I) (no
knowledge: pi_hat_k proportional to r over X_N) and 2.96e-2 / 0.0684 = 0.43
for case (II) (the POI distribution).

Stand-in data: :func:`sklearn_uldp.datasets.make_personalized_locations`
(see ``uldp_fig8_fig13_table1.py``); its "POI-like" background is the
residential (business) distribution perturbed cell by cell with log-normal
noise. The script prints l1(pi_hat_k, pi_k) per tag for cases (I) and (II)
(case (I) computed with the true r in place of r_hat) and the
weighted mean beside the paper's implied values, and draws the maps with
``--plot``. ``--quick`` is the full run (it takes a second or two).
"""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import parse_args, print_trends, pyplot, save_figure, save_results, timer  # noqa: E402

from sklearn_uldp.datasets import make_personalized_locations  # noqa: E402
from sklearn_uldp.metrics import l1_loss  # noqa: E402

N_USERS = 179_527
K = 625
#: l1(pi_hat, pi) implied by the paper's Table 1 (second term / bot mass).
PAPER_BOT_MASS = (5_040 + 19_532) / 359_054
PAPER_IMPLIED = {"(I)": 7.34e-2 / PAPER_BOT_MASS, "(II)": 2.96e-2 / PAPER_BOT_MASS}


def main(argv=None):
    args = parse_args(__doc__, argv, default_runs=1)
    # Generating the full-size data takes under a second; a smaller n would
    # make pi_k itself a noisy histogram, so --quick keeps the full size.
    n_users = N_USERS
    with timer("data"):
        data = make_personalized_locations(n_users, random_state=args.seed)
    r = data.intermediate_distribution
    sensitive = np.isin(data.categories, data.sensitive)
    # Case (I): pi_hat proportional to r over the non-sensitive cells.
    no_knowledge = np.where(sensitive, 0.0, r[:K])
    no_knowledge = no_knowledge / no_knowledge.sum()
    rows = []
    weighted = {"(I)": 0.0, "(II)": 0.0}
    for b, tag in enumerate(data.tags):
        truth = data.tag_distributions[tag]
        gaps = {"(I)": l1_loss(truth, no_knowledge), "(II)": l1_loss(truth, data.background[tag])}
        for case, gap in gaps.items():
            weighted[case] += r[K + b] * gap
        rows.append(
            {
                "tag": tag,
                "r(bot)": r[K + b],
                "l1(pi_hat, pi) (I) none": gaps["(I)"],
                "l1(pi_hat, pi) (II) POI": gaps["(II)"],
                "corr(POI, pi)": float(np.corrcoef(truth, data.background[tag])[0, 1]),
            }
        )
    mass = r[K:].sum()
    rows.append(
        {
            "tag": "weighted mean (ours)",
            "r(bot)": mass,
            "l1(pi_hat, pi) (I) none": weighted["(I)"] / mass,
            "l1(pi_hat, pi) (II) POI": weighted["(II)"] / mass,
        }
    )
    rows.append(
        {
            "tag": "implied by the paper's Table 1",
            "r(bot)": PAPER_BOT_MASS,
            "l1(pi_hat, pi) (I) none": PAPER_IMPLIED["(I)"],
            "l1(pi_hat, pi) (II) POI": PAPER_IMPLIED["(II)"],
        }
    )
    trends = {
        "POI closer to pi than no knowledge, for both tags": all(
            row["l1(pi_hat, pi) (II) POI"] < row["l1(pi_hat, pi) (I) none"] for row in rows[:2]
        ),
        "POI distribution differs from pi (l1 > 0)": all(
            row["l1(pi_hat, pi) (II) POI"] > 0 for row in rows[:2]
        ),
    }
    print_trends("The paper's message (Fig. 9):", trends)
    save_results(
        "uldp_fig9",
        rows,
        args,
        columns=[
            "tag",
            "r(bot)",
            "l1(pi_hat, pi) (I) none",
            "l1(pi_hat, pi) (II) POI",
            "corr(POI, pi)",
        ],
        meta={
            "paper": "Murakami & Kawamoto 2019, Sec. 6.2, Fig. 9",
            "n_users": n_users,
            "trends": trends,
        },
    )
    if args.plot:
        _plot(data, args.out)
    return {"rows": rows, "trends": trends}


def _plot(data, out):
    plt = pyplot()

    fig, axes = plt.subplots(2, 2, figsize=(7, 7))
    for i, (tag, label) in enumerate((("home", "home"), ("work", "workplace"))):
        panels = (
            ("POI distribution", data.background[tag]),
            ("true distribution", data.tag_distributions[tag]),
        )
        vmax = max(p.max() for _, p in panels)
        for j, (title, p) in enumerate(panels):
            ax = axes[i, j]
            ax.imshow(p.reshape(data.shape), origin="lower", cmap="Reds", vmin=0, vmax=vmax)
            ax.set_title(f"{title} ({label})", fontsize=9)
            ax.set_xticks([])
            ax.set_yticks([])
    fig.suptitle("cf. Murakami & Kawamoto 2019, Fig. 9")
    save_figure(fig, Path(out) / "uldp_fig9.png", dpi=120)


if __name__ == "__main__":
    main()
