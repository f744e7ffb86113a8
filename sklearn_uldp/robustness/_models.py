"""What fake users send: the crafted reports of the poisoning attacks, per family.

Cao, Jia & Gong (USENIX Security 2021) attack a frequency oracle with m fake
users whose reports are chosen by the attacker. Their *maximal gain attack*
(MGA) sends the report that maximizes the estimated frequencies of the
target items. The collector's estimate is linear in the reports,

    p_hat(x) = a(x) f(x) + b(x),  f(x) = (1/N) sum_i s_x(y_i),

(``Channel.coef_a``, ``observed_frequency``), so a report y adds
``a(x) s_x(y) / N`` to every estimate and the MGA report maximizes
``G(y) = sum_{t in T} a(t) s_t(y)``. This module finds it for each family
(one-symbol channels by their statistic's transpose; bit vectors in closed
form: every target's bit set), draws the fake reports, and gives the law of
the crafted reports, which :class:`~sklearn_uldp.robustness.RobustFrequencyEstimator`
uses as the fake users' channel row. The derivations are on the "Poisoning
and robust estimation" page (``docs/robustness.md``).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import gammaln

from ..mechanisms._block_design import UtilityOptimizedBlockDesignChannel
from ..mechanisms._channel import CategoricalChannel, ReportStatistics
from ..mechanisms._hadamard import (
    BlockHadamardChannel,
    HadamardResponseChannel,
    HighLowHadamardChannel,
    fwht,
)
from ..mechanisms._local_hashing import BinaryLocalHashingChannel, LocalHashingChannel
from ..mechanisms._rappor import UnaryEncodingChannel
from ..mechanisms._subset_selection import SubsetSelectionChannel
from ..mechanisms._utility_optimized_subset import UtilityOptimizedSubsetSelectionChannel
from ..mechanisms._utility_optimized_unary import UtilityOptimizedUnaryEncodingChannel

__all__ = ["ATTACKS", "fake_model", "family_of"]

#: The attacks :func:`~sklearn_uldp.robustness.poison` knows.
ATTACKS = ("mga", "random input", "random report")

#: Outputs of a one-symbol channel whose gains are read one unit statistic at
#: a time when the family has no faster transpose.
_MAX_SCANNED_OUTPUTS = 1 << 16


def family_of(channel):
    """ "one-symbol", "unary", "subset" or "design" (uBD/uSS); ValueError otherwise."""
    if isinstance(channel, UtilityOptimizedUnaryEncodingChannel):
        # its reports are s sensitive bits or one clear non-sensitive bit, a
        # layout the unary fake model (k bits, uRAP's) does not produce
        raise ValueError(
            "Poisoning and robust estimation do not support utility-optimized unary "
            "encoding (uUE) yet; uRAP (UtilityOptimizedRAPPOR) and uOUE "
            "(UtilityOptimizedOUE) are supported."
        )
    if isinstance(channel, UtilityOptimizedBlockDesignChannel):
        return "design"
    if isinstance(channel, UnaryEncodingChannel) and (
        type(channel).matrix is UnaryEncodingChannel.matrix
    ):
        return "unary"
    if isinstance(channel, SubsetSelectionChannel):
        return "subset"
    if isinstance(channel, CategoricalChannel):
        return "one-symbol"
    raise ValueError(
        f"Poisoning and robust estimation are defined for the frequency oracles "
        f"(k-RR, uRR, RAPPOR/OUE/uRAP, local hashing, subset selection, Hadamard "
        f"response, uBD, uSS); got {channel!r}."
    )


def _log_comb(n, r):
    return float(gammaln(n + 1.0) - gammaln(r + 1.0) - gammaln(n - r + 1.0))


# ------------------------------------------------------- one-symbol gains
def _hadamard_gain(channel, u):
    """G(y) = sum_x u(x) s_x(y) for the Hadamard family: the transpose of the
    statistic, one Walsh-Hadamard transform per block."""
    if isinstance(channel, HadamardResponseChannel):
        grid = np.zeros((channel.n_blocks, channel.b))
        grid[channel._block, channel._rows] = u
        return fwht(grid, axis=1).ravel()
    if isinstance(channel, HighLowHadamardChannel):
        S = channel.S
        head = np.zeros(S)
        head[channel._rank[channel._s_codes] + 1] = u[channel._s_codes]
        # statistic of a sensitive x: 2 [y in S_x] - [y in [S]] = H[row_x, y]
        return np.concatenate([fwht(head), u[channel._n_codes]])
    out = np.zeros(channel.n_outputs)
    for group in channel._groups:  # BlockHadamardChannel: blocks of equal size
        K = group["K"]
        grid = np.zeros((group["blocks"].size, K))
        grid[group["q"], group["r"]] = u[group["cats"]]
        out[group["out"].ravel()] = fwht(grid, axis=1).ravel()
    return out


def one_symbol_gains(channel, targets):
    """G(y) for every output y of a one-symbol channel (exact)."""
    u = np.zeros(channel.n_categories)
    u[targets] = channel.coef_a[targets]
    if isinstance(channel, (HadamardResponseChannel, HighLowHadamardChannel, BlockHadamardChannel)):
        return _hadamard_gain(channel, u)
    if type(channel) in (LocalHashingChannel, BinaryLocalHashingChannel):
        # s_x((a, v)) = [h_a(x) = v]: the number of targets hashed to v, times a
        return _hash_gain(channel, u)
    if getattr(channel, "reports_are_categories", False) and hasattr(channel, "c1"):
        # uRR / k-RR: s_x(y) = [y = x]
        return u.copy()
    n_out = int(channel.n_outputs)
    if n_out > _MAX_SCANNED_OUTPUTS:
        raise ValueError(
            f"{channel!r} has {n_out} outputs: its maximal-gain report is found "
            f"output by output up to {_MAX_SCANNED_OUTPUTS} outputs."
        )
    gains = np.empty(n_out)
    counts = np.zeros(n_out)
    for y in range(n_out):  # one unit statistic per output (small channels)
        counts[y] = 1.0
        f = channel.observed_frequency(ReportStatistics(channel, 1, counts))
        gains[y] = float(np.dot(u, f))
        counts[y] = 0.0
    return gains


def _hash_gain(channel, u):
    """G((a, v)) = sum_t u(t) [h_a(t) = v] for local hashing, seed by seed."""
    from ..mechanisms._local_hashing import linear_hash_table

    g, H = channel.hash_range, channel.n_seeds
    targets = np.flatnonzero(u)
    gains = np.zeros((H, g))
    table = linear_hash_table(g, channel.n_digits, channel.n_categories)  # (H, k)
    for t in targets:  # a few targets: one column of the table each
        np.add.at(gains, (np.arange(H), table[:, t]), u[t])
    return gains.ravel()


# ------------------------------------------------------------ the models
class FakeModel:
    """The law of the fake users' reports for one attack, family and target set.

    ``sample(m, rng)`` draws m reports in the channel's raw form (category
    labels or output codes for one-symbol channels, dense 0/1 rows for bit
    vectors). For the MGA, ``output_law()`` (one-symbol channels) and
    ``report_ratio(bits)`` (bit vectors: ``F(y) / C(y)`` with ``C`` the
    report factor of the honest likelihood rows) give the crafted reports'
    law; ``statistic_mean()`` is the mean of one crafted report's linear
    statistic.
    """

    def __init__(self, channel, targets, attack):
        self.channel = channel
        self.targets = np.asarray(targets, dtype=np.intp)
        self.attack = attack
        self.family = family_of(channel)
        S = np.asarray(channel.sensitive_mask, dtype=bool)
        self.sensitive = S
        self._setup()

    # -------------------------------------------------------------- setup
    def _setup(self):
        ch, T = self.channel, self.targets
        if self.family == "one-symbol":
            n_out = int(ch.n_outputs)
            if self.attack == "mga":
                gains = one_symbol_gains(ch, T)
                best = gains.max()
                winners = gains >= best - 1e-9 * abs(best)
                self._law = winners / winners.sum()
            elif self.attack == "random report":
                self._law = np.full(n_out, 1.0 / n_out)
            else:
                self._law = None
            return
        S = self.sensitive
        self.t_s = T[S[T]]
        self.t_n = T[~S[T]]
        if self.family == "unary":
            d1 = float(ch.d1)
            s = int(S.sum())
            # pad to the expected number of set sensitive bits of an honest
            # report, so that counting bits does not single the fakes out
            expected = float(ch.theta) + d1 * (s - 1)
            self.fill = int(max(0, min(s - self.t_s.size, round(expected) - self.t_s.size)))
        if self.family == "design":
            self._choose_design_report()

    def _choose_design_report(self):
        """uBD/uSS: the report type of largest gain (a protected subset of the
        sensitive targets, a clear non-sensitive target, or uSS's pair)."""
        ch = self.channel
        S = self.sensitive
        sizes = ch._sizes.astype(int)
        h = int(sizes.max())
        a = ch.coef_a
        u = np.zeros(ch.n_categories)
        u[self.targets] = a[self.targets]
        k = ch.n_categories
        candidates = []
        n_inside = min(h, self.t_s.size)
        if self.t_s.size or not self.t_n.size:
            row = np.zeros(k, dtype=np.uint8)
            row[self.t_s[:n_inside]] = 1
            fill = np.setdiff1d(np.flatnonzero(S), self.t_s[:n_inside])[: h - n_inside]
            row[fill] = 1
            candidates.append(("protected", row))
        if self.t_n.size:
            row = np.zeros(k, dtype=np.uint8)
            row[self.t_n[0]] = 1
            candidates.append(("clear", row))
            if isinstance(ch, UtilityOptimizedSubsetSelectionChannel) and ch._has_pairs:
                pair = row.copy()
                pair[self.t_s[:n_inside]] = 1
                fill = np.setdiff1d(np.flatnonzero(S), self.t_s[:n_inside])[: h - n_inside]
                pair[fill] = 1
                candidates.append(("pair", pair))
        gains = []
        for _, row in candidates:
            # the fill's contribution is averaged out: score targets only
            stats = ch.statistics(ch.encode_reports(row[None, :]))
            gains.append(float(np.dot(u, ch.observed_frequency(stats))))
        self.report_type = candidates[int(np.argmax(gains))][0]
        self.size = h
        self.inside = n_inside

    # ----------------------------------------------------------- sampling
    def sample(self, m, rng):
        ch, T = self.channel, self.targets
        if self.attack == "random input":
            codes = T[rng.integers(0, T.size, size=m)]
            return self._raw(ch.sample(codes, rng))
        if self.family == "one-symbol":
            codes = rng.choice(self._law.size, size=m, p=self._law)
            return self._raw(codes)
        if self.attack == "random report":
            return self._random_bits(m, rng)
        return getattr(self, f"_mga_{self.family}")(m, rng)

    def _raw(self, outputs):
        ch = self.channel
        if self.family != "one-symbol":
            if hasattr(outputs, "toarray"):
                outputs = outputs.toarray()
            return np.asarray(outputs, dtype=np.uint8)
        reports = ch.decode(np.asarray(outputs))
        if not ch.reports_are_categories:
            reports = np.asarray(reports, dtype=np.int64)
        return np.asarray(reports).reshape(-1, 1)

    def _fill(self, out, pool, counts, rng):
        """Set ``counts[i]`` uniform bits of ``pool`` (not already set) in row i."""
        if pool.size == 0:
            return
        keys = rng.random((out.shape[0], pool.size))
        keys[out[:, pool] == 1] = 2.0  # already set: never chosen again
        order = np.argsort(keys, axis=1)
        ranks = np.empty_like(order)
        np.put_along_axis(ranks, order, np.arange(pool.size)[None, :], axis=1)
        chosen = ranks < np.asarray(counts)[:, None]
        out[:, pool] |= chosen.astype(np.uint8)

    def _mga_unary(self, m, rng):
        ch = self.channel
        out = np.zeros((m, ch.n_categories), dtype=np.uint8)
        out[:, self.t_s] = 1
        if self.t_n.size:  # one clear non-sensitive target: an invertible report
            out[np.arange(m), self.t_n[rng.integers(0, self.t_n.size, size=m)]] = 1
        pool = np.setdiff1d(np.flatnonzero(self.sensitive), self.t_s)
        self._fill(out, pool, np.full(m, self.fill), rng)
        return out

    def _mga_subset(self, m, rng):
        ch = self.channel
        d, k = ch.subset_size, ch.n_categories
        out = np.zeros((m, k), dtype=np.uint8)
        T = self.targets
        if T.size <= d:
            out[:, T] = 1
        else:  # d of the targets, uniformly
            self._fill(out, T, np.full(m, d), rng)
        others = np.setdiff1d(np.arange(k), T)
        self._fill(out, others, d - out.sum(axis=1), rng)
        return out

    def _mga_design(self, m, rng):
        ch = self.channel
        k = ch.n_categories
        out = np.zeros((m, k), dtype=np.uint8)
        if self.report_type in ("clear", "pair"):
            out[np.arange(m), self.t_n[rng.integers(0, self.t_n.size, size=m)]] = 1
        if self.report_type in ("protected", "pair"):
            if self.t_s.size <= self.size:
                out[:, self.t_s] = 1
            else:
                self._fill(out, self.t_s, np.full(m, self.size), rng)
            pool = np.setdiff1d(np.flatnonzero(self.sensitive), self.t_s)
            self._fill(out, pool, self.size - out[:, self.sensitive].sum(axis=1), rng)
        return out

    def _random_bits(self, m, rng):
        """A uniform draw from the channel's output space."""
        ch = self.channel
        k = ch.n_categories
        S = self.sensitive
        s_idx, n_idx = np.flatnonzero(S), np.flatnonzero(~S)
        out = np.zeros((m, k), dtype=np.uint8)
        if self.family == "unary":
            # 2^s protected outputs, t 2^s invertible ones (one N bit)
            out[:, s_idx] = rng.integers(0, 2, size=(m, s_idx.size), dtype=np.uint8)
            if n_idx.size:
                pick = rng.integers(0, n_idx.size + 1, size=m)
                rows = np.flatnonzero(pick < n_idx.size)
                out[rows, n_idx[pick[rows]]] = 1
            return out
        if self.family == "subset":
            self._fill(out, np.arange(k), np.full(m, ch.subset_size), rng)
            return out
        # uBD/uSS: the protected subsets of every size, the clear values and
        # (uSS) the pairs, in proportion to their numbers
        sizes = ch._sizes.astype(int)
        s, t = s_idx.size, n_idx.size
        log_counts = [_log_comb(s, h) for h in sizes]
        counts = np.exp(np.array(log_counts) - max(log_counts))
        n_sub = counts.sum()
        scale = math.exp(max(log_counts))
        weights = list(counts) + [t / scale]
        pairs = isinstance(ch, UtilityOptimizedSubsetSelectionChannel) and ch._has_pairs
        if pairs:
            weights.append(t * n_sub)
        weights = np.asarray(weights) / np.sum(weights)
        kind = rng.choice(weights.size, size=m, p=weights)
        for j, h in enumerate(sizes):
            rows = np.flatnonzero(kind == j)
            self._fill_rows(out, rows, s_idx, h, rng)
        clear = np.flatnonzero(kind == sizes.size)
        out[clear, n_idx[rng.integers(0, t, size=clear.size)]] = 1 if t else 0
        if pairs:
            rows = np.flatnonzero(kind == sizes.size + 1)
            out[rows, n_idx[rng.integers(0, t, size=rows.size)]] = 1
            self._fill_rows(out, rows, s_idx, int(sizes[0]), rng)
        return out

    def _fill_rows(self, out, rows, pool, h, rng):
        if rows.size:
            block = out[rows]
            self._fill(block, pool, np.full(rows.size, h), rng)
            out[rows] = block

    # ---------------------------------------------------- the MGA's law
    def output_law(self):
        """The crafted reports' law over the outputs (one-symbol channels)."""
        return self._law

    def statistic_mean(self):
        """E[s(y)] over the MGA's crafted reports: the fake users' linear statistic."""
        if self.attack != "mga":
            raise ValueError("The fake users' statistic is modelled for the MGA only.")
        ch = self.channel
        if self.family == "one-symbol":
            return ch.observed_frequency(ReportStatistics(ch, 1, self._law))
        k = ch.n_categories
        S = self.sensitive
        mean = np.zeros(k)  # the mean of each bit over the crafted reports
        if self.family == "unary":
            mean[self.t_s] = 1.0
            pool = np.setdiff1d(np.flatnonzero(S), self.t_s)
            if pool.size:
                mean[pool] = self.fill / pool.size
            if self.t_n.size:
                mean[self.t_n] = 1.0 / self.t_n.size
        elif self.family == "subset":
            d, T = ch.subset_size, self.targets
            inside = min(T.size, d)
            mean[T] = inside / T.size
            others = np.setdiff1d(np.arange(k), T)
            mean[others] = (d - inside) / others.size
        else:
            if getattr(ch, "alpha", None) is not None:
                raise ValueError(
                    "The projection decoder of uBD (alpha set) is not linear in the "
                    "bit counts; estimate robustly with alpha=None."
                )
            if self.report_type in ("clear", "pair"):
                mean[self.t_n] = 1.0 / self.t_n.size
            if self.report_type in ("protected", "pair"):
                inside = min(self.t_s.size, self.size)
                if self.t_s.size:
                    mean[self.t_s] = inside / self.t_s.size
                pool = np.setdiff1d(np.flatnonzero(S), self.t_s)
                if pool.size:
                    mean[pool] = (self.size - inside) / pool.size
        # the statistics are linear in the bit counts: those of the mean report
        return ch.observed_frequency(ReportStatistics(ch, 1, mean))


def fake_model(channel, targets, attack="mga"):
    """The :class:`FakeModel` of ``attack`` against ``targets`` (category codes)."""
    if attack not in ATTACKS:
        raise ValueError(f"attack must be one of {list(ATTACKS)}, got {attack!r}.")
    return FakeModel(channel, targets, attack)
