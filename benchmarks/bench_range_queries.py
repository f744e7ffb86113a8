#!/usr/bin/env python
"""2-D range queries on a real table: HDG and TDG against the alternatives.

On two numeric columns of ``sklearn_uldp.datasets.load_flights`` (the
327,346 flights with an air time: ``distance`` in miles, public range
[0, 5000], and ``air_time`` in minutes, [0, 700]), 200 random boxes (each
side between two uniform points of the column's range), side by side in one
run, for each budget and repeat (fresh noise each repeat, the methods in
turn). The error is the mean absolute error of the fractions (MAE).

``independence``
    The product of the *exact* 1-D fractions (no noise: the error of
    ignoring the dependence between the columns).
``16x16 OUE + EM``
    Every user reports the cell of a 16 x 16 grid with OUE, estimated by EM
    (the package's default estimate); a box counts each cell in proportion
    to the part it covers.
``HDG`` / ``TDG``
    ``RangeQueryPrivatizer`` (the oracle of least variance per grid) and
    ``RangeQueryEstimator`` (the grids' thresholded estimates, made consistent and
    non-negative; HDG's response matrices), at the paper's guideline
    (``granularity="auto"``) and at fixed granularities; HDG also with EM
    per grid, and with local hashing for every grid (``mechanism="OLH"``:
    the faster oracle) with either estimate; ``HDG, exponent-3 rule`` at
    ``choose_granularity(n, eps, 2, exponent=3)``; ``--granularities 48,8
    40,8`` adds HDG at those fixed granularities.
``utility-optimized``
    ``sensitive_ranges={"distance": [(2500, 5000)], "air_time": [(360, 700)]}``
    (the transcontinental flights) against LDP at the same granularity.

Two sets of 200 boxes: over the whole ranges, and within the part nobody
declared sensitive (distance below 2,500 miles and air time below 360
minutes: boxes whose answer the utility-optimized release may improve).

Two more modes serve the comparison with the authors' research code
(github YangJianyu-bupt/privmdr, run from a scratch directory outside the
repository, never committed; see ``docs/marginals.md``):

``--export DIR``
    Writes the table discretized to 256 codes per column (what that code
    reads: integers in [0, 256)), 200 random integer boxes and their true
    answers, as ``DIR/flights_discrete.npz`` (the data only).
``--discrete DIR``
    Runs ours on that file (each code as the center of its unit interval,
    each box [l, r] as [l, r + 1)), for the same queries.
``--export DIR --synthetic normal|laplace`` (and ``--discrete DIR --synthetic ...``)
    Instead of the flights, two dependent columns of ``--n`` users
    (default 10**6) on ``c = 64`` integer codes, the domain and size of the
    authors' example data set (their code's example reads a "laplace" file of
    10**6 users with c = 64, not published): ``normal``, X ~ N(c/2, (c/8)^2)
    and Y = c/2 + 0.5 (X - c/2) + N(0, (c/8)^2 0.75) (correlation 0.5);
    ``laplace``, the same with Laplace noise of the same standard deviations;
    rounded down and clipped to [0, c). The boxes have the authors'
    "dimensional query volume" ``--volume`` (default 0.5, their default):
    each side covers int(volume * c) codes, placed uniformly at random;
    with ``--aligned``, as the authors' query generator places them
    (``generate_query.py``: each side int(16 * volume) of 16 blocks of c/16
    codes, the first block uniform: edges on multiples of c/16 codes).
    Written as ``DIR/<name>_discrete.npz``; these parameters are ours (the
    paper's generator and parameters could not be read, see
    ``docs/marginals.md``).
``--time N``
    Times ours (privatize + estimate + answer the 200 boxes) at N users
    drawn from the table with replacement (seeded), in this process, and
    prints one JSON line; a driver alternates it with the other code's run
    in fresh processes. ``--mechanism OLH`` times local hashing, ``--em``
    EM per grid (its cost counted in the answer).

Usage::

    python benchmarks/bench_range_queries.py --repeats 5 --json benchmarks/range_queries.json
    python benchmarks/bench_range_queries.py --quick
    python benchmarks/bench_range_queries.py --epsilons 1 2 --methods "16x16 OUE + EM" "HDG auto"
    python benchmarks/bench_range_queries.py --repeats 20 --methods "16x16 OUE + EM" \
        --granularities 48,8 40,8
    python benchmarks/bench_range_queries.py --export /tmp/x --synthetic laplace
    python benchmarks/bench_range_queries.py --discrete /tmp/x --synthetic laplace --epsilons 0.5
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import time
import warnings

import numpy as np

from sklearn_uldp import RAPPOR, EMEstimator
from sklearn_uldp.datasets import load_flights
from sklearn_uldp.exceptions import UninformativeEstimateWarning
from sklearn_uldp.marginals import RangeQueryEstimator, RangeQueryPrivatizer, choose_granularity
from sklearn_uldp.marginals._range_estimator import DEFAULT_THRESHOLD

BOUNDS = {"distance": (0.0, 5000.0), "air_time": (0.0, 700.0)}
SENSITIVE = {"distance": [(2500.0, 5000.0)], "air_time": [(360.0, 700.0)]}
DISCRETE = 256
SYNTHETIC_DOMAIN = 64


def _cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _table():
    frame = load_flights().numeric.dropna().reset_index(drop=True)
    return frame[list(BOUNDS)]


def _boxes(n_queries, seed, high=None):
    rng = np.random.default_rng(seed)
    low = np.array([b[0] for b in BOUNDS.values()])
    if high is None:
        high = np.array([b[1] for b in BOUNDS.values()])
    ends = np.sort(rng.uniform(low, high, size=(n_queries, 2, 2)), axis=1)
    return [
        {c: (float(ends[q, 0, j]), float(ends[q, 1, j])) for j, c in enumerate(BOUNDS)}
        for q in range(n_queries)
    ]


def _truth(values, queries):
    out = np.empty(len(queries))
    for i, query in enumerate(queries):
        inside = np.ones(len(values), dtype=bool)
        for j, (low, high) in enumerate(query.values()):
            inside &= (values[:, j] >= low) & (values[:, j] <= high)
        out[i] = inside.mean()
    return out


def _overlap(low, high, n_bins, lows, highs):
    edges = low + (high - low) * np.arange(n_bins + 1) / n_bins
    left = np.maximum(edges[:-1], np.asarray(lows)[:, None])
    right = np.minimum(edges[1:], np.asarray(highs)[:, None])
    return np.clip(right - left, 0, None) / np.diff(edges)


def _grid_answers(table, queries):
    g = table.shape[0]
    weights = [
        _overlap(*BOUNDS[c], g, [q[c][0] for q in queries], [q[c][1] for q in queries])
        for c in BOUNDS
    ]
    return np.einsum("qi,ij,qj->q", weights[0], table, weights[1])


def _independence(values, queries):
    out = np.empty(len(queries))
    for i, query in enumerate(queries):
        product = 1.0
        for j, (low, high) in enumerate(query.values()):
            product *= np.mean((values[:, j] >= low) & (values[:, j] <= high))
        out[i] = product
    return out


def _oue_grid(values, queries, eps, seed, g=16):
    codes = np.empty((len(values), 2), dtype=np.int64)
    for j, (low, high) in enumerate(BOUNDS.values()):
        codes[:, j] = np.clip(np.floor((values[:, j] - low) / (high - low) * g), 0, g - 1)
    cells = codes[:, 0] * g + codes[:, 1]
    mech = RAPPOR(eps, theta=0.5, categories=np.arange(g * g), random_state=seed)
    mech.set_params(packed_output=True).fit()
    est = EMEstimator(mechanism=mech).fit(mech.transform(cells.reshape(-1, 1)))
    return _grid_answers(np.asarray(est.distribution_).reshape(g, g), queries)


def _ours(frame, queries, eps, seed, **params):
    estimator = params.pop("estimator", None)
    threshold = params.pop("threshold", DEFAULT_THRESHOLD)
    priv = RangeQueryPrivatizer(eps, bounds=BOUNDS, random_state=seed, **params)
    reports = priv.fit_transform(frame)
    est = RangeQueryEstimator(estimator=estimator, threshold=threshold).fit(reports)
    return est.query_many(queries), priv


def _exponent_3_rule(n, eps):
    """HDG's granularity with the alternative model of issue 32 (exponent 3, fitted constants)."""
    return tuple(choose_granularity(n, eps, 2, exponent=3)[:2])


def run(repeats, epsilons, n_queries, seed, only=None, granularities=()):
    frame = _table()
    values = frame.to_numpy()
    everywhere = _boxes(n_queries, seed)
    public = np.array([SENSITIVE[c][0][0] for c in BOUNDS])
    inside = _boxes(n_queries, seed + 1, high=public)
    queries = everywhere + inside
    truth = _truth(values, queries)
    avoid = list(range(n_queries, 2 * n_queries))
    methods = {
        "independence (exact 1-D)": lambda eps, s: _independence(values, queries),
        "16x16 OUE + EM": lambda eps, s: _oue_grid(values, queries, eps, s),
        "HDG auto": lambda eps, s: _ours(frame, queries, eps, s),
        "HDG auto, EM per grid": lambda eps, s: _ours(
            frame, queries, eps, s, estimator=EMEstimator()
        ),
        "HDG auto, OLH": lambda eps, s: _ours(frame, queries, eps, s, mechanism="OLH"),
        "HDG auto, OLH, EM per grid": lambda eps, s: _ours(
            frame, queries, eps, s, mechanism="OLH", estimator=EMEstimator()
        ),
        "HDG auto, threshold None": lambda eps, s: _ours(frame, queries, eps, s, threshold=None),
        "HDG auto, threshold 0.5": lambda eps, s: _ours(frame, queries, eps, s, threshold=0.5),
        "HDG, exponent-3 rule": lambda eps, s: _ours(
            frame, queries, eps, s, granularity=_exponent_3_rule(len(frame), eps)
        ),
        "HDG (48, 8)": lambda eps, s: _ours(frame, queries, eps, s, granularity=(48, 8)),
        "HDG (64, 16)": lambda eps, s: _ours(frame, queries, eps, s, granularity=(64, 16)),
        "TDG auto": lambda eps, s: _ours(frame, queries, eps, s, method="tdg"),
        "TDG 16": lambda eps, s: _ours(frame, queries, eps, s, method="tdg", granularity=16),
        "HDG auto, utility-optimized": lambda eps, s: _ours(
            frame, queries, eps, s, sensitive_ranges=SENSITIVE
        ),
        "HDG (64, 16), utility-optimized": lambda eps, s: _ours(
            frame, queries, eps, s, granularity=(64, 16), sensitive_ranges=SENSITIVE
        ),
    }
    for g1, g2 in granularities:
        methods[f"HDG ({g1}, {g2})"] = lambda eps, s, g=(g1, g2): _ours(
            frame, queries, eps, s, granularity=g
        )
    if only:
        only = list(only) + [f"HDG ({g1}, {g2})" for g1, g2 in granularities]
        unknown = sorted(set(only) - set(methods))
        if unknown:
            raise SystemExit(f"unknown methods {unknown}; choose among {list(methods)}")
        methods = {name: methods[name] for name in only}
    records = []
    for eps in epsilons:
        for rep in range(repeats):
            for name, method in methods.items():
                t0, c0 = time.perf_counter(), _cpu()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", UninformativeEstimateWarning)
                    out = method(eps, 1000 * rep + 17)
                wall, cpu = time.perf_counter() - t0, _cpu() - c0
                answers, priv = out if isinstance(out, tuple) else (out, None)
                errors = np.abs(answers - truth)
                record = {
                    "epsilon": eps,
                    "repeat": rep,
                    "method": name,
                    "mae": float(errors[:n_queries].mean()),
                    "mae_non_sensitive_boxes": float(errors[avoid].mean()),
                    "wall": wall,
                    "cpu": cpu,
                }
                if priv is not None:
                    record["granularity"] = list(priv.granularity_)
                    record["oracles"] = sorted(set(priv.oracles_))
                records.append(record)
                print(
                    f"eps={eps} rep={rep} {name:30s} MAE {record['mae']:.4f} "
                    f"(non-sensitive boxes {record['mae_non_sensitive_boxes']:.4f}) "
                    f"{wall:.1f}s wall {cpu:.1f}s cpu "
                    + (f"g={record.get('granularity')}" if priv is not None else ""),
                    flush=True,
                )
    return records


def summarize(records):
    import pandas as pd

    frame = pd.DataFrame(records)
    return (
        frame.groupby(["epsilon", "method"], sort=False)[["mae", "mae_non_sensitive_boxes"]]
        .agg(["mean", "std"])
        .round(4)
    )


def summarize_paired(records, reference="16x16 OUE + EM"):
    """Each method's MAE minus the reference's in the same repeat (same boxes, same seed).

    The mean difference, its standard error over the repeats, its 95 %
    t-interval (the method is shown below the reference when the interval's
    upper end is below 0) and the number of repeats where the method is
    lower; None without the reference.
    """
    import pandas as pd
    from scipy.stats import t as student

    frame = pd.DataFrame(records)
    if reference not in set(frame["method"]):
        return None
    rows = []
    for eps, part in frame.groupby("epsilon", sort=False):
        table = part.pivot(index="repeat", columns="method", values="mae")
        for name in table.columns.drop(reference):
            diff = (table[name] - table[reference]).dropna()
            se = float(diff.std(ddof=1) / np.sqrt(len(diff))) if len(diff) > 1 else float("nan")
            half = float(student.ppf(0.975, len(diff) - 1)) * se if len(diff) > 1 else float("nan")
            rows.append(
                {
                    "epsilon": eps,
                    "method": name,
                    "difference": round(float(diff.mean()), 5),
                    "standard error": round(se, 5),
                    "95% low": round(float(diff.mean()) - half, 5),
                    "95% high": round(float(diff.mean()) + half, 5),
                    "lower in": f"{int((diff < 0).sum())} of {len(diff)}",
                }
            )
    return pd.DataFrame(rows).set_index(["epsilon", "method"])


# ------------------------------------------------------------------ the anchor's data
def _discretize(values):
    codes = np.empty(values.shape, dtype=np.int64)
    for j, (low, high) in enumerate(BOUNDS.values()):
        codes[:, j] = np.clip(np.floor((values[:, j] - low) / (high - low) * DISCRETE), 0, 255)
    return codes


def _synthetic_codes(kind, n, rng, c=SYNTHETIC_DOMAIN, rho=0.5, continuous=False):
    """Two dependent columns on c codes (correlation ``rho``), see the module docstring.

    ``continuous``: the values before rounding down (clipped to [0, c)), for
    ``bench_range_granularity.py --rules``.
    """
    sd = c / 8
    if kind == "normal":
        first = rng.normal(0.0, sd, n)
        noise = rng.normal(0.0, sd * np.sqrt(1 - rho**2), n)
    else:  # Laplace of standard deviation sd: scale sd / sqrt(2)
        first = rng.laplace(0.0, sd / np.sqrt(2), n)
        noise = rng.laplace(0.0, sd * np.sqrt(1 - rho**2) / np.sqrt(2), n)
    values = np.column_stack([c / 2 + first, c / 2 + rho * first + noise])
    if continuous:
        return np.clip(values, 0.0, np.nextafter(float(c), 0.0))
    return np.clip(np.floor(values), 0, c - 1).astype(np.int64)


def _volume_boxes(n_queries, rng, c, volume):
    """Integer boxes whose sides cover int(volume * c) codes each, placed at random."""
    length = max(1, int(volume * c))
    low = rng.integers(0, c - length + 1, size=(n_queries, 2))
    return np.stack([low, low + length - 1], axis=1)


def _aligned_boxes(n_queries, rng, c, volume, blocks=16):
    """Boxes as the authors' query generator draws them: each side
    int(blocks * volume) of ``blocks`` blocks of c / blocks codes, its first
    block uniform (their ``flag_domain_size`` is 16, or c if smaller)."""
    blocks = min(blocks, c)
    width, length = c // blocks, int(blocks * volume)
    first = rng.integers(0, blocks - length + 1, size=(n_queries, 2))
    return np.stack([first * width, (first + length) * width - 1], axis=1)


def _npz_name(synthetic):
    return f"{synthetic or 'flights'}_discrete.npz"


def export(directory, n_queries, seed, synthetic=None, n=10**6, volume=0.5, aligned=False):
    """The discretized table (or synthetic data), integer boxes and their answers.

    ``aligned``: the synthetic data's boxes as the authors' generator places them.
    """
    rng = np.random.default_rng(seed)
    if synthetic is None:
        codes, domain = _discretize(_table().to_numpy()), DISCRETE
        boxes = np.sort(rng.integers(0, DISCRETE, size=(n_queries, 2, 2)), axis=1)
    else:
        codes, domain = _synthetic_codes(synthetic, n, rng), SYNTHETIC_DOMAIN
        draw = _aligned_boxes if aligned else _volume_boxes
        boxes = draw(n_queries, rng, domain, volume)
    truth = np.array(
        [
            np.mean(
                (codes[:, 0] >= b[0, 0])
                & (codes[:, 0] <= b[1, 0])
                & (codes[:, 1] >= b[0, 1])
                & (codes[:, 1] <= b[1, 1])
            )
            for b in boxes
        ]
    )
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, _npz_name(synthetic))
    try:  # "x": never overwrite, also when two runs race
        with open(path, "xb") as fh:
            np.savez(fh, codes=codes, boxes=boxes, truth=truth, domain=domain)
    except FileExistsError:
        raise SystemExit(f"{path} exists; remove it or choose another directory.") from None
    print(f"wrote {path}: {len(codes)} rows, {n_queries} boxes")


def _discrete_queries(boxes):
    names = list(BOUNDS)
    return [{names[j]: (float(b[0, j]), float(b[1, j]) + 1.0) for j in range(2)} for b in boxes]


def discrete(directory, repeats, eps, method, granularity="auto", synthetic=None):
    data = np.load(os.path.join(directory, _npz_name(synthetic)))
    codes, boxes, truth = data["codes"], data["boxes"], data["truth"]
    import pandas as pd

    frame = pd.DataFrame(codes + 0.5, columns=list(BOUNDS))
    queries = _discrete_queries(boxes)
    bounds = {c: (0.0, float(data["domain"])) for c in BOUNDS}
    for rep in range(repeats):
        priv = RangeQueryPrivatizer(
            eps, bounds=bounds, method=method, granularity=granularity, random_state=rep
        )
        answers = RangeQueryEstimator().fit(priv.fit_transform(frame)).query_many(queries)
        print(
            json.dumps(
                {
                    "who": "sklearn-uldp",
                    "method": method,
                    "data": synthetic or "flights",
                    "n": len(codes),
                    "epsilon": eps,
                    "repeat": rep,
                    "granularity": list(priv.granularity_),
                    "mae": float(np.abs(answers - truth).mean()),
                }
            ),
            flush=True,
        )


def timing(n, eps, method, directory=None, seed=0, mechanism="auto", warm=False, em=False):
    """Privatize + estimate + answer at n users drawn from the table (one JSON line).

    ``em``: estimate each grid by EM (``RangeQueryEstimator(estimator=EMEstimator())``,
    its cost counted in "answer") rather than the unbiased estimate.

    ``warm``: first privatize and answer 1,000 users with the privatizer of
    the n users' configuration (``n_users=n``: the same granularity and
    grids, with the compiled loops whatever the size, so the samplers'
    compiled kernels are loaded and the oracles' rankings for these grid
    sizes are made, as in a collector that served a batch before), then time
    the n users (fit included).
    """
    import pandas as pd

    if directory is None:
        values = _table().to_numpy()
        bounds = BOUNDS
        queries = _boxes(200, seed)
    else:
        data = np.load(os.path.join(directory, "flights_discrete.npz"))
        values = data["codes"] + 0.5
        bounds = {c: (0.0, float(DISCRETE)) for c in BOUNDS}
        queries = _discrete_queries(data["boxes"])
    rows = np.random.default_rng(seed).integers(0, len(values), n)
    frame = pd.DataFrame(values[rows], columns=list(BOUNDS))
    if warm:
        from _measure import compiled_warmup

        small = RangeQueryPrivatizer(
            eps, bounds=bounds, method=method, random_state=seed, mechanism=mechanism, n_users=n
        )
        # (the compiled loops too, which a job of 1,000 users would not take)
        with compiled_warmup():
            RangeQueryEstimator(estimator=EMEstimator() if em else None).fit(
                small.fit_transform(frame.iloc[:1000])
            ).query_many(queries)
    # A full collection now rather than inside the timed call (the imports
    # left a large heap, whose first collection costs 0.05-0.1 s wherever it
    # falls); the other code's harness does the same.
    gc.collect()
    t0, c0 = time.perf_counter(), _cpu()
    priv = RangeQueryPrivatizer(
        eps, bounds=bounds, method=method, random_state=seed, mechanism=mechanism
    )
    reports = priv.fit_transform(frame)
    t1 = time.perf_counter()
    estimator = EMEstimator() if em else None
    answers = RangeQueryEstimator(estimator=estimator).fit(reports).query_many(queries)
    t2, c2 = time.perf_counter(), _cpu()
    print(
        json.dumps(
            {
                "who": "sklearn-uldp",
                "method": method,
                "oracles": sorted(set(priv.oracles_)),
                "estimator": "EM per grid" if em else "unbiased",
                "warm": warm,
                "n": n,
                "granularity": list(priv.granularity_),
                "privatize": t1 - t0,
                "answer": t2 - t1,
                "total": t2 - t0,
                "cpu": c2 - c0,
                "n_answers": len(answers),
                "load": os.getloadavg()[0],
            }
        ),
        flush=True,
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--epsilons", type=float, nargs="+", default=[1.0])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", default=None, help="write the records here (not overwritten)")
    parser.add_argument("--quick", action="store_true", help="one repeat")
    parser.add_argument("--export", metavar="DIR", default=None)
    parser.add_argument("--discrete", metavar="DIR", default=None)
    parser.add_argument("--time", type=int, metavar="N", default=None)
    parser.add_argument(
        "--methods", nargs="+", default=None, help="run only these methods (their names)"
    )
    parser.add_argument(
        "--granularities",
        nargs="+",
        default=(),
        metavar="G1,G2",
        help="also run HDG at these fixed granularities (with --methods: added to them)",
    )
    parser.add_argument(
        "--synthetic",
        choices=["normal", "laplace"],
        default=None,
        help="--export/--discrete: synthetic data on 64 codes instead of the flights",
    )
    parser.add_argument("--n", type=int, default=10**6, help="users (--synthetic)")
    parser.add_argument("--volume", type=float, default=0.5, help="box side / c (--synthetic)")
    parser.add_argument(
        "--aligned",
        action="store_true",
        help="--export --synthetic: boxes on the authors' 16 blocks (their query generator)",
    )
    parser.add_argument("--method", default="hdg", choices=["hdg", "tdg"])
    parser.add_argument("--mechanism", default="auto", help="the grids' oracle (--time)")
    parser.add_argument("--warm", action="store_true", help="--time after a warm-up call")
    parser.add_argument("--em", action="store_true", help="--time with EM per grid")
    parser.add_argument(
        "--granularity", type=int, nargs="+", default=None, help="g (TDG) or g1 g2 (--discrete)"
    )
    args = parser.parse_args()
    if args.aligned and not (args.export and args.synthetic):
        parser.error("--aligned goes with --export DIR --synthetic normal|laplace")
    if args.export:
        export(
            args.export, args.queries, args.seed, args.synthetic, args.n, args.volume, args.aligned
        )
        return
    if args.time:
        timing(
            args.time,
            args.epsilons[0],
            args.method,
            args.discrete,
            args.seed,
            args.mechanism,
            args.warm,
            args.em,
        )
        return
    if args.discrete:
        granularity = "auto"
        if args.granularity:
            granularity = (
                args.granularity[0] if len(args.granularity) == 1 else tuple(args.granularity)
            )
        discrete(
            args.discrete, args.repeats, args.epsilons[0], args.method, granularity, args.synthetic
        )
        return
    repeats = 1 if args.quick else args.repeats
    if args.json and os.path.exists(args.json):
        raise SystemExit(f"{args.json} exists; remove it or choose another file.")
    print(f"load average at start: {os.getloadavg()}", flush=True)
    granularities = [tuple(int(g) for g in text.split(",")) for text in args.granularities]
    records = run(repeats, args.epsilons, args.queries, args.seed, args.methods, granularities)
    print(
        f"\nMAE, mean and standard deviation over {repeats} repeat(s): {args.queries} boxes "
        "over the whole ranges, and as many within the non-sensitive part"
    )
    print(summarize(records).to_string())
    paired = summarize_paired(records)
    if paired is not None:
        print("\nMAE minus the 16x16 grid's in the same repeat (whole ranges):")
        print(paired.to_string())
    print(f"load average at end: {os.getloadavg()}")
    if args.json:
        with open(args.json, "x", encoding="utf-8") as fh:
            json.dump(records, fh, indent=1)


if __name__ == "__main__":
    main()
