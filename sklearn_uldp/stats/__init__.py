"""Statistical tests on privatized reports.

Whether the distribution changed between two uploads of the same mechanism
(:func:`two_sample_test`), and whether two privatized columns of the same
users are associated (:func:`association_test`, with the joint distribution
estimated by EM over the product channel, :func:`joint_distribution`).
Standard errors and confidence intervals of a single estimate are methods of
the estimators (``standard_errors_``, ``confidence_intervals``).
"""

from ._association import AssociationResult, association_test, joint_distribution
from ._two_sample import TwoSampleResult, two_sample_test

__all__ = [
    "two_sample_test",
    "TwoSampleResult",
    "association_test",
    "joint_distribution",
    "AssociationResult",
]
