"""Command line interface: ``sklearn-uldp <command>`` / ``python -m sklearn_uldp``.

Commands, one module each, every one exposing ``register(subparsers)``:

* ``demo`` (:mod:`sklearn_uldp.cli._demo`): the privacy/utility comparison
  of the ULDP paper on a synthetic location grid;
* ``privatize`` (client side): a table in, reports and their spec out;
* ``estimate`` (collector side): reports and spec in, distributions out;
* ``search``: the privacy/utility search on a column (a simulation);
* ``secrets`` (client side): the per-user secrets of memoized (longitudinal)
  mechanisms, for ``privatize --user-secrets``.

File handling (chunked readers, atomic writers, the rules that keep inputs
and existing files safe) is in :mod:`sklearn_uldp.cli._io`; category values
(ranges ``0..51``, integer columns, the order of learned domains) in
:mod:`sklearn_uldp.cli._values`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .. import _show_versions
from . import _demo, _estimate, _privatize, _search, _secrets

__all__ = ["main", "build_parser"]

# Modules that contribute subcommands, in the order shown by --help.
_COMMAND_MODULES = (_demo, _privatize, _estimate, _search, _secrets, _show_versions)


def build_parser() -> argparse.ArgumentParser:
    """Return the top-level argument parser with every subcommand.

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
        description="Utility-optimized local differential privacy for categorical data.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    for module in _COMMAND_MODULES:
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script.

    Parameters
    ----------
    argv : list of str, default=None
        The arguments; ``sys.argv[1:]`` by default.

    Returns
    -------
    status : int
        0 on success, 2 on a usage or input error (the message is on stderr).

    Examples
    --------
    >>> from sklearn_uldp.cli import main
    >>> main(["privatize", "no-such-file.csv", "-o", "reports.csv",
    ...       "--columns", "city", "--epsilon", "1"])   # the error goes to stderr
    2
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (ValueError, OSError, KeyError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
            message = f"{exc.strerror}: {exc.filename!r}"
        print(f"sklearn-uldp {args.command}: error: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
