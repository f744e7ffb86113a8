"""numba, when it can be imported: the one place the optional import is tried.

The package's hot loops are plain Python over numpy arrays that numba
compiles; every caller keeps a numpy path with the same output for when
numba cannot be imported (tests/package/test_default_install.py runs the
package in an interpreter that cannot import it), and reads
``numba`` (the module, or None) and ``HAVE_NUMBA`` from here.

**Small inputs take the numpy path.** numba compiles a loop at its first call
in an install (then loads it from its cache: ``cache=True``, in the
package's ``__pycache__`` or, for an install that cannot be written to,
numba's user-wide cache directory), which costs 0.3-2 s per loop, several
seconds for an estimator's first fit: more than the numpy path takes on
anything but large inputs. So a caller asks :func:`use_compiled` with the
size of the job (cells, reports), and runs the compiled loop only from
:data:`COMPILE_MIN_WORK` on: a first fit on a small sample compiles
nothing, a large one compiles what it needs once. The choice depends on the
size alone (never on what happens to be compiled or cached), so a given
input always takes the same path; the samplers' and counts' two paths give
the same integers, the floating-point sums (EM products) agree to rounding.
"""

from __future__ import annotations

try:  # optional: compiled loops
    import numba
except ImportError:  # pragma: no cover - exercised in a subprocess by the tests
    numba = None  # type: ignore[assignment]

__all__ = ["HAVE_NUMBA", "numba", "COMPILE_MIN_WORK", "use_compiled"]

HAVE_NUMBA = numba is not None

#: Work from which the compiled loop runs instead of its numpy twin: the
#: number of values a loop reads (reports, or 8-byte words of a report
#: matrix: each caller says). From 2**18 values the numpy path's few
#: elementwise passes take milliseconds and the compiled loop's speed starts
#: to pay for its one compilation per install (0.3-2 s); below, a first fit
#: on a sample compiles nothing. The test suite sets it to 0, so that it
#: exercises the compiled loops on small inputs.
COMPILE_MIN_WORK = 1 << 18


def use_compiled(work: float) -> bool:
    """Whether a job of ``work`` elementary steps runs the compiled loop.

    Parameters
    ----------
    work : float
        The job's size in the caller's unit (reports, 8-byte words of a
        report matrix, ...), compared with :data:`COMPILE_MIN_WORK`.

    Returns
    -------
    bool
        True when numba is installed and the job is at least
        :data:`COMPILE_MIN_WORK`.

    Examples
    --------
    >>> from sklearn_uldp.utils import _numba
    >>> _numba.use_compiled(2 * _numba.COMPILE_MIN_WORK + 1) == _numba.HAVE_NUMBA
    True
    """
    return HAVE_NUMBA and work >= COMPILE_MIN_WORK
