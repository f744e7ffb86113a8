"""A whole table's privatizer over Dask partitions (``DataFramePrivatizer``).

:class:`~sklearn_uldp.compose.DataFramePrivatizer` calls these functions for
Dask input (``compose`` imports ``parallel``, never the reverse: the two sit
in one layer, and the import runs one way). They read the privatizer through
what it offers every caller, duck-typed: ``transformers``/``transformers_``,
``mechanisms_``, ``get_feature_names_out``, ``remainder``,
``sampled_column``, ``feature_names_in_`` and its ``_transformer_to_input_indices``
(as in ``ColumnTransformer``), and its table-level steps ``_check_params``,
``_mechanism_columns``, ``_domain``, ``_fit_transform``,
``_fitted_strategy_name`` and ``_transform_table``.
"""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd

from ..estimators._compact import compact_layout
from ..estimators._table import missing_kind
from ..mechanisms._base import BaseMechanism
from ..numeric._base import BaseNumericMechanism
from ..utils._random import check_seed_sequence, is_fresh, is_secure
from ._templates import _dask_meta, _partition_template

__all__ = [
    "fit_from_schema",
    "input_columns",
    "partition_seed",
    "partition_template",
    "privatize_table_partition",
    "report_meta",
]

#: What may privatize a column: a categorical or a numeric mechanism.
_MECHANISMS = (BaseMechanism, BaseNumericMechanism)


def fit_from_schema(priv, ddf):
    """Fit ``priv`` on a Dask DataFrame without reading it (explicit domains)."""
    priv._check_params()
    transformers = list(priv.transformers)
    meta = ddf._meta_nonempty
    positions = priv._mechanism_columns(meta, transformers)
    domains = {}
    for name, mech, _ in transformers:
        if isinstance(mech, str):
            continue
        if not mech._categorical_input:  # a numeric column: its public range
            if isinstance(mech.bounds, str):
                raise ValueError(
                    f"Mechanism {name!r} has bounds='auto', which would read the "
                    "Dask DataFrame to learn the range. Pass the public range as "
                    "bounds=(low, high), or fit on a pandas sample."
                )
            domains[name] = [float(b) for b in np.ravel(mech.bounds)][:2]
            continue
        if isinstance(mech.categories, str):
            domains[name] = _declared_domain(priv, ddf, meta, name, mech, positions[name])
        else:
            domains[name] = list(np.asarray(mech.categories, dtype=object))
    # A small stand-in table with the schema's dtypes, whose privatized
    # columns hold their domain's values: fitting it fixes the channels,
    # names and output slices, and never touches the data.
    n = max([2] + [len(d) for d in domains.values()])
    sample = meta.iloc[np.arange(n) % len(meta)].reset_index(drop=True)
    for name, domain in domains.items():
        for j in positions[name]:
            values = np.resize(np.asarray(domain, dtype=object), n)
            dtype = sample.dtypes.iloc[j]
            if isinstance(dtype, pd.CategoricalDtype) and set(domain) <= set(dtype.categories):
                values = pd.Categorical(values, dtype=dtype)
            elif not isinstance(dtype, pd.CategoricalDtype):
                try:
                    values = pd.Series(values).astype(sample.dtypes.iloc[j])
                except (TypeError, ValueError):
                    pass  # e.g. a text label among integers: object values
            sample.isetitem(
                j, np.asarray(values) if not isinstance(values, pd.Categorical) else values
            )
    priv._fit_transform(sample, keep=False)
    return priv


def _declared_domain(priv, ddf, meta, name, mech, cols):
    """The domain of a ``categories="auto"`` column from its declared dtype."""
    for j in cols:
        col = ddf.columns[j]
        if isinstance(ddf.dtypes.iloc[j], pd.CategoricalDtype) and not ddf[col].cat.known:
            raise ValueError(
                f"Column {col!r} of the Dask DataFrame has a category "
                "dtype whose categories are unknown (e.g. read from "
                f"Parquet), and mechanism {name!r} has "
                "categories='auto'. Pass categories=[...], or declare "
                f"them: ddf[{col!r}] = ddf[{col!r}].cat.set_categories"
                "([...])."
            )
    domain = priv._domain(mech, meta, cols)
    if domain is None:
        col = meta.columns[cols[0]]
        raise ValueError(
            f"Mechanism {name!r} has categories='auto', which would read "
            f"the Dask DataFrame (column {col!r}) to learn the domain. "
            "Pass the public domain as categories=[...] (or declare the "
            "column as a pandas 'category' dtype), or fit on a pandas "
            "sample: priv.fit(ddf.head(100_000)) and then "
            "priv.transform(ddf)."
        )
    return list(domain)


def partition_template(priv):
    """A copy of ``priv`` holding no random state, to send to workers (or a task graph)."""
    template = copy.copy(priv)
    template.random_state = None
    template.transformers_ = [
        (name, _partition_template(t) if isinstance(t, _MECHANISMS) else t, cols)
        for name, t, cols in priv.transformers_
    ]
    return template


def privatize_table_partition(template, frame, seed, user_secrets=None):
    """Privatize one partition (``template`` from :func:`partition_template`)
    with ``seed`` (and the secrets of its rows)."""
    priv = copy.copy(template)
    mechs = [(i, t) for i, (_, t, _) in enumerate(priv.transformers_) if isinstance(t, _MECHANISMS)]
    if is_fresh(seed):
        # fresh entropy in this task; a mechanism declared "secure" keeps
        # the secure generator whatever its neighbours use
        seeds = [
            "secure" if is_secure(seed) or is_secure(t.random_state) else None for _, t in mechs
        ]
    else:
        # Children built, not spawned: spawn() counts on the shared seed
        # object, and a re-computed partition must draw the same streams.
        root = check_seed_sequence(seed)
        seeds = [
            np.random.SeedSequence(
                root.entropy, spawn_key=(*root.spawn_key, i), pool_size=root.pool_size
            )
            for i in range(len(mechs))
        ]
    sampling_seed = None
    if priv._fitted_strategy_name() != "split":
        # The sampled indices: one more stream of the partition's seed.
        if is_fresh(seed):
            sampling_seed = "secure" if is_secure(seed) else None
        else:
            root = check_seed_sequence(seed)
            sampling_seed = np.random.SeedSequence(
                root.entropy, spawn_key=(*root.spawn_key, len(mechs)), pool_size=root.pool_size
            )
    fitted = list(priv.transformers_)
    for (i, mech), child in zip(mechs, seeds, strict=True):
        name, _, cols = fitted[i]
        part = copy.copy(mech)
        part.random_state = child
        if not is_fresh(child):
            part._transform_calls = [0]  # the partition's own count, from 0
        fitted[i] = (name, part, cols)
    priv.transformers_ = fitted
    out = priv._transform_table(frame, user_secrets, partition_sampling_seed=sampling_seed)
    if isinstance(out, pd.DataFrame):
        out.attrs = {}
    return out


def partition_seed(priv):
    """The root of the partitions' seeds (None/"secure": fresh per partition)."""
    rs = priv.random_state
    if rs is None:
        secure = [
            isinstance(m, _MECHANISMS) and is_secure(m.random_state)
            for m in priv.mechanisms_.values()
        ]
        return "secure" if secure and all(secure) else None
    return rs


def report_meta(priv, ddf):
    """The empty frame of the reports' schema (names and dtypes)."""
    pieces = []
    sampled = priv._fitted_strategy_name() == "sample"
    if sampled and priv._compact():
        # the compact table: the report block, the passthrough columns, the
        # sampled column (DataFramePrivatizer._compact_output)
        _, dtype = compact_layout(priv._strategy_channels)
        block = priv._block_names()
        pieces.append(pd.DataFrame({c: pd.Series(dtype=dtype) for c in block}))
        if priv.remainder == "passthrough" and priv._remainder_names():
            cols = priv._transformer_to_input_indices["remainder"]
            pieces.append(ddf._meta.iloc[:, cols])
        dtype = pd.CategoricalDtype(list(priv.mechanisms_))
        pieces.append(pd.DataFrame({priv.sampled_column: pd.Series(dtype=dtype)}))
        meta = pd.concat(pieces, axis=1)
        meta.columns = priv.get_feature_names_out()
        return meta
    for name, trans, _ in priv.transformers_:
        if isinstance(trans, _MECHANISMS) and sampled:
            kind = missing_kind(trans.channel_)
            cols = trans.get_feature_names_out()
            pieces.append(pd.DataFrame({c: pd.Series(dtype=kind) for c in cols}))
        elif isinstance(trans, _MECHANISMS):
            pieces.append(_dask_meta(trans))
        elif name == "remainder" and trans == "passthrough":
            cols = priv._transformer_to_input_indices["remainder"]
            pieces.append(ddf._meta.iloc[:, cols])
    if sampled:
        dtype = pd.CategoricalDtype(list(priv.mechanisms_))
        pieces.append(pd.DataFrame({priv.sampled_column: pd.Series(dtype=dtype)}))
    meta = pd.concat(pieces, axis=1) if pieces else pd.DataFrame()
    meta.columns = priv.get_feature_names_out()
    return meta


def input_columns(priv, ddf):
    """The columns of ``ddf`` the privatizer reads, checked before any compute."""
    names = getattr(priv, "feature_names_in_", None)
    if names is None:
        raise ValueError(
            "This DataFramePrivatizer was fitted on an array: fit it on a "
            "DataFrame (or the Dask DataFrame) to privatize a Dask DataFrame."
        )
    used = sorted(
        {
            names[j]
            for name, cols in priv._transformer_to_input_indices.items()
            if name in priv.mechanisms_ or (name == "remainder" and priv.remainder == "passthrough")
            for j in cols
        },
        key=list(names).index,
    )
    absent = [c for c in used if c not in ddf.columns]
    if absent:
        raise ValueError(
            f"The Dask DataFrame lacks the columns {absent}, which the "
            f"privatizer reads; its columns: {list(ddf.columns)[:20]}."
        )
    return list(names) if all(c in ddf.columns for c in names) else used
