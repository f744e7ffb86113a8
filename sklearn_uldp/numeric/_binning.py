"""The binned route: a numeric column as public bins, for any categorical mechanism.

:class:`Binner` maps each value of a public range to the midpoint of its
bin (public edges: equal widths, or given edges), so a categorical
mechanism over those midpoints (``categories=binner.categories_``)
privatizes the column and every categorical estimator, check and test
applies. With a utility-optimized mechanism (uRR, uRAP), the bins that meet
a sensitive range are the sensitive categories
(:meth:`Binner.sensitive_categories`): a pure epsilon-ULDP route for
numeric data, whose price is the binning (a value is known to its bin).
"""

from __future__ import annotations

import warnings
from numbers import Integral
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import _check_feature_names_in, check_is_fitted

from ..exceptions import PrivacyLeakWarning
from ..utils._typing import ArrayLike
from ._base import NUMERIC_PARAMETER_HINTS, _numeric_values, check_bounds, clip_to_bounds
from ._utility_optimized import check_sensitive_ranges

__all__ = ["Binner"]

_HINTS = {
    **NUMERIC_PARAMETER_HINTS,
    "bins": (
        "Pass the number of equal-width bins (an int >= 2) or the public bin "
        "edges as an increasing list, e.g. bins=[0, 18, 30, 50, 120]."
    ),
}


class Binner(TransformerMixin, BaseEstimator):
    """Map a numeric column to public bins (their midpoints), for categorical mechanisms.

    The bins are public (fixed before collection, never learned from the
    data): ``bins`` equal-width bins of ``bounds``, or explicit edges. Each
    value becomes the midpoint of its bin (bins are ``[e_i, e_{i+1})``, the
    last one closed); values outside the bounds are clipped with a
    :class:`~sklearn_uldp.exceptions.ClippingWarning`. The midpoints
    (``categories_``) are the domain of the categorical mechanism that
    follows, so ``distribution_ @ categories_`` estimates the mean (up to the
    binning) and every categorical estimator works.

    Parameters
    ----------
    bins : int or array-like of float, default=10
        Number of equal-width bins, or increasing bin edges (then they define
        the bounds).
    bounds : (float, float) or "auto", default="auto"
        The public range (ignored when ``bins`` gives the edges). "auto"
        learns it from X at ``fit`` with a
        :class:`~sklearn_uldp.exceptions.PrivacyLeakWarning`.

    Attributes
    ----------
    bin_edges_ : ndarray of shape (n_bins + 1,)
    categories_ : ndarray of shape (n_bins,)
        The bins' midpoints: the categorical domain.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Defined when X has string column names.

    Examples
    --------
    A pure-ULDP route for ages with the minors sensitive: bins, then uRR.

    >>> import numpy as np
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn_uldp import Binner, EMEstimator, UtilityOptimizedRR
    >>> binner = Binner(bins=[0, 18, 30, 45, 65, 100]).fit()
    >>> binner.categories_.tolist()
    [9.0, 24.0, 37.5, 55.0, 82.5]
    >>> sensitive = binner.sensitive_categories((0, 18))
    >>> sensitive  # [0, 18] is closed: the bin [18, 30) holds 18
    [9.0, 24.0]
    >>> pipe = make_pipeline(binner, UtilityOptimizedRR(
    ...     epsilon=1.0, categories=binner.categories_, sensitive=sensitive,
    ...     random_state=0))
    >>> ages = np.random.default_rng(0).integers(0, 100, size=(20_000, 1))
    >>> est = EMEstimator().fit(pipe.fit_transform(ages))
    >>> est.distribution_.round(2).tolist()
    [0.18, 0.12, 0.15, 0.2, 0.35]
    """

    _parameter_constraints: dict[str, list[Any]] = {
        "bins": [Interval(Integral, 2, None, closed="left"), "array-like"],
        "bounds": [StrOptions({"auto"}), "array-like"],
    }

    def __init__(self, bins: Any = 10, *, bounds: Any = "auto") -> None:
        self.bins = bins
        self.bounds = bounds

    def _edges(self, X):
        if not isinstance(self.bins, Integral):
            edges = np.asarray(self.bins, dtype=float)
            if edges.ndim != 1 or edges.size < 3:
                raise ValueError(f"bins={self.bins!r}: give at least 3 edges. {_HINTS['bins']}")
            if not (np.isfinite(edges).all() and np.all(np.diff(edges) > 0)):
                raise ValueError(
                    f"bins={self.bins!r} must be finite and strictly increasing. {_HINTS['bins']}"
                )
            check_bounds((edges[0], edges[-1]))
            return edges
        if isinstance(self.bounds, str):
            if X is None:
                raise ValueError(
                    "bounds='auto' learns the range from X, so X is required. Pass "
                    "bounds=(low, high) (the public range) or explicit bin edges."
                )
            warnings.warn(
                "bounds='auto' learns the range from the private data, which reveals "
                "its extreme values. Pass bounds=(low, high) in a deployment.",
                PrivacyLeakWarning,
                stacklevel=3,
            )
            low, high = float(X.min()), float(X.max())
            if not low < high:
                raise ValueError(f"X holds a single value {low!r}; pass bounds=(low, high).")
        else:
            low, high = check_bounds(self.bounds)
        return np.linspace(low, high, int(self.bins) + 1)

    def fit(self, X: ArrayLike | None = None, y: object = None) -> Binner:
        """Fix the public bins (X is only validated, or read for bounds="auto").

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), default=None
        y : None
            Ignored.

        Returns
        -------
        self : Binner
        """
        from ..utils._validation import validate_params_with_hints

        validate_params_with_hints(self, _HINTS)
        values = None
        if X is None:
            self.n_features_in_ = 1
            self.__dict__.pop("feature_names_in_", None)
            self._fitted_without_data = True
        else:
            self._fitted_without_data = False
            values = _numeric_values(X, self, reset=True)
        self.bin_edges_ = self._edges(values)
        self.categories_ = 0.5 * (self.bin_edges_[:-1] + self.bin_edges_[1:])
        return self

    def transform(self, X: ArrayLike) -> Any:
        """The midpoint of each value's bin.

        Parameters
        ----------
        X : array-like of shape (n_samples, `n_features_in_`)

        Returns
        -------
        binned : ndarray or DataFrame of shape (n_samples, `n_features_in_`)
        """
        check_is_fitted(self, "bin_edges_")
        values = _numeric_values(X, self, reset=False)
        names = [str(n) for n in getattr(self, "feature_names_in_", [])] or [
            f"x{j}" for j in range(values.shape[1])
        ]
        clip_to_bounds(values, (self.bin_edges_[0], self.bin_edges_[-1]), names)
        index = np.clip(
            np.searchsorted(self.bin_edges_, values, side="right") - 1,
            0,
            self.categories_.size - 1,
        )
        return self.categories_[index]

    def sensitive_categories(self, sensitive: Any) -> list[float]:
        """The bins (midpoints) that meet the sensitive range(s).

        A bin is sensitive when any of its values is, so a sensitive value
        always falls in a sensitive bin.

        Parameters
        ----------
        sensitive : (low, high) or list of (low, high)

        Returns
        -------
        categories : list of float
        """
        check_is_fitted(self, "bin_edges_")
        edges = self.bin_edges_
        ranges = check_sensitive_ranges(sensitive, (float(edges[0]), float(edges[-1])))
        lows, highs = edges[:-1], edges[1:]
        last = np.arange(lows.size) == lows.size - 1
        hit = np.zeros(lows.size, dtype=bool)
        for lo, hi in ranges:
            # [lows, highs) (the last bin closed) meets [lo, hi]
            hit |= (lows <= hi) & ((highs > lo) | (last & (highs >= lo)))
        return self.categories_[hit].tolist()

    def get_feature_names_out(self, input_features: ArrayLike | None = None) -> np.ndarray:
        """The input names (one binned column per input column).

        Parameters
        ----------
        input_features : array-like of str, default=None

        Returns
        -------
        feature_names_out : ndarray of str objects
        """
        check_is_fitted(self, "bin_edges_")
        return np.asarray(_check_feature_names_in(self, input_features), dtype=object)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        tags.requires_fit = True
        return tags
