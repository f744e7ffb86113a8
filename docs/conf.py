"""Sphinx configuration of the sklearn-uldp documentation.

Build with::

    python -m sphinx -b html -W --keep-going docs docs/_build/html -D plot_gallery=0

(``-D plot_gallery=0`` skips running the gallery examples; drop it to run them,
which needs matplotlib.)
"""

import os
import sys
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "_ext"))
from offline_inventories import write_inventories  # noqa: E402

# Use the installed package if there is one, else this checkout.
try:
    import sklearn_uldp
except ImportError:  # pragma: no cover - depends on the environment
    sys.path.insert(0, os.path.abspath(".."))
    import sklearn_uldp

# -- Project ------------------------------------------------------------------
project = "sklearn-uldp"
author = "sklearn-uldp developers"
copyright = f"{date.today().year}, {author}"
release = sklearn_uldp.__version__
version = ".".join(release.split(".")[:2])

# -- General ------------------------------------------------------------------
extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "myst_parser",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
templates_path = ["_templates"]
exclude_patterns = [
    "_build",
    "Thumbs.db",
    ".DS_Store",
    "auto_examples/*.ipynb",
    "auto_examples/*.py",
    "auto_examples/*.zip",
    # sections of reproducing.md, included there (not pages of their own)
    "reproduce/*",
    # the measured tables of many_attributes.md, included there
    "many_attributes_results.md",
]
default_role = "literal"
nitpicky = False

# -- autodoc / autosummary / numpydoc -----------------------------------------
autosummary_generate = True
autosummary_imported_members = False
autodoc_typehints = "none"
# The class template (docs/_templates/autosummary/class.rst) lists members
# itself; numpydoc's own member tables would point at pages that do not exist.
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False


def _defining_module(obj):
    """Module that defines a class member (function, property, descriptor)."""
    for candidate in (
        getattr(obj, "__objclass__", None),
        getattr(obj, "fget", None),
        getattr(obj, "__func__", None),
        obj,
    ):
        module = getattr(candidate, "__module__", None)
        if isinstance(module, str):
            return module
    return None


def _skip_foreign_members(app, what, name, obj, skip, options):
    """Document only the members a class defines in sklearn_uldp.

    Members inherited from scikit-learn (``get_params``, ``set_output``, ...),
    numpy (``Reports`` is an ndarray) or builtins are documented upstream;
    their docstrings also reference labels that only exist in those projects.
    """
    if what not in {"class", "exception"}:
        return None
    module = _defining_module(obj)
    if module is None or module.startswith("sklearn_uldp"):
        return None
    return True


# -- intersphinx -----------------------------------------------------------------
# Inventories are written from the installed packages (docs/_ext), so links to
# scikit-learn, numpy, scipy and pandas resolve without a network.
intersphinx_mapping = write_inventories(Path(__file__).parent / "_build" / "_inventories")
intersphinx_disabled_reftypes = ["std:doc"]

# -- MyST (Markdown pages) ------------------------------------------------------
myst_enable_extensions = ["dollarmath", "colon_fence", "deflist"]
myst_heading_anchors = 3

# -- sphinx-gallery ------------------------------------------------------------
sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "backreferences_dir": "gen_modules/backreferences",
    "doc_module": ("sklearn_uldp",),
    "reference_url": {"sklearn_uldp": None},
    "matplotlib_animations": False,
    "remove_config_comments": True,
    "show_memory": False,
    "min_reported_time": 1,
    # Keep the build offline and deterministic.
    "download_all_examples": False,
}

# -- HTML ----------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"sklearn-uldp {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc", "sourcelink"],
}
html_static_path = ["_static"]
html_css_files = ["custom.css"]
html_show_sourcelink = True


def setup(app):
    app.connect("autodoc-skip-member", _skip_foreign_members)
