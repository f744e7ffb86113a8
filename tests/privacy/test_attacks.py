"""attack_success_rate: the Bayes-optimal single-report success, on exact channels.

Every structured path (bit vectors without their 2^k outputs, the subset
family, local hashing from its hash table, row blocks) is checked against a
reference written here from the matrix alone, to round-off; the closed forms
against the exact value to 1e-9; and the rate against the success of the
Bayes rule applied to sampled reports, with a tolerance a wrong rate fails.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import sklearn_uldp as U
from sklearn_uldp import longitudinal as L
from sklearn_uldp import numeric as N
from sklearn_uldp.mechanisms import UnaryEncodingChannel, UtilityOptimizedBlockDesignChannel
from sklearn_uldp.mechanisms._subset_selection import SubsetSelectionChannel
from sklearn_uldp.mechanisms._utility_optimized_subset import (
    UtilityOptimizedSubsetSelectionChannel,
)
from sklearn_uldp.privacy import AttackSuccess, attack_success_rate
from sklearn_uldp.privacy import _attacks as attacks
from sklearn_uldp.privacy._shuffle import _invertible_mass

# Closed forms and structured sums against the matrix, to 1e-10 relative
# (1e-9 absolute on rates): both sides sum many exp/log terms in different
# orders, whose last bits another processor's SIMD loops may change; a wrong
# formula is off by far more.
pytestmark = pytest.mark.pinned


def reference(Q, prior):
    """Sum_y max_x pi(x) Q(y|x) and P(guess = x | X = x), ties split evenly."""
    V = prior[:, None] * Q
    top = V.max(axis=0)
    win = (V >= top * (1 - 1e-9)) & (V > 0)
    share = win / np.maximum(win.sum(axis=0), 1)
    return float(top.sum()), (Q * share).sum(axis=1)


PRIORS = {
    "uniform": lambda k, rng: np.full(k, 1.0 / k),
    "random": lambda k, rng: rng.dirichlet(np.ones(k)),
    "two_levels": lambda k, rng: (
        np.r_[np.full(k // 2, 1.5), np.ones(k - k // 2)] / (1.5 * (k // 2) + k - k // 2)
    ),
    "zeros": lambda k, rng: np.r_[rng.dirichlet(np.ones(k - 2)), 0.0, 0.0],
}

CATS = list(range(8))
MASK = np.array([1, 1, 1, 1, 1, 0, 0, 0], dtype=bool)
STRUCTURED = {
    "rappor": UnaryEncodingChannel(CATS, 1.0, 0.6225, np.ones(8, bool)),
    "oue": UnaryEncodingChannel(CATS, 2.0, 0.5, np.ones(8, bool)),
    "urap": UnaryEncodingChannel(CATS, 1.3, 0.6, MASK),
    "uoue": UnaryEncodingChannel(CATS, 0.7, 0.5, MASK),
    "ss": SubsetSelectionChannel(CATS, 1.0, 3),
    "ubd": UtilityOptimizedBlockDesignChannel(CATS, 1.2, MASK, 2),
    "ubd_mixture": UtilityOptimizedBlockDesignChannel(CATS, 1.2, MASK, {1: 0.3, 2: 0.7}),
    "uss": UtilityOptimizedSubsetSelectionChannel(CATS, 1.2, MASK, 2),
}


@pytest.mark.parametrize("prior_name", sorted(PRIORS))
@pytest.mark.parametrize("name", sorted(STRUCTURED))
def test_structured_paths_equal_the_matrix(name, prior_name):
    channel = STRUCTURED[name]
    prior = PRIORS[prior_name](8, np.random.default_rng(3))
    rate, per_value = reference(channel.matrix(), prior)
    if attacks._is_unary(channel):
        got_rate, got_values = attacks._unary_path(channel, prior)
    else:
        got_rate, got_values = attacks._subset_path(
            channel, prior, attacks._subset_structure(channel)
        )
    # sums of a few hundred terms: round-off only
    assert got_rate == pytest.approx(rate, rel=1e-10, abs=1e-14)
    if got_values is None:  # the subset family under a prior with some ties
        assert prior_name == "two_levels" and not attacks._is_unary(channel)
    else:
        ok = prior > 0
        np.testing.assert_allclose(got_values[ok], per_value[ok], rtol=1e-10, atol=1e-13)
    # the public result falls back to the matrix for those (small) channels
    result = attack_success_rate(channel, prior)
    assert result.rate == pytest.approx(rate, rel=1e-10)
    assert result.per_value is not None
    ok = prior > 0
    np.testing.assert_allclose(result.per_value[ok], per_value[ok], rtol=1e-10, atol=1e-13)
    assert np.all(np.isnan(result.per_value[~ok]))
    # the rate is the prior-weighted per-value success, whatever the ties
    assert np.nansum(prior * result.per_value) == pytest.approx(rate, rel=1e-10)


@pytest.mark.parametrize(
    ("epsilon", "k"), [(0.1, 2), (1.0, 2), (1.0, 10), (3.0, 64), (0.5, 1000), (8.0, 5)]
)
def test_krr_closed_form(epsilon, k):
    asr = attack_success_rate(U.RandomizedResponse(epsilon, categories=range(k)))
    closed = math.exp(epsilon) / (math.exp(epsilon) + k - 1)
    assert asr.closed_form == pytest.approx(closed, rel=1e-10)
    assert abs(asr.rate - closed) < 1e-9
    np.testing.assert_allclose(asr.per_value, closed, rtol=1e-9)
    assert asr.sensitive == pytest.approx(closed, rel=1e-9)
    assert asr.non_sensitive is None
    assert asr.baseline == pytest.approx(1.0 / k)


@pytest.mark.parametrize(("epsilon", "s", "k"), [(1.0, 3, 6), (0.5, 2, 10), (2.0, 10, 12)])
def test_urr_split_closed_form(epsilon, s, k):
    E = math.exp(epsilon)
    u = s + E - 1
    mech = U.UtilityOptimizedRR(epsilon, sensitive=list(range(s)), categories=range(k))
    asr = attack_success_rate(mech)
    # a sensitive value is guessed right when it is kept (the posterior mode
    # is the report); a non-sensitive one when it is reported in clear
    assert abs(asr.sensitive - E / u) < 1e-9
    assert abs(asr.non_sensitive - (E - 1) / u) < 1e-9
    assert abs(asr.rate - (s * E + (k - s) * (E - 1)) / (k * u)) < 1e-9
    assert abs(asr.closed_form - asr.rate) < 1e-9


def test_unary_and_subset_closed_forms_at_large_k():
    # the structured paths at k where the matrix cannot be built, against the
    # closed forms of the docs (uniform prior)
    for mech in [
        U.RAPPOR(1.0, categories=range(200)),
        U.UtilityOptimizedOUE(1.0, sensitive=range(50), categories=range(200)),
        U.SubsetSelection(2.0, categories=range(300)),
        U.UtilityOptimizedBlockDesign(1.0, sensitive=range(40), categories=range(120)),
    ]:
        asr = attack_success_rate(mech.fit())
        assert asr.closed_form is not None
        assert abs(asr.rate - asr.closed_form) < 1e-9
    E = math.exp(2.0)
    ss = attack_success_rate(U.SubsetSelection(2.0, categories=range(300), subset_size=7))
    assert abs(ss.rate - E / (7 * E + 300 - 7)) < 1e-9


def test_oue_closed_form_by_hand():
    epsilon, k = 1.0, 64
    q = 1 / (math.exp(epsilon) + 1)
    # own bit set (1/2): a uniform guess among the set bits; no bit set: among all
    expected = 0.5 * (1 - (1 - q) ** k) / (k * q) + 0.5 * (1 - q) ** (k - 1) / k
    asr = attack_success_rate(U.RAPPOR(epsilon, theta=0.5, categories=range(k)).fit())
    assert abs(asr.rate - expected) < 1e-9


def test_local_hashing_blocks_equal_the_whole_matrix():
    mech = U.OptimizedLocalHashing(1.0, categories=range(20)).fit()
    prior = np.random.default_rng(0).dirichlet(np.ones(20))
    rate, per_value = reference(mech.channel_.matrix(), prior)
    whole = attack_success_rate(mech, prior)
    old = attacks._BLOCK_ENTRIES
    try:
        attacks._BLOCK_ENTRIES = 50  # row blocks of the hash table, a few rows each
        blocked = attack_success_rate(mech, prior)
    finally:
        attacks._BLOCK_ENTRIES = old
    for asr in (whole, blocked):
        assert asr.rate == pytest.approx(rate, rel=1e-10)
        np.testing.assert_allclose(asr.per_value, per_value, rtol=1e-10, atol=1e-14)


def test_row_blocks_of_structured_products():
    # Hadamard response read by rows through forward(): the same as its matrix
    mech = U.HadamardResponse(1.0, categories=range(30)).fit()
    prior = np.random.default_rng(1).dirichlet(np.ones(30))
    rate, per_value = reference(mech.channel_.matrix(), prior)
    old = attacks._BLOCK_ENTRIES
    try:
        attacks._BLOCK_ENTRIES = 40
        asr = attack_success_rate(mech, prior)
    finally:
        attacks._BLOCK_ENTRIES = old
    assert asr.rate == pytest.approx(rate, rel=1e-10)
    np.testing.assert_allclose(asr.per_value, per_value, rtol=1e-10, atol=1e-14)


def _mechanisms():
    cats, sens = list(range(6)), [0, 1, 2]
    return {
        "rr": U.RandomizedResponse(1.0, categories=cats),
        "urr": U.UtilityOptimizedRR(1.0, sensitive=sens, categories=cats),
        "rappor": U.RAPPOR(1.0, categories=cats),
        "urap": U.UtilityOptimizedRAPPOR(1.0, sensitive=sens, categories=cats),
        "uoue": U.UtilityOptimizedOUE(1.0, sensitive=sens, categories=cats),
        "ubd": U.UtilityOptimizedBlockDesign(1.0, sensitive=sens, categories=cats),
        "uss": U.UtilityOptimizedSubsetSelection(1.0, sensitive=sens, categories=cats),
        "ss": U.SubsetSelection(1.0, categories=cats),
        "hr": U.HadamardResponse(1.0, categories=cats),
        "hlhr": U.HighLowHadamardResponse(1.0, sensitive=sens, categories=cats),
        "bhr": U.BlockHadamardResponse(1.0, blocks=[0, 0, 0, 1, 1, 1], categories=cats),
        "olh": U.OptimizedLocalHashing(1.0, categories=cats),
        "blh": U.BinaryLocalHashing(1.0, categories=cats),
        "cms": U.CountMeanSketch(1.0, categories=cats, n_buckets=4, n_hashes=2),
        "hcms": U.HadamardCountMeanSketch(1.0, categories=cats, n_buckets=4, n_hashes=2),
        "binary": U.BinaryOptimalResponse(1.0, 0.5, categories=[0, 1]),
        "lgrr": L.LongitudinalGRR(2.0, 1.0, categories=cats),
        "lue": L.LongitudinalUE(2.0, 1.0, categories=cats),
        "loloha": L.LongitudinalLocalHashing(2.0, 1.0, categories=cats),
        "dbitflip": L.DBitFlipPM(1.0, categories=cats),
        "ulrr": L.UtilityOptimizedLongitudinalRR(2.0, 1.0, sensitive=sens, categories=cats),
        "ulrap": L.UtilityOptimizedLongitudinalRAPPOR(2.0, 1.0, sensitive=sens, categories=cats),
        "duchi": N.DuchiMechanism(1.0, bounds=(0, 1)),
        "piecewise": N.PiecewiseMechanism(1.0, bounds=(0, 1)),
        "square_wave": N.SquareWave(1.0, bounds=(0, 1)),
        "hybrid": N.HybridMechanism(1.0, bounds=(0, 1)),
        "uobm": N.UtilityOptimizedOneBitMechanism(1.0, bounds=(0, 1), sensitive=(0, 0.5)),
    }


@pytest.mark.parametrize("name", sorted(_mechanisms()))
def test_every_mechanism_against_its_matrix(name):
    mech = _mechanisms()[name].fit()
    channel = mech.channel_
    numeric = channel.report_format == "numeric"
    Q = channel.matrix(channel.default_inputs()) if numeric else channel.matrix()
    prior = np.random.default_rng(5).dirichlet(np.ones(Q.shape[0]))
    asr = attack_success_rate(mech, prior)
    assert isinstance(asr, AttackSuccess)
    rate, per_value = reference(Q, prior)
    assert asr.rate == pytest.approx(rate, rel=1e-10)
    np.testing.assert_allclose(asr.per_value, per_value, rtol=1e-9, atol=1e-13)
    assert asr.baseline <= asr.rate <= 1.0
    # epsilon-LDP caps the gain of one report: rate <= e^eps max(prior)
    if name in ("rr", "rappor", "ss", "hr", "olh", "blh", "cms", "hcms", "duchi", "piecewise"):
        assert asr.rate <= math.exp(channel.epsilon) * asr.baseline * (1 + 1e-10)


def test_utility_optimized_split_and_clear_reports():
    # A non-sensitive value is guessed at least whenever it is reported in
    # clear (its invertible output). At a small budget that is rare, and a
    # sensitive value (fewer rivals among the protected outputs) is guessed
    # more often: the split is not ordered in general.
    for mech in [
        U.UtilityOptimizedRAPPOR(0.5, sensitive=range(10), categories=range(20)),
        U.UtilityOptimizedBlockDesign(0.5, sensitive=range(10), categories=range(20)),
        U.HighLowHadamardResponse(0.5, sensitive=range(10), categories=range(20)),
    ]:
        mech.fit()
        asr = attack_success_rate(mech)
        clear = _invertible_mass(mech.channel_)  # P(a non-sensitive value in clear)
        assert asr.non_sensitive >= clear - 1e-12
        total = (10 * asr.sensitive + 10 * asr.non_sensitive) / 20
        assert total == pytest.approx(asr.rate, rel=1e-10)
    # Under a uniform prior every protected output is claimed by a sensitive
    # value it names, so a sensitive value is guessed *more* often than a
    # non-sensitive one (uRR: e^eps/u against (e^eps - 1)/u); ULDP bounds
    # what a report tells about a sensitive value, not how often it is right.
    urr = attack_success_rate(
        U.UtilityOptimizedRR(4.0, sensitive=range(10), categories=range(20)).fit()
    )
    assert urr.sensitive - urr.non_sensitive == pytest.approx(1 / (10 + math.exp(4.0) - 1))
    # A prior that makes the sensitive values rare turns it around.
    prior = np.r_[np.full(10, 0.01), np.full(10, 0.09)]
    rare = attack_success_rate(
        U.UtilityOptimizedRR(1.0, sensitive=range(10), categories=range(20)).fit(), prior
    )
    assert rare.sensitive < rare.non_sensitive


def test_expected_posterior_is_below_the_bayes_rate():
    mech = U.RandomizedResponse(1.0, categories=range(5))
    asr = attack_success_rate(mech)
    E = math.e
    # a posterior sampler is right with probability sum_y sum_x pi Q^2 / m(y)
    c1, c2 = E / (E + 4), 1 / (E + 4)
    assert asr.expected_posterior == pytest.approx(c1**2 + 4 * c2**2, rel=1e-10)
    assert asr.baseline < asr.expected_posterior < asr.rate


def _bayes_guess(likelihood, prior, rng):
    scores = likelihood * prior[None, :]
    top = scores.max(axis=1, keepdims=True)
    winners = scores >= top * (1 - 1e-9)
    noise = rng.random(winners.shape)
    return np.argmax(np.where(winners, noise, -1.0), axis=1)


@pytest.mark.parametrize(
    "make",
    [
        lambda: U.RAPPOR(1.0, theta=0.5, categories=range(32)),
        lambda: U.UtilityOptimizedRAPPOR(1.0, sensitive=range(10), categories=range(32)),
        lambda: U.RandomizedResponse(2.0, categories=range(12)),
    ],
)
def test_the_rate_is_the_success_of_the_bayes_rule_on_samples(make):
    """Sample users, privatize them, guess with the posterior mode: the
    empirical success must match the exact rate within 4 standard errors
    (a rate off by 2 % fails: the standard error is about 0.35 %)."""
    rng = np.random.default_rng(11)
    mech = make().set_params(random_state=12).fit()
    k = mech.channel_.n_categories
    prior = rng.dirichlet(np.ones(k))
    n = 20_000
    x = rng.choice(k, size=n, p=prior)
    reports = mech.transform(np.asarray(mech.channel_.categories)[x].reshape(-1, 1))
    codes = mech.channel_.encode_reports(reports)
    lik = np.asarray(mech.channel_.likelihood(codes), dtype=float)
    guess = _bayes_guess(lik, prior, rng)
    hits = np.mean(guess == x)
    asr = attack_success_rate(mech, prior)
    se = math.sqrt(asr.rate * (1 - asr.rate) / n)
    assert abs(hits - asr.rate) < 4 * se
    assert 4 * se < 0.02


def test_numeric_two_inputs_is_binary_randomized_response():
    # Duchi's mechanism between its two ends is binary RR at the same budget
    mech = N.DuchiMechanism(1.0, bounds=(0, 1)).fit()
    asr = attack_success_rate(mech, inputs=[0.0, 1.0])
    assert abs(asr.rate - math.e / (math.e + 1)) < 1e-9


@pytest.mark.parametrize(
    ("prior", "match"),
    [
        ([0.5, 0.5], "one probability per input value"),
        ([0.5, 0.6, -0.1], "finite probabilities >= 0"),
        ([0.2, 0.2, 0.2], "must sum to 1"),
        ([np.nan, 0.5, 0.5], "finite"),
        ("uniform", "array of 3 probabilities"),
    ],
)
def test_bad_priors(prior, match):
    mech = U.RandomizedResponse(1.0, categories=["a", "b", "c"])
    with pytest.raises((ValueError, TypeError), match=match):
        attack_success_rate(mech, prior)


def test_inputs_only_for_numeric_channels():
    with pytest.raises(ValueError, match="numeric channels"):
        attack_success_rate(U.RandomizedResponse(1.0, categories=[0, 1]), inputs=[0, 1])


def test_spec_and_channel_give_the_same():
    mech = U.UtilityOptimizedRR(1.0, sensitive=["b"], categories=["a", "b", "c"]).fit()
    a = attack_success_rate(mech)
    b = attack_success_rate(mech.spec())
    c = attack_success_rate(mech.channel_)
    assert a.rate == b.rate == c.rate
