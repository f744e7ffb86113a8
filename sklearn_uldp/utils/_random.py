"""Random number generation.

Privacy depends on the noise being unpredictable. The ``random_state`` of a
mechanism means:

* ``None``: every ``transform`` call draws fresh OS entropy (numpy's
  ``SeedSequence()``) for a PCG64 generator. Nothing is stored in the
  object, so copies, pickles, joblib/Dask workers and clones never share
  noise.
* ``"secure"``: the same, with a cryptographically secure bit generator
  (randomgen's ``AESCounter`` with AES-NI, else ``ChaCha``) keyed from fresh
  OS entropy at every call. For deployment.
* an int or ``SeedSequence``: a reproducible stream for simulations. The
  stream of a call is derived (``SeedSequence`` spawn key) from the seed,
  the input column's name, the number of calls since ``fit`` and a hash of
  the call's encoded input, so two columns sharing one seed still get
  independent noise. Anyone who knows the seed can remove the noise: never
  privatize real users with a seed.
* a ``Generator`` or ``RandomState``: consumed (128 bits per call), then
  derived as for a seed.

Independent streams (columns, chunks, partitions, joblib jobs) are always
derived with ``SeedSequence.spawn`` or spawn keys, never by re-using or
offsetting one seed.
"""

from __future__ import annotations

import functools
import hashlib
import numbers

import numpy as np

from ._typing import RandomStateLike

__all__ = ["check_seed_sequence", "check_random_generator", "spawn_generators"]

#: The ``random_state`` value that asks for a cryptographically secure generator.
SECURE = "secure"

# randomgen is a core dependency: missing, the installation is broken.
_INSTALL_HINT = 'pip install "randomgen>=2.0"'


def is_secure(random_state):
    """Whether ``random_state`` asks for the cryptographically secure generator."""
    return isinstance(random_state, str) and random_state == SECURE


def is_fresh(random_state):
    """Whether ``random_state`` draws fresh OS entropy at every call (no seed)."""
    return random_state is None or is_secure(random_state)


@functools.lru_cache(maxsize=1)
def _secure_bit_generator_class():
    """randomgen's AESCounter when the CPU has AES-NI, else its ChaCha.

    Without AES-NI, AESCounter falls back to a table-based software AES,
    which is slower than ChaCha and leaks its key through cache timing.
    """
    try:
        from randomgen import AESCounter, ChaCha
    except ImportError as exc:
        raise ImportError(
            "random_state='secure' needs randomgen (a cryptographically secure "
            "numpy bit generator, a dependency of sklearn-uldp that failed to "
            "import here). Install it with "
            f"`{_INSTALL_HINT}`, or pass random_state=None (fresh OS entropy "
            "with numpy's PCG64)."
        ) from exc
    # The probe's key comes from a fixed seed: it is discarded at once and
    # only tells whether the hardware path is used.
    if AESCounter(0).use_aesni:
        return AESCounter
    return ChaCha


def check_secure_available():
    """Raise a clear ImportError if ``random_state='secure'`` cannot be used."""
    _secure_bit_generator_class()


def secure_generator():
    """A Generator over a CSPRNG keyed from fresh OS entropy.

    The bit generator is randomgen's ``AESCounter`` (AES-128 in counter
    mode) when the CPU has AES-NI, else randomgen's ``ChaCha`` (20 rounds).
    The key comes from ``numpy.random.SeedSequence()`` (128 bits of OS
    entropy) and is used for this generator only.

    Returns
    -------
    rng : numpy.random.Generator

    Raises
    ------
    ImportError
        If randomgen (a core dependency) cannot be imported.
    """
    bit_generator = _secure_bit_generator_class()
    return np.random.Generator(bit_generator(np.random.SeedSequence()))


def check_seed_sequence(random_state):
    """Turn ``random_state`` into a :class:`numpy.random.SeedSequence`.

    Parameters
    ----------
    random_state : None, int, SeedSequence, Generator or RandomState
        ``None`` draws OS entropy. An int seeds reproducibly. A Generator or
        RandomState is consumed for a 128-bit seed (so the caller's stream
        advances and the derived streams stay independent of it).

    Returns
    -------
    seed_sequence : numpy.random.SeedSequence
    """
    if random_state is None:
        return np.random.SeedSequence()
    if isinstance(random_state, np.random.SeedSequence):
        return random_state
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        if random_state < 0:
            raise ValueError(f"random_state must be a non-negative integer, got {random_state}.")
        return np.random.SeedSequence(int(random_state))
    if isinstance(random_state, np.random.Generator):
        return np.random.SeedSequence(
            random_state.integers(0, 2**63, size=2, dtype=np.uint64).tolist()
        )
    if isinstance(random_state, np.random.RandomState):
        return np.random.SeedSequence(random_state.randint(0, 2**31, size=4).tolist())
    if is_secure(random_state):
        raise ValueError(
            "random_state='secure' draws a fresh key at every call and has no "
            "seed to derive streams from. Pass it to the mechanism (or to "
            "DataFramePrivatizer / privatize_partitions), or pass an int for "
            "reproducible simulations."
        )
    raise ValueError(
        "random_state must be None, 'secure', a non-negative int, a numpy "
        f"SeedSequence, Generator or RandomState; got {random_state!r}."
    )


def check_random_generator(random_state: RandomStateLike) -> np.random.Generator:
    """Return a :class:`numpy.random.Generator` for ``random_state``.

    A Generator passed in is returned as is; ``"secure"`` gives a
    cryptographically secure generator (randomgen's AESCounter or ChaCha,
    keyed from fresh OS entropy);
    everything else goes through a :class:`numpy.random.SeedSequence`
    (``None``: fresh OS entropy).

    Parameters
    ----------
    random_state : None, "secure", int, SeedSequence, Generator or RandomState

    Returns
    -------
    rng : numpy.random.Generator

    Examples
    --------
    >>> from sklearn_uldp.utils import check_random_generator
    >>> rng = check_random_generator(0)
    >>> type(rng).__name__, check_random_generator(rng) is rng
    ('Generator', True)
    """
    if isinstance(random_state, np.random.Generator):
        return random_state
    if is_secure(random_state):
        return secure_generator()
    return np.random.default_rng(check_seed_sequence(random_state))


def spawn_generators(random_state: RandomStateLike, n: int) -> list[np.random.Generator]:
    """Return ``n`` statistically independent generators derived from one seed.

    Parameters
    ----------
    random_state : None, "secure", int, SeedSequence, Generator or RandomState
        ``"secure"`` gives ``n`` cryptographically secure generators, each
        keyed from fresh OS entropy.
    n : int

    Returns
    -------
    generators : list of numpy.random.Generator

    Examples
    --------
    >>> from sklearn_uldp.utils import spawn_generators
    >>> a, b = spawn_generators(0, 2)
    >>> bool(a.random() != b.random())
    True
    """
    if is_secure(random_state):
        return [secure_generator() for _ in range(n)]
    children = check_seed_sequence(random_state).spawn(n)
    return [np.random.default_rng(child) for child in children]


# ------------------------------------------------------------ transform calls
def _name_key(name):
    """A stable 64-bit key of a column name (Python's hash() is salted)."""
    digest = hashlib.sha256(str(name).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "little")


def codes_digest(codes, n_values=None):
    """A 128-bit hash of integer codes, as an int (for spawn keys).

    The codes are narrowed to the smallest unsigned type that holds them
    before hashing: at n = 10^6 and k <= 256 that hashes 1 MB instead of
    8 MB (about 1 ms with SHA-256).
    """
    codes = np.asarray(codes)
    if n_values is None:
        n_values = int(codes.max()) + 1 if codes.size else 1
    for dtype in (np.uint8, np.uint16, np.uint32):
        if n_values <= np.iinfo(dtype).max + 1:
            break
    else:
        dtype = np.uint64
    data = np.ascontiguousarray(codes.ravel(), dtype=dtype)
    header = f"{data.dtype.str}:{codes.shape}".encode()
    digest = hashlib.sha256(header)
    digest.update(data.data)
    return int.from_bytes(digest.digest()[:16], "little")


def transform_generator(random_state, *, column=None, call=0, codes=None, n_values=None):
    """The random generator of one ``transform`` call.

    Parameters
    ----------
    random_state : None, "secure", int, SeedSequence, Generator or RandomState
        The mechanism's parameter. ``None`` and ``"secure"`` use fresh OS
        entropy (nothing else is read). A Generator or RandomState is
        consumed for a 128-bit seed.
    column : str, default=None
        The input column's name.
    call : int, default=0
        The number of earlier calls since ``fit`` (ignored for Generators,
        which advance by themselves).
    codes : array of int, default=None
        The call's encoded input; its hash enters the stream, so that two
        columns privatized with one seed get independent noise.
    n_values : int, default=None
        Upper bound of the codes (only narrows the hashed dtype).

    Returns
    -------
    rng : numpy.random.Generator
    """
    if random_state is None:
        return np.random.default_rng()
    if is_secure(random_state):
        return secure_generator()
    consumed = isinstance(random_state, np.random.Generator | np.random.RandomState)
    # ``check_seed_sequence`` returns a user's SeedSequence itself: it is only
    # read here (entropy and spawn key), never spawned from, so a shared
    # SeedSequence object is not mutated by transform.
    base = check_seed_sequence(random_state)
    key = [_name_key("" if column is None else column)]
    if not consumed:
        key.append(int(call))
    if codes is not None:
        key.append(codes_digest(codes, n_values))
    seed = np.random.SeedSequence(
        base.entropy, spawn_key=tuple(base.spawn_key) + tuple(key), pool_size=base.pool_size
    )
    return np.random.default_rng(seed)
