"""The documentation builds without warnings, covers the API, and its code runs."""

import importlib
import inspect
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from _repo import REPO_ROOT, subprocess_env

DOCS = REPO_ROOT / "docs"
README_TEST_COMMAND = 'pip install -e ".[test]" && python -m pytest'

# Modules whose public names (``__all__``) must appear in docs/api.rst.
API_MODULES = [
    "sklearn_uldp",
    "sklearn_uldp.mechanisms",
    "sklearn_uldp.estimators",
    "sklearn_uldp.privacy",
    "sklearn_uldp.metrics",
    "sklearn_uldp.datasets",
    "sklearn_uldp.utils",
    "sklearn_uldp.model_selection",
    "sklearn_uldp.compose",
    "sklearn_uldp.plotting",
    "sklearn_uldp.parallel",
    "sklearn_uldp.stats",
    "sklearn_uldp.exceptions",
    "sklearn_uldp.numeric",
    "sklearn_uldp.heavy_hitters",
    "sklearn_uldp.learning",
    "sklearn_uldp.longitudinal",
    "sklearn_uldp.marginals",
]

# Generated or build output inside docs/ that must not be copied.
_GENERATED = shutil.ignore_patterns(
    "_build", "gen_modules", "auto_examples", "sg_execution_times.rst", "__pycache__"
)


def _env():
    return subprocess_env(MPLBACKEND=os.environ.get("MPLBACKEND", "Agg"))


def test_sphinx_build_has_no_warnings(tmp_path):
    for module in ("sphinx", "numpydoc", "sphinx_gallery", "pydata_sphinx_theme", "myst_parser"):
        pytest.importorskip(module)
    # Build a copy, so that generated pages never land in the checkout and
    # concurrent runs do not collide.
    shutil.copytree(DOCS, tmp_path / "docs", ignore=_GENERATED)
    shutil.copytree(
        REPO_ROOT / "examples", tmp_path / "examples", ignore=shutil.ignore_patterns("__pycache__")
    )
    out = tmp_path / "build"
    # The "dummy" builder reads, cross-references and checks every page as
    # the HTML one does (a missing document, target or doctest directive is
    # the same warning) but writes no HTML: a quarter of the build's time.
    # The published HTML is built by ``sphinx -b html`` (docs/conf.py).
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "sphinx",
            "-b",
            "dummy",
            "-W",
            "--keep-going",
            "-q",
            "--no-color",
            str(tmp_path / "docs"),
            str(out),
            "-D",
            "plot_gallery=0",
        ],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=600,
    )
    problems = [
        line
        for line in proc.stderr.splitlines()
        if "WARNING" in line or "ERROR" in line or "Error" in line
    ]
    assert proc.returncode == 0, (
        "The documentation build failed (warnings are errors):\n"
        + "\n".join(problems or proc.stderr.splitlines()[-30:])
    )
    for page in (
        "index",
        "user_guide",
        "architecture",
        "api",
        "performance",
        "auto_examples/index",
        "auto_examples/plot_location_demo",
        "gen_modules/sklearn_uldp.mechanisms.UtilityOptimizedRR",
    ):
        assert (out / ".doctrees" / f"{page}.doctree").is_file(), page


def _documented_objects():
    """Objects listed in docs/api.rst (autosummary entries per currentmodule)."""
    text = (DOCS / "api.rst").read_text(encoding="utf-8")
    documented, module = set(), None
    in_autosummary = False
    for line in text.splitlines():
        if m := re.match(r"\.\. currentmodule:: (\S+)", line):
            module = m.group(1)
            in_autosummary = False
        elif line.startswith(".. autosummary::"):
            in_autosummary = True
        elif in_autosummary and re.match(r"   [A-Za-z_]\w*$", line):
            obj = getattr(importlib.import_module(module), line.strip())
            documented.add(id(obj))
        elif line and not line.startswith(" "):
            in_autosummary = False
    return documented


def test_api_reference_lists_every_public_name():
    documented = _documented_objects()
    missing = []
    for name in API_MODULES:
        module = importlib.import_module(name)
        for attr in module.__all__:
            obj = getattr(module, attr)
            if inspect.ismodule(obj):
                continue
            if not getattr(obj, "__module__", "").startswith("sklearn_uldp"):
                continue  # re-exported from elsewhere (e.g. sklearn's warnings)
            if id(obj) not in documented:
                missing.append(f"{name}.{attr}")
    assert not missing, (
        "Public names missing from docs/api.rst (add them to an autosummary "
        f"block of their subpackage): {missing}"
    )


@pytest.mark.parametrize(
    "page",
    [
        "README.md",
        "docs/user_guide.md",
        "docs/architecture.md",
        "docs/personalized.md",
        "docs/context_aware.md",
        "docs/workflow.md",
        "docs/audit.md",
        "docs/security.md",
        "docs/spec_format.md",
        "docs/choosing.md",
        "docs/estimator_choice.md",
        "docs/many_attributes.md",
        "docs/marginals.md",
        "docs/numerical.md",
        "docs/longitudinal.md",
        "docs/learning.md",
        "docs/frontier.md",
    ],
)
def test_markdown_code_blocks_run(page, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    text = (REPO_ROOT / page).read_text(encoding="utf-8")
    blocks = re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)
    assert blocks, f"no python code block in {page}"
    namespace = {"__name__": f"docs_{Path(page).stem}"}
    for i, block in enumerate(blocks):
        exec(compile(block, f"{page} (python block {i + 1})", "exec"), namespace)


def test_ci_runs_the_readme_test_command():
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    ci = (REPO_ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert README_TEST_COMMAND in readme.split("\n## ")[0]  # at the top
    assert 'pip install ".[plot]" && python -m sklearn_uldp demo' in readme
    assert README_TEST_COMMAND in ci
    assert os.access(REPO_ROOT / ".ci" / "run", os.X_OK)


def test_readme_links_work_from_pypi():
    # PyPI renders README.md without the repository around it: relative links
    # break there, so every link is absolute, and a docs-site link must name a
    # page the docs really build.
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)\s]+)\)", readme)
    relative = [t for t in targets if not re.match(r"https?://", t)]
    assert not relative, f"README links must be absolute (PyPI): {relative}"
    site = "https://sklearn-uldp.readthedocs.io/en/latest/"
    for target in targets:
        if target.startswith(site):
            page = target[len(site) :].split("#")[0].removesuffix(".html")
            sources = [REPO_ROOT / "docs" / f"{page}{ext}" for ext in (".md", ".rst")]
            if page == "auto_examples/index":
                sources = [REPO_ROOT / "examples" / "GALLERY_HEADER.rst"]
            assert any(s.exists() for s in sources), f"no docs page for {target}"
