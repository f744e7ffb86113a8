"""No warning, error or log line quotes a user's value (issue 30, item 3).

A marker is pushed through the errors and warnings of every family (the
categorical, memoized, numeric and heavy-hitter mechanisms, the estimators,
composition and the command line) as a category, an item, a number, a
report, a secret, a user id and a field of a CSV file; it must appear in no
exception (nor the exceptions chained to it), no warning and no log record.
Messages give counts, kinds, row numbers and column names instead.

The cases are built as an outsider would hit them: wrong values in data
whose domain, bounds or reports are otherwise right.
"""

import logging
import warnings

import numpy as np
import pandas as pd
import pytest

from sklearn_uldp.cli import main
from sklearn_uldp.cli._names import CATEGORICAL, NUMERIC, mechanism_table

#: A user's value, as text (a category, an item, a user id, a CSV field).
MARKER = "MARKER-7f3a"
#: A user's value that looks like a number (digits a message would show).
NUMBER = 987654.3217
NUMBER_TEXT = "987654"


def _chain(exc):
    """The messages of an exception and of those a traceback shows with it."""
    out = []
    while exc is not None:
        out.append(f"{type(exc).__name__}: {exc}")
        exc = exc.__cause__ or (None if exc.__suppress_context__ else exc.__context__)
    return out


def _messages(call, caplog):
    """Every message ``call`` produces: exceptions, warnings, log records."""
    texts = []
    with caplog.at_level(logging.DEBUG), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            call()
        except Exception as exc:  # noqa: BLE001 - every failure is a message
            texts += _chain(exc)
    texts += [f"{w.category.__name__}: {w.message}" for w in caught]
    texts += [record.getMessage() for record in caplog.records]
    return texts


def _assert_clean(texts):
    assert texts, "the case produced no message: it tests nothing"
    leaked = [t for t in texts if MARKER in t or NUMBER_TEXT in t]
    assert not leaked, leaked[0][:400]


# ------------------------------------------------------------- the library
def _params(entry, categories):
    params = {}
    for name in entry.budgets[0]:
        params[name] = {"epsilon_perm": 2.0, "p": 0.25, "q": 0.75, "f": 0.5}.get(name, 1.0)
    if entry.utility_optimized:
        params["sensitive"] = categories[:1]
    return params


def _categorical():
    for name, entry in mechanism_table().items():
        if entry.family == CATEGORICAL:
            yield pytest.param(entry, id=name)


@pytest.mark.parametrize("entry", _categorical())
def test_categorical_mechanisms_never_show_an_unknown_value(entry, caplog):
    cats = ["a", "b"] if entry.name == "binary_optimal" else ["a", "b", "c"]
    mech = entry.cls(**_params(entry, cats), categories=cats, random_state=0)
    mech.fit(np.array([["a"], ["b"]], dtype=object))
    X = np.array([["a"], [MARKER], [MARKER + " "]], dtype=object)
    _assert_clean(_messages(lambda: mech.transform(X), caplog))


@pytest.mark.parametrize("entry", _categorical())
def test_learned_domains_never_show_the_values(entry, caplog):
    # categories="auto" with a missing value, or (binary) too many values
    mech = entry.cls(**_params(entry, ["a", "b", "c"]), random_state=0)
    if entry.utility_optimized:
        pytest.skip("needs its sensitive values in the domain it learns")
    X = np.array([["a"], [MARKER], [None if entry.name != "binary_optimal" else "c"]], dtype=object)
    _assert_clean(_messages(lambda: mech.fit(X), caplog))


def _rr_reports():
    from sklearn_uldp import RandomizedResponse

    return RandomizedResponse(1.0, categories=["a", "b"], random_state=0).fit()


@pytest.mark.parametrize("name", ["EmpiricalEstimator", "EMEstimator", "ThresholdEstimator"])
@pytest.mark.parametrize(
    "reports",
    [
        np.array([["a"], [MARKER]], dtype=object),  # a label no report can be
        np.array([[True], [False]], dtype=object),  # the wrong kind of label
    ],
    ids=["label", "kind"],
)
def test_estimators_never_show_a_report(name, reports, caplog):
    from sklearn_uldp import estimators

    est = getattr(estimators, name)(mechanism=_rr_reports().channel_)
    _assert_clean(_messages(lambda: est.fit(reports), caplog))


def test_integer_codes_are_never_shown(caplog):
    from sklearn_uldp.estimators import EmpiricalEstimator
    from sklearn_uldp.mechanisms import OptimizedLocalHashing

    olh = OptimizedLocalHashing(1.0, categories=["a", "b"]).fit()
    est = EmpiricalEstimator(mechanism=olh.channel_)
    _assert_clean(_messages(lambda: est.fit(np.array([[int(NUMBER)]])), caplog))
    _assert_clean(_messages(lambda: est.fit(np.array([[NUMBER]])), caplog))
    _assert_clean(_messages(lambda: est.fit(np.array([[MARKER]], dtype=object)), caplog))


def _numeric():
    for name, entry in mechanism_table().items():
        if entry.family == NUMERIC:
            yield pytest.param(entry, id=name)


@pytest.mark.parametrize("entry", _numeric())
@pytest.mark.parametrize(
    "X",
    [
        np.array([["1.5"], [MARKER]], dtype=object),  # text
        np.array([[True], [""], [None], [MARKER]], dtype=object),  # the fuzz cause
        pd.DataFrame({"income": ["1", MARKER]}),  # a text column
        np.array([[NUMBER], [0.5]]),  # clipped, with a warning
        np.array([[NUMBER], [np.nan]]),  # missing
    ],
    ids=["text", "mixed", "frame", "clipped", "missing"],
)
def test_numeric_mechanisms_never_show_a_value(entry, X, caplog):
    mech = entry.cls(epsilon=1.0, bounds=(0, 1), random_state=0)
    _assert_clean(_messages(lambda: mech.fit_transform(X), caplog))


@pytest.mark.parametrize("estimator", ["MeanEstimator", "SquareWaveEstimator"])
def test_numeric_estimators_never_show_a_report(estimator, caplog):
    from sklearn_uldp import numeric

    mech = (numeric.SquareWave if estimator == "SquareWaveEstimator" else numeric.HybridMechanism)(
        1.0, bounds=(0, 1)
    ).fit()
    est = getattr(numeric, estimator)(mechanism=mech.channel_)
    _assert_clean(_messages(lambda: est.fit(np.array([[NUMBER], [0.5]])), caplog))
    _assert_clean(_messages(lambda: est.fit(np.array([[MARKER]], dtype=object)), caplog))


def _heavy(name, **params):
    from sklearn_uldp import heavy_hitters

    return getattr(heavy_hitters, name)(**params)


@pytest.mark.parametrize(
    "make, items",
    [
        pytest.param(
            lambda: _heavy("PrefixExtendingMethod", epsilon=2.0, random_state=0),
            [MARKER * 4, "a"],
            id="pem-truncated",
        ),
        pytest.param(
            lambda: _heavy("TreeHist", epsilon=2.0, on_long="error", random_state=0),
            [MARKER * 4, "a"],
            id="treehist-too-long",
        ),
        pytest.param(
            # whole items are hashed (no max_bytes): the wrong kind of item
            lambda: _heavy(
                "UtilityOptimizedHeavyHitters",
                epsilon=2.0,
                sensitive=[1],
                item_type="int",
                random_state=0,
            ),
            [MARKER, 5],
            id="uldp-wrong-kind",
        ),
        pytest.param(
            lambda: _heavy("PrefixExtendingMethod", epsilon=2.0, item_type="int", random_state=0),
            [MARKER, 5],
            id="pem-int",
        ),
        pytest.param(
            lambda: _heavy("TreeHist", epsilon=2.0, item_type="bytes", random_state=0),
            [MARKER, b"a"],
            id="treehist-bytes",
        ),
        pytest.param(
            lambda: _heavy(
                "UtilityOptimizedHeavyHitters", epsilon=2.0, sensitive=["x"], random_state=0
            ),
            [MARKER, None],
            id="uldp-missing",
        ),
        pytest.param(lambda: _heavy("BloomRAPPOR"), [MARKER], id="bloom-without-secrets"),
        pytest.param(
            lambda: _heavy("BloomRAPPOR", random_state=0),
            [MARKER, True],
            id="bloom-mixed",
        ),
    ],
)
def test_heavy_hitters_never_show_an_item(make, items, caplog):
    _assert_clean(_messages(lambda: make().fit_transform(items), caplog))


@pytest.mark.parametrize(
    "collector",
    [
        lambda: _heavy(
            "HeavyHitterEstimator", mechanism=_heavy("PrefixExtendingMethod", epsilon=2.0).fit()
        ),
        lambda: _heavy("BloomRAPPORDecoder", ["a", "b"], mechanism=_heavy("BloomRAPPOR").fit()),
    ],
    ids=["discover", "decode"],
)
def test_heavy_hitter_collectors_never_show_a_report(collector, caplog):
    reports = np.array([[MARKER] * 17, [NUMBER] * 17], dtype=object)
    _assert_clean(_messages(lambda: collector().fit(reports), caplog))
    _assert_clean(_messages(lambda: collector().fit(reports[:, :1]), caplog))


@pytest.mark.parametrize(
    "secrets",
    [
        [MARKER.encode()],  # too short
        [(MARKER * 3).encode()] * 2,  # shared by two users
        [MARKER * 3, (MARKER * 3).encode()],  # text among bytes
    ],
    ids=["short", "shared", "text"],
)
def test_memoized_mechanisms_never_show_a_secret(secrets, caplog):
    from sklearn_uldp.longitudinal import LongitudinalGRR

    mech = LongitudinalGRR(2.0, 1.0, categories=["a", "b"]).fit()
    X = np.array([["a"]] * len(secrets), dtype=object)
    _assert_clean(_messages(lambda: mech.transform(X, user_secrets=secrets), caplog))


def test_composition_never_shows_a_value(caplog):
    from sklearn_uldp import RandomizedResponse
    from sklearn_uldp.compose import DataFramePrivatizer, JointEncoder
    from sklearn_uldp.numeric import HybridMechanism

    frame = pd.DataFrame({"city": ["a", MARKER], "age": [0.5, NUMBER], "raw": ["0.5", MARKER]})
    city = RandomizedResponse(1.0, categories=["a", "b"])
    for mechanisms in (
        {"city": city},
        {"age": HybridMechanism(1.0, bounds=(0, 1))},
        {"raw": HybridMechanism(1.0, bounds=(0, 1))},
    ):
        for strategy in ("split", "sample"):
            priv = DataFramePrivatizer(mechanisms, random_state=0, strategy=strategy)
            _assert_clean(_messages(lambda priv=priv: priv.fit_transform(frame), caplog))
    joint = JointEncoder(categories=[["a", "b"], ["0.5"]])
    _assert_clean(_messages(lambda: joint.fit_transform(frame[["city", "raw"]]), caplog))


# -------------------------------------------------------- the command line
def _cli(capsys, *argv):
    """The messages of a command: its stdout and stderr."""
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, [out.out, out.err]


@pytest.fixture
def table(tmp_path):
    rows = 40
    frame = pd.DataFrame(
        {
            "uid": [f"u{i}" for i in range(rows)],
            "city": ["a", "b"] * (rows // 2),
            "age": np.linspace(0, 1, rows),
            "job": ["nurse", "teacher"] * (rows // 2),
        }
    )
    frame.loc[3, "city"] = MARKER
    frame.loc[5, "age"] = NUMBER
    frame.loc[7, "job"] = MARKER * 4
    path = tmp_path / "t.csv"
    frame.to_csv(path, index=False)
    return path, frame


def _assert_cli_clean(code, texts, *, failed):
    assert (code != 0) == failed, texts
    _assert_clean([t for t in texts if t])


@pytest.mark.parametrize(
    "argv, failed",
    [
        (
            [
                "--columns",
                "city",
                "--mechanism",
                "rr",
                "--epsilon",
                "1",
                "--categories",
                "city=a,b",
            ],
            True,
        ),  # fmt: skip
        (["--columns", "city", "--mechanism", "rr", "--epsilon", "1"], False),  # learned
        (
            ["--columns", "age", "--mechanism", "hybrid", "--epsilon", "1", "--bounds", "age=0,1"],
            False,
        ),  # clipped  # fmt: skip
        (
            [
                "--columns",
                "city",
                "--mechanism",
                "hybrid",
                "--epsilon",
                "1",
                "--bounds",
                "city=0,1",
            ],
            True,
        ),  # text in a numeric column  # fmt: skip
    ],
    ids=["unknown", "learned", "clipped", "not-a-number"],
)
def test_privatize_never_shows_a_value(table, tmp_path, capsys, argv, failed):
    path, _ = table
    code, texts = _cli(
        capsys, "privatize", path, "-o", tmp_path / "r.csv", "--random-state", "0",
        "--no-progress", *argv,
    )  # fmt: skip
    _assert_cli_clean(code, texts, failed=failed)


def test_privatize_never_shows_a_long_item(table, tmp_path, capsys):
    path, _ = table
    code, texts = _cli(
        capsys, "privatize", path, "-o", tmp_path / "r.csv", "--columns", "job",
        "--mechanism", "pem", "--epsilon", "2", "--random-state", "0", "--no-progress",
    )  # fmt: skip
    _assert_cli_clean(code, texts, failed=False)


def test_secrets_and_user_ids_are_never_shown(table, tmp_path, capsys):
    path, frame = table
    config = tmp_path / "c.json"
    config.write_text(
        '{"columns": {"job": {"mechanism": "lgrr", "epsilon_perm": 2, "epsilon_1": 1, '
        '"categories": ["nurse", "teacher"]}}}'
    )
    secrets = tmp_path / "s.csv"
    # a user id listed twice, and users without a secret
    pd.DataFrame({"uid": [MARKER, MARKER], "secret": ["ab" * 32, "cd" * 32]}).to_csv(
        secrets, index=False
    )
    clean = frame.assign(job=["nurse", "teacher"] * (len(frame) // 2), uid=MARKER + frame["uid"])
    clean.to_csv(path, index=False)
    base = ["privatize", path, "--config", config, "--user-id", "uid", "--no-progress"]
    code, texts = _cli(capsys, *base, "-o", tmp_path / "r.csv", "--user-secrets", secrets)
    _assert_cli_clean(code, texts, failed=True)
    # secrets that are not hex, for users the table does not hold
    pd.DataFrame({"uid": ["x"], "secret": [MARKER * 6]}).to_csv(secrets, index=False)
    code, texts = _cli(capsys, *base, "-o", tmp_path / "r.csv", "--user-secrets", secrets)
    _assert_cli_clean(code, texts, failed=True)
    pd.DataFrame({"uid": ["x"], "secret": ["ab" * 32]}).to_csv(secrets, index=False)
    code, texts = _cli(capsys, *base, "-o", tmp_path / "r.csv", "--user-secrets", secrets)
    _assert_cli_clean(code, texts, failed=True)


@pytest.mark.parametrize("column", ["city", "age", "job"])
def test_estimate_never_shows_a_report(table, tmp_path, capsys, column):
    path, frame = table
    clean = frame.assign(
        city=["a", "b"] * (len(frame) // 2),
        age=np.linspace(0, 1, len(frame)),
        job=["nurse", "teacher"] * (len(frame) // 2),
    )
    clean.to_csv(path, index=False)
    mechanism = {
        "city": ["--mechanism", "rr", "--epsilon", "1", "--categories", "city=a,b"],
        "age": ["--mechanism", "hybrid", "--epsilon", "1", "--bounds", "age=0,1"],
        "job": ["--mechanism", "pem", "--epsilon", "2", "--param", "max_bytes=8"],
    }[column]
    reports = tmp_path / "r.csv"
    code, texts = _cli(
        capsys, "privatize", path, "-o", reports, "--columns", column, "--random-state", "0",
        "--no-progress", *mechanism,
    )  # fmt: skip
    assert code == 0, texts
    for value in (MARKER, NUMBER_TEXT + ".3217"):
        altered = pd.read_csv(reports, dtype=str)
        altered.iloc[2, 0] = value
        altered.to_csv(reports, index=False)
        code, texts = _cli(
            capsys, "estimate", reports, "--spec", f"{reports}.spec.json", "-o",
            tmp_path / "d.csv", "--skip-report-check", "--no-progress",
        )  # fmt: skip
        _assert_cli_clean(code, texts, failed=True)


@pytest.mark.parametrize(
    "argv",
    [
        ["--column", "city", "--mechanisms", "rr", "--categories", "a,b"],
        ["--column", "city", "--mechanisms", "hybrid", "--bounds", "0,1"],
    ],
    ids=["categorical", "numeric"],
)
def test_search_never_shows_a_value(table, capsys, argv):
    path, _ = table
    code, texts = _cli(capsys, "search", path, *argv, "--epsilon", "1", "--n-repeats", "1",
                       "--no-progress")  # fmt: skip
    _assert_cli_clean(code, texts, failed=True)
