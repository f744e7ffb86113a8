"""Helpers the learners share: random streams, label channels, the two corrections.

The corrections are written once here, for a matrix of likelihoods, and used
by :class:`~sklearn_uldp.learning.LabelPrivacyClassifier` (labels) and
:class:`~sklearn_uldp.learning.PrivatizedGroupReweighter` (a sensitive
attribute):

* :func:`posterior_weights`: ``W[i, c] = P(true = c | report_i)``, from the
  channel's likelihood ``L[i, c] = Q(report_i | c)`` and a prior (one per
  row, or one for all rows), by Bayes' rule;
* :func:`invert_on_simplex`: the distribution ``p`` of true values whose
  image through the channel, ``p Q``, is closest (in Kullback-Leibler
  divergence) to a distribution ``m`` of reports; row by row, vectorized.

``docs/learning.md`` derives both.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import pandas as pd
from sklearn.base import clone
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import column_or_1d

from ..exceptions import ReportMismatchError
from ..mechanisms import Channel, RandomizedResponse, as_channel, get_channel
from ..utils._random import check_seed_sequence, is_fresh, spawn_generators
from ..utils._validation import is_missing

__all__ = [
    "sub_random_states",
    "sub_generators",
    "posterior_weights",
    "invert_on_simplex",
    "check_labels",
    "privatized_codes",
    "Privatized",
]

#: EM steps and tolerance of :func:`invert_on_simplex` for rows whose exact
#: inverse falls outside the simplex (a few rows; each step is O(k n_outputs)).
_INVERT_MAX_ITER = 2000
_INVERT_TOL = 1e-10


def sub_random_states(random_state: Any, n: int) -> list[Any]:
    """``n`` independent ``random_state`` values for the mechanisms a learner runs.

    ``None`` and ``"secure"`` are passed on as they are (each mechanism then
    draws fresh OS entropy at every call, and nothing is stored); a seed is
    split with ``SeedSequence.spawn`` into ``n`` children, one per mechanism
    (label, stage, batch of users), so no two share a stream.
    """
    if is_fresh(random_state):
        return [random_state] * n
    return list(check_seed_sequence(random_state).spawn(n))


def sub_generators(random_state: Any, n: int) -> list[np.random.Generator]:
    """``n`` independent generators (fresh entropy for ``None``/``"secure"``)."""
    return spawn_generators(random_state, n)


def posterior_weights(likelihood: np.ndarray, prior: np.ndarray) -> np.ndarray:
    """``P(true = c | report_i)`` for every report and category (rows sum to 1).

    Parameters
    ----------
    likelihood : ndarray of shape (n, k)
        ``Q(report_i | c)`` (up to a positive factor per row).
    prior : ndarray of shape (k,) or (n, k)
        The prior of the true value, for all rows or one per row.

    Returns
    -------
    weights : ndarray of shape (n, k)

    Notes
    -----
    A row whose reports are impossible under its prior (zero mass on every
    category that can produce it) falls back to a uniform prior, as
    :meth:`~sklearn_uldp.estimators.DistributionEstimator.predict_proba` does.
    """
    L = np.asarray(likelihood, dtype=float)
    post = L * np.asarray(prior, dtype=float)
    total = post.sum(axis=1, keepdims=True)
    empty = total[:, 0] <= 0
    if empty.any():
        post[empty] = L[empty]
        total[empty] = L[empty].sum(axis=1, keepdims=True)
    return post / total


def invert_on_simplex(report_probabilities: np.ndarray, Q: np.ndarray) -> np.ndarray:
    """The distributions of true values that best explain distributions of reports.

    For each row ``m`` (a distribution over the channel's outputs) this
    returns ``argmax_{p in simplex} sum_y m(y) log (p Q)(y)``, the
    maximum-likelihood (minimum Kullback-Leibler) inverse of the channel. When
    ``Q`` is square and invertible and the exact inverse ``m Q^{-1}`` lies in
    the simplex it is that inverse (``p Q = m`` exactly); the other rows are
    solved by EM (``p <- p * ((m / (p Q)) Q^T)``, each step increasing the
    likelihood), started from the exact inverse clipped to the simplex or
    from the uniform distribution.

    Parameters
    ----------
    report_probabilities : ndarray of shape (n, n_outputs)
        Rows sum to 1.
    Q : ndarray of shape (k, n_outputs)
        The channel matrix ``Q[c, y] = Q(y | c)`` (rows sum to 1).

    Returns
    -------
    p : ndarray of shape (n, k)
        Rows on the simplex.
    """
    M = np.asarray(report_probabilities, dtype=float)
    Q = np.asarray(Q, dtype=float)
    n, k = M.shape[0], Q.shape[0]
    p = np.full((n, k), 1.0 / k)
    todo = np.ones(n, dtype=bool)
    if Q.shape[0] == Q.shape[1]:
        try:
            exact = np.linalg.solve(Q.T, M.T).T  # p Q = m
        except np.linalg.LinAlgError:
            exact = None
        if exact is not None:
            inside = np.all(exact >= 0.0, axis=1) & np.isfinite(exact).all(axis=1)
            p[inside] = exact[inside] / exact[inside].sum(axis=1, keepdims=True)
            start = np.clip(np.nan_to_num(exact[~inside]), 1e-6, None)
            p[~inside] = start / start.sum(axis=1, keepdims=True)
            todo = ~inside
    if todo.any():
        p[todo] = _em_inverse(M[todo], Q, p[todo])
    return p


def _em_inverse(M, Q, p):
    """EM towards the maximum-likelihood inverse, all rows at once."""
    p = np.clip(p, 1e-12, None)
    p /= p.sum(axis=1, keepdims=True)
    for _ in range(_INVERT_MAX_ITER):
        m = p @ Q
        ratio = np.divide(M, m, out=np.zeros_like(M), where=m > 0)
        g = ratio @ Q.T  # the gradient of the log-likelihood; max(g) - 1 bounds the gap
        p = p * g
        p /= p.sum(axis=1, keepdims=True)
        if float(np.max(g.max(axis=1) - 1.0)) <= _INVERT_TOL:
            break
    return p


# ------------------------------------------------- one privatized column
class Privatized(NamedTuple):
    """The reports of one categorical column, as the corrections read them."""

    channel: Any
    codes: np.ndarray
    epsilon_spent: float


def check_labels(y: Any, n: int, what: str = "y") -> np.ndarray:
    """A 1-D array of ``n`` labels, none missing (counted, never shown)."""
    y = column_or_1d(y, warn=True)
    if y.dtype == object and pd.api.types.infer_dtype(y, skipna=True) in ("integer", "boolean"):
        y = np.asarray(y.tolist())  # numbers held as objects: their own dtype
    if y.shape[0] != n:
        raise ValueError(f"X has {n} rows but {what} has {y.shape[0]} values.")
    missing = is_missing(y)
    if missing.any():
        raise ValueError(
            f"{what} has {int(missing.sum())} missing values (NaN/None): every user "
            "reports a value. Drop those rows first."
        )
    check_classification_targets(y)
    if np.unique(y).size < 2:
        raise ValueError(
            f"{what} has 1 class (one value for every row): a privatized column needs "
            "at least two values, and a classifier two labels."
        )
    return y


def _n_rows(values):
    shape = getattr(values, "shape", None)
    return int(shape[0]) if shape is not None else len(values)


def privatized_codes(
    values: Any, n: int, mechanism: Any, epsilon: float, random_state: Any, *, what: str
) -> Privatized:
    """The report codes of a column: reports given, or the users' reports of ``values``.

    * ``values`` carry a channel (a mechanism's output), or ``mechanism`` is
      a channel or spec dict: ``values`` are reports of that channel (both
      must agree when both are there);
    * otherwise ``values`` are true values, privatized here as the users
      would: by ``mechanism`` (cloned, given ``epsilon`` and, for
      ``categories="auto"``, the values' classes) or by k-RR at ``epsilon``
      over the values' classes.
    """
    carried = get_channel(values)
    given = as_channel(mechanism) if isinstance(mechanism, (Channel, dict)) else None
    channel = carried if carried is not None else given
    if channel is not None:
        if given is not None and carried is not None and given != carried:
            raise ReportMismatchError(
                f"The {what} reports come from {carried!r}, but `mechanism` describes "
                f"{given!r} (differences: {', '.join(carried.describe_difference(given))})."
            )
        if not channel.has_categories:
            raise ReportMismatchError(
                f"{channel!r} does not report categories (numbers, or rows of several "
                f"columns); {what} reports come from a categorical mechanism "
                "(RandomizedResponse, UtilityOptimizedRR, ...)."
            )
        codes = channel.encode_reports(values)
        if _n_rows(codes) != n:
            raise ValueError(
                f"X has {n} rows but there are {_n_rows(codes)} {what} reports: one "
                "report per row of X."
            )
        return Privatized(channel, codes, float(channel.epsilon))
    labels = check_labels(values, n, what)
    (state,) = sub_random_states(random_state, 1)
    if mechanism is None:
        mech = RandomizedResponse(
            epsilon=epsilon, categories=list(np.unique(labels)), random_state=state
        )
    else:
        mech = clone(mechanism)
        params = mech.get_params(deep=False)
        update: dict[str, Any] = {"random_state": state}
        if "epsilon" in params:
            update["epsilon"] = epsilon
        if isinstance(params.get("categories"), str):
            update["categories"] = list(np.unique(labels))
        mech.set_params(**update)
    reports = mech.fit_transform(labels.reshape(-1, 1))
    channel = mech.channel_
    return Privatized(channel, channel.encode_reports(reports), float(mech.epsilon_spent_))
