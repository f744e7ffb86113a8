"""Tests of the personalized mechanism (PUM), its estimator and Theorem 1."""

import json
import pickle

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

from sklearn_uldp import (
    EMEstimator,
    EmpiricalEstimator,
    PersonalizedEstimator,
    PersonalizedMechanism,
    ThresholdEstimator,
    UtilityOptimizedRR,
)
from sklearn_uldp.datasets import make_personalized_locations
from sklearn_uldp.mechanisms import bot_label, get_channel, split_bots
from sklearn_uldp.metrics import l1_loss, personalized_loss_terms
from sklearn_uldp.privacy import check_uldp

CATS = ["a", "b", "c", "d", "e"]
TAGS = ["home", "work"]
HUGE_EPS = 20.0  # uRR then reports its input with probability 1 - O(e^-20)


def _mech(eps=1.0, mechanism="urr", sensitive=("a",), **kw):
    kw.setdefault("tags", TAGS)
    kw.setdefault("categories", CATS)
    return PersonalizedMechanism(eps, sensitive=list(sensitive), mechanism=mechanism, **kw)


def _intermediate(frame, **kw):
    """What the pre-processor produced, read through a (near) identity uRR."""
    mech = _mech(HUGE_EPS, random_state=0, **kw).fit()
    return mech.transform(frame)[:, 0].tolist()


# --------------------------------------------------------------- the rules
def test_preprocessor_rules():
    frame = pd.DataFrame(
        {
            "cell": ["b", "b", "c", "a", "d", "e", "b"],
            "home": ["b", "c", ["b", "c"], "a", None, np.nan, "b"],
            "work": [None, "b", "c", None, ["d"], "e", "b"],
        }
    )
    z = _intermediate(frame)
    assert z == [
        "⊥home",  # tagged home
        "⊥work",  # tagged work (home is elsewhere)
        "⊥home",  # listed under both tags: the first tag in `tags` order wins
        "⊥home",  # tagged value in the common X_S still goes to the bot
        "⊥work",  # list cell
        "⊥work",  # missing home, tagged work
        "⊥home",  # b under both tags
    ]
    # The order of `tags` decides, not the column order.
    z_swapped = _intermediate(frame, tags=["work", "home"])
    assert z_swapped[2] == "⊥work" and z_swapped[6] == "⊥work"
    # Untagged values are reported through themselves.
    untagged = frame.assign(home=None, work=None)
    assert _intermediate(untagged) == frame["cell"].tolist()


def test_array_input_tags_are_last_columns():
    X = np.array([["b", "b", None], ["c", None, "c"], ["d", "a", "b"]], dtype=object)
    mech = _mech(HUGE_EPS, random_state=0).fit()
    assert mech.transform(X)[:, 0].tolist() == ["⊥home", "⊥work", "d"]


def test_input_errors():
    mech = _mech().fit()
    ok = pd.DataFrame({"cell": ["a"], "home": ["b"], "work": [None]})
    # counted, never quoted (issue 30)
    with pytest.raises(ValueError, match=r"Tag column 'home' holds 1 value \(text\)"):
        mech.transform(ok.assign(home=["zz"]))
    with pytest.raises(ValueError, match=r"Tag column 'work' holds 1 value \(text\)"):
        mech.transform(ok.assign(work=[["a", "q"]]))
    with pytest.raises(ValueError, match="not categories"):
        mech.transform(ok.assign(cell=["zz"]))
    with pytest.raises(ValueError, match="missing values"):
        mech.transform(ok.assign(cell=[None]))
    with pytest.raises(ValueError, match="no column for the tags"):
        mech.transform(ok.drop(columns="work"))
    with pytest.raises(ValueError, match="n_reports=1"):
        mech.transform(ok.assign(cell2=["a"]))
    with pytest.raises(ValueError, match="reserved"):
        _mech(categories=["a", "⊥home", "c"]).fit()
    with pytest.raises(ValueError, match="unique"):
        _mech(tags=["home", "home"]).fit()
    with pytest.raises(ValueError, match="tags"):
        _mech(tags="home").fit()


def test_bot_labels_and_spec():
    mech = _mech(2.0).fit()
    assert mech.intermediate_categories_.tolist() == CATS + ["⊥home", "⊥work"]
    assert split_bots(mech.channel_) == (len(CATS), TAGS)
    assert bot_label("x") == "⊥x"
    # Q_cmn is an ordinary uRR over Z with Z_S = X_S ∪ bots.
    assert mech.channel_.name == "urr"
    assert mech.channel_.sensitive_mask.tolist() == [True, False, False, False, False, True, True]
    spec = json.loads(json.dumps(mech.spec()))
    assert spec["categories"] == CATS + ["⊥home", "⊥work"]
    with pytest.raises(ValueError, match="no bot"):
        split_bots(UtilityOptimizedRR(1.0, sensitive=["a"], categories=CATS).fit().channel_)


# ----------------------------------------------------------------- privacy
def _random_user(rng, k):
    tags = {}
    for tag in TAGS:
        size = rng.integers(0, 3)
        values = rng.choice(CATS[:k], size=size, replace=False).tolist()
        tags[tag] = values if rng.random() < 0.5 or size != 1 else values[0]
    return tags


def _personal_mask(user_tags, sensitive):
    mask = np.isin(CATS, list(sensitive))
    for values in user_tags.values():
        values = [values] if isinstance(values, str) else values
        mask |= np.isin(CATS, values)
    return mask


@pytest.mark.parametrize("mechanism", ["urr", "urap"])
def test_per_user_mechanism_is_uldp(mechanism):
    rng = np.random.default_rng(0)
    for _ in range(12):
        eps = float(rng.uniform(0.1, 5.0))
        sensitive = rng.choice(CATS, size=rng.integers(0, 3), replace=False)
        mech = _mech(eps, mechanism, sensitive=sensitive).fit()
        protected = mech.channel_.protected_outputs()
        # Q_cmn alone is (Z_S, Y_P, eps)-ULDP.
        assert check_uldp(mech.channel_).satisfied
        user = _random_user(rng, len(CATS))
        Q = mech.user_channel_matrix(user)
        mask = _personal_mask(user, sensitive)
        check = check_uldp(Q, sensitive=mask, epsilon=eps, protected=protected)
        assert check.satisfied, (user, check.reasons)
        # ...and not for a smaller budget (the check can fail).
        if mask.any() or sensitive.size:
            assert not check_uldp(
                Q, sensitive=mask, epsilon=0.9 * eps, protected=protected
            ).satisfied
        # Without the pre-processor, a tagged non-common value would leak.
        tagged_only = mask & ~np.isin(CATS, list(sensitive))
        if tagged_only.any():
            Q_plain = mech.channel_.matrix()[: len(CATS)]
            assert not check_uldp(
                Q_plain, sensitive=mask, epsilon=eps, protected=protected
            ).satisfied


def test_user_channel_matrix_matches_transform():
    mech = _mech(1.5, random_state=3).fit()
    user = {"home": "c", "work": ["a", "d"]}
    Q = mech.user_channel_matrix(user)
    n = 20_000
    labels = mech.channel_.output_labels().tolist()
    for x in range(len(CATS)):
        frame = pd.DataFrame({"cell": [CATS[x]] * n, "home": ["c"] * n, "work": [["a", "d"]] * n})
        reports = mech.transform(frame)[:, 0]
        freq = pd.Series(reports).value_counts(normalize=True)
        freq = freq.reindex(labels, fill_value=0.0).to_numpy()
        assert np.abs(freq - Q[x]).max() < 0.02


def test_several_reports_compose():
    eps, t = 2.0, 2
    mech = _mech(eps, n_reports=t).fit()
    assert mech.channel_.epsilon == pytest.approx(eps / t)
    assert mech.epsilon_spent_ == pytest.approx(eps)  # per user
    user = {"home": "b", "work": None}
    Q = mech.user_channel_matrix(user)  # one report, eps / t
    mask = _personal_mask(user, ["a"])
    P = mech.channel_.protected_outputs()
    assert check_uldp(Q, sensitive=mask, epsilon=eps / t, protected=P).satisfied
    # Two reports of the same value: the joint channel spends eps (Prop. 1).
    Q2 = np.einsum("xi,xj->xij", Q, Q).reshape(len(CATS), -1)
    P2 = np.outer(P, P).ravel()
    assert check_uldp(Q2, sensitive=mask, epsilon=eps, protected=P2).satisfied
    assert not check_uldp(Q2, sensitive=mask, epsilon=0.9 * eps, protected=P2).satisfied


# ------------------------------------------------------------------ leaks
def _population(rng, n, tagged):
    home = rng.choice(CATS[1:], size=n)
    cell = home.copy() if tagged else rng.choice(CATS[1:], size=n)
    return pd.DataFrame({"cell": cell, "home": home, "work": [None] * n})


def test_fitted_mechanism_and_spec_hold_no_tag_data():
    rng = np.random.default_rng(1)
    X1 = _population(rng, 500, tagged=False)
    X2 = X1.assign(home=rng.choice(CATS, size=500), work=[["b", "c"]] * 250 + [None] * 250)
    dumps = []
    for X in (X1, X2):
        mech = _mech(1.0, random_state=7).fit(X)
        mech.transform(X)
        dumps.append((pickle.dumps(mech), json.dumps(mech.spec())))
    assert dumps[0] == dumps[1]


@pytest.mark.parametrize("mechanism", ["urr", "urap"])
def test_reports_do_not_depend_on_which_value_is_tagged(mechanism):
    # Users at home in b (home=b) vs at home in d (home=d): same intermediate
    # value (the bot), so with the same randomness the reports are identical.
    n = 300
    A = pd.DataFrame({"cell": ["b"] * n, "home": ["b"] * n, "work": [None] * n})
    B = pd.DataFrame({"cell": ["d"] * n, "home": ["d"] * n, "work": [None] * n})
    # Users at c whose (untagged) home differs: also identical.
    C = pd.DataFrame({"cell": ["c"] * n, "home": ["b"] * n, "work": ["e"] * n})
    D = pd.DataFrame({"cell": ["c"] * n, "home": ["d"] * n, "work": [None] * n})
    out = [
        np.asarray(_mech(1.0, mechanism, random_state=5).fit().transform(F)) for F in (A, B, C, D)
    ]
    np.testing.assert_array_equal(out[0], out[1])
    np.testing.assert_array_equal(out[2], out[3])
    # Control: the same users without tags are reported differently.
    plain = _mech(1.0, mechanism, random_state=5).fit().transform(A.assign(home=None))
    assert not np.array_equal(np.asarray(plain), out[0])


@pytest.mark.parametrize("mechanism", ["urr", "urap"])
def test_tagged_values_only_reach_reports_through_bots(mechanism):
    rng = np.random.default_rng(2)
    n = 5000
    tagged = _population(rng, n, tagged=True)  # everybody at home, not in X_S
    mech = _mech(5.0, mechanism, random_state=0).fit()
    non_sensitive = ["b", "c", "d", "e"]
    for frame, expect_leak in ((tagged, False), (tagged.assign(home=None), True)):
        reports = mech.transform(frame)
        if mechanism == "urr":
            leaked = np.isin(np.asarray(reports)[:, 0], non_sensitive).any()
        else:
            cols = [CATS.index(c) for c in non_sensitive]
            leaked = np.asarray(reports)[:, cols].any()
        assert leaked == expect_leak
        # Every report of a tagged user is a protected output of Q_cmn.
    bits = np.asarray(mech.transform(tagged))
    if mechanism == "urr":
        assert set(bits[:, 0]) <= {"a", "⊥home", "⊥work"}


# --------------------------------------------------------------- estimator
def _privatized(epsilon, mechanism, n, seed):
    """Personalized locations on a 6 x 6 grid (3 sensitive cells), the mechanism and its reports."""
    data = make_personalized_locations(
        n, shape=(6, 6), n_sensitive=3, home_fraction=0.1, work_fraction=0.2, random_state=seed
    )
    mech = PersonalizedMechanism(
        epsilon,
        sensitive=data.sensitive,
        tags=data.tags,
        categories=data.categories,
        mechanism=mechanism,
        random_state=seed,
    )
    return data, mech, mech.fit_transform(data.frame)


def _fitted(inner=None, mechanism="urr", background=None, n=20_000, seed=0):
    data, mech, reports = _privatized(np.log(36), mechanism, n, seed)
    est = PersonalizedEstimator(inner, background=background).fit(reports)
    return data, mech, reports, est


@pytest.mark.parametrize("inner", [None, EmpiricalEstimator(), ThresholdEstimator()])
@pytest.mark.parametrize("knowledge", ["none", "array", "series", "dict"])
def test_estimator_identity(inner, knowledge):
    data, _, reports, est = _fitted(inner)
    k = len(data.categories)
    bg = data.background
    if knowledge == "array":
        est.set_params(background={"home": 3 * bg["home"]})
    elif knowledge == "series":
        est.set_params(background={"work": pd.Series(bg["work"], index=data.categories)})
    elif knowledge == "dict":
        est.set_params(background={"home": {data.categories[0]: 2.0}})
    r = est.intermediate_distribution_
    pis = est.tag_distributions_
    masses = est.bot_masses_
    p = r[:k] + masses["home"] * pis["home"] + masses["work"] * pis["work"]
    np.testing.assert_allclose(est.distribution_, p)
    assert masses == {"home": r[k], "work": r[k + 1]}
    assert est.loss_bound_ == pytest.approx(2 * np.abs(r[k:]).sum())
    for tag in ("home", "work"):
        assert pis[tag].sum() == pytest.approx(1.0) and (pis[tag] >= 0).all()
    if knowledge == "none":  # π̂ ∝ r̂ over X_N
        non_sensitive = ~np.isin(data.categories, data.sensitive)
        expect = np.where(non_sensitive, np.clip(r[:k], 0, None), 0)
        np.testing.assert_allclose(pis["home"], expect / expect.sum())
    if knowledge == "array":
        np.testing.assert_allclose(pis["home"], bg["home"] / bg["home"].sum())
    if knowledge == "dict":
        assert pis["home"][0] == 1.0
    if inner is None or isinstance(inner, ThresholdEstimator):
        assert est.distribution_.sum() == pytest.approx(1.0)
    assert isinstance(est.estimator_, type(inner or EMEstimator()))


def test_estimator_inputs_and_errors():
    data, mech, reports, est = _fitted(EmpiricalEstimator())
    bare = np.asarray(reports)
    with pytest.raises(ValueError, match="do not say which mechanism"):
        PersonalizedEstimator().fit(bare)
    for given in (mech, mech.spec(), clone(mech)):
        other = PersonalizedEstimator(EmpiricalEstimator(), mechanism=given)
        np.testing.assert_allclose(other.fit(bare).distribution_, est.distribution_)
    with pytest.raises(ValueError, match="tags"):
        PersonalizedEstimator(background={"gym": [1] * 36}).fit(reports)
    with pytest.raises(ValueError, match="shape"):
        PersonalizedEstimator(background={"home": [1, 2]}).fit(reports)
    with pytest.raises(ValueError, match="non-negative"):
        PersonalizedEstimator(background={"home": -np.ones(36)}).fit(reports)
    with pytest.raises(ValueError, match="outside the domain"):
        PersonalizedEstimator(background={"home": {"zz": 1.0}}).fit(reports)
    plain = UtilityOptimizedRR(1.0, sensitive=["a"], categories=CATS, random_state=0)
    with pytest.raises(ValueError, match="no bot"):
        PersonalizedEstimator().fit(plain.fit_transform(np.array([["a"]])))
    from_stats = PersonalizedEstimator(EmpiricalEstimator()).fit_statistics(est.statistics_)
    np.testing.assert_allclose(from_stats.distribution_, est.distribution_)
    # Chunks add up; pandas output is accepted.
    chunked = PersonalizedEstimator(EmpiricalEstimator())
    chunked.partial_fit(reports[:5000]).partial_fit(reports[5000:])
    np.testing.assert_allclose(chunked.distribution_, est.distribution_)
    frame = clone(mech).set_output(transform="pandas").fit_transform(data.frame)
    assert get_channel(frame) == mech.channel_
    assert PersonalizedEstimator().fit(frame).distribution_.shape == (36,)
    proba = est.predict_proba(reports[:50])
    assert proba.shape == (50, 36)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert np.isfinite(PersonalizedEstimator().fit(reports).score(reports))


# Pinned floats (tests/README.md): tolerances that hold on any processor.
# Theorem 1's second term vanishes when the tag distributions are exact: a
# difference of O(1) sums, 1e-12 absolute.
@pytest.mark.pinned
@pytest.mark.parametrize("mechanism", ["urr", "urap"])
def test_theorem1_holds(mechanism):
    for seed, eps in ((0, 0.5), (1, 2.0), (2, np.log(36))):
        data, _, reports = _privatized(eps, mechanism, 8000, seed)
        for inner in (EMEstimator(), EmpiricalEstimator()):
            est = PersonalizedEstimator(inner).fit(reports)
            for bg in (None, data.background, data.tag_distributions):
                est.set_params(background=bg)
                t = personalized_loss_terms(
                    est, data.empirical, data.intermediate_distribution, data.tag_distributions
                )
                assert t.holds, t
                assert t.l1_loss == pytest.approx(l1_loss(data.empirical, est.distribution_))
                assert t.second_term <= t.second_term_bound + 1e-12
                assert t.l1_loss <= t.first_term + est.loss_bound_ + 1e-12
                if bg is data.tag_distributions:
                    assert t.second_term == pytest.approx(0.0, abs=1e-12)


def test_theorem1_terms_can_detect_a_wrong_estimate():
    data, _, _, est = _fitted()
    k = len(data.categories)
    wrong = np.roll(data.empirical, 7)  # not the truth the estimate targets
    t = personalized_loss_terms(est, wrong, data.intermediate_distribution, data.tag_distributions)
    assert not t.holds
    with pytest.raises(ValueError, match="intermediate"):
        personalized_loss_terms(est, data.empirical, data.empirical, data.tag_distributions)
    with pytest.raises(ValueError, match="lacks"):
        personalized_loss_terms(est, data.empirical, data.intermediate_distribution, {})
    arr = np.stack([data.tag_distributions["home"], data.tag_distributions["work"]])
    t2 = personalized_loss_terms(est, data.empirical, data.intermediate_distribution, arr)
    assert t2.first_term > 0 and t2.bound >= t2.l1_loss
    assert len(t2.per_tag) == 2 and k == 36


@pytest.mark.parametrize("mechanism", ["urr", "urap"])
def test_several_reports_per_user(mechanism):
    rng = np.random.default_rng(4)
    n, cats = 6000, CATS
    home = rng.choice(cats[1:], size=n)
    x1 = np.where(rng.random(n) < 0.5, home, rng.choice(cats, size=n))
    x2 = rng.choice(cats, size=n, p=[0.1, 0.4, 0.2, 0.2, 0.1])
    frame = pd.DataFrame({"morning": x1, "evening": x2, "home": home, "work": [None] * n})
    mech = _mech(8.0, mechanism, n_reports=2, random_state=0)
    reports = mech.fit_transform(frame)
    k_z = len(cats) + 2
    assert reports.shape == ((n, 2) if mechanism == "urr" else (n, 2 * k_z))
    if mechanism == "urap":
        assert mech.get_feature_names_out()[k_z] == "evening_a"
    est = PersonalizedEstimator(
        background={"home": np.bincount(pd.Index(cats).get_indexer(home), minlength=5)}
    ).fit(reports)
    assert est.n_reports_ == 2 * n
    pooled = pd.Series(np.concatenate([x1, x2])).value_counts(normalize=True)
    truth = pooled.reindex(cats, fill_value=0).to_numpy()
    # Tagged values are x1 == home: π_home is (up to noise) the home histogram.
    assert l1_loss(truth, est.distribution_) < 0.1
    with pytest.raises(ValueError, match="n_reports=2"):
        mech.transform(frame.drop(columns="evening"))


def test_generator():
    data = make_personalized_locations(3000, random_state=0)
    k = len(data.categories)
    assert data.frame.shape == (3000, 3) and k == 625
    assert data.frame["work"].isna().any() and data.frame["home"].notna().all()
    r = data.intermediate_distribution
    assert r.sum() == pytest.approx(1.0)
    assert 0.01 < r[k] < 0.03 and 0.04 < r[k + 1] < 0.08
    p = r[:k] + r[k] * data.tag_distributions["home"] + r[k + 1] * data.tag_distributions["work"]
    np.testing.assert_allclose(p, data.empirical)
    # Background II is close to, but not equal to, the truth.
    for tag in data.tags:
        gap = l1_loss(data.tag_distributions[tag], data.background[tag])
        assert 0 < gap < 2
    assert data.intermediate_categories[-2:].tolist() == ["⊥home", "⊥work"]
    same = make_personalized_locations(3000, random_state=0)
    assert same.frame.equals(data.frame)
    with pytest.raises(ValueError, match="smaller"):
        make_personalized_locations(10, n_population=5)
