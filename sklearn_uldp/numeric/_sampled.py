"""The channel of one numeric attribute's reports when each user samples an attribute.

``DataFramePrivatizer(strategy="sample")`` (SMP, Wang et al., ICDE 2019) has
every user report **one** attribute of the row, drawn uniformly at random,
through its mechanism; the other attributes get no report. For a numeric
attribute privatized by a mean mechanism this is exactly the protocol of
Wang et al. for mixed numeric and categorical tables (their Section V).

Seen from one numeric attribute's column, the reports present are n_j
independent reports of the attribute's mechanism (n_j: the users who
sampled it), and the others are missing (NaN). The sampled index is drawn
independently of the data, an *ancillary* statistic, so the estimators
condition on it: the statistics are the histogram of the reports present,
and the mean of those reports is an unbiased estimate of the attribute's
mean, with the standard error of a sample mean of n_j reports. (Wang et
al. scale the sum of the reports by d / n instead; conditioning on the
sample is never worse, see ``docs/numerical.md``.)

:class:`SampledNumericChannel` is the categorical
:class:`~sklearn_uldp.mechanisms.SampledChannel`'s counterpart for a
numeric base channel: a domain that is a range, not a list of categories.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ..exceptions import ReportMismatchError
from ..mechanisms._attribute_sampling import _check_n_attributes
from ..mechanisms._channel import Channel, ReportStatistics
from ..mechanisms._registry import spec_class
from ..utils._validation import describe_values
from ._base import NumericChannel, _one_dimensional, _one_report_column

__all__ = [
    "SampledNumericChannel",
    "SampledFakeNumericChannel",
    "report_law",
    "numeric_fake_classes",
    "numeric_fake_law",
]


def report_law(channel: Channel) -> Channel:
    """The channel of the reports *present* in a column: a sampled column's base.

    Estimators compute with it (the output values, the variance bounds, Square
    Wave's transition), while the column's own channel is what reports are
    checked against.
    """
    sampled = (SampledNumericChannel, SampledFakeNumericChannel)
    return channel.base if isinstance(channel, sampled) else channel


def _as_numeric_base(base, cls_name):
    if isinstance(base, Mapping):
        base = Channel.from_dict(base)
    if not isinstance(base, NumericChannel):
        raise TypeError(
            f"base must be the channel (or its spec dict) of the numeric mechanism "
            f"applied to the sampled attribute, got {type(base).__name__}. A "
            "categorical attribute's channel is a SampledChannel."
        )
    if isinstance(base, (SampledNumericChannel, SampledFakeNumericChannel)):
        raise ValueError(
            f"The base of a {cls_name} is one numeric attribute's channel (Duchi, "
            f"Piecewise, Hybrid, Square Wave, one-bit ULDP), not {type(base).__name__}."
        )
    return base


def _float_reports(reports):
    """One column of reports as float64, missing entries (None, pd.NA) as NaN."""
    reports = _one_report_column(reports)
    if isinstance(reports, pd.Series):
        try:
            return reports.to_numpy(dtype=np.float64, na_value=np.nan)
        except (TypeError, ValueError):
            reports = reports.to_numpy()
    arr = _one_dimensional(np.asarray(reports))
    if arr.dtype.kind == "O":
        missing = pd.isna(arr)
        if missing.any():
            arr = np.where(missing, np.nan, arr)
    try:
        return arr.astype(np.float64)
    except (TypeError, ValueError):
        kind = pd.api.types.infer_dtype(arr, skipna=True)
        raise ReportMismatchError(
            f"Reports of a numeric attribute are numbers (NaN where the user "
            f"sampled another attribute); got values of type {kind} "
            f"({describe_values(arr)})."
        ) from None


class SampledNumericChannel(NumericChannel):
    """Channel of one numeric attribute's reports under SMP (one sampled attribute per user).

    Each of the d attributes is sampled with probability 1/d; a user who
    sampled this attribute reports it through ``base``, the others send no
    report of it (NaN in its column). The index is independent of the data,
    so the reports present are n_j i.i.d. reports of ``base``: the
    statistics are their histogram (``n`` = n_j), and the mean of the
    reports present estimates the attribute's mean
    (:class:`~sklearn_uldp.numeric.MeanEstimator`), its distribution for
    Square Wave (:class:`~sklearn_uldp.numeric.SquareWaveEstimator`).

    Parameters
    ----------
    base : NumericChannel or dict
        The channel (or its spec) of the numeric mechanism applied to the
        attribute.
    n_attributes : int
        The number d of attributes each user holds (>= 2).

    Notes
    -----
    The privacy of a row is the categorical case's (``docs/many_attributes.md``):
    the output (j, y) has probability ``Q_j(y | x_j) / d``, so rows differ by
    at most the largest attribute budget, and attribute i by its own.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp import MeanEstimator
    >>> from sklearn_uldp.numeric import DuchiChannel, SampledNumericChannel
    >>> channel = SampledNumericChannel(DuchiChannel((0, 10), 1.0), n_attributes=3)
    >>> minus, plus = channel.output_values()
    >>> reports = np.array([plus, np.nan, minus, np.nan, plus])
    >>> est = MeanEstimator(mechanism=channel).fit(reports)
    >>> est.n_reports_, round(est.mean_, 3)
    (3, 8.607)
    """

    name = "smp_numeric"
    #: Reports may be missing (users who sampled another attribute).
    missing_reports = True

    _spec_field_schemas: dict[str, dict[str, Any]] = {
        "base": {
            "type": "object",
            "description": (
                "The spec of the numeric mechanism a user applies to the sampled "
                "attribute (a channel spec of this format)."
            ),
        },
        "n_attributes": {
            "type": "integer",
            "minimum": 2,
            "description": "Number d of attributes each user holds; one is sampled.",
        },
    }

    def __init__(self, base: NumericChannel | dict[str, Any], n_attributes: int) -> None:
        self.base = _as_numeric_base(base, type(self).__name__)
        self.n_attributes = _check_n_attributes(n_attributes)
        self.bounds = self.base.bounds
        self.epsilon = self.base.epsilon
        self.unbiased_reports = self.base.unbiased_reports

    def __getattr__(self, name):
        # Parameters of the base (alpha, band, sensitive ranges, ...) read
        # through; never private state, nor anything before the base is set.
        if name.startswith("_") or "base" not in self.__dict__:
            raise AttributeError(name)
        return getattr(self.__dict__["base"], name)

    # ------------------------------------------------------------- identity
    def get_params(self) -> dict[str, Any]:
        return {"base": self.base.to_dict(), "n_attributes": self.n_attributes}

    def _key(self):
        return (self.name, self.base._key(), self.n_attributes)

    def __repr__(self):
        return f"{type(self).__name__}(n_attributes={self.n_attributes}, base={self.base!r})"

    def describe_difference(self, other):
        if type(self) is not type(other):
            return super().describe_difference(other)
        diffs = []
        if self.n_attributes != other.n_attributes:
            diffs.append(f"n_attributes: {self.n_attributes!r} vs {other.n_attributes!r}")
        return diffs + [f"base {d}" for d in self.base.describe_difference(other.base)]

    def _check_budget(self, what=None):
        return None  # the base's, checked when it was built

    # --------------------------------------- the law of a report present
    @property
    def n_outputs(self) -> int:
        return self.base.n_outputs

    def output_values(self) -> np.ndarray:
        return self.base.output_values()

    def output_labels(self):
        return self.base.output_labels()

    def protected_outputs(self):
        return self.base.protected_outputs()

    def output_probabilities(self, values):
        """The law of a report present: the base's."""
        return self.base.output_probabilities(values)

    def matrix(self, inputs=None):
        """The law of a report present: the base's (see :meth:`marginal_matrix`)."""
        return self.base.matrix(inputs)

    def realized_matrix(self):
        return self.base.realized_matrix()

    def marginal_matrix(self, inputs=None):
        """The column's law, missing reports included: ``Q / d``, then "no report".

        Parameters
        ----------
        inputs : array-like of shape (m,), default=None
            Inputs in column units (the base's default grid by default).

        Returns
        -------
        Q : ndarray of shape (m, n_outputs + 1)
            The last column, ``1 - 1/d`` for every input, is "not sampled".
        """
        Q = self.base.matrix(inputs) / self.n_attributes
        return np.column_stack([Q, np.full(Q.shape[0], 1.0 - 1.0 / self.n_attributes)])

    @property
    def sensitive_mask(self):
        return self.base.sensitive_mask

    def default_inputs(self, n: int = 33) -> np.ndarray:
        return self.base.default_inputs(n)

    def variance(self, values):
        return self.base.variance(values)

    def worst_case_variance(self) -> float:
        return self.base.worst_case_variance()

    # ---------------------------------------------------------------- users
    def sample(self, values, rng):
        """Reports of users who sampled the attribute (the base's sampler)."""
        return self.base.sample(values, rng)

    def report(self, values, rng, out):
        return self.base.report(values, rng, out)

    # ------------------------------------------------------------ collector
    def encode_reports(self, reports):
        """The base's codes of the reports present (missing ones dropped)."""
        values = _float_reports(reports)
        return self.base.encode_reports(values[~np.isnan(values)])

    def statistics(self, codes, *, keep_reports=False):
        """The histogram of the reports present (n = the users who sampled it)."""
        stats = self.base.statistics(codes, keep_reports=keep_reports)
        return ReportStatistics(self, stats.n, stats.counts, stats.extra)


# ===================================================== sampling + fake data
#: The numeric channels that can send fake reports (RS+FD): the LDP mean
#: mechanisms, whose fake law and likelihood-ratio classes are exact (each
#: channel class says so: ``fake_refusal`` is None).
FAKE_NUMERIC = ("duchi", "piecewise", "hybrid")


def numeric_fake_refusal(channel: Channel) -> str | None:
    """Why a numeric channel cannot send fake reports (None: it can)."""
    return getattr(report_law(channel), "fake_refusal", "it is not a numeric channel")


def numeric_fake_classes(name: str, epsilon: float) -> tuple[np.ndarray, np.ndarray]:
    """The likelihood-ratio classes (R+, R-) of a real report against a fake.

    ``r(y | x) = Q(y | x) / F(y)`` with F the report law of a uniformly random
    input; ``R+ = sup_x r`` and ``R- = inf_x r`` over the **continuum** of
    inputs (closed forms), reduced to the classes that set the guarantees of
    :func:`~sklearn_uldp.mechanisms.fake_data_guarantees`: the channel class's
    :meth:`~NumericChannel.fake_ratio_classes_at`.

    Parameters
    ----------
    name : {"duchi", "piecewise", "hybrid"}
    epsilon : float
        The channel's budget.

    Returns
    -------
    (R_plus, R_minus) : ndarrays
    """
    cls = spec_class(name)
    if cls is None or not issubclass(cls, NumericChannel) or cls.fake_refusal is not None:
        raise ValueError(f"No fake reports for the numeric channel {name!r}.")
    return cls.fake_ratio_classes_at(epsilon)


def numeric_fake_law(channel: Channel) -> np.ndarray:
    """F: the exact law of a fake report over the outputs (a uniform input's report).

    Parameters
    ----------
    channel : DuchiChannel, PiecewiseChannel or HybridChannel

    Returns
    -------
    F : ndarray of shape (n_outputs,)
    """
    return report_law(channel).fake_law("random")


def sample_numeric_fakes(channel: Channel, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` fake reports (column units): the reports of uniformly random inputs."""
    return report_law(channel).sample_fakes("random", n, rng)


class SampledFakeNumericChannel(NumericChannel):
    """Channel of one numeric attribute's reports under RS+FD (sampling plus fakes).

    Each user samples one of d attributes; this attribute's report is real
    (``base``, at the amplified budget) with probability 1/d and otherwise a
    fake: the report of a uniformly random input of the bounds, drawn
    independently of the data. The column is the mixture
    ``Q'(y | x) = Q(y | x) / d + (1 - 1/d) F(y)``. A mean mechanism's reports
    are unbiased, so a report's mean is ``x / d + (1 - 1/d) m`` (m: the
    middle of the bounds) and the de-mixed mean ``d * mean - (d - 1) m`` is
    unbiased for the column's mean, with d² times the variance of a report
    (:class:`~sklearn_uldp.numeric.MeanEstimator` computes it, with its
    intervals).

    Parameters
    ----------
    base : DuchiChannel, PiecewiseChannel, HybridChannel or dict
        The channel (or its spec) of the real report.
    n_attributes : int
        The number d of attributes (>= 2).
    fake : {"random"}, default="random"
        The fake law: the report of a uniformly random input.

    Notes
    -----
    The row's privacy (``docs/many_attributes.md``) depends on the channels
    through the classes of :func:`numeric_fake_classes`.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp import MeanEstimator
    >>> from sklearn_uldp.numeric import DuchiChannel, SampledFakeNumericChannel
    >>> channel = SampledFakeNumericChannel(DuchiChannel((0, 10), 2.0), n_attributes=2)
    >>> round(channel.epsilon, 4)  # the column alone: log((3 e^2 + 1) / (e^2 + 3))
    0.802
    >>> minus, plus = channel.output_values()
    >>> est = MeanEstimator(mechanism=channel).fit(np.array([plus, plus, minus, minus, plus]))
    >>> round(est.mean_, 3)  # 2 * mean - 5 (half the reports are fakes, of mean 5)
    7.626
    """

    name = "rsfd_numeric"

    _spec_field_schemas: dict[str, dict[str, Any]] = {
        **SampledNumericChannel._spec_field_schemas,
        "base": {
            "type": "object",
            "description": (
                "The spec of the numeric mean mechanism of the real report (duchi, "
                "piecewise or hybrid), at its amplified budget."
            ),
        },
        "fake": {
            "enum": ["random"],
            "description": "Law of the fake reports: the report of a uniformly random input.",
        },
    }

    def __init__(
        self, base: NumericChannel | dict[str, Any], n_attributes: int, fake: str = "random"
    ) -> None:
        self.base = _as_numeric_base(base, type(self).__name__)
        refusal = numeric_fake_refusal(self.base)
        if refusal is not None:
            raise ValueError(
                f"{type(self.base).__name__} cannot send fake reports: {refusal}. Fake "
                f"reports exist for {list(FAKE_NUMERIC)}."
            )
        if fake != "random":
            raise ValueError(
                f"fake must be 'random' (the report of a uniformly random input) for a "
                f"numeric column, got {fake!r}."
            )
        self.fake = fake
        self.n_attributes = _check_n_attributes(n_attributes)
        self.bounds = self.base.bounds
        self.unbiased_reports = True
        lam = 1.0 / self.n_attributes
        plus, minus = self.base.fake_ratio_classes()
        self.epsilon = float(np.max(np.log((lam * plus + 1 - lam) / (lam * minus + 1 - lam))))

    __getattr__ = SampledNumericChannel.__getattr__
    _key = SampledNumericChannel._key
    describe_difference = SampledNumericChannel.describe_difference

    def get_params(self) -> dict[str, Any]:
        return {"base": self.base.to_dict(), "n_attributes": self.n_attributes, "fake": self.fake}

    def __repr__(self):
        return (
            f"{type(self).__name__}(n_attributes={self.n_attributes}, fake={self.fake!r}, "
            f"base={self.base!r})"
        )

    # the budget is the base's (checked when it was built); the outputs are its
    _check_budget = SampledNumericChannel._check_budget

    # ------------------------------------------------------------ the law
    n_outputs = SampledNumericChannel.n_outputs
    output_values = SampledNumericChannel.output_values
    output_labels = SampledNumericChannel.output_labels

    def fake_distribution(self) -> np.ndarray:
        """The law F of a fake report over the outputs."""
        return numeric_fake_law(self.base)

    def output_probabilities(self, values):
        lam = 1.0 / self.n_attributes
        return (
            lam * self.base.output_probabilities(values)
            + (1.0 - lam) * (self.fake_distribution()[None, :])
        )

    def matrix(self, inputs=None):
        inputs = self.default_inputs() if inputs is None else np.asarray(inputs, dtype=float)
        return self.output_probabilities(inputs)

    def realized_matrix(self):
        return self.matrix()

    def default_inputs(self, n: int = 33) -> np.ndarray:
        return self.base.default_inputs(n)

    # ---------------------------------------------------------------- users
    def sample(self, values, rng):
        """The column's reports as codes: real w.p. 1/d, else a fake."""
        values = np.asarray(values, dtype=float)
        codes = self.base.sample(values, rng)
        fake = np.flatnonzero(rng.integers(0, self.n_attributes, size=values.size) != 0)
        low, high = self.bounds
        codes[fake] = self.base.sample(low + (high - low) * rng.random(fake.size), rng)
        return codes

    # ------------------------------------------------------------ collector
    def encode_reports(self, reports):
        return self.base.encode_reports(reports)

    def statistics(self, codes, *, keep_reports=False):
        stats = self.base.statistics(codes, keep_reports=keep_reports)
        return ReportStatistics(self, stats.n, stats.counts, stats.extra)

    def report_moments(self, stats):
        """The de-mixed mean ``d * mean - (d - 1) m`` and its interval bounds.

        Per report ``w = d z - (d - 1) m``: E w is the column's mean, its
        standard deviation d times z's, its variance at most d² (the base's
        worst-case noise variance + ((high - low) / 2)²), its distance to the
        mean at most d times z's, and its skewness z's.
        """
        from ._mean import _moments, interval_bounds

        d = self.n_attributes
        middle = 0.5 * (self.low + self.high)
        out = _moments(self.base.output_values(), stats.counts, stats.n)
        out["mean"] = d * out["mean"] - (d - 1) * middle
        out["std"] = d * out["std"]
        variance, reach, skew = interval_bounds(self.base)
        out["variance_bound"], out["range_bound"], out["skewness_bound"] = (
            d * d * variance,
            d * reach,
            skew,
        )
        return out

    def variance(self, values):
        """Variance of one de-mixed report ``d z - (d - 1) m`` given the input."""
        d = self.n_attributes
        values = np.asarray(values, dtype=float)
        grid = np.linspace(self.low, self.high, 4097)
        fake_second = float(np.mean(self.base.variance(grid) + grid**2))  # E_U E[z² | U]
        second = (self.base.variance(values) + values**2) / d + (1 - 1 / d) * fake_second
        middle = 0.5 * (self.low + self.high)
        mean = values / d + (1 - 1 / d) * middle
        return d * d * (second - mean**2)
