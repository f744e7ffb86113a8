"""Docstring fragments shared by many classes, written once.

Several families take the same parameters (``random_state``, ``categories``,
``packed_output``...) and document them with the same words. Writing the
paragraph once keeps the copies from drifting apart: a class's docstring
names a fragment with a placeholder line ``%(name)s`` (alone on its line),
and :func:`fill_doc` replaces it by the fragment, indented as the
placeholder is.

Why not a library: docrep does this but would add a core dependency for
forty lines; matplotlib (``_docstring.interpd``) and MNE (``fill_doc``)
keep the same helper in-house. Unlike ``str.__mod__`` only whole-line
placeholders of known names are replaced, so docstrings keep their literal
``%`` and ``{...}`` text, and an unknown name is an error at import time,
not a silently unfilled docstring.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import TypeVar

T = TypeVar("T")

_PLACEHOLDER = re.compile(r"^(?P<indent>[ \t]*)%\((?P<name>\w+)\)s[ \t]*$", re.MULTILINE)


def _dedent(text: str) -> list[str]:
    lines = text.splitlines()
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    margin = min((len(ln) - len(ln.lstrip()) for ln in lines if ln.strip()), default=0)
    return [ln[margin:] for ln in lines]


def fill_docstring(doc: str, fragments: Mapping[str, str]) -> str:
    """``doc`` with every placeholder line ``%(name)s`` replaced by ``fragments[name]``.

    The fragment is dedented, then indented as the placeholder is; blank
    lines stay blank. A name missing from ``fragments`` raises ``KeyError``.
    """

    def replace(match: re.Match[str]) -> str:
        name = match.group("name")
        if name not in fragments:
            raise KeyError(f"docstring placeholder %({name})s has no fragment")
        indent = match.group("indent")
        return "\n".join(indent + ln if ln else "" for ln in _dedent(fragments[name]))

    return _PLACEHOLDER.sub(replace, doc)


def fill_doc(fragments: Mapping[str, str]) -> Callable[[T], T]:
    """A decorator filling the decorated object's docstring from ``fragments``.

    Examples
    --------
    >>> from sklearn_uldp.utils._docstrings import fill_doc
    >>> @fill_doc({"seed": "seed : int\\n    Where the noise starts."})
    ... def f(seed):
    ...     '''Do it.
    ...
    ...     Parameters
    ...     ----------
    ...     %(seed)s
    ...     '''
    >>> print(f.__doc__.split("----------")[1].rstrip())
    <BLANKLINE>
        seed : int
            Where the noise starts.
    """

    def decorate(obj: T) -> T:
        doc = getattr(obj, "__doc__", None)
        if doc:
            obj.__doc__ = fill_docstring(doc, fragments)
        return obj

    return decorate


#: Fragments shared across subpackages (a subpackage keeps its own in its
#: ``_docs.py`` and merges these in: ``fill_doc({**COMMON, **LOCAL})``).
COMMON: dict[str, str] = {
    "random_state": """
        random_state : None, "secure", int, Generator, SeedSequence or RandomState, default=None
            Source of randomness. ``None``: fresh OS entropy at every call
            (deployment); ``"secure"``: a cryptographically secure generator;
            an int for reproducible simulations only.
        """,
    "categories": """
        categories : "auto" or array-like of shape (k,), default="auto"
            The public domain.
        """,
    "bit_vector_output": """
        sparse_output : bool, default=False
            Return a scipy CSR array instead of a dense uint8 array.
        packed_output : bool, default=False
            Return :class:`~sklearn_uldp.mechanisms.PackedReports` (ceil(k / 8)
            bytes a report, bits packed 8 to a byte) instead of a dense uint8
            array of k bytes a report. Exclusive with ``sparse_output``. With
            pandas output, one binary column per input column, named after it
            (:meth:`PackedReports.to_frame`; also ``get_feature_names_out``).
        """,
    "memo_label": """
        memo_label : str, default=""
            Names the collection in the context of the memoized answers (public;
            keep it for every round of one collection). Mechanisms that get the
            same users' secrets for *different* quantities need distinct labels:
            with one label, a user holding the same value in both would get the
            same permanent answer in both, and their reports would compose as
            fresh reports of one value (a loss growing with the rounds). The
            input columns of one mechanism never share answers (each has its
            own memo).
        """,
}
