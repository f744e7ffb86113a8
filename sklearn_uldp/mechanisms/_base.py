"""Base class of the privacy mechanisms (scikit-learn transformers)."""

from __future__ import annotations

import copy
import warnings
from numbers import Integral, Real
from typing import Any, TypeVar

import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn import config_context
from sklearn.base import clone
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import (
    _check_feature_names_in,
    _get_feature_names,
    check_is_fitted,
    validate_data,
)

from ..exceptions import PrivacyLeakWarning
from ..utils._random import (
    SECURE,
)
from ..utils._typing import ArrayLike, Categories, RandomStateLike, Sensitive, TransformOutput
from ..utils._validation import (
    as_label_array,
    bool_mismatch_hint,
    check_categories,
    check_epsilon,
    check_in_memory,
    describe_values,
    encode_labels,
    is_missing,
    positions,
    validate_params_with_hints,
)
from ._channel import FAKE_REPORT_LAWS, Channel
from ._core import PrivatizerBase, _transform_output  # noqa: F401 (re-exported)
from ._docs import fill_mechanism_doc
from ._reports import PackedReports, Reports, attach_channel
from ._text_columns import FactorizedColumn, text_columns

__all__ = ["BaseMechanism", "RANDOM_STATE_CONSTRAINT", "PARAMETER_HINTS", "as_channel"]

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
        "cryptographically secure generator, for deployment), a non-negative int "
        "(reproducible simulations only), or a numpy Generator, SeedSequence "
        "or RandomState."
    ),
    "sparse_output": "Pass True (scipy CSR reports) or False (dense reports).",
    "packed_output": "Pass True (PackedReports, k/8 bytes a report) or False (dense reports).",
}

RANDOM_STATE_CONSTRAINT: list[Any] = [
    None,
    StrOptions({SECURE}),
    Interval(Integral, 0, None, closed="left"),
    np.random.Generator,
    np.random.SeedSequence,
    np.random.RandomState,
]


class BaseMechanism(PrivatizerBase):
    """Base class of the local privacy mechanisms.

    A mechanism privatizes categorical columns: ``fit`` fixes the public
    domain (``categories_``) and builds the channel (``channel_``, the public
    spec a collector needs); ``transform`` privatizes each value independently
    with fresh randomness and returns reports that carry the channel.

    Given several columns (as ``OneHotEncoder`` takes several), the mechanism
    applies the same channel to each column with its own random stream and
    returns one block of report columns per input column (in input order;
    :meth:`column_reports` selects one block, which any estimator built on
    the mechanism accepts). The columns share the domain: ``categories``
    (or, with ``"auto"``, the values found in all of them) and the sensitive
    set. Each column a user reports spends ``epsilon``: by sequential
    composition a user's row spends ``n_features_in_ * epsilon``, which
    :attr:`epsilon_spent_` reports. Columns with different domains or budgets
    go through :class:`~sklearn_uldp.compose.DataFramePrivatizer` (one
    mechanism per column).

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

    #: Whether a report is a category of the domain (k-RR, uRR), so that
    #: reports can keep the input's dtype; False for output codes (Hadamard,
    #: hashing), whose dtype is int64 whatever the input.
    _reports_are_values: bool = True

    _parameter_constraints: dict[str, list[Any]] = {
        "epsilon": [Interval(Real, 0, None, closed="neither")],
        "categories": [StrOptions({"auto"}), "array-like"],
        "random_state": RANDOM_STATE_CONSTRAINT,
    }

    #: Hints for parameters of a subclass (merged with PARAMETER_HINTS).
    _parameter_hints: dict[str, str] = {}

    # ------------------------------------------------------------------- hooks
    def _make_channel(self):
        raise NotImplementedError

    def _check_params(self):
        """Extra validation after the declarative constraints."""
        if "epsilon" in self._parameter_constraints:
            check_epsilon(self.epsilon)

    # -------------------------------------------------------------------- fit
    def __init_subclass__(cls, auto_wrap_output_keys: Any = None, **kwargs: Any) -> None:
        # The reports' containers are built here (_container), carrying the
        # channel, with the columns named for the input actually given:
        # scikit-learn's automatic wrapping would rename them after the fact
        # with get_feature_names_out(), which knows no input names for a
        # mechanism fitted without data.
        super().__init_subclass__(auto_wrap_output_keys=auto_wrap_output_keys, **kwargs)

    def set_output(self: _MechanismT, *, transform: str | None = None) -> _MechanismT:
        """Set the output container of ``transform`` and ``fit_transform``.

        Parameters
        ----------
        transform : {"default", "pandas"}, default=None
            ``"default"``: numpy reports (:class:`Reports`, or
            :class:`SparseReports` with ``sparse_output=True``);
            ``"pandas"``: a DataFrame carrying the spec in its ``attrs``;
            None: unchanged.

        Returns
        -------
        self : object
            The mechanism.
        """
        if transform is None:
            return self
        if transform not in ("default", "pandas"):
            raise ValueError(
                f"{type(self).__name__} returns numpy or pandas reports, which carry "
                "their channel: set_output(transform='default' or 'pandas'), got "
                f"{transform!r}. Convert a pandas result with e.g. "
                "polars.from_pandas(reports) (the spec is then yours to keep)."
            )
        self._sklearn_output_config = {
            **self.__dict__.get("_sklearn_output_config", {}),
            "transform": transform,
        }
        return self

    @fill_mechanism_doc
    def fit(self: _MechanismT, X: ArrayLike | None = None, y: object = None) -> _MechanismT:
        """Fix the public domain and build the channel.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or (n_samples,), default=None
            Columns of categorical values (usually one; a 1-D array, list or
            Series is one column). Required when
            ``categories="auto"`` (the domain is then learned from the values
            of all columns, which emits a
            :class:`~sklearn_uldp.exceptions.PrivacyLeakWarning`); with
            explicit categories it is only validated and may be omitted.
        %(fit_y_returns_self)s
        """
        validate_params_with_hints(self, {**PARAMETER_HINTS, **self._parameter_hints})
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
            declared = _declared_categories(X) if auto else None
            columns = self._validate_columns(X, reset=True)
            # The columns share one domain: their values are checked (or
            # learned) together.
            column = columns[:, 0] if columns.shape[1] == 1 else _stack_values(columns)
            if declared is not None:
                # pandas 'category' columns declare their domain: it is used
                # as DataFramePrivatizer does (nothing is learned from the
                # values, so no PrivacyLeakWarning).
                self.categories_ = check_categories(declared)
                self._category_index = pd.Index(self.categories_)
                self._check_values(column)
            elif auto:
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
                self._check_values(column)
        self._category_index = pd.Index(self.categories_)
        self.channel_ = self._make_channel()
        self._start_random_stream()
        return self

    # -------------------------------------------------------------- transform
    def transform(self, X: ArrayLike) -> TransformOutput:
        """Privatize each value independently.

        Parameters
        ----------
        X : array-like of shape (n_samples, `n_features_in_`)
            Columns of values from ``categories_`` (a 1-D array, list or
            Series for one column).

        Returns
        -------
        reports : ndarray, DataFrame or sparse matrix
            The reports, carrying the channel (see :func:`get_channel`): one
            block of report columns per input column, in input order.
        """
        check_is_fitted(self, "channel_")
        named = self._fitted_on_names_of(X)
        if named is not None:
            return named.transform(X)
        columns = self._validate_columns(X, reset=False)
        if columns.shape[1] == 1:
            column = columns[:, 0]
            codes = self._encode(column)
            rng = self._transform_rng(codes, len(self.categories_))
            outputs = self._sample(codes, rng)
            return self._wrap_reports(outputs, column, X)
        # Several columns: the same channel on each, every column with its own
        # stream (keyed by its name for seeded simulations, fresh entropy
        # otherwise), then the report blocks side by side.
        call = self._next_call()
        names = self._input_names()
        blocks = []
        for j, name in enumerate(names):
            column = columns[:, j]
            codes = self._encode(column)
            rng = self._transform_rng(codes, len(self.categories_), column=name, call=call)
            view = self._column_view(name)
            blocks.append(view._wrap_reports(view._sample(codes, rng), column, X))
        return self._join_blocks(blocks)

    def _fitted_on_names_of(self, X):
        """The mechanism as if fitted on ``X``'s named columns, or None.

        Fitted on the public domain alone (``fit()``), a mechanism has no
        column names. A DataFrame (or named Series) then names its reports and
        keys seeded streams as if the mechanism had been fitted on it, so
        ``fit().transform(df)`` equals ``fit(df).transform(df)`` instead of
        silently renaming the column ``x0``. Nothing of ``self`` changes.
        """
        if not self.__dict__.get("_fitted_without_data", False):
            return None
        frame = X.to_frame() if isinstance(X, pd.Series) else X
        if not isinstance(frame, pd.DataFrame):
            return None
        names = _get_feature_names(frame)
        if names is None or len(names) != self.n_features_in_:
            return None  # unnamed, or the wrong width: validation says so
        view = copy.copy(self)
        view.feature_names_in_ = names
        view._fitted_without_data = False
        return view

    def _join_blocks(self, blocks):
        """Report blocks of the columns side by side, carrying the channel."""
        if all(isinstance(b, pd.DataFrame) for b in blocks):
            return attach_channel(pd.concat(blocks, axis=1), self.channel_)
        if all(sp.issparse(b) for b in blocks):
            reports = attach_channel(sp.hstack(blocks, format="csr"), self.channel_)
            reports.has_canonical_format = True  # each block is canonical
            return reports
        if all(isinstance(b, PackedReports) for b in blocks):
            # one block of bytes per column, side by side
            data = np.hstack([b.data for b in blocks])
            index = None
            if blocks[0].index is not None:
                index = np.hstack([b.index for b in blocks])
            return PackedReports(data, blocks[0].n_bits, self.channel_, index)
        return Reports(np.hstack([np.asarray(b) for b in blocks]), self.channel_)

    def column_reports(self, reports: Any, column: int | str) -> Any:
        """The reports of one input column, from the reports of several.

        A mechanism fitted on several columns returns one block of report
        columns per input column; an estimator estimates the distribution of
        one column from its block.

        Parameters
        ----------
        reports : ndarray, DataFrame or sparse matrix
            The output of :meth:`transform`.
        column : int or str
            The input column: its position, or its name (``feature_names_in_``,
            or ``"x<j>"`` for unnamed input).

        Returns
        -------
        block : ndarray, DataFrame or sparse matrix
            The report columns of that input column, carrying the channel.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_uldp import RandomizedResponse, EmpiricalEstimator
        >>> X = np.array([[0, 1], [1, 2], [2, 0], [0, 0]])
        >>> mech = RandomizedResponse(epsilon=2.0, categories=[0, 1, 2], random_state=0)
        >>> reports = mech.fit_transform(X)
        >>> reports.shape, mech.epsilon_spent_
        ((4, 2), 4.0)
        >>> est = EmpiricalEstimator(mechanism=mech).fit(mech.column_reports(reports, 1))
        >>> est.distribution_.shape
        (3,)
        """
        check_is_fitted(self, "channel_")
        names = self._input_names()
        j = self._input_position(column)
        widths = [len(self._column_feature_names(name)) for name in names]
        start = int(np.sum(widths[:j]))
        stop = start + widths[j]
        if isinstance(reports, PackedReports):
            if reports.n_blocks != len(names):
                raise ValueError(
                    f"Expected the packed reports of this mechanism on {len(names)} "
                    f"column(s), {len(names)} block(s) of bytes; got {reports.n_blocks}."
                )
            return reports.block(j)
        if isinstance(reports, pd.DataFrame):
            block = reports.iloc[:, start:stop]
        elif sp.issparse(reports):
            block = reports[:, start:stop]
        else:
            block = np.asarray(reports)[:, start:stop]
        if reports is not None and np.shape(reports)[1] != sum(widths):
            raise ValueError(
                f"Expected the reports of this mechanism on {len(names)} column(s), "
                f"{sum(widths)} report columns; got {np.shape(reports)[1]}."
            )
        return attach_channel(block, self.channel_)

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

    # ------------------------------------------------------------- encoding
    def _validate_columns(self, X, *, reset):
        """``X`` as a 2-D array of labels, one column per input column.

        At transform, a DataFrame of text columns gives
        :class:`FactorizedColumns` instead: the same ``shape`` and ``[:, j]``,
        its values encoded by pandas without a Python object per value.
        """
        if X is None:
            raise ValueError("X is required.")
        check_in_memory(X, type(self).__name__)
        if _is_flat(X):
            # A 1-D array or list is one column, as a Series is; after a fit
            # on several columns it is ambiguous (one row? one column?).
            expected = getattr(self, "n_features_in_", 1) if not reset else 1
            if expected != 1:
                raise ValueError(
                    f"Expected 2D array, got 1D array instead: {type(self).__name__} "
                    f"was fitted on {expected} columns. Reshape your data using "
                    "X.reshape(1, -1) if it holds one row of values."
                )
            X = pd.Series(X)
        if isinstance(X, pd.Series):
            X = X.to_frame()
        if isinstance(X, pd.DataFrame):
            if not reset:
                factorized = text_columns(X)
                if factorized is not None:
                    # names and width checked; the values stay in pandas
                    validate_data(self, X, skip_check_array=True, reset=False)
                    return factorized
            X = _labels_frame(X)
        if hasattr(X, "toarray"):
            raise TypeError("Sparse input is not supported: pass one column of category values.")
        X = validate_data(
            self,
            X,
            dtype=None,
            ensure_all_finite=False,
            ensure_min_samples=1,
            reset=reset,
        )
        if X.dtype.kind in "biuf":
            return X
        columns = [as_label_array(X[:, j]) for j in range(X.shape[1])]
        if len(columns) == 1:
            return columns[0][:, None]  # keeps the labels' dtype
        # Element-wise into an object array: numpy's stacking would try to
        # decode bytes labels.
        out = np.empty((X.shape[0], len(columns)), dtype=object)
        for j, column in enumerate(columns):
            out[:, j] = column
        return out

    def _encode(self, column):
        """Map input values to codes 0..k-1, with clear errors."""
        index = getattr(self, "_category_index", None)
        if index is None:
            index = pd.Index(check_categories(self.categories))
        if isinstance(column, FactorizedColumn):
            codes = column.codes_in(index)
            if codes is not None:
                return codes
            column = column.labels()  # the general path explains what is wrong
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
            listed = np.asarray(pd.unique(bad)[:10], dtype=object).tolist()
            raise ValueError(
                f"X holds {describe_values(bad)} of unknown categories, at "
                f"{positions(codes < 0)}. The domain is fixed to "
                f"{len(index)} categories; add the values to `categories` or "
                "clean the data." + bool_mismatch_hint(listed, index)
            )
        return codes.astype(np.intp, copy=False)

    # ---------------------------------------------------------------- outputs
    def get_feature_names_out(self, input_features: ArrayLike | None = None) -> np.ndarray:
        """Names of the report columns, one block per input column.

        A one-value report keeps its input column's name; a bit-vector
        report has one column per bit, ``<input>_<category>`` (RAPPOR
        family) or ``<input>_hash`` then ``<input>_b<l>`` (count-mean
        sketch).

        Parameters
        ----------
        input_features : array-like of str, default=None
            Input feature names; default ``feature_names_in_`` or
            ``x0, x1, ...``.

        Returns
        -------
        feature_names_out : ndarray of str objects
        """
        check_is_fitted(self, "channel_")
        names = _check_feature_names_in(self, input_features)
        return np.asarray(
            [out for name in names for out in self._column_feature_names(str(name))],
            dtype=object,
        )

    def _column_feature_names(self, name):
        """Names of the report columns of one input column: the channel's
        (``report_column_names``), unless an output option changes them."""
        return self.channel_.report_column_names(name)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = True
        tags.input_tags.categorical = True
        tags.input_tags.string = True
        # Missing values are accepted only as a declared category (a
        # missing-value marker in ``categories``); "auto" refuses them.
        tags.input_tags.allow_nan = _has_missing_marker(self.categories)
        tags.requires_fit = True
        if not self._reports_are_values:
            tags.transformer_tags.preserves_dtype = []
        return tags

    # --------------------------------------------------- the sampling strategies
    def _with_domain_of(self, column):
        if isinstance(self.categories, str):  # learned, or declared by the dtype
            domain = clone(self).fit(column).categories_
        else:
            # The declared domain: only the values need reading (a throwaway
            # clone reads them as fit would, without building a channel).
            domain = check_categories(self.categories)
            probe = clone(self)
            probe.categories_, probe._category_index = domain, pd.Index(domain)
            columns = probe._validate_columns(column, reset=True)
            probe._check_values(columns[:, 0] if columns.shape[1] == 1 else _stack_values(columns))
        return clone(self).set_params(categories=list(domain))

    def _check_values(self, column):
        """Check every value against the domain, with ``_encode``'s errors
        (an integer column of a run of integer categories: its range only,
        without building its codes)."""
        index = getattr(self, "_category_index", None)
        if index is None:
            index = pd.Index(check_categories(self.categories))
        if not _within_range(column, index):
            self._encode(column)

    def _check_whole_column(self, column, name):
        self._check_values(self._validate_columns(column, reset=False)[:, 0])

    def _sampled_reports(self, column, rows, *, checked=False):
        """Reports of the values of ``column`` on ``rows`` (ascending), as
        ``transform`` of those rows gives them (the same hooks and stream),
        every value of the column checked first as :meth:`_check_whole_column`
        does unless ``checked`` (the caller has just checked them, in ``fit``).

        The column is converted once and encoded once: the check's codes serve
        the sampled rows (SMP reads d columns and privatizes a 1/d share of
        each). None when this class privatizes through its own ``transform``
        (the caller then checks and transforms the rows itself).
        """
        if type(self).transform is not BaseMechanism.transform or self.n_features_in_ != 1:
            return None
        labels = self._validate_columns(column, reset=False)
        if not checked:
            self._check_values(labels[:, 0])
        labels = labels[rows, 0]
        codes = self._encode(labels)
        rng = self._transform_rng(codes, len(self.categories_))
        with config_context(transform_output="default"):
            return self._wrap_reports(self._sample(codes, rng), labels, None)

    def _fake_refusal(self, fake, column):
        kinds = self.channel_.fake_kinds()
        if not kinds:
            return (
                f"Column {column!r} uses {type(self).__name__}, which cannot send "
                "fake reports (their law and the row's privacy are known for "
                "k-RR, uRR, RAPPOR/OUE, uRAP/uOUE and one-symbol mechanisms with "
                "a small output space). Use strategy='sample', or one of these "
                "mechanisms for the column."
            )
        if fake != "auto" and fake not in kinds:
            return (
                f"fake={fake!r} is not available for column {column!r} "
                f"({type(self).__name__}: {list(kinds)}). 'zero' (the perturbed "
                "all-zero vector) exists only for unary encoding (RAPPOR, OUE, "
                "uRAP, uOUE); 'random' sends the mechanism's report of a "
                "random sensitive value. Pass fake='auto', or a dict "
                "{column: kind}."
            )
        return None

    def _fake_classes_at(self, fake):
        return FAKE_REPORT_LAWS["fake_classes_at"](self, fake)

    def _fake_reports(self, fake, n, rng, X_one):
        outputs = self.channel_.sample_fakes(fake, n, rng)
        # The labels' dtype is the input column's (as the mechanism's reports).
        column = self._validate_columns(X_one, reset=False)[:, 0]
        with config_context(transform_output="default"):
            out = self._wrap_reports(outputs, column, None)
        return out.toarray() if sp.issparse(out) else np.asarray(out)

    # ------------------------------------------------------------ public spec
    def channel_matrix(self) -> np.ndarray:
        """The exact channel Q(y | x) as a (k, n_outputs) matrix (small domains).

        Returns
        -------
        Q : ndarray of shape (n_categories, n_outputs)
        """
        check_is_fitted(self, "channel_")
        return self.channel_.matrix()


def _declared_categories(X):
    """The declared categories of pandas 'category' input (all its columns),
    in declaration order; None when some column is not categorical."""
    if isinstance(X, pd.Series):
        X = X.to_frame()
    if not isinstance(X, pd.DataFrame) or X.shape[1] == 0:
        return None
    dtypes = list(X.dtypes)
    if not all(isinstance(d, pd.CategoricalDtype) for d in dtypes):
        return None
    values = [v for d in dtypes for v in d.categories]
    return list(dict.fromkeys(values))


class _BudgetMechanism(BaseMechanism):
    """Base of the mechanisms that take a budget and a domain.

    ``RandomizedResponse`` and ``BinaryLocalHashing`` take ``(epsilon, *,
    categories, random_state)``; scikit-learn reads the parameters from this
    ``__init__``. A subclass with more parameters (``HadamardResponse``,
    ``OptimizedLocalHashing``, the count-mean sketches,
    ``PersonalizedMechanism``...) declares them all in its own ``__init__``,
    which stores these three here.
    """

    def __init__(
        self,
        epsilon: float = 1.0,
        *,
        categories: Categories = "auto",
        random_state: RandomStateLike = None,
    ) -> None:
        self.epsilon = epsilon
        self.categories = categories
        self.random_state = random_state


class SensitiveSetMechanism(BaseMechanism):
    """Base of the mechanisms whose only parameters are a budget and X_S.

    ``UtilityOptimizedRR`` and ``HighLowHadamardResponse`` (and so
    ``UtilityOptimizedHadamardResponse``) take ``(epsilon, *, sensitive,
    categories, random_state)``; scikit-learn reads the parameters from this
    ``__init__``.
    """

    _parameter_constraints = {
        **BaseMechanism._parameter_constraints,
        "sensitive": ["array-like", callable],
    }

    def __init__(
        self,
        epsilon: float = 1.0,
        *,
        sensitive: Sensitive,
        categories: Categories = "auto",
        random_state: RandomStateLike = None,
    ) -> None:
        self.epsilon = epsilon
        self.sensitive = sensitive
        self.categories = categories
        self.random_state = random_state


def _is_flat(X):
    """Whether ``X`` is a 1-D array or list of values (one column)."""
    if isinstance(X, np.ndarray):
        return X.ndim == 1
    if isinstance(X, (list, tuple)):
        return not any(isinstance(v, (list, tuple, np.ndarray)) for v in X)
    return False


def _has_missing_marker(categories):
    """Whether a ``categories`` parameter lists a missing value (None/NaN)."""
    if isinstance(categories, str | range):
        return False
    if isinstance(categories, np.ndarray) and categories.ndim == 1:
        # numbers: no per-category Python object (k = 10^5 took 30 ms a call,
        # and scikit-learn asks for the tags at every transform)
        if categories.dtype.kind in "iub":
            return False
        if categories.dtype.kind == "f":
            return bool(np.isnan(categories).any())
    try:
        # dtype=object: mixed bytes and text must not go through a numpy
        # string conversion (which decodes bytes as ASCII).
        values = np.asarray(list(categories), dtype=object)
    except (TypeError, ValueError):
        return False
    return values.ndim == 1 and values.size > 0 and bool(is_missing(values).any())


def _stack_values(columns):
    """The values of several label columns as one column (for the domain)."""
    if columns.dtype.kind in "biuf":
        return columns.ravel(order="F")
    return as_label_array(np.asarray(columns, dtype=object).ravel(order="F"))


def _within_range(column, index):
    """Whether an integer ``column`` lies in a domain that is a run of
    consecutive integers (two reductions; False when that does not apply)."""
    if column.dtype.kind not in "iu" or index.dtype.kind not in "iu" or not column.size:
        return False
    if not (index.is_monotonic_increasing and int(index[-1]) - int(index[0]) == len(index) - 1):
        return False
    lo = int(index[0])
    return int(column.min()) >= lo and int(column.max()) < lo + len(index)


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


#: Attribute a DataFramePrivatizer sets, under a sampling strategy, on each
#: fitted mechanism: ``(column name, strategy)`` (see :func:`check_not_sampled_column`).
SAMPLED_COLUMN_ATTR = "_sampled_column_of"


def check_not_sampled_column(mechanism: Any) -> None:
    """Refuse a mechanism fitted for a column of a sampling ``DataFramePrivatizer``.

    Under ``strategy="sample"`` or ``"sample+fake"`` a column's reports mix the
    mechanism's own with missing or fake ones: the mechanism's channel would
    give a wrong estimate without an error. Every place that turns a
    ``mechanism=`` argument into a channel (:func:`as_channel`, the numeric
    estimators, ``parallel``'s reductions) calls this one check, whose message
    points to the column's real channel, ``priv.channels_[name]``.

    Raises
    ------
    ValueError
        If ``mechanism`` privatizes a column of such a privatizer.
    """
    column = getattr(mechanism, SAMPLED_COLUMN_ATTR, None)
    if column is None:
        return
    name, strategy = column
    mixed = (
        "the users who sampled another column have no report of it"
        if strategy == "sample"
        else "most of its reports are fakes, and the real ones use the amplified budget"
    )
    raise ValueError(
        f"This {type(mechanism).__name__} privatizes the column {name!r} of a "
        f"DataFramePrivatizer with strategy={strategy!r}: {mixed}, so its own "
        "channel would give a wrong estimate of that column. Pass the column's "
        f"channel instead: mechanism=priv.channels_[{name!r}] (or its spec, "
        f"priv.specs()[{name!r}], as saved by priv.save_spec)."
    )


def as_channel(mechanism: BaseMechanism | Channel | dict[str, Any]) -> Channel:
    """Return the channel (public spec) described by ``mechanism``.

    Parameters
    ----------
    mechanism : BaseMechanism, Channel or dict
        A fitted mechanism, an unfitted one with explicit ``categories``, a
        channel, or a spec dict (``Channel.to_dict()``).

    Returns
    -------
    channel : Channel

    Examples
    --------
    >>> from sklearn_uldp import RandomizedResponse
    >>> from sklearn_uldp.mechanisms import as_channel
    >>> channel = as_channel(RandomizedResponse(epsilon=1.0, categories=[0, 1]))
    >>> channel
    RandomizedResponseChannel(k=2, epsilon=1.0)
    >>> as_channel(channel.to_dict()) == channel
    True
    """
    if isinstance(mechanism, Channel):
        return mechanism
    if isinstance(mechanism, dict):
        return Channel.from_dict(mechanism)
    check_not_sampled_column(mechanism)
    if isinstance(mechanism, BaseMechanism):
        if hasattr(mechanism, "channel_"):
            return mechanism.channel_
        if isinstance(mechanism.categories, str):
            raise ValueError(
                f"mechanism={mechanism!r} is not fitted and has categories='auto', "
                "so its domain is unknown. Pass the fitted mechanism's channel "
                "(mechanism=fitted.channel_) or spec (fitted.spec()), or give it "
                "explicit categories. (Cloning an estimator, as GridSearchCV and "
                "cross_val_score do, also clones a fitted `mechanism` into an "
                "unfitted one.)"
            )
        return clone(mechanism).fit().channel_
    raise TypeError(
        "mechanism must be a mechanism (fitted, or with explicit categories), a "
        f"Channel or a spec dict; got {type(mechanism).__name__}."
    )
