"""What travels to the workers: a mechanism's template and its reports' meta.

Below both ``_partitions`` (one mechanism over partitions) and ``_privatizer``
(a whole table's privatizer over partitions, which ``_partitions`` calls for
composite input): both use these, so the imports between them point one way.
"""

from __future__ import annotations

import copy

import numpy as np
from sklearn.utils.validation import check_is_fitted

from ..mechanisms._reports import PackedReports
from ..utils._random import is_secure


def _partition_template(mechanism):
    """A shallow copy of ``mechanism`` without its random state.

    The copy shares the public fitted state (domain, channel) and is what
    travels to the workers (and into a Dask task graph): the mechanism's own
    ``random_state`` (a seed, a Generator) stays behind.
    """
    template = copy.copy(mechanism)
    # "secure" names a generator, not a seed: keeping it lets the worker draw
    # from the secure generator for this mechanism even when its neighbours
    # in a DataFramePrivatizer use plain fresh entropy.
    template.random_state = "secure" if is_secure(mechanism.random_state) else None
    template.__dict__.pop("_transform_calls", None)
    template.__dict__.pop("_seed_sequence", None)  # state of older versions
    return template


def _dask_meta(mechanism, names=None):
    import pandas as pd

    names = mechanism.get_feature_names_out() if names is None else names
    channel = _fitted_spec(mechanism)
    if getattr(mechanism, "packed_output", False):
        # Packed reports: one binary column per input column (their bytes).
        k = channel.n_categories
        meta = PackedReports(np.zeros((0, len(names) * -(-k // 8)), np.uint8), k).to_frame(names)
        meta.attrs = {}
        return meta
    # The dtypes the spec declares for one input column's report columns,
    # repeated for each input column (a mechanism fitted on several).
    dtypes = channel.report_dtypes("x")
    return pd.DataFrame({n: pd.Series(dtype=dtypes[j % len(dtypes)]) for j, n in enumerate(names)})


def _fitted_spec(mechanism):
    """The public spec (``channel_``) of a fitted mechanism of any family, or
    NotFittedError."""
    check_is_fitted(mechanism, "channel_")  # raises, naming the mechanism
    return mechanism.channel_
