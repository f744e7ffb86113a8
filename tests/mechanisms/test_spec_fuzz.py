"""Specs loaded from files are validated like constructor arguments (issue 30).

``Channel.from_json`` of a uRR spec whose ``sensitive`` mask had been edited
into a ragged list (``[[true], false, false]``) failed with numpy's
"setting an array element with a sequence ... inhomogeneous shape" inside
the package's error. Here an outsider mutates a valid spec of every
registered name (channels and protocols): wrong types, nested and ragged
lists, NaN, infinities, huge numbers, missing and unknown keys. Only the
package's :class:`~sklearn_uldp.exceptions.InvalidSpecError` may come out,
with a message of its own; an accepted spec must round-trip.

As for every fuzz test (tests/README.md): ``test_fuzz_tampered_specs_quick``
runs a small budget by default, ``test_fuzz_tampered_specs`` (slow) the full one.
"""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sklearn_uldp import heavy_hitters as hh
from sklearn_uldp import longitudinal as lg
from sklearn_uldp import marginals as mg
from sklearn_uldp import mechanisms as m
from sklearn_uldp import numeric as nm
from sklearn_uldp.exceptions import InvalidSpecError
from sklearn_uldp.mechanisms import Channel
from sklearn_uldp.mechanisms._registry import SPEC_CLASSES
from sklearn_uldp.mechanisms._spec import PublicSpec

CATS = ["a", "b", "c", "d"]
S = {"sensitive": ["a", "b"], "categories": CATS}
X = np.array([[c] for c in CATS] * 3, dtype=object)
NUMBERS = np.linspace(0, 10, 12).reshape(-1, 1)
ITEMS = ["apple", "pear", "fig", "kiwi"] * 3


def _fit(mech, data=X):
    return lambda: mech.fit(data).channel_


#: name -> () -> a valid spec of that name (a new registry entry needs a line)
SPECS = {
    "rr": _fit(m.RandomizedResponse(1.0, categories=CATS)),
    "urr": _fit(m.UtilityOptimizedRR(1.0, **S)),
    "identity": _fit(m.NonPrivate(categories=CATS)),
    "rappor": _fit(m.RAPPOR(1.0, theta=0.5, categories=CATS)),
    "urap": _fit(m.UtilityOptimizedRAPPOR(1.0, **S)),
    "ubd": _fit(m.UtilityOptimizedBlockDesign(1.0, sensitive=["a", "b", "c"], categories=CATS)),
    "ss": _fit(m.SubsetSelection(1.0, categories=CATS)),
    "uss": _fit(m.UtilityOptimizedSubsetSelection(1.0, **S)),
    "hr": _fit(m.HadamardResponse(1.0, categories=CATS)),
    "hlhr": _fit(m.HighLowHadamardResponse(1.0, **S)),
    "bhr": _fit(m.BlockHadamardResponse(1.0, blocks=[["a", "b"], ["c"], ["d"]], categories=CATS)),
    "binary_optimal": _fit(
        m.BinaryOptimalResponse(1.0, 2.0, categories=["a", "b"]), [["a"], ["b"]]
    ),
    "olh": _fit(m.OptimizedLocalHashing(1.0, categories=CATS)),
    "blh": _fit(m.BinaryLocalHashing(1.0, categories=CATS)),
    "cms": _fit(m.CountMeanSketch(2.0, n_buckets=8, n_hashes=4, categories=CATS)),
    "hcms": _fit(m.HadamardCountMeanSketch(2.0, n_buckets=8, n_hashes=4, categories=CATS)),
    "uue": _fit(m.UtilityOptimizedUnaryEncoding(1.0, **S)),
    "ulh": _fit(m.UtilityOptimizedLocalHashing(1.0, **S)),
    "uhcms": _fit(m.UtilityOptimizedHadamardCountMeanSketch(2.0, n_buckets=8, n_hashes=4, **S)),
    "ubhr": _fit(m.UtilityOptimizedBlockedHadamardResponse(1.0, block_size=2, **S)),
    "smp": lambda: m.UtilityOptimizedRR(1.0, **S).fit().channel_.sampled_channel(3),
    "rsfd": lambda: m.RAPPOR(1.0, categories=CATS).fit().channel_.sampled_fake_channel(3, "zero"),
    "lgrr": _fit(lg.LongitudinalGRR(2.0, categories=CATS)),
    "lue": _fit(lg.LongitudinalUE(2.0, categories=CATS)),
    "loloha": _fit(lg.LongitudinalLocalHashing(2.0, categories=CATS)),
    "dbitflip": _fit(lg.DBitFlipPM(2.0, categories=CATS)),
    "ulrr": _fit(lg.UtilityOptimizedLongitudinalRR(2.0, **S)),
    "ulrap": _fit(lg.UtilityOptimizedLongitudinalRAPPOR(2.0, **S)),
    "urr_permanent": lambda: (
        lg.UtilityOptimizedLongitudinalRR(2.0, **S).fit().channel_.permanent_channel()
    ),
    "urap_permanent": lambda: (
        lg.UtilityOptimizedLongitudinalRAPPOR(2.0, **S).fit().channel_.permanent_channel()
    ),
    "duchi": _fit(nm.DuchiMechanism(1.0, bounds=(0, 10)), NUMBERS),
    "piecewise": _fit(nm.PiecewiseMechanism(1.0, bounds=(0, 10)), NUMBERS),
    "hybrid": _fit(nm.HybridMechanism(1.0, bounds=(0, 10)), NUMBERS),
    "square_wave": _fit(nm.SquareWave(1.0, bounds=(0, 10)), NUMBERS),
    "uobm": _fit(
        nm.UtilityOptimizedOneBitMechanism(1.0, bounds=(0, 10), sensitive=(0, 3)), NUMBERS
    ),
    "multi_numeric": _fit(
        nm.MultiNumericMechanism(2.0, bounds=[(0, 10), (0, 10)]), np.hstack([NUMBERS] * 2)
    ),
    "smp_numeric": lambda: (
        nm.HybridMechanism(1.0, bounds=(0, 10)).fit(NUMBERS).channel_.sampled_channel(2)
    ),
    "rsfd_numeric": lambda: (
        nm.DuchiMechanism(1.0, bounds=(0, 10))
        .fit(NUMBERS)
        .channel_.sampled_fake_channel(2, "random")
    ),
    "marginals": _fit(
        mg.MarginalPrivatizer(2.0, categories={"x": CATS, "y": [0, 1]}, sensitive={"x": ["a"]}),
        pd.DataFrame({"x": CATS * 3, "y": [0, 1] * 6}),
    ),
    "range_queries": _fit(
        mg.RangeQueryPrivatizer(2.0, bounds={"u": (0, 10), "v": (0, 10)}, granularity=(4, 2)),
        pd.DataFrame({"u": NUMBERS[:, 0], "v": NUMBERS[::-1, 0]}),
    ),
    "pem": _fit(hh.PrefixExtendingMethod(4.0, top_k=3), ITEMS),
    "treehist": _fit(hh.TreeHist(4.0, top_k=3), ITEMS),
    "bloom_rappor": _fit(hh.BloomRAPPOR(n_bits=16, n_cohorts=4), ITEMS),
    "uldp_heavy_hitters": _fit(hh.UtilityOptimizedHeavyHitters(4.0, sensitive=["fig"]), ITEMS),
    "uldp_local_hashing": _fit(
        hh.UtilityOptimizedLocalHashingHeavyHitters(4.0, sensitive=["fig"]), ITEMS
    ),
}
NAMES = sorted(SPECS)
_VALID: dict[str, dict] = {}


def valid_spec(name):
    """The spec dict (as to_dict writes it) of ``name``, built once."""
    if name not in _VALID:
        with np.errstate(all="ignore"):
            _VALID[name] = SPECS[name]().to_dict()
    return json.loads(json.dumps(_VALID[name]))  # a fresh copy, as a file gives


def test_every_registered_name_has_a_spec():
    assert set(SPECS) == set(SPEC_CLASSES), sorted(set(SPEC_CLASSES) ^ set(SPECS))


# ------------------------------------------------------------------ mutations
SCALARS = st.sampled_from(
    [
        None,
        True,
        False,
        0,
        -1,
        1,
        2,
        0.5,
        -0.5,
        1e-300,
        1e308,
        10**400,
        -(10**30),
        math.nan,
        math.inf,
        -math.inf,
        "",
        "x",
        "1.5",
        "nan",
        [],
        {},
        {"a": 1},
    ]
)


def _nested(value):
    return [value]


@st.composite
def mutations(draw, name):
    spec = valid_spec(name)
    keys = sorted(k for k in spec if k not in ("mechanism", "protocol"))
    key = draw(st.sampled_from([*keys, "spec_version", "extra"]))
    value = spec.get(key)
    kind = draw(
        st.sampled_from(
            ["delete", "scalar", "wrap", "element", "ragged", "other_field", "duplicate", "trim"]
        )
    )
    if kind == "delete":
        spec.pop(key, None)
    elif kind == "scalar":
        spec[key] = draw(SCALARS)
    elif kind == "wrap":
        spec[key] = _nested(value)
    elif kind == "other_field":
        spec[key] = spec[draw(st.sampled_from(keys))]
    elif isinstance(value, list) and value:
        i = draw(st.integers(0, len(value) - 1))
        if kind == "element":
            value[i] = draw(SCALARS)
        elif kind == "ragged":
            value[i] = _nested(value[i])
        elif kind == "duplicate":
            value.append(value[i])
        else:
            del value[i]
        spec[key] = value
    else:
        spec[key] = draw(SCALARS)
    return spec


# Messages of numpy, Python or pandas that must not reach a user as the
# explanation of a bad spec: the package says what is wrong in its own words.
FOREIGN = (
    "inhomogeneous",
    "setting an array element",
    "could not convert",
    "object of type",
    "has no len",
    "not subscriptable",
    "unhashable type",
    "int too large",
    "cannot convert float",
    "invalid literal",
    "object is not iterable",
    "index out of",
    "unsupported operand",
    "not supported between",
    "'NoneType'",
    "truth value of an array",
    "Cannot cast",
    "OverflowError",
)


def _load(spec, via):
    if via == "dict":
        return PublicSpec.from_dict(spec)
    return PublicSpec.from_json(json.dumps(spec))  # allow_nan: NaN/Infinity in the text


def check_outcome(spec, via):
    try:
        # numpy's floating-point warnings must not reach a user either
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            loaded = _load(spec, via)
    except InvalidSpecError as exc:
        message = str(exc)
        assert message and not any(text in message for text in FOREIGN), message
        return
    # accepted: it must be a spec that writes and reads itself back
    again = PublicSpec.from_dict(loaded.to_dict())
    assert again == loaded
    if isinstance(loaded, Channel):
        assert Channel.from_json(loaded.to_json()) == loaded


def test_the_reported_case():
    spec = valid_spec("urr")
    spec["sensitive"] = [[True], False, False, False]
    with pytest.raises(InvalidSpecError, match="one-dimensional boolean mask") as info:
        Channel.from_json(json.dumps(spec))
    assert "inhomogeneous" not in str(info.value)


def _fuzz(name, budget):
    @settings(
        max_examples=budget,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(spec=mutations(name), via=st.sampled_from(["dict", "json"]))
    def run(spec, via):
        check_outcome(spec, via)

    run()


@pytest.mark.parametrize("name", NAMES)
def test_fuzz_tampered_specs_quick(name):
    _fuzz(name, 40)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_fuzz_tampered_specs(name):
    _fuzz(name, 600)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("budget", [1e-300, 1e30, 1e308, 10**400, -(10**400)])
def test_extreme_budgets_give_package_errors(name, budget):
    # found by the fuzz: 1e-300 divided by an underflowed tanh (numeric
    # channels), 10**400 escaped as OverflowError
    spec = valid_spec(name)
    fields = [k for k in spec if k.startswith("epsilon")] or ["epsilon"]
    for field in fields:
        tampered = {**spec, field: budget}
        if field not in spec:
            tampered.pop(field)
        check_outcome(tampered, "dict")
