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
    MECHANISMS,
    UTILITY_MECHANISMS,
    add_command,
    add_common_options,
    add_missing_options,
    make_mechanism,
    plot_written,
    plural,
    positive_float,
    positive_int,
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
from ._values import (
    learned_domain,
    split_values,
    to_domain_type,
    typed_domain,
    typed_like,
)

__all__ = ["register"]


def _cmd_search(args):
    from sklearn.pipeline import Pipeline

    from ..estimators import EmpiricalEstimator
    from ..model_selection import PrivacyUtilitySearchCV

    check_outputs(
        {"results file": args.output, "plot": args.plot},
        {"input": args.input},
        args.overwrite,
    )
    check_csv_output(args.output, "results file")
    check_plot_output(args.plot)
    frames = list(read_chunks(args.input, [args.column], args.chunksize, dtype=str))
    data = pd.concat(frames, ignore_index=True)[args.column]
    if len(data) == 0:
        raise ValueError(f"Input file {str(args.input)!r} has no rows.")
    absent = data.isna()
    label = None
    if absent.any():
        if args.missing == "error":
            raise ValueError(
                f"Column {args.column!r} has "
                f"{plural(int(absent.sum()), 'missing value')} (empty fields or "
                "blank lines). Impute or drop them, or pass --missing category to "
                "study them as the category '(missing)' (--missing-label sets another)."
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
            f"are not among the categories given with --categories, e.g. "
            f"{pd.unique(data[unknown].astype(object))[:5].tolist()}: add them to "
            "--categories, or clean the file."
        )
    sensitive = None
    if args.sensitive:
        sensitive = [typed_like(v, integer) for v in split_values(args.sensitive, "--sensitive")]
    mechs = []
    for name in args.mechanisms:
        utility = name in UTILITY_MECHANISMS
        if utility and not sensitive:
            raise ValueError(f"Mechanism {name!r} needs --sensitive v1,v2.")
        mechs.append(make_mechanism(name, 1.0, categories, sensitive if utility else None))
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
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        search = PrivacyUtilitySearchCV(
            pipe,
            grid,
            scoring=args.scoring,
            n_repeats=args.n_repeats,
            target=args.target,
            n_jobs=args.n_jobs,
            verbose=0 if args.no_progress else 1,
            random_state=args.random_state,
        ).fit(data.to_numpy(dtype=object).reshape(-1, 1))
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
    return plot_written(args)


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
        help="privacy/utility search on a column (simulation)",
        description=(
            "Privatize a column repeatedly with each mechanism, theta and epsilon, "
            "estimate its distribution and measure the loss to the true one: the "
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
        choices=MECHANISMS,
        default=["urr", "urap"],
        metavar="NAME",
        help=f"mechanisms to compare, among {', '.join(MECHANISMS)} (default: urr urap)",
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
