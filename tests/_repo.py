"""The checkout the tests run from, and subprocesses that import it.

Import by name from any folder under tests/ (``from _repo import REPO_ROOT``):
pyproject.toml puts tests/ on ``sys.path``. A test that locates files through
``REPO_ROOT`` keeps working wherever its file moves under tests/.
"""

import os
from pathlib import Path

#: The repository root (pyproject.toml, docs/, examples/, benchmarks/, .ci/).
REPO_ROOT = Path(__file__).resolve().parents[1]


def subprocess_env(**extra):
    """``os.environ`` with this checkout first on PYTHONPATH, plus ``extra``.

    A ``python -m sklearn_uldp`` or ``python -c`` subprocess then imports the
    package from this checkout, whatever the interpreter has installed.
    """
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), *filter(None, [env.get("PYTHONPATH")])])
    env.update(extra)
    return env
