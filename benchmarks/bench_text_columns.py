"""Privatize and estimate a DataFrame of text columns, against integer codes.

A data scientist's table holds strings (pandas' ``str`` dtype, ``object``
columns, or ``category`` columns), not integer codes. Text columns are
factorized by pandas and only their distinct values are looked up in the
domain (``sklearn_uldp/mechanisms/_text_columns.py``); before that every value
became a Python object first. This script times, side by side in one run
(each cell in a fresh process, the cells alternately, CPU time), a
``DataFramePrivatizer`` of k-RR columns, ``transform`` then ``estimate``
(empirical estimator) on

- integer codes 0..k-1 (the floor: no labels at all),
- the same table as ``category``, ``str`` and ``object`` columns,
- and the ``str`` table through the general path (the factorization turned
  off: every value a Python object, as before), the anchor of the speed-up.

    python benchmarks/bench_text_columns.py --n 2000000 --columns 4 --k 8 --repeats 3
"""

import argparse
import json
import os
import statistics
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _measure import RESULT_PREFIX, cell_result, failure_tail, run_cell_process, timed  # noqa: E402

KINDS = ("integer codes", "category", "str", "object", "str, general path")


def _cell(payload):
    import numpy as np
    import pandas as pd

    from sklearn_uldp.compose import DataFramePrivatizer
    from sklearn_uldp.mechanisms import RandomizedResponse

    n, d, k, kind = payload["n"], payload["columns"], payload["k"], payload["kind"]
    rng = np.random.default_rng(payload["seed"])
    labels = np.array([f"value {i}" for i in range(k)], dtype=object)
    codes = {f"c{j}": rng.integers(0, k, n) for j in range(d)}
    if kind == "integer codes":
        frame, domain = pd.DataFrame(codes), list(range(k))
    elif kind == "category":
        frame = pd.DataFrame({c: pd.Categorical.from_codes(v, labels) for c, v in codes.items()})
        domain = list(labels)
    else:
        dtype = object if kind == "object" else "str"
        frame = pd.DataFrame({c: pd.Series(labels[v], dtype=dtype) for c, v in codes.items()})
        domain = list(labels)
    if kind.endswith("general path"):
        import sklearn_uldp.estimators._base as estimators_base
        import sklearn_uldp.mechanisms._base as mechanisms_base
        import sklearn_uldp.mechanisms._randomized_response as rr_module

        mechanisms_base.text_columns = lambda frame: None
        rr_module.text_report_codes = lambda reports, categories: None
        estimators_base.text_series = lambda reports: None
    priv = DataFramePrivatizer(
        {c: RandomizedResponse(epsilon=1.0, categories=domain) for c in codes}, random_state=0
    ).fit(frame)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reports, wall_t, cpu_t = timed(lambda: priv.transform(frame))
        _, wall_e, cpu_e = timed(lambda: priv.estimate(reports, estimator="empirical"))
    print(RESULT_PREFIX + json.dumps({"transform": cpu_t, "estimate": cpu_e}))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2_000_000)
    parser.add_argument("--columns", type=int, default=4)
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cell", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.cell:
        _cell(json.loads(args.cell))
        return 0
    times = {kind: {"transform": [], "estimate": []} for kind in KINDS}
    for _ in range(args.repeats):
        for kind in KINDS:  # alternately, so load drift touches every kind alike
            payload = {**vars(args), "kind": kind}
            payload.pop("cell")
            done = run_cell_process(__file__, payload, timeout=1800)
            result = cell_result(done)
            if result is None:
                raise SystemExit(f"{kind}: {failure_tail(done)}")
            for step in ("transform", "estimate"):
                times[kind][step].append(result[step])
    print(
        f"n = {args.n}, {args.columns} columns, k = {args.k}, k-RR, CPU seconds "
        f"(median of {args.repeats}); load {os.getloadavg()[0]:.2f}"
    )
    print("| table | transform | estimate | both | × integer codes |")
    print("|---|---|---|---|---|")
    floor = None
    for kind in KINDS:
        t = statistics.median(times[kind]["transform"])
        e = statistics.median(times[kind]["estimate"])
        floor = t + e if floor is None else floor
        print(f"| {kind} | {t:.3f} | {e:.3f} | {t + e:.3f} | {(t + e) / floor:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
