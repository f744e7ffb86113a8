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
# (< 90 s on one busy core); every run takes a fifth of it (test_fuzz_*_quick).
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


@_settings(_EXAMPLES["mechanism"])
@given(F.mechanism_cases())
def test_fuzz_mechanisms(case):
    _check("mechanism", case)


@_settings(_EXAMPLES["estimator"])
@given(F.estimator_cases())
def test_fuzz_estimators(case):
    _check("estimator", case)


@_settings(_EXAMPLES["dataframe"])
@given(F.dataframe_privatizer_cases())
def test_fuzz_dataframe_privatizer(case):
    _check("dataframe", case)


@_settings(_EXAMPLES["joint"])
@given(F.joint_encoder_cases())
def test_fuzz_joint_encoder(case):
    _check("joint", case)


@_settings(_EXAMPLES["cli"])
@given(F.cli_cases())
def test_fuzz_cli(case):
    _check("cli", case)


@_settings(_EXAMPLES["spec"])
@given(F.spec_cases())
def test_fuzz_specs(case):
    _check("spec", case)


@_settings(_EXAMPLES["json"])
@given(F.json_cases())
def test_fuzz_spec_json_text(case):
    _check("json", case)


@_settings(_EXAMPLES["table"])
@given(F.table_cases())
def test_fuzz_cli_tables_lose_no_user(case):
    _check("table", case)


@_settings(_EXAMPLES["argv"])
@given(F.argv_cases())
def test_fuzz_cli_argv(case):
    _check("argv", case)


@_settings(_EXAMPLES["names"])
@given(F.name_cases())
def test_fuzz_dataframe_column_names(case):
    _check("names", case)


@_settings(_EXAMPLES["budget"])
@given(F.budget_cases())
def test_fuzz_budget_accountant(case):
    _check("budget", case)


# The tests above are the whole budget, a long run (-m slow, a step of CI);
# every run takes the first fifth of the same inputs (test_fuzz_*_quick).
# Their source is left as it was: with derandomize, Hypothesis seeds a test
# from its source, so that the long runs keep drawing the inputs they drew
# before, and the quick ones, which wrap the same function, draw from the
# same seed.
_QUICK_FRACTION = 5


def _quick(test, cases):
    """``test`` (a long run, marked slow here) on a fifth of its budget."""
    inner = test.hypothesis.inner_test
    n = max(10, test._hypothesis_internal_use_settings.max_examples // _QUICK_FRACTION)
    pytest.mark.slow(test)
    return _settings(n)(given(cases)(inner))


test_fuzz_mechanisms_quick = _quick(test_fuzz_mechanisms, F.mechanism_cases())
test_fuzz_estimators_quick = _quick(test_fuzz_estimators, F.estimator_cases())
test_fuzz_dataframe_privatizer_quick = _quick(
    test_fuzz_dataframe_privatizer, F.dataframe_privatizer_cases()
)
test_fuzz_joint_encoder_quick = _quick(test_fuzz_joint_encoder, F.joint_encoder_cases())
test_fuzz_cli_quick = _quick(test_fuzz_cli, F.cli_cases())
test_fuzz_specs_quick = _quick(test_fuzz_specs, F.spec_cases())
test_fuzz_spec_json_text_quick = _quick(test_fuzz_spec_json_text, F.json_cases())
test_fuzz_cli_tables_lose_no_user_quick = _quick(test_fuzz_cli_tables_lose_no_user, F.table_cases())
test_fuzz_cli_argv_quick = _quick(test_fuzz_cli_argv, F.argv_cases())
test_fuzz_dataframe_column_names_quick = _quick(test_fuzz_dataframe_column_names, F.name_cases())
test_fuzz_budget_accountant_quick = _quick(test_fuzz_budget_accountant, F.budget_cases())


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
