"""Every gallery example runs as a script (the docs build does not run them).

They run in this process, as sphinx-gallery runs them (``runpy``, as
``__main__``, in a scratch directory, with the Agg backend): a subprocess
per example spent more time importing the package than running most of
them. Global state an example could leave behind (warning filters,
scikit-learn's configuration, open figures) is restored after each; the
examples draw from their own seeded generators, never numpy's global one.
"""

import contextlib
import io
import runpy
import warnings
from pathlib import Path

import pytest
import sklearn

EXAMPLES = sorted((Path(__file__).parents[2] / "examples").glob("*.py"))


@pytest.mark.slow
@pytest.mark.parametrize("script", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_runs(script, tmp_path, monkeypatch):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("sys.argv", [str(script)])
    out = io.StringIO()
    try:
        with (
            warnings.catch_warnings(),
            sklearn.config_context(),
            contextlib.redirect_stdout(out),
        ):
            # plt.show() on Agg only says it cannot show.
            warnings.filterwarnings("ignore", message=".*non-interactive.*cannot be shown")
            runpy.run_path(str(script), run_name="__main__")
    finally:
        plt.close("all")
    assert out.getvalue().strip(), "an example should print what it shows"


def test_examples_exist():
    assert len(EXAMPLES) >= 7
