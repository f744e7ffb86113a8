"""``to_utility_optimized``: the ULDP counterpart of any LDP oracle of the package.

He, Zhu, Liu, Pan and Dong (USENIX Security 2025) give a general LDP -> ULDP
transformation. For the package's oracles, all *pure* (each column of the
channel takes the values ``C(y)`` and ``C(y) e^eps``), it reads: run the
oracle over the sensitive values X_S only; a non-sensitive value is reported
as itself w.p. ``1 - |C|`` and otherwise as a protected output drawn from
``C / |C|`` (derivation and proof: ``sklearn_uldp.mechanisms._transformed``
and the docs' "Utility-optimized frontier" page). Where the package already
has that channel, the transformation returns the existing mechanism:

=============================  ===========================================
LDP oracle                     its transformation
=============================  ===========================================
RandomizedResponse (k-RR)      UtilityOptimizedRR (uRR), exactly
RAPPOR (theta; OUE: 1/2)       UtilityOptimizedUnaryEncoding (uUE)
OptimizedLocalHashing          UtilityOptimizedLocalHashing (uLH)
BinaryLocalHashing             UtilityOptimizedLocalHashing, g = 2
SubsetSelection (size d)       TransformedSubsetSelection (uBD's channel, h = d)
HadamardResponse               UtilityOptimizedBlockedHadamardResponse
                               (plain HR: high-low HR, the package's uHR)
HadamardCountMeanSketch        UtilityOptimizedHadamardCountMeanSketch
=============================  ===========================================

The count-mean sketch (CMS, bit vectors per hash function) is not
transformed: it is unary encoding of a hashed value, whose transformation
(uUE within each hash function) has no channel class here; its Hadamard
variant is.
"""

from __future__ import annotations

from typing import Any

from sklearn.utils.validation import check_is_fitted

from ..utils._typing import Sensitive
from ._base import BaseMechanism

__all__ = ["to_utility_optimized"]


def _common(mechanism, sensitive):
    return {
        "epsilon": mechanism.epsilon,
        "sensitive": sensitive,
        "categories": mechanism.categories,
        "random_state": mechanism.random_state,
    }


def to_utility_optimized(mechanism: BaseMechanism, sensitive: Sensitive) -> BaseMechanism:
    """The utility-optimized (ULDP) counterpart of an LDP oracle.

    He et al.'s LDP -> ULDP transformation (USENIX Security 2025): the
    oracle runs over the sensitive values only, with its budget; a
    non-sensitive value is reported as itself with the largest probability
    that keeps every protected output within e^eps of every sensitive
    value's (``1 - |C|``, C the oracle's smaller column value), and
    otherwise as a protected output drawn from C. The result is
    (X_S, Y_P, epsilon)-ULDP, unbiased (with the "pure ULDP" aggregation:
    the oracle's estimator plus a constant per invertible report) and, over
    the sensitive set, exactly as accurate as the oracle over a domain of
    size s = ``|X_S|``; the non-sensitive values are estimated from clear reports.

    ==========================  =============================================
    ``mechanism``               returned (unfitted, or fitted if it was)
    ==========================  =============================================
    RandomizedResponse          UtilityOptimizedRR (uRR: the same channel)
    RAPPOR (theta, or None)     UtilityOptimizedUnaryEncoding (uUE), theta
    OptimizedLocalHashing       UtilityOptimizedLocalHashing (uLH), same g
    BinaryLocalHashing          UtilityOptimizedLocalHashing, g = 2
    SubsetSelection             TransformedSubsetSelection, h = d (uBD's
                                channel; ``"optimal"``: SS's d over X_S)
    HadamardResponse            UtilityOptimizedHadamardResponse (plain HR)
                                or UtilityOptimizedBlockedHadamardResponse
    HadamardCountMeanSketch     UtilityOptimizedHadamardCountMeanSketch
    ==========================  =============================================

    Parameters
    ----------
    mechanism : BaseMechanism
        An LDP oracle of the package (fitted or not). Its ``epsilon``,
        ``categories``, ``random_state`` and own parameters carry over.
    sensitive : array-like, boolean mask or callable
        The sensitive categories X_S (as for every ULDP mechanism).

    Returns
    -------
    BaseMechanism
        The ULDP mechanism; fitted (on the same domain) when ``mechanism``
        was.

    Raises
    ------
    TypeError
        For a mechanism that is not one of the LDP oracles above (a
        utility-optimized one already, a count-mean sketch, a mechanism of
        another package, ...).

    Examples
    --------
    >>> from sklearn_uldp import RandomizedResponse
    >>> from sklearn_uldp.mechanisms import OptimizedLocalHashing, to_utility_optimized
    >>> cats = ["married", "single", "divorced", "widowed"]
    >>> urr = to_utility_optimized(RandomizedResponse(1.0, categories=cats),
    ...                            sensitive=["divorced", "widowed"])
    >>> type(urr).__name__
    'UtilityOptimizedRR'
    >>> ulh = to_utility_optimized(OptimizedLocalHashing(1.0, categories=range(100)),
    ...                            sensitive=range(10)).fit()
    >>> type(ulh).__name__, ulh.channel_.name, round(ulh.pass_through_, 3)
    ('UtilityOptimizedLocalHashing', 'ulh', 0.364)
    """
    from ._count_mean_sketch import CountMeanSketch, HadamardCountMeanSketch
    from ._hadamard import HadamardResponse, UtilityOptimizedHadamardResponse
    from ._local_hashing import BinaryLocalHashing, OptimizedLocalHashing
    from ._randomized_response import RandomizedResponse, UtilityOptimizedRR
    from ._rappor import RAPPOR, basic_rappor_theta
    from ._subset_selection import SubsetSelection
    from ._transformed import (
        TransformedSubsetSelection,
        UtilityOptimizedBlockedHadamardResponse,
        UtilityOptimizedHadamardCountMeanSketch,
        UtilityOptimizedLocalHashing,
    )
    from ._utility_optimized_unary import UtilityOptimizedUnaryEncoding

    common = _common(mechanism, sensitive) if hasattr(mechanism, "epsilon") else {}
    out: Any
    # Exact types: a subclass may change the channel (e.g. uRAP is a RAPPOR
    # subclass of the same base), and is refused below.
    kind = type(mechanism)
    if kind is RandomizedResponse:
        out = UtilityOptimizedRR(**common)
    elif kind is RAPPOR:
        theta = mechanism.theta
        if theta is None:  # basic one-time RAPPOR: its theta at this budget
            theta = basic_rappor_theta(float(mechanism.epsilon))
        out = UtilityOptimizedUnaryEncoding(
            theta=theta,
            sparse_output=mechanism.sparse_output,
            packed_output=mechanism.packed_output,
            **common,
        )
    elif kind is OptimizedLocalHashing:
        out = UtilityOptimizedLocalHashing(hash_range=mechanism.hash_range, **common)
    elif kind is BinaryLocalHashing:
        out = UtilityOptimizedLocalHashing(hash_range=2, **common)
    elif kind is SubsetSelection:
        out = TransformedSubsetSelection(
            subset_size=mechanism.subset_size,
            sparse_output=mechanism.sparse_output,
            packed_output=mechanism.packed_output,
            **common,
        )
    elif kind is HadamardResponse:
        if mechanism.block_size is None:
            out = UtilityOptimizedHadamardResponse(**common)
        else:
            out = UtilityOptimizedBlockedHadamardResponse(block_size=mechanism.block_size, **common)
    elif kind is HadamardCountMeanSketch:
        out = UtilityOptimizedHadamardCountMeanSketch(
            n_buckets=mechanism.n_buckets,
            n_hashes=mechanism.n_hashes,
            hash_seed=mechanism.hash_seed,
            **common,
        )
    elif kind is CountMeanSketch:
        raise TypeError(
            "The count-mean sketch (bit vectors per hash function) has no "
            "utility-optimized counterpart here; transform its Hadamard variant, "
            "HadamardCountMeanSketch, or use UtilityOptimizedLocalHashing."
        )
    else:
        raise TypeError(
            f"to_utility_optimized transforms the package's LDP oracles "
            "(RandomizedResponse, RAPPOR, OptimizedLocalHashing, BinaryLocalHashing, "
            "SubsetSelection, HadamardResponse, HadamardCountMeanSketch); got "
            f"{kind.__name__}. A utility-optimized mechanism already treats "
            "non-sensitive values apart: use it as it is."
        )
    fitted = hasattr(mechanism, "channel_")
    if fitted:
        check_is_fitted(mechanism, "channel_")
        out.set_params(categories=mechanism.categories_)
        out.fit()
    return out
