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
from ._base import NumericChannel

__all__ = ["SampledNumericChannel", "report_law"]


def report_law(channel: Channel) -> Channel:
    """The channel of the reports *present* in a column: a sampled column's base.

    Estimators compute with it (the output values, the variance bounds, Square
    Wave's transition), while the column's own channel is what reports are
    checked against.
    """
    return channel.base if isinstance(channel, SampledNumericChannel) else channel


def _as_numeric_base(base, cls_name):
    if isinstance(base, Mapping):
        base = Channel.from_dict(base)
    if not isinstance(base, NumericChannel):
        raise TypeError(
            f"base must be the channel (or its spec dict) of the numeric mechanism "
            f"applied to the sampled attribute, got {type(base).__name__}. A "
            "categorical attribute's channel is a SampledChannel."
        )
    if isinstance(base, SampledNumericChannel) or base.report_format != "numeric":
        raise ValueError(
            f"The base of a {cls_name} is one numeric attribute's channel (Duchi, "
            f"Piecewise, Hybrid, Square Wave, one-bit ULDP), not {type(base).__name__}."
        )
    return base


def _float_reports(reports):
    """One column of reports as float64, missing entries (None, pd.NA) as NaN."""
    if isinstance(reports, pd.DataFrame):
        if reports.shape[1] != 1:
            raise ReportMismatchError(
                f"Expected one column of reports, got a DataFrame with "
                f"{reports.shape[1]} columns. Select the report column."
            )
        reports = reports.iloc[:, 0]
    if hasattr(reports, "toarray"):
        raise ReportMismatchError("Got a sparse matrix; numeric reports are one number per user.")
    if isinstance(reports, pd.Series):
        try:
            return reports.to_numpy(dtype=np.float64, na_value=np.nan)
        except (TypeError, ValueError):
            reports = reports.to_numpy()
    arr = np.asarray(reports)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise ReportMismatchError(
            f"Expected reports of shape (n,) or (n, 1), got shape {arr.shape}."
        )
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
            f"(e.g. {arr[:3].tolist()})."
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
