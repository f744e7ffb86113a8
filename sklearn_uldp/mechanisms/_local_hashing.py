"""Local hashing: optimized (OLH) and binary (BLH) local hashing.

Each user draws a public hash function (a *seed*), hashes the true value into
g buckets and reports (seed, g-ary randomized response of the bucket). With
g = e^eps + 1 (OLH) the variance is that of OUE with log2 of the
communication.

The seed space is **finite and explicit**: seeds are the g^r vectors of the
linear family over GF(g) (:func:`~sklearn_uldp.utils._hashing.linear_hash`,
g prime, r base-g digits per category), whose collision probability is
exactly 1/g for every pair of categories. So

* the exact channel over (seed, value) exists (:meth:`matrix`) and is checked
  for LDP like any other;
* the estimator is *exactly* unbiased (a seeded family of, say, 1024 random
  hash functions would collide with frequency 1/g only on average, and the
  estimate would carry that bias);
* the sufficient statistic is the histogram over the g^(r+1) (seed, value)
  pairs: it adds up across chunks, and the support counts
  ``#{i : h_{s_i}(x) = y_i}`` of all k categories come from it in
  O(g^r k), whatever the number of reports. EM is the generic EM of a
  :class:`~sklearn_uldp.mechanisms.CategoricalChannel` with structured
  ``forward``/``adjoint`` products over the (seed, category) hash table,
  O(g^r k) per step: no n x k hash evaluation ever.

References
----------
Wang, Blocki, Li & Jha, "Locally Differentially Private Protocols for
Frequency Estimation", USENIX Security 2017 (OLH, BLH).
"""

from __future__ import annotations

from numbers import Integral
from typing import Literal

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from ..utils._hashing import _digits, is_prime, linear_hash, linear_hash_table, n_digits
from ..utils._numba import use_compiled
from ..utils._sampling import randomized_response_codes
from ..utils._typing import ArrayLike, Categories, RandomStateLike
from ._base import BaseMechanism, _BudgetMechanism
from ._channel import MAX_MATRIX_OUTPUTS, CategoricalChannel
from ._docs import fill_mechanism_doc
from ._oracle_kernels import HAVE_NUMBA, linear_hash_blocks
from ._randomized_response import RandomizedResponseChannel, _urr_probabilities

__all__ = [
    "LocalHashingChannel",
    "BinaryLocalHashingChannel",
    "OptimizedLocalHashing",
    "BinaryLocalHashing",
    "optimal_hash_range",
]

#: Largest (seed, value) histogram a local-hashing channel accepts.
MAX_HASH_OUTPUTS = 1 << 24
#: Largest (seed, category) hash table kept in memory (uint8/uint16 cells);
#: beyond it the products recompute the table block by block.
_MAX_TABLE_CELLS = 1 << 25


def _check_hash_range(hash_range):
    if isinstance(hash_range, bool) or not isinstance(hash_range, Integral):
        raise TypeError(
            "hash_range must be a prime integer >= 2 (the number of hash "
            f"buckets g), got {hash_range!r} of type {type(hash_range).__name__}. "
            "Pass e.g. hash_range=3, or hash_range='optimal' to the mechanism."
        )
    g = int(hash_range)
    if not is_prime(g):
        raise ValueError(
            f"hash_range must be a prime >= 2, got {g}: the hash family is "
            "linear over the field GF(g), which needs g prime for its exact "
            "1/g collision probability. Pass the nearest prime (e.g. 2, 3, 5, "
            "7, 11, 13), or hash_range='optimal'."
        )
    return g


def _grr_gap(epsilon, g):
    """c1 - 1/g = (g - 1)(E - 1) / (g (E + g - 1)), without overflow."""
    z = np.exp(-epsilon)
    return (g - 1) * -np.expm1(-epsilon) / (g * (1.0 + (g - 1) * z))


def _null_variance_factor(epsilon, g):
    """n Var0 of local hashing with range g: (1/g)(1 - 1/g) / (c1 - 1/g)^2."""
    # At a budget so small that the gap's square underflows (1e-300) the
    # variance is infinite, its limit; the budget check refuses that epsilon.
    with np.errstate(divide="ignore"):
        return (1.0 / g) * (1.0 - 1.0 / g) / _grr_gap(epsilon, g) ** 2


def optimal_hash_range(epsilon: float, k: int, *, max_outputs: int = MAX_HASH_OUTPUTS) -> int:
    """The prime hash range g of OLH with the smallest variance.

    Wang et al. (2017) show that g = e^eps + 1 minimizes the variance of
    local hashing; the linear hash family needs g prime, so this returns the
    prime with the smallest null variance ``(1/g)(1 - 1/g) / (c1 - 1/g)^2``
    (``c1 = e^eps / (e^eps + g - 1)``), among those whose (seed, value)
    histogram has at most ``max_outputs`` cells (large budgets only; there
    k-ary randomized response is better anyway).

    Parameters
    ----------
    epsilon : float
    k : int
        Number of categories.
    max_outputs : int, default=2**24

    Returns
    -------
    g : int

    Examples
    --------
    >>> from sklearn_uldp.mechanisms._local_hashing import optimal_hash_range
    >>> [optimal_hash_range(eps, 1000) for eps in (0.5, 1.0, 2.0, 4.0)]
    [3, 3, 7, 53]
    """
    target = float(np.exp(min(float(epsilon), 700.0))) + 1.0
    best, best_var = 2, np.inf
    g = 2
    while g <= max(3.0, 2.0 * target + 3.0):
        if is_prime(g):
            if g ** (n_digits(k, g) + 1) > max_outputs:
                break
            var = _null_variance_factor(epsilon, g)
            if var < best_var * (1 - 1e-12):
                best, best_var = g, var
        g += 1
    return best


class LocalHashingChannel(CategoricalChannel):
    """Channel of local hashing with a prime hash range g (OLH; Wang et al. 2017).

    A user with value x draws a seed ``a`` uniformly among the ``H = g^r``
    vectors of GF(g)^r (r = number of base-g digits of a category code),
    hashes ``v = h_a(x) = <a, d(x)> mod g`` and reports ``(a, y)`` with y
    = v w.p. ``c1 = e^eps / (e^eps + g - 1)`` and each other bucket w.p.
    ``c2 = 1 / (e^eps + g - 1)``. So

    ``Q((a, y) | x) = (c1 if h_a(x) = y else c2) / H``,

    eps-LDP exactly (the ratio of two entries of one column is at most
    c1 / c2 = e^eps). The report is the integer ``a g + y``
    (:meth:`split_reports` gives ``(a, y)``), ``log2(g^(r+1))`` bits.

    The statistic of x is its support, ``[h_a(x) = y]``: for x' != x the
    family collides with probability exactly 1/g, so its frequency has mean
    ``m(x) = c1 p(x) + (1 - p(x)) / g`` and ``p_hat = (f - 1/g) / (c1 - 1/g)``
    is exactly unbiased, with variance ``a^2 m (1 - m) / n``.

    Parameters
    ----------
    categories : array-like of shape (k,)
    epsilon : float
    hash_range : int
        g, a prime.

    Examples
    --------
    >>> from sklearn_uldp.mechanisms._local_hashing import LocalHashingChannel
    >>> channel = LocalHashingChannel(["a", "b", "c"], epsilon=1.0, hash_range=3)
    >>> channel.n_seeds, channel.n_outputs, round(channel.report_bits, 3)
    (3, 9, 3.17)
    >>> channel.matrix().sum(axis=1).round(12).tolist()
    [1.0, 1.0, 1.0]
    """

    name = "olh"
    _spec_field_schemas = {
        **CategoricalChannel._spec_field_schemas,
        "hash_range": {
            "type": "integer",
            "minimum": 2,
            "description": "g, the number of hash buckets: a prime.",
        },
    }

    def __init__(self, categories: ArrayLike, epsilon: float, hash_range: int) -> None:
        super().__init__(categories, epsilon)
        g = self.hash_range = _check_hash_range(hash_range)
        k = self.n_categories
        self.n_digits = n_digits(k, g)
        self.n_seeds = g**self.n_digits
        if self.n_seeds * g > MAX_HASH_OUTPUTS:
            raise ValueError(
                f"hash_range={g} with k={k} categories gives {self.n_seeds * g} "
                f"(seed, value) pairs, more than {MAX_HASH_OUTPUTS}. Pass a "
                "smaller prime hash_range (the optimal one is about e^eps + 1; "
                "at budgets where it is this large, k-ary randomized response "
                "is more accurate)."
            )
        self._check_budget(f"local hashing with hash_range={g}")
        self.c1, self.c2, _ = _urr_probabilities(self.epsilon, g)
        self._gap = _grr_gap(self.epsilon, g)
        self._table_cache = None
        self._line_cache = None

    def _draw_probabilities(self, epsilon):
        c1, c2, _ = _urr_probabilities(epsilon, self.hash_range)
        return np.array([c1, 1.0 - c1, c2])

    def get_params(self):
        return {"epsilon": self.epsilon, "hash_range": self.hash_range}

    def __getstate__(self):
        # The hash table is a cache: pickled reports must not carry it.
        state = self.__dict__.copy()
        state["_table_cache"] = state["_line_cache"] = state["_digit_cache"] = None
        return state

    @property
    def n_outputs(self):
        return self.n_seeds * self.hash_range

    def protected_outputs(self):
        return np.ones(self.n_outputs, dtype=bool)

    def split_reports(self, codes):
        """``(seed, value)`` of report codes ``seed * g + value``.

        Examples
        --------
        >>> from sklearn_uldp.mechanisms._local_hashing import LocalHashingChannel
        >>> LocalHashingChannel([0, 1, 2], 1.0, 3).split_reports([7, 2])
        (array([2, 0]), array([1, 2]))
        """
        return np.divmod(np.asarray(codes, dtype=np.int64), self.hash_range)

    # ----------------------------------------------------------- hash table
    def _table_blocks(self):
        """Yield ``(first_seed, T)`` with ``T[a - first_seed, x] = h_a(x)``."""
        g, r, k, H = self.hash_range, self.n_digits, self.n_categories, self.n_seeds
        if H * k <= _MAX_TABLE_CELLS:
            if self._table_cache is None:
                self._table_cache = linear_hash_table(g, r, k)
            yield 0, self._table_cache
            return
        step = max(1, min(H, _MAX_TABLE_CELLS // (4 * k)))
        for lo in range(0, H, step):
            seeds = np.arange(lo, min(H, lo + step), dtype=np.int64)
            yield lo, linear_hash_table(g, r, k, seeds=seeds)

    def hash(self, seeds, codes):
        """``h_seed(code)`` elementwise (the users' hash evaluation)."""
        seeds = np.asarray(seeds, dtype=np.int64)
        codes = np.asarray(codes, dtype=np.int64)
        if (
            HAVE_NUMBA
            and use_compiled(seeds.size)  # the same hashes either way
            and self.hash_range > 2
            and seeds.ndim == codes.ndim == 1
        ):
            # One compiled pass over the users, several digits per lookup: a
            # cost per user of a few operations per block of digits, where
            # the (seed, code) table lookup missed the cache (and took its
            # g^r x k build at every fit) from k ~ 10^3 on.
            blocks = self._hash_blocks()
            out = np.empty(seeds.shape, dtype=np.int64)
            linear_hash_blocks(seeds, codes, *blocks, self.hash_range, out)
            return out
        if self.n_seeds * self.n_categories <= _MAX_TABLE_CELLS:
            table = next(self._table_blocks())[1]
            return table[seeds, codes].astype(np.int64)
        return linear_hash(seeds, codes, self.hash_range, self.n_digits)

    def _hash_blocks(self):
        """``(code_blocks, base, table)`` of :func:`linear_hash_blocks` (cached)."""
        if self.__dict__.get("_digit_cache") is None:
            g, r = self.hash_range, self.n_digits
            m = 1
            while g ** (m + 1) <= 256 and m < r:
                m += 1
            base = g**m
            n_blocks = -(-r // m)
            dtype = np.uint8 if base <= 256 else np.uint16
            code_blocks = _digits(np.arange(self.n_categories), base, n_blocks).astype(dtype)
            block_digits = _digits(np.arange(base), g, m)
            table = ((block_digits @ block_digits.T) % g).astype(dtype)
            self._digit_cache = (code_blocks, base, table)
        return self._digit_cache

    # --------------------------------------------------------------- users
    def sample(self, codes, rng):
        """Draw a seed per user, hash, then g-ary randomized response (vectorized)."""
        codes = np.asarray(codes, dtype=np.intp)
        seeds = rng.integers(0, self.n_seeds, size=codes.size, dtype=np.int64)
        buckets = self.hash(seeds, codes)
        values = randomized_response_codes(buckets, self.hash_range, self.c1, rng)
        return seeds * self.hash_range + values

    # ----------------------------------------------------------- structure
    def _lines(self):
        """Index arrays of the structured products (built once, cached).

        Every seed a != 0 is ``c a_l`` for one line representative ``a_l``
        (its lowest non-zero digit is 1) and one ``c`` in GF(g)*, and
        ``h_{c a_l}(x) = c h_{a_l}(x)``: the g - 1 seeds of a line hash alike
        up to a permutation of the buckets. So a product needs the buckets of
        the ``(g^r - 1) / (g - 1)`` representatives only, and those come from
        one r-dimensional FFT of size g^r over GF(g)^r
        (``[<a, d(x)> = z] = (1/g) sum_u w^(u (z - <a, d(x)>))``, w = e^(2 pi i/g))
        and one length-g FFT per line: O(g^r log g^r) per product whatever
        k, never a pass over a g^r x k hash table.

        Returns ``(line, forward_index, gather_source, gather_target)``.
        """
        if self._line_cache is None:
            g, r, H = self.hash_range, self.n_digits, self.n_seeds
            powers = g ** np.arange(r, dtype=np.int64)
            seeds = np.arange(1, H, dtype=np.int64)
            digits = (seeds[:, None] // powers) % g  # (H - 1, r)
            lead = digits[np.arange(seeds.size), np.argmax(digits != 0, axis=1)]
            inverse = np.zeros(g, dtype=np.int64)
            inverse[1:] = [pow(int(c), g - 2, g) for c in range(1, g)]
            rep = ((inverse[lead][:, None] * digits) % g) @ powers  # a_l of each seed
            reps = np.flatnonzero(np.bincount(rep, minlength=H))
            line_of = np.searchsorted(reps, rep)  # l(a)
            rep_digits = (reps[:, None] // powers) % g
            u = np.arange(g, dtype=np.int64)
            line = ((u[None, :, None] * rep_digits[:, None, :]) % g) @ powers
            z = np.arange(g, dtype=np.int64)
            n_lines = reps.size
            # B[a, y] = S[l(a), y / c(a)]; B[0, y] = P [y = 0] (two extra slots).
            forward = np.empty((H, g), dtype=np.intp)
            forward[0] = n_lines * g + 1
            forward[0, 0] = n_lines * g
            forward[1:] = line_of[:, None] * g + (inverse[lead][:, None] * z) % g
            # V~[l, z] = sum_{a on line l} v[a, c(a) z]
            source = (seeds[:, None] * g + (lead[:, None] * z) % g).ravel()
            target = (line_of[:, None] * g + z).ravel()
            self._line_cache = (
                line.astype(np.intp),
                forward.ravel(),
                source.astype(np.intp),
                target.astype(np.intp),
            )
        return self._line_cache

    def _bucket_mass(self, p):
        """B[a, y] = sum_x p(x) [h_a(x) = y], flattened as a g + y."""
        g, r, H = self.hash_range, self.n_digits, self.n_seeds
        line, forward, _, _ = self._lines()
        padded = np.zeros(H)
        padded[: self.n_categories] = p
        spectrum = np.fft.fftn(padded.reshape((g,) * r)).ravel()
        per_line = np.fft.ifft(spectrum[line], axis=1).real  # buckets of each a_l
        total = padded.sum()
        return np.concatenate([per_line.ravel(), [total, 0.0]])[forward]

    def _gather(self, v):
        """G(x) = sum_a v[a, h_a(x)] for a vector v over outputs."""
        g, r, H = self.hash_range, self.n_digits, self.n_seeds
        v = np.asarray(v, dtype=float)
        line, _, source, target = self._lines()
        folded = np.bincount(target, weights=v[source], minlength=line.size)
        coeffs = np.fft.ifft(folded.reshape(line.shape), axis=1) * g
        idx = line.ravel()
        spectrum = np.bincount(idx, weights=coeffs.real.ravel(), minlength=H) + 1j * np.bincount(
            idx, weights=coeffs.imag.ravel(), minlength=H
        )
        out = np.fft.fftn(spectrum.reshape((g,) * r)).ravel()[: self.n_categories]
        return out.real / g + v[0]  # seed 0 hashes every x to bucket 0

    def forward(self, p):
        p = np.asarray(p, dtype=float)
        B = self._bucket_mass(p)
        return (self.c2 * p.sum() + (self.c1 - self.c2) * B) / self.n_seeds

    def adjoint(self, v):
        v = np.asarray(v, dtype=float)
        return (self.c2 * v.sum() + (self.c1 - self.c2) * self._gather(v)) / self.n_seeds

    def matrix(self):
        """The exact channel over (seed, value): a (k, g^(r+1)) array."""
        if self.n_categories * self.n_outputs > MAX_MATRIX_OUTPUTS * 64:
            raise ValueError(
                f"The channel matrix would have {self.n_categories} x "
                f"{self.n_outputs} entries; it is only built for small domains."
            )
        return self._matrix_from(np.where(np.eye(self.hash_range, dtype=bool), self.c1, self.c2))

    def realized_matrix(self):
        """The channel :meth:`sample` realizes (see :meth:`Channel.realized_matrix`).

        Seeds are exact uniform integers; the randomized response on the g
        buckets is realized as :class:`~sklearn_uldp.mechanisms.RandomizedResponseChannel`'s.
        """
        grr = RandomizedResponseChannel(np.arange(self.hash_range), self.epsilon)
        return self._matrix_from(grr.realized_matrix())

    def _matrix_from(self, R):
        g, H, k = self.hash_range, self.n_seeds, self.n_categories
        T = linear_hash_table(g, self.n_digits, k).astype(np.intp)  # (H, k)
        # Q[x, a, y] = R[h_a(x), y] / H
        return (R[T.T] / H).reshape(k, H * g)

    # ----------------------------------------------------------- estimation
    def observed_frequency(self, stats):
        """Support frequencies ``#{i : h_{a_i}(x) = y_i} / n`` from the histogram."""
        return self._gather(np.asarray(stats.counts, dtype=float)) / stats.n

    def expected_frequency(self, p):
        p = np.asarray(p, dtype=float)
        return self.c1 * p + (p.sum() - p) / self.hash_range

    @property
    def coef_a(self):
        return np.full(self.n_categories, 1.0 / self._gap)

    @property
    def coef_b(self):
        return np.full(self.n_categories, -1.0 / (self.hash_range * self._gap))

    def likelihood(self, codes):
        seeds, values = self.split_reports(codes)
        x = np.arange(self.n_categories, dtype=np.int64)
        hit = self.hash(seeds[:, None], x[None, :]) == values[:, None]
        return np.where(hit, self.c1, self.c2)


class BinaryLocalHashingChannel(LocalHashingChannel):
    """Channel of binary local hashing (BLH): local hashing with g = 2.

    The hash is the parity of the common bits of the seed and the category
    code, ``popcount(a & x) mod 2`` (the linear family over GF(2)).

    Examples
    --------
    >>> from sklearn_uldp.mechanisms._local_hashing import BinaryLocalHashingChannel
    >>> channel = BinaryLocalHashingChannel(list(range(100)), epsilon=1.0)
    >>> channel.n_seeds, channel.report_bits
    (128, 8.0)
    """

    name = "blh"
    _spec_field_schemas = CategoricalChannel._spec_field_schemas

    def __init__(self, categories: ArrayLike, epsilon: float) -> None:
        super().__init__(categories, epsilon, 2)

    def get_params(self):
        return {"epsilon": self.epsilon}


_HASH_HINT = (
    "hash_range is the number g of hash buckets: 'optimal' (the prime closest "
    "in variance to e^eps + 1) or a prime integer such as 3."
)


@fill_mechanism_doc
class OptimizedLocalHashing(_BudgetMechanism):
    """Optimized local hashing (OLH), an epsilon-LDP frequency oracle.

    Each user draws a public hash function, hashes the value into g buckets
    (g about e^eps + 1) and reports the hash's seed with a g-ary randomized
    response of the bucket (Wang, Blocki, Li & Jha, USENIX Security 2017).
    Its variance is that of OUE, ``4 e^eps / (e^eps - 1)^2 / n`` per
    category, with reports of ``log2(g^(r+1)) ~ log2(k g)`` bits instead of k.

    The hash functions form a finite public family (the linear family over
    GF(g), collision probability exactly 1/g), so the exact channel over
    (seed, value) is available (:meth:`channel_matrix`), the estimator is
    exactly unbiased and the sufficient statistics are a histogram of
    (seed, value) pairs.

    Parameters
    ----------
    %(epsilon)s
    hash_range : "optimal" or int, default="optimal"
        g, a prime. ``"optimal"`` picks the prime with the smallest variance
        (:func:`optimal_hash_range`).
    %(domain_and_seed)s

    Attributes
    ----------
    categories_ : ndarray of shape (k,)
    hash_range_ : int
        The hash range g used.
    channel_ : LocalHashingChannel
        The public spec.
    %(fitted_input)s

    See Also
    --------
    BinaryLocalHashing : g = 2 (one bit of value per report).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp import EmpiricalEstimator
    >>> from sklearn_uldp.mechanisms._local_hashing import OptimizedLocalHashing
    >>> X = np.random.default_rng(0).choice(4, p=[.4, .3, .2, .1], size=(100_000, 1))
    >>> mech = OptimizedLocalHashing(epsilon=2.0, categories=range(4), random_state=0)
    >>> reports = mech.fit_transform(X)
    >>> mech.hash_range_, mech.channel_.n_outputs
    (7, 49)
    >>> EmpiricalEstimator().fit(reports).distribution_.round(1).tolist()
    [0.4, 0.3, 0.2, 0.1]
    """

    _reports_are_values = False  # reports are output codes

    _parameter_constraints = {
        **BaseMechanism._parameter_constraints,
        "hash_range": [StrOptions({"optimal"}), Interval(Integral, 2, None, closed="left")],
    }

    def __init__(
        self,
        epsilon: float = 1.0,
        *,
        hash_range: int | Literal["optimal"] = "optimal",
        categories: Categories = "auto",
        random_state: RandomStateLike = None,
    ) -> None:
        super().__init__(epsilon, categories=categories, random_state=random_state)
        self.hash_range = hash_range

    def _make_channel(self):
        g = self.hash_range
        if isinstance(g, str):
            g = optimal_hash_range(self.epsilon, len(self.categories_))
        self.hash_range_ = int(g)
        return LocalHashingChannel(self.categories_, self.epsilon, g)


@fill_mechanism_doc
class BinaryLocalHashing(_BudgetMechanism):
    """Binary local hashing (BLH), an epsilon-LDP frequency oracle.

    Local hashing with g = 2 buckets (Wang et al. 2017; the hash of Bassily
    & Smith's succinct histograms): the report is a seed and one randomized
    bit, the parity ``popcount(seed & x) mod 2`` kept w.p. e^eps/(e^eps + 1).
    Its variance is ``(e^eps + 1)^2 / (e^eps - 1)^2 / n`` per category,
    worse than OLH's except at small budgets.

    Parameters
    ----------
    %(epsilon)s
    %(domain_and_seed)s

    Attributes
    ----------
    categories_ : ndarray of shape (k,)
    channel_ : BinaryLocalHashingChannel
    %(fitted_input)s

    See Also
    --------
    OptimizedLocalHashing : the optimal number of buckets.

    Examples
    --------
    >>> from sklearn_uldp.mechanisms._local_hashing import BinaryLocalHashing
    >>> from sklearn_uldp.privacy import check_ldp
    >>> mech = BinaryLocalHashing(epsilon=1.0, categories=["a", "b", "c"]).fit()
    >>> mech.channel_matrix().shape, bool(check_ldp(mech))
    ((3, 8), True)
    """

    _reports_are_values = False  # reports are output codes

    def _make_channel(self):
        return BinaryLocalHashingChannel(self.categories_, self.epsilon)
