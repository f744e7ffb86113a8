"""Bounded numeric columns: means, distributions and quantiles under (U)LDP.

Mechanisms (the users' side) privatize a numeric column of a public range
``bounds=(low, high)``; their reports are numbers in the column's units that
carry their channel, as every mechanism of the package does. Estimators
(the collector's side) read the channel from the reports.

* Means: :class:`DuchiMechanism`, :class:`PiecewiseMechanism`,
  :class:`HybridMechanism` (Wang et al., ICDE 2019) and the
  utility-optimized :class:`UtilityOptimizedOneBitMechanism`, whose reports
  are unbiased; :class:`MeanEstimator` (with confidence intervals);
  :class:`MultiNumericMechanism` samples attributes of a row (Wang et al.);
  :class:`SampledNumericChannel` and :class:`SampledFakeNumericChannel`
  are one numeric column of ``DataFramePrivatizer(strategy="sample")`` and
  ``"sample+fake"`` beside categorical ones.
* Distributions: :class:`SquareWave` (Li et al., SIGMOD 2020) and
  :class:`SquareWaveEstimator` (EM / EMS, quantiles, bootstrap intervals);
  :class:`Binner`, the route to every categorical mechanism and estimator.

See ``docs/numerical.md`` for the mathematics and the measured figures.
"""

from ._base import BaseNumericMechanism, NumericChannel, check_bounds
from ._binning import Binner
from ._duchi import DuchiChannel, DuchiMechanism
from ._estimator_base import as_numeric_channel
from ._mean import MeanEstimator, bernstein_half_width, mean_interval, normal_sample_size
from ._multi import MultiNumericChannel, MultiNumericMechanism, optimal_sampled_attributes
from ._piecewise import (
    HybridChannel,
    HybridMechanism,
    PiecewiseChannel,
    PiecewiseMechanism,
    closed_form_variance,
)
from ._sampled import SampledFakeNumericChannel, SampledNumericChannel
from ._square_wave import SquareWave, SquareWaveChannel, SquareWaveEstimator, square_wave_band
from ._utility_optimized import (
    UtilityOptimizedOneBitChannel,
    UtilityOptimizedOneBitMechanism,
    check_sensitive_ranges,
)

__all__ = [
    "BaseNumericMechanism",
    "NumericChannel",
    "check_bounds",
    "as_numeric_channel",
    "DuchiMechanism",
    "DuchiChannel",
    "PiecewiseMechanism",
    "PiecewiseChannel",
    "HybridMechanism",
    "HybridChannel",
    "closed_form_variance",
    "MeanEstimator",
    "bernstein_half_width",
    "normal_sample_size",
    "mean_interval",
    "SquareWave",
    "SquareWaveChannel",
    "SquareWaveEstimator",
    "square_wave_band",
    "UtilityOptimizedOneBitMechanism",
    "UtilityOptimizedOneBitChannel",
    "check_sensitive_ranges",
    "MultiNumericMechanism",
    "MultiNumericChannel",
    "optimal_sampled_attributes",
    "Binner",
    "SampledNumericChannel",
    "SampledFakeNumericChannel",
]
