"""pack_rows packs short and Fortran-ordered rows one bit column at a time
(issue 36): the bytes must be numpy's ``packbits(bitorder="little")``."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sklearn_uldp.utils._bits import pack_rows


@settings(max_examples=200, deadline=None)
@given(
    m=st.integers(0, 300),
    n_bits=st.integers(1, 80),
    order=st.sampled_from("CF"),
    high=st.sampled_from([2, 3, 256]),  # 0/1, and any nonzero byte is a 1
    seed=st.integers(0, 2**32 - 1),
)
def test_pack_rows_is_numpys_packbits(m, n_bits, order, high, seed):
    bits = np.random.default_rng(seed).integers(0, high, (m, n_bits)).astype(np.uint8)
    bits = np.asarray(bits, order=order)
    packed = pack_rows(bits)
    expected = np.packbits(bits, axis=1, bitorder="little")
    assert packed.dtype == np.uint8 and packed.shape == expected.shape
    np.testing.assert_array_equal(packed, expected)


def test_pack_rows_of_a_dataframes_block():
    # the layout estimators receive: a frame's uint8 columns, Fortran-ordered
    import pandas as pd

    bits = np.random.default_rng(0).integers(0, 2, (1000, 10)).astype(np.uint8)
    arr = pd.DataFrame({f"b{j}": bits[:, j] for j in range(10)}).to_numpy()
    np.testing.assert_array_equal(pack_rows(arr), np.packbits(bits, axis=1, bitorder="little"))
