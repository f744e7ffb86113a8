"""DataFramePrivatizer, ColumnTransformer composition and JointEncoder."""

import warnings

import numpy as np
import pandas as pd
import pytest
import sklearn
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
    again = DataFramePrivatizer({"x": _rr(), "y": _rr()}, random_state=0).fit_transform(df)
    pd.testing.assert_frame_equal(rep, again)
    other = DataFramePrivatizer({"x": _rr(), "y": _rr()}, random_state=1).fit_transform(df)
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
            "cat": pd.Series(["u", "v", "u"], dtype=pd.CategoricalDtype(["u", "v", "w"])),
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
        DataFramePrivatizer({"x": RandomizedResponse(1.0, categories=["a", "b"])}).fit(df)
    priv = DataFramePrivatizer(
        {"x": UtilityOptimizedRR(1.0, sensitive=["(missing)"], categories=["a", "b", "(missing)"])},
        missing="category",
        random_state=0,
    )
    rep = priv.fit_transform(df)
    assert set(rep["x"]) <= {"a", "b", "(missing)"}
    cat_df = pd.DataFrame({"x": pd.Series(["a", None], dtype="category")})
    priv = DataFramePrivatizer({"x": RandomizedResponse(1.0)}, missing="category").fit(cat_df)
    assert "(missing)" in priv.channels_["x"].categories.tolist()


def test_clear_errors():
    df = _frame(10)
    with pytest.raises(ValueError, match="'zzz'.*not in X"):
        DataFramePrivatizer({"zzz": _rr()}).fit(df)
    with pytest.raises(TypeError, match="must be a mechanism"):
        DataFramePrivatizer({"x": "rr"}).fit(df)
    with pytest.raises(ValueError, match="by position"):
        DataFramePrivatizer({"x": _rr()}).fit(df.to_numpy())
    with pytest.raises(ValueError, match="'missing' parameter"):
        DataFramePrivatizer({"x": _rr()}, missing="drop").fit(df)
    with pytest.raises(TypeError, match="raw columns|Raw columns"):
        from sklearn.preprocessing import OneHotEncoder

        DataFramePrivatizer([("x", OneHotEncoder(), ["x"])]).fit(df)


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
                UtilityOptimizedRR(1.0, sensitive=["d"], categories=CATS, random_state=0),
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
            "marital": rng.choice(["single", "married", "divorced"], size=n, p=[0.3, 0.6, 0.1]),
        }
    )
    cats = {"age": ["15-64", "65+"], "marital": ["single", "married", "divorced"]}
    enc = JointEncoder(cats, sensitive=lambda r: r.marital == "divorced").fit(df)
    mech = enc.make_mechanism(UtilityOptimizedRR, epsilon=2.0, random_state=0)
    assert mech.get_params()["sensitive"].sum() == 2
    est = EmpiricalEstimator(projection="simplex").fit(mech.fit_transform(enc.transform(df)))
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
    enc = JointEncoder({"a": ["x", "y"], "b": ["u", "v"]}, sensitive=lambda r: r.b == "u").fit(None)
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
    priv = DataFramePrivatizer(
        {
            "x": UtilityOptimizedRAPPOR(1.0, sensitive=["d"], categories=CATS),
            "y": _rr(),
        },
        random_state=0,
    )
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
    priv = DataFramePrivatizer(
        {"x": UtilityOptimizedRR(1.0, sensitive=["d"], categories=CATS)}, random_state=0
    )
    rep = priv.fit_transform(df)
    specs = json.loads(json.dumps(rep.attrs["sklearn_uldp_specs"]))
    assert specs == priv.specs()


# ------------------------------------------------------- issue 13, item 1
def _table(n=600, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "age": rng.choice(CATS, size=n),
            "sex": rng.choice(["f", "m"], size=n),
            "job": pd.Categorical(rng.choice(["x", "y", "z"], size=n)),
            "wave": rng.integers(1, 3, size=n),
        }
    )


def _priv(**kw):
    return DataFramePrivatizer(
        [
            ("age", RandomizedResponse(1.0, categories=CATS), ["age"]),
            ("sex", RandomizedResponse(1.0, categories=["f", "m"]), ["sex"]),
        ],
        **kw,
    )


def test_nested_params_reach_each_mechanism():
    priv = DataFramePrivatizer({"age": _rr(), "sex": RandomizedResponse(1.0)})
    priv.set_params(age__epsilon=2.0)  # failed: 'dict' has no set_params
    assert priv.get_params()["age__epsilon"] == 2.0
    listed = _priv().set_params(age__epsilon=3.0)
    assert listed.get_params()["age__epsilon"] == 3.0
    assert listed.fit(_table()).epsilon_spent_ == pytest.approx(4.0)
    # A mechanism can be replaced by name, without touching the caller's list.
    steps = _priv().mechanisms
    replaced = _priv().set_params(sex=RandomizedResponse(0.25, categories=["f", "m"]))
    assert replaced.fit(_table()).epsilon_spent_ == pytest.approx(1.25)
    assert steps[1][1].epsilon == 1.0


def test_per_column_epsilon_can_be_searched():
    from sklearn.base import clone
    from sklearn.model_selection import ParameterGrid

    df = _table()
    spent = [
        clone(_priv()).set_params(**p).fit(df).epsilon_spent_
        for p in ParameterGrid({"age__epsilon": [0.5, 2.0]})
    ]
    assert spent == [1.5, 3.0]


def test_remainder_and_column_selectors():
    from sklearn.compose import make_column_selector

    df = _table()
    dropped = _priv().fit_transform(df)
    assert list(dropped.columns) == ["age", "sex"]
    kept = _priv(remainder="passthrough").fit_transform(df)
    assert list(kept.columns) == ["age", "sex", "job", "wave"]
    assert kept["wave"].equals(df["wave"])
    sel = DataFramePrivatizer(
        [
            (
                "text",
                RandomizedResponse(1.0, categories=CATS),
                make_column_selector(pattern="^age$"),
            ),
        ]
    ).fit(df)
    assert list(sel.get_feature_names_out()) == ["age"]


def test_arrays_and_memmaps(tmp_path):
    df = _table()
    arr = df[["age", "sex"]].to_numpy(dtype=object)
    priv = DataFramePrivatizer(
        [
            ("age", RandomizedResponse(1.0, categories=CATS), [0]),
            ("sex", RandomizedResponse(1.0, categories=["f", "m"]), [1]),
        ],
        random_state=0,
    )
    out = priv.fit_transform(arr)
    assert isinstance(out, np.ndarray) and out.shape == (len(df), 2)
    path = tmp_path / "x.npy"
    np.save(path, df[["wave"]].to_numpy())
    mm = np.load(path, mmap_mode="r")
    wave = DataFramePrivatizer([("w", RandomizedResponse(1.0, categories=[1, 2]), [0])])
    assert wave.fit_transform(mm).shape == (len(df), 1)
    assert priv.estimate(out)["age"].shape == (4,)


def test_set_output_is_honoured():
    df = _table()
    priv = _priv(random_state=0)
    assert isinstance(priv.fit_transform(df), pd.DataFrame)
    arr = priv.set_output(transform="default").fit_transform(df)
    assert isinstance(arr, np.ndarray) and arr.shape == (len(df), 2)
    assert isinstance(priv.transform(df), np.ndarray)
    frame = _priv().set_output(transform="pandas").fit_transform(df)
    assert isinstance(frame, pd.DataFrame) and "sklearn_uldp_specs" in frame.attrs
    with pytest.raises(ValueError, match="pandas"):
        _priv().set_output(transform="polars")


def test_feature_names_and_output_indices():
    df = _table()
    priv = DataFramePrivatizer(
        [
            ("age", RandomizedResponse(1.0, categories=CATS), ["age"]),
            ("job", UtilityOptimizedRAPPOR(1.0, sensitive=["x"]), ["job"]),
        ]
    ).fit(df)
    assert list(priv.get_feature_names_out()) == ["age", "job_x", "job_y", "job_z"]
    assert priv.report_columns("job") == ["job_x", "job_y", "job_z"]
    verbose = DataFramePrivatizer(
        [
            ("age", RandomizedResponse(1.0, categories=CATS), ["age"]),
        ],
        verbose_feature_names_out=True,
    ).fit(df)
    assert list(verbose.get_feature_names_out()) == ["age__age"]


def test_leak_warning_names_the_columns_once():
    df = _table()
    priv = DataFramePrivatizer(
        {
            "age": RandomizedResponse(1.0),
            "sex": RandomizedResponse(1.0),
            "job": RandomizedResponse(1.0),
        }
    )  # job: category dtype
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        priv.fit(df)
    leaks = [w for w in caught if issubclass(w.category, PrivacyLeakWarning)]
    assert len(leaks) == 1
    assert "['age', 'sex']" in str(leaks[0].message)


def test_estimate_on_a_subset_of_the_report_columns():
    df = _table()
    priv = _priv(random_state=0)
    reports = priv.fit_transform(df)
    dists = priv.estimate(reports[["age"]])  # failed with a KeyError
    assert list(dists) == ["age"]
    with pytest.raises(KeyError, match="lack the columns"):
        priv.estimate(reports[["age"]], columns=["sex"])
    with pytest.raises(KeyError, match="no mechanism"):
        priv.estimate(reports[[]])


def test_n_jobs_threads_keep_seeded_streams_fresh():
    df = _table(2000)
    priv = _priv(random_state=0, n_jobs=2).fit(df)
    a, b = priv.transform(df), priv.transform(df)
    assert (a["age"] != b["age"]).mean() > 0.2  # each call draws anew
    again = _priv(random_state=0, n_jobs=2).fit(df)
    assert again.transform(df).equals(a)  # and reproducibly


def test_old_dict_form_and_list_form_agree():
    df = _table()
    dict_form = DataFramePrivatizer(
        {
            "age": RandomizedResponse(1.0, categories=CATS),
            "sex": RandomizedResponse(1.0, categories=["f", "m"]),
        },
        random_state=0,
    )
    assert dict_form.fit_transform(df).equals(_priv(random_state=0).fit_transform(df))
    assert sorted(dict_form.mechanisms_) == ["age", "sex"]


def test_is_a_column_transformer_and_clones():
    from sklearn.base import clone

    priv = _priv(random_state=0)
    assert isinstance(priv, ColumnTransformer)
    twin = clone(priv)
    assert twin.get_params()["sex__epsilon"] == 1.0
    assert twin.mechanisms[0][1] is not priv.mechanisms[0][1]


def test_dask_whole_frame_in_one_call():
    dd = pytest.importorskip("dask.dataframe")
    df = _table(2000)
    ddf = dd.from_pandas(df, npartitions=4)
    priv = DataFramePrivatizer(
        {
            "age": RandomizedResponse(2.0, categories=CATS),
            "sex": RandomizedResponse(2.0, categories=["f", "m"]),
            "job": UtilityOptimizedRAPPOR(2.0, sensitive=["x"]),
        },
        random_state=0,
    )
    lazy = priv.fit_transform(ddf)
    assert hasattr(lazy, "dask")
    out = lazy.compute()
    assert list(out.columns) == ["age", "sex", "job_x", "job_y", "job_z"]
    assert len(out) == len(df)
    assert out.equals(priv.transform(ddf).compute())  # seeded: reproducible
    dists = priv.estimate(out)
    assert set(dists) == {"age", "sex", "job"}


def test_dask_errors_come_before_compute():
    dd = pytest.importorskip("dask.dataframe")
    df = _table(200)
    priv = _priv().fit(df)
    with pytest.raises(ValueError, match=r"lacks the columns \['sex'\]"):
        priv.transform(dd.from_pandas(df[["age"]], npartitions=2))
    auto = DataFramePrivatizer({"age": RandomizedResponse(1.0)})
    with pytest.raises(ValueError, match="categories='auto'.*Dask"):
        auto.fit_transform(dd.from_pandas(df, npartitions=2))


def test_spec_file_keeps_accepting_unknown_keys(tmp_path):
    import json

    from sklearn_uldp.compose import load_spec

    priv = _priv().fit(_table())
    path = priv.save_spec(tmp_path / "spec.json")
    doc = json.loads(path.read_text())
    doc["reports"] = {"file": "r.csv"}
    path.write_text(json.dumps(doc))
    assert sorted(load_spec(path)) == ["age", "sex"]


def test_scikit_learn_checks_pass():
    from sklearn.utils.estimator_checks import check_estimator

    est = DataFramePrivatizer([("m", RandomizedResponse(1.0), [0])], remainder="passthrough")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(
            est,
            on_fail=None,
            expected_failed_checks={
                "check_fit2d_1sample": "the mechanism's categories='auto' needs two "
                "distinct values; its message says so",
                # scikit-learn 1.6's version fails on its own int32 data (fixed in 1.7)
                **(
                    {"check_positive_only_tag_during_fit": "scikit-learn < 1.7"}
                    if sklearn.__version__.startswith("1.6.")
                    else {}
                ),
            },
        )
    failed = [r["check_name"] for r in results if r["status"] == "failed"]
    assert failed == []


def test_clear_input_errors():
    import scipy.sparse as sp

    priv = _priv()
    with pytest.raises(TypeError, match="Sparse input"):
        priv.fit(sp.csr_array(np.eye(3)))
    with pytest.raises(ValueError, match="Reshape your data"):
        priv.fit(np.array(["a", "b"], dtype=object))
    with pytest.raises(ValueError, match="infinite"):
        DataFramePrivatizer([("m", RandomizedResponse(1.0), [0])]).fit(np.array([[1.0], [np.inf]]))


def test_remainder_is_dropped_passed_or_privatized():
    from sklearn.preprocessing import OneHotEncoder

    df = _table()[["age", "sex"]]
    priv = DataFramePrivatizer(
        [("age", RandomizedResponse(1.0, categories=CATS), ["age"])],
        remainder=RandomizedResponse(0.5, categories=["f", "m"]),
        random_state=0,
    )
    out = priv.fit_transform(df)
    assert list(out.columns) == ["age", "sex"]
    assert priv.epsilon_spent_ == pytest.approx(1.5)
    assert sorted(priv.specs()) == ["age", "remainder"]
    with pytest.raises(TypeError, match="without privacy"):
        DataFramePrivatizer(
            [("age", RandomizedResponse(1.0), ["age"])], remainder=OneHotEncoder()
        ).fit(df)


def test_set_params_through_the_mechanisms_list():
    # The spelling: set_params(mechanisms__age__epsilon=...) raised
    # AttributeError ('list' object has no attribute 'set_params'); it is the
    # same as ColumnTransformer's age__epsilon, so a search can use either.
    priv = DataFramePrivatizer(
        [
            ("age", RandomizedResponse(1.0, categories=[1, 2, 3]), ["age"]),
            ("sex", RandomizedResponse(1.0, categories=["f", "m"]), ["sex"]),
        ]
    )
    priv.set_params(mechanisms__age__epsilon=2.0)
    assert priv.get_params()["age__epsilon"] == 2.0
    assert priv.get_params()["sex__epsilon"] == 1.0
    priv.set_params(sex__epsilon=3.0, mechanisms__age__epsilon=4.0)
    assert (priv.get_params()["age__epsilon"], priv.get_params()["sex__epsilon"]) == (4.0, 3.0)
    with pytest.raises(ValueError, match=r"mechanisms are named \['age', 'sex'\]"):
        priv.set_params(mechanisms__height__epsilon=2.0)
    with pytest.raises(ValueError, match="mechanisms__age__epsilon"):
        priv.set_params(mechanisms__age=RandomizedResponse(1.0, categories=[1, 2, 3]))


@pytest.mark.parametrize("form", ["dict", "list"])
def test_repeated_column_names_are_refused_with_a_fix(form):
    # scikit-learn < 1.7 failed late with its own message (list form) or read
    # one column of three (dict form): the check is the privatizer's own.
    df = pd.DataFrame({i: ["a", "b", "a"] for i in range(3)})
    df.columns = pd.Index([0, 0, 0], dtype=object)
    rr = RandomizedResponse(1.0, categories=["a", "b"], random_state=0)
    mechs = {0: rr} if form == "dict" else [(str(i), rr, [0]) for i in range(3)]
    with pytest.raises(ValueError, match=r"must be unique; repeated: 0 \(3 times\).*rename"):
        DataFramePrivatizer(mechs).fit(df)


@pytest.mark.parametrize("strategy", ["split", "sample", "sample+fake"])
def test_a_remainder_mechanism_draws_from_the_privatizers_random_state(strategy):
    # A seed makes the remainder's reports reproducible (its own child
    # stream, the listed columns' streams unchanged); None keeps them fresh.
    # The remainder parameter itself is left as given.
    df = _table()[["age", "sex"]]
    remainder = RandomizedResponse(1.0, categories=["f", "m"])

    def reports(random_state):
        priv = DataFramePrivatizer(
            [("age", RandomizedResponse(1.0, categories=CATS), ["age"])],
            remainder=remainder,
            strategy=strategy,
            random_state=random_state,
        )
        out = priv.fit_transform(df)
        assert priv.remainder is remainder and remainder.random_state is None
        return out

    first, again = reports(3), reports(3)
    pd.testing.assert_frame_equal(first, again)
    alone = DataFramePrivatizer(
        [("age", RandomizedResponse(1.0, categories=CATS), ["age"])],
        strategy="split",
        random_state=3,
    ).fit_transform(df)
    if strategy == "split":
        pd.testing.assert_series_equal(first["age"], alone["age"])
    fresh = [reports(None)["sex"].astype(object).to_numpy() for _ in range(2)]
    assert not np.array_equal(fresh[0], fresh[1])
