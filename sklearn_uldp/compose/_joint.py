"""Joint attributes: several columns privatized as one "total category"."""

from __future__ import annotations

import inspect
import itertools
import warnings
from collections.abc import Callable, Hashable, Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin, clone
from sklearn.utils.validation import check_is_fitted, validate_data

from ..exceptions import PrivacyLeakWarning
from ..utils._typing import ArrayLike
from ..utils._validation import (
    as_label_array,
    describe_values,
    encode_labels,
    is_missing,
)
from ..utils._validation import positions as positions_of  # a local is named positions

__all__ = ["JointEncoder"]

if TYPE_CHECKING:
    from ..mechanisms._base import BaseMechanism

_JointT = TypeVar("_JointT", bound="JointEncoder")

#: Largest product of the column domains that ``fit`` enumerates. The joint
#: domain is listed tuple by tuple (a Python predicate decides each one), and
#: an LDP estimate over more categories than this is noise at any realistic
#: number of users: coarsen the columns, or privatize them separately.
_MAX_JOINT_SIZE = 1_000_000


def _is_missing(value):
    return bool(is_missing([value])[0])


def _has_inf(values):
    """Whether a numeric column holds +-infinity (never a learned category)."""
    labels = as_label_array(values)
    return labels.dtype.kind == "f" and bool(np.isinf(labels).any())


def _as_labels(values):
    """A 1-D label array (typed as by the mechanisms; objects for text)."""
    return as_label_array(np.asarray(values, dtype=object) if isinstance(values, list) else values)


def _check_domain(column, domain):
    """The domain of one column as a list, with clear errors."""
    if isinstance(domain, (str, bytes)) or not isinstance(
        domain, (list, tuple, np.ndarray, pd.Index, pd.Series)
    ):
        raise ValueError(
            f"categories[{column!r}] must be a list of the column's values, got "
            f"{domain!r:.80} (a string is not a list of characters); pass e.g. "
            f"{{{column!r}: ['a', 'b']}}."
        )
    values = list(domain)
    nested = [
        v
        for v in values
        if not isinstance(v, Hashable) or isinstance(v, (tuple, frozenset, np.ndarray))
    ]
    if nested or (isinstance(domain, np.ndarray) and domain.ndim != 1):
        raise ValueError(
            f"categories[{column!r}] must be a flat list of values (numbers, "
            f"strings, ...), got nested items such as {nested[:1]!r:.80}; give "
            "one domain per column."
        )
    n_missing = int(is_missing(np.asarray(values, dtype=object)).sum()) if values else 0
    if n_missing > 1:
        raise ValueError(
            f"categories[{column!r}] has {n_missing} missing-value markers, and "
            "None/NaN/NA all denote the same missing value; keep one of them."
        )
    present = pd.Index([v for v in values if not _is_missing(v)], dtype=object)
    if not present.is_unique:
        raise ValueError(
            f"categories[{column!r}] contains duplicates "
            f"{present[present.duplicated()].tolist()[:5]} (1, 1.0 and True are "
            "the same value); list each value once."
        )
    return values


class _Row(dict):
    """A tuple of attribute values: ``row["age"]`` or ``row.age``."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


class JointEncoder(TransformerMixin, BaseEstimator):
    """Encode several categorical columns as one joint category.

    The ULDP paper's census experiment privatizes the tuple (age, income,
    marital, sex) as one "total category" (8 x 5 x 5 x 2 = 400 values). This
    transformer builds that joint domain (the product of the columns'
    domains minus impossible combinations), its sensitive set from a
    predicate over the tuple, and maps each row to one joint label, ready for
    any single-column mechanism. The estimate over the joint domain can be
    turned back into a joint table and marginals.

    Parameters
    ----------
    categories : dict of {str: array-like} or "auto", default="auto"
        Column -> public domain (a flat list of distinct values), in the
        order of the joint domain. Columns are named as in ``X``: a
        DataFrame's by their names, an array's by position as ``"x0"``,
        ``"x1"``, ... (a dict may join a subset of the columns). A domain may
        hold one missing-value marker (None or NaN), which the column's
        missing values then match. Values
        are matched with their type, as by the mechanisms (``1`` is not
        ``"1"``, ``True`` is not ``1``). ``"auto"`` learns the domains from
        the data (emits a
        :class:`~sklearn_uldp.exceptions.PrivacyLeakWarning`).
    sensitive : callable or None, default=None
        Predicate over a tuple, ``f(row) -> bool``; ``row`` gives the values
        as ``row["marital"]`` or ``row.marital``. ``None``: nothing sensitive.
    exclude : callable or None, default=None
        Predicate marking impossible combinations (e.g. age < 15 and
        married); they are removed from the joint domain.
    separator : str, default="|"
        Separator of the joint labels (``"30-39|divorced"``).
    name : str, default="joint"
        Name of the output column.

    Attributes
    ----------
    columns_ : list of str
        The joined columns, in order.
    categories_ : ndarray of str of shape (k,)
        The joint labels (the domain to give a mechanism).
    joint_index_ : MultiIndex
        The tuples behind ``categories_``.
    sensitive_mask_ : ndarray of bool of shape (k,)
        Which joint categories are sensitive.
    n_features_in_ : int
        Number of columns of ``X`` seen in ``fit`` (of the dict's columns
        when fitted on ``X=None``).
    feature_names_in_ : ndarray of str objects of shape (`n_features_in_`,)
        Column names of ``X``, when fitted on a DataFrame whose column
        names are all strings (or on ``X=None`` with string columns).

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn_uldp import UtilityOptimizedRR, EmpiricalEstimator
    >>> from sklearn_uldp.compose import JointEncoder
    >>> df = pd.DataFrame({"sex": ["f", "m", "f", "m"],
    ...                    "marital": ["married", "divorced", "single", "single"]})
    >>> enc = JointEncoder(
    ...     categories={"sex": ["f", "m"],
    ...                 "marital": ["single", "married", "divorced"]},
    ...     sensitive=lambda row: row.marital == "divorced").fit(df)
    >>> enc.categories_.tolist()
    ['f|single', 'f|married', 'f|divorced', 'm|single', 'm|married', 'm|divorced']
    >>> int(enc.sensitive_mask_.sum())
    2
    >>> enc.transform(df)["joint"].tolist()
    ['f|married', 'm|divorced', 'f|single', 'm|single']
    >>> mech = enc.make_mechanism(UtilityOptimizedRR, epsilon=1.0, random_state=0)
    >>> est = EmpiricalEstimator().fit(mech.fit_transform(enc.transform(df)))
    >>> enc.marginals(est)["sex"].index.tolist()
    ['f', 'm']

    The columns of an array are named by position, ``x0``, ``x1``, ...:

    >>> import numpy as np
    >>> X = np.array([[0, "a"], [1, "b"], [1, "a"]], dtype=object)
    >>> enc = JointEncoder({"x0": [0, 1], "x1": ["a", "b"]}).fit(X)
    >>> enc.transform(X)["joint"].tolist()
    ['0|a', '1|b', '1|a']
    """

    def __init__(
        self,
        categories: Mapping[str, ArrayLike] | Literal["auto"] = "auto",
        *,
        sensitive: Callable[[Any], bool] | None = None,
        exclude: Callable[[Any], bool] | None = None,
        separator: str = "|",
        name: str = "joint",
    ) -> None:
        self.categories = categories
        self.sensitive = sensitive
        self.exclude = exclude
        self.separator = separator
        self.name = name

    def fit(self: _JointT, X: Any, y: object = None) -> _JointT:
        """Build the joint domain and its sensitive set.

        Parameters
        ----------
        X : DataFrame, array-like of shape (n_samples, n_features) or None
            The columns to join. A DataFrame's columns are named by its
            column names, an array's by position: ``x0``, ``x1``, ... (as in
            ``OneHotEncoder.get_feature_names_out``). May be None when
            ``categories`` is a dict.
        y : None
            Ignored.

        Returns
        -------
        self : object
        """
        for attr in ("n_features_in_", "feature_names_in_"):
            self.__dict__.pop(attr, None)
        if isinstance(self.categories, dict):
            if not self.categories:
                raise ValueError("categories must name at least one column.")
            columns = list(self.categories)
            domains = [_check_domain(c, self.categories[c]) for c in columns]
            if X is None:
                self.n_features_in_ = len(columns)
                if all(isinstance(c, str) for c in columns):
                    self.feature_names_in_ = np.asarray(columns, dtype=object)
                positions = list(range(len(columns)))
            else:
                frame = self._validate_input(X, reset=True)
                positions = self._positions(frame, columns)
        elif isinstance(self.categories, str) and self.categories == "auto":
            if X is None:
                raise ValueError("categories='auto' learns the domains from X, so X is required.")
            frame = self._validate_input(X, reset=True)
            columns = list(frame.columns)
            positions = list(range(len(columns)))
            warnings.warn(
                "categories='auto' learns the joint domain from the private data. "
                "Pass categories={column: [...]} (the public domains) in a "
                "deployment.",
                PrivacyLeakWarning,
                stacklevel=2,
            )
            domains = []
            for c in columns:
                values = frame[c]
                if pd.isna(values).any() or _has_inf(values):
                    raise ValueError(
                        f"Column {c!r} has missing values (None/NaN) or infinity; "
                        "impute or drop them, or give explicit categories "
                        "(a domain may include a missing-value marker)."
                    )
                if isinstance(values.dtype, pd.CategoricalDtype):
                    domains.append(list(values.cat.categories))
                else:
                    domains.append(sorted(pd.unique(values.astype(object)), key=str))
        else:
            raise ValueError(
                "categories must be 'auto' or a dict {column: list of values}, got "
                f"{self.categories!r}."
            )
        size = int(np.prod([float(len(d)) for d in domains]))
        if size > _MAX_JOINT_SIZE:
            sizes = ", ".join(f"{c!r}: {len(d)}" for c, d in zip(columns, domains, strict=True))
            raise ValueError(
                f"The joint domain would have {size:.3g} combinations (domain "
                f"sizes {{{sizes}}}), more than {_MAX_JOINT_SIZE:,}, and an "
                "LDP estimate over so many categories is noise. Coarsen the "
                "columns (e.g. bin numeric ones), join fewer of them, or "
                "privatize them separately with DataFramePrivatizer."
            )
        if not isinstance(self.separator, str):
            raise TypeError(f"separator must be a string such as '|', got {self.separator!r}.")
        for c, d in zip(columns, domains, strict=False):
            if len(d) < 1 or len(set(map(str, d))) != len(d):
                raise ValueError(
                    f"The domain of {c!r} must be non-empty with distinct values "
                    f"(as strings), got {d[:10]}."
                )
            if any(self.separator in str(v) for v in d):
                raise ValueError(
                    f"A value of {c!r} contains the separator {self.separator!r}; "
                    "choose another separator."
                )
        tuples = []
        for values in itertools.product(*domains):
            row = _Row(zip(columns, values, strict=False))
            if self.exclude is not None and self.exclude(row):
                continue
            tuples.append(values)
        if len(tuples) < 2:
            learned = (
                f" (categories='auto' learned each column's domain from "
                f"n_samples={len(frame)}: pass categories={{column: [...]}})"
                if self.categories == "auto"
                else ""
            )
            raise ValueError(
                f"The joint domain has {len(tuples)} combinations after exclusions; "
                f"at least two are needed{learned}."
            )
        self.columns_ = columns
        self._domains = domains
        # Categorical levels keep each column's domain order (also in unstack).
        # A missing-value marker of a domain is a value of the level, not one
        # of its (non-null) Categorical categories.
        self.joint_index_ = pd.MultiIndex.from_arrays(
            [
                pd.Categorical(
                    [t[j] for t in tuples],
                    categories=pd.unique(
                        pd.Series([v for v in domains[j] if not _is_missing(v)], dtype=object)
                    ),
                )
                for j in range(len(columns))
            ],
            names=columns,
        )
        self.categories_ = np.asarray(
            [self.separator.join(map(str, t)) for t in tuples], dtype=object
        )
        if self.sensitive is None:
            mask = np.zeros(len(tuples), dtype=bool)
        elif callable(self.sensitive):
            mask = np.fromiter(
                (bool(self.sensitive(_Row(zip(columns, t, strict=True)))) for t in tuples),
                dtype=bool,
                count=len(tuples),
            )
        else:
            raise TypeError(
                "sensitive must be a predicate f(row) -> bool over the tuple, e.g. "
                "lambda row: row.marital == 'divorced'."
            )
        self.sensitive_mask_ = mask
        self._input_positions = positions
        self._label_index = pd.Index(self.categories_)
        self._set_code_table(tuples)
        return self

    def _set_code_table(self, tuples):
        """Joint position of every combination of per-column codes (-1: excluded)."""
        sizes = [len(d) for d in self._domains]
        position = [pd.Index(_as_labels(d)) for d in self._domains]
        table = np.full(int(np.prod(sizes)), -1, dtype=np.intp)
        flat = np.zeros(len(tuples), dtype=np.intp)
        for j, (index, domain) in enumerate(zip(position, self._domains, strict=True)):
            codes = encode_labels(
                _as_labels([t[j] for t in tuples]), _as_labels(domain), index, strict_bools=True
            )
            flat = flat * sizes[j] + codes
        table[flat] = np.arange(len(tuples))
        self._code_table = table

    def _validate_input(self, X, *, reset):
        """``X`` as a DataFrame with named columns, checked as by scikit-learn.

        A DataFrame keeps its columns and dtypes (a Categorical's declared
        categories are its domain); any other array-like goes through
        ``validate_data`` and its columns are named ``x0``, ``x1``, ...
        Missing values are not refused here: a domain may hold a
        missing-value marker, and the domains decide.
        """
        name = type(self).__name__
        if sp.issparse(X):
            raise TypeError(
                f"Sparse input is not supported: {name} joins columns of "
                "categorical values. Pass a DataFrame or a dense array "
                "(e.g. X.toarray())."
            )
        if isinstance(X, pd.DataFrame):
            # By name: only the joined columns are read, in any order.
            if reset:
                validate_data(self, X, skip_check_array=True, reset=True)
            for axis, what in ((0, "sample"), (1, "feature")):
                if X.shape[axis] == 0:
                    raise ValueError(
                        f"Found array with 0 {what}(s) (shape={X.shape}) while "
                        f"a minimum of 1 is required by {name}."
                    )
            return X
        arr = validate_data(
            self,
            X,
            reset=reset,
            dtype=None,
            accept_sparse=False,
            ensure_all_finite=False,
            ensure_min_samples=1,
            ensure_min_features=1,
        )
        names = getattr(self, "feature_names_in_", None)
        if names is None or len(names) != arr.shape[1]:
            names = [f"x{j}" for j in range(arr.shape[1])]
        return pd.DataFrame(arr, columns=list(names), copy=False)

    @staticmethod
    def _positions(frame, columns):
        """Position of each joined column among the input columns."""
        absent = [c for c in columns if c not in frame.columns]
        if absent:
            hint = (
                " X is an array, so its columns are named by position: "
                f"{list(frame.columns[:5])}{' ...' * (frame.shape[1] > 5)} "
                "(pass a DataFrame to use its column names)."
                if all(isinstance(c, str) and c.startswith("x") for c in frame.columns)
                else ""
            )
            raise KeyError(f"Columns {absent} are not in X.{hint}")
        return [int(frame.columns.get_loc(c)) for c in columns]

    def transform(self, X: Any) -> Any:
        """Map each row to its joint label.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, `n_features_in_`)
            A DataFrame holding the columns ``columns_`` (read by name), or
            an array with the columns seen in ``fit`` (read by position).

        Returns
        -------
        joint : DataFrame of shape (n_samples, 1)
            One column ``name`` of joint labels, same index as ``X``.
        """
        check_is_fitted(self, "categories_")
        by_name = isinstance(X, pd.DataFrame)
        X = self._validate_input(X, reset=False)
        if by_name:
            self._positions(X, self.columns_)  # KeyError naming absent columns
        elif not set(self.columns_) <= set(X.columns):
            # An array, fitted on columns that are not named x0, x1, ... (a
            # DataFrame with non-string names): read by position.
            positions = getattr(self, "_input_positions", None)
            if positions is None:
                positions = range(len(self.columns_))
            X = pd.DataFrame(
                {c: X.iloc[:, j] for c, j in zip(self.columns_, positions, strict=True)},
                index=X.index,
            )
        if getattr(self, "_code_table", None) is None:  # fitted by an older version
            self._set_code_table(list(self.joint_index_))
        flat = np.zeros(len(X), dtype=np.intp)
        for c, domain in zip(self.columns_, self._domains, strict=True):
            values = _as_labels(X[c])
            cats = _as_labels(domain)
            # Values are matched by value and type (1 is not "1", True is
            # not 1), as by the mechanisms.
            codes = encode_labels(values, cats, strict_bools=True)
            if (codes < 0).any():
                bad = values[codes < 0]
                missing = is_missing(bad)
                if missing.any():
                    raise ValueError(
                        f"Column {c!r} has {int(missing.sum())} missing values "
                        "(None/NaN) and its domain has no missing-value marker; "
                        "impute or drop them, or add None to its categories."
                    )
                raise ValueError(
                    f"Column {c!r} holds {describe_values(bad)} outside "
                    f"its domain (so outside the joint domain), at "
                    f"{positions_of(codes < 0)}; add them to "
                    "categories or clean the data (values are compared with their "
                    "type: 1 is not '1')."
                )
            flat = flat * len(domain) + codes
        positions = self._code_table[flat]
        if (positions < 0).any():
            rows = X[self.columns_].iloc[np.flatnonzero(positions < 0)[:5]]
            raise ValueError(
                f"{int((positions < 0).sum())} rows hold combinations outside the "
                f"joint domain (removed by `exclude`), e.g. "
                f"{list(rows.itertuples(index=False, name=None))}."
            )
        labels = self.categories_[positions]
        return pd.DataFrame({self.name: labels}, index=X.index)

    def inverse_transform(self, X: Any) -> Any:
        """Map joint labels back to the columns.

        Parameters
        ----------
        X : array-like of shape (n_samples,) or (n_samples, 1)

        Returns
        -------
        frame : DataFrame with the columns ``columns_``
        """
        check_is_fitted(self, "categories_")
        labels = np.asarray(X, dtype=object).ravel()
        codes = self._label_index.get_indexer(labels)
        if (codes < 0).any():
            raise ValueError("Some labels are not joint categories of this encoder.")
        index = self.joint_index_[codes]
        return pd.DataFrame({c: list(index.get_level_values(c)) for c in self.columns_})

    def get_feature_names_out(self, input_features: ArrayLike | None = None) -> np.ndarray:
        """The output column name.

        Parameters
        ----------
        input_features : None
            Ignored.

        Returns
        -------
        feature_names_out : ndarray of str objects
        """
        check_is_fitted(self, "categories_")
        return np.asarray([self.name], dtype=object)

    def make_mechanism(
        self, mechanism: type[BaseMechanism] | BaseMechanism, **params: Any
    ) -> BaseMechanism:
        """A mechanism over the joint domain with the joint sensitive set.

        Parameters
        ----------
        mechanism : class or instance
            E.g. ``UtilityOptimizedRR`` or ``UtilityOptimizedRAPPOR(...)``.
        **params
            Other parameters (``epsilon``, ``random_state``, ...).

        Returns
        -------
        mechanism : BaseMechanism
            Unfitted, with ``categories=categories_`` and, when it takes one,
            ``sensitive=sensitive_mask_``.
        """
        check_is_fitted(self, "categories_")
        if isinstance(mechanism, type):
            takes_sensitive = "sensitive" in inspect.signature(mechanism).parameters
            if takes_sensitive:
                params = {"sensitive": self.sensitive_mask_, **params}
            mech = mechanism(**params)
        else:
            mech = clone(mechanism).set_params(**params)
        mech.set_params(categories=self.categories_)
        if "sensitive" in mech.get_params():
            if not self.sensitive_mask_.any():
                raise ValueError(
                    "No joint category is sensitive; pass `sensitive=` to the "
                    "encoder or use an LDP mechanism."
                )
            mech.set_params(sensitive=self.sensitive_mask_)
        return mech

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # Columns of categorical values (numbers, strings, booleans); the
        # output is one column of string labels.
        tags.input_tags.categorical = True
        tags.input_tags.string = True
        tags.input_tags.allow_nan = isinstance(self.categories, dict) and any(
            not isinstance(d, (str, bytes))
            and np.ndim(d) == 1
            and len(d) > 0
            and bool(is_missing(np.asarray(list(d), dtype=object)).any())
            for d in self.categories.values()
        )
        tags.transformer_tags.preserves_dtype = []
        return tags

    # ------------------------------------------------------------ estimates
    def _as_series(self, distribution):
        check_is_fitted(self, "categories_")
        if hasattr(distribution, "distribution_"):
            cats = np.asarray(distribution.categories_, dtype=object)
            if not np.array_equal(cats, self.categories_):
                raise ValueError("The estimator was fitted on another domain than this encoder's.")
            distribution = distribution.distribution_
        if isinstance(distribution, pd.Series):
            values = distribution.reindex(self.categories_).to_numpy(dtype=float)
        else:
            values = np.asarray(distribution, dtype=float)
        if values.shape != (len(self.categories_),) or np.isnan(values).any():
            raise ValueError(
                f"Expected a distribution over the {len(self.categories_)} joint categories."
            )
        return values

    def to_table(self, distribution: ArrayLike) -> pd.Series:
        """The joint distribution as a Series with a MultiIndex.

        Parameters
        ----------
        distribution : array-like of shape (k,), Series or fitted estimator
            An estimate over ``categories_``.

        Returns
        -------
        table : Series
            Indexed by ``joint_index_`` (one level per column); excluded
            combinations are absent. ``table.unstack()`` gives a 2-D table.
        """
        return pd.Series(self._as_series(distribution), index=self.joint_index_, name="probability")

    def marginals(self, distribution: ArrayLike) -> dict[str, pd.Series]:
        """Marginal distribution of every column.

        Parameters
        ----------
        distribution : array-like of shape (k,), Series or fitted estimator

        Returns
        -------
        marginals : dict of {str: Series}
            Column -> distribution over that column's domain (in its order).
        """
        table = self.to_table(distribution)
        out = {}
        for c, domain in zip(self.columns_, self._domains, strict=False):
            out[c] = (
                table.groupby(level=c, sort=False, observed=False, dropna=False)
                .sum()
                .reindex(domain, fill_value=0.0)
            )
        return out
