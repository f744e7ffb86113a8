"""Inputs that crashed with Python's internals get a message saying what to do.

Each case raised StopIteration, a pandas masking error, OverflowError,
ZeroDivisionError, RecursionError, "unhashable type" or an empty
NotImplementedError before; and two valid inputs were refused.
"""

import warnings

import numpy as np
import pandas as pd
import pytest

from sklearn_uldp import (
    EmpiricalEstimator,
    RandomizedResponse,
    ThresholdEstimator,
    UtilityOptimizedRR,
)
from sklearn_uldp.compose import DataFramePrivatizer
from sklearn_uldp.estimators import DistributionEstimator
from sklearn_uldp.exceptions import InvalidSpecError
from sklearn_uldp.mechanisms import (
    BlockHadamardResponse,
    Channel,
    UtilityOptimizedSubsetSelection,
)
from sklearn_uldp.privacy import block_structured


def _rr():
    return RandomizedResponse(1.0, categories=["a", "b"])


def test_column_names_that_collide_or_are_none():
    df = pd.DataFrame({"0": ["a", "b"], 0: ["b", "a"]})
    with pytest.raises(ValueError, match="'0' and 0 collide"):
        DataFramePrivatizer({"0": _rr(), 0: _rr()}).fit(df)
    with pytest.raises(ValueError, match="distinct strings"):
        DataFramePrivatizer([(0, _rr(), ["0"])]).fit(df)
    with pytest.raises(ValueError, match="column None"):
        DataFramePrivatizer({None: _rr()}).fit(pd.DataFrame({None: ["a", "b"]}))


@pytest.mark.parametrize("epsilon", [700.0, 1e308, 5e-324])
def test_optimal_uss_size_at_extreme_budgets(epsilon):
    mech = UtilityOptimizedSubsetSelection(
        epsilon, categories=list(range(10)), sensitive=[0, 1, 2], subset_size="optimal"
    )
    with pytest.raises(ValueError, match="cannot be realized"):
        mech.fit()


def test_deeply_nested_spec_json():
    text = '{"mechanism": "rr", "categories": ' + "[" * 100_000 + "]" * 100_000 + "}"
    with pytest.raises(InvalidSpecError, match="nests"):
        Channel.from_json(text)


def test_unhashable_sensitive_values_and_block_labels():
    # A set of sensitive values is a set of values.
    mask = UtilityOptimizedRR(1.0, categories=[0, 1, 2], sensitive={0, 2}).fit().sensitive_mask_
    assert mask.tolist() == [True, False, True]
    with pytest.raises(ValueError, match="cannot be categories"):
        UtilityOptimizedRR(1.0, categories=[0, 1, 2], sensitive=[{0}]).fit()
    with pytest.raises(ValueError, match="cannot be categories"):
        RandomizedResponse(1.0, categories=[{0: 1}, 1, 2]).fit()
    with pytest.raises(ValueError, match="ordered list"):
        RandomizedResponse(1.0, categories={0, 1, 2}).fit()
    with pytest.raises(ValueError, match="block label"):
        BlockHadamardResponse(1.0, categories=[0, 1, 2, 3], blocks=lambda c: [c]).fit()
    with pytest.raises(ValueError, match="block label"):
        block_structured([0, 1, 2], {0: [1], 1: [1], 2: [2]}, 1.0)


def test_the_abstract_estimator_says_so():
    mech = _rr().fit()
    with pytest.raises(TypeError, match="base class.*EMEstimator"):
        DistributionEstimator(mechanism=mech).fit(mech.transform(np.array([["a"], ["b"]])))


@pytest.mark.parametrize("unit", ["s", "us", "ns"])
def test_datetime_reports_are_estimated(unit):
    days = pd.to_datetime(["2020-01-01", "2020-01-02", "2020-01-03"]).as_unit(unit)
    df = pd.DataFrame({"d": np.array(days)[np.arange(300) % 3]})
    priv = DataFramePrivatizer(
        {"d": UtilityOptimizedRR(2.0, categories=list(days), sensitive=[days[0]])},
        random_state=0,
    ).fit(df)
    est = priv.estimate(priv.transform(df))["d"]
    assert est.index.tolist() == list(days) and np.isclose(est.sum(), 1.0)


def test_uninformative_estimates_are_flagged():
    from sklearn_uldp.exceptions import UninformativeEstimateWarning

    mech = RandomizedResponse(0.1, categories=list("abcd"), random_state=1)
    reports = mech.fit_transform(np.array(list("aabc" * 50))[:, None])
    with pytest.warns(UninformativeEstimateWarning, match="exactly uniform"):
        thr = ThresholdEstimator().fit(reports)
    assert thr.n_significant_ == 0 and np.allclose(thr.distribution_, 0.25)
    with pytest.warns(UninformativeEstimateWarning, match="mostly noise"):
        assert EmpiricalEstimator().fit(reports).n_significant_ == 0
    informative = RandomizedResponse(4.0, categories=list("abcd"), random_state=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UninformativeEstimateWarning)
        est = ThresholdEstimator().fit(
            informative.fit_transform(np.array(list("aabc" * 50))[:, None])
        )
    assert est.n_significant_ == 3


def test_cli_advice_names_flags_not_python(tmp_path, capsys):
    from sklearn_uldp.cli import main

    data = tmp_path / "t.csv"
    data.write_text("c\na\n\nb\n")
    code = main(["search", str(data), "--column", "c", "--mechanisms", "rr", "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and "--missing category" in err and "missing=" not in err
    code = main(
        [
            "search",
            str(data),
            "--column",
            "c",
            "--mechanisms",
            "rr",
            "--epsilon",
            "1",
            "--n-repeats",
            "1",
            "--missing",
            "category",
            "--no-progress",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "best candidate" in out
