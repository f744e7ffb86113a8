"""poison: append fake users' reports to a batch of reports."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ..mechanisms._base import as_channel
from ..mechanisms._reports import (
    CHANNEL_ATTR,
    PackedReports,
    Reports,
    SparseReports,
    attach_channel,
    get_channel,
    is_packed_frame,
)
from ..utils._random import check_random_generator
from ..utils._typing import ArrayLike, RandomStateLike
from ..utils._validation import encode_labels
from ._models import ATTACKS, fake_model, family_of

__all__ = ["poison"]


def _resolve_channel(reports, mechanism):
    carried = get_channel(reports)
    given = as_channel(mechanism) if mechanism is not None else None
    if carried is None and given is None:
        raise ValueError(
            "The reports do not say which mechanism produced them: pass reports as "
            "returned by a mechanism's transform, or mechanism= (a fitted mechanism, "
            "its channel or its spec)."
        )
    if carried is not None and given is not None and carried != given:
        raise ValueError(
            "The reports carry another mechanism's spec than `mechanism` "
            f"({', '.join(carried.describe_difference(given))})."
        )
    return carried if carried is not None else given


def target_codes(channel, targets):
    """Codes of the target categories, validated (no value quoted in errors)."""
    if isinstance(targets, (str, bytes)) or np.ndim(targets) == 0:
        targets = [targets]
    values = np.asarray(list(targets), dtype=object)
    if values.size == 0:
        raise ValueError("targets must name at least one category.")
    codes = encode_labels(values, channel.categories)
    if (codes < 0).any():
        raise ValueError(
            f"targets holds {int((codes < 0).sum())} value(s) that are not categories of "
            f"{channel!r}; pass categories of its domain."
        )
    codes = np.unique(codes.astype(np.intp))
    if codes.size != values.size:
        raise ValueError("targets holds the same category twice.")
    return codes


def _append(reports, fake, channel):
    """``reports`` with the rows ``fake`` appended, in the same container."""
    if isinstance(reports, PackedReports):
        if reports.index is not None or reports.n_blocks != 1:
            raise ValueError("Poison the packed reports of one column (one block of bits).")
        data = np.concatenate(
            [reports.data, np.packbits(fake.astype(np.uint8), axis=1, bitorder="little")]
        )
        return PackedReports(data, reports.n_bits, reports.channel)
    if sp.issparse(reports):
        stacked = sp.vstack([sp.csr_array(reports), sp.csr_array(fake)], format="csr")
        stacked = stacked.astype(reports.dtype)
        if isinstance(reports, SparseReports):
            return attach_channel(stacked, reports.channel)
        return sp.csr_array(stacked)
    if isinstance(reports, pd.DataFrame):
        if is_packed_frame(reports):
            raise ValueError(
                "Poison packed reports as PackedReports (PackedReports.from_frame), not "
                "as a frame of bytes."
            )
        rows = pd.DataFrame(fake, columns=reports.columns)
        for name, dtype in reports.dtypes.items():
            if dtype.kind != "O":
                rows[name] = rows[name].astype(dtype)
        out = pd.concat([reports, rows], ignore_index=True)
        out.attrs = dict(reports.attrs)
        if CHANNEL_ATTR not in out.attrs and channel is not None:
            out.attrs[CHANNEL_ATTR] = channel.to_dict()
        return out
    arr = np.asarray(reports)
    if arr.dtype != object and fake.dtype != arr.dtype:
        fake = fake.astype(arr.dtype)
    out = np.concatenate([arr, fake], axis=0)
    if isinstance(reports, Reports):
        return attach_channel(out, reports.channel)
    return out


def poison(
    reports: Any,
    n_fake: int,
    targets: ArrayLike,
    attack: str = "mga",
    random_state: RandomStateLike = None,
    *,
    mechanism: Any = None,
) -> Any:
    """The reports with ``n_fake`` fake users' reports appended.

    Three attacks of Cao, Jia & Gong (USENIX Security 2021) against a
    frequency oracle (docs/robustness.md):

    * ``"mga"``, the maximal gain attack: every fake user sends a report that
      maximizes the sum of the targets' estimated frequencies
      (``sum_t a(t) s_t(y)`` with the channel's linear estimator); a uniform
      choice among such reports, with the bits that do not matter filled at
      random (bit vectors are padded to an honest report's number of set
      bits). Against a utility-optimized mechanism it uses the clear
      (invertible) reports of non-sensitive targets when they gain more;
    * ``"random input"``: every fake user holds a uniformly chosen target and
      privatizes it honestly (indistinguishable from real holders);
    * ``"random report"``: a uniform draw from the output space.

    Parameters
    ----------
    reports : array-like, DataFrame, sparse matrix or PackedReports
        Reports of one column, as a mechanism's ``transform`` returns them.
    n_fake : int
        Number of fake users (>= 0).
    targets : category or array-like of categories
        The items the attacker promotes (for the MGA and random input).
    attack : {"mga", "random input", "random report"}, default="mga"
    random_state : None, int, "secure" or Generator, default=None
        ``None`` draws fresh OS entropy at every call (nothing is stored);
        an integer seeds a reproducible simulation.
    mechanism : fitted mechanism, Channel or spec dict, default=None
        For reports that do not carry their channel.

    Returns
    -------
    poisoned : same type as ``reports``
        The honest reports first, then the fake ones; the channel (spec) kept.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp import EmpiricalEstimator, RandomizedResponse
    >>> from sklearn_uldp.robustness import poison
    >>> mech = RandomizedResponse(2.0, categories=list("abcdefgh"), random_state=0)
    >>> reports = mech.fit_transform(np.array([["a"]] * 900 + [["b"]] * 100, dtype=object))
    >>> poisoned = poison(reports, 50, targets=["h"], random_state=1)
    >>> poisoned.shape, poisoned.channel == reports.channel
    ((1050, 1), True)
    >>> before = EmpiricalEstimator().fit(reports).distribution_[-1]
    >>> after = EmpiricalEstimator().fit(poisoned).distribution_[-1]
    >>> bool(after > before + 0.05)
    True
    """
    channel = _resolve_channel(reports, mechanism)
    family = family_of(channel)
    if attack not in ATTACKS:
        raise ValueError(f"attack must be one of {list(ATTACKS)}, got {attack!r}.")
    if isinstance(n_fake, bool) or not isinstance(n_fake, numbers.Integral) or n_fake < 0:
        raise ValueError(f"n_fake must be an integer >= 0, got {n_fake!r}.")
    width = 1 if family == "one-symbol" else channel.n_categories
    shape = np.shape(reports) if not isinstance(reports, PackedReports) else reports.shape
    if len(shape) != 2 or shape[1] != width:
        raise ValueError(
            f"Expected the reports of one column, {width} report column(s); got shape "
            f"{tuple(shape)}. Poison one column's block (mechanism.column_reports)."
        )
    codes = target_codes(channel, targets) if attack != "random report" else np.arange(1)
    rng = check_random_generator(random_state)
    model = fake_model(channel, codes, attack)
    fake = model.sample(int(n_fake), rng)
    return _append(reports, fake, channel)
