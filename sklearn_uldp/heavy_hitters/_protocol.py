"""Public specs of the open-domain protocols, their statistics and their decoding.

A *protocol* plays the part a :class:`~sklearn_uldp.mechanisms.Channel`
plays for a fixed domain: it holds everything public (budget, encoding of
the items, prefix lengths, hash functions) and nothing private, it is what
reports carry, and it turns reports into sufficient statistics that add up
(:class:`~sklearn_uldp.mechanisms.ReportStatistics`, so chunks, partitions
and machines reduce exactly). What differs from a channel: there are no
``categories`` up front, so a protocol has no channel matrix of its own;
:meth:`PrefixProtocol.channel_matrix` gives the exact channel over any
finite universe of items (to check the privacy definitions on it), and the
estimators discover candidates instead of reading a domain.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from numbers import Integral, Real
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import norm

from ..exceptions import ReportMismatchError
from ..mechanisms._channel import ReportStatistics
from ..mechanisms._registry import known_spec_names, spec_class
from ..mechanisms._spec import PublicSpec, _loads, read_spec
from ..utils._validation import check_epsilon
from ._encoding import (
    ItemEncoding,
    all_prefixes,
    extend_prefixes,
    prefix_keys,
    valid_prefixes,
)
from ._oracle import KeyedLocalHashing

__all__ = ["PrefixProtocol", "PROTOCOL_REGISTRY", "protocol_from_dict", "SPEC_VERSION"]

#: Key of ``DataFrame.attrs`` under which pandas reports carry their spec
#: (here, below the mechanisms that write it and the estimators that read it).
PROTOCOL_ATTR = "sklearn_uldp_protocol"

#: Version of the protocols' spec format (the channels' is 1: the versions
#: are per kind of spec, under one policy, see ``PublicSpec``).
SPEC_VERSION = 2
#: The first level enumerates every prefix of its length: at most 2^20.
MAX_FIRST_LEVEL_BITS = 20


def _int_param(value, name, lo, hi=None):
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(f"{name} must be an integer, got {value!r}.")
    if value < lo or (hi is not None and value > hi):
        bound = f"in [{lo}, {hi}]" if hi is not None else f">= {lo}"
        raise ValueError(f"{name} must be {bound}, got {value}.")
    return int(value)


class _Protocol(PublicSpec):
    """Base of the protocol specs: a :class:`PublicSpec` named under ``"protocol"``.

    The registry, the spec-version policy, the JSON round trip (validated
    like the constructor) and equality by value are the shared base's.
    """

    spec_key = "protocol"
    spec_version = SPEC_VERSION
    reports_attr = PROTOCOL_ATTR
    default_estimator_path = "sklearn_uldp.heavy_hitters:HeavyHitterEstimator"

    def get_params(self):
        raise NotImplementedError

    def _key(self):
        return (self.name, tuple(sorted((k, repr(v)) for k, v in self.get_params().items())))

    def __repr__(self):
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({params})"

    def describe_difference(self, other):
        if type(self) is not type(other):
            return [f"protocol {self.name!r} vs {getattr(other, 'name', other)!r}"]
        mine, theirs = self.get_params(), other.get_params()
        return [f"{k}: {mine[k]!r} vs {theirs.get(k)!r}" for k in mine if mine[k] != theirs.get(k)]

    def merge_extra(self, a, b):
        return None

    # ReportStatistics.spill looks for this; protocols keep no per-report data.
    def statistics_of(self, reports):
        return self.statistics(self.encode_reports(reports))


class _ProtocolRegistry(Mapping):
    """name -> protocol class: the protocols' part of the one registry (read-only)."""

    def __getitem__(self, name):
        cls = spec_class(name)
        if cls is None or not issubclass(cls, _Protocol):
            raise KeyError(name)
        return cls

    def __iter__(self):
        return (name for name in known_spec_names() if name in self)

    def __contains__(self, name):
        cls = spec_class(name)
        return cls is not None and issubclass(cls, _Protocol)

    def __len__(self):
        return sum(1 for _ in self)


#: name -> protocol class, to rebuild a protocol from its spec (kept for
#: code that looked names up here; the one registry is
#: ``sklearn_uldp.mechanisms._registry``).
PROTOCOL_REGISTRY: Mapping[str, type[_Protocol]] = _ProtocolRegistry()


def protocol_from_dict(spec: Any) -> Any:
    """Rebuild a protocol from its spec, validating every field like the constructor.

    Parameters
    ----------
    spec : dict or str
        The spec (``protocol.to_dict()``), or its JSON text.

    Returns
    -------
    protocol : object
        The protocol of the heavy-hitter mechanism that wrote the spec.

    Raises
    ------
    InvalidSpecError
        For a spec that is not an object, an unknown protocol, a
        ``spec_version`` newer than this sklearn-uldp reads, unknown or
        missing fields, and any field value the protocol's constructor
        refuses.

    Examples
    --------
    >>> from sklearn_uldp.heavy_hitters import PrefixExtendingMethod, protocol_from_dict
    >>> mech = PrefixExtendingMethod(epsilon=2.0).fit()
    >>> protocol_from_dict(mech.spec()) == mech.channel_
    True
    """
    if isinstance(spec, (str, bytes)):
        spec = _loads(spec)
    return read_spec(spec, _Protocol)


def _check_codes(reports, n_outputs, protocol):
    if hasattr(reports, "toarray") or hasattr(reports, "tocsr"):
        raise TypeError(
            f"Sparse reports are not supported: reports of {protocol.name!r} are one "
            "integer per user (a dense array)."
        )
    if hasattr(reports, "to_numpy"):
        reports = reports.to_numpy()
    arr = np.asarray(reports)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise ReportMismatchError(
            f"Reports of {protocol.name!r} are one integer per user, shape (n,) or (n, 1); "
            f"got shape {arr.shape}."
        )
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or not np.all(arr == np.round(arr)):
            raise ReportMismatchError("Reports must be integer codes; found NaN or fractions.")
        arr = arr.astype(np.int64)
    if arr.dtype.kind not in "iu":
        raise ReportMismatchError(
            f"Reports of {protocol.name!r} are integer codes, got dtype {arr.dtype}."
        )
    codes = arr.astype(np.int64, copy=False)
    if codes.size and (codes.min() < 0 or codes.max() >= n_outputs):
        raise ReportMismatchError(
            f"Report codes must lie in [0, {n_outputs}); got values in "
            f"[{int(codes.min())}, {int(codes.max())}]. Were they produced by another "
            "protocol or parameters?"
        )
    return codes


class PrefixProtocol(_Protocol):
    """Spec of a prefix protocol: users in groups, each reporting a prefix with OLH.

    Group l (drawn by each user with probability ``weights[l]``, independently
    of the item) reports the first ``levels[l]`` bits of the item through
    :class:`~sklearn_uldp.heavy_hitters._oracle.KeyedLocalHashing`. A report is
    the integer ``(l h + j) g + y``. Whatever the group, one report spends
    ``epsilon``: the group is drawn independently of the item, so
    ``Q((l, j, y) | x) = weights[l] Q_l((j, y) | x)`` and every ratio of
    two inputs' probabilities is a ratio of one level's OLH channel.

    Subclasses set the levels (:class:`PEMProtocol`, :class:`TreeHistProtocol`)
    and the decoding.
    """

    def _init_common(
        self,
        epsilon,
        item_type,
        max_bytes,
        normalization,
        on_long,
        hash_range,
        n_hashes,
        hash_seed,
        top_k,
    ):
        self.epsilon = check_epsilon(epsilon)
        from ._oracle import check_hash_range

        hash_range = "optimal" if hash_range is None else hash_range
        hash_range = check_hash_range(hash_range, self.epsilon)
        self.encoding = ItemEncoding(item_type, max_bytes, normalization, on_long)
        self.top_k = _int_param(top_k, "top_k", 1, 1 << 16)
        # a one-group oracle validates the hash parameters; _set_levels
        # replaces it with one that has functions for every group
        self.oracle = KeyedLocalHashing(self.epsilon, hash_range, n_hashes, hash_seed)

    def _set_levels(self, levels, weights):
        """The groups' prefix lengths and shares, and an oracle with functions for each.

        Each group hashes with its own functions: the final group's
        collisions are then independent of the ranking groups', so the items
        the ranking kept because they collided favourably are not estimated
        with the same collisions.
        """
        self.levels, self.weights = list(levels), list(weights)
        o = self.oracle
        self.oracle = KeyedLocalHashing(
            o.epsilon, o.hash_range, o.n_hashes, o.hash_seed, n_groups=len(self.levels)
        )

    def _common_params(self):
        return {
            "epsilon": self.epsilon,
            **self.encoding.to_dict(),
            "top_k": self.top_k,
            **self.oracle.to_dict(),
        }

    @property
    def n_groups(self):
        return len(self.levels)

    @property
    def n_outputs(self):
        return self.n_groups * self.oracle.n_outputs

    @property
    def report_bits(self):
        return float(np.log2(self.n_outputs))

    # --------------------------------------------------------------- users
    def _groups(self, n, rng):
        w = np.asarray(self.weights, dtype=float)
        if np.allclose(w, w[0]):
            return rng.integers(0, w.size, size=n, dtype=np.int64)
        return np.searchsorted(np.cumsum(w)[:-1], rng.random(n), side="right").astype(np.int64)

    def sample(self, codes, rows, rng):
        """Reports of users whose items are ``rows[codes]`` (rows from the encoding)."""
        codes = np.asarray(codes, dtype=np.intp)
        n, u = codes.size, rows.shape[0]
        groups = self._groups(n, rng)
        keys = np.empty(n, dtype=np.int64)
        for l, bits in enumerate(self.levels):
            sel = np.flatnonzero(groups == l)
            if not sel.size:
                continue
            if u <= sel.size:  # keys of the distinct items, then gathered
                keys[sel] = prefix_keys(rows, bits)[codes[sel]]
            else:
                keys[sel] = prefix_keys(rows[codes[sel]], bits)
        return groups * self.oracle.n_outputs + self.oracle.sample(keys, rng, groups)

    # ----------------------------------------------------------- collector
    def encode_reports(self, reports):
        return _check_codes(reports, self.n_outputs, self)

    def statistics(self, codes, *, keep_reports=False):
        """The counts of (group, j, y): shape (G h g,), additive."""
        counts = np.bincount(codes, minlength=self.n_outputs).astype(np.int64)
        return ReportStatistics(self, int(codes.size), counts)

    def group_tables(self, stats):
        return np.asarray(stats.counts).reshape(
            self.n_groups, self.oracle.n_hashes, self.oracle.hash_range
        )

    def estimate_level(self, stats, level, rows):
        """``(p_hat, se, null_se)`` of the prefixes ``rows`` at ``level``."""
        keys = prefix_keys(rows, self.levels[level])
        return self.oracle.estimate(self.group_tables(stats)[level], keys, level)

    def _possible(self, rows, bits):
        """The candidates some item can start with (see :func:`valid_prefixes`)."""
        return rows[valid_prefixes(rows, bits, self.encoding.item_type)]

    def _descend(self, stats, select):
        """Walk down the ranking levels (all but the last), then estimate what is left.

        The first level's candidates are every prefix of its length; a later
        level's, the extensions of the prefixes the level before kept. Of the
        candidates some item can start with, ``select(level, candidates)``
        keeps some. The last level's reports (never seen by the selection:
        unbiased given it) estimate the prefixes kept at the end.
        """
        ranking = self.levels[:-1]
        cand = kept = all_prefixes(ranking[0], self.encoding.max_bytes)
        for level, bits in enumerate(ranking):
            if level:
                prev = ranking[level - 1]
                cand = extend_prefixes(kept, prev, bits - prev)
            kept = select(level, self._possible(cand, bits))
        p_hat, se, null_se = self.estimate_level(stats, len(self.levels) - 1, kept)
        return self._frame(kept, p_hat, se, null_se)

    def _frame(self, rows, p_hat, se, null_se):
        z = p_hat / null_se if np.isfinite(null_se) and null_se > 0 else np.full_like(p_hat, np.nan)
        frame = pd.DataFrame(
            {
                "item": self.encoding.decode(rows),
                "frequency": p_hat,
                "std_error": se,
                "score": z,
            }
        )
        return frame.sort_values("frequency", ascending=False, kind="stable").reset_index(drop=True)

    # -------------------------------------------------------- exact channel
    def channel_matrix(self, universe, *, realized=False):
        """The exact channel Q(report | item) over a finite universe of items.

        Parameters
        ----------
        universe : list of items
            Distinct items (of the protocol's item type).
        realized : bool, default=False
            The probabilities the sampler realizes (float64 uniforms).

        Returns
        -------
        Q : ndarray of shape (len(universe), n_outputs)
        """
        rows = self.encoding.encode_items(universe)
        blocks = [
            w * self.oracle.matrix(prefix_keys(rows, bits), realized=realized, group=level)
            for level, (w, bits) in enumerate(zip(self.weights, self.levels, strict=True))
        ]
        return np.concatenate(blocks, axis=1)


def _prefix_levels(start, step, total):
    levels, s = [], start
    while s < total:
        s += step
        levels.append(min(s, total))
    return levels


def pem_levels(top_k, step_bits, n_bits):
    """Prefix lengths of PEM's groups: gamma + eta, gamma + 2 eta, ..., m."""
    gamma = max(1, math.ceil(math.log2(max(top_k, 2))))
    gamma = min(gamma, n_bits - 1)
    return _prefix_levels(gamma, step_bits, n_bits)


def auto_step_bits(top_k, n_bits):
    """PEM's eta: the largest extension with at most 2^12 candidates per level.

    Wang, Li & Jha find utility improving with eta (fewer groups, more users
    per group) until the candidate set ``k 2^eta`` becomes the cost; the
    limit ``k 2^eta <= 4096`` keeps a level's evaluation (h hashes per
    candidate) well under a second.
    """
    k = max(int(top_k), 1)
    eta = max(1, int(math.floor(math.log2(4096 / k))))
    return int(min(eta, 8, n_bits - 1))


class PEMProtocol(PrefixProtocol):
    """Spec of the Prefix Extending Method (Wang, Li & Jha, TDSC 2019).

    Users fall uniformly into g groups; group i reports its first
    ``gamma + (i + 1) eta`` bits (the last group the whole item), gamma =
    ceil(log2 k). The collector estimates every prefix of the first group's
    length, keeps the k largest, extends them by eta bits, estimates those
    with the next group, and so on: the last group ranks whole items.

    One more group, a fraction ``final_fraction`` of the users (None: an
    equal share, ``1 / (g + 1)``), also reports the whole item and is held
    out of the ranking: the k items the ranking keeps are estimated from it
    alone. Estimates from the group that ranked them are biased upward (the
    selection keeps the candidates whose noise was high); estimates from
    independent reports are unbiased given the selection, so their
    confidence intervals cover.
    """

    name = "pem"

    def __init__(
        self,
        epsilon,
        item_type="str",
        max_bytes=8,
        normalization="NFC",
        on_long="truncate",
        top_k=20,
        step_bits=None,
        hash_range=None,
        n_hashes=1024,
        hash_seed=0,
        final_fraction=None,
    ):
        self._init_common(
            epsilon,
            item_type,
            max_bytes,
            normalization,
            on_long,
            hash_range,
            n_hashes,
            hash_seed,
            top_k,
        )
        m = self.encoding.n_bits
        if step_bits is None:
            step_bits = auto_step_bits(self.top_k, m)
        self.step_bits = _int_param(step_bits, "step_bits", 1, 16)
        self.levels = pem_levels(self.top_k, self.step_bits, m)
        if self.levels[0] > MAX_FIRST_LEVEL_BITS:
            raise ValueError(
                f"The first group's prefixes have {self.levels[0]} bits: the collector "
                f"would enumerate 2^{self.levels[0]} of them. Pass a smaller top_k or "
                "step_bits."
            )
        g = len(self.levels)
        if final_fraction is not None and (
            isinstance(final_fraction, bool)
            or not isinstance(final_fraction, Real)
            or not 0 < final_fraction < 1
        ):
            raise ValueError(
                f"final_fraction must be None (an equal share) or in (0, 1), got "
                f"{final_fraction!r}."
            )
        self.final_fraction = None if final_fraction is None else float(final_fraction)
        final = 1.0 / (g + 1) if self.final_fraction is None else self.final_fraction
        # the ranking groups, then the held-out estimation group (the whole item)
        self._set_levels([*self.levels, m], [(1 - final) / g] * g + [final])

    def get_params(self):
        return {
            **self._common_params(),
            "step_bits": self.step_bits,
            "final_fraction": self.final_fraction,
        }

    def decode(self, stats, width=None):
        """The ``width`` best-ranked items, estimated by the held-out group (a DataFrame)."""
        width = self.top_k if width is None else int(width)

        def keep_largest(level, cand):
            p_hat, _, _ = self.estimate_level(stats, level, cand)
            return cand[np.argsort(-p_hat, kind="stable")[:width]]

        return self._descend(stats, keep_largest)


class TreeHistProtocol(PrefixProtocol):
    """Spec of TreeHist (Bassily, Nissim, Stemmer & Thakurta, NeurIPS 2017).

    A prefix tree with ``step_bits`` bits per level (1 in the paper's
    binary tree): a fraction ``final_fraction`` of the users reports the
    whole item to a frequency oracle, the others fall uniformly on the
    levels and report their prefix of that level's length. The collector
    keeps, level by level, the children whose estimate exceeds the
    significance threshold ``z sigma_0`` (``z = Phi^-1(1 - beta / C)`` for C
    children; at least the ``top_k`` largest, at most ``width``), and
    estimates the surviving leaves with the final oracle.
    """

    name = "treehist"

    def __init__(
        self,
        epsilon,
        item_type="str",
        max_bytes=8,
        normalization="NFC",
        on_long="truncate",
        top_k=20,
        step_bits=8,
        final_fraction=0.5,
        width=None,
        beta=0.05,
        hash_range=None,
        n_hashes=1024,
        hash_seed=0,
    ):
        self._init_common(
            epsilon,
            item_type,
            max_bytes,
            normalization,
            on_long,
            hash_range,
            n_hashes,
            hash_seed,
            top_k,
        )
        m = self.encoding.n_bits
        self.step_bits = _int_param(step_bits, "step_bits", 1, 16)
        if not isinstance(final_fraction, Real) or not 0 < final_fraction < 1:
            raise ValueError(f"final_fraction must be in (0, 1), got {final_fraction!r}.")
        self.final_fraction = float(final_fraction)
        self.width = 4 * self.top_k if width is None else _int_param(width, "width", 1, 1 << 16)
        if not isinstance(beta, Real) or not 0 < beta < 1:
            raise ValueError(f"beta must be in (0, 1), got {beta!r}.")
        self.beta = float(beta)
        tree = _prefix_levels(0, self.step_bits, m)
        t = len(tree)
        self._set_levels([*tree, m], [(1 - self.final_fraction) / t] * t + [self.final_fraction])

    def get_params(self):
        return {
            **self._common_params(),
            "step_bits": self.step_bits,
            "final_fraction": self.final_fraction,
            "width": self.width,
            "beta": self.beta,
        }

    def decode(self, stats, width=None):
        width = self.width if width is None else int(width)

        def keep_significant(level, cand):
            p_hat, _, null_se = self.estimate_level(stats, level, cand)
            z = norm.isf(self.beta / max(len(cand), 1))
            order = np.argsort(-p_hat, kind="stable")
            above = int(np.sum(p_hat >= z * null_se)) if np.isfinite(null_se) else 0
            return cand[order[: min(width, max(above, self.top_k))]]

        return self._descend(stats, keep_significant)
