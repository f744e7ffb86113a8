"""Known reproductions (issue 11 and earlier fuzz runs) as fuzz cases.

Each entry is ``(group, case)`` for ``_fuzz_oracle.run``; every one of them
failed (unclear crash, silent wrong result or valid input refused) on the code
before issue 11. ``tests/package/test_fuzz.py`` runs them all on every test run.
"""


def _m(api, params, values, how="object", pandas_out=False, fit_on_X=True, focus="all"):
    return {
        "api": api,
        "focus": focus,
        "params": params,
        "values": values,
        "how": how,
        "pandas_out": pandas_out,
        "fit_on_X": fit_on_X,
    }


def _e(name, mcase, via, tamper=None):
    return {"api": name, "mcase": mcase, "via": via, "tamper": tamper}


def _j(d1, rows):
    """A JointEncoder case: domains ``d1`` and x, y joined by "|", rows to encode, defaults."""
    return {
        "api": "JointEncoder",
        "d1": d1,
        "d2": ["x", "y"],
        "rows": rows,
        "separator": "|",
        "sensitive": "none",
        "auto": False,
        "exclude": False,
        "dtype": object,
    }


_RR = _m(
    "RandomizedResponse",
    {"categories": ["a", "b", "c"], "epsilon": 1.0, "random_state": 0},
    ["a", "b", "c", "a"],
)

_URR = _m(
    "UtilityOptimizedRR",
    {"categories": ["a", "b", "c"], "epsilon": 1.0, "sensitive": ["a"], "random_state": 0},
    ["a", "b", "c", "a"],
)

_HR = _m(
    "HadamardResponse",
    {"categories": ["a", "b", "c"], "epsilon": 1.0, "block_size": None, "random_state": 0},
    ["a", "b", "c", "a"],
)

_UBD = _m(
    "UtilityOptimizedBlockDesign",
    {
        "categories": ["a", "b", "c"],
        "epsilon": 1.0,
        "sensitive": ["a"],
        "subset_size": 1,
        "sparse_output": False,
        "random_state": 0,
    },
    ["a", "b", "c", "a"],
)

_PUM = {
    "api": "PersonalizedMechanism",
    "focus": "none",
    "params": {
        "categories": ["a", "b", "c"],
        "epsilon": 1.0,
        "sensitive": ["a"],
        "mechanism": "urr",
        "n_reports": 1,
        "tags": ("home",),
        "random_state": 0,
    },
    "values": ["a", "b", "c", "b"],
    "how": "pum",
    "tags": {"home": ["b", None, "c", "b"]},
    "extra": None,
    "pandas_out": False,
    "fit_on_X": True,
}

KNOWN = [
    (
        "mechanism",
        _m(
            "RandomizedResponse",
            {"categories": ["a", "b", "c"], "epsilon": 710.0, "random_state": 0},
            ["a", "b"],
        ),
    ),
    (
        "mechanism",
        _m(
            "UtilityOptimizedRR",
            {
                "categories": list(range(6)),
                "epsilon": 710.0,
                "sensitive": [4, 5],
                "random_state": 0,
            },
            [0, 1, 5],
        ),
    ),
    (
        "mechanism",
        _m(
            "RAPPOR",
            {
                "categories": list(range(6)),
                "epsilon": 709.8,
                "theta": None,
                "sparse_output": False,
                "random_state": 0,
            },
            [0, 1, 5],
        ),
    ),
    (
        "mechanism",
        _m(
            "HadamardResponse",
            {"categories": list("abcdef"), "epsilon": 1e308, "block_size": 8, "random_state": 0},
            ["a"],
        ),
    ),
    (
        "mechanism",
        _m(
            "BinaryOptimalResponse",
            {
                "categories": ["a", "b"],
                "epsilon_12": 2.0**70,
                "epsilon_21": float("inf"),
                "random_state": 0,
            },
            ["a", "b"],
        ),
    ),
    (
        "mechanism",
        _m(
            "BinaryOptimalResponse",
            {"categories": [1, "a"], "epsilon_12": 0.5, "epsilon_21": 0.5, "random_state": 0},
            [1, 1],
            how="native",
        ),
    ),
    (
        "mechanism",
        _m(
            "RandomizedResponse",
            {"categories": [1, 2.5], "epsilon": 0.1, "random_state": 0},
            [1] * 20,
            how="native",
        ),
    ),
    # A bool inside an integer column is not the category 1 (see the oracle's policy).
    (
        "mechanism",
        _m(
            "RandomizedResponse",
            {"categories": [0, 1], "epsilon": 1.0, "random_state": 0},
            [1, True],
            how="series",
        ),
    ),
    (
        "mechanism",
        _m(
            "RandomizedResponse",
            {"categories": [b"\xff", ""], "epsilon": 2.0, "random_state": 0},
            [b"\xff", ""],
        ),
    ),
    (
        "mechanism",
        _m(
            "NonPrivate",
            {"categories": [False, True]},
            [False, False, False],
            how="df_category",
            fit_on_X=False,
        ),
    ),
    (
        "mechanism",
        _m(
            "UtilityOptimizedRR",
            {
                "categories": ["a", 1, 2.5, b"x"],
                "epsilon": 1.5,
                "sensitive": [b"x"],
                "random_state": 0,
            },
            [2.5, 1],
            how="series",
        ),
    ),
    (
        "mechanism",
        _m(
            "RAPPOR",
            {
                "categories": ["a", 1, 2.5, b"x"],
                "epsilon": 4.0,
                "theta": 0.5,
                "sparse_output": False,
                "random_state": 0,
            },
            [1],
            pandas_out=True,
        ),
    ),
    ("mechanism", _m("NonPrivate", {"categories": ["a", 1, 2.5]}, [2.5, "a"], pandas_out=True)),
    ("estimator", _e("EmpiricalEstimator", _RR, "spec_tampered", ("epsilon", 0))),
    ("estimator", _e("ThresholdEstimator", _RR, "spec_tampered", ("epsilon", "1.0"))),
    (
        "estimator",
        _e("EmpiricalEstimator:simplex", _URR, "spec_tampered", ("sensitive", "all_false")),
    ),
    ("estimator", _e("EmpiricalEstimator:simplex", _HR, "spec_tampered", ("categories", []))),
    ("estimator", _e("EmpiricalEstimator:simplex", _UBD, "spec_tampered", ("epsilon", 0))),
    ("estimator", _e("EmpiricalEstimator:clip", _HR, "tampered", "float")),
    ("estimator", _e("EMEstimator", _HR, "tampered", "str")),
    ("estimator", _e("EmpiricalEstimator:clip", _RR, "spec_tampered", ("categories", "dup"))),
    (
        "estimator",
        _e("PersonalizedEstimator", _PUM, "params", ({"background": "not_dict"}, "reject")),
    ),
    (
        "mechanism",
        _m(
            "BinaryOptimalResponse",
            {"categories": [True, False], "epsilon_12": 1.0, "epsilon_21": 1.0, "random_state": 0},
            [True, False, False],
            how="df_category",
            fit_on_X=False,
        ),
    ),
    (
        "estimator",
        _e(
            "EMEstimator",
            _m(
                "NonPrivate",
                {"categories": list(range(6))},
                [1, 1, 3, 5, 2, 0, 2, 0, 0, 2, 3, 2, 5, 1],
            ),
            "params",
            ({"init": "zeros"}, "may"),
        ),
    ),
    (
        "dataframe",
        {
            "api": "DataFramePrivatizer",
            "mcase": _m(
                "BinaryOptimalResponse",
                {"categories": "auto", "epsilon_12": 0.1, "epsilon_21": 0.1, "random_state": 7},
                [645, 645],
            ),
            "missing": "category",
            "missing_label": "(missing)",
            "dtype": "category",
            "random_state": None,
            "second": False,
        },
    ),
    (
        "joint",
        _j([["a", "b"], ["c", "d"]], [("a", "x")]),
    ),
    (
        "joint",
        _j(["v0", "v1", float("nan")], [(None, "y")]),
    ),
    (
        "joint",
        _j("abc", [("a", "y")]),
    ),
    # Found by the fuzz runs of issue 11: booleans matched to numbers (and
    # back) in object columns, typed joint values, duplicate joint domains.
    (
        "mechanism",
        _m(
            "HadamardResponse",
            {"categories": [False, True], "epsilon": 2.0, "block_size": None, "random_state": 0},
            [False, 1.0, True],
            fit_on_X=False,
        ),
    ),
    (
        "mechanism",
        _m(
            "RAPPOR",
            {
                "categories": ["a", 1, 2.5, b"x"],
                "epsilon": 1.0,
                "theta": 0.9,
                "sparse_output": False,
                "random_state": 0,
            },
            ["a", b"x", True],
            how="series",
        ),
    ),
    (
        "mechanism",
        _m(
            "RandomizedResponse",
            {"categories": [True, 2], "epsilon": 1.0, "random_state": 0},
            [2, 1],
        ),
    ),
    (
        "mechanism",
        _m(
            "HadamardResponse",
            {"categories": [False, True], "epsilon": 1.0, "block_size": None, "random_state": None},
            [False],
            how="df_category",
        ),
    ),
    (
        "joint",
        _j(["1", "2"], [(1, "x")]),
    ),
    (
        "joint",
        _j([True, 1, 0], [(True, "x")]),
    ),
]

_CLI_OPTS = {
    "mechanism": "urr",
    "epsilon": "1",
    "theta": None,
    "categories": "given",
    "sensitive": "first",
    "missing": None,
    "random_state": "0",
    "output": "r.csv",
    "estimator": "emp",
    "spec_tamper": None,
    "column": "c",
    "report_tamper": None,
    "config": None,
}


def _cli(**opts):
    return (
        "cli",
        {
            "api": "CLI",
            "focus": "known",
            "values": ["a", "b", "a", "b", "a"],
            "domain": ["a", "b"],
            "opts": {**_CLI_OPTS, **opts},
        },
    )


KNOWN += [
    _cli(mechanism="uoue", report_tamper="256"),
    _cli(output="r.xlsx"),
    _cli(output="."),
    _cli(output="same"),
    _cli(mechanism="rr", sensitive="none", spec_tamper=("epsilon", "1.0")),
    _cli(mechanism="rr", sensitive="none", spec_tamper=("epsilon", 0)),
]

KNOWN.append(
    (
        "cli",
        {
            "api": "CLI search",
            "focus": "known",
            "values": list("aabbcab") * 2,
            "argv": [
                "--column",
                "c",
                "--categories",
                "a,b,c",
                "--sensitive",
                "a",
                "--mechanisms",
                "urr",
                "rr",
                "--epsilon",
                "1",
                "--n-repeats",
                "1",
                "-o",
                "OUT",
            ],
            "verdict": "reject",
        },
    )
)
