"""The fast paths of the subset-selection and count-mean-sketch oracles.

The compiled kernels (numba) and their numpy fallbacks must draw reports
with the channel's exact distribution and count them exactly: joint
chi-square tests against the channel matrix for both paths, exact checks of
the counting kernel against numpy, and the kernels' corner cases (ties of
the random bytes, exhausted random buffers, complements of large subsets).
"""

from math import comb

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
@pytest.mark.parametrize("k,d", [(48, 13), (37, 5), (144, 39), (5, 2)])
def test_packed_subset_statistics_agree_on_both_paths(kernel, k, d, monkeypatch):
    # Packed rows, contiguous or a strided view (as the range-query
    # reports give them): the one-pass kernel and numpy's passes count the
    # same, and both refuse a row with a bit too many or too few.
    from sklearn_uldp.mechanisms._reports import PackedReports

    monkeypatch.setattr(_subset_selection, "_KERNEL", kernel)
    channel = SubsetSelectionChannel(list(range(k)), 1.0, d)
    packed = channel.sample(np.arange(5_003) % k, np.random.default_rng(0), packed=True)
    wide = np.zeros((packed.shape[0], packed.shape[1] + 3), dtype=np.uint8)
    wide[:, : packed.shape[1]] = packed
    expected = np.unpackbits(packed, axis=1, count=k, bitorder="little").sum(axis=0)
    for data in (packed, wide[:, : packed.shape[1]]):
        stats = channel.statistics(PackedReports(data, k, channel))
        assert np.array_equal(stats.counts, expected) and stats.n == data.shape[0]
    for change in (1, -1):
        bad = packed.copy()
        row = np.unpackbits(bad[17], count=k, bitorder="little")
        row[np.flatnonzero(row == (0 if change > 0 else 1))[0]] = 1 if change > 0 else 0
        bad[17] = np.packbits(row, bitorder="little")
        with pytest.raises(ReportMismatchError, match="1 reports do not hold"):
            channel.statistics(PackedReports(bad, k, channel))


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


def _pair_law(channel, x):
    """P(report) of subset selection with d = 2 or k - 2, by its 2-set.

    The 2-set is the report's set bits (d = 2) or its clear bits (d = k - 2);
    pairs (a, b), a < b, in ``np.triu_indices(k, 1)`` order.
    """
    k, d = channel.n_categories, channel.subset_size
    a, b = np.triu_indices(k, 1)
    in_pair = (a == x) | (b == x)
    contains = in_pair if d == 2 else ~in_pair  # whether x is in the report
    return np.where(
        contains, channel.keep / comb(k - 1, d - 1), (1 - channel.keep) / comb(k - 1, d)
    )


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("packed", [False, True])
@pytest.mark.parametrize("k,d", [(70, 2), (70, 68), (129, 2), (64, 2), (64, 62)])
def test_subset_sampler_joint_distribution_across_words(kernel, packed, k, d, monkeypatch):
    # Past 64 categories the compiled sampler keeps a row's set in several
    # 64-bit words and moves the bits above the row's own category up by
    # one: the whole report (which pair is set, or clear), for own values
    # at and around the words' seams, follows the channel's row.
    monkeypatch.setattr(_subset_selection, "_KERNEL", kernel)
    channel = SubsetSelectionChannel(list(range(k)), 1.0, d)
    index = -np.ones((k, k), dtype=np.int64)
    a, b = np.triu_indices(k, 1)
    index[a, b] = np.arange(a.size)
    n = 150_000
    for x in sorted({0, 62, 63, 64, k - 1} & set(range(k))):
        reports = channel.sample(np.full(n, x), np.random.default_rng(x), packed=packed)
        if packed:
            assert not np.unpackbits(reports, axis=1, bitorder="little")[:, k:].any()
            reports = np.unpackbits(reports, axis=1, count=k, bitorder="little")
        assert (reports.sum(axis=1) == d).all()
        rows, cols = np.nonzero(reports if d == 2 else 1 - reports)
        pairs = cols.reshape(n, 2)
        counts = np.bincount(index[pairs[:, 0], pairs[:, 1]], minlength=a.size)
        assert chi_square_pvalue(counts, _pair_law(channel, x)) > 1e-4


def test_a_wrong_seam_fails_the_multiword_sampler_test(monkeypatch):
    # A sampler that draws the others correctly but puts the own bit one
    # place off past the first word (an off-by-one of the insertion) keeps
    # the sizes; the joint test across words rejects it.
    real = _subset_selection.SubsetSelectionChannel.sample

    def wrong(self, codes, rng, **kwargs):
        out = np.asarray(real(self, codes, rng, **kwargs)).copy()
        rows = np.flatnonzero(np.asarray(codes) == 64)
        out[rows, 64], out[rows, 65] = out[rows, 65].copy(), out[rows, 64].copy()
        return out

    monkeypatch.setattr(_subset_selection.SubsetSelectionChannel, "sample", wrong)
    with pytest.raises(AssertionError):
        test_subset_sampler_joint_distribution_across_words(KERNELS[-1], False, 70, 2, monkeypatch)


@needs_numba
@pytest.mark.parametrize("k", [20, 150])
@pytest.mark.parametrize("packed", [False, True])
def test_floyd_kernel_restarts_a_row_that_runs_out_of_words(k, packed):
    # No spare words and a word that is always rejected: the rows before it
    # complete, its row is left unwritten and its index returned; a call
    # from there with spares completes it.
    top = 3
    out = np.zeros((4, -(-k // 8) if packed else k), dtype=np.uint8)
    codes = np.array([0, 5, k - 1, 7], dtype=np.intp)
    include = np.array([False, False, False, False])
    words = np.full((4, top), 1 << 10, dtype=np.uint16)
    words[2, 0] = 0  # low product 0 < 2^16 mod (j + 1): rejected
    mask = np.empty(-(-k // 8), dtype=np.uint64)  # the kernel's scratch
    args = (out, _subset_selection._NO_TARGETS, codes, include, top, k, words)
    done = _subset_selection._floyd_rows(*args, np.zeros(0, np.uint16), 16, 0, mask)
    assert done == 2
    bits = np.unpackbits(out, axis=1, count=k, bitorder="little") if packed else out
    assert (bits[:2].sum(axis=1) == top).all() and not bits[2:].any()
    assert bits[0, 0] == 0 and bits[1, 5] == 0
    spare = np.full(5, 1 << 12, dtype=np.uint16)
    assert _subset_selection._floyd_rows(*args, spare, 16, 2, mask) == 4
    bits = np.unpackbits(out, axis=1, count=k, bitorder="little") if packed else out
    assert (bits.sum(axis=1) == top).all() and bits[2, k - 1] == 0 and bits[3, 7] == 0


@pytest.mark.parametrize("k,d", [(48, 13), (7, 3), (144, 39), (70, 68), (5000, 2)])
@pytest.mark.parametrize("packed", [False, True])
def test_both_subset_paths_give_the_same_reports(k, d, packed, monkeypatch):
    # numpy's steps (small jobs, or no numba) and the compiled loop read the
    # same words the same way, rejections and fresh spare batches included
    # (few spares here, so that rows run out of them): the same reports.
    if not _oracle_kernels.HAVE_NUMBA:
        pytest.skip("numba is not installed")
    layout = _subset_selection._draw_layout
    monkeypatch.setattr(_subset_selection, "_draw_layout", lambda *args: (*layout(*args)[:5], 2))
    channel = SubsetSelectionChannel(list(range(k)), 1.0, d)
    codes = np.arange(20_011) % k
    reports = {}
    for kernel in ("numpy", "numba"):
        monkeypatch.setattr(_subset_selection, "_KERNEL", kernel)
        reports[kernel] = channel.sample(codes, np.random.default_rng(k), packed=packed)
    assert np.array_equal(reports["numpy"], reports["numba"])


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


@needs_numba
def test_a_small_subset_job_compiles_nothing(monkeypatch):
    # Below COMPILE_MIN_WORK random integers the sampler takes numpy's
    # steps (a first privatize of a few users loads no compiled loop); from
    # there on, the compiled one.
    from sklearn_uldp.utils import _numba

    monkeypatch.setattr(_numba, "COMPILE_MIN_WORK", 1 << 18)
    calls = []
    real = _subset_selection._fill_subsets_numba

    def spy(*args, **kwargs):
        calls.append(args[0].shape[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(_subset_selection, "_fill_subsets_numba", spy)
    channel = SubsetSelectionChannel(list(range(48)), 1.0, 13)
    for packed in (False, True):
        channel.sample(np.arange(1000) % 48, np.random.default_rng(0), packed=packed)
    assert calls == []
    channel.sample(np.arange(30_000) % 48, np.random.default_rng(0), packed=True)
    assert sum(calls) == 30_000


@pytest.mark.parametrize("kernel", KERNELS)
def test_packed_subset_rows_written_into_a_strided_out(kernel, monkeypatch):
    # The range-query privatizer has the sampler write packed rows into its
    # report words (a strided view): the same rows as a fresh array, from
    # the same stream; a wrong shape or dtype is refused.
    monkeypatch.setattr(_subset_selection, "_KERNEL", kernel)
    k, n = 144, 5_000
    channel = SubsetSelectionChannel(list(range(k)), 1.0, 39)
    codes = np.arange(n) % k
    fresh = channel.sample(codes, np.random.default_rng(3), packed=True)
    words = np.zeros((n, 3), dtype="<i8")
    out = words.view(np.uint8)[:, :18]
    assert channel.sample(codes, np.random.default_rng(3), packed=True, out=out) is out
    assert np.array_equal(out, fresh) and not words.view(np.uint8)[:, 18:].any()
    for bad in (np.zeros((n, 17), np.uint8), np.zeros((n, 18), np.int8)):
        with pytest.raises(ValueError, match="out must be"):
            channel.sample(codes, np.random.default_rng(3), packed=True, out=bad)
