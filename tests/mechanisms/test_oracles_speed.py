"""The fast paths of the subset-selection and count-mean-sketch oracles.

The compiled kernels (numba) and their numpy fallbacks must draw reports
with the channel's exact distribution and count them exactly: joint
chi-square tests against the channel matrix for both paths, exact checks of
the counting kernel against numpy, and the kernels' corner cases (ties of
the random bytes, exhausted random buffers, complements of large subsets).
"""

import numpy as np
import pytest
from _channels import CountingGenerator, output_index
from _chisquare import chi_square_pvalue

# The random-bit counter shared with the subset-selection sampler tests.
from sklearn_uldp import EmpiricalEstimator
from sklearn_uldp.exceptions import ReportMismatchError
from sklearn_uldp.mechanisms import _count_mean_sketch, _oracle_kernels, _subset_selection
from sklearn_uldp.mechanisms._count_mean_sketch import CountMeanSketch, CountMeanSketchChannel
from sklearn_uldp.mechanisms._subset_selection import SubsetSelection, SubsetSelectionChannel

KERNELS = ["numpy"] + (["numba"] if _oracle_kernels.HAVE_NUMBA else [])
needs_numba = pytest.mark.skipif(not _oracle_kernels.HAVE_NUMBA, reason="numba is not installed")


# ------------------------------------------------------- counting kernel
@needs_numba
@pytest.mark.parametrize("k", [8, 9, 15, 100, 1000, 2100])
@pytest.mark.parametrize("density", [0.05, 0.5, 1.0])
def test_bit_matrix_counts_match_numpy(k, density):
    # Dense rows sum past 255 (the bytes of a word sum must not wrap), and
    # more than 255 groups of 8 rows pass through the column accumulators.
    rng = np.random.default_rng(k)
    n = 8 * 300
    bits = (rng.random((n, k)) < density).astype(np.uint8)
    counts = np.zeros(k, dtype=np.int64)
    sizes = np.empty(n, dtype=np.int64)
    seen = _oracle_kernels.bit_matrix_counts(
        bits.reshape(-1).view(np.uint64), k, n // 8, counts, sizes
    )
    assert np.array_equal(counts, bits.sum(axis=0))
    assert np.array_equal(sizes, bits.sum(axis=1))
    assert int(seen) & ~0x0101010101010101 == 0
    bits[7, 3] = 2
    seen = _oracle_kernels.bit_matrix_counts(
        bits.reshape(-1).view(np.uint64), k, n // 8, counts, sizes
    )
    assert int(seen) & ~0x0101010101010101 != 0


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("k,d", [(100, 1), (37, 5), (300, 120), (5, 2)])
def test_subset_statistics_agree_on_both_paths(kernel, k, d, monkeypatch):
    monkeypatch.setattr(_subset_selection, "_KERNEL", kernel)
    channel = SubsetSelectionChannel(list(range(k)), 1.0, d)
    # 8 m + 3 rows: whole groups for the kernel and a tail for numpy.
    reports = channel.sample(np.arange(8_003) % k, np.random.default_rng(0))
    stats = channel.statistics(channel.encode_reports(reports))
    assert np.array_equal(stats.counts, reports.sum(axis=0))
    assert stats.n == reports.shape[0]
    # A Fortran-ordered copy takes the numpy path; the counts are the same.
    fortran = np.asfortranarray(reports)
    assert np.array_equal(channel.statistics(fortran).counts, stats.counts)
    # A row with one bit too many, in a whole group or in the tail, is refused.
    for row in (5, reports.shape[0] - 1):
        bad = np.array(reports)
        bad[row, np.flatnonzero(bad[row] == 0)[0]] = 1
        with pytest.raises(ReportMismatchError, match="1 reports do not hold"):
            channel.statistics(channel.encode_reports(bad))


@pytest.mark.parametrize("kernel", KERNELS)
def test_subset_reports_must_be_bits_on_both_paths(kernel, monkeypatch):
    # A 2 with one 1 fewer keeps the row's sum: the bytes themselves are checked.
    monkeypatch.setattr(_subset_selection, "_KERNEL", kernel)
    mech = SubsetSelection(1.0, subset_size=3, categories=range(40), random_state=0)
    reports = np.array(mech.fit_transform(np.arange(800).reshape(-1, 1) % 40))
    ones = np.flatnonzero(reports[9])
    reports[9, ones[0]] = 2
    reports[9, ones[1]] = 0
    with pytest.raises(ReportMismatchError, match="only 0 and 1"):
        EmpiricalEstimator(mechanism=mech).fit(reports)
    if kernel == "numba":  # the kernel checks them on its own pass, too
        with pytest.raises(ReportMismatchError, match="0/1 bits"):
            mech.channel_.statistics(reports)


# ------------------------------------------------- subset sampler (Floyd)
@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("k,d", [(11, 6), (12, 9), (10, 8)])
def test_subset_sampler_complement_joint_distribution(kernel, k, d, monkeypatch):
    # Subsets of more than half of the others are drawn as the complement of
    # the ones left out (for one or both of r = d - 1 and r = d): the whole
    # report still follows the channel's row.
    monkeypatch.setattr(_subset_selection, "_KERNEL", kernel)
    channel = SubsetSelectionChannel(list(range(k)), 1.0, d)
    Q = channel.matrix()
    for x in (0, k // 2, k - 1):
        reports = channel.sample(np.full(60_000, x), np.random.default_rng(x))
        assert (reports.sum(axis=1) == d).all()
        counts = np.bincount(output_index(channel, reports), minlength=Q.shape[1])
        assert chi_square_pvalue(counts, Q[x]) > 1e-4


@pytest.mark.parametrize("kernel", KERNELS)
def test_large_subsets_draw_only_the_complement(kernel, monkeypatch):
    # With d close to k, a report costs about k - d random integers, not d.
    monkeypatch.setattr(_subset_selection, "_KERNEL", kernel)
    k, d, n = 400, 390, 2000
    channel = SubsetSelectionChannel(list(range(k)), 1.0, d)
    rng = CountingGenerator(0)
    bits = channel.sample(np.arange(n) % k, rng)
    assert (bits.sum(axis=1) == d).all()
    assert rng.bits <= 64 * n * (k - d + 2)


@needs_numba
def test_floyd_kernel_restarts_a_row_that_runs_out_of_words():
    # No spare words and a word that is always rejected: the row is left
    # cleared and its index returned, the rows before it complete.
    k, top = 20, 3
    out = np.zeros((4, k), dtype=np.uint8)
    codes = np.zeros(4, dtype=np.intp)
    need = np.full(4, top)
    words = np.full((4, top), 1 << 10, dtype=np.uint16)
    words[2, 0] = 0  # low product 0 < 2^16 mod (j + 1): rejected
    spare = np.zeros(0, dtype=np.uint16)
    done = _subset_selection._floyd_loop(out, codes, need, words, spare, 16, 0, k)
    assert done == 2
    assert (out[:2].sum(axis=1) == top).all() and not out[2:].any()


# ---------------------------------------------------- count-mean sketch
@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("m,h,eps", [(3, 2, 1.0), (9, 2, 0.5), (8, 3, 4.0)])
def test_cms_sampler_joint_distribution(kernel, m, h, eps, monkeypatch):
    # m = 9 spans two 8-byte words of random bytes per report.
    monkeypatch.setattr(_count_mean_sketch, "_KERNEL", kernel)
    channel = CountMeanSketchChannel(list(range(5)), eps, n_buckets=m, n_hashes=h)
    Q = channel.matrix()
    for x in (0, 3):
        reports = channel.sample(np.full(120_000, x), np.random.default_rng(x))
        assert reports.dtype == np.uint8 and reports.shape == (120_000, m + 1)
        counts = np.bincount(output_index(channel, reports), minlength=Q.shape[1])
        assert chi_square_pvalue(counts, Q[x]) > 1e-4


@pytest.mark.parametrize("kernel", KERNELS)
def test_cms_sampler_bit_rates_and_wide_hash_index(kernel, monkeypatch):
    # h > 256: uint16 rows; every bit's rate is the channel's (5 sigma).
    monkeypatch.setattr(_count_mean_sketch, "_KERNEL", kernel)
    n, m = 200_000, 40
    mech = CountMeanSketch(1.0, n_buckets=m, n_hashes=300, categories=range(7), random_state=0)
    reports = np.asarray(mech.fit_transform(np.full((n, 1), 2)))
    channel = mech.channel_
    assert reports.dtype == np.uint16
    j, bits = reports[:, 0].astype(np.int64), reports[:, 1:]
    assert j.max() < 300 and np.bincount(j, minlength=300).min() > 0
    own = bits[np.arange(n), channel.hash(j, np.full(n, 2))]
    f = channel._flip
    assert abs(own.mean() - (1 - f)) < 5 * np.sqrt(f * (1 - f) / n)
    other = (bits.sum(axis=1) - own).sum() / (n * (m - 1))
    assert abs(other - f) < 5 * np.sqrt(f * (1 - f) / (n * (m - 1)))


@needs_numba
def test_sketch_kernel_resolves_ties_and_restarts():
    # Every byte ties with the threshold: each bit is its tie uniform < fraction,
    # in order; a row that runs out of tie uniforms is returned, and a call
    # from that row with fresh uniforms redoes it from the same bytes.
    m, threshold, fraction = 10, 77, 0.5
    words = np.full((3, 2), int.from_bytes(bytes([threshold] * 8), "little"), dtype=np.uint64)
    ties = np.linspace(0.0, 0.95, 2 * m)  # enough for two rows
    out = np.full((3, m + 1), 9, dtype=np.uint8)
    hashes = np.array([4, 5, 6])
    buckets = np.array([0, 9, 3])
    own = np.array([False, True, True])
    done = _oracle_kernels.sketch_fill(
        out, words, threshold, ties, fraction, hashes, buckets, own, 0
    )
    assert done == 2
    expected = (ties < fraction).astype(np.uint8).reshape(2, m)
    expected[0, 0], expected[1, 9] = 0, 1
    assert np.array_equal(out[:2, 1:], expected)
    assert out[:2, 0].tolist() == [4, 5]
    first_rows = out[:2].copy()
    more = np.linspace(0.96, 0.0, m)
    done = _oracle_kernels.sketch_fill(
        out, words, threshold, more, fraction, hashes, buckets, own, done
    )
    assert done == 3
    assert np.array_equal(out[:2], first_rows)
    last = (more < fraction).astype(np.uint8)
    last[3] = 1
    assert np.array_equal(out[2, 1:], last) and out[2, 0] == 6


@needs_numba
@pytest.mark.parametrize("m", [3, 9, 64, 256])
@pytest.mark.parametrize("n_ties", [0, 5, 10_000])
def test_sketch_numpy_twin_writes_the_compiled_rows(m, n_ties):
    # Same bytes and uniforms: the same rows bit for bit and the same row to
    # resume from when the uniforms run out (threshold 130 ties often; 0 or 5
    # uniforms run out in the first rows).
    rng = np.random.default_rng(m)
    rows, n_words = 300, -(-m // 8)
    words = rng.integers(0, 2**63, size=(rows, n_words), dtype=np.uint64)
    words[::7] = int.from_bytes(bytes([130] * 8), "little")  # rows of ties only
    ties = rng.random(n_ties)
    hashes = rng.integers(0, 200, rows)
    buckets = rng.integers(0, m, rows)
    own = rng.random(rows) < 0.5
    results = []
    for fill in (_oracle_kernels.sketch_fill, _oracle_kernels.sketch_fill_numpy):
        out = np.full((rows, m + 1), 9, dtype=np.uint8)
        done = fill(out, words, 130, ties, 0.3, hashes, buckets, own, 2)
        results.append((done, out[:done].copy()))
    assert results[0][0] == results[1][0]
    assert np.array_equal(results[0][1], results[1][1])


@needs_numba
@pytest.mark.parametrize("m,h", [(9, 2), (256, 300)])
def test_small_cms_jobs_take_the_numpy_twin_with_the_same_reports(m, h, monkeypatch):
    # Below COMPILE_MIN_WORK reports the sampler compiles nothing (a trap in
    # place of the compiled pass) and its reports are those of the compiled
    # pass for the same seed.
    from sklearn_uldp.utils import _numba

    channel = CountMeanSketchChannel(list(range(30)), 1.0, n_buckets=m, n_hashes=h)
    codes = np.random.default_rng(1).integers(0, 30, 20_000)
    compiled = channel.sample(codes, np.random.default_rng(2))  # conftest: threshold 0

    def trap(*args):
        raise AssertionError("the compiled sketch pass ran on a small job")

    monkeypatch.setattr(_numba, "COMPILE_MIN_WORK", 1 << 18)
    monkeypatch.setattr(_count_mean_sketch, "sketch_fill", trap)
    small = channel.sample(codes, np.random.default_rng(2))
    assert small.dtype == compiled.dtype and np.array_equal(small, compiled)


def _wrong_twin(out, words, threshold, ties, fraction, hashes, buckets, own, start):
    # The own bit written one bucket further: every bit keeps a valid rate,
    # but the joint law of (j, v) is not the channel's.
    shifted = (buckets + 1) % (out.shape[1] - 1)
    return _oracle_kernels.sketch_fill_numpy(
        out, words, threshold, ties, fraction, hashes, shifted, own, start
    )


def test_a_wrong_numpy_twin_fails_the_cms_sampler_test(monkeypatch):
    monkeypatch.setattr(_count_mean_sketch, "_KERNEL", "numpy")
    monkeypatch.setattr(_count_mean_sketch, "sketch_fill_numpy", _wrong_twin)
    channel = CountMeanSketchChannel(list(range(5)), 1.0, n_buckets=3, n_hashes=2)
    Q = channel.matrix()
    reports = channel.sample(np.full(120_000, 3), np.random.default_rng(3))
    counts = np.bincount(output_index(channel, reports), minlength=Q.shape[1])
    assert chi_square_pvalue(counts, Q[3]) < 1e-6


#: The CMS sampler in an interpreter that cannot import numba, at the
#: package's default threshold: counts of the channel's outputs for x = 0, 3.
_WITHOUT_NUMBA = """
import sys
sys.modules["numba"] = None
import numpy as np
from sklearn_uldp.mechanisms import _count_mean_sketch
from sklearn_uldp.mechanisms._count_mean_sketch import CountMeanSketchChannel
assert _count_mean_sketch._KERNEL == "numpy"
channel = CountMeanSketchChannel(list(range(5)), 1.0, n_buckets=9, n_hashes=2)
for x in (0, 3):
    reports = channel.sample(np.full(120_000, x), np.random.default_rng(x))
    j = reports[:, 0].astype(np.int64)
    v = (reports[:, 1:].astype(np.int64) << np.arange(9)).sum(axis=1)
    print(" ".join(map(str, np.bincount(j * 2**9 + v, minlength=2 * 2**9))))
"""


def test_cms_sampler_without_numba_matches_the_exact_channel():
    import subprocess
    import sys

    from _repo import subprocess_env

    proc = subprocess.run(
        [sys.executable, "-c", _WITHOUT_NUMBA],
        capture_output=True,
        text=True,
        timeout=300,
        env=subprocess_env(),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    channel = CountMeanSketchChannel(list(range(5)), 1.0, n_buckets=9, n_hashes=2)
    Q = channel.matrix()
    lines = proc.stdout.strip().split("\n")
    for x, line in zip((0, 3), lines, strict=True):
        counts = np.array(line.split(), dtype=np.int64)
        assert counts.sum() == 120_000
        assert chi_square_pvalue(counts, Q[x]) > 1e-4


# ------------------------------------------------------------ allocation
@pytest.mark.parametrize("zeros", [True, False])
def test_report_array_is_a_plain_numpy_array(zeros):
    # A memory map of the standard library (no huge-page request, no
    # process-wide numpy switch touched), viewed as a writable numpy array.
    try:
        from numpy._core import multiarray
    except ImportError:  # numpy < 2
        from numpy.core import multiarray

    before = multiarray._get_madvise_hugepage()
    big = _oracle_kernels.report_array((1 << 13, 1 << 13), np.uint8, zeros=zeros)  # 64 MB
    assert multiarray._get_madvise_hugepage() == before
    assert big.shape == (1 << 13, 1 << 13) and big.dtype == np.uint8
    assert big.flags.c_contiguous and big.flags.writeable
    if zeros:
        assert not big[:: 1 << 10].any() and not big[-1].any()
    big[-1, -1] = 1
    assert big[-1, -1] == 1
    view = big[-1]
    del big  # the map lives as long as a view of it
    assert view[-1] == 1
    small = _oracle_kernels.report_array((10, 3), np.int64, zeros=True)
    assert small.flags.owndata and not small.any()
