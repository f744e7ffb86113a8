"""What every mechanism shares, whatever its input (categories or numbers).

:class:`PrivatizerBase` holds the parts of a mechanism that do not depend on
what a value is: the per-call random streams (fresh entropy, the secure
generator, seeded simulations keyed by column name and call rank), the
several-columns bookkeeping (one stream and one report block per input
column), the output container that carries the channel, and the public spec.
:class:`~sklearn_uldp.mechanisms.BaseMechanism` (categorical columns) and
:class:`~sklearn_uldp.numeric.BaseNumericMechanism` (bounded numeric columns)
both build on it, so the two families draw their noise the same way.
"""

from __future__ import annotations

import copy
from numbers import Integral
from typing import Any

import numpy as np
import pandas as pd
from sklearn import get_config
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from ..utils._random import (
    check_secure_available,
    is_fresh,
    is_secure,
    transform_generator,
)
from ._reports import Reports, attach_channel

__all__ = ["PrivatizerBase"]


class PrivatizerBase(TransformerMixin, BaseEstimator):
    """Random streams, several columns and the spec, shared by every mechanism.

    Subclasses set ``channel_`` (and ``n_features_in_``) in ``fit``, call
    :meth:`_start_random_stream` at its end, and draw each ``transform``
    call's noise from :meth:`_transform_rng`.
    """

    # ------------------------------------------------------------ randomness
    def _start_random_stream(self):
        """Reset the per-call stream derivation (called at the end of ``fit``).

        No seed, key or generator is stored: ``None`` and ``"secure"`` draw
        fresh OS entropy at each ``transform``; a seed is read from
        ``random_state`` itself at each call, and only the number of calls
        since ``fit`` is kept (in a list updated in place, so that
        ``transform`` changes no attribute of the object).
        """
        if is_secure(self.random_state):
            check_secure_available()  # fail at fit, not at the first report
        self.__dict__.pop("_seed_sequence", None)  # state of older versions
        if is_fresh(self.random_state):
            self.__dict__.pop("_transform_calls", None)
        else:
            self._transform_calls = [0]

    def _next_call(self):
        """The rank of this ``transform`` call since ``fit`` (0 when fresh)."""
        if is_fresh(self.random_state):
            return 0
        counter = self.__dict__.get("_transform_calls")
        if counter is None:  # random_state was set after fit
            counter = self._transform_calls = [0]
        call = counter[0]
        counter[0] += 1
        return call

    def _transform_rng(self, codes, n_values=None, *, column=None, call=None):
        """The generator of one ``transform`` call on the encoded input ``codes``.

        ``None`` and ``"secure"`` draw fresh OS entropy and keep nothing.
        Seeded streams (int or SeedSequence) are keyed by the column's name
        and numbered by the call counter, so the columns of one call get
        independent streams.
        """
        if call is None:
            call = self._next_call()
        if column is None:
            names = getattr(self, "feature_names_in_", None)
            # Unnamed input is column "x0", its default feature name.
            column = "x0" if names is None else ",".join(str(n) for n in names)
        return transform_generator(
            self.random_state, column=column, call=call, codes=codes, n_values=n_values
        )

    # --------------------------------------------------------- several columns
    def _input_names(self):
        """The input columns' names (``x0, x1, ...`` for unnamed input)."""
        names = getattr(self, "feature_names_in_", None)
        if names is None:
            return [f"x{j}" for j in range(self.n_features_in_)]
        return [str(n) for n in names]

    def _input_position(self, column):
        """The position of an input column given by position or by name
        (``column_reports``'s lookup), with clear errors."""
        names = self._input_names()
        if isinstance(column, (Integral, np.integer)) and not isinstance(column, bool):
            if not -len(names) <= int(column) < len(names):
                raise IndexError(
                    f"column {column} is out of range: the mechanism was fitted on "
                    f"{len(names)} column(s) {names}."
                )
            return int(column) % len(names)
        if str(column) in names:
            return names.index(str(column))
        raise KeyError(
            f"{column!r} is not an input column of this mechanism; its columns "
            f"are {names} (pass a name or a position)."
        )

    def _column_view(self, name):
        """A shallow copy of the fitted mechanism as fitted on one column.

        It shares the channel and the output configuration, so the
        subclasses' one-column hooks (``_sample``, ``_wrap_reports``,
        ``_column_feature_names``) serve every column unchanged.
        """
        view = copy.copy(self)
        view.n_features_in_ = 1
        view.feature_names_in_ = np.asarray([name], dtype=object)
        return view

    def _container(self, data, X):
        """Return reports as the configured output container."""
        if _transform_output(self) == "pandas":
            index = X.index if isinstance(X, (pd.DataFrame, pd.Series)) else None
            # copy=False: the reports are a new array of this call (pandas
            # would copy them again, 10-50 ms per 10^6 reports).
            frame = pd.DataFrame(
                data, columns=self.get_feature_names_out(), index=index, copy=False
            )
            attach_channel(frame, self.channel_)
            return frame
        return Reports(data, self.channel_)

    # --------------------------------------------------- the sampling strategies
    # ``DataFramePrivatizer(strategy="sample" | "sample+fake")`` privatizes a
    # sampled column per user, and fakes for the others, through these hooks:
    # each family answers for its own columns (categories or numbers).

    #: Whether the input columns hold categories (so a missing value may be
    #: mapped to a category); False for numbers.
    _categorical_input: bool = True

    def _with_domain_of(self, column: Any) -> PrivatizerBase:
        """A clone whose public domain is fixed, checked on (and, when it is
        learned, learned from) the whole input ``column``: what a privatizer
        that fits each mechanism on one row needs."""
        raise NotImplementedError

    def _check_whole_column(self, column: Any, name: str) -> None:
        """Check every value of an input column, sampled or not, as ``transform``
        would (an unknown category, a missing or non-numeric value is an error;
        numbers outside the bounds are counted in one warning)."""
        raise NotImplementedError

    def _sampled_reports(self, column: Any, rows: Any, *, checked: bool = False) -> Any:
        """The reports of ``column`` on ``rows`` with one read of the column
        (see ``BaseMechanism._sampled_reports``); None: the caller checks the
        column and transforms the rows itself."""
        return None

    def _fake_refusal(self, fake: str, column: str) -> str | None:
        """Why this fitted mechanism cannot send fake reports of law ``fake``
        (``"auto"``: of any law) for ``column``; None when it can."""
        kinds = self.channel_.fake_kinds()
        if not kinds:
            return (
                f"Column {column!r} uses {type(self).__name__}, which cannot send fake "
                "reports. Use strategy='sample' for it, or another mechanism."
            )
        if fake != "auto" and fake not in kinds:
            return (
                f"fake={fake!r} is not available for column {column!r} "
                f"({type(self).__name__}: {list(kinds)}). Pass fake='auto'."
            )
        return None

    def _fake_classes_at(self, fake: str) -> tuple[Any, bool]:
        """``(epsilon -> (R+, R-), closed_form)``: the likelihood-ratio classes of
        this column's real reports against fakes, as a function of its budget
        (the calibration of the inner budgets searches over it)."""

        def built(epsilon):
            trial = copy.copy(self)
            trial.epsilon = epsilon
            return trial._make_channel().fake_ratio_classes(fake)

        return built, False

    def _fake_reports(self, fake: str, n: int, rng: Any, X_one: Any) -> np.ndarray:
        """``n`` fake reports of law ``fake``, as ``transform`` formats reports
        (a plain (n, width) array); ``X_one`` is one row of the input column."""
        raise NotImplementedError

    # ------------------------------------------------------------ public spec
    @property
    def epsilon_spent_(self) -> float:
        """Privacy budget one user's row of reports spends (budget accounting).

        ``epsilon`` per input column: by sequential composition the columns'
        budgets add up.
        """
        check_is_fitted(self, "channel_")
        return float(self.n_features_in_ * self.channel_.epsilon)

    def spec(self) -> dict[str, Any]:
        """The public spec (a JSON-serialisable dict) a collector needs.

        Returns
        -------
        spec : dict
        """
        check_is_fitted(self, "channel_")
        return self.channel_.to_dict()


def _transform_output(estimator):
    """The configured output container for ``transform`` ("default"/"pandas")."""
    # ``_sklearn_output_config`` is set by ``set_output`` (stable since 1.2).
    config = getattr(estimator, "_sklearn_output_config", {})
    return config.get("transform", get_config()["transform_output"])
