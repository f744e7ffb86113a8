"""Subset selection (k-subset mechanism): report a random d-subset of the domain.

References
----------
Wang, Wu & Hu, "Mutual Information Optimally Local Private Discrete
Distribution Estimation", arXiv:1607.08025, 2016 (k-subset mechanism).
Ye & Barg, "Optimal Schemes for Discrete Distribution Estimation Under
Locally Differential Privacy", IEEE Trans. Inf. Theory 64(8), 2018.
"""

from __future__ import annotations

from math import comb
from numbers import Integral
from typing import Literal

import numpy as np
import scipy.sparse as sp
from scipy.special import gammaln
from sklearn.utils._param_validation import Interval, StrOptions

try:
    import numba
except ImportError:  # pragma: no cover - a dependency; the numpy path runs without it
    numba = None  # type: ignore[assignment]

from ..exceptions import ReportMismatchError
from ..utils._bits import (
    column_counts,
    masked_row_counts,
    pack_rows,
    packed_width,
)
from ..utils._fixes import bitwise_count
from ..utils._numba import use_compiled
from ..utils._typing import ArrayLike, Categories, RandomStateLike
from ..utils._validation import realized_probability
from ._base import BaseMechanism
from ._bit_rows import BitRows
from ._bit_rows_segment import segment_log_likelihood
from ._channel import MAX_MATRIX_OUTPUTS, Channel, ReportStatistics, kept_reports
from ._docs import fill_mechanism_doc
from ._oracle_kernels import bit_matrix_counts, report_array
from ._rappor import UnaryEncodingChannel, _dense_bits_to_csr, _UnaryEncodingMechanism
from ._reports import PackedReports

__all__ = [
    "SubsetSelectionChannel",
    "SubsetSelection",
    "optimal_subset_size",
]

#: Users per sampling chunk (bounds the temporaries of the sampler; the
#: same for both paths, which read the same words): 2^13 to 2^15, as many
#: as keep a chunk's words within _CHUNK_WORDS.
_CHUNK_USERS = 1 << 13
_CHUNK_WORDS = 1 << 22


def _chunk_users(k, d):
    """Users per chunk for subset size d of k: fewer for the longer rows of words."""
    top = max(min(d - 1, k - d), min(d, k - 1 - d), 1)
    return int(min(1 << 15, max(_CHUNK_USERS, _CHUNK_WORDS // top)))


#: "numba" (one compiled pass per chunk) or "numpy" (one vectorized step per
#: element of the subset); the two draw the same distribution and the tests
#: run both.
_KERNEL = "numba" if numba is not None else "numpy"

#: Spare words per chunk for the compiled sampler's rejections (a draw is
#: rejected with probability below k / 2^16, k / 2^32 past k = 4096; a
#: chunk also gets twice the expected number).
_SPARE_WORDS = 64


def _inclusion_probabilities(epsilon, k, d):
    """(P(x in S | x), P(x in S | y != x)) of the d-subset mechanism, stably.

    P(x in S | x) = d E / (d E + k - d); a user whose value is not x includes
    x among its (d - 1 or d) other elements uniformly from k - 1.
    """
    z = np.exp(-np.asarray(epsilon, dtype=float))
    keep = d / (d + (k - d) * z)
    other = (keep * (d - 1) + (1.0 - keep) * d) / (k - 1)
    return keep, other


def optimal_subset_size(epsilon: float, k: int) -> int:
    """The subset size d with the smallest worst-case squared error.

    The unbiased estimate's summed variance is
    ``(d - sum_x q_x^2) / (n (keep - other)^2)``, with q_x the probability that
    x is in the reported subset; since ``sum_x q_x = d`` for every
    distribution, its worst case is the uniform one, ``d (1 - d/k)``. About
    ``k / (e^eps + 1)`` (Wang et al. 2016; Ye & Barg 2018), chosen exactly
    among the integers 1..k-1; this criterion can pick one more than the
    variance at p(x) = 0 alone (k = 100, eps = 4: d = 2, 8 % less squared
    error than d = 1). d = 1 is k-ary randomized response.

    Examples
    --------
    >>> from sklearn_uldp.mechanisms._subset_selection import optimal_subset_size
    >>> [optimal_subset_size(eps, 100) for eps in (0.5, 1.0, 4.0)]
    [38, 27, 2]
    """
    d = np.arange(1, int(k))
    keep, other = _inclusion_probabilities(epsilon, k, d)
    return int(d[np.argmin(d * (1.0 - d / k) / (keep - other) ** 2)])


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
    bit_vector_reports = True
    _spec_field_schemas = {
        **Channel._spec_field_schemas,
        "subset_size": {
            "type": "integer",
            "minimum": 1,
            "description": "d, the number of categories in a report (1 <= d < k).",
        },
    }

    def __init__(self, categories: ArrayLike, epsilon: float, subset_size: int) -> None:
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
    def sample(self, codes, rng, *, sparse=False, packed=False, out=None, rows=None):
        """Privatize coded inputs: a dense uint8 (n, k) array, a CSR array or
        packed rows (``packed=True``, ceil(k / 8) bytes a user; written into
        ``out``, a uint8 array of that shape, a strided view allowed, when
        given; or, with ``rows``, user i's into ``out[rows[i]]``, ``out`` a
        uint8 array of ceil(k / 8) columns and any number of rows: a
        caller's table of several oracles' reports is written in place,
        without a copy of the rows).

        Each user includes its value w.p. ``keep`` and completes the set with
        a uniform subset of ``r = d - 1`` or ``d`` of the other k - 1
        categories, drawn by Floyd's algorithm (Bentley & Floyd, "A sample of
        brilliance", CACM 1987): for j = K - r, ..., K - 1 (K = k - 1) draw t
        uniform in {0, ..., j} and add t, or j if t is already in the set.
        That is r exactly uniform integers per user, O(n d) work and random
        bits rather than O(n k). With numba (from ``COMPILE_MIN_WORK``
        integers: a small job compiles nothing), one compiled pass per chunk
        of users turns 16-bit words (32-bit for k > 4096; a row of words per
        user, spare words for the rejections) into the integers (Lemire's
        multiply-shift with rejection, exact), keeps each row's set in a
        64-bit register (k <= 64) or a byte per category, and writes the
        row once, own category included (:func:`_floyd_rows`); without
        it, one vectorized step per element of the subset from the same
        words (:func:`_fill_subsets_numpy`): the same reports. A user with
        r > (k - 1) / 2 draws
        the k - 1 - r others left out instead (a uniform subset's complement
        is uniform). The (n, k) report array is mapped without huge pages
        (see :func:`~sklearn_uldp.mechanisms._oracle_kernels.report_array`).
        Packed rows are written by the compiled loop directly; without it
        each chunk of users is drawn into a dense buffer of the chunk and
        packed.
        """
        codes = _index_array(codes)
        n, k, d = codes.size, self.n_categories, self.subset_size
        include = rng.random(n) < self.keep
        # The compiled loop from COMPILE_MIN_WORK random integers on (a
        # small job compiles nothing), numpy's steps below.
        compiled = _KERNEL == "numba" and use_compiled(n * min(d, k - d))
        if rows is not None and (not packed or out is None):
            raise ValueError("rows= places packed rows in out: pass packed=True and out.")
        if packed:
            if out is None:
                out = report_array((n, packed_width(k)), np.uint8, zeros=not compiled)
            elif (
                out.ndim != 2
                or out.shape[1] != packed_width(k)
                or (rows is None and out.shape[0] != n)
                or out.dtype != np.uint8
            ):
                raise ValueError(
                    f"out must be a uint8 array of shape {(n, packed_width(k))}, got "
                    f"{out.dtype} of shape {out.shape}."
                )
            if rows is not None:
                rows = _index_array(rows)
                if rows.shape != (n,) or (n and not 0 <= rows.min() <= rows.max() < len(out)):
                    raise ValueError(f"rows must be {n} row indices of out.")
            step = _chunk_users(k, d)
            buffer = None if compiled else np.zeros((step, k), np.uint8)
            for lo in range(0, n, step):
                hi = min(n, lo + step)
                if buffer is None:
                    if rows is None:
                        _fill_subsets_numba(out[lo:hi], codes[lo:hi], include[lo:hi], d, rng, k)
                    else:
                        _fill_subsets_numba(
                            out, codes[lo:hi], include[lo:hi], d, rng, k, rows[lo:hi]
                        )
                else:
                    dense = buffer[: hi - lo]
                    dense[:] = 0
                    _fill_subsets_numpy(dense, codes[lo:hi], include[lo:hi], d, rng)
                    if rows is None:
                        out[lo:hi] = pack_rows(dense)
                    else:
                        out[rows[lo:hi]] = pack_rows(dense)
            return out
        out = report_array((n, k), np.uint8, zeros=True)
        fill = _fill_subsets_numba if compiled else _fill_subsets_numpy
        step = _chunk_users(k, d)
        for lo in range(0, n, step):
            hi = min(n, lo + step)
            fill(out[lo:hi], codes[lo:hi], include[lo:hi], d, rng)
        return _dense_bits_to_csr(out) if sparse else out

    # ------------------------------------------------------------- estimation
    encode_reports = UnaryEncodingChannel.encode_reports
    _set_bits = UnaryEncodingChannel._set_bits

    def statistics(self, codes, *, keep_reports=False):
        k, d = self.n_categories, self.subset_size
        counts = np.zeros(k, dtype=np.int64)
        store = BitRows(k, d / k) if keep_reports else None
        if isinstance(codes, PackedReports):
            data = codes.data
            every_bit = np.full(data.shape[1], 255, np.uint8)
            if _KERNEL == "numba" and use_compiled(data.shape[0]):
                # One pass: each byte position's histogram of byte values
                # and each row's size (the strided rows read in place).
                histogram = np.zeros((data.shape[1], 256), dtype=np.int64)
                if _packed_subset_counts(data, d, histogram):
                    self._check_sizes(masked_row_counts(data, every_bit))
                counts += (histogram @ _BYTE_BITS).reshape(-1)[:k]
            else:
                self._check_sizes(masked_row_counts(data, every_bit))
                counts += column_counts(data)[:k]
            if keep_reports:
                store.append_packed(data)
            return ReportStatistics(self, int(data.shape[0]), counts, store)
        if sp.issparse(codes):
            sizes = np.diff(codes.indptr)
            self._check_sizes(sizes)
            counts += np.bincount(codes.indices, minlength=k)
            if keep_reports:
                store.append_sparse(codes.indptr.astype(np.int64), codes.indices)
        else:
            # 16-bit accumulators (a third faster than int64 on 0/1 bytes):
            # a row sums at most k bits and a column at most step rows.
            small = k < (1 << 16)
            acc = np.uint16 if small else np.int64
            step = max(1, (1 << 25) // k)
            if small:
                step = min(step, (1 << 16) - 1)
            # Whole groups of 8 rows, so that every block but the last
            # starts on a word boundary (see _count_dense_block).
            step = max(8, step - step % 8)
            for lo in range(0, codes.shape[0], step):
                block = codes[lo : lo + step]
                if not self._count_dense_block(block, counts):
                    self._check_sizes(block.sum(axis=1, dtype=acc))
                    counts += block.sum(axis=0, dtype=acc)
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

    def _count_dense_block(self, block, counts):
        """Count a block of dense reports with the compiled kernel, if it can.

        One pass over the bytes, 8 at a time, gives the column counts, the
        row sizes and whether every byte is 0 or 1 (about three times faster
        than numpy's two reductions). Returns False, having done nothing,
        where it does not apply (no numba, k < 8, or not a C-contiguous,
        word-aligned block of bytes), for the numpy path.
        """
        k = self.n_categories
        n_groups = block.shape[0] // 8
        if (
            _KERNEL != "numba"
            or not use_compiled(block.size // 8)  # small: numpy's passes, no compilation
            or k < 8  # a row within one word: the kernel assumes one boundary a word
            or n_groups == 0
            or block.dtype != np.uint8
            or not block.flags.c_contiguous
            or block.__array_interface__["data"][0] % 8
        ):
            return False
        head = np.asarray(block[: 8 * n_groups]).reshape(-1).view(np.uint64)
        sizes = np.empty(8 * n_groups, dtype=np.int64)
        seen = bit_matrix_counts(head, k, n_groups, counts, sizes)
        if int(seen) & ~0x0101010101010101:
            raise ReportMismatchError(
                "Subset-selection reports must be 0/1 bits; pass the reports "
                "as the mechanism returned them."
            )
        self._check_sizes(sizes)
        tail = block[8 * n_groups :]
        if tail.shape[0]:
            if tail.size and tail.max() > 1:
                raise ReportMismatchError(
                    "Subset-selection reports must be 0/1 bits; pass the "
                    "reports as the mechanism returned them."
                )
            self._check_sizes(tail.sum(axis=1, dtype=np.int64))
            counts += tail.sum(axis=0, dtype=np.int64)
        return True

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
        kept_reports(stats, "subset")
        p = np.asarray(p, dtype=float)
        # Omega Q(S_i | p) = D_i = sum(p) + (e^eps - 1) sum_{x in S_i} p(x).
        gain = np.expm1(self.epsilon)
        sum_inv, sum_log, t = stats.extra.em_terms(float(p.sum()), gain * p, n_jobs=n_jobs)
        g = (sum_inv + gain * t) / stats.n
        return g, float(sum_log - stats.n * self._log_omega())

    def segment_log_likelihood(self, stats, p0, p1, *, n_jobs=None, p0_parts=None):
        if stats.extra is None:
            return super().segment_log_likelihood(stats, p0, p1, n_jobs=n_jobs)
        return segment_log_likelihood(self, stats, p0, p1, n_jobs, p0_parts)

    def restricted_em_gradient(self, stats, active, *, n_jobs=None):
        # As for RAPPOR: categories outside the working set have p = 0, so
        # their bits drop out of D_i; a store of the working set's columns,
        # built once, makes each step cost in proportion to their set bits.
        active = np.asarray(active, dtype=bool)
        columns = np.flatnonzero(active)
        store = stats.extra
        if (
            store is None
            or not hasattr(store, "restrict")
            or columns.size > 0.8 * self.n_categories
        ):
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


def _draw_layout(codes, include, d, k):
    """Each row's number of draws, the most of a row, the word size and the spares.

    Both samplers read the same words: a row of ``top`` words per user (a
    row with fewer draws skips its first ones), then batches of spare words
    for the rejections (see :func:`_floyd_rows`).
    """
    K = k - 1
    need = d - include.astype(np.intp)  # others in the report, per row
    flip = 2 * need > K
    draws = np.where(flip, K - need, need)
    top = int(draws.max(initial=0))
    # 16-bit words while the rejection rate (under k / 2^16) stays small.
    bits = 16 if k <= 4096 else 32
    # Spares: about twice the expected number of rejections.
    n_spare = _SPARE_WORDS + int(2 * codes.size * top * k / 2.0**bits)
    return need, flip, draws, top, bits, n_spare


def _fill_subsets_numpy(out, codes, include, d, rng):
    """Floyd's algorithm, one vectorized step per element for all the rows.

    A row draws r others (r = d - 1 or d), or, when r > K / 2 (K = k - 1),
    the K - r others it leaves out (its row starts full and the draws clear
    bits): the complement of a uniform subset is uniform, and a row never
    needs more than K / 2 draws. Step s (j = K - top + s) concerns the rows
    that still draw top - s or more; the others' index t maps to the
    category t + (t >= code).

    The integers come from the same words as in the compiled loop
    (:func:`_floyd_rows`), each by Lemire's multiply-shift with rejection:
    the rejected words (rare), row by row, take the spare words in turn,
    and a row that runs out of spares is redone with a fresh batch, as
    there. So the two paths give the same reports.
    """
    m, k = out.shape
    K = k - 1
    need, flip, draws, top, bits, n_spare = _draw_layout(codes, include, d, k)
    words = _words(rng, m * top, bits).reshape(m, top).astype(np.uint64)
    spare = _words(rng, n_spare, bits).astype(np.uint64)
    bound = (K - top + np.arange(top) + 1).astype(np.uint64)  # j + 1 per step
    low = np.uint64((1 << bits) - 1)
    limit = np.uint64(1 << bits) % bound
    prod = words * bound
    active = np.arange(top) >= (top - draws)[:, None]
    rejected_rows, rejected_steps = np.nonzero(active & ((prod & low) < limit))
    at, used = 0, 0
    while at < rejected_rows.size:  # row by row, in order
        row = rejected_rows[at]
        first = at
        while at < rejected_rows.size and rejected_rows[at] == row:
            step = rejected_steps[at]
            p = words[row, step] * bound[step]  # (again from its word after a restart)
            while (p & low) < limit[step]:
                if used == n_spare:
                    break
                p = spare[used] * bound[step]
                used += 1
            else:
                prod[row, step] = p
                at += 1
                continue
            # Out of spares: a fresh batch, and the row again from its words.
            spare = _words(rng, n_spare, bits).astype(np.uint64)
            used = 0
            at = first
            break
    t = (prod >> np.uint64(bits)).astype(np.intp)
    mark = (~flip).astype(np.uint8)  # the value a drawn element gets
    out[flip] = 1
    rows = np.arange(m)
    for s in range(top):
        j = K - top + s
        act = rows[draws >= top - s]
        code = codes[act]
        ts = t[act, s]
        cat = ts + (ts >= code)
        cat = np.where(out[act, cat] == mark[act], j + (j >= code), cat)
        out[act, cat] = mark[act]
    out[rows, codes] = include


def _floyd_rows(
    out, targets, codes, include, d, k, words, spare, bits, start, scratch
):  # pragma: no cover
    """Floyd's algorithm row by row from row ``start`` (compiled by numba).

    Row i is written to ``out[i]``, or to ``out[targets[i]]`` when
    ``targets`` is not empty (a caller's table, in place).

    A row's others are the K = k - 1 categories but its own, numbered
    0..K-1 (other t is category t + (t >= code)). Floyd's step j adds t, or
    j when t is in the set S already; since S holds only integers below j
    then, that is ``S | {t} | ({j} if t in S)``, without a branch on the
    data:

    * k <= 64: S in a register, bit t of S moved up to j as
      ``(S << (j - t)) & (1 << j)`` (three dependent operations a step);
      then the row's own bit is inserted at its category (the bits above
      it move up by one);
    * k > 64: S as a byte per category in ``scratch`` (``ceil(k / 8)``
      64-bit words, cleared for each row), directly at the categories of t
      and j: ``c = S[t]; S[j] = c; S[t] = 1`` (loads and stores with no
      chain through the data but the bytes themselves, where the former
      64-bit words were a read-modify-write chain); each 8 bytes are then
      gathered into 8 bits by one multiplication
      (``(v * 0x0102040810204080) >> 56``: byte i lands on bit 56 + i, no
      two partial products meet).

    The row is written to ``out`` in one pass: ``k`` bits in ``ceil(k / 8)``
    bytes when ``out`` is packed (``out.shape[1] != k``, see
    :class:`~sklearn_uldp.mechanisms.PackedReports`), else a byte per
    category (a row of zeros beforehand).

    A row with r > K / 2 others draws the K - r it leaves out and takes
    the complement (as in :func:`_fill_subsets_numpy`).

    ``words[i, s]`` (uniform, ``bits`` bits; a row of words per user, as
    many as the most draws of a row: a row with r draws reads its last r)
    gives step s's integer in {0, ..., j} by Lemire's multiply-shift ("Fast
    random integer generation in an interval", ACM TOMACS 2019), exact with
    the rejection of the low bits under 2^bits mod (j + 1); a rejected word
    is replaced by the next spare one. Returns the number of rows done: a
    row that runs out of spare words is not written and is left for a new
    call with fresh spares (:func:`_fill_subsets_numpy` reads the same
    words the same way).
    """
    m = codes.shape[0]
    K = k - 1
    packed = out.shape[1] != k
    n_bytes = out.shape[1]
    placed = targets.shape[0] != 0
    top = words.shape[1]
    n_spare = spare.shape[0]
    shift = np.uint64(bits)
    one = np.uint64(1)
    zero = np.uint64(0)
    low6 = np.uint64(63)
    span = one << shift
    low = span - one
    full = ~zero
    # byte i of v (0 or 1) times 2^(56 - 7 i) lands on bit 56 + i
    gather = np.uint64(0x0102040810204080)
    top_byte = np.uint64(56)
    seen = scratch.view(np.uint8)
    n_scratch = scratch.shape[0]
    used = 0
    for i in range(start, m):
        position = codes[i]
        code = np.uint64(position)
        own = include[i]
        r = d - 1 if own else d
        flip = 2 * r > K
        if flip:
            r = K - r
        row_words = words[i]
        o = targets[i] if placed else i
        if k <= 64:  # S in a register
            x = zero
            for s in range(top - r, top):
                j = np.uint64(K - top + s)
                bound = j + one
                prod = np.uint64(row_words[s]) * bound
                if (prod & low) < bound:  # rarely: maybe a rejection
                    limit = span % bound
                    while (prod & low) < limit:
                        if used == n_spare:
                            return i
                        prod = np.uint64(spare[used]) * bound
                        used += 1
                t = prod >> shift
                x = (x | (one << t)) | ((x << (j - t)) & (one << j))
            if flip:
                x = ~x & (full if K == 64 else (one << np.uint64(K)) - one)
            # Insert the own bit at its category: the bits above move up.
            below = (one << (code & low6)) - one
            x = (x & below) | ((x & ~below) << one)
            if own:
                x |= one << (code & low6)
            if packed:
                for b in range(n_bytes):
                    out[o, b] = np.uint8((x >> np.uint64(8 * b)) & np.uint64(255))
            else:
                c = 0
                while x:
                    if x & one:
                        out[o, c] = 1
                    x >>= one
                    c += 1
            continue
        for w in range(n_scratch):
            scratch[w] = zero
        for s in range(top - r, top):
            j = K - top + s
            bound = np.uint64(j + 1)
            prod = np.uint64(row_words[s]) * bound
            if (prod & low) < bound:
                limit = span % bound
                while (prod & low) < limit:
                    if used == n_spare:
                        return i
                    prod = np.uint64(spare[used]) * bound
                    used += 1
            t = np.intp(prod >> shift)
            t += t >= position  # the categories of t and j
            j += j >= position
            c = seen[t]
            seen[j] = c
            seen[t] = 1
        if packed:
            own_byte = position >> 3
            own_bit = np.uint8(1 << (position & 7))
            for b in range(n_bytes):
                v = np.uint8((scratch[b] * gather) >> top_byte)
                if flip:
                    left = k - 8 * b
                    v = ~v & (np.uint8(255) if left >= 8 else np.uint8((1 << left) - 1))
                if b == own_byte:
                    v = (v & ~own_bit) | (own_bit if own else np.uint8(0))
                out[o, b] = v
        else:
            mark = np.uint8(1) if flip else np.uint8(0)
            for c in range(k):
                out[o, c] = seen[c] ^ mark
            out[o, position] = own
    return m


if numba is not None:
    _floyd_rows = numba.njit(nogil=True, cache=True)(_floyd_rows)


#: Bit b of each byte value (little-endian, the packed layout's order).
_BYTE_BITS = np.unpackbits(
    np.arange(256, dtype=np.uint8)[:, None], axis=1, bitorder="little"
).astype(np.int64)
_BYTE_SIZES = _BYTE_BITS.sum(axis=1)


def _packed_subset_counts(data, d, histogram):  # pragma: no cover - numba
    """Counts of packed subset reports in one pass (compiled by numba).

    ``histogram[b, v]`` += the rows whose byte b is v (the column counts
    are ``histogram @ _BYTE_BITS``); returns the number of rows that do not
    hold exactly ``d`` set bits (padding bits included).
    """
    bad = 0
    for i in range(data.shape[0]):
        size = 0
        for b in range(data.shape[1]):
            v = data[i, b]
            histogram[b, v] += 1
            size += _BYTE_SIZES[v]
        bad += size != d
    return bad


if numba is not None:
    _packed_subset_counts = numba.njit(nogil=True, cache=True)(_packed_subset_counts)


def _words(rng, size, bits):
    """``size`` uniform words of ``bits`` (16 or 32) bits from the generator.

    The bit generator's raw 64-bit outputs cut into little-endian words
    (several times faster than ``Generator.integers`` for the same bits;
    the same seed gives the same words on every platform).
    """
    dtype = np.dtype("<u2") if bits == 16 else np.dtype("<u4")
    n_raw = -(-size * dtype.itemsize // 8)
    raw = getattr(rng.bit_generator, "random_raw", None)
    if raw is None:  # pragma: no cover - every numpy bit generator has it
        return rng.integers(0, 1 << bits, size=size, dtype=dtype.newbyteorder("="))
    words = np.asarray(raw(n_raw), dtype="<u8").view(dtype)[:size]
    return words.astype(dtype.newbyteorder("="), copy=False)


#: Integer dtypes the samplers index with as they are (narrow codes and
#: rows from a caller's counting pass: no wider copy of fresh memory).
_INDEX_DTYPES = (np.dtype(np.uint8), np.dtype(np.uint16), np.dtype(np.int32), np.dtype(np.intp))


def _index_array(values):
    """``values`` as an array of one of :data:`_INDEX_DTYPES` (intp unless it is one)."""
    values = np.asarray(values)
    return values if values.dtype in _INDEX_DTYPES else values.astype(np.intp)


#: No targets: row i of a call is written to row i of its ``out``.
_NO_TARGETS = np.zeros(0, dtype=np.intp)


def _fill_subsets_numba(out, codes, include, d, rng, k=None, targets=None):
    m = codes.shape[0]
    k = out.shape[1] if k is None else k  # k bits packed in fewer bytes
    targets = _NO_TARGETS if targets is None else targets
    codes = _index_array(codes)
    include = np.asarray(include, dtype=np.bool_)
    _, _, _, top, bits, n_spare = _draw_layout(codes, include, d, k)
    words = _words(rng, m * top, bits).reshape(m, top)
    scratch = np.empty(-(-k // 8), dtype=np.uint64)  # a byte per category
    done = 0
    while done < m:
        spare = _words(rng, n_spare, bits)
        done = _floyd_rows(out, targets, codes, include, d, k, words, spare, bits, done, scratch)


@fill_mechanism_doc
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
    %(epsilon)s
    subset_size : "optimal" or int, default="optimal"
        d, with 1 <= d < k; ``"optimal"`` minimizes the variance
        (:func:`optimal_subset_size`).
    %(bit_vector_output)s
    %(domain_and_seed)s

    Attributes
    ----------
    categories_ : ndarray of shape (k,)
    subset_size_ : int
        The subset size d used.
    channel_ : SubsetSelectionChannel
    %(fitted_input)s

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
    (3, (100000, 10), 3)
    >>> p_hat = EMEstimator().fit(reports).distribution_
    >>> bool(abs(p_hat[0] - 0.5) < 0.02)
    True
    """

    _parameter_constraints = {
        **BaseMechanism._parameter_constraints,
        "subset_size": [StrOptions({"optimal"}), Interval(Integral, 1, None, closed="left")],
        "sparse_output": ["boolean"],
        "packed_output": ["boolean"],
    }

    def __init__(
        self,
        epsilon: float = 1.0,
        *,
        subset_size: int | Literal["optimal"] = "optimal",
        sparse_output: bool = False,
        packed_output: bool = False,
        categories: Categories = "auto",
        random_state: RandomStateLike = None,
    ) -> None:
        self.epsilon = epsilon
        self.subset_size = subset_size
        self.sparse_output = sparse_output
        self.packed_output = packed_output
        self.categories = categories
        self.random_state = random_state

    def _check_params(self):
        BaseMechanism._check_params(self)
        self._check_output_format()

    def _make_channel(self):
        d = self.subset_size
        if isinstance(d, str):
            d = optimal_subset_size(self.epsilon, len(self.categories_))
        self.subset_size_ = int(d)
        return SubsetSelectionChannel(self.categories_, self.epsilon, d)

    @property
    def theta_(self):
        raise AttributeError("SubsetSelection has no theta.")
