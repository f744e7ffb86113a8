"""Intersphinx inventories built from the installed packages, offline.

Intersphinx normally downloads each project's ``objects.inv``; the docs must
build without a network (CI, air-gapped machines), so this module writes
inventories for scikit-learn, numpy, scipy and pandas from the installed
packages themselves: every public class and function of the modules listed
below, linked to the page the project's documentation generates for it.
Cross-references such as :class:`~sklearn.pipeline.Pipeline` then resolve
to the projects' stable online docs, and a name that does not exist in the
installed version does not resolve (sphinx warns, and the build fails).
"""

import importlib
import inspect
import zlib
from pathlib import Path

#: project -> (base URL, modules whose public names are listed, page pattern)
PROJECTS = {
    "sklearn": (
        "https://scikit-learn.org/stable/",
        [
            "sklearn",
            "sklearn.base",
            "sklearn.pipeline",
            "sklearn.compose",
            "sklearn.model_selection",
            "sklearn.preprocessing",
            "sklearn.metrics",
            "sklearn.utils",
            "sklearn.utils.validation",
            "sklearn.exceptions",
            "sklearn.dummy",
            "sklearn.utils.estimator_checks",
        ],
        "modules/generated/{name}.html",
    ),
    "numpy": (
        "https://numpy.org/doc/stable/",
        ["numpy", "numpy.random"],
        "reference/generated/{name}.html",
    ),
    "scipy": (
        "https://docs.scipy.org/doc/scipy/",
        ["scipy.sparse", "scipy.stats", "scipy.special", "scipy.optimize"],
        "reference/generated/{name}.html",
    ),
    "pandas": (
        "https://pandas.pydata.org/docs/",
        ["pandas"],
        "reference/api/{name}.html",
    ),
}

# numpy.random documents its classes on hand-written pages.
_NUMPY_RANDOM_PAGES = {
    "Generator": "reference/random/generator.html",
    "default_rng": "reference/random/generator.html",
    "RandomState": "reference/random/legacy.html",
    "SeedSequence": "reference/random/bit_generators/generated/numpy.random.SeedSequence.html",
    "BitGenerator": "reference/random/bit_generators/generated/numpy.random.BitGenerator.html",
    "PCG64": "reference/random/bit_generators/pcg64.html",
    "PCG64DXSM": "reference/random/bit_generators/pcg64dxsm.html",
    "Philox": "reference/random/bit_generators/philox.html",
    "SFC64": "reference/random/bit_generators/sfc64.html",
    "MT19937": "reference/random/bit_generators/mt19937.html",
}


def _public_names(module):
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n in dir(module) if not n.startswith("_")]
    for name in names:
        try:
            obj = getattr(module, name, None)
        except ImportError:  # experimental names that need an explicit enable
            continue
        if inspect.isclass(obj):
            yield name, "py:class"
        elif callable(obj) and not inspect.ismodule(obj):
            yield name, "py:function"


def _entries(project):
    base, modules, pattern = PROJECTS[project]
    seen = set()
    for module_name in modules:
        try:
            module = importlib.import_module(module_name)
        except ImportError:  # pragma: no cover - optional project
            continue
        page = pattern.format(name=module_name)
        if project == "sklearn":
            page = f"api/{module_name}.html"
        yield module_name, "py:module", page, module_name
        for name, role in _public_names(module):
            full = f"{module_name}.{name}"
            if full in seen:
                continue
            seen.add(full)
            if module_name == "numpy.random" and name in _NUMPY_RANDOM_PAGES:
                uri = f"{_NUMPY_RANDOM_PAGES[name]}#{full}"
            else:
                uri = pattern.format(name=full) + f"#{full}"
            yield full, role, uri, "-"


def write_inventories(directory):
    """Write ``<project>.inv`` for every project; return the intersphinx mapping."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    mapping = {}
    for project, (base, _, _) in PROJECTS.items():
        module = importlib.import_module(project)
        lines = "".join(
            f"{name} {role} 1 {uri} {display}\n" for name, role, uri, display in _entries(project)
        )
        header = (
            "# Sphinx inventory version 2\n"
            f"# Project: {project}\n"
            f"# Version: {getattr(module, '__version__', '')}\n"
            "# The remainder of this file is compressed using zlib.\n"
        )
        path = directory / f"{project}.inv"
        path.write_bytes(header.encode() + zlib.compress(lines.encode()))
        mapping[project] = (base, str(path))
    return mapping
