"""Utility-optimized unary encoding (uUE), the transformation of OUE.

He, Zhu, Liu, Pan and Dong (USENIX Security 2025) transform unary encoding
into a ULDP oracle (uUE). The construction here is the package's general
transformation (``sklearn_uldp.mechanisms._transformed``, derived on the
docs' "Utility-optimized frontier" page; the paper's full text was not
available to us): unary encoding over the sensitive set is a *pure* oracle,

``Q(y | x) = C(y) e^(eps y_x)``,  ``C(y) = d2 prod_j d1^(y_j) (1 - d1)^(1 - y_j)``

for x in X_S and y in {0, 1}^s (theta the probability of the own bit,
``d1 = theta / ((1 - theta) e^eps + theta)`` that of any other bit,
``d2 = (1 - theta) + theta e^-eps``), so a non-sensitive x is reported

* as itself (the report with its own bit alone, invertible) w.p. ``1 - d2``,
* otherwise as a protected report of i.i.d. Bernoulli(d1) sensitive bits.

**How it differs from the seed's uRAP** (Murakami & Kawamoto 2019, Def. 5):
the protected rows are the same, but uRAP's invertible report also carries
s sensitive bits of noise (it is uUE followed by adding them, a
post-processing), so

* uUE's report is one of ``2^s + t`` values (``s`` bits, or one
  non-sensitive value), uRAP's one of ``2^s (t + 1)`` (k bits);
* the sensitive statistic replaces those noise bits by their mean d1 (the
  pure-ULDP aggregation's lambda = ``(q_S - q_N) / (1 - |C|)`` = d1 here):
  ``f(v) = q(bit v) + d1 q(invertible)``, with uRAP's mean, hence uRAP's
  affine map ``p_hat = (f - d1) / (theta - d1)``, and a smaller variance, by
  ``a^2 p(X_N) (1 - d2) d1 (1 - d1) / n`` for every sensitive category;
* the likelihood of a protected report is uRAP's, so EM's estimate is the
  same function of the reports (the noise bits carry no information).

With theta = 1/2 (the default) the sensitive part is OUE.
"""

from __future__ import annotations

from numbers import Real

import numpy as np
import scipy.sparse as sp
from sklearn.utils._param_validation import Interval

from ..exceptions import ReportMismatchError
from ..utils._bits import masked_row_counts, pack_rows
from ..utils._typing import ArrayLike, Categories, RandomStateLike, Sensitive
from ..utils._validation import check_sensitive, check_theta
from ._docs import fill_mechanism_doc
from ._rappor import RAPPOR, UnaryEncodingChannel, _UnaryEncodingMechanism
from ._reports import PackedReports

__all__ = ["UtilityOptimizedUnaryEncodingChannel", "UtilityOptimizedUnaryEncoding"]


class UtilityOptimizedUnaryEncodingChannel(UnaryEncodingChannel):
    """Channel of utility-optimized unary encoding (uUE), (X_S, Y_P, eps)-ULDP.

    A sensitive x: each sensitive bit is 1 w.p. d1, its own w.p. theta, and
    the non-sensitive bits are 0 (as uRAP). A non-sensitive x: its own bit
    alone w.p. ``1 - d2`` (invertible), otherwise sensitive bits i.i.d.
    Bernoulli(d1) and no non-sensitive bit (protected). The module docstring
    of ``sklearn_uldp.mechanisms._utility_optimized_unary`` derives it and
    its estimator.

    Reports are 0/1 vectors over the categories, as the RAPPOR family's
    (dense, sparse or packed), with either sensitive bits only or one
    non-sensitive bit only; ``report_bits`` counts the ``2^s + t`` distinct
    reports.

    Parameters
    ----------
    categories : array-like of shape (k,)
    epsilon : float
    theta : float in (0, 1)
    sensitive : array-like of bool of shape (k,)

    Examples
    --------
    >>> from sklearn_uldp.mechanisms import UtilityOptimizedUnaryEncodingChannel
    >>> from sklearn_uldp.privacy import check_uldp
    >>> ch = UtilityOptimizedUnaryEncodingChannel(
    ...     ["a", "b", "c", "d"], epsilon=1.0, theta=0.5,
    ...     sensitive=[True, True, False, False])
    >>> ch.report_bits, bool(check_uldp(ch))
    (2.584962500721156, True)
    >>> ch.matrix()[2].round(3).tolist()[:5]   # "c": 4 protected reports, then its own
    [0.366, 0.134, 0.134, 0.049, 0.316]
    """

    name = "uue"
    _own_budget_check = True  # the same draws as uRAP's, named as uUE's

    def __init__(
        self, categories: ArrayLike, epsilon: float, theta: float, sensitive: ArrayLike
    ) -> None:
        super().__init__(categories, epsilon, theta, sensitive)
        s, t = self._s_codes.size, self._n_codes.size
        self._check_budget(
            f"uUE (theta={self.theta:.4g}) with {s} sensitive of k={self.n_categories} categories"
        )
        self._n_bits_mask = int(sum(1 << int(j) for j in self._n_codes)) if t else 0
        if t and s < 2:
            raise ValueError(
                f"uUE needs at least two sensitive categories, got {s}. With one "
                "sensitive category use UtilityOptimizedRR (uRR)."
            )

    @property
    def report_bits(self):
        """log2(2^s + t): the size of one report, encoded compactly."""
        s, t = self._s_codes.size, self._n_codes.size
        if s > 60:
            return float(s + np.log2(1.0 + t * 2.0**-s))
        return float(np.log2(2.0**s + t))

    # ----------------------------------------------------------- exact matrix
    def _matrix_from(self, theta, d1, one_minus_d2):
        """uRAP's matrix with the noise bits of invertible reports erased."""
        Q = super()._matrix_from(theta, d1, one_minus_d2)
        if not self._n_codes.size:
            return Q
        y = np.arange(Q.shape[1], dtype=np.int64)
        nonsens = y & self._n_bits_mask
        target = np.where(nonsens > 0, nonsens, y)
        out = np.zeros_like(Q)
        for x in range(Q.shape[0]):  # k <= 16 rows: inputs, not users
            out[x] = np.bincount(target, weights=Q[x], minlength=Q.shape[1])
        return out

    # --------------------------------------------------------------- sampling
    def sample(self, codes, rng, *, sparse=False, packed=False):
        """uRAP's sampler, then the sensitive bits of invertible reports erased.

        A non-sensitive user's own bit is drawn independently of the other
        bits, so erasing them when it is set leaves the protected reports
        (own bit unset) as uRAP draws them: exactly this channel.
        """
        out = super().sample(codes, rng, sparse=sparse, packed=packed)
        if not self._n_codes.size:
            return out
        codes = np.asarray(codes, dtype=np.intp)
        users = np.flatnonzero(~self._sensitive[codes])
        if packed:
            own = codes[users]
            bit = (out[users, own >> 3] >> (own & 7).astype(np.uint8)) & 1
            rows = users[bit.astype(bool)]
            out[rows] &= pack_rows((~self._sensitive).view(np.uint8)[None, :])[0]
            return out
        if sparse:
            row_of = np.repeat(np.arange(out.shape[0]), np.diff(out.indptr))
            invertible = np.zeros(out.shape[0], dtype=bool)
            hit = ~self._sensitive[out.indices]
            invertible[row_of[hit]] = True
            keep = ~(invertible[row_of] & self._sensitive[out.indices])
            indptr = np.zeros(out.shape[0] + 1, dtype=out.indptr.dtype)
            np.cumsum(np.bincount(row_of[keep], minlength=out.shape[0]), out=indptr[1:])
            result = sp.csr_array((out.data[keep], out.indices[keep], indptr), shape=out.shape)
            result.has_canonical_format = True
            return result
        rows = users[out[users, codes[users]].astype(bool)]
        out[rows] *= (~self._sensitive).view(np.uint8)
        return out

    # ------------------------------------------------------------- estimation
    def encode_reports(self, reports):
        """Validate reports: uRAP's checks, and no report with bits of both kinds."""
        X = super().encode_reports(reports)
        if not self._n_codes.size:
            return X
        if isinstance(X, PackedReports):
            sens = pack_rows(self._sensitive.view(np.uint8)[None, :])[0]
            others = pack_rows((~self._sensitive).view(np.uint8)[None, :])[0]
            n_s, n_n = masked_row_counts(X.data, sens), masked_row_counts(X.data, others)
        elif sp.issparse(X):
            row_of = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
            n_s = np.bincount(row_of[self._sensitive[X.indices]], minlength=X.shape[0])
            n_n = np.bincount(row_of[~self._sensitive[X.indices]], minlength=X.shape[0])
        else:
            n_s = X[:, self._s_codes].sum(axis=1, dtype=np.int64)
            n_n = X[:, self._n_codes].sum(axis=1, dtype=np.int64)
        mixed = (n_n > 0) & (n_s > 0)
        if mixed.any():
            raise ReportMismatchError(
                f"{int(mixed.sum())} reports set both sensitive and non-sensitive "
                f"bits, which {self!r} cannot produce (an invertible report is one "
                "non-sensitive bit alone). Were they produced by uRAP "
                "(UtilityOptimizedRAPPOR), or with other sensitive categories?"
            )
        return X

    def observed_frequency(self, stats):
        f = stats.counts / stats.n
        if not self._n_codes.size:
            return f
        q_inv = float(stats.counts[self._n_codes].sum()) / stats.n
        return np.where(self._sensitive, f + self.d1 * q_inv, f)

    def estimator_variance(self, p, n):
        """Exact Var[p_hat(x)]: a sensitive statistic is its bit on protected
        reports and d1 on invertible ones (values 0, d1, 1)."""
        p = np.asarray(p, dtype=float)
        m = self.expected_frequency(p)
        P_n = p[self._n_codes].sum()
        P_s = p[self._s_codes].sum()
        # P(bit v set): by v, another sensitive value, a hidden non-sensitive one
        hit = self.theta * p + self.d1 * (P_s - p) + self.d2 * self.d1 * P_n
        second = np.where(self._sensitive, hit + self.d1**2 * self._one_minus_d2 * P_n, m)
        return self.coef_a**2 * (second - m**2) / n

    def _log_c(self, stats):
        """sum_i log C(y_i) over the protected reports (the invertible ones have no bits)."""
        set_s = float(stats.counts[self._s_codes].sum())
        n_protected = stats.n - float(stats.counts[self._n_codes].sum())
        unset_s = n_protected * self._s_codes.size - set_s
        return set_s * np.log(self.d1) + unset_s * np.log(1.0 - self.d1)


@fill_mechanism_doc
class UtilityOptimizedUnaryEncoding(_UnaryEncodingMechanism):
    """Utility-optimized unary encoding (uUE), an (X_S, Y_P, epsilon)-ULDP oracle.

    He et al.'s utility-optimized transformation (USENIX Security 2025) of
    optimized unary encoding: a sensitive value is reported as OUE does over
    the sensitive set (its own bit 1 w.p. theta = 1/2, every other sensitive
    bit w.p. ``1/(e^eps + 1)``); a non-sensitive value is reported as itself
    w.p. ``1 - d2`` (``d2 = 1 - theta + theta e^-eps``), and otherwise as a
    vector of random sensitive bits, indistinguishable within e^eps from a
    sensitive value's report. It is uRAP (:class:`UtilityOptimizedRAPPOR`)
    without the noise bits uRAP adds to the clear reports: shorter reports
    (``log2(2^s + t)`` bits) and a smaller variance for every sensitive
    category (derivation in :class:`UtilityOptimizedUnaryEncodingChannel`).

    Parameters
    ----------
    %(epsilon_sensitive)s
    theta : float in (0, 1), default=0.5
        Probability that the bit of a sensitive true value is 1 (0.5: OUE).
    %(domain_bits_and_seed)s

    Attributes
    ----------
    %(fitted_domain_sensitive)s
    theta_ : float
    channel_ : UtilityOptimizedUnaryEncodingChannel
    %(fitted_input)s

    See Also
    --------
    UtilityOptimizedRAPPOR : the seed paper's uRAP (same protected rows).
    UtilityOptimizedOUE : uRAP with theta = 1/2.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp import EmpiricalEstimator
    >>> from sklearn_uldp.mechanisms import UtilityOptimizedUnaryEncoding
    >>> X = np.random.default_rng(0).choice(6, size=(100_000, 1))
    >>> mech = UtilityOptimizedUnaryEncoding(epsilon=1.0, sensitive=[0, 1, 2],
    ...                                      categories=range(6), random_state=0)
    >>> reports = mech.fit_transform(X)
    >>> int(((reports[:, :3].sum(axis=1) > 0) & (reports[:, 3:].sum(axis=1) > 0)).sum())
    0
    >>> p_hat = EmpiricalEstimator().fit(reports).distribution_
    >>> bool(np.abs(p_hat - 1 / 6).max() < 0.02)
    True
    """

    _parameter_constraints = {
        **RAPPOR._parameter_constraints,
        "sensitive": ["array-like", callable],
        "theta": [Interval(Real, 0, 1, closed="neither")],
    }

    def __init__(
        self,
        epsilon: float = 1.0,
        *,
        sensitive: Sensitive,
        theta: float = 0.5,
        categories: Categories = "auto",
        sparse_output: bool = False,
        packed_output: bool = False,
        random_state: RandomStateLike = None,
    ) -> None:
        self.epsilon = epsilon
        self.sensitive = sensitive
        self.theta = theta
        self.categories = categories
        self.sparse_output = sparse_output
        self.packed_output = packed_output
        self.random_state = random_state

    def _make_channel(self):
        self.sensitive_mask_ = check_sensitive(self.sensitive, self.categories_)
        return UtilityOptimizedUnaryEncodingChannel(
            self.categories_, self.epsilon, check_theta(self.theta), self.sensitive_mask_
        )
