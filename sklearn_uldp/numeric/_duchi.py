"""Duchi et al.'s one-dimensional mechanism for means of bounded values.

Duchi, Jordan & Wainwright, "Minimax optimal procedures for locally private
estimation", JASA 2018 (the 1-D case as stated by Wang et al., ICDE 2019,
Algorithm 1): on the unit scale t in [-1, 1] the report is

    +C with probability 1/2 + t (e^eps - 1) / (2 (e^eps + 1)),  else -C,
    C = (e^eps + 1) / (e^eps - 1),

which is unbiased (E[report | t] = t) with variance C^2 - t^2. The two
probabilities are 1/(e^eps + 1) and e^eps/(e^eps + 1) at the ends of the
range, so every ratio is at most e^eps.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._base import NumericChannel, _EpsilonBoundsMechanism
from ._docs import fill_numeric_doc, mechanism_doc
from ._kernels import fused_reports, two_point_codes

__all__ = ["DuchiMechanism", "DuchiChannel"]


def duchi_scale(epsilon):
    """``C = (e^eps + 1) / (e^eps - 1)``, the magnitude of Duchi's reports."""
    return 1.0 / math.tanh(epsilon / 2.0)


def _plus_slope(epsilon):
    """``(e^eps - 1) / (2 (e^eps + 1))``: P(+) = 1/2 + slope * t."""
    return 0.5 * math.tanh(epsilon / 2.0)


@fill_numeric_doc
class DuchiChannel(NumericChannel):
    """Duchi et al.'s two-point channel (``-C`` or ``+C`` on the unit scale).

    %(channel_parameters)s

    Examples
    --------
    >>> from sklearn_uldp.numeric import DuchiChannel
    >>> channel = DuchiChannel((0, 10), epsilon=1.0)
    >>> channel.output_values().round(3).tolist()
    [-5.82, 15.82]
    >>> channel.output_probabilities([0.0, 10.0]).round(3).tolist()
    [[0.731, 0.269], [0.269, 0.731]]
    """

    name = "duchi"
    unbiased_reports = True
    fake_refusal = None

    def __init__(self, bounds: Any, epsilon: float) -> None:
        super().__init__(bounds, epsilon)
        self._check_budget(f"Duchi's mechanism at epsilon={self.epsilon!r}")

    def fake_law(self, fake="random", matrix=None):
        return np.array([0.5, 0.5])  # P(+ | t) is linear in t, t uniform on [-1, 1]

    @classmethod
    def fake_ratio_classes_at(cls, epsilon):
        keep = 1.0 / (1.0 + math.exp(-epsilon))  # e^eps / (e^eps + 1)
        return np.array([2.0 * keep]), np.array([2.0 * (1.0 - keep)])

    @staticmethod
    def _draw_probabilities(epsilon):
        low = 0.5 - _plus_slope(epsilon)
        return np.array([low, 1.0 - low])

    @property
    def n_outputs(self):
        return 2

    def _grid_run(self):
        return 0, 0  # two values, no grid

    def _output_values(self):
        c = duchi_scale(self.epsilon)
        return self.from_unit(np.array([-c, c]))

    def plus_probability(self, values):
        """P(report = +C | value) for values in column units."""
        return 0.5 + _plus_slope(self.epsilon) * self.to_unit(values)

    def output_probabilities(self, values):
        plus = self.plus_probability(np.atleast_1d(values))
        return np.stack([1.0 - plus, plus], axis=1)

    def _codes(self, values, uniforms):
        return two_point_codes(self.plus_probability(values), uniforms)

    def _fused_params(self):
        """Parameters of the compiled one-pass sampler (also Hybrid's, for its
        Duchi part)."""
        low, high = self.bounds
        minus, plus = self.output_values()
        return {
            "low": low,
            "high": high,
            "two_over_width": 2.0 / (high - low),
            "slope": _plus_slope(self.epsilon),
            "minus": minus,
            "plus": plus,
        }

    def _fused(self, values, uniforms, out):
        return fused_reports("duchi", values, uniforms, out, **self._fused_params())

    def variance(self, values):
        t = self.to_unit(values)
        half = (self.high - self.low) / 2.0
        return (duchi_scale(self.epsilon) ** 2 - t**2) * half**2

    def worst_case_variance(self):
        half = (self.high - self.low) / 2.0
        return float(duchi_scale(self.epsilon) ** 2 * half**2)

    def two_point_reports(self):
        minus, plus = self.output_values()
        return float(minus), float(plus), True


@mechanism_doc("DuchiChannel")
class DuchiMechanism(_EpsilonBoundsMechanism):
    """Duchi et al.'s mechanism for the mean of a bounded numeric column.

    Each value x in ``bounds=(low, high)`` is reported as one of two numbers,
    ``mid - half C`` or ``mid + half C`` (``mid``, ``half``: the centre and
    half-width of the range, ``C = (e^eps + 1) / (e^eps - 1)``), the larger
    with probability ``1/2 + t (e^eps - 1) / (2 (e^eps + 1))`` where t is x
    on the unit scale [-1, 1]. Each report is an unbiased estimate of its
    value, so the mean of the reports estimates the mean
    (:class:`~sklearn_uldp.numeric.MeanEstimator`). A report is one bit.

    Best of the three mean mechanisms for small budgets (below about 1.3;
    see :class:`HybridMechanism`, which is never worse than either).

    %(mechanism_sections)s

    See Also
    --------
    PiecewiseMechanism, HybridMechanism : The other mean mechanisms.
    MeanEstimator : Estimates the mean (with a confidence interval).

    References
    ----------
    J. C. Duchi, M. I. Jordan, M. J. Wainwright, "Minimax optimal procedures
    for locally private estimation", JASA 113 (2018).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp import DuchiMechanism, MeanEstimator
    >>> X = np.random.default_rng(0).uniform(20, 60, size=(50_000, 1))
    >>> mech = DuchiMechanism(epsilon=1.0, bounds=(0, 100), random_state=0)
    >>> reports = mech.fit_transform(X)
    >>> np.unique(reports).round(2).tolist()
    [-58.2, 158.2]
    >>> est = MeanEstimator().fit(reports)
    >>> bool(abs(est.mean_ - X.mean()) < 4 * est.standard_error_)
    True
    """

    _channel_class = DuchiChannel
