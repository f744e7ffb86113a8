"""SHA-256 digests of seeded outputs of every mechanism family, for refactors.

A refactor that must leave outputs bit for bit unchanged (issue 31: the
registry, the channel contract, heavy hitters on the shared base) runs this
script on the tree before the change and after it, and compares::

    python benchmarks/output_digests.py --write /tmp/before.json   # old tree
    python benchmarks/output_digests.py --check /tmp/before.json   # new tree

Each entry digests one seeded output: a spec (its JSON), reports (numpy,
pandas, sparse and packed containers), estimates (every estimator of the
family, intervals, posteriors), the sampling strategies of
``DataFramePrivatizer`` (numeric columns, fakes), the statistics tests, the
empirical audit, the chunked reductions, and heavy hitters. An entry whose
computation raises records the exception's type, so a behaviour change in an
error path shows too. Digests are of this machine's floats: compare runs on
the same machine and dependencies (the estimates are not pinned across
processors, which is what the tests' tolerances are for).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
import warnings

import numpy as np
import pandas as pd
import scipy.sparse as sp

VERBOSE = False


def _digest(obj) -> str:
    h = hashlib.sha256()
    _feed(h, obj)
    return h.hexdigest()


def _feed(h, obj):
    if isinstance(obj, pd.DataFrame):
        h.update(b"frame")
        _feed(h, [str(c) for c in obj.columns])
        _feed(h, [str(t) for t in obj.dtypes])
        _feed(h, [str(i) for i in obj.index[:50]] + [len(obj.index)])
        for c in obj.columns:
            _feed(h, obj[c].to_numpy(dtype=object, na_value=None))
        _feed(h, json.dumps(obj.attrs, sort_keys=True, default=repr))
    elif isinstance(obj, pd.Series):
        h.update(b"series")
        _feed(h, [repr(i) for i in obj.index])
        _feed(h, obj.to_numpy(dtype=object))
    elif sp.issparse(obj):
        obj = sp.csr_array(obj)
        h.update(b"csr")
        _feed(h, [obj.indptr, obj.indices, obj.data, list(obj.shape)])
        _feed(h, getattr(obj, "channel", None))
    elif type(obj).__name__ == "PackedReports":
        h.update(b"packed")
        _feed(h, [np.asarray(obj.data), obj.n_bits, obj.channel])
    elif isinstance(obj, np.ndarray):
        h.update(f"nd{obj.dtype.str}{obj.shape}".encode())
        if obj.dtype.kind == "O":
            h.update(repr(obj.tolist()).encode())
        else:
            h.update(np.ascontiguousarray(obj).tobytes())
        channel = getattr(obj, "channel", None)
        if channel is not None:
            _feed(h, channel)
    elif isinstance(obj, dict):
        h.update(b"dict")
        for k in obj:
            _feed(h, repr(k))
            _feed(h, obj[k])
    elif isinstance(obj, (list, tuple)):
        h.update(f"seq{len(obj)}".encode())
        for v in obj:
            _feed(h, v)
    elif hasattr(obj, "to_dict") and hasattr(obj, "get_params") and not isinstance(obj, type):
        h.update(b"spec")  # a channel or protocol: its public spec
        h.update(json.dumps(obj.to_dict(), sort_keys=True, default=repr).encode())
    elif isinstance(obj, float):
        h.update(np.float64(obj).tobytes())
    else:
        h.update(repr(obj).encode())


# ------------------------------------------------------------------- inputs
CATS = ["a", "b", "c", "d", "e"]
RNG = np.random.default_rng(20240531)
N = 3000
X_CAT = RNG.choice(CATS, p=[0.4, 0.25, 0.15, 0.12, 0.08], size=(N, 1)).astype(object)
X_NUM = np.clip(RNG.normal(6.0, 2.0, size=(N, 1)), -1, 13)  # some values clipped
X_TWO = np.column_stack([RNG.uniform(0, 1, N), RNG.uniform(0, 10, N)])
INTS = RNG.integers(0, 8, size=(N, 1))


def categorical_mechanisms():
    from sklearn_uldp import mechanisms as m

    s = {"sensitive": ["a", "b"], "categories": CATS}
    return {
        "rr": m.RandomizedResponse(1.0, categories=CATS),
        "urr": m.UtilityOptimizedRR(1.0, **s),
        "rappor": m.RAPPOR(1.0, categories=CATS),
        "rappor_basic": m.RAPPOR(1.0, theta=None, categories=CATS),
        "urap": m.UtilityOptimizedRAPPOR(1.0, **s),
        "uoue": m.UtilityOptimizedOUE(1.0, **s),
        "ubd": m.UtilityOptimizedBlockDesign(1.0, sensitive=["a", "b", "c"], categories=CATS),
        "uss": m.UtilityOptimizedSubsetSelection(1.0, **s),
        "ss": m.SubsetSelection(1.0, categories=CATS),
        "hr": m.HadamardResponse(1.0, categories=CATS),
        "hlhr": m.HighLowHadamardResponse(1.0, **s),
        "uhr": m.UtilityOptimizedHadamardResponse(1.0, **s),
        "bhr": m.BlockHadamardResponse(
            1.0, blocks=[["a", "b"], ["c"], ["d", "e"]], categories=CATS
        ),
        "binary_optimal": m.BinaryOptimalResponse(1.0, 2.0, categories=["a", "b"]),
        "identity": m.NonPrivate(categories=CATS),
        "olh": m.OptimizedLocalHashing(1.0, categories=CATS),
        "blh": m.BinaryLocalHashing(1.0, categories=CATS),
        "cms": m.CountMeanSketch(2.0, categories=CATS),
        "hcms": m.HadamardCountMeanSketch(2.0, categories=CATS),
        "lgrr": m.LongitudinalGRR(2.0, categories=CATS),
        "lue": m.LongitudinalUE(2.0, categories=CATS),
        "loloha": m.LongitudinalLocalHashing(2.0, categories=CATS),
        "dbitflip": m.DBitFlipPM(2.0, categories=CATS),
        "ulrr": m.UtilityOptimizedLongitudinalRR(2.0, **s),
        "ulrap": m.UtilityOptimizedLongitudinalRAPPOR(2.0, **s),
        "pum_urr": m.PersonalizedMechanism(1.0, sensitive=["a"], tags=["home"], categories=CATS),
        "pum_urap": m.PersonalizedMechanism(
            1.0, sensitive=["a"], tags=["home"], mechanism="urap", categories=CATS
        ),
    }


def numeric_mechanisms():
    from sklearn_uldp import numeric as nm

    b = (0, 12)
    return {
        "duchi": nm.DuchiMechanism(1.0, bounds=b),
        "piecewise": nm.PiecewiseMechanism(1.0, bounds=b),
        "hybrid": nm.HybridMechanism(1.0, bounds=b),
        "square_wave": nm.SquareWave(1.0, bounds=b),
        "uobm": nm.UtilityOptimizedOneBitMechanism(1.0, bounds=b, sensitive=(0, 4)),
        "uobm_disclosure": nm.UtilityOptimizedOneBitMechanism(
            1.0, bounds=b, sensitive=(0, 4), disclosure=0.1
        ),
    }


def entries():  # noqa: C901 (one flat list of cases reads best)
    from sklearn.base import clone

    from sklearn_uldp import compose, estimators, numeric, parallel, privacy, stats
    from sklearn_uldp.mechanisms import Channel, get_channel

    out = {}

    def record(name, fn):
        start = time.perf_counter()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                value = fn()
        except Exception as exc:  # noqa: BLE001 (the error path is an output too)
            value = f"ERR:{type(exc).__name__}"
            if VERBOSE:
                print(f"{name}: {value} {str(exc)[:150]}", file=sys.stderr)
        out[name] = _digest(value)
        if VERBOSE and time.perf_counter() - start > 1.0:
            print(f"{name}: {time.perf_counter() - start:.1f} s", file=sys.stderr)

    # ------------------------------------------------ categorical mechanisms
    for name, mech in categorical_mechanisms().items():
        X = X_CAT[:, :1] if name != "binary_optimal" else np.where(X_CAT == "a", "a", "b")
        is_pum = name.startswith("pum")
        if is_pum:
            X = np.column_stack([X, np.where(RNG.random(N) < 0.5, "b", None)]).astype(object)
            X = pd.DataFrame(X, columns=["value", "home"])
        if "random_state" in mech.get_params():
            mech.set_params(random_state=7)
        rep = mech.fit(X).transform(X)
        record(f"{name}/spec", lambda m=mech: json.dumps(m.spec(), sort_keys=True))
        record(f"{name}/spec_roundtrip", lambda m=mech: Channel.from_dict(m.spec()).to_json())
        record(f"{name}/reports", lambda r=rep: r)
        record(f"{name}/reports_again", lambda m=mech, x=X: m.transform(x))
        record(
            f"{name}/pandas",
            lambda m=mech, x=X: clone(m).set_output(transform="pandas").fit(x).transform(x),
        )
        for option in ("sparse_output", "packed_output"):
            if option in mech.get_params():
                record(
                    f"{name}/{option}",
                    lambda m=mech, x=X, o=option: (
                        clone(m).set_params(**{o: True}).fit(x).transform(x)
                    ),
                )
        if not is_pum:
            record(
                f"{name}/two_columns",
                lambda m=mech, x=X: (
                    clone(m)
                    .fit(np.column_stack([x, x[::-1]]))
                    .transform(np.column_stack([x, x[::-1]]))
                ),
            )
        for est in (
            estimators.EmpiricalEstimator(),
            estimators.EmpiricalEstimator(projection="simplex"),
            estimators.ThresholdEstimator(),
            estimators.EMEstimator(),
            estimators.EMEstimator(tol="mle" if False else 1e-10),
        ):
            if is_pum:
                est = estimators.PersonalizedEstimator()
            params = est.get_params()
            variant = f"{params.get('projection', '')}{params.get('tol', '')}"
            key = f"{name}/{type(est).__name__}/{variant}"
            record(key, lambda e=est, r=rep: e.fit(r).distribution_)
            record(key + "/ci", lambda e=est, r=rep: e.fit(r).confidence_intervals(0.1))
            if isinstance(est, estimators.EmpiricalEstimator) and name in (
                "rr",
                "urr",
                "rappor",
                "urap",
                "olh",
                "ss",
            ):
                record(key + "/std", lambda e=est, r=rep: e.fit(r).standard_errors_)
            record(key + "/score", lambda e=est, r=rep: e.fit(r).score(r))
            if is_pum:
                break
        record(
            f"{name}/predict_proba",
            lambda r=rep: estimators.EMEstimator().fit(r).predict_proba(r[:50]),
        )
        record(
            f"{name}/chunks",
            lambda r=rep: (
                estimators.EMEstimator().partial_fit(r[:1000]).partial_fit(r[1000:]).distribution_
            ),
        )
        record(
            f"{name}/reduce", lambda r=rep: parallel.reduce_statistics([r[:1000], r[1000:]]).counts
        )
        record(
            f"{name}/two_sample",
            lambda r=rep: vars(
                stats.two_sample_test(
                    estimators.EmpiricalEstimator().fit(r[:1500]),
                    estimators.EmpiricalEstimator().fit(r[1500:]),
                )
            ),
        )
        if not is_pum:
            record(
                f"{name}/check_ldp",
                lambda m=mech: (
                    (privacy.check_ldp(m).satisfied, privacy.check_ldp(m).epsilon)
                    if m.channel_.n_outputs < 5000
                    else None
                ),
            )

    # ------------------------------------------------ longitudinal (memoized)
    from sklearn_uldp.utils import generate_user_secrets

    secrets = generate_user_secrets(N, random_state=3)
    for name in ("lgrr", "lue", "loloha", "dbitflip", "ulrr", "ulrap"):
        mech = categorical_mechanisms()[name].set_params(random_state=5).fit(X_CAT)
        r1 = mech.transform(X_CAT, user_secrets=secrets)
        r2 = mech.transform(X_CAT, user_secrets=secrets)
        record(f"{name}/memo/r1", lambda r=r1: r)
        record(f"{name}/memo/r2", lambda r=r2: r)
        record(
            f"{name}/memo/longitudinal",
            lambda a=r1, b=r2: (
                [
                    e.distribution_
                    for e in [estimators.LongitudinalEstimator().fit([a, b])[k] for k in (0, 1)]
                ]
                if False
                else estimators.LongitudinalEstimator().fit({"r1": a, "r2": b})["r2"].distribution_
            ),
        )
        record(f"{name}/memo/exposure", lambda m=mech: m.channel_.exposure(4))

    # ------------------------------------------------------------- numeric
    for name, mech in numeric_mechanisms().items():
        mech.set_params(random_state=9)
        rep = mech.fit(X_NUM).transform(X_NUM)
        record(f"{name}/spec", lambda m=mech: json.dumps(m.spec(), sort_keys=True))
        record(f"{name}/spec_roundtrip", lambda m=mech: Channel.from_dict(m.spec()).to_json())
        record(f"{name}/reports", lambda r=rep: r)
        record(
            f"{name}/pandas",
            lambda m=mech: clone(m).set_output(transform="pandas").fit(X_NUM).transform(X_NUM),
        )
        record(
            f"{name}/two_columns",
            lambda m=mech: (
                clone(m)
                .fit(np.column_stack([X_NUM, X_NUM]))
                .transform(np.column_stack([X_NUM, X_NUM]))
            ),
        )
        record(f"{name}/mean", lambda r=rep: vars(numeric.MeanEstimator().fit(r)))
        record(f"{name}/sw", lambda r=rep: numeric.SquareWaveEstimator().fit(r).distribution_)
        record(f"{name}/em_refused", lambda r=rep: estimators.EMEstimator().fit(r).distribution_)
        record(
            f"{name}/reduce", lambda r=rep: parallel.reduce_statistics([r[:1000], r[1000:]]).counts
        )
        record(f"{name}/matrix", lambda m=mech: m.channel_.matrix(np.linspace(0, 12, 7)))
    multi = numeric.MultiNumericMechanism(2.0, bounds=[(0, 1), (0, 10)], random_state=4)
    rep = multi.fit(X_TWO).transform(X_TWO)
    record("multi/spec", lambda: multi.spec())
    record("multi/reports", lambda: rep)
    record("multi/mean", lambda: vars(numeric.MeanEstimator().fit(rep)))
    binner = numeric.Binner(bins=5, bounds=(0, 12))
    record("binner", lambda: binner.fit_transform(X_NUM))

    # ------------------------------------------------------- many attributes
    df = pd.DataFrame(
        {
            "c1": X_CAT[:, 0],
            "c2": RNG.choice(["x", "y", "z"], size=N).astype(object),
            "bits": RNG.choice(CATS, size=N).astype(object),
            "num": X_NUM[:, 0],
            "num2": RNG.uniform(0, 5, N),
        }
    )

    def privatizer(strategy, **kw):
        from sklearn_uldp import mechanisms as m
        from sklearn_uldp import numeric as nm

        return compose.DataFramePrivatizer(
            [
                ("c1", m.UtilityOptimizedRR(1.0, sensitive=["a"], categories=CATS), "c1"),
                ("c2", m.RandomizedResponse(1.0, categories=["x", "y", "z"]), "c2"),
                ("bits", m.RAPPOR(1.0, theta=0.5, categories=CATS), "bits"),
                ("num", nm.DuchiMechanism(1.0, bounds=(0, 12)), "num"),
                ("num2", nm.HybridMechanism(1.0, bounds=(0, 5)), "num2"),
            ],
            strategy=strategy,
            random_state=11,
            **kw,
        )

    for strategy in ("split", "sample", "sample+fake"):
        for kw in (
            ({}, {"fake": "random"}, {"fake": {"bits": "zero"}})
            if strategy == "sample+fake"
            else ({},)
        ):
            priv = privatizer(strategy, **kw)
            key = f"df/{strategy}/{kw}"
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    reps = priv.fit(df).transform(df)
            except Exception as exc:  # noqa: BLE001
                out[key] = f"ERR:{type(exc).__name__}"
                if VERBOSE:
                    print(f"{key}: {out[key]} {str(exc)[:150]}", file=sys.stderr)
                continue
            record(key + "/reports", lambda r=reps: r)
            record(
                key + "/channels",
                lambda p=priv: (
                    {k: c.to_dict() for k, c in p.channels_.items()}
                    if hasattr(p, "channels_")
                    else None
                ),
            )
            record(key + "/estimate", lambda p=priv, r=reps: p.estimate(r))
            record(
                key + "/estimate_em", lambda p=priv, r=reps: p.estimate(r, estimators.EMEstimator())
            )
            record(
                key + "/guarantees",
                lambda p=priv: (
                    getattr(p, "attribute_epsilons_", None),
                    getattr(p, "epsilon_spent_", None),
                ),
            )
            record(key + "/again", lambda p=priv: p.transform(df))
            record(
                key + "/channel_of_cols",
                lambda r=reps: {c: (get_channel(r[[c]]) or "none") for c in r.columns},
            )
    joint = compose.JointEncoder({"c1": CATS, "c2": ["x", "y", "z"]})
    record("joint", lambda: joint.fit_transform(df[["c1", "c2"]]))

    # --------------------------------------------------------- statistics
    a = categorical_mechanisms()["rr"].set_params(random_state=1).fit(X_CAT)
    b = categorical_mechanisms()["rappor"].set_params(random_state=2).fit(X_CAT)
    ra, rb = a.transform(X_CAT), b.transform(X_CAT[::-1])
    record("assoc/rr_rappor", lambda: vars(stats.association_test(ra, rb)))
    record("assoc/rr_rr", lambda: vars(stats.association_test(ra, a.transform(X_CAT[::-1]))))
    record(
        "assoc/boot",
        lambda: vars(
            stats.association_test(ra, rb, method="bootstrap", n_resamples=20, random_state=0)
        ),
    )
    record("joint_distribution", lambda: stats.joint_distribution(ra, rb))

    # -------------------------------------------------------------- audits
    for name in ("rr", "urr", "rappor", "hr", "olh", "cms"):
        mech = categorical_mechanisms()[name].set_params(random_state=0).fit()
        record(
            f"audit/{name}",
            lambda m=mech: vars(privacy.audit_mechanism(m, n_samples=3000, random_state=0)),
        )
    record(
        "audit/urr_pairs",
        lambda: vars(
            privacy.audit_mechanism(
                categorical_mechanisms()["urr"].set_params(random_state=0).fit(),
                pairs="all",
                n_samples=2000,
                random_state=1,
            )
        ),
    )
    record(
        "audit/duchi",
        lambda: vars(
            privacy.audit_mechanism(
                numeric_mechanisms()["duchi"].set_params(random_state=0).fit(),
                pairs=[(1.0, 11.0)],
                n_samples=2000,
                random_state=0,
            )
        ),
    )
    record(
        "audit/lgrr_rounds",
        lambda: vars(
            privacy.audit_rounds(
                categorical_mechanisms()["lgrr"].set_params(random_state=0).fit(),
                2,
                n_samples=2000,
                random_state=0,
            )
        ),
    )
    record(
        "audit/lue_rounds",
        lambda: vars(
            privacy.audit_rounds(
                categorical_mechanisms()["lue"].set_params(random_state=0).fit(),
                2,
                n_samples=2000,
                random_state=0,
            )
        ),
    )

    def callable_mech(x, rng):
        return np.where(rng.random(np.shape(x)) < 0.7, x, 1 - np.asarray(x))

    record(
        "audit/callable",
        lambda: vars(
            privacy.audit_mechanism(callable_mech, pairs=[(0, 1)], n_samples=2000, random_state=0)
        ),
    )

    # --------------------------------------------------------- heavy hitters
    from sklearn_uldp import heavy_hitters as hh

    words = np.array(
        ["apple", "banana", "cherry", "date", "elder", "fig", "grape"] * 300
        + [f"w{i}" for i in range(900)],
        dtype=object,
    )
    hh_mechs = {
        "pem": hh.PrefixExtendingMethod(4.0, top_k=5, random_state=3),
        "treehist": hh.TreeHist(4.0, top_k=5, random_state=3),
        "bloom": hh.BloomRAPPOR(n_bits=32, n_cohorts=4, random_state=3),
        "uhh": hh.UtilityOptimizedHeavyHitters(4.0, sensitive=["apple"], top_k=5, random_state=3),
    }
    for name, mech in hh_mechs.items():
        rep = mech.fit(words).transform(words)
        record(f"hh/{name}/spec", lambda m=mech: json.dumps(m.spec(), sort_keys=True))
        record(f"hh/{name}/reports", lambda r=rep: r)
        record(
            f"hh/{name}/pandas",
            lambda m=mech: clone(m).set_output(transform="pandas").fit(words).transform(words),
        )
        record(
            f"hh/{name}/protocol_roundtrip",
            lambda m=mech: hh.protocol_from_dict(m.spec()).to_json(),
        )
        if name == "bloom":
            record(
                f"hh/{name}/decode",
                lambda r=rep: (
                    hh.BloomRAPPORDecoder(["apple", "banana", "kiwi"]).fit(r).result_
                    if hasattr(hh.BloomRAPPORDecoder(["a"]), "result_")
                    else vars(hh.BloomRAPPORDecoder(["apple", "banana", "kiwi"]).fit(r))
                ),
            )
        else:
            record(f"hh/{name}/estimate", lambda r=rep: vars(hh.HeavyHitterEstimator().fit(r)))
        small = clone(mech).set_params(n_bits=8, n_cohorts=2) if name == "bloom" else clone(mech)
        record(f"hh/{name}/matrix", lambda m=small: m.fit().channel_matrix(["apple", "banana"]))
        record(f"hh/{name}/epsilon", lambda m=mech: m.epsilon_spent_)
        record(
            f"hh/{name}/reduce",
            lambda r=rep: parallel.reduce_statistics([r[:1000], r[1000:]]).counts,
        )
    # ------------------------------------------------------------ command line
    import contextlib
    import io
    import os
    import tempfile

    from sklearn_uldp.cli import main as cli

    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "data.csv")
        df[["c1", "c2", "bits", "num"]].to_csv(data, index=False)
        config = os.path.join(tmp, "config.json")
        columns = {
            "c1": {"mechanism": "urr", "epsilon": 1.0, "categories": CATS, "sensitive": ["a"]},
            "c2": {"mechanism": "olh", "epsilon": 1.0, "categories": ["x", "y", "z"]},
            "bits": {"mechanism": "cms", "epsilon": 2.0, "categories": CATS, "n_buckets": 8},
            "num": {"mechanism": "hybrid", "epsilon": 1.0, "bounds": [0, 12]},
        }
        for strategy in ("split", "sample"):
            tag = f"cli/{strategy}"
            with open(config, "w", encoding="utf-8") as fh:
                json.dump({"columns": columns, "random_state": 13}, fh)
            reports = os.path.join(tmp, f"r_{strategy}.csv")
            result = os.path.join(tmp, f"e_{strategy}.csv")
            sink = io.StringIO()
            with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
                code = cli(
                    [
                        "privatize",
                        data,
                        "-o",
                        reports,
                        "--config",
                        config,
                        "--strategy",
                        strategy,
                        "--no-progress",
                    ]
                )
                out[tag + "/privatize_code"] = _digest(code)
                code = cli(
                    [
                        "estimate",
                        reports,
                        "--spec",
                        reports + ".spec.json",
                        "-o",
                        result,
                        "--no-progress",
                    ]
                )
                out[tag + "/estimate_code"] = _digest(code)
            for path in (reports, result):
                if os.path.exists(path):
                    out[f"{tag}/{os.path.basename(path)[:1]}"] = _digest(open(path, "rb").read())
            if os.path.exists(reports + ".spec.json"):
                spec = json.load(open(reports + ".spec.json", encoding="utf-8"))
                spec.get("reports", {}).pop("file", None)
                out[tag + "/spec"] = _digest(json.dumps(spec, sort_keys=True))
    return out


def main(argv=None):
    warnings.simplefilter("ignore")
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", metavar="FILE")
    group.add_argument("--check", metavar="FILE")
    parser.add_argument("--verbose", action="store_true", help="print slow and failing entries")
    args = parser.parse_args(argv)
    global VERBOSE
    VERBOSE = args.verbose
    digests = entries()
    if args.write:
        with open(args.write, "x", encoding="utf-8") as fh:
            json.dump(digests, fh, indent=1, sort_keys=True)
        print(f"{len(digests)} digests written to {args.write}")
        return 0
    with open(args.check, encoding="utf-8") as fh:
        before = json.load(fh)
    changed = sorted(k for k in before if digests.get(k) != before[k])
    new = sorted(set(digests) - set(before))
    for k in changed:
        print(f"CHANGED {k}")
    for k in new:
        print(f"NEW {k}")
    print(f"{len(before) - len(changed)} of {len(before)} digests unchanged")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
