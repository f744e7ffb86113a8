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
    HelpFormatter,
    add_common_options,
    make_mechanism,
    plural,
    positive_float,
    positive_int,
    seed_arg,
    theta_arg,
)
from ._io import (
    atomic_path,
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
    if data.isna().any():
        raise ValueError(
            f"Column {args.column!r} has "
            f"{plural(int(data.isna().sum()), 'missing value')}; impute or drop "
            "them first."
        )
    if len(data) == 0:
        raise ValueError(f"Input file {str(args.input)!r} has no rows.")
    if args.categories:
        categories, integer = typed_domain(split_values(args.categories, "--categories"))
    else:
        categories, integer = learned_domain(data.unique().tolist())
        print(
            "sklearn-uldp search: note: categories learned from the data (fine for a simulation).",
            file=sys.stderr,
        )
    data = to_domain_type(data, integer)
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
    if args.output:
        table = res.drop(columns=["params"]).assign(
            **{c: res[c].map(str) for c in res.columns if c.startswith("param_")}
        )
        with atomic_path(args.output) as tmp:
            table.to_csv(tmp, index=False)
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
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        from ..plotting import PrivacyUtilityDisplay

        disp = PrivacyUtilityDisplay.from_search(search)
        ext = os.path.splitext(os.fspath(args.plot))[1].lstrip(".")
        with atomic_path(args.plot) as tmp:
            disp.figure_.savefig(tmp, format=ext)
        plt.close(disp.figure_)
        print(f"plot -> {args.plot}")
    return 0


def register(subparsers):
    """Add the ``search`` subcommand.

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
        From :meth:`argparse.ArgumentParser.add_subparsers`.

    Returns
    -------
    parser : argparse.ArgumentParser

    Examples
    --------
    >>> import argparse
    >>> from sklearn_uldp.cli._search import register
    >>> parser = argparse.ArgumentParser(prog="sklearn-uldp")
    >>> register(parser.add_subparsers(dest="command")).prog
    'sklearn-uldp search'
    """
    s = subparsers.add_parser(
        "search",
        formatter_class=HelpFormatter,
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
    add_common_options(s)
    s.set_defaults(func=_cmd_search)
    return s
