"""Every registered mechanism implements the contract (issue 31, item 2).

One test per method of the contract that ``docs/architecture.md`` ("The
contract each new family implements") lists, parametrized over the registry
(``SPEC_CLASSES``): a channel or protocol added to the table is checked here
as soon as :data:`EXAMPLES` has an instance of it (the first test fails
until it does, naming the entry).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from _examples import BINARY, CATS, categorical_mechanisms

from sklearn_uldp import heavy_hitters as hh
from sklearn_uldp import marginals as mg
from sklearn_uldp import numeric as nm
from sklearn_uldp.mechanisms import Channel
from sklearn_uldp.mechanisms._registry import SPEC_CLASSES
from sklearn_uldp.mechanisms._spec import PublicSpec

N = 400
RNG = np.random.default_rng(0)
VALUES = RNG.choice(CATS, size=(N, 1)).astype(object)
NUMBERS = RNG.uniform(0, 10, size=(N, 1))
ITEMS = np.array(["apple", "pear", "fig", "apple", "kiwi"] * (N // 5), dtype=object)
ROWS = pd.DataFrame(
    {
        "x": RNG.choice(CATS, size=N),
        "y": RNG.choice([0, 1], size=N),
        "z": RNG.choice([0, 1], size=N),
    }
)


def _mech(mech, X=VALUES):
    if "random_state" in mech.get_params():
        mech.set_params(random_state=0)
    return lambda: (mech.fit(X), X)


def _inputs(name):
    """The inputs of a categorical example (two values for the binary one)."""
    return np.where(VALUES == "a", "a", "b") if name == BINARY else VALUES


def _spec_of(make, transform):
    """A channel with no mechanism of its own, built from a fitted mechanism's."""

    def build():
        mech, X = make()
        return transform(mech.channel_), mech, X

    return build


#: name -> factory of (spec, fitted mechanism or None, its inputs or None).
#: A new entry of SPEC_CLASSES needs one line here.
EXAMPLES = {
    **{
        name: _spec_of(_mech(mech, _inputs(name)), derive) if derive else _mech(mech, _inputs(name))
        for name, (mech, derive) in categorical_mechanisms().items()
    },
    "duchi": _mech(nm.DuchiMechanism(1.0, bounds=(0, 10)), NUMBERS),
    "piecewise": _mech(nm.PiecewiseMechanism(1.0, bounds=(0, 10)), NUMBERS),
    "hybrid": _mech(nm.HybridMechanism(1.0, bounds=(0, 10)), NUMBERS),
    "square_wave": _mech(nm.SquareWave(1.0, bounds=(0, 10)), NUMBERS),
    "uobm": _mech(
        nm.UtilityOptimizedOneBitMechanism(1.0, bounds=(0, 10), sensitive=(0, 3)), NUMBERS
    ),
    "multi_numeric": _mech(
        nm.MultiNumericMechanism(2.0, bounds=[(0, 10), (0, 10)]), np.hstack([NUMBERS, NUMBERS])
    ),
    "smp_numeric": _spec_of(
        _mech(nm.HybridMechanism(1.0, bounds=(0, 10)), NUMBERS), lambda c: c.sampled_channel(2)
    ),
    "rsfd_numeric": _spec_of(
        _mech(nm.DuchiMechanism(1.0, bounds=(0, 10)), NUMBERS),
        lambda c: c.sampled_fake_channel(2, "random"),
    ),
    "marginals": _mech(
        mg.MarginalPrivatizer(2.0, categories={"x": CATS, "y": [0, 1], "z": [0, 1]}), ROWS
    ),
    "range_queries": _mech(
        mg.RangeQueryPrivatizer(2.0, bounds={"u": (0, 10), "v": (0, 10)}, granularity=(4, 2)),
        pd.DataFrame({"u": NUMBERS[:, 0], "v": NUMBERS[::-1, 0]}),
    ),
    "pem": _mech(hh.PrefixExtendingMethod(4.0, top_k=3), ITEMS),
    "treehist": _mech(hh.TreeHist(4.0, top_k=3), ITEMS),
    "bloom_rappor": _mech(hh.BloomRAPPOR(n_bits=16, n_cohorts=4), ITEMS),
    "uldp_heavy_hitters": _mech(hh.UtilityOptimizedHeavyHitters(4.0, sensitive=["fig"]), ITEMS),
    "uldp_local_hashing": _mech(
        hh.UtilityOptimizedLocalHashingHeavyHitters(4.0, sensitive=["fig"]), ITEMS
    ),
}

NAMES = sorted(SPEC_CLASSES)
_BUILT: dict[str, tuple] = {}


def example(name):
    """(spec, mechanism or None, reports) of a registered name (built once)."""
    if name not in _BUILT:
        made = EXAMPLES[name]()
        spec, mech, X = made if len(made) == 3 else (made[0].channel_, *made)
        with np.errstate(all="ignore"):
            reports = mech.transform(X)
        _BUILT[name] = (spec, mech if spec is getattr(mech, "channel_", None) else None, reports)
    return _BUILT[name]


def test_every_registered_name_has_an_example():
    assert set(EXAMPLES) == set(SPEC_CLASSES), (
        "Give each new entry of SPEC_CLASSES an example in tests/_examples.py "
        "(categorical) or tests/package/test_contract.py (other families): "
        f"{sorted(set(SPEC_CLASSES) - set(EXAMPLES))}"
    )


# --------------------------------------------------------- identity and spec
@pytest.mark.parametrize("name", NAMES)
def test_spec_round_trips_with_its_name_and_version(name):
    spec, _, _ = example(name)
    assert type(spec) is SPEC_CLASSES[name] or spec.name == name
    as_dict = spec.to_dict()
    assert as_dict[spec.spec_key] == name
    assert as_dict["spec_version"] == type(spec).spec_version
    again = PublicSpec.from_dict(as_dict)
    assert again == spec and hash(again) == hash(spec)
    assert PublicSpec.from_json(spec.to_json()) == spec
    assert spec.describe_difference(again) == []
    assert set(spec.get_params()) <= set(as_dict)


# ----------------------------------------------------------- report layout
@pytest.mark.parametrize("name", NAMES)
def test_report_width_and_column_names_describe_the_reports(name):
    spec, mech, reports = example(name)
    names = spec.report_column_names("col")
    assert isinstance(spec.report_width, int) and spec.report_width >= 1
    assert len(names) == spec.report_width == len(set(names))
    assert all(isinstance(n, str) for n in names)
    if mech is not None and mech.n_features_in_ == 1:
        assert list(mech.get_feature_names_out(["col"])) == names
        assert np.shape(reports)[1] == spec.report_width


@pytest.mark.parametrize("name", NAMES)
def test_report_dtypes_are_those_transform_returns(name):
    # The schema of every chunk and Dask partition (parallel's meta) is the
    # declared one: it must be what the mechanism's reports hold.
    spec, mech, reports = example(name)
    dtypes = spec.report_dtypes("col")
    assert len(dtypes) == spec.report_width
    if mech is None or np.shape(reports)[1] != spec.report_width:
        return  # a derived channel, or several input columns
    if isinstance(reports, pd.DataFrame):
        got = list(reports.dtypes)
    else:
        got = [np.asarray(reports).dtype] * spec.report_width
    assert got == [np.dtype(d) for d in dtypes]


@pytest.mark.parametrize("name", NAMES)
def test_layout_flags_are_declared(name):
    spec, _, reports = example(name)
    for flag in ("has_categories", "bit_vector_reports", "histogram_reports"):
        assert isinstance(getattr(spec, flag), bool), flag
    assert spec.report_format is None or isinstance(spec.report_format, str)
    if isinstance(spec, Channel):
        assert isinstance(spec.packed_reports, bool)
        pd.api.types.pandas_dtype(spec.missing_report_dtype)  # a dtype pandas knows
        assert spec.guarantee_notion is None or isinstance(spec.guarantee_notion, str)
    if spec.bit_vector_reports:
        assert spec.report_width == spec.n_categories and spec.packed_reports
    if spec.histogram_reports:
        assert spec.forward(np.full(spec.n_categories, 1 / spec.n_categories)).shape == (
            spec.n_outputs,
        )


# --------------------------------------------------- reports -> statistics
def _halves(reports):
    if isinstance(reports, pd.DataFrame):
        return reports.iloc[: N // 2], reports.iloc[N // 2 :]
    return reports[: N // 2], reports[N // 2 :]


@pytest.mark.parametrize("name", NAMES)
def test_encoded_reports_give_statistics_that_add_up(name):
    spec, mech, reports = example(name)
    if mech is None:  # a channel derived from a mechanism's: its reports are the base's
        reports = np.asarray(reports) if not isinstance(reports, pd.DataFrame) else reports
    whole = spec.statistics(spec.encode_reports(reports))
    a, b = (spec.statistics(spec.encode_reports(part)) for part in _halves(reports))
    total = a + b
    assert total.n == whole.n > 0
    assert np.array_equal(np.asarray(total.counts), np.asarray(whole.counts))
    assert total.channel == spec


# ------------------------------------------------------------- collector
def _default(spec):
    params = {"candidates": ["apple", "pear"]} if spec.name == "bloom_rappor" else {}
    return spec.default_estimator(**params)


@pytest.mark.parametrize("name", NAMES)
def test_the_default_estimator_reads_the_reports(name):
    spec, mech, reports = example(name)
    est = _default(spec)
    assert spec.accepts_estimator(est)
    assert type(est).__name__ == spec.default_estimator_path.rpartition(":")[2]
    if mech is None and isinstance(spec, Channel):
        est.set_params(mechanism=spec)
        reports = np.asarray(reports)
    with np.errstate(all="ignore"):
        fitted = est.fit(reports)
    assert fitted.n_reports_ > 0


@pytest.mark.parametrize("name", NAMES)
def test_estimators_of_another_family_are_not_accepted(name):
    from sklearn_uldp import EMEstimator, MeanEstimator, SquareWaveEstimator
    from sklearn_uldp.estimators import DistributionEstimator
    from sklearn_uldp.heavy_hitters import BloomRAPPORDecoder, HeavyHitterEstimator

    spec, _, _ = example(name)
    own = type(_default(spec))
    for est in (
        EMEstimator(),
        MeanEstimator(),
        SquareWaveEstimator(),
        HeavyHitterEstimator(),
        BloomRAPPORDecoder(["apple"]),
    ):
        family = isinstance(est, own) or (
            spec.has_categories and isinstance(est, DistributionEstimator)
        )
        assert spec.accepts_estimator(est) == family, type(est).__name__


# -------------------------------------------------- the sampling strategies
@pytest.mark.parametrize("name", NAMES)
def test_fake_reports_their_law_and_likelihood_ratios(name):
    spec, _, _ = example(name)
    if not isinstance(spec, Channel):
        pytest.skip("open-domain protocols take no part in DataFramePrivatizer")
    kinds = spec.fake_kinds()
    assert isinstance(kinds, tuple) and set(kinds) <= {"zero", "random"}
    rng = np.random.default_rng(1)
    for kind in kinds:
        fakes = spec.sample_fakes(kind, 50, rng)
        assert np.shape(fakes)[0] == 50
        law = spec.fake_law(kind)
        assert np.all(law >= 0) and np.isclose(law.sum(), 1.0)
        plus, minus = spec.fake_ratio_classes(kind)
        assert np.shape(plus) == np.shape(minus) and np.all(plus >= minus) and np.all(minus >= 0)


@pytest.mark.parametrize("name", NAMES)
def test_sampled_channels_round_trip_or_are_refused(name):
    spec, _, _ = example(name)
    if not isinstance(spec, Channel):
        pytest.skip("open-domain protocols take no part in DataFramePrivatizer")
    for build in (
        lambda: spec.sampled_channel(2),
        lambda: spec.sampled_fake_channel(2, (spec.fake_kinds() or ("random",))[0]),
    ):
        try:
            column = build()
        except (TypeError, ValueError) as exc:
            assert str(exc)  # refused with a message (a sampled base, no fake law, ...)
            continue
        assert Channel.from_dict(column.to_dict()) == column
        assert column.report_width == spec.report_width
        assert column.has_categories == spec.has_categories


def test_sparse_reports_only_for_bit_vectors():
    spec, _, reports = example("rappor")
    assert spec.bit_vector_reports
    stats = spec.statistics(spec.encode_reports(sp.csr_array(np.asarray(reports))))
    assert stats.n == N
