"""Numeric columns in the workflow: DataFramePrivatizer, specs, Dask, search."""

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from sklearn_uldp import (
    ClippingWarning,
    HybridMechanism,
    MeanEstimator,
    PrivacyUtilitySearchCV,
    RandomizedResponse,
    SquareWave,
    SquareWaveEstimator,
    UtilityOptimizedOneBitMechanism,
)
from sklearn_uldp.compose import DataFramePrivatizer, load_spec
from sklearn_uldp.model_selection import make_simulation_scorer


def _table(n=4000, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "age": rng.integers(18, 80, size=n),
            "income": rng.gamma(2.0, 20_000, size=n),
            "region": rng.choice(["north", "south", "east"], size=n),
        }
    )


def _privatizer():
    return DataFramePrivatizer(
        [
            ("age", HybridMechanism(1.0, bounds=(0, 100)), ["age"]),
            (
                "income",
                UtilityOptimizedOneBitMechanism(
                    1.0, bounds=(0, 200_000), sensitive=(100_000, np.inf)
                ),
                ["income"],
            ),
            ("region", RandomizedResponse(1.0, categories=["north", "south", "east"]), ["region"]),
        ],
        random_state=0,
    )


def test_dataframe_privatizer_mixes_numeric_and_categorical_columns():
    df = _table()
    priv = _privatizer()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClippingWarning)  # a few incomes above 200k
        reports = priv.fit_transform(df)
    assert list(reports.columns) == ["age", "income", "region"]
    assert reports["age"].dtype == np.float64 and reports["income"].dtype == np.float64
    assert priv.epsilon_spent_ == 3.0
    estimates = priv.estimate(reports)
    age = estimates["age"]
    assert abs(age["mean"] - df["age"].mean()) < 5 * age["standard_error"]
    assert age["ci_low"] < df["age"].mean() < age["ci_high"]
    income = estimates["income"]
    assert abs(income["mean"] - df["income"].clip(0, 200_000).mean()) < 5 * income["standard_error"]
    assert estimates["region"].index.tolist() == ["north", "south", "east"]
    # reports carry their specs; the spec file round-trips
    assert json.loads(json.dumps(reports.attrs["sklearn_uldp_specs"]))["age"]["mechanism"] == (
        "hybrid"
    )
    est = MeanEstimator().fit(priv.column_reports(reports, "age"))
    assert est.mean_ == pytest.approx(age["mean"])


def test_numeric_columns_save_and_load_spec(tmp_path):
    df = _table(500)
    priv = _privatizer()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClippingWarning)
        reports = priv.fit_transform(df)
    specs = load_spec(priv.save_spec(tmp_path / "spec.json"))
    assert specs["age"] == priv.channels_["age"]
    est = MeanEstimator(mechanism=specs["income"]).fit(reports[["income"]].to_numpy())
    assert est.n_reports_ == 500


def test_numeric_columns_refuse_missing_values_even_with_missing_category():
    df = _table(200)
    df.loc[3, "age"] = np.nan
    priv = DataFramePrivatizer(
        [
            ("age", HybridMechanism(1.0, bounds=(0, 100)), ["age"]),
            ("region", RandomizedResponse(1.0, categories=["north", "south", "east"]), ["region"]),
        ],
        missing="category",
        missing_label="(missing)",
    )
    with pytest.raises(ValueError, match="missing values"):
        priv.fit_transform(df)


def test_square_wave_column_estimate_is_a_distribution():
    df = _table(20_000)
    priv = DataFramePrivatizer([("age", SquareWave(2.0, bounds=(0, 100)), ["age"])], random_state=0)
    reports = priv.fit_transform(df)
    dist = priv.estimate(reports, SquareWaveEstimator(n_bins=20))["age"]
    assert dist.shape == (20,) and dist.sum() == pytest.approx(1.0)
    assert dist.index[0] == pytest.approx(2.5)
    # the young and old bins are (nearly) empty: ages are 18..79
    assert dist.iloc[:3].sum() < 0.08 and dist.iloc[-3:].sum() < 0.08


def test_numeric_columns_on_dask():
    dd = pytest.importorskip("dask.dataframe")
    df = _table(3000)
    ddf = dd.from_pandas(df[["age", "region"]], npartitions=3)
    priv = DataFramePrivatizer(
        [
            ("age", HybridMechanism(1.0, bounds=(0, 100)), ["age"]),
            ("region", RandomizedResponse(1.0, categories=["north", "south", "east"]), ["region"]),
        ],
        random_state=0,
    )
    out = priv.fit_transform(ddf).compute()
    assert out["age"].dtype == np.float64 and len(out) == 3000
    mean = priv.estimate(out)["age"]
    assert abs(mean["mean"] - df["age"].mean()) < 5 * mean["standard_error"]
    auto = DataFramePrivatizer([("age", HybridMechanism(1.0), ["age"])])
    with pytest.raises(ValueError, match="bounds='auto'"):
        auto.fit(ddf)


def test_search_tunes_epsilon_for_the_error_of_a_mean():
    X = np.random.default_rng(0).uniform(20, 60, size=(4000, 1))
    search = PrivacyUtilitySearchCV(
        HybridMechanism(bounds=(0, 100)),
        {"epsilon": [0.25, 1.0, 4.0]},
        scoring="mse",
        n_repeats=4,
        target=1.0,
        random_state=0,
    ).fit(X)
    losses = search.cv_results_.set_index("epsilon")["mean_loss"]
    assert losses.is_monotonic_decreasing
    # the mean's squared error is its variance: the channel's, over n
    channel = search.best_estimator_[0].channel_
    predicted = channel.variance(X.ravel()).mean() / X.shape[0]
    assert losses[4.0] == pytest.approx(predicted, rel=1.5)
    assert search.target_epsilon_ == min(e for e, v in losses.items() if v <= 1.0)
    assert isinstance(search.best_estimator_[-1], MeanEstimator)


def test_simulation_scorer_scores_a_mean_pipeline():
    from sklearn.model_selection import ShuffleSplit, validation_curve
    from sklearn.pipeline import make_pipeline

    X = np.random.default_rng(1).uniform(0, 10, size=(3000, 1))
    pipe = make_pipeline(HybridMechanism(bounds=(0, 10)), MeanEstimator())
    _, test = validation_curve(
        pipe,
        X,
        y=None,
        param_name="hybridmechanism__epsilon",
        param_range=[0.1, 4.0],
        cv=ShuffleSplit(3, random_state=0),
        scoring=make_simulation_scorer("l1"),
    )
    assert test.mean(axis=1)[1] > test.mean(axis=1)[0]  # smaller error at eps=4


def test_cli_privatizes_numeric_columns_from_a_config(tmp_path, capsys):
    from sklearn_uldp.cli import main

    df = _table(2000)
    df["income"] = df["income"].round(2)
    table, config = tmp_path / "t.csv", tmp_path / "config.json"
    df.to_csv(table, index=False)
    config.write_text(
        json.dumps(
            {
                "random_state": 0,
                "columns": {
                    "age": {"mechanism": "hybrid", "epsilon": 1.0, "bounds": [0, 100]},
                    "income": {
                        "mechanism": "uobm",
                        "epsilon": 1.0,
                        "bounds": [0, 500_000],
                        "sensitive": [[100_000, 1e12]],
                    },
                    "region": {
                        "mechanism": "rr",
                        "epsilon": 1.0,
                        "categories": ["north", "south", "east"],
                    },
                },
            }
        )
    )
    reports = tmp_path / "r.csv"
    assert main(["privatize", str(table), "-o", str(reports), "--config", str(config)]) == 0
    out = tmp_path / "est.csv"
    assert main(["estimate", str(reports), "--spec", f"{reports}.spec.json", "-o", str(out)]) == 0
    est = pd.read_csv(out).set_index(["column", "category"])
    age, income = est.loc[("age", "mean")], est.loc[("income", "mean")]
    assert age["ci_lower"] < df["age"].mean() < age["ci_upper"]
    assert abs(income["estimate"] - df["income"].mean()) < 5 * income["std_error"]
    bad = json.loads(config.read_text())
    bad["columns"]["age"].pop("bounds")
    config.write_text(json.dumps(bad))
    assert main(["privatize", str(table), "-o", str(tmp_path / "x.csv"), "--config", str(config)])
    assert "needs 'bounds'" in capsys.readouterr().err
