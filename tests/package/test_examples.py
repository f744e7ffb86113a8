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

import pytest
import sklearn
from _repo import REPO_ROOT

EXAMPLES = sorted((REPO_ROOT / "examples").glob("*.py"))
# Examples that take more than about 2 s run with the long runs (-m slow, a
# step of CI); the quick ones, and any new example, run every time.
LONG_EXAMPLES = {
    "plot_block_hadamard_synthetic",
    "plot_checkin_blocks",
    "plot_error_bars",
    "plot_heavy_hitters",
    "plot_location_demo",
    "plot_many_attributes",
    "plot_personalized_table1",
    "plot_search_theta_epsilon",
    "plot_ubd_comparison",
}


@pytest.mark.parametrize(
    "script",
    [
        pytest.param(p, id=p.stem, marks=pytest.mark.slow if p.stem in LONG_EXAMPLES else ())
        for p in EXAMPLES
    ],
)
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
