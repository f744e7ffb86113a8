"""DataFramePrivatizer, ColumnTransformer composition and JointEncoder."""

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer

from sklearn_uldp import (
    EmpiricalEstimator,
    RandomizedResponse,
    UtilityOptimizedRAPPOR,
    UtilityOptimizedRR,
    get_channel,
)
from sklearn_uldp.compose import DataFramePrivatizer, JointEncoder
from sklearn_uldp.exceptions import PrivacyLeakWarning

CATS = ["a", "b", "c", "d"]


def _frame(n=4000, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "x": rng.choice(CATS, size=n, p=[0.4, 0.3, 0.2, 0.1]),
            "y": rng.choice(CATS, size=n, p=[0.4, 0.3, 0.2, 0.1]),
        }
    )


def _rr(seed=None):
    return RandomizedResponse(epsilon=0.5, categories=CATS, random_state=seed)


def test_returns_dataframe_with_channels_and_spec():
    df = _frame(200)
    priv = DataFramePrivatizer(
        {
            "x": UtilityOptimizedRR(1.0, sensitive=["d"], categories=CATS),
            "y": UtilityOptimizedRAPPOR(1.0, sensitive=["d"], categories=CATS),
        },
        random_state=0,
    )
    rep = priv.fit_transform(df)
    assert isinstance(rep, pd.DataFrame)
    assert rep.index.equals(df.index)
    assert list(rep.columns) == ["x"] + [f"y_{c}" for c in CATS]
    assert set(rep["x"]) <= set(CATS)
    assert priv.epsilon_spent_ == pytest.approx(2.0)
    specs = priv.specs()
    assert specs["x"]["mechanism"] == "urr" and specs["y"]["mechanism"] == "urap"
    yrep = priv.column_reports(rep, "y")
    assert get_channel(yrep) == priv.channels_["y"]
    est = EmpiricalEstimator().fit(yrep)
    assert est.distribution_.shape == (4,)
    dists = priv.estimate(rep)
    assert list(dists["x"].index) == CATS


def test_independent_randomness_per_column_with_one_seed():
    # Identical columns privatized with the same mechanism and one integer
    # seed: with shared noise the reports would be identical.
    n = 5000
    col = np.random.default_rng(1).choice(CATS, size=n)
    df = pd.DataFrame({"x": col, "y": col})
    priv = DataFramePrivatizer({"x": _rr(), "y": _rr()}, random_state=0)
    rep = priv.fit_transform(df)
    assert (rep["x"] != rep["y"]).mean() > 0.3
    # Keep probability e^.5/(3+e^.5) = 0.355 each; both kept or equal by chance
    changed_x = rep["x"] != df["x"]
    changed_y = rep["y"] != df["y"]
    # Independence: P(both changed) ~ P(x changed) P(y changed).
    joint = (changed_x & changed_y).mean()
    assert joint == pytest.approx(changed_x.mean() * changed_y.mean(), abs=0.03)
    # Reproducible with the same seed, different with another seed.
    again = DataFramePrivatizer({"x": _rr(), "y": _rr()}, random_state=0).fit_transform(
        df
    )
    pd.testing.assert_frame_equal(rep, again)
    other = DataFramePrivatizer({"x": _rr(), "y": _rr()}, random_state=1).fit_transform(
        df
    )
    assert not rep.equals(other)


def test_same_integer_seed_on_columns_gives_independent_noise():
    # Each mechanism derives its stream from its seed AND its column's name,
    # so one integer seed shared by two columns no longer correlates them
    # (it used to warn that the noise was identical).
    n = 5000
    col = np.random.default_rng(1).choice(CATS, size=n)
    df = pd.DataFrame({"x": col, "y": col})
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        priv = DataFramePrivatizer({"x": _rr(3), "y": _rr(3)}).fit(df)
    rep = priv.transform(df)
    # Independent RR at eps=0.5, k=4: agreement 0.355^2 + 3 (0.215)^2 = 0.265.
    assert (rep["x"] == rep["y"]).mean() < 0.35
    # ... and the seeds keep the run reproducible.
    again = DataFramePrivatizer({"x": _rr(3), "y": _rr(3)}).fit(df).transform(df)
    pd.testing.assert_frame_equal(rep, again)


def test_chunks_get_fresh_noise():
    df = pd.DataFrame({"x": ["a"] * 2000})
    priv = DataFramePrivatizer({"x": _rr()}, random_state=0).fit(df)
    first, second = priv.transform(df), priv.transform(df)
    assert not first.equals(second)


def test_dtypes_category_string_int():
    df = pd.DataFrame(
        {
            "cat": pd.Series(
                ["u", "v", "u"], dtype=pd.CategoricalDtype(["u", "v", "w"])
            ),
            "str": pd.Series(["p", "q", "p"], dtype="string"),
            "int": pd.Series([1, 2, 3], dtype="Int64"),
        }
    )
    priv = DataFramePrivatizer(
        {
            "cat": RandomizedResponse(1.0),  # domain from the dtype, no warning
            "str": RandomizedResponse(1.0, categories=["p", "q"]),
            "int": RandomizedResponse(1.0, categories=[1, 2, 3]),
        },
        random_state=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        rep = priv.fit_transform(df)
    assert priv.channels_["cat"].categories.tolist() == ["u", "v", "w"]
    assert set(rep["int"]) <= {1, 2, 3}
    assert set(rep["str"]) <= {"p", "q"}


def test_missing_values_error_or_category():
    df = pd.DataFrame({"x": ["a", None, "b", np.nan]})
    with pytest.raises(ValueError, match="'x' has 2 missing values"):
        DataFramePrivatizer({"x": RandomizedResponse(1.0, categories=["a", "b"])}).fit(
            df
        )
    priv = DataFramePrivatizer(
        {
            "x": UtilityOptimizedRR(
                1.0, sensitive=["(missing)"], categories=["a", "b", "(missing)"]
            )
        },
        missing="category",
        random_state=0,
    )
    rep = priv.fit_transform(df)
    assert set(rep["x"]) <= {"a", "b", "(missing)"}
    cat_df = pd.DataFrame({"x": pd.Series(["a", None], dtype="category")})
    priv = DataFramePrivatizer({"x": RandomizedResponse(1.0)}, missing="category").fit(
        cat_df
    )
    assert "(missing)" in priv.channels_["x"].categories.tolist()


def test_clear_errors():
    df = _frame(10)
    with pytest.raises(KeyError, match="not in the DataFrame"):
        DataFramePrivatizer({"zzz": _rr()}).fit(df)
    with pytest.raises(TypeError, match="must be a mechanism"):
        DataFramePrivatizer({"x": "rr"}).fit(df)
    with pytest.raises(TypeError, match="DataFrame"):
        DataFramePrivatizer({"x": _rr()}).fit(df.to_numpy())
    with pytest.raises(ValueError, match="missing must be"):
        DataFramePrivatizer({"x": _rr()}, missing="drop").fit(df)


def test_estimates_are_accurate():
    df = _frame(20000)
    priv = DataFramePrivatizer(
        {"x": UtilityOptimizedRR(2.0, sensitive=["d"], categories=CATS), "y": _rr()},
        random_state=0,
    )
    dists = priv.estimate(priv.fit_transform(df))
    true = df["x"].value_counts(normalize=True).reindex(CATS)
    assert np.abs(dists["x"].to_numpy() - true.to_numpy()).sum() < 0.05


def test_column_transformer_pandas_output():
    df = _frame(3000)
    ct = ColumnTransformer(
        [
            (
                "x",
                UtilityOptimizedRR(
                    1.0, sensitive=["d"], categories=CATS, random_state=0
                ),
                ["x"],
            ),
            ("y", RandomizedResponse(1.0, categories=CATS, random_state=1), ["y"]),
        ],
        verbose_feature_names_out=False,
    ).set_output(transform="pandas")
    rep = ct.fit_transform(df)
    assert isinstance(rep, pd.DataFrame) and list(rep.columns) == ["x", "y"]
    est = EmpiricalEstimator(mechanism=ct.named_transformers_["x"]).fit(rep[["x"]])
    assert est.distribution_.shape == (4,)


# ----------------------------------------------------------------- joint
def _census():
    return {
        "age": ["0-14", "15-64", "65+"],
        "marital": ["single", "married", "divorced"],
        "sex": ["f", "m"],
    }


def test_joint_encoder_domain_sensitive_and_exclusions():
    enc = JointEncoder(
        _census(),
        sensitive=lambda r: r.marital == "divorced" or r["age"] == "65+",
        exclude=lambda r: r.age == "0-14" and r.marital != "single",
    ).fit(None)
    assert len(enc.categories_) == 3 * 3 * 2 - 4
    assert "0-14|married|f" not in enc.categories_
    expected = [("divorced" in c) or c.startswith("65+") for c in enc.categories_]
    assert enc.sensitive_mask_.tolist() == expected
    df = pd.DataFrame(
        {"age": ["0-14", "65+"], "marital": ["single", "divorced"], "sex": ["f", "m"]}
    )
    labels = enc.transform(df)
    assert labels["joint"].tolist() == ["0-14|single|f", "65+|divorced|m"]
    pd.testing.assert_frame_equal(enc.inverse_transform(labels), df)
    bad = df.assign(marital=["married", "divorced"])
    with pytest.raises(ValueError, match="outside the joint domain"):
        enc.transform(bad)


def test_joint_estimate_table_and_marginals():
    rng = np.random.default_rng(0)
    n = 30000
    df = pd.DataFrame(
        {
            "age": rng.choice(["15-64", "65+"], size=n, p=[0.7, 0.3]),
            "marital": rng.choice(
                ["single", "married", "divorced"], size=n, p=[0.3, 0.6, 0.1]
            ),
        }
    )
    cats = {"age": ["15-64", "65+"], "marital": ["single", "married", "divorced"]}
    enc = JointEncoder(cats, sensitive=lambda r: r.marital == "divorced").fit(df)
    mech = enc.make_mechanism(UtilityOptimizedRR, epsilon=2.0, random_state=0)
    assert mech.get_params()["sensitive"].sum() == 2
    est = EmpiricalEstimator(projection="simplex").fit(
        mech.fit_transform(enc.transform(df))
    )
    table = enc.to_table(est)
    assert table.index.names == ["age", "marital"]
    assert table.sum() == pytest.approx(1.0)
    assert table.loc[("65+", "married")] == pytest.approx(0.18, abs=0.02)
    marg = enc.marginals(est)
    assert marg["marital"].index.tolist() == cats["marital"]
    assert marg["marital"]["divorced"] == pytest.approx(0.1, abs=0.02)
    assert marg["age"]["65+"] == pytest.approx(0.3, abs=0.02)


def test_joint_auto_warns_and_errors():
    df = pd.DataFrame({"a": ["x", "y"], "b": ["u", "u"]})
    with pytest.warns(PrivacyLeakWarning):
        enc = JointEncoder().fit(df)
    assert enc.categories_.tolist() == ["x|u", "y|u"]
    with pytest.raises(ValueError, match="separator"):
        JointEncoder({"a": ["x|1", "y"]}).fit(None)
    with pytest.raises(ValueError, match="No joint category is sensitive"):
        enc.make_mechanism(UtilityOptimizedRR, epsilon=1.0)


def test_joint_encoder_in_pipeline_and_set_output():
    from sklearn.pipeline import make_pipeline

    rng = np.random.default_rng(0)
    df = pd.DataFrame(
        {
            "a": rng.choice(["x", "y"], p=[0.8, 0.2], size=20000),
            "b": rng.choice(["u", "v"], size=20000),
        }
    )
    enc = JointEncoder(
        {"a": ["x", "y"], "b": ["u", "v"]}, sensitive=lambda r: r.b == "u"
    ).fit(None)
    pipe = make_pipeline(
        enc,
        enc.make_mechanism(UtilityOptimizedRR, epsilon=2.0, random_state=0),
        EmpiricalEstimator(projection="simplex"),
    ).fit(df)
    assert enc.marginals(pipe[-1])["a"]["x"] == pytest.approx(0.8, abs=0.02)
    priv = DataFramePrivatizer(
        {"a": RandomizedResponse(1.0, categories=["x", "y"])}, random_state=0
    ).set_output(transform="pandas")
    out = priv.fit_transform(df)
    assert isinstance(out, pd.DataFrame) and list(out.columns) == ["a"]


def test_save_and_load_spec_roundtrip(tmp_path):
    df = _frame(3000)
    priv = DataFramePrivatizer({
        "x": UtilityOptimizedRAPPOR(1.0, sensitive=["d"], categories=CATS),
        "y": _rr(),
    }, random_state=0)
    reports = priv.fit_transform(df)
    path = priv.save_spec(tmp_path / "spec.json")
    from sklearn_uldp.compose import load_spec

    channels = load_spec(path)
    assert channels == priv.channels_
    # The collector estimates from the bare reports and the loaded spec alone.
    bare = pd.DataFrame(reports[priv.report_columns("x")].to_numpy())
    est = EmpiricalEstimator(mechanism=channels["x"]).fit(bare)
    ref = EmpiricalEstimator().fit(priv.column_reports(reports, "x"))
    np.testing.assert_allclose(est.distribution_, ref.distribution_)
    (tmp_path / "bad.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match="neither a channel spec"):
        load_spec(tmp_path / "bad.json")


def test_reports_attrs_hold_json_specs():
    import json

    df = _frame(100)
    priv = DataFramePrivatizer({"x": UtilityOptimizedRR(1.0, sensitive=["d"],
                                                        categories=CATS)},
                               random_state=0)
    rep = priv.fit_transform(df)
    specs = json.loads(json.dumps(rep.attrs["sklearn_uldp_specs"]))
    assert specs == priv.specs()
