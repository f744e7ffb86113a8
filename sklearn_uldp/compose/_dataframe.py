"""Privatize several columns of a table, one mechanism each (a ColumnTransformer)."""

from __future__ import annotations

import copy
import inspect
import json
import warnings
from collections.abc import Callable, Sequence
from numbers import Integral
from os import PathLike
from typing import Any, Literal, TypeVar

import numpy as np
import pandas as pd
import sklearn
from sklearn import config_context, get_config
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.utils._param_validation import HasMethods, StrOptions
from sklearn.utils._set_output import _safe_set_output
from sklearn.utils.validation import check_is_fitted

from ..exceptions import PrivacyLeakWarning
from ..mechanisms._base import PARAMETER_HINTS, RANDOM_STATE_CONSTRAINT, BaseMechanism
from ..mechanisms._channel import Channel
from ..mechanisms._reports import attach_channel, is_packed_frame
from ..numeric._base import BaseNumericMechanism
from ..utils._random import check_secure_available, check_seed_sequence, is_fresh, is_secure
from ..utils._typing import RandomStateLike, TransformOutput
from ..utils._validation import is_missing, validate_params_with_hints
from . import _strategies

__all__ = ["DataFramePrivatizer", "load_spec", "CHANNELS_ATTR", "SPEC_FORMAT"]

_PrivatizerT = TypeVar("_PrivatizerT", bound="DataFramePrivatizer")

#: Marker of a multi-column spec file (:meth:`DataFramePrivatizer.save_spec`).
SPEC_FORMAT = "sklearn-uldp-spec"

#: Key of ``DataFrame.attrs`` holding ``{name: spec dict}`` on privatized
#: frames (plain JSON, so ``to_parquet`` keeps it in the file's metadata).
CHANNELS_ATTR = "sklearn_uldp_specs"

_AUTO_DOMAIN = "categories='auto' learns the domain from the private data"

#: What may privatize a column: a categorical or a numeric mechanism.
_MECHANISMS = (BaseMechanism, BaseNumericMechanism)

# ColumnTransformer reads ``force_int_remainder_cols`` in scikit-learn 1.6-1.8
# (a parameter there, deprecated in 1.7 with the value "deprecated" meaning
# "not set", removed in 1.9); this class does not expose it.
_SK_VERSION = tuple(int(p) for p in sklearn.__version__.split(".")[:2])
_FORCE_INT_REMAINDER_COLS = False if _SK_VERSION < (1, 7) else "deprecated"


def _numeric_names(transformers):
    """Names of the entries privatized by a numeric mechanism."""
    return {
        name for name, mech, _ in transformers if getattr(mech, "_categorical_input", True) is False
    }


def _numeric_estimate(part, channel, estimator, name):
    """The estimate of a numeric column: its mean (and interval) for the
    mean mechanisms, its distribution over bins for Square Wave.
    ``estimator``: one the channel accepts, or None for its default."""
    est = clone(estimator) if estimator is not None else channel.default_estimator()
    if getattr(channel, "unbiased_reports", False):
        est = est.fit(part)
        low, high = est.confidence_interval()
        return pd.Series(
            {
                "mean": est.mean_,
                "standard_error": est.standard_error_,
                "ci_low": low,
                "ci_high": high,
                "n_reports": est.n_reports_,
            },
            name=name,
        )
    est = est.fit(part)
    edges = est.bin_edges_
    return pd.Series(
        est.distribution_,
        index=pd.Index(0.5 * (edges[:-1] + edges[1:]), name=name),
        name="estimate",
    )


def _memoizes(mechanism):
    """Whether a mechanism memoizes its reports (its transform takes user_secrets)."""
    transform = getattr(type(mechanism), "transform", None)
    if transform is None:
        return False
    return "user_secrets" in inspect.signature(transform).parameters


class _MemoKeys:
    """One call's user keys: each memoized column's, derived on demand.

    Lives for one ``transform`` call and is never stored nor pickled (the
    keys inside refuse it).
    """

    __slots__ = ("keys", "names", "_columns")

    #: Domain-separation label of a column's keys (the column's name follows).
    COLUMN_LABEL = "sklearn_uldp.DataFramePrivatizer.v1|column|"
    #: Context of a column's score in the memoized sampling (its name follows).
    SAMPLED_LABEL = "sklearn_uldp.DataFramePrivatizer.v2|sampled attribute score|"

    def __init__(self, keys, names):
        self.keys, self.names, self._columns = keys, list(names), {}

    def column(self, name):
        """The keys of a memoized column: independent of every other column's."""
        from ..utils._secrets import derive_user_keys

        if name not in self._columns:
            self._columns[name] = derive_user_keys(self.keys, self.COLUMN_LABEL + name)
        return self._columns[name]

    def sampled(self, names):
        """Each user's sampled column among ``names`` (uniform, memoized).

        Rendezvous selection: every column gets a keyed score per user, from
        its name alone, and the highest wins. Reordering the columns moves no
        user, and adding a column moves only the users it wins (about one in
        d + 1), each to the new column: an index drawn among the ordered
        names would move about half the users between old columns, and each
        such user spends a second column's permanent budget.
        """
        from ..utils._secrets import prf_uniforms

        scores = [
            prf_uniforms(self.keys, self.SAMPLED_LABEL + json.dumps(str(name)), 0, 1)[:, 0]
            for name in names
        ]
        return np.argmax(np.column_stack(scores), axis=1)

    def __getitem__(self, rows):
        out = _MemoKeys(self.keys[rows], self.names)
        out._columns = {name: k[rows] for name, k in self._columns.items()}
        return out


def _is_dask_collection(obj):
    return hasattr(obj, "__dask_graph__") and hasattr(obj, "npartitions")


def _as_transformer_list(mechanisms):
    """The ``(name, mechanism, columns)`` list of either accepted form."""
    if isinstance(mechanisms, dict):
        # The dict form {column: mechanism}: named after its column, which it
        # selects as a one-column frame.
        return [(str(c), m, [c]) for c, m in mechanisms.items()]
    return mechanisms


class DataFramePrivatizer(ColumnTransformer, auto_wrap_output_keys=None):  # type: ignore[call-arg]
    """Privatize the columns of a table, one mechanism per column.

    A :class:`~sklearn.compose.ColumnTransformer` whose transformers are
    privacy mechanisms: the same ``(name, mechanism, columns)`` list, column
    selectors (names, positions, masks,
    :func:`~sklearn.compose.make_column_selector`), ``remainder``, nested
    parameters (``set_params(age__epsilon=2.0)``, so a grid search can vary
    each column's budget), ``n_jobs``, ``get_feature_names_out`` and
    ``set_output``. On top of that it gives

    * **independent noise per column**: one integer ``random_state`` is
      split with ``numpy.random.SeedSequence.spawn`` into one stream per
      mechanism; ``None`` keeps each mechanism's own (fresh OS entropy at
      every call for mechanisms left at ``None``, and nothing stored);
      ``"secure"`` gives every mechanism the cryptographically secure
      generator;
    * **schemas**: a pandas ``category`` column whose mechanism has
      ``categories="auto"`` takes its domain from the dtype's declared
      categories, not from the data;
    * **missing values**: an error naming the column, or an explicit
      category (``missing="category"``);
    * **the collector's side**: the reports carry every mechanism's public
      spec (``reports.attrs["sklearn_uldp_specs"]``), and
      :meth:`column_reports`, :meth:`estimate`, :meth:`specs` and
      :meth:`save_spec` hand them to estimators;
    * **Dask**: ``transform`` of a Dask DataFrame privatizes every column in
      one lazy call, one independent stream per partition
      (see :func:`~sklearn_uldp.parallel.privatize_partitions`).

    Privatizing ``c`` columns of one person spends the *sum* of the columns'
    budgets (sequential composition); :attr:`epsilon_spent_` reports that
    sum. The sampling strategies (``strategy``) have each person report one
    column instead, drawn at random: SMP (``"sample"``, Wang et al. ICDE
    2019) and RS+FD (``"sample+fake"``, Arcolezi et al. CIKM 2021), with
    utility-optimized mechanisms too (see the "Many attributes" page).

    Parameters
    ----------
    mechanisms : list of (name, mechanism, columns) tuples, or dict
        As ``ColumnTransformer``'s ``transformers``: each mechanism privatizes
        the columns selected by ``columns`` (one column per mechanism), or
        is ``"drop"``. The dict form ``{column: mechanism}`` is short for
        ``[(column, mechanism, [column]), ...]``.
    strategy : {"split", "sample", "sample+fake"}, default="split"
        How a person reports their columns. ``"split"``: every column,
        through its mechanism (the budgets add up). ``"sample"`` (SMP): one
        column drawn uniformly at random, through its mechanism; the other
        report columns are missing and ``sampled_column`` names the sampled
        column; a person spends the largest mechanism budget.
        ``"sample+fake"`` (RS+FD): one column drawn at random, through its
        mechanism at an amplified budget, and a fake report for every other
        column, so the table does not show which is real; each mechanism's
        ``epsilon`` is then the budget of its **attribute** (rows that
        differ in that column only), and a person's whole row spends more
        (:attr:`epsilon_spent_`). Needs at least two privatized columns.
        Numeric columns take part too (a mean mechanism's mean is estimated
        from the sampled users, or de-mixed from the fakes; Square Wave and
        the one-bit ULDP mechanism send no fakes). A memoized mechanism's
        column is sampled from the user's secret (the same in every round)
        and sends no fakes.
        ``"split"`` stays the default: it keeps each mechanism's budget as
        given and every person's every column (joint questions, tests of
        association); at an equal budget per person ``"sample"`` usually
        wins at small budgets (2.2-2.5x lower TV for k-RR on a real
        12-column survey at epsilon = 1), by less for utility-optimized
        mechanisms and at large budgets (see the "Many attributes" page and
        :func:`~sklearn_uldp.model_selection.choose_strategy`).
    fake : {"auto", "random", "zero"} or dict, default="auto"
        The fake reports of ``"sample+fake"``: ``"random"`` is the mechanism's
        report of a uniformly random sensitive value (every value for LDP
        mechanisms: RS+FD[GRR], RS+FD[OUE-r]); ``"zero"`` the perturbed
        all-zero vector of unary encoding (RS+FD[OUE-z]; RAPPOR, OUE, uRAP,
        uOUE only). ``"auto"`` takes, for each column, the kind whose
        estimate has the smallest closed-form variance (at p(x) = 0, the
        paper's inner budget): ``"zero"`` for unary encoding in practice,
        ``"random"`` for the others. Which mechanism each column should use
        (k-RR or OUE by k, Arcolezi et al.'s adaptive RS+FD) is
        :func:`~sklearn_uldp.model_selection.choose_strategy`'s advice. A dict
        ``{column: kind}`` sets columns one by one (others ``"auto"``).
        Fakes of a utility-optimized column are protected outputs only, so
        a fake never claims a non-sensitive value.
    amplification : {"exact", "paper"}, default="exact"
        The inner budget of ``"sample+fake"``. ``"exact"``: the budget at
        which every attribute's exact privacy (:attr:`attribute_epsilons_`)
        equals its mechanism's ``epsilon``. ``"paper"``: Arcolezi et al.'s
        ``ln(d (e^eps - 1) + 1)``, the same for identical columns of k-RR
        or unary encoding with zero fakes, but larger than the promise for
        columns of different domains or budgets and for random fakes with
        unary encoding (a :class:`~sklearn_uldp.exceptions.PrivacyLeakWarning`
        then gives the real budgets).
    sampled_column : str, default="sampled_attribute"
        Name of the report column that holds, under ``"sample"``, the name
        of each person's sampled column.
    remainder : {"drop", "passthrough"} or mechanism, default="drop"
        What happens to the columns no mechanism selects. ``"drop"`` (the
        default) leaves them out; ``"passthrough"`` copies them to the
        output **unprivatized** (only for columns that are not private, such
        as a survey wave); a mechanism privatizes the remaining column (one
        column at most).
    missing : {"error", "category"}, default="error"
        What to do with missing values (None, NaN, pd.NA) in a privatized
        column. ``"error"`` raises a clear error naming the column;
        ``"category"`` replaces them by ``missing_label``, which must then be
        one of the mechanism's categories (it is added automatically with
        ``categories="auto"``).
    missing_label : str, default="(missing)"
        The explicit category used for missing values.
    random_state : None, "secure", int, SeedSequence or Generator, default=None
        The randomness of all mechanisms. ``None`` keeps each mechanism's own
        ``random_state``. ``"secure"`` gives every mechanism the
        cryptographically secure generator (fresh key at every call; for
        deployment, needs ``pip install "sklearn-uldp[secure]"``). An int,
        SeedSequence or Generator (simulations only) overrides the
        mechanisms' seeds with independent children of one
        ``SeedSequence``.
    n_jobs : int, default=None
        Mechanisms run in parallel threads (``None``: one at a time, the
        fastest for a few columns: a column of 10⁵ values is privatized in
        milliseconds).
    verbose_feature_names_out : bool, str or callable, default=False
        As in ``ColumnTransformer``; ``False`` keeps the report columns'
        names (``age``, ``job_nurse``, ...).
    verbose : bool, default=False
        Print the time each mechanism takes.

    Attributes
    ----------
    transformers_ : list of (name, mechanism, columns)
        The fitted mechanisms (and the remainder), as in ``ColumnTransformer``.
    mechanisms_ : dict of {str: BaseMechanism}
        Name -> fitted mechanism.
    channels_ : dict of {str: Channel}
        Name -> public spec of the mechanism.
    output_indices_ : dict of {str: slice}
        Name -> the slice of report columns it produced.
    feature_names_in_ : ndarray of str
        The columns of the table seen in ``fit`` (DataFrames only).
    n_features_in_ : int
        The number of columns seen in ``fit``.
    epsilon_spent_ : float
        Budget one person's row of reports spends (largest log-ratio between
        any two rows): the sum of the budgets (``"split"``), the largest one
        (``"sample"``), the exact row budget (``"sample+fake"``).
    attribute_epsilons_ : dict of {str: float}
        Name -> budget of the column's attribute (largest log-ratio between
        rows that differ in that column only).

    Notes
    -----
    Output: a DataFrame when the input is a DataFrame (carrying the specs in
    ``attrs``), unless ``set_output(transform="default")`` asks for a numpy
    array; ``set_output(transform="pandas")`` always gives a DataFrame.

    See Also
    --------
    sklearn.compose.ColumnTransformer : the composite this class extends.
    sklearn_uldp.compose.JointEncoder : privatize a tuple of columns jointly.
    sklearn_uldp.privacy.BudgetAccountant : keep track of the budget spent.

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn_uldp import RandomizedResponse, UtilityOptimizedRR
    >>> from sklearn_uldp.compose import DataFramePrivatizer
    >>> df = pd.DataFrame({"marital": ["married", "divorced", "single"],
    ...                    "region": ["north", "south", "south"],
    ...                    "wave": [1, 1, 2]})
    >>> priv = DataFramePrivatizer([
    ...     ("marital", UtilityOptimizedRR(epsilon=1.0, sensitive=["divorced"],
    ...         categories=["married", "single", "divorced"]), ["marital"]),
    ...     ("region", RandomizedResponse(epsilon=0.5,
    ...         categories=["north", "south"]), ["region"]),
    ... ], remainder="passthrough", random_state=0)
    >>> reports = priv.fit_transform(df)
    >>> list(reports.columns), reports.shape
    (['marital', 'region', 'wave'], (3, 3))
    >>> priv.epsilon_spent_
    1.5
    >>> priv.set_params(region__epsilon=2.0).fit(df).epsilon_spent_
    3.0

    Each person reports one column, drawn at random (SMP):

    >>> smp = DataFramePrivatizer({
    ...     "marital": UtilityOptimizedRR(epsilon=1.0, sensitive=["divorced"],
    ...         categories=["married", "single", "divorced"]),
    ...     "region": RandomizedResponse(epsilon=1.0, categories=["north", "south"]),
    ... }, strategy="sample", random_state=0)
    >>> reports = smp.fit_transform(df)
    >>> list(reports.columns), smp.epsilon_spent_
    (['marital', 'region', 'sampled_attribute'], 1.0)
    """

    _parameter_constraints = {
        "mechanisms": [list, dict],
        "strategy": [StrOptions(set(_strategies.STRATEGIES))],
        "fake": [StrOptions({"auto", "random", "zero"}), dict],
        "amplification": [StrOptions({"exact", "paper"})],
        "sampled_column": [str],
        "remainder": [
            StrOptions({"drop", "passthrough"}),
            HasMethods(["fit", "transform"]),
        ],
        "missing": [StrOptions({"error", "category"})],
        "missing_label": [str],
        "random_state": RANDOM_STATE_CONSTRAINT,
        "n_jobs": [Integral, None],
        "verbose_feature_names_out": ["boolean", str, callable],
        "verbose": ["verbose"],
    }

    # Fixed ColumnTransformer settings (not parameters): reports are never
    # weighted, and always dense (report columns hold category labels).
    sparse_threshold = 0.0
    transformer_weights = None
    force_int_remainder_cols = _FORCE_INT_REMAINDER_COLS

    def __init__(
        self,
        mechanisms: Sequence[tuple[str, Any, Any]] | dict[Any, Any],
        *,
        strategy: Literal["split", "sample", "sample+fake"] = "split",
        fake: Literal["auto", "random", "zero"] | dict[str, str] = "auto",
        amplification: Literal["exact", "paper"] = "exact",
        sampled_column: str = "sampled_attribute",
        remainder: Literal["drop", "passthrough"] | BaseMechanism = "drop",
        missing: Literal["error", "category"] = "error",
        missing_label: str = "(missing)",
        random_state: RandomStateLike = None,
        n_jobs: int | None = None,
        verbose_feature_names_out: bool | str | Callable[[str, str], str] = False,
        verbose: bool = False,
    ) -> None:
        self.mechanisms = mechanisms
        self.strategy = strategy
        self.fake = fake
        self.amplification = amplification
        self.sampled_column = sampled_column
        self.remainder = remainder
        self.missing = missing
        self.missing_label = missing_label
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose_feature_names_out = verbose_feature_names_out
        self.verbose = verbose

    # ------------------------------------------------- ColumnTransformer glue
    @property
    def transformers(self):
        """The ``(name, mechanism, columns)`` list ColumnTransformer works on."""
        fitting = self.__dict__.get("_fitting_transformers")
        if fitting is not None:  # the seeded clones, during fit only
            return fitting
        return _as_transformer_list(self.mechanisms)

    @transformers.setter
    def transformers(self, value):
        self.mechanisms = value

    @property
    def _transformers(self):
        # For _BaseComposition.get_params/set_params: (name, mechanism) pairs.
        try:
            return [(name, trans) for name, trans, _ in self.transformers]
        except (TypeError, ValueError):
            return self.transformers

    @_transformers.setter
    def _transformers(self, value):
        self.mechanisms = [
            (name, trans, cols)
            for (name, trans), (_, _, cols) in zip(value, self.transformers, strict=True)
        ]

    def set_params(self, **params: Any) -> DataFramePrivatizer:
        """Set the parameters of this privatizer and of its mechanisms.

        A mechanism's parameter is ``<name>__<parameter>`` as in
        :class:`~sklearn.compose.ColumnTransformer`
        (``set_params(age__epsilon=2.0)``); the spelling through the
        ``mechanisms`` list, ``mechanisms__age__epsilon``, means the same.

        Parameters
        ----------
        **params : dict
            Parameter names and values.

        Returns
        -------
        self : DataFramePrivatizer
        """
        aliased = {}
        for key, value in params.items():
            if key.startswith("mechanisms__"):
                names = [name for name, *_ in _as_transformer_list(self.mechanisms)]
                rest = key[len("mechanisms__") :]
                if rest.split("__", 1)[0] not in names or "__" not in rest:
                    raise ValueError(
                        f"Invalid parameter {key!r}: after 'mechanisms__' comes a "
                        f"mechanism's name and one of its parameters, e.g. "
                        f"'mechanisms__{names[0] if names else 'age'}__epsilon'; "
                        f"the mechanisms are named {names}."
                    )
                key = rest
            aliased[key] = value
        return super().set_params(**aliased)

    def set_output(self, *, transform=None):
        """Set the output container of ``transform`` and ``fit_transform``.

        Parameters
        ----------
        transform : {"default", "pandas"}, default=None
            ``"default"``: a numpy array; ``"pandas"``: a DataFrame (also
            for array input); ``None``: unchanged (a DataFrame for DataFrame
            input).

        Returns
        -------
        self : DataFramePrivatizer
        """
        if transform is None:
            return self
        if transform not in ("default", "pandas"):
            raise ValueError(
                f"DataFramePrivatizer returns numpy arrays or pandas DataFrames: "
                f"set_output(transform='default' or 'pandas'), got {transform!r}. "
                "Convert a pandas result with e.g. polars.from_pandas(reports)."
            )
        self._sklearn_output_config = {
            **self.__dict__.get("_sklearn_output_config", {}),
            "transform": transform,
        }
        for _, trans, _ in list(self.transformers) + list(getattr(self, "transformers_", [])):
            if not isinstance(trans, str):
                _safe_set_output(trans, transform=transform)
        if not isinstance(self.remainder, str):
            _safe_set_output(self.remainder, transform=transform)
        return self

    def _output_config(self):
        """The container asked for: "pandas", "default", or None (unset)."""
        own = self.__dict__.get("_sklearn_output_config", {}).get("transform")
        if own is not None:
            return own
        glob = get_config().get("transform_output", "default")
        return None if glob == "default" else glob

    # ------------------------------------------------------------ validation
    def _check_params(self):
        validate_params_with_hints(self, PARAMETER_HINTS)
        if not isinstance(self.remainder, (str, *_MECHANISMS)):
            raise TypeError(
                "remainder must be 'drop', 'passthrough' or a mechanism, got "
                f"{type(self.remainder).__name__}: another transformer would send "
                "the remaining columns without privacy."
            )
        transformers = self.transformers
        if not transformers:
            raise ValueError(
                "mechanisms is empty: pass [(name, mechanism, columns), ...] or "
                "{column: mechanism}."
            )
        names = []
        for entry in transformers:
            if not (isinstance(entry, tuple | list) and len(entry) == 3):
                raise TypeError(
                    "mechanisms must be a list of (name, mechanism, columns) tuples "
                    f"or a dict {{column: mechanism}}; got the entry {entry!r}."
                )
            name, mech, columns = entry
            if not isinstance(name, str) or name in names:
                raise ValueError(
                    f"Mechanism names must be distinct strings; got {name!r} "
                    f"{'twice' if name in names else f'({type(name).__name__})'}. The dict "
                    "form names each mechanism after its column (str(column)), so "
                    "columns such as '0' and 0 collide: use the list form "
                    "[(name, mechanism, [column]), ...] with distinct names, or "
                    "rename the columns."
                )
            names.append(name)
            if columns is None or (isinstance(columns, list) and any(c is None for c in columns)):
                raise ValueError(
                    f"Mechanism {name!r} selects the column None: pandas cannot "
                    "select a column named None reliably; rename it, e.g. "
                    "df.rename(columns={None: 'value'})."
                )
            if isinstance(mech, str) and mech == "drop":
                continue
            if not isinstance(mech, _MECHANISMS):
                raise TypeError(
                    f"The transformer of {name!r} must be a mechanism such as "
                    f"UtilityOptimizedRR(...) (or 'drop'), got "
                    f"{type(mech).__name__}. Raw columns are copied only through "
                    "remainder='passthrough'."
                )

    def _mechanism_columns(self, X, transformers):
        """Name -> positions of the columns each mechanism reads in ``X``."""
        from sklearn.utils._indexing import _get_column_indices

        out = {}
        for name, mech, columns in transformers:
            if isinstance(mech, str):
                continue
            if callable(columns):
                columns = columns(X)
            try:
                out[name] = _get_column_indices(X, columns)
            except (ValueError, KeyError, IndexError) as exc:
                have = (
                    f"its columns: {list(X.columns)[:20]}"
                    if hasattr(X, "columns")
                    else f"an array with {np.shape(X)[1]} columns: select "
                    "columns by position, e.g. [0], or pass a DataFrame"
                )
                raise ValueError(
                    f"Mechanism {name!r} reads the columns {columns!r}, which are "
                    f"not in X ({have}). {exc}"
                ) from None
            if isinstance(mech, _MECHANISMS) and len(out[name]) != 1:
                # One distribution to estimate and one report block per name.
                raise ValueError(
                    f"Mechanism {name!r} reads {len(out[name])} columns "
                    f"({columns!r}); DataFramePrivatizer gives each mechanism one "
                    "column. Give each column its own entry, e.g. "
                    "[('a', mech, ['a']), ('b', mech, ['b'])], or privatize the "
                    "columns' tuple as one joint value (JointEncoder)."
                )
        return out

    def _prepared(self, X, positions, numeric=()):
        """``X`` with missing values of privatized columns handled (a copy if changed).

        Numeric mechanisms' columns are left to them (NaN and infinite values
        are errors there; missing="category" has no category to map them to).
        """
        frame = isinstance(X, pd.DataFrame)
        changed = {}
        for name, cols in positions.items():
            if name in numeric:
                continue
            for j in cols:
                values = X.iloc[:, j] if frame else pd.Series(np.asarray(X)[:, j])
                label = X.columns[j] if frame else f"x{j}"
                if values.dtype.kind == "f" and np.isinf(values.to_numpy()).any():
                    raise ValueError(
                        f"Column {label!r} holds infinite values (inf), which are "
                        "not categories: replace or drop them."
                    )
                if values.dtype.kind in "biu":  # numpy integers and booleans: never missing
                    continue
                # other numbers are checked without a Python object per value
                # (is_missing): at 10^7 rows that was most of transform
                missing = is_missing(values.to_numpy())
                if not missing.any():
                    continue
                if self.missing == "error":
                    by = "" if name == str(label) else f" (read by mechanism {name!r})"
                    raise ValueError(
                        f"Column {label!r} has {int(missing.sum())} missing "
                        f"values (NaN/None){by}. Impute or drop them, "
                        "or pass missing='category' to report them as the explicit "
                        f"category {self.missing_label!r}."
                    )
                values = values.astype(object).where(~missing, self.missing_label)
                if isinstance(values.dtype, pd.CategoricalDtype):  # pragma: no cover
                    values = values.astype(object)
                changed[j] = values.to_numpy()
        if not changed:
            return X
        if frame:
            X = X.copy(deep=False)  # the caller's frame is never modified
            for j, values in changed.items():
                X.isetitem(j, values)
            return X
        X = np.array(X, dtype=object)
        for j, values in changed.items():
            X[:, j] = values
        return X

    def _domain(self, mech, X, cols):
        """Categories of a pandas ``category`` column for ``categories='auto'``."""
        if not (
            isinstance(getattr(mech, "categories", None), str)
            and isinstance(X, pd.DataFrame)
            and len(cols) == 1
        ):
            return None
        dtype = X.dtypes.iloc[cols[0]]
        if not isinstance(dtype, pd.CategoricalDtype):
            return None
        cats = list(dtype.categories)
        if self.missing == "category" and self.missing_label not in cats:
            cats.append(self.missing_label)
        return cats

    def _seeds(self, n):
        if self.random_state is None:
            # Each mechanism keeps its own random_state. None stays None: a
            # seed drawn here would be kept in the fitted mechanisms (and
            # their pickles), and anyone holding them could replay the noise.
            return [None] * n
        if is_secure(self.random_state):
            check_secure_available()
            return [self.random_state] * n
        return check_seed_sequence(self.random_state).spawn(n)

    # -------------------------------------------------------------------- fit
    def fit(self: _PrivatizerT, X: Any, y: object = None) -> _PrivatizerT:
        """Fit every mechanism on its columns (fixes domains and channels).

        Parameters
        ----------
        X : DataFrame, array-like or Dask DataFrame of shape (n_samples, n_features)
            The table. A Dask DataFrame is not read when every mechanism has
            explicit categories.
        y : None
            Ignored.

        Returns
        -------
        self : DataFramePrivatizer
        """
        if _is_dask_collection(X):
            return self._fit_dask(X)
        self._fit_transform(X, keep=False)
        return self

    def fit_transform(self, X: Any, y: object = None, user_secrets: Any = None) -> TransformOutput:
        """Fit every mechanism and privatize the table.

        Parameters
        ----------
        X : DataFrame, array-like or Dask DataFrame of shape (n_samples, n_features)
        y : None
            Ignored.
        user_secrets : sequence of bytes, UserKeys or Dask Series, default=None
            One secret per row, for the memoized (longitudinal) mechanisms;
            see :meth:`transform`.

        Returns
        -------
        reports : DataFrame, ndarray or Dask DataFrame
            See :meth:`transform`.
        """
        if _is_dask_collection(X):
            return self._fit_dask(X).transform(X, user_secrets=user_secrets)
        if user_secrets is not None:
            self._fit_transform(X, keep=False)
            return self.transform(X, user_secrets=user_secrets)
        self._check_memo_secrets()
        return self._fit_transform(X, keep=True)

    @staticmethod
    def _check_input(X):
        """A 2-D dense table, or a clear error."""
        if hasattr(X, "toarray") or hasattr(X, "tocsr"):
            raise TypeError(
                "Sparse input is not supported: privatized columns hold category "
                "values. Pass a DataFrame or a dense array."
            )
        if not hasattr(X, "iloc") and not hasattr(X, "shape"):
            X = np.asarray(X, dtype=object)
        if np.ndim(X) != 2:
            raise ValueError(
                f"Expected 2D array, got {np.ndim(X)}D array instead. Reshape your "
                "data with X.reshape(-1, 1) for a single column, or pass a DataFrame."
            )
        if X.shape[1] == 0:
            raise ValueError(
                f"0 feature(s) (shape={X.shape}) while a minimum of 1 is "
                "required: pass the table's columns."
            )
        # Columns are selected by name: a repeated name would make one
        # mechanism read several columns (or scikit-learn < 1.7 fail late with
        # its own message), so say it here, for every scikit-learn version.
        columns = getattr(X, "columns", None)
        if columns is not None and not columns.is_unique:
            counts = pd.Index(columns).value_counts()
            repeated = ", ".join(f"{name!r} ({n} times)" for name, n in counts[counts > 1].items())
            raise ValueError(
                f"The table's column names must be unique; repeated: {repeated}. "
                "Columns are selected by name: rename them first, e.g. "
                "X.columns = [f'col{i}' for i in range(X.shape[1])]."
            )
        return X

    def _fit_transform(self, X, keep):
        self._check_params()
        X = self._check_input(X)
        transformers = list(self.transformers)
        positions = self._mechanism_columns(X, transformers)
        seeds = iter(self._seeds(len(positions)))
        fitting, auto = [], []
        for name, mech, columns in transformers:
            if isinstance(mech, str):
                fitting.append((name, mech, columns))
                continue
            mech = clone(mech)
            seed = next(seeds)
            if seed is not None and "random_state" in mech.get_params():
                mech.set_params(random_state=seed)
            domain = self._domain(mech, X, positions[name])
            if domain is not None:
                mech.set_params(categories=domain)
            elif isinstance(getattr(mech, "categories", None), str):
                auto.append(name)
            fitting.append((name, mech, columns))
        X = self._prepared(X, positions, _numeric_names(transformers))
        if auto:
            # One warning naming the columns, instead of one identical
            # warning per mechanism.
            warnings.warn(
                f"{_AUTO_DOMAIN} of {auto}, which reveals which values occur. Pass "
                "the public domain as categories=[...] (or use pandas 'category' "
                "columns) in a deployment.",
                PrivacyLeakWarning,
                stacklevel=3,
            )
        fit_on = X
        if self.strategy != "split" and not isinstance(self.remainder, BaseMechanism):
            # The sampling strategies privatize in their own transform: the
            # mechanisms learn and check their domains on the whole columns
            # here, and ColumnTransformer only sets itself up on one row
            # (rather than privatizing every column for nothing).
            fitting = _fitted_domains(fitting, X, positions)
            fit_on = X.iloc[:1] if isinstance(X, pd.DataFrame) else X[:1]
        memo = {}
        if not keep:
            # ColumnTransformer fits a mechanism through its fit_transform,
            # and a memoized one cannot privatize without secrets: for this
            # set-up fit only (its reports are discarded), it simulates users
            # from a throwaway seed, and gets its own randomness back below.
            for name, mech, _ in fitting:
                if _memoizes(mech) and is_fresh(mech.random_state):
                    memo[name] = mech.random_state
                    mech.set_params(random_state=np.random.SeedSequence(0))
        self._fitting_transformers = fitting
        try:
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message=_AUTO_DOMAIN, category=PrivacyLeakWarning)
                out = self._run(ColumnTransformer.fit_transform, fit_on)
        finally:
            del self._fitting_transformers
        for name, trans, _ in self.transformers_:
            if name in memo:
                trans.set_params(random_state=memo[name])
                trans._start_random_stream()
        rest = self._transformer_to_input_indices.get("remainder", [])
        if isinstance(self.remainder, _MECHANISMS) and len(rest) > 1:
            # Like a listed mechanism: one column, one distribution to estimate.
            raise ValueError(
                f"remainder is a mechanism, and {len(rest)} columns remain "
                f"(positions {list(rest)[:20]}); DataFramePrivatizer gives each "
                "mechanism one column. List each remaining column with its own "
                "mechanism, or leave one column to the remainder."
            )
        for attr in ("_strategy_channels", "_strategy_guarantees", "_sampling_calls"):
            self.__dict__.pop(attr, None)
        self._fitted_strategy = self.strategy
        if self.strategy != "split":
            self._fit_strategy()
            return self._finish_sampled(X) if keep else None
        return self._finish(out, X) if keep else None

    # ----------------------------------------------------------- strategies
    def _fit_strategy(self):
        names = set(ColumnTransformer.get_feature_names_out(self))
        if self.strategy == "sample" and self.sampled_column in names:
            raise ValueError(
                f"sampled_column={self.sampled_column!r} is also the name of a report "
                "column: pass another name for the column of sampled attributes."
            )
        channels, guarantees = _strategies.fit_strategy(self)
        self._strategy_channels = channels
        self._strategy_guarantees = guarantees
        if not is_fresh(self.random_state):
            self._sampling_calls = [0]

    def _check_fitted_strategy(self):
        fitted = self.__dict__.get("_fitted_strategy", "split")
        if fitted != self.strategy:
            raise ValueError(
                f"This DataFramePrivatizer was fitted with strategy={fitted!r} and "
                f"strategy is now {self.strategy!r}: fit it again."
            )
        return fitted

    def _finish_sampled(self, X, keys=None):
        """Privatize with the sampling strategy and assemble the output."""
        blocks, sampled = _strategies.transform_sampled(self, X, keys)
        X = self._check_input(X)
        pandas = self._output_config() == "pandas" or (
            self._output_config() is None and isinstance(X, pd.DataFrame)
        )
        names = self.get_feature_names_out()
        rest = self._passthrough(X)
        labels = np.asarray(list(self.mechanisms_), dtype=object)
        if not pandas:
            parts = [b.dense() for b in blocks]
            if rest is not None:
                parts.append(np.asarray(rest, dtype=object))
            if self.strategy == "sample":
                parts.append(labels[sampled][:, None])
            return (
                np.hstack(parts)
                if len({p.dtype for p in parts}) == 1
                else np.hstack([p.astype(object) for p in parts])
            )
        columns = {}
        for block in blocks:
            columns.update(block.series(list(names[self.output_indices_[block.name]])))
        if rest is not None:
            for j, c in enumerate(names[self.output_indices_["remainder"]]):
                columns[c] = rest.iloc[:, j].to_numpy() if hasattr(rest, "iloc") else rest[:, j]
        if self.strategy == "sample":
            columns[self.sampled_column] = pd.Categorical.from_codes(sampled, categories=labels)
        index = X.index if isinstance(X, pd.DataFrame) else None
        out = pd.DataFrame(columns, index=index, copy=False)  # the columns are new
        out.columns = names
        out.attrs = {CHANNELS_ATTR: self.specs()}
        return out

    def _passthrough(self, X):
        """The remainder columns copied unprivatized (None without them)."""
        if self.remainder != "passthrough":
            return None
        cols = list(self._transformer_to_input_indices.get("remainder", []))
        if not cols:
            return None
        fitted_names = getattr(self, "feature_names_in_", None)
        if fitted_names is not None and isinstance(X, pd.DataFrame):
            return X[[fitted_names[j] for j in cols]]
        return np.asarray(X)[:, cols]

    def _run(self, method, X):
        """Call a ColumnTransformer method with this class's output and threads."""
        from joblib import parallel_config

        pandas = self._output_config() == "pandas" or (
            self._output_config() is None and isinstance(X, pd.DataFrame)
        )
        self._check_packed(pandas)
        # Threads, not processes: mechanisms count their calls in place (so
        # that seeded streams never repeat), and the table is not copied.
        with (
            config_context(transform_output="pandas" if pandas else "default"),
            parallel_config(backend="threading"),
        ):
            return method(self, X)

    def _check_packed(self, pandas):
        """Packed reports (``packed_output=True``) need pandas output and "split"."""
        mechanisms = [(n, t) for n, t, _ in self.transformers] + [("remainder", self.remainder)]
        packed = [n for n, t in mechanisms if getattr(t, "packed_output", False)]
        if not packed:
            return
        if not pandas:
            raise ValueError(
                f"Mechanisms {packed} write packed reports (packed_output=True), "
                "which a table holds as one binary column per input column: pass a "
                "DataFrame or call set_output(transform='pandas'), or use "
                "packed_output=False for an array of dense 0/1 reports."
            )
        if self.strategy != "split":
            raise ValueError(
                f"Mechanisms {packed} write packed reports (packed_output=True), "
                f"which strategy={self.strategy!r} does not support: use "
                "packed_output=False, or strategy='split'."
            )

    def _finish(self, out, X):
        """Name the report columns and attach the specs."""
        pandas = self._output_config() == "pandas" or (
            self._output_config() is None and isinstance(X, pd.DataFrame)
        )
        if not pandas:
            return np.asarray(out)
        names = self.get_feature_names_out()
        index = X.index if isinstance(X, pd.DataFrame) else None
        if isinstance(out, pd.DataFrame):
            out.columns = names
            if index is not None:
                out.index = index
        else:
            out = pd.DataFrame(np.asarray(out), columns=names, index=index)
        out.attrs = {CHANNELS_ATTR: self.specs()}
        return out

    def _fit_dask(self, ddf):
        """Fit on a Dask DataFrame without reading it (explicit domains)."""
        self._check_params()
        transformers = list(self.transformers)
        meta = ddf._meta_nonempty
        positions = self._mechanism_columns(meta, transformers)
        domains = {}
        for name, mech, _ in transformers:
            if isinstance(mech, str):
                continue
            if not mech._categorical_input:
                if isinstance(mech.bounds, str):
                    raise ValueError(
                        f"Mechanism {name!r} has bounds='auto', which would read the "
                        "Dask DataFrame to learn the range. Pass the public range as "
                        "bounds=(low, high), or fit on a pandas sample."
                    )
                domains[name] = [float(b) for b in np.ravel(mech.bounds)][:2]
                continue
            if isinstance(mech.categories, str):
                for j in positions[name]:
                    col = ddf.columns[j]
                    if (
                        isinstance(ddf.dtypes.iloc[j], pd.CategoricalDtype)
                        and not ddf[col].cat.known
                    ):
                        raise ValueError(
                            f"Column {col!r} of the Dask DataFrame has a category "
                            "dtype whose categories are unknown (e.g. read from "
                            f"Parquet), and mechanism {name!r} has "
                            "categories='auto'. Pass categories=[...], or declare "
                            f"them: ddf[{col!r}] = ddf[{col!r}].cat.set_categories"
                            "([...])."
                        )
                domain = self._domain(mech, meta, positions[name])
                if domain is None:
                    col = meta.columns[positions[name][0]]
                    raise ValueError(
                        f"Mechanism {name!r} has categories='auto', which would read "
                        f"the Dask DataFrame (column {col!r}) to learn the domain. "
                        "Pass the public domain as categories=[...] (or declare the "
                        "column as a pandas 'category' dtype), or fit on a pandas "
                        "sample: priv.fit(ddf.head(100_000)) and then "
                        "priv.transform(ddf)."
                    )
                domains[name] = list(domain)
            else:
                domains[name] = list(np.asarray(mech.categories, dtype=object))
        # A small stand-in table with the schema's dtypes, whose privatized
        # columns hold their domain's values: fitting it fixes the channels,
        # names and output slices, and never touches the data.
        n = max([2] + [len(d) for d in domains.values()])
        sample = meta.iloc[np.arange(n) % len(meta)].reset_index(drop=True)
        for name, domain in domains.items():
            for j in positions[name]:
                values = np.resize(np.asarray(domain, dtype=object), n)
                dtype = sample.dtypes.iloc[j]
                if isinstance(dtype, pd.CategoricalDtype) and set(domain) <= set(dtype.categories):
                    values = pd.Categorical(values, dtype=dtype)
                elif not isinstance(dtype, pd.CategoricalDtype):
                    try:
                        values = pd.Series(values).astype(sample.dtypes.iloc[j])
                    except (TypeError, ValueError):
                        pass  # e.g. a text label among integers: object values
                sample.isetitem(
                    j, np.asarray(values) if not isinstance(values, pd.Categorical) else values
                )
        self._fit_transform(sample, keep=False)
        return self

    # -------------------------------------------------------------- transform
    def transform(self, X: Any, user_secrets: Any = None) -> TransformOutput:
        """Privatize every column with fresh independent randomness.

        Parameters
        ----------
        X : DataFrame, array-like or Dask DataFrame
            The table (extra columns of a DataFrame are ignored).
        user_secrets : sequence of bytes, UserKeys or Dask Series, default=None
            One secret per row (the user's, kept by that user for every
            round: :func:`~sklearn_uldp.utils.generate_user_secrets`), for
            the memoized (longitudinal) mechanisms, such as
            :class:`~sklearn_uldp.mechanisms.LongitudinalGRR`. Each memoized
            column gets its own keys, derived from the secret and the
            mechanism's name (:func:`~sklearn_uldp.utils.derive_user_keys`),
            so two columns never share permanent answers; under
            ``strategy="sample"`` the sampled column is derived from the
            secret too, so a user reports the same column in every round.
            For a Dask DataFrame, a Dask Series of secrets with the same
            partitions (e.g. a column of the same frame). Never stored, nor
            written to the reports or specs. In a Pipeline, route them with
            ``set_transform_request(user_secrets=True)`` (metadata routing).

        Returns
        -------
        reports : DataFrame, ndarray or Dask DataFrame
            One report column per one-symbol mechanism, one per bit for
            bit-vector mechanisms (``<column>_<category>``), then the
            remainder; a DataFrame (same index as ``X``, with
            ``attrs["sklearn_uldp_specs"]`` mapping each mechanism's name to
            its public spec) for DataFrame input or
            ``set_output(transform="pandas")``, else an array. A Dask
            DataFrame gives a lazy Dask DataFrame of reports, one independent
            random stream per partition: compute or persist it **once** (each
            computation privatizes again, spending the budget again).
        """
        check_is_fitted(self, "transformers_")
        if _is_dask_collection(X):
            from ..parallel import privatize_partitions

            if user_secrets is None:
                self._check_memo_secrets()
            return privatize_partitions(X, self, user_secrets=user_secrets)
        if user_secrets is None:
            self._check_memo_secrets()
        keys = None if user_secrets is None else self._memo_keys(user_secrets, len(X))
        if self._check_fitted_strategy() != "split":
            return self._finish_sampled(X, keys)
        X = self._check_input(X)
        X = self._prepared(X, self._fitted_positions(X), _numeric_names(self.transformers_))
        if keys is not None:
            return self._finish(self._transform_memoized(X, keys), X)
        return self._finish(self._run(ColumnTransformer.transform, X), X)

    # ------------------------------------------------- memoized mechanisms
    def _memoized_names(self):
        return [name for name, mech in self.mechanisms_.items() if _memoizes(mech)]

    def _check_memo_secrets(self):
        """A clear error when memoized mechanisms would run without secrets."""
        if "transformers_" in self.__dict__:
            mechs = list(self.mechanisms_.items())
        else:
            mechs = [(n, m) for n, m, _ in self.transformers if isinstance(m, _MECHANISMS)]
        seeded = self.random_state is not None and not is_fresh(self.random_state)
        names = [n for n, m in mechs if _memoizes(m) and not seeded and is_fresh(m.random_state)]
        if names:
            raise ValueError(
                f"Columns {names} use memoized (longitudinal) mechanisms, which derive "
                "each user's permanent answers from a secret per user, and no "
                "user_secrets were given. Pass transform(X, user_secrets=secrets): one "
                "secret per row, made once per user with "
                "sklearn_uldp.utils.generate_user_secrets(n_users) and kept by that "
                "user for every round (in a Pipeline: "
                "privatizer.set_transform_request(user_secrets=True) with "
                "sklearn.set_config(enable_metadata_routing=True)). For a simulation, "
                "pass an integer random_state."
            )

    def _memo_keys(self, user_secrets, n_rows):
        """The users' keys, per memoized column (checked against the rows)."""
        from ..utils._secrets import check_user_secrets

        names = self._memoized_names()
        if not names:
            raise ValueError(
                "user_secrets were given, but no mechanism of this privatizer "
                f"memoizes its reports (mechanisms: {list(self.mechanisms_)}). Drop "
                "user_secrets, or use a longitudinal mechanism (LongitudinalGRR, "
                "LongitudinalUE, LongitudinalLocalHashing, DBitFlipPM, "
                "UtilityOptimizedLongitudinalRR/RAPPOR) for the columns collected "
                "in several rounds."
            )
        return _MemoKeys(check_user_secrets(user_secrets, n_samples=n_rows), names)

    def _transform_memoized(self, X, keys):
        """Every mechanism on its column, the memoized ones with their column's
        keys (ColumnTransformer's transform has no per-column metadata)."""
        pandas = self._output_config() == "pandas" or (
            self._output_config() is None and isinstance(X, pd.DataFrame)
        )
        positions = self._fitted_positions(X)
        parts = []
        with config_context(transform_output="pandas" if pandas else "default"):
            for name, trans, _ in self.transformers_:
                if isinstance(trans, _MECHANISMS):
                    pos = positions[name]
                    column = X.iloc[:, pos] if isinstance(X, pd.DataFrame) else X[:, pos]
                    if name in keys.names:
                        memoized: Any = trans  # a longitudinal mechanism
                        parts.append(memoized.transform(column, user_secrets=keys.column(name)))
                    else:
                        parts.append(trans.transform(column))
                elif name == "remainder" and self.remainder == "passthrough":
                    rest = self._passthrough(X)
                    if rest is not None:
                        parts.append(rest)
        if not pandas:
            arrays = [np.asarray(p.toarray() if hasattr(p, "toarray") else p) for p in parts]
            if len({a.dtype for a in arrays}) > 1:
                arrays = [a.astype(object) for a in arrays]
            return np.hstack(arrays)
        columns = []
        for part in parts:
            if isinstance(part, pd.DataFrame):
                columns += [part.iloc[:, j].to_numpy() for j in range(part.shape[1])]
            else:
                arr = np.asarray(part.toarray() if hasattr(part, "toarray") else part)
                columns += [arr[:, j] for j in range(arr.shape[1])]
        names = self.get_feature_names_out()
        index = X.index if isinstance(X, pd.DataFrame) else None
        return pd.DataFrame(dict(enumerate(columns)), index=index).set_axis(names, axis=1)

    def get_metadata_routing(self):
        """The privatizer's metadata requests (it routes nothing to its mechanisms).

        The privatizer consumes ``user_secrets`` itself
        (``set_transform_request(user_secrets=True)``) and derives each
        memoized column's keys from them; its mechanisms take no other
        metadata.

        Returns
        -------
        routing : MetadataRequest
        """
        return self._get_metadata_request()

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        """Names of the report columns (then, under ``strategy="sample"``, the
        column naming each user's sampled attribute).

        Parameters
        ----------
        input_features : array-like of str, default=None
            As in :class:`~sklearn.compose.ColumnTransformer`.

        Returns
        -------
        feature_names_out : ndarray of str objects
        """
        names = super().get_feature_names_out(input_features)
        if self.__dict__.get("_fitted_strategy") == "sample":
            names = np.append(names, np.asarray([self.sampled_column], dtype=object))
        return names

    def _fitted_positions(self, X):
        """Name -> positions of each mechanism's columns in ``X`` (at transform)."""
        out = {}
        names = getattr(self, "feature_names_in_", None)
        for name, cols in self._transformer_to_input_indices.items():
            if name not in self.mechanisms_:
                continue
            if names is not None and isinstance(X, pd.DataFrame):
                wanted = [names[j] for j in cols]
                absent = [c for c in wanted if c not in X.columns]
                if absent:
                    raise ValueError(
                        f"Columns {absent} of mechanism {name!r} are not in the "
                        f"DataFrame; its columns include {list(X.columns)[:20]}."
                    )
                out[name] = [X.columns.get_loc(c) for c in wanted]
            else:
                out[name] = list(cols)
        return out

    # ------------------------------------------------------ partitions (Dask)
    def _partition_template(self):
        """A copy holding no random state, to send to workers (or a task graph)."""
        from ..parallel._partitions import _partition_template

        template = copy.copy(self)
        template.random_state = None
        template.transformers_ = [
            (name, _partition_template(t) if isinstance(t, _MECHANISMS) else t, cols)
            for name, t, cols in self.transformers_
        ]
        return template

    def _privatize_partition(self, frame, seed, user_secrets=None):
        """Privatize one partition (``self`` is a template) with ``seed`` (and
        the secrets of its rows)."""
        priv = copy.copy(self)
        mechs = [
            (i, t) for i, (_, t, _) in enumerate(priv.transformers_) if isinstance(t, _MECHANISMS)
        ]
        if is_fresh(seed):
            # fresh entropy in this task; a mechanism declared "secure" keeps
            # the secure generator whatever its neighbours use
            seeds = [
                "secure" if is_secure(seed) or is_secure(t.random_state) else None for _, t in mechs
            ]
        else:
            # Children built, not spawned: spawn() counts on the shared seed
            # object, and a re-computed partition must draw the same streams.
            root = check_seed_sequence(seed)
            seeds = [
                np.random.SeedSequence(
                    root.entropy, spawn_key=(*root.spawn_key, i), pool_size=root.pool_size
                )
                for i in range(len(mechs))
            ]
        if priv.__dict__.get("_fitted_strategy", "split") != "split":
            # The sampled indices: one more stream of the partition's seed.
            if is_fresh(seed):
                priv._partition_sampling_seed = "secure" if is_secure(seed) else None
            else:
                root = check_seed_sequence(seed)
                priv._partition_sampling_seed = np.random.SeedSequence(
                    root.entropy, spawn_key=(*root.spawn_key, len(mechs)), pool_size=root.pool_size
                )
        fitted = list(priv.transformers_)
        for (i, mech), child in zip(mechs, seeds, strict=True):
            name, _, cols = fitted[i]
            part = copy.copy(mech)
            part.random_state = child
            if not is_fresh(child):
                part._transform_calls = [0]  # the partition's own count, from 0
            fitted[i] = (name, part, cols)
        priv.transformers_ = fitted
        out = priv.transform(frame, user_secrets=user_secrets)
        if isinstance(out, pd.DataFrame):
            out.attrs = {}
        return out

    def _partition_seed(self):
        """The root of the partitions' seeds (None/"secure": fresh per partition)."""
        rs = self.random_state
        if rs is None:
            secure = [
                isinstance(m, _MECHANISMS) and is_secure(m.random_state)
                for m in self.mechanisms_.values()
            ]
            return "secure" if secure and all(secure) else None
        return rs

    def _dask_meta(self, ddf):
        from ..parallel._partitions import _dask_meta

        pieces = []
        sampled = self.__dict__.get("_fitted_strategy") == "sample"
        for name, trans, _ in self.transformers_:
            if isinstance(trans, _MECHANISMS) and sampled:
                kind = _strategies.missing_kind(trans.channel_)
                cols = trans.get_feature_names_out()
                pieces.append(pd.DataFrame({c: pd.Series(dtype=kind) for c in cols}))
            elif isinstance(trans, _MECHANISMS):
                pieces.append(_dask_meta(trans))
            elif name == "remainder" and trans == "passthrough":
                cols = self._transformer_to_input_indices["remainder"]
                pieces.append(ddf._meta.iloc[:, cols])
        if sampled:
            dtype = pd.CategoricalDtype(list(self.mechanisms_))
            pieces.append(pd.DataFrame({self.sampled_column: pd.Series(dtype=dtype)}))
        meta = pd.concat(pieces, axis=1) if pieces else pd.DataFrame()
        meta.columns = self.get_feature_names_out()
        return meta

    def _check_dask_columns(self, ddf):
        names = getattr(self, "feature_names_in_", None)
        if names is None:
            raise ValueError(
                "This DataFramePrivatizer was fitted on an array: fit it on a "
                "DataFrame (or the Dask DataFrame) to privatize a Dask DataFrame."
            )
        used = sorted(
            {
                names[j]
                for name, cols in self._transformer_to_input_indices.items()
                if name in self.mechanisms_
                or (name == "remainder" and self.remainder == "passthrough")
                for j in cols
            },
            key=list(names).index,
        )
        absent = [c for c in used if c not in ddf.columns]
        if absent:
            raise ValueError(
                f"The Dask DataFrame lacks the columns {absent}, which the "
                f"privatizer reads; its columns: {list(ddf.columns)[:20]}."
            )
        return list(names) if all(c in ddf.columns for c in names) else used

    # ---------------------------------------------------------- collector side
    @property
    def mechanisms_(self):
        """Name -> fitted mechanism (``"remainder"`` when it is a mechanism)."""
        check_is_fitted(self, "transformers_")
        return {name: t for name, t, _ in self.transformers_ if isinstance(t, _MECHANISMS)}

    @property
    def channels_(self):
        """Name -> the public spec (channel) of each column's reports.

        The mechanism's channel under ``strategy="split"``; under the sampling
        strategies, the channel of the column's reports
        (:class:`~sklearn_uldp.mechanisms.SampledChannel`,
        :class:`~sklearn_uldp.mechanisms.SampledFakeChannel`), which every
        estimator takes.
        """
        mechanisms = self.mechanisms_
        channels = self.__dict__.get("_strategy_channels")
        if channels is not None and self.__dict__.get("_fitted_strategy") != "split":
            return dict(channels)
        return {name: m.channel_ for name, m in mechanisms.items()}

    def _check_name(self, name):
        mechanisms = self.mechanisms_
        if name not in mechanisms:
            raise KeyError(
                f"{name!r} is not the name of a mechanism; the mechanisms are {list(mechanisms)}."
            )

    def report_columns(self, name):
        """Names of the report columns produced by mechanism ``name``.

        Parameters
        ----------
        name : str
            A mechanism's name (with the dict form: its column).

        Returns
        -------
        names : list of str
        """
        self._check_name(name)
        return list(self.get_feature_names_out()[self.output_indices_[name]])

    def column_reports(self, reports, name):
        """The reports of one mechanism, ready for a distribution estimator.

        Parameters
        ----------
        reports : DataFrame or ndarray
            Output of :meth:`transform` (or its columns read back; a
            DataFrame may hold only some mechanisms' columns).
        name : str
            A mechanism's name (with the dict form: its column).

        Returns
        -------
        column_reports : DataFrame
            The mechanism's report columns, carrying its channel (so
            ``EmpiricalEstimator().fit(column_reports)`` needs nothing else).
            Under ``strategy="sample"``, the rows of the users who sampled
            this column (the others have no report of it), with their
            index.

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
        names = self.report_columns(name)
        if isinstance(reports, pd.DataFrame):
            absent = [n for n in names if n not in reports.columns]
            if absent:
                raise KeyError(
                    f"The reports lack the columns {absent} of {name!r}; pass the "
                    "output of transform (or at least these columns)."
                )
            sampled = self._sampled_rows(reports, name)
            if sampled is not None:
                part = _strategies.sampled_block(reports, names, sampled)
            else:
                part = reports[names].copy()
        else:
            arr = np.asarray(reports)
            width = len(self.get_feature_names_out())
            if arr.ndim != 2 or arr.shape[1] != width:
                raise ValueError(
                    f"Array reports must have the {width} columns of transform's "
                    f"output, got shape {arr.shape}; pass a DataFrame to select "
                    "columns by name."
                )
            part = pd.DataFrame(arr[:, self.output_indices_[name]], columns=names)
            if self._fitted_strategy_name() == "sample":
                part = part.loc[arr[:, -1] == name]
                part = part.infer_objects()
        channel = self.channels_[name]
        if (
            channel.bit_vector_reports
            and not getattr(channel, "missing_reports", False)
            and not is_packed_frame(part)  # packed: one binary column of bytes
        ):
            part = part.astype(np.uint8)
        part.attrs = {}
        attach_channel(part, channel)
        return part

    def _sampled_rows(self, reports, name):
        """Under "sample": the rows whose user sampled ``name`` (None otherwise)."""
        if self._fitted_strategy_name() != "sample" or self.sampled_column not in reports:
            return None
        return (reports[self.sampled_column] == name).to_numpy()

    def estimate(
        self, reports: Any, estimator: Any = None, *, columns: Sequence[str] | None = None
    ) -> dict[str, pd.Series]:
        """Estimate the distribution of every privatized column.

        Parameters
        ----------
        reports : DataFrame or ndarray
            Output of :meth:`transform`, or some of its columns.
        estimator : DistributionEstimator, default=None
            Template estimator (cloned per mechanism); defaults to
            ``EmpiricalEstimator(projection="simplex")``.
        columns : list of str, default=None
            The mechanisms to estimate. ``None``: every mechanism whose report
            columns are all in ``reports``.

        Returns
        -------
        distributions : dict of {str: Series}
            Estimated distribution of each mechanism's column, indexed by
            category. A numeric column gives its mean (``mean``,
            ``standard_error``, the 95 % interval ``ci_low``/``ci_high`` and
            ``n_reports``, by :class:`~sklearn_uldp.numeric.MeanEstimator`)
            for the mean mechanisms, or its distribution indexed by bin
            midpoints for :class:`~sklearn_uldp.numeric.SquareWave` (by
            :class:`~sklearn_uldp.numeric.SquareWaveEstimator`); pass one of
            these as ``estimator`` to set its parameters.
        """
        from ..estimators import EmpiricalEstimator

        mechanisms = self.mechanisms_
        if columns is None:
            if isinstance(reports, pd.DataFrame):
                columns = [
                    n for n in mechanisms if set(self.report_columns(n)) <= set(reports.columns)
                ]
                if not columns:
                    raise KeyError(
                        "The reports hold no mechanism's report columns (they have "
                        f"{list(reports.columns)[:10]}); expected e.g. "
                        f"{ {n: self.report_columns(n) for n in list(mechanisms)[:5]} }."
                    )
            else:
                columns = list(mechanisms)
        fallback = EmpiricalEstimator(projection="simplex")
        result = {}
        for name in columns:
            channel = self.channels_[name]
            # The template, where it estimates this column's kind of reports.
            given = None
            if estimator is not None and channel.accepts_estimator(estimator):
                given = estimator
            if not channel.has_categories:
                result[name] = _numeric_estimate(
                    self.column_reports(reports, name), channel, given, name
                )
                continue
            est = clone(given if given is not None else fallback).fit(
                self.column_reports(reports, name)
            )
            result[name] = pd.Series(
                est.distribution_,
                index=pd.Index(est.categories_, name=name),
                name="estimate",
            )
        return result

    def specs(self) -> dict[str, dict[str, Any]]:
        """The public specs of all mechanisms, ``{name: channel.to_dict()}``.

        Returns
        -------
        specs : dict
        """
        return {c: ch.to_dict() for c, ch in self.channels_.items()}

    def save_spec(self, path: str | PathLike[str]) -> str | PathLike[str]:
        """Write the public spec of every mechanism to a JSON file.

        The file (also written by ``sklearn-uldp privatize``) holds, per
        mechanism, the channel spec and the report column names, plus the
        budget one person spends; read it back with :func:`load_spec`.

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
        document = {
            "format": SPEC_FORMAT,
            "version": 1,
            "epsilon_per_person": self.epsilon_spent_,
            "columns": self.specs(),
            "report_columns": {c: self.report_columns(c) for c in self.mechanisms_},
        }
        if self._fitted_strategy_name() != "split":
            document["strategy"] = self._strategy_document()
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(document, fh, indent=2)
        return path

    @property
    def epsilon_spent_(self) -> float:
        """Budget one person spends: the largest log-ratio between any two rows.

        ``"split"``: the sum of the mechanisms' budgets (sequential
        composition). ``"sample"``: the largest mechanism budget (one report,
        the index drawn independently of the data). ``"sample+fake"``: the
        exact budget of the whole row (at most the largest inner budget
        epsilon'; Arcolezi et al.'s epsilon is per attribute, see
        :attr:`attribute_epsilons_`).
        """
        mechanisms = self.mechanisms_
        if self._fitted_strategy_name() == "split":
            return float(sum(m.epsilon_spent_ for m in mechanisms.values()))
        return float(self._strategy_guarantees["row"])

    def exposure(self, n_rounds: int) -> float:
        """Budget a row spends over ``n_rounds`` rounds of the same values.

        Each column loses ``mechanism.exposure(n_rounds)`` when it memoizes
        (at most its ``epsilon_perm``; see the "Collecting over time" page)
        and ``n_rounds`` times its budget otherwise (fresh reports compose).
        ``"split"``: the sum over the columns. ``"sample"``: the largest
        column's, for collections with ``user_secrets`` (each user's sampled
        column is derived from the secret: the same in every round).
        ``"sample+fake"``: ``n_rounds`` times :attr:`epsilon_spent_` (it takes
        no memoized mechanism).

        Parameters
        ----------
        n_rounds : int
            Rounds of collection (>= 1).

        Returns
        -------
        epsilon : float

        Examples
        --------
        >>> import pandas as pd
        >>> from sklearn_uldp import RandomizedResponse
        >>> from sklearn_uldp.compose import DataFramePrivatizer
        >>> from sklearn_uldp.mechanisms import LongitudinalGRR
        >>> priv = DataFramePrivatizer({
        ...     "app": LongitudinalGRR(2.0, 1.0, categories=["a", "b"]),
        ...     "sex": RandomizedResponse(0.5, categories=["f", "m"]),
        ... }).fit(pd.DataFrame({"app": ["a", "b"], "sex": ["f", "m"]}))
        >>> priv.exposure(1), round(priv.exposure(30), 3)  # 2.0 + 30 * 0.5 at most
        (1.5, 17.0)
        """
        if isinstance(n_rounds, bool) or not isinstance(n_rounds, Integral) or n_rounds < 1:
            raise ValueError(f"n_rounds must be a positive integer, got {n_rounds!r}.")
        strategy = self._fitted_strategy_name()
        if strategy == "sample+fake":
            return float(n_rounds * self.epsilon_spent_)
        losses = [
            float(m.exposure(int(n_rounds))) if _memoizes(m) else n_rounds * m.epsilon_spent_
            for m in self.mechanisms_.values()
        ]
        return float(sum(losses) if strategy == "split" else max(losses))

    @property
    def epsilon_perm_spent_(self) -> float:
        """Budget a row spends over any number of rounds of the same values.

        The limit of :meth:`exposure`: finite when every column that counts
        memoizes (its ``epsilon_perm``), infinite otherwise (a column privatized
        afresh in every round spends its budget again each time).
        """
        strategy = self._fitted_strategy_name()
        if strategy == "sample+fake":
            return float("inf")
        losses = [
            float(m.epsilon_perm_spent_) if _memoizes(m) else float("inf")
            for m in self.mechanisms_.values()
        ]
        return float(sum(losses) if strategy == "split" else max(losses))

    @property
    def attribute_epsilons_(self) -> dict[str, float]:
        """Name -> budget of the attribute: the largest log-ratio between rows
        that differ in that attribute only.

        The mechanism's budget under ``"split"`` and ``"sample"``; under
        ``"sample+fake"`` the exact budget of the amplified report among the
        fakes (:func:`~sklearn_uldp.mechanisms.fake_data_guarantees`), equal
        to the mechanism's ``epsilon`` with ``amplification="exact"``.
        """
        mechanisms = self.mechanisms_
        if self._fitted_strategy_name() == "split":
            return {name: float(m.epsilon_spent_) for name, m in mechanisms.items()}
        values = self._strategy_guarantees["attribute"]
        return {name: float(v) for name, v in zip(mechanisms, values, strict=True)}

    def _fitted_strategy_name(self):
        check_is_fitted(self, "transformers_")
        return self.__dict__.get("_fitted_strategy", "split")

    def _strategy_document(self):
        """The strategy's entry of a spec file."""
        names = list(self.mechanisms_)
        entry = {
            "name": self._fitted_strategy_name(),
            "n_attributes": len(names),
            "attribute_epsilons": self.attribute_epsilons_,
        }
        if entry["name"] == "sample":
            entry["sampled_column"] = self.sampled_column
        else:
            entry["amplification"] = self.amplification
            entry["inner_epsilons"] = {
                n: float(m.channel_.epsilon) for n, m in self.mechanisms_.items()
            }
        return entry

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = True
        tags.input_tags.categorical = True
        tags.input_tags.string = True
        # Missing values are an error unless reported as a category.
        tags.input_tags.allow_nan = self.missing == "category"
        tags.input_tags.sparse = False
        return tags


def _fitted_domains(fitting, X, positions):
    """The mechanisms with their domains (or numeric ranges) fixed from, and
    checked on, whole columns."""
    out = []
    for name, mech, columns in fitting:
        if isinstance(mech, _MECHANISMS):
            cols = positions[name]
            column = X.iloc[:, cols] if isinstance(X, pd.DataFrame) else np.asarray(X)[:, cols]
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message=_AUTO_DOMAIN, category=PrivacyLeakWarning)
                mech = mech._with_domain_of(column)
        out.append((name, mech, columns))
    return out


def load_spec(path: str | PathLike[str]) -> dict[str | None, Channel]:
    """Read a spec file written by :meth:`DataFramePrivatizer.save_spec`.

    Unknown top-level keys (such as the ``"reports"`` entry the command line
    adds) are ignored.

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
        except (json.JSONDecodeError, RecursionError) as exc:
            raise ValueError(f"Spec file {path!r} is not valid JSON: {exc}") from None
    if isinstance(document, dict) and "mechanism" in document:
        return {None: Channel.from_dict(document)}
    if not isinstance(document, dict) or not isinstance(document.get("columns"), dict):
        raise ValueError(
            f"Spec file {path!r} is neither a channel spec (with 'mechanism') nor a "
            "multi-column spec (with 'columns')."
        )
    return {c: Channel.from_dict(s) for c, s in document["columns"].items()}
