"""The personalized utility-optimized mechanism (PUM) with semantic tags.

Murakami & Kawamoto, USENIX Security 2019, Section 5. Each user
keeps a *secret* pre-processor ``f(i)`` that maps the values she considers
sensitive for tag ``k`` ("home", "work", ...) to a bot ``⊥k``; the report is
``Q_cmn(f(i)(x))`` where ``Q_cmn`` is a public (Z_S, epsilon)-uRR or -uRAP over
the intermediate domain ``Z = X ∪ {⊥1..⊥κ}`` with ``Z_S = X_S ∪ {bots}``.
The whole is (X_S ∪ X_S(i), Y_P, epsilon)-ULDP (Prop. 11).

Design, in terms of the package contract: ``Q_cmn`` *is* a
:class:`UtilityOptimizedRRChannel` or :class:`UnaryEncodingChannel` over the
extended categories (bot labels ``"⊥" + tag``, appended after X), so the
public spec, the reports and every estimator are the common-scenario ones.
The pre-processor runs inside :meth:`PersonalizedMechanism.transform` and is
never stored.
"""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Integral, Real
from typing import TYPE_CHECKING, Literal, TypeVar

import numpy as np
import pandas as pd
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ..utils._typing import ArrayLike, Categories, RandomStateLike, Sensitive, TransformOutput
from ..utils._validation import (
    as_label_array,
    bool_mismatch_hint,
    check_categories,
    check_list_shape,
    check_sensitive,
    check_theta,
    describe_values,
    encode_labels,
    is_missing,
    positions,
)
from ._base import RANDOM_STATE_CONSTRAINT, _BudgetMechanism, _transform_output
from ._docs import fill_mechanism_doc
from ._randomized_response import UtilityOptimizedRRChannel
from ._rappor import UnaryEncodingChannel, _checked_basic_theta
from ._reports import Reports, attach_channel

if TYPE_CHECKING:
    from ._channel import Channel

_PUMT = TypeVar("_PUMT", bound="PersonalizedMechanism")

__all__ = ["PersonalizedMechanism", "BOT_PREFIX", "bot_label", "split_bots"]

#: Reserved prefix of the bot labels. Real category labels may not start with
#: it, so a bot can never collide with a category and the bots of a PUM
#: channel can be recognised from its categories alone (:func:`split_bots`).
BOT_PREFIX = "\u22a5"  # "⊥"

_LIST_TYPES = (list, tuple, set, frozenset, np.ndarray, pd.Series, pd.Index)
_SCALAR_KINDS = {
    "string",
    "integer",
    "floating",
    "mixed-integer-float",
    "boolean",
    "empty",
}


def bot_label(tag: str) -> str:
    """Label of the bot of a semantic tag: ``"⊥" + tag``.

    Parameters
    ----------
    tag : str

    Returns
    -------
    label : str

    Examples
    --------
    >>> from sklearn_uldp.mechanisms import bot_label
    >>> bot_label("home")
    '⊥home'
    """
    return f"{BOT_PREFIX}{tag}"


def split_bots(channel: Channel) -> tuple[int, list[str]]:
    """Split the categories of a PUM channel into the domain X and the bots.

    The bots are the trailing categories whose labels start with
    :data:`BOT_PREFIX` (a prefix no real category may use).

    Parameters
    ----------
    channel : Channel
        The common mechanism ``Q_cmn`` over ``Z = X ∪ bots``.

    Returns
    -------
    n_x : int
        ``|X|``: the first ``n_x`` categories are X, the rest are bots.
    tags : list of str
        The tags, in bot order.

    Examples
    --------
    >>> from sklearn_uldp.mechanisms import PersonalizedMechanism, split_bots
    >>> mech = PersonalizedMechanism(1.0, sensitive=["a"], tags=["home"],
    ...                              categories=["a", "b", "c"]).fit()
    >>> split_bots(mech.channel_)
    (3, ['home'])
    """
    cats = channel.categories.tolist()
    n_x = len(cats)
    while n_x > 0 and isinstance(cats[n_x - 1], str) and cats[n_x - 1].startswith(BOT_PREFIX):
        n_x -= 1
    tags = [c[len(BOT_PREFIX) :] for c in cats[n_x:]]
    if not tags:
        raise ValueError(
            f"{channel!r} has no bot categories (labels starting with "
            f"{BOT_PREFIX!r}): it is not the common mechanism of a "
            "PersonalizedMechanism."
        )
    return n_x, tags


# --------------------------------------------------------------------------
# The pre-processor (private helpers; it never leaves ``transform``).
# --------------------------------------------------------------------------
def _value_codes(values, index, name):
    """Codes (0..k-1) of one column of true values, with clear errors."""
    values = as_label_array(np.asarray(values, dtype=object))
    # strict_bools: True is not the category 1 (nor 1.0 the category True).
    codes = encode_labels(values, np.asarray(index), index, strict_bools=True)
    bad = codes < 0
    if bad.any():
        missing = is_missing(values[bad])
        if missing.any():
            raise ValueError(
                f"Value column {name!r} has {int(missing.sum())} missing values "
                "(NaN/None); every report needs a value from the domain."
            )
        # counts and kinds, never the values (a user's data)
        raise ValueError(
            f"Value column {name!r} holds {describe_values(values[bad])} that are "
            f"not categories, at {positions(bad)}. The domain is fixed to {len(index)} "
            "categories." + bool_mismatch_hint(pd.unique(values[bad]), index)
        )
    return codes.astype(np.intp)


def _tag_pairs(column, index, tag):
    """(users, codes) of the sensitive values listed in one tag column.

    A cell holds a scalar, a list-like of values, or a missing value (no
    sensitive value for this tag).
    """
    col = np.empty(len(column), dtype=object)
    col[:] = list(column)
    if pd.api.types.infer_dtype(col, skipna=True) in _SCALAR_KINDS:
        is_list = np.zeros(col.size, dtype=bool)  # fast path: scalars only
    else:
        is_list = np.fromiter((isinstance(v, _LIST_TYPES) for v in col), dtype=bool, count=col.size)
    rows = [np.flatnonzero(~is_list)]
    vals = [col[rows[0]]]
    list_rows = np.flatnonzero(is_list)
    if list_rows.size:
        lengths = [len(col[i]) for i in list_rows]
        rows.append(np.repeat(list_rows, lengths))
        flat = np.empty(int(sum(lengths)), dtype=object)
        flat[:] = [v for i in list_rows for v in col[i]]
        vals.append(flat)
    rows = np.concatenate(rows)
    vals = np.concatenate(vals)
    present = ~is_missing(vals)
    rows, vals = rows[present], as_label_array(vals[present])
    if vals.size == 0:
        return rows.astype(np.int64), np.zeros(0, dtype=np.int64)
    codes = encode_labels(vals, np.asarray(index), index, strict_bools=True)
    if (codes < 0).any():
        unknown = np.asarray(vals, dtype=object)[codes < 0]
        raise ValueError(
            f"Tag column {tag!r} holds {describe_values(unknown)} "
            "that are not categories. A user's sensitive values must belong to "
            "the public domain: fix their spelling or add them to `categories`."
        )
    return rows.astype(np.int64), codes.astype(np.int64)


def _preprocess(value_codes, pairs, n_x):
    """Apply every user's pre-processor f(i) to her values.

    Parameters
    ----------
    value_codes : ndarray of shape (n, t)
        Codes of the true values in X.
    pairs : list of (users, codes)
        Per tag (in bot order), the users' sensitive values for that tag.
    n_x : int
        ``|X|``; bot ``b`` gets code ``n_x + b``.

    Returns
    -------
    z : ndarray of shape (n, t)
        Codes of the intermediate values in Z. A value listed under several
        tags of the same user goes to the bot of the *first* such tag.
    """
    n = value_codes.shape[0]
    z = value_codes.copy()
    if n == 0:
        return z
    keys_of_values = np.arange(n, dtype=np.int64)[:, None] * n_x + value_codes
    for b in reversed(range(len(pairs))):  # earlier tags overwrite later ones
        users, codes = pairs[b]
        if users.size == 0:
            continue
        keys = np.sort(users * n_x + codes)  # duplicates are harmless
        pos = np.searchsorted(keys, keys_of_values)
        pos[pos == keys.size] = 0
        hit = keys[pos] == keys_of_values
        z[hit] = n_x + b
    return z


@fill_mechanism_doc
class PersonalizedMechanism(_BudgetMechanism):
    """Personalized utility-optimized mechanism (PUM) with semantic tags.

    Each row of ``X`` is one user: her true value(s) and, for each semantic
    tag, her *own* sensitive value(s) for that tag (e.g. the cell of her home).
    Inside :meth:`transform` each user's secret pre-processor maps a true value
    listed under tag ``k`` to the bot ``⊥k`` and leaves other values
    unchanged; the result is privatized by the common mechanism ``Q_cmn``, a
    (Z_S, epsilon)-uRR or -uRAP over ``Z = X ∪ {⊥1..⊥κ}`` with
    ``Z_S = X_S ∪ {bots}`` (Murakami & Kawamoto 2019, Sec. 5). User i
    gets (X_S ∪ X_S(i), Y_P, epsilon)-ULDP, and the collector learns nothing
    about *which* values a user tagged beyond what that guarantee allows: the
    fitted mechanism, its spec and the reports hold no tag data, and a
    tagged value only ever reaches the reports through the bot, whose outputs
    are all protected.

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy budget of one *user* (> 0). With ``n_reports=t`` each of her t
        reports spends ``epsilon / t`` (sequential composition).
    sensitive : array-like, boolean mask, callable or None, default=None
        The common sensitive values X_S (shared by all users); ``None`` or an
        empty list when only personal values are sensitive.
    tags : sequence of str, default=("home", "work")
        The semantic tags; their order is the bot order. In a DataFrame the
        tag columns are found by name; in an array they are the last
        ``len(tags)`` columns.
    mechanism : {"urr", "urap"}, default="urr"
        The common mechanism Q_cmn over Z.
    theta : float in (0, 1) or None, default=None
        uRAP's theta (``None``: e^(eps/2) / (e^(eps/2) + 1)); ignored by uRR.
    n_reports : int, default=1
        Number t of values each user reports (the non-tag columns of ``X``);
        each report spends ``epsilon / t``.
    categories : array-like of shape (k,)
        The public domain X. Labels may not start with ``"⊥"`` (reserved for
        the bots).
    %(random_state)s

    Attributes
    ----------
    categories_ : ndarray of shape (k,)
        The domain X.
    intermediate_categories_ : ndarray of shape (k + κ,)
        Z = X followed by the bot labels ``"⊥" + tag``.
    sensitive_mask_ : ndarray of bool of shape (k,)
        The common X_S.
    channel_ : UtilityOptimizedRRChannel or UnaryEncodingChannel
        Q_cmn over Z with budget ``epsilon / n_reports``: the public spec.

    Notes
    -----
    Decisions (documented behaviour):

    * **A value under two tags of the same user** goes to the bot of the
      first of those tags in ``tags`` order. Privacy is the same either way
      (both bots are in Z_S); the rule only fixes which π_k it counts in.
    * **A tagged value that is also in the common X_S** still maps to the bot
      (eq. (19) of the paper has no exception). Privacy-wise nothing changes:
      x ∈ X_S and ⊥k are both in Z_S, so their reports are protected and
      e^eps-indistinguishable from every input either way, and the
      guarantee (X_S ∪ X_S(i), Y_P, epsilon) holds. Utility-wise it keeps the
      meaning of π_k ("where users are when at home"), so that
      p = r + Σ_k r(⊥k) π_k holds with background knowledge that covers every
      cell (a POI map of homes does not skip cells with a hospital).
    * **A tag value outside the domain** raises a ``ValueError`` naming the
      tag and the values; missing values (``None``/NaN) mean "no sensitive
      value for this tag". Values of the value columns must be in X.

    The pre-processor is applied in :meth:`transform` and discarded; nothing
    derived from the tag columns is stored on the mechanism.

    See Also
    --------
    PersonalizedEstimator : estimates the distribution from the reports.

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn_uldp import PersonalizedMechanism
    >>> X = pd.DataFrame({"cell": ["a", "b", "c", "d"],
    ...                   "home": ["a", "c", None, ["b", "d"]]})
    >>> mech = PersonalizedMechanism(epsilon=1.0, sensitive=["a"], tags=["home"],
    ...     categories=["a", "b", "c", "d"], random_state=0)
    >>> reports = mech.fit_transform(X)
    >>> reports.shape
    (4, 1)
    >>> mech.intermediate_categories_.tolist()
    ['a', 'b', 'c', 'd', '⊥home']
    >>> mech.channel_.sensitive_mask.tolist()   # Z_S = X_S ∪ bots
    [True, False, False, False, True]
    """

    _parameter_constraints = {
        "epsilon": [Interval(Real, 0, None, closed="neither")],
        "sensitive": [None, "array-like", callable],
        "tags": ["array-like"],
        "mechanism": [StrOptions({"urr", "urap"})],
        "theta": [None, Interval(Real, 0, 1, closed="neither")],
        "n_reports": [Interval(Integral, 1, None, closed="left")],
        "categories": ["array-like"],
        "random_state": RANDOM_STATE_CONSTRAINT,
    }

    def __init__(
        self,
        epsilon: float = 1.0,
        *,
        sensitive: Sensitive | None = None,
        tags: Sequence[str] = ("home", "work"),
        mechanism: Literal["urr", "urap"] = "urr",
        theta: float | None = None,
        n_reports: int = 1,
        categories: Categories,
        random_state: RandomStateLike = None,
    ) -> None:
        super().__init__(epsilon, categories=categories, random_state=random_state)
        self.sensitive = sensitive
        self.tags = tags
        self.mechanism = mechanism
        self.theta = theta
        self.n_reports = n_reports

    # ------------------------------------------------------------ validation
    def _check_params(self):
        super()._check_params()
        if self.theta is not None:
            check_theta(self.theta)
        tags = self.tags
        if isinstance(tags, str):
            raise ValueError(
                f"tags must be a list of tag names, got the string {tags!r}; write tags=[{tags!r}]."
            )
        tags = list(tags)
        if not tags:
            raise ValueError("tags must name at least one semantic tag.")
        if not all(isinstance(t, str) and t for t in tags):
            raise ValueError(f"tags must be non-empty strings, got {tags!r}.")
        if len(set(tags)) != len(tags):
            raise ValueError(f"tags must be unique, got {tags!r}.")
        return tags

    @fill_mechanism_doc
    def fit(self: _PUMT, X: ArrayLike | None = None, y: object = None) -> _PUMT:
        """Fix the public domain and build the common mechanism Q_cmn.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_users, n_reports + n_tags), default=None
            Optional: only validated (nothing about it is stored).
        %(fit_y_returns_self)s
        """
        self._validate_params()
        tags = self._check_params()
        cats = check_categories(self.categories)
        reserved = [c for c in cats.tolist() if isinstance(c, str) and c.startswith(BOT_PREFIX)]
        if reserved:
            raise ValueError(
                f"Categories {reserved[:5]} start with {BOT_PREFIX!r}, which is "
                "reserved for the bot labels of the semantic tags. Rename them."
            )
        if self.sensitive is not None:
            # before np.size, which flattens [[]] and fails on ragged lists
            check_list_shape(
                self.sensitive,
                name="sensitive",
                what="categories (or a boolean mask over them)",
                example="['a', 'b']",
            )
        if self.sensitive is None or (
            not callable(self.sensitive) and np.size(self.sensitive) == 0
        ):
            s_mask = np.zeros(len(cats), dtype=bool)
        else:
            s_mask = check_sensitive(self.sensitive, cats)
        self.categories_ = cats
        self.sensitive_mask_ = s_mask
        self._category_index = pd.Index(cats)
        self._tags = tags
        z_labels = cats.tolist() + [bot_label(t) for t in tags]
        z = np.empty(len(z_labels), dtype=object)
        z[:] = z_labels
        self.intermediate_categories_ = z
        self.channel_ = self._make_channel()
        self._start_random_stream()
        for attr in ("feature_names_in_", "n_features_in_"):
            self.__dict__.pop(attr, None)
        if X is not None:
            self._parse(X)  # validation only; the result is discarded
            self.n_features_in_ = int(np.shape(X)[1])
            if isinstance(X, pd.DataFrame):
                self.feature_names_in_ = np.asarray([str(c) for c in X.columns], dtype=object)
        return self

    def _make_channel(self):
        z_sensitive = np.concatenate([self.sensitive_mask_, np.ones(len(self._tags), dtype=bool)])
        eps = float(self.epsilon) / int(self.n_reports)
        if self.mechanism == "urr":
            return UtilityOptimizedRRChannel(self.intermediate_categories_, eps, z_sensitive)
        theta = (
            _checked_basic_theta(eps, len(self.intermediate_categories_))
            if self.theta is None
            else float(self.theta)
        )
        return UnaryEncodingChannel(self.intermediate_categories_, eps, theta, z_sensitive)

    # --------------------------------------------------------------- parsing
    def _columns(self, X):
        """Split X into (value columns, names) and tag columns (tag order)."""
        tags = self._tags
        t = int(self.n_reports)
        if isinstance(X, pd.DataFrame):
            missing = [tag for tag in tags if tag not in X.columns]
            if missing:
                raise ValueError(
                    f"X has no column for the tags {missing}. Each tag needs a "
                    "column (by name) holding the users' sensitive value(s) "
                    "for that tag (a value, a list, or missing)."
                )
            names = [c for c in X.columns if c not in tags]
            values = [X[c].to_numpy(dtype=object) for c in names]
            tag_cols = [X[tag].to_numpy(dtype=object) for tag in tags]
        else:
            if hasattr(X, "toarray"):
                raise TypeError("Sparse input is not supported.")
            arr = np.asarray(X, dtype=object)
            if arr.ndim != 2:
                raise ValueError(
                    "X must be 2-D: one row per user, n_reports value columns "
                    f"then one column per tag; got shape {arr.shape}."
                )
            n_val = arr.shape[1] - len(tags)
            names = [f"x{j}" for j in range(max(n_val, 0))]
            values = [arr[:, j] for j in range(max(n_val, 0))]
            tag_cols = [arr[:, n_val + b] for b in range(len(tags))] if n_val >= 0 else []
        if len(values) != t:
            raise ValueError(
                f"X has {len(values)} value columns ({names}) besides the tag "
                f"columns {tags}, but n_reports={t}. Each user reports exactly "
                "n_reports values, each with epsilon / n_reports."
            )
        return values, names, tag_cols

    def _parse(self, X):
        values, names, tag_cols = self._columns(X)
        index = self._category_index
        n = len(values[0])
        if n == 0:
            raise ValueError("X has no rows (users).")
        codes = np.empty((n, len(values)), dtype=np.intp)
        for j, (col, name) in enumerate(zip(values, names, strict=True)):
            codes[:, j] = _value_codes(col, index, name)
        pairs = [_tag_pairs(col, index, tag) for col, tag in zip(tag_cols, self._tags, strict=True)]
        return codes, pairs, names

    # ------------------------------------------------------------- transform
    def transform(self, X: ArrayLike) -> TransformOutput:
        """Privatize each user's value(s) with her secret pre-processor.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_users, n_reports + n_tags)
            Per user, ``n_reports`` value columns and one column per tag (by
            name in a DataFrame; the last columns, in ``tags`` order, in an
            array). A tag cell holds one value, a list of values or a missing
            value.

        Returns
        -------
        reports : Reports, DataFrame or sparse matrix
            uRR: shape (n_users, n_reports), labels in Z (protected outputs are
            X_S and the bots). uRAP: shape ``(n_users, n_reports * |Z|)``, the t bit
            vectors side by side. The reports carry ``channel_``.
        """
        check_is_fitted(self, "channel_")
        codes, pairs, names = self._parse(X)
        z = _preprocess(codes, pairs, len(self.categories_))
        del pairs  # the pre-processor's data never leaves transform
        rng = self._transform_rng(z, len(self.intermediate_categories_))
        n, t = z.shape
        out = self.channel_.sample(z.ravel(), rng)
        del z
        index = X.index if isinstance(X, (pd.DataFrame, pd.Series)) else None
        if not self.channel_.bit_vector_reports:
            data = self.channel_.decode(out).reshape(n, t)
        else:
            data = out.reshape(n, t * self.channel_.n_categories)
        if _transform_output(self) == "pandas":
            frame = pd.DataFrame(data, columns=self._feature_names(names), index=index)
            attach_channel(frame, self.channel_)
            return frame
        return Reports(data, self.channel_)

    def fit_transform(self, X: ArrayLike, y: object = None) -> TransformOutput:
        """Fit, then privatize ``X`` (see :meth:`transform`).

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_users, n_reports + n_tags)
        y : None
            Ignored.

        Returns
        -------
        reports : Reports, DataFrame or sparse matrix
        """
        return self.fit(X).transform(X)

    def _feature_names(self, names):
        if not self.channel_.bit_vector_reports:
            return np.asarray(names, dtype=object)
        return np.asarray(
            [f"{name}_{z}" for name in names for z in self.intermediate_categories_],
            dtype=object,
        )

    def get_feature_names_out(self, input_features: ArrayLike | None = None) -> np.ndarray:
        """Names of the report columns.

        Parameters
        ----------
        input_features : array-like of str, default=None
            Names of the value columns; defaults to ``x0 .. x{t-1}``.

        Returns
        -------
        feature_names_out : ndarray of str objects
        """
        check_is_fitted(self, "channel_")
        features = (
            getattr(self, "feature_names_in_", None)
            if input_features is None
            else np.asarray(input_features, dtype=object)
        )
        if features is None:
            names = [f"x{j}" for j in range(int(self.n_reports))]
        else:
            names = [c for c in features if c not in self._tags]
        return self._feature_names(names)

    # ---------------------------------------------------------- verification
    def user_channel_matrix(self, user_tags):
        """The exact channel Q(i) = Q_cmn ∘ f(i) of one user (one report).

        For verification on small domains (e.g. with
        :func:`~sklearn_uldp.privacy.check_uldp`); it runs the same
        pre-processor as :meth:`transform`, locally, and stores nothing.

        Parameters
        ----------
        user_tags : dict
            Tag -> the user's sensitive value(s) for that tag (a value, a
            list, or None). Tags not given have no value.

        Returns
        -------
        Q : ndarray of shape (k, n_outputs)
            Rows: true values in ``categories_`` order; columns: the outputs
            of ``channel_`` (its ``output_labels()``).

        Examples
        --------
        >>> from sklearn_uldp import PersonalizedMechanism
        >>> mech = PersonalizedMechanism(epsilon=1.0, sensitive=["a"],
        ...     tags=["home"], categories=["a", "b", "c"]).fit()
        >>> mech.user_channel_matrix({"home": "c"}).round(3)
        array([[0.731, 0.   , 0.   , 0.269],
               [0.269, 0.462, 0.   , 0.269],
               [0.269, 0.   , 0.   , 0.731]])
        """
        check_is_fitted(self, "channel_")
        unknown = set(user_tags) - set(self._tags)
        if unknown:
            raise ValueError(f"Unknown tags {sorted(unknown)}; tags are {self._tags}.")
        k = len(self.categories_)
        codes = np.arange(k, dtype=np.intp)[:, None]
        index = self._category_index
        pairs = []
        for tag in self._tags:
            cell = np.empty(k, dtype=object)
            cell[:] = [user_tags.get(tag)] * k
            pairs.append(_tag_pairs(cell, index, tag))
        z = _preprocess(codes, pairs, k)[:, 0]
        Q = self.channel_.matrix()
        return Q[z]

    @property
    def epsilon_spent_(self):
        """Budget one user (one row of ``X``) spends: ``epsilon``.

        Each of her ``n_reports`` reports spends ``epsilon / n_reports``.
        """
        check_is_fitted(self, "channel_")
        return self.channel_.epsilon * int(self.n_reports)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = True
        # A missing tag value (None/NaN) means the user has no sensitive value
        # for that tag.
        tags.input_tags.allow_nan = True
        if tags.transformer_tags is not None:
            tags.transformer_tags.preserves_dtype = []  # labels or 0/1 bits
        return tags
