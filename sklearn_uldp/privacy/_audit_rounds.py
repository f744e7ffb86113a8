"""Empirical audit of repeated collection: many rounds, one user, one value.

:func:`audit_mechanism` bounds the loss of *one* report. A mechanism used
round after round must also keep the loss of *all* of a user's reports of
one value bounded: a memoized mechanism claims ``epsilon_perm`` however many
rounds there are; a mechanism that draws fresh noise every round loses
privacy without bound (the reports of one value average the noise away).
:func:`audit_rounds` draws, for each tested input, many simulated users
(each with its own secret) who report the same value in ``n_rounds``
rounds, reduces each user's reports to one summary (the most frequent
report, or each bit's majority) and audits the summaries with
:func:`audit_mechanism`. The summary is a function of the reports
(post-processing), so a bound above the claim proves (at level alpha) that
the rounds together leak more than claimed.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from numbers import Integral
from typing import Any, Literal

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ..utils._secrets import generate_user_secrets
from ..utils._typing import RandomStateLike
from ._audit import AuditResult, _column, _domain_of, audit_mechanism

__all__ = ["audit_rounds"]


def _accepts_secrets(mechanism):
    try:
        return "user_secrets" in inspect.signature(mechanism.transform).parameters
    except (TypeError, ValueError):  # pragma: no cover - builtins
        return False


def _mode_rows(R):
    """The most frequent value of each row (the smallest among ties)."""
    S = np.sort(R, axis=1)
    n, t = S.shape
    new_run = np.ones((n, t), dtype=bool)
    new_run[:, 1:] = S[:, 1:] != S[:, :-1]
    run_id = np.cumsum(new_run, axis=1) - 1
    rows = np.repeat(np.arange(n), t)
    lengths = np.zeros((n, t), dtype=np.int64)
    np.add.at(lengths, (rows, run_id.ravel()), 1)
    best_run = np.argmax(lengths, axis=1)  # first (smallest value) among ties
    first = np.argmax(run_id == best_run[:, None], axis=1)
    return S[np.arange(n), first]


def _summarize(kind, rounds):
    """One summary per user of its reports in all rounds."""
    if kind == "bits":
        dense = [r.toarray() if sp.issparse(r) else np.asarray(r) for r in rounds]
        stack = np.stack(dense, axis=0).astype(np.float64)
        return (stack.mean(axis=0) >= 0.5).astype(np.uint8)
    values = np.column_stack([np.asarray(r).reshape(len(r), -1)[:, 0] for r in rounds])
    if values.dtype == object:
        codes, uniques = pd.factorize(pd.Series(values.ravel(), dtype=object))
        return np.asarray(uniques, dtype=object)[_mode_rows(codes.reshape(values.shape))]
    return _mode_rows(values)


def audit_rounds(
    mechanism: Any,
    n_rounds: int,
    *,
    pairs: Literal["all"] | Sequence[tuple[Any, Any]] | None = None,
    n_samples: int = 20_000,
    epsilon: float | None = None,
    alpha: float = 0.05,
    fresh_secrets: bool = False,
    max_events: int = 8,
    random_state: RandomStateLike = None,
) -> AuditResult:
    """Audit ``n_rounds`` reports of one value by the same user.

    For each input x of the tested pairs, ``n_samples`` simulated users
    (each with its own secret, see
    :func:`~sklearn_uldp.utils.generate_user_secrets`) hold x and report it
    in ``n_rounds`` rounds; each user's reports are summarized (the most
    frequent report; for bit vectors, each bit's majority) and the summaries
    go through :func:`audit_mechanism`, which bounds
    ``ln P[E | x] / P[E | x']`` from below for events E of the summary. A
    memoized mechanism keeps the bound at or below ``epsilon_perm`` however
    large ``n_rounds`` is; a mechanism that draws fresh noise every round
    (or forgets its users' secrets) fails once the rounds outnumber its
    noise.

    Parameters
    ----------
    mechanism : fitted mechanism
        A memoized mechanism (its ``transform`` takes ``user_secrets``), or
        any fitted mechanism (each round is then a new ``transform``).
    n_rounds : int
        Rounds per user.
    pairs : None, "all" or list of (x, x_prime), default=None
        Inputs to compare: None is the first two categories and, for a
        mechanism with sensitive values, a sensitive against a non-sensitive
        one; "all" every pair. See :func:`audit_mechanism`.
    n_samples : int, default=20_000
        Simulated users per tested input.
    epsilon : float or None, default=None
        The claimed loss of all the rounds together; defaults to the
        channel's ``epsilon_perm`` (a mechanism without one needs it).
    alpha : float in (0, 1), default=0.05
        Family-wise error level of the bounds.
    fresh_secrets : bool, default=False
        Draw new secrets at every round: a client that loses its secret.
        The audit must then fail (for testing audits and deployments).
    max_events : int, default=8
        Events tested per ordered pair.
    random_state : None, int, SeedSequence or Generator, default=None
        Draws the users' secrets and the audit's splits. The mechanism's
        instantaneous noise comes from its own ``random_state``.

    Returns
    -------
    result : AuditResult
        As :func:`audit_mechanism`'s, for the summaries; its notes say how
        many rounds were summarized.

    Examples
    --------
    >>> from sklearn_uldp import RandomizedResponse
    >>> from sklearn_uldp.mechanisms import LongitudinalGRR
    >>> from sklearn_uldp.privacy import audit_rounds
    >>> memo = LongitudinalGRR(1.0, 0.5, categories=[0, 1]).fit()
    >>> audit_rounds(memo, 30, n_samples=5_000, random_state=0).passed
    True
    >>> fresh = RandomizedResponse(0.5, categories=[0, 1]).fit()   # no memoization
    >>> result = audit_rounds(fresh, 30, epsilon=1.0, n_samples=5_000, random_state=0)
    >>> result.passed, result.epsilon_lower_bound > 1.0
    (False, True)
    """
    if isinstance(n_rounds, bool) or not isinstance(n_rounds, Integral) or n_rounds < 1:
        raise ValueError(f"n_rounds must be a positive integer, got {n_rounds!r}.")
    if not hasattr(mechanism, "transform"):
        raise TypeError(
            f"audit_rounds needs a fitted mechanism (with transform); got "
            f"{type(mechanism).__name__}. Audit a plain callable with audit_mechanism."
        )
    channel = getattr(mechanism, "channel_", None)
    if epsilon is None:
        # A fixed-domain mechanism's channel, or an open-domain one's protocol.
        epsilon = getattr(channel, "epsilon_perm", None)
        if epsilon is None:
            raise ValueError(
                f"{type(mechanism).__name__} claims no loss for repeated reports "
                "(no epsilon_perm): pass epsilon= the loss to test, e.g. the budget "
                "you would allow all rounds together."
            )
    domain = _domain_of(mechanism)
    if pairs is None or (isinstance(pairs, str) and pairs == "all"):
        if domain is None:
            raise ValueError("Pass pairs=[(x, x_prime), ...]: the mechanism has no domain.")
        pairs = _default_pairs(mechanism, channel, domain, every=pairs == "all")
    if isinstance(random_state, np.random.Generator):
        seed = np.random.SeedSequence(int(random_state.integers(2**63)))
    elif isinstance(random_state, np.random.SeedSequence):
        seed = random_state
    elif random_state is None or (isinstance(random_state, Integral) and random_state >= 0):
        seed = np.random.SeedSequence(random_state)
    else:
        raise ValueError(
            "random_state must be None, a non-negative int, a SeedSequence or a "
            f"Generator, got {random_state!r}."
        )
    memoized = _accepts_secrets(mechanism)
    names = getattr(mechanism, "feature_names_in_", None)
    name = names[0] if names is not None and len(names) == 1 else None
    kind_of = {}

    def sample(values, rng):
        n = len(values)
        column = _column(values[0], n, name)
        secret_seed = int(rng.integers(2**62))
        secrets = generate_user_secrets(n, random_state=secret_seed) if memoized else None
        rounds = []
        for t in range(int(n_rounds)):
            if memoized and fresh_secrets and t:
                secrets = generate_user_secrets(n, random_state=secret_seed + t)
            reports = (
                mechanism.transform(column, user_secrets=secrets)
                if memoized
                else mechanism.transform(column)
            )
            rounds.append(reports)
        first = rounds[0]
        width = first.shape[1] if np.ndim(first) == 2 else 1
        kind = "bits" if width > 1 else "outputs"
        kind_of["kind"] = kind
        return _summarize(kind, rounds)

    sensitive = None
    protected = None
    mask = getattr(channel, "sensitive_mask", None)
    if mask is not None and domain is not None and not np.all(mask) and np.any(mask):
        mask = np.asarray(mask, dtype=bool)
        chosen = [c for c, s in zip(domain, mask, strict=True) if s]
        sensitive = chosen
        protected = _protected_summaries(channel, mask)
    result = audit_mechanism(
        sample,
        pairs=pairs,
        n_samples=n_samples,
        epsilon=float(epsilon),
        alpha=alpha,
        sensitive=sensitive,
        protected=protected,
        max_events=max_events,
        batch_size=max(int(n_samples), 1),
        random_state=seed,
    )
    how = (
        "the majority of each bit" if kind_of.get("kind") == "bits" else "their most frequent value"
    )
    note = (
        f"each user's {int(n_rounds)} reports were summarized by {how}"
        + (" (new secrets every round)" if fresh_secrets and memoized else "")
        + ("" if memoized else " (the mechanism takes no secrets: fresh noise every round)")
    )
    result.notes.append(note)
    return result


def _default_pairs(mechanism, channel, domain, *, every):
    if every:
        return [(a, b) for i, a in enumerate(domain) for b in domain[i + 1 :]]
    pairs = [(domain[0], domain[1])]
    mask = getattr(channel, "sensitive_mask", None)
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)
        if mask.any() and not mask.all():
            s, n = int(np.argmax(mask)), int(np.argmax(~mask))
            pair = (domain[s], domain[n])
            if {s, n} != {0, 1}:
                pairs.append(pair)
    return pairs


def _protected_summaries(channel, mask) -> Callable[[Any], np.ndarray] | None:
    """Which summaries are protected: no non-sensitive value (or bit) in them."""
    categories = np.asarray(channel.categories, dtype=object)
    if channel.bit_vector_reports:

        def no_invertible_bit(S: Any) -> np.ndarray:
            return np.asarray(~np.asarray(S)[:, ~mask].astype(bool).any(axis=1))

        return no_invertible_bit
    if getattr(channel, "reports_are_categories", False):
        sensitive = pd.Index(categories[mask])

        def sensitive_value(S: Any) -> np.ndarray:
            return np.asarray(sensitive.get_indexer(np.asarray(S, dtype=object).ravel()) >= 0)

        return sensitive_value
    return None
