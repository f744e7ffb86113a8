"""Optimized local hashing over an open domain: the frequency oracle of every level.

The package's :class:`~sklearn_uldp.mechanisms.OptimizedLocalHashing` draws
its hash function from the linear family over the category codes, which
needs the domain. Here the domain is open (prefixes of items of up to 512
bits), so the h public hash functions are the Carter-Wegman functions of
:func:`~sklearn_uldp.utils._hashing.mersenne_hash`, applied to the 61-bit
key of the item (:func:`~sklearn_uldp.heavy_hitters._encoding.prefix_keys`),
h members drawn from a public seed (:func:`~sklearn_uldp.utils._hashing.hash_parameters`),
as the count-mean sketches of :mod:`sklearn_uldp.mechanisms` do. A user with
key x draws j uniform in [h] and reports ``(j, y)``, y the g-ary randomized
response (:func:`~sklearn_uldp.utils._sampling.randomized_response_codes`)
of the bucket ``h_j(x)``:

``Q((j, y) | x) = (c1 if h_j(x) = y else c2) / h``, ``c1 = e^eps / (e^eps + g - 1)``,
``c2 = 1 / (e^eps + g - 1)``,

eps-LDP (c1 / c2 = e^eps) whatever the keys. The collector's sufficient
statistic is the (h, g) table of counts of (j, y), which adds up and does
not grow with n; the support of any candidate x,
``S(x) = sum_j C[j, h_j(x)]``, costs O(h) per candidate. Over random hash
functions two keys collide with probability 1/g, so
``E[S(x)/n] = c1 p(x) + (1 - p(x)) / g`` and ``(S/n - 1/g) / (c1 - 1/g)`` is
OLH's unbiased estimate (Wang et al. 2017). The h functions are drawn once,
so x's collisions with the other items are one draw for all users: an error
of variance ``sum_{y != x} p(y)^2 / (h (g - 1))`` over the draw of the
functions, which :meth:`KeyedLocalHashing.estimate` adds to the standard
error. Protocols with several groups give each group its own functions
(``n_groups``).
"""

from __future__ import annotations

from numbers import Integral

import numpy as np

from ..mechanisms._local_hashing import _grr_gap, optimal_hash_range
from ..mechanisms._randomized_response import RandomizedResponseChannel, _urr_probabilities
from ..utils._hashing import hash_parameters, mersenne_hash
from ..utils._sampling import randomized_response_codes
from . import _kernels

__all__ = ["KeyedLocalHashing", "default_hash_range", "check_hash_range"]

#: Candidates whose hashes are computed at once (an h x block uint64 table).
_BLOCK_CELLS = 1 << 22
#: "numba" (one compiled pass) or "numpy" for the supports; the tests run both.
_KERNEL = "numba" if _kernels.HAVE_NUMBA else "numpy"


def default_hash_range(epsilon):
    """OLH's g for an open domain: the prime with the smallest variance near e^eps + 1."""
    return optimal_hash_range(epsilon, 2)


class KeyedLocalHashing:
    """OLH with h public Carter-Wegman hash functions of 61-bit keys.

    Parameters
    ----------
    epsilon : float
    hash_range : int
        g >= 2 (any integer; OLH's optimum is about e^eps + 1).
    n_hashes : int
        h, at most 65536.
    hash_seed : int
        Public seed of the hash functions.
    n_groups : int, default=1
        Groups of users with their own h functions each: group l uses the
        members ``l h .. (l + 1) h - 1`` of the seed's sequence (group 0's
        are the functions of ``n_groups=1``). Independent functions per
        group make one group's collisions independent of another's, so a
        group that estimates what another ranked does not inherit the
        ranking's favourable collisions.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp.heavy_hitters._oracle import KeyedLocalHashing
    >>> oracle = KeyedLocalHashing(2.0, hash_range=7, n_hashes=64, hash_seed=0)
    >>> keys = np.array([11, 22, 33])
    >>> Q = oracle.matrix(keys)
    >>> Q.shape, bool(np.allclose(Q.sum(axis=1), 1))
    ((3, 448), True)
    """

    def __init__(self, epsilon, hash_range, n_hashes, hash_seed=0, n_groups=1):
        for name, value, lo in (("hash_range", hash_range, 2), ("n_hashes", n_hashes, 1)):
            if isinstance(value, bool) or not isinstance(value, Integral) or value < lo:
                raise ValueError(f"{name} must be an integer >= {lo}, got {value!r}.")
        if n_hashes > 65536:
            raise ValueError(f"n_hashes must be at most 65536, got {n_hashes}.")
        self.epsilon = float(epsilon)
        self.hash_range = int(hash_range)
        self.n_hashes = int(n_hashes)
        if (
            isinstance(hash_seed, bool)
            or not isinstance(hash_seed, Integral)
            or not 0 <= hash_seed < 1 << 32
        ):
            raise ValueError(
                f"hash_seed must be an integer in [0, 2**32 - 1] (the public seed of the "
                f"hash functions), got {hash_seed!r}."
            )
        self.hash_seed = int(hash_seed)
        g = self.hash_range
        self.c1, self.c2, _ = _urr_probabilities(self.epsilon, g)
        self.gap = float(_grr_gap(self.epsilon, g))  # c1 - 1/g
        self.n_groups = int(n_groups)
        self._a, self._b = hash_parameters(self.hash_seed, self.n_groups * self.n_hashes)

    def _functions(self, group):
        """(a, b) of group ``group``'s h hash functions."""
        lo = int(group) * self.n_hashes
        return self._a[lo : lo + self.n_hashes], self._b[lo : lo + self.n_hashes]

    @property
    def n_outputs(self):
        return self.n_hashes * self.hash_range

    def null_variance_factor(self):
        """n Var[p_hat(x)] when p(x) = 0: (1/g)(1 - 1/g) / (c1 - 1/g)^2."""
        g = self.hash_range
        return (1.0 / g) * (1.0 - 1.0 / g) / self.gap**2

    # --------------------------------------------------------------- users
    def sample(self, keys, rng, groups=None):
        """Report codes ``j g + y`` for the keys (one draw per user, vectorized).

        ``groups`` (one per key, default 0) selects each user's functions.
        """
        keys = np.asarray(keys, dtype=np.int64)
        j = rng.integers(0, self.n_hashes, size=keys.size, dtype=np.int64)
        f = j if groups is None else np.asarray(groups, dtype=np.int64) * self.n_hashes + j
        buckets = mersenne_hash(self._a[f], self._b[f], keys, self.hash_range)
        y = randomized_response_codes(buckets, self.hash_range, self.c1, rng)
        return j * self.hash_range + np.asarray(y, dtype=np.int64)

    # ----------------------------------------------------------- collector
    def _bucket_blocks(self, keys, group=0):
        """Yield ``(lo, T)`` with ``T[j, i] = h_j(keys[lo + i])`` (group's functions)."""
        keys = np.asarray(keys, dtype=np.int64)
        step = max(1, _BLOCK_CELLS // self.n_hashes)
        a, b = self._functions(group)
        a, b = a[:, None], b[:, None]
        for lo in range(0, keys.size, step):
            yield lo, mersenne_hash(a, b, keys[None, lo : lo + step], self.hash_range)

    def support(self, table, keys, group=0):
        """``S(x) = sum_j table[j, h_j(x)]`` for each key (table of shape (h, g))."""
        table = np.asarray(table).reshape(self.n_hashes, self.hash_range)
        out = np.empty(np.size(keys))
        if _kernels.HAVE_NUMBA and _KERNEL == "numba":
            keys = np.ascontiguousarray(keys, dtype=np.int64)
            table = np.ascontiguousarray(table, dtype=np.float64)
            a, b = (np.ascontiguousarray(v) for v in self._functions(group))
            return _kernels.keyed_support(table, a, b, keys, out)
        rows = np.arange(self.n_hashes)[:, None]
        for lo, T in self._bucket_blocks(keys, group):
            out[lo : lo + T.shape[1]] = table[rows, T].sum(axis=0)
        return out

    def estimate(self, table, keys, group=0):
        """``(p_hat, standard_error, null_standard_error)`` of the keys' frequencies.

        ``table`` holds the counts of one group's reports; its total is the
        group's number of reports n. The standard error is OLH's exact one at
        the estimated frequency, ``sqrt(m (1 - m) / n) / (c1 - 1/g)`` with m
        the expected support frequency.
        """
        table = np.asarray(table, dtype=float)
        n = float(table.sum())
        if n == 0:
            nan = np.full(np.size(keys), np.nan)
            return nan, nan, np.inf
        f = self.support(table, keys, group) / n
        g = self.hash_range
        p_hat = (f - 1.0 / g) / self.gap
        m = np.clip(self.c1 * np.clip(p_hat, 0, 1) + (1 - np.clip(p_hat, 0, 1)) / g, 0, 1)
        variance = m * (1 - m) / (n * self.gap**2)
        # The h functions are drawn once (public), so the collisions of x
        # with the other items are one draw for all users: an error of
        # variance sum_{y != x} p(y)^2 / (h (g - 1)) over the draws of the
        # functions, which the users' noise does not average out. sum p^2 is
        # estimated by the keys' squared estimates less their noise (a lower
        # bound: items outside ``keys`` are left out).
        p2 = np.clip(p_hat**2 - variance, 0.0, None)
        collisions = np.clip(p2.sum() - p2, 0.0, None) / (self.n_hashes * (g - 1))
        se = np.sqrt(variance + collisions)
        return p_hat, se, float(np.sqrt(self.null_variance_factor() / n))

    # -------------------------------------------------------- exact channel
    def matrix(self, keys, *, realized=False, group=0):
        """The exact channel over (j, y) of the given keys: shape (K, h g)."""
        g, h = self.hash_range, self.n_hashes
        if realized:
            R = RandomizedResponseChannel(np.arange(g), self.epsilon).realized_matrix()
        else:
            R = np.where(np.eye(g, dtype=bool), self.c1, self.c2)
        T = next(self._bucket_blocks(keys, group))[1] if np.size(keys) else np.zeros((h, 0), int)
        return (R[T.T] / h).reshape(np.size(keys), h * g)

    def to_dict(self):
        return {
            "hash_range": self.hash_range,
            "n_hashes": self.n_hashes,
            "hash_seed": self.hash_seed,
        }


def check_hash_range(value, epsilon):
    """Resolve ``"optimal"`` or validate an integer g."""
    if isinstance(value, str) and value == "optimal":
        return default_hash_range(epsilon)
    if isinstance(value, bool) or not isinstance(value, Integral) or value < 2:
        raise ValueError(f"hash_range must be 'optimal' or an integer >= 2, got {value!r}.")
    return int(value)
