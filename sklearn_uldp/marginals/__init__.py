"""Marginals of many columns under local privacy: every pair's crosstab, synthetic rows.

Each user reports one marginal (a set of columns, drawn at random
independently of the row) through the frequency oracle of least variance for
its product domain; the collector estimates every measured marginal, makes
them agree where they share columns, reads any other set of columns from the
maximum-entropy table of the measured ones, and draws synthetic rows. With
``sensitive``, the release is utility-optimized. See the "Marginals" page.
"""

from ._channel import MarginalChannel, MarginalStatistics
from ._design import choose_marginals, choose_oracle
from ._estimator import MarginalEstimator, reduce_marginal_statistics
from ._privacy import check_marginal_uldp
from ._privatizer import MarginalPrivatizer
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
]
