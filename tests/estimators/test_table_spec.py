"""TableSpec: the collector estimates a privatized table from the spec file alone."""

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sklearn_uldp import EmpiricalEstimator, RandomizedResponse, UtilityOptimizedRAPPOR
from sklearn_uldp.compose import DataFramePrivatizer, load_spec
from sklearn_uldp.estimators import TableSpec
from sklearn_uldp.numeric import HybridMechanism

STRATEGIES = ["split", "sample", "sample+fake"]


def _table(n=4000, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "vote": rng.choice(["a", "b", "none"], p=[0.5, 0.3, 0.2], size=n),
            "job": rng.choice(["x", "y", "z"], p=[0.6, 0.3, 0.1], size=n),
            "age": rng.uniform(18, 90, size=n),
        }
    )


def _privatizer(strategy):
    return DataFramePrivatizer(
        {
            "vote": RandomizedResponse(1.0, categories=["a", "b", "none"]),
            "job": UtilityOptimizedRAPPOR(1.0, sensitive=["z"], categories=["x", "y", "z"]),
            "age": HybridMechanism(1.0, bounds=(0, 100)),
        },
        strategy=strategy,
        random_state=0,
    )


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_the_collector_estimates_from_the_files_alone(strategy, tmp_path):
    df = _table()
    priv = _privatizer(strategy)
    reports = priv.fit_transform(df)
    priv.save_spec(tmp_path / "spec.json")
    reports.to_csv(tmp_path / "reports.csv", index=False)
    table = TableSpec.from_file(tmp_path / "spec.json")
    back = pd.read_csv(tmp_path / "reports.csv")  # bits and labels as read from text
    assert table.to_dict() == json.loads((tmp_path / "spec.json").read_text())
    assert repr(table) == f"TableSpec(columns=['vote', 'job', 'age'], strategy={strategy!r})"
    expected = priv.estimate(reports)
    got = table.estimate(back)
    assert list(got) == ["vote", "job", "age"]
    for name in ("vote", "job"):
        np.testing.assert_allclose(got[name].to_numpy(), expected[name].to_numpy(), atol=1e-12)
        assert list(got[name].index) == list(expected[name].index)
    assert got["age"]["mean"] == pytest.approx(expected["age"]["mean"], rel=1e-10)
    emp = EmpiricalEstimator(projection="simplex")
    np.testing.assert_allclose(
        table.estimate(back, emp, columns=["vote"])["vote"].to_numpy(),
        priv.estimate(reports, emp)["vote"].to_numpy(),
        atol=1e-12,
    )
    # The privatizer's own collector side is this object.
    for name in priv.mechanisms_:
        assert table.report_columns(name) == priv.report_columns(name)
        assert table.channels[name] == priv.channels_[name]
    assert load_spec(tmp_path / "spec.json") == table.channels


def test_sampled_rows_and_missing_reports():
    df = _table(600)
    priv = _privatizer("sample")
    reports = priv.fit_transform(df)
    table = priv._table_spec()
    part = table.column_reports(reports, "vote")
    assert len(part) == int((reports["sampled_attribute"] == "vote").sum())
    # Without the column of sampled attributes the channel skips the
    # missing reports: the same estimate.
    alone = table.estimate(reports[["vote"]])["vote"]
    np.testing.assert_allclose(alone.to_numpy(), priv.estimate(reports)["vote"].to_numpy())


def test_clear_errors():
    priv = _privatizer("split").fit(_table(50))
    document = priv._table_spec().to_dict()
    table = TableSpec.from_dict(document)
    with pytest.raises(KeyError, match="is not the name of a mechanism"):
        table.report_columns("salary")
    with pytest.raises(KeyError, match="lack the columns"):
        table.column_reports(pd.DataFrame({"vote": ["a"]}), "job")
    with pytest.raises(KeyError, match="hold no mechanism's report columns"):
        table.estimate(pd.DataFrame({"other": [1]}))
    with pytest.raises(TypeError, match="must be a DataFrame"):
        table.column_reports(np.zeros((2, 1)), "vote")
    bad = {**document, "columns": {**document["columns"], "vote": {"mechanism": "rr"}}}
    with pytest.raises(ValueError, match="Invalid spec for column 'vote'"):
        TableSpec.from_dict(bad)
    with pytest.raises(ValueError, match="non-empty list of names"):
        TableSpec.from_dict({**document, "report_columns": {"vote": "vote"}})
    with pytest.raises(ValueError, match="'name' is one of"):
        TableSpec.from_dict({**document, "strategy": {"name": "sometimes"}})
    with pytest.raises(ValueError, match="format"):
        TableSpec.from_dict({**document, "format": "other"})
    with pytest.raises(ValueError, match="one mechanism"):
        TableSpec.from_dict(priv.channels_["vote"].to_dict())


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=10,
)


@settings(max_examples=60, deadline=None)
@given(
    key=st.sampled_from(["columns", "report_columns", "strategy", "format", "epsilon_per_person"]),
    value=_JSON,
)
def test_tampered_documents_get_a_clear_error_or_load(key, value):
    # As an outsider would edit a spec file: any JSON in any field either
    # loads or raises ValueError/KeyError (never a crash of another kind).
    document = _privatizer("sample").fit(_table(50))._table_spec().to_dict()
    document[key] = value
    try:
        TableSpec.from_dict(document)
    except (ValueError, KeyError):
        pass
