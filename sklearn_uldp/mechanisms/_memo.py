"""The memoization protocol: what every memoized mechanism declares, written once.

A *memoized* mechanism draws one permanent answer per (user, value) and
sends randomizations of it in every round, so that any number of reports of
one value cost at most the permanent round's budget (RAPPOR's PRR + IRR).
The permanent answers are not stored: they are re-derived in every round
from a per-user secret with a keyed PRF (:mod:`sklearn_uldp.utils._secrets`).
Three families do it: the longitudinal mechanisms
(:mod:`sklearn_uldp.longitudinal`), RAPPOR over Bloom filters
(:class:`~sklearn_uldp.heavy_hitters.BloomRAPPOR`), and the memoized
attribute sampling of :class:`~sklearn_uldp.compose.DataFramePrivatizer`.

This module holds what they share, at the lowest layer that needs it
(``privacy`` asks whether a mechanism is memoized, so the question lives
below it):

* :class:`MemoizedMechanism`, the abstract base every memoized mechanism
  derives from (or is registered with), and :func:`is_memoized`, the one
  way to ask;
* :data:`MEMO_VERSION`, the version of every memo context;
* :class:`SecretDraws`, the one source of permanent draws keyed by the users'
  secrets, and :class:`GeneratorDraws`, its twin on a numpy Generator
  (simulations, nothing memoized);
* :func:`memo_context`, the context of a longitudinal mechanism's draws, and
  the docstring fragments of ``user_secrets``.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable
from numbers import Integral
from typing import Any, ClassVar

import numpy as np

from ..utils._sampling import bernoulli_matrix
from ..utils._secrets import _prf_cells, prf_integers, prf_uniforms
from ._oracle_kernels import report_array

__all__ = [
    "MEMO_VERSION",
    "MemoizedMechanism",
    "is_memoized",
    "SecretDraws",
    "GeneratorDraws",
    "memo_context",
    "check_rounds",
    "MEMO_DOCS",
]

#: Version tag of every memoization context (longitudinal mechanisms, Bloom
#: RAPPOR's cohorts and PRRs, the memoized attribute sampling): changing how
#: permanent answers are derived from the secrets must change it (old answers
#: would otherwise be replaced silently, a second exposure of every value).
#: v2: the contexts name the input column and the collection's ``memo_label``
#: (v1 shared one memo between a row's columns: a privacy loss growing with
#: the rounds).
MEMO_VERSION = "v2"


class MemoizedMechanism(ABC):
    """The memoization protocol: what a memoized mechanism implements.

    Every fitted memoized mechanism of the package derives from it (or is
    registered with ``MemoizedMechanism.register``), and the package asks
    :func:`is_memoized` (an ``isinstance`` check), never a signature or an
    attribute, whether a mechanism memoizes: the privatizer of a table
    derives each memoized column's keys, the budget accountant charges the
    permanent budget, the audit of many rounds gives each simulated user a
    secret.

    A memoized mechanism

    * takes the collection's name, ``memo_label`` (a parameter), which is
      part of the context of every permanent draw;
    * privatizes with ``transform(X, user_secrets=None)``: one secret per
      row, the same user in the same row in every round (without secrets,
      only a seeded simulation may run: row i is simulated user i);
    * gives each user's permanent answers with ``permanent_answers(X,
      user_secrets=None)`` (what every report of that value randomizes: for
      the user's side, never to be sent);
    * states its guarantee per input column: ``epsilon_``, the budget of
      one report; ``exposure(n_rounds)``, the loss of ``n_rounds`` reports of
      one value; ``epsilon_permanent_``, the bound over any number of rounds;
    * says with :attr:`changes_add_up` whether a value that changes costs
      the sum of its distinct values' budgets (given when it changes), which
      is what :meth:`~sklearn_uldp.privacy.BudgetAccountant.spend_longitudinal`
      charges for ``n_values`` > 1.

    The two fitted budgets may be properties or attributes set by ``fit``
    (the abstract base does not enforce them, so that either works; the
    test suite checks every memoized class for all of the above).

    Examples
    --------
    >>> from sklearn_uldp.longitudinal import LongitudinalGRR, MemoizedMechanism
    >>> from sklearn_uldp import RandomizedResponse
    >>> from sklearn_uldp.longitudinal import is_memoized
    >>> is_memoized(LongitudinalGRR()), is_memoized(RandomizedResponse())
    (True, False)
    >>> issubclass(LongitudinalGRR, MemoizedMechanism)
    True
    """

    #: Whether the reports of a value that changes between rounds cost at most
    #: the sum of its distinct values' budgets, given the rounds at which it
    #: changes (each distinct value has its own, independent permanent answer).
    #: False where the permanent answers of different values share their
    #: randomness (dBitFlipPM), so that a change can show the value itself.
    changes_add_up: ClassVar[bool] = True

    @abstractmethod
    def transform(self, X: Any, user_secrets: Any = None) -> Any:
        """Privatize each row: its memoized permanent answer, randomized."""

    @abstractmethod
    def permanent_answers(self, X: Any, user_secrets: Any = None) -> Any:
        """Each row's permanent (memoized) answers, as reports of the permanent round."""

    @abstractmethod
    def exposure(self, n_rounds: int) -> float:
        """Privacy loss of ``n_rounds`` reports of one value (per input column)."""


def is_memoized(mechanism: Any) -> bool:
    """Whether ``mechanism`` memoizes its reports (the memoization protocol).

    Parameters
    ----------
    mechanism : object

    Returns
    -------
    memoized : bool
        ``isinstance(mechanism, MemoizedMechanism)``.

    Examples
    --------
    >>> from sklearn_uldp.longitudinal import DBitFlipPM, is_memoized
    >>> from sklearn_uldp.heavy_hitters import BloomRAPPOR
    >>> is_memoized(DBitFlipPM()), is_memoized(BloomRAPPOR()), is_memoized(None)
    (True, True, False)
    """
    return isinstance(mechanism, MemoizedMechanism)


def check_rounds(n_rounds: Any) -> int:
    """A number of rounds: a positive integer (a bool is not one)."""
    if isinstance(n_rounds, bool) or not isinstance(n_rounds, Integral) or n_rounds < 1:
        raise ValueError(f"n_rounds must be a positive integer, got {n_rounds!r}.")
    return int(n_rounds)


def memo_context(channel_spec: Any, purpose: str, column: int = 0, label: str = "") -> str:
    """The PRF's domain-separation label of a longitudinal mechanism's permanent draw.

    It names the permanent round's public spec, the collection
    (``memo_label``), the input column and the purpose of the draw, in one
    JSON document (unambiguous whatever the strings hold): two columns, or
    two collections, never share a user's permanent answers.

    Examples
    --------
    >>> from sklearn_uldp.mechanisms._memo import memo_context
    >>> memo_context({"mechanism": "rr"}, "keep", column=1, label="steps")
    'sklearn_uldp.memo.v2|{"channel":{"mechanism":"rr"},"collection":"steps","column":1,"purpose":"keep"}'
    """
    body = {"channel": channel_spec, "collection": label, "column": column, "purpose": purpose}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)
    return f"sklearn_uldp.memo.{MEMO_VERSION}|{text}"


class SecretDraws:
    """Permanent draws derived from the users' secrets (memoized).

    Every draw is a function of (user's key, context, value) alone: the same
    user drawing for the same value in the same context gets the same result
    in every round and every process. ``context(purpose)`` gives the PRF
    context of each purpose of draw (e.g. "keep", "move", "bits"): it names
    the family's public spec and the collection, so that two mechanisms, two
    columns or two collections never share a draw.

    Parameters
    ----------
    keys : UserKeys
        One key per user (see :func:`~sklearn_uldp.utils.check_user_secrets`).
    context : callable
        ``context(purpose) -> str``.

    Examples
    --------
    >>> from sklearn_uldp.mechanisms._memo import SecretDraws
    >>> from sklearn_uldp.utils import check_user_secrets, generate_user_secrets
    >>> keys = check_user_secrets(generate_user_secrets(4, random_state=0))
    >>> draws = SecretDraws(keys, lambda purpose: f"example|{purpose}")
    >>> a = draws.integers("pick", [0, 1, 0, 1], 6, 2)
    >>> bool((a == draws.integers("pick", [0, 1, 0, 1], 6, 2)).all()), a.shape
    (True, (4, 2))
    >>> draws[1:3].uniforms("u", [0, 0], 1).shape  # a subset of the users
    (2, 1)
    """

    def __init__(self, keys: Any, context: Callable[[str], str]) -> None:
        self.keys = keys
        self.context = context

    def __getitem__(self, rows: Any) -> SecretDraws:
        """The draws of some users (rows), in the same contexts."""
        return SecretDraws(self.keys[rows], self.context)

    def uniforms(self, purpose: str, values: Any, n_draws: int) -> np.ndarray:
        """(n, n_draws) uniforms on the 2**-53 grid."""
        return prf_uniforms(self.keys, self.context(purpose), values, n_draws)

    def integers(self, purpose: str, values: Any, high: Any, n_draws: int) -> np.ndarray:
        """(n, n_draws) exactly uniform integers in [0, high)."""
        return prf_integers(self.keys, self.context(purpose), values, high, n_draws)

    def bernoulli(
        self,
        purpose: str,
        values: Any,
        p: Any,
        marked: Any = None,
        p_marked: Any = None,
        flips: Any = None,
    ) -> np.ndarray:
        """(n, len(p)) Bernoulli cells; the ``marked`` cells have ``p_marked``.

        ``flips=((f0, f1), rng)`` then flips each cell c with probability
        ``f_c``, fresh noise from the Generator ``rng`` (not memoized), in the
        same pass: the instantaneous round of a unary report on its permanent
        bits (see :func:`~sklearn_uldp.utils._secrets._prf_cells`).
        """
        # Written straight into a new report array (mapped without
        # huge-page stalls): the instantaneous round then works in place.
        out = report_array((np.size(values), np.size(p)), np.uint8)
        return _prf_cells(self.keys, self.context(purpose), values, p, marked, p_marked, out, flips)


class GeneratorDraws:
    """The same draws from a numpy Generator (simulations: nothing memoized).

    Each draw is realized as its memoized twin (:class:`SecretDraws`)
    realizes it: uniforms on the 2**-53 grid, exactly uniform integers,
    Bernoulli cells from one byte and a uniform on ties. The ``purpose`` is
    ignored: every call draws afresh from ``rng``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp.mechanisms._memo import GeneratorDraws
    >>> draws = GeneratorDraws(np.random.default_rng(0))
    >>> draws.bernoulli("bits", np.zeros(3), [0.5, 0.1]).shape
    (3, 2)
    """

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng

    def uniforms(self, purpose: str, values: Any, n_draws: int) -> np.ndarray:
        return self.rng.random((np.size(values), n_draws))

    def integers(self, purpose: str, values: Any, high: Any, n_draws: int) -> np.ndarray:
        n = np.size(values)
        return self.rng.integers(0, np.broadcast_to(high, (n, n_draws)), size=(n, n_draws))

    def bernoulli(
        self, purpose: str, values: Any, p: Any, marked: Any = None, p_marked: Any = None
    ) -> np.ndarray:
        n = np.size(values)
        p = np.asarray(p, dtype=float)
        out = np.empty((n, p.size), dtype=bool)
        for value in np.unique(p):
            cols = np.flatnonzero(p == value)
            out[:, cols] = bernoulli_matrix((n, cols.size), float(value), self.rng)
        if marked is not None:
            rows = np.arange(n)
            pm = np.broadcast_to(np.asarray(p_marked, dtype=float), (n,))
            scaled = pm * 256.0
            floor = np.floor(scaled)
            byte = self.rng.integers(0, 256, size=n)
            cell = byte < floor
            tie = (byte == floor) & (scaled > floor)
            cell[tie] = self.rng.random(int(tie.sum())) < (scaled - floor)[tie]
            out[rows, marked] = cell
        return out


#: Docstring fragments of the memoized mechanisms' methods (``%(name)s``
#: lines, filled by :func:`~sklearn_uldp.utils._docstrings.fill_doc`).
MEMO_DOCS: dict[str, str] = {
    "exposure_sections": """
        Parameters
        ----------
        n_rounds : int

        Returns
        -------
        epsilon : float
        """,
    "user_secrets": """
        user_secrets : sequence of bytes or UserKeys, default=None
            One secret per row (at least 16 bytes, all distinct), kept by
            each user for every round; see
            :func:`~sklearn_uldp.utils.generate_user_secrets`. Required
            unless ``random_state`` is an integer (a simulation: row i is
            simulated user i). Never stored.
        """,
    "fit_transform_secrets": """
        y : None
            Ignored.
        user_secrets : sequence of bytes or UserKeys, default=None
            One secret per row (see :meth:`transform`).
        **fit_params : dict
            Ignored.
        """,
}
