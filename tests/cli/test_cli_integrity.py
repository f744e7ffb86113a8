"""The command line loses no user and publishes nothing half-written.

Each test reproduces a failure of an earlier version: users on blank or
space-only CSV lines dropped without a word, reports that ``estimate`` read
back only in part, several runs all "succeeding" on one output, a killed run
leaving reports without their spec, and an edited spec accepted.
"""

import contextlib
import io
import json
import multiprocessing as mp
import os
import signal
import sys

import numpy as np
import pandas as pd
import pytest
from _cli import run

from sklearn_uldp.cli import main
from sklearn_uldp.cli._io import file_digest

RR = ["--mechanism", "rr", "--epsilon", "1", "--random-state", "none", "--no-progress"]


def estimate(rep, tmp_path, capsys, *extra, name="d.csv"):
    return run(
        ["estimate", rep, "--spec", f"{rep}.spec.json", "-o", tmp_path / name, "--no-progress"]
        + list(extra),
        capsys,
    )


# ------------------------------------------------------- every user counts
def test_blank_and_space_lines_are_users(tmp_path, capsys):
    # The file: 5 users, one on a blank line, one on a line " ".
    data = tmp_path / "b.csv"
    data.write_text("c\na\n\nb\n \na\n")
    rep = tmp_path / "r.csv"
    argv = ["privatize", data, "-o", rep, "--columns", "c", "--categories", "c=a,b", *RR]
    code, _, err = run(argv, capsys)
    assert code == 2 and "Traceback" not in err
    # The blank line is a missing value, named with its row and the CLI flag.
    assert "1 missing value (row 2" in err and "--missing category" in err
    assert "missing='category'" not in err
    assert not rep.exists()
    code, _, err = run([*argv, "--missing", "category"], capsys)
    # " " is a value, not a blank: not in the domain, shown with its spaces.
    assert code == 2 and "(row 4)" in err and "trailing spaces" in err
    code, out, err = run(
        [*argv[:4], "--columns", "c", *RR, "--missing", "category"], capsys
    )  # learned domain: " " is a category of its own
    assert code == 0, err
    assert "privatized 5 rows" in out and "only spaces" in err
    assert len(pd.read_csv(rep, keep_default_na=False)) == 5
    code, out, err = estimate(rep, tmp_path, capsys)
    assert code == 0, err
    assert "from 5 reports" in out and "all 5 rows privatize wrote" in out
    dist = pd.read_csv(tmp_path / "d.csv", keep_default_na=False)
    assert dist["category"].tolist() == [" ", "a", "b", "(missing)"]
    assert np.all(dist["estimate"] >= 0) and np.isclose(dist["estimate"].sum(), 1.0)


def test_blank_line_of_a_wider_table_is_a_missing_row(tmp_path, capsys):
    data = tmp_path / "t.csv"
    data.write_text("c,d\na,1\n\nb,2\na,\n")
    rep = tmp_path / "r.csv"
    base = ["privatize", data, "-o", rep, "--columns", "c", "d", *RR]
    code, _, err = run([*base, "--categories", "c=a,b", "--categories", "d=1,2"], capsys)
    assert code == 2 and "Column 'c' has 1 missing value (row 2" in err
    code, _, err = run(
        [*base, "--categories", "c=a,b", "--categories", "d=1,2", "--missing", "category"], capsys
    )
    assert code == 0, err
    spec = json.loads((tmp_path / "r.csv.spec.json").read_text())
    assert spec["reports"]["n_rows"] == 4
    assert spec["columns"]["c"]["categories"] == ["a", "b", "(missing)"]
    assert spec["columns"]["d"]["categories"] == [1, 2, "(missing)"]


def test_missing_label_only_where_missing_values_can_be(tmp_path, capsys):
    data = tmp_path / "t.csv"
    data.write_text("c,d\na,x\nb,\na,y\n")
    argv = ["privatize", data, "--columns", "c", "d", *RR, "--missing", "category"]
    cats = ["--categories", "c=a,b", "--categories", "d=x,y"]
    # Read from the data (with a warning): only d gets the label.
    code, _, err = run([*argv[:1], *argv[1:2], "-o", tmp_path / "a.csv", *argv[2:], *cats], capsys)
    assert code == 0, err
    assert "whether columns ['c', 'd'] have missing values was read from the data" in err
    spec = json.loads((tmp_path / "a.csv.spec.json").read_text())["columns"]
    assert spec["c"]["categories"] == ["a", "b"]
    assert spec["d"]["categories"] == ["x", "y", "(missing)"]
    # Declared in advance: no data-dependent domain, no warning about it.
    code, _, err = run(
        [
            *argv[:2],
            "-o",
            tmp_path / "b.csv",
            *argv[2:],
            "--categories",
            "c=a,b,(missing)",
            "--categories",
            "d=x,y,(missing)",
        ],
        capsys,
    )
    assert code == 0, err
    assert "read from the data" not in err
    spec = json.loads((tmp_path / "b.csv.spec.json").read_text())["columns"]
    assert spec["c"]["categories"][-1] == spec["d"]["categories"][-1] == "(missing)"


def test_estimate_never_skips_a_report_row(tmp_path, capsys):
    data = tmp_path / "t.csv"
    data.write_text("c\n" + "a\nb\n" * 50)
    rep = tmp_path / "r.csv"
    code, _, err = run(
        ["privatize", data, "-o", rep, "--columns", "c", "--categories", "c=a,b", *RR], capsys
    )
    assert code == 0, err
    lines = rep.read_text().splitlines(keepends=True)
    rep.write_text("".join(lines[:10] + ["\n"] + lines[10:]))  # a blank line
    code, _, err = estimate(rep, tmp_path, capsys, "--skip-report-check")
    assert code == 2 and "empty values" in err and "rows 1-101" in err


# -------------------------------------------------------- one atomic pair
def _race(argv, barrier, queue):
    out, err = io.StringIO(), io.StringIO()
    barrier.wait()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    queue.put((code, err.getvalue()))


@pytest.mark.skipif(sys.platform == "win32", reason="fork")
def test_racing_runs_exactly_one_succeeds(tmp_path, capsys):
    data = tmp_path / "t.csv"
    data.write_text("c\n" + "a\nb\nc\n" * 300)
    ctx = mp.get_context("fork")
    for round_ in range(16):
        rep = tmp_path / f"r{round_}.csv"
        argv = [
            "privatize",
            str(data),
            "-o",
            str(rep),
            "--columns",
            "c",
            "--categories",
            "c=a,b,c",
            *RR,
        ]
        barrier, queue = ctx.Barrier(3), ctx.Queue()
        procs = [ctx.Process(target=_race, args=(argv, barrier, queue)) for _ in range(3)]
        for p in procs:
            p.start()
        results = [queue.get(timeout=60) for _ in procs]
        for p in procs:
            p.join()
        codes = sorted(code for code, _ in results)
        assert codes == [0, 2, 2], results
        for code, err in results:
            if code:
                assert "nothing was written" in err and "Traceback" not in err
        # The spec published is the one written with the reports published.
        spec = json.loads((tmp_path / f"r{round_}.csv.spec.json").read_text())
        assert spec["reports"]["sha256"] == file_digest(rep)
    assert not [n for n in os.listdir(tmp_path) if n.endswith((".part", ".lock", ".commit"))]


def _die_during(when, argv):
    """Run ``main(argv)``, killed (SIGKILL) while writing or between the two moves."""
    from sklearn_uldp.cli import _io

    def kill():
        os.kill(os.getpid(), signal.SIGKILL)

    if when == "writing":
        write = _io.TableWriter.write
        _io.TableWriter.write = lambda self, frame: (write(self, frame), kill())
    else:
        link = os.link
        os.link = lambda src, dst: (link(src, dst), kill())
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        main([str(a) for a in argv])


def _killed_run(when, argv):
    proc = mp.get_context("fork").Process(target=_die_during, args=(when, argv))
    proc.start()
    proc.join(60)
    assert proc.exitcode == -signal.SIGKILL


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL, flock")
def test_killed_runs_leave_no_half_pair(tmp_path, capsys):
    data = tmp_path / "t.csv"
    data.write_text("c\n" + "a\nb\n" * 100)
    rep = tmp_path / "r.csv"
    argv = ["privatize", data, "-o", rep, "--columns", "c", "--categories", "c=a,b", *RR]
    argv += ["--chunksize", "50"]
    # Killed while writing: a part file, no output.
    _killed_run("writing", argv)
    dead = [tmp_path / n for n in os.listdir(tmp_path) if n.endswith(".part")]
    assert dead and not rep.exists()
    # The next run removes the dead run's part files, never a live run's
    # (whose lock is held; here, this process's).
    from sklearn_uldp.cli._io import OutputFiles

    live = OutputFiles({"reports file": rep}, overwrite=False).__enter__()
    code, _, err = run(argv, capsys)
    assert code == 0, err
    assert os.path.exists(live[rep]) and not any(p.exists() for p in dead)
    live.__exit__(RuntimeError, RuntimeError(), None)  # the live run fails: its part goes
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".part")]
    os.unlink(rep)
    os.unlink(f"{rep}.spec.json")
    # Killed between publishing the reports and the spec: the journal lets
    # the next command on these outputs finish the move.
    _killed_run("publishing", argv)
    assert rep.exists() and not (tmp_path / "r.csv.spec.json").exists()
    code, out, err = estimate(rep, tmp_path, capsys)
    assert code == 0, err
    assert "from 200 reports" in out
    assert (tmp_path / "r.csv.spec.json").exists()
    assert not [n for n in os.listdir(tmp_path) if n.endswith((".part", ".commit", ".lock"))]
    code, _, err = run(argv, capsys)
    assert code == 2 and "already exists" in err


# ------------------------------------------------------- the spec is bound
@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_edited_spec_is_refused(tmp_path, capsys, fmt):
    if fmt == "parquet":
        pytest.importorskip("pyarrow")
    data = tmp_path / "t.csv"
    data.write_text("c\n" + "a\nb\nb\n" * 100)
    rep = tmp_path / f"r.{fmt}"
    code, _, err = run(
        ["privatize", data, "-o", rep, "--columns", "c", "--categories", "c=a,b", *RR], capsys
    )
    assert code == 0, err
    spec_path = tmp_path / f"r.{fmt}.spec.json"
    spec = json.loads(spec_path.read_text())
    assert len(spec["reports"]["spec_sha256"]) == 64
    spec["columns"]["c"]["epsilon"] = 3.0  # the edit
    spec_path.write_text(json.dumps(spec))
    code, _, err = estimate(rep, tmp_path, capsys)
    assert code == 2 and "was edited after privatize wrote it" in err
    code, _, err = estimate(rep, tmp_path, capsys, "--skip-report-check")
    assert code == 2 and "was edited" in err  # not skippable
    if fmt == "parquet":
        # Recomputing the spec's digest is not enough: the reports carry it.
        from sklearn_uldp.cli._io import canonical_digest

        spec["reports"]["spec_sha256"] = canonical_digest(
            {k: v for k, v in spec.items() if k != "reports"}
        )
        spec_path.write_text(json.dumps(spec))
        code, _, err = estimate(rep, tmp_path, capsys)
        assert code == 2 and "were made with a spec whose parameters differ" in err


def test_spec_without_digest_needs_the_skip_option(tmp_path, capsys):
    data = tmp_path / "t.csv"
    data.write_text("c\n" + "a\nb\n" * 50)
    rep = tmp_path / "r.csv"
    argv = ["privatize", data, "-o", rep, "--columns", "c", "--categories", "c=a,b", *RR]
    assert run(argv, capsys)[0] == 0
    spec_path = tmp_path / "r.csv.spec.json"
    spec = json.loads(spec_path.read_text())
    del spec["reports"]["spec_sha256"]
    spec_path.write_text(json.dumps(spec))
    code, _, err = estimate(rep, tmp_path, capsys)
    assert code == 2 and "records no digest" in err and "--skip-report-check" in err
    assert estimate(rep, tmp_path, capsys, "--skip-report-check")[0] == 0


# ------------------------------------------------------ the collector's outputs
def _privatize_abcd_with_rr(data, tmp_path, capsys, epsilon, seed):
    """k-RR reports of column "c" of ``data`` over the domain a, b, c, d; the reports' path."""
    rep = tmp_path / "r.csv"
    argv = ["privatize", data, "-o", rep, "--columns", "c", "--categories", "c=a,b,c,d"]
    argv += ["--mechanism", "rr", "--epsilon", epsilon, "--random-state", seed]
    assert run(argv, capsys)[0] == 0
    return rep


def test_estimate_defaults_to_em_with_errors_and_intervals(tmp_path, capsys):
    rng = np.random.default_rng(0)
    data = tmp_path / "t.csv"
    pd.DataFrame({"c": rng.choice(list("abcd"), p=[0.6, 0.3, 0.1, 0.0], size=3000)}).to_csv(
        data, index=False
    )
    rep = _privatize_abcd_with_rr(data, tmp_path, capsys, epsilon="2", seed="3")
    code, out, err = estimate(rep, tmp_path, capsys)
    assert code == 0, err
    assert "estimator em, 95% intervals" in out
    dist = pd.read_csv(tmp_path / "d.csv")
    assert (
        " ".join(dist.columns) == "column category estimate sensitive std_error ci_lower ci_upper"
    )
    from sklearn_uldp import EMEstimator
    from sklearn_uldp.mechanisms import Channel

    spec = json.loads((tmp_path / "r.csv.spec.json").read_text())
    channel = Channel.from_dict(spec["columns"]["c"])
    reports = pd.read_csv(rep)[["c"]].to_numpy(dtype=object)
    em = EMEstimator(mechanism=channel).fit(reports)
    np.testing.assert_allclose(dist["estimate"], em.distribution_)
    np.testing.assert_allclose(dist[["ci_lower", "ci_upper"]], em.confidence_intervals(0.05))
    assert np.all(dist["ci_lower"] <= dist["ci_upper"]) and np.all(dist["std_error"] > 0)
    code, _, err = estimate(rep, tmp_path, capsys, "--alpha", "0.2", name="d80.csv")
    assert code == 0, err
    narrow = pd.read_csv(tmp_path / "d80.csv")
    width = lambda d: (d["ci_upper"] - d["ci_lower"]).to_numpy()  # noqa: E731
    assert np.all(width(narrow) <= width(dist)) and np.any(width(narrow) < width(dist))


def test_estimate_says_when_nothing_stands_out(tmp_path, capsys):
    data = tmp_path / "t.csv"
    data.write_text("c\n" + "a\nb\nc\nd\n" * 50)
    rep = _privatize_abcd_with_rr(data, tmp_path, capsys, epsilon="0.1", seed="1")
    code, _, err = estimate(rep, tmp_path, capsys)
    assert code == 0, err
    assert "column 'c': no category stands out from the noise in 200 reports" in err
    assert np.allclose(pd.read_csv(tmp_path / "d.csv")["estimate"], 0.25)
