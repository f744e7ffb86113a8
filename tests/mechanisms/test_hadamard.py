"""Tests of the Hadamard family, the optimal binary mechanism, uBD and uOUE.

Every channel is checked against an independent construction of its matrix
from the formulas (mathematics §2.6–2.9 and the uBD definition), for privacy on the
exact matrix, for the exact unbiasedness of its estimator, for its sampler
(chi-square at fixed seeds, with a power check that a wrong channel fails),
and with every estimator.
"""

import math
import time
from itertools import combinations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.linalg import hadamard
from scipy.stats import chisquare

from sklearn_uldp import (
    BinaryOptimalResponse,
    BlockHadamardResponse,
    EMEstimator,
    EmpiricalEstimator,
    HadamardResponse,
    HighLowHadamardResponse,
    RandomizedResponse,
    ThresholdEstimator,
    UtilityOptimizedBlockDesign,
    UtilityOptimizedOUE,
    UtilityOptimizedRAPPOR,
    UtilityOptimizedRR,
)
from sklearn_uldp.exceptions import ReportMismatchError
from sklearn_uldp.mechanisms import (
    BlockHadamardChannel,
    Channel,
    HadamardResponseChannel,
    HighLowHadamardChannel,
    ReportStatistics,
    binary_optimal_matrix,
)
from sklearn_uldp.mechanisms._hadamard import fwht
from sklearn_uldp.privacy import (
    block_structured,
    check_context_aware,
    check_ldp,
    check_osldp,
    check_uldp,
    high_low,
    pairwise_log_ratio,
)

SEEDS = range(5)


# --------------------------------------------------------------- references
def ref_hr(k, eps):
    """HR matrix from mathematics §2.7 with scipy's Sylvester Hadamard matrix."""
    K = 2 ** math.ceil(math.log2(k + 1))
    H = hadamard(K)
    E = math.exp(eps)
    return np.where(H[1 : k + 1] == 1, 2 * E / (K * (E + 1)), 2 / (K * (E + 1)))


def ref_blocked_hr(k, eps, b):
    """Blocked (general) HR from its definition: blocks of b - 1 values."""
    B = -(-k // (b - 1))
    K = B * b
    E = math.exp(eps)
    D = b / 2 * E + K - b / 2
    H = hadamard(b)
    Q = np.full((k, K), 1 / D)
    for x in range(k):
        j, r = divmod(x, b - 1)
        Q[x, j * b : (j + 1) * b] = np.where(H[r + 1] == 1, E / D, 1 / D)
    return Q


def ref_hlhr(sensitive, eps):
    """High-low HR matrix from mathematics §2.8."""
    s_codes = np.flatnonzero(sensitive)
    n_codes = np.flatnonzero(~sensitive)
    s, t = s_codes.size, n_codes.size
    S = 2 ** math.ceil(math.log2(s + 1))
    H = hadamard(S)
    E = math.exp(eps)
    Q = np.zeros((sensitive.size, S + t))
    for i, x in enumerate(s_codes):
        Q[x, :S] = np.where(H[i + 1] == 1, 2 * E / (S * (E + 1)), 2 / (S * (E + 1)))
    for j, x in enumerate(n_codes):
        Q[x, :S] = 2 / (S * (E + 1))
        Q[x, S + j] = (E - 1) / (E + 1)
    return Q


def ref_bhr(block_ids, eps):
    """Block HR matrix from mathematics §2.9 (blocks numbered by first appearance)."""
    m = block_ids.max() + 1
    E = math.exp(eps)
    sizes = np.bincount(block_ids, minlength=m)
    Ks = [2 ** math.ceil(math.log2(kj + 1)) for kj in sizes]
    offsets = np.concatenate([[0], np.cumsum(Ks)])
    Q = np.zeros((block_ids.size, offsets[-1]))
    for j in range(m):
        members = np.flatnonzero(block_ids == j)
        H = hadamard(Ks[j])
        for i, x in enumerate(members):
            Q[x, offsets[j] : offsets[j + 1]] = np.where(
                H[i + 1] == 1, 2 * E / (Ks[j] * (E + 1)), 2 / (Ks[j] * (E + 1))
            )
    return Q


def ref_ubd(sensitive, h, eps):
    """uBD matrix straight from the definition (arXiv 2509.24173).

    Columns: the h-subsets of X_S in combinations order, then X_N.
    """
    s_codes = list(np.flatnonzero(sensitive))
    n_codes = list(np.flatnonzero(~sensitive))
    s = len(s_codes)
    E = math.exp(eps)
    D = h * E + s - h
    subsets = list(combinations(s_codes, h))
    Q = np.zeros((sensitive.size, len(subsets) + len(n_codes)))
    for x in range(sensitive.size):
        for c, T in enumerate(subsets):
            if sensitive[x]:
                if x in T:
                    Q[x, c] = h * E / D / math.comb(s - 1, h - 1)
                else:
                    Q[x, c] = (s - h) / D / math.comb(s - 1, h)
            else:
                Q[x, c] = (1 - h * (E - 1) / D) / math.comb(s, h)
        if not sensitive[x]:
            Q[x, len(subsets) + n_codes.index(x)] = h * (E - 1) / D
    return Q


def ref_ubd_mixture(sensitive, weights, eps):
    """Mixture {h: w_h} of uBD channels: subsets of each size, then X_N."""
    n_codes = np.flatnonzero(~sensitive)
    blocks, own = [], 0.0
    for h, w in sorted(weights.items()):
        Q = ref_ubd(sensitive, h, eps)
        C = Q.shape[1] - n_codes.size
        blocks.append(w * Q[:, :C])
        own = own + w * Q[:, C:]
    return np.hstack(blocks + [own])


def random_mask(rng, k, *, min_true=1, max_true=None):
    max_true = k if max_true is None else max_true
    s = int(rng.integers(min_true, max_true + 1))
    mask = np.zeros(k, dtype=bool)
    mask[rng.choice(k, size=s, replace=False)] = True
    return mask


def random_blocks(rng, k):
    m = int(rng.integers(1, min(k, 4) + 1))
    ids = np.concatenate([np.arange(m), rng.integers(0, m, size=k - m)])
    rng.shuffle(ids)
    return ids


def _first_appearance(ids):
    _, first = np.unique(ids, return_index=True)
    order = np.argsort(first)
    remap = np.empty(ids.max() + 1, dtype=np.int64)
    remap[np.unique(ids)[order]] = np.arange(order.size)
    return remap[ids]


def linear_statistic(channel):
    """G[y, x]: the contribution of one report y to observed_frequency(x)."""
    Y = channel.n_outputs
    G = np.empty((Y, channel.n_categories))
    for y in range(Y):
        counts = np.zeros(Y)
        counts[y] = 1
        G[y] = channel.observed_frequency(ReportStatistics(channel, 1, counts))
    return G


def categorical_configs():
    """(channel, reference matrix, privacy matrix or None) over random domains."""
    out = []
    for seed in SEEDS:
        rng = np.random.default_rng(seed)
        k = int(rng.integers(2, 12))
        eps = float(rng.uniform(0.2, 3.0))
        cats = np.arange(k) * 10
        mask = random_mask(rng, k)
        blocks = random_blocks(rng, k)
        out.append((HadamardResponseChannel(cats, eps), ref_hr(k, eps), None))
        b = int(rng.choice([2, 4, 8]))
        out.append((HadamardResponseChannel(cats, eps + 2, b), ref_blocked_hr(k, eps + 2, b), None))
        out.append(
            (
                HighLowHadamardChannel(cats, eps, mask),
                ref_hlhr(mask, eps),
                high_low(cats, mask, eps),
            )
        )
        out.append(
            (
                BlockHadamardChannel(cats, eps, blocks),
                ref_bhr(_first_appearance(blocks), eps),
                block_structured(cats, blocks.tolist(), eps),
            )
        )
    return out


CONFIGS = categorical_configs()
IDS = [f"{c.name}-{i}" for i, (c, _, _) in enumerate(CONFIGS)]


# ------------------------------------------------------------------- the WHT
@pytest.mark.parametrize("K", [1, 2, 4, 8, 64, 256])
def test_fwht_matches_dense_hadamard(K):
    rng = np.random.default_rng(K)
    a = rng.normal(size=(3, K))
    assert np.allclose(fwht(a, axis=1), a @ hadamard(K).T)
    assert np.allclose(fwht(a.T, axis=0), (a @ hadamard(K).T).T)


def test_fwht_rejects_non_power_of_two():
    with pytest.raises(ValueError, match="power of two"):
        fwht(np.ones(6))


# ----------------------------------------------------- exact channel matrices
# Pinned floats (tests/README.md): tolerances that hold on any processor.
# Channel matrices against the formulas (closed forms): 1e-12 relative, 1e-15
# absolute for the entries that are 0.
@pytest.mark.pinned
@pytest.mark.parametrize("channel, Q_ref, E", CONFIGS, ids=IDS)
def test_matrix_matches_spec_and_structured_products(channel, Q_ref, E):
    Q = channel.matrix()
    assert np.allclose(Q, Q_ref, rtol=1e-10, atol=1e-15)
    assert np.allclose(Q.sum(axis=1), 1.0)
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(channel.n_categories))
    v = rng.random(channel.n_outputs)
    assert np.allclose(channel.forward(p), p @ Q)
    assert np.allclose(channel.adjoint(v), Q @ v)
    codes = np.arange(channel.n_outputs)
    L = channel.likelihood(codes)
    # Q(y|x) up to a factor depending on the report only.
    ratio = np.where(Q.T > 0, L / np.where(Q.T > 0, Q.T, 1), 0)
    assert np.all((L > 0) == (Q.T > 0))
    row_max = ratio.max(axis=1, keepdims=True)
    assert np.allclose(np.where(Q.T > 0, ratio, row_max), row_max)


@pytest.mark.parametrize("channel, Q_ref, E", CONFIGS, ids=IDS)
def test_privacy_on_exact_matrix(channel, Q_ref, E):
    eps = channel.epsilon
    if E is None:  # HR: eps-LDP, and tight
        assert check_ldp(channel)
        assert not check_ldp(channel, epsilon=0.99 * eps)
        return
    check = check_context_aware(channel, E)
    assert check.satisfied, check.reasons
    # Tight: some constrained pair reaches exactly eps (unless no pair is
    # constrained at all, e.g. singleton blocks only).
    finite = np.isfinite(E.matrix) & ~np.eye(channel.n_categories, dtype=bool)
    if finite.any():
        assert np.isclose(check.log_ratio[finite].max(), eps)
        tighter = check_context_aware(channel, np.where(finite, 0.99 * eps, np.inf))
        assert not tighter.satisfied
    if channel.name == "hlhr":
        assert check_uldp(channel)  # (A, Y_P = [S], eps)-ULDP
        assert check_osldp(channel)
        if (~channel.sensitive_mask).any():
            assert not check_ldp(channel)


@pytest.mark.parametrize("channel, Q_ref, E", CONFIGS, ids=IDS)
def test_estimator_is_exactly_unbiased(channel, Q_ref, E):
    rng = np.random.default_rng(1)
    Q = channel.matrix()
    G = linear_statistic(channel)
    for p in (rng.dirichlet(np.ones(channel.n_categories)), np.eye(channel.n_categories)[0]):
        m_out = p @ Q
        # expected_frequency is the mean of the actual statistic ...
        assert np.allclose(m_out @ G, channel.expected_frequency(p))
        # ... and the linear estimator inverts it exactly.
        assert np.allclose(channel.coef_a * channel.expected_frequency(p) + channel.coef_b, p)
        # exact variance of a * f + b, from the statistic's per-report values
        var = channel.coef_a**2 * (m_out @ G**2 - (m_out @ G) ** 2) / 100
        assert np.allclose(channel.estimator_variance(p, 100), var)


@pytest.mark.parametrize("channel, Q_ref, E", CONFIGS, ids=IDS)
def test_null_variance_bounds_the_variance_at_zero(channel, Q_ref, E):
    rng = np.random.default_rng(2)
    k = channel.n_categories
    worst = np.zeros(k)
    for _ in range(30):
        p = rng.dirichlet(np.full(k, 0.3))
        for x in range(k):
            q = p.copy()
            q[x] = 0
            if q.sum() == 0:
                continue
            q /= q.sum()
            worst[x] = max(worst[x], channel.estimator_variance(q, 7)[x])
    assert np.all(worst <= channel.null_variance(7) * (1 + 1e-9))


# ---------------------------------------------------------------- samplers
def grouped_chi2(x, y, Q):
    """Two chi-square tests of sampled (input, output) pairs against Q.

    The joint test uses every (x, y) cell; the grouped test pools, for each
    input, the outputs of equal probability (e.g. "in S_x" vs "not in S_x"),
    which has far more power against a wrong keep probability.
    """
    k = Q.shape[0]
    n_x = np.bincount(x, minlength=k)
    obs = np.zeros_like(Q)
    np.add.at(obs, (x, y), 1)
    expected = n_x[:, None] * Q
    support = expected > 0
    assert obs[~support].sum() == 0  # impossible outputs never occur
    joint = chisquare(obs[support], expected[support]).pvalue
    g_obs, g_exp = [], []
    for row in range(k):
        levels = np.unique(np.round(Q[row][Q[row] > 0], 12))
        for level in levels:
            cols = np.isclose(Q[row], level, rtol=1e-9, atol=0)
            g_obs.append(obs[row, cols].sum())
            g_exp.append(expected[row, cols].sum())
    grouped = chisquare(g_obs, g_exp).pvalue if len(g_obs) > k else 1.0
    return min(joint, grouped)


def chi2_pvalue(channel, Q, n=300_000, seed=0):
    """Sample n // k reports of each input and test them against Q."""
    rng = np.random.default_rng(seed)
    k = channel.n_categories
    x = np.repeat(np.arange(k), n // k)
    return grouped_chi2(x, channel.sample(x, rng), Q)


@pytest.mark.parametrize("channel, Q_ref, E", CONFIGS, ids=IDS)
def test_sampler_matches_channel(channel, Q_ref, E):
    assert chi2_pvalue(channel, Q_ref) > 1e-3


def test_blocked_hr_reduces_to_hr_and_helps_at_large_epsilon():
    cats = np.arange(20)
    assert np.allclose(HadamardResponseChannel(cats, 1.0, 32).matrix(), ref_hr(20, 1.0))
    uniform = np.full(100, 0.01)
    cats = np.arange(100)
    low = HadamardResponse(0.5, block_size="auto", categories=cats).fit()
    assert low.channel_ == HadamardResponse(0.5, block_size=None, categories=cats).fit().channel_
    # "auto" is the default: plain HR at small budgets, blocks at large ones
    high = HadamardResponse(5.0, categories=cats).fit()
    plain = HadamardResponse(5.0, block_size=None, categories=cats).fit()
    assert high.channel_.b < plain.channel_.K
    assert (
        high.channel_.estimator_variance(uniform, 1).sum()
        < 0.2 * plain.channel_.estimator_variance(uniform, 1).sum()
    )
    X = np.random.default_rng(0).choice(100, size=(20000, 1))
    reports = high.set_params(random_state=0).fit_transform(X)
    truth = np.bincount(X[:, 0], minlength=100) / 20000
    for est in (EmpiricalEstimator(), EMEstimator()):
        p_hat = est.fit(reports).distribution_
        assert np.abs(p_hat - truth).sum() < 0.3
    with pytest.raises(ValueError, match="power of two"):
        HadamardResponse(1.0, block_size=6, categories=cats).fit()


def test_auto_block_size_keeps_plain_hr_where_blocks_cannot_be_realized():
    # At a tiny budget every block size is about as good as plain HR, and
    # small blocks need probabilities the float sampler cannot realize: the
    # default must stay plain HR there instead of refusing the budget.
    mech = HadamardResponse(1e-6, categories=np.arange(100_000)).fit()
    assert mech.channel_.n_blocks == 1
    assert (
        mech.channel_
        == HadamardResponse(1e-6, block_size=None, categories=np.arange(100_000)).fit().channel_
    )


def test_chi_square_detects_a_wrong_channel():
    """Power check: the sampler of HR at eps tested against HR at eps + 0.3."""
    cats = np.arange(6)
    channel = HadamardResponseChannel(cats, 1.0)
    assert chi2_pvalue(channel, ref_hr(6, 1.0)) > 1e-3
    assert chi2_pvalue(channel, ref_hr(6, 1.3)) < 1e-6
    hl = HighLowHadamardChannel(cats, 1.0, cats < 3)
    assert chi2_pvalue(hl, ref_hlhr(cats < 3, 1.3)) < 1e-6


# ------------------------------------------------------- mechanisms + estimators
def _mechanisms(cats, eps=1.0):
    sens = list(cats[:3])
    blocks = [list(cats[:4]), list(cats[4:])]
    return [
        HadamardResponse(eps, categories=cats, random_state=0),
        HighLowHadamardResponse(eps, sensitive=sens, categories=cats, random_state=0),
        BlockHadamardResponse(eps, blocks=blocks, categories=cats, random_state=0),
        UtilityOptimizedBlockDesign(
            eps, sensitive=list(cats[:5]), subset_size=2, categories=cats, random_state=0
        ),
        UtilityOptimizedOUE(eps, sensitive=sens, categories=cats, random_state=0),
        BinaryOptimalResponse(0.5, 2.0, categories=cats[:2], random_state=0),
    ]


@pytest.mark.parametrize(
    "mech", _mechanisms(np.array(list("abcdefgh"), dtype=object)), ids=lambda m: type(m).__name__
)
def test_every_estimator_works(mech):
    cats = np.asarray(mech.categories, dtype=object)
    k = cats.size
    rng = np.random.default_rng(3)
    p = rng.dirichlet(np.full(k, 2.0))
    X = rng.choice(cats, p=p, size=(40000, 1))
    truth = np.bincount(np.searchsorted(cats, X[:, 0]), minlength=k) / X.shape[0]
    reports = mech.fit_transform(X)
    emp = EmpiricalEstimator().fit(reports)
    thr = ThresholdEstimator().fit(reports)
    em = EMEstimator().fit(reports)
    assert em.converged_
    for est in (emp, thr, em):
        assert np.abs(est.distribution_ - truth).sum() < 0.25
    assert np.isclose(thr.distribution_.sum(), 1.0)
    assert np.isclose(em.distribution_.sum(), 1.0)
    # chunked statistics add up to the one-shot ones
    half = reports.shape[0] // 2
    chunked = EmpiricalEstimator().partial_fit(reports[:half]).partial_fit(reports[half:])
    assert np.allclose(chunked.distribution_, emp.distribution_)
    # posterior rows are distributions
    post = em.predict_proba(reports[:50])
    assert np.allclose(post.sum(axis=1), 1.0)
    # the spec round-trips
    spec = mech.channel_.to_dict()
    assert Channel.from_json(mech.channel_.to_json()) == mech.channel_
    assert spec["mechanism"] == mech.channel_.name


def test_report_bits():
    cats = np.arange(100)
    hr = HadamardResponse(1.0, categories=cats).fit()
    assert hr.channel_.report_bits == 7.0  # K = 128
    hl = HighLowHadamardResponse(1.0, sensitive=cats[:10], categories=cats).fit()
    assert np.isclose(hl.channel_.report_bits, math.log2(16 + 90))
    bhr = BlockHadamardResponse(1.0, blocks=cats // 10, categories=cats).fit()
    assert np.isclose(bhr.channel_.report_bits, math.log2(10 * 16))
    urap = UtilityOptimizedOUE(1.0, sensitive=cats[:10], categories=cats).fit()
    assert urap.channel_.report_bits == 100.0
    ubd = UtilityOptimizedBlockDesign(
        1.0, sensitive=cats[:10], subset_size=3, categories=cats
    ).fit()
    assert np.isclose(ubd.channel_.report_bits, math.log2(math.comb(10, 3) + 90))


def test_hr_estimates_a_large_domain_fast():
    k, n = 43_750, 400_000
    cats = np.arange(k)
    rng = np.random.default_rng(0)
    x = rng.zipf(1.3, size=n) % k
    mech = HadamardResponse(1.0, categories=cats, random_state=0).fit()
    reports = mech.transform(x.reshape(-1, 1))
    est = EmpiricalEstimator()
    start = time.perf_counter()
    p_hat = est.fit(reports).distribution_
    elapsed = time.perf_counter() - start
    assert elapsed < 1.0, elapsed
    truth = np.bincount(x, minlength=k) / n
    # the head is recovered: sd of each estimate is a / (2 sqrt n) ~ 3.4e-3
    assert np.abs(p_hat[:5] - truth[:5]).max() < 0.02
    bhr = BlockHadamardResponse(1.0, blocks=cats // 50, categories=cats, random_state=0).fit()
    reports = bhr.transform(x.reshape(-1, 1))
    start = time.perf_counter()
    assert EmpiricalEstimator().fit(reports).distribution_.shape == (k,)
    assert time.perf_counter() - start < 1.0


def test_reports_are_codes_whatever_the_input_dtype():
    mech = HadamardResponse(2.0, categories=[False, True], random_state=0)
    X = np.array([[False], [True]] * 500)
    reports = mech.fit_transform(X)
    assert reports.dtype.kind == "i"
    assert set(np.unique(reports)) <= {0, 1, 2, 3}
    assert len(set(np.unique(reports))) > 2
    est = EmpiricalEstimator().fit(reports)
    assert np.allclose(est.distribution_, [0.5, 0.5], atol=0.15)


def test_reports_from_elsewhere_are_rejected():
    mech = HadamardResponse(1.0, categories=list("abc")).fit()
    with pytest.raises(ReportMismatchError):
        EmpiricalEstimator(mechanism=mech).fit(np.array([[0], [9]]))
    hl = HighLowHadamardResponse(1.0, sensitive=["a"], categories=list("abc")).fit()
    with pytest.raises(ReportMismatchError):
        EmpiricalEstimator(mechanism=hl).fit(np.array([[0], [mech.channel_.K]]))


def test_block_hadamard_blocks_forms_and_split():
    cats = ["a", "b", "c", "d", "e"]
    forms = [
        [["a", "b"], ["c", "d", "e"]],
        {"a": "x", "b": "x", "c": "y", "d": "y", "e": "y"},
        ["x", "x", "y", "y", "y"],
        lambda c: c in "ab",
    ]
    channels = [BlockHadamardResponse(1.0, blocks=f, categories=cats).fit().channel_ for f in forms]
    assert all(c == channels[0] for c in channels)
    ch = channels[0]
    block, cell = ch.split_reports(ch.sample(np.arange(5), np.random.default_rng(0)))
    assert block.tolist() == [0, 0, 1, 1, 1]
    assert np.all(cell < ch.block_K[block])
    with pytest.raises(ValueError, match="partition|more than one"):
        BlockHadamardResponse(1.0, blocks=[["a", "b"], ["b", "c", "d", "e"]], categories=cats).fit()
    with pytest.raises(ValueError, match="cover|exactly one"):
        BlockHadamardResponse(1.0, blocks=[["a", "b"], ["c"]], categories=cats).fit()


def test_one_block_is_plain_hr_and_singletons_are_identity_like():
    cats = np.arange(6)
    one = BlockHadamardChannel(cats, 1.0, np.zeros(6, dtype=int))
    assert np.allclose(one.matrix(), HadamardResponseChannel(cats, 1.0).matrix())
    single = BlockHadamardChannel(cats, 1.0, cats)
    assert not single.protected_outputs().any()
    assert np.all(single.null_variance(10) == 0)


# ------------------------------------------------------------- binary (Thm 2)
@pytest.mark.parametrize("seed", SEEDS)
def test_binary_optimal_is_tight_for_both_budgets(seed):
    rng = np.random.default_rng(seed)
    e12, e21 = rng.uniform(0.1, 3.0, size=2)
    mech = BinaryOptimalResponse(e12, e21, categories=["1", "2"]).fit()
    Q = mech.channel_matrix()
    assert np.allclose(Q.sum(axis=1), 1)
    L = pairwise_log_ratio(Q)
    assert np.isclose(L[0, 1], e12) and np.isclose(L[1, 0], e21)
    assert check_context_aware(mech, [[0, e12], [e21, 0]])
    assert not check_context_aware(mech, [[0, e12 * 0.99], [e21, 0]])
    p = rng.dirichlet([1, 1])
    ch = mech.channel_
    assert np.allclose(ch.coef_a * ch.expected_frequency(p) + ch.coef_b, p)
    assert chi2_pvalue(ch, Q) > 1e-3


def test_binary_warner_special_case():
    eps = 0.8
    warner = BinaryOptimalResponse(eps, eps, categories=[0, 1]).fit()
    rr = RandomizedResponse(eps, categories=[0, 1]).fit()
    assert np.allclose(warner.channel_matrix(), rr.channel_matrix())
    E = math.exp(eps)
    assert np.isclose(warner.channel_matrix()[0, 0], E / (E + 1))


def test_binary_mangat_special_case():
    e21 = 1.2
    Q = binary_optimal_matrix(np.inf, e21)
    # x = 2 always reports 2; x = 1 reports 2 w.p. e^-eps21
    assert np.allclose(Q, [[1 - math.exp(-e21), math.exp(-e21)], [0, 1]])
    mech = BinaryOptimalResponse(np.inf, e21, categories=["no", "yes"], random_state=0).fit()
    assert mech.channel_.sensitive_mask.tolist() == [False, True]
    assert check_uldp(mech)  # ({yes}, e21)-ULDP: "no" reports are invertible
    assert not check_ldp(mech)
    assert mech.channel_.null_variance(10)[0] == 0
    # the mirrored case
    assert np.allclose(binary_optimal_matrix(e21, np.inf), Q[::-1, ::-1])
    X = np.array([["no"]] * 3000 + [["yes"]] * 1000, dtype=object)
    reports = mech.transform(X)
    assert set(np.unique(reports[X[:, 0] == "yes"])) == {"yes"}
    est = EmpiricalEstimator().fit(reports)
    assert np.allclose(est.distribution_, [0.75, 0.25], atol=0.05)


def test_binary_rejects_bad_input():
    with pytest.raises(ValueError, match="both be infinite"):
        BinaryOptimalResponse(np.inf, np.inf, categories=[0, 1]).fit()
    with pytest.raises(ValueError, match="privatizes a binary column.*3 distinct"):
        BinaryOptimalResponse(1.0, 1.0, categories=[0, 1, 2]).fit()


# ----------------------------------------------------------------------- uBD
def ubd_configs():
    out = []
    for seed in SEEDS:
        rng = np.random.default_rng(100 + seed)
        k = int(rng.integers(3, 9))
        mask = random_mask(rng, k, min_true=2, max_true=min(k, 6))
        s = int(mask.sum())
        h = int(rng.integers(1, s))
        out.append((np.arange(k), mask, h, float(rng.uniform(0.2, 3.0))))
        if s >= 3:  # a mixture over two subset sizes
            w = float(rng.uniform(0.2, 0.8))
            out.append(
                (
                    np.arange(k),
                    mask,
                    {1: w, int(rng.integers(2, s)): 1 - w},
                    float(rng.uniform(0.2, 3.0)),
                )
            )
    return out


def _ubd_output_index(channel, bits):
    """Column of each 0/1 report in the channel's output order."""
    labels = channel.output_labels()
    keys = {row.tobytes(): i for i, row in enumerate(labels)}
    return np.array([keys[row.tobytes()] for row in np.asarray(bits, dtype=np.uint8)])


@pytest.mark.parametrize("cats, mask, h, eps", ubd_configs())
def test_ubd_channel_privacy_unbiasedness_and_sampler(cats, mask, h, eps):
    mech = UtilityOptimizedBlockDesign(
        eps, sensitive=mask, subset_size=h, categories=cats, random_state=0
    ).fit()
    ch = mech.channel_
    Q = ch.matrix()
    mixed = isinstance(h, dict)
    ref = ref_ubd_mixture(mask, h, eps) if mixed else ref_ubd(mask, h, eps)
    assert np.allclose(Q, ref)
    assert check_uldp(mech)
    assert check_osldp(mech)
    assert check_context_aware(mech, high_low(cats, mask, eps))
    prot = ch.protected_outputs()
    assert np.isclose(pairwise_log_ratio(Q[:, prot]).max(), eps)  # tight
    # unbiased, by exact expectation over the output space
    labels = ch.output_labels()
    rng = np.random.default_rng(0)
    for p in (rng.dirichlet(np.ones(cats.size)), np.eye(cats.size)[-1]):
        m_out = p @ Q
        stats = ReportStatistics(ch, 1, m_out @ labels.astype(float))
        assert np.allclose(ch.observed_frequency(stats), ch.expected_frequency(p))
        assert np.allclose(ch.coef_a * ch.expected_frequency(p) + ch.coef_b, p)
        G = np.stack(
            [ch.observed_frequency(ReportStatistics(ch, 1, row.astype(float))) for row in labels]
        )
        var = ch.coef_a**2 * (m_out @ G**2 - (m_out @ G) ** 2) / 10
        assert np.allclose(ch.estimator_variance(p, 10), var)
        q = p.copy()
        q[mask] = 0
        if q.sum() > 0:  # null variance bounds the variance at p(x) = 0
            q /= q.sum()
            assert np.all(
                ch.estimator_variance(q, 10)[mask] <= ch.null_variance(10)[mask] * (1 + 1e-9)
            )
    # sampler
    n = 200_000
    x = np.repeat(np.arange(cats.size), n // cats.size)
    y = _ubd_output_index(ch, ch.sample(x, np.random.default_rng(1)))
    assert grouped_chi2(x, y, Q) > 1e-3
    # likelihood proportional to Q(y|x) per report
    L = ch.likelihood(sp.csr_array(labels))
    ratio = np.where(Q.T > 0, L / np.where(Q.T > 0, Q.T, 1), np.nan)
    assert np.allclose(np.nanmax(ratio, axis=1), np.nanmin(ratio, axis=1))


@pytest.mark.parametrize("seed", SEEDS)
def test_ubd_with_h1_is_urr(seed):
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 10))
    mask = random_mask(rng, k)
    eps = float(rng.uniform(0.2, 3.0))
    cats = np.arange(k)
    ubd = UtilityOptimizedBlockDesign(eps, sensitive=mask, categories=cats).fit()
    urr = UtilityOptimizedRR(eps, sensitive=mask, categories=cats).fit()
    order = np.concatenate([np.flatnonzero(mask), np.flatnonzero(~mask)])
    assert np.allclose(ubd.channel_matrix(), urr.channel_matrix()[:, order])
    assert np.allclose(ubd.channel_.coef_a, urr.channel_.coef_a)
    assert np.allclose(ubd.channel_.coef_b, urr.channel_.coef_b)


@pytest.mark.parametrize("subset_size", [2, {1: 0.3, 3: 0.7}])
def test_ubd_em_log_likelihood_is_exact(subset_size):
    cats = np.arange(7)
    mask = cats < 5
    mech = UtilityOptimizedBlockDesign(
        1.0, sensitive=mask, subset_size=subset_size, categories=cats, random_state=0
    ).fit()
    ch = mech.channel_
    X = np.random.default_rng(0).choice(7, size=(3000, 1))
    reports = mech.transform(X)
    stats = ch.statistics(ch.encode_reports(reports), keep_reports=True)
    p = np.random.default_rng(1).dirichlet(np.ones(7))
    idx = _ubd_output_index(ch, reports)
    m = p @ ch.matrix()
    g, ll = ch.em_gradient(stats, p)
    assert np.isclose(ll, np.log(m[idx]).sum())
    assert np.allclose(g, (ch.matrix()[:, idx] / m[idx]).sum(axis=1) / idx.size)


def _shared_uniform_mixture_matrix(sensitive, weights, eps):
    """The channel of a mixture sampler that reuses ONE uniform u both to pick
    the subset size (u < w_1 -> first size) and to decide membership
    (u < P(x in T | h)), as the public MATLAB code of uBD does."""
    s_codes = list(np.flatnonzero(sensitive))
    n_codes = list(np.flatnonzero(~sensitive))
    s, E = len(s_codes), math.exp(eps)
    sizes = sorted(weights)
    edges = np.concatenate([[0.0], np.cumsum([weights[h] for h in sizes])])
    cols, own = [], np.zeros((sensitive.size, len(n_codes)))
    for c, h in enumerate(sizes):
        lo, hi = edges[c], edges[c + 1]
        D = h * E + s - h
        subsets = list(combinations(s_codes, h))
        block = np.zeros((sensitive.size, len(subsets)))
        for x in range(sensitive.size):
            keep = h * E / D if sensitive[x] else h * (E - 1) / D
            p_in = max(0.0, min(hi, keep) - lo)  # same u for both choices
            p_out = (hi - lo) - p_in
            for j, T in enumerate(subsets):
                if sensitive[x]:
                    block[x, j] = (
                        p_in / math.comb(s - 1, h - 1) if x in T else p_out / math.comb(s - 1, h)
                    )
                else:
                    block[x, j] = p_out / math.comb(s, h)
            if not sensitive[x]:
                own[x, n_codes.index(x)] += p_in
        cols.append(block)
    return np.hstack(cols + [own])


def test_ubd_mixture_draws_independently_unlike_the_shared_uniform_bug():
    cats = np.arange(6)
    mask = cats < 5
    weights = {1: 0.5, 2: 0.5}
    eps = 1.0
    ours = UtilityOptimizedBlockDesign(
        eps, sensitive=mask, subset_size=weights, categories=cats
    ).fit()
    assert check_uldp(ours)
    buggy = _shared_uniform_mixture_matrix(mask, weights, eps)
    assert np.allclose(buggy.sum(axis=1), 1.0)
    # Reusing the uniform correlates size and membership: given h = 1 (u <
    # 1/2), x is in T whenever u < P(x in T | h = 1) = 0.405, i.e. with
    # conditional probability 0.81 instead of 0.405, while another sensitive
    # x' rarely lands on {x}: the ratio reaches e^2.83 > e^1.
    check = check_uldp(
        buggy, sensitive=mask, epsilon=eps, protected=ours.channel_.protected_outputs()
    )
    assert not check.satisfied and check.worst_log_ratio > eps + 1


def test_ubd_rejects_bad_reports_and_parameters():
    cats = np.arange(6)
    mech = UtilityOptimizedBlockDesign(
        1.0, sensitive=cats < 4, subset_size=2, categories=cats
    ).fit()
    bad = np.zeros((1, 6), dtype=np.uint8)
    bad[0, :3] = 1  # three sensitive bits, h = 2
    with pytest.raises(ReportMismatchError):
        EmpiricalEstimator(mechanism=mech).fit(bad)
    with pytest.raises(ValueError, match="subset_size"):
        UtilityOptimizedBlockDesign(1.0, sensitive=cats < 4, subset_size=4, categories=cats).fit()
    with pytest.raises(ValueError, match="subset_size"):
        UtilityOptimizedBlockDesign(
            1.0, sensitive=cats < 4, subset_size={1: 0.5, 5: 0.5}, categories=cats
        ).fit()
    with pytest.raises(ValueError, match="positive weight"):
        UtilityOptimizedBlockDesign(
            1.0, sensitive=cats < 4, subset_size={1: 0}, categories=cats
        ).fit()
    mixed = UtilityOptimizedBlockDesign(
        1.0, sensitive=cats < 4, subset_size={1: 0.5, 2: 0.5}, categories=cats
    ).fit()
    bad = np.zeros((1, 6), dtype=np.uint8)
    bad[0, :3] = 1  # a 3-subset: not a size of the mixture
    with pytest.raises(ReportMismatchError):
        EmpiricalEstimator(mechanism=mixed).fit(bad)


def test_ubd_auto_subset_size_prefers_larger_h_at_low_epsilon():
    cats = np.arange(40)
    low = UtilityOptimizedBlockDesign(
        0.5, sensitive=cats < 30, subset_size="auto", categories=cats
    ).fit()
    high = UtilityOptimizedBlockDesign(
        5.0, sensitive=cats < 30, subset_size="auto", categories=cats
    ).fit()
    assert low.subset_size_ > high.subset_size_ >= 1
    assert low.subset_size_ == 12  # 86 million outputs: no matrix to check here
    # the ULDP definition on a domain whose channel matrix can be built
    small = np.arange(12)
    low = UtilityOptimizedBlockDesign(
        0.5, sensitive=small < 9, subset_size="auto", categories=small
    ).fit()
    assert low.subset_size_ == 4 and low.channel_.n_outputs == 129
    assert check_uldp(low.channel_.matrix(), sensitive=small < 9, epsilon=0.5)
    assert not check_uldp(low.channel_.matrix(), sensitive=small < 9, epsilon=0.45)


def test_ubd_samples_large_designs():
    cats = np.arange(300)
    mech = UtilityOptimizedBlockDesign(
        1.0,
        sensitive=cats < 200,
        subset_size=60,
        categories=cats,
        sparse_output=True,
        random_state=0,
    ).fit()
    X = np.random.default_rng(0).choice(300, size=(5000, 1))
    reports = mech.transform(X)
    row_s = reports[:, :200].sum(axis=1)
    assert set(np.unique(row_s)) <= {0, 60}
    est = EmpiricalEstimator().fit(reports)
    assert np.abs(est.distribution_.sum() - 1) < 0.2


# ---------------------------------------------------------------------- uOUE
def test_uoue_is_urap_with_theta_half():
    cats = list("abcdef")
    uoue = UtilityOptimizedOUE(1.5, sensitive=["a", "b"], categories=cats).fit()
    urap = UtilityOptimizedRAPPOR(1.5, sensitive=["a", "b"], theta=0.5, categories=cats).fit()
    assert uoue.channel_ == urap.channel_
    assert uoue.theta_ == 0.5
    assert np.allclose(uoue.channel_matrix(), urap.channel_matrix())
    assert check_uldp(uoue)
    assert "theta" not in uoue.get_params()


@pytest.mark.parametrize("dtype", [bool, np.int8])
def test_code_reports_stay_integer_whatever_the_input_dtype(dtype):
    # HR reports are output codes in [0, K): casting them to the input dtype
    # (bool, int8) would corrupt them. Category-label reports (RR) do keep it.
    from sklearn_uldp import HadamardResponse, RandomizedResponse

    cats = np.array([0, 1], dtype=dtype)
    X = np.array([[0], [1]] * 200, dtype=dtype)
    reports = HadamardResponse(1.0, categories=cats, random_state=0).fit_transform(X)
    assert reports.dtype == np.int64
    K = reports.channel.n_outputs
    assert set(np.unique(reports)) <= set(range(K)) and np.unique(reports).size > 2
    rr = RandomizedResponse(1.0, categories=cats, random_state=0).fit_transform(X)
    assert rr.dtype == np.dtype(dtype)
