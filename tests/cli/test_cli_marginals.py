"""``privatize --strategy marginals`` and ``estimate [--marginal A,B]`` on the command line."""

import json

import numpy as np
import pandas as pd
import pytest

from sklearn_uldp.cli import main

N = 20_000


def _run(argv, capsys):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def table(tmp_path):
    # b follows a in 70% of rows: the pair is far from independence
    rng = np.random.default_rng(0)
    a = rng.choice(["x", "y", "z"], N)
    b = np.where(rng.random(N) < 0.7, np.where(a == "x", "u", "v"), rng.choice(["u", "v"], N))
    frame = pd.DataFrame({"a": a, "b": b, "c": rng.integers(0, 3, N)})
    path = tmp_path / "t.csv"
    frame.to_csv(path, index=False)
    return frame, path


DOMAINS = ["--categories", "a=x,y,z", "--categories", "b=u,v", "--categories", "c=0..2"]


def _privatize(path, out, capsys, *options):
    argv = ["privatize", path, "-o", out, "--columns", "a", "b", "c", "--mechanism", "rr"]
    argv += ["--epsilon", "2", "--strategy", "marginals", *DOMAINS, "--no-progress"]
    return _run([*argv, "--random-state", "3", *options], capsys)


def _estimate(reports, out, capsys, *options):
    argv = ["estimate", reports, "--spec", f"{reports}.spec.json", "-o", out, "--no-progress"]
    return _run([*argv, *options], capsys)


def test_privatize_writes_marginal_reports_and_their_spec(table, tmp_path, capsys):
    _, path = table
    out = tmp_path / "r.csv"
    code, stdout, err = _privatize(path, out, capsys, "--chunksize", "7000")
    assert code == 0, err
    assert "epsilon = 2" in stdout
    reports = pd.read_csv(out)
    assert list(reports.columns) == ["marginal", "report"] and len(reports) == N
    assert set(reports["marginal"]) == {0, 1, 2}
    spec = json.loads((tmp_path / "r.csv.spec.json").read_text())
    assert spec["strategy"]["name"] == "marginals"
    assert spec["strategy"]["marginals"] == [["a", "b"], ["a", "c"], ["b", "c"]]
    assert spec["marginals"]["domains"][2] == [0, 1, 2]  # integer column stays integer
    assert spec["reports"]["n_rows"] == N
    assert not list(tmp_path.glob("*.part*"))


def test_estimate_one_way_and_a_pair_with_intervals(table, tmp_path, capsys):
    frame, path = table
    _privatize(path, tmp_path / "r.csv", capsys)
    code, stdout, err = _estimate(tmp_path / "r.csv", tmp_path / "e.csv", capsys)
    assert code == 0, err
    one_way = pd.read_csv(tmp_path / "e.csv")
    assert list(one_way.columns) == ["column", "category", "estimate", "ci_lower", "ci_upper"]
    assert one_way.groupby("column")["estimate"].sum().round(6).eq(1).all()
    code, stdout, err = _estimate(
        tmp_path / "r.csv", tmp_path / "m.csv", capsys, "--marginal", "a,b", "--chunksize", "3000"
    )
    assert code == 0, err
    pair = pd.read_csv(tmp_path / "m.csv")
    assert list(pair.columns) == ["a", "b", "estimate", "ci_lower", "ci_upper"]
    truth = pd.crosstab(frame["a"], frame["b"], normalize=True).stack()
    got = pair.set_index(["a", "b"])["estimate"]
    # independence is 0.23 away in TV; a third of 20,000 users at epsilon = 2
    # estimates the six cells to a few hundredths
    assert 0.5 * np.abs(got - truth.reindex(got.index)).sum() < 0.06
    inside = (pair["ci_lower"].to_numpy() <= truth.reindex(got.index).to_numpy()) & (
        truth.reindex(got.index).to_numpy() <= pair["ci_upper"].to_numpy()
    )
    assert inside.sum() >= 5


def test_unmeasured_set_from_maximum_entropy_says_so(table, tmp_path, capsys):
    _, path = table
    _privatize(path, tmp_path / "r.csv", capsys)
    code, _, err = _estimate(tmp_path / "r.csv", tmp_path / "m.csv", capsys, "--marginal", "a,b,c")
    assert code == 0, err
    assert "maximum-entropy" in err
    triple = pd.read_csv(tmp_path / "m.csv")
    assert len(triple) == 3 * 2 * 3 and triple["ci_lower"].isna().all()


def test_edited_spec_and_other_reports_are_refused(table, tmp_path, capsys):
    _, path = table
    _privatize(path, tmp_path / "r.csv", capsys)
    spec_path = tmp_path / "r.csv.spec.json"
    spec = json.loads(spec_path.read_text())
    spec["marginals"]["channels"][0]["epsilon"] = 4.0
    spec_path.write_text(json.dumps(spec))
    code, _, err = _estimate(tmp_path / "r.csv", tmp_path / "e.csv", capsys)
    assert code != 0 and "edited" in err and "Traceback" not in err
    assert not (tmp_path / "e.csv").exists()


@pytest.mark.parametrize(
    "options, fragment",
    [
        (["--marginal", "a,nope"], "--marginal names 2 columns"),
        (["--marginal", "a,a"], "distinct"),
        (["--columns", "a"], "--marginal A,B"),
    ],
)
def test_estimate_errors_are_clear(table, tmp_path, capsys, options, fragment):
    _, path = table
    _privatize(path, tmp_path / "r.csv", capsys)
    code, _, err = _estimate(tmp_path / "r.csv", tmp_path / "e.csv", capsys, *options)
    assert code == 2 and fragment in err and "Traceback" not in err
    assert "'x'" not in err and "'u'" not in err  # no user value


def test_privatize_errors_are_clear(table, tmp_path, capsys):
    _, path = table
    argv = ["privatize", path, "-o", tmp_path / "r.csv", "--columns", "a", "b"]
    argv += ["--mechanism", "rr", "--epsilon", "1", "--marginal-size", "2", *DOMAINS[:4]]
    code, _, err = _run(argv, capsys)
    assert code == 2 and "--strategy marginals" in err
    code, _, err = _privatize(path, tmp_path / "r.csv", capsys, "--marginal-size", "4")
    assert code == 2 and "marginal_size=4" in err and "Traceback" not in err
    assert not (tmp_path / "r.csv").exists()
    # a per-column spec has no marginals
    split = ["privatize", path, "-o", tmp_path / "r.csv", "--columns", "a", "b", "--mechanism"]
    split += ["rr", "--epsilon", "1", *DOMAINS[:4], "--no-progress", "--random-state", "1"]
    assert _run(split, capsys)[0] == 0
    code, _, err = _estimate(tmp_path / "r.csv", tmp_path / "e.csv", capsys, "--marginal", "a,b")
    assert code == 2 and "--strategy marginals" in err
