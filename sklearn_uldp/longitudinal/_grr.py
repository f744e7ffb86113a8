"""Longitudinal k-ary randomized response (L-GRR), and the k-RR rounds others share.

Two k-RR rounds compose into k-RR whose keep-minus-move gap is the product
of theirs: the exact instantaneous parameters (:func:`_lgrr_instantaneous`)
and the exact loss of many reports of one memoized k-RR answer
(:func:`_grr_memo_exposure`) serve L-GRR, LOLOHA (on its g buckets) and the
sensitive block of the utility-optimized longitudinal RR.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from scipy.special import logsumexp
from sklearn.utils._param_validation import StrOptions

from ..mechanisms._memo import check_rounds
from ..mechanisms._randomized_response import RandomizedResponseChannel
from ..utils._docstrings import fill_doc
from ..utils._sampling import randomized_response_codes, randomized_response_move_counts
from ..utils._typing import ArrayLike, Categories, RandomStateLike
from ..utils._validation import check_channel_categories, check_realizable, realized_probability
from ._base import (
    _BUDGET_SCHEMAS,
    _DOCS,
    _check_budgets,
    _LongitudinalMechanism,
    _LongitudinalMixin,
)

__all__ = ["LongitudinalGRR", "LongitudinalGRRChannel"]


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
    >>> from sklearn_uldp.longitudinal import LongitudinalGRRChannel
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
            check_rounds(n_rounds), k, self.p1, (1 - self.p1) / (k - 1), self.p2, self.q2
        )


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
    >>> from sklearn_uldp.longitudinal import LongitudinalGRR
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
