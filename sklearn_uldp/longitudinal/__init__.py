"""Collection over time: memoized (longitudinal) mechanisms, their channels and estimator.

A user who reports in every round draws one permanent answer per value,
re-derived from a per-user secret in every round, and sends fresh
randomizations of it: any number of reports of one value cost at most the
permanent budget ``epsilon_perm``, one report ``epsilon_1`` (see the
"Collecting over time" page). Each mechanism's ``channel_`` is one report,
end to end (an ordinary channel: every estimator and privacy check applies),
and ``permanent_channel_`` the memoized round.
:class:`LongitudinalEstimator` estimates every round side by side.

Every mechanism here implements the memoization protocol,
:class:`MemoizedMechanism` (ask :func:`is_memoized`), as
:class:`~sklearn_uldp.heavy_hitters.BloomRAPPOR` does over open domains.

The names were in :mod:`sklearn_uldp.mechanisms` (mechanisms and channels)
and :mod:`sklearn_uldp.estimators` (the estimator) before; those imports
still work, with a ``FutureWarning`` naming this module.
"""

from ..mechanisms._memo import MemoizedMechanism, is_memoized
from ._dbitflip import DBitFlipChannel, DBitFlipPM
from ._estimator import LongitudinalEstimator
from ._grr import LongitudinalGRR, LongitudinalGRRChannel
from ._hashing import LongitudinalLocalHashing, LongitudinalLocalHashingChannel
from ._unary import LongitudinalUE, LongitudinalUEChannel
from ._utility_optimized import (
    PermanentURAPChannel,
    PermanentURRChannel,
    UtilityOptimizedLongitudinalRAPPOR,
    UtilityOptimizedLongitudinalRAPPORChannel,
    UtilityOptimizedLongitudinalRR,
    UtilityOptimizedLongitudinalRRChannel,
)

__all__ = [
    # the memoization protocol
    "MemoizedMechanism",
    "is_memoized",
    # mechanisms (users' side)
    "LongitudinalGRR",
    "LongitudinalUE",
    "LongitudinalLocalHashing",
    "DBitFlipPM",
    "UtilityOptimizedLongitudinalRR",
    "UtilityOptimizedLongitudinalRAPPOR",
    # their channels (the public specs)
    "LongitudinalGRRChannel",
    "LongitudinalUEChannel",
    "LongitudinalLocalHashingChannel",
    "DBitFlipChannel",
    "UtilityOptimizedLongitudinalRRChannel",
    "UtilityOptimizedLongitudinalRAPPORChannel",
    "PermanentURRChannel",
    "PermanentURAPChannel",
    # the collector's side
    "LongitudinalEstimator",
]
