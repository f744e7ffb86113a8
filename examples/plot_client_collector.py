"""
=====================================================
Client and collector: privatize here, estimate there
=====================================================

In a deployment the users' devices (the *clients*) privatize their own data
and send only reports; the *collector* never sees a true value. All the
collector needs besides the reports is the mechanisms' **public spec**: the
domain, the sensitive set, epsilon and theta. This example splits the two
sides through files:

* the client side privatizes a location column (a 12 x 12 grid with 8
  sensitive cells, e.g. hospitals) with uRR and writes ``reports.csv`` and
  ``spec.json``;
* the collector side reads the spec back with
  :meth:`Channel.from_json <sklearn_uldp.mechanisms.Channel.from_json>` and
  estimates the distribution from the reports, chunk by chunk
  (``partial_fit``: the result equals a one-shot fit);
* the same, with the command line: ``sklearn-uldp privatize`` and
  ``sklearn-uldp estimate``.
"""

import json
import os
import shutil
import tempfile

import matplotlib.pyplot as plt
import pandas as pd

from sklearn_uldp import EmpiricalEstimator, UtilityOptimizedRR
from sklearn_uldp.cli import main as cli
from sklearn_uldp.compose import load_spec
from sklearn_uldp.datasets import make_location_grid
from sklearn_uldp.mechanisms import Channel
from sklearn_uldp.metrics import total_variation
from sklearn_uldp.plotting import GridHeatmapDisplay

workdir = tempfile.mkdtemp(prefix="uldp_")
data = make_location_grid(50_000, shape=(12, 12), n_sensitive=8, random_state=0)

# %%
# Client side
# -----------
# In reality each device runs ``transform`` on its own value; here we
# privatize the whole column at once. The spec holds nothing private.
mechanism = UtilityOptimizedRR(
    epsilon=2.0,
    sensitive=list(data.sensitive),
    categories=data.categories,
).fit()
reports = mechanism.transform(data.frame.to_numpy())
pd.DataFrame({"cell": reports.ravel()}).to_csv(os.path.join(workdir, "reports.csv"), index=False)
with open(os.path.join(workdir, "spec.json"), "w") as fh:
    fh.write(mechanism.channel_.to_json())
print("client wrote:", sorted(os.listdir(workdir)))

# %%
# Collector side
# --------------
with open(os.path.join(workdir, "spec.json")) as fh:
    spec = Channel.from_json(fh.read())
print("spec:", spec)
collector = EmpiricalEstimator(projection="simplex", mechanism=spec)
for chunk in pd.read_csv(os.path.join(workdir, "reports.csv"), chunksize=10_000):
    collector.partial_fit(chunk[["cell"]])
tv = total_variation(data.empirical, collector.distribution_)
print(f"{collector.n_reports_} reports, TV to the truth = {tv:.4f}")

fig, axes = plt.subplots(1, 2, figsize=(10, 4))
GridHeatmapDisplay(data.empirical, data.shape, sensitive=spec.sensitive_mask).plot(
    ax=axes[0], title="true"
)
GridHeatmapDisplay.from_estimator(
    collector, data.shape, ax=axes[1], title="estimated from uRR reports"
)
fig.tight_layout()

# %%
# The same with the command line
# ------------------------------
# ``privatize`` reads the table in chunks and writes the reports and a
# multi-column spec; ``estimate`` reads both and writes a distribution CSV.
table = os.path.join(workdir, "locations.csv")
data.frame.to_csv(table, index=False)
with open(os.path.join(workdir, "config.json"), "w") as fh:
    json.dump(
        {
            "columns": {
                "cell": {
                    "mechanism": "urr",
                    "epsilon": 2.0,
                    "categories": list(data.categories),
                    "sensitive": list(data.sensitive),
                }
            }
        },
        fh,
    )
cli(
    [
        "privatize",
        table,
        "-o",
        os.path.join(workdir, "cli_reports.csv"),
        "--config",
        os.path.join(workdir, "config.json"),
        "--no-progress",
    ]
)
cli(
    [
        "estimate",
        os.path.join(workdir, "cli_reports.csv"),
        "--spec",
        os.path.join(workdir, "cli_reports.csv.spec.json"),
        "-o",
        os.path.join(workdir, "distribution.csv"),
        "--no-progress",
    ]
)
# The spec file written by the command line (and by
# ``DataFramePrivatizer.save_spec``) loads back as one channel per column.
print(load_spec(os.path.join(workdir, "cli_reports.csv.spec.json")))
estimate = pd.read_csv(os.path.join(workdir, "distribution.csv"))
print(estimate.head())
print(f"TV (command line) = {total_variation(data.empirical, estimate['estimate'].to_numpy()):.4f}")
shutil.rmtree(workdir)
plt.show()
