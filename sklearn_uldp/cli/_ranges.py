"""Range queries on the command line: ``privatize --range-queries`` and ``estimate --range``.

``privatize --range-queries A,B --bounds A=LOW,HIGH --bounds B=LOW,HIGH
--epsilon EPS`` privatizes numeric columns for range queries (HDG or TDG,
:class:`~sklearn_uldp.marginals.RangeQueryPrivatizer`): each person reports
one cell of one grid, spending ``epsilon``. The granularity is chosen for the
number of rows of the input (a first pass counts them; the count of users is
public), or given with ``--granularity``. The spec holds the composite
channel (``"range_queries"``) and is bound to its reports like every spec
``privatize`` writes.

``estimate --range 'A=20:40,B=30:50'`` (repeatable) answers each box: the
fraction of people inside, with an interval that holds whatever the spread
within the grids' cells (:meth:`RangeQueryEstimator.confidence_interval
<sklearn_uldp.marginals.RangeQueryEstimator.confidence_interval>`). An empty
side (``A=:40``) leaves the range open.
"""

import json
import math
import os
import warnings

import numpy as np
import pandas as pd

from ._common import plural, progress, warn
from ._io import (
    CSV_QUOTING,
    PARQUET_SPEC_KEY,
    OutputFiles,
    TableWriter,
    canonical_digest,
    file_digest,
    integer_reports,
    read_chunks,
)
from ._names import spec_from_dict

__all__ = ["is_range_spec", "privatize_ranges", "estimate_ranges", "parse_range"]

#: The strategy's name in a spec file.
RANGE_QUERIES = "range_queries"


def is_range_spec(document):
    """Whether a spec file was written by ``privatize --range-queries``."""
    strategy = document.get("strategy") if isinstance(document, dict) else None
    return isinstance(strategy, dict) and strategy.get("name") == RANGE_QUERIES


# ---------------------------------------------------------------- privatize
def _range_columns(args, bounds):
    columns = [c.strip() for c in args.range_queries.split(",")]
    if not all(columns) or len(set(columns)) != len(columns):
        raise ValueError(
            f"--range-queries takes distinct column names separated by commas, got "
            f"{len(columns)} names with an empty or repeated one."
        )
    absent = [c for c in columns if c not in bounds]
    extra = sorted(set(bounds) - set(columns))
    if absent or extra:
        raise ValueError(
            f"Every column of --range-queries needs its public range --bounds "
            f"COL=LOW,HIGH (missing for {absent}), and only those ({extra} are not "
            "range-query columns)."
        )
    return columns


def _granularity(text):
    if text is None or text in ("auto", "smooth"):
        return text or "auto"
    parts = text.split(",")
    try:
        values = [int(p) for p in parts]
    except ValueError:
        values = None
    if values is None or len(values) not in (1, 2) or min(values) < 1:
        raise ValueError(
            "--granularity takes 'auto', 'smooth' (HDG's rule for columns of smooth "
            "densities), G (bins per column in every grid) or G1,G2 "
            "(bins of the 1-D grids, and per column of the 2-D grids)."
        )
    return values[0] if len(values) == 1 else tuple(values)


def _numbers(chunk, columns):
    out = {}
    for c in columns:
        values = pd.to_numeric(chunk[c], errors="coerce")
        bad = values.isna() | ~np.isfinite(values.to_numpy(dtype=float))
        if bad.any():
            raise ValueError(
                f"Column {c!r} has {plural(int(bad.sum()), 'value')} that are missing "
                "or not finite numbers: clean or impute them before privatizing."
            )
        out[c] = values.to_numpy(dtype=float)
    return pd.DataFrame(out, index=chunk.index)


def privatize_ranges(args, spec_path, noise, bounds):
    """``privatize --range-queries``: the reports and their spec, as part files.

    ``bounds`` is ``--bounds`` parsed by ``privatize`` ({column: [low, high]}).
    """
    from ..compose._dataframe import SPEC_FORMAT
    from ..exceptions import ClippingWarning
    from ..marginals import RangeQueryPrivatizer

    if args.config or args.columns or args.strategy is not None:
        raise ValueError(
            "--range-queries privatizes its own columns: drop --config, --columns and "
            "--strategy (privatize other columns in a run of their own)."
        )
    if args.epsilon is None:
        raise ValueError("--range-queries needs --epsilon (the budget of a person's report).")
    columns = _range_columns(args, bounds)
    granularity = _granularity(args.granularity)
    method = args.range_method or "hdg"
    n_users = sum(len(c) for c in read_chunks(args.input, columns, args.chunksize, dtype=str))
    if n_users == 0:
        raise ValueError(f"Input file {str(args.input)!r} has no rows.")
    priv = RangeQueryPrivatizer(
        args.epsilon,
        bounds={c: tuple(bounds[c]) for c in columns},
        method=method,
        granularity=granularity,
        random_state=noise,
        n_users=n_users,
    )
    clipped = dict.fromkeys(columns, 0)
    with OutputFiles(
        {"reports file": args.output, "spec file": spec_path}, args.overwrite
    ) as files:
        writer = document = digest = None
        chunks = read_chunks(args.input, columns, args.chunksize, dtype=str)
        for chunk in progress(chunks, not args.no_progress, "privatize"):
            if len(chunk) == 0:
                continue
            table = _numbers(chunk, columns)
            for c in columns:
                low, high = bounds[c]
                clipped[c] += int(((table[c] < low) | (table[c] > high)).sum())
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ClippingWarning)  # counted, said once
                if writer is None:
                    priv.fit()
                    document = {
                        "format": SPEC_FORMAT,
                        "version": 1,
                        "epsilon_per_person": float(priv.epsilon_spent_),
                        "strategy": {
                            "name": RANGE_QUERIES,
                            "method": method,
                            "granularity": list(priv.granularity_),
                            "grids": [list(g) for g in priv.grids_],
                        },
                        RANGE_QUERIES: priv.channel_.to_dict(),
                        "report_columns": [str(c) for c in priv.get_feature_names_out()],
                    }
                    digest = canonical_digest(document)
                    writer = TableWriter(
                        args.output, files[args.output], metadata={PARQUET_SPEC_KEY: digest}
                    )
                reports = priv.transform(table)
            reports.attrs = {}
            writer.write(reports)
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
    for c, count in clipped.items():
        if count:
            warn(
                "privatize",
                f"{plural(count, 'value')} of column {c!r} lie outside its bounds and "
                "were clipped to them.",
            )
    g1, g2 = priv.granularity_
    print(
        f"privatized {plural(writer.n_rows, 'row')} x {plural(len(columns), 'column')} "
        f"for range queries ({method.upper()}, granularity {g1}, {g2}; "
        f"{plural(len(priv.grids_), 'grid')}) -> {args.output}; spec -> {spec_path} "
        f"(each person spends epsilon = {priv.epsilon_spent_:g} in total)"
    )
    return 0


# ----------------------------------------------------------------- estimate
def parse_range(text, columns):
    """``'A=20:40,B=30:'`` -> ``{"A": (20.0, 40.0), "B": (30.0, None)}``.

    Examples
    --------
    >>> from sklearn_uldp.cli._ranges import parse_range
    >>> parse_range("age=20:40,hours=:50", ["age", "hours"])
    {'age': (20.0, 40.0), 'hours': (None, 50.0)}
    """
    query = {}
    for part in text.split(","):
        column, sep, rest = part.partition("=")
        column = column.strip()
        low, colon, high = rest.partition(":")
        try:
            ends = tuple(None if not v.strip() else float(v) for v in (low, high))
        except ValueError:
            ends = None
        if ends is not None and any(v is not None and math.isnan(v) for v in ends):
            ends = None  # "nan" parses as a float, but bounds nothing
        if not sep or not colon or ends is None or column in query:
            raise ValueError(
                "--range takes COL=LOW:HIGH[,COL=LOW:HIGH...] with numbers (an empty "
                "side is open), each column once, e.g. --range 'age=20:40,hours=30:50'."
            )
        if column not in columns:
            raise ValueError(
                f"--range names a column that is not a range-query column of the spec "
                f"(it has {list(columns)[:20]})."
            )
        query[column] = ends
    return query


def estimate_ranges(args, document, binding):
    """Answer the ``--range`` boxes from range-query reports; write the CSV."""
    from ..exceptions import UninformativeEstimateWarning
    from ..marginals import RangeQueryChannel, RangeQueryEstimator

    spec = document.get(RANGE_QUERIES)
    try:
        channel = spec_from_dict(spec) if isinstance(spec, dict) else None
    except (TypeError, KeyError, ValueError) as exc:
        raise ValueError(f"Invalid range-query spec: {exc}") from None
    if not isinstance(channel, RangeQueryChannel):
        raise ValueError(
            "The spec names the strategy 'range_queries' but holds no range-query "
            "channel: use the spec privatize wrote."
        )
    if args.columns or args.marginal or args.plot:
        raise ValueError(
            "Range-query reports answer boxes: use --range 'COL=LOW:HIGH,...' "
            "(drop --columns, --marginal and --plot)."
        )
    if not args.range:
        raise ValueError(
            "Range-query reports answer boxes: give at least one --range "
            "'COL=LOW:HIGH,...' (e.g. one per query)."
        )
    queries = [parse_range(text, channel.columns) for text in args.range]
    est = RangeQueryEstimator(mechanism=channel)
    n = 0
    names = channel.report_columns()
    chunks = read_chunks(args.reports, names, args.chunksize, dtype=str, exact=True)
    for chunk in progress(chunks, not args.no_progress, "estimate"):
        if len(chunk) == 0:
            continue
        values = integer_reports(chunk, "Range-query")
        est.partial_fit(values)
        n += len(chunk)
    if n == 0:
        raise ValueError(f"Reports file {str(args.reports)!r} has no rows.")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UninformativeEstimateWarning)
        answers = est.query_many(queries)
        intervals = [est.confidence_interval(q, args.alpha) for q in queries]
    rows = [
        {
            "query": text,
            "estimate": float(answer),
            "ci_lower": float(lo),
            "ci_upper": float(hi),
        }
        for text, answer, (lo, hi) in zip(args.range, answers, intervals, strict=True)
    ]
    with OutputFiles({"distribution file": args.output}, args.overwrite) as files:
        pd.DataFrame(rows).to_csv(files[args.output], index=False, quoting=CSV_QUOTING)
    print(
        f"answered {plural(len(queries), 'range query', 'range queries')} from "
        f"{plural(n, 'report')} -> {args.output} ({1 - args.alpha:.0%} intervals)"
    )
    return 0
