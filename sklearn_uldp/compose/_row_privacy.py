"""The channel of a whole row, and its privacy, for small tables.

A :class:`~sklearn_uldp.compose.DataFramePrivatizer` with d privatized
columns is one mechanism on rows: its input is the tuple of the d values,
its output the row of reports (plus the sampled attribute under
``strategy="sample"``). For small domains :func:`row_channel` builds that
channel's full matrix (a numeric column's values are the grid of inputs
its channel's matrix is given on), and :func:`check_row_privacy` verifies on it, by
enumeration, the guarantees the privatizer claims:

* **the row** (``epsilon_spent_``): for every output whose reports are all
  protected, ``P(y | x) <= e^eps P(y | x')`` for any two rows; an output with
  unprotected reports (non-sensitive values of utility-optimized columns)
  may only reveal those non-sensitive values: every row that can produce it
  holds them, and among those rows the same bound holds;
* **each attribute i** (``attribute_epsilons_``): fixing the other
  attributes, the channel from attribute i's value to the row's output is
  (X_S^i, Y_P^i, eps_i)-ULDP (:func:`~sklearn_uldp.privacy.check_uldp`),
  where Y_P^i is every output whose report of attribute i is protected.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

from ..privacy._checks import PrivacyCheck, _within, as_channel_matrix, check_uldp
from ..utils._docstrings import fill_doc
from ._dataframe import DataFramePrivatizer

#: The examples' privatizer inputs: two binary columns under randomized response.
_DOCS = {
    "two_binary_columns": """
        >>> import pandas as pd
        >>> from sklearn_uldp import RandomizedResponse
        >>> from sklearn_uldp.compose import DataFramePrivatizer, check_row_privacy, row_channel
        >>> rr = {c: RandomizedResponse(1.0, categories=[0, 1]) for c in "ab"}
        >>> X = pd.DataFrame({"a": [0, 1], "b": [1, 0]})
        """,
}

__all__ = ["RowChannel", "RowPrivacy", "row_channel", "check_row_privacy"]

#: Largest row channel (inputs x outputs) :func:`row_channel` builds.
MAX_ROW_ENTRIES = 1 << 24


@fill_doc(_DOCS)
@dataclass(frozen=True)
class RowChannel:
    """The exact channel of a privatizer's rows (see :func:`row_channel`).

    Attributes
    ----------
    matrix : ndarray of shape (n_rows, n_outputs)
        ``P(output | row)``; rows sum to 1.
    inputs : list of tuple
        The rows: one value per privatized column, in ``names`` order.
    outputs : list of tuple
        The outputs: one output label per column (under ``"sample"``:
        ``(column index, output label)``).
    names : list of str
        The privatized columns.
    unprotected : ndarray of bool of shape (n_outputs, d)
        Whether the output holds an unprotected report of each column.
    sensitive : list of ndarray of bool
        Each column's sensitive categories.
    strategy : str

    Examples
    --------
    %(two_binary_columns)s
    >>> priv = DataFramePrivatizer(rr, strategy="sample+fake").fit(X)
    >>> rc = row_channel(priv)
    >>> rc.inputs, rc.matrix.sum(axis=1).round(6).tolist()
    ([(0, 0), (0, 1), (1, 0), (1, 1)], [1.0, 1.0, 1.0, 1.0])
    """

    matrix: np.ndarray
    inputs: list
    outputs: list
    names: list
    unprotected: np.ndarray
    sensitive: list = field(repr=False)
    strategy: str = "split"


@fill_doc(_DOCS)
@dataclass(frozen=True)
class RowPrivacy:
    """Outcome of :func:`check_row_privacy`.

    Attributes
    ----------
    row : PrivacyCheck
        The guarantee of the whole row against ``epsilon_spent_``.
    attributes : dict of {str: PrivacyCheck}
        Each attribute's guarantee (the worst over the other attributes'
        values) against ``attribute_epsilons_``.

    Examples
    --------
    %(two_binary_columns)s
    >>> priv = DataFramePrivatizer(rr, strategy="sample").fit(X)
    >>> result = check_row_privacy(priv)
    >>> result.satisfied, sorted(result.attributes)
    (True, ['a', 'b'])
    """

    row: PrivacyCheck
    attributes: dict

    @property
    def satisfied(self) -> bool:
        """Whether the row and every attribute meet their budgets."""
        return bool(self.row) and all(bool(c) for c in self.attributes.values())

    def __bool__(self):
        return self.satisfied


@fill_doc(_DOCS)
def row_channel(privatizer: DataFramePrivatizer, *, realized: bool = True) -> RowChannel:
    """The exact channel of a fitted privatizer's rows (small domains only).

    Parameters
    ----------
    privatizer : fitted DataFramePrivatizer
    realized : bool, default=True
        Use the probabilities the samplers realize (as the privacy checks
        do), or the nominal ones.

    Returns
    -------
    channel : RowChannel

    Examples
    --------
    %(two_binary_columns)s
    >>> priv = DataFramePrivatizer(rr, strategy="sample").fit(X)
    >>> rc = row_channel(priv)
    >>> rc.matrix.shape, rc.outputs[:2]
    ((4, 4), [(0, 0), (0, 1)])
    """
    mechanisms = privatizer.mechanisms_
    names = list(mechanisms)
    d = len(names)
    strategy = privatizer._fitted_strategy_name()
    channels = [m.channel_ for m in mechanisms.values()]
    Qs = [as_channel_matrix(c, realized=realized) for c in channels]
    prot = [np.asarray(c.protected_outputs(), dtype=bool) for c in channels]
    labels = [_labels(c) for c in channels]
    n_in = int(np.prod([Q.shape[0] for Q in Qs]))
    n_out = (
        sum(Q.shape[1] for Q in Qs)
        if strategy == "sample"
        else int(np.prod([Q.shape[1] for Q in Qs]))
    )
    if n_in * n_out > MAX_ROW_ENTRIES:
        raise ValueError(
            f"The row channel would have {n_in} x {n_out} entries; it is only built for "
            "small domains (a few columns of a few categories)."
        )
    grids = list(itertools.product(*[range(Q.shape[0]) for Q in Qs]))
    domains = [_input_values(m) for m in mechanisms.values()]
    inputs = [tuple(_plain(v[i]) for v, i in zip(domains, x, strict=True)) for x in grids]
    if strategy == "sample":
        blocks, outputs, unprotected = [], [], []
        for j, Q in enumerate(Qs):
            col = np.array([Q[x[j]] for x in grids]) / d
            blocks.append(col)
            outputs += [(j, lab) for lab in labels[j]]
            flags = np.zeros((Q.shape[1], d), dtype=bool)
            flags[:, j] = ~prot[j]
            unprotected.append(flags)
        return RowChannel(
            np.hstack(blocks),
            inputs,
            outputs,
            names,
            np.vstack(unprotected),
            [np.asarray(c.sensitive_mask, bool) for c in channels],
            strategy,
        )
    if strategy == "split":
        rows = [_outer([Q[i] for Q, i in zip(Qs, x, strict=True)]) for x in grids]
    else:
        fakes = [
            c.fake_law(f, Q)
            for c, f, Q in zip(channels, _fakes_of(privatizer, names), Qs, strict=True)
        ]
        rows = []
        for x in grids:
            total = 0.0
            for j in range(d):
                parts = [Qs[j][x[j]] if l == j else fakes[l] for l in range(d)]
                total = total + _outer(parts)
            rows.append(total / d)
    outputs = list(itertools.product(*labels))
    flags = np.array(list(itertools.product(*[~p for p in prot])), dtype=bool)
    return RowChannel(
        np.vstack(rows),
        inputs,
        outputs,
        names,
        flags.reshape(len(outputs), d),
        [np.asarray(c.sensitive_mask, bool) for c in channels],
        strategy,
    )


def _input_values(mechanism):
    """The rows' values of one column: its categories, or for a numeric column
    the grid of inputs its channel matrix is given on (``default_inputs``)."""
    categories = getattr(mechanism, "categories_", None)
    if categories is not None:
        return categories
    return mechanism.channel_.default_inputs()


def _fakes_of(privatizer, names):
    from ._strategies import resolved_fakes

    fakes = resolved_fakes(privatizer)
    return [fakes[n] for n in names]


def _labels(channel):
    labels = channel.output_labels()
    arr = np.asarray(labels)
    if arr.ndim == 2:  # bit vectors: the set bits as a tuple
        return [tuple(np.flatnonzero(row).tolist()) for row in arr]
    return [v.item() if isinstance(v, np.generic) else v for v in arr.tolist()]


def _plain(value):
    return value.item() if isinstance(value, np.generic) else value


def _outer(vectors):
    out = np.asarray(vectors[0], dtype=float)
    for v in vectors[1:]:
        out = np.multiply.outer(out, np.asarray(v, dtype=float)).ravel()
    return out


def check_row_privacy(privatizer: DataFramePrivatizer, *, realized: bool = True) -> RowPrivacy:
    """Verify a privatizer's row and per-attribute budgets on its exact row channel.

    Enumerates :func:`row_channel` (small domains only). The row must meet
    ``epsilon_spent_``: every output whose reports are all protected bounds
    the ratio of any two rows by ``e^eps``; an output with unprotected
    reports may be produced only by rows that share those reports'
    (non-sensitive) values, and bounds the ratio among them by ``e^eps``.
    Each attribute i must meet ``attribute_epsilons_[i]``: for every value of
    the other attributes, the channel from attribute i to the output passes
    :func:`~sklearn_uldp.privacy.check_uldp` with X_S = the column's sensitive
    set and Y_P = the outputs whose report of attribute i is protected.

    Parameters
    ----------
    privatizer : fitted DataFramePrivatizer
    realized : bool, default=True

    Returns
    -------
    result : RowPrivacy

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn_uldp import RandomizedResponse, UtilityOptimizedRR
    >>> from sklearn_uldp.compose import DataFramePrivatizer, check_row_privacy
    >>> priv = DataFramePrivatizer({
    ...     "a": UtilityOptimizedRR(1.0, sensitive=[2], categories=[0, 1, 2]),
    ...     "b": RandomizedResponse(1.0, categories=[0, 1])},
    ...     strategy="sample+fake").fit(pd.DataFrame({"a": [0, 2], "b": [1, 0]}))
    >>> result = check_row_privacy(priv)
    >>> bool(result), round(result.row.worst_log_ratio, 6) == round(priv.epsilon_spent_, 6)
    (True, True)
    """
    rc = row_channel(privatizer, realized=realized)
    M = rc.matrix
    eps_row = float(privatizer.epsilon_spent_)
    attribute_eps = privatizer.attribute_epsilons_
    d = len(rc.names)
    sizes = [len(_input_values(m)) for m in privatizer.mechanisms_.values()]
    grid = np.array(list(itertools.product(*[range(k) for k in sizes])))
    # ---- the row
    reasons: list[str] = []
    worst, where = -np.inf, (0, 0, 0)
    any_unprotected = np.asarray(rc.unprotected.any(axis=1), dtype=bool)
    for y in range(M.shape[1]):
        col = M[:, y]
        support = col > 0
        if not support.any():
            continue
        if any_unprotected[y]:
            cols = np.flatnonzero(rc.unprotected[y])
            held = grid[support][:, cols]
            if (held != held[0]).any():
                reasons.append(
                    f"output {rc.outputs[y]!r} has unprotected reports of "
                    f"{[rc.names[j] for j in cols]} but rows with different values "
                    "of them produce it"
                )
                continue
            if any(rc.sensitive[j][held[0][t]] for t, j in enumerate(cols)):
                reasons.append(f"output {rc.outputs[y]!r} reveals a sensitive value")
            rows = support
        else:
            rows = np.ones(M.shape[0], dtype=bool)
            if not support.all():
                reasons.append(f"protected output {rc.outputs[y]!r} is impossible for some rows")
                worst, where = np.inf, (y, int(np.argmax(col)), int(np.argmin(col)))
                continue
        sub = col[rows]
        ratio = float(np.log(sub.max()) - np.log(sub.min()))
        if ratio > worst:
            idx = np.flatnonzero(rows)
            worst, where = ratio, (y, int(idx[np.argmax(sub)]), int(idx[np.argmin(sub)]))
    if not _within(worst, eps_row):
        reasons.append(f"row: e^{worst:.6g} > e^{eps_row:.6g} on output {rc.outputs[where[0]]!r}")
    row = PrivacyCheck("row ULDP", eps_row, not reasons, worst, where, any_unprotected, reasons)
    # ---- each attribute, the others fixed
    attributes = {}
    for i, name in enumerate(rc.names):
        eps_i = float(attribute_eps[name])
        others = [j for j in range(d) if j != i]
        keys = [tuple(r) for r in grid[:, others]]
        groups: dict[tuple, list[int]] = {}
        for r, key in enumerate(keys):
            groups.setdefault(key, []).append(r)
        worst_i, where_i, reasons_i = -np.inf, None, []
        for members in groups.values():
            order = np.asarray(members)[np.argsort(grid[members, i])]
            sub = M[order]
            keep = sub.max(axis=0) > 0  # outputs of these rows
            check = check_uldp(
                sub[:, keep],
                sensitive=rc.sensitive[i],
                epsilon=eps_i,
                protected=~rc.unprotected[keep, i],
            )
            if check.worst_log_ratio > worst_i:
                worst_i = check.worst_log_ratio
                where_i = check.worst
            reasons_i += [r for r in check.reasons if r not in reasons_i]
        attributes[name] = PrivacyCheck(
            f"ULDP of attribute {name!r}", eps_i, not reasons_i, worst_i, where_i, None, reasons_i
        )
    return RowPrivacy(row, attributes)
