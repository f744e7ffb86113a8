"""``sklearn-uldp privatize``: a table in, reports and their spec out.

The client side of the workflow: read a CSV or Parquet table in chunks,
privatize the chosen columns (one mechanism per column, independent noise per
column and per chunk), and write the reports (CSV or Parquet) plus the public
spec (JSON) a collector needs for ``sklearn-uldp estimate``. Columns and
mechanisms come from options or a JSON config::

    {"missing": "error",
     "columns": {"marital": {"mechanism": "urr", "epsilon": 1.0,
                             "categories": ["married", "single", "divorced"],
                             "sensitive": ["divorced"]},
                 "region": {"mechanism": "rr", "epsilon": 0.5}}}

All values read from files are treated as strings, so the categories of the
spec are strings too. The noise comes from a cryptographically secure
generator by default (``--random-state secure``).
"""

import json
import numbers
import os

from ._common import (
    MECHANISMS,
    HelpFormatter,
    add_common_options,
    column_values,
    load_json,
    make_mechanism,
    noise_arg,
    positive_float,
    progress,
    theta_arg,
    warn,
)
from ._io import (
    TableWriter,
    atomic_path,
    check_outputs,
    check_table_output,
    default_spec_path,
    file_digest,
    read_chunks,
)

__all__ = ["register"]

_CONFIG_KEYS = {"columns", "random_state", "missing"}
_COLUMN_KEYS = {"mechanism", "epsilon", "categories", "sensitive", "theta"}


# ------------------------------------------------------------------- config
def _value_list(value, what, column):
    """A config's categories/sensitive: a non-empty JSON list of scalars."""
    if value is None:
        return None
    if not isinstance(value, list) or not value or not all(
        isinstance(v, (str, numbers.Real)) and not isinstance(v, bool) for v in value
    ):
        raise ValueError(
            f"Config of column {column!r}: '{what}' must be a non-empty list of "
            f'strings or numbers, e.g. ["a", "b"]; got {value!r}.'
        )
    return [str(v) for v in value]


def _config_noise(value):
    if value is None or value == "secure":
        return value
    if isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= 0:
        return int(value)
    raise ValueError(
        "Config 'random_state' must be \"secure\", null or a non-negative integer; "
        f"got {value!r}."
    )


def _noise(value):
    """``--random-state`` -> the privatizer's random_state ('none' is None)."""
    return None if value == "none" else value


def _from_config(args):
    config = load_json(args.config, "Config")
    if (
        not isinstance(config, dict)
        or not isinstance(config.get("columns"), dict)
        or not config["columns"]
    ):
        raise ValueError(
            f"Config {str(args.config)!r} must be a JSON object with a non-empty "
            "'columns' object {column: {mechanism, epsilon, ...}}."
        )
    unknown = set(config) - _CONFIG_KEYS
    if unknown:
        raise ValueError(
            f"Unknown keys {sorted(unknown)} in config {str(args.config)!r}; the "
            f"keys are {sorted(_CONFIG_KEYS)}."
        )
    columns = {}
    for column, conf in config["columns"].items():
        if not isinstance(conf, dict) or "mechanism" not in conf or "epsilon" not in conf:
            raise ValueError(
                f"Config of column {column!r} must be an object with 'mechanism' "
                f"and 'epsilon'; got {conf!r}."
            )
        unknown = set(conf) - _COLUMN_KEYS
        if unknown:
            raise ValueError(
                f"Unknown keys {sorted(unknown)} in the config of {column!r}; the "
                f"keys are {sorted(_COLUMN_KEYS)}."
            )
        theta = conf.get("theta")
        if theta is not None and theta != "optimal" and (
            isinstance(theta, bool) or not isinstance(theta, numbers.Real)
        ):
            raise ValueError(
                f"Config of column {column!r}: 'theta' must be a number in (0, 1), "
                f'"optimal" or null; got {theta!r}.'
            )
        columns[column] = {
            "mechanism": conf["mechanism"],
            "epsilon": conf["epsilon"],
            "categories": _value_list(conf.get("categories"), "categories", column),
            "sensitive": _value_list(conf.get("sensitive"), "sensitive", column),
            "theta": theta,
        }
    # The command line wins over the config, which wins over the default.
    if args.random_state is not None:
        noise = _noise(args.random_state)
    elif "random_state" in config:
        noise = _config_noise(config["random_state"])
    else:
        noise = "secure"
    missing = config.get("missing", args.missing)
    return columns, noise, missing


def _privatize_config(args):
    """Return (column configs, noise source, missing) from --config or options."""
    if args.config:
        if args.columns:
            raise ValueError("Give either --config or --columns, not both.")
        return _from_config(args)
    if not args.columns:
        raise ValueError(
            "Give the columns to privatize (--columns) or a --config file."
        )
    if args.epsilon is None:
        raise ValueError("Give the privacy budget --epsilon (or a --config file).")
    cats = column_values(args.categories, "--categories")
    sens = column_values(args.sensitive, "--sensitive")
    extra = (set(cats) | set(sens)) - set(args.columns)
    if extra:
        raise ValueError(
            f"--categories/--sensitive name columns {sorted(extra)} "
            f"that are not in --columns {args.columns}."
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
    noise = "secure" if args.random_state is None else _noise(args.random_state)
    return columns, noise, args.missing


def _learn_domains(path, columns, chunksize, missing, missing_label):
    values = {c: set() for c in columns}
    has_missing = {c: False for c in columns}
    for chunk in read_chunks(path, list(columns), chunksize, dtype=str):
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
    warn(
        "privatize",
        f"learned the categories of {sorted(columns)} from the data, which reveals "
        "which values occur. Give the public domain with --categories "
        "COLUMN=v1,v2 or in the config.",
    )
    return domains


# ------------------------------------------------------------------ command
def _cmd_privatize(args):
    from ..compose import DataFramePrivatizer

    columns, noise, missing = _privatize_config(args)
    if missing not in ("error", "category"):
        raise ValueError(f"missing must be 'error' or 'category', got {missing!r}.")
    # Every check on the files comes before any work, so nothing is written
    # (and nothing is lost) when one fails.
    spec_path = args.spec_out or default_spec_path(args.output)
    check_outputs(
        {"reports file": args.output, "spec file": spec_path},
        {"input": args.input, "config": args.config},
        args.overwrite,
    )
    check_table_output(args.output, "reports file")
    if isinstance(noise, numbers.Integral):
        warn(
            "privatize",
            f"--random-state {noise} makes the noise reproducible: anyone who knows "
            "the seed can remove it. Use a seed only for simulations and tests, "
            "never to privatize real users (the default 'secure' draws fresh "
            "cryptographically secure randomness).",
        )
    if noise == "secure":
        from ..utils._random import check_secure_available

        try:
            check_secure_available()
        except ImportError:
            raise ValueError(
                "privatize draws its noise from a cryptographically secure "
                "generator by default, which needs the package randomgen: "
                "pip install 'sklearn-uldp[secure]'. Or pass --random-state none "
                "(numpy's PCG64 keyed from fresh OS entropy)."
            ) from None
    unknown_domain = [c for c, conf in columns.items() if conf["categories"] is None]
    if unknown_domain:
        learned = _learn_domains(
            args.input, unknown_domain, args.chunksize, missing, args.missing_label
        )
        for c in unknown_domain:
            columns[c]["categories"] = learned[c]
    # A seed goes to the privatizer, which derives one stream per column; the
    # secure generator (keyed afresh in each call) is set on both, so each
    # mechanism is secure on its own too.
    mech_noise = "secure" if noise == "secure" else None
    mechanisms = {}
    for c, conf in columns.items():
        try:
            mechanisms[c] = make_mechanism(
                conf["mechanism"],
                conf["epsilon"],
                conf["categories"],
                conf["sensitive"],
                conf["theta"],
                random_state=mech_noise,
            )
        except ValueError as exc:
            raise ValueError(f"column {c!r}: {exc}") from None
    priv = DataFramePrivatizer(
        mechanisms,
        missing=missing,
        missing_label=args.missing_label,
        random_state=noise,
    )
    # Both files are complete under temporary names before either is renamed
    # into place, so a failure leaves neither (and no existing file changed).
    with atomic_path(spec_path) as spec_tmp, TableWriter(args.output) as writer:
        chunks = read_chunks(args.input, list(columns), args.chunksize, dtype=str)
        for chunk in progress(chunks, not args.no_progress, "privatize"):
            if len(chunk) == 0:
                continue
            if not hasattr(priv, "mechanisms_"):
                try:
                    priv.fit(chunk)
                except TypeError as exc:  # a wrong parameter type in a config
                    raise ValueError(str(exc)) from None
            writer.write(priv.transform(chunk))
        if writer.n_rows == 0:
            raise ValueError(f"Input file {str(args.input)!r} has no rows.")
        _write_spec(priv, spec_tmp, args.output, writer)
    print(
        f"privatized {writer.n_rows} rows x {len(columns)} "
        f"column{'s' if len(columns) != 1 else ''} -> {args.output}; "
        f"spec -> {spec_path} (each person spends epsilon = "
        f"{priv.epsilon_spent_:g} in total)"
    )
    return 0


def _write_spec(priv, path, output, writer):
    """Write the privatizer's spec, bound to the reports file it describes.

    The ``"reports"`` entry lets ``estimate`` refuse a spec given with
    reports it was not written for (another output, a truncated or altered
    file): the file name, format, row count, report columns and SHA-256.
    """
    priv.save_spec(path)
    with open(path, encoding="utf-8") as fh:
        document = json.load(fh)
    document["reports"] = {
        "file": os.path.basename(os.fspath(output)),
        "format": writer.format,
        "n_rows": writer.n_rows,
        "columns": writer.columns,
        "sha256": file_digest(writer.finish()),
    }
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(document, fh, indent=2)


# ----------------------------------------------------------------- register
def register(subparsers):
    """Add the ``privatize`` subcommand.

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
    >>> from sklearn_uldp.cli._privatize import register
    >>> parser = argparse.ArgumentParser(prog="sklearn-uldp")
    >>> register(parser.add_subparsers(dest="command")).prog
    'sklearn-uldp privatize'
    """
    p = subparsers.add_parser(
        "privatize",
        formatter_class=HelpFormatter,
        help="privatize columns of a CSV/Parquet table (client side)",
        description=(
            "Privatize columns of a CSV or Parquet table, one mechanism per column, "
            "with independent randomness per column and per chunk. Writes the "
            "reports (CSV or Parquet) and the public spec (JSON) a collector needs "
            "for 'sklearn-uldp estimate'. Each person spends the sum of the "
            "columns' epsilons (sequential composition). Mechanisms: rr, urr, "
            "rappor, urap, oue, uoue. An existing file is replaced only with "
            "--overwrite, and an input file never."
        ),
    )
    p.add_argument("input", help="input table (.csv, or .parquet with pyarrow)")
    p.add_argument(
        "-o",
        "--output",
        required=True,
        help="reports file to write (.csv, .parquet or .pq)",
    )
    p.add_argument(
        "--spec-out",
        metavar="JSON",
        help="where to write the spec (default: OUTPUT.spec.json, e.g. "
        "r.csv.spec.json)",
    )
    p.add_argument(
        "--config",
        metavar="JSON",
        help='JSON config {"columns": {COL: {"mechanism", "epsilon", "categories", '
        '"sensitive", "theta"}}, "random_state": ..., "missing": ...} instead of '
        "--columns and the options below",
    )
    p.add_argument("--columns", nargs="+", metavar="COL", help="columns to privatize")
    p.add_argument(
        "--mechanism",
        choices=MECHANISMS,
        default="urr",
        help="mechanism of every column given with --columns",
    )
    p.add_argument(
        "--epsilon",
        type=positive_float,
        metavar="EPS",
        help="budget of each column's report",
    )
    p.add_argument(
        "--theta",
        type=theta_arg,
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
        metavar="LABEL",
        help="the category of missing values with --missing category "
        "(default: '(missing)')",
    )
    p.add_argument(
        "--random-state",
        type=noise_arg,
        default=None,
        metavar="{secure,none,SEED}",
        help="source of the noise (default: secure, a cryptographically secure "
        "generator keyed from OS entropy in every call); none: numpy's PCG64 "
        "from fresh OS entropy; an integer SEED makes the noise reproducible, "
        "for simulations and tests only, never for real users",
    )
    add_common_options(p)
    p.set_defaults(func=_cmd_privatize)
    return p
