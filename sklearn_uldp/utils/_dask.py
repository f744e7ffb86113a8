"""Reduction of per-partition sufficient statistics on Dask workers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np


def tree_sum_of_partitions(
    collection: Any, statistics: Callable[..., Any], add: Callable[[Any, Any], Any], *args: Any
) -> Any:
    """Sum ``statistics(partition, *args)`` over a Dask collection's partitions.

    One task per partition computes its statistics; the partial results are then
    added pairwise in a balanced tree of tasks, so the additions run on the
    workers and no single task receives every partition's result at once (the
    statistics are sufficient: counts that add up across partitions).

    Parameters
    ----------
    collection : dask collection
        Anything with ``to_delayed()`` (a Dask DataFrame, Series or Array).
    statistics : callable
        ``statistics(partition, *args)`` gives one partition's statistics.
    add : callable
        ``add(a, b)`` gives the statistics of two partitions together.
    *args
        Passed to ``statistics`` after the partition.

    Returns
    -------
    total
        The computed sum (not a Dask object).
    """
    import dask

    parts = [dask.delayed(statistics)(part, *args) for part in np.ravel(collection.to_delayed())]
    return _pairwise(parts, dask.delayed(add)).compute()


def _pairwise(parts: list[Any], add: Callable[[Any, Any], Any]) -> Any:
    while len(parts) > 1:
        parts = [
            add(parts[i], parts[i + 1]) if i + 1 < len(parts) else parts[i]
            for i in range(0, len(parts), 2)
        ]
    return parts[0]
