"""shuffle_amplification: every bound is an upper bound, checked against exact values.

Ground truths: the exact shuffled privacy curve of binary randomized
response (the law of the count of ones), and, for small n, the exact
worst-case curve of any channel (the law of the output histogram, maximized
over every multiset of the other users' values). Every valid bound's delta
must be at least the exact delta at every epsilon; Wang et al.'s published
formula is shown to fall below it (which is why it is never chosen).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import sklearn_uldp as U
from sklearn_uldp.mechanisms import UnaryEncodingChannel
from sklearn_uldp.mechanisms._subset_selection import SubsetSelectionChannel
from sklearn_uldp.privacy import (
    BudgetAccountant,
    ShuffleAmplification,
    shuffle_amplification,
    shuffled_binary_rr_epsilon,
    variation_ratio_parameters,
)
from sklearn_uldp.privacy import _shuffle as shuffle


# ------------------------------------------------------------ ground truths
def histogram_law(laws):
    """The law of the histogram of independent reports with the given laws."""
    m = len(laws[0])
    dist = {(0,) * m: 1.0}
    for law in laws:
        new = {}
        for h, pr in dist.items():
            for y in np.flatnonzero(law):
                hh = h[:y] + (h[y] + 1,) + h[y + 1 :]
                new[hh] = new.get(hh, 0.0) + pr * law[y]
        dist = new
    return dist


def exact_worst_delta(Q, victims, n, eps_grid, others):
    """max over the others' values of delta(eps) of the shuffled histograms."""
    worst = np.zeros(len(eps_grid))
    for conf in itertools.combinations_with_replacement(others, n - 1):
        base = [Q[x] for x in conf]
        P = histogram_law(base + [Q[victims[0]]])
        R = histogram_law(base + [Q[victims[1]]])
        keys = sorted(set(P) | set(R))
        p = np.array([P.get(h, 0.0) for h in keys])
        r = np.array([R.get(h, 0.0) for h in keys])
        for i, e in enumerate(eps_grid):
            d = max(
                np.maximum(p - math.exp(e) * r, 0).sum(), np.maximum(r - math.exp(e) * p, 0).sum()
            )
            worst[i] = max(worst[i], d)
    return worst


SMALL = {
    "rr2": (lambda: U.RandomizedResponse(1.0, categories=range(2)), 8),
    "rr3": (lambda: U.RandomizedResponse(1.0, categories=range(3)), 7),
    "rr4": (lambda: U.RandomizedResponse(2.0, categories=range(4)), 6),
    "oue3": (lambda: U.UtilityOptimizedOUE(1.0, sensitive=[0, 1, 2], categories=range(3)), 5),
    "urr3": (lambda: U.UtilityOptimizedRR(1.0, sensitive=[0, 1], categories=range(3)), 7),
    "urr4": (lambda: U.UtilityOptimizedRR(1.5, sensitive=[0, 1, 2], categories=range(4)), 6),
    "urap3": (lambda: U.UtilityOptimizedRAPPOR(1.0, sensitive=[0, 1], categories=range(3)), 5),
    "hr3": (lambda: U.HadamardResponse(1.5, categories=range(3)), 6),
    "ss4": (lambda: U.SubsetSelection(1.0, categories=range(4), subset_size=2), 5),
}


@pytest.mark.parametrize("name", sorted(SMALL))
def test_every_valid_bound_dominates_the_exact_curve(name):
    make, n = SMALL[name]
    mech = make().fit()
    channel = mech.channel_
    Q = channel.matrix()
    eps0 = channel.epsilon
    grid = np.linspace(0.02, 0.98 * eps0, 12)
    exact = exact_worst_delta(Q, (0, 1), n, grid, list(range(channel.n_categories)))
    E = math.exp(eps0)
    terms, _ = shuffle._pair_terms(channel)
    vr = variation_ratio_parameters(mech)
    curves = {
        "clones": [shuffle._clone_delta(e, E, 1 / (E + 1), 0.5 / E, n) for e in grid],
        "strong_clones": [
            shuffle._clone_delta(e, vr.p, 1 / (vr.p + 1), vr.clone_share, n) for e in grid
        ],
        "variation_ratio": [max(shuffle._pair_delta(e, t, n) for t in terms) for e in grid],
        # the same from the matrix (all pairs), for the closed forms' sake
        "variation_ratio_matrix": [
            max(
                shuffle._pair_delta(e, t, n)
                for t in shuffle._matrix_pair_terms(Q, list(np.flatnonzero(channel.sensitive_mask)))
            )
            for e in grid
        ],
    }
    for bound, curve in curves.items():
        assert np.all(np.asarray(curve) >= exact - 1e-12), bound


def test_the_published_variation_ratio_formula_can_fall_below_the_truth():
    # 4-RR at eps = 2, 6 users: Wang et al.'s formula treats the victim's
    # common part as exchangeable with the others' non-clone reports; an
    # other user who holds a third value breaks that, and the true delta is
    # above the formula's. This is why "variation_ratio_published" is never
    # chosen.
    mech = U.RandomizedResponse(2.0, categories=range(4)).fit()
    Q, n = mech.channel_.matrix(), 6
    grid = np.linspace(0.05, 1.9, 10)
    exact = exact_worst_delta(Q, (0, 1), n, grid, [0, 1, 2, 3])
    vr = variation_ratio_parameters(mech)
    alpha = vr.beta / (vr.p - 1)
    published = np.array(
        [shuffle._clone_delta(e, vr.p, alpha, alpha * vr.p / vr.q, n) for e in grid]
    )
    assert np.max(exact - published) > 1e-2


def test_binary_rr_numbers_of_the_issue():
    rr = U.RandomizedResponse(1.0, categories=[0, 1]).fit()
    exact = shuffled_binary_rr_epsilon(1.0, 100_000, 1e-6)  # others all alike
    amp = shuffle_amplification(rr, 100_000, 1e-6)
    assert exact == pytest.approx(0.0101, abs=5e-5)
    assert amp.bounds["closed_form"] == pytest.approx(0.0726, abs=5e-5)
    assert exact < amp.epsilon < amp.bounds["closed_form"]
    for name, value in amp.bounds.items():
        assert value >= exact, name
    assert isinstance(amp, ShuffleAmplification) and float(amp) == amp.epsilon
    assert amp.epsilon0 == pytest.approx(1.0)
    # FMT's numerical bound (the clones) of their README: eps0 = 4, n = 1e5
    clones = shuffle_amplification(4.0, 100_000, 1e-6, method="clones").epsilon
    assert 0.16754 <= clones <= 0.17279


def test_exact_worst_case_over_compositions():
    for eps0, n, delta in [(1.0, 60, 1e-3), (2.0, 150, 1e-4), (0.5, 301, 1e-5)]:
        worst = shuffled_binary_rr_epsilon(eps0, n, delta, n_ones=None)
        each = [shuffled_binary_rr_epsilon(eps0, n, delta, n_ones=m) for m in range(n)]
        assert worst == pytest.approx(max(each), rel=1e-8)
        rr = U.RandomizedResponse(eps0, categories=[0, 1]).fit()
        amp = shuffle_amplification(rr, n, delta)
        for name, value in amp.bounds.items():
            if not math.isnan(value):
                assert value >= worst * (1 - 1e-9), (name, eps0, n)
        assert shuffle_amplification(rr, n, delta, method="exact").epsilon == pytest.approx(worst)


def test_exact_rr_brute_force_small():
    # the count law against the histogram brute force
    eps0, n = 1.0, 9
    rr = U.RandomizedResponse(eps0, categories=[0, 1]).fit()
    grid = [0.3]
    d_exact = exact_worst_delta(rr.channel_.matrix(), (0, 1), n, grid, [0, 1])[0]
    eps = shuffled_binary_rr_epsilon(eps0, n, d_exact, n_ones=None)
    assert eps == pytest.approx(0.3, rel=1e-6)


# One budget in the default run, the others with the long runs (-m slow):
# each case computes twelve numerical bounds (seconds).
@pytest.mark.parametrize(
    "eps0",
    [pytest.param(0.5, marks=pytest.mark.slow), 1.0, pytest.param(3.0, marks=pytest.mark.slow)],
)
def test_more_users_never_cost_more(eps0):
    mechs = [
        U.RandomizedResponse(eps0, categories=[0, 1]),
        U.RandomizedResponse(eps0, categories=range(20)),
        U.UtilityOptimizedRR(eps0, sensitive=range(5), categories=range(20)),
    ]
    for mech in mechs:
        values = [shuffle_amplification(mech, n, 1e-6).epsilon for n in (500, 2000, 10_000, 50_000)]
        assert all(a >= b for a, b in zip(values, values[1:], strict=False)), values


def test_a_larger_rr_domain_never_costs_more():
    values = [
        shuffle_amplification(U.RandomizedResponse(1.0, categories=range(k)), 20_000, 1e-6).epsilon
        for k in (2, 3, 5, 10, 30, 100, 300)
    ]
    assert all(a >= b for a, b in zip(values, values[1:], strict=False)), values
    assert values[-1] < values[0] / 3


@pytest.mark.parametrize("eps0", [0.25, 1.0, 2.0])
@pytest.mark.parametrize("n", [5_000, pytest.param(100_000, marks=pytest.mark.slow)])
def test_bounds_never_above_the_closed_form(eps0, n):
    amp = shuffle_amplification(U.RandomizedResponse(eps0, categories=range(4)), n, 1e-6)
    closed = amp.bounds["closed_form"]
    assert not math.isnan(closed)
    for name in ("clones", "strong_clones"):
        assert amp.bounds[name] <= closed
    valid = [v for k, v in amp.bounds.items() if k != "variation_ratio_published"]
    assert amp.epsilon == min(v for v in valid if not math.isnan(v))
    assert amp.method != "variation_ratio_published"


def test_closed_form_outside_its_range():
    # eps0 above log(n / (16 log(2/delta))): no amplification is claimed by it
    amp = shuffle_amplification(6.0, 10_000, 1e-6)
    assert math.isnan(amp.bounds["closed_form"])
    assert amp.method == "clones" and amp.epsilon < 6.0
    assert shuffle_amplification(6.0, 10_000, 1e-6, method="closed_form").epsilon == 6.0


# ------------------------------------------------------- the parameters
@pytest.mark.parametrize(
    "channel",
    [
        U.RandomizedResponse(1.0, categories=range(6)),
        U.UtilityOptimizedRR(1.3, sensitive=range(4), categories=range(7)),
        UnaryEncodingChannel(range(6), 1.0, 0.5, np.ones(6, bool)),
        UnaryEncodingChannel(range(7), 1.2, 0.62, np.arange(7) < 4),
        SubsetSelectionChannel(range(7), 1.0, 3),
        SubsetSelectionChannel(range(6), 2.0, 1),
        U.UtilityOptimizedBlockDesign(1.0, sensitive=range(5), categories=range(7)),
        U.OptimizedLocalHashing(1.0, categories=range(7)),
        U.BinaryLocalHashing(1.0, categories=range(5)),
        U.HadamardResponse(1.0, categories=range(6)),
        U.HadamardResponse(3.0, categories=range(9)),
        U.HighLowHadamardResponse(1.0, sensitive=range(4), categories=range(6)),
    ],
    ids=lambda c: type(c).__name__,
)
def test_closed_form_parameters_equal_the_matrix(channel):
    if not isinstance(channel, U.mechanisms.Channel):
        channel = channel.fit().channel_
    closed, _ = shuffle._pair_terms(channel)
    matrix = shuffle._matrix_pair_terms(
        channel.matrix(), list(np.flatnonzero(channel.sensitive_mask))
    )
    worst = lambda terms, f: max(f(t) for t in terms)  # noqa: E731
    best = lambda terms, f: min(f(t) for t in terms)  # noqa: E731
    # p, beta and q exactly; the shares may be smaller (more conservative)
    for f in (lambda t: t.p, lambda t: t.beta, lambda t: t.q):
        assert worst(closed, f) == pytest.approx(worst(matrix, f), rel=1e-9)
    assert best(closed, lambda t: t.clone) <= best(matrix, lambda t: t.clone) * (1 + 1e-9)
    assert best(closed, lambda t: t.blanket) <= best(matrix, lambda t: t.blanket) * (1 + 1e-9)
    vr = variation_ratio_parameters(channel)
    E = math.exp(channel.epsilon)
    assert vr.p == pytest.approx(E, rel=1e-9) and vr.q == pytest.approx(E, rel=1e-9)
    assert vr.clone_share >= 0.5 / E * (1 - 1e-12)  # Feldman et al.'s share at least


def test_parameters_closed_forms_of_the_table():
    E = math.e
    k, d = 10, 3
    assert variation_ratio_parameters(U.RandomizedResponse(1.0, categories=range(k))).beta == (
        pytest.approx((E - 1) / (E + k - 1))
    )
    ss = variation_ratio_parameters(U.SubsetSelection(1.0, categories=range(k), subset_size=d))
    c = math.comb
    expected = (E - 1) * (c(k - 1, d - 1) - c(k - 2, d - 2)) / (E * c(k - 1, d - 1) + c(k - 1, d))
    assert ss.beta == pytest.approx(expected)
    oue = variation_ratio_parameters(U.RAPPOR(1.0, theta=0.5, categories=range(k)))
    assert oue.beta == pytest.approx(0.5 - 1 / (E + 1))
    rappor = variation_ratio_parameters(U.RAPPOR(1.0, categories=range(k)))
    assert rappor.beta == pytest.approx((math.exp(0.5) - 1) / (math.exp(0.5) + 1))


# ------------------------------------------------ utility-optimized pairs
def test_utility_optimized_covers_sensitive_pairs():
    mech = U.UtilityOptimizedRR(1.0, sensitive=range(4), categories=range(10)).fit()
    amp = shuffle_amplification(mech, 10_000, 1e-6)
    assert amp.parameters.pairs == "sensitive"
    assert "both values are sensitive" in amp.covers
    u = 4 + math.e - 1
    assert amp.non_sensitive_delta == pytest.approx((math.e - 1) / u)
    assert amp.epsilon < 1.0
    with pytest.raises(ValueError, match="no such pair"):
        shuffle_amplification(
            U.UtilityOptimizedRR(1.0, sensitive=[0], categories=range(5)), 1000, 1e-6
        )


def test_a_non_sensitive_clear_report_is_not_amplified():
    # Victim's value non-sensitive against a sensitive one, nobody else holds
    # it: the shuffled histogram shows it whenever it is reported in clear.
    mech = U.UtilityOptimizedRR(1.0, sensitive=[0, 1], categories=range(3)).fit()
    Q, n = mech.channel_.matrix(), 6
    d = exact_worst_delta(Q, (2, 0), n, [1.0, 5.0, 20.0], [0, 1])
    amp = shuffle_amplification(mech, n, 1e-6)
    assert np.all(d >= amp.non_sensitive_delta - 1e-12)


@pytest.mark.parametrize(
    "mech",
    [
        U.BlockHadamardResponse(1.0, blocks=[0, 0, 1, 1], categories=range(4)),
        U.NonPrivate(categories=range(4)),
    ],
    ids=["block_hadamard", "identity"],
)
def test_no_amplification_without_finite_ratios(mech):
    with pytest.raises(ValueError, match="amplifies nothing|no such pair"):
        shuffle_amplification(mech, 1000, 1e-6)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n_users": 1}, "n_users must be >= 2"),
        ({"n_users": 2.5}, "n_users must be an integer"),
        ({"delta": 0.0}, "delta must be in"),
        ({"delta": 1.5}, "delta must be in"),
        ({"method": "best"}, "method must be one of"),
    ],
)
def test_bad_arguments(kwargs, match):
    args = {"n_users": 1000, "delta": 1e-6, **kwargs}
    with pytest.raises((ValueError, TypeError), match=match):
        shuffle_amplification(U.RandomizedResponse(1.0, categories=[0, 1]), **args)


def test_exact_is_for_binary_rr_only():
    with pytest.raises(ValueError, match="binary randomized response"):
        shuffle_amplification(U.RandomizedResponse(1.0, categories=range(3)), 100, 1e-3, "exact")
    with pytest.raises(ValueError, match="n_users <= 1000"):
        shuffled_binary_rr_epsilon(1.0, 5000, 1e-6, n_ones=None)


# ------------------------------------------------------------- accounting
def test_budget_accountant_records_the_central_guarantee():
    mech = U.RandomizedResponse(1.0, categories=[0, 1]).fit()
    acc = BudgetAccountant(total=2.0)
    acc.spend(0.5, label="plain")
    assert list(acc.ledger.columns) == ["label", "epsilon", "count", "total"]
    assert acc.spend_shuffled(mech, 100_000, 1e-6) == pytest.approx(1.5)
    ledger = acc.ledger
    assert list(ledger.columns) == [
        "label",
        "epsilon",
        "count",
        "total",
        "central_epsilon",
        "central_delta",
    ]
    central = shuffle_amplification(mech, 100_000, 1e-6).epsilon
    assert ledger["central_epsilon"].tolist() == pytest.approx([0.5, central])
    assert ledger["central_delta"].tolist() == [0.0, 1e-6]
    eps, delta = acc.central_spent
    assert eps == pytest.approx(0.5 + central) and delta == pytest.approx(1e-6)
    # a refused spend leaves the ledger as it was
    with pytest.raises(U.BudgetError):
        acc.spend_shuffled(mech, 100_000, 1e-6)
    assert len(acc.ledger) == 2
    assert acc.spent == pytest.approx(1.5)
