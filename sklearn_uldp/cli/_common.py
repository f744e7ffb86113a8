"""What the ``privatize``, ``estimate`` and ``search`` commands share.

The names of the mechanisms and estimators on the command line, the argument
types of :mod:`argparse` (each refuses a bad value with a message saying what
is expected), the help formatter and the options every command has.
"""

import argparse
import json
import math
import numbers
import os
import re
import sys

from ._values import split_values

__all__ = [
    "MECHANISMS",
    "UTILITY_MECHANISMS",
    "SKETCH_MECHANISMS",
    "ESTIMATORS",
    "DEFAULT_CHUNKSIZE",
    "make_mechanism",
]

#: Mechanism names accepted on the command line and in configs.
MECHANISMS = (
    "rr",
    "urr",
    "rappor",
    "urap",
    "oue",
    "uoue",
    "olh",
    "blh",
    "ss",
    "cms",
    "hcms",
    "uss",
    "uhr",
)
#: Mechanisms that need sensitive values (utility-optimized ones).
UTILITY_MECHANISMS = ("urr", "urap", "uoue", "uss", "uhr")
#: Mechanisms whose sketch size (``n_buckets``, ``n_hashes``) can be set.
SKETCH_MECHANISMS = ("cms", "hcms")
#: Estimator names accepted by ``estimate --estimator``.
ESTIMATORS = ("emp", "emp-simplex", "thr", "em")
DEFAULT_CHUNKSIZE = 100_000


def make_mechanism(
    name,
    epsilon,
    categories,
    sensitive=None,
    theta=None,
    random_state=None,
    *,
    n_buckets=None,
    n_hashes=None,
):
    """Build the mechanism a command-line name stands for.

    Parameters
    ----------
    name : str
        One of :data:`MECHANISMS`: ``rr`` (k-ary randomized response),
        ``urr``, ``rappor``, ``urap``, ``oue``/``uoue`` (RAPPOR/uRAP with
        ``theta=0.5``), ``olh``/``blh`` (optimized/binary local hashing),
        ``ss`` (subset selection), ``cms``/``hcms`` (count-mean sketch and its
        Hadamard variant), ``uss`` (utility-optimized subset selection) and
        ``uhr`` (utility-optimized Hadamard response).
    epsilon : float
    categories : list
    sensitive : list or None
        Needed by (and only accepted by) the utility-optimized mechanisms.
    theta : float, "optimal" or None
    random_state : None, int or "secure"
        Passed to the mechanism as is.
    n_buckets, n_hashes : int or None
        Sketch size of ``cms``/``hcms`` (None: the mechanism's default).

    Returns
    -------
    mechanism : estimator
        An unfitted mechanism.

    Examples
    --------
    >>> from sklearn_uldp.cli._common import make_mechanism
    >>> make_mechanism("urr", 1.0, ["a", "b", "c"], sensitive=["c"])
    UtilityOptimizedRR(categories=['a', 'b', 'c'], sensitive=['c'])
    >>> make_mechanism("cms", 2.0, ["a", "b", "c"], n_buckets=16, n_hashes=8)
    CountMeanSketch(categories=['a', 'b', 'c'], epsilon=2.0, n_buckets=16,
                    n_hashes=8)
    """
    from ..mechanisms import (
        RAPPOR,
        BinaryLocalHashing,
        CountMeanSketch,
        HadamardCountMeanSketch,
        OptimizedLocalHashing,
        RandomizedResponse,
        SubsetSelection,
        UtilityOptimizedHadamardResponse,
        UtilityOptimizedRAPPOR,
        UtilityOptimizedRR,
        UtilityOptimizedSubsetSelection,
    )

    if not isinstance(name, str) or name.lower() not in MECHANISMS:
        raise ValueError(f"Unknown mechanism {name!r}; choose one of {list(MECHANISMS)}.")
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
            f"values; use one of {list(UTILITY_MECHANISMS)} for utility-optimized "
            "privacy."
        )
    if name not in SKETCH_MECHANISMS and (n_buckets is not None or n_hashes is not None):
        raise ValueError(
            f"n_buckets and n_hashes set the sketch of 'cms' and 'hcms'; mechanism "
            f"{name!r} has no sketch: drop them."
        )
    if name in ("oue", "uoue"):
        theta = 0.5
    if theta == "optimal" and name != "urap":
        raise ValueError(
            f"theta='optimal' minimizes the expected loss of urap; give a number for {name!r}."
        )
    kw = dict(categories=categories)
    if random_state is not None:
        kw["random_state"] = random_state
    if name in SKETCH_MECHANISMS:
        for key, value in (("n_buckets", n_buckets), ("n_hashes", n_hashes)):
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, numbers.Integral):
                raise ValueError(f"{key} must be an integer >= 1, got {value!r}.")
            kw[key] = int(value)
    if name == "rr":
        return RandomizedResponse(epsilon, **kw)
    if name == "urr":
        return UtilityOptimizedRR(epsilon, sensitive=sensitive, **kw)
    if name in ("rappor", "oue"):
        return RAPPOR(epsilon, theta=theta, **kw)
    if name in ("urap", "uoue"):
        return UtilityOptimizedRAPPOR(epsilon, sensitive=sensitive, theta=theta, **kw)
    if name == "uss":
        return UtilityOptimizedSubsetSelection(epsilon, sensitive=sensitive, **kw)
    if name == "uhr":
        return UtilityOptimizedHadamardResponse(epsilon, sensitive=sensitive, **kw)
    others = {
        "olh": OptimizedLocalHashing,
        "blh": BinaryLocalHashing,
        "ss": SubsetSelection,
        "cms": CountMeanSketch,
        "hcms": HadamardCountMeanSketch,
    }
    return others[name](epsilon, **kw)


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
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
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


def level_arg(text):
    """``argparse`` type: a level in (0, 1), such as 0.05."""
    value = positive_float(text)
    if not value < 1:
        raise argparse.ArgumentTypeError(f"expected a level in (0, 1) such as 0.05, got {text!r}")
    return value


def epsilon_arg(text):
    """``argparse`` type: a privacy budget, a finite number > 0."""
    try:
        return positive_float(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"epsilon must be a finite number > 0, got {text!r}"
        ) from None


def theta_arg(text):
    """``argparse`` type: a theta in (0, 1), or "optimal" (uRAP)."""
    if text == "optimal":
        return text
    value = positive_float(text)
    if not value < 1:
        raise argparse.ArgumentTypeError(f"expected a theta in (0, 1) or 'optimal', got {text!r}")
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
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}")
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
def plot_written(args):
    """Say where the plot went, if one was asked for; the exit status (0)."""
    if args.plot:
        print(f"plot -> {args.plot}")
    return 0


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
            raise ValueError(f"{option} expects COLUMN=value1,value2,...; got {item!r}.")
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
            raise ValueError(f"{what} file {str(path)!r} is not valid JSON: {exc}") from None


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


def add_command(subparsers, name, func, *, help, description):
    """Add the subcommand ``name`` (run by ``func(args)``) to the CLI's subparsers.

    Each command module's ``register(subparsers)`` calls it, then adds its
    own options.

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
        From :meth:`argparse.ArgumentParser.add_subparsers`.
    name : str
    func : callable
        ``func(args) -> int``, the command.
    help, description : str
        The one-line help of ``sklearn-uldp --help`` and the command's own.

    Returns
    -------
    parser : argparse.ArgumentParser

    Examples
    --------
    >>> import argparse
    >>> from sklearn_uldp.cli._search import register
    >>> parser = argparse.ArgumentParser(prog="sklearn-uldp")
    >>> register(parser.add_subparsers(dest="command")).prog
    'sklearn-uldp search'
    """
    parser = subparsers.add_parser(
        name, formatter_class=HelpFormatter, help=help, description=description
    )
    parser.set_defaults(func=func)
    return parser


def add_missing_options(parser):
    """``--missing`` and ``--missing-label`` (privatize, search)."""
    parser.add_argument(
        "--missing",
        choices=("error", "category"),
        default="error",
        help="missing values (empty fields, blank lines, NA): fail, or report "
        "them as an explicit category",
    )
    parser.add_argument(
        "--missing-label",
        default="(missing)",
        metavar="LABEL",
        help="the category of missing values with --missing category, added "
        "to the domain; an integer column keeps its integers and this label "
        "(an integer label such as -1 is an integer) (default: '(missing)')",
    )
