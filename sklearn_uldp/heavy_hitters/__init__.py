"""Heavy hitters over open domains: strings, bytes and large integers.

Every other mechanism of the package needs its domain up front
(``categories``). The protocols here do not: users report items of an open
domain (words, URLs, identifiers up to 2^64), and the collector *discovers*
the frequent ones.

* :class:`PrefixExtendingMethod` (PEM) and :class:`TreeHist`: users report
  prefixes of their item with optimized local hashing; the collector,
  :class:`HeavyHitterEstimator`, grows candidates level by level.
* :class:`BloomRAPPOR`: RAPPOR's Bloom filters with cohorts, decoded against
  a list of candidate strings by :class:`BloomRAPPORDecoder` (non-negative
  least squares, LASSO or EM, with a false-discovery-rate control).
* :class:`UtilityOptimizedHeavyHitters`: a public list of sensitive items
  keeps eps-LDP and is never revealed; every other item is reported in
  clear with some probability, and discovered with far less noise.

Reports carry their public spec (a *protocol*, the open-domain counterpart
of a channel), and their sufficient statistics add up, so ``partial_fit``
and Dask (:func:`reduce_reports`) reduce millions of reports in a memory
that does not grow with their number.
"""

from ._bloom import BloomRAPPOR, rappor_parameters
from ._bloom_decoder import BloomRAPPORDecoder, benjamini_hochberg
from ._estimator import HeavyHitterEstimator, reduce_reports
from ._mechanism import get_protocol
from ._prefix import PrefixExtendingMethod, TreeHist
from ._protocol import protocol_from_dict
from ._ulh import UtilityOptimizedLocalHashingHeavyHitters
from ._utility import UtilityOptimizedHeavyHitters

__all__ = [
    "PrefixExtendingMethod",
    "TreeHist",
    "HeavyHitterEstimator",
    "BloomRAPPOR",
    "BloomRAPPORDecoder",
    "UtilityOptimizedHeavyHitters",
    "UtilityOptimizedLocalHashingHeavyHitters",
    "benjamini_hochberg",
    "rappor_parameters",
    "get_protocol",
    "protocol_from_dict",
    "reduce_reports",
]
