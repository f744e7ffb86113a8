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
                 "region": {"mechanism": "rr", "epsilon": 0.5},
                 "age": {"mechanism": "hybrid", "epsilon": 1.0, "bounds": [0, 120]}}}

A numeric column (``duchi``, ``piecewise``, ``hybrid``, ``square_wave`` or
``uobm``, see :mod:`sklearn_uldp.numeric`) takes its public range
``"bounds"`` (values outside are clipped, with a warning); ``uobm`` also its
sensitive ranges (``"sensitive": [[100000, 1e12]]``) and ``"disclosure"``.

A memoized (longitudinal) column (``lgrr``, ``lue``, ``loloha``, ``ulrr``,
``ulrap`` with ``"epsilon_perm"`` and ``"epsilon_1"``; ``dbitflip`` with
``"epsilon"``) needs the users' secrets: ``--user-secrets FILE --user-id
COLUMN`` (see :mod:`sklearn_uldp.cli._secrets`); they are matched to rows by
user id and never written.

A category value ``"LOW..HIGH"`` is an inclusive integer range, on the
command line (``--categories hospvis=0..51``) and in the config
(``"categories": ["0..51"]`` or ``"categories": "0..51"``). A column whose
categories are all integers is an integer column: its values, spec and
reports are integers (see :mod:`sklearn_uldp.cli._values`); other columns
are text. The noise comes from a cryptographically secure generator by
default (``--random-state secure``).
"""

import json
import numbers
import os

import numpy as np
import pandas as pd

from ._common import (
    MECHANISMS,
    add_command,
    add_common_options,
    add_missing_options,
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
    check_input_format,
    check_outputs,
    check_table_output,
    default_spec_path,
    file_digest,
    read_chunks,
)
from ._secrets import load_user_secrets, secrets_of_rows
from ._values import (
    expand_values,
    learned_domain,
    to_domain_type,
    typed_domain,
    typed_like,
)

__all__ = ["register"]

_CONFIG_KEYS = {"columns", "random_state", "missing", "strategy"}
_COLUMN_KEYS = {"mechanism", "epsilon", "categories", "sensitive", "theta", "n_buckets", "n_hashes"}
#: Numeric mechanisms of a config column: {"mechanism": "hybrid", "epsilon": 1,
#: "bounds": [0, 100]}; "uobm" also takes "sensitive": [[low, high], ...] and
#: "disclosure" (see sklearn_uldp.numeric).
_NUMERIC_KEYS = {"mechanism", "epsilon", "bounds", "sensitive", "disclosure"}


def _numeric_mechanisms():
    from ..numeric import (
        DuchiMechanism,
        HybridMechanism,
        PiecewiseMechanism,
        SquareWave,
        UtilityOptimizedOneBitMechanism,
    )

    return {
        "duchi": DuchiMechanism,
        "piecewise": PiecewiseMechanism,
        "hybrid": HybridMechanism,
        "square_wave": SquareWave,
        "uobm": UtilityOptimizedOneBitMechanism,
    }


#: Memoized (longitudinal) mechanisms of a config column, with their keys:
#: {"mechanism": "lgrr", "epsilon_perm": 2, "epsilon_1": 1, "categories": [...]}.
#: They need the users' secrets (--user-secrets FILE --user-id COLUMN).
_LONGITUDINAL = {
    "lgrr": ("LongitudinalGRR", {"epsilon_perm", "epsilon_1"}),
    "lue": ("LongitudinalUE", {"epsilon_perm", "epsilon_1", "permanent", "instantaneous"}),
    "loloha": ("LongitudinalLocalHashing", {"epsilon_perm", "epsilon_1", "hash_range"}),
    "dbitflip": ("DBitFlipPM", {"epsilon", "d", "n_buckets"}),
    "ulrr": ("UtilityOptimizedLongitudinalRR", {"epsilon_perm", "epsilon_1"}),
    "ulrap": (
        "UtilityOptimizedLongitudinalRAPPOR",
        {"epsilon_perm", "epsilon_1", "permanent", "instantaneous"},
    ),
}
#: Memoized mechanisms whose reports are category labels (typed like rr's).
_LABEL_REPORTS = ("rr", "urr", "lgrr", "ulrr")


def _longitudinal_column(column, conf):
    """A memoized column's config, checked (its domain is typed like any other)."""
    name = conf["mechanism"].lower()
    cls, keys = _LONGITUDINAL[name]
    utility = name in ("ulrr", "ulrap")
    allowed = {"mechanism", "categories", *keys} | ({"sensitive"} if utility else set())
    unknown = set(conf) - allowed
    if unknown:
        raise ValueError(
            f"Unknown keys {sorted(unknown)} in the config of {column!r} ({name}: "
            f"{cls}); its keys are {sorted(allowed)}."
        )
    budgets = ["epsilon"] if name == "dbitflip" else ["epsilon_perm", "epsilon_1"]
    absent = [b for b in budgets if b not in conf]
    if absent:
        raise ValueError(
            f"Config of column {column!r} ({name}) needs {absent}"
            + (
                ": epsilon_perm bounds every round of a value, epsilon_1 one report, "
                'e.g. "epsilon_perm": 2, "epsilon_1": 1.'
                if name != "dbitflip"
                else "."
            )
        )
    if utility and not conf.get("sensitive"):
        raise ValueError(f"Mechanism {name!r} of column {column!r} needs 'sensitive' values.")
    return {
        "mechanism": name,
        "categories": _value_list(conf.get("categories"), "categories", column),
        "sensitive": _value_list(conf.get("sensitive"), "sensitive", column),
        "longitudinal": {k: conf[k] for k in keys if k in conf},
    }


def _longitudinal_mechanism(name, kwargs, categories, sensitive, random_state):
    from .. import longitudinal

    cls = getattr(longitudinal, _LONGITUDINAL[name][0])
    extra = {"sensitive": sensitive} if name in ("ulrr", "ulrap") else {}
    if random_state is not None:
        extra["random_state"] = random_state
    return cls(**kwargs, categories=categories, **extra)


def _numeric_column(column, conf):
    """A numeric column's config, checked: the mechanism's keyword arguments."""
    unknown = set(conf) - _NUMERIC_KEYS
    if unknown:
        raise ValueError(
            f"Unknown keys {sorted(unknown)} in the config of numeric column {column!r}; "
            f"the keys are {sorted(_NUMERIC_KEYS)}."
        )
    if "bounds" not in conf:
        raise ValueError(
            f"Config of numeric column {column!r} needs 'bounds': [low, high], the public "
            "range of its values (values outside are clipped)."
        )
    kwargs = {"epsilon": conf["epsilon"], "bounds": conf["bounds"]}
    extra = {k: conf[k] for k in ("sensitive", "disclosure") if k in conf}
    if extra and conf["mechanism"].lower() != "uobm":
        raise ValueError(
            f"Config of column {column!r}: {sorted(extra)} apply to the 'uobm' mechanism "
            f"only, not {conf['mechanism']!r}."
        )
    return {"mechanism": conf["mechanism"].lower(), "numeric": {**kwargs, **extra}}


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
    columns = {}
    for column, conf in config["columns"].items():
        if (
            isinstance(conf, dict)
            and isinstance(conf.get("mechanism"), str)
            and conf["mechanism"].lower() in _LONGITUDINAL
        ):
            columns[column] = _longitudinal_column(column, conf)
            continue
        if not isinstance(conf, dict) or "mechanism" not in conf or "epsilon" not in conf:
            raise ValueError(
                f"Config of column {column!r} must be an object with 'mechanism' "
                f"and 'epsilon'; got {conf!r}."
            )
        if isinstance(conf["mechanism"], str) and conf["mechanism"].lower() in (
            _numeric_mechanisms()
        ):
            columns[column] = _numeric_column(column, conf)
            continue
        unknown = set(conf) - _COLUMN_KEYS
        if unknown:
            raise ValueError(
                f"Unknown keys {sorted(unknown)} in the config of {column!r}; the "
                f"keys are {sorted(_COLUMN_KEYS)}."
            )
        theta = conf.get("theta")
        if (
            theta is not None
            and theta != "optimal"
            and (isinstance(theta, bool) or not isinstance(theta, numbers.Real))
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
            "n_buckets": conf.get("n_buckets"),
            "n_hashes": conf.get("n_hashes"),
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
        raise ValueError("Give the columns to privatize (--columns) or a --config file.")
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
            "n_buckets": args.n_buckets,
            "n_hashes": args.n_hashes,
        }
        for c in args.columns
    }
    noise = "secure" if args.random_state is None else _noise(args.random_state)
    return columns, noise, args.missing


def _scan(path, columns, chunksize):
    """One pass over the input: {column: (distinct values, has missing values)}."""
    values = {c: set() for c in columns}
    has_missing = dict.fromkeys(columns, False)
    for chunk in read_chunks(path, list(columns), chunksize, dtype=str):
        for c in columns:
            col = chunk[c]
            has_missing[c] |= bool(col.isna().any())
            values[c].update(col.dropna().unique().tolist())
    return {c: (values[c], has_missing[c]) for c in columns}


def _csv_missing_markers(path):
    """Texts a CSV input reads as missing values (none for Parquet)."""
    if check_input_format(path) != "csv":
        return frozenset()
    from pandas._libs.parsers import STR_NA_VALUES

    return frozenset(STR_NA_VALUES)


def _typed_columns(columns, args, missing):
    """Give every column its domain and kind (integer or text), in place.

    Returns {column: (integer, label, all_int)}: ``label`` replaces a missing
    value (None when the column takes no missing value), ``all_int`` says
    whether every category is an integer.

    With ``--missing category`` the missing label belongs to the domain of a
    column whose categories list it (decided in advance), and otherwise of a
    column that has missing values in the data. Reading that from the data
    reveals, in the spec, whether each column has missing values: one bit
    per column, which is warned about like a learned domain.
    """
    label = args.missing_label if missing == "category" else None
    unknown = [c for c, conf in columns.items() if conf["categories"] is None]
    declared_label = {
        c
        for c, conf in columns.items()
        if label is not None
        and conf["categories"] is not None
        and str(label) in {str(v) for v in conf["categories"]}
    }
    scanned = [
        c for c in columns if c in unknown or (label is not None and c not in declared_label)
    ]
    seen = _scan(args.input, scanned, args.chunksize) if scanned else {}
    markers = _csv_missing_markers(args.input)
    if unknown:
        warn(
            "privatize",
            f"learned the categories of {sorted(unknown)} from the data, which reveals "
            "which values occur"
            + (" and whether values are missing" if label is not None else "")
            + ". Give the public domain with --categories COLUMN=v1,v2 (or "
            "COLUMN=0..51 for integers) or in the config.",
        )
        spaced = {c: sorted(v for v in seen[c][0] if v.strip() != v) for c in unknown if seen[c][0]}
        spaced = {c: v for c, v in spaced.items() if v}
        if spaced:
            warn(
                "privatize",
                "values with leading or trailing spaces (or only spaces) are "
                f"categories of their own: {dict((c, v[:5]) for c, v in spaced.items())}. "
                "If they mean a missing value or another category, clean the file first.",
            )
    inferred = sorted(c for c in scanned if c not in unknown)
    if inferred:
        warn(
            "privatize",
            f"--missing category: whether {'column' if len(inferred) == 1 else 'columns'} "
            f"{inferred} {'has' if len(inferred) == 1 else 'have'} missing values "
            "was read from the data; the label "
            f"{label!r} is added only to the domain of those that do, and the "
            "spec shows it (one bit per column, like a learned domain). To fix "
            "the domains in advance, list the label in the categories of the "
            f"columns that may have missing values (--categories COLUMN=v1,v2,{label}, "
            "or in the config).",
        )
    kinds = {}
    for c, conf in columns.items():
        has_label = label is not None and (c in declared_label or seen.get(c, ((), False))[1])
        column_label = label if has_label else None
        if c in unknown:
            conf["categories"], integer = learned_domain(seen[c][0], column_label)
        else:
            text = [v for v in conf["categories"] if isinstance(v, str)]
            read_as_missing = sorted({v for v in text if v.strip() in markers} - {str(label)})
            if read_as_missing:
                raise ValueError(
                    f"Column {c!r}: the categories {read_as_missing} cannot be read "
                    f"from a CSV file, which reads {read_as_missing[0]!r} as a missing "
                    "value (as it does empty fields). Rename the category in the file "
                    "and in --categories, or give the table as Parquet."
                )
            conf["categories"], integer = typed_domain(conf["categories"], column_label)
        if conf["sensitive"] is not None:
            conf["sensitive"] = [typed_like(v, integer) for v in conf["sensitive"]]
        all_int = all(isinstance(v, int) for v in conf["categories"])
        label_value = None if column_label is None else typed_like(column_label, integer)
        kinds[c] = (integer, label_value, all_int)
    return kinds


def _rows(index, mask, limit=5):
    """``"rows 3, 7 and 9"``: data rows counted from 1 after the header."""
    rows = (np.asarray(index)[np.asarray(mask)] + 1)[:limit].tolist()
    more = int(np.asarray(mask).sum()) - len(rows)
    listed = ", ".join(map(str, rows))
    return f"row{'s' if len(rows) > 1 or more else ''} {listed}" + (
        f" and {more} more" if more else ""
    )


def _prepare(chunk, kinds, columns):
    """Values read as text -> each column's kind, missing values labelled.

    Missing values without a label and values outside the domain are errors
    that name the rows and the option to change.
    """
    out = {}
    for c, (integer, label, all_int) in kinds.items():
        raw = chunk[c]
        absent = raw.isna()
        if label is None and absent.any():
            raise ValueError(
                f"Column {c!r} has {plural(int(absent.sum()), 'missing value')} "
                f"({_rows(chunk.index, absent)}: empty fields or blank lines). "
                "Impute or drop them, or pass --missing category to report them "
                "as the category '(missing)' (--missing-label sets another)."
            )
        values = to_domain_type(raw, integer, label)
        if integer and not all_int:  # integers and a text label, as text
            values = values.astype(str).where(values.notna(), None)
        categories = columns[c]["categories"]
        allowed = {str(v) for v in categories}
        bad = ~values.astype(str).isin(allowed)
        if bad.any():
            shown = pd.unique(raw[bad].astype(object))[:5].tolist()
            spaces = any(isinstance(v, str) and v.strip() != v for v in shown)
            raise ValueError(
                f"Column {c!r} holds {plural(int(bad.sum()), 'value')} of unknown "
                f"categories (not among its {len(categories)} categories), e.g. "
                f"{shown} ({_rows(chunk.index, bad)})"
                + (" (values are compared exactly, spaces included)" if spaces else "")
                + f". Its categories: {categories[:10]}{' ...' if len(categories) > 10 else ''}."
                f" Add the values to the domain (--categories {c}=... or the config), "
                "or clean the file."
            )
        out[c] = values
    return pd.DataFrame(out, index=chunk.index)


def _numbers(chunk, numeric):
    """Numeric columns (read as text) as floats, with a clear error."""
    out = {}
    for c in numeric:
        values = pd.to_numeric(chunk[c], errors="coerce")
        bad = values.isna() & chunk[c].notna()
        if bad.any():
            raise ValueError(
                f"Numeric column {c!r} holds values that are not numbers, e.g. "
                f"{chunk[c][bad].unique()[:3].tolist()}: clean the column or privatize it "
                "as a categorical column."
            )
        out[c] = values.astype(float)
    return out


def _report_types(reports, columns, kinds):
    """One type per report column in every chunk (Parquet needs one schema).

    A category report of an integer column is int64; with a text label among
    the integers, the reports are text.
    """
    for c, (integer, _, all_int) in kinds.items():
        if not integer or c not in reports.columns:
            continue
        if columns[c]["mechanism"].lower() not in _LABEL_REPORTS:
            continue
        if all_int:
            # nullable under strategy="sample" (missing: another column sampled)
            reports[c] = reports[c].astype("Int64" if reports[c].isna().any() else "int64")
    return reports


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


#: The mechanisms whose reports --packed writes as bytes (bit vectors).
PACKED_MECHANISMS = ("rappor", "urap", "oue", "uoue", "ss", "uss")


def _make_privatizer(
    columns, numeric, kinds, noise, missing, missing_label, strategy, packed=False
):
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
        try:
            if "longitudinal" in conf:
                mechanisms[c] = _longitudinal_mechanism(
                    conf["mechanism"], conf["longitudinal"], categories, sensitive, mech_noise
                )
                continue
            mechanisms[c] = make_mechanism(
                conf["mechanism"],
                conf["epsilon"],
                categories,
                sensitive,
                conf["theta"],
                random_state=mech_noise,
                n_buckets=conf["n_buckets"],
                n_hashes=conf["n_hashes"],
            )
        except (TypeError, ValueError) as exc:
            raise ValueError(f"column {c!r}: {exc}") from None
        if packed and conf["mechanism"].lower() in PACKED_MECHANISMS:
            mechanisms[c].set_params(packed_output=True)
    for c, conf in numeric.items():  # numbers: a public range, no domain to type
        try:
            mechanisms[c] = _numeric_mechanisms()[conf["mechanism"]](
                **conf["numeric"], random_state=mech_noise
            )
        except (TypeError, ValueError) as exc:
            raise ValueError(f"column {c!r}: {exc}") from None
    # Missing values are labelled (or refused) by _prepare already.
    return DataFramePrivatizer(
        mechanisms,
        missing=missing,
        missing_label=missing_label,
        random_state=noise,
        strategy=strategy,
    )


def _cmd_privatize(args):
    columns, noise, missing = _privatize_config(args)
    if missing not in ("error", "category"):
        raise ValueError(f"missing must be 'error' or 'category', got {missing!r}.")
    # Every check on the files comes before any work, so nothing is written
    # (and nothing is lost) when one fails.
    spec_path = args.spec_out or default_spec_path(args.output)
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
    if args.packed and _strategy(args) != "split":
        raise ValueError(
            f"--packed works with --strategy split only (got {_strategy(args)!r}): "
            "drop --packed or --strategy."
        )
    _check_noise(noise)
    numeric = {c: conf for c, conf in columns.items() if "numeric" in conf}
    columns = {c: conf for c, conf in columns.items() if "numeric" not in conf}
    kinds = _typed_columns(columns, args, missing)
    priv = _make_privatizer(
        columns, numeric, kinds, noise, missing, args.missing_label, _strategy(args), args.packed
    )
    typed = {c: columns[c]["categories"] for c, k in kinds.items() if k[0]}
    secrets = _user_secrets(args, columns, numeric, noise)
    # Reports and spec are written as part files and published together.
    with OutputFiles(
        {"reports file": args.output, "spec file": spec_path}, args.overwrite
    ) as files:
        writer = None
        read = [*columns, *numeric] + ([args.user_id] if secrets is not None else [])
        chunks = read_chunks(args.input, read, args.chunksize, dtype=str)
        for chunk in progress(chunks, not args.no_progress, "privatize"):
            if len(chunk) == 0:
                continue
            params = {}
            if secrets is not None:  # matched by user id; never written
                params["user_secrets"] = secrets_of_rows(
                    chunk[args.user_id], *secrets, args.user_secrets
                )
            chunk = _prepare(chunk, kinds, columns).assign(**_numbers(chunk, numeric))
            if writer is None:
                try:
                    priv.fit(chunk)
                except TypeError as exc:  # a wrong parameter type in a config
                    raise ValueError(str(exc)) from None
                document = _spec_document(priv, files[spec_path], typed)
                digest = canonical_digest(document)
                writer = TableWriter(
                    args.output, files[args.output], metadata={PARQUET_SPEC_KEY: digest}
                )
            writer.write(_report_types(priv.transform(chunk, **params), columns, kinds))
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
    print(
        f"privatized {plural(writer.n_rows, 'row')} x "
        f"{plural(len(columns) + len(numeric), 'column')} -> {args.output}; "
        f"spec -> {spec_path} (each person spends epsilon = "
        f"{priv.epsilon_spent_:g} in total)"
    )
    return 0


def _user_secrets(args, columns, numeric, noise):
    """The users' secrets (ids, secrets) of --user-secrets, checked; or None."""
    memoized = sorted(c for c, conf in columns.items() if "longitudinal" in conf)
    if (args.user_secrets is None) != (args.user_id is None):
        raise ValueError(
            "--user-secrets FILE and --user-id COLUMN go together: the secret of each "
            "row is the one FILE lists for the row's user id."
        )
    if args.user_secrets is None:
        if memoized and not isinstance(noise, numbers.Integral):
            raise ValueError(
                f"Columns {memoized} use memoized (longitudinal) mechanisms, which "
                "need one secret per user, kept for every round: pass "
                "--user-secrets FILE --user-id COLUMN (make FILE once with "
                "'sklearn-uldp secrets INPUT --user-id COLUMN -o FILE')."
            )
        return None
    if not memoized:
        raise ValueError(
            "--user-secrets is for memoized (longitudinal) mechanisms (lgrr, lue, "
            "loloha, dbitflip, ulrr, ulrap in the config), and no column uses one: "
            "drop --user-secrets, or configure such a mechanism."
        )
    if args.user_id in columns or args.user_id in numeric:
        raise ValueError(
            f"--user-id {args.user_id!r} is a privatized column; the user id only "
            "matches rows to secrets and is never privatized nor written."
        )
    return load_user_secrets(args.user_secrets, args.user_id, args.chunksize)


def _spec_document(priv, path, typed):
    """The privatizer's spec, integer columns as integers (without "reports").

    ``estimate`` recomputes its digest (:func:`canonical_digest`) and
    compares it with the one recorded with the reports: an edited spec
    (another epsilon, other categories) is refused, not used.
    """
    priv.save_spec(path)
    with open(path, encoding="utf-8") as fh:
        document = json.load(fh)
    # Integer columns: integers in the spec (and the label, if any), in the
    # order the mechanism used.
    for c, categories in typed.items():
        entry = document["columns"][c]
        if [str(v) for v in entry["categories"]] == [str(v) for v in categories]:
            entry["categories"] = categories
    return document


# ----------------------------------------------------------------- register
def register(subparsers):
    """Add the ``privatize`` subcommand (:func:`~sklearn_uldp.cli._common.add_command`)."""
    p = add_command(
        subparsers,
        "privatize",
        _cmd_privatize,
        help="privatize columns of a CSV/Parquet table (client side)",
        description=(
            "Privatize columns of a CSV or Parquet table, one mechanism per column, "
            "with independent randomness per column and per chunk. Writes the "
            "reports (CSV or Parquet) and the public spec (JSON) a collector needs "
            "for 'sklearn-uldp estimate'. Each person spends the sum of the "
            "columns' epsilons (sequential composition). Mechanisms: rr, urr, "
            "rappor, urap, oue, uoue, olh, blh (local hashing), ss (subset "
            "selection), cms, hcms (count-mean sketches), uss, uhr "
            "(utility-optimized subset selection and Hadamard response). A "
            "bit-vector mechanism (rappor, urap, oue, uoue, ss, uss) writes one "
            "report column per category (one column of bytes with --packed), cms "
            "one hash-index column then one per bucket; the others one column. An "
            "existing file is replaced only with --overwrite, and an input file never."
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
        help='JSON config {"columns": {COL: {"mechanism", "epsilon", "categories", '
        '"sensitive", "theta", "n_buckets", "n_hashes"}}, "random_state": ..., '
        '"missing": ...} instead of --columns and the options below; a numeric '
        'column: {"mechanism": "hybrid" (or duchi, piecewise, square_wave, uobm), '
        '"epsilon", "bounds": [LOW, HIGH]}',
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
    add_missing_options(p)
    p.add_argument(
        "--packed",
        action="store_true",
        help="write the reports of bit-vector mechanisms (rappor, urap, oue, uoue, "
        "ss, uss) packed: one binary column per input column, ceil(k / 8) bytes a "
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
        help="the users' secrets of memoized (longitudinal) mechanisms: a table with "
        "the --user-id column and a 'secret' column (hex), made once with "
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
        choices=("split", "sample", "sample+fake"),
        default=None,
        help="how a person reports the columns: split (every column; the "
        "budgets add up), sample (one column drawn at random per person, the "
        "others left empty, column 'sampled_attribute' naming it) or "
        "sample+fake (one column at an amplified budget among fake reports; "
        "each column's epsilon is then its attribute's budget) (default: split, "
        'or "strategy" in the config)',
    )
    add_common_options(p)
    return p


def _strategy(args):
    """--strategy, else the config's "strategy", else "split"."""
    if args.strategy is not None:
        return args.strategy
    if args.config:
        value = load_json(args.config, "Config").get("strategy", "split")
        if value not in ("split", "sample", "sample+fake"):
            raise ValueError(
                f'Config \'strategy\' must be "split", "sample" or "sample+fake"; got {value!r}.'
            )
        return value
    return "split"
