"""Inputs of mechanisms that mix label types, and the wording of their errors."""

import numpy as np
import pytest

from sklearn_uldp import RandomizedResponse, UtilityOptimizedRR


def test_mixed_domain_with_integer_batch_keeps_the_text_label():
    # A domain of integers plus a missing-value label; a batch of integers only
    # used to be cast to int, which failed on the label '(missing)'.
    mech = RandomizedResponse(1.0, categories=[1, 2, "(missing)"], random_state=0)
    X = np.array([[1], [2]] * 200)
    reports = np.asarray(mech.fit(X).transform(X)).ravel()
    assert set(reports.tolist()) == {1, 2, "(missing)"}


@pytest.mark.parametrize("bad, expected", [
    (np.array([[11]]), "Found 1 unknown category [11]"),
    (np.array([[11], [12]]), "Found 2 unknown categories [11, 12]"),
])
def test_unknown_categories_are_listed_as_plain_values(bad, expected):
    mech = UtilityOptimizedRR(1.0, sensitive=[0], categories=[0, 1, 2]).fit()
    with pytest.raises(ValueError) as info:
        mech.transform(bad)
    assert expected in str(info.value)
    assert "np.int64" not in str(info.value)
