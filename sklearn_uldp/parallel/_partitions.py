"""Partition-wise privatization and reduction of sufficient statistics."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from functools import partial
from operator import add
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from sklearn.utils.validation import check_is_fitted

from ..estimators._base import as_channel

# SAMPLED_COLUMN_ATTR is re-exported: compose._dataframe imports it from here.
from ..mechanisms._base import SAMPLED_COLUMN_ATTR, check_not_sampled_column  # noqa: F401
from ..mechanisms._reports import PackedReports
from ..utils._dask import tree_sum_of_partitions
from ..utils._random import check_secure_available, check_seed_sequence, is_fresh, is_secure
from ..utils._typing import RandomStateLike, ReportsLike
from ._templates import _dask_meta, _fitted_spec, _partition_template

if TYPE_CHECKING:
    from ..mechanisms._base import BaseMechanism
    from ..mechanisms._channel import Channel, ReportStatistics

__all__ = ["statistics_of", "reduce_statistics", "privatize_partitions"]


def statistics_of(
    reports: ReportsLike,
    mechanism: BaseMechanism | Channel | dict[str, Any] | None = None,
    *,
    keep_reports: bool = False,
) -> ReportStatistics:
    """Sufficient statistics of one batch of reports.

    Parameters
    ----------
    reports : array-like, DataFrame or sparse matrix
        Reports that carry their channel, or plain reports with ``mechanism``.
    mechanism : fitted mechanism, Channel or spec dict, default=None
        Needed when the reports do not carry their channel: a fitted
        mechanism (categorical, numeric or open-domain), its channel (or
        protocol) or spec. For a column of a
        :class:`~sklearn_uldp.compose.DataFramePrivatizer`, pass the
        column's channel, ``priv.channels_[name]``: under the sampling
        strategies a column's reports are not its mechanism's alone (missing
        or fake reports), and ``priv.mechanisms_[name]`` is refused.
    keep_reports : bool, default=False
        Keep what the exact likelihood of bit-vector reports needs (for
        :class:`~sklearn_uldp.EMEstimator`); counts alone suffice otherwise.

    Returns
    -------
    statistics : ReportStatistics

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp import RandomizedResponse
    >>> from sklearn_uldp.parallel import statistics_of
    >>> mech = RandomizedResponse(1.0, categories=[0, 1, 2], random_state=0).fit()
    >>> stats = statistics_of(mech.transform(np.array([[0], [1], [2]])))
    >>> stats.n, int(stats.counts.sum())
    (3, 3)
    """
    channel = _carried_spec(reports)
    if channel is None:
        if mechanism is None:
            raise ValueError(
                "These reports do not carry their mechanism; pass mechanism= "
                "(the fitted mechanism or its spec)."
            )
        channel = spec_of(mechanism)
    elif mechanism is not None and spec_of(mechanism) != channel:
        from ..exceptions import ReportMismatchError

        raise ReportMismatchError("The reports come from another mechanism than `mechanism`.")
    codes = channel.encode_reports(reports)
    return channel.statistics(codes, keep_reports=keep_reports)


def reduce_statistics(
    batches: Iterable[ReportsLike] | Any,
    mechanism: BaseMechanism | Channel | dict[str, Any] | None = None,
    *,
    keep_reports: bool | Literal["disk", "workers"] = False,
    n_jobs: int | None = None,
) -> ReportStatistics:
    """Sum the sufficient statistics of many batches of reports.

    Parameters
    ----------
    batches : iterable of report batches, or a Dask DataFrame / Array
        In-memory batches (arrays, DataFrames, CSR arrays) are reduced with
        joblib (``n_jobs``); a Dask collection is reduced on its workers, one
        task per partition, and only the statistics are gathered.
    mechanism : fitted mechanism, Channel or spec dict, default=None
        Required for plain reports and for Dask collections (partitions do not
        carry attributes); see :func:`statistics_of` (for a column of a
        ``DataFramePrivatizer``: ``priv.channels_[name]``).
    keep_reports : bool, "disk" or "workers", default=False
        See :func:`statistics_of`. ``"disk"`` (in-memory batches) keeps the
        per-report part in files under the system's temporary directory
        (:meth:`ReportStatistics.spill
        <sklearn_uldp.mechanisms.ReportStatistics.spill>`), so that memory
        holds about one batch whatever the number of batches. ``"workers"``
        (Dask collections only) keeps it on the workers, one compact store
        per partition (:class:`WorkerBitRows`): EM then evaluates each step
        where the reports are, and the client holds O(k) numbers whatever
        the number of reports. Needs a running ``dask.distributed`` client.
    n_jobs : int, default=None
        Threads for in-memory batches (``None``: one). Their statistics are
        added as they arrive, in the batches' order. One thread is the
        fastest up to millions of reports (the sums are bound by memory
        bandwidth; see the performance page); more threads only help when
        each batch is expensive to decode (sparse bit-vector reports).

    Returns
    -------
    statistics : ReportStatistics
        Feed it to ``estimator.fit_statistics``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp import UtilityOptimizedRR, EmpiricalEstimator
    >>> from sklearn_uldp.parallel import reduce_statistics
    >>> mech = UtilityOptimizedRR(1.0, sensitive=[0], categories=[0, 1, 2],
    ...                           random_state=0).fit()
    >>> X = np.random.default_rng(0).integers(0, 3, size=(3000, 1))
    >>> batches = [mech.transform(chunk) for chunk in np.array_split(X, 3)]
    >>> stats = reduce_statistics(batches)
    >>> EmpiricalEstimator().fit_statistics(stats).n_reports_
    3000
    """
    if not isinstance(keep_reports, bool | np.bool_ | str) or keep_reports not in (
        False,
        True,
        "disk",
        "workers",
    ):
        raise ValueError(
            f"keep_reports must be False, True, 'disk' or 'workers'; got {keep_reports!r}."
        )
    if _is_dask_collection(batches):
        if keep_reports == "workers":
            return _reduce_dask_on_workers(batches, mechanism)
        if keep_reports == "disk":
            raise ValueError(
                "keep_reports='disk' spills in-memory batches on this machine; "
                "for a Dask collection use keep_reports='workers', which keeps "
                "the reports on the workers."
            )
        return _reduce_dask(batches, mechanism, keep_reports)
    if keep_reports == "workers":
        raise ValueError(
            "keep_reports='workers' keeps reports on Dask workers: pass a Dask "
            "collection (with a running dask.distributed Client), or use "
            "keep_reports=True or 'disk' for in-memory batches."
        )
    from joblib import Parallel, delayed

    # Added as they arrive: memory holds the running sum and the batches in
    # flight, not the statistics of every batch at once. Threads, not
    # processes: the statistics are a pass over memory (milliseconds per 10^5
    # reports), so sending a batch to another process costs more than
    # reducing it there, and starting the processes costs seconds.
    parts = Parallel(n_jobs=n_jobs, prefer="threads", return_as="generator")(
        delayed(statistics_of)(batch, mechanism, keep_reports=bool(keep_reports))
        for batch in batches
    )
    total = None
    for part in parts:
        if total is None:
            total = part.spill() if keep_reports == "disk" else part
        else:
            total = total + part
    if total is None:
        raise ValueError("No batches of reports were given.")
    return total


def _is_dask_collection(obj):
    return hasattr(obj, "__dask_graph__") and hasattr(obj, "to_delayed")


def _dask_channel(mechanism):
    if mechanism is None:
        raise ValueError(
            "Dask partitions do not carry the mechanism: pass mechanism= (the "
            "fitted mechanism or its spec; for a DataFramePrivatizer's column, "
            "priv.channels_[name])."
        )
    return spec_of(mechanism)


def spec_of(mechanism):
    """The channel (or open-domain protocol) whose reports ``mechanism`` stands for.

    A fitted mechanism of any family (its ``channel_``: a channel, or the
    heavy hitters' protocol), a channel or protocol, or a spec dict. A
    mechanism fitted inside a ``DataFramePrivatizer`` under a sampling
    strategy is refused: its column's reports mix its own with missing or
    fake ones, whose channel is the privatizer's ``channels_[name]``.
    """
    check_not_sampled_column(mechanism)
    from ..mechanisms._spec import PublicSpec

    if isinstance(mechanism, PublicSpec):  # a channel or an open-domain protocol
        return mechanism
    if isinstance(mechanism, dict) and "protocol" in mechanism:
        return PublicSpec.from_dict(mechanism)
    spec = getattr(mechanism, "channel_", None)  # a fitted mechanism of any family
    if isinstance(spec, PublicSpec):
        return spec
    try:
        return as_channel(mechanism)
    except TypeError:
        raise TypeError(
            "mechanism must be a fitted mechanism (categorical, numeric or "
            "open-domain), a Channel, a heavy-hitter protocol or a spec dict; got "
            f"{type(mechanism).__name__}"
            + (" (not fitted: fit it first)." if hasattr(mechanism, "fit") else ".")
        ) from None


def _carried_spec(reports):
    """The channel (or protocol) ``reports`` carry, or None."""
    from ..heavy_hitters._mechanism import get_protocol
    from ..mechanisms._reports import get_channel

    channel = get_channel(reports)
    return channel if channel is not None else get_protocol(reports)


def _reduce_dask(collection, mechanism, keep_reports):
    channel = _dask_channel(mechanism)
    _check_report_columns(collection, mechanism, channel)
    return tree_sum_of_partitions(
        collection, partial(statistics_of, keep_reports=keep_reports), add, channel
    )


def _check_report_columns(collection, mechanism, channel):
    """Refuse, before any compute, a Dask frame that is not one mechanism's reports."""
    columns = getattr(collection, "columns", None)
    if columns is None:
        return
    if channel.report_width > 1:  # bit vectors, sketches, Bloom filters, ...
        names = (
            mechanism.get_feature_names_out()
            if hasattr(mechanism, "get_feature_names_out")
            else None
        )
        if names is None or len(names) == len(columns):
            return
        if getattr(channel, "packed_reports", False) and all(
            "binary" in str(getattr(dtype, "pyarrow_dtype", "")) for dtype in collection.dtypes
        ):
            return  # packed reports: one binary column per input column
        expected = len(names)
    else:
        if len(columns) == 1:
            return
        expected = 1
    raise ValueError(
        f"The Dask DataFrame has {len(columns)} columns ({list(columns)[:10]}), but "
        f"the reports of this mechanism have {expected}. Select its report "
        "columns, e.g. reports[priv.report_columns('age')] with "
        "mechanism=priv.mechanisms_['age'] for a DataFramePrivatizer's reports."
    )


def _additive_part(stats):
    return stats.n, stats.counts, stats.extra is None


def _extra_part(stats):
    return stats.extra


def _reduce_dask_on_workers(collection, mechanism):
    import dask

    try:
        from distributed import get_client

        client = get_client()
    except (ImportError, ValueError) as exc:
        raise ValueError(
            "keep_reports='workers' needs a running dask.distributed Client "
            "(e.g. `from dask.distributed import Client; client = Client()`)."
        ) from exc
    from ..mechanisms._channel import ReportStatistics
    from ._distributed import WorkerBitRows

    channel = _dask_channel(mechanism)
    _check_report_columns(collection, mechanism, channel)
    parts = client.compute(
        [
            dask.delayed(statistics_of)(part, channel, keep_reports=True)
            for part in np.ravel(collection.to_delayed())
        ]
    )
    additive = client.gather(client.map(_additive_part, parts, pure=False))
    n = sum(part_n for part_n, _, _ in additive)
    counts = sum(part_counts for _, part_counts, _ in additive)
    if all(no_extra for _, _, no_extra in additive):  # counts suffice
        return ReportStatistics(channel, int(n), counts)
    # Only the stores stay on the workers; the rest of `parts` is released.
    extra = WorkerBitRows(client.map(_extra_part, parts, pure=False), client)
    return ReportStatistics(channel, int(n), counts, extra)


def _privatize_partition(frame, template, seed, user_secrets=None):
    """Privatize one partition with its own random stream.

    ``seed`` is None or "secure" (fresh OS entropy drawn here, in the worker,
    at every call) or the partition's SeedSequence (reproducible: it is only
    read, so a re-computed partition draws the same stream again).
    ``user_secrets``: the secrets of the partition's rows (memoized
    mechanisms), read here and kept nowhere.
    """
    params = {} if user_secrets is None else {"user_secrets": user_secrets}
    if _is_composite(template):
        from ._privatizer import privatize_table_partition

        return privatize_table_partition(template, frame, seed, user_secrets)
    mech = copy.copy(template)
    mech.random_state = seed
    if seed is not None and not isinstance(seed, str):
        mech._transform_calls = [0]  # the partition's own count, from 0
    names = getattr(template, "feature_names_in_", None)
    if (
        names is not None
        and not hasattr(frame, "columns")
        and np.ndim(frame) == 2
        and np.shape(frame)[1] == len(names)
    ):
        # Array partitions of the column the mechanism was fitted on: named
        # here, so scikit-learn does not warn once per partition that "X does
        # not have valid feature names".
        import pandas as pd

        frame = pd.DataFrame(np.asarray(frame), columns=names)
    return mech.transform(frame, **params)


def _is_composite(obj):
    """A DataFramePrivatizer-like object (several mechanisms, a whole table):
    see ``_privatizer`` for what it offers."""
    return hasattr(obj, "_transform_table") and hasattr(type(obj), "mechanisms_")


def privatize_partitions(
    partitions: Any,
    mechanism: Any,
    *,
    random_state: RandomStateLike = None,
    user_secrets: Any = None,
) -> Any:
    """Privatize partitions independently, one random stream per partition.

    Parameters
    ----------
    partitions : list of DataFrames/arrays, or a Dask DataFrame
        Each partition holds the input column of ``mechanism`` (a Dask
        DataFrame may hold more columns: the mechanism's is selected by
        name), or, for a fitted
        :class:`~sklearn_uldp.compose.DataFramePrivatizer`, the whole table.
    mechanism : fitted mechanism or DataFramePrivatizer
        Its public state (domains, channels) is shared; its random state is
        not (``random_state`` below replaces it).
    random_state : None, "secure", int or SeedSequence, default=None
        ``None`` draws fresh OS entropy inside every partition's task (with
        the cryptographically secure generator if ``mechanism`` uses
        ``random_state="secure"``), and ``"secure"`` a fresh key for the
        secure generator: no seed is ever put in the task graph, so whoever
        holds the graph cannot replay the noise. An int or SeedSequence
        (simulations only) gives partition ``i`` child ``i`` of
        ``SeedSequence(random_state)``, reproducibly (a
        ``DataFramePrivatizer`` then splits it between its mechanisms); a
        Generator is consumed for that root. For a ``DataFramePrivatizer``,
        ``None`` uses its own ``random_state``.
    user_secrets : list or Dask Series, default=None
        For memoized (longitudinal) mechanisms: the users' secrets, aligned
        with the partitions, as partition data (never in the mechanism sent
        to the workers, nor in the reports): a list with one sequence of
        secrets per partition, or, for a Dask DataFrame, a Dask Series with
        the same partitions (e.g. a column of the same frame). See
        ``DataFramePrivatizer.transform``.

    Returns
    -------
    reports : list of report batches, or a Dask DataFrame of reports
        Batches carry the channel; a Dask result holds plain values (pass the
        mechanism to :func:`reduce_statistics`).

    Raises
    ------
    ValueError
        Before anything is computed, when a Dask DataFrame lacks the
        columns the mechanism reads.

    Notes
    -----
    Without a seed, each computation of a lazy Dask result privatizes the
    partitions again with new noise: computing it twice sends every user's
    value twice (twice the budget, and the two reports can be combined).
    Compute or ``persist`` it once and reuse the result.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp import RandomizedResponse
    >>> from sklearn_uldp.parallel import privatize_partitions
    >>> mech = RandomizedResponse(1.0, categories=[0, 1], random_state=0).fit()
    >>> parts = [np.zeros((4, 1), dtype=int), np.zeros((4, 1), dtype=int)]
    >>> [r.shape for r in privatize_partitions(parts, mech, random_state=0)]
    [(4, 1), (4, 1)]
    """
    composite = _is_composite(mechanism)
    if composite:
        from ._privatizer import partition_seed, partition_template

        check_is_fitted(mechanism, "transformers_")
        template = partition_template(mechanism)
        if random_state is None:
            random_state = partition_seed(mechanism)
    else:
        _fitted_spec(mechanism)
        template = _partition_template(mechanism)
    dask = _is_dask_collection(partitions)
    if dask:
        partitions = _dask_input(partitions, mechanism, composite)
    else:
        partitions = list(partitions)
    n = partitions.npartitions if dask else len(partitions)
    if is_fresh(random_state):
        if random_state is None and is_secure(getattr(mechanism, "random_state", None)):
            random_state = "secure"
        if is_secure(random_state):
            check_secure_available()
        seeds = [random_state] * n
    else:
        seeds = check_seed_sequence(random_state).spawn(n)
    secrets = _aligned_secrets(user_secrets, partitions, n, dask)
    if dask:
        return _map_dask(partitions, template, seeds, composite, secrets)
    if user_secrets is not None:
        from ._secrets import check_distinct_across

        check_distinct_across(secrets)
    return [
        _privatize_partition(part, template, seed, keys)
        for part, seed, keys in zip(partitions, seeds, secrets, strict=True)
    ]


def _aligned_secrets(user_secrets, partitions, n, dask):
    """The secrets of each partition (a list, or a Dask collection), checked."""
    if user_secrets is None:
        return None if dask else [None] * n
    if dask:
        if not (_is_dask_collection(user_secrets) and hasattr(user_secrets, "index")) or (
            user_secrets.ndim != 1
        ):
            raise TypeError(
                "For a Dask DataFrame, user_secrets is a Dask Series of secrets with "
                "the same partitions, e.g. ddf['secret'] (bytes per row), got "
                f"{type(user_secrets).__name__}."
            )
        if user_secrets.npartitions != partitions.npartitions:
            raise ValueError(
                f"user_secrets has {user_secrets.npartitions} partitions and the data "
                f"{partitions.npartitions}: the secrets must be aligned with the rows "
                "(keep them in a column of the same Dask DataFrame)."
            )
        return user_secrets
    if not isinstance(user_secrets, (list, tuple)) or len(user_secrets) != n:
        raise ValueError(
            f"user_secrets must hold one sequence of secrets per partition ({n}), "
            f"aligned with its rows; got {type(user_secrets).__name__}"
            + (f" of length {len(user_secrets)}." if hasattr(user_secrets, "__len__") else ".")
        )
    return list(user_secrets)


def _dask_input(ddf, mechanism, composite):
    """The columns of ``ddf`` the mechanism reads, checked before any compute."""
    if getattr(ddf, "ndim", 2) == 1 and hasattr(ddf, "to_frame"):
        ddf = ddf.to_frame()  # a Dask Series: its one-column frame
    if composite:
        from ._privatizer import input_columns

        return ddf[input_columns(mechanism, ddf)]
    if not hasattr(ddf, "columns"):
        return ddf
    names = getattr(mechanism, "feature_names_in_", None)
    columns = list(ddf.columns)
    if names is not None:
        absent = [c for c in names if c not in columns]
        if not absent:
            return ddf[list(names)]
        raise ValueError(
            f"{type(mechanism).__name__} was fitted on the column "
            f"{list(names)}, which this Dask DataFrame lacks (its columns: "
            f"{columns[:20]}). Select the column to privatize, or use "
            "DataFramePrivatizer to privatize several columns in one call."
        )
    expected = getattr(mechanism, "n_features_in_", 1)
    if len(columns) != expected:
        raise ValueError(
            f"{type(mechanism).__name__} was fitted on {expected} unnamed "
            f"column(s), but this Dask DataFrame has {len(columns)}: "
            f"{columns[:20]}. Select the column(s) (ddf[['age']]), or "
            "privatize the whole table in one call with "
            "DataFramePrivatizer(...).fit(ddf).transform(ddf)."
        )
    return ddf


def _map_dask(ddf, template, seeds, composite=False, secrets=None):
    import pandas as pd

    from ._secrets import repeated_secrets, shared_secrets_error

    if composite:
        from ._privatizer import report_meta

        meta = report_meta(template, ddf)
        names = list(meta.columns)
    else:
        names = template.get_feature_names_out()
        meta = _dask_meta(template, names)
    dtypes = meta.dtypes

    def run(frame, keys=None, repeated=0, partition_info=None):
        number = partition_info["number"] if partition_info else 0
        if repeated:  # counted over every partition before any report is made
            raise shared_secrets_error(repeated)
        if keys is not None and not keys.index.equals(frame.index):
            raise ValueError(
                f"Partition {number}: the secrets' index differs from the rows' "
                "index, so they are not aligned; keep the secrets in a column of "
                "the same Dask DataFrame (user_secrets=ddf['secret'])."
            )
        out = _privatize_partition(frame, template, seeds[number], keys)
        if isinstance(out, PackedReports):
            out = out.to_frame(names, index=frame.index)
            out.attrs = {}
            return out
        if isinstance(out, pd.DataFrame):
            out = out.copy()
            out.attrs = {}
        else:
            out = pd.DataFrame(np.asarray(out), columns=names, index=frame.index)
        out.columns = names
        return out.astype(dtypes)

    if secrets is not None:  # partition data: never part of `run` or the template
        # Rows of different partitions with one secret: refused as in memory.
        return ddf.map_partitions(run, secrets, repeated_secrets(secrets), meta=meta)
    return ddf.map_partitions(run, meta=meta)
