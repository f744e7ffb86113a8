"""The default install is the measured one, and says what it runs.

numba (the compiled kernels) and randomgen (the secure generator) are core
dependencies: the README's speed figures were measured with them and the
command line's default ``random_state="secure"`` needs randomgen. The numpy
fallbacks of every compiled loop still work without numba (checked in a
subprocess that cannot import it), and :func:`sklearn_uldp.show_versions`
says which path runs.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import numpy as np
import pytest
from _repo import REPO_ROOT

import sklearn_uldp
from sklearn_uldp import _show_versions
from sklearn_uldp.cli import main

ROOT = REPO_ROOT
PYPROJECT = ROOT / "pyproject.toml"
CONSTRAINTS = ROOT / ".ci" / "constraints-lowest.txt"


def _pyproject():
    tomllib = pytest.importorskip("tomllib", reason="tomllib is Python 3.11+")
    if not PYPROJECT.is_file():  # an installed copy, not a checkout
        pytest.skip("no pyproject.toml next to the package")
    return tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))


def _lower_bounds(requirements):
    bounds = {}
    for req in requirements:
        name = re.match(r"[A-Za-z0-9_.-]+", req).group(0).lower()
        low = re.search(r">=\s*([0-9][0-9.]*)", req)
        bounds[name] = low.group(1) if low else None
    return bounds


def test_numba_and_randomgen_are_core_dependencies():
    core = _lower_bounds(_pyproject()["project"]["dependencies"])
    assert {"numba", "randomgen"} <= set(core), core


def test_every_core_lower_bound_is_pinned_for_the_lower_bound_job():
    # CI's second job installs with these pins: a bound not listed there is
    # never tested.
    core = _lower_bounds(_pyproject()["project"]["dependencies"])
    pins = {}
    for line in CONSTRAINTS.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        match = re.fullmatch(r"([A-Za-z0-9_.-]+)==([0-9.]+)\.\*", line)
        if match:
            pins[match.group(1).lower()] = match.group(2)
    assert {name: pins.get(name) for name in core} == core


def test_the_secure_generator_works_out_of_the_box(tmp_path, capsys):
    # The command line privatizes with random_state="secure" by default.
    table = tmp_path / "t.csv"
    table.write_text("c\na\nb\na\n", encoding="utf-8")
    args = ["privatize", str(table), "-o", str(tmp_path / "r.csv"), "--columns", "c"]
    code = main([*args, "--mechanism", "rr", "--epsilon", "1", "--categories", "c=a,b"])
    assert code == 0, capsys.readouterr().err
    assert _show_versions._secure_generator().startswith("randomgen.")


def test_show_versions_prints_every_section(capsys):
    sklearn_uldp.show_versions()
    out = capsys.readouterr().out
    for section in ("System:", "sklearn-uldp:", "Kernels:", "Dependencies:"):
        assert f"\n{section}\n" in out
    assert "Optional dependencies:" in out
    versions = dict(re.findall(r"^\s+(\w[\w -]*?): (.+)$", out, flags=re.M))
    import numba
    import randomgen

    assert versions["numpy"] == np.__version__
    assert versions["numba"] == numba.__version__
    assert versions["randomgen"] == randomgen.__version__
    assert versions["version"] == sklearn_uldp.__version__
    assert versions["compiled kernels"] == f"on (numba {numba.__version__})"
    assert re.fullmatch(r"randomgen\.(AESCounter|ChaCha) \(.+\)", versions["secure generator"])


def test_show_versions_says_what_is_missing(monkeypatch, capsys):
    from sklearn_uldp.mechanisms import _bit_rows, _count_mean_sketch
    from sklearn_uldp.utils import _random

    monkeypatch.setattr(_show_versions, "OPTIONAL", ("no-such-distribution-xyz",))
    monkeypatch.setattr(_count_mean_sketch, "_KERNEL", "numpy")

    def no_randomgen():
        raise ImportError("randomgen is not importable") from ImportError("no randomgen")

    monkeypatch.setattr(_random, "_secure_bit_generator_class", no_randomgen)
    sklearn_uldp.show_versions()
    out = capsys.readouterr().out
    assert "no-such-distribution-xyz: not installed" in out
    assert "compiled kernels: partly on (numpy fallbacks for: count-mean sketch)" in out
    assert "secure generator: unavailable (no randomgen)" in out
    monkeypatch.setattr(_bit_rows, "numba", None)
    assert _show_versions._kernels()[0].startswith("off (numba is not importable")


def test_show_versions_on_the_command_line(capsys):
    assert main(["show-versions"]) == 0
    out = capsys.readouterr().out
    assert "compiled kernels:" in out and "secure generator:" in out


#: Run without numba (and without randomgen): every compiled loop takes its
#: numpy path. Reports and estimates go back to the test as JSON.
_WITHOUT_NUMBA = r"""
import json, sys
sys.modules["numba"] = None
sys.modules["randomgen"] = None
import numpy as np
import sklearn_uldp
from sklearn_uldp import (CountMeanSketch, EMEstimator, EmpiricalEstimator, RAPPOR,
    SubsetSelection, UtilityOptimizedOUE, show_versions)
from sklearn_uldp.mechanisms import _bit_rows, _count_mean_sketch, _oracle_kernels
from sklearn_uldp.mechanisms import _subset_selection

kernels = [m._KERNEL for m in (_bit_rows, _count_mean_sketch, _subset_selection)]
assert kernels == ["numpy"] * 3 and not _oracle_kernels.HAVE_NUMBA, kernels
rng = np.random.default_rng(0)
k = 12
p = rng.dirichlet(np.ones(k))
X = rng.choice(k, p=p, size=(6000, 1))
out = {"p": p.tolist()}
for name, mech, est in [
    ("rappor", RAPPOR(epsilon=2.0, categories=range(k), random_state=1), EMEstimator()),
    ("uoue", UtilityOptimizedOUE(epsilon=2.0, sensitive=[0, 1], categories=range(k),
                                 random_state=2), EMEstimator()),
    ("ss", SubsetSelection(epsilon=2.0, categories=range(k), random_state=3),
     EmpiricalEstimator()),
    ("cms", CountMeanSketch(epsilon=2.0, categories=range(k), random_state=4),
     EmpiricalEstimator()),
]:
    reports = mech.fit_transform(X)
    out[name] = {"reports": np.asarray(reports).tolist(), "spec": mech.spec(),
                 "estimate": est.fit(reports).distribution_.tolist()}
show_versions()
print("JSON" + json.dumps(out))
"""


def test_numpy_fallbacks_work_without_numba():
    # A fresh interpreter that cannot import numba nor randomgen: the package
    # imports, every sampler and EM run on their numpy paths, and the
    # compiled kernels of this process give the same estimates from the same
    # reports.
    proc = subprocess.run(
        [sys.executable, "-c", _WITHOUT_NUMBA],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "compiled kernels: off (numba is not importable" in proc.stdout
    assert "secure generator: unavailable" in proc.stdout
    result = json.loads(proc.stdout.split("JSON", 1)[1])
    from sklearn_uldp.estimators import EMEstimator, EmpiricalEstimator

    p = np.asarray(result.pop("p"))
    for name, got in result.items():
        estimator = EmpiricalEstimator if name in ("ss", "cms") else EMEstimator
        reports = np.asarray(got["reports"])
        here = estimator(mechanism=got["spec"]).fit(reports).distribution_
        np.testing.assert_allclose(got["estimate"], here, atol=1e-9, err_msg=name)
        # The fallback samplers follow the channel: 6000 users at eps=2
        # estimate 12 cells within 0.25 in total variation (a sampler that
        # ignored the input would give ~0.5).
        assert 0.5 * np.abs(np.asarray(got["estimate"]) - p).sum() < 0.25, name
