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

__all__ = [
    "ESTIMATORS",
    "DEFAULT_CHUNKSIZE",
    "make_mechanism",
    "check_parameters",
]

#: Estimator names accepted by ``estimate --estimator``.
ESTIMATORS = ("emp", "emp-simplex", "thr", "em")
DEFAULT_CHUNKSIZE = 100_000

#: What a budget parameter means, for the message of a missing one.
_BUDGET_HINTS = {
    ("epsilon_perm", "epsilon_1"): (
        "epsilon_perm bounds every round of a value, epsilon_1 one report, e.g. "
        '"epsilon_perm": 2, "epsilon_1": 1 (--param epsilon_perm=2 --param epsilon_1=1)'
    ),
    ("epsilon_12", "epsilon_21"): "the budgets of the two directions, e.g. 1 and 2",
    ("p", "q", "f"): "RAPPOR's probabilities, e.g. p=0.5, q=0.75, f=0.5",
}


def make_mechanism(name, params, random_state=None):
    """Build the mechanism a spec name (or alias) stands for.

    Parameters
    ----------
    name : str
        A spec name (``rr``, ``urap``, ``hybrid``, ``lgrr``, ``pem``, ... see
        :mod:`sklearn_uldp.cli._names`) or an earlier alias (``oue``,
        ``uoue``, ``uhr``).
    params : dict
        Its parameters, as in a config: the budget (``epsilon``, or
        ``epsilon_perm`` and ``epsilon_1``, ...), ``categories``,
        ``sensitive``, ``bounds``, ``theta``, ... Checked by
        :func:`check_parameters`.
    random_state : None, int or "secure"
        Passed to the mechanism as is.

    Returns
    -------
    mechanism : estimator
        An unfitted mechanism.

    Examples
    --------
    >>> from sklearn_uldp.cli._common import make_mechanism
    >>> make_mechanism("urr", {"epsilon": 1.0, "categories": ["a", "b", "c"],
    ...                        "sensitive": ["c"]})
    UtilityOptimizedRR(categories=['a', 'b', 'c'], sensitive=['c'])
    >>> make_mechanism("oue", {"epsilon": 2.0, "categories": ["a", "b"]})
    RAPPOR(categories=['a', 'b'], epsilon=2.0, theta=0.5)
    """
    from ._names import resolve

    entry, fixed = resolve(name)
    params = check_parameters(name, params)
    kwargs = {**params, **fixed}
    if random_state is not None:
        kwargs["random_state"] = random_state
    return entry.cls(**kwargs)


def check_parameters(name, params):
    """A mechanism's parameters, checked: every key is one of its own, the budget is there.

    Returns the parameters with the budgets as floats.
    """
    from ._names import names, resolve

    entry, fixed = resolve(name)
    shown = name.lower()
    if "sensitive" in params and params["sensitive"] is not None and not entry.utility_optimized:
        raise ValueError(
            f"Mechanism {shown!r} protects every value and takes no sensitive "
            f"values; use one of {_utility_names(entry.family)} for utility-optimized "
            "privacy."
        )
    unknown = [k for k, v in params.items() if k not in entry.parameters and v is not None]
    if unknown:
        takers = [n for n in names() if all(k in resolve(n)[0].parameters for k in unknown)]
        it = "it" if len(unknown) == 1 else "them"
        where = f" ({', '.join(takers)} take {it})" if takers else ""
        raise ValueError(
            f"Mechanism {shown!r} has no parameter {', '.join(unknown)}{where}: drop "
            f"{it}. Its parameters: "
            f"{', '.join(entry.parameters)}."
        )
    clash = sorted(k for k in fixed if params.get(k) is not None and params[k] != fixed[k])
    if clash:
        target = entry.name
        raise ValueError(
            f"{shown!r} is {target!r} with "
            + ", ".join(f"{k}={fixed[k]}" for k in clash)
            + f": drop {', '.join(clash)}, or use {target!r}."
        )
    if params.get("theta") == "optimal" and not _takes_optimal_theta(entry.cls):
        raise ValueError(
            f"theta='optimal' minimizes the expected loss of urap; give a number for {shown!r}."
        )
    params = {k: v for k, v in params.items() if v is not None}
    if entry.budgets and not any(all(k in params for k in b) for b in entry.budgets):
        options = " or ".join(" and ".join(b) for b in entry.budgets)
        hints = [_BUDGET_HINTS[b] for b in entry.budgets if b in _BUDGET_HINTS]
        raise ValueError(
            f"Mechanism {shown!r} needs its budget {options}"
            + (f" ({'; '.join(hints)})" if hints else " (--epsilon, or 'epsilon' in the config)")
            + "."
        )
    for key in [k for b in entry.budgets for k in b if k.startswith("epsilon") and k in params]:
        params[key] = _epsilon(params[key], key)
    absent = [k for k in entry.needs if params.get(k) is None]
    if "sensitive" in absent:
        raise ValueError(
            f"Mechanism {shown!r} needs sensitive values (give --sensitive "
            "COLUMN=v1,v2 or 'sensitive' in the config)."
        )
    if "bounds" in absent:
        raise ValueError(
            f"Numeric mechanism {shown!r} needs 'bounds': [low, high], the public range "
            "of the values (--bounds COLUMN=LOW,HIGH or 'bounds' in the config; values "
            "outside are clipped)."
        )
    for key, value in params.items():
        if isinstance(value, bool) and key not in _FLAGS:
            raise ValueError(f"{key} of {shown!r} must be a number or text, got {value!r}.")
    return params


def _takes_optimal_theta(cls):
    """Whether a mechanism's theta may be "optimal" (its own constraints say)."""
    return any(
        "optimal" in getattr(constraint, "options", ())
        for constraint in getattr(cls, "_parameter_constraints", {}).get("theta", [])
    )


#: Parameters that are flags (true/false): none of the mechanisms' today.
_FLAGS = ()


def _utility_names(family):
    from ._names import mechanism_table

    return [n for n, e in mechanism_table().items() if e.family == family and e.utility_optimized]


def _epsilon(value, name="epsilon"):
    # bool is an int: a JSON `true` is not a budget.
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"{name} must be a number > 0, got {value!r}.")
    try:
        eps = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number > 0, got {value!r}.") from None
    if not (eps > 0) or math.isinf(eps):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}.")
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


def rows_of(index, mask, limit=5):
    """``"rows 3, 7 and 9"``: the rows of a mask, counted from 1 after the header.

    How messages point at values without showing them (a message never
    quotes a user's value).

    Examples
    --------
    >>> from sklearn_uldp.cli._common import rows_of
    >>> rows_of([0, 1, 2, 3], [False, True, False, True])
    'rows 2, 4'
    >>> rows_of(range(10), [True] * 10, limit=2)
    'rows 1, 2 and 8 more'
    """
    import numpy as np

    mask = np.asarray(mask, dtype=bool)
    rows = (np.asarray(index)[mask] + 1)[:limit].tolist()
    more = int(mask.sum()) - len(rows)
    listed = ", ".join(map(str, rows))
    return f"row{'s' if len(rows) > 1 or more else ''} {listed}" + (
        f" and {more} more" if more else ""
    )


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


def add_command(subparsers, name, func, *, description, help=None):
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
    description : str
        The command's own help.
    help : str, default=None
        The one-line help of ``sklearn-uldp --help`` (None: the command's in
        :data:`sklearn_uldp.cli.COMMANDS`, which ``--help`` shows without
        importing the command).

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
    if help is None:
        from . import COMMANDS

        help = COMMANDS[name][1]
    parser = subparsers.add_parser(
        name, formatter_class=HelpFormatter, help=help, description=description
    )
    parser.set_defaults(func=func)
    return parser


def add_missing_options(parser, *, per_column=False):
    """``--missing`` and ``--missing-label`` (privatize, search).

    With ``per_column`` (privatize), ``--missing`` may be repeated and take
    ``COLUMN=POLICY``.
    """
    policies = "error, category or impute"
    parser.add_argument(
        "--missing",
        action="append" if per_column else "store",
        choices=None if per_column else ("error", "category", "impute"),
        default=None if per_column else "error",
        metavar="POLICY" + ("|COL=POLICY" if per_column else ""),
        help=f"missing values (empty fields, blank lines, NA): {policies}. error "
        "(default): an error naming the column and rows; category: reported as the "
        "category --missing-label (an item for open-domain columns); impute: a "
        "value drawn uniformly from the public domain or bounds, privatized like "
        "any other (the estimate then mixes in the uniform distribution)"
        + (
            ". Repeat as COL=POLICY for one column (e.g. --missing category "
            "--missing age=impute); category leaves numeric columns at error"
            if per_column
            else ""
        ),
    )
    parser.add_argument(
        "--missing-label",
        default="(missing)",
        metavar="LABEL",
        help="the category of missing values with --missing category, added "
        "to the domain; an integer column keeps its integers and this label "
        "(an integer label such as -1 is an integer) (default: '(missing)')",
    )
