"""Memory before it is spent (issue 30, item 6).

A bit-vector mechanism at k = 10,000 and n = 10^6 allocates 10 GB of dense
reports by default; ``transform`` warns before allocating more than 1 GB
dense, naming ``packed_output=True`` and the size it would take. The
decision is tested on the function that makes it (nothing is allocated),
and its use on the mechanisms with the limit lowered.
"""

import warnings

import numpy as np
import pytest

from sklearn_uldp.exceptions import LargeReportsWarning
from sklearn_uldp.mechanisms import (
    RAPPOR,
    CountMeanSketch,
    SubsetSelection,
    UtilityOptimizedBlockDesign,
    UtilityOptimizedRAPPOR,
)
from sklearn_uldp.utils import _validation
from sklearn_uldp.utils._validation import dense_reports_warning


def test_the_issue_case_is_warned_with_both_sizes():
    message = dense_reports_warning(10**6, 10_000, owner="RAPPOR")
    assert message is not None
    assert "10.0 GB" in message  # one byte a bit
    assert "packed_output=True" in message and "1.2 GB" in message  # ceil(k / 8) a report


@pytest.mark.parametrize(
    "n_rows, n_bits, warned",
    [
        (10**6, 1000, False),  # exactly 1 GB: not over
        (10**6 + 1, 1000, True),
        (10**5, 10_000, False),
        (10**9, 2, True),
        (0, 10**12, False),
    ],
)
def test_the_limit_is_one_gigabyte_of_dense_bits(n_rows, n_bits, warned):
    assert (dense_reports_warning(n_rows, n_bits, owner="M") is not None) is warned


def _mechanisms():
    cats = list(range(64))
    return [
        RAPPOR(1.0, categories=cats),
        UtilityOptimizedRAPPOR(1.0, sensitive=cats[:2], categories=cats),
        SubsetSelection(1.0, categories=cats),
        UtilityOptimizedBlockDesign(1.0, sensitive=cats[:2], categories=cats),
        CountMeanSketch(1.0, n_buckets=64, n_hashes=4, categories=cats),
    ]


@pytest.mark.parametrize("mech", _mechanisms(), ids=lambda m: type(m).__name__)
def test_transform_warns_before_dense_reports_and_not_when_packed(mech, monkeypatch):
    monkeypatch.setattr(_validation, "DENSE_REPORTS_LIMIT", 1000)  # 1 kB, for the test
    X = np.zeros((100, 1), dtype=int)  # 100 x 64 bits: 6.4 kB dense
    mech.set_params(random_state=0).fit()
    with pytest.warns(LargeReportsWarning, match="packed_output=True"):
        mech.transform(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error", LargeReportsWarning)
        mech.transform(X[:10])  # 640 bytes: no warning
        mech.set_params(packed_output=True).fit().transform(X)
        if "sparse_output" in mech.get_params():
            mech.set_params(packed_output=False, sparse_output=True).fit().transform(X)
