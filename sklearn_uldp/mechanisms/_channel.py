"""The channel: a mechanism's public spec and its contract with the estimators.

A *channel* is the conditional distribution Q(y | x) of a privacy mechanism,
together with everything a data collector needs to estimate the distribution
of the true values from reports: the domain, the budget and the structure of
Q. It holds nothing private (no user data, no random state).

The contract (see ``docs/architecture.md``) has three parts, which is all an
estimator ever uses, so every estimator works with every mechanism:

1. **Sufficient statistics** -- :meth:`Channel.statistics` turns a batch of
   encoded reports into a :class:`ReportStatistics` that *adds up* across
   chunks, machines and partitions.
2. **The linear (unbiased) estimator** -- every mechanism here has a
   per-category statistic whose observed frequency ``f`` gives the unbiased
   estimate ``a * f + b`` (:meth:`Channel.observed_frequency`,
   :attr:`Channel.coef_a`, :attr:`Channel.coef_b`). Its null variance sets the
   significance threshold.
3. **The likelihood** -- :meth:`Channel.em_gradient` returns, for a candidate
   distribution ``p``, the vector ``g(x) = (1/n) sum_i Q(y_i|x) / m_p(y_i)``
   (so that the EM update is ``p * g``) and the log-likelihood, computed with
   the channel's structure (never an n-by-k posterior matrix);
   :meth:`Channel.likelihood` gives Q(y_i | x) for a batch of reports (for
   posteriors).

Two families implement it: :class:`CategoricalChannel` (one output symbol per
report; statistics = the histogram of outputs; EM through structured
``forward``/``adjoint`` products) and the bit-vector channels of the RAPPOR
family.
"""

from __future__ import annotations

import contextlib
import inspect
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from ..exceptions import ReportMismatchError
from ..utils._validation import (
    check_channel_categories,
    check_epsilon,
    check_realizable,
    describe_values,
    positions,
)
from ._registry import SPEC_CLASSES, known_spec_names, spec_class
from ._spec import PublicSpec, _hashable, _loads, read_spec

__all__ = [
    "Channel",
    "CategoricalChannel",
    "ReportStatistics",
    "CHANNEL_REGISTRY",
    "SPEC_VERSION",
    "spec_json_schema",
]

#: Version of the spec format written by :meth:`Channel.to_dict`. A spec
#: without ``spec_version`` (written before versioning) is read as version 1;
#: a newer version is refused, since its fields may mean something else.
SPEC_VERSION = 1


class _ChannelRegistry(Mapping):
    """name -> Channel subclass, read from the one registry (``_registry``).

    A read-only view kept for code that looked names up here: every
    package name is known in any process (resolved on first use), with the
    users' registered channels; the open-domain protocols are left out.
    """

    def __getitem__(self, name: str) -> type[Channel]:
        cls = spec_class(name)
        if cls is None or not issubclass(cls, Channel):
            raise KeyError(name)
        return cls

    def __iter__(self) -> Iterator[str]:
        return (name for name in known_spec_names() if name in self)

    def __contains__(self, name: object) -> bool:
        cls = spec_class(name)
        return cls is not None and issubclass(cls, Channel)

    def __len__(self) -> int:
        return sum(1 for _ in self)


#: name -> Channel subclass, so that a spec can be rebuilt from JSON.
CHANNEL_REGISTRY: Mapping[str, type[Channel]] = _ChannelRegistry()

#: The laws of RS+FD's fake reports (``_attribute_sampling``) are built on the
#: channels of this module and of the modules above it, so the channel's methods
#: that use them (``fake_kinds``, ``sample_fakes``, ``fake_law``,
#: ``fake_ratio_classes``) and ``BaseMechanism._fake_classes_at`` reach them
#: through this table, which ``_attribute_sampling`` fills when it is imported
#: (``sklearn_uldp.mechanisms`` imports it), and the sampled channels through the
#: registry: the imports inside the subpackage point one way.
FAKE_REPORT_LAWS: dict[str, Any] = {}

_MISSING = ("sklearn_uldp", "missing category")


def _is_missing_scalar(value):
    try:
        return value is None or bool(value != value)
    except (TypeError, ValueError):
        return False


#: Largest output space for which :meth:`Channel.matrix` builds the full matrix.
MAX_MATRIX_OUTPUTS = 1 << 16


@dataclass
class ReportStatistics:
    """Sufficient statistics of a batch of reports.

    They add up: ``statistics(a) + statistics(b) == statistics(a ++ b)``, which
    is what makes chunked, partitioned and distributed estimation exact.

    Attributes
    ----------
    channel : Channel
        The channel the reports came from.
    n : int
        Number of reports.
    counts : ndarray
        The additive counts: the histogram of outputs for categorical channels,
        the number of reports with each bit set for bit-vector channels.
    extra : object or None
        Per-report data that some channels need for the exact likelihood
        (bit-vector reports); ``None`` when the counts are sufficient.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp.mechanisms import RandomizedResponseChannel
    >>> channel = RandomizedResponseChannel(["a", "b", "c"], epsilon=1.0)
    >>> codes = channel.encode_reports(np.array(["a", "b", "b", "c"], dtype=object))
    >>> total = channel.statistics(codes[:2]) + channel.statistics(codes[2:])
    >>> total.n, total.counts.tolist()
    (4, [1, 2, 1])
    >>> bool(np.array_equal(total.counts, channel.statistics(codes).counts))
    True
    """

    channel: Channel
    n: int
    counts: np.ndarray
    extra: object = field(default=None, repr=False)

    def __add__(self, other):
        if not isinstance(other, ReportStatistics):
            return NotImplemented
        if other.channel != self.channel:
            raise ReportMismatchError(
                "Cannot add statistics of reports from different mechanisms: "
                f"{self.channel!r} vs {other.channel!r}."
            )
        extra = self.channel.merge_extra(self.extra, other.extra)
        return ReportStatistics(self.channel, self.n + other.n, self.counts + other.counts, extra)

    def spill(self, directory=None):
        """These statistics with their per-report part kept in files.

        Statistics that include the reports themselves (bit-vector reports
        kept for EM, :class:`~sklearn_uldp.mechanisms.BitRows`) then hold in memory only a partial
        block of them, and so does every sum of these statistics with
        others (``spilled + batch``): fitting chunk by chunk keeps a memory
        that does not grow with the number of reports. Statistics without
        a per-report part are returned as they are.

        Parameters
        ----------
        directory : path-like or None, default=None
            Parent of the private directory the reports go to; ``None`` for
            the system's temporary directory. See
            :meth:`BitRows.spill <sklearn_uldp.mechanisms.BitRows.spill>`.

        Returns
        -------
        ReportStatistics

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_uldp import RAPPOR
        >>> mech = RAPPOR(1.0, theta=0.5, categories=list(range(16)),
        ...               random_state=0).fit()
        >>> X = np.random.default_rng(0).integers(0, 16, size=(200_000, 1))
        >>> codes = mech.channel_.encode_reports(mech.transform(X))
        >>> stats = mech.channel_.statistics(codes, keep_reports=True)
        >>> on_disk = stats.spill()
        >>> on_disk.n, on_disk.extra.directory is not None
        (200000, True)
        >>> on_disk.extra.memory_nbytes < stats.extra.memory_nbytes / 4
        True
        """
        spill = getattr(self.extra, "spill", None)
        if spill is None:
            return self
        return ReportStatistics(self.channel, self.n, self.counts, spill(directory))


class Channel(PublicSpec):
    """Base class of every channel (public mechanism spec).

    Subclasses set :attr:`name` (the registry key), define their parameters in
    :meth:`get_params`, and implement the estimation contract.

    Parameters
    ----------
    categories : array-like of shape (k,)
        The public domain X, in the order used by every array indexed by
        category.
    epsilon : float
        The privacy budget the mechanism spends per report.

    Notes
    -----
    Every parameter is validated by the constructor, with the same rules as
    the mechanism's own parameters (one definition): the domain must hold at
    least two distinct values, ``epsilon`` must be a finite real number > 0
    that the channel's sampler can realize in float64 (see
    :func:`~sklearn_uldp.utils._validation.check_realizable`), masks must be
    booleans aligned with the categories, and so on. So a spec loaded with
    :meth:`from_dict` is valid by construction. The spec format is
    documented in ``docs/spec_format.md`` and as a JSON Schema
    (:func:`spec_json_schema`, shipped as ``mechanisms/spec.schema.json``).

    Examples
    --------
    >>> from sklearn_uldp import RandomizedResponse
    >>> from sklearn_uldp.mechanisms import Channel
    >>> channel = RandomizedResponse(epsilon=1.0, categories=["a", "b"]).fit().channel_
    >>> channel.to_dict()
    {'mechanism': 'rr', 'spec_version': 1, 'categories': ['a', 'b'], 'epsilon': 1.0}
    >>> Channel.from_json(channel.to_json()) == channel
    True
    """

    spec_version = SPEC_VERSION
    has_categories = True
    default_estimator_path: str | None = "sklearn_uldp.estimators:EMEstimator"
    estimator_base_path: str | None = "sklearn_uldp.estimators:DistributionEstimator"
    #: The guarantee, when it is not one budget over a sensitive set (LDP or
    #: ULDP): the sampling strategies of ``DataFramePrivatizer`` cannot state
    #: a row's guarantee per attribute for such a channel.
    guarantee_notion: str | None = None
    #: Whether a report randomizes again a permanent answer memoized per
    #: (user, value) (the longitudinal channels): such reports stand for many
    #: rounds, and a composite that reports a value once (a marginal's
    #: oracle) cannot use the channel.
    memoized_reports: bool = False

    #: JSON Schema of each spec field (besides ``mechanism``, ``spec_version``
    #: and ``categories``); subclasses add theirs. :func:`spec_json_schema`
    #: builds the published schema from these declarations.
    _spec_field_schemas: dict[str, dict[str, Any]] = {
        "epsilon": {
            "type": "number",
            "exclusiveMinimum": 0,
            "description": "Privacy budget per report: a finite number > 0.",
        }
    }

    def __init__(self, categories: ArrayLike, epsilon: float) -> None:
        self.categories = check_channel_categories(categories)
        self.epsilon = check_epsilon(epsilon)

    # ------------------------------------------------------------ realizability
    def _draw_probabilities(self, epsilon):
        """Every probability the sampler compares a uniform with, at ``epsilon``.

        With their complements; the structure (k, sensitive set, ...) is the
        channel's own. None when the channel has no such draws.
        """
        return None

    def _check_budget(self, what=None):
        """Refuse a budget the float64 sampler could not realize (see Notes)."""
        with np.errstate(over="ignore"):  # e^eps overflows at a budget check_realizable refuses
            if self._draw_probabilities(self.epsilon) is None:
                return
        what = what or f"{type(self).__name__} with k={self.n_categories}"
        check_realizable(self.epsilon, self._draw_probabilities, what=what)

    def realized_matrix(self):
        """The channel the sampler really draws from, as a (k, n_outputs) matrix.

        The samplers compare float64 uniforms (multiples of 2**-53) with the
        channel's probabilities, so a probability is realized as
        ``ceil(p 2**53) 2**-53``. This is the matrix that
        :func:`~sklearn_uldp.privacy.check_ldp` and
        :func:`~sklearn_uldp.privacy.check_uldp` check. It equals
        :meth:`matrix` up to that rounding (the constructor refuses budgets
        for which the rounding matters); the default is :meth:`matrix`.
        """
        return self.matrix()

    # ------------------------------------------------------------------ identity
    @property
    def n_categories(self) -> int:
        """Size k of the domain."""
        return len(self.categories)

    def get_params(self) -> dict[str, Any]:
        """Parameters (besides categories) that define the channel."""
        return {"epsilon": self.epsilon}

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable description of the channel (the public spec).

        Keys: ``mechanism`` (the registry name), ``spec_version``
        (:data:`SPEC_VERSION`), ``categories`` and the constructor's
        parameters (see ``docs/spec_format.md``).
        """
        return super().to_dict()

    def _spec_body(self):
        return {
            **self._domain_spec(),
            **{key: _jsonable(value) for key, value in self.get_params().items()},
        }

    def _domain_spec(self):
        """The spec fields of the input domain (``categories``).

        Channels over a continuous domain (the numeric family) have no
        categories: their domain is a parameter (``bounds``).
        """
        return {"categories": self.categories.tolist()}

    @staticmethod
    def from_dict(spec: Mapping[str, Any]) -> Channel:
        """Rebuild a channel from :meth:`to_dict` output, validating every field.

        Parameters
        ----------
        spec : dict
            A channel spec (``docs/spec_format.md``). ``spec_version`` may be
            missing (specs written before it existed are version 1).

        Returns
        -------
        channel : Channel

        Raises
        ------
        InvalidSpecError
            For a spec that is not an object, an unknown mechanism, an
            unsupported ``spec_version``, unknown or missing fields, and any
            field value the channel's constructor refuses (the same rules as
            the mechanism's parameters).

        Examples
        --------
        >>> from sklearn_uldp.mechanisms import Channel
        >>> Channel.from_dict({"mechanism": "rr", "spec_version": 1,
        ...                    "categories": ["a", "b"], "epsilon": 1.0})
        RandomizedResponseChannel(k=2, epsilon=1.0)
        >>> Channel.from_dict({"mechanism": "rr", "categories": ["a", "b"],
        ...                    "epsilon": -1})
        Traceback (most recent call last):
        ...
        sklearn_uldp.exceptions.InvalidSpecError: Invalid spec of mechanism 'rr': ...
        """
        return read_spec(spec, Channel)

    @classmethod
    def _from_spec(cls, fields):
        if "categories" in fields and not isinstance(
            fields["categories"], (list, tuple, np.ndarray)
        ):
            # (the constructor would read a string as a list of letters)
            raise TypeError(
                f"categories must be a list of values, got {type(fields['categories']).__name__}."
            )
        return cls(**fields)

    @staticmethod
    def from_json(text: str | bytes) -> Channel:
        """Rebuild a channel from :meth:`to_json` output (see :meth:`from_dict`)."""
        return read_spec(_loads(text), Channel)

    def _key(self):
        params = tuple((key, _hashable(v)) for key, v in sorted(self.get_params().items()))
        return (self.name, self._domain_key(), params)

    def _domain_key(self):
        """The input domain, hashable, for equality (see :meth:`_domain_spec`)."""
        # NaN != NaN: a missing-value category gets a marker so that a channel
        # with a NaN category still equals itself and its JSON round trip.
        return tuple(_MISSING if _is_missing_scalar(c) else c for c in self.categories.tolist())

    def __repr__(self):
        params = ", ".join(
            f"{key}={value!r}"
            for key, value in self.get_params().items()
            if not isinstance(value, np.ndarray)
        )
        return f"{type(self).__name__}(k={self.n_categories}, {params})"

    def describe_difference(self, other):
        """Human-readable list of what differs between two channels."""
        if type(self) is not type(other):
            return [f"mechanism {self.name!r} vs {other.name!r}"]
        diffs = []
        if self._domain_key() != other._domain_key():
            diffs.append("categories")
        mine, theirs = self.get_params(), other.get_params()
        for key in mine:
            a, b = mine[key], theirs.get(key)
            equal = np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b
            if not equal:
                diffs.append(f"{key}: {a!r} vs {b!r}" if not isinstance(a, np.ndarray) else key)
        return diffs

    # ------------------------------------------------------------ report layout
    @property
    def packed_reports(self) -> bool:
        """Whether reports may come packed (:class:`PackedReports`, 8 bits a byte)."""
        return self.bit_vector_reports

    @property
    def report_width(self) -> int:
        """Number of report columns one report takes (one per category for bit vectors)."""
        return self.n_categories if self.bit_vector_reports else 1

    def report_column_names(self, column: str) -> list[str]:
        """Names of the report columns of one input column named ``column``.

        ``column`` for a one-value report; ``<column>_<category>`` per bit of a
        bit vector. What the mechanism's ``get_feature_names_out`` gives, and
        what the command line writes and reads.
        """
        if self.bit_vector_reports:
            return [f"{column}_{category}" for category in self.categories]
        return [str(column)]

    def report_dtypes(self, column: str) -> list[np.dtype]:
        """The dtype of each report column: 0/1 bytes for a bit vector, the
        categories' dtype otherwise (a channel whose reports are codes or
        numbers says so)."""
        if self.bit_vector_reports:
            return [np.dtype(np.uint8)] * self.report_width
        return [np.asarray(self.categories).dtype] * self.report_width

    @property
    def missing_report_dtype(self) -> str:
        """The pandas dtype of a report column in which some reports are missing.

        Under ``DataFramePrivatizer(strategy="sample")`` a user reports one
        column and the others are missing: bits as nullable ``"UInt8"`` (the
        default), output codes as ``"Int64"``, labels as their categories'
        nullable dtype, numbers as ``"float64"``. Fixed by the channel, so every
        chunk and partition has the same schema.
        """
        return "UInt8"

    # ------------------------------------------- the sampling strategies
    def sampled_channel(self, n_attributes: int) -> Channel:
        """The channel of this attribute's column when each user reports one of
        ``n_attributes`` (``strategy="sample"``: missing for the others)."""
        return spec_class("smp")(self.categories, self, n_attributes)

    def sampled_fake_channel(self, n_attributes: int, fake: str) -> Channel:
        """The channel of this attribute's column under ``strategy="sample+fake"``
        (a real report with probability 1 / ``n_attributes``, else a fake)."""
        return spec_class("rsfd")(self.categories, self, n_attributes, fake)

    def fake_kinds(self) -> tuple[str, ...]:
        """The laws of fake reports this channel can send (empty: none).

        See :func:`~sklearn_uldp.mechanisms.supported_fakes`.
        """
        return FAKE_REPORT_LAWS["supported_fakes"](self)

    def sample_fakes(self, fake: str, n: int, rng: np.random.Generator) -> Any:
        """``n`` fake reports of law ``fake``, as :meth:`sample` returns reports."""
        return FAKE_REPORT_LAWS["sample_fakes"](self, fake, n, rng)

    def fake_law(self, fake: str, matrix: Any = None) -> np.ndarray:
        """F: the law of a fake report of law ``fake`` over the outputs (small
        output spaces), mixed from ``matrix`` (default: :meth:`matrix`; the
        realized one for the privacy checks)."""
        return FAKE_REPORT_LAWS["fake_row"](self, fake, self.matrix() if matrix is None else matrix)

    def fake_ratio_classes(self, fake: str) -> tuple[np.ndarray, np.ndarray]:
        """(R+, R-): the likelihood-ratio classes of a real report against a fake.

        What the row's guarantee under ``strategy="sample+fake"`` depends on
        (:func:`~sklearn_uldp.mechanisms.fake_data_guarantees`).
        """
        return FAKE_REPORT_LAWS["ratio_classes"](self, fake)

    # ----------------------------------------------------------------- structure
    @property
    def sensitive_mask(self):
        """Boolean mask of the sensitive categories X_S (all True for LDP)."""
        return np.ones(self.n_categories, dtype=bool)

    @property
    def exact_categories(self):
        """Boolean mask of the categories whose estimate carries no noise at 0.

        A category is *exact* when its linear statistic counts invertible
        outputs only (the non-sensitive categories of uRR, uRAP, uOUE and uBD,
        and those of the other utility-optimized channels): an output that
        reveals x can only come from x, so the estimate is exactly 0 when no
        user holds x (its :meth:`null_variance` is 0) and any positive
        estimate is certain to be a real occurrence. A significance threshold
        must not treat such an estimate as noise, nor give mass to such a
        category whose estimate is 0. All False for LDP channels.
        """
        return np.zeros(self.n_categories, dtype=bool)

    @property
    def report_bits(self):
        """Size of one report in bits (the communication cost per user)."""
        raise NotImplementedError

    @property
    def n_outputs(self):
        """Size of the output space Y."""
        raise NotImplementedError

    def matrix(self):
        """The exact channel as a dense (k, n_outputs) matrix of Q(y | x).

        Only for small output spaces; rows are inputs in ``categories`` order,
        columns are outputs in :meth:`output_labels` order.
        """
        raise NotImplementedError

    def output_labels(self):
        """Labels of the columns of :meth:`matrix`."""
        raise NotImplementedError

    def protected_outputs(self):
        """Boolean mask over outputs: True for protected outputs Y_P."""
        raise NotImplementedError

    # ------------------------------------------------------------------ sampling
    def sample(self, codes, rng):
        """Privatize integer-coded inputs (0..k-1) with generator ``rng``."""
        raise NotImplementedError

    # ---------------------------------------------------------------- estimation
    def encode_reports(self, reports):
        """Validate reports and turn them into the channel's internal codes.

        Raises :class:`~sklearn_uldp.exceptions.ReportMismatchError` for reports
        this channel cannot have produced.
        """
        raise NotImplementedError

    def statistics(self, codes, *, keep_reports=False):
        """Sufficient statistics of encoded reports (a :class:`ReportStatistics`).

        ``keep_reports=True`` asks for what the exact likelihood needs when the
        counts alone are not sufficient (bit-vector reports).
        """
        raise NotImplementedError

    def merge_extra(self, a, b):
        """Combine the ``extra`` parts of two statistics.

        Per-report stores (:class:`~sklearn_uldp.mechanisms.BitRows`) add
        with ``+``, which is the default; a statistic without them (``None``)
        makes the sum count-only. Channels whose extra is not additive this
        way override it.
        """
        if a is None or b is None:
            return None
        return a + b

    def observed_frequency(self, stats):
        """Observed frequency f(x) of each category's linear statistic."""
        raise NotImplementedError

    def expected_frequency(self, p):
        """Expected frequency m(x) of each category's statistic under ``p``."""
        raise NotImplementedError

    @property
    def coef_a(self):
        """Slope a(x) of the unbiased estimator p_hat = a * f + b."""
        raise NotImplementedError

    @property
    def coef_b(self):
        """Intercept b(x) of the unbiased estimator p_hat = a * f + b."""
        raise NotImplementedError

    def unbiased_estimate(self, stats):
        """The empirical (unbiased) estimate of p from sufficient statistics."""
        if stats.n == 0:
            raise ValueError("No reports: fit on at least one report.")
        return self.coef_a * self.observed_frequency(stats) + self.coef_b

    def estimator_variance(self, p, n):
        """Exact Var[p_hat(x)] of the unbiased estimator, n users i.i.d. from p."""
        m = self.expected_frequency(np.asarray(p, dtype=float))
        return self.coef_a**2 * m * (1.0 - m) / n

    def null_variance(self, n, stats=None):
        """Var[p_hat(x)] when p(x) = 0 (sets the significance threshold).

        Parameters
        ----------
        n : int
            Number of reports.
        stats : ReportStatistics, default=None
            The observed statistics. Channels whose null variance depends on
            the unknown distribution of the *other* categories (the Hadamard
            family) use them to replace a worst case by a plug-in value;
            the others ignore them.

        Returns
        -------
        variance : ndarray of shape (k,)
            0 for the :attr:`exact_categories` (their estimate is exact, so
            any estimate > 0 is significant and an estimate of 0 is a true
            0, not noise).
        """
        a, b = self.coef_a, self.coef_b
        m0 = np.clip(-b / a, 0.0, 1.0)
        return a**2 * m0 * (1.0 - m0) / n

    def em_gradient(self, stats, p, *, n_jobs=None):
        """Return ``(g, log_likelihood)`` at distribution ``p``.

        ``g(x) = (1/n) sum_i Q(y_i | x) / sum_x' Q(y_i | x') p(x')``; the EM
        update is ``p * g`` and ``max(g) - 1`` bounds the gap to the maximum
        likelihood per report (the estimator's convergence certificate).
        ``n_jobs`` threads may share the work when it grows with the number
        of reports (bit vectors); one-symbol channels work on a histogram
        and ignore it.
        """
        raise NotImplementedError

    def restricted_em_gradient(self, stats, active, *, n_jobs=None):
        """The EM gradient on a working set of categories, or None.

        Returns a function ``gradient(q) -> (g, log_likelihood)`` equal to
        ``em_gradient(stats, p)`` restricted to the categories of the boolean
        mask ``active``, for ``p`` equal to ``q`` on them and 0 elsewhere
        (the log-likelihood is then exact; ``g`` is only defined on them).
        Channels whose evaluations cost in proportion to the categories in
        play (bit vectors) return a cheaper function, built once per working
        set; the default None means "no cheaper than :meth:`em_gradient`",
        and EM then works on all categories.
        """
        return None

    def log_likelihood(self, stats, p):
        """Total log-likelihood of the reports under ``p``."""
        return self.em_gradient(stats, p)[1]

    def segment_log_likelihood(self, stats, p0, p1, *, n_jobs=None, p0_parts=None):
        """The log-likelihood along a segment, as a function of its position.

        Returns ``f(w)`` = the total log-likelihood at ``(1 - w) p0 + w p1``
        (the point computed exactly so). The default evaluates
        :meth:`em_gradient` at each point; bit-vector channels read the
        reports at most twice (at both ends: the likelihood of a report is
        linear in p) and then pay one logarithm per report per point, which
        is what makes the default estimate's shrinkage as cheap as a few EM
        steps. ``p0_parts``, pairs ``(lambda, q)`` with ``p0 = sum lambda
        q``, may give ``p0``'s per-report sums without a pass (points whose
        sums :meth:`recording_row_sums` kept, the uniform distribution);
        channels without per-report sums ignore it.
        """
        p0 = np.asarray(p0, dtype=float)
        p1 = np.asarray(p1, dtype=float)
        return lambda w: self.em_gradient(stats, (1.0 - w) * p0 + w * p1, n_jobs=n_jobs)[1]

    def recording_row_sums(self, stats):
        """A context in which the EM passes over ``stats`` keep their row sums.

        Bit-vector statistics (a :class:`~sklearn_uldp.mechanisms.BitRows`
        store) keep the per-report sums of the first and the latest
        :meth:`em_gradient` evaluated within it, which
        :meth:`segment_log_likelihood` then reuses: the default estimate
        checks the likelihood between EM's starting point and its result
        without reading the reports again. Other statistics keep nothing.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_uldp import RAPPOR
        >>> mech = RAPPOR(2.0, categories=list(range(8)), random_state=0)
        >>> reports = mech.fit_transform(np.arange(400).reshape(-1, 1) % 8)
        >>> channel = mech.channel_
        >>> stats = channel.statistics(channel.encode_reports(reports), keep_reports=True)
        >>> p, q = np.full(8, 1 / 8), np.linspace(1, 2, 8) / 12
        >>> with channel.recording_row_sums(stats):
        ...     _, ll_p = channel.em_gradient(stats, p)  # passes that keep their sums
        ...     _, ll_q = channel.em_gradient(stats, q)
        ...     on_segment = channel.segment_log_likelihood(stats, p, q)  # no pass
        ...     bool(np.isclose(on_segment(0.0), ll_p) and np.isclose(on_segment(1.0), ll_q))
        True
        """
        recording = getattr(stats.extra, "recording_row_sums", None)
        return contextlib.nullcontext() if recording is None else recording()

    def likelihood(self, codes):
        """Q(y_i | x) for each report (rows) and category (columns).

        Any factor that depends on the report only may be dropped (it cancels
        in posteriors).
        """
        raise NotImplementedError


def sensitive_mask_schema(what: str = "a sensitive category") -> dict[str, Any]:
    """The spec schema of a channel's ``sensitive`` field: a boolean mask, one true at least.

    ``what`` names a category whose entry is true, in the field's description.
    """
    return {
        "type": "array",
        "items": {"type": "boolean"},
        "contains": {"const": True},
        "description": (f"Boolean mask aligned with categories: true for {what} (at least one)."),
    }


class SensitiveSetMixin:
    """A channel whose sensitive set X_S is the boolean mask ``self._sensitive``.

    The utility-optimized channels report a non-sensitive value through
    outputs that only it produces (invertible outputs), so its linear
    estimate carries no noise at 0 (:attr:`Channel.exact_categories`).
    """

    _sensitive: np.ndarray

    @property
    def sensitive_mask(self) -> np.ndarray:
        """Boolean mask of the sensitive categories X_S."""
        return self._sensitive.copy()

    @property
    def exact_categories(self) -> np.ndarray:
        """The non-sensitive categories: estimated from invertible outputs only."""
        return ~self._sensitive


class CategoricalChannel(Channel):
    """A channel whose report is one symbol of a finite output space.

    Subclasses implement :meth:`forward` (``m = Q^T p``) and :meth:`adjoint`
    (``Q v``) with the mechanism's structure; the statistics (a histogram of
    outputs), the EM gradient and the log-likelihood follow generically.

    Examples
    --------
    >>> from sklearn_uldp.mechanisms import CategoricalChannel, RandomizedResponseChannel
    >>> channel = RandomizedResponseChannel(["a", "b", "c"], epsilon=1.0)
    >>> isinstance(channel, CategoricalChannel), channel.n_outputs
    (True, 3)
    >>> channel.forward([1.0, 0.0, 0.0]).round(3).tolist()
    [0.576, 0.212, 0.212]
    """

    report_format = "categorical"
    histogram_reports = True
    #: Whether a report is a category label (RR, uRR, identity) rather than an
    #: output code (Hadamard family): labels take the input column's dtype,
    #: codes stay integers.
    reports_are_categories = False

    def report_dtypes(self, column):
        if not self.reports_are_categories:
            return [np.dtype(np.int64)]  # output codes
        return [np.asarray(self.categories).dtype]  # labels

    @property
    def missing_report_dtype(self):
        if not self.reports_are_categories:
            return "Int64"  # output codes
        kind = np.asarray(self.categories).dtype.kind
        return {"i": "Int64", "u": "Int64", "b": "boolean"}.get(kind, "object")

    @property
    def report_bits(self):
        return float(np.log2(self.n_outputs))

    def forward(self, p):
        """Distribution of outputs m(y) = sum_x p(x) Q(y|x)."""
        raise NotImplementedError

    def adjoint(self, v):
        """(Q v)(x) = sum_y Q(y|x) v(y)."""
        raise NotImplementedError

    def output_labels(self):
        return np.arange(self.n_outputs)

    def matrix(self):
        if self.n_categories * self.n_outputs > MAX_MATRIX_OUTPUTS * 64:
            raise ValueError(
                f"The channel matrix would have {self.n_categories} x "
                f"{self.n_outputs} entries; it is only built for small domains."
            )
        return np.stack([self.forward(row) for row in np.eye(self.n_categories)])

    def likelihood(self, codes):
        return self.matrix()[:, np.asarray(codes)].T

    # The report <-> code translation: outputs are labelled 0..|Y|-1 unless a
    # subclass maps them to other labels (uRR reports categories).
    def encode_reports(self, reports):
        codes = _integer_codes(_as_report_column(reports), self)
        bad = (codes < 0) | (codes >= self.n_outputs)
        if bad.any():
            raise ReportMismatchError(
                f"Reports hold {describe_values(codes[bad])}, which "
                f"{self!r} cannot produce (its outputs are 0..{self.n_outputs - 1}), at "
                f"{positions(bad)}. Were they produced by another mechanism?"
            )
        return codes

    def decode(self, codes):
        """Turn output codes into the reports a user sends."""
        return codes

    def statistics(self, codes, *, keep_reports=False):
        counts = np.bincount(codes, minlength=self.n_outputs).astype(np.int64)
        return ReportStatistics(self, int(codes.shape[0]), counts)

    def merge_extra(self, a, b):
        return None

    def em_gradient(self, stats, p, *, n_jobs=None):
        return histogram_em_gradient(self, stats, p)


def kept_reports(stats, kind):
    """The per-report part of ``stats`` (``stats.extra``), which a likelihood needs.

    ``kind`` names the reports in the error raised when the statistics were
    computed without ``keep_reports=True``.
    """
    if stats.extra is None:
        raise ValueError(
            f"The likelihood of {kind} reports needs the reports themselves: "
            "compute the statistics with keep_reports=True."
        )
    return stats.extra


def histogram_em_gradient(channel, stats, p):
    """EM's gradient and log-likelihood from a histogram of output codes.

    ``Q^T (hist / Q p) / n`` and ``sum hist log(Q p)`` over the outputs seen,
    with the channel's own ``forward`` and ``adjoint``: for channels whose
    statistics are ``stats.counts`` over ``n_outputs`` codes.
    """
    hist = stats.counts
    m = channel.forward(p)
    seen = hist > 0
    v = np.zeros_like(m)
    with np.errstate(divide="ignore"):
        v[seen] = hist[seen] / m[seen]
        log_lik = float(np.sum(hist[seen] * np.log(m[seen])))
    return channel.adjoint(v) / stats.n, log_lik


def _jsonable(value):
    """A parameter value as JSON holds it (arrays as lists, inf as "inf")."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, float) and np.isinf(value):
        return "inf" if value > 0 else "-inf"
    if isinstance(value, np.generic):
        return value.item()
    return value


def _describe_values(values, limit=5):
    """A few distinct offending values, for error messages."""
    try:
        shown = pd.unique(np.asarray(values, dtype=object).ravel())[:limit]
    except TypeError:
        shown = np.asarray(values, dtype=object).ravel()[:limit]
    return [v.item() if isinstance(v, np.generic) else v for v in shown]


def _integer_codes(column, channel):
    """Integer report codes as int64, refusing anything that is not an integer.

    Reports are integers: floats (even 1.0, which a corrupted or hand-edited
    file produces), booleans and strings are refused rather than coerced.
    """
    expected = f"Reports of {channel!r} are integer codes in [0, {channel.n_outputs})"
    kind = column.dtype.kind
    if kind in "iu":
        return column.astype(np.int64, copy=False)
    if kind == "O":
        inferred = pd.api.types.infer_dtype(column, skipna=False)
        if inferred == "integer":
            try:
                return column.astype(np.int64)
            except OverflowError:
                raise ReportMismatchError(
                    f"{expected}; got integers too large for int64."
                ) from None
        if column.size == 0:
            return np.zeros(0, dtype=np.int64)
        found = f"values of type {inferred} ({describe_values(column)})"
    elif kind == "b":
        found = "booleans"
    elif kind == "f":
        found = f"floating-point values (dtype {column.dtype})"
    else:
        found = f"values of dtype {column.dtype}"
    raise ReportMismatchError(
        f"{expected}; got {found}. Reports are never floats, booleans or "
        "strings: pass them as the mechanism returned them (a file read back "
        "may need dtype=int), or check that they come from this mechanism."
    )


def _as_report_column(reports):
    """Accept reports as (n,), (n, 1) arrays, Series or one-column DataFrames."""
    if hasattr(reports, "iloc") and getattr(reports, "ndim", 1) == 2:
        if reports.shape[1] != 1:
            raise ReportMismatchError(
                f"Expected one column of reports, got a DataFrame with "
                f"{reports.shape[1]} columns. Select the report column."
            )
        reports = reports.iloc[:, 0]
    if hasattr(reports, "to_numpy"):
        reports = reports.to_numpy()
    if hasattr(reports, "toarray"):
        raise ReportMismatchError(
            "Got a sparse matrix, but these reports are one value per user "
            "(sparse bit-vector reports come from the RAPPOR family)."
        )
    arr = np.asarray(reports)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim == 1 and arr.dtype.kind in "mM":
        # Dates and durations as pandas scalars, the type of datetime
        # categories (numpy's object cast gives datetime or int, by unit).
        arr = pd.Series(arr).astype(object).to_numpy()
    if arr.ndim != 1:
        raise ReportMismatchError(
            f"Expected reports of shape (n,) or (n, 1), got shape {arr.shape}. "
            "Bit-vector reports come from the RAPPOR family, not from this mechanism."
            + several_columns_hint(arr.shape, 1)
        )
    return arr


def several_columns_hint(shape, width):
    """How to select one column's reports when ``shape`` holds several blocks
    of ``width`` report columns (a mechanism fitted on several columns)."""
    if len(shape) == 2 and shape[1] > width and shape[1] % width == 0:
        return (
            f" These look like the reports of {shape[1] // width} input columns "
            "(one block each): estimate one column at a time, selecting its "
            "block with mechanism.column_reports(reports, column)."
        )
    return ""


_CATEGORIES_SCHEMA = {
    "type": "array",
    "minItems": 2,
    "uniqueItems": True,
    "items": {"type": ["string", "number", "boolean", "null"]},
    "description": (
        "The public domain, in the order of every per-category array: at "
        "least two distinct values (one missing-value marker at most)."
    ),
}

#: Where the published schema lives, relative to this package.
SPEC_SCHEMA_FILE = "spec.schema.json"


def spec_json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a channel spec, for every mechanism.

    Built from the channels' own field declarations, so it cannot disagree
    with :meth:`Channel.from_dict`; the file ``spec.schema.json`` shipped in
    this package is this dict, for clients in other languages. The schema
    checks the structure and the ranges that JSON Schema can express; a
    few rules need the whole spec or arithmetic and are checked by
    :meth:`Channel.from_dict` only (a mask's length equal to the number of
    categories, at least one sensitive category, the largest budget the
    channel's float64 sampler can realize, no duplicate after treating
    every missing-value marker alike).

    Returns
    -------
    schema : dict

    Examples
    --------
    >>> from sklearn_uldp.mechanisms import spec_json_schema
    >>> schema = spec_json_schema()
    >>> "rr" in schema["properties"]["mechanism"]["enum"]
    True
    >>> sorted(schema["$defs"]["rr"]["properties"])
    ['categories', 'epsilon', 'mechanism', 'spec_version']
    """
    # The package's own channels, from the registry's table (so the schema is
    # the same in any process, whatever was imported): a user's registered
    # channel is readable by from_dict but not part of the published format.
    names = sorted(name for name in SPEC_CLASSES if issubclass(spec_class(name), Channel))
    defs = {}
    for name in names:
        cls = CHANNEL_REGISTRY[name]
        required, optional = cls._spec_fields()
        props = {
            "mechanism": {"const": name},
            "spec_version": {
                "type": "integer",
                "const": SPEC_VERSION,
                "description": ("Version of the spec format; a missing value means 1."),
            },
        }
        for key in [*required, *optional]:
            props[key] = (
                _CATEGORIES_SCHEMA
                if key == "categories"
                else cls._spec_field_schemas.get(
                    key, {"description": "A parameter of the channel's constructor."}
                )
            )
        defs[name] = {
            "type": "object",
            "description": (inspect.getdoc(cls) or "").split("\n")[0],
            "properties": props,
            "required": ["mechanism", *required],
            "additionalProperties": False,
        }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://sklearn-uldp.readthedocs.io/spec.schema.json",
        "title": "sklearn-uldp channel spec",
        "description": (
            "The public description of a local privacy mechanism (its channel), "
            f"spec_version {SPEC_VERSION}. See docs/spec_format.md."
        ),
        "type": "object",
        "properties": {"mechanism": {"enum": names}},
        "required": ["mechanism"],
        "oneOf": [{"$ref": f"#/$defs/{name}"} for name in names],
        "$defs": defs,
    }


if __name__ == "__main__":  # pragma: no cover
    # Regenerate the shipped schema after adding or changing a channel:
    #     python -m sklearn_uldp.mechanisms._channel
    # (Through the package's module: running this file as __main__ makes a
    # second, empty registry.)
    from pathlib import Path

    from sklearn_uldp.mechanisms._channel import spec_json_schema as _schema

    target = Path(__file__).with_name(SPEC_SCHEMA_FILE)
    target.write_text(
        json.dumps(_schema(), indent=2, ensure_ascii=False) + "\n",
        encoding="utf-8",
    )
    print(f"wrote {target}")
