"""Input validation shared by mechanisms and estimators.

Every error names what is wrong and how to fix it; inputs are never modified.
"""

import math
import numbers

import numpy as np
import pandas as pd

__all__ = [
    "validate_params_with_hints",
    "check_epsilon",
    "check_theta",
    "check_categories",
    "check_sensitive",
    "is_missing",
    "encode_labels",
]


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


def check_epsilon(epsilon, name="epsilon", *, allow_inf=False):
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
    epsilon = float(epsilon)
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
        raise TypeError(f"{name} must be a float in (0, 1) or None, got {theta!r}.")
    theta = float(theta)
    if not (0.0 < theta < 1.0):
        raise ValueError(
            f"{name} must lie strictly between 0 and 1, got {theta}. It is the "
            "probability that the bit of the true category is reported as 1; "
            "use theta=None for basic RAPPOR or theta=0.5 for OUE."
        )
    return theta


def is_missing(values):
    """Elementwise test for missing values (None, NaN, pd.NA, NaT)."""
    return np.asarray(pd.isna(np.asarray(values, dtype=object)), dtype=bool)


def _missing_mask(values):
    """Mask of missing values of a 1-D array, or None when there are none."""
    kind = values.dtype.kind
    if kind in "biuSU":
        return None
    mask = np.isnan(values) if kind in "fc" else is_missing(values)
    return mask if mask.any() else None


def encode_labels(values, categories, index=None):
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
        return index.get_indexer(values).astype(np.intp, copy=False)
    codes = np.full(values.shape[0], -1, dtype=np.intp)
    codes[~missing] = index.get_indexer(values[~missing])
    missing_categories = _missing_mask(categories)
    if missing_categories is not None:
        codes[missing] = np.flatnonzero(missing_categories)[0]
    return codes


def check_categories(categories):
    """Validate a user-given domain and return it as a 1-D numpy array.

    The domain must be non-empty, one-dimensional, hold at least two values and
    have no duplicates (a missing-value marker counts once).
    """
    if isinstance(categories, (str, bytes)):
        raise ValueError(
            f"categories must be 'auto' or a list of category values, got {categories!r}."
        )
    if np.ndim(categories) != 1:
        raise ValueError(
            "categories must be one-dimensional (the list of possible values of "
            f"one column), got an array of shape {np.shape(categories)}."
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


def as_label_array(values):
    """Return ``values`` as a 1-D numpy array of labels.

    Numeric and boolean labels keep their numpy dtype; everything else (strings,
    mixed types, pandas extension types) becomes an object array so that no
    label is coerced into another (numpy would turn ``["a", 1]`` into strings).
    """
    if isinstance(values, np.ndarray) and values.dtype.kind in "biuf":
        return values.ravel()
    if isinstance(values, (pd.Series, pd.Index)):
        values = values.to_numpy(dtype=object)
    obj = np.asarray(values, dtype=object).ravel()
    kind = pd.api.types.infer_dtype(obj, skipna=False)
    if kind in ("integer", "floating", "boolean", "mixed-integer-float"):
        return np.asarray(obj.tolist())
    return obj


def check_sensitive(sensitive, categories, *, name="sensitive"):
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
        values = np.asarray(sensitive, dtype=object).ravel()
        if values.size == k and all(
            isinstance(v, (bool, np.bool_)) for v in values
        ):
            mask = values.astype(bool)
        else:
            positions = encode_labels(values, np.asarray(categories))
            unknown = values[positions < 0]
            if unknown.size:
                raise ValueError(
                    f"{name} holds values that are not categories: "
                    f"{unknown.tolist()[:10]}. Sensitive values must be part of "
                    "the domain; add them to `categories` or fix their spelling."
                )
            if len(set(positions.tolist())) != len(positions):
                raise ValueError(
                    f"{name} lists a category more than once: "
                    f"{values.tolist()[:10]}. List each sensitive category once."
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
