"""Exact EM over reports that stay on Dask workers.

The likelihood of bit-vector reports (RAPPOR, OUE, uRAP, uBD) has no
fixed-size sufficient statistic, but the quantities one EM step needs from
them add up over partitions: ``sum_i 1/D_i``, ``sum_i log D_i`` and
``Y^T (1/D)`` (:meth:`~sklearn_uldp.mechanisms.BitRows.em_terms`).
:class:`WorkerBitRows` keeps each partition's compact store where it was
computed and evaluates those sums there, so the client holds O(k) numbers
whatever n is, and one EM evaluation moves one length-s vector per partition
each way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..mechanisms._bit_rows import add_em_terms

__all__ = ["WorkerBitRows"]


def _em_terms(store, A, b):
    return store.em_terms(A, b)


def _restrict(store, columns):
    return store.restrict(columns)


def _summary(store):
    return store.n_rows, store.nbytes, store.row_size_counts()


class WorkerBitRows:
    """Per-report statistics held by Dask workers, one store per partition.

    Stands in for :class:`~sklearn_uldp.mechanisms.BitRows` in
    :class:`~sklearn_uldp.mechanisms.ReportStatistics` (built by
    :func:`~sklearn_uldp.parallel.reduce_statistics` with
    ``keep_reports="workers"``): it offers the same ``em_terms``, ``n_rows``,
    ``nbytes`` and ``row_size_counts``, computed on the workers. The
    estimate is the same as on one machine up to floating-point summation
    order. The futures live as long as this object (and the client).

    Parameters
    ----------
    futures : list of distributed.Future
        Futures of the partitions' ``BitRows`` stores, in partition order.
    client : distributed.Client

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> import dask.dataframe as dd
    >>> from dask.distributed import Client
    >>> from sklearn_uldp import RAPPOR, EMEstimator
    >>> from sklearn_uldp.parallel import privatize_partitions, reduce_statistics
    >>> X = pd.DataFrame({"v": np.random.default_rng(0).choice(4, 3000,
    ...                                                       p=[.4, .3, .2, .1])})
    >>> mech = RAPPOR(2.0, theta=0.5, categories=[0, 1, 2, 3]).fit(X)
    >>> with Client(processes=False, n_workers=1, dashboard_address=None):
    ...     reports = privatize_partitions(dd.from_pandas(X, npartitions=3), mech,
    ...                                    random_state=0)
    ...     stats = reduce_statistics(reports, mech, keep_reports="workers")
    ...     em = EMEstimator().fit_statistics(stats)
    >>> type(stats.extra).__name__, len(stats.extra.futures), em.converged_
    ('WorkerBitRows', 3, True)
    """

    def __init__(self, futures: Sequence[Any], client: Any) -> None:
        self.futures = list(futures)
        self.client = client
        summaries = client.gather(client.map(_summary, self.futures, pure=False))
        self.n_cols = int(summaries[0][2].size - 1) if summaries else 0
        self.n_rows = int(sum(rows for rows, _, _ in summaries))
        self.nbytes = int(sum(size for _, size, _ in summaries))
        self._size_counts = (
            sum(counts for _, _, counts in summaries) if summaries else np.zeros(1, dtype=np.int64)
        )

    def __add__(self, other):
        if not isinstance(other, WorkerBitRows):
            raise TypeError(
                "Statistics kept on Dask workers only add to statistics kept on "
                "workers: reduce all partitions with keep_reports='workers'."
            )
        total = WorkerBitRows.__new__(WorkerBitRows)
        total.futures = self.futures + other.futures
        total.client = self.client
        total.n_cols = self.n_cols or other.n_cols
        total.n_rows = self.n_rows + other.n_rows
        total.nbytes = self.nbytes + other.nbytes
        width = max(self._size_counts.size, other._size_counts.size)
        total._size_counts = np.pad(
            self._size_counts, (0, width - self._size_counts.size)
        ) + np.pad(other._size_counts, (0, width - other._size_counts.size))
        return total

    def row_size_counts(self) -> np.ndarray:
        """How many rows have each number of set bits (index = set bits)."""
        return self._size_counts.copy()

    def restrict(self, columns, n_jobs=None):
        """The partitions' stores on a subset of columns, built on the workers.

        See :meth:`~sklearn_uldp.mechanisms.BitRows.restrict`;
        ``n_jobs`` is ignored (the workers restrict their partitions in
        parallel). The restricted stores live as long as the returned object.
        """
        [columns_future] = self.client.scatter(
            [np.asarray(columns, dtype=np.intp)], broadcast=True, hash=False
        )
        return WorkerBitRows(
            self.client.map(_restrict, self.futures, columns=columns_future, pure=False),
            self.client,
        )

    def em_terms(self, A, b, n_jobs=None):
        """The EM sums of every partition, added in partition order.

        ``n_jobs`` is ignored: the partitions are evaluated in parallel on
        the workers.
        """
        b = np.asarray(b, dtype=float)
        # One copy of b on the cluster per evaluation, not one per task.
        [b_future] = self.client.scatter([b], broadcast=True, hash=False)
        parts = self.client.gather(
            self.client.map(_em_terms, self.futures, A=float(A), b=b_future, pure=False)
        )
        return add_em_terms(parts, b.size)
