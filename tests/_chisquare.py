"""The goodness-of-fit test the sampler tests share.

Import by name from any folder under tests/ (``from _chisquare import
chi_square_pvalue``): pyproject.toml puts tests/ on ``sys.path``.
"""

import numpy as np
from scipy import stats


def chi_square_pvalue(counts, probs, *, pool_below=5.0):
    """Chi-square goodness of fit of observed ``counts`` to ``probs``.

    An output of probability zero must never occur (asserted: one such
    report already proves the sampler wrong). Cells expected below
    ``pool_below`` are pooled into one (``pool_below=0`` pools nothing), and
    the expected counts are scaled to the observed total of the kept cells,
    so a channel whose rows have mass on outputs never sampled is still
    testable.
    """
    counts = np.asarray(counts)
    probs = np.asarray(probs, dtype=float)
    assert counts[probs == 0].sum() == 0, "an output of probability 0 occurred"
    expected = probs * counts.sum()
    small = expected < pool_below
    obs = np.append(counts[~small], counts[small].sum())
    exp = np.append(expected[~small], expected[small].sum())
    keep = exp > 0
    return stats.chisquare(obs[keep], exp[keep] * obs[keep].sum() / exp[keep].sum()).pvalue
