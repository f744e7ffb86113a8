"""What the ``privatize``, ``estimate`` and ``search`` commands share.

The names of the mechanisms and estimators on the command line, the argument
types of :mod:`argparse` (each refuses a bad value with a message saying what
is expected), the help formatter and the options every command has.
"""

import argparse
import json
import math
import os
import re
import sys

from ._values import split_values

__all__ = ["MECHANISMS", "ESTIMATORS", "DEFAULT_CHUNKSIZE", "make_mechanism"]

#: Mechanism names accepted on the command line and in configs.
MECHANISMS = ("rr", "urr", "rappor", "urap", "oue", "uoue")
#: Mechanisms that need sensitive values (utility-optimized ones).
UTILITY_MECHANISMS = ("urr", "urap", "uoue")
#: Estimator names accepted by ``estimate --estimator``.
ESTIMATORS = ("emp", "emp-simplex", "thr", "em")
DEFAULT_CHUNKSIZE = 100_000


def make_mechanism(
    name, epsilon, categories, sensitive=None, theta=None, random_state=None
):
    """Build the mechanism a command-line name stands for.

    Parameters
    ----------
    name : {"rr", "urr", "rappor", "urap", "oue", "uoue"}
        ``oue``/``uoue`` are RAPPOR/uRAP with ``theta=0.5``.
    epsilon : float
    categories : list
    sensitive : list or None
        Needed by (and only accepted by) the utility-optimized mechanisms.
    theta : float, "optimal" or None
    random_state : None, int or "secure"
        Passed to the mechanism as is.

    Returns
    -------
    mechanism : estimator
        An unfitted mechanism.

    Examples
    --------
    >>> from sklearn_uldp.cli._common import make_mechanism
    >>> make_mechanism("urr", 1.0, ["a", "b", "c"], sensitive=["c"])
    UtilityOptimizedRR(categories=['a', 'b', 'c'], sensitive=['c'])
    """
    from ..mechanisms import (
        RAPPOR,
        RandomizedResponse,
        UtilityOptimizedRAPPOR,
        UtilityOptimizedRR,
    )

    if not isinstance(name, str) or name.lower() not in MECHANISMS:
        raise ValueError(
            f"Unknown mechanism {name!r}; choose one of {list(MECHANISMS)}."
        )
    name = name.lower()
    epsilon = _epsilon(epsilon)
    utility = name in UTILITY_MECHANISMS
    if utility and not sensitive:
        raise ValueError(
            f"Mechanism {name!r} needs sensitive values (give --sensitive "
            "COLUMN=v1,v2 or 'sensitive' in the config)."
        )
    if not utility and sensitive:
        raise ValueError(
            f"Mechanism {name!r} protects every value and takes no sensitive "
            "values; use 'urr' or 'urap' for utility-optimized privacy."
        )
    if name in ("oue", "uoue"):
        theta = 0.5
    if theta == "optimal" and name != "urap":
        raise ValueError(
            "theta='optimal' minimizes the expected loss of urap; give a number "
            f"for {name!r}."
        )
    kw = dict(categories=categories)
    if random_state is not None:
        kw["random_state"] = random_state
    if name == "rr":
        return RandomizedResponse(epsilon, **kw)
    if name == "urr":
        return UtilityOptimizedRR(epsilon, sensitive=sensitive, **kw)
    if name in ("rappor", "oue"):
        return RAPPOR(epsilon, theta=theta, **kw)
    return UtilityOptimizedRAPPOR(epsilon, sensitive=sensitive, theta=theta, **kw)


def _epsilon(value):
    # bool is an int: a JSON `true` is not a budget.
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"epsilon must be a number > 0, got {value!r}.")
    try:
        eps = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"epsilon must be a number > 0, got {value!r}.") from None
    if not (eps > 0) or math.isinf(eps):
        raise ValueError(f"epsilon must be a finite number > 0, got {value!r}.")
    return eps


# ----------------------------------------------------------- argument types
def positive_int(text):
    """``argparse`` type: an integer >= 1 (``100_000`` is accepted)."""
    try:
        value = int(text.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a positive integer, got {text!r}"
        ) from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def positive_float(text):
    """``argparse`` type: a finite number > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text!r}")
    return value


def theta_arg(text):
    """``argparse`` type: a theta in (0, 1), or "optimal" (uRAP)."""
    if text == "optimal":
        return text
    value = positive_float(text)
    if not value < 1:
        raise argparse.ArgumentTypeError(
            f"expected a theta in (0, 1) or 'optimal', got {text!r}"
        )
    return value


def seed_arg(text):
    """``argparse`` type: a non-negative integer seed or 'none'."""
    if text.lower() == "none":
        return None
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a non-negative integer or 'none', got {text!r}"
        ) from None
    if value < 0:
        raise argparse.ArgumentTypeError(
            f"expected a non-negative integer, got {text!r}"
        )
    return value


def noise_arg(text):
    """``argparse`` type of ``privatize --random-state``: 'secure', 'none' or a seed.

    'none' stays a string here, so that it differs from an absent option.
    """
    if text.lower() in ("secure", "none"):
        return text.lower()
    try:
        return seed_arg(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"expected 'secure', 'none' or a non-negative integer, got {text!r}"
        ) from None


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Show each default once: unless the help text already speaks of it.

    A help text that mentions its default in any form ("(default: x)",
    "memory (default)", "the default ends with ...") is shown as written;
    None and False (an absent option, a flag) are not shown.
    """

    def _get_help_string(self, action):
        text = action.help or ""
        # `is`, not `in`: a default of 0 equals False but is worth showing.
        if (
            re.search(r"\bdefault\b", text, re.IGNORECASE)
            or action.default is None
            or action.default is False
            or action.default is argparse.SUPPRESS
        ):
            return text
        return super()._get_help_string(action)


# ------------------------------------------------------------------ parsing
def plural(n, word, plural_form=None, fmt=""):
    """``"1 column"``, ``"2 columns"``.

    Examples
    --------
    >>> from sklearn_uldp.cli._common import plural
    >>> plural(1, "distribution"), plural(2, "distribution")
    ('1 distribution', '2 distributions')
    """
    if n == 1:
        return f"{n:{fmt}} {word}"
    return f"{n:{fmt}} {plural_form or word + 's'}"


def column_values(items, option):
    """Parse repeated ``COLUMN=v1,v2`` options into a dict.

    A value ``LOW..HIGH`` is an inclusive integer range (``hospvis=0..51``).

    Examples
    --------
    >>> from sklearn_uldp.cli._common import column_values
    >>> column_values(["a=x,y", "b=1..3"], "--categories")
    {'a': ['x', 'y'], 'b': [1, 2, 3]}
    """
    out = {}
    for item in items or []:
        column, sep, values = item.partition("=")
        column = column.strip()
        if not sep or not column:
            raise ValueError(
                f"{option} expects COLUMN=value1,value2,...; got {item!r}."
            )
        values = split_values(values, f"{option} {item}")
        if not values:
            raise ValueError(f"{option} {item!r} lists no values.")
        if column in out:
            raise ValueError(
                f"{option} gives column {column!r} twice; list all its values in "
                f"one {option} {column}=v1,v2,..."
            )
        out[column] = values
    return out


def load_json(path, what):
    """Read a JSON file; a missing file or bad JSON is a clear ValueError."""
    if not os.path.exists(path):
        raise FileNotFoundError(f"{what} file {str(path)!r} does not exist.")
    if os.path.isdir(path):
        raise ValueError(f"{what} file {str(path)!r} is a directory, not a JSON file.")
    with open(path, encoding="utf-8") as fh:
        try:
            return json.load(fh)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ValueError(
                f"{what} file {str(path)!r} is not valid JSON: {exc}"
            ) from None


def warn(command, message):
    """Print ``sklearn-uldp COMMAND: warning: MESSAGE`` on stderr."""
    print(f"sklearn-uldp {command}: warning: {message}", file=sys.stderr)


def progress(chunks, enabled, desc):
    """Yield the chunks, showing the rows done on stderr (tqdm, if installed)."""
    try:
        from tqdm.auto import tqdm
    except ImportError:  # pragma: no cover - optional extra
        enabled = False
    if not enabled:
        yield from chunks
        return
    with tqdm(desc=desc, unit=" rows", unit_scale=True, file=sys.stderr) as bar:
        for chunk in chunks:
            yield chunk
            bar.update(len(chunk))


def add_common_options(parser):
    """``--chunksize``, ``--no-progress`` and ``--overwrite``."""
    parser.add_argument(
        "--chunksize",
        type=positive_int,
        default=DEFAULT_CHUNKSIZE,
        metavar="ROWS",
        help="rows read per chunk",
    )
    parser.add_argument(
        "--no-progress",
        action="store_true",
        help="do not show a progress bar (tqdm, on stderr)",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace output files that already exist (never an input file)",
    )
