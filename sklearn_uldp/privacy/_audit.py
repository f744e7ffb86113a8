"""Empirical privacy audit of a mechanism treated as a black box.

The exact checks (:func:`check_ldp`, :func:`check_uldp`, ...) read a
mechanism's channel matrix: they prove what the *spec* promises. The audit
samples what the *sampler* really does: for pairs of inputs (x, x') it draws
many reports of each, and for events E (an output value, a pattern of bits)
gives a Clopper-Pearson lower bound on ``ln P[E | x] / P[E | x']`` that holds
simultaneously for every test (Bonferroni). A bound above the claimed budget
is statistical evidence (at level alpha) that the sampler leaks more than it
claims; a bound below it is no proof of privacy.

The approach follows the statistical auditing of LDP implementations
(Arcolezi & Gambs, "Revealing the True Cost of Locally Differentially Private
Protocols: An Auditing Perspective", PETS 2024; Ding, Wang, Wang, Zhang &
Kifer, "Detecting Violations of Differential Privacy", CCS 2018).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from numbers import Integral, Real
from typing import Any, Literal, cast

import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn.utils.validation import check_is_fitted

from ..utils._typing import ArrayLike, RandomStateLike
from ._audit_events import (
    _CHUNK,
    _custom_events,
    _custom_tests,
    _describe_report,
    _factorize,
    _key,
    _likelihood_columns,
    _likelihood_tests,
    _log_likelihoods,
    _log_ratio_bound,
    _pair_tests,
    _presumed_violations,
    _row_values,
    _split,
)
from ._context_aware import PrivacyMatrix, block_structured

__all__ = ["AuditResult", "audit_mechanism"]


@dataclass(frozen=True, repr=False)
class AuditResult:
    """Outcome of :func:`audit_mechanism`.

    Attributes
    ----------
    epsilon_lower_bound : float
        The largest lower bound, over the tests with a finite claimed budget
        (over all tests when none is finite), on the realized privacy loss
        ``ln P[E | x] / P[E | x']``; never below 0. With probability at least
        ``1 - alpha`` every bound of :attr:`tests` holds at once.
    epsilon_claimed : float
        The largest finite budget claimed for a tested pair (``inf`` when the
        mechanism claims none, e.g. :class:`~sklearn_uldp.mechanisms.NonPrivate`;
        NaN when unknown).
    passed : bool or None
        True when no test's bound exceeds its claimed budget and no ULDP
        violation was seen; None when no budget was claimed or given.
    tests : pandas.DataFrame
        One row per (ordered pair, event) test: ``x``, ``x_prime``, ``event``,
        the counts and rates on the test half, the Clopper-Pearson bounds
        ``p_lower`` (of P[E | x]) and ``p_prime_upper`` (of P[E | x']),
        ``lower_bound``, ``claimed`` and ``exceeds``.
    uldp_violations : pandas.DataFrame
        Sensitive inputs that produced an invertible output: ``x``, ``count``,
        an ``example`` report and the ``basis`` of the decision.
    n_samples : int
        Reports drawn per tested input.
    alpha : float
        Family-wise error level of the bounds.
    notes : list of str
        What was skipped or presumed, and why.

    Examples
    --------
    >>> from sklearn_uldp import RandomizedResponse
    >>> from sklearn_uldp.privacy import audit_mechanism
    >>> mech = RandomizedResponse(epsilon=1.0, categories=[0, 1], random_state=0).fit()
    >>> result = audit_mechanism(mech, n_samples=20_000, random_state=0)
    >>> result.passed, 0.5 < result.epsilon_lower_bound <= 1.0
    (True, True)
    """

    epsilon_lower_bound: float
    epsilon_claimed: float
    passed: bool | None
    tests: pd.DataFrame
    uldp_violations: pd.DataFrame
    n_samples: int
    alpha: float
    notes: list = field(default_factory=list)

    def __bool__(self):
        return bool(self.passed)

    @property
    def worst(self) -> pd.Series | None:
        """The test row attaining :attr:`epsilon_lower_bound` (None if no test)."""
        if self.tests.empty:
            return None
        finite = self.tests[np.isfinite(self.tests["claimed"])]
        frame = finite if not finite.empty else self.tests
        return frame.loc[cast(Any, frame["lower_bound"].idxmax())]

    def summary(self) -> str:
        """A readable multi-line summary.

        Returns
        -------
        text : str
        """
        verdict = {True: "PASSED", False: "FAILED", None: "NO CLAIM"}[self.passed]
        lines = [
            f"Privacy audit: {verdict} (alpha={self.alpha:g}, "
            f"{self.n_samples} reports per input, {len(self.tests)} tests)",
            f"  epsilon lower bound {self.epsilon_lower_bound:.4g} "
            f"vs claimed {self.epsilon_claimed:.4g}"
            + (" (no privacy claimed)" if self.epsilon_claimed == np.inf else ""),
        ]
        worst = self.worst
        if worst is not None:
            lines.append(
                f"  worst test: x={_plain(worst['x'])!r}, "
                f"x'={_plain(worst['x_prime'])!r}, "
                f"event {worst['event']}: {worst['count']}/{worst['n']} vs "
                f"{worst['count_prime']}/{worst['n_prime']}"
            )
        exceeding = int(self.tests["exceeds"].sum()) if len(self.tests) else 0
        if exceeding:
            lines.append(f"  {exceeding} test(s) exceed their claimed budget")
        if len(self.uldp_violations):
            lines.append(
                f"  ULDP violations: sensitive inputs produced "
                f"{int(self.uldp_violations['count'].sum())} invertible report(s) "
                f"(inputs {[_plain(x) for x in self.uldp_violations['x']]})"
            )
        lines += [f"  note: {note}" for note in self.notes]
        return "\n".join(lines)

    def __repr__(self):
        leaks = int(self.uldp_violations["count"].sum()) if len(self.uldp_violations) else 0
        return (
            f"AuditResult(passed={self.passed}, epsilon_lower_bound="
            f"{self.epsilon_lower_bound:.4g}, epsilon_claimed="
            f"{self.epsilon_claimed:.4g}, n_tests={len(self.tests)}, "
            f"uldp_violations={leaks})"
        )


# ------------------------------------------------------------------ inputs
def _plain(value):
    """numpy scalars as Python ones (for readable labels)."""
    return value.item() if isinstance(value, np.generic) else value


def _domain_of(mechanism):
    for obj in (mechanism, getattr(mechanism, "channel_", None)):
        for name in ("categories_", "categories"):
            cats = getattr(obj, name, None)
            if cats is not None and not isinstance(cats, str):
                return list(np.asarray(cats, dtype=object))
    return None


def _column(value, n, name=None):
    """n copies of one input: a one-column array (a frame when the mechanism
    was fitted on a named column), or a frame for a row dict."""
    if isinstance(value, dict):
        return pd.DataFrame([value]).iloc[np.zeros(n, dtype=np.intp)].reset_index(drop=True)
    arr = np.asarray([value])
    if arr.dtype.kind not in "biufUS":
        arr = np.asarray([value], dtype=object)
    column = np.repeat(arr, n).reshape(-1, 1)
    return column if name is None else pd.DataFrame(column, columns=[name])


def _make_sampler(mechanism, seed):
    if hasattr(mechanism, "transform"):
        names = getattr(mechanism, "feature_names_in_", None)
        name = names[0] if names is not None and len(names) == 1 else None
        return lambda value, n: mechanism.transform(_column(value, n, name))
    if callable(mechanism):

        def sample(value, n):
            values = _column(value, n)
            if isinstance(values, np.ndarray):
                values = values[:, 0]
            # One independent stream per call, spawned from random_state.
            rng = np.random.default_rng(seed.spawn(1)[0])
            return mechanism(values, rng)

        return sample
    raise TypeError(
        f"Cannot audit a {type(mechanism).__name__}: pass a fitted mechanism "
        "(anything with transform on one column) or a callable f(values, rng) "
        "-> reports."
    )


# ----------------------------------------------------------------- reports
def _is_sketch(arr):
    """Rows [index, 0/1 bits...] whose index is not itself a bit (CMS)."""
    if arr.ndim != 2 or arr.shape[1] < 2 or arr.dtype.kind not in "iu" or not arr.size:
        return False
    index, bits = arr[:, 0], arr[:, 1:]
    return bool(index.min() >= 0 and index.max() > 1 and bits.min() >= 0 and bits.max() <= 1)


def _as_reports(reports):
    """Return ("outputs", 1-D values), ("bits", dense uint8 or CSR matrix) or
    ("sketch", int64 rows [index, bits])."""
    if sp.issparse(reports):
        return "bits", sp.csr_array(reports)
    if hasattr(reports, "to_numpy"):
        reports = reports.to_numpy()
    arr = np.asarray(reports)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim == 1:
        return "outputs", arr
    if arr.ndim == 2:
        if arr.dtype == bool or _is_binary(arr):
            return "bits", np.ascontiguousarray(arr, dtype=np.uint8)
        if _is_sketch(arr):
            return "sketch", np.ascontiguousarray(arr, dtype=np.int64)
        return "outputs", _row_values(arr)
    raise ValueError(
        f"Reports of shape {arr.shape} are neither one value per user nor one "
        "row per user: return an array of shape (n,), (n, 1) or (n, d)."
    )


def _is_binary(arr):
    """Whether a numeric array holds only 0 and 1 (two passes, no temporary for ints)."""
    if arr.dtype.kind in "iu":
        return not arr.size or bool(arr.min() >= 0 and arr.max() <= 1)
    return arr.dtype.kind == "f" and bool(np.isin(arr, (0, 1)).all())


def _stack(kind, parts):
    if kind == "outputs":
        return np.concatenate(parts)
    if any(sp.issparse(p) for p in parts):
        return sp.vstack([sp.csr_array(p) for p in parts], format="csr")
    return np.concatenate(parts)


# -------------------------------------------------- the protected outputs
def _channel_classifier(channel):
    """Report -> protected mask from the channel's likelihood zero pattern.

    An output is invertible when exactly one input can produce it; the
    likelihood may drop positive report-only factors, never a zero.
    """
    if channel is None or not all(
        hasattr(channel, name) for name in ("encode_reports", "likelihood")
    ):
        return None

    def classify(kind, reports):
        if kind == "outputs":
            uniques, inverse = _factorize(reports)
            codes = channel.encode_reports(np.asarray(uniques).reshape(-1, 1))
            L = channel.likelihood(codes)
            return ((np.asarray(L) > 0).sum(axis=1) >= 2)[inverse]
        out = np.empty(reports.shape[0], dtype=bool)
        for start in range(0, reports.shape[0], _CHUNK):
            block = reports[start : start + _CHUNK]
            L = channel.likelihood(channel.encode_reports(block))
            out[start : start + _CHUNK] = (np.asarray(L) > 0).sum(axis=1) >= 2
        return out

    return classify


# ----------------------------------------------------------------- claims
def _claims(mechanism, channel, epsilon, sensitive, inputs, domain):
    """Claimed budget per ordered pair of tested inputs, and sensitivity."""
    n_in = len(inputs)
    matrix = None
    if isinstance(epsilon, PrivacyMatrix) or (epsilon is not None and np.ndim(epsilon) == 2):
        matrix = epsilon if isinstance(epsilon, PrivacyMatrix) else PrivacyMatrix(epsilon, domain)
        eps = np.nan
    elif epsilon is not None:
        eps = float(epsilon)
        if not eps > 0:
            raise ValueError(f"epsilon must be a budget > 0 (inf allowed), got {epsilon!r}.")
    else:
        source = channel if channel is not None else mechanism
        eps = float(getattr(source, "epsilon", np.nan))
        if channel is not None and domain is not None:
            e12 = getattr(channel, "epsilon_12", None)
            e21 = getattr(channel, "epsilon_21", None)
            blocks = getattr(channel, "blocks", None)
            if e12 is not None and e21 is not None and np.isfinite([e12, e21]).all():
                matrix = PrivacyMatrix([[0.0, e12], [e21, 0.0]], domain)
            elif blocks is not None and sensitive is None:
                matrix = block_structured(domain, list(blocks), eps)
    if matrix is not None:
        pos = pd.Index([_key(c) for c in matrix.categories])
        idx = pos.get_indexer([_key(x) for x in inputs])
        if (idx < 0).any():
            raise ValueError(
                "The privacy matrix does not cover every tested input: pass "
                "pairs of values from its categories."
            )
        E = matrix.matrix[np.ix_(idx, idx)]
        return E, np.ones(n_in, dtype=bool), "context-aware"

    # ULDP needs a declared sensitive set that is neither empty (nothing
    # would be protected: the claim is then plain LDP) nor everything (LDP).
    sens, declared = None, False
    if sensitive is not None:
        if callable(sensitive):
            sens = np.array([bool(sensitive(x)) for x in inputs])
            declared = True
        else:
            arr = np.asarray(sensitive)
            if arr.dtype == bool and domain is not None and arr.shape == (len(domain),):
                chosen = {_key(c) for c, s in zip(domain, arr, strict=True) if s}
                declared = not arr.all()
            else:
                chosen = {_key(v) for v in np.asarray(sensitive, dtype=object).ravel()}
                declared = domain is None or len(chosen) < len(domain)
            sens = np.array([_key(x) in chosen for x in inputs])
            declared = declared and bool(chosen)
    elif channel is not None and hasattr(channel, "sensitive_mask") and domain is not None:
        mask = np.asarray(channel.sensitive_mask, dtype=bool)
        if mask.any() and not mask.all() and any(isinstance(x, dict) for x in inputs):
            raise ValueError(
                "Inputs are rows (dicts) of a mechanism with sensitive values: pass "
                "sensitive=callable(row) -> bool saying which rows hold a "
                "sensitive value."
            )
        if mask.shape == (len(domain),) and mask.any() and not mask.all():
            chosen = {_key(c) for c, s in zip(domain, mask, strict=True) if s}
            sens = np.array([_key(x) in chosen for x in inputs])
            declared = True
    E = np.full((n_in, n_in), eps)
    np.fill_diagonal(E, 0.0)
    if not declared or np.isinf(eps):
        return E, np.ones(n_in, dtype=bool), "LDP"
    return E, sens, "ULDP"


def _default_pairs(domain, sens_of, claims_of, rng):
    k = len(domain)
    if k <= 5:
        return [(i, j) for i in range(k) for j in range(i + 1, k) if claims_of(i, j)]
    cand = [(0, 1), (k - 2, k - 1)]
    if sens_of is not None:
        S = np.flatnonzero(sens_of)
        N = np.flatnonzero(~sens_of)
        if S.size and N.size:
            cand += [(S[0], N[0]), (S[-1], N[-1])]
        if S.size >= 2:
            cand.append((S[0], S[1]))
        if N.size >= 2:
            cand.append((N[0], N[1]))
    for _ in range(3):
        i, j = rng.choice(k, size=2, replace=False)
        cand.append((int(i), int(j)))
    pairs, seen = [], set()
    for i, j in cand:
        key = (min(i, j), max(i, j))
        if i != j and key not in seen and claims_of(i, j):
            seen.add(key)
            pairs.append((int(i), int(j)))
    if not pairs:  # e.g. block-structured: keep pairs inside a block
        for i in range(k):
            for j in range(i + 1, k):
                if claims_of(i, j):
                    return [(i, j)]
    return pairs


# -------------------------------------------------------------- the audit
def audit_mechanism(
    mechanism: Any,
    *,
    pairs: Literal["all"] | Sequence[tuple[Any, Any]] | None = None,
    n_samples: int = 20_000,
    events: Literal["auto", "outputs", "bits", "likelihood"] | Callable[..., Any] = "auto",
    alpha: float = 0.05,
    sensitive: ArrayLike | Callable[[Any], bool] | None = None,
    epsilon: float | PrivacyMatrix | None = None,
    protected: Callable[..., Any] | None = None,
    max_events: int = 8,
    batch_size: int = 65_536,
    random_state: RandomStateLike = None,
) -> AuditResult:
    """Audit a mechanism empirically: a statistical lower bound on its ε.

    For each pair of inputs (x, x') the audit draws ``n_samples`` reports of
    each and, for events E (one output value, or a pattern of bits), bounds
    ``ln P[E | x] / P[E | x']`` from below with Clopper-Pearson intervals,
    Bonferroni-corrected over every test so that all bounds hold at once with
    probability at least ``1 - alpha``. The first half of the reports chooses
    the most telling events of each ordered pair (at most ``max_events``); the
    second half tests them, so choosing events from the data keeps the bounds
    valid. For ULDP mechanisms it also checks that no sensitive input produced
    an invertible output.

    The mechanism is a black box: only ``transform`` (or a plain callable)
    is used to draw reports; its ``channel_`` and ``epsilon``, when present,
    give the claim to test against, which outputs are invertible and (for
    sketch reports) the likelihood-ratio events.

    Parameters
    ----------
    mechanism : fitted transformer or callable
        Anything with ``transform`` on a one-column input (a fitted mechanism
        of this package or another scikit-learn-style transformer), or a
        callable ``f(values, rng) -> reports`` with ``values`` a 1-D array of
        inputs and ``rng`` a numpy Generator. Reports may be one value per
        user (labels or integer codes, shape (n,) or (n, 1)), 0/1 bit vectors
        (dense (n, d) or scipy sparse), sketch rows (an integer index, then
        0/1 bits) or other rows (compared as wholes). A
        transformer draws with its own ``random_state``.
    pairs : None, "all" or list of (x, x_prime), default=None
        Inputs to compare (values of the domain; dict rows for mechanisms
        whose input is a row, e.g. :class:`~sklearn_uldp.mechanisms.PersonalizedMechanism`).
        Each pair is tested in both directions. None: every pair for up to 5
        categories, else a few informative ones (the first two and last two
        categories, sensitive against non-sensitive, two sensitive, two
        non-sensitive) plus three random pairs. "all": every pair of the
        domain (k(k-1)/2 pairs). A callable without a domain needs a list.
    n_samples : int, default=20_000
        Reports drawn per tested input (half select events, half test).
    events : {"auto", "outputs", "bits", "likelihood"} or callable, default="auto"
        "outputs": each report value is an event (whole bit vectors or
        sketch rows). "bits": for bit vectors, the joint patterns of
        the 3 bits that differ most between x and x' and each of these bits
        alone (set or unset). "likelihood": the likelihood-ratio events
        ``ln Q(y|x)/Q(y|x') >= t`` of the mechanism's channel (the most
        powerful tests), thresholds t chosen on the first half. "auto":
        "bits" for bit vectors; for sketch rows ``[index, bits]`` (count-mean
        sketch: the input shows only jointly with the hash index) and for
        more possible outputs than reports (Hadamard count-mean sketch)
        "likelihood" with a channel; for sketch rows of a black box, the
        events "index == j and bit b set" (or unset) and "bit b1(j) set and
        bit b0(j) unset" (per index and pooled) of the most telling bits
        b1(j), b0(j) of each index; else "outputs".
        A callable ``events(reports) -> bool array`` of shape (n,) or (n, m),
        with ``reports`` a 1-D array of report values or an (n, d) 0/1 array
        (scipy sparse when the mechanism returns sparse reports), gives fixed
        events (``events[j]`` in the table); they need no
        selection, so every report tests them.
    alpha : float in (0, 1), default=0.05
        Family-wise error level: with probability at least 1 - alpha no
        bound exceeds the true privacy loss of its test.
    sensitive : None, array-like or callable, default=None
        The sensitive inputs (values, a boolean mask over the domain, or a
        callable ``input -> bool``); defaults to the channel's sensitive set.
        With sensitive and non-sensitive inputs the claim is ULDP: any event
        when x is sensitive, only protected outputs when x is not.
    epsilon : None, float or PrivacyMatrix, default=None
        The claimed budget; defaults to the mechanism's (a privacy matrix for
        block-structured and asymmetric binary mechanisms). ``inf`` measures
        without a claim.
    protected : None or callable, default=None
        ``protected(reports) -> bool array``: which reports are protected
        outputs (Y_P). Defaults to the channel's (outputs more than one input
        can produce); for a black box without it, ULDP tests with a
        non-sensitive x are skipped and invertible outputs are presumed from
        the samples (see Notes).
    max_events : int, default=8
        Events tested per ordered pair.
    batch_size : int, default=65_536
        Reports drawn per call of the sampler.
    random_state : None, int, SeedSequence or Generator, default=None
        Draws the random pairs and seeds the generators given to a callable
        (one independent stream per call). A transformer draws its reports
        with its own ``random_state``.

    Returns
    -------
    result : AuditResult

    Notes
    -----
    A passing audit is evidence, not proof: it only says that no tested
    event showed a larger loss at this sample size. The proofs for the
    package's own mechanisms are the exact-channel checks
    (:func:`check_ldp`, :func:`check_uldp`, :func:`check_context_aware`);
    the audit checks that the sampler does what the channel says, and audits
    mechanisms that have no channel.

    Without a channel or ``protected``, an output is *presumed invertible*
    when, in the first half of the samples of the tested non-sensitive
    inputs (at least two are needed), exactly one of them produced it, at
    least ``e^ε · ln(m / alpha)`` times (m: distinct outputs seen), which a
    protected output would do with probability below alpha / m; a sensitive
    input producing it is reported as a ULDP violation.

    Examples
    --------
    >>> from sklearn_uldp import UtilityOptimizedRR
    >>> from sklearn_uldp.privacy import audit_mechanism
    >>> mech = UtilityOptimizedRR(epsilon=1.0, sensitive=["c"],
    ...                           categories=["a", "b", "c"], random_state=0).fit()
    >>> result = audit_mechanism(mech, n_samples=20_000, random_state=0)
    >>> result.passed, len(result.uldp_violations)
    (True, 0)

    A mechanism of another library, as a callable (here a randomized
    response that keeps the truth too often for its claim):

    >>> import numpy as np
    >>> def leaky_rr(values, rng):
    ...     keep = rng.random(values.shape[0]) < 0.9
    ...     return np.where(keep, values, rng.integers(0, 3, values.shape[0]))
    >>> result = audit_mechanism(leaky_rr, pairs=[(0, 1)], epsilon=1.0,
    ...                          random_state=0)
    >>> result.passed, result.epsilon_lower_bound > 1.0
    (False, True)
    """
    _check_audit_arguments(n_samples, alpha, events, max_events, batch_size)
    if hasattr(mechanism, "transform") and hasattr(mechanism, "get_params"):
        check_is_fitted(mechanism)
    pair_seed, sample_seed = _audit_seed(random_state).spawn(2)
    channel = getattr(mechanism, "channel_", None)
    domain = _domain_of(mechanism)
    notes: list[str] = []

    inputs, idx_pairs = _inputs_and_pairs(
        mechanism, channel, pairs, epsilon, sensitive, domain, pair_seed
    )
    E, sens, mode = _claims(mechanism, channel, epsilon, sensitive, inputs, domain)
    kind, reports = _draw_reports(mechanism, inputs, n_samples, batch_size, sample_seed)
    half = n_samples // 2
    lik_cols = _likelihood_columns(channel, inputs)
    kind_ev = _event_kind(events, kind, channel, lik_cols, half)
    # Fixed events need no selection: every report tests them.
    n_B = n_samples if kind_ev == "custom" else n_samples - half
    classify, prot, violations = _uldp_violations(
        mode, protected, channel, kind, reports, inputs, sens, half, E, alpha, notes
    )
    rows = _event_tests(
        kind_ev,
        events,
        channel,
        kind,
        reports,
        lik_cols,
        idx_pairs,
        mode,
        sens,
        classify,
        prot,
        half,
        alpha,
        max_events,
    )
    tests = _tests_table(rows, inputs, E, n_B, alpha)
    bound, claimed, passed = _verdict(tests, violations, E, idx_pairs, notes)
    return AuditResult(
        bound,
        claimed,
        passed,
        tests.reset_index(drop=True),
        violations,
        int(n_samples),
        float(alpha),
        notes,
    )


# ------------------------------------------------------------ the audit's steps
def _check_audit_arguments(n_samples, alpha, events, max_events, batch_size):
    """Refuse arguments of ``audit_mechanism`` outside their ranges."""
    if not (isinstance(n_samples, Integral) and n_samples >= 4):
        raise ValueError(f"n_samples must be an integer >= 4, got {n_samples!r}.")
    if not (isinstance(alpha, Real) and 0 < alpha < 1):
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}.")
    if not callable(events) and events not in ("auto", "outputs", "bits", "likelihood"):
        raise ValueError(
            f"events must be 'auto', 'outputs', 'bits', 'likelihood' or a callable, got {events!r}."
        )
    if not (isinstance(max_events, Integral) and max_events >= 1):
        raise ValueError(f"max_events must be an integer >= 1, got {max_events!r}.")
    if not (isinstance(batch_size, Integral) and batch_size >= 1):
        raise ValueError(f"batch_size must be an integer >= 1, got {batch_size!r}.")


def _audit_seed(random_state):
    """The audit's root SeedSequence (pairs and samples are spawned from it)."""
    if isinstance(random_state, np.random.SeedSequence):
        return random_state
    if isinstance(random_state, np.random.Generator):
        return np.random.SeedSequence(int(random_state.integers(2**63)))
    if random_state is None or (isinstance(random_state, Integral) and random_state >= 0):
        return np.random.SeedSequence(random_state)
    raise ValueError(
        f"random_state must be None, a non-negative int, a SeedSequence or a "
        f"Generator, got {type(random_state).__name__}."
    )


def _inputs_and_pairs(mechanism, channel, pairs, epsilon, sensitive, domain, pair_seed):
    """The inputs to sample and the pairs of their positions to compare.

    ``pairs=None``: a few informative pairs of the domain (every pair up to 5
    categories), drawn with ``pair_seed``; ``"all"``: every pair; a list:
    the pairs given, each input sampled once.
    """
    if pairs is None or (isinstance(pairs, str) and pairs == "all"):
        if domain is None:
            raise ValueError(
                "Without a domain (categories_), pass pairs=[(x, x_prime), ...] "
                "naming the inputs to compare."
            )
        inputs = list(domain)
        E_all, sens_all, mode = _claims(mechanism, channel, epsilon, sensitive, inputs, domain)
        if pairs is None:
            off_diagonal = ~np.eye(len(inputs), dtype=bool)
            any_finite = bool(np.isfinite(E_all[off_diagonal]).any())
            idx_pairs = _default_pairs(
                domain,
                sens_all if mode == "ULDP" else None,
                lambda i, j: np.isfinite(E_all[i, j]) or np.isfinite(E_all[j, i]) or not any_finite,
                np.random.default_rng(pair_seed),
            )
        else:
            idx_pairs = [(i, j) for i in range(len(inputs)) for j in range(i + 1, len(inputs))]
        used = sorted({i for p in idx_pairs for i in p})
        remap = {u: t for t, u in enumerate(used)}
        inputs = [inputs[u] for u in used]
        idx_pairs = [(remap[i], remap[j]) for i, j in idx_pairs]
    else:
        inputs, keys, idx_pairs = [], {}, []
        for pair in pairs:
            if len(pair) != 2:
                raise ValueError(f"pairs holds (x, x_prime) tuples; got one of length {len(pair)}.")
            ij = []
            for value in pair:
                if _key(value) not in keys:
                    keys[_key(value)] = len(inputs)
                    inputs.append(value)
                ij.append(keys[_key(value)])
            if ij[0] == ij[1]:
                raise ValueError("A pair compares two different inputs; got an input twice.")
            idx_pairs.append(tuple(ij))
    if not idx_pairs:
        raise ValueError("No pair of inputs to test.")
    return inputs, idx_pairs


def _draw_reports(mechanism, inputs, n_samples, batch_size, sample_seed):
    """``n_samples`` reports of each input, in batches: (their kind, one array per input)."""
    sampler = _make_sampler(mechanism, sample_seed)
    kind, reports = None, []
    for value in inputs:
        parts, drawn = [], 0
        while drawn < n_samples:
            n = min(batch_size, n_samples - drawn)
            part_kind, part = _as_reports(sampler(value, n))
            if part.shape[0] != n:
                raise ValueError(f"The mechanism returned {part.shape[0]} reports for {n} inputs.")
            if kind is None:
                kind = part_kind
            elif part_kind != kind:
                raise ValueError("The mechanism returned reports of changing shapes.")
            parts.append(part)
            drawn += n
        reports.append(_stack(kind, parts))
    return kind, reports


def _event_kind(events, kind, channel, lik_cols, half):
    """Which events the tests use: "custom", "likelihood", "rows", "sketch rows",
    or the reports' own kind (single outputs, bits, sketch cells)."""
    if events == "bits" and kind != "bits":
        raise ValueError(
            "events='bits' needs bit-vector reports (0/1 arrays); these are "
            f"{'sketch rows [index, bits]' if kind == 'sketch' else 'one value per user'}"
            ": use events='auto' or 'outputs'."
        )
    if events == "likelihood" and lik_cols is None:
        raise ValueError(
            "events='likelihood' needs the mechanism's channel (channel_ with "
            "encode_reports and likelihood) and inputs from its categories; use "
            "events='auto' for a black box."
        )
    if callable(events):
        return "custom"
    if events == "likelihood":
        return "likelihood"
    if events == "outputs" and kind in ("bits", "sketch"):
        return "rows" if kind == "bits" else "sketch rows"
    if (
        events == "auto"
        and lik_cols is not None
        and (kind == "sketch" or (kind == "outputs" and getattr(channel, "n_outputs", 0) > half))
    ):
        # A report shows the input only jointly with a public index (the hash
        # of a sketch), or there are more outputs than reports: single outputs
        # have no power, the likelihood ratio pools them (Neyman-Pearson).
        return "likelihood"
    return kind


def _uldp_violations(mode, protected, channel, kind, reports, inputs, sens, half, E, alpha, notes):
    """Under a ULDP claim: which reports are protected, and the invertible
    outputs that sensitive inputs produced.

    Returns ``(classify, prot, violations)``: the classifier of protected
    outputs (None when they are only presumed from the samples), the mask of
    protected reports of each input, and the violations' table.
    """
    classify = None
    basis = None
    if protected is not None:
        classify, basis = (lambda k_, r: np.asarray(protected(r), dtype=bool)), "protected="
    elif mode == "ULDP":
        classify = _channel_classifier(channel)
        basis = "channel"
    prot = [None] * len(inputs)
    violations = []
    if mode == "ULDP" and classify is not None:
        try:
            for t in range(len(inputs)):
                prot[t] = classify(kind, reports[t])
        except Exception as exc:  # a report the spec cannot encode
            notes.append(
                f"the channel could not classify the reports ({exc}); invertible "
                "outputs are presumed from the samples"
            )
            classify, prot = None, [None] * len(inputs)
        for t in np.flatnonzero(sens) if classify is not None else []:
            bad = np.flatnonzero(~prot[t])
            if bad.size:
                example = reports[t][bad[0] : bad[0] + 1] if kind == "bits" else reports[t][bad[0]]
                violations.append(
                    {
                        "x": inputs[t],
                        "count": int(bad.size),
                        "example": _describe_report(kind, example),
                        "basis": "invertible per the " + basis,
                    }
                )
    if mode == "ULDP" and classify is None:
        violations += _presumed_violations(kind, reports, inputs, sens, half, E, alpha)
        notes.append(
            "no channel or protected=: tests with a non-sensitive x were skipped "
            "and invertible outputs were presumed from the samples"
        )
    return classify, prot, pd.DataFrame(violations, columns=["x", "count", "example", "basis"])


def _event_tests(
    kind_ev,
    events,
    channel,
    kind,
    reports,
    lik_cols,
    idx_pairs,
    mode,
    sens,
    classify,
    prot,
    half,
    alpha,
    max_events,
):
    """The tests of every ordered pair: events chosen on the first half of the
    reports, counted on the second (fixed events on all of them)."""
    rows = []
    if kind_ev == "custom":
        split = [_custom_events(events, R) for R in reports]
    elif kind_ev == "likelihood":
        try:
            split = [_log_likelihoods(channel, kind, R, lik_cols) for R in reports]
        except Exception as exc:  # a report the spec cannot encode
            raise ValueError(
                f"events='likelihood': the channel could not evaluate the reports "
                f"({exc}); use events='outputs' or a callable."
            ) from None
    else:
        split = [_split(kind_ev, R, half) for R in reports]
    for i, j in idx_pairs:
        for x, xp in ((i, j), (j, i)):
            restrict = mode == "ULDP" and not sens[x]
            if restrict and classify is None:
                continue
            masks = (prot[x], prot[xp]) if restrict else (None, None)
            if kind_ev == "custom":
                rows += _custom_tests(split[x], split[xp], masks, x, xp)
                continue
            if kind_ev == "likelihood":
                rows += _likelihood_tests(
                    split[x], split[xp], masks, half, alpha, max_events, x, xp
                )
                continue
            rows += _pair_tests(kind_ev, split[x], split[xp], masks, half, alpha, max_events, x, xp)
    return rows


_TEST_COLUMNS = [
    "x",
    "x_prime",
    "event",
    "count",
    "n",
    "rate",
    "count_prime",
    "n_prime",
    "rate_prime",
    "p_lower",
    "p_prime_upper",
    "lower_bound",
    "claimed",
    "exceeds",
]


def _tests_table(rows, inputs, E, n_B, alpha):
    """The table of tests: counts, Clopper-Pearson bounds (Bonferroni over all
    of them) and the lower bound on each ordered pair's loss."""
    m = max(len(rows), 1)
    a = alpha / (2 * m)
    if rows:
        c1 = np.array([r["count"] for r in rows])
        c2 = np.array([r["count_prime"] for r in rows])
        lb, lo, hi = _log_ratio_bound(c1, n_B, c2, n_B, a)
    tests = pd.DataFrame(
        {
            "x": [inputs[r["x"]] for r in rows],
            "x_prime": [inputs[r["xp"]] for r in rows],
            "event": [r["event"] for r in rows],
            "count": [r["count"] for r in rows],
            "n": n_B,
            "count_prime": [r["count_prime"] for r in rows],
            "n_prime": n_B,
            "p_lower": lo if rows else [],
            "p_prime_upper": hi if rows else [],
            "lower_bound": lb if rows else [],
            "claimed": [E[r["x"], r["xp"]] for r in rows],
        }
    )
    tests["rate"] = tests["count"] / n_B
    tests["rate_prime"] = tests["count_prime"] / n_B
    tests["exceeds"] = tests["lower_bound"] > tests["claimed"]
    return tests[_TEST_COLUMNS]


def _verdict(tests, violations, E, idx_pairs, notes):
    """(the largest lower bound, the largest finite claim tested, passed or
    None when there is no verdict, with a note saying why)."""
    finite = np.isfinite(tests["claimed"].to_numpy(dtype=float))
    scope = tests["lower_bound"][finite] if finite.any() else tests["lower_bound"]
    bound = max(0.0, float(scope.max())) if len(scope) else 0.0
    claims_tested = np.array([E[i, j] for i, j in idx_pairs] + [E[j, i] for i, j in idx_pairs])
    finite_claims = claims_tested[np.isfinite(claims_tested)]
    if finite_claims.size:
        claimed = float(finite_claims.max())
    elif np.isnan(claims_tested).all():
        claimed = float("nan")
    else:
        claimed = float("inf")
    if np.isnan(claimed):
        passed = None
        notes.append("no claimed epsilon: pass epsilon= to get a verdict")
    elif tests.empty and violations.empty:
        passed = None
        notes.append("no test could run: pass pairs= with a sensitive input")
    else:
        passed = bool(not tests["exceeds"].any() and violations.empty)
    return bound, claimed, passed
