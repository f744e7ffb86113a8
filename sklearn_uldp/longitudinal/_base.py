"""What every longitudinal (memoized) mechanism and channel shares.

A user who reports every day must not spend a fresh budget every day: the
noise of t fresh reports of one value averages away, and after t rounds the
value is exposed at t * epsilon. The deployed answer (RAPPOR's permanent and
instantaneous randomized responses) is *memoization*:

1. a **permanent** round draws one randomized answer z per (user, value) at
   budget ``epsilon_perm`` (epsilon_inf) and keeps it -- here it is not
   stored but re-derived in every round from a per-user secret with a keyed
   PRF (:mod:`sklearn_uldp.utils._secrets`), so the same user holding the
   same value gets the same z in every round and every process;
2. an **instantaneous** round randomizes z again with fresh noise at every
   report, with parameters chosen so that one report, end to end, is
   *exactly* ``epsilon_1``-LDP.

Every report is post-processing of z, so any number of reports of one value
costs at most ``epsilon_perm``; one report costs ``epsilon_1``.

Each mechanism exposes ``channel_``, the end-to-end channel of one report
(what the privacy checks and every estimator use: it is an ordinary channel
of the package, e.g. k-RR at epsilon_1 for L-GRR, generalized RAPPOR for
L-UE, OLH for LoLoHA, uRR / uRAP for the utility-optimized ones), and
``permanent_channel_``, the channel of the memoized round. The mechanisms
implement the memoization protocol
(:class:`~sklearn_uldp.longitudinal.MemoizedMechanism`) through
:class:`_LongitudinalMechanism`; the channels add the permanent round to
the channel contract through :class:`_LongitudinalMixin`.

References
----------
Erlingsson, Pihur & Korolova, "RAPPOR: Randomized Aggregatable
Privacy-Preserving Ordinal Response", CCS 2014 (PRR + IRR).
Ding, Kulkarni & Yekhanin, "Collecting Telemetry Data Privately", NeurIPS
2017 (dBitFlipPM).
Arcolezi, Couchot, Al Bouna & Xiao, "Improving the Utility of Locally
Differentially Private Protocols for Longitudinal and Multidimensional
Frequency Estimates", Digital Communications and Networks 2022 (arXiv
2111.04636; L-GRR, L-SUE, L-OSUE, L-OUE, L-SOUE).
Arcolezi, Pinzón, Palamidessi & Gambs, "Frequency Estimation of Evolving
Data Under Local Differential Privacy", EDBT 2023 (LOLOHA).
Murakami & Kawamoto, "Utility-Optimized Local Differential Privacy
Mechanisms for Distribution Estimation", USENIX Security 2019 (uRR, uRAP,
ULDP and its post-processing, Prop. 2).
"""

from __future__ import annotations

import copy
import textwrap
from numbers import Real
from typing import Any, TypeVar

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ..mechanisms._base import RANDOM_STATE_CONSTRAINT, BaseMechanism
from ..mechanisms._memo import (
    MEMO_DOCS,
    GeneratorDraws,
    MemoizedMechanism,
    SecretDraws,
    check_rounds,
    memo_context,
)
from ..utils._docstrings import COMMON, fill_doc
from ..utils._secrets import resolve_user_keys
from ..utils._typing import ArrayLike, Categories, RandomStateLike
from ..utils._validation import check_epsilon

_CHANNEL_PARAMETERS = """
    Parameters
    ----------
    categories : array-like of shape (k,)
    epsilon_perm, epsilon_1 : float
    """
_MEMO_RANDOM_STATE = """
    random_state : None, "secure", int, Generator, SeedSequence or RandomState, default=None
        The instantaneous round's randomness (fresh at every call for None
        and "secure"). An integer also makes missing ``user_secrets``
        simulated users (simulations only).
    """


def _joined(*fragments):
    """One fragment of several, in order (each dedented)."""
    return "\n".join(textwrap.dedent(fragment).strip() for fragment in fragments)


#: Docstring fragments of this module's classes (``%(name)s`` lines, filled
#: by :func:`~sklearn_uldp.utils._docstrings.fill_doc`), with the package's
#: common ones.
_DOCS: dict[str, str] = {
    **COMMON,
    "channel_parameters": _CHANNEL_PARAMETERS,
    "uldp_channel_parameters": _joined(
        _CHANNEL_PARAMETERS, "sensitive : array-like of bool of shape (k,)"
    ),
    "memo_parameters": _joined(COMMON["categories"], COMMON["memo_label"], _MEMO_RANDOM_STATE),
    "uldp_attributes": """
        categories_ : ndarray of shape (k,)
        sensitive_mask_ : ndarray of bool of shape (k,)
        """,
    "budgets": """
        epsilon_perm : float, default=2.0
            Budget of the memoized answer (bounds all rounds of one value).
        epsilon_1 : float, default=1.0
            Budget of one report (< epsilon_perm).
        """,
    **MEMO_DOCS,
    "fitted_columns": """
        n_features_in_ : int
        feature_names_in_ : ndarray of shape (n_features,)
        """,
}


# ------------------------------------------------------------------ helpers
def _check_budgets(epsilon_perm, epsilon_1):
    """Validate (epsilon_perm, epsilon_1): finite, > 0, epsilon_1 < epsilon_perm."""
    epsilon_perm = check_epsilon(epsilon_perm, "epsilon_perm")
    epsilon_1 = check_epsilon(epsilon_1, "epsilon_1")
    if not epsilon_1 < epsilon_perm:
        raise ValueError(
            "epsilon_1 (the budget of one report) must be smaller than "
            "epsilon_perm (the budget of the memoized answer, which bounds all "
            f"rounds together); got epsilon_1={epsilon_1!r} >= "
            f"epsilon_perm={epsilon_perm!r}. Pass e.g. epsilon_perm=2.0, "
            "epsilon_1=1.0 (or, for a single collection, a one-round mechanism)."
        )
    return epsilon_perm, epsilon_1


class _TwoBudgetsMixin:
    """``get_params`` of a channel with two budgets: ``epsilon_perm``,
    ``epsilon_1``, then the names in ``_extra_params`` (``sensitive``: a copy
    of the mask)."""

    _extra_params: tuple[str, ...] = ()

    def get_params(self):
        params = {"epsilon_perm": self.epsilon_perm, "epsilon_1": self.epsilon_1}
        for name in self._extra_params:
            params[name] = self._sensitive.copy() if name == "sensitive" else getattr(self, name)
        return params


class _LongitudinalMixin(_TwoBudgetsMixin):
    """What every longitudinal channel adds to the channel contract."""

    memoized_reports = True
    #: Budget of the memoized (permanent) round: bounds all rounds together.
    epsilon_perm: float
    #: Budget of one report, end to end (``epsilon`` of the channel).
    epsilon_1: float
    #: The instantaneous round's own budget (>= epsilon_1).
    epsilon_inst: float

    def permanent_channel(self):
        """The channel of the memoized round (budget ``epsilon_perm``)."""
        raise NotImplementedError

    def sample_permanent(self, codes, draws):
        """The permanent answers of coded inputs (``draws``: secrets or a Generator)."""
        raise NotImplementedError

    def sample_instantaneous(self, permanent, rng):
        """One report per permanent answer, with fresh noise from ``rng``."""
        raise NotImplementedError

    def _instantaneous(self, permanent, rng):
        """:meth:`sample_instantaneous`, allowed to overwrite ``permanent``
        (a fresh array of the caller's)."""
        return self.sample_instantaneous(permanent, rng)

    def _sample_reports(self, values, draws, rng):
        """One call's reports: the memoized answers (``draws``), then fresh
        instantaneous noise from ``rng`` (a channel may do both in one pass)."""
        return self._instantaneous(self.sample_permanent(values, draws), rng)

    def sample(self, codes, rng, **kwargs):
        """One report per coded input, both rounds drawn from ``rng``.

        The end-to-end channel, for simulations (every call draws new
        permanent answers: nothing is memoized).
        """
        codes = np.asarray(codes, dtype=np.intp)
        return self._instantaneous(self.sample_permanent(codes, GeneratorDraws(rng)), rng)

    def permanent_reports(self, permanent):
        """The permanent answers as reports of :meth:`permanent_channel`
        (what :meth:`sample_permanent` returns, unless a subclass says otherwise)."""
        return permanent

    @fill_doc(_DOCS)
    def exposure(self, n_rounds: int) -> float:
        """Privacy loss of ``n_rounds`` reports of one value (memoized).

        The worst case over pairs of values (and protected outputs, for the
        utility-optimized channels) of ``ln P(y_1..y_t | x) / P(y_1..y_t | x')``
        for one user holding one value in every round: ``epsilon_1`` for one
        round, increasing to at most ``epsilon_perm`` (exact where computed,
        else the bound ``min(epsilon_perm, epsilon_1 + (t - 1) epsilon_inst)``:
        the first report costs ``epsilon_1``, and given the earlier reports
        each later one at most the instantaneous round's own budget).

        %(exposure_sections)s
        """
        tau = check_rounds(n_rounds)
        return float(min(self.epsilon_perm, self.epsilon_1 + (tau - 1) * self.epsilon_inst))

    def _memo_spec(self):
        """What the memoized answers depend on (domain-separation context)."""
        return {"longitudinal": self.name, **self.permanent_channel().to_dict()}


# ------------------------------------------------------------------- L-GRR
_BUDGET_SCHEMAS = {
    "epsilon_perm": {
        "type": "number",
        "exclusiveMinimum": 0,
        "description": (
            "Budget of the memoized (permanent) answer: bounds every round of one value together."
        ),
    },
    "epsilon_1": {
        "type": "number",
        "exclusiveMinimum": 0,
        "description": "Budget of one report, end to end (< epsilon_perm).",
    },
}


# ------------------------------------------------------------- mechanisms
_MEMO_LABEL_HINT = (
    "memo_label names the collection in the memoized answers' context: pass a "
    "string, e.g. 'daily_app_usage' (one label per quantity collected with the "
    "same users' secrets)."
)
_LONGITUDINAL_HINTS = {
    "memo_label": _MEMO_LABEL_HINT,
    "epsilon_perm": (
        "epsilon_perm is the budget of the memoized answer, which bounds every "
        "round of one value together: pass a finite number > epsilon_1, e.g. 2.0."
    ),
    "epsilon_1": (
        "epsilon_1 is the budget of one report: pass a finite number > 0 and "
        "< epsilon_perm, e.g. 1.0."
    ),
    "permanent": "Pass 'OUE' (recommended) or 'SUE' (basic RAPPOR's permanent round).",
    "instantaneous": "Pass 'SUE' (recommended; any epsilon_1 < epsilon_perm) or 'OUE'.",
    "parametrization": (
        "Pass 'exact' (one report is exactly epsilon_1-LDP) or 'arcolezi' "
        "(multi-freq-ldpy's parameters, for comparisons)."
    ),
}


_MemoT = TypeVar("_MemoT", bound="_LongitudinalMechanism")


class _LongitudinalMechanism(BaseMechanism, MemoizedMechanism):
    """Shared fit/transform of the memoized mechanisms (the memoization protocol)."""

    _parameter_constraints: dict[str, list[Any]] = {
        "epsilon_perm": [Interval(Real, 0, None, closed="neither")],
        "epsilon_1": [Interval(Real, 0, None, closed="neither")],
        "categories": [StrOptions({"auto"}), "array-like"],
        "memo_label": [str],
        "random_state": RANDOM_STATE_CONSTRAINT,
    }
    _parameter_hints = _LONGITUDINAL_HINTS

    def _check_params(self):
        _check_budgets(self.epsilon_perm, self.epsilon_1)

    def __init__(
        self,
        epsilon_perm: float,
        epsilon_1: float,
        categories: Categories,
        memo_label: str,
        random_state: RandomStateLike,
    ) -> None:
        """Store the parameters every memoized mechanism takes (a subclass
        stores its own, then calls this)."""
        self.epsilon_perm = epsilon_perm
        self.epsilon_1 = epsilon_1
        self.categories = categories
        self.memo_label = memo_label
        self.random_state = random_state

    def fit(self: _MemoT, X: ArrayLike | None = None, y: object = None) -> _MemoT:
        """Fix the public domain and build both rounds' channels.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), default=None
            See :meth:`BaseMechanism.fit`.
        y : None
            Ignored.

        Returns
        -------
        self : object
        """
        super().fit(X, y)
        self.permanent_channel_ = self.channel_.permanent_channel()
        return self

    def _values(self, codes):
        """The values the channel privatizes (codes; buckets for dBitFlipPM)."""
        return codes

    def _user_keys(self, user_secrets, n):
        return resolve_user_keys(user_secrets, self.random_state, n, type(self).__name__)

    def _draws(self, keys, column):
        """The permanent draws of one input column (its index ``column``).

        One memo per input column (and collection, ``memo_label``): columns
        sharing a user's permanent answers would compose as fresh reports of
        one value, a loss growing with the rounds.
        """
        spec = self.channel_._memo_spec()
        column, label = int(column), str(self.memo_label)
        return SecretDraws(keys, lambda purpose: memo_context(spec, purpose, column, label))

    @fill_doc(_DOCS)
    def transform(self, X: ArrayLike, user_secrets: Any = None) -> Any:
        """Privatize each row: memoized permanent answer, fresh instantaneous noise.

        Parameters
        ----------
        X : array-like of shape (n_samples, `n_features_in_`)
            Values from ``categories_`` (one row per user).
        %(user_secrets)s

        Returns
        -------
        reports : ndarray or DataFrame
            One report per row and input column, carrying ``channel_``.
        """
        check_is_fitted(self, "channel_")
        columns = self._validate_columns(X, reset=False)
        keys = self._user_keys(user_secrets, columns.shape[0])
        k = len(self.categories_)
        if columns.shape[1] == 1:
            column = columns[:, 0]
            codes = self._encode(column)
            rng = self._transform_rng(codes, k)
            outputs = self._privatize(self._values(codes), self._draws(keys, 0), rng)
            return self._wrap_reports(outputs, column, X)
        call = self._next_call()
        blocks = []
        for j, name in enumerate(self._input_names()):
            column = columns[:, j]
            codes = self._encode(column)
            rng = self._transform_rng(codes, k, column=name, call=call)
            view = self._column_view(name)
            outputs = self._privatize(self._values(codes), self._draws(keys, j), rng)
            blocks.append(view._wrap_reports(outputs, column, X))
        return self._join_blocks(blocks)

    @fill_doc(_DOCS)
    def permanent_answers(self, X: ArrayLike, user_secrets: Any = None) -> Any:
        """Each row's permanent (memoized) answers, as reports of ``permanent_channel_``.

        The answers that every report of the row's values randomizes again
        (:meth:`transform` sends fresh randomizations of them): the same
        user secret and value give the same answer in every call, round and
        process. They are for the users' side (e.g. a client checking that
        its device memoizes): **never send them**, one of them costs
        ``epsilon_perm`` (as many reports as it takes to average the
        instantaneous noise away). Nothing is drawn from ``random_state``,
        so calling this does not change the seeded reports of later calls.

        Parameters
        ----------
        X : array-like of shape (n_samples, `n_features_in_`)
            Values from ``categories_`` (one row per user).
        %(user_secrets)s

        Returns
        -------
        answers : ndarray or DataFrame
            One permanent answer per row and input column, in the report
            format of ``permanent_channel_`` (which they carry, as reports
            carry ``channel_``).
        """
        check_is_fitted(self, "channel_")
        columns = self._validate_columns(X, reset=False)
        keys = self._user_keys(user_secrets, columns.shape[0])
        memo = copy.copy(self)  # the permanent round's view: its channel, the same columns
        memo.channel_ = self.permanent_channel_
        blocks = []
        for j, name in enumerate(self._input_names()):
            column = columns[:, j]
            codes = self._encode(column)
            permanent = self.channel_.sample_permanent(self._values(codes), self._draws(keys, j))
            view = memo if columns.shape[1] == 1 else memo._column_view(name)
            blocks.append(view._wrap_reports(self.channel_.permanent_reports(permanent), column, X))
        return blocks[0] if len(blocks) == 1 else memo._join_blocks(blocks)

    def _privatize(self, values, draws, rng):
        return self.channel_._sample_reports(values, draws, rng)

    @fill_doc(_DOCS)
    def fit_transform(
        self, X: ArrayLike, y: object = None, user_secrets: Any = None, **fit_params: Any
    ) -> Any:
        """Fit, then privatize ``X`` (see :meth:`transform`).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        %(fit_transform_secrets)s

        Returns
        -------
        reports : ndarray or DataFrame
        """
        return self.fit(X, y).transform(X, user_secrets=user_secrets)

    @fill_doc(_DOCS)
    def exposure(self, n_rounds: int) -> float:
        """Privacy loss of ``n_rounds`` reports of one value (per input column).

        See :meth:`LongitudinalGRRChannel.exposure`. Each input column has
        its own memo, so a row's loss is the sum of its columns' (at most
        :attr:`epsilon_perm_spent_` over any number of rounds).

        %(exposure_sections)s
        """
        check_is_fitted(self, "channel_")
        return self.channel_.exposure(n_rounds)

    @property
    def epsilon_(self) -> float:
        """Budget of one report of one input column: ``epsilon_1`` (the
        channel's ``epsilon``)."""
        check_is_fitted(self, "channel_")
        return float(self.channel_.epsilon)

    @property
    def epsilon_permanent_(self) -> float:
        """Budget of the memoized answer of one value in one input column:
        ``epsilon_perm``, the loss of any number of its reports."""
        check_is_fitted(self, "channel_")
        return float(self.channel_.epsilon_perm)

    @property
    def epsilon_perm_spent_(self) -> float:
        """Budget of the memoized answers of one row: ``epsilon_perm`` per
        input column (for one value each, over any number of rounds).

        Each column has its own memo (the column's index is in the PRF
        context), so a row's columns are independent memoized reports and
        their losses add up: over any number of rounds, two rows differing
        in m columns are at most ``m * epsilon_perm`` apart (the sum of
        :meth:`exposure` over those columns, at every round count)."""
        check_is_fitted(self, "channel_")
        return float(self.n_features_in_ * self.channel_.epsilon_perm)


class _BitReportsMixin:
    """Dense 0/1 reports, one column per category (the RAPPOR family's layout)."""

    def _wrap_reports(self, outputs, column, X):
        return self._container(np.asarray(outputs, dtype=np.uint8), X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = []
        return tags
