"""Utility-optimized memoized mechanisms: longitudinal uRR and uRAP (new; mathematics §7.7-7.8).

Sensitive values get both guarantees (``epsilon_1`` per report,
``epsilon_perm`` for all reports of one value) while non-sensitive values
keep uRR's (uRAP's) accuracy: one report is exactly uRR (uRAP) at
``epsilon_1``. The permanent rounds are ULDP channels of their own
(:class:`PermanentURRChannel`, :class:`PermanentURAPChannel`), and the
instantaneous rounds map protected answers to protected reports (ULDP's
post-processing, Murakami & Kawamoto 2019, Prop. 2).
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from ..mechanisms._channel import CategoricalChannel
from ..mechanisms._memo import GeneratorDraws, check_rounds
from ..mechanisms._randomized_response import UtilityOptimizedRRChannel
from ..mechanisms._rappor import UnaryEncodingChannel, _byte_realized
from ..utils._docstrings import fill_doc
from ..utils._sampling import randomized_response_codes
from ..utils._typing import ArrayLike, Categories, RandomStateLike, Sensitive
from ..utils._validation import (
    check_channel_categories,
    check_realizable,
    check_sensitive,
    check_sensitive_mask,
)
from ._base import (
    _BUDGET_SCHEMAS,
    _DOCS,
    _BitReportsMixin,
    _check_budgets,
    _LongitudinalMechanism,
    _LongitudinalMixin,
    _TwoBudgetsMixin,
)
from ._grr import (
    _check_lgrr_realizable,
    _grr_memo_exposure,
    _lgrr_instantaneous,
    _realized_grr_round,
    _realized_rr_codes,
)
from ._unary import (
    LongitudinalUE,
    LongitudinalUEChannel,
    _check_ue_kinds,
    _check_ue_realizable,
    _realized_ue_bits,
    _ue_bit_log_ratio,
    _ue_compose,
    _ue_instantaneous,
    _ue_instantaneous_bits,
    _ue_loss,
    _ue_permanent_round,
    _ue_round,
)

__all__ = [
    "UtilityOptimizedLongitudinalRR",
    "UtilityOptimizedLongitudinalRRChannel",
    "PermanentURRChannel",
    "UtilityOptimizedLongitudinalRAPPOR",
    "UtilityOptimizedLongitudinalRAPPORChannel",
    "PermanentURAPChannel",
]


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
    >>> from sklearn_uldp.longitudinal import PermanentURRChannel
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
        return _sample_permanent_urr(self, codes, GeneratorDraws(rng))


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
    >>> from sklearn_uldp.longitudinal import UtilityOptimizedLongitudinalRRChannel
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
        tau = check_rounds(n_rounds)
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
    >>> from sklearn_uldp.longitudinal import PermanentURAPChannel
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
        self.p1, self.q1 = _ue_permanent_round(self.permanent, self.epsilon_perm)
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
        return _sample_permanent_urap(self, codes, GeneratorDraws(rng))


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
    >>> from sklearn_uldp.longitudinal import UtilityOptimizedLongitudinalRAPPORChannel
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
        tau = check_rounds(n_rounds)
        log_ratio = _ue_bit_log_ratio(tau, self.p1, self.q1, self.p2, self.q2)
        worst = float(log_ratio.max() + (-log_ratio).max())
        if self._s_codes.size < self.n_categories:
            hide = np.log1p(-self._permanent.reveal)  # a non-sensitive x unrevealed
            worst = max(worst, float(log_ratio.max()) - hide, hide + float((-log_ratio).max()))
        return worst


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
    >>> from sklearn_uldp.longitudinal import UtilityOptimizedLongitudinalRR
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
    >>> from sklearn_uldp.longitudinal import UtilityOptimizedLongitudinalRAPPOR
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
