"""The privatize / estimate / search subcommands."""

import gc
import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from _cli import estimate, privatize, run

from sklearn_uldp.cli import main
from sklearn_uldp.mechanisms import Channel

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
P_MARITAL = {"married": 0.5, "single": 0.4, "divorced": 0.1}


@pytest.fixture
def data(tmp_path):
    rng = np.random.default_rng(0)
    n = 6000
    df = pd.DataFrame(
        {
            "marital": rng.choice(list(P_MARITAL), p=list(P_MARITAL.values()), size=n),
            "region": rng.choice(["n", "s", "e", "w"], size=n),
            "age": rng.integers(1, 4, size=n),
        }
    )
    path = tmp_path / "data.csv"
    df.to_csv(path, index=False)
    return path, df


def test_privatize_then_estimate_roundtrip(data, tmp_path, capsys):
    path, df = data
    rep, spec = tmp_path / "rep.csv", tmp_path / "spec.json"
    code, out, err = run(
        [
            "privatize",
            path,
            "-o",
            rep,
            "--spec-out",
            spec,
            "--columns",
            "marital",
            "region",
            "--mechanism",
            "urap",
            "--epsilon",
            "2",
            "--sensitive",
            "marital=divorced",
            "--sensitive",
            "region=n",
            "--categories",
            "marital=married,single,divorced",
            "--categories",
            "region=n,s,e,w",
            "--random-state",
            "0",
            "--chunksize",
            "1000",
        ],
        capsys,
    )
    assert code == 0, err
    assert "each person spends epsilon = 4" in out
    reports = pd.read_csv(rep)
    assert len(reports) == len(df)
    assert list(reports.columns) == [
        "marital_married",
        "marital_single",
        "marital_divorced",
        "region_n",
        "region_s",
        "region_e",
        "region_w",
    ]
    written = json.loads(spec.read_text())
    ch = Channel.from_dict(written["columns"]["marital"])
    assert ch.name == "urap" and ch.epsilon == 2.0
    assert written["epsilon_per_person"] == 4.0
    # Chunks must not repeat noise: chunks of identical rows differ.
    assert not (reports.iloc[:1000].to_numpy() == reports.iloc[1000:2000].to_numpy()).all()

    dist, png = tmp_path / "dist.csv", tmp_path / "dist.png"
    code, out, err = estimate(rep, spec, dist, capsys, "--plot", png)
    assert code == 0, err
    res = pd.read_csv(dist)
    assert set(res.columns) == {"column", "category", "estimate", "sensitive"} | {
        "std_error",
        "ci_lower",
        "ci_upper",
    }
    marital = res[res["column"] == "marital"].set_index("category")["estimate"]
    for cat, p in P_MARITAL.items():
        assert marital[cat] == pytest.approx(p, abs=0.04)
    assert res.set_index(["column", "category"]).loc[("marital", "divorced"), "sensitive"]
    assert png.stat().st_size > 1000


def test_privatize_config_and_single_channel_spec(data, tmp_path, capsys):
    path, df = data
    conf = tmp_path / "conf.json"
    conf.write_text(
        json.dumps(
            {
                "random_state": 1,
                "columns": {
                    "age": {
                        "mechanism": "urr",
                        "epsilon": 3,
                        "categories": [1, 2, 3],
                        "sensitive": [3],
                    }
                },
            }
        )
    )
    rep = tmp_path / "rep.csv"
    code, out, err = run(["privatize", path, "-o", rep, "--config", conf, "--no-progress"], capsys)
    assert code == 0, err
    assert (tmp_path / "rep.csv.spec.json").exists()
    # A one-channel spec (Channel.to_json) with --columns works too.
    spec = json.loads((tmp_path / "rep.csv.spec.json").read_text())["columns"]["age"]
    single = tmp_path / "age.json"
    single.write_text(Channel.from_dict(spec).to_json())
    dist = tmp_path / "d.csv"
    code, out, err = run(
        [
            "estimate",
            rep,
            "--spec",
            single,
            "--columns",
            "age",
            "-o",
            dist,
            "--estimator",
            "em",
            "--no-progress",
        ],
        capsys,
    )
    assert code == 0, err
    est = pd.read_csv(dist)["estimate"].to_numpy()
    true = df["age"].value_counts(normalize=True).sort_index().to_numpy()
    assert np.abs(est - true).sum() < 0.06


def test_learned_domain_warns(data, tmp_path, capsys):
    path, _ = data
    code, out, err = privatize(
        path, tmp_path / "r.csv", "region", "rr", "1", capsys, "--no-progress"
    )
    assert code == 0
    assert "learned the categories" in err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--columns", "nope", "--mechanism", "rr", "--epsilon", "1"], "not in"),
        (
            ["--columns", "marital", "--mechanism", "urr", "--epsilon", "1"],
            "needs sensitive values",
        ),
        (
            [
                "--columns",
                "marital",
                "--mechanism",
                "rr",
                "--epsilon",
                "1",
                "--sensitive",
                "marital=divorced",
            ],
            "takes no sensitive",
        ),
        (["--columns", "marital", "--mechanism", "urr"], "--epsilon"),
        ([], "--columns"),
        (
            [
                "--columns",
                "marital",
                "--mechanism",
                "urr",
                "--epsilon",
                "1",
                "--sensitive",
                "divorced",
            ],
            "COLUMN=value1",
        ),
        (
            [
                "--columns",
                "marital",
                "--mechanism",
                "rr",
                "--epsilon",
                "1",
                "--categories",
                "marital=married,single",
            ],
            "unknown categor",
        ),
    ],
)
def test_privatize_errors(data, tmp_path, capsys, argv, message):
    path, _ = data
    code, out, err = run(
        ["privatize", path, "-o", tmp_path / "r.csv", "--no-progress", *argv], capsys
    )
    assert code == 2
    assert message in err and "Traceback" not in err


def test_file_errors(tmp_path, capsys):
    code, _, err = privatize(
        tmp_path / "missing.csv",
        tmp_path / "r.csv",
        "a",
        "rr",
        "1",
        capsys,
        "--categories",
        "a=x,y",
    )
    assert code == 2 and "does not exist" in err
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    code, _, err = run(
        ["estimate", tmp_path / "r.csv", "--spec", bad, "-o", tmp_path / "d.csv"],
        capsys,
    )
    assert code == 2 and "not valid JSON" in err
    bad.write_text(json.dumps({"hello": 1}))
    (tmp_path / "r.csv").write_text("x\na\n")
    code, _, err = run(
        ["estimate", tmp_path / "r.csv", "--spec", bad, "-o", tmp_path / "d.csv"],
        capsys,
    )
    assert code == 2 and "neither a channel spec" in err
    with pytest.raises(SystemExit) as exc:
        main(["privatize", "x.csv", "-o", "y.csv", "--epsilon", "-1"])
    assert exc.value.code == 2
    assert "expected a number > 0" in capsys.readouterr().err


def test_estimate_em_with_reports_on_disk_is_em_in_memory(data, tmp_path, capsys, monkeypatch):
    from sklearn_uldp.mechanisms import _bit_rows

    monkeypatch.setattr(_bit_rows, "_BLOCK_ROWS", 256)  # 6000 reports: 23 files
    path, _ = data
    rep, spec = tmp_path / "rep.csv", tmp_path / "spec.json"
    code, _, err = run(
        [
            "privatize",
            path,
            "-o",
            rep,
            "--spec-out",
            spec,
            "--columns",
            "region",
            "--mechanism",
            "rappor",
            "--epsilon",
            "1",
            "--categories",
            "region=n,s,e,w",
            "--random-state",
            "0",
            "--no-progress",
        ],
        capsys,
    )
    assert code == 0, err
    store = tmp_path / "store"
    store.mkdir()
    results = []
    for extra in ([], ["--report-store", store]):
        out_csv = tmp_path / f"dist{len(extra)}.csv"
        code, _, err = run(
            [
                "estimate",
                rep,
                "--spec",
                spec,
                "-o",
                out_csv,
                "--estimator",
                "em",
                "--chunksize",
                "500",
                "--no-progress",
                *extra,
            ],
            capsys,
        )
        assert code == 0, err
        results.append(pd.read_csv(out_csv))
    pd.testing.assert_frame_equal(results[0], results[1])
    gc.collect()
    assert list(store.iterdir()) == []  # the files went with the estimator
    code, _, err = estimate(
        rep,
        spec,
        tmp_path / "d.csv",
        capsys,
        "--estimator",
        "em",
        "--report-store",
        tmp_path / "missing",
    )
    assert code == 2 and "existing directory" in err


def test_estimate_rejects_foreign_reports(data, tmp_path, capsys):
    path, _ = data
    spec = tmp_path / "s.json"
    from sklearn_uldp.mechanisms import RandomizedResponseChannel

    spec.write_text(RandomizedResponseChannel(["a", "b"], 1.0).to_json())
    code, _, err = run(
        [
            "estimate",
            path,
            "--spec",
            spec,
            "--columns",
            "marital",
            "-o",
            tmp_path / "d.csv",
            "--no-progress",
        ],
        capsys,
    )
    assert code == 2 and "not outputs of" in err


def test_search(data, tmp_path, capsys):
    path, _ = data
    res, png = tmp_path / "res.csv", tmp_path / "curve.png"
    code, out, err = run(
        [
            "search",
            path,
            "--column",
            "marital",
            "--sensitive",
            "divorced",
            "--categories",
            "married,single,divorced",
            "--mechanisms",
            "urr",
            "urap",
            "--epsilon",
            "0.5",
            "2",
            "--n-repeats",
            "2",
            "--target",
            "0.05",
            "-o",
            res,
            "--plot",
            png,
            "--no-progress",
        ],
        capsys,
    )
    assert code == 0, err
    assert "smallest epsilon reaching tv <= 0.05" in out
    table = pd.read_csv(res)
    assert len(table) == 4 and {"mean_loss", "std_loss", "epsilon"} <= set(table.columns)
    assert png.exists()
    code, _, err = run(["search", path, "--column", "marital", "--mechanisms", "urr"], capsys)
    assert code == 2 and "needs --sensitive" in err


@pytest.mark.parametrize("command", ["privatize", "estimate", "search"])
def test_help(command, capsys):
    with pytest.raises(SystemExit) as exc:
        main([command, "--help"])
    assert exc.value.code == 0
    assert f"sklearn-uldp {command}" in capsys.readouterr().out


def test_console_entry_point_subprocess():
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run(
        [sys.executable, "-m", "sklearn_uldp", "--help"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 0
    for command in ("privatize", "estimate", "search"):
        assert command in proc.stdout
    proc = subprocess.run(
        [sys.executable, "-m", "sklearn_uldp", "--version"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    import sklearn_uldp

    assert proc.returncode == 0
    assert proc.stdout.strip() == f"sklearn-uldp {sklearn_uldp.__version__}"


def test_parquet_without_engine_is_a_clear_error(data, tmp_path, capsys, monkeypatch):
    # Without pyarrow (a None entry in sys.modules makes its import fail).
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    path, _ = data
    code, _, err = privatize(
        path,
        tmp_path / "r.parquet",
        "region",
        "rr",
        "1",
        capsys,
        "--categories",
        "region=n,s,e,w",
        "--no-progress",
    )
    assert code == 2 and "Parquet needs pyarrow" in err and "Traceback" not in err
    assert os.listdir(tmp_path) == ["data.csv"]  # nothing written


def test_parquet_roundtrip(data, tmp_path, capsys):
    pytest.importorskip("pyarrow")
    path, df = data
    pq = tmp_path / "data.parquet"
    df.to_parquet(pq, index=False)
    rep = tmp_path / "rep.parquet"
    code, _, err = privatize(
        pq,
        rep,
        "marital",
        "urr",
        "3",
        capsys,
        "--sensitive",
        "marital=divorced",
        "--categories",
        "marital=married,single,divorced",
        "--chunksize",
        "2500",
        "--random-state",
        "0",
        "--no-progress",
    )
    assert code == 0, err
    assert len(pd.read_parquet(rep)) == len(df)
    dist = tmp_path / "d.csv"
    code, _, err = estimate(rep, tmp_path / "rep.parquet.spec.json", dist, capsys)
    assert code == 0, err
    est = pd.read_csv(dist).set_index("category")["estimate"]
    assert est["divorced"] == pytest.approx(0.1, abs=0.03)


def test_privatize_with_optimal_theta(data, tmp_path, capsys):
    import json

    from sklearn_uldp.model_selection import optimal_theta

    path, _ = data
    rep, spec = tmp_path / "rep.csv", tmp_path / "spec.json"
    argv = [
        "privatize",
        path,
        "-o",
        rep,
        "--spec-out",
        spec,
        "--columns",
        "marital",
        "--mechanism",
        "urap",
        "--theta",
        "optimal",
        "--epsilon",
        "1",
        "--sensitive",
        "marital=divorced",
        "--categories",
        "marital=married,single,divorced",
        "--random-state",
        "0",
    ]
    code, out, err = run(argv, capsys)
    assert code == 0, err
    column = json.loads(spec.read_text())["columns"]["marital"]
    assert column["theta"] == pytest.approx(optimal_theta(1.0, [False, False, True]))
    # 'optimal' is only meaningful for urap: a clear error for rappor ...
    rappor = [
        "privatize",
        path,
        "-o",
        rep,
        "--columns",
        "marital",
        "--mechanism",
        "rappor",
        "--theta",
        "optimal",
        "--epsilon",
        "1",
        "--categories",
        "marital=married,single,divorced",
        "--overwrite",
    ]
    code, out, err = run(rappor, capsys)
    assert code == 2 and "urap" in err
    # ... and a theta outside (0, 1) is refused by the parser.
    with pytest.raises(SystemExit) as exc:
        main([str(a) for a in argv[:11] + ["1.5"] + argv[12:]])
    assert exc.value.code == 2
    assert "(0, 1)" in capsys.readouterr().err


def test_help_shows_each_default_once(capsys):
    with pytest.raises(SystemExit):
        main(["privatize", "--help"])
    text = capsys.readouterr().out
    assert "(default: None)" not in text
    assert text.count("(default:") == len(
        set(line.strip() for line in text.splitlines() if "(default:" in line)
    )


# ------------------------------------------------ integer columns and ranges
@pytest.fixture
def visits(tmp_path):
    """An integer column 0..11; with --chunksize 50 only some chunks miss values."""
    rng = np.random.default_rng(1)
    values = rng.integers(0, 12, size=400).astype(float)
    values[[7, 260]] = np.nan  # pandas writes the column as 3.0, ..., and ''
    path = tmp_path / "visits.csv"
    pd.DataFrame({"hospvis": values}).to_csv(path, index=False)
    return path


def spec_categories(path):
    return json.loads(path.read_text())["columns"]["hospvis"]["categories"]


def test_learned_integer_domain_stays_integer_and_numeric(visits, tmp_path, capsys):
    rep = tmp_path / "r.csv"
    code, _, err = privatize(
        visits,
        rep,
        "hospvis",
        "rr",
        "1",
        capsys,
        "--missing",
        "category",
        "--chunksize",
        "50",
        "--random-state",
        "0",
        "--no-progress",
    )
    assert code == 0, err
    # Integers in numeric order (not "0", "1", "10", "11", "2" nor "1.0"),
    # then the missing label.
    assert spec_categories(tmp_path / "r.csv.spec.json") == [*range(12), "(missing)"]
    reports = pd.read_csv(rep, dtype=str)["hospvis"]
    assert set(reports) <= {str(v) for v in range(12)} | {"(missing)"}
    dist = tmp_path / "d.csv"
    code, _, err = estimate(rep, tmp_path / "r.csv.spec.json", dist, capsys)
    assert code == 0, err
    assert pd.read_csv(dist, dtype=str)["category"].tolist() == [*map(str, range(12)), "(missing)"]


def test_integer_reports_in_parquet_are_integers(visits, tmp_path, capsys):
    pytest.importorskip("pyarrow")
    rep = tmp_path / "r.parquet"
    # An integer missing label keeps the whole column integer.
    code, _, err = privatize(
        visits,
        rep,
        "hospvis",
        "urr",
        "1",
        capsys,
        "--categories",
        "hospvis=0..11",
        "--sensitive",
        "hospvis=10..11",
        "--missing",
        "category",
        "--missing-label",
        "-1",
        "--chunksize",
        "50",
        "--random-state",
        "0",
        "--no-progress",
    )
    assert code == 0, err
    spec = json.loads((tmp_path / "r.parquet.spec.json").read_text())
    assert spec["columns"]["hospvis"]["categories"] == [*range(12), -1]
    assert spec["columns"]["hospvis"]["sensitive"] == [False] * 10 + [True] * 2 + [False]
    assert pd.read_parquet(rep)["hospvis"].dtype == np.int64
    # With the default text label, every chunk still has one type.
    code, _, err = privatize(
        visits,
        rep,
        "hospvis",
        "rr",
        "1",
        capsys,
        "--categories",
        "hospvis=0..11",
        "--missing",
        "category",
        "--chunksize",
        "50",
        "--random-state",
        "0",
        "--overwrite",
        "--no-progress",
    )
    assert code == 0, err
    assert spec_categories(tmp_path / "r.parquet.spec.json") == [*range(12), "(missing)"]
    code, _, err = estimate(rep, tmp_path / "r.parquet.spec.json", tmp_path / "d.csv", capsys)
    assert code == 0, err


def test_codes_with_leading_zeros_stay_text(tmp_path, capsys):
    path = tmp_path / "zip.csv"
    path.write_text("zip\n02139\n10001\n02139\n")
    code, _, err = privatize(path, tmp_path / "r.csv", "zip", "rr", "1", capsys, "--no-progress")
    assert code == 0, err
    cats = json.loads((tmp_path / "r.csv.spec.json").read_text())["columns"]["zip"]
    assert cats["categories"] == ["02139", "10001"]


def test_ranges_in_options_and_config(data, tmp_path, capsys):
    path, df = data  # "age" is 1..3
    code, _, err = privatize(
        path,
        tmp_path / "a.csv",
        "age",
        "urr",
        "1",
        capsys,
        "--categories",
        "age=0..5",
        "--sensitive",
        "age=4..5",
        "--no-progress",
    )
    assert code == 0, err
    column = json.loads((tmp_path / "a.csv.spec.json").read_text())["columns"]["age"]
    assert column["categories"] == [0, 1, 2, 3, 4, 5]
    assert column["sensitive"] == [False] * 4 + [True] * 2
    for categories in ("0..5", ["0..2", "3..5"], [0, "1..5"]):
        conf = tmp_path / "conf.json"
        conf.write_text(
            json.dumps(
                {
                    "columns": {
                        "age": {
                            "mechanism": "urr",
                            "epsilon": 1,
                            "categories": categories,
                            "sensitive": ["4..5"],
                        }
                    }
                }
            )
        )
        code, _, err = run(
            [
                "privatize",
                path,
                "-o",
                tmp_path / "b.csv",
                "--config",
                conf,
                "--overwrite",
                "--no-progress",
            ],
            capsys,
        )
        assert code == 0, (categories, err)
        column = json.loads((tmp_path / "b.csv.spec.json").read_text())["columns"]["age"]
        assert column["categories"] == [0, 1, 2, 3, 4, 5]


@pytest.mark.parametrize("bad", ["0..", "5..1", "a..b", "..3", "1..2..3", "1.5..3"])
def test_malformed_ranges_are_clear_errors(data, tmp_path, capsys, bad):
    path, _ = data
    code, _, err = privatize(
        path,
        tmp_path / "r.csv",
        "age",
        "rr",
        "1",
        capsys,
        "--categories",
        f"age={bad}",
        "--no-progress",
    )
    assert code == 2 and "Traceback" not in err
    assert repr(bad) in err and "LOW..HIGH" in err, err
    if bad == "5..1":
        assert "empty" in err
    assert not (tmp_path / "r.csv").exists()
    conf = tmp_path / "conf.json"
    conf.write_text(
        json.dumps({"columns": {"age": {"mechanism": "rr", "epsilon": 1, "categories": [bad]}}})
    )
    code, _, err = run(
        ["privatize", path, "-o", tmp_path / "r.csv", "--config", conf, "--no-progress"], capsys
    )
    assert code == 2 and repr(bad) in err and "LOW..HIGH" in err, err
    code, _, err = run(
        [
            "search",
            path,
            "--column",
            "age",
            "--mechanisms",
            "rr",
            "--categories",
            bad,
            "--no-progress",
        ],
        capsys,
    )
    assert code == 2 and "LOW..HIGH" in err, err


def test_search_integer_column_with_ranges(data, tmp_path, capsys):
    path, _ = data
    res = tmp_path / "res.csv"
    code, out, err = run(
        [
            "search",
            path,
            "--column",
            "age",
            "--categories",
            "1..3",
            "--sensitive",
            "3..3",
            "--mechanisms",
            "urr",
            "--epsilon",
            "2",
            "--n-repeats",
            "1",
            "-o",
            res,
            "--no-progress",
        ],
        capsys,
    )
    assert code == 0, err
    assert "mean over 1 privatization)" in out


# ----------------------------------------------------------------- wording
def test_counts_are_singular_or_plural(data, tmp_path, capsys):
    path, _ = data
    one = tmp_path / "one.csv"
    one.write_text("region\nn\n")
    rep = tmp_path / "r.csv"
    code, out, err = privatize(
        one, rep, "region", "rr", "1", capsys, "--categories", "region=n,s,e,w", "--no-progress"
    )
    assert code == 0, err
    assert "privatized 1 row x 1 column ->" in out
    code, out, err = estimate(rep, tmp_path / "r.csv.spec.json", tmp_path / "d.csv", capsys)
    assert code == 0, err
    assert "estimated 1 distribution from 1 report ->" in out
    code, out, err = run(
        [
            "privatize",
            path,
            "-o",
            tmp_path / "r2.csv",
            "--columns",
            "region",
            "marital",
            "--mechanism",
            "rr",
            "--epsilon",
            "1",
            "--categories",
            "region=n,s,e,w",
            "--categories",
            "marital=married,single,divorced",
            "--no-progress",
        ],
        capsys,
    )
    assert code == 0, err
    assert "privatized 6000 rows x 2 columns ->" in out
    code, out, err = estimate(
        tmp_path / "r2.csv", tmp_path / "r2.csv.spec.json", tmp_path / "d2.csv", capsys
    )
    assert "estimated 2 distributions from 6000 reports ->" in out


# ------------------------------------------------------------------- plot
def test_estimate_plot_marks_sensitive_categories(data, tmp_path, capsys, monkeypatch):
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.figure
    from matplotlib.colors import to_rgba

    figures = []
    save = matplotlib.figure.Figure.savefig

    def spy(self, *args, **kwargs):
        figures.append(self)
        return save(self, *args, **kwargs)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", spy)
    path, _ = data
    rep = tmp_path / "r.csv"
    code, _, err = privatize(
        path,
        rep,
        "marital",
        "urr",
        "2",
        capsys,
        "--categories",
        "marital=married,single,divorced",
        "--sensitive",
        "marital=divorced",
        "--no-progress",
    )
    assert code == 0, err
    code, _, err = estimate(
        rep, tmp_path / "r.csv.spec.json", tmp_path / "d.csv", capsys, "--plot", tmp_path / "p.png"
    )
    assert code == 0, err
    (ax,) = figures[-1].axes
    bars = [p for p in ax.patches if p.get_height() != 0 or p.get_width() != 0]
    assert len(bars) == 3
    colors = [to_rgba(b.get_facecolor()) for b in bars]
    # The sensitive bar ("divorced", last) stands out by its colour, which
    # shows however thin the bars are, not only by a hatch or its edge.
    assert colors[0] == colors[1] != colors[2]
    legend = {t.get_text() for t in ax.get_legend().get_texts()}
    assert "sensitive" in legend


# ------------------------------------------------------------------- help
def _option_entries(text):
    """The help of each option, one string per option."""
    entries, current = [], None
    body = text.split("options:", 1)[1]
    for line in body.splitlines():
        if line.startswith("  -"):
            current = [line]
            entries.append(current)
        elif current is not None and line.startswith("   "):
            current.append(line)
    return [" ".join(part.strip() for part in e) for e in entries]


@pytest.mark.parametrize("command", [[], ["demo"], ["privatize"], ["estimate"], ["search"]])
def test_every_help_shows_each_default_once(command, capsys, monkeypatch):
    import re

    monkeypatch.setenv("COLUMNS", "100")
    with pytest.raises(SystemExit) as exc:
        main([*command, "--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    assert "default: None" not in text
    for entry in _option_entries(text):
        assert len(re.findall(r"\bdefault\b", entry, re.IGNORECASE)) <= 1, entry


# ------------------------------------------------ the mechanisms of issue 15
#: Each new mechanism's extra options (utility-optimized ones need X_S; a
#: smaller sketch keeps the CSV narrow, yet large enough that the collisions
#: of the fixed public hash family bias the estimate little).
NEW_MECHANISMS = {
    "olh": [],
    "blh": [],
    "ss": [],
    "cms": ["--n-buckets", "128", "--n-hashes", "64"],
    "hcms": ["--n-buckets", "128", "--n-hashes", "64"],
    "uss": ["--sensitive", "region=n,s"],
    "uhr": ["--sensitive", "region=n,s"],
}
P_REGION = {"n": 0.4, "s": 0.3, "e": 0.2, "w": 0.1}


@pytest.fixture(scope="module")
def regions(tmp_path_factory):
    rng = np.random.default_rng(1)
    n = 40_000
    df = pd.DataFrame({"region": rng.choice(list(P_REGION), p=list(P_REGION.values()), size=n)})
    path = tmp_path_factory.mktemp("regions") / "regions.csv"
    df.to_csv(path, index=False)
    return path, df


@pytest.mark.parametrize("estimator", ["emp-simplex", "em"])
@pytest.mark.parametrize("mechanism", list(NEW_MECHANISMS))
def test_new_mechanisms_privatize_then_estimate(regions, tmp_path, capsys, mechanism, estimator):
    path, df = regions
    rep, out = tmp_path / "rep.csv", tmp_path / "dist.csv"
    code, stdout, _ = privatize(
        path,
        rep,
        "region",
        mechanism,
        "4",
        capsys,
        "--categories",
        "region=n,s,e,w",
        "--random-state",
        "0",
        "--no-progress",
        *NEW_MECHANISMS[mechanism],
    )
    assert code == 0, stdout
    spec = json.loads((tmp_path / "rep.csv.spec.json").read_text())
    channel = Channel.from_dict(spec["columns"]["region"])
    reports = pd.read_csv(rep)
    assert list(reports.columns) == spec["report_columns"]["region"]
    assert len(reports) == len(df)
    if mechanism == "cms":  # rows [hash index, 128 bits]
        assert reports.shape[1] == 129 and channel.report_format == "sketch"
    elif mechanism in ("ss", "uss"):  # one bit per category
        assert reports.shape[1] == 4 and channel.report_format == "bits"
    else:  # one integer output code
        assert reports.shape[1] == 1
        assert np.issubdtype(reports["region"].dtype, np.integer)
    code, stdout, _ = estimate(
        rep, tmp_path / "rep.csv.spec.json", out, capsys, "--estimator", estimator
    )
    assert code == 0, stdout
    est = pd.read_csv(out, keep_default_na=False)
    assert est["category"].tolist() == list(P_REGION)
    assert est["sensitive"].tolist() == (
        [True, True, False, False] if mechanism in ("uss", "uhr") else [True] * 4
    )
    tv = 0.5 * np.abs(est["estimate"].to_numpy() - list(P_REGION.values())).sum()
    assert tv < 0.03, (mechanism, estimator, est["estimate"].tolist())


@pytest.mark.parametrize("mechanism", ["olh", "cms"])
def test_new_mechanisms_reject_altered_reports(regions, tmp_path, capsys, mechanism):
    path, _ = regions
    rep = tmp_path / "rep.csv"
    privatize(
        path,
        rep,
        "region",
        mechanism,
        "1",
        capsys,
        "--categories",
        "region=n,s,e,w",
        "--random-state",
        "0",
        "--no-progress",
        *NEW_MECHANISMS[mechanism],
    )
    reports = pd.read_csv(rep, dtype=str)
    reports.iloc[0, 0] = "x"
    reports.to_csv(rep, index=False)
    code, _, err = estimate(
        rep, tmp_path / "rep.csv.spec.json", tmp_path / "d.csv", capsys, "--skip-report-check"
    )
    assert code != 0
    assert "integers" in err and "(row 1)" in err and "'x'" not in err  # rows, not values


def test_sketch_size_needs_a_sketch_mechanism(data, tmp_path, capsys):
    path, _ = data
    code, _, err = privatize(
        path,
        tmp_path / "r.csv",
        "region",
        "olh",
        "1",
        capsys,
        "--n-buckets",
        "16",
        "--categories",
        "region=n,s,e,w",
        "--random-state",
        "0",
    )
    assert code != 0 and "cms" in err and "drop it" in err


def test_search_compares_the_new_mechanisms(regions, tmp_path, capsys):
    path, _ = regions
    code, out, err = run(
        [
            "search",
            path,
            "--column",
            "region",
            "--categories",
            "n,s,e,w",
            "--sensitive",
            "n,s",
            "--mechanisms",
            "olh",
            "ss",
            "hcms",
            "uss",
            "uhr",
            "--epsilon",
            "2",
            "--n-repeats",
            "1",
            "-o",
            tmp_path / "res.csv",
            "--no-progress",
        ],
        capsys,
    )
    assert code == 0, err
    table = pd.read_csv(tmp_path / "res.csv")
    assert len(table) == 5
    code, _, err = run(["search", path, "--column", "region", "--mechanisms", "uss"], capsys)
    assert code == 2 and "needs --sensitive" in err


def test_sketch_size_in_a_config(data, tmp_path, capsys):
    path, _ = data
    config = tmp_path / "config.json"
    column = {
        "mechanism": "cms",
        "epsilon": 2,
        "categories": ["n", "s", "e", "w"],
        "n_buckets": 8,
        "n_hashes": 4,
    }
    config.write_text(json.dumps({"columns": {"region": column}, "random_state": 0}))
    code, _, err = run(
        ["privatize", path, "-o", tmp_path / "r.csv", "--config", config, "--no-progress"], capsys
    )
    assert code == 0, err
    assert list(pd.read_csv(tmp_path / "r.csv").columns) == (
        ["region_hash"] + [f"region_b{b}" for b in range(8)]
    )
    column.update(mechanism="rr")
    config.write_text(json.dumps({"columns": {"region": column}, "random_state": 0}))
    code, _, err = run(
        ["privatize", path, "-o", tmp_path / "r2.csv", "--config", config, "--no-progress"], capsys
    )
    assert code == 2 and "column 'region'" in err and "drop them" in err
