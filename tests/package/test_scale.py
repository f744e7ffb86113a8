"""Costs that must not grow with k or n where the mechanism allows (issue #25).

Not timed (the figures live in benchmarks/): each test pins an ingredient of
the flat cost, so that a regression shows as a failure.
"""

import numpy as np
import pytest

from sklearn_uldp import OptimizedLocalHashing, RandomizedResponse
from sklearn_uldp.mechanisms._base import _has_missing_marker
from sklearn_uldp.mechanisms._local_hashing import LocalHashingChannel
from sklearn_uldp.mechanisms._randomized_response import RandomizedResponseChannel
from sklearn_uldp.utils._hashing import linear_hash
from sklearn_uldp.utils._validation import is_missing


# ------------------------------------------------------- growth with k
@pytest.mark.parametrize(
    "k,g", [(2, 3), (100, 3), (1000, 5), (100_000, 3), (50, 7), (1000, 17), (200, 263)]
)
def test_compiled_linear_hash_equals_the_reference(k, g):
    # OLH hashes with blocks of base-g digits in one compiled pass (no
    # g^r x k table, no pass per digit): the same function.
    pytest.importorskip("numba")
    channel = LocalHashingChannel(list(range(k)), 1.0, g)
    rng = np.random.default_rng(k)
    seeds = rng.integers(0, channel.n_seeds, 20_000)
    codes = rng.integers(0, k, 20_000)
    expected = linear_hash(seeds, codes, g, channel.n_digits)
    np.testing.assert_array_equal(channel.hash(seeds, codes), expected)
    # the extreme seeds and codes
    top = np.array([0, channel.n_seeds - 1]), np.array([0, k - 1])
    np.testing.assert_array_equal(
        channel.hash(np.repeat(top[0], 2), np.tile(top[1], 2)),
        linear_hash(np.repeat(top[0], 2), np.tile(top[1], 2), g, channel.n_digits),
    )


def test_olh_needs_no_hash_table_to_privatize():
    pytest.importorskip("numba")
    mech = OptimizedLocalHashing(1.0, categories=np.arange(100_000), random_state=0).fit()
    mech.transform(np.zeros((100, 1), dtype=int))
    assert mech.channel_._table_cache is None  # the g^r x k table was never built


@pytest.mark.parametrize(
    "categories",
    [
        np.arange(5, 105),
        np.arange(100).astype(np.uint8),
        np.arange(5, 105).astype(np.uint8),
        np.array([3, 1, 2]),
    ],
)
def test_randomized_response_decodes_integer_runs_by_addition(categories):
    channel = RandomizedResponseChannel(categories, 1.0)
    codes = np.random.default_rng(0).integers(0, len(categories), 1000)
    decoded = channel.decode(codes)
    expected = channel.categories[codes]
    assert decoded.dtype == expected.dtype
    np.testing.assert_array_equal(decoded, expected)


def test_numeric_domains_are_checked_without_python_objects(monkeypatch):
    import pandas as pd

    calls = []
    real = pd.isna
    monkeypatch.setattr(pd, "isna", lambda v: calls.append(1) or real(v))
    values = np.array([1.0, np.nan, 3.0])
    np.testing.assert_array_equal(is_missing(values), [False, True, False])
    assert not is_missing(np.arange(5)).any()
    assert not _has_missing_marker(np.arange(100_000))
    assert _has_missing_marker(np.array([0.5, np.nan]))
    assert not calls
    assert _has_missing_marker(["a", None]) and calls  # other labels: pandas decides
    # and transform of a large integer domain asks for the tags without them
    calls.clear()
    mech = RandomizedResponse(1.0, categories=np.arange(100_000), random_state=0).fit()
    mech.transform(np.zeros((10, 1), dtype=int))
    assert not calls


# ------------------------------------------------------------- threads
def test_default_threads_only_where_they_pay(monkeypatch):
    # Products over a small store, and column counts of a small batch, run
    # on the calling thread by default (starting threads costs about as much
    # as the work); large ones use every core; an explicit n_jobs is obeyed.
    import concurrent.futures

    from sklearn_uldp.mechanisms import _bit_rows
    from sklearn_uldp.mechanisms._bit_rows import BitRows
    from sklearn_uldp.utils import _bits

    pools = []
    real = concurrent.futures.ThreadPoolExecutor

    class Counted(real):
        def __init__(self, *args, **kwargs):
            pools.append(kwargs.get("max_workers", args[0] if args else None))
            super().__init__(*args, **kwargs)

    monkeypatch.setattr("sklearn_uldp.utils._threads.ThreadPoolExecutor", Counted)
    monkeypatch.setattr(
        "sklearn_uldp.utils._threads.n_threads", lambda n_jobs: 2 if n_jobs is None else n_jobs
    )
    monkeypatch.setattr(_bit_rows, "_BLOCK_ROWS", 1000)
    bits = (np.random.default_rng(0).random((5000, 16)) < 0.5).astype(np.uint8)
    store = BitRows(16, 0.5)
    store.append_dense(bits)
    assert len(store._all_blocks()) == 5 and store.nbytes < _bit_rows._THREAD_MIN_BYTES
    pools.clear()
    store.em_terms(1.0, np.ones(16))
    assert not pools  # small: one thread
    store.em_terms(1.0, np.ones(16), n_jobs=2)
    assert pools == [2]  # asked for
    monkeypatch.setattr(_bit_rows, "_THREAD_MIN_BYTES", 0)
    pools.clear()
    store.em_terms(1.0, np.ones(16))
    assert pools == [2]  # large enough: all cores
    pools.clear()
    _bits.column_counts(_bits.pack_rows(bits))
    assert not pools
    monkeypatch.setattr(_bits, "_THREAD_BYTES", 1000)
    _bits.column_counts(_bits.pack_rows(bits))
    assert pools == [2]


# -------------------------------------------------------------- imports
def _modules_after(statement):
    import subprocess
    import sys

    code = f"import sys; {statement}; print(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_import_loads_nothing_heavy():
    # import sklearn_uldp costs next to nothing: every public name is
    # imported from its subpackage at its first use (PEP 562).
    loaded = _modules_after("import sklearn_uldp")
    for heavy in ("sklearn", "pandas", "scipy", "numba", "matplotlib", "dask", "pyarrow"):
        assert heavy not in loaded, heavy
    assert "sklearn_uldp.mechanisms" not in loaded
    # the mechanisms need neither the plots, Dask, nor the composition
    loaded = _modules_after("from sklearn_uldp import RandomizedResponse, EMEstimator")
    for heavy in ("matplotlib", "dask", "sklearn_uldp.compose", "sklearn_uldp.plotting"):
        assert heavy not in loaded, heavy


def test_every_public_name_is_importable_and_listed():
    import importlib

    import sklearn_uldp

    listing = dir(sklearn_uldp)
    for name in sklearn_uldp.__all__:
        assert name in listing
        value = getattr(sklearn_uldp, name)
        assert value is not None
        module = importlib.import_module("sklearn_uldp")
        assert getattr(module, name) is value  # the same object every time
    exec("from sklearn_uldp import RAPPOR, EMEstimator, DataFramePrivatizer, plotting", {})
    assert isinstance(sklearn_uldp.__version__, str)
    with pytest.raises(AttributeError, match="no attribute 'NotAName'"):
        sklearn_uldp.NotAName  # noqa: B018


def test_every_subpackage_name_resolves():
    # the subpackages' __all__ too (names added on other branches included)
    import importlib

    import sklearn_uldp

    for sub in sorted(sklearn_uldp._SUBPACKAGES):
        module = importlib.import_module(f"sklearn_uldp.{sub}")
        for name in getattr(module, "__all__", ()):
            assert getattr(module, name) is not None, f"sklearn_uldp.{sub}.{name}"


def test_lazy_names_agree_with_all_and_type_checking_block():
    # A public name added to __all__ (or to the TYPE_CHECKING imports) but
    # not to the lazy table would raise AttributeError at first use.
    import ast
    from pathlib import Path

    import sklearn_uldp

    tree = ast.parse(Path(sklearn_uldp.__file__).read_text())
    checked = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for stmt in node.body:
                if isinstance(stmt, ast.ImportFrom):
                    checked |= {alias.asname or alias.name for alias in stmt.names}
    lazy = set(sklearn_uldp._LAZY_NAMES) | set(sklearn_uldp._SUBPACKAGES)
    assert checked == lazy
    assert lazy == set(sklearn_uldp.__all__) | {"__version__"}
