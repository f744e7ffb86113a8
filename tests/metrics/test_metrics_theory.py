"""Losses on hand examples, and the closed-form utility theory against Monte Carlo.

``expected_l2_loss`` is exact (mathematics §2): with users drawn i.i.d. from p
each repetition, the mean squared-l2 loss of the empirical estimator over R
repetitions must match it within Z standard errors of the Monte-Carlo mean
(Z from a Bonferroni-corrected level ALPHA). ``expected_l1_loss`` is the
normal approximation; at large n it must match to the same precision plus
the approximation error. The same statistic rejects a theory with a 10 %
error in epsilon (the test can fail).
"""

import numpy as np
import pytest
from scipy import stats

from sklearn_uldp import (
    RAPPOR,
    EmpiricalEstimator,
    NonPrivate,
    RandomizedResponse,
    UtilityOptimizedRAPPOR,
    UtilityOptimizedRR,
)
from sklearn_uldp.mechanisms import attach_channel
from sklearn_uldp.mechanisms._randomized_response import RandomizedResponseChannel
from sklearn_uldp.metrics import (
    expected_l1_loss,
    expected_l2_loss,
    expected_total_variation,
    l1_loss,
    l2_loss,
    mean_squared_error,
    total_variation,
)

ALPHA = 1e-6
K = 8
CATS = list(range(K))
P = np.array([0.3, 0.2, 0.15, 0.1, 0.1, 0.08, 0.07, 0.0])

MECHANISMS = {
    "rr": lambda: RandomizedResponse(1.0, categories=CATS),
    "urr": lambda: UtilityOptimizedRR(1.0, sensitive=[0, 3, 7], categories=CATS),
    "urr-lnk": lambda: UtilityOptimizedRR(np.log(K), sensitive=[6], categories=CATS),
    "rappor": lambda: RAPPOR(1.0, categories=CATS),
    "oue": lambda: RAPPOR(2.0, theta=0.5, categories=CATS),
    "urap": lambda: UtilityOptimizedRAPPOR(1.0, sensitive=[0, 3, 7], categories=CATS),
    "urap-theta": lambda: UtilityOptimizedRAPPOR(0.5, sensitive=[1, 2], theta=0.8, categories=CATS),
    "identity": lambda: NonPrivate(categories=CATS),
}
N_MECH = len(MECHANISMS)
# two-sided, Bonferroni over the mechanisms
Z = stats.norm.isf(ALPHA / (2 * N_MECH))


# ------------------------------------------------------------------- losses
# Pinned floats (tests/README.md): tolerances that hold on any processor.
# Losses of hand examples and the closed forms of the utility theory are a few
# operations (1e-12); the Monte-Carlo checks are statistical (Z standard
# errors).
@pytest.mark.pinned
def test_losses_hand_examples():
    p, q = [0.5, 0.5], [0.25, 0.75]
    assert l1_loss(p, q) == 0.5
    assert total_variation(p, q) == 0.25
    assert l2_loss(p, q) == 0.125
    assert mean_squared_error(p, q) == 0.0625
    p, q = [0.2, 0.3, 0.5], [0.1, 0.5, 0.4]
    assert l1_loss(p, q) == pytest.approx(0.4, abs=1e-12)
    assert total_variation(p, q) == pytest.approx(0.2, abs=1e-12)
    assert l2_loss(p, q) == pytest.approx(0.06, abs=1e-12)
    assert mean_squared_error(p, q) == pytest.approx(0.02, abs=1e-12)
    # estimates outside the simplex (the empirical estimator) are fine
    assert l1_loss([1.0, 0.0], [1.1, -0.1]) == pytest.approx(0.2)
    assert l2_loss([1.0, 0.0], [1.1, -0.1]) == pytest.approx(0.02)
    # symmetric, zero on the diagonal
    r = np.random.default_rng(0).dirichlet(np.ones(5), size=2)
    assert l1_loss(r[0], r[1]) == l1_loss(r[1], r[0])
    assert l2_loss(r[0], r[0]) == 0.0
    for fn in (l1_loss, l2_loss, total_variation, mean_squared_error):
        assert isinstance(fn(p, q), float)
        with pytest.raises(ValueError, match="same categories"):
            fn([0.5, 0.5], [1 / 3, 1 / 3, 1 / 3])
        with pytest.raises(ValueError):
            fn([[0.5, 0.5]], [[0.5, 0.5]])


# ------------------------------------------------------------- Monte Carlo
def monte_carlo_estimates(name, n, reps, seed):
    """Empirical estimates of ``reps`` independent surveys of n users ~ P.

    All reps * n users are privatized in one call of the mechanism's sampler;
    each survey's statistics are then counted per repetition.
    """
    mech = MECHANISMS[name]().fit()
    channel = mech.channel_
    rng = np.random.default_rng(seed)
    codes = rng.choice(K, p=P, size=reps * n)
    out = channel.sample(codes, rng)
    if channel.report_format == "bits":
        counts = out.reshape(reps, n, K).sum(axis=1, dtype=np.int64)
    else:
        rep = np.repeat(np.arange(reps), n)
        counts = np.bincount(rep * channel.n_outputs + out, minlength=reps * channel.n_outputs)
        counts = counts.reshape(reps, channel.n_outputs)
    p_hat = channel.coef_a * counts / n + channel.coef_b
    # the vectorized estimate is the EmpiricalEstimator's, survey by survey
    first = out[:n] if channel.report_format == "bits" else (channel.decode(out[:n]).reshape(-1, 1))
    np.testing.assert_allclose(
        EmpiricalEstimator().fit(attach_channel(first, channel)).distribution_,
        p_hat[0],
        rtol=1e-10,
        atol=1e-15,
    )
    return mech, p_hat


def mean_and_se(samples):
    samples = np.asarray(samples)
    return samples.mean(), samples.std(ddof=1) / np.sqrt(samples.size)


@pytest.mark.pinned
@pytest.mark.parametrize("name", list(MECHANISMS))
def test_expected_l2_loss_matches_monte_carlo(name):
    n, reps = 1000, 2000
    seed = list(MECHANISMS).index(name)
    mech, p_hat = monte_carlo_estimates(name, n, reps, seed=seed)
    theory = expected_l2_loss(mech, P, n)
    losses = np.square(p_hat - P).sum(axis=1)
    mean, se = mean_and_se(losses)
    if name == "identity":
        # no noise but sampling: E = sum p(1-p)/n exactly
        assert theory == pytest.approx(np.sum(P * (1 - P)) / n, rel=1e-10)
    assert abs(mean - theory) <= Z * se, (mean / theory, se / theory)
    # "within a few percent": the MC standard error is small enough for that
    assert se / theory < 0.03


def test_l2_test_rejects_wrong_theory():
    """The same statistic rejects the l2 theory of a channel with eps +10%."""
    n, reps = 1000, 2000
    mech, p_hat = monte_carlo_estimates("rr", n, reps, seed=3)
    mean, se = mean_and_se(np.square(p_hat - P).sum(axis=1))
    right = expected_l2_loss(mech, P, n)
    wrong = expected_l2_loss(RandomizedResponseChannel(CATS, 1.1), P, n)
    assert abs(mean - right) <= Z * se
    assert abs(mean - wrong) > Z * se
    # ... and a formula that forgets the (1 - m) factor of the binomial variance
    ch = mech.channel_
    m = ch.expected_frequency(P)
    no_one_minus_m = float(np.sum(ch.coef_a**2 * m / n))
    assert abs(mean - no_one_minus_m) > Z * se


@pytest.mark.pinned
@pytest.mark.slow
@pytest.mark.parametrize("name", ["rr", "urr", "oue", "urap", "identity"])
def test_expected_l1_loss_large_n(name):
    n, reps = 10_000, 500
    mech, p_hat = monte_carlo_estimates(name, n, reps, seed=17)
    theory = expected_l1_loss(mech, P, n)
    mean, se = mean_and_se(np.abs(p_hat - P).sum(axis=1))
    # Normal approximation of each |binomial deviation|: its relative error is
    # O(1/(n m(1-m))), below 1e-3 here; allow it on top of the MC error.
    assert abs(mean - theory) <= Z * se + 1e-3 * theory, (mean / theory, se / theory)
    assert se / theory < 0.02
    assert expected_total_variation(mech, P, n) == pytest.approx(theory / 2, rel=1e-10)


@pytest.mark.pinned
def test_theory_closed_forms():
    """mathematics §2 variances by hand: RR null variance, uRR invertible categories."""
    n, E = 500, np.exp(1.0)
    # RR with p = e_0 on k = 2: m = (E, 1)/(1 + E), a = (1 + E)/(E - 1)
    m0 = E / (1 + E)
    a = (1 + E) / (E - 1)
    expected = 2 * a**2 * m0 * (1 - m0) / n
    rr = RandomizedResponse(1.0, categories=[0, 1])
    assert expected_l2_loss(rr, [1.0, 0.0], n) == pytest.approx(expected, rel=1e-10)
    # l1: sqrt(2/(pi n)) sum |a| sqrt(m(1-m))
    assert expected_l1_loss(rr, [1.0, 0.0], n) == pytest.approx(
        np.sqrt(2 / (np.pi * n)) * 2 * a * np.sqrt(m0 * (1 - m0)), rel=1e-10
    )
    # uRR: a category in X_N with p = 0 contributes nothing (it is never reported)
    urr = UtilityOptimizedRR(1.0, sensitive=[0], categories=[0, 1, 2])
    var = urr.fit().channel_.estimator_variance(np.array([0.5, 0.5, 0.0]), n)
    assert var[2] == 0.0 and np.all(var[:2] > 0)
    # accepted forms: fitted or unfitted mechanism, channel, spec dict
    fitted = urr.fit()
    ref = expected_l2_loss(fitted, [0.2, 0.3, 0.5], n)
    for obj in (urr, fitted.channel_, fitted.spec()):
        assert expected_l2_loss(obj, [0.2, 0.3, 0.5], n) == ref
    with pytest.raises(ValueError, match="distribution over the 3"):
        expected_l2_loss(urr, [0.5, 0.5], n)
