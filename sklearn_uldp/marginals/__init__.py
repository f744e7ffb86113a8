"""Marginals of many columns under local privacy: every pair's crosstab, synthetic rows.

Each user reports one marginal (a set of columns, drawn at random
independently of the row) through the frequency oracle of least variance for
its product domain; the collector estimates every measured marginal, makes
them agree where they share columns, reads any other set of columns from the
maximum-entropy table of the measured ones, and draws synthetic rows. With
``sensitive``, the release is utility-optimized. Range queries over bounded
numeric columns (HDG and TDG: each user reports one cell of a 1-D or 2-D
grid) are marginal release over binned columns, with their own privatizer
and estimator; with ``sensitive_ranges``, utility-optimized too. See the
"Marginals" page.
"""

from ._channel import MarginalChannel, MarginalStatistics
from ._design import choose_marginals, choose_oracle
from ._estimator import MarginalEstimator, reduce_marginal_statistics
from ._privacy import check_marginal_uldp
from ._privatizer import MarginalPrivatizer
from ._range import RangeQueryPrivatizer
from ._range_channel import RangeQueryChannel
from ._range_design import choose_granularity
from ._range_estimator import RangeQueryEstimator, reduce_range_statistics
from ._range_privacy import check_range_uldp
from ._workflow import marginal_privatizer_from, one_way_estimates

__all__ = [
    "MarginalPrivatizer",
    "MarginalEstimator",
    "MarginalChannel",
    "MarginalStatistics",
    "choose_marginals",
    "choose_oracle",
    "check_marginal_uldp",
    "reduce_marginal_statistics",
    "marginal_privatizer_from",
    "one_way_estimates",
    "RangeQueryPrivatizer",
    "RangeQueryEstimator",
    "RangeQueryChannel",
    "choose_granularity",
    "check_range_uldp",
    "reduce_range_statistics",
]
