"""Displays in scikit-learn's style: ``Display.from_xxx(...)`` then ``.plot()``.

matplotlib is imported only when something is plotted (the ``plot`` extra).
"""

import numpy as np
import pandas as pd

__all__ = [
    "PrivacyUtilityDisplay",
    "DistributionDisplay",
    "ErrorBarDisplay",
    "GridHeatmapDisplay",
]

_SENSITIVE_COLOR = "tab:red"


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - optional extra
        raise ImportError(
            "Plotting needs matplotlib: pip install 'sklearn-uldp[plot]'."
        ) from exc
    return plt


def _axes(ax, figsize=None):
    plt = _pyplot()
    if ax is None:
        fig, ax = plt.subplots(figsize=figsize)
    return ax, ax.figure


class PrivacyUtilityDisplay:
    """The privacy-utility curve: loss against epsilon, one line per candidate.

    Build it with :meth:`from_search` from a fitted
    :class:`~sklearn_uldp.model_selection.PrivacyUtilitySearchCV`, or from a
    results table.

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

    def __init__(self, results, *, loss_name="loss", target=None):
        self.results = results
        self.loss_name = loss_name
        self.target = target

    def plot(self, ax=None, *, errorbars=True, log=True):
        """Plot the curves.

        Parameters
        ----------
        ax : matplotlib Axes, default=None
            A new figure when None.
        errorbars : bool, default=True
            Shade mean +- std over the repeats.
        log : bool, default=True
            Log scale on both axes.

        Returns
        -------
        display : PrivacyUtilityDisplay
        """
        created = ax is None
        ax, fig = _axes(ax)
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
            (line,) = ax.plot(x, y, marker="o", label=label)
            if errorbars and "std_loss" in group:
                sd = group["std_loss"].to_numpy(float)
                lo = np.maximum(y - sd, y * 0.05) if log else y - sd
                ax.fill_between(
                    x, lo, y + sd, color=line.get_color(), alpha=0.1, linewidth=0
                )
            self.lines_[label] = line
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
        ax.legend(fontsize="small", loc="best")
        ax.grid(True, which="both", alpha=0.3)
        if created:
            fig.tight_layout()
        self.ax_, self.figure_ = ax, fig
        return self

    @classmethod
    def from_search(cls, search, *, ax=None, target="auto", errorbars=True, log=True):
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

        Returns
        -------
        display : PrivacyUtilityDisplay
        """
        if not hasattr(search, "cv_results_"):
            raise ValueError("The search is not fitted; call fit first.")
        if isinstance(target, str) and target == "auto":
            target = search.target
        disp = cls(search.cv_results_, loss_name=search.scoring_name_, target=target)
        return disp.plot(ax=ax, errorbars=errorbars, log=log)


def _sensitive_or_none(mask, k):
    if mask is None:
        return np.zeros(k, dtype=bool)
    mask = np.asarray(mask, dtype=bool)
    if mask.shape != (k,):
        raise ValueError(f"sensitive must be a boolean mask over the {k} categories.")
    return mask


class DistributionDisplay:
    """Estimated (and true) distribution as bars, sensitive categories marked.

    Sensitive categories get hatched bars and red tick labels.

    Parameters
    ----------
    categories : array-like of shape (k,)
    estimated : array-like of shape (k,)
    true : array-like of shape (k,) or None, default=None
    sensitive : array-like of bool of shape (k,) or None, default=None
    estimate_label : str, default="estimate"

    Attributes
    ----------
    ax_, figure_
    bars_ : BarContainer
        The estimated distribution.
    true_bars_ : BarContainer or None

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
    """

    def __init__(
        self,
        categories,
        estimated,
        *,
        true=None,
        sensitive=None,
        estimate_label="estimate",
    ):
        self.categories = categories
        self.estimated = estimated
        self.true = true
        self.sensitive = sensitive
        self.estimate_label = estimate_label

    def plot(self, ax=None):
        """Draw the bars.

        Parameters
        ----------
        ax : matplotlib Axes, default=None

        Returns
        -------
        display : DistributionDisplay
        """
        cats = [str(c) for c in np.asarray(self.categories, dtype=object)]
        k = len(cats)
        est = np.asarray(self.estimated, dtype=float)
        if est.shape != (k,):
            raise ValueError(f"estimated must have one value per category ({k}).")
        mask = _sensitive_or_none(self.sensitive, k)
        ax, fig = _axes(ax, figsize=(max(6, 0.35 * k), 4))
        x = np.arange(k)
        width = 0.4 if self.true is not None else 0.8
        self.true_bars_ = None
        if self.true is not None:
            true = np.asarray(self.true, dtype=float)
            if true.shape != (k,):
                raise ValueError(f"true must have one value per category ({k}).")
            self.true_bars_ = ax.bar(
                x - width / 2, true, width, color="0.7", label="true"
            )
        offset = width / 2 if self.true is not None else 0.0
        self.bars_ = ax.bar(
            x + offset, est, width, color="tab:blue", label=self.estimate_label
        )
        for bar, s in zip(self.bars_, mask, strict=False):
            if s:
                bar.set_hatch("//")
                bar.set_edgecolor(_SENSITIVE_COLOR)
        ax.set_xticks(x)
        ax.set_xticklabels(cats, rotation=90 if k > 8 else 0)
        for tick, s in zip(ax.get_xticklabels(), mask, strict=False):
            if s:
                tick.set_color(_SENSITIVE_COLOR)
        from matplotlib.patches import Patch

        handles = [Patch(facecolor="tab:blue", label=self.estimate_label)]
        if self.true_bars_ is not None:
            handles.insert(0, Patch(facecolor="0.7", label="true"))
        if mask.any():
            handles.append(
                Patch(
                    facecolor="white",
                    edgecolor=_SENSITIVE_COLOR,
                    hatch="//",
                    label="sensitive",
                )
            )
        ax.legend(handles=handles, fontsize="small")
        ax.axhline(0, color="k", linewidth=0.5)
        ax.set_ylabel("probability")
        self.ax_, self.figure_ = ax, fig
        return self

    @classmethod
    def from_estimator(
        cls, estimator, X=None, *, p_true=None, sensitive="auto", ax=None
    ):
        """Plot a fitted distribution estimator's estimate.

        Parameters
        ----------
        estimator : fitted DistributionEstimator or Pipeline ending with one
        X : array-like of true values, default=None
            The true data (simulations); its distribution is drawn alongside.
        p_true : array-like of shape (k,), default=None
            The true distribution, instead of ``X``.
        sensitive : "auto", array-like of bool or None, default="auto"
            ``"auto"`` marks the channel's sensitive categories (none for an
            LDP mechanism, where every category is protected alike).
        ax : matplotlib Axes, default=None

        Returns
        -------
        display : DistributionDisplay
        """
        from ..model_selection._search import _final_estimator, true_distribution

        est = _final_estimator(estimator)
        cats = est.categories_
        if isinstance(sensitive, str) and sensitive == "auto":
            mask = est.channel_.sensitive_mask
            sensitive = None if mask.all() else mask
        if X is not None:
            p_true = true_distribution(X, cats)
        return cls(
            cats,
            est.distribution_,
            true=p_true,
            sensitive=sensitive,
            estimate_label=type(est).__name__,
        ).plot(ax=ax)

    @classmethod
    def from_predictions(
        cls, p_true, p_est, *, categories=None, sensitive=None, ax=None
    ):
        """Plot an estimate against the true distribution.

        Parameters
        ----------
        p_true : array-like of shape (k,) or None
        p_est : array-like of shape (k,) or Series
            A Series gives the categories through its index.
        categories : array-like of shape (k,), default=None
        sensitive : array-like of bool of shape (k,), default=None
        ax : matplotlib Axes, default=None

        Returns
        -------
        display : DistributionDisplay
        """
        if categories is None:
            categories = (
                p_est.index if isinstance(p_est, pd.Series) else np.arange(len(p_est))
            )
        return cls(
            categories, np.asarray(p_est, dtype=float), true=p_true, sensitive=sensitive
        ).plot(ax=ax)


class ErrorBarDisplay:
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

    def __init__(self, categories, estimated, intervals, *, true=None,
                 sensitive=None, interval_label="95% interval"):
        self.categories = categories
        self.estimated = estimated
        self.intervals = intervals
        self.true = true
        self.sensitive = sensitive
        self.interval_label = interval_label

    def plot(self, ax=None, *, sort=False):
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
        cats = np.asarray([str(c) for c in np.asarray(self.categories, dtype=object)],
                          dtype=object)
        k = cats.size
        est = np.asarray(self.estimated, dtype=float)
        ci = np.asarray(self.intervals, dtype=float)
        if est.shape != (k,) or ci.shape != (k, 2):
            raise ValueError(
                f"estimated must have shape ({k},) and intervals ({k}, 2), one "
                f"row per category; got {est.shape} and {ci.shape}.")
        mask = _sensitive_or_none(self.sensitive, k)
        true = None if self.true is None else np.asarray(self.true, dtype=float)
        if true is not None and true.shape != (k,):
            raise ValueError(f"true must have one value per category ({k}).")
        order = np.argsort(est, kind="stable") if sort else np.arange(k)[::-1]
        ax, fig = _axes(ax, figsize=(6, max(3, 0.28 * k)))
        y = np.arange(k)
        e, lo, hi = est[order], ci[order, 0], ci[order, 1]
        xerr = np.vstack([np.clip(e - lo, 0, None), np.clip(hi - e, 0, None)])
        self.errorbar_ = ax.errorbar(e, y, xerr=xerr, fmt="o", color="tab:blue",
                                     ecolor="tab:blue", capsize=2, markersize=4,
                                     label=self.interval_label)
        self.true_points_ = None
        self.coverage_ = None
        if true is not None:
            (self.true_points_,) = ax.plot(true[order], y, "D", mfc="none",
                                           color="k", markersize=5, label="true")
            self.coverage_ = float(np.mean((ci[:, 0] <= true) & (true <= ci[:, 1])))
        ax.set_yticks(y)
        ax.set_yticklabels(cats[order])
        for tick, s in zip(ax.get_yticklabels(), mask[order], strict=False):
            if s:
                tick.set_color(_SENSITIVE_COLOR)
        if mask.any():
            ax.plot(e[mask[order]], y[mask[order]], "o", color=_SENSITIVE_COLOR,
                    markersize=4, label="sensitive")
        ax.axvline(0, color="k", linewidth=0.5)
        ax.set_xlabel("probability")
        ax.legend(fontsize="small", loc="lower right")
        self.ax_, self.figure_ = ax, fig
        return self

    @classmethod
    def from_estimator(cls, estimator, X=None, *, p_true=None, alpha=0.05,
                       method="auto", simultaneous=False, sensitive="auto",
                       sort=False, ax=None):
        """Plot a fitted estimator's estimate with its confidence intervals.

        Parameters
        ----------
        estimator : fitted DistributionEstimator or Pipeline ending with one
        X : array-like of true values, default=None
            The true data (simulations); its distribution is drawn alongside.
        p_true : array-like of shape (k,), default=None
            The true distribution, instead of ``X``.
        alpha, method, simultaneous
            Passed to ``estimator.confidence_intervals``.
        sensitive : "auto", array-like of bool or None, default="auto"
            ``"auto"`` marks the channel's sensitive categories (none for an
            LDP mechanism).
        sort : bool, default=False
        ax : matplotlib Axes, default=None

        Returns
        -------
        display : ErrorBarDisplay
        """
        from ..model_selection._search import _final_estimator, true_distribution

        est = _final_estimator(estimator)
        cats = est.categories_
        if isinstance(sensitive, str) and sensitive == "auto":
            mask = np.asarray(est.channel_.sensitive_mask)[:len(cats)]
            sensitive = None if mask.all() else mask
        if X is not None:
            p_true = true_distribution(X, cats)
        ci = est.confidence_intervals(alpha, method=method, simultaneous=simultaneous)
        label = (f"{100 * (1 - alpha):g}% "
                 f"{'simultaneous ' if simultaneous else ''}interval")
        return cls(cats, est.distribution_, ci, true=p_true, sensitive=sensitive,
                   interval_label=label).plot(ax=ax, sort=sort)

    @classmethod
    def from_intervals(cls, estimated, intervals, *, categories=None, true=None,
                       sensitive=None, sort=False, ax=None):
        """Plot estimates and intervals computed elsewhere.

        Parameters
        ----------
        estimated : array-like of shape (k,) or Series
            A Series gives the categories through its index.
        intervals : array-like of shape (k, 2)
        categories : array-like of shape (k,), default=None
        true : array-like of shape (k,), default=None
        sensitive : array-like of bool of shape (k,), default=None
        sort : bool, default=False
        ax : matplotlib Axes, default=None

        Returns
        -------
        display : ErrorBarDisplay
        """
        if categories is None:
            categories = (estimated.index if isinstance(estimated, pd.Series)
                          else np.arange(len(estimated)))
        return cls(categories, np.asarray(estimated, dtype=float), intervals,
                   true=true, sensitive=sensitive).plot(ax=ax, sort=sort)


class GridHeatmapDisplay:
    """A distribution over a grid-shaped domain (locations) as a heatmap.

    Categories are the cells in row-major order (as
    :func:`~sklearn_uldp.datasets.grid_cell_labels`); sensitive cells are
    outlined.

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
    """

    def __init__(self, distribution, shape, *, sensitive=None):
        self.distribution = distribution
        self.shape = shape
        self.sensitive = sensitive

    def plot(self, ax=None, *, cmap="viridis", title=None, colorbar=True):
        """Draw the heatmap.

        Parameters
        ----------
        ax : matplotlib Axes, default=None
        cmap : str, default="viridis"
        title : str, default=None
        colorbar : bool, default=True

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
        ax.set_xlabel("column")
        ax.set_ylabel("row")
        self.ax_, self.figure_ = ax, fig
        return self

    @classmethod
    def from_estimator(cls, estimator, shape, *, sensitive="auto", ax=None, **kwargs):
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
        from ..model_selection._search import _final_estimator

        est = _final_estimator(estimator)
        if isinstance(sensitive, str) and sensitive == "auto":
            mask = est.channel_.sensitive_mask
            sensitive = None if mask.all() else mask
        return cls(est.distribution_, shape, sensitive=sensitive).plot(ax=ax, **kwargs)
