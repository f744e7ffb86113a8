"""The utility-optimized transformation (He et al. 2025): to_utility_optimized, uLH, uUE.

Every transformed oracle is checked on its exact channel (the ULDP
definition, the transformation's structure against the LDP oracle's own
matrix), its sampler against that channel (chi-square, with a tolerance a
wrong sampler fails), its estimator (unbiased, exact variance, EM gradient
against the matrix), its spec (round trip, tampering) and its audit.
"""

import json
import math

import numpy as np
import pytest
from _chisquare import chi_square_pvalue
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sklearn_uldp import EMEstimator, EmpiricalEstimator, ThresholdEstimator
from sklearn_uldp.exceptions import InvalidSpecError, ReportMismatchError
from sklearn_uldp.mechanisms import (
    RAPPOR,
    BinaryLocalHashing,
    Channel,
    CountMeanSketch,
    HadamardCountMeanSketch,
    HadamardResponse,
    OptimizedLocalHashing,
    RandomizedResponse,
    ReportStatistics,
    SubsetSelection,
    TransformedSubsetSelection,
    UtilityOptimizedBlockDesign,
    UtilityOptimizedBlockedHadamardChannel,
    UtilityOptimizedBlockedHadamardResponse,
    UtilityOptimizedHadamardCountMeanSketch,
    UtilityOptimizedHadamardCountMeanSketchChannel,
    UtilityOptimizedHadamardResponse,
    UtilityOptimizedLocalHashing,
    UtilityOptimizedLocalHashingChannel,
    UtilityOptimizedRAPPOR,
    UtilityOptimizedRR,
    UtilityOptimizedUnaryEncoding,
    UtilityOptimizedUnaryEncodingChannel,
    optimal_ulh_hash_range,
    to_utility_optimized,
)
from sklearn_uldp.mechanisms._subset_selection import optimal_subset_size
from sklearn_uldp.mechanisms._transformed import ulh_variances
from sklearn_uldp.privacy import audit_mechanism, check_ldp, check_uldp

K = 9
CATS = list(range(K))
SENS = [0, 1, 2, 3, 4]
MASK = np.isin(np.arange(K), SENS)


def _ldp_oracles(eps):
    """(name, LDP oracle over CATS, LDP oracle over the sensitive set) pairs."""
    return [
        ("RR", RandomizedResponse(eps, categories=CATS)),
        ("RAPPOR", RAPPOR(eps, categories=CATS)),
        ("OUE", RAPPOR(eps, theta=0.5, categories=CATS)),
        ("OLH", OptimizedLocalHashing(eps, categories=CATS)),
        ("OLH g=5", OptimizedLocalHashing(eps, hash_range=5, categories=CATS)),
        ("BLH", BinaryLocalHashing(eps, categories=CATS)),
        ("SS", SubsetSelection(eps, subset_size=2, categories=CATS)),
        ("HR", HadamardResponse(eps, block_size=None, categories=CATS)),
        ("HR b=4", HadamardResponse(eps, block_size=4, categories=CATS)),
        ("HCMS", HadamardCountMeanSketch(eps, n_buckets=4, n_hashes=3, categories=CATS)),
    ]


def _base_over_sensitive(mech, uldp):
    """The same LDP oracle over the sensitive categories alone (with the
    transformed oracle's resolved parameters, e.g. its own optimal g)."""
    params = mech.get_params()
    params["categories"] = SENS
    if "hash_range" in params:
        params["hash_range"] = uldp.hash_range_
    return type(mech)(**params).fit()


def _output_index(channel, reports):
    """Column of the channel matrix of each report (codes or bit vectors)."""
    codes = channel.encode_reports(reports)
    if channel.report_format == "bits":
        bits = np.asarray(codes, dtype=np.int64)
        return bits @ (1 << np.arange(bits.shape[1], dtype=np.int64))
    return np.asarray(codes, dtype=np.int64)


# ------------------------------------------------------- the transformation
@pytest.mark.parametrize("eps", [0.5, 1.0, 3.0])
@pytest.mark.parametrize("case", range(10))
def test_transformation_structure_on_the_exact_channel(case, eps):
    """Sensitive rows = the oracle's over X_S; non-sensitive rows = its floor.

    On the protected outputs every non-sensitive row is one row c, the
    smaller value of each column of the oracle over X_S (where the column
    takes two values; e^-eps times it where the column is constant high),
    and the rest of the row is the value itself: the definition of the
    transformation, checked against the oracle's own matrix.
    """
    name, ldp = _ldp_oracles(eps)[case]
    uldp = to_utility_optimized(ldp, SENS).fit()
    assert check_uldp(uldp).satisfied, name
    assert check_uldp(
        uldp.channel_.matrix(), MASK, eps, protected=uldp.channel_.protected_outputs()
    )
    assert not check_uldp(uldp, epsilon=0.98 * eps).satisfied  # the bound is tight
    base = _base_over_sensitive(ldp, uldp).channel_.matrix()
    Q = uldp.channel_.matrix()
    P = uldp.channel_.protected_outputs()
    if uldp.channel_.report_format == "bits":
        # bit vectors over k: the protected outputs are those of X_S's bits
        Y = uldp.channel_.output_labels().astype(bool)
        cols = np.flatnonzero(P)
        sub = Y[cols][:, MASK] @ (1 << np.arange(len(SENS)))
        order = cols[np.argsort(sub)]
    else:
        order = np.flatnonzero(P)
        if name.startswith("SS"):  # uBD's subsets vs SS's: match labels
            Yu = uldp.channel_.output_labels()[order][:, MASK]
            Yb = _base_over_sensitive(ldp, uldp).channel_.output_labels()
            key = {row.tobytes(): j for j, row in enumerate(np.asarray(Yb, np.uint8))}
            perm = [key[np.asarray(row, np.uint8).tobytes()] for row in Yu]
            base = base[:, perm]
    np.testing.assert_allclose(Q[np.ix_(MASK, order)], base, rtol=1e-10, atol=1e-15)
    c = Q[np.ix_(~MASK, order)]
    np.testing.assert_allclose(c, np.broadcast_to(c[0], c.shape), rtol=1e-10)
    low, high = base.min(axis=0), base.max(axis=0)
    two_level = high > low * (1 + 1e-9)
    np.testing.assert_allclose(c[0][two_level], low[two_level], rtol=1e-10)
    assert (c[0] >= high * math.exp(-eps) * (1 - 1e-12)).all()
    assert (c[0] <= low * (1 + 1e-12)).all()
    own = Q[np.ix_(~MASK, np.flatnonzero(~P))]
    np.testing.assert_allclose(own.sum(axis=1), 1 - c[0].sum(), rtol=1e-10)
    assert ((own > 0).sum(axis=1) == 1).all()  # one invertible output each


def test_transformed_rr_is_urr_and_hr_is_uhr():
    for eps in (0.3, 1.0, 4.0):
        urr = UtilityOptimizedRR(eps, sensitive=SENS, categories=CATS).fit()
        t = to_utility_optimized(RandomizedResponse(eps, categories=CATS), SENS).fit()
        assert t.channel_ == urr.channel_
        np.testing.assert_array_equal(t.channel_matrix(), urr.channel_matrix())
        uhr = UtilityOptimizedHadamardResponse(eps, sensitive=SENS, categories=CATS).fit()
        plain = UtilityOptimizedBlockedHadamardChannel(CATS, eps, MASK, None)
        np.testing.assert_allclose(plain.matrix(), uhr.channel_matrix(), rtol=1e-10, atol=1e-16)
        p = np.random.default_rng(0).dirichlet(np.ones(K))
        np.testing.assert_allclose(
            plain.estimator_variance(p, 1), uhr.channel_.estimator_variance(p, 1), rtol=1e-10
        )


def test_transformed_ss_is_ubd_and_ue_keeps_urap_protected_rows():
    ss = to_utility_optimized(SubsetSelection(1.0, subset_size=2, categories=CATS), SENS).fit()
    ubd = UtilityOptimizedBlockDesign(1.0, sensitive=SENS, subset_size=2, categories=CATS).fit()
    assert ss.channel_ == ubd.channel_
    # "optimal" d: subset selection's optimum over the s sensitive values
    auto = to_utility_optimized(SubsetSelection(1.0, categories=CATS), SENS).fit()
    assert isinstance(auto, TransformedSubsetSelection)
    assert auto.subset_size_ == optimal_subset_size(1.0, len(SENS))
    assert auto.channel_.name == "ubd"
    uue = to_utility_optimized(RAPPOR(1.0, theta=0.5, categories=CATS), SENS).fit()
    urap = UtilityOptimizedRAPPOR(1.0, sensitive=SENS, theta=0.5, categories=CATS).fit()
    P = uue.channel_.protected_outputs()
    np.testing.assert_allclose(uue.channel_matrix()[:, P], urap.channel_matrix()[:, P])
    # uRAP's invertible reports: uUE's with noise bits added (post-processing)
    Y = urap.channel_.output_labels().astype(np.int64) @ (1 << np.arange(K))
    nonsens = int(sum(1 << j for j in range(K) if not MASK[j]))
    erased = np.where(Y & nonsens, Y & nonsens, Y)
    merged = np.zeros_like(urap.channel_matrix())
    for x in range(K):
        merged[x] = np.bincount(erased, weights=urap.channel_matrix()[x], minlength=2**K)
    np.testing.assert_allclose(merged, uue.channel_matrix(), atol=1e-15)
    # basic RAPPOR (theta=None) keeps its theta
    basic = to_utility_optimized(RAPPOR(2.0, categories=CATS), SENS).fit()
    assert basic.channel_.theta == RAPPOR(2.0, categories=CATS).fit().channel_.theta


def test_to_utility_optimized_carries_parameters_and_fit_state():
    olh = OptimizedLocalHashing(2.0, hash_range=5, categories=CATS, random_state=3)
    ulh = to_utility_optimized(olh, SENS)
    assert ulh.get_params()["hash_range"] == 5 and ulh.random_state == 3
    assert not hasattr(ulh, "channel_")
    fitted = to_utility_optimized(olh.fit(), SENS)
    assert fitted.channel_.hash_range == 5
    assert list(fitted.categories_) == CATS
    assert to_utility_optimized(BinaryLocalHashing(1.0, categories=CATS), SENS).hash_range == 2
    hc = to_utility_optimized(
        HadamardCountMeanSketch(1.0, n_buckets=8, n_hashes=4, hash_seed=7, categories=CATS), SENS
    ).fit()
    assert (hc.channel_.base.n_buckets, hc.channel_.base.hash_seed) == (8, 7)


@pytest.mark.parametrize(
    "mech",
    [
        UtilityOptimizedRR(1.0, sensitive=[0], categories=[0, 1]),
        CountMeanSketch(1.0, categories=[0, 1, 2]),
        UtilityOptimizedRAPPOR(1.0, sensitive=[0], categories=[0, 1]),
        "not a mechanism",
    ],
)
def test_to_utility_optimized_refuses_what_it_cannot_transform(mech):
    with pytest.raises(TypeError, match="utility-optimized|count-mean|transforms"):
        to_utility_optimized(mech, [0])


def test_one_sensitive_value_is_refused_with_the_way_out():
    for cls in (UtilityOptimizedLocalHashing, UtilityOptimizedUnaryEncoding):
        with pytest.raises(ValueError, match="at least two sensitive.*UtilityOptimizedRR"):
            cls(1.0, sensitive=[0], categories=CATS).fit()


# ---------------------------------------------------------- the estimators
def _transformed(eps=1.0):
    """Every transformed channel of the package, small."""
    return {
        "uLH": UtilityOptimizedLocalHashingChannel(CATS, eps, MASK, 3),
        "uLH g=2": UtilityOptimizedLocalHashingChannel(CATS, eps, MASK, 2),
        "uHCMS": UtilityOptimizedHadamardCountMeanSketchChannel(
            CATS, eps, MASK, n_buckets=4, n_hashes=3
        ),
        "uHR b=4": UtilityOptimizedBlockedHadamardChannel(CATS, eps, MASK, 4),
        "uHR plain": UtilityOptimizedBlockedHadamardChannel(CATS, eps, MASK, None),
        "uUE": UtilityOptimizedUnaryEncodingChannel(CATS, eps, 0.5, MASK),
        "uUE theta=0.7": UtilityOptimizedUnaryEncodingChannel(CATS, eps, 0.7, MASK),
    }


def _per_report_estimates(channel):
    """T[y] = the estimate a single report y gives (a t(y) + b): (n_outputs, k)."""
    if channel.report_format == "bits":
        labels = channel.output_labels().astype(np.int64)
        rows = [ReportStatistics(channel, 1, labels[j]) for j in range(labels.shape[0])]
    else:
        eye = np.eye(channel.n_outputs)
        rows = [ReportStatistics(channel, 1, eye[j]) for j in range(channel.n_outputs)]
    return np.array([channel.coef_a * channel.observed_frequency(r) + channel.coef_b for r in rows])


@pytest.mark.parametrize("name", list(_transformed()))
def test_estimator_unbiased_with_exact_variance(name):
    channel = _transformed(1.3)[name]
    Q = channel.matrix()
    T = _per_report_estimates(channel)
    for seed in range(3):
        p = np.random.default_rng(seed).dirichlet(np.ones(K) * 0.7)
        m = p @ Q
        mean = m @ T
        if name == "uHCMS":
            # HCMS's estimator is unbiased over random hash functions; with
            # fixed ones the bias is the oracle's, scaled by p(X_S).
            S = p[MASK].sum()
            bias = S * channel.base.collision_bias(p[MASK] / S)
            np.testing.assert_allclose(mean[MASK], p[MASK] + bias, atol=1e-12)
            np.testing.assert_allclose(mean[~MASK], p[~MASK], atol=1e-12)
            continue
        np.testing.assert_allclose(mean, p, atol=1e-12)
        var = m @ T**2 - mean**2
        np.testing.assert_allclose(channel.estimator_variance(p, 1), var, rtol=1e-9, atol=1e-14)
        np.testing.assert_allclose(
            channel.expected_frequency(p) * channel.coef_a + channel.coef_b, p
        )
    # the null variance bounds the variance at p(x) = 0 (worst case over the rest)
    for seed in range(3):
        p = np.random.default_rng(10 + seed).dirichlet(np.ones(K))
        p[0] = 0
        p /= p.sum()
        if name != "uHCMS":
            assert channel.estimator_variance(p, 1)[0] <= channel.null_variance(1)[0] * (1 + 1e-12)


@pytest.mark.parametrize("name", list(_transformed()))
def test_em_gradient_against_the_matrix(name):
    channel = _transformed(1.0)[name]
    rng = np.random.default_rng(1)
    codes = rng.choice(K, size=3000, p=np.random.default_rng(0).dirichlet(np.ones(K)))
    reports = channel.sample(codes, rng)
    enc = channel.encode_reports(reports)
    stats = channel.statistics(enc, keep_reports=True)
    cols = _output_index(channel, reports)
    Q = channel.matrix()
    for seed in range(2):
        p = np.random.default_rng(seed + 5).dirichlet(np.ones(K))
        g, log_lik = channel.em_gradient(stats, p)
        m = p @ Q
        np.testing.assert_allclose(g, (Q[:, cols] / m[cols]).mean(axis=1), rtol=1e-9)
        assert np.isclose(log_lik, np.log(m[cols]).sum(), rtol=1e-10)


@pytest.mark.parametrize("name", list(_transformed()))
def test_statistics_add_up_and_estimators_run(name):
    channel = _transformed(1.0)[name]
    rng = np.random.default_rng(2)
    codes = rng.choice(K, size=4000)
    reports = channel.sample(codes, rng)
    a = channel.statistics(channel.encode_reports(reports[:1500]))
    b = channel.statistics(channel.encode_reports(reports[1500:]))
    whole = channel.statistics(channel.encode_reports(reports))
    assert (a + b).n == whole.n
    np.testing.assert_array_equal((a + b).counts, whole.counts)
    for est in (EmpiricalEstimator, ThresholdEstimator, EMEstimator):
        d = est(mechanism=channel).fit(reports).distribution_
        assert d.shape == (K,) and np.isfinite(d).all()
    em = EMEstimator(mechanism=channel).fit(reports).distribution_
    assert np.isclose(em.sum(), 1.0) and (em >= 0).all()
    assert np.abs(em - np.bincount(codes, minlength=K) / codes.size).max() < 0.15


# ------------------------------------------------------------- the samplers
@pytest.mark.parametrize("name", list(_transformed()))
@pytest.mark.parametrize("x", [0, 4, 5, 8])
def test_sampler_matches_the_realized_channel(name, x):
    channel = _transformed(1.0)[name]
    n = 40_000
    rng = np.random.default_rng(100 + x)
    cols = _output_index(channel, channel.sample(np.full(n, x), rng))
    q = channel.realized_matrix()[x]
    counts = np.bincount(cols, minlength=q.size)
    assert counts[q == 0].sum() == 0, "an output the channel cannot produce"
    assert chi_square_pvalue(counts, q) > 1e-4


@pytest.mark.parametrize("fmt", ["sparse", "packed"])
def test_uue_sampler_formats_match_the_channel(fmt):
    channel = UtilityOptimizedUnaryEncodingChannel(CATS, 1.0, 0.5, MASK)
    n, x = 40_000, 6
    rng = np.random.default_rng(7)
    out = channel.sample(np.full(n, x), rng, **{fmt: True})
    dense = (
        out.toarray() if fmt == "sparse" else np.unpackbits(out, axis=1, count=K, bitorder="little")
    )
    cols = dense.astype(np.int64) @ (1 << np.arange(K))
    q = channel.realized_matrix()[x]
    counts = np.bincount(cols, minlength=q.size)
    assert counts[q == 0].sum() == 0
    assert chi_square_pvalue(counts, q) > 1e-4


def _rejects(counts, probs):
    """The goodness-of-fit test rejects ``counts`` as draws from ``probs``: an
    output of probability 0 (itself proof of a wrong sampler, which
    chi_square_pvalue asserts) or a p-value below 1e-6."""
    try:
        return chi_square_pvalue(counts, probs) < 1e-6
    except AssertionError as exc:
        return "probability 0" in str(exc)


def test_chi_square_detects_a_wrong_sampler():
    """uRAP's sampler (noise bits on clear reports) is not uUE's; a uLH that
    hides a non-sensitive value among half of the outputs is not uLH."""
    uue = UtilityOptimizedUnaryEncodingChannel(CATS, 1.0, 0.5, MASK)
    urap = UtilityOptimizedRAPPOR(1.0, sensitive=SENS, theta=0.5, categories=CATS).fit().channel_
    rng = np.random.default_rng(0)
    bits = urap.sample(np.full(20_000, 6), rng)
    cols = bits.astype(np.int64) @ (1 << np.arange(K))
    assert _rejects(np.bincount(cols, minlength=2**K), uue.matrix()[6])
    ulh = UtilityOptimizedLocalHashingChannel(CATS, 1.0, MASK, 3)
    keep = rng.random(20_000) < ulh.pass_through
    wrong = np.where(keep, ulh.n_base + 1, rng.integers(0, ulh.n_base // 2, size=20_000))
    assert _rejects(np.bincount(wrong, minlength=ulh.n_outputs), ulh.matrix()[6])
    off = np.where(rng.random(20_000) < 0.9 * ulh.pass_through, ulh.n_base + 1, 0)
    off[off == 0] = rng.integers(0, ulh.n_base, size=int((off == 0).sum()))
    assert _rejects(np.bincount(off, minlength=ulh.n_outputs), ulh.matrix()[6])
    # and the right sampler passes
    right = ulh.sample(np.full(20_000, 6), rng)
    assert not _rejects(np.bincount(right, minlength=ulh.n_outputs), ulh.matrix()[6])


# ------------------------------------------------------------------ uUE
def test_uue_variance_is_urap_minus_the_noise_bits():
    eps, theta = 1.0, 0.5
    uue = UtilityOptimizedUnaryEncodingChannel(CATS, eps, theta, MASK)
    urap = UtilityOptimizedRAPPOR(eps, sensitive=SENS, theta=theta, categories=CATS).fit().channel_
    p = np.random.default_rng(0).dirichlet(np.ones(K))
    n = 1000
    diff = urap.estimator_variance(p, n) - uue.estimator_variance(p, n)
    P_n = p[~MASK].sum()
    gain = urap.coef_a**2 * P_n * urap._one_minus_d2 * urap.d1 * (1 - urap.d1) / n
    np.testing.assert_allclose(diff[MASK], gain[MASK], rtol=1e-10)
    np.testing.assert_allclose(diff[~MASK], 0, atol=1e-18)
    assert uue.report_bits < urap.report_bits
    np.testing.assert_allclose(uue.coef_a, urap.coef_a)
    np.testing.assert_allclose(uue.coef_b, urap.coef_b)


def test_uue_em_equals_urap_em_on_the_same_protected_reports():
    """The invertible reports' noise bits carry no information: EM's estimate
    from uUE's reports equals uRAP's when the protected reports are the same."""
    urap = UtilityOptimizedRAPPOR(
        1.0, sensitive=SENS, theta=0.5, categories=CATS, random_state=0
    ).fit()
    X = np.random.default_rng(0).choice(K, size=(5000, 1))
    bits = np.asarray(urap.transform(X))
    erased = bits.copy()
    clear = bits[:, ~MASK].any(axis=1)
    erased[np.ix_(clear, MASK)] = 0
    uue = UtilityOptimizedUnaryEncoding(1.0, sensitive=SENS, categories=CATS).fit()
    a = EMEstimator(mechanism=urap, tol=1e-12).fit(bits).distribution_
    b = EMEstimator(mechanism=uue, tol=1e-12).fit(erased).distribution_
    np.testing.assert_allclose(a, b, atol=1e-9)
    with pytest.raises(ReportMismatchError, match="both sensitive and non-sensitive"):
        EmpiricalEstimator(mechanism=uue).fit(bits)


def test_uue_report_formats_agree():
    X = np.random.default_rng(1).choice(K, size=(3000, 1))
    est = {}
    for fmt in ("dense", "sparse", "packed"):
        mech = UtilityOptimizedUnaryEncoding(
            1.0,
            sensitive=SENS,
            categories=CATS,
            random_state=0,
            sparse_output=fmt == "sparse",
            packed_output=fmt == "packed",
        ).fit()
        est[fmt] = EmpiricalEstimator().fit(mech.transform(X)).distribution_
    np.testing.assert_allclose(est["dense"], est["sparse"])  # the same stream
    assert np.abs(est["packed"] - est["dense"]).max() < 0.1


# ------------------------------------------------------------------ uLH
def test_ulh_closed_form_and_the_channel_agree():
    eps, g = 1.0, 3
    ch = UtilityOptimizedLocalHashingChannel(CATS, eps, MASK, g)
    p = np.random.default_rng(3).dirichlet(np.ones(K))
    vs, vn = ulh_variances(eps, g, p[MASK], p[~MASK], n=7)
    np.testing.assert_allclose(ch.estimator_variance(p, 7)[MASK], vs, rtol=1e-10)
    np.testing.assert_allclose(ch.estimator_variance(p, 7)[~MASK], vn, rtol=1e-10)
    # the sensitive estimates of uLH are OLH's over X_S: same variance when
    # nobody holds a non-sensitive value, smaller otherwise
    olh = OptimizedLocalHashing(eps, hash_range=g, categories=SENS).fit().channel_
    only_s = np.where(MASK, p, 0) / p[MASK].sum()
    np.testing.assert_allclose(
        ch.estimator_variance(only_s, 1)[MASK], olh.estimator_variance(only_s[MASK], 1)
    )
    assert (ch.estimator_variance(p, 1)[MASK] <= ch.estimator_variance(only_s, 1)[MASK].max()).all()
    assert ch._lambda[0] == pytest.approx(1 / g)


def test_ulh_optimal_hash_range():
    assert optimal_ulh_hash_range(1.0, 1000, 99_000) == 3
    # few sensitive values: the non-sensitive pass-through weighs more
    assert optimal_ulh_hash_range(4.0, 4, 1000) < optimal_ulh_hash_range(4.0, 1000, 1000)
    mech = UtilityOptimizedLocalHashing(2.0, sensitive=SENS, categories=CATS).fit()
    assert mech.hash_range_ == optimal_ulh_hash_range(2.0, 5, 4)


def test_ulh_large_domain_without_an_n_by_k_pass():
    k = 100_000
    sens = np.arange(0, k, 100)
    mech = UtilityOptimizedLocalHashing(
        1.0, sensitive=sens, categories=np.arange(k), random_state=0
    ).fit()
    assert mech.channel_.n_base == 3**7 * 3  # seeds over the 1,000 sensitive values
    X = np.random.default_rng(0).integers(0, k, size=(20_000, 1))
    est = EmpiricalEstimator().fit(mech.transform(X))
    assert est.distribution_.shape == (k,)


def test_ulh_reports_split_and_tampering():
    ch = UtilityOptimizedLocalHashingChannel(CATS, 1.0, MASK, 3)
    protected, base, category = ch.split_reports([0, ch.n_base, ch.n_outputs - 1])
    assert protected.tolist() == [True, False, False]
    assert category.tolist() == [-1, 5, 8]
    with pytest.raises(ReportMismatchError):
        ch.encode_reports(np.array([ch.n_outputs]))
    with pytest.raises(ReportMismatchError):
        ch.encode_reports(np.array([1.5]))


# ------------------------------------------------------------ specs, audit
@pytest.mark.parametrize("name", list(_transformed()))
def test_spec_round_trip(name):
    channel = _transformed(0.7)[name]
    spec = channel.to_dict()
    assert Channel.from_dict(spec) == channel
    assert Channel.from_json(json.dumps(spec)) == channel
    assert Channel.from_dict({**spec, "epsilon": 0.8}) != channel


@pytest.mark.parametrize(
    "tamper",
    [
        {"mechanism": "ulh", "hash_range": 4},
        {"mechanism": "ulh", "sensitive": [True] + [False] * (K - 1)},
        {"mechanism": "ulh", "epsilon": -1},
        {"mechanism": "uue", "theta": 1.0},
        {"mechanism": "uue", "sensitive": [True, False]},
        {"mechanism": "uhcms", "n_buckets": 6},
        {"mechanism": "ubhr", "block_size": 3},
    ],
)
def test_tampered_specs_are_refused(tamper):
    base = {
        "ulh": _transformed()["uLH"],
        "uue": _transformed()["uUE"],
        "uhcms": _transformed()["uHCMS"],
        "ubhr": _transformed()["uHR b=4"],
    }[tamper["mechanism"]].to_dict()
    with pytest.raises(InvalidSpecError):
        Channel.from_dict({**base, **tamper})


@pytest.mark.parametrize(
    "mech",
    [
        UtilityOptimizedLocalHashing(1.0, sensitive=[0, 1, 2], categories=range(6)),
        UtilityOptimizedUnaryEncoding(1.0, sensitive=[0, 1, 2], categories=range(6)),
        UtilityOptimizedHadamardCountMeanSketch(
            1.0, sensitive=[0, 1, 2], n_buckets=8, n_hashes=4, categories=range(6)
        ),
        UtilityOptimizedBlockedHadamardResponse(
            2.0, sensitive=[0, 1, 2, 3], block_size=2, categories=range(6)
        ),
    ],
    ids=["uLH", "uUE", "uHCMS", "uHR-blocked"],
)
def test_audit_finds_no_bound_above_epsilon(mech):
    mech.set_params(random_state=0).fit()
    result = audit_mechanism(mech, n_samples=20_000, random_state=0)
    assert result.passed, result.summary()
    assert result.uldp_violations.empty
    assert result.epsilon_lower_bound <= result.epsilon_claimed


@pytest.mark.parametrize("k", [16, 64])
def test_check_uldp_at_larger_domains(k):
    rng = np.random.default_rng(k)
    mask = np.zeros(k, dtype=bool)
    mask[rng.choice(k, size=k // 4, replace=False)] = True
    for eps in (0.5, 2.0):
        for ch in (
            UtilityOptimizedLocalHashingChannel(range(k), eps, mask, 3),
            UtilityOptimizedLocalHashingChannel(range(k), eps, mask, 2),
            UtilityOptimizedBlockedHadamardChannel(range(k), eps, mask, 4),
            UtilityOptimizedHadamardCountMeanSketchChannel(
                range(k), eps, mask, n_buckets=8, n_hashes=4
            ),
        ):
            assert check_uldp(ch).satisfied, ch
            assert not check_ldp(ch).satisfied  # invertible outputs: not LDP
    # uUE's matrix (2^k outputs) is built up to k = 16
    mask16 = np.zeros(16, dtype=bool)
    mask16[:5] = True
    assert check_uldp(UtilityOptimizedUnaryEncodingChannel(range(16), 1.0, 0.5, mask16)).satisfied


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    k=st.integers(3, 10),
    data=st.data(),
    eps=st.floats(0.05, 6.0),
    family=st.sampled_from(["ulh", "uue", "ubhr", "uhcms"]),
)
def test_any_sensitive_set_and_budget_is_uldp_and_unbiased(k, data, eps, family):
    s = data.draw(st.integers(2, k))
    mask = np.zeros(k, dtype=bool)
    mask[data.draw(st.permutations(range(k)))[:s]] = True
    if family == "ulh":
        ch = UtilityOptimizedLocalHashingChannel(
            range(k), eps, mask, data.draw(st.sampled_from([2, 3, 5]))
        )
    elif family == "uue":
        ch = UtilityOptimizedUnaryEncodingChannel(
            range(k), eps, data.draw(st.floats(0.1, 0.9)), mask
        )
    elif family == "ubhr":
        ch = UtilityOptimizedBlockedHadamardChannel(
            range(k), eps, mask, data.draw(st.sampled_from([2, 4, None]))
        )
    else:
        ch = UtilityOptimizedHadamardCountMeanSketchChannel(range(k), eps, mask, 4, 2)
    assert check_uldp(ch).satisfied
    if family == "uhcms":
        return  # unbiased over random hash functions only (see above)
    p = np.random.default_rng(k).dirichlet(np.ones(k))
    T = _per_report_estimates(ch)
    np.testing.assert_allclose((p @ ch.matrix()) @ T, p, atol=1e-9)


def test_bad_parameters_say_what_is_wrong():
    with pytest.raises(ValueError, match="prime"):
        UtilityOptimizedLocalHashing(1.0, sensitive=SENS, hash_range=4, categories=CATS).fit()
    with pytest.raises(ValueError, match="epsilon"):
        UtilityOptimizedLocalHashing(0.0, sensitive=SENS, categories=CATS).fit()
    with pytest.raises(ValueError, match="sensitive|unknown"):
        UtilityOptimizedLocalHashing(1.0, sensitive=["nope"], categories=CATS).fit()
    with pytest.raises(ValueError):
        UtilityOptimizedUnaryEncoding(1.0, sensitive=SENS, theta=1.5, categories=CATS).fit()
    with pytest.raises(ValueError, match="power of two"):
        UtilityOptimizedHadamardCountMeanSketch(
            1.0, sensitive=SENS, n_buckets=6, categories=CATS
        ).fit()
    # budgets the float64 samplers cannot realize are refused, by name
    for cls, name in (
        (UtilityOptimizedUnaryEncoding, "uUE"),
        (UtilityOptimizedLocalHashing, "local hashing"),
    ):
        with pytest.raises(ValueError, match=f"cannot be realized by {name}"):
            cls(40.0, sensitive=SENS, categories=CATS).fit()


# ------------------------------------------------------------ choose_mechanism
def test_choose_mechanism_weighs_the_transformed_oracles():
    from sklearn_uldp.model_selection import choose_mechanism

    mech, table = choose_mechanism(1000, 1.0, sensitive=list(range(10)))
    assert {"uUE", "uSS (He)", "uLH", "uHCMS", "uHR (blocked)"} <= set(table.index)
    # uUE is uOUE without the noise bits: never worse, shorter reports
    assert table.loc["uUE", "loss"] <= table.loc["uOUE", "loss"]
    assert table.loc["uUE", "report_bits"] < table.loc["uOUE", "report_bits"]
    # the optimal uBD mixture meets the converse bound: nothing is below it
    assert table.index[0] == "uBD"
    # with a prior, the table is the exact expected loss of each channel
    prior = np.full(1000, 0.5 / 990)
    prior[:10] = 0.05
    mech, table = choose_mechanism(1000, 1.0, sensitive=list(range(10)), prior=prior, n=10**6)
    ulh = table.loc["uLH", "mechanism"].fit()
    assert table.loc["uLH", "loss"] == pytest.approx(
        ulh.channel_.estimator_variance(prior, 10**6).sum(), rel=1e-10
    )


@pytest.mark.parametrize("name", list(_transformed()))
def test_specs_validate_against_the_shipped_schema(name):
    jsonschema = pytest.importorskip("jsonschema")
    from sklearn_uldp.mechanisms import spec_json_schema

    schema = spec_json_schema()
    spec = json.loads(json.dumps(_transformed(0.7)[name].to_dict()))
    assert jsonschema.Draft202012Validator(schema).is_valid(spec)
    assert not jsonschema.Draft202012Validator(schema).is_valid({**spec, "epsilon": -1})
