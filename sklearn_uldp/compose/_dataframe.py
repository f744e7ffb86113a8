"""Privatize several columns of a DataFrame, each with its own mechanism."""

import json
import numbers

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, TransformerMixin, clone
from sklearn.utils.validation import check_is_fitted

from ..mechanisms._base import BaseMechanism
from ..mechanisms._channel import Channel
from ..mechanisms._reports import attach_channel
from ..utils._random import check_secure_available, check_seed_sequence, is_secure

__all__ = ["DataFramePrivatizer", "load_spec", "CHANNELS_ATTR", "SPEC_FORMAT"]

#: Marker of a multi-column spec file (:meth:`DataFramePrivatizer.save_spec`).
SPEC_FORMAT = "sklearn-uldp-spec"

#: Key of ``DataFrame.attrs`` holding ``{column: spec dict}`` on privatized
#: frames (plain JSON, so ``to_parquet`` keeps it in the file's metadata).
CHANNELS_ATTR = "sklearn_uldp_specs"


class DataFramePrivatizer(TransformerMixin, BaseEstimator):
    """Privatize several columns of a DataFrame, one mechanism per column.

    Each column gets its own clone of the given mechanism and its own
    independent random stream: one integer ``random_state`` is split with
    ``numpy.random.SeedSequence.spawn`` (never re-used or offset), and
    mechanisms that keep their own seeds derive their streams from their
    column's name, so the noise of two columns is never correlated.

    Privatizing ``c`` columns of one person spends the *sum* of the columns'
    budgets (sequential composition); :attr:`epsilon_spent_` reports
    that sum. A person's total privacy loss is the sum over everything they
    ever sent.

    Parameters
    ----------
    mechanisms : dict of {str: mechanism}
        Column name -> (unfitted) mechanism. Columns not listed are dropped.
    missing : {"error", "category"}, default="error"
        What to do with missing values (None, NaN, pd.NA). ``"error"`` raises
        a clear error naming the column; ``"category"`` replaces them by
        ``missing_label``, which must then be one of the mechanism's
        categories (it is added automatically with ``categories="auto"``).
    missing_label : str, default="(missing)"
        The explicit category used for missing values.
    random_state : None, "secure", int, SeedSequence or Generator, default=None
        The randomness of all columns. ``None`` keeps each mechanism's own
        ``random_state`` (fresh OS entropy at every call for mechanisms left
        at ``None``). ``"secure"`` gives every column the cryptographically
        secure generator (fresh key at every call; for deployment, needs
        ``pip install "sklearn-uldp[secure]"``). An int, SeedSequence or
        Generator (simulations only) overrides the mechanisms' seeds with
        independent children of one ``SeedSequence``.

    Attributes
    ----------
    mechanisms_ : dict of {str: BaseMechanism}
        The fitted per-column mechanisms.
    channels_ : dict of {str: Channel}
        The public spec of each column.
    feature_names_in_ : ndarray of str
        The privatized columns, in order.
    epsilon_spent_ : float
        Budget one person spends by sending one report for every column.

    Notes
    -----
    A :class:`~sklearn.compose.ColumnTransformer` of mechanisms with
    ``set_output(transform="pandas")`` works too: it passes each
    mechanism's ``random_state`` as is, and a mechanism derives its streams
    from its seed, its column's name and a hash of the column's values, so
    a shared integer seed still gives independent noise (identical columns
    then get identical reports, which reveal no more than one of them).
    This class also derives the columns' streams from one seed and hands
    back per-column channels (:meth:`column_reports`, :meth:`specs`).

    See Also
    --------
    sklearn_uldp.compose.JointEncoder : privatize a tuple of columns jointly.
    sklearn_uldp.privacy.BudgetAccountant : keep track of the budget spent.

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn_uldp import RandomizedResponse, UtilityOptimizedRR
    >>> from sklearn_uldp.compose import DataFramePrivatizer
    >>> df = pd.DataFrame({"marital": ["married", "divorced", "single"],
    ...                    "region": ["north", "south", "south"]})
    >>> priv = DataFramePrivatizer({
    ...     "marital": UtilityOptimizedRR(epsilon=1.0, sensitive=["divorced"],
    ...         categories=["married", "single", "divorced"]),
    ...     "region": RandomizedResponse(epsilon=0.5,
    ...         categories=["north", "south"]),
    ... }, random_state=0)
    >>> reports = priv.fit_transform(df)
    >>> list(reports.columns), reports.shape
    (['marital', 'region'], (3, 2))
    >>> priv.epsilon_spent_
    1.5
    >>> sorted(priv.specs())
    ['marital', 'region']
    """

    def __init__(
        self,
        mechanisms,
        *,
        missing="error",
        missing_label="(missing)",
        random_state=None,
    ):
        self.mechanisms = mechanisms
        self.missing = missing
        self.missing_label = missing_label
        self.random_state = random_state

    # ------------------------------------------------------------ validation
    def _check_mechanisms(self):
        if not isinstance(self.mechanisms, dict) or not self.mechanisms:
            raise TypeError(
                "mechanisms must be a non-empty dict {column: mechanism}, got "
                f"{type(self.mechanisms).__name__}."
            )
        for column, mech in self.mechanisms.items():
            if not isinstance(mech, BaseMechanism):
                raise TypeError(
                    f"mechanisms[{column!r}] must be a mechanism such as "
                    f"UtilityOptimizedRR(...), got {type(mech).__name__}."
                )
        if self.missing not in ("error", "category"):
            raise ValueError(
                f"missing must be 'error' or 'category', got {self.missing!r}."
            )

    def _check_frame(self, X):
        if not isinstance(X, pd.DataFrame):
            raise TypeError(
                "DataFramePrivatizer privatizes pandas DataFrames; got "
                f"{type(X).__name__}. Wrap arrays with pd.DataFrame(X, columns=...)."
            )
        absent = [c for c in self.mechanisms if c not in X.columns]
        if absent:
            raise KeyError(
                f"Columns {absent} are not in the DataFrame (its columns: "
                f"{list(X.columns)[:20]})."
            )

    def _column(self, X, column):
        """One column as a one-column object DataFrame, missing values handled."""
        series = X[column]
        values = series.astype(object)
        missing = pd.isna(values).to_numpy()
        if missing.any():
            if self.missing == "error":
                raise ValueError(
                    f"Column {column!r} has {int(missing.sum())} missing values. "
                    "Impute or drop them, or pass missing='category' to report "
                    f"them as the explicit category {self.missing_label!r}."
                )
            values = values.where(~missing, self.missing_label)
        return values.to_frame(name=column)

    def _domain(self, mech, series):
        """Explicit categories for a mechanism with categories='auto', if known."""
        if not isinstance(mech.categories, str):
            return None
        if isinstance(series.dtype, pd.CategoricalDtype):
            cats = list(series.cat.categories)
            if self.missing == "category" and self.missing_label not in cats:
                cats.append(self.missing_label)
            return cats
        return None

    # -------------------------------------------------------------------- fit
    def fit(self, X, y=None):
        """Fit one mechanism per column (fixes domains and channels).

        A column of pandas ``category`` dtype whose mechanism has
        ``categories="auto"`` takes its domain from the dtype's categories
        (the declared schema), not from the data.

        Parameters
        ----------
        X : DataFrame
            The data, holding at least the columns in ``mechanisms``.
        y : None
            Ignored.

        Returns
        -------
        self : object
        """
        self._check_mechanisms()
        self._check_frame(X)
        columns = list(self.mechanisms)
        self._check_random_state()
        if self.random_state is None:
            # Each mechanism keeps its own random_state. None stays None: a
            # seed drawn here would be kept in the fitted mechanisms (and
            # their pickles), and anyone holding them could replay the noise.
            # Shared integer seeds are safe: a mechanism derives its streams
            # from its column's name (and its input), so columns differ.
            children = [None] * len(columns)
        elif is_secure(self.random_state):
            check_secure_available()
            children = [self.random_state] * len(columns)
        else:
            children = check_seed_sequence(self.random_state).spawn(len(columns))
        self.mechanisms_ = {}
        for column, child in zip(columns, children, strict=False):
            mech = clone(self.mechanisms[column])
            if child is not None and "random_state" in mech.get_params():
                mech.set_params(random_state=child)
            frame = self._column(X, column)
            domain = self._domain(mech, X[column])
            if domain is not None:
                mech.set_params(categories=domain)
            mech.fit(frame)
            self.mechanisms_[column] = mech
        self.channels_ = {c: m.channel_ for c, m in self.mechanisms_.items()}
        self.feature_names_in_ = np.asarray(columns, dtype=object)
        self.n_features_in_ = len(columns)
        return self

    def _check_random_state(self):
        rs = self.random_state
        ok = (rs is None or is_secure(rs)
              or isinstance(rs, np.random.SeedSequence | np.random.Generator
                            | np.random.RandomState)
              or (isinstance(rs, numbers.Integral) and not isinstance(rs, bool)
                  and rs >= 0))
        if not ok:
            raise ValueError(
                "random_state must be None (each mechanism's own), 'secure' "
                "(cryptographically secure noise, for deployment), a "
                "non-negative int (reproducible simulations only), or a numpy "
                f"SeedSequence, Generator or RandomState; got {rs!r}."
            )

    # -------------------------------------------------------------- transform
    def transform(self, X):
        """Privatize every column with fresh independent randomness.

        Parameters
        ----------
        X : DataFrame

        Returns
        -------
        reports : DataFrame
            One report column per categorical mechanism, one column per bit
            for bit-vector mechanisms (``<column>_<category>``); same index as
            ``X``. ``reports.attrs["sklearn_uldp_specs"]`` maps each input
            column to its public spec (JSON-serialisable, so it survives
            ``to_parquet``).
        """
        check_is_fitted(self, "mechanisms_")
        self._check_frame(X)
        pieces = []
        for column, mech in self.mechanisms_.items():
            out = mech.transform(self._column(X, column))
            if hasattr(out, "toarray"):
                out = out.toarray()
            if isinstance(out, pd.DataFrame):
                out = out.to_numpy()
            names = mech.get_feature_names_out()
            pieces.append(pd.DataFrame(np.asarray(out), columns=names, index=X.index))
        frame = pd.concat(pieces, axis=1)
        frame.attrs[CHANNELS_ATTR] = self.specs()
        return frame

    def get_feature_names_out(self, input_features=None):
        """Names of the report columns.

        Parameters
        ----------
        input_features : None
            Ignored (the columns are fixed by ``mechanisms``).

        Returns
        -------
        feature_names_out : ndarray of str objects
        """
        check_is_fitted(self, "mechanisms_")
        return np.concatenate(
            [m.get_feature_names_out() for m in self.mechanisms_.values()]
        ).astype(object)

    # ---------------------------------------------------------- collector side
    def report_columns(self, column):
        """Names of the report columns produced for input ``column``.

        Parameters
        ----------
        column : str

        Returns
        -------
        names : list of str
        """
        check_is_fitted(self, "mechanisms_")
        if column not in self.mechanisms_:
            raise KeyError(
                f"{column!r} was not privatized; privatized columns: "
                f"{list(self.mechanisms_)}."
            )
        return list(self.mechanisms_[column].get_feature_names_out())

    def column_reports(self, reports, column):
        """The reports of one column, ready for a distribution estimator.

        Parameters
        ----------
        reports : DataFrame
            Output of :meth:`transform` (or the same columns read back).
        column : str
            An input column.

        Returns
        -------
        column_reports : DataFrame
            The column's report columns, carrying the column's channel (so
            ``EmpiricalEstimator().fit(column_reports)`` needs nothing else).

        Examples
        --------
        >>> import pandas as pd
        >>> from sklearn_uldp import RandomizedResponse, EmpiricalEstimator
        >>> from sklearn_uldp.compose import DataFramePrivatizer
        >>> df = pd.DataFrame({"a": ["x", "y"] * 50, "b": ["u", "v"] * 50})
        >>> priv = DataFramePrivatizer({
        ...     c: RandomizedResponse(2.0, categories=sorted(set(df[c])))
        ...     for c in df}, random_state=0)
        >>> reports = priv.fit_transform(df)
        >>> est = EmpiricalEstimator().fit(priv.column_reports(reports, "b"))
        >>> est.categories_.tolist()
        ['u', 'v']
        """
        names = self.report_columns(column)
        missing = [n for n in names if n not in reports.columns]
        if missing:
            raise KeyError(f"The reports lack the columns {missing} of {column!r}.")
        part = reports[names].copy()
        if self.channels_[column].report_format == "bits":
            part = part.astype(np.uint8)
        part.attrs = {}
        attach_channel(part, self.channels_[column])
        return part

    def estimate(self, reports, estimator=None):
        """Estimate the distribution of every privatized column.

        Parameters
        ----------
        reports : DataFrame
            Output of :meth:`transform`.
        estimator : DistributionEstimator, default=None
            Template estimator (cloned per column); defaults to
            ``EmpiricalEstimator(projection="simplex")``.

        Returns
        -------
        distributions : dict of {str: Series}
            Estimated distribution of each column, indexed by category.
        """
        from ..estimators import EmpiricalEstimator

        if estimator is None:
            estimator = EmpiricalEstimator(projection="simplex")
        result = {}
        for column in self.mechanisms_:
            est = clone(estimator).fit(self.column_reports(reports, column))
            result[column] = pd.Series(
                est.distribution_,
                index=pd.Index(est.categories_, name=column),
                name="estimate",
            )
        return result

    def specs(self):
        """The public specs of all columns, ``{column: channel.to_dict()}``.

        Returns
        -------
        specs : dict
        """
        check_is_fitted(self, "mechanisms_")
        return {c: ch.to_dict() for c, ch in self.channels_.items()}

    def save_spec(self, path):
        """Write the public spec of every column to a JSON file.

        The file (also written by ``sklearn-uldp privatize``) holds, per
        column, the channel spec and the report column names, plus the budget
        one person spends; read it back with :func:`load_spec`.

        Parameters
        ----------
        path : str or path-like

        Returns
        -------
        path : str or path-like

        Examples
        --------
        >>> import os, tempfile
        >>> import pandas as pd
        >>> from sklearn_uldp import RandomizedResponse
        >>> from sklearn_uldp.compose import DataFramePrivatizer, load_spec
        >>> df = pd.DataFrame({"a": ["x", "y"]})
        >>> priv = DataFramePrivatizer(
        ...     {"a": RandomizedResponse(1.0, categories=["x", "y"])}).fit(df)
        >>> path = priv.save_spec(os.path.join(tempfile.mkdtemp(), "spec.json"))
        >>> load_spec(path)
        {'a': RandomizedResponseChannel(k=2, epsilon=1.0)}
        """
        check_is_fitted(self, "mechanisms_")
        document = {
            "format": SPEC_FORMAT,
            "version": 1,
            "epsilon_per_person": self.epsilon_spent_,
            "columns": self.specs(),
            "report_columns": {c: self.report_columns(c) for c in self.mechanisms_},
        }
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(document, fh, indent=2)
        return path

    @property
    def epsilon_spent_(self):
        """Budget one person spends: the sum over the privatized columns."""
        check_is_fitted(self, "mechanisms_")
        return float(sum(m.epsilon_spent_ for m in self.mechanisms_.values()))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = True
        tags.input_tags.categorical = True
        tags.input_tags.string = True
        tags.input_tags.allow_nan = True
        return tags


def load_spec(path):
    """Read a spec file written by :meth:`DataFramePrivatizer.save_spec`.

    Parameters
    ----------
    path : str or path-like
        A multi-column spec file, or a one-channel file from
        ``Channel.to_json()`` (returned under the key ``None``).

    Returns
    -------
    channels : dict of {str: Channel}
        Column -> channel; pass a channel as ``mechanism=`` to any
        distribution estimator.

    Examples
    --------
    >>> import os, tempfile
    >>> from sklearn_uldp.compose import load_spec
    >>> from sklearn_uldp.mechanisms import RandomizedResponseChannel
    >>> path = os.path.join(tempfile.mkdtemp(), "rr.json")
    >>> with open(path, "w") as fh:
    ...     _ = fh.write(RandomizedResponseChannel(["a", "b"], 2.0).to_json())
    >>> load_spec(path)
    {None: RandomizedResponseChannel(k=2, epsilon=2.0)}
    """
    with open(path, encoding="utf-8") as fh:
        try:
            document = json.load(fh)
        except json.JSONDecodeError as exc:
            raise ValueError(f"Spec file {path!r} is not valid JSON: {exc}") from None
    if isinstance(document, dict) and "mechanism" in document:
        return {None: Channel.from_dict(document)}
    if not isinstance(document, dict) or not isinstance(document.get("columns"), dict):
        raise ValueError(
            f"Spec file {path!r} is neither a channel spec (with 'mechanism') nor a "
            "multi-column spec (with 'columns')."
        )
    return {c: Channel.from_dict(s) for c, s in document["columns"].items()}
