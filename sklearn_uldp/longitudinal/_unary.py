"""Longitudinal unary encoding (L-SUE, L-OSUE, L-OUE, L-SOUE), and the unary rounds others share.

A unary round keeps a 1 bit with probability p and sets a 0 bit with
probability q; two rounds compose bit by bit. The instantaneous round's
parameter solved for ``epsilon_1`` (:func:`_ue_instantaneous`), the exact
loss of many memoized unary reports (:func:`_ue_memo_exposure`) and the
in-place instantaneous flips (:func:`_ue_instantaneous_bits`) serve L-UE,
the sensitive bits of the utility-optimized longitudinal RAPPOR and (the
per-bit loss) RAPPOR over Bloom filters.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from scipy.optimize import brentq
from sklearn.utils._param_validation import StrOptions

from ..mechanisms._memo import SecretDraws, check_rounds
from ..mechanisms._rappor import RAPPORChannel, _byte_realized
from ..utils._docstrings import fill_doc
from ..utils._sampling import bernoulli_or_coin, bernoulli_xor
from ..utils._typing import ArrayLike, Categories, RandomStateLike
from ..utils._validation import check_channel_categories, check_realizable
from ._base import (
    _BUDGET_SCHEMAS,
    _DOCS,
    _BitReportsMixin,
    _check_budgets,
    _LongitudinalMechanism,
    _LongitudinalMixin,
)

__all__ = ["LongitudinalUE", "LongitudinalUEChannel"]


def _ue_round(kind, epsilon):
    """(p, q) of one unary-encoding round: OUE (1/2, 1/(e^eps+1)) or SUE."""
    # e^eps may overflow to inf (epsilon > ~709): q is then exactly 0, its
    # limit (the realizability checks refuse such budgets).
    with np.errstate(over="ignore"):
        q = 1.0 / (1.0 + np.exp(epsilon if kind == "OUE" else epsilon / 2.0))
    return (0.5, q) if kind == "OUE" else (1.0 - q, q)


def _ue_permanent_round(kind, epsilon):
    """:func:`_ue_round` of the permanent round, refusing a round that keeps every bit.

    Refused before the logarithms of the composed rounds (log 0) run.
    """
    p, q = _ue_round(kind, epsilon)
    if q == 0.0:
        raise ValueError(
            f"epsilon_perm={epsilon!r} is too large for a float64 channel: the "
            f"permanent {kind} round would keep every bit (probability 1), which "
            "releases the raw value. Pass a budget below about 36."
        )
    return p, q


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
    >>> from sklearn_uldp.longitudinal import LongitudinalUEChannel
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
        self.p1, self.q1 = _ue_permanent_round(self.permanent, self.epsilon_perm)
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

    def _sample_reports(self, values, draws, rng):
        """Both rounds in one compiled pass over the users' keystreams.

        Each permanent bit b (memoized, from the users' secrets) is flipped
        at once with probability ``f_b`` from ``rng``: SUE ``f_0 = f_1 =
        q2``; OUE ``f_0 = q2`` (a 0 bit becomes Bernoulli(q2)) and ``f_1 =
        1/2`` (a 1 bit a fair coin). Realized as the two separate rounds
        realize them (one random byte a bit, a uniform on ties: the same
        :meth:`realized_matrix`), without the permanent bits ever stored.
        """
        if not isinstance(draws, SecretDraws):  # a simulation: nothing memoized
            return super()._sample_reports(values, draws, rng)
        codes = np.asarray(values, dtype=np.intp)
        k = self.n_categories
        flip_one = 0.5 if self.instantaneous == "OUE" else self.q2
        flips = ((self.q2, flip_one), rng)
        bits = draws.bernoulli("bits", codes, np.full(k, self.q1), codes, self.p1, flips=flips)
        return bits.view(np.uint8)

    def realized_matrix(self):
        """Both rounds as the mechanism realizes them (bytes and ties)."""
        ps, qs = _realized_ue_bits(self.p1, self.q1, self.instantaneous, self.q2)
        return self._matrix_from(ps, qs, 0.0)

    def exposure(self, n_rounds):
        return _ue_memo_exposure(check_rounds(n_rounds), self.p1, self.q1, self.p2, self.q2)


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
    # Compiled passes per chunk, in place: bernoulli_xor draws what
    # bernoulli_matrix draws; bernoulli_or_coin draws that, then the coins.
    # Both need C-contiguous cells: a chunk of some columns (or of a
    # non-contiguous array) is copied and written back.
    buf = np.empty(min(step, n) * width, dtype=np.uint8) if kind == "OUE" else None
    for lo in range(0, n, step):
        hi = min(n, lo + step)
        rows = out[lo:hi] if columns is None else out[lo:hi][:, columns]
        block = rows if rows.flags.c_contiguous else np.ascontiguousarray(rows)
        if kind == "SUE":
            bernoulli_xor(block, q2, rng)
        else:
            bernoulli_or_coin(block, q2, rng, buf)
        if columns is not None:
            out[lo:hi, columns] = block
        elif block is not rows:
            out[lo:hi] = block
    return out


def _realized_ue_bits(p1, q1, kind, q2):
    """Per-bit P(1 | true bit 1), P(1 | true bit 0) as the two rounds realize them."""
    p1r, q1r = _byte_realized(p1), _byte_realized(q1)
    f = _byte_realized(q2)
    p2r, q2r = (1.0 - f, f) if kind == "SUE" else (0.5, f)
    return _ue_compose(p1r, q1r, p2r, q2r)


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
    >>> from sklearn_uldp.longitudinal import LongitudinalUE
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
