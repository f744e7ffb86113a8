"""The command line never destroys data, and says clearly what is wrong.

Every test reproduces a failure of an earlier version: an input truncated in
place, outputs and specs replaced silently, two outputs sharing one spec (and
``estimate`` using the wrong epsilon), CSV text written into ``r.xlsx``,
tracebacks instead of messages, Parquet output held whole in memory, and
seeded rather than cryptographically secure noise by default.
"""

import importlib.metadata
import json
import os

import numpy as np
import pandas as pd
import pytest
from _cli import assert_clear_error, estimate, run

import sklearn_uldp
from sklearn_uldp.cli import main

N_ROWS = 1000
RR = [
    "--columns",
    "m",
    "--mechanism",
    "rr",
    "--epsilon",
    "1",
    "--categories",
    "m=a,b,c",
    "--no-progress",
]


@pytest.fixture
def table(tmp_path):
    rng = np.random.default_rng(0)
    df = pd.DataFrame(
        {"m": rng.choice(["a", "b", "c"], size=N_ROWS), "r": rng.choice(["x", "y"], size=N_ROWS)}
    )
    path = tmp_path / "data.csv"
    df.to_csv(path, index=False)
    return path


def leftovers(folder):
    return [p for p in os.listdir(folder) if p.endswith(".part")]


# ---------------------------------------------------------- input == output
def test_output_is_the_input_refused_and_input_intact(table, capsys):
    before = table.read_bytes()
    code, _, err = run(["privatize", table, "-o", table, "--chunksize", "100", *RR], capsys)
    assert_clear_error(code, err, "same file", "destroy the input")
    assert table.read_bytes() == before


@pytest.mark.parametrize("link", ["symlink", "hardlink"])
def test_output_linked_to_the_input_refused(table, tmp_path, capsys, link):
    out = tmp_path / "reports.csv"
    (os.symlink if link == "symlink" else os.link)(table, out)
    before = table.read_bytes()
    code, _, err = run(["privatize", table, "-o", out, "--chunksize", "100", *RR], capsys)
    assert_clear_error(code, err, "same file")
    assert table.read_bytes() == before


def test_input_never_overwritten_even_with_overwrite(table, tmp_path, capsys):
    out = tmp_path / "link.csv"
    os.symlink(table, out)
    before = table.read_bytes()
    code, _, err = run(["privatize", table, "-o", out, "--overwrite", *RR], capsys)
    assert_clear_error(code, err, "same file")
    # Nor the config file, as a spec.
    config = tmp_path / "config.json"
    config.write_text(
        json.dumps(
            {"columns": {"m": {"mechanism": "rr", "epsilon": 1, "categories": ["a", "b", "c"]}}}
        )
    )
    code, _, err = run(
        [
            "privatize",
            table,
            "-o",
            tmp_path / "r.csv",
            "--config",
            config,
            "--spec-out",
            config,
            "--overwrite",
            "--no-progress",
        ],
        capsys,
    )
    assert_clear_error(code, err, "same file")
    assert table.read_bytes() == before
    assert json.loads(config.read_text())["columns"]["m"]["epsilon"] == 1


def test_estimate_output_is_its_reports_refused(table, tmp_path, capsys):
    rep, spec = tmp_path / "r.csv", tmp_path / "s.json"
    assert run(["privatize", table, "-o", rep, "--spec-out", spec, *RR], capsys)[0] == 0
    before = rep.read_bytes()
    code, _, err = run(["estimate", rep, "--spec", spec, "-o", rep, "--no-progress"], capsys)
    assert_clear_error(code, err)
    assert rep.read_bytes() == before


def test_search_output_is_its_input_refused(table, tmp_path, capsys):
    before = table.read_bytes()
    code, _, err = run(
        [
            "search",
            table,
            "--column",
            "m",
            "--mechanisms",
            "rr",
            "--epsilon",
            "1",
            "--n-repeats",
            "1",
            "-o",
            table,
            "--no-progress",
        ],
        capsys,
    )
    assert_clear_error(code, err, "same file")
    assert table.read_bytes() == before


def test_reports_and_spec_must_differ(table, tmp_path, capsys):
    rep = tmp_path / "r.csv"
    code, _, err = run(["privatize", table, "-o", rep, "--spec-out", rep, *RR], capsys)
    assert_clear_error(code, err, "same file")
    assert not rep.exists()


# ------------------------------------------------------ existing files kept
def test_existing_output_needs_overwrite(table, tmp_path, capsys):
    rep = tmp_path / "r.csv"
    rep.write_text("keep me\n")
    code, _, err = run(["privatize", table, "-o", rep, *RR], capsys)
    assert_clear_error(code, err, "already exists", "--overwrite")
    assert rep.read_text() == "keep me\n"
    assert not (tmp_path / "r.csv.spec.json").exists()
    code, _, err = run(["privatize", table, "-o", rep, "--overwrite", *RR], capsys)
    assert code == 0, err
    assert len(pd.read_csv(rep)) == N_ROWS


def test_existing_spec_needs_overwrite(table, tmp_path, capsys):
    rep, spec = tmp_path / "r.csv", tmp_path / "s.json"
    spec.write_text("{}")
    code, _, err = run(["privatize", table, "-o", rep, "--spec-out", spec, *RR], capsys)
    assert_clear_error(code, err, "spec file", "already exists")
    assert spec.read_text() == "{}" and not rep.exists()


def test_existing_estimate_output_needs_overwrite(table, tmp_path, capsys):
    rep, spec, dist = tmp_path / "r.csv", tmp_path / "s.json", tmp_path / "d.csv"
    assert run(["privatize", table, "-o", rep, "--spec-out", spec, *RR], capsys)[0] == 0
    dist.write_text("keep me\n")
    argv = ["estimate", rep, "--spec", spec, "-o", dist, "--no-progress"]
    code, _, err = run(argv, capsys)
    assert_clear_error(code, err, "already exists")
    assert dist.read_text() == "keep me\n"
    assert run([*argv, "--overwrite"], capsys)[0] == 0
    assert len(pd.read_csv(dist)) == 3


def _bad_last_chunk(table):
    # The last chunk holds a value outside the declared domain: the run fails
    # after some chunks were privatized.
    df = pd.read_csv(table)
    df.loc[N_ROWS - 1, "m"] = "zzz"
    df.to_csv(table, index=False)


def test_failed_run_leaves_no_partial_output(table, tmp_path, capsys):
    _bad_last_chunk(table)
    rep = tmp_path / "r.csv"
    code, _, err = run(["privatize", table, "-o", rep, "--chunksize", "100", *RR], capsys)
    assert code == 2 and "Traceback" not in err
    assert not rep.exists()
    assert leftovers(tmp_path) == []


def test_failed_run_leaves_existing_output_intact(table, tmp_path, capsys):
    _bad_last_chunk(table)
    rep = tmp_path / "r.csv"
    rep.write_text("keep me\n")
    code, _, err = run(
        ["privatize", table, "-o", rep, "--overwrite", "--chunksize", "100", *RR], capsys
    )
    assert code == 2 and "Traceback" not in err
    assert rep.read_text() == "keep me\n"
    assert not (tmp_path / "r.csv.spec.json").exists()
    assert leftovers(tmp_path) == []


# -------------------------------------------------------- one spec per output
def test_each_output_has_its_own_spec_and_estimate_checks_it(table, tmp_path, capsys):
    pytest.importorskip("pyarrow")
    csv, parquet = tmp_path / "r.csv", tmp_path / "r.parquet"
    rr = [a if a != "1" else "{eps}" for a in RR]
    assert run(["privatize", table, "-o", csv, *[a.format(eps=1) for a in rr]], capsys)[0] == 0
    assert run(["privatize", table, "-o", parquet, *[a.format(eps=5) for a in rr]], capsys)[0] == 0
    csv_spec = json.loads((tmp_path / "r.csv.spec.json").read_text())
    pq_spec = json.loads((tmp_path / "r.parquet.spec.json").read_text())
    assert csv_spec["columns"]["m"]["epsilon"] == 1
    assert pq_spec["columns"]["m"]["epsilon"] == 5
    assert csv_spec["reports"]["file"] == "r.csv"
    assert csv_spec["reports"]["n_rows"] == N_ROWS
    assert csv_spec["reports"]["columns"] == ["m"]
    # The wrong spec (epsilon 5 for reports made with epsilon 1) is refused.
    code, _, err = estimate(csv, tmp_path / "r.parquet.spec.json", tmp_path / "d.csv", capsys)
    assert_clear_error(code, err, "'r.parquet'", "r.csv.spec.json")
    assert not (tmp_path / "d.csv").exists()
    # The right one works, for both outputs.
    for rep in (csv, parquet):
        code, out, err = estimate(
            rep, f"{rep}.spec.json", tmp_path / f"d_{rep.suffix[1:]}.csv", capsys
        )
        assert code == 0, err
        assert "1 distribution from 1000 reports" in out


def test_estimate_refuses_altered_reports(table, tmp_path, capsys):
    rep, spec = tmp_path / "r.csv", tmp_path / "s.json"
    assert run(["privatize", table, "-o", rep, "--spec-out", spec, *RR], capsys)[0] == 0
    lines = rep.read_text().splitlines(keepends=True)
    rep.write_text("".join(lines[: N_ROWS // 2]))  # truncated
    argv = ["estimate", rep, "--spec", spec, "-o", tmp_path / "d.csv", "--no-progress"]
    code, _, err = run(argv, capsys)
    assert_clear_error(code, err, "changed after privatize", "--skip-report-check")
    code, out, err = run([*argv, "--skip-report-check"], capsys)
    assert code == 0, err


# ------------------------------------------------------------ output formats
@pytest.mark.parametrize("name", ["r.xlsx", "r", "r.json"])
def test_unknown_output_extension_refused(table, tmp_path, capsys, name):
    code, _, err = run(["privatize", table, "-o", tmp_path / name, *RR], capsys)
    assert_clear_error(code, err, ".csv, .parquet")
    assert os.listdir(tmp_path) == ["data.csv"]


def test_estimate_output_must_be_csv(table, tmp_path, capsys):
    rep, spec = tmp_path / "r.csv", tmp_path / "s.json"
    assert run(["privatize", table, "-o", rep, "--spec-out", spec, *RR], capsys)[0] == 0
    code, _, err = run(
        ["estimate", rep, "--spec", spec, "-o", tmp_path / "d.xlsx", "--no-progress"], capsys
    )
    assert_clear_error(code, err, ".csv")
    assert not (tmp_path / "d.xlsx").exists()


def test_parquet_output_is_written_by_row_group(table, tmp_path, capsys):
    # One row group per chunk: memory is bounded by --chunksize, not the table.
    pq = pytest.importorskip("pyarrow.parquet")
    pd.read_csv(table).to_parquet(tmp_path / "data.parquet", index=False)
    for source in (table, tmp_path / "data.parquet"):
        rep = tmp_path / f"r_{source.suffix[1:]}.parquet"
        code, _, err = run(
            ["privatize", source, "-o", rep, "--chunksize", "100", "--random-state", "0", *RR],
            capsys,
        )
        assert code == 0, err
        meta = pq.ParquetFile(rep).metadata
        assert meta.num_rows == N_ROWS
        assert meta.num_row_groups == N_ROWS // 100
    a, b = (pd.read_parquet(tmp_path / f"r_{s}.parquet") for s in ("csv", "parquet"))
    pd.testing.assert_frame_equal(a, b)  # the same seed, the same reports


# ---------------------------------------------------- clear messages instead
@pytest.mark.parametrize("output", [".", "{tmp}", "{tmp}/"])
def test_output_directory_is_a_clear_error(table, tmp_path, capsys, output):
    code, _, err = run(["privatize", table, "-o", output.format(tmp=tmp_path), *RR], capsys)
    assert_clear_error(code, err, "is a directory", "file name")


def test_bit_value_out_of_range_is_a_clear_error(tmp_path, capsys):
    from sklearn_uldp.mechanisms import Channel

    spec = tmp_path / "rappor.json"
    rappor = sklearn_uldp.RAPPOR(1.0, categories=["a", "b", "c"]).fit()
    spec.write_text(rappor.channel_.to_json())
    assert isinstance(Channel.from_json(spec.read_text()), Channel)
    rep = tmp_path / "bits.csv"
    for bits, fragments in (
        # rows, never the values (a message quotes no report)
        ("0,1,0\n256,0,1\n1,0,0\n", ("'m_a'", "(row 2)", "0 or 1")),
        ("0,1,0\n0.5,0,1\n", ("(row 2)", "0 or 1")),
    ):
        rep.write_text("m_a,m_b,m_c\n" + bits)
        code, _, err = run(
            [
                "estimate",
                rep,
                "--spec",
                spec,
                "--columns",
                "m",
                "-o",
                tmp_path / "d.csv",
                "--no-progress",
            ],
            capsys,
        )
        assert_clear_error(code, err, *fragments)


@pytest.mark.parametrize(
    "column, message",
    [
        ({"mechanism": "rr", "epsilon": 1, "categories": 5}, "'categories' must be"),
        (
            {"mechanism": "urr", "epsilon": 1, "categories": ["a", "b", "c"], "sensitive": 5},
            "'sensitive' must be",
        ),
        # A string is not a list: it was silently split into ["a", "b"].
        (
            {"mechanism": "urr", "epsilon": 1, "categories": ["a", "b", "c"], "sensitive": "ab"},
            "'sensitive' must be",
        ),
        ({"mechanism": "rr", "epsilon": 1, "categories": [["a"], "b"]}, "'categories' must be"),
    ],
)
def test_malformed_column_mapping_is_a_clear_error(table, tmp_path, capsys, column, message):
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"columns": {"m": column}}))
    code, _, err = run(
        ["privatize", table, "-o", tmp_path / "r.csv", "--config", config, "--no-progress"], capsys
    )
    assert_clear_error(code, err, message)
    assert not (tmp_path / "r.csv").exists()


def test_malformed_spec_report_columns_is_a_clear_error(table, tmp_path, capsys):
    rep, spec_path = tmp_path / "r.csv", tmp_path / "s.json"
    assert run(["privatize", table, "-o", rep, "--spec-out", spec_path, *RR], capsys)[0] == 0
    spec = json.loads(spec_path.read_text())
    spec["report_columns"]["m"] = "m"
    spec_path.write_text(json.dumps(spec))
    code, _, err = run(
        ["estimate", rep, "--spec", spec_path, "-o", tmp_path / "d.csv", "--no-progress"], capsys
    )
    assert_clear_error(code, err, "report_columns")


# -------------------------------------------------------------------- version
def test_version(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"sklearn-uldp {sklearn_uldp.__version__}"
    # One source: the installed metadata, i.e. pyproject.toml's version.
    assert sklearn_uldp.__version__ == importlib.metadata.version("sklearn-uldp")


# ---------------------------------------------------------------------- noise
@pytest.fixture
def fitted(monkeypatch):
    """Record the privatizer that ``privatize`` fits."""
    from sklearn_uldp.compose import DataFramePrivatizer

    seen = []
    real_fit = DataFramePrivatizer.fit

    def fit(self, X, y=None):
        seen.append(self)
        return real_fit(self, X, y)

    monkeypatch.setattr(DataFramePrivatizer, "fit", fit)
    return seen


def test_privatize_uses_the_secure_generator_by_default(table, tmp_path, capsys, fitted):
    pytest.importorskip("randomgen")
    code, _, err = run(["privatize", table, "-o", tmp_path / "r.csv", *RR], capsys)
    assert code == 0, err
    (priv,) = fitted
    assert priv.random_state == "secure"
    assert {m.random_state for m in priv.mechanisms.values()} == {"secure"}
    assert {m.random_state for m in priv.mechanisms_.values()} == {"secure"}
    assert "warning" not in err


def test_privatize_seed_warns_and_none_is_os_entropy(table, tmp_path, capsys, fitted):
    code, _, err = run(
        ["privatize", table, "-o", tmp_path / "a.csv", "--random-state", "3", *RR], capsys
    )
    assert code == 0, err
    assert "never to privatize real users" in err
    assert fitted[-1].random_state == 3
    code, _, err = run(
        ["privatize", table, "-o", tmp_path / "b.csv", "--random-state", "none", *RR], capsys
    )
    assert code == 0, err
    assert fitted[-1].random_state is None and "warning" not in err
    assert {m.random_state for m in fitted[-1].mechanisms_.values()} == {None}
