"""Displays in scikit-learn's style: ``Display.from_xxx(...)`` then ``.plot()``.

matplotlib is imported only when something is plotted (the ``plot`` extra).
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from ..utils._docstrings import fill_doc

if TYPE_CHECKING:  # matplotlib is optional: only the type checker imports it
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "PrivacyUtilityDisplay",
    "DistributionDisplay",
    "ErrorBarDisplay",
    "GridHeatmapDisplay",
]

_SENSITIVE_COLOR = "tab:red"

#: Docstring fragments the displays share (filled by ``fill_doc``).
_DOCS = {
    "fitted_inputs": """
        estimator : fitted DistributionEstimator or Pipeline ending with one
        X : array-like of true values, default=None
            The true data (simulations); its distribution is drawn alongside.
        p_true : array-like of shape (k,), default=None
            The true distribution, instead of ``X``.
        """,
    "sort_ax": """
        sort : bool, default=False
        ax : matplotlib Axes, default=None
        """,
}


def _pyplot() -> Any:
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - optional extra
        raise ImportError("Plotting needs matplotlib: pip install 'sklearn-uldp[plot]'.") from exc
    return plt


def _axes(ax: Axes | None, figsize: tuple[float, float] | None = None) -> tuple[Axes, Figure]:
    plt = _pyplot()
    if ax is None:
        fig, ax = plt.subplots(figsize=figsize)
    return ax, ax.figure  # type: ignore[return-value]  # a SubFigure is fine too


def _legend(
    ax: Axes,
    loc: str,
    *,
    handles: Sequence[Artist] | None = None,
    above: bool = False,
    title: str | None = None,
) -> Any:
    """Draw the legend; ``loc="outside"`` keeps it off the data.

    Inside the axes even ``loc="best"`` covers part of dense curves or of
    many bars, so "outside" puts the legend to the right of the axes (one
    entry per row) or, with ``above``, above them (one row).
    """
    kw: dict[str, Any] = {"fontsize": "small", "title": title, "title_fontsize": "small"}
    if handles is not None:
        kw["handles"] = handles
    if loc == "outside":
        if above:
            kw.update(
                loc="lower left",
                bbox_to_anchor=(0.0, 1.01),
                borderaxespad=0.0,
                ncol=max(1, len(handles or ())),
                frameon=False,
                alignment="left",
            )
        else:
            kw.update(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
    else:
        kw["loc"] = loc
    return ax.legend(**kw)


def _root(fig: Any) -> Any:
    """The root Figure (a SubFigure's ``figure``; a Figure's is itself)."""
    return getattr(fig, "figure", None) or fig


def _keep_inside(ax: Axes, legend: Any) -> None:
    """Shrink ``ax`` so that its legend, placed outside it, stays in the figure.

    A figure created by the display is laid out (``tight_layout``), and a
    figure with a layout engine lays itself out when drawn; an axes of
    another figure (``plt.subplots()``, the command line's ``Figure()``)
    would have its legend cut at the figure's edge: the axes give up the
    width (legend on the right) or height (legend above) it overflows by.
    """
    fig = _root(ax.figure)
    if fig.get_layout_engine() is not None:
        return
    fig.draw_without_rendering()
    box, edge = legend.get_window_extent(), fig.bbox
    pad = 4.0 * fig.dpi / 72  # points between the legend and the edge
    right = max(0.0, box.x1 + pad - edge.x1) / edge.width
    top = max(0.0, box.y1 + pad - edge.y1) / edge.height
    if right or top:
        pos = ax.get_position()
        width = max(pos.width - right, 0.2 * pos.width)
        height = max(pos.height - top, 0.2 * pos.height)
        ax.set_position((pos.x0, pos.y0, width, height))


def _contrasting(color: Any) -> str:
    """Black or white, whichever stands out on ``color`` (for hatch lines)."""
    from matplotlib.colors import to_rgb

    r, g, b = to_rgb(color)
    return "black" if 0.2126 * r + 0.7152 * g + 0.0722 * b > 0.5 else "white"


def _mark_sensitive(bar: Any, color: Any = _SENSITIVE_COLOR) -> None:
    """Fill a sensitive category's bar with ``color``, hatched in a contrasting color.

    matplotlib draws hatches in the edge color: a hatch in the fill's own
    color is invisible, so the edge (the hatch) gets black or white.
    """
    bar.set_facecolor(color)
    bar.set_hatch("//")
    bar.set_edgecolor(_contrasting(color))


def _sensitive_patch(color: Any = _SENSITIVE_COLOR) -> Any:
    """The legend swatch of the sensitive categories' bars."""
    from matplotlib.patches import Patch

    return Patch(facecolor=color, edgecolor=_contrasting(color), hatch="//", label="sensitive")


def _swatch(bar: Any, label: str) -> Any:
    """A legend swatch drawn as ``bar`` is (fill, hatch and its color)."""
    from matplotlib.patches import Patch

    hatch = bar.get_hatch()
    return Patch(
        facecolor=bar.get_facecolor(),
        edgecolor=bar.get_edgecolor() if hatch else bar.get_facecolor(),
        hatch=hatch,
        label=label,
    )


#: The ellipsis of a shortened tick label.
ELLIPSIS = "\u2026"


def short_labels(labels: Sequence[Any], max_length: int | None) -> list[str]:
    """Tick labels of at most ``max_length`` characters (the rule of ``max_label_length``).

    A longer label keeps its first two thirds and its last third around an
    ellipsis (``"truck driver…ailer)"``): the start names the category
    and the end often tells similar ones apart. Labels that would read the
    same after shortening keep their whole text.

    Examples
    --------
    >>> from sklearn_uldp.plotting._displays import short_labels
    >>> short_labels(["nurse", "truck driver (heavy and tractor-trailer)"], 20)
    ['nurse', 'truck driver…ailer)']
    """
    text = [str(label) for label in labels]
    if max_length is None:
        return text
    out = []
    for label in text:
        if len(label) <= max_length:
            out.append(label)
            continue
        tail = (max_length - 1) // 3
        head = max_length - 1 - tail
        end = label[-tail:].lstrip() if tail else ""
        out.append(label[:head].rstrip() + ELLIPSIS + end)
    counts = pd.Series(out).value_counts()
    return [short if counts[short] == 1 else full for short, full in zip(out, text, strict=True)]


def _tick_rotation(labels: list[str], fontsize: float, bar_pt: float, m: int) -> float:
    """Horizontal tick labels when the longest fits under its bar, else 45 degrees
    (90 beyond 30 bars, where slanted labels would reach past their neighbours')."""
    widest = 0.6 * fontsize * max((len(label) for label in labels), default=0)
    if widest <= 0.95 * bar_pt:
        return 0.0
    return 45.0 if m <= 30 else 90.0


def _mark_epsilons(ax: Axes, epsilons: np.ndarray) -> None:
    """Ticks at the searched budgets, labelled where the labels do not overlap.

    A log axis labels its decades and, over less than a decade or two, its
    minor ticks (``3 x 10^0``), which crowd and do not say which budgets were
    searched. The ticks go at the searched epsilons instead; a label that
    would overlap its left neighbour is left blank (its tick stays).
    """
    from matplotlib.ticker import FixedFormatter, FixedLocator, NullLocator

    eps = np.unique(np.asarray(epsilons, dtype=float))
    if eps.size == 0:
        return
    ax.xaxis.set_major_locator(FixedLocator(eps.tolist()))
    ax.xaxis.set_minor_locator(NullLocator())
    labels = [f"{e:g}" for e in eps]
    ax.xaxis.set_major_formatter(FixedFormatter(labels))
    _thin_tick_labels(ax, labels)


def _thin_tick_labels(ax: Axes, labels: list[str]) -> None:
    """Blank the x tick labels that would overlap the last one kept."""
    from matplotlib.ticker import FixedFormatter

    fig = _root(ax.figure)
    fig.draw_without_rendering()  # lays the labels out at their final size
    texts = [t for t in ax.get_xticklabels() if t.get_text()]
    if len(texts) != len(labels):  # pragma: no cover - ticks outside the view
        return
    gap = 0.5 * float(texts[0].get_fontsize()) * fig.dpi / 72  # half a character
    kept, right = [], -np.inf
    for text, label in zip(texts, labels, strict=True):
        box = text.get_window_extent()
        if box.x0 >= right + gap:
            kept.append(label)
            right = box.x1
        else:
            kept.append("")
    ax.xaxis.set_major_formatter(FixedFormatter(kept))


_D = TypeVar("_D", bound="_Display")


class _Display:
    """What the displays share: ``plot`` keeps the axes and figure it drew on."""

    def _drawn(self: _D, ax: Axes, fig: Figure) -> _D:
        self.ax_, self.figure_ = ax, fig
        return self


class PrivacyUtilityDisplay(_Display):
    """The privacy-utility curve: loss against epsilon, one line per candidate.

    Build it with :meth:`from_search` from a fitted
    :class:`~sklearn_uldp.model_selection.PrivacyUtilitySearchCV`, or from a
    results table. The legend sits outside the axes by default, so that it
    never hides a curve however many candidates there are.

    Parameters
    ----------
    results : DataFrame
        Columns ``candidate``, ``epsilon``, ``mean_loss`` and optionally
        ``std_loss`` (as in ``cv_results_``).
    loss_name : str, default="loss"
        Y-axis label.
    target : float or None, default=None
        Target loss, drawn as a horizontal line.

    Attributes
    ----------
    ax_ : matplotlib Axes
    figure_ : matplotlib Figure
    lines_ : dict of {str: Line2D}
        One line per candidate.
    target_line_ : Line2D or None
    legend_ : Legend or None

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import pandas as pd
    >>> from sklearn_uldp.plotting import PrivacyUtilityDisplay
    >>> res = pd.DataFrame({"candidate": ["uRR"] * 2 + ["uRAP"] * 2,
    ...                     "epsilon": [0.5, 2.0] * 2,
    ...                     "mean_loss": [0.2, 0.05, 0.1, 0.04]})
    >>> disp = PrivacyUtilityDisplay(res, loss_name="tv", target=0.06).plot()
    >>> sorted(disp.lines_)
    ['uRAP', 'uRR']
    """

    def __init__(
        self,
        results: pd.DataFrame,
        *,
        loss_name: str = "loss",
        target: float | None = None,
    ) -> None:
        self.results = results
        self.loss_name = loss_name
        self.target = target

    def plot(
        self,
        ax: Axes | None = None,
        *,
        errorbars: bool = True,
        log: bool = True,
        legend_loc: str | None = "outside",
        figsize: tuple[float, float] | None = None,
        **kwargs: Any,
    ) -> PrivacyUtilityDisplay:
        """Plot the curves.

        Parameters
        ----------
        ax : matplotlib Axes, default=None
            A new figure when None.
        errorbars : bool, default=True
            Shade mean +- std over the repeats.
        log : bool, default=True
            Log scale on both axes.
        legend_loc : str or None, default="outside"
            ``"outside"`` puts the legend to the right of the axes, where it
            cannot hide a curve, and inside the figure: a figure created here
            is widened and laid out to hold it, and your own ``ax`` (on a
            figure without a layout engine) gives up the width the legend
            needs; any other value is passed to ``Axes.legend(loc=...)``;
            None draws no legend.
        figsize : tuple of float, default=None
            Size of the figure created when ``ax`` is None; by default
            (8, 4.8) with the legend outside, matplotlib's default otherwise.
        **kwargs : dict
            Keyword arguments for every curve (``Axes.plot``), such as
            ``linewidth`` or ``marker``.

        Returns
        -------
        display : PrivacyUtilityDisplay
        """
        created = ax is None
        if figsize is None and legend_loc == "outside":
            figsize = (8.0, 4.8)
        ax, fig = _axes(ax, figsize=figsize)
        res = self.results
        missing = {"candidate", "epsilon", "mean_loss"} - set(res.columns)
        if missing:
            raise ValueError(f"results lack the columns {sorted(missing)}.")
        res = res[np.isfinite(res["epsilon"].astype(float))]
        self.lines_ = {}
        for label, group in res.groupby("candidate", sort=False):
            group = group.sort_values("epsilon")
            x = group["epsilon"].to_numpy(float)
            y = group["mean_loss"].to_numpy(float)
            (line,) = ax.plot(x, y, **{"marker": "o", "label": label, **kwargs})
            if errorbars and "std_loss" in group:
                sd = group["std_loss"].to_numpy(float)
                lo = np.maximum(y - sd, y * 0.05) if log else y - sd
                ax.fill_between(x, lo, y + sd, color=line.get_color(), alpha=0.1, linewidth=0)
            self.lines_[str(label)] = line
        self.target_line_ = None
        if self.target is not None:
            self.target_line_ = ax.axhline(
                self.target,
                color="k",
                linestyle="--",
                linewidth=1,
                label=f"target {self.loss_name} = {self.target:g}",
            )
        if log:
            ax.set_xscale("log")
            ax.set_yscale("log")
        ax.set_xlabel("epsilon (budget per report)")
        ax.set_ylabel(f"{self.loss_name} (lower is better)")
        self.legend_ = None
        if legend_loc is not None:
            self.legend_ = _legend(ax, legend_loc)
        ax.grid(True, which="both", alpha=0.3)
        if created:
            fig.tight_layout()
        elif legend_loc == "outside":
            _keep_inside(ax, self.legend_)
        # After the layout: the labels are thinned at their final spacing.
        _mark_epsilons(ax, res["epsilon"].to_numpy(float))
        return self._drawn(ax, fig)

    @classmethod
    def from_search(
        cls,
        search: Any,
        *,
        ax: Axes | None = None,
        target: float | Literal["auto"] | None = "auto",
        errorbars: bool = True,
        log: bool = True,
        **kwargs: Any,
    ) -> PrivacyUtilityDisplay:
        """Plot the privacy-utility curve of a fitted search.

        Parameters
        ----------
        search : PrivacyUtilitySearchCV
            Fitted.
        ax : matplotlib Axes, default=None
        target : float, None or "auto", default="auto"
            ``"auto"`` uses the search's ``target``.
        errorbars : bool, default=True
        log : bool, default=True
        **kwargs : dict
            Passed to :meth:`plot` (``legend_loc``, ``figsize`` and keyword
            arguments for the curves).

        Returns
        -------
        display : PrivacyUtilityDisplay
        """
        if not hasattr(search, "cv_results_"):
            raise ValueError("The search is not fitted; call fit first.")
        target_loss = search.target if isinstance(target, str) else target
        disp = cls(search.cv_results_, loss_name=search.scoring_name_, target=target_loss)
        return disp.plot(ax=ax, errorbars=errorbars, log=log, **kwargs)


def _sensitive_or_none(mask: ArrayLike | None, k: int) -> np.ndarray:
    if mask is None:
        return np.zeros(k, dtype=bool)
    mask = np.asarray(mask, dtype=bool)
    if mask.shape != (k,):
        raise ValueError(f"sensitive must be a boolean mask over the {k} categories.")
    return mask


def _check_distributions(
    categories: ArrayLike, estimated: ArrayLike, true: ArrayLike | None, sensitive: ArrayLike | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray]:
    """Labels (as text), the estimate, the true distribution and the mask, checked."""
    cats = np.asarray([str(c) for c in np.asarray(categories, dtype=object)], dtype=object)
    k = cats.size
    est = np.asarray(estimated, dtype=float)
    if est.shape != (k,):
        raise ValueError(f"estimated must have one value per category ({k}).")
    p_true = None if true is None else np.asarray(true, dtype=float)
    if p_true is not None and p_true.shape != (k,):
        raise ValueError(f"true must have one value per category ({k}).")
    return cats, est, p_true, _sensitive_or_none(sensitive, k)


def _values_and_categories(
    values: ArrayLike, categories: ArrayLike | None
) -> tuple[np.ndarray, Any]:
    """``values`` as floats and their categories: ``categories`` when given, else a
    Series' index, else ``0..k-1``."""
    arr = np.asarray(values, dtype=float)
    if categories is None:
        categories = values.index if isinstance(values, pd.Series) else np.arange(arr.size)
    return arr, categories


def _fitted_inputs(
    estimator: Any, X: ArrayLike | None, p_true: ArrayLike | None, sensitive: Any
) -> tuple[Any, ArrayLike | None, Any]:
    """The fitted distribution estimator (a pipeline's last step), the true
    distribution (from ``X`` when given) and the sensitive mask ("auto": the
    channel's, none under LDP where every category is protected alike)."""
    from ..model_selection._search import _final_estimator, true_distribution

    est = _final_estimator(estimator)
    k = len(est.distribution_)
    if isinstance(sensitive, str) and sensitive == "auto":
        mask = np.asarray(est.channel_.sensitive_mask)[:k]
        sensitive = None if mask.all() else mask
    if X is not None:
        p_true = true_distribution(X, est.categories_)
    return est, p_true, sensitive


class _CategoricalDisplay(_Display):
    """A display of one value per category, some categories sensitive."""

    def __init__(
        self,
        categories: ArrayLike,
        estimated: ArrayLike,
        *,
        true: ArrayLike | None = None,
        sensitive: ArrayLike | None = None,
    ) -> None:
        self.categories = categories
        self.estimated = estimated
        self.true = true
        self.sensitive = sensitive

    def _checked(self) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray]:
        return _check_distributions(self.categories, self.estimated, self.true, self.sensitive)


class DistributionDisplay(_CategoricalDisplay):
    """Estimated (and true) distribution as bars, sensitive categories marked.

    Sensitive categories are hatched (the estimate's bars red,
    ``sensitive_color``, and the true ones gray) and have red tick labels;
    the legend's swatches are drawn as the bars are.
    Large domains stay readable: :meth:`plot` can keep only the ``top_k``
    most probable categories (the others summed into one bar or dropped, as
    the legend's title says), sort the bars by probability, and sizes a
    figure it creates to the number of bars.

    Parameters
    ----------
    categories : array-like of shape (k,)
    estimated : array-like of shape (k,)
    true : array-like of shape (k,) or None, default=None
    sensitive : array-like of bool of shape (k,) or None, default=None
    estimate_label : str, default="estimate"

    Attributes
    ----------
    ax_ : matplotlib Axes
    figure_ : matplotlib Figure
    bars_ : BarContainer
        The estimated distribution, one bar per shown category (the last one
        is the aggregate of the others when ``others="aggregate"``).
    true_bars_ : BarContainer or None
    legend_ : Legend or None
    shown_ : ndarray of shape (n_bars,)
        Indices into ``categories`` of the bars, in drawing order; -1 marks the
        aggregate bar.
    note_ : str or None
        What was left out (also the legend's title), when ``top_k`` hides
        categories.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from sklearn_uldp.plotting import DistributionDisplay
    >>> disp = DistributionDisplay.from_predictions(
    ...     [0.5, 0.3, 0.2], [0.45, 0.35, 0.2], categories=["a", "b", "c"],
    ...     sensitive=[False, False, True])
    >>> len(disp.bars_), disp.bars_[2].get_hatch()
    (3, '//')

    The two most probable categories, the third summed into an "other" bar:

    >>> disp = DistributionDisplay.from_predictions(
    ...     [0.3, 0.5, 0.2], [0.35, 0.45, 0.2], categories=["a", "b", "c"],
    ...     top_k=2, sort=True)
    >>> [t.get_text() for t in disp.ax_.get_xticklabels()]
    ['b', 'a', 'other (1)']
    >>> disp.note_
    'the 2 most probable of 3 categories (by estimate); 1 other summed in one bar'
    """

    def __init__(
        self,
        categories: ArrayLike,
        estimated: ArrayLike,
        *,
        true: ArrayLike | None = None,
        sensitive: ArrayLike | None = None,
        estimate_label: str = "estimate",
    ) -> None:
        super().__init__(categories, estimated, true=true, sensitive=sensitive)
        self.estimate_label = estimate_label

    def plot(
        self,
        ax: Axes | None = None,
        *,
        top_k: int | None = None,
        rank_by: Literal["estimate", "true"] = "estimate",
        sort: bool = False,
        others: Literal["aggregate", "drop"] = "aggregate",
        figsize: tuple[float, float] | None = None,
        legend_loc: str | None = "outside",
        true_kw: dict[str, Any] | None = None,
        sensitive_color: Any = _SENSITIVE_COLOR,
        max_label_length: int | None = 20,
        **kwargs: Any,
    ) -> DistributionDisplay:
        """Draw the bars.

        Parameters
        ----------
        ax : matplotlib Axes, default=None
            A new figure when None.
        top_k : int or None, default=None
            Show only the ``top_k`` categories with the largest probability
            (``rank_by``); the others are summed into one last bar
            ``"other (m)"`` or dropped (``others``), and the legend's title
            says so. None shows every category.
        rank_by : {"estimate", "true"}, default="estimate"
            The probability that ``top_k`` and ``sort`` rank by; ``"true"``
            needs the true distribution.
        sort : bool, default=False
            Order the bars by decreasing probability (``rank_by``) instead of
            by category.
        others : {"aggregate", "drop"}, default="aggregate"
            What happens to the categories that ``top_k`` leaves out.
        figsize : tuple of float, default=None
            Size of the figure created when ``ax`` is None; by default its
            width grows with the number of bars (about 0.2 inch each, between
            6 and 24 inches) and the tick labels shrink when they would not fit.
        legend_loc : str or None, default="outside"
            ``"outside"`` puts the legend above the axes, where it cannot hide
            a bar (your own ``ax``, on a figure without a layout engine, gives
            up the height it needs); any other value is passed to
            ``Axes.legend(loc=...)``; None draws no legend. Each swatch is
            drawn as its bars are (fill, hatch).
        true_kw : dict, default=None
            Keyword arguments for the true distribution's bars
            (``Axes.bar``).
        sensitive_color : color or None, default="tab:red"
            Fill of the estimate's bars of sensitive categories; None keeps
            the estimate's color. Sensitive categories are **hatched** in
            both bars (estimate and true, in black or white, whichever
            stands out on the fill), and their tick labels are red.
        max_label_length : int or None, default=20
            Tick labels longer than this many characters are shortened to it
            around an ellipsis, keeping their first two thirds and last third
            (:func:`short_labels`; the full names are ``categories[shown_]``);
            None keeps them whole. Labels are horizontal when the longest fits
            under its bar, else slanted at 45 degrees (90 beyond 30 bars).
        **kwargs : dict
            Keyword arguments for the estimate's bars (``Axes.bar``), such as
            ``color`` or ``alpha``.

        Returns
        -------
        display : DistributionDisplay
        """
        cats, est, true, mask = self._checked()
        k = cats.size
        if rank_by not in ("estimate", "true"):
            raise ValueError(f'rank_by must be "estimate" or "true"; got {rank_by!r}.')
        if rank_by == "true" and true is None:
            raise ValueError(
                'rank_by="true" needs the true distribution: pass true= (or X / '
                'p_true to from_estimator), or rank by "estimate".'
            )
        if others not in ("aggregate", "drop"):
            raise ValueError(f'others must be "aggregate" or "drop"; got {others!r}.')
        if max_label_length is not None and (
            isinstance(max_label_length, bool)
            or not isinstance(max_label_length, numbers.Integral)
            or max_label_length < 5
        ):
            raise ValueError(
                "max_label_length must be an integer >= 5 (or None to keep the labels "
                f"whole); got {max_label_length!r}."
            )
        if top_k is not None and (
            isinstance(top_k, bool) or not isinstance(top_k, numbers.Integral) or top_k < 1
        ):
            raise ValueError(
                f"top_k must be a positive integer (or None for every category); got {top_k!r}."
            )
        key = true if rank_by == "true" and true is not None else est
        # Stable sort on -key: ties keep the categories' order.
        ranked = np.argsort(-key, kind="stable")
        shown = np.arange(k)
        self.note_ = None
        rest = np.array([], dtype=int)
        if top_k is not None and top_k < k:
            kept, rest = ranked[:top_k], ranked[top_k:]
            shown = kept if sort else np.sort(kept)
            what = "summed in one bar" if others == "aggregate" else "not shown"
            self.note_ = (
                f"the {top_k} most probable of {k} categories (by {rank_by}); "
                f"{rest.size} other{'s' if rest.size > 1 else ''} {what}"
            )
            if others == "drop":
                rest = np.array([], dtype=int)
        elif sort:
            shown = ranked
        labels = list(cats[shown])
        bar_est = est[shown]
        bar_true = None if true is None else true[shown]
        bar_mask = mask[shown]
        if rest.size:
            labels.append(f"other ({rest.size})")
            bar_est = np.append(bar_est, est[rest].sum())
            if true is not None and bar_true is not None:
                bar_true = np.append(bar_true, true[rest].sum())
            bar_mask = np.append(bar_mask, False)
            shown = np.append(shown, -1)
        self.shown_ = shown
        m = len(labels)
        created = ax is None
        if figsize is None:
            figsize = (float(np.clip(0.2 * m + 1.5, 6, 24)), 4.0)
        ax, fig = _axes(ax, figsize=figsize)
        x = np.arange(m)
        width = 0.4 if true is not None else 0.8
        self.true_bars_ = None
        if bar_true is not None:
            tkw = {"color": "0.7", "label": "true", **(true_kw or {})}
            self.true_bars_ = ax.bar(x - width / 2, bar_true, width, **tkw)
        offset = width / 2 if true is not None else 0.0
        ekw = {"color": "tab:blue", "label": self.estimate_label, **kwargs}
        self.bars_ = ax.bar(x + offset, bar_est, width, **ekw)
        # The swatches are taken before any bar is marked: the first bar may
        # be a sensitive one, and the estimate's swatch is its own color.
        handles = [_swatch(self.bars_.patches[0], ekw["label"])]
        if self.true_bars_ is not None:
            handles.insert(0, _swatch(self.true_bars_.patches[0], tkw["label"]))
        for i in np.flatnonzero(bar_mask):
            bar = self.bars_.patches[i]
            fill = bar.get_facecolor() if sensitive_color is None else sensitive_color
            _mark_sensitive(bar, fill)
            if self.true_bars_ is not None:  # hatched too: hatching means sensitive
                true_bar = self.true_bars_.patches[i]
                _mark_sensitive(true_bar, true_bar.get_facecolor())
        if bar_mask.any():
            handles.append(_swatch(self.bars_.patches[int(np.argmax(bar_mask))], "sensitive"))
        ax.set_xticks(x)
        # Tick labels in points must fit in the space of one bar: shrink
        # them for wide domains instead of letting them overlap, shorten
        # long ones (max_label_length) and slant them when they do not fit.
        bar_pt = 72 * fig.get_figwidth() * ax.get_position().width / max(m, 1)
        fontsize = float(np.clip(0.9 * bar_pt, 4, 10))
        ticks = short_labels(labels, max_label_length)
        rotation = _tick_rotation(ticks, fontsize, bar_pt, m)
        slanted = rotation == 45.0
        ax.set_xticklabels(
            ticks,
            rotation=rotation,
            ha="right" if slanted else "center",
            rotation_mode="anchor" if slanted else "default",
        )
        for tick, s in zip(ax.get_xticklabels(), bar_mask, strict=False):
            tick.set_fontsize(fontsize)
            if s:
                tick.set_color(_SENSITIVE_COLOR)
        ax.set_xlim(-0.6, m - 0.4)
        self.legend_ = None
        if legend_loc is not None:
            self.legend_ = _legend(ax, legend_loc, handles=handles, above=True, title=self.note_)
        ax.axhline(0, color="k", linewidth=0.5)
        ax.set_ylabel("probability")
        if created:
            fig.tight_layout()
        elif legend_loc == "outside":
            _keep_inside(ax, self.legend_)
        return self._drawn(ax, fig)

    @classmethod
    @fill_doc(_DOCS)
    def from_estimator(
        cls,
        estimator: Any,
        X: ArrayLike | None = None,
        *,
        p_true: ArrayLike | None = None,
        sensitive: ArrayLike | Literal["auto"] | None = "auto",
        ax: Axes | None = None,
        **kwargs: Any,
    ) -> DistributionDisplay:
        """Plot a fitted distribution estimator's estimate.

        Parameters
        ----------
        %(fitted_inputs)s
        sensitive : "auto", array-like of bool or None, default="auto"
            ``"auto"`` marks the channel's sensitive categories (none for an
            LDP mechanism, where every category is protected alike).
        ax : matplotlib Axes, default=None
        **kwargs : dict
            Passed to :meth:`plot`: ``top_k``, ``rank_by``, ``sort``,
            ``others``, ``figsize``, ``legend_loc``, ``true_kw`` and keyword
            arguments for the bars.

        Returns
        -------
        display : DistributionDisplay
        """
        est, p_true, sensitive = _fitted_inputs(estimator, X, p_true, sensitive)
        return cls(
            est.categories_,
            est.distribution_,
            true=p_true,
            sensitive=sensitive,
            estimate_label=type(est).__name__,
        ).plot(ax=ax, **kwargs)

    @classmethod
    def from_predictions(
        cls,
        p_true: ArrayLike | None,
        p_est: ArrayLike,
        *,
        categories: ArrayLike | None = None,
        sensitive: ArrayLike | None = None,
        ax: Axes | None = None,
        **kwargs: Any,
    ) -> DistributionDisplay:
        """Plot an estimate against the true distribution.

        Parameters
        ----------
        p_true : array-like of shape (k,) or None
        p_est : array-like of shape (k,) or Series
            A Series gives the categories through its index.
        categories : array-like of shape (k,), default=None
        sensitive : array-like of bool of shape (k,), default=None
        ax : matplotlib Axes, default=None
        **kwargs : dict
            Passed to :meth:`plot` (``top_k``, ``sort``, ``figsize``, bar
            keyword arguments...).

        Returns
        -------
        display : DistributionDisplay
        """
        p_est_arr, categories = _values_and_categories(p_est, categories)
        return cls(categories, p_est_arr, true=p_true, sensitive=sensitive).plot(ax=ax, **kwargs)


class ErrorBarDisplay(_CategoricalDisplay):
    """Estimated distribution with confidence intervals, one row per category.

    Points are the estimates, horizontal bars their intervals (from
    :meth:`~sklearn_uldp.estimators.DistributionEstimator.confidence_intervals`);
    the true distribution, when known, is drawn as open diamonds, and
    sensitive categories have red labels and markers.

    Parameters
    ----------
    categories : array-like of shape (k,)
    estimated : array-like of shape (k,)
    intervals : array-like of shape (k, 2)
        Lower and upper bounds.
    true : array-like of shape (k,) or None, default=None
    sensitive : array-like of bool of shape (k,) or None, default=None
    interval_label : str, default="95% interval"

    Attributes
    ----------
    ax_, figure_
    errorbar_ : ErrorbarContainer
        The estimates and their intervals.
    true_points_ : Line2D or None
    coverage_ : float or None
        Share of the intervals that contain the true value, when it is given.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from sklearn_uldp.plotting import ErrorBarDisplay
    >>> disp = ErrorBarDisplay.from_intervals(
    ...     [0.5, 0.3, 0.2], [[0.45, 0.55], [0.26, 0.34], [0.1, 0.3]],
    ...     categories=["a", "b", "c"], true=[0.52, 0.27, 0.21])
    >>> disp.coverage_
    1.0
    """

    def __init__(
        self,
        categories: ArrayLike,
        estimated: ArrayLike,
        intervals: ArrayLike,
        *,
        true: ArrayLike | None = None,
        sensitive: ArrayLike | None = None,
        interval_label: str = "95% interval",
    ) -> None:
        super().__init__(categories, estimated, true=true, sensitive=sensitive)
        self.intervals = intervals
        self.interval_label = interval_label

    def plot(self, ax: Axes | None = None, *, sort: bool = False) -> ErrorBarDisplay:
        """Draw the estimates and their intervals.

        Parameters
        ----------
        ax : matplotlib Axes, default=None
        sort : bool, default=False
            Order the rows by estimate (largest on top) instead of by
            category.

        Returns
        -------
        display : ErrorBarDisplay
        """
        cats, est, true, mask = self._checked()
        k = cats.size
        ci = np.asarray(self.intervals, dtype=float)
        if ci.shape != (k, 2):
            raise ValueError(
                f"intervals must have shape ({k}, 2), one row per category "
                f"(lower, upper); got {ci.shape}."
            )
        order = np.argsort(est, kind="stable") if sort else np.arange(k)[::-1]
        ax, fig = _axes(ax, figsize=(6, max(3, 0.28 * k)))
        y = np.arange(k)
        e, lo, hi = est[order], ci[order, 0], ci[order, 1]
        xerr = np.vstack([np.clip(e - lo, 0, None), np.clip(hi - e, 0, None)])
        self.errorbar_ = ax.errorbar(
            e,
            y,
            xerr=xerr,
            fmt="o",
            color="tab:blue",
            ecolor="tab:blue",
            capsize=2,
            markersize=4,
            label=self.interval_label,
        )
        self.true_points_ = None
        self.coverage_ = None
        if true is not None:
            (self.true_points_,) = ax.plot(
                true[order], y, "D", mfc="none", color="k", markersize=5, label="true"
            )
            self.coverage_ = float(np.mean((ci[:, 0] <= true) & (true <= ci[:, 1])))
        ax.set_yticks(y)
        ax.set_yticklabels(cats[order])
        for tick, s in zip(ax.get_yticklabels(), mask[order], strict=False):
            if s:
                tick.set_color(_SENSITIVE_COLOR)
        if mask.any():
            # Above the errorbar's own markers (matplotlib draws them at its
            # zorder + 0.1), or the legend shows a red dot no point has.
            ax.plot(
                e[mask[order]],
                y[mask[order]],
                "o",
                color=_SENSITIVE_COLOR,
                markersize=4,
                label="sensitive",
                zorder=self.errorbar_.lines[0].get_zorder() + 0.1,
            )
        ax.axvline(0, color="k", linewidth=0.5)
        ax.set_xlabel("probability")
        ax.legend(fontsize="small", loc="lower right")
        return self._drawn(ax, fig)

    @classmethod
    @fill_doc(_DOCS)
    def from_estimator(
        cls,
        estimator: Any,
        X: ArrayLike | None = None,
        *,
        p_true: ArrayLike | None = None,
        alpha: float = 0.05,
        method: str = "auto",
        simultaneous: bool = False,
        sensitive: ArrayLike | Literal["auto"] | None = "auto",
        sort: bool = False,
        ax: Axes | None = None,
    ) -> ErrorBarDisplay:
        """Plot a fitted estimator's estimate with its confidence intervals.

        Parameters
        ----------
        %(fitted_inputs)s
        alpha, method, simultaneous
            Passed to ``estimator.confidence_intervals``.
        sensitive : "auto", array-like of bool or None, default="auto"
            ``"auto"`` marks the channel's sensitive categories (none for an
            LDP mechanism).
        %(sort_ax)s

        Returns
        -------
        display : ErrorBarDisplay
        """
        est, p_true, sensitive = _fitted_inputs(estimator, X, p_true, sensitive)
        ci = est.confidence_intervals(alpha, method=method, simultaneous=simultaneous)
        label = f"{100 * (1 - alpha):g}% {'simultaneous ' if simultaneous else ''}interval"
        return cls(
            est.categories_,
            est.distribution_,
            ci,
            true=p_true,
            sensitive=sensitive,
            interval_label=label,
        ).plot(ax=ax, sort=sort)

    @classmethod
    @fill_doc(_DOCS)
    def from_intervals(
        cls,
        estimated: ArrayLike,
        intervals: ArrayLike,
        *,
        categories: ArrayLike | None = None,
        true: ArrayLike | None = None,
        sensitive: ArrayLike | None = None,
        sort: bool = False,
        ax: Axes | None = None,
    ) -> ErrorBarDisplay:
        """Plot estimates and intervals computed elsewhere.

        Parameters
        ----------
        estimated : array-like of shape (k,) or Series
            A Series gives the categories through its index.
        intervals : array-like of shape (k, 2)
        categories : array-like of shape (k,), default=None
        true : array-like of shape (k,), default=None
        sensitive : array-like of bool of shape (k,), default=None
        %(sort_ax)s

        Returns
        -------
        display : ErrorBarDisplay
        """
        est, categories = _values_and_categories(estimated, categories)
        return cls(categories, est, intervals, true=true, sensitive=sensitive).plot(
            ax=ax, sort=sort
        )


def _cell_ticks(axis: Any, n: int, labels: Sequence[Any] | None, name: str) -> None:
    """Ticks at the cells' centres: every cell named by ``labels``, or integer
    positions (thinned by matplotlib, never at a cell's edge)."""
    from matplotlib.ticker import FixedFormatter, FixedLocator, MaxNLocator

    if labels is None:
        axis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
        return
    labels = [str(v) for v in labels]
    if len(labels) != n:
        raise ValueError(f"{name} has {len(labels)} names for a grid of {n}: give one per cell.")
    axis.set_major_locator(FixedLocator(list(range(n))))
    axis.set_major_formatter(FixedFormatter(labels))


class GridHeatmapDisplay(_Display):
    """A distribution over a grid-shaped domain (locations) as a heatmap.

    Categories are the cells in row-major order (as
    :func:`~sklearn_uldp.datasets.grid_cell_labels`); sensitive cells are
    outlined. Ticks sit at the cells' centres, numbered or named
    (``row_labels``, ``column_labels`` of :meth:`plot`).

    Parameters
    ----------
    distribution : array-like of shape (n_rows * n_cols,)
    shape : tuple of int
        ``(n_rows, n_cols)``.
    sensitive : array-like of bool of shape (n_rows * n_cols,) or None

    Attributes
    ----------
    ax_, figure_
    image_ : AxesImage
    outlines_ : list of Rectangle

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> from sklearn_uldp.plotting import GridHeatmapDisplay
    >>> disp = GridHeatmapDisplay(np.full(6, 1 / 6), (2, 3),
    ...                           sensitive=[1, 0, 0, 0, 0, 1]).plot()
    >>> disp.image_.get_array().shape, len(disp.outlines_)
    ((2, 3), 2)
    >>> disp = GridHeatmapDisplay(np.full(6, 1 / 6), (2, 3)).plot(
    ...     row_labels=["north", "south"], column_labels=["W", "C", "E"])
    >>> [t.get_text() for t in disp.ax_.get_yticklabels()]
    ['north', 'south']
    """

    def __init__(
        self, distribution: ArrayLike, shape: tuple[int, int], *, sensitive: ArrayLike | None = None
    ) -> None:
        self.distribution = distribution
        self.shape = shape
        self.sensitive = sensitive

    def plot(
        self,
        ax: Axes | None = None,
        *,
        cmap: str = "viridis",
        title: str | None = None,
        colorbar: bool = True,
        row_labels: Sequence[Any] | None = None,
        column_labels: Sequence[Any] | None = None,
        xlabel: str = "column",
        ylabel: str = "row",
    ) -> GridHeatmapDisplay:
        """Draw the heatmap.

        Parameters
        ----------
        ax : matplotlib Axes, default=None
        cmap : str, default="viridis"
        title : str, default=None
        colorbar : bool, default=True
        row_labels, column_labels : sequence or None, default=None
            The names of the rows (top to bottom) and columns (left to right),
            one tick at each cell's centre (e.g. latitude and longitude bands
            of a location grid); None numbers them 0, 1, ... at integer ticks,
            thinned on large grids (never between two cells).
        xlabel, ylabel : str, default="column", "row"
            The axes' titles.

        Returns
        -------
        display : GridHeatmapDisplay
        """
        from matplotlib.patches import Rectangle

        p = np.asarray(self.distribution, dtype=float)
        n_rows, n_cols = (int(v) for v in self.shape)
        if p.size != n_rows * n_cols:
            raise ValueError(
                f"The distribution has {p.size} values, the grid {n_rows}x{n_cols} "
                f"has {n_rows * n_cols} cells."
            )
        ax, fig = _axes(ax)
        self.image_ = ax.imshow(p.reshape(n_rows, n_cols), cmap=cmap, origin="upper")
        mask = _sensitive_or_none(self.sensitive, p.size).reshape(n_rows, n_cols)
        self.outlines_ = []
        for r, c in zip(*np.nonzero(mask), strict=False):
            rect = Rectangle(
                (c - 0.5, r - 0.5),
                1,
                1,
                fill=False,
                edgecolor=_SENSITIVE_COLOR,
                linewidth=1.5,
            )
            ax.add_patch(rect)
            self.outlines_.append(rect)
        if colorbar:
            fig.colorbar(self.image_, ax=ax, label="probability")
        if title:
            ax.set_title(title)
        _cell_ticks(ax.xaxis, n_cols, column_labels, "column_labels")
        _cell_ticks(ax.yaxis, n_rows, row_labels, "row_labels")
        if column_labels is not None:
            # Vertical names when the longest would not fit over its cell.
            fig_width = _root(fig).get_figwidth()
            ax.apply_aspect()  # the drawn box: square cells, narrower than the slot
            cell_pt = 72 * fig_width * ax.get_position().width / n_cols
            size = float(ax.xaxis.get_ticklabels()[0].get_fontsize())
            if _tick_rotation([str(v) for v in column_labels], size, cell_pt, n_cols):
                ax.tick_params(axis="x", labelrotation=90)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        return self._drawn(ax, fig)

    @classmethod
    def from_estimator(
        cls,
        estimator: Any,
        shape: tuple[int, int],
        *,
        sensitive: ArrayLike | Literal["auto"] | None = "auto",
        ax: Axes | None = None,
        **kwargs: Any,
    ) -> GridHeatmapDisplay:
        """Heatmap of a fitted estimator's estimate.

        Parameters
        ----------
        estimator : fitted DistributionEstimator or Pipeline ending with one
        shape : tuple of int
        sensitive : "auto", array-like of bool or None, default="auto"
            ``"auto"`` outlines the channel's sensitive cells.
        ax : matplotlib Axes, default=None
        **kwargs
            Passed to :meth:`plot`.

        Returns
        -------
        display : GridHeatmapDisplay
        """
        est, _, sensitive = _fitted_inputs(estimator, None, None, sensitive)
        return cls(est.distribution_, shape, sensitive=sensitive).plot(ax=ax, **kwargs)
