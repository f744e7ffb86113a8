"""Shared harness of the reproduction scripts in ``benchmarks/reproduce/``.

Every script calls :func:`parse_args` for the common options (``--quick``,
``--runs``, ``--seed``, ``--out``, ``--plot``) and :func:`save_results` to
print its table and write ``<out>/<name>.json`` and ``<out>/<name>.md``
(default ``benchmarks/results/reproduce/``). ``main(argv)`` of each script
takes the same list of strings as the command line, so the tests run the
scripts in-process.
"""

import argparse
import contextlib
import json
import math
import platform
import sys
import time
from pathlib import Path

import numpy as np

RESULTS_DIR = Path(__file__).resolve().parents[1] / "results" / "reproduce"

__all__ = [
    "RESULTS_DIR",
    "cell",
    "format_value",
    "markdown_table",
    "parse_args",
    "print_trends",
    "pyplot",
    "save_figure",
    "save_results",
    "timer",
]


def parse_args(description, argv=None, *, default_runs):
    """Parse the options every reproduction script shares.

    Parameters
    ----------
    description : str
        The script's help text (usually its ``__doc__``).
    argv : list of str or None
        The arguments (``None``: ``sys.argv[1:]``).
    default_runs : int
        Number of realizations of a full run (``--runs`` overrides it; a
        script may use fewer with ``--quick``).

    Returns
    -------
    args : argparse.Namespace
        ``quick`` (bool), ``runs`` (int), ``seed`` (int), ``out`` (Path),
        ``plot`` (bool).
    """
    parser = argparse.ArgumentParser(
        description=description,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--quick", action="store_true", help="reduced run (seconds; used by the tests)"
    )
    parser.add_argument(
        "--runs", type=int, default=None, help=f"realizations per point (default {default_runs})"
    )
    parser.add_argument("--seed", type=int, default=0, help="random seed")
    parser.add_argument(
        "--out", type=Path, default=RESULTS_DIR, help="directory of the .json/.md results"
    )
    parser.add_argument(
        "--plot",
        action="store_true",
        help="also draw the figure (<out>/<name>.png; needs matplotlib)",
    )
    args = parser.parse_args(argv)
    if args.runs is None:
        args.runs = default_runs
    if args.runs < 1:
        parser.error(f"--runs must be at least 1, got {args.runs}.")
    args.out = Path(args.out)
    return args


@contextlib.contextmanager
def timer(label=None, *, stream=sys.stderr):
    """Time a block: ``with timer("EM") as t: ...; t.seconds``."""
    box = argparse.Namespace(seconds=float("nan"))
    start = time.perf_counter()
    try:
        yield box
    finally:
        box.seconds = time.perf_counter() - start
        if label:
            print(f"[{label}: {box.seconds:.1f} s]", file=stream)


def format_value(value):
    """A table cell: floats with 3 significant digits, ``-`` for missing."""
    if value is None:
        return "-"
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (float, np.floating)):
        value = float(value)
        if math.isnan(value):
            return "-"
        if value == 0 or 1e-3 <= abs(value) < 1e4:
            return f"{value:.3g}"
        return f"{value:.2e}"
    return str(value)


def markdown_table(rows, columns):
    """A Markdown (MyST) table of ``rows`` (dicts) restricted to ``columns``."""
    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    for row in rows:
        lines.append("| " + " | ".join(format_value(row.get(c)) for c in columns) + " |")
    return "\n".join(lines)


def _jsonable(value):
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist())
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating, float)):
        value = float(value)
        return None if math.isnan(value) else value
    if isinstance(value, np.bool_):
        return bool(value)
    return value


def save_results(name, rows, args, *, columns, meta):
    """Print the table and write ``<args.out>/<name>.json`` and ``.md``.

    Parameters
    ----------
    name : str
        File stem, e.g. ``"uldp_fig5"``.
    rows : list of dict
        One dict per table row (all values kept in the JSON).
    args : argparse.Namespace
        From :func:`parse_args` (its options are recorded).
    columns : list of str
        The columns of the Markdown table, in order.
    meta : dict
        Anything else worth keeping (dataset, runtimes, the paper's claims).

    Returns
    -------
    paths : tuple of Path
        The JSON and Markdown files written.
    """
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    table = markdown_table(rows, columns)
    options = {k: v for k, v in vars(args).items()}
    record = {
        "name": name,
        "options": options,
        "meta": meta,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "columns": list(columns),
        "rows": rows,
    }
    json_path = out / f"{name}.json"
    md_path = out / f"{name}.md"
    json_path.write_text(json.dumps(_jsonable(record), indent=1) + "\n")
    mode = "quick" if getattr(args, "quick", False) else "full"
    md_path.write_text(
        f"<!-- {name}: {mode} run, runs={args.runs}, seed={args.seed} -->\n\n" + table + "\n"
    )
    print(f"\n## {name} ({mode} run, runs={args.runs})\n")
    print(table)
    print(f"\n(written to {json_path} and {md_path})")
    return json_path, md_path


def print_trends(title, trends):
    """Print ``title`` after a blank line, then ``  claim: value`` per trend."""
    print(f"\n{title}")
    for claim, value in trends.items():
        print(f"  {claim}: {value}")


def cell(rows, column, **match):
    """``row[column]`` of the first row whose values equal ``match``."""
    return next(r[column] for r in rows if all(r[k] == v for k, v in match.items()))


def pyplot():
    """``matplotlib.pyplot`` on the file-only Agg backend (imported on demand)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig, path, *, dpi, announce=False):
    """Lay ``fig`` out, write it to ``path`` and close it (``announce``: say where)."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    if announce:
        print(f"(figure written to {path})")
