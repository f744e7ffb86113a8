"""``sklearn-uldp demo``: the privacy/utility comparison of the ULDP paper.

Reproduces, on the synthetic 25 x 25 location grid of
:func:`sklearn_uldp.datasets.make_location_grid` (625 cells, 15 of them
sensitive), the common-mechanism experiment of Murakami & Kawamoto (2019,
Sec. 6.2): randomized response (RR), RAPPOR, their utility-optimized versions
(uRR, uRAP) and no privacy, each estimated with the empirical estimator
("emp"), the significance threshold ("emp+thr") and EM ("EM"), scored by the
total variation to the distribution the users were drawn from.

Use it from the command line (``python -m sklearn_uldp demo``) or from Python
with :func:`run_demo` and :func:`plot_demo`.
"""

import math
import os
import sys
import textwrap
import time
import warnings

import numpy as np
import pandas as pd

from ..exceptions import UninformativeEstimateWarning
from ..utils._docstrings import fill_doc
from ._common import add_command, epsilon_arg, plural, positive_int, seed_arg
from ._io import atomic_path, check_plot_output

__all__ = ["run_demo", "plot_demo", "format_results", "tv_note", "register"]

#: What the text helpers take and give, documented once.
_DOCS = {
    "results_to_text": """
        Parameters
        ----------
        results : pandas.DataFrame
            Output of :func:`run_demo`.

        Returns
        -------
        text : str
        """,
}

#: The budgets of the demo: high privacy, moderate, and ln |X| for |X| = 625,
#: where the paper shows uRR is almost as accurate as no privacy.
DEFAULT_EPSILONS = (0.1, 1.0, math.log(625))
DEFAULT_N_USERS = 50_000
DEFAULT_PLOT = "uldp_demo.png"

#: Row labels of the result table, in display order.
MECHANISM_LABELS = ("RR", "RAPPOR", "uRR", "uRAP", "no privacy")
#: Column labels of the result table (the paper's names of the estimators).
ESTIMATOR_LABELS = ("emp", "emp+thr", "EM")
_PRIVATE = MECHANISM_LABELS[:-1]


def _make_mechanism(label, epsilon, categories, sensitive, rng):
    from ..mechanisms import (
        RAPPOR,
        NonPrivate,
        RandomizedResponse,
        UtilityOptimizedRAPPOR,
        UtilityOptimizedRR,
    )

    if label == "RR":
        return RandomizedResponse(epsilon, categories=categories, random_state=rng)
    if label == "RAPPOR":
        return RAPPOR(epsilon, categories=categories, random_state=rng)
    if label == "uRR":
        return UtilityOptimizedRR(
            epsilon, sensitive=sensitive, categories=categories, random_state=rng
        )
    if label == "uRAP":
        return UtilityOptimizedRAPPOR(
            epsilon, sensitive=sensitive, categories=categories, random_state=rng
        )
    return NonPrivate(categories=categories)


def _make_estimators():
    from ..estimators import EMEstimator, EmpiricalEstimator, ThresholdEstimator

    return {
        "emp": EmpiricalEstimator(),
        "emp+thr": ThresholdEstimator(alpha=0.05),
        "EM": EMEstimator(),
    }


def _check_epsilons(epsilons):
    eps = np.atleast_1d(np.asarray(epsilons, dtype=float))
    if eps.ndim != 1 or eps.size == 0:
        raise ValueError("epsilons must be a non-empty list of numbers.")
    if not np.all(np.isfinite(eps) & (eps > 0)):
        raise ValueError(f"Every epsilon must be a finite number > 0, got {eps.tolist()}.")
    return [float(e) for e in dict.fromkeys(eps.tolist())]  # unique, in order


def run_demo(
    n_users=DEFAULT_N_USERS,
    epsilons=DEFAULT_EPSILONS,
    *,
    random_state=0,
    n_sensitive=15,
    shape=(25, 25),
    verbose=False,
):
    """Compare RR, RAPPOR, uRR, uRAP and no privacy on the location grid.

    For every budget and mechanism the users' cells are privatized once, and
    the distribution is estimated from the same reports by each estimator.
    Every (mechanism, epsilon) pair draws its noise from its own independent
    stream (:func:`sklearn_uldp.utils.spawn_generators`); the data come from
    another one.

    Parameters
    ----------
    n_users : int, default=50000
        Number of users (one location each).
    epsilons : sequence of float, default=(0.1, 1.0, ln 625)
        Privacy budgets (> 0).
    random_state : None, int or numpy.random.SeedSequence, default=0
        Seed of the data and of every noise stream; ``None`` draws fresh OS
        entropy.
    n_sensitive : int, default=15
        Number of sensitive cells.
    shape : tuple of int, default=(25, 25)
        Grid shape (the domain has ``shape[0] * shape[1]`` cells).
    verbose : bool, default=False
        Report progress on standard error, one line per (epsilon, mechanism).

    Returns
    -------
    results : pandas.DataFrame
        Total variation between each estimate and the distribution the users
        were drawn from (as in the paper, so "no privacy" shows the sampling
        error). Index: (``epsilon``, ``mechanism``) with mechanisms
        ``"RR", "RAPPOR", "uRR", "uRAP", "no privacy"``; columns: estimators
        ``"emp", "emp+thr", "EM"``. The "no privacy" rows do not depend on
        epsilon. ``results.attrs`` records ``n_users``, ``n_categories``,
        ``n_sensitive``, ``random_state``, ``seconds`` (wall time) and
        ``uninformative``: the ``(epsilon, mechanism, estimator)`` cells whose
        reports show no significant category (``n_significant_ == 0``),
        where emp+thr and EM are exactly the uniform distribution.

    Examples
    --------
    >>> from sklearn_uldp.cli._demo import run_demo
    >>> results = run_demo(n_users=2000, epsilons=[1.0], random_state=0)
    >>> results.shape
    (5, 3)
    >>> results.columns.tolist()
    ['emp', 'emp+thr', 'EM']
    """
    from ..datasets import make_location_grid
    from ..metrics import total_variation
    from ..utils import spawn_generators
    from ..utils._random import check_seed_sequence

    start = time.perf_counter()
    epsilons = _check_epsilons(epsilons)
    if int(n_users) != n_users or n_users < 1:
        raise ValueError(f"n_users must be a positive integer, got {n_users!r}.")
    n_users = int(n_users)

    data_seed, noise_seed = check_seed_sequence(random_state).spawn(2)
    data = make_location_grid(n_users, shape=shape, n_sensitive=n_sensitive, random_state=data_seed)
    X, categories, sensitive = data.frame, data.categories, data.sensitive
    target = data.distribution
    # One independent stream per (mechanism, epsilon), in table order.
    rngs = spawn_generators(noise_seed, len(_PRIVATE) * len(epsilons))
    rng_of = {
        (label, eps): rngs[i * len(epsilons) + j]
        for i, label in enumerate(_PRIVATE)
        for j, eps in enumerate(epsilons)
    }

    uninformative = []

    def evaluate(label, eps):
        mechanism = _make_mechanism(label, eps, categories, sensitive, rng_of.get((label, eps)))
        reports = mechanism.fit_transform(X)
        out = {}
        for name, est in _make_estimators().items():
            with warnings.catch_warnings():
                # Recorded, and marked in the table instead.
                warnings.simplefilter("ignore", UninformativeEstimateWarning)
                est.fit(reports)
            if est.n_significant_ == 0:
                uninformative.append((eps, label, name))
            out[name] = total_variation(target, est.distribution_)
        return out

    no_privacy = evaluate("no privacy", None)  # deterministic: computed once
    rows = {}
    n_cells, done = len(epsilons) * len(_PRIVATE), 0
    for eps in epsilons:
        for label in MECHANISM_LABELS:
            if label == "no privacy":
                rows[eps, label] = no_privacy
                continue
            tic = time.perf_counter()
            rows[eps, label] = evaluate(label, eps)
            done += 1
            if verbose:
                print(
                    f"  [{done:>2}/{n_cells}] {label:<6} epsilon={eps:.4g}: "
                    f"{time.perf_counter() - tic:.1f} s",
                    file=sys.stderr,
                    flush=True,
                )

    results = pd.DataFrame.from_dict(rows, orient="index")
    results = results[list(ESTIMATOR_LABELS)]
    results.index = pd.MultiIndex.from_tuples(results.index, names=["epsilon", "mechanism"])
    results.columns.name = "estimator"
    results.attrs.update(
        n_users=n_users,
        n_categories=len(categories),
        n_sensitive=len(sensitive),
        random_state=random_state
        if random_state is None or isinstance(random_state, (int, np.integer))
        else repr(random_state),
        seconds=time.perf_counter() - start,
        uninformative=uninformative,
    )
    return results


def _epsilon_label(eps, k=None):
    if k is not None and math.isclose(eps, math.log(k), rel_tol=1e-9):
        return f"{eps:.4g} (= ln {k})"
    return f"{eps:.4g}"


@fill_doc(_DOCS)
def format_results(results):
    """The result table of :func:`run_demo` as text, one block per epsilon.

    %(results_to_text)s
    """
    k = results.attrs.get("n_categories")
    marked = {tuple(cell) for cell in results.attrs.get("uninformative", ())}
    blocks = []
    for eps, block in results.groupby(level="epsilon", sort=False):
        table = block.droplevel("epsilon")
        table.index.name = None
        table.columns.name = None
        text = table.astype(object).copy()
        for mech in table.index:
            for est in table.columns:
                star = " *" if (eps, mech, est) in marked else "  "
                text.loc[mech, est] = f"{table.loc[mech, est]:.4f}{star}"
        blocks.append(f"epsilon = {_epsilon_label(eps, k)}\n{text.to_string()}")
    if marked:
        blocks.append(
            textwrap.fill(
                "* uninformative: no category of these reports is significantly "
                "above zero (n_significant_ = 0, UninformativeEstimateWarning), so "
                "emp+thr returns the uniform distribution (the same total "
                "variation wherever that happens), EM's default, shrunk towards "
                "it, the uniform or close to it, and emp mostly noise.",
                width=79,
            )
        )
    return "\n\n".join(blocks)


def plot_demo(results, *, fig=None):
    """Plot total variation against epsilon, one panel per estimator.

    Log-log axes; one line per mechanism in each panel (so one line per
    mechanism/estimator pair), "no privacy" dashed.

    Parameters
    ----------
    results : pandas.DataFrame
        Output of :func:`run_demo`.
    fig : matplotlib.figure.Figure, default=None
        Figure to draw on; a new one (not registered with pyplot) by default.

    Returns
    -------
    fig : matplotlib.figure.Figure
    """
    if fig is None:
        from matplotlib.figure import Figure

        fig = Figure(figsize=(12, 4), layout="constrained")
    axes = fig.subplots(1, len(results.columns), sharey=True, squeeze=False)[0]
    styles = {
        "RR": dict(color="tab:blue", marker="o"),
        "RAPPOR": dict(color="tab:orange", marker="s"),
        "uRR": dict(color="tab:green", marker="^"),
        "uRAP": dict(color="tab:red", marker="v"),
        "no privacy": dict(color="black", linestyle="--"),
    }
    k = results.attrs.get("n_categories")
    for ax, estimator in zip(axes, results.columns, strict=True):
        table = results[estimator].unstack("mechanism")
        order = [m for m in MECHANISM_LABELS if m in table.columns]
        table = table[order + [m for m in table.columns if m not in order]]
        eps = table.index.to_numpy(dtype=float)
        if k and eps.min() <= math.log(k) <= eps.max():
            ax.axvline(math.log(k), color="0.6", linewidth=3, alpha=0.4, zorder=0)
        for label in table.columns:
            ax.plot(eps, table[label].to_numpy(), label=label, **styles.get(label, {}))
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("epsilon")
        ax.set_title(f'estimator "{estimator}"')
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("total variation")
    axes[-1].legend(loc="best")
    n, s = results.attrs.get("n_users"), results.attrs.get("n_sensitive")
    if n is not None:
        fig.suptitle(
            f"Location grid: n = {n:,} users, |X| = {k}, |X_S| = {s} (grey bar: epsilon = ln |X|)"
        )
    return fig


# ---------------------------------------------------------------- command line
def register(subparsers):
    """Add the ``demo`` subcommand (:func:`~sklearn_uldp.cli._common.add_command`)."""
    parser = add_command(
        subparsers,
        "demo",
        _main,
        description=(
            "Privatize a synthetic 25x25 location grid (625 cells, 15 sensitive) "
            "with RR, RAPPOR, utility-optimized RR (uRR), utility-optimized "
            "RAPPOR (uRAP) and no privacy; estimate the distribution with the "
            "empirical estimator (emp), the significance threshold (emp+thr) and "
            "EM; print the total variation to the true distribution and plot it "
            f"against epsilon. The plot goes to {DEFAULT_PLOT} in the current "
            "folder unless a file of that name exists, which is kept (the run "
            "says so): no file is ever replaced without --overwrite."
        ),
    )
    parser.add_argument(
        "--n-users",
        type=positive_int,
        default=DEFAULT_N_USERS,
        metavar="N",
        help="number of users (one location each)",
    )
    parser.add_argument(
        "--epsilon",
        type=epsilon_arg,
        nargs="+",
        default=list(DEFAULT_EPSILONS),
        metavar="EPS",
        help="privacy budgets, one or more numbers > 0 (default: 0.1 1 6.438, "
        "the last being ln 625)",
    )
    parser.add_argument(
        "--random-state",
        type=seed_arg,
        default=0,
        metavar="SEED",
        help="seed of the data and of the noise ('none' for fresh OS entropy)",
    )
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--plot",
        metavar="PATH",
        default=None,
        help=f"where to write the plot (needs matplotlib; default: {DEFAULT_PLOT}, "
        "written only if that file does not exist yet); an existing PATH is an "
        "error unless --overwrite",
    )
    group.add_argument(
        "--no-plot",
        action="store_true",
        help="do not write a plot",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace the plot file if it exists",
    )
    return parser


def _have_matplotlib():
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _plot_target(args):
    """Return (path or None, note): where the plot goes, or why it does not.

    Checked before the (long) computation, so a bad --plot fails at once.
    """
    if args.no_plot:
        return None, None
    if not _have_matplotlib():
        if args.plot is not None:
            raise ValueError(
                "--plot needs matplotlib: pip install 'sklearn-uldp[plot]' (or pass --no-plot)"
            )
        return None, ("No plot: matplotlib is not installed (pip install 'sklearn-uldp[plot]').")
    plot_path = os.path.abspath(args.plot or DEFAULT_PLOT)
    folder = os.path.dirname(plot_path)
    if not os.path.isdir(folder):
        raise FileNotFoundError(
            f"cannot write the plot to {plot_path}: folder {folder} does "
            "not exist (use --plot PATH or --no-plot)"
        )
    if os.path.isdir(plot_path):
        raise ValueError(
            f"--plot {args.plot!r} is a directory: give a file name, e.g. "
            f"{os.path.join(args.plot, DEFAULT_PLOT)!r}."
        )
    check_plot_output(plot_path)
    if os.path.lexists(plot_path) and not args.overwrite:
        if args.plot is not None:  # asked for: an error, like every command
            raise ValueError(
                f"The plot {args.plot!r} already exists; pass --overwrite to "
                "replace it, or choose another --plot PATH."
            )
        # The default name: the table is still worth printing.
        return None, _kept_note(plot_path)
    return plot_path, None


def _kept_note(path):
    return (
        f"No plot written: {path} already exists and is kept (pass --overwrite "
        "to replace it, or --plot PATH to write another file)."
    )


@fill_doc(_DOCS)
def tv_note(results):
    """Why the total variation of the empirical estimate can exceed 1.

    %(results_to_text)s
    """
    worst = float(np.nanmax(results["emp"].to_numpy())) if "emp" in results else 0
    here = f" (here up to {worst:.3g})" if worst > 1 else ""
    return (
        'Note: "emp" is the raw unbiased estimate (the channel inverted). It has '
        "negative entries and does not sum to 1, so its total variation to the "
        f"truth is not bounded by 1{here}, and grows with the noise (small "
        'epsilon) and the number of categories. For a distribution use "emp+thr" '
        '(ThresholdEstimator) or "EM" (EMEstimator), or '
        'EmpiricalEstimator(projection="simplex").'
    )


def _main(args):
    plot_path, note = _plot_target(args)
    print(
        f"sklearn-uldp demo: {plural(args.n_users, 'user', fmt=',')} on a 25x25 "
        "location grid (625 cells, 15 sensitive); one realization, random_state="
        f"{args.random_state}.\nTotal variation between each estimate and the "
        "true distribution (lower is better):",
        flush=True,
    )
    results = run_demo(
        n_users=args.n_users,
        epsilons=args.epsilon,
        random_state=args.random_state,
        verbose=True,
    )
    print()
    print(format_results(results))
    print()
    print(textwrap.fill(tv_note(results), width=79))
    print(f"\n(computed in {results.attrs['seconds']:.1f} s)")

    if plot_path is not None and os.path.lexists(plot_path) and not args.overwrite:
        # Created while the demo ran: still not ours to replace.
        plot_path, note = None, _kept_note(plot_path)
    if plot_path is not None:
        fig = plot_demo(results)
        ext = os.path.splitext(plot_path)[1].lstrip(".")
        with atomic_path(plot_path, overwrite=args.overwrite) as tmp:
            fig.savefig(tmp, dpi=120, format=ext)
        print(f"Plot written to {plot_path}")
    elif note is not None:
        print(note)
    sys.stdout.flush()
    return 0
