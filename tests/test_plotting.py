"""Displays (matplotlib Agg)."""

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from sklearn_uldp import (  # noqa: E402
    EmpiricalEstimator,
    RandomizedResponse,
    UtilityOptimizedRAPPOR,
    UtilityOptimizedRR,
)
from sklearn_uldp.datasets import make_location_grid  # noqa: E402
from sklearn_uldp.model_selection import PrivacyUtilitySearchCV  # noqa: E402
from sklearn_uldp.plotting import (  # noqa: E402
    DistributionDisplay,
    ErrorBarDisplay,
    GridHeatmapDisplay,
    PrivacyUtilityDisplay,
)

CATS = list("abcdef")


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def test_privacy_utility_display_from_search():
    X = np.random.default_rng(0).choice(CATS, size=(2000, 1))
    search = PrivacyUtilitySearchCV(
        UtilityOptimizedRR(sensitive=["a"], categories=CATS),
        {
            "mechanism": [
                UtilityOptimizedRR(sensitive=["a"], categories=CATS),
                UtilityOptimizedRAPPOR(sensitive=["a"], categories=CATS),
            ],
            "mechanism__epsilon": [0.5, 1.0, 2.0],
        },
        n_repeats=2,
        target=0.05,
        random_state=0,
    ).fit(X)
    disp = PrivacyUtilityDisplay.from_search(search)
    assert set(disp.lines_) == {"UtilityOptimizedRR", "UtilityOptimizedRAPPOR"}
    line = disp.lines_["UtilityOptimizedRR"]
    np.testing.assert_allclose(line.get_xdata(), [0.5, 1.0, 2.0])
    rows = search.cv_results_[search.cv_results_["candidate"] == "UtilityOptimizedRR"]
    np.testing.assert_allclose(
        line.get_ydata(), rows.sort_values("epsilon")["mean_loss"]
    )
    assert disp.ax_.get_xscale() == "log" and disp.ax_.get_yscale() == "log"
    assert disp.target_line_.get_ydata()[0] == 0.05
    assert disp.ax_.get_ylabel().startswith("tv")
    _, ax = plt.subplots()
    disp2 = PrivacyUtilityDisplay.from_search(search, ax=ax, target=None, log=False)
    assert disp2.ax_ is ax and disp2.target_line_ is None


def test_display_errors():
    import pandas as pd

    with pytest.raises(ValueError, match="lack the columns"):
        PrivacyUtilityDisplay(pd.DataFrame({"epsilon": [1.0]})).plot()
    with pytest.raises(ValueError, match="not fitted"):
        PrivacyUtilityDisplay.from_search(object())
    with pytest.raises(ValueError, match="one value per category"):
        DistributionDisplay(["a", "b"], [1.0]).plot()
    with pytest.raises(ValueError, match="cells"):
        GridHeatmapDisplay(np.ones(5), (2, 3)).plot()


def test_distribution_display_marks_sensitive():
    X = np.random.default_rng(0).choice(CATS, size=(3000, 1))
    mech = UtilityOptimizedRR(
        1.0, sensitive=["b", "e"], categories=CATS, random_state=0
    )
    est = EmpiricalEstimator().fit(mech.fit_transform(X))
    disp = DistributionDisplay.from_estimator(est, X)
    hatched = [bar.get_hatch() == "//" for bar in disp.bars_]
    assert hatched == [c in ("b", "e") for c in CATS]
    red = [t.get_color() == "tab:red" for t in disp.ax_.get_xticklabels()]
    assert red == hatched
    heights = [bar.get_height() for bar in disp.bars_]
    np.testing.assert_allclose(heights, est.distribution_)
    assert disp.true_bars_ is not None
    np.testing.assert_allclose(sum(b.get_height() for b in disp.true_bars_), 1.0)
    labels = [t.get_text() for t in disp.ax_.get_legend().get_texts()]
    assert labels == ["true", "EmpiricalEstimator", "sensitive"]
    # LDP mechanism: nothing marked.
    rr = RandomizedResponse(1.0, categories=CATS, random_state=0)
    disp = DistributionDisplay.from_estimator(
        EmpiricalEstimator().fit(rr.fit_transform(X))
    )
    assert not any(bar.get_hatch() for bar in disp.bars_)
    assert disp.true_bars_ is None


def test_grid_heatmap_from_estimator():
    data = make_location_grid(5000, shape=(5, 6), n_sensitive=3, random_state=0)
    mech = UtilityOptimizedRR(
        2.0, sensitive=list(data.sensitive), categories=data.categories, random_state=0
    )
    est = EmpiricalEstimator(projection="simplex").fit(mech.fit_transform(data.frame))
    disp = GridHeatmapDisplay.from_estimator(est, data.shape, title="cells")
    np.testing.assert_allclose(disp.image_.get_array(), est.distribution_.reshape(5, 6))
    assert len(disp.outlines_) == 3
    cells = {(int(r.get_y() + 0.5), int(r.get_x() + 0.5)) for r in disp.outlines_}
    expected = {
        divmod(int(np.flatnonzero(data.categories == s)[0]), 6) for s in data.sensitive
    }
    assert cells == expected
    assert disp.ax_.get_title() == "cells"


def test_matplotlib_imported_lazily():
    import subprocess
    import sys

    code = (
        "import sys, sklearn_uldp.plotting, sklearn_uldp.model_selection; "
        "print('matplotlib' in sys.modules)"
    )
    import os

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root)
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert out.stdout.strip() == "False", out.stderr


def test_error_bar_display_from_estimator():
    X = np.random.default_rng(0).choice(CATS, p=[.3, .25, .2, .1, .1, .05], size=(5000, 1))
    mech = UtilityOptimizedRR(1.0, sensitive=["a", "f"], categories=CATS, random_state=0)
    est = EmpiricalEstimator().fit(mech.fit_transform(X))
    disp = ErrorBarDisplay.from_estimator(est, X, simultaneous=True)
    ci = est.confidence_intervals(0.05, simultaneous=True)
    # rows are drawn top-down in category order; x data are the estimates
    np.testing.assert_allclose(disp.errorbar_.lines[0].get_xdata(),
                               est.distribution_[::-1])
    assert 0.0 <= disp.coverage_ <= 1.0
    assert disp.true_points_ is not None
    labels = [t.get_text() for t in disp.ax_.get_yticklabels()]
    assert labels == CATS[::-1]
    colors = {t.get_text(): t.get_color() for t in disp.ax_.get_yticklabels()}
    assert colors["a"] == "tab:red" and colors["b"] != "tab:red"
    legend = [t.get_text() for t in disp.ax_.get_legend().get_texts()]
    assert any("simultaneous" in t for t in legend)
    sorted_disp = ErrorBarDisplay.from_intervals(
        est.distribution_, ci, categories=CATS, sort=True)
    assert sorted_disp.coverage_ is None
    np.testing.assert_allclose(sorted_disp.errorbar_.lines[0].get_xdata(),
                               np.sort(est.distribution_))
    with pytest.raises(ValueError, match=r"one\s+row per category"):
        ErrorBarDisplay(CATS, est.distribution_, ci[:3]).plot()
