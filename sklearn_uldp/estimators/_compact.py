"""The compact report table of SMP (``report_format="compact"``).

Under ``DataFramePrivatizer(strategy="sample")`` each user reports one
attribute. The wide table holds every attribute's report columns, missing
except the sampled one's, so its size grows with the number d of
attributes although each row carries one report. The compact table holds
the same reports in a size that does not depend on d:

* the sampled column (``sampled_column``): which attribute the row
  reports (a pandas ``category`` of the attributes' names);
* one report block ``report_0 .. report_{w-1}``, w the widest attribute's
  report: each row's report written in its attribute's channel's codes,
  in the first cells of the block, the cells past its width zero.

A report's codes are what the channel's ``encode_reports`` gives: the
output code of a one-symbol mechanism (the category's position for k-RR and
uRR, whose wide reports are the labels), the bits of unary encoding, the
number of a numeric mechanism. The block's dtype is the narrowest unsigned
integer that holds every categorical attribute's codes, or ``float64`` as
soon as one attribute is numeric (codes are exact in it).

This module holds what both sides need: the layout (writer,
``compose._strategies``) and the reader (:class:`TableSpec
<sklearn_uldp.estimators.TableSpec>`), which turns one attribute's rows back
into the reports of the wide table, value for value, and refuses a
tampered table with a message naming the attribute, never a user's value.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import cast

import numpy as np
import pandas as pd

from ..exceptions import ReportMismatchError
from ..mechanisms._channel import CategoricalChannel, Channel

__all__ = [
    "REPORT_FORMATS",
    "BLOCK_PREFIX",
    "block_names",
    "compact_layout",
    "compact_refusal",
    "encode_cells",
    "attribute_codes",
    "decoded_reports",
]

#: The values of ``DataFramePrivatizer(report_format=...)``.
REPORT_FORMATS = ("wide", "compact")

#: The report block's columns are ``report_0``, ``report_1``, ...
BLOCK_PREFIX = "report_"


def block_names(width: int) -> list[str]:
    """The names of a report block of ``width`` cells."""
    return [f"{BLOCK_PREFIX}{j}" for j in range(int(width))]


def _base(channel: Channel) -> Channel:
    """The attribute mechanism's own channel (the SMP channel's base)."""
    return getattr(channel, "base", channel)


def _kind(channel: Channel) -> str | None:
    """How an attribute's report is written in the block (None: it cannot be)."""
    base = _base(channel)
    if not base.has_categories:
        return "values"  # numeric mechanisms: the reported numbers
    if getattr(base, "bit_vector_reports", False):
        return "bits"
    if isinstance(base, CategoricalChannel) and len(base.report_column_names("c")) == 1:
        return "codes"
    return None


def compact_refusal(name: str, channel: Channel) -> str | None:
    """Why column ``name``'s reports cannot go in a compact table (None: they can)."""
    if _kind(channel) is not None:
        return None
    base = _base(channel)
    return (
        f"Column {name!r} uses {type(base).__name__}, whose report is neither one "
        "output code, a bit vector nor numbers, so it has no place in the compact "
        "report block: use report_format='wide' (the default), or a one-symbol, "
        "unary-encoding or numeric mechanism for that column."
    )


def _width(channel: Channel) -> int:
    base = _base(channel)
    if _kind(channel) == "bits":
        return int(base.n_categories)
    if _kind(channel) == "values":
        return len(base.report_column_names("c"))
    return 1


def _code_bound(channel: Channel) -> int:
    """One more than the largest code the attribute writes."""
    return 2 if _kind(channel) == "bits" else int(_base(channel).n_outputs)


def compact_layout(channels: Mapping[str, Channel]) -> tuple[dict[str, int], np.dtype]:
    """Name -> the block width of its reports, and the block's dtype.

    The dtype is the narrowest unsigned integer holding every categorical
    attribute's codes, or ``float64`` when an attribute is numeric.
    """
    widths = {name: _width(ch) for name, ch in channels.items()}
    if any(_kind(ch) == "values" for ch in channels.values()):
        return widths, np.dtype(np.float64)
    bound = max(_code_bound(ch) for ch in channels.values())
    for dtype in (np.uint8, np.uint16, np.uint32):
        if bound - 1 <= np.iinfo(dtype).max:
            return widths, np.dtype(dtype)
    return widths, np.dtype(np.int64)


def encode_cells(channel: Channel, reports: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """The block cells of some reports of one attribute, shape (m, width)."""
    kind = _kind(channel)
    base = _base(channel)
    if kind == "codes":
        codes = np.asarray(base.encode_reports(reports))
        return codes.astype(dtype, copy=False).reshape(-1, 1)
    arr = np.asarray(reports)
    if arr.ndim == 1:
        arr = arr.reshape(-1, 1)
    return arr.astype(dtype, copy=False)


def attribute_codes(column: pd.Series, names: Sequence[str], sampled_column: str) -> np.ndarray:
    """The attribute index of every row of a compact table (int64, -1 never).

    Accepts the ``category`` column the privatizer writes, its names read
    back as text (CSV), or the attribute indices (an array output: integers,
    or whole-number floats when the report block is float). Any
    other value is refused with the number of rows, never the value.
    """
    names = list(names)
    d = len(names)
    if isinstance(column.dtype, pd.CategoricalDtype):
        labels = list(column.cat.categories)
        codes = column.cat.codes.to_numpy()
        if labels != names:
            # Categories in another order or with unknown names: map them.
            lookup = np.array([names.index(c) if c in names else -1 for c in labels] + [-1])
            codes = lookup[codes]  # -1 (missing) takes the last entry
    elif column.dtype.kind in "iu":
        codes = column.to_numpy().astype(np.int64, copy=False)
    elif column.dtype.kind == "f":
        # An array output whose report block is float (a numeric column)
        # holds the attribute indices as floats too: whole numbers only.
        values = column.to_numpy()
        whole = np.isfinite(values) & (values == np.floor(values))
        whole &= (values >= 0) & (values < d)
        codes = np.where(whole, values, -1).astype(np.int64)
    else:
        codes = pd.Index(names, dtype=object).get_indexer(column.astype(object))
    codes = np.asarray(codes, dtype=np.int64)
    bad = (codes < 0) | (codes >= d)
    if bad.any():
        raise ReportMismatchError(
            f"{int(bad.sum())} row(s) of the compact reports name no attribute of the "
            f"spec in {sampled_column!r} (missing, unknown names, or indices "
            f"outside 0..{d - 1}): the reports were tampered with or come from "
            "another table's spec."
        )
    return codes


def decoded_reports(
    channel: Channel,
    name: str,
    cells: np.ndarray,
    dtype_width: int,
    report_names: Sequence[str],
    index: pd.Index,
) -> pd.DataFrame:
    """The wide table's reports of attribute ``name`` from its rows' cells.

    ``cells``: the rows' whole block (shape (m, W)); the cells past the
    attribute's width must be zero. Codes outside the channel's outputs,
    bits other than 0/1, missing cells: a clear error naming the attribute.
    """
    kind = _kind(channel)
    base = _base(channel)
    width = _width(channel)
    cells = np.asarray(cells)
    if kind != "values":
        if cells.dtype.kind not in "iu":
            cells = _integral_cells(cells, name)
    elif cells.dtype.kind != "f":
        cells = _float_cells(cells, name)
    if kind == "values" and np.isnan(cells).any():
        raise ReportMismatchError(
            f"{int(np.isnan(cells).any(axis=1).sum())} report(s) of {name!r} in the "
            "compact table have missing cells; every cell of a row's block holds a "
            "number (zero past the attribute's width)."
        )
    # Each check is one reduction over the cells; the offending rows are
    # counted only when it fails.
    if cells.shape[1] > width and cells[:, width:].any():
        spill = (cells[:, width:] != 0).any(axis=1)
        raise ReportMismatchError(
            f"{int(spill.sum())} report(s) of {name!r} are wider than its reports "
            f"({width} cell(s)): the cells past them must be zero. The table "
            "was tampered with or comes from another spec."
        )
    own = cells[:, :width]
    if kind == "values":
        numbers = {c: own[:, j].astype(np.float64, copy=False) for j, c in enumerate(report_names)}
        return pd.DataFrame(numbers, index=index)
    bound = _code_bound(channel)
    if own.size and (own.max() >= bound or (own.dtype.kind != "u" and own.min() < 0)):
        out_of_range = ((own < 0) | (own >= bound)).any(axis=1)
        what = "bits other than 0 and 1" if kind == "bits" else f"codes outside 0..{bound - 1}"
        raise ReportMismatchError(
            f"{int(out_of_range.sum())} report(s) of {name!r} in the compact table "
            f"hold {what}: the table was tampered with or comes from another spec."
        )
    if kind == "bits":
        bits = own.astype(np.uint8, copy=False)
        return pd.DataFrame(bits, columns=list(report_names), index=index, copy=False)
    # kind "codes": a one-symbol channel
    reports = cast(CategoricalChannel, base).decode(own[:, 0].astype(np.intp, copy=False))
    return pd.DataFrame({report_names[0]: reports}, index=index)


def _integral_cells(cells, name):
    """Cells read back as floats or objects (CSV): integers, or an error."""
    try:
        as_float = np.asarray(cells, dtype=np.float64)
    except (TypeError, ValueError):
        raise ReportMismatchError(
            f"The compact reports of {name!r} hold non-numeric cells; the report "
            "block holds integer codes (or numbers for numeric attributes)."
        ) from None
    finite = np.isfinite(as_float)
    if not finite.all() or (as_float != np.round(as_float)).any():
        bad = (~finite | (as_float != np.round(np.where(finite, as_float, 0)))).any(axis=1)
        raise ReportMismatchError(
            f"{int(bad.sum())} report(s) of {name!r} in the compact table hold "
            "missing or non-integer cells, where the block holds integer codes."
        )
    return as_float.astype(np.int64)


def _float_cells(cells, name):
    try:
        return np.asarray(cells, dtype=np.float64)
    except (TypeError, ValueError):
        raise ReportMismatchError(
            f"The compact reports of {name!r} hold non-numeric cells; a numeric "
            "attribute's cells hold its reported numbers."
        ) from None
