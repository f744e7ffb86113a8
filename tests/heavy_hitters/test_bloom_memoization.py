"""Bloom-filter RAPPOR with memoization: cohorts and PRR from the users' secrets.

What is checked: the same secret and item give the same cohort and PRR in
every call and in another process (also without numba); different users
are independent; the sampler follows the exact channels of one report and
of two reports of one user (memoized PRR, fresh IRR), and a fresh PRR is
rejected by the two-report test; the loss of t reports against the exact
t-report channel; ``audit_rounds`` passes the memoized mechanism and fails
a fresh PRR; budgets, errors without secrets, Pipelines, nothing stored.
"""

import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import sklearn
from _chisquare import chi_square_pvalue
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from sklearn.pipeline import make_pipeline

from sklearn_uldp.heavy_hitters import BloomRAPPOR, BloomRAPPORDecoder, _bloom
from sklearn_uldp.privacy import (
    BudgetAccountant,
    audit_rounds,
    check_ldp,
    longitudinal_exposure,
)
from sklearn_uldp.utils import generate_user_secrets


def _pattern_codes(reports, k):
    """(cohort, bits) rows as the column index of ``channel_matrix``."""
    rep = np.asarray(reports).astype(np.int64)
    return rep[:, 0] * (1 << k) + rep[:, 1:] @ (1 << np.arange(k - 1, -1, -1))


def _identity_irr(**params):
    """p = 0, q = 1: every report is the (cohort, PRR) itself."""
    return BloomRAPPOR(p=0.0, q=1.0, **params).fit()


# ------------------------------------------------------------ memoization
def test_same_secret_and_item_give_the_same_cohort_and_prr():
    mech = _identity_irr(n_bits=16, n_hashes=2, n_cohorts=8)
    n = 2_000
    secrets = generate_user_secrets(n, random_state=1)
    items = np.asarray(["alpha", "beta", "gamma"], dtype=object)[np.arange(n) % 3]
    first = np.asarray(mech.transform(items, user_secrets=secrets))
    again = np.asarray(mech.transform(items, user_secrets=secrets))
    assert np.array_equal(first, again)
    # the answers follow the users, not the rows
    order = np.random.default_rng(0).permutation(n)
    shuffled = np.asarray(mech.transform(items[order], user_secrets=secrets[order]))
    assert np.array_equal(shuffled, first[order])
    # another item: the same cohort (it depends on the secret only), another PRR
    other = np.asarray(mech.transform(np.full(n, "delta", dtype=object), user_secrets=secrets))
    assert np.array_equal(other[:, 0], first[:, 0])
    assert (other[:, 1:] != first[:, 1:]).any(axis=1).mean() > 0.5
    # cohorts are spread over all m
    assert np.unique(first[:, 0]).size == 8


def test_collections_with_distinct_memo_labels_do_not_share_prrs():
    """Two questions asked with the same secrets: distinct labels, distinct memos."""
    n = 2_000
    secrets = generate_user_secrets(n, random_state=2)
    items = np.full(n, "google.com", dtype=object)
    homepage = BloomRAPPOR(p=0.0, q=1.0, n_cohorts=1, memo_label="homepage").fit()
    search = BloomRAPPOR(p=0.0, q=1.0, n_cohorts=1, memo_label="search").fit()
    a = np.asarray(homepage.transform(items, user_secrets=secrets))
    b = np.asarray(search.transform(items, user_secrets=secrets))
    # independent PRRs: 2 of 16 bits set w.p. 3/4, 14 w.p. 1/4; equal rows are rare
    assert (a != b).any(axis=1).mean() > 0.9
    np.testing.assert_array_equal(a, np.asarray(homepage.transform(items, user_secrets=secrets)))
    with pytest.raises(ValueError, match="memo_label names the collection"):
        BloomRAPPOR(memo_label=1).fit()


def test_the_instantaneous_round_is_fresh_at_every_report():
    mech = BloomRAPPOR(n_bits=16, n_cohorts=8).fit()
    secrets = generate_user_secrets(1_000, random_state=2)
    a = np.asarray(mech.transform(["x"] * 1_000, user_secrets=secrets))
    b = np.asarray(mech.transform(["x"] * 1_000, user_secrets=secrets))
    assert np.array_equal(a[:, 0], b[:, 0])
    assert (a[:, 1:] != b[:, 1:]).any(axis=1).mean() > 0.9


_SUBPROCESS = textwrap.dedent(
    """
    import sys
    if sys.argv[1] == "numpy":
        sys.modules["numba"] = None  # the numpy rounds, not the compiled kernel
    import numpy as np
    from sklearn_uldp.heavy_hitters import BloomRAPPOR
    from sklearn_uldp.utils import generate_user_secrets
    secrets = generate_user_secrets(500, random_state=7)
    items = np.asarray(["caf\\u00e9", "cafe\\u0301", "b", "c" * 200, "d"], dtype=object)
    mech = BloomRAPPOR(n_bits=8, n_hashes=5, n_cohorts=4, p=0.0, q=1.0).fit()
    rep = mech.transform(items[np.arange(500) % 5], user_secrets=secrets)
    print(np.ascontiguousarray(rep, dtype=np.int64).tobytes().hex())
    """
)


def test_memoization_is_deterministic_across_processes_and_implementations():
    """Another process, without numba, derives the same cohorts and PRRs
    (n_hashes=5 on 8 bits: many rows with colliding hashes)."""
    other = subprocess.run(
        [sys.executable, "-c", _SUBPROCESS, "numpy"], capture_output=True, text=True, check=True
    ).stdout.strip()
    secrets = generate_user_secrets(500, random_state=7)
    items = np.asarray(["caf\u00e9", "cafe\u0301", "b", "c" * 200, "d"], dtype=object)
    mech = _identity_irr(n_bits=8, n_hashes=5, n_cohorts=4)
    here = np.asarray(mech.transform(items[np.arange(500) % 5], user_secrets=secrets))
    assert other == np.ascontiguousarray(here, dtype=np.int64).tobytes().hex()
    # NFC: the two spellings of "café" are one item, so one user would get
    # one PRR for both; here rows 0 and 1 are different users.
    assert np.array_equal(
        mech.transform(["cafe\u0301"], user_secrets=secrets[:1]),
        mech.transform(["caf\u00e9"], user_secrets=secrets[:1]),
    )


def test_different_users_are_independent():
    """Users holding the same item: (cohort, PRR) of users 2i and 2i + 1 are independent."""
    mech = _identity_irr(n_bits=3, n_hashes=2, n_cohorts=2)
    n = 40_000
    rep = mech.transform(["a"] * n, user_secrets=generate_user_secrets(n, random_state=3))
    code = _pattern_codes(rep, 3)  # 16 values
    table = np.bincount(16 * code[0::2] + code[1::2], minlength=256).reshape(16, 16)
    table = table[table.sum(axis=1) > 0][:, table.sum(axis=0) > 0]
    assert stats.chi2_contingency(table)[1] > 1e-3


def test_seeded_simulation_without_secrets_is_one_user_per_row():
    mech = _identity_irr(n_bits=8, n_cohorts=4, random_state=5)
    a = np.asarray(mech.transform(["a", "b", "c"]))
    b = np.asarray(mech.transform(["a", "b", "c", "d"]))
    assert np.array_equal(a, b[:3])


@pytest.mark.parametrize("random_state", [None, "secure", np.random.default_rng(0)])
def test_missing_secrets_are_refused_unless_seeded(random_state):
    mech = BloomRAPPOR(random_state=random_state)
    if random_state == "secure":
        pytest.importorskip("randomgen")
    mech.fit()
    with pytest.raises(ValueError, match="user_secrets=secrets.*generate_user_secrets"):
        mech.transform(["a", "b"])
    with pytest.raises(ValueError, match="Got 1 user secrets for 2 rows"):
        mech.transform(["a", "b"], user_secrets=generate_user_secrets(1))
    twice = [b"s" * 32, b"s" * 32]
    with pytest.raises(ValueError, match="share a user secret"):
        mech.transform(["a", "b"], user_secrets=twice)
    with pytest.raises(TypeError, match="bytes.fromhex"):
        mech.transform(["a", "b"], user_secrets=["00" * 16, "11" * 16])


def test_secrets_are_never_stored_and_pipelines_route_them():
    secrets = generate_user_secrets(50, random_state=4)
    X = np.asarray(["a", "b"] * 25, dtype=object).reshape(-1, 1)
    mech = _identity_irr(n_bits=8, n_cohorts=4)
    direct = np.asarray(mech.transform(X, user_secrets=secrets))
    blob = pickle.dumps(mech)
    assert not any(s in blob for s in secrets)
    with sklearn.config_context(enable_metadata_routing=True):
        pipe = make_pipeline(mech.set_transform_request(user_secrets=True)).fit(X)
        routed = np.asarray(pipe.transform(X, user_secrets=secrets))
    assert np.array_equal(routed, direct)


# --------------------------------------------------------------- the PRF
@settings(max_examples=40, deadline=None)
@given(
    st.integers(2, 12).flatmap(
        lambda k: st.tuples(
            st.just(k),
            st.lists(
                st.lists(st.integers(0, k - 1), min_size=1, max_size=14).map(tuple),
                min_size=1,
                max_size=6,
            ).filter(lambda rows: len({len(r) for r in rows}) == 1),
        )
    )
)
def test_marked_columns_are_distinct_and_cover_the_bloom_bits(case):
    k, rows = case
    positions = np.asarray(rows, dtype=np.int64)
    bloom = np.zeros((positions.shape[0], k), dtype=np.uint8)
    bloom[np.arange(positions.shape[0])[:, None], positions] = 1
    columns, set_bit = _bloom._distinct_marks(bloom, positions)
    for i in range(positions.shape[0]):
        assert len(set(columns[i].tolist())) == columns.shape[1]  # distinct
        assert set(columns[i][set_bit[i]].tolist()) == set(positions[i].tolist())
        assert not bloom[i, columns[i][~set_bit[i]]].any()


@pytest.mark.parametrize("n_bits, n_hashes", [(4, 2), (4, 3), (2, 3)])
def test_the_permanent_round_follows_its_channel(n_bits, n_hashes):
    """PRR alone (p = 0, q = 1), including items with colliding hashes
    (h = 3 on 4 bits) and h >= k, against the exact permanent channel."""
    mech = _identity_irr(n_bits=n_bits, n_hashes=n_hashes, n_cohorts=2, f=0.6)
    pr = mech.channel_
    n = 20_000
    width = 2 << n_bits
    for item, seed in (("a", 0), ("b", 1)):
        rep = mech.transform([item] * n, user_secrets=generate_user_secrets(n, random_state=seed))
        hist = np.bincount(_pattern_codes(rep, n_bits), minlength=width)
        assert chi_square_pvalue(hist, pr.permanent_channel_matrix([item])[0]) > 1e-4
    wrong = _identity_irr(n_bits=n_bits, n_hashes=n_hashes, n_cohorts=2, f=0.45)
    assert chi_square_pvalue(hist, wrong.channel_.permanent_channel_matrix(["b"])[0]) < 1e-6


# ------------------------------------------------- sampler vs exact channels
def test_one_and_two_reports_follow_the_exact_channels():
    """One report against the end-to-end channel; two reports of each user
    against the memoized two-report channel, which rejects a fresh PRR."""
    mech = BloomRAPPOR(n_bits=3, n_hashes=2, n_cohorts=2, p=0.25, q=0.75, f=0.5).fit()
    pr = mech.channel_
    n = 40_000
    secrets = generate_user_secrets(n, random_state=11)
    r1 = mech.transform(["a"] * n, user_secrets=secrets)
    r2 = mech.transform(["a"] * n, user_secrets=secrets)
    one = np.bincount(_pattern_codes(r1, 3), minlength=16)
    Q1 = pr.channel_matrix(["a"])[0]
    assert chi_square_pvalue(one, Q1) > 1e-4
    assert np.array_equal(np.asarray(r1)[:, 0], np.asarray(r2)[:, 0])
    code2 = np.asarray(r1)[:, 0].astype(np.int64) * 64 + (
        _pattern_codes(r1, 3) % 8 * 8 + _pattern_codes(r2, 3) % 8
    )
    two = np.bincount(code2, minlength=128)
    Q2 = pr.channel_matrix(["a"], n_rounds=2)[0]
    assert Q2.sum() == pytest.approx(1.0)
    assert chi_square_pvalue(two, Q2) > 1e-4
    # a fresh PRR per report (the same cohort): P(c, y1, y2) = m Q1(c, y1) Q1(c, y2)
    Q1c = Q1.reshape(2, 8)
    fresh = (2 * Q1c[:, :, None] * Q1c[:, None, :]).ravel()
    assert chi_square_pvalue(two, fresh) < 1e-6


# Pinned floats (tests/README.md): tolerances that hold on any processor.
# The worst log-ratio of the exact channel (a search over its outputs through
# exp and log) against the exposure's closed form: 1e-9 relative.
@pytest.mark.pinned
def test_exposure_is_the_loss_of_t_reports_on_the_exact_channel():
    # p + q != 1: a set and an unset bit lose different amounts
    mech = BloomRAPPOR(n_bits=4, n_hashes=2, n_cohorts=1, p=0.5, q=0.75, f=0.5).fit()
    pr = mech.channel_
    U = ["a", "f", "b"]  # "a" and "f" have disjoint filters (h bits each)
    bloom = pr.bloom_filters(pr._universe_keys(["a", "f"]), np.zeros(2, dtype=np.int64))
    assert bloom.sum(axis=1).tolist() == [2, 2] and not (bloom[0] & bloom[1]).any()
    previous = 0.0
    for t in (1, 2, 3):
        Q = pr.channel_matrix(U, n_rounds=t)
        check = check_ldp(Q, epsilon=mech.exposure(t))
        assert check.satisfied
        assert check.worst_log_ratio == pytest.approx(mech.exposure(t), rel=1e-9)
        assert previous < mech.exposure(t) < mech.epsilon_permanent_
        previous = mech.exposure(t)
    assert mech.exposure(1) == pytest.approx(mech.epsilon_)
    assert mech.exposure(10_000) == pytest.approx(mech.epsilon_permanent_)
    P = pr.permanent_channel_matrix(U)
    assert check_ldp(P, epsilon=mech.epsilon_permanent_).worst_log_ratio == pytest.approx(
        mech.epsilon_permanent_
    )
    with pytest.raises(ValueError, match="n_rounds must be a positive integer"):
        mech.exposure(0)


def test_budget_accountant_and_exposure_curve():
    mech = BloomRAPPOR().fit()
    acc = BudgetAccountant(total=10.0)
    assert acc.spend_longitudinal(mech) == pytest.approx(4 * np.log(3))
    assert acc.spend_longitudinal(mech, n_rounds=1) == pytest.approx(4 * np.log(3) + mech.epsilon_)
    curve = longitudinal_exposure(mech, 3)
    assert curve["memoized"].iloc[0] == pytest.approx(mech.epsilon_)
    assert (curve["memoized"] <= curve["epsilon_perm"] + 1e-12).all()


# ------------------------------------------------------------------ audits
_AUDIT = dict(n_bits=4, n_hashes=2, n_cohorts=1, p=0.25, q=0.75, f=0.8)


def test_audit_rounds_passes_memoized_and_fails_fresh_secrets():
    mech = BloomRAPPOR(**_AUDIT).fit()
    kwargs = dict(pairs=[("a", "f")], n_samples=4_000, random_state=0)
    memo = audit_rounds(mech, 30, **kwargs)
    assert memo.passed, memo
    lost = audit_rounds(mech, 30, fresh_secrets=True, **kwargs)
    assert not lost.passed and lost.epsilon_lower_bound > mech.epsilon_permanent_


def test_audit_rounds_fails_a_prr_that_is_not_memoized(monkeypatch):
    """Keyed cohorts but a fresh PRR at every report (the old stub): caught."""
    permanent_round = _bloom._permanent_round
    monkeypatch.setattr(
        _bloom,
        "_permanent_round",
        lambda draws, bloom, positions, keys, f, rng: permanent_round(
            None, bloom, positions, keys, f, rng
        ),
    )
    mech = BloomRAPPOR(**_AUDIT).fit()
    result = audit_rounds(mech, 30, pairs=[("a", "f")], n_samples=4_000, random_state=0)
    assert not result.passed


# ---------------------------------------------------------------- decoding
def test_decoding_reports_of_several_rounds():
    rng = np.random.default_rng(0)
    true = [f"v{i}" for i in range(1, 7)]
    p = np.array([0.35, 0.25, 0.18, 0.12, 0.06, 0.04])
    n = 20_000
    secrets = generate_user_secrets(n, random_state=6)
    X = np.asarray(true, dtype=object)[rng.choice(6, p=p, size=n)]
    mech = BloomRAPPOR(n_bits=16, n_hashes=2, n_cohorts=8, p=0.25, q=0.75, f=0.5).fit()
    dec = BloomRAPPORDecoder(true + [f"v{i}" for i in range(7, 31)])
    for _ in range(2):  # two rounds of the same users
        dec.partial_fit(mech.transform(X, user_secrets=secrets))
    assert dec.n_reports_ == 2 * n
    assert {"v1", "v2", "v3", "v4"} <= set(dec.detected_.index)
    assert len(set(dec.detected_.index) - set(true)) <= 2
    est = dec.estimates_.loc["v1"]
    assert abs(est["proportion"] - np.mean(X == "v1")) < 5 * est["std_error"] + 0.01
