"""Threads for compiled loops that release the GIL (numba ``nogil``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sized
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from joblib import cpu_count, effective_n_jobs
from joblib.parallel import get_active_backend

__all__ = ["n_threads", "map_threads", "imap_threads"]


def n_threads(n_jobs: int | None) -> int:
    """Threads for ``n_jobs``: ``None`` means all cores, unless a
    ``joblib.parallel_config`` context sets ``n_jobs``.

    The callers split a fixed amount of work into parts whose results are
    combined in order, so threads change the time of a computation, never
    its value: using every core by default is safe (unlike scikit-learn's
    ``None`` = 1 for processes).
    """
    if n_jobs is None:
        n_jobs = get_active_backend()[1]
        if n_jobs is None:
            return cpu_count(only_physical_cores=False)
    return effective_n_jobs(n_jobs)


def imap_threads(
    function: Callable[[Any], Any], items: Iterable[Any], n_jobs: int | None
) -> Iterator[Any]:
    """``function(item)`` for each item, in order, as the results come.

    Consumed as they come, per-item results are not all held at once; at
    most two items per thread are in flight (items read from files are
    read only as the threads get to them). An iterator's items are taken
    in order, in the calling thread, as the threads get to them: an item
    that draws random numbers draws them in the same order whatever the
    number of threads.
    """
    if isinstance(items, Sized):
        count = min(len(items), n_threads(n_jobs))
    else:  # an iterator: its length is not known
        count = n_threads(n_jobs)
    if count <= 1:
        for item in items:
            yield function(item)
        return
    with ThreadPoolExecutor(max_workers=count) as pool:
        pending = []
        for item in items:
            pending.append(pool.submit(function, item))
            if len(pending) >= 2 * count:
                yield pending.pop(0).result()
        for future in pending:
            yield future.result()


def map_threads(
    function: Callable[[Any], Any], items: Iterable[Any], n_jobs: int | None
) -> list[Any]:
    """``[function(item) for item in items]``, on threads when asked."""
    return list(imap_threads(function, items, n_jobs))
