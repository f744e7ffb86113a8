"""Docstring fragments of the numeric subpackage, written once.

The one-column mechanisms take the same ``epsilon``, ``bounds`` and
``random_state`` and have the same fitted attributes but for the channel's
class: :func:`mechanism_doc` fills a mechanism's ``%(...)s`` placeholder
lines with them (see :func:`sklearn_uldp.utils._docstrings.fill_doc`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from ..utils._docstrings import COMMON, fill_doc, fill_docstring

T = TypeVar("T")

#: Fragments shared by the numeric classes.
NUMERIC: dict[str, str] = {
    "epsilon": """
        epsilon : float, default=1.0
            Privacy budget per report.
        """,
    "bounds": """
        bounds : (float, float) or "auto", default="auto"
            The public range of the values. Values outside it are clipped with a
            :class:`~sklearn_uldp.exceptions.ClippingWarning`. "auto" learns it
            from the data at ``fit`` (with a
            :class:`~sklearn_uldp.exceptions.PrivacyLeakWarning`).
        """,
    "features_in": """
        n_features_in_ : int
        feature_names_in_ : ndarray of str
            Defined when X has string column names.
        """,
    "channel_parameters": """
        Parameters
        ----------
        bounds : (float, float)
        epsilon : float
        """,
    "wang_references": """
        References
        ----------
        N. Wang et al., "Collecting and Analyzing Multidimensional Data with
        Local Differential Privacy", ICDE 2019.
        """,
}

#: Fills the placeholders of :data:`NUMERIC` and ``COMMON``.
fill_numeric_doc = fill_doc({**COMMON, **NUMERIC})

_MECHANISM_SECTIONS = """
    Parameters
    ----------
    %(epsilon)s
    %(bounds)s
    %(random_state)s

    Attributes
    ----------
    bounds_ : tuple of float
        The public range.
    channel_ : {channel}
        The public spec.
    %(features_in)s
"""


def mechanism_doc(channel: str) -> Callable[[T], T]:
    """Fill a one-column numeric mechanism's docstring: its placeholder
    ``%(mechanism_sections)s`` by its Parameters and Attributes sections
    (``channel``: the class of its ``channel_``), and the other placeholders
    by the fragments of :data:`NUMERIC` and ``COMMON``."""
    fragments = {**COMMON, **NUMERIC}
    sections = fill_docstring(_MECHANISM_SECTIONS.replace("{channel}", channel), fragments)
    return fill_doc({**fragments, "mechanism_sections": sections})
