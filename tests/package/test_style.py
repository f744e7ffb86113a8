"""The source tree stays formatted and lint-clean (ruff, configured in pyproject.toml).

The formatter was applied once to the whole tree; this keeps it applied, so
a contributor's diff shows their change and not a reformatting of it.
"""

import shutil
import subprocess
import sys

import pytest
from _repo import REPO_ROOT

PATHS = ["sklearn_uldp", "tests", "benchmarks", "examples", "docs"]


def _ruff():
    try:
        import ruff  # noqa: F401  (the wheel ships the binary)
    except ImportError:
        pytest.skip("ruff is not installed (pip install -e '.[test]')")
    exe = shutil.which("ruff")
    return [exe] if exe else [sys.executable, "-m", "ruff"]


@pytest.mark.parametrize(
    "command",
    [["format", "--check", "--diff"], ["check", "--output-format", "concise"]],
    ids=["format", "lint"],
)
def test_ruff(command):
    if not (REPO_ROOT / "pyproject.toml").exists():
        pytest.skip("not run from a source checkout")
    result = subprocess.run(
        [*_ruff(), *command, *PATHS],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    fix = "ruff format" if command[0] == "format" else "ruff check --fix"
    assert result.returncode == 0, (
        f"`ruff {' '.join(command)}` found problems; run `{fix} {' '.join(PATHS)}`:\n"
        + result.stdout[-4000:]
        + result.stderr[-2000:]
    )
