"""Our hash families against xxhash and mmh3 (what pure-ldp and multi-freq-ldpy use).

Side by side in one run, for n users each with its own hash function (a
seed), as the local-hashing and count-mean-sketch oracles need:

* speed: CPU seconds to hash n (seed, value) pairs. Ours are vectorized numpy
  (``linear_hash`` for OLH/BLH, ``mersenne_hash`` for CMS/HCMS); the
  libraries hash one value per call, so they need a Python loop over users
  (their Python APIs take one key at a time);
* exactness: the collision probability of two given values over the seeds,
  which the oracles' unbiased estimators assume to be 1/g (local hashing) or
  at most 1/m + m/P (sketches). Ours is computed over the whole (finite)
  seed space of the linear family; the libraries' is estimated over 2^16
  seeds (they come with no such guarantee).

    python benchmarks/bench_hashing.py               # n = 10^6
    python benchmarks/bench_hashing.py --n 200000    # quicker

Needs ``xxhash`` and ``mmh3`` (``pip install xxhash mmh3``; xxhash comes
with pure-ldp, the benchmark extra).
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from sklearn_uldp.utils._hashing import (
    hash_parameters,
    linear_hash,
    linear_hash_table,
    mersenne_hash,
    n_digits,
    premix,
)


def _cpu(fn):
    start = time.process_time()
    out = fn()
    return time.process_time() - start, out


def speed(n, k, g, rng):
    r = n_digits(k, g)
    seeds = rng.integers(0, g**r, size=n)
    x = rng.integers(0, k, size=n)
    rows = {}
    rows["ours: linear_hash (OLH)"], _ = _cpu(lambda: linear_hash(seeds, x, g, r))
    a, b = hash_parameters(0, 256)
    j = rng.integers(0, 256, size=n)
    rows["ours: mersenne_hash (CMS)"], _ = _cpu(lambda: mersenne_hash(a[j], b[j], premix(x), 256))
    try:
        import xxhash

        # The keys are made inside the timing: an oracle starts from codes.
        rows["xxhash.xxh32, a loop (pure-ldp)"], _ = _cpu(
            lambda: [
                xxhash.xxh32_intdigest(b"%d" % v, seed=s) % g  # xxhash >= 3 hashes bytes
                for v, s in zip(x.tolist(), seeds.tolist(), strict=True)
            ]
        )
    except ImportError:
        rows["xxhash: not installed"] = math.nan
    try:
        import mmh3

        rows["mmh3.hash, a loop"], _ = _cpu(
            lambda: [
                mmh3.hash(b"%d" % v, s, signed=False) % g
                for v, s in zip(x.tolist(), seeds.tolist(), strict=True)
            ]
        )
    except ImportError:
        rows["mmh3: not installed"] = math.nan
    return rows


def exactness(k, g, n_seeds, rng):
    """Largest |P(h(x) = h(x')) - 1/g| over 20 pairs, and its noise level."""
    r = n_digits(k, g)
    pairs = rng.choice(k, size=(20, 2), replace=False)
    table = linear_hash_table(g, r, k)  # every seed of the family
    ours = max(abs(np.mean(table[:, u] == table[:, v]) - 1 / g) for u, v in pairs)
    out = {"ours: linear family, all seeds (exact)": (ours, g**r)}
    seeds = range(n_seeds)
    for name, fn in _library_hashes():
        dev = max(
            abs(np.mean([fn(b"%d" % u, s) % g == fn(b"%d" % v, s) % g for s in seeds]) - 1 / g)
            for u, v in pairs
        )
        out[name] = (dev, n_seeds)
    return out


def _library_hashes():
    found = []
    try:
        import xxhash

        found.append(("xxhash.xxh32", lambda key, s: xxhash.xxh32_intdigest(key, seed=s)))
    except ImportError:
        pass
    try:
        import mmh3

        found.append(("mmh3.hash", lambda key, s: mmh3.hash(key, s, signed=False)))
    except ImportError:
        pass
    return found


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000, help="users (default 10^6)")
    parser.add_argument("--k", type=int, default=1000, help="domain size (default 1000)")
    parser.add_argument("--epsilon", type=float, default=1.0, help="OLH's g = e^eps + 1")
    parser.add_argument("--seeds", type=int, default=1 << 16, help="seeds for exactness")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    g = max(2, round(math.exp(args.epsilon) + 1))
    while any(g % f == 0 for f in range(2, int(g**0.5) + 1)):  # OLH uses a prime g
        g += 1
    print(f"speed: n = {args.n:,} users, k = {args.k}, g = {g} (CPU seconds)")
    rows = speed(args.n, args.k, g, rng)
    fastest = min(v for name, v in rows.items() if name.startswith("ours: linear"))
    for name, sec in rows.items():
        print(f"  {name:<36} {sec:8.3f} s  ({sec / fastest:6.1f}x ours)")
    print(f"\nexactness: max |P(collision) - 1/g| over 20 pairs, g = {g}")
    for name, (dev, n_seeds) in exactness(args.k, g, args.seeds, rng).items():
        noise = math.sqrt((1 / g) * (1 - 1 / g) / n_seeds)
        print(f"  {name:<36} {dev:.2e}  over {n_seeds:,} seeds (1 sigma {noise:.1e})")


if __name__ == "__main__":
    main()
