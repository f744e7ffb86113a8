"""Category values on the command line: ranges, integer columns, sort order.

Tables are read as text, so that no chunk can turn a column into floats (a
chunk with a missing value would) or into mixed types. The command line then
gives each column one kind:

* **integer**: every category is an integer (``--categories hospvis=0..51``,
  ``age=1,2,3``, JSON numbers ``[1, 2, 3]``) or, for a domain learned from the
  data, every value is one. Values, categories, spec and reports are then
  integers, sorted numerically. A value written ``3.0`` in the file (how
  pandas saves an integer column that has missing values) is the integer 3.
  Codes with a leading zero (``"02139"``) are not integers: they stay text.
* **text** otherwise, learned domains sorted numerically when every value is
  a number (``"2" < "10"``), else alphabetically.

With ``--missing category`` a missing value is reported as the missing label,
which is added to the domain. In an integer column the label stays as given
(``"(missing)"`` next to the integers), or is the integer ``-1`` for
``--missing-label -1``.
"""

import math
import re

import numpy as np
import pandas as pd

__all__ = [
    "MAX_RANGE",
    "expand_values",
    "split_values",
    "typed_domain",
    "typed_like",
    "learned_domain",
    "to_domain_type",
]

#: Largest number of values a range may stand for (a mechanism over more
#: categories than this is not practical anyway).
MAX_RANGE = 1_000_000

_INT = re.compile(r"-?(?:0|[1-9][0-9]*)")
# In data, "3.0" is the integer 3 (pandas writes integer columns with missing
# values as floats).
_INT_VALUE = r"-?(?:0|[1-9][0-9]*)(?:\.0*)?"
_RANGE = re.compile(r"(-?[0-9]+)\.\.(-?[0-9]+)")


def _range_error(item, where, why):
    return ValueError(
        f"{where}: {why} in {item!r}; write an inclusive integer range "
        "LOW..HIGH with LOW <= HIGH, e.g. 0..51 (for 0, 1, ..., 51)."
    )


def expand_values(values, where):
    """Expand the ranges ``LOW..HIGH`` in a list of category values.

    Parameters
    ----------
    values : list of str or int
        Values as given; every string containing ``..`` is a range.
    where : str
        Where the values come from, named in error messages.

    Returns
    -------
    values : list
        Ranges replaced by their integers (inclusive), other values unchanged.

    Examples
    --------
    >>> from sklearn_uldp.cli._values import expand_values
    >>> expand_values(["0..3", "99"], "--categories x")
    [0, 1, 2, 3, '99']
    >>> expand_values(["5..1"], "--categories x")
    Traceback (most recent call last):
    ...
    ValueError: --categories x: the range is empty (5 > 1) in '5..1'; ...
    """
    out = []
    for value in values:
        if not (isinstance(value, str) and ".." in value):
            out.append(value)
            continue
        match = _RANGE.fullmatch(value.strip())
        if match is None:
            raise _range_error(value, where, "not a range of two integers")
        low, high = int(match.group(1)), int(match.group(2))
        if low > high:
            raise _range_error(value, where, f"the range is empty ({low} > {high})")
        if high - low + 1 > MAX_RANGE:
            raise _range_error(
                value, where, f"the range has {high - low + 1} values (at most {MAX_RANGE})"
            )
        out.extend(range(low, high + 1))
    return out


def split_values(text, where):
    """``"a, b,,0..2"`` -> ``["a", "b", 0, 1, 2]`` (ranges expanded).

    Examples
    --------
    >>> from sklearn_uldp.cli._values import split_values
    >>> split_values("a, b,,0..2", "--categories")
    ['a', 'b', 0, 1, 2]
    """
    items = [v.strip() for v in text.split(",") if v.strip() != ""]
    return expand_values(items, where)


def _is_int(value):
    if isinstance(value, (bool, np.bool_)):
        return False
    if isinstance(value, (int, np.integer)):
        return True
    return isinstance(value, str) and _INT.fullmatch(value) is not None


def typed_domain(values, missing_label=None):
    """Categories as integers when every one is an integer, else as text.

    Parameters
    ----------
    values : list of str or int
        The categories as given (ranges expanded).
    missing_label : str or None, default=None
        Appended when not already there (``--missing category``); ignored
        when deciding the kind of the domain.

    Returns
    -------
    categories : list
    integer : bool
        Whether the column is an integer column.

    Examples
    --------
    >>> from sklearn_uldp.cli._values import typed_domain
    >>> typed_domain(["1", "2", "10"])
    ([1, 2, 10], True)
    >>> typed_domain(["02139", "10001"])
    (['02139', '10001'], False)
    >>> typed_domain([0, 1], missing_label="(missing)")
    ([0, 1, '(missing)'], True)
    """
    label = missing_label
    kept = [v for v in values if label is None or str(v) != str(label)]
    integer = bool(kept) and all(_is_int(v) for v in kept)
    if integer:
        cats = [int(v) for v in kept]
    else:
        cats = [str(v) for v in kept]
    if label is not None:
        label = typed_like(label, integer)
        if label not in cats:
            cats.append(label)
    return cats, integer


def typed_like(value, integer):
    """A value given as text (``--sensitive``, a label) in a column's kind."""
    if integer and _is_int(value):
        return int(value)
    return value if integer else str(value)


def _number(text):
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def learned_domain(values, missing_label=None):
    """The sorted domain of the values seen in a column (read as text).

    Integers when every value is one; else text, sorted numerically when
    every value is a number.

    Parameters
    ----------
    values : iterable of str
        The distinct non-missing values.
    missing_label : str or None, default=None
        Appended (the column had missing values and ``--missing category``).

    Returns
    -------
    categories : list
    integer : bool

    Examples
    --------
    >>> from sklearn_uldp.cli._values import learned_domain
    >>> learned_domain(["10", "2", "1.0"])
    ([1, 2, 10], True)
    >>> learned_domain(["10.5", "2.5", "nan"])[0]
    ['2.5', '10.5', 'nan']
    >>> learned_domain(["b", "a"], "(missing)")
    (['a', 'b', '(missing)'], False)
    """
    values = list(values)
    integer = bool(values) and all(re.fullmatch(_INT_VALUE, v) is not None for v in values)
    if integer:
        cats = sorted({int(v.split(".", 1)[0]) for v in values})
    else:
        numbers = [_number(v) for v in values]
        if values and all(n is not None for n in numbers):
            cats = [v for _, v in sorted(zip(numbers, values, strict=True))]
        else:
            # Text, numbers among it first and in numeric order.
            cats = sorted(
                values,
                key=lambda v: (0, _number(v), v) if _number(v) is not None else (1, 0.0, v),
            )
    if missing_label is not None:
        label = typed_like(missing_label, integer)
        if label not in cats:
            cats.append(label)
    return cats, integer


def to_domain_type(series, integer, fill=None):
    """Convert a column read as text to its kind; fill missing values.

    Parameters
    ----------
    series : pandas.Series of str (missing values None)
    integer : bool
        Convert the values that are integers (``"3"``, ``"3.0"``) to int;
        other values stay text, so the mechanism names them as unknown.
    fill : object or None, default=None
        Replaces missing values (the missing label), unless None.

    Returns
    -------
    series : pandas.Series
        ``int64`` when every value is an integer, else ``object``.

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn_uldp.cli._values import to_domain_type
    >>> to_domain_type(pd.Series(["1", "20", "3.0"]), True).tolist()
    [1, 20, 3]
    >>> to_domain_type(pd.Series(["1", None]), True, "(missing)").tolist()
    [1, '(missing)']
    """
    missing = series.isna()
    if integer:
        is_int = series.str.fullmatch(_INT_VALUE).fillna(False).astype(bool)
        if is_int.all():
            return _to_int(series)
        out = series.astype(object).copy()
        if is_int.any():
            out[is_int] = _to_int(series[is_int]).astype(object)
    else:
        out = series.astype(object)
    if fill is not None and missing.any():
        out = out.where(~missing, fill)
    return out


def _to_int(series):
    digits = series.str.split(".", n=1).str[0]
    values = pd.to_numeric(digits)
    if not pd.api.types.is_integer_dtype(values):  # beyond int64: Python ints
        return digits.map(int).astype(object)
    return values.astype("int64")
