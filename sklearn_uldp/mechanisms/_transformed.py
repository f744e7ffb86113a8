"""The utility-optimized transformation of one-symbol LDP oracles: uLH and uHCMS.

He, Zhu, Liu, Pan and Dong ("Addressing Sensitivity Distinction in Local
Differential Privacy: A General Utility-Optimized Framework", USENIX
Security 2025) turn any LDP oracle into a ULDP one. The construction used
here is derived on the "Utility-optimized frontier" page of the docs
(``docs/frontier.md``; the paper's full text was not available to us, so the
derivation is ours, from its abstract and Murakami & Kawamoto's ULDP):

Let M be an eps-LDP oracle over the sensitive values X_S whose columns take
two values, ``Q_M(y | x) = C(y) e^(eps [x in Supp(y)])`` (a *pure* oracle:
k-RR, local hashing, Hadamard response, the Hadamard count-mean sketch,
subset selection and unary encoding all are). Its *transformation* is

* x in X_S: report M(x) (a protected output);
* x in X_N: report x itself (an invertible output) w.p. ``1 - |C|``, else a
  protected output y drawn from ``C / |C|`` (``|C| = sum_y C(y)``).

Every protected column is then ``C(y) e^(eps [x in Supp(y)])`` for x in X_S
and ``C(y)`` for x in X_N: its largest and smallest entries are at most
e^eps apart, and an invertible output comes from one non-sensitive value
only, so the channel is (X_S, Y_P, eps)-ULDP. ``C(y) = e^-eps max_x Q_M(y|x)``
is the smallest reference any ULDP channel with M's protected rows may give
a non-sensitive value on y, so no ULDP extension of M reports non-sensitive
values in clear more often. For k-RR the transformation is uRR, for subset
selection uBD, for Hadamard response uHR (high-low HR), for unary encoding
:class:`~sklearn_uldp.mechanisms.UtilityOptimizedUnaryEncoding`.

The estimator (the "pure ULDP" aggregation). M's linear statistic of a
sensitive v is an indicator t_v(y) (``[v in Supp(y)]``) with mean p* given v
and q_S given another sensitive value; a non-sensitive user's protected
report sets it w.p. ``q_N = sum_y C(y) t_v(y)`` (smaller than q_S). The
statistic of v is t_v on protected reports and the constant

    lambda = (q_S - q_N) / (1 - |C|)

on invertible ones, so that its mean ``(p* - q_S) p(v) + q_S`` is M's and
M's affine map ``p_hat = (f - q_S) / (p* - q_S)`` stays unbiased; a
non-sensitive u is estimated by ``count(u) / (n (1 - |C|))``. Both variances
are exact and in closed form (:meth:`estimator_variance`). For local hashing
lambda = 1/g: an invertible report counts as a report whose bucket a
uniform hash would give v.

Reports are one integer code: M's output code for a protected report, and
``n_outputs(M) + j`` for the invertible report of the j-th non-sensitive
category.
"""

from __future__ import annotations

from numbers import Integral
from typing import Literal

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from ..utils._hashing import is_prime, n_digits
from ..utils._typing import ArrayLike, Categories, RandomStateLike, Sensitive
from ..utils._validation import (
    check_sensitive,
    check_sensitive_mask,
    realized_probability,
)
from ._base import BaseMechanism
from ._block_design import UtilityOptimizedBlockDesign, UtilityOptimizedBlockDesignChannel
from ._channel import (
    MAX_MATRIX_OUTPUTS,
    CategoricalChannel,
    ReportStatistics,
    SensitiveSetMixin,
    sensitive_mask_schema,
)
from ._count_mean_sketch import _SKETCH_SCHEMAS, HadamardCountMeanSketchChannel
from ._docs import fill_mechanism_doc
from ._hadamard import HadamardResponseChannel, HighLowHadamardChannel
from ._local_hashing import MAX_HASH_OUTPUTS, LocalHashingChannel, _check_hash_range
from ._randomized_response import _urr_probabilities
from ._subset_selection import optimal_subset_size

__all__ = [
    "UtilityOptimizedLocalHashingChannel",
    "UtilityOptimizedLocalHashing",
    "UtilityOptimizedHadamardCountMeanSketchChannel",
    "UtilityOptimizedHadamardCountMeanSketch",
    "UtilityOptimizedBlockedHadamardChannel",
    "UtilityOptimizedBlockedHadamardResponse",
    "TransformedSubsetSelection",
    "optimal_ulh_hash_range",
    "ulh_variances",
]


class _TransformedChannel(SensitiveSetMixin, CategoricalChannel):
    """The transformation of a pure one-symbol oracle (module docstring).

    Subclasses build the oracle over the sensitive categories
    (:meth:`_make_base`, a :class:`CategoricalChannel` whose statistic is an
    indicator) and give the total of its base measure, uniform over its
    outputs for every oracle here (:meth:`_hide_and_keep`).

    Outputs: the base oracle's ``n_base`` outputs (protected), then one
    invertible output per non-sensitive category, in category order.
    """

    _spec_field_schemas = {
        **CategoricalChannel._spec_field_schemas,
        "sensitive": sensitive_mask_schema(),
    }
    #: What the budget check's message calls the oracle.
    _what = "the transformed oracle"

    def __init__(self, categories: ArrayLike, epsilon: float, sensitive: ArrayLike) -> None:
        super().__init__(categories, epsilon)
        self._sensitive = check_sensitive_mask(sensitive, self.n_categories)
        self._s_codes = np.flatnonzero(self._sensitive)
        self._n_codes = np.flatnonzero(~self._sensitive)
        self.s, self.t = int(self._s_codes.size), int(self._n_codes.size)
        if self.s < 2:
            raise ValueError(
                f"{type(self).__name__} needs at least two sensitive categories (the "
                f"oracle runs over them), got {self.s}. With one sensitive category "
                "use UtilityOptimizedRR (uRR)."
            )
        self._rank = np.zeros(self.n_categories, dtype=np.int64)
        self._rank[self._s_codes] = np.arange(self.s)
        self._rank[self._n_codes] = np.arange(self.t)
        self.base = self._make_base(self.categories[self._s_codes])
        self.n_base = int(self.base.n_outputs)
        self._hide, self._keep_n = self._hide_and_keep(self.epsilon)  # |C|, 1 - |C|
        self._floor = self._hide / self.n_base  # C(y), the same for every y
        self._check_budget(
            f"{self._what} with {self.s} sensitive of k={self.n_categories} categories"
        )
        # The base statistic's null mean q_S and its mean q_N under C.
        base_a, base_b = self.base.coef_a, self.base.coef_b
        self._q_s = float(np.mean(-base_b / base_a))
        measure = np.full(self.n_base, self._floor)
        nu = ReportStatistics(self.base, self._hide, measure)  # C / |C| as "reports"
        self._q_n = self._hide * self.base.observed_frequency(nu)
        self._lambda = (self._q_s - self._q_n) / self._keep_n if self.t else self._q_n * 0.0

    # --------------------------------------------------------------- hooks
    def _make_base(self, sensitive_categories):
        raise NotImplementedError

    def _hide_and_keep(self, epsilon):
        """(|C|, 1 - |C|) at ``epsilon``: the oracle's total base measure
        (uniform over its outputs) and its complement, computed stably."""
        raise NotImplementedError

    def _draw_probabilities(self, epsilon):
        # The base oracle checks its own draws; a non-sensitive value is
        # hidden w.p. |C| (keeping it gives an invertible output, which no
        # privacy ratio involves).
        return None if not self.t else np.array(self._hide_and_keep(epsilon))

    # ------------------------------------------------------------ structure
    @property
    def n_outputs(self):
        return self.n_base + self.t

    def protected_outputs(self):
        mask = np.zeros(self.n_outputs, dtype=bool)
        mask[: self.n_base] = True
        return mask

    def split_reports(self, codes):
        """``(protected, base_code, category)`` of report codes.

        ``base_code`` is the oracle's output code of a protected report (-1
        otherwise), ``category`` the code of the category an invertible
        report reveals (-1 for a protected one).

        Examples
        --------
        >>> from sklearn_uldp.mechanisms import UtilityOptimizedLocalHashingChannel
        >>> ch = UtilityOptimizedLocalHashingChannel(range(6), 1.0, [True] * 3 + [False] * 3, 3)
        >>> ch.n_base, ch.split_reports([4, ch.n_base + 1])
        (9, (array([ True, False]), array([ 4, -1]), array([-1,  4])))
        """
        codes = np.asarray(codes, dtype=np.int64)
        protected = codes < self.n_base
        base_code = np.where(protected, codes, -1)
        inv = np.clip(codes - self.n_base, 0, max(self.t - 1, 0))
        category = np.where(protected, -1, self._n_codes[inv] if self.t else -1)
        return protected, base_code, category

    def forward(self, p):
        p = np.asarray(p, dtype=float)
        m = np.empty(self.n_outputs)
        p_n = p[self._n_codes]
        m[: self.n_base] = self.base.forward(p[self._s_codes]) + self._floor * p_n.sum()
        m[self.n_base :] = self._keep_n * p_n
        return m

    def adjoint(self, v):
        v = np.asarray(v, dtype=float)
        out = np.empty(self.n_categories)
        v_p = v[: self.n_base]
        out[self._s_codes] = self.base.adjoint(v_p)
        out[self._n_codes] = self._floor * v_p.sum() + self._keep_n * v[self.n_base :]
        return out

    def matrix(self):
        if self.n_categories * self.n_outputs > MAX_MATRIX_OUTPUTS * 64:
            raise ValueError(
                f"The channel matrix would have {self.n_categories} x "
                f"{self.n_outputs} entries; it is only built for small domains."
            )
        return self._assemble(self.base.matrix(), self._keep_n)

    def realized_matrix(self):
        """The channel :meth:`sample` realizes (see :meth:`Channel.realized_matrix`).

        The oracle's own realized rows for the sensitive values; a
        non-sensitive value is kept when a 53-bit uniform is below
        ``1 - |C|``, and otherwise hidden at a uniform integer (exact).
        """
        if self.n_categories * self.n_outputs > MAX_MATRIX_OUTPUTS * 64:
            raise ValueError(
                f"The channel matrix would have {self.n_categories} x "
                f"{self.n_outputs} entries; it is only built for small domains."
            )
        keep = realized_probability(self._keep_n) if self.t else 0.0
        return self._assemble(self.base.realized_matrix(), keep)

    def _assemble(self, base_matrix, keep):
        Q = np.zeros((self.n_categories, self.n_outputs))
        Q[self._s_codes, : self.n_base] = base_matrix
        Q[self._n_codes, : self.n_base] = (1.0 - keep) / self.n_base
        Q[self._n_codes, self.n_base + np.arange(self.t)] = keep
        return Q

    def likelihood(self, codes):
        codes = np.asarray(codes, dtype=np.int64)
        protected = codes < self.n_base
        L = np.zeros((codes.size, self.n_categories))
        rows = np.flatnonzero(protected)
        if rows.size:
            L[np.ix_(rows, self._s_codes)] = self.base.likelihood(codes[rows])
            L[np.ix_(rows, self._n_codes)] = self._floor
        inv = np.flatnonzero(~protected)
        L[inv, self._n_codes[codes[inv] - self.n_base]] = self._keep_n
        return L

    # --------------------------------------------------------------- users
    def sample(self, codes, rng):
        """Privatize coded inputs: the oracle for X_S, keep-or-hide for X_N.

        Each choice takes its own draws: the oracle's, then one uniform
        (keep or hide) and one uniform integer (the hiding output) per
        non-sensitive user.
        """
        codes = np.asarray(codes, dtype=np.intp)
        out = np.empty(codes.size, dtype=np.int64)
        is_s = self._sensitive[codes]
        users = np.flatnonzero(is_s)
        if users.size:
            out[users] = self.base.sample(self._rank[codes[users]], rng)
        others = np.flatnonzero(~is_s)
        if others.size:
            keep = rng.random(others.size) < self._keep_n
            hidden = rng.integers(0, self.n_base, size=others.size, dtype=np.int64)
            out[others] = np.where(keep, self.n_base + self._rank[codes[others]], hidden)
        return out

    # ----------------------------------------------------------- estimation
    def observed_frequency(self, stats):
        counts = np.asarray(stats.counts)
        n = stats.n
        invertible = counts[self.n_base :]
        n_protected = n - int(invertible.sum())
        f = np.empty(self.n_categories)
        # sum of t_v over the protected reports, / n: the oracle's frequency
        # among them (which may hold a constant per report, as HCMS's), rescaled
        hits = np.zeros(self.s)
        if n_protected > 0:
            protected = ReportStatistics(self.base, n_protected, counts[: self.n_base])
            hits = self.base.observed_frequency(protected) * (n_protected / n)
        f[self._s_codes] = hits + self._lambda * invertible.sum() / n
        f[self._n_codes] = invertible / n
        return f

    def expected_frequency(self, p):
        p = np.asarray(p, dtype=float)
        out = np.empty(self.n_categories)
        out[self._s_codes] = (
            self.base.expected_frequency(p[self._s_codes]) + self._q_s * p[self._n_codes].sum()
        )
        out[self._n_codes] = self._keep_n * p[self._n_codes]
        return out

    @property
    def coef_a(self):
        a = np.empty(self.n_categories)
        a[self._s_codes] = self.base.coef_a
        a[self._n_codes] = 1.0 / self._keep_n
        return a

    @property
    def coef_b(self):
        b = np.zeros(self.n_categories)
        b[self._s_codes] = self.base.coef_b
        return b

    def estimator_variance(self, p, n):
        """Exact Var[p_hat(x)] of the linear estimator.

        A sensitive statistic is the indicator t_v on protected reports and
        lambda on invertible ones, so its second moment is
        ``P(t_v = 1) + lambda^2 P(invertible)``; a non-sensitive one is a
        Bernoulli frequency.
        """
        p = np.asarray(p, dtype=float)
        m = self.expected_frequency(p)
        p_n = p[self._n_codes].sum()
        second = m.copy()
        hit = self._protected_second_moment(p[self._s_codes], p_n)
        second[self._s_codes] = hit + self._lambda**2 * self._keep_n * p_n
        return self.coef_a**2 * (second - m**2) / n

    def null_variance(self, n, stats=None):
        """Var[p_hat(x)] when p(x) = 0, the worst case over the other categories.

        The variance is linear in p once p(x) = 0 (its mean is fixed), so the
        worst case is a point mass: on another sensitive value (the oracle's
        own null variance) or on a non-sensitive one. The non-sensitive
        categories' estimates are exact (0).
        """
        out = np.zeros(self.n_categories)
        base = self.base.null_variance(n)
        unit = np.zeros(self.s)
        hidden = self._protected_second_moment(unit, 1.0) + self._lambda**2 * self._keep_n
        a = self.base.coef_a
        out[self._s_codes] = np.maximum(base, a**2 * (hidden - self._q_s**2) / n)
        return out

    def _protected_second_moment(self, p_s, p_n):
        """E[t_v^2; protected report] for each sensitive v (p_s: their masses).

        For an indicator statistic t_v^2 = t_v: its mean under the sensitive
        users plus ``q_N`` per unit of non-sensitive mass.
        """
        return self.base.expected_frequency(p_s) + self._q_n * p_n


# ------------------------------------------------------------ local hashing
def ulh_variances(epsilon, g, p_sensitive, p_nonsensitive, n=1):
    """Var[p_hat] of uLH per category, closed form (module docstring).

    Parameters
    ----------
    epsilon : float
    g : int
        Hash range.
    p_sensitive, p_nonsensitive : array-like
        The true frequencies of the sensitive and non-sensitive categories
        (together a distribution).
    n : int, default=1

    Returns
    -------
    (var_sensitive, var_nonsensitive) : tuple of ndarray

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp.mechanisms._transformed import ulh_variances
    >>> vs, vn = ulh_variances(1.0, 3, np.full(10, 0.01), np.full(90, 0.01))
    >>> vs.round(3).tolist()[:2], vn.round(4).tolist()[:2]
    ([2.548, 2.548], [0.0274, 0.0274])
    """
    c1, c2, _ = _urr_probabilities(float(epsilon), int(g))
    keep = 1.0 - g * c2
    ps = np.asarray(p_sensitive, dtype=float)
    pn = np.asarray(p_nonsensitive, dtype=float)
    P_s, P_n = ps.sum(), pn.sum()
    a = 1.0 / (c1 - 1.0 / g)
    m = (c1 - 1.0 / g) * ps + 1.0 / g
    second = c1 * ps + (P_s - ps) / g + P_n * (c2 + keep / g**2)
    var_s = a**2 * (second - m**2) / n
    var_n = pn * (1.0 - keep * pn) / (keep * n)
    return var_s, var_n


def _worst_case_l2(epsilon, g, s, t):
    """max over b of uLH's l2 loss at b U(X_S) + (1 - b) U(X_N) (n = 1).

    By symmetry every sensitive value has mass b/s and every non-sensitive
    one (1 - b)/t: the loss is ``s Var_S + t Var_N`` (:func:`ulh_variances`
    with scalars), concave in b; evaluated on a grid of b.
    """
    b = np.linspace(0.0, 1.0, 41)
    c1, c2, _ = _urr_probabilities(float(epsilon), int(g))
    keep = 1.0 - g * c2
    gap = c1 - 1.0 / g
    ps, P_n = b / s, 1.0 - b
    m = gap * ps + 1.0 / g
    second = c1 * ps + (b - ps) / g + P_n * (c2 + keep / g**2)
    loss = s * (second - m**2) / gap**2
    if t:
        pn = P_n / t
        loss = loss + t * pn * (1.0 - keep * pn) / keep
    return float(loss.max())


def optimal_ulh_hash_range(
    epsilon: float, n_sensitive: int, n_nonsensitive: int, *, max_outputs: int = MAX_HASH_OUTPUTS
) -> int:
    """The prime hash range g of uLH with the smallest worst-case l2 loss.

    OLH's optimum (about e^eps + 1) minimizes the variance of the sensitive
    estimates; a smaller g passes non-sensitive values through more often
    (w.p. ``(e^eps - 1) / (e^eps + g - 1)``). This returns the prime g that
    minimizes the largest expected squared l2 loss over distributions (on the
    segment between the uniform distributions of X_S and X_N, where the
    maximum of this concave loss is), among those whose (seed, value)
    histogram has at most ``max_outputs`` cells.

    Parameters
    ----------
    epsilon : float
    n_sensitive, n_nonsensitive : int
        s and t = k - s.
    max_outputs : int, default=2**24

    Returns
    -------
    g : int

    Examples
    --------
    >>> from sklearn_uldp.mechanisms import optimal_ulh_hash_range
    >>> [optimal_ulh_hash_range(eps, 1000, 99000) for eps in (0.5, 1.0, 2.0, 4.0)]
    [3, 3, 7, 53]
    >>> optimal_ulh_hash_range(4.0, 4, 1000)   # few sensitive values: smaller g
    11
    """
    s, t = int(n_sensitive), int(n_nonsensitive)
    target = float(np.exp(min(float(epsilon), 700.0))) + 1.0
    best, best_loss = 2, np.inf
    # OLH's optimum is about e^eps + 1: no prime beyond twice that (nor
    # beyond 2^16, a report's hash range in any deployment) is a candidate
    for g in range(2, int(min(max(3.0, 2.0 * target + 3.0), 1 << 16)) + 1):
        if not is_prime(g):
            continue
        if g ** (n_digits(s, g) + 1) > max_outputs:
            break
        with np.errstate(all="ignore"):
            loss = _worst_case_l2(epsilon, g, s, t)
        if loss < best_loss * (1 - 1e-12):
            best, best_loss = g, loss
    return best


class UtilityOptimizedLocalHashingChannel(_TransformedChannel):
    """Channel of utility-optimized local hashing (uLH), (X_S, Y_P, eps)-ULDP.

    The transformation of OLH over the sensitive categories (module
    docstring of ``sklearn_uldp.mechanisms._transformed``): a sensitive x is
    reported as OLH does over X_S, ``(a, y)`` with seed a uniform among the
    ``H = g^r`` seeds of the linear family (r = base-g digits of s) and y
    the g-ary randomized response of ``h_a(x)``; a non-sensitive x is
    reported as itself w.p. ``(e^eps - 1)/(e^eps + g - 1)`` and otherwise as
    a uniform ``(a, y)``:

    ``Q((a, y) | x) = c1/H or c2/H`` (x in X_S, as ``h_a(x) = y`` or not),
    ``c2/H`` (x in X_N); ``Q(x | x) = 1 - g c2`` (x in X_N),

    ``c1 = e^eps/(e^eps + g - 1)``, ``c2 = 1/(e^eps + g - 1)``. The support
    frequency of a sensitive v gets ``1/g`` per invertible report, which
    makes OLH's estimator ``(f - 1/g)/(c1 - 1/g)`` unbiased; a non-sensitive
    u is estimated by ``count(u) / (n (1 - g c2))``.

    Reports are the integer ``a g + y`` (protected) or ``H g + j`` (the
    j-th non-sensitive category, invertible); the statistics are their
    histogram, ``H g + t`` counts, and every estimator works on them in
    O(H log H + k) (no pass over n x k hashes).

    Parameters
    ----------
    categories : array-like of shape (k,)
    epsilon : float
    sensitive : array-like of bool of shape (k,)
        At least two sensitive categories.
    hash_range : int
        g, a prime.

    Examples
    --------
    >>> from sklearn_uldp.mechanisms import UtilityOptimizedLocalHashingChannel
    >>> from sklearn_uldp.privacy import check_uldp
    >>> ch = UtilityOptimizedLocalHashingChannel(
    ...     list("abcde"), epsilon=1.0, sensitive=[True] * 3 + [False] * 2, hash_range=3)
    >>> ch.n_outputs, round(ch.pass_through, 3), bool(check_uldp(ch))
    (11, 0.364, True)
    """

    name = "ulh"
    _what = "uLH"
    _spec_field_schemas = {
        **_TransformedChannel._spec_field_schemas,
        "hash_range": {
            "type": "integer",
            "minimum": 2,
            "description": "g, the number of hash buckets: a prime.",
        },
    }

    def __init__(
        self, categories: ArrayLike, epsilon: float, sensitive: ArrayLike, hash_range: int
    ) -> None:
        self.hash_range = _check_hash_range(hash_range)
        super().__init__(categories, epsilon, sensitive)

    def _make_base(self, sensitive_categories):
        return LocalHashingChannel(sensitive_categories, self.epsilon, self.hash_range)

    def _hide_and_keep(self, epsilon):
        # C = c2 / H on each of the H g outputs: |C| = g c2, and
        # 1 - g c2 = (E - 1) / (E + g - 1), written with e^-eps.
        g, z = self.hash_range, np.exp(-epsilon)
        den = 1.0 + (g - 1) * z
        return float(g * z / den), float(-np.expm1(-epsilon) / den)

    @property
    def pass_through(self):
        """P(a non-sensitive value is reported as itself) = 1 - g c2."""
        return self._keep_n

    def get_params(self):
        return {
            "epsilon": self.epsilon,
            "sensitive": self._sensitive.copy(),
            "hash_range": self.hash_range,
        }


# ------------------------------------------------------- count-mean sketch
class UtilityOptimizedHadamardCountMeanSketchChannel(_TransformedChannel):
    """Channel of the utility-optimized Hadamard count-mean sketch (uHCMS).

    The transformation of Apple's HCMS over the sensitive categories (module
    docstring of ``sklearn_uldp.mechanisms._transformed``): a sensitive x is
    reported ``(j, l, b)`` as HCMS does; a non-sensitive x as itself w.p.
    ``(e^eps - 1)/(e^eps + 1)``, else as a uniform ``(j, l, b)``
    (``Q = (1 - keep)/(h m)`` each, HCMS's smaller probability). The
    agreement frequency of a sensitive v gets ``(1 + 1/m)/2`` per invertible
    report, which keeps Apple's debiased estimate unbiased (over the random
    hash functions, as HCMS's).

    Parameters
    ----------
    categories : array-like of shape (k,)
    epsilon : float
    sensitive : array-like of bool of shape (k,)
    n_buckets : int
        m, a power of two.
    n_hashes : int
        h.
    hash_seed : int, default=0

    Examples
    --------
    >>> from sklearn_uldp.mechanisms import UtilityOptimizedHadamardCountMeanSketchChannel
    >>> from sklearn_uldp.privacy import check_uldp
    >>> ch = UtilityOptimizedHadamardCountMeanSketchChannel(
    ...     range(6), 1.0, [True] * 4 + [False] * 2, n_buckets=4, n_hashes=2)
    >>> ch.n_outputs, bool(check_uldp(ch))
    (18, True)
    """

    name = "uhcms"
    _what = "uHCMS"
    _spec_field_schemas = {**_TransformedChannel._spec_field_schemas, **_SKETCH_SCHEMAS}

    def __init__(
        self,
        categories: ArrayLike,
        epsilon: float,
        sensitive: ArrayLike,
        n_buckets: int,
        n_hashes: int,
        hash_seed: int = 0,
    ) -> None:
        self._sketch = (n_buckets, n_hashes, hash_seed)
        super().__init__(categories, epsilon, sensitive)

    def _make_base(self, sensitive_categories):
        return HadamardCountMeanSketchChannel(sensitive_categories, self.epsilon, *self._sketch)

    def _hide_and_keep(self, epsilon):
        # C = (1 - keep) / (h m) on each of the 2 h m outputs: |C| = 2 / (E + 1)
        # and 1 - |C| = (E - 1) / (E + 1) = tanh(eps / 2).
        z = np.exp(-epsilon)
        return float(2.0 * z / (1.0 + z)), float(np.tanh(epsilon / 2.0))

    def get_params(self):
        return {
            "epsilon": self.epsilon,
            "sensitive": self._sensitive.copy(),
            **self.base._sketch_params(),
        }


# ------------------------------------------------------ Hadamard response
class UtilityOptimizedBlockedHadamardChannel(_TransformedChannel):
    """Channel of the transformation of (blocked) Hadamard response (uHR).

    HR over the sensitive categories (``block_size=b``: blocks of b - 1
    values, ``K = B b`` outputs, ``Q(y|x) = E/D`` on x's half of its block
    and ``1/D`` elsewhere, ``D = (b/2) E + K - b/2``); a non-sensitive x is
    reported as itself w.p. ``(b/2)(E - 1)/D`` and otherwise as a uniform
    output of [K] (``1/D`` each, HR's smaller probability). HR's statistic
    ``2 q(C_x) - q(block of x)`` has mean 0 under a uniform output, so the
    invertible reports need no correction (lambda = 0), and its second
    moment is the chance of a report in x's block. With ``block_size=None``
    (plain HR) this is high-low HR's channel
    (:class:`~sklearn_uldp.mechanisms.HighLowHadamardChannel`, which
    :func:`to_utility_optimized` returns then).

    Parameters
    ----------
    categories : array-like of shape (k,)
    epsilon : float
    sensitive : array-like of bool of shape (k,)
    block_size : int or None, default=None
        b, a power of two >= 2, or None for plain HR over X_S.

    Examples
    --------
    >>> from sklearn_uldp.mechanisms._transformed import (
    ...     UtilityOptimizedBlockedHadamardChannel)
    >>> from sklearn_uldp.privacy import check_uldp
    >>> ch = UtilityOptimizedBlockedHadamardChannel(
    ...     range(8), 3.0, [True] * 6 + [False] * 2, block_size=4)
    >>> ch.base.n_blocks, ch.n_outputs, bool(check_uldp(ch))
    (2, 10, True)
    """

    name = "ubhr"
    _what = "uHR"
    _spec_field_schemas = {
        **_TransformedChannel._spec_field_schemas,
        "block_size": HadamardResponseChannel._spec_field_schemas["block_size"],
    }

    def __init__(
        self,
        categories: ArrayLike,
        epsilon: float,
        sensitive: ArrayLike,
        block_size: int | None = None,
    ) -> None:
        self._block_size = block_size
        super().__init__(categories, epsilon, sensitive)

    def _make_base(self, sensitive_categories):
        return HadamardResponseChannel(sensitive_categories, self.epsilon, self._block_size)

    def _hide_and_keep(self, epsilon):
        # |C| = K / D, 1 - |C| = (b/2)(E - 1) / D, written with e^-eps.
        base = self.base
        half, z = base.b / 2.0, np.exp(-epsilon)
        den = half + (base.K - half) * z  # D e^-eps
        return float(base.K * z / den), float(half * -np.expm1(-epsilon) / den)

    def _protected_second_moment(self, p_s, p_n):
        # t_v^2 = [report in v's block]: b of the K uniform outputs.
        base = self.base
        return base._block_hit(p_s) + p_n * self._hide * base.b / base.K

    def get_params(self):
        return {
            "epsilon": self.epsilon,
            "sensitive": self._sensitive.copy(),
            "block_size": self.base.block_size,
        }


# -------------------------------------------------------------- mechanisms
class _TransformedMechanism(BaseMechanism):
    """Shared parts of the transformed one-symbol mechanisms."""

    _reports_are_values = False  # reports are output codes

    @property
    def pass_through_(self) -> float:
        """P(a non-sensitive value is reported as itself)."""
        return self.channel_._keep_n


@fill_mechanism_doc
class UtilityOptimizedLocalHashing(_TransformedMechanism):
    """Utility-optimized local hashing (uLH), an (X_S, Y_P, epsilon)-ULDP oracle.

    He et al.'s utility-optimized transformation (USENIX Security 2025) of
    optimized local hashing: a sensitive value is reported as OLH does over
    the sensitive set alone, ``(seed, g-ary randomized response of its
    hash)``, so its privacy is OLH's eps-LDP among the sensitive values; a
    non-sensitive value is reported as itself w.p.
    ``(e^eps - 1)/(e^eps + g - 1)`` and otherwise as a uniform (seed,
    bucket), indistinguishable within e^eps from any sensitive report.
    Reports are one integer each, and the estimators need only their
    histogram (``g^(r+1) + t`` counts, r the base-g digits of s): no n x k
    hash evaluation, which makes large domains (k = 10^5 and more) cheap.
    The channel and the estimator are derived in
    :class:`UtilityOptimizedLocalHashingChannel`.

    Parameters
    ----------
    %(epsilon_sensitive)s
    hash_range : "optimal" or int, default="optimal"
        g, a prime. ``"optimal"`` minimizes the worst-case expected l2 loss
        (:func:`optimal_ulh_hash_range`): OLH's g (about e^eps + 1) unless
        the sensitive set is small.
    %(domain_and_seed)s

    Attributes
    ----------
    %(fitted_domain_sensitive)s
    hash_range_ : int
        The hash range g used.
    pass_through_ : float
        P(a non-sensitive value is reported as itself).
    channel_ : UtilityOptimizedLocalHashingChannel
    %(fitted_input)s

    See Also
    --------
    OptimizedLocalHashing : the LDP oracle it transforms.
    UtilityOptimizedRR : uRR, the transformation of k-RR.
    to_utility_optimized : the transformation of any oracle of the package.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp import EmpiricalEstimator
    >>> from sklearn_uldp.mechanisms import UtilityOptimizedLocalHashing
    >>> X = np.random.default_rng(0).choice(20, size=(200_000, 1))
    >>> mech = UtilityOptimizedLocalHashing(epsilon=1.0, sensitive=range(5),
    ...                                     categories=range(20), random_state=0)
    >>> reports = mech.fit_transform(X)
    >>> mech.hash_range_, reports.shape
    (3, (200000, 1))
    >>> p_hat = EmpiricalEstimator().fit(reports).distribution_
    >>> bool(np.abs(p_hat - 1 / 20).max() < 0.02)
    True
    """

    _parameter_constraints = {
        **BaseMechanism._parameter_constraints,
        "sensitive": ["array-like", callable],
        "hash_range": [StrOptions({"optimal"}), Interval(Integral, 2, None, closed="left")],
    }

    def __init__(
        self,
        epsilon: float = 1.0,
        *,
        sensitive: Sensitive,
        hash_range: int | Literal["optimal"] = "optimal",
        categories: Categories = "auto",
        random_state: RandomStateLike = None,
    ) -> None:
        self.epsilon = epsilon
        self.sensitive = sensitive
        self.hash_range = hash_range
        self.categories = categories
        self.random_state = random_state

    def _make_channel(self):
        self.sensitive_mask_ = check_sensitive(self.sensitive, self.categories_)
        g = self.hash_range
        if isinstance(g, str):
            s = int(self.sensitive_mask_.sum())
            g = optimal_ulh_hash_range(self.epsilon, s, self.sensitive_mask_.size - s)
        self.hash_range_ = int(g)
        return UtilityOptimizedLocalHashingChannel(
            self.categories_, self.epsilon, self.sensitive_mask_, self.hash_range_
        )


@fill_mechanism_doc
class UtilityOptimizedHadamardCountMeanSketch(_TransformedMechanism):
    """Utility-optimized Hadamard count-mean sketch (uHCMS), (X_S, Y_P, epsilon)-ULDP.

    He et al.'s utility-optimized transformation (USENIX Security 2025) of
    Apple's Hadamard count-mean sketch: a sensitive value is reported as
    HCMS does over the sensitive set, a non-sensitive one as itself w.p.
    ``(e^eps - 1)/(e^eps + 1)`` and otherwise as a uniform (hash, Hadamard
    coordinate, bit). See :class:`UtilityOptimizedHadamardCountMeanSketchChannel`.

    Parameters
    ----------
    %(epsilon_sensitive)s
    n_buckets : int, default=1024
        m, a power of two.
    n_hashes : int, default=256
        h.
    %(hash_seed)s
    %(domain_and_seed)s

    Attributes
    ----------
    %(fitted_domain_sensitive)s
    pass_through_ : float
    channel_ : UtilityOptimizedHadamardCountMeanSketchChannel
    %(fitted_input)s

    Examples
    --------
    >>> from sklearn_uldp.mechanisms import UtilityOptimizedHadamardCountMeanSketch
    >>> from sklearn_uldp.privacy import check_uldp
    >>> mech = UtilityOptimizedHadamardCountMeanSketch(
    ...     epsilon=1.0, sensitive=[0, 1, 2], n_buckets=4, n_hashes=2,
    ...     categories=range(5)).fit()
    >>> mech.channel_.n_outputs, bool(check_uldp(mech))
    (18, True)
    """

    _parameter_constraints = {
        **BaseMechanism._parameter_constraints,
        "sensitive": ["array-like", callable],
        "n_buckets": [Interval(Integral, 2, None, closed="left")],
        "n_hashes": [Interval(Integral, 1, 65536, closed="both")],
        "hash_seed": [Interval(Integral, 0, (1 << 32) - 1, closed="both")],
    }

    def __init__(
        self,
        epsilon: float = 1.0,
        *,
        sensitive: Sensitive,
        n_buckets: int = 1024,
        n_hashes: int = 256,
        hash_seed: int = 0,
        categories: Categories = "auto",
        random_state: RandomStateLike = None,
    ) -> None:
        self.epsilon = epsilon
        self.sensitive = sensitive
        self.n_buckets = n_buckets
        self.n_hashes = n_hashes
        self.hash_seed = hash_seed
        self.categories = categories
        self.random_state = random_state

    def _make_channel(self):
        self.sensitive_mask_ = check_sensitive(self.sensitive, self.categories_)
        return UtilityOptimizedHadamardCountMeanSketchChannel(
            self.categories_,
            self.epsilon,
            self.sensitive_mask_,
            self.n_buckets,
            self.n_hashes,
            self.hash_seed,
        )


@fill_mechanism_doc
class UtilityOptimizedBlockedHadamardResponse(_TransformedMechanism):
    """The utility-optimized transformation of (blocked) Hadamard response.

    He et al.'s transformation (USENIX Security 2025) of
    :class:`~sklearn_uldp.mechanisms.HadamardResponse` with its block size:
    a sensitive value is reported as HR does over the sensitive set, a
    non-sensitive one as itself w.p. ``(b/2)(e^eps - 1)/D`` and otherwise
    as a uniform output (derivation in
    :class:`UtilityOptimizedBlockedHadamardChannel`). When the block size is
    (or resolves to) plain HR the channel is high-low HR's, the package's
    uHR (:class:`~sklearn_uldp.mechanisms.UtilityOptimizedHadamardResponse`).

    Parameters
    ----------
    %(epsilon_sensitive)s
    block_size : None, int or "auto", default="auto"
        As :class:`~sklearn_uldp.mechanisms.HadamardResponse`'s, over the
        sensitive set: ``"auto"`` picks the b with the smallest expected l2
        loss of the sensitive estimates at the uniform distribution.
    %(domain_and_seed)s

    Attributes
    ----------
    %(fitted_domain_sensitive)s
    pass_through_ : float
    channel_ : UtilityOptimizedBlockedHadamardChannel or HighLowHadamardChannel
    %(fitted_input)s

    Examples
    --------
    >>> from sklearn_uldp.mechanisms import UtilityOptimizedBlockedHadamardResponse
    >>> mech = UtilityOptimizedBlockedHadamardResponse(
    ...     epsilon=4.0, sensitive=range(100), categories=range(1000)).fit()
    >>> mech.channel_.name, mech.channel_.base.b
    ('ubhr', 4)
    >>> UtilityOptimizedBlockedHadamardResponse(
    ...     epsilon=0.5, sensitive=range(100), categories=range(1000)).fit().channel_.name
    'hlhr'
    """

    _parameter_constraints = {
        **BaseMechanism._parameter_constraints,
        "sensitive": ["array-like", callable],
        "block_size": [None, Interval(Integral, 2, None, closed="left"), StrOptions({"auto"})],
    }

    def __init__(
        self,
        epsilon: float = 1.0,
        *,
        sensitive: Sensitive,
        block_size: int | Literal["auto"] | None = "auto",
        categories: Categories = "auto",
        random_state: RandomStateLike = None,
    ) -> None:
        self.epsilon = epsilon
        self.sensitive = sensitive
        self.block_size = block_size
        self.categories = categories
        self.random_state = random_state

    def _make_channel(self):
        from ._hadamard import HadamardResponse

        self.sensitive_mask_ = check_sensitive(self.sensitive, self.categories_)
        b = self.block_size
        s = int(self.sensitive_mask_.sum())
        if isinstance(b, str):
            # HR's own choice over the sensitive set
            b = HadamardResponse(self.epsilon, block_size="auto", categories=range(s)).fit()
            b = b.channel_.block_size
        if b is None:  # plain HR: its transformation is high-low HR (uHR)
            return HighLowHadamardChannel(self.categories_, self.epsilon, self.sensitive_mask_)
        return UtilityOptimizedBlockedHadamardChannel(
            self.categories_, self.epsilon, self.sensitive_mask_, b
        )

    @property
    def pass_through_(self) -> float:
        """P(a non-sensitive value is reported as itself)."""
        channel = self.channel_
        return float(getattr(channel, "_keep_n", getattr(channel, "_own", np.nan)))


@fill_mechanism_doc
class TransformedSubsetSelection(UtilityOptimizedBlockDesign):
    """He et al.'s uSS: the utility-optimized transformation of subset selection.

    Subset selection over the sensitive set (a sensitive value is in its
    reported h-subset of X_S w.p. ``h e^eps / (h e^eps + s - h)``); a
    non-sensitive value is reported as itself w.p.
    ``h (e^eps - 1) / (h e^eps + s - h)`` and otherwise as a uniform
    h-subset. Its channel is uBD's with one subset size
    (:class:`~sklearn_uldp.mechanisms.UtilityOptimizedBlockDesignChannel`,
    spec ``"ubd"``), with the pure-ULDP estimator (a clear report counts
    ``(h - 1)/(s - 1)`` towards every sensitive category). What differs from
    :class:`UtilityOptimizedBlockDesign` is the choice of h: subset
    selection's own optimum over the s sensitive values (about
    ``s/(e^eps + 1)``,
    :func:`~sklearn_uldp.mechanisms._subset_selection.optimal_subset_size`),
    which keeps the worst-case l2 loss within 0.5 % of the ULDP converse
    bound at k = 1000 (docs: "Utility-optimized frontier"). The package's
    :class:`UtilityOptimizedSubsetSelection` is another design, the uBD
    paper's baseline (its clear reports carry a subset too).

    Parameters
    ----------
    %(epsilon_sensitive)s
    subset_size : int or "optimal", default="optimal"
        h, with 1 <= h <= max(1, s - 1); ``"optimal"``: subset selection's
        optimum over the sensitive set.
    %(categories)s
    %(bit_vector_output)s
    %(random_state)s

    Attributes
    ----------
    %(fitted_domain_sensitive)s
    subset_size_ : int
    channel_ : UtilityOptimizedBlockDesignChannel
    %(fitted_input)s

    Examples
    --------
    >>> from sklearn_uldp.mechanisms import TransformedSubsetSelection
    >>> mech = TransformedSubsetSelection(1.0, sensitive=range(100),
    ...                                   categories=range(1000)).fit()
    >>> mech.subset_size_, mech.channel_.name
    (27, 'ubd')
    """

    _parameter_constraints = {
        **UtilityOptimizedBlockDesign._parameter_constraints,
        "subset_size": [Interval(Integral, 1, None, closed="left"), StrOptions({"optimal"})],
    }

    def __init__(
        self,
        epsilon: float = 1.0,
        *,
        sensitive: Sensitive,
        subset_size: int | Literal["optimal"] = "optimal",
        categories: Categories = "auto",
        sparse_output: bool = False,
        packed_output: bool = False,
        random_state: RandomStateLike = None,
    ) -> None:
        self.epsilon = epsilon
        self.sensitive = sensitive
        self.subset_size = subset_size
        self.categories = categories
        self.sparse_output = sparse_output
        self.packed_output = packed_output
        self.random_state = random_state

    def _make_channel(self):
        self.sensitive_mask_ = check_sensitive(self.sensitive, self.categories_)
        h = self.subset_size
        if isinstance(h, str):
            s = int(self.sensitive_mask_.sum())
            h = 1 if s <= 2 else min(optimal_subset_size(float(self.epsilon), s), s - 1)
        channel = UtilityOptimizedBlockDesignChannel(
            self.categories_, self.epsilon, self.sensitive_mask_, int(h)
        )
        self.subset_size_ = channel.subset_size
        return channel
