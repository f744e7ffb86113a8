"""The names of the public specs and the classes that read them, resolved on first use.

Every spec names the class that reads it: ``{"mechanism": "rr", ...}`` for a
channel, ``{"protocol": "pem", ...}`` for an open-domain protocol.
:data:`SPEC_CLASSES` maps each name the package ships to its class as a
``"module:Class"`` string, imported with :mod:`importlib` the first time the
name is looked up. So a fresh process knows every name whatever it imported
before (``Channel.from_dict`` of a numeric or heavy-hitter spec works without
``import sklearn_uldp.numeric``), the published schema is the same in any
process, and this table, which sits in the lowest layer that reads specs,
imports nothing of the layers above it (numeric, longitudinal, marginals,
heavy hitters): the strings are resolved at run time, never at import.

Adding a mechanism to the package is one line here (its spec name and the
public path of its channel or protocol class); ``tests/mechanisms/test_registry.py``
checks that the table and the classes agree (docs/architecture.md, "How to
add a mechanism").

A user's own channel (a subclass declaring a ``name`` outside the package)
is registered when its class is created (:func:`register_spec_class`, called
by the base class's ``__init_subclass__``), since the user imported it to
build it. Third-party packages register the same way when imported; the
package reads no entry points, so loading a spec never imports code that
neither this table nor the user named.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["SPEC_CLASSES", "spec_class", "register_spec_class", "known_spec_names"]

#: spec name -> "module:Class" of the class that reads it. Channels of the
#: fixed-domain families first, then the numeric family and the marginals,
#: then the open-domain protocols (heavy hitters). Keep one entry per line.
SPEC_CLASSES: dict[str, str] = {
    # one-symbol and bit-vector channels (sklearn_uldp.mechanisms)
    "rr": "sklearn_uldp.mechanisms:RandomizedResponseChannel",
    "urr": "sklearn_uldp.mechanisms:UtilityOptimizedRRChannel",
    "identity": "sklearn_uldp.mechanisms:IdentityChannel",
    "rappor": "sklearn_uldp.mechanisms:RAPPORChannel",
    "urap": "sklearn_uldp.mechanisms:UnaryEncodingChannel",
    "ubd": "sklearn_uldp.mechanisms:UtilityOptimizedBlockDesignChannel",
    "ss": "sklearn_uldp.mechanisms:SubsetSelectionChannel",
    "uss": "sklearn_uldp.mechanisms:UtilityOptimizedSubsetSelectionChannel",
    "hr": "sklearn_uldp.mechanisms:HadamardResponseChannel",
    "hlhr": "sklearn_uldp.mechanisms:HighLowHadamardChannel",
    "bhr": "sklearn_uldp.mechanisms:BlockHadamardChannel",
    "binary_optimal": "sklearn_uldp.mechanisms:BinaryOptimalChannel",
    "olh": "sklearn_uldp.mechanisms:LocalHashingChannel",
    "blh": "sklearn_uldp.mechanisms:BinaryLocalHashingChannel",
    "cms": "sklearn_uldp.mechanisms:CountMeanSketchChannel",
    "hcms": "sklearn_uldp.mechanisms:HadamardCountMeanSketchChannel",
    # the LDP oracles made utility-optimized (docs/frontier.md)
    "uue": "sklearn_uldp.mechanisms:UtilityOptimizedUnaryEncodingChannel",
    "ulh": "sklearn_uldp.mechanisms:UtilityOptimizedLocalHashingChannel",
    "uhcms": "sklearn_uldp.mechanisms:UtilityOptimizedHadamardCountMeanSketchChannel",
    "ubhr": "sklearn_uldp.mechanisms:UtilityOptimizedBlockedHadamardChannel",
    # one attribute's column under the sampling strategies
    "smp": "sklearn_uldp.mechanisms:SampledChannel",
    "rsfd": "sklearn_uldp.mechanisms:SampledFakeChannel",
    # collection over time (memoized: sklearn_uldp.longitudinal)
    "lgrr": "sklearn_uldp.longitudinal:LongitudinalGRRChannel",
    "lue": "sklearn_uldp.longitudinal:LongitudinalUEChannel",
    "loloha": "sklearn_uldp.longitudinal:LongitudinalLocalHashingChannel",
    "dbitflip": "sklearn_uldp.longitudinal:DBitFlipChannel",
    "ulrr": "sklearn_uldp.longitudinal:UtilityOptimizedLongitudinalRRChannel",
    "ulrap": "sklearn_uldp.longitudinal:UtilityOptimizedLongitudinalRAPPORChannel",
    "urr_permanent": "sklearn_uldp.longitudinal:PermanentURRChannel",
    "urap_permanent": "sklearn_uldp.longitudinal:PermanentURAPChannel",
    # bounded numeric columns (sklearn_uldp.numeric)
    "duchi": "sklearn_uldp.numeric:DuchiChannel",
    "piecewise": "sklearn_uldp.numeric:PiecewiseChannel",
    "hybrid": "sklearn_uldp.numeric:HybridChannel",
    "square_wave": "sklearn_uldp.numeric:SquareWaveChannel",
    "uobm": "sklearn_uldp.numeric:UtilityOptimizedOneBitChannel",
    "multi_numeric": "sklearn_uldp.numeric:MultiNumericChannel",
    "smp_numeric": "sklearn_uldp.numeric:SampledNumericChannel",
    "rsfd_numeric": "sklearn_uldp.numeric:SampledFakeNumericChannel",
    # rows of several columns, one marginal per user (sklearn_uldp.marginals)
    "marginals": "sklearn_uldp.marginals:MarginalChannel",
    "range_queries": "sklearn_uldp.marginals:RangeQueryChannel",
    # open domains: heavy-hitter protocols (sklearn_uldp.heavy_hitters)
    "pem": "sklearn_uldp.heavy_hitters._protocol:PEMProtocol",
    "treehist": "sklearn_uldp.heavy_hitters._protocol:TreeHistProtocol",
    "bloom_rappor": "sklearn_uldp.heavy_hitters._bloom:BloomRAPPORProtocol",
    "uldp_heavy_hitters": "sklearn_uldp.heavy_hitters._utility:UtilityOptimizedProtocol",
    "uldp_local_hashing": "sklearn_uldp.heavy_hitters._ulh:UtilityOptimizedLocalHashingProtocol",
}

#: Names resolved so far (the package's) and the users' registered classes.
_RESOLVED: dict[str, type] = {}
_REGISTERED: dict[str, type] = {}


def resolve_path(path: str) -> Any:
    """The object a ``"module:attribute"`` path names (imported on first use)."""
    module, _, attribute = path.partition(":")
    return getattr(importlib.import_module(module), attribute)


def spec_class(name: object) -> Any:
    """The class that reads specs named ``name``, or None for an unknown name.

    The package's names resolve through :data:`SPEC_CLASSES` (importing the
    class's module the first time); a user's registered class comes next.

    Examples
    --------
    >>> from sklearn_uldp.mechanisms._registry import spec_class
    >>> spec_class("hybrid").__name__  # numeric: no import of sklearn_uldp.numeric needed
    'HybridChannel'
    >>> spec_class("nope") is None
    True
    """
    if not isinstance(name, str):
        return None
    cls = _RESOLVED.get(name)
    if cls is not None:
        return cls
    path = SPEC_CLASSES.get(name)
    if path is None:
        return _REGISTERED.get(name)
    cls = _RESOLVED[name] = resolve_path(path)
    return cls


def register_spec_class(cls: type) -> None:
    """Register a spec class that declares its own ``name`` (its base class's hook).

    The package's classes are found through :data:`SPEC_CLASSES` (a class of
    the package missing from it is still registered here, and
    ``tests/mechanisms/test_registry.py`` fails until it is added). A class outside the
    package may not take a name of the package's: a spec would then mean two
    things.
    """
    name = cls.__dict__.get("name")
    if name is None:
        return  # an abstract base, or a subclass that keeps its parent's spec name
    in_package = cls.__module__.split(".")[0] == "sklearn_uldp"
    if name in SPEC_CLASSES:
        if in_package:
            return
        raise ValueError(
            f"The spec name {name!r} of {cls.__qualname__} is taken by sklearn-uldp's "
            f"{SPEC_CLASSES[name].rpartition(':')[2]}: give the class another name (its "
            "specs would otherwise be read as the package's)."
        )
    _REGISTERED[name] = cls


def known_spec_names() -> list[str]:
    """Every name a spec may have: the package's and the registered ones, sorted."""
    return sorted({*SPEC_CLASSES, *_REGISTERED})
