"""The vectorized samplers against the exact channel.

For each mechanism a large fixed input (N_PER_VALUE users per input value) is
privatized with ``transform`` and the reports are compared with the exact
channel row Q(. | x):

* categorical reports and small bit vectors: chi-square goodness of fit over
  all outputs (cells of probability zero must be empty);
* larger bit vectors: z-tests of each bit's rate and of each pair's joint rate
  P(y_i = 1, y_j = 1) = q_i q_j (bits are independent given x).

Every test function uses a family-wise level ALPHA split over its statistics
(Bonferroni), so a correct sampler fails a fixed-seed run with probability
below 1e-6. The same statistics at the same sample size reject a channel with
epsilon perturbed by 5 %, another theta, or correlated bits
(``test_*_power``): the tests can fail.
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy import stats

from sklearn_uldp import (
    RAPPOR,
    NonPrivate,
    RandomizedResponse,
    UtilityOptimizedRAPPOR,
    UtilityOptimizedRR,
)
from sklearn_uldp.mechanisms import (
    RAPPORChannel,
    UnaryEncodingChannel,
    basic_rappor_theta,
)
from sklearn_uldp.mechanisms._randomized_response import (
    RandomizedResponseChannel,
    UtilityOptimizedRRChannel,
)
from sklearn_uldp.utils import _sampling
from sklearn_uldp.utils._sampling import (
    _GAP_BATCH,
    _TABLE_MIN_Q,
    bernoulli_matrix,
    bernoulli_position_chunks,
    bernoulli_positions,
    randomized_response_codes,
    unary_sparse_rows,
)

ALPHA = 1e-6
N_PER_VALUE = 200_000


# ------------------------------------------------------------------ helpers
def privatize(mech, values, n=N_PER_VALUE):
    """Reports of n users holding each value, as a list of code arrays."""
    X = np.repeat(np.asarray(values), n).reshape(-1, 1)
    R = mech.transform(X)
    codes = mech.channel_.encode_reports(R)
    if mech.channel_.report_format == "bits":
        codes = codes.toarray() if hasattr(codes, "toarray") else np.asarray(codes)
        assert codes.shape == (len(values) * n, mech.channel_.n_categories)
    return [codes[i * n : (i + 1) * n] for i in range(len(values))]


def bits_to_output(bits):
    """Column index of the channel matrix: y = sum_j bit_j 2^j."""
    return (np.asarray(bits, dtype=np.int64) << np.arange(bits.shape[1])).sum(axis=1)


def chi2_pvalue(outputs, row):
    """Goodness of fit of observed outputs to the channel row ``row``.

    Cells of probability zero must be empty (asserted: one such report is
    already proof of a wrong sampler); the others enter Pearson's statistic.
    """
    counts = np.bincount(outputs, minlength=row.size)
    assert counts.size == row.size
    impossible = row == 0
    assert counts[impossible].sum() == 0, "an output of probability 0 occurred"
    expected = counts.sum() * row[~impossible]
    assert expected.min() >= 5, "chi-square needs expected counts >= 5"
    if (~impossible).sum() == 1:
        return 1.0
    return stats.chisquare(counts[~impossible], expected).pvalue


def bit_z_scores(Y, q):
    """z-scores of each bit's rate and of each pair's joint rate vs q_i q_j."""
    n, k = Y.shape
    Yf = Y.astype(np.float64)
    rate = Yf.mean(axis=0)
    active = (q > 0) & (q < 1)
    # deterministic bits must be exactly deterministic
    assert np.all(rate[q == 0] == 0) and np.all(rate[q == 1] == 1)
    z_marg = (rate[active] - q[active]) / np.sqrt(q[active] * (1 - q[active]) / n)
    joint = (Yf.T @ Yf) / n
    iu = np.triu_indices(k, 1)
    pair_q = np.outer(q, q)[iu]
    ok = (pair_q > 0) & (pair_q < 1)
    z_pair = (joint[iu][ok] - pair_q[ok]) / np.sqrt(pair_q[ok] * (1 - pair_q[ok]) / n)
    # a pair with an impossible bit must never be (1, 1)
    assert np.all(joint[iu][pair_q == 0] == 0)
    return np.concatenate([z_marg, z_pair])


def z_pvalue(z):
    return 2 * stats.norm.sf(np.abs(z))


def bit_rates(channel, x):
    """Exact P(y_j = 1 | x) of a unary-encoding channel (mathematics §2.3 and §2.5)."""
    S = channel.sensitive_mask
    q = np.where(S, channel.d1, 0.0)
    q[x] = channel.theta if S[x] else 1 - channel.d2
    return q


# ------------------------------------------------------ categorical outputs
CATEGORICAL = [
    (RandomizedResponse(1.0, categories=list(range(5))), range(5)),
    (RandomizedResponse(2.0, categories=list(range(30))), [0, 17, 29]),
    (RandomizedResponse(0.2, categories=["a", "b"]), ["a", "b"]),
    # k = 100: ~2000 expected reports per cell, so a target that is off by
    # one (or a move to the input itself, 1 in 99 moves) is rejected.
    (RandomizedResponse(1.0, categories=list(range(100))), [0, 42, 99]),
    # eps = 4: a third of the users keep (the arithmetic-select branch)
    (RandomizedResponse(4.0, categories=list(range(100))), [0, 57, 99]),
    (UtilityOptimizedRR(1.0, sensitive=[1, 4, 6], categories=list(range(8))), range(8)),
    (UtilityOptimizedRR(0.5, sensitive=[0], categories=list(range(5))), range(5)),
    (UtilityOptimizedRR(3.0, sensitive=list(range(6)), categories=list(range(6))), [0, 5]),
    (
        UtilityOptimizedRR(1.0, sensitive=["x", "z"], categories=["x", "y", "z", "w"]),
        ["x", "y", "z", "w"],
    ),
]


@pytest.mark.parametrize(
    "mech,values", CATEGORICAL, ids=lambda v: repr(v)[:40] if not isinstance(v, range) else ""
)
def test_categorical_sampler_matches_channel(mech, values):
    mech = mech.set_params(random_state=12345).fit()
    values = list(values)
    Q = mech.channel_matrix()
    cat_index = {c: i for i, c in enumerate(mech.categories_.tolist())}
    pvalues = []
    for v, outputs in zip(values, privatize(mech, values), strict=True):
        pvalues.append(chi2_pvalue(outputs, Q[cat_index[v]]))
    assert min(pvalues) > ALPHA / len(pvalues), pvalues


def test_nonprivate_is_exact():
    mech = NonPrivate(categories=[3, 1, 2]).fit()
    X = np.array([[1], [2], [3], [3]])
    np.testing.assert_array_equal(np.asarray(mech.transform(X)), X)


# --------------------------------------------------------- bit-vector outputs
SMALL_BITS = [
    RAPPOR(1.0, categories=list(range(4))),
    RAPPOR(1.0, theta=0.5, categories=list(range(4))),
    RAPPOR(3.0, theta=0.2, categories=list(range(3))),
    UtilityOptimizedRAPPOR(1.0, sensitive=[0, 3], categories=list(range(5))),
    UtilityOptimizedRAPPOR(2.0, sensitive=[2], theta=0.7, categories=list(range(5))),
]


@pytest.mark.parametrize("mech", SMALL_BITS, ids=repr)
@pytest.mark.parametrize("sparse", [False, True])
def test_small_bit_vectors_joint_distribution(mech, sparse):
    """Chi-square over all 2^k reports: marginals and dependence at once."""
    mech = mech.set_params(random_state=2024, sparse_output=sparse).fit()
    Q = mech.channel_matrix()
    k = Q.shape[0]
    pvalues = []
    for x, codes in enumerate(privatize(mech, list(range(k)))):
        pvalues.append(chi2_pvalue(bits_to_output(codes), Q[x]))
    assert min(pvalues) > ALPHA / len(pvalues), pvalues


LARGE_BITS = [
    RAPPOR(1.0, categories=list(range(12))),
    # d1 = 0.018: the geometric-gap path, written into a dense array
    RAPPOR(4.0, theta=0.5, categories=list(range(12))),
    RAPPOR(0.5, theta=0.5, categories=list(range(12))),
    UtilityOptimizedRAPPOR(1.0, sensitive=[0, 3, 5, 7], categories=list(range(12))),
    UtilityOptimizedRAPPOR(2.0, sensitive=[11], theta=0.3, categories=list(range(12))),
]


@pytest.mark.parametrize("mech", LARGE_BITS, ids=repr)
def test_bit_marginals_and_pairwise_independence(mech):
    mech = mech.set_params(random_state=99).fit()
    channel = mech.channel_
    values = [0, 5, 11]
    z = np.concatenate(
        [
            bit_z_scores(codes, bit_rates(channel, x))
            for x, codes in zip(values, privatize(mech, values), strict=True)
        ]
    )
    assert z.size >= len(values)  # at least each true bit
    assert z_pvalue(z).min() > ALPHA / z.size, np.abs(z).max()


# ------------------------------------------------------------------- power
def test_categorical_test_rejects_wrong_channel_power():
    """Same statistic, same n: a 5% error in epsilon is rejected."""
    cats = list(range(5))
    cases = [
        (RandomizedResponse(1.0, categories=cats), RandomizedResponseChannel(cats, 1.05)),
        (
            UtilityOptimizedRR(1.0, sensitive=[1, 3], categories=cats),
            UtilityOptimizedRRChannel(cats, 1.05, [False, True, False, True, False]),
        ),
    ]
    for mech, wrong in cases:
        mech = mech.set_params(random_state=7).fit()
        values = [0, 1]
        samples = privatize(mech, values)
        right = [
            chi2_pvalue(out, mech.channel_matrix()[v])
            for v, out in zip(values, samples, strict=True)
        ]
        bad = [chi2_pvalue(out, wrong.matrix()[v]) for v, out in zip(values, samples, strict=True)]
        assert min(right) > ALPHA / 2
        assert max(bad) < ALPHA / 2, bad


def test_bit_tests_reject_wrong_channel_power():
    cats = list(range(4))
    cases = [
        # OUE sampled; checked against epsilon + 5% and against basic RAPPOR
        (
            RAPPOR(1.0, theta=0.5, categories=cats),
            [RAPPORChannel(cats, 1.05, 0.5), RAPPORChannel(cats, 1.0, basic_rappor_theta(1.0))],
        ),
        # theta swapped with 1 - theta
        (RAPPOR(1.0, theta=0.3, categories=cats), [RAPPORChannel(cats, 1.0, 0.7)]),
    ]
    for mech, wrongs in cases:
        mech = mech.set_params(random_state=3).fit()
        samples = privatize(mech, cats)
        for wrong in wrongs:
            Q = wrong.matrix()
            p = [chi2_pvalue(bits_to_output(c), Q[x]) for x, c in enumerate(samples)]
            assert max(p) < ALPHA / len(p), (wrong, p)
            z = np.concatenate(
                [bit_z_scores(c, bit_rates(wrong, x)) for x, c in enumerate(samples)]
            )
            assert z_pvalue(z).min() < ALPHA / z.size
    # uRAP: the same for epsilon +5% on the marginal/pairwise statistic
    S = np.zeros(12, dtype=bool)
    S[[0, 3, 5, 7]] = True
    urap = UtilityOptimizedRAPPOR(
        1.0, sensitive=S, categories=list(range(12)), random_state=5
    ).fit()
    wrong = UnaryEncodingChannel(list(range(12)), 1.05, urap.channel_.theta, S)
    for x, codes in zip([0, 5], privatize(urap, [0, 5]), strict=True):
        z_right = bit_z_scores(codes, bit_rates(urap.channel_, x))
        z_wrong = bit_z_scores(codes, bit_rates(wrong, x))
        assert z_pvalue(z_right).min() > ALPHA / z_right.size
        assert z_pvalue(z_wrong).min() < ALPHA / z_wrong.size


def test_pairwise_test_detects_dependent_bits_power():
    """Correct marginals but correlated bits are rejected by the pair z-tests."""
    rng = np.random.default_rng(11)
    n, q = N_PER_VALUE, np.array([0.3775, 0.3775, 0.6225, 0.3775])
    U = rng.random((n, q.size))
    shared = rng.random(n) < 0.05  # 5% of users reuse bit 0's uniform for bit 1
    U[shared, 1] = U[shared, 0]
    Y = (U < q).astype(np.uint8)
    z = bit_z_scores(Y, q)
    k = q.size
    marg, pair = z[:k], z[k:]
    assert z_pvalue(marg).min() > ALPHA / z.size  # marginals are right
    assert z_pvalue(pair).min() < ALPHA / z.size  # the dependence is caught
    # and the independent version passes
    Y_ok = (rng.random((n, k)) < q).astype(np.uint8)
    assert z_pvalue(bit_z_scores(Y_ok, q)).min() > ALPHA / z.size


# ----------------------------------------------------------- bernoulli_matrix
class _GridRNG:
    """A stand-in generator: every byte value equally often, stratified uniforms.

    With m copies of each byte value and ties decided by the grid
    (i + 0.5) / t, the fraction of ones is q up to 1 / (256 m) + 1 / (256 t)
    -- a deterministic check of the probability bernoulli_matrix computes.
    """

    class _Bits:
        def __init__(self, m):
            self.m = m

        def random_raw(self, size):
            data = np.tile(np.arange(256, dtype=np.uint8), self.m)
            assert data.size == 8 * size
            return data.view(np.uint64)

    def __init__(self, m):
        self.bit_generator = self._Bits(m)

    def random(self, size):
        return (np.arange(size) + 0.5) / size


@pytest.mark.parametrize(
    "q",
    [
        1 / 256,
        37 / 256,
        0.5,
        255 / 256,
        37 / 256 + 1e-4,
        37 / 256 - 1e-4,
        0.5 + 1e-4,
        255 / 256 + 1e-4,
        1e-5,
        1 - 1e-5,
        0.3,
        2 / 3,
    ],
)
def test_bernoulli_matrix_exact_probability(q):
    m = 4096
    bits = bernoulli_matrix((256, m), q, _GridRNG(m))
    assert bits.dtype == bool and bits.shape == (256, m)
    frac = bits.mean()
    if float(q * 256).is_integer():
        assert frac == q  # no tie is ever decided in favour of 1
    # resolution of the grid: one byte value (1/256) split into m tie cells
    assert abs(frac - q) <= 1.0 / (256 * m) + 1e-15
    # a cell's value is decided by its byte: B < floor(256 q) -> 1, B > -> 0
    byte = np.tile(np.arange(256, dtype=np.uint8), m).reshape(256, m)
    thr = int(np.floor(256 * q))
    assert bits[byte < thr].all() and not bits[byte > thr].any()


@pytest.mark.parametrize("q", [37 / 256, 37 / 256 + 1e-4, 0.2, 0.9])
def test_bernoulli_matrix_rate_and_independence(q):
    rng = np.random.default_rng(123)
    n = 1 << 22
    bits = bernoulli_matrix((n // 4, 4), q, rng)
    flat = bits.ravel().astype(np.float64)
    rate = flat.mean()
    z_rate = (rate - q) / np.sqrt(q * (1 - q) / n)
    # neighbouring cells share a 64-bit raw draw: their bytes must be independent
    both = (flat[:-1] * flat[1:])[::2].mean()  # disjoint pairs
    m = n // 2
    z_pair = (both - q * q) / np.sqrt(q * q * (1 - q * q) / m)
    assert z_pvalue(np.array([z_rate, z_pair])).min() > ALPHA / 2


def test_bernoulli_matrix_exact_probability_in_every_block():
    """Drawn block by block, every block of cells gets its exact share of ones."""

    class _CyclicBytes(_GridRNG):
        class _Bits:
            def random_raw(self, size):
                data = np.tile(np.arange(256, dtype=np.uint8), -(-8 * size // 256))
                return data[: 8 * size].view(np.uint64)

        def __init__(self):
            self.bit_generator = self._Bits()

    q, width = 0.2, 1 << 20  # 256 q = 51.2: ties (1 in 256) decide w.p. 0.2
    bits = bernoulli_matrix((4, width), q, _CyclicBytes())
    # each row: 51 / 256 from the bytes below the threshold, + 0.2 / 256 from ties
    np.testing.assert_allclose(bits.mean(axis=1), q, atol=2.0 / width)


def test_bernoulli_matrix_edge_cases():
    rng = np.random.default_rng(0)
    assert not bernoulli_matrix((3, 5), 0.0, rng).any()
    assert bernoulli_matrix((3, 5), 1.0, rng).all()
    assert bernoulli_matrix((0, 5), 0.3, rng).shape == (0, 5)
    assert bernoulli_matrix((7,), 0.3, rng).shape == (7,)  # odd size, not /8
    # the same generator state gives the same draws
    a = bernoulli_matrix((100, 3), 0.4, np.random.default_rng(5))
    b = bernoulli_matrix((100, 3), 0.4, np.random.default_rng(5))
    np.testing.assert_array_equal(a, b)


# ------------------------------------------------ randomized_response_codes
class _UniformGridRNG:
    """A stand-in generator whose uniforms are the stratified grid (i + 0.5) / N.

    Consumed in order across calls, so each output's count is the number of
    grid points in its interval of U: its exact share of N, +-1 (+-1 more if
    float rounding moves a point lying on an interval's boundary).
    """

    def __init__(self, N):
        self.N, self.i = N, 0

    def random(self, size=None, out=None):
        m = size if out is None else out.size
        values = (np.arange(self.i, self.i + m) + 0.5) / self.N
        self.i += m
        if out is None:
            return values
        out[...] = values
        return out


@pytest.fixture(params=["numba", "numpy"])
def rr_kernel(request, monkeypatch):
    from sklearn_uldp.utils import _sampling

    if request.param == "numba" and _sampling.numba is None:  # pragma: no cover
        pytest.skip("numba is not installed")
    monkeypatch.setattr(_sampling, "_KERNEL", request.param)
    return request.param


@pytest.mark.parametrize(
    "k,eps", [(2, 1.0), (3, 0.5), (100, 1.0), (100, 4.0), (1000, 0.5), (1000, 4.0)]
)
def test_randomized_response_codes_exact_frequencies(k, eps, rr_kernel):
    """One uniform per user: kept w.p. keep, each other code w.p. (1-keep)/(k-1).

    Deterministic: a sampler that moves to the input itself, is off by one,
    or maps U to the targets non-uniformly misses by (1 - keep) * 1000 >> 2.
    """
    E = np.exp(eps)
    keep = E / (k - 1 + E)
    N = 1000 * (k - 1)
    for c in sorted({0, k // 2, k - 1}):
        out = randomized_response_codes(np.full(N, c), k, keep, _UniformGridRNG(N))
        counts = np.bincount(out, minlength=k)
        assert counts.size == k and out.dtype == np.intp
        expected = np.full(k, N * (1 - keep) / (k - 1))
        expected[c] = N * keep
        assert np.abs(counts - expected).max() <= 2, (c, counts, expected)


def test_randomized_response_codes_edge_cases(rr_kernel):
    rng = np.random.default_rng(0)
    codes = np.arange(3000) % 1500
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # One ulp below 1: kept users' scaled uniforms overflow int64 unless
        # clipped (moves have probability 2^-53).
        out = randomized_response_codes(codes, 1500, 1 - 2.0**-53, rng)
    np.testing.assert_array_equal(out, codes)
    np.testing.assert_array_equal(randomized_response_codes(codes, 1500, 1.0, rng), codes)
    assert randomized_response_codes(np.zeros(0, np.intp), 5, 0.5, rng).shape == (0,)
    small = codes % 3
    out = randomized_response_codes(small, 3, 0.0, rng)  # always moves
    assert (out != small).all() and out.min() == 0 and out.max() == 2
    # a function of the generator's state
    a = randomized_response_codes(codes, 1500, 0.3, np.random.default_rng(8))
    b = randomized_response_codes(codes, 1500, 0.3, np.random.default_rng(8))
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("k,keep", [(2, 0.7), (5, 0.01), (100, 0.5), (10**5, 0.99)])
def test_randomized_response_codes_kernels_agree(k, keep, monkeypatch):
    # The compiled pass and the numpy passes map the same uniforms to the
    # same codes (over several chunks of users).
    from sklearn_uldp.utils import _sampling

    codes = np.random.default_rng(k).integers(0, k, 3 * _sampling._USER_CHUNK + 5)
    out = {}
    for kernel in ("numba", "numpy"):
        monkeypatch.setattr(_sampling, "_KERNEL", kernel)
        out[kernel] = randomized_response_codes(codes, k, keep, np.random.default_rng(3))
    np.testing.assert_array_equal(out["numba"], out["numpy"])


# ------------------------------------------------------- bernoulli_positions
class _GapGridRNG:
    """A stand-in generator: every 16-bit value equally often, in order.

    The fallback uniforms (for the 16-bit values whose gap is not decided by
    the table) are the stratified grid (i + 0.5) / size.
    """

    class _Bits:
        def random_raw(self, size):
            m = 1 << 16
            data = np.tile(np.arange(m, dtype=np.uint16), -(-4 * size // m))
            return data[: 4 * size].view(np.uint64)

    def __init__(self):
        self.bit_generator = self._Bits()

    def random(self, size):
        return (np.arange(size) + 0.5) / size


@pytest.mark.parametrize("q", [_TABLE_MIN_Q, 0.0025, 0.018, 0.3, 0.9])
def test_gap_table_exact_cdf(q):
    """With every 16-bit value drawn equally often, the gaps' CDF is exact to 2^-16.

    Deterministic: each 16-bit value covers 2^-16 of U; P(T <= t) =
    1 - (1 - q)^t is a threshold on U, and only the interval holding it can
    go either way. A gap off by one misses by ~q(1-q)^t >> 2^-16.
    """
    m = 1 << 16
    assert _GAP_BATCH % m == 0  # each batch holds every 16-bit value equally often
    chunks = bernoulli_position_chunks(10**15, q, _GapGridRNG())
    first, second = next(chunks), next(chunks)
    assert first.size == second.size == _GAP_BATCH  # one batch each
    assert (np.diff(first) > 0).all() and (np.diff(second) > 0).all()
    trials = np.diff(first, prepend=-1)  # zeros before each one, plus one
    t = np.arange(1, trials.max() + 1)
    empirical = np.searchsorted(np.sort(trials), t, side="right") / _GAP_BATCH
    exact = -np.expm1(t * np.log1p(-q))
    assert np.abs(empirical - exact).max() <= 1.0 / m + 1e-12
    # The next batch starts right after the first one's last position: each
    # batch's first gap is drawn from 16-bit value 0 (U < 2^-16 < q), so it
    # is 0 zeros, i.e. the first cell of the stream and the first cell after
    # the previous batch are ones.
    assert first[0] == 0 and second[0] == first[-1] + 1
    np.testing.assert_array_equal(np.sort(np.diff(second, prepend=first[-1])), np.sort(trials))


@pytest.mark.parametrize("q", [1e-4, 0.0025, 0.018, 0.3])
def test_bernoulli_positions_geometric_gaps(q):
    """~2M ones over many chunks: rate and gap distribution (chi-square)."""
    rng = np.random.default_rng(5)
    length = int(2e6 / q)
    pos = bernoulli_positions(length, q, rng)
    assert pos.dtype == np.int64
    assert pos[0] >= 0 and pos[-1] < length and (np.diff(pos) > 0).all()
    z_rate = (pos.size / length - q) / np.sqrt(q * (1 - q) / length)
    gaps = np.diff(pos) - 1
    # 50 bins of about equal probability, the last one open-ended
    edges = np.unique(np.floor(np.log1p(-np.linspace(0, 1, 51)[:-1]) / np.log1p(-q)))
    counts = np.bincount(np.searchsorted(edges, gaps, side="right") - 1)
    p_from = np.exp(edges * np.log1p(-q))  # P(gap >= edge)
    probs = p_from - np.append(p_from[1:], 0.0)
    p_gaps = stats.chisquare(counts, probs * gaps.size).pvalue
    assert z_pvalue(np.array([z_rate])).min() > ALPHA / 2 and p_gaps > ALPHA / 2


@pytest.mark.parametrize(
    "length,q,reps",
    [(50, 1e-3, 40_000), (50, 0.02, 40_000), (50, 0.3, 40_000), (8000, 0.3, 20_000)],
)
def test_bernoulli_positions_cell_rates(length, q, reps):
    """Every cell of a short stream, the first and the last included, is 1 w.p. q.

    (8000, 0.3) draws its ~2400 gaps in a block (the vectorized cumulative
    sum); the others by a plain cumulative sum.
    """
    rng = np.random.default_rng(77)
    counts = np.zeros(length)
    for _ in range(reps):  # repetitions of one short stream, not users
        counts[bernoulli_positions(length, q, rng)] += 1
    z = (counts / reps - q) / np.sqrt(q * (1 - q) / reps)
    assert z_pvalue(z).min() > ALPHA / length, z


def test_oue_geometric_path_k1000_power():
    """OUE at eps = 4 over k = 1000 (geometric gaps into a dense array).

    Each bit's rate and the number of ones per report match the channel,
    and the same statistics reject an own bit OR-ed into the drawn one
    instead of replacing it (rate theta + (1 - theta) d1 = 0.509 vs 0.5).
    """
    k, x, n = 1000, 123, N_PER_VALUE
    mech = RAPPOR(4.0, theta=0.5, categories=list(range(k)), random_state=31).fit()
    channel = mech.channel_
    Y = np.asarray(mech.transform(np.full((n, 1), x)))
    assert Y.dtype == np.uint8 and Y.shape == (n, k) and Y.max() == 1
    rate = Y.mean(axis=0)

    def z_bits(q):
        return (rate - q) / np.sqrt(q * (1 - q) / n)

    q = bit_rates(channel, x)
    assert z_pvalue(z_bits(q)).min() > ALPHA / k
    wrong = q.copy()
    wrong[x] = channel.theta + (1 - channel.theta) * channel.d1
    assert z_pvalue(z_bits(wrong)).min() < ALPHA / k
    # ones per report: the own bit plus Binomial(k - 1, d1) others
    ones = Y.sum(axis=1, dtype=np.int64)
    c = np.arange(k + 1)
    pmf = channel.theta * stats.binom.pmf(c - 1, k - 1, channel.d1) + (
        1 - channel.theta
    ) * stats.binom.pmf(c, k - 1, channel.d1)
    lo, hi = np.flatnonzero(pmf * n >= 5)[[0, -1]]
    counts = np.bincount(np.clip(ones, lo, hi), minlength=k + 1)[lo : hi + 1]
    expected = pmf[lo : hi + 1].copy()
    expected[0] += pmf[:lo].sum()
    expected[-1] += pmf[hi + 1 :].sum()
    assert stats.chisquare(counts, expected * n).pvalue > ALPHA


# ----------------------------------------------------------- reproducibility
MECHANISMS = [
    lambda rs: RandomizedResponse(1.0, categories=list(range(6)), random_state=rs),
    lambda rs: UtilityOptimizedRR(
        1.0, sensitive=[0, 1], categories=list(range(6)), random_state=rs
    ),
    lambda rs: RAPPOR(1.0, categories=list(range(6)), random_state=rs),
    lambda rs: UtilityOptimizedRAPPOR(
        1.0, sensitive=[0, 1], theta=0.5, categories=list(range(6)), random_state=rs
    ),
]


@pytest.mark.parametrize("make", MECHANISMS)
def test_reproducibility(make):
    X = np.random.default_rng(0).integers(0, 6, size=(2000, 1))
    a = make(42).fit()
    first, second = np.asarray(a.transform(X)), np.asarray(a.transform(X))
    # Successive transforms draw fresh noise (P(equal) is astronomically small).
    assert not np.array_equal(first, second)
    # Refitting (or a new instance) with the same int seed replays the stream.
    a.fit()
    np.testing.assert_array_equal(np.asarray(a.transform(X)), first)
    np.testing.assert_array_equal(np.asarray(a.transform(X)), second)
    b = make(42).fit()
    np.testing.assert_array_equal(np.asarray(b.transform(X)), first)
    # Another seed, or None (OS entropy) at each fit, gives other reports.
    assert not np.array_equal(np.asarray(make(43).fit().transform(X)), first)
    c = make(None)
    r1 = np.asarray(c.fit().transform(X))
    r2 = np.asarray(c.fit().transform(X))
    assert not np.array_equal(r1, r2)


# ---------------------------------------------------------- unary_sparse_rows
def _reference_sparse_rows(codes, own_bit, s_codes, rank, n_cols, q, rng):
    """The COO construction of UnaryEncodingChannel.sample(sparse=True) it replaces."""
    n, s = codes.size, s_codes.size
    pos = bernoulli_positions(n * s, q, rng)
    rows = pos // max(s, 1)
    cols = pos - rows * s
    keep = cols != rank[codes][rows]
    rows, cols = rows[keep], s_codes[cols[keep]]
    own_rows = np.flatnonzero(own_bit)
    rows = np.concatenate([rows, own_rows])
    cols = np.concatenate([cols, codes[own_rows]])
    out = sp.csr_array((np.ones(rows.size, dtype=np.uint8), (rows, cols)), shape=(n, n_cols))
    out.sum_duplicates()
    return out


def _unary_case(n, k, sensitive, seed, p_own=0.7, own_dtype=np.uint8):
    """Arguments but q and rng: codes over the whole domain, own bits, s_codes, rank, k."""
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, k, n).astype(np.intp)
    own_bit = (rng.random(n) < p_own).astype(own_dtype)
    s_codes = np.arange(k) if sensitive is None else np.asarray(sensitive, np.intp)
    rank = np.full(k, -1, dtype=np.int64)
    rank[s_codes] = np.arange(s_codes.size)
    return codes, own_bit, s_codes, rank, k


def _assert_same_reports(args, q, seed=7):
    """Bit-identical to the reference for the same generator state."""
    rng_new, rng_ref = np.random.default_rng(seed), np.random.default_rng(seed)
    new = unary_sparse_rows(*args, q, rng_new)
    ref = _reference_sparse_rows(*args, q, rng_ref)
    assert isinstance(new, sp.csr_array) and new.shape == ref.shape
    np.testing.assert_array_equal(new.indptr, ref.indptr)
    np.testing.assert_array_equal(new.indices, ref.indices)
    assert new.data.dtype == np.uint8 and (new.data == 1).all()
    assert new.data.size == new.nnz == ref.nnz
    # the same draws were consumed
    np.testing.assert_array_equal(rng_new.random(3), rng_ref.random(3))
    return new


UNARY_CASES = [
    # (n, k, sensitive columns or None for all, q)
    (400, 30, None, 0.1),  # basic RAPPOR: s == k
    (400, 30, None, 0.6),  # many own cells drawn 1: removed or kept
    (300, 7, None, 0.97),
    # uRAP, s < k: non-sensitive codes before, between and after the
    # sensitive columns (their own bit is merged among them)
    (500, 20, [0, 3, 4, 9, 15], 0.3),
    (500, 20, [5, 11], 0.05),
    (300, 12, [11], 0.5),
    (200, 9, [0], 0.9),
    # degenerate shapes and probabilities
    (50, 1, None, 0.4),  # k = 1
    (50, 1, [], 0.4),  # s = 0: only own bits
    (60, 5, [], 0.3),
    (1, 6, None, 0.5),
    (1, 6, [2, 4], 0.5),
    (0, 6, None, 0.5),
    (0, 6, [1], 0.5),
    (100, 8, None, 0.0),
    (100, 8, None, 1.0),
    (100, 8, [1, 2, 6], 0.0),
    (100, 8, [1, 2, 6], 1.0),
]


@pytest.mark.parametrize("n,k,sensitive,q", UNARY_CASES)
def test_unary_sparse_rows_matches_reference(n, k, sensitive, q):
    for p_own, own_dtype in [(0.7, np.uint8), (0.2, bool), (1.0, np.uint8), (0.0, bool)]:
        args = _unary_case(n, k, sensitive, seed=n + k, p_own=p_own, own_dtype=own_dtype)
        _assert_same_reports(args, q)


@pytest.mark.parametrize(
    "n,k,sensitive,q",
    [
        (300, 50, None, 0.5),  # ~25 ones per row, chunks of 32: rows split
        (40, 200, None, 0.5),  # ~100 ones per row: rows span several chunks
        (300, 60, list(range(0, 60, 3)), 0.4),
        (2000, 10, None, 0.02),  # chunks of 32 ones span many rows
        (500, 10, [3, 7], 0.3),
    ],
)
def test_unary_sparse_rows_rows_split_across_chunks(monkeypatch, n, k, sensitive, q):
    """Tiny chunks of positions and steps of 3 rows: every boundary case occurs."""
    monkeypatch.setattr(_sampling, "_GAP_BATCH", 32)
    monkeypatch.setattr(_sampling, "_ROW_BATCH", 3)
    args = _unary_case(n, k, sensitive, seed=3)
    chunks = list(bernoulli_position_chunks(n * args[2].size, q, np.random.default_rng(7)))
    assert len(chunks) > 5 and max(c.size for c in chunks) <= 32
    _assert_same_reports(args, q)


def test_unary_sparse_rows_canonical_format():
    args = _unary_case(2000, 40, [0, 5, 6, 20, 39], seed=1)
    for sens_args, q in [(args, 0.3), (_unary_case(2000, 40, None, seed=2), 0.2)]:
        out = _assert_same_reports(sens_args, q)
        assert out.has_canonical_format
        assert out.indices.dtype == out.indptr.dtype == np.int32
        out.check_format(full_check=True)
        # indices strictly increasing within each row (sorted, no duplicates)
        row = np.repeat(np.arange(out.shape[0]), np.diff(out.indptr))
        same_row = row[1:] == row[:-1]
        assert (np.diff(out.indices)[same_row] > 0).all()
        assert out.indices.min() >= 0 and out.indices.max() < out.shape[1]


def test_unary_sparse_rows_growth_and_wide_indices(monkeypatch):
    """Too little room at first, and the int64 path (2^31 scaled down to 100)."""
    monkeypatch.setattr(_sampling, "_nnz_capacity", lambda n, s, q: 1)
    monkeypatch.setattr(_sampling, "_INT32_MAX", 100)
    for sensitive in (None, [1, 4, 5]):
        out = _assert_same_reports(_unary_case(300, 8, sensitive, seed=4), 0.3)
        assert out.nnz > 100 and out.indices.dtype == out.indptr.dtype


def test_unary_sparse_rows_rejects_unsorted_sensitive_columns():
    codes, own_bit, _, _, _ = _unary_case(10, 5, None, seed=0)
    rank = np.array([1, -1, 0, -1, -1])
    with pytest.raises(ValueError, match="increasing"):
        unary_sparse_rows(codes, own_bit, np.array([2, 0]), rank, 5, 0.3, np.random.default_rng(0))
