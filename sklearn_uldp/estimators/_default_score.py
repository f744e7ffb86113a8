"""The warning of the estimators' default score when it compares mechanisms.

The default score (the mean log-likelihood of the reports) compares
estimates of the *same* reports only. Reports of different mechanisms
(another epsilon, theta or mechanism) have different likelihoods whatever
the accuracy, and no score without the true data can compare privacy
budgets: a scikit-learn search that varies the mechanism and keeps that
score picks a meaningless "best" candidate.

The rule, which needs no knowledge of the caller: each thread remembers the
channel of the last default score of every *comparable* call, one of an
estimator of the same class and parameters (its ``mechanism`` aside) on the
same number of reports. A comparable call on reports of another channel is
what a search over the mechanism makes (its candidates share the estimator
and the folds, and differ in the mechanism), and it warns, naming the
difference and the remedy. Scores of one mechanism (``cross_val_score``, a
search over the estimator's own parameters) stay quiet. An earlier version
recognized scikit-learn's ``_fit_and_score`` by walking the stack frames;
this rule depends on no private name of scikit-learn.
"""

from __future__ import annotations

import threading
import warnings
from collections import OrderedDict
from typing import Any

__all__ = ["warn_if_default_score_compares_mechanisms"]

#: Comparable calls remembered per thread (the oldest are forgotten first).
_MEMORY = 64

_local = threading.local()


def _comparison_key(estimator: Any, n_reports: int) -> tuple[str, str, int]:
    """What makes two default scores comparable: the estimator and the fold size."""
    params = estimator.get_params(deep=False)
    params.pop("mechanism", None)
    return (type(estimator).__qualname__, repr(sorted(params.items())), int(n_reports))


def warn_if_default_score_compares_mechanisms(estimator: Any, channel: Any, n_reports: int) -> None:
    """Warn when the default score of ``channel``'s reports follows a comparable
    one of another channel's (see the module notes).

    Called by :meth:`DistributionEstimator.score
    <sklearn_uldp.estimators.DistributionEstimator.score>` after the reports
    were checked against the estimator's channel.

    Parameters
    ----------
    estimator : DistributionEstimator
        The fitted estimator whose default score is computed.
    channel : Channel
        The channel of the scored reports.
    n_reports : int
        Their number.
    """
    seen = getattr(_local, "channels", None)
    if seen is None:
        seen = _local.channels = OrderedDict()
    key = _comparison_key(estimator, n_reports)
    previous = seen.pop(key, None)
    seen[key] = channel
    while len(seen) > _MEMORY:
        seen.popitem(last=False)
    if previous is None or previous == channel:
        return
    differences = ", ".join(previous.describe_difference(channel)) or "another channel"
    warnings.warn(
        "The default score of these reports follows that of a comparable call (the same "
        f"estimator on as many reports) with reports of another mechanism ({differences}). "
        "Reports of different mechanisms cannot be compared by their likelihood (nor can "
        "any score without the true data compare privacy budgets), so a search that "
        "varies the mechanism with this default score picks a meaningless 'best' "
        "candidate. On simulated data, pass scoring=make_simulation_scorer('tv') (from "
        "sklearn_uldp.model_selection), or use PrivacyUtilitySearchCV.",
        UserWarning,
        stacklevel=3,
    )
