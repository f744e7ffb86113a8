"""Run the pinned tests as another processor computes them (issue 30).

A pinned float must hold on any processor (tests/README.md, "Pinned
floats"). A pin recorded on one machine can assume that machine's rounding
and still pass there; here the tests marked ``pinned`` run in a fresh
interpreter where the same sums are computed in another order:

* numba cannot be imported, so every compiled loop takes its numpy fallback
  (``sklearn_uldp/utils/_numba.py``; NUMBA_DISABLE_JIT would run the loops'
  Python source instead, not the fallbacks);
* OpenBLAS, which numpy and scipy's wheels ship, uses the kernels of another
  core type (``OPENBLAS_CORETYPE``): Haswell's AVX2 kernels on an AVX-512
  machine, Sandybridge's on an AVX2 one;
* numpy's widest SIMD loops are off (``NPY_DISABLE_CPU_FEATURES``): exp, log
  and friends come from the next tier's loops, which round differently in
  the last bits.

A pin that fails here assumes one processor's rounding: widen it to what
reassociation allows (and say why), do not record this run's value.

    python .ci/another_processor.py [pytest options]    # from the repository root
"""

from __future__ import annotations

import os
import subprocess
import sys

# The other core type for OpenBLAS, by the core type it detected here.
_OTHER_CORE = {
    "sapphirerapids": "Haswell",
    "cooperlake": "Haswell",
    "skylakex": "Haswell",
    "zen": "Sandybridge",
    "haswell": "Sandybridge",
    "sandybridge": "Nehalem",
    "neoversev1": "ARMV8",
    "neoversen1": "ARMV8",
    "neoversen2": "ARMV8",
    "cortexa57": "ARMV8",
}

# Run in the child: numba hidden before anything imports it, then pytest.
_CHILD = """
import sys
sys.modules["numba"] = None
import pytest
sys.exit(pytest.main(sys.argv[1:]))
"""

# Printed by the child's first test session: what it really runs with.
_REPORT = """
import numpy, scipy.linalg, threadpoolctl  # numpy and scipy load their BLAS
from sklearn_uldp._show_versions import _kernels
blas = [f"{i['internal_api']} {i.get('architecture')}" for i in threadpoolctl.threadpool_info()
        if i["user_api"] == "blas"]
print("== BLAS:", ", ".join(blas) or "none found")
print("== compiled kernels:", _kernels()[0])
"""


def _numpy_simd_to_disable() -> list[str]:
    """numpy's dispatched SIMD targets above the next-widest one this CPU has."""
    try:
        from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
    except ImportError:  # numpy < 2
        from numpy.core._multiarray_umath import __cpu_dispatch__, __cpu_features__
    have = [name for name in __cpu_dispatch__ if __cpu_features__.get(name)]
    # Targets are listed from the narrowest; keep the narrowest this CPU has
    # when it has several (AVX2 on an AVX-512 machine), else drop it too.
    return have[1:] if len(have) > 1 else have


def _other_openblas_core() -> tuple[str | None, str]:
    """(core type to force, what OpenBLAS detected), or (None, why not)."""
    import numpy  # noqa: F401  (loads its BLAS)
    import threadpoolctl

    found = [i for i in threadpoolctl.threadpool_info() if i.get("internal_api") == "openblas"]
    if not found:
        return None, "numpy and scipy do not use OpenBLAS here"
    detected = str(found[0].get("architecture") or "")
    return _OTHER_CORE.get(detected.lower()), detected


def main(argv: list[str]) -> int:
    env = dict(os.environ)
    disabled = _numpy_simd_to_disable()
    if disabled:
        env["NPY_DISABLE_CPU_FEATURES"] = " ".join(disabled)
    core, detected = _other_openblas_core()
    if core:
        env["OPENBLAS_CORETYPE"] = core
    print(
        "== pinned tests as on another processor: numba off (numpy fallbacks); "
        f"numpy SIMD off: {' '.join(disabled) or 'none (baseline only)'}; "
        f"OpenBLAS core: {core or 'unchanged'} (detected: {detected or 'none'})",
        flush=True,
    )
    check = subprocess.run(
        [sys.executable, "-c", 'import sys; sys.modules["numba"] = None\n' + _REPORT], env=env
    )
    if check.returncode:
        return check.returncode
    args = ["-p", "no:cacheprovider", "-p", "no:xdist", "-o", "addopts=-rfEsX --strict-markers"]
    args += ["-m", "pinned and not slow", "tests", *argv]
    return subprocess.run([sys.executable, "-c", _CHILD, *args], env=env).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
