"""``sklearn-uldp privatize``: a table in, reports and their spec out.

The client side of the workflow: read a CSV or Parquet table in chunks,
privatize the chosen columns (one mechanism per column, independent noise per
column and per chunk), and write the reports (CSV or Parquet) plus the public
spec (JSON) a collector needs for ``sklearn-uldp estimate``. Columns and
mechanisms come from options or a JSON config; a column's config holds its
mechanism's spec name and that mechanism's parameters (any of its
constructor's, see :mod:`sklearn_uldp.cli._names`)::

    {"missing": "error",
     "columns": {"marital": {"mechanism": "urr", "epsilon": 1.0,
                             "categories": ["married", "single", "divorced"],
                             "sensitive": ["divorced"]},
                 "region": {"mechanism": "rr", "epsilon": 0.5},
                 "age": {"mechanism": "hybrid", "epsilon": 1.0, "bounds": [0, 120],
                         "missing": "impute"},
                 "job": {"mechanism": "pem", "epsilon": 4.0, "top_k": 20,
                         "max_bytes": 32}}}

Three families of columns:

* **categorical** (``rr``, ``urr``, ``rappor``, ``urap``, ``olh``, ...): a
  domain of categories, declared (``"categories"``) or learned from the data
  with a warning. Memoized (longitudinal) mechanisms (``lgrr``, ``lue``,
  ``loloha``, ``dbitflip``, ``ulrr``, ``ulrap``) are categorical columns
  whose users keep their permanent answers across rounds: they need the
  users' secrets, ``--user-secrets FILE --user-id COLUMN`` (see
  :mod:`sklearn_uldp.cli._secrets`), matched to rows by user id and never
  written;
* **numeric** (``duchi``, ``piecewise``, ``hybrid``, ``square_wave``,
  ``uobm``): numbers in the public range ``"bounds"`` (values outside are
  clipped, and the command says how many);
* **heavy hitters** (``pem``, ``treehist``, ``bloom_rappor``,
  ``uldp_heavy_hitters``): items of an open domain (text), no domain up
  front; ``estimate`` discovers the frequent ones. ``bloom_rappor``
  memoizes like the longitudinal mechanisms (its ``memo_label`` is the
  column's name unless the config sets one).

Missing values (``--missing``, or ``"missing"`` in the config, for all
columns or per column): ``error`` (the default; the error names the column
and the rows), ``category`` (reported as the missing label: a category of
its own, or an item for heavy hitters) or ``impute`` (a value drawn
uniformly from the public domain or bounds, with the noise's generator,
then privatized like any other). Nothing is dropped: a blank line is a
user whose values are all missing.

A category value ``"LOW..HIGH"`` is an inclusive integer range, on the
command line (``--categories hospvis=0..51``) and in the config
(``"categories": ["0..51"]`` or ``"categories": "0..51"``). A column whose
categories are all integers is an integer column: its values, spec and
reports are integers (see :mod:`sklearn_uldp.cli._values`); other columns
are text. The noise comes from a cryptographically secure generator by
default (``--random-state secure``).
"""

import contextlib
import json
import numbers
import os
import warnings

import numpy as np
import pandas as pd

from . import _columns
from ._common import (
    add_command,
    add_common_options,
    add_missing_options,
    check_parameters,
    column_values,
    load_json,
    make_mechanism,
    noise_arg,
    plural,
    positive_float,
    positive_int,
    progress,
    theta_arg,
    warn,
)
from ._io import (
    PARQUET_SPEC_KEY,
    OutputFiles,
    TableWriter,
    canonical_digest,
    check_outputs,
    check_table_output,
    default_spec_path,
    file_digest,
    read_chunks,
)
from ._names import CATEGORICAL, HEAVY_HITTERS, NUMERIC, NameChoices, resolve
from ._secrets import load_user_secrets, secrets_of_rows
from ._values import (
    expand_values,
)

__all__ = ["register", "MISSING_POLICIES"]

_CONFIG_KEYS = {"columns", "random_state", "missing", "strategy"}
#: Keys of a column's config that are the command line's, not the mechanism's.
_OWN_KEYS = {"mechanism", "missing"}
#: What a missing value becomes (--missing, "missing" in a config).
MISSING_POLICIES = ("error", "category", "impute")
#: The policies each family takes (heavy hitters have no domain to draw from,
#: numbers no category).
_POLICIES = {
    CATEGORICAL: ("error", "category", "impute"),
    NUMERIC: ("error", "impute"),
    HEAVY_HITTERS: ("error", "category"),
}


# ------------------------------------------------------------------- config
def _value_list(value, what, column):
    """A config's categories/sensitive: a non-empty list of scalars, ranges expanded."""
    if value is None:
        return None
    if isinstance(value, str) and ".." in value:  # "0..51" alone
        value = [value]
    if (
        not isinstance(value, list)
        or not value
        or not all(isinstance(v, (str, numbers.Real)) and not isinstance(v, bool) for v in value)
    ):
        raise ValueError(
            f"Config of column {column!r}: '{what}' must be a non-empty list of "
            f'strings or numbers, e.g. ["a", "b"], [1, 2] or ["0..51"]; got '
            f"{value!r}."
        )
    # JSON integers stay integers; other numbers are matched as text.
    value = [v if isinstance(v, (str, numbers.Integral)) else str(v) for v in value]
    return expand_values(value, f"Config of column {column!r}, '{what}'")


def _bounds(value, column):
    """A numeric column's public range [low, high], two finite numbers."""
    ok = (
        isinstance(value, (list, tuple))
        and len(value) == 2
        and all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in value)
        and all(np.isfinite(float(v)) for v in value)
        and float(value[0]) < float(value[1])
    )
    if not ok:
        raise ValueError(
            f"Config of column {column!r}: 'bounds' must be [low, high], two finite "
            f"numbers with low < high, e.g. [0, 120]; got {value!r}."
        )
    return [float(value[0]), float(value[1])]


def _column_config(column, conf):
    """A column's config (from a file or the options), checked and normalized.

    Returns ``{"mechanism": spec name, "name": as given, "entry", "params",
    "categories", "sensitive", "missing"}``; ``categories`` and ``sensitive``
    are those of a categorical column (others keep theirs in ``params``).
    """
    if not isinstance(conf, dict) or not isinstance(conf.get("mechanism"), str):
        raise ValueError(
            f"Config of column {column!r} must be an object with 'mechanism' (a name "
            'such as "rr", "hybrid" or "pem") and the mechanism\'s parameters; '
            f"got {type(conf).__name__}{' without mechanism' if isinstance(conf, dict) else ''}."
        )
    try:
        entry, _ = resolve(conf["mechanism"])
        params = check_parameters(
            conf["mechanism"], {k: v for k, v in conf.items() if k not in _OWN_KEYS}
        )
    except ValueError as exc:
        raise ValueError(f"column {column!r}: {exc}") from None
    missing = conf.get("missing")
    if missing is not None and missing not in _POLICIES[entry.family]:
        raise ValueError(
            f"Config of column {column!r}: 'missing' of a {entry.family.replace('_', ' ')} "
            f"column is one of {list(_POLICIES[entry.family])}, got {missing!r}."
        )
    out = {"mechanism": entry.name, "name": conf["mechanism"].lower(), "entry": entry}
    out["missing"] = missing
    out["categories"] = out["sensitive"] = None
    if entry.family == CATEGORICAL:
        out["categories"] = _value_list(params.pop("categories", None), "categories", column)
        out["sensitive"] = _value_list(params.pop("sensitive", None), "sensitive", column)
        theta = params.get("theta")
        if theta is not None and theta != "optimal" and not isinstance(theta, numbers.Real):
            raise ValueError(
                f"Config of column {column!r}: 'theta' must be a number in (0, 1), "
                f'"optimal" or null; got {theta!r}.'
            )
    elif entry.family == NUMERIC:
        params["bounds"] = _bounds(params["bounds"], column)
    elif params.get("item_type", "str") != "str":
        raise ValueError(
            f"Config of column {column!r}: the command line privatizes items read as "
            f"text (item_type 'str'), not {params['item_type']!r}."
        )
    if entry.family == HEAVY_HITTERS and entry.memoized and "memo_label" not in params:
        # Two columns of the same users' secrets must not share memoized
        # answers: the column's name separates them (as DataFramePrivatizer
        # separates its columns' keys).
        params["memo_label"] = str(column)
    out["params"] = params
    return out


def _config_noise(value):
    if value is None or value == "secure":
        return value
    if isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= 0:
        return int(value)
    raise ValueError(
        f"Config 'random_state' must be \"secure\", null or a non-negative integer; got {value!r}."
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
    columns = {c: _column_config(c, conf) for c, conf in config["columns"].items()}
    # The command line wins over the config, which wins over the default.
    if args.random_state is not None:
        noise = _noise(args.random_state)
    elif "random_state" in config:
        noise = _config_noise(config["random_state"])
    else:
        noise = "secure"
    default = config.get("missing", "error")
    if default not in MISSING_POLICIES:
        raise ValueError(
            f"Config 'missing' must be one of {list(MISSING_POLICIES)}, got {default!r}."
        )
    return columns, noise, default


def _param_options(items):
    """``--param KEY=VALUE`` (repeated) -> {key: value}; a VALUE is JSON, or text."""
    out = {}
    for item in items or []:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ValueError(f"--param expects NAME=VALUE, e.g. top_k=50; got {item!r}.")
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            value = text
        out[key] = value
    return out


def _bounds_options(items):
    """``--bounds COL=LOW,HIGH`` (repeated) -> {column: [low, high]}."""
    out = {}
    for item in items or []:
        column, sep, text = item.partition("=")
        parts = text.split(",")
        try:
            values = [float(p) for p in parts]
        except ValueError:
            values = None
        if not sep or not column.strip() or values is None or len(values) != 2:
            raise ValueError(f"--bounds expects COLUMN=LOW,HIGH, e.g. age=0,120; got {item!r}.")
        out[column.strip()] = values
    return out


def _from_options(args):
    if not args.columns:
        raise ValueError("Give the columns to privatize (--columns) or a --config file.")
    cats = column_values(args.categories, "--categories")
    sens = column_values(args.sensitive, "--sensitive")
    bounds = _bounds_options(args.bounds)
    extra = (set(cats) | set(sens) | set(bounds)) - set(args.columns)
    if extra:
        raise ValueError(
            f"--categories/--sensitive/--bounds name columns {sorted(extra)} "
            f"that are not in --columns {args.columns}."
        )
    entry, _ = resolve(args.mechanism)
    shared = _param_options(args.param)
    for key, value in (
        ("epsilon", args.epsilon),
        ("theta", args.theta),
        ("n_buckets", args.n_buckets),
        ("n_hashes", args.n_hashes),
    ):
        if value is not None:
            shared[key] = value
    if "epsilon" not in shared and entry.budgets == (("epsilon",),):
        raise ValueError("Give the privacy budget --epsilon (or a --config file).")
    columns = {}
    for c in args.columns:
        conf = {"mechanism": args.mechanism, **shared}
        for key, given in (("categories", cats), ("sensitive", sens), ("bounds", bounds)):
            if c in given:
                conf[key] = given[c]
        columns[c] = _column_config(c, conf)
    noise = "secure" if args.random_state is None else _noise(args.random_state)
    return columns, noise, "error"


def _missing_options(items):
    """``--missing`` (repeated): (the policy for every column or None, {column: policy})."""
    default, per_column = None, {}
    for item in items or []:
        column, sep, policy = item.rpartition("=") if "=" in item else ("", "", item)
        if policy not in MISSING_POLICIES:
            raise ValueError(
                f"--missing takes one of {', '.join(MISSING_POLICIES)}, for every column "
                f"or as COLUMN=POLICY; got {item!r}."
            )
        if sep:
            per_column[column.strip()] = policy
        else:
            default = policy
    return default, per_column


def _privatize_config(args):
    """Return (column configs, noise source) from --config or options.

    Each column's ``"missing"`` is settled: ``--missing COLUMN=POLICY``, else
    the column's config, else ``--missing POLICY``, else the config's, else
    ``error``. A policy set for every column applies to the columns whose
    family takes it (``category`` leaves numeric columns at ``error``).
    """
    if args.config:
        if args.columns:
            raise ValueError("Give either --config or --columns, not both.")
        columns, noise, config_default = _from_config(args)
    else:
        columns, noise, config_default = _from_options(args)
    default, per_column = _missing_options(args.missing)
    absent = sorted(set(per_column) - set(columns))
    if absent:
        raise ValueError(f"--missing names columns {absent} that are not privatized.")
    for c, conf in columns.items():
        family = conf["entry"].family
        if c in per_column:
            if per_column[c] not in _POLICIES[family]:
                raise ValueError(
                    f"--missing {c}={per_column[c]}: a {family.replace('_', ' ')} column "
                    f"takes {', '.join(_POLICIES[family])}."
                )
            conf["missing"] = per_column[c]
        elif conf["missing"] is None:
            general = default if default is not None else config_default
            conf["missing"] = general if general in _POLICIES[family] else "error"
    return columns, noise


# ------------------------------------------------------------------ command
def _check_noise(noise):
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


def _build(column, conf, categories=None, sensitive=None, *, noise, packed):
    """One column's mechanism (unfitted); errors name the column."""
    params = dict(conf["params"])
    if conf["entry"].family == CATEGORICAL:
        params.update(categories=categories, sensitive=sensitive)
    try:
        mechanism = make_mechanism(conf["name"], params, random_state=noise)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"column {column!r}: {exc}") from None
    if packed and conf["entry"].packable:
        mechanism.set_params(packed_output=True)
    return mechanism


def _make_privatizer(
    columns, numeric, kinds, noise, strategy, packed=False, marginal_size=2, report_format="wide"
):
    """The DataFramePrivatizer of the categorical and numeric columns (None if none)."""
    if not columns and not numeric:
        return None
    from ..compose import DataFramePrivatizer

    # A seed goes to the privatizer, which derives one stream per column; the
    # secure generator (keyed afresh in each call) is set on both, so each
    # mechanism is secure on its own too.
    mech_noise = "secure" if noise == "secure" else None
    mechanisms = {}
    for c, conf in columns.items():
        categories, sensitive = conf["categories"], conf["sensitive"]
        if kinds[c][0] and not kinds[c][2]:
            # Integers and a text label: the mechanism works on their text
            # (a chunk of integers alone would fix its report type to int64,
            # which cannot hold the label); the spec records the typed values.
            categories = [str(v) for v in categories]
            sensitive = None if sensitive is None else [str(v) for v in sensitive]
        mechanisms[c] = _build(c, conf, categories, sensitive, noise=mech_noise, packed=packed)
    for c, conf in numeric.items():  # numbers: a public range, no domain to type
        mechanisms[c] = _build(c, conf, noise=mech_noise, packed=False)
    # Missing values are labelled, imputed or refused by the command already.
    return DataFramePrivatizer(
        mechanisms,
        random_state=noise,
        strategy=strategy,
        marginal_size=marginal_size,
        report_format=report_format,
    )


def _heavy_mechanisms(heavy, noise):
    """The open-domain columns' mechanisms (unfitted)."""
    # A seed is the mechanism's own: its stream is keyed by the column's
    # name and the call, apart from the privatizer's (spawned) streams.
    mechanisms = {c: _build(c, conf, noise=noise, packed=False) for c, conf in heavy.items()}
    for mechanism in mechanisms.values():
        mechanism.set_output(transform="pandas")  # reports named as the spec says
    return mechanisms


def _split_families(columns):
    by = {CATEGORICAL: {}, NUMERIC: {}, HEAVY_HITTERS: {}}
    for c, conf in columns.items():
        by[conf["entry"].family][c] = conf
    return by[CATEGORICAL], by[NUMERIC], by[HEAVY_HITTERS]


def _check_files(args, spec_path, strategy, heavy):
    # Every check on the files comes before any work, so nothing is written
    # (and nothing is lost) when one fails.
    check_outputs(
        {"reports file": args.output, "spec file": spec_path},
        {"input": args.input, "config": args.config, "secrets file": args.user_secrets},
        args.overwrite,
    )
    if check_table_output(args.output, "reports file") != "parquet" and args.packed:
        raise ValueError(
            "--packed writes each bit-vector report as bytes, which CSV cannot "
            "hold: give a reports file ending in .parquet (or drop --packed)."
        )
    if args.packed and strategy != "split":
        raise ValueError(
            f"--packed works with --strategy split only (got {strategy!r}): "
            "drop --packed or --strategy."
        )
    if heavy and strategy != "split":
        raise ValueError(
            f"Columns {sorted(heavy)} are open-domain (heavy hitters), which report "
            f"with --strategy split only (got {strategy!r}): privatize them in a "
            "run of their own, or drop --strategy."
        )


def _cmd_privatize(args):
    if args.range_queries is not None:  # numeric columns for range queries: their own run
        from ._ranges import privatize_ranges

        spec_path = args.spec_out or default_spec_path(args.output)
        check_outputs(
            {"reports file": args.output, "spec file": spec_path},
            {"input": args.input, "config": args.config},
            args.overwrite,
        )
        check_table_output(args.output, "reports file")
        noise = "secure" if args.random_state is None else _noise(args.random_state)
        _check_noise(noise)
        return privatize_ranges(args, spec_path, noise, _bounds_options(args.bounds))
    if args.range_method is not None or args.granularity is not None:
        raise ValueError("--range-method and --granularity go with --range-queries.")
    columns, noise = _privatize_config(args)
    strategy = _strategy(args)
    spec_path = args.spec_out or default_spec_path(args.output)
    categorical, numeric, heavy = _split_families(columns)
    _check_files(args, spec_path, strategy, heavy)
    _check_noise(noise)
    kinds = _columns.typed_columns(categorical, args)
    if args.marginal_size is not None and strategy != "marginals":
        raise ValueError("--marginal-size goes with --strategy marginals.")
    marginal_size = 2 if args.marginal_size is None else args.marginal_size
    report_format = getattr(args, "report_format", "wide")
    if report_format == "compact" and strategy != "sample":
        raise ValueError(
            "--report-format compact goes with --strategy sample (one report per "
            f"person); got --strategy {strategy}. Drop --report-format, or use "
            "--strategy sample."
        )
    priv = _make_privatizer(
        categorical, numeric, kinds, noise, strategy, args.packed, marginal_size, report_format
    )
    heavy_mechs = _heavy_mechanisms(heavy, noise)
    typed = {c: categorical[c]["categories"] for c, k in kinds.items() if k[0]}
    secrets = _user_secrets(args, columns)
    imputer, clipped = _columns.Imputer(noise), {}
    # Reports and spec are written as part files and published together.
    with OutputFiles(
        {"reports file": args.output, "spec file": spec_path}, args.overwrite
    ) as files:
        writer = None
        read = list(columns) + ([args.user_id] if secrets is not None else [])
        chunks = read_chunks(args.input, read, args.chunksize, dtype=str)
        for call, chunk in enumerate(progress(chunks, not args.no_progress, "privatize")):
            if len(chunk) == 0:
                continue
            row_secrets = None
            if secrets is not None:  # matched by user id; never written
                row_secrets = secrets_of_rows(chunk[args.user_id], *secrets, args.user_secrets)
            table = _columns.prepare(chunk, kinds, categorical, imputer, call).assign(
                **_columns.numbers(chunk, numeric, imputer, call, clipped)
            )
            items = _columns.items(chunk, heavy, args.missing_label)
            if writer is None:
                _fit(priv, table, heavy_mechs, items)
                document = _spec_document(priv, heavy_mechs, files[spec_path], typed, columns)
                digest = canonical_digest(document)
                writer = TableWriter(
                    args.output, files[args.output], metadata={PARQUET_SPEC_KEY: digest}
                )
            reports = _transform(priv, table, heavy_mechs, items, row_secrets, columns)
            if report_format != "compact":  # the compact block has one fixed dtype
                reports = _columns.report_types(reports, _fitted(priv), kinds)
            writer.write(reports)
        if writer is None:
            raise ValueError(f"Input file {str(args.input)!r} has no rows.")
        document["reports"] = {
            "file": os.path.basename(os.fspath(args.output)),
            "format": writer.format,
            "n_rows": writer.n_rows,
            "columns": writer.columns,
            "sha256": file_digest(writer.finish()),
            "spec_sha256": digest,
        }
        with open(files[spec_path], "w", encoding="utf-8") as fh:
            json.dump(document, fh, indent=2)
    _report_clipping(clipped, numeric)
    _report_imputed(imputer.counts, columns)
    summary, lines = budget_lines(priv, heavy_mechs)
    print(
        f"privatized {plural(writer.n_rows, 'row')} x {plural(len(columns), 'column')} "
        f"-> {args.output}; spec -> {spec_path} ({summary})"
    )
    for line in lines:
        print(line)
    return 0


def _fitted(priv):
    return {} if priv is None else priv.mechanisms_


def _fit(priv, table, heavy_mechs, items):
    """Fit every mechanism on the first chunk (nothing is learned but checks)."""
    from ..exceptions import ClippingWarning

    with _ignoring(ClippingWarning):  # counted by the command, said once
        try:
            if priv is not None:
                priv.fit(table)
            for c, mech in heavy_mechs.items():
                mech.fit(items[c].to_frame())
        except TypeError as exc:  # a wrong parameter type in a config
            raise ValueError(str(exc)) from None


def _transform(priv, table, heavy_mechs, items, row_secrets, columns):
    """The reports of one chunk, the columns in the order of the config."""
    from ..exceptions import ClippingWarning

    parts, last = {}, []
    with _ignoring(ClippingWarning):
        if priv is not None:
            params = {} if row_secrets is None else {"user_secrets": row_secrets}
            reports = priv.transform(table, **params)
            if priv.strategy == "marginals" or priv.report_format == "compact":
                # one marginal, or one report block, per person: its own columns
                reports.attrs = {}
                return reports
            for c in priv.mechanisms_:
                parts[c] = reports[priv.report_columns(c)]
            if priv.sampled_column in reports.columns:  # strategy="sample": who sent what
                last.append(reports[[priv.sampled_column]])
    for c, mech in heavy_mechs.items():
        params = {"user_secrets": row_secrets} if columns[c]["entry"].memoized else {}
        frame = mech.transform(items[c].to_frame(), **params)
        frame.attrs = {}
        frame.index = items[c].index
        parts[c] = frame
    frame = pd.concat([parts[c] for c in columns] + last, axis=1)
    frame.attrs = {}
    return frame


@contextlib.contextmanager
def _ignoring(category):
    """Silence one warning category (one the command counts and says itself)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category)
        yield


def _report_clipping(clipped, numeric):
    for c, (below, above) in clipped.items():
        if below or above:
            low, high = numeric[c]["params"]["bounds"]
            warn(
                "privatize",
                f"{plural(below + above, 'value')} of column {c!r} lie outside its "
                f"bounds [{low:g}, {high:g}] and were clipped to them ({below} below, "
                f"{above} above). Widen the bounds if they are valid data: the bounds "
                "are public and fixed before collection, never learned from it.",
            )


def _report_imputed(counts, columns):
    for c, n in counts.items():
        where = (
            "the column's public bounds"
            if columns[c]["entry"].family == NUMERIC
            else "the column's categories"
        )
        warn(
            "privatize",
            f"column {c!r}: {plural(n, 'missing value')} imputed (--missing impute), "
            f"each drawn uniformly from {where} and privatized like any value. The "
            "collector's estimate is then a mixture of the true distribution and the "
            "uniform one in the share of missing values (the spec records the policy, "
            "not the count).",
        )


def budget_lines(priv, heavy_mechs):
    """What each person spends, per round and over rounds (the summary's end).

    Parameters
    ----------
    priv : DataFramePrivatizer or None
        Fitted (the categorical and numeric columns).
    heavy_mechs : dict of {str: fitted open-domain mechanism}

    Returns
    -------
    summary : str
        The end of the summary's line, e.g. ``"each person spends epsilon =
        1.5 in total"``.
    lines : list of str
        With memoized columns, their budgets over rounds: each one's, and
        the bound of all rounds (or which columns spend afresh each round).
    """
    per_round = 0.0 if priv is None else float(priv.epsilon_spent_)
    per_round += sum(float(m.epsilon_spent_) for m in heavy_mechs.values())
    memo = _memoized_budgets(priv, heavy_mechs)
    if not memo:
        return f"each person spends epsilon = {per_round:g} in total", []
    lines = [f"  {c}: {text}" for c, text in memo.items() if text is not None]
    fresh = [c for c, text in memo.items() if text is None]
    total = 0.0 if priv is None else float(priv.epsilon_perm_spent_)
    total += sum(_permanent(m) for m in heavy_mechs.values())
    rounds = 10
    exposure = (0.0 if priv is None else float(priv.exposure(rounds))) + sum(
        float(m.exposure(rounds)) if hasattr(m, "exposure") else rounds * m.epsilon_spent_
        for m in heavy_mechs.values()
    )
    if np.isfinite(total):
        lines.append(
            f"over rounds of the same values each person spends at most epsilon = "
            f"{total:g} in all (after {rounds} rounds: {exposure:g}); a value that "
            "changes spends its column's permanent budget again"
        )
    else:
        lines.append(
            f"columns {fresh} report afresh in every round, so their budgets add up "
            f"round after round (after {rounds} rounds each person has spent "
            f"{exposure:g}); the memoized columns' stay bounded, as above"
        )
    return f"each person spends epsilon = {per_round:g} per round", lines


def _permanent(mech):
    return float(getattr(mech, "epsilon_permanent_", np.inf))


def _memoized_budgets(priv, heavy_mechs):
    """{column: its budgets over rounds as text (None: fresh every round)}, or {}."""
    from ..mechanisms._memo import is_memoized

    mechanisms = {**_fitted(priv), **heavy_mechs}
    texts = {}
    for c, mech in mechanisms.items():
        if is_memoized(mech):  # the memoization protocol's two budgets
            name = mech.channel_.name
            texts[c] = (
                f"{name}, epsilon_1 = {mech.epsilon_:g} per report, at most "
                f"epsilon_perm = {mech.epsilon_permanent_:g} over all rounds of a value"
            )
        else:
            texts[c] = None
    if all(t is None for t in texts.values()):
        return {}
    return texts


def _user_secrets(args, columns):
    """The users' secrets (ids, secrets) of --user-secrets, checked; or None."""
    memoized = sorted(c for c, conf in columns.items() if conf["entry"].memoized)
    if (args.user_secrets is None) != (args.user_id is None):
        raise ValueError(
            "--user-secrets FILE and --user-id COLUMN go together: the secret of each "
            "row is the one FILE lists for the row's user id."
        )
    if args.user_secrets is None:
        if memoized:
            # Also with a seed: its simulated users are the rows of one call,
            # so the rows of every chunk would be the same users.
            raise ValueError(
                f"Columns {memoized} use memoized mechanisms, which need one secret "
                "per user, kept for every round: pass --user-secrets FILE --user-id "
                "COLUMN (make FILE once with 'sklearn-uldp secrets INPUT --user-id "
                "COLUMN -o FILE')."
            )
        return None
    if not memoized:
        from ._names import mechanism_table

        kinds = ", ".join(n for n, e in mechanism_table().items() if e.memoized)
        raise ValueError(
            f"--user-secrets is for memoized mechanisms ({kinds}), and no column uses "
            "one: drop --user-secrets, or configure such a mechanism."
        )
    if args.user_id in columns:
        raise ValueError(
            f"--user-id {args.user_id!r} is a privatized column; the user id only "
            "matches rows to secrets and is never privatized nor written."
        )
    return load_user_secrets(args.user_secrets, args.user_id, args.chunksize)


def _spec_document(priv, heavy_mechs, path, typed, columns):
    """The spec of every column, integer columns as integers (without "reports").

    ``estimate`` recomputes its digest (:func:`canonical_digest`) and
    compares it with the one recorded with the reports: an edited spec
    (another epsilon, other categories) is refused, not used. Columns whose
    missing values are imputed are listed under ``"missing"`` (the policy,
    decided before collection; never a count).
    """
    if priv is not None:
        priv.save_spec(path)
        with open(path, encoding="utf-8") as fh:
            document = json.load(fh)
        if document.get("strategy", {}).get("name") == "marginals":
            # One composite channel (its domains typed as the columns are),
            # not one entry per column.
            imputed = {c: "impute" for c, conf in columns.items() if conf["missing"] == "impute"}
            if imputed:
                document["missing"] = imputed
            return document
    else:
        from ..compose._dataframe import SPEC_FORMAT

        document = {
            "format": SPEC_FORMAT,
            "version": 1,
            "epsilon_per_person": 0.0,
            "columns": {},
            "report_columns": {},
        }
    for c, mech in heavy_mechs.items():
        document["columns"][c] = mech.spec()
        document["report_columns"][c] = [str(n) for n in mech.get_feature_names_out([c])]
        document["epsilon_per_person"] += float(mech.epsilon_spent_)
    order = list(columns)
    document["columns"] = {c: document["columns"][c] for c in order}
    document["report_columns"] = {c: document["report_columns"][c] for c in order}
    # Integer columns: integers in the spec (and the label, if any), in the
    # order the mechanism used.
    for c, categories in typed.items():
        entry = document["columns"][c]
        if [str(v) for v in entry["categories"]] == [str(v) for v in categories]:
            entry["categories"] = categories
    imputed = {c: "impute" for c, conf in columns.items() if conf["missing"] == "impute"}
    if imputed:
        document["missing"] = imputed
    return document


# ----------------------------------------------------------------- register
def register(subparsers):
    """Add the ``privatize`` subcommand (:func:`~sklearn_uldp.cli._common.add_command`)."""
    p = add_command(
        subparsers,
        "privatize",
        _cmd_privatize,
        description=(
            "Privatize columns of a CSV or Parquet table, one mechanism per column, "
            "with independent randomness per column and per chunk. Writes the "
            "reports (CSV or Parquet) and the public spec (JSON) a collector needs "
            "for 'sklearn-uldp estimate'. Each person spends the sum of the "
            "columns' epsilons (sequential composition); memoized columns bound "
            "what repeated rounds spend (the summary says how much). Mechanisms, "
            "by the names of their specs: categorical rr, urr, rappor, urap, olh, "
            "blh, ss, uss, cms, hcms, hr, hlhr, ubd, binary_optimal; memoized "
            "(several rounds, with --user-secrets) lgrr, lue, loloha, dbitflip, "
            "ulrr, ulrap; numeric (with --bounds) duchi, piecewise, hybrid, "
            "square_wave, uobm; open-domain text (heavy hitters) pem, treehist, "
            "bloom_rappor, uldp_heavy_hitters. The earlier names oue, uoue and "
            "uhr are accepted (rappor and urap with theta 0.5, hlhr). A bit-vector "
            "mechanism writes one report column per category (one column of bytes "
            "with --packed), cms one hash-index column then one per bucket; the "
            "others one column (two for uldp_heavy_hitters, one per Bloom bit plus "
            "the cohort for bloom_rappor). An existing file is replaced only with "
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
        help="where to write the spec (default: OUTPUT.spec.json, e.g. r.csv.spec.json)",
    )
    p.add_argument(
        "--config",
        metavar="JSON",
        help='JSON config {"columns": {COL: {"mechanism": NAME, PARAMETER: VALUE, ..., '
        '"missing": POLICY}}, "random_state": ..., "missing": ..., "strategy": ...} '
        "instead of --columns and the options below; a column takes its "
        "mechanism's parameters (the budget epsilon, or epsilon_perm and epsilon_1, "
        '..., "categories", "sensitive", "bounds" for a numeric column, "top_k" '
        'or "max_bytes" for heavy hitters, ...)',
    )
    p.add_argument("--columns", nargs="+", metavar="COL", help="columns to privatize")
    p.add_argument(
        "--mechanism",
        choices=NameChoices(),
        default="urr",
        metavar="NAME",
        help="mechanism of every column given with --columns (a spec name, see above)",
    )
    p.add_argument(
        "--epsilon",
        type=positive_float,
        metavar="EPS",
        help="budget of each column's report",
    )
    p.add_argument(
        "--param",
        action="append",
        metavar="NAME=VALUE",
        help="another parameter of the mechanism, for every column (repeat per "
        "parameter; VALUE is JSON or text), e.g. --param top_k=50, --param "
        "epsilon_perm=2 --param epsilon_1=1",
    )
    p.add_argument(
        "--theta",
        type=theta_arg,
        default=None,
        help="theta of rappor/urap, or 'optimal' for urap (default: basic RAPPOR's)",
    )
    p.add_argument(
        "--n-buckets",
        type=positive_int,
        default=None,
        metavar="M",
        help="buckets of the cms/hcms sketch (a power of two for hcms; default: "
        "the mechanism's, 256 for cms and 1024 for hcms)",
    )
    p.add_argument(
        "--n-hashes",
        type=positive_int,
        default=None,
        metavar="H",
        help="hash functions of the cms/hcms sketch (default: 256)",
    )
    p.add_argument(
        "--categories",
        action="append",
        metavar="COL=v1,v2",
        help="public domain of a column (repeat per column); LOW..HIGH is an "
        "inclusive integer range, e.g. hospvis=0..51. A column whose categories "
        "are all integers stays integer (spec and reports too). Learned from the "
        "data with a warning when absent (integers in numeric order)",
    )
    p.add_argument(
        "--sensitive",
        action="append",
        metavar="COL=v1,v2",
        help="sensitive values of a column (repeat per column; ranges LOW..HIGH too)",
    )
    p.add_argument(
        "--bounds",
        action="append",
        metavar="COL=LOW,HIGH",
        help="public range of a numeric column (repeat per column), e.g. age=0,120",
    )
    add_missing_options(p, per_column=True)
    p.add_argument(
        "--packed",
        action="store_true",
        help="write the reports of bit-vector mechanisms (rappor, urap, ss, uss, "
        "ubd) packed: one binary column per input column, ceil(k / 8) bytes a "
        "report, bit j of a report in bit j %% 8 of its byte j // 8 (Parquet only; "
        "'estimate' reads them as they are)",
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
    p.add_argument(
        "--user-secrets",
        metavar="FILE",
        help="the users' secrets of memoized mechanisms: a table with the "
        "--user-id column and a 'secret' column (hex), made once with "
        "'sklearn-uldp secrets' and reused in every round; read, never written",
    )
    p.add_argument(
        "--user-id",
        metavar="COL",
        help="input column of user ids that finds each row's secret in --user-secrets "
        "(neither privatized nor written)",
    )
    p.add_argument(
        "--strategy",
        choices=("split", "sample", "sample+fake", "marginals"),
        default=None,
        help="how a person reports the columns: split (every column; the "
        "budgets add up), sample (one column drawn at random per person, the "
        "others left empty, column 'sampled_attribute' naming it) or "
        "sample+fake (one column at an amplified budget among fake reports; "
        "each column's epsilon is then its attribute's budget) or marginals "
        "(one set of --marginal-size columns drawn at random per person, its joint "
        "value reported through the oracle of least variance for that product "
        "domain; every column needs the same epsilon, which is what a person "
        "spends; reports are two integer columns, marginal and report; "
        "'estimate --marginal A,B' reads any pair) (default: split, "
        'or "strategy" in the config)',
    )
    p.add_argument(
        "--report-format",
        choices=("wide", "compact"),
        default="wide",
        help="with --strategy sample: wide (every column's report columns, "
        "empty but for the sampled column's; the default) or compact (the "
        "column 'sampled_attribute' and one block report_0, report_1, ... "
        "holding each person's report in its column's codes, as wide as the "
        "widest column's report: the file's size does not grow with the "
        "number of columns); 'estimate' reads either with the spec",
    )
    p.add_argument(
        "--range-queries",
        metavar="A,B",
        help="privatize these numeric columns for range queries instead (HDG or "
        "TDG: each person reports one cell of one grid, spending --epsilon); each "
        "needs --bounds COL=LOW,HIGH; 'estimate --range' answers boxes",
    )
    p.add_argument(
        "--range-method",
        choices=("hdg", "tdg"),
        default=None,
        help="with --range-queries: hdg (1-D and 2-D grids, the default) or tdg (2-D grids only)",
    )
    p.add_argument(
        "--granularity",
        metavar="{auto,smooth,G,G1,G2}",
        default=None,
        help="with --range-queries: bins per column of the grids; auto (default) "
        "chooses them for the number of rows and epsilon; smooth: HDG's rule for "
        "columns of smooth densities (unimodal, continuous; coarser grids where rows "
        "x epsilon is large; with tdg the same as auto)",
    )
    p.add_argument(
        "--marginal-size",
        type=positive_int,
        default=None,
        metavar="K",
        help="with --strategy marginals: the number of columns of each marginal "
        "(default 2: every pair of columns is measured)",
    )
    add_common_options(p)
    return p


def _strategy(args):
    """--strategy, else the config's "strategy", else "split"."""
    if args.strategy is not None:
        return args.strategy
    if args.config:
        value = load_json(args.config, "Config").get("strategy", "split")
        if value not in ("split", "sample", "sample+fake", "marginals"):
            raise ValueError(
                'Config \'strategy\' must be "split", "sample", "sample+fake" or '
                f'"marginals"; got {value!r}.'
            )
        return value
    return "split"
