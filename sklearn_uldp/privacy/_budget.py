"""Privacy budget accounting under sequential composition (mathematics §1)."""

from __future__ import annotations

import math
import numbers
from typing import Any, Protocol, runtime_checkable

import numpy as np
import pandas as pd

from ..exceptions import BudgetError
from ..utils._docstrings import fill_doc

#: The sections every spend's docstring shares.
_DOCS = {
    "spent_or_raise": """
        Returns
        -------
        spent : float
            The total spent after this call.

        Raises
        ------
        BudgetError
            If the total would go past ``total``; nothing is recorded then.
        """,
}

__all__ = ["BudgetAccountant", "longitudinal_exposure"]

# Relative slack for floating-point sums (0.1 + 0.2 must fit a total of 0.3).
_RTOL = 1e-9


@runtime_checkable
class SpendsBudget(Protocol):
    """Anything that reports the budget one person's row spends.

    Fitted mechanisms and :class:`~sklearn_uldp.compose.DataFramePrivatizer`
    have it (``epsilon_spent_``); :meth:`BudgetAccountant.spend` accepts them
    next to plain numbers.
    """

    @property
    def epsilon_spent_(self) -> float: ...


def _as_epsilon(spend):
    """The epsilon of a number, a fitted mechanism or a DataFramePrivatizer."""
    if isinstance(spend, bool):
        raise TypeError("epsilon must be a number or a fitted mechanism, got a bool.")
    if isinstance(spend, numbers.Real):
        eps = float(spend)
    elif hasattr(spend, "epsilon_spent_"):
        eps = float(spend.epsilon_spent_)
    else:
        raise TypeError(
            "Pass a budget (a positive number) or a fitted mechanism (anything "
            f"with epsilon_spent_); got {type(spend).__name__}."
        )
    if math.isnan(eps) or eps < 0:
        raise ValueError(f"A spent budget must be >= 0, got {eps}.")
    return eps


class BudgetAccountant:
    """Add up the privacy budget one person spends (sequential composition).

    Under sequential composition (mathematics §1; ULDP: Murakami & Kawamoto,
    Prop. 1) the privacy loss of a person is the **sum** of the budgets of
    everything that person sent: several columns privatized separately,
    several reports of the same value, reports in several rounds. Keep one
    accountant per person (or per population whose members all send the same
    reports) and call :meth:`spend` for every report; it raises
    :class:`~sklearn_uldp.exceptions.BudgetError` instead of letting the
    total go past ``total``. A failed :meth:`spend` leaves the ledger
    unchanged.

    Parameters
    ----------
    total : float, default=inf
        The total budget a person may spend.

    Attributes
    ----------
    spent : float
        Budget spent so far.
    remaining : float
        ``total - spent``.
    ledger : DataFrame
        One row per :meth:`spend`: ``label``, ``epsilon``, ``count``, ``total``
        (``epsilon * count``).

    Examples
    --------
    >>> from sklearn_uldp import UtilityOptimizedRR
    >>> from sklearn_uldp.privacy import BudgetAccountant
    >>> acc = BudgetAccountant(total=2.0)
    >>> mech = UtilityOptimizedRR(epsilon=0.5, sensitive=["b"],
    ...                           categories=["a", "b"]).fit()
    >>> acc.spend(mech, label="marital")
    0.5
    >>> acc.spend(1.0, label="region")
    1.5
    >>> acc.remaining
    0.5
    >>> acc.spend(mech, count=2)
    Traceback (most recent call last):
    ...
    sklearn_uldp.exceptions.BudgetError: Spending 1 (2 x 0.5) would bring the total to 2.5, ...
    >>> BudgetAccountant.split(1.0, 4)   # 4 reports of one value under eps = 1
    0.25
    """

    def __init__(self, total: float = math.inf) -> None:
        total = float(total)
        if math.isnan(total) or total <= 0:
            raise ValueError(f"total must be a positive budget, got {total}.")
        self.total = total
        self._entries: list[dict[str, Any]] = []

    # ---------------------------------------------------------------- state
    @property
    def spent(self) -> float:
        """Budget spent so far (the sum of the ledger)."""
        return float(math.fsum(e["total"] for e in self._entries))

    @property
    def remaining(self) -> float:
        """Budget left, ``total - spent`` (``inf`` for an unlimited total)."""
        if math.isinf(self.total):
            # inf - inf is NaN: an unlimited budget stays unlimited.
            return math.inf
        return self.total - self.spent

    @property
    def ledger(self) -> pd.DataFrame:
        """The spends so far as a DataFrame."""
        return pd.DataFrame(self._entries, columns=["label", "epsilon", "count", "total"])

    def __repr__(self):
        return (
            f"BudgetAccountant(total={self.total:g}, spent={self.spent:g}, "
            f"entries={len(self._entries)})"
        )

    # ---------------------------------------------------------------- spend
    def check(self, epsilon: float | SpendsBudget, count: int = 1) -> bool:
        """Whether spending ``count`` times ``epsilon`` stays within the total.

        Parameters
        ----------
        epsilon : float or fitted mechanism
        count : int, default=1

        Returns
        -------
        fits : bool
        """
        eps = _as_epsilon(epsilon) * self._check_count(count)
        return self.spent + eps <= self.total * (1 + _RTOL)

    @fill_doc(_DOCS)
    def spend(
        self, epsilon: float | SpendsBudget, *, count: int = 1, label: str | None = None
    ) -> float:
        """Record ``count`` reports of budget ``epsilon`` each.

        Parameters
        ----------
        epsilon : float, fitted mechanism or DataFramePrivatizer
            The budget of one report, or anything with ``epsilon_spent_``.
        count : int, default=1
            Number of such reports the person sends.
        label : str, default=None
            Free text kept in the ledger (column name, round, ...).

        %(spent_or_raise)s
        """
        eps = _as_epsilon(epsilon)
        count = self._check_count(count)
        amount = eps * count
        after = self.spent + amount
        if after > self.total * (1 + _RTOL):
            what = f"{amount:g}" if count == 1 else f"{amount:g} ({count} x {eps:g})"
            raise BudgetError(
                f"Spending {what} would bring the total to {after:g}, past the "
                f"budget {self.total:g} (spent {self.spent:g}, remaining "
                f"{max(self.remaining, 0.0):g})."
            )
        if label is None:
            label = type(epsilon).__name__ if hasattr(epsilon, "epsilon_spent_") else ""
        self._entries.append({"label": label, "epsilon": eps, "count": count, "total": amount})
        return self.spent

    def reset(self) -> BudgetAccountant:
        """Forget every spend (a new person, or a new period)."""
        self._entries = []
        return self

    @staticmethod
    def _check_count(count):
        if isinstance(count, bool) or not isinstance(count, numbers.Integral) or count < 1:
            raise ValueError(f"count must be a positive integer, got {count!r}.")
        return int(count)

    @fill_doc(_DOCS)
    def spend_longitudinal(
        self,
        mechanism: Any,
        *,
        n_values: int = 1,
        n_rounds: int | None = None,
        label: str | None = None,
    ) -> float:
        """Record what a person spends through a memoized (longitudinal) mechanism.

        A memoized mechanism draws one permanent answer per (person, value)
        at ``epsilon_perm`` and sends fresh randomizations of it: any number
        of reports of one value cost at most ``epsilon_perm`` together (the
        reports are post-processing of the permanent answer), and one report
        costs ``epsilon_1`` (record single reports with :meth:`spend`, which
        reads ``epsilon_spent_``). So the person spends ``epsilon_perm`` per
        distinct value ever reported, per input column; with ``n_rounds``,
        the exact loss of that many reports of one value
        (``mechanism.exposure(n_rounds)``, at most ``epsilon_perm``) instead.

        The values are protected given *when* they change: the change
        points themselves are protected only by the reports' own noise (see
        the "Collecting over time" page).

        Parameters
        ----------
        mechanism : fitted longitudinal mechanism or DataFramePrivatizer
            Anything with ``exposure(n_rounds)`` and ``channel_.epsilon_perm``
            (e.g. :class:`~sklearn_uldp.mechanisms.LongitudinalUE`,
            :class:`~sklearn_uldp.heavy_hitters.BloomRAPPOR`), or a fitted
            :class:`~sklearn_uldp.compose.DataFramePrivatizer` (its
            ``exposure`` and ``epsilon_perm_spent_``: a whole row).
        n_values : int, default=1
            Distinct values the person reports (per input column; for a
            privatizer, distinct rows of values).
        n_rounds : int or None, default=None
            The most rounds any one value is reported in; ``None`` for any
            number.
        label : str, default=None
            Free text kept in the ledger.

        %(spent_or_raise)s

        Examples
        --------
        >>> from sklearn_uldp.mechanisms import LongitudinalGRR
        >>> from sklearn_uldp.privacy import BudgetAccountant
        >>> mech = LongitudinalGRR(2.0, 1.0, categories=["a", "b", "c"]).fit()
        >>> acc = BudgetAccountant(total=4.5)
        >>> acc.spend_longitudinal(mech)                  # one value, any number of rounds
        2.0
        >>> round(acc.spend_longitudinal(mech, n_rounds=3), 4)  # another value, 3 rounds
        3.9124
        >>> acc.spend(mech)                               # a single report of a third value
        Traceback (most recent call last):
        ...
        sklearn_uldp.exceptions.BudgetError: Spending 1 would bring the total to 4.912..., ...
        """
        channel = _memoized_round(mechanism)
        # A privatizer of several columns (DataFramePrivatizer): a row's
        # budget over the rounds (epsilon_perm_spent_, exposure()), read
        # duck-typed so that this layer imports no composite.
        composite = hasattr(mechanism, "mechanisms_") and hasattr(mechanism, "exposure")
        if not composite and (
            not hasattr(channel, "epsilon_perm") or not hasattr(mechanism, "exposure")
        ):
            raise TypeError(
                "spend_longitudinal needs a fitted memoized mechanism (with "
                f"exposure() and channel_.epsilon_perm), or a DataFramePrivatizer; got "
                f"{type(mechanism).__name__}. Record the reports of other mechanisms "
                "with spend(mechanism, count=n)."
            )
        n_values = self._check_count(n_values)
        if composite and n_rounds is None:
            per_value = float(mechanism.epsilon_perm_spent_)
            if not np.isfinite(per_value):
                raise ValueError(
                    f"{type(mechanism).__name__} privatizes some columns afresh in every "
                    "round (or samples with fakes), so its budget grows with the number "
                    "of rounds: pass n_rounds (the most rounds a row of values is "
                    "reported in)."
                )
        else:
            per_value = (
                float(channel.epsilon_perm)
                if n_rounds is None
                else float(mechanism.exposure(self._check_count(n_rounds)))
            )
        columns = 1 if composite else int(getattr(mechanism, "n_features_in_", 1))
        if label is None:
            rounds = "any number of" if n_rounds is None else f"{n_rounds}"
            label = f"{type(mechanism).__name__} ({rounds} rounds per value)"
        return self.spend(per_value, count=n_values * columns, label=label)

    @staticmethod
    def split(epsilon: float, n_reports: int) -> float:
        """Budget per report when ``n_reports`` reports share ``epsilon``.

        Sequential composition: ``n_reports`` reports of budget
        ``epsilon / n_reports`` each spend ``epsilon`` in total.

        Parameters
        ----------
        epsilon : float
        n_reports : int

        Returns
        -------
        epsilon_per_report : float
        """
        n_reports = BudgetAccountant._check_count(n_reports)
        return _as_epsilon(epsilon) / n_reports


def _memoized_round(mechanism: Any) -> Any:
    """What carries ``epsilon_perm`` and ``epsilon_1``: a fitted mechanism's
    ``channel_`` (a channel, or an open domain's protocol, e.g. Bloom-filter
    RAPPOR's), or the object itself (a channel or protocol)."""
    part = getattr(mechanism, "channel_", None)
    return mechanism if part is None else part


def longitudinal_exposure(mechanism: Any, n_rounds: int) -> pd.DataFrame:
    """Privacy loss after t reports of one value: memoized vs fresh collection.

    ``memoized`` is the exact loss of t reports of one value by the memoized
    mechanism (``mechanism.exposure(t)``: ``epsilon_1`` at t = 1, never above
    ``epsilon_perm``); ``fresh`` is t times ``epsilon_1``, the loss of t
    reports each privatized afresh at the same single-report budget
    (sequential composition).

    Parameters
    ----------
    mechanism : fitted longitudinal mechanism or its channel
        Anything with ``exposure(n_rounds)`` and a channel (or, for
        open-domain mechanisms, a protocol) with ``epsilon_1`` and
        ``epsilon_perm``.
    n_rounds : int
        The curve runs over t = 1, ..., n_rounds.

    Returns
    -------
    curve : DataFrame
        Columns ``rounds``, ``memoized``, ``fresh``, ``epsilon_perm``.

    Examples
    --------
    >>> from sklearn_uldp.mechanisms import LongitudinalUE
    >>> from sklearn_uldp.privacy import longitudinal_exposure
    >>> mech = LongitudinalUE(2.0, 1.0, categories=range(4)).fit()
    >>> longitudinal_exposure(mech, 4).round(3)
       rounds  memoized  fresh  epsilon_perm
    0       1     1.000    1.0           2.0
    1       2     1.642    2.0           2.0
    2       3     1.899    3.0           2.0
    3       4     1.974    4.0           2.0
    """
    channel = _memoized_round(mechanism)
    if not hasattr(mechanism, "exposure") or not hasattr(channel, "epsilon_perm"):
        raise TypeError(
            "longitudinal_exposure needs a fitted memoized mechanism (with "
            f"exposure() and channel_.epsilon_perm); got {type(mechanism).__name__}."
        )
    n_rounds = BudgetAccountant._check_count(n_rounds)
    t = np.arange(1, n_rounds + 1)
    return pd.DataFrame(
        {
            "rounds": t,
            "memoized": [float(mechanism.exposure(int(r))) for r in t],
            "fresh": t * float(channel.epsilon_1),
            "epsilon_perm": float(channel.epsilon_perm),
        }
    )
