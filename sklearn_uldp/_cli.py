"""Command line interface: ``sklearn-uldp <command>`` / ``python -m sklearn_uldp``.

Each command lives in its own module that exposes ``register(subparsers)``;
this file only assembles them, so commands can be added without touching the
others.
"""

import argparse
import importlib
import sys

# Modules that contribute subcommands, in the order shown by --help.
_COMMAND_MODULES = ["sklearn_uldp._demo", "sklearn_uldp._cli_workflow"]


def build_parser():
    """Return the top-level argument parser with every available subcommand."""
    parser = argparse.ArgumentParser(
        prog="sklearn-uldp",
        description="Utility-optimized local differential privacy for categorical data.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    for name in _COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue
        module.register(subparsers)
    return parser


def main(argv=None):
    """Entry point of the console script; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (ValueError, FileNotFoundError, KeyError) as exc:
        print(f"sklearn-uldp {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
