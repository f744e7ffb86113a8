"""L-UE's two rounds in one compiled pass (issue 36): the reports keep their law.

``LongitudinalUE.transform`` draws the memoized permanent bits and the
instantaneous flips in one pass over the users' keystreams (the flips from
the generator's raw words: one byte a bit, a uniform on ties). These tests
hold the reports of the four variants to the exact channel (chi-square on
the whole report, k = 3: 8 outputs) with a test that a sampler off by 0.01
in one flip probability fails, and each report bit to its own permanent
bit (the flips of a 0 bit and of a 1 bit, against the memoized answers of
the same users).
"""

from __future__ import annotations

import numpy as np
import pytest
from _chisquare import chi_square_pvalue

from sklearn_uldp.longitudinal import LongitudinalUE
from sklearn_uldp.longitudinal._unary import _realized_ue_bits, _ue_compose
from sklearn_uldp.mechanisms._rappor import _byte_realized
from sklearn_uldp.utils import generate_user_secrets

KINDS = {
    "L-SUE": ("SUE", "SUE"),
    "L-OSUE": ("OUE", "SUE"),
    "L-OUE": ("OUE", "OUE"),
    "L-SOUE": ("SUE", "OUE"),
}


def _mechanism(kind, k=3, **params):
    permanent, instantaneous = KINDS[kind]
    return LongitudinalUE(
        2.0, 1.0, permanent=permanent, instantaneous=instantaneous, categories=range(k), **params
    ).fit()


def _codes(reports):
    """A 0/1 report of k bits -> its column in the channel's matrix."""
    bits = np.asarray(reports, dtype=np.int64)
    return bits @ (1 << np.arange(bits.shape[1]))


def _matrix_off_by(channel, one=0.0, zero=0.0):
    """The channel of a sampler whose instantaneous round is off: a 1 bit
    reported 1 with P - ``one`` (SUE: 1 - q2; OUE: 1/2), a 0 bit with
    q2 + ``zero``."""
    p1, q1 = _byte_realized(channel.p1), _byte_realized(channel.q1)
    f = _byte_realized(channel.q2)
    p2 = (1.0 - f if channel.instantaneous == "SUE" else 0.5) - one
    ps, qs = _ue_compose(p1, q1, p2, f + zero)
    return channel._matrix_from(ps, qs, 0.0)


@pytest.mark.parametrize("kind", list(KINDS))
def test_reports_follow_the_exact_channel_and_a_wrong_one_fails(kind):
    # n such that a probability off by 0.01 gives a noncentrality of more
    # than 100 (the weakest: L-OSUE's 1 bits, 114)
    n = 1_000_000
    mech = _mechanism(kind, random_state=0)
    channel = mech.channel_
    Q = channel.realized_matrix()
    np.testing.assert_allclose(  # the realized bits the test compares with
        Q,
        channel._matrix_from(
            *_realized_ue_bits(channel.p1, channel.q1, *KINDS[kind][1:], channel.q2), 0.0
        ),
    )
    secrets = generate_user_secrets(n, random_state=1)
    for x in (0, 2):
        reports = mech.transform(np.full((n, 1), x), user_secrets=secrets)
        observed = np.bincount(_codes(reports), minlength=Q.shape[1])
        assert chi_square_pvalue(observed, Q[x]) > 1e-4
        # The test has the power to see either flip probability off by 0.01.
        assert chi_square_pvalue(observed, _matrix_off_by(channel, one=0.01)[x]) < 1e-8
        assert chi_square_pvalue(observed, _matrix_off_by(channel, zero=0.01)[x]) < 1e-8


@pytest.mark.parametrize("kind", list(KINDS))
def test_each_bit_is_its_permanent_bit_flipped(kind):
    """Against the memoized answers of the same users: a report bit is 1
    with probability 1 - f (SUE) or 1/2 (OUE) when its permanent bit is 1,
    and f when it is 0 (f the realized q2), for every bit of every value."""
    n, k = 60_000, 4
    mech = _mechanism(kind, k=k, random_state=2)
    channel = mech.channel_
    X = np.random.default_rng(3).integers(0, k, (n, 1))
    secrets = generate_user_secrets(n, random_state=4)
    permanent = np.asarray(mech.permanent_answers(X, user_secrets=secrets), dtype=bool)
    reports = np.asarray(mech.transform(X, user_secrets=secrets), dtype=bool)
    f = _byte_realized(channel.q2)
    given_one = 1.0 - f if channel.instantaneous == "SUE" else 0.5
    for bit, p in ((True, given_one), (False, f)):
        at = permanent == bit
        ones = int(reports[at].sum())
        pvalue = chi_square_pvalue(np.array([at.sum() - ones, ones]), np.array([1 - p, p]))
        assert pvalue > 1e-4, (bit, reports[at].mean(), p)


@pytest.mark.parametrize("random_state", [None, "secure"])
def test_fresh_noise_every_call(random_state):
    """Fresh OS entropy (numpy's PCG64, or the secure generator's words):
    two calls with the same secrets share the permanent bits, not the flips."""
    n = 20_000
    mech = _mechanism("L-OUE", random_state=random_state)
    X = np.zeros((n, 1), dtype=int)
    secrets = generate_user_secrets(n, random_state=5)
    a = np.asarray(mech.transform(X, user_secrets=secrets))
    b = np.asarray(mech.transform(X, user_secrets=secrets))
    assert (a != b).mean() > 0.2
    ch = mech.channel_
    p_true = ch.p1 * ch.p2 + (1 - ch.p1) * ch.q2
    assert abs(a[:, 0].mean() - p_true) < 6 * np.sqrt(p_true * (1 - p_true) / n)


def test_seeded_reports_repeat_and_simulation_sample_keeps_the_two_rounds():
    """A seed gives the same reports call for call (fit again); the
    simulation path (``channel_.sample``, nothing memoized) keeps the
    separate rounds and the same law."""
    n = 50_000
    X = np.random.default_rng(6).integers(0, 3, (n, 1))
    a = _mechanism("L-SOUE", random_state=7).transform(X)
    b = _mechanism("L-SOUE", random_state=7).transform(X)
    np.testing.assert_array_equal(a, b)
    ch = _mechanism("L-SOUE").channel_
    sampled = ch.sample(np.zeros(n, dtype=int), np.random.default_rng(8))
    Q = ch.realized_matrix()
    assert chi_square_pvalue(np.bincount(_codes(sampled), minlength=Q.shape[1]), Q[0]) > 1e-4
