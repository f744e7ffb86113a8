"""The input side of ``DataFramePrivatizer``: the table, its columns and domains.

Checks of the parameters and of the table (2-D, unique column names), the
columns each mechanism reads, the missing values of privatized columns, and
the domains a column's dtype declares (or a sampling strategy fixes from the
whole columns).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from ..exceptions import PrivacyLeakWarning
from ..mechanisms._base import PARAMETER_HINTS, BaseMechanism
from ..numeric._base import BaseNumericMechanism
from ..utils._validation import is_missing, validate_params_with_hints

__all__ = [
    "AUTO_DOMAIN",
    "MECHANISMS",
    "check_input",
    "check_params",
    "declared_domain",
    "fitted_domains",
    "fitted_positions",
    "mechanism_columns",
    "numeric_names",
    "prepared",
]

#: What may privatize a column: a categorical or a numeric mechanism.
MECHANISMS = (BaseMechanism, BaseNumericMechanism)

#: The start of the PrivacyLeakWarning of a domain learned from the data.
AUTO_DOMAIN = "categories='auto' learns the domain from the private data"


def numeric_names(transformers):
    """Names of the entries privatized by a numeric mechanism."""
    return {
        name for name, mech, _ in transformers if getattr(mech, "_categorical_input", True) is False
    }


def check_params(priv):
    """Validate the parameters and the ``(name, mechanism, columns)`` entries."""
    validate_params_with_hints(priv, PARAMETER_HINTS)
    if not isinstance(priv.remainder, (str, *MECHANISMS)):
        raise TypeError(
            "remainder must be 'drop', 'passthrough' or a mechanism, got "
            f"{type(priv.remainder).__name__}: another transformer would send "
            "the remaining columns without privacy."
        )
    transformers = priv.transformers
    if not transformers:
        raise ValueError(
            "mechanisms is empty: pass [(name, mechanism, columns), ...] or {column: mechanism}."
        )
    names = []
    for entry in transformers:
        if not (isinstance(entry, tuple | list) and len(entry) == 3):
            raise TypeError(
                "mechanisms must be a list of (name, mechanism, columns) tuples "
                f"or a dict {{column: mechanism}}; got the entry {entry!r}."
            )
        name, mech, columns = entry
        if not isinstance(name, str) or name in names:
            raise ValueError(
                f"Mechanism names must be distinct strings; got {name!r} "
                f"{'twice' if name in names else f'({type(name).__name__})'}. The dict "
                "form names each mechanism after its column (str(column)), so "
                "columns such as '0' and 0 collide: use the list form "
                "[(name, mechanism, [column]), ...] with distinct names, or "
                "rename the columns."
            )
        names.append(name)
        if columns is None or (isinstance(columns, list) and any(c is None for c in columns)):
            raise ValueError(
                f"Mechanism {name!r} selects the column None: pandas cannot "
                "select a column named None reliably; rename it, e.g. "
                "df.rename(columns={None: 'value'})."
            )
        if isinstance(mech, str) and mech == "drop":
            continue
        if not isinstance(mech, MECHANISMS):
            raise TypeError(
                f"The transformer of {name!r} must be a mechanism such as "
                f"UtilityOptimizedRR(...) (or 'drop'), got "
                f"{type(mech).__name__}. Raw columns are copied only through "
                "remainder='passthrough'."
            )


def check_input(X):
    """A 2-D dense table, or a clear error."""
    if hasattr(X, "toarray") or hasattr(X, "tocsr"):
        raise TypeError(
            "Sparse input is not supported: privatized columns hold category "
            "values. Pass a DataFrame or a dense array."
        )
    if not hasattr(X, "iloc") and not hasattr(X, "shape"):
        X = np.asarray(X, dtype=object)
    if np.ndim(X) != 2:
        raise ValueError(
            f"Expected 2D array, got {np.ndim(X)}D array instead. Reshape your "
            "data with X.reshape(-1, 1) for a single column, or pass a DataFrame."
        )
    if X.shape[1] == 0:
        raise ValueError(
            f"0 feature(s) (shape={X.shape}) while a minimum of 1 is "
            "required: pass the table's columns."
        )
    # Columns are selected by name: a repeated name would make one
    # mechanism read several columns (or scikit-learn < 1.7 fail late with
    # its own message), so say it here, for every scikit-learn version.
    columns = getattr(X, "columns", None)
    if columns is not None and not columns.is_unique:
        counts = pd.Index(columns).value_counts()
        repeated = ", ".join(f"{name!r} ({n} times)" for name, n in counts[counts > 1].items())
        raise ValueError(
            f"The table's column names must be unique; repeated: {repeated}. "
            "Columns are selected by name: rename them first, e.g. "
            "X.columns = [f'col{i}' for i in range(X.shape[1])]."
        )
    return X


def mechanism_columns(X, transformers):
    """Name -> positions of the columns each mechanism reads in ``X``."""
    from sklearn.utils._indexing import _get_column_indices

    out = {}
    for name, mech, columns in transformers:
        if isinstance(mech, str):
            continue
        if callable(columns):
            columns = columns(X)
        try:
            out[name] = _get_column_indices(X, columns)
        except (ValueError, KeyError, IndexError) as exc:
            have = (
                f"its columns: {list(X.columns)[:20]}"
                if hasattr(X, "columns")
                else f"an array with {np.shape(X)[1]} columns: select "
                "columns by position, e.g. [0], or pass a DataFrame"
            )
            raise ValueError(
                f"Mechanism {name!r} reads the columns {columns!r}, which are "
                f"not in X ({have}). {exc}"
            ) from None
        if isinstance(mech, MECHANISMS) and len(out[name]) != 1:
            # One distribution to estimate and one report block per name.
            raise ValueError(
                f"Mechanism {name!r} reads {len(out[name])} columns "
                f"({columns!r}); DataFramePrivatizer gives each mechanism one "
                "column. Give each column its own entry, e.g. "
                "[('a', mech, ['a']), ('b', mech, ['b'])], or privatize the "
                "columns' tuple as one joint value (JointEncoder)."
            )
    return out


def fitted_positions(priv, X):
    """Name -> positions of each mechanism's columns in ``X`` (at transform)."""
    out = {}
    names = getattr(priv, "feature_names_in_", None)
    for name, cols in priv._transformer_to_input_indices.items():
        if name not in priv.mechanisms_:
            continue
        if names is not None and isinstance(X, pd.DataFrame):
            wanted = [names[j] for j in cols]
            absent = [c for c in wanted if c not in X.columns]
            if absent:
                raise ValueError(
                    f"Columns {absent} of mechanism {name!r} are not in the "
                    f"DataFrame; its columns include {list(X.columns)[:20]}."
                )
            out[name] = [X.columns.get_loc(c) for c in wanted]
        else:
            out[name] = list(cols)
    return out


def prepared(X, positions, numeric=(), *, policy="error", missing_label="(missing)"):
    """``X`` with missing values of privatized columns handled (a copy if changed).

    Numeric mechanisms' columns are left to them (NaN and infinite values
    are errors there; missing="category" has no category to map them to).
    ``policy`` is the privatizer's ``missing``.
    """
    frame = isinstance(X, pd.DataFrame)
    changed = {}
    for name, cols in positions.items():
        if name in numeric:
            continue
        for j in cols:
            values = X.iloc[:, j] if frame else pd.Series(np.asarray(X)[:, j])
            label = X.columns[j] if frame else f"x{j}"
            if values.dtype.kind == "f" and np.isinf(values.to_numpy()).any():
                raise ValueError(
                    f"Column {label!r} holds infinite values (inf), which are "
                    "not categories: replace or drop them."
                )
            if values.dtype.kind in "biu":  # numpy integers and booleans: never missing
                continue
            missing = _missing_values(values)
            if not missing.any():
                continue
            if policy == "error":
                by = "" if name == str(label) else f" (read by mechanism {name!r})"
                raise ValueError(
                    f"Column {label!r} has {int(missing.sum())} missing "
                    f"values (NaN/None){by}. Impute or drop them, "
                    "or pass missing='category' to report them as the explicit "
                    f"category {missing_label!r}."
                )
            values = values.astype(object).where(~missing, missing_label)
            if isinstance(values.dtype, pd.CategoricalDtype):  # pragma: no cover
                values = values.astype(object)
            changed[j] = values.to_numpy()
    if not changed:
        return X
    if frame:
        X = X.copy(deep=False)  # the caller's frame is never modified
        for j, values in changed.items():
            X.isetitem(j, values)
        return X
    X = np.array(X, dtype=object)
    for j, values in changed.items():
        X[:, j] = values
    return X


def _missing_values(values):
    """Mask of the missing values of a column, without a Python object per value
    where pandas can say (at 10^7 rows the objects were most of transform)."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        return values.cat.codes.to_numpy() < 0  # categories are never missing
    if isinstance(values.dtype, pd.StringDtype):
        return values.isna().to_numpy()  # the Arrow or object storage's own mask
    return is_missing(values.to_numpy())


def declared_domain(mech, X, cols, *, policy="error", missing_label="(missing)"):
    """Categories of a pandas ``category`` column for ``categories='auto'``."""
    if not (
        isinstance(getattr(mech, "categories", None), str)
        and isinstance(X, pd.DataFrame)
        and len(cols) == 1
    ):
        return None
    dtype = X.dtypes.iloc[cols[0]]
    if not isinstance(dtype, pd.CategoricalDtype):
        return None
    cats = list(dtype.categories)
    if policy == "category" and missing_label not in cats:
        cats.append(missing_label)
    return cats


def fitted_domains(fitting, X, positions):
    """The mechanisms with their domains (or numeric ranges) fixed from, and
    checked on, whole columns."""
    out = []
    for name, mech, columns in fitting:
        if isinstance(mech, MECHANISMS):
            cols = positions[name]
            column = X.iloc[:, cols] if isinstance(X, pd.DataFrame) else np.asarray(X)[:, cols]
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message=AUTO_DOMAIN, category=PrivacyLeakWarning)
                # the mechanism's own: categories from the whole column, or a
                # numeric range for bounds="auto" (with its own warning)
                mech = mech._with_domain_of(column)
        out.append((name, mech, columns))
    return out


def is_dask_collection(obj):
    return hasattr(obj, "__dask_graph__") and hasattr(obj, "npartitions")


def dask_frame(X):
    """A Dask DataFrame of ``X`` (a Dask Series is its one-column frame)."""
    if getattr(X, "ndim", 2) == 1 and hasattr(X, "to_frame"):
        return X.to_frame()
    return X
