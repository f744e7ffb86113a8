"""The granularity rule of HDG and TDG (``choose_granularity``) and its benchmarks.

The rule's outputs are integers: pinned exactly on fixed (n, epsilon)
points, so a change of the rule (or of the oracles' variances it reads)
shows here. The benchmarks of issue 32 (``bench_range_queries.py``,
``bench_range_granularity.py``) keep running: their analysis on fixed
records, and one quick run of the range-query benchmark (slow).
"""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys

import numpy as np
import pytest
from _repo import REPO_ROOT, subprocess_env

from sklearn_uldp.marginals import choose_granularity
from sklearn_uldp.marginals._range_design import (
    ALPHA_1,
    ALPHA_2,
    EXPONENT,
    FITTED_ALPHA_1,
    FITTED_ALPHA_2,
    FITTED_EXPONENT,
    SMOOTH_ALPHA_1,
    SMOOTH_ALPHA_2,
    SMOOTH_EXPONENT,
)

# (n, epsilon) -> (g1, g2) for two columns, HDG, the oracle of least variance.
DEFAULT = {
    (100_000, 1.0): (21, 7),
    (327_346, 0.5): (18, 6),
    (327_346, 1.0): (27, 9),
    (327_346, 2.0): (56, 14),
    (327_346, 4.0): (120, 24),
    (1_000_000, 1.0): (48, 12),
}
EXPONENT_3 = {
    (28_155, 0.5): (12, 4),
    (100_000, 1.0): (18, 6),
    (327_346, 1.0): (24, 8),
    (327_346, 2.0): (44, 11),
    (327_346, 4.0): (68, 17),
    (1_000_000, 4.0): (88, 22),
}


@pytest.mark.parametrize(("n", "eps"), sorted(DEFAULT))
def test_default_rule_on_fixed_points(n, eps):
    assert choose_granularity(n, eps, 2)[:2] == DEFAULT[(n, eps)]
    # the default is the exponent 2 with (0.7, 0.12), also when spelled out
    assert (EXPONENT, ALPHA_1, ALPHA_2) == (2.0, 0.7, 0.12)
    spelled = choose_granularity(n, eps, 2, alpha1=0.7, alpha2=0.12, exponent=2)
    assert spelled[:2] == DEFAULT[(n, eps)]


# The smooth-data rule (exponent 4, 7.6 and 0.362): the best of issue 32's
# --rules study, an option.
EXPONENT_4 = {
    (28_155, 1.0): (15, 5),
    (100_000, 1.0): (18, 6),
    (327_346, 0.5): (18, 6),
    (327_346, 1.0): (21, 7),
    (327_346, 2.0): (36, 9),
    (327_346, 4.0): (52, 13),
    (1_000_000, 1.0): (27, 9),
    (1_000_000, 2.0): (44, 11),
    (1_000_000, 4.0): (64, 16),
}


@pytest.mark.parametrize(("n", "eps"), sorted(EXPONENT_4))
def test_smooth_data_rule_on_fixed_points(n, eps):
    g1, g2, table = choose_granularity(n, eps, 2, exponent=4)
    assert (g1, g2) == EXPONENT_4[(n, eps)]
    # exponent=4 alone takes the constants chosen with it
    assert (SMOOTH_EXPONENT, SMOOTH_ALPHA_1, SMOOTH_ALPHA_2) == (4.0, 7.6, 0.362)
    spelled = choose_granularity(n, eps, 2, alpha1=7.6, alpha2=0.362, exponent=4)
    assert spelled[:2] == (g1, g2)
    # at these points never finer than the default; far coarser where n epsilon is large
    d1, d2 = choose_granularity(n, eps, 2)[:2]
    assert g2 <= d2 and g1 <= d1
    if eps == 4.0:
        assert g2**2 < 0.35 * d2**2


# TDG's default rule: the exponent-3 model (issue 32's TDG-only confirmation).
TDG_DEFAULT = {
    (28_155, 1.0): 6,
    (100_000, 1.0): 8,
    (327_346, 1.0): 10,
    (327_346, 4.0): 21,
    (1_000_000, 1.0): 12,
    (1_000_000, 2.0): 17,
}


@pytest.mark.parametrize(("n", "eps"), sorted(TDG_DEFAULT))
def test_tdg_default_rule_is_the_exponent_3_model(n, eps):
    g1, g2, table = choose_granularity(n, eps, 2, "tdg")
    assert (g1, g2) == (None, TDG_DEFAULT[(n, eps)])
    assert choose_granularity(n, eps, 2, "tdg", exponent=3)[:2] == (None, g2)
    assert choose_granularity(n, eps, 2, "tdg", alpha1=2.4, alpha2=0.21, exponent=3)[1] == g2
    # its non-uniformity column is the exponent-3 term with alpha2 = 0.21
    two = table[table["grid"] == "2-D"]
    expected = (2 * 0.21) ** 2 / two["g"].astype(float) ** 3
    assert np.allclose(two["non_uniformity"], expected, rtol=1e-10)
    # HDG's default is still the exponent-2 rule; TDG's is coarser than that
    # rule (at these points) where n * epsilon is large
    old = choose_granularity(n, eps, 2, "tdg", exponent=2)[1]
    assert g2 <= old
    if n >= 327_346:
        assert g2 < old


@pytest.mark.parametrize(("d", "g2"), [(3, 10), (5, 8)])
def test_tdg_default_rule_over_more_columns(d, g2):
    # m = d (d - 1) / 2 grids share the users: the same exponent-3 rule
    assert choose_granularity(10**6, 1.0, d, "tdg")[:2] == (None, g2)
    assert choose_granularity(10**6, 1.0, d, "tdg", exponent=3)[1] == g2
    assert choose_granularity(10**6, 1.0, d, "tdg", exponent=2)[1] > g2


def smooth_attrs(bounds, rule, method):
    from sklearn_uldp.marginals import RangeQueryPrivatizer

    priv = RangeQueryPrivatizer(
        2.0, bounds=bounds, method=method, granularity=rule, n_users=10**6
    ).fit()
    attrs = priv.design_.attrs
    assert attrs["method"] == method
    return attrs["rule"], attrs["exponent"], attrs["alpha1"], attrs["alpha2"]


def test_smooth_granularity_of_the_privatizer():
    from sklearn_uldp.marginals import RangeQueryPrivatizer

    bounds = {"a": (0.0, 1.0), "b": (0.0, 1.0)}
    for method, expected in (
        ("hdg", choose_granularity(10**6, 2.0, 2, exponent=4)[:2]),
        ("tdg", choose_granularity(10**6, 2.0, 2, "tdg")[:2]),
    ):
        priv = RangeQueryPrivatizer(
            2.0, bounds=bounds, method=method, granularity="smooth", n_users=10**6
        ).fit()
        assert priv.granularity_ == expected
        assert priv.design_ is not None
    # coarser than "auto" for HDG there
    auto = RangeQueryPrivatizer(2.0, bounds=bounds, n_users=10**6).fit().granularity_
    smooth = RangeQueryPrivatizer(2.0, bounds=bounds, granularity="smooth", n_users=10**6)
    assert smooth.fit().granularity_[1] < auto[1]
    # its design names the rule and its model
    assert smooth_attrs(bounds, "smooth", "hdg") == ("smooth", 4.0, 7.6, 0.362)
    assert smooth_attrs(bounds, "smooth", "tdg") == ("smooth", 3.0, 2.4, 0.21)
    assert smooth_attrs(bounds, "auto", "hdg") == ("auto", 2.0, 0.7, 0.12)
    # its design is the exponent-4 model's (7.6 and 0.362)
    smooth = RangeQueryPrivatizer(2.0, bounds=bounds, granularity="smooth", n_users=10**6).fit()
    two = smooth.design_[smooth.design_["grid"] == "2-D"]
    expected = (2 * 0.362) ** 2 / two["g"].astype(float) ** 4
    assert np.allclose(two["non_uniformity"], expected, rtol=1e-10)
    with pytest.raises(ValueError, match="granularity='smooth' chooses the grids"):
        RangeQueryPrivatizer(2.0, bounds=bounds, granularity="smooth").fit()
    with pytest.raises(ValueError, match="granularity"):
        RangeQueryPrivatizer(2.0, bounds=bounds, granularity="rough", n_users=10).fit()


@pytest.mark.parametrize(("n", "eps"), sorted(EXPONENT_3))
def test_exponent_3_rule_on_fixed_points(n, eps):
    g1, g2, table = choose_granularity(n, eps, 2, exponent=3)
    assert (g1, g2) == EXPONENT_3[(n, eps)]
    # exponent=3 alone takes the constants fitted with it
    assert (FITTED_EXPONENT, FITTED_ALPHA_1, FITTED_ALPHA_2) == (3.0, 2.4, 0.21)
    fitted = choose_granularity(n, eps, 2, alpha1=2.4, alpha2=0.21, exponent=3)
    assert fitted[:2] == (g1, g2)
    # the table's non-uniformity column is the exponent-3 term
    one = table[table["grid"] == "1-D"]
    # 1e-10 (tests/README.md): the same closed form, evaluated in another
    # order (a power of an int against a float), may round differently.
    assert np.allclose(one["non_uniformity"], 2.4**2 / one["g"].astype(float) ** 3, rtol=1e-10)


@pytest.mark.parametrize("exponent", [2.0, 2.5, 3.0, 4.0])
def test_any_exponent_gives_the_closed_forms_with_local_hashing(exponent):
    # E1 = g V + a1^2 / g^e and E2 = (g^2/4) V + (2 a2)^2 / g^e have the
    # minimizers g1 = (e a1^2 / V)^(1/(e+1)), g2 = (8 e a2^2 / V)^(1/(e+2));
    # local hashing's V is the same for every number of cells, so the
    # integer search lands within rounding of them (g1 among multiples of g2).
    n, eps, d, a1, a2 = 1_000_000, 1.0, 2, 2.4, 0.21
    v = 4 * math.exp(eps) / (math.expm1(eps) ** 2 * n / 3)
    g1_closed = (exponent * a1**2 / v) ** (1 / (exponent + 1))
    g2_closed = (8 * exponent * a2**2 / v) ** (1 / (exponent + 2))
    g1, g2, _ = choose_granularity(
        n, eps, d, mechanism="OLH", alpha1=a1, alpha2=a2, exponent=exponent
    )
    assert abs(g2 - g2_closed) < 1
    assert g1 % g2 == 0 and abs(g1 - g1_closed) <= g2


def test_exponent_3_grids_have_fewer_cells_where_the_budget_is_large():
    # The exponent-3 model grows the grids more slowly with n and epsilon:
    # never more cells than the default on these points, far fewer at eps = 4.
    for n, eps in EXPONENT_3:
        g1, g2 = choose_granularity(n, eps, 2)[:2]
        h1, h2 = EXPONENT_3[(n, eps)]
        assert h2 <= g2 + 1 and h1 <= max(g1, 12)
    assert EXPONENT_3[(327_346, 4.0)][1] ** 2 < 0.6 * DEFAULT[(327_346, 4.0)][1] ** 2


@pytest.mark.parametrize("exponent", [0, -1, float("nan"), float("inf"), True, "3"])
def test_bad_exponents_are_refused(exponent):
    with pytest.raises(ValueError, match="exponent must be a number > 0"):
        choose_granularity(100_000, 1.0, 2, exponent=exponent)


@pytest.mark.parametrize("exponent", [16.5, 2000])
def test_exponents_too_large_for_floats_are_refused(exponent):
    with pytest.raises(ValueError, match="exponent must be at most 16"):
        choose_granularity(10**6, 1.0, 2, exponent=exponent)
    choose_granularity(10**6, 1.0, 2, exponent=16)  # the largest accepted


def _bench(name):
    spec = importlib.util.spec_from_file_location(name, REPO_ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_granularity_benchmark_candidates_and_comparison():
    bench = _bench("bench_range_granularity")
    candidates = bench.sweep_candidates(27, 9)
    assert (27, 9) in candidates and {g2 for _, g2 in candidates} == {6, 9, 12}
    assert all(g1 % g2 == 0 for g1, g2 in candidates)
    # paired records: e = 3 lower by 0.001 in every repeat -> interval below 0
    rng = np.random.default_rng(0)
    base = 0.01 + 0.001 * rng.standard_normal(6)
    records = [
        {
            "pair": "p",
            "n": 1000,
            "epsilon": 1.0,
            "repeat": r,
            "exponent 2": float(base[r]),
            "exponent 3": float(base[r] - 0.001 + 1e-5 * r),
            "g exponent 2": [27, 9],
            "g exponent 3": [24, 8],
        }
        for r in range(6)
    ]
    table = bench.analyse_compare(records)
    assert table["95% high"].iloc[0] < 0 < table["MAE e = 2"].iloc[0]
    assert table["ratio"].iloc[0] < 1


_ANALYSIS = {
    "run": "analyse",
    "sweep": "analyse_sweep",
    "compare": "analyse_compare",
    "thresholds": "analyse_thresholds",
    "rules_study": "analyse_rules_all",
}


@pytest.mark.parametrize(
    "argv, called",
    [
        ([], "run"),
        (["--sweep"], "sweep"),
        (["--compare"], "compare"),
        (["--thresholds", "0.8"], "thresholds"),
        (["--rules"], "rules_study"),
    ],
)
def test_granularity_benchmark_runs_the_mode_asked_for(monkeypatch, tmp_path, argv, called):
    # Each mode reaches its own runner and analysis, and writes its records
    # without overwriting (the runners are stubs: the dispatch is under test).
    bench = _bench("bench_range_granularity")
    seen = []
    for name in _ANALYSIS:
        monkeypatch.setattr(bench, name, lambda *a, _n=name, **k: seen.append(_n) or [{"mode": _n}])
    for name in _ANALYSIS.values():
        monkeypatch.setattr(bench, name, lambda records, _n=name: seen.append(_n))
    out = tmp_path / "records.json"
    monkeypatch.setattr("sys.argv", ["bench", *argv, "--json", str(out)])
    bench.main()
    assert seen == [called, _ANALYSIS[called]]
    assert json.loads(out.read_text()) == [{"mode": called}]
    with pytest.raises(SystemExit, match="exists"):
        bench.main()
    # --analyse reads the records back into the same mode's analysis
    seen.clear()
    monkeypatch.setattr("sys.argv", ["bench", *argv, "--analyse", str(out)])
    bench.main()
    assert seen == [_ANALYSIS[called]]


def test_rules_study_candidates():
    # The pre-registered candidates: 4 exponents x 7 constants, and the paper's;
    # the default among them; e = 2.5 and 4 centred where their closed forms
    # equal e = 3's (the benchmark's point), so their integer choices agree
    # there within a step.
    bench = _bench("bench_range_granularity")
    rules = bench.candidate_rules()
    assert len(rules) == 29
    assert rules[bench.DEFAULT_RULE] == (2.0, 0.7, 0.12)
    assert rules["e=3 k=+0"] == (3.0, 2.4, 0.21)
    assert rules[bench.PAPER_RULE] == (2.0, 0.7, 0.03)
    # 1e-10 (tests/README.md): sqrt(2) steps, computed as 2 ** (k / 2)
    assert math.isclose(rules["e=2 k=-2"][2], 0.06, rel_tol=1e-10)
    chosen = bench.rule_granularities(327_346, 1.0)
    for e in ("2.5", "4"):
        g, h = chosen[f"e={e} k=+0"], chosen["e=3 k=+0"]
        assert abs(g[1] - h[1]) <= 1 and abs(g[0] - h[0]) <= h[1]
    tdg = bench.rule_granularities(10**6, 1.0, "tdg")
    assert all(g1 is None for g1, _ in tdg.values())


@pytest.mark.parametrize("name", sorted(_bench("bench_range_granularity").SYNTHETIC))
def test_rules_study_synthetic_families(name):
    bench = _bench("bench_range_granularity")
    values = bench.synthetic_values(name, 20_000)
    assert values.shape == (20_000, 2) and values.min() >= 0 and values.max() < 64
    kind, rho, continuous = bench.SYNTHETIC[name]
    # codes at their centres, or continuous values
    frac = np.unique(values % 1.0)
    assert (len(frac) > 1000) if continuous else (frac.tolist() == [0.5])
    corr = np.corrcoef(values.T)[0, 1]
    if kind == "mixture":
        # two components of correlation 0.5, far apart along both columns
        assert corr > 0.9
        assert np.mean(values[:, 0] < 32) == pytest.approx(0.5, abs=0.01)
    else:
        # 20,000 draws: the sample correlation's sd is below 0.01
        assert corr == pytest.approx(rho, abs=0.04)
    np.testing.assert_array_equal(values, bench.synthetic_values(name, 20_000))


def test_rules_study_analysis_scores_and_choice():
    # Two settings (one real, one synthetic) on the choosing half and two
    # held out: the granularity of "e=2 k=+2" is best everywhere; every other
    # granularity costs 1.5 times as much.
    bench = _bench("bench_range_granularity")
    records = []
    cases = (
        ("real", "weather temp x dewp", 26_114),
        ("synthetic", "synthetic normal 0", 100_000),
        ("real", "cps1988 wage x experience", 28_155),
        ("synthetic", "synthetic normal 0.5", 100_000),
    )
    for group, pair, n in cases:
        half = "choosing" if pair in bench.CHOOSING_REAL + bench.CHOOSING_SYNTHETIC else "held out"
        chosen = bench.rule_granularities(n, 1.0)
        best = chosen["e=2 k=+2"]
        for g in set(chosen.values()):
            for rep in range(3):
                records.append(
                    {
                        "group": group,
                        "half": half,
                        "pair": pair,
                        "n": n,
                        "epsilon": 1.0,
                        "boxes": "random",
                        "method": "hdg",
                        "g1": g[0],
                        "g2": g[1],
                        "repeat": rep,
                        "mae": (0.01 if g == best else 0.015) * (1 + 0.01 * rep),
                    }
                )
    scores = bench.analyse_rules(records)
    # the rules whose granularity is the best one in every choosing setting
    winners = set(bench.candidate_rules())
    for _, pair, n in cases:
        if pair in bench.CHOOSING_REAL + bench.CHOOSING_SYNTHETIC:
            here = bench.rule_granularities(n, 1.0)
            winners &= {r for r, g in here.items() if g == here["e=2 k=+2"]}
    assert "e=2 k=+2" in winners and scores.index[0] in winners
    assert scores.iloc[0]["minimax (choosing)"] == pytest.approx(1.0, rel=1e-10)
    far = [r for r, g in chosen.items() if g != best][0]
    assert scores.loc[far, "held out real"] == pytest.approx(1.5, rel=1e-10)


def test_range_query_benchmark_paired_interval():
    bench = _bench("bench_range_queries")
    records = [
        {"epsilon": 1.0, "repeat": r, "method": m, "mae": v}
        for r in range(5)
        for m, v in (("16x16 OUE + EM", 0.010 + 0.001 * r), ("HDG auto", 0.009 + 0.001 * r))
    ]
    paired = bench.summarize_paired(records)
    row = paired.loc[(1.0, "HDG auto")]
    assert row["difference"] == pytest.approx(-0.001, rel=1e-9)
    assert row["95% low"] <= row["difference"] <= row["95% high"] < 0
    assert row["lower in"] == "5 of 5"


def test_range_query_benchmark_synthetic_export(tmp_path):
    """--export --synthetic: the authors' example domain, boxes of the stated
    volume, true answers of the written codes, and no overwriting."""
    bench = _bench("bench_range_queries")
    for kind in ("normal", "laplace"):
        bench.export(tmp_path, 30, 0, kind, n=5000, volume=0.5)
        data = np.load(tmp_path / f"{kind}_discrete.npz")
        codes, boxes, truth = data["codes"], data["boxes"], data["truth"]
        assert int(data["domain"]) == 64 and codes.shape == (5000, 2)
        assert codes.min() >= 0 and codes.max() <= 63
        assert 0.3 < np.corrcoef(codes.T)[0, 1] < 0.7  # the stated correlation 0.5
        assert boxes.shape == (30, 2, 2) and np.all(boxes[:, 1] - boxes[:, 0] == 31)
        assert boxes.min() >= 0 and boxes.max() <= 63
        inside = np.all((codes[None] >= boxes[:, :1]) & (codes[None] <= boxes[:, 1:]), axis=2)
        np.testing.assert_array_equal(truth, inside.mean(axis=1))
        with pytest.raises(SystemExit, match="exists"):
            bench.export(tmp_path, 30, 0, kind, n=5000)
    # the tails differ: Laplace puts more users far from the center
    far = [
        np.mean(np.abs(np.load(tmp_path / f"{k}_discrete.npz")["codes"][:, 0] - 32) > 24)
        for k in ("normal", "laplace")
    ]
    assert far[1] > 2 * far[0]


def test_range_query_benchmark_aligned_boxes_follow_the_authors_rule(tmp_path):
    """--aligned: the rule of the authors' query generator (github
    YangJianyu-bupt/privmdr, ``generate_query.py``, ``set_interval_length_ratio``:
    ``flag_domain_size = 16`` blocks of c // 16 codes, int(16 * volume)
    blocks long, the first block ``random.randint(0, 16 - length)``, both
    ends included), as read there; these checks pin that rule."""
    bench = _bench("bench_range_queries")
    boxes = bench._aligned_boxes(2000, np.random.default_rng(0), 64, 0.5)
    assert boxes.shape == (2000, 2, 2)
    np.testing.assert_array_equal(boxes[:, 1] - boxes[:, 0], 31)  # 8 blocks of 4 codes
    assert set(np.unique(boxes[:, 0])) == set(range(0, 33, 4))  # every first block, 0..8
    assert np.all((boxes[:, 1] + 1) % 4 == 0)
    # a domain below 16 codes: blocks of one code (their flag_domain_size = c)
    small = bench._aligned_boxes(500, np.random.default_rng(1), 8, 0.5)
    np.testing.assert_array_equal(small[:, 1] - small[:, 0], 3)
    assert set(np.unique(small[:, 0])) == set(range(5))
    bench.export(tmp_path, 40, 0, "laplace", n=3000, volume=0.5, aligned=True)
    written = np.load(tmp_path / "laplace_discrete.npz")["boxes"]
    assert np.all(written[:, 0] % 4 == 0) and np.all(written[:, 1] - written[:, 0] == 31)


@pytest.mark.slow
def test_range_query_benchmark_runs_quick():
    out = subprocess.run(
        [
            sys.executable,
            str(REPO_ROOT / "benchmarks" / "bench_range_queries.py"),
            "--quick",
            "--queries",
            "20",
            "--methods",
            "16x16 OUE + EM",
            "HDG auto",
            "HDG, exponent-3 rule",
            "--granularities",
            "40,8",
        ],
        capture_output=True,
        text=True,
        env=subprocess_env(),
        cwd=REPO_ROOT / "benchmarks",
        timeout=600,
        check=True,
    ).stdout
    assert "HDG (40, 8)" in out and "HDG, exponent-3 rule" in out and "95% high" in out


# ---------------------------------------------------------------- the threshold
def _diagonal(n, seed):
    # two nearly collinear columns: most 2-D cells are empty (as on the
    # flights' distance x air time)
    rng = np.random.default_rng(seed)
    x = rng.beta(2, 5, size=n)
    return np.column_stack([x, np.clip(x + rng.normal(0, 0.05, size=n), 0, 1)])


def test_threshold_is_the_default_and_none_is_the_unbiased_estimate():
    from sklearn_uldp import ThresholdEstimator
    from sklearn_uldp.estimators._projection import project_to_simplex
    from sklearn_uldp.marginals import RangeQueryEstimator, RangeQueryPrivatizer
    from sklearn_uldp.marginals._range_estimator import DEFAULT_THRESHOLD

    assert RangeQueryEstimator().threshold == DEFAULT_THRESHOLD == 0.8
    X = _diagonal(20_000, 0)
    bounds = {"x0": (0.0, 1.0), "x1": (0.0, 1.0)}
    reports = RangeQueryPrivatizer(2.0, bounds=bounds, random_state=0).fit_transform(X)
    kept = RangeQueryEstimator(consistency=False).fit(reports)
    plain = RangeQueryEstimator(consistency=False, threshold=None).fit(reports)
    j = kept.channel_._positions.index((0, 1))
    sub, part = kept.channel_.channels[j], kept.statistics_.extra.parts[j]
    # the linear estimates are the same; each grid starts from emp+thr at
    # level 0.8 (already on the simplex), the plain one from its projection
    np.testing.assert_array_equal(kept._result()["linear"][j], plain._result()["linear"][j])
    expected = ThresholdEstimator(alpha=0.8).fit_statistics(part).distribution_
    np.testing.assert_allclose(kept._result()["tables"][j], expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(
        plain._result()["tables"][j],
        project_to_simplex(np.asarray(sub.unbiased_estimate(part), dtype=float)),
        rtol=1e-10,
        atol=1e-12,
    )
    assert not np.allclose(kept._result()["tables"][j], plain._result()["tables"][j])
    # an explicit estimator ignores the threshold
    from sklearn_uldp import EmpiricalEstimator

    a = RangeQueryEstimator(estimator=EmpiricalEstimator(), threshold=0.8).fit(reports)
    b = RangeQueryEstimator(estimator=EmpiricalEstimator(), threshold=None).fit(reports)
    np.testing.assert_array_equal(a._result()["tables"][j], b._result()["tables"][j])


@pytest.mark.slow
def test_threshold_lowers_the_error_on_sparse_pairs():
    # Paired over 6 seeds on nearly collinear columns (n = 100,000, epsilon
    # = 2, grids (40, 10)): the thresholded estimate's MAE over 100 random
    # boxes is lower on average and in at least 5 seeds (measured: 6 of 6,
    # -0.0022 on average); threshold=None (the old default) is the reference.
    from sklearn_uldp.marginals import RangeQueryEstimator, RangeQueryPrivatizer

    bounds = {"x0": (0.0, 1.0), "x1": (0.0, 1.0)}
    rng = np.random.default_rng(1)
    ends = np.sort(rng.uniform(0, 1, size=(100, 2, 2)), axis=1)
    boxes = [{"x0": tuple(e[:, 0]), "x1": tuple(e[:, 1])} for e in ends]
    diffs = []
    for seed in range(6):
        X = _diagonal(100_000, seed)
        truth = np.array(
            [
                np.mean((X[:, 0] >= a) & (X[:, 0] <= b) & (X[:, 1] >= c) & (X[:, 1] <= d))
                for (a, c), (b, d) in ends
            ]
        )
        reports = RangeQueryPrivatizer(2.0, bounds=bounds, random_state=seed).fit_transform(X)
        mae = [
            np.abs(RangeQueryEstimator(threshold=t).fit(reports).query_many(boxes) - truth).mean()
            for t in (0.8, None)
        ]
        diffs.append(mae[0] - mae[1])
    diffs = np.asarray(diffs)
    assert diffs.mean() < 0 and (diffs < 0).sum() >= 5


@pytest.mark.parametrize("threshold", [0, 1, 1.5, -0.1, "0.8"])
def test_bad_thresholds_are_refused(threshold):
    from sklearn_uldp.marginals import RangeQueryEstimator, RangeQueryPrivatizer

    X = _diagonal(500, 0)
    reports = RangeQueryPrivatizer(
        1.0, bounds={"x0": (0.0, 1.0), "x1": (0.0, 1.0)}, granularity=(4, 2), random_state=0
    ).fit_transform(X)
    with pytest.raises(ValueError, match="threshold"):
        RangeQueryEstimator(threshold=threshold).fit(reports)
