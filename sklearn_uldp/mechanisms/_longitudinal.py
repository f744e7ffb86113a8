"""Longitudinal (memoized) frequency oracles, LDP and utility-optimized.

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
``permanent_channel_``, the channel of the memoized round.

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

import json
import textwrap
from math import comb
from numbers import Integral, Real
from typing import Any, Literal, TypeVar

import numpy as np
from scipy.optimize import brentq
from scipy.special import logsumexp
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ..utils._docstrings import COMMON, fill_doc
from ..utils._sampling import (
    bernoulli_matrix,
    bernoulli_xor,
    randomized_response_codes,
    randomized_response_move_counts,
)
from ..utils._secrets import (
    prf_bernoulli,
    prf_integers,
    prf_uniforms,
    resolve_user_keys,
)
from ..utils._typing import ArrayLike, Categories, RandomStateLike, Sensitive
from ..utils._validation import (
    check_channel_categories,
    check_epsilon,
    check_realizable,
    check_sensitive,
    check_sensitive_mask,
    realized_probability,
)
from ._base import RANDOM_STATE_CONSTRAINT, BaseMechanism
from ._channel import CategoricalChannel
from ._local_hashing import LocalHashingChannel, optimal_hash_range
from ._oracle_kernels import report_array
from ._randomized_response import RandomizedResponseChannel, UtilityOptimizedRRChannel
from ._rappor import RAPPORChannel, UnaryEncodingChannel, _byte_realized

__all__ = [  # each mechanism with its channel(s)
    "LongitudinalGRR",
    "LongitudinalGRRChannel",
    "LongitudinalUE",
    "LongitudinalUEChannel",
    "LongitudinalLocalHashing",
    "LongitudinalLocalHashingChannel",
    "DBitFlipPM",
    "DBitFlipChannel",
    "UtilityOptimizedLongitudinalRR",
    "UtilityOptimizedLongitudinalRRChannel",
    "PermanentURRChannel",
    "UtilityOptimizedLongitudinalRAPPOR",
    "UtilityOptimizedLongitudinalRAPPORChannel",
    "PermanentURAPChannel",
]

#: Version tag of the memoization contexts: changing how permanent answers
#: are derived from the secrets must change it (old answers would otherwise
#: be replaced silently, a second exposure of every value). v2: the context
#: names the input column and the collection's ``memo_label`` (v1 shared one
#: memo between a row's columns: a privacy loss growing with the rounds).
MEMO_VERSION = "v2"

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


def _grr_gap(epsilon, k):
    """keep - move of k-RR at epsilon: (e^eps - 1) / (e^eps + k - 1), stably."""
    return -np.expm1(-epsilon) / (1.0 + (k - 1) * np.exp(-epsilon))


def _grr_keep(epsilon, k):
    """The keep probability of k-RR at epsilon, e^eps / (e^eps + k - 1)."""
    return 1.0 / (1.0 + (k - 1) * np.exp(-epsilon))


def _lgrr_instantaneous(epsilon_perm, epsilon_1, k, parametrization="exact"):
    """(p2, q2): keep and move-to-each probabilities of L-GRR's second round.

    Two k-RR rounds compose into a k-RR round whose keep-minus-move gap is
    the product of the rounds' gaps (a I + b J matrices commute), so the
    exact choice is gap2 = gap(epsilon_1) / gap(epsilon_perm): one report is
    then exactly k-RR at epsilon_1. ``"arcolezi"`` is multi-freq-ldpy's
    formula, exact for k = 2 only (see :class:`LongitudinalGRR`).
    """
    if parametrization == "exact":
        gap2 = _grr_gap(epsilon_1, k) / _grr_gap(epsilon_perm, k)
        return (1.0 + (k - 1) * gap2) / k, (1.0 - gap2) / k
    p1 = _grr_keep(epsilon_perm, k)
    q1 = (1.0 - p1) / (k - 1)
    e1 = np.exp(epsilon_1)
    p2 = (q1 - e1 * p1) / (-p1 * e1 + k * q1 * e1 - q1 * e1 - p1 * (k - 1) + q1)
    return float(p2), float((1.0 - p2) / (k - 1))


def _check_lgrr_realizable(epsilon_perm, epsilon_1, k, what, parametrization="exact"):
    """L-GRR's instantaneous round on k symbols must be realizable at epsilon_1."""

    def probabilities_at(e1):
        if not e1 < epsilon_perm:
            return np.array([np.nan])
        p2, q2 = _lgrr_instantaneous(epsilon_perm, e1, k, parametrization)
        return np.array([p2, 1.0 - p2, q2])

    check_realizable(
        epsilon_1,
        probabilities_at,
        what=f"the instantaneous round of {what} (the budget is epsilon_1)",
    )


def _ue_round(kind, epsilon):
    """(p, q) of one unary-encoding round: OUE (1/2, 1/(e^eps+1)) or SUE."""
    if kind == "OUE":
        return 0.5, 1.0 / (1.0 + np.exp(epsilon))
    q = 1.0 / (1.0 + np.exp(epsilon / 2.0))
    return 1.0 - q, q


def _ue_compose(p1, q1, p2, q2):
    """Per-bit probabilities of two unary rounds: P(1 | bit 1), P(1 | bit 0)."""
    return p1 * p2 + (1.0 - p1) * q2, q1 * p2 + (1.0 - q1) * q2


def _ue_loss(ps, qs):
    """Privacy loss of one unary-encoding report with per-bit (ps, qs)."""
    return float(np.log(ps) + np.log1p(-qs) - np.log(qs) - np.log1p(-ps))


def _ue_instantaneous(p1, q1, epsilon_1, kind, epsilon_perm=None, what="L-UE"):
    """(p2, q2) of the instantaneous unary round that makes one report epsilon_1.

    SUE: (r, 1 - r), r in (1/2, 1]; OUE: (1/2, t), t in [0, 1/2). The loss
    of the composed report grows monotonically from 0 (r = 1/2, t = 1/2) to
    its largest value (r = 1: the permanent round's epsilon; t = 0: below
    it), so the root is unique.
    """
    if kind == "SUE":

        def loss(r):
            return _ue_loss(*_ue_compose(p1, q1, r, 1.0 - r)) - epsilon_1

        r = brentq(loss, 0.5, 1.0, xtol=2.0**-60, rtol=4 * np.finfo(float).eps, maxiter=500)
        return float(r), float(1.0 - r)
    top = _ue_loss(*_ue_compose(p1, q1, 0.5, 0.0))
    if not epsilon_1 < top:
        raise ValueError(
            f"{what} with instantaneous='OUE' can give one report at most "
            f"epsilon_1={top:.6g} when epsilon_perm={epsilon_perm!r} (the "
            "instantaneous round keeps a 1 bit with probability 1/2 only); got "
            f"epsilon_1={epsilon_1!r}. Lower epsilon_1, or pass "
            "instantaneous='SUE' (which reaches any epsilon_1 < epsilon_perm)."
        )

    def loss(t):
        return _ue_loss(*_ue_compose(p1, q1, 0.5, t)) - epsilon_1

    t = brentq(loss, 0.0, 0.5, xtol=2.0**-60, rtol=4 * np.finfo(float).eps, maxiter=500)
    return 0.5, float(t)


def _context(channel_spec, purpose, column=0, label=""):
    """The PRF's domain-separation label of a permanent draw.

    It names the permanent round's public spec, the collection
    (``memo_label``), the input column and the purpose of the draw, in one
    JSON document (unambiguous whatever the strings hold): two columns, or
    two collections, never share a user's permanent answers.
    """
    body = {"channel": channel_spec, "collection": label, "column": column, "purpose": purpose}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)
    return f"sklearn_uldp.memo.{MEMO_VERSION}|{text}"


class _SecretDraws:
    """Permanent draws derived from the users' secrets (memoized).

    One per input column (``column``, its index) of one collection
    (``label``): each column has its own permanent answers, so a row's
    columns compose as independent memoized reports.
    """

    def __init__(self, keys, context_spec, column=0, label=""):
        self.keys = keys
        self.spec = context_spec
        self.column = int(column)
        self.label = str(label)

    def _context(self, purpose):
        return _context(self.spec, purpose, self.column, self.label)

    def uniforms(self, purpose, values, n_draws):
        return prf_uniforms(self.keys, self._context(purpose), values, n_draws)

    def integers(self, purpose, values, high, n_draws):
        return prf_integers(self.keys, self._context(purpose), values, high, n_draws)

    def bernoulli(self, purpose, values, p, marked=None, p_marked=None):
        # Written straight into a new report array (mapped without
        # huge-page stalls): the instantaneous round then works in place.
        out = report_array((np.size(values), np.size(p)), np.uint8)
        return prf_bernoulli(
            self.keys,
            self._context(purpose),
            values,
            p,
            marked=marked,
            marked_probabilities=p_marked,
            out=out,
        )


class _GeneratorDraws:
    """The same draws from a numpy Generator (simulations: not memoized).

    Each draw is realized as its memoized twin realizes it: uniforms on the
    2**-53 grid, exactly uniform integers, Bernoulli cells from one byte and
    a uniform on ties.
    """

    def __init__(self, rng):
        self.rng = rng

    def uniforms(self, purpose, values, n_draws):
        return self.rng.random((np.size(values), n_draws))

    def integers(self, purpose, values, high, n_draws):
        n = np.size(values)
        return self.rng.integers(0, np.broadcast_to(high, (n, n_draws)), size=(n, n_draws))

    def bernoulli(self, purpose, values, p, marked=None, p_marked=None):
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


def _realized_grr_round(k, keep):
    """The (k, k) matrix of a memoized k-RR round: keep on the 2**-53 grid,
    exactly uniform moves (Lemire integers)."""
    kept = realized_probability(keep)
    Q = np.full((k, k), (1.0 - kept) / (k - 1) if k > 1 else 0.0)
    np.fill_diagonal(Q, kept)
    return Q


def _realized_rr_codes(k, keep):
    """The (k, k) matrix :func:`randomized_response_codes` realizes."""
    if k < 2:
        return np.ones((1, 1))
    kept, moves = randomized_response_move_counts(k, keep)
    x, y = np.indices((k, k))
    t = y - (y > x)
    Q = moves[np.clip(t, 0, k - 2)] * 2.0**-53
    np.fill_diagonal(Q, kept * 2.0**-53)
    return Q


def _grr_memo_exposure(n_rounds, k, own, other, p2, q2, uniform=None):
    """Exact privacy loss of ``n_rounds`` reports of one memoized k-RR answer.

    The permanent answer z has ``P(z | x) = own`` if z = x else ``other``
    (rows of a "uniform" input, when given, put ``uniform`` on every z); each
    report is ``p2`` on z, ``q2`` on each other symbol. A sequence of reports
    enters only through the counts n_z of each symbol, via
    ``w(n) = p2^n q2^(tau - n)``, so ``P(y | x) = other S + (own - other)
    w(n_x)`` with ``S = sum_z w(n_z)``. For fixed counts of x and x' the
    ratio falls as S grows, and S is smallest with the other counts spread
    evenly (w is convex); it is largest with them on one symbol. The
    maximum is over the counts of x and x' (O(tau^2) evaluations).
    """
    tau = int(n_rounds)
    lp, lq = np.log(p2), np.log(q2) if q2 > 0 else -np.inf
    n = np.arange(tau + 1)

    def lw(c):
        return c * lp + (tau - c) * lq

    best = 0.0
    nx, nxp = np.meshgrid(n, n, indexing="ij")
    ok = nx + nxp <= tau
    nx, nxp = nx[ok], nxp[ok]
    rest = tau - nx - nxp
    if k == 2:
        keep = rest == 0
        nx, nxp, rest = nx[keep], nxp[keep], rest[keep]

    def log_s(nx, nxp, rest, spread):
        """log S: the other symbols' counts spread evenly, or on one symbol."""
        parts = [lw(nx), lw(nxp)]
        if k > 2:
            if spread:
                base, extra = np.divmod(rest, k - 2)
                with np.errstate(divide="ignore"):
                    parts.append(np.log(extra) + lw(base + 1))
                    parts.append(np.log(k - 2 - extra) + lw(base))
            else:
                parts.append(lw(rest))
                if k > 3:
                    parts.append(np.full(rest.shape, np.log(k - 3) + lw(0)))
        return logsumexp(np.vstack(parts), axis=0)

    lo, lr = np.log(other), np.log(own - other) if own > other else -np.inf
    for spread in (True, False):
        ls = log_s(nx, nxp, rest, spread)
        num = np.logaddexp(lo + ls, lr + lw(nx))
        den = np.logaddexp(lo + ls, lr + lw(nxp))
        best = max(best, float(np.max(num - den)))
        if uniform is not None:
            lu = np.log(uniform)
            # a sensitive x against a "uniform" x', and the reverse
            best = max(best, float(np.max(num - (lu + ls))))
            best = max(best, float(np.max((lu + ls) - den)))
    return best


def _ue_memo_exposure(n_rounds, p1, q1, p2, q2):
    """Exact loss of ``n_rounds`` memoized unary reports, per bit (two terms).

    Given x, the bits are independent; a bit's reports enter through the
    number c of rounds it was reported 1, with
    ``g(c | b) = P1(b) p2^c (1-p2)^(tau-c) + (1 - P1(b)) q2^c (1-q2)^(tau-c)``,
    ``P1(1) = p1``, ``P1(0) = q1``. Only the bits of x and x' differ, so the
    loss is ``max_c ln g(c|1)/g(c|0) + max_c ln g(c|0)/g(c|1)``.
    """
    log_ratio = _ue_bit_log_ratio(n_rounds, p1, q1, p2, q2)
    return float(log_ratio.max() + (-log_ratio).max())


def _ue_bit_log_ratio(n_rounds, p1, q1, p2, q2):
    """ln g(c | 1) - ln g(c | 0) for c = 0..n_rounds (see above)."""
    tau = int(n_rounds)
    c = np.arange(tau + 1)
    a = c * np.log(p2) + (tau - c) * np.log1p(-p2)
    b = c * np.log(q2) + (tau - c) * np.log1p(-q2) if q2 > 0 else np.where(c == 0, 0.0, -np.inf)
    g1 = np.logaddexp(np.log(p1) + a, np.log1p(-p1) + b)
    g0 = np.logaddexp(np.log(q1) + a, np.log1p(-q1) + b)
    return g1 - g0


def _check_rounds(n_rounds):
    if isinstance(n_rounds, bool) or not isinstance(n_rounds, Integral) or n_rounds < 1:
        raise ValueError(f"n_rounds must be a positive integer, got {n_rounds!r}.")
    return int(n_rounds)


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

    def sample(self, codes, rng, **kwargs):
        """One report per coded input, both rounds drawn from ``rng``.

        The end-to-end channel, for simulations (every call draws new
        permanent answers: nothing is memoized).
        """
        codes = np.asarray(codes, dtype=np.intp)
        return self._instantaneous(self.sample_permanent(codes, _GeneratorDraws(rng)), rng)

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
        tau = _check_rounds(n_rounds)
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


class LongitudinalGRRChannel(_LongitudinalMixin, RandomizedResponseChannel):
    """Channel of one report of longitudinal k-RR (L-GRR).

    The permanent round is k-RR at ``epsilon_perm`` (memoized); the
    instantaneous round is k-RR with keep probability ``p2`` on the
    permanent answer. Two k-RR rounds compose into k-RR whose
    keep-minus-move gap is the product of theirs, so with the exact
    parameters (``gap2 = gap(epsilon_1) / gap(epsilon_perm)``) one report is
    **exactly** k-RR at ``epsilon_1``, for every k. ``parametrization=
    "arcolezi"`` uses multi-freq-ldpy's p2 instead, exact for k = 2 only:
    one report then costs less than the claimed ``epsilon_1`` for k > 2
    (and estimates are noisier).

    Parameters
    ----------
    categories : array-like of shape (k,)
    epsilon_perm : float
        Budget of the memoized round.
    epsilon_1 : float
        Budget of one report (< epsilon_perm); the channel's ``epsilon``.
    parametrization : {"exact", "arcolezi"}, default="exact"

    Attributes
    ----------
    epsilon_inst : float
        The instantaneous round's own budget ``ln(p2 / q2)``.
    epsilon_effective : float
        The loss of one report (``epsilon_1`` for "exact"; smaller for
        "arcolezi" with k > 2).

    Examples
    --------
    >>> from sklearn_uldp.mechanisms import LongitudinalGRRChannel
    >>> ch = LongitudinalGRRChannel(list(range(5)), epsilon_perm=2.0, epsilon_1=1.0)
    >>> round(ch.epsilon_effective, 12), round(ch.epsilon_inst, 4)
    (1.0, 1.6467)
    >>> anchor = LongitudinalGRRChannel(list(range(5)), 2.0, 1.0, parametrization="arcolezi")
    >>> round(anchor.epsilon_effective, 3)
    0.86
    """

    name = "lgrr"
    _extra_params = ("parametrization",)
    _spec_field_schemas = {
        **_BUDGET_SCHEMAS,
        "parametrization": {
            "enum": ["exact", "arcolezi"],
            "description": (
                "exact: one report is exactly epsilon_1-LDP; arcolezi: "
                "multi-freq-ldpy's parameters (exact for k = 2 only)."
            ),
        },
    }

    def __init__(
        self,
        categories: ArrayLike,
        epsilon_perm: float,
        epsilon_1: float,
        parametrization: str = "exact",
    ) -> None:
        cats = check_channel_categories(categories)
        self.epsilon_perm, self.epsilon_1 = _check_budgets(epsilon_perm, epsilon_1)
        if parametrization not in ("exact", "arcolezi"):
            raise ValueError(
                f"parametrization must be 'exact' or 'arcolezi', got {parametrization!r}."
            )
        self.parametrization = parametrization
        k = len(cats)
        self.p1 = float(_grr_keep(self.epsilon_perm, k))
        self.p2, self.q2 = _lgrr_instantaneous(
            self.epsilon_perm, self.epsilon_1, k, parametrization
        )
        if not (0.0 < self.q2 < self.p2 <= 1.0):
            raise ValueError(
                f"parametrization={parametrization!r} gives invalid probabilities for "
                f"k={k}, epsilon_perm={self.epsilon_perm}, epsilon_1={self.epsilon_1} "
                f"(p2={self.p2:.4g}, q2={self.q2:.4g}); lower epsilon_1 or use "
                "parametrization='exact'."
            )
        self.epsilon_inst = float(np.log(self.p2) - np.log(self.q2))
        q1 = (1.0 - self.p1) / (k - 1)
        keep = self.p1 * self.p2 + (k - 1) * q1 * self.q2
        move = (1.0 - keep) / (k - 1)
        self.epsilon_effective = (
            self.epsilon_1 if parametrization == "exact" else float(np.log(keep / move))
        )
        # The structure (keep, move, linear estimator) is that of k-RR at the
        # effective budget; the claimed budget is epsilon_1.
        super().__init__(cats, self.epsilon_effective)
        self.epsilon = self.epsilon_1
        self._check_rounds_realizable()

    def _check_rounds_realizable(self):
        k = self.n_categories
        self.permanent_channel()  # k-RR at epsilon_perm: its own checks
        _check_lgrr_realizable(
            self.epsilon_perm, self.epsilon_1, k, f"L-GRR with k={k}", self.parametrization
        )

    def permanent_channel(self):
        return RandomizedResponseChannel(self.categories, self.epsilon_perm)

    def sample_permanent(self, codes, draws):
        codes = np.asarray(codes, dtype=np.intp)
        k = self.n_categories
        keep = draws.uniforms("keep", codes, 1)[:, 0] < self.p1
        move = draws.integers("move", codes, k - 1, 1)[:, 0]
        return np.where(keep, codes, move + (move >= codes))

    def sample_instantaneous(self, permanent, rng):
        return randomized_response_codes(permanent, self.n_categories, self.p2, rng)

    def realized_matrix(self):
        """The channel the mechanism realizes: the memoized round (keep on the
        2**-53 grid, exactly uniform moves) then the instantaneous one (as
        :func:`~sklearn_uldp.utils._sampling.randomized_response_codes`
        realizes it)."""
        k = self.n_categories
        return _realized_grr_round(k, self.p1) @ _realized_rr_codes(k, self.p2)

    def exposure(self, n_rounds):
        k = self.n_categories
        return _grr_memo_exposure(
            _check_rounds(n_rounds), k, self.p1, (1 - self.p1) / (k - 1), self.p2, self.q2
        )


@fill_doc(_DOCS)
class LongitudinalUEChannel(_LongitudinalMixin, RAPPORChannel):
    """Channel of one report of longitudinal unary encoding (L-SUE, L-OSUE, ...).

    Each bit goes through two rounds: the permanent unary round
    (``permanent``: OUE or SUE at ``epsilon_perm``, memoized), then an
    instantaneous unary round on the permanent bits (``instantaneous``: SUE,
    symmetric flips, or OUE, a 1 kept with probability 1/2), whose
    parameter is solved so that one report is exactly ``epsilon_1``-LDP.
    Given x the bits stay independent, so one report is generalized RAPPOR
    with ``theta = p1 p2 + (1 - p1) q2`` at ``epsilon_1``: every estimator
    of the RAPPOR family applies.

    %(channel_parameters)s
    permanent, instantaneous : {"OUE", "SUE"}, default "OUE" and "SUE"
        L-SUE is ("SUE", "SUE") (basic RAPPOR's PRR + IRR), L-OSUE ("OUE",
        "SUE"), L-OUE ("OUE", "OUE"), L-SOUE ("SUE", "OUE").

    Examples
    --------
    >>> from sklearn_uldp.mechanisms import LongitudinalUEChannel
    >>> ch = LongitudinalUEChannel(list("abcd"), epsilon_perm=2.0, epsilon_1=1.0)
    >>> ch.p1, round(ch.p2, 4), round(ch.theta, 4)
    (0.5, 0.8034, 0.5)
    """

    name = "lue"
    _extra_params = ("permanent", "instantaneous")
    _spec_field_schemas = {
        **_BUDGET_SCHEMAS,
        "permanent": {
            "enum": ["OUE", "SUE"],
            "description": "The memoized unary round: OUE or SUE at epsilon_perm.",
        },
        "instantaneous": {
            "enum": ["OUE", "SUE"],
            "description": "The instantaneous unary round (solved for epsilon_1).",
        },
    }

    def __init__(
        self,
        categories: ArrayLike,
        epsilon_perm: float,
        epsilon_1: float,
        permanent: str = "OUE",
        instantaneous: str = "SUE",
    ) -> None:
        cats = check_channel_categories(categories)
        self.epsilon_perm, self.epsilon_1 = _check_budgets(epsilon_perm, epsilon_1)
        self.permanent, self.instantaneous = _check_ue_kinds(permanent, instantaneous)
        self.p1, self.q1 = _ue_round(self.permanent, self.epsilon_perm)
        self.p2, self.q2 = _ue_instantaneous(
            self.p1, self.q1, self.epsilon_1, self.instantaneous, self.epsilon_perm
        )
        theta, _ = _ue_compose(self.p1, self.q1, self.p2, self.q2)
        self.epsilon_inst = _ue_loss(self.p2, self.q2)
        super().__init__(cats, self.epsilon_1, float(theta))
        _check_ue_realizable(self, "L-UE")

    def permanent_channel(self):
        return RAPPORChannel(self.categories, self.epsilon_perm, self.p1)

    def sample_permanent(self, codes, draws):
        codes = np.asarray(codes, dtype=np.intp)
        k = self.n_categories
        bits = draws.bernoulli("bits", codes, np.full(k, self.q1), codes, self.p1)
        return bits.view(np.uint8)

    def sample_instantaneous(self, permanent, rng):
        return _ue_instantaneous_bits(permanent, self.instantaneous, self.q2, rng)

    def _instantaneous(self, permanent, rng):
        return _ue_instantaneous_bits(permanent, self.instantaneous, self.q2, rng, copy=False)

    def realized_matrix(self):
        """Both rounds as the mechanism realizes them (bytes and ties)."""
        ps, qs = _realized_ue_bits(self.p1, self.q1, self.instantaneous, self.q2)
        return self._matrix_from(ps, qs, 0.0)

    def exposure(self, n_rounds):
        return _ue_memo_exposure(_check_rounds(n_rounds), self.p1, self.q1, self.p2, self.q2)


def _check_ue_kinds(permanent, instantaneous):
    for name, kind in (("permanent", permanent), ("instantaneous", instantaneous)):
        if kind not in ("OUE", "SUE"):
            raise ValueError(
                f"{name} must be 'OUE' or 'SUE' (the unary round's type), got {kind!r}."
            )
    return permanent, instantaneous


def _check_ue_realizable(channel, what):
    """The instantaneous round's probabilities must be realizable at epsilon_1."""
    channel.permanent_channel()  # the memoized round's own checks

    def probabilities_at(e1):
        if not e1 < channel.epsilon_perm:
            return np.array([np.nan])
        try:
            p2, q2 = _ue_instantaneous(channel.p1, channel.q1, e1, channel.instantaneous)
        except ValueError:
            return np.array([np.nan])
        return np.array([p2, 1.0 - p2, q2, 1.0 - q2])

    check_realizable(
        channel.epsilon_1,
        probabilities_at,
        what=f"the instantaneous round of {what} (the budget is epsilon_1)",
    )


def _ue_instantaneous_bits(permanent, kind, q2, rng, columns=None, *, copy=True):
    """The instantaneous unary round on permanent bits (uint8 0/1 arrays).

    SUE flips every bit with probability q2 (one random byte a cell, exact
    on ties); OUE draws a 0 bit as Bernoulli(q2) and a 1 bit as a fair coin.
    ``columns`` restricts the round to some columns (the others are kept).
    The rows go in chunks of about 4 MB of flips (no n-by-k temporary);
    ``copy=False`` writes into ``permanent``.
    """
    out = np.array(permanent, dtype=np.uint8, copy=True) if copy else permanent
    n = out.shape[0]
    width = out.shape[1] if columns is None else len(columns)
    step = max(1, (1 << 22) // max(width, 1))
    if kind == "SUE" and columns is None and out.flags.c_contiguous:
        # Flip in place, one compiled pass per block: the same draws as the
        # chunks below make (bernoulli_xor draws as bernoulli_matrix does).
        for lo in range(0, n, step):
            bernoulli_xor(out[lo : min(n, lo + step)], q2, rng)
        return out
    buf = np.empty((min(step, n), width), dtype=np.uint8)
    for lo in range(0, n, step):
        hi = min(n, lo + step)
        flips = bernoulli_matrix((hi - lo, width), q2, rng, out=buf[: hi - lo]).view(np.uint8)
        block = out[lo:hi] if columns is None else out[lo:hi][:, columns]
        if kind == "SUE":
            np.bitwise_xor(block, flips, out=block)
        else:
            ones = np.flatnonzero(block.reshape(-1))
            block[...] = flips
            block.reshape(-1)[ones] = rng.integers(0, 2, size=ones.size, dtype=np.uint8)
        if columns is not None:
            out[lo:hi, columns] = block
    return out


def _realized_ue_bits(p1, q1, kind, q2):
    """Per-bit P(1 | true bit 1), P(1 | true bit 0) as the two rounds realize them."""
    p1r, q1r = _byte_realized(p1), _byte_realized(q1)
    f = _byte_realized(q2)
    p2r, q2r = (1.0 - f, f) if kind == "SUE" else (0.5, f)
    return _ue_compose(p1r, q1r, p2r, q2r)


# ---------------------------------------------------------------- LOLOHA
@fill_doc(_DOCS)
class LongitudinalLocalHashingChannel(_LongitudinalMixin, LocalHashingChannel):
    """Channel of one report of longitudinal local hashing (LOLOHA).

    A user draws one hash function of the linear family over GF(g) (a
    permanent seed, derived from the secret), hashes the value to a bucket
    ``v = h(x)`` in [0, g) and memoizes a g-ary randomized response of v at
    ``epsilon_perm`` -- per (user, *bucket*), so values with the same hash
    share the memoized answer; each report is a fresh g-ary randomized
    response of it (exact L-GRR parameters on g symbols). One report is
    then exactly local hashing at ``epsilon_1`` with range g
    (:class:`~sklearn_uldp.mechanisms.LocalHashingChannel`), and a user
    whose value changes d times spends at most ``min(d + 1, g)`` times
    ``epsilon_perm`` (at most g distinct buckets).

    %(channel_parameters)s
    hash_range : int
        g, a prime.

    Examples
    --------
    >>> from sklearn_uldp.mechanisms import LongitudinalLocalHashingChannel
    >>> ch = LongitudinalLocalHashingChannel(list(range(10)), 2.0, 1.0, hash_range=3)
    >>> ch.n_seeds, round(ch.epsilon_inst, 4)
    (27, 1.4938)
    """

    name = "loloha"
    _extra_params = ("hash_range",)
    _spec_field_schemas = {
        **_BUDGET_SCHEMAS,
        "hash_range": LocalHashingChannel._spec_field_schemas["hash_range"],
    }

    def __init__(
        self, categories: ArrayLike, epsilon_perm: float, epsilon_1: float, hash_range: int
    ) -> None:
        self.epsilon_perm, self.epsilon_1 = _check_budgets(epsilon_perm, epsilon_1)
        super().__init__(categories, self.epsilon_1, hash_range)
        g = self.hash_range
        self.p1 = float(_grr_keep(self.epsilon_perm, g))
        self.p2, self.q2 = _lgrr_instantaneous(self.epsilon_perm, self.epsilon_1, g)
        self.epsilon_inst = float(np.log(self.p2) - np.log(self.q2))
        self.permanent_channel()
        _check_lgrr_realizable(self.epsilon_perm, self.epsilon_1, g, f"LOLOHA with g={g}")

    def permanent_channel(self):
        return LocalHashingChannel(self.categories, self.epsilon_perm, self.hash_range)

    def sample_permanent(self, codes, draws):
        """(seed, memoized bucket answer) per user: the seed is per user (value
        0), the answer per (user, bucket)."""
        codes = np.asarray(codes, dtype=np.intp)
        g = self.hash_range
        seeds = draws.integers("seed", np.zeros(codes.size, np.uint64), self.n_seeds, 1)[:, 0]
        buckets = self.hash(seeds, codes)
        keep = draws.uniforms("keep", buckets, 1)[:, 0] < self.p1
        move = draws.integers("move", buckets, g - 1, 1)[:, 0]
        answer = np.where(keep, buckets, move + (move >= buckets))
        return np.column_stack([seeds, answer])

    def sample_instantaneous(self, permanent, rng):
        seeds, answer = permanent[:, 0], permanent[:, 1]
        values = randomized_response_codes(answer, self.hash_range, self.p2, rng)
        return seeds * self.hash_range + values

    def realized_matrix(self):
        g = self.hash_range
        return self._matrix_from(_realized_grr_round(g, self.p1) @ _realized_rr_codes(g, self.p2))

    def exposure(self, n_rounds):
        g = self.hash_range
        return _grr_memo_exposure(
            _check_rounds(n_rounds), g, self.p1, (1 - self.p1) / (g - 1), self.p2, self.q2
        )


# -------------------------------------------------------------- dBitFlipPM
class DBitFlipChannel(_LongitudinalMixin, CategoricalChannel):
    """Channel of dBitFlipPM (Ding, Kulkarni & Yekhanin 2017) over b buckets.

    A user samples d distinct buckets ``j_1 < ... < j_d`` uniformly and
    reports, for each, a bit that is 1 with probability
    ``p = e^(eps/2) / (e^(eps/2) + 1)`` if the value's bucket is ``j_t``
    and ``1 - p`` otherwise: epsilon-LDP (only the bits of the buckets of x
    and x' differ, each by at most e^(eps/2)). The report is one integer,
    ``rank(J) 2^d + sum_t bit_t 2^t`` with ``rank`` the combinatorial
    (colex) rank of the set J among the C(b, d) sets; :meth:`split_reports`
    gives ``(J, bits)``. Everything is permanent (memoized per user): the
    buckets and, for each, the bit reported when the value is in it and
    the bit reported when it is not; a user whose value stays put sends
    the same report in every round.

    The statistic of bucket x is "x sampled and its bit 1", of mean
    ``(d / b)(q + (p - q) pi(x))`` (q = 1 - p), which gives the unbiased
    estimate; the likelihood is ``prod_t`` of the bit probabilities, which
    EM uses through structured products over the C(b, d) 2^d outputs.

    Parameters
    ----------
    categories : array-like of shape (b,)
        The buckets.
    epsilon : float
    d : int, default=1
        Buckets sampled (bits sent) per user, 1 <= d <= b.

    Examples
    --------
    >>> from sklearn_uldp.mechanisms import DBitFlipChannel
    >>> ch = DBitFlipChannel(list(range(4)), epsilon=1.0, d=2)
    >>> ch.n_outputs, ch.matrix().shape
    (24, (4, 24))
    >>> ch.split_reports([5])
    (array([[0, 2]]), array([[1, 0]]))
    """

    name = "dbitflip"
    report_bits = property(lambda self: float(np.log2(self.n_outputs)))
    _spec_field_schemas = {
        **CategoricalChannel._spec_field_schemas,
        "d": {
            "type": "integer",
            "minimum": 1,
            "description": "Buckets sampled (bits sent) per user.",
        },
    }
    #: Largest output space (sets times bit patterns).
    MAX_OUTPUTS = 1 << 24

    def __init__(self, categories: ArrayLike, epsilon: float, d: int = 1) -> None:
        super().__init__(categories, epsilon)
        b = self.n_categories
        if isinstance(d, bool) or not isinstance(d, Integral) or not 1 <= d <= b:
            raise ValueError(
                f"d must be an integer in [1, {b}] (the number of buckets), got {d!r}."
            )
        self.d = int(d)
        self.n_sets = comb(b, self.d)
        if self.n_sets * 2**self.d > self.MAX_OUTPUTS:
            raise ValueError(
                f"d={self.d} of b={b} buckets gives {self.n_sets * 2**self.d} possible "
                f"reports, more than {self.MAX_OUTPUTS}: pass a smaller d (d=1 sends "
                "one bit)."
            )
        self._check_budget(f"dBitFlipPM with b={b}")
        # Every draw is permanent: one value costs epsilon in any number of rounds.
        self.epsilon_perm = self.epsilon_1 = self.epsilon
        self.epsilon_inst = 0.0
        self.p = float(1.0 / (1.0 + np.exp(-self.epsilon / 2.0)))
        self.q = 1.0 - self.p
        self._sets = None
        self._binom = np.array(
            [[comb(j, t) for t in range(self.d + 1)] for j in range(b + 1)], dtype=np.int64
        )

    def _draw_probabilities(self, epsilon):
        p = 1.0 / (1.0 + np.exp(-epsilon / 2.0))
        return np.array([p, 1.0 - p])

    def get_params(self):
        return {"epsilon": self.epsilon, "d": self.d}

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_sets"] = None  # a cache
        return state

    @property
    def n_outputs(self):
        return self.n_sets * 2**self.d

    def protected_outputs(self):
        return np.ones(self.n_outputs, dtype=bool)

    # -------------------------------------------------------- set encoding
    def _rank(self, sets):
        """Colex ranks of sorted index sets (n, d)."""
        t = np.arange(1, self.d + 1)
        return self._binom[sets, t[None, :]].sum(axis=1)

    def _all_sets(self):
        """(C(b, d), d) table: row r is the set of colex rank r."""
        if self._sets is None:
            b, d = self.n_categories, self.d
            # Colex order: sets by their largest element, then recursively.
            sets = np.zeros((1, 0), dtype=np.int64)
            for t in range(d):
                rows = []
                for top in range(t, b - d + t + 1):
                    below = sets[sets[:, -1] < top] if sets.shape[1] else sets
                    rows.append(np.column_stack([below, np.full(len(below), top)]))
                sets = np.concatenate(rows)
            order = np.argsort(self._rank(sets), kind="stable")
            self._sets = sets[order]
        return self._sets

    def split_reports(self, codes):
        """``(J, bits)`` of report codes: the sampled buckets and their bits.

        Returns
        -------
        sets : ndarray of shape (n, d)
        bits : ndarray of shape (n, d)
        """
        codes = np.asarray(codes, dtype=np.int64)
        rank, pattern = np.divmod(codes, 2**self.d)
        bits = (pattern[:, None] >> np.arange(self.d)) & 1
        return self._all_sets()[rank], bits

    def encode_pairs(self, sets, bits):
        """Report codes of sorted sets (n, d) and their bits (n, d)."""
        weights = 1 << np.arange(self.d)
        return self._rank(np.asarray(sets)) * 2**self.d + (np.asarray(bits) * weights).sum(axis=1)

    # ----------------------------------------------------------- structure
    def _pattern_terms(self, p, q):
        """base(bits) and r_t(bits) - 1 for the 2^d bit patterns."""
        d = self.d
        B = (np.arange(2**d)[:, None] >> np.arange(d)) & 1  # (2^d, d)
        base = np.prod(np.where(B == 1, q, 1.0 - q), axis=1)
        ratio = np.where(B == 1, p / q, (1.0 - p) / (1.0 - q)) - 1.0
        return base, ratio, B

    def _forward_with(self, p_in, p, q):
        p_in = np.asarray(p_in, dtype=float)
        base, ratio, _ = self._pattern_terms(p, q)
        P = p_in[self._all_sets()]  # (C, d)
        m = base[None, :] * (p_in.sum() + P @ ratio.T)
        return (m / self.n_sets).ravel()

    def forward(self, p):
        return self._forward_with(p, self.p, self.q)

    def adjoint(self, v):
        V = np.asarray(v, dtype=float).reshape(self.n_sets, 2**self.d)
        base, ratio, _ = self._pattern_terms(self.p, self.q)
        W = V * base[None, :]
        per_member = W @ ratio  # (C, d)
        out = np.full(self.n_categories, W.sum())
        out += np.bincount(
            self._all_sets().ravel(), weights=per_member.ravel(), minlength=self.n_categories
        )
        return out / self.n_sets

    def matrix(self):
        return np.stack(
            [self._forward_with(row, self.p, self.q) for row in np.eye(self.n_categories)]
        )

    def realized_matrix(self):
        """Sets exactly uniform; bits from one byte and a uniform on ties."""
        p, q = _byte_realized(self.p), _byte_realized(self.q)
        return np.stack([self._forward_with(row, p, q) for row in np.eye(self.n_categories)])

    def observed_frequency(self, stats):
        H = np.asarray(stats.counts, dtype=float).reshape(self.n_sets, 2**self.d)
        _, _, B = self._pattern_terms(self.p, self.q)
        ones = H @ B  # (C, d): reports of each set with bit t set
        f = np.bincount(self._all_sets().ravel(), weights=ones.ravel(), minlength=self.n_categories)
        return f / stats.n

    def expected_frequency(self, p):
        p = np.asarray(p, dtype=float)
        return self.d / self.n_categories * (self.q * p.sum() + (self.p - self.q) * p)

    @property
    def coef_a(self):
        return np.full(self.n_categories, self.n_categories / (self.d * (self.p - self.q)))

    @property
    def coef_b(self):
        return np.full(self.n_categories, -self.q / (self.p - self.q))

    def likelihood(self, codes):
        sets, bits = self.split_reports(codes)
        n = sets.shape[0]
        L = np.ones((n, self.n_categories))
        ratio = np.where(bits == 1, self.p / self.q, (1.0 - self.p) / (1.0 - self.q))
        L[np.arange(n)[:, None], sets] = ratio
        return L

    # ------------------------------------------------------------ sampling
    def sample_sets(self, n, draws):
        """d distinct buckets per user, uniformly (Floyd's algorithm)."""
        b, d = self.n_categories, self.d
        zero = np.zeros(n, dtype=np.uint64)
        highs = np.arange(b - d + 1, b + 1)
        r = draws.integers("buckets", zero, highs[None, :], d)
        chosen = np.empty((n, d), dtype=np.int64)
        for t in range(d):
            j = b - d + t  # draw uniformly in [0, j]: take it, or j if taken
            pick = r[:, t]
            taken = (chosen[:, :t] == pick[:, None]).any(axis=1) if t else np.zeros(n, bool)
            chosen[:, t] = np.where(taken, j, pick)
        return np.sort(chosen, axis=1)

    def sample_permanent(self, codes, draws):
        """Per user: the sets, the bit if in the bucket, the bit if not."""
        codes = np.asarray(codes, dtype=np.intp)
        n, d = codes.size, self.d
        sets = self.sample_sets(n, draws)
        probs = np.concatenate([np.full(d, self.p), np.full(d, self.q)])
        bits = draws.bernoulli("bits", np.zeros(n, dtype=np.uint64), probs).view(np.uint8)
        inside = sets == codes[:, None]
        reported = np.where(inside, bits[:, :d], bits[:, d:])
        return self.encode_pairs(sets, reported)

    def sample_instantaneous(self, permanent, rng):
        return np.asarray(permanent, dtype=np.int64)

    def sample(self, codes, rng):
        return self.sample_permanent(codes, _GeneratorDraws(rng))

    def permanent_channel(self):
        """The channel itself: every draw of dBitFlipPM is permanent."""
        return self

    def exposure(self, n_rounds):
        _check_rounds(n_rounds)
        return float(self.epsilon)


# ---------------------------------------------------- utility-optimized
@fill_doc(_DOCS)
class PermanentURRChannel(_TwoBudgetsMixin, UtilityOptimizedRRChannel):
    """The memoized round of :class:`UtilityOptimizedLongitudinalRR`.

    uRR's structure at ``epsilon_perm`` on the sensitive values (k-RR among
    X_S), but a non-sensitive value is kept with probability
    ``c3(epsilon_1) = (e^eps1 - 1) / (s + e^eps1 - 1)`` only (not uRR's
    ``c3(epsilon_perm)``), otherwise replaced by a uniform sensitive value:
    (X_S, X_S, epsilon_perm)-ULDP, and the instantaneous round then makes
    one report exactly (X_S, epsilon_1)-uRR.

    %(uldp_channel_parameters)s

    Examples
    --------
    >>> from sklearn_uldp.mechanisms import PermanentURRChannel
    >>> from sklearn_uldp.privacy import check_uldp
    >>> ch = PermanentURRChannel(["a", "b", "c"], 2.0, 1.0, [True, True, False])
    >>> bool(check_uldp(ch)), ch.epsilon
    (True, 2.0)
    """

    name = "urr_permanent"
    _extra_params = ("sensitive",)
    _spec_field_schemas = {
        **_BUDGET_SCHEMAS,
        "sensitive": UtilityOptimizedRRChannel._spec_field_schemas["sensitive"],
    }

    def __init__(
        self, categories: ArrayLike, epsilon_perm: float, epsilon_1: float, sensitive: ArrayLike
    ) -> None:
        self.epsilon_perm, self.epsilon_1 = _check_budgets(epsilon_perm, epsilon_1)
        super().__init__(categories, self.epsilon_perm, sensitive)
        s = self._sensitive_codes.size
        # keep a non-sensitive value w.p. c3(epsilon_1), else a uniform sensitive one
        self.c3 = float(-np.expm1(-self.epsilon_1) / (1.0 + (s - 1) * np.exp(-self.epsilon_1)))
        self._hide = (1.0 - self.c3) / s

    def forward(self, p):
        p = np.asarray(p, dtype=float)
        S = self._sensitive
        mass_s, mass_n = p[S].sum(), p[~S].sum()
        return np.where(
            S, (self.c1 - self.c2) * p + self.c2 * mass_s + self._hide * mass_n, self.c3 * p
        )

    def adjoint(self, v):
        v = np.asarray(v, dtype=float)
        S = self._sensitive
        v_s = v[S].sum()
        return np.where(S, (self.c1 - self.c2) * v + self.c2 * v_s, self.c3 * v + self._hide * v_s)

    def matrix(self):
        return CategoricalChannel.matrix(self)

    def realized_matrix(self):
        return _realized_permanent_urr(self)

    def sample(self, codes, rng):
        return _sample_permanent_urr(self, codes, _GeneratorDraws(rng))


def _sample_permanent_urr(perm, codes, draws):
    """The memoized uRR round: keep (sensitive: c1, else c3), else move
    uniformly (to another sensitive value, or to any sensitive value)."""
    codes = np.asarray(codes, dtype=np.intp)
    S_codes = perm._sensitive_codes
    s = S_codes.size
    is_s = perm._sensitive[codes]
    keep = draws.uniforms("keep", codes, 1)[:, 0] < np.where(is_s, perm.c1, perm.c3)
    high = np.where(is_s, max(s - 1, 1), s)
    move = draws.integers("move", codes, high[:, None], 1)[:, 0]
    rank = np.full(perm.n_categories, 0, dtype=np.intp)
    rank[S_codes] = np.arange(s)
    to_other = (rank[codes] + 1 + move) % s  # a sensitive input's other values
    target = S_codes[np.where(is_s, to_other, move)]
    return np.where(keep, codes, target)


def _realized_permanent_urr(perm):
    """The memoized uRR round as :func:`_sample_permanent_urr` realizes it.

    Keep on the 2**-53 grid, exactly uniform moves: with a non-sensitive
    value, as uRR's own sampler (whose realized matrix this is); with every
    value sensitive, the memoized k-RR round (uRR's sampler then draws
    :func:`randomized_response_codes`, another realization).
    """
    if perm._sensitive_codes.size == perm.n_categories:
        return _realized_grr_round(perm.n_categories, perm.c1)
    return UtilityOptimizedRRChannel.realized_matrix(perm)


@fill_doc(_DOCS)
class UtilityOptimizedLongitudinalRRChannel(_LongitudinalMixin, UtilityOptimizedRRChannel):
    """Channel of one report of the utility-optimized longitudinal RR.

    The permanent round is :class:`PermanentURRChannel` (memoized,
    (X_S, X_S, epsilon_perm)-ULDP); the instantaneous round applies k-RR
    among the sensitive values to a sensitive answer (with L-GRR's exact
    parameters on s values) and keeps a non-sensitive answer as it is: it
    maps protected outputs to protected outputs and invertible ones to
    themselves. One report is then **exactly** (X_S, epsilon_1)-uRR, and
    every number of reports together is (X_S, X_S, epsilon_perm)-ULDP
    (post-processing of the permanent answer, which never turns a
    protected answer into an invertible report).

    %(uldp_channel_parameters)s

    Examples
    --------
    >>> from sklearn_uldp.mechanisms import UtilityOptimizedLongitudinalRRChannel
    >>> ch = UtilityOptimizedLongitudinalRRChannel(["a", "b", "c"], 2.0, 1.0,
    ...                                            [True, True, False])
    >>> ch.matrix().round(3).tolist()
    [[0.731, 0.269, 0.0], [0.269, 0.731, 0.0], [0.269, 0.269, 0.462]]
    """

    name = "ulrr"
    _extra_params = ("sensitive",)
    _spec_field_schemas = PermanentURRChannel._spec_field_schemas

    def __init__(
        self, categories: ArrayLike, epsilon_perm: float, epsilon_1: float, sensitive: ArrayLike
    ) -> None:
        self.epsilon_perm, self.epsilon_1 = _check_budgets(epsilon_perm, epsilon_1)
        super().__init__(categories, self.epsilon_1, sensitive)
        s = self._sensitive_codes.size
        self._permanent = PermanentURRChannel(
            self.categories, self.epsilon_perm, self.epsilon_1, self._sensitive
        )
        if s > 1:
            self.p2, self.q2 = _lgrr_instantaneous(self.epsilon_perm, self.epsilon_1, s)
            self.epsilon_inst = float(np.log(self.p2) - np.log(self.q2))
            _check_lgrr_realizable(self.epsilon_perm, self.epsilon_1, s, f"uRR with s={s}")
        else:
            self.p2, self.q2, self.epsilon_inst = 1.0, 0.0, 0.0

    def permanent_channel(self):
        return self._permanent

    def sample_permanent(self, codes, draws):
        return _sample_permanent_urr(self._permanent, codes, draws)

    def sample_instantaneous(self, permanent, rng):
        permanent = np.asarray(permanent, dtype=np.intp)
        S_codes = self._sensitive_codes
        s = S_codes.size
        if s < 2:
            return permanent.copy()
        rank = np.full(self.n_categories, -1, dtype=np.intp)
        rank[S_codes] = np.arange(s)
        r = rank[permanent]
        is_s = r >= 0
        moved = S_codes[randomized_response_codes(np.where(is_s, r, 0), s, self.p2, rng)]
        return np.where(is_s, moved, permanent)

    def _instantaneous_matrix(self):
        k, S = self.n_categories, self._sensitive
        R = np.eye(k)
        if self._sensitive_codes.size > 1:
            R[np.ix_(S, S)] = _realized_rr_codes(self._sensitive_codes.size, self.p2)
        return R

    def realized_matrix(self):
        return _realized_permanent_urr(self._permanent) @ self._instantaneous_matrix()

    def exposure(self, n_rounds):
        tau = _check_rounds(n_rounds)
        s = self._sensitive_codes.size
        perm = self._permanent
        if s < 2:
            return float(self.epsilon_1)  # every protected report is the sensitive value
        uniform = perm._hide if self._sensitive_codes.size < self.n_categories else None
        return _grr_memo_exposure(tau, s, perm.c1, perm.c2, self.p2, self.q2, uniform=uniform)


@fill_doc(_DOCS)
class PermanentURAPChannel(_TwoBudgetsMixin, UnaryEncodingChannel):
    """The memoized round of :class:`UtilityOptimizedLongitudinalRAPPOR`.

    Sensitive bits follow the permanent unary round (OUE or SUE at
    ``epsilon_perm``: the true bit is 1 w.p. p1, the others w.p. q1); the
    bit of a non-sensitive true value is set (revealing it) with probability
    ``t = theta (1 - e^-eps1)``, theta the end-to-end probability of the
    true sensitive bit, and other non-sensitive bits are 0.
    (X_S, Y_P, epsilon_perm)-ULDP since ``t <= p1 (1 - e^-eps_perm)``.

    %(uldp_channel_parameters)s
    permanent, instantaneous : {"OUE", "SUE"}

    Examples
    --------
    >>> from sklearn_uldp.mechanisms import PermanentURAPChannel
    >>> from sklearn_uldp.privacy import check_uldp
    >>> ch = PermanentURAPChannel(["a", "b", "c"], 2.0, 1.0, [True, True, False])
    >>> bool(check_uldp(ch))
    True
    """

    name = "urap_permanent"
    _extra_params = ("sensitive", "permanent", "instantaneous")
    _spec_field_schemas = {
        **_BUDGET_SCHEMAS,
        "sensitive": UnaryEncodingChannel._spec_field_schemas["sensitive"],
        **{
            key: LongitudinalUEChannel._spec_field_schemas[key]
            for key in ("permanent", "instantaneous")
        },
    }
    _own_budget_check = True

    def __init__(
        self,
        categories: ArrayLike,
        epsilon_perm: float,
        epsilon_1: float,
        sensitive: ArrayLike,
        permanent: str = "OUE",
        instantaneous: str = "SUE",
    ) -> None:
        self.epsilon_perm, self.epsilon_1 = _check_budgets(epsilon_perm, epsilon_1)
        self.permanent, self.instantaneous = _check_ue_kinds(permanent, instantaneous)
        self.p1, self.q1 = _ue_round(self.permanent, self.epsilon_perm)
        self.p2, self.q2 = _ue_instantaneous(
            self.p1, self.q1, self.epsilon_1, self.instantaneous, self.epsilon_perm, "uRAP"
        )
        self.theta_1, _ = _ue_compose(self.p1, self.q1, self.p2, self.q2)
        super().__init__(categories, self.epsilon_perm, self.p1, sensitive)
        check_realizable(
            self.epsilon_perm,
            lambda e: np.array([*_ue_round(self.permanent, e)]),
            what=f"the permanent {self.permanent} round (the budget is epsilon_perm)",
        )
        self.reveal = float(self.theta_1 * -np.expm1(-self.epsilon_1))
        self._one_minus_d2 = self.reveal  # the matrix's non-sensitive own bit

    def realized_matrix(self):
        return self._matrix_from(
            _byte_realized(self.p1), _byte_realized(self.q1), _byte_realized(self.reveal)
        )

    def sample(self, codes, rng, *, sparse=False):
        return _sample_permanent_urap(self, codes, _GeneratorDraws(rng))


def _sample_permanent_urap(perm, codes, draws):
    codes = np.asarray(codes, dtype=np.intp)
    S = perm._sensitive
    p = np.where(S, perm.q1, 0.0)
    own = np.where(S[codes], perm.p1, perm.reveal)
    return draws.bernoulli("bits", codes, p, codes, own).view(np.uint8)


@fill_doc(_DOCS)
class UtilityOptimizedLongitudinalRAPPORChannel(_LongitudinalMixin, UnaryEncodingChannel):
    """Channel of one report of the utility-optimized longitudinal RAPPOR.

    The permanent round is :class:`PermanentURAPChannel` (memoized,
    (X_S, Y_P, epsilon_perm)-ULDP); the instantaneous round applies the
    unary round of L-UE to the sensitive bits and keeps the non-sensitive
    bits as they are (protected reports stay protected, invertible ones
    stay invertible). One report is then **exactly** (X_S, theta,
    epsilon_1)-uRAP with ``theta = p1 p2 + (1 - p1) q2``, and any number of
    reports together is (X_S, Y_P, epsilon_perm)-ULDP.

    %(uldp_channel_parameters)s
    permanent, instantaneous : {"OUE", "SUE"}, default "OUE" and "SUE"

    Examples
    --------
    >>> from sklearn_uldp.mechanisms import UtilityOptimizedLongitudinalRAPPORChannel
    >>> from sklearn_uldp.privacy import check_uldp
    >>> ch = UtilityOptimizedLongitudinalRAPPORChannel(["a", "b", "c"], 2.0, 1.0,
    ...                                                [True, True, False])
    >>> bool(check_uldp(ch)), bool(check_uldp(ch.permanent_channel()))
    (True, True)
    """

    name = "ulrap"
    _extra_params = ("sensitive", "permanent", "instantaneous")
    _spec_field_schemas = PermanentURAPChannel._spec_field_schemas
    _own_budget_check = False

    def __init__(
        self,
        categories: ArrayLike,
        epsilon_perm: float,
        epsilon_1: float,
        sensitive: ArrayLike,
        permanent: str = "OUE",
        instantaneous: str = "SUE",
    ) -> None:
        cats = check_channel_categories(categories)
        mask = check_sensitive_mask(sensitive, len(cats))
        self._permanent = PermanentURAPChannel(
            cats, epsilon_perm, epsilon_1, mask, permanent, instantaneous
        )
        perm = self._permanent
        self.epsilon_perm, self.epsilon_1 = perm.epsilon_perm, perm.epsilon_1
        self.permanent, self.instantaneous = perm.permanent, perm.instantaneous
        self.p1, self.q1, self.p2, self.q2 = perm.p1, perm.q1, perm.p2, perm.q2
        self.epsilon_inst = _ue_loss(self.p2, self.q2)
        super().__init__(cats, self.epsilon_1, float(perm.theta_1), mask)
        _check_ue_realizable(self, "uRAP")

    def permanent_channel(self):
        return self._permanent

    def sample_permanent(self, codes, draws):
        return _sample_permanent_urap(self._permanent, codes, draws)

    def sample_instantaneous(self, permanent, rng):
        S = self._s_codes
        columns = None if S.size == self.n_categories else S
        return _ue_instantaneous_bits(permanent, self.instantaneous, self.q2, rng, columns)

    def _instantaneous(self, permanent, rng):
        S = self._s_codes
        columns = None if S.size == self.n_categories else S
        return _ue_instantaneous_bits(
            permanent, self.instantaneous, self.q2, rng, columns, copy=False
        )

    def sample(self, codes, rng, *, sparse=False):
        return _LongitudinalMixin.sample(self, codes, rng)

    def realized_matrix(self):
        ps, qs = _realized_ue_bits(self.p1, self.q1, self.instantaneous, self.q2)
        return self._matrix_from(ps, qs, _byte_realized(self._permanent.reveal))

    def exposure(self, n_rounds):
        tau = _check_rounds(n_rounds)
        log_ratio = _ue_bit_log_ratio(tau, self.p1, self.q1, self.p2, self.q2)
        worst = float(log_ratio.max() + (-log_ratio).max())
        if self._s_codes.size < self.n_categories:
            hide = np.log1p(-self._permanent.reveal)  # a non-sensitive x unrevealed
            worst = max(worst, float(log_ratio.max()) - hide, hide + float((-log_ratio).max()))
        return worst


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


class _LongitudinalMechanism(BaseMechanism):
    """Shared fit/transform of the memoized mechanisms."""

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
        spec = self.channel_._memo_spec()
        # One memo per input column (and collection): columns sharing a
        # user's permanent answers would compose as fresh reports of one
        # value, a loss growing with the rounds.
        label = self.memo_label
        k = len(self.categories_)
        if columns.shape[1] == 1:
            column = columns[:, 0]
            codes = self._encode(column)
            rng = self._transform_rng(codes, k)
            draws = _SecretDraws(keys, spec, column=0, label=label)
            outputs = self._privatize(self._values(codes), draws, rng)
            return self._wrap_reports(outputs, column, X)
        call = self._next_call()
        blocks = []
        for j, name in enumerate(self._input_names()):
            column = columns[:, j]
            codes = self._encode(column)
            rng = self._transform_rng(codes, k, column=name, call=call)
            view = self._column_view(name)
            draws = _SecretDraws(keys, spec, column=j, label=label)
            outputs = self._privatize(self._values(codes), draws, rng)
            blocks.append(view._wrap_reports(outputs, column, X))
        return self._join_blocks(blocks)

    def _privatize(self, values, draws, rng):
        permanent = self.channel_.sample_permanent(values, draws)
        return self.channel_._instantaneous(permanent, rng)

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

    def _column_feature_names(self, name):
        return [f"{name}_{c}" for c in self.categories_]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = []
        return tags


@fill_doc(_DOCS)
class LongitudinalGRR(_LongitudinalMechanism):
    """Longitudinal k-ary randomized response (L-GRR), memoized.

    Each user's first report of a value draws a **permanent** k-RR answer at
    ``epsilon_perm``, re-derived in every later round from the user's
    secret (the same user and value always get the same answer); every
    report is a fresh k-RR of it. The second round's parameters make one
    report **exactly** k-RR at ``epsilon_1`` for every k; any number of
    reports of one value together cost at most ``epsilon_perm``
    (:meth:`exposure` gives the exact loss after t rounds).

    ``parametrization="arcolezi"`` uses the second-round formula of
    multi-freq-ldpy (Arcolezi et al. 2022), exact only for k = 2: its
    single report costs less than the ``epsilon_1`` it claims for k > 2
    (measured on the exact channel: 0.860 for a claimed 1 at k = 5,
    epsilon_perm = 2; 1.898 for 2 at k = 10, epsilon_perm = 4; 1.254 for 2
    at k = 100, epsilon_perm = 4), so its estimates are noisier at the same
    claimed budget. It is offered for comparisons.

    Parameters
    ----------
    %(budgets)s
    parametrization : {"exact", "arcolezi"}, default="exact"
    %(memo_parameters)s

    Attributes
    ----------
    categories_ : ndarray of shape (k,)
    channel_ : LongitudinalGRRChannel
        One report, end to end: k-RR at ``epsilon_1``.
    permanent_channel_ : RandomizedResponseChannel
        The memoized round: k-RR at ``epsilon_perm``.
    %(fitted_columns)s

    See Also
    --------
    LongitudinalUE : the unary-encoding family (L-OSUE is the recommended one).
    UtilityOptimizedLongitudinalRR : keeps non-sensitive values accurate.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp.mechanisms import LongitudinalGRR
    >>> from sklearn_uldp.privacy import check_ldp
    >>> from sklearn_uldp.utils import generate_user_secrets
    >>> mech = LongitudinalGRR(2.0, 1.0, categories=["a", "b", "c"]).fit()
    >>> secrets = generate_user_secrets(3)        # kept by the users
    >>> X = np.array([["a"], ["b"], ["a"]], dtype=object)
    >>> day1 = mech.transform(X, user_secrets=secrets)
    >>> day2 = mech.transform(X, user_secrets=secrets)  # same permanent answers
    >>> check_ldp(mech).satisfied, round(check_ldp(mech.permanent_channel_).epsilon, 1)
    (True, 2.0)
    >>> round(mech.exposure(1), 6), round(mech.exposure(1000), 6)
    (1.0, 2.0)
    """

    _parameter_constraints = {
        **_LongitudinalMechanism._parameter_constraints,
        "parametrization": [StrOptions({"exact", "arcolezi"})],
    }

    def __init__(
        self,
        epsilon_perm: float = 2.0,
        epsilon_1: float = 1.0,
        *,
        parametrization: Literal["exact", "arcolezi"] = "exact",
        categories: Categories = "auto",
        memo_label: str = "",
        random_state: RandomStateLike = None,
    ) -> None:
        self.parametrization = parametrization
        super().__init__(epsilon_perm, epsilon_1, categories, memo_label, random_state)

    def _make_channel(self):
        return LongitudinalGRRChannel(
            self.categories_, self.epsilon_perm, self.epsilon_1, self.parametrization
        )


@fill_doc(_DOCS)
class LongitudinalUE(_BitReportsMixin, _LongitudinalMechanism):
    """Longitudinal unary encoding: L-SUE, L-OSUE, L-OUE, L-SOUE (memoized).

    RAPPOR's two rounds on a one-hot vector: a **permanent** unary round
    at ``epsilon_perm`` (OUE or SUE), memoized per (user, value) from the
    user's secret, then a fresh **instantaneous** unary round on the
    permanent bits (SUE: symmetric flips; OUE: a 1 kept with probability
    1/2), solved so that one report is **exactly** ``epsilon_1``-LDP. L-SUE
    (``permanent="SUE", instantaneous="SUE"``) is basic RAPPOR's PRR + IRR;
    L-OSUE (the default) has the smallest variance of the four in most
    regimes (Arcolezi et al. 2022).

    One report is generalized RAPPOR at ``epsilon_1`` with
    ``theta = p1 p2 + (1 - p1) q2`` (:attr:`channel_`), so every estimator
    applies; any number of reports of one value costs at most
    ``epsilon_perm``.

    Parameters
    ----------
    %(budgets)s
    permanent : {"OUE", "SUE"}, default="OUE"
    instantaneous : {"SUE", "OUE"}, default="SUE"
        OUE reaches only ``epsilon_1`` below a bound set by epsilon_perm (the
        error names it); SUE reaches any ``epsilon_1 < epsilon_perm``.
    %(memo_parameters)s

    Attributes
    ----------
    categories_ : ndarray of shape (k,)
    channel_ : LongitudinalUEChannel
        One report, end to end: generalized RAPPOR at ``epsilon_1``.
    permanent_channel_ : RAPPORChannel
        The memoized round: OUE or SUE at ``epsilon_perm``.
    %(fitted_columns)s

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp.mechanisms import LongitudinalUE
    >>> from sklearn_uldp.utils import generate_user_secrets
    >>> X = np.random.default_rng(0).choice(4, p=[.4, .3, .2, .1], size=(50_000, 1))
    >>> mech = LongitudinalUE(2.0, 1.0, categories=range(4)).fit()
    >>> secrets = generate_user_secrets(len(X))
    >>> reports = mech.transform(X, user_secrets=secrets)
    >>> reports.shape, mech.get_feature_names_out()[:2].tolist()
    ((50000, 4), ['x0_0', 'x0_1'])
    >>> from sklearn_uldp import EmpiricalEstimator
    >>> EmpiricalEstimator().fit(reports).distribution_.round(1).tolist()
    [0.4, 0.3, 0.2, 0.1]
    """

    _parameter_constraints = {
        **_LongitudinalMechanism._parameter_constraints,
        "permanent": [StrOptions({"OUE", "SUE"})],
        "instantaneous": [StrOptions({"OUE", "SUE"})],
    }

    def __init__(
        self,
        epsilon_perm: float = 2.0,
        epsilon_1: float = 1.0,
        *,
        permanent: Literal["OUE", "SUE"] = "OUE",
        instantaneous: Literal["OUE", "SUE"] = "SUE",
        categories: Categories = "auto",
        memo_label: str = "",
        random_state: RandomStateLike = None,
    ) -> None:
        self.permanent = permanent
        self.instantaneous = instantaneous
        super().__init__(epsilon_perm, epsilon_1, categories, memo_label, random_state)

    def _make_channel(self):
        return LongitudinalUEChannel(
            self.categories_, self.epsilon_perm, self.epsilon_1, self.permanent, self.instantaneous
        )


@fill_doc(_DOCS)
class LongitudinalLocalHashing(_LongitudinalMechanism):
    """Longitudinal local hashing (LOLOHA), memoized per hashed value.

    Each user keeps one hash function of the linear family over GF(g) (a
    permanent seed derived from the secret), hashes the value to one of g
    buckets and memoizes a g-ary randomized response of the bucket at
    ``epsilon_perm``; each report is the seed and a fresh g-ary randomized
    response of the memoized bucket, with L-GRR's exact parameters on g
    symbols (Arcolezi, Pinzón, Palamidessi & Gambs, EDBT 2023). One report
    is exactly optimized local hashing at ``epsilon_1`` with range g
    (:attr:`channel_`). The memo is per *bucket*: a user whose value
    changes spends ``epsilon_perm`` per distinct bucket, at most g of them,
    whatever the number of changes.

    Parameters
    ----------
    %(budgets)s
    hash_range : "optimal" or int, default="optimal"
        g, a prime. ``"optimal"`` minimizes the variance of one report (the
        prime closest in variance to ``e^epsilon_1 + 1``; see
        :func:`~sklearn_uldp.mechanisms._local_hashing.optimal_hash_range`);
        ``2`` (BiLOLOHA) bounds the longitudinal budget by 2 epsilon_perm.
    %(memo_parameters)s

    Attributes
    ----------
    categories_ : ndarray of shape (k,)
    hash_range_ : int
    channel_ : LongitudinalLocalHashingChannel
        One report, end to end: local hashing at ``epsilon_1``.
    permanent_channel_ : LocalHashingChannel
        The memoized round: local hashing at ``epsilon_perm``.
    %(fitted_columns)s

    Examples
    --------
    >>> from sklearn_uldp.mechanisms import LongitudinalLocalHashing
    >>> from sklearn_uldp.privacy import check_ldp
    >>> mech = LongitudinalLocalHashing(2.0, 1.0, categories=range(6)).fit()
    >>> mech.hash_range_, bool(check_ldp(mech)), bool(check_ldp(mech.permanent_channel_))
    (3, True, True)
    """

    _reports_are_values = False
    _parameter_constraints = {
        **_LongitudinalMechanism._parameter_constraints,
        "hash_range": [StrOptions({"optimal"}), Interval(Integral, 2, None, closed="left")],
    }

    def __init__(
        self,
        epsilon_perm: float = 2.0,
        epsilon_1: float = 1.0,
        *,
        hash_range: int | Literal["optimal"] = "optimal",
        categories: Categories = "auto",
        memo_label: str = "",
        random_state: RandomStateLike = None,
    ) -> None:
        self.hash_range = hash_range
        super().__init__(epsilon_perm, epsilon_1, categories, memo_label, random_state)

    def _make_channel(self):
        g = self.hash_range
        if isinstance(g, str):
            g = optimal_hash_range(self.epsilon_1, len(self.categories_))
        self.hash_range_ = int(g)
        return LongitudinalLocalHashingChannel(
            self.categories_, self.epsilon_perm, self.epsilon_1, g
        )


@fill_doc(_DOCS)
class DBitFlipPM(_LongitudinalMechanism):
    """dBitFlipPM: d sampled bucket bits, memoized (Ding, Kulkarni & Yekhanin 2017).

    The k categories are grouped into ``n_buckets`` contiguous buckets
    (``bucket(x) = floor(code * b / k)``). Each user samples d distinct
    buckets once (per input column: each column has its own memo), and for
    each draws once the bit to report while the value is in that bucket
    (1 w.p. ``e^(eps/2) / (e^(eps/2) + 1)``) and the bit while it is not
    (1 w.p. ``1 / (e^(eps/2) + 1)``); all of this is derived from the
    user's secret, so a user whose bucket does not change
    sends the same report in every round: epsilon for one value over any
    number of rounds. (A change of bucket can show in the reports; Ding et
    al. discuss it.) The estimated distribution is over the buckets.

    Parameters
    ----------
    epsilon : float, default=1.0
    d : int, default=1
        Buckets sampled (bits sent) per user.
    n_buckets : int or None, default=None
        b; ``None`` is one bucket per category.
    %(categories)s
    %(memo_label)s
    random_state : None, "secure", int, Generator, SeedSequence or RandomState, default=None
        An integer makes missing ``user_secrets`` simulated users
        (simulations only); the mechanism draws no other randomness.

    Attributes
    ----------
    categories_ : ndarray of shape (k,)
    bucket_of_ : ndarray of shape (k,)
        The bucket of each category, an int in [0, b).
    channel_ : DBitFlipChannel
        Over the buckets (its categories are each bucket's first category).
    permanent_channel_ : DBitFlipChannel
        The same channel (every draw is permanent).
    %(fitted_columns)s

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp.mechanisms import DBitFlipPM
    >>> mech = DBitFlipPM(1.0, d=2, n_buckets=4, categories=range(8)).fit()
    >>> mech.bucket_of_.tolist(), mech.channel_.categories.tolist()
    ([0, 0, 1, 1, 2, 2, 3, 3], [0, 2, 4, 6])
    >>> from sklearn_uldp.utils import generate_user_secrets
    >>> reports = mech.transform(np.arange(8).reshape(-1, 1),
    ...                          user_secrets=generate_user_secrets(8))
    >>> sets, bits = mech.channel_.split_reports(reports.ravel())
    >>> sets.shape, bits.shape
    ((8, 2), (8, 2))
    """

    _reports_are_values = False
    _parameter_constraints = {
        "epsilon": [Interval(Real, 0, None, closed="neither")],
        "d": [Interval(Integral, 1, None, closed="left")],
        "n_buckets": [None, Interval(Integral, 2, None, closed="left")],
        "categories": [StrOptions({"auto"}), "array-like"],
        "memo_label": [str],
        "random_state": RANDOM_STATE_CONSTRAINT,
    }
    _parameter_hints = {
        "d": "d is the number of buckets each user samples (bits sent): pass an int >= 1.",
        "n_buckets": "Pass None (one bucket per category) or an int in [2, k].",
        "memo_label": _MEMO_LABEL_HINT,
    }

    def __init__(
        self,
        epsilon: float = 1.0,
        *,
        d: int = 1,
        n_buckets: int | None = None,
        categories: Categories = "auto",
        memo_label: str = "",
        random_state: RandomStateLike = None,
    ) -> None:
        self.epsilon = epsilon
        self.d = d
        self.n_buckets = n_buckets
        self.categories = categories
        self.memo_label = memo_label
        self.random_state = random_state

    def _check_params(self):
        check_epsilon(self.epsilon)

    def _make_channel(self):
        k = len(self.categories_)
        b = k if self.n_buckets is None else int(self.n_buckets)
        if b > k:
            raise ValueError(
                f"n_buckets={b} is more than the k={k} categories: pass n_buckets <= k "
                "(or None, one bucket per category)."
            )
        self.bucket_of_ = (np.arange(k) * b) // k
        first = np.searchsorted(self.bucket_of_, np.arange(b))
        return DBitFlipChannel(self.categories_[first], self.epsilon, self.d)

    def _values(self, codes):
        return self.bucket_of_[codes]

    @fill_doc(_DOCS)
    def exposure(self, n_rounds: int) -> float:
        """Privacy loss of ``n_rounds`` reports of one value: ``epsilon``
        (the same report every round).

        %(exposure_sections)s
        """
        check_is_fitted(self, "channel_")
        _check_rounds(n_rounds)
        return float(self.channel_.epsilon)

    @property
    def epsilon_perm_spent_(self) -> float:
        """Budget of one row's memoized reports: ``epsilon`` per input column
        (each column has its own buckets and bits, so the losses add up)."""
        check_is_fitted(self, "channel_")
        return float(self.n_features_in_ * self.channel_.epsilon)


@fill_doc(_DOCS)
class UtilityOptimizedLongitudinalRR(_LongitudinalMechanism):
    """Utility-optimized longitudinal randomized response (memoized uRR).

    Sensitive values get **both** guarantees -- one report is
    (X_S, epsilon_1)-ULDP, all reports together (X_S, epsilon_perm)-ULDP --
    while non-sensitive values keep uRR's accuracy: one report is exactly
    (X_S, epsilon_1)-uRR (Murakami & Kawamoto 2019). The permanent round is
    uRR's structure at ``epsilon_perm`` on the sensitive values with a
    non-sensitive value kept w.p. ``c3(epsilon_1)``
    (:class:`PermanentURRChannel`, memoized); the instantaneous round is
    k-RR among the sensitive values on a sensitive answer (L-GRR's exact
    parameters on s values) and the identity on a non-sensitive one, so
    protected answers give protected reports and every report is
    post-processing of the permanent answer (ULDP, Prop. 2). The
    derivation is in the mathematics page.

    Parameters
    ----------
    %(budgets)s
    sensitive : array-like, boolean mask or callable
        The sensitive categories X_S (non-empty).
    %(memo_parameters)s

    Attributes
    ----------
    %(uldp_attributes)s
    channel_ : UtilityOptimizedLongitudinalRRChannel
        One report: (X_S, epsilon_1)-uRR.
    permanent_channel_ : PermanentURRChannel
        The memoized round: (X_S, X_S, epsilon_perm)-ULDP.
    %(fitted_columns)s

    Examples
    --------
    >>> from sklearn_uldp.mechanisms import UtilityOptimizedLongitudinalRR
    >>> from sklearn_uldp.privacy import check_uldp
    >>> mech = UtilityOptimizedLongitudinalRR(
    ...     2.0, 1.0, sensitive=["divorced"],
    ...     categories=["married", "single", "divorced"]).fit()
    >>> bool(check_uldp(mech)), bool(check_uldp(mech.permanent_channel_))
    (True, True)
    >>> mech.channel_matrix().round(3).tolist()[2]
    [0.0, 0.0, 1.0]
    """

    _parameter_constraints = {
        **_LongitudinalMechanism._parameter_constraints,
        "sensitive": ["array-like", callable],
    }

    def __init__(
        self,
        epsilon_perm: float = 2.0,
        epsilon_1: float = 1.0,
        *,
        sensitive: Sensitive,
        categories: Categories = "auto",
        memo_label: str = "",
        random_state: RandomStateLike = None,
    ) -> None:
        self.sensitive = sensitive
        super().__init__(epsilon_perm, epsilon_1, categories, memo_label, random_state)

    def _make_channel(self):
        self.sensitive_mask_ = check_sensitive(self.sensitive, self.categories_)
        return UtilityOptimizedLongitudinalRRChannel(
            self.categories_, self.epsilon_perm, self.epsilon_1, self.sensitive_mask_
        )


@fill_doc(_DOCS)
class UtilityOptimizedLongitudinalRAPPOR(_BitReportsMixin, _LongitudinalMechanism):
    """Utility-optimized longitudinal RAPPOR (memoized uRAP).

    The sensitive bits go through L-UE's two rounds (``permanent`` at
    ``epsilon_perm``, memoized, then ``instantaneous``); the bit of a
    non-sensitive value is set in the permanent answer with probability
    ``theta (1 - e^-epsilon_1)`` (revealing the value, as uRAP does) and no
    round touches it again. One report is then exactly
    (X_S, theta, epsilon_1)-uRAP (every estimator of uRAP applies), and all
    reports together are (X_S, Y_P, epsilon_perm)-ULDP. The derivation is in
    the mathematics page.

    Parameters
    ----------
    %(budgets)s
    sensitive : array-like, boolean mask or callable
    permanent : {"OUE", "SUE"}, default="OUE"
    instantaneous : {"SUE", "OUE"}, default="SUE"
    %(memo_parameters)s

    Attributes
    ----------
    %(uldp_attributes)s
    channel_ : UtilityOptimizedLongitudinalRAPPORChannel
        One report: (X_S, theta, epsilon_1)-uRAP.
    permanent_channel_ : PermanentURAPChannel
        The memoized round: (X_S, Y_P, epsilon_perm)-ULDP.
    %(fitted_columns)s

    Examples
    --------
    >>> from sklearn_uldp.mechanisms import UtilityOptimizedLongitudinalRAPPOR
    >>> from sklearn_uldp.privacy import check_uldp
    >>> mech = UtilityOptimizedLongitudinalRAPPOR(2.0, 1.0, sensitive=["c"],
    ...                                           categories=["a", "b", "c"]).fit()
    >>> bool(check_uldp(mech)), bool(check_uldp(mech.permanent_channel_))
    (True, True)
    """

    _parameter_constraints = {
        **LongitudinalUE._parameter_constraints,
        "sensitive": ["array-like", callable],
    }

    def __init__(
        self,
        epsilon_perm: float = 2.0,
        epsilon_1: float = 1.0,
        *,
        sensitive: Sensitive,
        permanent: Literal["OUE", "SUE"] = "OUE",
        instantaneous: Literal["OUE", "SUE"] = "SUE",
        categories: Categories = "auto",
        memo_label: str = "",
        random_state: RandomStateLike = None,
    ) -> None:
        self.sensitive = sensitive
        self.permanent = permanent
        self.instantaneous = instantaneous
        super().__init__(epsilon_perm, epsilon_1, categories, memo_label, random_state)

    def _make_channel(self):
        self.sensitive_mask_ = check_sensitive(self.sensitive, self.categories_)
        return UtilityOptimizedLongitudinalRAPPORChannel(
            self.categories_,
            self.epsilon_perm,
            self.epsilon_1,
            self.sensitive_mask_,
            self.permanent,
            self.instantaneous,
        )
