"""Every mechanism that takes ``sensitive`` checks its shape with one rule.

``HighLowHadamardResponse(sensitive=[["1.5"]])`` used to be read as
``["1.5"]``: the nested list was flattened without a word, while another
mechanism refused it with numpy's "inhomogeneous shape". A sensitive set is
a flat list of values (categories, items), a boolean mask or a predicate;
the numeric mechanisms take a range ``(low, high)`` or a list of ranges.
Anything nested deeper is refused by ``check_list_shape`` with a message
that says what the parameter holds and never quotes the values.

The mechanisms are found by their signature, so a new family that takes
``sensitive`` must be added to ``_BUILDERS`` (the last test fails until it is).
"""

import importlib
import inspect

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

#: A category nobody would type: it must appear in no message.
MARKER = "MARKER-7f3a"
CATS = [MARKER, "b", "c", "d"]
X_CATS = np.array([[c] for c in CATS] * 3, dtype=object)


def _categorical(cls, **params):
    def build(sensitive):
        return cls(sensitive=sensitive, categories=CATS, random_state=0, **params).fit(X_CATS)

    return build


def _heavy(cls):
    def build(sensitive):
        return cls(epsilon=2.0, sensitive=sensitive, random_state=0).fit(CATS * 3)

    return build


def _personalized(sensitive):
    from sklearn_uldp.mechanisms import PersonalizedMechanism

    frame = pd.DataFrame({"cell": CATS * 3, "home": [None, "c", None, "d"] * 3})
    return PersonalizedMechanism(
        epsilon=1.0, sensitive=sensitive, tags=["home"], categories=CATS, random_state=0
    ).fit(frame)


def _marginals(sensitive):
    from sklearn_uldp.marginals import MarginalPrivatizer

    frame = pd.DataFrame({"x": CATS * 3, "y": ["u", "v", "u", "v"] * 3})
    return MarginalPrivatizer(
        2.0, categories={"x": CATS, "y": ["u", "v"]}, sensitive={"x": sensitive}, random_state=0
    ).fit(frame)


def _one_bit(sensitive):
    from sklearn_uldp.numeric import UtilityOptimizedOneBitMechanism

    return UtilityOptimizedOneBitMechanism(
        1.0, bounds=(0, 10), sensitive=sensitive, random_state=0
    ).fit()


def _builders():
    from sklearn_uldp import heavy_hitters as hh
    from sklearn_uldp import longitudinal as lg
    from sklearn_uldp import mechanisms as m

    categorical = {
        cls: _categorical(cls, epsilon=1.0)
        for cls in (
            m.UtilityOptimizedRR,
            m.HighLowHadamardResponse,
            m.UtilityOptimizedHadamardResponse,
            m.UtilityOptimizedRAPPOR,
            m.UtilityOptimizedOUE,
            m.UtilityOptimizedBlockDesign,
            m.UtilityOptimizedSubsetSelection,
            m.TransformedSubsetSelection,
            m.UtilityOptimizedUnaryEncoding,
            m.UtilityOptimizedLocalHashing,
            m.UtilityOptimizedHadamardCountMeanSketch,
            m.UtilityOptimizedBlockedHadamardResponse,
        )
    }
    categorical[m.PersonalizedMechanism] = _personalized
    for cls in (lg.UtilityOptimizedLongitudinalRR, lg.UtilityOptimizedLongitudinalRAPPOR):
        categorical[cls] = _categorical(cls)
    from sklearn_uldp.marginals import MarginalPrivatizer
    from sklearn_uldp.numeric import UtilityOptimizedOneBitMechanism

    return {
        "values": {
            **categorical,
            hh.UtilityOptimizedHeavyHitters: _heavy(hh.UtilityOptimizedHeavyHitters),
            hh.UtilityOptimizedLocalHashingHeavyHitters: _heavy(
                hh.UtilityOptimizedLocalHashingHeavyHitters
            ),
            MarginalPrivatizer: _marginals,
        },
        "ranges": {UtilityOptimizedOneBitMechanism: _one_bit},
    }


_BUILDERS = _builders()
_VALUES = list(_BUILDERS["values"].items())
_IDS = [cls.__name__ for cls, _ in _VALUES]

#: Lists nested at least once, with categories as leaves (ragged or not).
leaf = st.sampled_from(CATS[:2])
nested_lists = st.one_of(
    # [[v]], [[v, w], [x]], [v, [w]]: at least one entry is itself a list
    st.lists(st.one_of(leaf, st.lists(leaf, max_size=3)), min_size=1, max_size=4).filter(
        lambda v: any(isinstance(e, list) for e in v)
    ),
    # [(v,)], tuples of categories
    st.lists(st.tuples(leaf), min_size=1, max_size=3),
    # a 2-D or 3-D array of categories
    st.sampled_from([(1, 1), (1, 2), (2, 1), (2, 2), (1, 1, 1)]).map(
        lambda shape: np.full(shape, MARKER, dtype=object)
    ),
)


def _refusal(build, sensitive):
    with pytest.raises(ValueError) as info:
        build(sensitive)
    message = str(info.value)
    assert MARKER not in message, message
    assert "inhomogeneous" not in message and "sequence" not in message, message
    return message


@pytest.mark.parametrize("cls, build", _VALUES, ids=_IDS)
@settings(
    max_examples=15,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(sensitive=nested_lists)
def test_nested_sensitive_values_are_refused_alike(cls, build, sensitive):
    message = _refusal(build, sensitive)
    assert "must be a flat list of" in message, message
    assert "one-dimensional" in message, message


@pytest.mark.parametrize("cls, build", _VALUES, ids=_IDS)
def test_the_reported_case_and_a_flat_list(cls, build):
    # the case of the report: a list in a list
    _refusal(build, [["b"]])
    # the same values flat are accepted (two sensitive values: uLH needs two)
    build(["b", "c"])


@settings(max_examples=20, deadline=None, derandomize=True, database=None)
@given(
    ranges=st.lists(
        st.lists(st.tuples(st.integers(0, 4), st.integers(5, 9)), min_size=1, max_size=2),
        min_size=1,
        max_size=3,
    )
)
def test_nested_sensitive_ranges_are_refused(ranges):
    # a range is (low, high); a list of ranges is two-dimensional, no deeper
    (build,) = _BUILDERS["ranges"].values()
    with pytest.raises(ValueError, match="at most two-dimensional"):
        build(ranges)
    build([list(r) for r in ranges[0]])


def test_a_string_is_not_a_list_of_items():
    # The spec of the heavy hitters read "abc" as the items a, b, c; the
    # mechanisms' parameter validation refuses a string, so does the spec.
    from sklearn_uldp.heavy_hitters._utility import UtilityOptimizedProtocol

    with pytest.raises(ValueError, match="must be a list of items, got a str"):
        UtilityOptimizedProtocol(2.0, "abc")
    assert UtilityOptimizedProtocol(2.0, ["abc"]).sensitive == ["abc"]


def _mechanism_classes():
    """Every public class of the package whose constructor takes ``sensitive``."""
    found = set()
    for module in (
        "sklearn_uldp.mechanisms",
        "sklearn_uldp.longitudinal",
        "sklearn_uldp.heavy_hitters",
        "sklearn_uldp.marginals",
        "sklearn_uldp.numeric",
        "sklearn_uldp.compose",
        "sklearn_uldp.learning",
    ):
        mod = importlib.import_module(module)
        for name in mod.__all__:
            obj = getattr(mod, name)
            if (
                inspect.isclass(obj)
                and hasattr(obj, "transform")
                and "sensitive" in inspect.signature(obj).parameters
            ):
                found.add(obj)
    return found


def test_every_mechanism_taking_sensitive_is_covered():
    from sklearn_uldp.compose import JointEncoder

    covered = set(_BUILDERS["values"]) | set(_BUILDERS["ranges"])
    # JointEncoder takes a predicate only (parameter validation refuses lists)
    missing = _mechanism_classes() - covered - {JointEncoder}
    assert not missing, sorted(c.__name__ for c in missing)
