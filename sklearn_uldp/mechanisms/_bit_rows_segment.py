"""The default estimate's segment between two points of the simplex, on a
bit-row store: the likelihood along ``q_w = (1 - w) p0 + w p1`` from the
per-report sums at the two ends (linear in q), so that scanning the segment
costs no pass over the reports (:meth:`Channel.segment_log_likelihood`).
"""

from __future__ import annotations

import numpy as np

from ._bit_rows import _NO_WEIGHTS, _SEGMENT_MAX_ROWS
from ._bit_rows_kernels import (
    _segment_sum_log,
)

try:  # optional: compiled products (several times faster per EM step)
    import numba
except ImportError:  # pragma: no cover - numba is optional
    numba = None  # type: ignore[assignment]


class _SegmentRows:
    """Stands in for a store in a channel's ``em_gradient`` on a segment.

    ``D_i(q) = A(q) + sum_{j in y_i} b_j(q)`` is linear in q, so on the
    segment ``q_w = (1 - w) p0 + w p1`` it is ``(1 - w) D_i(p0) + w D_i(p1)``:
    the row sums at the two ends give every point of the segment. The
    channel's own ``em_gradient`` computes everything else (the constant
    factors, the invertible reports), so each channel's likelihood is used
    as it is. While ``w`` is None, ``em_terms`` appends the row sums of the
    point it is called at to ``ends`` (its terms are then zeros: only those
    sums are wanted); otherwise it evaluates the segment at ``w`` from
    ``ends`` (the second end is needed only for ``w != 0``). Its adjoint
    (``t``) and ``sum 1/D`` are not computed (zeros): only the
    log-likelihood is read.
    """

    def __init__(self, store, n_jobs):
        self._store = store
        self._n_jobs = n_jobs
        self.ends = []
        self._weights = None
        self._size_counts = None
        self.w = None
        self.n_cols = store.n_cols

    def em_terms(self, A, b, n_jobs=None):
        if self.w is None:
            D, self._weights = self._store.row_sums(A, b, n_jobs=self._n_jobs)
            self.ends.append(D)
            return 0.0, 0.0, np.zeros(self.n_cols)
        d0, d1, w = self.ends[0], self.ends[-1], self.w
        weights = _NO_WEIGHTS if self._weights is None else self._weights
        if self._store.distinct_rows()._compiled():
            sum_log = _segment_sum_log(d0, d1, float(w), weights)
        else:
            log_d = np.log((1.0 - w) * d0 + w * d1)
            sum_log = float(log_d.sum() if self._weights is None else log_d @ self._weights)
        return 0.0, float(sum_log), np.zeros(self.n_cols)

    def row_size_counts(self):
        if self._size_counts is None:
            self._size_counts = self._store.row_size_counts()
        return self._size_counts

    @property
    def n_rows(self):
        return self._store.n_rows


def segment_log_likelihood(channel, stats, p0, p1, n_jobs=None, p0_parts=None):
    """``w -> log-likelihood at (1 - w) p0 + w p1``, the reports read at most twice.

    For bit-vector channels whose ``em_gradient`` reads the reports through
    ``stats.extra.em_terms`` (a :class:`BitRows`): the per-report sums are
    computed at each end once, when first needed (:meth:`BitRows.row_sums`),
    and each other point of the segment then costs one logarithm per
    distinct report. ``p0_parts``, pairs ``(lambda, q)`` with ``p0 = sum
    lambda q``, give ``p0``'s sums from those of the ``q`` (exact up to
    rounding, the sums being linear in the point): an EM run's recorded
    starting point and the uniform distribution, whose sums need no pass
    over the reports (see :meth:`BitRows.recording_row_sums`). Stores that
    cannot give row sums (kept on Dask workers), that keep their reports in
    files (16 bytes a report in memory would undo what the files save) or
    have too many rows fall back to ``em_gradient`` at each point.
    """
    p0 = np.asarray(p0, dtype=float)
    p1 = np.asarray(p1, dtype=float)
    store = stats.extra
    if (
        not hasattr(store, "row_sums")
        or (store.directory is not None and store.distinct_rows().directory is not None)
        or store.distinct_rows().n_rows > _SEGMENT_MAX_ROWS
    ):
        return lambda w: channel.em_gradient(stats, (1.0 - w) * p0 + w * p1, n_jobs=n_jobs)[1]
    from ._channel import ReportStatistics

    segment = _SegmentRows(store, n_jobs)
    on_segment = ReportStatistics(stats.channel, stats.n, stats.counts, segment)
    parts = [(1.0, p0)] if p0_parts is None else [(float(lam), q) for lam, q in p0_parts]

    def row_sums_at(q):
        segment.w = None
        channel.em_gradient(on_segment, np.asarray(q, dtype=float), n_jobs=n_jobs)
        return segment.ends.pop()

    def log_likelihood(w):
        w = float(w)
        if not segment.ends:
            d0 = None
            for lam, q in parts:
                d = row_sums_at(q)
                d = d if lam == 1.0 else lam * d
                d0 = d if d0 is None else d0 + d
            segment.ends.append(d0)
        if w != 0.0 and len(segment.ends) == 1:
            segment.ends.append(row_sums_at(p1))
        segment.w = w
        return channel.em_gradient(on_segment, (1.0 - w) * p0 + w * p1, n_jobs=n_jobs)[1]

    return log_likelihood
