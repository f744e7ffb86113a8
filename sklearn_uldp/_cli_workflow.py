"""``sklearn-uldp privatize | estimate | search``: the data-science workflow.

* ``privatize`` (client side): a CSV/Parquet table in, a table of reports out
  plus the public spec (JSON) a collector needs; read in chunks, with a
  progress bar. Columns and mechanisms come from options or a JSON config.
* ``estimate`` (collector side): reports + spec -> a distribution CSV (and
  an optional plot). Reports are read in chunks; the estimate is exactly the
  one-shot one (sufficient statistics add up).
* ``search``: the privacy/utility search on a column of a table (which
  mechanism / theta is most accurate at each epsilon, the smallest epsilon
  reaching a target).

All values read from files are treated as strings, so the categories of a
spec written by ``privatize`` are strings too.

Config file of ``privatize --config``::

    {"random_state": 0, "missing": "error",
     "columns": {"marital": {"mechanism": "urr", "epsilon": 1.0,
                             "categories": ["married", "single", "divorced"],
                             "sensitive": ["divorced"]},
                 "region": {"mechanism": "rr", "epsilon": 0.5}}}
"""

import argparse
import json
import math
import os
import sys
import warnings

import numpy as np
import pandas as pd

from .compose._dataframe import SPEC_FORMAT

__all__ = ["register", "MECHANISMS", "SPEC_FORMAT"]

#: Mechanism names accepted on the command line and in configs.
MECHANISMS = ("rr", "urr", "rappor", "urap", "oue", "uoue")
ESTIMATORS = ("emp", "emp-simplex", "thr", "em")
_DEFAULT_CHUNKSIZE = 100_000


# ------------------------------------------------------------------ helpers
def _mechanism(
    name, epsilon, categories, sensitive=None, theta=None, random_state=None
):
    from .mechanisms import (
        RAPPOR,
        RandomizedResponse,
        UtilityOptimizedRAPPOR,
        UtilityOptimizedRR,
    )

    name = str(name).lower()
    if name not in MECHANISMS:
        raise ValueError(
            f"Unknown mechanism {name!r}; choose one of {list(MECHANISMS)}."
        )
    epsilon = _epsilon(epsilon)
    utility = name in ("urr", "urap", "uoue")
    if utility and not sensitive:
        raise ValueError(
            f"Mechanism {name!r} needs sensitive values (give --sensitive "
            "COLUMN=v1,v2 or 'sensitive' in the config)."
        )
    if not utility and sensitive:
        raise ValueError(
            f"Mechanism {name!r} protects every value and takes no sensitive "
            "values; use 'urr' or 'urap' for utility-optimized privacy."
        )
    if name in ("oue", "uoue"):
        theta = 0.5
    if theta == "optimal" and name != "urap":
        raise ValueError(
            "theta='optimal' minimizes the expected loss of urap; give a number "
            f"for {name!r}."
        )
    kw = dict(categories=categories, random_state=random_state)
    if name == "rr":
        return RandomizedResponse(epsilon, **kw)
    if name == "urr":
        return UtilityOptimizedRR(epsilon, sensitive=sensitive, **kw)
    if name in ("rappor", "oue"):
        return RAPPOR(epsilon, theta=theta, **kw)
    return UtilityOptimizedRAPPOR(epsilon, sensitive=sensitive, theta=theta, **kw)


def _epsilon(value):
    try:
        eps = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"epsilon must be a number > 0, got {value!r}.") from None
    if not (eps > 0) or math.isinf(eps):
        raise ValueError(f"epsilon must be a finite number > 0, got {value!r}.")
    return eps


def _positive_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a positive integer, got {text!r}"
        ) from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _float_arg(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text!r}")
    return value


def _theta_arg(text):
    """A theta in (0, 1), or "optimal" (uRAP: minimize the expected l2 loss)."""
    if text == "optimal":
        return text
    value = _float_arg(text)
    if not value < 1:
        raise argparse.ArgumentTypeError(
            f"expected a theta in (0, 1) or 'optimal', got {text!r}"
        )
    return value


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Show defaults, unless the help text already explains its default."""

    def _get_help_string(self, action):
        text = action.help or ""
        if "(default" in text or action.default is None:
            return text
        return super()._get_help_string(action)


def _seed(text):
    if text.lower() == "none":
        return None
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a non-negative integer or 'none', got {text!r}"
        ) from None
    if value < 0:
        raise argparse.ArgumentTypeError(
            f"expected a non-negative integer, got {text!r}"
        )
    return value


def _split_values(text):
    return [v.strip() for v in text.split(",") if v.strip() != ""]


def _column_values(items, option):
    """Parse repeated ``COLUMN=v1,v2`` options into a dict."""
    out = {}
    for item in items or []:
        if "=" not in item:
            raise ValueError(
                f"{option} expects COLUMN=value1,value2,...; got {item!r}."
            )
        column, values = item.split("=", 1)
        values = _split_values(values)
        if not values:
            raise ValueError(f"{option} {item!r} lists no values.")
        out[column.strip()] = values
    return out


def _load_json(path, what):
    if not os.path.exists(path):
        raise FileNotFoundError(f"{what} file {path!r} does not exist.")
    with open(path, encoding="utf-8") as fh:
        try:
            return json.load(fh)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{what} file {path!r} is not valid JSON: {exc}") from None


def _is_parquet(path):
    return str(path).lower().endswith((".parquet", ".pq"))


def _read_chunks(path, columns, chunksize, dtype=None):
    """Yield DataFrame chunks of ``columns`` from a CSV or Parquet file."""
    if not os.path.exists(path):
        raise FileNotFoundError(f"Input file {path!r} does not exist.")
    if _is_parquet(path):
        try:
            frame = pd.read_parquet(path, columns=columns)
        except ImportError as exc:
            raise ValueError(
                f"Reading Parquet needs pyarrow or fastparquet ({exc}); "
                "install one or convert the file to CSV."
            ) from None
        except (KeyError, ValueError) as exc:
            raise ValueError(
                f"Cannot read columns {columns} from {path!r}: {exc}"
            ) from None
        if dtype is str:
            frame = frame.astype(object).where(frame.notna(), None)
            frame = frame.apply(lambda s: s.map(lambda v: v if v is None else str(v)))
        for lo in range(0, max(len(frame), 1), chunksize):
            yield frame.iloc[lo : lo + chunksize]
        return
    header = pd.read_csv(path, nrows=0).columns
    absent = [c for c in columns if c not in header]
    if absent:
        raise ValueError(
            f"Columns {absent} are not in {path!r} (its columns: {list(header)[:20]})."
        )
    yield from pd.read_csv(path, usecols=columns, dtype=dtype, chunksize=chunksize)


def _progress(chunks, enabled, desc):
    """Yield the chunks, showing the rows done on stderr (tqdm, if installed)."""
    try:
        from tqdm.auto import tqdm
    except ImportError:  # pragma: no cover - optional extra
        enabled = False
    if not enabled:
        yield from chunks
        return
    with tqdm(desc=desc, unit=" rows", unit_scale=True, file=sys.stderr) as bar:
        for chunk in chunks:
            yield chunk
            bar.update(len(chunk))


class _Writer:
    """Write chunks to CSV (appending) or collect them for Parquet."""

    def __init__(self, path):
        self.path, self.parquet, self.parts, self.started = (
            path,
            _is_parquet(path),
            [],
            False,
        )
        directory = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(directory):
            raise FileNotFoundError(f"Output directory {directory!r} does not exist.")

    def write(self, frame):
        if self.parquet:
            self.parts.append(frame)
        else:
            frame.to_csv(
                self.path,
                mode="a" if self.started else "w",
                header=not self.started,
                index=False,
            )
        self.started = True

    def close(self):
        if self.parquet:
            frame = (
                pd.concat(self.parts, ignore_index=True)
                if self.parts
                else pd.DataFrame()
            )
            try:
                frame.to_parquet(self.path, index=False)
            except ImportError as exc:
                raise ValueError(
                    f"Writing Parquet needs pyarrow or fastparquet ({exc}); "
                    "write a .csv file instead."
                ) from None


def _default_spec_path(output):
    root, _ = os.path.splitext(output)
    return root + ".spec.json"


# ---------------------------------------------------------------- privatize
def _privatize_config(args):
    """Return (column configs, options) from --config or from the options."""
    if args.config:
        if args.columns:
            raise ValueError("Give either --config or --columns, not both.")
        config = _load_json(args.config, "Config")
        if (
            not isinstance(config, dict)
            or not isinstance(config.get("columns"), dict)
            or not config["columns"]
        ):
            raise ValueError(
                f"Config {args.config!r} must be a JSON object with a non-empty "
                "'columns' object {column: {mechanism, epsilon, ...}}."
            )
        columns = {}
        for column, conf in config["columns"].items():
            if (
                not isinstance(conf, dict)
                or "mechanism" not in conf
                or "epsilon" not in conf
            ):
                raise ValueError(
                    f"Config of column {column!r} needs 'mechanism' and 'epsilon'."
                )
            unknown = set(conf) - {
                "mechanism",
                "epsilon",
                "categories",
                "sensitive",
                "theta",
            }
            if unknown:
                raise ValueError(
                    f"Unknown keys {sorted(unknown)} in the config of {column!r}."
                )
            columns[column] = {
                "mechanism": conf["mechanism"],
                "epsilon": conf["epsilon"],
                "categories": None
                if conf.get("categories") is None
                else [str(v) for v in conf["categories"]],
                "sensitive": None
                if conf.get("sensitive") is None
                else [str(v) for v in conf["sensitive"]],
                "theta": conf.get("theta"),
            }
        random_state = config.get("random_state", args.random_state)
        missing = config.get("missing", args.missing)
        return columns, random_state, missing
    if not args.columns:
        raise ValueError(
            "Give the columns to privatize (--columns) or a --config file."
        )
    if args.epsilon is None:
        raise ValueError("Give the privacy budget --epsilon (or a --config file).")
    cats = _column_values(args.categories, "--categories")
    sens = _column_values(args.sensitive, "--sensitive")
    extra = (set(cats) | set(sens)) - set(args.columns)
    if extra:
        raise ValueError(
            f"--categories/--sensitive name columns {sorted(extra)} "
            "that are not in --columns."
        )
    columns = {
        c: {
            "mechanism": args.mechanism,
            "epsilon": args.epsilon,
            "categories": cats.get(c),
            "sensitive": sens.get(c),
            "theta": args.theta,
        }
        for c in args.columns
    }
    return columns, args.random_state, args.missing


def _learn_domains(path, columns, chunksize, missing, missing_label):
    values = {c: set() for c in columns}
    has_missing = {c: False for c in columns}
    for chunk in _read_chunks(path, list(columns), chunksize, dtype=str):
        for c in columns:
            col = chunk[c]
            has_missing[c] |= bool(col.isna().any())
            values[c].update(col.dropna().unique().tolist())
    domains = {}
    for c in columns:
        dom = sorted(values[c])
        if missing == "category" and has_missing[c] and missing_label not in dom:
            dom.append(missing_label)
        domains[c] = dom
    print(
        "sklearn-uldp privatize: warning: learned the categories of "
        f"{sorted(columns)} from the data, which reveals which values occur. Give "
        "the public domain with --categories COLUMN=v1,v2 or in the config.",
        file=sys.stderr,
    )
    return domains


def _cmd_privatize(args):
    from .compose import DataFramePrivatizer

    columns, random_state, missing = _privatize_config(args)
    if missing not in ("error", "category"):
        raise ValueError(f"missing must be 'error' or 'category', got {missing!r}.")
    unknown_domain = [c for c, conf in columns.items() if conf["categories"] is None]
    if unknown_domain:
        learned = _learn_domains(
            args.input, unknown_domain, args.chunksize, missing, args.missing_label
        )
        for c in unknown_domain:
            columns[c]["categories"] = learned[c]
    mechanisms = {}
    for c, conf in columns.items():
        try:
            mechanisms[c] = _mechanism(
                conf["mechanism"],
                conf["epsilon"],
                conf["categories"],
                conf["sensitive"],
                conf["theta"],
            )
        except ValueError as exc:
            raise ValueError(f"column {c!r}: {exc}") from None
    priv = DataFramePrivatizer(
        mechanisms,
        missing=missing,
        missing_label=args.missing_label,
        random_state=random_state,
    )
    spec_path = args.spec_out or _default_spec_path(args.output)
    writer = _Writer(args.output)
    n_rows = 0
    chunks = _read_chunks(args.input, list(columns), args.chunksize, dtype=str)
    for chunk in _progress(chunks, not args.no_progress, "privatize"):
        if not hasattr(priv, "mechanisms_"):
            try:
                priv.fit(chunk)
            except TypeError as exc:  # a wrong parameter type in a config
                raise ValueError(str(exc)) from None
        writer.write(priv.transform(chunk))
        n_rows += len(chunk)
    if not hasattr(priv, "mechanisms_"):
        raise ValueError(f"Input file {args.input!r} has no rows.")
    writer.close()
    priv.save_spec(spec_path)
    print(
        f"privatized {n_rows} rows x {len(columns)} columns -> {args.output}; "
        f"spec -> {spec_path} (each person spends epsilon = "
        f"{priv.epsilon_spent_:g} in total)"
    )
    return 0


# ----------------------------------------------------------------- estimate
def _load_specs(path, columns):
    """Return {column: (channel, report column names)} from a spec file."""
    from .mechanisms import Channel

    spec = _load_json(path, "Spec")
    if not isinstance(spec, dict):
        raise ValueError(f"Spec file {path!r} must hold a JSON object.")
    if "mechanism" in spec:  # one channel, as written by Channel.to_json()
        if not columns or len(columns) != 1:
            raise ValueError(
                "This spec describes one mechanism: name its report column with "
                "--columns NAME."
            )
        entries = {columns[0]: (spec, None)}
    elif isinstance(spec.get("columns"), dict):
        names = spec.get("report_columns", {})
        entries = {c: (s, names.get(c)) for c, s in spec["columns"].items()}
        if columns:
            absent = [c for c in columns if c not in entries]
            if absent:
                raise ValueError(
                    f"Columns {absent} are not in the spec (it has {sorted(entries)})."
                )
            entries = {c: entries[c] for c in columns}
    else:
        raise ValueError(
            f"Spec file {path!r} is neither a channel spec (with 'mechanism') nor a "
            "privatize spec (with 'columns')."
        )
    out = {}
    for c, (s, names) in entries.items():
        try:
            channel = Channel.from_dict(s)
        except TypeError as exc:
            raise ValueError(f"Invalid spec for column {c!r}: {exc}") from None
        if names is None:
            names = (
                [f"{c}_{cat}" for cat in channel.categories]
                if channel.report_format == "bits"
                else [c]
            )
        out[c] = (channel, list(names))
    return out


def _make_estimator(name, channel, report_store="memory"):
    from .estimators import EMEstimator, EmpiricalEstimator, ThresholdEstimator

    if name == "emp":
        return EmpiricalEstimator(mechanism=channel)
    if name == "emp-simplex":
        return EmpiricalEstimator(projection="simplex", mechanism=channel)
    if name == "thr":
        return ThresholdEstimator(mechanism=channel)
    return EMEstimator(report_store=report_store, mechanism=channel)


def _as_reports(frame, channel, names):
    if channel.report_format == "bits":
        try:
            return frame[names].astype(np.uint8).to_numpy()
        except (ValueError, TypeError):
            raise ValueError(
                "Bit-vector report columns must hold 0/1 integers."
            ) from None
    lookup = {str(cat): cat for cat in channel.categories.tolist()}
    col = frame[names[0]]
    if col.isna().any():
        raise ValueError(f"Report column {names[0]!r} has empty values.")
    return col.map(lambda v: lookup.get(v, v)).to_numpy(dtype=object)


def _cmd_estimate(args):
    specs = _load_specs(args.spec, args.columns)
    estimators = {
        c: _make_estimator(args.estimator, ch, args.report_store)
        for c, (ch, _) in specs.items()
    }
    names = [n for _, cols in specs.values() for n in cols]
    n = 0
    chunks = _read_chunks(args.reports, names, args.chunksize, dtype=str)
    for chunk in _progress(chunks, not args.no_progress, "estimate"):
        for c, (channel, cols) in specs.items():
            estimators[c].partial_fit(_as_reports(chunk, channel, cols))
        n += len(chunk)
    if n == 0:
        raise ValueError(f"Reports file {args.reports!r} has no rows.")
    rows = []
    for c, est in estimators.items():
        mask = est.channel_.sensitive_mask
        cats = est.categories_.tolist()
        for cat, p, s in zip(cats, est.distribution_, mask, strict=False):
            rows.append(
                {
                    "column": c,
                    "category": cat,
                    "estimate": float(p),
                    "sensitive": bool(s),
                }
            )
    result = pd.DataFrame(rows)
    result.to_csv(args.output, index=False)
    print(
        f"estimated {len(estimators)} distributions from {n} reports -> {args.output}"
    )
    if args.plot:
        _plot_estimates(estimators, args.plot)
        print(f"plot -> {args.plot}")
    return 0


def _plot_estimates(estimators, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ValueError(
            "--plot needs matplotlib (pip install sklearn-uldp[plot])."
        ) from None
    from .plotting import DistributionDisplay

    fig, axes = plt.subplots(
        len(estimators), 1, figsize=(8, 3 * len(estimators)), squeeze=False
    )
    for ax, (c, est) in zip(axes[:, 0], estimators.items(), strict=False):
        DistributionDisplay.from_estimator(est, ax=ax)
        ax.set_title(c)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


# ------------------------------------------------------------------- search
def _cmd_search(args):
    from sklearn.pipeline import Pipeline

    from .estimators import EmpiricalEstimator
    from .model_selection import PrivacyUtilitySearchCV

    frames = list(_read_chunks(args.input, [args.column], args.chunksize, dtype=str))
    data = pd.concat(frames, ignore_index=True)[args.column]
    if data.isna().any():
        raise ValueError(
            f"Column {args.column!r} has {int(data.isna().sum())} missing "
            "values; impute or drop them first."
        )
    if len(data) == 0:
        raise ValueError(f"Input file {args.input!r} has no rows.")
    if args.categories:
        categories = _split_values(args.categories)
    else:
        categories = sorted(data.unique().tolist())
        print(
            "sklearn-uldp search: note: categories learned from the data "
            "(fine for a simulation).",
            file=sys.stderr,
        )
    sensitive = _split_values(args.sensitive) if args.sensitive else None
    mechs = []
    for name in args.mechanisms:
        sens = sensitive if name in ("urr", "urap", "uoue") else None
        if name in ("urr", "urap", "uoue") and not sens:
            raise ValueError(f"Mechanism {name!r} needs --sensitive v1,v2.")
        mechs.append(_mechanism(name, 1.0, categories, sens))
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
            grid.append(
                {"mechanism": without, "mechanism__epsilon": list(args.epsilon)}
            )
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
        res.drop(columns=["params"]).assign(
            **{c: res[c].map(str) for c in res.columns if c.startswith("param_")}
        ).to_csv(args.output, index=False)
        print(f"results -> {args.output}")
    best = search.best_candidates().reset_index()[["epsilon", "candidate", "mean_loss"]]
    print(
        f"best candidate per epsilon ({search.scoring_name_}, mean over "
        f"{args.n_repeats} privatizations):"
    )
    print(best.to_string(index=False))
    if args.target is not None:
        if search.target_epsilon_ is None:
            print(
                f"no candidate reaches {search.scoring_name_} <= {args.target} "
                "in the grid"
            )
        else:
            label = res.at[search.best_index_[search.target_epsilon_], "candidate"]
            print(
                f"smallest epsilon reaching {search.scoring_name_} <= {args.target}: "
                f"{search.target_epsilon_:g} ({label})"
            )
    if args.plot:
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            raise ValueError("--plot needs matplotlib.") from None
        from .plotting import PrivacyUtilityDisplay

        disp = PrivacyUtilityDisplay.from_search(search)
        disp.figure_.savefig(args.plot)
        plt.close(disp.figure_)
        print(f"plot -> {args.plot}")
    return 0


# ----------------------------------------------------------------- register
def _common_io(parser):
    parser.add_argument(
        "--chunksize",
        type=_positive_int,
        default=_DEFAULT_CHUNKSIZE,
        metavar="ROWS",
        help="rows read per chunk",
    )
    parser.add_argument(
        "--no-progress",
        action="store_true",
        help="do not show a progress bar (tqdm, on stderr)",
    )


def register(subparsers):
    """Add the ``privatize``, ``estimate`` and ``search`` subcommands.

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
        From :meth:`argparse.ArgumentParser.add_subparsers`.

    Returns
    -------
    parsers : list of argparse.ArgumentParser

    Examples
    --------
    >>> import argparse
    >>> from sklearn_uldp._cli_workflow import register
    >>> parser = argparse.ArgumentParser(prog="sklearn-uldp")
    >>> sub = parser.add_subparsers(dest="command")
    >>> [p.prog for p in register(sub)]
    ['sklearn-uldp privatize', 'sklearn-uldp estimate', 'sklearn-uldp search']
    """
    fmt = _HelpFormatter
    p = subparsers.add_parser(
        "privatize",
        formatter_class=fmt,
        help="privatize columns of a CSV/Parquet table (client side)",
        description=(
            "Privatize columns of a CSV or Parquet table, one mechanism per column, "
            "with independent randomness per column and per chunk. Writes the "
            "reports (CSV or Parquet) and the public spec (JSON) a collector needs "
            "for 'sklearn-uldp estimate'. Each person spends the sum of the "
            "columns' epsilons (sequential composition). Mechanisms: rr, urr, "
            "rappor, urap, oue, uoue."
        ),
    )
    p.add_argument("input", help="input table (.csv, or .parquet with pyarrow)")
    p.add_argument(
        "-o", "--output", required=True, help="reports file (.csv or .parquet)"
    )
    p.add_argument(
        "--spec-out",
        metavar="JSON",
        help="where to write the spec (default: OUTPUT with .spec.json)",
    )
    p.add_argument(
        "--config",
        metavar="JSON",
        help="JSON config {'columns': {COL: {mechanism, epsilon, categories, "
        "sensitive, theta}}, 'random_state': ..., 'missing': ...}",
    )
    p.add_argument("--columns", nargs="+", metavar="COL", help="columns to privatize")
    p.add_argument(
        "--mechanism",
        choices=MECHANISMS,
        default="urr",
        help="mechanism of every column given with --columns",
    )
    p.add_argument("--epsilon", type=_float_arg, help="budget of each column's report")
    p.add_argument(
        "--theta",
        type=_theta_arg,
        default=None,
        help="theta of rappor/urap, or 'optimal' for urap (default: basic "
        "RAPPOR's)",
    )
    p.add_argument(
        "--categories",
        action="append",
        metavar="COL=v1,v2",
        help="public domain of a column (repeat per column); learned "
        "from the data with a warning when absent",
    )
    p.add_argument(
        "--sensitive",
        action="append",
        metavar="COL=v1,v2",
        help="sensitive values of a column (repeat per column)",
    )
    p.add_argument(
        "--missing",
        choices=("error", "category"),
        default="error",
        help="missing values: fail, or report them as an explicit category",
    )
    p.add_argument(
        "--missing-label",
        default="(missing)",
        help="the category of missing values with --missing category",
    )
    p.add_argument(
        "--random-state",
        type=_seed,
        default=None,
        metavar="SEED",
        help="seed of the noise (default: fresh OS entropy; use an "
        "integer only for tests)",
    )
    _common_io(p)
    p.set_defaults(func=_cmd_privatize)

    e = subparsers.add_parser(
        "estimate",
        formatter_class=fmt,
        help="estimate distributions from reports and a spec (collector side)",
        description=(
            "Estimate the distribution of the true values of each column from the "
            "reports and the public spec written by 'privatize' (or one channel "
            "spec from Channel.to_json() with --columns NAME). Writes a CSV with "
            "columns column, category, estimate, sensitive."
        ),
    )
    e.add_argument("reports", help="reports file (.csv or .parquet)")
    e.add_argument("--spec", required=True, metavar="JSON", help="the spec file")
    e.add_argument("-o", "--output", required=True, help="distribution CSV to write")
    e.add_argument(
        "--columns",
        nargs="+",
        metavar="COL",
        help="only these columns (default: all in the spec)",
    )
    e.add_argument(
        "--estimator",
        choices=ESTIMATORS,
        default="emp-simplex",
        help="emp: unbiased; emp-simplex: projected on the simplex; "
        "thr: significance threshold; em: maximum likelihood",
    )
    e.add_argument(
        "--report-store",
        default="memory",
        metavar="{memory,disk,DIR}",
        help="where --estimator em keeps bit-vector reports (RAPPOR, OUE, uRAP, "
        "uBD), whose likelihood needs each one: memory, disk (the system's "
        "temporary directory) or an existing directory DIR. On disk, memory "
        "does not grow with the number of reports.",
    )
    e.add_argument("--plot", metavar="PNG", help="also plot the estimates (matplotlib)")
    _common_io(e)
    e.set_defaults(func=_cmd_estimate)

    s = subparsers.add_parser(
        "search",
        formatter_class=fmt,
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
        "--categories", metavar="v1,v2", help="public domain (default: learned)"
    )
    s.add_argument(
        "--sensitive",
        metavar="v1,v2",
        help="sensitive values (needed by urr/urap/uoue)",
    )
    s.add_argument(
        "--mechanisms",
        nargs="+",
        choices=MECHANISMS,
        default=["urr", "urap"],
        help="mechanisms to compare",
    )
    s.add_argument(
        "--epsilon",
        nargs="+",
        type=_float_arg,
        default=[0.5, 1.0, 2.0, 4.0],
        help="budgets",
    )
    s.add_argument(
        "--theta",
        nargs="+",
        type=_theta_arg,
        help="thetas for the RAPPOR-family mechanisms ('optimal' for urap)",
    )
    s.add_argument(
        "--scoring", choices=("tv", "l1", "l2", "mse"), default="tv", help="the loss"
    )
    s.add_argument(
        "--n-repeats",
        type=_positive_int,
        default=5,
        help="independent privatizations per candidate",
    )
    s.add_argument("--target", type=_float_arg, help="target loss, e.g. 0.05")
    s.add_argument("--n-jobs", type=int, default=None, help="parallel jobs (joblib)")
    s.add_argument(
        "--random-state",
        type=_seed,
        default=0,
        metavar="SEED",
        help="seed of the simulation ('none' for OS entropy)",
    )
    s.add_argument("-o", "--output", help="write cv_results_ to this CSV")
    s.add_argument("--plot", metavar="PNG", help="plot the privacy/utility curve")
    _common_io(s)
    s.set_defaults(func=_cmd_search)
    return [p, e, s]
