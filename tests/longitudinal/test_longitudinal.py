"""Collection over time: memoized (longitudinal) mechanisms, their collector
side, budget and audit.

Privacy is checked on the exact end-to-end and permanent channels; the
samplers against those channels (one report, and two rounds of the same
users); memoization for determinism across rounds and processes and for
independence across users; the estimator's variance against the closed
forms; the exposure of many rounds against a brute-force enumeration.
"""

import itertools
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import sklearn
from scipy import stats
from scipy.special import logsumexp
from sklearn.pipeline import make_pipeline

from sklearn_uldp import (
    EMEstimator,
    EmpiricalEstimator,
    RandomizedResponse,
    ReportMismatchError,
    ThresholdEstimator,
)
from sklearn_uldp.longitudinal import (
    DBitFlipChannel,
    DBitFlipPM,
    LongitudinalEstimator,
    LongitudinalGRR,
    LongitudinalGRRChannel,
    LongitudinalLocalHashing,
    LongitudinalUE,
    LongitudinalUEChannel,
    UtilityOptimizedLongitudinalRAPPOR,
    UtilityOptimizedLongitudinalRAPPORChannel,
    UtilityOptimizedLongitudinalRR,
    UtilityOptimizedLongitudinalRRChannel,
)
from sklearn_uldp.longitudinal._grr import _realized_grr_round, _realized_rr_codes
from sklearn_uldp.mechanisms import (
    Channel,
    RandomizedResponseChannel,
    RAPPORChannel,
    UnaryEncodingChannel,
    UtilityOptimizedRRChannel,
)
from sklearn_uldp.mechanisms._memo import SecretDraws, memo_context
from sklearn_uldp.privacy import (
    BudgetAccountant,
    audit_rounds,
    check_ldp,
    check_uldp,
    longitudinal_exposure,
)
from sklearn_uldp.stats import two_sample_test
from sklearn_uldp.utils import check_user_secrets, generate_user_secrets


def _SecretDraws(keys, spec, column=0, label=""):
    """The permanent draws of one column of a longitudinal mechanism."""
    return SecretDraws(keys, lambda purpose: memo_context(spec, purpose, column, label))


CATS = [0, 1, 2]


def all_mechanisms(categories=CATS, random_state=None, **budgets):
    eps = {"epsilon_perm": 2.0, "epsilon_1": 1.0, **budgets}
    return [
        LongitudinalGRR(**eps, categories=categories, random_state=random_state),
        LongitudinalUE(**eps, categories=categories, random_state=random_state),
        LongitudinalLocalHashing(
            **eps, hash_range=2, categories=categories, random_state=random_state
        ),
        DBitFlipPM(1.0, d=2, categories=categories, random_state=random_state),
        UtilityOptimizedLongitudinalRR(
            **eps, sensitive=categories[:2], categories=categories, random_state=random_state
        ),
        UtilityOptimizedLongitudinalRAPPOR(
            **eps, sensitive=categories[:2], categories=categories, random_state=random_state
        ),
    ]


IDS = ["LGRR", "LUE", "LOLOHA", "dBitFlip", "uLRR", "uLRAP"]


def _output_codes(channel, reports):
    """Report -> column index of channel.matrix()."""
    codes = channel.encode_reports(reports)
    if channel.report_format == "bits":
        return np.asarray(codes, dtype=np.int64) @ (1 << np.arange(channel.n_categories))
    return np.asarray(codes, dtype=np.int64)


def _chi2_pvalue(observed, expected):
    """Pearson's chi-square, cells of expected count < 5 pooled into one."""
    small = expected < 5
    obs = np.append(observed[~small], observed[small].sum())
    exp = np.append(expected[~small], expected[small].sum())
    keep = exp > 0
    assert obs[~keep].sum() == 0, "reports the channel cannot produce"
    return stats.chisquare(obs[keep], exp[keep]).pvalue


# ------------------------------------------------------ privacy on matrices
# Pinned floats (tests/README.md): tolerances that hold on any processor.
# Realized against nominal matrices (closed forms): 1e-12; worst log-ratios,
# exposures and variances (searches and sums over outputs through exp and
# log) against their closed forms: 1e-9 relative.
@pytest.mark.pinned
@pytest.mark.parametrize("k", [2, 3, 5, 10])
@pytest.mark.parametrize(("eps_perm", "eps_1"), [(1.0, 0.5), (2.0, 1.0), (4.0, 2.0)])
def test_lgrr_one_report_is_exactly_epsilon_1(k, eps_perm, eps_1):
    ch = LongitudinalGRRChannel(list(range(k)), eps_perm, eps_1)
    check = check_ldp(ch)
    assert check.satisfied and check.worst_log_ratio == pytest.approx(eps_1, rel=1e-9)
    # one report is k-RR at epsilon_1 (the closed form), the memoized round k-RR at eps_perm
    np.testing.assert_allclose(
        ch.realized_matrix(), RandomizedResponseChannel(range(k), eps_1).matrix(), atol=1e-12
    )
    perm = check_ldp(ch.permanent_channel())
    assert perm.satisfied and perm.worst_log_ratio == pytest.approx(eps_perm, rel=1e-9)


@pytest.mark.parametrize(
    ("k", "eps_perm", "eps_1", "measured"),
    [(5, 2.0, 1.0, 0.860), (10, 4.0, 2.0, 1.898), (100, 4.0, 2.0, 1.254), (2, 2.0, 1.0, 1.0)],
)
def test_arcolezi_parametrization_is_exact_only_for_k_2(k, eps_perm, eps_1, measured):
    """multi-freq-ldpy's L-GRR formula: the single-report loss on the exact matrix."""
    ch = LongitudinalGRRChannel(list(range(k)), eps_perm, eps_1, parametrization="arcolezi")
    check = check_ldp(ch)
    assert check.satisfied  # it claims more than it spends
    assert round(check.worst_log_ratio, 3) == measured
    assert ch.epsilon_effective == pytest.approx(check.worst_log_ratio, abs=1e-9)
    exact = LongitudinalGRRChannel(list(range(k)), eps_perm, eps_1)
    # ... so its estimates are noisier at the same claimed budget
    p = np.full(k, 1 / k)
    assert (ch.estimator_variance(p, 1000) >= exact.estimator_variance(p, 1000) * (1 - 1e-12)).all()


@pytest.mark.parametrize(
    ("perm", "inst"), [("OUE", "SUE"), ("SUE", "SUE"), ("OUE", "OUE"), ("SUE", "OUE")]
)
@pytest.mark.parametrize(("eps_perm", "eps_1"), [(1.0, 0.5), (2.0, 1.0), (4.0, 2.0)])
def test_lue_one_report_is_exactly_epsilon_1(perm, inst, eps_perm, eps_1):
    ch = LongitudinalUEChannel(list("abcd"), eps_perm, eps_1, perm, inst)
    check = check_ldp(ch)
    assert check.satisfied and check.worst_log_ratio == pytest.approx(eps_1, rel=1e-7)
    np.testing.assert_allclose(
        ch.realized_matrix(), RAPPORChannel(list("abcd"), eps_1, ch.theta).matrix(), atol=1e-9
    )
    perm_check = check_ldp(ch.permanent_channel())
    assert perm_check.satisfied and perm_check.worst_log_ratio == pytest.approx(eps_perm, rel=1e-7)


@pytest.mark.pinned
def test_loloha_and_dbitflip_are_exactly_their_budget():
    ch = LongitudinalLocalHashing(2.0, 1.0, hash_range=3, categories=range(5)).fit().channel_
    assert check_ldp(ch).worst_log_ratio == pytest.approx(1.0, rel=1e-9)
    assert check_ldp(ch.permanent_channel()).worst_log_ratio == pytest.approx(2.0, rel=1e-9)
    for d in (1, 2, 3):
        db = DBitFlipChannel(list(range(5)), 1.5, d)
        # with one bit, x and x' are never both sampled: epsilon / 2
        assert check_ldp(db).worst_log_ratio == pytest.approx(1.5 if d > 1 else 0.75, rel=1e-9)
        np.testing.assert_allclose(db.matrix().sum(axis=1), 1.0)


@pytest.mark.pinned
@pytest.mark.parametrize(
    "sensitive", [[True, True, False, False], [True, False, False, False], [True] * 4]
)
@pytest.mark.parametrize(("eps_perm", "eps_1"), [(1.0, 0.5), (2.0, 1.0), (4.0, 2.0)])
def test_utility_optimized_both_rounds_are_uldp(sensitive, eps_perm, eps_1):
    cats = list("abcd")
    rr = UtilityOptimizedLongitudinalRRChannel(cats, eps_perm, eps_1, sensitive)
    one, perm = check_uldp(rr), check_uldp(rr.permanent_channel())
    assert one.satisfied and one.worst_log_ratio == pytest.approx(eps_1, rel=1e-7)
    assert perm.satisfied and perm.worst_log_ratio <= eps_perm * (1 + 1e-7)
    # One report is exactly (X_S, epsilon_1)-uRR: non-sensitive values keep uRR's accuracy.
    np.testing.assert_allclose(
        rr.realized_matrix(), UtilityOptimizedRRChannel(cats, eps_1, sensitive).matrix(), atol=1e-12
    )
    rap = UtilityOptimizedLongitudinalRAPPORChannel(cats, eps_perm, eps_1, sensitive)
    one, perm = check_uldp(rap), check_uldp(rap.permanent_channel())
    assert one.satisfied and one.worst_log_ratio == pytest.approx(eps_1, rel=1e-7)
    assert perm.satisfied and perm.worst_log_ratio <= eps_perm * (1 + 1e-7)
    np.testing.assert_allclose(
        rap.realized_matrix(),
        UnaryEncodingChannel(cats, eps_1, rap.theta, sensitive).matrix(),
        atol=1e-9,
    )


# -------------------------------------------------- samplers vs channels
@pytest.mark.parametrize("mech", all_mechanisms(random_state=0), ids=IDS)
def test_one_report_follows_the_channel(mech):
    mech.fit()
    channel = mech.channel_
    Q = channel.realized_matrix()
    n = 40_000
    for x in (0, 2):
        X = np.full((n, 1), x)
        observed = np.bincount(_output_codes(channel, mech.transform(X)), minlength=Q.shape[1])
        assert _chi2_pvalue(observed, n * Q[channel.categories.tolist().index(x)]) > 1e-4


@pytest.mark.parametrize("mech", all_mechanisms(), ids=IDS)
def test_memoized_answers_follow_the_permanent_channel(mech):
    """The permanent draws from the users' secrets (the memoized round alone)."""
    mech.fit()
    ch, perm = mech.channel_, mech.permanent_channel_
    if isinstance(mech, DBitFlipPM):
        return  # one round: the report test above is this test
    n = 100_000
    keys = check_user_secrets(generate_user_secrets(n, random_state=11))
    Q = perm.realized_matrix()
    for x in (0, 2):
        z = ch.sample_permanent(np.full(n, x), _SecretDraws(keys, ch._memo_spec()))
        if isinstance(mech, LongitudinalLocalHashing):
            z = z[:, 0] * ch.hash_range + z[:, 1]  # (seed, answer) as perm's outputs
        observed = np.bincount(_output_codes(perm, z), minlength=Q.shape[1])
        assert _chi2_pvalue(observed, n * Q[x]) > 1e-4


@pytest.mark.parametrize("x", [0, 2])
def test_two_rounds_of_the_same_users_follow_the_memoized_channel(x):
    """(y1, y2) of one user: sum_z R1(z|x) R2(y1|z) R2(y2|z), not Q(y1|x) Q(y2|x)."""
    mech = LongitudinalGRR(1.0, 0.5, categories=CATS, random_state=0).fit()
    ch = mech.channel_
    R1 = _realized_grr_round(3, ch.p1)
    R2 = _realized_rr_codes(3, ch.p2)
    joint = np.einsum("z,za,zb->ab", R1[x], R2, R2).ravel()
    n = 60_000
    X = np.full((n, 1), x)
    secrets = generate_user_secrets(n, random_state=9)
    y1 = mech.transform(X, user_secrets=secrets).ravel()
    y2 = mech.transform(X, user_secrets=secrets).ravel()
    observed = np.bincount(3 * y1 + y2, minlength=9)
    assert _chi2_pvalue(observed, n * joint) > 1e-4
    # ... which fresh permanent answers would not give (the product of the marginals)
    independent = np.outer(ch.realized_matrix()[x], ch.realized_matrix()[x]).ravel()
    assert _chi2_pvalue(observed, n * independent) < 1e-10


# ------------------------------------------------------------ memoization
@pytest.mark.parametrize("mech", all_mechanisms(), ids=IDS)
def test_permanent_answers_are_memoized_per_user_and_value(mech):
    mech.fit()
    n = 2000
    codes = np.random.default_rng(0).integers(0, 3, n)
    keys = check_user_secrets(generate_user_secrets(n, random_state=1))
    spec = mech.channel_._memo_spec()
    values = mech._values(codes)
    first = mech.channel_.sample_permanent(values, _SecretDraws(keys, spec))
    again = mech.channel_.sample_permanent(values, _SecretDraws(keys, spec))
    np.testing.assert_array_equal(first, again)
    others = check_user_secrets(generate_user_secrets(n, random_state=2))
    different = mech.channel_.sample_permanent(values, _SecretDraws(others, spec))
    assert not np.array_equal(first, different)


def test_reports_of_a_fixed_value_repeat_when_everything_is_permanent():
    mech = DBitFlipPM(1.0, d=2, categories=range(6)).fit()
    X = np.random.default_rng(0).integers(0, 6, (500, 1))
    secrets = generate_user_secrets(500)
    np.testing.assert_array_equal(
        mech.transform(X, user_secrets=secrets), mech.transform(X, user_secrets=secrets)
    )
    # Each column has its own memo: the same value in two columns gives independent
    # permanent answers (a shared memo would leak more with every round).
    both = np.hstack([X, X])
    reports = mech.fit(both).transform(both, user_secrets=secrets)
    assert (reports[:, 0] != reports[:, 1]).mean() > 0.5
    np.testing.assert_array_equal(reports, mech.transform(both, user_secrets=secrets))


def test_each_column_and_collection_has_its_own_memo():
    """Column j's permanent answers are the PRF draws of context (spec, label, j)."""
    n = 3000
    X = np.random.default_rng(1).integers(0, 6, (n, 3))
    secrets = generate_user_secrets(n, random_state=4)
    keys = check_user_secrets(secrets)
    mech = DBitFlipPM(1.0, d=2, categories=range(6)).fit(X)  # every draw is permanent
    spec = mech.channel_._memo_spec()
    reports = mech.transform(X, user_secrets=secrets)
    for j in range(3):
        expected = mech.channel_.sample_permanent(X[:, j], _SecretDraws(keys, spec, column=j))
        np.testing.assert_array_equal(reports[:, j], expected)
    # A collection's label is in the context: another label, other answers.
    labelled = DBitFlipPM(1.0, d=2, categories=range(6), memo_label="steps").fit(X)
    other = labelled.transform(X, user_secrets=secrets)
    assert (other != reports).mean() > 0.5
    np.testing.assert_array_equal(other, labelled.transform(X, user_secrets=secrets))
    with pytest.raises(ValueError, match="memo_label names the collection"):
        DBitFlipPM(memo_label=3).fit(X)
    with pytest.raises(ValueError, match="memo_label names the collection"):
        LongitudinalGRR(memo_label=None).fit(X)


@pytest.mark.parametrize("mech", all_mechanisms(random_state=0), ids=IDS)
def test_two_columns_with_one_value_report_independently(mech):
    """One round, rows (x, x): the joint law of the two columns' reports is the
    product of one report's channel (one memo per column). A memo shared by the
    columns (the old behaviour) fails it."""
    x = 0
    n = 40_000
    X = np.full((n, 2), x)
    mech.fit(X)
    channel = mech.channel_
    q = channel.realized_matrix()[x]
    reports = np.asarray(mech.transform(X, user_secrets=generate_user_secrets(n, random_state=5)))
    width = reports.shape[1] // 2
    y = [_output_codes(channel, reports[:, j * width : (j + 1) * width].squeeze()) for j in (0, 1)]
    observed = np.bincount(y[0] * q.size + y[1], minlength=q.size**2)
    assert _chi2_pvalue(observed, n * np.outer(q, q).ravel()) > 1e-4


def test_two_columns_of_one_value_are_not_one_shared_memo():
    """L-GRR, rows (x, x): the joint law is not that of one shared permanent answer
    sum_z R1(z|x) R2(y0|z) R2(y1|z), which the old shared memo gave."""
    mech = LongitudinalGRR(1.0, 0.5, categories=CATS, random_state=0).fit(np.zeros((1, 2), int))
    ch = mech.channel_
    R1, R2 = _realized_grr_round(3, ch.p1), _realized_rr_codes(3, ch.p2)
    x, n = 1, 60_000
    Y = mech.transform(np.full((n, 2), x), user_secrets=generate_user_secrets(n, random_state=6))
    observed = np.bincount(3 * Y[:, 0] + Y[:, 1], minlength=9)
    independent = np.outer(ch.realized_matrix()[x], ch.realized_matrix()[x]).ravel()
    assert _chi2_pvalue(observed, n * independent) > 1e-4
    shared = np.einsum("z,za,zb->ab", R1[x], R2, R2).ravel()
    assert _chi2_pvalue(observed, n * shared) < 1e-10


def _two_column_log_law(R1, R2, tau, row, shared):
    """log P(c_0, c_1 | row) of tau L-GRR rounds of a k=2 row of two columns.

    c_j is the count of 1s among column j's reports (sufficient: the rounds are
    exchangeable given the permanent answers). One memo per column: the columns
    are independent; ``shared``: one permanent answer for a value held in both."""
    c = np.arange(tau + 1)
    lw = np.array([stats.binom.logpmf(c, tau, R2[z, 1]) for z in range(2)])  # log P(c | z)
    if shared and row[0] == row[1]:
        terms = [np.log(R1[row[0], z]) + lw[z][:, None] + lw[z][None, :] for z in range(2)]
        return logsumexp(terms, axis=0)
    col = [logsumexp([np.log(R1[v, z]) + lw[z] for z in range(2)], axis=0) for v in row]
    return col[0][:, None] + col[1][None, :]


@pytest.mark.pinned
def test_exposure_of_a_row_of_two_columns_is_the_sum_of_its_columns():
    """Exact, on the joint channel of tau rounds (L-GRR(3, 1), k=2, two columns):
    with one memo per column, the loss between rows stays at the sum of the
    columns' exposures, at most epsilon_perm_spent_; a shared memo (the old
    derivation) grows linearly in tau (1.06, 2.17, 5.54, ..., 56.2 at tau=50)."""
    mech = LongitudinalGRR(3.0, 1.0, categories=[0, 1]).fit(np.zeros((1, 2), int))
    ch = mech.channel_
    R1, R2 = _realized_grr_round(2, ch.p1), _realized_rr_codes(2, ch.p2)
    rows = list(itertools.product([0, 1], repeat=2))
    for tau in (1, 2, 5, 20, 50):
        laws = {r: _two_column_log_law(R1, R2, tau, r, shared=False) for r in rows}
        for a, b in itertools.combinations(rows, 2):
            loss = np.abs(laws[a] - laws[b]).max()
            differing = sum(u != v for u, v in zip(a, b, strict=True))
            assert loss == pytest.approx(differing * mech.exposure(tau), rel=1e-9)
            assert loss <= mech.epsilon_perm_spent_ * (1 + 1e-12)
        shared = np.abs(
            _two_column_log_law(R1, R2, tau, (1, 1), True)
            - _two_column_log_law(R1, R2, tau, (1, 0), True)
        ).max()
        assert shared > tau  # what one memo for both columns leaked
    assert mech.epsilon_perm_spent_ == 6.0 and mech.exposure(50) == pytest.approx(3.0, abs=1e-3)


_SUBPROCESS = textwrap.dedent(
    """
    import sys
    if sys.argv[1] == "numpy":
        sys.modules["numba"] = None  # the numpy rounds, not the compiled kernel
    import numpy as np
    from sklearn_uldp.longitudinal import LongitudinalUE, LongitudinalGRR
    from sklearn_uldp.utils import generate_user_secrets
    secrets = generate_user_secrets(300, random_state=7)
    X = (np.arange(300) % 5).reshape(-1, 1)
    out = []
    for mech in (LongitudinalUE(2.0, 1.0, categories=range(5)),
                 LongitudinalGRR(2.0, 1.0, categories=range(5))):
        out.append(np.asarray(mech.fit().permanent_answers(X, user_secrets=secrets)))
    print(b"".join(np.ascontiguousarray(a, dtype=np.int64).tobytes() for a in out).hex())
    """
)


def test_memoization_is_deterministic_across_processes_and_implementations():
    """Another process, without numba (the numpy rounds), derives the same
    permanent answers from the same secrets as this one (the compiled kernel
    when numba is installed)."""
    other = subprocess.run(
        [sys.executable, "-c", _SUBPROCESS, "numpy"], capture_output=True, text=True, check=True
    ).stdout.strip()
    secrets = generate_user_secrets(300, random_state=7)
    X = (np.arange(300) % 5).reshape(-1, 1)
    here = []
    for mech in (
        LongitudinalUE(2.0, 1.0, categories=range(5)),
        LongitudinalGRR(2.0, 1.0, categories=range(5)),
    ):
        here.append(np.asarray(mech.fit().permanent_answers(X, user_secrets=secrets)))
    assert other == b"".join(np.ascontiguousarray(a, dtype=np.int64).tobytes() for a in here).hex()


def test_permanent_answers_are_independent_across_users():
    """Users holding the same value: the pairs (user 2i, user 2i+1) are independent."""
    mech = LongitudinalGRR(1.0, 0.5, categories=CATS).fit()
    n = 60_000
    keys = check_user_secrets(generate_user_secrets(n, random_state=3))
    z = mech.channel_.sample_permanent(
        np.zeros(n, np.intp), _SecretDraws(keys, mech.channel_._memo_spec())
    )
    table = np.bincount(3 * z[0::2] + z[1::2], minlength=9).reshape(3, 3)
    assert stats.chi2_contingency(table)[1] > 1e-3


def test_seeded_simulation_without_secrets_is_one_user_per_row():
    mech = LongitudinalGRR(2.0, 1.0, categories=CATS, random_state=0).fit()
    X = np.zeros((30_000, 1), dtype=int)
    a, b = mech.transform(X).ravel(), mech.transform(X).ravel()
    # the same simulated users: rounds agree more often than fresh answers would
    fresh = (mech.channel_.realized_matrix()[0] ** 2).sum()
    assert (a == b).mean() > fresh + 0.05


# --------------------------------------------------------------- estimators
@pytest.mark.parametrize("mech", all_mechanisms(categories=[0, 1, 2, 3], random_state=0), ids=IDS)
def test_every_estimator_on_every_mechanism(mech):
    p = np.array([0.4, 0.3, 0.2, 0.1])
    X = np.random.default_rng(1).choice(4, p=p, size=(40_000, 1))
    reports = mech.fit().transform(X)
    se = EmpiricalEstimator().fit(reports).standard_errors_
    for est in (EmpiricalEstimator(), ThresholdEstimator(), EMEstimator()):
        fitted = est.fit(reports)
        assert np.abs(fitted.distribution_ - p).max() < 5 * se.max() + 0.01
    ci = EmpiricalEstimator().fit(reports).confidence_intervals(1e-4)
    assert ((ci[:, 0] <= p) & (p <= ci[:, 1])).all()
    assert Channel.from_dict(mech.spec()) == mech.channel_


def test_variance_matches_the_closed_forms():
    """Category 0's estimate over 2000 groups of 200 users vs a^2 m (1 - m) / n."""
    groups, n, k = 2000, 200, 10
    p = np.linspace(1, 2, k) / np.linspace(1, 2, k).sum()
    rng = np.random.default_rng(5)
    X = rng.choice(k, p=p, size=(groups * n, 1))
    for mech in (
        LongitudinalGRR(2.0, 1.0, categories=range(k), random_state=0),
        LongitudinalUE(2.0, 1.0, categories=range(k), random_state=0),
    ):
        mech.fit()
        ch = mech.channel_
        codes = ch.encode_reports(mech.transform(X))
        est = np.array(
            [
                ch.unbiased_estimate(ch.statistics(codes[g * n : (g + 1) * n]))[0]
                for g in range(groups)
            ]
        )
        theory = ch.estimator_variance(p, n)[0]
        # s^2 / sigma^2 has standard deviation sqrt(2 / (groups - 1)): 5 of them
        assert abs(est.var(ddof=1) / theory - 1) < 5 * np.sqrt(2 / (groups - 1))


@pytest.mark.pinned
@pytest.mark.parametrize(("perm", "inst"), [("SUE", "SUE"), ("OUE", "SUE")])
def test_variance_equals_var_long_pure(perm, inst):
    """Arcolezi et al.'s VAR_Long_Pure: sig (1 - sig) / (n (p1-q1)^2 (p2-q2)^2).

    Its sig is the exact mean of a bit at f = 0 (the variance the papers
    report); its f term is exact for L-SUE only.
    """
    ch = LongitudinalUEChannel(list(range(10)), 2.0, 1.0, perm, inst)
    p1, q1, p2, q2 = ch.p1, ch.q1, ch.p2, ch.q2
    n = 100_000
    for f in [0.0] if perm == "OUE" else [0.0, 0.1, 0.5]:
        sig = f * (2 * p1 * p2 - 2 * p1 * q2 + 2 * q2 - 1) + p2 * q1 + q2 * (1 - q1)
        var_long_pure = sig * (1 - sig) / (n * (p1 - q1) ** 2 * (p2 - q2) ** 2)
        p = np.full(10, (1 - f) / 9)
        p[0] = f
        assert ch.estimator_variance(p, n)[0] == pytest.approx(var_long_pure, rel=1e-9)


def test_longitudinal_estimator_rounds_and_change_test():
    mech = LongitudinalUE(2.0, 1.0, categories=[0, 1, 2], random_state=0).fit()
    rng = np.random.default_rng(0)
    day1 = rng.choice(3, p=[0.5, 0.3, 0.2], size=(20_000, 1))
    day2 = np.where(rng.random((20_000, 1)) < 0.2, 2, day1)
    r1, r2 = mech.transform(day1), mech.transform(day2)
    est = LongitudinalEstimator().fit({"mon": r1, "tue": r2})
    assert est.rounds_.tolist() == ["mon", "tue"] and est.n_reports_.tolist() == [20_000, 20_000]
    assert est.distributions_.shape == est.standard_errors_.shape == (2, 3)
    assert est.confidence_intervals(0.05).shape == (2, 3, 2)
    assert two_sample_test(est["mon"], est["tue"]).pvalue < 1e-6
    assert two_sample_test(est[0], est[0]).pvalue == 1.0 and est[-1] is est.estimators_[1]
    frame = est.to_frame()
    assert list(frame.columns) == [
        "round",
        "category",
        "estimate",
        "std_error",
        "lower",
        "upper",
        "n_reports",
    ]
    assert len(frame) == 6
    # stacked reports with round labels give the same estimates
    stacked = LongitudinalEstimator(EMEstimator(), mechanism=mech).fit(
        np.vstack([r1, r2]),
        rounds=["mon"] * 20_000 + ["tue"] * 20_000,
    )
    assert stacked.rounds_.tolist() == ["mon", "tue"]
    with pytest.raises(KeyError, match="not a round"):
        est["wed"]


def test_change_test_is_conservative_for_the_same_users():
    """No value changes, the same users memoized in both rounds: the test
    rejects at most alpha of the time (rounds are positively dependent)."""
    mech = LongitudinalGRR(2.0, 1.0, categories=CATS, random_state=0).fit()
    groups, n = 400, 500
    X = np.random.default_rng(2).choice(3, p=[0.5, 0.3, 0.2], size=(groups * n, 1))
    ch = mech.channel_
    same = ch.encode_reports(mech.transform(X)), ch.encode_reports(mech.transform(X))
    other_users = ch.encode_reports(
        mech.transform(X, user_secrets=generate_user_secrets(groups * n, random_state=4))
    )
    rates = {}
    for name, (a, b) in {"same": same, "independent": (same[0], other_users)}.items():
        pvalues = [
            two_sample_test(
                ch.statistics(a[g * n : (g + 1) * n]), ch.statistics(b[g * n : (g + 1) * n])
            ).pvalue
            for g in range(groups)
        ]
        rates[name] = np.mean(np.array(pvalues) < 0.05)
    sd = np.sqrt(0.05 * 0.95 / groups)
    assert rates["same"] < 0.05 + 3 * sd
    assert abs(rates["independent"] - 0.05) < 4 * sd


# --------------------------------------------------------- budget, exposure
def _brute_force_exposure(channel, R1, R2, tau, protected_rounds=None, sensitive=None):
    """max over x, x' and sequences y of ln P(y|x)/P(y|x') by enumeration."""
    n_out = R2.shape[1]
    worst = 0.0
    for seq in itertools.product(range(n_out), repeat=tau):
        if protected_rounds is not None and not all(protected_rounds[y] for y in seq):
            continue
        lik = R1 @ np.prod(R2[:, list(seq)], axis=1)
        pos = lik > 0
        if pos.sum() < 2:
            continue
        worst = max(worst, float(np.log(lik[pos].max()) - np.log(lik[pos].min())))
    return worst


@pytest.mark.pinned
@pytest.mark.parametrize("tau", [1, 2, 3])
def test_exposure_is_exact(tau):
    grr = LongitudinalGRRChannel([0, 1, 2, 3], 2.0, 1.0)
    R1 = np.full((4, 4), (1 - grr.p1) / 3) + np.eye(4) * (grr.p1 - (1 - grr.p1) / 3)
    R2 = np.full((4, 4), grr.q2) + np.eye(4) * (grr.p2 - grr.q2)
    assert grr.exposure(tau) == pytest.approx(_brute_force_exposure(grr, R1, R2, tau), rel=1e-9)
    ue = LongitudinalUEChannel([0, 1, 2], 2.0, 1.0)
    perm = ue.permanent_channel().matrix()
    bits = ue.permanent_channel().output_labels()
    # instantaneous round on 3 bits: product of per-bit flips
    flip = np.array([[1 - ue.q2, ue.q2], [1 - ue.p2, ue.p2]])
    R2u = np.prod(flip[bits[:, None, :], bits[None, :, :]], axis=2)
    assert ue.exposure(tau) == pytest.approx(_brute_force_exposure(ue, perm, R2u, tau), rel=1e-9)
    urr = UtilityOptimizedLongitudinalRRChannel(list("abcd"), 2.0, 1.0, [True, True, True, False])
    R2r = urr._instantaneous_matrix()
    brute = _brute_force_exposure(
        urr, urr.permanent_channel().matrix(), R2r, tau, urr.protected_outputs()
    )
    assert urr.exposure(tau) == pytest.approx(brute, rel=1e-9)
    urap = UtilityOptimizedLongitudinalRAPPORChannel([0, 1, 2], 2.0, 1.0, [True, True, False])
    perm = urap.permanent_channel().matrix()
    bits = urap.output_labels()
    S = urap.sensitive_mask
    cell = np.where(
        S[None, None, :],
        flip[bits[:, None, :], bits[None, :, :]],
        bits[:, None, :] == bits[None, :, :],
    )
    R2p = np.prod(cell, axis=2)
    brute = _brute_force_exposure(urap, perm, R2p, tau, urap.protected_outputs())
    assert urap.exposure(tau) == pytest.approx(brute, rel=1e-9)


@pytest.mark.pinned
@pytest.mark.parametrize("mech", all_mechanisms(), ids=IDS)
def test_exposure_grows_from_epsilon_1_to_epsilon_perm(mech):
    mech.fit()
    ch = mech.channel_
    curve = longitudinal_exposure(mech, 60)
    memo = curve["memoized"].to_numpy()
    assert memo[0] == pytest.approx(ch.epsilon_1, rel=1e-9)
    assert (np.diff(memo) >= -1e-12).all() and (memo <= ch.epsilon_perm * (1 + 1e-9)).all()
    assert (memo <= curve["fresh"].to_numpy() * (1 + 1e-9)).all()
    if not isinstance(mech, DBitFlipPM):
        assert mech.exposure(400) == pytest.approx(ch.epsilon_perm, abs=1e-6)


def test_budget_accountant_learns_the_longitudinal_cost():
    mech = LongitudinalUE(2.0, 0.5, categories=CATS).fit()
    acc = BudgetAccountant(total=10)
    assert acc.spend(mech) == pytest.approx(0.5)  # one report
    assert acc.spend_longitudinal(mech) == pytest.approx(2.5)  # a value, any number of rounds
    assert acc.spend_longitudinal(mech, n_values=2) == pytest.approx(6.5)
    assert acc.spend_longitudinal(mech, n_rounds=1) == pytest.approx(7.0)
    two = LongitudinalUE(2.0, 0.5, categories=CATS).fit(np.zeros((1, 2), int))
    assert two.epsilon_perm_spent_ == 4.0
    with pytest.raises(TypeError, match="memoized mechanism"):
        acc.spend_longitudinal(RandomizedResponse(1.0, categories=CATS).fit())


# ------------------------------------------------------------------- audit
def test_audit_over_rounds_stays_at_epsilon_perm_and_fails_without_memoization():
    memo = LongitudinalGRR(1.0, 0.5, categories=[0, 1]).fit()
    bounds = []
    for tau in (1, 40):
        result = audit_rounds(memo, tau, n_samples=5000, random_state=0)
        assert result.passed and result.epsilon_lower_bound <= 1.0
        bounds.append(result.epsilon_lower_bound)
    # ... and the bound grows with the rounds (towards epsilon_perm)
    assert bounds[1] > 0.6 > bounds[0]
    fresh = RandomizedResponse(0.5, categories=[0, 1]).fit()
    result = audit_rounds(fresh, 40, epsilon=1.0, n_samples=5000, random_state=0)
    assert not result.passed and result.epsilon_lower_bound > 2.0
    forgetful = audit_rounds(memo, 40, n_samples=5000, fresh_secrets=True, random_state=0)
    assert not forgetful.passed


def test_audit_over_rounds_of_a_utility_optimized_mechanism():
    mech = UtilityOptimizedLongitudinalRR(
        1.0, 0.5, sensitive=["a", "b"], categories=["a", "b", "c"]
    ).fit()
    result = audit_rounds(mech, 20, pairs=[("a", "b"), ("a", "c")], n_samples=5000, random_state=0)
    assert result.passed and len(result.uldp_violations) == 0


# --------------------------------------------------------------- bad input
def test_missing_secrets_is_an_error_naming_the_fix():
    mech = LongitudinalGRR(2.0, 1.0, categories=CATS).fit()
    with pytest.raises(ValueError, match=r"user_secrets.*generate_user_secrets"):
        mech.transform([[0], [1]])
    with pytest.raises(ValueError, match="Got 1 user secrets for 2 rows"):
        mech.transform([[0], [1]], user_secrets=generate_user_secrets(1))
    with pytest.raises(ValueError, match="share a user secret"):
        mech.transform([[0], [1]], user_secrets=[b"a" * 32] * 2)
    with pytest.raises(TypeError, match="bytes.fromhex"):
        mech.transform([[0], [1]], user_secrets=["ab" * 16, "cd" * 16])


@pytest.mark.parametrize(
    ("mech", "match"),
    [
        (
            LongitudinalGRR(1.0, 1.0, categories=CATS),
            "epsilon_1.*must be smaller than epsilon_perm",
        ),
        (LongitudinalUE(1.0, 2.0, categories=CATS), "epsilon_1.*must be smaller than epsilon_perm"),
        (LongitudinalUE(1.0, 0.9, instantaneous="OUE", categories=CATS), "at most epsilon_1=0.763"),
        (DBitFlipPM(1.0, n_buckets=5, categories=CATS), "n_buckets=5 is more than"),
        (
            LongitudinalGRR(2.0, 1.0, parametrization="paper", categories=CATS),
            "'exact' .*'arcolezi'",
        ),
    ],
)
def test_bad_parameters(mech, match):
    with pytest.raises(ValueError, match=match):
        mech.fit()


def test_rounds_with_a_different_spec_are_refused():
    a = LongitudinalGRR(2.0, 1.0, categories=CATS, random_state=0).fit()
    b = LongitudinalGRR(3.0, 1.0, categories=CATS, random_state=0).fit()
    X = np.zeros((100, 1), int)
    with pytest.raises(ReportMismatchError, match="epsilon_perm: 2.0 vs 3.0.*same spec"):
        LongitudinalEstimator().fit([a.transform(X), b.transform(X)])


def test_secrets_are_never_stored():
    mech = LongitudinalUE(2.0, 1.0, categories=CATS).fit()
    secrets = generate_user_secrets(5, random_state=0)
    reports = mech.transform(np.zeros((5, 1), int), user_secrets=secrets)
    blob = pickle.dumps(mech) + pickle.dumps(reports) + mech.channel_.to_json().encode()
    assert not any(s in blob for s in secrets)
    assert not any(s.hex() in repr(vars(mech)) for s in secrets)


def test_pipeline_routes_user_secrets_as_metadata():
    mech = LongitudinalGRR(2.0, 1.0, categories=CATS)
    X = np.random.default_rng(0).integers(0, 3, (50, 1))
    secrets = generate_user_secrets(50)
    with sklearn.config_context(enable_metadata_routing=True):
        pipe = make_pipeline(mech.set_transform_request(user_secrets=True)).fit(X)
        reports = pipe.transform(X, user_secrets=secrets)
        fitted = pipe[0]
        perm = fitted.channel_.sample_permanent(
            X.ravel(), _SecretDraws(check_user_secrets(secrets), fitted.channel_._memo_spec())
        )
        direct = mech.transform(X, user_secrets=secrets)
    assert reports.shape == direct.shape == (50, 1)
    assert perm.shape == (50,)
