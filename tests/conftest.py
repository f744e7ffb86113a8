"""Fixtures shared by the tests in every folder under tests/.

Plain helper functions live in importable modules beside this file
(``_chisquare``, ``_cli``, ``_channels``, ``_repo``; tests/README.md), so that
they can be called at import time (parametrization) as well as in tests.
"""

import os

import pytest
from hypothesis import settings

# CI (CI=true, as .ci/run and most CI services set it) runs the property
# tests with a fixed seed and no example database: the same inputs on every
# run, nothing written to .hypothesis/ from parallel workers. Locally they
# draw new inputs each run and replay earlier failures from the database.
settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
    settings.load_profile("ci")


@pytest.fixture
def bit_row_blocks(monkeypatch):
    """Shrink the bit-vector report store's blocks for this test.

    ``bit_row_blocks(rows, nnz=None, gather_bytes=None)`` sets the rows per
    block, the set bits per block and the bytes per gather step of
    :mod:`sklearn_uldp.mechanisms._bit_rows`, so that a few hundred reports
    span many blocks (and files, when spilled) and every seam is exercised.
    The defaults come back after the test.
    """
    from sklearn_uldp.mechanisms import _bit_rows

    def shrink(rows, nnz=None, gather_bytes=None):
        monkeypatch.setattr(_bit_rows, "_BLOCK_ROWS", rows)
        if nnz is not None:
            monkeypatch.setattr(_bit_rows, "_BLOCK_NNZ", nnz)
        if gather_bytes is not None:
            monkeypatch.setattr(_bit_rows, "_GATHER_BYTES", gather_bytes)

    return shrink
