"""What the one-report families (marginals, range queries) share.

:class:`MarginalPrivatizer` and :class:`RangeQueryPrivatizer` emit their
reports the same way, and :class:`MarginalEstimator` and
:class:`RangeQueryEstimator` fit the same way: each user sends one report of
one measured set of columns (a marginal, a grid), the reports carry the
privatizer's channel, and the statistics are counts that add up across
batches. This module holds those pieces once; each family says which channel
class it accepts, how to turn a privatizer or spec into that channel, and the
names its messages use (the class's own name comes from ``type(self)``).
"""

from __future__ import annotations

from collections.abc import Callable
from operator import add
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn.utils.validation import (
    _check_feature_names,
    check_array,
    check_is_fitted,
    validate_data,
)

from ..exceptions import ReportMismatchError
from ..mechanisms._channel import Channel, ReportStatistics
from ..mechanisms._core import _transform_output
from ..mechanisms._reports import Reports, attach_channel, get_channel
from ..privacy import PrivacyCheck, check_ldp, check_uldp
from ..privacy._checks import _within
from ..utils._dask import tree_sum_of_partitions
from ..utils._random import transform_generator
from ..utils._validation import validate_params_with_hints


# ---------------------------------------------------------------- channels
class _OneReportChannelMixin:
    """What a one-report channel answers alike: a report is one int64 row.

    It comes before ``Channel`` among the bases. Such a channel is no
    column of ``DataFramePrivatizer`` (each family's ``sampled_channel`` says
    so in its words) and has no linear estimator or likelihood of its own
    (each measured set's channel has): those raise ``_estimate_hint``.
    """

    _estimate_hint: str
    # Given by the channel class (annotations only, for the type checker).
    report_columns: Callable[[], list[str]]
    sampled_channel: Callable[[int], Channel]
    if TYPE_CHECKING:

        @property
        def report_width(self) -> int: ...

    def report_column_names(self, column: str) -> list[str]:
        """:meth:`report_columns`: a report covers a row, so no input column names it."""
        return self.report_columns()

    def report_dtypes(self, column: str) -> list[np.dtype]:
        return [np.dtype(np.int64)] * self.report_width  # one int64 table

    def sampled_fake_channel(self, n_attributes: int, fake: str) -> Channel:
        return self.sampled_channel(n_attributes)

    def fake_kinds(self) -> tuple[str, ...]:
        return ()  # see sampled_channel

    def merge_extra(self, a, b):
        if a is None:
            return b
        if b is None:
            return a
        return a + b

    # The linear estimator and the likelihood are each measured set's own.
    def _refuse(self, *args, **kwargs):
        raise ReportMismatchError(self._estimate_hint)

    observed_frequency = expected_frequency = em_gradient = likelihood = _refuse
    unbiased_estimate = estimator_variance = null_variance = _refuse

    @property
    def coef_a(self):
        raise ReportMismatchError(self._estimate_hint)

    coef_b = coef_a


# ---------------------------------------------------------------- privacy
# check_marginal_uldp and check_range_uldp verify the same three properties
# on the exact matrix over rows; only (3) (which rows a row's sensitive values
# may be swapped for) and the name of a measured set differ.


def _check_each_set(channel, plain, what):
    """Each set's channel against its definition; the whole check for plain LDP.

    Returns ``(eps, reasons, Q, check)``: ``check`` is the finished
    :class:`PrivacyCheck` for plain LDP reports (``plain``), else None.
    """
    eps = float(channel.epsilon)
    reasons = []
    for j, sub in enumerate(channel.channels):
        sub_check = check_ldp(sub) if plain else check_uldp(sub)
        if not sub_check:
            reasons.append(f"{what} {j}: {'; '.join(sub_check.reasons)}")
    Q = channel.realized_matrix()
    if plain:
        whole = check_ldp(Q, epsilon=eps)
        check = PrivacyCheck(
            "LDP",
            eps,
            whole.satisfied and not reasons,
            whole.worst_log_ratio,
            whole.worst,
            whole.invertible,
            reasons + whole.reasons,
        )
        return eps, reasons, Q, check
    return eps, reasons, Q, None


def _check_protected_and_unprotected(channel, Q, protected, eps, reasons, cells_of, what):
    """(1) protected outputs are LDP between rows; (2) an unprotected one reveals one cell.

    ``cells_of(j)`` gives each row's cell code in set ``j``. Appends to
    ``reasons``; returns ``(worst, where)`` of (1).
    """
    worst, where = -np.inf, None
    # (1) protected outputs: LDP between any two rows.
    sub = Q[:, protected]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(
            sub.max(axis=0) > 0, np.log(sub.max(axis=0)) - np.log(sub.min(axis=0)), -np.inf
        )
    if ratio.size:
        top = int(np.argmax(ratio))
        worst = float(ratio[top])
        where = (
            int(np.flatnonzero(protected)[top]),
            int(np.argmax(sub[:, top])),
            int(np.argmin(sub[:, top])),
        )
        if not _within(worst, eps):
            reasons.append(f"protected output {where[0]}: log-ratio {worst:.4g} > {eps:.4g}")
    # (2) unprotected outputs: the rows of one non-sensitive cell, exactly.
    offsets = np.cumsum([0] + [c.n_outputs for c in channel.channels])
    for j in range(len(channel.channels)):
        cells = cells_of(j)
        sensitive_cells = channel.cell_sensitive(j)
        for y in np.flatnonzero(~protected[offsets[j] : offsets[j + 1]]):
            support = Q[:, offsets[j] + y] > 0
            if not support.any():
                continue
            produced = np.unique(cells[support])
            if produced.size != 1 or not np.array_equal(support, cells == produced[0]):
                reasons.append(
                    f"unprotected output {offsets[j] + y} of {what} {j} comes from "
                    f"{produced.size} cells (it must reveal one cell, and only that)"
                )
            elif sensitive_cells[produced[0]]:
                reasons.append(
                    f"unprotected output {offsets[j] + y} of {what} {j} reveals a sensitive cell"
                )
    return worst, where


# ---------------------------------------------------------------- statistics
def _reduce_statistics(batches, mechanism, keep_reports, as_channel, privatizer_name):
    """The body of ``reduce_marginal_statistics`` and ``reduce_range_statistics``.

    ``as_channel`` turns a privatizer, channel or spec into the family's
    channel; ``privatizer_name`` names the family's privatizer in messages.
    """
    given = None if mechanism is None else as_channel(mechanism)
    if hasattr(batches, "__dask_graph__") and hasattr(batches, "to_delayed"):
        if given is None:
            raise ValueError(
                "Dask partitions do not carry the spec: pass mechanism= (the fitted "
                f"{privatizer_name} or its spec)."
            )
        return tree_sum_of_partitions(batches, _batch_statistics, add, given, keep_reports)
    total = None
    for batch in batches:
        carried = get_channel(batch)
        channel = carried if carried is not None else given
        if channel is None:
            raise ValueError("These reports do not carry their spec; pass mechanism=.")
        if given is not None and carried is not None and carried != given:
            raise ReportMismatchError(
                "A batch comes from another privatizer than `mechanism` (differences: "
                f"{', '.join(carried.describe_difference(given))})."
            )
        part = _batch_statistics(batch, as_channel(channel), keep_reports)
        total = part if total is None else total + part
    if total is None:
        raise ValueError("No batches of reports were given.")
    return total


def _batch_statistics(batch, channel, keep_reports):
    return channel.statistics(channel.encode_reports(batch), keep_reports=keep_reports)


_EstT = TypeVar("_EstT", bound="_OneReportEstimatorMixin")
_PrivT = TypeVar("_PrivT", bound="_OneReportPrivatizerMixin")


class _OneReportPrivatizerMixin:
    """Output of a privatizer whose user sends one report (``channel_`` fitted).

    Reports are a :class:`~sklearn_uldp.mechanisms.Reports` array or a
    DataFrame carrying the spec; ``set_output`` picks between them. It comes
    before ``PrivatizerBase`` among the bases, so its methods win.
    """

    #: The words for what the privatizer reads (in the sparse-input error) and
    #: the dtype an array input is read with; each family sets them.
    _input_kind: str
    _input_dtype: str | None
    # Given by the privatizer class and PrivatizerBase (annotations only, for
    # the type checker).
    channel_: Any
    columns_: list[str]
    random_state: Any
    _row_codes: Callable[[pd.DataFrame], tuple[np.ndarray, np.ndarray, int]]
    _next_call: Callable[[], int]
    _transform_rng: Callable[..., np.random.Generator]

    def _frame(self, X, *, reset):
        """``X`` as a DataFrame with string column names."""
        name = type(self).__name__
        if sp.issparse(X):
            raise TypeError(
                f"Sparse input is not supported: {name} privatizes columns of "
                f"{self._input_kind}. Pass a DataFrame or a dense array."
            )
        if isinstance(X, pd.Series):
            X = X.to_frame()
        if isinstance(X, pd.DataFrame):
            if reset:
                validate_data(self, X, skip_check_array=True, reset=True)
            # After fit, a DataFrame is read by name: only the privatized
            # columns, in any order (the family's reader names absent ones).
            for axis, what in ((0, "sample"), (1, "feature")):
                if X.shape[axis] == 0:
                    raise ValueError(
                        f"Found array with 0 {what}(s) (shape={X.shape}) while a minimum "
                        f"of 1 is required by {name}."
                    )
            if not all(isinstance(c, str) for c in X.columns):
                X = X.set_axis([str(c) for c in X.columns], axis=1)
            return X
        options = dict(
            dtype=self._input_dtype,
            accept_sparse=False,
            ensure_all_finite=False,
            ensure_min_samples=1,
            ensure_min_features=1,
        )
        if not reset and self.__dict__.get("_fitted_without_data", False):
            # Fitted on the declared domains alone: an array's columns are
            # the declared columns, by position (no names to compare).
            arr = check_array(X, input_name="X", estimator=self, **options)
            if arr.shape[1] != len(self.columns_):
                raise ValueError(
                    f"X has {arr.shape[1]} features, but {name} is expecting "
                    f"{len(self.columns_)} features as input (the declared columns "
                    f"{self.columns_[:20]}, by position)."
                )
        else:
            arr = validate_data(self, X, reset=reset, **options)
        return pd.DataFrame(arr, columns=[f"x{j}" for j in range(arr.shape[1])], copy=False)

    @staticmethod
    def _by_position(frame, X, columns):
        """An array's columns named as ``columns`` when it has exactly as many."""
        if isinstance(X, (pd.DataFrame, pd.Series)) or frame.shape[1] != len(columns):
            return frame
        if set(columns) <= set(frame.columns):
            return frame
        return frame.set_axis(list(columns), axis=1)

    #: Keys of the seeded streams of the assignment and of the reports' noise.
    _assignment_key: str
    _noise_key: str

    def transform(self, X: Any) -> Any:
        """Privatize each row: draw its measured set, report the row's cell in it.

        The set is a marginal (:class:`~sklearn_uldp.marginals.MarginalPrivatizer`)
        or a grid (:class:`~sklearn_uldp.marginals.RangeQueryPrivatizer`), drawn
        uniformly and independently of the row.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, n_features)
            The table (its privatized columns are read by name, or by
            position for an array).

        Returns
        -------
        reports : DataFrame or Reports of shape (n_samples, 1 + n_words)
            Integers: the set's index, then the oracle's report
            (``get_feature_names_out``); a DataFrame for DataFrame input (or
            with ``set_output(transform="pandas")``) carrying the spec in
            ``attrs``, else a :class:`~sklearn_uldp.mechanisms.Reports`
            array carrying the channel.
        """
        check_is_fitted(self, "channel_")
        frame = self._by_position(self._frame(X, reset=False), X, self.columns_)
        codes, hashed, n_values = self._row_codes(frame)
        call = self._next_call()
        # The assignment never reads the data (no hash of the input keys its
        # seeded stream); the oracles' noise is drawn from a stream of its own.
        assign_rng = transform_generator(self.random_state, column=self._assignment_key, call=call)
        assignment = assign_rng.integers(0, len(self.channel_.channels), size=codes.shape[0])
        noise_rng = self._transform_rng(hashed, n_values, column=self._noise_key, call=call)
        reports = self.channel_.sample(codes, noise_rng, assignment=assignment)
        return self._output(reports, X)

    def _output(self, reports, X):
        config = self.__dict__.get("_sklearn_output_config", {}).get("transform")
        if config is None:
            config = "pandas" if isinstance(X, (pd.DataFrame, pd.Series)) else None
            if config is None and _transform_output(self) == "pandas":
                config = "pandas"
        if config == "pandas":
            index = X.index if isinstance(X, (pd.DataFrame, pd.Series)) else None
            frame = pd.DataFrame(
                reports, columns=self.get_feature_names_out(), index=index, copy=False
            )
            return attach_channel(frame, self.channel_)
        return Reports(reports, self.channel_)

    def set_output(self: _PrivT, *, transform: str | None = None) -> _PrivT:
        """Set the output container of ``transform``.

        Parameters
        ----------
        transform : {"default", "pandas"}, default=None
            ``"default"``: :class:`~sklearn_uldp.mechanisms.Reports` (an
            int64 array carrying the channel); ``"pandas"``: a DataFrame
            carrying the spec in ``attrs``; None: unchanged (a DataFrame for
            DataFrame input).

        Returns
        -------
        self : object
            The privatizer.
        """
        if transform is None:
            return self
        if transform not in ("default", "pandas"):
            raise ValueError(
                f"{type(self).__name__} returns numpy or pandas reports, which carry their "
                f"spec: set_output(transform='default' or 'pandas'), got {transform!r}."
            )
        self._sklearn_output_config = {"transform": transform}
        return self

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        """Names of the report columns: the measured set's, then ``report`` (or ``report_<w>``).

        The first column is ``marginal`` for marginal reports, ``grid`` for
        range-query reports: the index of the set of columns the user measured.

        Parameters
        ----------
        input_features : None
            Ignored.

        Returns
        -------
        feature_names_out : ndarray of str objects
        """
        check_is_fitted(self, "channel_")
        return np.asarray(self.channel_.report_columns(), dtype=object)

    @property
    def epsilon_spent_(self) -> float:
        """The budget a user's row spends: ``epsilon``, one report per row."""
        check_is_fitted(self, "channel_")
        return float(self.channel_.epsilon)


class _OneReportEstimatorMixin:
    """Fitting of an estimator on one-report-per-user reports.

    A subclass sets ``_hints`` (parameter hints for
    ``validate_params_with_hints``), ``_channel_class`` (the channel class its
    statistics must carry), ``_report_kind`` (e.g. ``"marginal"``),
    ``_reduce_name`` (its ``reduce_*_statistics`` function),
    ``_privatizer_name``, and ``_as_channel`` (privatizer, channel or spec to
    channel); it defines ``_keep_reports`` and ``_result``.
    """

    _hints: dict[str, str]
    _channel_class: type
    _report_kind: str
    _reduce_name: str
    _privatizer_name: str
    # Given by the estimator class (annotations only, for the type checker).
    mechanism: Any
    _keep_reports: Callable[[], bool]
    _result: Callable[[], Any]

    _fitted_attributes = (
        "channel_",
        "statistics_",
        "n_reports_",
        "_cache",
        "n_features_in_",
        "feature_names_in_",
    )

    @staticmethod
    def _as_channel(mechanism: Any) -> Any:  # pragma: no cover - every subclass overrides it
        raise NotImplementedError

    def __sklearn_clone__(self):
        mechanism = self.mechanism
        if not isinstance(mechanism, Channel):
            return super().__sklearn_clone__()
        # A channel is an immutable public spec: the clone shares it.
        self.mechanism = None
        try:
            new = super().__sklearn_clone__()
        finally:
            self.mechanism = mechanism
        new.mechanism = mechanism
        return new

    def set_params(self, **params):
        """Set parameters; the estimates are recomputed at next use.

        Parameters
        ----------
        **params : dict
            Estimator parameters.

        Returns
        -------
        self : object
            The estimator.
        """
        super().set_params(**params)
        self.__dict__.pop("_cache", None)
        return self

    def fit(self: _EstT, X: Any, y: object = None) -> _EstT:
        """Estimate every measured table from the reports.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_reports, 1 + n_words)
            Reports as the matching privatizer's ``transform`` returned them.
        y : None
            Ignored.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        for attr in self._fitted_attributes:
            self.__dict__.pop(attr, None)
        self.partial_fit(X)
        self._result()
        return self

    def partial_fit(self: _EstT, X: Any, y: object = None) -> _EstT:
        """Add a batch of reports to the statistics (the estimates wait for first use).

        Parameters
        ----------
        X : DataFrame or array-like
            A batch of reports of the same privatizer as earlier batches.
        y : None
            Ignored.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        validate_params_with_hints(self, self._hints)
        channel = self._resolve_channel(X)
        if not isinstance(X, pd.DataFrame):
            # scikit-learn's messages for what is never a report table: sparse
            # input, NaN or infinity, no rows, complex numbers, 1-D or 3-D arrays.
            check_array(
                X,
                accept_sparse=False,
                dtype=None,
                ensure_all_finite=True,
                ensure_min_samples=1,
                input_name="reports",
                estimator=self,
            )
        first = not hasattr(self, "statistics_")
        stats = channel.statistics(channel.encode_reports(X), keep_reports=self._keep_reports())
        if first:
            self.channel_ = channel
            self.statistics_ = stats
            self.n_features_in_ = len(channel.report_columns())
            _check_feature_names(self, X, reset=True)
        else:
            _check_feature_names(self, X, reset=False)
            self.statistics_ = self.statistics_ + stats
        self.n_reports_ = int(self.statistics_.n)
        self._cache = None
        return self

    def fit_statistics(self: _EstT, statistics: ReportStatistics) -> _EstT:
        """Fit from statistics summed elsewhere (the family's ``reduce_*_statistics``).

        Parameters
        ----------
        statistics : ReportStatistics
            Statistics of this family's reports (their channel this family's).

        Returns
        -------
        self : object
            The fitted estimator.
        """
        validate_params_with_hints(self, self._hints)
        if not isinstance(statistics, ReportStatistics) or not isinstance(
            statistics.channel, self._channel_class
        ):
            raise TypeError(
                f"statistics must be the ReportStatistics of {self._report_kind} reports "
                f"({self._reduce_name}, or channel.statistics(...))."
            )
        if self.mechanism is not None and self._as_channel(self.mechanism) != statistics.channel:
            raise ReportMismatchError(
                "The statistics come from another privatizer than `mechanism`."
            )
        for attr in self._fitted_attributes:
            self.__dict__.pop(attr, None)
        self.channel_ = statistics.channel
        self.statistics_ = statistics
        self.n_reports_ = int(statistics.n)
        channel: Any = statistics.channel  # the family's channel (checked above)
        self.n_features_in_ = len(channel.report_columns())
        self._cache = None
        self._result()
        return self

    def _resolve_channel(self, X):
        carried = get_channel(X)
        given = None if self.mechanism is None else self._as_channel(self.mechanism)
        fitted = getattr(self, "channel_", None)
        if carried is None and given is None and fitted is None:
            raise ValueError(
                "The reports do not say which privatizer produced them: pass reports "
                f"as {self._privatizer_name}.transform returned them, or give "
                f"{type(self).__name__}(mechanism=fitted_privatizer_or_spec)."
            )
        channel = carried if carried is not None else given if given is not None else fitted
        channel = self._as_channel(channel)
        for other, what in ((given, "the `mechanism` parameter"), (fitted, "earlier batches")):
            if other is not None and other != channel:
                raise ReportMismatchError(
                    f"The reports come from {channel!r}, but {what} describes {other!r} "
                    f"(differences: {', '.join(channel.describe_difference(other))})."
                )
        return channel
