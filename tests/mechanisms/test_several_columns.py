"""Mechanisms on several columns: one channel, one stream per column.

A mechanism fitted on c columns applies its channel to each column with an
independent random stream and returns one block of report columns per input
column; a user's row spends c * epsilon (sequential composition).
"""

import pickle

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal
from scipy import stats
from sklearn.base import clone

from sklearn_uldp import (
    RAPPOR,
    DataFramePrivatizer,
    EMEstimator,
    EmpiricalEstimator,
    RandomizedResponse,
    UtilityOptimizedRR,
    get_channel,
)
from sklearn_uldp.mechanisms import (
    CountMeanSketch,
    HadamardResponse,
    OptimizedLocalHashing,
    SubsetSelection,
)

CATS = [0, 1, 2, 3]


def _data(n=400, c=3, seed=0):
    return np.random.default_rng(seed).integers(0, len(CATS), size=(n, c))


MECHANISMS = [
    RandomizedResponse(epsilon=1.0, categories=CATS, random_state=0),
    UtilityOptimizedRR(epsilon=1.0, categories=CATS, sensitive=[0], random_state=0),
    RAPPOR(epsilon=1.0, categories=CATS, random_state=0),
    RAPPOR(epsilon=1.0, categories=CATS, sparse_output=True, random_state=0),
    OptimizedLocalHashing(epsilon=1.0, categories=CATS, random_state=0),
    SubsetSelection(epsilon=1.0, categories=CATS, random_state=0),
    CountMeanSketch(epsilon=1.0, categories=CATS, n_buckets=8, n_hashes=2, random_state=0),
    HadamardResponse(epsilon=1.0, categories=CATS, random_state=0),
]
IDS = ["RR", "uRR", "RAPPOR", "RAPPOR-sparse", "OLH", "SS", "CMS", "HR"]


@pytest.mark.parametrize("mech", MECHANISMS, ids=IDS)
def test_blocks_are_the_columns_privatized_alone(mech):
    """Column j's block equals the column privatized alone under its name
    (seeded), so one channel serves every column and estimators take a block."""
    X = pd.DataFrame(_data(), columns=["a", "b", "c"])
    mech = clone(mech)
    reports = mech.fit_transform(X)
    width = len(clone(mech).fit(X[["a"]]).get_feature_names_out())
    assert reports.shape == (len(X), 3 * width)
    assert get_channel(reports) == mech.channel_
    names = mech.get_feature_names_out()
    assert len(names) == 3 * width
    assert [n.split("_")[0] for n in names[::width]] == ["a", "b", "c"]
    for j, name in enumerate(["a", "b", "c"]):
        alone = clone(mech).fit(X[[name]]).transform(X[[name]])
        block = mech.column_reports(reports, name)
        assert_array_equal(_dense(block), _dense(alone))
        assert_array_equal(_dense(mech.column_reports(reports, j)), _dense(alone))
        assert get_channel(block) == mech.channel_
        est = EmpiricalEstimator(mechanism=mech).fit(block)
        assert est.distribution_.shape == (len(CATS),)


def _dense(reports):
    return reports.toarray() if sp.issparse(reports) else np.asarray(reports)


@pytest.mark.parametrize("mech", MECHANISMS, ids=IDS)
def test_identical_columns_get_independent_noise(mech):
    """Two equal columns must not get equal reports: each has its own stream,
    with a seed (keyed by the column) and with fresh entropy."""
    col = _data(n=300, c=1)
    X = np.hstack([col, col])
    for random_state in (0, None):
        m = clone(mech).set_params(random_state=random_state).fit(X)
        reports = m.transform(X)
        first, second = (_dense(m.column_reports(reports, j)) for j in (0, 1))
        assert not np.array_equal(first, second), random_state


@pytest.mark.parametrize("mech", MECHANISMS, ids=IDS)
def test_budget_is_the_sum_over_columns(mech):
    mech = clone(mech)
    assert mech.fit(_data(c=1)).epsilon_spent_ == pytest.approx(1.0)
    assert mech.fit(_data(c=3)).epsilon_spent_ == pytest.approx(3.0)
    # Fitted on the public domain alone: one column.
    assert clone(mech).fit().epsilon_spent_ == pytest.approx(1.0)


def test_joint_distribution_of_two_columns_is_the_product_channel():
    """Reports of (x, x) follow Q(y1|x) Q(y2|x): a shared or correlated stream
    (e.g. one draw reused for both columns) fails this chi-square test."""
    mech = RandomizedResponse(epsilon=1.0, categories=CATS, random_state=12345)
    n = 40_000
    X = np.zeros((n, 2), dtype=np.int64)  # every user holds 0 in both columns
    reports = np.asarray(mech.fit(X).transform(X))
    Q = mech.channel_matrix()[0]
    expected = n * np.outer(Q, Q).ravel()
    observed = np.bincount(reports[:, 0] * len(CATS) + reports[:, 1], minlength=16)
    _, p = stats.chisquare(observed, expected)
    assert p > 1e-3, (observed, expected.round())
    # ... while identical reports (a shared stream) are far from it.
    shared = np.bincount(reports[:, 0] * len(CATS) + reports[:, 0], minlength=16)
    assert stats.chisquare(shared, expected)[1] < 1e-12


def test_domain_auto_is_shared_by_the_columns():
    X = np.array([["a", "b"], ["b", "c"], ["c", "a"]], dtype=object)
    with pytest.warns(Warning, match="categories='auto'"):
        mech = RandomizedResponse(epsilon=1.0, random_state=0).fit(X)
    assert_array_equal(mech.categories_, ["a", "b", "c"])
    with pytest.raises(ValueError, match=r"1 value \(text\) of unknown categories"):
        mech.transform(np.array([["a", "z"]], dtype=object))


def test_pandas_output_and_inputs_are_not_modified():
    X = pd.DataFrame(_data(n=50, c=2), columns=["visit1", "visit2"], index=range(100, 150))
    before = X.copy()
    mech = RAPPOR(epsilon=2.0, categories=CATS, random_state=0).set_output(transform="pandas")
    out = mech.fit_transform(X)
    pd.testing.assert_frame_equal(X, before)
    assert list(out.columns) == [f"visit{j}_{c}" for j in (1, 2) for c in CATS]
    assert_array_equal(out.index, X.index)
    assert get_channel(out) == mech.channel_
    block = mech.column_reports(out, "visit2")
    assert list(block.columns) == [f"visit2_{c}" for c in CATS]
    assert EMEstimator(mechanism=mech).fit(block).distribution_.shape == (len(CATS),)


def test_sparse_blocks_stay_canonical_csr():
    mech = RAPPOR(epsilon=1.0, categories=CATS, sparse_output=True, random_state=0)
    reports = mech.fit_transform(_data(n=200, c=2))
    assert sp.issparse(reports) and reports.format == "csr"
    assert reports.has_canonical_format
    assert get_channel(reports) == mech.channel_
    dense = reports.toarray()
    assert set(np.unique(dense)) <= {0, 1}


def test_estimates_of_each_column():
    """Each block estimates its own column's distribution."""
    rng = np.random.default_rng(3)
    n = 60_000
    a = rng.choice(4, size=n, p=[0.7, 0.1, 0.1, 0.1])
    b = rng.choice(4, size=n, p=[0.1, 0.1, 0.1, 0.7])
    mech = RandomizedResponse(epsilon=3.0, categories=CATS, random_state=0)
    reports = mech.fit_transform(np.column_stack([a, b]))
    for j, p in enumerate(([0.7, 0.1, 0.1, 0.1], [0.1, 0.1, 0.1, 0.7])):
        est = EmpiricalEstimator(mechanism=mech).fit(mech.column_reports(reports, j))
        assert_allclose(est.distribution_, p, atol=0.02)


def test_column_reports_errors():
    mech = RandomizedResponse(epsilon=1.0, categories=CATS, random_state=0)
    X = pd.DataFrame(_data(n=20, c=2), columns=["a", "b"])
    reports = mech.fit_transform(X)
    with pytest.raises(KeyError, match=r"'z' is not an input column.*\['a', 'b'\]"):
        mech.column_reports(reports, "z")
    with pytest.raises(IndexError, match="column 2 is out of range"):
        mech.column_reports(reports, 2)
    with pytest.raises(ValueError, match="2 report columns; got 1"):
        mech.column_reports(np.asarray(reports)[:, :1], 0)


@pytest.mark.parametrize("mech", MECHANISMS, ids=IDS)
def test_estimators_pool_the_blocks(mech):
    """Reports of c columns estimate the distribution of all their values
    (the blocks stacked as n * c reports); predict_proba gives block j the
    posterior of column j's report."""
    mech = clone(mech)
    X = _data(n=300, c=2, seed=4)
    reports = mech.fit_transform(X)
    blocks = [mech.column_reports(reports, j) for j in (0, 1)]
    stacked = (
        sp.vstack(blocks)
        if sp.issparse(reports)
        else np.concatenate([np.asarray(b) for b in blocks])
    )
    for cls in (EmpiricalEstimator, EMEstimator):
        pooled = cls(mechanism=mech).fit(reports)
        alone = cls(mechanism=mech).fit(stacked)
        assert pooled.n_reports_ == 600
        assert_allclose(pooled.distribution_, alone.distribution_)
        proba = pooled.predict_proba(reports)
        assert proba.shape == (300, 2 * len(CATS))
        for j, block in enumerate(blocks):
            assert_allclose(proba[:, j * 4 : (j + 1) * 4], alone.predict_proba(block))
        assert pooled.score(reports) == pytest.approx(alone.score(stacked))


def test_estimator_fitted_on_blocks_refuses_other_shapes():
    mech = RandomizedResponse(epsilon=1.0, categories=CATS, random_state=0)
    est = EmpiricalEstimator(mechanism=mech).fit(mech.fit_transform(_data(n=20, c=2)))
    assert est.n_features_in_ == 2
    with pytest.raises(Exception, match=r"got 1D array instead.*fitted on 2 report columns"):
        est.predict_proba(np.array([0, 1]))
    with pytest.raises(Exception, match=r"X has 3 features, but EmpiricalEstimator is expecting 2"):
        est.predict_proba(_data(n=5, c=3))


def test_pickled_multi_column_mechanism_keeps_no_stream():
    X = _data(n=100, c=2)
    mech = RandomizedResponse(epsilon=1.0, categories=CATS).fit(X)
    copy = pickle.loads(pickle.dumps(mech))
    # Fresh entropy at every call: copies never replay each other's noise.
    assert not np.array_equal(np.asarray(copy.transform(X)), np.asarray(mech.transform(X)))


def test_dataframe_privatizer_gives_each_mechanism_one_column():
    df = pd.DataFrame(_data(n=30, c=3), columns=["a", "b", "c"])
    rr = RandomizedResponse(epsilon=1.0, categories=CATS, random_state=0)
    with pytest.raises(ValueError, match=r"Mechanism 'ab' reads 2 columns.*its own entry"):
        DataFramePrivatizer([("ab", rr, ["a", "b"])]).fit(df)
    with pytest.raises(ValueError, match=r"remainder is a mechanism, and 2 columns remain"):
        DataFramePrivatizer([("a", rr, ["a"])], remainder=clone(rr)).fit(df)
    # One remaining column is fine.
    priv = DataFramePrivatizer([("a", rr, ["a"]), ("b", clone(rr), ["b"])], remainder=clone(rr))
    assert priv.fit(df).epsilon_spent_ == pytest.approx(3.0)


def test_partitions_of_a_multi_column_mechanism():
    """Chunks (and Dask partitions) of several columns: one stream per
    partition and column, blocks as in one call."""
    from sklearn_uldp.parallel import privatize_partitions

    X = _data(n=100, c=2)
    mech = RAPPOR(epsilon=1.0, categories=CATS, random_state=0).fit(X)
    parts = privatize_partitions([X[:50], X[50:]], mech, random_state=0)
    assert [p.shape for p in parts] == [(50, 8), (50, 8)]
    assert not np.array_equal(np.asarray(parts[0]), np.asarray(parts[1]))
    dd = pytest.importorskip("dask.dataframe")
    frame = pd.DataFrame(X, columns=["a", "b"])
    rr = RandomizedResponse(epsilon=1.0, categories=CATS, random_state=0).fit(frame)
    out = privatize_partitions(dd.from_pandas(frame, npartitions=2), rr, random_state=0).compute()
    assert list(out.columns) == ["a", "b"] and out.shape == (100, 2)
    with pytest.raises(ValueError, match=r"fitted on the column \['a', 'b'\]"):
        privatize_partitions(dd.from_pandas(frame[["a"]], npartitions=2), rr)
