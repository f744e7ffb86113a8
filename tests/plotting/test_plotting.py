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
    np.testing.assert_allclose(line.get_ydata(), rows.sort_values("epsilon")["mean_loss"])
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
    mech = UtilityOptimizedRR(1.0, sensitive=["b", "e"], categories=CATS, random_state=0)
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
    disp = DistributionDisplay.from_estimator(EmpiricalEstimator().fit(rr.fit_transform(X)))
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
    expected = {divmod(int(np.flatnonzero(data.categories == s)[0]), 6) for s in data.sensitive}
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

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
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
    X = np.random.default_rng(0).choice(CATS, p=[0.3, 0.25, 0.2, 0.1, 0.1, 0.05], size=(5000, 1))
    mech = UtilityOptimizedRR(1.0, sensitive=["a", "f"], categories=CATS, random_state=0)
    est = EmpiricalEstimator().fit(mech.fit_transform(X))
    disp = ErrorBarDisplay.from_estimator(est, X, simultaneous=True)
    ci = est.confidence_intervals(0.05, simultaneous=True)
    # rows are drawn top-down in category order; x data are the estimates
    np.testing.assert_allclose(disp.errorbar_.lines[0].get_xdata(), est.distribution_[::-1])
    assert 0.0 <= disp.coverage_ <= 1.0
    assert disp.true_points_ is not None
    labels = [t.get_text() for t in disp.ax_.get_yticklabels()]
    assert labels == CATS[::-1]
    colors = {t.get_text(): t.get_color() for t in disp.ax_.get_yticklabels()}
    assert colors["a"] == "tab:red" and colors["b"] != "tab:red"
    legend = [t.get_text() for t in disp.ax_.get_legend().get_texts()]
    assert any("simultaneous" in t for t in legend)
    sorted_disp = ErrorBarDisplay.from_intervals(est.distribution_, ci, categories=CATS, sort=True)
    assert sorted_disp.coverage_ is None
    np.testing.assert_allclose(
        sorted_disp.errorbar_.lines[0].get_xdata(), np.sort(est.distribution_)
    )
    with pytest.raises(ValueError, match=r"one\s+row per category"):
        ErrorBarDisplay(CATS, est.distribution_, ci[:3]).plot()


def _bbox(artist, draw=True):
    """The artist's extent in pixels, after a draw (tight layout, fonts)."""
    fig = artist.figure
    if draw:
        fig.canvas.draw()
    return artist.get_window_extent(fig.canvas.get_renderer())


def _big_domain(k=122, seed=0):
    rng = np.random.default_rng(seed)
    p_true = rng.dirichlet(np.full(k, 0.5))
    p_est = p_true + rng.normal(0, 0.004, k)
    cats = [f"hospvis_{i}" for i in range(k)]
    sensitive = np.zeros(k, dtype=bool)
    sensitive[[3, int(np.argmax(p_est))]] = True
    return cats, p_true, p_est, sensitive


def test_distribution_display_top_k_aggregates_the_rest():
    cats, p_true, p_est, sensitive = _big_domain()
    disp = DistributionDisplay.from_predictions(
        p_true, p_est, categories=cats, sensitive=sensitive, top_k=20, sort=True
    )
    top = np.argsort(-p_est, kind="stable")[:20]
    rest = np.setdiff1d(np.arange(122), top)
    assert len(disp.bars_) == len(disp.true_bars_) == 21
    np.testing.assert_array_equal(disp.shown_, np.append(top, -1))
    heights = np.array([b.get_height() for b in disp.bars_])
    np.testing.assert_allclose(heights[:20], p_est[top])
    assert heights[0] == p_est.max() and np.all(np.diff(heights[:20]) <= 0)
    np.testing.assert_allclose(heights[20], p_est[rest].sum())
    np.testing.assert_allclose(disp.true_bars_[20].get_height(), p_true[rest].sum())
    labels = [t.get_text() for t in disp.ax_.get_xticklabels()]
    assert labels == [cats[i] for i in top] + ["other (102)"]
    # the marks follow their categories through the reordering
    hatched = [b.get_hatch() == "//" for b in disp.bars_]
    assert hatched == [bool(sensitive[i]) for i in top] + [False]
    assert hatched[0]
    assert "20 most probable of 122" in disp.note_ and "102 others" in disp.note_
    assert disp.ax_.get_legend().get_title().get_text() == disp.note_


def test_distribution_display_top_k_drop_rank_by_true_keeps_order():
    cats, p_true, p_est, _ = _big_domain()
    disp = DistributionDisplay.from_predictions(
        p_true, p_est, categories=cats, top_k=10, rank_by="true", others="drop"
    )
    top = np.sort(np.argsort(-p_true, kind="stable")[:10])  # category order
    np.testing.assert_array_equal(disp.shown_, top)
    assert [t.get_text() for t in disp.ax_.get_xticklabels()] == [cats[i] for i in top]
    np.testing.assert_allclose([b.get_height() for b in disp.true_bars_], p_true[top])
    assert "not shown" in disp.note_
    # sort without top_k: every category, largest first
    disp = DistributionDisplay.from_predictions(p_true, p_est, categories=cats, sort=True)
    assert len(disp.bars_) == 122 and disp.note_ is None
    assert np.all(np.diff([b.get_height() for b in disp.bars_]) <= 0)
    with pytest.raises(ValueError, match="needs the true distribution"):
        DistributionDisplay(cats, p_est).plot(top_k=5, rank_by="true")
    with pytest.raises(ValueError, match="positive integer"):
        DistributionDisplay(cats, p_est).plot(top_k=0)
    with pytest.raises(ValueError, match="aggregate"):
        DistributionDisplay(cats, p_est).plot(top_k=5, others="hide")


def test_distribution_display_122_categories_readable():
    cats, p_true, p_est, sensitive = _big_domain()
    disp = DistributionDisplay.from_predictions(p_true, p_est, categories=cats, sensitive=sensitive)
    width, height = disp.figure_.get_size_inches()
    assert 12 <= width <= 24  # grows with k, within reason
    # neighbouring tick labels do not overlap (they shrink to fit)
    ticks = disp.ax_.get_xticklabels()
    disp.figure_.canvas.draw()
    boxes = [_bbox(t, draw=False) for t in ticks]
    assert all(a.x1 <= b.x0 + 0.5 for a, b in zip(boxes, boxes[1:], strict=False))
    # the legend cannot hide a bar: it is above the axes, inside the figure
    legend = _bbox(disp.ax_.get_legend())
    axes = disp.ax_.get_window_extent()
    assert legend.y0 >= axes.y1 - 0.5
    assert disp.figure_.bbox.contains(legend.x0, legend.y0)
    assert disp.figure_.bbox.contains(legend.x1, legend.y1)
    small = DistributionDisplay.from_predictions(p_true, p_est, categories=cats, figsize=(5, 3))
    np.testing.assert_allclose(small.figure_.get_size_inches(), (5, 3))


def test_distribution_display_passes_kwargs_to_matplotlib():
    X = np.random.default_rng(0).choice(CATS, size=(2000, 1))
    mech = UtilityOptimizedRR(1.0, sensitive=["b"], categories=CATS, random_state=0)
    est = EmpiricalEstimator().fit(mech.fit_transform(X))
    _, ax = plt.subplots()
    disp = DistributionDisplay.from_estimator(
        est,
        X,
        ax=ax,
        top_k=3,
        color="tab:green",
        alpha=0.5,
        true_kw={"color": "black"},
        legend_loc="upper right",
    )
    assert disp.ax_ is ax and disp.figure_ is ax.figure
    assert len(disp.bars_) == 4
    shown = [CATS[i] if i >= 0 else "other" for i in disp.shown_]
    colors = {c: bar.get_facecolor()[:3] for c, bar in zip(shown, disp.bars_, strict=True)}
    plain = next(c for c in shown if c != "b")
    assert matplotlib.colors.same_color(colors[plain], "tab:green")
    if "b" in colors:  # the sensitive category: sensitive_color
        assert matplotlib.colors.same_color(colors["b"], "tab:red")
    assert disp.bars_[0].get_alpha() == 0.5
    assert matplotlib.colors.same_color(disp.true_bars_[0].get_facecolor(), "black")
    assert disp.ax_.get_legend()._loc == 1  # "upper right", as asked
    none = DistributionDisplay.from_estimator(est, legend_loc=None)
    assert none.ax_.get_legend() is None
    # one color per bar is matplotlib's business; the legend copies the first
    colors = ["tab:orange"] + ["tab:gray"] * 5
    disp = DistributionDisplay(CATS, est.distribution_).plot(color=colors)
    swatch = disp.ax_.get_legend().legend_handles[0]
    assert matplotlib.colors.same_color(swatch.get_facecolor(), "tab:orange")


def _dense_results(n_candidates=8):
    import pandas as pd

    rows = [
        {
            "candidate": f"Mechanism{c}",
            "epsilon": eps,
            "mean_loss": (1 + 0.1 * c) / eps ** (0.5 + 0.05 * c),
            "std_loss": 0.05,
        }
        for c in range(n_candidates)
        for eps in [0.1, 0.25, 0.5, 1, 2, 4, 8]
    ]
    return pd.DataFrame(rows)


def test_privacy_utility_legend_does_not_hide_the_curves():
    disp = PrivacyUtilityDisplay(_dense_results(), loss_name="tv", target=0.3).plot()
    legend = _bbox(disp.ax_.get_legend())
    axes = disp.ax_.get_window_extent()
    # outside the axes, hence off every curve...
    assert not legend.overlaps(axes)
    assert legend.x0 >= axes.x1
    # ...and inside the figure, so nothing is cut off
    fig = disp.figure_.bbox
    assert fig.contains(legend.x0, legend.y0) and fig.contains(legend.x1, legend.y1)
    texts = [t.get_text() for t in disp.ax_.get_legend().get_texts()]
    assert texts == [f"Mechanism{c}" for c in range(8)] + ["target tv = 0.3"]
    # and every curve's data is inside the axes
    for line in disp.lines_.values():
        xy = disp.ax_.transData.transform(line.get_xydata())
        assert np.all(xy[:, 0] <= axes.x1 + 0.5)


def test_privacy_utility_display_legend_loc_and_kwargs():
    _, ax = plt.subplots()
    disp = PrivacyUtilityDisplay(_dense_results(3)).plot(
        ax=ax, legend_loc="lower left", linewidth=3, marker="s"
    )
    assert disp.ax_ is ax and disp.figure_ is ax.figure
    assert disp.ax_.get_legend()._loc == 3
    assert all(
        line.get_linewidth() == 3 and line.get_marker() == "s" for line in disp.lines_.values()
    )
    disp = PrivacyUtilityDisplay(_dense_results(3)).plot(legend_loc=None)
    assert disp.ax_.get_legend() is None


# ------------------------------------------------------------ issue 20, item 5
def _pixels(fig):
    """The figure rendered by Agg, as an (height, width, 3) array of 0..255."""
    fig.canvas.draw()
    return np.asarray(fig.canvas.buffer_rgba())[:, :, :3].astype(float)


def _share_unlike(img, fig, artist, color):
    """Share of the pixels inside ``artist`` (1 px in from its edges) unlike ``color``."""
    box = artist.get_window_extent()
    height = img.shape[0]
    rows = slice(int(height - box.y1) + 2, int(height - box.y0) - 2)
    cols = slice(int(box.x0) + 2, int(box.x1) - 2)
    region = img[rows, cols].reshape(-1, 3)
    assert region.size, "the artist is too small to look inside"
    target = 255 * np.asarray(matplotlib.colors.to_rgb(color))
    return float(np.mean(np.abs(region - target).sum(axis=1) > 60))


def _sensitive_estimates():
    X = np.random.default_rng(0).choice(CATS, size=(3000, 1))
    mech = UtilityOptimizedRR(1.0, sensitive=["b", "e"], categories=CATS, random_state=0)
    return X, EmpiricalEstimator().fit(mech.fit_transform(X))


def test_sensitive_bars_are_visibly_hatched():
    # The hatch is drawn in the edge color: a hatch the color of the fill
    # does not show. Inside a sensitive bar a good share of the pixels must
    # differ from its fill; inside the others none.
    X, est = _sensitive_estimates()
    disp = DistributionDisplay.from_estimator(est, X)
    img = _pixels(disp.figure_)
    for bar, cat in zip(disp.bars_, CATS, strict=True):
        share = _share_unlike(img, disp.figure_, bar, bar.get_facecolor()[:3])
        if cat in ("b", "e"):
            assert bar.get_hatch() == "//" and share > 0.1, (cat, share)
        else:
            assert share < 0.02, (cat, share)
    # Keeping the estimate's color, the hatch still stands out on it.
    disp = DistributionDisplay.from_estimator(est, sensitive_color=None)
    img = _pixels(disp.figure_)
    bar = disp.bars_[CATS.index("b")]
    assert matplotlib.colors.same_color(bar.get_facecolor(), disp.bars_[0].get_facecolor())
    assert _share_unlike(img, disp.figure_, bar, bar.get_facecolor()[:3]) > 0.1


def test_estimate_plot_of_the_command_line_is_visibly_hatched():
    # `sklearn-uldp estimate --plot` draws with DistributionDisplay and fills
    # the sensitive bars red.
    from sklearn_uldp.cli._estimate import estimates_figure

    _, est = _sensitive_estimates()
    fig = estimates_figure({"city": est})
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    img = _pixels(fig)
    bars = fig.axes[0].patches[: len(CATS)]
    shares = [_share_unlike(img, fig, bar, bar.get_facecolor()[:3]) for bar in bars]
    assert [s > 0.1 for s in shares] == [c in ("b", "e") for c in CATS], shares


def _searched(eps):
    import pandas as pd

    rows = [
        {"candidate": name, "epsilon": e, "mean_loss": (1 + c) / e, "std_loss": 0.01}
        for c, name in enumerate(["uRR", "RR"])
        for e in eps
    ]
    return pd.DataFrame(rows)


@pytest.mark.parametrize(
    "eps",
    [
        [0.5, 0.75, 1, 1.5, 2, 3, 4],  # within a decade: minor tick labels crowd
        list(np.round(np.geomspace(0.1, 10, 25), 3)),  # more budgets than labels fit
        [1, 2, 3, 4, 5, 6, 7, 8],
    ],
    ids=["decade", "dense", "linear-ish"],
)
@pytest.mark.parametrize("log", [True, False])
def test_privacy_utility_ticks_mark_the_searched_epsilons_without_overlap(eps, log):
    disp = PrivacyUtilityDisplay(_searched(eps)).plot(log=log)
    fig, ax = disp.figure_, disp.ax_
    fig.canvas.draw()
    np.testing.assert_allclose(ax.get_xticks(), np.unique(eps))
    labels = [
        t
        for t in ax.get_xticklabels(minor=False) + ax.get_xticklabels(minor=True)
        if t.get_visible() and t.get_text()
    ]
    assert len(labels) >= min(len(eps), 4)
    boxes = sorted((t.get_window_extent() for t in labels), key=lambda b: b.x0)
    for left, right in zip(boxes, boxes[1:], strict=False):
        assert left.x1 <= right.x0, "x tick labels overlap"
    texts = {t.get_text() for t in labels}
    assert texts <= {f"{e:g}" for e in eps}
    assert f"{eps[0]:g}" in texts


def test_error_bar_legend_markers_are_drawn_on_the_points():
    # The "sensitive" legend entry is a red dot: the sensitive points must
    # show red (not hidden under the errorbar's own blue markers).
    _, est = _sensitive_estimates()
    disp = ErrorBarDisplay.from_estimator(est)
    img = _pixels(disp.figure_)
    ax = disp.ax_
    handles = ax.get_legend().legend_handles
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    sensitive = dict(zip(labels, handles, strict=True))["sensitive"]
    red = 255 * np.asarray(matplotlib.colors.to_rgb(sensitive.get_markerfacecolor()))
    rows = {t.get_text(): y for t, y in zip(ax.get_yticklabels(), ax.get_yticks(), strict=True)}
    height = img.shape[0]
    for cat, p in zip(CATS, est.distribution_, strict=True):
        x, y = ax.transData.transform((p, rows[cat]))
        pixel = img[int(round(height - y)), int(round(x))]
        is_red = np.abs(pixel - red).sum() < 60
        assert is_red == (cat in ("b", "e")), (cat, pixel)
