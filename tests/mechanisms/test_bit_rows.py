"""The compact store of bit-vector reports behind the exact EM likelihood."""

import numpy as np
import pytest
import scipy.sparse as sp
from _channels import random_bits

from sklearn_uldp import RAPPOR, EMEstimator, UtilityOptimizedRAPPOR
from sklearn_uldp.mechanisms import _bit_rows
from sklearn_uldp.mechanisms._bit_rows import BitRows


@pytest.fixture
def small_blocks(bit_row_blocks):
    # Tiny blocks so that a few hundred rows span many blocks and gather steps.
    bit_row_blocks(37, nnz=400, gather_bytes=50)


def reference_terms(bits, A, b):
    D = A + bits @ b
    return (1.0 / D).sum(), np.log(D).sum(), bits.T @ (1.0 / D)


# Pinned floats (tests/README.md): tolerances that hold on any processor.
# The store's EM terms against dense products sum over the reports in another
# order: 1e-10 relative. Threads, chunks and restrictions that the store
# makes bit-identical are compared exactly.
@pytest.mark.pinned
@pytest.mark.usefixtures("small_blocks")
@pytest.mark.parametrize("density", [0.05, 0.5])  # sparse and packed layouts
@pytest.mark.parametrize("k", [1, 7, 8, 19])  # partial bytes included
def test_em_terms_match_dense_products(density, k):
    bits = random_bits(300, k, density)
    b = np.random.default_rng(1).random(k)
    store = BitRows(k, density)
    assert store.packed == (density >= _bit_rows._PACKED_DENSITY)
    store.append_dense(bits)
    assert store.n_rows == 300
    np.testing.assert_array_equal(store.row_sizes(), bits.sum(axis=1))
    got = store.em_terms(0.7, b)
    want = reference_terms(bits.astype(float), 0.7, b)
    for x, y in zip(got, want, strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-10)
    # A store that swaps two bits gives other products (the test can fail).
    bits[0, 0] ^= 1
    other = BitRows(k, density)
    other.append_dense(bits)
    assert not np.allclose(other.em_terms(0.7, b)[2], got[2], rtol=1e-10)


@pytest.mark.usefixtures("small_blocks")
@pytest.mark.parametrize("density", [0.05, 0.5])
def test_chunked_appends_and_sums_are_bit_identical(density):
    k = 23
    bits = random_bits(500, k, density, seed=2)
    b = np.random.default_rng(3).random(k)
    whole = BitRows(k, density)
    whole.append_dense(bits)
    # the same rows through dense chunks, CSR chunks and sums of stores
    cuts = [0, 1, 2, 40, 41, 200, 333, 500]
    parts = []
    for i, (lo, hi) in enumerate(zip(cuts[:-1], cuts[1:], strict=True)):
        part = BitRows(k, density)
        if i % 2:
            csr = sp.csr_array(bits[lo:hi])
            part.append_sparse(csr.indptr.astype(np.int64), csr.indices)
        else:
            part.append_dense(bits[lo:hi])
        parts.append(part)
    total = parts[0]
    for part in parts[1:]:
        total = total + part
    assert total.n_rows == whole.n_rows == 500
    for x, y in zip(total.em_terms(1.3, b), whole.em_terms(1.3, b), strict=True):
        np.testing.assert_array_equal(x, y)
    # adding does not change its operands
    assert parts[0].n_rows == 1 and parts[1].n_rows == 1


def test_stores_of_different_layouts_do_not_add():
    with pytest.raises(ValueError, match="layouts"):
        BitRows(5, 0.05) + BitRows(5, 0.5)


def test_empty_store():
    store = BitRows(4, 0.5)
    assert store.n_rows == 0 and store.nbytes == 0
    sum_inv, sum_log, t = store.em_terms(1.0, np.ones(4))
    assert (sum_inv, sum_log) == (0.0, 0.0) and not t.any()


@pytest.mark.parametrize("epsilon, packed", [(0.5, True), (4.0, False)])
def test_oue_reports_use_the_compact_layout(epsilon, packed):
    """OUE at small epsilon is dense (packed, k/8 bytes a report); at large
    epsilon sparse (2-byte indices); either is far below a float CSR matrix."""
    cats = list(range(200))
    X = np.random.default_rng(0).integers(0, 200, size=(3000, 1))
    mech = RAPPOR(epsilon=epsilon, theta=0.5, categories=cats, random_state=0).fit(X)
    R = mech.transform(X)
    stats = mech.channel_.statistics(mech.channel_.encode_reports(R), keep_reports=True)
    store = stats.extra
    assert store.packed is packed
    nnz = int(R.sum())
    assert store.nbytes < 0.25 * 12 * nnz  # scipy CSR: 12 bytes per set bit
    if packed:
        assert store.nbytes <= 3000 * 25 + 8 * 3000  # 200 bits = 25 bytes a row
    # and EM on it reaches its duality-gap certificate
    em = EMEstimator().fit(R)
    assert em.converged_ and em.duality_gap_ <= em.tol_


def test_urap_store_keeps_only_protected_rows():
    cats = list("abcdefgh")
    X = np.random.default_rng(0).choice(cats, size=(4000, 1))
    mech = UtilityOptimizedRAPPOR(
        epsilon=1.0, sensitive=["a", "b", "c"], categories=cats, random_state=0
    ).fit(X)
    R = mech.transform(X)
    store = mech.channel_.statistics(R, keep_reports=True).extra
    protected = ~R[:, 3:].any(axis=1)
    assert store.n_cols == 3 and store.n_rows == int(protected.sum())
    np.testing.assert_array_equal(store.row_sizes(), R[protected, :3].sum(axis=1))


@pytest.mark.usefixtures("small_blocks")
@pytest.mark.parametrize("density", [0.05, 0.5])
def test_threads_give_bit_identical_terms(density):
    bits = random_bits(400, 30, density, seed=4)
    store = BitRows(30, density)
    store.append_dense(bits)
    b = np.random.default_rng(5).random(30)
    serial = store.em_terms(0.5, b)
    for x, y in zip(store.em_terms(0.5, b, n_jobs=2), serial, strict=True):
        np.testing.assert_array_equal(x, y)


@pytest.mark.usefixtures("small_blocks")
@pytest.mark.parametrize("epsilon", [0.5, 3.0])
def test_em_with_threads_equals_serial_em(epsilon):
    cats = list(range(20))
    X = np.random.default_rng(0).integers(0, 20, size=(2000, 1))
    R = RAPPOR(epsilon, theta=0.5, categories=cats, random_state=0).fit(X).transform(X)
    serial = EMEstimator().fit(R)
    threaded = EMEstimator(n_jobs=2).fit(R)
    assert len(serial.statistics_.extra._all_blocks()) > 2
    np.testing.assert_array_equal(threaded.distribution_, serial.distribution_)
    assert threaded.n_iter_ == serial.n_iter_


@pytest.mark.pinned
@pytest.mark.usefixtures("small_blocks")
@pytest.mark.parametrize("density", [0.05, 0.5])  # sparse and packed layouts
@pytest.mark.parametrize(
    "columns", [[], [4], [0, 3, 5, 18], list(range(19)), [18, 2, 7]]
)  # any order
def test_restricted_store_is_the_store_on_those_columns(density, columns):
    k = 19
    bits = random_bits(300, k, density, seed=4)
    store = BitRows(k, density)
    store.append_dense(bits[:250])
    store.append_dense(bits[250:])  # a partial last block too
    restricted = store.restrict(columns)
    assert (restricted.n_cols, restricted.n_rows) == (len(columns), 300)
    assert restricted.packed == store.packed
    np.testing.assert_array_equal(restricted.row_sizes(), bits[:, columns].sum(axis=1))
    b = np.random.default_rng(5).random(len(columns))
    got = restricted.em_terms(0.7, b)
    want = reference_terms(bits[:, columns].astype(float), 0.7, b)
    for x, y in zip(got, want, strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-10)
    # ... which are the full store's products with b = 0 off those columns
    full_b = np.zeros(k)
    full_b[columns] = b
    full = store.em_terms(0.7, full_b)
    np.testing.assert_allclose(got[0], full[0], rtol=1e-10)
    np.testing.assert_allclose(got[2], full[2][columns], rtol=1e-10)
    # the original store is untouched, and threads restrict alike
    np.testing.assert_array_equal(store.row_sizes(), bits.sum(axis=1))
    threaded = store.restrict(columns, n_jobs=2).em_terms(0.7, b)
    for x, y in zip(threaded, got, strict=True):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("n_bytes", [1, 2, 3])
@pytest.mark.parametrize("weighted", [False, True])
def test_distinct_keys_of_short_rows_are_those_of_a_sort(n_bytes, weighted):
    # Rows of up to 16 columns are told apart by a count per possible key;
    # longer ones by a sort. Both must give np.unique's keys and the
    # multiplicities in the same order, bit for bit (zero weights included).
    rng = np.random.default_rng(n_bytes)
    rows = rng.integers(0, 256, size=(3000, n_bytes), dtype=np.uint8)
    rows[:, -1] &= 0x07  # partial last byte: most possible keys never occur
    keys = _bit_rows._row_keys(rows)
    weights = None
    if weighted:
        weights = rng.random(keys.size)
        weights[::7] = 0.0
    got_keys, got_counts = _bit_rows._distinct_keys(keys, n_bytes, weights)
    unique, inverse = np.unique(keys, return_inverse=True)
    expected = np.bincount(inverse.ravel(), weights=weights, minlength=unique.size)
    assert got_keys.dtype == unique.dtype
    np.testing.assert_array_equal(got_keys, unique)
    assert got_counts.dtype == expected.dtype
    np.testing.assert_array_equal(got_counts, expected)
