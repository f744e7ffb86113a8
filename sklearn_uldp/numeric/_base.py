"""Bounded numeric columns: the channel and mechanism base classes.

A numeric mechanism privatizes values of a public range ``bounds=(low,
high)``. Its reports are numbers in the column's units, drawn from a finite
public *alphabet* (the cells of a fixed output grid, two symbols, or both),
so that

* the channel is exact and finite: :meth:`NumericChannel.output_probabilities`
  gives the law of the output code for any input, and the privacy checks
  read it as a matrix (one row per input of a grid);
* a report's float value is a function of its code alone (its low-order bits
  never depend on the input: the floating-point leak of continuous samplers,
  Mironov CCS 2012, cannot occur);
* the sufficient statistics are the histogram of output codes, integers that
  add up exactly across chunks (``partial_fit`` equals ``fit`` bit for bit).

The output grid has :data:`GRID_CELLS` cells (2**16): its rounding of the
papers' continuous outputs is far below the noise (a cell is 1/65536 of the
output range) and is part of the spec version.
"""

from __future__ import annotations

import math
import numbers
import warnings
from numbers import Real
from typing import Any, TypeVar

import numpy as np
import pandas as pd
from sklearn.base import clone
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import _check_feature_names_in, check_is_fitted, validate_data

from ..exceptions import ClippingWarning, PrivacyLeakWarning, ReportMismatchError
from ..mechanisms._base import PARAMETER_HINTS as _MECHANISM_HINTS
from ..mechanisms._base import RANDOM_STATE_CONSTRAINT
from ..mechanisms._channel import Channel, ReportStatistics, several_columns_hint
from ..mechanisms._core import PrivatizerBase
from ..mechanisms._registry import spec_class
from ..mechanisms._reports import attach_channel
from ..utils._numba import use_compiled
from ..utils._typing import ArrayLike, RandomStateLike, TransformOutput
from ..utils._validation import (
    check_epsilon,
    check_in_memory,
    check_realizable,
    describe_values,
    non_numeric_error,
    positions,
    safe_ndim,
    validate_params_with_hints,
)
from ._kernels import grid_encode

__all__ = [
    "NumericChannel",
    "BaseNumericMechanism",
    "GRID_CELLS",
    "check_bounds",
    "NUMERIC_PARAMETER_HINTS",
    "clip_to_bounds",
    "warn_clipped",
]

#: Cells of the output grid of the continuous-output mechanisms (Piecewise,
#: Square Wave, the Piecewise part of Hybrid) and points of the disclosure
#: grid of the utility-optimized one-bit mechanism.
GRID_CELLS = 1 << 16

#: How to fix an invalid parameter of a numeric mechanism.
NUMERIC_PARAMETER_HINTS: dict[str, str] = {
    **_MECHANISM_HINTS,
    "bounds": (
        "Pass the public range of the column as bounds=(low, high) with "
        "low < high, e.g. bounds=(0, 120) for ages (or 'auto' to learn it "
        "from X, which reveals the extreme values)."
    ),
    # Numeric sensitive data are ranges of values, not categories.
    "sensitive": (
        "Pass the sensitive values as a closed range (low, high) in the column's "
        "units, or a list of ranges, e.g. sensitive=(0, 0.5) or "
        "sensitive=[(0, 18), (90, float('inf'))] (an end may be infinite); "
        "None makes the whole of the bounds sensitive."
    ),
}

_MechanismT = TypeVar("_MechanismT", bound="BaseNumericMechanism")

#: Reports privatized per compiled pass (their uniforms stay in cache).
_CHUNK = 1 << 18


def check_bounds(bounds: Any, name: str = "bounds") -> tuple[float, float]:
    """Validate a public range ``(low, high)`` and return it as two floats.

    Parameters
    ----------
    bounds : sequence of two real numbers
    name : str, default="bounds"
        The parameter's name, for messages.

    Returns
    -------
    (low, high) : tuple of float

    Raises
    ------
    ValueError, TypeError
        Saying what is wrong and how to fix it.

    Examples
    --------
    >>> from sklearn_uldp.numeric import check_bounds
    >>> check_bounds((0, 120))
    (0.0, 120.0)
    >>> check_bounds((5, 5))
    Traceback (most recent call last):
    ...
    ValueError: bounds=(5.0, 5.0) is not a range: low must be < high. ...
    """
    if isinstance(bounds, (str, bytes)) or not hasattr(bounds, "__len__"):
        raise TypeError(
            f"{name} must be a pair (low, high) of real numbers, got {bounds!r}. "
            f"{NUMERIC_PARAMETER_HINTS['bounds']}"
        )
    ndim = safe_ndim(bounds)  # a ragged pair ([[0], 10], a tampered spec) is 2-D
    values = list(np.asarray(bounds, dtype=object).ravel()) if ndim == 1 else []
    if len(values) != 2 or ndim != 1:
        raise ValueError(
            f"{name} must be a pair (low, high), got {bounds!r}. "
            f"{NUMERIC_PARAMETER_HINTS['bounds']}"
        )
    for v in values:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
            raise TypeError(
                f"{name} must hold real numbers, got {v!r} of type "
                f"{type(v).__name__}. {NUMERIC_PARAMETER_HINTS['bounds']}"
            )
    low, high = float(values[0]), float(values[1])
    if not (math.isfinite(low) and math.isfinite(high)):
        raise ValueError(
            f"{name}=({low!r}, {high!r}) must be finite: a numeric mechanism "
            "needs a bounded public range. Clip the column to a finite range first."
        )
    if not low < high:
        raise ValueError(
            f"{name}=({low!r}, {high!r}) is not a range: low must be < high. "
            f"{NUMERIC_PARAMETER_HINTS['bounds']}"
        )
    if not math.isfinite(high - low):
        raise ValueError(
            f"{name}=({low!r}, {high!r}) is too wide for float64 arithmetic; "
            "rescale the column (e.g. to thousands) first."
        )
    scale = max(abs(low), abs(high))
    if high - low < 2.0**-32 * scale:
        raise ValueError(
            f"{name}=({low!r}, {high!r}) is too narrow for its magnitude: the "
            f"report grid ({GRID_CELLS} cells) would not be representable in "
            "float64. Shift the column by a public reference value first "
            "(e.g. subtract low)."
        )
    return low, high


def _ranges_schema(description: str) -> dict[str, Any]:
    """The spec schema of a list of ranges ``[low, high]`` (at least one)."""
    pair = {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2}
    return {"type": "array", "minItems": 1, "items": pair, "description": description}


class NumericChannel(Channel):
    """Base class of the channels of bounded numeric values.

    The input domain is the interval ``bounds`` (a parameter, not a list of
    categories); the reports are the values of a finite alphabet of
    :attr:`n_outputs` output codes (:meth:`output_values`, in the column's
    units). Subclasses implement :meth:`sample` (values -> codes),
    :meth:`output_probabilities` (the exact law of the code given the
    value) and :meth:`output_values`.

    Parameters
    ----------
    bounds : (float, float)
        The public range of the values.
    epsilon : float
        The privacy budget per report.

    Notes
    -----
    The spec is ``{"mechanism", "spec_version", "bounds", "epsilon", ...}``;
    :meth:`Channel.from_dict <sklearn_uldp.mechanisms.Channel.from_dict>`
    rebuilds and validates it like any channel. The checks of
    :mod:`sklearn_uldp.privacy` read :meth:`matrix`, the exact law of the
    output code for a grid of inputs (:meth:`default_inputs`).

    Examples
    --------
    >>> from sklearn_uldp import PiecewiseMechanism
    >>> from sklearn_uldp.mechanisms import Channel
    >>> channel = PiecewiseMechanism(epsilon=1.0, bounds=(0, 100)).fit().channel_
    >>> channel.to_dict()
    {'mechanism': 'piecewise', 'spec_version': 1, 'bounds': [0.0, 100.0], 'epsilon': 1.0}
    >>> Channel.from_dict(channel.to_dict()) == channel
    True
    """

    report_format = "numeric"
    has_categories = False
    estimator_base_path = None  # its default estimator's class
    #: Whether every report is an unbiased estimate of its user's value
    #: (E[report | x] = x), so that the mean of the reports estimates the mean.
    unbiased_reports = False
    #: Why the channel cannot send fake reports under
    #: ``DataFramePrivatizer(strategy="sample+fake")``; None for the channels
    #: whose fake law (:meth:`fake_law`) and likelihood-ratio classes
    #: (:meth:`fake_ratio_classes_at`) are exact.
    fake_refusal: str | None = "its fake law and likelihood ratios are not known exactly"

    _spec_field_schemas: dict[str, dict[str, Any]] = {
        **Channel._spec_field_schemas,
        "bounds": {
            "type": "array",
            "items": {"type": "number"},
            "minItems": 2,
            "maxItems": 2,
            "description": "The public range [low, high] of the values (low < high).",
        },
    }

    def __init__(self, bounds: Any, epsilon: float) -> None:
        self.bounds = check_bounds(bounds)
        self.epsilon = check_epsilon(epsilon)

    # ------------------------------------------------------------- identity
    def get_params(self) -> dict[str, Any]:
        return {"bounds": list(self.bounds), "epsilon": self.epsilon}

    def _domain_spec(self):
        return {}

    def _domain_key(self):
        return ()

    def __repr__(self):
        params = ", ".join(
            f"{key}={value!r}" for key, value in self.get_params().items() if key != "bounds"
        )
        low, high = self.bounds
        return f"{type(self).__name__}(bounds=({low!r}, {high!r}), {params})"

    @property
    def categories(self):
        raise AttributeError(
            f"{type(self).__name__} privatizes numbers in the range {self.bounds}: it "
            "has no categories. Estimate from its reports with MeanEstimator "
            "(or SquareWaveEstimator for SquareWave), not a categorical estimator; "
            "for a distribution over categories, bin the column first (Binner)."
        )

    @property
    def n_categories(self):
        return self.categories  # raises the explanation above

    def _check_budget(self, what=None):
        what = what or f"{type(self).__name__}"
        check_realizable(self.epsilon, self._draw_probabilities, what=what)

    # ------------------------------------------------------------- collector
    @property
    def default_estimator_path(self):
        """The mean of unbiased reports, Square Wave's distribution otherwise."""
        if self.unbiased_reports:
            return "sklearn_uldp.numeric:MeanEstimator"
        return "sklearn_uldp.numeric:SquareWaveEstimator"

    @property
    def missing_report_dtype(self):
        return "float64"  # numbers in the column's units, NaN when missing

    def report_dtypes(self, column):
        return [np.dtype(np.float64)]  # numbers in the column's units

    # ------------------------------------------- the sampling strategies
    def sampled_channel(self, n_attributes):
        # SampledNumericChannel (``_sampled``, built on this module): through the
        # registry, so that the imports inside the subpackage point one way.
        return spec_class("smp_numeric")(self, n_attributes)

    def sampled_fake_channel(self, n_attributes, fake="random"):
        return spec_class("rsfd_numeric")(self, n_attributes, fake)  # SampledFakeNumericChannel

    def fake_kinds(self):
        """``("random",)``, the report of a uniformly random input, when the
        fake law is known (:attr:`fake_refusal` is None); else none."""
        return () if self.fake_refusal is not None else ("random",)

    def fake_law(self, fake: str = "random", matrix: Any = None) -> np.ndarray:
        """F: the exact law of a fake report over the outputs (a uniform input's report).

        The law over the continuum of inputs, in closed form: ``matrix`` (a
        channel matrix on a grid of inputs) is not needed and ignored.
        """
        raise ValueError(self.fake_refusal)

    @classmethod
    def fake_ratio_classes_at(cls, epsilon: float) -> tuple[np.ndarray, np.ndarray]:
        """(R+, R-) of a real report against a fake one, at budget ``epsilon``.

        ``r(y | x) = Q(y | x) / F(y)``; ``R+ = sup_x r`` and ``R- = inf_x r``
        over the continuum of inputs (closed forms), reduced to the classes
        that set the guarantees of
        :func:`~sklearn_uldp.mechanisms.fake_data_guarantees`.
        """
        raise ValueError(f"No fake reports for the numeric channel {cls.name!r}.")

    def fake_ratio_classes(self, fake="random"):
        return type(self).fake_ratio_classes_at(float(self.epsilon))

    def sample_fakes(self, fake, n, rng):
        """``n`` fake reports in column units: the reports of uniformly random inputs."""
        low, high = self.bounds
        values = np.minimum(low + (high - low) * rng.random(n), high)
        out = np.empty(n, dtype=np.float64)
        self.report(values, rng, out)
        return out

    # ----------------------------------------------------------- the domain
    @property
    def low(self) -> float:
        return self.bounds[0]

    @property
    def high(self) -> float:
        return self.bounds[1]

    def to_unit(self, values):
        """Values of the column mapped onto [-1, 1] (the papers' domain)."""
        low, high = self.bounds
        unit = (np.asarray(values, dtype=float) - low) * (2.0 / (high - low)) - 1.0
        return np.clip(unit, -1.0, 1.0)

    def from_unit(self, unit: ArrayLike) -> np.ndarray:
        """The inverse of :meth:`to_unit` (unit values back to column units)."""
        low, high = self.bounds
        return low + (np.asarray(unit, dtype=float) + 1.0) * ((high - low) / 2.0)

    def unit_fraction(self, values):
        """Where each value lies in the bounds, from 0 (low) to 1 (high)."""
        low, high = self.bounds
        return np.clip((np.asarray(values, dtype=float) - low) / (high - low), 0.0, 1.0)

    def default_inputs(self, n: int = 33) -> np.ndarray:
        """An evenly spaced grid of ``n`` inputs over the bounds (both ends)."""
        return np.linspace(self.low, self.high, n)

    # --------------------------------------------------------- the alphabet
    @property
    def n_outputs(self) -> int:
        """Size of the report alphabet."""
        raise NotImplementedError

    @property
    def report_bits(self):
        return float(np.log2(self.n_outputs))

    def output_values(self) -> np.ndarray:
        """The report (in column units) of each output code."""
        cached = self.__dict__.get("_output_values")
        if cached is None:
            cached = np.asarray(self._output_values(), dtype=float)
            cached.setflags(write=False)
            self.__dict__["_output_values"] = cached
        return cached

    def _output_values(self):
        raise NotImplementedError

    def output_labels(self):
        return np.arange(self.n_outputs)

    def protected_outputs(self):
        """Every output is protected (plain LDP)."""
        return np.ones(self.n_outputs, dtype=bool)

    def output_probabilities(self, values: ArrayLike) -> np.ndarray:
        """The exact law of the output code for each input value.

        Parameters
        ----------
        values : array-like of shape (m,)
            Inputs in column units (clipped to the bounds).

        Returns
        -------
        P : ndarray of shape (m, n_outputs)
        """
        raise NotImplementedError

    def matrix(self, inputs: ArrayLike | None = None) -> np.ndarray:
        """The channel on a grid of inputs: rows are ``inputs``, columns codes.

        Parameters
        ----------
        inputs : array-like of shape (m,), default=None
            Inputs in column units; :meth:`default_inputs` by default.

        Returns
        -------
        Q : ndarray of shape (m, n_outputs)
        """
        inputs = self.default_inputs() if inputs is None else np.asarray(inputs, dtype=float)
        return self.output_probabilities(inputs)

    def realized_matrix(self):
        # The constructor refuses the budgets for which the float64 sampler's
        # cell boundaries would move a probability by more than the allowed
        # relative slack (see _draw_probabilities), so the nominal law is the
        # one the checks must hold.
        return self.matrix()

    @property
    def sensitive_mask(self):
        """Sensitive rows of :meth:`matrix` (all of them for LDP)."""
        return np.ones(self.default_inputs().shape[0], dtype=bool)

    # ---------------------------------------------------------------- users
    def sample(self, values, rng):
        """Output codes for ``values`` (column units, within the bounds)."""
        values = np.asarray(values, dtype=float)
        return self._codes(values, rng.random(values.shape[0]))

    def _codes(self, values, uniforms):
        """Output codes for ``values`` given one uniform each (the inverse CDF)."""
        raise NotImplementedError

    def _fused(self, values, uniforms, out):
        """The compiled one-pass ``report``, or None (see ``_kernels``)."""
        return None

    def report(self, values, rng, out):
        """Privatize one column: write the reports of ``values`` into ``out``.

        Values outside the bounds are clipped (``values`` is not modified);
        returns the numbers of values below and above the bounds.
        """
        n = values.shape[0]
        # One uniform per report, drawn in chunks into a small buffer that
        # stays in cache (the stream is the one a single draw of n gives).
        buffer = np.empty(min(n, _CHUNK), dtype=np.float64)
        below = above = 0
        # The compiled pass from COMPILE_MIN_WORK values on (the numpy path
        # gives the same reports, without compiling a loop for a small column).
        compiled = use_compiled(n)
        for start in range(0, n, _CHUNK):
            stop = min(n, start + _CHUNK)
            uniforms = rng.random(out=buffer[: stop - start])
            counts = (
                self._fused(values[start:stop], uniforms, out[start:stop]) if compiled else None
            )
            if counts is None:
                counts = self._numpy_report(values[start:stop], uniforms, out[start:stop])
            below += counts[0]
            above += counts[1]
        return below, above

    def _numpy_report(self, values, uniforms, out):
        low, high = self.bounds
        below = int(np.count_nonzero(values < low))
        above = int(np.count_nonzero(values > high))
        clipped = np.clip(values, low, high)
        out[:] = self.output_values()[self._codes(clipped, uniforms)]
        return below, above

    # ------------------------------------------------------------ collector
    def _encode_tolerance(self):
        cached = self.__dict__.get("_tolerance")
        if cached is not None:
            return cached
        values = np.sort(self.output_values())
        gaps = np.diff(values)
        gaps = gaps[gaps > 0]
        span = float(values[-1] - values[0])
        tol = min(0.25 * float(gaps.min()) if gaps.size else span, 1e-6 * span)
        tol = max(tol, 8 * np.spacing(max(abs(values[0]), abs(values[-1]))))
        self.__dict__["_tolerance"] = tol
        return tol

    def _grid_run(self) -> tuple[int, int] | None:
        """``(offset, count)``: the run of output codes whose reports are
        evenly spaced (the other codes, at most two, are isolated values), or
        None (the reports are then looked up in the sorted table).

        The collector computes a report's code on the run by arithmetic and
        checks it against :meth:`output_values` (``_grid_codes``).
        """
        return None

    def _grid_codes(self, values, histogram=False):
        """The codes (or their histogram) of float reports by the grid
        arithmetic, or None: no grid run, or some report is not an output
        (:meth:`encode_reports` then says which)."""
        run = self._grid_run()
        if run is None:
            return None
        offset, count = run
        count = count if count >= 2 else 0
        table = self.output_values()
        points = self.__dict__.get("_grid_points_codes")
        if points is None:
            points = np.setdiff1d(np.arange(table.shape[0]), np.arange(offset, offset + count))
            self.__dict__["_grid_points_codes"] = points
        if points.shape[0] > 2:  # the kernel keeps two points' counts in registers
            return None
        return grid_encode(
            values, table, offset, count, points, self._encode_tolerance(), histogram=histogram
        )

    def encode_reports(self, reports):
        """Validate reports and return their output codes.

        A report must be one of the channel's output values (up to a
        tolerance far below the grid: a file written with full precision
        reads back exactly). Anything else raises
        :class:`~sklearn_uldp.exceptions.ReportMismatchError`.
        """
        values = _as_float_reports(reports, self, check_finite=False)
        codes = self._grid_codes(values)
        if codes is not None:
            return codes
        return self._searched_codes(values)

    def _searched_codes(self, values):
        """The codes of ``values`` through the sorted table, with the errors."""
        _check_finite_reports(values, self)
        codes = self._nearest_codes(values)
        table = self.output_values()
        bad = ~(np.abs(table[codes] - values) <= self._encode_tolerance())
        if bad.any():
            raise ReportMismatchError(
                f"Reports hold {int(bad.sum())} value(s) that {self!r} cannot produce "
                f"(at {positions(bad)}): its "
                f"reports are {self.n_outputs} fixed values between "
                f"{table.min():.6g} and {table.max():.6g}. Were raw values passed "
                "instead of reports, the reports rounded (write them with full "
                "precision), or produced by another mechanism?"
            )
        return codes

    def _statistics_of(self, reports):
        """``statistics(encode_reports(reports))`` in one pass where it can:
        the histogram is counted as each code is found, without the array of
        codes (the same integers, and the same errors)."""
        cls = type(self)
        if (
            self._grid_run() is None
            or cls.encode_reports is not NumericChannel.encode_reports
            or cls.statistics is not NumericChannel.statistics
        ):
            return self.statistics(self.encode_reports(reports))
        values = _as_float_reports(reports, self, check_finite=False)
        counts = self._grid_codes(values, histogram=True)
        if counts is None:
            return self.statistics(self._searched_codes(values))
        return ReportStatistics(self, int(values.shape[0]), counts)

    def _nearest_codes(self, values):
        table = self.output_values()
        order = self.__dict__.get("_output_order")
        if order is None:
            order = np.argsort(table, kind="stable")
            self.__dict__["_output_order"] = order
        sorted_table = table[order]
        pos = np.clip(np.searchsorted(sorted_table, values), 1, sorted_table.size - 1)
        left = sorted_table[pos - 1]
        right = sorted_table[pos]
        with np.errstate(invalid="ignore"):
            pick = np.where(np.abs(values - left) <= np.abs(right - values), pos - 1, pos)
        return order[pick]

    def statistics(self, codes, *, keep_reports=False):
        """The histogram of output codes (exact integers; they add up)."""
        codes = np.asarray(codes, dtype=np.int64)
        counts = np.bincount(codes, minlength=self.n_outputs).astype(np.int64)
        return ReportStatistics(self, int(codes.shape[0]), counts)

    def merge_extra(self, a, b):
        return None

    # ------------------------------------------------------- mean channels
    def variance(self, values: ArrayLike) -> np.ndarray:
        """Exact variance of one report given the input (column units squared).

        Only for channels whose reports are unbiased (:attr:`unbiased_reports`).
        """
        raise NotImplementedError(
            f"{type(self).__name__}'s reports are not unbiased estimates of the "
            "values; estimate its distribution instead."
        )

    def worst_case_variance(self) -> float:
        """The largest :meth:`variance` over the inputs (column units squared)."""
        grid = np.linspace(self.low, self.high, 2049)
        return float(np.max(self.variance(grid)))

    def two_point_reports(self) -> tuple[float, float, bool] | None:
        """The two report values (low, high) that some inputs' reports are
        restricted to, and whether every input's are; None if no input's are.

        :class:`~sklearn_uldp.numeric.MeanEstimator` uses it for its default
        interval: reports restricted to two values make the mean a lattice
        variable (a binomial count), whose normal interval misses its level.
        """
        return None


def _one_report_column(reports):
    """The column of a one-column DataFrame, other reports as they are;
    sparse matrices and DataFrames of several columns refused."""
    if hasattr(reports, "iloc") and getattr(reports, "ndim", 1) == 2:
        if reports.shape[1] != 1:
            raise ReportMismatchError(
                f"Expected one column of reports, got a DataFrame with "
                f"{reports.shape[1]} columns. Select the report column."
            )
        reports = reports.iloc[:, 0]
    if hasattr(reports, "toarray"):
        raise ReportMismatchError("Got a sparse matrix; numeric reports are one number per user.")
    return reports


def _one_dimensional(arr, hint=False):
    """``arr`` of shape (n,) or (n, 1) as shape (n,); another shape refused
    (``hint``: with how to select one column's reports of several)."""
    if arr.ndim == 2 and arr.shape[1] == 1:
        return arr[:, 0]
    if arr.ndim != 1:
        raise ReportMismatchError(
            f"Expected reports of shape (n,) or (n, 1), got shape {arr.shape}."
            + (several_columns_hint(arr.shape, 1) if hint else "")
        )
    return arr


def _as_float_reports(reports, channel, check_finite=True):
    """Reports of one column as a 1-D float64 array, with clear errors
    (``check_finite=False``: NaN and infinity left to the caller)."""
    reports = _one_report_column(reports)
    if hasattr(reports, "to_numpy"):
        reports = reports.to_numpy()
    arr = _one_dimensional(np.asarray(reports), hint=True)
    if arr.dtype.kind not in "iuf":
        kind = pd.api.types.infer_dtype(arr, skipna=False)
        if kind not in ("integer", "floating", "mixed-integer-float"):
            raise ReportMismatchError(
                f"Reports of {channel!r} are numbers; got values of type {kind} "
                f"({describe_values(arr)}). Pass the reports the mechanism returned."
            )
    arr = arr.astype(np.float64, copy=False)
    if check_finite:
        _check_finite_reports(arr, channel)
    return arr


def _check_finite_reports(arr, channel):
    if not np.isfinite(arr).all():
        raise ReportMismatchError(
            f"Reports contain NaN or infinity, which {channel!r} cannot produce. "
            "Drop the corrupted reports, or estimate with the mechanism that made them."
        )


# ===================================================================== users
def _numeric_values(X, estimator, *, reset, copy=True):
    """``X`` as a 2-D float64 array of numbers, with clear errors. With
    ``copy`` (the default) it never aliases ``X``, so the caller may clip it;
    without, it may be ``X`` itself (read only)."""
    if X is None:
        raise ValueError("X is required.")
    check_in_memory(X, type(estimator).__name__)
    # scikit-learn's own errors for a scalar or a 1-D container it does not
    # reshape quote the values ("array=[...]"): these are handled here.
    if np.isscalar(X) or (isinstance(X, np.ndarray) and X.ndim == 0):
        raise ValueError(
            f"X must be a column of numbers (one row per user), got a single value "
            f"({type(X).__name__}). Pass a list or 1-D array of values, or a 2-D array "
            "with one column per attribute."
        )
    if isinstance(X, (pd.Index, pd.api.extensions.ExtensionArray)):
        X = X.to_numpy()  # one column of values, as a Series is
    if isinstance(X, (list, tuple)) and not any(
        isinstance(v, (list, tuple, np.ndarray)) for v in X
    ):
        X = np.asarray(X, dtype=object if any(isinstance(v, str) for v in X) else None)
    if isinstance(X, np.ndarray) and X.ndim == 1:
        expected = getattr(estimator, "n_features_in_", 1) if not reset else 1
        if expected != 1:
            raise ValueError(
                f"Expected 2D array, got 1D array instead: {type(estimator).__name__} "
                f"was fitted on {expected} columns. Reshape your data using "
                "X.reshape(1, -1) if it holds one row of values."
            )
        X = X.reshape(-1, 1)
    if isinstance(X, pd.Series):
        X = X.to_frame()
    if hasattr(X, "toarray"):
        raise TypeError("Sparse input is not supported: pass a dense column of numbers.")
    if isinstance(X, pd.DataFrame):
        _check_frame_dtypes(X)
    with warnings.catch_warnings():
        if not reset and getattr(estimator, "_fitted_without_data", False):
            warnings.filterwarnings(
                "ignore", message="X has feature names, but", category=UserWarning
            )
        X = validate_data(
            estimator, X, dtype=None, ensure_all_finite=False, ensure_min_samples=1, reset=reset
        )
    kind = X.dtype.kind
    if kind == "b":
        raise TypeError(
            "X holds booleans: a numeric mechanism takes numbers. Privatize a "
            "yes/no column with a categorical mechanism (e.g. RandomizedResponse)."
        )
    if kind in "USO":
        # Numbers (and missing values) only: text, even "1.5", and booleans
        # are refused, never coerced (an object column of True/False read as
        # 1/0 was privatized as numbers). pandas infers the kind in C.
        inferred = pd.api.types.infer_dtype(X.ravel(), skipna=True)
        if inferred not in ("floating", "integer", "mixed-integer-float", "decimal", "empty"):
            raise non_numeric_error(X)
        try:
            X = X.astype(np.float64)
        except (TypeError, ValueError):
            raise non_numeric_error(X) from None
    values = np.array(X, dtype=np.float64, copy=True) if copy else np.asarray(X, np.float64)
    if np.isfinite(values).all():
        return values
    nan = np.isnan(values)
    if nan.any():
        names = getattr(estimator, "feature_names_in_", None)
        columns = [
            str(names[j]) if names is not None and j < len(names) else f"x{j}"
            for j in np.flatnonzero(nan.reshape(len(values), -1).any(axis=0))
        ]
        raise ValueError(
            f"X contains {int(nan.sum())} missing values (NaN/None), in "
            f"{'column' if len(columns) == 1 else 'columns'} {', '.join(map(repr, columns))} "
            f"at {positions(nan.reshape(len(values), -1).any(axis=1))}. A numeric "
            "mechanism privatizes numbers only: impute or drop the missing values "
            "first (or add a missing-indicator column privatized by a categorical "
            "mechanism)."
        )
    inf = np.isinf(values)
    if inf.any():
        raise ValueError(
            f"X contains {int(inf.sum())} infinite values. Replace them (e.g. by the "
            "bounds) or drop them: a numeric mechanism privatizes finite numbers."
        )
    return values


def _check_frame_dtypes(frame):
    for name, dtype in frame.dtypes.items():
        if pd.api.types.is_bool_dtype(dtype):
            raise TypeError(
                f"Column {name!r} holds booleans: a numeric mechanism takes numbers. "
                "Privatize a yes/no column with a categorical mechanism."
            )
        if isinstance(dtype, pd.CategoricalDtype) or pd.api.types.is_string_dtype(dtype):
            if not pd.api.types.is_numeric_dtype(getattr(dtype, "categories", dtype)):
                raise TypeError(
                    f"Column {name!r} is categorical/text ({dtype}): a numeric "
                    "mechanism takes numbers. Convert it (pd.to_numeric), or privatize "
                    "it with a categorical mechanism."
                )
        if pd.api.types.is_datetime64_any_dtype(dtype) or pd.api.types.is_timedelta64_dtype(dtype):
            raise TypeError(
                f"Column {name!r} holds dates/durations ({dtype}). Convert them to "
                "numbers first (e.g. days since a public reference date)."
            )


def warn_clipped(counts, bounds, names, n):
    """Warn once per column with values outside ``bounds`` (``counts``: a
    (below, above) pair per column)."""
    low, high = bounds
    for (below, above), name in zip(counts, names, strict=True):
        if below or above:
            warnings.warn(
                f"{below + above} of {n} values of column {name} lie outside the bounds "
                f"[{low:g}, {high:g}] and were clipped to them ({below} below, {above} "
                "above). Widen bounds=(low, high) if they are valid data: the bounds are "
                "public and fixed before collection, never learned from it.",
                ClippingWarning,
                stacklevel=4,
            )


def clip_to_bounds(values, bounds, names):
    """Clip ``values`` (modified in place: the caller's copy) to ``bounds``,
    warning with the count of clipped values per column."""
    low, high = bounds
    counts = [
        (int(b), int(a))
        for b, a in zip((values < low).sum(axis=0), (values > high).sum(axis=0), strict=True)
    ]
    warn_clipped(counts, bounds, names, values.shape[0])
    np.clip(values, low, high, out=values)
    return values


class BaseNumericMechanism(PrivatizerBase):
    """Base class of the mechanisms that privatize bounded numeric columns.

    ``fit`` fixes the public range (``bounds_``) and builds the channel
    (``channel_``, the public spec); ``transform`` privatizes each value
    independently with fresh randomness and returns reports in the column's
    units that carry the channel, as every mechanism of the package does.
    Values outside the bounds are clipped to them with a
    :class:`~sklearn_uldp.exceptions.ClippingWarning` that counts them; NaN,
    infinite values, booleans and strings raise clear errors. The input is
    never modified.

    Several columns share the bounds and get one stream and one report
    column each; a user's row spends ``n_features_in_ * epsilon``
    (:attr:`epsilon_spent_`). Columns with different ranges go through
    separate mechanisms (or :class:`~sklearn_uldp.compose.DataFramePrivatizer`).

    Subclasses implement :meth:`_make_channel`.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp import DuchiMechanism
    >>> from sklearn_uldp.numeric import BaseNumericMechanism
    >>> mech = DuchiMechanism(epsilon=1.0, bounds=(0, 10), random_state=0)
    >>> isinstance(mech, BaseNumericMechanism)
    True
    >>> reports = mech.fit_transform(np.array([[2.0], [7.5]]))
    >>> reports.shape, reports.channel == mech.channel_
    ((2, 1), True)
    """

    _parameter_constraints: dict[str, list[Any]] = {
        "epsilon": [Interval(Real, 0, None, closed="neither")],
        "bounds": [StrOptions({"auto"}), "array-like"],
        "random_state": RANDOM_STATE_CONSTRAINT,
    }

    _categorical_input = False

    def _make_channel(self):
        raise NotImplementedError

    def _check_params(self):
        check_epsilon(self.epsilon)

    # --------------------------------------------------- the sampling strategies
    def _with_domain_of(self, column):
        if not isinstance(self.bounds, str):
            return self
        # bounds="auto" learns the range from the whole column (with its own
        # PrivacyLeakWarning), not from the one row a privatizer fits on.
        bounds = clone(self).fit(column).bounds_
        return clone(self).set_params(bounds=[float(b) for b in bounds])

    def _check_whole_column(self, column, name):
        values = _numeric_values(column, self, reset=False, copy=False)
        low, high = self.bounds_
        counts = [(int(np.count_nonzero(values < low)), int(np.count_nonzero(values > high)))]
        warn_clipped(counts, self.bounds_, [name], values.shape[0])

    def _fake_refusal(self, fake, column):
        refusal = self.channel_.fake_refusal
        if refusal is not None:
            return (
                f"Column {column!r} uses {type(self).__name__}, which cannot send fake "
                f"reports under strategy='sample+fake': {refusal}. Fake numeric "
                "reports exist for the mean mechanisms DuchiMechanism, "
                "PiecewiseMechanism and HybridMechanism; use one of them, or "
                "strategy='sample'."
            )
        if fake not in ("auto", *self.channel_.fake_kinds()):
            return (
                f"fake={fake!r} is not available for the numeric column {column!r}: "
                "its fakes are the reports of a uniformly random input ('random'). "
                "Pass fake='auto' or 'random' for it."
            )
        return None

    def _fake_classes_at(self, fake):
        # closed forms over the continuum of inputs, at any budget
        return type(self.channel_).fake_ratio_classes_at, True

    def _fake_reports(self, fake, n, rng, X_one):
        return self.channel_.sample_fakes(fake, n, rng)[:, None]

    def fit(self: _MechanismT, X: ArrayLike | None = None, y: object = None) -> _MechanismT:
        """Fix the public range and build the channel.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or (n_samples,), default=None
            Numeric columns. Required when ``bounds="auto"`` (the range is
            then learned from X, which emits a
            :class:`~sklearn_uldp.exceptions.PrivacyLeakWarning`); with
            explicit bounds it is only validated and may be omitted.
        y : None
            Ignored.

        Returns
        -------
        self : object
            The fitted mechanism (``bounds_``, ``channel_``).
        """
        validate_params_with_hints(self, NUMERIC_PARAMETER_HINTS)
        self._check_params()
        auto = isinstance(self.bounds, str)
        if X is None:
            if auto:
                raise ValueError(
                    "bounds='auto' learns the range from X, so X is required. Pass "
                    "bounds=(low, high) (the public range) to fit without data."
                )
            self.n_features_in_ = 1
            self.__dict__.pop("feature_names_in_", None)
            self._fitted_without_data = True
            bounds = check_bounds(self.bounds)
        else:
            self._fitted_without_data = False
            values = _numeric_values(X, self, reset=True)
            if auto:
                warnings.warn(
                    "bounds='auto' learns the range from the private data, which "
                    "reveals its extreme values. Pass the public range as "
                    "bounds=(low, high) in a deployment.",
                    PrivacyLeakWarning,
                    stacklevel=2,
                )
                low, high = float(values.min()), float(values.max())
                if not low < high:
                    raise ValueError(
                        f"X holds a single value {low!r}; bounds='auto' needs a range. "
                        "Pass bounds=(low, high)."
                    )
                bounds = check_bounds((low, high))
            else:
                bounds = check_bounds(self.bounds)
        self.bounds_ = bounds
        self.channel_ = self._make_channel()
        self._start_random_stream()
        return self

    def transform(self, X: ArrayLike) -> TransformOutput:
        """Privatize each value independently.

        Parameters
        ----------
        X : array-like of shape (n_samples, `n_features_in_`)
            Numeric columns (a 1-D array, list or Series is one column).
            Values outside ``bounds_`` are clipped with a
            :class:`~sklearn_uldp.exceptions.ClippingWarning`.

        Returns
        -------
        reports : ndarray or DataFrame of shape (n_samples, `n_features_in_`)
            The reports in the columns' units, carrying the channel.
        """
        check_is_fitted(self, "channel_")
        values = _numeric_values(X, self, reset=False, copy=False)
        names = self._input_names()
        call = self._next_call()
        out = np.empty(values.shape[::-1], dtype=np.float64)  # one row per column
        clipped = []
        for j, name in enumerate(names):
            column = np.ascontiguousarray(values[:, j])
            rng = self._transform_rng(
                column.view(np.uint64), 2**64, column=name if len(names) > 1 else None, call=call
            )
            clipped.append(self.channel_.report(column, rng, out[j]))
        warn_clipped(clipped, self.bounds_, names, values.shape[0])
        return self._container(out.T, X)

    def _sample(self, values, rng):
        """Output codes of one column (hook for tests and composites)."""
        return self.channel_.sample(values, rng)

    def get_feature_names_out(self, input_features: ArrayLike | None = None) -> np.ndarray:
        """Names of the report columns (one per input column, its own name).

        Parameters
        ----------
        input_features : array-like of str, default=None
            Input feature names; default ``feature_names_in_`` or
            ``x0, x1, ...``.

        Returns
        -------
        feature_names_out : ndarray of str objects
        """
        check_is_fitted(self, "channel_")
        names = _check_feature_names_in(self, input_features)
        return np.asarray([str(n) for n in names], dtype=object)

    def column_reports(self, reports: Any, column: int | str) -> Any:
        """The reports of one input column, from the reports of several.

        Parameters
        ----------
        reports : ndarray or DataFrame
            The output of :meth:`transform`.
        column : int or str
            The input column: its position, or its name.

        Returns
        -------
        block : ndarray or DataFrame of shape (n_samples, 1)
            That column's reports, carrying the channel.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_uldp import PiecewiseMechanism
        >>> mech = PiecewiseMechanism(epsilon=1.0, bounds=(0, 1), random_state=0)
        >>> reports = mech.fit_transform(np.array([[0.1, 0.9], [0.5, 0.5]]))
        >>> mech.column_reports(reports, 1).shape
        (2, 1)
        """
        check_is_fitted(self, "channel_")
        names = self._input_names()
        j = self._input_position(column)
        if np.shape(reports)[1] != len(names):
            raise ValueError(
                f"Expected the reports of this mechanism on {len(names)} column(s); "
                f"got {np.shape(reports)[1]} report columns."
            )
        if isinstance(reports, pd.DataFrame):
            block = reports.iloc[:, [j]]
        else:
            block = np.asarray(reports)[:, [j]]
        return attach_channel(block, self.channel_)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = True
        tags.requires_fit = True
        tags.input_tags.allow_nan = False
        tags.transformer_tags.preserves_dtype = ["float64"]
        return tags


class _EpsilonBoundsMechanism(BaseNumericMechanism):
    """A numeric mechanism whose parameters are ``epsilon``, ``bounds`` and
    ``random_state`` alone, and whose channel is ``_channel_class(bounds_,
    epsilon)`` (Duchi's, Piecewise, Hybrid, Square Wave)."""

    _channel_class: type[NumericChannel]

    def __init__(
        self, epsilon: float = 1.0, *, bounds: Any = "auto", random_state: RandomStateLike = None
    ) -> None:
        self.epsilon = epsilon
        self.bounds = bounds
        self.random_state = random_state

    def _make_channel(self):
        return self._channel_class(self.bounds_, self.epsilon)
