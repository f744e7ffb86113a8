"""RAPPOR with Bloom filters and cohorts, decoded against candidate strings.

The users' side (Erlingsson, Pihur & Korolova, CCS 2014): a user in cohort
c hashes the item with the cohort's h hash functions into a Bloom filter B of
k bits; the *permanent randomized response* (PRR) sets each bit to 1 w.p.
f/2, to 0 w.p. f/2 and keeps it otherwise (B'); the *instantaneous
randomized response* (IRR) reports each bit as 1 w.p. q if B'_i = 1 and p if
B'_i = 0. One report therefore reports bit i as 1 w.p.
``q* = q (1 - f/2) + p f/2`` if B_i = 1 and ``p* = p (1 - f/2) + q f/2``
otherwise, and is eps_1-LDP with ``eps_1 = h ln(q* (1 - p*) / (p* (1 - q*)))``
(two items differ in at most 2h bits); the PRR alone bounds what any number
of reports of one item reveal, ``eps_inf = 2 h ln((1 - f/2) / (f/2))``
(google/rappor's ``ComputePrivacyGuarantees``).

The collector's side (google/rappor ``analysis/R/decode.R``): the unbiased
estimate of each bit's true rate in each cohort, ``t = (c / N - p*) / (q* -
p*)``, is linear in the candidates' proportions, ``E t = X pi`` with X the
(cohort, bit) x candidate Bloom membership matrix; the decoder fits pi >= 0
(non-negative least squares; LASSO with a non-negative constraint to select
the support first, as google/rappor does when the system is nearly
underdetermined; or EM on the exact likelihood of the reports) and tests
each candidate with a z-statistic, with the Benjamini-Hochberg procedure
over all candidates.

Memoization (what makes eps_inf a bound over time): as RAPPOR's client does,
a user's cohort and the PRR of each item are derived from a per-user secret
with a keyed PRF (:mod:`sklearn_uldp.utils._secrets`): the cohort from the
secret alone (permanent, independent of the items), the PRR from the secret
and the item's key, so the same user reporting the same item gets the same
B' in every round and process; the IRR is fresh at every report.

The hash functions here are the package's Carter-Wegman family on the
item's key (not google/rappor's MD5), and the PRR comes from XChaCha20 (not
google/rappor's HMAC-DRBG), so reports are not bit-compatible with the
google/rappor client; the parameters, the channel and the decoding are the
same.
"""

from __future__ import annotations

import json
from numbers import Integral, Real
from typing import Any, cast

import numpy as np
import pandas as pd
import scipy.linalg
import scipy.sparse
from scipy.optimize import brentq
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ..exceptions import ReportMismatchError
from ..longitudinal._unary import _ue_bit_log_ratio, _ue_compose, _ue_loss
from ..mechanisms._base import _transform_output
from ..mechanisms._channel import ReportStatistics
from ..mechanisms._memo import (
    MEMO_DOCS,
    MEMO_VERSION,
    MemoizedMechanism,
    SecretDraws,
    check_rounds,
)
from ..utils._docstrings import fill_doc
from ..utils._hashing import hash_parameters, mersenne_hash
from ..utils._sampling import bernoulli_matrix
from ..utils._secrets import repeated_in_rows, resolve_user_keys
from ..utils._typing import ArrayLike, RandomStateLike, TransformOutput
from ..utils._validation import check_epsilon
from ._encoding import ItemEncoding
from ._mechanism import ORACLE_CONSTRAINTS, OpenDomainMechanism, require_items
from ._protocol import _int_param, _Protocol

__all__ = [
    "BloomRAPPOR",
    "BloomRAPPORProtocol",
    "rappor_parameters",
]

#: Cells (users x bits) per sampling chunk: bounds the temporaries.
_CHUNK_CELLS = 1 << 21
#: Largest number of report patterns the exact channels enumerate.
_MAX_PATTERNS = 1 << 16


#: google/rappor's demo parameters: the defaults of p, q and f.
DEFAULT_P, DEFAULT_Q, DEFAULT_F = 0.5, 0.75, 0.5


def rappor_epsilon_1(n_hashes, p, q, f):
    """eps_1 of one Bloom-RAPPOR report: ``h (logit q* - logit p*)``.

    ``q* = q (1 - f/2) + p f/2`` and ``p* = p (1 - f/2) + q f/2`` are the
    probabilities that a reported bit is 1 when the Bloom bit is set or not
    (the PRR's ``P(B' = 1 | B) = 1 - f/2, f/2`` composed with the IRR's q, p).
    """
    ps, qs = _ue_compose(1.0 - f / 2, f / 2, q, p)
    return float(abs(n_hashes * _ue_loss(ps, qs)))


def rappor_epsilon_perm(n_hashes, f):
    """eps_inf of the permanent round: ``2 h ln((1 - f/2) / (f/2))``."""
    if f == 0:
        return np.inf
    return float(2 * n_hashes * np.log((1 - f / 2) / (f / 2)))


def rappor_parameters(
    n_hashes: int,
    p: float | None = None,
    q: float | None = None,
    f: float | None = None,
    epsilon_perm: float | None = None,
    epsilon_1: float | None = None,
) -> tuple[float, float, float]:
    """RAPPOR's (p, q, f) from its parameters or its budgets (eps_perm, eps_1).

    The map of Erlingsson, Pihur & Korolova (CCS 2014), both ways. Two
    items' Bloom filters differ in at most 2h bits, so

    * the permanent round (PRR, f) costs ``eps_perm = 2 h ln((1 - f/2) /
      (f/2))`` over all the reports of one item, hence
      ``f = 2 / (1 + e^(eps_perm / (2h)))``;
    * one report costs ``eps_1 = h (logit q* - logit p*)``, which for fixed
      f and p grows strictly with q on (p, 1] (and for fixed q falls with p
      on [0, q): with ``a = 1 - f/2 > b = f/2``, ``dL/dq = (a - b) (p / (q* p*) +
      (1 - p) / ((1 - p*) (1 - q*))) > 0``): q (or p) is its unique root,
      found by Brent's method.

    Each budget replaces one parameter: ``epsilon_perm`` replaces f,
    ``epsilon_1`` replaces q (or p, if q is given). Parameters left out take
    google/rappor's demo values (p = 0.5, q = 0.75, f = 0.5).

    Parameters
    ----------
    n_hashes : int
        h, the hash functions per cohort.
    p, q, f : float or None
    epsilon_perm, epsilon_1 : float or None

    Returns
    -------
    p, q, f : float

    Raises
    ------
    ValueError
        If a budget and the parameter it replaces are both given, if
        ``epsilon_1 > epsilon_perm`` (one report is post-processing of the
        PRR), or if ``epsilon_1`` cannot be reached with the other
        parameters.

    Examples
    --------
    >>> from sklearn_uldp.heavy_hitters import rappor_parameters
    >>> p, q, f = rappor_parameters(2, epsilon_perm=4.0, epsilon_1=2.0)
    >>> round(p, 3), round(q, 4), round(f, 4)
    (0.5, 0.928, 0.5379)
    """
    h = int(n_hashes)
    if epsilon_perm is not None:
        epsilon_perm = check_epsilon(epsilon_perm, "epsilon_perm")
        if f is not None:
            raise ValueError(
                f"Pass f or epsilon_perm, not both: f={f!r} gives epsilon_perm="
                f"{rappor_epsilon_perm(h, f):.6g}, and epsilon_perm={epsilon_perm!r} "
                f"gives f={2 / (1 + np.exp(epsilon_perm / (2 * h))):.6g} (with n_hashes={h})."
            )
        f = float(2.0 / (1.0 + np.exp(epsilon_perm / (2 * h))))
    f = DEFAULT_F if f is None else float(f)
    if epsilon_1 is None:
        p = DEFAULT_P if p is None else float(p)
        q = DEFAULT_Q if q is None else float(q)
        return p, q, f
    epsilon_1 = check_epsilon(epsilon_1, "epsilon_1")
    if p is not None and q is not None:
        raise ValueError(
            f"Pass at most one of p and q with epsilon_1 (the other is derived): p={p!r} "
            f"and q={q!r} give epsilon_1={rappor_epsilon_1(h, p, q, f):.6g} (with f={f:.6g})."
        )
    top_perm = rappor_epsilon_perm(h, f)
    if epsilon_1 > top_perm:
        raise ValueError(
            f"epsilon_1={epsilon_1!r} exceeds the permanent round's epsilon_perm="
            f"{top_perm:.6g} (f={f:.6g}): every report is post-processing of the "
            "memoized answer, so one report never costs more. Lower epsilon_1, or raise "
            "epsilon_perm (a smaller f)."
        )

    # eps_1 at the end where p = q: 0, except at p = q = 0 (solving q with
    # p = 0) or p = q = 1 (solving p with q = 1), where the formula is 0/0
    # and its limit is h ln((1 - f/2) / (f/2)) = epsilon_perm / 2: reports
    # that are almost always 0 (or 1), but whose rare 1 (or 0) carries the
    # PRR's whole ratio.
    if q is None:
        p = DEFAULT_P if p is None else float(p)
        lo, hi, solve_for, other = p, 1.0, "q", p

        def eps(x):
            return rappor_epsilon_1(h, p, x, f)

    else:
        q = float(q)
        lo, hi, solve_for, other = 0.0, q, "p", q

        def eps(x):
            return rappor_epsilon_1(h, x, q, f)

    bottom = top_perm / 2 if other in (0.0, 1.0) else 0.0

    def loss(x):
        return (eps(x) if x != other else bottom) - epsilon_1

    end = hi if solve_for == "q" else lo
    top = eps(end)
    given = f"p={p!r}" if solve_for == "q" else f"q={q!r}"
    # (a budget computed from this very end, e.g. a round trip of the map,
    # may exceed it by rounding)
    if not epsilon_1 <= top * (1 + 1e-12):
        raise ValueError(
            f"With f={f:.6g} and {given}, one report costs at most epsilon_1={top:.6g} "
            f"({solve_for}={end:g}); got epsilon_1={epsilon_1!r}. Lower epsilon_1, raise "
            "epsilon_perm (a smaller f), or move the given one of p, q away from the "
            "other (p=0, q=1 reach epsilon_perm)."
        )
    if not epsilon_1 > bottom:
        raise ValueError(
            f"With f={f:.6g} and {given}, one report costs more than epsilon_1="
            f"{bottom:.6g} whatever {solve_for} (a rare report bit carries the permanent "
            f"round's whole ratio); got epsilon_1={epsilon_1!r}. Pass p and q strictly "
            "between 0 and 1 (e.g. the default p=0.5)."
        )
    if epsilon_1 >= top:
        return (cast(float, p), end, f) if solve_for == "q" else (end, cast(float, q), f)
    root = float(brentq(loss, lo, hi, xtol=2.0**-60, rtol=4 * np.finfo(float).eps, maxiter=500))
    if not abs(eps(root) - epsilon_1) <= 1e-9 * epsilon_1:
        # Only near p = 0 (or q = 1), where eps_1 climbs from 0 to eps_perm / 2
        # over a width of about p: no float q gives epsilon_1 there.
        raise ValueError(
            f"With f={f:.6g} and {given}, no float {solve_for} gives one report "
            f"epsilon_1={epsilon_1!r} (the nearest gives {eps(root):.6g}): move the "
            "given one of p, q away from 0 and 1 (e.g. the default p=0.5)."
        )
    # the given one of p, q is a float here (the other is being solved for)
    return (cast(float, p), root, f) if solve_for == "q" else (root, cast(float, q), f)


class BloomRAPPORProtocol(_Protocol):
    """Public spec of Bloom-filter RAPPOR: (k, h, m, p, q, f), the hashes, the items."""

    name = "bloom_rappor"
    default_estimator_path = "sklearn_uldp.heavy_hitters:BloomRAPPORDecoder"

    def __init__(
        self,
        n_bits=16,
        n_hashes=2,
        n_cohorts=64,
        p=0.5,
        q=0.75,
        f=0.5,
        item_type="str",
        normalization="NFC",
        hash_seed=0,
    ):
        self.n_bits = _int_param(n_bits, "n_bits", 2, 4096)
        self.n_hashes = _int_param(n_hashes, "n_hashes", 1, 64)
        self.n_cohorts = _int_param(n_cohorts, "n_cohorts", 1, 65536)
        self.hash_seed = _int_param(hash_seed, "hash_seed", 0, (1 << 32) - 1)
        for name, v in (("p", p), ("q", q), ("f", f)):
            if isinstance(v, bool) or not isinstance(v, Real) or not 0 <= v <= 1:
                raise ValueError(f"{name} must be a probability in [0, 1], got {v!r}.")
        self.p, self.q, self.f = float(p), float(q), float(f)
        if self.f >= 1 or self.p == self.q:
            raise ValueError(
                f"With f={self.f}, p={self.p}, q={self.q} the reports carry no information "
                "(f must be < 1 and p != q). Google's defaults: p=0.5, q=0.75, f=0.5."
            )
        if not (0 < self.p_star < 1 and 0 < self.q_star < 1):
            raise ValueError(
                f"With f={self.f}, p={self.p}, q={self.q} a report's bits copy the Bloom "
                f"bits exactly (P(1 | bit 0) = {self.p_star}, P(1 | bit 1) = "
                f"{self.q_star}): one report's budget is infinite, no privacy. Pass p and "
                "q strictly between 0 and 1, or f > 0 (Google's defaults: p=0.5, q=0.75, "
                "f=0.5)."
            )
        max_bytes = 8 if item_type == "int" else 64
        self.encoding = ItemEncoding(item_type, max_bytes, normalization, "error")
        self._a, self._b = hash_parameters(self.hash_seed, self.n_cohorts * self.n_hashes)

    @property
    def report_width(self):
        return self.n_bits + 1

    def report_column_names(self, column):
        """``<column>_cohort`` then ``<column>_b<i>``, one per Bloom bit."""
        return [f"{column}_cohort"] + [f"{column}_b{i}" for i in range(self.n_bits)]

    def report_dtypes(self, column):
        """The cohort and the bits in one small unsigned array (see :meth:`sample`)."""
        return [np.dtype(np.uint8 if self.n_cohorts <= 256 else np.uint16)] * self.report_width

    def get_params(self):
        return {
            "n_bits": self.n_bits,
            "n_hashes": self.n_hashes,
            "n_cohorts": self.n_cohorts,
            "p": self.p,
            "q": self.q,
            "f": self.f,
            "item_type": self.encoding.item_type,
            "normalization": self.encoding.normalization,
            "hash_seed": self.hash_seed,
        }

    # ------------------------------------------------------------- privacy
    @property
    def q_star(self):
        """P(reported bit = 1 | Bloom bit = 1) of one report."""
        return self.q * (1 - self.f / 2) + self.p * self.f / 2

    @property
    def p_star(self):
        """P(reported bit = 1 | Bloom bit = 0) of one report."""
        return self.p * (1 - self.f / 2) + self.q * self.f / 2

    @property
    def epsilon(self):
        """eps_1: the budget of one report (google/rappor's ``e_1``)."""
        return rappor_epsilon_1(self.n_hashes, self.p, self.q, self.f)

    @property
    def epsilon_permanent(self):
        """eps_inf: the bound of the permanent round over any number of reports."""
        return rappor_epsilon_perm(self.n_hashes, self.f)

    def exposure(self, n_rounds):
        """Privacy loss of ``n_rounds`` reports of one item by one user (memoized).

        Given the item, the bits are independent and a bit's reports enter
        through the number c of rounds it was reported 1:
        ``g(c | b) = P(B'=1 | b) q^c (1-q)^(t-c) + P(B'=0 | b) p^c (1-p)^(t-c)``
        with ``P(B'=1 | 1) = 1 - f/2`` and ``P(B'=1 | 0) = f/2``. The cohort
        is the same for both items (it depends on the user's secret only),
        and two items' filters differ in at most 2h bits, h set for each, so
        the loss is at most ``h (max_c ln g(c|1)/g(c|0) + max_c ln
        g(c|0)/g(c|1))``: ``epsilon_1`` for one report, increasing to
        ``epsilon_perm`` as t grows. It is exact for two items whose filters
        in some cohort are disjoint with h bits each (see
        :meth:`channel_matrix` with ``n_rounds``).
        """
        tau = check_rounds(n_rounds)
        with np.errstate(divide="ignore", invalid="ignore"):
            log_ratio = _ue_bit_log_ratio(tau, 1.0 - self.f / 2, self.f / 2, self.q, self.p)
        return float(self.n_hashes * (np.max(log_ratio) + np.max(-log_ratio)))

    def memo_context(self, purpose, label=""):
        """The PRF's domain-separation label of a permanent draw (public).

        It names the parameters the permanent round depends on (the Bloom
        filters and f), not the IRR's p and q: changing those keeps the
        users' cohorts and PRRs, and with them the bound eps_inf. ``label``
        names the collection (:class:`BloomRAPPOR`'s ``memo_label``), so two
        collections fed the same secrets never share a PRR. The version is the
        package's one :data:`~sklearn_uldp.mechanisms._memo.MEMO_VERSION`.
        """
        spec = {
            "collection": str(label),
            "n_bits": self.n_bits,
            "n_hashes": self.n_hashes,
            "n_cohorts": self.n_cohorts,
            "f": self.f,
            "item_type": self.encoding.item_type,
            "normalization": self.encoding.normalization,
            "hash_seed": self.hash_seed,
        }
        body = json.dumps(spec, sort_keys=True, separators=(",", ":"))
        return f"sklearn_uldp.bloom_rappor.memo.{MEMO_VERSION}|{body}|{purpose}"

    # --------------------------------------------------------------- Bloom
    def bloom_positions(self, keys, cohorts):
        """(n, h) bit positions of the items' Bloom filters in their cohorts."""
        keys = np.asarray(keys, dtype=np.int64)
        idx = np.asarray(cohorts, dtype=np.int64)[:, None] * self.n_hashes + np.arange(
            self.n_hashes
        )
        return mersenne_hash(self._a[idx], self._b[idx], keys[:, None], self.n_bits)

    def bloom_filters(self, keys, cohorts, positions=None):
        """(n, k) uint8 Bloom filters."""
        pos = self.bloom_positions(keys, cohorts) if positions is None else positions
        out = np.zeros((pos.shape[0], self.n_bits), dtype=np.uint8)
        out[np.arange(pos.shape[0])[:, None], pos] = 1
        return out

    # --------------------------------------------------------------- users
    def sample(self, keys, rng, draws=None, *, instantaneous=True):
        """Rows ``[cohort, s_0..s_{k-1}]`` of one report per key.

        ``draws`` draws the cohorts and the PRR: the users' secrets (a
        :class:`~sklearn_uldp.mechanisms._memo.SecretDraws` in the contexts
        of :meth:`memo_context`, memoized) or, by default, ``rng`` (both
        rounds fresh: the end-to-end channel of one report, for
        simulations). The IRR always comes from ``rng``;
        ``instantaneous=False`` leaves it out (rows ``[cohort, B'_0..]``: the
        permanent answers).
        """
        keys = np.asarray(keys, dtype=np.int64)
        n, k = keys.size, self.n_bits
        dtype = np.uint8 if self.n_cohorts <= 256 else np.uint16
        out = np.empty((n, k + 1), dtype=dtype)
        if draws is None:
            cohorts = rng.integers(0, self.n_cohorts, size=n, dtype=np.int64)
        else:
            # The cohort depends on the secret only (value 0), never on an
            # item: the same in every report of the user.
            cohorts = draws.integers("cohort", 0, self.n_cohorts, 1)[:, 0]
        out[:, 0] = cohorts
        step = max(1, _CHUNK_CELLS // k)
        for lo in range(0, n, step):
            hi = min(n, lo + step)
            positions = self.bloom_positions(keys[lo:hi], cohorts[lo:hi])
            bloom = self.bloom_filters(keys[lo:hi], cohorts[lo:hi], positions)
            chunk = None if draws is None else draws[lo:hi]
            prr = _permanent_round(chunk, bloom, positions, keys[lo:hi], self.f, rng)
            if not instantaneous:
                out[lo:hi, 1:] = prr
                continue
            one = bernoulli_matrix(prr.shape, self.q, rng)
            zero = bernoulli_matrix(prr.shape, self.p, rng)
            out[lo:hi, 1:] = np.where(prr, one, zero)
        return out

    # ----------------------------------------------------------- collector
    def encode_reports(self, reports):
        if hasattr(reports, "to_numpy"):
            reports = reports.to_numpy()
        arr = np.asarray(reports)
        k = self.n_bits
        if arr.ndim != 2 or arr.shape[1] != k + 1:
            raise ReportMismatchError(
                f"Bloom-RAPPOR reports are rows [cohort, {k} bits] of shape (n, {k + 1}); "
                f"got shape {arr.shape}."
            )
        if arr.dtype.kind not in "biu":
            raise ReportMismatchError(f"Reports must be integers, got dtype {arr.dtype}.")
        cohorts = arr[:, 0].astype(np.int64)
        bits = arr[:, 1:]
        if bits.size and (bits.min() < 0 or bits.max() > 1):
            raise ReportMismatchError("The report bits must be 0 or 1.")
        if cohorts.size and (cohorts.min() < 0 or cohorts.max() >= self.n_cohorts):
            raise ReportMismatchError(
                f"Cohorts must lie in [0, {self.n_cohorts}); found {int(cohorts.max())}."
            )
        return cohorts, bits.astype(np.uint8, copy=False)

    def statistics(self, codes, *, keep_reports=False):
        """Counts ``[N_c, c_{c,0}, ..., c_{c,k-1}]`` per cohort (additive); with
        ``keep_reports``, the histogram of (cohort, report) patterns (for EM)."""
        cohorts, bits = codes
        m, k = self.n_cohorts, self.n_bits
        counts = np.zeros((m, k + 1), dtype=np.int64)
        counts[:, 0] = np.bincount(cohorts, minlength=m)
        order = np.argsort(cohorts, kind="stable")
        bounds = np.searchsorted(cohorts[order], np.arange(m + 1))
        for c in np.flatnonzero(np.diff(bounds)):  # a loop over cohorts, not users
            counts[c, 1:] = bits[order[bounds[c] : bounds[c + 1]]].sum(axis=0)
        extra = None
        if keep_reports:
            if k > 56:
                raise ValueError(
                    f"EM keeps the histogram of reports, which needs n_bits <= 56; got {k}."
                )
            weights = (1 << np.arange(k - 1, -1, -1, dtype=np.int64)).astype(np.int64)
            pattern = bits.astype(np.int64) @ weights + cohorts * (1 << k)
            values, n_each = np.unique(pattern, return_counts=True)
            extra = pd.Series(n_each, index=values, dtype=np.int64)
        return ReportStatistics(self, int(cohorts.size), counts.ravel(), extra)

    def merge_extra(self, a, b):
        if a is None or b is None:
            return None
        return a.add(b, fill_value=0).astype(np.int64)

    def channel_matrix(self, universe, *, realized=False, n_rounds=1):
        """Exact channel of one user's reports over a finite universe (small k, m).

        ``n_rounds=1``: one report, end to end (PRR then IRR),
        (K, m 2^k), columns ``(cohort, pattern)``. ``n_rounds=t``: the t
        reports of one item by one user, who keeps one cohort and one PRR
        (memoized) and draws a fresh IRR per report, (K, m 2^(k t)), columns
        ``(cohort, pattern_1, ..., pattern_t)``; its worst log-ratio is the
        loss of t reports (:meth:`exposure`). ``realized`` is accepted for
        the channel contract: the cells are realized at p itself, to float64
        resolution.
        """
        m, k = self.n_cohorts, self.n_bits
        if isinstance(n_rounds, bool) or not isinstance(n_rounds, Integral) or n_rounds < 1:
            raise ValueError(f"n_rounds must be a positive integer, got {n_rounds!r}.")
        width = k * int(n_rounds)
        if m * (1 << width) > _MAX_PATTERNS:
            raise ValueError(
                f"The channel matrix is only built for m 2^(k n_rounds) <= {_MAX_PATTERNS}; "
                f"got m={m}, k={k}, n_rounds={n_rounds}."
            )
        keys = self._universe_keys(universe)
        # Bits of every pattern (2^(k t), t, k): round r's report is bits
        # r k .. (r+1) k - 1, most significant first.
        patterns = (np.arange(1 << width)[:, None] >> np.arange(width - 1, -1, -1)) & 1
        patterns = patterns.reshape(-1, int(n_rounds), k)
        ones = patterns.sum(axis=1)  # (2^(k t), k): rounds in which each bit was 1
        # g(c | b): a bit's t reports given its Bloom bit b (the PRR is shared).
        per_bit = []
        for prr_one in (self.f / 2, 1 - self.f / 2):  # b = 0, b = 1
            like = prr_one * self.q**ones * (1 - self.q) ** (n_rounds - ones) + (
                1 - prr_one
            ) * self.p**ones * (1 - self.p) ** (n_rounds - ones)
            per_bit.append(like)
        Q = np.empty((keys.size, m, 1 << width))
        for c in range(m):
            bloom = self.bloom_filters(keys, np.full(keys.size, c))  # (K, k)
            like = np.where(bloom[:, None, :] == 1, per_bit[1][None], per_bit[0][None])
            Q[:, c, :] = like.prod(axis=2) / m
        return Q.reshape(keys.size, -1)

    def permanent_channel_matrix(self, universe):
        """Exact channel of the permanent round over a finite universe: (K, m 2^k).

        Columns ``(cohort, B')``: what every report of one item is
        post-processing of. Its worst log-ratio is ``epsilon_perm`` for two
        items with disjoint filters of h bits in some cohort.
        """
        m, k = self.n_cohorts, self.n_bits
        if m * (1 << k) > _MAX_PATTERNS:
            raise ValueError(
                f"The channel matrix is only built for m 2^k <= {_MAX_PATTERNS}; got m={m}, k={k}."
            )
        keys = self._universe_keys(universe)
        patterns = (np.arange(1 << k)[:, None] >> np.arange(k - 1, -1, -1)) & 1  # (2^k, k)
        Q = np.empty((keys.size, m, 1 << k))
        for c in range(m):
            bloom = self.bloom_filters(keys, np.full(keys.size, c))
            rate = np.where(bloom == 1, 1 - self.f / 2, self.f / 2)
            like = np.where(patterns[None, :, :] == 1, rate[:, None, :], 1 - rate[:, None, :])
            Q[:, c, :] = like.prod(axis=2) / m
        return Q.reshape(keys.size, -1)

    def _universe_keys(self, universe):
        """The key of each item of ``universe``, in order."""
        items = list(universe)
        codes, keys = self.encoding.whole_keys(
            items if self.encoding.item_type == "int" else np.asarray(items, dtype=object)
        )
        return keys[codes]

    # ------------------------------------------------------------ decoding
    def design(self, candidate_keys, cohorts=None, *, sparse=False):
        """The (m k, S) 0/1 matrix: bit i of cohort c is set by candidate s.

        ``cohorts`` (default: all, in order) selects the cohorts whose k rows
        are built. ``sparse=True`` returns a :class:`scipy.sparse.csc_array`
        (at most h nonzeros per cohort and column) instead of a dense array:
        the decoder works on it, since the dense matrix of 5,000 candidates
        over 64 cohorts of 128 bits already takes 330 MB.
        """
        m, k = self.n_cohorts, self.n_bits
        cohorts = np.arange(m) if cohorts is None else np.asarray(cohorts, dtype=np.int64)
        candidate_keys = np.asarray(candidate_keys, dtype=np.int64)
        S, M = candidate_keys.size, cohorts.size
        # positions[r, s, j]: the j-th hash of candidate s in the r-th cohort asked for
        positions = np.empty((M, S, self.n_hashes), dtype=np.int64)
        for r, c in enumerate(cohorts):
            positions[r] = self.bloom_positions(candidate_keys, np.full(S, c))
        rows = (np.arange(M)[:, None, None] * k + positions).ravel()
        cols = np.broadcast_to(np.arange(S)[None, :, None], positions.shape).ravel()
        if not sparse:
            X = np.zeros((M * k, S), dtype=float)
            X[rows, cols] = 1.0
            return X
        # int32 indices (M k <= 2^28): what scikit-learn's sparse solvers take.
        ij = (rows.astype(np.int32), cols.astype(np.int32))
        X = scipy.sparse.coo_array((np.ones(rows.size), ij), shape=(M * k, S)).tocsc()
        X.sum_duplicates()
        X.data[:] = 1.0  # two hashes of one item on one bit set it once
        return X


def _permanent_round(draws, bloom, positions, keys, f, rng):
    """B' (n, k), the PRR of the Bloom filters ``bloom`` (set bits at ``positions``, (n, h)).

    With ``draws`` (the users' secrets, :class:`SecretDraws`), memoized as
    RAPPOR's client does: one row of PRF Bernoulli cells keyed by the
    secret, with the item's key as the value, bit i being 1 with
    probability ``1 - f/2`` at the Bloom positions and ``f/2`` elsewhere
    (exactly RAPPOR's "replace by a fair coin with probability f": a set
    bit stays 1 w.p. ``1 - f + f/2``, an unset one becomes 1 w.p. ``f/2``).
    The same secret and item give the same B' in every call and process;
    different secrets give independent ones.

    Without ``draws``, drawn anew from ``rng`` (no memoization): the
    end-to-end channel of one report, for simulations of single
    collections; over several reports of one user it is *not* RAPPOR's
    guarantee (the PRR averages away), which is why ``transform`` never
    uses it.
    """
    if draws is None:
        randomize = bernoulli_matrix(bloom.shape, f, rng)
        coin = bernoulli_matrix(bloom.shape, 0.5, rng)
        return np.where(randomize, coin, bloom.astype(bool))
    columns, set_bit = _distinct_marks(bloom, positions)
    return draws.bernoulli(
        "prr",
        np.asarray(keys, dtype=np.int64).astype(np.uint64),
        np.full(bloom.shape[1], f / 2),
        columns,
        np.where(set_bit, 1 - f / 2, f / 2),
    )


def _distinct_marks(bloom, positions):
    """Columns marked for :func:`prf_bernoulli`, distinct within each row.

    Two of an item's h hashes may fall on one bit. The marked columns are
    the row's Bloom positions in hash order, each repeated one (after its
    first occurrence) replaced by a column that is not a Bloom bit and
    marked with the unset probability, so its law is unchanged: a row with d
    distinct positions has h - d repeats and at least h - d free columns
    among 0 .. h-1, and the j-th repeat takes the j-th of them. With h >= k
    every column is marked. Returns the columns (n, w) and whether each is
    a Bloom bit.
    """
    n, k = bloom.shape
    h = positions.shape[1]
    if h >= k:
        return np.ascontiguousarray(np.broadcast_to(np.arange(k), (n, k))), bloom.astype(bool)
    columns = np.array(positions, dtype=np.int64)
    repeated = repeated_in_rows(columns)
    rows = np.flatnonzero(repeated.any(axis=1))
    if rows.size:
        rep = repeated[rows]
        free_first = np.argsort(bloom[rows, :h] != 0, axis=1, kind="stable")
        rank = np.maximum(np.cumsum(rep, axis=1) - 1, 0)
        spare = np.take_along_axis(free_first, rank, axis=1)
        sub = columns[rows]
        sub[rep] = spare[rep]
        columns[rows] = sub
    return columns, ~repeated


_BLOOM_CONSTRAINTS: dict[str, list[Any]] = {
    "n_bits": [Interval(Integral, 2, 4096, closed="both")],
    "n_hashes": [Interval(Integral, 1, 64, closed="both")],
    "n_cohorts": [Interval(Integral, 1, 65536, closed="both")],
    "p": [Interval(Real, 0, 1, closed="both"), None],
    "q": [Interval(Real, 0, 1, closed="both"), None],
    "f": [Interval(Real, 0, 1, closed="left"), None],
    "epsilon_perm": [Interval(Real, 0, None, closed="neither"), None],
    "epsilon_1": [Interval(Real, 0, None, closed="neither"), None],
    "item_type": [StrOptions({"str", "bytes", "int"})],
    "normalization": [StrOptions({"NFC", "NFKC"}), None],
    "hash_seed": ORACLE_CONSTRAINTS["hash_seed"],
}


class BloomRAPPOR(OpenDomainMechanism, MemoizedMechanism):
    """RAPPOR over strings: Bloom filters, cohorts, memoized permanent round, fresh IRR.

    Each user, in a cohort derived from the user's secret, hashes the item
    with the cohort's ``n_hashes`` functions into a Bloom filter of
    ``n_bits`` bits, then randomizes it twice: the permanent round (PRR,
    parameter f), memoized per (user, item), and the instantaneous round
    (IRR, parameters p and q), fresh at every report (Erlingsson, Pihur &
    Korolova, CCS 2014). One report is ``epsilon_``-LDP (google/rappor's
    eps_1); all the reports of one item by one user together cost at most
    ``epsilon_permanent_`` (eps_inf), however many there are
    (:meth:`exposure` gives the loss after t reports). Decode with
    :class:`BloomRAPPORDecoder` against a list of candidate strings. The
    defaults are google/rappor's demo parameters (k = 16, h = 2, m = 64,
    p = 0.5, q = 0.75, f = 0.5).

    The randomization is set by (p, q, f) or by the budgets: ``epsilon_perm``
    sets f and ``epsilon_1`` sets q (or p, when q is given); see
    :func:`rappor_parameters` for the map both ways.

    Items are hashed whole (no length limit); text is NFC-normalized.

    Parameters
    ----------
    n_bits : int, default=16
        k, the Bloom filter's size.
    n_hashes : int, default=2
        h, hash functions per cohort.
    n_cohorts : int, default=64
        m.
    p, q : float or None, default=None
        IRR: P(report 1 | B' = 0), P(report 1 | B' = 1). None: 0.5 and 0.75,
        or, with ``epsilon_1``, the one derived from it (q, unless q is
        given: then p).
    f : float in [0, 1) or None, default=None
        PRR: the probability that a bit is replaced by a fair coin. None: 0.5,
        or the f of ``epsilon_perm``.
    epsilon_perm : float > 0 or None, default=None
        The permanent round's budget eps_inf, which bounds all the reports
        of one item by one user: sets ``f = 2 / (1 + e^(epsilon_perm / (2
        n_hashes)))``. Refused together with f.
    epsilon_1 : float > 0 or None, default=None
        The budget of one report: sets q (p given or 0.5), or p if q is
        given. Refused together with both p and q, above ``epsilon_perm``,
        or when the other parameters cannot reach it.
    item_type : {"str", "bytes", "int"}, default="str"
    normalization : {"NFC", "NFKC"} or None, default="NFC"
    hash_seed : int, default=0
    memo_label : str, default=""
        Names the collection in the context of the memoized cohorts and PRRs
        (public; keep it for every round of one collection). Collections
        that get the same users' secrets for *different* questions need
        distinct labels: with one label, a user holding the same item in
        both would send reports of one PRR in both, and the collections'
        losses would not add up as two budgets (they would compose as
        fresh reports of one item).
    random_state : None, "secure", int, Generator, SeedSequence or RandomState, default=None
        The IRR's randomness (fresh at every call for None and "secure").
        An integer (or SeedSequence) also makes missing ``user_secrets``
        simulated users: row i is simulated user i in every call
        (simulations only).

    Attributes
    ----------
    channel_ : BloomRAPPORProtocol
        The public spec (what reports carry); ``protocol_`` is its deprecated name.
    epsilon_ : float
        eps_1, the budget of one report.
    epsilon_permanent_ : float
        eps_inf, the bound of all reports of one item by one user.
    n_features_in_ : int

    Notes
    -----
    The cohort and the PRR come from a keyed pseudo-random function of the
    user's secret (and, for the PRR, of the item), as RAPPOR's client
    derives them: nothing but the secret is kept, and the same user holding
    the same item gets the same PRR in every round (see the "Collecting over
    time" and "Heavy hitters" pages). Without ``user_secrets``, ``transform``
    refuses unless ``random_state`` is an integer (a simulation).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp.heavy_hitters import BloomRAPPOR, BloomRAPPORDecoder
    >>> from sklearn_uldp.utils import generate_user_secrets
    >>> words = np.random.default_rng(0).choice(["a", "b", "c"], p=[.5, .3, .2], size=50_000)
    >>> # seeded for a reproducible example; a deployment keeps the defaults
    >>> mech = BloomRAPPOR(n_bits=32, n_cohorts=8, random_state=0).fit()
    >>> secrets = generate_user_secrets(len(words), random_state=0)  # one per user, kept by them
    >>> monday = mech.transform(words, user_secrets=secrets)
    >>> tuesday = mech.transform(words, user_secrets=secrets)  # same cohorts and PRRs
    >>> bool((monday[:, 0] == tuesday[:, 0]).all()), round(mech.epsilon_, 3)
    (True, 1.074)
    >>> round(mech.exposure(1), 3), round(mech.exposure(10_000), 3)  # eps_1 ... eps_inf
    (1.074, 4.394)
    >>> dec = BloomRAPPORDecoder(candidates=["a", "b", "c", "d", "e"]).fit(monday)
    >>> dec.detected_.round(1).to_dict()
    {'a': 0.5, 'b': 0.3, 'c': 0.2}
    """

    _parameter_constraints = {
        "random_state": OpenDomainMechanism._parameter_constraints["random_state"],
        **_BLOOM_CONSTRAINTS,
        "memo_label": [str],
    }

    def __init__(
        self,
        *,
        n_bits: int = 16,
        n_hashes: int = 2,
        n_cohorts: int = 64,
        p: float | None = None,
        q: float | None = None,
        f: float | None = None,
        epsilon_perm: float | None = None,
        epsilon_1: float | None = None,
        item_type: str = "str",
        normalization: str | None = "NFC",
        hash_seed: int = 0,
        memo_label: str = "",
        random_state: RandomStateLike = None,
    ) -> None:
        self.n_bits = n_bits
        self.n_hashes = n_hashes
        self.n_cohorts = n_cohorts
        self.p = p
        self.q = q
        self.f = f
        self.epsilon_perm = epsilon_perm
        self.epsilon_1 = epsilon_1
        self.item_type = item_type
        self.normalization = normalization
        self.hash_seed = hash_seed
        self.memo_label = memo_label
        self.random_state = random_state

    def _make_channel(self):
        p, q, f = rappor_parameters(
            self.n_hashes, self.p, self.q, self.f, self.epsilon_perm, self.epsilon_1
        )
        return BloomRAPPORProtocol(
            self.n_bits,
            self.n_hashes,
            self.n_cohorts,
            p,
            q,
            f,
            self.item_type,
            self.normalization,
            self.hash_seed,
        )

    def fit(self, X: ArrayLike | None = None, y: object = None) -> BloomRAPPOR:
        super().fit(X, y)
        self.epsilon_ = self.channel_.epsilon
        self.epsilon_permanent_ = self.channel_.epsilon_permanent
        return self

    def _encode(self, X):
        return self.channel_.encoding.whole_keys(require_items(X))

    def _draws(self, user_keys):
        """The permanent draws of the users' keys, in this collection's contexts."""
        protocol, label = self.channel_, self.memo_label
        return SecretDraws(user_keys, lambda purpose: protocol.memo_context(purpose, label))

    @fill_doc(MEMO_DOCS)
    def transform(self, X: ArrayLike, user_secrets: Any = None) -> TransformOutput:
        """Privatize each item: memoized cohort and PRR, fresh IRR.

        Parameters
        ----------
        X : array-like of shape (n_samples,) or (n_samples, 1)
            One column of items, one row per user.
        %(user_secrets)s

        Returns
        -------
        reports : Reports of shape (n_samples, n_bits + 1) or DataFrame
            Rows ``[cohort, bit_0, ..., bit_{k-1}]`` carrying the protocol.
        """
        check_is_fitted(self, "channel_")
        self._check_column_name(X)
        codes, keys = self._encode(X)
        user_keys = resolve_user_keys(
            user_secrets, self.random_state, codes.size, type(self).__name__
        )
        rng = self._transform_rng(codes)
        out = self.channel_.sample(keys[codes], rng, self._draws(user_keys))
        return self._container(out, X)

    @fill_doc(MEMO_DOCS)
    def permanent_answers(self, X: ArrayLike, user_secrets: Any = None) -> TransformOutput:
        """Each user's cohort and permanent randomized response (PRR) of the item.

        Rows ``[cohort, B'_0, ..., B'_{k-1}]``: what every report of the
        item randomizes again with a fresh IRR (the reports the protocol
        would send with ``p = 0``, ``q = 1``). The same secret and item give
        the same row in every call, round and process. They are for the
        users' side (e.g. a client checking that its device memoizes):
        **never send them**, one of them costs ``epsilon_permanent_``.
        Nothing is drawn from ``random_state``.

        Parameters
        ----------
        X : array-like of shape (n_samples,) or (n_samples, 1)
            One column of items, one row per user.
        %(user_secrets)s

        Returns
        -------
        answers : ndarray of shape (n_samples, n_bits + 1) or DataFrame
            Plain rows (they carry no protocol: they are not reports).
        """
        check_is_fitted(self, "channel_")
        self._check_column_name(X)
        codes, keys = self._encode(X)
        user_keys = resolve_user_keys(
            user_secrets, self.random_state, codes.size, type(self).__name__
        )
        out = self.channel_.sample(keys[codes], None, self._draws(user_keys), instantaneous=False)
        if _transform_output(self) == "pandas":
            index = X.index if isinstance(X, (pd.DataFrame, pd.Series)) else None
            return pd.DataFrame(out, columns=self.get_feature_names_out(), index=index)
        return out

    @fill_doc(MEMO_DOCS)
    def fit_transform(
        self, X: ArrayLike, y: object = None, user_secrets: Any = None, **fit_params: Any
    ) -> TransformOutput:
        """Fit, then privatize ``X`` (see :meth:`transform`).

        Parameters
        ----------
        X : array-like of shape (n_samples,) or (n_samples, 1)
        %(fit_transform_secrets)s

        Returns
        -------
        reports : Reports or DataFrame
        """
        return self.fit(X, y).transform(X, user_secrets=user_secrets)

    @fill_doc(MEMO_DOCS)
    def exposure(self, n_rounds):
        """Privacy loss of ``n_rounds`` reports of one item by one user.

        ``epsilon_`` for one report, never above ``epsilon_permanent_``
        (see :meth:`BloomRAPPORProtocol.exposure`).

        %(exposure_sections)s
        """
        check_is_fitted(self, "channel_")
        return self.channel_.exposure(n_rounds)

    @property
    def epsilon_spent_(self):
        return float(self.channel_.epsilon)
