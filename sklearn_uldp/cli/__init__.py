"""Command line interface: ``sklearn-uldp <command>`` / ``python -m sklearn_uldp``.

Commands, one module each, every one exposing ``register(subparsers)``
(listed in :data:`COMMANDS`, imported only when their command runs):

* ``demo`` (:mod:`sklearn_uldp.cli._demo`): the privacy/utility comparison
  of the ULDP paper on a synthetic location grid;
* ``privatize`` (client side): a table in, reports and their spec out, for
  every family (categorical, memoized, numeric, heavy hitters);
* ``estimate`` (collector side): reports and spec in, distributions, means
  and heavy hitters out;
* ``search``: the privacy/utility search on a column (a simulation);
* ``secrets`` (client side): the per-user secrets of memoized (longitudinal)
  mechanisms, for ``privatize --user-secrets``;
* ``show-versions``: what a bug report needs.

The mechanisms and their names are one table, :mod:`sklearn_uldp.cli._names`
(the spec names, earlier names as aliases). File handling (chunked readers,
atomic writers, the rules that keep inputs and existing files safe) is in
:mod:`sklearn_uldp.cli._io`; category values (ranges ``0..51``, integer
columns, the order of learned domains) in :mod:`sklearn_uldp.cli._values`;
a table's columns as the mechanisms take them (domains, missing values) in
:mod:`sklearn_uldp.cli._columns`; how the tool prints warnings and stops on
signals in :mod:`sklearn_uldp.cli._messages`.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

__all__ = ["main", "build_parser", "COMMANDS"]

#: The commands, in the order of ``--help``: name -> (module, one-line help).
#: A command's module (and with it numpy, pandas and the mechanisms) is
#: imported only when that command runs or shows its own help, so that
#: ``sklearn-uldp --help`` stays as quick as Python's start.
COMMANDS = {
    "demo": (
        "sklearn_uldp.cli._demo",
        "compare RR, RAPPOR, uRR, uRAP on a synthetic location grid",
    ),
    "privatize": (
        "sklearn_uldp.cli._privatize",
        "privatize columns of a CSV/Parquet table: categories, numbers, open-domain "
        "text (heavy hitters), one round or many (client side)",
    ),
    "estimate": (
        "sklearn_uldp.cli._estimate",
        "estimate distributions, means and heavy hitters from reports and a spec (collector side)",
    ),
    "search": (
        "sklearn_uldp.cli._search",
        "privacy/utility search on a column, categorical or numeric (simulation)",
    ),
    "secrets": (
        "sklearn_uldp.cli._secrets",
        "make the per-user secrets of memoized (longitudinal) mechanisms",
    ),
    "show-versions": (
        "sklearn_uldp._show_versions",
        "print the versions, compiled kernels and secure generator (for bug reports)",
    ),
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """Return the top-level argument parser.

    Parameters
    ----------
    command : str or None, default=None
        The command whose options to load; the others get a placeholder
        (their name and one-line help). None loads every command.

    Returns
    -------
    parser : argparse.ArgumentParser

    Examples
    --------
    >>> from sklearn_uldp.cli import build_parser
    >>> build_parser().parse_args(["demo", "--no-plot"]).command
    'demo'
    """
    from .._version import __version__

    parser = argparse.ArgumentParser(
        prog="sklearn-uldp",
        description=(
            "Local differential privacy, utility-optimized where values are not all "
            "sensitive: privatize a table's columns (categories, numbers, open-domain "
            "text, in one round or many) on the users' side, estimate their "
            "distributions on the collector's side. 'sklearn-uldp COMMAND --help' "
            "shows a command's options."
        ),
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    for name, (module, help_text) in COMMANDS.items():
        if command is None or command == name:
            importlib.import_module(module).register(subparsers)
        else:
            subparsers.add_parser(name, help=help_text)
    return parser


def _command_of(argv):
    """The command named in ``argv`` (its first word that is not an option), or ''."""
    # The top-level options (--help, --version) take no value, so the first
    # other word is the command.
    first = next((a for a in argv if not a.startswith("-")), "")
    return first if first in COMMANDS else ""


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script.

    Parameters
    ----------
    argv : list of str, default=None
        The arguments; ``sys.argv[1:]`` by default.

    Returns
    -------
    status : int
        0 on success, 2 on a usage or input error (the message is on stderr),
        130 when stopped by Ctrl-C (SIGINT) or SIGTERM (part files removed,
        nothing published).

    Examples
    --------
    >>> from sklearn_uldp.cli import main
    >>> main(["privatize", "no-such-file.csv", "-o", "reports.csv",
    ...       "--columns", "city", "--epsilon", "1"])   # the error goes to stderr
    2
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(_command_of(argv))
    args = parser.parse_args(argv)
    from ._messages import reported_warnings

    try:
        with reported_warnings(args.command):
            return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print(
            f"sklearn-uldp {args.command}: stopped; no output was written (part files removed).",
            file=sys.stderr,
        )
        return 130
    except (ValueError, OSError, KeyError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
            message = f"{exc.strerror}: {exc.filename!r}"
        print(f"sklearn-uldp {args.command}: error: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
