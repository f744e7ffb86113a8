"""The optimized-unary round in one compiled pass: the same draws as before.

``bernoulli_or_coin`` (a 1 cell becomes a fair coin, a 0 cell a
Bernoulli(q) draw) replaced, in the instantaneous OUE round of L-OUE and
L-SOUE, a list of the 1 cells' positions and a scatter. These tests hold it
to the draws the old code made from the same generator state: the seeded
reports are unchanged bit for bit (the whole-array path; the path of a
subset of columns had a bug, see the last test).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sklearn_uldp.longitudinal import LongitudinalUE, UtilityOptimizedLongitudinalRAPPOR
from sklearn_uldp.longitudinal._unary import _ue_instantaneous_bits
from sklearn_uldp.utils import generate_user_secrets
from sklearn_uldp.utils._random import _secure_bit_generator_class
from sklearn_uldp.utils._sampling import bernoulli_matrix, bernoulli_or_coin


def _reference(cells, q, rng):
    """The round as the chunk loop computed it before (positions, scatter)."""
    out = cells.copy()
    ones = np.flatnonzero(out.reshape(-1))
    out[...] = bernoulli_matrix(out.shape, q, rng).view(np.uint8)
    out.reshape(-1)[ones] = rng.integers(0, 2, size=ones.size, dtype=np.uint8)
    return out


@settings(max_examples=40, deadline=None)
@given(
    rows=st.integers(0, 300),
    width=st.integers(1, 40),
    density=st.floats(0.0, 1.0),
    q=st.one_of(st.sampled_from([0.0, 1.0, 0.5, 1 / 256, 3 / 256]), st.floats(0.0, 1.0)),
    seed=st.integers(0, 2**32 - 1),
)
def test_same_draws_as_the_positions_and_scatter(rows, width, density, q, seed):
    cells = (np.random.default_rng(seed + 1).random((rows, width)) < density).astype(np.uint8)
    rng_new, rng_old = np.random.default_rng(seed), np.random.default_rng(seed)
    got = bernoulli_or_coin(cells.copy(), q, rng_new)
    np.testing.assert_array_equal(got, _reference(cells, q, rng_old))
    # and the generators are left in the same state (later draws unchanged)
    assert rng_new.random() == rng_old.random()


def test_same_draws_with_the_secure_generator_and_large_blocks():
    cells = (np.random.default_rng(0).random((3000, 700)) < 0.3).astype(np.uint8)  # 2 blocks
    make = _secure_bit_generator_class()  # randomgen's AESCounter or ChaCha
    key = 12345
    got = bernoulli_or_coin(cells.copy(), 0.1, np.random.Generator(make(key)))
    ref = _reference(cells, 0.1, np.random.Generator(make(key)))
    np.testing.assert_array_equal(got, ref)


def test_buffer_is_reused_and_bad_input_refused():
    cells = (np.random.default_rng(1).random((50, 8)) < 0.5).astype(np.uint8)
    buffer = np.empty(1000, dtype=np.uint8)
    got = bernoulli_or_coin(cells.copy(), 0.2, np.random.default_rng(2), buffer)
    np.testing.assert_array_equal(got, _reference(cells, 0.2, np.random.default_rng(2)))
    with pytest.raises(ValueError, match="C-contiguous uint8"):
        bernoulli_or_coin(cells.astype(bool), 0.2, np.random.default_rng(2))
    with pytest.raises(ValueError, match="C-contiguous uint8"):
        bernoulli_or_coin(np.asfortranarray(cells), 0.2, np.random.default_rng(2))


@pytest.mark.parametrize("rows", [1, 999, 45_000])  # 45,000 x 100 cells: two chunks
def test_instantaneous_round_matches_the_column_path(rows):
    """The whole-array path (compiled) and the columns path (the old chunk
    code, still used for a subset of columns) draw the same reports."""
    cells = (np.random.default_rng(rows).random((rows, 100)) < 0.2).astype(np.uint8)
    fast = _ue_instantaneous_bits(cells, "OUE", 0.15, np.random.default_rng(7))
    slow = _ue_instantaneous_bits(
        cells, "OUE", 0.15, np.random.default_rng(7), columns=np.arange(100)
    )
    np.testing.assert_array_equal(fast, slow)


@pytest.mark.parametrize("permanent", ["OUE", "SUE"])
def test_l_oue_reports_keep_their_law(permanent):
    """P(report bit = 1) per bit is the channel's theta (true bit) and the
    composed q (other bits): a wrong coin or flip moves these by far more
    than the 6-sigma tolerance."""
    n, k = 60_000, 5
    mech = LongitudinalUE(
        2.0, 1.0, permanent=permanent, instantaneous="OUE", categories=range(k), random_state=0
    ).fit()
    ch = mech.channel_
    X = np.zeros((n, 1), dtype=int)
    reports = np.asarray(mech.transform(X, user_secrets=generate_user_secrets(n, random_state=0)))
    p_true = ch.p1 * ch.p2 + (1 - ch.p1) * ch.q2
    p_other = ch.q1 * ch.p2 + (1 - ch.q1) * ch.q2
    for j, p in enumerate([p_true] + [p_other] * (k - 1)):
        share = reports[:, j].mean()
        assert abs(share - p) < 6 * np.sqrt(p * (1 - p) / n), (j, share, p)


@pytest.mark.parametrize("instantaneous", ["OUE", "SUE"])
def test_utility_optimized_longitudinal_rappor_keeps_its_law(instantaneous):
    """The sensitive bits of the utility-optimized longitudinal RAPPOR go
    through the instantaneous round on a subset of columns. Before, the OUE
    round there wrote the fair coins of the 1 bits into a temporary copy
    (the columns' block is not C-contiguous), so every sensitive bit was
    Bernoulli(q2) whatever the permanent bit: the true value's bit came out
    at 0.08 instead of 0.29 and every estimate was biased."""
    n = 60_000
    mech = UtilityOptimizedLongitudinalRAPPOR(
        2.0,
        1.0,
        instantaneous=instantaneous,
        sensitive=["a", "b"],
        categories=["a", "b", "c", "d"],
        random_state=0,
    ).fit()
    X = np.array([["a"]] * n, dtype=object)
    reports = np.asarray(mech.transform(X, user_secrets=generate_user_secrets(n, random_state=0)))
    ch = mech.channel_
    for j, p in (
        (0, ch.p1 * ch.p2 + (1 - ch.p1) * ch.q2),  # the true value's bit
        (1, ch.q1 * ch.p2 + (1 - ch.q1) * ch.q2),  # another sensitive bit
    ):
        share = reports[:, j].mean()
        assert abs(share - p) < 6 * np.sqrt(p * (1 - p) / n), (j, share, p)


def _bit_generators():
    import randomgen

    return [
        np.random.PCG64,
        np.random.PCG64DXSM,
        np.random.SFC64,
        np.random.Philox,
        np.random.MT19937,  # not in the list: Generator.integers itself
        randomgen.AESCounter,
        randomgen.ChaCha,  # not in the list either
    ]


@pytest.mark.parametrize("bit_generator", _bit_generators(), ids=lambda c: c.__name__)
@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 5, 7, 8, 9, 100, 1001])
@pytest.mark.parametrize("pending", [False, True])
def test_coins_are_generator_integers(bit_generator, n, pending):
    """The coins read from the raw 64-bit words are Generator.integers' draws,
    and leave the generator in the same state (pending 32-bit half included)."""
    from sklearn_uldp.utils._sampling import _fair_coins

    for seed in range(5):
        a = np.random.Generator(bit_generator(seed))
        b = np.random.Generator(bit_generator(seed))
        if pending:  # a 32-bit draw leaves half a word in the state
            a.integers(0, 2**32, dtype=np.uint32)
            b.integers(0, 2**32, dtype=np.uint32)
        expected = a.integers(0, 2, size=n, dtype=np.uint8)
        coins = _fair_coins(b, n)
        np.testing.assert_array_equal(coins[:n], expected)
        assert coins.shape == (n + 1,) and coins[n] == 0
        assert repr(a.bit_generator.state) == repr(b.bit_generator.state)
        assert a.integers(0, 2**63) == b.integers(0, 2**63)
