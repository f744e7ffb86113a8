"""Docstring fragments the mechanisms share, written once.

Most mechanisms take ``epsilon``, ``categories`` and ``random_state`` (the
unary encodings also ``sparse_output`` and ``packed_output``) and carry the
same fitted attributes; their docstrings name these fragments with
whole-line ``%(name)s`` placeholders and the class is decorated with
:data:`fill_mechanism_doc` (see :mod:`sklearn_uldp.utils._docstrings`).
A fragment that only joins others (``domain_and_seed``...) exists because
the parameters it joins are documented together, in this order, by many
classes.
"""

from __future__ import annotations

import textwrap

from ..utils._docstrings import COMMON, fill_doc


def _join(*fragments: str) -> str:
    """The fragments one after the other, each dedented, no blank line between."""
    return "\n".join(textwrap.dedent(f).strip("\n") for f in fragments)


_EPSILON = """
epsilon : float, default=1.0
    Privacy budget (> 0).
"""

_SENSITIVE = """
sensitive : array-like, boolean mask or callable
    The sensitive categories X_S (non-empty).
"""

_HASH_SEED = """
hash_seed : int, default=0
    Public seed of the hash functions (part of the spec).
"""

#: The mechanisms' own fragments (merged with the package-wide ``COMMON``).
MECHANISM_DOCS: dict[str, str] = {
    "epsilon": _EPSILON,
    "epsilon_sensitive": _join(_EPSILON, _SENSITIVE),
    "hash_seed": _HASH_SEED,
    "domain_and_seed": _join(COMMON["categories"], COMMON["random_state"]),
    "domain_bits_and_seed": _join(
        COMMON["categories"], COMMON["bit_vector_output"], COMMON["random_state"]
    ),
    # The attributes every fitted mechanism has (sklearn's input checks).
    "fitted_input": """
        n_features_in_ : int
        feature_names_in_ : ndarray of shape (1,)
        """,
    # The end of a mechanism's ``fit`` docstring.
    "fit_y_returns_self": """
        y : None
            Ignored.

        Returns
        -------
        self : object
            The fitted mechanism.
        """,
    "fitted_domain_sensitive": """
        categories_ : ndarray of shape (k,)
        sensitive_mask_ : ndarray of bool of shape (k,)
        """,
}

#: Decorator filling a mechanism's docstring from ``COMMON`` and ``MECHANISM_DOCS``.
fill_mechanism_doc = fill_doc({**COMMON, **MECHANISM_DOCS})
