"""BudgetAccountant: sequential composition and BudgetError."""

import math

import pandas as pd
import pytest

from sklearn_uldp import BudgetError, RandomizedResponse, UtilityOptimizedRR
from sklearn_uldp.compose import DataFramePrivatizer
from sklearn_uldp.privacy import BudgetAccountant


def test_sequential_composition_adds_up():
    acc = BudgetAccountant(total=3.0)
    mech = UtilityOptimizedRR(0.5, sensitive=["b"], categories=["a", "b"]).fit()
    assert mech.epsilon_spent_ == 0.5
    acc.spend(mech, label="col1")
    acc.spend(0.25, count=4, label="repeated")
    assert acc.spent == pytest.approx(1.5)
    assert acc.remaining == pytest.approx(1.5)
    ledger = acc.ledger
    assert list(ledger["label"]) == ["col1", "repeated"]
    assert ledger["total"].sum() == pytest.approx(1.5)


def test_budget_error_past_total_leaves_state_unchanged():
    acc = BudgetAccountant(total=1.0)
    acc.spend(0.6)
    with pytest.raises(BudgetError, match="past the budget 1"):
        acc.spend(0.5)
    assert acc.spent == pytest.approx(0.6)
    assert not acc.check(0.5) and acc.check(0.4)
    acc.spend(0.4)  # exactly the total is allowed
    with pytest.raises(BudgetError):
        acc.spend(1e-6)
    assert isinstance(BudgetError("x"), ValueError)


def test_float_sums_do_not_spuriously_fail():
    acc = BudgetAccountant(total=0.3)
    acc.spend(0.1)
    acc.spend(0.2)
    assert acc.remaining == pytest.approx(0.0)


def test_dataframe_privatizer_spends_sum_of_columns():
    df = pd.DataFrame({"x": ["a", "b"], "y": ["a", "b"]})
    priv = DataFramePrivatizer(
        {
            "x": RandomizedResponse(1.0, categories=["a", "b"]),
            "y": RandomizedResponse(2.0, categories=["a", "b"]),
        }
    ).fit(df)
    acc = BudgetAccountant(total=4.0)
    assert acc.spend(priv) == pytest.approx(3.0)
    with pytest.raises(BudgetError):
        acc.spend(priv)


def test_split_and_validation():
    assert BudgetAccountant.split(1.0, 4) == 0.25
    assert math.isinf(BudgetAccountant().total)
    with pytest.raises(ValueError):
        BudgetAccountant(total=0)
    with pytest.raises(ValueError):
        BudgetAccountant().spend(-1.0)
    with pytest.raises(TypeError):
        BudgetAccountant().spend("one")
    with pytest.raises(ValueError):
        BudgetAccountant().spend(1.0, count=0)
    acc = BudgetAccountant(2.0)
    acc.spend(1.0)
    assert acc.reset().spent == 0.0
    assert "BudgetAccountant(total=2" in repr(acc)
