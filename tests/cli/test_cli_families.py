"""The command line is the library for every family (issue 30, item 2; issue 31).

What a new user tries first: heavy hitters of a text column, numeric
columns with missing values, memoized columns whose budget over rounds the
summary states, a numeric search; one table of mechanisms named as their
specs (the earlier names kept as aliases); warnings once, in the tool's
style; the same sensitive flags in the CSV and the plot; ``--help`` that
imports no command; part files removed on SIGTERM and, after SIGKILL, by the
next run (only files that are ours).
"""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest
from _repo import REPO_ROOT

from sklearn_uldp.cli import main
from sklearn_uldp.cli._names import ALIASES, load, mechanism_table, resolve, spec_name

REPO = str(REPO_ROOT)


def _run(capsys, *argv):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def _subprocess_env():
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    return env


# ------------------------------------------------------------------ names
def test_the_table_names_mechanisms_as_their_specs_do():
    from sklearn_uldp.cli import _names

    for channel, mechanism, _ in _names._TABLE:
        entry, fixed = resolve(spec_name(channel))
        assert entry.cls is load(mechanism) and fixed == {}
    # every earlier name is an alias of one spec name, with what it fixes
    assert {a: resolve(a)[0].name for a in ALIASES} == {
        "oue": "rappor",
        "uoue": "urap",
        "uhr": "hlhr",
    }
    families = {e.family for e in mechanism_table().values()}
    assert families == {"categorical", "numeric", "heavy_hitters"}
    with pytest.raises(ValueError, match="Unknown mechanism 'nope'.*rr, urr"):
        resolve("nope")


def test_the_help_lists_every_mechanism_and_alias():
    import re

    from sklearn_uldp.cli import build_parser
    from sklearn_uldp.cli._names import names

    for command in ("privatize", "search"):
        parser = build_parser(command)
        text = parser._subparsers._group_actions[0].choices[command].format_help()
        text = re.sub(r"\s+", " ", text)
        expected = names() + list(ALIASES)
        if command == "search":  # one budget epsilon, categorical or numeric
            expected = [n for n in expected if resolve(n)[0].budgets == (("epsilon",),)]
            expected = [n for n in expected if resolve(n)[0].family != "heavy_hitters"]
        absent = [n for n in expected if not re.search(rf"\b{n}\b", text)]
        assert not absent, (command, absent)


@pytest.mark.parametrize(
    "given, written, theta",
    [("oue", "rappor", 0.5), ("uoue", "urap", 0.5), ("uhr", "hlhr", None), ("HLHR", "hlhr", None)],
)
def test_aliases_write_the_spec_name(tmp_path, capsys, given, written, theta):
    path = tmp_path / "t.csv"
    pd.DataFrame({"c": ["a", "b", "c"] * 20}).to_csv(path, index=False)
    config = tmp_path / "c.json"
    column = {"mechanism": given, "epsilon": 1, "categories": ["a", "b", "c"]}
    if written != "rappor":
        column["sensitive"] = ["a"]
    config.write_text(json.dumps({"columns": {"c": column}, "random_state": 0}))
    code, _, err = _run(
        capsys, "privatize", path, "-o", tmp_path / "r.csv", "--config", config, "--no-progress"
    )
    assert code == 0, err
    spec = json.loads((tmp_path / "r.csv.spec.json").read_text())["columns"]["c"]
    assert spec["mechanism"] == written
    if theta is not None:
        assert spec["theta"] == theta


def test_a_mechanism_takes_its_own_parameters_only(tmp_path, capsys):
    path = tmp_path / "t.csv"
    pd.DataFrame({"c": ["a", "b"] * 10}).to_csv(path, index=False)
    base = ["privatize", path, "-o", tmp_path / "r.csv", "--columns", "c", "--no-progress"]
    code, _, err = _run(capsys, *base, "--mechanism", "lgrr", "--param", "epsilon_perm=2")
    assert code == 2 and "epsilon_perm and epsilon_1" in err
    code, _, err = _run(capsys, *base, "--mechanism", "oue", "--epsilon", "1", "--theta", "0.3")
    assert code == 2 and "'oue' is 'rappor' with theta=0.5" in err
    code, _, err = _run(capsys, *base, "--mechanism", "rr", "--epsilon", "1", "--param", "top_k=3")
    assert code == 2 and "no parameter top_k (pem, treehist, uldp_heavy_hitters" in err


# ---------------------------------------------------------- heavy hitters
@pytest.fixture(scope="module")
def apps(tmp_path_factory):
    rng = np.random.default_rng(3)
    n = 30_000
    folder = tmp_path_factory.mktemp("apps")
    frame = pd.DataFrame(
        {
            "uid": [f"u{i}" for i in range(n)],
            "app": rng.choice(["mail", "maps", "chat", "news"], p=[0.5, 0.3, 0.15, 0.05], size=n),
        }
    )
    frame.loc[::1000, "app"] = None  # blank fields: users without an answer
    frame.to_csv(folder / "apps.csv", index=False)
    return folder, frame


@pytest.mark.parametrize("mechanism", ["pem", "treehist", "uldp_heavy_hitters"])
def test_heavy_hitters_of_a_text_column(apps, tmp_path, capsys, mechanism):
    folder, frame = apps
    reports = tmp_path / "r.csv"
    extra = ["--sensitive", "app=chat"] if mechanism == "uldp_heavy_hitters" else []
    if mechanism != "uldp_heavy_hitters":
        extra += ["--param", "max_bytes=4"]
    code, out, err = _run(
        capsys, "privatize", folder / "apps.csv", "-o", reports, "--columns", "app",
        "--mechanism", mechanism, "--epsilon", "4", "--missing", "category",
        "--missing-label", "none", "--random-state", "0", "--no-progress", *extra,
    )  # fmt: skip
    assert code == 0, err
    assert "each person spends epsilon = 4 in total" in out
    code, out, err = _run(
        capsys, "estimate", reports, "--spec", f"{reports}.spec.json", "-o", tmp_path / "d.csv",
        "--top-k", "3", "--no-progress",
    )  # fmt: skip
    assert code == 0, err
    found = pd.read_csv(tmp_path / "d.csv", keep_default_na=False)
    assert found["category"].tolist() == ["mail", "maps", "chat"]
    truth = frame["app"].value_counts(normalize=True, dropna=False)
    for _, row in found.iterrows():
        assert row["ci_lower"] - 0.02 < truth[row["category"]] < row["ci_upper"] + 0.02
    # only the utility-optimized protocol singles items out
    expected = [False, False, True] if mechanism == "uldp_heavy_hitters" else [True] * 3
    assert found["sensitive"].tolist() == expected


def test_bloom_rappor_is_decoded_against_candidates(apps, tmp_path, capsys):
    folder, frame = apps
    secrets, reports = tmp_path / "s.csv", tmp_path / "r.csv"
    assert _run(capsys, "secrets", folder / "apps.csv", "--user-id", "uid", "-o", secrets,
                "--no-progress")[0] == 0  # fmt: skip
    code, out, err = _run(
        capsys, "privatize", folder / "apps.csv", "-o", reports, "--columns", "app",
        "--mechanism", "bloom_rappor", "--param", "p=0.25", "--param", "q=0.75",
        "--param", "f=0.25", "--param", "n_bits=32", "--param", "n_cohorts=16",
        "--missing", "app=category", "--user-secrets", secrets, "--user-id", "uid",
        "--no-progress",
    )  # fmt: skip
    assert code == 0, err
    assert "bloom_rappor, epsilon_1 = " in out and "epsilon_perm = " in out
    assert "over rounds of the same values" in out
    spec = json.loads((tmp_path / "r.csv.spec.json").read_text())
    assert spec["columns"]["app"]["protocol"] == "bloom_rappor"
    assert spec["report_columns"]["app"][0] == "app_cohort"
    estimate = ["estimate", reports, "--spec", f"{reports}.spec.json", "-o", tmp_path / "d.csv"]
    code, _, err = _run(capsys, *estimate, "--no-progress")
    assert code == 2 and "--candidates app=FILE" in err
    candidates = tmp_path / "c.txt"
    candidates.write_text("mail\nmaps\nchat\nnews\ngames\nvideo\n")
    code, out, err = _run(capsys, *estimate, "--candidates", candidates, "--no-progress")
    assert code == 0, err
    assert "detected of 6" in out
    table = pd.read_csv(tmp_path / "d.csv").set_index("category")
    found = table["estimate"]
    # The user secrets are fresh OS entropy (as deployed), so the noise is not
    # replayable: an absent candidate may pass the 5% significance test by
    # chance, but no estimate may stray from its truth beyond its interval.
    assert {"mail", "maps"} <= set(found.index)
    truth = frame["app"].value_counts(normalize=True)
    for item, row in table.iterrows():
        assert row["ci_lower"] - 0.02 < truth.get(item, 0.0) < row["ci_upper"] + 0.02, item
    assert abs(found["mail"] - truth["mail"]) < 0.05


def test_heavy_hitters_report_with_split_only(apps, tmp_path, capsys):
    folder, _ = apps
    code, _, err = _run(
        capsys, "privatize", folder / "apps.csv", "-o", tmp_path / "r.csv", "--columns", "app",
        "--mechanism", "pem", "--epsilon", "2", "--strategy", "sample", "--no-progress",
    )  # fmt: skip
    assert code == 2 and "split only" in err


def test_strategy_sample_writes_the_sampled_column(tmp_path, capsys):
    # Which column each user reported is part of the reports, as the help
    # says (the rewrite of the command wrote the mechanisms' columns only).
    path = tmp_path / "t.csv"
    pd.DataFrame({"c": ["a", "b", "c"] * 20, "d": ["x", "y"] * 30}).to_csv(path, index=False)
    config = tmp_path / "c.json"
    columns = {
        "c": {"mechanism": "rr", "epsilon": 1, "categories": ["a", "b", "c"]},
        "d": {"mechanism": "rr", "epsilon": 1, "categories": ["x", "y"]},
    }
    config.write_text(json.dumps({"columns": columns, "random_state": 0}))
    out = tmp_path / "r.csv"
    code, _, err = _run(
        capsys, "privatize", path, "-o", out, "--config", config, "--strategy", "sample",
        "--no-progress",
    )  # fmt: skip
    assert code == 0, err
    reports = pd.read_csv(out)
    assert list(reports.columns) == ["c", "d", "sampled_attribute"]
    assert set(reports["sampled_attribute"]) == {"c", "d"}
    for name in ("c", "d"):
        sent = reports["sampled_attribute"] == name
        assert reports.loc[sent, name].notna().all() and reports.loc[~sent, name].isna().all()
    spec = json.loads((tmp_path / "r.csv.spec.json").read_text())
    assert spec["reports"]["columns"] == ["c", "d", "sampled_attribute"]
    estimate = ["estimate", out, "--spec", f"{out}.spec.json", "-o", tmp_path / "e.csv"]
    code, _, err = _run(capsys, *estimate, "--no-progress")
    assert code == 0, err


# ------------------------------------------------------------ numbers
@pytest.fixture
def wages(tmp_path):
    rng = np.random.default_rng(5)
    n = 4000
    frame = pd.DataFrame({"wage": rng.uniform(0, 1000, n).round(2), "region": "n"})
    frame.loc[[3, 17, 2500], "wage"] = np.nan
    frame.loc[[40, 41], "wage"] = 5000.0  # above the bounds: clipped
    path = tmp_path / "w.csv"
    frame.to_csv(path, index=False)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("\n")  # a blank line: a user whose values are all missing
    return path, frame


def test_numeric_missing_values_are_named_by_column_and_rows(wages, tmp_path, capsys):
    path, _ = wages
    argv = ["privatize", path, "-o", tmp_path / "r.csv", "--columns", "wage", "--mechanism",
            "hybrid", "--epsilon", "1", "--bounds", "wage=0,1000", "--no-progress",
            "--random-state", "0"]  # fmt: skip
    code, _, err = _run(capsys, *argv)
    assert code == 2
    assert "Column 'wage' has 4 missing values (rows 4, 18, 2501, 4001" in err
    assert "--missing wage=impute" in err
    code, _, err = _run(capsys, *argv, "--missing", "wage=category")
    assert code == 2 and "numeric column takes error, impute" in err


def test_numeric_missing_values_imputed_say_so_once(wages, tmp_path, capsys):
    path, frame = wages
    reports = tmp_path / "r.csv"
    code, out, err = _run(
        capsys, "privatize", path, "-o", reports, "--columns", "wage", "--mechanism", "hybrid",
        "--epsilon", "2", "--bounds", "wage=0,1000", "--missing", "impute", "--chunksize", "500",
        "--random-state", "0", "--no-progress",
    )  # fmt: skip
    assert code == 0, err
    assert "privatized 4001 rows" in out  # the blank line is a user, never dropped
    lines = err.strip().splitlines()
    clipping = [line for line in lines if "clipped" in line]
    imputed = [line for line in lines if "imputed" in line]
    # once each, in the tool's style, over 9 chunks; no Python warning format
    assert len(clipping) == 1 and "2 values of column 'wage'" in clipping[0]
    assert len(imputed) == 1 and "4 missing values imputed" in imputed[0]
    assert all(line.startswith("sklearn-uldp privatize: warning: ") for line in lines), err
    assert "site-packages" not in err and "Warning:" not in err
    spec = json.loads((tmp_path / "r.csv.spec.json").read_text())
    assert spec["missing"] == {"wage": "impute"}
    code, out, err = _run(
        capsys, "estimate", reports, "--spec", f"{reports}.spec.json", "-o", tmp_path / "d.csv",
        "--no-progress",
    )  # fmt: skip
    assert code == 0, err
    assert "imputed their missing values" in err
    mean = pd.read_csv(tmp_path / "d.csv").set_index("category").loc["mean"]
    true = frame["wage"].clip(0, 1000).mean()
    assert abs(mean["estimate"] - true) < 5 * mean["std_error"] + 10


def test_estimate_of_numeric_reports_in_a_fresh_process(wages, tmp_path, capsys):
    path, _ = wages
    reports = tmp_path / "r.csv"
    code, _, err = _run(
        capsys, "privatize", path, "-o", reports, "--columns", "wage", "--mechanism", "piecewise",
        "--epsilon", "1", "--bounds", "wage=0,1000", "--missing", "impute", "--random-state",
        "0", "--no-progress",
    )  # fmt: skip
    assert code == 0, err
    # a fresh interpreter knows no numeric channel until the spec asks for one
    proc = subprocess.run(
        [sys.executable, "-m", "sklearn_uldp", "estimate", str(reports), "--spec",
         f"{reports}.spec.json", "-o", str(tmp_path / "d.csv"), "--no-progress"],
        capture_output=True, text=True, env=_subprocess_env(),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr


def test_search_compares_numeric_mechanisms(wages, tmp_path, capsys):
    path, _ = wages
    argv = ["search", path, "--column", "wage", "--bounds", "0,1000", "--missing", "impute",
            "--epsilon", "1", "4", "--n-repeats", "2", "--scoring", "l1",
            "--no-progress"]  # fmt: skip
    code, out, err = _run(capsys, *argv, "--mechanisms", "duchi", "piecewise", "hybrid",
                          "-o", tmp_path / "s.csv")  # fmt: skip
    assert code == 0, err
    table = pd.read_csv(tmp_path / "s.csv")
    assert len(table) == 6 and "best candidate per epsilon (l1" in out
    code, _, err = _run(capsys, *argv, "--mechanisms", "hybrid", "square_wave")
    assert code == 2 and "do not compare" in err
    code, _, err = _run(capsys, *argv, "--mechanisms", "hybrid", "rr")
    assert code == 2 and "one family" in err


# ------------------------------------------------------------ over rounds
def test_the_summary_states_budgets_over_rounds(tmp_path, capsys):
    n = 200
    frame = pd.DataFrame(
        {"uid": range(n), "app": np.arange(n) % 3, "sex": np.where(np.arange(n) % 2, "f", "m")}
    )
    frame.to_csv(tmp_path / "t.csv", index=False)
    secrets = tmp_path / "s.csv"
    assert _run(capsys, "secrets", tmp_path / "t.csv", "--user-id", "uid", "-o", secrets,
                "--no-progress")[0] == 0  # fmt: skip
    config = {
        "columns": {
            "app": {"mechanism": "lgrr", "epsilon_perm": 2, "epsilon_1": 1, "categories": ["0..2"]},
            "sex": {"mechanism": "rr", "epsilon": 0.5, "categories": ["f", "m"]},
        }
    }
    (tmp_path / "c.json").write_text(json.dumps(config))
    argv = ["privatize", tmp_path / "t.csv", "--config", tmp_path / "c.json",
            "--user-secrets", secrets, "--user-id", "uid", "--no-progress"]  # fmt: skip
    code, out, err = _run(capsys, *argv, "-o", tmp_path / "r.csv")
    assert code == 0, err
    assert "each person spends epsilon = 1.5 per round" in out
    assert "app: lgrr, epsilon_1 = 1 per report, at most epsilon_perm = 2" in out
    assert "columns ['sex'] report afresh in every round" in out
    config["columns"]["sex"] = {"mechanism": "dbitflip", "epsilon": 0.5, "categories": ["f", "m"]}
    (tmp_path / "c.json").write_text(json.dumps(config))
    code, out, err = _run(capsys, *argv, "-o", tmp_path / "r2.csv")
    assert code == 0, err
    assert "at most epsilon = 2.5 in all" in out


def test_memoized_columns_need_secrets_even_with_a_seed(tmp_path, capsys):
    # A seed's simulated users are the rows of one call: every chunk's rows
    # would be the same users.
    pd.DataFrame({"app": [0, 1, 2] * 5}).to_csv(tmp_path / "t.csv", index=False)
    code, _, err = _run(
        capsys, "privatize", tmp_path / "t.csv", "-o", tmp_path / "r.csv", "--columns", "app",
        "--mechanism", "dbitflip", "--epsilon", "1", "--categories", "app=0..2",
        "--random-state", "0", "--no-progress",
    )  # fmt: skip
    assert code == 2 and "--user-secrets FILE --user-id COLUMN" in err


# ----------------------------------------------------- consistent output
@pytest.mark.parametrize("mechanism, sensitive", [("rr", []), ("urr", ["a"])])
def test_csv_and_plot_flag_the_same_categories(tmp_path, capsys, mechanism, sensitive):
    pytest.importorskip("matplotlib")
    path, reports = tmp_path / "t.csv", tmp_path / "r.csv"
    pd.DataFrame({"c": ["a", "b", "c"] * 200}).to_csv(path, index=False)
    extra = ["--sensitive", f"c={','.join(sensitive)}"] if sensitive else []
    code, _, err = _run(
        capsys, "privatize", path, "-o", reports, "--columns", "c", "--mechanism", mechanism,
        "--epsilon", "2", "--categories", "c=a,b,c", "--random-state", "0", "--no-progress",
        *extra,
    )  # fmt: skip
    assert code == 0, err
    code, _, err = _run(
        capsys, "estimate", reports, "--spec", f"{reports}.spec.json", "-o", tmp_path / "d.csv",
        "--plot", tmp_path / "p.png", "--no-progress",
    )  # fmt: skip
    assert code == 0, err
    flags = pd.read_csv(tmp_path / "d.csv")["sensitive"].tolist()
    from sklearn_uldp.cli._estimate import estimates_figure
    from sklearn_uldp.estimators import EMEstimator
    from sklearn_uldp.mechanisms import Channel

    spec = json.loads((tmp_path / "r.csv.spec.json").read_text())["columns"]["c"]
    channel = Channel.from_dict(spec)
    est = EMEstimator(mechanism=channel).fit(pd.read_csv(reports)[["c"]].to_numpy(dtype=object))
    fig = estimates_figure({"c": est})
    hatched = [bar.get_hatch() == "//" for bar in fig.axes[0].patches[:3]]
    assert hatched == flags == [mechanism == "rr" or c in sensitive for c in "abc"]


# ------------------------------------------------------------------ speed
def test_help_imports_no_command():
    code = (
        "import sys\n"
        "from sklearn_uldp.cli import main\n"
        "try:\n"
        "    main(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = ('numpy', 'pandas', 'sklearn', 'scipy', 'numba')\n"
        "print('LOADED', [m for m in heavy if m in sys.modules])\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=_subprocess_env()
    )
    assert proc.returncode == 0, proc.stderr
    assert "LOADED []" in proc.stdout, proc.stdout[-300:]
    assert "privatize" in proc.stdout and "heavy hitters" in proc.stdout
    assert "for categorical data" not in proc.stdout


# ------------------------------------------------------------- part files
@pytest.fixture
def big(tmp_path):
    rng = np.random.default_rng(0)
    path = tmp_path / "big.csv"
    pd.DataFrame({"c": rng.choice(["a", "b", "c"], 400_000)}).to_csv(path, index=False)
    return path


def _start_privatize(big, out):
    argv = [sys.executable, "-m", "sklearn_uldp", "privatize", str(big), "-o", str(out),
            "--columns", "c", "--mechanism", "rr", "--epsilon", "1", "--categories", "c=a,b,c",
            "--chunksize", "2000", "--random-state", "0", "--no-progress"]  # fmt: skip
    return subprocess.Popen(
        argv, env=_subprocess_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _parts(folder):
    return sorted(name for name in os.listdir(folder) if name.endswith(".part"))


def _wait_for_parts(proc, folder, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if len(_parts(folder)) >= 2 or proc.poll() is not None:
            break
        time.sleep(0.05)
    time.sleep(0.3)  # a few chunks into the part files
    assert proc.poll() is None and _parts(folder), "privatize ended before it could be stopped"


@pytest.mark.skipif(os.name != "posix", reason="signals")
def test_sigterm_removes_the_part_files(big, tmp_path):
    out = tmp_path / "r.csv"
    proc = _start_privatize(big, out)
    _wait_for_parts(proc, tmp_path)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "stopped" in err and "Traceback" not in err
    assert _parts(tmp_path) == [] and not out.exists()


@pytest.mark.skipif(os.name != "posix", reason="signals")
def test_after_sigkill_the_next_run_removes_only_its_stale_parts(big, tmp_path, capsys):
    out = tmp_path / "r.csv"
    proc = _start_privatize(big, out)
    _wait_for_parts(proc, tmp_path)
    proc.kill()
    proc.communicate(timeout=60)
    left = _parts(tmp_path)
    assert len(left) == 2  # the reports' and the spec's part files
    mine = tmp_path / ".r.csv.old.part"  # a user's file that looks like a part
    mine.write_text("keep me")
    lookalike = tmp_path / ".r.csv.123-ABCDEFGH.part"  # not a name we give
    lookalike.write_text("keep me too")
    small = tmp_path / "small.csv"
    pd.DataFrame({"c": ["a", "b"]}).to_csv(small, index=False)
    code, _, err = _run(
        capsys, "privatize", small, "-o", out, "--columns", "c", "--mechanism", "rr",
        "--epsilon", "1", "--categories", "c=a,b,c", "--random-state", "0", "--no-progress",
    )  # fmt: skip
    assert code == 0, err
    assert _parts(tmp_path) == sorted([mine.name, lookalike.name])
    assert mine.read_text() == "keep me" and len(pd.read_csv(out)) == 2
