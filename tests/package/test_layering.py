"""The subpackages are layered: every import points down (or sideways).

A module may import from its own layer or a lower one, never from a higher
one, so the import graph reads top-down with no arrow back up and has no
cycle. Imports are read with ``ast`` from the source (module-level,
function-level and ``if TYPE_CHECKING:`` imports alike: each is a dependency
of the importing module on the imported one).

The layers, lowest first (docs/architecture.md, "Layers"):

0. ``utils``, ``exceptions``: no dependency on the rest of the package;
1. ``mechanisms``: the users' side and its channels;
2. ``privacy`` (checks and budgets on channels), ``metrics`` (losses and
   their closed forms), ``datasets`` (synthetic data);
3. ``estimators``: the collector's side, built on channels; ``numeric``:
   bounded numeric columns (their mechanisms and estimators);
   ``longitudinal``: collection over time (memoized mechanisms, their
   channels and their estimator, built on ``estimators``);
4. ``stats``: tests built on estimators; ``heavy_hitters``; ``learning``:
   models trained on reports (estimators, numeric mechanisms);
5. ``compose``, ``model_selection``, ``parallel``, ``plotting``: workflow;
   ``marginals``: marginal release (its oracles are chosen by
   ``model_selection``, one way);
6. ``cli``, ``__main__``, and the package's ``__init__`` (re-exports).

The one exemption: a *deprecated alias* of a name that moved up the layers
(``DEPRECATED_ALIASES``), imported inside the old package's module-level
``__getattr__`` (PEP 562) on first use, with a ``FutureWarning`` naming the
new import. Such an import runs only when a user asks for the old name;
nothing of the package uses it, and it goes when the alias goes.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest
from _repo import REPO_ROOT

PACKAGE_DIR = REPO_ROOT / "sklearn_uldp"

LAYERS = {
    "utils": 0,
    "exceptions": 0,
    "_version": 0,
    "mechanisms": 1,
    "privacy": 2,
    "metrics": 2,
    "datasets": 2,
    "estimators": 3,
    "numeric": 3,
    "longitudinal": 3,
    "stats": 4,
    "heavy_hitters": 4,
    "learning": 4,
    "robustness": 4,
    "compose": 5,
    "model_selection": 5,
    "parallel": 5,
    "plotting": 5,
    "marginals": 5,
    "_show_versions": 6,
    "cli": 6,
    "__main__": 6,
    "__init__": 7,
}


#: Deprecated aliases: (old package, the package its moved names live in).
#: The old package's ``__init__`` may import the new one inside its
#: module-level ``__getattr__``, and nowhere else.
DEPRECATED_ALIASES = {
    # LongitudinalGRR, ..., their channels: moved to sklearn_uldp.longitudinal
    ("sklearn_uldp.mechanisms", "sklearn_uldp.longitudinal"),
    # LongitudinalEstimator: moved to sklearn_uldp.longitudinal
    ("sklearn_uldp.estimators", "sklearn_uldp.longitudinal"),
}


def _part(module: str) -> str:
    """The top-level part of ``sklearn_uldp.<part>...`` (``__init__`` for the package)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE_DIR.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_module(name: str) -> bool:
    path = PACKAGE_DIR.parent.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module) of every import of the package in ``path``."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("sklearn_uldp"):
                continue
            if node.module is None or target == "sklearn_uldp":
                # ``from . import x`` / ``from .. import x``: x is a module, or
                # a name defined by the package's __init__.
                for a in node.names:
                    name = f"{target}.{a.name}"
                    found.append((node.lineno, name if _is_module(name) else target))
            else:
                found.append((node.lineno, target))
        elif isinstance(node, ast.Import):
            found.extend(
                (node.lineno, a.name) for a in node.names if a.name.startswith("sklearn_uldp")
            )
    return found


def _alias_lines(path: Path) -> set[int]:
    """Lines of the module-level ``__getattr__`` of a package's ``__init__``."""
    if path.name != "__init__.py":
        return set()
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return {
        line
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and node.name == "__getattr__"
        for line in range(node.lineno, node.end_lineno + 1)
    }


def _is_deprecated_alias(source: str, line: int, target: str, path: Path) -> bool:
    return (source, target) in DEPRECATED_ALIASES and line in _alias_lines(path)


@functools.cache  # parsed once for the tests below (a few seconds)
def _graph():
    """Every import of the package: (source, line, target, path), the
    deprecated aliases left out."""
    edges = []
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        source = _module_name(path)
        for line, target in _imports(path):
            if not _is_deprecated_alias(source, line, target, path):
                edges.append((source, line, target, path))
    return tuple(edges)


def test_every_part_of_the_package_has_a_layer():
    parts = {p.stem if p.is_file() else p.name for p in PACKAGE_DIR.iterdir()}
    parts = {p for p in parts if not p.startswith((".", "__pycache__")) and p != "py"}
    parts -= {"py", "spec.schema", "__pycache__"}
    code = {
        p.stem if p.suffix == ".py" else p.name
        for p in PACKAGE_DIR.iterdir()
        if p.suffix == ".py" or (p.is_dir() and (p / "__init__.py").is_file())
    }
    missing = sorted(code - set(LAYERS))
    assert not missing, f"Give these parts of the package a layer in LAYERS: {missing}"


def test_no_import_runs_back_up():
    upward = []
    for source, line, target, path in _graph():
        src, dst = _part(source), _part(target)
        if LAYERS[dst] > LAYERS[src]:
            rel = path.relative_to(PACKAGE_DIR.parent)
            upward.append(f"{rel}:{line} imports {target} (layer {dst} > {src})")
    assert not upward, (
        "Imports that run back up the layers (move the helper down to the layer "
        "that owns it):\n" + "\n".join(upward)
    )


def _cycles(graph: dict[str, set[str]]) -> list[str]:
    """One cycle (``a -> b -> a``) per back edge met in a depth-first walk."""
    cycles = []
    state: dict[str, int] = {}

    def visit(node, stack):
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append(" -> ".join(stack[stack.index(nxt) :] + [nxt]))
            elif nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    return cycles


def test_subpackages_import_no_cycle():
    # Same-layer imports are allowed, but not both ways: the graph of the
    # package's parts (subpackages and top-level modules) is acyclic.
    graph: dict[str, set[str]] = {}
    for source, _, target, _ in _graph():
        src, dst = _part(source), _part(target)
        if src != dst and dst in LAYERS:
            graph.setdefault(src, set()).add(dst)
    cycles = _cycles(graph)
    assert not cycles, "Import cycles between parts of the package:\n" + "\n".join(cycles)


def test_modules_of_a_subpackage_import_no_cycle():
    # Inside a subpackage too, a module's imports point one way: two modules
    # that need each other (even through an import inside a function) share
    # a piece that belongs in a third module below both (as
    # estimators/_significance.py is below _base.py and _empirical.py).
    graph: dict[str, set[str]] = {}
    for source, _, target, _ in _graph():
        if source != target and _part(source) == _part(target):
            graph.setdefault(source, set()).add(target)
    cycles = _cycles(graph)
    assert not cycles, (
        "Import cycles between modules of one subpackage (move the shared piece "
        "to a module both import):\n" + "\n".join(cycles)
    )


def test_a_cycle_between_two_modules_is_found():
    # The walk above reports a two-module cycle (the one issue 30 found
    # between estimators/_base.py and estimators/_empirical.py) and a longer one.
    graph = {"a._base": {"a._empirical"}, "a._empirical": {"a._base", "a._x"}, "a._x": set()}
    assert _cycles(graph) == ["a._base -> a._empirical -> a._base"]
    assert _cycles({"p": {"q"}, "q": {"r"}, "r": {"p"}}) == ["p -> q -> r -> p"]
    assert _cycles({"p": {"q"}, "q": set()}) == []


@pytest.mark.parametrize(
    "source, expected",
    [
        ("from ..estimators._base import as_channel", "sklearn_uldp.estimators._base"),
        ("from .. import __version__", "sklearn_uldp"),
        ("from .._version import __version__", "sklearn_uldp._version"),
        ("from . import _demo", "sklearn_uldp.cli._demo"),
        ("import sklearn_uldp.mechanisms", "sklearn_uldp.mechanisms"),
    ],
)
def test_imports_are_resolved(tmp_path, monkeypatch, source, expected):
    # The parser resolves relative imports against the module's package.
    fake = PACKAGE_DIR / "cli" / "_layering_probe.py"
    monkeypatch.setattr(Path, "read_text", lambda self, encoding=None: source)
    assert [t for _, t in _imports(fake)] == [expected]


def test_deprecated_aliases_are_imported_only_in_getattr():
    # Each exemption is used, and only inside the old package's __getattr__.
    used, elsewhere = set(), []
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        source = _module_name(path)
        for line, target in _imports(path):
            if (source, target) in DEPRECATED_ALIASES:
                if line in _alias_lines(path):
                    used.add((source, target))
                else:
                    rel = path.relative_to(PACKAGE_DIR.parent)
                    elsewhere.append(f"{rel}:{line} imports {target}")
    assert not elsewhere, "Deprecated aliases imported outside __getattr__:\n" + "\n".join(
        elsewhere
    )
    assert used == DEPRECATED_ALIASES, f"Unused exemptions: {DEPRECATED_ALIASES - used}"
