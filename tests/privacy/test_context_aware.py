"""Tests of context-aware LDP: privacy matrices and their verification."""

import numpy as np
import pytest

from sklearn_uldp import (
    BinaryOptimalResponse,
    BlockHadamardResponse,
    HighLowHadamardResponse,
    RandomizedResponse,
    UtilityOptimizedBlockDesign,
    UtilityOptimizedRAPPOR,
    UtilityOptimizedRR,
)
from sklearn_uldp.privacy import (
    PrivacyMatrix,
    block_structured,
    check_context_aware,
    check_ldp,
    check_osldp,
    check_uldp,
    high_low,
    ldp,
    pairwise_log_ratio,
    privacy_profile,
)

SEEDS = range(6)


def brute_force_log_ratio(Q):
    k, Y = Q.shape
    L = np.zeros((k, k))
    for x in range(k):
        for xp in range(k):
            if x == xp:
                continue
            worst = -np.inf
            for y in range(Y):
                if Q[x, y] == 0:
                    continue
                worst = max(worst, np.inf if Q[xp, y] == 0 else np.log(Q[x, y] / Q[xp, y]))
            L[x, xp] = worst
    return L


def random_channel(rng, k, Y, zero_frac=0.2):
    Q = rng.random((k, Y)) * (rng.random((k, Y)) > zero_frac)
    Q[:, 0] += 1e-3  # every row is a distribution
    return Q / Q.sum(axis=1, keepdims=True)


# -------------------------------------------------------------- builders
def test_builders():
    cats = ["a", "b", "c", "d"]
    E = ldp(cats, 0.5)
    assert E.kind == "LDP" and np.all(E.matrix[~np.eye(4, dtype=bool)] == 0.5)
    H = high_low(cats, ["b"], 1.0)
    assert H.epsilon("b", "a") == 1.0 and H.epsilon("a", "b") == np.inf
    assert not H.is_symmetric()
    B = block_structured(cats, [["a", "b"], ["c", "d"]], 2.0)
    assert B.epsilon("a", "b") == 2.0 and B.epsilon("a", "c") == np.inf
    assert B.is_symmetric()
    for form in (
        {"a": 0, "b": 0, "c": 1, "d": 1},
        ["x", "x", "y", "y"],
        lambda c: c in "ab",
        [("a", "b"), ("c", "d")],
    ):
        assert np.array_equal(block_structured(cats, form, 2.0).matrix, B.matrix)
    assert np.all(np.diag(PrivacyMatrix(np.ones((3, 3))).matrix) == 0)
    composed = E.compose(H)
    assert composed.epsilon("b", "a") == 1.5 and composed.epsilon("a", "b") == np.inf
    frame = B.to_dataframe()
    assert frame.loc["a", "c"] == np.inf


def test_builder_errors():
    with pytest.raises(ValueError, match="square"):
        PrivacyMatrix(np.ones((2, 3)))
    with pytest.raises(ValueError, match="non-negative"):
        PrivacyMatrix([[0, -1], [1, 0]])
    with pytest.raises(ValueError, match="categories"):
        PrivacyMatrix(np.ones((2, 2)), categories=[1, 2, 3])
    with pytest.raises(ValueError):
        block_structured([0, 1, 2], [[0, 1], [1, 2]], 1.0)
    with pytest.raises(ValueError):
        block_structured([0, 1, 2], [[0, 1]], 1.0)
    with pytest.raises(ValueError):
        block_structured([0, 1, 2], {0: "a", 1: "a"}, 1.0)
    with pytest.raises(ValueError):
        block_structured([0, 1, 2], [0, 1], 1.0)
    with pytest.raises(ValueError):
        high_low([0, 1, 2], [5], 1.0)


# --------------------------------------------------------------- the check
@pytest.mark.parametrize("seed", SEEDS)
def test_pairwise_log_ratio_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    Q = random_channel(rng, int(rng.integers(2, 6)), int(rng.integers(2, 7)))
    assert np.array_equal(pairwise_log_ratio(Q), brute_force_log_ratio(Q)) or np.allclose(
        pairwise_log_ratio(Q), brute_force_log_ratio(Q)
    )


@pytest.mark.parametrize("seed", SEEDS)
def test_check_is_exact_per_pair(seed):
    """Passing with E = L (tight), failing exactly at the pairs pushed below."""
    rng = np.random.default_rng(seed)
    k = int(rng.integers(3, 6))
    Q = random_channel(rng, k, int(rng.integers(3, 8)), zero_frac=0.0)
    L = pairwise_log_ratio(Q)
    check = check_context_aware(Q, L)
    assert check.satisfied and np.isclose(check.worst_excess, 0.0)
    E = L.copy()
    pairs = [(0, 1), (2, 0)]
    for x, xp in pairs:
        E[x, xp] -= 0.05
    check = check_context_aware(Q, E)
    assert not check.satisfied
    violated = check.excess > 1e-9
    assert {tuple(v) for v in np.argwhere(violated)} == set(pairs)
    assert np.allclose(check.excess[violated], 0.05)
    assert len(check.reasons) == 2
    frame = check.to_dataframe()
    assert len(frame) == k * (k - 1)
    assert np.isclose(frame["excess"].max(), 0.05)
    # infinite budgets never fail
    assert check_context_aware(Q, np.full((k, k), np.inf))


def test_check_detects_zero_probabilities():
    Q = np.array([[0.5, 0.5], [0.0, 1.0]])  # Mangat-like
    assert check_context_aware(Q, [[0, np.inf], [np.log(2), 0]])
    check = check_context_aware(Q, [[0, 50.0], [np.log(2), 0]])
    assert not check.satisfied and check.worst_excess == np.inf
    assert check.worst_pair == (0, 1)


def test_check_shape_mismatch():
    with pytest.raises(ValueError, match="inputs"):
        check_context_aware(np.eye(3), np.zeros((2, 2)))


# -------------------------------------------- the notions, side by side
@pytest.mark.parametrize("seed", SEEDS)
def test_hlldp_is_the_one_sided_notion(seed):
    """(A, eps)-HLLDP checked with the matrix == (A, eps)-OSLDP (mathematics §1)."""
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 7))
    Q = random_channel(rng, k, int(rng.integers(2, 8)))
    mask = rng.random(k) < 0.5
    mask[0] = True
    eps = float(rng.uniform(0.1, 3))
    assert bool(check_context_aware(Q, high_low(np.arange(k), mask, eps))) == bool(
        check_osldp(Q, sensitive=mask, epsilon=eps)
    )
    assert bool(check_context_aware(Q, ldp(np.arange(k), eps))) == bool(check_ldp(Q, epsilon=eps))


def random_uldp_like_channel(rng, k):
    """Random channels near the ULDP boundary: a protected part, invertible
    columns for some non-sensitive inputs, occasional zeros and leaks."""
    mask = rng.random(k) < 0.5
    mask[rng.integers(k)] = True
    Yp = int(rng.integers(2, 6))
    P = rng.random((k, Yp)) + 0.3
    if rng.random() < 0.3:
        P[rng.integers(k), rng.integers(Yp)] = 0.0
    cols = [P]
    for x in range(k):
        if (not mask[x] and rng.random() < 0.7) or (mask[x] and rng.random() < 0.1):
            c = np.zeros((k, 1))
            c[x] = rng.random() + 0.5
            cols.append(c)
    non_sensitive = np.flatnonzero(~mask)
    if non_sensitive.size >= 2 and rng.random() < 0.4:
        # an output shared by two non-sensitive inputs only: fine for OSLDP,
        # but protected (not invertible) and impossible for sensitive inputs
        c = np.zeros((k, 1))
        c[rng.choice(non_sensitive, size=2, replace=False)] = 0.5
        cols.append(c)
    Q = np.hstack(cols)
    Q /= Q.sum(axis=1, keepdims=True)
    L = pairwise_log_ratio(Q[:, :Yp])
    finite = L[np.isfinite(L)]
    eps = float(finite.max() if rng.random() < 0.6 else np.median(finite)) + 1e-6
    return Q, mask, max(eps, 0.05)


@pytest.mark.parametrize("seed", range(40))
def test_uldp_sits_between_ldp_and_osldp_on_random_channels(seed):
    """LDP => ULDP => OSLDP, on random channels (with zeros and near-misses)."""
    rng = np.random.default_rng(seed)
    Q, mask, eps = random_uldp_like_channel(rng, int(rng.integers(2, 6)))
    res = privacy_profile(Q, sensitive=mask, epsilon=eps)
    assert (not res["LDP"]) or res["ULDP"]
    assert (not res["ULDP"]) or res["OSLDP"]


def test_random_channels_cover_every_level():
    """The random family above is not vacuous: each level occurs."""
    seen = set()
    for seed in range(40):
        rng = np.random.default_rng(seed)
        Q, mask, eps = random_uldp_like_channel(rng, int(rng.integers(2, 6)))
        seen.add(tuple(bool(c) for c in privacy_profile(Q, sensitive=mask, epsilon=eps).values()))
    assert {
        (True, True, True),
        (False, True, True),
        (False, False, True),
        (False, False, False),
    } <= seen


def test_uldp_strictly_between():
    cats = [0, 1, 2]
    # RR: all three
    rr = RandomizedResponse(1.0, categories=cats).fit()
    assert all(privacy_profile(rr, sensitive=[True, False, False]).values())
    # uRR: ULDP and OSLDP, not LDP
    urr = UtilityOptimizedRR(1.0, sensitive=[0], categories=cats).fit()
    prof = privacy_profile(urr)
    assert not prof["LDP"] and prof["ULDP"] and prof["OSLDP"]
    # OSLDP but not ULDP: output 2 comes from two non-sensitive inputs with a
    # ratio 5 > e: it is not invertible, so it must be protected, and fails.
    Q = np.array(
        [
            [0.5, 0.5, 0.0],
            [0.3, 0.2, 0.5],
            [0.45, 0.45, 0.1],
        ]
    )
    prof = privacy_profile(Q, sensitive=[True, False, False], epsilon=1.0)
    assert not prof["LDP"] and not prof["ULDP"] and prof["OSLDP"]


# ------------------------------------------- mechanisms against their matrices
@pytest.mark.parametrize("seed", SEEDS)
def test_mechanisms_satisfy_their_privacy_matrices(seed):
    rng = np.random.default_rng(seed)
    k = int(rng.integers(3, 9))
    cats = np.arange(k)
    eps = float(rng.uniform(0.2, 3.0))
    mask = rng.random(k) < 0.5
    mask[rng.integers(k)] = True
    HL = high_low(cats, mask, eps)
    for mech in (
        HighLowHadamardResponse(eps, sensitive=mask, categories=cats),
        UtilityOptimizedRR(eps, sensitive=mask, categories=cats),
        UtilityOptimizedRAPPOR(eps, sensitive=mask, categories=cats),
    ):
        mech.fit()
        assert check_context_aware(mech, HL), type(mech).__name__
        assert check_uldp(mech)
        assert check_context_aware(mech, ldp(cats, eps)).satisfied == bool(
            check_ldp(mech, epsilon=eps)
        )
    if mask.sum() >= 3:
        ubd = UtilityOptimizedBlockDesign(eps, sensitive=mask, subset_size=2, categories=cats).fit()
        assert check_context_aware(ubd, HL)
    blocks = rng.integers(0, 3, size=k)
    bhr = BlockHadamardResponse(eps, blocks=blocks, categories=cats).fit()
    BS = block_structured(cats, blocks, eps)
    assert check_context_aware(bhr, BS)
    # within-block pairs are tight, cross-block pairs are unconstrained
    check = check_context_aware(bhr, BS)
    same = (blocks[:, None] == blocks[None, :]) & ~np.eye(k, dtype=bool)
    assert np.allclose(check.log_ratio[same], eps)
    assert np.all(np.isinf(check.log_ratio[~same & ~np.eye(k, dtype=bool)]))
    # the block-structured mechanism is not eps-LDP when there are 2+ blocks
    if np.unique(blocks).size > 1:
        assert not check_context_aware(bhr, ldp(cats, eps))


def test_binary_mechanism_satisfies_asymmetric_matrix():
    mech = BinaryOptimalResponse(0.3, 2.0, categories=["yes", "no"]).fit()
    E = PrivacyMatrix([[0, 0.3], [2.0, 0]], categories=["yes", "no"])
    check = check_context_aware(mech, E)
    assert check.satisfied
    assert np.allclose(check.log_ratio, [[0, 0.3], [2.0, 0]])
    assert not check_context_aware(mech, E.matrix.T)
