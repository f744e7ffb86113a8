"""Warnings and errors of sklearn-uldp.

Kept apart from the mechanisms and estimators (as in diffprivlib) so that
users can filter or catch them by class.
"""

__all__ = [
    "PrivacyLeakWarning",
    "BudgetError",
    "ReportMismatchError",
    "ConvergenceWarning",
]

from sklearn.exceptions import ConvergenceWarning


class PrivacyLeakWarning(UserWarning):
    """Something is about to reveal more than the privacy guarantee says.

    Raised, for instance, when a mechanism learns its domain
    (``categories="auto"``) from the private data it is meant to protect: the
    set of categories that occur is itself information about the users.
    """


class BudgetError(ValueError):
    """A privacy budget would be exceeded."""


class ReportMismatchError(ValueError):
    """Reports do not come from the mechanism the estimator was told about.

    The message names the mismatch (mechanism, epsilon, categories, shape, an
    output value the channel cannot produce) and how to fix it.
    """
