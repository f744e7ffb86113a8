"""Apple's count-mean sketch (CMS) and Hadamard count-mean sketch (HCMS).

Both hash the domain into m buckets with one of h public hash functions
(chosen uniformly by each user), so the collector's sketch has h x m cells
whatever the size of the domain:

* **CMS**: the report is ``(j, v)``, v the one-hot m-bit vector of the
  bucket ``h_j(x)`` with every bit flipped w.p. ``1 / (1 + e^(eps/2))``;
* **HCMS**: the report is ``(j, l, b)``: one coordinate l of the Hadamard
  transform of that one-hot vector, ``H_m[l, h_j(x)] = +-1``, flipped w.p.
  ``1 / (1 + e^eps)`` -- one bit of value per user.

The hash functions are the Carter-Wegman family
``((a s(x) + b) mod (2^61 - 1)) mod m`` of the scrambled code s(x) (see
:mod:`sklearn_uldp.utils._hashing`),
h members drawn from the public integer ``hash_seed`` of the spec, so the
channel (and its exact matrix, for small k and m) is fixed and public.

The debiased estimate is Apple's: with f(x) the fraction of reports whose
statistic at ``h_j(x)`` is "on",
``p_hat(x) = (m / (m - 1)) ((f(x) - f0) / gain - 1 / m)``. Its expected
value is p(x) over the random choice of the hash functions (the published
analysis); for one fixed set of functions, categories that share buckets
under many of the h functions bias each other by about ``1 / sqrt(h m)``
(:meth:`collision_bias` computes it exactly). The EM estimator uses the exact
channel of the fixed functions and has no such bias.

References
----------
Apple Differential Privacy Team, "Learning with Privacy at Scale", Apple
Machine Learning Journal 1(8), 2017 (CMS, HCMS).
"""

from __future__ import annotations

from numbers import Integral

import numpy as np
from sklearn.utils._param_validation import Interval

from ..exceptions import ReportMismatchError
from ..utils._bits import bernoulli_packed, column_counts, pack_rows, packed_width, unpack_rows
from ..utils._hashing import hash_parameters, mersenne_hash, premix
from ..utils._numba import use_compiled
from ..utils._typing import ArrayLike, Categories, RandomStateLike
from ..utils._validation import realized_probability, warn_dense_reports
from ._base import BaseMechanism, _BudgetMechanism
from ._bit_rows import BitRows
from ._channel import (
    MAX_MATRIX_OUTPUTS,
    CategoricalChannel,
    Channel,
    ReportStatistics,
    _integer_codes,
    kept_reports,
    several_columns_hint,
)
from ._docs import fill_mechanism_doc
from ._hadamard import _parity, fwht
from ._oracle_kernels import numba, report_array, sketch_fill, sketch_fill_numpy
from ._rappor import _byte_realized, check_packed_reports
from ._reports import PackedReports

__all__ = [
    "CountMeanSketchChannel",
    "HadamardCountMeanSketchChannel",
    "CountMeanSketch",
    "HadamardCountMeanSketch",
]

#: Largest (hash, category) table kept in memory; beyond it the products
#: recompute it block by block of categories.
_MAX_TABLE_CELLS = 1 << 24
#: Users per call of the CMS sampler's pass (its random bytes, m per user,
#: stay a few MB and are reused by the allocator from chunk to chunk).
_KERNEL_CHUNK = 1 << 13

#: "numba" (the compiled pass for large jobs) or "numpy" (numba is not
#: importable); the two passes write the same rows and the tests run both.
_KERNEL = "numba" if numba is not None else "numpy"


def _check_positive_int(value, name, minimum, hint):
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(
            f"{name} must be an integer >= {minimum}, got {value!r} of type "
            f"{type(value).__name__}. {hint}"
        )
    if int(value) < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}. {hint}")
    return int(value)


_SKETCH_SCHEMAS = {
    "n_buckets": {
        "type": "integer",
        "minimum": 2,
        "description": "m, the number of hash buckets (a power of two for HCMS).",
    },
    "n_hashes": {
        "type": "integer",
        "minimum": 1,
        "maximum": 65536,
        "description": "h, the number of public hash functions.",
    },
    "hash_seed": {
        "type": "integer",
        "minimum": 0,
        "description": "Public seed of the h hash functions.",
    },
}


class _SketchHashing:
    """The h public hash functions of a sketch channel and their products.

    A sketch channel sets ``_power_of_two`` (whether m must be one),
    ``_short_name`` (for the budget check's message) and
    :meth:`_init_statistic` (the constants of its statistic).
    """

    _power_of_two: bool
    _short_name: str

    def __init__(
        self,
        categories: ArrayLike,
        epsilon: float,
        n_buckets: int,
        n_hashes: int,
        hash_seed: int = 0,
    ) -> None:
        # The channel base (Channel or CategoricalChannel) comes after this
        # mixin: it takes the domain and budget and checks the budget.
        super().__init__(categories, epsilon)  # type: ignore[call-arg]
        self._init_hashing(n_buckets, n_hashes, hash_seed)
        self._check_budget(  # type: ignore[attr-defined]
            f"{self._short_name} with m={self.n_buckets}"
        )
        self._init_statistic()

    def _init_statistic(self):
        raise NotImplementedError

    def _init_hashing(self, n_buckets, n_hashes, hash_seed):
        hint = "Pass e.g. n_buckets=1024, n_hashes=256, hash_seed=0."
        self.n_buckets = _check_positive_int(n_buckets, "n_buckets", 2, hint)
        if self._power_of_two and self.n_buckets & (self.n_buckets - 1):
            raise ValueError(
                f"n_buckets must be a power of two for the Hadamard transform, "
                f"got {self.n_buckets}. Pass e.g. 1024."
            )
        self.n_hashes = _check_positive_int(n_hashes, "n_hashes", 1, hint)
        if self.n_hashes > 65536:
            raise ValueError(
                f"n_hashes must be at most 65536 (the hash index is sent as 16 "
                f"bits), got {self.n_hashes}."
            )
        self.hash_seed = _check_positive_int(hash_seed, "hash_seed", 0, hint)
        if self.hash_seed >= 1 << 32:
            raise ValueError(f"hash_seed must be below 2**32, got {self.hash_seed}.")
        self._a, self._b = hash_parameters(self.hash_seed, self.n_hashes)
        self._table_cache = None

    def __getstate__(self):
        # The hash table is a cache: pickled reports must not carry it.
        state = self.__dict__.copy()
        state["_table_cache"] = None
        return state

    def _sketch_params(self):
        return {"n_buckets": self.n_buckets, "n_hashes": self.n_hashes, "hash_seed": self.hash_seed}

    def _table_blocks(self):
        """Yield ``(first_category, T)`` with ``T[j, x - first] = h_j(x)``."""
        h, k = self.n_hashes, self.n_categories
        if h * k <= _MAX_TABLE_CELLS:
            if self._table_cache is None:
                self._table_cache = self._hash_block(0, k)
            yield 0, self._table_cache
            return
        step = max(1, _MAX_TABLE_CELLS // h)
        for lo in range(0, k, step):
            yield lo, self._hash_block(lo, min(k, lo + step))

    def _hash_block(self, lo, hi):
        x = np.arange(lo, hi, dtype=np.int64)
        T = mersenne_hash(self._a[:, None], self._b[:, None], premix(x)[None, :], self.n_buckets)
        return T.astype(np.int32)

    def hash(self, j, codes):
        """``h_j(code)`` elementwise."""
        j = np.asarray(j, dtype=np.intp)
        codes = np.asarray(codes, dtype=np.intp)
        if self.n_hashes * self.n_categories <= _MAX_TABLE_CELLS:
            return next(self._table_blocks())[1][j, codes].astype(np.int64)
        return mersenne_hash(self._a[j], self._b[j], premix(codes), self.n_buckets)

    def _bucket_mass(self, p):
        """P[j, c] = sum_x p(x) [h_j(x) = c], shape (h, m)."""
        h, m = self.n_hashes, self.n_buckets
        out = np.zeros(h * m)
        rows = np.arange(h, dtype=np.int64)[:, None] * m
        for lo, T in self._table_blocks():
            w = np.broadcast_to(p[lo : lo + T.shape[1]], T.shape)
            out += np.bincount((rows + T).ravel(), weights=w.ravel(), minlength=h * m)
        return out.reshape(h, m)

    def _gather(self, W):
        """G(x) = sum_j W[j, h_j(x)] for an (h, m) array W."""
        out = np.empty(self.n_categories)
        rows = np.arange(self.n_hashes)[:, None]
        for lo, T in self._table_blocks():
            out[lo : lo + T.shape[1]] = W[rows, T].sum(axis=0)
        return out

    def _collisions(self, p):
        """C(x) = sum_x' p(x') (fraction of the h functions with h(x) = h(x'))."""
        return self._gather(self._bucket_mass(np.asarray(p, dtype=float))) / self.n_hashes

    # The linear estimator over random hash functions (see the module notes):
    # E f = f0 + gain (p (1 - 1/m) + P/m).
    def expected_frequency(self, p):
        p = np.asarray(p, dtype=float)
        m = self.n_buckets
        return self._f0 + self._gain * (p * (1.0 - 1.0 / m) + p.sum() / m)

    @property
    def coef_a(self):
        m = self.n_buckets
        return np.full(self.n_categories, m / ((m - 1.0) * self._gain))

    @property
    def coef_b(self):
        m = self.n_buckets
        return np.full(self.n_categories, -(m / (m - 1.0)) * (self._f0 / self._gain + 1.0 / m))

    def exact_expected_frequency(self, p):
        """E f(x) for these h hash functions (collisions counted exactly)."""
        return self._f0 + self._gain * self._collisions(p)

    def collision_bias(self, p):
        """E[p_hat(x)] - p(x) for these hash functions (0 on average over them).

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_uldp.mechanisms._count_mean_sketch import (
        ...     HadamardCountMeanSketchChannel)
        >>> ch = HadamardCountMeanSketchChannel(range(50), 1.0, n_buckets=16,
        ...                                     n_hashes=64)
        >>> bias = ch.collision_bias(np.full(50, 1 / 50))
        >>> bool(np.abs(bias).max() < 0.02)
        True
        """
        p = np.asarray(p, dtype=float)
        return self.coef_a * self.exact_expected_frequency(p) + self.coef_b - p


class HadamardCountMeanSketchChannel(_SketchHashing, CategoricalChannel):
    """Channel of Apple's Hadamard count-mean sketch (HCMS), epsilon-LDP.

    A user with value x draws j uniform in [h] and l uniform in [m] and
    reports ``(j, l, b)`` with b = ``H_m[l, h_j(x)]`` (+1 or -1, Sylvester's
    Hadamard matrix) kept w.p. ``e^eps / (1 + e^eps)``:

    ``Q((j, l, b) | x) = (1/2 + b H_m[l, h_j(x)] gain / 2) / (h m)``,

    ``gain = (e^eps - 1)/(e^eps + 1)``. Reports are the integers
    ``2 (j m + l) + (b == +1)`` (:meth:`split_reports`), ``log2(2 h m)`` bits.
    The statistic of x is the agreement ``[b = H_m[l, h_j(x)]]``; its
    frequency over all k categories comes from one fast Walsh-Hadamard
    transform per hash function of the (h, m) sketch of reports, and EM's
    products are as cheap (O(h m log m + h k)).

    Parameters
    ----------
    categories : array-like of shape (k,)
    epsilon : float
    n_buckets : int
        m, a power of two.
    n_hashes : int
        h.
    hash_seed : int, default=0
        Public seed of the hash functions.

    Examples
    --------
    >>> from sklearn_uldp.mechanisms._count_mean_sketch import (
    ...     HadamardCountMeanSketchChannel)
    >>> ch = HadamardCountMeanSketchChannel(["a", "b", "c"], 1.0, n_buckets=4,
    ...                                     n_hashes=2)
    >>> ch.n_outputs, ch.report_bits
    (16, 4.0)
    >>> ch.matrix().sum(axis=1).round(12).tolist()
    [1.0, 1.0, 1.0]
    """

    name = "hcms"
    _spec_field_schemas = {**CategoricalChannel._spec_field_schemas, **_SKETCH_SCHEMAS}
    _power_of_two, _short_name = True, "HCMS"

    def _init_statistic(self):
        self._keep = 1.0 / (1.0 + np.exp(-self.epsilon))
        # The agreement statistic: f0 = 1/2 + gain/2 * 0, gain/2 per unit of
        # collision mass (E[H[l, c] H[l, c']] = [c = c'] over l).
        self._half_gain = np.tanh(self.epsilon / 2.0) / 2.0
        self._f0, self._gain = 0.5, self._half_gain

    def _draw_probabilities(self, epsilon):
        keep = 1.0 / (1.0 + np.exp(-epsilon))
        return np.array([keep, 1.0 - keep])

    def get_params(self):
        return {"epsilon": self.epsilon, **self._sketch_params()}

    @property
    def n_outputs(self):
        return 2 * self.n_hashes * self.n_buckets

    def protected_outputs(self):
        return np.ones(self.n_outputs, dtype=bool)

    def split_reports(self, codes):
        """``(j, l, b)`` of report codes, b in {-1, +1}."""
        codes = np.asarray(codes, dtype=np.int64)
        jl, bit = np.divmod(codes, 2)
        j, l = np.divmod(jl, self.n_buckets)
        return j, l, 2 * bit - 1

    def sample(self, codes, rng):
        codes = np.asarray(codes, dtype=np.intp)
        n, h, m = codes.size, self.n_hashes, self.n_buckets
        j = rng.integers(0, h, size=n, dtype=np.int64)
        l = rng.integers(0, m, size=n, dtype=np.int64)
        plus = _parity(l, self.hash(j, codes)) == 0  # H_m[l, h_j(x)] = +1
        keep = rng.random(n) < self._keep
        return 2 * (j * m + l) + (plus == keep)

    def _matrix_from(self, keep):
        h, m, k = self.n_hashes, self.n_buckets, self.n_categories
        if k * self.n_outputs > MAX_MATRIX_OUTPUTS * 64:
            raise ValueError(
                f"The channel matrix would have {k} x {self.n_outputs} entries; "
                "it is only built for small domains and sketches."
            )
        T = self._hash_block(0, k)
        l = np.arange(m)
        plus = _parity(l[None, None, :], T.T[:, :, None]) == 0  # (k, h, m)
        Q = np.empty((k, h, m, 2))
        Q[..., 1] = np.where(plus, keep, 1.0 - keep)
        Q[..., 0] = 1.0 - Q[..., 1]
        return Q.reshape(k, -1) / (h * m)

    def matrix(self):
        return self._matrix_from(self._keep)

    def realized_matrix(self):
        """The channel :meth:`sample` realizes: j and l are exact integer draws."""
        return self._matrix_from(realized_probability(self._keep))

    def _split_hist(self, v):
        v = np.asarray(v, dtype=float).reshape(self.n_hashes, self.n_buckets, 2)
        return v[..., 1], v[..., 0]

    def forward(self, p):
        p = np.asarray(p, dtype=float)
        F = fwht(self._bucket_mass(p), axis=1)  # F[j, l] = sum_c P_j[c] H[l, c]
        out = np.empty((self.n_hashes, self.n_buckets, 2))
        out[..., 1] = p.sum() / 2.0 + self._half_gain * F
        out[..., 0] = p.sum() / 2.0 - self._half_gain * F
        return out.ravel() / (self.n_hashes * self.n_buckets)

    def adjoint(self, v):
        v = np.asarray(v, dtype=float)
        plus, minus = self._split_hist(v)
        W = fwht(plus - minus, axis=1)  # W[j, c] = sum_l (v+ - v-) H[l, c]
        return (v.sum() / 2.0 + self._half_gain * self._gather(W)) / (
            self.n_hashes * self.n_buckets
        )

    def observed_frequency(self, stats):
        """Fraction of reports agreeing with ``H_m[l, h_j(x)]``."""
        plus, minus = self._split_hist(stats.counts)
        W = fwht(plus - minus, axis=1)
        return 0.5 + self._gather(W) / (2.0 * stats.n)

    def likelihood(self, codes):
        j, l, b = self.split_reports(codes)
        x = np.arange(self.n_categories)
        plus = _parity(l[:, None], self.hash(j[:, None], x[None, :])) == 0
        return np.where(plus == (b[:, None] > 0), self._keep, 1.0 - self._keep)


class CountMeanSketchChannel(_SketchHashing, Channel):
    """Channel of Apple's count-mean sketch (CMS), epsilon-LDP.

    A user with value x draws j uniform in [h] and reports ``(j, v)``: v is
    the one-hot m-bit vector of ``h_j(x)`` with every bit flipped
    independently w.p. ``f = 1 / (1 + e^(eps/2))``. Two inputs' vectors
    differ in at most two bits, so the channel is eps-LDP. With
    ``w1 = e^(eps/2)`` and ``w0 = 1 / w1``,

    ``Q((j, v) | x) = c(j, v) (w1 if v[h_j(x)] = 1 else w0)``,

    ``c(j, v) = f^|v| (1 - f)^(m - |v|) / h``: the likelihood has RAPPOR's
    structure within each hash function, and EM keeps the reports' set bits
    grouped by j (one :class:`~sklearn_uldp.mechanisms.BitRows` per hash
    function, m/8 bytes a report at most).

    A report is one row ``[j, v_0, ..., v_{m-1}]`` of unsigned integers
    (uint8 when h <= 256, else uint16); ``m + log2(h)`` bits.

    Parameters
    ----------
    categories : array-like of shape (k,)
    epsilon : float
    n_buckets : int
        m.
    n_hashes : int
        h.
    hash_seed : int, default=0
        Public seed of the hash functions.

    Examples
    --------
    >>> from sklearn_uldp.mechanisms._count_mean_sketch import CountMeanSketchChannel
    >>> ch = CountMeanSketchChannel(["a", "b", "c"], 1.0, n_buckets=4, n_hashes=2)
    >>> ch.n_outputs, ch.report_bits
    (32, 5.0)
    >>> ch.matrix().sum(axis=1).round(12).tolist()
    [1.0, 1.0, 1.0]
    """

    name = "cms"
    report_format = "sketch"
    packed_reports = True  # the bucket bits; the hash index stays an integer

    @property
    def report_width(self):
        return self.n_buckets + 1

    def report_column_names(self, column):
        """``<column>_hash`` then one name per bucket bit, ``<column>_b<l>``."""
        return [f"{column}_hash"] + [f"{column}_b{b}" for b in range(self.n_buckets)]

    def report_dtypes(self, column):
        """The hash index and the bits, all of ``report_dtype`` (one array)."""
        return [np.dtype(self.report_dtype)] * self.report_width

    _spec_field_schemas = {**Channel._spec_field_schemas, **_SKETCH_SCHEMAS}
    _power_of_two, _short_name = False, "CMS"

    def _init_statistic(self):
        self._flip = 1.0 / (1.0 + np.exp(self.epsilon / 2.0))
        self._w1, self._w0 = np.exp(self.epsilon / 2.0), np.exp(-self.epsilon / 2.0)
        # Statistic: the bit at h_j(x); E = f + (1 - 2 f) * collision mass.
        self._f0, self._gain = self._flip, np.tanh(self.epsilon / 4.0)
        self.report_dtype = np.uint8 if self.n_hashes <= 256 else np.uint16

    def _draw_probabilities(self, epsilon):
        flip = 1.0 / (1.0 + np.exp(epsilon / 2.0))
        return np.array([flip, 1.0 - flip])

    def get_params(self):
        return {"epsilon": self.epsilon, **self._sketch_params()}

    @property
    def report_bits(self):
        return float(self.n_buckets + np.log2(self.n_hashes))

    @property
    def n_outputs(self):
        return self.n_hashes * 2**self.n_buckets

    def protected_outputs(self):
        return np.ones(self.n_outputs, dtype=bool)

    # ------------------------------------------------------------ sampling
    def sample(self, codes, rng, *, packed=False):
        """Rows ``[j, v]``: random bytes for the flips, the own bit redrawn.

        Every bit is 1 w.p. ``f`` from one random byte (and, on a tie with
        ``256 f``, a float64 uniform: exact, see
        :func:`~sklearn_uldp.utils._sampling.bernoulli_matrix`), then the bit
        of ``h_j(x)`` is replaced by a draw that keeps it 1 w.p. ``1 - f``.
        One pass per chunk of users writes the rows in place: compiled (numba)
        from ``COMPILE_MIN_WORK`` words of random bytes on, otherwise its
        numpy twin, which reads the same bytes and uniforms and writes the
        same rows (:func:`~._oracle_kernels.sketch_fill_numpy`). With
        ``packed=True`` the result is ``(j, bits)``: the hash indices (in
        ``report_dtype``) and the m bits packed 8 to a byte, written in place
        with the same law (:func:`~sklearn_uldp.utils._bits.bernoulli_packed`).
        """
        codes = np.asarray(codes, dtype=np.intp)
        n, h, m = codes.size, self.n_hashes, self.n_buckets
        j = rng.integers(0, h, size=n, dtype=np.int64)
        own = rng.random(n) < 1.0 - self._flip
        if packed:
            bits = report_array((n, packed_width(m)), np.uint8)
            padding = pack_rows(np.ones((1, m), dtype=np.uint8))[0]
            bernoulli_packed(
                bits, self._flip, rng, mask=padding, codes=self.hash(j, codes), own=own
            )
            return j.astype(self.report_dtype), bits
        out = report_array((n, m + 1), self.report_dtype)
        # The compiled pass from COMPILE_MIN_WORK reports on; below, its numpy
        # twin writes the same rows and compiles nothing. The unit is reports,
        # not words: the twin costs about 0.6 us more per report of 256
        # buckets (2.3x the compiled pass), so the 0.5-1.5 s compilation pays
        # only from some 10^5-10^6 reports.
        compiled = _KERNEL == "numba" and use_compiled(n)
        self._sample_bytes(out, j, self.hash(j, codes), own, rng, compiled=compiled)
        return out

    def _sample_bytes(self, out, j, buckets, own, rng, *, compiled):
        fill = sketch_fill if compiled else sketch_fill_numpy
        m = self.n_buckets
        scaled = self._flip * 256.0
        threshold = int(np.floor(scaled))
        fraction = scaled - threshold
        n_words = -(-m // 8)  # random bytes per row, a whole number of words
        n = out.shape[0]
        for lo in range(0, n, _KERNEL_CHUNK):
            hi = min(n, lo + _KERNEL_CHUNK)
            rows = hi - lo
            words = rng.bit_generator.random_raw(rows * n_words).reshape(rows, n_words)
            done = 0
            while done < rows:
                # A tie has probability 1/256: spares for 6 sigma more. A row
                # that runs out is redone from its own bytes with fresh
                # uniforms; the discarded ones are independent of the bytes,
                # so every bit keeps its exact law (no row is redrawn).
                mean = (rows - done) * m / 256.0
                ties = rng.random(int(mean + 6.0 * np.sqrt(mean)) + 64)
                done = fill(
                    out[lo:hi],
                    words,
                    threshold,
                    ties,
                    fraction,
                    j[lo:hi],
                    buckets[lo:hi],
                    own[lo:hi],
                    done,
                )

    # --------------------------------------------------------- exact matrix
    def output_labels(self):
        """Rows ``[j, v_0, ..., v_{m-1}]`` of every output (small m and h only)."""
        h, m = self.n_hashes, self.n_buckets
        if self.n_outputs > MAX_MATRIX_OUTPUTS:
            raise ValueError(
                f"{h} x 2^{m} outputs: the full channel matrix is only built for small sketches."
            )
        v = np.arange(2**m)
        bits = (v[:, None] >> np.arange(m)[None, :]) & 1
        j = np.repeat(np.arange(h), 2**m)
        return np.column_stack([j, np.tile(bits, (h, 1))]).astype(np.int64)

    def _matrix_from(self, flip, own):
        labels = self.output_labels()
        j, V = labels[:, 0], labels[:, 1:].astype(bool)
        T = next(self._table_blocks())[1]
        base = np.prod(np.where(V, flip, 1.0 - flip), axis=1) / self.n_hashes
        hit = V[np.arange(V.shape[0])[None, :], T[j].T]  # (k, outputs)
        # Replace the own bit's noise factor by its own probability.
        own_set = np.where(hit, own / flip, (1.0 - own) / (1.0 - flip))
        return base[None, :] * own_set

    def matrix(self):
        return self._matrix_from(self._flip, 1.0 - self._flip)

    def realized_matrix(self):
        """The channel :meth:`sample` realizes (random bytes for the flips)."""
        return self._matrix_from(_byte_realized(self._flip), realized_probability(1.0 - self._flip))

    # ----------------------------------------------------------- estimation
    def encode_reports(self, reports):
        """Validate rows ``[j, v]``; return ``(j, bits)``.

        ``bits`` is a dense (n, m) view of the reports, or their
        :class:`~sklearn_uldp.mechanisms.PackedReports` for packed ones.
        """
        if isinstance(reports, PackedReports):
            m, h = self.n_buckets, self.n_hashes
            if reports.index is None or reports.n_blocks != 1:
                raise ReportMismatchError(
                    f"Packed reports of {self!r} carry a hash index beside their "
                    f"{m} bits (one block); got {reports!r}."
                )
            check_packed_reports(reports, m, self)
            j = reports.index[:, 0].astype(np.int64)
            if j.size and j.max() >= h:
                raise ReportMismatchError(
                    f"Hash indices must lie in [0, {h}); got values up to "
                    f"{int(j.max())}. Were the reports produced with another n_hashes?"
                )
            return j, reports
        if hasattr(reports, "to_numpy"):
            reports = reports.to_numpy()
        arr = np.asarray(reports)
        m, h = self.n_buckets, self.n_hashes
        if arr.ndim != 2 or arr.shape[1] != m + 1:
            raise ReportMismatchError(
                f"Reports of {self!r} are rows [hash index, {m} bits] of shape "
                f"(n, {m + 1}); got shape {arr.shape}. Were they produced by "
                "another mechanism or sketch size?" + several_columns_hint(arr.shape, m + 1)
            )
        j = _integer_codes(np.ascontiguousarray(arr[:, 0]), self)
        bits = arr[:, 1:]
        if bits.dtype != np.uint8:
            if bits.dtype.kind not in "biu" or (bits.size and ((bits < 0).any() or bits.max() > 1)):
                raise ReportMismatchError(
                    "The bits of count-mean-sketch reports must be 0 or 1 "
                    "integers; pass the reports as the mechanism returned them."
                )
            bits = bits.astype(np.uint8)
        elif bits.size and bits.max() > 1:
            raise ReportMismatchError("The bits of count-mean-sketch reports must be 0 or 1.")
        if j.size and (j.min() < 0 or j.max() >= h):
            raise ReportMismatchError(
                f"Hash indices must lie in [0, {h}); got values up to "
                f"{int(j.max())}. Were the reports produced with another n_hashes?"
            )
        # The bits stay a view of the reports (rows of m + 1 bytes): a
        # contiguous copy would cost as much as the whole count (statistics
        # gathers the rows of each hash function anyway).
        return j, bits

    def statistics(self, codes, *, keep_reports=False):
        j, bits = codes
        h, m = self.n_hashes, self.n_buckets
        # n_hashes <= 2^16: a stable sort of 16-bit keys is a radix sort.
        order = np.argsort(j.astype(np.uint16), kind="stable")
        bounds = np.searchsorted(j[order], np.arange(h + 1))
        counts = np.zeros((h, m), dtype=np.int64)
        stores = {} if keep_reports else None
        # 32-bit accumulators are faster on 0/1 bytes and hold any count below 2^32.
        acc = np.uint32 if j.size < (1 << 32) else np.int64
        packed = isinstance(bits, PackedReports)
        for t in np.flatnonzero(np.diff(bounds)):  # a loop over hash functions
            if packed:  # counted in place; the store keeps the gathered rows
                rows = bits.data[order[bounds[t] : bounds[t + 1]]]
                counts[t] = column_counts(rows)[:m]
            else:
                rows = bits[order[bounds[t] : bounds[t + 1]]]
                counts[t] = rows.sum(axis=0, dtype=acc)
            if keep_reports:
                store = BitRows(m, self._flip)
                if packed:
                    store.append_packed(rows)
                else:
                    store.append_dense(rows)
                stores[int(t)] = store
        return ReportStatistics(self, int(j.size), counts.ravel(), stores)

    def merge_extra(self, a, b):
        if a is None or b is None:
            return None
        merged = dict(a)
        for t, store in b.items():
            merged[t] = merged[t] + store if t in merged else store
        return merged

    def observed_frequency(self, stats):
        C = np.asarray(stats.counts, dtype=float).reshape(self.n_hashes, self.n_buckets)
        return self._gather(C) / stats.n

    def em_gradient(self, stats, p, *, n_jobs=None):
        kept_reports(stats, "count-mean-sketch")
        p = np.asarray(p, dtype=float)
        P = self._bucket_mass(p)  # (h, m)
        delta = self._w1 - self._w0
        A = self._w0 * float(p.sum())
        sum_inv, sum_log = 0.0, 0.0
        t = np.zeros((self.n_hashes, self.n_buckets))
        for j, store in stats.extra.items():
            inv, log, tj = store.em_terms(A, delta * P[j], n_jobs=n_jobs)
            sum_inv += inv
            sum_log += log
            t[j] = tj
        g = (self._w0 * sum_inv + delta * self._gather(t)) / stats.n
        set_bits = float(np.sum(stats.counts))
        unset = stats.n * self.n_buckets - set_bits
        log_c = (
            set_bits * np.log(self._flip)
            + unset * np.log1p(-self._flip)
            - stats.n * np.log(self.n_hashes)
        )
        return g, float(sum_log + log_c)

    def likelihood(self, codes):
        j, bits = codes
        if isinstance(bits, PackedReports):
            bits = unpack_rows(bits.data, self.n_buckets)
        x = np.arange(self.n_categories)
        hit = bits[np.arange(j.size)[:, None], self.hash(j[:, None], x[None, :])]
        return np.where(hit == 1, self._w1, self._w0)


# ----------------------------------------------------------------- mechanisms
_SKETCH_CONSTRAINTS = {
    **BaseMechanism._parameter_constraints,
    "n_buckets": [Interval(Integral, 2, None, closed="left")],
    "n_hashes": [Interval(Integral, 1, 65536, closed="both")],
    "hash_seed": [Interval(Integral, 0, (1 << 32) - 1, closed="both")],
}


@fill_mechanism_doc
class CountMeanSketch(_BudgetMechanism):
    """Apple's count-mean sketch (CMS), an epsilon-LDP oracle for large domains.

    Each user hashes the value with one of h public hash functions (drawn
    uniformly) into m buckets and sends the hash index with the one-hot
    m-bit vector of its bucket, every bit flipped w.p. 1/(1 + e^(eps/2))
    (Apple Differential Privacy Team 2017). The collector's sufficient
    statistic is an h x m sketch, whatever the size of the domain; the
    debiased estimate is Apple's. Reports are rows ``[j, v_0..v_{m-1}]``.

    Parameters
    ----------
    %(epsilon)s
    n_buckets : int, default=256
        m, the number of buckets (the report carries m bits).
    n_hashes : int, default=256
        h, the number of hash functions (at most 65536).
    %(hash_seed)s
    %(categories)s
    packed_output : bool, default=False
        Return :class:`~sklearn_uldp.mechanisms.PackedReports`: the m bits
        of a report packed 8 to a byte, its hash index in ``index`` (ceil(m /
        8) + 1 or 2 bytes a report instead of m + 1 or 2 m + 2).
    %(random_state)s

    Attributes
    ----------
    categories_ : ndarray of shape (k,)
    channel_ : CountMeanSketchChannel
    %(fitted_input)s

    See Also
    --------
    HadamardCountMeanSketch : one bit of value per report.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp import EmpiricalEstimator
    >>> from sklearn_uldp.mechanisms._count_mean_sketch import CountMeanSketch
    >>> X = np.random.default_rng(0).choice(50, size=(20_000, 1))
    >>> mech = CountMeanSketch(epsilon=2.0, n_buckets=64, n_hashes=16,
    ...                        categories=range(50), random_state=0)
    >>> reports = mech.fit_transform(X)
    >>> reports.shape
    (20000, 65)
    >>> p_hat = EmpiricalEstimator().fit(reports).distribution_
    >>> bool(np.abs(p_hat - 1 / 50).mean() < 0.01)
    True
    """

    _parameter_constraints = {**_SKETCH_CONSTRAINTS, "packed_output": ["boolean"]}

    def __init__(
        self,
        epsilon: float = 1.0,
        *,
        n_buckets: int = 256,
        n_hashes: int = 256,
        hash_seed: int = 0,
        categories: Categories = "auto",
        packed_output: bool = False,
        random_state: RandomStateLike = None,
    ) -> None:
        super().__init__(epsilon, categories=categories, random_state=random_state)
        self.n_buckets = n_buckets
        self.n_hashes = n_hashes
        self.hash_seed = hash_seed
        self.packed_output = packed_output

    def _make_channel(self):
        return CountMeanSketchChannel(
            self.categories_, self.epsilon, self.n_buckets, self.n_hashes, self.hash_seed
        )

    def _sample(self, codes, rng):
        if not self.packed_output:  # said before the memory is spent (issue 30)
            warn_dense_reports(len(codes), self.n_buckets + 1, owner=type(self).__name__)
        return self.channel_.sample(codes, rng, packed=self.packed_output)

    def _wrap_reports(self, outputs, column, X):
        if self.packed_output:
            from ._base import _transform_output

            if _transform_output(self) == "pandas":
                raise ValueError(
                    "Pandas output does not support packed reports: use "
                    "packed_output=False with set_output(transform='pandas'), or "
                    "unpack them (PackedReports.toarray())."
                )
            j, bits = outputs
            return PackedReports(bits, self.channel_.n_buckets, self.channel_, j)
        return self._container(outputs, X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = []
        return tags


@fill_mechanism_doc
class HadamardCountMeanSketch(_BudgetMechanism):
    """Apple's Hadamard count-mean sketch (HCMS): one bit of value per report.

    Each user hashes the value with one of h public hash functions into m
    buckets (m a power of two), picks a uniform coordinate l of the
    Hadamard transform of the bucket's one-hot vector and sends
    ``(j, l, +-1)``, the sign flipped w.p. 1/(1 + e^eps) (Apple Differential
    Privacy Team 2017). Reports are the integers ``2 (j m + l) + (sign > 0)``
    (``channel_.split_reports``), ``log2(2 h m)`` bits.

    Parameters
    ----------
    %(epsilon)s
    n_buckets : int, default=1024
        m, a power of two.
    n_hashes : int, default=256
        h (at most 65536).
    %(hash_seed)s
    %(domain_and_seed)s

    Attributes
    ----------
    categories_ : ndarray of shape (k,)
    channel_ : HadamardCountMeanSketchChannel
    %(fitted_input)s

    See Also
    --------
    CountMeanSketch : m bits per report, lower variance.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp import EMEstimator
    >>> from sklearn_uldp.mechanisms._count_mean_sketch import HadamardCountMeanSketch
    >>> X = np.random.default_rng(0).choice(4, p=[.4, .3, .2, .1], size=(200_000, 1))
    >>> mech = HadamardCountMeanSketch(epsilon=2.0, n_buckets=32, n_hashes=8,
    ...                                categories=range(4), random_state=0)
    >>> EMEstimator().fit(mech.fit_transform(X)).distribution_.round(1).tolist()
    [0.4, 0.3, 0.2, 0.1]
    """

    _reports_are_values = False  # reports are output codes

    _parameter_constraints = _SKETCH_CONSTRAINTS

    def __init__(
        self,
        epsilon: float = 1.0,
        *,
        n_buckets: int = 1024,
        n_hashes: int = 256,
        hash_seed: int = 0,
        categories: Categories = "auto",
        random_state: RandomStateLike = None,
    ) -> None:
        super().__init__(epsilon, categories=categories, random_state=random_state)
        self.n_buckets = n_buckets
        self.n_hashes = n_hashes
        self.hash_seed = hash_seed

    def _make_channel(self):
        return HadamardCountMeanSketchChannel(
            self.categories_, self.epsilon, self.n_buckets, self.n_hashes, self.hash_seed
        )
