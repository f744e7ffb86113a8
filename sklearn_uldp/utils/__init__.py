"""Utilities shared by the subpackages (validation and randomness)."""

from ._random import check_random_generator, spawn_generators

__all__ = ["check_random_generator", "spawn_generators"]
