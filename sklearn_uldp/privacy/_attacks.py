"""What an adversary learns from one report: the Bayes-optimal attack success rate.

An adversary who knows the channel Q(y | x) and a prior pi over the values
reads one report y and guesses the value. The guess that maximizes the
chance of being right is the posterior mode, argmax_x pi(x) Q(y | x), and
its success rate is

    ASR = sum_y max_x pi(x) Q(y | x)

(the Bayes vulnerability of the channel; Arcolezi & Gambs, arXiv 2503.01482,
call it the attacker success rate of the data reconstruction attack). It is
computed here from the exact channel of every mechanism of the package,
without enumerating the outputs where there are too many: the bit vectors
of the unary-encoding family factorize over bits given x, so the maximum is
the maximum of independent two-point variables; the subset family
(subset selection, uBD, uSS) reduces to a sum over the position of a
subset's top element; the other channels are read row block by row block.
The derivations are on the "Attacks and accounting" page (``docs/attacks.md``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.special import gammaln
from scipy.stats import binom

from ..mechanisms._base import as_channel
from ..mechanisms._channel import CategoricalChannel, Channel
from ..utils._typing import ArrayLike

if TYPE_CHECKING:
    from ..mechanisms._base import BaseMechanism

__all__ = ["AttackSuccess", "attack_success_rate"]

#: Relative tolerance under which two values of pi(x) Q(y|x) count as a tie
#: (the channels' structured products differ from the exact value by a few
#: ulps, which must not decide who wins; real differences are far larger).
_TIE_RTOL = 1e-9

#: Entries of a channel matrix read at once (rows of the matrix are built in
#: blocks of at most this many entries).
_BLOCK_ENTRIES = 1 << 22


@dataclass(frozen=True)
class AttackSuccess:
    """The success of a Bayes-optimal adversary reading one report.

    Attributes
    ----------
    rate : float
        ``sum_y max_x pi(x) Q(y|x)``: the probability that the posterior
        mode is the user's true value.
    baseline : float
        ``max_x pi(x)``: the success of a guess made without the report.
    per_value : ndarray of shape (k,) or None
        ``P(guess = x | X = x)`` for each value, ties between values of equal
        posterior split uniformly at random; NaN where ``pi(x) = 0``. None
        when it is not computed (a subset-type channel too large for its
        matrix under a prior with some, but not all, values equal).
    sensitive : float or None
        The success given a sensitive value, ``sum_{x in X_S} pi(x)
        P(guess = x | X = x) / pi(X_S)`` (equal to ``rate`` for LDP
        mechanisms); None with ``per_value``.
    non_sensitive : float or None
        The same over the non-sensitive values; None when there are none
        (or with ``per_value``).
    expected_posterior : float or None
        ``E[pi(X | Y)]``: the success of an adversary who *samples* its guess
        from the posterior (Arcolezi & Gambs' expected posterior view),
        computed when the channel's matrix is read (None for the structured
        bit-vector paths).
    closed_form : float or None
        The closed form of ``rate`` under a uniform prior where one exists
        (k-RR, uRR, RAPPOR/OUE/uRAP, subset selection, uBD/uSS); None
        otherwise, or under another prior.
    prior : ndarray of shape (k,)
        The prior used.

    Examples
    --------
    >>> from sklearn_uldp import RandomizedResponse
    >>> from sklearn_uldp.privacy import attack_success_rate
    >>> asr = attack_success_rate(RandomizedResponse(1.0, categories=range(4)))
    >>> round(asr.rate, 4), round(asr.closed_form, 4), asr.baseline
    (0.4754, 0.4754, 0.25)
    """

    rate: float
    baseline: float
    per_value: np.ndarray | None = field(repr=False)
    sensitive: float | None
    non_sensitive: float | None
    expected_posterior: float | None
    closed_form: float | None
    prior: np.ndarray = field(repr=False)


# ----------------------------------------------------------------- helpers
def resolve_channel(mechanism):
    """The channel of a mechanism (categorical or numeric), channel or spec dict."""
    if isinstance(mechanism, Channel):
        return mechanism
    fitted = getattr(mechanism, "channel_", None)
    if isinstance(fitted, Channel):
        return fitted
    if hasattr(mechanism, "_make_channel") and not hasattr(mechanism, "categories"):
        # an unfitted numeric mechanism: its channel needs no data
        return mechanism._make_channel()
    return as_channel(mechanism)


def _check_prior(prior, k):
    if prior is None:
        return np.full(k, 1.0 / k)
    if isinstance(prior, (str, bytes)):
        raise TypeError(f"prior must be an array of {k} probabilities or None, got a string.")
    p = np.asarray(prior, dtype=float)
    if p.shape != (k,):
        raise ValueError(
            f"prior must hold one probability per input value ({k}), got shape {p.shape}."
        )
    if not np.all(np.isfinite(p)) or np.any(p < 0):
        raise ValueError("prior must hold finite probabilities >= 0.")
    total = p.sum()
    if not math.isclose(total, 1.0, rel_tol=0, abs_tol=1e-9):
        raise ValueError(f"prior must sum to 1, got {total:.12g}; normalize it first.")
    return p / total


def _log_comb(n, r):
    n = np.asarray(n, dtype=float)
    r = np.asarray(r, dtype=float)
    return gammaln(n + 1.0) - gammaln(r + 1.0) - gammaln(n - r + 1.0)


def _class_summaries(per_value, prior, sensitive):
    if per_value is None:
        return None, None
    ok = prior > 0
    out = []
    for mask in (sensitive, ~sensitive):
        mass = prior[mask].sum()
        if not mask.any() or mass <= 0:
            out.append(None)
        else:
            out.append(float(np.sum(prior[mask & ok] * per_value[mask & ok]) / mass))
    return out[0], out[1]


def _result(rate, prior, per_value, sensitive, closed, posterior=None):
    if per_value is not None:
        per_value = np.where(prior > 0, per_value, np.nan)
    s_rate, n_rate = _class_summaries(per_value, prior, sensitive)
    return AttackSuccess(
        rate=float(rate),
        baseline=float(prior.max()),
        per_value=per_value,
        sensitive=s_rate,
        non_sensitive=n_rate,
        expected_posterior=None if posterior is None else float(posterior),
        closed_form=closed,
        prior=prior,
    )


# ------------------------------------------------------- the matrix path
def _matrix_rows(channel, inputs):
    """Yield ``(rows, Q_block)``: the channel matrix, a block of rows at a time."""
    if inputs is not None:
        Q = np.asarray(channel.matrix(inputs), dtype=float)
        yield np.arange(Q.shape[0]), Q
        return
    k, n_out = channel.n_categories, int(channel.n_outputs)
    hashed = _hash_rows(channel)
    if hashed is not None and k * n_out > _BLOCK_ENTRIES:
        yield from hashed
        return
    if k * n_out <= _BLOCK_ENTRIES or not isinstance(channel, CategoricalChannel):
        try:
            Q = np.asarray(channel.matrix(), dtype=float)
        except (ValueError, NotImplementedError, MemoryError) as exc:
            raise ValueError(
                f"{channel!r} has {n_out} outputs: its attack success rate is computed "
                "from its matrix, which is only built for small domains here "
                f"({exc})."
            ) from None
        yield np.arange(k), Q
        return
    step = max(1, _BLOCK_ENTRIES // n_out)
    for lo in range(0, k, step):
        rows = np.arange(lo, min(k, lo + step))
        eye = np.zeros(k)
        block = np.empty((rows.size, n_out))
        for i, x in enumerate(rows):  # one structured product per input value
            eye[x] = 1.0
            block[i] = channel.forward(eye)
            eye[x] = 0.0
        yield rows, block


def _hash_rows(channel):
    """Row blocks of local hashing from its hash table (no FFT per row)."""
    from ..mechanisms._local_hashing import (
        BinaryLocalHashingChannel,
        LocalHashingChannel,
        linear_hash_table,
    )

    if type(channel) not in (LocalHashingChannel, BinaryLocalHashingChannel):
        return None
    g, H, k = channel.hash_range, channel.n_seeds, channel.n_categories
    R = np.where(np.eye(g, dtype=bool), channel.c1, channel.c2) / H
    table = linear_hash_table(g, channel.n_digits, k).astype(np.intp)  # (H, k)
    step = max(1, _BLOCK_ENTRIES // (H * g))

    def blocks():
        for lo in range(0, k, step):
            rows = np.arange(lo, min(k, lo + step))
            # Q[x, (a, y)] = R[h_a(x), y] / H
            yield rows, R[table[:, rows].T].reshape(rows.size, H * g)

    return blocks()


def _matrix_path(channel, prior, inputs=None):
    """rate, per-value rates and expected posterior from the matrix, in blocks.

    Three passes over the rows: the column maxima (and sums), the number of
    values tied at each maximum, and each value's share of the columns it
    wins. A matrix that fits in one block is built once.
    """
    k = prior.size
    cached = None
    col_max = col_sum = None
    for rows, Q in _matrix_rows(channel, inputs):
        if col_max is None:
            col_max = np.zeros(Q.shape[1])
            col_sum = np.zeros(Q.shape[1])
            if rows.size == k:
                cached = [(rows, Q)]
        V = prior[rows, None] * Q
        np.maximum(col_max, V.max(axis=0), out=col_max)
        col_sum += V.sum(axis=0)

    def again():
        return iter(cached) if cached is not None else _matrix_rows(channel, inputs)

    floor = col_max * (1.0 - _TIE_RTOL)
    ties = np.zeros(col_max.size)
    square = 0.0
    safe_sum = np.where(col_sum > 0, col_sum, 1.0)
    for rows, Q in again():
        V = prior[rows, None] * Q
        ties += ((V >= floor) & (V > 0)).sum(axis=0)
        square += float(np.sum(V * V / safe_sum))
    share = 1.0 / np.maximum(ties, 1.0)
    per_value = np.zeros(k)
    for rows, Q in again():
        V = prior[rows, None] * Q
        win = (V >= floor) & (V > 0)
        per_value[rows] = np.sum(np.where(win, Q * share, 0.0), axis=1)
    return float(col_max.sum()), per_value, square


# ------------------------------------------------- the unary-encoding path
def _is_unary(channel):
    from ..mechanisms._rappor import UnaryEncodingChannel

    return isinstance(channel, UnaryEncodingChannel) and (
        type(channel).matrix is UnaryEncodingChannel.matrix
    )


def _unary_parameters(channel):
    theta = float(channel.theta)
    d1 = float(channel.d1)
    reveal = float(channel._one_minus_d2)  # a non-sensitive value's own bit
    r = theta / d1  # likelihood ratio of a set sensitive own bit
    w = (1.0 - theta) / (1.0 - d1)  # ... of an unset one
    return theta, d1, reveal, r, w


def _unary_path(channel, prior):
    """ASR of the unary encodings (RAPPOR, OUE, uRAP) without 2^k outputs.

    Given x the bits are independent: Q(y|x) = B(y) g_x(y_x), B the law of
    the bits under no input (sensitive bits Bernoulli(d1), non-sensitive
    bits 0) and g_x the likelihood ratio of x's own bit (r = theta/d1 when
    set, w = (1-theta)/(1-d1) when not; d2 = 1 - reveal for a non-sensitive
    x on a protected report). So pi(x) Q(y|x) = B(y) V_x with V_x independent
    under B, and the protected reports contribute E_B[max_x V_x]; an
    invertible report (a non-sensitive bit set) is guessed right.
    """
    theta, d1, reveal, r, w = _unary_parameters(channel)
    d2 = 1.0 - reveal
    S = np.asarray(channel.sensitive_mask, dtype=bool)
    pi_s, pi_n = prior[S], prior[~S]
    high = pi_s * r  # V_x of a sensitive x whose bit is set (prob d1 under B)
    low = np.concatenate([pi_s * w, pi_n * d2])  # always reached
    floor = low.max()
    # P(max <= v) = 0 below the largest low value, then (1 - d1)^#{high > v}.
    above = np.sort(high[high > floor])
    n_above = above.size
    log_keep = math.log1p(-d1)
    # E[max] = floor P(max = floor) + sum over the high values above it.
    values = np.concatenate([[floor], above])
    # F at each value: (1 - d1)^(number of high values strictly above it)
    counts = n_above - np.searchsorted(above, values, side="right")
    F = np.exp(counts * log_keep)
    mass = np.diff(np.concatenate([[0.0], F]))
    rate = float(np.dot(values, mass) + reveal * pi_n.sum())
    per_value = _unary_per_value(prior, S, theta, d1, reveal, r, w)
    return rate, per_value


def _tied_integral(m, n1, d1):
    """int_0^1 z^m ((1 - d1) + d1 z)^n1 dz = E[1 / (m + 1 + B)], B ~ Bin(n1, d1)."""
    if n1 == 0:
        return 1.0 / (m + 1.0)
    b = np.arange(n1 + 1)
    return float(np.sum(binom.pmf(b, n1, d1) / (m + 1.0 + b)))


def _unary_per_value(prior, S, theta, d1, reveal, r, w):
    """P(guess = x | X = x) with ties split uniformly (docs/attacks.md)."""
    d2 = 1.0 - reveal
    k = prior.size
    s_idx, n_idx = np.flatnonzero(S), np.flatnonzero(~S)
    highs = np.sort(prior[s_idx] * r)
    lows = np.sort(prior[s_idx] * w)
    consts = np.sort(prior[n_idx] * d2)
    log_keep = math.log1p(-d1)
    cache = {}

    def count(arr, v, side):
        lo, hi = v * (1.0 - _TIE_RTOL), v * (1.0 + _TIE_RTOL)
        below = int(np.searchsorted(arr, lo, side="left"))
        upto = int(np.searchsorted(arr, hi, side="right"))
        if side == "below":
            return below
        if side == "equal":
            return upto - below
        return arr.size - upto  # above

    def win(v, own):
        # P(x wins | its value is v) over the others, ties split: x excluded
        # from the counts through ``own`` (which atom x itself sits at).
        key = (v, own)
        if key in cache:
            return cache[key]
        if v <= 0:
            cache[key] = 0.0
            return 0.0
        n_lows_above = count(lows, v, "above")
        n_consts_above = count(consts, v, "above")
        if n_lows_above or n_consts_above:
            cache[key] = 0.0  # someone always beats v
            return 0.0
        t1 = count(highs, v, "equal") - (own == "high")  # tie when their bit is set
        t2 = count(lows, v, "equal") - (own == "low")  # tie when their bit is unset
        t3 = count(consts, v, "equal") - (own == "const")
        # x's own high value is above v when x sits at its low one
        n_high_above = count(highs, v, "above") - (own == "low")
        # A sensitive j with low < v < high must keep its bit unset; one with
        # low == v (its high is above v) ties when unset: t2 of the
        # n_high_above; a j with high == v ties when set (t1).
        n_mid = n_high_above - t2
        log_p = (n_mid + t2) * log_keep
        value = math.exp(log_p) * _tied_integral(t2 + t3, t1, d1)
        cache[key] = value
        return value

    out = np.zeros(k)
    for x in s_idx:
        out[x] = theta * win(prior[x] * r, "high") + (1.0 - theta) * win(prior[x] * w, "low")
    for x in n_idx:
        out[x] = reveal + d2 * win(prior[x] * d2, "const")
    return out


# --------------------------------------------------------- the subset path
def _subset_structure(channel):
    """(pool mask, sizes, weights, log c_h, E, invertible mass) of a subset channel."""
    from ..mechanisms._block_design import UtilityOptimizedBlockDesignChannel
    from ..mechanisms._subset_selection import SubsetSelectionChannel
    from ..mechanisms._utility_optimized_subset import UtilityOptimizedSubsetSelectionChannel

    E = math.exp(channel.epsilon)
    if type(channel) is SubsetSelectionChannel:
        k, d = channel.n_categories, channel.subset_size
        pool = np.ones(k, dtype=bool)
        log_c = np.array([-channel._log_omega()])
        return pool, np.array([d]), log_c, E, 0.0
    if type(channel) in (
        UtilityOptimizedBlockDesignChannel,
        UtilityOptimizedSubsetSelectionChannel,
    ):
        pool = np.asarray(channel.sensitive_mask, dtype=bool)
        return pool, channel._sizes.astype(int), channel._log_c0_h, E, float(channel._keep_n)
    return None


def _subset_path(channel, prior, structure):
    """ASR of the subset family: protected h-subsets T of the pool with
    Q(T|x) = c_h E^[x in T] (x in the pool) or c_h (x outside it), plus the
    invertible reports of the values outside the pool (mass ``iota``).

    Sorting the pool's prior, v_1 >= v_2 >= ..., a subset whose top element
    is v_i (i > 1) is won by max(E v_i, v_1, u) (u the largest prior outside
    the pool), and the C(s-1, h-1) subsets holding v_1 by max(E v_1, u).
    """
    pool, sizes, log_c, E, iota = structure
    v = np.sort(prior[pool])[::-1]
    s = v.size
    outside = prior[~pool]
    u = float(outside.max()) if outside.size else 0.0
    rate = iota * float(outside.sum())
    for h, lc in zip(sizes, log_c, strict=True):
        h = int(h)
        i = np.arange(2, s - h + 2)  # 1-based top index of T, i > 1
        weights = np.exp(lc + _log_comb(s - i, h - 1))
        rate += float(np.sum(weights * np.maximum(np.maximum(E * v[i - 1], v[0]), u)))
        rate += math.exp(lc + _log_comb(s - 1, h - 1)) * max(E * v[0], u)
    per_value = _subset_per_value(prior, pool, sizes, log_c, E, iota)
    return rate, per_value


def _subset_per_value(prior, pool, sizes, log_c, E, iota):
    """Per-value rates of the subset family: exact when the prior is constant
    on the pool and outside it (by symmetry) or has no two equal values (the
    sorted order decides every subset); None otherwise."""
    k = prior.size
    p_pool, p_out = prior[pool], prior[~pool]
    s, t = p_pool.size, p_out.size
    out = np.zeros(k)
    pool_idx, out_idx = np.flatnonzero(pool), np.flatnonzero(~pool)
    constant = np.ptp(p_pool) <= _TIE_RTOL * p_pool.max() and (
        t == 0 or np.ptp(p_out) <= _TIE_RTOL * max(p_out.max(), 1e-300)
    )
    if constant:
        v = float(p_pool[0])
        u = float(p_out[0]) if t else 0.0
        rate_s = rate_n = 0.0
        for h, lc in zip(sizes, log_c, strict=True):
            h = int(h)
            inside = math.exp(lc + _log_comb(s - 1, h - 1)) * E  # P(x in T | x)
            protected_n = math.exp(lc + _log_comb(s, h))  # P(report is an h-subset | x out)
            top = max(E * v, u)
            tie_in = math.isclose(E * v, top, rel_tol=_TIE_RTOL)
            tie_out = t > 0 and math.isclose(u, top, rel_tol=_TIE_RTOL)
            winners = h * tie_in + t * tie_out
            if tie_in:
                rate_s += inside / winners
            if tie_out:
                rate_n += protected_n / winners
        out[pool_idx] = rate_s
        out[out_idx] = iota + rate_n
        return out
    values = np.sort(prior)
    gaps = np.diff(values[values > 0])
    if gaps.size and np.min(gaps) <= _TIE_RTOL * values[-1]:
        return None
    order = np.argsort(-p_pool, kind="stable")
    v = p_pool[order]
    u = float(p_out.max()) if t else 0.0
    top_out = int(out_idx[np.argmax(p_out)]) if t else -1
    rate_pool = np.zeros(s)
    rate_top_out = 0.0
    for h, lc in zip(sizes, log_c, strict=True):
        h = int(h)
        # x at sorted position r (1-based) wins a subset it is the top of
        # when E v_r beats the largest value outside (v_1 or u).
        r = np.arange(1, s + 1)
        n_top = np.where(r <= s - h + 1, np.exp(lc + _log_comb(s - r, h - 1)), 0.0)
        rivals = np.where(r > 1, np.maximum(v[0], u), u)
        rate_pool += np.where(E * v > rivals, E * n_top, 0.0)
        # v_1 outside T wins when it beats E times T's top and u.
        i = np.arange(2, s - h + 2)
        mask = (v[0] > E * v[i - 1]) & (v[0] > u)
        rate_pool[0] += float(np.sum(np.exp(lc + _log_comb(s - i, h - 1))[mask]))
        if t:
            # the largest value outside the pool wins T when it beats E
            # times T's top and the pool's best outside T
            rate_top_out += float(
                np.sum(np.exp(lc + _log_comb(s - i, h - 1))[u > np.maximum(E * v[i - 1], v[0])])
            )
            if u > E * v[0]:
                rate_top_out += math.exp(lc + _log_comb(s - 1, h - 1))
    out[pool_idx[order]] = rate_pool
    out[out_idx] = iota
    if t:
        out[top_out] += rate_top_out
    return out


# ---------------------------------------------------------- closed forms
def _closed_form(channel, uniform):
    """The rate under a uniform prior, in closed form (docs/attacks.md), or None."""
    if not uniform:
        return None
    from ..mechanisms._randomized_response import (
        RandomizedResponseChannel,
        UtilityOptimizedRRChannel,
    )

    E = math.exp(channel.epsilon)
    k = channel.n_categories
    S = np.asarray(channel.sensitive_mask, dtype=bool)
    s = int(S.sum())
    t = k - s
    if type(channel) in (UtilityOptimizedRRChannel, RandomizedResponseChannel):
        u = s + E - 1.0
        return (s * E + t * (E - 1.0)) / (k * u)  # k-RR when s = k
    structure = _subset_structure(channel)
    if structure is not None:
        # A sensitive value is in its subset w.p. h E / D_h (of size h) and
        # wins it with the h - 1 others; a non-sensitive one only through
        # its invertible reports (iota).
        _, sizes, log_c, _, iota = structure
        sens = sum(
            math.exp(lc + float(_log_comb(s - 1, h - 1))) * E / h
            for h, lc in zip(sizes.tolist(), log_c, strict=True)
        )
        return (s * sens + t * iota) / k
    if _is_unary(channel):
        theta, d1, reveal, r, w = _unary_parameters(channel)
        d2 = 1.0 - reveal
        if t and not math.isclose(w, d2, rel_tol=1e-12):
            return None
        sens = (
            theta * -math.expm1(s * math.log1p(-d1)) / (s * d1)
            + (1.0 - theta) * (1.0 - d1) ** (s - 1) / k
        )
        non = reveal + d2 * (1.0 - d1) ** s / k
        return (s * sens + t * non) / k
    return None


# ------------------------------------------------------------- the entry
def attack_success_rate(
    mechanism: BaseMechanism | Channel | dict[str, Any],
    prior: ArrayLike | None = None,
    *,
    inputs: ArrayLike | None = None,
) -> AttackSuccess:
    """The Bayes-optimal success of guessing a user's value from one report.

    ``rate = sum_y max_x pi(x) Q(y|x)``, from the mechanism's exact channel
    (the derivations and closed forms are on the "Attacks and accounting"
    page). For utility-optimized mechanisms the success is also given
    separately over the sensitive values (protected: close to the prior's)
    and the non-sensitive ones (reported in clear with the invertible
    outputs).

    Parameters
    ----------
    mechanism : fitted mechanism, Channel or spec dict
        Any mechanism of the package. Bit-vector channels (RAPPOR, OUE,
        uRAP, subset selection, uBD, uSS) are computed without enumerating
        their outputs; other channels are read from their matrix, a block of
        rows at a time.
    prior : array-like of shape (k,), default=None
        The adversary's prior over the values (``categories`` order, or the
        ``inputs`` of a numeric channel); uniform by default.
    inputs : array-like of shape (m,), default=None
        Numeric channels only: the input values the adversary chooses among
        (default: the channel's grid of 33 values over its bounds).

    Returns
    -------
    success : AttackSuccess
        ``rate``, ``per_value`` (``P(guess = x | X = x)``), ``sensitive``,
        ``non_sensitive``, ``baseline``, ``expected_posterior`` and the
        ``closed_form`` where one exists.

    Examples
    --------
    >>> from sklearn_uldp import UtilityOptimizedRR
    >>> from sklearn_uldp.privacy import attack_success_rate
    >>> mech = UtilityOptimizedRR(1.0, sensitive=["c"], categories=["a", "b", "c"])
    >>> asr = attack_success_rate(mech)
    >>> round(asr.sensitive, 4), round(asr.non_sensitive, 4)  # c is always hidden
    (1.0, 0.6321)

    With one sensitive value, a protected report *is* that value: uRR
    hides which sensitive value a user holds, and here there is only one.
    """
    channel = resolve_channel(mechanism)
    numeric = str(getattr(channel, "report_format", "")).startswith("numeric")
    if numeric:
        grid = channel.default_inputs() if inputs is None else np.asarray(inputs, dtype=float)
        if grid.ndim != 1 or grid.size < 2:
            raise ValueError("inputs must be a 1-D array of at least two input values.")
        prior = _check_prior(prior, grid.size)
        rate, per_value, square = _matrix_path(channel, prior, grid)
        sensitive = np.ones(grid.size, dtype=bool)
        if inputs is None:  # the channel's own grid: its sensitive rows
            sensitive = np.asarray(channel.sensitive_mask, dtype=bool)
        return _result(rate, prior, per_value, sensitive, None, square)
    if inputs is not None:
        raise ValueError("inputs= is for numeric channels; categorical ones use their categories.")
    k = channel.n_categories
    prior = _check_prior(prior, k)
    sensitive = np.asarray(channel.sensitive_mask, dtype=bool)
    uniform = bool(np.ptp(prior) == 0)
    closed = _closed_form(channel, uniform)
    if _is_unary(channel):
        rate, per_value = _unary_path(channel, prior)
        return _result(rate, prior, per_value, sensitive, closed)
    structure = _subset_structure(channel)
    if structure is not None:
        rate, per_value = _subset_path(channel, prior, structure)
        if per_value is None and channel.n_outputs * k <= _BLOCK_ENTRIES:
            _, per_value, _ = _matrix_path(channel, prior)
        return _result(rate, prior, per_value, sensitive, closed)
    rate, per_value, square = _matrix_path(channel, prior)
    return _result(rate, prior, per_value, sensitive, closed, square)
