"""One shape contract for ``predict_proba`` of every distribution estimator.

``DistributionEstimator.predict_proba`` documents ``(n_rows, k)``, or
``(n_rows, c * k)`` for the reports of a mechanism on c columns (block j is
column j's posterior; ``k = len(categories_)``). A mechanism whose users
report several values (``PersonalizedMechanism(n_reports=2)``) has one report
column per value and so one block each: five users reporting two values over
a domain of seven (five categories and two bots) give ``(5, 14)``, as EM
does; the reviewer's case of issue 30 checked here.

Parametrized over the registry: every registered channel with categories
(``has_categories``) has an example below, and each of the estimators that
take such reports is fitted on it (a new entry fails the first test until it
has one).
"""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pandas as pd
import pytest
from _examples import BINARY, CATS, S, categorical_mechanisms

from sklearn_uldp import mechanisms as m
from sklearn_uldp.estimators import EMEstimator, EmpiricalEstimator, ThresholdEstimator
from sklearn_uldp.mechanisms._registry import SPEC_CLASSES, spec_class

N = 60
RNG = np.random.default_rng(0)
VALUES = RNG.choice(CATS, size=(N, 1)).astype(object)


def _mech(mech, X=VALUES):
    def build():
        if "random_state" in mech.get_params():
            mech.set_params(random_state=0)
        return mech, mech.fit(X).transform(X), mech

    return build


def _inputs(name):
    """The inputs of an example (two values for the binary one)."""
    return np.where(VALUES == "a", "a", "b") if name == BINARY else VALUES


def _derived(make, derive):
    """A channel built from a mechanism's (its reports are the base's)."""

    def build():
        mech, reports, _ = make()
        channel = derive(mech.channel_)
        return mech, np.asarray(reports), channel

    return build


#: name -> () -> (mechanism, reports, what the estimator is given as mechanism)
EXAMPLES = {
    name: _derived(_mech(mech, _inputs(name)), derive) if derive else _mech(mech, _inputs(name))
    for name, (mech, derive) in categorical_mechanisms().items()
}

#: Beyond the registry: several report columns per row.
PERSONALIZED = pd.DataFrame(
    {
        "v1": list("abcde"),
        "v2": list("bcdea"),
        "home": ["a", "c", None, "b", "d"],
        "work": [None] * 5,
    }
)
EXTRA = {
    # the reviewer's case: 5 users, 2 values each, Z = 5 categories + 2 bots
    "personalized-urr-2": _mech(
        m.PersonalizedMechanism(1.0, sensitive=["a"], n_reports=2, categories=list("abcde")),
        PERSONALIZED,
    ),
    "personalized-urap-2": _mech(
        m.PersonalizedMechanism(
            1.0, sensitive=["a"], mechanism="urap", n_reports=2, categories=list("abcde")
        ),
        PERSONALIZED,
    ),
    "rr-2-columns": _mech(m.RandomizedResponse(1.0, categories=CATS), np.hstack([VALUES] * 2)),
    "urap-2-columns": _mech(m.UtilityOptimizedRAPPOR(1.0, **S), np.hstack([VALUES] * 2)),
}
CASES = {**EXAMPLES, **EXTRA}
ESTIMATORS = [EmpiricalEstimator, ThresholdEstimator, EMEstimator]


def _with_categories():
    return sorted(
        name
        for name in SPEC_CLASSES
        if inspect.getattr_static(spec_class(name), "has_categories", False) is True
    )


def test_every_registered_channel_with_categories_has_an_example():
    missing = set(_with_categories()) - set(EXAMPLES)
    assert not missing, f"add an example to tests/estimators/{__name__}.py: {sorted(missing)}"


def _blocks(mech, reports, channel):
    if channel is not mech:  # a derived channel reads one column of the base's reports
        return 1
    return int(mech.n_features_in_ if not hasattr(mech, "n_reports") else mech.n_reports)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: e.__name__)
@pytest.mark.parametrize("name", sorted(CASES))
def test_predict_proba_has_the_documented_shape(name, estimator):
    mech, reports, channel = CASES[name]()
    blocks = _blocks(mech, reports, channel)
    given = {} if channel is mech else {"mechanism": channel}
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")  # few reports: "uninformative" is expected
        est = estimator(**given).fit(reports)
        proba = est.predict_proba(reports)
        em = EMEstimator(**given).fit(reports).predict_proba(reports)
    k = len(est.categories_)
    assert est.distribution_.shape == (k,)
    assert proba.shape == (np.shape(reports)[0], blocks * k) == em.shape
    # each block of a row is a posterior over categories_
    per_block = proba.reshape(proba.shape[0], blocks, k)
    assert np.all(per_block >= 0)
    np.testing.assert_allclose(per_block.sum(axis=2), 1.0, rtol=1e-9)
