"""Utility-optimized heavy hitters when no report is protected (issue 30).

At a large epsilon few users with no sensitive item all report in clear;
the share of protected reports is then 0 and the null standard error of the
sensitive items' estimates too, and ``UtilityOptimizedHeavyHitters`` gave a
score of 0 / 0 = NaN. The estimate is exactly 0 and carries no evidence: its
score is 0 (not significant), its interval finite.
"""

import numpy as np
import pytest

from sklearn_uldp.heavy_hitters import (
    HeavyHitterEstimator,
    UtilityOptimizedHeavyHitters,
    UtilityOptimizedLocalHashingHeavyHitters,
)

ITEMS = ["apple", "pear", "kiwi"] * 40


@pytest.mark.parametrize(
    "cls", [UtilityOptimizedHeavyHitters, UtilityOptimizedLocalHashingHeavyHitters]
)
def test_no_protected_report_gives_finite_scores(cls):
    mech = cls(30.0, sensitive=["fig", "plum"], random_state=0).fit(ITEMS)
    reports = mech.transform(ITEMS)
    # the case: every report in clear (code -1)
    assert np.all(np.asarray(reports)[:, 0] == -1)
    # report="top_k" lists every candidate; by default ("significant") the
    # sensitive items, with a score of 0, are rightly left out
    est = HeavyHitterEstimator(top_k=10, report="top_k").fit(reports)
    frame = est.heavy_hitters_frame_
    sensitive = frame[frame["sensitive"]]
    assert set(sensitive.index) == {"fig", "plum"}
    assert np.all(sensitive["frequency"] == 0.0)
    assert np.all(sensitive["score"] == 0.0)
    numbers = frame[["frequency", "std_error", "lower", "upper"]].to_numpy(dtype=float)
    assert np.all(np.isfinite(numbers))
    assert not frame["score"].isna().any()
    assert not est.candidates_["score"].isna().any()
    default = HeavyHitterEstimator(top_k=10).fit(reports).heavy_hitters_frame_
    assert set(default.index) == {"apple", "pear", "kiwi"}


def test_a_protected_report_still_scores_against_the_null():
    # the fix touches only share == 0: with protected reports the score is
    # the estimate over its null standard error, as before
    mech = UtilityOptimizedHeavyHitters(2.0, sensitive=["fig"], random_state=0).fit(ITEMS)
    reports = mech.transform(ITEMS + ["fig"] * 60)
    est = HeavyHitterEstimator(top_k=10).fit(reports)
    fig = est.heavy_hitters_frame_.loc["fig"]
    assert np.isfinite(fig["score"]) and fig["score"] > 2
