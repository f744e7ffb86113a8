"""Learning on privatized data: each correction against the truth.

Every correction is tested on simulated users whose true parameters are
known, with a tolerance that the same fit *without* the correction fails
(the test asserts both): the posterior-weighted and forward-corrected label
classifiers recover the clean model where a plain fit on noisy labels is
biased; naive Bayes recovers the class-conditional frequencies where the
report frequencies do not; the moment-corrected regression recovers the
coefficients where least squares on the reports is attenuated; reweighing
with the channel's inverse makes the true groups and labels independent
where reweighing on the reported groups does not. LDP-SGD's perturbed
gradients are checked against their closed-form variance, and the samplers
of RR-with-prior against its exact channel, which the privacy checks verify.
"""

import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.naive_bayes import CategoricalNB
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.svm import LinearSVC
from sklearn.utils._param_validation import InvalidParameterError

from sklearn_uldp import (
    ClippingWarning,
    PiecewiseMechanism,
    PrivacyLeakWarning,
    RandomizedResponse,
    ReportMismatchError,
    UtilityOptimizedRR,
)
from sklearn_uldp.learning import (
    LabelPrivacyClassifier,
    LDPLinearRegression,
    LDPLinearSVC,
    LDPLogisticRegression,
    LDPNaiveBayes,
    PrivatizedGroupReweighter,
    gradient_variance,
    privatize_gradients,
    rr_with_prior_likelihood,
    rr_with_prior_sizes,
)
from sklearn_uldp.learning._common import (
    invert_on_simplex,
    posterior_weights,
    privatized_codes,
    sub_random_states,
)
from sklearn_uldp.learning._label_privacy import _sample_rr_with_prior
from sklearn_uldp.learning._sgd import _gradient_mechanism, _perturb, corrected_second_moments
from sklearn_uldp.mechanisms import Reports
from sklearn_uldp.numeric import MultiNumericMechanism, closed_form_variance
from sklearn_uldp.privacy import check_ldp

# A clean logistic model: P(y = 1 | x) = sigmoid(x @ BETA + B0).
BETA = np.array([1.0, -0.5])
B0 = 0.2


def _logistic_data(n, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    p = 1.0 / (1.0 + np.exp(-(X @ BETA + B0)))
    return X, (rng.random(n) < p).astype(int), p


def _unpenalized():
    return LogisticRegression(C=1e6, max_iter=1000)


# ====================================================== the shared corrections
def test_posterior_weights_are_bayes_rule():
    Q = RandomizedResponse(epsilon=1.0, categories=[0, 1, 2]).fit().channel_.matrix()
    prior = np.array([0.6, 0.3, 0.1])
    reports = np.array([0, 1, 2, 2])
    W = posterior_weights(Q[:, reports].T, prior)
    for i, r in enumerate(reports):
        brute = prior * Q[:, r] / np.sum(prior * Q[:, r])
        assert_allclose(W[i], brute, rtol=1e-10)
    # one prior per row, and a report impossible under its prior -> uniform prior
    rows = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    W = posterior_weights(np.array([[0.0, 0.5, 0.5], [0.2, 0.3, 0.5]]), rows)
    assert_allclose(W, [[0.0, 0.5, 0.5], [0.2, 0.3, 0.5]])


def test_invert_on_simplex_exact_inside_and_optimal_outside():
    Q = RandomizedResponse(epsilon=1.0, categories=[0, 1, 2]).fit().channel_.matrix()
    rng = np.random.default_rng(0)
    P = rng.dirichlet(np.ones(3), size=50)
    assert_allclose(invert_on_simplex(P @ Q, Q), P, atol=1e-12)  # the exact inverse
    # Report distributions outside the channel's image: the answer is on the
    # simplex and satisfies the optimality (KKT) conditions of the likelihood:
    # g = ((m / pQ) Q^T) <= 1, with equality where p > 0.
    M = rng.dirichlet(np.full(3, 0.2), size=50)
    p = invert_on_simplex(M, Q)
    assert np.all(p >= 0) and np.allclose(p.sum(axis=1), 1.0)
    g = (M / (p @ Q)) @ Q.T
    assert np.all(g <= 1 + 1e-6)
    assert np.all(np.abs(g - 1)[p > 1e-6] < 1e-4)


# ====================================================== label privacy
def test_posterior_correction_recovers_the_clean_model():
    """k-RR at eps = 1 flips 27% of the labels: a plain fit's slopes shrink
    by about half; the posterior-weighted EM fit recovers them."""
    X, y, _ = _logistic_data(30_000)
    clf = LabelPrivacyClassifier(_unpenalized(), epsilon=1.0, random_state=0).fit(X, y)
    assert clf.method_ == "posterior" and clf.n_iter_ >= 2
    corrected = np.r_[clf.estimator_.coef_[0], clf.estimator_.intercept_]
    truth = np.r_[BETA, B0]
    tol = 0.12
    assert np.max(np.abs(corrected - truth)) < tol
    # The same reports, no correction: biased by more than the tolerance.
    noisy = clf.channel_.sample(y, np.random.default_rng(1))
    plain = _unpenalized().fit(X, noisy)
    assert np.max(np.abs(np.r_[plain.coef_[0], plain.intercept_] - truth)) > 3 * tol


def test_one_posterior_step_uses_the_estimated_label_distribution():
    """Without predict_proba (LinearSVC), the weights are Bayes' rule with
    the package's EM estimate of the label distribution, for every row."""
    X, y, _ = _logistic_data(5_000)
    clf = LabelPrivacyClassifier(LinearSVC(), epsilon=1.0, random_state=0).fit(X, y)
    assert clf.n_iter_ == 1 and not hasattr(clf, "predict_proba")
    assert_allclose(clf.prior_, [np.mean(y == 0), np.mean(y == 1)], atol=0.03)
    assert set(clf.predict(X)) <= {0, 1}


def test_forward_correction_estimates_the_true_probabilities():
    X, y, p_true = _logistic_data(30_000)
    clf = LabelPrivacyClassifier(_unpenalized(), epsilon=1.0, method="forward", random_state=0)
    p_hat = clf.fit(X, y).predict_proba(X)[:, 1]
    err = np.mean(np.abs(p_hat - p_true))
    noisy = clf.channel_.sample(y, np.random.default_rng(1))
    p_plain = _unpenalized().fit(X, noisy).predict_proba(X)[:, 1]
    assert err < 0.03
    assert np.mean(np.abs(p_plain - p_true)) > 3 * err  # the plain model is flattened
    # Smoothing keeps every probability off 0 (log-loss stays finite).
    assert clf.predict_proba(X).min() >= 1.0 / (2 * (len(y) + 1)) - 1e-15


def test_rr_with_prior_is_ldp_and_its_sampler_follows_its_channel():
    eps = 1.0
    prior = np.array([[0.5, 0.3, 0.15, 0.05], [0.97, 0.01, 0.01, 0.01], [0.25] * 4])
    order, sizes = rr_with_prior_sizes(prior, eps)
    assert sizes.tolist() == [2, 1, 4]
    e = np.exp(eps)
    for i in range(3):
        # The exact channel of user i: Q[c, r] for every true label c and
        # report r (0 for reports outside the top-k set, which never occur).
        in_set = np.isin(np.arange(4), order[i, : sizes[i]])
        shown = np.flatnonzero(in_set)
        Q = np.zeros((4, 4))
        Q[:, shown] = rr_with_prior_likelihood(
            shown,
            np.repeat(order[i : i + 1], shown.size, axis=0),
            np.full(shown.size, sizes[i]),
            eps,
        ).T
        assert_allclose(Q.sum(axis=1), 1.0)
        assert check_ldp(Q[:, in_set], eps).satisfied
        # Ghazi et al.'s k*: the size maximizing P(report = true label).
        gains = [e / (e + k - 1) * np.sort(prior[i])[::-1][:k].sum() for k in range(1, 5)]
        assert sizes[i] == int(np.argmax(gains)) + 1
        # The sampler against the channel: 200,000 reports per true label.
        rng = np.random.default_rng(i)
        n = 200_000
        for c in range(4):
            reports = _sample_rr_with_prior(
                np.full(n, c),
                np.repeat(order[i : i + 1], n, axis=0),
                np.full(n, sizes[i]),
                eps,
                rng,
            )
            freq = np.bincount(reports, minlength=4) / n
            se = np.sqrt(Q[c] * (1 - Q[c]) / n) + 1e-12
            assert np.all(np.abs(freq - Q[c]) <= 5 * se), (i, c, freq, Q[c])


def test_rr_with_prior_recovers_the_clean_model():
    X, y, _ = _logistic_data(30_000)
    clf = LabelPrivacyClassifier(
        _unpenalized(), epsilon=1.0, method="rr_with_prior", random_state=0
    ).fit(X, y)
    coef = np.r_[clf.estimator_.coef_[0], clf.estimator_.intercept_]
    assert np.max(np.abs(coef - np.r_[BETA, B0])) < 0.12
    assert clf.epsilon_spent_ == 1.0


def test_label_privacy_with_utility_optimized_labels():
    """uRR with a sensitive class: reports of the other class are that class
    (one-hot weights); the correction still recovers the model."""
    X, y, _ = _logistic_data(30_000)
    mech = UtilityOptimizedRR(sensitive=[1])
    clf = LabelPrivacyClassifier(_unpenalized(), epsilon=1.0, mechanism=mech, random_state=0)
    clf.fit(X, y)
    assert clf.channel_.name == "urr"
    coef = np.r_[clf.estimator_.coef_[0], clf.estimator_.intercept_]
    assert np.max(np.abs(coef - np.r_[BETA, B0])) < 0.12


def test_label_reports_that_carry_their_spec():
    X, y, _ = _logistic_data(4_000)
    mech = RandomizedResponse(epsilon=2.0, categories=[0, 1], random_state=0)
    reports = mech.fit_transform(y.reshape(-1, 1))
    a = LabelPrivacyClassifier(_unpenalized(), epsilon=5.0).fit(X, reports)
    # The same reports without their channel, with the spec given.
    b = LabelPrivacyClassifier(_unpenalized(), mechanism=mech.spec()).fit(X, np.asarray(reports))
    assert_allclose(a.estimator_.coef_, b.estimator_.coef_)
    assert a.epsilon_spent_ == 2.0  # the reports' budget, not the parameter
    # ... and as a pandas column carrying the spec in attrs
    pandas_mech = clone(mech).set_output(transform="pandas")
    frame = pandas_mech.fit_transform(pd.DataFrame({"y": y}))
    c = LabelPrivacyClassifier(_unpenalized()).fit(X, frame)
    assert c.channel_ == mech.channel_
    other = RandomizedResponse(epsilon=1.0, categories=[0, 1]).fit().channel_
    with pytest.raises(ReportMismatchError, match="epsilon"):
        LabelPrivacyClassifier(_unpenalized(), mechanism=other).fit(X, reports)


def test_label_privacy_sample_weight():
    """Weights multiply the posterior weights: weight 0 is leaving the row
    out, weight 2 is repeating it (with its report), on the same reports."""
    X, y, _ = _logistic_data(3_000)
    reports = RandomizedResponse(1.0, categories=[0, 1], random_state=0).fit_transform(
        y.reshape(-1, 1)
    )
    keep = np.arange(3_000) % 3 != 0
    base = LabelPrivacyClassifier(_unpenalized(), max_iter=3)
    a = clone(base).fit(X, reports, sample_weight=keep.astype(float))
    b = clone(base).fit(X[keep], reports[keep])
    assert_allclose(a.estimator_.coef_, b.estimator_.coef_, rtol=1e-4)
    twice = np.where(keep, 2.0, 1.0)
    rows = np.r_[np.arange(3_000), np.flatnonzero(keep)]
    c = clone(base).fit(X, reports, sample_weight=twice)
    d = clone(base).fit(X[rows], reports[rows])
    assert_allclose(c.estimator_.coef_, d.estimator_.coef_, rtol=1e-4)


def test_label_privacy_pipeline_and_string_labels():
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.choice(["u", "v", "w"], 3_000), "b": rng.normal(size=3_000)})
    y = np.where((frame["a"] == "u") ^ (rng.random(3_000) < 0.1), "yes", "no")
    from sklearn.compose import make_column_transformer
    from sklearn.preprocessing import OneHotEncoder

    pipe = make_pipeline(
        make_column_transformer((OneHotEncoder(), ["a"]), remainder="passthrough"),
        LogisticRegression(),
    )
    clf = LabelPrivacyClassifier(pipe, epsilon=2.0, random_state=0).fit(frame, y)
    assert clf.classes_.tolist() == ["no", "yes"]
    assert clf.score(frame, y) > 0.85
    assert clf.feature_names_in_.tolist() == ["a", "b"]


def test_label_privacy_randomness():
    X, y, _ = _logistic_data(2_000)
    make = lambda rs: LabelPrivacyClassifier(_unpenalized(), max_iter=2, random_state=rs)  # noqa: E731
    a, b = make(0).fit(X, y), make(0).fit(X, y)
    assert_allclose(a.estimator_.coef_, b.estimator_.coef_)  # seeded: reproducible
    assert not np.allclose(make(1).fit(X, y).estimator_.coef_, a.estimator_.coef_)
    # None: fresh entropy at every fit, and nothing of it kept on the object.
    fresh = make(None)
    c1 = fresh.fit(X, y).estimator_.coef_.copy()
    c2 = fresh.fit(X, y).estimator_.coef_.copy()
    assert not np.allclose(c1, c2)
    assert fresh.random_state is None
    assert b"SeedSequence" not in pickle.dumps(fresh)
    # Sub-streams: spawned children of a seed, None passed on as None.
    s1, s2 = sub_random_states(0, 2)
    assert s1.spawn_key != s2.spawn_key
    assert sub_random_states(None, 3) == [None, None, None]
    assert sub_random_states("secure", 2) == ["secure", "secure"]


def test_label_privacy_grid_search_over_epsilon_scores_clean_labels():
    """A grid search varies epsilon; its validation folds hold the clean
    labels (the noise is in fit only), so a larger budget scores better."""
    X, y, _ = _logistic_data(6_000)
    search = GridSearchCV(
        LabelPrivacyClassifier(_unpenalized(), max_iter=2, random_state=0),
        {"epsilon": [0.1, 4.0]},
        scoring="neg_log_loss",
        cv=3,
    ).fit(X, y)
    assert search.best_params_ == {"epsilon": 4.0}


@pytest.mark.parametrize(
    "params, fit_y, error, match",
    [
        ({"epsilon": 0.0}, None, InvalidParameterError, "epsilon"),
        ({"method": "posterior", "estimator": "nosw"}, None, ValueError, "sample_weight"),
        ({"method": "forward", "estimator": "svc"}, None, ValueError, "predict_proba"),
        ({"method": "rr_with_prior", "mechanism": "rr"}, None, ValueError, "own"),
        ({}, "nan", ValueError, "1 missing"),
        ({}, "short", ValueError, "rows"),
        ({}, "one", ValueError, "1 class"),
        ({"mechanism": "numeric"}, None, ReportMismatchError, "numbers"),
    ],
)
def test_label_privacy_errors(params, fit_y, error, match):
    X, y, _ = _logistic_data(200)
    estimators = {"nosw": KNeighborsClassifier(), "svc": LinearSVC()}
    mechanisms = {
        "rr": RandomizedResponse(),
        "numeric": PiecewiseMechanism(bounds=(0, 1)).fit().channel_,
    }
    estimator = estimators.get(params.pop("estimator", None), LogisticRegression())
    if "mechanism" in params:
        params["mechanism"] = mechanisms[params["mechanism"]]
    if fit_y == "nan":
        y = y.astype(float)
        y[3] = np.nan
    elif fit_y == "short":
        y = y[:-1]
    elif fit_y == "one":
        y = np.zeros_like(y)
    with pytest.raises(error, match=match):
        LabelPrivacyClassifier(estimator, **params).fit(X, y)


# ====================================================== naive Bayes
def _nb_data(n, seed=0):
    """Two classes; feature 0 (3 values) and feature 1 (4 values), known
    class-conditionals."""
    rng = np.random.default_rng(seed)
    cond0 = np.array([[0.6, 0.3, 0.1], [0.1, 0.3, 0.6]])
    cond1 = np.array([[0.4, 0.3, 0.2, 0.1], [0.1, 0.2, 0.3, 0.4]])
    y = (rng.random(n) < 0.4).astype(int)
    u0, u1 = rng.random(n), rng.random(n)
    x0 = (u0[:, None] > np.cumsum(cond0, axis=1)[y]).sum(axis=1)
    x1 = (u1[:, None] > np.cumsum(cond1, axis=1)[y]).sum(axis=1)
    return np.column_stack([x0, x1]), y, (cond0, cond1)


def test_naive_bayes_recovers_the_class_conditionals():
    X, y, truth = _nb_data(60_000)
    cats = [[0, 1, 2], [0, 1, 2, 3]]
    nb = LDPNaiveBayes(epsilon=2.0, categories=cats, random_state=0).fit(X, y)
    tol = 0.03
    for j in range(2):
        assert np.max(np.abs(np.exp(nb.feature_log_prob_[j]) - truth[j])) < tol
    assert abs(np.exp(nb.class_log_prior_[1]) - 0.4) < 0.02
    # Without the correction (frequencies of the reported pairs), the
    # conditionals are pulled towards uniform by more than the tolerance.
    reports = nb.privatize(X, y)
    for j, name in enumerate(reports.columns):
        codes = reports[name].dropna().to_numpy(dtype=int)
        V = len(cats[j])
        raw = np.bincount(codes, minlength=2 * V).reshape(2, V)
        raw_cond = raw / raw.sum(axis=1, keepdims=True)
        assert np.max(np.abs(raw_cond - truth[j])) > 3 * tol
    # One report per user, budget epsilon.
    assert nb.n_reports_.sum() == len(y) and nb.epsilon_spent_ == 2.0


@pytest.mark.parametrize("estimator", ["em", "empirical"])
def test_naive_bayes_accuracy_near_the_clean_model(estimator):
    X, y, _ = _nb_data(40_000)
    Xt, yt, _ = _nb_data(10_000, seed=1)
    cats = [[0, 1, 2], [0, 1, 2, 3]]
    clean = CategoricalNB().fit(X, y).score(Xt, yt)
    nb = LDPNaiveBayes(epsilon=2.0, estimator=estimator, categories=cats, random_state=0)
    assert nb.fit(X, y).score(Xt, yt) > clean - 0.02
    assert_allclose(nb.predict_proba(Xt).sum(axis=1), 1.0)


def test_naive_bayes_reports_round_trip(tmp_path):
    X, y, _ = _nb_data(5_000)
    frame = pd.DataFrame(X, columns=["age", "job"])
    nb = LDPNaiveBayes(epsilon=2.0, categories=[[0, 1, 2], [0, 1, 2, 3]], random_state=0)
    reports = nb.privatize(frame, y)
    assert (reports.notna().sum(axis=1) == 1).all()  # one pair per user
    path = tmp_path / "pairs.parquet"
    reports.to_parquet(path)
    read = pd.read_parquet(path)
    a = LDPNaiveBayes().fit_reports(reports)
    b = LDPNaiveBayes().fit_reports(read)
    for fa, fb in zip(a.feature_log_prob_, b.feature_log_prob_, strict=True):
        assert_allclose(fa, fb)
    assert b.feature_names_in_.tolist() == ["age", "job"]
    assert b.predict(frame.head()).shape == (5,)
    # The simulation is the collector's side on the users' side.
    c = clone(nb).fit(frame, y)
    for fa, fc in zip(a.feature_log_prob_, c.feature_log_prob_, strict=True):
        assert_allclose(fa, fc)


def test_naive_bayes_refuses_bad_reports():
    X, y, _ = _nb_data(2_000)
    nb = LDPNaiveBayes(epsilon=2.0, categories=[[0, 1, 2], [0, 1, 2, 3]], random_state=0)
    reports = nb.privatize(X, y)
    with pytest.raises(ReportMismatchError, match="no pair specs"):
        LDPNaiveBayes().fit_reports(pd.DataFrame(reports.to_numpy()))
    two = reports.copy()
    two.iloc[0] = [1, 1]
    with pytest.raises(ReportMismatchError, match="exactly one"):
        LDPNaiveBayes().fit_reports(two)
    tampered = reports.copy()
    spec = dict(tampered.attrs["sklearn_uldp_specs"]["x0"])
    spec["categories"] = list(range(4))
    tampered.attrs["sklearn_uldp_specs"] = {**tampered.attrs["sklearn_uldp_specs"], "x0": spec}
    with pytest.raises(ReportMismatchError, match="another domain"):
        LDPNaiveBayes().fit_reports(tampered)
    with pytest.raises(ValueError, match="value\\(s\\) outside"):
        LDPNaiveBayes(categories=[[0, 1], [0, 1, 2, 3]]).fit(X, y)
    fitted = LDPNaiveBayes().fit_reports(reports)
    with pytest.raises(ValueError, match="outside its categories") as info:
        fitted.predict(pd.DataFrame({"x0": [7], "x1": [0]}))
    assert "7" not in str(info.value)  # counts, never the values
    with pytest.raises(NotFittedError):
        LDPNaiveBayes().predict(X)
    from sklearn_uldp import RAPPOR

    with pytest.raises(ValueError, match="sends bit vectors"):
        LDPNaiveBayes(mechanism=RAPPOR(), categories=[[0, 1, 2], [0, 1, 2, 3]]).fit(X, y)
    with pytest.warns(PrivacyLeakWarning, match="learns each feature's domain"):
        LDPNaiveBayes(random_state=0).fit(X, y)


@pytest.mark.filterwarnings("ignore::sklearn_uldp.exceptions.UninformativeEstimateWarning")
def test_naive_bayes_oracle_choice_and_marginals():
    X, y, _ = _nb_data(3_000)
    cats = [[0, 1, 2], [0, 1, 2, 3]]
    # 2 x 3 = 6 and 2 x 4 = 8 pairs: k-RR below 3 e^eps + 2 (= 10.2 at eps=1), OLH above.
    nb = LDPNaiveBayes(epsilon=1.0, categories=cats, random_state=0).fit(X, y)
    assert {c.name for c in nb.channels_.values()} == {"rr"}
    nb = LDPNaiveBayes(epsilon=0.1, categories=cats, random_state=0).fit(X, y)
    assert {c.name for c in nb.channels_.values()} == {"olh"}
    # Exact joint tables reproduce CategoricalNB's smoothed conditionals.
    tables = {}
    for j in range(2):
        joint = pd.crosstab(y, X[:, j]).reindex(columns=cats[j], fill_value=0) / len(y)
        tables[f"x{j}"] = joint
    fitted = LDPNaiveBayes(alpha=1.0).fit_marginals(tables, len(y))
    clean = CategoricalNB(alpha=1.0).fit(X, y)
    for j in range(2):
        assert_allclose(fitted.feature_log_prob_[j], clean.feature_log_prob_[j], rtol=1e-10)


# ====================================================== LDP-SGD
@pytest.mark.parametrize(
    "mechanism, epsilon", [("hybrid", 1.0), ("piecewise", 4.0), ("hybrid", 6.0)]
)
def test_gradient_variance_closed_form(mechanism, epsilon):
    """Each coordinate's empirical variance over 300,000 users holding the
    same clipped gradient equals (D/m) Var_M(g; eps/m) + (D/m - 1) g^2 within
    4 standard errors (about 1% relative); the formula without the sampling
    term (D/m - 1) g^2 is rejected."""
    g = np.array([-1.0, -0.5, 0.0, 0.3, 1.0])
    n = 300_000
    reports = privatize_gradients(np.tile(g, (n, 1)), epsilon, mechanism=mechanism, random_state=0)
    var = reports.var(axis=0, ddof=1)
    centered = reports - reports.mean(axis=0)
    se = np.sqrt((np.mean(centered**4, axis=0) - var**2) / n)
    closed = gradient_variance(g[None, :], epsilon, mechanism=mechanism)[0]
    assert np.all(np.abs(var - closed) < 4 * se), (var, closed, se)
    assert np.all(np.abs(reports.mean(axis=0) - g) < 4 * np.sqrt(closed / n))  # unbiased
    m = 1 if epsilon < 5 else 2
    wrong = closed - (5 / m - 1) * g**2
    assert np.any(np.abs(var - wrong) > 8 * se)
    # The paper's continuous closed form (Eqs. (14)-(15)) agrees with the exact one.
    paper = gradient_variance(g[None, :], epsilon, mechanism=mechanism, exact=False)[0]
    assert_allclose(paper, closed, rtol=2e-3)
    assert_allclose(
        paper, (5 / m) * closed_form_variance(mechanism, epsilon / m, g) + (5 / m - 1) * g**2
    )


def test_gradients_are_clipped_and_each_user_reports_m_coordinates():
    G = np.array([[5.0, -3.0, 0.2]] * 1000)
    R = privatize_gradients(G, 6.0, random_state=0)
    assert ((R != 0).sum(axis=1) == 2).all()  # m = floor(6 / 2.5) = 2 of 3
    assert_allclose(R.mean(axis=0), [1.0, -1.0, 0.2], atol=0.3)


def _separable(n, seed=0, k=2):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, 3))
    if k == 2:
        return X, (X @ np.array([1.0, -1.0, 0.5]) > 0).astype(int)
    return X, np.argmax(X @ np.array([[1.0, 0, 0], [0, 1.0, 0], [0, 0, 1.0]]), axis=1)


def test_ldp_sgd_classifiers_learn():
    X, y = _separable(100_000)
    Xt, yt = _separable(5_000, seed=1)
    for cls in (LDPLogisticRegression, LDPLinearSVC):
        clf = cls(epsilon=4.0, random_state=0).fit(X, y)
        assert clf.score(Xt, yt) > 0.9, cls.__name__
        assert clf.n_users_ == clf.n_iter_ * clf.batch_size_ <= len(y)
        assert clf.epsilon_spent_ == 4.0
    proba = LDPLogisticRegression(epsilon=4.0, random_state=0).fit(X, y).predict_proba(Xt)
    assert_allclose(proba.sum(axis=1), 1.0)
    X3, y3 = _separable(100_000, k=3)
    Xt3, yt3 = _separable(5_000, seed=1, k=3)
    multi = LDPLogisticRegression(epsilon=4.0, random_state=0).fit(X3, y3)
    assert multi.coef_.shape == (3, 3) and multi.score(Xt3, yt3) > 0.75
    assert multi.channel_.n_attributes == 3 * 4  # one gradient of K (d + 1) coordinates


def test_ldp_sgd_features_in_bounds():
    """Features of another range are mapped onto [-1, 1]: coefficients come
    back in the features' units; values outside are clipped with a warning."""
    rng = np.random.default_rng(0)
    X = rng.integers(-64, 65, size=(60_000, 3)) / 64.0  # scaled by 64: exact in binary
    y = (X @ np.array([1.0, -1.0, 0.5]) > 0).astype(int)
    scaled = X * 64.0  # in [-64, 64]
    clf = LDPLogisticRegression(epsilon=4.0, bounds=(-64, 64), random_state=0).fit(scaled, y)
    ref = LDPLogisticRegression(epsilon=4.0, random_state=0).fit(X, y)
    assert_allclose(clf.coef_ * 64, ref.coef_, rtol=1e-10)
    assert_allclose(clf.decision_function(scaled), ref.decision_function(X), atol=1e-9)
    assert ref.score(X, y) > 0.9
    with pytest.warns(ClippingWarning, match="outside their bounds"):
        LDPLogisticRegression(epsilon=4.0, bounds=(-32, 64), random_state=0).fit(scaled, y)
    with pytest.raises(ValueError, match="low must be < high"):
        LDPLogisticRegression(bounds=(1, 1)).fit(X, y)


def test_ldp_sgd_randomness_and_independent_batches():
    # One mechanism serves every batch of a fit: each call draws a new stream,
    # so two batches holding the same gradients get independent noise.
    G = np.tile([0.5, -0.5, 0.0], (1_000, 1))
    mech = _gradient_mechanism(2.0, "hybrid", 3, 1, np.random.SeedSequence(0))
    first, second = _perturb(mech, G), _perturb(mech, G)
    assert not np.allclose(first, second)
    again = _gradient_mechanism(2.0, "hybrid", 3, 1, np.random.SeedSequence(0))
    assert_allclose(_perturb(again, G), first)  # seeded: reproducible
    X, y = _separable(5_000)
    a = LDPLogisticRegression(random_state=0).fit(X, y).coef_
    assert_allclose(LDPLogisticRegression(random_state=0).fit(X, y).coef_, a)
    fresh = LDPLogisticRegression()
    assert not np.allclose(fresh.fit(X, y).coef_, fresh.fit(X, y).coef_)
    assert b"SeedSequence" not in pickle.dumps(fresh)


def test_ldp_linear_regression_recovers_coefficients():
    rng = np.random.default_rng(0)
    n = 300_000
    X = rng.uniform(-1, 1, size=(n, 2))
    beta = np.array([0.5, -0.3])
    y = np.clip(X @ beta + 0.1 + 0.1 * rng.normal(size=n), -1, 1)
    tol = 0.05
    for solver in ("moments", "sgd"):
        reg = LDPLinearRegression(epsilon=4.0, solver=solver, random_state=0).fit(X, y)
        assert np.max(np.abs(np.r_[reg.coef_, reg.intercept_] - np.r_[beta, 0.1])) < tol, solver
        assert reg.score(X, y) > 0.8
    # Least squares on the same kind of reports without the correction: the
    # noise on the diagonal of E[x* x*^T] attenuates the slopes.
    mech = MultiNumericMechanism(
        epsilon=4.0, bounds=(-1, 1), mechanism="piecewise", strategy="split", random_state=0
    )
    R = np.asarray(mech.fit_transform(np.column_stack([X, y])))
    naive = LinearRegression().fit(R[:, :2], R[:, 2])
    assert np.max(np.abs(naive.coef_ - beta)) > 3 * tol
    S = corrected_second_moments(R, mech.channel_)
    assert_allclose(S[1:3, 1:3], np.cov(X.T, bias=True) + np.outer(X.mean(0), X.mean(0)), atol=0.02)


def test_ldp_linear_regression_units_and_errors():
    rng = np.random.default_rng(1)
    X = rng.uniform(0, 10, size=(200_000, 1))
    y = 20 + 3 * X[:, 0] + rng.normal(size=200_000)
    reg = LDPLinearRegression(
        epsilon=4.0, solver="moments", bounds=(0, 10), target_bounds=(10, 60), random_state=0
    ).fit(X, y)
    assert abs(reg.coef_[0] - 3) < 0.3 and abs(reg.intercept_ - 20) < 1.5
    assert_allclose(reg.predict(X[:3]), X[:3, 0] * reg.coef_[0] + reg.intercept_)
    with pytest.raises(ValueError, match="not identifiable"):
        LDPLinearRegression(solver="moments", mechanism="duchi").fit(X[:1000] / 10, y[:1000] / 60)
    with pytest.raises(ValueError, match="at least 2"):
        LDPLinearRegression(solver="moments", n_sampled=1).fit(X[:100] / 10, y[:100] / 60)
    with pytest.raises(ValueError, match="NaN or infinity"):
        LDPLinearRegression().fit(X[:10] / 10, np.r_[np.nan, y[1:10] / 60])


# ====================================================== reweighing
def _groups(n, seed=0):
    rng = np.random.default_rng(seed)
    s = rng.choice(["f", "m"], size=n, p=[0.4, 0.6])
    y = (rng.random(n) < np.where(s == "m", 0.65, 0.3)).astype(int)
    return s, y


def _label_gap(s, y, w):
    """Weighted P(y = 1 | s = m) - P(y = 1 | s = f) over the TRUE groups."""
    rate = {g: np.average(y[s == g], weights=w[s == g]) for g in ("f", "m")}
    return rate["m"] - rate["f"]


def test_reweighing_makes_true_groups_and_labels_independent():
    s, y = _groups(100_000)
    X = s.reshape(-1, 1)
    assert _label_gap(s, y, np.ones(len(y))) > 0.3
    rw = PrivatizedGroupReweighter(epsilon=1.0, random_state=0).fit(X, y)
    tol = 0.03
    assert abs(_label_gap(s, y, rw.sample_weight_)) < tol
    assert_allclose(rw.sample_weight_.mean(), 1.0)
    # Kamiran & Calders on the reported groups (no channel correction):
    # the noise hides most of the dependence, the true groups stay dependent.
    reports = RandomizedResponse(1.0, categories=["f", "m"], random_state=0).fit_transform(X)
    r = np.asarray(reports).ravel()
    naive = np.ones(len(y))
    for g in ("f", "m"):
        for c in (0, 1):
            cell = (r == g) & (y == c)
            naive[cell] = np.mean(r == g) * np.mean(y == c) / np.mean(cell)
    assert abs(_label_gap(s, y, naive)) > 3 * tol
    # The posterior weights are positive and move part of the way.
    post = PrivatizedGroupReweighter(epsilon=1.0, method="posterior", random_state=0).fit(X, y)
    assert post.sample_weight_.min() > 0
    assert abs(_label_gap(s, y, post.sample_weight_)) < _label_gap(s, y, np.ones(len(y)))


def test_reweighing_rates_and_intervals():
    s, y = _groups(50_000)
    rw = PrivatizedGroupReweighter(epsilon=2.0, random_state=0).fit(s.reshape(-1, 1), y)
    rates = rw.rates_
    true_share = np.mean(s == "f")
    assert rates.loc["f", "share_low"] <= true_share <= rates.loc["f", "share_high"]
    assert abs(rates.loc["m", "P(y=1)"] - 0.65) < 0.03
    truth = np.mean(s[y == 1] == "f")
    low, high = rw.conditional_intervals_[1][0]
    assert low <= truth <= high
    assert rw.epsilon_spent_ == 2.0


def test_reweighing_with_only_the_sensitive_group_randomized():
    """uRR with "f" sensitive: a report "m" proves the group, so under the
    posterior method its rows get exactly the weight of (m, y); both methods
    decorrelate the true groups from the labels (the inverse fully, the
    posterior part of the way)."""
    s, y = _groups(50_000)
    frame = pd.DataFrame({"age": np.arange(len(y)), "sex": s})
    mech = UtilityOptimizedRR(sensitive=["f"], categories=["f", "m"])
    for method in ("inverse", "posterior"):
        rw = PrivatizedGroupReweighter("sex", epsilon=1.0, mechanism=mech, method=method)
        rw.set_params(random_state=0).fit(frame, y)
        assert rw.channel_.name == "urr"
        bound = 0.03 if method == "inverse" else 0.8 * _label_gap(s, y, np.ones(len(y)))
        assert abs(_label_gap(s, y, rw.sample_weight_)) < bound
    # The same reports as the fit's: those of "m" are exact (only "m" produces them) ...
    codes = privatized_codes(frame["sex"], len(y), mech, 1.0, 0, what="group").codes
    exact_m = rw.channel_.likelihood(codes)[:, 0] == 0
    assert exact_m.any() and np.all(s[exact_m] == "m")
    # ... and their rows carry the table's weight of (m, y), up to the common scale.
    ratio = rw.sample_weight_[exact_m] / rw.weights_table_.loc["m"].to_numpy()[y[exact_m]]
    assert_allclose(ratio, ratio[0], rtol=1e-10)
    # A pipeline takes the weights through its final step.
    pipe = make_pipeline(LogisticRegression())
    pipe.fit(frame[["age"]], y, logisticregression__sample_weight=rw.sample_weight_)


def test_reweighing_errors():
    s, y = _groups(1_000)
    X = s.reshape(-1, 1)
    with pytest.raises(ValueError, match="0 <= low < high"):
        PrivatizedGroupReweighter(clip=(-1, 2)).fit(X, y)
    with pytest.raises(ValueError, match="out of range"):
        PrivatizedGroupReweighter(sensitive=3).fit(X, y)
    with pytest.raises(ValueError, match="names a column"):
        PrivatizedGroupReweighter(sensitive="sex").fit(X, y)
    with pytest.raises(ValueError, match="rows"):
        PrivatizedGroupReweighter().fit(X, y[:-1])
    reports = Reports(np.array([0.5] * 10), PiecewiseMechanism(bounds=(0, 1)).fit().channel_)
    with pytest.raises(ReportMismatchError, match="numbers"):
        PrivatizedGroupReweighter().fit(reports.reshape(-1, 1), y[:10])


def test_learners_warn_nothing_unexpected():
    X, y, _ = _logistic_data(500)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        LabelPrivacyClassifier(LogisticRegression(), random_state=0).fit(X, y)
        PrivatizedGroupReweighter(random_state=0).fit(y.reshape(-1, 1).astype(str), y)


# ====================================================== searching epsilon
def test_privacy_utility_search_over_epsilon_of_a_learner():
    """PrivacyUtilitySearchCV searches a learner's epsilon: each repeat holds
    out clean rows, fits on the others (privatized in fit) and scores the
    held-out labels; the smallest epsilon reaching the target is chosen."""
    from sklearn_uldp.model_selection import PrivacyUtilitySearchCV

    X, y, _ = _logistic_data(8_000)
    search = PrivacyUtilitySearchCV(
        LabelPrivacyClassifier(_unpenalized(), max_iter=2),
        {"epsilon": [0.05, 1.0, 4.0]},
        n_repeats=2,
        target=0.6,
        random_state=0,
    ).fit(X, y)
    assert search.scoring_name_ == "log_loss"
    res = search.cv_results_.set_index("epsilon")["mean_loss"]
    assert res[0.05] > res[1.0] > res[4.0] - 0.02
    assert search.target_epsilon_ == 1.0 and search.best_params_ == {"epsilon": 1.0}
    assert search.best_estimator_.epsilon_spent_ == 1.0
    again = PrivacyUtilitySearchCV(
        LabelPrivacyClassifier(_unpenalized(), max_iter=2),
        {"epsilon": [0.05, 1.0, 4.0]},
        n_repeats=2,
        target=0.6,
        random_state=0,
    ).fit(X, y)
    assert_allclose(again.cv_results_["mean_loss"], search.cv_results_["mean_loss"])
    reg = PrivacyUtilitySearchCV(
        LDPLinearRegression(solver="moments"), {"epsilon": [1.0, 8.0]}, n_repeats=1, random_state=0
    ).fit(*_separable(20_000))
    assert reg.scoring_name_ == "mse" and reg.best_params_ == {"epsilon": 8.0}
    with pytest.raises(ValueError, match="learns from labels"):
        PrivacyUtilitySearchCV(LDPLogisticRegression(), {"epsilon": [1.0]}).fit(X)
    with pytest.raises(ValueError, match="held-out clean rows"):
        PrivacyUtilitySearchCV(LDPLogisticRegression(), {"epsilon": [1.0]}, scoring="l1").fit(X, y)


def test_debiased_log_loss_estimates_the_clean_log_loss():
    from sklearn.metrics import log_loss

    from sklearn_uldp.learning import debiased_log_loss

    X, y, p = _logistic_data(100_000)
    proba = np.column_stack([1 - p, p])
    clean = log_loss(y, proba)
    mech = RandomizedResponse(1.0, categories=[0, 1], random_state=0)
    reports = mech.fit_transform(y.reshape(-1, 1))
    debiased = debiased_log_loss(reports, proba)
    naive = log_loss(np.asarray(reports).ravel(), proba)
    assert abs(debiased - clean) < 0.02 < abs(naive - clean)
    assert debiased_log_loss(np.asarray(reports), proba, mechanism=mech) == debiased
    with pytest.raises(ValueError, match="one column per category"):
        debiased_log_loss(reports, proba[:, :1])
    with pytest.raises(ValueError, match="do not say which mechanism"):
        debiased_log_loss(np.asarray(reports), proba)


# ====================================================== properties (hypothesis)
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=60, deadline=None)
@given(
    k=st.integers(2, 6),
    eps=st.floats(0.05, 6.0),
    concentration=st.floats(0.05, 5.0),
    seed=st.integers(0, 2**32 - 1),
)
def test_rr_with_prior_is_ldp_for_any_prior(k, eps, concentration, seed):
    """Whatever the prior, every user's channel is eps-LDP on the exact
    matrix and its rows are distributions."""
    prior = np.random.default_rng(seed).dirichlet(np.full(k, concentration), size=4)
    order, sizes = rr_with_prior_sizes(prior, eps)
    assert np.all((sizes >= 1) & (sizes <= k))
    for i in range(4):
        shown = order[i, : sizes[i]]
        Q = np.zeros((k, k))
        Q[:, shown] = rr_with_prior_likelihood(
            shown,
            np.repeat(order[i : i + 1], shown.size, axis=0),
            np.full(shown.size, sizes[i]),
            eps,
        ).T
        assert_allclose(Q.sum(axis=1), 1.0)
        assert check_ldp(Q[:, shown], eps).satisfied


@settings(max_examples=60, deadline=None)
@given(
    k=st.integers(2, 6),
    eps=st.floats(0.1, 5.0),
    concentration=st.floats(0.05, 5.0),
    seed=st.integers(0, 2**32 - 1),
)
def test_invert_on_simplex_is_the_maximum_likelihood_point(k, eps, concentration, seed):
    Q = RandomizedResponse(epsilon=eps, categories=list(range(k))).fit().channel_.matrix()
    M = np.random.default_rng(seed).dirichlet(np.full(k, concentration), size=5)
    p = invert_on_simplex(M, Q)
    assert np.all(p >= 0) and np.allclose(p.sum(axis=1), 1.0)
    # KKT of the concave likelihood on the simplex: g <= 1. max(g) - 1 bounds
    # the gap to the maximum likelihood; EM reaches 1e-4 within its 2,000
    # steps even where the channel is nearly uniform (eps ~ 0.1) and slow.
    g = (M / (p @ Q)) @ Q.T
    assert np.all(g <= 1 + 1e-4)
