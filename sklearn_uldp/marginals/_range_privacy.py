"""The guarantee of range-query reports, checked on their exact channel over rows.

The law of a report depends on a row only through its finest bins (the 1-D
bins of HDG, the 2-D bins of TDG), so the exact channel over every tuple of
bins (:meth:`RangeQueryChannel.realized_matrix`) is the channel of every row
of the data. A report is ``(A, y)``: the grid A, drawn independently of the
row x, and ``y`` from A's channel at the cell ``x_A`` holding the row. With
``sensitive_ranges`` (S_c the union of column c's sensitive ranges, all of
its range for a column left out), a cell is sensitive when, along one of its
columns c, its bins hold a point of S_c. What this gives, row against row:

1. **Protected outputs are epsilon-LDP between any two rows** (ULDP's second
   condition for each grid's channel, the grid being independent of the row).
2. **An unprotected output reveals one non-sensitive cell, and nothing
   else**: it comes from one cell u of its grid only, and u is not sensitive
   (ULDP's first condition): the row's values on the grid's columns lie in
   u's intervals, which hold no sensitive value.
3. **A row's sensitive values are hidden at epsilon**: if x and x' differ
   only in columns c where ``x_c`` lies in S_c, every output y satisfies
   ``Q(y | x) <= e^eps Q(y | x')``. A grid without those columns puts both
   rows in the same cell; a grid with one of them puts x in a cell whose bin
   along c holds ``x_c``, a point of S_c, so a sensitive cell, which produces
   only protected outputs, and (1) applies.

:func:`check_range_uldp` verifies the three on the exact matrix over the
tuples of finest bins (for (3), between a tuple and every tuple that differs
only in columns where the first's bin meets S_c: those are the bins that
can hold a sensitive value), besides each grid's channel against its own
definition.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..privacy import PrivacyCheck
from ..privacy._checks import _within
from ._one_report import _check_each_set, _check_protected_and_unprotected
from ._range_channel import RangeQueryChannel

__all__ = ["check_range_uldp"]


def _as_range(obj):
    channel = getattr(obj, "channel_", obj)
    if not isinstance(channel, RangeQueryChannel):
        raise TypeError(
            "check_range_uldp checks a fitted RangeQueryPrivatizer or its "
            f"RangeQueryChannel; got {type(obj).__name__}."
        )
    return channel


def check_range_uldp(mechanism: Any) -> PrivacyCheck:
    """Check the row-level guarantee of range-query reports on their exact channel.

    Checks, on :meth:`RangeQueryChannel.realized_matrix` (every tuple of the
    columns' finest bins against every output): (1) every protected output
    is epsilon-LDP between any two rows; (2) every unprotected output is
    produced by the rows of exactly one non-sensitive cell of its grid; (3)
    rows that differ only in columns where the first one's bin meets a
    sensitive range are epsilon-indistinguishable on every output. And each
    grid's channel against its definition (:func:`check_uldp` over its
    cells, :func:`check_ldp` for plain LDP). For plain LDP reports, (1) is
    :func:`check_ldp` on the whole matrix.

    Parameters
    ----------
    mechanism : RangeQueryPrivatizer or RangeQueryChannel
        Fitted; the rows times the outputs must fit the exact matrix (small
        granularities).

    Returns
    -------
    check : PrivacyCheck
        ``definition`` is ``"range ULDP"`` (``"LDP"`` for plain LDP
        reports); ``worst_log_ratio`` the largest log-ratio met in (1) and
        (3); ``reasons`` the violations.

    Examples
    --------
    >>> from sklearn_uldp.marginals import RangeQueryPrivatizer, check_range_uldp
    >>> priv = RangeQueryPrivatizer(
    ...     1.0, bounds={"a": (0, 10), "b": (0, 1)}, granularity=(4, 2),
    ...     sensitive_ranges={"a": [(8, 10)], "b": [(0.9, 1)]}).fit()
    >>> check = check_range_uldp(priv)
    >>> check.definition, check.satisfied, round(check.worst_log_ratio, 6)
    ('range ULDP', True, 1.0)
    """
    channel = _as_range(mechanism)
    eps, reasons, Q, plain = _check_each_set(channel, channel.sensitive_ranges is None, "grid")
    if plain is not None:
        return plain
    protected = np.asarray(channel.protected_outputs(), dtype=bool)
    rows = channel._rows()
    virtual = channel.virtual_codes(rows)
    worst, where = _check_protected_and_unprotected(
        channel,
        Q,
        protected,
        eps,
        reasons,
        lambda j: channel.grid_channel.cell_codes(j, virtual),
        "grid",
    )
    # (3) rows differing only in columns where the first one's bin can hold a
    # sensitive value.
    d = len(channel.columns)
    hidden = np.column_stack(
        [channel._column_mask(c, channel.fine_bins)[rows[:, c]] for c in range(d)]
    )
    with np.errstate(divide="ignore"):
        logQ = np.log(Q)
    for i in range(rows.shape[0]):
        differ = rows != rows[i]
        allowed = ~(differ & ~hidden[i]).any(axis=1) & differ.any(axis=1)
        others = np.flatnonzero(allowed)
        if others.size == 0:
            continue
        with np.errstate(invalid="ignore"):
            diff = np.where(Q[i] > 0, logQ[i] - logQ[others], -np.inf)
        flat = int(np.argmax(diff))
        k, out = divmod(flat, diff.shape[1])
        value = float(diff[k, out])
        if value > worst:
            worst, where = value, (out, i, int(others[k]))
        if not _within(value, eps):
            reasons.append(
                f"rows {i} and {int(others[k])} differ only in sensitive values of row {i}, "
                f"but output {out} has log-ratio {value:.4g} > {eps:.4g}"
            )
    return PrivacyCheck(
        "range ULDP", eps, not reasons, float(worst), where, ~protected, reasons[:20]
    )
