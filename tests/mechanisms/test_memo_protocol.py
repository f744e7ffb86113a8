"""The memoization protocol: declared once, implemented by every memoized family.

What is checked: every memoized class of the package (found by walking the
public names, so a new one cannot be missed) implements
:class:`~sklearn_uldp.longitudinal.MemoizedMechanism` and is the only kind
of object :func:`~sklearn_uldp.longitudinal.is_memoized` answers True for;
the permanent answers of seeded secrets are bit for bit those of the code
before the protocol (SHA-256 pinned on a8328b7, where they were derived
through each family's own draw classes); ``permanent_answers`` is the round
every report randomizes, carries the permanent round's channel and draws
nothing from ``random_state``.
"""

import hashlib
import importlib
import inspect
import pkgutil

import numpy as np
import pandas as pd
import pytest
import sklearn
from scipy import stats

import sklearn_uldp
from sklearn_uldp import EmpiricalEstimator, RandomizedResponse
from sklearn_uldp.compose import DataFramePrivatizer
from sklearn_uldp.heavy_hitters import BloomRAPPOR
from sklearn_uldp.longitudinal import (
    DBitFlipPM,
    LongitudinalGRR,
    LongitudinalLocalHashing,
    LongitudinalUE,
    MemoizedMechanism,
    UtilityOptimizedLongitudinalRAPPOR,
    UtilityOptimizedLongitudinalRR,
    is_memoized,
)
from sklearn_uldp.mechanisms import get_channel
from sklearn_uldp.mechanisms._memo import MEMO_VERSION
from sklearn_uldp.utils import generate_user_secrets

CATS = list(range(5))

#: Every memoized class, one instance each (label -> factory(memo_label)).
MEMOIZED = {
    "LGRR": lambda label="": LongitudinalGRR(2.0, 1.0, categories=CATS, memo_label=label),
    "LUE": lambda label="": LongitudinalUE(2.0, 1.0, categories=CATS, memo_label=label),
    "LOLOHA": lambda label="": LongitudinalLocalHashing(
        2.0, 1.0, categories=CATS, memo_label=label
    ),
    "dBitFlip": lambda label="": DBitFlipPM(1.0, d=2, categories=CATS, memo_label=label),
    "uLRR": lambda label="": UtilityOptimizedLongitudinalRR(
        2.0, 1.0, sensitive=[0, 1], categories=CATS, memo_label=label
    ),
    "uLRAP": lambda label="": UtilityOptimizedLongitudinalRAPPOR(
        2.0, 1.0, sensitive=[0, 1], categories=CATS, memo_label=label
    ),
    "BloomRAPPOR": lambda label="": BloomRAPPOR(
        n_bits=16, n_hashes=2, n_cohorts=8, f=0.5, memo_label=label
    ),
}
LONGITUDINAL = [name for name in MEMOIZED if name != "BloomRAPPOR"]

#: SHA-256 of the permanent answers (as int64) of 2,000 users with seeded
#: secrets, recorded on a8328b7 (before the protocol; there they came from
#: each family's own draw classes, ``_SecretDraws`` and
#: ``_KeyedPermanentRound``), in the report format of ``permanent_answers``.
#: Integer outputs of the keyed PRF (ChaCha20) compared with thresholds on
#: the 2**-53 grid: the same on any processor (a threshold one ulp off
#: moves a cell with probability 2**-53).
PINNED = {
    "LGRR/1col/": "91efc03f989f5dd25d35520fff6d9dcd4b4bf12a0caa7702fc8a4441fe172609",
    "LGRR/2col/steps": "4e3c5476a9b953621bd14241b8f9967899fab62e74fad5c7f857e9ec77e1504a",
    "LUE/1col/": "b80e6f6a50d11250dc3791bb9cb56377fdcd67077c9eb53f732b8440de422936",
    "LUE/2col/steps": "54332573cd4581aee9ea5a7eb6d3726e1412d130511a8be3f41962a3406339ff",
    "LOLOHA/1col/": "1a0a0cdaa017348b2fcacc6308daab059dbb53a63f83d3e04deedc1abb38cee8",
    "LOLOHA/2col/steps": "c051936d820cf23a59690860b78d9d89aa8987f18d95ab947ee0bb4d7087b507",
    "dBitFlip/1col/": "f17f33240dc36b2c3b794baa78e025972804cc1258e582e66731b94ab2bdf768",
    "dBitFlip/2col/steps": "88a54bc77611c5cced484ef8abf266a702411a9eeeec474515019f158328f6f4",
    "uLRR/1col/": "e9eb1c832cdff752c0eb5f0c2e56916dfad65cfe3d5b5b9b85776b7c9a4b9ad6",
    "uLRR/2col/steps": "b0d9565f3d96c6a20fd3764e526124a9c8f0b500a97fe5ccfee5241772697b45",
    "uLRAP/1col/": "c1433f88d077bab2cd6f61ff25b97deccaa7899b1e91bc61f6d15d7a4892ddbd",
    "uLRAP/2col/steps": "e8a56709893c72d26d9219e3660e5c61790122717396c59525d74395cce760a5",
    "BloomRAPPOR/": "a4ffb755bd8ce772f731c2879e3c5bcc29d49222a3dbcce0c3e2f411f9344883",
    "BloomRAPPOR/home": "9f86c1e592dab5dbdd276ca7cf0beb2e7412236267abaf7a889403d492cb0f8c",
    "DataFramePrivatizer/sampled": (
        "3e9f10e917049ccd5da472905d6f188b934ca8d88d5a3d9558d0b5cace6b278a"
    ),
}

N_USERS = 2_000
SECRETS = generate_user_secrets(N_USERS, random_state=2024)
#: Two columns of values in [0, 5), the first one alone for one column.
VALUES = (np.arange(2 * N_USERS).reshape(N_USERS, 2) * 7 + np.arange(N_USERS)[:, None]) % 5
ITEMS = np.asarray(["alpha", "beta", "gamma", "caf\u00e9"], dtype=object)[np.arange(N_USERS) % 4]


def _sha(answers):
    data = np.ascontiguousarray(np.asarray(answers, dtype=np.int64))
    return hashlib.sha256(data.tobytes()).hexdigest()


def _public_classes():
    """Every class in the __all__ of the package and of its public subpackages."""
    modules = [sklearn_uldp] + [
        importlib.import_module(f"sklearn_uldp.{info.name}")
        for info in pkgutil.iter_modules(sklearn_uldp.__path__)
        if info.ispkg and not info.name.startswith("_")
    ]
    return {
        obj
        for module in modules
        for name in getattr(module, "__all__", ())
        if inspect.isclass(obj := getattr(module, name, None))
    }


# ------------------------------------------------------------- declared once
def test_every_memoized_class_is_tested():
    memoized = {
        cls
        for cls in _public_classes()
        if issubclass(cls, MemoizedMechanism) and not inspect.isabstract(cls)
    }
    tested = {type(factory()) for factory in MEMOIZED.values()}
    assert memoized == tested, memoized ^ tested


@pytest.mark.parametrize("name", MEMOIZED)
def test_implements_the_protocol(name):
    mech = MEMOIZED[name]()
    assert is_memoized(mech) and isinstance(mech, MemoizedMechanism)
    assert mech.get_params()["memo_label"] == ""
    for method in ("transform", "permanent_answers"):
        parameter = inspect.signature(getattr(mech, method)).parameters["user_secrets"]
        assert parameter.default is None
    assert isinstance(type(mech).changes_add_up, bool)
    X = ITEMS[:50] if name == "BloomRAPPOR" else VALUES[:50, :1]
    mech.fit(X)
    for attribute in ("epsilon_", "epsilon_permanent_"):
        assert isinstance(getattr(mech, attribute), float), attribute
    # one report costs epsilon_, any number of reports at most epsilon_permanent_
    assert mech.exposure(1) == pytest.approx(mech.epsilon_, rel=1e-9)
    for rounds in (2, 7, 400):
        assert mech.exposure(rounds) <= mech.epsilon_permanent_ * (1 + 1e-9)
    with pytest.raises(ValueError, match="n_rounds must be a positive integer"):
        mech.exposure(0)


def test_is_memoized_is_the_one_question():
    """Nothing else answers it: not a signature that takes user_secrets, not a
    privatizer of memoized columns; a registered class does."""

    class TakesSecrets:
        def transform(self, X, user_secrets=None):
            return X

    priv = DataFramePrivatizer({"a": MEMOIZED["LGRR"]()})
    for other in (RandomizedResponse(), TakesSecrets(), priv, None, LongitudinalGRR):
        assert not is_memoized(other)

    class ThirdParty:  # a user's own memoized mechanism, declared by registration
        pass

    MemoizedMechanism.register(ThirdParty)
    assert is_memoized(ThirdParty())


def test_one_memo_version():
    """Every memo context carries the one MEMO_VERSION."""
    mech = MEMOIZED["BloomRAPPOR"]().fit()
    assert f".memo.{MEMO_VERSION}|" in mech.channel_.memo_context("prr")
    assert f".{MEMO_VERSION}|" in sklearn_uldp.compose._memoized.MemoKeys.SAMPLED_LABEL


# -------------------------------------------------- answers unchanged, pinned
@pytest.mark.parametrize("name", LONGITUDINAL)
@pytest.mark.parametrize(("columns", "label"), [(1, ""), (2, "steps")])
def test_permanent_answers_are_unchanged(name, columns, label):
    X = VALUES[:, :columns]
    mech = MEMOIZED[name](label).fit(X)
    answers = mech.permanent_answers(X, user_secrets=SECRETS)
    assert _sha(answers) == PINNED[f"{name}/{columns}col/{label}"]


@pytest.mark.parametrize("label", ["", "home"])
def test_bloom_rappor_permanent_answers_are_unchanged(label):
    mech = MEMOIZED["BloomRAPPOR"](label).fit()
    answers = mech.permanent_answers(ITEMS, user_secrets=SECRETS)
    assert _sha(answers) == PINNED[f"BloomRAPPOR/{label}"]


def test_memoized_sampling_is_unchanged():
    """Which column each user reports under strategy="sample" (memoized)."""
    table = pd.DataFrame({c: VALUES[:, 0] if c in "ac" else VALUES[:, 1] for c in "abc"})
    priv = DataFramePrivatizer(
        {c: LongitudinalGRR(2.0, 1.0, categories=CATS) for c in "abc"}, strategy="sample"
    ).fit(table)
    sampled = priv.transform(table, user_secrets=SECRETS)["sampled_attribute"]
    assert _sha(pd.Index(list("abc")).get_indexer(sampled)) == PINNED["DataFramePrivatizer/sampled"]


# ------------------------------------------------------ the public accessor
@pytest.mark.parametrize("name", LONGITUDINAL)
def test_permanent_answers_are_what_every_report_randomizes(name):
    X = VALUES[:, :2]
    mech = MEMOIZED[name]().set_params(random_state=0).fit(X)
    first = mech.permanent_answers(X, user_secrets=SECRETS)
    # the same in every call; carried by the permanent round's channel
    assert np.array_equal(first, mech.permanent_answers(X, user_secrets=SECRETS))
    assert get_channel(first) == mech.permanent_channel_
    # another user's secret, another answer (for some users)
    others = generate_user_secrets(N_USERS, random_state=1)
    assert not np.array_equal(first, mech.permanent_answers(X, user_secrets=others))
    # reading them draws nothing from random_state: later reports are unchanged
    fresh = MEMOIZED[name]().set_params(random_state=0).fit(X)
    reports = mech.transform(X, user_secrets=SECRETS)
    assert np.array_equal(fresh.transform(X, user_secrets=SECRETS), reports)
    assert first.shape == reports.shape


def test_permanent_answers_follow_the_permanent_channel():
    """Users holding one value: their permanent answers follow row x of
    permanent_channel_ (chi-square), and the estimate from them is the
    distribution of the values."""
    mech = LongitudinalGRR(1.0, 0.5, categories=CATS).fit()
    n = 20_000
    secrets = generate_user_secrets(n, random_state=5)
    answers = np.asarray(mech.permanent_answers(np.full((n, 1), 3), user_secrets=secrets))
    observed = np.bincount(answers[:, 0], minlength=5)
    expected = n * mech.permanent_channel_.matrix()[3]
    assert stats.chisquare(observed, expected).pvalue > 1e-3
    X = np.random.default_rng(0).choice(5, p=[0.4, 0.3, 0.1, 0.1, 0.1], size=(n, 1))
    estimate = EmpiricalEstimator().fit(mech.permanent_answers(X, user_secrets=secrets))
    np.testing.assert_allclose(estimate.distribution_, [0.4, 0.3, 0.1, 0.1, 0.1], atol=0.03)


def test_dbitflip_sends_its_permanent_answers():
    """dBitFlipPM has no instantaneous round: every report is the permanent answer."""
    mech = MEMOIZED["dBitFlip"]().fit()
    X = VALUES[:, :1]
    np.testing.assert_array_equal(
        mech.transform(X, user_secrets=SECRETS), mech.permanent_answers(X, user_secrets=SECRETS)
    )


def test_bloom_rappor_permanent_answers_are_the_prr():
    """Rows [cohort, B']: what the reports of an identity IRR (p = 0, q = 1) send."""
    params = dict(n_bits=16, n_hashes=2, n_cohorts=8, f=0.5)
    mech = BloomRAPPOR(**params).fit()
    identity = BloomRAPPOR(p=0.0, q=1.0, **params).fit()
    answers = mech.permanent_answers(ITEMS, user_secrets=SECRETS)
    assert get_channel(answers) is None  # not reports
    np.testing.assert_array_equal(answers, identity.transform(ITEMS, user_secrets=SECRETS))
    with sklearn.config_context(transform_output="pandas"):
        frame = mech.permanent_answers(pd.Series(ITEMS, name="item"), user_secrets=SECRETS)
    assert list(frame.columns[:2]) == ["x0_cohort", "x0_b0"]  # fitted without names


def test_permanent_answers_in_pandas_and_without_secrets():
    mech = LongitudinalUE(2.0, 1.0, categories=CATS).fit(pd.DataFrame({"app": [0]}))
    frame = pd.DataFrame({"app": VALUES[:10, 0]})
    with sklearn.config_context(transform_output="pandas"):
        answers = mech.permanent_answers(frame, user_secrets=SECRETS[:10])
    assert list(answers.columns) == [f"app_{c}" for c in CATS]
    assert get_channel(answers) == mech.permanent_channel_
    with pytest.raises(ValueError, match="user_secrets"):
        mech.permanent_answers(frame)
    # a seeded simulation: row i is simulated user i in every call
    seeded = LongitudinalUE(2.0, 1.0, categories=CATS, random_state=3).fit()
    np.testing.assert_array_equal(
        seeded.permanent_answers(VALUES[:10, :1]), seeded.permanent_answers(VALUES[:10, :1])
    )
