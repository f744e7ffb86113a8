"""Privacy budget accounting under sequential composition (mathematics §1)."""

from __future__ import annotations

import math
import numbers
from typing import Any, Protocol, runtime_checkable

import numpy as np
import pandas as pd

from ..exceptions import BudgetError
from ..mechanisms._memo import is_memoized
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
        """The spends so far as a DataFrame.

        After a :meth:`spend_shuffled`, two more columns give each spend's
        central guarantee: ``central_epsilon`` and ``central_delta`` (for a
        report sent without a shuffler, its local budget and 0).
        """
        columns = ["label", "epsilon", "count", "total"]
        if any("central_epsilon" in e for e in self._entries):
            columns += ["central_epsilon", "central_delta"]
            rows = [
                {"central_epsilon": e["total"], "central_delta": 0.0, **e} for e in self._entries
            ]
            return pd.DataFrame(rows, columns=columns)
        return pd.DataFrame(self._entries, columns=columns)

    @property
    def central_spent(self) -> tuple[float, float]:
        """The collector's (epsilon, delta) so far, by basic composition.

        Shuffled collections (:meth:`spend_shuffled`) count with their central
        (epsilon, delta); every other spend with its local budget and delta 0
        (a report the collector sees unshuffled is epsilon-DP for it).
        """
        eps = math.fsum(e.get("central_epsilon", e["total"]) for e in self._entries)
        delta = math.fsum(e.get("central_delta", 0.0) for e in self._entries)
        return float(eps), float(delta)

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
        the "Collecting over time" page). A mechanism whose distinct values
        share their permanent randomness (``changes_add_up`` False:
        :class:`~sklearn_uldp.longitudinal.DBitFlipPM`, whose reports can
        show the value itself when it changes bucket) has no finite bound for
        a value that changes: ``n_values`` > 1 is refused.

        Parameters
        ----------
        mechanism : fitted memoized mechanism or DataFramePrivatizer
            A fitted mechanism of the memoization protocol
            (:func:`~sklearn_uldp.longitudinal.is_memoized`: e.g.
            :class:`~sklearn_uldp.longitudinal.LongitudinalUE`,
            :class:`~sklearn_uldp.heavy_hitters.BloomRAPPOR`), or a fitted
            :class:`~sklearn_uldp.compose.DataFramePrivatizer` (its
            ``exposure`` and ``epsilon_perm_spent_``: a whole row).
        n_values : int, default=1
            Distinct values the person reports (per input column; for a
            privatizer, distinct rows of values; for dBitFlipPM, distinct
            buckets).
        n_rounds : int or None, default=None
            The most rounds any one value is reported in; ``None`` for any
            number.
        label : str, default=None
            Free text kept in the ledger.

        %(spent_or_raise)s

        Examples
        --------
        >>> from sklearn_uldp.longitudinal import LongitudinalGRR
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
        # A privatizer of several columns (DataFramePrivatizer): a row's
        # budget over the rounds (epsilon_perm_spent_, exposure()), read
        # duck-typed so that this layer imports no composite.
        composite = hasattr(mechanism, "mechanisms_") and hasattr(mechanism, "exposure")
        if not composite and not is_memoized(mechanism):
            raise TypeError(
                "spend_longitudinal needs a fitted memoized mechanism (one of the "
                "memoization protocol, sklearn_uldp.longitudinal.MemoizedMechanism), "
                f"or a DataFramePrivatizer; got {type(mechanism).__name__}. Record the "
                "reports of other mechanisms with spend(mechanism, count=n)."
            )
        n_values = self._check_count(n_values)
        if n_values > 1:
            _check_changes_add_up(mechanism, n_values)
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
                float(mechanism.epsilon_permanent_)
                if n_rounds is None
                else float(mechanism.exposure(self._check_count(n_rounds)))
            )
        columns = 1 if composite else int(getattr(mechanism, "n_features_in_", 1))
        if label is None:
            rounds = "any number of" if n_rounds is None else f"{n_rounds}"
            label = f"{type(mechanism).__name__} ({rounds} rounds per value)"
        return self.spend(per_value, count=n_values * columns, label=label)

    @fill_doc(_DOCS)
    def spend_shuffled(
        self,
        mechanism: Any,
        n_users: int,
        delta: float,
        *,
        method: str = "numerical",
        label: str | None = None,
    ) -> float:
        """Record one report sent through a shuffler with ``n_users - 1`` others.

        The person's local budget (the mechanism's ``epsilon_spent_``, one
        report per input column) is charged against ``total`` as
        :meth:`spend` does: it is what the person keeps against anyone who
        sees the reports before the shuffle. Beside it the ledger keeps the
        central guarantee the shuffle gives the collector,
        (``central_epsilon``, ``central_delta``) from
        :func:`~sklearn_uldp.privacy.shuffle_amplification` (per column, added
        up over the columns), and :attr:`central_spent` adds those up over
        every spend. For a utility-optimized mechanism the central guarantee
        covers changes between sensitive values only (see
        :func:`~sklearn_uldp.privacy.shuffle_amplification`).

        Parameters
        ----------
        mechanism : fitted mechanism
            The mechanism every user of the collection privatizes with.
        n_users : int
            Number of reports the shuffler permutes together.
        delta : float
            The central delta, in (0, 1).
        method : str, default="numerical"
            The bound (see :func:`~sklearn_uldp.privacy.shuffle_amplification`).
        label : str, default=None
            Free text kept in the ledger.

        %(spent_or_raise)s

        Examples
        --------
        >>> from sklearn_uldp import RandomizedResponse
        >>> from sklearn_uldp.privacy import BudgetAccountant
        >>> mech = RandomizedResponse(1.0, categories=[0, 1]).fit()
        >>> acc = BudgetAccountant(total=3.0)
        >>> acc.spend_shuffled(mech, n_users=100_000, delta=1e-6, label="round 1")
        1.0
        >>> eps, delta = acc.central_spent
        >>> round(eps, 4), delta
        (0.0124, 1e-06)
        """
        from ._shuffle import shuffle_amplification

        local = _as_epsilon(mechanism)
        columns = int(getattr(mechanism, "n_features_in_", 1))
        amplification = shuffle_amplification(mechanism, n_users, delta, method=method)
        if label is None:
            label = f"{type(mechanism).__name__} (shuffled among {n_users})"
        before = len(self._entries)
        spent = self.spend(local, label=label)
        if len(self._entries) > before:
            self._entries[-1]["central_epsilon"] = columns * float(amplification.epsilon)
            self._entries[-1]["central_delta"] = columns * float(amplification.delta)
        return spent

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


def _check_changes_add_up(mechanism: Any, n_values: int) -> None:
    """Refuse ``n_values`` > 1 distinct values where they do not add up.

    A memoized mechanism whose ``changes_add_up`` is False (dBitFlipPM) has
    no finite bound for a value that changes; for a privatizer, any of its
    columns' mechanisms.
    """
    parts = getattr(mechanism, "mechanisms_", {"": mechanism})
    shared = [
        f"{name!r} ({type(m).__name__})" if name else type(m).__name__
        for name, m in parts.items()
        if is_memoized(m) and not m.changes_add_up
    ]
    if shared:
        raise ValueError(
            f"n_values={n_values}: {', '.join(shared)} bounds the reports of one "
            "value only. Its permanent draws are shared between values (dBitFlipPM: "
            "the sampled buckets, and one bit per sampled bucket for every value "
            "outside it), so when a value changes bucket the reports can show the "
            "value itself, and no finite epsilon bounds them (see 'Collecting over "
            "time', dBitFlipPM when the value changes). Charge n_values=1 for a "
            "value that stays in one bucket, or use a mechanism with one permanent "
            "answer per value (LongitudinalUE, LongitudinalGRR, "
            "LongitudinalLocalHashing) for values that change."
        )


def longitudinal_exposure(mechanism: Any, n_rounds: int) -> pd.DataFrame:
    """Privacy loss after t reports of one value: memoized vs fresh collection.

    ``memoized`` is the exact loss of t reports of one value by the memoized
    mechanism (``mechanism.exposure(t)``: ``epsilon_1`` at t = 1, never above
    ``epsilon_perm``); ``fresh`` is t times ``epsilon_1`` (the mechanism's
    ``epsilon_``), the loss of t reports each privatized afresh at the same
    single-report budget (sequential composition).

    Parameters
    ----------
    mechanism : fitted memoized mechanism
        A fitted mechanism of the memoization protocol
        (:func:`~sklearn_uldp.longitudinal.is_memoized`).
    n_rounds : int
        The curve runs over t = 1, ..., n_rounds.

    Returns
    -------
    curve : DataFrame
        Columns ``rounds``, ``memoized``, ``fresh``, ``epsilon_perm`` (the
        mechanism's ``epsilon_permanent_``).

    Examples
    --------
    >>> from sklearn_uldp.longitudinal import LongitudinalUE
    >>> from sklearn_uldp.privacy import longitudinal_exposure
    >>> mech = LongitudinalUE(2.0, 1.0, categories=range(4)).fit()
    >>> longitudinal_exposure(mech, 4).round(3)
       rounds  memoized  fresh  epsilon_perm
    0       1     1.000    1.0           2.0
    1       2     1.642    2.0           2.0
    2       3     1.899    3.0           2.0
    3       4     1.974    4.0           2.0
    """
    if not is_memoized(mechanism):
        raise TypeError(
            "longitudinal_exposure needs a fitted memoized mechanism (one of the "
            "memoization protocol, sklearn_uldp.longitudinal.MemoizedMechanism); got "
            f"{type(mechanism).__name__}."
        )
    n_rounds = BudgetAccountant._check_count(n_rounds)
    t = np.arange(1, n_rounds + 1)
    return pd.DataFrame(
        {
            "rounds": t,
            "memoized": [float(mechanism.exposure(int(r))) for r in t],
            "fresh": t * float(mechanism.epsilon_),
            "epsilon_perm": float(mechanism.epsilon_permanent_),
        }
    )
