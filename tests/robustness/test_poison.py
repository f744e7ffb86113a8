"""poison: the fake users' reports, per attack and family, and the container contract.

The fake users' reports are checked against the model the recovery relies
on: the mean linear statistic of the MGA's crafted reports (LDPRecover's
phi_T), the output law of "random input" (the channel's rows averaged over
the targets) and of "random report" (uniform), statistically with
tolerances a wrong sampler fails.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from _chisquare import chi_square_pvalue
from hypothesis import given, settings
from hypothesis import strategies as st

import sklearn_uldp as U
from sklearn_uldp import EmpiricalEstimator
from sklearn_uldp.mechanisms import UtilityOptimizedUnaryEncoding
from sklearn_uldp.robustness import ATTACKS, poison
from sklearn_uldp.robustness._models import fake_model

K = 16


CATS = list(range(K))
TARGETS = [13, 14, 15]
SENSITIVE = CATS[K // 2 :]

MECHANISMS = {
    "k-RR": lambda: U.RandomizedResponse(1.0, categories=CATS),
    "OUE": lambda: U.RAPPOR(1.0, theta=0.5, categories=CATS),
    "RAPPOR": lambda: U.RAPPOR(1.0, categories=CATS),
    "OLH": lambda: U.OptimizedLocalHashing(1.0, categories=CATS),
    "SS": lambda: U.SubsetSelection(1.0, categories=CATS),
    "HR": lambda: U.HadamardResponse(1.0, categories=CATS),
    "uRR": lambda: U.UtilityOptimizedRR(1.0, sensitive=SENSITIVE, categories=CATS),
    "uRAP": lambda: U.UtilityOptimizedRAPPOR(1.0, sensitive=SENSITIVE, categories=CATS),
    "uOUE": lambda: U.UtilityOptimizedOUE(1.0, sensitive=SENSITIVE, categories=CATS),
    "uSS": lambda: U.UtilityOptimizedSubsetSelection(1.0, sensitive=SENSITIVE, categories=CATS),
    "uBD": lambda: U.UtilityOptimizedBlockDesign(1.0, sensitive=SENSITIVE, categories=CATS),
    "uHR": lambda: U.UtilityOptimizedHadamardResponse(1.0, sensitive=SENSITIVE, categories=CATS),
}


def _honest(name, n=2_000, seed=0):
    X = np.random.default_rng(seed).choice(K // 2, size=(n, 1))
    return MECHANISMS[name]().set_params(random_state=seed + 1).fit_transform(X)


def _fake_estimate(reports, n_honest, channel):
    """The linear (unbiased) estimate computed on the fake users' rows alone."""
    fake = reports[n_honest:]
    if isinstance(fake, pd.DataFrame):
        fake = fake.to_numpy()
    return EmpiricalEstimator(mechanism=channel).fit(np.asarray(fake)).distribution_


@pytest.mark.parametrize("name", sorted(MECHANISMS))
def test_mga_statistic_matches_the_model(name):
    # the recovery subtracts eta * phi_T with phi_T the model's mean
    # statistic: the crafted reports' empirical statistic must match it
    honest = _honest(name, n=200)
    channel = honest.channel
    m = 20_000
    poisoned = poison(honest, m, targets=TARGETS, random_state=3)
    phi = channel.coef_a * fake_model(channel, np.asarray(TARGETS), "mga").statistic_mean()
    phi = phi + channel.coef_b
    got = _fake_estimate(poisoned, 200, channel)
    # each item's statistic is a mean of m values in [0, 1]: sd <= |a| / (2 sqrt(m))
    sd = np.abs(channel.coef_a) / (2 * np.sqrt(m))
    np.testing.assert_array_less(np.abs(got - phi), 5 * sd + 1e-12)
    # a genuine holder of a target adds 1 to the targets' expected sum: a
    # crafted report adds more
    assert phi[TARGETS].sum() > 1.5


@pytest.mark.parametrize("name", ["k-RR", "OLH", "HR", "uRR", "uHR"])
def test_random_input_is_the_channel_averaged_over_targets(name):
    honest = _honest(name, n=100)
    channel = honest.channel
    m = 30_000
    poisoned = poison(honest, m, targets=TARGETS, attack="random input", random_state=4)
    law = channel.matrix()[TARGETS].mean(axis=0)
    codes = channel.encode_reports(np.asarray(poisoned[100:]))
    counts = np.bincount(np.asarray(codes).ravel(), minlength=law.size)
    assert chi_square_pvalue(counts, law) > 1e-4


def test_random_report_is_uniform_over_outputs():
    honest = _honest("k-RR", n=100)
    poisoned = poison(honest, 32_000, targets=TARGETS, attack="random report", random_state=5)
    counts = np.bincount(np.asarray(poisoned[100:]).ravel().astype(int), minlength=K)
    assert chi_square_pvalue(counts, np.full(K, 1.0 / K)) > 1e-4
    # OUE: every bit of a uniform bit vector is 1 with probability 1/2
    bits = poison(_honest("OUE", n=100), 32_000, targets=TARGETS, attack="random report")
    means = np.asarray(bits[100:]).mean(axis=0)
    np.testing.assert_array_less(np.abs(means - 0.5), 5 * 0.5 / np.sqrt(32_000))


@pytest.mark.parametrize("attack", ATTACKS)
def test_mga_gains_most(attack):
    # the maximal gain attack maximizes the targets' expected estimate: no
    # other attack's fake users gain more per report (k-RR, OUE, uRR)
    for name in ["k-RR", "OUE", "uRR"]:
        honest = _honest(name, n=100)
        channel = honest.channel
        fake = poison(honest, 20_000, targets=TARGETS, attack=attack, random_state=6)
        gain = _fake_estimate(fake, 100, channel)[TARGETS].sum()
        mga = channel.coef_a * fake_model(channel, np.asarray(TARGETS), "mga").statistic_mean()
        mga = (mga + channel.coef_b)[TARGETS].sum()
        sd = 3 * np.abs(channel.coef_a).max() / (2 * np.sqrt(20_000))
        assert gain <= mga + 5 * sd


def test_oue_mga_reports_set_every_target_bit_and_an_honest_number_of_bits():
    honest = _honest("OUE", n=5_000)
    fake = np.asarray(poison(honest, 1_000, targets=TARGETS, random_state=7)[5_000:])
    assert (fake[:, TARGETS] == 1).all()
    honest_bits = np.asarray(honest).sum(axis=1).mean()
    assert abs(fake.sum(axis=1).mean() - honest_bits) <= 1.0


def test_containers_and_spec_are_kept():
    X = np.random.default_rng(0).choice(K, size=(300, 1))
    rr = U.RandomizedResponse(1.0, categories=CATS, random_state=0)
    frame = rr.set_output(transform="pandas").fit_transform(X)
    out = poison(frame, 10, targets=[15], random_state=1)
    assert isinstance(out, pd.DataFrame) and out.shape == (310, 1)
    assert out.attrs == frame.attrs and list(out.dtypes) == list(frame.dtypes)
    for kwargs, kind in [({"sparse_output": True}, sp.sparray), ({"packed_output": True}, None)]:
        mech = U.RAPPOR(1.0, theta=0.5, categories=CATS, random_state=0, **kwargs)
        reports = mech.fit_transform(X)
        out = poison(reports, 10, targets=[14, 15], random_state=1)
        assert type(out) is type(reports) and out.shape == (310, K)
        assert out.channel == reports.channel
        if kind is not None:
            assert sp.issparse(out)
    dense = U.RAPPOR(1.0, theta=0.5, categories=CATS, random_state=0).fit_transform(X)
    packed = U.RAPPOR(1.0, theta=0.5, categories=CATS, random_state=0, packed_output=True)
    packed = packed.fit_transform(X)
    np.testing.assert_array_equal(
        np.asarray(poison(dense, 10, [14, 15], random_state=2))[300:],
        poison(packed, 10, [14, 15], random_state=2).toarray()[300:],
    )


def test_inputs_not_modified_and_zero_fake_users():
    reports = _honest("OUE", n=500)
    before = np.array(reports, copy=True)
    out = poison(reports, 0, targets=TARGETS, random_state=0)
    np.testing.assert_array_equal(np.asarray(reports), before)
    np.testing.assert_array_equal(np.asarray(out), before)
    out = poison(reports, 5, targets=TARGETS, random_state=0)
    np.testing.assert_array_equal(np.asarray(reports), before)


def test_randomness():
    reports = _honest("OLH", n=50)
    fresh = [np.asarray(poison(reports, 200, TARGETS, attack="random input")) for _ in range(2)]
    assert not np.array_equal(fresh[0], fresh[1])  # None: fresh entropy each call
    seeded = [np.asarray(poison(reports, 200, TARGETS, random_state=9)) for _ in range(2)]
    np.testing.assert_array_equal(seeded[0], seeded[1])


def test_errors_say_what_and_quote_no_value():
    reports = _honest("k-RR", n=50)
    secret = "secret-category-name"
    with pytest.raises(ValueError, match="not categories") as info:
        poison(reports, 5, targets=[secret])
    assert secret not in str(info.value)
    with pytest.raises(ValueError, match="n_fake"):
        poison(reports, -1, targets=TARGETS)
    with pytest.raises(ValueError, match="n_fake"):
        poison(reports, True, targets=TARGETS)
    with pytest.raises(ValueError, match="attack must be one of"):
        poison(reports, 5, targets=TARGETS, attack="bogus")
    with pytest.raises(ValueError, match="same category twice"):
        poison(reports, 5, targets=[15, 15])
    with pytest.raises(ValueError, match="which mechanism"):
        poison(np.zeros((5, 1), dtype=int), 5, targets=TARGETS)
    with pytest.raises(ValueError, match="one column"):
        poison(_honest("OUE", n=10)[:, :4], 5, targets=TARGETS, mechanism=_honest("OUE").channel)
    uue = UtilityOptimizedUnaryEncoding(1.0, sensitive=SENSITIVE, categories=CATS, random_state=0)
    with pytest.raises(ValueError, match="uUE"):
        poison(uue.fit_transform(np.zeros((10, 1), dtype=int)), 5, targets=TARGETS)


@settings(max_examples=25, deadline=None)
@given(
    n_fake=st.integers(0, 300),
    targets=st.sets(st.integers(0, K - 1), min_size=1, max_size=5),
    seed=st.integers(0, 2**32 - 1),
)
def test_krr_mga_sends_only_targets(n_fake, targets, seed):
    reports = _honest("k-RR", n=20)
    out = poison(reports, n_fake, targets=sorted(targets), random_state=seed)
    assert out.shape == (20 + n_fake, 1) and out.channel == reports.channel
    assert set(np.asarray(out[20:]).ravel().tolist()) <= targets
