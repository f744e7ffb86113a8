"""Randomized response: k-RR, utility-optimized RR (uRR) and the identity.

References
----------
Kairouz, Bonawitz, Ramage, "Discrete distribution estimation under local
privacy", ICML 2016 (k-ary RR).
Murakami & Kawamoto, "Utility-Optimized Local Differential Privacy Mechanisms
for Distribution Estimation", USENIX Security 2019, Def. 4 / Prop. 4 (uRR).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from sklearn.utils._param_validation import StrOptions

from ..exceptions import ReportMismatchError
from ..utils._sampling import (
    narrow_code_dtype,
    randomized_response_codes,
    randomized_response_move_counts,
)
from ..utils._typing import ArrayLike, Categories
from ..utils._validation import (
    check_channel_categories,
    check_sensitive,
    check_sensitive_mask,
    describe_values,
    encode_labels,
    positions,
    realized_probability,
)
from ._base import BaseMechanism, SensitiveSetMechanism, _BudgetMechanism
from ._channel import (
    CategoricalChannel,
    SensitiveSetMixin,
    _as_report_column,
    _describe_values,
    sensitive_mask_schema,
)
from ._docs import fill_mechanism_doc
from ._oracle_kernels import report_array
from ._text_columns import text_report_codes

__all__ = [
    "UtilityOptimizedRRChannel",
    "RandomizedResponseChannel",
    "IdentityChannel",
    "RandomizedResponse",
    "UtilityOptimizedRR",
    "NonPrivate",
]


class _LabelledOutputsChannel(CategoricalChannel):
    """Outputs are the categories themselves (reports are category labels)."""

    reports_are_categories = True

    @property
    def n_outputs(self):
        return self.n_categories

    def output_labels(self):
        return self.categories

    def encode_reports(self, reports):
        codes = text_report_codes(reports, self.categories)
        if codes is not None:  # a column of text labels, all categories
            return codes
        column = _as_report_column(reports)
        _check_label_types(column, self.categories, self)
        codes = encode_labels(column, self.categories)
        if (codes < 0).any():
            bad = np.asarray(column, dtype=object)[codes < 0]
            raise ReportMismatchError(
                f"Reports hold {describe_values(bad)} outside the outputs of "
                f"{self!r} (its outputs are its {self.n_categories} categories), at "
                f"{positions(codes < 0)}. Were they produced by another mechanism or domain?"
            )
        return codes.astype(np.intp, copy=False)

    def decode(self, codes):
        start = self._range_start()
        if start is not None:
            # A run of integers lo..lo+k-1: an addition (or nothing, for
            # 0..k-1: the codes themselves, no copy), not a gather from a
            # table of k labels (which misses the cache from k ~ 10^5 on).
            codes = np.asarray(codes)
            if not start and codes.dtype == self.categories.dtype:
                return codes
            out = report_array(codes.shape, self.categories.dtype)
            return np.add(codes, start, out=out, dtype=self.categories.dtype, casting="unsafe")
        return self.categories[codes]

    def _range_start(self):
        """lo when the categories are the integers lo, lo+1, ..., else None."""
        start = self.__dict__.get("_range_start_value", False)
        if start is False:
            cats = self.categories
            start = None
            if (
                cats.dtype.kind in "iu"
                and cats.size
                and int(cats[-1]) - int(cats[0]) == cats.size - 1
                and bool((np.diff(cats) == 1).all())
            ):
                start = cats[0]
            self.__dict__["_range_start_value"] = start
        return start

    def observed_frequency(self, stats):
        return stats.counts / stats.n


def _label_kind(values):
    """Kind of a label array: 'integer', 'floating', 'boolean', 'string', ..."""
    kind = values.dtype.kind
    if kind in "iu":
        return "integer"
    if kind == "f":
        return "floating"
    if kind == "b":
        return "boolean"
    if kind in "US":
        return "string"
    return pd.api.types.infer_dtype(values, skipna=True)


# Report kinds accepted for each kind of domain: a label must be a category,
# so True is not the category 1 (Python's == says it is) and "1" is not 1.
# Numbers compare by value: a float 1.0 (e.g. a nullable-integer column read
# back as float) is the category 1, and 1.5 is not in the domain.
_NUMBER_KINDS = {"floating", "integer", "mixed-integer-float", "empty"}
_COMPATIBLE_KINDS = {
    "integer": _NUMBER_KINDS,
    "boolean": {"boolean", "empty"},
    "floating": _NUMBER_KINDS,
    "mixed-integer-float": _NUMBER_KINDS,
    "string": {"string", "empty"},
}


def _type_class(value):
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, (int, float, np.integer, np.floating)):
        return "number"
    return type(value).__name__


def _check_label_types(column, categories, channel):
    """Refuse report labels whose type differs from the domain's (no coercion)."""
    cat_kind = _label_kind(categories)
    rep_kind = _label_kind(column)
    allowed = _COMPATIBLE_KINDS.get(cat_kind)
    if allowed is not None:
        if rep_kind in allowed:
            return
        raise ReportMismatchError(
            f"Reports of {channel!r} are category labels of kind {cat_kind!r} "
            f"(its categories, e.g. {_describe_values(categories, 3)}); got "
            f"values of kind {rep_kind!r} ({describe_values(column)}). "
            "Labels must be categories (True is not the category 1, nor the "
            "string '1'): pass the reports as the mechanism returned them."
        )
    # A mixed domain (e.g. strings and integers): compare the type of each
    # matched label with its category's (rare; per-report Python calls).
    codes = encode_labels(column, categories)
    found = codes >= 0
    if not found.any():
        return
    classify = np.frompyfunc(_type_class, 1, 1)
    mine = classify(np.asarray(column, dtype=object)[found])
    theirs = classify(np.asarray(categories, dtype=object))[codes[found]]
    bad = mine != theirs
    if bad.any():
        raise ReportMismatchError(
            f"Reports of {channel!r} hold values "
            f"{_describe_values(np.asarray(column, dtype=object)[found][bad])} "
            "whose type differs from the category they equal (e.g. True for "
            "1, or 1.5 for a string). Labels must be exactly categories: "
            "pass the reports as the mechanism returned them."
        )


def _urr_probabilities(epsilon, s):
    """(c1, c2, c3) of (X_S, epsilon)-uRR with s sensitive values, stably.

    With z = e^-eps: c1 = 1 / (1 + (s-1) z), c2 = z c1, c3 = (1 - z) c1;
    no overflow for any epsilon and no cancellation for a tiny one.
    """
    z = np.exp(-epsilon)
    den = 1.0 + (s - 1) * z
    return 1.0 / den, z / den, -np.expm1(-epsilon) / den


class UtilityOptimizedRRChannel(SensitiveSetMixin, _LabelledOutputsChannel):
    """Channel of the (X_S, epsilon)-utility-optimized RR (Murakami & Kawamoto 2019, Def. 4).

    With u = s + e^eps - 1: a sensitive x is kept w.p. e^eps/u and otherwise
    replaced by another sensitive value (1/u each); a non-sensitive x is kept
    w.p. (e^eps - 1)/u and otherwise replaced by a sensitive value (1/u each).
    Outputs in X_N are invertible; outputs in X_S are protected.

    Parameters
    ----------
    categories : array-like of shape (k,)
    epsilon : float
    sensitive : array-like of bool of shape (k,)
        Mask of the sensitive categories.

    Examples
    --------
    >>> from sklearn_uldp.mechanisms import UtilityOptimizedRRChannel
    >>> channel = UtilityOptimizedRRChannel(["a", "b", "c"], epsilon=1.0,
    ...                                     sensitive=[True, True, False])
    >>> channel.matrix().round(3).tolist()
    [[0.731, 0.269, 0.0], [0.269, 0.731, 0.0], [0.269, 0.269, 0.462]]
    >>> channel.protected_outputs().tolist()
    [True, True, False]
    """

    name = "urr"
    _spec_field_schemas = {
        **_LabelledOutputsChannel._spec_field_schemas,
        "sensitive": sensitive_mask_schema(),
    }

    def __init__(self, categories: ArrayLike, epsilon: float, sensitive: ArrayLike) -> None:
        super().__init__(categories, epsilon)
        self._sensitive = check_sensitive_mask(sensitive, self.n_categories)
        self._sensitive_codes = np.flatnonzero(self._sensitive)
        s = self._sensitive_codes.size
        self._check_budget(
            f"k-RR with k={s}"
            if s == self.n_categories
            else f"uRR with {s} sensitive of k={self.n_categories} categories"
        )
        self.c1, self.c2, self.c3 = _urr_probabilities(self.epsilon, s)
        # The linear estimator: a = u / (E - 1), b = -1 / (E - 1) on X_S
        # (u = s + E - 1), written with e^-eps and expm1.
        em1 = -np.expm1(-self.epsilon)  # 1 - e^-eps
        self._coef_a = (1.0 + (s - 1) * np.exp(-self.epsilon)) / em1
        self._coef_b_s = -np.exp(-self.epsilon) / em1

    def _draw_probabilities(self, epsilon):
        s, k = self._sensitive_codes.size, self.n_categories
        c1, c2, c3 = _urr_probabilities(epsilon, s)
        probs = []
        if s > 1:  # keep a sensitive value, or move it (one bin per target)
            probs += [c1, 1.0 - c1, c2]
        if s < k:  # hide a non-sensitive value among X_S (keeping it gives
            # an invertible output, which no privacy ratio involves)
            probs += [s * c2]
        return np.array(probs)

    def realized_matrix(self):
        """The channel the samplers realize (see :meth:`Channel.realized_matrix`).

        For k-RR it is exact: the keep and move probabilities of
        :func:`~sklearn_uldp.utils._sampling.randomized_response_codes` are
        counted on the 2**-53 grid of its uniforms.
        """
        k, s = self.n_categories, self._sensitive_codes.size
        if s == k:
            kept, moves = randomized_response_move_counts(k, self.c1)
            Q = np.empty((k, k))
            x, y = np.indices((k, k))
            t = y - (y > x)
            Q[:] = moves[np.clip(t, 0, k - 2)] * 2.0**-53
            np.fill_diagonal(Q, kept * 2.0**-53)
            return Q
        S = self._sensitive
        c1, c3 = realized_probability(self.c1), realized_probability(self.c3)
        Q = np.zeros((k, k))
        Q[np.ix_(S, S)] = (1.0 - c1) / (s - 1) if s > 1 else 0.0
        Q[np.ix_(~S, S)] = (1.0 - c3) / s
        idx = np.arange(k)
        Q[idx, idx] = np.where(S, c1, c3)
        return Q

    def get_params(self):
        return {"epsilon": self.epsilon, "sensitive": self._sensitive.copy()}

    def protected_outputs(self):
        return self._sensitive.copy()

    # Structure: Q = diag(c1 - c2 on S, c3 on N) + c2 * 1 (1_S)^T.
    def forward(self, p):
        p = np.asarray(p, dtype=float)
        S = self._sensitive
        return np.where(S, (self.c1 - self.c2) * p + self.c2 * p.sum(), self.c3 * p)

    def adjoint(self, v):
        v = np.asarray(v, dtype=float)
        S = self._sensitive
        v_s = v[S].sum()
        return np.where(S, (self.c1 - self.c2) * v, self.c3 * v) + self.c2 * v_s

    def expected_frequency(self, p):
        return self.forward(p)

    @property
    def coef_a(self):
        return np.full(self.n_categories, self._coef_a)

    @property
    def coef_b(self):
        return np.where(self._sensitive, self._coef_b_s, 0.0)

    def likelihood(self, codes):
        codes = np.asarray(codes)
        S = self._sensitive
        report_sensitive = S[codes]
        # A sensitive report y is produced by every input: w.p. c1 by y itself
        # and c2 by any other input, sensitive or not (Murakami & Kawamoto 2019, Def. 4); a
        # non-sensitive report only by itself, w.p. c3.
        L = np.where(report_sensitive[:, None], self.c2, np.zeros(S.size))
        L[np.arange(codes.size), codes] = np.where(report_sensitive, self.c1, self.c3)
        return L

    def sample(self, codes, rng):
        """Privatize coded inputs: one keep/move draw, one uniform target draw.

        k-RR (every category sensitive) takes both from one float64 uniform
        per user, exact to float64 resolution (see
        :func:`~sklearn_uldp.utils._sampling.randomized_response_codes`).
        Otherwise moves are drawn for every user and selected with
        ``np.where`` rather than by boolean-mask gathers, which keeps the hot
        path at a few vectorized passes over n. The two draws are independent.
        """
        codes = np.asarray(codes)
        n = codes.size
        k = self.n_categories
        S_codes = self._sensitive_codes
        s = S_codes.size
        if s == k:  # k-RR: move to one of the k - 1 other values
            # Output codes of the narrowest type that holds them (a uint8
            # code a user for k <= 256 instead of 8 bytes), in a report
            # array mapped without huge-page requests: at 2e7 users the
            # intp codes were 160 MB a column of fresh memory.
            out = report_array(n, narrow_code_dtype(k))
            return randomized_response_codes(codes, k, self.c1, rng, out=out)
        codes = codes.astype(np.intp, copy=False)
        rank = np.full(k, -1, dtype=np.intp)
        rank[S_codes] = np.arange(s)
        is_s = self._sensitive[codes]
        keep = rng.random(n) < np.where(is_s, self.c1, self.c3)
        # Sensitive inputs move to one of the s - 1 *other* sensitive values (a
        # shift by 1..s-1 modulo s, exactly uniform); non-sensitive inputs to
        # one of all s sensitive values. (With s = 1 a sensitive input is
        # always kept: c1 = 1.)
        draw = rng.integers(0, s, size=n)  # target of a non-sensitive move
        if s > 1:
            # rank is -1 for non-sensitive inputs: their value is unused.
            shifted = rank[codes] + rng.integers(1, s, size=n)
            shifted = np.where(shifted >= s, shifted - s, shifted)
        else:
            shifted = np.zeros(n, dtype=np.intp)
        target = np.where(is_s, S_codes[shifted], S_codes[draw])
        return np.where(keep, codes, target)


class RandomizedResponseChannel(UtilityOptimizedRRChannel):
    """Channel of k-ary randomized response, epsilon-RR (Kairouz et al. 2016).

    Keeps the value w.p. e^eps/(k - 1 + e^eps), otherwise reports one of the
    k - 1 other values uniformly. It is uRR with every category sensitive.

    Examples
    --------
    >>> from sklearn_uldp.mechanisms import RandomizedResponseChannel
    >>> channel = RandomizedResponseChannel(["a", "b", "c"], epsilon=1.0)
    >>> channel.matrix().round(3).tolist()
    [[0.576, 0.212, 0.212], [0.212, 0.576, 0.212], [0.212, 0.212, 0.576]]
    >>> round(channel.report_bits, 3)
    1.585
    """

    name = "rr"
    _spec_field_schemas = CategoricalChannel._spec_field_schemas

    def __init__(self, categories: ArrayLike, epsilon: float) -> None:
        cats = check_channel_categories(categories)
        super().__init__(cats, epsilon, np.ones(len(cats), dtype=bool))

    @property
    def exact_categories(self):
        return np.zeros(self.n_categories, dtype=bool)

    def get_params(self):
        return {"epsilon": self.epsilon}


class IdentityChannel(_LabelledOutputsChannel):
    """The identity channel (no privacy): y = x.

    Examples
    --------
    >>> from sklearn_uldp.mechanisms import IdentityChannel
    >>> channel = IdentityChannel(["a", "b"])
    >>> channel.matrix().tolist(), channel.epsilon
    ([[1.0, 0.0], [0.0, 1.0]], inf)
    """

    name = "identity"
    _spec_field_schemas = {}

    def __init__(self, categories: ArrayLike) -> None:
        # No budget to validate: the identity spends an infinite one.
        self.categories = check_channel_categories(categories)
        self.epsilon = np.inf

    @property
    def exact_categories(self):
        return np.ones(self.n_categories, dtype=bool)

    def null_variance(self, n, stats=None):
        """0 for every category: the identity's estimate is exact."""
        return np.zeros(self.n_categories)

    def get_params(self):
        return {}

    @property
    def sensitive_mask(self):
        return np.zeros(self.n_categories, dtype=bool)

    def protected_outputs(self):
        return np.zeros(self.n_categories, dtype=bool)

    def forward(self, p):
        return np.asarray(p, dtype=float).copy()

    def adjoint(self, v):
        return np.asarray(v, dtype=float).copy()

    def expected_frequency(self, p):
        return self.forward(p)

    @property
    def coef_a(self):
        return np.ones(self.n_categories)

    @property
    def coef_b(self):
        return np.zeros(self.n_categories)

    def likelihood(self, codes):
        codes = np.asarray(codes)
        L = np.zeros((codes.size, self.n_categories))
        L[np.arange(codes.size), codes] = 1.0
        return L

    def sample(self, codes, rng):
        return np.asarray(codes, dtype=np.intp).copy()


# ---------------------------------------------------------------- mechanisms
class RandomizedResponse(_BudgetMechanism):
    """k-ary randomized response (epsilon-RR), an epsilon-LDP mechanism.

    Each user reports the true value with probability
    ``e^eps / (k - 1 + e^eps)`` and otherwise one of the ``k - 1`` other
    values uniformly at random (Kairouz et al. 2016).

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy budget (> 0); smaller is more private.
    categories : "auto" or array-like of shape (k,), default="auto"
        The public domain. ``"auto"`` learns it from the data in ``fit`` and
        warns with :class:`~sklearn_uldp.exceptions.PrivacyLeakWarning`.
    random_state : None, "secure", int, Generator, SeedSequence or RandomState, default=None
        ``None`` draws OS entropy; an int makes runs reproducible.

    Attributes
    ----------
    categories_ : ndarray of shape (k,)
        The domain, in the order of every per-category array.
    channel_ : RandomizedResponseChannel
        The public spec: all a collector needs to estimate.
    n_features_in_ : int
        Always 1.
    feature_names_in_ : ndarray of shape (1,)
        Input column name, when fitted on a DataFrame.

    See Also
    --------
    UtilityOptimizedRR : keeps non-sensitive values accurate.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp import RandomizedResponse
    >>> X = np.array([["a"], ["b"], ["c"], ["a"]], dtype=object)
    >>> mech = RandomizedResponse(epsilon=2.0, categories=["a", "b", "c"],
    ...                           random_state=0).fit(X)
    >>> reports = mech.transform(X)
    >>> reports.shape
    (4, 1)
    >>> mech.channel_matrix().round(3)
    array([[0.787, 0.107, 0.107],
           [0.107, 0.787, 0.107],
           [0.107, 0.107, 0.787]])
    """

    def _make_channel(self):
        return RandomizedResponseChannel(self.categories_, self.epsilon)

    def _encode(self, column):
        """Codes of the narrowest unsigned type that holds k (k-RR's sampler
        takes them as they are): an integer column of a run of integer
        categories ``lo .. lo + k - 1`` is checked and shifted in one go, as
        the generic encoder does, without its 8-byte codes."""
        k = len(self.categories_)
        cats = self.categories_
        if (
            column.dtype.kind in "iu"
            and cats.dtype.kind in "iu"
            and 2 <= k <= 1 << 16
            and column.size
            and int(cats[-1]) - int(cats[0]) == k - 1
            and bool((np.diff(cats) == 1).all())
        ):
            lo = int(cats[0])
            if int(column.min()) >= lo and int(column.max()) < lo + k:
                if lo == 0:
                    return column.astype(narrow_code_dtype(k))
                out = np.empty(column.shape, dtype=narrow_code_dtype(k))
                return np.subtract(column, lo, out=out, casting="unsafe")
        return super()._encode(column)


@fill_mechanism_doc
class UtilityOptimizedRR(SensitiveSetMechanism):
    """Utility-optimized randomized response, (X_S, epsilon)-uRR.

    Provides (X_S, X_S, epsilon)-ULDP (Murakami & Kawamoto 2019, Def. 4):
    sensitive values get epsilon-LDP protection among themselves, while a
    non-sensitive value is either reported as itself (then it is released, as
    non-sensitive data may be) or hidden among the sensitive values. With
    u = s + e^eps - 1 (s = number of sensitive categories), a sensitive x is
    kept w.p. e^eps/u, a non-sensitive x w.p. (e^eps - 1)/u; every other move
    goes to a sensitive value with probability 1/u each (Murakami & Kawamoto 2019, Def. 4).

    Parameters
    ----------
    %(epsilon)s
    sensitive : array-like, boolean mask or callable
        The sensitive categories X_S: a list of values, a boolean mask aligned
        with ``categories``, or a predicate ``f(category) -> bool``. Must be
        non-empty (an empty X_S releases the raw data: use :class:`NonPrivate`).
    categories : "auto" or array-like of shape (k,), default="auto"
        The public domain (see :class:`RandomizedResponse`).
    %(random_state)s

    Attributes
    ----------
    %(fitted_domain_sensitive)s
        Which categories are sensitive.
    channel_ : UtilityOptimizedRRChannel
        The public spec.
    %(fitted_input)s

    See Also
    --------
    UtilityOptimizedRAPPOR : order-optimal in the high-privacy regime.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp import UtilityOptimizedRR
    >>> mech = UtilityOptimizedRR(epsilon=1.0, sensitive=["divorced"],
    ...     categories=["married", "single", "divorced"], random_state=0)
    >>> X = np.array([["married"], ["divorced"]], dtype=object)
    >>> mech.fit_transform(X).shape
    (2, 1)
    >>> mech.channel_matrix().round(3)   # rows: true value, columns: report
    array([[0.632, 0.   , 0.368],
           [0.   , 0.632, 0.368],
           [0.   , 0.   , 1.   ]])
    """

    def _make_channel(self):
        self.sensitive_mask_ = check_sensitive(self.sensitive, self.categories_)
        _warn_if_like_rr(self.sensitive_mask_, self.epsilon)
        return UtilityOptimizedRRChannel(self.categories_, self.epsilon, self.sensitive_mask_)


#: Below this probability of passing a non-sensitive value through, with most
#: of the domain sensitive, uRR is RR with extra steps: say so.
_PASS_THROUGH_WARNING = 0.05


def _warn_if_like_rr(mask, epsilon):
    """Warn when most categories are sensitive and uRR barely passes a
    non-sensitive value through (it then behaves like k-RR)."""
    k, s = mask.size, int(mask.sum())
    if s <= k / 2 or s == k:
        return
    e = float(np.exp(min(float(epsilon), 700.0)))
    keep = (e - 1.0) / (s + e - 1.0)
    if keep >= _PASS_THROUGH_WARNING:
        return
    rr_keep = e / (k - 1.0 + e)
    warnings.warn(
        f"{s} of the {k} categories are sensitive: uRR passes a non-sensitive "
        f"value through with probability {keep:.1%} at epsilon={epsilon:g}, so it "
        f"behaves almost like RandomizedResponse (which reports the true value "
        f"with probability {rr_keep:.1%}). Declare only the values that are "
        "sensitive, or raise epsilon.",
        UserWarning,
        stacklevel=4,
    )


@fill_mechanism_doc
class NonPrivate(BaseMechanism):
    """The identity mechanism: reports the true value (no privacy).

    The no-privacy baseline of every comparison; it spends an infinite budget.

    Parameters
    ----------
    categories : "auto" or array-like of shape (k,), default="auto"
        The domain.

    Attributes
    ----------
    categories_ : ndarray of shape (k,)
    channel_ : IdentityChannel
    %(fitted_input)s

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp import NonPrivate
    >>> X = np.array([[1], [2], [2]])
    >>> NonPrivate(categories=[1, 2]).fit_transform(X).ravel().tolist()
    [1, 2, 2]
    """

    _parameter_constraints = {"categories": [StrOptions({"auto"}), "array-like"]}

    def __init__(self, *, categories: Categories = "auto") -> None:
        self.categories = categories

    random_state = None  # the identity draws no randomness

    def _make_channel(self):
        return IdentityChannel(self.categories_)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = False
        return tags
