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

A tested input may also be a *sequence* of values, one per round: users
whose value changes. The rounds are then grouped by the values all tested
sequences hold in them (the same groups for every input, so the summary
stays one function of the reports), each group is summarized as above, and
the summary is the tuple of the groups' summaries.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from numbers import Integral
from typing import Any, Literal

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ..mechanisms._memo import is_memoized
from ..utils._secrets import generate_user_secrets
from ..utils._typing import RandomStateLike
from ._audit import AuditResult, _column, _domain_of, _key, _row_values, audit_mechanism

__all__ = ["audit_rounds"]


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

    An input may be a sequence of ``n_rounds`` values (a list or tuple, one
    value per round): users whose value changes, e.g. ``pairs=[((0, 1, 0,
    1), (2, 3, 2, 3))]`` for two users whose values change at the same
    rounds (a value stands for the sequence that repeats it). The rounds are
    grouped by the values that all the tested sequences hold in them, and a
    user's summary is the tuple of its groups' summaries. The default claim
    is then ``epsilon_permanent_`` per distinct value of the longest-varying
    sequence (what :meth:`~sklearn_uldp.privacy.BudgetAccountant.spend_longitudinal`
    charges); sensitive values are not treated apart.

    Parameters
    ----------
    mechanism : fitted mechanism
        A memoized mechanism (:func:`~sklearn_uldp.longitudinal.is_memoized`),
        or any fitted mechanism (each round is then a new ``transform``).
    n_rounds : int
        Rounds per user.
    pairs : None, "all" or list of (x, x_prime), default=None
        Inputs to compare: None is the first two categories and, for a
        mechanism with sensitive values, a sensitive against a non-sensitive
        one; "all" every pair. See :func:`audit_mechanism`. An input may be
        a sequence of ``n_rounds`` values (see above).
    n_samples : int, default=20_000
        Simulated users per tested input.
    epsilon : float or None, default=None
        The claimed loss of all the rounds together; defaults to the
        mechanism's ``epsilon_permanent_`` (per distinct value of a tested
        sequence); a mechanism without one needs it.
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
    >>> from sklearn_uldp.longitudinal import LongitudinalGRR
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
    memoized = is_memoized(mechanism)
    channel = getattr(mechanism, "channel_", None)
    sequences = _sequences(pairs, int(n_rounds))
    if epsilon is None:
        epsilon = _default_claim(mechanism, memoized, sequences)
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
    names = getattr(mechanism, "feature_names_in_", None)
    name = names[0] if names is not None and len(names) == 1 else None
    kind_of = {}

    def reports_of(value_in_round, n, rng):
        """Each user's reports of ``n_rounds`` rounds (one secret per user)."""
        secret_seed = int(rng.integers(2**62))
        secrets = generate_user_secrets(n, random_state=secret_seed) if memoized else None
        rounds = []
        for t in range(int(n_rounds)):
            column = _column(value_in_round(t), n, name)
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
        return kind, rounds

    sensitive = None
    protected = None
    if sequences is None:

        def sample(values, rng):
            kind, rounds = reports_of(lambda t: values[0], len(values), rng)
            return _summarize(kind, rounds)

        mask = getattr(channel, "sensitive_mask", None)
        if mask is not None and domain is not None:
            mask = np.asarray(mask, dtype=bool)
            if not np.all(mask) and np.any(mask):
                sensitive = [c for c, s in zip(domain, mask, strict=True) if s]
                protected = _protected_summaries(channel, mask)
    else:
        # The inputs are labels of the sequences; the rounds' groups are the
        # same for every input, so the summary is one function of the reports.
        labels, pairs, groups = sequences

        def sample(values, rng):
            sequence = labels[int(values[0])]
            kind, rounds = reports_of(lambda t: sequence[t], len(values), rng)
            parts = [_summarize(kind, [rounds[t] for t in group]) for group in groups]
            if kind == "bits":
                return np.hstack(parts)
            # One tuple per user (its groups' summaries), shown as such in
            # the tests' events.
            return _row_values(np.column_stack(parts).astype(object))

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
    if sequences is not None:
        labels, _, groups = sequences
        note += f", in {len(groups)} groups of rounds holding the same values"
        for column in ("x", "x_prime"):
            if column in result.tests:
                result.tests[column] = [labels[int(v)] for v in result.tests[column]]
    result.notes.append(note)
    return result


def _is_sequence(value):
    """Whether a tested input is a sequence of per-round values (list, tuple, 1-D array)."""
    return isinstance(value, (list, tuple)) or (isinstance(value, np.ndarray) and value.ndim == 1)


def _sequences(pairs, n_rounds):
    """``(labels, pairs of labels, groups of rounds)`` when an input is a sequence, else None.

    ``labels[i]`` is the i-th distinct input as a tuple of ``n_rounds``
    values (a value repeated); the groups partition the rounds by the values
    every input holds in them.
    """
    if pairs is None or isinstance(pairs, str):
        return None
    pairs = list(pairs)
    if not any(_is_sequence(v) for pair in pairs if len(pair) == 2 for v in pair):
        return None
    labels, index, label_pairs = [], {}, []
    for pair in pairs:
        if len(pair) != 2:
            raise ValueError(f"pairs holds (x, x_prime) tuples; got {len(pair)} items.")
        ij = []
        for value in pair:
            sequence = tuple(value) if _is_sequence(value) else (value,) * n_rounds
            if len(sequence) != n_rounds:
                raise ValueError(
                    f"A tested sequence holds one value per round: {len(sequence)} values "
                    f"for n_rounds={n_rounds}."
                )
            key = tuple(_key(v) for v in sequence)
            if key not in index:
                index[key] = len(labels)
                labels.append(sequence)
            ij.append(index[key])
        label_pairs.append(tuple(ij))
    keys = [tuple(_key(v) for v in sequence) for sequence in labels]
    round_keys = [tuple(key[t] for key in keys) for t in range(n_rounds)]
    group_of = pd.factorize(pd.Series(round_keys, dtype=object))[0]
    groups = [np.flatnonzero(group_of == g) for g in range(int(group_of.max()) + 1)]
    return labels, label_pairs, groups


def _default_claim(mechanism, memoized, sequences):
    """The claimed loss of all the rounds: ``epsilon_permanent_`` per distinct value."""
    claim = getattr(mechanism, "epsilon_permanent_", None) if memoized else None
    if claim is None:
        raise ValueError(
            f"{type(mechanism).__name__} claims no loss for repeated reports "
            "(no epsilon_permanent_): pass epsilon= the loss to test, e.g. the budget "
            "you would allow all rounds together."
        )
    if sequences is None:
        return float(claim)
    distinct = max(len({_key(v) for v in sequence}) for sequence in sequences[0])
    if distinct > 1 and not mechanism.changes_add_up:
        raise ValueError(
            f"{type(mechanism).__name__} bounds the reports of one value only (its "
            "permanent draws are shared between values): it claims no loss for a "
            "value that changes. Pass epsilon= the loss to test."
        )
    return distinct * float(claim)


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
