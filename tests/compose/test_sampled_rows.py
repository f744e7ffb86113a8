"""The rows that sample each column under strategy="sample" (one stable sort)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sklearn_uldp.compose._strategies import _rows_by_column


@settings(max_examples=60, deadline=None)
@given(
    d=st.integers(1, 300),
    n=st.integers(0, 2000),
    seed=st.integers(0, 2**32 - 1),
)
def test_rows_by_column_are_each_columns_rows_ascending(d, n, seed):
    sampled = np.random.default_rng(seed).integers(0, d, size=n)
    rows = _rows_by_column(sampled, d)
    assert len(rows) == d
    for i in range(d):
        np.testing.assert_array_equal(rows[i], np.flatnonzero(sampled == i))


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8])
def test_rows_by_column_any_integer_dtype(dtype):
    sampled = np.array([2, 0, 2, 1, 0, 2], dtype=dtype)
    rows = _rows_by_column(sampled, 4)
    assert [r.tolist() for r in rows] == [[1, 4], [3], [0, 2, 5], []]
