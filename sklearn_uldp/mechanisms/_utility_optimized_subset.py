"""Utility-optimized subset selection (uSS).

References
----------
The uSS baseline of the utility-optimized block design paper (arXiv
2509.24173, 2025), the utility-optimized version of k-subset selection (Ye &
Barg, IEEE Trans. Inf. Theory 2018; Wang et al. 2016).

Channel
-------
With s = ``|X_S|``, t = k - s, E = e^eps, a subset size h, D = h E + s - h
and C = binom(s, h):

* sensitive x: exactly uBD's: x enters the h-subset T w.p. h E / D, the
  rest of T uniform, so ``Q(T|x) = s E^[x in T] / (D C)``;
* non-sensitive x: a uniform h-subset T w.p. s / D (``Q(T|x) = s / (D C)``,
  as for uBD), its own value alone w.p. ``1 - f``, or the *pair* (T, x) of a
  uniform h-subset and its own value w.p. ``f z`` with
  ``f z = s (E-1)(h-1) / ((s-1) D)``.

Every protected output (an h-subset) has likelihood ratio at most E, and the
own value and the pairs are invertible (only x produces them): the channel
is (X_S, Y_P, eps)-ULDP with Y_P the h-subsets. The pairs make the plain
per-bit frequency unbiased: a non-sensitive x' sets the bit of a sensitive x
w.p. ``h/D + f z h/s = h (E (h-1) + s - h) / (D (s-1))``, the same as another
sensitive x' does, so ``p_hat(x) = (q(bit x) - c_S) / (h E/D - c_S)`` on X_S
and ``q(bit x) D / (h (E-1))`` on X_N, which is the reference decoder. uBD
gets the same correction without the pairs' extra noise (its statistic adds
``(h-1)/(s-1)`` times the invertible frequency), so uSS is never better
than uBD with the same h; it is here to reproduce the paper's comparison.
With h = 1 there are no pairs and uSS is exactly uRR.

The size h minimizes the worst-case bound of the reference code:
``n E||p_hat - p||^2 <= A + max(B, C)`` (each minus the same constant 1) with
``A = s q (1-q) / d^2``, ``B = (1 - 2q)/d`` and ``C = 1/z``, q = c_S,
d = h E / D - c_S, z = h (E-1)/D.
"""

from __future__ import annotations

import math
from numbers import Integral
from typing import Literal

import numpy as np
import scipy.sparse as sp
from sklearn.utils._param_validation import Interval, StrOptions

from ..exceptions import ReportMismatchError
from ..utils._bits import set_packed_bits
from ..utils._typing import ArrayLike, Categories, RandomStateLike, Sensitive
from ..utils._validation import check_sensitive, realized_probability
from ._block_design import (
    UtilityOptimizedBlockDesign,
    UtilityOptimizedBlockDesignChannel,
    _uniform_subsets,
)
from ._channel import Channel
from ._docs import fill_mechanism_doc

__all__ = [
    "UtilityOptimizedSubsetSelectionChannel",
    "UtilityOptimizedSubsetSelection",
    "uss_worst_case_bound",
]


def uss_worst_case_bound(n_sensitive: int, epsilon: float, subset_size: int) -> float:
    """The reference code's worst-case bound of uSS with subset size h.

    ``A + max(B, C)`` (module docstring): n times the expected squared l2
    loss, maximized over distributions, minus 1. Used to choose h.

    Examples
    --------
    >>> from sklearn_uldp.mechanisms._utility_optimized_subset import uss_worst_case_bound
    >>> round(uss_worst_case_bound(10, 1.0, 3), 3)
    30.332
    """
    s, h = int(n_sensitive), int(subset_size)
    E1 = math.expm1(float(epsilon))
    E = E1 + 1.0
    A = s * (h * E - E + s - h) * (h * E - h + s - 1) / (h * (s - h) * E1**2)
    B = (h * (1 - h) * E1 + (s - 1) * (s - 2 * h)) / (h * (s - h) * E1)
    C = s / (h * E1)
    return A + max(B, C)


def _optimal_uss_size(s, epsilon):
    if s <= 2:
        return 1
    try:
        bounds = [uss_worst_case_bound(s, epsilon, h) for h in range(1, s)]
    except (OverflowError, ZeroDivisionError):
        # e^eps - 1 overflows (eps > ~354) or vanishes (eps < ~1e-162): no
        # sampler realizes such a budget, and the channel built next says so
        # (with the budgets it can realize); any h gives that message.
        return 1
    return int(np.argmin(bounds)) + 1


class UtilityOptimizedSubsetSelectionChannel(UtilityOptimizedBlockDesignChannel):
    """Channel of utility-optimized subset selection (uSS), (X_S, Y_P, eps)-ULDP.

    uBD's channel on sensitive inputs; a non-sensitive input reports a uniform
    h-subset, its own value, or the pair of both (module docstring of
    ``sklearn_uldp.mechanisms._utility_optimized_subset``). Reports are 0/1
    vectors over the categories: h sensitive bits (protected), one
    non-sensitive bit (invertible), or one non-sensitive bit and h sensitive
    bits (a pair, invertible). With h = 1 it is uRR.

    Parameters
    ----------
    categories : array-like of shape (k,)
    epsilon : float
    sensitive : array-like of bool of shape (k,)
    subset_size : int
        h, with 1 <= h <= max(1, s - 1).

    Examples
    --------
    >>> from sklearn_uldp.mechanisms._utility_optimized_subset import (
    ...     UtilityOptimizedSubsetSelectionChannel)
    >>> channel = UtilityOptimizedSubsetSelectionChannel(
    ...     list("abcde"), epsilon=1.0, sensitive=[True] * 4 + [False], subset_size=2)
    >>> channel.n_outputs  # 6 subsets, 1 own value, 6 pairs
    13
    """

    name = "uss"
    _spec_field_schemas = {
        **Channel._spec_field_schemas,
        "sensitive": UtilityOptimizedBlockDesignChannel._spec_field_schemas["sensitive"],
        "subset_size": {
            "type": "integer",
            "minimum": 1,
            "description": (
                "h, the number of sensitive categories in a protected report "
                "(1 <= h <= max(1, s - 1))."
            ),
        },
    }

    def __init__(
        self, categories: ArrayLike, epsilon: float, sensitive: ArrayLike, subset_size: int
    ) -> None:
        if isinstance(subset_size, dict):
            raise TypeError(
                "uSS has one subset size h (an integer); mixtures over sizes "
                "are uBD's (UtilityOptimizedBlockDesign)."
            )
        super().__init__(categories, epsilon, sensitive, subset_size)
        h, s = int(self._sizes[0]), self.s
        E1 = np.expm1(self.epsilon)
        D = float(self._D_h[0])
        # P(pair | x non-sensitive) = f z, and given an invertible report
        self._pair = s * E1 * (h - 1) / ((s - 1) * D) if h > 1 else 0.0
        self._pair_given_own = self._pair / self._keep_n if h > 1 else 0.0
        self._gamma = 0.0  # the plain bit frequency is unbiased (pairs)
        # uBD with the same h: the channel without pairs, for the matrices
        self._ubd = UtilityOptimizedBlockDesignChannel(
            self.categories, self.epsilon, self._sensitive, h
        )

    def get_params(self):
        return {
            "epsilon": self.epsilon,
            "sensitive": self._sensitive.copy(),
            "subset_size": self.subset_size,
        }

    @property
    def _has_pairs(self):
        return self._pair > 0 and self.t > 0

    @property
    def n_outputs(self):
        return self.n_subsets * (1 + self.t * self._has_pairs) + self.t

    def output_labels(self):
        base = self._ubd.output_labels()
        if not self._has_pairs:
            return base
        C = self.n_subsets
        pairs = np.repeat(base[:C][None, :, :], self.t, axis=0)  # (t, C, k)
        pairs[np.arange(self.t), :, self._n_codes] = 1
        return np.concatenate([base, pairs.reshape(-1, self.n_categories)])

    def _with_pairs(self, Q, own):
        """Split each non-sensitive own probability into own-only and pairs."""
        if not self._has_pairs:
            return Q
        C = self.n_subsets
        k = self.n_categories
        extra = np.zeros((k, self.t * C))
        for j, x in enumerate(self._n_codes):  # the t non-sensitive rows
            extra[x, j * C : (j + 1) * C] = own * self._pair_given_own / C
        Q = Q.copy()
        Q[self._n_codes, C + np.arange(self.t)] *= 1.0 - self._pair_given_own
        return np.concatenate([Q, extra], axis=1)

    def matrix(self):
        """The exact channel: a dense (k, n_outputs) array of Q(y | x)."""
        return self._with_pairs(self._ubd.matrix(), self._keep_n)

    def realized_matrix(self):
        """The channel :meth:`sample` realizes (see :meth:`Channel.realized_matrix`)."""
        Q = self._ubd.realized_matrix()
        own = Q[self._n_codes[0], self.n_subsets] if self.t else 0.0
        if not self._has_pairs:
            return Q
        pair = realized_probability(self._pair_given_own)
        C, k = self.n_subsets, self.n_categories
        extra = np.zeros((k, self.t * C))
        for j, x in enumerate(self._n_codes):  # the t non-sensitive rows
            extra[x, j * C : (j + 1) * C] = own * pair / C
        Q = Q.copy()
        Q[self._n_codes, C + np.arange(self.t)] = own * (1.0 - pair)
        return np.concatenate([Q, extra], axis=1)

    def protected_outputs(self):
        mask = np.zeros(self.n_outputs, dtype=bool)
        mask[: self.n_subsets] = True
        return mask

    def sample(self, codes, rng, *, sparse=False, packed=False):
        """uBD's sampler, then a pair for some invertible reports (own draws)."""
        out = super().sample(codes, rng, sparse=sparse, packed=packed)
        if not self._has_pairs:
            return out
        codes = np.asarray(codes, dtype=np.intp)
        own = ~self._sensitive[codes]
        if packed:
            n_sens = self._packed_sizes(out)[0]
        elif sparse:
            n_sens = np.bincount(
                np.repeat(np.arange(out.shape[0]), np.diff(out.indptr)),
                weights=self._sensitive[out.indices],
                minlength=out.shape[0],
            )
        else:
            n_sens = out[:, self._s_codes].sum(axis=1)
        own &= n_sens == 0
        users = np.flatnonzero(own)
        users = users[rng.random(users.size) < self._pair_given_own]
        h = int(self._sizes[0])
        sub = self._s_codes[_uniform_subsets(users.size, self.s, h, rng)]
        if packed:
            k = self.n_categories
            set_packed_bits(out, np.repeat(users, h).astype(np.int64) * k + sub.ravel(), k)
            return out
        if sparse:
            add = sp.csr_array(
                (np.ones(users.size * h, dtype=np.uint8), (np.repeat(users, h), sub.ravel())),
                shape=out.shape,
            )
            out = (out + add).tocsr()
            out.sum_duplicates()
            return out
        out[np.repeat(users, h), sub.ravel()] = 1
        return out

    def encode_reports(self, reports):
        X = UtilityOptimizedBlockDesignChannel.__mro__[1].encode_reports(self, reports)
        n_s, n_n = self._report_sizes(X)
        h = int(self._sizes[0])
        ok = ((n_n == 1) & ((n_s == 0) | ((n_s == h) & self._has_pairs))) | (
            (n_n == 0) & (n_s == h)
        )
        if not ok.all():
            raise ReportMismatchError(
                f"{int((~ok).sum())} reports are neither an h-subset of the "
                f"sensitive categories (h = {h}), nor one non-sensitive category "
                f"(alone or with an h-subset), so {self!r} cannot have produced "
                "them."
            )
        return X

    def statistics(self, codes, *, keep_reports=False):
        # uBD's: protected reports (no non-sensitive bit) enter the likelihood
        # through their bits; a pair is known to come from its non-sensitive
        # bit, like the own value.
        return super().statistics(codes, keep_reports=keep_reports)

    def observed_frequency(self, stats):
        return stats.counts / stats.n

    def estimator_variance(self, p, n):
        """Exact Var[p_hat(x)]: every statistic is one bit, a Bernoulli frequency."""
        return Channel.estimator_variance(self, p, n)

    def null_variance(self, n, stats=None):
        return Channel.null_variance(self, n, stats)

    def em_gradient(self, stats, p, *, n_jobs=None):
        g, log_lik = super().em_gradient(stats, p, n_jobs=n_jobs)
        if self._has_pairs:
            # An invertible report is a pair w.p. pair_given_own, with one of
            # C subsets: its likelihood carries that factor (the EM gradient
            # does not depend on it).
            n_own = float(stats.counts[self._n_codes].sum())
            n_protected = stats.n - n_own
            n_pairs = (
                float(stats.counts[self._s_codes].sum()) - int(self._sizes[0]) * n_protected
            ) / int(self._sizes[0])
            log_lik += n_pairs * (np.log(self._pair_given_own) - np.log(self.n_subsets)) + (
                n_own - n_pairs
            ) * np.log1p(-self._pair_given_own)
        return g, log_lik


@fill_mechanism_doc
class UtilityOptimizedSubsetSelection(UtilityOptimizedBlockDesign):
    """Utility-optimized subset selection (uSS), an (X_S, Y_P, epsilon)-ULDP mechanism.

    The uSS baseline of arXiv 2509.24173: a sensitive value is reported as a
    random h-subset of the sensitive set that contains it with probability
    h e^eps / (h e^eps + s - h); a non-sensitive value is reported as itself,
    as a uniform h-subset, or as the pair of both (the pairs make the plain
    per-bit frequency unbiased). The channel is derived in the module
    docstring of ``sklearn_uldp.mechanisms._utility_optimized_subset``. With
    h = 1 it is exactly :class:`UtilityOptimizedRR`; for the same h,
    :class:`UtilityOptimizedBlockDesign` has the same protected outputs and
    a smaller variance (no pairs).

    Parameters
    ----------
    %(epsilon_sensitive)s
    subset_size : int or "optimal", default="optimal"
        h, between 1 and max(1, s - 1); ``"optimal"`` minimizes the
        worst-case bound (:func:`uss_worst_case_bound`), as the reference code does.
    %(categories)s
    %(bit_vector_output)s
    random_state : None, "secure", int, Generator, SeedSequence or RandomState, default=None
        Source of randomness. Every random choice uses its own uniform draw.

    Attributes
    ----------
    %(fitted_domain_sensitive)s
    subset_size_ : int
        The h in use.
    channel_ : UtilityOptimizedSubsetSelectionChannel
    %(fitted_input)s

    See Also
    --------
    UtilityOptimizedBlockDesign : the same protected outputs, less noise.
    UtilityOptimizedRR : the case h = 1.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp import EmpiricalEstimator
    >>> from sklearn_uldp.mechanisms._utility_optimized_subset import (
    ...     UtilityOptimizedSubsetSelection)
    >>> from sklearn_uldp.privacy import check_uldp
    >>> mech = UtilityOptimizedSubsetSelection(epsilon=0.5, sensitive=[0, 1, 2, 3, 4],
    ...     categories=range(8), random_state=0).fit()
    >>> mech.subset_size_, bool(check_uldp(mech))
    (2, True)
    >>> X = np.random.default_rng(0).choice(8, size=(100000, 1))
    >>> est = EmpiricalEstimator().fit(mech.transform(X))
    >>> bool(np.abs(est.distribution_ - 1 / 8).max() < 0.06)
    True
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
            h = _optimal_uss_size(int(self.sensitive_mask_.sum()), float(self.epsilon))
        channel = UtilityOptimizedSubsetSelectionChannel(
            self.categories_, self.epsilon, self.sensitive_mask_, h
        )
        self.subset_size_ = channel.subset_size
        return channel
