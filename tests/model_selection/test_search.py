"""PrivacyUtilitySearchCV, simulation scorers and the optimal uRAP theta."""

import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV, ShuffleSplit
from sklearn.pipeline import Pipeline

from sklearn_uldp import (
    EmpiricalEstimator,
    RandomizedResponse,
    UtilityOptimizedRAPPOR,
    UtilityOptimizedRR,
)
from sklearn_uldp.mechanisms import UnaryEncodingChannel, basic_rappor_theta
from sklearn_uldp.metrics import expected_l2_loss
from sklearn_uldp.model_selection import (
    PrivacyUtilitySearchCV,
    make_simulation_scorer,
    optimal_theta,
    true_distribution,
    urap_expected_l2_loss,
)

CATS = [f"c{i}" for i in range(10)]
SENS = ["c0", "c1"]


@pytest.fixture(scope="module")
def X():
    rng = np.random.default_rng(0)
    p = np.linspace(1, 3, len(CATS))
    return rng.choice(CATS, p=p / p.sum(), size=(3000, 1))


def _pipe():
    return Pipeline(
        [
            ("mechanism", UtilityOptimizedRR(sensitive=SENS, categories=CATS)),
            ("estimator", EmpiricalEstimator(projection="simplex")),
        ]
    )


GRID = {
    "mechanism": [
        UtilityOptimizedRR(sensitive=SENS, categories=CATS),
        UtilityOptimizedRAPPOR(sensitive=SENS, categories=CATS),
        RandomizedResponse(categories=CATS),
    ],
    "mechanism__epsilon": [0.5, 2.0, float(np.log(len(CATS)))],
}


@pytest.fixture(scope="module")
def search(X):
    return PrivacyUtilitySearchCV(_pipe(), GRID, n_repeats=3, target=0.05, random_state=0).fit(X)


def test_cv_results_structure(search):
    res = search.cv_results_
    assert len(res) == 9
    for col in [
        "params",
        "candidate",
        "epsilon",
        "mean_loss",
        "std_loss",
        "repeat0_loss",
        "repeat2_loss",
        "mean_fit_time",
        "rank_at_epsilon",
        "param_mechanism__epsilon",
    ]:
        assert col in res.columns
    assert set(res["candidate"]) == {
        "UtilityOptimizedRR",
        "UtilityOptimizedRAPPOR",
        "RandomizedResponse",
    }
    assert np.allclose(res["epsilon"], res["param_mechanism__epsilon"].astype(float))
    # Independent repeats: the losses of one candidate differ.
    reps = res[["repeat0_loss", "repeat1_loss", "repeat2_loss"]].to_numpy()
    assert (reps.std(axis=1) > 0).all()
    assert np.allclose(res["mean_loss"], reps.mean(axis=1))
    assert np.allclose(res["std_loss"], reps.std(axis=1))


def test_best_params_per_epsilon_and_target(search):
    assert sorted(search.best_params_at_epsilon_) == pytest.approx(
        sorted(GRID["mechanism__epsilon"])
    )
    res = search.cv_results_
    for eps, params in search.best_params_at_epsilon_.items():
        at = res[np.isclose(res["epsilon"], eps)]
        assert search.best_loss_at_epsilon_[eps] == pytest.approx(at["mean_loss"].min())
        assert params == res.at[at["mean_loss"].idxmin(), "params"]
    # The utility-optimized mechanisms beat RR (s = 2 of k = 10).
    for eps in search.best_params_at_epsilon_:
        assert not isinstance(search.best_params_at_epsilon_[eps]["mechanism"], RandomizedResponse)
    # target: the smallest epsilon whose best loss is <= 0.05.
    reached = [e for e, v in search.best_loss_at_epsilon_.items() if v <= 0.05]
    assert search.target_epsilon_ == min(reached)
    assert search.target_params_ == search.best_params_at_epsilon_[min(reached)]
    assert list(search.best_candidates().index) == sorted(search.best_params_at_epsilon_)


def test_reproducible_and_independent_of_n_jobs(X):
    kw = dict(n_repeats=2, random_state=3)
    grid = {"mechanism__epsilon": [0.5, 1.0]}
    a = PrivacyUtilitySearchCV(_pipe(), grid, **kw).fit(X).cv_results_
    b = PrivacyUtilitySearchCV(_pipe(), grid, n_jobs=2, **kw).fit(X).cv_results_
    np.testing.assert_allclose(a["mean_loss"], b["mean_loss"])
    c = PrivacyUtilitySearchCV(_pipe(), grid, n_repeats=2, random_state=4).fit(X)
    assert not np.allclose(a["mean_loss"], c.cv_results_["mean_loss"])


def test_bare_mechanism_scoring_callable_and_names(X):
    calls = []

    def max_error(p, q):
        calls.append(1)
        return float(np.max(np.abs(p - q)))

    s = PrivacyUtilitySearchCV(
        UtilityOptimizedRAPPOR(sensitive=SENS, categories=CATS),
        {"epsilon": [1.0], "theta": [0.3, 0.5, 0.8]},
        scoring=max_error,
        n_repeats=2,
        random_state=0,
    ).fit(X)
    assert len(calls) == 6 and s.scoring_name_ == "max_error"
    assert list(s.best_params_at_epsilon_) == [1.0]
    assert s.cv_results_["candidate"].tolist() == [
        "theta=0.3",
        "theta=0.5",
        "theta=0.8",
    ]
    for scoring in ["l1", "l2", "mse"]:
        res = PrivacyUtilitySearchCV(
            RandomizedResponse(categories=CATS),
            {"epsilon": [1.0]},
            scoring=scoring,
            n_repeats=1,
            random_state=0,
        ).fit(X)
        assert res.cv_results_["mean_loss"].iloc[0] > 0


def test_errors_and_unreachable_target(X):
    mech = RandomizedResponse(categories=CATS)
    with pytest.raises(ValueError, match="scoring must be one of"):
        PrivacyUtilitySearchCV(mech, {"epsilon": [1.0]}, scoring="r2").fit(X)
    with pytest.raises(ValueError, match="n_repeats"):
        PrivacyUtilitySearchCV(mech, {"epsilon": [1.0]}, n_repeats=0).fit(X)
    with pytest.raises(TypeError, match="list of values"):
        PrivacyUtilitySearchCV(mech, {"epsilon": 1.0}).fit(X)
    with pytest.raises(TypeError, match="estimator must be"):
        PrivacyUtilitySearchCV(EmpiricalEstimator(), {"projection": [None]}).fit(X)
    with pytest.warns(UserWarning, match="No candidate reaches"):
        s = PrivacyUtilitySearchCV(
            mech, {"epsilon": [0.1]}, n_repeats=1, target=1e-6, random_state=0
        ).fit(X)
    assert s.target_epsilon_ is None and s.target_params_ is None


def test_verbose_progress(X, capsys):
    PrivacyUtilitySearchCV(
        RandomizedResponse(categories=CATS),
        {"epsilon": [1.0, 2.0]},
        n_repeats=1,
        verbose=2,
        random_state=0,
    ).fit(X)
    out = capsys.readouterr()
    assert "epsilon=1: best tv=" in out.out
    assert "2/2" in out.err  # tqdm progress bar


def test_simulation_scorer_with_gridsearchcv(X):
    pipe = _pipe()
    gs = GridSearchCV(
        pipe,
        {"mechanism__epsilon": [0.1, 5.0]},
        scoring=make_simulation_scorer("tv"),
        cv=ShuffleSplit(2, test_size=0.5, random_state=0),
    )
    gs.fit(X)
    assert gs.best_params_ == {"mechanism__epsilon": 5.0}
    assert (gs.cv_results_["mean_test_score"] <= 0).all()
    scorer = make_simulation_scorer("l1")
    fitted = _pipe().set_params(mechanism__random_state=0).fit(X)
    p = true_distribution(X, CATS)
    assert scorer(fitted, X) == pytest.approx(-np.abs(fitted[-1].distribution_ - p).sum())
    with pytest.raises(ValueError, match="not in the categories"):
        true_distribution(["zz"], CATS)


# ----------------------------------------------------------------- theta
def test_closed_form_matches_channel():
    mask = np.zeros(12, dtype=bool)
    mask[:3] = True
    p = np.random.default_rng(0).dirichlet(np.ones(12))
    for theta in (0.2, 0.5, 0.9):
        ch = UnaryEncodingChannel(np.arange(12), 1.5, theta, mask)
        assert urap_expected_l2_loss(theta, 1.5, mask, p, n=500) == pytest.approx(
            expected_l2_loss(ch, p, 500)
        )


@pytest.mark.parametrize("eps", [0.5, 1.0, 3.0])
def test_optimal_theta_minimizes_loss(eps):
    mask = np.zeros(40, dtype=bool)
    mask[:8] = True
    t = optimal_theta(eps, mask)
    best = urap_expected_l2_loss(t, eps, mask)
    for other in (t - 0.02, t + 0.02, basic_rappor_theta(eps), 0.5):
        assert best <= urap_expected_l2_loss(other, eps, mask) + 1e-12
    grid = np.linspace(0.01, 0.99, 99)
    assert best <= urap_expected_l2_loss(grid, eps, mask).min() + 1e-12


def test_optimal_theta_prior_and_rappor_limit():
    mask = np.array([True, True, False, False])
    uniform = optimal_theta(1.0, mask)
    skewed = optimal_theta(1.0, mask, prior=[0.01, 0.01, 0.49, 0.49])
    assert skewed != pytest.approx(uniform, abs=1e-3)
    assert optimal_theta(1.0, np.ones(2000, dtype=bool)) == pytest.approx(0.5, abs=2e-3)
    with pytest.raises(ValueError, match="prior"):
        optimal_theta(1.0, mask, prior=[1, 2])
    with pytest.raises(ValueError, match="sensitive"):
        optimal_theta(1.0, np.zeros(4, dtype=bool))


def test_urap_theta_optimal_minimizes_expected_l2():
    import numpy as np

    from sklearn_uldp import UtilityOptimizedRAPPOR
    from sklearn_uldp.metrics import expected_l2_loss

    cats = list(range(12))

    def loss(theta):
        mech = UtilityOptimizedRAPPOR(1.0, sensitive=[0, 1, 2], theta=theta, categories=cats).fit()
        return mech, expected_l2_loss(mech, np.full(12, 1 / 12), 1000)

    best, best_loss = loss("optimal")
    assert 0 < best.theta_ < 1
    grid = [loss(t)[1] for t in np.linspace(0.05, 0.95, 91)]
    # The optimum of the uniform-prior loss is at least as good as every grid
    # point (up to round-off) and strictly better than basic RAPPOR's theta.
    assert best_loss <= min(grid) * (1 + 1e-9)
    assert best_loss < loss(None)[1]


def test_search_does_not_mutate_the_grid_and_reports_each_epsilon(X):
    grid = {
        "mechanism": [UtilityOptimizedRR(sensitive=SENS, categories=CATS)],
        "mechanism__epsilon": [0.5, 2.0, 4.0],
    }
    search = PrivacyUtilitySearchCV(_pipe(), grid, n_repeats=1, random_state=0).fit(X)
    # The mechanism object of the grid keeps its own epsilon (1.0, the default):
    # nested set_params act on clones, as in GridSearchCV.
    assert grid["mechanism"][0].epsilon == 1.0
    assert sorted(search.cv_results_["epsilon"]) == [0.5, 2.0, 4.0]
    for eps, params in search.best_params_at_epsilon_.items():
        assert params["mechanism__epsilon"] == eps
        assert params["mechanism"].epsilon == 1.0


# ------------------------------------------------------- issue 13, item 1
def test_gridsearchcv_surface_per_the_target(search, X):
    res = search.cv_results_
    # scikit-learn's columns: scores are minus the losses.
    for col in [
        "params",
        "mean_test_score",
        "std_test_score",
        "rank_test_score",
        "split0_test_score",
        "split2_test_score",
        "mean_fit_time",
        "std_fit_time",
        "param_mechanism__epsilon",
    ]:
        assert col in res.columns, col
    np.testing.assert_allclose(res["mean_test_score"], -res["mean_loss"])
    np.testing.assert_allclose(res["split1_test_score"], -res["repeat1_loss"])
    assert res["rank_test_score"].min() == 1
    assert search.n_splits_ == 3
    # With a target, best_* is the best candidate at the smallest epsilon
    # reaching it, not the most accurate (least private) one of the grid.
    i = search.best_index_
    assert isinstance(i, int)
    assert res.at[i, "epsilon"] == search.target_epsilon_
    assert search.best_params_ == search.target_params_ == res.at[i, "params"]
    assert search.best_score_ == pytest.approx(-res.at[i, "mean_loss"])
    assert search.best_score_ >= -0.05
    best = search.best_estimator_
    assert best[0].epsilon_spent_ == pytest.approx(search.target_epsilon_)
    assert type(best[0]) is type(search.best_params_["mechanism"])
    assert best[-1].distribution_.shape == (len(CATS),)


def test_without_target_best_is_the_most_accurate_and_refit_can_be_off(X):
    s = PrivacyUtilitySearchCV(
        RandomizedResponse(categories=CATS),
        {"epsilon": [0.5, 4.0]},
        n_repeats=2,
        refit=False,
        random_state=0,
    ).fit(X)
    assert s.best_params_ == {"epsilon": 4.0}
    assert s.best_index_ == int(s.cv_results_["mean_loss"].idxmin())
    assert not hasattr(s, "best_estimator_")
    with pytest.raises(ValueError, match="refit"):
        PrivacyUtilitySearchCV(
            RandomizedResponse(categories=CATS), {"epsilon": [1.0]}, refit="yes"
        ).fit(X)


def test_refit_draws_its_own_stream(X):
    s = PrivacyUtilitySearchCV(
        RandomizedResponse(categories=CATS), {"epsilon": [1.0]}, n_repeats=2, random_state=0
    ).fit(X)
    t = PrivacyUtilitySearchCV(
        RandomizedResponse(categories=CATS), {"epsilon": [1.0]}, n_repeats=2, random_state=0
    ).fit(X)
    np.testing.assert_array_equal(
        s.best_estimator_[-1].distribution_, t.best_estimator_[-1].distribution_
    )
    secure = PrivacyUtilitySearchCV(
        RandomizedResponse(categories=CATS), {"epsilon": [1.0]}, n_repeats=1, random_state=None
    ).fit(X)
    assert secure.best_estimator_[0].random_state is None
