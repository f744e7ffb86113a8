"""The displays' artists: legends drawn as the bars are, legends inside the
figure, readable long labels, heatmap ticks at the cells (matplotlib Agg)."""

import numpy as np
import pandas as pd
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.colors import to_rgba  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from sklearn_uldp.plotting import (  # noqa: E402
    DistributionDisplay,
    GridHeatmapDisplay,
    PrivacyUtilityDisplay,
)

JOB_TITLES = [
    "registered nurse",
    "software developer",
    "customer service representative",
    "elementary school teacher",
    "retail salesperson",
    "administrative assistant",
    "truck driver (heavy and tractor-trailer)",
    "accountant and auditor",
    "construction laborer",
    "medical assistant",
    "marketing manager",
    "janitor and building cleaner",
]


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _handles(disp):
    return {h.get_label(): h for h in disp.legend_.legend_handles}


def _looks(patch):
    hatch = patch.get_hatch() or ""
    edge = to_rgba(patch.get_edgecolor()) if hatch else None
    return to_rgba(patch.get_facecolor()), hatch, edge


@pytest.mark.parametrize("with_true", [True, False])
def test_legend_swatches_are_drawn_as_the_bars(with_true):
    # The first category is sensitive: its bar was copied into the
    # estimate's swatch, red where every other estimate bar is blue.
    sensitive = [True, False, False, True]
    disp = DistributionDisplay.from_predictions(
        [0.4, 0.3, 0.2, 0.1] if with_true else None,
        [0.35, 0.32, 0.23, 0.1],
        categories=["divorced", "married", "single", "widowed"],
        sensitive=sensitive,
    )
    handles = _handles(disp)
    bars = disp.bars_.patches
    assert _looks(handles["estimate"]) == _looks(bars[1]) == _looks(bars[2])
    assert _looks(handles["sensitive"]) == _looks(bars[0]) == _looks(bars[3])
    assert handles["sensitive"].get_hatch() == "//" and not handles["estimate"].get_hatch()
    assert to_rgba(handles["estimate"].get_facecolor()) == to_rgba("tab:blue")
    # Hatching marks the sensitive categories in every series of bars.
    series = [disp.bars_] + ([disp.true_bars_] if with_true else [])
    for container in series:
        hatched = [bool(p.get_hatch()) for p in container.patches]
        assert hatched == sensitive
    if with_true:
        true = disp.true_bars_.patches
        assert _looks(handles["true"]) == _looks(true[1])
    labels = disp.ax_.get_xticklabels()
    assert [to_rgba(t.get_color()) == to_rgba("tab:red") for t in labels] == sensitive


def test_legend_swatch_keeps_the_bars_own_color_and_alpha():
    disp = DistributionDisplay.from_predictions(
        None,
        [0.5, 0.5],
        categories=["a", "b"],
        sensitive=[True, False],
        color="tab:green",
        alpha=0.5,
        sensitive_color=None,
    )
    handles = _handles(disp)
    assert _looks(handles["estimate"]) == _looks(disp.bars_.patches[1])
    assert to_rgba(handles["sensitive"].get_facecolor()) == to_rgba("tab:green", 0.5)
    assert handles["sensitive"].get_hatch() == "//"


def _inside(fig, artist, slack=1.0):
    fig.draw_without_rendering()
    box, edge = artist.get_window_extent(), fig.bbox
    return (
        box.x0 >= edge.x0 - slack
        and box.y0 >= edge.y0 - slack
        and box.x1 <= edge.x1 + slack
        and box.y1 <= edge.y1 + slack
    )


def _results():
    names = ["UtilityOptimizedRR", "UtilityOptimizedRAPPOR(theta='optimal')", "RandomizedResponse"]
    return pd.DataFrame(
        {
            "candidate": np.repeat(names, 4),
            "epsilon": [0.5, 1, 2, 4] * 3,
            "mean_loss": [0.09, 0.05, 0.02, 0.008, 0.1, 0.06, 0.03, 0.01, 0.3, 0.2, 0.1, 0.05],
            "std_loss": [0.01] * 12,
        }
    )


@pytest.mark.parametrize("axes", ["created", "Figure", "pyplot"])
def test_the_privacy_utility_legend_is_inside_the_figure(axes):
    # The command line's `search --plot` draws on Figure().subplots(): the
    # legend, outside the axes, was cut at the figure's right edge.
    ax = {"created": None, "Figure": Figure().subplots(), "pyplot": plt.subplots()[1]}[axes]
    disp = PrivacyUtilityDisplay(_results(), loss_name="tv", target=0.02).plot(ax=ax)
    assert _inside(disp.figure_, disp.legend_)
    assert _inside(disp.figure_, disp.ax_)  # the curves are still drawn
    # the legend does not cover the axes
    box, legend = disp.ax_.get_window_extent(), disp.legend_.get_window_extent()
    assert legend.x0 >= box.x1


def test_the_command_lines_search_plot_keeps_its_legend(tmp_path):
    from sklearn_uldp import RandomizedResponse, UtilityOptimizedRR
    from sklearn_uldp.cli._search import _plot_search
    from sklearn_uldp.model_selection import PrivacyUtilitySearchCV

    cats = ["married", "single", "divorced", "widowed"]
    X = np.random.default_rng(0).choice(cats, size=(1500, 1))
    search = PrivacyUtilitySearchCV(
        RandomizedResponse(categories=cats),
        {
            "mechanism": [
                RandomizedResponse(categories=cats),
                UtilityOptimizedRR(sensitive=["divorced"], categories=cats),
            ],
            "mechanism__epsilon": [0.5, 2.0],
        },
        n_repeats=1,
        random_state=0,
    ).fit(X)
    seen = {}
    original = PrivacyUtilityDisplay.plot

    def spy(self, *args, **kwargs):
        seen["disp"] = original(self, *args, **kwargs)
        return seen["disp"]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(PrivacyUtilityDisplay, "plot", spy)
        _plot_search(search, tmp_path / "curve.png", tmp_path / "curve.png")
    disp = seen["disp"]
    assert _inside(disp.figure_, disp.legend_)


def test_the_distribution_legend_above_stays_inside_a_given_figure():
    fig = Figure(figsize=(5, 2.5))
    ax = fig.subplots()
    ax.set_position([0.1, 0.1, 0.85, 0.88])  # no room above
    disp = DistributionDisplay.from_predictions(
        [0.5, 0.3, 0.2], [0.45, 0.35, 0.2], categories=list("abc"), sensitive=[0, 0, 1], ax=ax
    )
    assert _inside(fig, disp.legend_)


def test_long_labels_are_shortened_by_the_documented_rule():
    from sklearn_uldp.plotting._displays import ELLIPSIS, short_labels

    p = np.linspace(0.15, 0.04, 12)
    p /= p.sum()
    disp = DistributionDisplay.from_predictions(
        p, p, categories=JOB_TITLES, sensitive=[False] * 11 + [True]
    )
    texts = [t.get_text() for t in disp.ax_.get_xticklabels()]
    assert texts == short_labels(JOB_TITLES, 20)
    assert max(len(t) for t in texts) <= 20
    assert texts[0] == "registered nurse"  # short ones whole
    assert texts[6] == "truck driver" + ELLIPSIS + "ailer)"
    assert {t.get_rotation() for t in disp.ax_.get_xticklabels()} == {45.0}
    # The bars keep most of the figure: the labels took two thirds of it.
    assert disp.ax_.get_position().height > 0.5
    whole = DistributionDisplay.from_predictions(p, p, categories=JOB_TITLES, max_label_length=None)
    assert [t.get_text() for t in whole.ax_.get_xticklabels()] == JOB_TITLES
    with pytest.raises(ValueError, match="max_label_length"):
        DistributionDisplay.from_predictions(p, p, categories=JOB_TITLES, max_label_length=2)


def test_shortened_labels_stay_distinct_and_short_ones_horizontal():
    from sklearn_uldp.plotting._displays import short_labels

    names = ["a very long category name (day)", "a very long category name (day) 2", "x"]
    short = short_labels(names, 12)
    assert len(set(short)) == 3
    disp = DistributionDisplay.from_predictions(None, [0.2, 0.3, 0.5], categories=["a", "b", "c"])
    assert {t.get_rotation() for t in disp.ax_.get_xticklabels()} == {0.0}


def test_heatmap_ticks_are_the_cells_and_can_be_named():
    p = np.full(12, 1 / 12)
    disp = GridHeatmapDisplay(p, (3, 4)).plot()
    disp.figure_.draw_without_rendering()
    for axis, n in ((disp.ax_.xaxis, 4), (disp.ax_.yaxis, 3)):
        ticks = [t for t in axis.get_majorticklocs() if -0.5 <= t <= n - 0.5]
        assert ticks and all(float(t).is_integer() for t in ticks)  # never -0.5, 0.5, ...
    named = GridHeatmapDisplay(p, (3, 4)).plot(
        row_labels=["north", "centre", "south"],
        column_labels=["W", "CW", "CE", "E"],
        xlabel="longitude",
        ylabel="latitude",
    )
    ax = named.ax_
    assert list(ax.get_xticks()) == [0, 1, 2, 3] and list(ax.get_yticks()) == [0, 1, 2]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["north", "centre", "south"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["W", "CW", "CE", "E"]
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("longitude", "latitude")
    with pytest.raises(ValueError, match="row_labels has 2 names for a grid of 3"):
        GridHeatmapDisplay(p, (3, 4)).plot(row_labels=["a", "b"])
