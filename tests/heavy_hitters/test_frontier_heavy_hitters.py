"""Open-domain uLH (sklearn_uldp.heavy_hitters.UtilityOptimizedLocalHashingHeavyHitters)."""

import numpy as np
import pytest
from _chisquare import chi_square_pvalue

from sklearn_uldp.heavy_hitters import (
    HeavyHitterEstimator,
    UtilityOptimizedHeavyHitters,
    UtilityOptimizedLocalHashingHeavyHitters,
    protocol_from_dict,
)
from sklearn_uldp.privacy import audit_mechanism, check_uldp

UNIVERSE = ["a", "b", "c", "d", "e"]


def _mech(eps=1.0, **kw):
    params = {"n_hashes": 8, "hash_seed": 3, "random_state": 0, **kw}
    return UtilityOptimizedLocalHashingHeavyHitters(
        epsilon=eps, sensitive=["a", "b"], **params
    ).fit()


@pytest.mark.parametrize("eps", [0.5, 1.0, 3.0])
def test_exact_channel_is_uldp_and_tight(eps):
    proto = _mech(eps).protocol_
    for realized in (False, True):
        Q = proto.channel_matrix(UNIVERSE, realized=realized)
        np.testing.assert_allclose(Q.sum(axis=1), 1.0, rtol=1e-10)
        check = check_uldp(
            Q,
            sensitive=proto.sensitive_mask(UNIVERSE),
            epsilon=eps,
            protected=proto.protected_outputs(UNIVERSE),
        )
        assert check.satisfied, check.reasons
    assert np.isclose(check.worst_log_ratio, eps)
    # a non-sensitive item is hidden uniformly: its protected row is flat
    Q = proto.channel_matrix(UNIVERSE)
    assert np.ptp(Q[2, : proto.n_outputs]) == 0
    g = proto.oracle.hash_range
    assert np.isclose(Q[2, proto.n_outputs], (np.e**eps - 1) / (np.e**eps + g - 1))


@pytest.mark.parametrize("item", ["a", "c"])
def test_sampler_matches_the_channel(item):
    mech = _mech(1.0)
    proto = mech.protocol_
    n = 40_000
    reports = mech.transform(np.full(n, item, dtype=object))
    code = np.asarray(reports[:, 0], dtype=np.int64)
    clear = code == -1
    # outputs: protected codes, then "x in clear" for c, d, e
    cols = np.where(clear, proto.n_outputs + UNIVERSE.index(item) - 2, code)
    q = proto.channel_matrix(UNIVERSE, realized=True)[UNIVERSE.index(item)]
    counts = np.bincount(cols, minlength=q.size)
    assert counts[q == 0].sum() == 0
    assert chi_square_pvalue(counts, q) > 1e-4
    if item == "a":
        assert not clear.any()


def test_spec_round_trip_and_estimates():
    # 1024 public hash functions: their collisions (one draw for all users)
    # stay below the users' noise
    mech = _mech(2.0, top_k=5, n_hashes=1024)
    spec = mech.spec()
    assert spec["protocol"] == "uldp_local_hashing" and "protected_epsilon" not in spec
    assert protocol_from_dict(spec) == mech.protocol_
    rng = np.random.default_rng(0)
    X = rng.choice(UNIVERSE, p=[0.1, 0.2, 0.3, 0.25, 0.15], size=60_000)
    hh = HeavyHitterEstimator().fit(mech.transform(X)).heavy_hitters_
    for item, p in zip(UNIVERSE, [0.1, 0.2, 0.3, 0.25, 0.15], strict=True):
        assert abs(hh[item] - p) < 0.03, item


def test_beats_the_split_budget_protocol_on_sensitive_items():
    """The whole budget on the sensitive items: their error is a fraction of
    UtilityOptimizedHeavyHitters' (eps/2 oracle) at eps = 1."""
    k, n = 400, 50_000
    w = 1 / np.arange(1, k + 1) ** 1.1
    items = np.array([f"i{j}" for j in range(k)], dtype=object)
    sens = list(items[::20])
    err = {}
    for cls in (UtilityOptimizedHeavyHitters, UtilityOptimizedLocalHashingHeavyHitters):
        sq = []
        for rep in range(3):
            rng = np.random.default_rng(rep)
            X = items[rng.choice(k, size=n, p=w / w.sum())]
            true = dict(zip(*np.unique(X, return_counts=True), strict=True))
            mech = cls(epsilon=1.0, sensitive=sens, random_state=rep).fit()
            c = HeavyHitterEstimator().fit(mech.transform(X)).candidates_
            est = dict(zip(c["item"], c["frequency"], strict=True))
            sq += [(est.get(s, 0.0) - true.get(s, 0) / n) ** 2 for s in sens]
        err[cls.__name__] = np.mean(sq)
    assert (
        err["UtilityOptimizedLocalHashingHeavyHitters"] < 0.6 * err["UtilityOptimizedHeavyHitters"]
    )


def test_audit():
    mech = _mech(1.0)
    result = audit_mechanism(
        lambda values, rng: mech.protocol_.sample(*_codes(mech, values), rng),
        pairs=[("a", "b"), ("a", "c"), ("c", "d")],
        sensitive=["a", "b"],
        epsilon=1.0,
        protected=lambda reports: np.asarray(reports)[:, 0].astype(np.int64) >= 0,
        n_samples=20_000,
        random_state=0,
    )
    assert result.passed, result.summary()
    assert result.epsilon_lower_bound <= 1.0


def _codes(mech, values):
    codes, keys, items = mech.protocol_.encoding.whole_keys(
        np.asarray(values, dtype=object), return_items=True
    )
    return codes, keys, items


def test_estimator_surface_on_real_reports():
    """What scikit-learn's checks would test, on items and reports."""
    import pickle

    from sklearn.base import clone

    from sklearn_uldp.exceptions import ReportMismatchError
    from sklearn_uldp.heavy_hitters import PrefixExtendingMethod

    mech = _mech(1.0)
    assert clone(mech).get_params() == mech.get_params()
    assert pickle.loads(pickle.dumps(mech)).protocol_ == mech.protocol_
    X = np.random.default_rng(0).choice(UNIVERSE, size=4000).astype(object)
    before = X.copy()
    reports = mech.transform(X)
    assert (X == before).all()  # input not modified
    whole = HeavyHitterEstimator().fit(reports)
    chunks = HeavyHitterEstimator().partial_fit(reports[:1000]).partial_fit(reports[1000:])
    np.testing.assert_allclose(
        whole.candidates_["frequency"].to_numpy(), chunks.candidates_["frequency"].to_numpy()
    )
    other = PrefixExtendingMethod(epsilon=1.0, random_state=0).fit()
    with pytest.raises(ReportMismatchError):
        HeavyHitterEstimator(mechanism=other).fit(reports)
    frame = mech.set_output(transform="pandas").transform(X[:10])
    assert protocol_from_dict(frame.attrs["sklearn_uldp_protocol"]) == mech.protocol_
