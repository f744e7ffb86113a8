"""The guarantee of marginal reports, checked on their exact channel over rows.

A report is ``(l, y)``: the marginal l, drawn independently of the row x,
and ``y`` from marginal l's channel ``Q_l`` at the row's cell ``x_A``. So
``Q((l, y) | x) = Q_l(y | x_A) / L``. What this gives, row against row:

1. **Protected outputs are epsilon-LDP between any two rows**: for y
   protected by ``Q_l`` and any rows x, x', ``Q_l(y | x_A) <= e^eps
   Q_l(y | x'_A)`` (ULDP's second condition for ``Q_l``, or LDP).
2. **An unprotected output reveals one non-sensitive cell, and nothing
   else**: ``Q_l`` gives it from one cell u of marginal l only, u is not
   sensitive (ULDP's first condition), so the rows that can produce it are
   exactly those whose values on the marginal's columns are u.
3. **A row's sensitive values are hidden at epsilon** (the row-level form of
   ULDP's guarantee ``Q(y|x) <= e^eps Q(y|x')`` for x sensitive): for rows x,
   x' that differ only in columns where x holds a sensitive value, every
   output y satisfies ``Q(y | x) <= e^eps Q(y | x')``. If the marginal holds
   none of those columns, ``x_A = x'_A`` and the ratio is 1; otherwise
   ``x_A`` has a sensitive part, so it is a sensitive cell of ``Q_l``, which
   produces only protected outputs, and (1) applies.

:func:`check_marginal_uldp` verifies the three on the exact matrix
(:meth:`MarginalChannel.realized_matrix`, small domains), besides each
marginal's channel against its own definition (LDP, or ULDP over its
cells).
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from ..privacy import PrivacyCheck
from ..privacy._checks import _within
from ._channel import MarginalChannel
from ._one_report import _check_each_set, _check_protected_and_unprotected

__all__ = ["check_marginal_uldp"]


def _as_marginal(obj):
    channel = getattr(obj, "channel_", obj)
    if not isinstance(channel, MarginalChannel):
        raise TypeError(
            "check_marginal_uldp checks a fitted MarginalPrivatizer or its MarginalChannel; "
            f"got {type(obj).__name__}."
        )
    return channel


def check_marginal_uldp(mechanism: Any) -> PrivacyCheck:
    """Check the row-level guarantee of marginal reports on their exact channel.

    Checks, on :meth:`MarginalChannel.realized_matrix` (every row of the
    product domain against every output): (1) every protected output is
    epsilon-LDP between any two rows; (2) every unprotected output is
    produced by the rows of exactly one non-sensitive cell of its marginal;
    (3) rows that differ only in columns where the first holds a sensitive
    value are epsilon-indistinguishable on every output. And each
    marginal's channel against its definition (:func:`check_uldp` over its
    cells, :func:`check_ldp` for plain LDP). For plain LDP reports, (1) is
    :func:`check_ldp` on the composite matrix.

    Parameters
    ----------
    mechanism : MarginalPrivatizer or MarginalChannel
        Fitted; the product of the domains times the outputs must fit the
        exact matrix (small domains).

    Returns
    -------
    check : PrivacyCheck
        ``definition`` is ``"marginal ULDP"`` (``"LDP"`` for plain LDP
        reports); ``worst_log_ratio`` the largest log-ratio met in (1) and
        (3); ``reasons`` the violations.

    Examples
    --------
    >>> from sklearn_uldp.marginals import MarginalPrivatizer, check_marginal_uldp
    >>> priv = MarginalPrivatizer(
    ...     1.0, categories={"a": [0, 1, 2], "b": ["x", "y"], "c": [0, 1]},
    ...     sensitive={"a": [2], "b": ["y"], "c": [1]}).fit()
    >>> check = check_marginal_uldp(priv)
    >>> check.definition, check.satisfied, round(check.worst_log_ratio, 6)
    ('marginal ULDP', True, 1.0)
    """
    channel = _as_marginal(mechanism)
    eps, reasons, Q, plain = _check_each_set(channel, channel.sensitive is None, "marginal")
    if plain is not None:
        return plain
    protected = channel.protected_outputs()
    rows = channel._rows()
    worst, where = _check_protected_and_unprotected(
        channel, Q, protected, eps, reasons, lambda j: channel.cell_codes(j, rows), "marginal"
    )
    # (3) rows differing only where the first is sensitive.
    d = len(channel.sizes)
    sens_values = [np.asarray(m, dtype=bool) for m in channel.sensitive]
    index = {tuple(r): i for i, r in enumerate(rows.tolist())}
    with np.errstate(divide="ignore"):
        logQ = np.log(Q)
    for i, row in enumerate(rows.tolist()):
        hidden = [c for c in range(d) if sens_values[c][row[c]]]
        for size in range(1, len(hidden) + 1):
            for cols in itertools.combinations(hidden, size):
                for values in itertools.product(*[range(channel.sizes[c]) for c in cols]):
                    if any(values[t] == row[c] for t, c in enumerate(cols)):
                        continue  # differ in every listed column
                    other = list(row)
                    for t, c in enumerate(cols):
                        other[c] = values[t]
                    k = index[tuple(other)]
                    with np.errstate(invalid="ignore"):
                        diff = np.where(Q[i] > 0, logQ[i] - logQ[k], -np.inf)
                    out = int(np.argmax(diff))
                    if diff[out] > worst:
                        worst, where = float(diff[out]), (out, i, k)
                    if not _within(float(diff[out]), eps):
                        reasons.append(
                            f"rows {i} and {k} differ only in sensitive values of row {i}, "
                            f"but output {out} has log-ratio {float(diff[out]):.4g} > {eps:.4g}"
                        )
    return PrivacyCheck(
        "marginal ULDP", eps, not reasons, float(worst), where, ~protected, reasons[:20]
    )
