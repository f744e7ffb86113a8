"""k-RR on narrow codes: uint8/uint16 codes and outputs, the same reports.

``RandomizedResponse`` encodes a run of integer categories to the narrowest
unsigned type that holds k and its sampler writes its output codes in that
type into a report array (a byte a user for k <= 256 instead of 8): the
reports must be those of the intp path, bit for bit, on both the compiled
and the numpy path.
"""

from __future__ import annotations

import numpy as np
import pytest

from sklearn_uldp import RandomizedResponse
from sklearn_uldp.utils import _sampling
from sklearn_uldp.utils._sampling import narrow_code_dtype, randomized_response_codes


@pytest.mark.parametrize("kernel", ["numba", "numpy"])
@pytest.mark.parametrize("k", [2, 3, 100, 256, 257, 5000])
@pytest.mark.parametrize("keep", [0.01, 0.5, 0.99])
def test_narrow_output_codes_are_the_intp_ones(kernel, k, keep, monkeypatch):
    if kernel == "numba" and _sampling.numba is None:
        pytest.skip("numba is not installed")
    monkeypatch.setattr(_sampling, "_KERNEL", kernel)
    codes = np.random.default_rng(k).integers(0, k, size=70_000)
    wide = randomized_response_codes(codes, k, keep, np.random.default_rng(1))
    dtype = narrow_code_dtype(k)
    out = np.empty(codes.size, dtype=dtype)
    narrow = randomized_response_codes(
        codes.astype(dtype), k, keep, np.random.default_rng(1), out=out
    )
    assert narrow is out and narrow.dtype == dtype
    np.testing.assert_array_equal(narrow, wide)


@pytest.mark.parametrize("categories", [np.arange(100), np.arange(7, 307), np.arange(70_000)])
def test_k_rr_reports_unchanged_by_narrow_codes(categories, monkeypatch):
    """The mechanism's reports equal the generic encoder's (intp codes)."""
    X = np.random.default_rng(0).choice(categories, size=(20_000, 1))
    mech = RandomizedResponse(1.0, categories=categories, random_state=3).fit(X)
    codes = mech._encode(X[:, 0])
    assert codes.dtype == narrow_code_dtype(categories.size)
    narrow = mech.transform(X)
    # the generic encoder (intp codes) from the same seeded stream
    monkeypatch.setattr(
        RandomizedResponse,
        "_encode",
        lambda self, column: super(RandomizedResponse, self)._encode(column),
    )
    wide = RandomizedResponse(1.0, categories=categories, random_state=3).fit(X).transform(X)
    np.testing.assert_array_equal(narrow, wide)
    assert np.asarray(narrow).dtype == X.dtype


def test_values_outside_the_domain_are_still_refused():
    mech = RandomizedResponse(1.0, categories=np.arange(10), random_state=0).fit()
    with pytest.raises(ValueError, match="unknown categories"):
        mech.transform(np.array([[3], [12]]))
