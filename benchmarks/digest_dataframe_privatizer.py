"""SHA-256 of DataFramePrivatizer's seeded outputs, to check a refactor changes none.

Run it before and after a change, in fresh processes, and compare the JSON:

    python benchmarks/digest_dataframe_privatizer.py > before.json
    ... change ...
    python benchmarks/digest_dataframe_privatizer.py > after.json
    diff before.json after.json

Covered, under every strategy ("split", "sample", "sample+fake"): the
pandas and array reports, their ``attrs`` (the specs), ``save_spec``'s file,
``column_reports`` of every column, ``estimate`` with explicit estimators
(EmpiricalEstimator(projection="simplex") and EMEstimator(), so a change of
the default estimator shows apart), ``epsilon_spent_`` and
``attribute_epsilons_``, memoized columns with user secrets ("split",
"sample"), and the Dask path (seeded partitions, computed). The default
estimate is recorded under its own key ("estimate_default").
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import warnings

import numpy as np
import pandas as pd


def _digest(obj) -> str:
    h = hashlib.sha256()
    _feed(h, obj)
    return h.hexdigest()


def _feed(h, obj):
    if isinstance(obj, pd.DataFrame):
        h.update(repr(list(obj.columns)).encode())
        h.update(repr([str(t) for t in obj.dtypes]).encode())
        h.update(repr(list(obj.index)).encode())
        for c in obj.columns:
            _feed(h, obj[c])
        h.update(json.dumps(obj.attrs, sort_keys=True, default=str).encode())
    elif isinstance(obj, pd.Series):
        h.update(str(obj.dtype).encode())
        h.update(repr(obj.name).encode())
        h.update(repr(list(obj.index)).encode())
        values = obj.to_numpy()
        if values.dtype == object:
            h.update(repr(values.tolist()).encode())
        else:
            h.update(np.ascontiguousarray(values).tobytes())
    elif isinstance(obj, np.ndarray):
        h.update(str(obj.dtype).encode() + repr(obj.shape).encode())
        if obj.dtype == object:
            h.update(repr(obj.tolist()).encode())
        else:
            h.update(np.ascontiguousarray(obj).tobytes())
    elif isinstance(obj, dict):
        for k in sorted(obj, key=str):
            h.update(repr(k).encode())
            _feed(h, obj[k])
    elif isinstance(obj, (list, tuple)):
        for x in obj:
            _feed(h, x)
    else:
        h.update(repr(obj).encode())


def _table(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "marital": rng.choice(["married", "single", "divorced"], p=[0.5, 0.35, 0.15], size=n),
            "region": rng.choice(["n", "s", "e", "w"], size=n),
            "job": rng.choice(["a", "b", "c"], p=[0.6, 0.3, 0.1], size=n),
            "code": rng.integers(0, 3, size=n),
            "age": rng.uniform(18, 90, size=n),
            "wave": rng.integers(1, 3, size=n),
        }
    )


def _mechanisms(strategy, numeric=True):
    from sklearn_uldp import RandomizedResponse, UtilityOptimizedRAPPOR, UtilityOptimizedRR
    from sklearn_uldp.mechanisms import RAPPOR
    from sklearn_uldp.numeric import HybridMechanism

    mechs = {
        "marital": UtilityOptimizedRR(
            1.0, sensitive=["divorced"], categories=["married", "single", "divorced"]
        ),
        "region": RandomizedResponse(0.5, categories=["n", "s", "e", "w"]),
        "job": UtilityOptimizedRAPPOR(1.0, sensitive=["c"], categories=["a", "b", "c"]),
        "code": RAPPOR(1.0, theta=0.5, categories=[0, 1, 2]),
    }
    if numeric:
        mechs["age"] = HybridMechanism(1.0, bounds=(0, 100))
    return mechs


def _outputs(strategy):
    from sklearn_uldp import EMEstimator, EmpiricalEstimator
    from sklearn_uldp.compose import DataFramePrivatizer

    df = _table()
    out = {}
    priv = DataFramePrivatizer(
        _mechanisms(strategy), strategy=strategy, remainder="passthrough", random_state=0
    )
    reports = priv.fit_transform(df)
    again = priv.transform(df)  # the second call's streams
    out["reports"] = _digest(reports)
    out["reports_2nd_call"] = _digest(again)
    out["epsilon_spent"] = repr(priv.epsilon_spent_)
    out["attribute_epsilons"] = repr(priv.attribute_epsilons_)
    out["specs"] = _digest(priv.specs())
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "spec.json")
        priv.save_spec(path)
        with open(path, "rb") as fh:
            out["save_spec"] = hashlib.sha256(fh.read()).hexdigest()
    for name in priv.mechanisms_:
        out[f"column_reports[{name}]"] = _digest(priv.column_reports(reports, name))
    for label, est in (
        ("emp_simplex", EmpiricalEstimator(projection="simplex")),
        ("em", EMEstimator()),
    ):
        out[f"estimate[{label}]"] = _digest(priv.estimate(reports, est))
    out["estimate_default"] = _digest(priv.estimate(reports))
    arr = (
        DataFramePrivatizer(_mechanisms(strategy), strategy=strategy, random_state=0)
        .set_output(transform="default")
        .fit_transform(df)
    )
    out["array_reports"] = _digest(np.asarray(arr))
    # Array input, columns by position.
    cols = ["marital", "region", "job", "code"]
    by_pos = DataFramePrivatizer(
        [(c, m, [i]) for i, (c, m) in enumerate(_mechanisms(strategy, numeric=False).items())],
        strategy=strategy,
        random_state=1,
    )
    out["array_input"] = _digest(np.asarray(by_pos.fit_transform(df[cols].to_numpy(dtype=object))))
    if strategy != "sample+fake":
        out["memoized"] = _memoized(strategy, df)
        out["square_wave"] = _square_wave(strategy, df)
    if strategy == "split":
        out["packed"] = _packed(df)
    out["missing_category"] = _missing_category(strategy, df)
    out["dask"] = _dask(strategy, df)
    return out


def _square_wave(strategy, df):
    from sklearn_uldp import RandomizedResponse
    from sklearn_uldp.compose import DataFramePrivatizer
    from sklearn_uldp.numeric import SquareWave

    priv = DataFramePrivatizer(
        {
            "age": SquareWave(1.0, bounds=(0, 100)),
            "region": RandomizedResponse(1.0, categories=["n", "s", "e", "w"]),
        },
        strategy=strategy,
        random_state=4,
    )
    reports = priv.fit_transform(df)
    return _digest([reports, priv.estimate(reports, _emp())])


def _packed(df):
    from sklearn_uldp.compose import DataFramePrivatizer
    from sklearn_uldp.mechanisms import RAPPOR

    priv = DataFramePrivatizer(
        {"code": RAPPOR(1.0, theta=0.5, categories=[0, 1, 2], packed_output=True)},
        random_state=6,
    )
    reports = priv.fit_transform(df)
    return _digest([reports.map(bytes), priv.estimate(reports, _emp())])


def _missing_category(strategy, df):
    from sklearn_uldp import RandomizedResponse, UtilityOptimizedRR
    from sklearn_uldp.compose import DataFramePrivatizer

    holes = df.copy()
    holes.loc[::7, "marital"] = None
    holes["region"] = pd.Categorical(holes["region"], categories=["n", "s", "e", "w"])
    holes.loc[::11, "region"] = None
    priv = DataFramePrivatizer(
        {
            "marital": UtilityOptimizedRR(
                1.0, sensitive=["divorced"], categories=["married", "single", "divorced", "(none)"]
            ),
            "region": RandomizedResponse(1.0),  # the dtype's domain, and the label
        },
        strategy=strategy,
        missing="category",
        missing_label="(none)",
        random_state=7,
    )
    reports = priv.fit_transform(holes)
    return _digest([reports, priv.estimate(reports, _emp())])


def _emp():
    from sklearn_uldp import EmpiricalEstimator

    return EmpiricalEstimator(projection="simplex")


def _memoized(strategy, df):
    from sklearn_uldp import RandomizedResponse
    from sklearn_uldp.compose import DataFramePrivatizer
    from sklearn_uldp.longitudinal import LongitudinalGRR
    from sklearn_uldp.utils import generate_user_secrets

    secrets = generate_user_secrets(len(df), random_state=3)
    priv = DataFramePrivatizer(
        {
            "region": LongitudinalGRR(2.0, 1.0, categories=["n", "s", "e", "w"]),
            "marital": RandomizedResponse(1.0, categories=["married", "single", "divorced"]),
        },
        strategy=strategy,
        random_state=2,
    )
    first = priv.fit_transform(df, user_secrets=secrets)
    second = priv.transform(df, user_secrets=secrets)
    return _digest([first, second])


def _dask(strategy, df):
    import dask
    import dask.dataframe as dd

    from sklearn_uldp.compose import DataFramePrivatizer
    from sklearn_uldp.parallel import privatize_partitions, reduce_statistics

    with dask.config.set(scheduler="sync"):
        ddf = dd.from_pandas(df, npartitions=3)
        priv = DataFramePrivatizer(_mechanisms(strategy), strategy=strategy, random_state=0)
        lazy = priv.fit_transform(ddf)
        computed = lazy.compute()
        again = privatize_partitions(ddf, priv, random_state=5).compute()
        stats = {
            name: reduce_statistics(lazy[priv.report_columns(name)], mechanism=priv.channels_[name])
            for name in priv.mechanisms_
        }
        return _digest(
            [computed, again, {n: (s.n, np.asarray(s.counts)) for n, s in stats.items()}]
        )


def main():
    warnings.simplefilter("ignore")
    result = {s: _outputs(s) for s in ("split", "sample", "sample+fake")}
    json.dump(result, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
