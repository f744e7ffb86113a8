"""Statistical correctness of the estimators on every mechanism.

The structured computations of the channels (linear estimator, EM gradient,
likelihood) are compared with the same quantities computed naively from the
dense channel matrix ``channel.matrix()`` on small domains, and the
estimators with what mathematics §3 says they compute:

(a) the empirical estimator is unbiased -- exactly, in expectation
    (algebra on the exact channel), and in a Monte-Carlo z-test;
(b) chunked ``partial_fit`` equals one-shot ``fit`` exactly;
(c) EM reaches the maximum-likelihood estimate: KKT conditions, agreement
    with an independent dense-matrix EM within the duality-gap certificates;
(d) the threshold estimator on hand-computed examples;
(e) posteriors; (f) ``score``; (g) projections.
"""

import functools
import warnings

import numpy as np
import pytest
import scipy.linalg
from scipy import optimize, stats
from sklearn.base import clone

from sklearn_uldp import (
    RAPPOR,
    EMEstimator,
    EmpiricalEstimator,
    NonPrivate,
    RandomizedResponse,
    ReportMismatchError,
    ThresholdEstimator,
    UtilityOptimizedRAPPOR,
    UtilityOptimizedRR,
)
from sklearn_uldp.estimators import (
    clip_and_normalize,
    maximize_likelihood,
    project_to_simplex,
)
from sklearn_uldp.mechanisms import ReportStatistics, attach_channel, get_channel
from sklearn_uldp.mechanisms._randomized_response import (
    RandomizedResponseChannel,
    UtilityOptimizedRRChannel,
)
from sklearn_uldp.mechanisms._rappor import RAPPORChannel

ALPHA = 1e-6
K = 6
CATS = list(range(K))
P_TRUE = np.array([0.3, 0.25, 0.2, 0.15, 0.1, 0.0])
N_USERS = 5000

MECHANISMS = {
    "rr": lambda: RandomizedResponse(1.0, categories=CATS),
    "urr": lambda: UtilityOptimizedRR(1.0, sensitive=[0, 5], categories=CATS),
    "urr-s1": lambda: UtilityOptimizedRR(2.0, sensitive=[3], categories=CATS),
    "rappor": lambda: RAPPOR(1.0, categories=CATS),
    "oue": lambda: RAPPOR(2.0, theta=0.5, categories=CATS),
    "urap": lambda: UtilityOptimizedRAPPOR(1.0, sensitive=[0, 5], categories=CATS),
    "urap-theta": lambda: UtilityOptimizedRAPPOR(2.0, sensitive=[1], theta=0.3, categories=CATS),
    "urap-sparse": lambda: UtilityOptimizedRAPPOR(
        1.0, sensitive=[2, 4], theta=0.5, categories=CATS, sparse_output=True
    ),
    "identity": lambda: NonPrivate(categories=CATS),
}
NAMES = list(MECHANISMS)


def make_mechanism(name, random_state=0):
    mech = MECHANISMS[name]()
    if "random_state" in mech.get_params():
        mech.set_params(random_state=random_state)
    return mech.fit()


@functools.cache
def reports_of(name, n=N_USERS, seed=1):
    """(mechanism, reports) for n users drawn i.i.d. from P_TRUE (cached)."""
    mech = make_mechanism(name, random_state=seed)
    X = np.random.default_rng(seed).choice(K, p=P_TRUE, size=(n, 1))
    return mech, mech.transform(X)


def dense_outputs(channel, codes):
    """Column index of channel.matrix() of each encoded report."""
    if channel.report_format == "bits":
        bits = codes.toarray() if hasattr(codes, "toarray") else np.asarray(codes)
        return (bits.astype(np.int64) << np.arange(bits.shape[1])).sum(axis=1)
    return np.asarray(codes)


def dense_problem(name):
    """Channel, exact matrix Q, histogram of outputs, sufficient statistics."""
    mech, R = reports_of(name)
    channel = mech.channel_
    codes = channel.encode_reports(R)
    Q = channel.matrix()
    hist = np.bincount(dense_outputs(channel, codes), minlength=Q.shape[1])
    return channel, Q, hist, channel.statistics(codes, keep_reports=True), R


def dense_gradient(Q, hist, p):
    """g(x) = (1/n) sum_y h_y Q(y|x) / m(y) and sum_y h_y log m(y), densely."""
    seen = hist > 0
    m = p @ Q[:, seen]
    with np.errstate(divide="ignore"):
        ll = float(hist[seen] @ np.log(m))
        g = Q[:, seen] @ (hist[seen] / m) / hist.sum()
    return g, ll


def dense_em(Q, hist, *, gap=1e-12, max_iter=100_000):
    """Plain EM on the dense matrix, from the uniform distribution."""
    p = np.full(Q.shape[0], 1.0 / Q.shape[0])
    for _ in range(max_iter):
        g, ll = dense_gradient(Q, hist, p)
        if g.max() - 1 <= gap:
            break
        p = p * g
        p /= p.sum()
    return p, g.max() - 1.0, ll


def curvature(Q, hist, p):
    """Smallest eigenvalue of -Hessian(LL) on the tangent space of the simplex."""
    seen = hist > 0
    m = p @ Q[:, seen]
    H = (Q[:, seen] * (hist[seen] / m**2)) @ Q[:, seen].T
    B = scipy.linalg.null_space(np.ones((1, Q.shape[0])))
    return float(np.linalg.eigvalsh(B.T @ H @ B).min())


# ======================================================= (a) unbiasedness
# Pinned floats (tests/README.md): tolerances that hold on any processor.
# Structured and dense computations of one quantity sum in different orders
# (channel structure against BLAS products): 1e-12 where the terms are a few
# (a channel row, k categories), 1e-10 for gradients and log-likelihoods
# summed over the outputs or the reports; results of EM, which stops at a
# tolerance, are compared at 1e-9 or looser. Hand examples are closed forms
# (1e-12). An error in a formula moves these by far more (1e-3 and up).
@pytest.mark.pinned
@pytest.mark.parametrize("name", NAMES)
def test_expected_frequency_matches_dense_channel(name):
    channel = make_mechanism(name).channel_
    Q = channel.matrix()
    rng = np.random.default_rng(0)
    for p in [P_TRUE, rng.dirichlet(np.ones(K)), np.eye(K)[2]]:
        if channel.report_format == "bits":
            Y = channel.output_labels().astype(float)  # (2^k, k)
            m_dense = p @ Q @ Y  # E[bit j]
        else:
            m_dense = p @ Q  # E[1{y = x}]
        np.testing.assert_allclose(channel.expected_frequency(p), m_dense, rtol=1e-10, atol=1e-15)


@pytest.mark.pinned
@pytest.mark.parametrize("name", NAMES)
def test_unbiased_in_exact_expectation(name):
    """E[p_hat] = a * m(p) + b must be p, for any p (f is linear in the reports)."""
    channel = make_mechanism(name).channel_
    rng = np.random.default_rng(1)
    for p in [P_TRUE, *rng.dirichlet(np.full(K, 0.5), size=5), *np.eye(K)]:
        expected = channel.coef_a * channel.expected_frequency(p) + channel.coef_b
        np.testing.assert_allclose(expected, p, rtol=0, atol=1e-12)


def test_null_variance_matches_spec():
    n = 777
    E = np.exp(1.3)
    k = 5
    rr = RandomizedResponseChannel(range(k), 1.3)
    np.testing.assert_allclose(rr.null_variance(n), (k - 2 + E) / ((E - 1) ** 2 * n))
    S = np.array([True, False, True, False, False])
    urr = UtilityOptimizedRRChannel(range(k), 1.3, S)
    u = S.sum() + E - 1
    np.testing.assert_allclose(urr.null_variance(n), np.where(S, (u - 1) / ((E - 1) ** 2 * n), 0.0))
    for theta in (0.5, 0.3):
        ch = RAPPORChannel(range(k), 1.3, theta)
        d1 = theta / ((1 - theta) * E + theta)
        np.testing.assert_allclose(ch.null_variance(n), d1 * (1 - d1) / ((theta - d1) ** 2 * n))
    urap = make_mechanism("urap").channel_
    assert np.all(urap.null_variance(n)[~urap.sensitive_mask] == 0)


@pytest.mark.parametrize("name", NAMES)
def test_unbiased_monte_carlo(name):
    """One large sample: (p_hat - p) / sd is N(0, 1) per category."""
    n = 400_000
    mech = make_mechanism(name, random_state=77)
    channel = mech.channel_
    X = np.random.default_rng(5).choice(K, p=P_TRUE, size=(n, 1))
    p_hat = EmpiricalEstimator().fit(mech.transform(X)).distribution_
    sd = np.sqrt(channel.estimator_variance(P_TRUE, n))
    deterministic = sd == 0
    assert np.all(p_hat[deterministic] == P_TRUE[deterministic])
    z = (p_hat - P_TRUE)[~deterministic] / sd[~deterministic]
    assert np.all(2 * stats.norm.sf(np.abs(z)) > ALPHA / K), z
    # The same statistic rejects a biased estimator: the estimate of a channel
    # with epsilon off by 20% (what a wrong coef_a/coef_b would produce: a
    # bias of about 0.01 to 0.03 per category, 4 to 12 standard deviations).
    if isinstance(channel, (RandomizedResponseChannel,)):
        wrong = RandomizedResponseChannel(CATS, channel.epsilon * 1.2)
        stats_ = channel.statistics(channel.encode_reports(mech.transform(X)))
        p_bad = wrong.unbiased_estimate(ReportStatistics(wrong, stats_.n, stats_.counts))
        z_bad = (p_bad - P_TRUE) / sd
        assert np.any(2 * stats.norm.sf(np.abs(z_bad)) < ALPHA / K)


# ======================================================= (b) chunking
def split_reports(R, cuts):
    # slicing a scipy sparse array drops its attributes: re-attach the channel
    channel = get_channel(R)
    return [
        attach_channel(R[lo:hi], channel)
        for lo, hi in zip([0, *cuts], [*cuts, R.shape[0]], strict=True)
    ]


@pytest.mark.parametrize("name", NAMES)
def test_statistics_add_up(name):
    mech, R = reports_of(name)
    channel = mech.channel_
    whole = channel.statistics(channel.encode_reports(R), keep_reports=True)
    parts = [
        channel.statistics(channel.encode_reports(c), keep_reports=True)
        for c in split_reports(R, [1, 1000, 3333])
    ]
    total = parts[0] + parts[1] + parts[2] + parts[3]
    assert total.n == whole.n == N_USERS
    np.testing.assert_array_equal(total.counts, whole.counts)
    if whole.extra is not None:
        # the per-report store holds the same rows in the same blocks
        assert total.extra.n_rows == whole.extra.n_rows > 0
        np.testing.assert_array_equal(total.extra.row_sizes(), whole.extra.row_sizes())
        b = np.random.default_rng(0).random(whole.extra.n_cols)
        for x, y in zip(total.extra.em_terms(1.0, b), whole.extra.em_terms(1.0, b), strict=True):
            np.testing.assert_array_equal(x, y)
    # statistics of another mechanism do not add
    other = make_mechanism("rr" if name != "rr" else "urr").channel_
    foreign = ReportStatistics(other, 1, np.zeros(K, dtype=np.int64))
    with pytest.raises(ReportMismatchError):
        whole + foreign


ESTIMATORS = [
    EmpiricalEstimator(),
    EmpiricalEstimator(projection="simplex"),
    ThresholdEstimator(),
    EMEstimator(),
    EMEstimator(init="uniform", acceleration=None, tol=1e-4),
]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("est", ESTIMATORS, ids=repr)
def test_partial_fit_equals_fit_exactly(name, est):
    _, R = reports_of(name)
    one_shot = clone(est).fit(R)
    chunked = clone(est)
    for chunk in split_reports(R, [1, 17, 2500, 4999]):
        chunked.partial_fit(chunk)
    assert chunked.n_reports_ == one_shot.n_reports_ == N_USERS
    np.testing.assert_array_equal(chunked.distribution_, one_shot.distribution_)
    # fit() starts over: refitting on a chunk forgets the others
    refit = clone(est).fit(R).fit(split_reports(R, [100])[0])
    assert refit.n_reports_ == 100
    # statistics computed elsewhere and summed give the same estimate too
    channel = one_shot.channel_
    parts = [
        channel.statistics(channel.encode_reports(c), keep_reports=True)
        for c in split_reports(R, [2000])
    ]
    summed = clone(est).fit_statistics(parts[0] + parts[1])
    np.testing.assert_array_equal(summed.distribution_, one_shot.distribution_)


# ======================================================= (c) EM = MLE
@pytest.mark.pinned
@pytest.mark.parametrize("name", NAMES)
def test_em_gradient_matches_dense(name):
    channel, Q, hist, st, _ = dense_problem(name)
    rng = np.random.default_rng(3)
    for p in [np.full(K, 1 / K), rng.dirichlet(np.ones(K)), P_TRUE + 0.01]:
        p = p / p.sum()
        g, ll = channel.em_gradient(st, p)
        g_dense, ll_dense = dense_gradient(Q, hist, p)
        np.testing.assert_allclose(g, g_dense, rtol=1e-10)
        assert ll == pytest.approx(ll_dense, rel=1e-10)
        # sum_x p(x) g(x) = 1 identically
        assert p @ g == pytest.approx(1.0, rel=1e-10)


@pytest.mark.pinned
@pytest.mark.parametrize("name", NAMES)
def test_em_reaches_maximum_likelihood(name):
    channel, Q, hist, st, R = dense_problem(name)
    n = st.n
    tol = 1e-10
    em = EMEstimator(shrinkage=None, tol=tol).fit(R)
    p = em.distribution_
    assert em.converged_ and em.duality_gap_ <= tol
    assert np.all(p >= 0) and p.sum() == pytest.approx(1.0, abs=1e-12)
    # KKT at the estimate, with g from the channel's structured gradient
    g, ll = channel.em_gradient(st, p)
    assert g.max() <= 1 + tol
    support = p > 1e-8
    # sum p g = 1 and g <= 1 + tol  =>  p_x |g_x - 1| <= tol (for g_x < 1)
    assert np.all(np.abs(g[support] - 1) <= tol / p[support] + tol)
    assert np.all(np.abs(g[p > 1e-3] - 1) <= 1e-7)
    assert em.log_likelihood_ == pytest.approx(ll / n, rel=1e-10)

    # An independent optimizer: plain EM on the dense matrix. Both gaps are
    # certificates: LL* - LL(q) <= n * gap(q), so the two log-likelihoods
    # differ by at most n * (gap_em + gap_dense).
    p_dense, gap_dense, ll_dense = dense_em(Q, hist)
    gap_em = g.max() - 1
    assert ll_dense - ll <= n * max(gap_em, 0) + 1e-9 * abs(ll)
    assert ll - ll_dense <= n * max(gap_dense, 0) + 1e-9 * abs(ll)
    # ... and the points by the curvature of the log-likelihood (the MLE is
    # unique: every channel here has full row rank).
    lam = curvature(Q, hist, p)
    assert lam > 0
    bound = sum(np.sqrt(2 * n * max(gap, 1e-16) / lam) for gap in (gap_em, gap_dense))
    assert np.linalg.norm(p - p_dense) <= 2 * bound + 1e-12

    # The MLE beats every other point of the simplex, in particular the
    # emp+thr estimate (EM's own initialisation), the projected empirical
    # estimate and the truth.
    for q in (
        ThresholdEstimator().fit(R).distribution_,
        EmpiricalEstimator(projection="simplex").fit(R).distribution_,
        P_TRUE,
    ):
        assert channel.log_likelihood(st, q) <= ll + 1e-9 * abs(ll)


@pytest.mark.pinned
@pytest.mark.parametrize("name", NAMES)
def test_restricted_gradient_is_the_gradient_on_the_working_set(name):
    channel, Q, hist, st, _ = dense_problem(name)
    sensitive = channel.sensitive_mask if channel.report_format == "bits" else None
    rng = np.random.default_rng(4)
    for parity in (0, 1):
        # Leave out sensitive categories only: an invertible report of a
        # category outside the working set would have probability zero.
        active = np.ones(K, dtype=bool)
        if sensitive is not None:
            active[sensitive & (np.arange(K) % 2 == parity)] = False
        restricted = channel.restricted_em_gradient(st, active)
        if channel.report_format != "bits" or active.all():
            assert restricted is None  # nothing to gain
            continue
        m = int(active.sum())
        for q in [np.full(m, 1.0 / m), rng.dirichlet(np.ones(m))]:
            p = np.zeros(K)
            p[active] = q
            g, ll = channel.em_gradient(st, p)
            g_active, ll_active = restricted(q)
            np.testing.assert_allclose(g_active, g[active], rtol=1e-10)
            assert ll_active == pytest.approx(ll, rel=1e-10)
            assert np.isfinite(ll)


@functools.cache
def large_domain_reports(epsilon, theta, k=300, n=20_000, seed=0):
    rng = np.random.default_rng(0)
    X = rng.choice(k, size=(n, 1), p=rng.dirichlet(np.full(k, 0.3)))
    mech = RAPPOR(epsilon, theta=theta, categories=range(k), random_state=seed)
    return mech.fit(X).transform(X)


# Both stores: sparse rows (eps=4) and packed bits (OUE at eps=1). 5,000
# reports for the packed one: with 20,000 the full EM (no working sets)
# needs 5,400 steps at this budget (25 s), against 290 here.
@pytest.mark.pinned
@pytest.mark.parametrize("epsilon, theta, n", [(4.0, None, 20_000), (1.0, 0.5, 5_000)])
def test_em_on_working_sets_has_the_same_certificate(epsilon, theta, n):
    R = large_domain_reports(epsilon, theta, n=n)
    tol = 1e-6
    ws = EMEstimator(shrinkage=None, tol=tol).fit(R)
    full = EMEstimator(shrinkage=None, tol=tol, working_set=False).fit(R)
    # the working sets were used, and leave out a good part of the domain
    assert ws.working_sets_ and ws.working_sets_[0] < 0.7 * 300
    assert full.working_sets_ == []
    # the certificate holds over all categories, recomputed independently
    g, ll = ws.channel_.em_gradient(ws.statistics_, ws.distribution_)
    assert ws.converged_ and g.max() - 1 <= tol
    assert ws.duality_gap_ == pytest.approx(g.max() - 1, abs=1e-12)
    assert ws.log_likelihood_ == pytest.approx(ll / ws.n_reports_, rel=1e-10)
    # both are within their gaps of the maximum likelihood
    assert abs(ws.log_likelihood_ - full.log_likelihood_) <= 2 * tol


def test_em_readmits_categories_left_out_of_a_working_set():
    # Noise seed 1: with seed 0 the second working set holds 245 of the 300
    # categories, too many for the channel to restrict (it returns None),
    # and the readmission is done by the full EM instead.
    R = large_domain_reports(4.0, None, seed=1)
    k = 300
    ref = EMEstimator(shrinkage=None, tol=1e-8).fit(R)
    channel, stats, p_star = ref.channel_, ref.statistics_, ref.distribution_
    # Start above the maximum-likelihood value of small categories in its
    # support, with less than average mass: the first working set leaves
    # them out (EM lowers them), the optimality check brings them back.
    small = (p_star > 1e-4) & (p_star < 0.5 / k)
    assert small.sum() >= 5
    p0 = np.where(small, 0.9 / k, p_star)
    p0 = 0.99 * p0 / p0.sum() + 0.01 / k
    g0, _ = channel.em_gradient(stats, p0)
    first = (g0 > 1) | (p0 * g0 >= 1 / k)
    assert not first[small].any()
    p, info = maximize_likelihood(
        lambda q: channel.em_gradient(stats, q),
        p0,
        tol=1e-8,
        restrict=lambda active: channel.restricted_em_gradient(stats, active),
    )
    assert len(info["working_sets"]) >= 2 and info["converged"]
    assert info["working_sets"][0] == first.sum()
    assert np.all(p[small] > 1e-5)
    np.testing.assert_allclose(p, p_star, atol=1e-4)
    # A working-set function that is "no cheaper" (None) means all categories.
    p_all, info_all = maximize_likelihood(
        lambda q: channel.em_gradient(stats, q), p0, tol=1e-6, restrict=lambda active: None
    )
    assert info_all["working_sets"] == [] and info_all["converged"]


def test_em_agrees_with_softmax_bfgs():
    """A second independent optimizer for a categorical and a bit channel."""
    for name in ("urr", "urap-theta"):
        channel, Q, hist, st, R = dense_problem(name)
        seen = hist > 0

        def neg_ll(z, h=hist[seen], Qs=Q[:, seen]):
            p = np.exp(z - z.max())
            p /= p.sum()
            return -float(h @ np.log(p @ Qs))

        res = optimize.minimize(
            neg_ll, np.zeros(K), method="BFGS", options={"gtol": 1e-8, "maxiter": 5000}
        )
        em = EMEstimator(shrinkage=None, tol=1e-10).fit(R)
        ll_em = channel.log_likelihood(st, em.distribution_)
        # BFGS cannot beat the certified maximum ...
        assert -res.fun <= ll_em + st.n * em.duality_gap_ + 1e-9 * abs(ll_em)
        # ... and gets within its own tolerance of it
        assert ll_em + res.fun < 1e-4


@pytest.mark.parametrize("name", ["rr", "urr", "rappor", "urap", "urap-theta"])
def test_plain_em_and_squarem_agree(name):
    channel, Q, hist, st, R = dense_problem(name)
    tol = 1e-9
    fast = EMEstimator(shrinkage=None, tol=tol).fit(R)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # plain EM must converge too
        slow = EMEstimator(shrinkage=None, tol=tol, acceleration=None, max_iter=100_000).fit(R)
    assert fast.converged_ and slow.converged_
    assert fast.n_iter_ < slow.n_iter_
    n = st.n
    ll_fast = channel.log_likelihood(st, fast.distribution_)
    ll_slow = channel.log_likelihood(st, slow.distribution_)
    assert abs(ll_fast - ll_slow) <= n * tol + 1e-9 * abs(ll_fast)
    lam = curvature(Q, hist, fast.distribution_)
    bound = 2 * np.sqrt(2 * n * tol / lam)
    assert np.linalg.norm(fast.distribution_ - slow.distribution_) <= 2 * bound


@pytest.mark.parametrize(
    "init", ["uniform", "empirical", "threshold", [0.5, 0.1, 0.1, 0.1, 0.1, 0.1]]
)
def test_em_initialisations_reach_the_same_mle(init):
    channel, Q, hist, st, R = dense_problem("urap")
    ref = EMEstimator(shrinkage=None, tol=1e-10).fit(R)
    em = EMEstimator(shrinkage=None, tol=1e-10, init=init).fit(R)
    lam = curvature(Q, hist, ref.distribution_)
    bound = 2 * np.sqrt(2 * st.n * 1e-10 / lam)
    assert np.linalg.norm(em.distribution_ - ref.distribution_) <= 2 * bound


def test_em_warns_when_not_converged():
    _, R = reports_of("oue")
    with pytest.warns(Warning, match="duality gap"):
        em = EMEstimator(shrinkage=None, tol=1e-12, max_iter=2, acceleration=None).fit(R)
        assert not em.converged_ and em.n_iter_ == 2
        assert em.duality_gap_ > 1e-12


# ======================================================= (d) threshold
def hand_fit(channel, counts):
    counts = np.asarray(counts, dtype=np.int64)
    n = int(counts.sum()) if channel.report_format == "categorical" else 1000
    return ThresholdEstimator(alpha=0.05).fit_statistics(ReportStatistics(channel, n, counts))


@pytest.mark.pinned
def test_threshold_hand_example_rr():
    # k = 4, E = 3, n = 1000: p_hat = (6 m_hat - 1) / 2,
    # Var0 = (k - 2 + E) / ((E - 1)^2 n) = 5 / 4000,
    # T = Phi^-1(1 - 0.05/4) sqrt(5/4000) = 2.241402727604947 * 0.0353553...
    ch = RandomizedResponseChannel(range(4), np.log(3.0))
    T = 2.241402727604947 * np.sqrt(5 / 4000)
    assert T == pytest.approx(0.0792456, abs=1e-7)
    est = hand_fit(ch, [380, 270, 180, 170])  # p_hat = .64 .31 .04 .01
    np.testing.assert_allclose(est.threshold_, T, rtol=1e-10)
    np.testing.assert_array_equal(est.significant_, [True, True, False, False])
    # kept .64 + .31 = .95; the remaining .05 is spread over the two others
    np.testing.assert_allclose(est.distribution_, [0.64, 0.31, 0.025, 0.025], atol=1e-12)
    est = hand_fit(ch, [400, 300, 180, 120])  # p_hat = .7 .4 .04 -.14
    # kept mass 1.1 > 1: rescaled, the rest gets 0
    np.testing.assert_allclose(est.distribution_, [7 / 11, 4 / 11, 0, 0], atol=1e-12)


@pytest.mark.pinned
def test_threshold_hand_example_urr():
    # k = 4, X_S = {0, 1}, E = 3: u = 4, p_hat = (4 m - 1)/2 on S, 2 m on N;
    # Var0 = (u - 1)/((E - 1)^2 n) = 3/4000 on S and 0 on N.
    S = [True, True, False, False]
    ch = UtilityOptimizedRRChannel(range(4), np.log(3.0), S)
    T_S = 2.241402727604947 * np.sqrt(3 / 4000)
    est = hand_fit(ch, [300, 280, 240, 180])  # p_hat = .1 .06 .48 .36
    np.testing.assert_allclose(est.threshold_, [T_S, T_S, 0, 0], rtol=1e-10)
    assert T_S == pytest.approx(0.0613833, abs=1e-7)  # .06 is just below
    np.testing.assert_array_equal(est.significant_, [True, False, True, True])
    np.testing.assert_allclose(est.distribution_, [0.1, 0.06, 0.48, 0.36], atol=1e-12)
    est = hand_fit(ch, [300, 240, 280, 180])  # p_hat = .1 -.02 .56 .36
    np.testing.assert_allclose(est.distribution_, np.array([0.1, 0, 0.56, 0.36]) / 1.02, atol=1e-12)


@pytest.mark.pinned
def test_threshold_hand_example_oue():
    # OUE, k = 3, E = 3: d1 = 1/4, p_hat = 4 m_hat - 1, Var0 = 3 / n,
    # T = Phi^-1(1 - 0.05/3) sqrt(3/1000) = 2.128045234184983 * 0.0547723
    ch = RAPPORChannel(range(3), np.log(3.0), 0.5)
    T = 2.128045234184983 * np.sqrt(3 / 1000)
    est = hand_fit(ch, [400, 300, 255])  # bit counts, n = 1000
    np.testing.assert_allclose(est.threshold_, T, rtol=1e-10)
    # p_hat = .6 .2 .02: the last is not significant and receives 1 - .8
    np.testing.assert_allclose(est.distribution_, [0.6, 0.2, 0.2], atol=1e-12)


@pytest.mark.pinned
@pytest.mark.parametrize("alpha", [0.01, 0.05, 0.3])
def test_threshold_follows_definition(alpha):
    """On real reports: T(x) = Phi^-1(1 - alpha/k) sqrt(Var0(x)) and the rule."""
    for name in ("rr", "urr", "rappor", "urap", "identity"):
        _, R = reports_of(name)
        est = ThresholdEstimator(alpha=alpha).fit(R)
        ch = est.channel_
        T = stats.norm.ppf(1 - alpha / K) * np.sqrt(
            ch.null_variance(N_USERS, stats=est.statistics_)
        )
        np.testing.assert_allclose(est.threshold_, T, rtol=1e-10)
        p_hat = EmpiricalEstimator().fit(R).distribution_
        # exact categories (zero null variance, not sensitive) are always
        # kept; only categories with a positive threshold can be "below" it
        exact = ch.exact_categories
        kept = (p_hat > T) | exact
        below = ~kept & (T > 0)
        np.testing.assert_array_equal(est.significant_, kept)
        p = est.distribution_
        assert p.sum() == pytest.approx(1.0, abs=1e-12) and np.all(p >= 0)
        assert np.all(p[~kept & ~below] == 0)
        total = np.clip(p_hat[kept], 0, None).sum()
        if total <= 1 and below.any():
            np.testing.assert_allclose(p[kept], np.clip(p_hat[kept], 0, None), rtol=1e-10)
            np.testing.assert_allclose(p[below], (1 - total) / below.sum(), rtol=1e-10)
        else:
            np.testing.assert_allclose(p[kept], np.clip(p_hat[kept], 0, None) / total)
            assert np.all(p[~kept] == 0)


# ======================================================= (e) posteriors
def invertible_reports(channel, codes):
    """Mask of reports that reveal their input, and the input they reveal."""
    if channel.report_format == "bits":
        bits = codes.toarray() if hasattr(codes, "toarray") else np.asarray(codes)
        nbits = bits[:, ~channel.sensitive_mask]
        inv = nbits.any(axis=1)
        if not inv.any():
            return inv, np.zeros(inv.size, dtype=int)
        revealed = np.flatnonzero(~channel.sensitive_mask)[nbits.argmax(axis=1)]
        return inv, revealed
    codes = np.asarray(codes)
    return ~channel.sensitive_mask[codes], codes


@pytest.mark.pinned
@pytest.mark.parametrize("name", NAMES)
def test_predict_proba(name):
    channel, Q, hist, st, R = dense_problem(name)
    codes = channel.encode_reports(R)
    y = dense_outputs(channel, codes)
    thr = ThresholdEstimator().fit(R)
    p = thr.distribution_
    P = thr.predict_proba(R)
    assert P.shape == (N_USERS, K)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-12)
    # the dense posterior Q(y|x) p(x) / sum_x' Q(y|x') p(x')
    dense = Q[:, y].T * p
    dense /= dense.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(P, dense, rtol=1e-9, atol=1e-15)
    # invertible reports: one-hot at the revealed category
    inv, revealed = invertible_reports(channel, codes)
    if name == "identity":
        assert inv.all()
    np.testing.assert_array_equal(P[inv], np.eye(K)[revealed[inv]])
    # mean posterior = EM update p * g(p) (mathematics §3)
    g, _ = channel.em_gradient(st, p)
    np.testing.assert_allclose(P.mean(axis=0), p * g, rtol=1e-10, atol=1e-15)
    # at the EM fixed point the mean posterior is the estimate itself
    tol = 1e-10
    em = EMEstimator(shrinkage=None, tol=tol).fit(R)
    np.testing.assert_allclose(
        em.predict_proba(R).mean(axis=0), em.distribution_, rtol=0, atol=2 * tol
    )


# ======================================================= (f) score
@pytest.mark.pinned
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(
    "est", [EMEstimator(), EmpiricalEstimator(), ThresholdEstimator()], ids=repr
)
def test_score_is_mean_log_likelihood(name, est):
    channel, Q, hist, st, R = dense_problem(name)
    est = clone(est).fit(R)
    p = est.distribution_
    if not (np.all(p >= 0) and np.isclose(p.sum(), 1)):
        p = project_to_simplex(p)  # the documented likelihood point
    # held-out reports from the same mechanism
    mech, _ = reports_of(name)
    X_new = np.random.default_rng(9).choice(K, p=P_TRUE, size=(700, 1))
    for reports in (R, mech.transform(X_new)):
        y = dense_outputs(channel, channel.encode_reports(reports))
        with np.errstate(divide="ignore"):
            expected = np.mean(np.log(p @ Q[:, y]))
        score = est.score(reports)
        if np.isinf(expected):
            assert score == expected
        else:
            assert score == pytest.approx(expected, rel=1e-10)


# ======================================================= (g) projection
def euclidean_projection_qp(v):
    """Reference: minimise ||x - v||^2 over the simplex with SLSQP."""
    k = v.size
    res = optimize.minimize(
        lambda x: np.sum((x - v) ** 2),
        np.full(k, 1 / k),
        jac=lambda x: 2 * (x - v),
        method="SLSQP",
        bounds=[(0, None)] * k,
        constraints=[{"type": "eq", "fun": lambda x: x.sum() - 1, "jac": lambda x: np.ones(k)}],
        options={"ftol": 1e-14, "maxiter": 500},
    )
    return res.x


@pytest.mark.pinned
def test_project_to_simplex_is_euclidean_projection():
    rng = np.random.default_rng(4)
    vectors = [rng.normal(0.2, 0.5, size=k) for k in (1, 2, 3, 7, 20) for _ in range(4)]
    vectors += [
        np.array([0.7, 0.5, -0.2]),
        np.array([0.25, 0.25, 0.25, 0.25]),
        np.array([-1.0, -1.0, -1.0]),
        np.array([5.0, 0.0, 0.0]),
    ]
    for v in vectors:
        p = project_to_simplex(v)
        assert np.all(p >= 0) and p.sum() == pytest.approx(1.0, abs=1e-12)
        # KKT: v - p is a constant tau on the support and v <= tau off it
        support = p > 0
        tau = (v - p)[support]
        assert np.ptp(tau) <= 1e-12
        assert np.all(v[~support] <= tau[0] + 1e-12)
        np.testing.assert_allclose(p, euclidean_projection_qp(v), atol=1e-6)
        # shift invariance, idempotence
        np.testing.assert_allclose(project_to_simplex(v + 3.0), p, atol=1e-12)
        np.testing.assert_allclose(project_to_simplex(p), p, atol=1e-12)
    np.testing.assert_allclose(project_to_simplex([0.7, 0.5, -0.2]), [0.6, 0.4, 0.0])
    with pytest.raises(ValueError):
        project_to_simplex([0.5, np.nan])


@pytest.mark.parametrize("scale", [1e4, 1e6, 1e8, 1e300])
def test_project_to_simplex_sums_to_one_at_huge_magnitudes(scale):
    # HR at epsilon = 1e-6 and k = 1e5 gives unbiased estimates of size ~1e6:
    # the cumulative sums of the textbook algorithm lost the digits that
    # matter (sums of 0.992 and 1 - 5e-6 before the fix).
    rng = np.random.default_rng(0)
    k = 100_000
    v = scale * (rng.random(k) - 0.5)
    v[:1000] = scale + rng.random(1000) * 0.01  # a support of ~1000 entries
    p = project_to_simplex(v)
    assert abs(p.sum() - 1.0) <= 1e-12 and np.all(p >= 0)
    assert 1 <= (p > 0).sum() <= 1000
    # KKT on the support, up to the rounding of the input itself
    support = p > 0
    tau = (v - p)[support]
    assert np.ptp(tau) <= 1e-15 * scale * 8
    # shift to a moderate scale: the same projection
    np.testing.assert_allclose(p, project_to_simplex(v - scale), atol=1e-9)
    assert abs(project_to_simplex(np.array([scale, -scale, 0.0])).sum() - 1) == 0


def test_empirical_simplex_projection_sums_to_one_for_hr_at_tiny_epsilon():
    # Issue: EmpiricalEstimator(projection="simplex") summed to 0.992 for HR
    # at epsilon = 1e-6 and k = 1e5, whose unbiased estimates are ~2e6 in size.
    from sklearn_uldp import HadamardResponse

    k = 100_000
    channel = HadamardResponse(1e-6, categories=np.arange(k)).fit().channel_
    counts = np.zeros(channel.n_outputs, dtype=np.int64)
    counts[np.random.default_rng(0).integers(0, channel.n_outputs, size=7)] += 1
    stats_ = ReportStatistics(channel, int(counts.sum()), counts)
    est = EmpiricalEstimator(projection="simplex").fit_statistics(stats_)
    p = est.distribution_
    assert np.abs(est.unbiased_distribution_).max() > 1e6
    assert abs(p.sum() - 1.0) <= 1e-12 and np.all(p >= 0) and (p > 0).sum() > 100


def test_clip_and_normalize():
    np.testing.assert_allclose(clip_and_normalize([0.7, 0.5, -0.2]), [0.7 / 1.2, 0.5 / 1.2, 0.0])
    np.testing.assert_allclose(clip_and_normalize([-0.1, -0.2]), [0.5, 0.5])
    np.testing.assert_allclose(clip_and_normalize([0.2, 0.2]), [0.5, 0.5])


@pytest.mark.parametrize("name", ["rr", "urr", "oue", "urap"])
def test_empirical_projection_options(name):
    _, R = reports_of(name)
    raw = EmpiricalEstimator().fit(R)
    unbiased = raw.distribution_
    np.testing.assert_array_equal(raw.unbiased_distribution_, unbiased)
    simplex = EmpiricalEstimator(projection="simplex").fit(R)
    np.testing.assert_array_equal(simplex.unbiased_distribution_, unbiased)
    np.testing.assert_allclose(simplex.distribution_, project_to_simplex(unbiased))
    clip = EmpiricalEstimator(projection="clip").fit(R)
    c = np.clip(unbiased, 0, None)
    np.testing.assert_allclose(clip.distribution_, c / c.sum())
    # the Euclidean projection is never farther (l2) from the unbiased estimate
    assert (
        np.linalg.norm(simplex.distribution_ - unbiased)
        <= np.linalg.norm(clip.distribution_ - unbiased) + 1e-15
    )
