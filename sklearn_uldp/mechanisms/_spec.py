"""The public spec every mechanism publishes: one base for channels and protocols.

What crosses from the users to the collector is the reports and their
*spec*: a :class:`~sklearn_uldp.mechanisms.Channel` for a fixed domain
(``{"mechanism": "rr", ...}``) or an open-domain protocol of
:mod:`sklearn_uldp.heavy_hitters` (``{"protocol": "pem", ...}``). Both are
a :class:`PublicSpec`: a name found in one registry
(:mod:`~sklearn_uldp.mechanisms._registry`), a format version under one
policy, a JSON round trip that validates every field like the constructor,
equality by value, and the declarations of what the reports look like and
which estimator reads them (docs/architecture.md, "The contract each new
family implements").
"""

from __future__ import annotations

import inspect
import json
import numbers
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..exceptions import InvalidSpecError
from ._registry import known_spec_names, register_spec_class, resolve_path, spec_class

__all__ = ["PublicSpec", "read_spec", "check_spec_version"]

#: Key of ``DataFrame.attrs`` under which pandas reports carry a channel's spec
#: (a spec class may name another: :attr:`PublicSpec.reports_attr`).
CHANNEL_ATTR = "sklearn_uldp_channel"

#: The field naming the class, by kind of spec (and the word errors use).
SPEC_KEYS = ("mechanism", "protocol")


class PublicSpec:
    """Base of every public spec: a channel or an open-domain protocol.

    Subclasses set :attr:`name` (their registry key, also written in the
    spec), define their parameters in :meth:`get_params` (the constructor's
    keyword arguments, so that the spec round-trips), and implement the
    report contract (:meth:`sample`, :meth:`encode_reports`,
    :meth:`statistics`). The rest has defaults here.

    The spec-version policy is one for all: a class writes its
    :attr:`spec_version`; a spec of a newer version is refused (its fields
    may mean something else), an older or equal one (or one without the
    field, written before versions existed) is read.

    The declarations below (``has_categories``, ``bit_vector_reports``, ...)
    are what code outside a family asks instead of comparing names: the
    contract each new family implements is tabled in ``docs/architecture.md``.

    Examples
    --------
    >>> from sklearn_uldp import HybridMechanism, RandomizedResponse
    >>> from sklearn_uldp.mechanisms import PublicSpec
    >>> rr = RandomizedResponse(1.0, categories=["a", "b"]).fit().channel_
    >>> isinstance(rr, PublicSpec), rr.report_column_names("color"), rr.has_categories
    (True, ['color'], True)
    >>> hybrid = HybridMechanism(1.0, bounds=(0, 10)).fit().channel_
    >>> PublicSpec.from_json(hybrid.to_json()) == hybrid, hybrid.default_estimator()
    (True, MeanEstimator())
    """

    #: Registry key, also stored in the spec under :attr:`spec_key`.
    name: str | None = None
    #: Version of the spec format this class writes (and the newest it reads).
    spec_version: int = 1
    #: The field of the spec that holds :attr:`name`.
    spec_key: str = "mechanism"
    #: The key of ``DataFrame.attrs`` under which pandas reports carry the spec.
    reports_attr: str = CHANNEL_ATTR
    #: What one report is, in words ("categorical", "bits", "sketch",
    #: "numeric", "numeric_rows"; None for the protocols). Descriptive only: code asks the
    #: declarations below, never this string.
    report_format: str | None = None
    #: Whether the reports estimate a distribution over ``categories`` (the
    #: estimators of :mod:`sklearn_uldp.estimators` apply).
    has_categories: bool = False
    #: Whether a report is a 0/1 vector with one bit per category (dense,
    #: scipy CSR with ``sparse_output=True``, or packed).
    bit_vector_reports: bool = False
    #: Whether the reports are one output code each and the statistics their
    #: histogram over ``n_outputs`` codes, with ``forward`` giving its law.
    histogram_reports: bool = False
    #: The estimator of these reports when the caller names none
    #: (``"module:Class"``, resolved on first use: it sits in a layer above).
    default_estimator_path: str | None = None
    #: The estimators that read these reports (``"module:Class"`` of their
    #: base); None: the default estimator's class.
    estimator_base_path: str | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        register_spec_class(cls)

    # ------------------------------------------------------------ parameters
    def get_params(self) -> dict[str, Any]:
        """The parameters that define the spec (the constructor's arguments)."""
        raise NotImplementedError

    def _spec_body(self) -> dict[str, Any]:
        """The spec's fields after the name and the version."""
        return self.get_params()

    @classmethod
    def _spec_fields(cls) -> tuple[list[str], list[str]]:
        """(required, optional) field names of this class's spec: its constructor's."""
        params = list(inspect.signature(cls.__init__).parameters.values())[1:]
        params = [p for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        required = [p.name for p in params if p.default is inspect.Parameter.empty]
        optional = [p.name for p in params if p.default is not inspect.Parameter.empty]
        return required, optional

    @classmethod
    def _from_spec(cls, fields: dict[str, Any]) -> PublicSpec:
        """The spec of validated field names (the constructor checks their values)."""
        return cls(**fields)

    # ---------------------------------------------------------------- JSON
    def to_dict(self) -> dict[str, Any]:
        """The public spec, a JSON-serialisable dict.

        Keys: :attr:`spec_key` (the registry name), ``spec_version`` and the
        parameters (see ``docs/spec_format.md``).
        """
        return {self.spec_key: self.name, "spec_version": self.spec_version, **self._spec_body()}

    def to_json(self, **kwargs: Any) -> str:
        """Serialise the public spec to a JSON string."""
        return json.dumps(self.to_dict(), **kwargs)

    @staticmethod
    def from_dict(spec: Mapping[str, Any]) -> PublicSpec:
        """Rebuild any spec (channel or protocol) from :meth:`to_dict` output.

        See :meth:`Channel.from_dict <sklearn_uldp.mechanisms.Channel.from_dict>`.

        Examples
        --------
        >>> from sklearn_uldp.mechanisms._spec import PublicSpec
        >>> PublicSpec.from_dict({"mechanism": "duchi", "bounds": [0, 1], "epsilon": 1.0})
        DuchiChannel(bounds=(0.0, 1.0), epsilon=1.0)
        """
        return read_spec(spec, PublicSpec)

    @staticmethod
    def from_json(text: str | bytes) -> PublicSpec:
        """Rebuild any spec from :meth:`to_json` output (see :meth:`from_dict`)."""
        return read_spec(_loads(text), PublicSpec)

    # ------------------------------------------------------------- identity
    def _key(self) -> tuple[Any, ...]:
        params = tuple((key, _hashable(v)) for key, v in sorted(self.get_params().items()))
        return (self.name, params)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PublicSpec):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __sklearn_clone__(self) -> PublicSpec:
        # A spec is an immutable public description: cloning shares it.
        return self

    def describe_difference(self, other: PublicSpec) -> list[str]:
        """Human-readable list of what differs between two specs."""
        if type(self) is not type(other):
            return [f"{self.spec_key} {self.name!r} vs {getattr(other, 'name', other)!r}"]
        mine: dict[str, Any] = self.get_params()
        theirs: dict[str, Any] = other.get_params()
        diffs = []
        for key in mine:
            a: Any = mine[key]
            b: Any = theirs.get(key)
            equal = np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b
            if not equal:
                diffs.append(key if isinstance(a, np.ndarray) else f"{key}: {a!r} vs {b!r}")
        return diffs

    # -------------------------------------------------------------- reports
    @property
    def report_width(self) -> int:
        """Number of report columns one report takes (one per category for bit vectors)."""
        return 1

    def report_column_names(self, column: str) -> list[str]:
        """Names of the report columns of one input column named ``column``.

        What the mechanisms' ``get_feature_names_out`` gives and the command
        line writes: the column's own name for a one-value report.
        """
        return [str(column)]

    def report_dtypes(self, column: str) -> list[np.dtype]:
        """The dtype of each report column (:meth:`report_column_names`).

        What ``transform`` returns, so the schema of every chunk and Dask
        partition (the ``meta`` of :func:`~sklearn_uldp.parallel.privatize`):
        integer codes unless the spec says otherwise.
        """
        return [np.dtype(np.int64)] * self.report_width

    def sample(self, *args: Any, **kwargs: Any) -> Any:
        """Privatize encoded inputs (the users' side)."""
        raise NotImplementedError

    def encode_reports(self, reports: Any) -> Any:
        """Validate reports and turn them into the spec's internal codes."""
        raise NotImplementedError

    def statistics(self, codes: Any, *, keep_reports: bool = False) -> Any:
        """Sufficient statistics of encoded reports (they add up)."""
        raise NotImplementedError

    def merge_extra(self, a: Any, b: Any) -> Any:
        """Combine the per-report parts of two statistics (None: counts only)."""
        if a is None or b is None:
            return None
        return a + b

    # ------------------------------------------------------------ collector
    def default_estimator(self, **params: Any) -> Any:
        """A new unfitted estimator of these reports: the family's default.

        Parameters
        ----------
        **params
            Passed to the estimator's constructor (e.g. ``mechanism=spec``).

        Examples
        --------
        >>> from sklearn_uldp.mechanisms import Channel
        >>> spec = {"mechanism": "hybrid", "bounds": [0, 1], "epsilon": 1.0}
        >>> Channel.from_dict(spec).default_estimator()
        MeanEstimator()
        """
        if self.default_estimator_path is None:
            raise TypeError(f"{type(self).__name__} names no default estimator.")
        return resolve_path(self.default_estimator_path)(**params)

    def accepts_estimator(self, estimator: Any) -> bool:
        """Whether ``estimator`` estimates from reports of this kind.

        Examples
        --------
        >>> from sklearn_uldp import EMEstimator, MeanEstimator
        >>> from sklearn_uldp.mechanisms import RandomizedResponseChannel
        >>> channel = RandomizedResponseChannel(["a", "b"], epsilon=1.0)
        >>> channel.accepts_estimator(EMEstimator()), channel.accepts_estimator(MeanEstimator())
        (True, False)
        """
        path = self.estimator_base_path or self.default_estimator_path
        return path is not None and isinstance(estimator, resolve_path(path))


def check_spec_version(version: object, cls: type[PublicSpec], name: str) -> None:
    """The one spec-version policy: integers from 1 to the class's ``spec_version``.

    A missing version (None) is read: specs saved before the field existed.
    """
    if version is None:
        return
    current = cls.spec_version
    if isinstance(version, bool) or not isinstance(version, numbers.Integral):
        raise InvalidSpecError(
            f"spec_version must be an integer (this sklearn-uldp writes {current} for "
            f"{cls.spec_key} {name!r}), got {type(version).__name__}."
        )
    if int(version) > current:
        raise InvalidSpecError(
            f"The spec has spec_version {int(version)}, newer than the version {current} "
            f"this sklearn-uldp reads for {cls.spec_key} {name!r}. Upgrade sklearn-uldp "
            "to load it."
        )
    if int(version) < 1:
        raise InvalidSpecError(
            f"spec_version must be >= 1, got {int(version)}; the first spec version is 1."
        )


def read_spec(spec: object, base: type[PublicSpec] = PublicSpec) -> Any:
    """Rebuild a spec of kind ``base`` from its dict, validating every field.

    The checks, in order: a JSON object; a known name under the field of its
    kind (``mechanism`` for channels, ``protocol`` for protocols); the
    version (:func:`check_spec_version`); no unknown and no missing field;
    then the class's constructor, which validates each value with the rules
    of the mechanism's own parameters. Every failure is an
    :class:`~sklearn_uldp.exceptions.InvalidSpecError` saying what to fix.
    """
    keys = SPEC_KEYS if base is PublicSpec else (base.spec_key,)
    kind = " or ".join(repr(k) for k in keys)
    if not isinstance(spec, Mapping):
        raise InvalidSpecError(
            f"A spec is a JSON object (a dict) with a {kind} field, got "
            f"{type(spec).__name__}. Load it with from_json, or pass the dict written "
            "by to_dict()."
        )
    fields = dict(spec)
    key = next((k for k in keys if k in fields), None)
    if key is None:
        other = next((k for k in SPEC_KEYS if k in fields), None)
        if other is None:
            hint = f" Add it: one of {known_spec_names()}."
        elif other == "protocol":
            hint = (
                " It has a 'protocol' field: it is the spec of an open-domain protocol, "
                "which sklearn_uldp.heavy_hitters.protocol_from_dict reads."
            )
        else:
            hint = (
                " It has a 'mechanism' field: it is a channel spec, which Channel.from_dict reads."
            )
        raise InvalidSpecError(f"The spec has no {kind} field.{hint}")
    name = fields.pop(key)
    cls = spec_class(name)
    if cls is None or cls.spec_key != key or not issubclass(cls, base):
        shown = name if isinstance(name, str) else type(name).__name__
        raise InvalidSpecError(
            f"Unknown {key} {shown!r} in the spec; known: {known_spec_names()}. Was the "
            "spec written by a newer sklearn-uldp, or edited by hand?"
        )
    check_spec_version(fields.pop("spec_version", None), cls, name)
    required, optional = cls._spec_fields()
    unknown = sorted(set(fields) - set(required) - set(optional), key=str)
    if unknown:
        raise InvalidSpecError(
            f"Unknown field(s) {unknown} in the spec of {key} {name!r}; its fields are "
            f"{[key, 'spec_version', *required, *optional]}. Remove them or fix their "
            "spelling."
        )
    missing = [field for field in required if field not in fields]
    if missing:
        raise InvalidSpecError(
            f"The spec of {key} {name!r} misses the field(s) {missing}; add them "
            "(see docs/spec_format.md)."
        )
    try:
        return cls._from_spec(fields)
    except (TypeError, ValueError) as exc:
        raise InvalidSpecError(f"Invalid spec of {key} {name!r}: {exc}") from None
    except OverflowError:
        # An integer beyond a float (JSON allows any) reached arithmetic
        # before a check refused it.
        raise InvalidSpecError(
            f"Invalid spec of {key} {name!r}: a number in it is too large for a float "
            "(beyond 1.8e308); the spec is damaged or was not written by to_json()."
        ) from None


def _loads(text: str | bytes) -> Any:
    """A spec's JSON text as Python objects, with the spec errors."""
    try:
        return json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidSpecError(f"The spec is not valid JSON: {exc}") from None
    except RecursionError:
        raise InvalidSpecError(
            "The spec nests arrays or objects too deeply to be read (a spec is one "
            "object of fields, with flat lists): it is damaged or was not written by "
            "to_json()."
        ) from None


def _hashable(value: Any) -> Any:
    """A parameter value as a hashable key (arrays flattened, lists as tuples)."""
    if isinstance(value, np.ndarray):
        return tuple(np.ravel(value).tolist())
    if isinstance(value, (list, tuple)):
        return tuple(_hashable(v) for v in value)
    return value
