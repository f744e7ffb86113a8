"""The significance threshold ("emp+thr"): exact categories and empty cells."""

import numpy as np
import pytest
from scipy.stats import norm

from sklearn_uldp import (
    RAPPOR,
    BlockHadamardResponse,
    EmpiricalEstimator,
    HadamardResponse,
    HighLowHadamardResponse,
    NonPrivate,
    RandomizedResponse,
    ThresholdEstimator,
    UtilityOptimizedBlockDesign,
    UtilityOptimizedOUE,
    UtilityOptimizedRAPPOR,
    UtilityOptimizedRR,
)
from sklearn_uldp.datasets import grid_cell_labels, location_distribution
from sklearn_uldp.mechanisms import ReportStatistics
from sklearn_uldp.metrics import total_variation

CELLS = grid_cell_labels(25, 25)


def _sparse_grid(seed, n):
    """A Foursquare-like grid: 400 of 625 cells never visited, 15 sensitive
    cells among the visited ones (hospitals are visited)."""
    rng = np.random.default_rng(seed)
    p = location_distribution(random_state=seed)
    p[np.argsort(p)[:400]] = 0.0
    p /= p.sum()
    sensitive = rng.choice(np.flatnonzero(p > 0), 15, replace=False)
    X = CELLS[rng.choice(CELLS.size, size=n, p=p)].reshape(-1, 1)
    return p, CELLS[sensitive], X


@pytest.mark.slow
@pytest.mark.parametrize("Mechanism", [UtilityOptimizedRR, UtilityOptimizedRAPPOR])
def test_threshold_beats_empirical_on_sparse_grid(Mechanism):
    # ULDP paper, Sec. 6.2: "emp+thr" outperforms "emp". Before the fix the
    # mass of the insignificant sensitive cells went to every empty
    # non-sensitive cell, and emp+thr lost to emp (uRR: 0.099 vs 0.073).
    tv_emp, tv_thr = [], []
    for seed in range(3):
        p, sensitive, X = _sparse_grid(seed, 179_527)
        mech = Mechanism(epsilon=1.0, sensitive=sensitive, categories=CELLS, random_state=seed)
        reports = mech.fit_transform(X)
        tv_emp.append(total_variation(p, EmpiricalEstimator().fit(reports).distribution_))
        tv_thr.append(total_variation(p, ThresholdEstimator().fit(reports).distribution_))
    assert np.mean(tv_thr) <= np.mean(tv_emp)


# Pinned floats (tests/README.md): tolerances that hold on any processor.
# Ratios of two closed forms (a rescaling): 1e-12 relative.
@pytest.mark.pinned
@pytest.mark.parametrize("Mechanism", [UtilityOptimizedRR, UtilityOptimizedRAPPOR])
def test_exact_categories_never_receive_mass(Mechanism):
    p, sensitive, X = _sparse_grid(0, 20_000)
    mech = Mechanism(epsilon=1.0, sensitive=sensitive, categories=CELLS, random_state=0)
    reports = mech.fit_transform(X)
    est = ThresholdEstimator().fit(reports)
    unbiased = EmpiricalEstimator().fit(reports).distribution_
    non_sensitive = ~mech.channel_.sensitive_mask
    empty = non_sensitive & (unbiased == 0)
    assert empty.sum() > 300  # the trap: hundreds of empty non-sensitive cells
    assert np.all(est.distribution_[empty] == 0.0)
    assert np.all(est.threshold_[non_sensitive] == 0.0)
    # exact estimates are kept as they are, up to the common rescaling
    kept = non_sensitive & (unbiased > 0)
    ratio = est.distribution_[kept] / unbiased[kept]
    np.testing.assert_allclose(ratio, ratio[0], rtol=1e-10)
    assert est.significant_[non_sensitive].all()
    assert np.isclose(est.distribution_.sum(), 1.0)


def test_insignificant_sensitive_categories_share_the_rest():
    cats = list(range(6))
    mech = UtilityOptimizedRR(epsilon=0.5, sensitive=[0, 1, 2], categories=cats).fit()
    channel = mech.channel_
    # Outputs (= categories for uRR): the sensitive ones at their baseline
    # rate (no signal), two non-sensitive ones reported, one never.
    n = 100_000
    base = int(n * channel.forward(np.eye(6)[3])[0])
    counts = np.array([base + 150, base, base, 0, 5_000, 0])
    counts[3] = n - counts.sum() + counts[3]
    stats = ReportStatistics(channel, n, counts)
    est = ThresholdEstimator().fit_statistics(stats)
    p, unbiased = est.distribution_, channel.unbiased_estimate(stats)
    assert unbiased[:3].sum() > 0.002  # mass the threshold does not keep
    assert p[5] == 0.0  # non-sensitive, never reported: exact zero
    np.testing.assert_array_equal(est.significant_, [False, False, False, True, True, True])
    np.testing.assert_allclose(p[3:5], unbiased[3:5])
    np.testing.assert_allclose(p[:3], (1 - unbiased[3:5].sum()) / 3)
    assert np.isclose(p.sum(), 1.0)


ALL_MECHANISMS = {
    "rr": lambda c: RandomizedResponse(1.0, categories=c),
    "urr": lambda c: UtilityOptimizedRR(1.0, sensitive=c[:3], categories=c),
    "rappor": lambda c: RAPPOR(1.0, categories=c),
    "urap": lambda c: UtilityOptimizedRAPPOR(1.0, sensitive=c[:3], categories=c),
    "uoue": lambda c: UtilityOptimizedOUE(1.0, sensitive=c[:3], categories=c),
    "ubd": lambda c: UtilityOptimizedBlockDesign(1.0, sensitive=c[:3], subset_size=2, categories=c),
    "hr": lambda c: HadamardResponse(1.0, categories=c),
    "hr-blocked": lambda c: HadamardResponse(1.0, block_size=4, categories=c),
    "hlhr": lambda c: HighLowHadamardResponse(1.0, sensitive=c[:3], categories=c),
    "bhr": lambda c: BlockHadamardResponse(1.0, blocks=[c[:5], c[5:11], c[11:]], categories=c),
    "identity": lambda c: NonPrivate(categories=c),
}


@pytest.mark.parametrize("name", list(ALL_MECHANISMS))
def test_no_channel_gives_mass_to_exact_or_empty_cells(name):
    # The trap on every channel: a category whose threshold is 0 (exact, or
    # zero null variance) and whose estimate is 0 must stay at 0.
    cats = list(range(12))  # the last one is a singleton block for "bhr"
    p = np.array([0.3, 0.0, 0.1, 0.2, 0.15, 0.1, 0.0, 0.0, 0.1, 0.05, 0.0, 0.0])
    X = np.random.default_rng(0).choice(12, p=p, size=(4000, 1))
    mech = ALL_MECHANISMS[name](cats).set_params(
        **({"random_state": 0} if name != "identity" else {})
    )
    reports = mech.fit_transform(X)
    est = ThresholdEstimator().fit(reports)
    unbiased = EmpiricalEstimator().fit(reports).distribution_
    channel, q = est.channel_, est.distribution_
    assert np.isclose(q.sum(), 1.0) and np.all(q >= 0)
    exact = channel.exact_categories
    assert np.all(est.significant_[exact])
    zero_threshold_and_estimate = (est.threshold_ == 0) & (unbiased == 0)
    assert np.all(q[zero_threshold_and_estimate] == 0)
    # the threshold sees the statistics (Hadamard variants: plug-in masses)
    var0 = channel.null_variance(est.n_reports_, stats=est.statistics_)
    np.testing.assert_allclose(est.threshold_, norm.ppf(1 - 0.05 / 12) * np.sqrt(var0))
