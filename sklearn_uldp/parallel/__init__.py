"""Scale-out: privatize and estimate over partitions, chunks and machines.

Estimation only needs sufficient statistics that add up
(:class:`~sklearn_uldp.mechanisms.ReportStatistics`), so reports can be
reduced where they live (chunks of a file, partitions of a Dask DataFrame,
workers of a cluster) and only the small statistics travel. Privatization of
partitions draws one independent random stream per partition
(``SeedSequence.spawn``).
"""

from ._distributed import WorkerBitRows
from ._partitions import (
    privatize_partitions,
    reduce_statistics,
    statistics_of,
)

__all__ = [
    "WorkerBitRows",
    "privatize_partitions",
    "reduce_statistics",
    "statistics_of",
]
