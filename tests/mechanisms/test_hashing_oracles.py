"""Local hashing (OLH, BLH), subset selection and Apple's count-mean sketches.

Each mechanism is checked against its exact channel: LDP of the matrix, the
sampler against the matrix rows (with a deliberately wrong sampler that the
same test rejects), the EM gradient against a brute-force computation from
the matrix, the unbiasedness and the variance formula of the linear
estimator, every estimator, the spec, the audit and sklearn clone/pickle.
"""

import pickle

import numpy as np
import pytest
from _channels import CountingGenerator, output_index
from _chisquare import chi_square_pvalue
from scipy import stats as sps
from sklearn.base import clone

from sklearn_uldp import EMEstimator, EmpiricalEstimator, ThresholdEstimator
from sklearn_uldp.exceptions import InvalidSpecError, ReportMismatchError
from sklearn_uldp.mechanisms import Channel
from sklearn_uldp.mechanisms._count_mean_sketch import (
    CountMeanSketch,
    CountMeanSketchChannel,
    HadamardCountMeanSketch,
    HadamardCountMeanSketchChannel,
)
from sklearn_uldp.mechanisms._local_hashing import (
    BinaryLocalHashing,
    LocalHashingChannel,
    OptimizedLocalHashing,
    optimal_hash_range,
)
from sklearn_uldp.mechanisms._subset_selection import (
    SubsetSelection,
    SubsetSelectionChannel,
    optimal_subset_size,
)
from sklearn_uldp.privacy import audit_mechanism, check_ldp
from sklearn_uldp.utils._hashing import (
    MERSENNE_61,
    hash_parameters,
    linear_hash,
    linear_hash_table,
    mersenne_hash,
    premix,
)

CATS = list(range(5))

# Small settings whose exact channel is a small matrix.
SMALL = {
    "olh": lambda eps=1.0: OptimizedLocalHashing(eps, hash_range=3, categories=CATS),
    "olh_opt": lambda eps=1.0: OptimizedLocalHashing(eps, categories=CATS),
    "blh": lambda eps=1.0: BinaryLocalHashing(eps, categories=CATS),
    "ss": lambda eps=1.0: SubsetSelection(eps, subset_size=2, categories=CATS),
    "cms": lambda eps=1.0: CountMeanSketch(eps, n_buckets=3, n_hashes=2, categories=CATS),
    "hcms": lambda eps=1.0: HadamardCountMeanSketch(eps, n_buckets=4, n_hashes=3, categories=CATS),
}


def _fitted(name, eps=1.0, random_state=0):
    return SMALL[name](eps).set_params(random_state=random_state).fit()


# ------------------------------------------------------------------ hashing
def test_linear_hash_collides_exactly_one_in_g():
    for g, r, k in [(2, 4, 16), (3, 3, 27), (5, 2, 25)]:
        T = linear_hash_table(g, r, k).astype(int)
        assert np.array_equal(T, linear_hash(np.arange(g**r)[:, None], np.arange(k)[None, :], g, r))
        collide = (T[:, :, None] == T[:, None, :]).mean(axis=0)
        off = collide[~np.eye(k, dtype=bool)]
        assert np.allclose(off, 1.0 / g)  # exactly 1/g for every pair


def test_mersenne_hash_matches_python_integers():
    rng = np.random.default_rng(0)
    a, b = hash_parameters(7, 200)
    x = rng.integers(0, 2**61 - 1, size=200, dtype=np.int64)
    got = mersenne_hash(a, b, x, 1021)
    want = [
        ((int(ai) * int(xi) + int(bi)) % MERSENNE_61) % 1021
        for ai, bi, xi in zip(a, b, x, strict=True)
    ]
    assert got.tolist() == want
    assert np.unique(premix(np.arange(10_000))).size == 10_000


def test_mersenne_family_is_universal_on_average():
    # Over many functions, a pair of codes collides about 1/m of the time.
    a, b = hash_parameters(3, 20_000)
    x = premix(np.array([0, 1, 2]))
    h = mersenne_hash(a[:, None], b[:, None], x[None, :], 16)
    for i, j in [(0, 1), (1, 2), (0, 2)]:
        rate = np.mean(h[:, i] == h[:, j])
        assert abs(rate - 1 / 16) < 4 * np.sqrt(1 / 16 / 20_000)


# ------------------------------------------------------------------ privacy
@pytest.mark.parametrize("name", list(SMALL))
@pytest.mark.parametrize("eps", [0.5, 1.0, 4.0])
def test_exact_channel_is_ldp(name, eps):
    mech = _fitted(name, eps)
    Q = mech.channel_matrix()
    assert np.allclose(Q.sum(axis=1), 1.0)
    assert check_ldp(mech).satisfied
    col_max, col_min = Q.max(axis=0), Q.min(axis=0)
    assert np.all(col_max <= np.exp(eps) * col_min * (1 + 1e-9))
    # the budget is tight: some column attains e^eps (m >= 2 for sketches)
    assert np.max(col_max / col_min) > np.exp(eps) * (1 - 1e-6)
    assert check_ldp(_leaky(Q, eps), eps).satisfied is False


def _leaky(Q, eps):
    """Q with one entry made too likely (the check must notice)."""
    bad = Q.copy()
    bad[0, np.argmax(Q[0] / Q.min(axis=0))] *= 1.5
    return bad / bad.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("name", list(SMALL))
def test_audit_passes(name):
    mech = _fitted(name, 1.0)
    result = audit_mechanism(mech, n_samples=20_000, random_state=0)
    assert result.passed, result.summary()


# ---------------------------------------------------------------- samplers
@pytest.mark.parametrize("name", list(SMALL))
def test_sampler_matches_exact_channel(name):
    mech = _fitted(name, 1.0)
    channel = mech.channel_
    Q = channel.matrix()
    for x in [0, 3]:
        reports = mech.transform(np.full((60_000, 1), x))
        counts = np.bincount(output_index(channel, reports), minlength=Q.shape[1])
        assert chi_square_pvalue(counts, Q[x]) > 1e-4


@pytest.mark.parametrize("name", ["olh", "blh", "hcms"])
def test_a_wrong_sampler_fails_the_sampler_test(name, monkeypatch):
    # The same test rejects a sampler that ignores a collision: it hashes with
    # the next seed (a different, but equally uniform, hash function).
    mech = _fitted(name, 1.0)
    channel = mech.channel_
    Q = channel.matrix()
    original = type(channel).hash

    def wrong_hash(self, seeds, codes):
        n_seeds = getattr(self, "n_seeds", None) or self.n_hashes
        return original(self, (np.asarray(seeds) + 1) % n_seeds, codes)

    monkeypatch.setattr(type(channel), "hash", wrong_hash)
    reports = mech.transform(np.full((60_000, 1), 3))
    counts = np.bincount(output_index(channel, reports), minlength=Q.shape[1])
    assert chi_square_pvalue(counts, Q[3]) < 1e-6


def test_a_wrong_subset_sampler_fails_the_sampler_test(monkeypatch):
    # Including the true value with the probability of k-RR instead of the
    # d-subset's (a plausible bug) is rejected by the same test.
    mech = _fitted("ss", 1.0)
    channel = mech.channel_
    Q = channel.matrix()
    k = channel.n_categories
    monkeypatch.setattr(channel, "keep", np.e / (np.e + k - 1))
    reports = mech.transform(np.full((60_000, 1), 3))
    counts = np.bincount(output_index(channel, reports), minlength=Q.shape[1])
    assert chi_square_pvalue(counts, Q[3]) < 1e-6


@pytest.mark.parametrize("k,d", [(40, 1), (40, 2), (40, 15), (40, 30), (9, 4)])
def test_subset_sampler_sizes_and_uniform_others(k, d):
    channel = SubsetSelectionChannel(list(range(k)), 1.0, d)
    rng = np.random.default_rng(0)
    codes = np.full(40_000, 5)
    bits = channel.sample(codes, rng)
    assert (bits.sum(axis=1) == d).all()
    keep = bits[:, 5].mean()
    assert abs(keep - channel.keep) < 5 * np.sqrt(channel.keep * (1 - channel.keep) / 40_000)
    # the other columns are exchangeable: each is in the set equally often
    others = np.delete(bits, 5, axis=1).sum(axis=0)
    assert sps.chisquare(others).pvalue > 1e-4
    # exactly: P(other in S) = channel.other
    assert abs(others.mean() / 40_000 - channel.other) < 5e-3


def _ss_kernels():
    from sklearn_uldp.mechanisms import _subset_selection

    return ["numpy"] + (["numba"] if getattr(_subset_selection, "numba", None) else [])


def _subset_joint_pvalue(channel, x, n=60_000, seed=0):
    Q = channel.matrix()
    reports = channel.sample(np.full(n, x), np.random.default_rng(seed))
    counts = np.bincount(output_index(channel, reports), minlength=Q.shape[1])
    return chi_square_pvalue(counts, Q[x])


@pytest.mark.parametrize("kernel", _ss_kernels())
@pytest.mark.parametrize("k,d", [(7, 3), (8, 4), (6, 5), (9, 1)])
def test_subset_sampler_joint_distribution(kernel, k, d, monkeypatch):
    # The whole report (which d-subset), not only its margins, follows the
    # channel's row, with either kernel, for small and large d / k.
    from sklearn_uldp.mechanisms import _subset_selection

    monkeypatch.setattr(_subset_selection, "_KERNEL", kernel, raising=False)
    channel = SubsetSelectionChannel(list(range(k)), 1.0, d)
    for x in (0, k // 2, k - 1):
        assert _subset_joint_pvalue(channel, x) > 1e-4


def test_a_wrong_floyd_step_fails_the_subset_sampler_test(monkeypatch):
    # Floyd's algorithm with the classic off-by-one (t drawn below j rather
    # than up to j) keeps the sizes and looks plausible; the joint test
    # rejects it.
    from sklearn_uldp.mechanisms import _subset_selection

    def wrong(out, codes, include, d, rng):
        m, k = out.shape
        need = d - include.astype(np.intp)
        rows = np.arange(m)
        for s in range(d):
            j = k - 1 - d + s
            act = rows[need >= d - s]
            code = codes[act]
            t = rng.integers(0, max(j, 1), size=act.size)
            cat = t + (t >= code)
            cat = np.where(out[act, cat] != 0, j + (j >= code), cat)
            out[act, cat] = 1
        out[rows, codes] = include

    monkeypatch.setattr(_subset_selection, "_KERNEL", "numpy")
    monkeypatch.setattr(_subset_selection, "_fill_subsets_numpy", wrong)
    channel = SubsetSelectionChannel(list(range(8)), 1.0, 4)
    assert _subset_joint_pvalue(channel, 3) < 1e-6


@pytest.mark.parametrize("kernel", _ss_kernels())
def test_subset_sampler_draws_order_n_d_random_numbers(kernel, monkeypatch):
    # A report is k bits, but drawing it needs only about d random integers:
    # the sampler must not draw one (or more) random number per user and
    # category, which made it 1-17 times only as fast as per-user Python code
    # at n = 10^6, k = 1000.
    from sklearn_uldp.mechanisms import _subset_selection

    monkeypatch.setattr(_subset_selection, "_KERNEL", kernel, raising=False)
    k, d, n = 400, 100, 5000
    channel = SubsetSelectionChannel(list(range(k)), 1.0, d)
    rng = CountingGenerator(0)
    bits = channel.sample(np.arange(n) % k, rng)
    assert (bits.sum(axis=1) == d).all()
    assert rng.bits <= 64 * n * (d + 2)


def test_subset_sampler_is_reproducible():
    X = np.random.default_rng(1).integers(0, 50, size=(3000, 1))
    mech = SubsetSelection(0.5, categories=range(50), random_state=7)
    assert np.array_equal(mech.fit_transform(X), clone(mech).fit_transform(X))
    fresh = SubsetSelection(0.5, categories=range(50), random_state=None).fit(X)
    assert not np.array_equal(fresh.transform(X), fresh.transform(X))


def test_sparse_subset_reports_match_dense():
    mech = SubsetSelection(1.0, categories=range(30), random_state=0)
    X = np.random.default_rng(0).integers(0, 30, size=(2000, 1))
    dense = mech.fit(X).transform(X)
    sparse = clone(mech).set_params(sparse_output=True).fit(X).transform(X)
    assert np.array_equal(np.asarray(dense), sparse.toarray())
    assert np.allclose(
        EMEstimator().fit(dense).distribution_, EMEstimator().fit(sparse).distribution_
    )


# ------------------------------------------------------------- estimation
def _brute_em_gradient(channel, reports, p):
    Q = channel.matrix()
    L = Q[:, output_index(channel, reports)].T
    den = L @ p
    return (L / den[:, None]).mean(axis=0), float(np.log(den).sum())


# Pinned floats (tests/README.md): tolerances that hold on any processor.
# The EM gradient and log-likelihood against the matrix (sums over the
# reports in another order): 1e-9; variances (closed forms): 1e-12.
@pytest.mark.pinned
@pytest.mark.parametrize("name", list(SMALL))
def test_em_gradient_and_likelihood_match_the_matrix(name):
    mech = _fitted(name, 1.0)
    channel = mech.channel_
    X = np.random.default_rng(1).integers(0, 5, size=(3000, 1))
    reports = mech.transform(X)
    codes = channel.encode_reports(reports)
    stats = channel.statistics(codes, keep_reports=True)
    p = np.array([0.1, 0.2, 0.3, 0.25, 0.15])
    g, ll = channel.em_gradient(stats, p)
    g_ref, ll_ref = _brute_em_gradient(channel, reports, p)
    assert np.allclose(g, g_ref, rtol=1e-9)
    assert ll == pytest.approx(ll_ref, rel=1e-9)
    L = channel.likelihood(codes)
    L_ref = channel.matrix()[:, output_index(channel, reports)].T
    assert np.allclose(L / L.sum(axis=1, keepdims=True), L_ref / L_ref.sum(axis=1, keepdims=True))


@pytest.mark.parametrize("name", list(SMALL))
def test_statistics_add_up(name):
    mech = _fitted(name, 1.0)
    channel = mech.channel_
    X = np.random.default_rng(2).integers(0, 5, size=(3000, 1))
    codes = channel.encode_reports(mech.transform(X))
    whole = channel.statistics(codes, keep_reports=True)
    if isinstance(codes, tuple):
        parts = [tuple(c[:1000] for c in codes), tuple(c[1000:] for c in codes)]
    else:
        parts = [codes[:1000], codes[1000:]]
    total = channel.statistics(parts[0], keep_reports=True) + channel.statistics(
        parts[1], keep_reports=True
    )
    assert total.n == whole.n and np.array_equal(total.counts, whole.counts)
    p = np.full(5, 0.2)
    assert np.allclose(channel.em_gradient(total, p)[0], channel.em_gradient(whole, p)[0])


@pytest.mark.parametrize("name", ["olh", "olh_opt", "blh", "ss"])
def test_linear_estimator_is_unbiased_with_the_exact_variance(name):
    # Mean over seeds within a few standard errors; Monte Carlo variance
    # against estimator_variance.
    mech = SMALL[name](1.0)
    p = np.array([0.4, 0.3, 0.15, 0.1, 0.05])
    n, runs = 4000, 200
    X = np.repeat(np.arange(5), (p * n).astype(int))[:, None]
    mech.set_params(random_state=0).fit()
    channel = mech.channel_
    assert np.allclose(channel.coef_a * channel.expected_frequency(p) + channel.coef_b, p)
    # expected_frequency is the exact mean of the statistic under the matrix
    if not isinstance(channel, SubsetSelectionChannel):
        Q = channel.matrix()
        support = np.stack(
            [
                channel.observed_frequency(type("S", (), {"counts": Q[x] * 1.0, "n": 1.0})())
                for x in range(5)
            ]
        )
        assert np.allclose(p @ support, channel.expected_frequency(p))
    estimates = []
    for seed in range(runs):
        mech.set_params(random_state=seed)
        codes = channel.encode_reports(mech.transform(X))
        estimates.append(channel.unbiased_estimate(channel.statistics(codes)))
    estimates = np.array(estimates)
    var = channel.estimator_variance(p, n)
    se = np.sqrt(var / runs)
    assert np.all(np.abs(estimates.mean(axis=0) - p) < 4.5 * se)
    # sample variance vs formula (chi-square with runs - 1 d.o.f., wide band;
    # the sample is fixed, so the formula's n users i.i.d. overstates the
    # variance of the true-value part: compare the conditional variance)
    cond = channel.coef_a**2 * _conditional_binomial_variance(channel, p, n)
    ratio = estimates.var(axis=0, ddof=1) / cond
    assert np.all((ratio > 0.7) & (ratio < 1.4))
    assert np.all(var >= cond - 1e-15)


def _conditional_binomial_variance(channel, p, n):
    """Var of the statistic's frequency for a fixed sample with frequencies p."""
    total = np.zeros(channel.n_categories)
    for x in range(channel.n_categories):
        onehot = np.eye(channel.n_categories)[x]
        m = channel.expected_frequency(onehot)
        total += p[x] * m * (1 - m)
    return total / n


@pytest.mark.parametrize("name", ["cms", "hcms"])
def test_sketch_estimator_is_unbiased_over_hash_functions(name):
    # For fixed functions the estimate is biased by collisions (computed
    # exactly by collision_bias); over the hash seed it is unbiased.
    k = 12
    p = np.linspace(1, 3, k)
    p /= p.sum()
    cls = CountMeanSketchChannel if name == "cms" else HadamardCountMeanSketchChannel
    biases = np.array([cls(range(k), 1.0, 8, 4, seed).collision_bias(p) for seed in range(400)])
    se = biases.std(axis=0, ddof=1) / np.sqrt(400)
    assert np.all(np.abs(biases.mean(axis=0)) < 4.5 * se)
    # and the sampled estimate has the exact mean for fixed functions
    mech = (CountMeanSketch if name == "cms" else HadamardCountMeanSketch)(
        1.0, n_buckets=8, n_hashes=4, categories=range(k)
    )
    mech.fit()
    channel = mech.channel_
    X = np.repeat(np.arange(k), np.round(p * 6000).astype(int))[:, None]
    p_emp = np.bincount(X.ravel(), minlength=k) / X.shape[0]
    estimates = []
    for seed in range(100):
        mech.set_params(random_state=seed)
        codes = channel.encode_reports(mech.transform(X))
        estimates.append(channel.unbiased_estimate(channel.statistics(codes)))
    mean = np.array(estimates).mean(axis=0)
    want = channel.coef_a * channel.exact_expected_frequency(p_emp) + channel.coef_b
    se = np.sqrt(channel.estimator_variance(p_emp, X.shape[0]) / 100)
    assert np.all(np.abs(mean - want) < 4.5 * se)


@pytest.mark.parametrize("name", list(SMALL))
@pytest.mark.parametrize("estimator", [EmpiricalEstimator, ThresholdEstimator, EMEstimator])
def test_every_estimator_works(name, estimator):
    mech = _fitted(name, 2.0)
    if name in ("cms", "hcms"):
        # sketches of a useful size (the tiny ones of SMALL collide a lot)
        mech.set_params(n_buckets=16, n_hashes=32).fit()
    p = np.array([0.5, 0.2, 0.15, 0.1, 0.05])
    X = np.random.default_rng(3).choice(5, p=p, size=(40_000, 1))
    kwargs = {"projection": "simplex"} if estimator is EmpiricalEstimator else {}
    est = estimator(**kwargs).fit(mech.transform(X))
    assert est.distribution_.shape == (5,)
    assert np.isclose(est.distribution_.sum(), 1.0)
    assert np.all(est.distribution_ >= 0)
    assert np.abs(est.distribution_ - p).max() < 0.05


@pytest.mark.parametrize("name", list(SMALL))
def test_posteriors(name):
    mech = _fitted(name, 2.0)
    X = np.random.default_rng(4).integers(0, 5, size=(500, 1))
    est = EMEstimator().fit(mech.transform(X))
    proba = est.predict_proba(mech.transform(X[:20]))
    assert proba.shape == (20, 5) and np.allclose(proba.sum(axis=1), 1.0)


def test_em_with_a_larger_domain():
    # k = 200, OLH: EM's products never touch an n x k table.
    rng = np.random.default_rng(5)
    p = rng.dirichlet(np.full(200, 0.3))
    X = rng.choice(200, p=p, size=(200_000, 1))
    mech = OptimizedLocalHashing(2.0, categories=range(200), random_state=0)
    est = EMEstimator().fit(mech.fit_transform(X))
    assert 0.5 * np.abs(est.distribution_ - p).sum() < 0.15


# ------------------------------------------------------------- specs, sklearn
@pytest.mark.parametrize("name", list(SMALL))
def test_spec_round_trip(name):
    mech = _fitted(name)
    spec = mech.spec()
    assert spec["spec_version"] == 1
    channel = Channel.from_json(mech.channel_.to_json())
    assert channel == mech.channel_
    assert np.allclose(channel.matrix(), mech.channel_matrix())


@pytest.mark.parametrize(
    "spec, match",
    [
        ({"mechanism": "olh", "categories": [0, 1], "epsilon": 1.0, "hash_range": 4}, "prime"),
        ({"mechanism": "olh", "categories": [0, 1], "epsilon": 1.0, "hash_range": 2.0}, "integer"),
        (
            {"mechanism": "ss", "categories": [0, 1, 2], "epsilon": 1.0, "subset_size": 3},
            "subset_size",
        ),
        (
            {
                "mechanism": "hcms",
                "categories": [0, 1],
                "epsilon": 1.0,
                "n_buckets": 6,
                "n_hashes": 2,
            },
            "power of two",
        ),
        (
            {
                "mechanism": "cms",
                "categories": [0, 1],
                "epsilon": 1.0,
                "n_buckets": 8,
                "n_hashes": 0,
            },
            "n_hashes",
        ),
        ({"mechanism": "blh", "categories": [0, 1], "epsilon": -1.0}, "epsilon"),
    ],
)
def test_invalid_specs_are_refused(spec, match):
    with pytest.raises(InvalidSpecError, match=match):
        Channel.from_dict(spec)


@pytest.mark.parametrize("name", list(SMALL))
def test_clone_and_pickle(name):
    mech = _fitted(name)
    X = np.random.default_rng(6).integers(0, 5, size=(100, 1))
    reports = mech.transform(X)
    again = pickle.loads(pickle.dumps(reports))
    assert again.channel == mech.channel_
    assert np.array_equal(np.asarray(again), np.asarray(reports))
    twin = clone(mech).fit()
    assert twin.channel_ == mech.channel_
    restored = pickle.loads(pickle.dumps(mech))
    assert restored.channel_ == mech.channel_
    assert restored.transform(X).shape == reports.shape


def test_reports_of_another_mechanism_are_refused():
    olh = _fitted("olh")
    with pytest.raises(ReportMismatchError):
        olh.channel_.encode_reports(np.array([olh.channel_.n_outputs]))
    ss = _fitted("ss")
    bad = np.zeros((3, 5), dtype=np.uint8)
    bad[:, 0] = 1
    with pytest.raises(ReportMismatchError, match="subset_size"):
        ss.channel_.statistics(ss.channel_.encode_reports(bad))
    cms = _fitted("cms")
    with pytest.raises(ReportMismatchError):
        cms.channel_.encode_reports(np.array([[7, 0, 1, 0]]))


def test_optimal_parameters():
    # OLH: a prime near e^eps + 1 within 3% of the optimum of Wang et al.
    for eps in [0.5, 1.0, 2.0, 4.0]:
        g = optimal_hash_range(eps, 1000)
        ch = LocalHashingChannel(list(range(1000)), eps, g)
        ideal = 4 * np.exp(eps) / (np.exp(eps) - 1) ** 2
        assert ch.null_variance(1)[0] <= 1.03 * ideal
    # SS: d about k / (e^eps + 1), and d = 1 is k-RR
    assert abs(optimal_subset_size(1.0, 1000) - 1000 / (np.e + 1)) <= 2
    from sklearn_uldp.mechanisms import RandomizedResponseChannel

    ss = SubsetSelectionChannel(CATS, 1.0, 1)
    assert np.allclose(
        ss.matrix()
        @ np.eye(5)[[int(np.log2(v)) for v in (ss.output_labels() @ (1 << np.arange(5)))]],
        RandomizedResponseChannel(CATS, 1.0).matrix(),
    )


def test_report_bits():
    assert LocalHashingChannel(list(range(100)), 1.0, 3).report_bits == pytest.approx(np.log2(3**6))
    assert SubsetSelectionChannel(CATS, 1.0, 2).report_bits == 5
    assert CountMeanSketchChannel(CATS, 1.0, 64, 16).report_bits == 68
    assert HadamardCountMeanSketchChannel(CATS, 1.0, 64, 16).report_bits == 11


def test_subset_restricted_em_gradient_matches_the_full_one():
    mech = SubsetSelection(1.0, categories=range(20), random_state=0)
    X = np.random.default_rng(7).integers(0, 20, size=(3000, 1))
    channel = mech.fit(X).channel_
    stats = channel.statistics(channel.encode_reports(mech.transform(X)), keep_reports=True)
    active = np.zeros(20, dtype=bool)
    active[[0, 3, 4, 11]] = True
    gradient = channel.restricted_em_gradient(stats, active)
    q = np.array([0.4, 0.3, 0.2, 0.1])
    p = np.zeros(20)
    p[active] = q
    g, ll = gradient(q)
    g_full, ll_full = channel.em_gradient(stats, p)
    assert np.allclose(g, g_full[active]) and ll == pytest.approx(ll_full)
    est = EMEstimator().fit(mech.transform(X))
    assert est.distribution_.shape == (20,)


@pytest.mark.pinned
@pytest.mark.parametrize("k, eps", [(100, 4.0), (100, 3.0), (10, 1.0), (20, 0.5), (50, 2.0)])
def test_optimal_subset_size_minimizes_the_worst_case_squared_error(k, eps):
    """The chosen d has the smallest summed variance of the unbiased estimate
    at the uniform distribution (the worst case), computed from the channel;
    and that total is the largest over distributions."""
    uniform = np.full(k, 1.0 / k)
    total = {
        d: SubsetSelectionChannel(list(range(k)), eps, d).estimator_variance(uniform, 1).sum()
        for d in range(1, k)
    }
    d = optimal_subset_size(eps, k)
    assert total[d] == pytest.approx(min(total.values()), rel=1e-10)
    skewed = 1.0 / np.arange(1, k + 1) ** 1.1
    skewed /= skewed.sum()
    channel = SubsetSelectionChannel(list(range(k)), eps, d)
    assert channel.estimator_variance(skewed, 1).sum() <= total[d] + 1e-12
