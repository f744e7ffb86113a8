"""Small inputs take the numpy paths: a first fit compiles nothing.

numba compiles a loop at its first call in an install (0.3-2 s each, several
seconds for an estimator's first fit). ``utils._numba.use_compiled`` sends a
job below ``COMPILE_MIN_WORK`` through the loop's numpy twin. These tests
run the package's common first fits with the compiled loops replaced by
traps (a call fails the test), at the default threshold, and check that the
two paths give the same reports and counts (bit for bit) and the same
estimates (to rounding). The suite's conftest sets the threshold to 0; each
test here sets it back.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import sklearn_uldp as su
from sklearn_uldp.mechanisms import (
    _bit_rows,
    _bit_rows_segment,
    _count_mean_sketch,
    _rappor,
    _subset_selection,
)
from sklearn_uldp.numeric import _kernels as numeric_kernels
from sklearn_uldp.utils import _bits, _numba, _sampling

pytestmark = pytest.mark.skipif(not _numba.HAVE_NUMBA, reason="numba is not installed")

DEFAULT_MIN_WORK = 1 << 18
#: The compiled loops of the common first fits (module, attribute).
KERNELS = [
    (_rappor, "_column_sums_loop"),
    (_rappor, "_count_columns_loop"),
    (_rappor, "_fill_csr_indices"),
    (_bit_rows, "_packed_loop"),
    (_bit_rows, "_sparse_loop"),
    (_bit_rows, "_packed_select"),
    (_bit_rows, "_packed_row_sums"),
    (_bit_rows, "_sparse_row_sums"),
    (_bit_rows, "_packed_row_sizes"),
    (_bit_rows_segment, "_segment_sum_log"),
    (_bits, "_masked_row_counts"),
    (_bits, "_fill_csr"),
    (_subset_selection, "bit_matrix_counts"),
    (_count_mean_sketch, "sketch_fill"),
    (_sampling, "_rr_kernel"),
    (_sampling, "_xor_below_kernel"),
    (_sampling, "_or_coin_kernel"),
    (_sampling, "_tie_kernel"),
    (numeric_kernels, "_fused_jit"),
    (numeric_kernels, "_grid_histogram_jit"),
    (numeric_kernels, "_grid_codes_jit"),
    (numeric_kernels, "_band_em_jit"),
    (numeric_kernels, "_band_codes_jit"),
    (numeric_kernels, "_hybrid_jit"),
]


def _trap(name):
    def trap(*args, **kwargs):
        raise AssertionError(f"the compiled loop {name} ran on a small input")

    return trap


@pytest.fixture
def traps(monkeypatch):
    for module, name in KERNELS:
        monkeypatch.setattr(module, name, _trap(name))


def _cases():
    cats = np.arange(20)
    X = np.random.default_rng(0).integers(0, 20, size=(2000, 1))
    values = np.random.default_rng(1).uniform(0, 20, size=(2000, 1))
    return {
        "RR + EM": lambda: su.EMEstimator().fit(
            su.RandomizedResponse(1.0, categories=cats, random_state=0).fit_transform(X)
        ),
        "RAPPOR + EM": lambda: su.EMEstimator().fit(
            su.RAPPOR(1.0, categories=cats, random_state=0).fit_transform(X)
        ),
        "OUE + empirical": lambda: su.EmpiricalEstimator().fit(
            su.RAPPOR(1.0, theta=0.5, categories=cats, random_state=0).fit_transform(X)
        ),
        "uRAP + EM": lambda: su.EMEstimator().fit(
            su.UtilityOptimizedRAPPOR(
                1.0, sensitive=[0, 1], categories=cats, random_state=0
            ).fit_transform(X)
        ),
        "SS + EM": lambda: su.EMEstimator().fit(
            su.SubsetSelection(1.0, categories=cats, random_state=0).fit_transform(X)
        ),
        "CMS + EM": lambda: su.EMEstimator().fit(
            su.CountMeanSketch(1.0, categories=cats, random_state=0).fit_transform(X)
        ),
        "HCMS + EM": lambda: su.EMEstimator().fit(
            su.HadamardCountMeanSketch(1.0, categories=cats, random_state=0).fit_transform(X)
        ),
        "Hybrid + mean": lambda: su.MeanEstimator().fit(
            su.HybridMechanism(1.0, bounds=(0, 20), random_state=0).fit_transform(values)
        ),
        "Square Wave + EMS": lambda: su.SquareWaveEstimator().fit(
            su.SquareWave(1.0, bounds=(0, 20), random_state=0).fit_transform(values)
        ),
    }


CASES = _cases()


@pytest.mark.parametrize("case", list(CASES))
def test_small_first_fit_runs_no_compiled_loop(case, traps, monkeypatch):
    monkeypatch.setattr(_numba, "COMPILE_MIN_WORK", DEFAULT_MIN_WORK)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        CASES[case]()


def test_the_traps_catch_a_compiled_loop(traps, monkeypatch):
    """At threshold 0 the same fit does reach a trap: the test above can fail."""
    monkeypatch.setattr(_numba, "COMPILE_MIN_WORK", 0)
    with warnings.catch_warnings(), pytest.raises(AssertionError, match="compiled loop"):
        warnings.simplefilter("ignore")
        CASES["RAPPOR + EM"]()


@pytest.mark.parametrize("case", list(CASES))
def test_both_paths_give_the_same_results(case, monkeypatch):
    """Reports and counts bit for bit; estimates to rounding."""
    results = {}
    for threshold in (0, DEFAULT_MIN_WORK):
        monkeypatch.setattr(_numba, "COMPILE_MIN_WORK", threshold)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            results[threshold] = CASES[case]()
    compiled, small = results[0], results[DEFAULT_MIN_WORK]
    np.testing.assert_array_equal(
        np.asarray(compiled.statistics_.counts), np.asarray(small.statistics_.counts)
    )
    for name in ("distribution_", "mean_"):
        if hasattr(compiled, name):
            # the EM products' sums, added in another order: rounding only
            np.testing.assert_allclose(getattr(small, name), getattr(compiled, name), rtol=1e-9)


def test_threshold_rule():
    assert _numba.use_compiled(_numba.COMPILE_MIN_WORK) == _numba.HAVE_NUMBA
    assert not _numba.use_compiled(-1)


@pytest.mark.parametrize("theta", [0.5, None])
def test_both_paths_give_the_same_sparse_reports(theta, monkeypatch):
    """The sparse container too: same bits and the same int32 index arrays
    (the numpy path's int64 row pointers made scipy widen the indices)."""
    X = np.random.default_rng(0).integers(0, 20, size=(2000, 1))
    out = {}
    for threshold in (0, DEFAULT_MIN_WORK):
        monkeypatch.setattr(_numba, "COMPILE_MIN_WORK", threshold)
        mech = su.RAPPOR(1.0, theta=theta, categories=np.arange(20), sparse_output=True)
        out[threshold] = mech.set_params(random_state=0).fit_transform(X)
    compiled, small = out[0], out[DEFAULT_MIN_WORK]
    assert small.indices.dtype == compiled.indices.dtype == np.int32
    assert small.indptr.dtype == compiled.indptr.dtype == np.int32
    np.testing.assert_array_equal(small.toarray(), compiled.toarray())
