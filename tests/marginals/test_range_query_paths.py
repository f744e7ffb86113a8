"""Range queries' fast paths against their plain twins: the same bins, reports and counts.

The compiled paths (from ``COMPILE_MIN_WORK``; the test suite sets it to 0)
must give exactly what the numpy paths give, and refuse exactly what they
refuse:

* the finest bins of a column, one compiled pass (``_bin_column``) against
  ``bin_codes``, at and next to every edge;
* subset-selection rows written in place into the report table
  (``sample(..., rows=)``) against rows sampled apart and scattered;
* subset-selection report tables counted and checked in one pass
  (``MarginalChannel._count_subsets``) against the split by grid and each
  channel's own count, and against its errors for tampered tables.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from sklearn_uldp.exceptions import ReportMismatchError
from sklearn_uldp.marginals import MarginalPrivatizer, RangeQueryEstimator, RangeQueryPrivatizer
from sklearn_uldp.marginals import _channel as marginal_channel
from sklearn_uldp.marginals._range_channel import _bin_column, bin_codes
from sklearn_uldp.mechanisms._subset_selection import SubsetSelectionChannel
from sklearn_uldp.utils import _numba

needs_numba = pytest.mark.skipif(not _numba.HAVE_NUMBA, reason="numba is not installed")


def _frame(n, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.0, 10.0, n)
    y = np.clip(x + rng.normal(0.0, 2.0, n), 0.0, 10.0)
    return pd.DataFrame({"x": x, "y": y})


def _numpy_paths(monkeypatch):
    monkeypatch.setattr(_numba, "COMPILE_MIN_WORK", 1 << 60)


@needs_numba
@pytest.mark.parametrize(
    "low,high,n_bins", [(0.0, 256.0, 48), (0.0, 5000.0, 120), (-3.3, 7.1, 37), (1e-9, 2e-9, 7)]
)
def test_compiled_bins_are_numpys_bins(low, high, n_bins):
    # At, just below and just above every edge (where a rounding would
    # show), and at random points; a strided column as the privatizer's.
    edges = low + (high - low) * np.arange(n_bins + 1) / n_bins
    below = np.clip(np.nextafter(edges, -np.inf), low, high)
    above = np.clip(np.nextafter(edges, np.inf), low, high)
    points = np.random.default_rng(0).uniform(low, high, 5000)
    values = np.concatenate([edges, below, above, points])
    table = np.zeros((values.size, 2))
    table[:, 1] = values
    out = np.full(values.size, -1, dtype=np.int64)
    _bin_column(table[:, 1], low, high, n_bins, out)
    np.testing.assert_array_equal(out, bin_codes(values, low, high, n_bins))


@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.parametrize("k,d", [(48, 13), (144, 39), (70, 50)])
def test_subset_rows_written_in_place_are_the_rows_sampled_apart(k, d, compiled, monkeypatch):
    if compiled and not _numba.HAVE_NUMBA:
        pytest.skip("numba is not installed")
    if not compiled:
        _numpy_paths(monkeypatch)
    n, n_table = 3000, 7000
    channel = SubsetSelectionChannel(np.arange(k), 1.0, d)
    cells = np.random.default_rng(1).integers(0, k, n)
    rows = np.sort(np.random.default_rng(2).choice(n_table, n, replace=False))
    apart = channel.sample(cells, np.random.default_rng(3), packed=True)
    width = -(-k // 8)
    table = np.zeros((n_table, width + 3), dtype=np.uint8)
    view = table[:, 1 : 1 + width]  # strided, as the report table's words
    assert channel.sample(cells, np.random.default_rng(3), packed=True, out=view, rows=rows) is view
    np.testing.assert_array_equal(table[rows, 1 : 1 + width], apart)
    others = np.ones(n_table, dtype=bool)
    others[rows] = False
    assert not table[others].any() and not table[:, [0, -2, -1]].any()


def test_subset_rows_are_checked():
    channel = SubsetSelectionChannel(np.arange(20), 1.0, 5)
    cells = np.arange(4)
    out = np.zeros((10, 3), dtype=np.uint8)
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="packed=True and out"):
        channel.sample(cells, rng, rows=np.arange(4))
    with pytest.raises(ValueError, match="row indices"):
        channel.sample(cells, rng, packed=True, out=out, rows=np.array([0, 1, 2, 10]))
    with pytest.raises(ValueError, match="row indices"):
        channel.sample(cells, rng, packed=True, out=out, rows=np.arange(3))
    with pytest.raises(ValueError, match="uint8 array"):
        channel.sample(cells, rng, packed=True, out=np.zeros((10, 4), np.uint8), rows=np.arange(4))


def _reports(method="hdg", epsilon=1.0, n=6000, **params):
    if "granularity" not in params:
        params["n_users"] = 10**6  # the grids of a large collection: (48, 12) at eps = 1
    priv = RangeQueryPrivatizer(
        epsilon,
        bounds={"x": (0.0, 10.0), "y": (0.0, 10.0)},
        method=method,
        random_state=0,
        **params,
    )
    reports = priv.fit_transform(_frame(n))
    assert set(priv.oracles_) == {"SS"}
    return priv.channel_, reports


@needs_numba
@pytest.mark.parametrize(
    "method,epsilon,params",
    [
        ("hdg", 1.0, {}),
        ("hdg", 3.0, {"granularity": (120, 24)}),  # nine words for the 2-D grid
        ("tdg", 0.5, {"granularity": 9}),
        ("hdg", 1.0, {"granularity": (8, 4), "mechanism": "SS"}),  # one word
    ],
)
def test_one_pass_counts_are_the_split_counts(method, epsilon, params):
    channel, reports = _reports(method, epsilon, **params)
    grids = channel.grid_channel
    table = grids._report_table(reports.to_numpy())
    counted = grids._count_subsets(table)
    assert counted is not None
    n_rows, bit_counts = counted
    parts = grids._split(table)
    for j, (part, sub) in enumerate(zip(parts, grids.channels, strict=True)):
        stats = sub.statistics(part)
        assert n_rows[j] == stats.n
        np.testing.assert_array_equal(bit_counts[j], stats.counts)
    fast = channel.statistics(channel.encode_reports(reports))
    kept = channel.statistics(channel.encode_reports(reports), keep_reports=True)
    np.testing.assert_array_equal(fast.counts, kept.counts)
    for a, b in zip(fast.extra.parts, kept.extra.parts, strict=True):
        assert a.n == b.n and a.extra is None and b.extra is not None
        np.testing.assert_array_equal(a.counts, b.counts)


def test_one_pass_estimates_are_the_split_estimates(monkeypatch):
    # The whole estimate, compiled count against numpy's split.
    _, reports = _reports()
    queries = [{"x": (1.0, 4.0), "y": (2.0, 9.0)}, {"x": (0.0, 10.0)}, {"y": (3.3, 3.4)}]
    fast = RangeQueryEstimator().fit(reports).query_many(queries)
    _numpy_paths(monkeypatch)
    plain = RangeQueryEstimator().fit(reports).query_many(queries)
    np.testing.assert_array_equal(fast, plain)


@needs_numba
def test_one_pass_count_of_marginal_reports():
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.integers(0, 12, size=(4000, 3)), columns=["a", "b", "c"])
    priv = MarginalPrivatizer(
        1.0, categories={c: list(range(12)) for c in X}, mechanism="SS", random_state=0
    ).fit()
    channel = priv.channel_
    table = channel._report_table(priv.transform(X).to_numpy())
    n_rows, bit_counts = channel._count_subsets(table)
    for j, (part, sub) in enumerate(zip(channel._split(table), channel.channels, strict=True)):
        assert n_rows[j] == sub.statistics(part).n
        np.testing.assert_array_equal(bit_counts[j], sub.statistics(part).counts)


def _tamper(table, kind, channel):
    table = table.copy()
    grid = table[:, 0]
    one_d = np.flatnonzero(grid == 0)[5]
    two_d = np.flatnonzero(grid == len(channel.grid_channel.channels) - 1)[3]
    k1 = channel.grid_channel.channels[0].n_categories
    if kind == "grid":
        table[7, 0] = 3
    elif kind == "negative grid":
        table[7, 0] = -1
    elif kind == "padding bit":  # in the word, past the grid's cells
        table[one_d, 1] |= 1 << k1
    elif kind == "word past width":
        table[one_d, 2] = 1
    elif kind == "bit moved to padding":  # the same number of bits
        word = table[one_d, 1]
        table[one_d, 1] = (word & (word - 1)) | (1 << k1)
    elif kind == "bit moved past width":
        word = table[one_d, 1]
        table[one_d, 1] = word & (word - 1)
        table[one_d, 3] = 1 << 40
    elif kind == "bit cleared":
        word = table[two_d, 1]
        table[two_d, 1] = word & (word - 1)  # one set bit fewer
    elif kind == "bit added":
        word = table[one_d, 1]
        table[one_d, 1] = word | ((word + 1) & ~word)  # one set bit more
    return table


@needs_numba
@pytest.mark.parametrize(
    "kind",
    [
        "grid",
        "negative grid",
        "padding bit",
        "word past width",
        "bit moved to padding",
        "bit moved past width",
        "bit cleared",
        "bit added",
    ],
)
def test_one_pass_refuses_what_the_split_refuses(kind, monkeypatch):
    channel, reports = _reports()
    assert channel.grid_channel.n_words == 3 and (channel.g1, channel.g2) == (48, 12)
    table = _tamper(reports.to_numpy(), kind, channel)
    assert channel.grid_channel._count_subsets(table) is None
    with pytest.raises(ReportMismatchError) as compiled:
        channel.statistics(channel.encode_reports(table))
    _numpy_paths(monkeypatch)
    with pytest.raises(ReportMismatchError) as plain:
        channel.statistics(channel.encode_reports(table))
    assert str(compiled.value) == str(plain.value)


def test_counted_codes_split_when_the_reports_are_kept(monkeypatch):
    # EM keeps each grid's reports: the counted codes split the table then.
    channel, reports = _reports()
    calls = []
    split = marginal_channel.MarginalChannel._split

    def spy(self, table):
        calls.append(table.shape[0])
        return split(self, table)

    monkeypatch.setattr(marginal_channel.MarginalChannel, "_split", spy)
    codes = channel.encode_reports(reports)
    channel.statistics(codes)
    assert calls == ([] if _numba.HAVE_NUMBA else [len(reports)])
    channel.statistics(codes, keep_reports=True)
    assert calls == [len(reports)]


def test_privatize_reads_the_input_without_a_copy_and_never_writes_it():
    frame = _frame(3000)
    frame.iloc[:10, 0] = 12.0  # clipped to the bounds (a warning)
    before = frame.copy()
    priv = RangeQueryPrivatizer(1.0, bounds={"x": (0.0, 10.0), "y": (0.0, 10.0)}, random_state=0)
    with pytest.warns(UserWarning):
        priv.fit_transform(frame)
    pd.testing.assert_frame_equal(frame, before)
    values = priv._values(_frame(100))
    assert not values.flags.writeable


@pytest.mark.parametrize("case", ["within", "clipped", "nan", "inf"])
def test_values_binned_and_checked_in_one_pass_as_checked_first(case, monkeypatch):
    # Large jobs bin the values in the pass that checks them and check them
    # apart (clip, warn, refuse) only when one is not within its bounds:
    # the same reports, warnings and errors as the numpy path.
    clean = _frame(3000)
    frame = clean.copy()
    if case == "clipped":
        frame.iloc[[3, 10], 1] = [-1.0, 11.0]
    elif case == "nan":
        frame.iloc[5, 0] = np.nan
    elif case == "inf":
        frame.iloc[5, 1] = np.inf

    def run():
        priv = RangeQueryPrivatizer(
            1.0, bounds={"x": (0.0, 10.0), "y": (0.0, 10.0)}, granularity=(10, 5), random_state=0
        ).fit(clean)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                out = priv.transform(frame).to_numpy()
            except ValueError as exc:
                out = str(exc)
        return out, [str(w.message) for w in caught]

    compiled, compiled_warnings = run()
    _numpy_paths(monkeypatch)
    plain, plain_warnings = run()
    assert compiled_warnings == plain_warnings
    assert bool(plain_warnings) == (case == "clipped")
    if isinstance(plain, str):
        assert compiled == plain and case in ("nan", "inf")
    else:
        np.testing.assert_array_equal(compiled, plain)


def test_fine_codes_of_values_outside_the_bounds_on_both_paths(monkeypatch):
    channel, _ = _reports()
    values = _frame(2000).to_numpy(copy=True)
    values[[1, 7], [0, 1]] = [-5.0, 20.0]
    compiled = channel.fine_codes(values)
    _numpy_paths(monkeypatch)
    np.testing.assert_array_equal(compiled, channel.fine_codes(values))


@pytest.mark.parametrize("method,granularity", [("hdg", (12, 4)), ("tdg", 6), ("hdg", (9, 9))])
def test_rows_grouped_and_binned_in_one_pass_as_apart(method, granularity, monkeypatch):
    # Three columns (HDG: three 1-D and three 2-D grids): each grid's rows
    # and cells from one counting pass against the comparison passes and
    # gathers; the same reports from the same seed.
    rng = np.random.default_rng(4)
    frame = pd.DataFrame(rng.uniform(0.0, 1.0, size=(5000, 3)), columns=["a", "b", "c"])
    priv = RangeQueryPrivatizer(
        1.0,
        bounds={c: (0.0, 1.0) for c in frame},
        method=method,
        granularity=granularity,
        random_state=0,
    ).fit(frame)
    channel = priv.channel_
    fine = channel.fine_codes(frame.to_numpy())
    assignment = rng.integers(0, channel.n_grids, size=len(frame))
    grouped = channel._group_cells(fine, assignment)
    if _numba.HAVE_NUMBA:
        groups, cells = grouped
        columns = [np.ascontiguousarray(fine[:, j]) for j in range(3)]
        for j, (rows, got) in enumerate(zip(groups, cells, strict=True)):
            np.testing.assert_array_equal(rows, np.flatnonzero(assignment == j))
            np.testing.assert_array_equal(got, channel.grid_cells(j, columns, rows))
    compiled = channel.sample(fine, np.random.default_rng(5), assignment=assignment)
    bad = fine.copy()
    bad[9, 2] = channel.fine_bins
    with pytest.raises(ValueError, match="fine bins") as compiled_error:
        channel.sample(bad, np.random.default_rng(5), assignment=assignment)
    _numpy_paths(monkeypatch)
    assert channel._group_cells(fine, assignment) is None
    np.testing.assert_array_equal(
        compiled, channel.sample(fine, np.random.default_rng(5), assignment=assignment)
    )
    with pytest.raises(ValueError, match="fine bins") as plain_error:
        channel.sample(bad, np.random.default_rng(5), assignment=assignment)
    assert str(compiled_error.value) == str(plain_error.value)


@pytest.mark.parametrize("compiled", [False, True])
def test_narrow_codes_and_rows_give_the_same_reports(compiled, monkeypatch):
    # The privatizer's counting pass hands the sampler uint8/uint16 cells
    # and int32 rows, the bins are uint8: the same reports as with intp.
    if not compiled:
        _numpy_paths(monkeypatch)
    channel = SubsetSelectionChannel(np.arange(144), 1.0, 39)
    cells = np.random.default_rng(1).integers(0, 144, 3000)
    rows = np.sort(np.random.default_rng(2).choice(5000, 3000, replace=False))
    reports = []
    for cell_type, row_type in [(np.intp, np.intp), (np.uint8, np.int32), (np.uint16, np.int32)]:
        table = np.zeros((5000, 18), dtype=np.uint8)
        channel.sample(
            cells.astype(cell_type),
            np.random.default_rng(3),
            packed=True,
            out=table,
            rows=rows.astype(row_type),
        )
        reports.append(table)
    for table in reports[1:]:
        np.testing.assert_array_equal(table, reports[0])
    range_channel, _ = _reports()
    fine = range_channel.fine_codes(_frame(4000).to_numpy())
    assignment = np.random.default_rng(4).integers(0, 3, len(fine))
    wide = range_channel.sample(fine, np.random.default_rng(5), assignment=assignment)
    narrow = range_channel.sample(
        fine.astype(np.uint8), np.random.default_rng(5), assignment=assignment
    )
    np.testing.assert_array_equal(wide, narrow)
