"""A mechanism fitted under a sampling strategy is not its column's channel.

Under ``DataFramePrivatizer(strategy="sample")`` or ``"sample+fake"`` a
column's reports mix the mechanism's own with missing or fake ones; its
channel is ``priv.channels_[name]``. ``parallel.reduce_statistics`` refused
``mechanism=priv.mechanisms_[name]``, but ``as_channel`` (and so every
estimator's ``mechanism=``) took it and estimated with the wrong channel
without an error (issue 30). One check, ``check_not_sampled_column``, now
serves all of them, with one message that names ``priv.channels_[name]``.
"""

import warnings

import numpy as np
import pandas as pd
import pytest

from sklearn_uldp import EMEstimator, EmpiricalEstimator, RandomizedResponse
from sklearn_uldp.compose import DataFramePrivatizer
from sklearn_uldp.mechanisms import as_channel
from sklearn_uldp.numeric import HybridMechanism, MeanEstimator, as_numeric_channel

RNG = np.random.default_rng(0)
N = 3000
FRAME = pd.DataFrame(
    {
        "vote": RNG.choice(["a", "b", "c"], p=[0.7, 0.2, 0.1], size=N),
        "sex": RNG.choice(["f", "m"], size=N),
        "age": RNG.uniform(0, 90, size=N),
    }
)


def _privatizer(strategy):
    mechanisms = {
        "vote": RandomizedResponse(2.0, categories=["a", "b", "c"]),
        "sex": RandomizedResponse(2.0, categories=["f", "m"]),
        "age": HybridMechanism(2.0, bounds=(0, 90)),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        priv = DataFramePrivatizer(mechanisms, strategy=strategy, random_state=0)
        reports = priv.fit_transform(FRAME)
    return priv, reports


@pytest.mark.parametrize("strategy", ["sample", "sample+fake"])
def test_as_channel_refuses_a_sampled_columns_mechanism(strategy):
    priv, _ = _privatizer(strategy)
    for name, to_channel in (("vote", as_channel), ("age", as_numeric_channel)):
        with pytest.raises(ValueError, match=rf"priv\.channels_\['{name}'\]"):
            to_channel(priv.mechanisms_[name])
        # the column's real channel is accepted
        assert to_channel(priv.channels_[name]) == priv.channels_[name]


@pytest.mark.parametrize("strategy", ["sample", "sample+fake"])
@pytest.mark.parametrize("estimator", [EmpiricalEstimator, EMEstimator])
def test_estimators_refuse_it_and_take_the_columns_channel(strategy, estimator):
    priv, reports = _privatizer(strategy)
    columns = reports[priv.report_columns("vote")]
    with pytest.raises(ValueError, match=r"priv\.channels_\['vote'\]"):
        estimator(mechanism=priv.mechanisms_["vote"]).fit(columns)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = estimator(mechanism=priv.channels_["vote"]).fit(columns)
    # the right channel gives the right estimate (n = 3000, TV well under 0.15)
    assert 0.5 * np.abs(est.distribution_ - [0.7, 0.2, 0.1]).sum() < 0.15


def test_numeric_estimator_refuses_it():
    priv, reports = _privatizer("sample+fake")
    with pytest.raises(ValueError, match=r"priv\.channels_\['age'\]"):
        MeanEstimator(mechanism=priv.mechanisms_["age"]).fit(reports[priv.report_columns("age")])


def test_the_same_message_as_reduce_statistics():
    from sklearn_uldp.parallel._partitions import spec_of

    priv, _ = _privatizer("sample")
    messages = []
    for call in (as_channel, spec_of):
        with pytest.raises(ValueError) as info:
            call(priv.mechanisms_["vote"])
        messages.append(str(info.value))
    assert messages[0] == messages[1]


def test_a_mechanism_of_the_split_strategy_is_still_its_channel():
    priv, _ = _privatizer("split")
    assert as_channel(priv.mechanisms_["vote"]) == priv.channels_["vote"]
