"""How the command line speaks: warnings once each, in its own style; signals.

The library warns with Python warnings, which Python prints with the
installation's source paths and the line that warned, once per call (a
command that privatizes 30 chunks would show a clipping warning 60 times).
The command line records them while a command runs and prints each kind
once, as ``sklearn-uldp COMMAND: warning: MESSAGE``, with the number of
chunks it came up in when that is more than one. Two messages are one kind
when they differ only in their numbers (a count per chunk).

Messages never carry a user's value (see the security page): the library's
and the command line's own give counts, row numbers and column names.

SIGTERM (``kill``) ends a command as Ctrl-C (SIGINT) does, by an exception:
the part files being written are removed on the way out and nothing is
published (see :mod:`sklearn_uldp.cli._io`).
"""

from __future__ import annotations

import contextlib
import re
import signal
import sys
import threading
import warnings

__all__ = ["reported_warnings", "terminate_as_interrupt", "CommandTerminated"]

#: Warnings for developers, not for the user of the command line.
_DEVELOPER_WARNINGS = (
    DeprecationWarning,
    PendingDeprecationWarning,
    ImportWarning,
    ResourceWarning,
)


def _kind(record):
    """Warnings that differ only in their numbers are one kind."""
    return record.category, re.sub(r"\d+(?:\.\d+)?", "#", str(record.message))


def format_warnings(command, records):
    """The lines the command prints for recorded warnings: each kind once.

    Examples
    --------
    >>> import warnings
    >>> from sklearn_uldp.cli._messages import format_warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     for n in (3, 5):
    ...         warnings.warn(f"{n} values clipped")
    >>> format_warnings("privatize", caught)
    ['sklearn-uldp privatize: warning: 3 values clipped (and 1 more time)']
    """
    kinds = {}
    for record in records:
        if issubclass(record.category, _DEVELOPER_WARNINGS):
            continue
        kinds.setdefault(_kind(record), []).append(record)
    lines = []
    for same in kinds.values():
        more = len(same) - 1
        note = f" (and {more} more time{'s' if more > 1 else ''})" if more else ""
        lines.append(f"sklearn-uldp {command}: warning: {same[0].message}{note}")
    return lines


@contextlib.contextmanager
def reported_warnings(command):
    """Record the warnings of a command; print each kind once when it ends.

    Printed on stderr also when the command fails (before its error).
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with terminate_as_interrupt():
                yield
        finally:
            for line in format_warnings(command, caught):
                print(line, file=sys.stderr)


class CommandTerminated(KeyboardInterrupt):
    """SIGTERM received: the command stops as on Ctrl-C (outputs discarded)."""


def _raise_terminated(signum, frame):
    raise CommandTerminated(f"stopped by signal {signum}")


@contextlib.contextmanager
def terminate_as_interrupt():
    """Turn SIGTERM into :class:`CommandTerminated` while the block runs.

    So a ``kill`` unwinds like Ctrl-C: the ``with`` blocks that write part
    files remove them. Only in the main thread (where Python runs signal
    handlers); the previous handler is restored after.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
