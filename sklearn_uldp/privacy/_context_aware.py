"""Context-aware local differential privacy: privacy matrices and their check.

A *privacy matrix* E (Acharya, Bonawitz, Kairouz, Ramage & Sun, "Context-Aware
Local Differential Privacy", ICML 2020, Def. 2) gives every ordered
pair of inputs its own budget: a channel Q is E-LDP when
``Q(y|x) <= exp(E[x, x']) Q(y|x')`` for all inputs x, x' and outputs y.
Entries may be ``+inf`` (no constraint). Special cases:

* epsilon-LDP: every entry is epsilon (:meth:`PrivacyMatrix.ldp`);
* (A, epsilon)-high-low LDP (HLLDP), the *one-sided* notion: row x is epsilon
  when x is sensitive (in A) and ``+inf`` otherwise
  (:meth:`PrivacyMatrix.high_low`). It is the same set of inequalities as
  (X_S, epsilon)-OSLDP;
* (P, epsilon)-block-structured LDP (BSLDP): epsilon inside a block of the
  partition P, ``+inf`` across blocks (:meth:`PrivacyMatrix.block_structured`).

ULDP (Murakami & Kawamoto 2019) is not an E-matrix notion (it also restricts
which outputs may be invertible), but it sits between the two extremes:
epsilon-LDP implies (X_S, Y_P, epsilon)-ULDP, which implies (X_S,
epsilon)-OSLDP = (X_S, epsilon)-HLLDP. :func:`privacy_profile` runs the three
checks side by side so that this ordering can be seen on any
mechanism.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..utils._docstrings import fill_doc
from ..utils._typing import ArrayLike
from ..utils._validation import resolve_blocks
from ._checks import (
    _ATOL,
    _CHECK_DOCS,
    _RTOL,
    PrivacyCheck,
    as_channel_matrix,
    check_ldp,
    check_osldp,
    check_uldp,
)

if TYPE_CHECKING:
    from ..mechanisms._base import BaseMechanism
    from ..mechanisms._channel import Channel

#: Docstring fragments of the privacy matrices' builders.
_DOCS = {
    "categories": """
        Parameters
        ----------
        categories : array-like of shape (k,)
        """,
    "epsilon_returns": """
        epsilon : float

        Returns
        -------
        E : PrivacyMatrix
        """,
}

__all__ = [
    "PrivacyMatrix",
    "ContextAwareCheck",
    "ldp",
    "high_low",
    "block_structured",
    "check_context_aware",
    "pairwise_log_ratio",
    "privacy_profile",
]


def _as_categories(categories):
    cats = np.asarray(categories, dtype=object).ravel()
    if cats.size < 1:
        raise ValueError("categories must hold at least one value.")
    if not pd.Index(cats).is_unique:
        raise ValueError("categories contain duplicates.")
    return np.asarray(categories).ravel()


class PrivacyMatrix:
    """A context-aware privacy matrix E over a domain (Acharya et al. 2020).

    ``E[x, x']`` bounds ``log Q(y|x) - log Q(y|x')`` for every output y.
    Entries are non-negative and may be ``+inf`` (no constraint between the
    pair). The diagonal is irrelevant (set to 0).

    Parameters
    ----------
    matrix : array-like of shape (k, k)
        The budgets; rows index x (the input whose output probability may be
        at most ``exp(E[x, x'])`` times larger), columns index x'.
    categories : array-like of shape (k,), default=None
        The domain, in the order of the rows; defaults to ``0..k-1``.
    kind : str, default="general"
        A label for display ("LDP", "HLLDP", "BSLDP" or "general").

    Attributes
    ----------
    matrix : ndarray of shape (k, k)
    categories : ndarray of shape (k,)
    kind : str

    See Also
    --------
    check_context_aware : verify a mechanism against a privacy matrix.

    Examples
    --------
    >>> from sklearn_uldp.privacy import PrivacyMatrix
    >>> E = PrivacyMatrix([[0, 1.0], [float("inf"), 0]], categories=["yes", "no"])
    >>> E
    PrivacyMatrix(kind='general', k=2)
    >>> E.epsilon("yes", "no"), E.epsilon("no", "yes")
    (1.0, inf)
    >>> E.is_symmetric()
    False
    """

    def __init__(
        self, matrix: ArrayLike, categories: ArrayLike | None = None, *, kind: str = "general"
    ) -> None:
        M = np.array(matrix, dtype=float)
        if M.ndim != 2 or M.shape[0] != M.shape[1]:
            raise ValueError(f"A privacy matrix is square (k x k), got shape {M.shape}.")
        if np.isnan(M).any() or (M < 0).any():
            raise ValueError("Privacy budgets must be non-negative (inf allowed), not NaN.")
        np.fill_diagonal(M, 0.0)
        self.matrix = M
        k = M.shape[0]
        self.categories = np.arange(k) if categories is None else _as_categories(categories)
        if len(self.categories) != k:
            raise ValueError(f"{len(self.categories)} categories for a {k} x {k} privacy matrix.")
        self.kind = kind

    @property
    def n_categories(self) -> int:
        """Size k of the domain."""
        return self.matrix.shape[0]

    def __repr__(self):
        return f"PrivacyMatrix(kind={self.kind!r}, k={self.n_categories})"

    def _pos(self, value):
        index = pd.Index(np.asarray(self.categories, dtype=object))
        pos = index.get_indexer([value])[0]
        if pos < 0:
            raise KeyError(f"{value!r} is not a category.")
        return pos

    def epsilon(self, x: Any, x_prime: Any) -> float:
        """The budget E[x, x'] between two categories (by value).

        Parameters
        ----------
        x, x_prime : category values

        Returns
        -------
        epsilon : float
        """
        return float(self.matrix[self._pos(x), self._pos(x_prime)])

    def is_symmetric(self) -> bool:
        """Whether E[x, x'] == E[x', x] for every pair.

        Returns
        -------
        symmetric : bool
        """
        return bool(np.array_equal(self.matrix, self.matrix.T))

    def compose(self, other: PrivacyMatrix) -> PrivacyMatrix:
        """Sequential composition: E1 + E2 (Acharya et al., Prop. 2).

        Parameters
        ----------
        other : PrivacyMatrix
            Over the same categories.

        Returns
        -------
        composed : PrivacyMatrix
        """
        if other.n_categories != self.n_categories:
            raise ValueError("Cannot compose privacy matrices over different domains.")
        return PrivacyMatrix(self.matrix + other.matrix, self.categories)

    def to_dataframe(self) -> pd.DataFrame:
        """The matrix as a labelled DataFrame (rows x, columns x').

        Returns
        -------
        frame : pandas.DataFrame
        """
        return pd.DataFrame(self.matrix, index=self.categories, columns=self.categories)

    # ------------------------------------------------------------ builders
    @classmethod
    @fill_doc(_DOCS)
    def ldp(cls, categories: ArrayLike, epsilon: float) -> PrivacyMatrix:
        """Plain epsilon-LDP: every off-diagonal entry is epsilon.

        %(categories)s
        %(epsilon_returns)s

        Examples
        --------
        >>> from sklearn_uldp.privacy import PrivacyMatrix
        >>> PrivacyMatrix.ldp([0, 1, 2], 1.0).matrix
        array([[0., 1., 1.],
               [1., 0., 1.],
               [1., 1., 0.]])
        """
        cats = _as_categories(categories)
        return cls(np.full((cats.size, cats.size), float(epsilon)), cats, kind="LDP")

    @classmethod
    @fill_doc(_DOCS)
    def high_low(cls, categories: ArrayLike, sensitive: ArrayLike, epsilon: float) -> PrivacyMatrix:
        """(A, epsilon)-high-low LDP: E[x, x'] = epsilon if x in A else inf.

        This is the one-sided notion: it equals (X_S, epsilon)-OSLDP with
        X_S = A (Acharya et al., Def. 3).

        %(categories)s
        sensitive : array-like of categories, boolean mask or callable
            The sensitive set A.
        %(epsilon_returns)s

        Examples
        --------
        >>> from sklearn_uldp.privacy import PrivacyMatrix
        >>> PrivacyMatrix.high_low(["a", "b", "c"], ["a"], 1.0).matrix
        array([[ 0.,  1.,  1.],
               [inf,  0., inf],
               [inf, inf,  0.]])
        """
        from ..utils._validation import check_sensitive

        cats = _as_categories(categories)
        mask = check_sensitive(sensitive, cats)
        M = np.where(mask[:, None], float(epsilon), np.inf) * np.ones(cats.size)
        return cls(M, cats, kind="HLLDP")

    @classmethod
    @fill_doc(_DOCS)
    def block_structured(
        cls,
        categories: ArrayLike,
        blocks: Mapping[Any, Any] | ArrayLike | Callable[[Any], Any],
        epsilon: float,
    ) -> PrivacyMatrix:
        """(P, epsilon)-block-structured LDP: epsilon within a block, inf across.

        %(categories)s
        blocks : mapping, list of lists, array-like or callable
            The partition P: ``{category: block_label}``, a list of lists of
            categories, block labels aligned with ``categories``, or a callable
            ``f(category) -> block_label``.
        %(epsilon_returns)s

        Examples
        --------
        >>> from sklearn_uldp.privacy import PrivacyMatrix
        >>> PrivacyMatrix.block_structured([0, 1, 2], [[0, 1], [2]], 1.0).matrix
        array([[ 0.,  1., inf],
               [ 1.,  0., inf],
               [inf, inf,  0.]])
        """
        cats = _as_categories(categories)
        ids = resolve_blocks(blocks, cats)
        M = np.where(ids[:, None] == ids[None, :], float(epsilon), np.inf)
        return cls(M, cats, kind="BSLDP")


@fill_doc(_DOCS)
def ldp(categories: ArrayLike, epsilon: float) -> PrivacyMatrix:
    """Privacy matrix of plain epsilon-LDP (see :meth:`PrivacyMatrix.ldp`).

    %(categories)s
    %(epsilon_returns)s

    Examples
    --------
    >>> from sklearn_uldp.privacy import ldp
    >>> ldp(["a", "b"], 0.5).kind
    'LDP'
    """
    return PrivacyMatrix.ldp(categories, epsilon)


@fill_doc(_DOCS)
def high_low(categories: ArrayLike, sensitive: ArrayLike, epsilon: float) -> PrivacyMatrix:
    """Privacy matrix of (A, epsilon)-HLLDP (see :meth:`PrivacyMatrix.high_low`).

    %(categories)s
    sensitive : array-like of categories, boolean mask or callable
    %(epsilon_returns)s

    Examples
    --------
    >>> from sklearn_uldp.privacy import high_low
    >>> high_low(["a", "b"], ["a"], 1.0).epsilon("b", "a")
    inf
    """
    return PrivacyMatrix.high_low(categories, sensitive, epsilon)


@fill_doc(_DOCS)
def block_structured(
    categories: ArrayLike,
    blocks: Mapping[Any, Any] | ArrayLike | Callable[[Any], Any],
    epsilon: float,
) -> PrivacyMatrix:
    """Privacy matrix of (P, epsilon)-BSLDP (:meth:`PrivacyMatrix.block_structured`).

    %(categories)s
    blocks : mapping, list of lists, array-like or callable
    %(epsilon_returns)s

    Examples
    --------
    >>> from sklearn_uldp.privacy import block_structured
    >>> E = block_structured(["a", "b", "c"], {"a": 0, "b": 0, "c": 1}, 2.0)
    >>> E.epsilon("a", "b"), E.epsilon("a", "c")
    (2.0, inf)
    """
    return PrivacyMatrix.block_structured(categories, blocks, epsilon)


@dataclass(frozen=True)
class ContextAwareCheck:
    """Outcome of :func:`check_context_aware`.

    Attributes
    ----------
    satisfied : bool
        Whether every pair meets its budget (up to round-off).
    log_ratio : ndarray of shape (k, k)
        ``max_y log Q(y|x) - log Q(y|x')`` for every ordered pair (``inf``
        when an output of x is impossible under x').
    allowed : ndarray of shape (k, k)
        The privacy matrix E.
    excess : ndarray of shape (k, k)
        ``log_ratio - allowed`` (``-inf`` where the budget is infinite);
        positive entries are violations.
    worst_excess : float
        The largest off-diagonal excess.
    worst_pair : tuple of int
        ``(x, x')`` attaining it (row indices).
    categories : ndarray of shape (k,)
    reasons : list of str
        The violations, in words (empty when satisfied).

    Examples
    --------
    >>> from sklearn_uldp import RandomizedResponse
    >>> from sklearn_uldp.privacy import check_context_aware, ldp
    >>> mech = RandomizedResponse(epsilon=2.0, categories=[0, 1, 2]).fit()
    >>> check = check_context_aware(mech, ldp([0, 1, 2], 1.0))
    >>> bool(check), round(check.worst_excess, 3), len(check.reasons)
    (False, 1.0, 6)
    >>> check.reasons[0]
    'Q(y|0) / Q(y|1) reaches e^2 > e^1'
    """

    satisfied: bool
    log_ratio: np.ndarray = field(repr=False)
    allowed: np.ndarray = field(repr=False)
    excess: np.ndarray = field(repr=False)
    worst_excess: float = 0.0
    worst_pair: tuple | None = None
    categories: np.ndarray | None = field(default=None, repr=False)
    reasons: list = field(default_factory=list)

    def __bool__(self):
        return bool(self.satisfied)

    def to_dataframe(self) -> pd.DataFrame:
        """Per-pair report: log-ratio, allowed budget and excess.

        Returns
        -------
        frame : pandas.DataFrame
            One row per ordered pair (x != x').
        """
        k = self.log_ratio.shape[0]
        xs, xps = np.nonzero(~np.eye(k, dtype=bool))
        cats = self.categories if self.categories is not None else np.arange(k)
        return pd.DataFrame(
            {
                "x": cats[xs],
                "x_prime": cats[xps],
                "log_ratio": self.log_ratio[xs, xps],
                "allowed": self.allowed[xs, xps],
                "excess": self.excess[xs, xps],
            }
        )


def pairwise_log_ratio(Q: ArrayLike) -> np.ndarray:
    """``L[x, x'] = max_y log Q(y|x) - log Q(y|x')`` for a channel matrix.

    An output possible under x but impossible under x' gives ``+inf``; the
    diagonal is 0.

    Parameters
    ----------
    Q : array-like of shape (k, n_outputs)

    Returns
    -------
    L : ndarray of shape (k, k)

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp.privacy import pairwise_log_ratio
    >>> Q = np.array([[0.75, 0.25], [0.25, 0.75]])
    >>> bool(np.allclose(pairwise_log_ratio(Q), [[0, np.log(3)], [np.log(3), 0]]))
    True
    """
    Q = np.asarray(Q, dtype=float)
    k = Q.shape[0]
    with np.errstate(divide="ignore"):
        logQ = np.log(Q)
    L = np.empty((k, k))
    for x in range(k):  # k rows, each vectorized over (x', y)
        pos = Q[x] > 0
        if not pos.any():
            L[x] = -np.inf
            continue
        diff = logQ[x, pos][None, :] - logQ[:, pos]
        L[x] = diff.max(axis=1)
    np.fill_diagonal(L, 0.0)
    return L


def check_context_aware(
    mechanism: BaseMechanism | Channel | ArrayLike, E: PrivacyMatrix | ArrayLike
) -> ContextAwareCheck:
    """Check E-LDP (Acharya et al. 2020, Def. 2) on the exact channel.

    For every ordered pair (x, x') the worst log-ratio over outputs,
    ``max_y log Q(y|x) / Q(y|x')``, is compared with ``E[x, x']``.

    Parameters
    ----------
    mechanism : fitted mechanism, Channel or array-like of shape (k, n_outputs)
    E : PrivacyMatrix or array-like of shape (k, k)

    Returns
    -------
    check : ContextAwareCheck
        ``check.excess`` (log-ratio minus allowed, per pair) is positive
        exactly where the guarantee fails.

    Examples
    --------
    >>> from sklearn_uldp import UtilityOptimizedRR
    >>> from sklearn_uldp.privacy import check_context_aware, high_low, ldp
    >>> cats = ["a", "b", "c"]
    >>> mech = UtilityOptimizedRR(epsilon=1.0, sensitive=["a"], categories=cats).fit()
    >>> bool(check_context_aware(mech, high_low(cats, ["a"], 1.0)))
    True
    >>> check = check_context_aware(mech, ldp(cats, 1.0))
    >>> check.satisfied, check.worst_excess
    (False, inf)
    """
    Q = as_channel_matrix(mechanism)
    if isinstance(E, PrivacyMatrix):
        cats = E.categories
        allowed = E.matrix
    else:
        allowed = np.array(E, dtype=float)
        channel = getattr(mechanism, "channel_", mechanism)
        cats = getattr(channel, "categories", None)
    k = Q.shape[0]
    if allowed.shape != (k, k):
        raise ValueError(f"The privacy matrix is {allowed.shape}, but the channel has {k} inputs.")
    allowed = allowed.copy()
    np.fill_diagonal(allowed, 0.0)
    L = pairwise_log_ratio(Q)
    with np.errstate(invalid="ignore"):
        excess = np.where(np.isinf(allowed), -np.inf, L - allowed)
    np.fill_diagonal(excess, -np.inf)
    slack = _RTOL * np.where(np.isinf(allowed), 0.0, allowed) + _ATOL
    violated = excess > slack
    flat = int(np.argmax(excess)) if k > 1 else 0
    worst_pair = (flat // k, flat % k)
    worst = float(excess[worst_pair]) if k > 1 else -np.inf
    # Plain Python labels: np.str_('home') would print as such.
    labels = np.asarray(cats if cats is not None else np.arange(k)).tolist()
    reasons = [
        f"Q(y|{labels[x]!r}) / Q(y|{labels[xp]!r}) reaches e^{L[x, xp]:.4g} > "
        f"e^{allowed[x, xp]:.4g}"
        for x, xp in zip(*np.nonzero(violated), strict=True)
    ][:20]
    return ContextAwareCheck(
        bool(not violated.any()),
        L,
        allowed,
        excess,
        worst,
        worst_pair,
        None if cats is None else np.asarray(cats),
        reasons,
    )


@fill_doc(_CHECK_DOCS)
def privacy_profile(
    mechanism: BaseMechanism | Channel | ArrayLike,
    sensitive: ArrayLike | None = None,
    epsilon: float | None = None,
) -> dict[str, PrivacyCheck]:
    """Run the LDP, ULDP and OSLDP checks side by side.

    epsilon-LDP implies (X_S, Y_P, epsilon)-ULDP, which implies (X_S,
    epsilon)-OSLDP (= (X_S, epsilon)-HLLDP): the profile of a mechanism is
    monotone along that chain.

    Parameters
    ----------
    %(check_inputs)s

    Returns
    -------
    profile : dict
        ``{"LDP": PrivacyCheck, "ULDP": PrivacyCheck, "OSLDP": PrivacyCheck}``.

    Examples
    --------
    >>> from sklearn_uldp.privacy import privacy_profile
    %(fitted_urr)s
    >>> {name: bool(c) for name, c in privacy_profile(mech).items()}
    {'LDP': False, 'ULDP': True, 'OSLDP': True}
    """
    return {
        "LDP": check_ldp(mechanism, epsilon),
        "ULDP": check_uldp(mechanism, sensitive, epsilon),
        "OSLDP": check_osldp(mechanism, sensitive, epsilon),
    }
