"""The Hadamard family: HR, high-low HR and block-structured HR.

All three report one symbol of O(log k) bits and estimate in O(K log K) with a
vectorized fast Walsh-Hadamard transform (:func:`fwht`), never with a k-by-K
matrix or a loop over users.

References
----------
Acharya, Sun, Zhang, "Hadamard Response: Estimating Distributions Privately,
Efficiently, and with Little Communication", AISTATS 2019 (HR).
Acharya, Bonawitz, Kairouz, Ramage, Sun, "Context-Aware Local Differential
Privacy", ICML 2020, Sec. 5.1 (high-low HR) and Sec. 6.1
(block-structured HR).

Notes
-----
Sylvester's Hadamard matrix is ``H[i, y] = (-1)^popcount(i & y)``. Category
x (0-indexed) uses row x + 1 (row 0, all ones, is skipped) and its set
``S_x = {y : H[x + 1, y] = +1}`` (``|S_x| = K/2``, ``|S_x & S_x'| = K/4``).
To sample uniformly from ``S_x`` (or its complement), a uniform y is drawn
and, if it lies on the wrong side, its bit ``lowbit(x + 1)`` is flipped: that
is a bijection between ``S_x`` and its complement, so the result is exactly
uniform on the requested side.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from numbers import Integral
from typing import Any, Literal

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from ..utils._fixes import bitwise_count
from ..utils._typing import ArrayLike, Categories, RandomStateLike
from ..utils._validation import (
    check_sensitive,
    check_sensitive_mask,
    realized_probability,
    resolve_blocks,
    safe_ndim,
)
from ._base import BaseMechanism, SensitiveSetMechanism, _BudgetMechanism
from ._channel import (
    MAX_MATRIX_OUTPUTS,
    CategoricalChannel,
    SensitiveSetMixin,
    sensitive_mask_schema,
)
from ._docs import fill_mechanism_doc

__all__ = [
    "fwht",
    "HadamardResponseChannel",
    "HighLowHadamardChannel",
    "BlockHadamardChannel",
    "HadamardResponse",
    "HighLowHadamardResponse",
    "UtilityOptimizedHadamardResponse",
    "BlockHadamardResponse",
]


def fwht(a, axis=-1):
    """Fast Walsh-Hadamard transform (Sylvester order, unnormalized).

    Computes ``H_K @ a`` along ``axis`` (K a power of two) in O(K log K) with
    log2(K) vectorized butterfly passes; a 2-D input transforms every row (or
    column) at once.

    Parameters
    ----------
    a : array-like
        Length along ``axis`` must be a power of two.
    axis : int, default=-1

    Returns
    -------
    out : ndarray of float
        ``H_K a`` with ``H_K[i, j] = (-1)^popcount(i & j)``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp.mechanisms._hadamard import fwht
    >>> fwht([1, 0, 0, 0])
    array([1., 1., 1., 1.])
    >>> fwht([0, 1, 0, 0])
    array([ 1., -1.,  1., -1.])
    """
    x = np.moveaxis(np.array(a, dtype=float), axis, -1)
    K = x.shape[-1]
    if K & (K - 1) or K == 0:
        raise ValueError(f"The transform length must be a power of two, got {K}.")
    lead = x.shape[:-1]
    n_bits = K.bit_length() - 1
    if n_bits == 0:
        return np.moveaxis(x, -1, axis)
    # The lowest (up to 5) levels at once: a small dense Hadamard product on
    # contiguous rows (the butterflies with tiny strides are slow in numpy).
    b0 = min(n_bits, 5)
    x = np.ascontiguousarray(x).reshape(*lead, K >> b0, 1 << b0) @ _small_hadamard(b0)
    x = x.reshape(*lead, K)
    y = np.empty_like(x)
    h = 1 << b0
    while h < K:  # log2(K) - 5 vectorized butterfly passes
        xv = x.reshape(*lead, K // (2 * h), 2, h)
        yv = y.reshape(*lead, K // (2 * h), 2, h)
        np.add(xv[..., 0, :], xv[..., 1, :], out=yv[..., 0, :])
        np.subtract(xv[..., 0, :], xv[..., 1, :], out=yv[..., 1, :])
        x, y = y, x
        h *= 2
    return np.moveaxis(x, -1, axis)


_SMALL_H: dict[int, np.ndarray] = {}


def _small_hadamard(bits):
    """Dense Sylvester Hadamard matrix of size 2^bits (cached, bits <= 5)."""
    if bits not in _SMALL_H:
        i = np.arange(1 << bits)
        _SMALL_H[bits] = np.where(bitwise_count(i[:, None] & i[None, :]) & 1, -1.0, 1.0)
    return _SMALL_H[bits]


def _parity(a, b):
    """0 where H[a, b] = +1, 1 where it is -1 (elementwise, broadcasting)."""
    return bitwise_count(np.bitwise_and(a, b)) & 1


def _hadamard_size(k):
    """Smallest power of two K with K >= k + 1 (2^ceil(log2(k + 1)))."""
    return 1 << int(k).bit_length()


def _sample_in_rows(rows, K, keep_prob, rng):
    """For each user with Hadamard row r, a y in [K]: in S_r w.p. keep_prob.

    Uniform on S_r when in, uniform on its complement otherwise.
    """
    n = rows.size
    y = rng.integers(0, K, size=n, dtype=np.int64)
    inside = rng.random(n) < keep_prob
    in_set = _parity(rows, y) == 0
    lowbit = rows & -rows
    return np.where(in_set != inside, y ^ lowbit, y)


def _hr_probabilities(epsilon, b, K):
    """P(in S_r) = E / (E + 1) and P(report in own block) = b(E + 1) / (2D).

    With D = (b/2) E + K - b/2, both divided by E (z = e^-eps) so that no
    e^eps overflows.
    """
    z = np.exp(-epsilon)
    keep = 1.0 / (1.0 + z)
    in_block = (1.0 + z) / (1.0 + (2.0 * K / b - 1.0) * z)
    return keep, in_block


def _check_matrix_size(k, n_outputs):
    if k * n_outputs > MAX_MATRIX_OUTPUTS * 64:
        raise ValueError(
            f"The channel matrix would have {k} x {n_outputs} entries; it is "
            "only built for small domains."
        )


class _CenteredStatistic:
    """Linear-estimator part shared by the Hadamard channels.

    Their per-category statistic is centred so that its expectation is
    ``_gain(x) * p(x)``: the unbiased estimate is ``f / _gain`` (no intercept).
    """

    def expected_frequency(self, p):
        return np.asarray(p, dtype=float) * self._gain

    @property
    def coef_a(self):
        return np.full(self.n_categories, 1.0 / self._gain)

    @property
    def coef_b(self):
        return np.zeros(self.n_categories)


class HadamardResponseChannel(_CenteredStatistic, CategoricalChannel):
    """Channel of Hadamard response, an epsilon-LDP mechanism (Acharya, Sun & Zhang 2019).

    **Plain HR** (``block_size=None``): with K = 2^ceil(log2(k + 1)) outputs,
    category x (row x + 1 of H_K) gives ``Q(y|x) = 2 E / (K (E + 1))`` for y
    in S_x and ``2 / (K (E + 1))`` otherwise (E = e^eps). The statistic of x
    is the fraction of reports in S_x,
    ``q(S_x) = 1/2 + p(x) (E - 1) / (2 (E + 1))``; all k of them come from one
    fast Walsh-Hadamard transform of the output histogram.

    **Blocked (general) HR** (``block_size=b``, a power of two; Acharya, Sun &
    Zhang 2019, Sec. 4, for large eps): the categories are cut into
    B = ceil(k / (b - 1)) consecutive blocks of b - 1, block j owns the
    outputs ``[j b, (j + 1) b)`` and x (row r + 1 of H_b inside its block)
    the half ``C_x`` of them. With s = b/2, K = B b and D = s E + K - s:
    ``Q(y|x) = E / D`` on C_x and ``1 / D`` on every other output. The
    statistic ``2 q(C_x) - q(block of x)`` has mean ``p(x) s (E - 1) / D``
    (other inputs of the block and of other blocks contribute exactly 0), so
    ``p_hat(x) = D / (s (E - 1)) (2 q(C_x) - q(block))``. With b = K (one
    block) this is plain HR.

    Parameters
    ----------
    categories : array-like of shape (k,)
    epsilon : float
    block_size : int or None, default=None
        b, a power of two >= 2; ``None`` is plain HR (b = K).

    Examples
    --------
    >>> from sklearn_uldp.mechanisms import HadamardResponseChannel
    >>> channel = HadamardResponseChannel([0, 1, 2], epsilon=1.0)
    >>> channel.n_outputs, channel.report_bits
    (4, 2.0)
    >>> channel.matrix().round(3).tolist()[0]
    [0.366, 0.134, 0.366, 0.134]
    """

    name = "hr"
    _spec_field_schemas = {
        **CategoricalChannel._spec_field_schemas,
        "block_size": {
            "type": ["integer", "null"],
            "minimum": 2,
            "description": ("b, a power of two >= 2 (blocked HR), or null for plain HR."),
        },
    }

    def __init__(
        self, categories: ArrayLike, epsilon: float, block_size: int | None = None
    ) -> None:
        super().__init__(categories, epsilon)
        k = self.n_categories
        if block_size is None:
            b = _hadamard_size(k)
        else:
            if isinstance(block_size, bool) or not isinstance(block_size, Integral):
                raise TypeError(
                    "block_size must be an integer power of two >= 2 or None, "
                    f"got {block_size!r} of type {type(block_size).__name__}."
                )
            b = int(block_size)
            if b < 2 or b & (b - 1):
                raise ValueError(f"block_size must be a power of two >= 2, got {block_size}.")
            b = min(b, _hadamard_size(k))
        self.block_size = None if block_size is None else b
        self.b = b
        self.n_blocks = -(-k // (b - 1))
        self.K = self.n_blocks * b
        self._check_budget(
            f"Hadamard response with k={k}" + ("" if block_size is None else f" and block_size={b}")
        )
        E = self._E = np.exp(self.epsilon)
        half = b / 2.0
        self._D = half * E + self.K - half
        idx = np.arange(k, dtype=np.int64)
        self._block = idx // (b - 1)
        self._rows = idx % (b - 1) + 1
        # mean of the statistic per p(x); expm1 keeps E - 1 exact for tiny eps
        self._gain = half * np.expm1(self.epsilon) / self._D
        self._keep, self._in_block = _hr_probabilities(self.epsilon, self.b, self.K)

    def _draw_probabilities(self, epsilon):
        keep, in_block = _hr_probabilities(epsilon, self.b, self.K)
        probs = [keep, 1.0 - keep]
        if self.n_blocks > 1:
            probs += [in_block, 1.0 - in_block]
        return np.array(probs)

    def get_params(self):
        return {"epsilon": self.epsilon, "block_size": self.block_size}

    @property
    def n_outputs(self):
        return self.K

    def protected_outputs(self):
        return np.ones(self.K, dtype=bool)

    def _embed(self, p):
        pt = np.zeros((self.n_blocks, self.b))
        pt[self._block, self._rows] = p
        return pt

    def forward(self, p):
        p = np.asarray(p, dtype=float)
        P = p.sum()
        PB = np.bincount(self._block, weights=p, minlength=self.n_blocks)
        h = fwht(self._embed(p), axis=1)
        m = (P + np.expm1(self.epsilon) * (PB[:, None] + h) / 2.0) / self._D
        return m.ravel()

    def adjoint(self, v):
        v = np.asarray(v, dtype=float)
        vb = v.reshape(self.n_blocks, self.b)
        VB = vb.sum(axis=1)
        h = fwht(vb, axis=1)[self._block, self._rows]
        Vj = VB[self._block]
        return (v.sum() + np.expm1(self.epsilon) * (Vj + h) / 2.0) / self._D

    def observed_frequency(self, stats):
        counts = np.asarray(stats.counts, dtype=float).reshape(self.n_blocks, self.b)
        h = fwht(counts, axis=1)[self._block, self._rows]
        return h / stats.n

    def _block_hit(self, p):
        """P(report in x's block) for each x: the second moment of the statistic."""
        p = np.asarray(p, dtype=float)
        PB = np.bincount(self._block, weights=p, minlength=self.n_blocks)[self._block]
        inside = self.b * (self._E + 1.0) / (2.0 * self._D)
        outside = self.b / self._D
        return PB * inside + (p.sum() - PB) * outside

    def estimator_variance(self, p, n):
        """Exact Var[p_hat(x)]: the statistic is +-1 inside x's block, else 0."""
        m = self.expected_frequency(p)
        return self.coef_a**2 * (self._block_hit(p) - m**2) / n

    def null_variance(self, n, stats=None):
        """Var[p_hat(x)] with p(x) = 0: ``a^2 P(report in x's block) / n``.

        Exact for plain HR (a report is always in the one block). For blocked
        HR it depends on the mass of x's block: without ``stats`` its
        maximum over distributions is used; with ``stats`` the observed
        fraction of reports in x's block (a consistent plug-in).
        """
        if stats is not None and self.n_blocks > 1:
            per_block = (
                np.asarray(stats.counts, dtype=float).reshape(self.n_blocks, self.b).sum(axis=1)
            )
            hit = per_block[self._block] / max(stats.n, 1)
            return self.coef_a**2 * hit / n
        sizes = np.bincount(self._block, minlength=self.n_blocks)[self._block]
        inside = self.b * (self._E + 1.0) / (2.0 * self._D)
        outside = self.b / self._D
        hit = np.where(sizes >= 2, max(inside, outside), outside)
        if self.n_blocks == 1:
            hit = np.ones(self.n_categories)
        return self.coef_a**2 * hit / n

    def realized_matrix(self):
        """The channel :meth:`sample` realizes (see :meth:`Channel.realized_matrix`).

        Membership of S_r and of the own block are comparisons of a 53-bit
        uniform; the cells are uniform integer draws (exact).
        """
        _check_matrix_size(self.n_categories, self.K)
        keep = realized_probability(self._keep)
        in_block = realized_probability(self._in_block) if self.n_blocks > 1 else 1.0
        half = self.b / 2.0
        y = np.arange(self.K, dtype=np.int64)
        same = (y[None, :] // self.b) == self._block[:, None]
        par = _parity(self._rows[:, None], y[None, :] % self.b)
        inside = in_block * np.where(par == 0, keep, 1.0 - keep) / half
        outside = (1.0 - in_block) / max(self.K - self.b, 1)
        return np.where(same, inside, outside)

    def matrix(self):
        """The exact channel: a dense (k, n_outputs) array of Q(y | x)."""
        _check_matrix_size(self.n_categories, self.K)
        y = np.arange(self.K, dtype=np.int64)
        same = (y[None, :] // self.b) == self._block[:, None]
        par = _parity(self._rows[:, None], y[None, :] % self.b)
        return np.where(same & (par == 0), self._E, 1.0) / self._D

    def likelihood(self, codes):
        codes = np.asarray(codes, dtype=np.int64)
        same = (codes[:, None] // self.b) == self._block[None, :]
        par = _parity(codes[:, None] % self.b, self._rows[None, :])
        return np.where(same & (par == 0), self._E, 1.0) / self._D

    def sample(self, codes, rng):
        codes = np.asarray(codes, dtype=np.intp)
        n = codes.size
        block, rows = self._block[codes], self._rows[codes]
        cell = _sample_in_rows(rows, self.b, self._keep, rng)
        out = block * self.b + cell
        if self.n_blocks > 1:
            in_block = rng.random(n) < self._in_block
            away = np.flatnonzero(~in_block)
            y = rng.integers(0, self.K - self.b, size=away.size, dtype=np.int64)
            start = block[away] * self.b
            out[away] = np.where(y >= start, y + self.b, y)
        return out


class HighLowHadamardChannel(SensitiveSetMixin, _CenteredStatistic, CategoricalChannel):
    """Channel of high-low Hadamard response, (A, epsilon)-HLLDP (Acharya et al. 2020, Sec. 5.1).

    With s sensitive categories, S = 2^ceil(log2(s + 1)) "hashed" outputs and
    one output per non-sensitive category (S + t outputs, t = k - s):

    * sensitive x (row rank(x) + 1 of H_S): HR on [S],
      ``2E/(S(E+1))`` on S_x, ``2/(S(E+1))`` on the rest of [S];
    * non-sensitive x: ``2/(S(E+1))`` on each cell of [S], its own output
      w.p. ``(E - 1)/(E + 1)``.

    It also satisfies (A, Y_P = [S], epsilon)-ULDP: the own outputs of
    non-sensitive categories are invertible. The statistic of a sensitive x
    is ``2 q(S_x) - q([S])`` (one Walsh-Hadamard transform), whose mean is
    ``p(x) (E - 1)/(E + 1)``; this is the estimator of Acharya et al. (15)
    rewritten, ``p_hat(x) = (E+1)/(E-1) (2 q(S_x) - q([S]))``.

    Parameters
    ----------
    categories : array-like of shape (k,)
    epsilon : float
    sensitive : array-like of bool of shape (k,)
        Mask of the sensitive set A (non-empty).

    Examples
    --------
    >>> from sklearn_uldp.mechanisms import HighLowHadamardChannel
    >>> channel = HighLowHadamardChannel([0, 1, 2], epsilon=1.0,
    ...                                  sensitive=[True, False, False])
    >>> channel.matrix().round(3).tolist()
    [[0.731, 0.269, 0.0, 0.0], [0.269, 0.269, 0.462, 0.0], [0.269, 0.269, 0.0, 0.462]]
    >>> channel.protected_outputs().tolist()
    [True, True, False, False]
    """

    name = "hlhr"
    _spec_field_schemas = {
        **CategoricalChannel._spec_field_schemas,
        "sensitive": sensitive_mask_schema("a category of the sensitive set A"),
    }

    def __init__(self, categories: ArrayLike, epsilon: float, sensitive: ArrayLike) -> None:
        super().__init__(categories, epsilon)
        self._sensitive = check_sensitive_mask(sensitive, self.n_categories)
        self._check_budget(
            f"high-low Hadamard response with {int(self._sensitive.sum())} "
            f"sensitive of k={self.n_categories} categories"
        )
        self._s_codes = np.flatnonzero(self._sensitive)
        self._n_codes = np.flatnonzero(~self._sensitive)
        self.s, self.t = self._s_codes.size, self._n_codes.size
        self.S = _hadamard_size(self.s)
        self._rank = np.zeros(self.n_categories, dtype=np.int64)
        self._rank[self._s_codes] = np.arange(self.s)
        self._rank[self._n_codes] = np.arange(self.t)
        self._E = np.exp(self.epsilon)
        self._keep = 1.0 / (1.0 + np.exp(-self.epsilon))  # E / (E + 1)
        self._c = 2.0 / (self.S * (self._E + 1.0))
        self._own = np.tanh(self.epsilon / 2.0)  # (E - 1) / (E + 1), stably
        self._gain = self._own  # the statistic's mean per unit p(x)

    def _draw_probabilities(self, epsilon):
        keep = 1.0 / (1.0 + np.exp(-epsilon))
        probs = [keep, 1.0 - keep]
        if not self._sensitive.all():
            # Hiding a non-sensitive value (1 - own = 2 / (E + 1)); keeping it
            # gives an invertible output, which no privacy ratio involves.
            probs.append(2.0 * (1.0 - keep))
        return np.array(probs)

    def get_params(self):
        return {"epsilon": self.epsilon, "sensitive": self._sensitive.copy()}

    @property
    def n_outputs(self):
        return self.S + self.t

    def protected_outputs(self):
        mask = np.zeros(self.n_outputs, dtype=bool)
        mask[: self.S] = True
        return mask

    def forward(self, p):
        p = np.asarray(p, dtype=float)
        pS, pN = p[self._s_codes], p[self._n_codes]
        PA, PN = pS.sum(), pN.sum()
        pt = np.zeros(self.S)
        pt[1 : self.s + 1] = pS
        h = fwht(pt)
        m = np.empty(self.n_outputs)
        m[: self.S] = self._c * (PA + np.expm1(self.epsilon) * (PA + h) / 2.0 + PN)
        m[self.S :] = self._own * pN
        return m

    def adjoint(self, v):
        v = np.asarray(v, dtype=float)
        vS = v[: self.S]
        V = vS.sum()
        out = np.empty(self.n_categories)
        hv = fwht(vS)[1 : self.s + 1]
        out[self._s_codes] = self._c * (V + np.expm1(self.epsilon) * (V + hv) / 2.0)
        out[self._n_codes] = self._c * V + self._own * v[self.S :]
        return out

    def observed_frequency(self, stats):
        f = np.empty(self.n_categories)
        f[self._s_codes] = fwht(stats.counts[: self.S])[1 : self.s + 1] / stats.n
        f[self._n_codes] = stats.counts[self.S :] / stats.n
        return f

    def estimator_variance(self, p, n):
        """Exact Var[p_hat(x)]: the sensitive statistic takes values -1, 0, 1."""
        p = np.asarray(p, dtype=float)
        m = self.expected_frequency(p)
        in_hashed = p[self._s_codes].sum() + p[self._n_codes].sum() * 2.0 / (self._E + 1.0)
        second = np.where(self._sensitive, in_hashed, m)
        return self.coef_a**2 * (second - m**2) / n

    def null_variance(self, n, stats=None):
        """Var[p_hat(x)] with p(x) = 0.

        For a sensitive x it is ``a^2 q([S]) / n``, which depends on the
        unknown mass of A. Without ``stats`` the bound ``q([S]) <= 1`` is
        used (reached when the mass sits on other sensitive categories), so
        thresholds are conservative; with ``stats`` the observed fraction of
        reports in [S] (a consistent plug-in). Non-sensitive estimates have
        zero null variance (:attr:`exact_categories`).
        """
        if stats is not None:
            bound = float(np.sum(stats.counts[: self.S])) / max(stats.n, 1)
        else:
            bound = 1.0 if self.s >= 2 else 2.0 / (self._E + 1.0)
        return np.where(self._sensitive, self.coef_a**2 * bound / n, 0.0)

    def realized_matrix(self):
        """The channel :meth:`sample` realizes (see :meth:`Channel.realized_matrix`)."""
        _check_matrix_size(self.n_categories, self.n_outputs)
        keep = realized_probability(self._keep)
        own = realized_probability(self._own)
        Q = np.zeros((self.n_categories, self.n_outputs))
        y = np.arange(self.S, dtype=np.int64)
        rows = self._rank[self._s_codes] + 1
        Q[self._s_codes, : self.S] = np.where(
            _parity(rows[:, None], y[None, :]) == 0, keep, 1.0 - keep
        ) / (self.S / 2)
        Q[self._n_codes, : self.S] = (1.0 - own) / self.S
        Q[self._n_codes, self.S + np.arange(self.t)] = own
        return Q

    def matrix(self):
        """The exact channel: a dense (k, n_outputs) array of Q(y | x)."""
        _check_matrix_size(self.n_categories, self.n_outputs)
        Q = np.zeros((self.n_categories, self.n_outputs))
        y = np.arange(self.S, dtype=np.int64)
        rows = self._rank[self._s_codes] + 1
        Q[self._s_codes, : self.S] = self._c * np.where(
            _parity(rows[:, None], y[None, :]) == 0, self._E, 1.0
        )
        Q[self._n_codes, : self.S] = self._c
        Q[self._n_codes, self.S + np.arange(self.t)] = self._own
        return Q

    def likelihood(self, codes):
        codes = np.asarray(codes, dtype=np.int64)
        n = codes.size
        L = np.zeros((n, self.n_categories))
        hashed = codes < self.S
        rows = self._rank[self._s_codes] + 1
        ch = codes[hashed]
        L[np.ix_(hashed, self._s_codes)] = self._c * np.where(
            _parity(ch[:, None], rows[None, :]) == 0, self._E, 1.0
        )
        L[np.ix_(hashed, self._n_codes)] = self._c
        own = np.flatnonzero(~hashed)
        L[own, self._n_codes[codes[own] - self.S]] = self._own
        return L

    def sample(self, codes, rng):
        codes = np.asarray(codes, dtype=np.intp)
        n = codes.size
        out = np.empty(n, dtype=np.int64)
        is_s = self._sensitive[codes]
        rows = self._rank[codes[is_s]] + 1
        out[is_s] = _sample_in_rows(rows, self.S, self._keep, rng)
        nn = int((~is_s).sum())
        if nn:
            keep = rng.random(nn) < self._own
            hashed = rng.integers(0, self.S, size=nn, dtype=np.int64)
            out[~is_s] = np.where(keep, self.S + self._rank[codes[~is_s]], hashed)
        return out


class BlockHadamardChannel(_CenteredStatistic, CategoricalChannel):
    """Channel of block-structured Hadamard response, (P, epsilon)-BSLDP.

    For a partition into blocks X_1..X_m (sizes k_j, K_j =
    2^ceil(log2(k_j + 1))), the report is (j, c): the block j in clear and HR
    on the block with K_j cells (Acharya et al. 2020, Sec. 6.1).
    Reports are integer codes ``offset_j + c`` (:meth:`split_reports` gives
    the pair back). The statistic of x is ``2 q(j, S_x) - q(X_j)``, mean
    ``p(x) (E - 1)/(E + 1)``, which is the paper's estimator (19)
    ``p_hat(x) = 2(E+1)/(E-1) (q(j, S_x) - q(X_j)/2)``; blocks of the same
    K_j are transformed together (one batched Walsh-Hadamard transform).

    Parameters
    ----------
    categories : array-like of shape (k,)
    epsilon : float
    blocks : array-like of int of shape (k,)
        Block id of each category (ids are renumbered in order of first
        appearance).

    Examples
    --------
    >>> from sklearn_uldp.mechanisms import BlockHadamardChannel
    >>> channel = BlockHadamardChannel([0, 1, 2, 3], epsilon=1.0, blocks=[0, 0, 1, 1])
    >>> channel.n_blocks, channel.block_sizes.tolist(), channel.n_outputs
    (2, [2, 2], 8)
    """

    name = "bhr"
    guarantee_notion = "context-aware (block-structured) LDP"
    _spec_field_schemas = {
        **CategoricalChannel._spec_field_schemas,
        "blocks": {
            "type": "array",
            "items": {"type": "integer", "minimum": 0},
            "description": (
                "Block id of each category, aligned with categories (ids "
                "numbered 0, 1, ... in order of first appearance)."
            ),
        },
    }

    def __init__(self, categories: ArrayLike, epsilon: float, blocks: ArrayLike) -> None:
        super().__init__(categories, epsilon)
        if isinstance(blocks, (str, bytes)) or safe_ndim(blocks) != 1:
            raise ValueError(
                "blocks must be a one-dimensional list of integer block ids, one "
                f"per category, got {blocks!r:.80}."
            )
        ids_in = np.asarray(blocks, dtype=object)
        if ids_in.shape != (self.n_categories,) or not all(
            isinstance(b, (int, np.integer)) and not isinstance(b, (bool, np.bool_))
            for b in ids_in.tolist()
        ):
            raise ValueError(
                f"blocks must hold one integer block id per category "
                f"({self.n_categories}), got {ids_in.tolist()[:10]!r}."
            )
        self._check_budget(f"block Hadamard response with k={self.n_categories}")
        ids = resolve_blocks(np.asarray(blocks).ravel().tolist(), self.categories)
        self._blocks = ids
        m = int(ids.max()) + 1
        self.n_blocks = m
        self.block_sizes = np.bincount(ids, minlength=m)
        self.block_K = np.array(
            [_hadamard_size(int(kj)) for kj in self.block_sizes], dtype=np.int64
        )
        self.offsets = np.zeros(m + 1, dtype=np.int64)
        np.cumsum(self.block_K, out=self.offsets[1:])
        # rank of each category inside its block (order along categories)
        order = np.argsort(ids, kind="stable")
        rank = np.empty(self.n_categories, dtype=np.int64)
        starts = np.zeros(m + 1, dtype=np.int64)
        np.cumsum(self.block_sizes, out=starts[1:])
        rank[order] = np.arange(self.n_categories) - starts[ids[order]]
        self._rank = rank
        self._rows = rank + 1
        self._E = np.exp(self.epsilon)
        self._keep = 1.0 / (1.0 + np.exp(-self.epsilon))  # E / (E + 1)
        self._own = np.tanh(self.epsilon / 2.0)  # (E - 1) / (E + 1), stably
        self._gain = self._own  # the statistic's mean per unit p(x)
        # Groups of blocks sharing K_j: batched transforms.
        self._groups = []
        for K in np.unique(self.block_K):
            bl = np.flatnonzero(self.block_K == K)
            pos_in_group = np.full(m, -1, dtype=np.int64)
            pos_in_group[bl] = np.arange(bl.size)
            cats = np.flatnonzero(np.isin(ids, bl))
            self._groups.append(
                {
                    "K": int(K),
                    "blocks": bl,
                    "out": self.offsets[bl][:, None] + np.arange(K)[None, :],
                    "cats": cats,
                    "q": pos_in_group[ids[cats]],
                    "r": self._rows[cats],
                    "c": 2.0 / (K * (self._E + 1.0)),
                }
            )

    def _draw_probabilities(self, epsilon):
        keep = 1.0 / (1.0 + np.exp(-epsilon))
        return np.array([keep, 1.0 - keep])

    @property
    def exact_categories(self):
        # A singleton block's reports reveal its category.
        return self.block_sizes[self._blocks] < 2

    def get_params(self):
        return {"epsilon": self.epsilon, "blocks": self._blocks.copy()}

    @property
    def n_outputs(self):
        return int(self.offsets[-1])

    @property
    def blocks(self):
        """Block id of each category."""
        return self._blocks.copy()

    def protected_outputs(self):
        """Outputs that more than one input can produce (non-singleton blocks)."""
        sizes = np.repeat(self.block_sizes, self.block_K)
        return sizes >= 2

    def split_reports(self, codes):
        """Split report codes into (block id, cell inside the block).

        Parameters
        ----------
        codes : array-like of int

        Returns
        -------
        block, cell : ndarray of int
        """
        codes = np.asarray(codes, dtype=np.int64).ravel()
        block = np.searchsorted(self.offsets, codes, side="right") - 1
        return block, codes - self.offsets[block]

    def forward(self, p):
        p = np.asarray(p, dtype=float)
        PB = np.bincount(self._blocks, weights=p, minlength=self.n_blocks)
        m = np.empty(self.n_outputs)
        for g in self._groups:
            pt = np.zeros((g["blocks"].size, g["K"]))
            pt[g["q"], g["r"]] = p[g["cats"]]
            h = fwht(pt, axis=1)
            P = PB[g["blocks"]][:, None]
            m[g["out"]] = g["c"] * (P + np.expm1(self.epsilon) * (P + h) / 2.0)
        return m

    def adjoint(self, v):
        v = np.asarray(v, dtype=float)
        out = np.empty(self.n_categories)
        for g in self._groups:
            vb = v[g["out"]]
            V = vb.sum(axis=1)
            h = fwht(vb, axis=1)
            Vx = V[g["q"]]
            out[g["cats"]] = g["c"] * (Vx + np.expm1(self.epsilon) * (Vx + h[g["q"], g["r"]]) / 2.0)
        return out

    def observed_frequency(self, stats):
        f = np.empty(self.n_categories)
        for g in self._groups:
            h = fwht(stats.counts[g["out"]], axis=1)
            f[g["cats"]] = h[g["q"], g["r"]] / stats.n
        return f

    def estimator_variance(self, p, n):
        """Exact Var[p_hat(x)]: the statistic is +-1 inside x's block, else 0."""
        p = np.asarray(p, dtype=float)
        m = self.expected_frequency(p)
        PB = np.bincount(self._blocks, weights=p, minlength=self.n_blocks)
        return self.coef_a**2 * (PB[self._blocks] - m**2) / n

    def null_variance(self, n, stats=None):
        """Var[p_hat(x)] with p(x) = 0: ``a^2 p(X_j) / n <= a^2 / n``.

        The mass of x's block is unknown: without ``stats`` the bound
        p(X_j) <= 1 is used; with ``stats`` the observed fraction of reports
        in the block (a consistent plug-in). 0 for a singleton block, whose
        reports reveal x exactly (:attr:`exact_categories`).
        """
        single = self.block_sizes[self._blocks] < 2
        if stats is not None:
            counts = np.asarray(stats.counts, dtype=float)
            per_block = np.add.reduceat(counts, self.offsets[:-1])
            mass = per_block[self._blocks] / max(stats.n, 1)
            return np.where(single, 0.0, self.coef_a**2 * mass / n)
        return np.where(single, 0.0, self.coef_a**2 / n)

    def realized_matrix(self):
        """The channel :meth:`sample` realizes (see :meth:`Channel.realized_matrix`)."""
        _check_matrix_size(self.n_categories, self.n_outputs)
        keep = realized_probability(self._keep)
        Q = np.zeros((self.n_categories, self.n_outputs))
        for x in range(self.n_categories):  # rows of the matrix, not users
            j = self._blocks[x]
            K = int(self.block_K[j])
            par = _parity(self._rows[x], np.arange(K, dtype=np.int64))
            Q[x, self.offsets[j] : self.offsets[j] + K] = np.where(par == 0, keep, 1.0 - keep) / (
                K / 2
            )
        return Q

    def matrix(self):
        """The exact channel: a dense (k, n_outputs) array of Q(y | x)."""
        _check_matrix_size(self.n_categories, self.n_outputs)
        Q = np.zeros((self.n_categories, self.n_outputs))
        for x in range(self.n_categories):  # rows of the exact matrix
            j = self._blocks[x]
            K = int(self.block_K[j])
            c = np.arange(K, dtype=np.int64)
            par = _parity(self._rows[x], c)
            Q[x, self.offsets[j] : self.offsets[j] + K] = (
                2.0 / (K * (self._E + 1.0)) * np.where(par == 0, self._E, 1.0)
            )
        return Q

    def likelihood(self, codes):
        block, cell = self.split_reports(codes)
        same = block[:, None] == self._blocks[None, :]
        K = self.block_K[block][:, None]
        par = _parity(cell[:, None], self._rows[None, :])
        val = 2.0 / (K * (self._E + 1.0)) * np.where(par == 0, self._E, 1.0)
        return np.where(same, val, 0.0)

    def sample(self, codes, rng):
        codes = np.asarray(codes, dtype=np.intp)
        j = self._blocks[codes]
        rows = self._rows[codes]
        K = self.block_K[j]
        n = codes.size
        y = rng.integers(0, K, dtype=np.int64)  # uniform on [K_j], per user
        inside = rng.random(n) < self._keep
        in_set = _parity(rows, y) == 0
        y = np.where(in_set != inside, y ^ (rows & -rows), y)
        return self.offsets[j] + y


# ---------------------------------------------------------------- mechanisms
@fill_mechanism_doc
class HadamardResponse(_BudgetMechanism):
    """Hadamard response (HR), an epsilon-LDP mechanism with log2 K-bit reports.

    With K = 2^ceil(log2(k + 1)), category x is assigned row x + 1 of the
    K x K Sylvester Hadamard matrix and the set S_x of its +1 columns
    (``|S_x| = K/2``). The report is an integer in [0, K): in S_x with
    probability e^eps / (e^eps + 1), uniformly within the chosen side
    (Acharya, Sun & Zhang 2019). It is sample-optimal in the
    high-privacy regime, like RAPPOR, but each report is only log2 K bits and
    the estimate costs one fast Walsh-Hadamard transform, O(K log K).

    For large epsilon, the blocked (general) HR of the same paper is better:
    ``block_size=b`` cuts the domain into blocks of b - 1 values, each with
    its own b x b Hadamard matrix, and a report lands in the user's half of
    their block with probability proportional to e^eps (see
    :class:`HadamardResponseChannel`). ``block_size="auto"`` picks the b
    with the smallest expected l2 loss at the uniform distribution (plain
    HR in the high-privacy regime, smaller blocks as e^eps grows).

    The size of one report is ``mech.channel_.report_bits``.

    Parameters
    ----------
    %(epsilon)s
    block_size : None, int or "auto", default="auto"
        ``None`` is plain HR; an int (a power of two >= 2) is blocked HR with
        that block size; ``"auto"`` chooses it: plain HR up to about
        eps = 1, blocks that shrink as e^eps grows above (at k = 1000:
        b = 256 at eps = 2, 32 at eps = 4, 2 at eps = 10), which is what
        keeps HR accurate at large budgets (at eps = 4, n = 10^6: total
        variation 0.108 against 0.165 for plain HR at k = 1000).
    %(domain_and_seed)s

    Attributes
    ----------
    categories_ : ndarray of shape (k,)
    channel_ : HadamardResponseChannel
        The public spec; ``channel_.K`` is the number of outputs and
        ``channel_.b`` the block size.
    %(fitted_input)s

    See Also
    --------
    BlockHadamardResponse : HR inside the blocks of a partition (BSLDP).
    HighLowHadamardResponse : HR for a sensitive subset (HLLDP / ULDP).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp import HadamardResponse, EmpiricalEstimator
    >>> cats = list("abcde")
    >>> X = np.random.default_rng(0).choice(cats, p=[.5, .2, .1, .1, .1],
    ...                                     size=(50000, 1))
    >>> mech = HadamardResponse(epsilon=1.0, categories=cats, random_state=0)
    >>> reports = mech.fit_transform(X)
    >>> mech.channel_.K, mech.channel_.report_bits   # plain HR at eps = 1
    (8, 3.0)
    >>> EmpiricalEstimator().fit(reports).distribution_.round(1).tolist()
    [0.5, 0.2, 0.1, 0.1, 0.1]
    >>> HadamardResponse(epsilon=3.0, block_size="auto",
    ...                  categories=range(100)).fit().channel_.b
    16
    """

    _reports_are_values = False  # reports are output codes

    _parameter_constraints = {
        **BaseMechanism._parameter_constraints,
        "block_size": [None, Interval(Integral, 2, None, closed="left"), StrOptions({"auto"})],
    }

    def __init__(
        self,
        epsilon: float = 1.0,
        *,
        block_size: int | Literal["auto"] | None = "auto",
        categories: Categories = "auto",
        random_state: RandomStateLike = None,
    ) -> None:
        super().__init__(epsilon, categories=categories, random_state=random_state)
        self.block_size = block_size

    def _make_channel(self):
        b = self.block_size
        if isinstance(b, str):
            k = len(self.categories_)
            uniform = np.full(k, 1.0 / k)
            # Start from plain HR and move to smaller blocks only when they
            # are clearly better (ties, as at tiny budgets, keep plain HR),
            # skipping block sizes whose probabilities the float sampler
            # cannot realize at this budget (plain HR's error is the user's).
            best = HadamardResponseChannel(self.categories_, self.epsilon)
            best_loss = best.estimator_variance(uniform, 1).sum()
            size = _hadamard_size(k) // 2
            while size >= 2:
                try:
                    ch = HadamardResponseChannel(self.categories_, self.epsilon, size)
                except ValueError:
                    break  # smaller blocks need even more extreme probabilities
                loss = ch.estimator_variance(uniform, 1).sum()
                if loss < best_loss * (1 - 1e-9):
                    best, best_loss = ch, loss
                size //= 2
            return best
        return HadamardResponseChannel(self.categories_, self.epsilon, b)


@fill_mechanism_doc
class HighLowHadamardResponse(SensitiveSetMechanism):
    """High-low Hadamard response: (A, epsilon)-HLLDP and ULDP, O(log k) bits.

    Sensitive categories (the set A) run Hadamard response on S =
    2^ceil(log2(s + 1)) hashed outputs; a non-sensitive category reports
    itself with probability (e^eps - 1)/(e^eps + 1) and otherwise a uniform
    hashed output (Acharya et al. 2020, Sec. 5.1). It satisfies
    (A, epsilon)-high-low LDP and (A, Y_P = [S], epsilon)-ULDP, with the
    sample complexity of utility-optimized RAPPOR but log2(S + k - s) bits
    per report instead of k.

    Reports are integers: ``0..S-1`` are the hashed (protected) outputs,
    ``S + j`` is the j-th non-sensitive category (invertible).

    Parameters
    ----------
    %(epsilon)s
    sensitive : array-like, boolean mask or callable
        The sensitive categories A (non-empty).
    %(domain_and_seed)s

    Attributes
    ----------
    %(fitted_domain_sensitive)s
    channel_ : HighLowHadamardChannel
    %(fitted_input)s

    See Also
    --------
    UtilityOptimizedRAPPOR : same sample complexity with k-bit reports.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp import HighLowHadamardResponse, EmpiricalEstimator
    >>> from sklearn_uldp.privacy import check_uldp
    >>> cats = list(range(8))
    >>> mech = HighLowHadamardResponse(epsilon=1.0, sensitive=[0, 1, 2],
    ...                                categories=cats, random_state=0).fit()
    >>> bool(check_uldp(mech)), round(mech.channel_.report_bits, 2)
    (True, 3.17)
    >>> X = np.random.default_rng(1).choice(8, size=(100000, 1))
    >>> est = EmpiricalEstimator().fit(mech.transform(X))
    >>> bool(np.abs(est.distribution_ - 1 / 8).max() < 0.03)
    True
    """

    _reports_are_values = False  # reports are output codes

    def _make_channel(self):
        self.sensitive_mask_ = check_sensitive(self.sensitive, self.categories_)
        return HighLowHadamardChannel(self.categories_, self.epsilon, self.sensitive_mask_)


@fill_mechanism_doc
class UtilityOptimizedHadamardResponse(HighLowHadamardResponse):
    """Utility-optimized Hadamard response (uHR): high-low HR with A = X_S.

    The uHR baseline of the utility-optimized block design paper (arXiv
    2509.24173) is, channel and decoder alike, :class:`HighLowHadamardResponse`
    (Acharya et al. 2020, Sec. 5.1) with the sensitive set X_S as its
    high-privacy set A: a sensitive value runs Hadamard response on
    S = 2^ceil(log2(s + 1)) hashed outputs, a non-sensitive value reports
    itself with probability (e^eps - 1)/(e^eps + 1) and otherwise a uniform
    hashed output, and the estimate is ``(E+1)/(E-1) (2 q(S_x) - q([S]))``
    on X_S and ``(E+1)/(E-1) q(x)`` on X_N. This class is that mechanism
    under the paper's name, with no second implementation: its channel and
    spec are high-low HR's (``"hlhr"``), so reports of either are estimated
    with the other. It is (X_S, Y_P = [S], epsilon)-ULDP.

    Parameters
    ----------
    %(epsilon)s
    sensitive : array-like, boolean mask or callable
        The sensitive categories X_S (non-empty), high-low HR's set A.
    %(domain_and_seed)s

    Attributes
    ----------
    %(fitted_domain_sensitive)s
    channel_ : HighLowHadamardChannel
    %(fitted_input)s

    See Also
    --------
    HighLowHadamardResponse : the same mechanism.

    Examples
    --------
    >>> from sklearn_uldp.mechanisms._hadamard import (
    ...     HighLowHadamardResponse, UtilityOptimizedHadamardResponse)
    >>> cats = list(range(8))
    >>> uhr = UtilityOptimizedHadamardResponse(epsilon=1.0, sensitive=[0, 1, 2],
    ...                                        categories=cats).fit()
    >>> hl = HighLowHadamardResponse(epsilon=1.0, sensitive=[0, 1, 2],
    ...                              categories=cats).fit()
    >>> uhr.channel_ == hl.channel_, uhr.spec()["mechanism"]
    (True, 'hlhr')
    """


@fill_mechanism_doc
class BlockHadamardResponse(_BudgetMechanism):
    """Block-structured Hadamard response for (P, epsilon)-BSLDP.

    The domain is partitioned into blocks (e.g. cities); a user's block is
    sent in clear and Hadamard response runs inside it with K_j =
    2^ceil(log2(k_j + 1)) cells (Acharya et al. 2020, Sec. 6.1).
    Values in the same block are epsilon-indistinguishable; the block itself
    is not protected. With m equal blocks the sample complexity drops by a
    factor m compared with epsilon-LDP.

    Reports are integer codes ``offset_j + c``;
    ``mech.channel_.split_reports(reports)`` returns ``(block, c)``.

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy budget (> 0) inside each block.
    blocks : mapping, list of lists, array-like or callable
        The partition: ``{category: block_label}``, a list of lists of
        categories, block labels aligned with ``categories``, or a callable
        ``f(category) -> block_label``.
    %(domain_and_seed)s

    Attributes
    ----------
    categories_ : ndarray of shape (k,)
    blocks_ : ndarray of int of shape (k,)
        Block id of each category.
    channel_ : BlockHadamardChannel
    %(fitted_input)s

    Examples
    --------
    >>> from sklearn_uldp import BlockHadamardResponse
    >>> from sklearn_uldp.privacy import block_structured, check_context_aware
    >>> cats = ["bar", "cafe", "gym", "park", "zoo"]
    >>> blocks = [["bar", "cafe", "gym"], ["park", "zoo"]]
    >>> mech = BlockHadamardResponse(epsilon=1.0, blocks=blocks,
    ...                              categories=cats).fit()
    >>> mech.blocks_.tolist(), mech.channel_.n_outputs
    ([0, 0, 0, 1, 1], 8)
    >>> bool(check_context_aware(mech, block_structured(cats, blocks, 1.0)))
    True
    """

    _reports_are_values = False  # reports are output codes

    _parameter_constraints = {
        **BaseMechanism._parameter_constraints,
        "blocks": ["array-like", dict, callable],
    }

    def __init__(
        self,
        epsilon: float = 1.0,
        *,
        blocks: Mapping[Any, Any] | ArrayLike | Callable[[Any], Any],
        categories: Categories = "auto",
        random_state: RandomStateLike = None,
    ) -> None:
        super().__init__(epsilon, categories=categories, random_state=random_state)
        self.blocks = blocks

    def _make_channel(self):
        self.blocks_ = resolve_blocks(self.blocks, self.categories_)
        return BlockHadamardChannel(self.categories_, self.epsilon, self.blocks_)
