"""Noise that no copy can replay (random_state None / "secure" / seeds).

Every test here reproduces a way the noise of a mechanism used to be shared or
recoverable: pickles and copies of a fitted mechanism, loky workers, Dask task
graphs, one seed reused for several columns, and report files left readable
on disk.
"""

import copy
import os
import pickle
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.compose import ColumnTransformer

from sklearn_uldp import (
    RAPPOR,
    PersonalizedMechanism,
    RandomizedResponse,
    UtilityOptimizedRAPPOR,
    UtilityOptimizedRR,
)
from sklearn_uldp.compose import DataFramePrivatizer
from sklearn_uldp.mechanisms import (
    BinaryOptimalResponse,
    HadamardResponse,
    UtilityOptimizedOUE,
)
from sklearn_uldp.parallel import privatize_partitions
from sklearn_uldp.utils import check_random_generator

K = 10
N = 20_000
EPS = 1.0
# Agreement of two independent k-RR reports of the same value:
# sum_y Q(y|x)^2 = p^2 + (k-1) ((1-p)/(k-1))^2, about 0.12 here; a shared
# stream gives 1.0.
P_KEEP = np.exp(EPS) / (np.exp(EPS) + K - 1)
AGREEMENT = P_KEEP**2 + (1 - P_KEEP) ** 2 / (K - 1)
# Five standard errors of the agreement rate at N reports.
TOL = 5 * np.sqrt(AGREEMENT * (1 - AGREEMENT) / N)


def _X(seed=0, n=N):
    return np.random.default_rng(seed).integers(0, K, size=(n, 1))


def _rr(random_state=None):
    return RandomizedResponse(EPS, categories=range(K), random_state=random_state)


def _agreement(a, b):
    return float(np.mean(np.asarray(a) == np.asarray(b)))


def _assert_independent(a, b):
    assert abs(_agreement(a, b) - AGREEMENT) < TOL, _agreement(a, b)


def _kept_correlation(X, reports):
    """Correlation of "column 0 reported the truth" and "column 1 did"."""
    kept = np.asarray(reports) == np.asarray(X)
    return float(np.corrcoef(kept[:, 0], kept[:, 1])[0, 1])


def _rng_objects(obj, seen=None):
    """Every SeedSequence / Generator / bit generator / RandomState reachable in obj."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return []
    seen.add(id(obj))
    kinds = (
        np.random.SeedSequence,
        np.random.Generator,
        np.random.BitGenerator,
        np.random.RandomState,
    )
    if isinstance(obj, kinds):
        return [obj]
    found = []
    if isinstance(obj, dict):
        for value in obj.values():
            found += _rng_objects(value, seen)
    elif isinstance(obj, list | tuple | set):
        for value in obj:
            found += _rng_objects(value, seen)
    elif hasattr(obj, "__dict__") and not isinstance(obj, type):
        found += _rng_objects(vars(obj), seen)
    return found


RNG_NAMES = [
    b"SeedSequence",
    b"PCG64",
    b"Generator",
    b"AESCounter",
    b"ChaCha",
    b"RandomState",
    b"bit_generator",
]


def _all_mechanisms(random_state):
    cats = list(range(6))
    return [
        RandomizedResponse(1.0, categories=cats, random_state=random_state),
        UtilityOptimizedRR(1.0, sensitive=[0], categories=cats, random_state=random_state),
        RAPPOR(1.0, categories=cats, random_state=random_state),
        UtilityOptimizedRAPPOR(1.0, sensitive=[0], categories=cats, random_state=random_state),
        UtilityOptimizedOUE(1.0, sensitive=[0], categories=cats, random_state=random_state),
        HadamardResponse(1.0, categories=cats, random_state=random_state),
        BinaryOptimalResponse(1.0, categories=[0, 1], random_state=random_state),
    ]


def _mech_input(mech, n=200):
    k = len(mech.categories)
    return np.random.default_rng(0).integers(0, k, size=(n, 1))


# ------------------------------------------------------ copies and pickles
@pytest.mark.parametrize("random_state", [None, "secure"])
def test_pickle_copies_draw_independent_noise(random_state):
    m = _rr(random_state).fit()
    a, b = (pickle.loads(pickle.dumps(m)) for _ in range(2))
    X = _X()
    _assert_independent(a.transform(X), b.transform(X))


@pytest.mark.parametrize("random_state", [None, "secure"])
def test_copies_and_clones_draw_independent_noise(random_state):
    m = _rr(random_state).fit()
    X = _X()
    # Copies taken before the original draws anything: a stream kept in the
    # object would be replayed by each of them.
    copies = [copy.copy(m), copy.deepcopy(m), clone(m).fit()]
    reference = m.transform(X)
    for other in copies:
        _assert_independent(reference, other.transform(X))


def test_loky_workers_draw_independent_noise():
    from joblib import Parallel, delayed

    m = _rr().fit()
    X = _X()
    chunks = [X, X.copy()]
    out = Parallel(n_jobs=2, backend="loky")(delayed(m.transform)(c) for c in chunks)
    _assert_independent(out[0], out[1])


@pytest.mark.parametrize("random_state", [None, "secure"])
@pytest.mark.parametrize("index", range(7))
def test_fitted_state_and_pickle_hold_no_seed(random_state, index):
    mech = _all_mechanisms(random_state)[index]
    X = _mech_input(mech)
    mech.fit(X)
    mech.transform(X)
    assert _rng_objects(mech) == []
    assert not [k for k in vars(mech) if "seed" in k.lower() or "rng" in k.lower()]
    blob = pickle.dumps(mech)
    assert not [name for name in RNG_NAMES if name in blob]
    spec = repr(mech.spec()).lower()
    assert "seed" not in spec and "entropy" not in spec and "random" not in spec


def test_personalized_mechanism_holds_no_seed_and_copies_differ():
    X = pd.DataFrame(
        {"cell": np.tile(list("abcd"), 2500), "home": np.tile(["a", "c", None, "b"], 2500)}
    )
    mech = PersonalizedMechanism(1.0, sensitive=["a"], tags=["home"], categories=list("abcd")).fit(
        X
    )
    assert _rng_objects(mech) == []
    assert not [name for name in RNG_NAMES if name in pickle.dumps(mech)]
    a, b = (pickle.loads(pickle.dumps(mech)) for _ in range(2))
    assert _agreement(a.transform(X), b.transform(X)) < 0.9


def test_dataframe_privatizer_keeps_no_seed():
    df = pd.DataFrame({"x": _X()[:, 0], "y": _X(1)[:, 0]})
    priv = DataFramePrivatizer({"x": _rr(), "y": _rr()}).fit(df)
    assert _rng_objects(priv) == []
    assert not [name for name in RNG_NAMES if name in pickle.dumps(priv)]
    a, b = (pickle.loads(pickle.dumps(priv)) for _ in range(2))
    _assert_independent(a.transform(df)["x"], b.transform(df)["x"])


# ------------------------------------------------------------- task graphs
def test_dask_graph_of_privatize_partitions_holds_no_seed():
    dd = pytest.importorskip("dask.dataframe")
    cloudpickle = pytest.importorskip("cloudpickle")
    X = pd.DataFrame({"v": _X()[:, 0]})
    ddf = dd.from_pandas(X, npartitions=2)
    # Even a seeded mechanism's own seed stays out of an unseeded graph.
    for mech in (_rr().fit(X), _rr(12345).fit(X)):
        reports = privatize_partitions(ddf, mech)
        graph = dict(reports.__dask_graph__())
        assert _rng_objects(list(graph.values())) == []
        blob = cloudpickle.dumps(graph)
        assert not [name for name in RNG_NAMES if name in blob]
        # Whoever holds the graph cannot replay the noise: every computation
        # draws new noise.
        first = reports.compute(scheduler="sync")
        again = reports.compute(scheduler="sync")
        _assert_independent(first, again)


def test_partitions_list_with_none_are_independent():
    mech = _rr(0).fit()
    X = _X()
    a, b = privatize_partitions([X, X.copy()], mech)
    _assert_independent(a, b)


# -------------------------------------------------------- shared seeds
def test_one_int_seed_for_two_unnamed_columns_gives_independent_noise():
    X = np.hstack([_X(1), _X(2)])
    ct = ColumnTransformer([("a", _rr(0), [0]), ("b", _rr(0), [1])])
    out = ct.fit_transform(X).astype(int)
    assert abs(_kept_correlation(X, out)) < 0.05
    np.testing.assert_array_equal(ct.fit_transform(X).astype(int), out)


def test_two_separately_built_seed_sequences_give_independent_noise():
    X = np.hstack([_X(1), _X(2)])
    a = _rr(np.random.SeedSequence(5)).fit()
    b = _rr(np.random.SeedSequence(5)).fit()
    out = np.hstack([np.asarray(a.transform(X[:, :1])), np.asarray(b.transform(X[:, 1:]))]).astype(
        int
    )
    assert abs(_kept_correlation(X, out)) < 0.05
    # Named columns with the same values: the names separate the streams.
    df = pd.DataFrame({"u": X[:, 0], "w": X[:, 0]})
    a = _rr(np.random.SeedSequence(5)).fit(df[["u"]])
    b = _rr(np.random.SeedSequence(5)).fit(df[["w"]])
    _assert_independent(a.transform(df[["u"]]), b.transform(df[["w"]]))


def test_one_int_seed_for_two_mechanisms_on_different_data():
    a, b = _rr(7).fit(), _rr(7).fit()
    X = np.hstack([_X(1), _X(2)])
    out = np.hstack([np.asarray(a.transform(X[:, :1])), np.asarray(b.transform(X[:, 1:]))]).astype(
        int
    )
    assert abs(_kept_correlation(X, out)) < 0.05


def test_identical_unnamed_columns_with_one_seed_get_identical_reports():
    # Documented: the same values, name and seed give the same reports,
    # which reveal no more than one of them.
    X = _X(1)
    np.testing.assert_array_equal(
        np.asarray(_rr(3).fit().transform(X)), np.asarray(_rr(3).fit().transform(X))
    )


def test_shared_seed_sequence_object_is_not_mutated():
    seed = np.random.SeedSequence(5)
    m = _rr(seed).fit()
    m.transform(_X())
    assert seed.n_children_spawned == 0


# --------------------------------------------------------- reproducibility
@pytest.mark.parametrize("index", range(7))
def test_int_seeds_reproduce(index):
    make = lambda: _all_mechanisms(42)[index]  # noqa: E731
    X = _mech_input(make(), n=500)
    a = make().fit(X)
    first, second = np.asarray(a.transform(X)), np.asarray(a.transform(X))
    b = make().fit(X)
    np.testing.assert_array_equal(np.asarray(b.transform(X)), first)
    np.testing.assert_array_equal(np.asarray(b.transform(X)), second)
    a.fit(X)
    np.testing.assert_array_equal(np.asarray(a.transform(X)), first)


def test_generator_is_consumed_and_shared_generator_gives_independent_columns():
    rng = np.random.default_rng(0)
    state = copy.deepcopy(rng.bit_generator.state)
    a, b = _rr(rng).fit(), _rr(rng).fit()
    X = _X()
    _assert_independent(a.transform(X), b.transform(X))
    assert rng.bit_generator.state != state


# ------------------------------------------------------------------ secure
def _secure_classes():
    randomgen = pytest.importorskip("randomgen")
    return randomgen.AESCounter, randomgen.ChaCha


def test_secure_uses_aescounter_or_chacha(monkeypatch):
    AESCounter, ChaCha = _secure_classes()
    from sklearn_uldp.utils import _random

    expected = AESCounter if AESCounter(0).use_aesni else ChaCha
    rng = check_random_generator("secure")
    assert type(rng.bit_generator) is expected
    made = []
    real = _random.secure_generator

    def spy():
        made.append(real())
        return made[-1]

    monkeypatch.setattr(_random, "secure_generator", spy)
    m = _rr("secure").fit()
    m.transform(_X(n=10))
    m.transform(_X(n=10))
    assert len(made) == 2 and all(type(g.bit_generator) is expected for g in made)
    # Two generators never share a key.
    assert made[0].random() != made[1].random()


def test_secure_falls_back_to_chacha_without_aesni(monkeypatch):
    AESCounter, ChaCha = _secure_classes()
    import randomgen

    from sklearn_uldp.utils import _random

    class NoAESNI(AESCounter):
        @property
        def use_aesni(self):
            return False

    monkeypatch.setattr(randomgen, "AESCounter", NoAESNI)
    _random._secure_bit_generator_class.cache_clear()
    try:
        assert type(check_random_generator("secure").bit_generator) is ChaCha
    finally:
        _random._secure_bit_generator_class.cache_clear()


def test_secure_without_randomgen_says_how_to_install(monkeypatch):
    from sklearn_uldp.utils import _random

    monkeypatch.setitem(sys.modules, "randomgen", None)
    _random._secure_bit_generator_class.cache_clear()
    try:
        with pytest.raises(ImportError, match=r'pip install "randomgen>=2.0"'):
            _rr("secure").fit()
        with pytest.raises(ImportError, match="secure"):
            DataFramePrivatizer({"x": _rr()}, random_state="secure").fit(
                pd.DataFrame({"x": [1, 2]})
            )
    finally:
        _random._secure_bit_generator_class.cache_clear()


@pytest.mark.parametrize("index", range(7))
def test_every_mechanism_accepts_secure(index):
    _secure_classes()
    mech = _all_mechanisms("secure")[index]
    X = _mech_input(mech)
    assert np.asarray(mech.fit(X).transform(X)).shape[0] == X.shape[0]


def test_composites_accept_secure():
    _secure_classes()
    df = pd.DataFrame({"x": _X()[:, 0], "y": _X()[:, 0]})
    priv = DataFramePrivatizer({"x": _rr(3), "y": _rr(3)}, random_state="secure")
    rep = priv.fit_transform(df)
    assert all(m.random_state == "secure" for m in priv.mechanisms_.values())
    _assert_independent(rep["x"], rep["y"])
    parts = privatize_partitions(
        [df[["x"]], df[["x"]]], priv.mechanisms_["x"], random_state="secure"
    )
    _assert_independent(parts[0], parts[1])


def test_bad_random_state_mentions_secure():
    with pytest.raises(ValueError, match="'secure'"):
        _rr("insecure").fit()
    with pytest.raises(ValueError, match="'secure'"):
        DataFramePrivatizer({"x": _rr()}, random_state="yes").fit(pd.DataFrame({"x": [1, 2]}))


# ------------------------------------------------------------ report files
def _spilled_store(parent):
    from sklearn_uldp.mechanisms import BitRows

    store = BitRows(10, 0.5)
    store.block_rows = 64
    bits = (np.random.default_rng(0).random((500, 10)) < 0.5).astype(np.uint8)
    store.append_dense(bits)
    return store.spill(parent)


@pytest.fixture
def small_blocks(bit_row_blocks):
    bit_row_blocks(64)


@pytest.mark.skipif(os.name == "nt", reason="POSIX file modes")
@pytest.mark.usefixtures("small_blocks")
def test_spilled_report_files_are_private(tmp_path):
    old = os.umask(0o022)
    try:
        spilled = _spilled_store(tmp_path)
    finally:
        os.umask(old)
    assert os.stat(spilled.directory).st_mode & 0o777 == 0o700
    files = os.listdir(spilled.directory)
    assert files
    for name in files:
        mode = os.stat(os.path.join(spilled.directory, name)).st_mode & 0o777
        assert mode == 0o600, (name, oct(mode))


def _dead_pid():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


@pytest.mark.skipif(os.name == "nt", reason="POSIX processes")
@pytest.mark.usefixtures("small_blocks")
def test_directories_of_dead_processes_are_removed_by_the_next_spill(tmp_path):
    from sklearn_uldp.mechanisms._spill import _host_key

    host = _host_key()
    dead = tmp_path / f"sklearn_uldp-reports-{host}-{_dead_pid()}-abcd"
    alive = tmp_path / f"sklearn_uldp-reports-{host}-{os.getppid()}-abcd"
    other_host = tmp_path / f"sklearn_uldp-reports-00000000-{_dead_pid()}-abcd"
    unrelated = tmp_path / "my-reports-1"
    for d in (dead, alive, other_host, unrelated):
        d.mkdir()
        (d / "block-0.bin").write_bytes(b"\0" * 16)
    spilled = _spilled_store(tmp_path)
    assert not dead.exists()
    assert alive.exists() and other_host.exists() and unrelated.exists()
    assert os.path.isdir(spilled.directory)


@pytest.mark.skipif(os.name == "nt", reason="POSIX signals")
def test_reports_of_a_killed_process_are_cleaned_up(tmp_path):
    script = textwrap.dedent(f"""
        import os, signal
        import numpy as np
        from sklearn_uldp.mechanisms import BitRows
        store = BitRows(10, 0.5)
        store.block_rows = 64
        store.append_dense((np.random.default_rng(0).random((500, 10)) < .5)
                           .astype(np.uint8))
        spilled = store.spill({str(tmp_path)!r})
        print(spilled.directory, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    left = proc.stdout.strip()
    assert os.path.isdir(left)  # the killed process could not clean up
    _spilled_store(tmp_path)
    assert not os.path.exists(left)


def test_search_accepts_secure():
    _secure_classes()
    from sklearn_uldp.model_selection import PrivacyUtilitySearchCV

    X = _X(n=2000)
    search = PrivacyUtilitySearchCV(
        _rr(), {"epsilon": [0.5, 2.0]}, n_repeats=2, random_state="secure"
    ).fit(X)
    assert len(search.cv_results_) == 2


def test_partitions_keep_secure_columns_secure_next_to_plain_ones(monkeypatch):
    # A DataFramePrivatizer whose columns mix "secure" and None: on the
    # partition path (Dask) the "secure" column must still draw from the
    # secure generator. Before, the template cleared every mechanism's
    # random_state and the secure column silently got PCG64.
    _secure_classes()
    from sklearn_uldp.utils import _random

    calls = []
    real = _random.secure_generator

    def counted():
        calls.append(1)
        return real()

    monkeypatch.setattr(_random, "secure_generator", counted)
    df = pd.DataFrame({"x": _X()[:, 0], "y": _X()[:, 0]})
    priv = DataFramePrivatizer({"x": _rr("secure"), "y": _rr()}).fit(df)
    calls.clear()
    parts = privatize_partitions([df, df], priv)
    assert len(calls) == 2  # the x column of each partition, and only it
    assert all(p.shape == df.shape for p in parts)
    assert priv.mechanisms_["x"].random_state == "secure"
