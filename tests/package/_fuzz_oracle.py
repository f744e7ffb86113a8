"""Generated bad input and the oracle that judges what the package does with it.

Used by ``tests/package/test_fuzz.py`` (bounded pytest runs and the ``--measure N``
mode). Nothing here is part of the package.

A *case* is a plain dict built by the hypothesis strategies below; ``run_case``
executes it and returns an :class:`Outcome` of one class:

* ``ok``: the call succeeded and its result passed every check;
* ``clear``: an expected exception type (ValueError, TypeError, sklearn's
  InvalidParameterError, NotFittedError, the package's exceptions, which are
  ValueError subclasses) raised from the package or from scikit-learn's own
  input validation, with a non-trivial message; for the CLI: exit code 2 and an
  ``error:`` line on stderr without a traceback;
* ``unclear``: any other exception type, an expected type raised from inside
  numpy/pandas/scipy (the package did not validate), or a traceback out of the
  CLI;
* ``wrong``: the call succeeded but the result is invalid, or invalid input was
  accepted, or the input was modified;
* ``rejected_valid``: a clear error for input the oracle considers plainly
  valid (reported, counted apart: strictness is not a crash).

Coercion policy (which conversions of a value to a category are legitimate)
---------------------------------------------------------------------------
Values are compared with categories by *type family*: str (incl. numpy str),
bytes, bool (incl. numpy bool), int (numpy ints, pandas Int64), float,
missing (None, NaN, pd.NA, NaT: all the same missing marker).

* same family and equal: a match; the input must be accepted ("valid");
* int <-> float with equal values (1.0 vs 1): pandas turns integer columns
  with missing values into floats, so this coercion *may* be accepted or
  refused ("may");
* anything else (1.0 or "1" against the string "1" or int 1 respectively,
  True against 1, b"a" against "a", a missing value against a domain without
  a missing marker, an unknown value) must be refused: accepting it is a
  silent wrong result.

A bool mask given as ``sensitive`` over a bool domain is ambiguous (mask or
values), so the sensitive set is not checked then. An empty input (0 rows)
may be accepted (0 reports) or refused. Very large or tiny budgets (epsilon
>= 30, <= 1e-6) and thetas within 1e-9 of 0 or 1 may be refused; if
accepted, the channel must still be a valid (finite, normalised) channel that
satisfies its own privacy definition at that epsilon.
"""

import contextlib
import copy
import io
import json
import math
import os
import re
import tempfile
import traceback
import warnings

import numpy as np
import pandas as pd
from hypothesis import strategies as st

import sklearn_uldp
from sklearn_uldp import mechanisms as M

# The CLI may live in ``sklearn_uldp/cli/`` or ``sklearn_uldp/_cli.py``; look
# only next to the imported package (an editable install of another tree can
# otherwise provide a ``cli`` subpackage that does not belong to it).
if os.path.isdir(os.path.join(os.path.dirname(sklearn_uldp.__file__), "cli")):
    from sklearn_uldp.cli import main as cli_main
else:  # pragma: no cover - depends on the tree under test
    from sklearn_uldp._cli import main as cli_main

# ------------------------------------------------------------------ outcome
OK, CLEAR, UNCLEAR, WRONG, REJECTED_VALID = ("ok", "clear", "unclear", "wrong", "rejected_valid")


class Outcome:
    def __init__(self, klass, api, kind="", detail=""):
        self.klass, self.api, self.kind, self.detail = klass, api, kind, detail

    def __repr__(self):
        return f"Outcome({self.klass}, {self.api}, {self.kind}: {self.detail[:300]})"


class _Wrong(Exception):
    """Raised by the checks when a successful call returned an invalid result."""

    def __init__(self, kind, detail=""):
        super().__init__(f"{kind}: {detail}")
        self.kind, self.detail = kind, detail


_EXPECTED = (ValueError, TypeError)
# Frames an expected error may come from: the package, or scikit-learn's own
# parameter/input validation (whose messages name the problem).
_CLEAR_SOURCES = ("sklearn_uldp", os.sep + "sklearn" + os.sep + "utils")


# Messages of Python/numpy/pandas internals: an error carrying one of them was
# not validated by the package, even when a package frame raised it.
_RAW_MESSAGES = (
    "invalid literal for int()",
    "could not convert string to float",
    "setting an array element with a sequence",
    "unhashable type",
    "operands could not be broadcast",
    "object of type",
    "is not subscriptable",
    "cannot convert float NaN to integer",
    "unsupported operand type",
    "not supported between instances of",
    "'NoneType' object",
    "Cannot cast array data",
    "index out of bounds",
    "math domain error",
    "only integer scalar arrays",
    "truth value of an array",
)


def classify_exception(exc, api, valid):
    """Classify an exception raised by a call of ``api``."""
    name = type(exc).__name__
    frames = traceback.extract_tb(exc.__traceback__)
    origin = frames[-1].filename if frames else ""
    where = f"{os.path.basename(origin)}:{frames[-1].lineno}" if frames else "?"
    msg = str(exc).replace("\n", " ")
    raw = any(r in msg for r in _RAW_MESSAGES)
    if (
        isinstance(exc, _EXPECTED)
        and any(s in origin for s in _CLEAR_SOURCES)
        and len(msg) >= 15
        and not raw
    ):
        if valid == "valid":
            return Outcome(REJECTED_VALID, api, f"{name} on valid input", msg[:300])
        return Outcome(CLEAR, api, name, msg[:200])
    return Outcome(UNCLEAR, api, f"{name} at {where}", msg[:300])


# ------------------------------------------------------------ type families
def family(v):
    if v is None or v is pd.NA or v is pd.NaT:
        return "missing"
    if isinstance(v, (bool, np.bool_)):
        return "bool"
    if isinstance(v, (int, np.integer)):
        return "int"
    if isinstance(v, (float, np.floating)):
        return "missing" if math.isnan(v) else "float"
    if isinstance(v, (str, np.str_)):
        return "str"
    if isinstance(v, (bytes, np.bytes_)):
        return "bytes"
    return "other"


def match_code(v, domain):
    """(code, verdict) of value ``v`` against the domain (list): see the policy."""
    fv = family(v)
    may = None
    for i, d in enumerate(domain):
        fd = family(d)
        if fv == "missing" or fd == "missing":
            if fv == fd:
                return i, "valid"
            continue
        if fv == fd:
            if v == d:
                return i, "valid"
        elif {fv, fd} == {"int", "float"} and may is None and _same_number(v, d):
            may = i
    if may is not None:
        return may, "may"
    return -1, "reject"


def _same_number(a, b):
    """An int and a float of exactly the same value (2**62 + 1 is no float)."""
    f, i = (a, b) if family(a) == "float" else (b, a)
    f = float(f)
    return f.is_integer() and int(f) == int(i)


def combine(*verdicts):
    if "reject" in verdicts:
        return "reject"
    if "may" in verdicts:
        return "may"
    return "valid"


def domain_verdict(domain):
    """Whether a domain (as given by the user) is valid."""
    if isinstance(domain, (str, bytes)) or not isinstance(domain, list):
        return "reject"
    if any(isinstance(d, list) for d in domain):
        return "reject"
    if len(domain) < 2:
        return "reject"
    n_missing = sum(family(d) == "missing" for d in domain)
    if n_missing > 1:
        return "reject"
    seen = []
    for d in domain:
        if family(d) == "missing":
            continue
        for e in seen:
            if d == e:  # Python equality: 1 == 1.0 == True are duplicates
                return "reject"
        seen.append(d)
    return "valid"


# --------------------------------------------------------------- snapshots
def snapshot(obj):
    """A value-level fingerprint used to detect modified inputs."""
    if isinstance(obj, pd.DataFrame):
        return (
            "df",
            list(map(str, obj.dtypes)),
            repr(list(obj.columns)),
            repr(obj.index.tolist()),
            tuple(repr(obj[c].tolist()) for c in obj.columns),
            repr(obj.attrs),
        )
    if isinstance(obj, pd.Series):
        return ("s", str(obj.dtype), repr(obj.name), repr(obj.index.tolist()), repr(obj.tolist()))
    if isinstance(obj, np.ndarray):
        return ("a", obj.dtype.str, obj.shape, repr(obj.tolist()))
    if isinstance(obj, dict):
        return ("d", tuple((repr(k), snapshot(v)) for k, v in obj.items()))
    if isinstance(obj, (list, tuple)):
        return (type(obj).__name__, tuple(snapshot(v) for v in obj))
    if callable(obj):
        return ("f", id(obj))
    return ("v", repr(obj))


# ------------------------------------------------------------ strategies
_SHORT = st.text(
    alphabet=st.sampled_from(list("abcxyz019 _,;|\"'é日本🙂\u200b\t")), min_size=0, max_size=5
)

EPSILONS_VALID = [0.1, 0.5, 1.0, 2.0, 4.0, np.float32(1.5), np.int64(2), 3]
EPSILONS_EDGE = [
    1e-300,
    1e-12,
    1e-6,
    30.0,
    36.0,
    40.0,
    100.0,
    709.0,
    709.8,
    710.0,
    1e10,
    2.0**70,
    1e308,
]
EPSILONS_BAD = [
    0,
    0.0,
    -1.0,
    -1e-9,
    float("nan"),
    float("inf"),
    -float("inf"),
    True,
    "1.0",
    None,
    [1.0],
    complex(1, 0),
]


def eps_verdict(e):
    if isinstance(e, (bool, np.bool_)) or not isinstance(e, (int, float, np.integer, np.floating)):
        return "reject"
    e = float(e)
    if not (e > 0) or math.isinf(e):
        return "reject"
    if e >= 30 or e <= 1e-6:
        return "may"
    return "valid"


@st.composite
def epsilons(draw, fuzz=True):
    kind = draw(st.sampled_from(["valid"] * 2 + ["edge"] * 2 + ["bad"])) if fuzz else "valid"
    pool = {"valid": EPSILONS_VALID, "edge": EPSILONS_EDGE, "bad": EPSILONS_BAD}[kind]
    return draw(st.sampled_from(pool))


VALID_DOMAIN_KINDS = [
    "str",
    "str",
    "str",
    "int",
    "int",
    "float",
    "bool",
    "bytes",
    "mixed",
    "unicode",
    "long",
    "missing",
    "intfloat",
]
BAD_DOMAIN_KINDS = ["dup", "dup_num", "empty", "single", "nested", "string"]


@st.composite
def domains(draw, fuzz=True):
    """A domain (list of categories), valid unless ``fuzz`` picks a bad one."""
    kind = draw(st.sampled_from(VALID_DOMAIN_KINDS + (BAD_DOMAIN_KINDS if fuzz else [])))
    k = draw(st.integers(2, 6))
    if kind == "str":
        dom = draw(st.lists(_SHORT, min_size=k, max_size=k, unique=True))
        if draw(st.integers(0, 3)) == 0:  # numeric-looking labels, as read from a CSV
            dom = ["1", "2", "10", "1.5", "0"][:k]
    elif kind == "int":
        start = draw(st.sampled_from([0, 1, -3, 2**62]))
        if draw(st.booleans()):
            dom = list(range(start, start + k))
        else:
            dom = draw(st.lists(st.integers(-(10**6), 10**6), min_size=k, max_size=k, unique=True))
    elif kind == "float":
        dom = draw(
            st.lists(
                st.sampled_from([0.5, 1.5, -2.25, 1e-300, 3.0, 1e300]),
                min_size=2,
                max_size=k,
                unique=True,
            )
        )
    elif kind == "bool":
        dom = [False, True]
    elif kind == "intfloat":  # ints and non-integer floats in one domain
        dom = [1, 2.5, 3, -0.5, 7][:k]
    elif kind == "bytes":
        dom = [b"a", b"b", b"\xff"][: max(2, min(k, 3))]
    elif kind == "mixed":
        dom = ["a", 1, 2.5, b"x"][: max(2, min(k, 4))]
    elif kind == "unicode":
        dom = ["é", "日本", "🙂", "", "\u200b", "a|b", "⊥home"][: k + 1]
    elif kind == "long":
        dom = [c * 10_000 for c in "abcdef"[:k]]
    elif kind == "missing":
        dom = [f"v{i}" for i in range(k - 1)] + [draw(st.sampled_from([None, float("nan")]))]
    elif kind == "dup":
        dom = ["a", "b", "a"]
    elif kind == "dup_num":
        dom = draw(
            st.sampled_from([[1, 1.0, 2], [True, 1, 0], [None, float("nan"), "a"], [0, False]])
        )
    elif kind == "empty":
        dom = []
    elif kind == "single":
        dom = ["a"]
    elif kind == "nested":
        dom = [["a", "b"], ["c", "d"]]
    else:  # a bare string
        dom = "abc"
    if (
        draw(st.booleans())
        and isinstance(dom, list)
        and len(dom) > 1
        and kind not in ("dup", "dup_num")
    ):
        dom = dom[::-1] if draw(st.booleans()) else dom
    return dom


def _perturbed(draw, value, domain):
    """A value perturbed in type or replaced by a foreign one."""
    how = draw(
        st.sampled_from(
            ["missing", "out", "str", "float", "bool", "bytes", "int", "npstr", "parse"]
        )
    )
    if how == "parse" and family(value) == "str":
        # "1" -> 1 or 1.0: a number is not the string category "1"
        for conv in (int, float):
            try:
                return conv(value)
            except ValueError:
                continue
        return 1.0
    if how == "missing":
        return draw(st.sampled_from([None, float("nan"), pd.NA]))
    if how == "out":
        return draw(st.sampled_from(["zz_out", 987654, 3.25, b"zz", "", "a" * 20_000]))
    if how == "str":
        return str(value)
    if how == "float" and family(value) in ("int", "bool"):
        return float(value)
    if how == "bool" and family(value) == "int" and value in (0, 1):
        return bool(value)
    if how == "bytes" and family(value) == "str":
        return value.encode("utf-8")
    if how == "int" and family(value) == "float" and float(value).is_integer():
        return int(value)
    if how == "npstr" and family(value) == "str":
        return np.str_(value)
    return value


@st.composite
def columns(draw, domain, *, allow_bad=True):
    """Values for one column drawn from ``domain`` (list), maybe perturbed."""
    n = draw(st.sampled_from([0, 1, 2, 3, 5, 8, 13, 30]))
    pool = (
        domain
        if isinstance(domain, list) and domain and all(not isinstance(d, list) for d in domain)
        else ["a", "b"]
    )
    values = [draw(st.sampled_from(pool)) for _ in range(n)]
    if allow_bad and n and draw(st.integers(0, 2)) == 0:
        for i in draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=3)):
            values[i] = _perturbed(draw, values[i], pool)
    return values


def container_of(values, how, name="c"):
    """Wrap a list of values as a user would pass them."""
    if how == "object":
        return np.array(values + [None], dtype=object)[:-1].reshape(-1, 1)
    if how == "native":
        try:
            arr = np.array(values) if values else np.array([], dtype=object)
        except (TypeError, ValueError):  # e.g. non-ASCII bytes next to str
            arr = np.array(values + [None], dtype=object)[:-1]
        return arr.reshape(-1, 1)
    if how == "list":
        return [[v] for v in values]
    if how == "1d":
        return np.array(values + [None], dtype=object)[:-1]
    if how == "series":
        return pd.Series(values, dtype=object, name=name)
    if how == "two_columns":
        return pd.DataFrame(
            {name: pd.Series(values, dtype=object), "other": pd.Series(values, dtype=object)}
        )
    if how == "sparse":
        import scipy.sparse as sp

        try:
            return sp.csr_matrix(np.asarray(values, dtype=float).reshape(-1, 1))
        except (TypeError, ValueError):
            return sp.csr_matrix(np.zeros((len(values), 1)))
    dtype = {
        "df_arrow": "string[pyarrow]",
        "df_object": object,
        "df_category": "category",
        "df_Int64": "Int64",
        "df_string": "string",
        "df_boolean": "boolean",
        "df_float": float,
        "df_infer": None,
    }[how]
    try:
        col = pd.Series(values, dtype=dtype)
    except (TypeError, ValueError):  # the dtype cannot hold these values
        col = pd.Series(values, dtype=object)
    return pd.DataFrame({name: col})


CONTAINERS = [
    "object",
    "object",
    "native",
    "list",
    "1d",
    "series",
    "two_columns",
    "sparse",
    "df_arrow",
    "df_object",
    "df_category",
    "df_Int64",
    "df_string",
    "df_boolean",
    "df_float",
    "df_infer",
]


def container_values(X):
    """The values the user meant to pass, one per row, or None if ambiguous."""
    if isinstance(X, pd.DataFrame):
        if X.shape[1] != 1:
            return None
        return list(X.iloc[:, 0].astype(object))
    if isinstance(X, pd.Series):
        return list(X.astype(object))
    if isinstance(X, np.ndarray):
        if X.ndim != 2 or X.shape[1] != 1:
            return None
        return list(X[:, 0])
    if isinstance(X, list):
        return [r[0] for r in X]
    return None


@st.composite
def sensitive_for(draw, domain, fuzz=True):
    """A sensitive specification over ``domain``."""
    k = len(domain)
    kind = draw(
        st.sampled_from(
            ["subset"] * 4
            + ["mask", "callable", "all"]
            + (
                ["empty", "unknown", "dup", "mask_false", "mask_len", "coerced", "string"]
                + ["set", "unhashable"]
                if fuzz
                else []
            )
        )
    )
    if kind == "subset":
        idx = sorted(draw(st.lists(st.integers(0, k - 1), min_size=1, max_size=k, unique=True)))
        return [domain[i] for i in idx]
    if kind == "mask":
        m = draw(st.lists(st.booleans(), min_size=k, max_size=k))
        m[0] = True
        return m
    if kind == "callable":
        # The predicate sees the fitted categories_, which may hold 1.0 for
        # the given 1 (int <-> float is a "may" coercion of the policy).
        first = domain[0]
        return lambda c, first=first: match_code(c, [first])[1] in ("valid", "may")
    if kind == "all":
        return list(domain)
    if kind == "empty":
        return []
    if kind == "unknown":
        return [domain[0], "zz_not_a_category"]
    if kind == "dup":
        return [domain[0], domain[0]]
    if kind == "mask_false":
        return [False] * k
    if kind == "mask_len":
        return [True] * (k + 1)
    if kind == "coerced":
        v = domain[0]
        return [str(v) if family(v) != "str" else v.encode()]
    if kind == "set":  # a set of values (issue 20: "unhashable type: 'set'")
        return {domain[0]} if family(domain[0]) != "missing" else [domain[0]]
    if kind == "unhashable":
        return [[domain[0]]]
    return domain[0] if family(domain[0]) == "str" else [domain[0]]


def sensitive_verdict(sens, domain):
    """(expected mask or None, verdict) for a sensitive specification."""
    k = len(domain)
    if callable(sens):
        mask = np.array([bool(sens(c)) for c in domain])
        return (mask, "valid") if mask.any() else (None, "reject")
    if isinstance(sens, (str, bytes)):
        # A bare label: taking it as [label] or refusing it are both fine.
        mask, v = sensitive_verdict([sens], domain)
        return mask, combine(v, "may")
    if isinstance(sens, set):
        mask, v = sensitive_verdict(list(sens), domain)
        return mask, combine(v, "may")  # a set of values, or refused clearly
    if not isinstance(sens, list):
        return None, "may"
    if any(isinstance(s, (list, dict, set)) for s in sens):
        return None, "reject"
    if all(family(d) == "bool" for d in domain) and all(family(s) == "bool" for s in sens):
        return None, "may"  # mask or values: ambiguous on a bool domain
    if len(sens) == k and sens and all(isinstance(s, bool) for s in sens):
        mask = np.array(sens)
        return (mask, "valid") if mask.any() else (None, "reject")
    mask = np.zeros(k, bool)
    verdict = "valid"
    seen = set()
    for s in sens:
        code, v = match_code(s, domain)
        if code < 0 or code in seen:
            return None, "reject"
        seen.add(code)
        mask[code] = True
        verdict = combine(verdict, v)
    if not mask.any():
        return None, "reject"
    return mask, verdict


# --------------------------------------------------------- mechanism cases
MECHANISM_NAMES = [
    "RandomizedResponse",
    "UtilityOptimizedRR",
    "RAPPOR",
    "UtilityOptimizedRAPPOR",
    "UtilityOptimizedOUE",
    "NonPrivate",
    "BinaryOptimalResponse",
    "HadamardResponse",
    "HighLowHadamardResponse",
    "BlockHadamardResponse",
    "UtilityOptimizedBlockDesign",
    "UtilityOptimizedSubsetSelection",
    "PersonalizedMechanism",
]
ULDP = {
    "UtilityOptimizedRR",
    "UtilityOptimizedRAPPOR",
    "UtilityOptimizedOUE",
    "UtilityOptimizedBlockDesign",
    "UtilityOptimizedSubsetSelection",
    "PersonalizedMechanism",
}
PURE_LDP = {"RandomizedResponse", "RAPPOR", "HadamardResponse"}
RANDOM_STATES = [0, 0, 0, 7, None, "gen", "seedseq", "randomstate", -1, 1.5, "secure"]


def _random_state(rs):
    return (
        {
            "gen": lambda: np.random.default_rng(1),
            "seedseq": lambda: np.random.SeedSequence(3),
            "randomstate": lambda: np.random.RandomState(2),
        }.get(rs, lambda: rs)()
        if isinstance(rs, str)
        else rs
    )


SAFE_CONTAINERS = ["object", "list", "df_object", "series", "df_category", "native"]
FOCUS = ["domain", "column", "column", "params", "container", "none"]


@st.composite
def mechanism_cases(draw, names=None):
    """A mechanism, its parameters and one input; ``focus`` is what is fuzzed."""
    name = draw(st.sampled_from(names or MECHANISM_NAMES))
    focus = draw(st.sampled_from(FOCUS + ["all"]))
    fz = {f: focus in (f, "all") for f in ("domain", "column", "params", "container")}
    domain = draw(domains(fuzz=fz["domain"]))
    if name == "BinaryOptimalResponse" and draw(st.integers(0, 3)):
        domain = domain[:2] if isinstance(domain, list) and len(domain) > 2 else domain
    params = {"categories": domain}
    if draw(st.integers(0, 6)) == 0 and name != "PersonalizedMechanism":
        params["categories"] = "auto"
    P = fz["params"]
    if name not in ("NonPrivate", "BinaryOptimalResponse"):
        params["epsilon"] = draw(epsilons(P))
    if name == "BinaryOptimalResponse":
        inf = [st.just(float("inf"))] if P else []
        params["epsilon_12"] = draw(st.one_of(epsilons(P), *inf))
        params["epsilon_21"] = draw(st.one_of(epsilons(P), *inf))
    okdom = domain_verdict(domain) == "valid"
    if name in ULDP or name == "HighLowHadamardResponse":
        if okdom:
            params["sensitive"] = draw(sensitive_for(domain, P))
        else:
            params["sensitive"] = ["a"]
        if name == "PersonalizedMechanism" and P and draw(st.integers(0, 4)) == 0:
            params["sensitive"] = None
    if name in ("RAPPOR", "UtilityOptimizedRAPPOR") or (
        name == "PersonalizedMechanism" and draw(st.booleans())
    ):
        params["theta"] = draw(
            st.sampled_from(
                [None, None, 0.5, 0.25, 0.9]
                + (["optimal"] if name == "UtilityOptimizedRAPPOR" else [])
                + ([1e-12, 1 - 1e-12, 0.0, 1.0, 1.5, -0.1, float("nan"), "0.5"] if P else [])
            )
        )
    if name in (
        "RAPPOR",
        "UtilityOptimizedRAPPOR",
        "UtilityOptimizedOUE",
        "UtilityOptimizedBlockDesign",
    ):
        params["sparse_output"] = draw(st.sampled_from([False, True, False] + [1] * P))
    if name == "HadamardResponse":
        params["block_size"] = draw(
            st.sampled_from(
                [None, None, 2, 4, 8, "auto"] + ([3, 1, 0, -2, 2**40, 2.0] if P else [])
            )
        )
    if name == "BlockHadamardResponse":
        if okdom:
            k = len(domain)
            params["blocks"] = draw(
                st.sampled_from(
                    [
                        [i % 2 for i in range(k)],
                        [0] * k,
                        list(range(k)),
                        [[domain[i] for i in range(0, k, 2)], [domain[i] for i in range(1, k, 2)]],
                    ]
                    + (
                        [[[domain[0]]], [0] * (k + 1), [-1] * k, [[domain[0]], [domain[0]]]]
                        + ["callable_list", "callable_label"]
                        if P
                        else []
                    )
                )
            )
        else:
            params["blocks"] = [0, 1]
    if name == "UtilityOptimizedBlockDesign":
        params["subset_size"] = draw(
            st.sampled_from([1, 1, 2, 3, "auto"] + ([0, -1, 100, 2.5] if P else []))
        )
    if name == "UtilityOptimizedSubsetSelection":
        # "optimal" at extreme budgets overflowed (issue 20).
        params["subset_size"] = draw(
            st.sampled_from(["optimal", "optimal", 1, 2] + ([0, -1, 100, 2.5] if P else []))
        )
    if params.get("blocks") == "callable_list":
        params["blocks"] = lambda c: [c]
    elif params.get("blocks") == "callable_label":
        params["blocks"] = lambda c: repr(c)[:1]
    if name == "PersonalizedMechanism":
        params["mechanism"] = draw(st.sampled_from(["urr", "urap", "urr"] + ["zzz"] * P))
        params["n_reports"] = draw(st.sampled_from([1, 1, 2] + [0] * P))
        params["tags"] = draw(st.sampled_from([("home",), ("home", "work")] + [()] * P))
    if name != "NonPrivate":
        params["random_state"] = _random_state(
            draw(st.sampled_from(RANDOM_STATES if P else RANDOM_STATES[:6]))
        )
    values = draw(columns(domain, allow_bad=fz["column"]))
    how = draw(st.sampled_from(CONTAINERS if fz["container"] else SAFE_CONTAINERS))
    if name == "PersonalizedMechanism":
        how = "pum"
        tags = {
            t: [
                draw(
                    st.sampled_from(
                        (domain if okdom else ["a"]) + [None] + ["zz_out"] * fz["column"]
                    )
                )
                for _ in values
            ]
            for t in params["tags"]
        }
        extra = (
            [draw(st.sampled_from(domain if okdom else ["a"])) for _ in values]
            if params["n_reports"] == 2
            else None
        )
        return {
            "api": name,
            "focus": focus,
            "params": params,
            "values": values,
            "how": how,
            "tags": tags,
            "extra": extra,
            "pandas_out": draw(st.booleans()),
            "fit_on_X": True,
        }
    return {
        "api": name,
        "focus": focus,
        "params": params,
        "values": values,
        "how": how,
        "pandas_out": draw(st.integers(0, 3)) == 0,
        "fit_on_X": draw(st.booleans()),
    }


def _build_X(case):
    if case["how"] == "pum":
        data = {"v": pd.Series(case["values"], dtype=object)}
        if case["extra"] is not None:
            data["v2"] = pd.Series(case["extra"], dtype=object)
        for t, vals in case["tags"].items():
            data[t] = pd.Series(vals, dtype=object)
        return pd.DataFrame(data)
    return container_of(case["values"], case["how"])


def _param_verdict(case):
    """Verdict on the mechanism's parameters and the expected sensitive mask."""
    name, p = case["api"], case["params"]
    verdicts = []
    mask = None
    dom = p["categories"]
    if dom == "auto":
        verdicts.append("may")
    else:
        verdicts.append(domain_verdict(dom))
    if "epsilon" in p:
        verdicts.append(eps_verdict(p["epsilon"]))
    if name == "BinaryOptimalResponse":
        e1, e2 = p["epsilon_12"], p["epsilon_21"]
        v1 = "may" if isinstance(e1, float) and math.isinf(e1) and e1 > 0 else eps_verdict(e1)
        v2 = "may" if isinstance(e2, float) and math.isinf(e2) and e2 > 0 else eps_verdict(e2)
        verdicts += [v1, v2]
        if isinstance(dom, list) and len(dom) != 2:
            verdicts.append("reject")
    if "sensitive" in p and verdicts[0] == "valid":
        if p["sensitive"] is None and name == "PersonalizedMechanism":
            mask, v = np.zeros(len(dom), bool), "valid"
        else:
            mask, v = sensitive_verdict(p["sensitive"], dom)
        if (
            name == "PersonalizedMechanism"
            and mask is None
            and v == "reject"
            and (
                p["sensitive"] == []
                or (
                    isinstance(p["sensitive"], list)
                    and len(p["sensitive"]) == len(dom)
                    and not any(p["sensitive"])
                )
            )
        ):
            v, mask = "may", None  # PUM: an empty common X_S is documented
        verdicts.append(v)
    if "theta" in p:
        t = p["theta"]
        if t is None or t == "optimal":
            pass
        elif isinstance(t, str) or isinstance(t, bool) or not (0 < t < 1):
            verdicts.append("reject")
        elif t < 1e-9 or t > 1 - 1e-9:
            verdicts.append("may")
    if "sparse_output" in p and not isinstance(p["sparse_output"], bool):
        verdicts.append("reject")
    if p.get("sparse_output") and case.get("pandas_out"):
        verdicts.append("may")  # sparse reports cannot be a DataFrame
    if "block_size" in p:
        b = p["block_size"]
        if b is None or b == "auto":
            pass
        elif isinstance(b, float) or b < 2:
            verdicts.append("reject")
        elif b & (b - 1) or b > 2**20:
            verdicts.append("may")  # not a power of two / absurdly large
    if "blocks" in p and verdicts[0] == "valid":
        b, k = p["blocks"], len(dom)
        if callable(b):
            # a block label per category; a list is not a label (issue 20)
            verdicts.append("reject" if isinstance(b(dom[0]), list) else "may")
        elif b and isinstance(b[0], list):
            flat = [x for blk in b for x in blk]
            codes = [match_code(x, dom)[0] for x in flat]
            if sorted(codes) != list(range(k)):
                verdicts.append("reject")
        elif len(b) != k:
            verdicts.append("reject")
        else:
            verdicts.append("may")  # block labels are arbitrary; one block is odd
    if "subset_size" in p:
        s = p["subset_size"]
        if s in ("auto", "optimal"):
            pass
        elif isinstance(s, float) or s < 1:
            verdicts.append("reject")
        elif mask is not None and s > max(1, int((~mask).sum())) or s > 1:
            verdicts.append("may")
    if name == "PersonalizedMechanism":
        if p["mechanism"] not in ("urr", "urap"):
            verdicts.append("reject")
        if p["n_reports"] < 1:
            verdicts.append("reject")
        if isinstance(dom, list) and any(isinstance(d, str) and d.startswith("⊥") for d in dom):
            verdicts.append("reject")
        if not p["tags"]:
            verdicts.append("may")
        if isinstance(dom, list) and any(family(d) == "missing" for d in dom):
            # Missing means "no value" in the PUM's tag columns: refusing a
            # missing category in the domain is legitimate.
            verdicts.append("may")
    rs = p.get("random_state", 0)
    if isinstance(rs, float) or (isinstance(rs, int) and rs < 0):
        verdicts.append("reject")
    if isinstance(rs, str):
        verdicts.append("may")  # "secure": a new option of issue 11
    return combine(*verdicts), mask


def _column_verdict(case, domain):
    """Verdict on the input column and the expected codes (list or None)."""
    how = case["how"]
    values = case["values"]
    if how == "two_columns" and case["api"] != "PersonalizedMechanism" and case["fit_on_X"]:
        # Mechanisms take several columns of one domain (issue 13): two
        # copies of the column are valid exactly when the column is (when
        # fitted on them; fitted without data, a mechanism has one column).
        return _column_verdict({**case, "how": "object"}, domain)
    if how == "1d" and case["api"] != "PersonalizedMechanism":
        # A 1-D array is one column (issue 13); refusing it is fine too.
        verdict, codes = _column_verdict({**case, "how": "object"}, domain)
        return combine(verdict, "may"), codes
    if how in ("two_columns", "1d", "sparse"):
        return "reject", None
    if not values:
        return "may", []
    X = _build_X(case)
    if how == "pum":
        seen = list(values) + (case["extra"] or [])
        verdict = "valid"
        codes = []
        for v in seen:
            c, vv = match_code(v, domain)
            codes.append(c)
            verdict = combine(verdict, vv)
        if case["extra"] is not None or any(
            combine(
                *[match_code(t, domain)[1] for t in vals if family(t) != "missing"] or ["valid"]
            )
            == "reject"
            for vals in case["tags"].values()
        ):
            verdict = combine(verdict, "may" if verdict != "reject" else "reject")
            if any("zz_out" in vals for vals in case["tags"].values()):
                verdict = "reject"
        return verdict, None  # PUM reports are over Z, not X
    got = container_values(X)
    verdict = "valid"
    codes = []
    for orig, v in zip(values, got, strict=False):
        c, vv = match_code(v, domain)
        if family(orig) != family(v) and not (family(orig) == "missing" and family(v) == "missing"):
            # The container itself converted the value (e.g. a native numpy
            # array turns [1, "a"] into strings): the user asked for this.
            vv = combine(vv, "may")
        codes.append(c)
        verdict = combine(verdict, vv)
    if how == "list" and len({family(v) for v in values}) > 1:
        # A list of lists goes through numpy, which turns mixed values into
        # strings ([b"", "a"] -> ["", "a"]): the user asked numpy for that, so
        # the converted values decide, and refusing them is legitimate too.
        try:
            conv = np.array(values)
        except (TypeError, ValueError):
            conv = None
        if conv is not None and conv.dtype.kind in "US":
            verdict = combine(
                *[
                    "may"
                    if match_code(v.item() if hasattr(v, "item") else v, domain)[0] >= 0
                    else "reject"
                    for v in conv
                ]
            )
        else:
            verdict = combine(verdict, "may")
    if how == "native" and X.dtype.kind in "USO" and len({family(v) for v in values}) > 1:
        verdict = combine(verdict, "may")
    return verdict, codes


# ------------------------------------------------------------ result checks
def _dense(reports):
    if hasattr(reports, "toarray"):
        return np.asarray(reports.toarray())
    if isinstance(reports, pd.DataFrame):
        return reports.to_numpy()
    return np.asarray(reports)


def _output_codes(channel, R):
    """Output index of every report in ``channel``'s output set (or raise _Wrong)."""
    k = channel.n_categories
    if getattr(channel, "reports_are_categories", False):
        if R.ndim != 2 or R.shape[1] != 1:
            raise _Wrong("report shape", f"{R.shape} for one-symbol reports")
        labels = list(channel.output_labels())
        out = []
        for r in R[:, 0]:
            c, v = match_code(r, labels)
            if c < 0:
                raise _Wrong("report outside output domain", f"{r!r} not in {labels[:8]!r}")
            out.append(c)
        return np.array(out)
    if not isinstance(channel, M.UnaryEncodingChannel):
        vals = R[:, 0]
        if vals.dtype.kind not in "iu":
            raise _Wrong("report dtype", f"codes of dtype {vals.dtype}")
        if vals.size and (vals.min() < 0 or vals.max() >= channel.n_outputs):
            raise _Wrong(
                "report outside output domain",
                f"codes {vals.min()}..{vals.max()}, n_outputs={channel.n_outputs}",
            )
        return vals.astype(int)
    # bit vectors
    if R.ndim != 2 or R.shape[1] != k:
        raise _Wrong("report shape", f"{R.shape} for {k} categories")
    if R.size and not np.isin(R, (0, 1)).all():
        raise _Wrong("report outside output domain", "bits not in {0, 1}")
    if channel.n_outputs <= 4096:
        labels = np.asarray(channel.output_labels()).reshape(channel.n_outputs, -1)
        lookup = {tuple(int(b) for b in row): i for i, row in enumerate(labels)}
        out = []
        for row in R.astype(int):
            t = tuple(row.tolist())
            if t not in lookup:
                raise _Wrong("report outside output domain", f"bit vector {t}")
            out.append(lookup[t])
        return np.array(out)
    return None


def check_channel(channel, epsilon, mech_name):
    """The realized channel is a channel and satisfies its definition at epsilon."""
    k = channel.n_categories
    if k > 12 or channel.n_outputs > 4096:
        return None
    Q = np.asarray(channel.matrix(), dtype=float)
    if Q.shape != (k, channel.n_outputs):
        raise _Wrong("channel matrix shape", f"{Q.shape}")
    if not np.isfinite(Q).all() or (Q < 0).any():
        raise _Wrong("channel not finite/negative", f"eps={epsilon}")
    if not np.allclose(Q.sum(axis=1), 1.0, atol=1e-9):
        raise _Wrong("channel rows do not sum to 1", f"{Q.sum(axis=1)}")
    if epsilon is not None and math.isfinite(epsilon):
        # In log space: exp(epsilon) overflows from epsilon ~ 709.8.
        bound = epsilon * (1 + 1e-9) + 1e-12
        if mech_name in PURE_LDP:
            cols = np.ones(Q.shape[1], bool)
        elif mech_name in ULDP:
            smask = np.asarray(channel.sensitive_mask, bool)
            cols = (Q[smask] > 0).any(axis=0) if smask.any() else np.zeros(Q.shape[1], bool)
        else:
            cols = np.zeros(Q.shape[1], bool)
        for j in np.flatnonzero(cols):
            col = Q[:, j]
            if col.max() == 0:
                continue
            if col.min() <= 0 or math.log(col.max()) - math.log(col.min()) > bound:
                raise _Wrong(
                    "channel violates its epsilon",
                    f"{mech_name} eps={epsilon}: output {j} ratio {col.max()}/{col.min()}",
                )
    return Q


def _check_mechanism_result(case, mech, X, reports, codes, mask):
    name, p = case["api"], case["params"]
    n = len(case["values"])
    channel = mech.channel_
    from sklearn_uldp.mechanisms import get_channel

    if get_channel(reports) != channel:
        raise _Wrong("reports carry another channel", repr(get_channel(reports)))
    R = _dense(reports)
    if R.shape[0] != n:
        raise _Wrong("wrong number of reports", f"{R.shape[0]} for {n} rows")
    if case["pandas_out"]:
        if not isinstance(reports, pd.DataFrame):
            raise _Wrong("set_output ignored", type(reports).__name__)
        if isinstance(X, (pd.DataFrame, pd.Series)) and not reports.index.equals(X.index):
            raise _Wrong("index not kept", "")
    dom = p["categories"]
    if dom != "auto" and name != "PersonalizedMechanism":
        got = list(channel.categories)
        if len(got) != len(dom) or any(match_code(g, dom)[0] != i for i, g in enumerate(got)):
            raise _Wrong("channel categories differ from the domain", f"{got[:6]!r} vs {dom[:6]!r}")
    if mask is not None and name != "PersonalizedMechanism":
        got = np.asarray(channel.sensitive_mask, bool)
        if got.shape != mask.shape or (got != mask).any():
            raise _Wrong("sensitive set differs", f"{got} vs {mask}")
    eps = None
    if "epsilon" in p:
        eps = float(p["epsilon"]) / (
            p.get("n_reports", 1) if name == "PersonalizedMechanism" else 1
        )
    Q = check_channel(channel, eps, name)
    if name == "PersonalizedMechanism":
        # One report per value column (n_reports of them), each over Z.
        t = p.get("n_reports", 1)
        width = R.shape[1] // t if R.ndim == 2 and t and R.shape[1] % t == 0 else -1
        if width < 1:
            raise _Wrong("report shape", f"{R.shape} for n_reports={t}")
        for j in range(t):
            _output_codes(channel, R[:, j * width : (j + 1) * width])
        return
    if case["how"] == "two_columns":
        # One block of report columns per input column, each the column's
        # reports under the same channel.
        if R.ndim != 2 or R.shape[1] % 2:
            raise _Wrong("report shape", f"{R.shape} for two input columns")
        width = R.shape[1] // 2
        for j in range(2):
            _check_output_codes(name, channel, R[:, j * width : (j + 1) * width], codes, Q, n)
        return
    _check_output_codes(name, channel, R, codes, Q, n)


def _check_output_codes(name, channel, R, codes, Q, n):
    out = _output_codes(channel, R)
    if name == "NonPrivate" and codes is not None and out is not None:
        if list(out) != list(codes):
            raise _Wrong("NonPrivate changed values", f"{out} vs {codes}")
    if Q is not None and out is not None and codes is not None and len(codes) == n:
        for x, y in zip(codes, out, strict=False):
            if x >= 0 and Q[x, y] <= 0:
                raise _Wrong("report impossible under the channel", f"input code {x} -> output {y}")


def run_mechanism_case(case):
    api = case["api"]
    cls = getattr(M, api)
    X = _build_X(case)
    params = case["params"]
    snap_X, snap_p = snapshot(X), snapshot({k: v for k, v in params.items() if k != "random_state"})
    pverdict, mask = _param_verdict(case)
    dom = params["categories"]
    if dom == "auto":
        cverdict, codes = "may", None
    elif domain_verdict(dom) == "valid":
        cverdict, codes = _column_verdict(case, dom)
    else:
        cverdict, codes = "reject", None
    if not case["fit_on_X"] and api != "PersonalizedMechanism" and dom != "auto":
        fit_arg = None
    else:
        fit_arg = X
    verdict = combine(pverdict, cverdict)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            mech = cls(**params)
            if case["pandas_out"]:
                mech.set_output(transform="pandas")
            mech.fit(fit_arg)
            reports = mech.transform(X)
        except _Wrong:
            raise
        except Exception as exc:  # noqa: BLE001 - the point of fuzzing
            out = classify_exception(exc, api, verdict)
            if snapshot(X) != snap_X:
                return Outcome(WRONG, api, "input modified", repr(type(X)))
            return out
    try:
        if (
            snapshot(X) != snap_X
            or snapshot({k: v for k, v in params.items() if k != "random_state"}) != snap_p
        ):
            raise _Wrong("input modified", "X or a parameter changed")
        if verdict == "reject":
            raise _Wrong("invalid input accepted", _why_reject(case))
        _check_mechanism_result(case, mech, X, reports, codes, mask)
    except _Wrong as w:
        return Outcome(WRONG, api, w.kind, w.detail)
    except Exception as exc:  # noqa: BLE001 - e.g. channel.matrix() crashed
        return classify_exception(exc, api + ".channel", "may")
    case["_mech"], case["_reports"] = mech, reports
    return Outcome(OK, api)


def _why_reject(case):
    p = case["params"]
    parts = []
    pv, _ = _param_verdict(case)
    if pv == "reject":
        parts.append(
            "params "
            + repr(
                {
                    k: (v if not isinstance(v, list) or len(repr(v)) < 80 else repr(v)[:80])
                    for k, v in p.items()
                    if k != "random_state"
                }
            )[:300]
        )
    dom = p["categories"]
    if dom != "auto" and domain_verdict(dom) == "valid":
        cv, _ = _column_verdict(case, dom)
        if cv == "reject":
            if case["how"] in ("two_columns", "1d", "sparse"):
                parts.append(f"X shape ({case['how']})")
            else:
                X = _build_X(case)
                vals = container_values(X) or []
                bad = [v for v in vals if match_code(v, dom)[1] == "reject"]
                if case["how"] == "pum":
                    bad = bad + [t for vals in case["tags"].values() for t in vals if t == "zz_out"]
                parts.append(
                    f"values {[repr(b)[:40] for b in bad[:3]]} ({case['how']}) "
                    f"vs domain {repr(dom)[:80]}"
                )
    return "; ".join(parts)


# ------------------------------------------------------------ estimators
ESTIMATORS = [
    "EmpiricalEstimator",
    "EmpiricalEstimator:simplex",
    "EmpiricalEstimator:clip",
    "ThresholdEstimator",
    "EMEstimator",
]

SPEC_TAMPER = [
    ("epsilon", 0),
    ("epsilon", -1.0),
    ("epsilon", "1.0"),
    ("epsilon", float("nan")),
    ("epsilon", float("inf")),
    ("epsilon", True),
    ("epsilon", None),
    ("epsilon", 1e-320),
    ("theta", 1.5),
    ("theta", 0.0),
    ("theta", "x"),
    ("theta", 1.0),
    ("categories", []),
    ("categories", ["a"]),
    ("categories", "dup"),
    ("categories", [["a", "b"]]),
    ("sensitive", "all_false"),
    ("sensitive", "short"),
    ("sensitive", "labels"),
    ("mechanism", "zzz"),
    ("mechanism", None),
    ("drop", "epsilon"),
    ("drop", "categories"),
    ("block_size", 3),
    ("blocks", "short"),
    ("subset_size", 0),
    ("epsilon_12", -1.0),
    ("extra", "unknown_key"),
]

ESTIMATOR_PARAMS = {  # base name -> [(params, verdict)]
    "ThresholdEstimator": [
        ({"alpha": a}, v)
        for a, v in [
            (0.05, "valid"),
            (0.5, "valid"),
            (1e-300, "may"),
            (1 - 1e-16, "may"),
            (0, "reject"),
            (1, "reject"),
            (-0.1, "reject"),
            (1.5, "reject"),
            (float("nan"), "reject"),
            ("0.05", "reject"),
            (None, "reject"),
        ]
    ],
    "EMEstimator": [
        ({"tol": t}, v)
        for t, v in [
            ("auto", "valid"),
            (1e-6, "valid"),
            (1e-300, "may"),
            (0, "reject"),
            (-1.0, "reject"),
            (float("nan"), "reject"),
            (float("inf"), "may"),
            ("x", "reject"),
        ]
    ]
    + [
        ({"max_iter": m}, v)
        for m, v in [
            (1, "valid"),
            (2, "valid"),
            (0, "reject"),
            (-1, "reject"),
            (2.5, "reject"),
            (None, "reject"),
        ]
    ]
    + [
        ({"init": i}, v)
        for i, v in [
            ("uniform", "valid"),
            ("empirical", "valid"),
            ("threshold", "valid"),
            ("zzz", "reject"),
            ("uniform_len", "valid"),
            ("short", "reject"),
            ("negative", "reject"),
            ("nan", "reject"),
            ("unnormalized", "may"),
            ("zeros", "may"),
        ]
    ]
    + [
        ({"n_jobs": j}, v)
        for j, v in [
            (None, "valid"),
            (1, "valid"),
            (2, "valid"),
            (-1, "valid"),
            (0, "may"),
            (1.5, "reject"),
        ]
    ]
    + [
        ({"report_store": r}, v)
        for r, v in [
            ("memory", "valid"),
            ("disk", "valid"),
            ("/nonexistent/dir/xyz", "reject"),
            ("", "reject"),
            (5, "reject"),
        ]
    ]
    + [
        ({"acceleration": a}, v)
        for a, v in [(None, "valid"), ("squarem", "valid"), ("zz", "reject")]
    ]
    + [({"working_set": w}, v) for w, v in [(True, "valid"), (False, "valid"), ("yes", "reject")]],
    "PersonalizedEstimator": [
        ({"background": b}, v)
        for b, v in [
            ("valid", "valid"),
            ("unknown_tag", "reject"),
            ("unknown_value", "reject"),
            ("negative", "reject"),
            ("nan", "reject"),
            ("zeros", "reject"),
            ("string_weight", "may"),
            ("empty", "may"),
            ("not_dict", "reject"),
        ]
    ],
    "EmpiricalEstimator": [
        ({"projection": p}, v)
        for p, v in [
            (None, "valid"),
            ("simplex", "valid"),
            ("clip", "valid"),
            ("zz", "reject"),
            (1, "reject"),
        ]
    ],
}

REPORT_TAMPER = [
    "float",
    "bool",
    "str",
    "out",
    "nan",
    "extra_col",
    "bits_2",
    "negative",
    "drop_col",
    "empty",
    "as_int64",
    "dataframe",
    "list",
]


def _tamper_spec(spec, what, value):
    spec = copy.deepcopy(spec)
    if what == "drop":
        if value not in spec:
            return None
        del spec[value]
        return spec
    if what == "extra":
        spec[value] = 1
        return spec
    if what not in spec and what != "mechanism":
        return None
    if value == "dup":
        c = list(spec["categories"])
        spec["categories"] = c + [c[0]]
    elif value == "all_false":
        spec["sensitive"] = [False] * len(spec["sensitive"])
    elif value == "short":
        if what == "sensitive":
            spec["sensitive"] = spec["sensitive"][:-1]
        else:
            spec["blocks"] = spec["blocks"][:-1]
    elif value == "labels":
        spec["sensitive"] = ["zz"] * len(spec["sensitive"])
    else:
        spec[what] = value
    return spec


def _tamper_reports(reports, channel, how):
    """Returns (tampered reports as a plain container, verdict)."""
    R = _dense(reports)
    cat = getattr(channel, "reports_are_categories", False)
    if how == "float":
        if cat:
            if all(family(v) == "int" for v in channel.categories):
                return R.astype(float), "may"
            return None, None
        return R.astype(float), ("reject" if R.shape[1] == 1 else "may")
    if how == "bool":
        if cat:
            return None, None
        if R.shape[1] == 1:
            return (R % 2).astype(bool), "reject"
        return R.astype(bool), "may"
    if how == "str":
        if cat:
            # Valid when nothing changed: every category, or every report, was text.
            ok = all(family(v) == "str" for v in channel.categories) or all(
                family(v) == "str" for v in np.ravel(R)
            )
            return R.astype(str).astype(object), ("valid" if ok else "reject")
        if R.shape[1] == 1:  # output codes (Hadamard family) as strings
            return R.astype(str).astype(object), "reject"
        # "0"/"1" strings as bits: parsing or refusing them are both defensible
        return R.astype(str).astype(object), "may"
    if how == "out":
        T = R.astype(object).copy()
        if T.shape[0] == 0:
            return None, None
        T[0, 0] = "zz_out" if cat else 10**6
        return T, "reject"
    if how == "nan":
        T = R.astype(object).copy()
        if T.shape[0] == 0:
            return None, None
        T[0, 0] = np.nan
        has_missing = cat and any(family(v) == "missing" for v in channel.categories)
        return T, ("valid" if has_missing else "reject")
    if how == "extra_col":
        # For one-value reports, a second column of valid reports is the
        # output of a mechanism on two columns, which estimators pool.
        return np.concatenate([R, R[:, :1]], axis=1), ("valid" if R.shape[1] == 1 else "reject")
    if how == "bits_2":
        if cat or R.shape[1] == 1 or R.shape[0] == 0:
            return None, None
        T = R.astype(np.int64).copy()
        T[0, 0] = 2
        return T, "reject"
    if how == "negative":
        if cat or R.shape[0] == 0:
            return None, None
        T = R.astype(np.int64).copy()
        T[0, 0] = -1
        return T, "reject"
    if how == "drop_col":
        if R.shape[1] == 1:
            return None, None
        return R[:, :-1], "reject"
    if how == "empty":
        return R[:0], "may"
    if how == "as_int64":
        if cat:
            return None, None
        return R.astype(np.int64), "valid"
    if how == "dataframe":
        return pd.DataFrame(R), "valid"
    if how == "list":
        return R.tolist(), "may"
    return None, None


def _make_estimator(name, mechanism=None, params=None, k=None, cats0=None):
    from sklearn_uldp import estimators as E

    base, _, proj = name.partition(":")
    kw = {} if mechanism is None else {"mechanism": mechanism}
    if params:
        params = dict(params)
        init = params.get("init")
        if isinstance(init, str) and init in (
            "uniform_len",
            "short",
            "negative",
            "nan",
            "unnormalized",
            "zeros",
        ):
            arr = np.full(k, 1.0 / k)
            if init == "short":
                arr = arr[:-1]
            elif init == "negative":
                arr[0], arr[1] = -0.5, arr[1] + 0.5 + arr[0]
            elif init == "nan":
                arr[0] = np.nan
            elif init == "unnormalized":
                arr = arr * 3
            elif init == "zeros":
                arr = np.zeros(k)
            params["init"] = arr
        bg = params.get("background")
        if isinstance(bg, str):
            c0 = cats0
            params["background"] = {
                "valid": {"home": {c0: 1.0}},
                "unknown_tag": {"zz_tag": {c0: 1.0}},
                "unknown_value": {"home": {"zz_not_a_category": 1.0}},
                "negative": {"home": {c0: -1.0}},
                "nan": {"home": {c0: float("nan")}},
                "zeros": {"home": {c0: 0.0}},
                "string_weight": {"home": {c0: "1"}},
                "empty": {"home": {}},
                "not_dict": {"home": [c0]},
            }[bg]
        if base == "EmpiricalEstimator":
            return E.EmpiricalEstimator(**{**params, **kw})
        if base == "EMEstimator":
            return E.EMEstimator(**{"max_iter": 200, **params, **kw})
        return getattr(E, base)(**{**params, **kw})
    if base == "EmpiricalEstimator":
        return E.EmpiricalEstimator(projection=proj or None, **kw)
    if base == "EMEstimator":
        return E.EMEstimator(max_iter=200, **kw)
    if base == "PersonalizedEstimator":
        return E.PersonalizedEstimator(**kw)
    return getattr(E, base)(**kw)


def check_distribution(est, name, channel, k=None):
    p = np.asarray(est.distribution_, dtype=float)
    k = channel.n_categories if k is None else k
    if p.shape != (k,):
        raise _Wrong("estimate shape", f"{p.shape} for k={k}")
    if not np.isfinite(p).all():
        raise _Wrong("estimate not finite", f"{p}")
    if not (name.startswith("EmpiricalEstimator") and getattr(est, "projection", 1) is None):
        if (p < -1e-12).any():
            raise _Wrong("negative probability", f"{p}")
        if abs(p.sum() - 1) > 1e-9:
            raise _Wrong("estimate does not sum to 1", f"sum={p.sum()!r}")
    cats = getattr(est, "categories_", None)
    if cats is not None:
        want = list(channel.categories)
        if name.startswith("Personalized"):
            want = want[: len(cats)]
        if len(cats) != len(want) or any(match_code(c, want)[0] != i for i, c in enumerate(cats)):
            raise _Wrong("estimate for another category set", f"{list(cats)[:6]}")


@st.composite
def estimator_cases(draw):
    mcase = draw(mechanism_cases())
    # A valid mechanism most of the time: the estimator is what is fuzzed here.
    if draw(st.integers(0, 3)):
        mcase = _sanitize(draw, mcase)
    name = draw(
        st.sampled_from(
            ESTIMATORS
            + (["PersonalizedEstimator"] if mcase["api"] == "PersonalizedMechanism" else [])
        )
    )
    if mcase["api"] == "PersonalizedMechanism" and draw(st.booleans()):
        name = "PersonalizedEstimator"
    via = draw(
        st.sampled_from(
            [
                "reports",
                "reports",
                "mechanism",
                "channel",
                "spec",
                "spec_tampered",
                "tampered",
                "tampered",
                "partial",
                "mixed",
                "params",
                "params",
            ]
        )
    )
    tamper = None
    if via == "params":
        base = name.partition(":")[0]
        tamper = draw(st.sampled_from(ESTIMATOR_PARAMS.get(base, [({}, "valid")])))
    if via == "mixed":
        tamper = draw(st.sampled_from(["epsilon", "categories", "order", "same"]))
    if via == "spec_tampered":
        tamper = draw(st.sampled_from(SPEC_TAMPER))
    if via == "tampered":
        tamper = draw(st.sampled_from(REPORT_TAMPER))
    return {"api": name, "mcase": mcase, "via": via, "tamper": tamper}


def _other_reports(mech, mcase, how):
    """A second batch of reports from a mechanism that differs in ``how``."""
    from sklearn.base import clone

    other = clone(mech)
    params = other.get_params()
    cats = list(mech.categories_)
    if how == "epsilon":
        key = "epsilon" if "epsilon" in params else "epsilon_12"
        if key not in params:
            return None
        other.set_params(**{key: float(params[key]) * 2})
    elif how == "categories":
        if mcase["api"] == "PersonalizedMechanism" or "blocks" in params:
            return None
        other.set_params(categories=cats + ["zz_extra"])
    elif how == "order":
        if mcase["api"] == "PersonalizedMechanism" or "blocks" in params:
            return None
        other.set_params(categories=cats[::-1])
    if hasattr(other, "set_output"):
        other.set_output(transform="default")
    X = _build_X(mcase)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return other.fit(X).transform(X)
        except Exception:  # noqa: BLE001 - not what this case fuzzes
            return None


def _sanitize(draw, mcase):
    """Make a mechanism case valid (keeps its mechanism and container type)."""
    mcase = copy.deepcopy(mcase)
    p = mcase["params"]
    k = draw(st.integers(2, 6))
    dom = draw(
        st.sampled_from(
            [
                [f"c{i}" for i in range(k)],
                list(range(k)),
                ["é", "日本", "🙂", "x"][: max(2, min(k, 4))],
            ]
        )
    )
    if mcase["api"] == "BinaryOptimalResponse":
        dom = dom[:2]
    p["categories"] = dom
    if "epsilon" in p:
        p["epsilon"] = draw(st.sampled_from(EPSILONS_VALID))
    for e in ("epsilon_12", "epsilon_21"):
        if e in p:
            p[e] = draw(st.sampled_from([0.5, 1.0, 2.0]))
    if "sensitive" in p:
        p["sensitive"] = [dom[0]]
    if "theta" in p:
        p["theta"] = draw(st.sampled_from([None, 0.5, 0.3]))
    if "sparse_output" in p:
        p["sparse_output"] = draw(st.booleans())
    if "block_size" in p:
        p["block_size"] = draw(st.sampled_from([None, 2]))
    if "blocks" in p:
        p["blocks"] = [i % 2 for i in range(len(dom))]
    if "subset_size" in p:
        p["subset_size"] = 1
    if mcase["api"] == "PersonalizedMechanism":
        p["mechanism"] = draw(st.sampled_from(["urr", "urap"]))
        p["n_reports"] = 1
        p["tags"] = ("home",)
    if "random_state" in p:
        p["random_state"] = 0
    n = draw(st.integers(1, 40))
    mcase["values"] = [draw(st.sampled_from(dom)) for _ in range(n)]
    mcase["how"] = "object" if mcase["api"] != "PersonalizedMechanism" else "pum"
    if mcase["api"] == "PersonalizedMechanism":
        mcase["tags"] = {"home": [draw(st.sampled_from(dom + [None])) for _ in range(n)]}
        mcase["extra"] = None
    mcase["fit_on_X"] = True
    mcase["pandas_out"] = draw(st.booleans())
    return mcase


def run_estimator_case(case):
    mcase = case["mcase"]
    out = run_mechanism_case(mcase)
    api = case["api"] + "<-" + mcase["api"]
    if out.klass != OK:
        return out  # the mechanism's own outcome
    mech, reports = mcase["_mech"], mcase["_reports"]
    channel = mech.channel_
    via, tamper = case["via"], case["tamper"]
    verdict = "valid"
    data = reports
    mechanism = None
    if via == "mechanism":
        mechanism, data = mech, _dense(reports)
    elif via == "channel":
        mechanism, data = channel, _dense(reports)
    elif via == "spec":
        mechanism, data = mech.spec(), _dense(reports)
    elif via == "spec_tampered":
        what, value = tamper
        mechanism = _tamper_spec(mech.spec(), what, value)
        if mechanism is None:
            return Outcome(OK, api)
        verdict = "may" if what == "extra" else "reject"
        data = _dense(reports)
        api += f"[spec {what}={value!r}]"
    elif via == "tampered":
        data, verdict = _tamper_reports(reports, channel, tamper)
        if data is None:
            return Outcome(OK, api)
        if mcase["api"] == "PersonalizedMechanism" and tamper in ("extra_col", "drop_col"):
            # The PUM spec does not fix n_reports: (n, t) columns are t reports.
            verdict = "may"
        mechanism = mech.spec()
        api += f"[reports {tamper}]"
    elif via == "params":
        params, verdict = tamper
        api += f"[params {params!r}]"
        if "background" in params and "home" not in mcase["params"].get("tags", ()):
            verdict = combine(verdict, "may")
    elif via == "mixed":
        api += f"[mixed {tamper}]"
        verdict = "valid" if tamper == "same" else "reject"
        other = _other_reports(mech, mcase, tamper)
        if other is None:
            return Outcome(OK, api)
    if len(mcase["values"]) == 0 or _dense(reports).shape[0] == 0:
        verdict = combine(verdict, "may")
    if (
        mcase["api"] == "PersonalizedMechanism"
        and case["api"] != "PersonalizedEstimator"
        and mcase["params"].get("n_reports", 1) > 1
    ):
        verdict = combine(verdict, "may")  # t reports a user: a PUM-only layout
    snap = snapshot(data if not hasattr(data, "toarray") else data.toarray())
    snap_m = snapshot(mechanism) if isinstance(mechanism, dict) else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            est = _make_estimator(
                case["api"],
                mechanism,
                tamper[0] if via == "params" else None,
                k=channel.n_categories,
                cats0=mech.categories_[0],
            )
            if via == "mixed":
                est.partial_fit(reports)
                est.partial_fit(other)
            elif via == "partial":
                R = data
                half = R.shape[0] // 2
                est.partial_fit(R[:half] if half else R)
                if half:
                    est.partial_fit(R[half:])
            else:
                est.fit(data)
            _ = est.distribution_  # computed lazily after partial_fit
        except Exception as exc:  # noqa: BLE001
            return classify_exception(exc, api, verdict)
        try:
            if via == "partial":
                # Statistics add up: chunked and one-shot estimates agree.
                one = _make_estimator(case["api"], mechanism, k=channel.n_categories)
                one.fit(data)
                a = np.asarray(est.distribution_, float)
                b = np.asarray(one.distribution_, float)
                tol = 1e-6 if case["api"].startswith(("EM", "Personalized")) else 1e-9
                if a.shape != b.shape or not np.allclose(a, b, atol=tol, rtol=0):
                    diff = np.max(np.abs(a - b)) if a.shape == b.shape else a.shape
                    return Outcome(WRONG, api, "partial_fit differs from fit", f"max diff {diff}")
            if (
                verdict != "reject"
                and via in ("reports", "spec")
                and case["api"] != "PersonalizedEstimator"
            ):
                post = np.asarray(est.predict_proba(data), float)
                n_rep = _dense(data).shape[0]
                if post.shape != (n_rep, channel.n_categories):
                    return Outcome(
                        WRONG, api + ".predict_proba", "posterior shape", f"{post.shape}"
                    )
                if post.size and (
                    not np.isfinite(post).all()
                    or (post < -1e-12).any()
                    or not np.allclose(post.sum(axis=1), 1, atol=1e-9)
                ):
                    return Outcome(
                        WRONG, api + ".predict_proba", "posterior not a distribution", f"{post[:2]}"
                    )
                score = est.score(data)
                if n_rep and np.isnan(score):
                    return Outcome(WRONG, api + ".score", "score is NaN", "")
        except Exception as exc:  # noqa: BLE001
            return classify_exception(exc, api + ".check", "may")
    try:
        now = snapshot(data if not hasattr(data, "toarray") else data.toarray())
        if now != snap or (snap_m is not None and snapshot(mechanism) != snap_m):
            raise _Wrong("input modified", "reports or spec changed by fit")
        if verdict == "reject":
            raise _Wrong("invalid input accepted", api)
        if case["api"] == "PersonalizedEstimator":
            # The estimate is over the domain X, the channel over Z = X + bots.
            check_distribution(est, "PersonalizedEstimator", channel, k=len(mech.categories_))
        else:
            check_distribution(est, case["api"], channel)
    except _Wrong as w:
        return Outcome(WRONG, api, w.kind, w.detail)
    except Exception as exc:  # noqa: BLE001
        return classify_exception(exc, api + ".check", "may")
    return Outcome(OK, api)


# ------------------------------------------------------------ composites
@st.composite
def dataframe_privatizer_cases(draw):
    mcase = draw(
        mechanism_cases(names=[n for n in MECHANISM_NAMES if n != "PersonalizedMechanism"])
    )
    if draw(st.booleans()):
        mcase = _sanitize(draw, mcase)
    missing = draw(st.sampled_from(["error", "category", "category", "zzz"]))
    label = draw(st.sampled_from(["(missing)", "(missing)", None, 5, ""]))
    if (
        missing == "category"
        and isinstance(mcase["params"]["categories"], list)
        and draw(st.booleans())
        and label is not None
    ):
        mcase["params"]["categories"] = mcase["params"]["categories"] + [label]
    if draw(st.integers(0, 2)) == 0 and mcase["values"]:
        i = draw(st.integers(0, len(mcase["values"]) - 1))
        mcase["values"][i] = draw(st.sampled_from([None, float("nan"), pd.NA]))
    return {
        "api": "DataFramePrivatizer",
        "mcase": mcase,
        "missing": missing,
        "missing_label": label,
        "dtype": draw(st.sampled_from([object, "category", "string", None])),
        "random_state": draw(st.sampled_from([0, None, 3, -1])),
        "second": draw(st.booleans()),
    }


def run_dataframe_privatizer_case(case):
    from sklearn_uldp.compose import DataFramePrivatizer

    mcase = case["mcase"]
    api = "DataFramePrivatizer<-" + mcase["api"]
    p = dict(mcase["params"])
    cls = getattr(M, mcase["api"])
    values = mcase["values"]
    try:
        col = pd.Series(values, dtype=case["dtype"])
    except Exception:  # noqa: BLE001 - the dtype cannot hold these values
        col = pd.Series(values, dtype=object)
    df = pd.DataFrame({"c": col, "keep": np.arange(len(values))})
    mechs = {"c": None}
    if case["second"]:
        df["d"] = pd.Series(
            ["u", "v"] * (len(values) // 2) + ["u"] * (len(values) % 2), dtype=object
        )
        mechs["d"] = M.RandomizedResponse(1.0, categories=["u", "v"])
    snap = snapshot(df)
    # verdict: the mechanism's params and the column after missing handling
    pv, mask = _param_verdict(mcase)
    dom = p["categories"]
    verdict = pv
    missing, label = case["missing"], case["missing_label"]
    if missing not in ("error", "category"):
        verdict = "reject"
    if p.get("sparse_output"):
        verdict = combine(verdict, "may")  # sparse reports cannot go in a DataFrame
    if not isinstance(label, str):
        verdict = combine(verdict, "may")
    codes = None
    if dom != "auto" and domain_verdict(dom) == "valid":
        vals = list(col.astype(object))
        codes = []
        for v in vals:
            if family(v) == "missing" and missing == "category":
                c, vv = match_code(label, dom)
                if c < 0:
                    vv = "reject"
            else:
                c, vv = match_code(v, dom)
            codes.append(c)
            verdict = combine(verdict, vv)
        if not vals:
            verdict = combine(verdict, "may")
    elif dom != "auto":
        verdict = "reject"
    else:
        verdict = combine(verdict, "may")
    rs = case["random_state"]
    if isinstance(rs, int) and rs < 0:
        verdict = "reject"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            mechs["c"] = cls(**p)
            priv = DataFramePrivatizer(mechs, missing=missing, missing_label=label, random_state=rs)
            out = priv.fit_transform(df)
        except Exception as exc:  # noqa: BLE001
            if snapshot(df) != snap:
                return Outcome(WRONG, api, "input modified", "")
            return classify_exception(exc, api, verdict)
    try:
        if snapshot(df) != snap:
            raise _Wrong("input modified", "DataFrame changed")
        if verdict == "reject":
            raise _Wrong(
                "invalid input accepted",
                f"missing={missing!r} label={label!r} dom={repr(dom)[:80]} "
                f"values={repr(values)[:120]}",
            )
        if not isinstance(out, pd.DataFrame) or "keep" in out.columns:
            raise _Wrong("output columns", f"{list(getattr(out, 'columns', []))}")
        if len(out) != len(df):
            raise _Wrong("wrong number of reports", f"{len(out)} vs {len(df)}")
        channel = priv.channels_["c"]
        R = priv.column_reports(out, "c")
        outc = _output_codes(channel, _dense(R))
        if codes is not None and mask is not None:
            got = np.asarray(channel.sensitive_mask, bool)
            if got.shape == mask.shape and (got != mask).any():
                raise _Wrong("sensitive set differs", "")
        eps = float(p["epsilon"]) if "epsilon" in p else None
        Q = check_channel(channel, eps, mcase["api"])
        if Q is not None and outc is not None and codes is not None:
            for x, y in zip(codes, outc, strict=False):
                if x >= 0 and Q[x, y] <= 0:
                    raise _Wrong("report impossible under the channel", f"{x}->{y}")
    except _Wrong as w:
        return Outcome(WRONG, api, w.kind, w.detail)
    except Exception as exc:  # noqa: BLE001
        return classify_exception(exc, api + ".check", "may")
    return Outcome(OK, api)


@st.composite
def joint_encoder_cases(draw):
    d1 = draw(domains())
    d2 = draw(st.sampled_from([["x", "y"], [1, 2, 3], ["p|q", "p"], ["1", 1]]))
    n = draw(st.integers(0, 12))
    pool1 = d1 if isinstance(d1, list) and d1 and not isinstance(d1[0], list) else ["a"]
    rows = [(draw(st.sampled_from(pool1)), draw(st.sampled_from(d2))) for _ in range(n)]
    if rows and draw(st.integers(0, 2)) == 0:
        i = draw(st.integers(0, n - 1))
        rows[i] = (_perturbed(draw, rows[i][0], pool1), rows[i][1])
    return {
        "api": "JointEncoder",
        "d1": d1,
        "d2": d2,
        "rows": rows,
        "separator": draw(st.sampled_from(["|", "|", ",", "", 5])),
        "sensitive": draw(st.sampled_from(["none", "first", "all", "raise_none"])),
        "auto": draw(st.integers(0, 4)) == 0,
        "exclude": draw(st.booleans()),
        "dtype": draw(st.sampled_from([object, "category"])),
    }


def run_joint_encoder_case(case):
    from sklearn_uldp.compose import JointEncoder

    d1, d2, rows = case["d1"], case["d2"], case["rows"]
    df = pd.DataFrame(
        {
            "a": pd.Series([r[0] for r in rows], dtype=object),
            "b": pd.Series([r[1] for r in rows], dtype=object),
        }
    )
    if case["dtype"] == "category":
        try:
            df = df.astype("category")
        except Exception:  # noqa: BLE001
            pass
    snap = snapshot(df)
    sep = case["separator"]
    verdict = "valid"
    if not isinstance(sep, str):
        verdict = "reject"
    if case["auto"]:
        cats = "auto"
        verdict = combine(verdict, "may")
    else:
        cats = {"a": d1, "b": d2}
        # One value is a fine per-column domain (the joint domain has more).
        v1 = (
            "may"
            if isinstance(d1, list) and len(d1) == 1 and not isinstance(d1[0], list)
            else domain_verdict(d1)
        )
        verdict = combine(verdict, v1, domain_verdict(d2))
    codes = []
    if verdict != "reject" and not case["auto"]:
        for a, b in rows:
            ca, va = match_code(a, d1)
            cb, vb = match_code(b, d2)
            verdict = combine(verdict, va, vb)
            if case["exclude"] and ca == 0 and cb == 0:
                verdict = "reject"  # the combination was excluded from the domain
            codes.append((ca, cb))
        labels = [f"{x}{sep}{y}" for x in d1 for y in d2] if isinstance(sep, str) else []
        if isinstance(sep, str) and any(sep in str(x) for x in list(d1) + list(d2)):
            verdict = combine(verdict, "may")  # refusing such values is fine
        if len(set(labels)) != len(labels):
            verdict = combine(verdict, "may")  # colliding labels must be refused or kept apart
        if not rows:
            verdict = combine(verdict, "may")
    first = d1[0] if isinstance(d1, list) and d1 and not isinstance(d1[0], list) else None

    def is_first(v, f=first):
        # By the coercion policy: a missing marker is the missing value (NaN
        # is not == NaN, but it is the domain's first value).
        return f is not None and match_code(v, [f])[1] != "reject"

    sens = {
        "none": None,
        "first": (lambda row: is_first(row["a"])),
        "all": (lambda row: True),
        "raise_none": (lambda row: None),
    }[case["sensitive"]]
    exclude = (
        (lambda row: is_first(row["a"]) and match_code(row["b"], [d2[0]])[1] != "reject")
        if case["exclude"]
        else None
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            enc = JointEncoder(cats, sensitive=sens, exclude=exclude, separator=sep)
            out = enc.fit(df).transform(df)
        except Exception as exc:  # noqa: BLE001
            return classify_exception(exc, "JointEncoder", verdict)
    try:
        if snapshot(df) != snap:
            raise _Wrong("input modified", "")
        if verdict == "reject":
            raise _Wrong(
                "invalid input accepted",
                f"d1={repr(d1)[:60]} d2={d2} sep={sep!r} rows={repr(rows)[:100]}",
            )
        cats_ = list(enc.categories_)
        if len(set(map(repr, cats_))) != len(cats_) or len(set(cats_)) != len(cats_):
            raise _Wrong("duplicate joint categories", f"{cats_[:8]}")
        if len(cats_) != len(enc.joint_index_):
            raise _Wrong("categories_ and joint_index_ differ in length", "")
        if len(enc.sensitive_mask_) != len(cats_):
            raise _Wrong("sensitive mask length", "")
        col = out[enc.name] if isinstance(out, pd.DataFrame) else np.asarray(out)[:, 0]
        if len(col) != len(rows):
            raise _Wrong("wrong number of rows", f"{len(col)} vs {len(rows)}")
        pos = {c: i for i, c in enumerate(cats_)}
        for (a, b), lab in zip(rows, list(col), strict=False):
            if lab not in pos:
                raise _Wrong("joint label outside categories_", repr(lab)[:80])
            ta, tb = enc.joint_index_[pos[lab]]
            if not case["auto"] and (
                match_code(ta, [a])[0] != 0
                and not (family(a) == "missing" and family(ta) == "missing")
                or match_code(tb, [b])[0] != 0
            ):
                raise _Wrong("row mapped to another tuple", f"{(a, b)!r} -> {(ta, tb)!r}")
        if case["sensitive"] == "raise_none" and np.asarray(enc.sensitive_mask_).any():
            raise _Wrong("sensitive predicate returning None counted as True", "")
    except _Wrong as w:
        return Outcome(WRONG, "JointEncoder", w.kind, w.detail)
    except Exception as exc:  # noqa: BLE001
        return classify_exception(exc, "JointEncoder.check", "may")
    return Outcome(OK, "JointEncoder")


# ------------------------------------------------------------------ CLI
CLI_VALUES = [
    "a",
    "b",
    "c",
    "é",
    "日本",
    "x y",
    "a,b",
    '"q"',
    "",
    " ",
    "1",
    "1.0",
    "nan",
    "NA",
    "None",
    "⊥home",
    "z" * 5000,
    "-1",
    "True",
]


CLI_OPTIONS = {  # (valid choices, fuzzed choices)
    "mechanism": (["rr", "urr", "rappor", "urap", "oue", "uoue"], ["zz"]),
    "epsilon": (["1", "0.5", "2"], ["0", "-1", "nan", "inf", "1e-300", "710", "40", "abc", None]),
    "theta": ([None], ["0.5", "1.5", "0", "optimal", "x", "1e-12"]),
    "categories": (["given"], ["none", "dup", "malformed", "missing_col", "empty"]),
    "sensitive": (["auto"], ["first", "none", "unknown", "malformed"]),
    "missing": ([None, "error", "category"], []),
    "random_state": (["0", "none"], ["-1", "x", "99999999999999999999999"]),
    "output": (["r.csv"], ["r.parquet", "r.xlsx", ".", "same", "sub/r.csv", "r"]),
    "estimator": (["emp", "emp-simplex", "thr", "em"], []),
    "spec_tamper": ([None], SPEC_TAMPER[:22]),
    "column": (["c"], ["missing_col"]),
    "report_tamper": ([None], ["256", "x", "1.5", "", "-1", "zz_out", "drop_col"]),
    "config": (
        [None],
        [
            "valid",
            "columns_list",
            "epsilon_str",
            "epsilon_zero",
            "categories_str",
            "unknown_key",
            "conf_not_dict",
            "malformed_json",
            "empty_columns",
            "sensitive_unknown",
            "numeric_categories",
            "mechanism_unknown",
            "not_object",
            "nested_categories",
        ],
    ),
}

# A string epsilon in a hand-written config ("1.0") may be parsed or refused.
CONFIG_VERDICT = {"valid": "valid", "numeric_categories": "may", "epsilon_str": "may"}


def _write_config(path, kind, cats, mech, sens):
    conf = {"mechanism": mech, "epsilon": 1.0, "categories": list(cats)}
    if sens:
        conf["sensitive"] = [sens]
    doc = {"columns": {"c": conf}, "random_state": 0}
    if kind == "columns_list":
        doc["columns"] = [conf]
    elif kind == "epsilon_str":
        conf["epsilon"] = "1.0"
    elif kind == "epsilon_zero":
        conf["epsilon"] = 0
    elif kind == "categories_str":
        conf["categories"] = "abc"
    elif kind == "unknown_key":
        conf["epsilonn"] = 1.0
    elif kind == "conf_not_dict":
        doc["columns"] = {"c": 1.0}
    elif kind == "empty_columns":
        doc["columns"] = {}
    elif kind == "sensitive_unknown":
        conf["sensitive"] = ["zz_unknown"]
    elif kind == "numeric_categories":
        conf["categories"] = list(range(len(cats)))
    elif kind == "mechanism_unknown":
        conf["mechanism"] = "zz"
    elif kind == "not_object":
        doc = [doc]
    elif kind == "nested_categories":
        conf["categories"] = [list(cats)]
    with open(path, "w", encoding="utf-8") as fh:
        if kind == "malformed_json":
            fh.write('{"columns": {"c": {')
        else:
            json.dump(doc, fh)


@st.composite
def cli_cases(draw):
    """privatize then estimate (or search), with one option (or the data) fuzzed."""
    if draw(st.integers(0, 5)) == 0:
        return draw(search_cases())
    focus = draw(st.sampled_from(list(CLI_OPTIONS) + ["values", "values", "none"]))
    n = draw(st.sampled_from([0, 1, 3, 10, 40] if focus == "values" else [3, 10, 40]))
    domain = draw(st.lists(st.sampled_from(CLI_VALUES[:12]), min_size=2, max_size=5, unique=True))
    vals = [draw(st.sampled_from(domain)) for _ in range(n)]
    if n and focus == "values":
        vals[draw(st.integers(0, n - 1))] = draw(st.sampled_from(CLI_VALUES + [None]))
    opts = {
        name: draw(st.sampled_from(good + bad if focus == name else good))
        for name, (good, bad) in CLI_OPTIONS.items()
    }
    utility = opts["mechanism"] in ("urr", "urap", "uoue")
    if opts["sensitive"] == "auto":
        opts["sensitive"] = "first" if utility else "none"
    return {"api": "CLI", "focus": focus, "values": vals, "domain": domain, "opts": opts}


def _run_cli(argv):
    """(rc, stderr, exception) of one in-process CLI call."""
    err, out = io.StringIO(), io.StringIO()
    exc = None
    rc = None
    with (
        contextlib.redirect_stderr(err),
        contextlib.redirect_stdout(out),
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("ignore")
        try:
            rc = cli_main(argv)
        except SystemExit as e:
            rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
            if not isinstance(e.code, int) and e.code is not None:
                err.write(str(e.code))
        except BaseException as e:  # noqa: BLE001
            exc = e
    return rc, err.getvalue(), exc


def _cli_outcome(api, rc, stderr, exc, verdict):
    if exc is not None:
        frames = traceback.extract_tb(exc.__traceback__)
        where = f"{os.path.basename(frames[-1].filename)}:{frames[-1].lineno}" if frames else "?"
        return Outcome(UNCLEAR, api, f"traceback {type(exc).__name__} at {where}", str(exc)[:300])
    if "Traceback" in stderr:
        return Outcome(UNCLEAR, api, "traceback on stderr", stderr[-300:])
    if rc == 0:
        return None
    lines = [ln for ln in stderr.splitlines() if "error:" in ln]
    advice = [ln for ln in lines if _PYTHON_ADVICE.search(ln)]
    if advice:  # the command line has flags (--missing category), not arguments
        return Outcome(UNCLEAR, api, "Python advice on the command line", advice[-1][:300])
    if rc == 2 and lines:
        if verdict == "valid":
            return Outcome(REJECTED_VALID, api, "exit 2 on valid input", lines[-1][:300])
        return Outcome(CLEAR, api, "exit 2", lines[-1][:200])
    return Outcome(UNCLEAR, api, f"exit {rc} without an error line", stderr[-300:])


SEARCH_OPTIONS = {  # option -> (valid argv, fuzzed [(argv, verdict)])
    "column": (["--column", "c"], [(["--column", "nope"], "reject")]),
    "categories": (
        ["--categories", "a,b,c"],
        [
            ([], "may"),
            (["--categories", "a,a,b,c"], "reject"),
            (["--categories", "a"], "reject"),
            (["--categories", "a,b"], "reject"),
            (["--categories", ","], "reject"),
        ],
    ),
    "sensitive": (
        ["--sensitive", "a"],
        [(["--sensitive", "zz"], "reject"), ([], "reject"), (["--sensitive", "a,a"], "reject")],
    ),
    "mechanisms": (
        ["--mechanisms", "urr", "rr"],
        [(["--mechanisms", "zz"], "reject"), (["--mechanisms", "urap", "oue"], "valid")],
    ),
    "epsilon": (
        ["--epsilon", "1"],
        [
            (["--epsilon", "0"], "reject"),
            (["--epsilon", "nan"], "reject"),
            (["--epsilon", "inf"], "reject"),
            (["--epsilon", "-1"], "reject"),
            (["--epsilon", "800"], "may"),
            (["--epsilon", "1e-300"], "may"),
        ],
    ),
    "theta": (
        [],
        [
            (["--theta", "1.5"], "reject"),
            (["--theta", "optimal"], "may"),
            (["--theta", "0"], "reject"),
        ],
    ),
    "n_repeats": (
        ["--n-repeats", "1"],
        [(["--n-repeats", "0"], "reject"), (["--n-repeats", "x"], "reject")],
    ),
    "target": (
        [],
        [
            (["--target", "-1"], "reject"),
            (["--target", "0.5"], "valid"),
            (["--target", "nan"], "reject"),
        ],
    ),
    "n_jobs": ([], [(["--n-jobs", "0"], "may"), (["--n-jobs", "x"], "reject")]),
    "scoring": ([], [(["--scoring", "zz"], "reject"), (["--scoring", "mse"], "valid")]),
    "random_state": (
        [],
        [(["--random-state", "-1"], "reject"), (["--random-state", "none"], "valid")],
    ),
    "output": (
        [],
        [
            (["-o", "OUT/cv.csv"], "valid"),
            (["-o", "OUT"], "reject"),
            (["-o", "OUT/cv.xlsx"], "may"),
        ],
    ),
}


@st.composite
def search_cases(draw):
    focus = draw(st.sampled_from(list(SEARCH_OPTIONS) + ["values", "none"]))
    argv, verdict = [], "valid"
    for name, (good, bad) in SEARCH_OPTIONS.items():
        if name == focus:
            extra, v = draw(st.sampled_from(bad))
            argv += extra
            verdict = combine(verdict, v)
        else:
            argv += good
    vals = list("aabbcab") * 2
    if focus == "values":
        vals[0] = draw(st.sampled_from(["zz", None, "", "é"]))
        verdict = combine(verdict, "may" if vals[0] is None or vals[0] == "" else "reject")
    return {"api": "CLI search", "focus": focus, "values": vals, "argv": argv, "verdict": verdict}


def run_search_case(case):
    with tempfile.TemporaryDirectory() as tmp:
        inp = os.path.join(tmp, "in.csv")
        pd.DataFrame({"c": pd.Series(case["values"], dtype=object)}).to_csv(inp, index=False)
        argv = ["search", inp] + [a.replace("OUT", tmp) for a in case["argv"]] + ["--no-progress"]
        rc, err, exc = _run_cli(argv)
        res = _cli_outcome("CLI search", rc, err, exc, case["verdict"])
        if res is not None:
            return res
        if case["verdict"] == "reject":
            return Outcome(
                WRONG, "CLI search", "invalid input accepted (exit 0)", " ".join(case["argv"])
            )
    return Outcome(OK, "CLI search")


def run_cli_case(case):
    if case["api"] == "CLI search":
        return run_search_case(case)
    o, vals, domain = case["opts"], case["values"], case["domain"]
    api = "CLI privatize"
    with tempfile.TemporaryDirectory() as tmp:
        inp = os.path.join(tmp, "in.csv")
        pd.DataFrame({"c": pd.Series(vals, dtype=object), "k": range(len(vals))}).to_csv(
            inp, index=False
        )
        with open(inp, "rb") as fh:
            before = fh.read()
        output = {"same": inp, ".": "."}.get(o["output"], os.path.join(tmp, o["output"]))
        col = "c" if o["column"] == "c" else "nope"
        argv = ["privatize", inp, "-o", output, "--no-progress"]
        verdict = "valid"
        if o["config"] is not None:
            cfg = os.path.join(tmp, "config.json")
            cats = [d for d in domain if d.strip() == d and "," not in d and d != ""]
            if len(cats) < 2:
                return Outcome(OK, "CLI privatize --config")
            utility = o["mechanism"] in ("urr", "urap", "uoue")
            _write_config(cfg, o["config"], cats, o["mechanism"], cats[0] if utility else None)
            verdict = CONFIG_VERDICT.get(o["config"], "reject")
            if any(v is None or v == "" or str(v) not in cats for v in vals):
                verdict = combine(
                    verdict, "may" if o["config"] == "numeric_categories" else "reject"
                )
            if not vals:
                verdict = combine(verdict, "may")
            api = f"CLI privatize --config [{o['config']}]"
            rc, err, exc = _run_cli(argv + ["--config", cfg])
            res = _cli_outcome(api, rc, err, exc, verdict)
            if res is not None:
                return res
            if verdict == "reject":
                return Outcome(WRONG, api, "invalid config accepted (exit 0)", api)
            return Outcome(OK, api)
        if o["output"] in ("same", ".", "r.xlsx", "sub/r.csv", "r"):
            verdict = "reject" if o["output"] not in ("sub/r.csv", "r") else "may"
        if o["output"] == "r.parquet":
            verdict = combine(verdict, "may")  # needs pyarrow
        argv += ["--columns", col, "--mechanism", o["mechanism"]]
        if col != "c" or o["mechanism"] == "zz":
            verdict = "reject"
        if o["epsilon"] is not None:
            argv += ["--epsilon", o["epsilon"]]
            if o["epsilon"] in ("0", "-1", "nan", "inf", "abc"):
                verdict = "reject"
            elif o["epsilon"] in ("1e-300", "710", "40"):  # refuse or handle
                verdict = combine(verdict, "may")
        else:
            verdict = combine(verdict, "may")
        if o["theta"] is not None:
            argv += ["--theta", o["theta"]]
            if o["theta"] in ("1.5", "0", "x"):
                verdict = "reject"
            elif o["theta"] == "1e-12":
                verdict = combine(verdict, "may")
            elif o["mechanism"] in ("rr", "urr", "oue", "uoue") or (
                o["theta"] == "optimal" and o["mechanism"] != "urap"
            ):
                verdict = combine(verdict, "may")
        cats = None
        if o["categories"] == "given":
            cats = [d for d in domain if d.strip() == d and "," not in d and d != ""]
            if len(cats) < 2:
                cats = ["a", "b"]
            argv += ["--categories", f"{col}=" + ",".join(cats)]
        elif o["categories"] == "dup":
            argv += ["--categories", f"{col}=a,a,b"]
            verdict = "reject"
        elif o["categories"] == "malformed":
            argv += ["--categories", "a,b"]
            verdict = "reject"
        elif o["categories"] == "missing_col":
            argv += ["--categories", "other=a,b"]
            verdict = combine(verdict, "may")
        elif o["categories"] == "empty":
            argv += ["--categories", f"{col}="]
            verdict = "reject"
        else:
            verdict = combine(verdict, "may")  # learned from the data
        utility = o["mechanism"] in ("urr", "urap", "uoue")
        if o["sensitive"] == "first":
            s = (cats or [d for d in domain if "," not in d and d.strip() == d and d] or ["a"])[0]
            argv += ["--sensitive", f"{col}={s}"]
            if not utility:
                verdict = "reject"
        elif o["sensitive"] == "unknown":
            argv += ["--sensitive", f"{col}=zz_unknown"]
            verdict = "reject"
        elif o["sensitive"] == "malformed":
            argv += ["--sensitive", "zz"]
            verdict = "reject"
        elif utility:
            verdict = "reject"
        if o["missing"] is not None:
            argv += ["--missing", o["missing"]]
        if o["random_state"] is not None:
            argv += ["--random-state", o["random_state"]]
            if o["random_state"] in ("-1", "x"):
                verdict = "reject"
            elif len(o["random_state"]) > 10:
                verdict = combine(verdict, "may")  # a huge seed is a valid seed
        # data vs domain (the CLI reads CSV cells as strings; empty -> missing)
        if cats is not None:
            for v in vals:
                s = None if v is None or v == "" else str(v)
                if s is None or s in ("nan", "NA", "None"):
                    # pandas may parse these as missing: a missing value is then
                    # refused, or reported as "(missing)" which is not a category
                    verdict = combine(verdict, "may")
                elif s not in cats:
                    verdict = "reject" if s.strip() == s else combine(verdict, "may")
        else:
            verdict = combine(verdict, "may")
        if not vals:
            verdict = combine(verdict, "may")
        rc, err, exc = _run_cli(argv)
        with open(inp, "rb") as fh:
            if fh.read() != before:
                return Outcome(WRONG, api, "input file modified", " ".join(argv)[:200])
        res = _cli_outcome(api, rc, err, exc, verdict)
        if res is not None:
            return res
        if verdict == "reject":
            return Outcome(
                WRONG,
                api,
                "invalid input accepted (exit 0)",
                " ".join(a if len(a) < 60 else a[:60] + "..." for a in argv[1:]).replace(
                    tmp, "TMP"
                ),
            )
        if not output.endswith(".csv"):
            return Outcome(OK, api)
        try:
            rep = pd.read_csv(output, dtype=str, keep_default_na=False)
        except Exception as e:  # noqa: BLE001
            return Outcome(WRONG, api, "unreadable reports", repr(e)[:200])
        if len(rep) != len(vals):
            return Outcome(
                WRONG, api, "wrong number of reports", f"{len(rep)} for {len(vals)} rows"
            )
        spec_path = output[:-4] + ".spec.json"
        if not os.path.exists(spec_path):
            cands = [f for f in os.listdir(tmp) if f.endswith(".json")]
            if not cands:
                return Outcome(OK, api)
            spec_path = os.path.join(tmp, cands[0])
        # --- estimate, with the spec maybe tampered
        api = "CLI estimate"
        verdict = "valid"
        if o["spec_tamper"] is not None:
            with open(spec_path) as fh:
                spec = json.load(fh)
            what, value = o["spec_tamper"]
            cols = spec.get("columns") if isinstance(spec, dict) else None
            target = cols.get("c") if isinstance(cols, dict) else spec
            if isinstance(target, dict):
                t = _tamper_spec(target, what, value)
                if t is None:
                    return Outcome(OK, api)
                target.clear()
                target.update(t)
                verdict = "may" if what == "extra" else "reject"
                api += f" [spec {what}={value!r}]"
                with open(spec_path, "w") as fh:
                    json.dump(spec, fh)
        if o["report_tamper"] is not None and len(rep) and verdict != "reject":
            rcols = [
                c for c in rep.columns if c == "c" or c.startswith("c_") or c.startswith("c[")
            ] or [rep.columns[0]]
            t = o["report_tamper"]
            if t == "drop_col":
                if len(rcols) < 2:
                    return Outcome(OK, api)
                rep = rep.drop(columns=rcols[-1])
            else:
                rep.loc[0, rcols[0]] = t
            rep.to_csv(output, index=False)
            verdict = "reject"
            api += f" [reports {t!r}]"
        dist = os.path.join(tmp, "dist.csv")
        argv = [
            "estimate",
            output,
            "--spec",
            spec_path,
            "-o",
            dist,
            "--estimator",
            o["estimator"],
            "--no-progress",
        ]
        if not vals:
            verdict = combine(verdict, "may")
        rc, err, exc = _run_cli(argv)
        res = _cli_outcome(api, rc, err, exc, verdict)
        if res is not None:
            return res
        if verdict == "reject":
            return Outcome(WRONG, api, "tampered spec accepted (exit 0)", api)
        try:
            # Labels stay text: parsing the column would turn '1' and '1.0'
            # into the same float.
            d = pd.read_csv(dist, keep_default_na=False, dtype={"category": str})
            est = d["estimate"].astype(float).to_numpy()
        except Exception as e:  # noqa: BLE001
            return Outcome(WRONG, api, "unreadable estimate", repr(e)[:200])
        if not np.isfinite(est).all():
            return Outcome(WRONG, api, "estimate not finite", str(est)[:200])
        if o["estimator"] != "emp":
            if (est < -1e-12).any() or abs(est.sum() - 1) > 1e-9:
                return Outcome(WRONG, api, "estimate not a distribution", f"sum={est.sum()}")
        if cats is not None:
            got = [str(x) for x in d["category"]]
            want = [sorted(cats)]
            if o["missing"] == "category":  # documented: missing gets its own category
                want.append(sorted(cats + ["(missing)"]))
            if sorted(got) not in want:
                return Outcome(WRONG, api, "estimate for another category set", f"{got} vs {cats}")
    return Outcome(OK, api)


# ------------------------------------------------------------------ specs
SPEC_TAMPER_MORE = SPEC_TAMPER + [
    ("epsilon", 2.0**70),
    ("epsilon", 710.0),
    ("epsilon", 1e-300),
    ("theta", 1e-300),
    ("categories", [1, 1.0]),
    ("categories", [None, float("nan")]),
    ("categories", "abc"),
    ("sensitive", [1, 0]),
    ("sensitive", "labels"),
    ("block_size", 1),
    ("block_size", "x"),
    ("blocks", [0]),
    ("subset_size", 10**9),
    ("subset_size", "x"),
    ("spec_version", 99),
    ("spec_version", "x"),
    ("epsilon_21", float("nan")),
    ("mechanism", 5),
]


@st.composite
def spec_cases(draw):
    mcase = _sanitize(
        draw,
        draw(mechanism_cases(names=[n for n in MECHANISM_NAMES if n != "PersonalizedMechanism"])),
    )
    return {
        "api": "Channel.from_dict",
        "mcase": mcase,
        "tamper": draw(st.sampled_from([None, None] + SPEC_TAMPER_MORE)),
        "via": draw(st.sampled_from(["from_dict", "from_json", "load_spec", "load_spec_columns"])),
    }


def run_spec_case(case):
    from sklearn_uldp.compose import load_spec
    from sklearn_uldp.mechanisms import Channel

    mcase = case["mcase"]
    out = run_mechanism_case(mcase)
    if out.klass != OK:
        return out
    mech = mcase["_mech"]
    spec = mech.spec()
    verdict = "valid"
    api = f"{case['via']}<-{mcase['api']}"
    if case["tamper"] is not None:
        what, value = case["tamper"]
        if what == "spec_version" and what not in spec:
            return Outcome(OK, api)
        t = _tamper_spec(spec, what, value)
        if t is None:
            return Outcome(OK, api)
        spec = t
        verdict = "may" if what == "extra" else "reject"
        if what == "epsilon" and value in (2.0**70, 710.0, 1e-300):
            verdict = "may"  # refused, or a channel valid at that budget
        api += f"[{what}]"
    snap = snapshot(spec)
    try:
        if case["via"] == "from_dict":
            ch = Channel.from_dict(spec)
        elif case["via"] == "from_json":
            ch = Channel.from_json(json.dumps(spec))
        else:
            with tempfile.TemporaryDirectory() as tmp:
                path = os.path.join(tmp, "spec.json")
                doc = (
                    spec
                    if case["via"] == "load_spec"
                    else {"format": "sklearn-uldp-spec", "columns": {"c": spec}}
                )
                with open(path, "w", encoding="utf-8") as fh:
                    json.dump(doc, fh)
                chans = load_spec(path)
                ch = list(chans.values())[0]
    except Exception as exc:  # noqa: BLE001
        return classify_exception(exc, api, verdict)
    try:
        if snapshot(spec) != snap:
            raise _Wrong("input modified", "spec dict changed")
        if verdict == "reject":
            raise _Wrong("invalid spec accepted", f"{case['tamper']!r}")
        if case["tamper"] is None and ch != mech.channel_:
            raise _Wrong("spec round trip changed the channel", f"{ch!r} vs {mech.channel_!r}")
        eps = getattr(ch, "epsilon", None)
        check_channel(ch, float(eps) if eps is not None else None, mcase["api"])
    except _Wrong as w:
        return Outcome(WRONG, api, w.kind, w.detail)
    except Exception as exc:  # noqa: BLE001
        return classify_exception(exc, api + ".check", "may")
    return Outcome(OK, api)


# ------------------------------------------------------------------ budget
BUDGET_VALUES = [
    1.0,
    0.5,
    2,
    0.1,
    0.2,
    0.3,
    1e-300,
    0.0,
    -1.0,
    float("nan"),
    float("inf"),
    True,
    "1",
    None,
    np.float32(0.7),
    np.int64(1),
]


@st.composite
def budget_cases(draw):
    total = draw(
        st.sampled_from(
            [1.0, 0.3, 3, float("inf"), 0.0, -1.0, float("nan"), "1", True, np.float64(2.0)]
        )
    )
    spends = draw(
        st.lists(
            st.tuples(
                st.sampled_from(BUDGET_VALUES), st.sampled_from([1, 1, 2, 0, -1, 2.5, True, 10**6])
            ),
            max_size=6,
        )
    )
    return {"api": "BudgetAccountant", "total": total, "spends": spends}


def _number(v):
    return not isinstance(v, (bool, np.bool_)) and isinstance(
        v, (int, float, np.integer, np.floating)
    )


def run_budget_case(case):
    from sklearn_uldp import BudgetAccountant, BudgetError

    total = case["total"]
    ok_total = _number(total) and float(total) > 0 and not math.isnan(float(total))
    # "1" or True as a total: parsing them is lax but not wrong (unsure: reported).
    lax = isinstance(total, (str, bool))
    try:
        acc = BudgetAccountant(total)
    except Exception as exc:  # noqa: BLE001
        return classify_exception(exc, "BudgetAccountant", "valid" if ok_total else "reject")
    if not ok_total and not lax:
        return Outcome(WRONG, "BudgetAccountant", "invalid total accepted", repr(total))
    if lax:
        return Outcome(OK, "BudgetAccountant")
    spent = 0.0
    for eps, count in case["spends"]:
        ok_eps = _number(eps) and not math.isnan(float(eps)) and float(eps) >= 0
        ok_count = (
            isinstance(count, (int, np.integer)) and not isinstance(count, bool) and count >= 1
        )
        verdict = "valid" if ok_eps and ok_count else "reject"
        if ok_eps and math.isinf(float(eps)):
            verdict = "may"
        amount = float(eps) * count if verdict != "reject" else None
        over = amount is not None and spent + amount > float(total) * (1 + 1e-9) + 1e-300
        before = acc.spent
        try:
            acc.spend(eps, count=count)
        except BudgetError as exc:
            if not over and verdict == "valid":
                return Outcome(
                    REJECTED_VALID,
                    "BudgetAccountant.spend",
                    "BudgetError within the total",
                    str(exc)[:200],
                )
            if acc.spent != before:
                return Outcome(
                    WRONG, "BudgetAccountant.spend", "failed spend changed the ledger", ""
                )
            continue
        except Exception as exc:  # noqa: BLE001
            out = classify_exception(exc, "BudgetAccountant.spend", verdict)
            if out.klass != CLEAR:
                return out
            if acc.spent != before:
                return Outcome(
                    WRONG, "BudgetAccountant.spend", "failed spend changed the ledger", ""
                )
            continue
        if verdict == "reject":
            return Outcome(
                WRONG,
                "BudgetAccountant.spend",
                "invalid spend accepted",
                f"epsilon={eps!r} count={count!r}",
            )
        if over:
            return Outcome(
                WRONG,
                "BudgetAccountant.spend",
                "total exceeded silently",
                f"spent {spent} + {amount} > {total}",
            )
        spent += amount
        if not math.isclose(acc.spent, spent, rel_tol=1e-9, abs_tol=1e-300) and not (
            math.isinf(spent) and math.isinf(acc.spent)
        ):
            return Outcome(WRONG, "BudgetAccountant", "spent differs", f"{acc.spent} vs {spent}")
        if acc.remaining < -1e-9 * float(total) or math.isnan(acc.remaining):
            return Outcome(WRONG, "BudgetAccountant", "negative remaining", f"{acc.remaining}")
    return Outcome(OK, "BudgetAccountant")


# ------------------------------------------------- issue 20: outsider inputs
# Raw JSON text for Channel.from_json, CSV files with blank lines, spaces,
# quotes and NA markers through privatize and estimate, arbitrary argv, and
# column names that collide. Every failure must be a clear error; a success
# must lose no row.

_JSON_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=6),
)
_JSON = st.recursive(
    _JSON_SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
_SPEC_FIELDS = ["mechanism", "spec_version", "categories", "epsilon", "sensitive", "theta"]


@st.composite
def json_cases(draw):
    kind = draw(st.sampled_from(["any", "spec", "spec", "deep", "text"]))
    if kind == "any":
        text = json.dumps(draw(_JSON))
    elif kind == "spec":
        spec = {
            "mechanism": draw(st.sampled_from(["rr", "urr", "rappor", "hr", "ubd", "x"])),
            "spec_version": 1,
            "categories": ["a", "b", "c"],
            "epsilon": 1.0,
        }
        if spec["mechanism"] in ("urr", "ubd"):
            spec["sensitive"] = [True, False, False]
        field = draw(st.sampled_from(_SPEC_FIELDS + ["extra"]))
        spec[field] = draw(_JSON)
        text = json.dumps(spec)
    elif kind == "deep":
        depth = draw(st.sampled_from([50, 5_000, 200_000]))
        open_, close = draw(st.sampled_from([("[", "]"), ('{"a":', "}")]))
        text = '{"mechanism": "rr", "categories": ' + open_ * depth + "1" + close * depth + "}"
    else:
        text = draw(st.text(max_size=30))
    return {"api": "Channel.from_json", "kind": kind, "text": text}


def run_json_case(case):
    from sklearn_uldp.mechanisms import Channel

    api = f"Channel.from_json[{case['kind']}]"
    try:
        ch = Channel.from_json(case["text"])
    except Exception as exc:  # noqa: BLE001
        return classify_exception(exc, api, "may")
    try:
        eps = getattr(ch, "epsilon", None)
        check_channel(ch, float(eps) if eps is not None else None, "spec")
    except _Wrong as w:
        return Outcome(WRONG, api, w.kind, w.detail)
    return Outcome(OK, api)


_CELLS = ["a", "b", "a", "b", "", " ", "  a", "a ", "NA", "null", '"x,y"', '""', "é", "0", "1"]
# Advice in Python syntax (missing='category') on the command line, which
# has flags (--missing category).
_PYTHON_ADVICE = re.compile(r"(?<![\w'\"-])[a-z][a-z_]{2,}=['\"\[{(]")


@st.composite
def table_cases(draw):
    n_cols = draw(st.sampled_from([1, 1, 2]))
    rows = draw(
        st.lists(
            st.lists(st.sampled_from(_CELLS), min_size=n_cols, max_size=n_cols),
            min_size=1,
            max_size=12,
        )
    )
    if draw(st.booleans()):  # a blank line somewhere
        rows.insert(draw(st.integers(0, len(rows))), [""] * n_cols)
    return {
        "api": "CLI table",
        "rows": rows,
        "n_cols": n_cols,
        "mechanism": draw(st.sampled_from(["rr", "urr", "oue"])),
        "missing": draw(st.sampled_from(["error", "category"])),
        "declared": draw(st.booleans()),
        "format": draw(st.sampled_from(["csv", "csv", "parquet"])),
    }


def run_table_case(case):
    api = f"CLI table[{case['mechanism']},{case['missing']}]"
    names = ["c", "d"][: case["n_cols"]]
    text = ",".join(names) + "\n" + "".join(",".join(r) + "\n" for r in case["rows"])
    n_users = len(case["rows"])
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "t.csv")
        with open(data, "w", encoding="utf-8") as fh:
            fh.write(text)
        rep = os.path.join(tmp, f"r.{case['format']}")
        argv = ["privatize", data, "-o", rep, "--columns", *names]
        argv += ["--mechanism", case["mechanism"], "--epsilon", "1", "--random-state", "0"]
        argv += ["--missing", case["missing"], "--no-progress"]
        if case["mechanism"] == "urr":
            argv += ["--sensitive", "c=a"]
            if not case["declared"]:
                argv += ["--categories", "c=a,b"]
        if case["declared"]:
            argv += [f"--categories={c}=a,b" for c in names]
        rc, err, exc = _run_cli(argv)
        bad = _cli_outcome(api, rc, err, exc, "may")
        if bad is None and _PYTHON_ADVICE.search(err):
            return Outcome(UNCLEAR, api, "Python advice on the command line", err[-300:])
        if bad is not None:
            return bad
        with open(rep + ".spec.json", encoding="utf-8") as fh:
            written = json.load(fh)["reports"]["n_rows"]
        if written != n_users:
            return Outcome(WRONG, api, "users lost", f"{written} reports of {n_users} lines")
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc, err, exc = _run_cli(
                ["estimate", rep, "--spec", rep + ".spec.json", "-o", os.path.join(tmp, "d.csv")]
                + ["--no-progress"]
            )
        bad = _cli_outcome(api + ".estimate", rc, err, exc, "valid")
        if bad is not None:
            return bad
        dist = pd.read_csv(os.path.join(tmp, "d.csv"), keep_default_na=False)
        for c in names:
            p = dist.loc[dist["column"] == c, "estimate"].to_numpy(dtype=float)
            if not (np.all(p >= -1e-12) and abs(p.sum() - 1.0) < 1e-6):
                return Outcome(WRONG, api, "estimate not a distribution", f"{c}: {p}")
    return Outcome(OK, api)


_ARGV_TOKENS = [
    "privatize",
    "estimate",
    "search",
    "demo",
    "{data}",
    "{out}",
    "-o",
    "--columns",
    "c",
    "--epsilon",
    "1",
    "-1",
    "nan",
    "--mechanism",
    "rr",
    "urr",
    "--categories",
    "c=a,b",
    "c=",
    "=a",
    "c=5..1",
    "--sensitive",
    "c=a",
    "--spec",
    "{spec}",
    "--missing",
    "category",
    "--alpha",
    "0",
    "0.5",
    "--config",
    "--chunksize",
    "0",
    "--n-users",
    "--estimator",
    "em",
    "--plot",
    "x.png",
    "--overwrite",
    "--random-state",
    "secure",
    "",
    " ",
    "--",
    "é",
]


@st.composite
def argv_cases(draw):
    tokens = draw(st.lists(st.sampled_from(_ARGV_TOKENS), min_size=1, max_size=9))
    return {"api": "CLI argv", "tokens": tokens}


def run_argv_case(case):
    if "demo" in case["tokens"][:1] and "--n-users" not in case["tokens"]:
        case = {**case, "tokens": case["tokens"] + ["--n-users", "50", "--no-plot"]}
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "t.csv")
        with open(data, "w", encoding="utf-8") as fh:
            fh.write("c\na\nb\n\na\n")
        subst = {"{data}": data, "{out}": os.path.join(tmp, "r.csv"), "{spec}": data}
        argv = [subst.get(t, t) for t in case["tokens"]]
        api = "CLI argv " + (argv[0] if argv else "")
        cwd = os.getcwd()
        os.chdir(tmp)  # a relative output stays in the temporary folder
        try:
            rc, err, exc = _run_cli(argv)
        finally:
            os.chdir(cwd)
    bad = _cli_outcome(api, rc, err, exc, "may")
    if bad is None and rc not in (0, None):
        return Outcome(UNCLEAR, api, f"exit {rc}", err[-300:])
    if (bad is None or bad.klass == CLEAR) and _PYTHON_ADVICE.search(err):
        return Outcome(UNCLEAR, api, "Python advice on the command line", err[-300:])
    if bad is None and rc is None:
        return Outcome(UNCLEAR, api, "no exit status", err[-300:])
    return bad or Outcome(OK, api)


_NAMES = ["c", "0", 0, None, "", " ", 1.5, "c"]


@st.composite
def name_cases(draw):
    names = draw(st.lists(st.sampled_from(_NAMES), min_size=1, max_size=3))
    form = draw(st.sampled_from(["dict", "list"]))
    return {"api": "DataFramePrivatizer names", "names": names, "form": form}


def run_name_case(case):
    from sklearn_uldp.compose import DataFramePrivatizer

    names, api = case["names"], f"DataFramePrivatizer names[{case['form']}]"
    try:
        df = pd.DataFrame({i: ["a", "b", "a"] for i in range(len(names))})
        df.columns = pd.Index(names, dtype=object)
    except Exception:  # noqa: BLE001 - not a frame pandas builds
        return Outcome(OK, api)

    def rr():
        return M.RandomizedResponse(1.0, categories=["a", "b"], random_state=0)

    if case["form"] == "dict":
        mechs = {n: rr() for n in names}
    else:
        mechs = [(str(i), rr(), [n]) for i, n in enumerate(names)]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            priv = DataFramePrivatizer(mechs)
            out = priv.fit_transform(df)
            est = priv.estimate(out)
    except Exception as exc:  # noqa: BLE001
        return classify_exception(exc, api, "may")
    if len(out) != len(df):
        return Outcome(WRONG, api, "rows lost", f"{len(out)} of {len(df)}")
    for series in est.values():
        if not np.isclose(float(series.sum()), 1.0):
            return Outcome(WRONG, api, "estimate not a distribution", repr(series))
    return Outcome(OK, api)


# -------------------------------------------------------------- dispatch
RUNNERS = {
    "mechanism": run_mechanism_case,
    "estimator": run_estimator_case,
    "dataframe": run_dataframe_privatizer_case,
    "joint": run_joint_encoder_case,
    "cli": run_cli_case,
    "budget": run_budget_case,
    "spec": run_spec_case,
    "json": run_json_case,
    "table": run_table_case,
    "argv": run_argv_case,
    "names": run_name_case,
}
STRATEGIES = {
    "mechanism": mechanism_cases,
    "estimator": estimator_cases,
    "dataframe": dataframe_privatizer_cases,
    "joint": joint_encoder_cases,
    "cli": cli_cases,
    "budget": budget_cases,
    "spec": spec_cases,
    "json": json_cases,
    "table": table_cases,
    "argv": argv_cases,
    "names": name_cases,
}


ORACLE_ERROR = "oracle_error"


def run(group, case):
    """Run a case; an error of the oracle itself is reported, not swallowed."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return RUNNERS[group](case)
        except _Wrong as w:
            return Outcome(WRONG, case.get("api", group), w.kind, w.detail)
        except Exception as exc:  # noqa: BLE001 - a defect of this file
            tb = traceback.extract_tb(exc.__traceback__)[-1]
            return Outcome(
                ORACLE_ERROR,
                case.get("api", group),
                f"{type(exc).__name__} at {os.path.basename(tb.filename)}:{tb.lineno}",
                str(exc)[:300],
            )


def describe(case):
    """A short, printable description of a case."""

    def short(v):
        r = repr(v)
        return r if len(r) < 100 else r[:97] + "..."

    c = {k: v for k, v in case.items() if not k.startswith("_")}
    if "mcase" in c:
        c["mcase"] = {k: v for k, v in c["mcase"].items() if not k.startswith("_")}
    return {
        k: (short(v) if not isinstance(v, dict) else {kk: short(vv) for kk, vv in v.items()})
        for k, v in c.items()
    }


__all__ = [
    "run",
    "describe",
    "STRATEGIES",
    "OK",
    "CLEAR",
    "UNCLEAR",
    "WRONG",
    "REJECTED_VALID",
    "ORACLE_ERROR",
    "sklearn_uldp",
]
