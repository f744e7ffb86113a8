"""Unary-encoding mechanisms: RAPPOR, OUE and utility-optimized RAPPOR (uRAP).

References
----------
Erlingsson, Pihur, Korolova, "RAPPOR", CCS 2014 (basic one-time RAPPOR).
Wang, Blocki, Li, Jha, "Locally differentially private protocols for frequency
estimation", USENIX Security 2017 (generalized RAPPOR, OUE).
Murakami & Kawamoto, USENIX Security 2019, Def. 5 / Prop. 5 (uRAP).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from numbers import Real
from typing import Literal

import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ..exceptions import ReportMismatchError
from ..utils._bits import (
    bernoulli_packed,
    column_counts,
    masked_row_counts,
    pack_rows,
    packed_width,
    set_packed_bits,
    unpack_rows,
    write_own_bits,
)
from ..utils._numba import use_compiled
from ..utils._sampling import (
    bernoulli_matrix,
    bernoulli_position_chunks,
    unary_sparse_rows,
)
from ..utils._typing import ArrayLike, Categories, RandomStateLike, Sensitive
from ..utils._validation import (
    check_channel_categories,
    check_realizable,
    check_sensitive,
    check_sensitive_mask,
    check_theta,
    realized_probability,
    warn_dense_reports,
)
from ._base import BaseMechanism
from ._bit_rows import BitRows, _n_threads, numba
from ._bit_rows_segment import segment_log_likelihood
from ._channel import (
    MAX_MATRIX_OUTPUTS,
    Channel,
    ReportStatistics,
    SensitiveSetMixin,
    kept_reports,
    sensitive_mask_schema,
    several_columns_hint,
)
from ._docs import fill_mechanism_doc
from ._oracle_kernels import report_array
from ._reports import PackedReports, attach_channel, is_packed_frame
from ._theta import optimal_theta

__all__ = [
    "UnaryEncodingChannel",
    "RAPPORChannel",
    "RAPPOR",
    "UtilityOptimizedRAPPOR",
    "basic_rappor_theta",
]

# Rows per sampling chunk are chosen so that one chunk draws about this many
# random bytes, which bounds the temporary memory of transform.
_CHUNK_CELLS = 1 << 25


_BITS_ONLY = (
    "Bit-vector reports must hold only 0 and 1 (one bit per category, as "
    "returned by the mechanism's transform). Pass the reports unchanged, or "
    "check that these columns really are RAPPOR-type reports."
)


def check_packed_reports(reports, n_bits, channel):
    """Packed reports of ``channel`` (``n_bits`` bits, one block), checked.

    The bits per report must be the channel's and the padding bits 0 (a
    report with a padding bit set is not one the mechanism can produce).
    """
    if reports.n_bits != n_bits or reports.n_blocks != 1:
        raise ReportMismatchError(
            f"Packed reports of {reports.n_bits} bits ({reports.n_blocks} block(s)) do "
            f"not match {channel!r}, whose reports have {n_bits} bits. Were they "
            "produced by another mechanism or domain?"
        )
    data = reports.data
    if n_bits % 8 and data.shape[0]:
        padding = np.uint8((0xFF << (n_bits % 8)) & 0xFF)
        if (data[:, -1] & padding).any():
            raise ReportMismatchError(
                f"Packed reports of {n_bits} bits have padding bits set (bits "
                f"{n_bits} to {8 * data.shape[1] - 1} of a row must be 0): they are "
                "not reports of this mechanism, or were packed with another bit "
                'order (use np.packbits(bits, axis=1, bitorder="little")).'
            )
    return reports


def basic_rappor_theta(epsilon: float) -> float:
    """theta of basic one-time RAPPOR: e^(eps/2) / (e^(eps/2) + 1).

    Examples
    --------
    >>> from sklearn_uldp.mechanisms import basic_rappor_theta
    >>> round(basic_rappor_theta(1.0), 4)
    0.6225
    """
    # 1 / (1 + e^(-eps/2)): no overflow for a huge epsilon.
    return float(1.0 / (1.0 + np.exp(-float(epsilon) / 2.0)))


def _checked_basic_theta(epsilon, k, what=None):
    """theta of basic RAPPOR, refusing budgets at which it rounds to 1.

    Basic RAPPOR is RR on each bit with budget eps/2: from eps ~ 73 the keep
    probability theta rounds to exactly 1 (raw data). The refusal names the
    usable range, like every channel's budget check.
    """
    epsilon = float(epsilon)

    def probabilities_at(eps):
        theta = basic_rappor_theta(eps)
        d1, _, _ = _unary_probabilities(eps, theta)
        return np.array([theta, 1.0 - theta, d1, 1.0 - d1])

    check_realizable(
        epsilon, probabilities_at, what=what or f"basic RAPPOR (theta=None) with k={k}"
    )
    return basic_rappor_theta(epsilon)


def _unary_probabilities(epsilon, theta):
    """(d1, d2, 1 - d2) of uRAP, stably (no overflow, no cancellation).

    With z = e^-eps: d2 = (1 - theta) + theta z, d1 = theta z / d2 and
    1 - d2 = theta (1 - z) = -theta expm1(-eps).
    """
    z = np.exp(-epsilon)
    d2 = (1.0 - theta) + theta * z
    with np.errstate(divide="ignore", invalid="ignore"):  # theta = 1: NaN, refused
        d1 = theta * z / d2
    return d1, d2, -theta * np.expm1(-epsilon)


def _byte_realized(q):
    """P(cell = 1) realized by :func:`bernoulli_matrix` (a byte, then a tie)."""
    if q <= 0.0 or q >= 1.0:
        return float(q >= 1.0)
    scaled = q * 256.0
    threshold = np.floor(scaled)
    return float((threshold + realized_probability(scaled - threshold)) / 256.0)


def _rows_per_chunk(k):
    return max(1, _CHUNK_CELLS // max(k, 1))


# Set bits counted per bincount call (bounds its int64 copy: 8 MB, where a
# single call would copy 8 bytes a set bit, a GB for an OUE upload of 10^6
# reports).
_BINCOUNT_CHUNK = 1 << 20
# Rows added in uint8 before widening (255 rows of 0/1 cannot overflow).
_SLAB_ROWS = 255
# Dense reports from this many cells on are checked and counted in one pass
# by encode_reports, split between two threads from _SPLIT_BYTES on.
_COUNTED_CELLS = 1 << 20
_SPLIT_BYTES = 1 << 25


def _column_sums_loop(bits, out):
    """``out += bits.sum(axis=0)`` with uint16 partial sums (numba).

    Returns the bitwise OR of every byte (1 or 0 for 0/1 reports), taken in
    the same vectorized pass: checking the bytes and counting them is one
    read of the reports, not two.
    """
    n, k = bits.shape
    acc = np.zeros(k, np.uint16)
    seen = np.zeros(k, np.uint8)
    for lo in range(0, n, 65535):  # 65535 rows of 0/1 fit in uint16
        acc[:] = 0
        for i in range(lo, min(n, lo + 65535)):
            for j in range(k):
                acc[j] += bits[i, j]
                seen[j] |= bits[i, j]
        for j in range(k):
            out[j] += acc[j]
    total = np.uint8(0)
    for j in range(k):
        total |= seen[j]
    return total


def _count_columns_loop(indices, counts):
    """``counts[j] += 1`` for every j of ``indices`` (numba).

    Returns False, leaving ``counts`` partly updated, on an index outside
    ``[0, counts.size)`` (compiled code checks no bounds).
    """
    k = counts.size
    for at in range(indices.size):
        j = indices[at]
        if j < 0 or j >= k:
            return False
        counts[j] += 1
    return True


if numba is not None:
    _column_sums_loop = numba.njit(nogil=True, cache=True)(_column_sums_loop)
    _count_columns_loop = numba.njit(nogil=True, cache=True)(_count_columns_loop)


def _count_columns(indices, k):
    """``np.bincount(indices, minlength=k)`` for column indices of a CSR matrix.

    Compiled, one pass and no copy (bincount widens int32 input to int64, 8
    bytes a set bit); else bincount in chunks, which bounds that copy.
    """
    if use_compiled(indices.size):
        # Halves on two threads (the loop releases the GIL), added after.
        parts = [indices] if indices.size < 1 << 22 else np.array_split(indices, 2)
        counts = [np.zeros(k, dtype=np.int64) for _ in parts]
        if len(parts) > 1 and _n_threads(None) > 1:
            with ThreadPoolExecutor(max_workers=2) as pool:
                ok = list(pool.map(_count_columns_loop, parts, counts))
        else:
            ok = [_count_columns_loop(*args) for args in zip(parts, counts, strict=True)]
        if all(ok):
            return sum(counts[1:], counts[0])
    counts = np.zeros(k, dtype=np.int64)
    for lo in range(0, indices.size, _BINCOUNT_CHUNK):
        counts += np.bincount(indices[lo : lo + _BINCOUNT_CHUNK], minlength=k)
    return counts


def _checked_column_sums(bits, n_jobs=None):
    """Column sums of a C-contiguous uint8 matrix and the OR of its bytes, in
    one compiled pass (halves on two threads from 32 MB on); None without
    numba or below ``COMPILE_MIN_WORK`` words of 8 bytes (the caller's numpy
    passes)."""
    if not use_compiled(bits.size // 8) or not bits.flags.c_contiguous or bits.dtype != np.uint8:
        return None
    n, k = bits.shape
    split = bits.nbytes >= _SPLIT_BYTES and _n_threads(n_jobs) > 1 and n > 1
    parts = np.array_split(bits, 2) if split else [bits]
    sums = [np.zeros(k, dtype=np.int64) for _ in parts]
    if len(parts) > 1:
        with ThreadPoolExecutor(max_workers=2) as pool:
            seen = list(pool.map(_column_sums_loop, parts, sums))
    else:
        seen = [_column_sums_loop(parts[0], sums[0])]
    return sum(sums[1:], sums[0]), int(np.bitwise_or.reduce(np.asarray(seen, dtype=np.uint8)))


class _CountedBits(np.ndarray):
    """Dense 0/1 reports checked by encode_reports, with their column sums.

    The check and the count are one pass over the reports (the pass is what
    costs: a GB of OUE reports); statistics reads the sums instead of
    summing again. Slices and other derived arrays carry no sums.
    """

    bit_counts = None

    def __array_finalize__(self, obj):
        self.bit_counts = None


def _column_sums(bits):
    """Column sums of a 0/1 uint8 matrix, as int64.

    Slabs of 255 rows are added in uint8 (one byte a cell, vectorized) and
    only their sums widened: several times faster than summing every cell
    into int64 (with numba, one vectorized loop into uint16: faster still).
    """
    n, k = bits.shape
    if use_compiled(bits.size // 8) and bits.flags.c_contiguous:
        sums = np.zeros(k, dtype=np.int64)
        _column_sums_loop(bits, sums)
        return sums
    full = n // _SLAB_ROWS * _SLAB_ROWS
    sums = bits[full:].sum(axis=0, dtype=np.int64)
    if full:
        slabs = bits[:full].reshape(-1, _SLAB_ROWS, k).sum(axis=1, dtype=np.uint8)
        sums += slabs.sum(axis=0, dtype=np.int64)
    return sums


def _fill_csr_indices(bits, indptr, indices):
    """Column indices of the set bits of each row, at ``indptr`` (numba).

    Branch-free (every column is written, the position advances by the
    bit): a branch per bit would be mispredicted at densities near 1/2.
    ``indices`` has one spare element at the end.
    """
    for i in range(bits.shape[0]):
        at = indptr[i]
        for j in range(bits.shape[1]):
            indices[at] = j
            at += bits[i, j]


if numba is not None:
    _fill_csr_indices = numba.njit(nogil=True, cache=True)(_fill_csr_indices)


def _dense_bits_to_csr(bits):
    """CSR array of a dense 0/1 uint8 matrix (faster than scipy's generic path)."""
    n, k = bits.shape
    if use_compiled(bits.size // 8):
        # Row sums (uint16 slabs: k < 65536 bits a row fit), then one
        # compiled pass writing the indices: no int64 position per set bit.
        sizes = (
            bits.sum(axis=1, dtype=np.uint16) if k < 1 << 16 else bits.sum(axis=1, dtype=np.int64)
        )
        nnz = int(sizes.sum(dtype=np.int64))
        # int32 index arrays whenever they fit: scipy would otherwise copy
        # the indices to the wider dtype of indptr.
        dtype = np.int32 if nnz < np.iinfo(np.int32).max else np.int64
        indptr = np.zeros(n + 1, dtype=dtype)
        np.cumsum(sizes, out=indptr[1:], dtype=dtype)
        indices = np.empty(nnz + 1, dtype=dtype)
        _fill_csr_indices(bits, indptr, indices)
        return sp.csr_array((np.ones(nnz, dtype=np.uint8), indices[:nnz], indptr), shape=(n, k))
    indptr = np.zeros(n + 1, dtype=np.int64)
    indices = []
    step = _rows_per_chunk(k)
    for lo in range(0, n, step):
        flat = np.flatnonzero(bits[lo : lo + step].view(bool))
        np.cumsum(
            np.bincount(flat // k, minlength=min(step, n - lo)), out=indptr[lo + 1 : lo + step + 1]
        )
        indptr[lo + 1 : lo + step + 1] += indptr[lo]
        indices.append((flat % k).astype(np.int32))
    indices = np.concatenate(indices) if indices else np.zeros(0, np.int32)
    if indices.size < np.iinfo(np.int32).max:  # the compiled path's int32 index arrays
        indptr = indptr.astype(np.int32)
    return sp.csr_array((np.ones(indices.size, dtype=np.uint8), indices, indptr), shape=(n, k))


class UnaryEncodingChannel(SensitiveSetMixin, Channel):
    """Channel of (X_S, theta, epsilon)-utility-optimized RAPPOR (Murakami & Kawamoto 2019, Def. 5).

    A report is a 0/1 vector with one bit per category. Bits of sensitive
    categories follow generalized RAPPOR: the true category's bit is 1 w.p.
    theta, every other sensitive bit w.p. d1 = theta / ((1 - theta) e^eps +
    theta). A non-sensitive true category's bit is 1 w.p. 1 - d2 with
    d2 = ((1 - theta) e^eps + theta) / e^eps; other non-sensitive bits are 0.
    A report with a non-sensitive bit set is invertible.

    Given x, the bits are independent, so Q(y | x) = C(y) f_x(y) where only
    f_x depends on x: the EM step needs two sparse products over the set
    bits.

    Parameters
    ----------
    categories : array-like of shape (k,)
    epsilon : float
    theta : float in (0, 1)
    sensitive : array-like of bool of shape (k,)

    Examples
    --------
    >>> from sklearn_uldp.mechanisms import UnaryEncodingChannel
    >>> channel = UnaryEncodingChannel(["a", "b", "c"], epsilon=1.0, theta=0.5,
    ...                                sensitive=[True, True, False])
    >>> channel.report_format, channel.report_bits, channel.n_outputs
    ('bits', 3.0, 8)
    """

    name = "urap"
    report_format = "bits"
    bit_vector_reports = True
    _spec_field_schemas = {
        **Channel._spec_field_schemas,
        "theta": {
            "type": "number",
            "exclusiveMinimum": 0,
            "exclusiveMaximum": 1,
            "description": ("Probability that the bit of a sensitive true category is 1."),
        },
        "sensitive": sensitive_mask_schema(),
    }
    # uBD checks its own budget (its sampler draws other probabilities).
    _own_budget_check = False

    def __init__(
        self, categories: ArrayLike, epsilon: float, theta: float, sensitive: ArrayLike
    ) -> None:
        super().__init__(categories, epsilon)
        self.theta = check_theta(theta)
        self._sensitive = check_sensitive_mask(sensitive, self.n_categories)
        self._s_codes = np.flatnonzero(self._sensitive)
        if not self._own_budget_check:
            s, k = self._s_codes.size, self.n_categories
            self._check_budget(
                f"RAPPOR (theta={self.theta:.4g}) with k={k}"
                if s == k
                else f"uRAP (theta={self.theta:.4g}) with {s} sensitive of k={k} categories"
            )
        th = self.theta
        self.d1, self.d2, self._one_minus_d2 = _unary_probabilities(self.epsilon, th)
        # theta - d1 = theta (1 - theta)(1 - e^-eps) / d2, without cancellation.
        self._theta_minus_d1 = th * (1.0 - th) * -np.expm1(-self.epsilon) / self.d2
        self._n_codes = np.flatnonzero(~self._sensitive)
        self._rank = np.full(self.n_categories, -1, dtype=np.int64)
        self._rank[self._s_codes] = np.arange(self._s_codes.size)
        # f_x(y) for a protected report: w_x when bit x is 0 (or x is not
        # sensitive), r when the sensitive bit x is 1.
        self._w_s = self.d2  # (1 - theta) / (1 - d1)
        self._r = th / self.d1 if self.d1 > 0 else np.inf
        self._w = np.where(self._sensitive, self._w_s, self.d2)

    def _draw_probabilities(self, epsilon):
        d1, d2, one_minus_d2 = _unary_probabilities(epsilon, self.theta)
        probs = [self.theta, 1.0 - self.theta, d1, 1.0 - d1]
        if self._s_codes.size < self.n_categories:
            # 1 - d2 only produces invertible reports (no privacy ratio
            # involves it); d2 enters the protected reports' probabilities.
            probs += [d2]
        return np.array(probs)

    def get_params(self):
        return {
            "epsilon": self.epsilon,
            "theta": self.theta,
            "sensitive": self._sensitive.copy(),
        }

    @property
    def report_bits(self):
        return float(self.n_categories)

    @property
    def n_outputs(self):
        return 2**self.n_categories

    # ----------------------------------------------------------- exact matrix
    def output_labels(self):
        k = self.n_categories
        if 2**k > MAX_MATRIX_OUTPUTS:
            raise ValueError(f"2^{k} outputs: the full channel matrix is only built for k <= 16.")
        y = np.arange(2**k)
        return ((y[:, None] >> np.arange(k)[None, :]) & 1).astype(np.uint8)

    def matrix(self):
        return self._matrix_from(self.theta, self.d1, self._one_minus_d2)

    def realized_matrix(self):
        """The channel :meth:`sample` realizes (see :meth:`Channel.realized_matrix`).

        Own bits are drawn by comparing a 53-bit uniform (or, for RAPPOR, one
        random byte and a uniform on ties) with theta or 1 - d2; other bits by
        random bytes or geometric gaps, realized to float64 resolution.
        """
        s, k = self._s_codes.size, self.n_categories
        theta = _byte_realized(self.theta) if s == k else realized_probability(self.theta)
        d1 = _byte_realized(self.d1) if not (self.d1 < 0.15 or 2 * s < k) else self.d1
        return self._matrix_from(theta, d1, realized_probability(self._one_minus_d2))

    def _matrix_from(self, theta, d1, one_minus_d2):
        Y = self.output_labels().astype(bool)  # (2^k, k)
        k = self.n_categories
        S = self._sensitive
        Q = np.empty((k, Y.shape[0]))
        for x in range(k):  # k <= 16 rows: the loop is over inputs, not users
            p_one = np.where(S, d1, 0.0)
            p_one[x] = theta if S[x] else one_minus_d2
            Q[x] = np.prod(np.where(Y, p_one, 1.0 - p_one), axis=1)
        return Q

    def protected_outputs(self):
        Y = self.output_labels().astype(bool)
        return ~Y[:, ~self._sensitive].any(axis=1)

    # --------------------------------------------------------------- sampling
    def sample(self, codes, rng, *, sparse=False, packed=False):
        """Privatize coded inputs: a dense uint8 (n, k) array, a CSR array or
        packed rows (``packed=True``: a uint8 (n, ceil(k / 8)) array, see
        :class:`~sklearn_uldp.mechanisms.PackedReports`).

        Off-input sensitive bits are i.i.d. Bernoulli(d1). When they are rare
        (d1 < 0.15) or the sensitive set is a small part of the domain, only
        the positions of the ones are drawn (geometric gaps, cost ~ number of
        ones); otherwise one random byte per cell decides (see
        :func:`~sklearn_uldp.utils._sampling.bernoulli_matrix`). Either way
        the input's own bit is then redrawn with its own probability, so the
        channel is exactly the one above.

        Dense output is written in chunks of rows, each user's own bit right
        after its row's other bits, so that the scattered writes hit rows that
        are still in cache. Packed output is written in place, k/8 bytes a
        user: the ones of the gaps set their bits, or 64 random bytes decide
        64 bits at once (:func:`~sklearn_uldp.utils._bits.bernoulli_packed`,
        the same law as one byte per cell), and the own bits are written
        last.
        """
        codes = np.asarray(codes, dtype=np.intp)
        n, k = codes.size, self.n_categories
        s = self._s_codes.size
        if s == k:  # every own bit is 1 w.p. theta: one random byte per user
            own_bit = bernoulli_matrix((n,), self.theta, rng)
        else:
            is_s = self._sensitive[codes]
            own_bit = rng.random(n) < np.where(is_s, self.theta, self._one_minus_d2)
        own_bit = own_bit.view(np.uint8)  # writing bools into uint8 casts slowly
        if packed:
            return self._sample_packed(codes, own_bit, rng)
        if not sparse and (self.d1 < 0.15 or 2 * s < k):
            out = np.zeros((n, k), dtype=np.uint8)  # calloc: pages zeroed lazily
            flat = out.reshape(-1)
            one = np.uint8(1)  # likewise a Python int
            done = 0  # users whose own bit is written
            # Positions in the (n, s) stream of off-input sensitive bits. The
            # stream also holds each user's own sensitive cell: it is
            # overwritten by the own bit, i.e. redrawn.
            for pos in bernoulli_position_chunks(n * s, self.d1, rng):
                last = int(pos[-1])
                if s < k:
                    rows = pos // s
                    pos = rows * k + self._s_codes[pos - rows * s]
                flat[pos] = one
                # Rows before the one of the last position get no more ones.
                upto = (last + 1) // s
                if upto > done:
                    flat[np.arange(done * k, upto * k, k) + codes[done:upto]] = own_bit[done:upto]
                    done = upto
            flat[np.arange(done * k, n * k, k) + codes[done:]] = own_bit[done:]
            return out
        if self.d1 < 0.15 or 2 * s < k:
            # Row by row from the same stream of positions, own cells removed
            # and own bits merged in order: canonical CSR, no sort.
            return unary_sparse_rows(codes, own_bit, self._s_codes, self._rank, k, self.d1, rng)
        out = np.empty((n, k), dtype=np.uint8)
        mask = None if s == k else self._sensitive.view(np.uint8)
        step = _rows_per_chunk(k)
        for lo in range(0, n, step):  # chunks of ~32M cells, not users
            hi = min(n, lo + step)
            # Drawn straight into the output rows (no temporary block).
            bernoulli_matrix((hi - lo, k), self.d1, rng, out=out[lo:hi])
            if mask is not None:
                np.multiply(out[lo:hi], mask, out=out[lo:hi])
            # The own bits while the chunk is in cache (flat indices).
            out.reshape(-1)[np.arange(lo * k, hi * k, k) + codes[lo:hi]] = own_bit[lo:hi]
        return _dense_bits_to_csr(out) if sparse else out

    def _sample_packed(self, codes, own_bit, rng):
        """Packed rows of the off-input bits (as :meth:`sample`), own bits last."""
        n, k = codes.size, self.n_categories
        s = self._s_codes.size
        width = packed_width(k)
        if self.d1 < 0.15 or 2 * s < k:
            out = report_array((n, width), np.uint8, zeros=True)
            # The stream of the (n, s) off-input cells holds each user's own
            # sensitive cell too: the own bit written last redraws it.
            for pos in bernoulli_position_chunks(n * s, self.d1, rng):
                set_packed_bits(out, pos, s, self._s_codes if s < k else None)
            write_own_bits(out, codes, own_bit)
            return out
        out = report_array((n, width), np.uint8)
        bernoulli_packed(out, self.d1, rng, mask=self._packed_mask, codes=codes, own=own_bit)
        return out

    @property
    def _packed_mask(self):
        """The packed sensitive columns (the bits noise may set; padding 0)."""
        return pack_rows(self._sensitive.view(np.uint8)[None, :])[0]

    # ------------------------------------------------------------- estimation
    def encode_reports(self, reports):
        """Validate bit-vector reports: a dense 0/1 array, a CSR array or
        :class:`~sklearn_uldp.mechanisms.PackedReports`.

        The structural check (at most one non-sensitive bit per report) runs
        with the statistics, where the set bits are enumerated anyway.
        """
        k = self.n_categories
        if is_packed_frame(reports):  # e.g. read from Parquet
            reports = PackedReports.from_frame(reports, k, self)
        if isinstance(reports, PackedReports):
            return check_packed_reports(reports, k, self)
        if sp.issparse(reports):
            X = sp.csr_array(reports)
            if reports.format == "csr" and vars(reports).get("_has_canonical_format") is True:
                # scipy's own flag (set by the sampler, or by an earlier
                # check) is lost in the conversion: an O(nnz) check saved.
                X.has_canonical_format = True
            if X.shape[1] != k:
                raise ReportMismatchError(
                    f"Reports have {X.shape[1]} columns, but {self!r} reports "
                    f"one bit per category ({k}). Were they produced by another "
                    "mechanism or domain?"
                )
            # sum_duplicates and eliminate_zeros work in place, and X shares
            # its arrays with the caller's matrix: copy before either.
            if not X.has_canonical_format:
                X = X.copy()
                X.sum_duplicates()
            data = X.data
            if data.dtype in (np.uint8, np.bool_):
                valid = not data.size or data.max() <= 1
            else:
                valid = bool(((data == 0) | (data == 1)).all())
            if not valid:
                raise ReportMismatchError(_BITS_ONLY)
            if data.size and not data.all():
                X = X.copy()
                X.eliminate_zeros()
            return X
        if hasattr(reports, "to_numpy"):
            reports = reports.to_numpy()
        arr = np.asarray(reports)
        if arr.ndim != 2 or arr.shape[1] != k:
            raise ReportMismatchError(
                f"Reports of {self!r} are 0/1 matrices of shape (n, {k}); got "
                f"shape {arr.shape}. Were they produced by another mechanism "
                "or domain?" + several_columns_hint(arr.shape, k)
            )
        if arr.dtype == bool:
            return np.ascontiguousarray(arr).view(np.uint8)
        if arr.dtype == object:
            # e.g. a block of columns cut from a ColumnTransformer's output;
            # numbers only ("1" is a string, not a bit: no coercion).
            kind = pd.api.types.infer_dtype(arr.ravel(), skipna=False)
            if kind not in ("integer", "boolean", "floating", "mixed-integer-float", "empty"):
                raise ReportMismatchError(f"{_BITS_ONLY} Got values of type {kind}.")
            arr = arr.astype(np.float64)
        if arr.dtype.kind not in "biuf":
            raise ReportMismatchError(
                f"Bit-vector reports must be 0/1 numbers, got dtype {arr.dtype}."
            )
        if arr.dtype != np.uint8:
            if not np.isin(arr, (0, 1)).all():
                raise ReportMismatchError(_BITS_ONLY)
            return arr.astype(np.uint8)
        arr = np.ascontiguousarray(arr)
        counted = _checked_column_sums(arr) if arr.size >= _COUNTED_CELLS else None
        if counted is not None:
            sums, seen = counted
            if seen > 1:
                raise ReportMismatchError(_BITS_ONLY)
            checked = arr.view(_CountedBits)
            checked.bit_counts = sums
            return checked
        if arr.size and arr.max() > 1:
            raise ReportMismatchError(_BITS_ONLY)
        return arr

    def _set_bits(self, codes):
        """Yield ``(n_rows, rows, cols)`` of the set bits, chunk by chunk."""
        k = self.n_categories
        if sp.issparse(codes):
            rows = np.repeat(np.arange(codes.shape[0]), np.diff(codes.indptr))
            yield codes.shape[0], rows, codes.indices.astype(np.int64)
            return
        step = _rows_per_chunk(k)
        for lo in range(0, codes.shape[0], step):  # ~32M cells per chunk
            block = codes[lo : lo + step]
            if isinstance(block, PackedReports):
                block = unpack_rows(block.data, k)
            flat = np.flatnonzero(block.view(bool))
            yield block.shape[0], flat // k, flat % k

    def _check_rows(self, n_rows, rows, cols):
        """Reports may set at most one non-sensitive bit; return invertible rows."""
        if not self._n_codes.size:
            return np.zeros(n_rows, dtype=bool)
        per_row = np.bincount(rows[~self._sensitive[cols]], minlength=n_rows)
        self._check_rows_counts(per_row)
        return per_row == 1

    def _check_rows_counts(self, per_row):
        if (per_row > 1).any():
            raise ReportMismatchError(
                f"{int((per_row > 1).sum())} reports have several non-sensitive "
                f"bits set, which {self!r} cannot produce (a non-sensitive bit "
                "is only ever set for the true category). Were they produced "
                "by another mechanism, or with other sensitive categories?"
            )

    def statistics(self, codes, *, keep_reports=False):
        k = self.n_categories
        counts = np.zeros(k, dtype=np.int64)
        # Only protected reports enter the likelihood through their bits (an
        # invertible report is known to come from its non-sensitive bit), and
        # only through their sensitive columns.
        bit_rows = (
            BitRows(self._s_codes.size, self._protected_bit_density) if keep_reports else None
        )
        if isinstance(codes, PackedReports):
            data = codes.data
            # Bits counted in place, a machine word at a time: no unpacking.
            counts += column_counts(data)[:k]
            protected = None
            if self._n_codes.size:
                nonsens = pack_rows((~self._sensitive).view(np.uint8)[None, :])[0]
                per_row = masked_row_counts(data, nonsens)
                self._check_rows_counts(per_row)
                protected = per_row == 0
            if keep_reports:
                rows = data if protected is None or protected.all() else data[protected]
                bit_rows.append_packed(rows, None if protected is None else self._s_codes)
            return ReportStatistics(self, int(data.shape[0]), counts, bit_rows)
        if not sp.issparse(codes):
            # Column sums, no enumeration of the set bits.
            known = codes.bit_counts if isinstance(codes, _CountedBits) else None
            if known is not None:  # summed as encode_reports checked them
                counts += known
                if not self._n_codes.size and not keep_reports:
                    return ReportStatistics(self, int(codes.shape[0]), counts, bit_rows)
            nonsens = (~self._sensitive).view(np.uint8)
            step = _rows_per_chunk(k)
            for lo in range(0, codes.shape[0], step):
                block = codes[lo : lo + step]
                if known is None:
                    counts += _column_sums(block)
                if self._n_codes.size:
                    per_row = (block & nonsens).sum(axis=1, dtype=np.int64)
                    self._check_rows_counts(per_row)
                    if keep_reports:
                        block = block[per_row == 0][:, self._s_codes]
                if keep_reports:
                    bit_rows.append_dense(np.ascontiguousarray(block))
            return ReportStatistics(self, int(codes.shape[0]), counts, bit_rows)
        # CSR: the set bits are listed already; no per-bit row numbers needed.
        indptr, indices = codes.indptr, codes.indices
        counts += _count_columns(indices, k)
        if not self._n_codes.size:  # every report protected, ranks = codes
            if keep_reports:
                bit_rows.append_sparse(indptr, indices)
            return ReportStatistics(self, int(codes.shape[0]), counts, bit_rows)
        # Reports with a non-sensitive bit set (at most one) are invertible.
        at = np.flatnonzero(~self._sensitive[indices])
        per_row = np.bincount(
            np.searchsorted(indptr, at, side="right") - 1, minlength=codes.shape[0]
        )
        self._check_rows_counts(per_row)
        if keep_reports:
            protected = per_row == 0
            sizes = np.diff(indptr)
            kept = np.zeros(int(protected.sum()) + 1, dtype=np.int64)
            np.cumsum(sizes[protected], out=kept[1:])
            bit_rows.append_sparse(
                kept, self._rank[np.compress(np.repeat(protected, sizes), indices)]
            )
        return ReportStatistics(self, int(codes.shape[0]), counts, bit_rows)

    @property
    def _protected_bit_density(self):
        """Expected fraction of set sensitive bits in a protected report."""
        return self.d1

    def observed_frequency(self, stats):
        return stats.counts / stats.n

    def expected_frequency(self, p):
        p = np.asarray(p, dtype=float)
        return np.where(
            self._sensitive,
            self.d1 * p.sum() + self._theta_minus_d1 * p,
            self._one_minus_d2 * p,
        )

    @property
    def coef_a(self):
        return np.where(self._sensitive, 1.0 / self._theta_minus_d1, 1.0 / self._one_minus_d2)

    @property
    def coef_b(self):
        return np.where(self._sensitive, -self.d1 / self._theta_minus_d1, 0.0)

    def em_gradient(self, stats, p, *, n_jobs=None):
        return self._em_gradient(stats, p, _bit_rows(stats), None, n_jobs)

    def segment_log_likelihood(self, stats, p0, p1, *, n_jobs=None, p0_parts=None):
        _bit_rows(stats)
        return segment_log_likelihood(self, stats, p0, p1, n_jobs, p0_parts)

    def restricted_em_gradient(self, stats, active, *, n_jobs=None):
        # Categories outside the working set have p = 0, so their bits drop
        # out of D_i: the products need only the working set's sensitive
        # columns, a store of which is built once for the whole run.
        active = np.asarray(active, dtype=bool)
        columns = np.flatnonzero(active[self._s_codes])
        store = _bit_rows(stats)
        if (
            not hasattr(store, "restrict")
            or columns.size > _MAX_RESTRICTED_FRACTION * self._s_codes.size
        ):
            return None  # not worth a copy of the store
        store = store.restrict(columns, n_jobs=n_jobs)

        def gradient(q):
            p = np.zeros(self.n_categories)
            p[active] = q
            g, log_lik = self._em_gradient(stats, p, store, columns, n_jobs)
            return g[active], log_lik

        return gradient

    def _em_gradient(self, stats, p, store, columns, n_jobs):
        """EM gradient with the products over ``store``'s sensitive columns.

        ``columns`` (ranks among the sensitive categories) are the columns of
        ``store`` when it is restricted to them (p is zero on the others),
        None when it holds every sensitive column.
        """
        p = np.asarray(p, dtype=float)
        A = float((p * self._w).sum())
        s_codes = self._s_codes if columns is None else self._s_codes[columns]
        b_s = p[s_codes] * (self._r - self._w_s)
        # Two products over the set bits per step: D_i = A + sum_{j in
        # y_i} b_j (the report's probability up to C(y)) and t = Y^T (1 / D).
        sum_inv, sum_log, t = store.em_terms(A, b_s, n_jobs=n_jobs)
        g = self._w * sum_inv
        g[s_codes] += (self._r - self._w_s) * t
        log_lik = sum_log + self._log_c(stats)
        inv_counts = stats.counts[self._n_codes]
        if self._n_codes.size:
            p_n = p[self._n_codes]
            seen = inv_counts > 0
            with np.errstate(divide="ignore"):
                g[self._n_codes] += np.divide(inv_counts, p_n, out=np.zeros_like(p_n), where=seen)
                log_lik += float(np.sum(inv_counts[seen] * np.log(p_n[seen])))
            log_lik += float(inv_counts.sum() * np.log(self._one_minus_d2))
        return g / stats.n, float(log_lik)

    def _log_c(self, stats):
        """sum_i log C(y_i): the report-only factor of the likelihood."""
        set_s = float(stats.counts[self._s_codes].sum())
        unset_s = stats.n * self._s_codes.size - set_s
        return set_s * np.log(self.d1) + unset_s * np.log(1.0 - self.d1)

    def likelihood(self, codes):
        n = codes.shape[0]
        L = np.broadcast_to(self._w, (n, self.n_categories)).copy()
        offset = 0
        for n_rows, rows, cols in self._set_bits(codes):
            invertible = self._check_rows(n_rows, rows, cols)
            rows = rows + offset
            is_s = self._sensitive[cols]
            L[rows[is_s], cols[is_s]] = self._r
            inv_rows = np.flatnonzero(invertible) + offset
            L[inv_rows] = 0.0
            L[rows[~is_s], cols[~is_s]] = 1.0
            offset += n_rows
        return L


# A working set's store is built when it leaves out at least a fifth of the
# sensitive columns (the products cost in proportion to their set bits).
_MAX_RESTRICTED_FRACTION = 0.8


def _bit_rows(stats):
    return kept_reports(stats, "bit-vector")


class RAPPORChannel(UnaryEncodingChannel):
    """Channel of generalized RAPPOR, (theta, epsilon) (Wang et al. 2017).

    uRAP with every category sensitive: each bit is 1 w.p. theta for the true
    category and d1 = theta / ((1 - theta) e^eps + theta) otherwise.

    Examples
    --------
    >>> from sklearn_uldp.mechanisms import RAPPORChannel, basic_rappor_theta
    >>> channel = RAPPORChannel(["a", "b", "c"], epsilon=1.0,
    ...                         theta=basic_rappor_theta(1.0))
    >>> channel.n_outputs, channel.report_bits
    (8, 3.0)
    """

    name = "rappor"
    _spec_field_schemas = {
        key: value
        for key, value in UnaryEncodingChannel._spec_field_schemas.items()
        if key != "sensitive"
    }

    def __init__(self, categories: ArrayLike, epsilon: float, theta: float) -> None:
        categories = check_channel_categories(categories)
        super().__init__(categories, epsilon, theta, np.ones(len(categories), dtype=bool))

    def get_params(self):
        return {"epsilon": self.epsilon, "theta": self.theta}


class _UnaryEncodingMechanism(BaseMechanism):
    """Shared transform output of the bit-vector mechanisms."""

    def _resolved_theta(self):
        if self.theta is None:
            return _checked_basic_theta(self.epsilon, len(self.categories_))
        if isinstance(self.theta, str):  # "optimal"
            mask = getattr(self, "sensitive_mask_", None)
            if mask is None:
                mask = np.ones(len(self.categories_), dtype=bool)
            # At budgets no channel can realize the formula overflows; the
            # channel's own check below explains the usable range.
            with np.errstate(all="ignore"):
                theta = optimal_theta(self.epsilon, mask)
            if not 0.0 < float(theta) < 1.0:
                probe = UnaryEncodingChannel.__new__(UnaryEncodingChannel)
                probe.theta, probe.categories = 0.5, self.categories_
                probe._s_codes = np.flatnonzero(mask)
                check_realizable(
                    float(self.epsilon),
                    probe._draw_probabilities,
                    what=f"uRAP with theta='optimal' and k={mask.size} (the "
                    "range given is that of theta=0.5)",
                )
                raise ValueError(
                    f"theta='optimal' is not defined at epsilon={self.epsilon} "
                    f"(got {theta}); pass a number theta in (0, 1)."
                )
            return float(theta)
        return check_theta(self.theta)

    def _check_params(self):
        super()._check_params()
        if getattr(self, "theta", None) is not None and not isinstance(self.theta, str):
            check_theta(self.theta)
        self._check_output_format()

    def _check_output_format(self):
        if self.sparse_output and self.packed_output:
            raise ValueError(
                "sparse_output=True and packed_output=True ask for two report "
                "formats: choose one (packed reports take k/8 bytes a report, "
                "sparse ones 4 bytes a set bit)."
            )

    def _sample(self, codes, rng):
        if self.packed_output:
            return self.channel_.sample(codes, rng, packed=True)
        if not self.sparse_output:  # said before the memory is spent (issue 30)
            warn_dense_reports(len(codes), self.channel_.n_categories, owner=type(self).__name__)
        return self.channel_.sample(codes, rng, sparse=self.sparse_output)

    def _wrap_reports(self, outputs, column, X):
        if self.packed_output:
            from ._base import _transform_output

            reports = PackedReports(outputs, self.channel_.n_categories, self.channel_)
            if _transform_output(self) == "pandas":
                # One Arrow binary column per input column, named after it
                # (get_feature_names_out): the form Parquet files and Dask
                # partitions keep, read back by every estimator.
                index = X.index if isinstance(X, (pd.DataFrame, pd.Series)) else None
                return reports.to_frame(list(self.get_feature_names_out()), index=index)
            return reports
        if self.sparse_output:
            from ._base import _transform_output

            if _transform_output(self) == "pandas":
                raise ValueError(
                    "Pandas output does not support sparse reports: use "
                    "sparse_output=False with set_output(transform='pandas')."
                )
            reports = attach_channel(outputs, self.channel_)
            # The sampler writes each row's indices sorted and once (scipy's
            # canonical format): flagged, they are not checked again when
            # estimated from.
            reports.has_canonical_format = True
            return reports
        return self._container(outputs, X)

    def _column_feature_names(self, name):
        if self.packed_output:
            # One column of bytes per input column, named after it.
            return [name]
        # One name per report bit, ``<input>_<category>`` (the channel's).
        return super()._column_feature_names(name)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # Reports are 0/1 bits, not values of the input's dtype.
        tags.transformer_tags.preserves_dtype = []
        return tags

    @property
    def theta_(self) -> float:
        """The theta in use (resolved from ``theta=None``)."""
        check_is_fitted(self, "channel_")
        return self.channel_.theta


@fill_mechanism_doc
class RAPPOR(_UnaryEncodingMechanism):
    """Generalized RAPPOR (unary encoding), an epsilon-LDP mechanism.

    Each user sends one bit per category: the true category's bit is 1 with
    probability ``theta``, every other bit with probability
    ``d1 = theta / ((1 - theta) e^eps + theta)`` (Wang et al. 2017). ``theta=None`` is
    basic one-time RAPPOR (theta = e^(eps/2) / (e^(eps/2) + 1)); ``theta=0.5``
    is optimized unary encoding (OUE, Wang et al. 2017).

    Parameters
    ----------
    %(epsilon)s
    theta : float in (0, 1) or None, default=None
        Probability that the true category's bit is 1.
    %(domain_bits_and_seed)s

    Attributes
    ----------
    categories_ : ndarray of shape (k,)
    channel_ : RAPPORChannel
    theta_ : float
    %(fitted_input)s

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp import RAPPOR
    >>> X = np.array([["a"], ["b"], ["c"]], dtype=object)
    >>> mech = RAPPOR(epsilon=1.0, theta=0.5, categories=["a", "b", "c"],
    ...               random_state=0).fit(X)
    >>> mech.transform(X).shape
    (3, 3)
    >>> mech.get_feature_names_out().tolist()
    ['x0_a', 'x0_b', 'x0_c']
    """

    _parameter_constraints = {
        **BaseMechanism._parameter_constraints,
        "theta": [None, Interval(Real, 0, 1, closed="neither")],
        "sparse_output": ["boolean"],
        "packed_output": ["boolean"],
    }

    def __init__(
        self,
        epsilon: float = 1.0,
        *,
        theta: float | None = None,
        categories: Categories = "auto",
        sparse_output: bool = False,
        packed_output: bool = False,
        random_state: RandomStateLike = None,
    ) -> None:
        self.epsilon = epsilon
        self.theta = theta
        self.categories = categories
        self.sparse_output = sparse_output
        self.packed_output = packed_output
        self.random_state = random_state

    def _make_channel(self):
        return RAPPORChannel(self.categories_, self.epsilon, self._resolved_theta())


@fill_mechanism_doc
class UtilityOptimizedRAPPOR(_UnaryEncodingMechanism):
    """Utility-optimized RAPPOR, (X_S, theta, epsilon)-uRAP.

    Provides (X_S, Y_P, epsilon)-ULDP (Murakami & Kawamoto 2019, Def. 5).
    Bits of sensitive categories follow generalized RAPPOR; the bit of a
    non-sensitive true category is 1 with probability 1 - d2 (then the report
    reveals it), other non-sensitive bits are always 0 (Murakami & Kawamoto 2019, Def. 5). It is
    order-optimal in the high-privacy regime: E[l1] = Theta(s / (eps sqrt n)).

    Parameters
    ----------
    %(epsilon_sensitive)s
    theta : float in (0, 1), None or "optimal", default=None
        ``None`` gives theta = e^(eps/2) / (e^(eps/2) + 1) (the paper's
        default); ``0.5`` is utility-optimized OUE; ``"optimal"`` minimizes
        the closed-form expected l2 loss of the empirical estimator under a
        uniform prior (:func:`sklearn_uldp.model_selection.optimal_theta`;
        pass ``theta=optimal_theta(eps, mask, prior=p)`` for another prior).
    %(domain_bits_and_seed)s

    Attributes
    ----------
    %(fitted_domain_sensitive)s
    channel_ : UnaryEncodingChannel
    theta_ : float
    %(fitted_input)s

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp import UtilityOptimizedRAPPOR
    >>> mech = UtilityOptimizedRAPPOR(epsilon=1.0, sensitive=["c"],
    ...     categories=["a", "b", "c"], random_state=0)
    >>> X = np.array([["a"], ["c"]], dtype=object)
    >>> bits = mech.fit_transform(X)
    >>> bits.shape, bits.dtype
    ((2, 3), dtype('uint8'))
    """

    _parameter_constraints = {
        **RAPPOR._parameter_constraints,
        "sensitive": ["array-like", callable],
        "theta": [None, Interval(Real, 0, 1, closed="neither"), StrOptions({"optimal"})],
    }

    def __init__(
        self,
        epsilon: float = 1.0,
        *,
        sensitive: Sensitive,
        theta: float | Literal["optimal"] | None = None,
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
        return UnaryEncodingChannel(
            self.categories_,
            self.epsilon,
            self._resolved_theta(),
            self.sensitive_mask_,
        )
