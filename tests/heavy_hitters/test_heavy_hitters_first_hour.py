"""Heavy hitters as a new user meets them (issue 30, item 4, and item 3's part).

Each test reproduces a failure of a8328b7: a NaN estimate without an error
(a group of users with no report), a truncation warning that quoted users'
items and fired twice, junk with negative frequencies in the default list,
Bloom-RAPPOR settable only through p, q and f, and a Bloom decoder whose
identifiability check and least squares worked on the dense design.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import nnls

from sklearn_uldp.exceptions import ItemTruncationWarning, UninformativeEstimateWarning
from sklearn_uldp.heavy_hitters import (
    BloomRAPPOR,
    BloomRAPPORDecoder,
    HeavyHitterEstimator,
    PrefixExtendingMethod,
    TreeHist,
    UtilityOptimizedHeavyHitters,
)
from sklearn_uldp.heavy_hitters._encoding import ItemEncoding
from sklearn_uldp.privacy import check_ldp

_TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    max_size=12,
)


def _numbers(frame):
    return frame.select_dtypes("number").to_numpy(dtype=float)


def _all_finite(est):
    return (
        np.isfinite(_numbers(est.candidates_)).all()
        and np.isfinite(_numbers(est.heavy_hitters_frame_)).all()
    )


# ------------------------------------------------------------------ no NaN
def test_the_reported_nan_case_is_explained_not_nan():
    """The issue's case: 2 users, 65 groups (64-byte items, top_k=1): 63
    groups, the held-out one among them, have no report, so the old decoder
    gave a NaN frequency, standard error and interval without a word."""
    mech = PrefixExtendingMethod(epsilon=7.408211023981899, top_k=1, max_bytes=64, random_state=0)
    reports = mech.fit_transform(["\x8b\x0f", "cafe\u0301"])
    with pytest.warns(UninformativeEstimateWarning, match="63 of its 65 groups received no"):
        est = HeavyHitterEstimator(report="top_k").fit(reports)
    assert _all_finite(est)
    assert est.heavy_hitters_.empty and est.candidates_.empty
    assert list(est.heavy_hitters_frame_.columns) == [
        "frequency",
        "std_error",
        "score",
        "lower",
        "upper",
    ]


@settings(max_examples=40, deadline=None)
@given(
    log_epsilon=st.floats(np.log(0.05), np.log(40.0)),
    vocabulary=st.lists(_TEXT, min_size=1, max_size=6),
    n=st.integers(1, 400),
    max_bytes=st.integers(1, 64),
    top_k=st.integers(1, 8),
    cls=st.sampled_from([PrefixExtendingMethod, TreeHist]),
    report=st.sampled_from(["top_k", "positive", "significant"]),
    seed=st.integers(0, 2**16),
)
def test_no_output_is_nan_or_infinite(
    log_epsilon, vocabulary, n, max_bytes, top_k, cls, report, seed
):
    items = [vocabulary[i] for i in np.random.default_rng(seed).integers(0, len(vocabulary), n)]
    mech = cls(
        epsilon=float(np.exp(log_epsilon)),
        top_k=top_k,
        max_bytes=max_bytes,
        n_hashes=16,
        random_state=seed,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ItemTruncationWarning)
        warnings.simplefilter("ignore", UninformativeEstimateWarning)
        est = HeavyHitterEstimator(report=report).fit(mech.fit_transform(items))
        assert _all_finite(est)
        assert len(est.heavy_hitters_) <= top_k


# ------------------------------------------------- truncation, once, counts only
MARKER = "zq9-registered-nurse-marker"


def _messages(record):
    return [str(w.message) for w in record]


def test_truncation_warns_once_per_call_with_counts_only():
    """fit_transform warned twice and quoted the items (``e.g. [b'registered
    nu…']``): now transform warns once with counts and the fix; fit, which
    privatizes nothing, does not warn."""
    items = [MARKER] * 3 + ["rn", "nurse"]
    mech = PrefixExtendingMethod(epsilon=4.0, max_bytes=8, random_state=0)
    for call, expected in (
        (lambda: mech.fit_transform(items), 1),
        (lambda: mech.fit(items), 0),
        (lambda: mech.transform(items), 1),
    ):
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            call()
        messages = _messages(record)
        assert all(MARKER not in m and MARKER[:8] not in m for m in messages)
        cut = [w for w in record if issubclass(w.category, ItemTruncationWarning)]
        assert len(cut) == expected
        if expected:
            assert str(cut[0].message).startswith(
                "3 of 5 items (1 distinct item) are longer than max_bytes=8 bytes (UTF-8); "
                f"set max_bytes={len(MARKER)} to keep them whole."
            )


def test_items_longer_than_64_bytes_say_what_max_bytes_can_do():
    with pytest.warns(ItemTruncationWarning, match="longest has 70.*cut") as record:
        ItemEncoding("str", 16, "NFC", "truncate").encode(["x" * 70, "a"])
    assert "xxxx" not in str(record[0].message)


def _errors_and_warnings(call):
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        try:
            call()
        except Exception as exc:  # noqa: BLE001 - every error's text is checked
            return [str(exc), *_messages(record)], True
    return _messages(record), False


_MARKER_INT = 987_654_321_987


@pytest.mark.parametrize(
    "case",
    [
        "long-error",
        "long-truncate",
        "nul",
        "surrogate",
        "bytes-nul",
        "mixed-types",
        "int-negative",
        "int-too-large",
        "int-float",
        "int-text",
        "single-value",
        "bloom-mixed",
        "uldp-mixed",
    ],
)
def test_no_warning_or_error_quotes_a_users_item(case):
    """A marker item goes through every heavy-hitter path that warns or
    refuses; no message may carry it (or its start) into a log."""
    m = MARKER
    calls = {
        "long-error": lambda: PrefixExtendingMethod(max_bytes=4, on_long="error").fit([m]),
        "long-truncate": lambda: TreeHist(max_bytes=4, random_state=0).fit_transform([m, m]),
        "nul": lambda: PrefixExtendingMethod().fit([m + "\x00"]),
        "surrogate": lambda: PrefixExtendingMethod(max_bytes=64).fit([m + "\udcff"]),
        "bytes-nul": lambda: PrefixExtendingMethod(item_type="bytes", max_bytes=64).fit(
            [m.encode() + b"\x00"]
        ),
        "mixed-types": lambda: PrefixExtendingMethod(max_bytes=64).fit(["a", m.encode()]),
        "int-negative": lambda: PrefixExtendingMethod(item_type="int").fit(
            np.array([3, -_MARKER_INT])
        ),
        "int-too-large": lambda: PrefixExtendingMethod(item_type="int", max_bytes=4).fit(
            np.array([_MARKER_INT])
        ),
        "int-float": lambda: PrefixExtendingMethod(item_type="int").fit(
            np.array([1, _MARKER_INT + 0.5], dtype=object)
        ),
        "int-text": lambda: PrefixExtendingMethod(item_type="int").fit(
            np.array([1, str(_MARKER_INT)], dtype=object)
        ),
        "single-value": lambda: PrefixExtendingMethod().fit(m),
        "bloom-mixed": lambda: BloomRAPPOR().fit(["a", m.encode()]),
        "uldp-mixed": lambda: UtilityOptimizedHeavyHitters(2.0, sensitive=["s"]).fit(
            ["a", m.encode()]
        ),
    }
    messages, raised = _errors_and_warnings(calls[case])
    assert raised or messages, "the case must refuse or warn"
    for text in messages:
        for needle in (m, m[:8], m.encode().hex()[:12], str(_MARKER_INT), "zq9"):
            assert needle not in text, (case, text)


# ------------------------------------------------------------ small-n noise
def _zipf_items(n, seed):
    words = np.array([f"word{i}" for i in range(50)], dtype=object)
    p = 1.0 / np.arange(1, 51) ** 1.1
    return words[np.random.default_rng(seed).choice(50, p=p / p.sum(), size=n)]


@pytest.mark.parametrize("cls", [PrefixExtendingMethod, TreeHist])
def test_report_options_filter_the_list_as_documented(cls):
    items = _zipf_items(3000, 0)
    mech = cls(epsilon=2.0, top_k=10, max_bytes=8, n_hashes=64, random_state=0)
    reports = mech.fit_transform(items)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UninformativeEstimateWarning)
        frames = {
            report: HeavyHitterEstimator(report=report).fit(reports).heavy_hitters_frame_
            for report in ("top_k", "positive", "significant")
        }
    full = frames["top_k"]
    assert len(full) == 10
    # noise at n = 3,000: some of the top 10 have estimates at or below 0
    assert (full["frequency"] <= 0).any()
    assert frames["positive"].equals(full[full["frequency"] > 0])
    assert frames["significant"].equals(full[full["lower"] > 0])
    default = HeavyHitterEstimator().fit(reports).heavy_hitters_frame_
    assert (default["frequency"] > 0).all()


def test_an_empty_significant_list_says_why():
    reports = PrefixExtendingMethod(0.5, top_k=3, max_bytes=2, random_state=0).fit_transform(
        ["ab"] * 300
    )
    with pytest.warns(UninformativeEstimateWarning, match="300 reports.*report='top_k'"):
        est = HeavyHitterEstimator(report="significant").fit(reports)
    assert est.heavy_hitters_.empty
    assert len(est.candidates_) == 3  # the estimates are still there


# ------------------------------------------------------- RAPPOR by budgets
@pytest.mark.parametrize(
    ("epsilon_perm", "epsilon_1"), [(4.0, 2.0), (2.0, 1.0), (1.0, 0.5), (6.0, 1.0)]
)
def test_bloom_rappor_budgets_hold_on_the_exact_channels(epsilon_perm, epsilon_1):
    mech = BloomRAPPOR(
        n_bits=4, n_hashes=2, n_cohorts=2, epsilon_perm=epsilon_perm, epsilon_1=epsilon_1
    ).fit()
    assert mech.epsilon_permanent_ == pytest.approx(epsilon_perm, rel=1e-10)
    assert mech.epsilon_ == pytest.approx(epsilon_1, rel=1e-9)
    universe = ["a", "b", "c", "d", "e"]  # some pair has disjoint 2-bit filters
    # one report, end to end (PRR then IRR): epsilon_1, tight
    Q = mech.channel_matrix(universe)
    assert check_ldp(Q, epsilon=epsilon_1 * (1 + 1e-9)).satisfied
    assert not check_ldp(Q, epsilon=0.99 * epsilon_1).satisfied
    # the permanent round, which every report post-processes: epsilon_perm, tight
    P = mech.channel_.permanent_channel_matrix(universe)
    assert check_ldp(P, epsilon=epsilon_perm * (1 + 1e-9)).satisfied
    assert not check_ldp(P, epsilon=0.99 * epsilon_perm).satisfied
    # and the loss of many reports of one item climbs to it
    assert mech.exposure(1) == pytest.approx(epsilon_1, rel=1e-9)
    assert mech.exposure(2000) <= epsilon_perm * (1 + 1e-9)


@settings(max_examples=60, deadline=None)
@given(
    n_hashes=st.integers(1, 8),
    f=st.floats(0.01, 0.99),
    p=st.one_of(st.just(0.0), st.floats(0.01, 0.95)),
    share=st.floats(0.01, 0.99),
)
def test_bloom_rappor_budget_map_round_trips(n_hashes, f, p, share):
    """(p, q, f) -> (eps_perm, eps_1) -> (p, q, f): eps_1 taken as a share of
    what q can reach with this p and f."""
    from sklearn_uldp.heavy_hitters._bloom import rappor_epsilon_1, rappor_epsilon_perm

    top = rappor_epsilon_1(n_hashes, p, 1.0, f)
    epsilon_perm = rappor_epsilon_perm(n_hashes, f)
    # at p = 0 a report's rare 1 carries the PRR's whole ratio: eps_1 > eps_perm / 2
    bottom = epsilon_perm / 2 if p == 0 else 0.0
    epsilon_1 = bottom + share * (top - bottom)
    mech = BloomRAPPOR(n_hashes=n_hashes, p=p, epsilon_perm=epsilon_perm, epsilon_1=epsilon_1).fit()
    pr = mech.channel_
    assert pr.f == pytest.approx(f, rel=1e-9, abs=1e-12)
    assert pr.p == p and p < pr.q <= 1
    assert mech.epsilon_ == pytest.approx(epsilon_1, rel=1e-8)
    # and back: the derived q given, p derived
    back = BloomRAPPOR(n_hashes=n_hashes, q=pr.q, f=pr.f, epsilon_1=epsilon_1).fit()
    assert back.channel_.p == pytest.approx(p, abs=1e-7)


def test_bloom_rappor_refuses_conflicting_or_unreachable_budgets():
    with pytest.raises(ValueError, match="Pass f or epsilon_perm, not both.*f=0.2 gives"):
        BloomRAPPOR(f=0.2, epsilon_perm=3.0).fit()
    with pytest.raises(ValueError, match="at most one of p and q with epsilon_1"):
        BloomRAPPOR(p=0.5, q=0.7, epsilon_1=1.0).fit()
    with pytest.raises(ValueError, match="exceeds the permanent round's epsilon_perm=4"):
        BloomRAPPOR(epsilon_perm=4.0, epsilon_1=5.0).fit()
    # the defaults' f = 0.5 bounds one report at 2.87 with p = 0.5
    with pytest.raises(ValueError, match="at most epsilon_1=2.87.*raise epsilon_perm"):
        BloomRAPPOR(epsilon_1=4.0).fit()
    with pytest.raises(ValueError, match="epsilon_perm"):
        BloomRAPPOR(epsilon_perm=-1.0).fit()
    with pytest.raises(ValueError, match="costs more than epsilon_1=2.19.*whatever q"):
        BloomRAPPOR(p=0.0, epsilon_1=1.0).fit()
    # the user of the issue: eps_1 = 2 and 4 without searching for q
    for epsilon_1, epsilon_perm in ((2.0, 4.0), (4.0, 8.0)):
        mech = BloomRAPPOR(epsilon_perm=epsilon_perm, epsilon_1=epsilon_1).fit()
        assert mech.epsilon_ == pytest.approx(epsilon_1)
    # the defaults are unchanged: google/rappor's demo parameters
    pr = BloomRAPPOR().fit().channel_
    assert (pr.p, pr.q, pr.f) == (0.5, 0.75, 0.5)


# ------------------------------------------------------------ decoder speed
@settings(max_examples=60, deadline=None)
@given(rows=st.integers(1, 40), cols=st.integers(1, 25), seed=st.integers(0, 2**16))
def test_nnls_from_the_normal_equations_matches_scipy(rows, cols, seed):
    from sklearn_uldp.heavy_hitters._bloom_decoder import nnls_gram

    rng = np.random.default_rng(seed)
    A = rng.random((max(rows, cols), cols)) * (rng.random((max(rows, cols), cols)) < 0.5)
    A[rng.integers(0, A.shape[0], cols), np.arange(cols)] = 1.0  # no zero column
    b = rng.normal(size=A.shape[0]) + A @ np.maximum(rng.normal(size=cols), 0)
    if np.linalg.matrix_rank(A) < cols:
        return  # the decoder refuses rank-deficient designs before solving
    expected = nnls(A, b)[0]
    got = nnls_gram(A.T @ A, A.T @ b)
    cond = np.linalg.cond(A)
    # both solve one strictly convex problem: equal up to the rounding of
    # the normal equations (cond(A)^2 eps)
    assert np.allclose(got, expected, rtol=1e-7, atol=1e-9 * cond**2 * max(1, np.abs(b).max()))
    assert np.all(got >= 0)


def test_sparse_design_equals_the_dense_one():
    pr = BloomRAPPOR(n_bits=32, n_hashes=3, n_cohorts=5).fit().channel_
    keys = pr.encoding.whole_keys(np.asarray([f"w{i}" for i in range(40)], dtype=object))[1]
    dense = pr.design(keys)
    assert dense.shape == (5 * 32, 40)
    assert np.array_equal(pr.design(keys, sparse=True).toarray(), dense)
    rows = np.r_[32:64, 128:160]  # cohorts 1 and 4
    assert np.array_equal(pr.design(keys, [1, 4], sparse=True).toarray(), dense[rows])
    assert (dense.sum(axis=0) <= 5 * 3).all()  # a bit hit twice is set once


def _dense_reference(dec):
    """The decoder of a8328b7, on the dense design (matrix_rank, dense lasso
    path, scipy's NNLS, pinv): the estimates the fast decoder must keep."""
    from scipy.stats import norm
    from sklearn.linear_model import lasso_path

    pr = dec.protocol_
    keys = pr.encoding.whole_keys(np.asarray(dec.candidates, dtype=object))[1]
    counts = np.asarray(dec.statistics_.counts, dtype=float).reshape(pr.n_cohorts, -1)
    N = counts[:, 0]
    keep = N > 0
    rate = counts[keep, 1:] / N[keep, None]
    gap = pr.q_star - pr.p_star
    y = ((rate - pr.p_star) / gap).ravel()
    r = np.clip(rate, 1.0 / (N[keep, None] + 1), 1 - 1.0 / (N[keep, None] + 1))
    var = (r * (1 - r) / N[keep, None] / gap**2).ravel()
    X = pr.design(keys).reshape(pr.n_cohorts, pr.n_bits, -1)[keep].reshape(y.size, -1)
    assert np.linalg.matrix_rank(X) == X.shape[1]
    w = 1.0 / np.sqrt(var)
    Xw, yw = X * w[:, None], y * w
    support = np.arange(X.shape[1])
    if dec.method == "lasso" and X.shape[1] > int(min(500, 0.8 * yw.size)):
        alpha_max = max(float(np.max(Xw.T @ yw)), 0.0) / Xw.shape[0]
        grid = np.geomspace(alpha_max, alpha_max * 1e-4, num=60)
        _, coefs, _ = lasso_path(Xw, yw, positive=True, alphas=grid)
        ok = np.flatnonzero((coefs > 0).sum(axis=0) <= int(min(500, 0.8 * yw.size)))
        support = np.flatnonzero(coefs[:, ok[-1] if ok.size else 0] > 0)
    pi = np.zeros(X.shape[1])
    pi[support] = nnls(Xw[:, support], yw, maxiter=50 * X.shape[1])[0]
    se = np.full(pi.size, np.nan)
    on = np.flatnonzero(pi > 0)
    se[on] = np.sqrt(np.diag(np.linalg.pinv(Xw[:, on].T @ Xw[:, on])))
    z = np.where(pi > 0, pi / np.where(pi > 0, se, 1.0), 0.0)
    return pi, se, np.where(pi > 0, norm.sf(z), 1.0)


@pytest.mark.parametrize("method", ["lasso", "nnls"])
def test_fast_decoder_keeps_the_dense_decoders_output(method):
    """450 candidates against 16 x 32 = 512 rows: the LASSO's cap (0.8 x 512
    = 409) makes it select. The sparse/normal-equation decoder gives the
    dense decoder's estimates to rounding (1e-9 relative: both solve one
    strictly convex problem; the normal equations square the design's
    condition number, about 10 here) and the same detections."""
    rng = np.random.default_rng(0)
    held = [f"item{i}" for i in range(30)]
    p = 1.0 / np.arange(1, 31)
    X = np.asarray(held, dtype=object)[rng.choice(30, p=p / p.sum(), size=60_000)]
    mech = BloomRAPPOR(n_bits=32, n_cohorts=16, random_state=0).fit()
    reports = mech.transform(X)
    candidates = held + [f"nobody{i}" for i in range(420)]
    dec = BloomRAPPORDecoder(candidates, method=method).fit(reports)
    pi, se, p_value = _dense_reference(dec)
    est = dec.estimates_
    assert np.array_equal(est["proportion"].to_numpy() > 0, pi > 0)
    assert np.allclose(est["proportion"], pi, rtol=1e-9, atol=1e-12)
    on = pi > 0
    assert np.allclose(est["std_error"].to_numpy()[on], se[on], rtol=1e-9)
    assert np.allclose(est["p_value"], p_value, rtol=1e-7, atol=1e-12)
    assert est["detected"].sum() >= 5
