"""Property-based fuzzing of every public mechanism, estimator, composite and the CLI.

Generated inputs cover dtypes (object, category, nullable Int64, string,
bool, float with NaN, bytes, mixed, very long strings, unicode), shapes, empty
inputs, duplicate categories, out-of-domain and type-coerced values,
sensitive sets, every numeric parameter's edges, tampered reports and specs.
The oracle (``tests/package/_fuzz_oracle.py``, whose docstring states the coercion
policy) classifies each outcome as ok, a clear error, an unclear crash or a
silent wrong result; these tests fail on the last two (and on a clear error
for plainly valid input).

Measurement mode (does not stop at the first failure)::

    python tests/package/test_fuzz.py --measure 2000     # counts per class and kind

"""

import collections
import os
import sys

import pytest
from hypothesis import HealthCheck, Phase, given, settings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _fuzz_known  # noqa: E402
import _fuzz_oracle as F  # noqa: E402

BAD = (F.UNCLEAR, F.WRONG, F.REJECTED_VALID, F.ORACLE_ERROR)

# Budget of the full runs (-m slow): about 30 s of CPU for the whole file
# (< 90 s on one busy core); every run takes a fifth of it (_fuzz_test).
_EXAMPLES = {
    "mechanism": 600,
    "estimator": 300,
    "dataframe": 150,
    "joint": 150,
    "cli": 80,
    "budget": 150,
    "spec": 200,
    "json": 150,
    "table": 40,
    "argv": 60,
    "names": 60,
}


def _settings(n):
    # No shrinking: the failure message already shows the whole case, and
    # shrinking a failing run would blow the time budget.
    return settings(
        max_examples=n,
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
        print_blob=False,
        phases=[Phase.explicit, Phase.generate],
    )


def _check(group, case):
    out = F.run(group, case)
    assert out.klass not in BAD, (
        f"{out.klass.upper()} in {out.api}: {out.kind}: {out.detail}\ncase: {F.describe(case)}"
    )


def _fuzz_test(group, cases, *, full):
    """A fuzz test of ``group``: every run takes a fifth of its budget of
    generated inputs (at least 10); the whole budget is a long run (-m slow,
    a step of CI)."""
    n = _EXAMPLES[group] if full else max(10, _EXAMPLES[group] // _QUICK_FRACTION)

    def test(case):
        _check(group, case)

    # named as the test is (Hypothesis prints the name with a failing case)
    test.__name__ = test.__qualname__ = f"test_fuzz_{group}" + ("_full" if full else "")
    test = _settings(n)(given(cases)(test))
    return pytest.mark.slow(test) if full else test


_QUICK_FRACTION = 5

test_fuzz_mechanisms = _fuzz_test("mechanism", F.mechanism_cases(), full=False)
test_fuzz_mechanisms_full = _fuzz_test("mechanism", F.mechanism_cases(), full=True)
test_fuzz_estimators = _fuzz_test("estimator", F.estimator_cases(), full=False)
test_fuzz_estimators_full = _fuzz_test("estimator", F.estimator_cases(), full=True)
test_fuzz_dataframe_privatizer = _fuzz_test("dataframe", F.dataframe_privatizer_cases(), full=False)
test_fuzz_dataframe_privatizer_full = _fuzz_test(
    "dataframe", F.dataframe_privatizer_cases(), full=True
)
test_fuzz_joint_encoder = _fuzz_test("joint", F.joint_encoder_cases(), full=False)
test_fuzz_joint_encoder_full = _fuzz_test("joint", F.joint_encoder_cases(), full=True)
test_fuzz_cli = _fuzz_test("cli", F.cli_cases(), full=False)
test_fuzz_cli_full = _fuzz_test("cli", F.cli_cases(), full=True)
test_fuzz_specs = _fuzz_test("spec", F.spec_cases(), full=False)
test_fuzz_specs_full = _fuzz_test("spec", F.spec_cases(), full=True)
test_fuzz_spec_json_text = _fuzz_test("json", F.json_cases(), full=False)
test_fuzz_spec_json_text_full = _fuzz_test("json", F.json_cases(), full=True)
test_fuzz_cli_tables_lose_no_user = _fuzz_test("table", F.table_cases(), full=False)
test_fuzz_cli_tables_lose_no_user_full = _fuzz_test("table", F.table_cases(), full=True)
test_fuzz_cli_argv = _fuzz_test("argv", F.argv_cases(), full=False)
test_fuzz_cli_argv_full = _fuzz_test("argv", F.argv_cases(), full=True)
test_fuzz_dataframe_column_names = _fuzz_test("names", F.name_cases(), full=False)
test_fuzz_dataframe_column_names_full = _fuzz_test("names", F.name_cases(), full=True)
test_fuzz_budget_accountant = _fuzz_test("budget", F.budget_cases(), full=False)
test_fuzz_budget_accountant_full = _fuzz_test("budget", F.budget_cases(), full=True)


@pytest.mark.parametrize(
    "group, case",
    _fuzz_known.KNOWN,
    ids=[f"{i}-{g}-{c['api']}" for i, (g, c) in enumerate(_fuzz_known.KNOWN)],
)
def test_known_reproductions(group, case):
    """Inputs that crashed or gave wrong results before: clear errors or valid results."""
    _check(group, case)


def test_oracle_policy():
    """The coercion policy of the oracle, spelled out."""
    assert F.match_code("a", ["a", "b"]) == (0, "valid")
    assert F.match_code(1.0, [0, 1]) == (1, "may")
    assert F.match_code("1", [0, 1])[1] == "reject"
    assert F.match_code(1, ["0", "1"])[1] == "reject"
    assert F.match_code(True, [0, 1])[1] == "reject"
    assert F.match_code(b"a", ["a"])[1] == "reject"
    assert F.match_code(float("nan"), ["a", None]) == (1, "valid")
    assert F.match_code(None, ["a", "b"])[1] == "reject"
    assert F.domain_verdict([1, 1.0]) == "reject"
    assert F.domain_verdict(["a", "a"]) == "reject"
    assert F.domain_verdict(["a"]) == "reject"
    assert F.domain_verdict(["a", None]) == "valid"


# ------------------------------------------------------------ measurement
def measure(n_total, groups=None, seed_note=""):
    """Run about ``n_total`` generated inputs, never stopping; print the counts."""
    weights = {
        "mechanism": 0.35,
        "estimator": 0.27,
        "dataframe": 0.08,
        "joint": 0.08,
        "cli": 0.08,
        "budget": 0.04,
        "spec": 0.10,
        "json": 0.05,
        "table": 0.04,
        "argv": 0.04,
        "names": 0.03,
    }
    if groups:
        weights = {g: weights[g] for g in groups}
        s = sum(weights.values())
        weights = {g: w / s for g, w in weights.items()}
    results = []

    for group, w in weights.items():
        n = max(1, int(round(n_total * w)))
        _collector(group, n, results)()
    by_class = collections.Counter(o.klass for _, o, _ in results)
    print(f"{len(results)} generated inputs {seed_note}")
    by_group = collections.Counter((g, o.klass) for g, o, _ in results)
    groups_run = list(weights)
    print(f"  {'':15s} {'total':>6s} " + " ".join(f"{g:>10s}" for g in groups_run))
    for klass in (F.OK, F.CLEAR, F.UNCLEAR, F.WRONG, F.REJECTED_VALID, F.ORACLE_ERROR):
        print(
            f"  {klass:15s} {by_class.get(klass, 0):6d} "
            + " ".join(f"{by_group.get((g, klass), 0):10d}" for g in groups_run)
        )
    known = [(g, F.run(g, c), F.describe(c)) for g, c in _fuzz_known.KNOWN]
    still = [(g, o, c) for g, o, c in known if o.klass in BAD]
    print(
        f"  known reproductions (tests/package/_fuzz_known.py): {len(still)} of {len(known)} "
        "still failing"
    )
    kinds = collections.OrderedDict()
    for _group, o, case in results + still:
        if o.klass in BAD:
            key = (o.klass, _api_key(o.api), o.kind)
            kinds.setdefault(key, [0, o, case])[0] += 1
    for (klass, api, kind), (count, o, case) in sorted(kinds.items()):
        print(f"\n[{klass}] {api} :: {kind}  x{count}\n    {o.detail[:300]}\n    case: {case}")
    return by_class, kinds


def _collector(group, n, results):
    @settings(
        max_examples=n,
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(F.STRATEGIES[group]())
    def collect(case):
        out = F.run(group, case)
        results.append((group, out, F.describe(case)))

    return collect


def _api_key(api):
    # Group tampered variants by their tamper kind, not by the value.
    return api.split("=")[0] if "[" in api else api


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--measure", type=int, default=2000)
    parser.add_argument("--groups", nargs="*", choices=list(F.STRATEGIES))
    args = parser.parse_args()
    measure(args.measure, args.groups, f"(sklearn_uldp from {F.sklearn_uldp.__file__})")
