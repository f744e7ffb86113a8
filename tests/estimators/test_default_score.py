"""The default score's warning without walking stack frames (issue 31, item 5).

The rule (``sklearn_uldp/estimators/_default_score.py``): a default score
that follows a comparable one (the same estimator class and parameters, as
many reports) of another mechanism's reports warns. It needs no knowledge of
its caller: a scikit-learn search over the mechanism makes such calls, a
search over the estimator's own parameters and ``cross_val_score`` of one
mechanism do not (``tests/package/test_sklearn_integration.py`` runs those).
"""

import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline

from sklearn_uldp import EMEstimator, RandomizedResponse, UtilityOptimizedRR
from sklearn_uldp.estimators import _default_score

CATS = ["a", "b", "c", "d"]
X = np.random.default_rng(0).choice(CATS, p=[0.4, 0.3, 0.2, 0.1], size=(300, 1)).astype(object)


@pytest.fixture(autouse=True)
def fresh_memory():
    _default_score._local.__dict__.clear()  # this thread's comparable calls


def scored(mech, est=None, n=300):
    reports = mech.fit(X[:n]).transform(X[:n])
    est = (est or EMEstimator()).fit(reports)
    return est.score(reports)


def test_comparable_calls_of_one_mechanism_or_of_other_estimators_are_quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scored(RandomizedResponse(1.0, categories=CATS, random_state=0))
        scored(RandomizedResponse(1.0, categories=CATS, random_state=1))  # same channel
        scored(RandomizedResponse(2.0, categories=CATS), est=EMEstimator(tol=1e-4))
        scored(RandomizedResponse(2.0, categories=CATS), n=200)  # not as many reports


def test_a_comparable_call_on_another_mechanism_warns_naming_the_difference():
    scored(RandomizedResponse(1.0, categories=CATS))
    with pytest.warns(UserWarning, match=r"another mechanism \(epsilon: 1.0 vs 2.0\)"):
        scored(RandomizedResponse(2.0, categories=CATS))
    with pytest.warns(UserWarning, match="mechanism 'rr' vs 'urr'.*make_simulation_scorer"):
        scored(UtilityOptimizedRR(2.0, sensitive=CATS[:1], categories=CATS))


def test_a_search_over_the_mechanism_warns_in_its_own_thread_memory():
    pipe = Pipeline(
        [("mech", RandomizedResponse(categories=CATS, random_state=0)), ("est", EMEstimator())]
    )
    with pytest.warns(UserWarning, match="make_simulation_scorer"):
        GridSearchCV(pipe, {"mech__epsilon": [0.5, 4.0]}, cv=2).fit(X)


def test_no_stack_frame_is_read():
    source = Path(_default_score.__file__).read_text(encoding="utf-8")
    assert "_getframe" not in source and "f_back" not in source and "inspect" not in source
