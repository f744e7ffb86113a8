"""Local privacy mechanisms (scikit-learn transformers) and their channels.

A mechanism privatizes one categorical column; its fitted ``channel_`` is the
public spec and the contract with every estimator (see
``docs/architecture.md``).

The memoized (longitudinal) mechanisms and their channels live in
:mod:`sklearn_uldp.longitudinal`; their old names here are deprecated aliases.
"""

from ._attribute_sampling import (
    FAKE_KINDS,
    SampledChannel,
    SampledFakeChannel,
    amplified_epsilon,
    fake_data_guarantees,
    supported_fakes,
)
from ._base import BaseMechanism, as_channel
from ._binary import BinaryOptimalChannel, BinaryOptimalResponse, binary_optimal_matrix
from ._bit_rows import BitRows
from ._block_design import (
    UtilityOptimizedBlockDesign,
    UtilityOptimizedBlockDesignChannel,
    UtilityOptimizedOUE,
)
from ._channel import CategoricalChannel, Channel, ReportStatistics, spec_json_schema
from ._count_mean_sketch import (
    CountMeanSketch,
    CountMeanSketchChannel,
    HadamardCountMeanSketch,
    HadamardCountMeanSketchChannel,
)
from ._hadamard import (
    BlockHadamardChannel,
    BlockHadamardResponse,
    HadamardResponse,
    HadamardResponseChannel,
    HighLowHadamardChannel,
    HighLowHadamardResponse,
    UtilityOptimizedHadamardResponse,
)
from ._local_hashing import (
    BinaryLocalHashing,
    BinaryLocalHashingChannel,
    LocalHashingChannel,
    OptimizedLocalHashing,
)
from ._personalized import PersonalizedMechanism, bot_label, split_bots
from ._randomized_response import (
    IdentityChannel,
    NonPrivate,
    RandomizedResponse,
    RandomizedResponseChannel,
    UtilityOptimizedRR,
    UtilityOptimizedRRChannel,
)
from ._rappor import (
    RAPPOR,
    RAPPORChannel,
    UnaryEncodingChannel,
    UtilityOptimizedRAPPOR,
    basic_rappor_theta,
)
from ._reports import PackedReports, Reports, SparseReports, attach_channel, get_channel
from ._spec import PublicSpec
from ._subset_selection import SubsetSelection, SubsetSelectionChannel
from ._transform import to_utility_optimized
from ._transformed import (
    TransformedSubsetSelection,
    UtilityOptimizedBlockedHadamardChannel,
    UtilityOptimizedBlockedHadamardResponse,
    UtilityOptimizedHadamardCountMeanSketch,
    UtilityOptimizedHadamardCountMeanSketchChannel,
    UtilityOptimizedLocalHashing,
    UtilityOptimizedLocalHashingChannel,
    optimal_ulh_hash_range,
)
from ._utility_optimized_subset import (
    UtilityOptimizedSubsetSelection,
    UtilityOptimizedSubsetSelectionChannel,
)
from ._utility_optimized_unary import (
    UtilityOptimizedUnaryEncoding,
    UtilityOptimizedUnaryEncodingChannel,
)

__all__ = [
    "BaseMechanism",
    "PublicSpec",
    "Channel",
    "CategoricalChannel",
    "ReportStatistics",
    "as_channel",
    "spec_json_schema",
    "BitRows",
    "Reports",
    "SparseReports",
    "PackedReports",
    "attach_channel",
    "get_channel",
    "NonPrivate",
    "RandomizedResponse",
    "UtilityOptimizedRR",
    "RAPPOR",
    "UtilityOptimizedRAPPOR",
    "IdentityChannel",
    "RandomizedResponseChannel",
    "UtilityOptimizedRRChannel",
    "RAPPORChannel",
    "UnaryEncodingChannel",
    "basic_rappor_theta",
    "PersonalizedMechanism",
    "bot_label",
    "split_bots",
    "BinaryOptimalResponse",
    "BinaryOptimalChannel",
    "binary_optimal_matrix",
    "UtilityOptimizedBlockDesign",
    "UtilityOptimizedBlockDesignChannel",
    "UtilityOptimizedOUE",
    "HadamardResponse",
    "HighLowHadamardResponse",
    "BlockHadamardResponse",
    "HadamardResponseChannel",
    "HighLowHadamardChannel",
    "BlockHadamardChannel",
    "UtilityOptimizedHadamardResponse",
    "UtilityOptimizedSubsetSelection",
    "UtilityOptimizedSubsetSelectionChannel",
    "OptimizedLocalHashing",
    "BinaryLocalHashing",
    "SubsetSelection",
    "CountMeanSketch",
    "HadamardCountMeanSketch",
    "LocalHashingChannel",
    "BinaryLocalHashingChannel",
    "SubsetSelectionChannel",
    "CountMeanSketchChannel",
    "HadamardCountMeanSketchChannel",
    # the utility-optimized transformation (He et al. 2025)
    "UtilityOptimizedLocalHashing",
    "UtilityOptimizedLocalHashingChannel",
    "UtilityOptimizedHadamardCountMeanSketch",
    "UtilityOptimizedHadamardCountMeanSketchChannel",
    "UtilityOptimizedBlockedHadamardResponse",
    "UtilityOptimizedBlockedHadamardChannel",
    "TransformedSubsetSelection",
    "optimal_ulh_hash_range",
    "to_utility_optimized",
    "UtilityOptimizedUnaryEncoding",
    "UtilityOptimizedUnaryEncodingChannel",
    # one attribute's reports under the sampling strategies (SMP, RS+FD)
    "SampledChannel",
    "SampledFakeChannel",
    "FAKE_KINDS",
    "amplified_epsilon",
    "supported_fakes",
    "fake_data_guarantees",
]

#: Names that moved to :mod:`sklearn_uldp.longitudinal` (collection over
#: time), resolved on first use with a FutureWarning naming the new import.
#: ``mechanisms`` sits below ``longitudinal`` in the layers and imports
#: nothing of it: the alias's import is the one exemption
#: (tests/package/test_layering.py, ``DEPRECATED_ALIASES``).
_MOVED_TO_LONGITUDINAL = frozenset(
    {
        "LongitudinalGRR",
        "LongitudinalUE",
        "LongitudinalLocalHashing",
        "DBitFlipPM",
        "UtilityOptimizedLongitudinalRR",
        "UtilityOptimizedLongitudinalRAPPOR",
        "LongitudinalGRRChannel",
        "LongitudinalUEChannel",
        "LongitudinalLocalHashingChannel",
        "DBitFlipChannel",
        "UtilityOptimizedLongitudinalRRChannel",
        "UtilityOptimizedLongitudinalRAPPORChannel",
        "PermanentURRChannel",
        "PermanentURAPChannel",
    }
)


def __getattr__(name):
    if name in _MOVED_TO_LONGITUDINAL:
        from .. import longitudinal  # a deprecated alias (see _MOVED_TO_LONGITUDINAL)
        from ..utils._deprecation import moved_alias

        return moved_alias(longitudinal, name, __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
