"""The collector's codes of numeric reports by the grid arithmetic.

``NumericChannel.encode_reports`` (and the one-pass histogram the numeric
estimators use) find a report's code from the channel's output grid by
arithmetic, checked against the table of output values, instead of a
search of the sorted table. These tests hold the two to the same answers:
the same codes for every report a channel can produce, the same refusals
(and messages) for values it cannot, on every channel with a grid.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sklearn_uldp.exceptions import ReportMismatchError
from sklearn_uldp.numeric import (
    DuchiChannel,
    HybridChannel,
    MeanEstimator,
    PiecewiseChannel,
    SquareWaveChannel,
    UtilityOptimizedOneBitChannel,
)
from sklearn_uldp.numeric._kernels import HAVE_NUMBA, grid_encode

CHANNELS = [
    DuchiChannel((0.0, 1.0), 1.0),
    DuchiChannel((-40.0, 120.0), 0.3),
    PiecewiseChannel((0.0, 1.0), 1.0),
    PiecewiseChannel((-3.0, 7.5), 4.0),
    HybridChannel((0.0, 1.0), 1.0),
    HybridChannel((0.0, 100.0), 0.5),  # below eps* ~ 0.61: Duchi's alone
    HybridChannel((-1.0, 1.0), 6.0),
    SquareWaveChannel((0.0, 1.0), 1.0),
    UtilityOptimizedOneBitChannel((0.0, 100.0), 1.0, sensitive=[(0, 18)]),
    UtilityOptimizedOneBitChannel((0.0, 1.0), 2.0, sensitive=[(0.2, 0.3), (0.6, 0.7)]),
]
IDS = [repr(c) for c in CHANNELS]


def _separated(channel):
    """Whether no two codes' values lie within twice the tolerance (the
    one-bit channel's "-" and first grid point may: then the search, and the
    arithmetic, take the nearer, not the one drawn)."""
    values = np.sort(channel.output_values())
    return np.diff(values).min() > 2 * channel._encode_tolerance()


def _reports(channel, n=20_000, seed=0):
    rng = np.random.default_rng(seed)
    values = rng.uniform(channel.low, channel.high, size=n)
    codes = channel.sample(values, rng)
    return channel.output_values()[codes], codes


@pytest.mark.parametrize("channel", CHANNELS, ids=IDS)
def test_codes_of_reports_are_the_searched_codes(channel):
    reports, drawn = _reports(channel)
    codes = channel.encode_reports(reports)
    np.testing.assert_array_equal(codes, channel._searched_codes(reports))
    if _separated(channel):
        np.testing.assert_array_equal(codes, drawn)  # no two codes share a value
    stats = channel._statistics_of(reports)
    np.testing.assert_array_equal(stats.counts, np.bincount(codes, minlength=channel.n_outputs))
    assert stats.n == reports.shape[0]


@pytest.mark.parametrize("channel", CHANNELS, ids=IDS)
def test_every_output_value_gets_the_searched_code(channel):
    """Each code's own report, and just above and below it: the codes the
    search gives (where two codes share a value, the lower one at and below
    it, the higher one above)."""
    table = channel.output_values()
    tol = channel._encode_tolerance()
    for values in (table, table + 0.5 * tol, table - 0.5 * tol):
        codes = channel.encode_reports(values)
        np.testing.assert_array_equal(codes, channel._searched_codes(values))
        np.testing.assert_array_equal(
            channel._statistics_of(values).counts, np.bincount(codes, minlength=table.shape[0])
        )
    if _separated(channel):
        np.testing.assert_array_equal(channel.encode_reports(table), np.arange(table.shape[0]))


@pytest.mark.parametrize("channel", CHANNELS, ids=IDS)
def test_reports_moved_within_the_tolerance_keep_their_code(channel):
    reports, drawn = _reports(channel, n=5000, seed=1)
    tol = channel._encode_tolerance()
    moved = reports + np.random.default_rng(2).uniform(-0.9, 0.9, reports.shape[0]) * tol
    codes = channel.encode_reports(moved)
    np.testing.assert_array_equal(codes, channel._searched_codes(moved))
    if _separated(channel):
        np.testing.assert_array_equal(codes, drawn)


@pytest.mark.parametrize("channel", CHANNELS, ids=IDS)
@pytest.mark.parametrize("kind", ["moved", "nan", "inf", "raw"])
def test_foreign_reports_are_refused_as_before(channel, kind):
    reports, _ = _reports(channel, n=3000, seed=3)
    tampered = reports.copy()
    if kind == "moved":  # off the grid by a third of a cell or 1e-5 of the range
        step = np.diff(np.sort(np.unique(channel.output_values()))).min()
        tampered[[5, 700, 2999]] += max(step / 3.0, 1e-5 * (channel.high - channel.low))
    elif kind == "nan":
        tampered[17] = np.nan
    elif kind == "inf":
        tampered[-1] = -np.inf
    else:  # raw values instead of reports
        tampered = np.random.default_rng(4).uniform(channel.low, channel.high, 3000)
    with pytest.raises(ReportMismatchError) as new:
        channel.encode_reports(tampered)
    with pytest.raises(ReportMismatchError) as one_pass:
        channel._statistics_of(tampered)
    with pytest.raises(ReportMismatchError) as searched:
        channel._searched_codes(tampered)
    assert str(new.value) == str(searched.value) == str(one_pass.value)


@pytest.mark.parametrize("channel", CHANNELS, ids=IDS)
def test_numpy_path_matches_the_compiled_one(channel):
    if not HAVE_NUMBA:
        pytest.skip("numba is not installed")
    reports, drawn = _reports(channel, n=4000, seed=5)
    offset, count = channel._grid_run()
    count = count if count >= 2 else 0
    points = np.setdiff1d(np.arange(channel.n_outputs), np.arange(offset, offset + count))
    table, tol = channel.output_values(), channel._encode_tolerance()
    for histogram in (False, True):
        fast = grid_encode(reports, table, offset, count, points, tol, histogram=histogram)
        slow = grid_encode(
            reports, table, offset, count, points, tol, histogram=histogram, use_numba=False
        )
        np.testing.assert_array_equal(fast, slow)
    bad = reports.copy()
    bad[3] = 0.5 * (table.min() + table.max()) + 0.37 * (table.max() - table.min()) / 1e3
    bad[3] += 0.3 * tol if np.min(np.abs(table - bad[3])) > 2 * tol else 5 * tol
    for use_numba in (True, False):
        assert grid_encode(bad, table, offset, count, points, tol, use_numba=use_numba) is None


@settings(max_examples=60, deadline=None)
@given(
    index=st.integers(0, len(CHANNELS) - 1),
    picks=st.lists(st.integers(0, 2**20), min_size=1, max_size=40),
    shifts=st.lists(
        st.one_of(
            st.just(0.0),
            st.floats(-3.0, 3.0, allow_nan=False),
            st.floats(-1e3, 1e3, allow_nan=False),
        ),
        min_size=40,
        max_size=40,
    ),
)
def test_grid_arithmetic_agrees_with_the_search(index, picks, shifts):
    """Outputs moved by random multiples of the tolerance (or far off): the
    arithmetic accepts exactly what the search accepts, with the same codes."""
    channel = CHANNELS[index]
    table = channel.output_values()
    tol = channel._encode_tolerance()
    values = table[np.asarray(picks) % table.shape[0]] + np.asarray(shifts[: len(picks)]) * tol
    try:
        expected = channel._searched_codes(values)
    except ReportMismatchError as error:
        with pytest.raises(ReportMismatchError) as raised:
            channel.encode_reports(values)
        assert str(raised.value) == str(error)
        return
    np.testing.assert_array_equal(channel.encode_reports(values), expected)
    np.testing.assert_array_equal(
        channel._statistics_of(values).counts, np.bincount(expected, minlength=table.shape[0])
    )


def test_mean_estimator_counts_chunks_like_one_batch():
    channel = HybridChannel((0.0, 10.0), 1.0)
    reports, drawn = _reports(channel, n=30_000, seed=6)
    whole = MeanEstimator(mechanism=channel).fit(reports)
    chunked = MeanEstimator(mechanism=channel)
    for part in np.array_split(reports, 7):
        chunked.partial_fit(part)
    np.testing.assert_array_equal(whole.statistics_.counts, chunked.statistics_.counts)
    np.testing.assert_array_equal(
        whole.statistics_.counts, np.bincount(drawn, minlength=channel.n_outputs)
    )
    assert whole.mean_ == chunked.mean_
