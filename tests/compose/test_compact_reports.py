"""SMP's compact report table (``report_format="compact"``, issue 36).

The compact table holds, for the same ``random_state``, exactly the wide
table's non-missing reports (in each column's channel's codes), in a size
that does not depend on the number of columns; every consumer of SMP reports
(``column_reports``, ``estimate``, ``TableSpec`` from a file, CSV/Parquet
round trips, Dask partitions as sufficient statistics, ``partial_fit``)
gives the wide table's results from it, and a tampered or mismatched table
is refused with a message naming the column, never a user's value.
"""

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from _examples import BINARY, CATS, categorical_mechanisms
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.base import clone

from sklearn_uldp import RAPPOR, EMEstimator, RandomizedResponse, UtilityOptimizedRR
from sklearn_uldp.compose import DataFramePrivatizer
from sklearn_uldp.estimators import TableSpec
from sklearn_uldp.exceptions import ReportMismatchError
from sklearn_uldp.numeric import (
    DuchiMechanism,
    HybridMechanism,
    PiecewiseMechanism,
    SquareWave,
    UtilityOptimizedOneBitMechanism,
)
from sklearn_uldp.parallel import reduce_statistics, statistics_of

SECRET = "Zyx-secret-label"  # a user's value that no message may quote


def _mechanism(kind, k, eps):
    cats = list(range(k))
    return {
        "rr": lambda: RandomizedResponse(eps, categories=cats),
        "rr_text": lambda: RandomizedResponse(eps, categories=[f"c{i}" for i in cats]),
        "urr": lambda: UtilityOptimizedRR(eps, sensitive=cats[:1], categories=cats),
        "oue": lambda: RAPPOR(eps, theta=0.5, categories=cats),
        "hybrid": lambda: HybridMechanism(eps, bounds=(0.0, 10.0)),
        "piecewise": lambda: PiecewiseMechanism(eps, bounds=(0.0, 10.0)),
    }[kind]()


def _column(kind, k, n, rng):
    if kind in ("hybrid", "piecewise"):
        return rng.uniform(0.0, 10.0, n)
    if kind == "rr_text":
        return rng.choice([f"c{i}" for i in range(k)], n)
    return rng.integers(0, k, n)


def _pair(mechanisms, **params):
    wide = DataFramePrivatizer(mechanisms, strategy="sample", **params)
    compact = DataFramePrivatizer(mechanisms, strategy="sample", report_format="compact", **params)
    return wide, compact


columns = st.lists(
    st.tuples(
        st.sampled_from(["rr", "rr_text", "urr", "oue", "hybrid", "piecewise"]),
        st.integers(2, 6),
        st.sampled_from([0.5, 1.0, 3.0]),
    ),
    min_size=2,
    max_size=5,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=columns, n=st.integers(1, 400), seed=st.integers(0, 2**32 - 1))
def test_compact_holds_the_wide_reports(spec, n, seed):
    rng = np.random.default_rng(seed)
    names = [f"col{i}" for i in range(len(spec))]
    df = pd.DataFrame(
        {c: _column(kind, k, n, rng) for c, (kind, k, _) in zip(names, spec, strict=True)}
    )
    mechanisms = {
        c: _mechanism(kind, k, eps) for c, (kind, k, eps) in zip(names, spec, strict=True)
    }
    wide, compact = _pair(mechanisms, random_state=seed)
    w = wide.fit_transform(df)
    c = compact.fit_transform(df)
    numeric = any(kind in ("hybrid", "piecewise") for kind, _, _ in spec)
    widths = [k if kind == "oue" else 1 for kind, k, _ in spec]
    block = [f"report_{j}" for j in range(max(widths))]
    assert list(c.columns) == [*block, "sampled_attribute"]
    assert c[block].dtypes.unique().tolist() == [np.float64 if numeric else np.uint8]
    # the same sampled column, and each row's cells are its column's
    # non-missing wide reports in the channel's codes, zero past its width
    assert c["sampled_attribute"].equals(w["sampled_attribute"])
    cells = c[block].to_numpy()
    for i, name in enumerate(names):
        rows = np.flatnonzero((w["sampled_attribute"] == name).to_numpy())
        present = wide.column_reports(w, name)
        assert np.array_equal(present.index, w.index[rows])
        channel = wide.channels_[name].base
        if channel.has_categories:
            codes = np.asarray(channel.encode_reports(present)).reshape(len(rows), widths[i])
        else:
            codes = present.to_numpy(dtype=np.float64)
        assert np.array_equal(cells[rows, : widths[i]], codes)
        assert not cells[rows, widths[i] :].any()
        pd.testing.assert_frame_equal(compact.column_reports(c, name), present, check_dtype=False)
    # the same estimates, column by column
    if n >= 20:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got, expected = compact.estimate(c), wide.estimate(w)
        for name in names:
            pd.testing.assert_series_equal(got[name], expected[name])


def test_every_family_is_written_or_refused():
    """Every categorical family: the same reports as wide, or a clear refusal."""
    rng = np.random.default_rng(0)
    refused = []
    for name, (mech, _) in categorical_mechanisms().items():
        cats = ["a", "b"] if name == BINARY else CATS
        df = pd.DataFrame({"x": rng.choice(cats, 300), "y": rng.choice(["u", "v"], 300)})
        mechanisms = {"x": mech, "y": RandomizedResponse(1.0, categories=["u", "v"])}
        wide, compact = _pair(mechanisms, random_state=1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                w = wide.fit_transform(df)
            except ValueError:
                continue  # not an SMP mechanism (context-aware guarantees)
            try:
                c = compact.fit_transform(df)
            except ValueError as exc:
                assert "report_format='wide'" in str(exc) and "'x'" in str(exc)
                refused.append(name)
                continue
        assert c.shape[1] <= len(cats) + 1
        for col in ("x", "y"):
            pd.testing.assert_frame_equal(
                compact.column_reports(c, col), wide.column_reports(w, col), check_dtype=False
            )
    assert refused == ["cms"]


def _table(d, k=10, n=2000, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({f"a{i}": rng.integers(0, k, n) for i in range(d)})


def _oue(d, k=10):
    return {f"a{i}": RAPPOR(1.0, theta=0.5, categories=list(range(k))) for i in range(d)}


@pytest.mark.parametrize("d", [3, 10, 30])
def test_size_does_not_grow_with_d(d):
    c = DataFramePrivatizer(
        _oue(d), strategy="sample", report_format="compact", random_state=0
    ).fit_transform(_table(d))
    assert c.shape[1] == 11  # ten one-byte cells and the sampled column
    assert all(c[f"report_{j}"].dtype == np.uint8 for j in range(10))
    assert c["sampled_attribute"].cat.codes.dtype == np.int8


def test_fails_on_the_wide_layout():
    """The compact table is not the wide one: the test above cannot pass on it."""
    w = DataFramePrivatizer(_oue(10), strategy="sample", random_state=0).fit_transform(_table(10))
    assert w.shape[1] == 101


def test_array_output_and_column_reports():
    df = _table(4, k=3)
    mechanisms = {c: RandomizedResponse(1.0, categories=[0, 1, 2]) for c in df}
    wide, compact = _pair(mechanisms, random_state=5)
    w = wide.fit_transform(df)
    arr = compact.set_output(transform="default").fit_transform(df)
    assert arr.shape == (len(df), 2) and arr.dtype == np.uint8
    assert np.array_equal(arr[:, 1], w["sampled_attribute"].cat.codes)
    for name in mechanisms:
        pd.testing.assert_frame_equal(
            compact.column_reports(arr, name), wide.column_reports(w, name), check_dtype=False
        )


def test_passthrough_and_report_columns():
    df = _table(3, k=4).assign(wave=1)
    mechanisms = [(c, RAPPOR(1.0, categories=list(range(4))), [c]) for c in ["a0", "a1", "a2"]]
    priv = DataFramePrivatizer(
        mechanisms, strategy="sample", report_format="compact", remainder="passthrough"
    )
    out = priv.fit_transform(df)
    assert list(out.columns) == [
        "report_0",
        "report_1",
        "report_2",
        "report_3",
        "wave",
        "sampled_attribute",
    ]
    assert priv.report_columns("a1") == [*priv.get_feature_names_out()[:4], "sampled_attribute"]
    clash = df.rename(columns={"wave": "report_1"})
    with pytest.raises(ValueError, match="rename them"):
        DataFramePrivatizer(
            mechanisms, strategy="sample", report_format="compact", remainder="passthrough"
        ).fit(clash)


def test_spec_file_csv_and_parquet_round_trips(tmp_path):
    rng = np.random.default_rng(2)
    df = pd.DataFrame(
        {
            "job": rng.choice(["nurse", "pilot", "cook"], 3000),
            "flag": rng.integers(0, 2, 3000),
            "age": rng.uniform(20, 60, 3000),
        }
    )
    mechanisms = {
        "job": RAPPOR(1.0, categories=["cook", "nurse", "pilot"]),
        "flag": RandomizedResponse(1.0, categories=[0, 1]),
        "age": HybridMechanism(1.0, bounds=(20, 60)),
    }
    wide, compact = _pair(mechanisms, random_state=9)
    expected = wide.estimate(wide.fit_transform(df))
    reports = compact.fit_transform(df)
    compact.save_spec(tmp_path / "spec.json")
    document = json.loads((tmp_path / "spec.json").read_text())
    assert document["strategy"]["report_format"] == "compact"
    assert document["strategy"]["report_block"] == ["report_0", "report_1", "report_2"]
    table = TableSpec.from_file(tmp_path / "spec.json")
    assert table.report_format == "compact"
    reports.to_csv(tmp_path / "r.csv", index=False)
    reports.to_parquet(tmp_path / "r.parquet")
    for back in (pd.read_csv(tmp_path / "r.csv"), pd.read_parquet(tmp_path / "r.parquet")):
        got = table.estimate(back)
        for name in mechanisms:
            pd.testing.assert_series_equal(got[name], expected[name], check_index_type=False)


def test_dask_partitions_give_the_wide_counts():
    dd = pytest.importorskip("dask.dataframe")
    df = _table(5, k=6, n=4000)
    mechanisms = {c: RAPPOR(1.0, categories=list(range(6))) for c in df}
    wide, compact = _pair(mechanisms, random_state=3)
    parts = dd.from_pandas(df, npartitions=3)
    w = wide.fit_transform(parts).compute()
    lazy = compact.fit_transform(parts)
    assert list(lazy.columns) == list(compact.get_feature_names_out())
    c = lazy.compute()
    assert c.shape[1] == 7
    table = compact._table_spec()
    for name in mechanisms:
        chunks = lazy.map_partitions(
            table.column_reports, name, meta=wide.column_reports(w.iloc[:0], name)
        )
        stats = reduce_statistics(chunks, mechanism=compact.channels_[name])
        expected = statistics_of(wide.column_reports(w, name))
        assert stats.n == expected.n
        assert np.array_equal(stats.counts, expected.counts)


def test_partial_fit_over_chunks_of_a_compact_table():
    df = _table(4, k=5, n=3000)
    mechanisms = {c: RandomizedResponse(1.0, categories=list(range(5))) for c in df}
    wide, compact = _pair(mechanisms, random_state=4)
    w, c = wide.fit_transform(df), compact.fit_transform(df)
    whole = EMEstimator().fit(wide.column_reports(w, "a2"))
    est = EMEstimator()
    for chunk in np.array_split(np.arange(len(c)), 3):
        est.partial_fit(compact.column_reports(c.iloc[chunk], "a2"))
    assert est.n_reports_ == whole.n_reports_
    np.testing.assert_allclose(est.distribution_, whole.distribution_, rtol=1e-10)


def test_fresh_randomness_per_call():
    df = _table(3, k=10, n=500)
    priv = DataFramePrivatizer(_oue(3), strategy="sample", report_format="compact").fit(df)
    assert not priv.transform(df).equals(priv.transform(df))


# ----------------------------------------------------------------- errors
@pytest.mark.parametrize("strategy", ["split", "sample+fake", "marginals"])
def test_compact_is_smp_only(strategy):
    df = _table(3, k=3)
    mechanisms = {c: RandomizedResponse(1.0, categories=[0, 1, 2]) for c in df}
    priv = DataFramePrivatizer(mechanisms, strategy=strategy, report_format="compact")
    with pytest.raises(ValueError, match="strategy='sample' only") as info:
        priv.fit(df)
    if strategy == "sample+fake":
        assert "fakes" in str(info.value)


def test_refit_after_changing_the_format():
    df = _table(3, k=3)
    mechanisms = {c: RandomizedResponse(1.0, categories=[0, 1, 2]) for c in df}
    priv = DataFramePrivatizer(mechanisms, strategy="sample").fit(df)
    with pytest.raises(ValueError, match="fit it again"):
        priv.set_params(report_format="compact").transform(df)


def _text_table(n=600, seed=0):
    rng = np.random.default_rng(seed)
    cats = ["cook", "nurse", SECRET]
    return pd.DataFrame({"job": rng.choice(cats, n), "pet": rng.choice(["cat", "dog"], n)}), cats


def _text_pair():
    df, cats = _text_table()
    mechanisms = {
        "job": RAPPOR(1.0, categories=cats),
        "pet": RandomizedResponse(1.0, categories=["cat", "dog"]),
    }
    wide, compact = _pair(mechanisms, random_state=0)
    return df, wide, compact, wide.fit_transform(df), compact.fit_transform(df)


def _no_value(exc):
    assert SECRET not in str(exc.value)


def test_format_mismatch_is_a_clear_error():
    _, wide, compact, w, c = _text_pair()
    with pytest.raises(ReportMismatchError, match="compact table.*wide format") as info:
        wide.estimate(c)
    _no_value(info)
    with pytest.raises(ReportMismatchError, match="compact table.*wide format"):
        wide._table_spec().column_reports(c, "job")
    with pytest.raises(ReportMismatchError, match="look like a wide table") as info:
        compact.estimate(w)
    _no_value(info)


@pytest.mark.parametrize(
    "tamper, match",
    [
        (
            lambda c: c.assign(
                sampled_attribute=c["sampled_attribute"].astype(str).replace("pet", "other")
            ),
            "name no attribute",
        ),
        (
            lambda c: c.assign(sampled_attribute=np.where(c["sampled_attribute"] == "pet", 7, 0)),
            "indices outside 0..1",
        ),
        (
            lambda c: c.assign(
                report_2=np.where(c["sampled_attribute"] == "pet", 1, c["report_2"]).astype(
                    np.uint8
                )
            ),
            "'pet' are wider than its reports",
        ),
        (
            lambda c: c.assign(
                report_0=np.where(c["sampled_attribute"] == "pet", 2, c["report_0"]).astype(
                    np.uint8
                )
            ),
            "'pet' .*codes outside 0..1",
        ),
        (
            lambda c: c.assign(
                report_1=np.where(c["sampled_attribute"] == "job", 3, c["report_1"]).astype(
                    np.uint8
                )
            ),
            "'job' .*bits other than 0 and 1",
        ),
        (
            lambda c: c.assign(
                report_0=np.where(c["sampled_attribute"] == "job", np.nan, c["report_0"])
            ),
            "'job' .*missing",
        ),
        (lambda c: c.drop(columns="report_2"), "lack its columns \\['report_2'\\]"),
    ],
)
def test_tampered_tables_are_refused(tamper, match):
    _, _, compact, _, c = _text_pair()
    table = compact._table_spec()
    bad = tamper(c.copy())
    with pytest.raises(ReportMismatchError, match=match) as info:
        table.estimate(bad)
    _no_value(info)


def test_tampered_specs_are_refused():
    _, _, compact, _, _ = _text_pair()
    document = compact._table_spec().to_dict()
    for edit, match in [
        (lambda s: s.update(report_block=["report_0"]), "report block has 1 column"),
        (lambda s: s.update(report_format="narrow"), "report_format must be one of"),
        (lambda s: s.update(name="sample+fake"), "strategy 'sample' writes"),
        (lambda s: s.update(name="split"), "strategy 'sample' writes"),
        (lambda s: s.pop("report_block"), "needs 'report_block'"),
    ]:
        edited = json.loads(json.dumps(document))
        edit(edited["strategy"])
        with pytest.raises(ValueError, match=match):
            TableSpec.from_dict(edited)


# ---------------------------------------------------------- command line
@pytest.mark.parametrize("suffix", ["csv", "parquet"])
def test_command_line_compact_reports(tmp_path, capsys, suffix):
    from sklearn_uldp.cli import main

    rng = np.random.default_rng(1)
    n = 3000
    pd.DataFrame(
        {
            "vote": rng.choice(["a", "b", "none"], n),
            "income": rng.integers(0, 5, n),
            "age": rng.uniform(20, 60, n),
        }
    ).to_csv(tmp_path / "d.csv", index=False)
    config = {
        "random_state": 0,
        "columns": {
            "vote": {
                "mechanism": "urr",
                "epsilon": 1.0,
                "categories": ["a", "b", "none"],
                "sensitive": ["a", "b"],
            },
            "income": {"mechanism": "oue", "epsilon": 1.0, "categories": ["0..4"]},
            "age": {"mechanism": "hybrid", "epsilon": 1.0, "bounds": [20, 60]},
        },
    }
    (tmp_path / "c.json").write_text(json.dumps(config))
    estimates = {}
    for fmt in ("wide", "compact"):
        rep, dist = tmp_path / f"r_{fmt}.{suffix}", tmp_path / f"dist_{fmt}.csv"
        argv = ["privatize", tmp_path / "d.csv", "-o", rep, "--config", tmp_path / "c.json"]
        argv += ["--strategy", "sample", "--report-format", fmt, "--no-progress"]
        assert main([str(a) for a in argv]) == 0
        spec = f"{rep}.spec.json"
        argv = ["estimate", rep, "--spec", spec, "-o", dist, "--no-progress"]
        assert main([str(a) for a in argv]) == 0
        estimates[fmt] = pd.read_csv(dist)
    columns = pd.read_csv(tmp_path / "r_compact.csv").columns if suffix == "csv" else None
    if columns is not None:
        assert list(columns) == [
            "report_0",
            "report_1",
            "report_2",
            "report_3",
            "report_4",
            "sampled_attribute",
        ]
    pd.testing.assert_frame_equal(estimates["wide"], estimates["compact"])
    # the compact file with the wide spec: refused, naming the format
    argv = [
        "estimate",
        tmp_path / f"r_compact.{suffix}",
        "--spec",
        f"{tmp_path / f'r_wide.{suffix}'}.spec.json",
        "-o",
        tmp_path / "x.csv",
        "--no-progress",
        "--skip-report-check",
    ]
    capsys.readouterr()
    assert main([str(a) for a in argv]) != 0
    err = capsys.readouterr().err  # CSV: the columns; Parquet: the spec's digest
    assert "report_0" in err or "belongs to other reports" in err
    argv = [
        "privatize",
        tmp_path / "d.csv",
        "-o",
        tmp_path / "z.csv",
        "--config",
        tmp_path / "c.json",
        "--report-format",
        "compact",
    ]
    assert main([str(a) for a in argv]) != 0
    assert "goes with --strategy sample" in capsys.readouterr().err
    # a hand-edited spec whose strategy entry is not an object: a clear error
    document = json.loads(open(f"{tmp_path / f'r_compact.{suffix}'}.spec.json").read())
    document.pop("reports", None)
    for strategy in (None, "sample", ["sample"]):
        document["strategy"] = strategy
        edited = tmp_path / "edited.spec.json"
        edited.write_text(json.dumps(document))
        argv = ["estimate", tmp_path / f"r_compact.{suffix}", "--spec", edited]
        argv += ["-o", tmp_path / "y.csv", "--no-progress", "--skip-report-check"]
        capsys.readouterr()
        assert main([str(a) for a in argv]) != 0
        err = capsys.readouterr().err
        assert "Traceback" not in err
        # None reads as a spec without a strategy: the wide columns are missing
        assert ("are not" in err) if strategy is None else ("'strategy' entry" in err)


def test_array_estimate_and_memoized_columns():
    from sklearn_uldp.longitudinal import LongitudinalGRR
    from sklearn_uldp.utils import generate_user_secrets

    df = _table(3, k=4, n=1500)
    mechanisms = {
        "a0": LongitudinalGRR(2.0, 1.0, categories=list(range(4))),
        "a1": RAPPOR(1.0, categories=list(range(4))),
        "a2": RandomizedResponse(1.0, categories=list(range(4))),
    }
    secrets = generate_user_secrets(len(df))
    wide, compact = _pair(mechanisms, random_state=2)
    w = wide.fit(df).transform(df, user_secrets=secrets)
    c = compact.fit(df).transform(df, user_secrets=secrets)
    assert c["sampled_attribute"].equals(w["sampled_attribute"])
    for name in mechanisms:
        pd.testing.assert_frame_equal(
            compact.column_reports(c, name), wide.column_reports(w, name), check_dtype=False
        )
    # the same first call of a twin, as an array
    twin = _pair(mechanisms, random_state=2)[1].set_output(transform="default").fit(df)
    arr = twin.transform(df, user_secrets=secrets)
    got, expected = twin.estimate(arr), wide.estimate(w)
    for name in mechanisms:
        np.testing.assert_array_equal(got[name].to_numpy(), expected[name].to_numpy())


@pytest.mark.parametrize(
    "make",
    [
        lambda: SquareWave(1.0, bounds=(0, 1)),
        lambda: DuchiMechanism(1.0, bounds=(0, 1)),
        lambda: UtilityOptimizedOneBitMechanism(1.0, bounds=(0, 1), sensitive=(0, 0.5)),
    ],
    ids=["square_wave", "duchi", "one_bit_uldp"],
)
def test_numeric_families(make):
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.uniform(0, 1, 2000), "y": rng.integers(0, 3, 2000)})
    mechanisms = {"x": make(), "y": RandomizedResponse(1.0, categories=[0, 1, 2])}
    wide, compact = _pair(mechanisms, random_state=1)
    w, c = wide.fit_transform(df), compact.fit_transform(df)
    assert list(c.columns) == ["report_0", "sampled_attribute"]
    assert c["report_0"].dtype == np.float64
    for name in mechanisms:
        pd.testing.assert_frame_equal(
            compact.column_reports(c, name), wide.column_reports(w, name), check_dtype=False
        )
    got, expected = compact.estimate(c), wide.estimate(w)
    for name in mechanisms:
        pd.testing.assert_series_equal(got[name], expected[name])
    # An array output: the block is float, and so are the attribute indices.
    arr = clone(compact).set_output(transform="default").fit_transform(df)
    assert arr.dtype == np.float64
    np.testing.assert_array_equal(arr, c.assign(sampled_attribute=c.iloc[:, -1].cat.codes))
    for name in mechanisms:
        pd.testing.assert_frame_equal(
            compact.column_reports(arr, name), compact.column_reports(c, name)
        )
    tampered = arr.copy()
    tampered[0, -1] = 0.5  # not an attribute index
    with pytest.raises(ReportMismatchError, match="1 row"):
        compact.column_reports(tampered, "x")


def test_sampled_column_may_not_take_a_block_name():
    df = _table(2, k=4)
    mechanisms = {
        "a0": RandomizedResponse(1.0, categories=list(range(4))),
        "a1": _oue(1, k=4)["a0"],
    }
    compact = DataFramePrivatizer(
        mechanisms, strategy="sample", report_format="compact", sampled_column="report_1"
    )
    with pytest.raises(ValueError, match="compact report block"):
        compact.fit(df)


def test_spec_block_names_are_distinct_and_not_the_sampled_column():
    _, _, compact, _, _ = _text_pair()
    document = compact._table_spec().to_dict()
    block = document["strategy"]["report_block"]
    column = document["strategy"].get("sampled_column", "sampled_attribute")
    for edited_block in ([block[0]] * len(block), [column] + block[1:]):
        edited = json.loads(json.dumps(document))
        edited["strategy"]["report_block"] = edited_block
        with pytest.raises(ValueError, match="distinct columns"):
            TableSpec.from_dict(edited)


def test_a_remainder_mechanism_is_one_of_the_sampled_columns():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.integers(0, 3, 3000), "y": rng.integers(0, 3, 3000)})
    params = dict(
        mechanisms=[("x", RAPPOR(1.0, categories=[0, 1, 2]), ["x"])],
        remainder=RandomizedResponse(1.0, categories=[0, 1, 2]),
        strategy="sample",
        random_state=2,
    )
    wide = DataFramePrivatizer(**params)
    compact = DataFramePrivatizer(**params, report_format="compact")
    w, c = wide.fit_transform(df), compact.fit_transform(df)
    assert list(c.columns) == list(compact.get_feature_names_out())
    assert list(c.columns) == ["report_0", "report_1", "report_2", "sampled_attribute"]
    arr = clone(compact).set_output(transform="default").fit_transform(df)
    assert arr.shape == (3000, 4)
    got, expected = compact.estimate(arr), wide.estimate(w)
    for name in ("x", "remainder"):
        np.testing.assert_array_equal(got[name].to_numpy(), expected[name].to_numpy())
    dd = pytest.importorskip("dask.dataframe")
    lazy = compact.fit_transform(dd.from_pandas(df, npartitions=2))
    assert list(lazy.compute().columns) == list(c.columns)
