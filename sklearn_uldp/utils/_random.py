"""Random number generation.

Privacy depends on the noise being unpredictable, so ``random_state=None``
draws fresh OS entropy (numpy's ``SeedSequence()``) rather than a global
state. Integer seeds make runs reproducible. Independent streams (columns,
chunks, partitions, joblib jobs) are always derived with
``SeedSequence.spawn``, never by re-using or offsetting one seed.
"""

import numbers

import numpy as np

__all__ = ["check_seed_sequence", "check_random_generator", "spawn_generators"]


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
    if isinstance(random_state, numbers.Integral) and not isinstance(
        random_state, bool
    ):
        if random_state < 0:
            raise ValueError(
                f"random_state must be a non-negative integer, got {random_state}."
            )
        return np.random.SeedSequence(int(random_state))
    if isinstance(random_state, np.random.Generator):
        return np.random.SeedSequence(
            random_state.integers(0, 2**63, size=2, dtype=np.uint64).tolist()
        )
    if isinstance(random_state, np.random.RandomState):
        return np.random.SeedSequence(
            random_state.randint(0, 2**31, size=4).tolist()
        )
    raise ValueError(
        "random_state must be None, a non-negative int, a numpy SeedSequence, "
        f"Generator or RandomState; got {random_state!r}."
    )


def check_random_generator(random_state):
    """Return a :class:`numpy.random.Generator` for ``random_state``.

    A Generator passed in is returned as is; everything else goes through
    :func:`check_seed_sequence`.

    Examples
    --------
    >>> from sklearn_uldp.utils import check_random_generator
    >>> rng = check_random_generator(0)
    >>> type(rng).__name__, check_random_generator(rng) is rng
    ('Generator', True)
    """
    if isinstance(random_state, np.random.Generator):
        return random_state
    return np.random.default_rng(check_seed_sequence(random_state))


def spawn_generators(random_state, n):
    """Return ``n`` statistically independent generators derived from one seed.

    Parameters
    ----------
    random_state : None, int, SeedSequence, Generator or RandomState
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
    children = check_seed_sequence(random_state).spawn(n)
    return [np.random.default_rng(child) for child in children]
