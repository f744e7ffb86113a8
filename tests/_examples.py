"""One configured, unfitted instance of every registered categorical mechanism.

Import by name from any folder under tests/ (``from _examples import
categorical_mechanisms``). The contract tests (``package/test_contract.py``)
and the shape contract of ``predict_proba``
(``estimators/test_predict_proba_shape.py``) are parametrized over the
registry; both take their categorical instances from here, so a new entry of
``SPEC_CLASSES`` needs one line in one place.
"""

from __future__ import annotations

from sklearn_uldp import longitudinal as lg
from sklearn_uldp import mechanisms as m

CATS = ["a", "b", "c", "d"]
#: The utility-optimized mechanisms' parameters: two sensitive categories.
S = {"sensitive": ["a", "b"], "categories": CATS}
#: The one mechanism of two categories (its inputs take two values).
BINARY = "binary_optimal"


def _permanent(channel):
    return channel.permanent_channel()


def categorical_mechanisms():
    """name -> (mechanism, derive), fresh instances at each call.

    ``derive`` is None when the registered channel is the mechanism's own
    ``channel_``, else the function that builds it from ``channel_`` (the
    permanent round of a memoized mechanism, the sampled channels).
    """
    return {
        "rr": (m.RandomizedResponse(1.0, categories=CATS), None),
        "urr": (m.UtilityOptimizedRR(1.0, **S), None),
        "identity": (m.NonPrivate(categories=CATS), None),
        "rappor": (m.RAPPOR(1.0, theta=0.5, categories=CATS), None),
        "urap": (m.UtilityOptimizedRAPPOR(1.0, **S), None),
        "ubd": (
            m.UtilityOptimizedBlockDesign(1.0, sensitive=["a", "b", "c"], categories=CATS),
            None,
        ),
        "ss": (m.SubsetSelection(1.0, categories=CATS), None),
        "uss": (m.UtilityOptimizedSubsetSelection(1.0, **S), None),
        "hr": (m.HadamardResponse(1.0, categories=CATS), None),
        "hlhr": (m.HighLowHadamardResponse(1.0, **S), None),
        "bhr": (
            m.BlockHadamardResponse(1.0, blocks=[["a", "b"], ["c"], ["d"]], categories=CATS),
            None,
        ),
        BINARY: (m.BinaryOptimalResponse(1.0, 2.0, categories=["a", "b"]), None),
        "olh": (m.OptimizedLocalHashing(1.0, categories=CATS), None),
        "blh": (m.BinaryLocalHashing(1.0, categories=CATS), None),
        "cms": (m.CountMeanSketch(2.0, n_buckets=8, n_hashes=4, categories=CATS), None),
        "hcms": (m.HadamardCountMeanSketch(2.0, n_buckets=8, n_hashes=4, categories=CATS), None),
        "uue": (m.UtilityOptimizedUnaryEncoding(1.0, **S), None),
        "ulh": (m.UtilityOptimizedLocalHashing(1.0, **S), None),
        "uhcms": (
            m.UtilityOptimizedHadamardCountMeanSketch(2.0, n_buckets=8, n_hashes=4, **S),
            None,
        ),
        "ubhr": (m.UtilityOptimizedBlockedHadamardResponse(1.0, block_size=2, **S), None),
        "lgrr": (lg.LongitudinalGRR(2.0, categories=CATS), None),
        "lue": (lg.LongitudinalUE(2.0, categories=CATS), None),
        "loloha": (lg.LongitudinalLocalHashing(2.0, categories=CATS), None),
        "dbitflip": (lg.DBitFlipPM(2.0, categories=CATS), None),
        "ulrr": (lg.UtilityOptimizedLongitudinalRR(2.0, **S), None),
        "ulrap": (lg.UtilityOptimizedLongitudinalRAPPOR(2.0, **S), None),
        "urr_permanent": (lg.UtilityOptimizedLongitudinalRR(2.0, **S), _permanent),
        "urap_permanent": (lg.UtilityOptimizedLongitudinalRAPPOR(2.0, **S), _permanent),
        "smp": (m.UtilityOptimizedRR(1.0, **S), lambda c: c.sampled_channel(3)),
        "rsfd": (
            m.RAPPOR(1.0, theta=0.5, categories=CATS),
            lambda c: c.sampled_fake_channel(3, "zero"),
        ),
    }
