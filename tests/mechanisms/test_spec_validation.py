"""Specs and reports from outside are validated (issue 11, item 2).

A spec is what a collector loads from elsewhere: every field goes through
the channel's constructor (the same rules as the mechanism's parameters),
with a versioned format and a JSON Schema for other-language clients.
Tampered reports get a clear ReportMismatchError instead of being coerced.
"""

import json
from importlib import resources

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

# Registers the longitudinal channels (as the numeric import below does the
# numeric ones) until names resolve lazily (issue 31, item 1; a fresh process
# is checked in tests/longitudinal/test_longitudinal_package.py).
import sklearn_uldp.longitudinal  # noqa: F401
from sklearn_uldp import (
    RAPPOR,
    BinaryOptimalResponse,
    BlockHadamardResponse,
    EmpiricalEstimator,
    HadamardResponse,
    HighLowHadamardResponse,
    NonPrivate,
    PersonalizedMechanism,
    RandomizedResponse,
    ReportMismatchError,
    UtilityOptimizedRAPPOR,
    UtilityOptimizedRR,
)
from sklearn_uldp.compose import load_spec
from sklearn_uldp.marginals import MarginalChannel  # noqa: F401 (registers "marginals")
from sklearn_uldp.mechanisms import (
    Channel,
    HadamardResponseChannel,
    RandomizedResponseChannel,
    UtilityOptimizedBlockDesign,
    UtilityOptimizedOUE,
)
from sklearn_uldp.mechanisms._channel import CHANNEL_REGISTRY
from sklearn_uldp.numeric import (
    DuchiMechanism,
    HybridMechanism,
    MultiNumericMechanism,
    PiecewiseMechanism,
    SquareWave,
    UtilityOptimizedOneBitMechanism,
)

try:
    from sklearn_uldp.exceptions import InvalidSpecError
    from sklearn_uldp.mechanisms import spec_json_schema
    from sklearn_uldp.mechanisms._channel import SPEC_VERSION
except ImportError:  # so that each reproduction fails on its own on old code
    InvalidSpecError, SPEC_VERSION = ValueError, None

    def spec_json_schema():
        raise AssertionError("no spec schema")


CATS = ["a", "b", "c", "d"]


def _all_mechanisms():
    return [
        RandomizedResponse(1.0, categories=CATS),
        UtilityOptimizedRR(1.0, sensitive=["a"], categories=CATS),
        RAPPOR(1.0, categories=CATS),
        RAPPOR(1.0, theta=0.5, categories=CATS),
        UtilityOptimizedRAPPOR(1.0, sensitive=["a", "b"], categories=CATS),
        UtilityOptimizedRAPPOR(1.0, sensitive=["a", "b"], theta="optimal", categories=CATS),
        UtilityOptimizedOUE(1.0, sensitive=["a", "b"], categories=CATS),
        UtilityOptimizedBlockDesign(1.0, sensitive=["a", "b", "c"], categories=CATS),
        UtilityOptimizedBlockDesign(
            1.0, sensitive=["a", "b", "c"], subset_size={1: 0.5, 2: 0.5}, categories=CATS
        ),
        HadamardResponse(1.0, categories=CATS),
        HadamardResponse(1.0, block_size=2, categories=CATS),
        HighLowHadamardResponse(1.0, sensitive=["a"], categories=CATS),
        BlockHadamardResponse(1.0, blocks=[["a", "b"], ["c"], ["d"]], categories=CATS),
        BinaryOptimalResponse(1.0, 2.0, categories=["no", "yes"]),
        BinaryOptimalResponse(np.inf, 1.0, categories=["no", "yes"]),
        NonPrivate(categories=CATS),
        PersonalizedMechanism(1.0, sensitive=["a"], tags=["home"], categories=CATS),
        PersonalizedMechanism(
            1.0, sensitive=["a"], tags=["home"], mechanism="urap", categories=CATS
        ),
        # numeric columns: the domain is a range (bounds), not categories
        DuchiMechanism(1.0, bounds=(0, 10)),
        PiecewiseMechanism(1.0, bounds=(0, 10)),
        HybridMechanism(1.0, bounds=(0, 10)),
        SquareWave(1.0, bounds=(0, 10)),
        UtilityOptimizedOneBitMechanism(1.0, bounds=(0, 10), sensitive=(0, 2)),
        UtilityOptimizedOneBitMechanism(1.0, bounds=(0, 10), sensitive=(0, 2), disclosure=0.1),
        MultiNumericMechanism(3.0, bounds=[(0, 1), (0, 10)]),
    ]


SPECS = [m.fit().channel_.to_dict() for m in _all_mechanisms()]
SPEC_IDS = [f"{s['mechanism']}-{i}" for i, s in enumerate(SPECS)]


def _spec(name):
    return next(dict(s) for s in SPECS if s["mechanism"] == name)


# ------------------------------------------------------ JSON Schema checks
# The shipped schema is checked with jsonschema (the reference validator, in
# the test extra); the package validates specs itself (Channel.from_dict:
# errors that say how to fix them, and the rules JSON Schema cannot state),
# so jsonschema is no runtime dependency (docs/architecture.md).
jsonschema = pytest.importorskip("jsonschema", reason="pip install -e '.[test]'")


def validates(value, schema):
    """Whether ``value`` is valid under ``schema`` (draft 2020-12)."""
    return jsonschema.Draft202012Validator(schema).is_valid(value)


def test_the_shipped_schema_is_a_valid_draft_2020_12_schema():
    jsonschema.Draft202012Validator.check_schema(spec_json_schema())


# ----------------------------------------------------------------- schema
def test_schema_file_is_generated_from_the_channels():
    shipped = json.loads(
        resources.files("sklearn_uldp.mechanisms")
        .joinpath("spec.schema.json")
        .read_text(encoding="utf-8")
    )
    assert shipped == spec_json_schema()
    ours = {
        name for name, cls in CHANNEL_REGISTRY.items() if cls.__module__.startswith("sklearn_uldp.")
    }
    assert set(shipped["$defs"]) == ours


@pytest.mark.parametrize("spec", SPECS, ids=SPEC_IDS)
def test_every_spec_validates_against_the_schema(spec):
    schema = spec_json_schema()
    text = json.dumps(spec, allow_nan=False)  # standard JSON (no Infinity)
    assert validates(json.loads(text), schema)
    assert spec["spec_version"] == SPEC_VERSION == 1
    assert Channel.from_json(text) == Channel.from_dict(spec)


@pytest.mark.parametrize(
    "mutate",
    [
        lambda s: s.update(epsilon=0),
        lambda s: s.update(epsilon=-1),
        lambda s: s.update(epsilon="1.0"),
        lambda s: s.update(epsilon=True),
        lambda s: s.update(spec_version=2),
        lambda s: s.update(extra=1),
        lambda s: s.pop("epsilon"),
        lambda s: s.update(categories=["a"]),
        lambda s: s.update(categories=["a", "a"]),
        lambda s: s.update(mechanism="nope"),
    ],
    ids=[
        "eps0",
        "eps-1",
        "eps-str",
        "eps-bool",
        "version",
        "extra",
        "missing",
        "one-cat",
        "dup",
        "mechanism",
    ],
)
def test_schema_rejects_what_from_dict_rejects(mutate):
    schema = spec_json_schema()
    spec = _spec("rr")
    mutate(spec)
    assert not validates(spec, schema)
    with pytest.raises(InvalidSpecError):
        Channel.from_dict(spec)


def test_schema_rejects_bad_fields_of_parametrized_mechanisms():
    schema = spec_json_schema()
    for name, field, value in [
        ("urap", "theta", 1.5),
        ("urap", "theta", "0.5"),
        ("urap", "theta", True),
        ("urr", "sensitive", [False] * 4),
        ("urr", "sensitive", [1, 0, 0, 0]),
        ("hr", "block_size", 1),
        ("hr", "block_size", "4"),
        ("bhr", "blocks", ["x", 0, 1, 2]),
        ("ubd", "subset_size", 0),
        ("binary_optimal", "epsilon_12", "oops"),
    ]:
        spec = _spec(name)
        spec[field] = value
        assert not validates(spec, schema), (name, field, value)
        with pytest.raises(InvalidSpecError, match=field if field != "theta" else "theta"):
            Channel.from_dict(spec)


# -------------------------------------------------- from_dict: every field
@pytest.mark.parametrize(
    "epsilon, exc",
    [
        (0, "must be > 0"),
        (0.0, "must be > 0"),
        (-1, "must be > 0"),
        ("1.0", "positive real number"),
        (True, "positive real number"),
        (None, "positive real number"),
        (float("nan"), "NaN"),
        (float("inf"), "no privacy"),
        ([1.0], "positive real number"),
    ],
)
@pytest.mark.parametrize("name", ["rr", "urr", "rappor", "urap", "ubd", "hr", "hlhr", "bhr"])
def test_bad_epsilon_in_any_spec(name, epsilon, exc):
    spec = _spec(name)
    spec["epsilon"] = epsilon
    with pytest.raises(InvalidSpecError, match=exc) as info:
        Channel.from_dict(spec)
    assert f"mechanism {name!r}" in str(info.value)
    # InvalidSpecError is both a ValueError and a TypeError.
    assert isinstance(info.value, ValueError) and isinstance(info.value, TypeError)


@pytest.mark.parametrize(
    "theta, match",
    [
        ("0.5", "real number"),
        (True, "real number"),
        (False, "real number"),
        (1.5, "strictly between"),
        (0.0, "strictly between"),
        (1.0, "strictly between"),
        (float("nan"), "strictly between"),
        (None, "real number"),
    ],
)
@pytest.mark.parametrize("name", ["rappor", "urap"])
def test_bad_theta_in_spec(name, theta, match):
    spec = _spec(name)
    spec["theta"] = theta
    with pytest.raises(InvalidSpecError, match=match):
        Channel.from_dict(spec)


@pytest.mark.parametrize(
    "categories, match",
    [
        ([], "at least two"),
        (["a"], "at least two"),
        (["a", "b", "a"], "duplicates"),
        ([1.0, float("nan"), None], "duplicates"),
        ([["a", "b"], ["c", "d"]], "one-dimensional"),
        ("ab", "list of values"),
        ({"a": 1}, "list of values"),
    ],
)
def test_bad_categories_in_spec(categories, match):
    spec = _spec("rr")
    spec["categories"] = categories
    with pytest.raises(InvalidSpecError, match=match):
        Channel.from_dict(spec)


@pytest.mark.parametrize(
    "sensitive, match",
    [
        ([False, False, False, False], "marks no category sensitive"),
        ([1, 0, 0, 0], "booleans"),
        (["a"], "booleans"),
        ([True, False], "one entry per category"),
        ("a", "boolean mask"),
    ],
)
@pytest.mark.parametrize("name", ["urr", "urap", "hlhr", "ubd"])
def test_bad_sensitive_mask_in_spec(name, sensitive, match):
    spec = _spec(name)
    spec["sensitive"] = sensitive
    with pytest.raises(InvalidSpecError, match=match):
        Channel.from_dict(spec)


def test_empty_categories_no_zero_division():
    # Old code: ZeroDivisionError deep inside the estimator.
    spec = {"mechanism": "rr", "categories": [], "epsilon": 1.0}
    with pytest.raises(InvalidSpecError, match="at least two"):
        EmpiricalEstimator(mechanism=spec).fit(np.zeros((3, 1), dtype=int))


def test_other_channel_parameters_are_validated():
    bad = [
        ("hr", {"block_size": 3}, "power of two"),
        ("hr", {"block_size": "4"}, "integer power of two"),
        ("hr", {"block_size": True}, "integer power of two"),
        ("bhr", {"blocks": ["x", "y", "z", "w"]}, "integer block id"),
        ("bhr", {"blocks": [0, 1]}, "one integer block id per category"),
        ("ubd", {"subset_size": 1.5}, "subset_size must be an integer"),
        ("ubd", {"subset_size": "1"}, "subset_size must be an integer"),
        ("ubd", {"subset_size": 7}, "between 1 and"),
        ("ubd", {"subset_size": {"x": 1.0}}, "mixture keys"),
        ("ubd", {"subset_size": {"1": "half"}}, "mixture weights"),
        ("binary_optimal", {"epsilon_12": "inf", "epsilon_21": "inf"}, "both be infinite"),
        ("binary_optimal", {"epsilon_12": 0}, "must be > 0"),
        ("binary_optimal", {"epsilon_21": "x"}, "must be a number"),
        ("binary_optimal", {"categories": ["a", "b", "c"]}, "exactly two"),
    ]
    for name, change, match in bad:
        spec = _spec(name)
        spec.update(change)
        with pytest.raises(InvalidSpecError, match=match):
            Channel.from_dict(spec)


def test_unknown_mechanism_and_fields():
    with pytest.raises(InvalidSpecError, match="Unknown mechanism 'foo'.*known"):
        Channel.from_dict({"mechanism": "foo", "categories": CATS, "epsilon": 1})
    with pytest.raises(InvalidSpecError, match="Unknown mechanism"):
        Channel.from_dict({"mechanism": ["rr"], "categories": CATS, "epsilon": 1})
    with pytest.raises(InvalidSpecError, match="no 'mechanism' field"):
        Channel.from_dict({"categories": CATS, "epsilon": 1})
    with pytest.raises(InvalidSpecError, match=r"Unknown field\(s\) \['epsilom'\]"):
        Channel.from_dict({"mechanism": "rr", "categories": CATS, "epsilom": 1})
    with pytest.raises(InvalidSpecError, match=r"misses the field\(s\) \['theta'\]"):
        Channel.from_dict({"mechanism": "rappor", "categories": CATS, "epsilon": 1})
    with pytest.raises(InvalidSpecError, match="JSON object"):
        Channel.from_dict([("mechanism", "rr")])
    with pytest.raises(InvalidSpecError, match="not valid JSON"):
        Channel.from_json("{mechanism: rr")


@pytest.mark.parametrize(
    "version, match",
    [
        (2, "newer than the version 1"),
        (99, "Upgrade"),
        (0, ">= 1"),
        ("1", "must be an integer"),
        (True, "must be an integer"),
        (1.0, "integer"),
    ],
)
def test_spec_version(version, match):
    spec = _spec("rr")
    spec["spec_version"] = version
    with pytest.raises(InvalidSpecError, match=match):
        Channel.from_dict(spec)


def test_missing_spec_version_reads_as_version_1():
    # Specs saved before the field existed keep loading.
    spec = _spec("urr")
    del spec["spec_version"]
    assert Channel.from_dict(spec) == Channel.from_dict(_spec("urr"))


def test_infinite_budget_is_written_as_standard_json():
    channel = BinaryOptimalResponse(np.inf, 1.0, categories=["n", "y"]).fit().channel_
    text = channel.to_json(allow_nan=False)
    assert json.loads(text)["epsilon_12"] == "inf"
    assert Channel.from_json(text) == channel
    # Specs written with Python's non-standard Infinity still load.
    legacy = text.replace('"inf"', "Infinity")
    assert Channel.from_json(legacy) == channel


def test_mechanism_and_spec_share_one_definition():
    """The same value is refused by the mechanism and by the spec."""
    for epsilon in (0, -1, float("nan")):
        with pytest.raises(ValueError):
            RandomizedResponse(epsilon, categories=CATS).fit()
        with pytest.raises(InvalidSpecError):
            Channel.from_dict({"mechanism": "rr", "categories": CATS, "epsilon": epsilon})
    with pytest.raises(ValueError, match="strictly between"):
        RAPPOR(1.0, theta=1.5, categories=CATS).fit()
    with pytest.raises(ValueError, match="duplicates"):
        RandomizedResponseChannel(["a", "a"], 1.0)


def test_load_spec_and_estimators_validate(tmp_path):
    path = tmp_path / "spec.json"
    path.write_text(json.dumps({"mechanism": "rr", "categories": CATS, "epsilon": -1}))
    with pytest.raises(InvalidSpecError, match="must be > 0"):
        load_spec(path)
    multi = tmp_path / "multi.json"
    multi.write_text(
        json.dumps(
            {
                "columns": {
                    "x": {
                        "mechanism": "urap",
                        "categories": CATS,
                        "epsilon": 1.0,
                        "theta": "0.5",
                        "sensitive": [True, False, False, False],
                    }
                }
            }
        )
    )
    with pytest.raises(InvalidSpecError, match="theta"):
        load_spec(multi)
    with pytest.raises(ValueError, match="must be > 0"):
        EmpiricalEstimator(mechanism={"mechanism": "rr", "categories": CATS, "epsilon": 0}).fit(
            np.array([["a"]], dtype=object)
        )


def test_spec_is_not_modified():
    spec = _spec("urr")
    before = json.dumps(spec)
    Channel.from_dict(spec)
    assert json.dumps(spec) == before


# ------------------------------------------------------- tampered reports
def _hr():
    return HadamardResponseChannel(CATS, 1.0)


@pytest.mark.parametrize(
    "reports, match",
    [
        (np.array([0.0, 1.0, 2.0]), "floating-point"),
        (np.array([1.0]), "floating-point"),
        (np.array([True, False]), "booleans"),
        (np.array(["1", "2"]), "dtype <U1"),
        (np.array(["1", 2], dtype=object), "type mixed"),
        (np.array([1.0, 2], dtype=object), "type mixed-integer-float"),
        (np.array([0, 8]), r"1 value \(integer\), which .* at row 1 "),  # never the value
        (np.array([-1, 0]), r"1 value \(integer\), which .* at row 0 "),
        (pd.Series([0.0, 1.0]), "floating-point"),
        (np.array([[0, 1]]), "shape"),
    ],
)
def test_tampered_codes_are_refused(reports, match):
    channel = _hr()
    with pytest.raises(ReportMismatchError, match=match) as info:
        channel.encode_reports(reports)
    assert (
        "integer codes in [0, 8)" in str(info.value)
        or "cannot produce" in str(info.value)
        or "shape" in str(info.value)
    )


def test_integer_codes_of_any_width_are_accepted():
    channel = _hr()
    for arr in (
        np.array([0, 7], dtype=np.uint8),
        np.array([0, 7], dtype=np.int32),
        np.array([0, 7], dtype=object),
        pd.Series([0, 7], dtype="Int64"),
    ):
        assert channel.encode_reports(arr).tolist() == [0, 7]


@pytest.mark.parametrize(
    "categories, reports, match",
    [
        ([0, 1, 2], np.array([True, False]), "kind 'boolean'"),
        ([0, 1, 2], np.array([1, True], dtype=object), "differs from the category|kind"),
        ([0, 1, 2], np.array(["1", "2"]), "kind 'string'"),
        (["a", "b"], np.array([1, 0]), "kind 'integer'"),
        ([False, True], np.array([0, 1]), "kind 'integer'"),
        (["a", 1], np.array([True], dtype=object), "differs from the category"),
        (["a", 1], np.array(["1"], dtype=object), "outside the outputs"),
        ([0, 1, 2], np.array([1.5]), "outside the outputs"),
        ([0, 1, 2], np.array([3]), "outside the outputs"),
    ],
)
def test_tampered_labels_are_refused(categories, reports, match):
    channel = RandomizedResponseChannel(categories, 1.0)
    with pytest.raises(ReportMismatchError, match=match):
        channel.encode_reports(reports)


def test_labels_of_the_domain_are_accepted():
    channel = RandomizedResponseChannel([0, 1, 2], 1.0)
    assert channel.encode_reports(np.array([2.0, 0.0])).tolist() == [2, 0]
    mixed = RandomizedResponseChannel(["a", 1, None], 1.0)
    assert mixed.encode_reports(np.array(["a", 1, None], dtype=object)).tolist() == [0, 1, 2]


@pytest.mark.parametrize(
    "reports, match",
    [
        (np.array([[0, 2, 0, 0]]), "only 0 and 1"),
        (np.array([[0.5, 0, 0, 0]]), "only 0 and 1"),
        (np.array([["1", "0", "0", "0"]], dtype=object), "type string"),
        (np.array([["1", "0", "0", "0"]]), "0/1 numbers"),
        (np.array([[0, 1, 0]]), r"shape \(n, 4\)"),
        (np.array([0, 1, 0, 0]), r"shape \(n, 4\)"),
        (sp.csr_array(np.array([[0, 3, 0, 0]])), "only 0 and 1"),
        (sp.csr_array(np.array([[0, 1, 0]])), "3 columns"),
    ],
)
def test_tampered_bit_vectors_are_refused(reports, match):
    channel = RAPPOR(1.0, categories=CATS).fit().channel_
    with pytest.raises(ReportMismatchError, match=match):
        channel.encode_reports(reports)


def test_tampered_reports_through_an_estimator():
    mech = HadamardResponse(1.0, categories=CATS, random_state=0).fit()
    R = np.asarray(mech.transform(np.array([["a"], ["b"]], dtype=object)))
    with pytest.raises(ReportMismatchError, match="integer codes"):
        EmpiricalEstimator(mechanism=mech).fit(R.astype(str).astype(object))
    with pytest.raises(ReportMismatchError):
        EmpiricalEstimator(mechanism=mech).fit(R + 100)
