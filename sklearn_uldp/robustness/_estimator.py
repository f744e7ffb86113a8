"""RobustFrequencyEstimator: detect fake users' targets and remove their reports' effect."""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.special import gammaln
from scipy.stats import chi2, norm
from sklearn.utils._param_validation import Interval

from ..estimators._base import (
    DistributionEstimator,
    _packed_if_frame,
    _pooled_blocks,
    _report_width,
)
from ..estimators._em import maximize_likelihood
from ..estimators._projection import project_to_simplex
from ..mechanisms._reports import PackedReports
from ._models import fake_model, family_of, one_symbol_gains
from ._poison import target_codes

__all__ = ["RobustFrequencyEstimator"]


def _as_csr(codes, k):
    """Encoded bit-vector reports as a CSR 0/1 matrix."""
    if isinstance(codes, PackedReports):
        out = sp.csr_array(codes.tocsr())
    elif sp.issparse(codes):
        out = sp.csr_array(codes)
    else:
        out = sp.csr_array(np.asarray(codes, dtype=np.uint8).reshape(-1, k))
    # counts and products of uint8 bits would wrap at 256: count in int32
    return out.astype(np.int32)


class _OneSymbolEngine:
    """Mixture likelihood of a histogram of one-symbol reports."""

    family = "one-symbol"

    def __init__(self, channel, counts):
        self.channel = channel
        self.h = np.asarray(counts, dtype=float)
        self.n = float(self.h.sum())
        self.k = channel.n_categories

    def fake_row(self, targets):
        return fake_model(self.channel, targets, "mga").output_law()

    def support(self, candidates, f=None):
        """(rows, weights, expected pairs): which outputs support each
        candidate (s_x(y) > 0), one row an output weighted by its count, and
        the probability that an honest report supports both of a pair under
        the honest fit ``f`` (the channel's own law of outputs)."""
        cols = [one_symbol_gains(self.channel, np.asarray([c])) > 0 for c in candidates]
        support = np.column_stack(cols).astype(float)  # (outputs, M)
        seen = self.h > 0
        expected = None
        if f is not None:
            m = self.channel.forward(f)
            expected = support.T @ (support * m[:, None])
        return sp.csr_array(support[seen]), self.h[seen], expected

    def gradient(self, fakes):
        """EM gradient over (genuine weights, fake components' weights).

        ``fakes`` is None or a (J, n_outputs) array of the components' laws;
        returns ``w -> (g, loglik)`` over the k + J weights.
        """
        ch, h, n = self.channel, self.h, self.n
        seen = h > 0
        k = self.k

        def grad(w):
            m = ch.forward(w[:k])
            if fakes is not None:
                m = m + w[k:] @ fakes
            m = np.maximum(m, 1e-300)
            ratio = np.where(seen, h / m, 0.0) / n
            g = ch.adjoint(ratio)
            if fakes is not None:
                g = np.concatenate([g, fakes @ ratio])
            return g, float(np.sum(h[seen] * np.log(m[seen])))

        return grad


class _BitEngine:
    """Mixture likelihood of bit-vector reports, one likelihood row per report.

    ``L[i, x]`` is Q(y_i | x) / C(y_i) (the channel's likelihood rows) and
    ``scale[i]`` the log of C(y_i), the factor they leave out; the fake
    users' row of a target set is F(y_i) / C(y_i).
    """

    def __init__(self, channel, Y):
        self.channel = channel
        self.family = family_of(channel)
        self.Y = Y  # CSR (n, k)
        self.n = Y.shape[0]
        self.k = channel.n_categories
        S = np.asarray(channel.sensitive_mask, dtype=bool)
        self.S = S
        self.n_bits = np.asarray(Y[:, ~S].sum(axis=1)).ravel() if (~S).any() else None
        self.s_count = np.asarray(Y[:, S].sum(axis=1)).ravel()
        self.log_C = self._log_scale()
        # The likelihood rows have the structure of the channel's likelihood():
        # a protected report's row is base + jump * (its sensitive bits), an
        # invertible one's is its non-sensitive bit; so L p is two sparse
        # products (docs/robustness.md), never an n-by-k matrix.
        if self.family == "subset":
            base = np.full(self.k, math.exp(-channel.epsilon))
            jump = 1.0 - base[0]
        else:
            base = np.asarray(channel._w, dtype=float)
            jump = float(channel._r) - base
            jump = np.where(S, jump, 0.0)
        self.base = np.where(S, base, base) if self.family != "subset" else base
        self.jump = jump if np.ndim(jump) else np.full(self.k, jump)
        self.jump = np.where(S, self.jump, 0.0)
        protected = self.n_bits == 0 if self.n_bits is not None else np.ones(self.n, bool)
        self.protected = protected.astype(float)
        self.s_idx, self.n_idx = np.flatnonzero(S), np.flatnonzero(~S)
        # the columns and their transposes, built once (products in float)
        self.Y_S = sp.csr_array(Y[:, self.s_idx], dtype=float)
        self.Y_S_T = sp.csr_array(self.Y_S.T)
        self.Y_N = sp.csr_array(Y[:, self.n_idx], dtype=float) if self.n_idx.size else None
        self.Y_N_T = sp.csr_array(self.Y_N.T) if self.n_idx.size else None

    def rows_times(self, p):
        """L p: the likelihood rows against a vector over the values."""
        out = self.protected * (self.base @ p + self.Y_S @ (self.jump * p)[self.s_idx])
        if self.Y_N is not None:
            out = out + (1.0 - self.protected) * (self.Y_N @ p[self.n_idx])
        return out

    def rows_transposed(self, v):
        """L^T v."""
        vp = self.protected * v
        out = self.base * vp.sum()
        out[self.s_idx] += self.jump[self.s_idx] * (self.Y_S_T @ vp)
        if self.Y_N is not None:
            out[self.n_idx] += self.Y_N_T @ ((1.0 - self.protected) * v)
        return out

    def _log_scale(self):
        ch, fam = self.channel, self.family
        if fam == "unary":
            d1, d2 = float(ch.d1), 1.0 - float(ch._one_minus_d2)
            s = int(self.S.sum())
            bg = self.s_count * math.log(d1) + (s - self.s_count) * math.log1p(-d1)
            if self.n_bits is not None:
                bg = bg + np.where(self.n_bits > 0, math.log1p(-d2), 0.0)
            return bg
        if fam == "subset":
            return np.full(self.n, ch.epsilon - ch._log_omega())
        # uBD / uSS: a protected report of size h: w_h c0_h; a clear one:
        # the probability of that clear report
        sizes = ch._sizes
        log_c = np.full(self.n, -np.inf)
        protected = self.n_bits == 0 if self.n_bits is not None else np.ones(self.n, bool)
        pos = np.searchsorted(sizes, self.s_count)
        valid = protected & (pos < sizes.size)
        valid[valid] &= sizes[pos[valid]] == self.s_count[valid]
        log_c[valid] = ch._log_c0_h[pos[valid]]
        clear = ~protected
        if clear.any():
            own = float(ch._keep_n)
            pair = (
                float(getattr(ch, "_pair_given_own", 0.0))
                if getattr(ch, "_has_pairs", False)
                else 0.0
            )
            with_subset = clear & (self.s_count > 0)
            log_c[clear & ~with_subset] = math.log(own * (1.0 - pair))
            if with_subset.any():
                h = int(sizes[0])
                log_c[with_subset] = math.log(own * pair) - _log_comb(self.S.sum(), h)
        return log_c

    def fake_row(self, targets):
        """F(y_i) / C(y_i) of the MGA's crafted reports (docs/robustness.md)."""
        ch, fam = self.channel, self.family
        model = fake_model(ch, targets, "mga")
        T = model.targets
        Yt = self.Y[:, T]
        hits = np.asarray(Yt.sum(axis=1)).ravel()
        if fam == "unary":
            d1, d2 = float(ch.d1), 1.0 - float(ch._one_minus_d2)
            t_s, t_n = model.t_s, model.t_n
            all_s = np.asarray(self.Y[:, t_s].sum(axis=1)).ravel() == t_s.size
            # the other sensitive bits as in an honest report (background)
            row = np.where(all_s, math.exp(-t_s.size * math.log(d1)), 0.0)
            if t_n.size:
                in_tn = np.asarray(self.Y[:, t_n].sum(axis=1)).ravel() == 1
                return row * np.where(in_tn, 1.0 / (t_n.size * (1.0 - d2)), 0.0)
            if self.n_bits is not None:
                row = row * (self.n_bits == 0)
            return row
        if fam == "subset":
            d, k = ch.subset_size, ch.n_categories
            r = T.size
            if r <= d:
                log_f = -_log_comb(k - r, d - r)
                ok = hits == r
            else:
                log_f = -_log_comb(r, d)
                ok = hits == d
            return np.where(ok, np.exp(log_f - (ch.epsilon - ch._log_omega())), 0.0)
        # uBD / uSS: the chosen report type with its uniform fill
        s = int(self.S.sum())
        h, inside = model.size, model.inside
        t_s_hits = np.asarray(self.Y[:, model.t_s].sum(axis=1)).ravel() if model.t_s.size else 0
        log_fill = (
            -_log_comb(s - inside, h - inside)
            if model.t_s.size <= h
            else -_log_comb(model.t_s.size, h)
        )
        protected = self.n_bits == 0 if self.n_bits is not None else np.ones(self.n, bool)
        if model.report_type == "protected":
            ok = protected & (self.s_count == h) & (t_s_hits == inside)
            return np.where(ok, np.exp(log_fill - self.log_C), 0.0)
        in_tn = (
            np.asarray(self.Y[:, model.t_n].sum(axis=1)).ravel() == 1
            if model.t_n.size
            else np.zeros(self.n, bool)
        )
        if model.report_type == "clear":
            ok = in_tn & (self.s_count == 0)
            return np.where(ok, np.exp(-math.log(model.t_n.size) - self.log_C), 0.0)
        ok = in_tn & (self.s_count == h) & (t_s_hits == inside)
        return np.where(ok, np.exp(log_fill - math.log(model.t_n.size) - self.log_C), 0.0)

    def gradient(self, fakes):
        """EM gradient over (genuine weights, fake components' weights).

        ``fakes`` is None or a (J, n) array of the components' rows F / C.
        """
        n, k = self.n, self.k
        offset = float(np.sum(np.where(np.isfinite(self.log_C), self.log_C, 0.0)))

        def grad(w):
            m = self.rows_times(w[:k])
            if fakes is not None:
                m = m + w[k:] @ fakes
            m = np.maximum(m, 1e-300)
            inv = 1.0 / m / n
            g = self.rows_transposed(inv)
            if fakes is not None:
                g = np.concatenate([g, fakes @ inv])
            return g, float(np.sum(np.log(m)) + offset)

        return grad

    def support(self, candidates, f=None):
        """(rows, weights, None): which reports set each candidate's bit;
        honest bits of two values are independent or negatively dependent
        given the report, so independence is the baseline."""
        return self.Y[:, candidates], np.ones(self.n), None


def _log_comb(n, r):
    return float(gammaln(n + 1.0) - gammaln(r + 1.0) - gammaln(n - r + 1.0))


def co_occurrence_targets(engine, candidates, alpha, f=None):
    """Cao et al.'s frequent-itemset analysis on pairs of candidates.

    Every crafted report supports every target (its bit is set; its hash or
    Hadamard cell supports it), so the pairs of targets are supported
    together by about m more reports than the honest reports explain
    (independence for bit vectors, whose bits are independent or negatively
    dependent given a value; the honest fit's law of outputs otherwise). A pair is
    anomalous when its standardized excess passes the Bonferroni level over
    the pairs; the result is the largest set of candidates, grown greedily
    from the most anomalous pair, whose every pair is anomalous.
    """
    rows, weights, pairs = engine.support(candidates, f)
    rows = sp.csr_array(rows, dtype=float)
    n = float(weights.sum())
    c = np.asarray(rows.T @ weights, dtype=float).ravel()
    # dia_array, not diags_array: the oldest supported scipy (1.10) lacks it
    size = weights.size
    weighted = sp.csr_array(sp.dia_array((weights, 0), shape=(size, size)) @ rows)
    C = (rows.T @ weighted).toarray()
    if pairs is None:  # independence of the observed supports
        expect = np.outer(c, c) / n
        var = expect * np.outer(1 - c / n, 1 - c / n)
    else:  # the honest fit's own probability of a joint support
        expect = n * pairs
        var = expect * (1.0 - pairs)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(var > 0, (C - expect) / np.sqrt(var), 0.0)
    np.fill_diagonal(z, -np.inf)
    m = len(candidates)
    crit = norm.isf(alpha / max(1, m * (m - 1) / 2))
    if not np.any(z > crit):
        return []
    i, j = np.unravel_index(np.argmax(z), z.shape)
    chosen = [int(i), int(j)]
    while True:
        rest = [x for x in range(m) if x not in chosen]
        if not rest:
            break
        score = np.array([min(z[x, y] for y in chosen) for x in rest])
        best = int(np.argmax(score))
        if score[best] <= crit:
            break
        chosen.append(rest[best])
    return [candidates[x] for x in chosen]


def _fit_mixture(engine, fakes, start=None, max_iter=10_000):
    """Maximum likelihood (f, weights, loglik) of the mixture by accelerated EM.

    The weights are ((1 - eta) f, eta_1, ..., eta_J) over the k values and
    the J fake components (``fakes``: None or a (J, ...) array of their
    rows); EM stops on its duality gap
    (:func:`~sklearn_uldp.estimators.maximize_likelihood`), which bounds the
    log-likelihood left on the table by 2 in total, below the tests'
    thresholds (about 10 to 30) and far below an attack's gain.
    """
    k = engine.k
    J = 0 if fakes is None else fakes.shape[0]
    f0, etas = (None, None) if start is None else start
    if f0 is None:
        f0 = np.full(k, 1.0 / k)
    if etas is None:
        etas = np.full(J, 0.05 / max(J, 1))
    else:
        etas = np.maximum(np.asarray(etas, dtype=float).ravel()[:J], 0.01 / max(J, 1))
        if etas.size < J:
            etas = np.append(etas, np.full(J - etas.size, 0.02))
    total = min(float(etas.sum()), 0.5) if J else 0.0
    etas = etas / etas.sum() * total if J else etas
    w0 = np.concatenate([np.maximum(f0, 1e-6) / np.maximum(f0, 1e-6).sum() * (1 - total), etas])
    tol = 2.0 / max(engine.n, 1.0)
    w, info = maximize_likelihood(engine.gradient(fakes), w0, tol=tol, max_iter=max_iter)
    f = w[:k] / max(w[:k].sum(), 1e-300)
    return f, w[k:].copy(), float(info["log_likelihood"])


class RobustFrequencyEstimator(DistributionEstimator):
    """Frequency estimation that detects fake users' targets and removes their effect.

    The reports are modelled as a mixture: a fraction 1 - eta of genuine
    users privatizing values drawn from p through the channel, and a
    fraction eta of fake users sending the maximal-gain attack's crafted
    reports for a target set T (Cao, Jia & Gong, USENIX Security 2021). The
    estimator finds T (for bit vectors, by the frequent-itemset analysis of
    Cao et al.: target bits co-occur in every crafted report, far beyond what
    honest reports allow; for one-symbol reports, and to confirm, by a
    likelihood-ratio test of the mixture), estimates eta by maximum
    likelihood, and then recovers as LDPRecover (Sun et al., arXiv
    2403.09351): the poisoned unbiased estimate is
    ``(1 - eta) p + eta phi_T`` with ``phi_T`` the linear estimate of one
    crafted report, so ``p_hat = proj_simplex((p_tilde - eta phi_T) / (1 -
    eta))``. The mathematics is on the "Poisoning and robust estimation"
    page.

    Parameters
    ----------
    mechanism : BaseMechanism, Channel, dict or None, default=None
        The mechanism that produced the reports, for reports that do not
        carry it.
    targets : array-like of categories or None, default=None
        Known targets (skip the detection); None to detect them.
    max_targets : int, default=8
        The most targets the detection looks for.
    alpha : float, default=1e-3
        Level of the detection tests (Bonferroni over the candidates): with
        honest reports, an attack is found with at most this probability.
    max_iter : int, default=10_000
        The most (accelerated) EM iterations of each mixture fit; each fit
        stops on its duality gap first.

    Attributes
    ----------
    distribution_ : ndarray of shape (k,)
        The recovered distribution of the genuine users' values.
    suspected_targets_ : ndarray
        The detected (or given) targets, as categories; empty when no attack
        is found.
    n_fake_estimate_ : float
        The estimated number of fake users (``eta * n_reports_``).
    fake_fraction_ : float
        The estimated fraction eta of fake reports.
    poisoned_distribution_ : ndarray of shape (k,)
        The estimate without the recovery (the projected unbiased estimate).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp import RAPPOR
    >>> from sklearn_uldp.robustness import RobustFrequencyEstimator, poison
    >>> rng = np.random.default_rng(0)
    >>> cats = list(range(32))
    >>> X = rng.choice(16, size=(20_000, 1))  # the values 16..31 are rare (absent)
    >>> mech = RAPPOR(1.0, theta=0.5, categories=cats, random_state=1)
    >>> reports = poison(mech.fit_transform(X), 1000, targets=[29, 30, 31], random_state=2)
    >>> est = RobustFrequencyEstimator().fit(reports)
    >>> est.suspected_targets_.tolist(), round(est.n_fake_estimate_, -2)
    ([29, 30, 31], 1000.0)
    >>> bool(est.distribution_[29:].sum() < 0.02 < est.poisoned_distribution_[29:].sum())
    True
    """

    _parameter_constraints: dict[str, list[Any]] = {
        **DistributionEstimator._parameter_constraints,
        "targets": [None, "array-like"],
        "max_targets": [Interval(Integral, 1, None, closed="left")],
        "alpha": [Interval(Real, 0, 1, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
    }

    _fitted_attributes = (*DistributionEstimator._fitted_attributes, "_bit_reports")

    def __init__(
        self,
        *,
        mechanism: Any = None,
        targets: Any = None,
        max_targets: int = 8,
        alpha: float = 1e-3,
        max_iter: int = 10_000,
    ) -> None:
        super().__init__(mechanism=mechanism)
        self.targets = targets
        self.max_targets = max_targets
        self.alpha = alpha
        self.max_iter = max_iter

    # ------------------------------------------------------------ fitting
    def partial_fit(self, X, y=None):
        """Add a batch of reports (bit vectors are kept: the detection reads them).

        Parameters
        ----------
        X : array-like, DataFrame, sparse matrix or PackedReports
            Reports of one column, as a mechanism's ``transform`` returns them.
        y : None
            Ignored.

        Returns
        -------
        self : object
        """
        super().partial_fit(X)
        channel = self.channel_
        if family_of(channel) != "one-symbol":
            pooled, _ = _pooled_blocks(_packed_if_frame(X, channel), _report_width(channel))
            batch = _as_csr(channel.encode_reports(pooled), channel.n_categories)
            kept = getattr(self, "_bit_reports", None)
            self._bit_reports = batch if kept is None else sp.vstack([kept, batch], format="csr")
        return self

    # --------------------------------------------------------- estimation
    def _estimate(self):
        channel, stats = self.channel_, self.statistics_
        family = family_of(channel)
        poisoned = np.asarray(channel.unbiased_estimate(stats), dtype=float)
        if family == "one-symbol":
            engine = _OneSymbolEngine(channel, stats.counts)
        else:
            engine = _BitEngine(channel, sp.csr_array(self._bit_reports))
        base = _fit_mixture(engine, None, max_iter=self.max_iter)
        if self.targets is not None:
            components = [target_codes(channel, self.targets)]
            fit = None
        else:
            components, fit = self._detect(engine, poisoned, base)
        if components:
            if fit is None:
                fakes = np.vstack([engine.fake_row(T) for T in components])
                fit = _fit_mixture(engine, fakes, start=(base[0], None), max_iter=self.max_iter)
            weights = np.asarray(fit[1], dtype=float)
            eta = min(float(weights.sum()), 1.0 - 1e-9)
            # LDPRecover: remove the fake users' share of the linear estimate
            phi = np.zeros_like(poisoned)
            for T, w in zip(components, weights, strict=True):
                mean = fake_model(channel, T, "mga").statistic_mean()
                phi += (w / max(eta, 1e-300)) * (channel.coef_a * mean + channel.coef_b)
            recovered = project_to_simplex((poisoned - eta * phi) / (1.0 - eta))
            found = np.unique(np.concatenate(components))
        else:
            eta, found = 0.0, np.zeros(0, dtype=np.intp)
            recovered = project_to_simplex(poisoned)
        info = {
            "suspected_targets": np.asarray(channel.categories)[found],
            "fake_fraction": float(eta),
            "n_fake_estimate": float(eta * stats.n),
            "poisoned_distribution": project_to_simplex(poisoned),
        }
        return recovered, info

    def _detect(self, engine, poisoned, base):
        """The fake users' components (target sets) and the mixture's fit.

        The candidates are the likeliest targets (largest poisoned
        estimates). When the crafted reports support several targets at
        once (bit vectors, hashes, Hadamard cells), the frequent-itemset
        analysis finds them: the candidates whose supports co-occur beyond
        chance form one joint component, which the likelihood ratio confirms
        (one-symbol reports: members are then dropped while their removal
        is not significant, and more targets added while their addition
        is). Otherwise every candidate is a component of its own, and they
        are removed weakest first while the likelihood ratio does not reject
        the removal (Bonferroni over the components). A non-sensitive
        candidate's crafted report is its clear (invertible) report: one such
        report is exactly as likely from a genuine holder, and only the
        aggregate gives the fake users away (genuine holders would also send
        their share of sensitive outputs, which are missing), so the
        recovery of clear-report attacks is partial (docs/robustness.md).
        """
        bits = isinstance(engine, _BitEngine)
        order = [int(c) for c in np.argsort(-poisoned, kind="stable")]
        wide = order[: min(len(order), 3 * self.max_targets)]
        seeds = co_occurrence_targets(engine, wide, self.alpha, base[0])[: self.max_targets]
        if len(seeds) >= 2:
            fake = engine.fake_row(np.asarray(seeds))[None, :]
            fit = _fit_mixture(engine, fake, start=(base[0], None), max_iter=self.max_iter)
            if not bits:
                seeds, fit = self._best_subset(engine, seeds, fit, base)
            if 2.0 * (fit[2] - base[2]) > chi2.isf(self.alpha, df=1 + len(seeds)):
                if not bits:
                    seeds, fit = self._extend(engine, order, seeds, fit)
                return [np.asarray(sorted(seeds), dtype=np.intp)], fit
        n_single = 5 if bits else 2 * self.max_targets + 6
        components = [np.asarray([c], dtype=np.intp) for c in order[:n_single]]
        if not components:
            return [], None
        fakes = np.vstack([engine.fake_row(T) for T in components])
        fit = _fit_mixture(engine, fakes, start=(base[0], None), max_iter=self.max_iter)
        drop = chi2.isf(self.alpha / len(components), df=1)
        while components:
            weakest = int(np.argmin(fit[1]))
            keep = [j for j in range(len(components)) if j != weakest]
            if keep:
                trial = _fit_mixture(
                    engine, fakes[keep], start=(fit[0], fit[1][keep]), max_iter=self.max_iter
                )
            else:
                trial = base
            if 2.0 * (fit[2] - trial[2]) > drop:
                break
            components, fakes, fit = [components[j] for j in keep], fakes[keep], trial
        if not components or 2.0 * (fit[2] - base[2]) <= chi2.isf(
            self.alpha, df=2 * len(components)
        ):
            return [], None
        return components, fit

    def _best_subset(self, engine, seeds, fit, base):
        """The likeliest subset of the co-occurring candidates (one-symbol reports).

        The crafted report of a set is the output supporting most of it, so
        a set diluted by chance members (structured supports such as
        Hadamard cells make chance pairs co-occur) has another crafted
        report than the targets', and dropping members one at a time need
        not reach the targets. One-symbol fits are cheap (a histogram):
        every subset of at least two of the (at most ``max_targets``)
        candidates is scored, the likeliest refitted to convergence, then
        pruned.
        """
        from itertools import combinations

        best_ll, best = fit[2], list(seeds)
        for size in range(2, len(seeds)):
            for subset in combinations(seeds, size):
                trial = _fit_mixture(
                    engine,
                    engine.fake_row(np.asarray(subset))[None, :],
                    start=(base[0], None),
                    max_iter=2_000,
                )
                if trial[2] > best_ll:
                    best_ll, best = trial[2], list(subset)
        if best != list(seeds):
            fake = engine.fake_row(np.asarray(best))[None, :]
            fit = _fit_mixture(engine, fake, start=(base[0], None), max_iter=self.max_iter)
        return self._prune(engine, best, fit)

    def _prune(self, engine, seeds, fit):
        """Drop members of a joint component while their removal is not significant.

        Best first: each round drops the member whose removal leaves the
        likeliest component (a member the crafted reports do not support
        makes the component fit worse, so its removal raises the
        likelihood; dropping the first insignificant member instead can
        remove a true target from a component diluted by chance members,
        as structured supports such as Hadamard cells produce).
        """
        drop = chi2.isf(self.alpha, df=1)
        while len(seeds) > 1:
            trials = []
            for c in seeds:
                rest = [x for x in seeds if x != c]
                trial = _fit_mixture(
                    engine, engine.fake_row(np.asarray(rest))[None, :], start=(fit[0], fit[1])
                )
                trials.append((trial[2], rest, trial))
            _, rest, trial = max(trials, key=lambda item: item[0])
            if 2.0 * (fit[2] - trial[2]) > drop:
                break
            seeds, fit = rest, trial
        return seeds, fit

    def _extend(self, engine, order, seeds, fit):
        """Add members to a joint component while their addition is significant."""
        candidates = [c for c in order[: 2 * self.max_targets + 6] if c not in seeds]
        add = chi2.isf(self.alpha / max(len(candidates), 1), df=1)
        while len(seeds) < self.max_targets and candidates:
            trials = [
                _fit_mixture(
                    engine,
                    engine.fake_row(np.asarray(seeds + [c]))[None, :],
                    start=(fit[0], fit[1]),
                    max_iter=2_000,
                )
                for c in candidates
            ]
            best = int(np.argmax([t[2] for t in trials]))
            if 2.0 * (trials[best][2] - fit[2]) <= add:
                break
            seeds = seeds + [candidates.pop(best)]
            fit = trials[best]
        return seeds, fit

    # ------------------------------------------------------ fitted values
    @property
    def suspected_targets_(self) -> np.ndarray:
        """The detected (or given) targets, as categories (empty: no attack found)."""
        return self._fitted_result()[1]["suspected_targets"].copy()

    @property
    def n_fake_estimate_(self) -> float:
        """The estimated number of fake users."""
        return self._fitted_result()[1]["n_fake_estimate"]

    @property
    def fake_fraction_(self) -> float:
        """The estimated fraction of fake reports."""
        return self._fitted_result()[1]["fake_fraction"]

    @property
    def poisoned_distribution_(self) -> np.ndarray:
        """The projected unbiased estimate, before the recovery."""
        return self._fitted_result()[1]["poisoned_distribution"].copy()
