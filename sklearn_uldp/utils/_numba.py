"""numba, when it can be imported: the one place the optional import is tried.

The package's hot loops are plain Python over numpy arrays that numba
compiles; every caller keeps a numpy path with the same output for when
numba cannot be imported (tests/package/test_default_install.py runs the
package in an interpreter that cannot import it), and reads
``numba`` (the module, or None) and ``HAVE_NUMBA`` from here.
"""

from __future__ import annotations

try:  # optional: compiled loops
    import numba
except ImportError:  # pragma: no cover - exercised in a subprocess by the tests
    numba = None  # type: ignore[assignment]

__all__ = ["HAVE_NUMBA", "numba"]

HAVE_NUMBA = numba is not None
