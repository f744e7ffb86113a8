"""Many attributes per user: split, sample (SMP) and sample+fake (RS+FD).

The privacy of a whole row is checked on its exact channel (enumerated for
d = 2 or 3 columns of a few categories), the samplers against that channel
(chi-square on whole rows), the estimators against brute force and against
the closed-form variances of Arcolezi et al. (CIKM 2021).
"""

import itertools
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.stats import chi2

from sklearn_uldp import (
    RAPPOR,
    EMEstimator,
    EmpiricalEstimator,
    RandomizedResponse,
    ThresholdEstimator,
    UtilityOptimizedOUE,
    UtilityOptimizedRAPPOR,
    UtilityOptimizedRR,
)
from sklearn_uldp.compose import DataFramePrivatizer, check_row_privacy, row_channel
from sklearn_uldp.exceptions import InvalidSpecError, PrivacyLeakWarning, ReportMismatchError
from sklearn_uldp.mechanisms import (
    BlockHadamardResponse,
    Channel,
    RandomizedResponseChannel,
    RAPPORChannel,
    SampledChannel,
    SampledFakeChannel,
    UnaryEncodingChannel,
    UtilityOptimizedRRChannel,
    amplified_epsilon,
    supported_fakes,
)
from sklearn_uldp.mechanisms._attribute_sampling import sample_fakes
from sklearn_uldp.privacy import audit_mechanism, check_uldp

K3 = [0, 1, 2]


def _oue(eps, cats):
    return RAPPOR(eps, theta=0.5, categories=cats)


def _cases():
    """name -> mechanisms of a small table (2 or 3 columns)."""
    return {
        "rr-same": {
            "a": RandomizedResponse(1.0, categories=K3),
            "b": RandomizedResponse(1.0, categories=K3),
        },
        "rr-mixed-k": {
            "a": RandomizedResponse(1.0, categories=K3),
            "b": RandomizedResponse(1.0, categories=[0, 1]),
        },
        "urr-mixed-eps": {
            "a": UtilityOptimizedRR(1.0, sensitive=[2], categories=K3),
            "b": UtilityOptimizedRR(0.5, sensitive=[0], categories=[0, 1]),
        },
        "oue": {"a": _oue(1.0, K3), "b": _oue(1.0, K3)},
        "urap-urr": {
            "a": UtilityOptimizedRAPPOR(1.0, sensitive=[0], categories=K3),
            "b": UtilityOptimizedRR(1.0, sensitive=[0], categories=[0, 1]),
        },
        "three-columns": {
            "a": UtilityOptimizedRR(1.0, sensitive=[1, 2], categories=K3),
            "b": _oue(2.0, [0, 1]),
            "c": RandomizedResponse(1.0, categories=K3),
        },
    }


def _table(mechanisms, n=6):
    rng = np.random.default_rng(0)
    return pd.DataFrame(
        {c: rng.choice(np.asarray(m.categories), size=n) for c, m in mechanisms.items()}
    )


def _fit(mechanisms, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        return DataFramePrivatizer(mechanisms, **params).fit(_table(mechanisms))


# ------------------------------------------------ privacy on the row channel
STRATEGY_PARAMS = [
    {"strategy": "split"},
    {"strategy": "sample"},
    {"strategy": "sample+fake"},
    {"strategy": "sample+fake", "fake": "random"},
    {"strategy": "sample+fake", "amplification": "paper"},
]


# Pinned floats (tests/README.md): tolerances that hold on any processor.
# Row channels (products of a few probabilities): 1e-12; worst log-ratios
# and likelihood offsets (searches and sums through exp and log): 1e-9;
# variances against Arcolezi et al.'s closed forms (sums over outputs): 1e-10.
@pytest.mark.pinned
@pytest.mark.parametrize("case", list(_cases()))
@pytest.mark.parametrize("params", STRATEGY_PARAMS, ids=lambda p: "-".join(p.values()))
def test_row_channel_meets_the_claimed_budgets_exactly(case, params):
    """Enumerate the row channel: the row and every attribute meet their
    claimed budgets, and the claims are attained (they are the exact
    privacy, not bounds)."""
    priv = _fit(_cases()[case], **params)
    result = check_row_privacy(priv)
    assert result.satisfied, (
        result.row.reasons,
        {k: v.reasons for k, v in result.attributes.items()},
    )
    assert result.row.worst_log_ratio == pytest.approx(priv.epsilon_spent_, rel=1e-9)
    for name, check in result.attributes.items():
        assert check.worst_log_ratio == pytest.approx(priv.attribute_epsilons_[name], rel=1e-9)
    if params.get("amplification") != "paper":
        # every attribute within its mechanism's epsilon
        for name, mech in _cases()[case].items():
            assert priv.attribute_epsilons_[name] <= mech.epsilon * (1 + 1e-9)


def _rsfd_matrix(Qs, Fs):
    """RS+FD's row channel written out from its definition."""
    d = len(Qs)
    rows = []
    for x in itertools.product(*[range(Q.shape[0]) for Q in Qs]):
        row = []
        for y in itertools.product(*[range(Q.shape[1]) for Q in Qs]):
            total = 0.0
            for j in range(d):  # attribute j sampled, the others fake
                term = Qs[j][x[j], y[j]]
                for m in range(d):
                    if m != j:
                        term *= Fs[m][y[m]]
                total += term
            row.append(total / d)
        rows.append(row)
    return np.array(rows)


@pytest.mark.pinned
def test_row_channel_is_the_definition_of_rsfd():
    priv = _fit(_cases()["urap-urr"], strategy="sample+fake")
    mechs = list(priv.mechanisms_.values())
    urap, urr = (m.channel_ for m in mechs)
    Q_a, Q_b = urap.matrix(), urr.matrix()
    # zero fakes of uRAP: sensitive bit Bernoulli(d1), non-sensitive bits 0
    Y = urap.output_labels().astype(bool)
    F_a = np.prod(
        np.where(
            Y,
            np.where(urap.sensitive_mask, urap.d1, 0.0),
            1 - np.where(urap.sensitive_mask, urap.d1, 0.0),
        ),
        axis=1,
    )
    F_b = np.where(urr.sensitive_mask, 1.0, 0.0) / urr.sensitive_mask.sum()
    expected = _rsfd_matrix([Q_a, Q_b], [F_a, F_b])
    np.testing.assert_allclose(row_channel(priv, realized=False).matrix, expected, rtol=1e-10)


def test_paper_amplification_breaks_the_promise_where_exact_keeps_it():
    """Arcolezi et al.'s epsilon' = ln(d(e^eps - 1) + 1) is the exact budget
    for identical k-RR columns, but not for columns of different domains
    nor for OUE with random fakes: the row channel shows the excess."""
    same = _fit(_cases()["rr-same"], strategy="sample+fake", amplification="paper")
    assert all(v == pytest.approx(1.0) for v in same.attribute_epsilons_.values())
    inner = same.mechanisms_["a"].channel_.epsilon
    assert inner == pytest.approx(amplified_epsilon(1.0, 2))
    assert same.epsilon_spent_ == pytest.approx(inner)  # the row spends eps', not eps
    for case, fake in (("rr-mixed-k", "auto"), ("oue", "random")):
        with pytest.warns(PrivacyLeakWarning, match="larger budget"):
            paper = DataFramePrivatizer(
                _cases()[case], strategy="sample+fake", fake=fake, amplification="paper"
            ).fit(_table(_cases()[case]))
        worst = max(check_row_privacy(paper).attributes.values(), key=lambda c: c.worst_log_ratio)
        assert worst.worst_log_ratio > 1.07  # promised: 1.0
        exact = _fit(_cases()[case], strategy="sample+fake", fake=fake)
        for check in check_row_privacy(exact).attributes.values():
            assert check.worst_log_ratio == pytest.approx(1.0, rel=1e-6)


def test_fakes_of_utility_optimized_columns_are_protected_outputs():
    rng = np.random.default_rng(0)
    urr = UtilityOptimizedRRChannel(["a", "b", "c", "d"], 1.0, [False, True, True, False])
    fakes = sample_fakes(urr, "random", 20_000, rng)
    assert set(np.unique(fakes)) == {1, 2}  # the sensitive values only, both
    urap = UnaryEncodingChannel(list(range(5)), 1.0, 0.5, [True, True, False, False, True])
    for kind in ("random", "zero"):
        bits = sample_fakes(urap, kind, 20_000, rng)
        assert not bits[:, ~urap.sensitive_mask].any()  # no non-sensitive bit set
        # every protected pattern of the 3 sensitive bits occurs
        assert np.unique(bits[:, urap.sensitive_mask], axis=0).shape[0] == 8


def test_fakes_that_claim_non_sensitive_values_would_break_uldp():
    """The derivation's point: a fake drawn over *all* of uRR's outputs (a
    non-sensitive value among them) makes a non-sensitive report ambiguous
    (it no longer reveals the true value, so the estimate of that value is
    biased) and hides a sensitive input behind an 'invertible' output:
    the attribute's channel is no longer ULDP. Fakes restricted to X_S are."""
    urr = UtilityOptimizedRRChannel([0, 1, 2], amplified_epsilon(1.0, 2), [False, False, True])
    rr = RandomizedResponseChannel([0, 1], amplified_epsilon(1.0, 2))
    Q_a, Q_b = urr.matrix(), rr.matrix()
    F_b = np.full(2, 0.5)
    for F_a, ok in ((np.array([0.0, 0.0, 1.0]), True), (np.full(3, 1 / 3), False)):
        M = _rsfd_matrix([Q_a, Q_b], [F_a, F_b])
        # attribute a, b fixed to 0: rows (x_a, 0); outputs with a's report
        # non-sensitive are declared unprotected
        sub = M[[0, 2, 4]]
        protected = np.array([y_a == 2 for y_a in (0, 0, 1, 1, 2, 2)])
        assert (
            bool(check_uldp(sub, sensitive=[False, False, True], epsilon=1.0, protected=protected))
            is ok
        )


@pytest.mark.parametrize(
    "mechanisms, x, strategy",
    [
        (
            {"a": UtilityOptimizedRR(1.0, sensitive=[2], categories=K3), "b": _oue(1.0, [0, 1])},
            (2, 1),
            "sample",
        ),
        (
            {
                "a": UtilityOptimizedRR(1.0, sensitive=[2], categories=K3),
                "b": RandomizedResponse(1.0, categories=[0, 1]),
            },
            (0, 1),
            "sample+fake",
        ),
        (
            {
                "a": UtilityOptimizedRR(1.0, sensitive=[2], categories=K3),
                "b": RandomizedResponse(1.0, categories=[0, 1]),
            },
            (2, 0),
            "sample+fake",
        ),
        (
            {
                "a": UtilityOptimizedRAPPOR(1.0, sensitive=[1], categories=K3),
                "b": _oue(1.0, [0, 1]),
            },
            (0, 1),
            "sample+fake",
        ),
        (
            {
                "a": UtilityOptimizedRAPPOR(1.0, sensitive=[1], categories=K3),
                "b": _oue(1.0, [0, 1]),
            },
            (1, 0),
            "sample+fake",
        ),
    ],
    ids=[
        "smp-urr-oue",
        "rsfd-urr-rr-nonsens",
        "rsfd-urr-rr-sens",
        "rsfd-urap-oue-nonsens",
        "rsfd-urap-oue-sens",
    ],
)
def test_sampler_follows_the_row_channel(mechanisms, x, strategy):
    """Whole rows of reports against the exact row channel (chi-square).

    Mutations that this test catches (checked once by hand): fakes drawn
    over every value of uRR, zero fakes without redrawing the own bit, the
    inner budget left at epsilon, a sampled index drawn from 0..d-2."""
    priv = _fit(mechanisms, strategy=strategy, random_state=1)
    rc = row_channel(priv)
    n = 40_000
    frame = pd.DataFrame({c: [v] * n for c, v in zip(mechanisms, x, strict=True)})
    reports = priv.transform(frame)
    keys = _row_keys(priv, reports)
    index = {out: j for j, out in enumerate(rc.outputs)}
    observed = np.bincount([index[k] for k in keys], minlength=len(rc.outputs))
    row = rc.inputs.index(tuple(x))
    expected = n * rc.matrix[row]
    assert observed[expected == 0].sum() == 0
    live = expected > 0
    stat = float(np.sum((observed[live] - expected[live]) ** 2 / expected[live]))
    assert chi2.sf(stat, live.sum() - 1) > 1e-6, (stat, live.sum())


def _row_keys(priv, reports):
    """Each report row as the row channel labels its output."""
    names = list(priv.mechanisms_)
    parts = []
    for name in names:
        block = reports[priv.report_columns(name)]
        if block.shape[1] > 1:
            bits = block.to_numpy(dtype=float, na_value=np.nan)
            parts.append(
                [None if np.isnan(r).all() else tuple(np.flatnonzero(r).tolist()) for r in bits]
            )
        else:
            parts.append([None if pd.isna(v) else v for v in block.iloc[:, 0].tolist()])
    if "sampled_attribute" in reports:
        j = [names.index(s) for s in reports["sampled_attribute"]]
        return [(jj, parts[jj][i]) for i, jj in enumerate(j)]
    return list(zip(*parts, strict=True))


def test_whole_row_audit_finds_the_row_budget():
    """audit_mechanism on the privatizer itself (rows in, rows of reports
    out): rows differing in one attribute stay within the attribute's
    epsilon; rows differing in every attribute exceed it (the row spends
    epsilon' = ln(d (e^eps - 1) + 1)) and stay within epsilon_spent_."""
    mechs = {c: RandomizedResponse(1.0, categories=[0, 1]) for c in "ab"}
    priv = _fit(mechs, strategy="sample+fake", random_state=0)
    one = audit_mechanism(
        priv,
        pairs=[({"a": 0, "b": 0}, {"a": 1, "b": 0})],
        epsilon=1.0,
        n_samples=20_000,
        random_state=0,
    )
    assert one.passed
    both = [({"a": 0, "b": 0}, {"a": 1, "b": 1})]
    assert not audit_mechanism(
        priv, pairs=both, epsilon=1.0, n_samples=20_000, random_state=0
    ).passed
    assert audit_mechanism(
        priv, pairs=both, epsilon=priv.epsilon_spent_, n_samples=20_000, random_state=0
    ).passed
    # SMP: the sampled index says nothing, one report of epsilon per row
    smp = _fit(mechs, strategy="sample", random_state=0)
    assert audit_mechanism(smp, pairs=both, epsilon=1.0, n_samples=20_000, random_state=0).passed


# ------------------------------------------------------------ the channels
def _brute_em(channel, y_index, p):
    Q = channel.matrix()
    m = p @ Q
    g = (Q[:, y_index] / m[y_index]).mean(axis=1)
    return g, float(np.log(m[y_index]).sum())


@pytest.mark.pinned
@pytest.mark.parametrize(
    "channel",
    [
        SampledFakeChannel(
            K3, UtilityOptimizedRRChannel(K3, 1.5, [True, False, True]), 3, "random"
        ),
        SampledFakeChannel(K3, UnaryEncodingChannel(K3, 1.5, 0.5, [True, False, True]), 3, "zero"),
        SampledFakeChannel(
            K3, UnaryEncodingChannel(K3, 1.5, 0.3, [True, False, True]), 2, "random"
        ),
        SampledFakeChannel(K3, RAPPORChannel(K3, 1.5, 0.5), 4, "zero"),
    ],
    ids=["urr-random", "urap-zero", "urap-random", "oue-zero"],
)
def test_fake_channel_estimation_contract(channel):
    rng = np.random.default_rng(0)
    p = np.array([0.5, 0.3, 0.2])
    codes = rng.choice(3, p=p, size=3000)
    reports = channel.sample(codes, rng)
    enc = channel.encode_reports(reports)
    stats = channel.statistics(enc, keep_reports=True)
    # sampler vs matrix (chi-square over the outputs)
    if reports.ndim == 2:
        y_index = (reports.astype(np.int64) << np.arange(3)).sum(axis=1)
    else:
        y_index = np.asarray(enc)
    expected = 3000 * (p @ channel.matrix())
    observed = np.bincount(y_index, minlength=expected.size)
    live = expected > 0
    assert observed[~live].sum() == 0
    stat = np.sum((observed[live] - expected[live]) ** 2 / expected[live])
    assert chi2.sf(stat, live.sum() - 1) > 1e-6
    # EM gradient and log-likelihood against the matrix
    for q in (p, np.array([0.2, 0.2, 0.6])):
        g, ll = channel.em_gradient(stats, q)
        g0, ll0 = _brute_em(channel, y_index, q)
        np.testing.assert_allclose(g, g0, rtol=1e-10)
        if q is p:
            offset = ll - ll0  # report-only factors may be dropped
        else:
            assert ll - ll0 == pytest.approx(offset, rel=1e-9)
    # the linear estimator is unbiased: a * m(p) + b = p
    np.testing.assert_allclose(
        channel.coef_a * channel.expected_frequency(p) + channel.coef_b, p, atol=1e-12
    )
    # ... and its statistic has the matrix's mean
    if reports.ndim == 1:
        np.testing.assert_allclose(channel.expected_frequency(p), p @ channel.matrix(), atol=1e-12)
    # posteriors
    L = channel.likelihood(enc[:50])
    np.testing.assert_allclose(
        L / L.sum(axis=1, keepdims=True),
        (channel.matrix()[:, y_index[:50]] / channel.matrix()[:, y_index[:50]].sum(axis=0)).T,
        rtol=1e-9,
    )


@pytest.mark.pinned
@pytest.mark.parametrize("mechanism", ["GRR", "OUE-z", "OUE-r"])
@pytest.mark.parametrize("d", [3, 6])
def test_variance_is_the_closed_form_of_arcolezi_et_al(mechanism, d):
    """The MSE of the unbiased estimate, over 400 simulated uploads of n =
    2,000 users, against a'^2 m'(1 - m') / n (the channel's
    estimator_variance) and against multi-freq-ldpy's Variance_RSpFD
    formulas; a wrong mixture weight (1/(d+1)) fails."""
    k, n, reps, eps = 4, 2000, 400, 1.0
    eps_prime = amplified_epsilon(eps, d)
    if mechanism == "GRR":
        base, fake = RandomizedResponseChannel(list(range(k)), eps_prime), "random"
    else:
        base = RAPPORChannel(list(range(k)), eps_prime, 0.5)
        fake = {"OUE-z": "zero", "OUE-r": "random"}[mechanism]
    channel = SampledFakeChannel(list(range(k)), base, d, fake)
    rng = np.random.default_rng(d)
    p = np.array([0.4, 0.3, 0.2, 0.1])
    codes = rng.choice(k, p=p, size=n * reps)
    reports = channel.sample(codes, rng)
    est = []
    for chunk in np.split(np.asarray(channel.encode_reports(reports)), reps):
        est.append(channel.unbiased_estimate(channel.statistics(chunk)))
    est = np.array(est)
    mse = ((est - p) ** 2).sum(axis=1)
    predicted = channel.estimator_variance(p, n).sum()
    assert abs(mse.mean() - predicted) < 5 * mse.std(ddof=1) / np.sqrt(reps)
    np.testing.assert_allclose(
        est.mean(axis=0), p, atol=5 * np.sqrt(channel.estimator_variance(p, n) / reps).max()
    )
    # Arcolezi et al.'s formulas (multi-freq-ldpy), f = each category's p
    mfl = pytest.importorskip("multi_freq_ldpy.mdim_freq_est.Variance_RSpFD")
    E = np.exp(eps_prime)
    if mechanism == "GRR":
        pp, qq = E / (E + k - 1), 1 / (E + k - 1)
        theirs = [mfl.VAR_RSpFD_GRR(pp, qq, k, d, n, f) for f in p]
    elif mechanism == "OUE-z":
        theirs = [mfl.VAR_RSpFD_UE_zero(0.5, 1 / (E + 1), d, n, f) for f in p]
    else:
        theirs = [mfl.VAR_RSpFD_UE_rnd(0.5, 1 / (E + 1), k, d, n, f) for f in p]
    np.testing.assert_allclose(channel.estimator_variance(p, n), theirs, rtol=1e-10)


def test_smp_channel_conditions_on_the_sampled_users():
    rng = np.random.default_rng(0)
    base = UtilityOptimizedRRChannel(["a", "b", "c"], 1.0, [True, False, False])
    channel = SampledChannel(["a", "b", "c"], base, 4)
    values = base.decode(base.sample(rng.choice(3, p=[0.2, 0.5, 0.3], size=4000), rng)).astype(
        object
    )
    values[rng.random(4000) < 0.75] = None
    for estimator in (EmpiricalEstimator(), ThresholdEstimator(), EMEstimator()):
        est = estimator.set_params(mechanism=channel).fit(values)
        assert est.n_reports_ == int(pd.notna(values).sum())
        direct = type(estimator)(**{**estimator.get_params(deep=False), "mechanism": base}).fit(
            values[pd.notna(values)]
        )
        np.testing.assert_allclose(est.distribution_, direct.distribution_)
    assert est.confidence_intervals().shape == (3, 2)
    marginal = channel.marginal_matrix()
    np.testing.assert_allclose(marginal[:, -1], 0.75)
    np.testing.assert_allclose(marginal[:, :-1] * 4, base.matrix())
    with pytest.raises(ReportMismatchError, match="some missing entries"):
        SampledChannel([0, 1], RAPPORChannel([0, 1], 1.0, 0.5), 2).encode_reports(
            np.array([[1.0, np.nan], [0.0, 1.0]])
        )


def test_channel_specs_round_trip_and_are_validated():
    base = UnaryEncodingChannel(K3, 1.2, 0.5, [True, False, True])
    for channel in (SampledChannel(K3, base, 3), SampledFakeChannel(K3, base, 3, "zero")):
        spec = channel.to_dict()
        assert Channel.from_dict(spec) == channel
        assert hash(Channel.from_dict(spec)) == hash(channel)
        assert channel != SampledChannel(K3, RAPPORChannel(K3, 1.2, 0.5), 3)
    spec = SampledFakeChannel(K3, base, 3, "zero").to_dict()
    for field, value, match in [
        ("n_attributes", 1, "n_attributes must be an integer >= 2"),
        ("fake", "uniform", "fake must be one of"),
        ("base", {"mechanism": "rr", "categories": [0, 1], "epsilon": 1.0}, "categories .* differ"),
        ("base", spec, "not another sampled channel"),
    ]:
        with pytest.raises(InvalidSpecError, match=match):
            Channel.from_dict({**spec, field: value})
    with pytest.raises(InvalidSpecError, match="'zero' .* unary encoding"):
        Channel.from_dict({**spec, "base": RandomizedResponseChannel(K3, 1.0).to_dict()})
    assert supported_fakes(RandomizedResponseChannel(K3, 1.0)) == ("random",)


# ------------------------------------------------------------ the privatizer
def _survey(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "vote": rng.choice(["a", "b", "none"], p=[0.4, 0.4, 0.2], size=n),
            "income": rng.choice(5, p=[0.1, 0.2, 0.3, 0.3, 0.1], size=n),
            "sex": rng.choice(["f", "m"], size=n),
        }
    )


def _mechs(eps=1.0):
    return {
        "vote": UtilityOptimizedRR(eps, sensitive=["a", "b"], categories=["a", "b", "none"]),
        "income": UtilityOptimizedOUE(eps, sensitive=[0], categories=list(range(5))),
        "sex": RandomizedResponse(eps, categories=["f", "m"]),
    }


@pytest.mark.parametrize("strategy", ["sample", "sample+fake"])
def test_estimates_every_column_with_every_estimator(strategy):
    df = _survey(30_000)
    priv = DataFramePrivatizer(_mechs(2.0), strategy=strategy, random_state=0)
    reports = priv.fit_transform(df)
    truth = {c: df[c].value_counts(normalize=True) for c in df}
    for estimator in (None, ThresholdEstimator(), EMEstimator()):
        for name, dist in priv.estimate(reports, estimator).items():
            expected = truth[name].reindex(dist.index).fillna(0).to_numpy()
            assert np.abs(dist.to_numpy() - expected).max() < 0.05, (name, estimator)
    est = EmpiricalEstimator().fit(priv.column_reports(reports, "income"))
    if strategy == "sample":
        assert list(reports.columns)[-1] == "sampled_attribute"
        assert set(reports["sampled_attribute"]) == set(df.columns)
        # one report per row, the others missing
        present = [reports[priv.report_columns(c)].notna().all(axis=1) for c in df]
        assert (np.sum(present, axis=0) == 1).all()
        assert est.n_reports_ == int((reports["sampled_attribute"] == "income").sum())
    else:
        assert reports.notna().all().all() and "sampled_attribute" not in reports
        assert est.n_reports_ == len(df)
        # a fake never shows a non-sensitive value: the non-sensitive
        # reports of "vote" are real ones, so about a third of the users
        # with a non-sensitive vote
        shown = (reports["vote"] == "none").mean()
        inner = priv.mechanisms_["vote"].channel_
        assert shown == pytest.approx(0.2 * inner.c3 / 3, abs=0.006)
    est.confidence_intervals()


def test_budgets_of_each_strategy():
    df = _survey(50)
    split = DataFramePrivatizer(_mechs(), random_state=0).fit(df)
    assert split.epsilon_spent_ == pytest.approx(3.0)
    smp = DataFramePrivatizer(_mechs(), strategy="sample").fit(df)
    assert smp.epsilon_spent_ == pytest.approx(1.0)
    assert smp.attribute_epsilons_ == pytest.approx({"vote": 1.0, "income": 1.0, "sex": 1.0})
    rsfd = DataFramePrivatizer(_mechs(), strategy="sample+fake").fit(df)
    assert rsfd.attribute_epsilons_ == pytest.approx({"vote": 1.0, "income": 1.0, "sex": 1.0})
    # fake="auto": the smaller closed-form variance, zero vectors for OUE
    assert {c: ch.fake for c, ch in rsfd.channels_.items()} == {
        "vote": "random",
        "income": "zero",
        "sex": "random",
    }
    inner = max(m.channel_.epsilon for m in rsfd.mechanisms_.values())
    assert 1.0 < rsfd.epsilon_spent_ <= inner
    # nested parameters still reach the mechanisms (the attribute budgets)
    rsfd.set_params(sex__epsilon=0.5).fit(df)
    assert rsfd.attribute_epsilons_["sex"] == pytest.approx(0.5)
    assert rsfd.get_params()["sex__epsilon"] == 0.5


def test_spec_file_describes_the_strategy(tmp_path):
    from sklearn_uldp.compose import load_spec

    df = _survey(500)
    for strategy in ("sample", "sample+fake"):
        priv = DataFramePrivatizer(_mechs(), strategy=strategy, random_state=0)
        reports = priv.fit_transform(df)
        path = priv.save_spec(tmp_path / f"{strategy}.json")
        channels = load_spec(path)
        assert channels == priv.channels_
        # a collector with the file alone estimates every column
        for name, channel in channels.items():
            block = reports[priv.report_columns(name)]
            est = EmpiricalEstimator(mechanism=channel).fit(block.to_numpy(dtype=object))
            assert est.distribution_.shape == (len(channel.categories),)
        import json

        document = json.loads(path.read_text())
        assert document["strategy"]["name"] == strategy
        assert document["epsilon_per_person"] == pytest.approx(priv.epsilon_spent_)


def test_randomness_fresh_seeded_and_independent_of_the_data():
    df = _survey(4000)
    fresh = DataFramePrivatizer(_mechs(), strategy="sample").fit(df)
    a, b = fresh.transform(df), fresh.transform(df)
    assert not a["sampled_attribute"].equals(b["sampled_attribute"])
    assert not any("seed" in key or "rng" in key for key in vars(fresh))
    seeded = DataFramePrivatizer(_mechs(), strategy="sample+fake", random_state=3)
    first = seeded.fit_transform(df)
    assert first.equals(
        DataFramePrivatizer(_mechs(), strategy="sample+fake", random_state=3).fit_transform(df)
    )
    assert not first.equals(seeded.transform(df))  # a new call, new noise
    # the sampled index does not depend on the values: uniform whatever the row
    same = pd.DataFrame({c: [df[c].iloc[0]] * 30_000 for c in df})
    counts = fresh.transform(same)["sampled_attribute"].value_counts().to_numpy()
    assert chi2.sf(np.sum((counts - 10_000) ** 2 / 10_000), 2) > 1e-6


def test_numpy_output_and_array_input():
    df = _survey(200)
    priv = DataFramePrivatizer(_mechs(), strategy="sample", random_state=0).set_output(
        transform="default"
    )
    out = priv.fit_transform(df)
    assert isinstance(out, np.ndarray) and out.shape == (200, 1 + 5 + 1 + 1)
    assert set(out[:, -1]) <= {"vote", "income", "sex"}
    dists = priv.estimate(out)
    assert set(dists) == {"vote", "income", "sex"}
    arr = DataFramePrivatizer(
        [(f"x{j}", RandomizedResponse(1.0, categories=[0, 1]), [j]) for j in range(3)],
        strategy="sample+fake",
        random_state=0,
    ).fit(np.zeros((5, 3), dtype=int))
    assert arr.transform(np.ones((4, 3), dtype=int)).shape == (4, 3)


def test_dask_partitions_get_their_own_sampling_streams():
    dd = pytest.importorskip("dask.dataframe")
    df = _survey(2000)
    ddf = dd.from_pandas(df, npartitions=3)
    for strategy in ("sample", "sample+fake"):
        priv = DataFramePrivatizer(_mechs(), strategy=strategy, random_state=0)
        out = priv.fit(df).transform(ddf).compute()
        assert list(out.columns) == list(priv.get_feature_names_out())
        assert out.equals(priv.transform(ddf).compute())  # seeded: reproducible
        dists = priv.estimate(out)
        assert set(dists) == set(df.columns)
        if strategy == "sample":
            firsts = [
                part["sampled_attribute"].iloc[:50].tolist()
                for _, part in out.groupby(np.arange(len(out)) // 667)
            ]
            assert firsts[0] != firsts[1]  # partitions do not repeat one stream


def test_joint_questions_are_not_identifiable_under_sampling():
    """Under SMP and RS+FD the law of the reports depends on the rows'
    distribution only through its marginals: two joint distributions with
    the same marginals give the same reports, so no estimator can tell
    them apart (JointEncoder privatizes the tuple for joint questions)."""
    mechs = {
        "a": RandomizedResponse(1.0, categories=[0, 1]),
        "b": RandomizedResponse(1.0, categories=[0, 1]),
    }
    independent = np.array([0.25, 0.25, 0.25, 0.25])  # rows (0,0), (0,1), (1,0), (1,1)
    correlated = np.array([0.5, 0.0, 0.0, 0.5])  # same marginals
    for strategy in ("sample", "sample+fake", "split"):
        rc = row_channel(_fit(mechs, strategy=strategy))
        same = np.allclose(independent @ rc.matrix, correlated @ rc.matrix)
        assert same is (strategy != "split")


# --------------------------------------------------------------- bad input
def test_clear_errors():
    df = _survey(50)
    with pytest.raises(ValueError, match="only 1 column is privatized"):
        DataFramePrivatizer(
            {"sex": RandomizedResponse(1.0, categories=["f", "m"])}, strategy="sample"
        ).fit(df)
    with pytest.raises(
        ValueError, match="fake='zero' is not available for column 'vote' .UtilityOptimizedRR"
    ):
        DataFramePrivatizer(_mechs(), strategy="sample+fake", fake="zero").fit(df)
    with pytest.raises(ValueError, match="fake names columns \\['job'\\]"):
        DataFramePrivatizer(_mechs(), strategy="sample+fake", fake={"job": "zero"}).fit(df)
    blocks = BlockHadamardResponse(
        1.0, blocks=[["a", "b"], ["none"]], categories=["a", "b", "none"]
    )
    with pytest.raises(ValueError, match="sensitive set is of another type"):
        DataFramePrivatizer({**_mechs(), "vote": blocks}, strategy="sample").fit(df)
    with pytest.raises(ValueError, match="sampled_column='sex' is also the name"):
        DataFramePrivatizer(_mechs(), strategy="sample", sampled_column="sex").fit(df)
    nan_domain = {**_mechs(), "sex": RandomizedResponse(1.0, categories=["f", "m", None])}
    with pytest.raises(ValueError, match="Column 'sex': .* missing-value"):
        DataFramePrivatizer(nan_domain, strategy="sample").fit(df)
    priv = DataFramePrivatizer(_mechs(), strategy="sample").fit(df)
    bad = df.copy()
    bad.loc[0, "sex"] = "x"  # whichever column row 0 samples
    with pytest.raises(ValueError, match="1 value \\(text\\) of unknown categories"):
        priv.transform(bad)
    with pytest.raises(ValueError, match="fitted with strategy='sample'"):
        priv.set_params(strategy="split").transform(df)
    with pytest.raises(ValueError, match="strategy"):
        DataFramePrivatizer(_mechs(), strategy="smp").fit(df)


# ------------------------------------------------------------ the advice
def test_choose_strategy_compares_at_equal_guarantees():
    from sklearn_uldp.model_selection import choose_strategy

    cols = {"a": 3, "b": ["x", "y"], "c": 12}
    for eps in (0.5, 2.0, 6.0):
        _, table = choose_strategy(cols, eps, sensitive={"c": [0, 1]}, n=10_000)
        mean = table.groupby(level=0)["mean_loss"].first()
        # RS+FD's reports are a post-processing of SMP's at its inner
        # budget: at an equal row budget it never wins
        assert mean["sample"] <= mean["sample+fake"]
        assert table.loc["split", "a"]["epsilon"] == pytest.approx(eps / 3)
    row = amplified_epsilon(1.0, 3)
    priv, table = choose_strategy(cols, row, attribute_epsilon=1.0, n=10_000)
    assert priv.strategy == "sample+fake"
    assert table.loc["sample+fake", "a"]["epsilon"] == pytest.approx(row)
    df = pd.DataFrame({"a": [0, 1, 2, 0], "b": ["x", "y", "x", "y"], "c": [0, 5, 11, 3]})
    fitted = priv.fit(df)
    assert fitted.epsilon_spent_ <= row * (1 + 1e-6)
    assert max(fitted.attribute_epsilons_.values()) <= 1.0 + 1e-6
    with pytest.raises(ValueError, match="not in columns"):
        choose_strategy(cols, 1.0, sensitive={"z": [0]})
    with pytest.raises(ValueError, match="non-empty dict"):
        choose_strategy([3, 2], 1.0)


def test_command_line_strategy_flag_and_config(tmp_path, capsys):
    import json

    from sklearn_uldp.cli import main

    df = _survey(3000)
    df.to_csv(tmp_path / "d.csv", index=False)
    config = {
        "strategy": "sample+fake",
        "random_state": 0,
        "columns": {
            "vote": {
                "mechanism": "urr",
                "epsilon": 1.0,
                "categories": ["a", "b", "none"],
                "sensitive": ["a", "b"],
            },
            "income": {
                "mechanism": "uoue",
                "epsilon": 1.0,
                "categories": ["0..4"],
                "sensitive": [0],
            },
        },
    }
    (tmp_path / "c.json").write_text(json.dumps(config))
    for i, options in enumerate(
        (
            ["--config", tmp_path / "c.json"],
            ["--config", tmp_path / "c.json", "--strategy", "sample"],
        )
    ):
        rep, dist = tmp_path / f"r{i}.csv", tmp_path / f"dist{i}.csv"
        assert main([str(a) for a in ["privatize", tmp_path / "d.csv", "-o", rep, *options]]) == 0
        spec = json.loads((tmp_path / f"r{i}.csv.spec.json").read_text())
        assert spec["strategy"]["name"] == ("sample+fake" if i == 0 else "sample")
        assert (
            main(
                [
                    "estimate",
                    str(rep),
                    "--spec",
                    f"{rep}.spec.json",
                    "-o",
                    str(dist),
                    "--no-progress",
                ]
            )
            == 0
        )
        est = pd.read_csv(dist).set_index(["column", "category"])["estimate"]
        assert est[("vote", "none")] == pytest.approx((df["vote"] == "none").mean(), abs=0.06)
    capsys.readouterr()


# ---------------------------------------------------- random small tables
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@st.composite
def _small_tables(draw):
    d = draw(st.integers(2, 3))
    mechanisms = {}
    for j in range(d):
        k = draw(st.integers(2, 3))
        cats = list(range(k))
        eps = draw(st.sampled_from([0.3, 1.0, 2.5]))
        kind = draw(st.sampled_from(["rr", "urr", "oue", "urap"]))
        sens = sorted(draw(st.sets(st.sampled_from(cats), min_size=1, max_size=k)))
        if kind == "rr":
            mechanisms[f"c{j}"] = RandomizedResponse(eps, categories=cats)
        elif kind == "urr":
            mechanisms[f"c{j}"] = UtilityOptimizedRR(eps, sensitive=sens, categories=cats)
        elif kind == "oue":
            mechanisms[f"c{j}"] = _oue(eps, cats)
        else:
            mechanisms[f"c{j}"] = UtilityOptimizedRAPPOR(eps, sensitive=sens, categories=cats)
    fake = draw(st.sampled_from(["auto", "random"]))
    return mechanisms, fake


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_small_tables())
def test_exact_amplification_keeps_every_promise_on_random_tables(table):
    """Any mix of domains, budgets, sensitive sets and mechanisms: with
    amplification="exact" every attribute spends at most its epsilon (most
    exactly it), and the enumerated row channel agrees with the claims."""
    mechanisms, fake = table
    priv = _fit(mechanisms, strategy="sample+fake", fake=fake)
    result = check_row_privacy(priv)
    assert result.satisfied
    for name, mech in mechanisms.items():
        assert priv.attribute_epsilons_[name] <= mech.epsilon * (1 + 1e-7)
        assert result.attributes[name].worst_log_ratio == pytest.approx(
            priv.attribute_epsilons_[name], rel=1e-7
        )
    assert result.row.worst_log_ratio == pytest.approx(priv.epsilon_spent_, rel=1e-7)


def test_remainder_mechanism_is_one_more_sampled_attribute():
    df = _survey(3000)
    priv = DataFramePrivatizer(
        {"vote": _mechs()["vote"], "income": _mechs()["income"]},
        remainder=RandomizedResponse(1.0, categories=["f", "m"]),
        strategy="sample",
        random_state=0,
    )
    reports = priv.fit_transform(df)
    assert set(reports["sampled_attribute"]) == {"vote", "income", "remainder"}
    assert set(priv.estimate(reports)) == {"vote", "income", "remainder"}
    assert check_row_privacy(priv).satisfied
