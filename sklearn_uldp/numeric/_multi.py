"""Several numeric attributes per user: sampling m of d attributes (Wang et al.).

Wang et al. (ICDE 2019, Algorithm 4) privatize a row of d numeric
attributes by sampling m of them uniformly without replacement and
reporting each sampled one with budget epsilon / m (by sequential
composition the row spends epsilon), with

    m = max(1, min(d, floor(epsilon / 2.5)))

for the Piecewise and Hybrid mechanisms (their Eq. (12)). Compared with
reporting every attribute at epsilon / d ("split"), each attribute is
reported by m/d of the users but with a much larger budget, which wins for
every d > m.

Here an attribute that is not sampled is reported as NaN (the sampled set
is independent of the data, and public). The mean of each attribute is
estimated from the users who reported it: the mean of their reports, which
is unbiased given the (data-independent) sample and never has a larger
variance than the paper's scaled estimator ``(d / m) * sum / n``.
"""

from __future__ import annotations

import math
import numbers
import warnings
from typing import Any

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ..exceptions import PrivacyLeakWarning, ReportMismatchError
from ..mechanisms._channel import Channel, ReportStatistics
from ..utils._typing import ArrayLike, RandomStateLike
from ..utils._validation import check_epsilon
from ._base import (
    NUMERIC_PARAMETER_HINTS,
    BaseNumericMechanism,
    NumericChannel,
    _numeric_values,
    _ranges_schema,
    check_bounds,
    clip_to_bounds,
)
from ._docs import fill_numeric_doc
from ._duchi import DuchiChannel
from ._mean import _moments, interval_bounds
from ._piecewise import HybridChannel, PiecewiseChannel

__all__ = ["MultiNumericMechanism", "MultiNumericChannel", "optimal_sampled_attributes"]

_BASES = {"duchi": DuchiChannel, "piecewise": PiecewiseChannel, "hybrid": HybridChannel}


def optimal_sampled_attributes(epsilon: float, n_attributes: int) -> int:
    """Wang et al.'s number of attributes to sample: ``max(1, min(d, floor(eps / 2.5)))``.

    Examples
    --------
    >>> from sklearn_uldp.numeric import optimal_sampled_attributes
    >>> [optimal_sampled_attributes(eps, 10) for eps in (1.0, 5.0, 12.0, 40.0)]
    [1, 2, 4, 10]
    """
    return max(1, min(int(n_attributes), int(math.floor(epsilon / 2.5))))


class MultiNumericChannel(Channel):
    """Rows of d numeric attributes, m of them sampled and reported at epsilon / m.

    Parameters
    ----------
    bounds : list of (float, float)
        The public range of each attribute.
    epsilon : float
        The budget of a row (each sampled attribute gets ``epsilon / n_sampled``).
    attribute_mechanism : {"duchi", "piecewise", "hybrid"}
        The mechanism of each sampled attribute.
    n_sampled : int
        Attributes reported per row (m), ``1 <= m <= d``.

    Examples
    --------
    >>> from sklearn_uldp.numeric import MultiNumericChannel
    >>> channel = MultiNumericChannel([(0, 1), (0, 100)], 2.0, "hybrid", 1)
    >>> channel.attribute_channel(1)
    HybridChannel(bounds=(0.0, 100.0), epsilon=2.0)
    """

    name = "multi_numeric"
    report_format = "numeric_rows"
    has_categories = False
    unbiased_reports = True
    default_estimator_path = "sklearn_uldp.numeric:MeanEstimator"
    estimator_base_path = None
    missing_report_dtype = "float64"
    #: Attributes each user reports (set by the constructor).
    n_sampled: int

    _spec_field_schemas: dict[str, dict[str, Any]] = {
        **Channel._spec_field_schemas,
        "bounds": _ranges_schema("The public range [low, high] of each attribute."),
        "attribute_mechanism": {
            "enum": sorted(_BASES),
            "description": "The mean mechanism of each sampled attribute.",
        },
        "n_sampled": {
            "type": "integer",
            "minimum": 1,
            "description": "Attributes sampled (and reported) per row.",
        },
    }

    def __init__(
        self, bounds: Any, epsilon: float, attribute_mechanism: str, n_sampled: int
    ) -> None:
        self.epsilon = check_epsilon(epsilon)
        if isinstance(bounds, (str, bytes)) or not hasattr(bounds, "__len__") or not len(bounds):
            raise ValueError(f"bounds must be a list of (low, high) pairs, got {bounds!r}.")
        self.bounds = [check_bounds(b, name=f"bounds[{j}]") for j, b in enumerate(bounds)]
        if not isinstance(attribute_mechanism, str) or attribute_mechanism not in _BASES:
            raise ValueError(
                f"attribute_mechanism must be one of {sorted(_BASES)}, got {attribute_mechanism!r}."
            )
        self.attribute_mechanism = attribute_mechanism
        d = len(self.bounds)
        if (
            isinstance(n_sampled, bool)
            or not isinstance(n_sampled, numbers.Integral)
            or not 1 <= n_sampled <= d
        ):
            raise ValueError(f"n_sampled must be an integer in [1, {d}], got {n_sampled!r}.")
        self.n_sampled = int(n_sampled)
        base: type[NumericChannel] = _BASES[attribute_mechanism]
        self._attributes: list[NumericChannel] = [
            base(b, self.epsilon / self.n_sampled) for b in self.bounds
        ]

    def get_params(self):
        return {
            "bounds": [list(b) for b in self.bounds],
            "epsilon": self.epsilon,
            "attribute_mechanism": self.attribute_mechanism,
            "n_sampled": self.n_sampled,
        }

    def _domain_spec(self):
        return {}

    def _domain_key(self):
        return ()

    def __repr__(self):
        return (
            f"MultiNumericChannel(d={self.n_attributes}, epsilon={self.epsilon!r}, "
            f"attribute_mechanism={self.attribute_mechanism!r}, n_sampled={self.n_sampled})"
        )

    @property
    def n_attributes(self) -> int:
        return len(self.bounds)

    @property
    def report_width(self) -> int:
        return self.n_attributes  # a row: one number per attribute, NaN if not sampled

    def report_column_names(self, column):
        """``<column>_<j>`` for attribute j (the mechanism names them after its inputs)."""
        return [f"{column}_{j}" for j in range(self.n_attributes)]

    def report_dtypes(self, column):
        return [np.dtype(np.float64)] * self.n_attributes

    def attribute_channel(self, j: int) -> Channel:
        """The channel of attribute j (its mechanism at epsilon / n_sampled)."""
        return self._attributes[j]

    # ------------------------------------------------------------- collector
    def row_statistics(self, reports):
        """Per-attribute histograms of output codes of the reported attributes."""
        return self.statistics(self.encode_reports(reports))

    def sampled_channel(self, n_attributes):
        raise ValueError(
            "MultiNumericChannel reports a row of several attributes and samples them "
            "itself (its n_sampled); it is not one attribute's column of a sampling "
            "strategy: use one numeric mechanism per column."
        )

    def sampled_fake_channel(self, n_attributes, fake="random"):
        return self.sampled_channel(n_attributes)

    def fake_kinds(self):
        return ()  # see sampled_channel

    def encode_reports(self, reports):
        """The rows of reports, checked: one number per attribute, NaN where not sampled."""
        arr = reports.to_numpy() if hasattr(reports, "to_numpy") else np.asarray(reports)
        arr = np.asarray(arr, dtype=float)
        if arr.ndim != 2 or arr.shape[1] != self.n_attributes:
            raise ReportMismatchError(
                f"Expected rows of {self.n_attributes} attributes (NaN where not "
                f"sampled), got shape {arr.shape}."
            )
        reported = (~np.isnan(arr)).sum(axis=1)
        if np.any(reported != self.n_sampled):
            raise ReportMismatchError(
                f"Each row reports {self.n_sampled} attribute(s) (the others NaN); some "
                f"rows report {sorted(set(reported.tolist()) - {self.n_sampled})[:5]}."
            )
        return arr

    def statistics(self, codes, *, keep_reports=False):
        """Per-attribute histograms of the output codes of checked rows (additive)."""
        arr = codes
        counts = []
        for j, channel in enumerate(self._attributes):
            column = arr[:, j]
            shown = ~np.isnan(column)
            codes = channel.encode_reports(column[shown])
            counts.append(np.bincount(codes, minlength=channel.n_outputs).astype(np.int64))
        return ReportStatistics(self, int(arr.shape[0]), np.stack(counts))

    def report_moments(self, stats):
        """Per-attribute mean, standard deviation, skewness and count of reports."""
        rows = []
        for j, channel in enumerate(self._attributes):
            counts = stats.counts[j]
            n = int(counts.sum())
            if n == 0:
                raise ValueError(f"No reports of attribute {j}: fit on more rows.")
            moment = _moments(channel.output_values(), counts, n)
            bounds = interval_bounds(channel)
            moment["variance_bound"], moment["range_bound"], moment["skewness_bound"] = bounds
            rows.append(moment)
        return {key: np.array([row[key] for row in rows]) for key in rows[0]}


@fill_numeric_doc
class MultiNumericMechanism(BaseNumericMechanism):
    """Several numeric attributes per user: sample m of d, each at epsilon / m.

    Wang et al.'s protocol for a row of d bounded numeric attributes: each
    user reports m attributes chosen uniformly at random (independently of
    the data), each with the mean mechanism ``mechanism`` at budget
    ``epsilon / m``; the other attributes are reported as NaN. The row
    spends ``epsilon`` (:attr:`epsilon_spent_`). :class:`MeanEstimator` gives
    one mean per attribute.

    Parameters
    ----------
    epsilon : float, default=1.0
        The budget of a row.
    bounds : (float, float), list of (float, float) or "auto", default="auto"
        The public range of each attribute (one pair for all of them).
    mechanism : {"hybrid", "piecewise", "duchi"}, default="hybrid"
        The mean mechanism of each sampled attribute.
    strategy : {"sample", "split"}, default="sample"
        "sample": m attributes per row (Wang et al.); "split": every
        attribute at epsilon / d (m = d). The names follow
        :class:`~sklearn_uldp.compose.DataFramePrivatizer`'s strategies.
    n_sampled : int or "auto", default="auto"
        m for ``strategy="sample"``: "auto" is Wang et al.'s
        ``max(1, min(d, floor(epsilon / 2.5)))``.
    %(random_state)s

    Attributes
    ----------
    bounds_ : list of tuple of float
    n_sampled_ : int
    channel_ : MultiNumericChannel
    %(features_in)s

    %(wang_references)s

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp import MeanEstimator, MultiNumericMechanism
    >>> rng = np.random.default_rng(0)
    >>> X = np.column_stack([rng.uniform(0, 1, 50_000), rng.uniform(20, 80, 50_000),
    ...                      rng.uniform(0, 10, 50_000)])
    >>> mech = MultiNumericMechanism(epsilon=3.0, bounds=[(0, 1), (0, 100), (0, 10)],
    ...                              random_state=0)
    >>> reports = mech.fit_transform(X)
    >>> mech.n_sampled_, int(np.isnan(reports).sum(axis=1).max())
    (1, 2)
    >>> est = MeanEstimator().fit(reports)
    >>> bool(np.all(np.abs(est.mean_ - X.mean(axis=0)) < 4 * est.standard_error_))
    True
    """

    _parameter_constraints: dict[str, list[Any]] = {
        **BaseNumericMechanism._parameter_constraints,
        "mechanism": [StrOptions(set(_BASES))],
        "strategy": [StrOptions({"sample", "split"})],
        "n_sampled": [StrOptions({"auto"}), Interval(numbers.Integral, 1, None, closed="left")],
    }

    def __init__(
        self,
        epsilon: float = 1.0,
        *,
        bounds: Any = "auto",
        mechanism: str = "hybrid",
        strategy: str = "sample",
        n_sampled: int | str = "auto",
        random_state: RandomStateLike = None,
    ) -> None:
        self.epsilon = epsilon
        self.bounds = bounds
        self.mechanism = mechanism
        self.strategy = strategy
        self.n_sampled = n_sampled
        self.random_state = random_state

    def fit(self, X: ArrayLike | None = None, y: object = None) -> MultiNumericMechanism:
        """Fix the ranges and the number of sampled attributes, build the channel.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_attributes), default=None
            Required with ``bounds="auto"``, or to know d from the data when
            ``bounds`` is one pair; without it, d = ``len(bounds)``.
        y : None
            Ignored.

        Returns
        -------
        self : MultiNumericMechanism
        """
        from ..utils._validation import validate_params_with_hints

        validate_params_with_hints(self, NUMERIC_PARAMETER_HINTS)
        self._check_params()
        values = None
        if X is None:
            if isinstance(self.bounds, str):
                raise ValueError(
                    "bounds='auto' learns the ranges from X, so X is required. Pass "
                    "bounds=[(low, high), ...] (the public ranges) to fit without data."
                )
            pairs = self._pairs(None)
            self.n_features_in_ = len(pairs)
            self.__dict__.pop("feature_names_in_", None)
            self._fitted_without_data = True
        else:
            self._fitted_without_data = False
            values = _numeric_values(X, self, reset=True)
            pairs = self._pairs(values)
        d = self.n_features_in_
        if len(pairs) != d:
            raise ValueError(f"bounds gives {len(pairs)} ranges for {d} attributes.")
        if self.strategy == "split":
            if self.n_sampled != "auto":
                raise ValueError(
                    "n_sampled applies to strategy='sample'; 'split' reports every "
                    "attribute (leave n_sampled='auto')."
                )
            m = d
        elif self.n_sampled == "auto":
            m = optimal_sampled_attributes(float(self.epsilon), d)
        else:
            m = int(self.n_sampled)
            if m > d:
                raise ValueError(f"n_sampled={m} exceeds the {d} attributes.")
        self.bounds_ = pairs
        self.n_sampled_ = m
        self.channel_ = MultiNumericChannel(pairs, self.epsilon, self.mechanism, m)
        self._start_random_stream()
        return self

    def _pairs(self, values):
        bounds = self.bounds
        if isinstance(bounds, str):
            warnings.warn(
                "bounds='auto' learns the ranges from the private data, which reveals "
                "their extreme values. Pass bounds=[(low, high), ...] in a deployment.",
                PrivacyLeakWarning,
                stacklevel=3,
            )
            return [
                check_bounds((values[:, j].min(), values[:, j].max()))
                for j in range(values.shape[1])
            ]
        arr = np.asarray(bounds, dtype=object)
        if arr.ndim == 1:
            pair = check_bounds(bounds)
            d = 1 if values is None else values.shape[1]
            return [pair] * d
        return [check_bounds(b, name=f"bounds[{j}]") for j, b in enumerate(bounds)]

    def transform(self, X: ArrayLike) -> Any:
        """Report m sampled attributes of each row (NaN for the others).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_attributes)

        Returns
        -------
        reports : ndarray or DataFrame of shape (n_samples, n_attributes)
        """
        check_is_fitted(self, "channel_")
        values = _numeric_values(X, self, reset=False)
        names = self._input_names()
        for j, name in enumerate(names):
            clip_to_bounds(values[:, j : j + 1], self.bounds_[j], [name])  # a view: in place
        n, d = values.shape
        m = self.n_sampled_
        rng = self._transform_rng(np.ascontiguousarray(values).view(np.uint64), 2**64)
        if m == d:
            sampled = np.ones((n, d), dtype=bool)
        else:
            keys = rng.random((n, d))
            chosen = np.argpartition(keys, m - 1, axis=1)[:, :m]
            sampled = np.zeros((n, d), dtype=bool)
            np.put_along_axis(sampled, chosen, True, axis=1)
        out = np.full((n, d), np.nan)
        for j in range(d):
            channel = self.channel_.attribute_channel(j)
            rows = np.flatnonzero(sampled[:, j])
            codes = channel.sample(np.ascontiguousarray(values[rows, j]), rng)
            out[rows, j] = channel.output_values()[codes]
        return self._container(out, X)

    @property
    def epsilon_spent_(self) -> float:
        """The budget a row spends: epsilon (m attributes at epsilon / m)."""
        check_is_fitted(self, "channel_")
        return float(self.channel_.epsilon)

    def column_reports(self, reports: Any, column: int | str) -> Any:
        raise NotImplementedError(
            "The attributes of a MultiNumericMechanism row are estimated together: "
            "MeanEstimator().fit(reports).mean_[j] is attribute j's mean."
        )

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = []
        return tags
