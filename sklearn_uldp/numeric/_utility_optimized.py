"""A utility-optimized one-bit mechanism for means (ULDP for numeric values).

The user marks a *sensitive range* S of the values (e.g. incomes above a
threshold, ages under 18). A sensitive value gets the full epsilon-LDP
guarantee and never produces a revealing output; a value outside S may be
disclosed, which estimates the mean with far less noise.

The construction (derived here; see ``docs/numerical.md`` for the proof and
for what we could and could not take from Zhang et al., "Mean Estimation of
Numerical Data Under (epsilon, delta)-Utility-Optimized Local Differential
Privacy", IEEE TIFS 2024, whose "utility-optimized one-bit mechanism" UOBM
this follows in spirit): on the unit scale t in [-1, 1], with S's hull
``[m - w, m + w]`` and ``c = (e^eps - 1) / (e^eps + 1)``,

* t in S sends one bit: "+" with probability ``pi(t) = 1/2 + c (t - m) / (2 w)``
  (Duchi et al.'s bit, over the sensitive range only), else "-";
* t outside S discloses t (rounded at random to a grid of 2**16 steps, without
  bias) with probability ``lambda``, and otherwise sends "+" or "-" with
  probability ``(1 - lambda) / 2`` each (no information).

The protected outputs "+" and "-" have probabilities in ``[1/(e^eps + 1),
e^eps/(e^eps + 1)]`` for sensitive inputs and ``(1 - lambda)/2`` for the
others, all within a factor e^eps of each other when ``lambda <= c``: this
is (X_S, Y_P, epsilon)-ULDP (Murakami & Kawamoto), and (epsilon, delta)-LDP
for every pair of inputs with ``delta = lambda`` (only a disclosure
separates a non-sensitive value from the others), while a sensitive value's
outputs are e^eps-indistinguishable from every input's (delta = 0).

Each report is an unbiased *score*: "+" -> A = (1 - alpha) / beta, "-" -> B =
-alpha / beta (``pi(t) = alpha + beta t``), a disclosed g -> g / lambda + D with
``D = -(1 - lambda)(1 - 2 alpha) / (2 beta lambda)``, so that E[report | t] =
t for every t and the mean of the reports estimates the mean
(:class:`~sklearn_uldp.numeric.MeanEstimator`).
"""

from __future__ import annotations

import math
import numbers
from numbers import Real
from typing import Any

import numpy as np
from sklearn.utils._param_validation import Interval

from ..utils._typing import ArrayLike, RandomStateLike
from ..utils._validation import check_list_shape
from ._base import GRID_CELLS, BaseNumericMechanism, NumericChannel, _ranges_schema, check_bounds
from ._docs import fill_numeric_doc
from ._kernels import one_bit_codes

__all__ = [
    "UtilityOptimizedOneBitMechanism",
    "UtilityOptimizedOneBitChannel",
    "check_sensitive_ranges",
]


def check_sensitive_ranges(sensitive: Any, bounds: tuple[float, float]) -> list[list[float]]:
    """Validate sensitive ranges and return them clipped to the bounds.

    Parameters
    ----------
    sensitive : (low, high) or list of (low, high)
        Closed intervals of sensitive values, in the column's units; an end
        may be infinite (``(100_000, float("inf"))``: incomes above 100k).
    bounds : (float, float)

    Returns
    -------
    ranges : list of [low, high]
        Sorted, merged and clipped to the bounds (non-empty).

    Examples
    --------
    >>> from sklearn_uldp.numeric import check_sensitive_ranges
    >>> check_sensitive_ranges((-float("inf"), 18), (0, 120))
    [[0.0, 18.0]]
    >>> check_sensitive_ranges([(90, 200), (0, 10)], (0, 120))
    [[0.0, 10.0], [90.0, 120.0]]
    """
    hint = (
        "Pass the sensitive range as (low, high) in the column's units, or a list "
        "of such ranges, e.g. sensitive=(0, 18) or sensitive=(100_000, float('inf'))."
    )
    if isinstance(sensitive, (str, bytes)) or not hasattr(sensitive, "__len__"):
        raise TypeError(
            f"sensitive must be a range (low, high), got a {type(sensitive).__name__}. {hint}"
        )
    check_list_shape(
        sensitive, name="sensitive", what="ranges (low, high)", example="[(0, 18)]", max_ndim=2
    )
    items = list(sensitive)
    if len(items) == 2 and all(isinstance(v, numbers.Real) for v in items):
        items = [items]
    ranges = []
    # Messages give a range's position, not its values (as for categories).
    for i, item in enumerate(items):
        if isinstance(item, (str, bytes)) or not hasattr(item, "__len__") or len(item) != 2:
            raise ValueError(
                f"Each sensitive range is a pair (low, high); range {i} is not. {hint}"
            )
        lo, hi = item
        for v in (lo, hi):
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real) or v != v:
                raise TypeError(
                    f"Sensitive range ends must be real numbers; range {i} has a "
                    f"{'NaN' if v != v else type(v).__name__}. {hint}"
                )
        lo, hi = float(lo), float(hi)
        if not lo < hi:
            raise ValueError(f"Sensitive range {i} is empty: low must be < high. {hint}")
        lo, hi = max(lo, float(bounds[0])), min(hi, float(bounds[1]))
        if lo < hi:
            ranges.append([lo, hi])
        elif lo == hi:
            raise ValueError(f"Sensitive range {i} meets the bounds in a single point. {hint}")
    if not ranges:
        raise ValueError(
            f"No sensitive range overlaps the bounds {bounds}: every "
            "value would be disclosed. Pass a sensitive range within the bounds."
        )
    ranges.sort()
    merged = [ranges[0]]
    for lo, hi in ranges[1:]:
        if lo <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], hi)
        else:
            merged.append([lo, hi])
    return merged


def _contrast(epsilon):
    """``c = (e^eps - 1) / (e^eps + 1)``: the largest disclosure probability."""
    return math.tanh(epsilon / 2.0)


class UtilityOptimizedOneBitChannel(NumericChannel):
    """The utility-optimized one-bit channel (ULDP for a bounded numeric column).

    Output codes: 0 ("-"), 1 ("+"), then ``2 + k`` for the disclosure of the
    grid point k (``GRID_CELLS + 1`` points over the bounds).

    Parameters
    ----------
    bounds : (float, float)
    epsilon : float
    sensitive : list of [low, high]
        The sensitive ranges (see :func:`check_sensitive_ranges`).
    disclosure : float or None, default=None
        Probability that a non-sensitive value is disclosed, in ``(0, c]``
        with ``c = (e^eps - 1) / (e^eps + 1)``; None for c (the most
        utility).

    Examples
    --------
    >>> from sklearn_uldp.numeric import UtilityOptimizedOneBitChannel
    >>> channel = UtilityOptimizedOneBitChannel((0, 100), 1.0, sensitive=[(0, 18)])
    >>> round(channel.disclosure, 4), channel.n_outputs
    (0.4621, 65539)
    >>> P = channel.output_probabilities([10.0, 50.0])
    >>> P[:, :2].round(3).tolist()  # "-" and "+"
    [[0.5, 0.5], [0.269, 0.269]]
    """

    name = "uobm"
    fake_refusal = (
        "its disclosed values are invertible outputs, and the row's guarantee with "
        "numeric disclosures among fakes is not derived"
    )
    unbiased_reports = True

    _spec_field_schemas: dict[str, dict[str, Any]] = {
        **NumericChannel._spec_field_schemas,
        "sensitive": _ranges_schema(
            "The sensitive ranges [low, high] (closed), within the bounds."
        ),
        "disclosure": {
            "type": ["number", "null"],
            "exclusiveMinimum": 0,
            "maximum": 1,
            "description": (
                "Probability that a non-sensitive value is disclosed, at most "
                "(e^eps - 1)/(e^eps + 1); null for that maximum."
            ),
        },
    }

    def __init__(
        self, bounds: Any, epsilon: float, sensitive: Any, disclosure: float | None = None
    ) -> None:
        super().__init__(bounds, epsilon)
        self.sensitive = check_sensitive_ranges(sensitive, self.bounds)
        top = _contrast(self.epsilon)
        if disclosure is None:
            disclosure = top
        if isinstance(disclosure, bool) or not isinstance(disclosure, numbers.Real):
            raise TypeError(
                f"disclosure must be a probability in (0, {top:.6g}], got {disclosure!r}."
            )
        disclosure = float(disclosure)
        if not 0.0 < disclosure <= top:
            raise ValueError(
                f"disclosure={disclosure!r} must lie in (0, (e^eps - 1)/(e^eps + 1)] = "
                f"(0, {top!r}] at epsilon={self.epsilon!r}: a larger one would make a "
                "non-sensitive user's '+'/'-' too rare to hide a sensitive user's; 0 "
                "would lose the non-sensitive values (pass e.g. the maximum, None)."
            )
        self.disclosure = disclosure
        self._check_budget(f"the utility-optimized one-bit mechanism at epsilon={self.epsilon!r}")
        unit = [[float(self.to_unit(lo)), float(self.to_unit(hi))] for lo, hi in self.sensitive]
        self._hull = (unit[0][0], unit[-1][1])
        centre = 0.5 * (self._hull[0] + self._hull[1])
        width = 0.5 * (self._hull[1] - self._hull[0])
        self.beta = top / (2.0 * width)
        self.alpha = 0.5 - self.beta * centre
        lam = self.disclosure
        self._score_plus = (1.0 - self.alpha) / self.beta
        self._score_minus = -self.alpha / self.beta
        self._score_shift = -(1.0 - lam) * (1.0 - 2.0 * self.alpha) / (2.0 * self.beta * lam)

    def get_params(self):
        return {
            **super().get_params(),
            "sensitive": [list(r) for r in self.sensitive],
            "disclosure": self.disclosure,
        }

    def _draw_probabilities(self, epsilon):
        top = _contrast(epsilon)
        lam = min(getattr(self, "disclosure", top), top)
        low = 0.5 - top / 2.0
        return np.array([low, 1.0 - low, (1.0 - lam) / 2.0, lam, 1.0 - lam])

    # ------------------------------------------------------------- structure
    def is_sensitive(self, values):
        """Whether each value (column units) lies in a sensitive range."""
        values = np.asarray(values, dtype=float)
        mask = np.zeros(values.shape, dtype=bool)
        for lo, hi in self.sensitive:
            mask |= (values >= lo) & (values <= hi)
        return mask

    def default_inputs(self, n=33):
        ends = np.asarray(self.sensitive, dtype=float).ravel()
        return np.unique(np.concatenate([np.linspace(self.low, self.high, n), ends]))

    @property
    def sensitive_mask(self):
        return self.is_sensitive(self.default_inputs())

    @property
    def exact_categories(self):
        return ~self.sensitive_mask

    def protected_outputs(self):
        mask = np.zeros(self.n_outputs, dtype=bool)
        mask[:2] = True
        return mask

    @property
    def n_outputs(self):
        return GRID_CELLS + 3

    def _grid_run(self):
        return 2, GRID_CELLS + 1  # after "-" and "+": the disclosure grid

    def _grid_points(self):
        return -1.0 + np.arange(GRID_CELLS + 1) * (2.0 / GRID_CELLS)

    def _unit_scores(self):
        disclosed = self._grid_points() / self.disclosure + self._score_shift
        return np.concatenate([[self._score_minus, self._score_plus], disclosed])

    def _output_values(self):
        return self.from_unit(self._unit_scores())

    def plus_probability(self, values):
        """P("+" | value) of a sensitive value (column units)."""
        return self.alpha + self.beta * self.to_unit(values)

    def output_probabilities(self, values):
        values = np.atleast_1d(np.asarray(values, dtype=float))
        sensitive = self.is_sensitive(values)
        out = np.zeros((values.shape[0], self.n_outputs))
        plus = self.plus_probability(values)
        other = (1.0 - self.disclosure) / 2.0
        out[:, 1] = np.where(sensitive, plus, other)
        out[:, 0] = np.where(sensitive, 1.0 - plus, other)
        grid = (self.to_unit(values) + 1.0) * (GRID_CELLS / 2.0)
        k = np.minimum(np.floor(grid), GRID_CELLS - 1).astype(np.int64)
        frac = grid - k
        rows = np.flatnonzero(~sensitive)
        out[rows, 2 + k[rows]] += self.disclosure * (1.0 - frac[rows])
        out[rows, 3 + k[rows]] += self.disclosure * frac[rows]
        return out

    def _codes(self, values, uniforms):
        grid = (self.to_unit(values) + 1.0) * (GRID_CELLS / 2.0)
        return one_bit_codes(
            grid,
            self.plus_probability(values),
            self.is_sensitive(values),
            uniforms,
            self.disclosure,
        )

    def disclosed_values(self, reports: ArrayLike) -> np.ndarray:
        """The values disclosed by reports (column units), NaN for "+"/"-".

        A disclosed value is reported as its unbiased score, an affine
        function of it; this inverts it (to the grid's precision).
        """
        codes = self.encode_reports(np.asarray(reports, dtype=float).ravel())
        out = np.full(codes.shape, np.nan)
        shown = codes >= 2
        out[shown] = self.from_unit(self._grid_points()[codes[shown] - 2])
        return out

    def two_point_reports(self):
        # A sensitive value's report is "-" or "+"; when the sensitive range
        # is the whole of the bounds no value is ever disclosed.
        minus, plus = self.output_values()[:2]
        everywhere = len(self.sensitive) == 1 and tuple(self.sensitive[0]) == tuple(self.bounds)
        return float(minus), float(plus), bool(everywhere)

    def variance(self, values):
        values = np.asarray(values, dtype=float)
        t = self.to_unit(values)
        A, B, D, lam = self._score_plus, self._score_minus, self._score_shift, self.disclosure
        pi = self.alpha + self.beta * t
        sensitive_var = pi * A**2 + (1.0 - pi) * B**2 - t**2
        grid = (t + 1.0) * (GRID_CELLS / 2.0)
        rho = grid - np.floor(grid)
        step = 2.0 / GRID_CELLS
        second = (t**2 + rho * (1.0 - rho) * step**2) / lam**2 + 2.0 * D * t / lam + D**2
        other_var = (1.0 - lam) / 2.0 * (A**2 + B**2) + lam * second - t**2
        half = (self.high - self.low) / 2.0
        return np.where(self.is_sensitive(values), sensitive_var, other_var) * half**2

    def worst_case_variance(self):
        ends = np.asarray(self.sensitive, dtype=float).ravel()
        eps_shift = 1e-9 * (self.high - self.low)
        grid = np.concatenate(
            [np.linspace(self.low, self.high, 4097), ends, ends - eps_shift, ends + eps_shift]
        )
        grid = np.clip(grid, self.low, self.high)
        step = (self.high - self.low) / GRID_CELLS
        slack = (step / 2.0) ** 2 / self.disclosure  # the rounding term, bounded
        return float(np.max(self.variance(grid)) + slack)


@fill_numeric_doc
class UtilityOptimizedOneBitMechanism(BaseNumericMechanism):
    """Utility-optimized one-bit mechanism: the mean of a column with a sensitive range.

    Values in the ``sensitive`` range (e.g. ages under 18, incomes above a
    threshold) get epsilon-LDP and are never revealed: they send one bit, as
    in Duchi et al.'s mechanism but over the sensitive range only (so a
    narrow range costs less noise). Values outside it are disclosed with
    probability ``disclosure`` (by default the largest that keeps the bits
    of sensitive users hidden, ``(e^eps - 1)/(e^eps + 1)``) and otherwise send
    an uninformative bit. The guarantee is (X_S, Y_P, epsilon)-ULDP: the
    bits of every user are epsilon-indistinguishable, and only non-sensitive
    values are ever disclosed; equivalently, (epsilon, delta)-LDP with delta
    the disclosure probability, and delta = 0 for sensitive values.

    Each report is an unbiased estimate (a score) of its user's value, so
    :class:`~sklearn_uldp.numeric.MeanEstimator` gives the mean with a
    confidence interval; :meth:`UtilityOptimizedOneBitChannel.disclosed_values`
    reads the disclosed values back.

    Parameters
    ----------
    %(epsilon)s
    bounds : (float, float) or "auto", default="auto"
        The public range of the values (clipped with a warning outside it).
    sensitive : (float, float), list of (float, float) or None, default=None
        The sensitive range(s), closed, in the column's units (ends may be
        infinite). None: the whole range (then the mechanism is Duchi's).
    disclosure : float or None, default=None
        Probability that a non-sensitive value is disclosed, in ``(0, (e^eps -
        1)/(e^eps + 1)]``; None for that maximum. A smaller one discloses
        less and estimates with more noise.
    %(random_state)s

    Attributes
    ----------
    bounds_ : tuple of float
    channel_ : UtilityOptimizedOneBitChannel
        The public spec (with the sensitive ranges).
    %(features_in)s

    See Also
    --------
    DuchiMechanism : The same bit for every value (plain LDP).
    Binner : The pure-ULDP binned route (uRR / uRAP over bins).

    References
    ----------
    T. Murakami, Y. Kawamoto, "Utility-Optimized Local Differential Privacy
    Mechanisms for Distribution Estimation", USENIX Security 2019.
    Y. Zhang, Y. Zhu, S. Wang, X. Huang, "Mean Estimation of Numerical Data
    Under (epsilon, delta)-Utility-Optimized Local Differential Privacy",
    IEEE TIFS 2024 (the construction here is ours; see docs/numerical.md).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp import MeanEstimator, UtilityOptimizedOneBitMechanism
    >>> ages = np.random.default_rng(0).integers(0, 90, size=(20_000, 1))
    >>> mech = UtilityOptimizedOneBitMechanism(
    ...     epsilon=1.0, bounds=(0, 90), sensitive=(0, 18), random_state=0)
    >>> reports = mech.fit_transform(ages)
    >>> est = MeanEstimator().fit(reports)
    >>> low, high = est.confidence_interval()
    >>> bool(low < ages.mean() < high)
    True
    >>> shown = mech.channel_.disclosed_values(reports)
    >>> bool(np.nanmin(shown) >= 18)  # a sensitive age is never disclosed
    True
    """

    _parameter_constraints: dict[str, list[Any]] = {
        **BaseNumericMechanism._parameter_constraints,
        "sensitive": [None, "array-like"],
        "disclosure": [None, Interval(Real, 0, 1, closed="right")],
    }

    def __init__(
        self,
        epsilon: float = 1.0,
        *,
        bounds: Any = "auto",
        sensitive: Any = None,
        disclosure: float | None = None,
        random_state: RandomStateLike = None,
    ) -> None:
        self.epsilon = epsilon
        self.bounds = bounds
        self.sensitive = sensitive
        self.disclosure = disclosure
        self.random_state = random_state

    def _make_channel(self):
        bounds = check_bounds(self.bounds_)
        sensitive = [bounds] if self.sensitive is None else self.sensitive
        return UtilityOptimizedOneBitChannel(
            bounds, self.epsilon, check_sensitive_ranges(sensitive, bounds), self.disclosure
        )
