"""Verification of privacy definitions on an exact channel matrix.

Every definition here is a set of pointwise inequalities
``Q(y|x) <= exp(bound) * Q(y|x')`` on the channel matrix (rows = inputs,
columns = outputs), so checking it exactly is a matter of finding, per output,
the largest log-ratio. A positive ``Q(y|x)`` against ``Q(y|x') = 0`` is an
infinite ratio and violates any finite bound.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..utils._docstrings import fill_doc
from ..utils._typing import ArrayLike
from ..utils._validation import EPSILON_RTOL

if TYPE_CHECKING:
    from ..mechanisms._base import BaseMechanism
    from ..mechanisms._channel import Channel

__all__ = [
    "PrivacyCheck",
    "as_channel_matrix",
    "invertible_outputs",
    "check_ldp",
    "check_uldp",
    "check_osldp",
]

#: Relative slack for floating-point round-off in the ratio checks: the one
#: the channels allow their float64 samplers (a realized channel's privacy
#: loss may exceed its epsilon by this relative amount, never more; see
#: :func:`~sklearn_uldp.utils._validation.check_realizable`).
_RTOL = EPSILON_RTOL
#: Absolute slack: the round-off of computing a log-ratio, nothing more.
_ATOL = 1e-12

#: Docstring fragments of the checks (and of ``privacy_profile``).
_CHECK_DOCS = {
    "check_inputs": """
        mechanism : fitted mechanism, Channel or array-like of shape (k, n_outputs)
        sensitive : array-like of bool of shape (k,) or of indices, default=None
            X_S; defaults to the mechanism's sensitive set.
        epsilon : float, default=None
            Defaults to the mechanism's budget.
        """,
    "returns_check": """
        Returns
        -------
        check : PrivacyCheck
        """,
    "fitted_urr": """
        >>> from sklearn_uldp import UtilityOptimizedRR
        >>> mech = UtilityOptimizedRR(epsilon=1.0, sensitive=[0],
        ...                           categories=[0, 1, 2]).fit()
        """,
}


@dataclass(frozen=True)
class PrivacyCheck:
    """Outcome of a privacy check.

    Attributes
    ----------
    definition : str
        Which definition was checked ("LDP", "ULDP", "OSLDP", ...).
    epsilon : float
        The budget checked against.
    satisfied : bool
        Whether every inequality holds (up to round-off).
    worst_log_ratio : float
        Largest ``log Q(y|x) - log Q(y|x')`` over the constrained triples
        (``inf`` when a zero probability faces a positive one).
    worst : tuple of int or None
        ``(y, x, x_prime)`` attaining it (column and row indices).
    invertible : ndarray of bool
        Outputs that reveal their input (exactly one input can produce them).
    reasons : list of str
        Human-readable violations, empty when satisfied.

    Examples
    --------
    >>> from sklearn_uldp import UtilityOptimizedRR
    >>> from sklearn_uldp.privacy import check_ldp, check_uldp
    >>> mech = UtilityOptimizedRR(epsilon=1.0, sensitive=[0], categories=[0, 1, 2]).fit()
    >>> check = check_uldp(mech)
    >>> check.definition, bool(check), check.reasons
    ('ULDP', True, [])
    >>> check_ldp(mech).satisfied  # the invertible outputs break plain LDP
    False
    """

    definition: str
    epsilon: float
    satisfied: bool
    worst_log_ratio: float
    worst: tuple | None = None
    invertible: np.ndarray | None = field(default=None, repr=False)
    reasons: list = field(default_factory=list)

    def __bool__(self):
        return bool(self.satisfied)


def as_channel_matrix(
    obj: BaseMechanism | Channel | ArrayLike, *, realized: bool = True
) -> np.ndarray:
    """Return the (k, n_outputs) channel matrix of a mechanism, channel or array.

    For a mechanism or channel this is the channel its sampler *realizes*
    (:meth:`Channel.realized_matrix
    <sklearn_uldp.mechanisms.Channel.realized_matrix>`): float64 uniforms
    realize each probability on a 2**-53 grid, so a probability within
    2**-53 of 1 is exactly 1 (e.g. a k-RR that keeps every value), and the
    checks must see that, not the formula.

    Parameters
    ----------
    obj : fitted mechanism, Channel or array-like of shape (k, n_outputs)
    realized : bool, default=True
        False for the nominal matrix (:meth:`Channel.matrix
        <sklearn_uldp.mechanisms.Channel.matrix>`) instead.

    Returns
    -------
    Q : ndarray of shape (k, n_outputs)

    Examples
    --------
    >>> from sklearn_uldp import RandomizedResponse
    >>> from sklearn_uldp.privacy import as_channel_matrix
    >>> mech = RandomizedResponse(epsilon=1.0, categories=[0, 1]).fit()
    >>> as_channel_matrix(mech).round(3).tolist()
    [[0.731, 0.269], [0.269, 0.731]]
    """
    # Duck-typed: anything with a channel_, a channel, or a matrix.
    source: Any = getattr(obj, "channel_", obj)
    if realized and callable(getattr(source, "realized_matrix", None)):
        Q = source.realized_matrix()
    elif hasattr(source, "matrix") and callable(source.matrix):
        Q = source.matrix()
    else:
        Q = np.asarray(source, dtype=float)
    if Q.ndim != 2:
        raise ValueError(f"A channel matrix is 2-D (inputs x outputs), got {Q.shape}.")
    if np.any(Q < 0) or not np.allclose(Q.sum(axis=1), 1.0, atol=1e-9):
        raise ValueError(
            "Not a channel: every row (input) must be a probability distribution "
            "over outputs (non-negative, summing to 1)."
        )
    return Q


def _epsilon_of(obj, epsilon):
    if epsilon is not None:
        return float(epsilon)
    channel = getattr(obj, "channel_", obj)
    if hasattr(channel, "epsilon"):
        return float(channel.epsilon)
    raise ValueError("Pass epsilon= when checking a bare matrix.")


def _sensitive_of(obj, sensitive, k):
    if sensitive is None:
        channel = getattr(obj, "channel_", obj)
        if hasattr(channel, "sensitive_mask"):
            return np.asarray(channel.sensitive_mask, dtype=bool)
        raise ValueError("Pass sensitive= (a boolean mask over inputs).")
    mask = np.asarray(sensitive)
    if mask.dtype != bool:
        idx = mask.astype(int)
        mask = np.zeros(k, dtype=bool)
        mask[idx] = True
    if mask.shape != (k,):
        raise ValueError(f"sensitive must be a mask of length {k}.")
    return mask


def invertible_outputs(Q: ArrayLike) -> np.ndarray:
    """Outputs with exactly one input of positive probability.

    Parameters
    ----------
    Q : array-like of shape (k, n_outputs)

    Returns
    -------
    mask : ndarray of bool of shape (n_outputs,)

    Examples
    --------
    >>> from sklearn_uldp.privacy import invertible_outputs
    >>> invertible_outputs([[0.5, 0.5, 0.0], [0.5, 0.0, 0.5]]).tolist()
    [False, True, True]
    """
    Q = np.asarray(Q)
    return (Q > 0).sum(axis=0) == 1


def _worst_ratio(Q, rows, cols):
    """Max over y in cols, x in rows, x' anywhere of log Q(y|x) / Q(y|x')."""
    if not cols.any() or not rows.any():
        return -np.inf, None
    sub = Q[:, cols]
    num = sub[rows].max(axis=0)
    den = sub.min(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(num > 0, np.log(num) - np.log(den), -np.inf)
    j = int(np.argmax(ratio))
    y = int(np.flatnonzero(cols)[j])
    x = int(np.flatnonzero(rows)[np.argmax(sub[rows, j])])
    x_prime = int(np.argmin(sub[:, j]))
    return float(ratio[j]), (y, x, x_prime)


def _within(worst, epsilon):
    return worst <= epsilon * (1.0 + _RTOL) + _ATOL


@fill_doc(_CHECK_DOCS)
def check_ldp(
    mechanism: BaseMechanism | Channel | ArrayLike, epsilon: float | None = None
) -> PrivacyCheck:
    """Check epsilon-LDP: Q(y|x) <= e^eps Q(y|x') for all x, x', y.

    A mechanism or channel is checked on the probabilities its sampler
    really uses (:func:`as_channel_matrix`).

    Parameters
    ----------
    mechanism : fitted mechanism, Channel or array-like of shape (k, n_outputs)
    epsilon : float, default=None
        Defaults to the mechanism's own budget.

    %(returns_check)s

    Examples
    --------
    >>> from sklearn_uldp import RandomizedResponse
    >>> from sklearn_uldp.privacy import check_ldp
    >>> mech = RandomizedResponse(epsilon=1.0, categories=[0, 1, 2]).fit()
    >>> check = check_ldp(mech)
    >>> check.satisfied, round(check.worst_log_ratio, 6)
    (True, 1.0)
    """
    Q = as_channel_matrix(mechanism)
    eps = _epsilon_of(mechanism, epsilon)
    rows = np.ones(Q.shape[0], dtype=bool)
    worst, where = _worst_ratio(Q, rows, np.ones(Q.shape[1], dtype=bool))
    ok = _within(worst, eps)
    reasons = (
        []
        if ok
        else [f"output {where[0]}: Q(y|{where[1]}) / Q(y|{where[2]}) = e^{worst:.4g} > e^{eps:.4g}"]
    )
    return PrivacyCheck("LDP", eps, ok, worst, where, invertible_outputs(Q), reasons)


@fill_doc(_CHECK_DOCS)
def check_uldp(
    mechanism: BaseMechanism | Channel | ArrayLike,
    sensitive: ArrayLike | None = None,
    epsilon: float | None = None,
    *,
    protected: ArrayLike | None = None,
) -> PrivacyCheck:
    """Check (X_S, Y_P, epsilon)-ULDP (Murakami & Kawamoto, Def. 2).

    A mechanism or channel is checked on the probabilities its sampler
    really uses (:func:`as_channel_matrix`).

    1. every invertible output (outside Y_P) has exactly one input with
       positive probability, and that input is non-sensitive;
    2. Q(y|x) <= e^eps Q(y|x') for all x, x' and every protected output y.

    Parameters
    ----------
    %(check_inputs)s
    protected : array-like of bool of shape (n_outputs,), default=None
        Y_P; defaults to the mechanism's declared protected outputs, or, for a
        bare matrix, to every output that is not invertible.

    %(returns_check)s
        ``invertible`` holds Y_I = Y \\ Y_P.

    Examples
    --------
    >>> from sklearn_uldp.privacy import check_uldp
    %(fitted_urr)s
    >>> check = check_uldp(mech)
    >>> check.satisfied, check.invertible.tolist()
    (True, [False, True, True])
    """
    Q = as_channel_matrix(mechanism)
    k = Q.shape[0]
    eps = _epsilon_of(mechanism, epsilon)
    S = _sensitive_of(mechanism, sensitive, k)
    if protected is None:
        channel = getattr(mechanism, "channel_", mechanism)
        if hasattr(channel, "protected_outputs"):
            protected = channel.protected_outputs()
        else:
            protected = ~invertible_outputs(Q)
    protected = np.asarray(protected, dtype=bool)
    invertible = ~protected
    reasons = []
    support = Q > 0
    # An output that no input can produce (e.g. a uRAP report with two
    # non-sensitive bits set) is outside the mechanism's range: it constrains
    # nothing, whichever side of the Y_P / Y_I split it is declared on.
    for y in np.flatnonzero(invertible & (support.sum(axis=0) > 1)):
        reasons.append(
            f"output {y} is declared invertible but {int(support[:, y].sum())} "
            "inputs can produce it"
        )
    leaky = invertible & support[S].any(axis=0)
    for y in np.flatnonzero(leaky):
        reasons.append(f"output {y} is invertible and reveals a sensitive input")
    worst, where = _worst_ratio(Q, np.ones(k, dtype=bool), protected)
    if not _within(worst, eps):
        reasons.append(
            f"protected output {where[0]}: Q(y|{where[1]}) / Q(y|{where[2]}) = "
            f"e^{worst:.4g} > e^{eps:.4g}"
        )
    return PrivacyCheck("ULDP", eps, not reasons, worst, where, invertible, reasons)


@fill_doc(_CHECK_DOCS)
def check_osldp(
    mechanism: BaseMechanism | Channel | ArrayLike,
    sensitive: ArrayLike | None = None,
    epsilon: float | None = None,
) -> PrivacyCheck:
    """Check (X_S, epsilon)-one-sided LDP: Q(y|x) <= e^eps Q(y|x') for x in X_S.

    ULDP implies OSLDP, and epsilon-LDP implies ULDP: OSLDP is the weakest.

    Parameters
    ----------
    %(check_inputs)s

    %(returns_check)s

    Examples
    --------
    >>> from sklearn_uldp.privacy import check_osldp
    %(fitted_urr)s
    >>> bool(check_osldp(mech))
    True
    """
    Q = as_channel_matrix(mechanism)
    eps = _epsilon_of(mechanism, epsilon)
    S = _sensitive_of(mechanism, sensitive, Q.shape[0])
    worst, where = _worst_ratio(Q, S, np.ones(Q.shape[1], dtype=bool))
    ok = _within(worst, eps)
    reasons = (
        []
        if ok
        else [
            f"output {where[0]}: Q(y|{where[1]}) / Q(y|{where[2]}) = e^{worst:.4g} "
            f"> e^{eps:.4g} for sensitive input {where[1]}"
        ]
    )
    return PrivacyCheck("OSLDP", eps, ok, worst, where, invertible_outputs(Q), reasons)
