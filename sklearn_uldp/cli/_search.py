"""``sklearn-uldp search``: the privacy/utility search on a column.

A simulation on the true column: privatize it repeatedly with each
mechanism, theta and epsilon, estimate its distribution and measure the loss
to the true one; report the most accurate mechanism at each epsilon, the
smallest epsilon reaching a target and the whole curve.
"""

import os
import sys
import warnings

import pandas as pd

from ._common import (
    add_command,
    add_common_options,
    add_missing_options,
    make_mechanism,
    plot_written,
    plural,
    positive_float,
    positive_int,
    rows_of,
    seed_arg,
    theta_arg,
)
from ._io import (
    OutputFiles,
    check_csv_output,
    check_outputs,
    check_plot_output,
    read_chunks,
)
from ._names import CATEGORICAL, NUMERIC, NameChoices, resolve
from ._values import (
    learned_domain,
    split_values,
    to_domain_type,
    typed_domain,
    typed_like,
)

__all__ = ["register"]


def _families(names):
    """The mechanisms' family (all categorical or all numeric), checked."""
    entries = {name: resolve(name)[0] for name in names}
    families = {e.family for e in entries.values()}
    if not families <= {CATEGORICAL, NUMERIC} or len(families) > 1:
        raise ValueError(
            "search compares mechanisms of one family: categorical ones (rr, urr, urap, "
            "...) on a column of categories, or numeric ones (duchi, piecewise, hybrid, "
            "uobm, square_wave) on a column of numbers; got "
            + ", ".join(f"{n} ({e.family.replace('_', ' ')})" for n, e in entries.items())
            + ". Heavy hitters have no search yet: compare them with privatize and estimate."
        )
    return families.pop(), entries


def _cmd_search(args):
    check_outputs(
        {"results file": args.output, "plot": args.plot},
        {"input": args.input},
        args.overwrite,
    )
    check_csv_output(args.output, "results file")
    check_plot_output(args.plot)
    family, _ = _families(args.mechanisms)
    frames = list(read_chunks(args.input, [args.column], args.chunksize, dtype=str))
    data = pd.concat(frames, ignore_index=True)[args.column]
    if len(data) == 0:
        raise ValueError(f"Input file {str(args.input)!r} has no rows.")
    if family == NUMERIC:
        search = _numeric_search(args, data)
    else:
        search = _categorical_search(args, data)
    _report(args, search)
    return plot_written(args)


def _run_search(args, model, grid, X):
    from ..model_selection import PrivacyUtilitySearchCV

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return PrivacyUtilitySearchCV(
            model,
            grid,
            scoring=args.scoring,
            n_repeats=args.n_repeats,
            target=args.target,
            n_jobs=args.n_jobs,
            verbose=0 if args.no_progress else 1,
            random_state=args.random_state,
        ).fit(X)


def _epsilon_mechanisms(names):
    """The mechanisms, which must take one budget ``epsilon`` (the search varies it)."""
    others = [n for n in names if resolve(n)[0].budgets != (("epsilon",),)]
    if others:
        raise ValueError(
            f"search varies one budget, epsilon; {others} take "
            + "; ".join(" and ".join(resolve(n)[0].budgets[0]) for n in others)
            + ". Compare them with privatize and estimate."
        )


def _categorical_search(args, data):
    from sklearn.pipeline import Pipeline

    from ..estimators import EmpiricalEstimator

    _epsilon_mechanisms(args.mechanisms)
    absent = data.isna()
    label = None
    if absent.any():
        if args.missing == "error":
            raise ValueError(
                f"Column {args.column!r} has "
                f"{plural(int(absent.sum()), 'missing value')} ({rows_of(data.index, absent)}: "
                "empty fields or blank lines). Impute or drop them, or pass --missing "
                "category to study them as the category '(missing)' (--missing-label "
                "sets another)."
            )
        if args.missing == "impute":
            raise ValueError(
                "--missing impute is for numeric columns in search (a simulation on the "
                "true values): pass --missing category, or clean the column."
            )
        label = args.missing_label
    if args.categories:
        categories, integer = typed_domain(split_values(args.categories, "--categories"), label)
    else:
        categories, integer = learned_domain(data.dropna().unique().tolist(), label)
        print(
            "sklearn-uldp search: note: categories learned from the data (fine for a simulation).",
            file=sys.stderr,
        )
    data = to_domain_type(data, integer, None if label is None else typed_like(label, integer))
    if integer and label is not None and not isinstance(typed_like(label, integer), int):
        # Integers and a text label: compare as text.
        data = data.astype(str)
        categories = [str(v) for v in categories]
    unknown = ~data.astype(str).isin({str(v) for v in categories})
    if unknown.any():
        raise ValueError(
            f"Column {args.column!r} holds {plural(int(unknown.sum()), 'value')} that "
            f"are not among the categories given with --categories "
            f"({rows_of(data.index, unknown)}): add them to --categories, or clean the file."
        )
    sensitive = None
    if args.sensitive:
        sensitive = [typed_like(v, integer) for v in split_values(args.sensitive, "--sensitive")]
    mechs = []
    for name in args.mechanisms:
        utility = resolve(name)[0].utility_optimized
        if utility and not sensitive:
            raise ValueError(f"Mechanism {name!r} needs --sensitive v1,v2.")
        params = {"epsilon": 1.0, "categories": categories}
        if utility:
            params["sensitive"] = sensitive
        mechs.append(make_mechanism(name, params))
    grid = {"mechanism": mechs, "mechanism__epsilon": list(args.epsilon)}
    if args.theta:
        with_theta = [m for m in mechs if "theta" in m.get_params()]
        without = [m for m in mechs if "theta" not in m.get_params()]
        grid = (
            [
                {
                    "mechanism": with_theta,
                    "mechanism__epsilon": list(args.epsilon),
                    "mechanism__theta": list(args.theta),
                }
            ]
            if with_theta
            else []
        )
        if without:
            grid.append({"mechanism": without, "mechanism__epsilon": list(args.epsilon)})
    pipe = Pipeline(
        [
            ("mechanism", mechs[0]),
            ("estimator", EmpiricalEstimator(projection="simplex")),
        ]
    )
    return _run_search(args, pipe, grid, data.to_numpy(dtype=object).reshape(-1, 1))


def _numeric_search(args, data):
    """Numeric mechanisms: the error of the mean (Square Wave: of the distribution)."""
    from sklearn.pipeline import Pipeline

    from ..numeric import MeanEstimator, SquareWave, SquareWaveEstimator

    _epsilon_mechanisms(args.mechanisms)
    if args.bounds is None:
        raise ValueError(
            "Numeric mechanisms need the column's public range: pass --bounds LOW,HIGH "
            "(values outside are clipped)."
        )
    for option in ("categories", "sensitive", "theta"):
        if getattr(args, option):
            raise ValueError(
                f"--{option} is for categorical mechanisms; numeric ones take --bounds "
                "(and uobm its sensitive ranges in a privatize config)."
            )
    values = pd.to_numeric(data, errors="coerce")
    bad = values.isna() & data.notna()
    if bad.any():
        raise ValueError(
            f"Numeric column {args.column!r} holds {plural(int(bad.sum()), 'value')} that "
            f"are not numbers ({rows_of(data.index, bad)}): clean the column, or search "
            "categorical mechanisms."
        )
    absent = data.isna().to_numpy()
    values = values.to_numpy(dtype=float, copy=True)
    if absent.any():
        if args.missing != "impute":
            raise ValueError(
                f"Column {args.column!r} has {plural(int(absent.sum()), 'missing value')} "
                f"({rows_of(data.index, absent)}: empty fields or blank lines). Clean the "
                "column, or pass --missing impute to draw them uniformly from --bounds."
            )
        from ..utils._random import check_random_generator

        rng = check_random_generator(args.random_state)
        values[absent] = rng.uniform(args.bounds[0], args.bounds[1], size=int(absent.sum()))
    mechs = [
        make_mechanism(n, {"epsilon": 1.0, "bounds": list(args.bounds)}) for n in args.mechanisms
    ]
    distribution = [m for m in mechs if isinstance(m, SquareWave)]
    if distribution and len(distribution) != len(mechs):
        raise ValueError(
            "square_wave estimates a distribution and the other numeric mechanisms a "
            "mean: their losses do not compare. Search them in separate runs."
        )
    grid = [
        {
            "mechanism": [m],
            "estimator": [SquareWaveEstimator() if distribution else MeanEstimator()],
            "mechanism__epsilon": list(args.epsilon),
        }
        for m in mechs
    ]
    model = Pipeline([("mechanism", mechs[0]), ("estimator", grid[0]["estimator"][0])])
    return _run_search(args, model, grid, values.reshape(-1, 1))


def _bounds_arg(text):
    """``argparse`` type of ``search --bounds``: LOW,HIGH."""
    import argparse

    try:
        low, high = (float(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected LOW,HIGH, e.g. 0,120; got {text!r}") from None
    if not low < high:
        raise argparse.ArgumentTypeError(f"expected LOW < HIGH, got {text!r}")
    return low, high


def _report(args, search):
    res = search.cv_results_
    with OutputFiles({"results file": args.output, "plot": args.plot}, args.overwrite) as files:
        if args.output:
            table = res.drop(columns=["params"]).assign(
                **{c: res[c].map(str) for c in res.columns if c.startswith("param_")}
            )
            table.to_csv(files[args.output], index=False)
        if args.plot:
            _plot_search(search, files[args.plot], args.plot)
    if args.output:
        print(f"results -> {args.output}")
    best = search.best_candidates().reset_index()[["epsilon", "candidate", "mean_loss"]]
    print(
        f"best candidate per epsilon ({search.scoring_name_}, mean over "
        f"{plural(args.n_repeats, 'privatization')}):"
    )
    print(best.to_string(index=False))
    if args.target is not None:
        if search.target_epsilon_ is None:
            print(f"no candidate reaches {search.scoring_name_} <= {args.target} in the grid")
        else:
            label = res.at[search.best_index_at_epsilon_[search.target_epsilon_], "candidate"]
            print(
                f"smallest epsilon reaching {search.scoring_name_} <= {args.target}: "
                f"{search.target_epsilon_:g} ({label})"
            )


def _plot_search(search, part, path):
    from matplotlib.figure import Figure

    from ..plotting import PrivacyUtilityDisplay

    disp = PrivacyUtilityDisplay.from_search(search, ax=Figure().subplots())
    disp.figure_.savefig(part, format=os.path.splitext(os.fspath(path))[1].lstrip("."))


def register(subparsers):
    """Add the ``search`` subcommand (:func:`~sklearn_uldp.cli._common.add_command`)."""
    s = add_command(
        subparsers,
        "search",
        _cmd_search,
        description=(
            "Privatize a column repeatedly with each mechanism, theta and epsilon, "
            "estimate its distribution (numeric mechanisms: its mean; Square Wave: "
            "its distribution over bins) and measure the loss to the true one: the "
            "most accurate mechanism at each epsilon, the smallest epsilon "
            "reaching --target, and the whole curve (--output, --plot)."
        ),
    )
    s.add_argument("input", help="input table (.csv, or .parquet with pyarrow)")
    s.add_argument("--column", required=True, help="the column to study")
    s.add_argument(
        "--categories",
        metavar="v1,v2",
        help="public domain; LOW..HIGH is an inclusive integer range, e.g. 0..51 "
        "(default: learned from the column, integers in numeric order)",
    )
    s.add_argument(
        "--sensitive",
        metavar="v1,v2",
        help="sensitive values, ranges LOW..HIGH too (needed by urr/urap/uoue/uss/uhr)",
    )
    s.add_argument(
        "--mechanisms",
        nargs="+",
        choices=NameChoices(),
        default=["urr", "urap"],
        metavar="NAME",
        help="mechanisms to compare, by the names of their specs, all categorical "
        "(rr, urr, rappor, urap, olh, blh, ss, uss, cms, hcms, hr, hlhr, ubd, dbitflip; "
        "oue, uoue, uhr too) or all numeric (duchi, piecewise, hybrid, uobm; or "
        "square_wave alone, whose distribution is scored) (default: urr urap)",
    )
    s.add_argument(
        "--bounds",
        type=_bounds_arg,
        metavar="LOW,HIGH",
        help="public range of a numeric column (needed by the numeric mechanisms)",
    )
    s.add_argument(
        "--epsilon",
        nargs="+",
        type=positive_float,
        default=[0.5, 1.0, 2.0, 4.0],
        metavar="EPS",
        help="budgets (default: 0.5 1 2 4)",
    )
    s.add_argument(
        "--theta",
        nargs="+",
        type=theta_arg,
        metavar="THETA",
        help="thetas for the RAPPOR-family mechanisms ('optimal' for urap)",
    )
    s.add_argument("--scoring", choices=("tv", "l1", "l2", "mse"), default="tv", help="the loss")
    s.add_argument(
        "--n-repeats",
        type=positive_int,
        default=5,
        metavar="N",
        help="independent privatizations per candidate",
    )
    s.add_argument("--target", type=positive_float, metavar="LOSS", help="target loss, e.g. 0.05")
    s.add_argument("--n-jobs", type=int, default=None, metavar="N", help="parallel jobs (joblib)")
    s.add_argument(
        "--random-state",
        type=seed_arg,
        default=0,
        metavar="SEED",
        help="seed of the simulation ('none' for OS entropy)",
    )
    s.add_argument("-o", "--output", metavar="CSV", help="write cv_results_ to this CSV")
    s.add_argument("--plot", metavar="PNG", help="plot the privacy/utility curve")
    add_missing_options(s)
    add_common_options(s)
    return s
