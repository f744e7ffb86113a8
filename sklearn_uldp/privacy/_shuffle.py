"""Privacy amplification by shuffling, from the mechanism's exact channel.

When a trusted shuffler permutes the reports of n users before the collector
sees them, the collector's view of n epsilon0-LDP reports is (epsilon,
delta)-DP with epsilon far below epsilon0. Three upper bounds are computed
here (the mathematics is on the "Attacks and accounting" page,
``docs/attacks.md``):

* ``"closed_form"``: Feldman, McMillan & Talwar, "Hiding among the clones"
  (FOCS 2021), Theorem 3.1, valid for epsilon0 <= log(n / (16 log(2/delta)));
* ``"clones"``: their numerical bound, the exact hockey-stick divergence of
  the pair the clone reduction leads to (each other user is a clone of the
  victim's two reports w.p. e^-epsilon0), computed here exactly rather than
  bracketed;
* ``"variation_ratio"``: Wang et al., "Privacy amplification via shuffling:
  unified, simplified, and tightened" (VLDB 2024): the same reduction with
  the randomizer's own parameters (p, beta, q), the largest probability
  ratio, total variation and blanket ratio of its channel
  (:func:`variation_ratio_parameters`).

All three reduce to the divergence between two distributions of counts,

    P = victim's symbol (0, 1, 2) w.p. (p a, a, 1 - a - p a)
        + Multinomial(n - 1; r, r, 1 - 2 r) over the others,
    Q = the same with (a, p a, 1 - a - p a),

(a = beta / (p - 1), r = a p / q), computed by conditioning on the number of
clones: exact up to round-off, in O(n) per value of epsilon.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.optimize import brentq
from scipy.stats import binom

from ..mechanisms._channel import Channel
from ._attacks import resolve_channel

if TYPE_CHECKING:
    from ..mechanisms._base import BaseMechanism

__all__ = [
    "ShuffleAmplification",
    "VariationRatio",
    "shuffle_amplification",
    "shuffled_binary_rr_epsilon",
    "variation_ratio_parameters",
]

_METHODS = ("numerical", "closed_form", "clones", "variation_ratio", "exact")

#: Largest n for which the exact shuffled epsilon of binary randomized
#: response is maximized over every composition of the other users.
_EXACT_WORST_CASE_MAX_N = 1000

#: Slack between every computed delta and the target: the computed delta
#: must be below delta (1 - _DELTA_RTOL) - _DELTA_SLACK. It covers the
#: round-off of O(n) sums of binomial probabilities whose two signs nearly
#: cancel (two implementations of the binomial tails differ by about 1e-14
#: absolute, 1e-9 relative, at n = 10^6) and the tails left out (1e-20).
_DELTA_SLACK = 1e-13
_DELTA_RTOL = 1e-7

#: Relative precision of the bisection on epsilon (the result is its upper end).
_EPS_RTOL = 1e-9


@dataclass(frozen=True)
class VariationRatio:
    """The variation-ratio parameters of a randomizer (Wang et al., VLDB 2024).

    Attributes
    ----------
    p : float
        The largest ratio ``Q(y|x) / Q(y|x')`` between two values a user may
        hold (``e^epsilon`` for the mechanisms here).
    beta : float
        The largest total variation distance between the reports of two such
        values.
    q : float
        The largest ratio ``Q(y|x) / Q(y|x'')`` between such a value and any
        value another user may hold (the blanket ratio).
    pairs : str
        ``"all"`` for LDP mechanisms; ``"sensitive"`` for utility-optimized
        ones, whose parameters hold for two sensitive values only.
    clone_share : float
        The largest r with ``R(x) >= r (R(x0) + R(x1))`` for every value x
        and pair (x0, x1): each other user is a clone of the pair w.p. 2r
        (at least e^-eps / 2, Feldman et al.'s value).
    blanket_share : float
        The share of every other user's report law that copies the pair's
        common part (the variation-ratio decomposition's third component).
    """

    p: float
    beta: float
    q: float
    pairs: str = "all"
    clone_share: float = 0.0
    blanket_share: float = 0.0


@dataclass(frozen=True)
class ShuffleAmplification:
    """The collector's (epsilon, delta) after shuffling n reports.

    Attributes
    ----------
    epsilon : float
        The central epsilon: the tightest of the valid bounds for
        ``method="numerical"``, else the one asked for.
    delta : float
    epsilon0 : float
        The local budget of one report (``log max(p, q)``).
    n_users : int
    method : str
        The bound ``epsilon`` comes from.
    bounds : dict of str to float
        Every bound computed (``"closed_form"``: NaN outside its validity
        range, ``"clones"``, ``"variation_ratio_general"`` with the
        parameters of any epsilon0-LDP randomizer, ``"variation_ratio"``
        with the mechanism's own; ``"exact"`` for binary randomized response
        when asked for).
    parameters : VariationRatio or None
        The mechanism's (p, beta, q).
    covers : str
        Which neighbouring datasets the guarantee covers.
    non_sensitive_delta : float or None
        For utility-optimized mechanisms: the probability that a
        non-sensitive value is reported in clear. A change between a
        non-sensitive value and another value is not amplified: when nobody
        else holds that value, the shuffled reports show it with this
        probability, so no epsilon holds with a smaller delta.
    """

    epsilon: float
    delta: float
    epsilon0: float
    n_users: int
    method: str
    bounds: dict = field(repr=False)
    parameters: VariationRatio | None = field(default=None, repr=False)
    covers: str = field(default="", repr=False)
    non_sensitive_delta: float | None = field(default=None, repr=False)

    def __float__(self):
        return float(self.epsilon)


# ------------------------------------------------------------- validation
def _check_n_users(n_users):
    if isinstance(n_users, bool) or not isinstance(n_users, numbers.Integral):
        raise TypeError(f"n_users must be an integer >= 2, got {type(n_users).__name__}.")
    if n_users < 2:
        raise ValueError(
            f"n_users must be >= 2 (shuffling one report hides it among nobody), got {n_users}."
        )
    return int(n_users)


def _check_delta(delta):
    if isinstance(delta, bool) or not isinstance(delta, numbers.Real):
        raise TypeError(f"delta must be a number in (0, 1), got {type(delta).__name__}.")
    delta = float(delta)
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta must be in (0, 1), got {delta}; 1e-6 or 1/n^2 are usual.")
    return delta


def _check_epsilon0(epsilon0):
    if isinstance(epsilon0, bool) or not isinstance(epsilon0, numbers.Real):
        raise TypeError(f"epsilon0 must be a positive number, got {type(epsilon0).__name__}.")
    epsilon0 = float(epsilon0)
    if not (epsilon0 > 0 and math.isfinite(epsilon0)):
        raise ValueError(f"epsilon0 must be a finite number > 0, got {epsilon0}.")
    return epsilon0


# ------------------------------------------------------- the clone pair
def _clone_range(n, r):
    """Counts t of clones outside which the binomial holds less than 1e-20 a side.

    Bernstein's inequality: P(|X - mu| >= u) <= exp(-u^2 / (2 sigma^2 + 2u/3))
    for a sum of Bernoulli variables, so u solving u^2 = L (2 sigma^2 + 2u/3)
    with L = log(1e20) leaves out at most 1e-20 on each side.
    """
    m, prob = n - 1, 2.0 * r
    mean, var = m * prob, m * prob * (1.0 - prob)
    L = math.log(1.0 / _TAIL)
    u = (2.0 * L / 3.0 + math.sqrt(4.0 * L * L / 9.0 + 8.0 * L * var)) / 2.0
    return max(0, int(math.floor(mean - u)) - 1), min(n, int(math.ceil(mean + u)) + 2)


#: Binomial mass left out on each side of the clone counts (accounted for in
#: _DELTA_SLACK).
_TAIL = 1e-20


def _clone_delta(eps, p, alpha, r, n):
    """delta(eps) of the pair (P, Q) of the module docstring, exactly.

    With t clones in the final count (the victim's clone included or not)
    and a of them of kind 0, P(a, t) - e^eps Q(a, t) has the sign of a
    linear function of a (the ratio of multinomial terms), so the positive
    part is a tail sum: binomial survival functions, one per t.
    """
    e = math.exp(eps)
    gamma = max(0.0, 1.0 - alpha - p * alpha)
    r2 = 1.0 - 2.0 * r
    lo, hi = _clone_range(n, r)
    t = np.arange(lo, hi + 1, dtype=np.int64)
    W = binom.pmf(t, n - 1, 2.0 * r)  # t clones among the others, victim not
    Wm = binom.pmf(t - 1, n - 1, 2.0 * r)  # t - 1 among the others, plus the victim
    A1 = (p * alpha - e * alpha) / r  # slope in a of the sign function
    B1 = (alpha - e * p * alpha) / r
    if gamma > 0 and r2 > 0:
        rest = (n - t) * (gamma * (1.0 - e) / r2)
    elif gamma > 0:  # no non-clone among the others: a victim's symbol 2 is
        rest = np.where(n - t > 0, -np.inf, 0.0)  # the same under P and Q
    else:
        rest = np.zeros(t.size)
    with np.errstate(invalid="ignore"):
        threshold = -(t * B1 + rest) / (A1 - B1)
    start = np.where(np.isfinite(threshold), np.floor(threshold) + 1.0, t + 1.0)
    start = np.clip(start, 0, t + 1).astype(np.int64)

    def tail(j, m):  # P(Binomial(m, 1/2) >= j)
        return binom.sf(j - 1, m, 0.5)

    tm1 = np.maximum(t - 1, 0)
    with_victim = (p * alpha - e * alpha) * tail(start - 1, tm1) + (alpha - e * p * alpha) * tail(
        start, tm1
    )
    total = np.where(t >= 1, Wm * with_victim, 0.0)
    if gamma > 0:
        total = total + gamma * (1.0 - e) * W * tail(start, t)
    return float(max(total.sum(), 0.0))


def _bisect(delta_at, delta, upper):
    """The smallest epsilon in [0, upper] with delta_at(epsilon) <= delta.

    delta_at is continuous and non-increasing (a hockey-stick divergence);
    Brent's method finds the crossing, and the returned value is checked
    (moved up until delta_at(epsilon) <= delta - slack holds), so it is an
    upper bound to a relative 1e-9.
    """
    target = delta * (1.0 - _DELTA_RTOL) - _DELTA_SLACK
    if delta_at(upper) > target:
        return upper
    if delta_at(0.0) <= target:
        return 0.0
    root = brentq(lambda e: delta_at(e) - target, 0.0, upper, xtol=1e-15, rtol=_EPS_RTOL)
    step = max(root * _EPS_RTOL, 1e-15)
    eps = min(upper, root + step)
    while delta_at(eps) > target and eps < upper:
        step *= 4.0
        eps = min(upper, root + step)
    return eps


def _clone_epsilon(p, alpha, r, n, delta, epsilon0):
    if r <= 0:
        return epsilon0  # nobody's report can hide the victim's
    return _bisect(lambda eps: _clone_delta(eps, p, alpha, r, n), delta, epsilon0)


#: Largest grid of (clone count, second count) cells the blanket bound sums
#: over per value of epsilon; above it the bound drops the blanket share.
_MAX_CELLS = 1 << 22


def _half_width(m, prob):
    """Bernstein half-width of Binomial(m, prob): 1e-20 of mass beyond it a side."""
    var = m * prob * (1.0 - prob)
    L = math.log(1.0 / _TAIL)
    return int(math.ceil((2.0 * L / 3.0 + math.sqrt(4.0 * L * L / 9.0 + 8.0 * L * var)) / 2.0)) + 2


def _tail(j, m):
    """P(Binomial(m, 1/2) >= j), elementwise (1 for j <= 0, 0 for j > m)."""
    j = np.asarray(j)
    m = np.broadcast_to(np.asarray(m), j.shape)
    inside = (j > 0) & (j <= m)
    out = np.where(j <= 0, 1.0, 0.0)
    out[inside] = binom.sf(j[inside] - 1, m[inside], 0.5)
    return out


def _blanket_delta(eps, p, alpha, r, gamma, s, n):
    """delta(eps) of the variation-ratio pair with a blanket share s.

    The victim's report is clone 0, clone 1 or the pair's common part c
    w.p. (p a, a, gamma) (reversed under the other value); every other user
    is clone 0, clone 1 or a copy of c w.p. (r, r, s), and otherwise draws
    something independent of the victim. The adversary sees the three counts;
    P - e^eps Q at counts (a, b, c) is positive exactly when c is below a
    threshold that grows linearly with a (ratios of multinomial terms). So,
    for each clone count t, a binomial c.d.f. in c per a: 0 for the a whose
    threshold is below every likely c, 1 above every likely c (one binomial
    tail in a for all of them), and computed one by one in the band between.
    None when the band grid is larger than _MAX_CELLS.
    """
    e = math.exp(eps)
    sp = min(1.0, s / (1.0 - 2.0 * r))  # P(copy of c | not a clone)
    t_lo, t_hi = _clone_range(n, r)
    a1 = (p * alpha - e * alpha) / r
    b1 = (alpha - e * p * alpha) / r
    neg_c1 = gamma * (e - 1.0) / s  # -c1 >= 0
    slope = a1 - b1  # > 0 for eps < log p
    t = np.arange(t_lo, t_hi + 1, dtype=np.int64)
    rest_out = np.maximum(n - t, 0)  # others not clones, the victim a clone
    rest_in = np.maximum(n - 1 - t, 0)  # ... the victim a copy of c
    w_c = _half_width(n, sp)
    c_lo = np.maximum(np.floor(rest_in * sp) - w_c, 0.0)
    c_hi = np.ceil(rest_out * sp) + w_c + 1.0

    def first_a(C):  # smallest a with a a1 + (t - a) b1 + C c1 > 0
        return np.clip(np.floor((C * neg_c1 - t * b1) / slope) + 1.0, 0, t + 1).astype(np.int64)

    a_zero, a_full = first_a(c_lo), first_a(c_hi)
    w_a = _half_width(t_hi, 0.5)
    centre = np.rint(t / 2.0).astype(np.int64)
    a_zero = np.maximum(a_zero, centre - w_a)  # below: binomial mass < 1e-20
    a_full = np.maximum(np.minimum(a_full, centre + w_a + 1), a_zero)
    band = int(np.max(a_full - a_zero)) if t.size else 0
    if t.size * max(band, 1) > _MAX_CELLS:
        return None
    w_out = binom.pmf(t - 1, n - 1, 2.0 * r)  # the victim is a clone
    w_in = binom.pmf(t, n - 1, 2.0 * r)  # the victim is a copy of c
    tm1 = np.maximum(t - 1, 0)
    k0, k1 = p * alpha - e * alpha, alpha - e * p * alpha
    # a >= a_full: every likely c is below the threshold
    total = np.where(t >= 1, w_out * (k0 * _tail(a_full - 1, tm1) + k1 * _tail(a_full, tm1)), 0.0)
    total = total + gamma * (1.0 - e) * w_in * _tail(a_full, t)
    if band > 0:
        a = a_zero[:, None] + np.arange(band)[None, :]
        live = a < a_full[:, None]
        T, Tm1 = t[:, None], tm1[:, None]
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            bound = (a * a1 + (T - a) * b1) / neg_c1 if neg_c1 > 0 else np.full(a.shape, np.inf)
        bound = np.nan_to_num(bound, nan=-1.0, posinf=2.0 * n, neginf=-1.0)
        top = np.where(bound > 0, np.ceil(np.minimum(bound, 2.0 * n)) - 1.0, -1.0)
        top = top.astype(np.int64)  # the largest c with a positive P - e^eps Q
        clones = k0 * binom.pmf(a - 1, Tm1, 0.5) + k1 * binom.pmf(a, Tm1, 0.5)
        part = np.where(
            T >= 1, w_out[:, None] * clones * binom.cdf(top, rest_out[:, None], sp), 0.0
        )
        part = part + gamma * (1.0 - e) * w_in[:, None] * binom.pmf(a, T, 0.5) * binom.cdf(
            top - 1, rest_in[:, None], sp
        )
        total = total + np.where(live, np.nan_to_num(part), 0.0).sum(axis=1)
    return float(max(np.nansum(total), 0.0))


def _pair_delta(eps, terms, n):
    """delta(eps) of the variation-ratio reduction for one kind of pair (valid).

    The pair's common part (mass gamma) is hidden among the other users'
    copies of it (blanket share s); with s = 0 the adversary is told when
    the victim's report is the common part, which costs nothing then, so
    delta = (1 - gamma) delta of the clone pair with the victim split p : 1.
    """
    p, beta, q = terms.p, terms.beta, terms.q
    if beta <= 0.0 or p <= 1.0:
        return 0.0
    alpha = beta / (p - 1.0)
    r = alpha * p / q
    gamma = max(0.0, 1.0 - alpha * (p + 1.0))
    if gamma > 0.0 and terms.blanket > 0.0:
        value = _blanket_delta(eps, p, alpha, r, gamma, terms.blanket, n)
        if value is not None:
            return value
    return (1.0 - gamma) * _clone_delta(eps, p, 1.0 / (p + 1.0), r, n)


def _closed_form(epsilon0, n, delta):
    """FMT 2021, Theorem 3.1 (NaN outside its range of validity)."""
    if epsilon0 > math.log(n / (16.0 * math.log(2.0 / delta))):
        return math.nan
    E = math.exp(epsilon0)
    term = 8.0 * math.sqrt(E * math.log(4.0 / delta)) / math.sqrt(n) + 8.0 * E / n
    return min(epsilon0, math.log1p((E - 1.0) / (E + 1.0) * term))


# ------------------------------------------------- exact binary RR
def _rr_delta(eps, others, keep):
    """delta(eps) of binary RR for others' count pmfs (rows), both directions."""
    e = math.exp(eps)
    zero = np.zeros((others.shape[0], 1))
    shifted = np.hstack([zero, others])  # the victim's report is 1
    stay = np.hstack([others, zero])  # ... is 0
    one = keep * shifted + (1.0 - keep) * stay  # victim holds 1
    nil = (1.0 - keep) * shifted + keep * stay  # victim holds 0
    d1 = np.maximum(one - e * nil, 0.0).sum(axis=1)
    d0 = np.maximum(nil - e * one, 0.0).sum(axis=1)
    return float(np.max(np.maximum(d0, d1)))


def shuffled_binary_rr_epsilon(
    epsilon0: float, n_users: int, delta: float, *, n_ones: int | None = 0
) -> float:
    """The exact epsilon of binary randomized response after shuffling.

    Each of ``n_users`` users holds a bit and reports it through binary
    randomized response at ``epsilon0`` (kept w.p. e^eps0 / (e^eps0 + 1));
    the collector sees the number of 1 reports. For two datasets that differ
    in one user's bit, the others holding ``n_ones`` ones, that count is
    ``K + B`` with K the others' count (a sum of two binomials) and B the
    victim's report: its privacy curve is computed exactly, and the result
    is the smallest epsilon with delta(epsilon) <= delta (to a relative
    1e-9). It is a ground truth: every valid upper bound on the shuffled
    epsilon of binary randomized response is at least this value.

    Parameters
    ----------
    epsilon0 : float
    n_users : int
    delta : float
    n_ones : int or None, default=0
        How many of the other users hold 1 (the count is then binomial when
        it is 0: the others all hold the same value). None maximizes over
        every composition, which is the worst case over datasets (for
        ``n_users`` up to 1000: n convolutions).

    Returns
    -------
    epsilon : float

    Examples
    --------
    >>> from sklearn_uldp.privacy import shuffled_binary_rr_epsilon
    >>> round(shuffled_binary_rr_epsilon(1.0, 100_000, 1e-6), 4)
    0.0101
    """
    epsilon0 = _check_epsilon0(epsilon0)
    n = _check_n_users(n_users)
    delta = _check_delta(delta)
    keep = 1.0 / (1.0 + math.exp(-epsilon0))
    if n_ones is None:
        if n > _EXACT_WORST_CASE_MAX_N:
            raise ValueError(
                f"The worst case over every composition of the others is computed for "
                f"n_users <= {_EXACT_WORST_CASE_MAX_N} (n convolutions of n terms); got "
                f"{n}. Pass n_ones (how many others hold 1) for one composition."
            )
        # m and n - 1 - m ones are mirror images (swap the labels 0 and 1)
        compositions = range(0, (n - 1) // 2 + 1)
    else:
        if isinstance(n_ones, bool) or not isinstance(n_ones, numbers.Integral):
            raise TypeError("n_ones must be an integer or None.")
        if not 0 <= n_ones <= n - 1:
            raise ValueError(f"n_ones must be in [0, n_users - 1] = [0, {n - 1}], got {n_ones}.")
        compositions = [int(n_ones)]
    rows = []
    for m in compositions:  # one convolution per composition of the others
        ones = binom.pmf(np.arange(m + 1), m, keep)
        zeros = binom.pmf(np.arange(n - m), n - 1 - m, 1.0 - keep)
        rows.append(np.convolve(ones, zeros) if m else zeros)
    others = np.vstack(rows)
    return _bisect(lambda eps: _rr_delta(eps, others, keep), delta, epsilon0)


# --------------------------------------------- variation-ratio parameters
@dataclass(frozen=True)
class _PairTerms:
    """The reduction's parameters for one kind of victim pair (x0, x1).

    p: the pair's largest probability ratio; beta: its total variation;
    q: the largest ratio between x0 or x1 and any value; clone: the largest
    r with R(x) >= r (R(x0) + R(x1)) for every value x (the symmetric clone
    decomposition); blanket: the share s of every R(x) that is a copy of the
    pair's common part (the variation-ratio decomposition).
    """

    p: float
    beta: float
    q: float
    clone: float
    blanket: float


def _matrix_pair_terms(Q, victims):
    """Distinct _PairTerms over the pairs of ``victims`` (rows of Q), from the matrix."""
    terms = set()
    for a_i, i in enumerate(victims):
        for j in victims[a_i + 1 :]:  # k^2 pairs of a small matrix
            P0, P1 = Q[i], Q[j]
            on = (P0 > 0) | (P1 > 0)
            if np.any(on & ((P0 == 0) | (P1 == 0))):
                return None  # an output only one of them produces: no finite ratio
            with np.errstate(divide="ignore", invalid="ignore"):
                p = float(np.max(np.maximum(P0[on] / P1[on], P1[on] / P0[on])))
                top = np.maximum(P0, P1)
                ratio = np.where(on[None, :], top[None, :] / Q, 0.0)
            q = float(np.max(ratio))
            if not math.isfinite(q):
                return None
            beta = 0.5 * float(np.abs(P0 - P1).sum())
            if p <= 1.0 or beta <= 0.0:
                terms.add((1.0, 0.0, q, 0.5, 0.0))
                continue
            gap = np.abs(P0 - P1)
            common = np.where(P0 == P1, P0, (p * np.minimum(P0, P1) - np.maximum(P0, P1)) / (p - 1))
            # round-off of an exact 0 (p min = max) must not count as common
            common = np.where(common > 1e-12 * np.maximum(P0, P1), common, 0.0)
            gamma = float(common.sum())
            alpha = beta / (p - 1.0)
            r = alpha * p / q
            rest = Q - (p * gap / (q * (p - 1.0)))[None, :]  # R(x) - r (Q0 + Q1)
            blanket = 0.0
            if gamma > 1e-15:
                share = common / gamma
                mask = share > 0
                blanket = float(max(0.0, np.min(rest[:, mask] / share[mask])))
                blanket = min(blanket, 1.0 - 2.0 * r)
            with np.errstate(divide="ignore", invalid="ignore"):
                clone = float(np.min(Q[:, on] / (P0 + P1)[on]))
            terms.add(tuple(float(f"{v:.12g}") for v in (p, beta, q, clone, blanket)))
    return [_PairTerms(*t) for t in sorted(terms)]


def _unary_terms(channel):
    """Pair terms of the unary encodings from a 4-value instance of the same
    bits: every ratio above involves the bits of x0, x1 and one other value
    only (the other bits cancel), so they do not depend on k."""
    from ..mechanisms._rappor import UnaryEncodingChannel

    S = np.asarray(channel.sensitive_mask, dtype=bool)
    mask = [True, True, True] + ([False] if not S.all() else [])
    small = UnaryEncodingChannel(range(len(mask)), channel.epsilon, channel.theta, mask)
    # the instance must have the channel's own bit probabilities
    Q = small._matrix_from(channel.theta, channel.d1, channel._one_minus_d2)
    return _matrix_pair_terms(Q, [0, 1])


def _family_terms(channel):
    """Pair terms in closed form (docs/attacks.md) for the families of the package."""
    from ..mechanisms._block_design import UtilityOptimizedBlockDesignChannel
    from ..mechanisms._hadamard import HadamardResponseChannel, HighLowHadamardChannel
    from ..mechanisms._local_hashing import BinaryLocalHashingChannel, LocalHashingChannel
    from ..mechanisms._randomized_response import (
        RandomizedResponseChannel,
        UtilityOptimizedRRChannel,
    )
    from ..mechanisms._subset_selection import SubsetSelectionChannel
    from ..mechanisms._utility_optimized_subset import UtilityOptimizedSubsetSelectionChannel
    from ._attacks import _is_unary

    eps = float(channel.epsilon)
    E, E1 = math.exp(eps), math.expm1(eps)
    kind = type(channel)
    S = np.asarray(channel.sensitive_mask, dtype=bool)
    s, k = int(S.sum()), channel.n_categories
    fmt = 0.5 / E  # R(x) >= e^-eps (R(x0) + R(x1)) / 2 for any eps-LDP pair
    if kind in (RandomizedResponseChannel, UtilityOptimizedRRChannel):
        # R(x0), R(x1) differ on x0 and x1 only: Q0, Q1 point masses there;
        # the common part is uniform on the s - 2 other sensitive values, of
        # which every row holds at least 1/u a value: blanket = gamma.
        u = s + E1
        return [_PairTerms(E, E1 / u, E, 1.0 / (E + 1.0), (s - 2.0) / u)]
    if _is_unary(channel):
        return _unary_terms(channel)
    if kind is SubsetSelectionChannel:
        d = channel.subset_size
        beta = E1 * d * (k - d) / ((k - 1) * (d * E + k - d))
        if d == 1:
            return [_PairTerms(E, beta, E, 1.0 / (E + 1.0), (k - 2.0) / (E + k - 1.0))]
        # common part: the subsets holding both values or neither (gamma of
        # the mass); a row gives a subset holding both but not its own value
        # 1/Omega where the pair gives E/Omega: blanket = gamma / E
        log_omega = channel._log_omega()
        both = math.exp(float(_log_comb_scalar(k - 2, d - 2)) + eps - log_omega)
        neither = math.exp(float(_log_comb_scalar(k - 2, d)) - log_omega) if d <= k - 2 else 0.0
        gamma = both + neither
        return [_PairTerms(E, beta, E, 0.5 / E, gamma / E)]
    if kind in (UtilityOptimizedBlockDesignChannel, UtilityOptimizedSubsetSelectionChannel):
        h = channel._sizes.astype(float)
        beta = float(E1 * np.sum(channel._weights * h * (s - h) / ((s - 1) * channel._D_h)))
        clone = 0.5 / E if np.any(h >= 2) else 1.0 / (E + 1.0)
        return [_PairTerms(E, beta, E, clone, 0.0)]
    if kind in (LocalHashingChannel, BinaryLocalHashingChannel):
        g = channel.hash_range
        # two values collide w.p. exactly 1/g (a linear family), then g-RR
        return [_PairTerms(E, (1.0 - 1.0 / g) * E1 / (E + g - 1.0), E, fmt, 0.0)]
    if kind is HadamardResponseChannel:
        half = channel.b / 2.0
        same = half * E1 / channel._D * 0.5  # two rows of one block share half their cells
        kinds = []
        if np.any(np.bincount(channel._block) >= 2):
            kinds.append(_PairTerms(E, same, E, fmt, 0.0))
        if channel.n_blocks > 1:  # rows of two blocks share no cell
            kinds.append(_PairTerms(E, 2.0 * same, E, fmt, 0.0))
        return kinds
    if kind is HighLowHadamardChannel:
        return [_PairTerms(E, E1 / (2.0 * (E + 1.0)), E, fmt, 0.0)]
    return None


def _log_comb_scalar(n, r):
    from scipy.special import gammaln

    if r < 0 or r > n:
        return -math.inf
    return gammaln(n + 1.0) - gammaln(r + 1.0) - gammaln(n - r + 1.0)


def _pair_terms(channel):
    """(list of _PairTerms, "all" or "sensitive") of a channel, or an error."""
    numeric = str(getattr(channel, "report_format", "")).startswith("numeric")
    if numeric:
        grid = channel.default_inputs()  # both ends of the bounds included
        Q = np.asarray(channel.matrix(grid), dtype=float)
        mask = np.asarray(channel.sensitive_mask, dtype=bool)
    else:
        mask = np.asarray(channel.sensitive_mask, dtype=bool)
        if int(mask.sum()) < 2:
            raise ValueError(
                f"{channel!r} has {int(mask.sum())} sensitive value(s): shuffling protects "
                "a change between two sensitive values, and there is no such pair. (A "
                "non-sensitive value is reported in clear, which no shuffle hides.)"
            )
        terms = _family_terms(channel)
        if terms is not None:
            return terms, "all" if mask.all() else "sensitive"
        try:
            Q = np.asarray(channel.matrix(), dtype=float)
        except (ValueError, NotImplementedError, MemoryError) as exc:
            raise ValueError(
                f"The shuffle bounds of {channel!r} are read from its matrix, which is "
                f"only built for small domains ({exc})."
            ) from None
    victims = np.flatnonzero(mask).tolist()
    if len(victims) < 2:
        raise ValueError(f"{channel!r} has fewer than two sensitive inputs.")
    terms = _matrix_pair_terms(Q, victims)
    if terms is None:
        raise ValueError(
            f"{channel!r} has outputs that some values cannot produce (an infinite "
            "probability ratio): other users' reports cannot hide a user's, so "
            "shuffling amplifies nothing here. (Block Hadamard response reports the "
            "block in clear; the identity mechanism reports the value.)"
        )
    return terms, "all" if mask.all() else "sensitive"


def variation_ratio_parameters(
    mechanism: BaseMechanism | Channel | dict[str, Any],
) -> VariationRatio:
    """The variation-ratio parameters (p, beta, q) of a mechanism's channel.

    ``p`` bounds the ratio of the report probabilities of two values a user
    may hold, ``beta`` their total variation distance, and ``q`` the ratio
    between such a value and any value of another user (Wang et al., VLDB
    2024). For utility-optimized mechanisms the two values are sensitive
    (``pairs="sensitive"``): a non-sensitive value's clear report has no
    finite ratio. ``clone_share`` and ``blanket_share`` are the two shares
    of the other users' reports the bounds of :func:`shuffle_amplification`
    use (docs/attacks.md). Closed forms serve k-RR, uRR, RAPPOR/OUE/uRAP,
    subset selection, uBD/uSS, local hashing and Hadamard response; any other
    channel is read from its matrix (small domains; numeric channels on
    their grid of inputs).

    Parameters
    ----------
    mechanism : fitted mechanism, Channel or spec dict

    Returns
    -------
    parameters : VariationRatio
        The largest ``p``, ``beta``, ``q`` and the smallest shares over the
        pairs of values.

    Examples
    --------
    >>> from sklearn_uldp import RandomizedResponse
    >>> from sklearn_uldp.privacy import variation_ratio_parameters
    >>> vr = variation_ratio_parameters(RandomizedResponse(1.0, categories=range(4)))
    >>> round(vr.p, 4), round(vr.beta, 4), round(vr.q, 4)  # beta = (e - 1) / (e + 3)
    (2.7183, 0.3005, 2.7183)
    """
    channel = resolve_channel(mechanism)
    terms, pairs = _pair_terms(channel)
    return VariationRatio(
        p=max(t.p for t in terms),
        beta=max(t.beta for t in terms),
        q=max(t.q for t in terms),
        pairs=pairs,
        clone_share=min(t.clone for t in terms),
        blanket_share=min(t.blanket for t in terms),
    )


def _invertible_mass(channel):
    """The largest probability that a non-sensitive value is reported in clear."""
    S = np.asarray(channel.sensitive_mask, dtype=bool)
    if S.all():
        return None
    from ._attacks import _is_unary, _subset_structure

    if _is_unary(channel):
        return float(channel._one_minus_d2)
    structure = _subset_structure(channel)
    if structure is not None:
        return float(structure[4])
    try:
        Q = np.asarray(channel.matrix(), dtype=float)
        protected = np.asarray(channel.protected_outputs(), dtype=bool)
    except (ValueError, NotImplementedError, MemoryError):
        return None
    return float(np.max(Q[~S][:, ~protected].sum(axis=1)))


# ---------------------------------------------------------------- entry
def shuffle_amplification(
    mechanism: BaseMechanism | Channel | dict[str, Any] | float,
    n_users: int,
    delta: float,
    method: str = "numerical",
) -> ShuffleAmplification:
    """The collector's (epsilon, delta) after shuffling ``n_users`` reports.

    Every user sends one report of ``mechanism``; a shuffler permutes them.
    The bounds (docs/attacks.md) are those of Feldman, McMillan & Talwar
    (FOCS 2021: the closed form of their Theorem 3.1 and their numerical
    clone bound) and the variation-ratio bound of Wang et al. (VLDB 2024)
    with the mechanism's own parameters (:func:`variation_ratio_parameters`),
    all computed from the exact channel. Each is a valid upper bound; the
    default returns the smallest.

    For utility-optimized mechanisms the guarantee covers two datasets that
    differ in one user's value when both values are sensitive (the other
    users' values are arbitrary, non-sensitive ones included: their
    protected reports hide the victim's as well). A change to or from a
    non-sensitive value is not amplified: that value's clear report shows
    (``non_sensitive_delta``).

    Parameters
    ----------
    mechanism : fitted mechanism, Channel, spec dict or float
        The local randomizer; a number is the budget epsilon0 of a generic
        epsilon0-LDP randomizer (p = q = e^eps0, beta = tanh(eps0 / 2)).
    n_users : int
        Number of reports shuffled together (>= 2).
    delta : float
        In (0, 1).
    method : {"numerical", "closed_form", "clones", "variation_ratio", "exact"}, \
default="numerical"
        ``"numerical"``: the smallest of the valid bounds. ``"exact"``:
        binary randomized response only, the exact worst case over the
        others' values (:func:`shuffled_binary_rr_epsilon`, n_users <= 1000).

    Returns
    -------
    amplification : ShuffleAmplification
        ``epsilon`` (central), ``delta``, ``epsilon0`` (local), every bound
        in ``bounds``, the mechanism's ``parameters`` and what the guarantee
        ``covers``.

    Examples
    --------
    >>> from sklearn_uldp import RandomizedResponse
    >>> from sklearn_uldp.privacy import shuffle_amplification
    >>> rr = RandomizedResponse(1.0, categories=[0, 1])
    >>> amp = shuffle_amplification(rr, n_users=100_000, delta=1e-6)
    >>> round(amp.epsilon, 4), amp.method, round(amp.bounds["closed_form"], 4)
    (0.0124, 'variation_ratio', 0.0726)
    """
    n = _check_n_users(n_users)
    delta = _check_delta(delta)
    if method not in _METHODS:
        raise ValueError(f"method must be one of {list(_METHODS)}, got {method!r}.")
    non_sensitive_delta = None
    if isinstance(mechanism, numbers.Real) and not isinstance(mechanism, bool):
        epsilon0 = _check_epsilon0(mechanism)
        E = math.exp(epsilon0)
        terms, pairs = None, "all"
        params = VariationRatio(E, math.tanh(epsilon0 / 2.0), E, pairs, 0.5 / E, 0.0)
        channel = None
    else:
        channel = resolve_channel(mechanism)
        terms, pairs = _pair_terms(channel)
        params = VariationRatio(
            p=max(t.p for t in terms),
            beta=max(t.beta for t in terms),
            q=max(t.q for t in terms),
            pairs=pairs,
            clone_share=min(t.clone for t in terms),
            blanket_share=min(t.blanket for t in terms),
        )
        # The local budget: the largest ratio anything in the reduction uses.
        epsilon0 = math.log(max(params.p, params.q))
        if str(getattr(channel, "report_format", "")) != "numeric":
            non_sensitive_delta = _invertible_mass(channel)
    E0 = math.exp(epsilon0)
    bounds = {}
    if method in ("numerical", "closed_form"):
        bounds["closed_form"] = _closed_form(epsilon0, n, delta)
    if method in ("numerical", "clones"):
        # FMT: the victim's two reports split (e^eps0, 1)/(e^eps0 + 1) and
        # every other user is a clone of either w.p. e^-eps0 / 2.
        bounds["clones"] = _clone_epsilon(E0, 1.0 / (E0 + 1.0), 0.5 / E0, n, delta, epsilon0)
    if method in ("numerical", "clones") and terms is not None:
        # the same with the channel's own clone share (>= e^-eps0 / 2)
        r = params.clone_share
        p_max = params.p
        if r > 0.5 / E0 * (1.0 + 1e-12):
            bounds["strong_clones"] = _clone_epsilon(
                p_max, 1.0 / (p_max + 1.0), r, n, delta, epsilon0
            )
        else:
            bounds["strong_clones"] = bounds["clones"]
    if method in ("numerical", "variation_ratio") and terms is not None:
        # The largest over the kinds of pairs (each delta falls with epsilon).
        # For "numerical" the search stops at the best bound so far: a value
        # the variation ratio cannot beat is recorded as inf.
        others = [v for v in bounds.values() if not math.isnan(v)]
        upper = min([epsilon0, *others]) if method == "numerical" else epsilon0
        worst = 0.0
        for t in terms:
            worst = max(worst, _bisect(lambda eps, t=t: _pair_delta(eps, t, n), delta, upper))
            if worst >= upper and method == "numerical":
                break
        bounds["variation_ratio"] = worst if (worst < upper or method != "numerical") else math.inf
        # Wang et al.'s own formula, for comparison only and never chosen
        # (docs/attacks.md: it treats the victim's common part as
        # exchangeable with every other user's non-clone report, which
        # underestimates delta for some channels).
        alpha = params.beta / (params.p - 1.0) if params.p > 1.0 else 0.0
        r = alpha * params.p / params.q
        bounds["variation_ratio_published"] = (
            _clone_epsilon(params.p, alpha, r, n, delta, epsilon0) if alpha > 0 else 0.0
        )
    if method == "exact":
        if channel is None or not _is_binary_rr(channel):
            raise ValueError(
                'method="exact" is for binary randomized response (RandomizedResponse '
                "on two categories), whose shuffled count has an exact law; use "
                '"numerical" for other mechanisms.'
            )
        bounds["exact"] = shuffled_binary_rr_epsilon(epsilon0, n, delta, n_ones=None)
    if method == "numerical":
        # the mechanism's own bounds first: they win ties
        order = ("variation_ratio", "strong_clones", "clones", "closed_form")
        valid = [name for name in order if name in bounds and not math.isnan(bounds[name])]
        chosen = min(valid, key=bounds.get)
    else:
        chosen = method
    eps = bounds[chosen]
    if math.isnan(eps):  # the closed form outside its range: no amplification claimed
        eps = epsilon0
    covers = (
        "two datasets that differ in one user's value (the other users' values arbitrary)"
        if pairs == "all"
        else "two datasets that differ in one user's value when both values are sensitive "
        "(the other users' values arbitrary); a change involving a non-sensitive value "
        "is not amplified"
    )
    return ShuffleAmplification(
        epsilon=float(min(eps, epsilon0)),
        delta=delta,
        epsilon0=epsilon0,
        n_users=n,
        method=chosen,
        bounds=bounds,
        parameters=params,
        covers=covers,
        non_sensitive_delta=non_sensitive_delta,
    )


def _is_binary_rr(channel):
    from ..mechanisms._randomized_response import RandomizedResponseChannel

    return type(channel) is RandomizedResponseChannel and channel.n_categories == 2
