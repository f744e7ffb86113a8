"""Reports and random streams in tests of the channels' samplers and kernels.

Import by name from any folder under tests/ (``from _channels import ...``).
"""

import numpy as np

from sklearn_uldp.mechanisms._count_mean_sketch import CountMeanSketchChannel
from sklearn_uldp.mechanisms._subset_selection import SubsetSelectionChannel


def random_bits(n, k, density, seed=0):
    """``n`` reports of ``k`` bits, each set with probability ``density`` (uint8)."""
    rng = np.random.default_rng(seed)
    return (rng.random((n, k)) < density).astype(np.uint8)


def output_index(channel, reports):
    """Column of ``channel.matrix()`` of each report.

    Subset selection: the report's bit vector among ``output_labels()``;
    count-mean sketch: ``j * 2**m + bits``, the matrix's output order;
    categorical reports: the report's code.
    """
    if isinstance(channel, SubsetSelectionChannel):
        labels = channel.output_labels().astype(np.int64)
        weights = 1 << np.arange(labels.shape[1])
        lookup = {int(v): i for i, v in enumerate(labels @ weights)}
        keys = np.asarray(reports).astype(np.int64) @ weights
        return np.array([lookup[int(v)] for v in np.unique(keys)])[
            np.searchsorted(np.unique(keys), keys)
        ]
    if isinstance(channel, CountMeanSketchChannel):
        m = channel.n_buckets
        R = np.asarray(reports).astype(np.int64)
        return R[:, 0] * 2**m + R[:, 1:] @ (1 << np.arange(m))
    return np.asarray(reports).astype(np.int64).ravel()


class CountingGenerator:
    """A Generator that counts the random bits the sampler asks for."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.bits = 0
        outer = self

        class _Bits:
            def random_raw(self, size):
                outer.bits += 64 * int(size)
                return outer.rng.bit_generator.random_raw(size)

        self.bit_generator = _Bits()

    def random(self, size=None, **kw):
        self.bits += 64 * int(np.prod(size if size is not None else 1))
        return self.rng.random(size, **kw)

    def integers(self, *args, size=None, **kw):
        self.bits += 64 * int(np.prod(size if size is not None else 1))
        return self.rng.integers(*args, size=size, **kw)
