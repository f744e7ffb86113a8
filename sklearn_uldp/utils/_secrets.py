"""Per-user secrets and a keyed PRF: memoized randomness without stored state.

A longitudinal mechanism draws a user's *permanent* randomized answer once per
(user, value) and must give the same answer in every later round, in every
process, without a database of past answers. As Chrome's RAPPOR client does,
the answer is derived from a per-user secret with a keyed pseudo-random
function (PRF): the same secret, context and value always give the same
pseudo-random draws, different secrets give independent ones, and nothing but
the secret is kept.

The PRF is **XChaCha20** (the ChaCha20 stream cipher of RFC 8439 with the
192-bit nonce of draft-irtf-cfrg-xchacha): the key is the user's 32-byte
secret; the nonce is a 128-bit digest of the *context* (a domain-separation
label naming the mechanism, its public parameters and the purpose of the
draw) followed by the 64-bit *value*; the keystream, read as little-endian
64-bit words, is the sequence of draws (word ``j`` is draw index ``j``). A
stream cipher keyed by a uniformly random key is a PRF of (nonce, position),
and XChaCha20's large nonce makes the context digest collision-free in
practice. It is evaluated for a whole batch of users at once, by a compiled
kernel (numba, several users per vector register) or, without numba, by the
same rounds vectorized with numpy over the users; both are checked against
the published test vectors (RFC 8439 §2.3.2 and A.1, draft-irtf-cfrg-xchacha
§2.2.1 and A.3.2) and against each other.

On top of the stream, :func:`prf_uniforms` gives float64 uniforms on the
2**-53 grid, :func:`prf_integers` exactly uniform integers (Lemire's
multiply-shift with rejection: no modulo bias) and :func:`prf_bernoulli`
Bernoulli cells realized exactly as the package's samplers realize them (one
byte per cell, a 53-bit uniform on the 1/256 ties).

References
----------
Erlingsson, Pihur & Korolova, "RAPPOR", CCS 2014 (memoization).
Nir & Langley, "ChaCha20 and Poly1305 for IETF Protocols", RFC 8439, 2018.
Arciszewski, "XChaCha: eXtended-nonce ChaCha and AEAD_XChaCha20_Poly1305",
draft-irtf-cfrg-xchacha-03, 2020.
Lemire, "Fast Random Integer Generation in an Interval", ACM TOMACS 2019.
"""

from __future__ import annotations

import hashlib
import secrets as _os_secrets
from collections.abc import Sequence
from numbers import Integral
from typing import Any

import numpy as np
import pandas as pd

from ._keystream import (
    _LITTLE_ENDIAN,
    _MASK32,
    _SIGMA,
    _cells_kernel,
    _keystream,
    _stream_work,
    _threshold_kernel,
)
from ._numba import numba, use_compiled  # compiled kernels (same output as the numpy rounds)
from ._threads import map_threads

__all__ = [
    "UserKeys",
    "generate_user_secrets",
    "check_user_secrets",
    "prf_words",
    "prf_uniforms",
    "prf_integers",
    "prf_bernoulli",
    "simulated_user_keys",
    "derive_user_keys",
    "resolve_user_keys",
    "MIN_SECRET_BYTES",
]

#: Shortest secret accepted (128 bits of key).
MIN_SECRET_BYTES = 16
#: Length of the secrets :func:`generate_user_secrets` draws (the PRF's key).
KEY_BYTES = 32
_HINT = (
    "Give each user a secret of at least 16 random bytes, made once with "
    "generate_user_secrets(n_users) and kept by that user (on the device) "
    "for every later round."
)


class UserKeys:
    """Validated per-user PRF keys: one 32-byte key per user (row).

    Made by :func:`check_user_secrets`. The keys are the secrets themselves
    (32-byte secrets) or a SHA-256 digest of them (other lengths). A
    ``UserKeys`` is never pickled, copied into a spec or printed: it exists
    for the duration of one privatization call.

    Examples
    --------
    >>> from sklearn_uldp.utils import check_user_secrets, generate_user_secrets
    >>> keys = check_user_secrets(generate_user_secrets(3, random_state=0))
    >>> keys, len(keys), len(keys[1:])
    (UserKeys(n_users=3), 3, 2)
    """

    __slots__ = ("_words",)

    def __init__(self, words: np.ndarray) -> None:
        # (n, 8) uint32 little-endian words of each key.
        self._words = words

    def __len__(self) -> int:
        return int(self._words.shape[0])

    def __getitem__(self, rows: Any) -> UserKeys:
        """The keys of a subset of the users (rows), e.g. a chunk of a batch."""
        words = self._words[rows]
        if words.ndim != 2:
            raise IndexError("Index UserKeys with a slice, an index array or a mask.")
        return UserKeys(np.ascontiguousarray(words))

    def __repr__(self) -> str:
        return f"UserKeys(n_users={len(self)})"

    def __reduce__(self):
        raise TypeError(
            "User secrets are never pickled (they would let a copy replay the "
            "permanent answers). Keep the secrets on the users' side and pass "
            "them to transform(X, user_secrets=...) at each round."
        )

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self


def generate_user_secrets(
    n_users: int, *, n_bytes: int = KEY_BYTES, random_state: Any = None
) -> np.ndarray:
    """Draw one secret per user, to be kept by that user for every round.

    Parameters
    ----------
    n_users : int
        Number of users.
    n_bytes : int, default=32
        Bytes per secret (at least 16; 32 is the PRF's key size, any other
        length is hashed to 32 bytes).
    random_state : None or int, default=None
        ``None`` draws every secret from the operating system's CSPRNG
        (:func:`secrets.token_bytes`), as a deployment must. An integer
        makes the secrets reproducible, **for simulations only**: whoever
        knows it can recompute every user's permanent answer.

    Returns
    -------
    user_secrets : ndarray of object of shape (n_users,)
        One ``bytes`` object per user.

    Examples
    --------
    >>> from sklearn_uldp.utils import generate_user_secrets
    >>> secrets = generate_user_secrets(4)
    >>> secrets.shape, {len(s) for s in secrets}
    ((4,), {32})
    >>> bool((generate_user_secrets(2, random_state=0)
    ...       == generate_user_secrets(2, random_state=0)).all())
    True
    """
    if isinstance(n_users, bool) or not isinstance(n_users, Integral) or n_users < 0:
        raise ValueError(f"n_users must be a non-negative integer, got {n_users!r}.")
    if isinstance(n_bytes, bool) or not isinstance(n_bytes, Integral) or n_bytes < MIN_SECRET_BYTES:
        raise ValueError(
            f"n_bytes must be an integer >= {MIN_SECRET_BYTES} (a secret shorter "
            f"than 128 bits can be guessed), got {n_bytes!r}. The default 32 is "
            "the PRF's key size."
        )
    n, size = int(n_users), int(n_bytes)
    if random_state is None:
        raw = _os_secrets.token_bytes(n * size)
    elif isinstance(random_state, Integral) and not isinstance(random_state, bool):
        if random_state < 0:
            raise ValueError(f"random_state must be None or an int >= 0, got {random_state}.")
        # A simulation's users: reproducible, never for real users.
        seq = np.random.SeedSequence([int(random_state), 0x5EC2E75])
        raw = np.random.default_rng(seq).bytes(n * size)
    else:
        raise ValueError(
            "random_state must be None (operating-system entropy, for real "
            "users) or an int (reproducible simulated users); got "
            f"{type(random_state).__name__}."
        )
    out = np.empty(n, dtype=object)
    out[:] = [raw[i * size : (i + 1) * size] for i in range(n)]
    return out


def _secret_list(user_secrets):
    """The secrets as a list of bytes objects (or a 2-D uint8 array)."""
    if isinstance(user_secrets, (bytes, bytearray, memoryview)):
        raise TypeError(
            "user_secrets holds one secret per user (row); got a single bytes "
            "object. Pass a list or array of bytes, one per row. " + _HINT
        )
    if isinstance(user_secrets, str):
        raise TypeError("user_secrets must be a sequence of bytes, got a str. " + _HINT)
    if isinstance(user_secrets, pd.DataFrame):
        if user_secrets.shape[1] != 1:
            raise TypeError(
                "user_secrets must be one column of bytes (one secret per row); "
                f"got a DataFrame with {user_secrets.shape[1]} columns."
            )
        user_secrets = user_secrets.iloc[:, 0]
    if isinstance(user_secrets, pd.Series):
        user_secrets = user_secrets.to_numpy(dtype=object)
    if isinstance(user_secrets, np.ndarray):
        if user_secrets.dtype.kind == "S":
            raise TypeError(
                "user_secrets is a numpy bytes array (dtype "
                f"{user_secrets.dtype}), which pads shorter secrets with zero "
                "bytes and drops trailing zero bytes when read back: the same "
                "user could get another key. Pass an object array or a list of "
                "bytes, or a 2-D uint8 array (one row per user)."
            )
        if user_secrets.dtype == np.uint8 and user_secrets.ndim == 2:
            return user_secrets
        if user_secrets.dtype != object:
            raise TypeError(
                "user_secrets must hold bytes (one secret per user), got an "
                f"array of dtype {user_secrets.dtype}. " + _HINT
            )
        if user_secrets.ndim != 1:
            raise TypeError(
                f"user_secrets must be 1-D (one secret per row), got shape {user_secrets.shape}."
            )
        return user_secrets  # an object array: _key_words reads it vectorized
    if isinstance(user_secrets, Sequence):
        return list(user_secrets)
    raise TypeError(
        "user_secrets must be a list or array of bytes (one secret per row), "
        f"got {type(user_secrets).__name__}. " + _HINT
    )


def check_user_secrets(user_secrets: Any, n_samples: int | None = None) -> UserKeys:
    """Validate one secret per user and turn them into PRF keys.

    Parameters
    ----------
    user_secrets : sequence of bytes, 2-D uint8 array or UserKeys
        One secret per user (row of the data): ``bytes`` of at least 16
        bytes, all distinct (two users sharing a secret would share their
        permanent answers). A 2-D uint8 array holds one secret per row.
    n_samples : int, default=None
        The number of rows the secrets go with (checked when given).

    Returns
    -------
    keys : UserKeys
        A 32-byte key per user: the secret itself when it is 32 bytes long,
        else SHA-256 of a domain label and the secret.

    Raises
    ------
    TypeError
        For anything but bytes (text, numbers, numpy ``S`` arrays, None).
    ValueError
        For a secret shorter than 16 bytes, duplicated secrets, or a number
        of secrets other than ``n_samples``.

    Examples
    --------
    >>> from sklearn_uldp.utils import check_user_secrets
    >>> check_user_secrets([b"0123456789abcdef", b"fedcba9876543210"], n_samples=2)
    UserKeys(n_users=2)
    >>> check_user_secrets([b"short", b"0123456789abcdef"])
    Traceback (most recent call last):
    ...
    ValueError: 1 user secret(s) are shorter than 16 bytes (the first at row 0, 5 bytes)...
    """
    if isinstance(user_secrets, UserKeys):
        keys = user_secrets
    else:
        keys = UserKeys(_key_words(_secret_list(user_secrets)))
    if n_samples is not None and len(keys) != int(n_samples):
        raise ValueError(
            f"Got {len(keys)} user secrets for {int(n_samples)} rows: pass one "
            "secret per row (the secret of the user whose value the row holds)."
        )
    return keys


def _key_words(items):
    """(n, 8) uint32 key words from bytes items (or a 2-D uint8 array)."""
    if isinstance(items, np.ndarray) and items.dtype != object:  # (n, L) uint8
        n, length = items.shape
        if length < MIN_SECRET_BYTES:
            raise ValueError(
                f"user secrets are {length} bytes long; at least "
                f"{MIN_SECRET_BYTES} are needed. " + _HINT
            )
        raw = np.ascontiguousarray(items)
        if length == KEY_BYTES:
            words = raw.view("<u4").astype(np.uint32)
        else:
            words = _hashed_keys([row.tobytes() for row in raw])
        _check_distinct(words)
        return words
    array = None
    if isinstance(items, np.ndarray):  # 1-D object array (e.g. generate_user_secrets')
        # pandas' compiled type scan is three times faster than a pass of
        # type(); an array of bytes alone is then copied in one go below.
        if pd.api.types.infer_dtype(items, skipna=False) == "bytes":
            array = items
        else:
            items = items.tolist()
    n = len(items)
    if array is None and not set(map(type, items)) <= {bytes}:  # one C-level pass
        items = [_checked_bytes(i, item) for i, item in enumerate(items)]
    if set(map(len, items)) <= {KEY_BYTES}:
        # The common case, every secret 32 bytes long: one pass of len()
        # into a set (no list, no array of lengths), then one copy to
        # fixed-width bytes, which holds each secret as it is (no padding,
        # nothing dropped).
        fixed = array.astype("S32") if array is not None else np.fromiter(items, "S32", count=n)
        words = _fixed_words(fixed, n)
        _check_distinct(words)
        return words
    if array is not None:
        items = items.tolist()
    lengths = np.fromiter(map(len, items), dtype=np.int64, count=n)
    short = np.flatnonzero(lengths < MIN_SECRET_BYTES)
    if short.size:
        raise ValueError(
            f"{short.size} user secret(s) are shorter than {MIN_SECRET_BYTES} bytes "
            f"(the first at row {int(short[0])}, {int(lengths[short[0]])} bytes). " + _HINT
        )
    # Some secrets of other lengths (hashed); the 32-byte ones as they are.
    exact = lengths == KEY_BYTES
    words = np.empty((n, 8), dtype=np.uint32)
    idx = np.flatnonzero(exact)
    if idx.size:
        chosen = [items[i] for i in idx]
        words[idx] = _fixed_words(np.fromiter(chosen, dtype="S32", count=idx.size), idx.size)
    other = np.flatnonzero(~exact)
    words[other] = _hashed_keys([items[i] for i in other])
    _check_distinct(words, lengths)
    return words


def _fixed_words(fixed, n):
    """(n, 8) uint32 key words of an (n,) "S32" array of 32-byte secrets."""
    words = fixed.view("<u4").reshape(n, 8)
    if not _LITTLE_ENDIAN:  # pragma: no cover
        words = words.astype(np.uint32)
    return words


def _checked_bytes(i, item):
    """A secret as bytes, or a TypeError naming its row and how to fix it."""
    if isinstance(item, (bytes, bytearray, memoryview)):
        return bytes(item)
    what = type(item).__name__
    hint = (
        " If they were stored as hex text, pass bytes.fromhex(text)."
        if isinstance(item, str)
        else ""
    )
    raise TypeError(f"user secrets must be bytes; row {i} holds a {what}." + hint + " " + _HINT)


def _hashed_keys(items):
    """32-byte keys of secrets of other lengths (SHA-256, domain-separated)."""
    digests = b"".join(
        hashlib.sha256(b"sklearn_uldp.secret-key.v1\x00" + item).digest() for item in items
    )
    return np.frombuffer(digests, dtype="<u4").reshape(-1, 8).astype(np.uint32)


def _check_distinct(words, lengths=None):
    """Refuse two users with the same key (they would share every answer)."""
    if words.shape[0] < 2:
        return
    # Sorted first 64 bits, then (only if two agree) a full comparison of
    # the candidates (random secrets almost never share 64 bits).
    # One copy of the first 64 bits, sorted in place (np.sort would copy
    # them again).
    ordered = words[:, :2].copy().view(np.uint64).ravel()
    ordered.sort()
    if not (ordered[1:] == ordered[:-1]).any():  # the common case: one sort
        return
    head = words[:, :2].copy().view(np.uint64).ravel()
    candidates = np.flatnonzero(pd.Index(head).duplicated(keep=False))
    if not candidates.size:
        return
    full = pd.DataFrame(words[candidates])
    dup = full.duplicated(keep=False).to_numpy()
    if dup.any():
        rows = candidates[dup]
        raise ValueError(
            f"{rows.size} rows share a user secret (e.g. rows {int(rows[0])} and "
            f"{int(rows[1])}): each row is one user, and two users with one secret "
            "would share their permanent answers. " + _HINT
        )


# ------------------------------------------------------------ the PRF draws
def _context_words(context):
    """The 128-bit digest of a domain-separation label, as 4 uint32 words."""
    if isinstance(context, str):
        context = context.encode("utf-8")
    if not isinstance(context, (bytes, bytearray)):
        raise TypeError(f"context must be a str or bytes label, got {type(context).__name__}.")
    digest = hashlib.sha256(b"sklearn_uldp.prf.v1\x00" + bytes(context)).digest()
    return np.frombuffer(digest[:16], dtype="<u4").astype(np.uint32)


def _value_words(values, n):
    """(n, 2) uint32 words of the 64-bit values (one per user)."""
    values = np.asarray(values)
    if values.ndim == 0:
        values = np.broadcast_to(values, (n,))
    if values.shape != (n,):
        raise ValueError(f"values must hold one integer per user ({n}), got shape {values.shape}.")
    if values.size and values.dtype.kind not in "iub":
        raise TypeError(f"values must be non-negative integers, got dtype {values.dtype}.")
    if values.size and values.dtype.kind == "i" and values.min() < 0:
        raise ValueError("values must be non-negative integers (codes, hashes).")
    # The low and the high 32 bits of each value: a view of the little-endian
    # uint64 values (one conversion, no column stack).
    return values.astype("<u8").view("<u4").reshape(n, 2).astype(np.uint32, copy=False)


def _keys_of(user_secrets):
    keys = check_user_secrets(user_secrets)
    return keys._words


def prf_words(
    user_secrets: Any, context: str | bytes, values: Any, n_words: int, *, start: int = 0
) -> np.ndarray:
    """Pseudo-random 64-bit words, deterministic in (secret, context, value).

    Word ``j`` of user ``i`` is the ``(start + j)``-th 64-bit little-endian
    word of the XChaCha20 keystream keyed by user ``i``'s secret, with the
    nonce ``digest(context) || values[i]``.

    Parameters
    ----------
    user_secrets : sequence of bytes or UserKeys
        One secret per user (see :func:`check_user_secrets`).
    context : str or bytes
        Domain-separation label: the mechanism, its public parameters and the
        purpose of the draws. Different labels give independent streams.
    values : int or array-like of int of shape (n_users,)
        A non-negative integer per user (< 2**64), e.g. the code of the value
        being memoized; the same value gives the same words.
    n_words : int
        Words per user.
    start : int, default=0
        Index of the first word (draw index).

    Returns
    -------
    words : ndarray of uint64 of shape (n_users, n_words)

    Examples
    --------
    >>> from sklearn_uldp.utils import generate_user_secrets, prf_words
    >>> s = generate_user_secrets(2, random_state=0)
    >>> a = prf_words(s, "example", [3, 3], 4)
    >>> b = prf_words(s, "example", [3, 3], 2, start=2)
    >>> bool((a[:, 2:] == b).all()), bool((a[0] != a[1]).all())
    (True, True)
    """
    keys = _keys_of(user_secrets)
    n_words, start = int(n_words), int(start)
    if n_words < 0 or start < 0:
        raise ValueError("n_words and start must be non-negative.")
    return _stream_words(
        keys, _context_words(context), _value_words(values, keys.shape[0]), start, n_words
    )


def _stream_words(keys, ctx, vals, start, n_words):
    """Words ``start .. start + n_words - 1`` of every user's stream (uint64).

    Users go in chunks whose keystream (whole blocks) fits in about 2 MB:
    a draw of one word per user would otherwise write (and fault in) eight
    times the memory of its result.
    """
    n = keys.shape[0]
    first, last = start // 8, (start + n_words + 7) // 8
    offset = start - 8 * first
    out = np.empty((n, n_words), dtype=np.uint64)
    step = max(1, _STREAM_BYTES // (64 * max(last - first, 1)))
    for lo in range(0, n, step):
        hi = min(n, lo + step)
        stream = _keystream(
            keys[lo:hi], ctx, vals[lo:hi], np.full(hi - lo, first, dtype=np.uint32), last - first
        )
        words = stream.astype("<u4", copy=False).view("<u8")
        out[lo:hi] = words[:, offset : offset + n_words]
    return out


#: Keystream bytes per chunk of :func:`_stream_words` (stays in L2/L3 cache).
_STREAM_BYTES = 1 << 21


def _words_at(keys, ctx, vals, rows, positions):
    """Word ``positions[t]`` of user ``rows[t]`` (one block per request)."""
    rows = np.asarray(rows, dtype=np.intp)
    positions = np.asarray(positions, dtype=np.int64)
    if not rows.size:
        return np.zeros(0, dtype=np.uint64)
    stream = _keystream(keys[rows], ctx, vals[rows], (positions // 8).astype(np.uint32), 1)
    words = stream.astype("<u4", copy=False).view("<u8")
    return words[np.arange(rows.size), positions % 8].astype(np.uint64)


def prf_uniforms(user_secrets: Any, context: str | bytes, values: Any, n_draws: int) -> np.ndarray:
    """Uniforms on [0, 1), deterministic in (secret, context, value).

    Each is a 53-bit word of :func:`prf_words` times ``2**-53``: exactly
    uniform on the grid of float64 multiples of ``2**-53``, as
    ``Generator.random`` is.

    Parameters
    ----------
    user_secrets, context, values
        See :func:`prf_words`.
    n_draws : int
        Uniforms per user.

    Returns
    -------
    u : ndarray of float64 of shape (n_users, n_draws)

    Examples
    --------
    >>> from sklearn_uldp.utils import generate_user_secrets, prf_uniforms
    >>> u = prf_uniforms(generate_user_secrets(1000, random_state=0), "example", 0, 3)
    >>> u.shape, bool(((u >= 0) & (u < 1)).all())
    ((1000, 3), True)
    """
    words = prf_words(user_secrets, context, values, n_draws)
    return _unit_floats(words)


def _unit_floats(words):
    """The top 53 bits of 64-bit words as float64 multiples of 2**-53."""
    return (words >> np.uint64(11)).astype(np.float64) * 2.0**-53


def prf_integers(
    user_secrets: Any, context: str | bytes, values: Any, high: Any, n_draws: int
) -> np.ndarray:
    """Exactly uniform integers in ``[0, high)``, deterministic in (secret, context, value).

    Lemire's multiply-shift: a 64-bit word w gives ``floor(w * high / 2**64)``
    unless the low half of the product falls in the ``2**64 mod high``
    values that would make some results more likely; those (probability
    below ``high / 2**64``) are redrawn from a separate stream of the same
    key until accepted. So every integer has probability exactly
    ``1 / high``.

    Parameters
    ----------
    user_secrets, context, values
        See :func:`prf_words`.
    high : int or array-like of int
        The exclusive upper bound, ``1 <= high <= 2**32``; broadcast to
        ``(n_users, n_draws)`` (a bound per draw, or per user and draw).
    n_draws : int

    Returns
    -------
    r : ndarray of int64 of shape (n_users, n_draws)

    Examples
    --------
    >>> from sklearn_uldp.utils import generate_user_secrets, prf_integers
    >>> r = prf_integers(generate_user_secrets(500, random_state=0), "dice", 0, 6, 2)
    >>> r.shape, int(r.min()), int(r.max())
    ((500, 2), 0, 5)
    """
    keys = _keys_of(user_secrets)
    n = keys.shape[0]
    n_draws = int(n_draws)
    high = np.broadcast_to(np.asarray(high), (n, n_draws))
    if high.size and (high.dtype.kind not in "iu" or high.min() < 1 or high.max() > 2**32):
        raise ValueError("high must hold integers in [1, 2**32].")
    m = high.astype(np.uint64)
    vals = _value_words(values, n)
    words = _stream_words(keys, _context_words(context), vals, 0, n_draws)
    out, rejected = _lemire(words, m)
    if rejected.any():
        ctx = _context_words(_retry_label(context))
        attempt = 0
        rows, cols = np.nonzero(rejected)
        while rows.size:
            positions = attempt * n_draws + cols
            w = _words_at(keys, ctx, vals, rows, positions)
            r, bad = _lemire(w, m[rows, cols])
            out[rows[~bad], cols[~bad]] = r[~bad]
            rows, cols = rows[bad], cols[bad]
            attempt += 1
    return out


def _retry_label(context):
    if isinstance(context, str):
        context = context.encode("utf-8")
    return bytes(context) + b"\x00retry"


def _lemire(words, m):
    """floor(w m / 2**64) and whether the draw must be rejected (m <= 2**32)."""
    w0 = words & _MASK32
    w1 = words >> np.uint64(32)
    # w m = u 2**32 + (t mod 2**32) with t = w0 m and u = w1 m + t // 2**32,
    # both below 2**64 for m <= 2**32.
    t = w0 * m
    u = w1 * m + (t >> np.uint64(32))
    hi = u >> np.uint64(32)
    lo = (u << np.uint64(32)) | (t & _MASK32)
    threshold = (np.uint64(0) - m) % m  # 2**64 mod m
    return hi.astype(np.int64), lo < threshold


def prf_bernoulli(
    user_secrets: Any,
    context: str | bytes,
    values: Any,
    probabilities: Any,
    *,
    marked: Any = None,
    marked_probabilities: Any = None,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """Bernoulli cells, deterministic in (secret, context, value).

    Cell ``j`` of user ``i`` is 1 with probability ``probabilities[j]`` (or
    ``probabilities[i, j]``), independently; the cells ``marked[i]`` of user
    ``i`` (e.g. the bit of the user's value in a unary encoding, or the
    hashed bits of a Bloom filter) use ``marked_probabilities`` instead.
    As :func:`~sklearn_uldp.utils._sampling.bernoulli_matrix` does, each
    cell reads one byte B of the stream: the cell is 1 if B < floor(256 p),
    0 if B > floor(256 p), and on a tie (probability 1/256) a 53-bit uniform
    U decides (1 if U < 256 p - floor(256 p)): the t-th tie of a row reads
    word ``ceil(m / 8) + t`` of the same stream (after the cells' bytes), the
    tie of the c-th marked cell word ``ceil(m / 8) + m + c``. So the cell is
    1 with probability
    ``(floor(256 p) + ceil(frac * 2**53) * 2**-53) / 256``: p itself to
    float64 resolution, as comparing a float64 uniform with p would realize
    it, at one byte of keystream a cell.

    Parameters
    ----------
    user_secrets, context, values
        See :func:`prf_words`.
    probabilities : array-like of float of shape (m,) or (n_users, m)
        Probabilities in [0, 1].
    marked : array-like of int of shape (n_users,) or (n_users, h), default=None
        Columns (in ``[0, m)``, distinct within a row) whose probability is
        ``marked_probabilities``.
    marked_probabilities : float or array-like, default=None
        Broadcast to the shape of ``marked`` (one per user, or per cell).
    out : ndarray of uint8 or bool of shape (n_users, m), default=None
        Where to write the cells (C-contiguous), e.g. a report array.

    Returns
    -------
    cells : ndarray of bool of shape (n_users, m)

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp.utils import generate_user_secrets, prf_bernoulli
    >>> cells = prf_bernoulli(generate_user_secrets(20_000, random_state=0),
    ...                       "coins", 0, [0.5, 0.1])
    >>> cells.mean(axis=0).round(2).tolist()
    [0.5, 0.1]
    >>> own = prf_bernoulli(generate_user_secrets(20_000, random_state=0), "unary",
    ...                     0, [0.1] * 3, marked=np.zeros(20_000, int),
    ...                     marked_probabilities=0.75)
    >>> own.mean(axis=0).round(2).tolist()
    [0.75, 0.1, 0.1]
    """
    return _prf_cells(
        user_secrets, context, values, probabilities, marked, marked_probabilities, out
    )


def _prf_cells(
    user_secrets, context, values, probabilities, marked, marked_probabilities, out, flips=None
):
    """:func:`prf_bernoulli`, each cell then flipped with fresh noise if asked.

    ``flips``, a pair ``((f0, f1), rng)``: each cell c (as
    :func:`prf_bernoulli` draws it) is then XORed with a Bernoulli(``f_c``)
    draw from the Generator ``rng`` -- the instantaneous round of a
    memoized unary report on its permanent bits -- in the same compiled
    pass. The draws are realized as :func:`~sklearn_uldp.utils._sampling.
    bernoulli_matrix` realizes them: cell ``(i, j)`` reads byte ``i m + j``
    of ``rng.bit_generator.random_raw`` (little-endian words, drawn chunk by
    chunk in row order: the same bytes whatever the chunks and threads); a
    byte equal to ``floor(256 f_c)`` (a tie, for a fraction > 0) is decided
    afterwards by ``rng.random()``, one per tie in row-major order, after
    all the bytes. Compiled and numpy passes give the same cells.
    """
    keys = _keys_of(user_secrets)
    n = keys.shape[0]
    p = np.asarray(probabilities, dtype=np.float64)
    if p.ndim not in (1, 2) or (p.ndim == 2 and p.shape[0] != n):
        raise ValueError(f"probabilities must have shape (m,) or ({n}, m), got {p.shape}.")
    _check_unit(p, "probabilities")
    m = p.shape[-1]
    if marked is None:
        marked = np.zeros((n, 0), dtype=np.int64)
        p_marked = np.zeros((n, 0))
    else:
        marked = np.asarray(marked)
        if marked.ndim == 1:
            marked = marked[:, None]
        if marked.ndim != 2 or marked.shape[0] != n or marked.dtype.kind not in "iu":
            raise ValueError(f"marked must hold column indices of shape ({n},) or ({n}, h).")
        if marked.size and (marked.min() < 0 or marked.max() >= m):
            raise ValueError(f"marked columns must lie in [0, {m}).")
        marked = np.ascontiguousarray(marked, dtype=np.int64)  # read only: no copy needed
        if repeated_in_rows(marked).any():
            raise ValueError(
                "marked columns must be distinct within a row (a cell has one "
                "probability): merge the repeated columns."
            )
        if marked_probabilities is None:
            raise ValueError("marked needs marked_probabilities.")
        p_marked = np.broadcast_to(
            np.asarray(marked_probabilities, dtype=np.float64)[
                (...,) + (None,) * (marked.ndim - np.ndim(marked_probabilities))
            ]
            if np.ndim(marked_probabilities) == 1
            else np.asarray(marked_probabilities, dtype=np.float64),
            marked.shape,
        )
    thr_m, live_m, frac_m = _broadcast_thresholds(p_marked, "marked_probabilities")
    ctx = _context_words(context)
    vals = _value_words(values, n)
    thr, live, frac = _byte_thresholds(p.reshape(-1, m))
    if out is None:
        out = np.empty((n, m), dtype=np.uint8)
    elif out.shape != (n, m) or out.dtype not in (np.uint8, np.bool_) or not out.flags.c_contiguous:
        raise ValueError(f"out must be a C-contiguous uint8 or bool array of shape ({n}, {m}).")
    cells = out.view(np.uint8)
    per_row = thr.shape[0] > 1
    flip, rng = (None, None) if flips is None else _flip_thresholds(*flips)
    # Compiled or numpy rounds for the whole job (the same cells either way):
    # a last, partial chunk of a large job is compiled too.
    compiled = numba is not None and use_compiled(_stream_work(n, -(-m // 64)))

    # Users in chunks: a chunk's keystream stays in cache between the
    # threshold pass and the ties that read it. Chunks write disjoint rows
    # and every cell is a function of (key, context, value, position) alone,
    # so the chunks run on threads (the compiled pass releases the GIL) and
    # the cells are the same whatever the number of threads. The flips'
    # random bytes are drawn here, chunk by chunk in row order, as the
    # threads take the chunks (imap_threads consumes the iterator lazily);
    # a chunk's rows are a multiple of 8, so the bytes are the generator's
    # words in order whatever the chunks (at most 4 MB of them a chunk).
    step = _CELL_CHUNK
    if flip is not None:
        step = max(8, min(_CELL_CHUNK, _FLIP_BYTES // max(m, 1) // 8 * 8))

    def inputs():
        for lo in range(0, n, step):
            hi = min(n, lo + step)
            raw = None
            if flip is not None and m:
                raw = rng.bit_generator.random_raw(-(-(hi - lo) * m // 8)).view(np.uint8)
            yield lo, raw

    def chunk(item):
        lo, raw = item
        hi = min(n, lo + step)
        ties = _bernoulli_rows(
            keys[lo:hi],
            ctx,
            vals[lo:hi],
            thr[lo:hi] if per_row else thr,
            live[lo:hi] if per_row else live,
            frac[lo:hi] if per_row else frac,
            marked[lo:hi],
            thr_m[lo:hi],
            live_m[lo:hi],
            frac_m[lo:hi],
            cells[lo:hi],
            compiled,
            None if raw is None else (raw, *flip),
        )
        return ties if ties is None else ties + 2 * lo * m

    tie_lists = map_threads(chunk, inputs(), None)
    if flip is not None:
        # The flips' ties, one uniform each, in row-major order after all
        # the bytes: a tie left its cell c as it was; a uniform below the
        # fraction of f_c flips it.
        ties = np.concatenate([np.zeros(0, np.int64), *[t for t in tie_lists if t is not None]])
        if ties.size:
            c = (ties & 1).astype(np.uint8)
            flipped = rng.random(ties.size) < flip[2][c]
            cells.reshape(-1)[ties >> 1] = c ^ flipped
    return out.view(bool)


def _flip_thresholds(probabilities, rng):
    """(thresholds, live, fractions) of the flips' two probabilities, and ``rng``."""
    f = np.asarray(probabilities, dtype=np.float64).reshape(-1)
    if f.shape != (2,):
        raise ValueError(f"flips needs two probabilities (a 0 cell's, a 1 cell's), got {f.size}.")
    _check_unit(f, "flip probabilities")
    thr, live, frac = _byte_thresholds(f)
    return (thr.astype(np.uint16), live.astype(np.uint8), frac), rng


#: Users per chunk of :func:`prf_bernoulli` (a 2-block keystream: 4 MB).
_CELL_CHUNK = 1 << 15
#: Random bytes of the flips per chunk at most (fewer users for wide rows).
_FLIP_BYTES = 1 << 22


def _bernoulli_rows(
    keys, ctx, vals, thr, live, frac, marked, thr_m, live_m, frac_m, out, compiled, flip=None
):
    """The cells of a chunk of users (see :func:`prf_bernoulli`), flipped
    if ``flip`` = (random bytes, thresholds, live, fractions) is given: then
    returns the flips' ties (see :func:`_cells_kernel`), else None."""
    n, m = out.shape
    if n and m and compiled and _LITTLE_ENDIAN:
        return _fused_rows(
            keys, ctx, vals, thr, live, frac, marked, thr_m, live_m, frac_m, out, flip
        )
    stream = _keystream(
        keys, ctx, vals, np.zeros(n, dtype=np.uint32), -(-m // 64), compiled=compiled
    )
    raw = stream.astype("<u4", copy=False).view(np.uint8)[:, :m]
    row_index = np.arange(n)[:, None]
    marked_bytes = raw[row_index, marked]
    if n and m and compiled:
        # Ties: one cell in 256 of those with live ties; the capacity holds
        # many standard deviations more (else the numpy pass below).
        expected = float(live.mean()) * n * m / 256.0
        capacity = int(expected + 10.0 * np.sqrt(expected) + 1024)
        tie_rows = np.empty(capacity, dtype=np.int64)
        tie_cols = np.empty(capacity, dtype=np.int64)
        n_ties = _threshold_kernel(raw, thr, live, out, tie_rows, tie_cols)
        if n_ties <= capacity:
            rows, cols = tie_rows[:n_ties], tie_cols[:n_ties]
        else:  # pragma: no cover - beyond ten standard deviations
            rows, cols = _threshold_numpy(raw, thr, live, out)
    else:
        rows, cols = _threshold_numpy(raw, thr, live, out)
    # A tie reads a 64-bit word of the same stream after the cells: the
    # t-th tie of a row (in column order) word w0 + t, with w0 the first word
    # after the cells' bytes; the tie of the c-th marked cell word
    # w0 + m + c (a row has at most m ties of the first kind). Most are in
    # the blocks already drawn; the others are computed block by block.
    w0 = -(-m // 8)
    words = stream.astype("<u4", copy=False).view("<u8")
    if marked.shape[1]:
        # A tie listed at a marked cell was one of the column's threshold:
        # the marked cells compare their bytes with their own thresholds.
        at_marked = (marked[rows] == cols[:, None]).any(axis=1)
        rows, cols = rows[~at_marked], cols[~at_marked]
        out[row_index, marked] = marked_bytes < thr_m
        mr, mc = np.nonzero((marked_bytes == thr_m) & live_m)
        if mr.size:
            u = _unit_floats(_words_from(words, keys, ctx, vals, mr, w0 + m + mc))
            out[mr, marked[mr, mc]] = u < frac_m[mr, mc]
    if rows.size:
        rows, cols = _row_major(rows, cols)
        rank = np.arange(rows.size) - np.searchsorted(rows, rows, side="left")
        u = _unit_floats(_words_from(words, keys, ctx, vals, rows, w0 + rank))
        out[rows, cols] = u < frac[rows if thr.shape[0] > 1 else 0, cols]
    return None if flip is None else _flip_numpy(out, *flip[:3])


def _flip_numpy(out, raw, thr, live):
    """numpy version of the flips of :func:`_cells_kernel`: flips ``out`` in
    place and returns the ties as ``2 * (i * m + j) + cell``."""
    n, m = out.shape
    if not n or not m:
        return np.zeros(0, dtype=np.int64)
    byte = raw[: n * m].reshape(n, m)
    cell = out.view(np.uint8)
    t = thr[cell]
    tie = (byte == t) & live[cell].astype(bool)
    at = np.flatnonzero(tie)
    classes = cell.reshape(-1)[at].astype(np.int64)
    cell ^= byte < t
    return 2 * at + classes


def _fused_rows(keys, ctx, vals, thr, live, frac, marked, thr_m, live_m, frac_m, out, flip):
    """:func:`_bernoulli_rows` by the one-pass kernel (and the flips' ties)."""
    n, m = out.shape
    if flip is None:
        raw, f_thr, f_live = np.zeros(0, np.uint8), np.zeros(2, np.uint16), np.zeros(2, np.uint8)
    else:
        raw, f_thr, f_live = flip[:3]
    capacity = _flip_tie_capacity(n * m, f_live)
    while True:
        ties = np.empty(capacity, dtype=np.int64)
        count = _cells_kernel(
            keys,
            ctx,
            vals,
            -(-m // 64),
            _SIGMA,
            thr.astype(np.uint16),
            live,
            frac,
            marked,
            thr_m.astype(np.uint16),
            live_m,
            frac_m,
            out,
            raw,
            f_thr,
            f_live,
            ties,
        )
        if count <= capacity:
            return ties[:count] if flip is not None else None
        capacity = count


def _flip_tie_capacity(n_cells, live):
    """Room for the flips' ties of ``n_cells`` cells: one cell in 256 at
    most, and ten standard deviations more. A chunk that has more is run
    again with room for them all (the same cells: a function of the inputs
    alone)."""
    expected = n_cells * float(np.max(live)) / 256.0
    return int(expected + 10.0 * np.sqrt(expected) + 1024)


def repeated_in_rows(columns):
    """Mask of the entries equal to an earlier entry of their row (n, h).

    Pairwise comparisons for short rows (h <= 8: one vectorized pass per
    pair, no per-row sort), a stable argsort otherwise; either way the first
    occurrence of a value is not marked.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp.utils._secrets import repeated_in_rows
    >>> repeated_in_rows(np.array([[3, 1, 3], [0, 2, 1]])).tolist()
    [[False, False, True], [False, False, False]]
    """
    columns = np.asarray(columns)
    n, h = columns.shape
    repeated = np.zeros((n, h), dtype=bool)
    if h <= 8:
        for j in range(1, h):
            for i in range(j):
                repeated[:, j] |= columns[:, j] == columns[:, i]
        return repeated
    order = np.argsort(columns, axis=1, kind="stable")
    ordered = np.take_along_axis(columns, order, axis=1)
    later = np.zeros((n, h), dtype=bool)
    later[:, 1:] = ordered[:, 1:] == ordered[:, :-1]
    np.put_along_axis(repeated, order, later, axis=1)
    return repeated


def _row_major(rows, cols):
    """(rows, cols) sorted row-major (the kernel lists them so already)."""
    if rows.size < 2 or (
        (np.diff(rows) >= 0).all() and ((np.diff(rows) > 0) | (np.diff(cols) > 0)).all()
    ):
        return rows, cols
    order = np.lexsort((cols, rows))
    return rows[order], cols[order]


def _words_from(words, keys, ctx, vals, rows, positions):
    """Word ``positions[t]`` of row ``rows[t]``'s stream: from the blocks
    already drawn (``words``) when there, else computed."""
    positions = np.asarray(positions, dtype=np.int64)
    out = np.empty(rows.size, dtype=np.uint64)
    drawn = positions < words.shape[1]
    out[drawn] = words[rows[drawn], positions[drawn]]
    if not drawn.all():
        out[~drawn] = _words_at(keys, ctx, vals, rows[~drawn], positions[~drawn])
    return out


def _check_unit(p, name):
    if p.size and (np.isnan(p).any() or p.min() < 0.0 or p.max() > 1.0):
        raise ValueError(f"{name} must lie in [0, 1].")


def _byte_thresholds(p):
    """floor(256 p) (0..256), whether a tie needs a uniform, and the fraction."""
    scaled = p * 256.0
    floor = np.floor(scaled)
    frac = scaled - floor
    return (
        np.ascontiguousarray(floor, dtype=np.int16),
        np.ascontiguousarray(frac > 0.0),
        frac,
    )


def _broadcast_thresholds(p, name):
    """:func:`_byte_thresholds` of ``p`` (checked in [0, 1]), computed on
    one row or column where ``p`` is broadcast along it (a marked
    probability shared by every user: not a million times), then laid out
    in full (C order)."""
    compact = p[tuple(slice(None, 1) if stride == 0 else slice(None) for stride in p.strides)]
    _check_unit(compact, name)
    if compact.size == p.size:
        return _byte_thresholds(p)
    return tuple(
        np.ascontiguousarray(np.broadcast_to(a, p.shape)) for a in _byte_thresholds(compact)
    )


def _threshold_numpy(raw, thr, live, out):
    """numpy version of :func:`_threshold_kernel`: the ties' rows and columns."""
    out[...] = raw < thr
    return np.nonzero((raw == thr) & live)


def simulated_user_keys(random_state: Any, n_users: int) -> UserKeys:
    """Keys of the simulated users 0, 1, ..., n_users - 1 of a seeded simulation.

    Row ``i`` of every call is the same simulated user ``i``: its key is the
    first 32 bytes of the keystream of a master key derived from
    ``random_state`` (an int or SeedSequence), with the value ``i``. For
    simulations only: whoever knows the seed knows every key.

    Parameters
    ----------
    random_state : int or numpy.random.SeedSequence
    n_users : int

    Returns
    -------
    keys : UserKeys

    Examples
    --------
    >>> from sklearn_uldp.utils._secrets import simulated_user_keys
    >>> a, b = simulated_user_keys(0, 3), simulated_user_keys(0, 5)
    >>> bool((a._words == b._words[:3]).all())
    True
    """
    from ._random import check_seed_sequence

    base = check_seed_sequence(random_state)
    master = np.random.SeedSequence(
        base.entropy, spawn_key=(*base.spawn_key, 0x5117_5EC2), pool_size=base.pool_size
    ).generate_state(8, np.uint32)
    n = int(n_users)
    keys = np.broadcast_to(master, (n, 8))
    values = _value_words(np.arange(n, dtype=np.uint64), n)
    words = _keystream(
        np.ascontiguousarray(keys), _context_words("simulated users"), values, np.zeros(n), 1
    )
    return UserKeys(np.ascontiguousarray(words[:, :8]))


_NO_SECRETS = (
    "{name} memoizes each user's permanent answer with a secret per user, and "
    "no user_secrets were given. Pass transform(X, user_secrets=secrets): one "
    "secret per row, made once per user with "
    "sklearn_uldp.utils.generate_user_secrets(n_users) and kept by that user "
    "for every round (in a Pipeline: mechanism.set_transform_request("
    "user_secrets=True) with sklearn.set_config(enable_metadata_routing=True)). "
    "Without secrets each round would draw new permanent answers, and "
    "repeated reports would average the noise away. For a simulation, pass "
    "an integer random_state: row i is then simulated user i in every call."
)


def resolve_user_keys(user_secrets: Any, random_state: Any, n_samples: int, owner: str) -> UserKeys:
    """The users' keys of one call of a memoized mechanism's ``transform``.

    The given secrets (checked, one per row), or, when none are given and
    ``random_state`` is an integer or a SeedSequence, the keys of the
    simulated users 0 .. n_samples - 1 (:func:`simulated_user_keys`).
    Anything else is refused with the fix in the message: without secrets
    every call would draw new permanent answers.

    Parameters
    ----------
    user_secrets : sequence of bytes, 2-D uint8 array, UserKeys or None
    random_state : the mechanism's ``random_state``
    n_samples : int
        Rows of the call.
    owner : str
        The mechanism's name, for the message.

    Returns
    -------
    keys : UserKeys

    Examples
    --------
    >>> from sklearn_uldp.utils._secrets import resolve_user_keys
    >>> resolve_user_keys(None, 0, 3, "Mechanism")
    UserKeys(n_users=3)
    >>> resolve_user_keys(None, None, 3, "Mechanism")
    Traceback (most recent call last):
    ...
    ValueError: Mechanism memoizes each user's permanent answer with a secret per user, ...
    """
    if user_secrets is not None:
        return check_user_secrets(user_secrets, n_samples=n_samples)
    from ._random import is_fresh

    seeded = isinstance(random_state, (Integral, np.random.SeedSequence)) and not isinstance(
        random_state, bool
    )
    if seeded and not is_fresh(random_state):
        return simulated_user_keys(random_state, n_samples)
    raise ValueError(_NO_SECRETS.format(name=owner))


#: Prefix of the labels of :func:`derive_user_keys` (distinct from every
#: memo context and from the simulated users' master stream).
_DERIVED_KEY_CONTEXT = "sklearn_uldp.derived-key.v1|"


def derive_user_keys(user_secrets: Any, label: str | bytes) -> UserKeys:
    """Per-user keys for one purpose, independent of the keys of any other label.

    A table privatized by several memoized mechanisms takes **one** secret
    per user (row); each column must still get its own permanent randomness,
    or two columns with the same mechanism and value would share their
    permanent answers. The key of user ``i`` for ``label`` is the first 32
    bytes of the PRF stream keyed by user ``i``'s secret, with the context
    ``label`` (and the value 0): a pseudo-random function of the secret, so
    keys of different labels are independent, and the same secret and label
    always give the same key. Nothing is stored.

    Parameters
    ----------
    user_secrets : sequence of bytes or UserKeys
        One secret per user (see :func:`check_user_secrets`).
    label : str or bytes
        What the keys are for, e.g. a column's name.

    Returns
    -------
    keys : UserKeys
        One 32-byte key per user, to pass as ``user_secrets``.

    Examples
    --------
    >>> from sklearn_uldp.utils import derive_user_keys, generate_user_secrets
    >>> secrets = generate_user_secrets(3, random_state=0)
    >>> a, b = derive_user_keys(secrets, "age"), derive_user_keys(secrets, "job")
    >>> a, bool((a._words == derive_user_keys(secrets, "age")._words).all())
    (UserKeys(n_users=3), True)
    >>> bool((a._words != b._words).any(axis=1).all())
    True
    """
    if isinstance(label, str):
        label = label.encode("utf-8")
    if not isinstance(label, (bytes, bytearray)):
        raise TypeError(f"label must be a str or bytes, got {type(label).__name__}.")
    keys = _keys_of(user_secrets)
    n = keys.shape[0]
    words = _keystream(
        keys,
        _context_words(_DERIVED_KEY_CONTEXT.encode("utf-8") + bytes(label)),
        _value_words(np.zeros(n, dtype=np.uint64), n),
        np.zeros(n, dtype=np.uint32),
        1,
    )
    return UserKeys(np.ascontiguousarray(words[:, :8], dtype=np.uint32))
