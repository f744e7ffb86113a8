"""uSS, uHR, uBD's optimal design and projection decoder, and choose_mechanism."""

import math

import numpy as np
import pytest
from scipy.stats import chi2
from sklearn.base import clone

from sklearn_uldp import (
    EMEstimator,
    EmpiricalEstimator,
    HighLowHadamardResponse,
    UtilityOptimizedBlockDesign,
    UtilityOptimizedRR,
)
from sklearn_uldp.mechanisms import (
    Channel,
    UtilityOptimizedBlockDesignChannel,
    UtilityOptimizedRRChannel,
)
from sklearn_uldp.mechanisms._block_design import _optimal_design, ubd_converse_bound
from sklearn_uldp.mechanisms._hadamard import UtilityOptimizedHadamardResponse
from sklearn_uldp.mechanisms._utility_optimized_subset import (
    UtilityOptimizedSubsetSelection,
    UtilityOptimizedSubsetSelectionChannel,
    uss_worst_case_bound,
)
from sklearn_uldp.model_selection._choose import choose_mechanism
from sklearn_uldp.privacy import audit_mechanism, check_uldp


def _mask(k, s):
    mask = np.zeros(k, dtype=bool)
    mask[:s] = True
    return mask


def _row_index(labels):
    """Map each 0/1 output vector to its column of the channel matrix."""
    return {row.tobytes(): j for j, row in enumerate(np.asarray(labels, np.uint8))}


def _sampler_gof(channel, x, n, rng):
    """Chi-square p-value of n samples of input x against the matrix row."""
    codes = np.full(n, x)
    out = channel.sample(codes, rng)
    index = _row_index(channel.output_labels())
    cols = np.array([index[row.tobytes()] for row in np.asarray(out, np.uint8)])
    counts = np.bincount(cols, minlength=channel.n_outputs)
    q = channel.matrix()[x]
    seen = q > 0
    assert counts[~seen].sum() == 0, "the sampler produced an impossible output"
    expected = n * q[seen]
    stat = float(((counts[seen] - expected) ** 2 / expected).sum())
    return chi2.sf(stat, seen.sum() - 1)


# --------------------------------------------------------------------- uSS
# Pinned floats (tests/README.md): tolerances that hold on any processor.
# Channel entries, coefficients and variances are closed forms of a few
# operations (1e-12; 1e-10 where a variance sums over the outputs); the EM
# gradient against the matrix sums over the reports (1e-9).
@pytest.mark.pinned
@pytest.mark.parametrize("h", [1, 2, 3])
@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_uss_channel_is_uldp_and_unbiased(h, eps):
    channel = UtilityOptimizedSubsetSelectionChannel(list(range(7)), eps, _mask(7, 5), h)
    Q = channel.matrix()
    np.testing.assert_allclose(Q.sum(axis=1), 1.0)
    assert check_uldp(channel).satisfied
    # protected outputs carry exactly h sensitive bits; pairs are invertible
    Y = channel.output_labels().astype(bool)
    assert (Y[channel.protected_outputs()][:, 5:].sum(axis=1) == 0).all()
    p = np.random.default_rng(h).dirichlet(np.ones(7))
    m = (p @ Q) @ Y  # expected bit frequencies
    np.testing.assert_allclose(channel.coef_a * m + channel.coef_b, p, atol=1e-12)
    np.testing.assert_allclose(
        channel.estimator_variance(p, 1), channel.coef_a**2 * m * (1 - m), rtol=1e-10
    )


def test_uss_ratio_bound_is_tight_and_a_wrong_channel_fails():
    channel = UtilityOptimizedSubsetSelectionChannel(list(range(6)), 1.0, _mask(6, 4), 2)
    Q = channel.matrix()[:, channel.protected_outputs()]
    assert np.isclose((Q.max(axis=0) / Q.min(axis=0)).max(), math.e)
    # without the pairs' split the non-sensitive rows would not sum to one
    # and a budget one notch lower must fail
    assert not check_uldp(channel, epsilon=0.99).satisfied


@pytest.mark.pinned
def test_uss_size_one_is_urr():
    cats = list(range(7))
    uss = UtilityOptimizedSubsetSelectionChannel(cats, 1.3, _mask(7, 4), 1)
    urr = UtilityOptimizedRRChannel(cats, 1.3, _mask(7, 4))
    col = np.asarray(uss.output_labels()).argmax(axis=1)
    np.testing.assert_allclose(uss.matrix(), urr.matrix()[:, col], atol=1e-12)
    np.testing.assert_allclose(
        uss.estimator_variance(np.full(7, 1 / 7), 100),
        urr.estimator_variance(np.full(7, 1 / 7), 100),
    )
    # the optimal size of the reference code at high epsilon is 1 (uRR)
    mech = UtilityOptimizedSubsetSelection(
        math.log(7) + 2, sensitive=[0, 1, 2, 3], categories=cats
    ).fit()
    assert mech.subset_size_ == 1


def test_uss_optimal_size_minimizes_the_reference_bound():
    s, eps = 12, 0.5
    mech = UtilityOptimizedSubsetSelection(
        eps, sensitive=list(range(s)), categories=range(20)
    ).fit()
    bounds = [uss_worst_case_bound(s, eps, h) for h in range(1, s)]
    assert mech.subset_size_ == int(np.argmin(bounds)) + 1 > 1
    # the bound is the exact worst case over {U(X_S), U(X_N)} minus one
    ch = mech.channel_
    worst = max(
        ch.estimator_variance(np.where(ch.sensitive_mask, 1 / s, 0), 1).sum(),
        ch.estimator_variance(np.where(ch.sensitive_mask, 0, 1 / 8), 1).sum(),
    )
    assert worst <= min(bounds) + 1 + 1e-9


@pytest.mark.parametrize("x", [0, 5])
def test_uss_sampler_matches_channel(x):
    channel = UtilityOptimizedSubsetSelectionChannel(list(range(6)), 1.0, _mask(6, 4), 2)
    assert _sampler_gof(channel, x, 60_000, np.random.default_rng(x)) > 1e-4


def test_uss_gof_detects_a_wrong_sampler():
    # uBD's sampler is uSS's without the pairs: the test must see it
    channel = UtilityOptimizedSubsetSelectionChannel(list(range(6)), 1.0, _mask(6, 4), 2)
    wrong = UtilityOptimizedBlockDesignChannel(list(range(6)), 1.0, _mask(6, 4), 2)
    out = wrong.sample(np.full(20_000, 5), np.random.default_rng(0))
    index = _row_index(channel.output_labels())
    cols = np.array([index[row.tobytes()] for row in out])
    counts = np.bincount(cols, minlength=channel.n_outputs)
    q = channel.matrix()[5]
    seen = q > 0
    stat = float(((counts[seen] - 20_000 * q[seen]) ** 2 / (20_000 * q[seen])).sum())
    assert chi2.sf(stat, seen.sum() - 1) < 1e-6


def test_uss_estimators_and_spec():
    cats = list(range(8))
    mech = UtilityOptimizedSubsetSelection(
        1.0, sensitive=[0, 1, 2, 3, 4], subset_size=2, categories=cats, random_state=0
    ).fit()
    assert Channel.from_dict(mech.spec()) == mech.channel_
    assert mech.spec()["mechanism"] == "uss"
    p = np.array([0.3, 0.1, 0.1, 0.05, 0.05, 0.2, 0.1, 0.1])
    X = np.random.default_rng(1).choice(8, p=p, size=(60_000, 1))
    reports = mech.transform(X)
    emp = EmpiricalEstimator().fit(reports).distribution_
    em = EMEstimator().fit(reports).distribution_
    assert np.abs(emp - p).max() < 0.04
    assert np.abs(em - p).max() < 0.04
    sparse = mech.set_params(sparse_output=True).fit().transform(X[:2000])
    assert EMEstimator().fit(sparse).distribution_.shape == (8,)


@pytest.mark.pinned
def test_uss_em_log_likelihood_is_exact():
    cats = list(range(6))
    mech = UtilityOptimizedSubsetSelection(
        1.0, sensitive=[0, 1, 2, 3], subset_size=2, categories=cats, random_state=3
    ).fit()
    ch = mech.channel_
    X = np.random.default_rng(2).choice(6, size=(3000, 1))
    codes = ch.encode_reports(mech.transform(X))
    stats = ch.statistics(codes, keep_reports=True)
    p = np.random.default_rng(0).dirichlet(np.ones(6))
    g, log_lik = ch.em_gradient(stats, p)
    index = _row_index(ch.output_labels())
    cols = np.array([index[row.tobytes()] for row in np.asarray(codes)])
    Q = ch.matrix()
    m = p @ Q
    assert np.isclose(log_lik, np.log(m[cols]).sum())
    np.testing.assert_allclose(g, (Q[:, cols] / m[cols]).mean(axis=1), rtol=1e-9)


# --------------------------------------------------------------------- uHR
@pytest.mark.pinned
def test_uhr_is_high_low_hadamard():
    cats = list(range(9))
    uhr = UtilityOptimizedHadamardResponse(1.0, sensitive=[0, 1, 2, 3], categories=cats).fit()
    hl = HighLowHadamardResponse(1.0, sensitive=[0, 1, 2, 3], categories=cats).fit()
    assert uhr.channel_ == hl.channel_
    np.testing.assert_array_equal(uhr.channel_matrix(), hl.channel_matrix())
    assert check_uldp(uhr).satisfied
    # the reference decoder: (E+1)/(E-1) (2 q(S_x) - q([S])) on X_S
    ch = uhr.channel_
    p = np.random.default_rng(0).dirichlet(np.ones(9))
    q = p @ ch.matrix()
    S = ch.S
    H = np.array([[(-1) ** bin(r & y).count("1") for y in range(S)] for r in range(1, 5)])
    c = (math.e + 1) / (math.e - 1)
    ref = 2 * c * ((H == 1) @ q[:S] - 1 / (math.e + 1)) - c * (q[:S].sum() - 2 / (math.e + 1))
    np.testing.assert_allclose(ref, p[:4], atol=1e-12)
    np.testing.assert_allclose(ch.expected_frequency(p) * ch.coef_a + ch.coef_b, p)


@pytest.mark.parametrize(
    "mech",
    [
        UtilityOptimizedHadamardResponse(1.0, sensitive=[0, 1], categories=[0, 1, 2, 3]),
        UtilityOptimizedSubsetSelection(
            1.0, sensitive=[0, 1, 2], subset_size=2, categories=[0, 1, 2, 3]
        ),
    ],
)
def test_audit_passes(mech):
    # Seeded: the audit's bound holds with probability 95 %, so under fresh
    # noise a correct mechanism would fail it now and then.
    result = audit_mechanism(
        clone(mech).set_params(random_state=0).fit(), n_samples=20_000, random_state=0
    )
    assert result.passed


# ------------------------------------------------------------------- uBD
@pytest.mark.parametrize("eps", [1.0, 2.0])
def test_ubd_optimal_design_reaches_the_converse_bound(eps):
    k, s = 20, 4
    mech = UtilityOptimizedBlockDesign(
        eps, sensitive=list(range(s)), subset_size="optimal", categories=range(k)
    ).fit()
    ch = mech.channel_
    assert isinstance(mech.subset_size_, dict) and ch.alpha is not None
    bound = ubd_converse_bound(k, s, eps)
    p_alpha = np.where(_mask(k, s), ch.alpha / s, (1 - ch.alpha) / (k - s))
    exact = ch.estimator_variance(p_alpha, 1).sum()
    assert exact == pytest.approx(bound, rel=1e-6)
    # no distribution does worse than the bound (concave in p: check many)
    rng = np.random.default_rng(0)
    for p in rng.dirichlet(np.ones(k) * 0.3, size=50):
        assert ch.estimator_variance(p, 1).sum() <= bound * (1 + 1e-9)
    # every single size, with its own estimator, is worse in the worst case
    for h in range(1, s):
        single = UtilityOptimizedBlockDesignChannel(range(k), eps, _mask(k, s), h)
        assert single.estimator_variance(p_alpha, 1).sum() > bound


@pytest.mark.pinned
@pytest.mark.parametrize("eps", [1.0, 2.0])
def test_projection_decoder_beats_the_per_category_estimator(eps):
    k, s = 20, 4
    alpha, w, _ = _optimal_design(k, s, eps)
    mix = {h + 1: float(w[h]) for h in np.flatnonzero(w)}
    proj = UtilityOptimizedBlockDesignChannel(range(k), eps, _mask(k, s), mix, alpha=alpha)
    per_cat = UtilityOptimizedBlockDesignChannel(range(k), eps, _mask(k, s), mix)
    Q, Y = proj.matrix(), proj.output_labels().astype(bool)
    # the closed-form variance against a brute force over the outputs
    p_alpha = np.where(_mask(k, s), alpha / s, (1 - alpha) / (k - s))
    contrib = _brute_force_contributions(proj, Q, Y)
    for p in (p_alpha, np.full(k, 1 / k), np.random.default_rng(1).dirichlet(np.ones(k))):
        m = p @ Q
        np.testing.assert_allclose(contrib @ m + p_alpha, p, atol=1e-12)  # unbiased
        var = (contrib**2) @ m - (contrib @ m) ** 2
        np.testing.assert_allclose(proj.estimator_variance(p, 1), var, rtol=1e-9, atol=1e-12)
    ratio = per_cat.estimator_variance(p_alpha, 1).sum() / proj.estimator_variance(p_alpha, 1).sum()
    assert ratio > 1.01


def _brute_force_contributions(channel, Q, Y):
    """The reference decoder's per-output contribution, from the matrix."""
    k, s, a = channel.n_categories, channel.s, channel.alpha
    S = channel.sensitive_mask
    p_alpha = np.where(S, a / s, (1 - a) / (k - s))
    V = Q / (p_alpha @ Q)
    J1, J2, J3 = channel._J
    u = np.where(S, k - s, -s).astype(float)
    out = np.zeros_like(V)
    out[S] = (V[S] - V[S].mean(axis=0)) / J1
    out[~S] = (V[~S] - V[~S].mean(axis=0)) / J2
    out += np.outer(u, u @ V / (u @ u)) / J3
    return out


def test_projection_decoder_on_samples_and_spec():
    k, s, eps = 12, 4, 1.0
    mech = UtilityOptimizedBlockDesign(
        eps, sensitive=list(range(s)), subset_size="optimal", categories=range(k), random_state=0
    ).fit()
    ch = mech.channel_
    assert Channel.from_dict(mech.spec()) == ch
    assert (
        "alpha"
        not in UtilityOptimizedBlockDesign(
            eps, sensitive=[0, 1], subset_size=1, categories=range(k)
        )
        .fit()
        .spec()
    )
    p = np.random.default_rng(3).dirichlet(np.ones(k))
    X = np.random.default_rng(4).choice(k, p=p, size=(40_000, 1))
    dense = mech.transform(X)
    stats = ch.statistics(ch.encode_reports(dense))
    sparse = mech.set_params(sparse_output=True).transform(X)
    stats_sp = ch.statistics(ch.encode_reports(sparse))
    assert stats.counts.size == k + len(mech.subset_size_) * (s + 1)
    est = ch.unbiased_estimate(stats)
    sd = np.sqrt(ch.estimator_variance(p, X.shape[0]))
    assert (np.abs(est - p) < 5 * sd).all()
    # chunked statistics add up to the one-shot ones
    half = ch.statistics(ch.encode_reports(dense[:1000])) + ch.statistics(
        ch.encode_reports(dense[1000:])
    )
    np.testing.assert_array_equal(half.counts, stats.counts)
    assert stats_sp.counts.shape == stats.counts.shape
    EMEstimator().fit(dense)  # EM is unchanged by the decoder
    assert (ch.null_variance(100) > 0).all() and not ch.exact_categories.any()


def test_alpha_is_validated():
    with pytest.raises(ValueError, match="alpha"):
        UtilityOptimizedBlockDesignChannel(range(6), 1.0, _mask(6, 3), {1: 0.5, 2: 0.5}, alpha=1.5)
    with pytest.raises(ValueError, match="non-sensitive"):
        UtilityOptimizedBlockDesignChannel(range(4), 1.0, _mask(4, 4), 2, alpha=0.5)


def test_optimal_design_is_single_size_at_the_extremes():
    # high epsilon: uRR (h = 1); the mixture only in the middle range
    alpha, w, _ = _optimal_design(20, 4, 6.0)
    assert np.flatnonzero(w).tolist() == [0]
    mech = UtilityOptimizedBlockDesign(
        6.0, sensitive=[0, 1, 2, 3], subset_size="optimal", categories=range(20)
    ).fit()
    assert mech.subset_size_ == 1 and mech.channel_.alpha is None


# -------------------------------------------------------- choose_mechanism
def test_choose_urr_at_log_k_with_few_sensitive_values():
    mech, table = choose_mechanism(100, math.log(100), sensitive=[0, 1, 2])
    assert isinstance(mech, UtilityOptimizedRR)
    assert table.index[0] == "uRR"
    assert {"uBD", "uSS", "uHR", "uRAP", "uOUE", "RR", "OUE", "HR"} <= set(table.index)


def test_choose_ldp_without_sensitive_set():
    mech, table = choose_mechanism(4, 4.0)
    assert table.index[0] == "RR"  # small k, large epsilon: k-RR
    mech, table = choose_mechanism(200, 0.5)
    assert table.index[0] in ("OUE", "SS", "OLH")  # the high-privacy LDP oracles
    assert not any(name.startswith("u") for name in table.index)


def test_choose_ubd_mixture_in_the_middle_range():
    mech, table = choose_mechanism(20, 1.0, sensitive=[0, 1, 2, 3])
    assert table.index[0] == "uBD"
    assert table.loc["uBD", "loss"] == pytest.approx(ubd_converse_bound(20, 4, 1.0), rel=1e-6)
    assert (table["loss"].iloc[1:] >= table["loss"].iloc[0]).all()


def test_choose_with_prior_and_n():
    prior = np.full(20, 1 / 20)
    _, worst = choose_mechanism(20, 1.0, sensitive=[0, 1, 2, 3])
    _, at_prior = choose_mechanism(20, 1.0, sensitive=[0, 1, 2, 3], prior=prior, n=1000)
    for name in at_prior.index:
        assert at_prior.loc[name, "loss"] * 1000 <= worst.loc[name, "loss"] * (1 + 1e-9)
    with pytest.raises(ValueError, match="prior"):
        choose_mechanism(20, 1.0, prior=np.ones(20))
    with pytest.raises(ValueError, match="loss"):
        choose_mechanism(20, 1.0, loss="l3")


@pytest.mark.parametrize(
    "mech",
    [
        UtilityOptimizedHadamardResponse(1.0, sensitive=[0, 1, 2], categories=range(8)),
        UtilityOptimizedSubsetSelection(1.0, sensitive=[0, 1, 2, 3], categories=range(8)),
        UtilityOptimizedBlockDesign(
            1.0, sensitive=[0, 1, 2, 3], subset_size="optimal", categories=range(8)
        ),
    ],
    ids=["uHR", "uSS", "uBD-optimal"],
)
def test_every_estimator_works_in_a_pipeline(mech):
    from sklearn.base import clone
    from sklearn.pipeline import make_pipeline

    from sklearn_uldp import ThresholdEstimator

    assert clone(mech).get_params() == mech.get_params()
    p = np.array([0.3, 0.2, 0.05, 0.05, 0.1, 0.1, 0.1, 0.1])
    X = np.random.default_rng(0).choice(8, p=p, size=(30_000, 1))
    for est in (EmpiricalEstimator(), ThresholdEstimator(), EMEstimator()):
        pipe = make_pipeline(clone(mech).set_params(random_state=0), est).fit(X)
        assert np.abs(pipe[-1].distribution_ - p).max() < 0.06
