"""Warnings and errors of sklearn-uldp.

Kept apart from the mechanisms and estimators (as in diffprivlib) so that
users can filter or catch them by class.
"""

__all__ = [
    "PrivacyLeakWarning",
    "BudgetError",
    "ReportMismatchError",
    "InvalidSpecError",
    "ConvergenceWarning",
    "ClippingWarning",
    "UninformativeEstimateWarning",
    "LargeReportsWarning",
    "ItemTruncationWarning",
]

from sklearn.exceptions import ConvergenceWarning


class PrivacyLeakWarning(UserWarning):
    """Something is about to reveal more than the privacy guarantee says.

    Raised, for instance, when a mechanism learns its domain
    (``categories="auto"``) from the private data it is meant to protect: the
    set of categories that occur is itself information about the users.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from sklearn_uldp import PrivacyLeakWarning, RandomizedResponse
    >>> X = np.array([["a"], ["b"]], dtype=object)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     _ = RandomizedResponse(epsilon=1.0).fit(X)  # categories="auto"
    >>> any(issubclass(w.category, PrivacyLeakWarning) for w in caught)
    True
    """


class BudgetError(ValueError):
    """A privacy budget would be exceeded.

    Examples
    --------
    >>> from sklearn_uldp import BudgetAccountant, BudgetError
    >>> acc = BudgetAccountant(total=1.0)
    >>> try:
    ...     acc.spend(2.0)
    ... except BudgetError as err:
    ...     print(type(err).__name__, isinstance(err, ValueError))
    BudgetError True
    """


class ReportMismatchError(ValueError):
    """Reports do not come from the mechanism the estimator was told about.

    The message names the mismatch (mechanism, epsilon, categories, shape, an
    output value the channel cannot produce) and how to fix it.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp import EMEstimator, RandomizedResponse, ReportMismatchError
    >>> est = EMEstimator(mechanism=RandomizedResponse(epsilon=1.0, categories=["a", "b"]))
    >>> try:
    ...     est.fit(np.array([["z"]], dtype=object))
    ... except ReportMismatchError as err:
    ...     print(err)
    Reports hold 1 value (text) outside the outputs of ...
    """


class InvalidSpecError(ValueError, TypeError):
    """A channel spec (the public JSON description of a mechanism) is invalid.

    Raised by :meth:`Channel.from_dict <sklearn_uldp.mechanisms.Channel.from_dict>`
    (and so by everything that loads a spec) for an unknown mechanism, an
    unknown or missing field, an unsupported ``spec_version`` or a field value
    the mechanism's constructor refuses. The message names the field and how
    to fix it. It is both a ``ValueError`` and a ``TypeError``, so code that
    caught either keeps working.

    Examples
    --------
    >>> from sklearn_uldp.exceptions import InvalidSpecError
    >>> from sklearn_uldp.mechanisms import Channel
    >>> try:
    ...     Channel.from_dict({"mechanism": "rr", "categories": ["a", "b"],
    ...                        "epsilon": 0})
    ... except InvalidSpecError as err:
    ...     print(str(err)[:48])
    Invalid spec of mechanism 'rr': epsilon must be
    """


class ClippingWarning(UserWarning):
    """Numeric values outside a mechanism's public bounds were clipped to them.

    A numeric mechanism privatizes values of a public range ``bounds=(low,
    high)``; a value outside it is replaced by the nearest bound before it is
    privatized (never dropped, never silently). The message counts the
    clipped values of each column and says how to widen the bounds.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from sklearn_uldp import ClippingWarning, PiecewiseMechanism
    >>> mech = PiecewiseMechanism(epsilon=1.0, bounds=(0, 10), random_state=0).fit()
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     _ = mech.transform(np.array([[3.0], [12.0]]))
    >>> [str(w.message)[:44] for w in caught if w.category is ClippingWarning]
    ['1 of 2 values of column x0 lie outside the b']
    """


class UninformativeEstimateWarning(UserWarning):
    """No category of an estimate stands out from the privacy noise.

    Issued when an estimator is fitted on reports in which no category is
    significantly above zero (the significance-threshold test of the
    unbiased estimate, Bonferroni over the categories; see the estimators'
    ``n_significant_``). The reports then carry too little information at
    their budget: the threshold estimate and EM's default estimate are the
    uniform distribution, and the unbiased estimate is mostly noise. Collect
    more reports, spend a larger budget, or merge categories.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from sklearn_uldp import RandomizedResponse, ThresholdEstimator
    >>> from sklearn_uldp.exceptions import UninformativeEstimateWarning
    >>> mech = RandomizedResponse(0.1, categories=list("abcd"), random_state=1)
    >>> reports = mech.fit_transform(np.array(list("aabc" * 50))[:, None])
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     est = ThresholdEstimator().fit(reports)
    >>> est.n_significant_, est.distribution_.tolist()
    (0, [0.25, 0.25, 0.25, 0.25])
    >>> any(w.category is UninformativeEstimateWarning for w in caught)
    True
    """


class LargeReportsWarning(UserWarning):
    """Dense reports are about to take more memory than a typical machine has.

    A bit-vector mechanism (RAPPOR, uRAP, subset selection, the block
    design, the count-mean sketch) returns by default one byte per bit: n
    users and k categories take n k bytes (10 GB at k = 10,000 and
    n = 10^6). Before allocating more than 1 GB this way, ``transform`` warns
    with the size and the footprint of ``packed_output=True`` (k / 8 bytes a
    report, read by every estimator), so the choice is made before the
    memory is spent.

    Examples
    --------
    >>> from sklearn_uldp.utils._validation import dense_reports_warning
    >>> print(dense_reports_warning(10**6, 10_000, owner="RAPPOR")[:70])
    RAPPOR is about to allocate 10.0 GB of dense reports (1,000,000 rows x
    """


class ItemTruncationWarning(UserWarning):
    """Items longer than a heavy-hitter protocol's ``max_bytes`` were cut.

    The prefix protocols (:class:`~sklearn_uldp.heavy_hitters.PrefixExtendingMethod`,
    :class:`~sklearn_uldp.heavy_hitters.TreeHist`) work on items of
    ``max_bytes`` bytes; with ``on_long="truncate"`` a longer item is
    reported as its longest prefix of whole characters that fits. The
    message counts the items cut (never quoting one) and names the
    ``max_bytes`` that would keep them whole; ``transform`` issues it once
    per call.

    Examples
    --------
    >>> import warnings
    >>> from sklearn_uldp.heavy_hitters import PrefixExtendingMethod
    >>> from sklearn_uldp.exceptions import ItemTruncationWarning
    >>> mech = PrefixExtendingMethod(epsilon=2.0, max_bytes=4, random_state=0)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     _ = mech.fit_transform(["nurse", "nurse", "cook"])
    >>> [message] = [str(w.message) for w in caught if w.category is ItemTruncationWarning]
    >>> message[:61]
    '2 of 3 items (1 distinct item) are longer than max_bytes=4 by'
    >>> message[message.index(";") + 2 : message.index("whole") + 5]
    'set max_bytes=5 to keep them whole'
    """
