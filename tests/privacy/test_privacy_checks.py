"""Privacy guarantees of every mechanism, verified on the exact channel matrix.

Two halves:

* the mechanisms: each channel matrix is first compared with an independent
  construction from the formulas of mathematics §2 (so that the checks below are run
  on the right object), then verified with ``check_ldp`` / ``check_uldp`` /
  ``check_osldp`` -- including *tightness*: the worst log-ratio is exactly
  epsilon and the same check at a slightly smaller budget fails;
* the checks: hand-built channels that break each condition of mathematics §1 must be
  rejected, with a reason that names the violation.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sklearn_uldp import (
    RAPPOR,
    NonPrivate,
    RandomizedResponse,
    UtilityOptimizedRAPPOR,
    UtilityOptimizedRR,
)
from sklearn_uldp.privacy import (
    as_channel_matrix,
    check_ldp,
    check_osldp,
    check_uldp,
    invertible_outputs,
)

# Relative precision for "the worst log-ratio is exactly epsilon": the
# matrices are built from a handful of float64 operations.
RTOL = 1e-9
# A budget this much below epsilon must already be violated (tightness).
SHRINK = 1.0 - 1e-6

HYPOTHESIS = settings(max_examples=25, deadline=None, derandomize=True, database=None)


# ------------------------------------------------------- independent matrices
def spec_rr(k, eps):
    """mathematics §2.2: E/(k-1+E) on the diagonal, 1/(k-1+E) elsewhere."""
    E = np.exp(eps)
    Q = np.full((k, k), 1.0 / (k - 1 + E))
    np.fill_diagonal(Q, E / (k - 1 + E))
    return Q


def spec_urr(S, eps):
    """mathematics §2.4, entry by entry."""
    k, s, E = S.size, int(S.sum()), np.exp(eps)
    u = s + E - 1
    Q = np.zeros((k, k))
    for x in range(k):
        for y in range(k):
            if S[x]:
                Q[x, y] = (E / u if y == x else 1 / u) if S[y] else 0.0
            else:
                Q[x, y] = 1 / u if S[y] else ((E - 1) / u if y == x else 0.0)
    return Q


def bit_outputs(k):
    """Output y (column index) <-> bit vector with bit j = (y >> j) & 1."""
    y = np.arange(2**k)
    return (y[:, None] >> np.arange(k)) & 1


def spec_unary(S, theta, eps):
    """mathematics §2.3 and §2.5: product of independent bits, entry by entry."""
    k, E = S.size, np.exp(eps)
    d1 = theta / ((1 - theta) * E + theta)
    d2 = ((1 - theta) * E + theta) / E
    Y = bit_outputs(k)
    Q = np.ones((k, 2**k))
    for x in range(k):
        for j in range(k):
            if S[j]:
                q = theta if j == x else d1
            else:
                q = (1 - d2) if j == x else 0.0
            Q[x] *= np.where(Y[:, j] == 1, q, 1 - q)
    return Q


def basic_theta(eps):
    return np.exp(eps / 2) / (np.exp(eps / 2) + 1)


def assert_tight(check_fn, mech, eps, **kw):
    """Satisfied at eps, worst log-ratio == eps, violated just below eps."""
    res = check_fn(mech, **kw)
    assert res.satisfied, res.reasons
    assert res.reasons == []
    assert res.worst_log_ratio == pytest.approx(eps, rel=RTOL)
    below = check_fn(mech, epsilon=eps * SHRINK, **kw)
    assert not below.satisfied
    assert below.reasons, "a failed check must say why"
    return res


def random_mask(rng, k, *, allow_all=True):
    s = int(rng.integers(1, k + 1 if allow_all else k))
    mask = np.zeros(k, dtype=bool)
    mask[rng.choice(k, size=s, replace=False)] = True
    return mask


EPSILONS = [0.1, 1.0, np.log(3.0), 4.0]


# --------------------------------------------------------------------- k-RR
# Pinned floats (tests/README.md): tolerances that hold on any processor.
# Every channel entry, theta and d1 is a closed form of a few operations
# through exp and sqrt, whose last bits depend on the SIMD loop numpy picks:
# 1e-12 relative against the formulas (an error in a formula is off by far
# more); worst log-ratios against the budget: 1e-12 (one log of a ratio),
# 1e-9 where the check searches over the outputs.
@pytest.mark.pinned
@pytest.mark.parametrize("k", [2, 3, 5, 10, 30])
@pytest.mark.parametrize("eps", EPSILONS)
def test_rr_matrix_and_tight_ldp(k, eps):
    mech = RandomizedResponse(eps, categories=list(range(k))).fit()
    Q = mech.channel_matrix()
    np.testing.assert_allclose(Q, spec_rr(k, eps), rtol=1e-10, atol=0)
    res = assert_tight(check_ldp, mech, eps)
    assert not res.invertible.any()
    # The worst triple attains e^eps: y = x against another input.
    y, x, x_prime = res.worst
    assert Q[x, y] / Q[x_prime, y] == pytest.approx(np.exp(eps), rel=RTOL)
    # LDP implies ULDP with Y_P = Y and OSLDP, both tight as well.
    uldp = assert_tight(check_uldp, mech, eps)
    assert not uldp.invertible.any()
    assert_tight(check_osldp, mech, eps)


# ---------------------------------------------------------- RAPPOR / OUE
@pytest.mark.pinned
@pytest.mark.parametrize("k", [2, 3, 4, 5, 6])
@pytest.mark.parametrize("theta", [None, 0.5, 0.2, 0.9])
@pytest.mark.parametrize("eps", [0.5, 1.0, 3.0])
def test_rappor_matrix_and_tight_ldp(k, theta, eps):
    mech = RAPPOR(eps, theta=theta, categories=list(range(k))).fit()
    th = basic_theta(eps) if theta is None else theta
    assert mech.theta_ == pytest.approx(th, rel=1e-10)
    np.testing.assert_array_equal(mech.channel_.output_labels(), bit_outputs(k))
    Q = mech.channel_matrix()
    np.testing.assert_allclose(Q, spec_unary(np.ones(k, bool), th, eps), rtol=1e-10, atol=0)
    res = assert_tight(check_ldp, mech, eps)
    assert not res.invertible.any()
    assert_tight(check_uldp, mech, eps)
    assert_tight(check_osldp, mech, eps)


@pytest.mark.pinned
@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_rappor_special_thetas(eps):
    E = np.exp(eps)
    basic = RAPPOR(eps, categories=[0, 1, 2]).fit().channel_
    # basic one-time RAPPOR: d1 = 1 - theta = 1/(sqrt(E) + 1) (mathematics §2.3)
    assert basic.d1 == pytest.approx(1 / (np.sqrt(E) + 1), rel=1e-10)
    assert basic.d1 == pytest.approx(1 - basic.theta, rel=1e-10)
    oue = RAPPOR(eps, theta=0.5, categories=[0, 1, 2]).fit().channel_
    assert oue.d1 == pytest.approx(1 / (E + 1), rel=1e-10)


# ---------------------------------------------------------------------- uRR
@pytest.mark.pinned
@HYPOTHESIS
@given(
    k=st.integers(2, 30),
    eps=st.floats(0.05, 8.0),
    seed=st.integers(0, 2**32 - 1),
)
def test_urr_uldp_not_ldp_osldp(k, eps, seed):
    S = random_mask(np.random.default_rng(seed), k)
    mech = UtilityOptimizedRR(eps, sensitive=S, categories=list(range(k))).fit()
    Q = mech.channel_matrix()
    np.testing.assert_allclose(Q, spec_urr(S, eps), rtol=1e-10, atol=0)
    uldp = assert_tight(check_uldp, mech, eps)
    # Y_I = X_N exactly, and these are the outputs with a single input.
    np.testing.assert_array_equal(uldp.invertible, ~S)
    np.testing.assert_array_equal(invertible_outputs(Q), ~S)
    assert_tight(check_osldp, mech, eps)
    ldp = check_ldp(mech)
    if S.all():
        assert ldp.satisfied and ldp.worst_log_ratio == pytest.approx(eps, rel=RTOL)
    else:
        # a non-sensitive output has Q(y|x_S) = 0 < Q(y|y): infinite ratio
        assert not ldp.satisfied
        assert ldp.worst_log_ratio == np.inf
        y, x, x_prime = ldp.worst
        assert not S[y] and x == y and x_prime != y
        assert Q[x_prime, y] == 0
        assert "e^inf" in ldp.reasons[0]


@pytest.mark.pinned
@pytest.mark.parametrize("eps", [0.1, 1.0, 5.0])
def test_urr_special_cases(eps):
    E = np.exp(eps)
    # k = 2, s = 1: Mangat's RR. "yes" (sensitive) is always reported "yes";
    # "no" is reported "yes" w.p. 1/E.
    mangat = UtilityOptimizedRR(eps, sensitive=["yes"], categories=["yes", "no"])
    Q = mangat.fit().channel_matrix()
    np.testing.assert_allclose(Q, [[1.0, 0.0], [1 / E, 1 - 1 / E]], rtol=1e-10)
    # It is the optimal binary E-LDP mechanism of mathematics §2.6 with element 2
    # sensitive (eps12 = inf), written with yes as element 2 (order reversed).
    D = E  # e^{eps21} - e^{-eps12} with eps21 = eps, eps12 = inf
    acharya = np.array([[(E - 1) / D, 1 / D], [0.0, E / D]])  # rows x=1,2
    np.testing.assert_allclose(Q[::-1, ::-1], acharya, rtol=1e-10)
    assert check_uldp(mangat).satisfied
    assert not check_ldp(mangat).satisfied
    # s = k: uRR is k-RR.
    for k in (2, 4, 7):
        cats = list(range(k))
        urr = UtilityOptimizedRR(eps, sensitive=cats, categories=cats).fit()
        rr = RandomizedResponse(eps, categories=cats).fit()
        np.testing.assert_allclose(urr.channel_matrix(), rr.channel_matrix(), rtol=1e-10)


# --------------------------------------------------------------------- uRAP
@pytest.mark.pinned
@HYPOTHESIS
@given(
    k=st.integers(2, 6),
    theta=st.sampled_from([None, 0.5, 0.15, 0.85]),
    eps=st.floats(0.1, 5.0),
    seed=st.integers(0, 2**32 - 1),
)
def test_urap_uldp_not_ldp_osldp(k, theta, eps, seed):
    S = random_mask(np.random.default_rng(seed), k)
    mech = UtilityOptimizedRAPPOR(eps, sensitive=S, theta=theta, categories=list(range(k))).fit()
    th = basic_theta(eps) if theta is None else theta
    Q = mech.channel_matrix()
    np.testing.assert_allclose(Q, spec_unary(S, th, eps), rtol=1e-10, atol=0)
    uldp = assert_tight(check_uldp, mech, eps)
    has_n_bit = bit_outputs(k)[:, ~S].any(axis=1)
    np.testing.assert_array_equal(uldp.invertible, has_n_bit)
    # Reports with exactly one non-sensitive bit are the ones with a single
    # input; reports with two or more are impossible (zero columns).
    n_bits = bit_outputs(k)[:, ~S].sum(axis=1)
    np.testing.assert_array_equal(invertible_outputs(Q), n_bits == 1)
    assert np.all(Q[:, n_bits >= 2] == 0)
    assert_tight(check_osldp, mech, eps)
    ldp = check_ldp(mech)
    if S.all():
        assert ldp.satisfied and ldp.worst_log_ratio == pytest.approx(eps, rel=RTOL)
    else:
        assert not ldp.satisfied and ldp.worst_log_ratio == np.inf


@pytest.mark.pinned
@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_urap_special_cases(eps):
    E = np.exp(eps)
    cats = list(range(5))
    # Default theta (mathematics §2.5): d1 = 1/(sqrt(E)+1), 1 - d2 = 1 - E^{-1/2}.
    ch = UtilityOptimizedRAPPOR(eps, sensitive=[0], categories=cats).fit().channel_
    assert ch.d1 == pytest.approx(1 / (np.sqrt(E) + 1), rel=1e-10)
    assert 1 - ch.d2 == pytest.approx(1 - E**-0.5, rel=1e-10)
    # All sensitive: uRAP is generalized RAPPOR.
    for theta in (None, 0.5, 0.3):
        urap = UtilityOptimizedRAPPOR(eps, sensitive=cats, theta=theta, categories=cats).fit()
        rappor = RAPPOR(eps, theta=theta, categories=cats).fit()
        np.testing.assert_allclose(urap.channel_matrix(), rappor.channel_matrix(), rtol=1e-10)


# --------------------------------------------------------------- NonPrivate
@pytest.mark.parametrize("k", [2, 5])
def test_nonprivate_fails_ldp(k):
    mech = NonPrivate(categories=list(range(k))).fit()
    Q = mech.channel_matrix()
    np.testing.assert_array_equal(Q, np.eye(k))
    for eps in (0.1, 1.0, 50.0):
        res = check_ldp(mech, epsilon=eps)
        assert not res.satisfied
        assert res.worst_log_ratio == np.inf
        assert res.reasons and "e^inf" in res.reasons[0]
        # making any input sensitive breaks OSLDP too
        assert not check_osldp(mech, sensitive=[0], epsilon=eps).satisfied
        assert not check_uldp(mech, sensitive=[0], epsilon=eps).satisfied
    # Its declared budget is infinite: the identity is (trivially) inf-LDP,
    # and with no sensitive value it is ULDP with every output invertible.
    assert mech.epsilon_spent_ == np.inf
    uldp = check_uldp(mech, epsilon=1.0)
    assert uldp.satisfied
    assert uldp.invertible.all()


# ------------------------------------------------ the checks catch breakage
def two_by_two(ratio):
    """Binary channel with Q(0|0) / Q(0|1) = ratio, other ratios smaller."""
    b = 0.1
    a = ratio * b
    return np.array([[a, 1 - a], [b, 1 - b]])


@pytest.mark.pinned
@pytest.mark.parametrize("eps", [0.1, 1.0, 1.5])
def test_ldp_check_catches_ratio_just_above(eps):
    E = np.exp(eps)
    ok = check_ldp(two_by_two(E), epsilon=eps)
    assert ok.satisfied
    assert ok.worst_log_ratio == pytest.approx(eps, rel=1e-10)
    bad = check_ldp(two_by_two(E * (1 + 1e-6)), epsilon=eps)
    assert not bad.satisfied
    assert bad.worst == (0, 0, 1)
    assert bad.worst_log_ratio == pytest.approx(eps + np.log1p(1e-6), rel=1e-10)
    assert len(bad.reasons) == 1
    assert "output 0" in bad.reasons[0] and "Q(y|0) / Q(y|1)" in bad.reasons[0]
    # also on the other side: the reversed channel violates at column 0
    # through Q(0|1) / Q(0|0)
    rev = check_ldp(two_by_two(E * (1 + 1e-6))[::-1], epsilon=eps)
    assert not rev.satisfied and rev.worst == (0, 1, 0)


def test_ldp_check_catches_zero_against_positive():
    Q = np.array([[0.5, 0.5, 0.0], [0.4, 0.4, 0.2]])
    res = check_ldp(Q, epsilon=10.0)
    assert not res.satisfied and res.worst_log_ratio == np.inf
    assert res.worst == (2, 1, 0)


def test_checks_reject_non_channels():
    with pytest.raises(ValueError, match="probability distribution"):
        check_ldp(np.array([[0.5, 0.6], [0.5, 0.5]]), epsilon=1.0)
    with pytest.raises(ValueError, match="probability distribution"):
        check_uldp(np.array([[1.1, -0.1], [0.5, 0.5]]), sensitive=[0], epsilon=1.0)
    with pytest.raises(ValueError, match="2-D"):
        as_channel_matrix(np.ones(3) / 3)
    with pytest.raises(ValueError, match="epsilon"):
        check_ldp(np.eye(2))


def urr_matrix(eps=1.0):
    """uRR on k = 4 with X_S = {0, 1}; outputs 2, 3 invertible."""
    return spec_urr(np.array([True, True, False, False]), eps)


def urr_matrix_moving(mass, x, y_from, y_to):
    """``urr_matrix()`` with ``mass`` of row ``x`` moved from output ``y_from`` to ``y_to``."""
    Q = urr_matrix()
    Q[x, y_from] -= mass
    Q[x, y_to] += mass
    return Q


def test_uldp_check_on_valid_bare_matrix():
    Q = urr_matrix()
    res = check_uldp(Q, sensitive=[0, 1], epsilon=1.0)  # Y_P inferred
    assert res.satisfied
    np.testing.assert_array_equal(res.invertible, [False, False, True, True])
    res = check_uldp(
        Q,
        sensitive=np.array([True, True, False, False]),
        epsilon=1.0,
        protected=[True, True, False, False],
    )
    assert res.satisfied


def test_uldp_check_catches_invertible_output_from_sensitive_input():
    # a sensitive input (0) leaks to the invertible output 3 w.p. 1e-9
    Q = urr_matrix_moving(1e-9, 0, 0, 3)
    res = check_uldp(Q, sensitive=[0, 1], epsilon=1.0, protected=[True, True, False, False])
    assert not res.satisfied
    assert any("output 3" in r and "reveals a sensitive input" in r for r in res.reasons)
    # output 3 now has two inputs: flagged as well
    assert any("output 3 is declared invertible but 2 inputs" in r for r in res.reasons)
    # The same matrix checked as OSLDP also fails: Q(3|0) > 0 = Q(3|1).
    osldp = check_osldp(Q, sensitive=[0, 1], epsilon=1.0)
    assert not osldp.satisfied and osldp.worst == (3, 0, 1)
    assert "sensitive input 0" in osldp.reasons[0]


def test_uldp_check_catches_shared_invertible_output():
    # Non-sensitive inputs 2 and 3 can both produce output 2, declared invertible.
    Q = urr_matrix_moving(1e-3, 3, 3, 2)
    res = check_uldp(Q, sensitive=[0, 1], epsilon=1.0, protected=[True, True, False, False])
    assert not res.satisfied
    assert res.reasons == ["output 2 is declared invertible but 2 inputs can produce it"]
    # ... whereas declaring it protected turns it into an infinite ratio.
    res = check_uldp(Q, sensitive=[0, 1], epsilon=1.0, protected=[True, True, True, False])
    assert not res.satisfied and res.worst_log_ratio == np.inf
    assert "protected output 2" in res.reasons[0]


@pytest.mark.pinned
def test_uldp_check_catches_protected_ratio():
    Q = urr_matrix(eps=1.0)
    # Lower Q(0|2) (non-sensitive input) so that Q(0|0)/Q(0|2) = e (1 + 1e-6).
    delta = Q[2, 0] * (1 - 1 / (1 + 1e-6))
    Q[2, 0] -= delta
    Q[2, 2] += delta
    res = check_uldp(Q, sensitive=[0, 1], epsilon=1.0, protected=[True, True, False, False])
    assert not res.satisfied
    assert res.worst == (0, 0, 2)
    assert res.worst_log_ratio == pytest.approx(1.0 + np.log1p(1e-6), rel=1e-9)
    assert len(res.reasons) == 1 and res.reasons[0].startswith("protected output 0")
    assert not check_osldp(Q, sensitive=[0, 1], epsilon=1.0).satisfied


def test_osldp_is_one_sided():
    # Only a NON-sensitive input violates the ratio: OSLDP holds, LDP does not.
    E = np.exp(1.0)
    Q = np.array(
        [
            [0.5, 0.5, 0.0],  # x = 0, sensitive
            [0.4, 0.4, 0.2],  # x = 1: output 2 impossible from x = 0
        ]
    )
    assert not check_ldp(Q, epsilon=1.0).satisfied
    assert check_osldp(Q, sensitive=[0], epsilon=1.0).satisfied
    assert not check_osldp(Q, sensitive=[1], epsilon=1.0).satisfied
    # one-sided ratio e^eps * (1 + 1e-6) from the sensitive input
    b = 0.2
    Q = np.array([[b * E * (1 + 1e-6), 1 - b * E * (1 + 1e-6)], [b, 1 - b]])
    assert not check_osldp(Q, sensitive=[0], epsilon=1.0).satisfied
    # the reverse ratios Q(.|1)/Q(.|0) are within e^eps, so x = 1 sensitive is fine
    assert check_osldp(Q, sensitive=[1], epsilon=1.0).satisfied


def test_uldp_impossible_outputs_are_not_violations():
    # A column of zeros (an output no input produces) constrains nothing.
    Q = np.hstack([urr_matrix(), np.zeros((4, 1))])
    assert check_uldp(
        Q, sensitive=[0, 1], epsilon=1.0, protected=[True, True, False, False, False]
    ).satisfied
    assert check_uldp(
        Q, sensitive=[0, 1], epsilon=1.0, protected=[True, True, False, False, True]
    ).satisfied


@pytest.mark.parametrize(
    "make",
    [
        lambda eps: RandomizedResponse(eps, categories=list(range(4))),
        lambda eps: RAPPOR(eps, theta=0.5, categories=list(range(4))),
        lambda eps: UtilityOptimizedRR(eps, sensitive=[1, 2], categories=list(range(5))),
        lambda eps: UtilityOptimizedRAPPOR(eps, sensitive=[1, 2], categories=list(range(5))),
    ],
)
def test_checks_accept_mechanism_channel_and_matrix(make):
    eps = 0.7
    mech = make(eps).fit()
    S = mech.channel_.sensitive_mask
    protected = mech.channel_.protected_outputs()
    Q = mech.channel_matrix()
    for obj, kw in (
        (mech, {}),
        (mech.channel_, {}),
        (Q, {"epsilon": eps, "sensitive": S, "protected": protected}),
    ):
        res = check_uldp(obj, **kw)
        assert res.satisfied and res.worst_log_ratio == pytest.approx(eps, rel=RTOL)
        np.testing.assert_array_equal(res.invertible, ~protected)
    # A budget below the mechanism's own is rejected whatever the form.
    assert not check_uldp(mech, epsilon=0.5 * eps).satisfied
    assert not check_osldp(Q, sensitive=S, epsilon=0.5 * eps).satisfied
