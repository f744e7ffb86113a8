"""The command line reads marginal and range-query reports as integers."""

import pandas as pd
import pytest

from sklearn_uldp.cli._io import integer_reports


def test_integer_report_columns_are_int64():
    chunk = pd.DataFrame({"a": ["3", "0"], "b": ["1", "12"]}, index=[4, 5])
    out = integer_reports(chunk, "Marginal")
    assert out.dtypes.tolist() == ["int64", "int64"]
    assert out.to_numpy().tolist() == [[3, 1], [0, 12]]


@pytest.mark.parametrize("bad", ["x7-secret", None, "1.5e999"])
def test_a_bad_report_names_its_rows_not_its_value(bad):
    chunk = pd.DataFrame({"a": ["3", bad]}, index=[9, 10])
    with pytest.raises(
        ValueError, match="Range-query reports are integers; some of rows 10-11"
    ) as info:
        integer_reports(chunk, "Range-query")
    assert "x7-secret" not in str(info.value)
