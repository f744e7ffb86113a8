"""Test-suite settings.

The package runs small inputs through its numpy paths and compiles a numba
loop only for large ones (``sklearn_uldp.utils._numba.COMPILE_MIN_WORK``).
The tests use small inputs and are written to exercise the compiled loops
(the numpy twins are tested by setting each module's ``_KERNEL`` to
"numpy"), so the threshold is 0 here; tests of the threshold itself set it
back with ``monkeypatch``.
"""

from sklearn_uldp.utils import _numba

_numba.COMPILE_MIN_WORK = 0
