"""The users' side of marginal release: one marginal per user, one report."""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from numbers import Integral, Real
from typing import Any, TypeVar

import numpy as np
import pandas as pd
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions

from ..exceptions import PrivacyLeakWarning
from ..mechanisms._base import PARAMETER_HINTS, RANDOM_STATE_CONSTRAINT
from ..mechanisms._core import PrivatizerBase
from ..utils._docstrings import COMMON, fill_doc
from ..utils._validation import (
    as_label_array,
    check_categories,
    check_epsilon,
    check_sensitive,
    encode_labels,
    is_missing,
    validate_params_with_hints,
)
from ._channel import MarginalChannel
from ._design import MAX_CELLS, choose_marginals, choose_oracle, marginal_sets
from ._one_report import _OneReportPrivatizerMixin

__all__ = ["MarginalPrivatizer", "ASSIGNMENT_KEY"]

_PrivT = TypeVar("_PrivT", bound="MarginalPrivatizer")

#: Name keying the seeded stream of the marginal assignment (it never reads
#: the data: no hash of the input enters it).
ASSIGNMENT_KEY = "(marginal assignment)"
#: Name keying the seeded stream of the oracles' noise.
NOISE_KEY = "(marginal reports)"

_HINTS = {
    **PARAMETER_HINTS,
    "marginal_size": (
        "Pass the number of columns of each marginal (an int >= 1, such as 2 for "
        "pairs) or 'auto' to choose it from the number of users, epsilon and the "
        "domains."
    ),
    "categories": (
        "Pass {column: list of values} (the public domain of every column to "
        "privatize), or 'auto' to learn them from X (which reveals which values occur)."
    ),
    "sensitive": (
        "Pass None (plain LDP) or {column: sensitive values} (values, a boolean "
        "mask over the column's domain, or a predicate); columns left out are "
        "sensitive in every value."
    ),
}


def _is_missing_value(value):
    return bool(is_missing(np.asarray([value], dtype=object))[0])


@fill_doc(COMMON)
class MarginalPrivatizer(_OneReportPrivatizerMixin, PrivatizerBase, auto_wrap_output_keys=None):  # type: ignore[call-arg]
    """Privatize rows for marginal release: each user reports one marginal.

    Each user (a row of d categorical columns) is assigned one of the L
    measured marginals (sets of columns) uniformly at random, independently
    of the row, and reports the joint value of that marginal's columns
    through the frequency oracle of least variance for its product domain
    (k-RR for few cells, subset selection, OUE or local hashing for many, as
    :func:`~sklearn_uldp.model_selection.choose_mechanism` ranks them). One
    report spends ``epsilon``: the marginal's index does not depend on the
    row, and the value goes through an epsilon-LDP oracle
    (``docs/marginals.md`` has the proof). The collector estimates every
    measured marginal, its subsets and any other set of columns with
    :class:`~sklearn_uldp.marginals.MarginalEstimator`.

    With ``sensitive``, the release is utility-optimized: a joint value is
    sensitive when any of its parts is; sensitive joint values keep
    epsilon-LDP and never appear in the clear, the others may (the
    utility-optimized oracles uRR, uOUE, uHR, uBD, ... over the product
    domain, chosen by expected loss).

    Parameters
    ----------
    epsilon : float, default=1.0
        The budget of one report, which is what a user's row spends (> 0).
    marginal_size : int or "auto", default=2
        The number of columns of each marginal; every set of that many
        columns is measured. ``"auto"`` chooses it from the number of users,
        ``epsilon`` and the domains so that the pairwise marginals are most
        accurate (:func:`~sklearn_uldp.marginals.choose_marginals`, after
        CALM). Not used when ``marginals`` is given.
    marginals : list of tuple of str, default=None
        The sets of columns to measure, e.g. ``[("age", "sex"), ("sex",
        "income")]``; sets of any sizes (a one-column set is a one-element
        tuple).
    mechanism : "auto", str or mechanism, default="auto"
        The oracle of each marginal: ``"auto"`` takes the one of least
        variance for its number of cells and sensitive cells; a name
        (``"RR"``, ``"OUE"``, ``"OLH"``, ``"SS"``, ``"HR"``, ``"uRR"``,
        ``"uOUE"``, ``"uBD"``, ... see :func:`choose_oracle`) uses it for
        every marginal; an unfitted mechanism is a template, cloned with
        each marginal's domain, sensitive set and this ``epsilon``.
    categories : dict of {str: array-like} or "auto", default="auto"
        Column -> its public domain; the dict's columns are those
        privatized (a DataFrame is read by name, an array by position, as
        ``x0``, ``x1``, ...). ``"auto"`` privatizes every column of ``X``
        and learns each domain from the data (a pandas ``category`` column
        gives its declared categories) with a
        :class:`~sklearn_uldp.exceptions.PrivacyLeakWarning` for the
        columns learned from their values.
    sensitive : dict of {str: array-like or callable}, default=None
        Column -> its sensitive values (a list of values, a boolean mask
        over its domain, or a predicate); columns left out are sensitive in
        every value. None: plain LDP (every value sensitive).
    %(random_state)s
    n_users : int, default=None
        The number of users, for ``marginal_size="auto"`` when fitting
        without data (``fit()`` with explicit categories); by default the
        number of rows of ``X``.

    Attributes
    ----------
    columns_ : list of str
        The privatized columns, in order.
    categories_ : dict of {str: ndarray}
        Each column's domain.
    sensitive_ : dict of {str: ndarray of bool} or None
        Each column's sensitive mask (None for plain LDP).
    marginals_ : list of tuple of str
        The measured marginals, in the order of the reports' ``marginal``
        index.
    mechanisms_ : list of BaseMechanism
        The fitted oracle of each marginal (over the codes of its cells).
    oracles_ : list of str
        Their names.
    design_ : DataFrame or None
        With ``marginal_size="auto"``, the sizes compared and their
        predicted pairwise total variation (the chosen size first).
    channel_ : MarginalChannel
        The public spec of the reports.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        When fitted on a DataFrame with string column names.

    See Also
    --------
    sklearn_uldp.marginals.MarginalEstimator : the collector's side.
    sklearn_uldp.compose.JointEncoder : one joint over a few columns, reported whole.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from sklearn_uldp.marginals import MarginalPrivatizer, MarginalEstimator
    >>> rng = np.random.default_rng(0)
    >>> a = rng.integers(0, 2, 20_000)
    >>> df = pd.DataFrame({"a": a, "b": (a + (rng.random(20_000) < 0.2)) % 2,
    ...                    "c": rng.integers(0, 3, 20_000)})
    >>> priv = MarginalPrivatizer(
    ...     epsilon=2.0, categories={"a": [0, 1], "b": [0, 1], "c": [0, 1, 2]},
    ...     random_state=0)
    >>> reports = priv.fit_transform(df)
    >>> list(reports.columns), priv.marginals_, priv.oracles_
    (['marginal', 'report'], [('a', 'b'), ('a', 'c'), ('b', 'c')], ['RR', 'RR', 'RR'])
    >>> est = MarginalEstimator().fit(reports)
    >>> est.marginal(["a", "b"]).round(2).tolist()
    [0.4, 0.1, 0.1, 0.4]
    """

    _parameter_constraints: dict[str, list[Any]] = {
        "epsilon": [Interval(Real, 0, None, closed="neither")],
        "marginal_size": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "marginals": [list, tuple, None],
        "mechanism": [StrOptions({"auto"}), str, HasMethods(["fit", "transform"])],
        "categories": [StrOptions({"auto"}), dict],
        "sensitive": [dict, None],
        "random_state": RANDOM_STATE_CONSTRAINT,
        "n_users": [Interval(Integral, 1, None, closed="left"), None],
    }

    def __init__(
        self,
        epsilon: float = 1.0,
        marginal_size: int | str = 2,
        marginals: Any = None,
        mechanism: Any = "auto",
        categories: Any = "auto",
        sensitive: Mapping[str, Any] | None = None,
        random_state: Any = None,
        *,
        n_users: int | None = None,
    ) -> None:
        self.epsilon = epsilon
        self.marginal_size = marginal_size
        self.marginals = marginals
        self.mechanism = mechanism
        self.categories = categories
        self.sensitive = sensitive
        self.random_state = random_state
        self.n_users = n_users

    # ------------------------------------------------------------ fitting
    def fit(self: _PrivT, X: Any = None, y: object = None) -> _PrivT:
        """Fix the columns and domains, choose the marginals and their oracles.

        Parameters
        ----------
        X : DataFrame, array-like of shape (n_samples, n_features) or None
            The table (read to check its values against explicit domains, or
            to learn them with ``categories="auto"``). May be None when
            ``categories`` is a dict.
        y : None
            Ignored.

        Returns
        -------
        self : MarginalPrivatizer
        """
        validate_params_with_hints(self, _HINTS)
        epsilon = check_epsilon(self.epsilon)
        for attr in ("n_features_in_", "feature_names_in_", "design_"):
            self.__dict__.pop(attr, None)
        columns, domains, frame = self._resolve_domains(X)
        self.columns_ = columns
        self.categories_ = domains
        self.sensitive_ = self._resolve_sensitive(columns, domains)
        if frame is not None:
            self._codes(frame)  # every value is in its domain
        n_users = self.n_users
        if n_users is None and frame is not None:
            n_users = len(frame)
        cache: dict = {}
        self.design_ = None
        if self.marginals is None and self.marginal_size == "auto":
            if n_users is None:
                raise ValueError(
                    "marginal_size='auto' chooses the marginals from the number of "
                    "users: fit on the data, or pass n_users."
                )
            sets, self.design_ = choose_marginals(
                dict(domains),
                int(n_users),
                epsilon,
                sensitive=self.sensitive_,
                mechanism=self.mechanism,
            )
        else:
            size = 2 if isinstance(self.marginal_size, str) else int(self.marginal_size)
            if self.marginals is None and size > len(columns):
                raise ValueError(
                    f"marginal_size={size} is larger than the number of privatized "
                    f"columns (n_features = {len(columns)}); pass a smaller size."
                )
            sets = marginal_sets(columns, size, self.marginals)
        sizes = {c: len(domains[c]) for c in columns}
        mechanisms, names = [], []
        for m in sets:
            cells = math.prod(sizes[c] for c in m)
            if cells > MAX_CELLS:
                raise ValueError(
                    f"The marginal over {list(m)} has {cells} cells, more than "
                    f"{MAX_CELLS}: coarsen its columns or measure smaller marginals."
                )
            name, mech = choose_oracle(
                cells, epsilon, self._cell_mask(m, sizes), self.mechanism, cache=cache
            )
            mechanisms.append(mech)
            names.append(name)
        self.marginals_ = list(sets)
        self.mechanisms_ = mechanisms
        self.oracles_ = names
        self.channel_ = MarginalChannel(
            columns,
            [domains[c] for c in columns],
            [list(m) for m in sets],
            [m.channel_ for m in mechanisms],
            None if self.sensitive_ is None else [self.sensitive_[c] for c in columns],
        )
        self._start_random_stream()
        return self

    def _cell_mask(self, columns, sizes):
        if self.sensitive_ is None:
            return None
        shape = tuple(sizes[c] for c in columns)
        out = np.zeros(shape, dtype=bool)
        for axis, c in enumerate(columns):
            view = [1] * len(shape)
            view[axis] = shape[axis]
            out = out | self.sensitive_[c].reshape(view)
        return out.ravel()

    def _resolve_domains(self, X):
        """(columns, {column: domain}, the input as a named frame or None)."""
        frame = None if X is None else self._frame(X, reset=True)
        if isinstance(self.categories, dict):
            if not self.categories:
                raise ValueError("categories must name at least one column.")
            bad = [c for c in self.categories if not isinstance(c, str) or not c]
            if bad:
                raise ValueError(
                    "The columns named by categories must be non-empty strings "
                    "(name the columns of an array x0, x1, ...)."
                )
            columns = list(self.categories)
            domains = {}
            for c in columns:
                domain = self.categories[c]
                if isinstance(domain, (str, bytes, Mapping)) or np.ndim(domain) != 1:
                    raise ValueError(
                        f"categories[{c!r}] must be a flat list of the column's values "
                        f"(a string is not a list), e.g. {{{c!r}: ['a', 'b']}}."
                    )
                try:
                    domains[c] = check_categories(domain)
                except (TypeError, ValueError) as exc:
                    raise ValueError(f"categories[{c!r}] is invalid: {exc}") from None
            if frame is not None:
                frame = self._by_position(frame, X, columns)
                absent = [c for c in columns if c not in frame.columns]
                if absent:
                    raise KeyError(
                        f"Columns {absent} of categories are not in X (its columns: "
                        f"{list(map(str, frame.columns))[:20]}); an array's columns are "
                        "named x0, x1, ..."
                    )
            else:
                self.n_features_in_ = len(columns)
                self.feature_names_in_ = np.asarray(columns, dtype=object)
            self._fitted_without_data = frame is None
            return columns, domains, frame
        self._fitted_without_data = False
        if frame is None:
            raise ValueError(
                "categories='auto' learns the domains from X, so X is required; pass "
                "categories={column: [...]} to fit without data."
            )
        columns = [str(c) for c in frame.columns]
        if len(set(columns)) != len(columns):
            raise ValueError("X has two columns with the same name.")
        domains, learned = {}, []
        for c, name in zip(frame.columns, columns, strict=True):
            values = frame[c]
            if isinstance(values.dtype, pd.CategoricalDtype):
                declared = list(values.cat.categories)
                if values.isna().any():
                    raise ValueError(
                        f"Column {name!r} has {int(values.isna().sum())} missing values; "
                        "impute them, or give explicit categories with a missing-value "
                        "marker."
                    )
                domains[name] = check_categories(declared)
                continue
            labels = as_label_array(values.to_numpy())
            missing = is_missing(labels)
            if missing.any():
                raise ValueError(
                    f"Column {name!r} has {int(missing.sum())} missing values (None/NaN) "
                    "and categories='auto'; impute them, or give explicit categories that "
                    "include a missing-value marker."
                )
            if labels.dtype.kind == "f" and np.isinf(labels).any():
                raise ValueError(
                    f"Column {name!r} holds infinity (inf), which categories='auto' does "
                    "not learn as a category; clean the column or give explicit categories."
                )
            uniques = pd.unique(labels)
            try:
                uniques = np.sort(uniques)
            except TypeError:
                uniques = np.asarray(sorted(uniques, key=repr), dtype=object)
            if uniques.size < 2:
                raise ValueError(
                    f"Column {name!r} holds a single distinct value (n_samples = "
                    f"{len(frame)}); a domain needs at least two. Pass "
                    "categories={column: [...]}."
                )
            domains[name] = check_categories(uniques)
            learned.append(name)
        if learned:
            warnings.warn(
                f"categories='auto' learns the domains of {learned} from the private "
                "data, which reveals which values occur. Pass the public domains as "
                "categories={column: [...]} (or use pandas 'category' columns) in a "
                "deployment.",
                PrivacyLeakWarning,
                stacklevel=3,
            )
        return columns, domains, frame

    def _resolve_sensitive(self, columns, domains):
        if self.sensitive is None:
            return None
        unknown = [c for c in self.sensitive if c not in domains]
        if unknown:
            raise ValueError(
                f"sensitive names {len(unknown)} column(s) that are not privatized: "
                f"{[str(c) for c in unknown][:10]}; its keys must be among {columns[:20]}."
            )
        out = {}
        for c in columns:
            if c in self.sensitive:
                try:
                    out[c] = check_sensitive(
                        self.sensitive[c], domains[c], name=f"sensitive[{c!r}]"
                    )
                except ValueError as exc:
                    # check_sensitive quotes the offending values: say only what is wrong.
                    message = str(exc)
                    if "not categories" in message:
                        message = (
                            f"sensitive[{c!r}] holds values that are not in the column's "
                            "domain; sensitive values must be part of it (fix their "
                            "spelling or add them to categories)."
                        )
                    raise ValueError(message) from None
            else:
                out[c] = np.ones(len(domains[c]), dtype=bool)
        if all(mask.all() for mask in out.values()):
            raise ValueError(
                "sensitive marks every value of every column sensitive: that is plain "
                "LDP; pass sensitive=None."
            )
        return out

    # ------------------------------------------------------------ input
    # What the shared input reading (_OneReportPrivatizerMixin._frame) needs.
    _input_kind = "categorical values"
    _input_dtype = None
    _assignment_key = ASSIGNMENT_KEY
    _noise_key = NOISE_KEY

    def _codes(self, frame):
        """Per-column codes (n, d) of the privatized columns, with clear errors."""
        n = len(frame)
        codes = np.empty((n, len(self.columns_)), dtype=np.intp)
        for j, c in enumerate(self.columns_):
            if c not in frame.columns:
                raise KeyError(
                    f"Column {c!r} is not in X (its columns: "
                    f"{list(map(str, frame.columns))[:20]}); an array's columns are "
                    "named x0, x1, ..."
                )
            column = frame[c]
            if isinstance(column, pd.DataFrame):
                raise ValueError(f"X has several columns named {c!r}.")
            # The distinct values are matched with the domain, then every row
            # takes its value's code: one hash pass over the rows.
            rows, uniques = pd.factorize(column, use_na_sentinel=False)
            if isinstance(uniques, pd.CategoricalIndex | pd.Categorical):
                uniques = np.asarray(uniques.astype(object), dtype=object)
            labels = as_label_array(np.asarray(uniques))
            found = encode_labels(labels, self.categories_[c], strict_bools=True)
            bad = found < 0
            if bad.any():
                missing = is_missing(labels[bad])
                if missing.any():
                    n_missing = int(np.isin(rows, np.flatnonzero(bad)[missing]).sum())
                    raise ValueError(
                        f"Column {c!r} has {n_missing} "
                        "missing values (None/NaN), which are not in its domain: impute "
                        "or drop them, or add a missing-value marker to its categories."
                    )
                infinite = labels.dtype.kind == "f" and bool(np.isinf(labels[bad]).any())
                raise ValueError(
                    f"Column {c!r} holds {int(np.isin(rows, np.flatnonzero(bad)).sum())} "
                    f"values outside its domain ({int(bad.sum())} distinct"
                    + (", infinity (inf) among them" if infinite else "")
                    + "; values are matched with their type: 1 is not '1'); add them to "
                    "categories or clean the data."
                )
            codes[:, j] = found[rows]
        return codes

    # ------------------------------------------------------------ transform
    def _row_codes(self, frame):
        """What ``transform`` samples from: per-column codes, their hash input, its range."""
        codes = self._codes(frame)
        return codes, codes, max(len(d) for d in self.categories_.values())

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = True
        tags.input_tags.categorical = True
        tags.input_tags.string = True
        tags.input_tags.allow_nan = isinstance(self.categories, dict) and any(
            not isinstance(d, (str, bytes, Mapping))
            and np.ndim(d) == 1
            and len(d) > 0
            and bool(is_missing(np.asarray(list(d), dtype=object)).any())
            for d in self.categories.values()
        )
        tags.transformer_tags.preserves_dtype = []
        tags.requires_fit = True
        return tags
