"""Subset selection (k-subset mechanism): report a random d-subset of the domain.

References
----------
Wang, Wu & Hu, "Mutual Information Optimally Local Private Discrete
Distribution Estimation", arXiv:1607.08025, 2016 (k-subset mechanism).
Ye & Barg, "Optimal Schemes for Discrete Distribution Estimation Under
Locally Differential Privacy", IEEE Trans. Inf. Theory 64(8), 2018.
"""

from math import comb
from numbers import Integral

import numpy as np
import scipy.sparse as sp
from scipy.special import gammaln
from sklearn.utils._param_validation import Interval, StrOptions

from ..exceptions import ReportMismatchError
from ..utils._fixes import bitwise_count
from ..utils._validation import realized_probability
from ._base import BaseMechanism
from ._bit_rows import BitRows
from ._channel import MAX_MATRIX_OUTPUTS, Channel, ReportStatistics
from ._rappor import UnaryEncodingChannel, _UnaryEncodingMechanism, _dense_bits_to_csr

__all__ = [
    "SubsetSelectionChannel",
    "SubsetSelection",
    "optimal_subset_size",
]

#: Users per sampling chunk (bounds the temporaries of the sampler).
_CHUNK_USERS = 1 << 12


def _inclusion_probabilities(epsilon, k, d):
    """(P(x in S | x), P(x in S | y != x)) of the d-subset mechanism, stably.

    P(x in S | x) = d E / (d E + k - d); a user whose value is not x includes
    x among its (d - 1 or d) other elements uniformly from k - 1.
    """
    z = np.exp(-np.asarray(epsilon, dtype=float))
    keep = d / (d + (k - d) * z)
    other = (keep * (d - 1) + (1.0 - keep) * d) / (k - 1)
    return keep, other


def _null_variance_factor(epsilon, k, d):
    keep, other = _inclusion_probabilities(epsilon, k, d)
    return other * (1.0 - other) / (keep - other) ** 2


def optimal_subset_size(epsilon, k):
    """The subset size d with the smallest estimator variance at p(x) = 0.

    About ``k / (e^eps + 1)`` (Wang et al. 2016; Ye & Barg 2018), chosen
    exactly among the integers 1..k-1. d = 1 is k-ary randomized response.

    Examples
    --------
    >>> from sklearn_uldp.mechanisms._subset_selection import optimal_subset_size
    >>> [optimal_subset_size(eps, 100) for eps in (0.5, 1.0, 4.0)]
    [38, 27, 1]
    """
    d = np.arange(1, int(k))
    return int(d[np.argmin(_null_variance_factor(epsilon, k, d))])


def _check_subset_size(subset_size, k):
    if isinstance(subset_size, bool) or not isinstance(subset_size, Integral):
        raise TypeError(
            "subset_size must be an integer d with 1 <= d < k (the number of "
            f"categories reported), got {subset_size!r} of type "
            f"{type(subset_size).__name__}. Pass e.g. subset_size=2, or "
            "subset_size='optimal' to the mechanism."
        )
    d = int(subset_size)
    if not 1 <= d < k:
        raise ValueError(
            f"subset_size must satisfy 1 <= subset_size < k = {k}, got {d}: a "
            "report of all k categories carries no information. Pass "
            "subset_size='optimal' (about k / (e^eps + 1))."
        )
    return d


class SubsetSelectionChannel(Channel):
    """Channel of the d-subset mechanism (subset selection), epsilon-LDP.

    A report is a set S of exactly d categories, as a 0/1 vector of k bits:
    ``Q(S | x) = e^eps / Omega`` if x is in S, ``1 / Omega`` otherwise, with
    ``Omega = C(k-1, d-1) e^eps + C(k-1, d)``. The user includes x w.p.
    ``d e^eps / (d e^eps + k - d)`` and fills S with a uniform subset of the
    other k - 1 categories. d = 1 is k-ary randomized response.

    The statistic of x is ``[x in S]``: its frequency has mean
    ``m(x) = q + (keep - q) p(x)`` (``keep`` = P(x in S | x), ``q`` = P(x in S
    | y != x)), which gives the unbiased ``p_hat = (f - q) / (keep - q)``. The
    likelihood ``Q(S | x) ~ e^(eps [x in S])`` has RAPPOR's structure, so EM
    uses the same compact store of the set bits
    (:class:`~sklearn_uldp.mechanisms.BitRows`) and two sparse products per
    step.

    Parameters
    ----------
    categories : array-like of shape (k,)
    epsilon : float
    subset_size : int
        d, with 1 <= d < k.

    Examples
    --------
    >>> from sklearn_uldp.mechanisms._subset_selection import SubsetSelectionChannel
    >>> channel = SubsetSelectionChannel(["a", "b", "c", "d"], epsilon=1.0, subset_size=2)
    >>> channel.n_outputs, channel.report_bits
    (6, 4.0)
    >>> channel.matrix().round(3)[0].tolist()
    [0.244, 0.244, 0.09, 0.244, 0.09, 0.09]
    """

    name = "ss"
    report_format = "bits"
    _spec_field_schemas = {
        **Channel._spec_field_schemas,
        "subset_size": {
            "type": "integer",
            "minimum": 1,
            "description": "d, the number of categories in a report (1 <= d < k).",
        },
    }

    def __init__(self, categories, epsilon, subset_size):
        super().__init__(categories, epsilon)
        k = self.n_categories
        self.subset_size = d = _check_subset_size(subset_size, k)
        self._check_budget(f"subset selection with k={k} and subset_size={d}")
        self.keep, self.other = _inclusion_probabilities(self.epsilon, k, d)
        self._keep_minus_other = self._gap(self.epsilon)

    def _gap(self, epsilon):
        # keep - other = (keep (k - 1) - keep (d - 1) - (1 - keep) d)/(k - 1)
        #              = (keep k - d) / (k - 1), with keep k - d written
        # without cancellation: d (k - d)(1 - z) / (d + (k - d) z).
        k, d = self.n_categories, self.subset_size
        z = np.exp(-epsilon)
        return d * (k - d) * -np.expm1(-epsilon) / ((d + (k - d) * z) * (k - 1))

    def _draw_probabilities(self, epsilon):
        keep, _ = _inclusion_probabilities(epsilon, self.n_categories, self.subset_size)
        return np.array([keep, 1.0 - keep])

    def get_params(self):
        return {"epsilon": self.epsilon, "subset_size": self.subset_size}

    @property
    def report_bits(self):
        return float(self.n_categories)

    @property
    def n_outputs(self):
        return comb(self.n_categories, self.subset_size)

    def _log_omega(self):
        k, d = self.n_categories, self.subset_size
        log_c = gammaln(k) - gammaln(d + 1) - gammaln(k - d)  # log C(k-1, d)
        return float(log_c + np.logaddexp(0.0, np.log(d / (k - d)) + self.epsilon))

    # ----------------------------------------------------------- exact matrix
    def output_labels(self):
        """The C(k, d) subsets as 0/1 rows (small domains only)."""
        k, d = self.n_categories, self.subset_size
        if self.n_outputs > MAX_MATRIX_OUTPUTS or k > 62:
            raise ValueError(
                f"C({k}, {d}) = {self.n_outputs} outputs: the full channel "
                "matrix is only built for small domains."
            )
        y = np.arange(1 << k, dtype=np.int64)
        y = y[bitwise_count(y) == d]
        return ((y[:, None] >> np.arange(k)[None, :]) & 1).astype(np.uint8)

    def matrix(self):
        return self._matrix_from(self.keep)

    def realized_matrix(self):
        """The channel :meth:`sample` realizes (see :meth:`Channel.realized_matrix`).

        Inclusion of x is a comparison of a 53-bit uniform; the other
        elements are a uniform subset (exactly for the rounds of integer
        draws, to float64 resolution for the column sweep).
        """
        return self._matrix_from(realized_probability(self.keep))

    def _matrix_from(self, keep):
        k, d = self.n_categories, self.subset_size
        Y = self.output_labels().astype(bool).T  # (k, C(k, d))
        return np.where(Y, keep / comb(k - 1, d - 1), (1.0 - keep) / comb(k - 1, d))

    def protected_outputs(self):
        return np.ones(self.n_outputs, dtype=bool)

    # --------------------------------------------------------------- sampling
    def sample(self, codes, rng, *, sparse=False):
        """Privatize coded inputs: a dense uint8 (n, k) array or a CSR array.

        Each user includes its value w.p. ``keep`` and completes the set with
        a uniform subset of ``d - 1`` or ``d`` of the other k - 1 categories,
        vectorized over the users of a chunk: by rounds of uniform draws
        when the subsets are small (d <= (k - 1) / 20), else by selection
        sampling over the columns (each column taken w.p. still-needed /
        columns-left, a comparison of a float64 uniform, exact to float64
        resolution).
        """
        codes = np.asarray(codes, dtype=np.intp)
        n, k, d = codes.size, self.n_categories, self.subset_size
        out = np.zeros((n, k), dtype=np.uint8)
        include = rng.random(n) < self.keep
        for lo in range(0, n, _CHUNK_USERS):
            hi = min(n, lo + _CHUNK_USERS)
            _fill_subsets(out[lo:hi], codes[lo:hi], include[lo:hi], d, rng)
        return _dense_bits_to_csr(out) if sparse else out

    # ------------------------------------------------------------- estimation
    encode_reports = UnaryEncodingChannel.encode_reports
    _set_bits = UnaryEncodingChannel._set_bits

    def statistics(self, codes, *, keep_reports=False):
        k, d = self.n_categories, self.subset_size
        counts = np.zeros(k, dtype=np.int64)
        store = BitRows(k, d / k) if keep_reports else None
        if sp.issparse(codes):
            sizes = np.diff(codes.indptr)
            self._check_sizes(sizes)
            counts += np.bincount(codes.indices, minlength=k)
            if keep_reports:
                store.append_sparse(codes.indptr.astype(np.int64), codes.indices)
        else:
            step = max(1, (1 << 25) // k)
            for lo in range(0, codes.shape[0], step):
                block = codes[lo:lo + step]
                self._check_sizes(block.sum(axis=1, dtype=np.int64))
                counts += block.sum(axis=0, dtype=np.int64)
                if keep_reports:
                    store.append_dense(np.ascontiguousarray(block))
        return ReportStatistics(self, int(codes.shape[0]), counts, store)

    def _check_sizes(self, sizes):
        bad = sizes != self.subset_size
        if bad.any():
            raise ReportMismatchError(
                f"{int(bad.sum())} reports do not hold exactly "
                f"subset_size={self.subset_size} set bits (e.g. "
                f"{np.unique(sizes[bad])[:5].tolist()}), which {self!r} cannot "
                "produce. Were they produced by another mechanism or subset size?"
            )

    def observed_frequency(self, stats):
        return stats.counts / stats.n

    def expected_frequency(self, p):
        p = np.asarray(p, dtype=float)
        return self.other * p.sum() + self._keep_minus_other * p

    @property
    def coef_a(self):
        return np.full(self.n_categories, 1.0 / self._keep_minus_other)

    @property
    def coef_b(self):
        return np.full(self.n_categories, -self.other / self._keep_minus_other)

    def em_gradient(self, stats, p, *, n_jobs=None):
        if stats.extra is None:
            raise ValueError(
                "The likelihood of subset reports needs the reports themselves: "
                "compute the statistics with keep_reports=True."
            )
        p = np.asarray(p, dtype=float)
        # Omega Q(S_i | p) = D_i = sum(p) + (e^eps - 1) sum_{x in S_i} p(x).
        gain = np.expm1(self.epsilon)
        sum_inv, sum_log, t = stats.extra.em_terms(float(p.sum()), gain * p,
                                                   n_jobs=n_jobs)
        g = (sum_inv + gain * t) / stats.n
        return g, float(sum_log - stats.n * self._log_omega())

    def restricted_em_gradient(self, stats, active, *, n_jobs=None):
        # As for RAPPOR: categories outside the working set have p = 0, so
        # their bits drop out of D_i; a store of the working set's columns,
        # built once, makes each step cost in proportion to their set bits.
        active = np.asarray(active, dtype=bool)
        columns = np.flatnonzero(active)
        store = stats.extra
        if (store is None or not hasattr(store, "restrict")
                or columns.size > 0.8 * self.n_categories):
            return None
        store = store.restrict(columns, n_jobs=n_jobs)
        gain = np.expm1(self.epsilon)
        log_omega = self._log_omega()

        def gradient(q):
            q = np.asarray(q, dtype=float)
            sum_inv, sum_log, t = store.em_terms(float(q.sum()), gain * q, n_jobs=n_jobs)
            return (sum_inv + gain * t) / stats.n, float(sum_log - stats.n * log_omega)

        return gradient

    def likelihood(self, codes):
        # Q(S | x) up to the report's factor e^eps / Omega.
        L = np.full((codes.shape[0], self.n_categories), np.exp(-self.epsilon))
        offset = 0
        for n_rows, rows, cols in self._set_bits(codes):
            L[rows + offset, cols] = 1.0
            offset += n_rows
        return L


def _fill_subsets(out, codes, include, d, rng):
    """Write each row's subset: its code w.p. include, plus uniform others."""
    m, k = out.shape
    need = d - include.astype(np.intp)  # others to draw among the k - 1, per row
    if 20 * int(need.max(initial=0)) <= k - 1:
        _draw_by_rounds(out, codes, need, rng)
    else:
        _draw_by_sweep(out, codes, need, rng)
    out[np.arange(m), codes] = include


def _draw_by_rounds(out, codes, need, rng):
    """Small subsets: rounds of uniform draws among the others, new cells kept.

    The rounds never look at the labels' values (a draw is kept when its
    cell is new and it is the last draw of that cell in the round), so by
    symmetry each row's set is a uniform subset of its size.
    """
    m, k = out.shape
    rows = np.arange(m, dtype=np.intp)
    need = need.copy()
    flat = out.reshape(-1)
    winner = np.empty(m * k, dtype=np.int32)
    while need.any():
        who = np.repeat(rows, need)
        t = rng.integers(0, k - 1, size=who.size)
        cells = who * k + t + (t >= codes[who])  # skip the user's own value
        cells = cells[flat[cells] == 0]
        winner[cells] = np.arange(cells.size, dtype=np.int32)
        cells = cells[winner[cells] == np.arange(cells.size, dtype=np.int32)]
        flat[cells] = 1
        need -= np.bincount(cells // k, minlength=m)


def _draw_by_sweep(out, codes, need, rng):
    """Large subsets: selection sampling (Knuth's Algorithm S) over the columns.

    Column j of the k - 1 others is taken w.p. (still needed) / (columns
    left), which gives a uniform subset of exactly ``need`` columns; one
    vectorized step per column for all the rows of the chunk.
    """
    m, k = out.shape
    K = k - 1
    left = need.astype(np.float64)
    U = rng.random((K, m))
    U *= np.arange(K, 0, -1, dtype=np.float64)[:, None]  # columns left, K..1
    bits = np.empty((K, m), dtype=bool)
    for j in range(K):  # a loop over columns; each step is vectorized over rows
        np.less(U[j], left, out=bits[j])
        left -= bits[j]
    # Others' column j is category j + (j >= code): insert the own column
    # (two contiguous passes over the rows).
    # numpy transposes byte arrays slowly; slabs of 32 columns stay in cache.
    bits = bits.view(np.uint8)
    for lo in range(0, K, 32):
        out[:, 1 + lo:1 + lo + 32] = bits[lo:lo + 32].T
    np.copyto(out[:, :K], out[:, 1:], where=np.arange(K)[None, :] < codes[:, None])


class SubsetSelection(_UnaryEncodingMechanism):
    """Subset selection (the k-subset mechanism), an epsilon-LDP frequency oracle.

    Each user reports a set of d categories (a 0/1 vector of k bits with d
    ones) that contains the true value w.p. ``d e^eps / (d e^eps + k - d)``,
    completed by a uniform subset of the other categories (Wang, Wu & Hu
    2016; Ye & Barg 2018). With d about ``k / (e^eps + 1)`` it is
    order-optimal for every budget, and the most accurate of the classic
    oracles in the middle range of epsilon; d = 1 is k-ary randomized
    response.

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy budget (> 0).
    subset_size : "optimal" or int, default="optimal"
        d, with 1 <= d < k; ``"optimal"`` minimizes the variance
        (:func:`optimal_subset_size`).
    sparse_output : bool, default=False
        Return reports as a scipy CSR array instead of a dense uint8 array.
    categories : "auto" or array-like of shape (k,), default="auto"
        The public domain.
    random_state : None, "secure", int, Generator, SeedSequence or RandomState, default=None
        Source of randomness.

    Attributes
    ----------
    categories_ : ndarray of shape (k,)
    subset_size_ : int
        The subset size d used.
    channel_ : SubsetSelectionChannel
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (1,)

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp import EMEstimator
    >>> from sklearn_uldp.mechanisms._subset_selection import SubsetSelection
    >>> X = np.random.default_rng(0).choice(10, p=[.5] + [.5 / 9] * 9,
    ...                                     size=(100_000, 1))
    >>> mech = SubsetSelection(epsilon=1.0, categories=range(10), random_state=0)
    >>> reports = mech.fit_transform(X)
    >>> mech.subset_size_, reports.shape, int(reports.sum(axis=1).max())
    (2, (100000, 10), 2)
    >>> p_hat = EMEstimator().fit(reports).distribution_
    >>> bool(abs(p_hat[0] - 0.5) < 0.02)
    True
    """

    _parameter_constraints = {
        **BaseMechanism._parameter_constraints,
        "subset_size": [StrOptions({"optimal"}), Interval(Integral, 1, None, closed="left")],
        "sparse_output": ["boolean"],
    }

    def __init__(self, epsilon=1.0, *, subset_size="optimal", sparse_output=False,
                 categories="auto", random_state=None):
        self.epsilon = epsilon
        self.subset_size = subset_size
        self.sparse_output = sparse_output
        self.categories = categories
        self.random_state = random_state

    def _check_params(self):
        BaseMechanism._check_params(self)

    def _make_channel(self):
        d = self.subset_size
        if isinstance(d, str):
            d = optimal_subset_size(self.epsilon, len(self.categories_))
        self.subset_size_ = int(d)
        return SubsetSelectionChannel(self.categories_, self.epsilon, d)

    @property
    def theta_(self):
        raise AttributeError("SubsetSelection has no theta.")
