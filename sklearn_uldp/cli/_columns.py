"""The columns of ``privatize`` as its mechanisms take them.

Tables are read as text (see :mod:`sklearn_uldp.cli._values`); this module
gives each categorical column its domain and kind, turns every chunk into
what the mechanisms take (categories, numbers, open-domain items), and
applies each column's missing-value policy (``--missing``): an error that
names the column and the rows, the missing label, or a value drawn
uniformly from the public domain or bounds. No message shows a value.
"""

import pandas as pd

from ._common import plural, rows_of, warn
from ._io import check_input_format, read_chunks
from ._names import CATEGORICAL, HEAVY_HITTERS, NUMERIC
from ._values import learned_domain, to_domain_type, typed_domain, typed_like

__all__ = ["typed_columns", "prepare", "numbers", "items", "report_types", "Imputer"]


# --------------------------------------------------------------- the domain
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


def typed_columns(columns, args):
    """Give every categorical column its domain and kind (integer or text), in place.

    Returns {column: (integer, label, all_int)}: ``label`` replaces a missing
    value (None when the column takes no missing value), ``all_int`` says
    whether every category is an integer.

    With ``--missing category`` the missing label belongs to the domain of a
    column whose categories list it (decided in advance), and otherwise of a
    column that has missing values in the data. Reading that from the data
    reveals, in the spec, whether each column has missing values: one bit
    per column, which is warned about like a learned domain.
    """
    label = args.missing_label

    def labelled(c):
        return columns[c]["missing"] == "category"

    unknown = [c for c, conf in columns.items() if conf["categories"] is None]
    declared_label = {
        c
        for c, conf in columns.items()
        if labelled(c)
        and conf["categories"] is not None
        and str(label) in {str(v) for v in conf["categories"]}
    }
    scanned = [c for c in columns if c in unknown or (labelled(c) and c not in declared_label)]
    seen = _scan(args.input, scanned, args.chunksize) if scanned else {}
    markers = _csv_missing_markers(args.input)
    if unknown:
        warn(
            "privatize",
            f"learned the categories of {sorted(unknown)} from the data, which reveals "
            "which values occur"
            + (" and whether values are missing" if any(map(labelled, unknown)) else "")
            + ". Give the public domain with --categories COLUMN=v1,v2 (or "
            "COLUMN=0..51 for integers) or in the config.",
        )
        spaced = {c: sum(v.strip() != v for v in seen[c][0]) for c in unknown if seen[c][0]}
        spaced = {c: n for c, n in spaced.items() if n}
        if spaced:
            warn(
                "privatize",
                "values with leading or trailing spaces (or only spaces) are "
                "categories of their own: "
                + ", ".join(f"{plural(n, 'such value')} in {c!r}" for c, n in spaced.items())
                + ". If they mean a missing value or another category, clean the file first.",
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
        has_label = labelled(c) and (c in declared_label or seen.get(c, ((), False))[1])
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


# --------------------------------------------------------------- the chunks
def _missing_error(c, absent, index, family):
    fixes = {
        CATEGORICAL: "--missing category to report them as the category '(missing)' "
        "(--missing-label sets another), or --missing impute to draw a category "
        "uniformly from the domain",
        NUMERIC: f"--missing {c}=impute to draw a value uniformly from the column's public bounds",
        HEAVY_HITTERS: "--missing category to report them as the item '(missing)' "
        "(--missing-label sets another)",
    }
    return ValueError(
        f"Column {c!r} has {plural(int(absent.sum()), 'missing value')} "
        f"({rows_of(index, absent)}: empty fields or blank lines). Impute or drop them "
        f"in the file, or pass {fixes[family]}."
    )


class Imputer:
    """Draws the values of missing entries (``--missing impute``) and counts them.

    A drawn value is privatized like any other, so the report of a missing
    value is one of the mechanism's reports of some value: the guarantee
    holds for it as for every row. The draws use the noise's source (the
    secure generator by default; with a seed, one stream per column and
    chunk).
    """

    def __init__(self, noise):
        self.noise = noise
        self.counts = {}

    def _rng(self, column, call):
        from ..utils._random import transform_generator

        return transform_generator(self.noise, column=f"missing values of {column}", call=call)

    def categories(self, column, call, n, domain):
        self.counts[column] = self.counts.get(column, 0) + n
        picks = self._rng(column, call).integers(0, len(domain), size=n)
        return [domain[i] for i in picks]

    def numbers(self, column, call, n, bounds):
        self.counts[column] = self.counts.get(column, 0) + n
        return self._rng(column, call).uniform(bounds[0], bounds[1], size=n)


def prepare(chunk, kinds, columns, imputer, call):
    """Values read as text -> each column's kind, missing values labelled or imputed.

    Missing values without a policy and values outside the domain are errors
    that name the rows and the option to change (never the values).
    """
    out = {}
    for c, (integer, label, all_int) in kinds.items():
        raw = chunk[c]
        absent = raw.isna()
        policy = columns[c]["missing"]
        if absent.any() and (policy == "error" or (policy == "category" and label is None)):
            raise _missing_error(c, absent.to_numpy(), chunk.index, CATEGORICAL)
        values = to_domain_type(raw, integer, label)
        categories = columns[c]["categories"]
        if policy == "impute" and absent.any():
            values = values.astype(object)
            values.loc[absent] = imputer.categories(c, call, int(absent.sum()), categories)
        if integer and not all_int:  # integers and a text label, as text
            values = values.astype(str).where(values.notna(), None)
        allowed = {str(v) for v in categories}
        bad = ~values.astype(str).isin(allowed)
        if bad.any():
            spaces = int(raw[bad].map(lambda v: isinstance(v, str) and v.strip() != v).sum())
            raise ValueError(
                f"Column {c!r} holds {plural(int(bad.sum()), 'value')} of unknown "
                f"categories, outside its {len(categories)} ({rows_of(chunk.index, bad)})"
                + (
                    f"; {plural(spaces, 'of them has', 'of them have')} leading or "
                    "trailing spaces (values are compared exactly)"
                    if spaces
                    else ""
                )
                + f". Add the values to the domain (--categories {c}=... or the config), "
                "or clean the file. (Messages never show the values themselves.)"
            )
        out[c] = values
    return pd.DataFrame(out, index=chunk.index)


def numbers(chunk, numeric, imputer, call, clipped):
    """Numeric columns (read as text) as floats: missing values imputed or refused.

    ``clipped`` counts, per column, the values below and above the bounds
    (the mechanism clips them; the command says so once, at the end).
    """
    out = {}
    for c, conf in numeric.items():
        values = pd.to_numeric(chunk[c], errors="coerce")
        absent = chunk[c].isna()
        bad = values.isna() & ~absent
        if bad.any():
            raise ValueError(
                f"Numeric column {c!r} holds {plural(int(bad.sum()), 'value')} that "
                f"{'is' if int(bad.sum()) == 1 else 'are'} not numbers "
                f"({rows_of(chunk.index, bad)}): clean the column, or privatize it as a "
                "categorical column."
            )
        values = values.astype(float).to_numpy(copy=True)
        if absent.any():
            if conf["missing"] != "impute":
                raise _missing_error(c, absent.to_numpy(), chunk.index, NUMERIC)
            values[absent.to_numpy()] = imputer.numbers(
                c, call, int(absent.sum()), conf["params"]["bounds"]
            )
        low, high = conf["params"]["bounds"]
        below, above = clipped.get(c, (0, 0))
        clipped[c] = (below + int((values < low).sum()), above + int((values > high).sum()))
        out[c] = values
    return out


def items(chunk, heavy, label):
    """Open-domain columns: text items, missing values labelled or refused."""
    out = {}
    for c, conf in heavy.items():
        items = chunk[c]
        absent = items.isna()
        if absent.any():
            if conf["missing"] != "category":
                raise _missing_error(c, absent.to_numpy(), chunk.index, HEAVY_HITTERS)
            items = items.where(~absent, str(label))
        out[c] = items.astype(object).rename(c)
    return out


def report_types(reports, mechanisms, kinds):
    """One type per report column in every chunk (Parquet needs one schema).

    A category report of an integer column is int64; with a text label among
    the integers, the reports are text.
    """
    for c, (integer, _, all_int) in kinds.items():
        if not integer or c not in reports.columns:
            continue
        if not getattr(mechanisms[c].channel_, "reports_are_categories", False):
            continue
        if all_int:
            # nullable under strategy="sample" (missing: another column sampled)
            reports[c] = reports[c].astype("Int64" if reports[c].isna().any() else "int64")
    return reports
