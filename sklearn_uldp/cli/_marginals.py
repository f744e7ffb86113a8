"""``sklearn-uldp estimate`` of marginal reports (``privatize --strategy marginals``).

The spec ``privatize --strategy marginals`` writes holds one composite
channel (``"marginals"``: the columns, their domains, the measured sets of
columns and each one's oracle), validated like any channel spec, and is bound
to its reports like every spec ``privatize`` writes. The reports (two integer
columns, ``marginal`` and ``report``, or ``report_<w>`` words for bit-vector
oracles) are read in chunks into a
:class:`~sklearn_uldp.marginals.MarginalEstimator` (its statistics add up);
the output is each column's distribution, or with ``--marginal A,B`` the
estimate of that set of columns, cell by cell, with score intervals (for a
measured set or a subset of one; a set never measured is read from the
maximum-entropy table, without intervals).
"""

import numpy as np
import pandas as pd

from ._common import plural, progress, warn
from ._io import CSV_QUOTING, OutputFiles, integer_reports, read_chunks
from ._names import spec_from_dict

__all__ = ["is_marginal_spec", "estimate_marginals"]


def is_marginal_spec(document):
    """Whether a spec file was written by ``privatize --strategy marginals``."""
    strategy = document.get("strategy") if isinstance(document, dict) else None
    return isinstance(strategy, dict) and strategy.get("name") == "marginals"


def _channel(document, path):
    from ..marginals import MarginalChannel

    spec = document.get("marginals")
    if not isinstance(spec, dict):
        raise ValueError(
            f"Spec file {str(path)!r} names the strategy 'marginals' but holds no "
            "'marginals' channel object: use the spec privatize wrote."
        )
    try:
        channel = spec_from_dict(spec)
    except (TypeError, KeyError, ValueError) as exc:
        raise ValueError(f"Invalid marginal spec: {exc}") from None
    if not isinstance(channel, MarginalChannel):
        raise ValueError("The spec's 'marginals' entry is not a marginal release's channel.")
    return channel


def _template(name):
    from ..estimators import EmpiricalEstimator, ThresholdEstimator

    return {
        "em": None,  # MarginalEstimator's default, EMEstimator()
        "emp": EmpiricalEstimator(),
        "emp-simplex": EmpiricalEstimator(projection="simplex"),
        "thr": ThresholdEstimator(),
    }[name]


def _marginal_columns(args, channel):
    """The columns of ``--marginal`` (None without it), checked against the spec."""
    if args.marginal is None:
        return None
    columns = [c.strip() for c in args.marginal.split(",")]
    unknown = [c for c in columns if c not in channel.columns]
    if unknown or len(set(columns)) != len(columns) or not all(columns):
        raise ValueError(
            f"--marginal names {len(columns)} columns, which must be distinct columns "
            f"of the spec (it has {list(channel.columns)[:20]}); e.g. --marginal "
            f"{','.join(channel.columns[:2])}."
        )
    clash = {"estimate", "ci_lower", "ci_upper"} & set(columns)
    if clash:
        raise ValueError(
            f"Columns {sorted(clash)} are named like the output's own columns; "
            "rename them before privatizing."
        )
    return columns


def _read(args, channel, estimator):
    names = channel.report_columns()
    n = 0
    chunks = read_chunks(args.reports, names, args.chunksize, dtype=str, exact=True)
    for chunk in progress(chunks, not args.no_progress, "estimate"):
        if len(chunk) == 0:
            continue
        values = integer_reports(chunk, "Marginal")
        try:
            estimator.partial_fit(values)
        except ValueError as exc:
            rows = f"rows {int(chunk.index[0]) + 1}-{int(chunk.index[-1]) + 1}"
            raise type(exc)(f"{exc} (in {rows})") from None
        n += len(chunk)
    return n


def _one_way_rows(est, alpha):
    rows = []
    for c in est.columns_:
        p = est.marginal([c])
        ci = est.marginal_confidence_intervals([c], alpha)
        for value, share, lo, hi in zip(
            p.index.get_level_values(0), p.to_numpy(), ci["lower"], ci["upper"], strict=True
        ):
            rows.append(
                {
                    "column": c,
                    "category": value,
                    "estimate": float(share),
                    "ci_lower": float(lo),
                    "ci_upper": float(hi),
                }
            )
    return pd.DataFrame(rows)


def _marginal_rows(est, columns, alpha):
    p = est.marginal(columns)
    out = p.rename("estimate").reset_index()
    out.columns = [*columns, "estimate"]
    measured = any(set(columns) <= set(m) for m in est.marginals_)
    if measured:
        ci = est.marginal_confidence_intervals(columns, alpha)
        out["ci_lower"] = ci["lower"].to_numpy()
        out["ci_upper"] = ci["upper"].to_numpy()
    else:
        warn(
            "estimate",
            f"no measured marginal holds these {len(columns)} columns: the estimate "
            "is read from the maximum-entropy table of the measured marginals, "
            "without intervals (measure larger marginals with --marginal-size).",
        )
        out["ci_lower"] = np.nan
        out["ci_upper"] = np.nan
    return out


def estimate_marginals(args, document, binding):
    """Estimate from marginal reports; write the CSV; return the exit code."""
    from ..exceptions import UninformativeEstimateWarning
    from ..marginals import MarginalEstimator

    channel = _channel(document, args.spec)
    if args.columns:
        raise ValueError(
            "--columns selects columns of per-column reports; marginal reports give "
            "every column: use --marginal A,B for a set of columns."
        )
    columns = _marginal_columns(args, channel)
    if args.plot:
        raise ValueError("--plot draws per-column reports; drop it for marginal reports.")
    est = MarginalEstimator(estimator=_template(args.estimator), mechanism=channel)
    n = _read(args, channel, est)
    if n == 0:
        raise ValueError(f"Reports file {str(args.reports)!r} has no rows.")
    if binding is not None and n != binding["n_rows"] and not args.skip_report_check:
        raise ValueError(  # pragma: no cover - the SHA-256 is checked first
            f"Read {plural(n, 'report row')}, but privatize wrote {binding['n_rows']}."
        )
    import warnings

    with warnings.catch_warnings():
        # Per-marginal advice; the intervals say how little a marginal knows.
        warnings.simplefilter("ignore", UninformativeEstimateWarning)
        table = (
            _one_way_rows(est, args.alpha)
            if columns is None
            else _marginal_rows(est, columns, args.alpha)
        )
    with OutputFiles({"distribution file": args.output}, args.overwrite) as files:
        table.to_csv(files[args.output], index=False, quoting=CSV_QUOTING)
    what = (
        f"{plural(len(channel.columns), 'distribution')}"
        if columns is None
        else f"the marginal of {plural(len(columns), 'column')}"
    )
    print(
        f"estimated {what} from {plural(n, 'report')} of "
        f"{plural(len(est.marginals_), 'measured marginal')} -> {args.output} "
        f"(estimator {args.estimator}, {1 - args.alpha:.0%} intervals)"
    )
    return 0
