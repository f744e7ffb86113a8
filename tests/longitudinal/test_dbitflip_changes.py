"""dBitFlipPM when a value changes bucket: what it guarantees, and what is charged.

Issue 30 (item 5): a user whose value moves between two buckets at the same
rounds as another user was told apart from them with an empirical lower
bound of 9.08, while ``BudgetAccountant.spend_longitudinal`` recorded 2.0
(epsilon per distinct value). Derived on the "Collecting over time" page:
the sampled buckets and the bit "not in this bucket" are shared by every
value, so a change of bucket produces reports that a user who never visits
that bucket cannot send, and no finite epsilon bounds them. Checked here on
the exact law of a user's reports over the rounds (enumerated), on the
sampler (the draws really are shared), and with ``audit_rounds`` of two
users whose values change at the same rounds: the old charge fails the
audit, the accountant now refuses, and the charges it does make (one
bucket, or mechanisms with one permanent answer per value) pass.
"""

import itertools
from math import comb

import numpy as np
import pandas as pd
import pytest

from sklearn_uldp.compose import DataFramePrivatizer
from sklearn_uldp.longitudinal import DBitFlipPM, LongitudinalGRR, LongitudinalUE
from sklearn_uldp.privacy import BudgetAccountant, audit_rounds
from sklearn_uldp.utils import generate_user_secrets

#: Two users whose values change at the same rounds, between other buckets.
CHANGING = ((0, 1, 0, 1), (2, 3, 2, 3))


def _transcript_law(buckets, b, d, epsilon):
    """The exact law of one user's reports in every round: {transcript: probability}.

    A transcript is (J, bits of round 1, ..., bits of the last round): the
    sampled buckets J (uniform among the C(b, d) sets) and, for each t, the
    bit ``in_t`` ~ Bernoulli(p) while the value is in J[t] and ``out_t`` ~
    Bernoulli(1 - p) while it is not, drawn once (dBitFlipPM's memo).
    """
    p = 1.0 / (1.0 + np.exp(-epsilon / 2.0))
    law = {}
    for J in itertools.combinations(range(b), d):
        for ins in itertools.product((0, 1), repeat=d):
            for outs in itertools.product((0, 1), repeat=d):
                prob = 1.0 / comb(b, d)
                for t in range(d):
                    prob *= (p if ins[t] else 1 - p) * ((1 - p) if outs[t] else p)
                rounds = tuple(
                    tuple(ins[t] if v == J[t] else outs[t] for t in range(d)) for v in buckets
                )
                key = (J, *rounds)
                law[key] = law.get(key, 0.0) + prob
    return law


def _worst_log_ratio(law, law_prime):
    worst = 0.0
    for key in set(law) | set(law_prime):
        a, b = law.get(key, 0.0), law_prime.get(key, 0.0)
        if a > 0 and b == 0:
            return np.inf
        if a > 0:
            worst = max(worst, np.log(a / b))
    return worst


# --------------------------------------------------------- the exact law
@pytest.mark.parametrize("d", [1, 2])
def test_the_enumerated_law_of_one_round_is_the_channel(d):
    """The model of the enumeration is the mechanism's: one round is its channel."""
    mech = DBitFlipPM(1.0, d=d, categories=range(4)).fit()
    ch = mech.channel_
    for x in range(4):
        law = _transcript_law((x,), 4, d, 1.0)
        row = np.zeros(ch.n_outputs)
        for (J, bits), prob in law.items():
            row[ch.encode_pairs(np.asarray([J]), np.asarray([bits]))[0]] += prob
        np.testing.assert_allclose(row, ch.matrix()[x], rtol=1e-10)


@pytest.mark.parametrize("d", [1, 2])
def test_a_value_in_one_bucket_costs_epsilon_in_every_number_of_rounds(d):
    for rounds in (1, 3):
        law = _transcript_law((0,) * rounds, 4, d, 1.0)
        law_prime = _transcript_law((2,) * rounds, 4, d, 1.0)
        assert _worst_log_ratio(law, law_prime) <= 1.0 + 1e-12


@pytest.mark.parametrize("d", [1, 2])
def test_a_value_that_changes_bucket_has_no_finite_bound(d):
    """The issue's case: the two users are told apart by an event of
    probability zero for one of them, so no epsilon bounds them; the chance
    that the reports show anything is at most 1 - C(b - w, d) / C(b, d)."""
    b = 8
    law = _transcript_law(CHANGING[0], b, d, 1.0)
    law_prime = _transcript_law(CHANGING[1], b, d, 1.0)
    assert _worst_log_ratio(law, law_prime) == np.inf
    assert _worst_log_ratio(law_prime, law) == np.inf
    tv = sum(max(0.0, law.get(k, 0.0) - law_prime.get(k, 0.0)) for k in set(law) | set(law_prime))
    visited = 4  # buckets 0, 1, 2, 3
    delta = 1 - comb(b - visited, d) / comb(b, d)
    assert 0 < tv <= delta + 1e-12


def test_the_draws_are_shared_between_values():
    """The sampler: a user's reports of every bucket share J, and the bit of a
    sampled bucket is the same for every value outside it (what makes the
    changes show)."""
    b, d, n = 6, 2, 4_000
    mech = DBitFlipPM(1.0, d=d, categories=range(b)).fit()
    secrets = generate_user_secrets(n, random_state=0)
    sets, bits = [], []
    for v in range(b):
        reports = mech.transform(np.full((n, 1), v), user_secrets=secrets)
        J, B = mech.channel_.split_reports(np.asarray(reports).ravel())
        sets.append(J)
        bits.append(B)
    for v in range(1, b):
        np.testing.assert_array_equal(sets[v], sets[0])
    J = sets[0]
    for t in range(d):
        outside = np.stack([bits[v][:, t] for v in range(b)], axis=1)  # (n, b)
        holds = np.arange(b)[None, :] != J[:, [t]]
        # every value outside J[t] reports one bit: the first such value's
        first = np.argmax(holds, axis=1)
        expected = outside[np.arange(n), first]
        assert ((outside == expected[:, None]) | ~holds).all()
    # and slot 0's in-bit differs from its out-bit with probability p^2 + q^2
    p = 1.0 / (1.0 + np.exp(-0.5))
    slot0 = np.stack([bits[v][:, 0] for v in range(b)], axis=1)
    rows = np.arange(n)
    differs = slot0[rows, J[:, 0]] != slot0[rows, (J[:, 0] + 1) % b]
    assert differs.mean() == pytest.approx(p**2 + (1 - p) ** 2, abs=0.03)


# ------------------------------------------------------ charged vs audited
def test_the_old_charge_fails_the_audit_of_changing_values():
    """Two users whose values change at the same rounds (0,1,0,1 and 2,3,2,3):
    the audit finds a bound above 2.0, the epsilon per distinct value that
    spend_longitudinal(mech, n_values=2) recorded before, and the bound
    grows with the number of samples (an event of probability zero for one
    of them): no finite charge would hold."""
    mech = DBitFlipPM(1.0, categories=range(4)).fit()
    old_charge = 2 * mech.epsilon_permanent_
    assert old_charge == 2.0
    bounds = []
    for n_samples in (4_000, 40_000):
        result = audit_rounds(
            mech, 4, pairs=[CHANGING], epsilon=old_charge, n_samples=n_samples, random_state=0
        )
        assert not result.passed
        bounds.append(result.epsilon_lower_bound)
    assert bounds[0] > old_charge and bounds[1] > bounds[0] + 1.5
    # the events found are the changes: a tuple (report in rounds 1 and 3,
    # report in rounds 2 and 4) that the other user never sends
    worst = result.worst
    assert worst["rate_prime"] == 0 and worst["rate"] > 0.05


def test_the_accountant_refuses_to_charge_a_value_that_changes_bucket():
    mech = DBitFlipPM(1.0, categories=range(4)).fit()
    acc = BudgetAccountant()
    with pytest.raises(ValueError, match="bounds the reports of one value only"):
        acc.spend_longitudinal(mech, n_values=2)
    with pytest.raises(ValueError, match="bounds the reports of one value only"):
        acc.spend_longitudinal(mech, n_values=2, n_rounds=4)
    assert acc.spent == 0.0  # nothing recorded
    assert acc.spend_longitudinal(mech) == 1.0  # one bucket, any number of rounds
    # the audit's default claim refuses too
    with pytest.raises(ValueError, match="claims no loss for a value that changes"):
        audit_rounds(mech, 4, pairs=[CHANGING], n_samples=100, random_state=0)
    # a privatizer with a dBitFlipPM column: the same
    table = pd.DataFrame({"app": [0, 1, 2], "mode": ["a", "b", "a"]})
    priv = DataFramePrivatizer(
        {
            "app": DBitFlipPM(1.0, categories=range(4)),
            "mode": LongitudinalGRR(2.0, 1.0, categories=["a", "b"]),
        }
    ).fit(table)
    with pytest.raises(ValueError, match="'app' \\(DBitFlipPM\\)"):
        acc.spend_longitudinal(priv, n_values=2)
    assert acc.spend_longitudinal(priv) == pytest.approx(4.0)


def test_changes_within_a_bucket_pass_at_the_charge():
    """Values 0, 1 share bucket 0 and 2, 3 bucket 1: for dBitFlipPM these
    users hold one value each, charged epsilon, and the audit agrees."""
    mech = DBitFlipPM(1.0, n_buckets=2, categories=range(4)).fit()
    charged = BudgetAccountant().spend_longitudinal(mech)  # n_values=1: one bucket
    result = audit_rounds(
        mech, 4, pairs=[CHANGING], epsilon=charged, n_samples=20_000, random_state=0
    )
    assert result.passed and result.epsilon_claimed == charged == 1.0


@pytest.mark.parametrize(
    "mech",
    [
        LongitudinalGRR(1.0, 0.5, categories=range(4)),
        LongitudinalUE(1.0, 0.5, categories=range(4)),
    ],
    ids=["LGRR", "LUE"],
)
def test_mechanisms_with_one_answer_per_value_pass_at_the_charge(mech):
    """One permanent answer per value: two distinct values cost
    2 epsilon_perm, and the audit of the changing users stays below it."""
    mech.fit()
    charged = BudgetAccountant().spend_longitudinal(mech, n_values=2)
    result = audit_rounds(mech, 4, pairs=[CHANGING], n_samples=20_000, random_state=0)
    assert result.epsilon_claimed == charged == 2.0
    assert result.passed, result.tests.sort_values("lower_bound").tail(3)
    assert result.tests["x"].iloc[0] == CHANGING[0]  # the sequences, not labels


def test_audit_rounds_checks_the_sequences():
    mech = LongitudinalGRR(1.0, 0.5, categories=range(4)).fit()
    with pytest.raises(ValueError, match="one value per round: 3 values for n_rounds=4"):
        audit_rounds(mech, 4, pairs=[((0, 1, 0), (2, 3, 2, 3))], n_samples=100)
    # a value stands for the sequence that repeats it
    result = audit_rounds(mech, 4, pairs=[(0, (2, 3, 2, 3))], n_samples=2_000, random_state=0)
    assert result.tests["x"].iloc[0] == (0, 0, 0, 0)
    assert "2 groups of rounds" in result.notes[-1]
