"""The universally optimal binary mechanism under context-aware LDP.

References
----------
Acharya, Bonawitz, Kairouz, Ramage, Sun, "Context-Aware Local Differential
Privacy", ICML 2020, Theorem 2.
Warner, "Randomized response", JASA 1965.
Mangat, "An improved randomized response strategy", JRSS B 1994.
"""

from __future__ import annotations

import math
from numbers import Real

import numpy as np
from sklearn.utils._param_validation import Interval, Options

from ..utils._typing import ArrayLike, Categories, RandomStateLike
from ..utils._validation import (
    check_channel_categories,
    check_realizable,
    realized_probability,
)
from ._base import BaseMechanism
from ._docs import fill_mechanism_doc
from ._randomized_response import _LabelledOutputsChannel

__all__ = ["BinaryOptimalChannel", "BinaryOptimalResponse", "binary_optimal_matrix"]


def binary_optimal_matrix(epsilon_12: float, epsilon_21: float) -> np.ndarray:
    """Theorem 2's channel for budgets eps_12 and eps_21.

    With D = e^{eps_21} - e^{-eps_12}, rows = input (1, 2), columns = output::

        Q(1|1) = (e^{eps_21} - 1) / D
        Q(2|1) = (1 - e^{-eps_12}) / D
        Q(1|2) = e^{-eps_12} (e^{eps_21} - 1) / D
        Q(2|2) = e^{eps_21} (1 - e^{-eps_12}) / D

    so ``Q(y|1) <= e^{eps_12} Q(y|2)`` and ``Q(y|2) <= e^{eps_21} Q(y|1)``,
    both with equality. An infinite budget is allowed on one side.

    Parameters
    ----------
    epsilon_12, epsilon_21 : float in (0, inf]
        Not both infinite.

    Returns
    -------
    Q : ndarray of shape (2, 2)

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp.mechanisms import binary_optimal_matrix
    >>> binary_optimal_matrix(np.log(3), np.log(3))     # Warner, keep w.p. 3/4
    array([[0.75, 0.25],
           [0.25, 0.75]])
    >>> binary_optimal_matrix(np.inf, np.log(4))        # Mangat, p = e^-eps21
    array([[0.75, 0.25],
           [0.  , 1.  ]])
    """
    e12 = _check_side_budget(epsilon_12, "epsilon_12")
    e21 = _check_side_budget(epsilon_21, "epsilon_21")
    if math.isinf(e12) and math.isinf(e21):
        raise ValueError(
            "epsilon_12 and epsilon_21 cannot both be infinite: that is no privacy "
            "at all (use NonPrivate)."
        )
    # Divided by e^{eps_21} (and written with expm1) so that no exponential
    # overflows and no 1 - e^-eps cancels: with t = 1 - e^{-(eps_12 + eps_21)},
    # Q(1|1) = (1 - e^{-eps_21}) / t and Q(2|2) = (1 - e^{-eps_12}) / t.
    total = -math.expm1(-(e12 + e21))
    q11 = -math.expm1(-e21) / total
    q22 = -math.expm1(-e12) / total
    return np.array(
        [
            [q11, 1.0 - q11 if math.isfinite(e12) else math.exp(-e21)],
            [math.exp(-e12) * q11, q22],
        ]
    )


def _check_side_budget(value, name):
    """A one-sided budget: a real number > 0, possibly inf (or "inf" in JSON)."""
    if isinstance(value, str) and value.strip().lower() in ("inf", "infinity"):
        return math.inf
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(
            f'{name} must be a number > 0 (or inf, written "inf" in a JSON '
            f"spec), got {value!r} of type {type(value).__name__}."
        )
    value = float(value)
    if not value > 0:  # also catches NaN
        raise ValueError(f"{name} must be > 0 (inf allowed), got {value}.")
    return value


class BinaryOptimalChannel(_LabelledOutputsChannel):
    """Channel of Theorem 2's optimal binary mechanism (reports are categories).

    Parameters
    ----------
    categories : array-like of shape (2,)
        ``categories[0]`` is element 1, ``categories[1]`` element 2.
    epsilon_12, epsilon_21 : float in (0, inf]
        ``Q(y|1) <= e^{eps_12} Q(y|2)`` and ``Q(y|2) <= e^{eps_21} Q(y|1)``.

    Notes
    -----
    ``epsilon`` (the budget reported to generic code) is the largest finite
    one of the two; an element whose row budget is infinite is not
    sensitive (:attr:`sensitive_mask`), and an output only it can produce is
    invertible.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp.mechanisms import BinaryOptimalChannel
    >>> channel = BinaryOptimalChannel(["no", "yes"], epsilon_12=1.0, epsilon_21=np.inf)
    >>> channel.matrix().round(3).tolist()
    [[1.0, 0.0], [0.368, 0.632]]
    >>> channel.sensitive_mask.tolist(), channel.epsilon
    ([True, False], 1.0)
    """

    name = "binary_optimal"
    guarantee_notion = "context-aware LDP with two one-sided budgets"
    _side_budget_schema = {
        "anyOf": [
            {"type": "number", "exclusiveMinimum": 0},
            {"const": "inf"},
        ],
    }
    _spec_field_schemas = {
        "epsilon_12": {
            **_side_budget_schema,
            "description": ('Budget of Q(y|1) <= e^eps12 Q(y|2); "inf" for none.'),
        },
        "epsilon_21": {
            **_side_budget_schema,
            "description": ('Budget of Q(y|2) <= e^eps21 Q(y|1); "inf" for none.'),
        },
    }

    def __init__(self, categories: ArrayLike, epsilon_12: float, epsilon_21: float) -> None:
        cats = check_channel_categories(categories)
        if len(cats) != 2:
            raise ValueError(
                f"The optimal binary mechanism has exactly two categories, got "
                f"{len(cats)}: {list(cats)[:10]}. Give the two "
                "values (element 1 first), or use a k-ary mechanism such as "
                "RandomizedResponse for more."
            )
        self._Q = binary_optimal_matrix(epsilon_12, epsilon_21)
        self.epsilon_12 = _check_side_budget(epsilon_12, "epsilon_12")
        self.epsilon_21 = _check_side_budget(epsilon_21, "epsilon_21")
        finite = [e for e in (self.epsilon_12, self.epsilon_21) if math.isfinite(e)]
        super().__init__(cats, max(finite))
        self._check_budget(
            f"the optimal binary mechanism with epsilon_12={self.epsilon_12}, "
            f"epsilon_21={self.epsilon_21} (the range is for the smaller budget)"
        )

    def _check_budget(self, what=None):
        # Both budgets are scaled together; the smaller one sets the slack.
        m = min(e for e in (self.epsilon_12, self.epsilon_21) if math.isfinite(e))

        # Output 1 (column 0) is protected when element 2 may produce it
        # (a finite eps_12), output 2 when element 1 may (a finite eps_21);
        # the probabilities of a protected output enter the privacy ratios,
        # those of an invertible one do not.
        cols = [j for j, e in enumerate((self.epsilon_12, self.epsilon_21)) if math.isfinite(e)]

        r12, r21 = self.epsilon_12 / m, self.epsilon_21 / m

        def probabilities_at(eps):
            try:
                Q = binary_optimal_matrix(r12 * eps, r21 * eps)
            except ValueError:  # a scaled budget under- or overflows
                return np.array([np.nan])
            return Q[:, cols].ravel()

        check_realizable(m, probabilities_at, what=what)

    def realized_matrix(self):
        """The channel :meth:`sample` realizes: flips compare a 53-bit uniform."""
        flip = realized_probability(np.array([self._Q[0, 1], self._Q[1, 0]]))
        return np.array([[1.0 - flip[0], flip[0]], [flip[1], 1.0 - flip[1]]])

    def get_params(self):
        return {"epsilon_12": self.epsilon_12, "epsilon_21": self.epsilon_21}

    @property
    def sensitive_mask(self):
        return np.array([math.isfinite(self.epsilon_12), math.isfinite(self.epsilon_21)])

    @property
    def exact_categories(self):
        # An element without a budget is only estimated from the output only
        # it can produce.
        return ~self.sensitive_mask

    def protected_outputs(self):
        return (self._Q > 0).sum(axis=0) > 1

    def matrix(self):
        """The exact channel: a dense (k, n_outputs) array of Q(y | x)."""
        return self._Q.copy()

    def forward(self, p):
        return np.asarray(p, dtype=float) @ self._Q

    def adjoint(self, v):
        return self._Q @ np.asarray(v, dtype=float)

    def expected_frequency(self, p):
        return self.forward(p)

    # m(1) = Q(1|2) + p1 (Q(1|1) - Q(1|2)),  m(2) = Q(2|1) + p2 (Q(2|2) - Q(2|1))
    @property
    def coef_a(self):
        gap = self._Q[0, 0] - self._Q[1, 0]
        return np.full(2, 1.0 / gap)

    @property
    def coef_b(self):
        gap = self._Q[0, 0] - self._Q[1, 0]
        return np.array([-self._Q[1, 0], -self._Q[0, 1]]) / gap

    def likelihood(self, codes):
        return self._Q[:, np.asarray(codes)].T

    def sample(self, codes, rng):
        codes = np.asarray(codes, dtype=np.intp)
        flip = rng.random(codes.size) < self._Q[codes, 1 - codes]
        return np.where(flip, 1 - codes, codes)


@fill_mechanism_doc
class BinaryOptimalResponse(BaseMechanism):
    """Universally optimal binary mechanism for context-aware LDP (Thm. 2).

    For a binary domain {1, 2} = ``categories`` and budgets ``epsilon_12``
    (how much more likely an output may be under 1 than under 2) and
    ``epsilon_21`` (the converse), this channel is optimal for
    *every* utility that obeys the data-processing inequality (Acharya et
    al. 2020, Thm. 2); both bounds hold with equality.

    Special cases (tested):

    * ``epsilon_12 == epsilon_21 == eps``: Warner's randomized response,
      the true answer is kept w.p. e^eps / (e^eps + 1);
    * ``epsilon_12 = inf``: Mangat's improved randomized response with
      element 2 sensitive: x = 2 always reports 2, x = 1 reports 2 w.p.
      e^(-epsilon_21) (reports of 1 reveal the non-sensitive element 1; it is
      then (X_S = {2}, epsilon_21)-ULDP).

    Parameters
    ----------
    epsilon_12 : float in (0, inf], default=1.0
        Bound on ``log Q(y|1) / Q(y|2)``.
    epsilon_21 : float in (0, inf], default=1.0
        Bound on ``log Q(y|2) / Q(y|1)``. Not both infinite.
    categories : "auto" or array-like of shape (2,), default="auto"
        The two values, element 1 first.
    %(random_state)s

    Attributes
    ----------
    categories_ : ndarray of shape (2,)
    channel_ : BinaryOptimalChannel
    %(fitted_input)s

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp import BinaryOptimalResponse
    >>> from sklearn_uldp.privacy import check_uldp
    >>> mangat = BinaryOptimalResponse(np.inf, np.log(2),
    ...                                categories=["no", "yes"]).fit()
    >>> mangat.channel_matrix()
    array([[0.5, 0.5],
           [0. , 1. ]])
    >>> bool(check_uldp(mangat))      # "yes" is the sensitive answer
    True
    """

    _parameter_constraints = {
        "epsilon_12": [Interval(Real, 0, None, closed="neither"), Options(Real, {np.inf})],
        "epsilon_21": [Interval(Real, 0, None, closed="neither"), Options(Real, {np.inf})],
        "categories": BaseMechanism._parameter_constraints["categories"],
        "random_state": BaseMechanism._parameter_constraints["random_state"],
    }

    def __init__(
        self,
        epsilon_12: float = 1.0,
        epsilon_21: float = 1.0,
        *,
        categories: Categories = "auto",
        random_state: RandomStateLike = None,
    ) -> None:
        self.epsilon_12 = epsilon_12
        self.epsilon_21 = epsilon_21
        self.categories = categories
        self.random_state = random_state

    def _check_params(self):
        binary_optimal_matrix(self.epsilon_12, self.epsilon_21)

    def _make_channel(self):
        n_categories = len(self.categories_)
        if n_categories != 2:
            # Say where the domain came from: with "auto" it is the column's
            # distinct values, which the user may not have looked at.
            learned = isinstance(self.categories, str)
            source = "the column holds" if learned else "categories has"
            # A learned domain is the users' values: counted, never shown.
            shown = "" if learned else f" {np.asarray(self.categories_[:10]).tolist()}"
            raise ValueError(
                f"{type(self).__name__} privatizes a binary column, but "
                f"{source} {n_categories} distinct value(s)"
                f"{shown}{' ...' if n_categories > 10 and not learned else ''}. Pass "
                "categories=[a, b] with the two values (element 1 first), "
                "recode the column to two values, or use a k-ary mechanism "
                "(e.g. RandomizedResponse) for more."
            )
        return BinaryOptimalChannel(self.categories_, self.epsilon_12, self.epsilon_21)
