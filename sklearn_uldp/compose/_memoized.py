"""Memoized (longitudinal) columns of ``DataFramePrivatizer``: the users' keys.

A memoized mechanism derives each user's permanent answers from a secret per
user. The privatizer takes the secrets in ``transform(X, user_secrets=...)``
and gives each memoized column its own keys, derived from the secret and the
column's name; under ``strategy="sample"`` each user's sampled column is
derived from the secret too (:meth:`MemoKeys.sampled`).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd
from sklearn import config_context

from ..mechanisms._memo import MEMO_VERSION, SecretDraws, is_memoized
from ..utils._random import is_fresh
from ._table_input import MECHANISMS

__all__ = [
    "MemoKeys",
    "check_memo_secrets",
    "memo_keys",
    "memoized_names",
    "memoizes",
    "transform_memoized",
]


#: Whether a mechanism memoizes its reports (the memoization protocol).
memoizes = is_memoized


class MemoKeys:
    """One call's user keys: each memoized column's, derived on demand.

    Lives for one ``transform`` call and is never stored nor pickled (the
    keys inside refuse it).
    """

    __slots__ = ("keys", "names", "_columns")

    #: Domain-separation label of a column's keys (the column's name follows).
    COLUMN_LABEL = "sklearn_uldp.DataFramePrivatizer.v1|column|"
    #: Context of a column's score in the memoized sampling (its name follows),
    #: versioned with every memo context (MEMO_VERSION).
    SAMPLED_LABEL = f"sklearn_uldp.DataFramePrivatizer.{MEMO_VERSION}|sampled attribute score|"

    def __init__(self, keys, names):
        self.keys, self.names, self._columns = keys, list(names), {}

    def column(self, name):
        """The keys of a memoized column: independent of every other column's."""
        from ..utils._secrets import derive_user_keys

        if name not in self._columns:
            self._columns[name] = derive_user_keys(self.keys, self.COLUMN_LABEL + name)
        return self._columns[name]

    def sampled(self, names):
        """Each user's sampled column among ``names`` (uniform, memoized).

        Rendezvous selection: every column gets a keyed score per user, from
        its name alone, and the highest wins. Reordering the columns moves no
        user, and adding a column moves only the users it wins (about one in
        d + 1), each to the new column: an index drawn among the ordered
        names would move about half the users between old columns, and each
        such user spends a second column's permanent budget.
        """
        draws = SecretDraws(self.keys, lambda name: self.SAMPLED_LABEL + json.dumps(str(name)))
        scores = [draws.uniforms(name, 0, 1)[:, 0] for name in names]
        return np.argmax(np.column_stack(scores), axis=1)

    def __getitem__(self, rows):
        out = MemoKeys(self.keys[rows], self.names)
        out._columns = {name: k[rows] for name, k in self._columns.items()}
        return out


def memoized_names(priv):
    """The names of the memoized columns."""
    return [name for name, mech in priv.mechanisms_.items() if memoizes(mech)]


def check_memo_secrets(priv):
    """A clear error when memoized mechanisms would run without secrets."""
    if hasattr(priv, "transformers_"):
        mechs = list(priv.mechanisms_.items())
    else:
        mechs = [(n, m) for n, m, _ in priv.transformers if isinstance(m, MECHANISMS)]
    seeded = priv.random_state is not None and not is_fresh(priv.random_state)
    names = [n for n, m in mechs if memoizes(m) and not seeded and is_fresh(m.random_state)]
    if names:
        raise ValueError(
            f"Columns {names} use memoized (longitudinal) mechanisms, which derive "
            "each user's permanent answers from a secret per user, and no "
            "user_secrets were given. Pass transform(X, user_secrets=secrets): one "
            "secret per row, made once per user with "
            "sklearn_uldp.utils.generate_user_secrets(n_users) and kept by that "
            "user for every round (in a Pipeline: "
            "privatizer.set_transform_request(user_secrets=True) with "
            "sklearn.set_config(enable_metadata_routing=True)). For a simulation, "
            "pass an integer random_state."
        )


def memo_keys(priv, user_secrets, n_rows):
    """The users' keys, per memoized column (checked against the rows)."""
    from ..utils._secrets import check_user_secrets

    names = memoized_names(priv)
    if not names:
        raise ValueError(
            "user_secrets were given, but no mechanism of this privatizer "
            f"memoizes its reports (mechanisms: {list(priv.mechanisms_)}). Drop "
            "user_secrets, or use a longitudinal mechanism (LongitudinalGRR, "
            "LongitudinalUE, LongitudinalLocalHashing, DBitFlipPM, "
            "UtilityOptimizedLongitudinalRR/RAPPOR) for the columns collected "
            "in several rounds."
        )
    return MemoKeys(check_user_secrets(user_secrets, n_samples=n_rows), names)


def transform_memoized(priv, X, keys):
    """Every mechanism on its column, the memoized ones with their column's
    keys (ColumnTransformer's transform has no per-column metadata)."""
    pandas = priv._output_config() == "pandas" or (
        priv._output_config() is None and isinstance(X, pd.DataFrame)
    )
    positions = priv._fitted_positions(X)
    parts = []
    with config_context(transform_output="pandas" if pandas else "default"):
        for name, trans, _ in priv.transformers_:
            if isinstance(trans, MECHANISMS):
                pos = positions[name]
                column = X.iloc[:, pos] if isinstance(X, pd.DataFrame) else X[:, pos]
                if name in keys.names:
                    memoized: Any = trans  # a longitudinal mechanism
                    parts.append(memoized.transform(column, user_secrets=keys.column(name)))
                else:
                    parts.append(trans.transform(column))
            elif name == "remainder" and priv.remainder == "passthrough":
                rest = priv._passthrough(X)
                if rest is not None:
                    parts.append(rest)
    if not pandas:
        arrays = [np.asarray(p.toarray() if hasattr(p, "toarray") else p) for p in parts]
        if len({a.dtype for a in arrays}) > 1:
            arrays = [a.astype(object) for a in arrays]
        return np.hstack(arrays)
    columns = []
    for part in parts:
        if isinstance(part, pd.DataFrame):
            columns += [part.iloc[:, j].to_numpy() for j in range(part.shape[1])]
        else:
            arr = np.asarray(part.toarray() if hasattr(part, "toarray") else part)
            columns += [arr[:, j] for j in range(arr.shape[1])]
    names = priv.get_feature_names_out()
    index = X.index if isinstance(X, pd.DataFrame) else None
    return pd.DataFrame(dict(enumerate(columns)), index=index).set_axis(names, axis=1)
