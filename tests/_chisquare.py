"""The goodness-of-fit test the sampler tests share (imported by name: pytest
puts this folder on ``sys.path``, as for any test module outside a package)."""

import numpy as np
from scipy import stats


def chi_square_pvalue(counts, probs):
    """Chi-square goodness of fit, pooling cells with small expected counts.

    Cells expected below 5 are pooled into one, and the expected counts are
    scaled to the observed total of the kept cells, so a channel whose rows
    have mass on outputs never sampled is still testable.
    """
    counts = np.asarray(counts)
    expected = np.asarray(probs) * counts.sum()
    small = expected < 5
    obs = np.append(counts[~small], counts[small].sum())
    exp = np.append(expected[~small], expected[small].sum())
    keep = exp > 0
    return stats.chisquare(obs[keep], exp[keep] * obs[keep].sum() / exp[keep].sum()).pvalue
