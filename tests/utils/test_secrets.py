"""Per-user secrets and the keyed PRF (sklearn_uldp.utils._secrets).

The PRF is XChaCha20: checked against the published test vectors (RFC 8439
§2.3.2 and A.1, draft-irtf-cfrg-xchacha §2.2.1 and A.3.2) in both
implementations (compiled kernel and numpy rounds), the implementations
against each other, and the derived draws statistically (uniforms, exact
integers, Bernoulli cells with their ties).
"""

import hashlib
import pickle

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from sklearn_uldp.utils import (
    UserKeys,
    check_user_secrets,
    generate_user_secrets,
    prf_bernoulli,
    prf_integers,
    prf_uniforms,
    prf_words,
)
from sklearn_uldp.utils import _keystream as K
from sklearn_uldp.utils import _secrets as S

KEY = bytes(range(32))
COMPILED = [False] + ([True] if S.numba is not None else [])


# ------------------------------------------------------------ test vectors
def test_chacha20_block_rfc8439():
    block = K._chacha20_block(KEY, 1, bytes.fromhex("000000090000004a00000000"))
    assert block.hex() == (
        "10f1e7e4d13b5915500fdd1fa32071c4c7d1f4c733c068030422aa9ac3d46c4e"
        "d2826446079faa0914c2d705d98b02a2b5129cd1de164eb9cbd083e8a2503c4e"
    )
    zero = K._chacha20_block(bytes(32), 0, bytes(12))  # A.1, test vector #1
    assert zero.hex() == (
        "76b8e0ada0f13d90405d6ae55386bd28bdd219b8a08ded1aa836efcc8b770dc7"
        "da41597c5157488d7724e03fb8d84a376a43b8f41518a11cc387b669b2ee6586"
    )


def test_hchacha20_draft_vector():
    subkey = K._hchacha20(KEY, bytes.fromhex("000000090000004a0000000031415927"))
    assert subkey.hex() == "82413b4227b27bfed30e42508a877d73a0f9e4d58a74a853c12ec41326d3ecdc"


@pytest.mark.parametrize("compiled", COMPILED)
def test_xchacha20_keystream_draft_vector(compiled):
    key = bytes(range(0x80, 0xA0))
    nonce = bytes.fromhex("404142434445464748494a4b4c4d4e4f5051525354555658")
    expected = bytes.fromhex(
        "29624b4b1b140ace53740e405b2168540fd7d630c1f536fecd722fc3cddba7f4"
        "cca98cf9e47e5e64d115450f9b125b54449ff76141ca620a1f9cfcab2a1a8a25"
        "5e766a5266b878846120ea64ad99aa479471e63befcbd37cd1c22a221fe46221"
        "5cf32c74895bf505863ccddd48f62916dc6521f1ec50a5ae08903aa259d9bf60"
    )
    # The draft's keystream starts at block 1.
    assert K._xchacha20_keystream(key, nonce, 128, counter=1, compiled=compiled) == expected


@pytest.mark.skipif(S.numba is None, reason="the compiled kernel needs numba")
def test_compiled_kernels_equal_numpy_rounds():
    rng = np.random.default_rng(0)
    n = 77  # not a multiple of the kernel's lane groups
    keys = rng.integers(0, 2**32, size=(n, 8), dtype=np.uint32)
    ctx = rng.integers(0, 2**32, size=4, dtype=np.uint32)
    values = rng.integers(0, 2**32, size=(n, 2), dtype=np.uint32)
    first = rng.integers(0, 2**20, size=n).astype(np.uint32)
    a = S._keystream(keys, ctx, values, first, 3, compiled=True)
    b = S._keystream(keys, ctx, values, first, 3, compiled=False)
    np.testing.assert_array_equal(a, b)


@pytest.mark.skipif(S.numba is None, reason="the compiled kernel needs numba")
@pytest.mark.parametrize("m", [5, 64, 130])
def test_bernoulli_cells_compiled_equal_numpy(monkeypatch, m):
    secrets = generate_user_secrets(3000, random_state=1)
    codes = np.random.default_rng(0).integers(0, m, 3000)
    p = np.linspace(0.05, 0.95, m)
    fast = prf_bernoulli(secrets, "c", codes, p, marked=codes, marked_probabilities=0.31)
    monkeypatch.setattr(S, "numba", None)
    slow = prf_bernoulli(secrets, "c", codes, p, marked=codes, marked_probabilities=0.31)
    np.testing.assert_array_equal(fast, slow)


# ---------------------------------------------------------- the PRF draws
def test_prf_words_are_a_deterministic_stream():
    secrets = generate_user_secrets(5, random_state=0)
    a = prf_words(secrets, "ctx", [1, 2, 3, 4, 5], 20)
    np.testing.assert_array_equal(a, prf_words(list(secrets), "ctx", [1, 2, 3, 4, 5], 20))
    np.testing.assert_array_equal(
        a[:, 7:13], prf_words(secrets, "ctx", [1, 2, 3, 4, 5], 6, start=7)
    )
    # One word differs with the context, the value and the secret.
    assert (a != prf_words(secrets, "ctx2", [1, 2, 3, 4, 5], 20)).all()
    assert (a != prf_words(secrets, "ctx", [2, 2, 3, 4, 5], 20))[0].all()
    assert (a != prf_words(secrets[::-1].copy(), "ctx", [1, 2, 3, 4, 5], 20))[0].all()
    # The words are the keystream of the published construction.
    words = prf_words([KEY], "ctx", 9, 8)
    nonce = S._context_words("ctx").astype("<u4").tobytes() + (9).to_bytes(8, "little")
    raw = K._xchacha20_keystream(KEY, nonce, 64, compiled=False)
    assert words.astype("<u8").tobytes() == raw


def test_prf_uniforms_are_uniform():
    u = prf_uniforms(generate_user_secrets(50_000, random_state=2), "u", 0, 4).ravel()
    assert stats.kstest(u, "uniform").pvalue > 1e-3
    assert (u >= 0).all() and (u < 1).all()
    assert np.all(np.round(u * 2.0**53) == u * 2.0**53)  # the 2**-53 grid


@pytest.mark.parametrize("high", [3, 7, 2**31 + 11])
def test_prf_integers_are_exactly_uniform(high):
    r = prf_integers(generate_user_secrets(40_000, random_state=3), "i", 0, high, 3).ravel()
    assert r.min() >= 0 and r.max() < high
    bins = 6 if high > 100 else high
    counts = np.bincount((r * bins) // high if high > 100 else r, minlength=bins)
    assert stats.chisquare(counts).pvalue > 1e-4


def test_lemire_rejection_and_retry(monkeypatch):
    # 2**64 mod 3 = 1: the word 0 would favour 0 and must be redrawn.
    m = np.array([3, 3], dtype=np.uint64)
    r, bad = S._lemire(np.array([0, 2**63], dtype=np.uint64), m)
    assert bad.tolist() == [True, False] and int(r[1]) == 1
    real = S._stream_words

    def first_word_zero(*args):
        words = real(*args)
        words[0, 0] = 0
        return words

    monkeypatch.setattr(S, "_stream_words", first_word_zero)
    secrets = generate_user_secrets(2, random_state=0)
    out = prf_integers(secrets, "retry", 0, 3, 2)
    retry = S._words_at(
        check_user_secrets(secrets)._words,
        S._context_words(S._retry_label("retry")),
        S._value_words(0, 2),
        [0],
        [0],
    )
    expected, _ = S._lemire(retry, np.array([3], dtype=np.uint64))
    assert out[0, 0] == expected[0]


def test_prf_bernoulli_realizes_p_with_its_ties():
    # p = (100 + 0.9) / 256: a tie (1 byte in 256) is a 1 w.p. 0.9. Treating
    # ties as 0 would lower the frequency by 0.0035, 10 standard errors.
    p = (100 + 0.9) / 256
    cells = prf_bernoulli(generate_user_secrets(100_000, random_state=4), "b", 0, np.full(20, p))
    freq = cells.mean()
    se = np.sqrt(p * (1 - p) / cells.size)
    assert abs(freq - p) < 5 * se
    # Marked cells use their own probability.
    n = 50_000
    codes = np.random.default_rng(1).integers(0, 4, n)
    cells = prf_bernoulli(
        generate_user_secrets(n, random_state=5),
        "m",
        codes,
        np.full(4, 0.1),
        marked=codes,
        marked_probabilities=0.7,
    )
    own = cells[np.arange(n), codes]
    assert abs(own.mean() - 0.7) < 5 * np.sqrt(0.21 / n)
    mask = np.ones_like(cells)
    mask[np.arange(n), codes] = False
    assert abs(cells[mask].mean() - 0.1) < 5 * np.sqrt(0.09 / mask.sum())


def test_prf_draws_are_independent_across_users_and_values():
    n = 60_000
    secrets = generate_user_secrets(n, random_state=6)
    bits = prf_bernoulli(secrets, "ind", 0, [0.5])[:, 0].astype(int)
    # consecutive users: the 2x2 table of (user i, user i+1) is a product
    table = np.bincount(2 * bits[:-1:2] + bits[1::2], minlength=4).reshape(2, 2)
    assert stats.chi2_contingency(table)[1] > 1e-3
    # one user, two values
    a = prf_bernoulli(secrets, "ind", 0, [0.5])[:, 0].astype(int)
    b = prf_bernoulli(secrets, "ind", 1, [0.5])[:, 0].astype(int)
    table = np.bincount(2 * a + b, minlength=4).reshape(2, 2)
    assert stats.chi2_contingency(table)[1] > 1e-3


# ------------------------------------------------------------- the secrets
def test_generate_user_secrets():
    secrets = generate_user_secrets(1000)
    assert secrets.dtype == object and {len(s) for s in secrets} == {32}
    assert len(set(secrets.tolist())) == 1000
    assert (
        generate_user_secrets(3, random_state=1) == generate_user_secrets(3, random_state=1)
    ).all()
    assert {len(s) for s in generate_user_secrets(3, n_bytes=16)} == {16}
    with pytest.raises(ValueError, match="at least|>= 16"):
        generate_user_secrets(3, n_bytes=8)
    with pytest.raises(ValueError, match="non-negative integer"):
        generate_user_secrets(-1)
    with pytest.raises(ValueError, match="random_state"):
        generate_user_secrets(3, random_state="secure")


def test_check_user_secrets_forms_and_hashing():
    raw = generate_user_secrets(4, random_state=0)
    keys = check_user_secrets(raw, n_samples=4)
    as_array = np.frombuffer(b"".join(raw), dtype=np.uint8).reshape(4, 32)
    np.testing.assert_array_equal(check_user_secrets(as_array)._words, keys._words)
    np.testing.assert_array_equal(check_user_secrets(pd.Series(raw))._words, keys._words)
    assert check_user_secrets(keys) is keys
    # Secrets of other lengths are hashed to a key (not zero-padded).
    longer = [s + b"!" for s in raw]
    assert not (check_user_secrets(longer)._words == keys._words).all(axis=1).any()
    assert len(keys[1:3]) == 2


def _reference_key(secret):
    """A secret's key as documented: itself if 32 bytes long, else SHA-256."""
    if len(secret) != 32:
        secret = hashlib.sha256(b"sklearn_uldp.secret-key.v1\x00" + secret).digest()
    return np.frombuffer(secret, dtype="<u4")


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.one_of(st.binary(min_size=31, max_size=33), st.binary(min_size=16, max_size=40)),
        min_size=1,
        max_size=12,
        unique=True,
    ),
    st.sampled_from(["list", "object array", "series"]),
)
def test_check_user_secrets_keys_every_length_exactly(secrets, form):
    # The 32-byte fast path (a set of lengths, one fixed-width copy) and the
    # mixed path give the documented key of every secret: a trailing zero
    # byte is kept, a 33-byte secret is not cut to 32, a 31-byte one not
    # padded.
    given_secrets = {
        "list": secrets,
        "object array": np.array(secrets + [b""], dtype=object)[:-1],
        "series": pd.Series(secrets, dtype=object),
    }[form]
    expected = np.array([_reference_key(s) for s in secrets])
    np.testing.assert_array_equal(check_user_secrets(given_secrets)._words, expected)


def test_check_user_secrets_length_edges():
    base = bytes(range(1, 33))
    edges = [base, base[:31] + b"\x00", base + b"\x00", base[:31], base[:31] + b"\x00\x00"]
    for form in (edges, np.array(edges + [b""], dtype=object)[:-1]):
        keys = check_user_secrets(form)._words
        np.testing.assert_array_equal(keys, np.array([_reference_key(s) for s in edges]))
        assert len({k.tobytes() for k in keys}) == len(edges)
    # All 32 bytes long, two equal: refused by the fast path too.
    with pytest.raises(ValueError, match="share a user secret"):
        check_user_secrets(np.array([base, edges[1], base], dtype=object))


@pytest.mark.parametrize(
    ("secrets", "error", "match"),
    [
        (["0123456789abcdef0123456789abcdef", "x" * 32], TypeError, "bytes.fromhex"),
        ([b"a" * 32, None], TypeError, "row 1 holds a NoneType"),
        (np.array([b"a" * 32, b"b" * 32]), TypeError, "pads shorter secrets"),
        ([b"a" * 32, b"short"], ValueError, "shorter than 16 bytes"),
        ([b"a" * 32, b"b" * 32, b"a" * 32], ValueError, r"secret \(e.g. rows 0 and 2\)"),
        (b"a" * 32, TypeError, "one secret per user"),
        ("a" * 32, TypeError, "sequence of bytes"),
        (np.zeros((2, 8), dtype=np.uint8), ValueError, "8 bytes long"),
        (np.arange(4), TypeError, "dtype int64"),
        (3.5, TypeError, "got float"),
    ],
)
def test_check_user_secrets_refuses_bad_input(secrets, error, match):
    with pytest.raises(error, match=match):
        check_user_secrets(secrets)


def test_check_user_secrets_count():
    with pytest.raises(ValueError, match="Got 2 user secrets for 3 rows"):
        check_user_secrets(generate_user_secrets(2), n_samples=3)


def test_user_keys_are_never_pickled_or_printed():
    raw = generate_user_secrets(2, random_state=0)
    keys = check_user_secrets(raw)
    with pytest.raises(TypeError, match="never pickled"):
        pickle.dumps(keys)
    assert repr(keys) == "UserKeys(n_users=2)"
    assert raw[0].hex() not in repr(keys)
    assert isinstance(keys, UserKeys)


def test_simulated_user_keys_are_per_row():
    a = S.simulated_user_keys(0, 4)._words
    b = S.simulated_user_keys(0, 7)._words
    np.testing.assert_array_equal(a, b[:4])
    assert len(np.unique(b, axis=0)) == 7
    assert not (S.simulated_user_keys(1, 4)._words == a).all()


# ------------------------------------------ the one-pass kernels (speed work)
@pytest.mark.skipif(S.numba is None, reason="the compiled kernel needs numba")
@pytest.mark.parametrize(
    "m, h, per_row", [(1, 1, False), (100, 1, False), (37, 3, True), (200, 4, False)]
)
def test_one_pass_cells_kernel_equals_numpy(monkeypatch, m, h, per_row):
    """The fused kernel (keystream and cells in one pass) against the numpy
    rounds, with ties everywhere: per-row probabilities, several marked cells
    with their own probabilities, and ties whose word lies beyond the drawn
    blocks (m = 200: marked ties read word 225 of 32 drawn)."""
    n = 2_000
    rng = np.random.default_rng(m)
    secrets = generate_user_secrets(n, random_state=m)
    values = rng.integers(0, 2**40, n).astype(np.uint64)
    # probabilities on the byte grid plus a fraction: ties are live
    p = (rng.integers(0, 256, size=(n, m) if per_row else m) + rng.random()) / 256
    marked = np.argsort(rng.random((n, m)), axis=1)[:, :h]
    p_marked = (rng.integers(0, 256, size=(n, h)) + 0.5) / 256
    fast = prf_bernoulli(secrets, "k", values, p, marked=marked, marked_probabilities=p_marked)
    monkeypatch.setattr(S, "numba", None)
    slow = prf_bernoulli(secrets, "k", values, p, marked=marked, marked_probabilities=p_marked)
    np.testing.assert_array_equal(fast, slow)


def test_prf_bernoulli_refuses_repeated_marked_columns():
    with pytest.raises(ValueError, match="distinct within a row"):
        prf_bernoulli(
            generate_user_secrets(2, random_state=0),
            "k",
            0,
            [0.5] * 4,
            marked=[[1, 1], [0, 2]],
            marked_probabilities=0.9,
        )


@pytest.mark.parametrize("q", [0.0, 1.0, 0.3, 0.25, 1e-3, 0.999, 100.9 / 256])
@pytest.mark.parametrize("compiled", [True, False])
def test_bernoulli_xor_draws_as_bernoulli_matrix(monkeypatch, q, compiled):
    from sklearn_uldp.utils import _sampling

    if not compiled:
        monkeypatch.setattr(_sampling, "numba", None)
    shape = (3, (1 << 20) // 3 + 5)  # more than one block, not a multiple of 8
    cells = np.random.default_rng(1).integers(0, 2, size=shape, dtype=np.uint8)
    expected = cells ^ _sampling.bernoulli_matrix(shape, q, np.random.default_rng(2))
    rng = np.random.default_rng(2)
    out = _sampling.bernoulli_xor(cells.copy(), q, rng)
    np.testing.assert_array_equal(out, expected)
    # the generator is left where bernoulli_matrix leaves it
    after = np.random.default_rng(2)
    _sampling.bernoulli_matrix(shape, q, after)
    assert rng.random() == after.random()


def test_bernoulli_xor_with_more_ties_than_the_kernel_lists(monkeypatch):
    from sklearn_uldp.utils import _sampling

    monkeypatch.setattr(_sampling, "_TIE_CAPACITY", 3)
    cells = np.zeros((50, 40), dtype=np.uint8)
    q = 100.5 / 256
    expected = _sampling.bernoulli_matrix(cells.shape, q, np.random.default_rng(3))
    np.testing.assert_array_equal(
        _sampling.bernoulli_xor(cells, q, np.random.default_rng(3)), expected
    )


def test_prf_bernoulli_cells_do_not_depend_on_the_number_of_threads():
    # The chunks of users run on threads; each cell is a function of the
    # key, context, value and position alone.
    import joblib

    from sklearn_uldp.utils import prf_bernoulli

    n = 3 * (1 << 15) + 17  # several chunks and a partial one
    secrets = generate_user_secrets(n)
    values = np.arange(n) % 50
    args = (secrets, "ctx", values, np.full(70, 0.3))
    kwargs = dict(marked=values[:, None] % 70, marked_probabilities=0.9)
    threaded = prf_bernoulli(*args, **kwargs)
    with joblib.parallel_config(n_jobs=1):
        serial = prf_bernoulli(*args, **kwargs)
    np.testing.assert_array_equal(threaded, serial)
    mark = np.zeros(serial.shape, dtype=bool)
    mark[np.arange(n), values % 70] = True
    assert abs(serial[~mark].mean() - 0.3) < 0.005
    assert abs(serial[mark].mean() - 0.9) < 0.01


# ------------------------- the flips of an instantaneous round (issue 36)
FLIPS = [(0.2, 0.2), (100.5 / 256, 0.5), (0.0, 1.0), (1.0, 0.0), (1 / 256, 255 / 256), (0.3, 0.7)]


def _flipped_reference(secrets, values, p, marked, p_marked, flips, rng):
    """What ``_prf_cells`` with flips defines, written out in numpy: the
    memoized cells of prf_bernoulli; then cell (i, j) reads byte i m + j of
    the generator's raw words and is flipped below floor(256 f_c); a byte
    equal to it (a fraction > 0) is decided by one rng.random() per tie, in
    row-major order, after all the bytes."""
    cells = np.asarray(
        prf_bernoulli(secrets, "k", values, p, marked=marked, marked_probabilities=p_marked),
        dtype=np.uint8,
    )
    n, m = cells.shape
    f = np.asarray(flips, dtype=float)
    byte = rng.bit_generator.random_raw(-(-n * m // 8)).view(np.uint8)[: n * m].reshape(n, m)
    threshold, fraction = np.floor(256 * f), 256 * f - np.floor(256 * f)
    t = threshold[cells]
    flip = byte < t
    tie = (byte == t) & (fraction[cells] > 0)
    flip[tie] = rng.random(int(tie.sum())) < fraction[cells][tie]
    return cells ^ flip


def _flipped(secrets, values, p, marked, p_marked, flips, rng):
    out = np.empty((len(values), np.size(p)), dtype=np.uint8)
    return S._prf_cells(secrets, "k", values, p, marked, p_marked, out, (flips, rng)).view(np.uint8)


@pytest.mark.parametrize("flips", FLIPS)
@pytest.mark.parametrize("compiled", COMPILED)
@pytest.mark.parametrize("n, m", [(1, 1), (999, 100), (2_000, 13)])
def test_flips_are_the_bytes_then_the_ties_uniforms(monkeypatch, flips, compiled, n, m):
    """The compiled pass and the numpy pass both give the reference's cells
    and leave the generator where it leaves it."""
    rng = np.random.default_rng(m)
    secrets = generate_user_secrets(n, random_state=n)
    values = rng.integers(0, 50, n)
    p = (rng.integers(0, 256, m) + 0.5) / 256  # live ties in the memoized cells too
    marked = values % m
    if not compiled:
        monkeypatch.setattr(S, "numba", None)
    expected = _flipped_reference(secrets, values, p, marked, 0.7, flips, np.random.default_rng(5))
    gen = np.random.default_rng(5)
    got = _flipped(secrets, values, p, marked, 0.7, flips, gen)
    np.testing.assert_array_equal(got, expected)
    after = np.random.default_rng(5)
    _flipped_reference(secrets, values, p, marked, 0.7, flips, after)
    assert gen.random() == after.random()


def test_flips_do_not_depend_on_threads_or_room_for_ties(monkeypatch):
    """Several chunks (and a partial one) on threads, one thread, with room
    for one tie (every chunk run again), and in narrow chunks: the same
    reports, and the reference's (the bytes are drawn chunk after chunk, in
    row order)."""
    import joblib

    n, m = 3 * (1 << 15) + 17, 9
    secrets = generate_user_secrets(n, random_state=3)
    values = np.arange(n) % 7
    p = np.full(m, 0.3)
    args = (secrets, values, p, values, 0.8, (0.25, 0.5))
    threaded = _flipped(*args, np.random.default_rng(1))
    with joblib.parallel_config(n_jobs=1):
        serial = _flipped(*args, np.random.default_rng(1))
    monkeypatch.setattr(S, "_flip_tie_capacity", lambda n_cells, live: 1)
    cramped = _flipped(*args, np.random.default_rng(1))
    # ~950 chunks of 104 rows (at most 1000 bytes of flips a chunk)
    monkeypatch.setattr(S, "_FLIP_BYTES", 1000)
    narrow = _flipped(*args, np.random.default_rng(1))
    np.testing.assert_array_equal(threaded, serial)
    np.testing.assert_array_equal(cramped, serial)
    np.testing.assert_array_equal(narrow, serial)
    np.testing.assert_array_equal(serial, _flipped_reference(*args, np.random.default_rng(1)))


def test_flips_from_the_secure_generator():
    """randomgen's bit generators give their raw words and uniforms as numpy's do."""
    from sklearn_uldp.utils._random import _secure_bit_generator_class

    make = _secure_bit_generator_class()
    n, m = 5_000, 20
    secrets = generate_user_secrets(n, random_state=4)
    values = np.arange(n) % m
    args = (secrets, values, np.full(m, 0.1), values, 0.9, (0.3, 0.5))
    got = _flipped(*args, np.random.Generator(make(7)))
    np.testing.assert_array_equal(got, _flipped_reference(*args, np.random.Generator(make(7))))


def test_flips_refuse_bad_probabilities():
    secrets = generate_user_secrets(3, random_state=0)
    for flips in [(0.2,), (0.1, 1.5), (np.nan, 0.5)]:
        with pytest.raises(ValueError, match="flip"):
            _flipped(secrets, [0, 1, 2], [0.5, 0.5], None, None, flips, np.random.default_rng(0))
