"""What a numeric mechanism says about values that are not numbers (issue 30, item 11).

An outside fuzz found 46 inputs (object columns mixing booleans, text and
None) whose error carried numpy's raw conversion text ("could not convert
string to float: ''"), a value included. The error now counts the entries
that are not numbers by kind, gives their rows and says how to convert; it
quotes no value. Tested as an outsider would, with hypothesis.
"""

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sklearn_uldp.cli._names import NUMERIC, mechanism_table

#: Raw texts of numpy/Python conversions: never the whole story of an error.
RAW = ("could not convert", "invalid literal", "setting an array element", "unhashable")

text = st.text(min_size=0, max_size=12)
entries = st.one_of(
    st.booleans(),
    text,
    st.none(),
    st.floats(allow_nan=True, allow_infinity=False, width=32),
    st.integers(-5, 5),
)
columns = st.lists(entries, min_size=1, max_size=30).filter(
    lambda xs: any(isinstance(x, (bool, str)) for x in xs)  # something not a number
)
NUMERIC_MECHANISMS = [e.cls for e in mechanism_table().values() if e.family == NUMERIC]


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(values=columns, which=st.integers(0, len(NUMERIC_MECHANISMS) - 1), frame=st.booleans())
def test_values_that_are_not_numbers_get_a_clear_error(values, which, frame):
    mech = NUMERIC_MECHANISMS[which](epsilon=1.0, bounds=(0, 1), random_state=0)
    X = np.array(values, dtype=object).reshape(-1, 1)
    if frame:
        X = pd.DataFrame({"income": X[:, 0]})
    with pytest.raises((TypeError, ValueError)) as info:
        mech.fit_transform(X)
    message = str(info.value)
    assert not any(raw in message for raw in RAW), message
    assert "not numbers" in message or "categorical" in message or "booleans" in message
    # how to fix it, and no value quoted (text values are at least shown by kind)
    assert "to_numeric" in message or "categorical mechanism" in message, message
    for value in values:
        if isinstance(value, str) and len(value) >= 4:
            assert repr(value) not in message, message


def test_the_fuzz_cause_names_kinds_rows_and_the_fix():
    from sklearn_uldp.numeric import HybridMechanism

    X = np.array([[0.5], [True], [""], [None], ["x1"]], dtype=object)
    with pytest.raises(TypeError) as info:
        HybridMechanism(1.0, bounds=(0, 1)).fit(X)
    message = str(info.value)
    assert "could not convert" not in message
    assert "3 entries that are not numbers" in message
    assert "1 boolean" in message and "1 empty text" in message and "1 text" in message
    assert "rows 1, 2, 4" in message and "1 missing value" in message
    assert "pandas.to_numeric" in message
