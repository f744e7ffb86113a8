"""sklearn_uldp.longitudinal: where collection over time lives, and the old names.

The memoized mechanisms, their channels and their estimator moved from
``mechanisms`` and ``estimators`` to their own subpackage (layer 3, beside
``numeric``). Checked: the old imports still give the same objects, with a
FutureWarning naming the new import, and nothing of the package uses them;
the top level points at the new home without a warning; specs written
before the move load (the spec names are unchanged); no module of the
subpackage is over 1,200 lines.
"""

import json
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

import sklearn_uldp
from sklearn_uldp import longitudinal
from sklearn_uldp.mechanisms import Channel

MOVED_FROM_MECHANISMS = [
    "LongitudinalGRR",
    "LongitudinalUE",
    "LongitudinalLocalHashing",
    "DBitFlipPM",
    "UtilityOptimizedLongitudinalRR",
    "UtilityOptimizedLongitudinalRAPPOR",
    "LongitudinalGRRChannel",
    "LongitudinalUEChannel",
    "LongitudinalLocalHashingChannel",
    "DBitFlipChannel",
    "UtilityOptimizedLongitudinalRRChannel",
    "UtilityOptimizedLongitudinalRAPPORChannel",
    "PermanentURRChannel",
    "PermanentURAPChannel",
]

#: Specs written by a8328b7 (before the move), one per channel name.
SPECS_BEFORE_THE_MOVE = [
    '{"categories": ["a", "b", "c", "d"], "epsilon_1": 1.0, "epsilon_perm": 2.0, '
    '"mechanism": "lgrr", "parametrization": "exact", "spec_version": 1}',
    '{"categories": ["a", "b", "c", "d"], "epsilon_1": 1.0, "epsilon_perm": 2.0, '
    '"instantaneous": "SUE", "mechanism": "lue", "permanent": "SUE", "spec_version": 1}',
    '{"categories": ["a", "b", "c", "d"], "epsilon_1": 1.0, "epsilon_perm": 2.0, '
    '"hash_range": 3, "mechanism": "loloha", "spec_version": 1}',
    '{"categories": ["a", "b", "c", "d"], "d": 2, "epsilon": 1.0, "mechanism": "dbitflip", '
    '"spec_version": 1}',
    '{"categories": ["a", "b", "c", "d"], "epsilon_1": 1.0, "epsilon_perm": 2.0, '
    '"mechanism": "ulrr", "sensitive": [true, false, false, false], "spec_version": 1}',
    '{"categories": ["a", "b", "c", "d"], "epsilon_1": 1.0, "epsilon_perm": 2.0, '
    '"instantaneous": "SUE", "mechanism": "ulrap", "permanent": "OUE", '
    '"sensitive": [true, true, false, false], "spec_version": 1}',
    '{"categories": ["a", "b", "c", "d"], "epsilon_1": 1.0, "epsilon_perm": 2.0, '
    '"mechanism": "urr_permanent", "sensitive": [true, false, false, false], "spec_version": 1}',
    '{"categories": ["a", "b", "c", "d"], "epsilon_1": 1.0, "epsilon_perm": 2.0, '
    '"instantaneous": "SUE", "mechanism": "urap_permanent", "permanent": "OUE", '
    '"sensitive": [true, true, false, false], "spec_version": 1}',
]


@pytest.mark.parametrize("name", MOVED_FROM_MECHANISMS)
def test_old_mechanisms_names_warn_and_give_the_same_object(name):
    import sklearn_uldp.mechanisms as mechanisms

    with pytest.warns(FutureWarning, match=f"from sklearn_uldp.longitudinal import {name}"):
        old = getattr(mechanisms, name)
    assert old is getattr(longitudinal, name)
    assert name not in mechanisms.__all__


def test_old_estimator_name_warns_and_from_imports_work():
    import sklearn_uldp.estimators as estimators

    with pytest.warns(FutureWarning, match="sklearn_uldp.estimators.LongitudinalEstimator moved"):
        from sklearn_uldp.estimators import LongitudinalEstimator
    assert LongitudinalEstimator is longitudinal.LongitudinalEstimator
    with pytest.warns(FutureWarning):
        from sklearn_uldp.mechanisms import LongitudinalGRR  # noqa: F401
    with pytest.raises(AttributeError, match="has no attribute 'NotAName'"):
        estimators.NotAName  # noqa: B018


def test_top_level_names_are_the_new_ones_without_a_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert sklearn_uldp.LongitudinalGRR is longitudinal.LongitudinalGRR
        assert sklearn_uldp.LongitudinalEstimator is longitudinal.LongitudinalEstimator
        assert sklearn_uldp.longitudinal is longitudinal
    assert longitudinal.LongitudinalUE.__module__.startswith("sklearn_uldp.longitudinal.")


@pytest.mark.parametrize("text", SPECS_BEFORE_THE_MOVE)
def test_specs_written_before_the_move_load(text):
    channel = Channel.from_json(text)
    assert type(channel).__module__.startswith("sklearn_uldp.longitudinal.")
    assert json.loads(json.dumps(channel.to_dict(), sort_keys=True)) == json.loads(text)


def test_specs_load_in_a_fresh_process():
    # The registry of spec names (issue 31) resolves the longitudinal names
    # without an import of sklearn_uldp.longitudinal first.
    script = textwrap.dedent(
        f"""
        import json
        from sklearn_uldp.mechanisms import Channel, spec_json_schema
        for text in {SPECS_BEFORE_THE_MOVE!r}:
            Channel.from_json(text)
        names = spec_json_schema()["properties"]["mechanism"]["enum"]
        assert "lgrr" in names and "urap_permanent" in names, names
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True, capture_output=True)


def test_no_module_of_the_subpackage_is_over_1200_lines():
    folder = Path(longitudinal.__file__).parent
    lengths = {p.name: len(p.read_text().splitlines()) for p in folder.glob("*.py")}
    assert max(lengths.values()) <= 1200, lengths
