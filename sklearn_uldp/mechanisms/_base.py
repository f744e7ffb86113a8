"""Base class of the privacy mechanisms (scikit-learn transformers)."""

from __future__ import annotations

import warnings
from numbers import Integral, Real
from typing import Any, TypeVar

import numpy as np
import pandas as pd
from sklearn import get_config
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import (
    _check_feature_names_in,
    check_is_fitted,
    validate_data,
)

from ..exceptions import PrivacyLeakWarning
from ..utils._random import (
    SECURE,
    check_secure_available,
    is_fresh,
    is_secure,
    transform_generator,
)
from ..utils._typing import ArrayLike, TransformOutput
from ..utils._validation import (
    as_label_array,
    bool_mismatch_hint,
    check_categories,
    check_epsilon,
    encode_labels,
    is_missing,
    validate_params_with_hints,
)
from ._reports import Reports, attach_channel

__all__ = ["BaseMechanism", "RANDOM_STATE_CONSTRAINT", "PARAMETER_HINTS"]

# ``fit`` returns the mechanism itself, typed as its own class (typing.Self
# needs Python 3.11).
_MechanismT = TypeVar("_MechanismT", bound="BaseMechanism")

#: How to fix an invalid parameter (appended to scikit-learn's message, which
#: says what is wrong).
PARAMETER_HINTS: dict[str, str] = {
    "epsilon": (
        "epsilon is the privacy budget spent per report: pass a finite number "
        "> 0 such as 1.0 (smaller is more private). For a no-privacy baseline "
        "use NonPrivate()."
    ),
    "theta": (
        "theta is the probability that the bit of the true category is "
        "reported as 1: pass a number strictly between 0 and 1 (0.5 gives "
        "OUE), or theta=None for basic one-time RAPPOR."
    ),
    "categories": (
        "Pass the public domain as a list of values, e.g. "
        "categories=['a', 'b', 'c'] (or 'auto' to learn it from X, which "
        "reveals which values occur)."
    ),
    "sensitive": (
        "Pass the sensitive categories as a list of values, a boolean mask "
        "aligned with categories, or a predicate f(category) -> bool."
    ),
    "random_state": (
        "Pass None (fresh OS entropy at every call), 'secure' (a "
        "cryptographically secure generator, for deployment; needs "
        '`pip install "sklearn-uldp[secure]"`), a non-negative int '
        "(reproducible simulations only), or a numpy Generator, SeedSequence "
        "or RandomState."
    ),
    "sparse_output": "Pass True (scipy CSR reports) or False (dense reports).",
}

RANDOM_STATE_CONSTRAINT: list[Any] = [
    None,
    StrOptions({SECURE}),
    Interval(Integral, 0, None, closed="left"),
    np.random.Generator,
    np.random.SeedSequence,
    np.random.RandomState,
]


class BaseMechanism(TransformerMixin, BaseEstimator):
    """Base class of the local privacy mechanisms.

    A mechanism privatizes one categorical column: ``fit`` fixes the public
    domain (``categories_``) and builds the channel (``channel_``, the public
    spec a collector needs); ``transform`` privatizes each row independently
    with fresh randomness and returns reports that carry the channel.

    Subclasses implement :meth:`_make_channel` and, for bit-vector reports,
    :meth:`_wrap_reports`.

    Notes
    -----
    Every call to ``transform`` draws a new independent random stream, so
    privatizing data in chunks never re-uses noise. With ``random_state=None``
    (or ``"secure"``) the stream comes from fresh OS entropy at each call and
    nothing of it is kept in the object: copies, pickles, clones and parallel
    workers never share noise. With an integer ``random_state`` the sequence
    of ``transform`` calls after a ``fit`` is reproducible (for simulations
    only: whoever knows the seed can remove the noise); the stream of a call
    is derived from the seed, the input column's name, the call's rank and a
    hash of its input, so two columns sharing a seed get independent noise.
    Privatizing the *same* user twice spends the budget twice (sequential
    composition).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp import RandomizedResponse
    >>> from sklearn_uldp.mechanisms import BaseMechanism
    >>> mech = RandomizedResponse(epsilon=1.0, categories=["a", "b", "c"], random_state=0)
    >>> isinstance(mech, BaseMechanism)
    True
    >>> reports = mech.fit_transform(np.array([["a"], ["b"]], dtype=object))
    >>> reports.shape, reports.channel == mech.channel_
    ((2, 1), True)
    """

    _parameter_constraints: dict[str, list[Any]] = {
        "epsilon": [Interval(Real, 0, None, closed="neither")],
        "categories": [StrOptions({"auto"}), "array-like"],
        "random_state": RANDOM_STATE_CONSTRAINT,
    }

    # ------------------------------------------------------------------- hooks
    def _make_channel(self):
        raise NotImplementedError

    def _check_params(self):
        """Extra validation after the declarative constraints."""
        if "epsilon" in self._parameter_constraints:
            check_epsilon(self.epsilon)

    # -------------------------------------------------------------------- fit
    def fit(self: _MechanismT, X: ArrayLike | None = None, y: object = None) -> _MechanismT:
        """Fix the public domain and build the channel.

        Parameters
        ----------
        X : array-like of shape (n_samples, 1), default=None
            One column of categorical values. Required when
            ``categories="auto"`` (the domain is then learned from it, which
            emits a :class:`~sklearn_uldp.exceptions.PrivacyLeakWarning`); with
            explicit categories it is only validated and may be omitted.
        y : None
            Ignored.

        Returns
        -------
        self : object
            The fitted mechanism.
        """
        validate_params_with_hints(self, PARAMETER_HINTS)
        self._check_params()
        auto = isinstance(self.categories, str)
        if X is None:
            if auto:
                raise ValueError(
                    "categories='auto' learns the domain from X, so X is required. "
                    "Pass categories=[...] (the public domain) to fit without data."
                )
            self.categories_ = check_categories(self.categories)
            # A collector fits without data: the input is still one column.
            self.n_features_in_ = 1
            self.__dict__.pop("feature_names_in_", None)
            self._fitted_without_data = True
        else:
            self._fitted_without_data = False
            column = self._validate_column(X, reset=True)
            if auto:
                missing = is_missing(column)
                if missing.any():
                    raise ValueError(
                        f"X has {int(missing.sum())} missing values (NaN/None) and "
                        "categories='auto'. Pass explicit categories that include a "
                        "missing-value marker, or impute/drop missing values first."
                    )
                warnings.warn(
                    "categories='auto' learns the domain from the private data, "
                    "which reveals which values occur. Pass the public domain as "
                    "categories=[...] in a deployment.",
                    PrivacyLeakWarning,
                    stacklevel=2,
                )
                uniques = pd.unique(column)
                try:
                    uniques = np.sort(uniques)
                except TypeError:
                    uniques = np.asarray(sorted(uniques, key=repr), dtype=object)
                if uniques.size < 2:
                    raise ValueError(
                        f"X holds a single distinct value {uniques.tolist()}; "
                        "categories='auto' needs at least two. Pass categories=[...]."
                    )
                self.categories_ = check_categories(uniques)
            else:
                self.categories_ = check_categories(self.categories)
                self._encode(column)  # validates values against the domain
        self._category_index = pd.Index(self.categories_)
        self.channel_ = self._make_channel()
        self._start_random_stream()
        return self

    # ------------------------------------------------------------ randomness
    def _start_random_stream(self):
        """Reset the per-call stream derivation (called at the end of ``fit``).

        No seed, key or generator is stored: ``None`` and ``"secure"`` draw
        fresh OS entropy at each ``transform``; a seed is read from
        ``random_state`` itself at each call, and only the number of calls
        since ``fit`` is kept (in a list updated in place, so that
        ``transform`` changes no attribute of the object).
        """
        if is_secure(self.random_state):
            check_secure_available()  # fail at fit, not at the first report
        self.__dict__.pop("_seed_sequence", None)  # state of older versions
        if is_fresh(self.random_state):
            self.__dict__.pop("_transform_calls", None)
        else:
            self._transform_calls = [0]

    def _transform_rng(self, codes, n_values=None):
        """The generator of one ``transform`` call on the encoded input ``codes``.

        ``None`` and ``"secure"`` draw fresh OS entropy and keep nothing.
        Seeded streams (int or SeedSequence) are numbered by the call counter.
        """
        random_state = self.random_state
        call = 0
        if not is_fresh(random_state):
            counter = self.__dict__.get("_transform_calls")
            if counter is None:  # random_state was set after fit
                counter = self._transform_calls = [0]
            call = counter[0]
            counter[0] += 1
        names = getattr(self, "feature_names_in_", None)
        # Unnamed input is column "x0", its default feature name.
        column = "x0" if names is None else ",".join(str(n) for n in names)
        return transform_generator(
            random_state, column=column, call=call, codes=codes, n_values=n_values
        )

    # -------------------------------------------------------------- transform
    def transform(self, X: ArrayLike) -> TransformOutput:
        """Privatize each value independently.

        Parameters
        ----------
        X : array-like of shape (n_samples, 1)
            One column of values from ``categories_``.

        Returns
        -------
        reports : ndarray, DataFrame or sparse matrix
            The reports, carrying the channel (see :func:`get_channel`).
        """
        check_is_fitted(self, "channel_")
        column = self._validate_column(X, reset=False)
        codes = self._encode(column)
        rng = self._transform_rng(codes, len(self.categories_))
        outputs = self._sample(codes, rng)
        return self._wrap_reports(outputs, column, X)

    def _sample(self, codes, rng):
        """Draw the outputs for integer-coded inputs (hook for subclasses)."""
        return self.channel_.sample(codes, rng)

    def _wrap_reports(self, outputs, column, X):
        """Wrap categorical outputs as a one-column report array/DataFrame.

        Category-label reports keep the input column's dtype; output codes
        (e.g. Hadamard response) stay int64 whatever the input, since casting
        them (to bool, to int8, ...) would corrupt them.
        """
        reports = self.channel_.decode(outputs)
        if not self.channel_.reports_are_categories:
            reports = np.asarray(reports, dtype=np.int64)
        elif (
            column.dtype != object
            and reports.dtype != object
            and reports.dtype != column.dtype
            and _survives_cast(self.categories_, column.dtype)
        ):
            # A mixed domain (integers and a text label such as "(missing)")
            # decodes to objects: a batch that holds only integers must not
            # cast the label. Nor may the cast change a category (2.5 -> 2 in
            # an integer batch): a report can be any category, not only the
            # batch's values.
            reports = reports.astype(column.dtype)
        return self._container(reports.reshape(-1, 1), X)

    def _container(self, data, X):
        """Return reports as the configured output container."""
        if _transform_output(self) == "pandas":
            index = X.index if isinstance(X, (pd.DataFrame, pd.Series)) else None
            frame = pd.DataFrame(data, columns=self.get_feature_names_out(), index=index)
            attach_channel(frame, self.channel_)
            return frame
        return Reports(data, self.channel_)

    # ------------------------------------------------------------- encoding
    def _validate_column(self, X, *, reset):
        if X is None:
            raise ValueError("X is required.")
        if isinstance(X, pd.Series):
            X = X.to_frame()
        if isinstance(X, pd.DataFrame):
            X = _labels_frame(X)
        if hasattr(X, "toarray"):
            raise TypeError("Sparse input is not supported: pass one column of category values.")
        with warnings.catch_warnings():
            if not reset and getattr(self, "_fitted_without_data", False):
                # Fitted on the public domain alone, the mechanism has no
                # column name to check a DataFrame's against.
                warnings.filterwarnings(
                    "ignore", message="X has feature names, but", category=UserWarning
                )
            X = validate_data(
                self,
                X,
                dtype=None,
                ensure_all_finite=False,
                ensure_min_samples=1,
                reset=reset,
            )
        if X.shape[1] != 1:
            raise ValueError(
                f"{type(self).__name__} privatizes one column, got {X.shape[1]}. "
                "Use a ColumnTransformer (one mechanism per column) or "
                "JointEncoder-style joint categories for several columns."
            )
        column = X[:, 0]
        if column.dtype.kind not in "biuf":
            column = as_label_array(column)
        return column

    def _encode(self, column):
        """Map input values to codes 0..k-1, with clear errors."""
        index = getattr(self, "_category_index", None)
        if index is None:
            index = pd.Index(check_categories(self.categories))
        codes = _range_codes(column, index)
        if codes is None:
            codes = encode_labels(column, np.asarray(index), index, strict_bools=True)
        if (codes < 0).any():
            bad = column[codes < 0]
            missing = is_missing(bad)
            if missing.any():
                raise ValueError(
                    f"X contains {int(missing.sum())} missing values (NaN/None), "
                    "which are not a category of this mechanism. Impute or drop "
                    "them, or add a missing-value marker to categories."
                )
            unknown = pd.unique(bad)
            noun = "category" if len(unknown) == 1 else "categories"
            listed = np.asarray(unknown[:10], dtype=object).tolist()
            raise ValueError(
                f"Found {len(unknown)} unknown {noun} {listed} in X. "
                "The domain is fixed to "
                f"{len(index)} categories; add the values to `categories` or "
                "clean the data." + bool_mismatch_hint(listed, index)
            )
        return codes.astype(np.intp, copy=False)

    # ---------------------------------------------------------------- outputs
    def get_feature_names_out(self, input_features: ArrayLike | None = None) -> np.ndarray:
        """Names of the report columns.

        Parameters
        ----------
        input_features : array-like of str, default=None
            Input feature name; defaults to ``feature_names_in_`` or ``x0``.

        Returns
        -------
        feature_names_out : ndarray of str objects
        """
        check_is_fitted(self, "channel_")
        return _check_feature_names_in(self, input_features)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = True
        tags.input_tags.categorical = True
        tags.input_tags.string = True
        tags.input_tags.allow_nan = True
        tags.requires_fit = True
        return tags

    # ------------------------------------------------------------ public spec
    @property
    def epsilon_spent_(self) -> float:
        """Privacy budget one report spends (for budget accounting)."""
        check_is_fitted(self, "channel_")
        return self.channel_.epsilon

    def spec(self) -> dict[str, Any]:
        """The public spec (a JSON-serialisable dict) a collector needs.

        Returns
        -------
        spec : dict
        """
        check_is_fitted(self, "channel_")
        return self.channel_.to_dict()

    def channel_matrix(self) -> np.ndarray:
        """The exact channel Q(y | x) as a (k, n_outputs) matrix (small domains).

        Returns
        -------
        Q : ndarray of shape (n_categories, n_outputs)
        """
        check_is_fitted(self, "channel_")
        return self.channel_.matrix()


def _range_codes(column, index):
    """Codes by subtraction when the domain is a run of consecutive integers.

    The common integer-coded domain ``0..k-1`` (or ``lo..lo+k-1``) needs no
    hash lookup; returns None when the fast path does not apply.
    """
    if column.dtype.kind not in "iu" or index.dtype.kind not in "iu":
        return None
    if not (
        index.is_monotonic_increasing
        and len(index)
        and int(index[-1]) - int(index[0]) == len(index) - 1
    ):
        return None
    lo, k = int(index[0]), len(index)
    # Two fast reductions check the range first: in the common all-valid case
    # the codes then cost one conversion pass instead of five.
    if column.size and int(column.min()) >= lo and int(column.max()) < lo + k:
        codes = column.astype(np.intp)
        if lo:
            codes -= lo
        return codes
    codes = column.astype(np.intp) - lo
    codes[(codes < 0) | (codes >= k)] = -1
    return codes


def _survives_cast(categories, dtype):
    """Whether casting ``categories`` to ``dtype`` keeps every one of them."""
    categories = np.asarray(categories)
    if categories.dtype == dtype:
        return True
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NaN/overflow casts: caught by the comparison
        try:
            cast = categories.astype(dtype)
        except (TypeError, ValueError, OverflowError):
            return False
        # Equal values of the same kind: 1 -> 1.0 is kept, 2.5 -> 2, NaN -> int,
        # 300 -> int8 and 0/1 -> bool are not.
        return bool(
            np.array_equal(cast.astype(categories.dtype), categories)
            and (dtype.kind == "b") == (categories.dtype.kind == "b")
        )


def _labels_frame(X):
    """``X`` with its categorical and nullable-boolean columns as plain labels.

    scikit-learn's ``validate_data`` turns a ``category`` column of booleans,
    or a ``boolean`` column, into floats (False -> 0.0), which are then not
    the categories False/True. Such columns become their categories' numpy
    dtype, or objects when they hold missing values. ``X`` is not modified.
    """
    convert = {}
    for name, col in X.items():
        dtype = col.dtype
        if isinstance(dtype, pd.CategoricalDtype):
            cats = dtype.categories
            if cats.dtype.kind not in "b" and cats.dtype != object:
                continue  # numbers or text: validate_data keeps them as they are
            codes = col.cat.codes.to_numpy()
            values = np.asarray(cats, dtype=object)[codes]
            if (codes < 0).any():
                values[codes < 0] = None
            elif cats.dtype.kind == "b" or all(isinstance(v, (bool, np.bool_)) for v in cats):
                values = values.astype(bool)
            convert[name] = values
        elif isinstance(dtype, pd.BooleanDtype):
            if col.isna().any():
                convert[name] = col.to_numpy(dtype=object, na_value=None)
            else:
                convert[name] = col.to_numpy(dtype=bool)
    if not convert:
        return X
    X = X.copy(deep=False)
    for name, values in convert.items():
        X[name] = values
    return X


def _transform_output(estimator):
    """The configured output container for ``transform`` ("default"/"pandas")."""
    # ``_sklearn_output_config`` is set by ``set_output`` (stable since 1.2).
    config = getattr(estimator, "_sklearn_output_config", {})
    return config.get("transform", get_config()["transform_output"])
