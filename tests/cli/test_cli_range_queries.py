"""``privatize --range-queries`` and ``estimate --range`` on the command line."""

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sklearn_uldp.cli import main
from sklearn_uldp.cli._ranges import parse_range

N = 40_000


def _run(argv, capsys):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def table(tmp_path):
    rng = np.random.default_rng(0)
    age = rng.normal(40, 12, N)
    hours = 20 + 0.5 * age + rng.normal(0, 6, N)  # correlated with age
    frame = pd.DataFrame({"age": age, "hours": hours})
    frame.loc[:4, "age"] = 130.0  # five values above the bounds: clipped, counted
    path = tmp_path / "t.csv"
    frame.to_csv(path, index=False)
    return frame.clip(upper={"age": 100.0, "hours": 80.0}, axis=1), path


def _privatize(path, out, capsys, *options):
    argv = ["privatize", path, "-o", out, "--range-queries", "age,hours"]
    argv += ["--bounds", "age=0,100", "--bounds", "hours=0,80", "--epsilon", "2"]
    return _run([*argv, "--random-state", "4", "--no-progress", *options], capsys)


def test_privatize_then_answer_boxes_with_intervals(table, tmp_path, capsys):
    frame, path = table
    code, stdout, err = _privatize(path, tmp_path / "r.csv", capsys, "--chunksize", "15000")
    assert code == 0, err
    assert "HDG" in stdout and "epsilon = 2" in stdout
    assert "5 values of column 'age'" in err  # clipping counted, no value quoted
    spec = json.loads((tmp_path / "r.csv.spec.json").read_text())
    assert spec["strategy"]["name"] == "range_queries" and spec["reports"]["n_rows"] == N
    boxes = ["age=30:50,hours=30:50", "age=:30", "hours=45:"]
    argv = ["estimate", tmp_path / "r.csv", "--spec", tmp_path / "r.csv.spec.json"]
    argv += ["-o", tmp_path / "q.csv", "--no-progress"]
    for box in boxes:
        argv += ["--range", box]
    code, stdout, err = _run(argv, capsys)
    assert code == 0, err
    answers = pd.read_csv(tmp_path / "q.csv")
    assert answers["query"].tolist() == boxes
    a, h = frame["age"], frame["hours"]
    truth = np.array(
        [
            (a.between(30, 50) & h.between(30, 50)).mean(),
            (a <= 30).mean(),
            (h >= 45).mean(),
        ]
    )
    # The interval holds whatever the spread within the grids' cells (the
    # granularity chosen for 40,000 users cuts the 2-D box's edges), so the
    # truth is inside it; the answers of the 1-D boxes are within a few
    # hundredths (a box read on the wrong column is off by 0.1 or more).
    low, high = answers["ci_lower"].to_numpy(), answers["ci_upper"].to_numpy()
    assert ((low <= truth) & (truth <= high)).all(), (low, truth, high)
    assert np.abs(answers["estimate"].to_numpy() - truth)[1:].max() < 0.03


def test_smooth_granularity(table, tmp_path, capsys):
    from sklearn_uldp.marginals import choose_granularity

    _, path = table
    code, stdout, err = _privatize(path, tmp_path / "r.csv", capsys, "--granularity", "smooth")
    assert code == 0, err
    spec = json.loads((tmp_path / "r.csv.spec.json").read_text())
    g1, g2 = choose_granularity(N, 2.0, 2, exponent=4)[:2]
    assert (g1, g2) != choose_granularity(N, 2.0, 2)[:2]  # the test tells them apart
    assert spec["strategy"]["granularity"] == [g1, g2]
    assert f"granularity {g1}, {g2}" in stdout


def test_tdg_and_a_given_granularity(table, tmp_path, capsys):
    _, path = table
    code, stdout, err = _privatize(
        path, tmp_path / "r.parquet", capsys, "--range-method", "tdg", "--granularity", "8"
    )
    assert code == 0, err
    assert "TDG" in stdout
    spec = json.loads((tmp_path / "r.parquet.spec.json").read_text())
    assert spec["strategy"]["grids"] == [["age", "hours"]]


@pytest.mark.parametrize(
    "options, fragment",
    [
        (["--range-queries", "age,hours", "--bounds", "age=0,100"], "--bounds COL=LOW,HIGH"),
        (["--range-queries", "age,age", "--bounds", "age=0,100"], "distinct"),
        (["--columns", "age", "--range-method", "tdg"], "--range-queries"),
        (["--range-queries", "age", "--bounds", "age=0,100", "--granularity", "x"], "granularity"),
    ],
)
def test_privatize_errors(table, tmp_path, capsys, options, fragment):
    _, path = table
    argv = ["privatize", path, "-o", tmp_path / "r.csv", "--epsilon", "1", *options]
    code, _, err = _run(argv, capsys)
    assert code == 2 and fragment in err and "Traceback" not in err
    assert not (tmp_path / "r.csv").exists()


def test_estimate_errors(table, tmp_path, capsys):
    _, path = table
    _privatize(path, tmp_path / "r.csv", capsys)
    argv = ["estimate", tmp_path / "r.csv", "--spec", tmp_path / "r.csv.spec.json"]
    argv += ["-o", tmp_path / "q.csv", "--no-progress"]
    code, _, err = _run(argv, capsys)
    assert code == 2 and "--range" in err
    code, _, err = _run([*argv, "--range", "wage=1:2"], capsys)
    assert code == 2 and "not a range-query column" in err
    code, _, err = _run([*argv, "--range", "age=1-2"], capsys)
    assert code == 2 and "COL=LOW:HIGH" in err
    assert not (tmp_path / "q.csv").exists()


def test_parse_range():
    assert parse_range("a=1:2, b=:3", ["a", "b"]) == {"a": (1.0, 2.0), "b": (None, 3.0)}
    with pytest.raises(ValueError, match="each column once"):
        parse_range("a=1:2,a=3:4", ["a"])


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40))
def test_parse_range_refuses_any_other_text_clearly(text):
    # An outsider's text is a query or a ValueError saying the format, never
    # another exception, and the message never quotes the text (one of two
    # fixed messages).
    try:
        query = parse_range(text, ["a", "b"])
    except ValueError as exc:
        assert str(exc).startswith(("--range takes COL=LOW:HIGH", "--range names a column"))
        return
    assert set(query) <= {"a", "b"}
    for low, high in query.values():
        assert low is None or (isinstance(low, float) and low == low)  # not NaN
        assert high is None or (isinstance(high, float) and high == high)
