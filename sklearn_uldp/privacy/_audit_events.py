"""The audit's events and their tests: what ``audit_mechanism`` counts.

For each ordered pair of inputs (x, x') the audit chooses events E on the
first half of the reports (an output value, a pattern of the bits that
differ most, a sketch cell, a likelihood-ratio threshold) and counts them on
the second half; :func:`_log_ratio_bound` turns the counts into a
Clopper-Pearson lower bound on ``ln P[E | x] / P[E | x']``. Also here: the
invertible outputs presumed from the samples of a black box, and the small
helpers on reports (row keys, bit sums) these share with ``_audit.py``.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.stats import beta

#: Bits whose joint patterns are tested per ordered pair of inputs.
_PATTERN_BITS = 3
#: Thresholds tried per pair by the likelihood-ratio events.
_MAX_THRESHOLDS = 16
#: Rows per chunk when the channel classifies reports (bounds the memory of
#: its (rows, k) likelihood block).
_CHUNK = 8192


# --------------------------------------------------------------- statistics
def _cp_lower(count, n, a):
    """One-sided Clopper-Pearson lower bound at level a (vectorized)."""
    count = np.asarray(count, dtype=float)
    n = np.broadcast_to(np.asarray(n, dtype=float), count.shape)
    out = np.zeros_like(count)
    pos = count > 0
    out[pos] = beta.ppf(a, count[pos], n[pos] - count[pos] + 1)
    return out


def _cp_upper(count, n, a):
    """One-sided Clopper-Pearson upper bound at level a (vectorized)."""
    count = np.asarray(count, dtype=float)
    n = np.broadcast_to(np.asarray(n, dtype=float), count.shape)
    out = np.ones_like(count)
    below = count < n
    out[below] = beta.ppf(1 - a, count[below] + 1, n[below] - count[below])
    return out


def _log_ratio_bound(c1, n1, c2, n2, a):
    """Lower bound on ln(p1 / p2): CP lower of p1 over CP upper of p2."""
    lo = _cp_lower(c1, n1, a)
    hi = _cp_upper(c2, n2, a)
    with np.errstate(divide="ignore"):
        return np.log(lo) - np.log(hi), lo, hi


# ------------------------------------------------------------ inputs and reports
def _key(value):
    """A hashable identity of an input (numpy scalars compare as Python ones)."""
    if isinstance(value, np.generic):
        value = value.item()
    return repr(value)


def _row_values(arr):
    """One hashable value per row (a tuple-like bytes key)."""
    arr = np.ascontiguousarray(arr)
    if arr.dtype == object:
        return pd.Series(list(map(tuple, arr))).to_numpy()  # rare: object rows
    return arr.view(np.dtype((np.void, arr.dtype.itemsize * arr.shape[1])))[:, 0]


def _bit_sums(X):
    return np.asarray(X.sum(axis=0)).ravel().astype(np.int64)


def _columns_dense(X, cols):
    if sp.issparse(X):
        return X[:, cols].toarray().astype(np.int64)
    return X[:, cols].astype(np.int64)


def _row_keys(kind, X):
    """A 1-D array identifying each report (for outputs: the value itself)."""
    if kind == "outputs":
        return X
    if kind == "sketch":
        return _row_values(X)
    if sp.issparse(X):
        X = X.toarray()
    packed = np.packbits(np.asarray(X, dtype=np.uint8), axis=1)
    return _row_values(packed)


def _describe_report(kind, value):
    if kind == "bits":
        dense = value.toarray().ravel() if sp.issparse(value) else np.asarray(value).ravel()
        return "bits set " + str(np.flatnonzero(dense).tolist())
    if kind == "sketch":
        row = np.asarray(value).ravel()
        return f"index {int(row[0])}, bits set " + str(np.flatnonzero(row[1:]).tolist())
    return repr(value.item() if hasattr(value, "item") else value)


def _factorize(values):
    """(distinct values, code of each value): np.unique, or pandas for objects."""
    if values.dtype == object:
        codes, uniques = pd.factorize(pd.Series(values, dtype=object))
        return np.asarray(uniques, dtype=object), np.asarray(codes)
    uniques, codes = np.unique(values, return_inverse=True)
    return uniques, np.asarray(codes).ravel()


# ------------------------------------------------------------ events and tests
def _custom_events(events, R):
    """(n, m) boolean matrix of a user's events, and their labels."""
    matrix = np.asarray(events(R))
    if matrix.ndim == 1:
        matrix = matrix[:, None]
    if matrix.ndim != 2 or matrix.shape[0] != R.shape[0]:
        raise ValueError(
            f"events(reports) must return one boolean per report (shape (n,)) or "
            f"per report and event (shape (n, m)); got shape {matrix.shape}."
        )
    return matrix.astype(bool)


def _custom_tests(E1, E2, masks, x, xp):
    if masks[0] is not None:
        E1, E2 = E1 & masks[0][:, None], E2 & masks[1][:, None]
    c1, c2 = E1.sum(axis=0), E2.sum(axis=0)
    return [
        {"x": x, "xp": xp, "event": f"events[{e}]", "count": int(c1[e]), "count_prime": int(c2[e])}
        for e in range(E1.shape[1])
    ]


def _split(kind, R, half):
    """(first half, second half, bit sums of the first) of one input's reports,
    in the layout the event counts read fastest."""
    A, B = R[:half], R[half:]
    if kind == "bits":
        if sp.issparse(A):  # events read a few columns: CSC slices them fast
            A, B = sp.csc_array(A), sp.csc_array(B)
        return A, B, _bit_sums(A)
    if kind == "rows":
        return _row_keys("bits", A), _row_keys("bits", B), None
    if kind == "sketch rows":
        return _row_values(A), _row_values(B), None
    return A, B, None


def _pair_tests(kind, S1, S2, masks, half, alpha, max_events, x, xp):
    """Select events for x -> x' on the first half, count them on the second."""
    (A1, B1, sums1), (A2, B2, sums2) = S1, S2
    m1A = m1B = m2A = m2B = None
    if masks[0] is not None:
        m1A, m1B = masks[0][:half], masks[0][half:]
        m2A, m2B = masks[1][:half], masks[1][half:]
    n_A = half
    if kind == "sketch":
        return _sketch_tests(A1, B1, A2, B2, (m1A, m1B, m2A, m2B), alpha, max_events, x, xp)
    if kind == "bits":
        # The bits that differ most between x and x' carry the likelihood
        # ratio of unary encodings; their joint patterns reach the full ε
        # where single bits only reach part of it (e.g. OUE).
        diff = np.abs(sums1 - sums2)
        d = diff.size
        bits = np.argsort(-diff, kind="stable")[: min(_PATTERN_BITS, d)]
        nb = bits.size
        weights = 1 << np.arange(nb)

        def patterns(X, mask):
            codes = _columns_dense(X, bits) @ weights
            if mask is not None:
                codes = codes[mask]
            return np.bincount(codes, minlength=1 << nb)

        # candidate events as sets of pattern codes
        all_codes = np.arange(1 << nb)
        sets, labels = [], []
        for code in all_codes:
            sets.append(all_codes == code)
            vals = [int((code >> t) & 1) for t in range(nb)]
            labels.append(f"bits {[int(b) for b in bits]} == {tuple(vals)}")
        for t, b in enumerate(bits):
            for v in (1, 0):
                sets.append(((all_codes >> t) & 1) == v)
                labels.append(f"bit {int(b)} {'set' if v else 'unset'}")
        S = np.array(sets, dtype=np.int64)
        cA1, cA2 = S @ patterns(A1, m1A), S @ patterns(A2, m2A)
        score, _, _ = _log_ratio_bound(cA1, n_A, cA2, n_A, alpha)
        order = [e for e in np.argsort(-score, kind="stable")[:max_events] if cA1[e] > 0]
        cB1, cB2 = S @ patterns(B1, m1B), S @ patterns(B2, m2B)
        return [
            {"x": x, "xp": xp, "event": labels[e], "count": int(cB1[e]), "count_prime": int(cB2[e])}
            for e in order
        ]

    # one value per report (or whole bit vectors): events are single outputs
    if m1A is not None:
        A1, B1, A2, B2 = A1[m1A], B1[m1B], A2[m2A], B2[m2B]
    uniques, codes = _factorize(np.concatenate([A1, A2, B1, B2]))
    M = len(uniques)
    sizes = np.cumsum([0, A1.size, A2.size, B1.size, B2.size])
    cA1, cA2, cB1, cB2 = (
        np.bincount(codes[sizes[t] : sizes[t + 1]], minlength=M) for t in range(4)
    )
    cand = np.flatnonzero(cA1 > 0)
    if not cand.size:
        return []
    score, _, _ = _log_ratio_bound(cA1[cand], n_A, cA2[cand], n_A, alpha)
    chosen = cand[np.argsort(-score, kind="stable")[:max_events]]
    out = []
    for e in chosen:
        value = uniques[e]
        if kind == "rows":
            shown = _describe_report(
                "bits", np.unpackbits(np.frombuffer(value.tobytes(), dtype=np.uint8))
            )
        elif kind == "sketch rows":
            shown = _describe_report("sketch", np.frombuffer(value.tobytes(), dtype=np.int64))
        else:
            shown = _describe_report("outputs", value)
        label = "output == " + shown
        out.append(
            {"x": x, "xp": xp, "event": label, "count": int(cB1[e]), "count_prime": int(cB2[e])}
        )
    return out


def _sketch_counts(X, mask, n_index):
    """Counts of the events "index == j and bit b set/unset" (2 h m of them)."""
    if mask is not None:
        X = X[mask]
    j = X[:, 0]
    one_hot = sp.csr_array(
        (np.ones(j.size, dtype=np.int64), (j, np.arange(j.size))), shape=(n_index, j.size)
    )
    set_ = np.asarray(one_hot @ X[:, 1:], dtype=np.int64)
    total = np.bincount(j, minlength=n_index)[:, None]
    return np.concatenate([set_.ravel(), (total - set_).ravel()])


def _sketch_tests(A1, B1, A2, B2, masks, alpha, max_events, x, xp):
    """Sketch rows [index j, bits]: the input shows in bit b only jointly with
    j (the b-th bucket of the j-th hash), so the events are "index == j and
    bit b set" (or unset), and the joint "bit b1(j) set and bit b0(j) unset"
    of the most telling set and unset bits of each index (the two bits in
    which the vectors of x and x' differ), per index and pooled over all
    indices; chosen on the first half, counted on the second."""
    m1A, m1B, m2A, m2B = masks
    if m1A is not None:
        A1, B1, A2, B2 = A1[m1A], B1[m1B], A2[m2A], B2[m2B]
    n_index = int(max(X[:, 0].max(initial=0) for X in (A1, B1, A2, B2))) + 1
    n_bits = A1.shape[1] - 1
    n_A = max(A1.shape[0], 1)
    sA1, sA2 = _sketch_counts(A1, None, n_index), _sketch_counts(A2, None, n_index)
    with np.errstate(divide="ignore", invalid="ignore"):
        single, _, _ = _log_ratio_bound(sA1, n_A, sA2, n_A, alpha)
    single = np.where(sA1 > 0, single, -np.inf).reshape(2, n_index, n_bits)
    b1, b0 = single[0].argmax(axis=1), single[1].argmax(axis=1)

    def joint(X):
        j = X[:, 0]
        rows = np.arange(j.size)
        hit = (X[rows, 1 + b1[j]] == 1) & (X[rows, 1 + b0[j]] == 0) & (b1[j] != b0[j])
        per_index = np.bincount(j[hit], minlength=n_index)
        return np.concatenate([per_index, [per_index.sum()]])

    def counts(X):
        return np.concatenate([_sketch_counts(X, None, n_index), joint(X)])

    cA1, cA2 = np.concatenate([sA1, joint(A1)]), np.concatenate([sA2, joint(A2)])
    cand = np.flatnonzero(cA1 > 0)
    if not cand.size:
        return []
    score, _, _ = _log_ratio_bound(cA1[cand], n_A, cA2[cand], n_A, alpha)
    chosen = cand[np.argsort(-score, kind="stable")[:max_events]]
    cB1, cB2 = counts(B1), counts(B2)
    n_single = 2 * n_index * n_bits
    out = []
    for e in chosen:
        if e < n_single:
            unset, rest = divmod(int(e), n_index * n_bits)
            j, b = divmod(rest, n_bits)
            label = f"index == {j} and bit {b} {'unset' if unset else 'set'}"
        elif e < n_single + n_index:
            j = int(e) - n_single
            label = f"index == {j} and bit {int(b1[j])} set and bit {int(b0[j])} unset"
        else:
            label = "bit b1(index) set and bit b0(index) unset (pooled over indices)"
        out.append(
            {"x": x, "xp": xp, "event": label, "count": int(cB1[e]), "count_prime": int(cB2[e])}
        )
    return out


def _likelihood_columns(channel, inputs):
    """Positions of the inputs among the channel's categories (None: unusable)."""
    if channel is None or not all(
        hasattr(channel, name) for name in ("encode_reports", "likelihood", "categories")
    ):
        return None
    position = {_key(v): t for t, v in enumerate(np.asarray(channel.categories).tolist())}
    cols = [position.get(_key(v)) for v in inputs]
    return None if any(c is None for c in cols) else np.asarray(cols)


def _log_likelihoods(channel, kind, R, cols):
    """(n, len(cols)) log Q(y | x) of each report y for each tested input x
    (up to a factor of y alone, which cancels in the ratios)."""
    with np.errstate(divide="ignore"):
        if kind == "outputs":
            uniques, inverse = _factorize(R)
            codes = channel.encode_reports(np.asarray(uniques).reshape(-1, 1))
            return np.log(np.asarray(channel.likelihood(codes), dtype=float)[:, cols])[inverse]
        out = np.empty((R.shape[0], cols.size))
        for start in range(0, R.shape[0], _CHUNK):
            L = channel.likelihood(channel.encode_reports(R[start : start + _CHUNK]))
            out[start : start + _CHUNK] = np.log(np.asarray(L, dtype=float)[:, cols])
        return out


def _likelihood_tests(L1, L2, masks, half, alpha, max_events, x, xp):
    """Events "log Q(y|x)/Q(y|x') >= t": the Neyman-Pearson tests of x vs x',
    thresholds t chosen on the first half from the values x's reports take."""
    with np.errstate(invalid="ignore"):
        s1, s2 = L1[:, x] - L1[:, xp], L2[:, x] - L2[:, xp]
    # A report neither input can produce (nan) is in no event; ULDP tests
    # with a non-sensitive x keep the protected outputs only.
    s1, s2 = np.where(np.isnan(s1), -np.inf, s1), np.where(np.isnan(s2), -np.inf, s2)
    if masks[0] is not None:
        s1, s2 = np.where(masks[0], s1, -np.inf), np.where(masks[1], s2, -np.inf)
    A1, B1, A2, B2 = (np.sort(v) for v in (s1[:half], s1[half:], s2[:half], s2[half:]))
    cand = np.unique(A1[A1 > -np.inf])
    if not cand.size:
        return []
    if cand.size > _MAX_THRESHOLDS:
        cand = np.unique(np.quantile(cand, np.linspace(0, 1, _MAX_THRESHOLDS)))
    # Rounding: ratios equal in exact arithmetic may differ in the last bits.
    t = cand - 1e-9 * np.maximum(1.0, np.abs(np.where(np.isfinite(cand), cand, 0.0)))

    def count(v):
        return v.size - np.searchsorted(v, t, side="left")

    cA1, cA2 = count(A1), count(A2)
    score, _, _ = _log_ratio_bound(cA1, half, cA2, half, alpha)
    chosen = np.argsort(-score, kind="stable")[:max_events]
    cB1, cB2 = count(B1), count(B2)
    return [
        {
            "x": x,
            "xp": xp,
            "event": f"log Q(y|x)/Q(y|x') >= {cand[e]:.4g}",
            "count": int(cB1[e]),
            "count_prime": int(cB2[e]),
        }
        for e in chosen
    ]


def _presumed_violations(kind, reports, inputs, sens, half, E, alpha):
    """Black-box ULDP check: sensitive inputs hitting presumed-invertible outputs.

    Only the first half of the *non-sensitive* inputs' reports decides which
    outputs are presumed invertible, so every report of the sensitive inputs
    is an independent check.
    """
    finite = np.isfinite(E) & ~np.eye(len(inputs), dtype=bool)
    non_sensitive = np.flatnonzero(~sens)
    if not finite.any() or non_sensitive.size < 2:
        return []
    eps = float(E[finite].max())
    sensitive = np.flatnonzero(sens)
    keys = [_row_keys(kind, reports[t][:half]) for t in non_sensitive] + [
        _row_keys(kind, reports[t]) for t in sensitive
    ]
    uniques, codes = _factorize(np.concatenate(keys))
    M = len(uniques)
    sizes = np.cumsum([0] + [k.size for k in keys])
    counts = [np.bincount(codes[sizes[t] : sizes[t + 1]], minlength=M) for t in range(len(keys))]
    countsN = np.array(counts[: non_sensitive.size])
    # A protected output that one non-sensitive input produced c times is
    # produced by each other one at a rate at least e^-eps as large: none of
    # them showing it has probability below alpha / M once c passes this.
    threshold = math.exp(eps) * math.log(max(M, 2) / alpha)
    presumed = ((countsN > 0).sum(axis=0) == 1) & (countsN.max(axis=0) >= threshold)
    owner = non_sensitive[np.argmax(countsN, axis=0)]
    out = []
    for t, c in zip(sensitive, counts[non_sensitive.size :], strict=True):
        hit = np.flatnonzero(presumed & (c > 0))
        if hit.size:
            value = uniques[hit[0]]
            out.append(
                {
                    "x": inputs[t],
                    "count": int(c[hit].sum()),
                    "example": repr(value) if kind == "outputs" else "a bit vector",
                    "basis": f"presumed invertible (among the non-sensitive "
                    f"inputs only {inputs[owner[hit[0]]]!r} produced it)",
                }
            )
    return out
