"""Utilities shared by the subpackages (validation, randomness, per-user secrets)."""

from ._random import check_random_generator, spawn_generators
from ._secrets import (
    UserKeys,
    check_user_secrets,
    derive_user_keys,
    generate_user_secrets,
    prf_bernoulli,
    prf_integers,
    prf_uniforms,
    prf_words,
)

__all__ = [
    "check_random_generator",
    "spawn_generators",
    # per-user secrets and the keyed PRF of memoized (longitudinal) reports
    "generate_user_secrets",
    "check_user_secrets",
    "UserKeys",
    "prf_words",
    "prf_uniforms",
    "prf_integers",
    "prf_bernoulli",
    "derive_user_keys",
]
