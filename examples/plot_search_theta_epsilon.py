"""
=======================================================
Choosing the mechanism, theta and epsilon with a search
=======================================================

Utility always improves as epsilon grows, so there is no "best epsilon".
The questions a data scientist really has are:

(a) at a fixed epsilon, which mechanism / theta / estimator is most accurate?
(b) what is the smallest epsilon that reaches a target accuracy?
(c) what does the whole privacy-utility curve look like?

:class:`~sklearn_uldp.model_selection.PrivacyUtilitySearchCV` answers all
three on a simulation (the search knows the true data). We use a synthetic
10 x 10 location grid with 6 sensitive cells (a small version of the ULDP
paper's location experiment) and compare RR, uRR and uRAP with its default
theta and with the theta that minimizes the closed-form expected l2 loss
(:func:`~sklearn_uldp.model_selection.optimal_theta`).
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.pipeline import Pipeline

from sklearn_uldp import (
    EmpiricalEstimator,
    RandomizedResponse,
    UtilityOptimizedRAPPOR,
    UtilityOptimizedRR,
)
from sklearn_uldp.datasets import make_location_grid
from sklearn_uldp.mechanisms import basic_rappor_theta
from sklearn_uldp.model_selection import (
    PrivacyUtilitySearchCV,
    optimal_theta,
    urap_expected_l2_loss,
)
from sklearn_uldp.plotting import PrivacyUtilityDisplay

data = make_location_grid(20_000, shape=(10, 10), n_sensitive=6, random_state=0)
cats, sens = data.categories, list(data.sensitive)
mask = np.isin(cats, sens)
X = data.frame

# %%
# The optimal theta of uRAP
# -------------------------
# The expected squared l2 loss of uRAP's empirical estimator is a closed-form
# function of theta (mathematics §2.5). Its minimizer depends on epsilon and on the
# prior; here a uniform prior.
thetas = np.linspace(0.05, 0.95, 181)
fig, ax = plt.subplots(figsize=(6, 4))
for eps in (0.5, 1.0, 2.0, 4.0):
    loss = urap_expected_l2_loss(thetas, eps, mask, n=len(X))
    (line,) = ax.plot(thetas, loss, label=f"epsilon = {eps:g}")
    best = optimal_theta(eps, mask)
    ax.plot(
        best,
        urap_expected_l2_loss(best, eps, mask, n=len(X)),
        "o",
        color=line.get_color(),
    )
    ax.axvline(basic_rappor_theta(eps), color=line.get_color(), linestyle=":")
    print(f"epsilon={eps:g}: optimal theta {best:.3f} (default {basic_rappor_theta(eps):.3f})")
ax.set_yscale("log")
ax.set_xlabel("theta")
ax.set_ylabel("expected l2 loss")
ax.set_title("uRAP: dots = optimal theta, dotted = default theta")
ax.legend()
fig.tight_layout()

# %%
# The search
# ----------
# Each candidate is privatized ``n_repeats`` times with independent noise.
# uRAP's theta is a parameter like any other; the optimal theta depends on
# epsilon, so it gets one grid per epsilon.
epsilons = [0.5, 1.0, 2.0, float(np.log(len(cats)))]
pipe = Pipeline(
    [
        ("mechanism", RandomizedResponse(categories=cats)),
        ("estimator", EmpiricalEstimator(projection="simplex")),
    ]
)
grid = [
    {
        "mechanism": [
            RandomizedResponse(categories=cats),
            UtilityOptimizedRR(sensitive=sens, categories=cats),
            UtilityOptimizedRAPPOR(sensitive=sens, categories=cats),
        ],
        "mechanism__epsilon": epsilons,
    }
] + [
    {
        "mechanism": [
            UtilityOptimizedRAPPOR(
                sensitive=sens,
                categories=cats,
                theta=round(optimal_theta(eps, mask), 4),
            )
        ],
        "mechanism__epsilon": [eps],
    }
    for eps in epsilons
]

search = PrivacyUtilitySearchCV(
    pipe, grid, scoring="tv", n_repeats=3, target=0.05, random_state=0
).fit(X)
best = search.best_candidates()[["candidate", "mean_loss", "std_loss"]]
print(best)
print(f"smallest epsilon with TV <= 0.05: {search.target_epsilon_}")

# %%
# As in :class:`~sklearn.model_selection.GridSearchCV`, ``best_params_``,
# ``best_score_`` (minus the loss) and ``best_estimator_`` (refitted on the
# whole data) describe the chosen candidate: with a ``target``, the best one
# at the smallest epsilon reaching it, not the most accurate of the grid
# (which is always the least private).
print(
    search.best_params_["mechanism"].__class__.__name__,
    search.best_params_.get("mechanism__epsilon"),
    round(-search.best_score_, 4),
)
print(search.cv_results_[["epsilon", "candidate", "mean_test_score", "rank_test_score"]].head())

# %%
# The "optimal" theta minimizes the expected l2 loss of the *unbiased*
# estimator under a uniform prior; the search scores TV after projection onto
# the simplex on the real (non-uniform) data, so it can rank candidates
# differently -- which is exactly why a simulation search is useful.
#
# The optimal theta is specific to each epsilon, so its candidates have
# different labels; group them as one curve before plotting.
results = search.cv_results_.copy()
results.loc[results["candidate"].str.startswith("UtilityOptimizedRAPPOR(theta="), "candidate"] = (
    "UtilityOptimizedRAPPOR(theta=optimal)"
)
disp = PrivacyUtilityDisplay(results, loss_name="tv", target=0.05).plot()
disp.ax_.set_title("privacy-utility curve (10 x 10 grid, 6 sensitive cells)")
plt.show()
