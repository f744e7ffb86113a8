"""SMP's one read of each column (issue 36): the check of every value and the
sampled rows' reports come from one conversion and one encoding.

``BaseMechanism._sampled_reports`` must give, bit for bit, what ``transform``
of the sampled rows gives (the same hooks and seeded stream), and every value
of every column is still checked, sampled or not, in ``fit_transform`` (by the
fit) and in ``transform``.
"""

import copy
import warnings

import numpy as np
import pandas as pd
import pytest
from _chisquare import chi_square_pvalue
from _examples import BINARY, categorical_mechanisms
from hypothesis import given, settings
from hypothesis import strategies as st

from sklearn_uldp import RAPPOR, EMEstimator, RandomizedResponse, UtilityOptimizedRR
from sklearn_uldp.compose import DataFramePrivatizer
from sklearn_uldp.mechanisms import BaseMechanism

CATS = ["a", "b", "c", "d"]


def _direct_cases():
    """The registered mechanisms that privatize through BaseMechanism.transform."""
    out = {}
    for name, (mech, _) in categorical_mechanisms().items():
        if isinstance(mech, BaseMechanism) and type(mech).transform is BaseMechanism.transform:
            out[name] = mech
    return out


DIRECT = _direct_cases()


def test_most_families_take_the_one_read_path():
    # A guard that the parametrization below is not vacuous.
    assert {"rr", "urr", "rappor", "olh", "hr", "cms", "ss"} <= set(DIRECT)


@pytest.mark.parametrize("name", sorted(DIRECT))
@pytest.mark.parametrize("checked", [False, True])
@pytest.mark.parametrize("seed", [0, 1])
def test_sampled_reports_are_transform_of_the_rows(name, checked, seed):
    """Same reports, bit for bit, as ``transform`` of the rows, on the same
    seeded stream (a mechanism fitted the same way, in the same state)."""
    mech = copy.deepcopy(DIRECT[name])
    cats = ["a", "b"] if name == BINARY else CATS
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"col": rng.choice(cats, size=500)})
    if "random_state" in mech.get_params():
        mech.set_params(random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mech.fit(frame.iloc[:1])
        twin = copy.deepcopy(mech)
        rows = np.flatnonzero(rng.random(500) < 0.3)
        ours = mech._sampled_reports(frame, rows, checked=checked)
        theirs = twin.transform(frame.iloc[rows])
    assert ours is not None
    theirs = theirs.toarray() if hasattr(theirs, "toarray") else np.asarray(theirs)
    ours = ours.toarray() if hasattr(ours, "toarray") else np.asarray(ours)
    np.testing.assert_array_equal(ours, theirs)
    assert ours.dtype == theirs.dtype
    # and the call counters moved together: the next calls agree too
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_array_equal(
            np.asarray(mech.transform(frame)), np.asarray(twin.transform(frame))
        )


def test_other_families_keep_their_own_transform():
    from sklearn_uldp.longitudinal import LongitudinalGRR
    from sklearn_uldp.numeric import DuchiMechanism

    lg = LongitudinalGRR(2.0, categories=CATS).fit(pd.DataFrame({"c": CATS}))
    assert lg._sampled_reports(pd.DataFrame({"c": CATS}), np.arange(2)) is None
    duchi = DuchiMechanism(1.0, bounds=(0, 1)).fit(pd.DataFrame({"c": [0.5]}))
    assert duchi._sampled_reports(pd.DataFrame({"c": [0.5]}), np.arange(1)) is None


def _mechs():
    return {
        "a": RandomizedResponse(1.0, categories=list(range(5))),
        "b": RAPPOR(1.0, theta=0.5, categories=list(range(5))),
        "c": UtilityOptimizedRR(1.0, sensitive=["x"], categories=["x", "y", "z"]),
    }


def _frame(n, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "a": rng.integers(0, 5, n),
            "b": rng.integers(0, 5, n),
            "c": rng.choice(["x", "y", "z"], n).astype(object),
        }
    )


def _unsampled_row(column, seed, df):
    """A row that does not sample ``column`` in the first call of a
    privatizer seeded with ``seed`` (fit_transform's and transform's)."""
    reports = DataFramePrivatizer(_mechs(), strategy="sample", random_state=seed).fit_transform(df)
    return int(np.flatnonzero((reports["sampled_attribute"] != column).to_numpy())[0])


@settings(max_examples=25, deadline=None)
@given(
    column=st.sampled_from(["a", "b", "c"]),
    bad=st.sampled_from(["unknown", "nan"]),
    seed=st.integers(0, 2**16),
    via=st.sampled_from(["fit_transform", "transform"]),
)
def test_unsampled_values_are_still_checked(column, bad, seed, via):
    """A bad value where the row samples another column is an error, through
    both paths (an implementation that checks only the sampled rows fails)."""
    df = _frame(40, seed)
    row = _unsampled_row(column, seed, df)
    broken = df.copy()
    if column == "c":
        broken["c"] = broken["c"].astype(object)
        broken.loc[row, "c"] = "w" if bad == "unknown" else None
    else:
        broken[column] = broken[column].astype(float if bad == "nan" else np.int64)
        broken.loc[row, column] = 7 if bad == "unknown" else np.nan
    priv = DataFramePrivatizer(_mechs(), strategy="sample", random_state=seed)
    message = "unknown categor" if bad == "unknown" else "missing"
    with pytest.raises(ValueError, match=message):
        if via == "fit_transform":
            priv.fit_transform(broken)
        else:
            priv.fit(df).transform(broken)


def test_error_names_counts_not_values():
    df = _frame(30)
    row = _unsampled_row("c", 0, df)
    broken = df.copy()
    broken.loc[row, "c"] = "secret-value"
    priv = DataFramePrivatizer(_mechs(), strategy="sample", random_state=0).fit(df)
    with pytest.raises(ValueError) as info:
        priv.transform(broken)
    assert "secret-value" not in str(info.value)


@pytest.mark.parametrize("via", ["fit_transform", "transform"])
def test_sampled_column_follows_its_channel(via):
    """The sampled users' reports of each column against the mechanism's exact
    channel Q(y | x) (chi-square; one input value per column), and each
    column sampled by a share 1/d of the users."""
    n = 60_000
    x = {"a": 3, "b": 1, "c": "y"}
    df = pd.DataFrame({c: [v] * n for c, v in x.items()})
    df["c"] = df["c"].astype(object)
    priv = DataFramePrivatizer(_mechs(), strategy="sample", random_state=4)
    reports = priv.fit_transform(df) if via == "fit_transform" else priv.fit(df).transform(df)
    sampled = reports["sampled_attribute"].to_numpy()
    shares = np.array([(sampled == c).sum() for c in x])
    assert chi_square_pvalue(shares, np.full(3, 1 / 3)) > 1e-6
    for name, value in x.items():
        mech = priv.mechanisms_[name]
        part = reports.loc[sampled == name, priv.report_columns(name)]
        row = list(mech.categories_).index(value)
        if name == "b":  # unary encoding: each bit is its own Bernoulli
            bits = part.to_numpy(dtype=np.int64)
            # P(bit j = 1 | x): the channel's expected bit frequencies at x
            probs = mech.channel_.expected_frequency(np.eye(5)[row])
            assert probs.shape == (5,) and len(set(np.round(probs, 12))) == 2
            ones = bits.sum(axis=0)
            z = (ones - len(bits) * probs) / np.sqrt(len(bits) * probs * (1 - probs))
            assert np.abs(z).max() < 5, z
            continue
        Q = mech.channel_matrix()
        labels = list(mech.categories_)
        counts = np.array([(part.iloc[:, 0] == y).sum() for y in labels])
        assert chi_square_pvalue(counts, Q[row]) > 1e-6


def test_estimate_finds_each_columns_rows_in_one_sort():
    """The rows of every column from one sort of the sampled column's codes
    are each column's own rows (``== name``), and the estimates equal those of
    ``column_reports`` one by one; a sampled column read back as text (no
    categorical dtype) takes the per-column path."""
    df = _frame(3000, 1)
    priv = DataFramePrivatizer(_mechs(), strategy="sample", random_state=2)
    reports = priv.fit_transform(df)
    table = priv._table_spec()
    rows = table._sampled_rows_of_all(reports, list(priv.mechanisms_))
    assert set(rows) == set(priv.mechanisms_)
    for name, positions in rows.items():
        expected = np.flatnonzero((reports["sampled_attribute"] == name).to_numpy())
        np.testing.assert_array_equal(positions, expected)
    one_by_one = {name: priv.column_reports(reports, name) for name in priv.mechanisms_}
    together = priv.estimate(reports)
    for name, part in one_by_one.items():
        est = EMEstimator().fit(part)
        np.testing.assert_allclose(together[name].to_numpy(), est.distribution_, rtol=1e-10)
    text = reports.copy()
    text["sampled_attribute"] = text["sampled_attribute"].astype(object)
    assert table._sampled_rows_of_all(text, list(priv.mechanisms_)) == {}
    for name, estimate in priv.estimate(text).items():
        np.testing.assert_allclose(estimate.to_numpy(), together[name].to_numpy(), rtol=1e-10)
