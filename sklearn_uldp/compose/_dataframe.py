"""Privatize several columns of a table, one mechanism each (a ColumnTransformer)."""

from __future__ import annotations

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
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils._set_output import _safe_set_output
from sklearn.utils.validation import check_is_fitted

from ..estimators import _compact
from ..estimators._table import SPEC_FORMAT, TableSpec, estimate_columns, load_spec
from ..exceptions import PrivacyLeakWarning
from ..mechanisms._base import RANDOM_STATE_CONSTRAINT, BaseMechanism
from ..parallel import _privatizer as _dask
from ..parallel._partitions import SAMPLED_COLUMN_ATTR
from ..utils._random import check_secure_available, check_seed_sequence, is_fresh, is_secure
from ..utils._typing import RandomStateLike, TransformOutput
from . import _marginal_strategy as _marginals
from . import _memoized as _memo
from . import _strategies
from . import _table_input as _input

__all__ = ["DataFramePrivatizer", "load_spec", "CHANNELS_ATTR", "SPEC_FORMAT"]

_PrivatizerT = TypeVar("_PrivatizerT", bound="DataFramePrivatizer")

#: Under a sampling strategy, a call's sampled indices come from the
#: privatizer's own stream unless a Dask partition gives its seed.
_OWN_STREAM = object()

#: Key of ``DataFrame.attrs`` holding ``{name: spec dict}`` on privatized
#: frames (plain JSON, so ``to_parquet`` keeps it in the file's metadata).
CHANNELS_ATTR = "sklearn_uldp_specs"

_AUTO_DOMAIN = _input.AUTO_DOMAIN
_MECHANISMS = _input.MECHANISMS

# ColumnTransformer reads ``force_int_remainder_cols`` in scikit-learn 1.6-1.8
# (a parameter there, deprecated in 1.7 with the value "deprecated" meaning
# "not set", removed in 1.9); this class does not expose it.
_SK_VERSION = tuple(int(p) for p in sklearn.__version__.split(".")[:2])
_FORCE_INT_REMAINDER_COLS = False if _SK_VERSION < (1, 7) else "deprecated"


_numeric_names = _input.numeric_names


def _as_transformer_list(mechanisms):
    """The ``(name, mechanism, columns)`` list of either accepted form."""
    if isinstance(mechanisms, dict):
        # The dict form {column: mechanism}: named after its column, which it
        # selects as a one-column frame.
        return [(str(c), m, [c]) for c, m in mechanisms.items()]
    return mechanisms


class DataFramePrivatizer(  # type: ignore[call-arg]
    _marginals.MarginalStrategyMixin, ColumnTransformer, auto_wrap_output_keys=None
):
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
    strategy : {"split", "sample", "sample+fake", "marginals"}, default="split"
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
        ``"marginals"``: one set of ``marginal_size`` columns drawn at random
        per person, its joint value reported through the oracle of least
        variance for that product domain by a
        :class:`~sklearn_uldp.marginals.MarginalPrivatizer`
        (``marginal_privatizer_``); the mechanisms declare the domains,
        sensitive values and the one budget (every mechanism the same
        ``epsilon``), and the reports are its two columns (``marginal``,
        ``report``): :meth:`marginal_estimator` and :meth:`estimate` read
        them (see the "Marginals" page).
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
    report_format : {"wide", "compact"}, default="wide"
        The layout of the reports under ``strategy="sample"``. ``"wide"``:
        every column's report columns, missing except the sampled column's
        (their number, the table's size and the time to write it grow with
        the number of columns d). ``"compact"``: the sampled column
        (``sampled_column``) and one report block ``report_0 ..
        report_{w-1}`` (w: the widest column's report), each row's report in
        its column's channel's codes, the cells past its width zero; its
        size does not depend on d (at d = 10 columns of 10 categories with
        OUE, 11 one-byte columns instead of 100 nullable ones). The same
        reports as ``"wide"`` for the same ``random_state``;
        :meth:`column_reports`, :meth:`estimate`, the spec
        (:class:`~sklearn_uldp.estimators.TableSpec`) and the command line
        read either (see the "Many attributes" page). Other strategies take
        ``"wide"`` only.
    marginal_size : int or "auto", default=2
        Under ``"marginals"``: the number of columns of each marginal (every
        set of that many columns is measured), or ``"auto"`` to choose it
        from the number of rows, the budget and the domains
        (:func:`~sklearn_uldp.marginals.choose_marginals`). Ignored otherwise.
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
    marginal_privatizer_ : MarginalPrivatizer
        Under ``strategy="marginals"`` only: the release of the columns.

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

    The same reports in the compact table (one report block, as wide as the
    widest column's report, whatever the number of columns; each report in
    its column's codes):

    >>> compact = smp.set_params(report_format="compact").fit(df)
    >>> reports = compact.transform(df)
    >>> list(reports.columns), reports["report_0"].dtype
    (['report_0', 'sampled_attribute'], dtype('uint8'))
    >>> compact.column_reports(reports, "region").columns.tolist()
    ['region']
    """

    _parameter_constraints = {
        "mechanisms": [list, dict],
        "strategy": [StrOptions({*_strategies.STRATEGIES, _marginals.MARGINALS})],
        "fake": [StrOptions({"auto", "random", "zero"}), dict],
        "amplification": [StrOptions({"exact", "paper"})],
        "sampled_column": [str],
        "report_format": [StrOptions({*_compact.REPORT_FORMATS})],
        "marginal_size": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
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

    # State of a fit: the seeded clones while ``fit`` runs (None otherwise),
    # and, set by every ``fit``, the strategy fitted and its channels,
    # guarantees and seeded call counter (None under "split"). The class
    # values stand for "not fitted yet".
    _fitting_transformers: list[Any] | None = None
    _fitted_strategy: str = "split"
    _fitted_report_format: str = "wide"
    _strategy_channels: dict[str, Any] | None = None
    _strategy_guarantees: dict[str, Any] | None = None
    _sampling_calls: list[int] | None = None

    def __init__(
        self,
        mechanisms: Sequence[tuple[str, Any, Any]] | dict[Any, Any],
        *,
        strategy: Literal["split", "sample", "sample+fake", "marginals"] = "split",
        fake: Literal["auto", "random", "zero"] | dict[str, str] = "auto",
        amplification: Literal["exact", "paper"] = "exact",
        sampled_column: str = "sampled_attribute",
        report_format: Literal["wide", "compact"] = "wide",
        marginal_size: int | Literal["auto"] = 2,
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
        self.report_format = report_format
        self.marginal_size = marginal_size
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
        fitting = self._fitting_transformers
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
            **getattr(self, "_sklearn_output_config", {}),
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
        # set by set_output (scikit-learn's attribute, read as it does)
        own = getattr(self, "_sklearn_output_config", {}).get("transform")
        if own is not None:
            return own
        glob = get_config().get("transform_output", "default")
        return None if glob == "default" else glob

    # ------------------------------------------------------------ validation
    # The table-level steps (``_table_input``); parallel's Dask code calls
    # them through the privatizer.
    def _check_params(self):
        _input.check_params(self)

    @staticmethod
    def _check_input(X):
        return _input.check_input(X)

    def _mechanism_columns(self, X, transformers):
        return _input.mechanism_columns(X, transformers)

    def _fitted_positions(self, X):
        return _input.fitted_positions(self, X)

    def _prepared(self, X, positions, numeric=()):
        return _input.prepared(
            X, positions, numeric, policy=self.missing, missing_label=self.missing_label
        )

    def _domain(self, mech, X, cols):
        return _input.declared_domain(
            mech, X, cols, policy=self.missing, missing_label=self.missing_label
        )

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
        if _input.is_dask_collection(X):
            self._refuse_dask_marginals()
            return _dask.fit_from_schema(self, _input.dask_frame(X))
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
        if _input.is_dask_collection(X):
            self._refuse_dask_marginals()
            X = _input.dask_frame(X)
            return _dask.fit_from_schema(self, X).transform(X, user_secrets=user_secrets)
        if user_secrets is not None:
            self._fit_transform(X, keep=False)
            return self.transform(X, user_secrets=user_secrets)
        self._check_memo_secrets()
        return self._fit_transform(X, keep=True)

    def _fit_transform(self, X, keep):
        self._check_params()
        _strategies.check_report_format(self)
        X = self._check_input(X)
        transformers = list(self.transformers)
        positions = self._mechanism_columns(X, transformers)
        marginals = self.strategy == _marginals.MARGINALS
        if marginals:
            _marginals.check_marginals(self, transformers)
        # Under "marginals", one more independent stream: the marginal
        # privatizer's (the mechanisms only declare the domains). A
        # remainder mechanism takes the last one, so the listed columns'
        # streams do not depend on it.
        remainder_mechanism = isinstance(self.remainder, _MECHANISMS)
        seed_list = self._seeds(len(positions) + marginals + remainder_mechanism)
        remainder_seed = seed_list.pop() if remainder_mechanism else None
        seeds = iter(seed_list)
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
            fitting = _input.fitted_domains(fitting, X, positions)
            fit_on = X.iloc[:1] if isinstance(X, pd.DataFrame) else X[:1]
        memo = {}
        if not keep:
            # ColumnTransformer fits a mechanism through its fit_transform,
            # and a memoized one cannot privatize without secrets: for this
            # set-up fit only (its reports are discarded), it simulates users
            # from a throwaway seed, and gets its own randomness back below.
            for name, mech, _ in fitting:
                if _memo.memoizes(mech) and is_fresh(mech.random_state):
                    memo[name] = mech.random_state
                    mech.set_params(random_state=np.random.SeedSequence(0))
        self._fitting_transformers = fitting
        remainder = self.remainder
        if remainder_seed is not None and "random_state" in remainder.get_params():
            # The remainder mechanism draws from the privatizer's random_state
            # too (a seed: its own child stream; "secure": the secure
            # generator), as every listed mechanism does: ColumnTransformer
            # fits a clone of this seeded copy; the parameter is restored.
            self.remainder = clone(remainder).set_params(random_state=remainder_seed)
        try:
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message=_AUTO_DOMAIN, category=PrivacyLeakWarning)
                out = self._run(ColumnTransformer.fit_transform, fit_on)
        finally:
            del self._fitting_transformers  # the class value (None) again
            self.remainder = remainder
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
        self._strategy_channels = self._strategy_guarantees = self._sampling_calls = None
        self._fitted_strategy = self.strategy
        self._fitted_report_format = self.report_format
        self.__dict__.pop("marginal_privatizer_", None)
        if marginals:
            frame = _marginals.marginal_frame(self, X, positions)
            self.marginal_privatizer_ = _marginals.fit_marginals(self, frame, next(seeds))
            return self._transform_marginals(X) if keep else None
        if self.strategy != "split":
            self._fit_strategy()
            # The fit has just checked every value against its domain.
            return self._finish_sampled(X, checked=True) if keep else None
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
        if self.report_format == "compact":
            widths, _ = _compact.compact_layout(channels)
            rest = self._remainder_names()
            block = _compact.block_names(max(widths.values()))
            if self.sampled_column in block:
                raise ValueError(
                    f"sampled_column={self.sampled_column!r} is also the name of a "
                    f"column of the compact report block ({_compact.BLOCK_PREFIX}0, "
                    f"{_compact.BLOCK_PREFIX}1, ...): pass another name for the column "
                    "of sampled attributes."
                )
            taken = sorted(set(block) & set(rest))
            if taken or self.sampled_column in rest:
                raise ValueError(
                    f"The passthrough columns {taken or [self.sampled_column]} have the "
                    "names of the compact table's own columns (the report block "
                    f"{_compact.BLOCK_PREFIX}0, {_compact.BLOCK_PREFIX}1, ... and "
                    "sampled_column): rename them, or use report_format='wide'."
                )
        self._strategy_channels = channels
        self._strategy_guarantees = guarantees
        for name, mech in self.mechanisms_.items():
            # A column's reports are not its mechanism's alone: estimating
            # from them with the mechanism is refused (parallel.spec_of), and
            # the message names channels_[name].
            setattr(mech, SAMPLED_COLUMN_ATTR, (name, self.strategy))
        if not is_fresh(self.random_state):
            self._sampling_calls = [0]

    def _check_fitted_strategy(self):
        fitted = self._fitted_strategy
        if fitted != self.strategy:
            raise ValueError(
                f"This DataFramePrivatizer was fitted with strategy={fitted!r} and "
                f"strategy is now {self.strategy!r}: fit it again."
            )
        if self._fitted_report_format != self.report_format:
            raise ValueError(
                "This DataFramePrivatizer was fitted with "
                f"report_format={self._fitted_report_format!r} and report_format is "
                f"now {self.report_format!r}: fit it again."
            )
        return fitted

    def _compact(self):
        """Whether the fitted privatizer writes compact SMP reports."""
        return self._fitted_strategy == "sample" and self._fitted_report_format == "compact"

    def _block_names(self):
        """The compact table's report block columns (``report_0``, ...)."""
        widths, _ = _compact.compact_layout(self._strategy_channels)
        return _compact.block_names(max(widths.values()))

    def _finish_sampled(self, X, keys=None, partition_seed=_OWN_STREAM, *, checked=False):
        """Privatize with the sampling strategy and assemble the output
        (the sampled indices from ``partition_seed`` for a Dask partition;
        ``checked``: the categorical columns were checked by the fit)."""
        seed = None if partition_seed is _OWN_STREAM else (partition_seed,)
        blocks, sampled = _strategies.transform_sampled(self, X, keys, seed, checked=checked)
        X = self._check_input(X)
        pandas = self._output_config() == "pandas" or (
            self._output_config() is None and isinstance(X, pd.DataFrame)
        )
        names = self.get_feature_names_out()
        rest = self._passthrough(X)
        labels = np.asarray(list(self.mechanisms_), dtype=object)
        if self._compact():
            return self._compact_output(X, blocks, sampled, rest, names, labels, pandas)
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

    def _compact_output(self, X, blocks, sampled, rest, names, labels, pandas):
        """The compact table: the report block, the passthrough columns, then
        the sampled column (the names under pandas output, the indices in an
        array)."""
        n = len(sampled)
        block = _strategies.compact_block(self._strategy_channels, blocks, n)
        codes = _strategies.narrow_attribute_codes(sampled, len(labels))
        if not pandas:
            if rest is None:
                # the attribute indices in the block's dtype where they fit
                fits = block.dtype.kind == "f" or len(labels) - 1 <= np.iinfo(block.dtype).max
                dtype = block.dtype if fits else np.min_scalar_type(len(labels) - 1)
                dtype = np.promote_types(block.dtype, dtype)
                return np.column_stack([block.astype(dtype, copy=False), codes.astype(dtype)])
            return np.hstack(
                [
                    block.astype(object),
                    np.asarray(rest, dtype=object),
                    codes[:, None].astype(object),
                ]
            )
        index = X.index if isinstance(X, pd.DataFrame) else None
        width = block.shape[1]
        out = pd.DataFrame(block, columns=list(names[:width]), index=index, copy=False)
        if rest is not None:
            for j, c in enumerate(names[width:-1]):
                out[c] = rest.iloc[:, j].to_numpy() if hasattr(rest, "iloc") else rest[:, j]
        out[self.sampled_column] = pd.Categorical.from_codes(codes, categories=labels)
        out.attrs = {CHANNELS_ATTR: self.specs()}
        return out

    def _report_array(self, reports):
        """Array reports, checked to have the columns of ``transform``'s output."""
        arr = np.asarray(reports)
        width = len(self.get_feature_names_out())
        if arr.ndim != 2 or arr.shape[1] != width:
            raise ValueError(
                f"Array reports must have the {width} columns of transform's "
                f"output, got shape {arr.shape}; pass a DataFrame to select "
                "columns by name."
            )
        return arr

    def _compact_frame(self, reports):
        """An array of compact reports as the frame ``transform`` would give."""
        arr = self._report_array(reports)
        return pd.DataFrame(arr, columns=self.get_feature_names_out()).infer_objects()

    def _remainder_names(self):
        """The names of the passthrough columns in the output."""
        if not (isinstance(self.remainder, str) and self.remainder == "passthrough"):
            # A remainder mechanism's reports are one of the sampled
            # columns' (in the block), not passthrough columns.
            return []
        indices = getattr(self, "output_indices_", {}).get("remainder")
        if indices is None or indices.stop == indices.start:
            return []
        return list(ColumnTransformer.get_feature_names_out(self)[indices])

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
            :class:`~sklearn_uldp.longitudinal.LongitudinalGRR`. Each memoized
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
        if _input.is_dask_collection(X):
            from ..parallel import privatize_partitions

            self._refuse_dask_marginals()
            if user_secrets is None:
                self._check_memo_secrets()
            return privatize_partitions(_input.dask_frame(X), self, user_secrets=user_secrets)
        return self._transform_table(X, user_secrets)

    def _transform_table(self, X, user_secrets=None, partition_sampling_seed=_OWN_STREAM):
        """Privatize an in-memory table (a Dask partition gives the seed of
        its sampled indices: see ``parallel._privatizer``)."""
        if user_secrets is None:
            self._check_memo_secrets()
        keys = None if user_secrets is None else _memo.memo_keys(self, user_secrets, len(X))
        fitted = self._check_fitted_strategy()
        if fitted == _marginals.MARGINALS:
            if keys is not None:
                raise ValueError(
                    "strategy='marginals' sends one fresh report per person and takes "
                    "no user_secrets."
                )
            return self._transform_marginals(X)
        if fitted != "split":
            return self._finish_sampled(X, keys, partition_sampling_seed)
        X = self._check_input(X)
        X = self._prepared(X, self._fitted_positions(X), _numeric_names(self.transformers_))
        if keys is not None:
            return self._finish(_memo.transform_memoized(self, X, keys), X)
        return self._finish(self._run(ColumnTransformer.transform, X), X)

    # ------------------------------------------------- memoized mechanisms
    def _check_memo_secrets(self):
        _memo.check_memo_secrets(self)

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
        if self._fitted_strategy == _marginals.MARGINALS:
            check_is_fitted(self, "marginal_privatizer_")
            return self.marginal_privatizer_.get_feature_names_out()
        names = super().get_feature_names_out(input_features)
        if self._fitted_strategy == "sample" and self._fitted_report_format == "compact":
            names = np.asarray(self._block_names() + self._remainder_names(), dtype=object)
        if self._fitted_strategy == "sample":
            names = np.append(names, np.asarray([self.sampled_column], dtype=object))
        return names

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
        if self._fitted_strategy == _marginals.MARGINALS:
            # One composite channel for every column's reports.
            return {_marginals.MARGINALS: self.marginal_privatizer_.channel_}
        if self._fitted_strategy != "split":
            return dict(self._strategy_channels)
        return {name: m.channel_ for name, m in mechanisms.items()}

    def _table_spec(self):
        """The collector's view of the fitted table (:class:`TableSpec`)."""
        names = list(self.mechanisms_)
        if self._fitted_strategy == _marginals.MARGINALS:
            columns = {c: self.report_columns(c) for c in names}
        else:  # the report names once, not once per column
            # (the names of a column's reports, which column_reports gives
            # under either report format)
            out = ColumnTransformer.get_feature_names_out(self)
            columns = {c: list(out[self.output_indices_[c]]) for c in names}
        return TableSpec(
            self.channels_,
            columns,
            strategy=None if self._fitted_strategy == "split" else self._strategy_document(),
            epsilon_per_person=self.epsilon_spent_,
        )

    def _check_name(self, name):
        mechanisms = self.mechanisms_
        if name not in mechanisms:
            raise KeyError(
                f"{name!r} is not the name of a mechanism; the mechanisms are {list(mechanisms)}."
            )

    def report_columns(self, name):
        """Names of the report columns produced by mechanism ``name``.

        Under ``report_format="compact"``: the block's cells its reports
        take, then the sampled column (a row holds the column's report only
        where that column names it); :meth:`column_reports` gives the
        reports under the wide table's names.

        Parameters
        ----------
        name : str
            A mechanism's name (with the dict form: its column).

        Returns
        -------
        names : list of str
        """
        self._check_name(name)
        if self._fitted_strategy == _marginals.MARGINALS:
            return list(self.get_feature_names_out())  # every column's, together
        if self._compact():  # the block's first cells (and who reported)
            widths, _ = _compact.compact_layout(self._strategy_channels)
            return self._block_names()[: widths[name]] + [self.sampled_column]
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
        self._check_name(name)
        if self._fitted_strategy == _marginals.MARGINALS:
            raise ValueError(
                "Under strategy='marginals' a person reports one marginal of the "
                "columns, not each column: estimate with marginal_estimator(reports) "
                "or estimate(reports)."
            )
        table = self._table_spec()
        if isinstance(reports, pd.DataFrame):
            return table.column_reports(reports, name)
        names = table.report_columns(name)
        arr = self._report_array(reports)
        if self._compact():
            return table.column_reports(self._compact_frame(arr), name)
        part = pd.DataFrame(arr[:, self.output_indices_[name]], columns=names)
        if self._fitted_strategy == "sample":
            part = part.loc[arr[:, -1] == name]
            part = part.infer_objects()
        return table.with_channel(part, name)

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
            ``EMEstimator()``, the README's advice (the default was
            ``EmpiricalEstimator(projection="simplex")`` until this release:
            pass it to get the former estimates).
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
        if self._fitted_strategy_name() == _marginals.MARGINALS:
            est = self.marginal_estimator(reports, estimator)
            return _marginals.one_way(est, columns)
        if isinstance(reports, pd.DataFrame):
            return self._table_spec().estimate(reports, estimator, columns=columns)
        if self._compact():  # one frame of the array, its rows grouped once
            frame = self._compact_frame(reports)
            return self._table_spec().estimate(frame, estimator, columns=columns)
        if columns is None:
            columns = list(self.mechanisms_)
        parts = {name: self.column_reports(reports, name) for name in columns}
        return estimate_columns(parts, self.channels_, estimator)

    def specs(self) -> dict[str, dict[str, Any]]:
        """The public specs of all mechanisms, ``{name: channel.to_dict()}``.

        Returns
        -------
        specs : dict
        """
        return {c: ch.to_dict() for c, ch in self.channels_.items()}  # "marginals": one

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
        if self._fitted_strategy_name() == _marginals.MARGINALS:
            document = _marginals.spec_document(self, SPEC_FORMAT)
        else:
            document = self._table_spec().to_dict()
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
        if self._fitted_strategy == _marginals.MARGINALS:
            return self.marginal_privatizer_.epsilon_spent_
        guarantees: dict[str, Any] = self._strategy_guarantees or {}  # set by fit
        return float(guarantees["row"])

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
        >>> from sklearn_uldp.longitudinal import LongitudinalGRR
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
        if strategy in ("sample+fake", _marginals.MARGINALS):
            return float(n_rounds * self.epsilon_spent_)
        losses = [
            float(m.exposure(int(n_rounds))) if _memo.memoizes(m) else n_rounds * m.epsilon_spent_
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
        if strategy in ("sample+fake", _marginals.MARGINALS):
            return float("inf")
        losses = [
            float(m.epsilon_perm_spent_) if _memo.memoizes(m) else float("inf")
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
        if self._fitted_strategy_name() in ("split", _marginals.MARGINALS):
            # Under "marginals" each mechanism's epsilon is the one budget.
            return {name: float(m.epsilon_spent_) for name, m in mechanisms.items()}
        guarantees: dict[str, Any] = self._strategy_guarantees or {}  # set by fit
        values = guarantees["attribute"]
        return {name: float(v) for name, v in zip(mechanisms, values, strict=True)}

    def _fitted_strategy_name(self):
        check_is_fitted(self, "transformers_")
        return self._fitted_strategy

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
            if self._fitted_report_format == "compact":
                entry["report_format"] = "compact"
                entry["report_block"] = self._block_names()
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
