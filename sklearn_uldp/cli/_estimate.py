"""``sklearn-uldp estimate``: reports and their spec in, distributions out.

The collector side of the workflow: rebuild each column's channel from the
public spec (validated by :meth:`Channel.from_dict
<sklearn_uldp.mechanisms.Channel.from_dict>`), read the reports in chunks and
estimate each column's distribution (``EMEstimator()``'s default estimate
unless ``--estimator`` says otherwise), with the standard error of the
unbiased estimate and a score interval per category. The estimate is exactly
the one-shot one (sufficient statistics add up), and every row of the
reports file is read and counted.

A spec written by ``privatize`` names the reports file it describes (its
format, row count, columns and SHA-256) and records the digest of its own
parameters: ``estimate`` refuses other reports and an edited spec, so a
spec can never be applied to the wrong output, nor edited parameters to the
right one.
"""

import os
import warnings

import numpy as np
import pandas as pd

from ._common import (
    ESTIMATORS,
    add_command,
    add_common_options,
    level_arg,
    load_json,
    plot_written,
    plural,
    positive_int,
    progress,
    rows_of,
    warn,
)
from ._io import (
    CSV_QUOTING,
    PARQUET_SPEC_KEY,
    OutputFiles,
    canonical_digest,
    check_csv_output,
    check_input_format,
    check_outputs,
    check_plot_output,
    file_digest,
    parquet_metadata,
    pending_publish,
    read_chunks,
    recover_outputs,
)
from ._marginals import estimate_marginals, is_marginal_spec
from ._names import HEAVY_HITTERS, family_of, load, resolve, spec_from_dict
from ._ranges import estimate_ranges, is_range_spec

__all__ = ["register"]


# --------------------------------------------------------------------- spec
def _default_report_names(column, channel):
    """The report columns the mechanisms write (``get_feature_names_out``)."""
    return channel.report_column_names(column)


def _report_names(column, channel, names):
    """The report columns of ``column``: from the spec, or the default ones."""
    if family_of(channel) == HEAVY_HITTERS:
        return _heavy_report_names(column, names)
    default = _default_report_names(column, channel)
    expected = len(default)
    if names is None:
        return default
    if channel.bit_vector_reports and isinstance(names, list) and len(names) == 1:
        expected = 1  # packed reports (privatize --packed): one column of bytes
    if (
        not isinstance(names, list)
        or len(names) != expected
        or not all(isinstance(n, str) for n in names)
    ):
        raise ValueError(
            f"The spec's report_columns of {column!r} must be a list of {expected} "
            f"column name(s) ({_columns_meaning(channel)}); "
            f"got {names!r}. The spec file is damaged: write it again with "
            "'sklearn-uldp privatize'."
        )
    return names


def _heavy_report_names(column, names):
    """Open-domain reports: their columns are those the spec lists."""
    if names is None:
        raise ValueError(
            f"The spec of the open-domain column {column!r} lists no report columns: "
            "give the spec 'sklearn-uldp privatize' wrote with the reports."
        )
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise ValueError(
            f"The spec's report_columns of {column!r} must be a non-empty list of column "
            "names. The spec file is damaged: write it again with 'sklearn-uldp privatize'."
        )
    return names


def _columns_meaning(channel):
    shown = channel.report_column_names("COL")
    return "like " + ", ".join(shown[:3]) + (", ..." if len(shown) > 3 else "")


def load_specs(path, columns):
    """Read a spec file.

    Returns
    -------
    specs : dict of {str: (Channel, list of str)}
        Column -> (channel, report column names).
    document : dict
        The whole spec (its ``"reports"`` entry binds a spec written by
        ``privatize`` to its reports: see :func:`check_binding`).
    """
    spec = load_json(path, "Spec")
    if not isinstance(spec, dict):
        raise ValueError(f"Spec file {str(path)!r} must hold a JSON object.")
    if "mechanism" in spec or "protocol" in spec:  # one channel, as Channel.to_json() writes
        if not columns or len(columns) != 1:
            raise ValueError(
                "This spec describes one mechanism: name its report column with --columns NAME."
            )
        entries = {columns[0]: (spec, None)}
    elif isinstance(spec.get("columns"), dict) and spec["columns"]:
        names = spec.get("report_columns", {})
        if not isinstance(names, dict):
            raise ValueError(
                f"The spec's report_columns must be an object {{column: [names]}}; got {names!r}."
            )
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
            f"Spec file {str(path)!r} is neither a channel spec (with 'mechanism') "
            "nor a privatize spec (with a non-empty 'columns')."
        )
    out = {}
    for c, (s, names) in entries.items():
        if not isinstance(s, dict):
            raise ValueError(f"Invalid spec for column {c!r}: expected a JSON object, got {s!r}.")
        try:
            channel = spec_from_dict(s)
        except (TypeError, KeyError, ValueError) as exc:
            raise ValueError(f"Invalid spec for column {c!r}: {exc}") from None
        out[c] = (channel, _report_names(c, channel, names))
    return out, spec


def check_binding(document, reports, spec_path, skip_report_check=False):
    """Refuse an edited spec, and reports that are not the file it was written for.

    A spec written by ``privatize`` records, in its ``"reports"`` entry, the
    SHA-256 of its own parameters in canonical JSON (``spec_sha256``; Parquet
    reports carry it too, in their key-value metadata) and the name, format,
    row count, columns and SHA-256 of the reports file.

    Parameters
    ----------
    document : dict
        The spec.
    reports, spec_path : path-like
    skip_report_check : bool, default=False
        Accept reports whose content differs from the file the spec was
        written for (a file converted by the user). The spec's own
        parameters are checked in any case.

    Returns
    -------
    binding : dict or None
        The ``"reports"`` entry (None: a spec not written by ``privatize``,
        which binds nothing).
    """
    from ..exceptions import InvalidSpecError, ReportMismatchError

    binding = document.get("reports")
    if binding is None:
        return None
    if not (
        isinstance(binding, dict)
        and isinstance(binding.get("sha256"), str)
        and isinstance(binding.get("n_rows"), int)
        and not isinstance(binding.get("n_rows"), bool)
        and isinstance(binding.get("file"), str)
    ):
        raise InvalidSpecError(
            f"The 'reports' entry of spec {str(spec_path)!r} is damaged (it needs "
            f"'file', 'n_rows' and 'sha256'); got {binding!r:.200}. Use the spec "
            "privatize wrote with the reports."
        )
    parameters = {k: v for k, v in document.items() if k != "reports"}
    digest = canonical_digest(parameters)
    recorded = binding.get("spec_sha256")
    if recorded is None:
        if not skip_report_check:
            raise InvalidSpecError(
                f"Spec {str(spec_path)!r} records no digest of its parameters "
                "(written by an older sklearn-uldp), so an edit of its epsilon or "
                "categories could not be detected. Privatize the data again to get "
                "a bound spec, or pass --skip-report-check to use it unchecked."
            )
    elif recorded != digest:
        raise InvalidSpecError(
            f"Spec {str(spec_path)!r} was edited after privatize wrote it: its "
            "parameters (epsilon, categories, mechanism, report columns, ...) no "
            "longer match the digest recorded with the reports, and estimating "
            "with other parameters than the reports were made with gives a wrong "
            "distribution. Use the spec privatize wrote (it is named "
            "REPORTS.spec.json), or privatize the data again."
        )
    name = os.path.basename(os.fspath(reports))
    if os.path.isfile(reports) and check_input_format(reports) == "parquet":
        try:
            carried = parquet_metadata(reports, PARQUET_SPEC_KEY)
        except Exception:  # noqa: BLE001 - unreadable: the reader says why
            carried = None
        if carried is not None and carried != digest:
            raise ReportMismatchError(
                f"The reports {name!r} were made with a spec whose parameters "
                f"differ from those of {str(spec_path)!r} (their SHA-256 "
                f"{carried[:12]}... is recorded in the reports, this spec's is "
                f"{digest[:12]}...): the spec was edited, or belongs to other "
                "reports. Use the spec privatize wrote with these reports."
            )
    if skip_report_check or not os.path.isfile(reports):
        return binding
    if file_digest(reports) == binding["sha256"]:
        return binding
    if name == binding["file"]:
        raise ReportMismatchError(
            f"The reports file {str(reports)!r} changed after privatize wrote spec "
            f"{str(spec_path)!r} for it (its SHA-256 differs: altered, truncated or "
            "written again without this spec). Give the spec written with these "
            "reports, or pass --skip-report-check if you converted the file yourself."
        )
    raise ReportMismatchError(
        f"Spec {str(spec_path)!r} was written for the reports file "
        f"{binding['file']!r} ({binding['n_rows']} rows, format "
        f"{binding.get('format')}), and {name!r} is not that file (its SHA-256 "
        "differs: another output, or an altered or truncated copy). Give the "
        f"spec written with {name!r} (privatize names it {name}.spec.json), "
        "or pass --skip-report-check if you converted the file yourself."
    )


# ------------------------------------------------------------------ reports
def _bits(frame, names):
    block = frame[names]
    ok = block.isin(("0", "1"))
    if not ok.to_numpy().all():
        bad_col = names[int(np.argmin(ok.all().to_numpy()))]
        bad = ~ok[bad_col].to_numpy()
        raise ValueError(
            f"Report column {bad_col!r} holds {plural(int(bad.sum()), 'value')} other "
            f"than 0 and 1 ({rows_of(frame.index, bad)}); bit-vector reports are 0 "
            "or 1. These reports do not come from the spec's mechanism, or were altered."
        )
    return (block.to_numpy() == "1").astype(np.uint8)


def _codes(frame, name, channel):
    lookup = {str(cat): cat for cat in channel.categories.tolist()}
    col = frame[name]
    if col.isna().any():
        raise ValueError(
            f"Report column {name!r} has empty values ({rows_of(frame.index, col.isna())}); "
            "every report is a category of the spec."
        )
    unknown = ~col.isin(lookup.keys())
    if unknown.any():
        raise ValueError(
            f"Report column {name!r} holds {plural(int(unknown.sum()), 'value')} that "
            f"are not outputs of the spec's {type(channel).__name__} "
            f"({rows_of(frame.index, unknown)}; its {len(lookup)} categories are in the "
            "spec): these reports do not come from this spec, or were altered."
        )
    return col.map(lookup).to_numpy(dtype=object)


def _integers(frame, name, channel, what, signed=False):
    """A report column of integer codes read as text -> int64."""
    col = frame[name]
    if col.isna().any():
        raise ValueError(
            f"Report column {name!r} has empty values ({rows_of(frame.index, col.isna())}); "
            f"every {what} of the spec's {type(channel).__name__} is an integer."
        )
    values = col.to_numpy(dtype=object).astype(str)
    digits = np.char.lstrip(values, "-") if signed else values
    ok = np.char.isdigit(digits) & (np.char.count(values, "-") <= (1 if signed else 0))
    if not ok.all():
        raise ValueError(
            f"Report column {name!r} holds {plural(int((~ok).sum()), 'value')} that "
            f"{'is' if int((~ok).sum()) == 1 else 'are'} not integers"
            + ("" if signed else " >= 0")
            + f" ({rows_of(frame.index, ~ok)}): the {what}s of the spec's "
            f"{type(channel).__name__} are integers. These reports do not come from "
            "this spec, or were altered."
        )
    try:
        return values.astype(np.int64)
    except OverflowError:
        raise ValueError(
            f"Report column {name!r} holds integers too large for a {what} of "
            f"the spec's {type(channel).__name__}; these reports do not come from "
            "this spec."
        ) from None


def _packed(frame, name, channel):
    """Packed bit-vector reports from a binary column (read from Parquet)."""
    from ..mechanisms import PackedReports

    try:
        return PackedReports.from_frame(frame[[name]], channel=channel)
    except ValueError as exc:
        raise ValueError(
            f"{exc} The spec's report column {name!r} holds packed reports "
            "(privatize --packed), which are read from the Parquet file it wrote."
        ) from None


def _sketch(frame, channel, names):
    """Rows ``[hash index, m bits]`` of a count-mean sketch."""
    index = _integers(frame, names[0], channel, "hash index")
    bits = _bits(frame, names[1:])
    return np.column_stack([index, bits])


def _as_reports(frame, channel, names):
    if getattr(channel, "missing_reports", False):
        # strategy="sample": empty where the person sampled another column
        frame = frame[frame[names].notna().all(axis=1)]
    if not channel.has_categories:  # numbers, read as text
        return pd.to_numeric(frame[names[0]], errors="coerce").to_numpy(dtype=float)
    if channel.bit_vector_reports:
        if len(names) == 1:  # packed: ceil(k / 8) bytes a report
            return _packed(frame, names[0], channel)
        return _bits(frame, names)
    if channel.report_width > 1:  # an integer index, then bits (count-mean sketch)
        return _sketch(frame, channel, names)
    if not getattr(channel, "reports_are_categories", True):
        # Output codes (local hashing's seed * g + value, the Hadamard
        # family's codes): integers, checked against the output space by
        # the channel's encode_reports.
        return _integers(frame, names[0], channel, "report")
    return _codes(frame, names[0], channel)


def _heavy_reports(frame, protocol, names):
    """Open-domain reports read as text -> the rows their protocol encodes."""
    if len(names) == 1:  # the prefix protocols: one output code a report
        return _integers(frame, names[0], protocol, "report").reshape(-1, 1)
    if _decodes_candidates(protocol):  # Bloom RAPPOR: the cohort, then the bits
        cohorts = _integers(frame, names[0], protocol, "cohort")
        return np.column_stack([cohorts, _bits(frame, names[1:])])
    # utility-optimized: a code (-1: the item is in clear) and the item
    code = _integers(frame, names[0], protocol, "report code", signed=True)
    out = np.empty((len(frame), 2), dtype=object)
    out[:, 0] = code.tolist()
    out[:, 1] = frame[names[1]].to_numpy(dtype=object)
    return out


def _decodes_candidates(protocol):
    """Whether the collector of these reports decodes a list of candidates."""
    import inspect

    collector = load(resolve(protocol.name)[0].collector)
    return "candidates" in inspect.signature(collector).parameters


def _candidate_files(items, columns):
    """``--candidates [COL=]FILE`` (repeated) -> {column or None: path}."""
    out = {}
    for item in items or []:
        column, sep, path = item.partition("=")
        if sep and column in columns:
            out[column] = path
        else:
            out[None] = item
    return out


def _read_candidates(path, column):
    """One candidate a line (UTF-8); blank lines skipped."""
    if not os.path.isfile(path):
        raise FileNotFoundError(
            f"Candidates file {str(path)!r} of column {column!r} does not exist."
        )
    with open(path, encoding="utf-8") as fh:
        candidates = [line.rstrip("\r\n") for line in fh]
    candidates = list(dict.fromkeys(c for c in candidates if c.strip()))
    if not candidates:
        raise ValueError(f"Candidates file {str(path)!r} of column {column!r} lists none.")
    return candidates


def _heavy_estimator(column, protocol, args):
    """The collector of an open-domain column: discovers items, or decodes candidates."""
    collector = load(resolve(protocol.name)[0].collector)
    if not _decodes_candidates(protocol):
        return collector(top_k=args.top_k, mechanism=protocol, alpha=args.alpha)
    files = args.candidate_files
    path = files.get(column, files.get(None))
    if path is None:
        raise ValueError(
            f"Column {column!r} ({protocol.name}) is decoded against a list of candidate "
            f"items: pass --candidates {column}=FILE (one candidate a line), e.g. the "
            "items a prefix protocol discovered, or a dictionary of likely values."
        )
    return collector(_read_candidates(path, column), mechanism=protocol, alpha=args.alpha)


def _heavy_rows(column, est, alpha, top_k):
    """The CSV rows of an open-domain column: its heavy hitters (or detected candidates)."""
    from scipy.stats import norm

    z = norm.isf(alpha / 2)
    if hasattr(est, "heavy_hitters_frame_"):
        frame = est.heavy_hitters_frame_.rename(columns={"frequency": "estimate"})
    else:  # candidates decoded: the detected ones (false discovery rate alpha)
        frame = est.estimates_.rename(columns={"proportion": "estimate"})
        n_candidates = len(frame)
        frame = frame[frame["detected"]].sort_values("estimate", ascending=False)
        if top_k is not None:
            frame = frame.head(top_k)
        print(
            f"column {column!r}: {plural(len(frame), 'candidate')} detected of "
            f"{n_candidates} (false discovery rate {alpha:g})"
        )
    sensitive = set(getattr(est.protocol_, "sensitive", None) or [])
    return [
        {
            "column": column,
            "category": item,
            "estimate": float(row["estimate"]),
            # Only a utility-optimized protocol singles items out; under LDP
            # every item is protected (as every category of an rr column).
            "sensitive": item in sensitive if sensitive else True,
            "std_error": float(row["std_error"]),
            "ci_lower": float(row["estimate"] - z * row["std_error"]),
            "ci_upper": float(row["estimate"] + z * row["std_error"]),
        }
        for item, row in frame.iterrows()
    ]


def _make_estimator(name, channel, report_store="memory"):
    from ..estimators import EMEstimator, EmpiricalEstimator, ThresholdEstimator

    if not channel.has_categories:  # its family's (the mean, or Square Wave's EMS)
        return channel.default_estimator(mechanism=channel)

    if name == "emp":
        return EmpiricalEstimator(mechanism=channel)
    if name == "emp-simplex":
        return EmpiricalEstimator(projection="simplex", mechanism=channel)
    if name == "thr":
        return ThresholdEstimator(mechanism=channel)
    return EMEstimator(report_store=report_store, mechanism=channel)


def _read_reports(args, specs, estimators):
    """Feed every report row to its column's estimator; return the rows read."""
    names = [n for _, cols in specs.values() for n in cols]
    n = 0
    chunks = read_chunks(args.reports, names, args.chunksize, dtype=str, exact=True)
    for chunk in progress(chunks, not args.no_progress, "estimate"):
        if len(chunk) == 0:
            continue
        for c, (channel, cols) in specs.items():
            try:
                if family_of(channel) == HEAVY_HITTERS:
                    estimators[c].partial_fit(_heavy_reports(chunk, channel, cols))
                    continue
                estimators[c].partial_fit(_as_reports(chunk, channel, cols))
            except ValueError as exc:
                rows = f"rows {int(chunk.index[0]) + 1}-{int(chunk.index[-1]) + 1}"
                raise type(exc)(f"{exc} (column {c!r}, in {rows})") from None
        n += len(chunk)
    return n


def _read_compact_reports(args, document, specs, estimators):
    """The reports of ``privatize --strategy sample --report-format compact``:
    each chunk's rows grouped by their sampled column once, each column's
    rows decoded to its reports (the spec's TableSpec checks every cell)."""
    from ..estimators import TableSpec

    try:
        table = TableSpec.from_dict(document)
    except ValueError as exc:
        raise ValueError(f"Spec file {str(args.spec)!r}: {exc}") from None
    sampled = table.strategy.get("sampled_column", "sampled_attribute")
    names = [*table.strategy["report_block"], sampled]
    n = 0
    chunks = read_chunks(args.reports, names, args.chunksize, dtype=str, exact=True)
    for chunk in progress(chunks, not args.no_progress, "estimate"):
        if len(chunk) == 0:
            continue
        try:
            prepared = table._compact_groups(chunk)
            for c in specs:
                if prepared[0][c].size:
                    estimators[c].partial_fit(table._compact_column_reports(chunk, c, prepared))
        except ValueError as exc:
            rows = f"rows {int(chunk.index[0]) + 1}-{int(chunk.index[-1]) + 1}"
            raise type(exc)(f"{exc} (in {rows})") from None
        n += len(chunk)
    return n


def _estimate_rows(c, est, alpha):
    """The CSV rows of one column: estimate, standard error, interval."""
    from ..estimators import linear_standard_errors

    mask = np.asarray(est.channel_.sensitive_mask, dtype=bool)
    se = linear_standard_errors(est.channel_, est.statistics_)
    ci = est.confidence_intervals(alpha)
    return [
        {
            "column": c,
            "category": cat,
            "estimate": float(p),
            "sensitive": bool(s),
            "std_error": float(e),
            "ci_lower": float(lo),
            "ci_upper": float(hi),
        }
        for cat, p, s, e, (lo, hi) in zip(
            est.categories_.tolist(), est.distribution_, mask, se, ci, strict=True
        )
    ]


# ------------------------------------------------------------------ command
def _cmd_estimate(args):
    from ..exceptions import UninformativeEstimateWarning

    check_outputs(
        {"distribution file": args.output, "plot": args.plot},
        {"reports file": args.reports, "spec file": args.spec},
        args.overwrite,
    )
    check_csv_output(args.output, "distribution file")
    check_plot_output(args.plot)
    if pending_publish(args.reports):
        # A privatize run was killed while publishing these reports and
        # their spec: its part files are complete, finish the moves.
        recover_outputs([args.reports])
    document = load_json(args.spec, "Spec")
    if is_marginal_spec(document):  # privatize --strategy marginals: one composite channel
        binding = check_binding(document, args.reports, args.spec, args.skip_report_check)
        return estimate_marginals(args, document, binding)
    if is_range_spec(document):  # privatize --range-queries
        binding = check_binding(document, args.reports, args.spec, args.skip_report_check)
        return estimate_ranges(args, document, binding)
    if args.range:
        raise ValueError(
            "--range reads reports of 'privatize --range-queries'; this spec "
            "describes other reports."
        )
    if args.marginal is not None:
        raise ValueError(
            "--marginal reads reports of 'privatize --strategy marginals'; this spec "
            "describes per-column reports."
        )
    specs, document = load_specs(args.spec, args.columns)
    binding = check_binding(document, args.reports, args.spec, args.skip_report_check)
    args.candidate_files = _candidate_files(args.candidates, list(specs))
    estimators = {
        c: _heavy_estimator(c, ch, args)
        if family_of(ch) == HEAVY_HITTERS
        else _make_estimator(args.estimator, ch, args.report_store)
        for c, (ch, _) in specs.items()
    }
    _warn_imputed(document, specs)
    strategy = document.get("strategy") or {}
    if not isinstance(strategy, dict):
        raise ValueError(
            f"The spec file's 'strategy' entry must be an object, got "
            f"{type(strategy).__name__}: the spec was edited; write it again with "
            "sklearn-uldp privatize."
        )
    if strategy.get("report_format") == "compact":
        n = _read_compact_reports(args, document, specs, estimators)
    else:
        n = _read_reports(args, specs, estimators)
    if n == 0:
        raise ValueError(f"Reports file {str(args.reports)!r} has no rows.")
    of_file = "not bound to a reports file"
    if binding is not None:
        expected = binding["n_rows"]
        if n != expected and not args.skip_report_check:  # pragma: no cover - sha checked
            raise ValueError(
                f"Read {plural(n, 'report row')} from {str(args.reports)!r}, but "
                f"privatize wrote {expected}: rows were lost or added."
            )
        if n != expected:
            warn(
                "estimate",
                f"read {plural(n, 'report row')}, but privatize wrote {expected} "
                "(--skip-report-check: the file was changed).",
            )
        else:
            of_file = f"all {plural(expected, 'row')} privatize wrote"
    rows = []
    for c, est in estimators.items():
        if family_of(specs[c][0]) == HEAVY_HITTERS:
            rows.extend(_heavy_rows(c, est, args.alpha, args.top_k))
            continue
        if not hasattr(est, "categories_"):  # a numeric column
            rows.extend(_numeric_rows(c, est, args.alpha))
            continue
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", UninformativeEstimateWarning)
            rows.extend(_estimate_rows(c, est, args.alpha))
        if any(issubclass(w.category, UninformativeEstimateWarning) for w in caught):
            warn(
                "estimate",
                f"column {c!r}: no category stands out from the noise in "
                f"{plural(est.n_reports_, 'report')} (none is significantly above "
                "zero), so the estimate is uninformative (uniform for em and thr); "
                "its intervals show how little the reports say. Collect more "
                "reports, spend a larger epsilon, or merge categories.",
            )
    with OutputFiles(
        {"distribution file": args.output, "plot": args.plot}, args.overwrite
    ) as files:
        pd.DataFrame(rows).to_csv(files[args.output], index=False, quoting=CSV_QUOTING)
        if args.plot:
            categorical = {c: e for c, e in estimators.items() if hasattr(e, "categories_")}
            _plot_estimates(categorical, files[args.plot], args.plot)
    print(
        f"estimated {plural(len(estimators), 'distribution')} from "
        f"{plural(n, 'report')} -> {args.output} ({of_file}; estimator "
        f"{args.estimator}, {1 - args.alpha:.0%} intervals)"
    )
    return plot_written(args)


def _warn_imputed(document, specs):
    """Say which columns had missing values imputed at privatize (the spec records it)."""
    imputed = document.get("missing") if isinstance(document, dict) else None
    if not isinstance(imputed, dict):
        return
    columns = sorted(c for c, policy in imputed.items() if c in specs and policy == "impute")
    if columns:
        warn(
            "estimate",
            f"columns {columns}: privatize imputed their missing values, each drawn "
            "uniformly from the public domain or bounds, so their estimates mix the true "
            "distribution with the uniform one in the (unknown) share of missing values.",
        )


def _numeric_rows(column, est, alpha):
    """Output rows of a numeric column, in the categorical rows' columns.

    A mean estimate is one row (category ``mean``) with its standard error
    and interval at level ``1 - alpha``; a Square Wave estimate is one row a
    bin (category = the bin's midpoint) without per-bin errors (its
    bootstrap intervals are :meth:`SquareWaveEstimator.confidence_interval`).
    """
    if hasattr(est, "mean_") and not hasattr(est, "distribution_"):
        low, high = est.confidence_interval(alpha)
        return [
            {
                "column": column,
                "category": "mean",
                "estimate": float(est.mean_),
                "sensitive": False,
                "std_error": float(est.standard_error_),
                "ci_lower": float(low),
                "ci_upper": float(high),
            }
        ]
    edges = est.bin_edges_
    return [
        {
            "column": column,
            "category": float(m),
            "estimate": float(p),
            "sensitive": False,
            "std_error": np.nan,
            "ci_lower": np.nan,
            "ci_upper": np.nan,
        }
        for m, p in zip(0.5 * (edges[:-1] + edges[1:]), est.distribution_, strict=True)
    ]


#: Fill of the bars of sensitive categories in ``estimate --plot``.
SENSITIVE_COLOR = "tab:red"


def estimates_figure(estimators):
    """One bar chart per column, the sensitive categories marked.

    Sensitive categories have red, hatched bars (visible however thin the
    bars are) and a legend entry "sensitive": the categories the CSV's
    ``sensitive`` column flags, every one of an LDP column's (the title
    says so).

    Parameters
    ----------
    estimators : dict of {str: fitted estimator}
        Column -> its fitted distribution estimator.

    Returns
    -------
    fig : matplotlib.figure.Figure
        Not registered with pyplot.
    """
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    from ..plotting import DistributionDisplay

    k_max = max(len(est.categories_) for est in estimators.values())
    fig = Figure(figsize=(max(8, min(0.15 * k_max, 30)), 3.2 * len(estimators)))
    axes = fig.subplots(len(estimators), 1, squeeze=False)[:, 0]
    for ax, (c, est) in zip(axes, estimators.items(), strict=True):
        # The same flags as the CSV's "sensitive" column: under LDP every
        # category is protected, so every bar is marked, and the title says why.
        marked = np.asarray(est.channel_.sensitive_mask, dtype=bool)
        disp = DistributionDisplay.from_estimator(est, ax=ax, sensitive=marked)
        for bar, sensitive in zip(disp.bars_, marked, strict=True):
            if sensitive:
                bar.set_facecolor(SENSITIVE_COLOR)
                bar.set_hatch("//")
        handles = [Patch(facecolor="tab:blue", label=type(est).__name__)]
        if marked.any():
            handles.append(Patch(facecolor=SENSITIVE_COLOR, hatch="//", label="sensitive"))
        ax.legend(handles=handles, fontsize="small")
        title = c
        if marked.all():
            title = f"{c} (every category sensitive: LDP protects them all alike)"
        elif marked.any():
            n_sensitive = plural(int(marked.sum()), "sensitive category", "sensitive categories")
            title = f"{c} ({n_sensitive} marked)"
        ax.set_title(title)
    fig.tight_layout()
    return fig


def _plot_estimates(estimators, part, path):
    fig = estimates_figure(estimators)
    fig.savefig(part, format=os.path.splitext(os.fspath(path))[1].lstrip("."))


# ----------------------------------------------------------------- register
def register(subparsers):
    """Add the ``estimate`` subcommand (:func:`~sklearn_uldp.cli._common.add_command`)."""
    e = add_command(
        subparsers,
        "estimate",
        _cmd_estimate,
        description=(
            "Estimate the distribution of the true values of each column from the "
            "reports and the public spec written by 'privatize' (or one channel "
            "spec from Channel.to_json() with --columns NAME). Writes a CSV with "
            "columns column, category, estimate, sensitive, std_error (of the "
            "unbiased estimate), ci_lower and ci_upper (a score interval for each "
            "category's share, at level 1 - --alpha). A numeric column gives its "
            "mean (category 'mean'; Square Wave: one row a bin), an open-domain "
            "column its heavy hitters (category: the item; --top-k) or, for "
            "bloom_rappor, the --candidates detected. A spec written by "
            "'privatize' is only accepted unedited and with the reports file it "
            "was written for."
        ),
    )
    e.add_argument("reports", help="reports file (.csv, or .parquet with pyarrow)")
    e.add_argument(
        "--spec",
        required=True,
        metavar="JSON",
        help="the spec file (privatize writes REPORTS.spec.json)",
    )
    e.add_argument("-o", "--output", required=True, metavar="CSV", help="distribution CSV to write")
    e.add_argument(
        "--columns",
        nargs="+",
        metavar="COL",
        help="only these columns (default: all in the spec)",
    )
    e.add_argument(
        "--estimator",
        choices=ESTIMATORS,
        default="em",
        help="em: EMEstimator's default (the estimate the README recommends: "
        "maximum likelihood with a shrinkage towards the significance "
        "threshold); emp: unbiased; emp-simplex: projected on the simplex; "
        "thr: significance threshold",
    )
    e.add_argument(
        "--alpha",
        type=level_arg,
        default=0.05,
        metavar="A",
        help="1 - confidence level of the intervals ci_lower, ci_upper (0.05: 95%%)",
    )
    e.add_argument(
        "--report-store",
        default="memory",
        metavar="{memory,disk,DIR}",
        help="where --estimator em keeps bit-vector reports (RAPPOR, OUE, uRAP, "
        "uBD, SS, uSS, CMS), whose likelihood needs each one: memory (default), disk (the system's "
        "temporary directory) or an existing directory DIR. On disk, memory "
        "does not grow with the number of reports.",
    )
    e.add_argument(
        "--top-k",
        type=positive_int,
        default=None,
        metavar="K",
        help="heavy hitters per open-domain column (default: the top_k privatize used)",
    )
    e.add_argument(
        "--candidates",
        action="append",
        metavar="[COL=]FILE",
        help="candidate items of a bloom_rappor column, one a line (repeat per column "
        "as COL=FILE; a FILE alone serves every such column); the output lists the "
        "candidates detected at false discovery rate --alpha",
    )
    e.add_argument(
        "--plot",
        metavar="PNG",
        help="also plot the estimates of categorical columns (matplotlib); the bars "
        "the CSV flags sensitive are red and hatched (all of an LDP column's)",
    )
    e.add_argument(
        "--marginal",
        metavar="A,B",
        help="for reports of 'privatize --strategy marginals': estimate the joint "
        "distribution of these columns (a measured set or a subset of one, with "
        "score intervals; another set from the maximum-entropy table of the "
        "measured ones) instead of each column's; the CSV has one column per named "
        "column, then estimate, ci_lower and ci_upper",
    )
    e.add_argument(
        "--range",
        action="append",
        metavar="COL=LOW:HIGH,...",
        help="for reports of 'privatize --range-queries': the fraction of people "
        "in this box (repeat per query; an empty side is open, e.g. "
        "'age=20:40,hours=:50'), with an interval at level 1 - --alpha; the CSV "
        "has columns query, estimate, ci_lower, ci_upper",
    )
    e.add_argument(
        "--skip-report-check",
        action="store_true",
        help="accept reports whose content differs from the file the spec was "
        "written for (only for a file you converted or re-encoded yourself)",
    )
    add_common_options(e)
    return e
