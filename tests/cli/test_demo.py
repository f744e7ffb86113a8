"""Tests of the ``demo`` command and of :func:`sklearn_uldp.cli._demo.run_demo`."""

import math
import shutil
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from _repo import subprocess_env

from sklearn_uldp.cli import main
from sklearn_uldp.cli._demo import (
    ESTIMATOR_LABELS,
    MECHANISM_LABELS,
    format_results,
    run_demo,
)

EPSILONS = [1.0, math.log(625)]
# Small enough to keep the module fast, large enough that the ranking of the
# mechanisms is stable (checked on 12 seeds: uRR/uRAP TV <= 0.81 x RR/RAPPOR).
N_USERS = 3000


@pytest.fixture(scope="module")
def results():
    return run_demo(N_USERS, EPSILONS, random_state=0)


def test_table_shape(results):
    assert isinstance(results, pd.DataFrame)
    assert results.shape == (len(EPSILONS) * len(MECHANISM_LABELS), 3)
    assert results.columns.tolist() == ["emp", "emp+thr", "EM"]
    assert list(ESTIMATOR_LABELS) == ["emp", "emp+thr", "EM"]
    assert results.index.names == ["epsilon", "mechanism"]
    assert results.index.get_level_values("epsilon").unique().tolist() == EPSILONS
    assert results.index.get_level_values("mechanism")[:5].tolist() == [
        "RR",
        "RAPPOR",
        "uRR",
        "uRAP",
        "no privacy",
    ]
    assert np.isfinite(results.to_numpy()).all()
    assert (results.to_numpy() >= 0).all()
    assert results.attrs["n_users"] == N_USERS
    assert results.attrs["n_categories"] == 625
    assert results.attrs["n_sensitive"] == 15


def test_utility_optimized_beat_ldp(results):
    for eps in EPSILONS:
        block = results.loc[eps]
        for estimator in ESTIMATOR_LABELS:
            assert block.loc["uRR", estimator] < block.loc["RR", estimator]
            assert block.loc["uRAP", estimator] < block.loc["RAPPOR", estimator]


def test_no_privacy_is_the_floor(results):
    # Without noise every estimator returns the users' empirical distribution
    # (TV = sampling error only), whatever epsilon.
    floor = results.xs("no privacy", level="mechanism")
    assert np.allclose(floor.to_numpy(), floor.to_numpy()[0, 0])
    private = results.drop(index="no privacy", level="mechanism")
    assert (private.to_numpy() >= floor.to_numpy()[0, 0] * 0.9).all()


def test_reproducible_and_seeded():
    first = run_demo(1000, [2.0], random_state=7)
    again = run_demo(1000, [2.0], random_state=7)
    pd.testing.assert_frame_equal(first, again, check_exact=True)
    other = run_demo(1000, [2.0], random_state=8)
    assert not np.allclose(other.to_numpy(), first.to_numpy())


def test_independent_streams(monkeypatch):
    # Each (mechanism, epsilon) gets its own generator from spawn_generators.
    import sklearn_uldp.cli._demo as demo
    import sklearn_uldp.utils as utils

    seen = []
    real_make = demo._make_mechanism

    def spy(label, epsilon, categories, sensitive, rng):
        seen.append(rng)
        return real_make(label, epsilon, categories, sensitive, rng)

    calls = []
    real_spawn = utils.spawn_generators

    def spawn(random_state, n):
        calls.append(n)
        return real_spawn(random_state, n)

    monkeypatch.setattr(demo, "_make_mechanism", spy)
    monkeypatch.setattr(utils, "spawn_generators", spawn)
    run_demo(300, [1.0, 2.0], random_state=0)
    generators = [g for g in seen if g is not None]
    assert calls == [4 * 2]
    assert len(generators) == 4 * 2
    assert len({id(g) for g in generators}) == 4 * 2


def test_format_results(results):
    text = format_results(results)
    assert "epsilon = 1" in text
    assert "(= ln 625)" in text
    for label in MECHANISM_LABELS + ESTIMATOR_LABELS:
        assert label in text


@pytest.mark.parametrize(
    "kwargs, match",
    [({"epsilons": [0.0]}, "epsilon"), ({"epsilons": []}, "epsilon"), ({"n_users": 0}, "n_users")],
)
def test_run_demo_rejects_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        run_demo(**{"n_users": 100, "epsilons": [1.0], **kwargs})


# ------------------------------------------------------------------ command line
def test_python_m_demo_help():
    proc = subprocess.run(
        [sys.executable, "-m", "sklearn_uldp", "demo", "--help"],
        capture_output=True,
        text=True,
        env=subprocess_env(),
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    for option in ("--n-users", "--epsilon", "--random-state", "--plot", "--no-plot"):
        assert option in proc.stdout


def test_main_demo_no_plot(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code = main(["demo", "--n-users", "1500", "--epsilon", "2", "--no-plot"])
    out = capsys.readouterr().out
    assert code == 0
    assert "epsilon = 2" in out
    for label in ("RR", "RAPPOR", "uRR", "uRAP", "no privacy", "emp+thr", "EM"):
        assert label in out
    assert not list(tmp_path.iterdir())  # --no-plot writes nothing


def test_main_demo_writes_plot(capsys, tmp_path):
    pytest.importorskip("matplotlib")
    path = tmp_path / "demo.png"
    code = main(
        [
            "demo",
            "--n-users",
            "1500",
            "--epsilon",
            "0.5",
            "2",
            "--random-state",
            "3",
            "--plot",
            str(path),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert path.is_file() and path.stat().st_size > 0
    assert f"Plot written to {path}" in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["demo", "--epsilon", "-1"], "epsilon must be a finite number > 0"),
        (["demo", "--epsilon", "abc"], "epsilon must be a finite number > 0"),
        (["demo", "--n-users", "0"], "expected a positive integer"),
        (["demo", "--random-state", "-3"], "non-negative integer"),
        (["demo", "--plot", "a.png", "--no-plot"], "not allowed with"),
        (["demo", "--bogus"], "unrecognized arguments: --bogus"),
    ],
)
def test_main_bad_option_exits_2(argv, message, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    assert message in capsys.readouterr().err


def test_main_missing_plot_folder_exits_2(capsys, tmp_path):
    pytest.importorskip("matplotlib")
    target = tmp_path / "missing" / "demo.png"
    code = main(["demo", "--n-users", "100", "--plot", str(target)])
    err = capsys.readouterr().err
    assert code == 2
    assert "does not exist" in err and "demo: error" in err


def test_python_m_bad_option_exit_code():
    proc = subprocess.run(
        [sys.executable, "-m", "sklearn_uldp", "demo", "--n-users", "many"],
        capture_output=True,
        text=True,
        env=subprocess_env(),
        timeout=120,
    )
    assert proc.returncode == 2
    assert "argument --n-users: expected a positive integer, got 'many'" in proc.stderr


@pytest.mark.skipif(shutil.which("sklearn-uldp") is None, reason="console script not installed")
def test_console_script_help():
    proc = subprocess.run(
        ["sklearn-uldp", "demo", "--help"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert "--n-users" in proc.stdout


# ------------------------------------------------- files and explanations
def test_demo_never_replaces_the_default_plot_unasked(capsys, tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    monkeypatch.chdir(tmp_path)
    argv = ["demo", "--n-users", "300", "--epsilon", "1"]
    # A fresh folder: the plot is written under the documented name.
    assert main(argv) == 0
    first = capsys.readouterr().out
    plot = tmp_path / "uldp_demo.png"
    assert plot.is_file() and "Plot written to" in first
    # A second run (the README's command again) works, prints its table and
    # keeps the existing file, saying so.
    plot.write_bytes(b"my own figure")
    assert main(argv) == 0
    second = capsys.readouterr().out
    assert "uRR" in second and "epsilon = 1" in second
    assert plot.read_bytes() == b"my own figure"
    assert "already exists" in second and "--overwrite" in second
    assert sorted(p.name for p in tmp_path.iterdir()) == ["uldp_demo.png"]
    # Replaced only when asked.
    assert main([*argv, "--overwrite"]) == 0
    assert plot.read_bytes() != b"my own figure"


def test_demo_explicit_existing_plot_is_an_error_unless_overwrite(capsys, tmp_path):
    pytest.importorskip("matplotlib")
    plot = tmp_path / "mine.png"
    plot.write_bytes(b"keep me")
    code = main(["demo", "--n-users", "300", "--epsilon", "1", "--plot", str(plot)])
    captured = capsys.readouterr()
    assert code == 2
    assert "already exists" in captured.err and "--overwrite" in captured.err
    assert "uRR" not in captured.out  # refused before computing
    assert plot.read_bytes() == b"keep me"
    code = main(["demo", "--n-users", "300", "--epsilon", "1", "--plot", str(plot), "--overwrite"])
    assert code == 0 and plot.read_bytes() != b"keep me"
    code = main(["demo", "--n-users", "300", "--plot", str(tmp_path / "p.xyz")])
    assert code == 2 and "Cannot write the plot" in capsys.readouterr().err


def test_demo_help_says_what_it_writes(capsys):
    with pytest.raises(SystemExit):
        main(["demo", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--overwrite" in text
    assert "uldp_demo.png" in text and "exist" in text


def test_demo_explains_tv_above_one(capsys, tmp_path):
    code = main(["demo", "--n-users", "1500", "--epsilon", "0.5", "--no-plot"])
    out = capsys.readouterr().out
    assert code == 0
    emp_rr = float(next(line.split()[1] for line in out.splitlines() if line.startswith("RR ")))
    assert emp_rr > 1  # the raw estimate is far from a distribution here
    note = " ".join(out.split("\n\n")[-2:])
    note = " ".join(note.split())
    assert "not bounded by 1" in note and "negative entries" in note
    assert "EM" in note and "emp+thr" in note


def test_demo_says_one_user(capsys):
    assert main(["demo", "--n-users", "1", "--epsilon", "1", "--no-plot"]) == 0
    assert "demo: 1 user on" in capsys.readouterr().out


def test_uninformative_cells_are_marked():
    # At epsilon = 0.1, RR's reports show no significant category: emp+thr
    # and EM are exactly uniform (identical cells that looked like a bug).
    results = run_demo(n_users=3000, epsilons=[0.1], random_state=0)
    assert (0.1, "RR", "emp+thr") in results.attrs["uninformative"]
    assert (0.1, "no privacy", "EM") not in results.attrs["uninformative"]
    text = format_results(results)
    rr = next(line for line in text.splitlines() if line.startswith("RR "))
    assert rr.count(" *") == 3
    assert "* uninformative: no category of these reports is significantly" in text
