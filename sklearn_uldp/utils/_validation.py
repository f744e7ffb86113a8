"""Input validation shared by mechanisms and estimators.

Every error names what is wrong and how to fix it; inputs are never modified.
No message quotes a user's value (a category, an item, a number, a report, a
secret): it gives counts, kinds, positions and column names
(:func:`describe_values`, :func:`positions`), so that a log of errors and
warnings never carries the data it is about.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "validate_params_with_hints",
    "check_epsilon",
    "check_theta",
    "check_categories",
    "check_sensitive",
    "check_list_shape",
    "real_to_float",
    "safe_ndim",
    "check_sensitive_mask",
    "check_channel_categories",
    "check_realizable",
    "realized_probability",
    "UNIFORM_RESOLUTION",
    "EPSILON_RTOL",
    "is_missing",
    "encode_labels",
    "bool_mismatch_hint",
    "resolve_blocks",
    "check_in_memory",
    "describe_values",
    "positions",
    "non_numeric_error",
    "DENSE_REPORTS_LIMIT",
    "dense_reports_warning",
    "warn_dense_reports",
]


# ------------------------------------------------------------ messages
#: The kinds of values a message names instead of the values themselves.
_KIND_NAMES = {
    "missing": "missing",
    "bool": "boolean",
    "int": "integer",
    "float": "float",
    "infinite": "infinite",
    "str": "text",
    "empty": "empty text",
    "bytes": "bytes",
}


def _value_kind(v: Any) -> str:
    if v is None or v is pd.NA or v is pd.NaT:
        return "missing"
    if isinstance(v, (bool, np.bool_)):
        return "bool"
    if isinstance(v, (numbers.Integral, np.integer)):
        return "int"
    if isinstance(v, (numbers.Real, np.floating)):
        x = float(v)
        return "missing" if math.isnan(x) else "infinite" if math.isinf(x) else "float"
    if isinstance(v, (str, np.str_)):
        return "str" if str(v).strip() else "empty"
    if isinstance(v, (bytes, np.bytes_)):
        return "bytes"
    return type(v).__name__


def describe_values(values: Any) -> str:
    """Count values and say their kinds, without showing any of them.

    Error messages and warnings point at offending values this way: a log
    of messages must never carry a user's data.

    Parameters
    ----------
    values : array-like
        The offending values (one entry per occurrence).

    Returns
    -------
    text : str

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp.utils._validation import describe_values
    >>> describe_values(np.array(["x", "y", "x", True, None, ""], dtype=object))
    '6 values (5 distinct: 3 text, 1 boolean, 1 missing, 1 empty text)'
    >>> describe_values(["x"])
    '1 value (text)'
    """
    flat = np.asarray(values, dtype=object).ravel()
    n = int(flat.size)
    kinds: dict[str, int] = {}
    for v in flat.tolist():
        kind = _value_kind(v)
        kinds[kind] = kinds.get(kind, 0) + 1
    listed = ", ".join(
        f"{count} {_KIND_NAMES.get(kind, kind)}" if len(kinds) > 1 else _KIND_NAMES.get(kind, kind)
        for kind, count in sorted(kinds.items(), key=lambda kv: -kv[1])
    )
    try:
        distinct = int(pd.unique(flat).size) if n > 1 else n
    except TypeError:  # unhashable entries
        distinct = None
    shown = f"{distinct} distinct: " if distinct is not None and n > 1 else ""
    return f"{n} value{'s' if n != 1 else ''} ({shown}{listed})"


def positions(mask: Any, limit: int = 5, *, what: str = "row") -> str:
    """Where the true entries of a mask are: ``"rows 2, 7 and 3 more (from 0)"``.

    Examples
    --------
    >>> from sklearn_uldp.utils._validation import positions
    >>> positions([False, True, False, True])
    'rows 1, 3 (counted from 0)'
    """
    where = np.flatnonzero(np.asarray(mask, dtype=bool).ravel())
    shown = where[:limit].tolist()
    more = int(where.size) - len(shown)
    text = f"{what}{'s' if where.size > 1 else ''} {', '.join(map(str, shown))}"
    return text + (f" and {more} more" if more else "") + " (counted from 0)"


def non_numeric_error(values: Any, *, name: str = "X") -> TypeError:
    """The error for values a numeric mechanism cannot read as numbers.

    Says how many entries are not numbers, of which kinds (text, booleans,
    missing values mixed in, ...) and where, never what they are, and how
    to fix it. Object columns that mix booleans, text and None get this
    message rather than numpy's conversion text.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp.utils._validation import non_numeric_error
    >>> error = non_numeric_error(np.array([[1.5], [True], [""], [None]], dtype=object))
    >>> print(str(error)[:76])
    X holds 2 entries that are not numbers (2 distinct: 1 boolean, 1 empty text;
    """
    arr = np.asarray(values, dtype=object)
    flat = arr.ravel()
    kinds = np.array([_value_kind(v) for v in flat.tolist()], dtype=object)
    missing = kinds == "missing"
    bad = ~np.isin(kinds, ["int", "float", "missing"])
    rows = bad.reshape(arr.shape).any(axis=1) if arr.ndim == 2 else bad
    described = describe_values(flat[bad]).split(" (", 1)[1].rstrip(")")
    text = (
        f"{name} holds {int(bad.sum())} entr{'y' if bad.sum() == 1 else 'ies'} that "
        f"{'is' if bad.sum() == 1 else 'are'} not numbers ({described}; {positions(rows)})"
    )
    if missing.any():
        text += f" and {int(missing.sum())} missing value{'s' if missing.sum() > 1 else ''}"
    others = sorted(set(kinds[bad].tolist()) - set(_KIND_NAMES))
    if others:  # dicts, lists, objects: not even text to convert
        text += (
            f"; the {', '.join(others)} entries cannot be converted at all (float() "
            "argument must be a string or a real number)"
        )
    return TypeError(
        text + ". A numeric mechanism takes numbers: convert the column first "
        '(pandas.to_numeric(column, errors="coerce") turns text into NaN, which you '
        "then impute or drop), or privatize a categorical column with a categorical "
        "mechanism (e.g. RandomizedResponse)."
    )


def validate_params_with_hints(estimator, hints):
    """Validate ``estimator``'s parameters against its ``_parameter_constraints``.

    Same check as ``BaseEstimator._validate_params`` (it raises scikit-learn's
    ``InvalidParameterError``, whose message says what is wrong), but the
    message of a parameter listed in ``hints`` is followed by that hint, which
    says how to fix it.

    Parameters
    ----------
    estimator : BaseEstimator
    hints : dict of str -> str
        Parameter name -> how to fix an invalid value.
    """
    from sklearn.utils._param_validation import (
        InvalidParameterError,
        validate_parameter_constraints,
    )

    params = estimator.get_params(deep=False)
    caller = type(estimator).__name__
    for name, constraints in estimator._parameter_constraints.items():
        if name not in params:
            continue
        try:
            validate_parameter_constraints(
                {name: constraints}, {name: params[name]}, caller_name=caller
            )
        except InvalidParameterError as exc:
            if name not in hints:
                raise
            raise InvalidParameterError(f"{exc} {hints[name]}") from None


def real_to_float(value: Any) -> float:
    """``float(value)``, with an integer too large for a float read as +-inf.

    ``float(10**400)`` raises OverflowError; a budget, a probability or a
    bound that large is refused (or capped) by the caller's own check of an
    infinite value, with its own message.
    """
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def check_epsilon(epsilon: Any, name: str = "epsilon", *, allow_inf: bool = False) -> float:
    """Validate a privacy budget and return it as a float.

    Raises
    ------
    ValueError
        If ``epsilon`` is not a finite positive real number.
    """
    if isinstance(epsilon, bool) or not isinstance(epsilon, numbers.Real):
        raise TypeError(
            f"{name} must be a positive real number (the privacy budget), "
            f"got {epsilon!r} of type {type(epsilon).__name__}."
        )
    epsilon = real_to_float(epsilon)
    if math.isnan(epsilon):
        raise ValueError(f"{name} is NaN; pass a positive privacy budget such as 1.0.")
    if math.isinf(epsilon) and not allow_inf:
        raise ValueError(
            f"{name}=inf gives no privacy at all. Use NonPrivate() for a "
            "no-privacy baseline, or pass a finite positive budget."
        )
    if epsilon <= 0:
        raise ValueError(
            f"{name} must be > 0 (smaller is more private), got {epsilon}. "
            "epsilon=0 would make the reports independent of the data."
        )
    return epsilon


def check_theta(theta, name="theta"):
    """Validate a RAPPOR keep-probability ``theta`` in the open interval (0, 1)."""
    if isinstance(theta, bool) or not isinstance(theta, numbers.Real):
        raise TypeError(
            f"{name} must be a real number in (0, 1), got {theta!r} of type "
            f"{type(theta).__name__}. Pass e.g. theta=0.5 (OUE)."
        )
    theta = real_to_float(theta)
    if not (0.0 < theta < 1.0):  # also False for NaN
        raise ValueError(
            f"{name} must lie strictly between 0 and 1, got {theta}. It is the "
            "probability that the bit of the true category is reported as 1; "
            "use theta=None for basic RAPPOR or theta=0.5 for OUE."
        )
    return theta


def is_missing(values: Any) -> np.ndarray:
    """Elementwise test for missing values (None, NaN, pd.NA, NaT)."""
    if isinstance(values, np.ndarray):
        # numbers need no Python object per value (a domain of 10^5 integers
        # took 10 ms per check)
        if values.dtype.kind in "biu":
            return np.zeros(values.shape, dtype=bool)
        if values.dtype.kind == "f":
            return np.isnan(values)
    return np.asarray(pd.isna(np.asarray(values, dtype=object)), dtype=bool)


def _missing_mask(values):
    """Mask of missing values of a 1-D array, or None when there are none."""
    kind = values.dtype.kind
    if kind in "biuSU":
        return None
    mask = np.isnan(values) if kind in "fc" else is_missing(values)
    return mask if mask.any() else None


def encode_labels(
    values: Any, categories: Any, index: Any = None, *, strict_bools: bool = False
) -> np.ndarray:
    """Position of each value in ``categories`` (-1 for values not in it).

    Every missing-value marker (None, NaN, pd.NA, NaT) matches the missing
    category of ``categories``, if it has one: ``pd.Index.get_indexer`` alone
    does not (with pandas >= 3, ``Index(["a", None])`` has the ``str`` dtype
    and does not find ``None`` in ``[None]``, but does in ``["a", None]``).

    Parameters
    ----------
    values : ndarray of shape (n,)
    categories : ndarray of shape (k,)
    index : pandas.Index, default=None
        ``pd.Index(categories)``, if already built.
    strict_bools : bool, default=False
        Whether a boolean only matches a boolean category (and a number only
        a numeric one). A lookup alone matches ``True`` with the category
        ``1`` (Python hashes them alike); callers that report such type
        mismatches themselves may leave it False.

    Returns
    -------
    codes : ndarray of intp, shape (n,)
    """
    values = np.asarray(values)
    categories = np.asarray(categories)
    if index is None:
        index = pd.Index(categories)
    missing = _missing_mask(values)
    if missing is None:
        codes = index.get_indexer(values).astype(np.intp, copy=False)
    else:
        codes = np.full(values.shape[0], -1, dtype=np.intp)
        codes[~missing] = index.get_indexer(values[~missing])
        missing_categories = _missing_mask(categories)
        if missing_categories is not None:
            codes[missing] = np.flatnonzero(missing_categories)[0]
    if strict_bools:
        _unmatch_bools(values, categories, codes)
    return codes


def _is_bool(v):
    return isinstance(v, (bool, np.bool_))


def _bool_flags(values):
    """Which entries of a 1-D array are booleans (a bool, or None if none is)."""
    kind = values.dtype.kind
    if kind == "b":
        return True
    if kind != "O":
        return None
    # A C pass recognises the common homogeneous columns; only mixed object
    # columns need the per-value test.
    inferred = pd.api.types.infer_dtype(values, skipna=True)
    if inferred == "boolean":
        return True
    if inferred in (
        "string",
        "bytes",
        "integer",
        "floating",
        "mixed-integer-float",
        "empty",
        "decimal",
        "complex",
    ):
        return None
    flags = np.fromiter(map(_is_bool, values), dtype=bool, count=values.shape[0])
    return flags if flags.any() else None


def _unmatch_bools(values, categories, codes):
    """Unset the codes of booleans matched to numbers, and of numbers matched to booleans.

    Python and pandas hash ``True`` like ``1`` (and ``False`` like ``0``), so a
    lookup alone maps ``True`` to the category ``1`` and ``1.0`` to the category
    ``True``. A boolean is not a number: such values are unknown (``codes`` is
    updated in place).
    """
    # Between typed arrays pandas already keeps booleans and numbers apart.
    if codes.size == 0 or (values.dtype != object and categories.dtype != object):
        return
    cat_flags = _bool_flags(categories)
    if cat_flags is None:
        # Without boolean categories, only a boolean equal to a numeric 0/1
        # category can be matched wrongly.
        if not any(
            c == 0 or c == 1
            for c in categories.tolist()
            if isinstance(c, (numbers.Number, np.number))
        ):
            return
        cat_flags = np.zeros(categories.shape[0], dtype=bool)
    elif cat_flags is True:
        cat_flags = np.ones(categories.shape[0], dtype=bool)
    value_flags = _bool_flags(values)
    if value_flags is None:
        value_flags = False
    matched = codes >= 0
    if not matched.any():
        return
    wrong = matched.copy()
    wrong[matched] = np.broadcast_to(value_flags, codes.shape)[matched] != cat_flags[codes[matched]]
    codes[wrong] = -1


def bool_mismatch_hint(unknown, categories):
    """A sentence for an error listing ``unknown`` values, or ``""``.

    Says that booleans and numbers are distinct categories when the unknown
    values are booleans and the domain has none, or the reverse.
    """
    unknown = [v for v in unknown if not _is_missing_scalar(v)]
    cats = [c for c in np.asarray(categories, dtype=object).tolist() if not _is_missing_scalar(c)]
    unknown_bool = any(map(_is_bool, unknown))
    cats_bool = any(map(_is_bool, cats))
    if (unknown_bool and not all(map(_is_bool, cats))) or (
        cats_bool and not all(map(_is_bool, unknown))
    ):
        return (
            " Booleans and numbers are distinct categories (True is not the "
            "category 1, and 1 or 1.0 is not the category True): convert the "
            "column to the type of the categories."
        )
    return ""


def _is_missing_scalar(v):
    try:
        return bool(pd.isna(v))
    except (TypeError, ValueError):
        return False


def check_categories(categories: Any) -> np.ndarray:
    """Validate a user-given domain and return it as a 1-D numpy array.

    The domain must be non-empty, one-dimensional, hold at least two values and
    have no duplicates (a missing-value marker counts once).
    """
    if isinstance(categories, (str, bytes)):
        raise ValueError(
            f"categories must be 'auto' or a list of category values, got {categories!r}."
        )
    if isinstance(categories, (set, frozenset)):
        raise ValueError(
            "categories must be an ordered list of values (the order of the "
            f"estimate and of bit-vector reports), got a set {categories!r:.80}: "
            "pass sorted(...) or a list."
        )
    ndim, shape = _ndim_shape(categories)
    if ndim != 1:
        raise ValueError(
            "categories must be one-dimensional (the list of possible values of "
            f"one column), got an array of shape {shape}."
        )
    cats = as_label_array(categories)
    if cats.ndim != 1:
        raise ValueError(
            "categories must be one-dimensional (the list of possible values of "
            f"one column), got an array of shape {cats.shape}."
        )
    if cats.size < 2:
        raise ValueError(
            f"categories must hold at least two values, got {cats.size}: a "
            "one-value domain has nothing to estimate."
        )
    _check_hashable(cats, "categories")
    missing = is_missing(cats)
    if missing.sum() > 1:
        raise ValueError(
            f"categories contain duplicates ({int(missing.sum())} missing-value "
            "markers, and None/NaN/NA all denote the same missing value); keep "
            "one of them (remove the repeated values)."
        )
    index = pd.Index(cats)
    if not index.is_unique:
        dup = index[index.duplicated()].unique().tolist()
        raise ValueError(
            f"categories contain duplicates {dup[:10]}; each category must appear "
            "once (remove the repeated values)."
        )
    return cats


def safe_ndim(values: Any) -> int:
    """``np.ndim(values)``, also for a ragged list (2: nested), which numpy refuses.

    For checks of parameters and specs: ``np.ndim([[0], 0])`` raises numpy's
    "inhomogeneous shape" before the caller can say what is wrong.

    Examples
    --------
    >>> from sklearn_uldp.utils._validation import safe_ndim
    >>> safe_ndim([0, 1]), safe_ndim([[0], 1]), safe_ndim(3.0)
    (1, 2, 0)
    """
    return int(_ndim_shape(values)[0])


def _ndim_shape(values):
    """``np.ndim`` and ``np.shape`` of ``values``, also for lists numpy cannot type.

    numpy refuses some lists outright (``[b"\\xff", ""]`` fails to decode the
    bytes as text, ragged nested lists are inhomogeneous): such a list is
    one-dimensional unless one of its items is itself a sequence.
    """
    try:
        return np.ndim(values), np.shape(values)
    except (ValueError, TypeError, UnicodeError):
        items = list(values)
        nested = [
            v
            for v in items
            if isinstance(v, (list, tuple, set, dict, np.ndarray, pd.Series, pd.Index))
        ]
        if nested:
            return 2, f"({len(items)}, ...) (nested sequences)"
        return 1, (len(items),)


def as_label_array(values: Any) -> np.ndarray:
    """Return ``values`` as a 1-D numpy array of labels.

    Numeric and boolean labels keep their numpy dtype; everything else (strings,
    mixed types, pandas extension types) becomes an object array so that no
    label is coerced into another (numpy would turn ``["a", 1]`` into strings).
    """
    if isinstance(values, np.ndarray) and values.dtype.kind in "biuf":
        return values.ravel()
    if isinstance(values, np.ndarray) and values.dtype.kind in "mM":
        # Timestamps/Timedeltas (numpy's object cast of nanosecond dates
        # gives integers, which no datetime category equals).
        values = pd.Series(values.ravel())
    if isinstance(values, (pd.Series, pd.Index)):
        values = values.to_numpy(dtype=object)
    obj = np.asarray(values, dtype=object).ravel()
    kind = pd.api.types.infer_dtype(obj, skipna=False)
    if kind == "mixed-integer-float" and any(
        isinstance(v, (int, np.integer)) and abs(int(v)) > 2**53 for v in obj.tolist()
    ):
        # A float cannot hold these integers: 2**62 + 1 would become 2**62.
        return obj
    if kind in ("integer", "floating", "boolean", "mixed-integer-float"):
        return np.asarray(obj.tolist())
    return obj


def _check_hashable(values: np.ndarray, name: str) -> None:
    """Refuse values that cannot be categories (lists, sets, dicts: unhashable)."""
    bad = []
    for v in values.tolist() if values.dtype == object else ():
        try:
            hash(v)
        except TypeError:
            bad.append(v)
    if bad:
        raise ValueError(
            f"{name} holds {len(bad)} value(s) that cannot be categories, e.g. "
            f"a {type(bad[0]).__name__}: a category is one value "
            "such as a string or a number. Flatten the list, or join a tuple of "
            "values into one label."
        )


def check_list_shape(values: Any, *, name: str, what: str, example: str, max_ndim: int = 1) -> None:
    """Refuse a list nested deeper than ``max_ndim`` (e.g. ``[["a"]]`` for a list of values).

    numpy would flatten ``[["a"]]`` silently (``ravel``) or fail with its own
    "inhomogeneous shape" on a ragged list; every parameter that holds a list of
    values (the sensitive categories, items, ranges) is checked by this one rule
    so that all mechanisms refuse the same shapes with the same message. The
    message gives the shape, never the values.

    Parameters
    ----------
    values : object
        The parameter as the user gave it (strings and bytes are scalars).
    name : str
        The parameter's name, for the message.
    what : str
        What one entry is, plural (``"categories"``, ``"items"``).
    example : str
        A valid value of the parameter, for the message.
    max_ndim : int, default=1
        1 for a list of values, 2 for a list of pairs (ranges).

    Raises
    ------
    ValueError
        If ``values`` is nested deeper than ``max_ndim``.

    Examples
    --------
    >>> from sklearn_uldp.utils._validation import check_list_shape
    >>> check_list_shape(["a", "b"], name="sensitive", what="categories", example="['a']")
    >>> check_list_shape([["a"]], name="sensitive", what="categories", example="['a']")
    Traceback (most recent call last):
    ...
    ValueError: sensitive must be a flat list of categories (one-dimensional), ...
    """
    if isinstance(values, (str, bytes)) or callable(values):
        return
    if isinstance(values, (set, frozenset)):
        values = list(values)
    depth = _nesting_depth(values, max_ndim + 1)
    if depth <= max_ndim:
        return
    try:
        shape = f"shape {np.shape(values)}"
    except (ValueError, TypeError, UnicodeError):
        shape = "a ragged nesting (lists of different lengths)"
    flat = "one-dimensional" if max_ndim == 1 else f"at most {_DIMS[max_ndim]}-dimensional"
    kind = "a flat list of" if max_ndim == 1 else "a list of"
    raise ValueError(
        f"{name} must be {kind} {what} ({flat}), got {shape}: it nests lists "
        f"{'in lists' if max_ndim == 1 else 'one level too deep'}. Remove the extra "
        f"level of brackets, e.g. {name}={example}."
    )


_DIMS = {2: "two", 3: "three"}
# Sets and dicts inside a list are not a dimension: _check_hashable refuses
# them as values that cannot be categories.
_SEQUENCES = (list, tuple, np.ndarray, pd.Series, pd.Index)


def _nesting_depth(values: Any, limit: int) -> int:
    """How deep ``values`` nests sequences (0: a scalar), counted up to ``limit``.

    Unlike ``np.ndim`` it also measures ragged lists (``[1, [2, 3]]``: 2),
    which numpy refuses, and does not read strings as sequences.
    """
    if isinstance(values, np.ndarray) and values.dtype != object:
        return values.ndim
    if not isinstance(values, _SEQUENCES):
        # a DataFrame or a sparse matrix: its own dimensions
        ndim = getattr(values, "ndim", 0)
        return ndim if isinstance(ndim, int) else 0
    # An object array nests its own dimensions, then whatever its entries hold.
    outer = values.ndim if isinstance(values, np.ndarray) else 1
    if limit <= outer:
        return outer
    inner = 0
    for v in values.ravel() if isinstance(values, np.ndarray) else values:
        inner = max(inner, _nesting_depth(v, limit - outer))
        if inner >= limit - outer:
            break
    return outer + inner


def check_sensitive(sensitive: Any, categories: Any, *, name: str = "sensitive") -> np.ndarray:
    """Resolve ``sensitive`` into a boolean mask over ``categories``.

    Parameters
    ----------
    sensitive : array-like of categories, boolean mask, or callable
        The sensitive values X_S, a boolean mask aligned with ``categories``,
        or a predicate ``f(category) -> bool``.
    categories : ndarray of shape (k,)

    Returns
    -------
    mask : ndarray of bool, shape (k,)
    """
    k = len(categories)
    if sensitive is None:
        raise ValueError(
            f"{name} is required: pass the list of sensitive categories X_S "
            "(a list of values, a boolean mask over categories, or a predicate)."
        )
    if callable(sensitive):
        mask = np.fromiter((bool(sensitive(c)) for c in categories), bool, count=k)
    else:
        if isinstance(sensitive, (str, bytes)):
            sensitive = [sensitive]
        elif isinstance(sensitive, (set, frozenset)):
            # A set of values (the order of X_S does not matter).
            sensitive = list(sensitive)
        check_list_shape(
            sensitive,
            name=name,
            what="categories (or a boolean mask over them)",
            example="['a', 'b']",
        )
        values = np.asarray(sensitive, dtype=object).ravel()
        _check_hashable(values, name)
        if values.size == k and all(isinstance(v, (bool, np.bool_)) for v in values):
            mask = values.astype(bool)
        else:
            positions = encode_labels(values, np.asarray(categories), strict_bools=True)
            unknown = values[positions < 0]
            if unknown.size:
                # Counts only: a sensitive value may itself be private.
                raise ValueError(
                    f"{name} holds {unknown.size} value(s) that are not categories "
                    f"(of {len(values)}). Sensitive values must be part of the "
                    "domain; add them to `categories` or fix their spelling."
                )
            if len(set(positions.tolist())) != len(positions):
                n_repeated = len(positions) - len(set(positions.tolist()))
                raise ValueError(
                    f"{name} lists a category more than once ({n_repeated} "
                    "repetition(s)). List each sensitive category once."
                )
            mask = np.zeros(k, dtype=bool)
            mask[positions] = True
    if not mask.any():
        raise ValueError(
            "The sensitive set is empty: with no sensitive category a "
            "utility-optimized mechanism releases every value unchanged. Mark at "
            "least one category sensitive, or use NonPrivate() if releasing raw "
            "data is really intended."
        )
    return mask


def check_channel_categories(categories: Any) -> np.ndarray:
    """Validate the domain of a channel; keep a numpy array as it is.

    The rules of :func:`check_categories` (non-empty, one-dimensional, at least
    two values, no duplicates, a missing-value marker counted once). A list
    (e.g. from a JSON spec) becomes an array as by :func:`as_label_array`, so
    that ``["a", 1]`` is not coerced to strings; a numpy array (the fitted
    ``categories_`` of a mechanism) keeps its dtype.
    """
    if isinstance(categories, np.ndarray) and categories.ndim == 1:
        check_categories(categories)
        return categories
    return check_categories(categories)


def check_sensitive_mask(
    sensitive: Any, n_categories: int, *, name: str = "sensitive"
) -> np.ndarray:
    """Validate a boolean mask of sensitive categories, as a spec holds it.

    Parameters
    ----------
    sensitive : array-like of bool of shape (k,)
        True for a sensitive category. Numbers, strings or labels are refused
        (a spec stores the mask, not the values).
    n_categories : int
        k, the size of the domain.
    name : str, default="sensitive"

    Returns
    -------
    mask : ndarray of bool of shape (k,)

    Raises
    ------
    TypeError
        If an entry is not a boolean.
    ValueError
        If the mask has the wrong length or marks no category sensitive.
    """
    # _nesting_depth, not np.ndim: a ragged list (a tampered spec) is refused
    # here, not by numpy's "inhomogeneous shape".
    if isinstance(sensitive, (str, bytes)) or _nesting_depth(sensitive, 2) != 1:
        raise ValueError(
            f"{name} must be a one-dimensional boolean mask over the "
            f"{n_categories} categories, got a {type(sensitive).__name__} of shape "
            f"{_ndim_shape(sensitive)[1]}. Give one true/false per category, e.g. "
            "[true, false, false]."
        )
    arr = np.asarray(sensitive)
    if arr.dtype != bool:
        values = np.asarray(sensitive, dtype=object)
        bad = [v for v in values.tolist() if not isinstance(v, (bool, np.bool_))]
        if bad:
            raise TypeError(
                f"{name} must hold booleans (true/false), one per category; got "
                f"{len(bad)} other value(s) (e.g. a {type(bad[0]).__name__}). A spec "
                "stores the mask, aligned with categories."
            )
        arr = values.astype(bool)
    if arr.shape != (n_categories,):
        raise ValueError(
            f"{name} must have one entry per category ({n_categories}), got "
            f"{arr.shape[0]}. Align the mask with categories."
        )
    if not arr.any():
        raise ValueError(
            f"{name} marks no category sensitive: with no sensitive category a "
            "utility-optimized mechanism releases every value unchanged. Mark at "
            "least one category sensitive (use the identity channel, NonPrivate, "
            "if releasing raw data is really intended)."
        )
    return arr.copy()


# ---------------------------------------------------------------------------
# Floating-point realizability of a channel.
# ---------------------------------------------------------------------------
#: Resolution of the uniforms the samplers compare probabilities with:
#: ``Generator.random()`` returns multiples of 2**-53, so ``U < p`` happens
#: with probability ``ceil(p 2**53) 2**-53``, not p.
UNIFORM_RESOLUTION = 2.0**-53
#: Largest relative excess of a channel's realized privacy loss over its
#: nominal epsilon (floating-point rounding of the probabilities it samples).
EPSILON_RTOL = 1e-7
# How far a sampled probability may be from its nominal value: one grid step
# for a comparison ``U < p``, a few for the bins of a uniform choice (k-RR),
# and one more for the rounding of the formula itself.
_PROBABILITY_ERROR = 4 * UNIFORM_RESOLUTION
# A likelihood ratio involves at most four sampled probabilities (two bits of
# a RAPPOR report, each from the two inputs).
_RATIO_TERMS = 4


def realized_probability(p):
    """Probability that a 53-bit uniform ``U`` satisfies ``U < p``.

    ``numpy.random.Generator.random`` returns ``j 2**-53`` for a uniform
    integer j, so the event ``U < p`` has probability ``ceil(p 2**53) 2**-53``:
    a p within 2**-53 of 1 is realized as exactly 1 (the value is always
    kept), a positive p below 2**-53 as 2**-53.

    Parameters
    ----------
    p : float or array-like of float in [0, 1]

    Returns
    -------
    realized : float or ndarray

    Examples
    --------
    >>> from sklearn_uldp.utils._validation import realized_probability
    >>> realized_probability(0.25), realized_probability(1 - 2.0**-60)
    (0.25, 1.0)
    """
    p = np.clip(np.asarray(p, dtype=float), 0.0, 1.0)
    out = np.ldexp(np.ceil(np.ldexp(p, 53)), -53)
    return float(out) if out.ndim == 0 else out


def _probabilities_at(probabilities_at, epsilon):
    """The sampler's probabilities at ``epsilon``; NaN where its formula fails.

    At an extreme budget (epsilon = 1e-300) a formula may divide by a value
    that underflowed to 0: that budget is not realizable, which
    :func:`check_realizable` says in its own words.
    """
    # Overflowing exponentials at the large budgets of the search grid give
    # non-finite probabilities, which are unrealizable: no numpy warning.
    try:
        with np.errstate(all="ignore"):
            return probabilities_at(epsilon)
    except (ZeroDivisionError, OverflowError):
        return [math.nan]


def _realizable(epsilon, probabilities):
    p = np.asarray(probabilities, dtype=float)
    if not np.isfinite(p).all():
        return False, float("nan")
    p_min = float(p.min())
    excess = np.inf if p_min <= 0 else _RATIO_TERMS * _PROBABILITY_ERROR / p_min
    return bool(excess <= EPSILON_RTOL * epsilon), p_min


def usable_epsilon_range(probabilities_at):
    """The interval of budgets for which :func:`check_realizable` passes.

    Parameters
    ----------
    probabilities_at : callable
        ``probabilities_at(epsilon)`` -> the probabilities the sampler draws
        with at that budget (as in :func:`check_realizable`).

    Returns
    -------
    (low, high) : tuple of float, or None if no budget is usable.
    """
    grid = np.geomspace(1e-14, 1e4, 361)
    ok = np.array([_realizable(e, _probabilities_at(probabilities_at, e))[0] for e in grid])
    if not ok.any():
        return None
    first, last = np.flatnonzero(ok)[[0, -1]]

    def edge(good, bad):
        for _ in range(60):  # bisection on a log scale
            mid = math.sqrt(good * bad)
            if _realizable(mid, _probabilities_at(probabilities_at, mid))[0]:
                good = mid
            else:
                bad = mid
        return good

    low = grid[first] if first == 0 else edge(grid[first], grid[first - 1])
    high = grid[last] if last == grid.size - 1 else edge(grid[last], grid[last + 1])
    return float(low), float(high)


def _round_inward(x, *, up):
    """``x`` to 5 significant digits, rounded into the usable interval."""
    scale = 10.0 ** (math.floor(math.log10(x)) - 4)
    return (math.ceil(x / scale) if up else math.floor(x / scale)) * scale


def check_realizable(epsilon, probabilities_at, *, what):
    """Refuse a budget whose sampled channel would not keep its epsilon.

    The samplers draw float64 uniforms on a 2**-53 grid, so every probability
    p they use is realized up to a few grid steps. A ratio of realized
    probabilities then exceeds the nominal one by at most a relative
    ``4 * 4 * 2**-53 / p_min``, where p_min is the smallest probability (or
    complement) the sampler uses. The budget is refused when that excess is
    more than :data:`EPSILON_RTOL` times epsilon: for a large epsilon some
    probability is so close to 0 or 1 that it is realized as exactly 0 or 1
    (e.g. k-RR keeping every value from epsilon ~ 36 on, i.e. releasing raw
    data), and for a tiny epsilon the rounding is larger than the budget
    itself (at epsilon = 1e-300 the channel would be NaN or degenerate).

    Parameters
    ----------
    epsilon : float
        The budget (finite, > 0).
    probabilities_at : callable
        ``probabilities_at(epsilon)`` -> array of every probability the
        sampler compares a uniform with, and their complements.
    what : str
        The channel, for the message (e.g. ``"k-RR with k=3"``).

    Raises
    ------
    ValueError
        Saying which budgets this channel can realize, and why.
    """
    ok, p_min = _realizable(epsilon, _probabilities_at(probabilities_at, epsilon))
    if ok:
        return
    span = usable_epsilon_range(probabilities_at)
    where = (
        "no budget is realizable for this channel"
        if span is None
        else "the usable budgets for this channel are "
        f"{_round_inward(span[0], up=True)!r} <= epsilon <= "
        f"{_round_inward(span[1], up=False)!r}"
    )
    raise ValueError(
        f"epsilon={epsilon!r} cannot be realized by {what}: the smallest "
        f"probability its sampler uses would be {p_min:.3g}, and float64 "
        "uniforms (resolution 2**-53) would realize a channel whose privacy "
        f"loss differs from epsilon by more than {EPSILON_RTOL:g} relative "
        "(too large a budget makes a probability round to exactly 0 or 1 and "
        "release raw data; too small a budget is below the rounding). "
        f"{where[0].upper()}{where[1:]}: pass an epsilon in that range."
    )


def resolve_blocks(blocks, categories):
    """Turn a block specification into integer block ids over ``categories``.

    Parameters
    ----------
    blocks : mapping, list of lists, array-like or callable
        * a mapping ``{category: block_label}``;
        * a list of lists (or tuples/sets) of categories, one per block;
        * an array-like of block labels aligned with ``categories``;
        * a callable ``f(category) -> block_label``.
    categories : array-like of shape (k,)

    Returns
    -------
    block_ids : ndarray of int of shape (k,)
        Block index of each category, numbered 0..m-1 in order of first
        appearance along ``categories``.
    """
    categories = np.asarray(categories)
    k = len(categories)
    index = pd.Index(np.asarray(categories, dtype=object))
    if callable(blocks) and not isinstance(blocks, dict):
        labels = [blocks(c) for c in categories]
    elif isinstance(blocks, dict):
        labels = []
        missing = []
        for c in categories:
            key = c.item() if isinstance(c, np.generic) else c
            if key in blocks:
                labels.append(blocks[key])
            else:
                missing.append(key)
        if missing:
            raise ValueError(
                f"blocks does not assign a block to the categories {missing[:10]}: "
                "every category must belong to exactly one block."
            )
        extra = set(blocks) - set(index.tolist())
        if extra:
            raise ValueError(
                f"blocks names values that are not categories: {sorted(map(repr, extra))[:10]}."
            )
    else:
        seq = list(blocks) if not isinstance(blocks, np.ndarray) else blocks
        nested = len(seq) > 0 and all(
            isinstance(b, (list, tuple, set, frozenset, np.ndarray)) for b in seq
        )
        if nested:
            labels = np.full(k, -1, dtype=np.int64)
            for j, members in enumerate(seq):
                members = np.asarray(list(members), dtype=object)
                # encode_labels: a missing-value category (None, NaN) matches
                # any missing marker, which Index.get_indexer does not do.
                pos = encode_labels(members, categories, index)
                if (pos < 0).any():
                    raise ValueError(
                        f"block {j} holds values that are not categories: "
                        f"{members[pos < 0].tolist()[:10]}."
                    )
                if (labels[pos] >= 0).any() or len(set(pos.tolist())) != len(pos):
                    raise ValueError(
                        "blocks must be a partition: a category appears in "
                        "more than one block (or twice in one block)."
                    )
                labels[pos] = j
            if (labels < 0).any():
                raise ValueError(
                    f"blocks do not cover the categories "
                    f"{categories[labels < 0].tolist()[:10]}: every category must "
                    "belong to exactly one block."
                )
            labels = labels.tolist()
        else:
            labels = list(np.asarray(seq, dtype=object).ravel())
            if len(labels) != k:
                raise ValueError(
                    f"blocks must be a mapping, a list of lists of categories, or "
                    f"{k} block labels aligned with categories; got {len(labels)} "
                    "labels."
                )
    for c, label in zip(np.asarray(categories).tolist(), labels, strict=True):
        try:
            hash(label)
        except TypeError:
            raise ValueError(
                f"blocks gives category {c!r} the block label {label!r:.60} "
                f"({type(label).__name__}), which cannot label a block: a block "
                "label is one value such as a string or a number (a callable "
                "must return one; a mapping must map each category to one)."
            ) from None
    codes, _ = pd.factorize(pd.Series(labels, dtype=object), sort=False)
    return codes.astype(np.int64)


def check_in_memory(X: Any, owner: str) -> None:
    """Refuse a lazy Dask collection where values are read into this process.

    A mechanism's ``fit``/``transform`` would convert it with ``numpy``,
    which computes the whole collection here and returns in-memory reports.
    """
    if hasattr(X, "__dask_graph__"):
        raise TypeError(
            f"{owner} got a lazy Dask {type(X).__name__}: privatizing it here would "
            "compute the whole collection into this process's memory. Privatize it "
            "where it lives with sklearn_uldp.parallel.privatize_partitions(ddf, "
            "mechanism) (lazy Dask reports, one independent random stream per "
            "partition; a DataFramePrivatizer's transform does the same for a "
            "whole table), or pass in-memory data (e.g. ddf.compute())."
        )


# ------------------------------------------------------------ memory
#: Dense reports larger than this many bytes get a warning before they are
#: allocated (:func:`warn_dense_reports`).
DENSE_REPORTS_LIMIT = 10**9


def _size(n_bytes: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n_bytes >= scale:
            return f"{n_bytes / scale:.1f} {unit}"
    return f"{int(n_bytes)} bytes"


def dense_reports_warning(
    n_rows: int, n_bits: int, *, owner: str, limit: float | None = None
) -> str | None:
    """The warning to give before ``n_rows`` dense reports of ``n_bits`` bits, or None.

    Dense bit-vector reports take one byte a bit; packed ones
    (``packed_output=True``) one bit a bit, rounded up to whole bytes per
    report. The decision is this function's, so it can be tested without
    allocating anything.

    Parameters
    ----------
    n_rows, n_bits : int
        Reports to allocate and bits per report.
    owner : str
        The mechanism, named in the message.
    limit : float or None, default=None
        Bytes above which the allocation is warned about (None:
        :data:`DENSE_REPORTS_LIMIT`, 1 GB).

    Returns
    -------
    message : str or None

    Examples
    --------
    >>> from sklearn_uldp.utils._validation import dense_reports_warning
    >>> dense_reports_warning(1000, 50, owner="RAPPOR") is None
    True
    >>> text = dense_reports_warning(10**6, 10_000, owner="RAPPOR")
    >>> text[:54], text[text.index("holds") :][:22]
    ('RAPPOR is about to allocate 10.0 GB of dense reports (', 'holds them in 1.2 GB (')
    """
    dense = float(n_rows) * float(n_bits)
    if dense <= (DENSE_REPORTS_LIMIT if limit is None else limit):
        return None
    packed = float(n_rows) * -(-int(n_bits) // 8)
    return (
        f"{owner} is about to allocate {_size(dense)} of dense reports ({int(n_rows):,} "
        f"rows x {int(n_bits):,} bits, one byte a bit): packed_output=True holds them in "
        f"{_size(packed)} (every estimator reads packed reports as they are), or "
        "privatize the rows in chunks. Pass packed_output=True to the mechanism."
    )


def warn_dense_reports(n_rows: int, n_bits: int, *, owner: str) -> None:
    """Warn (:class:`~sklearn_uldp.exceptions.LargeReportsWarning`) before large dense reports."""
    message = dense_reports_warning(n_rows, n_bits, owner=owner)
    if message is not None:
        import warnings

        from ..exceptions import LargeReportsWarning

        warnings.warn(message, LargeReportsWarning, stacklevel=5)
