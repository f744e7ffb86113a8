"""A numeric mechanism given one column as a 1-D container, or a single value.

scikit-learn's ``check_array`` refuses a scalar and the 1-D containers the
mechanisms did not reshape themselves (a ``pandas.Index``, a pandas extension
array) with "Expected 2D array, got 1D array instead: array=[...]", which
quotes the user's values (issue 30: ``HybridMechanism`` on a 1-D input). A
1-D container is one column, as a list or a 1-D array already is; a single
value is refused with the package's message, which quotes nothing.
"""

import inspect

import numpy as np
import pandas as pd
import pytest

from sklearn_uldp import numeric as nm

#: A value nobody would type: no message may contain it.
MARKER = 1.2345678
SHOWN = ("1.2345678", "1.23456", "array=")


def _mechanisms():
    """Every public numeric mechanism of one column, with the parameters it needs."""
    params = {"UtilityOptimizedOneBitMechanism": {"sensitive": (0, 3)}}
    out = []
    for name in nm.__all__:
        cls = getattr(nm, name)
        if (
            inspect.isclass(cls)
            and issubclass(cls, nm.BaseNumericMechanism)
            and not inspect.isabstract(cls)
            and cls is not nm.BaseNumericMechanism
        ):
            out.append(
                pytest.param(
                    lambda cls=cls, name=name: cls(
                        1.0, bounds=(0, 10), random_state=0, **params.get(name, {})
                    ),
                    id=name,
                )
            )
    return out


ONE_COLUMN = {
    "ndarray": lambda: np.array([MARKER, 2.0, 3.0]),
    "list": lambda: [MARKER, 2.0, 3.0],
    "tuple": lambda: (MARKER, 2.0, 3.0),
    "series": lambda: pd.Series([MARKER, 2.0, 3.0]),
    "index": lambda: pd.Index([MARKER, 2.0, 3.0]),
    "extension-array": lambda: pd.array([MARKER, 2.0, 3.0]),
    "object-array": lambda: np.array([MARKER, 2.0, 3.0], dtype=object),
}
SINGLE = {"float": lambda: MARKER, "0-d array": lambda: np.array(MARKER)}


@pytest.mark.parametrize("make", _mechanisms())
@pytest.mark.parametrize("kind", sorted(ONE_COLUMN))
def test_a_one_dimensional_column_is_one_column(make, kind):
    column = ONE_COLUMN[kind]()
    fitted = make().fit(column)
    assert fitted.n_features_in_ == 1
    reports = make().fit(np.array([[1.0], [2.0]])).transform(ONE_COLUMN[kind]())
    assert np.shape(reports)[0] == 3
    assert np.shape(fitted.transform(column)) == np.shape(reports)


def _refused(call):
    with pytest.raises(ValueError) as info:
        call()
    message = str(info.value)
    assert not any(text in message for text in SHOWN), message
    return message


@pytest.mark.parametrize("make", _mechanisms())
@pytest.mark.parametrize("kind", sorted(SINGLE))
def test_a_single_value_is_refused_without_quoting_it(make, kind):
    assert "one row per user" in _refused(lambda: make().fit(SINGLE[kind]()))
    fitted = make().fit(np.array([[1.0], [2.0]]))
    assert "one row per user" in _refused(lambda: fitted.transform(SINGLE[kind]()))


def test_several_columns_then_one_row_of_values():
    # fitted on two columns (MultiNumericMechanism) a 1-D input is ambiguous:
    # refused with the package's message, without the values
    multi = nm.MultiNumericMechanism(2.0, bounds=[(0, 10), (0, 10)], random_state=0)
    multi.fit(np.array([[1.0, 2.0], [2.0, 3.0]]))
    for kind in ("ndarray", "index", "extension-array"):
        assert "fitted on 2 columns" in _refused(lambda k=kind: multi.transform(ONE_COLUMN[k]()))
