"""The mechanisms of the command line: one table, named as their specs are.

Every mechanism the command line builds is one row of :data:`_TABLE`: the
class whose ``name`` is the **spec name** (what ``"mechanism"`` or
``"protocol"`` says in a spec, and what ``--mechanism`` and a config take),
the mechanism class, and the family, which decides how the column is read:

* ``categorical``: a domain of categories (``--categories``), memoized
  (longitudinal) mechanisms among them;
* ``numeric``: numbers in public ``bounds``;
* ``heavy_hitters``: items of an open domain (text), no domain up front.

Everything else about a mechanism is read from its constructor: the
parameters a config may set (all but ``random_state``, and the output
options the command line manages), whether it needs sensitive values
(``sensitive`` without a default), whether it memoizes (``memo_label``: it
then needs the users' secrets), and its budget (``epsilon``, or
``epsilon_perm`` and ``epsilon_1``, ...). A mechanism added to the table is
thus on the command line with all its parameters, and its spec name is the
one :meth:`Channel.from_dict <sklearn_uldp.mechanisms.Channel.from_dict>`
reads back.

The names the command line used before it took the spec names stay accepted
(:data:`ALIASES`): ``oue`` and ``uoue`` are ``rappor`` and ``urap`` with
``theta=0.5``, ``uhr`` is ``hlhr`` (one channel, two class names).

Names are read from the registry of spec names by :func:`spec_name` only,
and classes are imported by :func:`load` only, when a command needs them:
``sklearn-uldp --help`` imports no mechanism.
"""

from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass, field
from functools import cache
from typing import Any

__all__ = [
    "CATEGORICAL",
    "NUMERIC",
    "HEAVY_HITTERS",
    "ALIASES",
    "MechanismEntry",
    "spec_name",
    "load",
    "mechanism_table",
    "resolve",
    "names",
    "spec_from_dict",
    "family_of",
]

CATEGORICAL, NUMERIC, HEAVY_HITTERS = "categorical", "numeric", "heavy_hitters"

#: Where the memoized (longitudinal) mechanisms are imported from: one place,
#: so that moving them (to ``sklearn_uldp.longitudinal``) is one edit.
LONGITUDINAL_MODULE = "sklearn_uldp.longitudinal"

_M, _N, _H, _L = (
    "sklearn_uldp.mechanisms",
    "sklearn_uldp.numeric",
    "sklearn_uldp.heavy_hitters",
    LONGITUDINAL_MODULE,
)

#: (class whose ``name`` is the spec name, mechanism class, family), in the
#: order of the help texts. Paths are strings: nothing is imported here.
_TABLE = (
    (f"{_M}.RandomizedResponseChannel", f"{_M}.RandomizedResponse", CATEGORICAL),
    (f"{_M}.UtilityOptimizedRRChannel", f"{_M}.UtilityOptimizedRR", CATEGORICAL),
    (f"{_M}.RAPPORChannel", f"{_M}.RAPPOR", CATEGORICAL),
    (f"{_M}.UnaryEncodingChannel", f"{_M}.UtilityOptimizedRAPPOR", CATEGORICAL),
    (f"{_M}.LocalHashingChannel", f"{_M}.OptimizedLocalHashing", CATEGORICAL),
    (f"{_M}.BinaryLocalHashingChannel", f"{_M}.BinaryLocalHashing", CATEGORICAL),
    (f"{_M}.SubsetSelectionChannel", f"{_M}.SubsetSelection", CATEGORICAL),
    (
        f"{_M}.UtilityOptimizedSubsetSelectionChannel",
        f"{_M}.UtilityOptimizedSubsetSelection",
        CATEGORICAL,
    ),
    (f"{_M}.CountMeanSketchChannel", f"{_M}.CountMeanSketch", CATEGORICAL),
    (f"{_M}.HadamardCountMeanSketchChannel", f"{_M}.HadamardCountMeanSketch", CATEGORICAL),
    (f"{_M}.HadamardResponseChannel", f"{_M}.HadamardResponse", CATEGORICAL),
    (f"{_M}.HighLowHadamardChannel", f"{_M}.HighLowHadamardResponse", CATEGORICAL),
    (
        f"{_M}.UtilityOptimizedBlockDesignChannel",
        f"{_M}.UtilityOptimizedBlockDesign",
        CATEGORICAL,
    ),
    (f"{_M}.BinaryOptimalChannel", f"{_M}.BinaryOptimalResponse", CATEGORICAL),
    (f"{_L}.LongitudinalGRRChannel", f"{_L}.LongitudinalGRR", CATEGORICAL),
    (f"{_L}.LongitudinalUEChannel", f"{_L}.LongitudinalUE", CATEGORICAL),
    (f"{_L}.LongitudinalLocalHashingChannel", f"{_L}.LongitudinalLocalHashing", CATEGORICAL),
    (f"{_L}.DBitFlipChannel", f"{_L}.DBitFlipPM", CATEGORICAL),
    (
        f"{_L}.UtilityOptimizedLongitudinalRRChannel",
        f"{_L}.UtilityOptimizedLongitudinalRR",
        CATEGORICAL,
    ),
    (
        f"{_L}.UtilityOptimizedLongitudinalRAPPORChannel",
        f"{_L}.UtilityOptimizedLongitudinalRAPPOR",
        CATEGORICAL,
    ),
    (f"{_N}.DuchiChannel", f"{_N}.DuchiMechanism", NUMERIC),
    (f"{_N}.PiecewiseChannel", f"{_N}.PiecewiseMechanism", NUMERIC),
    (f"{_N}.HybridChannel", f"{_N}.HybridMechanism", NUMERIC),
    (f"{_N}.SquareWaveChannel", f"{_N}.SquareWave", NUMERIC),
    (f"{_N}.UtilityOptimizedOneBitChannel", f"{_N}.UtilityOptimizedOneBitMechanism", NUMERIC),
    (f"{_H}._protocol.PEMProtocol", f"{_H}.PrefixExtendingMethod", HEAVY_HITTERS),
    (f"{_H}._protocol.TreeHistProtocol", f"{_H}.TreeHist", HEAVY_HITTERS),
    (f"{_H}._bloom.BloomRAPPORProtocol", f"{_H}.BloomRAPPOR", HEAVY_HITTERS),
    (
        f"{_H}._utility.UtilityOptimizedProtocol",
        f"{_H}.UtilityOptimizedHeavyHitters",
        HEAVY_HITTERS,
    ),
)

#: The collector of each heavy-hitter mechanism (the others' estimators are
#: chosen by ``estimate --estimator``): Bloom RAPPOR is decoded against
#: candidates, the prefix and utility-optimized protocols discover items.
COLLECTORS = {f"{_H}.BloomRAPPOR": f"{_H}.BloomRAPPORDecoder"}
DEFAULT_COLLECTOR = f"{_H}.HeavyHitterEstimator"

#: The command line's earlier names: alias -> (mechanism class, parameters it
#: fixes). Accepted wherever a spec name is; specs always carry the spec name.
ALIASES = {
    "oue": (f"{_M}.RAPPOR", {"theta": 0.5}),
    "uoue": (f"{_M}.UtilityOptimizedRAPPOR", {"theta": 0.5}),
    "uhr": (f"{_M}.HighLowHadamardResponse", {}),
}

#: Parameters the command line sets itself (never from a config).
_MANAGED = ("random_state", "sparse_output", "packed_output")

#: The budgets a mechanism may take, as sets that go together; a mechanism's
#: are those whose parameters it has, and one of them must be given.
_BUDGETS = (
    ("epsilon",),
    ("epsilon_perm", "epsilon_1"),
    ("epsilon_12", "epsilon_21"),
    ("p", "q", "f"),
)

#: Parameters a family needs whatever the mechanism (the public range of
#: numbers: learning it from the data would reveal it).
_FAMILY_NEEDS = {NUMERIC: ("bounds",)}


def spec_name(class_path: str) -> str:
    """The spec name of a channel (or protocol) class, from the registry of spec names.

    The one place the command line learns the names of mechanisms: it reads
    the package's one table of spec names
    (:data:`~sklearn_uldp.mechanisms._registry.SPEC_CLASSES`), which names
    each class by its public path, so that nothing is imported to learn a
    name.

    Parameters
    ----------
    class_path : str
        Dotted path of the class, e.g.
        ``"sklearn_uldp.mechanisms.RandomizedResponseChannel"``.

    Returns
    -------
    name : str

    Examples
    --------
    >>> from sklearn_uldp.cli._names import spec_name
    >>> spec_name("sklearn_uldp.mechanisms.HighLowHadamardChannel")
    'hlhr'
    """
    from ..mechanisms._registry import SPEC_CLASSES

    module, _, cls = class_path.rpartition(".")
    path = f"{module}:{cls}"
    for name, registered in SPEC_CLASSES.items():
        if registered == path:
            return name
    raise KeyError(
        f"{class_path} is not in the registry of spec names (SPEC_CLASSES in "
        "sklearn_uldp/mechanisms/_registry.py): register it, under its public path."
    )


def load(path: str) -> Any:
    """Import the class at a dotted path (``"package.module.Class"``)."""
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


@dataclass(frozen=True)
class MechanismEntry:
    """One mechanism of the command line (see the module notes).

    Attributes
    ----------
    name : str
        The spec name.
    cls : type
        The mechanism class.
    family : {"categorical", "numeric", "heavy_hitters"}
    parameters : tuple of str
        What a config may set: the constructor's parameters but those the
        command line manages (``random_state``, ``sparse_output``,
        ``packed_output``).
    budgets : tuple of tuple of str
        The sets of budget parameters it takes; one must be given whole.
    needs : tuple of str
        Parameters that must be given (``sensitive`` of the utility-optimized
        mechanisms, ``bounds`` of numeric ones).
    memoized : bool
        Whether it memoizes answers per user (it then needs the users'
        secrets).
    packable : bool
        Whether its reports are bit vectors it can write packed (it takes
        both ``sparse_output`` and ``packed_output``; a count-mean sketch
        takes only the latter, for its bits after the hash index).
    aliases : tuple of str
        Its earlier command-line names (:data:`ALIASES`).
    collector : str or None
        Dotted path of the estimator of a heavy-hitter mechanism's reports.
    """

    name: str
    cls: type
    family: str
    parameters: tuple[str, ...]
    budgets: tuple[tuple[str, ...], ...]
    needs: tuple[str, ...] = ()
    memoized: bool = False
    packable: bool = False
    aliases: tuple[str, ...] = field(default=())
    collector: str | None = None

    @property
    def utility_optimized(self) -> bool:
        """Whether it takes sensitive values (utility-optimized privacy)."""
        return "sensitive" in self.parameters


def _entry(name, cls, family, aliases, path):
    signature = inspect.signature(cls.__init__)
    params = [p for p in signature.parameters.values() if p.name != "self"]
    names_ = tuple(p.name for p in params if p.name not in _MANAGED)
    required = tuple(
        p.name for p in params if p.name == "sensitive" and p.default is inspect.Parameter.empty
    )
    return MechanismEntry(
        name=name,
        cls=cls,
        family=family,
        parameters=names_,
        budgets=tuple(b for b in _BUDGETS if set(b) <= set(names_)),
        needs=required + _FAMILY_NEEDS.get(family, ()),
        memoized="memo_label" in names_,
        packable={"packed_output", "sparse_output"} <= set(signature.parameters),
        aliases=aliases,
        collector=COLLECTORS.get(path, DEFAULT_COLLECTOR) if family == HEAVY_HITTERS else None,
    )


def mechanism_table() -> dict[str, MechanismEntry]:
    """Spec name -> :class:`MechanismEntry`, for every mechanism of the command line.

    Imports the mechanisms (once).

    Examples
    --------
    >>> from sklearn_uldp.cli._names import mechanism_table
    >>> entry = mechanism_table()["lgrr"]
    >>> entry.family, entry.budgets, entry.memoized
    ('categorical', (('epsilon_perm', 'epsilon_1'),), True)
    """
    return dict(_tables()[0])


@cache
def _tables():
    """(spec name -> entry, mechanism class path -> entry)."""
    by_name, by_path = {}, {}
    for channel, mechanism, family in _TABLE:
        aliases = tuple(a for a, (path, _) in ALIASES.items() if path == mechanism)
        entry = _entry(spec_name(channel), load(mechanism), family, aliases, mechanism)
        by_name[entry.name] = by_path[mechanism] = entry
    return by_name, by_path


def resolve(name: object) -> tuple[MechanismEntry, dict]:
    """The entry of a spec name or alias (any case) and the parameters it fixes.

    Raises
    ------
    ValueError
        For an unknown name, listing the known ones.

    Examples
    --------
    >>> from sklearn_uldp.cli._names import resolve
    >>> entry, fixed = resolve("OUE")
    >>> entry.name, fixed
    ('rappor', {'theta': 0.5})
    """
    by_name, by_path = _tables()
    key = name.lower() if isinstance(name, str) else None
    if key in by_name:
        return by_name[key], {}
    if key in ALIASES:
        path, fixed = ALIASES[key]
        return by_path[path], dict(fixed)
    known = ", ".join(names())
    raise ValueError(
        f"Unknown mechanism {name!r}; choose one of {known} (or the aliases {', '.join(ALIASES)})."
    )


def names(family: str | None = None) -> list[str]:
    """The spec names, in the table's order (of one family, if given).

    Examples
    --------
    >>> from sklearn_uldp.cli._names import names
    >>> names("numeric")
    ['duchi', 'piecewise', 'hybrid', 'square_wave', 'uobm']
    """
    return [n for n, e in _tables()[0].items() if family in (None, e.family)]


class NameChoices:
    """The ``choices`` of a mechanism option, resolved only when used.

    ``argparse`` reads ``choices`` when it checks a value or lists them in
    an error; building the parser reads nothing, so that ``--help`` of
    another command imports no mechanism.
    """

    def __init__(self, family=None, *, aliases=True):
        self.family = family
        self.aliases = aliases

    def _all(self):
        found = names(self.family)
        if self.aliases:
            found += [a for a in ALIASES if resolve(a)[0].name in found]
        return found

    def __contains__(self, value):
        return isinstance(value, str) and value.lower() in self._all()

    def __iter__(self):
        return iter(self._all())


def spec_from_dict(spec: dict) -> object:
    """The channel (or heavy-hitter protocol) a spec entry describes, validated.

    The one place the command line turns a spec entry into its channel: a
    heavy-hitter protocol's spec names itself under ``"protocol"``, every
    other under ``"mechanism"``. The registry of spec names knows every
    family's names whatever was imported before (a fresh ``estimate`` of
    numeric reports), importing the one class a spec names.

    Examples
    --------
    >>> from sklearn_uldp.cli._names import spec_from_dict
    >>> spec_from_dict({"mechanism": "hybrid", "epsilon": 1.0, "bounds": [0, 1]}).name
    'hybrid'
    """
    if isinstance(spec, dict) and "protocol" in spec and "mechanism" not in spec:
        from ..heavy_hitters import protocol_from_dict

        return protocol_from_dict(spec)
    from ..mechanisms import Channel

    return Channel.from_dict(spec)


def family_of(channel: object) -> str | None:
    """The family of a channel or protocol, by its spec name (None: not in the table)."""
    entry = _tables()[0].get(getattr(channel, "name", None))
    return None if entry is None else entry.family
