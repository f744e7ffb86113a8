"""The empirical privacy audit (sklearn_uldp.privacy.audit_mechanism).

Fast runs over every public mechanism, broken samplers it must catch, black
boxes, and a slow large-n run (``-m slow``).
"""

import math

import numpy as np
import pandas as pd
import pytest

from sklearn_uldp import longitudinal as L
from sklearn_uldp import mechanisms as M
from sklearn_uldp.privacy import AuditResult, audit_mechanism, check_uldp

CATS = list(range(6))
SENS = [0, 1]


def _mechanisms(epsilon=1.0):
    """One configured instance of every public mechanism class."""
    return {
        "RR": M.RandomizedResponse(epsilon, categories=CATS),
        "RAPPOR": M.RAPPOR(epsilon, categories=CATS),
        "OUE (RAPPOR theta=0.5, sparse)": M.RAPPOR(
            epsilon, theta=0.5, categories=CATS, sparse_output=True
        ),
        "uRR": M.UtilityOptimizedRR(epsilon, sensitive=SENS, categories=CATS),
        "uRAP": M.UtilityOptimizedRAPPOR(epsilon, sensitive=SENS, categories=CATS),
        "uRAP theta=0.5": M.UtilityOptimizedRAPPOR(
            epsilon, sensitive=SENS, theta=0.5, categories=CATS
        ),
        "uOUE": M.UtilityOptimizedOUE(epsilon, sensitive=SENS, categories=CATS),
        "uBD": M.UtilityOptimizedBlockDesign(
            epsilon, sensitive=[0, 1, 2], subset_size=2, categories=CATS
        ),
        "HR": M.HadamardResponse(epsilon, categories=CATS),
        "HR blocked": M.HadamardResponse(epsilon, block_size=4, categories=CATS),
        "HLHR": M.HighLowHadamardResponse(epsilon, sensitive=SENS, categories=CATS),
        "BlockHR": M.BlockHadamardResponse(epsilon, blocks=[0, 0, 0, 1, 1, 1], categories=CATS),
        "BinaryOptimal (Warner)": M.BinaryOptimalResponse(
            epsilon, epsilon, categories=["no", "yes"]
        ),
        "BinaryOptimal (Mangat)": M.BinaryOptimalResponse(
            np.inf, epsilon, categories=["no", "yes"]
        ),
        "BinaryOptimal (asymmetric)": M.BinaryOptimalResponse(
            epsilon / 2, 2 * epsilon, categories=["no", "yes"]
        ),
        "uHR": M.UtilityOptimizedHadamardResponse(epsilon, sensitive=SENS, categories=CATS),
        "uSS": M.UtilityOptimizedSubsetSelection(epsilon, sensitive=[0, 1, 2], categories=CATS),
        "OLH": M.OptimizedLocalHashing(epsilon, categories=CATS),
        "BLH": M.BinaryLocalHashing(epsilon, categories=CATS),
        "SS": M.SubsetSelection(epsilon, categories=CATS),
        # 16 buckets and 8 hashes for 6 categories: the defaults (256 x 256,
        # for large domains) made 400,000 CMS reports 0.8 GB and 30 s.
        "CMS": M.CountMeanSketch(epsilon, n_buckets=16, n_hashes=8, categories=CATS),
        "HCMS": M.HadamardCountMeanSketch(epsilon, n_buckets=16, n_hashes=8, categories=CATS),
        # the utility-optimized transformation (tests/mechanisms/test_frontier.py)
        "uUE": M.UtilityOptimizedUnaryEncoding(epsilon, sensitive=[0, 1, 2], categories=CATS),
        "uLH": M.UtilityOptimizedLocalHashing(epsilon, sensitive=[0, 1, 2], categories=CATS),
        "uSS (He)": M.TransformedSubsetSelection(epsilon, sensitive=[0, 1, 2, 3], categories=CATS),
        "uHCMS": M.UtilityOptimizedHadamardCountMeanSketch(
            epsilon, sensitive=[0, 1, 2], n_buckets=4, n_hashes=2, categories=CATS
        ),
        "uHR blocked": M.UtilityOptimizedBlockedHadamardResponse(
            epsilon, sensitive=[0, 1, 2, 3], block_size=2, categories=CATS
        ),
        # memoized: one report (rounds: tests/longitudinal/test_longitudinal.py)
        **_memoized(epsilon),
    }


#: The memoized mechanisms (their one report is k-RR, RAPPOR, OLH, uRR or
#: uRAP, which the large-n run below covers; their own large-n checks are
#: the exact-matrix and sampler tests of tests/longitudinal/test_longitudinal.py).
def _memoized(epsilon):
    return {
        "L-GRR": L.LongitudinalGRR(2 * epsilon, epsilon, categories=CATS),
        "L-OSUE": L.LongitudinalUE(2 * epsilon, epsilon, categories=CATS),
        "LOLOHA": L.LongitudinalLocalHashing(2 * epsilon, epsilon, categories=CATS),
        "dBitFlipPM": L.DBitFlipPM(epsilon, d=2, categories=CATS),
        "uL-RR": L.UtilityOptimizedLongitudinalRR(
            2 * epsilon, epsilon, sensitive=SENS, categories=CATS
        ),
        "uL-RAPPOR": L.UtilityOptimizedLongitudinalRAPPOR(
            2 * epsilon, epsilon, sensitive=SENS, categories=CATS
        ),
    }


def _fit(mech, seed=0):
    if "random_state" in mech.get_params():
        mech.set_params(random_state=seed)
    return mech.fit()


def test_every_public_mechanism_is_covered():
    """The parametrization below must name every public mechanism class."""
    public = {
        name
        for module in (M, L)
        for name in module.__all__
        if isinstance(getattr(module, name), type)
        and issubclass(getattr(module, name), M.BaseMechanism)
        and name != "BaseMechanism"
    }
    covered = {type(m).__name__ for m in _mechanisms().values()}
    covered |= {"NonPrivate", "PersonalizedMechanism"}  # tested separately
    assert public <= covered, public - covered


@pytest.mark.parametrize("name", list(_mechanisms()))
def test_audit_passes_on_every_mechanism(name):
    mech = _fit(_mechanisms()[name])
    result = audit_mechanism(mech, n_samples=20_000, random_state=0)
    assert isinstance(result, AuditResult)
    assert result.passed, result.summary()
    assert result.uldp_violations.empty
    assert result.epsilon_lower_bound <= result.epsilon_claimed
    # Power: at 20,000 reports per input the bound is within reach of epsilon
    # (sketch reports too: CMS/HCMS show the input only jointly with the hash
    # index, which the likelihood-ratio events pool over).
    assert result.epsilon_lower_bound > 0.4 * result.epsilon_claimed, result.summary()
    assert len(result.tests) > 0 and not result.tests["exceeds"].any()


def test_audit_non_private_reports_a_large_loss():
    mech = M.NonPrivate(categories=CATS).fit()
    result = audit_mechanism(mech, n_samples=20_000, random_state=0)
    assert result.epsilon_claimed == math.inf
    assert result.epsilon_lower_bound > 6  # about ln(n / ln(m / alpha))
    assert "no privacy claimed" in result.summary()
    # Against any finite claim it fails.
    assert not audit_mechanism(mech, n_samples=2_000, epsilon=5.0, random_state=0).passed


@pytest.mark.parametrize("common", ["urr", "urap"])
def test_audit_personalized_mechanism_rows(common):
    """Inputs that are rows: a value and the user's own sensitive 'home'."""
    mech = M.PersonalizedMechanism(
        1.0,
        sensitive=["a"],
        tags=["home"],
        mechanism=common,
        categories=["a", "b", "c", "d"],
        random_state=0,
    )
    mech.fit(pd.DataFrame({"cell": ["a", "b"], "home": ["c", None]}))
    home = {"cell": "c", "home": "c"}  # at her own home: personal-sensitive
    common_s = {"cell": "a", "home": "c"}  # in the common sensitive set
    plain = {"cell": "b", "home": "c"}
    other = {"cell": "d", "home": "c"}
    pairs = [(home, plain), (home, common_s), (plain, other), (common_s, other)]

    def sensitive(row):
        return row["cell"] == "a" or row["cell"] == row["home"]

    result = audit_mechanism(
        mech, pairs=pairs, sensitive=sensitive, n_samples=20_000, random_state=0
    )
    assert result.passed, result.summary()
    assert result.epsilon_lower_bound > 0.4
    assert result.uldp_violations.empty


# ------------------------------------------------------------ broken samplers
class _SpecWithBrokenSampler:
    """Claims the spec (channel_) of ``inner`` but samples with ``sample``."""

    def __init__(self, inner, sample, seed=0):
        self.inner = inner
        self.channel_ = inner.channel_
        self.categories_ = inner.categories_
        self.epsilon = inner.epsilon
        self._sample = sample
        self._rng = np.random.default_rng(seed)

    def transform(self, X):
        values = np.asarray(X)[:, 0]
        codes = pd.Index(self.categories_).get_indexer(values)
        return self._sample(self, values, codes, self._rng)


def _pure_ldp_oue_bug(self, values, codes, rng):
    """pure-ldp < 1.2.0's unary encoding: every bit is drawn as a 0-bit (1 w.p.
    q), then the true bit is set w.p. p, so it is 1 w.p. p + (1 - p) q > p."""
    p, q = 0.5, 1.0 / (math.exp(self.epsilon) + 1.0)
    bits = rng.random((codes.size, len(self.categories_))) < q
    bits[np.arange(codes.size), codes] |= rng.random(codes.size) < p
    return bits.astype(np.uint8)


def _correct_oue(self, values, codes, rng):
    p, q = 0.5, 1.0 / (math.exp(self.epsilon) + 1.0)
    bits = rng.random((codes.size, len(self.categories_))) < q
    bits[np.arange(codes.size), codes] = rng.random(codes.size) < p
    return bits.astype(np.uint8)


def test_audit_catches_the_pure_ldp_unary_encoding_bug():
    oue = M.RAPPOR(1.0, theta=0.5, categories=list(range(4))).fit()
    # The same sampler written correctly passes (the test can tell them apart).
    good = audit_mechanism(
        _SpecWithBrokenSampler(oue, _correct_oue), n_samples=20_000, random_state=0
    )
    assert good.passed, good.summary()
    broken = audit_mechanism(
        _SpecWithBrokenSampler(oue, _pure_ldp_oue_bug), n_samples=20_000, random_state=0
    )
    # True loss: ln(e^eps + 2) = 1.55 for a claimed eps = 1.
    assert not broken.passed
    assert broken.epsilon_lower_bound > 1.2, broken.summary()
    worst = broken.worst
    assert worst["lower_bound"] > worst["claimed"] and "bits" in worst["event"]


def _sketch_with_flip(eps):
    """A CMS sampler (the channel's hashes) flipping bits as eps would."""
    flip = 1.0 / (1.0 + math.exp(eps / 2.0))

    def sample(self, values, codes, rng):
        ch = self.channel_
        j = rng.integers(0, ch.n_hashes, size=codes.size)
        bits = (rng.random((codes.size, ch.n_buckets)) < flip).astype(np.int64)
        bits[np.arange(codes.size), ch.hash(j, codes)] = rng.random(codes.size) >= flip
        return np.column_stack([j, bits])

    return sample


def test_audit_catches_a_leaky_count_mean_sketch():
    """Sketch rows [j, bits]: the default events condition on the hash index
    (through the channel's likelihood), so a sampler that flips too few bits
    is caught, and the correct one passes with power."""
    cms = M.CountMeanSketch(1.0, categories=list(range(4)), n_buckets=32, n_hashes=16).fit()
    good = audit_mechanism(
        _SpecWithBrokenSampler(cms, _sketch_with_flip(1.0)), n_samples=20_000, random_state=0
    )
    assert good.passed and good.epsilon_lower_bound > 0.8, good.summary()
    leaky = audit_mechanism(
        _SpecWithBrokenSampler(cms, _sketch_with_flip(2.0)), n_samples=20_000, random_state=0
    )
    # True loss: 2 for a claimed eps = 1.
    assert not leaky.passed
    assert 1.5 < leaky.epsilon_lower_bound <= 2.0, leaky.summary()
    assert leaky.worst["event"].startswith("log Q(y|x)/Q(y|x') >=")


def test_audit_black_box_sketch_conditions_on_the_index():
    """Without a channel, sketch rows are tested by events on (index j, bit b)
    chosen on the first half: single bits reach eps / 2 for CMS, the pair
    "bit b1(j) set, bit b0(j) unset" (pooled over j) the full eps."""
    cms = M.CountMeanSketch(
        1.0, categories=list(range(4)), n_buckets=16, n_hashes=4, random_state=0
    ).fit()

    def black_box(values, rng):
        return cms.transform(values.reshape(-1, 1))

    result = audit_mechanism(
        black_box, pairs=[(0, 1), (2, 3)], epsilon=1.0, n_samples=20_000, random_state=0
    )
    assert result.passed, result.summary()
    assert result.epsilon_lower_bound > 0.75, result.summary()
    assert "pooled over indices" in result.worst["event"]
    assert result.tests["event"].str.match(r"(index == \d+ and )?bit").all()
    whole = audit_mechanism(
        black_box, pairs=[(0, 1)], epsilon=1.0, events="outputs", n_samples=2_000, random_state=0
    )
    assert whole.tests["event"].str.startswith("output == index").all()
    with pytest.raises(ValueError, match="events='likelihood' needs"):
        audit_mechanism(black_box, pairs=[(0, 1)], epsilon=1.0, events="likelihood", n_samples=100)


_KEEP_AT_EPS_2 = math.exp(2.0) / (math.exp(2.0) + 3)


def _leaky_rr(values, rng, keep=_KEEP_AT_EPS_2):
    """k-RR over 4 values that keeps the truth as often as eps = 2 would."""
    others = (values + rng.integers(1, 4, values.size)) % 4
    return np.where(rng.random(values.size) < keep, values, others)


def test_audit_catches_a_leaky_randomized_response_callable():
    result = audit_mechanism(
        _leaky_rr, pairs=[(0, 1), (2, 3)], epsilon=1.0, n_samples=20_000, random_state=0
    )
    assert not result.passed
    assert 1.5 < result.epsilon_lower_bound <= 2.0, result.summary()
    # Measured against its real budget it passes: the bound is a lower bound.
    assert audit_mechanism(
        _leaky_rr, pairs=[(0, 1), (2, 3)], epsilon=2.0, n_samples=20_000, random_state=0
    ).passed


def test_audit_of_a_user_callable_without_claim_and_reproducibility():
    def correct_rr(values, rng, eps=1.0):
        keep = math.exp(eps) / (math.exp(eps) + 3)
        others = (values + rng.integers(1, 4, values.size)) % 4
        return np.where(rng.random(values.size) < keep, values, others)

    a = audit_mechanism(correct_rr, pairs=[(0, 1)], n_samples=10_000, random_state=3)
    b = audit_mechanism(correct_rr, pairs=[(0, 1)], n_samples=10_000, random_state=3)
    assert a.passed is None and math.isnan(a.epsilon_claimed)
    assert "epsilon=" in " ".join(a.notes)
    pd.testing.assert_frame_equal(a.tests, b.tests)
    assert 0.5 < a.epsilon_lower_bound < 1.0
    assert audit_mechanism(
        correct_rr, pairs=[(0, 1)], epsilon=1.0, n_samples=10_000, random_state=3
    ).passed


def _urr_releasing_itself(self, values, codes, rng):
    """uRR that sometimes sends a sensitive value as itself (skips the noise)."""
    out = np.asarray(self.inner.transform(values.reshape(-1, 1)))[:, 0]
    sensitive = np.isin(values, SENS)
    leak = sensitive & (rng.random(values.size) < 0.2)
    out[leak] = values[leak]
    return out


def _urr_sensitive_as_non_sensitive(self, values, codes, rng):
    """uRR that sometimes reports a sensitive value as non-sensitive value 5,
    an output the spec says only 5 produces (an invertible output)."""
    out = np.asarray(self.inner.transform(values.reshape(-1, 1)))[:, 0]
    leak = np.isin(values, SENS) & (rng.random(values.size) < 0.05)
    out[leak] = 5
    return out


def test_audit_catches_broken_utility_optimized_rr():
    urr = M.UtilityOptimizedRR(1.0, sensitive=SENS, categories=CATS, random_state=0).fit()
    assert check_uldp(urr)  # the spec itself is fine
    released = audit_mechanism(
        _SpecWithBrokenSampler(urr, _urr_releasing_itself), n_samples=20_000, random_state=0
    )
    assert not released.passed
    assert released.epsilon_lower_bound > 1.0, released.summary()

    invertible = audit_mechanism(
        _SpecWithBrokenSampler(urr, _urr_sensitive_as_non_sensitive),
        pairs=[(0, 5), (1, 4)],
        n_samples=20_000,
        random_state=0,
    )
    assert not invertible.passed
    v = invertible.uldp_violations
    assert set(v["x"]) == {0, 1} and (v["count"] > 0).all()
    assert v["basis"].str.contains("channel").all()
    assert "ULDP violations" in invertible.summary()


def test_audit_black_box_uldp_presumes_invertible_outputs():
    """Without a channel, invertible outputs are presumed from the samples."""
    urr = M.UtilityOptimizedRR(1.0, sensitive=SENS, categories=CATS, random_state=0).fit()

    def broken(values, rng):
        out = np.asarray(urr.transform(values.reshape(-1, 1)))[:, 0]
        leak = np.isin(values, SENS) & (rng.random(values.size) < 0.05)
        out[leak] = 5
        return out

    def correct(values, rng):
        return np.asarray(urr.transform(values.reshape(-1, 1)))[:, 0]

    pairs = [(0, 5), (1, 4), (4, 5)]
    bad = audit_mechanism(
        broken, pairs=pairs, sensitive=SENS, epsilon=1.0, n_samples=20_000, random_state=0
    )
    assert not bad.passed
    assert set(bad.uldp_violations["x"]) == {0, 1}
    assert bad.uldp_violations["basis"].str.contains("presumed").all()
    good = audit_mechanism(
        correct, pairs=pairs, sensitive=SENS, epsilon=1.0, n_samples=20_000, random_state=0
    )
    assert good.passed, good.summary()
    assert any("skipped" in note for note in good.notes)


def test_audit_shows_power_near_epsilon():
    """A trivial audit (bound 0) would pass every test above: show power."""
    rr = M.RandomizedResponse(3.0, categories=[0, 1], random_state=0).fit()
    result = audit_mechanism(rr, n_samples=200_000, random_state=0)
    assert result.passed and 2.8 < result.epsilon_lower_bound <= 3.0


def test_audit_result_table_and_validation():
    rr = M.RandomizedResponse(1.0, categories=["a", "b", "c"], random_state=0).fit()
    result = audit_mechanism(rr, pairs="all", n_samples=2_000, alpha=0.1, random_state=0)
    t = result.tests
    assert {
        "x",
        "x_prime",
        "event",
        "count",
        "rate",
        "p_lower",
        "p_prime_upper",
        "lower_bound",
        "claimed",
        "exceeds",
    } <= set(t.columns)
    assert set(map(tuple, t[["x", "x_prime"]].to_numpy())) == {
        (x, y) for x in "abc" for y in "abc" if x != y
    }
    assert (t["p_lower"] <= t["rate"]).all() and (t["rate_prime"] <= t["p_prime_upper"]).all()
    assert "AuditResult(passed=True" in repr(result)
    with pytest.raises(ValueError, match="pairs="):
        audit_mechanism(lambda v, rng: v, n_samples=100)
    with pytest.raises(ValueError, match="alpha"):
        audit_mechanism(rr, alpha=1.5)
    with pytest.raises(ValueError, match="events"):
        audit_mechanism(rr, events="bytes")
    with pytest.raises(ValueError, match="bit-vector"):
        audit_mechanism(rr, events="bits", n_samples=100)


def test_audit_claims_can_be_overridden():
    """epsilon= takes a number or a privacy matrix; protected= declares Y_P."""
    from sklearn_uldp.privacy import high_low, ldp

    cats = ["home", "gym", "clinic"]
    urr = M.UtilityOptimizedRR(1.0, sensitive=["clinic"], categories=cats, random_state=0).fit()
    # uRR is not 1-LDP (it releases 'home' in clear): the audit says so ...
    assert not audit_mechanism(urr, epsilon=ldp(cats, 1.0), n_samples=4_000, random_state=0).passed
    # ... but it is ('clinic', 1)-high-low LDP.
    assert audit_mechanism(
        urr, epsilon=high_low(cats, ["clinic"], 1.0), n_samples=4_000, random_state=0
    ).passed

    def black_box(values, rng):
        return np.asarray(urr.transform(values.reshape(-1, 1)))[:, 0]

    declared = audit_mechanism(
        black_box,
        pairs=[("home", "clinic"), ("gym", "home")],
        epsilon=1.0,
        sensitive=["clinic"],
        protected=lambda r: np.asarray(r) == "clinic",
        n_samples=4_000,
        random_state=0,
    )
    assert declared.passed and not declared.notes
    # tests with a non-sensitive x ran on the protected outputs only
    home = declared.tests[declared.tests["x"] == "home"]
    assert len(home) and home["event"].eq("output == 'clinic'").all()
    with pytest.raises(ValueError, match="sensitive=callable"):
        audit_mechanism(
            M.PersonalizedMechanism(1.0, sensitive=["a"], tags=["home"], categories=["a", "b"]).fit(
                pd.DataFrame({"cell": ["a"], "home": ["b"]})
            ),
            pairs=[({"cell": "a", "home": "b"}, {"cell": "b", "home": "b"})],
        )


def test_audit_custom_events():
    """A fixed event, e.g. 'the report equals 0', uses every report."""
    rr = M.RandomizedResponse(2.0, categories=[0, 1, 2], random_state=0).fit()
    result = audit_mechanism(
        rr, pairs=[(0, 1)], n_samples=20_000, events=lambda r: r == 0, random_state=0
    )
    assert list(result.tests["event"]) == ["events[0]", "events[0]"]
    assert (result.tests["n"] == 20_000).all()
    assert result.passed and 1.8 < result.epsilon_lower_bound <= 2.0
    with pytest.raises(ValueError, match="one boolean per report"):
        audit_mechanism(rr, pairs=[(0, 1)], n_samples=100, events=lambda r: np.ones(3, dtype=bool))


def test_audit_bit_vectors_as_whole_outputs():
    rap = M.RAPPOR(2.0, categories=[0, 1, 2], random_state=0).fit()
    result = audit_mechanism(rap, events="outputs", n_samples=20_000, random_state=0)
    assert result.passed and result.epsilon_lower_bound > 1.0
    assert result.tests["event"].str.startswith("output == bits set").all()


# ------------------------------------------------------------------ slow run
@pytest.mark.slow
@pytest.mark.parametrize("epsilon", [0.5, 2.0])
@pytest.mark.parametrize("name", [n for n in _mechanisms() if n not in _memoized(1.0)])
def test_audit_every_mechanism_large_n(name, epsilon):
    mech = _fit(_mechanisms(epsilon)[name], seed=1)
    result = audit_mechanism(mech, n_samples=400_000, random_state=1)
    assert result.passed, result.summary()
    assert result.uldp_violations.empty
    assert result.epsilon_lower_bound > 0.75 * result.epsilon_claimed, result.summary()


@pytest.mark.slow
def test_audit_pure_ldp_bug_small_epsilon_large_n():
    oue = M.RAPPOR(0.25, theta=0.5, categories=list(range(8))).fit()
    broken = audit_mechanism(
        _SpecWithBrokenSampler(oue, _pure_ldp_oue_bug, seed=1),
        pairs="all",
        n_samples=400_000,
        random_state=1,
    )
    assert not broken.passed and broken.epsilon_lower_bound > 0.8


def test_audit_page_code_blocks_run(monkeypatch, tmp_path):
    """docs/audit.md's examples run and print what the page shows."""
    import contextlib
    import io
    import re
    from pathlib import Path

    monkeypatch.chdir(tmp_path)
    page = Path(__file__).resolve().parents[2] / "docs" / "audit.md"
    text = page.read_text(encoding="utf-8")
    blocks = re.findall(r"^```python\n(.*?)^```\n+```text\n(.*?)^```", text, flags=re.S | re.M)
    assert len(blocks) == 2
    for i, (code, expected) in enumerate(blocks):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, f"audit.md block {i + 1}", "exec"), {"__name__": "doc"})
        # The verdict line is exact; the counts of the first example follow
        # the mechanism's random stream, so only their layout is compared.
        got = out.getvalue().splitlines()
        want = expected.splitlines()
        assert got[0] == want[0] and len(got) == len(want)
