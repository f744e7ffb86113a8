"""Joint attributes: several columns privatized as one "total category"."""

import inspect
import itertools
import warnings
from collections.abc import Hashable

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, TransformerMixin, clone
from sklearn.utils.validation import check_is_fitted

from ..exceptions import PrivacyLeakWarning
from ..utils._validation import as_label_array, encode_labels, is_missing

__all__ = ["JointEncoder"]


def _is_missing(value):
    return bool(is_missing([value])[0])


def _as_labels(values):
    """A 1-D label array (typed as by the mechanisms; objects for text)."""
    return as_label_array(np.asarray(values, dtype=object) if isinstance(values, list)
                          else values)


def _check_domain(column, domain):
    """The domain of one column as a list, with clear errors."""
    if isinstance(domain, (str, bytes)) or not isinstance(
            domain, (list, tuple, np.ndarray, pd.Index, pd.Series)):
        raise ValueError(
            f"categories[{column!r}] must be a list of the column's values, got "
            f"{domain!r:.80} (a string is not a list of characters); pass e.g. "
            f"{{{column!r}: ['a', 'b']}}."
        )
    values = list(domain)
    nested = [v for v in values if not isinstance(v, Hashable)
              or isinstance(v, (tuple, frozenset, np.ndarray))]
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
        order of the joint domain. A domain may hold one missing-value marker
        (None or NaN), which the column's missing values then match. Values
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
    >>> enc.sensitive_mask_.sum()
    np.int64(2)
    >>> enc.transform(df)["joint"].tolist()
    ['f|married', 'm|divorced', 'f|single', 'm|single']
    >>> mech = enc.make_mechanism(UtilityOptimizedRR, epsilon=1.0, random_state=0)
    >>> est = EmpiricalEstimator().fit(mech.fit_transform(enc.transform(df)))
    >>> enc.marginals(est)["sex"].index.tolist()
    ['f', 'm']
    """

    def __init__(
        self,
        categories="auto",
        *,
        sensitive=None,
        exclude=None,
        separator="|",
        name="joint",
    ):
        self.categories = categories
        self.sensitive = sensitive
        self.exclude = exclude
        self.separator = separator
        self.name = name

    def fit(self, X, y=None):
        """Build the joint domain and its sensitive set.

        Parameters
        ----------
        X : DataFrame or None
            The columns to join. May be None when ``categories`` is a dict.
        y : None
            Ignored.

        Returns
        -------
        self : object
        """
        if isinstance(self.categories, dict):
            if not self.categories:
                raise ValueError("categories must name at least one column.")
            columns = list(self.categories)
            domains = [_check_domain(c, self.categories[c]) for c in columns]
            if X is not None:
                self._check_frame(X, columns)
        elif isinstance(self.categories, str) and self.categories == "auto":
            if X is None:
                raise ValueError(
                    "categories='auto' learns the domains from X, so X is required."
                )
            self._check_frame(X, list(X.columns))
            columns = list(X.columns)
            warnings.warn(
                "categories='auto' learns the joint domain from the private data. "
                "Pass categories={column: [...]} (the public domains) in a "
                "deployment.",
                PrivacyLeakWarning,
                stacklevel=2,
            )
            domains = []
            for c in columns:
                values = X[c]
                if pd.isna(values).any():
                    raise ValueError(
                        f"Column {c!r} has missing values; impute them or give "
                        "explicit categories including a missing-value marker."
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
        if not isinstance(self.separator, str):
            raise TypeError(
                f"separator must be a string such as '|', got {self.separator!r}."
            )
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
            raise ValueError(
                f"The joint domain has {len(tuples)} combinations after exclusions; "
                "at least two are needed."
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
                    categories=pd.unique(pd.Series(
                        [v for v in domains[j] if not _is_missing(v)], dtype=object)),
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
                (
                    bool(self.sensitive(_Row(zip(columns, t, strict=True))))
                    for t in tuples
                ),
                dtype=bool,
                count=len(tuples),
            )
        else:
            raise TypeError(
                "sensitive must be a predicate f(row) -> bool over the tuple, e.g. "
                "lambda row: row.marital == 'divorced'."
            )
        self.sensitive_mask_ = mask
        self.n_features_in_ = len(columns)
        self.feature_names_in_ = np.asarray(columns, dtype=object)
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
            codes = encode_labels(_as_labels([t[j] for t in tuples]),
                                  _as_labels(domain), index, strict_bools=True)
            flat = flat * sizes[j] + codes
        table[flat] = np.arange(len(tuples))
        self._code_table = table

    @staticmethod
    def _check_frame(X, columns):
        if not isinstance(X, pd.DataFrame):
            raise TypeError(f"X must be a DataFrame, got {type(X).__name__}.")
        absent = [c for c in columns if c not in X.columns]
        if absent:
            raise KeyError(f"Columns {absent} are not in the DataFrame.")

    def transform(self, X):
        """Map each row to its joint label.

        Parameters
        ----------
        X : DataFrame
            Holding the columns ``columns_``.

        Returns
        -------
        joint : DataFrame of shape (n_samples, 1)
            One column ``name`` of joint labels, same index as ``X``.
        """
        check_is_fitted(self, "categories_")
        self._check_frame(X, self.columns_)
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
                        f"Column {c!r} has {int(missing.sum())} missing values and "
                        "its domain has no missing-value marker; impute or drop "
                        "them, or add None to its categories."
                    )
                raise ValueError(
                    f"Column {c!r} holds {int((codes < 0).sum())} values outside "
                    f"its domain (so outside the joint domain), e.g. "
                    f"{pd.unique(bad)[:5].tolist()}; add them to "
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

    def inverse_transform(self, X):
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

    def get_feature_names_out(self, input_features=None):
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

    def make_mechanism(self, mechanism, **params):
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

    # ------------------------------------------------------------ estimates
    def _as_series(self, distribution):
        check_is_fitted(self, "categories_")
        if hasattr(distribution, "distribution_"):
            cats = np.asarray(distribution.categories_, dtype=object)
            if not np.array_equal(cats, self.categories_):
                raise ValueError(
                    "The estimator was fitted on another domain than this encoder's."
                )
            distribution = distribution.distribution_
        if isinstance(distribution, pd.Series):
            values = distribution.reindex(self.categories_).to_numpy(dtype=float)
        else:
            values = np.asarray(distribution, dtype=float)
        if values.shape != (len(self.categories_),) or np.isnan(values).any():
            raise ValueError(
                f"Expected a distribution over the {len(self.categories_)} joint "
                "categories."
            )
        return values

    def to_table(self, distribution):
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
        return pd.Series(
            self._as_series(distribution), index=self.joint_index_, name="probability"
        )

    def marginals(self, distribution):
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
