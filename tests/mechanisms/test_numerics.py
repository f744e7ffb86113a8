"""Numerics that cannot release raw data (issue 11, item 3).

Every channel computes its probabilities stably, refuses a budget its
float64 sampler cannot realize, and the privacy checks look at the channel
the sampler really draws from.
"""

import warnings

import numpy as np
import pytest
from _chisquare import chi_square_pvalue
from scipy import stats as sps

from sklearn_uldp import (
    RAPPOR,
    BinaryOptimalResponse,
    BlockHadamardResponse,
    HadamardResponse,
    HighLowHadamardResponse,
    PersonalizedMechanism,
    RandomizedResponse,
    UtilityOptimizedRAPPOR,
    UtilityOptimizedRR,
)
from sklearn_uldp.mechanisms import (
    Channel,
    HadamardResponseChannel,
    RandomizedResponseChannel,
    UtilityOptimizedBlockDesign,
    UtilityOptimizedOUE,
    UtilityOptimizedRRChannel,
    basic_rappor_theta,
)
from sklearn_uldp.privacy import (
    block_structured,
    check_context_aware,
    check_ldp,
    check_uldp,
)

CATS = [0, 1, 2, 3]

MAKERS = {
    "rr": lambda e: RandomizedResponse(e, categories=CATS),
    "urr": lambda e: UtilityOptimizedRR(e, sensitive=[0, 1], categories=CATS),
    "rappor": lambda e: RAPPOR(e, categories=CATS),
    "oue": lambda e: RAPPOR(e, theta=0.5, categories=CATS),
    "urap": lambda e: UtilityOptimizedRAPPOR(e, sensitive=[0, 1], categories=CATS),
    "urap-optimal": lambda e: UtilityOptimizedRAPPOR(
        e, sensitive=[0, 1], theta="optimal", categories=CATS
    ),
    "uoue": lambda e: UtilityOptimizedOUE(e, sensitive=[0, 1], categories=CATS),
    "ubd": lambda e: UtilityOptimizedBlockDesign(e, sensitive=[0, 1, 2], categories=CATS),
    "hr": lambda e: HadamardResponse(e, categories=CATS),
    "hr-blocked": lambda e: HadamardResponse(e, block_size=2, categories=CATS),
    "hlhr": lambda e: HighLowHadamardResponse(e, sensitive=[0], categories=CATS),
    "bhr": lambda e: BlockHadamardResponse(e, blocks=[[0, 1], [2, 3]], categories=CATS),
    "warner": lambda e: BinaryOptimalResponse(e, e, categories=[0, 1]),
    "mangat": lambda e: BinaryOptimalResponse(e, np.inf, categories=[0, 1]),
    "pum": lambda e: PersonalizedMechanism(e, sensitive=[0], tags=["home"], categories=CATS),
    "pum-urap": lambda e: PersonalizedMechanism(
        e, sensitive=[0], tags=["home"], mechanism="urap", categories=CATS
    ),
}
# Basic RAPPOR is RR on every bit with eps/2: it can go twice as far.
HUGE = [60.0, 709.8, 710.0, 2.0**70, 1e300]


def _raises_or_keeps_epsilon(make, epsilon):
    """Fit; if the fit succeeds, the realized channel must keep epsilon."""
    try:
        mech = make(epsilon).fit()
    except ValueError as exc:
        assert "usable budgets" in str(exc) or "too large" in str(exc), str(exc)
        return None
    return mech


@pytest.mark.parametrize("name", MAKERS)
@pytest.mark.parametrize("epsilon", HUGE + [40.0])
def test_huge_epsilon_is_refused_not_overflowed(name, epsilon):
    # Old code: IndexError (RR), NaN error (RAPPOR), every uRR report
    # category 0, NaN channels -- or a silent release of raw data.
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow warnings on the way
        if name in ("rappor", "urap", "pum-urap") and epsilon == 40.0:
            # Basic RAPPOR's theta spends eps/2 = 20 per bit: realizable.
            mech = MAKERS[name](epsilon).fit()
            assert check_uldp(mech.channel_)
            assert check_uldp(mech.channel_).worst_log_ratio <= 40 * (1 + 1e-7)
            return
        with pytest.raises(ValueError, match="usable budgets") as info:
            MAKERS[name](epsilon).fit()
    assert "pass an epsilon in that range" in str(info.value)


@pytest.mark.parametrize("name", MAKERS)
@pytest.mark.parametrize("epsilon", [1e-300, 1e-200, 5e-324])
def test_tiny_epsilon_is_refused_without_nan(name, epsilon):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="usable budgets|must be > 0"):
            MAKERS[name](epsilon).fit()


@pytest.mark.parametrize("name", MAKERS)
def test_largest_usable_epsilon_is_stated_and_works(name):
    with pytest.raises(ValueError, match="usable budgets") as info:
        MAKERS[name](1e300).fit()
    text = str(info.value)
    high = float(text.split("<= epsilon <= ")[1].split(":")[0])
    low = float(text.split("usable budgets for this channel are ")[1].split(" <=")[0])
    assert 10 < high < 60 and 0 < low < 1e-3
    for epsilon in (high, low, 1.0):
        mech = MAKERS[name](epsilon).fit()
        channel = mech.channel_
        if name == "bhr":
            check = check_context_aware(channel, block_structured(CATS, [[0, 1], [2, 3]], epsilon))
        elif channel.sensitive_mask.all():
            check = check_ldp(channel)
        else:
            check = check_uldp(channel)
        assert check, (epsilon, getattr(check, "reasons", check))
        if name != "bhr":
            assert check.worst_log_ratio <= epsilon * (1 + 1e-7)
        for a in ("coef_a", "coef_b"):
            assert np.isfinite(getattr(channel, a)).all()
        k = channel.n_categories
        assert np.isfinite(channel.estimator_variance(np.full(k, 1 / k), 100)).all()


def test_rr_keeps_raw_data_no_more():
    # From eps ~ 36 the keep probability rounds to 1.0 and old code
    # released every value while check_ldp said eps = 40 was satisfied.
    for epsilon in (36.0, 37.0, 40.0):
        mech = _raises_or_keeps_epsilon(MAKERS["rr"], epsilon)
        if mech is not None:  # pragma: no cover - old behaviour
            X = np.array([[0], [1], [2], [3]] * 1000)
            moved = (np.asarray(mech.transform(X)) != X).any()
            assert moved and check_ldp(mech)


class _UncheckedRR(RandomizedResponseChannel):
    """k-RR without the budget check: what the checks must catch."""

    name = None

    def _check_budget(self, what=None):
        pass


def test_check_ldp_checks_the_realized_channel():
    channel = _UncheckedRR(CATS, 40.0)
    assert channel.c1 == 1.0  # the sampler keeps every value
    X = np.array(CATS * 100)
    out = channel.sample(X, np.random.default_rng(0))
    np.testing.assert_array_equal(out, X)  # raw data
    check = check_ldp(channel)
    assert not check and check.worst_log_ratio == np.inf
    # The nominal matrix hides it: its ratio is e^40 exactly.
    nominal = check_ldp(channel.matrix(), epsilon=40.0)
    assert nominal


def test_realized_rr_matrix_counts_the_sampler_grid():
    # At eps = 30, k = 5 the move bins hold a handful of grid points each: the
    # realized ratios are far from e^30, which the budget check refuses.
    channel = _UncheckedRR(list(range(5)), 30.0)
    Q = channel.realized_matrix()
    np.testing.assert_allclose(Q.sum(axis=1), 1.0, rtol=0, atol=0)
    worst = check_ldp(channel).worst_log_ratio
    assert abs(worst - 30.0) > 1e-7 * 30
    with pytest.raises(ValueError, match="usable budgets"):
        RandomizedResponseChannel(list(range(5)), 30.0)
    # Where it is allowed, the exact realized channel is within the slack.
    ok = RandomizedResponseChannel(list(range(5)), 20.0)
    assert check_ldp(ok).worst_log_ratio <= 20.0 * (1 + 1e-7)
    assert np.abs(ok.realized_matrix() - ok.matrix()).max() < 1e-15


# Pinned floats (tests/README.md): tolerances that hold on any processor.
# Closed forms of a few operations (exp, expm1, a ratio): 1e-12 relative,
# which still tells expm1 from exp - 1 at epsilon = 1e-6 (a 5e-7 difference).
@pytest.mark.pinned
@pytest.mark.parametrize("name", MAKERS)
def test_realized_matrix_is_close_to_nominal(name):
    channel = MAKERS[name](2.0).fit().channel_
    Q, R = channel.matrix(), channel.realized_matrix()
    assert Q.shape == R.shape
    np.testing.assert_allclose(R, Q, rtol=1e-10, atol=1e-15)
    np.testing.assert_allclose(R.sum(axis=1), 1.0, atol=1e-12)


@pytest.mark.pinned
def test_stable_probabilities():
    # Large: no overflow, keep = 1 / (1 + (k - 1) e^-eps).
    channel = RandomizedResponseChannel(CATS, 20.0)
    assert channel.c1 == pytest.approx(1 / (1 + 3 * np.exp(-20)), rel=1e-10)
    # Tiny: expm1 keeps the slope of the estimator.
    small = RandomizedResponseChannel(CATS, 1e-6)
    assert small.coef_b[0] == pytest.approx(-np.exp(-1e-6) / -np.expm1(-1e-6), rel=1e-10)
    # The naive e^eps - 1 loses digits: e^(1e-6) lies 3.8e-17 from the nearest
    # double (1.8e-16 from the next), so whichever neighbour a processor's exp
    # returns, the naive coefficient is off by at least 3.8e-11 relative.
    naive = -1 / (np.exp(1e-6) - 1)
    assert abs(naive / small.coef_b[0] - 1) > 3e-11
    hr = HadamardResponseChannel(list(range(100_000)), 1e-6)
    assert np.isfinite(hr.coef_a).all()
    assert hr.coef_a[0] == pytest.approx(hr._D / (hr.b / 2 * np.expm1(1e-6)), rel=1e-10)
    assert basic_rappor_theta(1e4) == 1.0  # no NaN (the channel refuses it)


# ------------------------------------------- sampler vs realized channel
@pytest.mark.parametrize(
    "make, epsilon",
    [
        (lambda e: RandomizedResponseChannel(list(range(4)), e), 11.0),
        (
            lambda e: UtilityOptimizedRRChannel(
                list(range(5)), e, [True, True, True, False, False]
            ),
            10.0,
        ),
        (lambda e: HadamardResponseChannel(list(range(6)), e), 9.0),
    ],
)
def test_sampler_matches_realized_channel_at_large_epsilon(make, epsilon):
    """At a large but allowed budget, the rare moves follow the channel."""
    channel = make(epsilon)
    Q = channel.realized_matrix()
    rng = np.random.default_rng(12345)
    n = 400_000
    for x in range(channel.n_categories):
        out = channel.sample(np.full(n, x), rng)
        counts = np.bincount(out, minlength=Q.shape[1])
        moved = n - counts[x] if Q[x, x] > 0.5 else None
        if moved is not None:
            # The number of moves is Binomial(n, 1 - Q[x, x]).
            p = sps.binomtest(int(moved), n, 1 - Q[x, x]).pvalue
            assert p > 1e-4, (x, moved, n * (1 - Q[x, x]))
        assert chi_square_pvalue(counts, Q[x], pool_below=0) > 1e-4


# ------------------------------------------------------- null variance
def _stats(channel, seed=0, n=5000):
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, channel.n_categories, n)
    reports = channel.sample(codes, rng)
    if channel.report_format == "categorical":
        reports = channel.decode(reports)
    return channel.statistics(channel.encode_reports(reports), keep_reports=True)


@pytest.mark.parametrize(
    "name", [n for n in MAKERS if not n.startswith("pum")] + ["pum", "pum-urap"]
)
def test_null_variance_takes_stats_and_exact_categories(name):
    channel = MAKERS[name](1.0).fit().channel_
    n = 1000
    stats = _stats(channel)
    v0 = channel.null_variance(n)
    v1 = channel.null_variance(n, stats=stats)
    assert v0.shape == v1.shape == (channel.n_categories,)
    assert (v1 >= 0).all() and np.isfinite(v1).all()
    exact = channel.exact_categories
    assert exact.dtype == bool and exact.shape == (channel.n_categories,)
    assert (v0[exact] == 0).all() and (v1[exact] == 0).all()
    if channel.sensitive_mask.all():
        assert not exact.any()
    elif name in (
        "urr",
        "urap",
        "urap-optimal",
        "uoue",
        "ubd",
        "hlhr",
        "pum",
        "pum-urap",
        "mangat",
    ):
        np.testing.assert_array_equal(exact, ~channel.sensitive_mask)
    if name in ("rr", "urr", "rappor", "urap", "uoue", "ubd"):
        np.testing.assert_array_equal(v0, v1)  # no unknown to plug in


def test_hadamard_null_variance_sees_the_statistics():
    # Blocked HR: the worst case assumes x's block holds all the mass; the
    # statistics show where the mass is.
    mech = HadamardResponse(1.0, block_size=4, categories=list(range(9)), random_state=0).fit()
    X = np.zeros((20_000, 1), dtype=int)  # everybody in block 0
    stats = mech.channel_.statistics(
        mech.channel_.encode_reports(np.asarray(mech.transform(X))[:, 0])
    )
    worst = mech.channel_.null_variance(stats.n)
    seen = mech.channel_.null_variance(stats.n, stats=stats)
    block = mech.channel_._block
    assert (seen[block > 0] < 0.6 * worst[block > 0]).all()
    assert seen[block == 0] == pytest.approx(worst[block == 0], rel=0.05)
    hl = HighLowHadamardResponse(1.0, sensitive=[0, 1, 2], categories=CATS, random_state=0).fit()
    R = np.asarray(hl.transform(np.full((5000, 1), 3)))[:, 0]  # mass off A
    s = hl.channel_.statistics(hl.channel_.encode_reports(R))
    # q([S]) is 2 / (e + 1) = 0.54 here, against the bound 1.
    assert (
        hl.channel_.null_variance(s.n, stats=s)[:3] < 0.6 * hl.channel_.null_variance(s.n)[:3]
    ).all()


def test_spec_of_a_refused_budget_is_refused_too():
    spec = {
        "mechanism": "urr",
        "categories": CATS,
        "epsilon": 709.8,
        "sensitive": [True, True, False, False],
    }
    with pytest.raises(ValueError, match="usable budgets"):
        Channel.from_dict(spec)
