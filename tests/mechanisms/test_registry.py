"""One registry of spec names, resolved without import side effects (issue 31, item 1).

Every spec names the class that reads it. ``mechanisms/_registry.py`` maps
each name the package ships to its class as a ``"module:Class"`` string,
resolved on first use, so what a process can read does not depend on what it
imported before (the numeric specs were unknown to a fresh process, and
``sklearn-uldp estimate`` refused them, issue 30). Heavy-hitter protocols are
in the same table, under one spec-version policy.
"""

from __future__ import annotations

import importlib
import json
import os
import pickle
import pkgutil
import shutil
import subprocess
import sys
import textwrap
import warnings
from importlib import resources

import numpy as np
import pandas as pd
import pytest
from _repo import REPO_ROOT as ROOT

import sklearn_uldp
from sklearn_uldp.exceptions import InvalidSpecError
from sklearn_uldp.mechanisms import Channel, RandomizedResponseChannel
from sklearn_uldp.mechanisms._registry import SPEC_CLASSES, spec_class
from sklearn_uldp.mechanisms._spec import PublicSpec


def _package_spec_classes():
    """Every spec class the package defines (imports every module of it)."""
    for info in pkgutil.walk_packages(sklearn_uldp.__path__, "sklearn_uldp."):
        if info.name.startswith(("sklearn_uldp.cli", "sklearn_uldp.__main__")):
            continue
        try:
            importlib.import_module(info.name)
        except ImportError as exc:  # an optional dependency (plotting, dask)
            if "sklearn_uldp" in str(exc):
                raise
    found, todo = {}, list(PublicSpec.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if cls.__module__.startswith("sklearn_uldp.") and "name" in cls.__dict__:
            found[f"{cls.__module__}:{cls.__qualname__}"] = cls
    return list(found.values())


# ------------------------------------------------------- the table and classes
def test_every_spec_class_of_the_package_is_in_the_table_under_its_name():
    missing = [
        f"{cls.__qualname__} ({cls.name!r})"
        for cls in _package_spec_classes()
        if spec_class(cls.name) is not cls or cls.name not in SPEC_CLASSES
    ]
    assert not missing, (
        "Add these channels or protocols to SPEC_CLASSES in "
        f"sklearn_uldp/mechanisms/_registry.py (one line each): {missing}"
    )


@pytest.mark.parametrize("name", sorted(SPEC_CLASSES))
def test_every_entry_resolves_to_a_class_of_that_name(name):
    cls = spec_class(name)
    assert isinstance(cls, type) and issubclass(cls, PublicSpec), SPEC_CLASSES[name]
    assert cls.__dict__.get("name") == name


def test_the_classes_of_the_table_are_exactly_the_package_spec_classes():
    assert {cls.name for cls in _package_spec_classes()} == set(SPEC_CLASSES)


# ---------------------------------------------------------- fresh processes
def _python(code, *, cwd=None):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=600,
    )


def test_a_fresh_process_reads_numeric_and_heavy_hitter_specs():
    # On the old registry only the channels of imported modules were known:
    # "Unknown mechanism 'hybrid'" without import sklearn_uldp.numeric.
    run = _python(
        """
        import sys
        from sklearn_uldp.mechanisms import Channel
        channel = Channel.from_dict({"mechanism": "hybrid", "spec_version": 1,
                                     "bounds": [0, 10], "epsilon": 1.0})
        print(type(channel).__name__, "sklearn_uldp.numeric" in sys.modules)
        from sklearn_uldp.heavy_hitters import protocol_from_dict
        spec = {"protocol": "pem", "spec_version": 2, "epsilon": 2.0}
        print(type(protocol_from_dict(spec)).__name__)
        """
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["HybridChannel", "True", "PEMProtocol"]


def test_the_schema_is_the_same_in_a_fresh_process_after_every_import_and_shipped():
    dump = "print(json.dumps(spec_json_schema(), indent=2, ensure_ascii=False))"
    fresh = _python(f"import json\nfrom sklearn_uldp.mechanisms import spec_json_schema\n{dump}")
    everything = _python(
        "import json, pkgutil, importlib, sklearn_uldp\n"
        "for info in pkgutil.walk_packages(sklearn_uldp.__path__, 'sklearn_uldp.'):\n"
        "    if info.name.endswith('__main__'): continue\n"
        "    try: importlib.import_module(info.name)\n"
        "    except ImportError: pass\n"
        f"from sklearn_uldp.mechanisms import spec_json_schema\n{dump}"
    )
    assert fresh.returncode == 0, fresh.stderr
    assert everything.returncode == 0, everything.stderr
    shipped = (
        resources.files("sklearn_uldp.mechanisms")
        .joinpath("spec.schema.json")
        .read_text(encoding="utf-8")
    )
    assert fresh.stdout == everything.stdout == shipped
    names = json.loads(fresh.stdout)["properties"]["mechanism"]["enum"]
    assert {"hybrid", "square_wave", "rsfd_numeric"} <= set(names)


def _console_script():
    """The installed ``sklearn-uldp`` entry point (its script, else its function)."""
    script = shutil.which("sklearn-uldp") or shutil.which(
        "sklearn-uldp", path=os.path.dirname(sys.executable)
    )
    if script is not None:
        return [script]
    code = (
        "import sys; from importlib.metadata import entry_points; "
        "ep, = entry_points(group='console_scripts', name='sklearn-uldp'); "
        "sys.exit(ep.load()(sys.argv[1:]))"
    )
    return [sys.executable, "-c", code]


def test_estimate_of_a_numeric_spec_in_a_fresh_process(tmp_path):
    # issue 30: privatize wrote the spec, estimate (a new process, which never
    # imported sklearn_uldp.numeric) refused it: "Unknown mechanism 'hybrid'".
    rng = np.random.default_rng(0)
    data = tmp_path / "ages.csv"
    pd.DataFrame({"age": rng.uniform(20, 60, 400).round(1)}).to_csv(data, index=False)
    config = tmp_path / "config.json"
    config.write_text(
        json.dumps(
            {
                "columns": {"age": {"mechanism": "hybrid", "epsilon": 2.0, "bounds": [0, 100]}},
                "random_state": 3,
            }
        )
    )
    reports, out = tmp_path / "r.csv", tmp_path / "est.csv"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cli = _console_script()
    steps = [
        [*cli, "privatize", str(data), "-o", str(reports), "--config", str(config)],
        [*cli, "estimate", str(reports), "--spec", f"{reports}.spec.json", "-o", str(out)],
    ]
    for argv in steps:
        run = subprocess.run(
            [*argv, "--no-progress"], capture_output=True, text=True, env=env, timeout=600
        )
        assert run.returncode == 0, run.stderr
    table = pd.read_csv(out)
    assert "Unknown mechanism" not in run.stderr
    assert len(table) == 1 and 30 < float(table["estimate"].iloc[0]) < 50


# ----------------------------------------------------- one spec-version policy
def _rr():
    return RandomizedResponseChannel(["a", "b"], epsilon=1.0)


def _pem():
    from sklearn_uldp.heavy_hitters import PrefixExtendingMethod

    return PrefixExtendingMethod(2.0, top_k=3).fit().channel_


@pytest.mark.parametrize("make, current", [(_rr, 1), (_pem, 2)], ids=["channel", "protocol"])
def test_newer_versions_are_refused_older_and_equal_read(make, current):
    spec = make()
    assert spec.to_dict()["spec_version"] == current == type(spec).spec_version
    for version in range(1, current + 1):
        assert PublicSpec.from_dict({**spec.to_dict(), "spec_version": version}) == spec
    unversioned = spec.to_dict()
    del unversioned["spec_version"]
    assert PublicSpec.from_dict(unversioned) == spec
    with pytest.raises(InvalidSpecError, match=f"newer than the version {current}.*Upgrade"):
        PublicSpec.from_dict({**spec.to_dict(), "spec_version": current + 1})
    with pytest.raises(InvalidSpecError, match="must be an integer"):
        PublicSpec.from_dict({**spec.to_dict(), "spec_version": "1"})


def test_protocol_specs_are_validated_like_channel_specs():
    from sklearn_uldp.heavy_hitters import protocol_from_dict

    spec = _pem().to_dict()
    with pytest.raises(InvalidSpecError, match=r"Unknown field\(s\) \['epsilom'\]"):
        protocol_from_dict({**spec, "epsilom": 1.0})
    with pytest.raises(InvalidSpecError, match=r"misses the field\(s\) \['epsilon'\]"):
        protocol_from_dict({k: v for k, v in spec.items() if k != "epsilon"})
    with pytest.raises(InvalidSpecError, match="Invalid spec of protocol 'pem'"):
        protocol_from_dict({**spec, "top_k": 0})
    # A protocol is not a channel, and the errors say which reader to use.
    with pytest.raises(InvalidSpecError, match="protocol_from_dict"):
        Channel.from_dict(spec)
    with pytest.raises(InvalidSpecError, match="Channel.from_dict"):
        protocol_from_dict(_rr().to_dict())
    assert PublicSpec.from_dict(spec) == protocol_from_dict(spec)


# ------------------------------------------------------- users' own channels
def test_a_users_channel_registers_with_its_own_name_only():
    class MyChannel(RandomizedResponseChannel):
        name = "test_registry_my_rr"

    spec = MyChannel(["a", "b"], epsilon=1.0).to_dict()
    assert type(Channel.from_dict(spec)) is MyChannel

    class Unnamed(RandomizedResponseChannel):  # keeps its parent's spec name
        pass

    assert spec_class("rr") is RandomizedResponseChannel
    with pytest.raises(ValueError, match="'rr'.*taken by sklearn-uldp's RandomizedResponseChannel"):

        class Shadow(RandomizedResponseChannel):
            name = "rr"


# ----------------------------------------- heavy hitters on the shared base
def test_open_domain_mechanisms_have_channel_and_a_deprecated_protocol_alias():
    from sklearn_uldp.heavy_hitters import PrefixExtendingMethod
    from sklearn_uldp.mechanisms._core import PrivatizerBase

    mech = PrefixExtendingMethod(2.0, top_k=3, random_state=0).fit()
    assert isinstance(mech, PrivatizerBase)
    with pytest.warns(FutureWarning, match="protocol_ is deprecated.*channel_"):
        assert mech.protocol_ is mech.channel_
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not hasattr(PrefixExtendingMethod(2.0), "protocol_")  # unfitted: no warning
    # A mechanism pickled before the rename (its spec under protocol_) loads.
    state = dict(mech.__getstate__())
    state["protocol_"] = state.pop("channel_")
    old = PrefixExtendingMethod.__new__(PrefixExtendingMethod)
    old.__setstate__(state)
    assert old.channel_ == mech.channel_
    again = pickle.loads(pickle.dumps(mech))
    assert np.array_equal(again.transform(["a", "b"]), mech.transform(["a", "b"]))
