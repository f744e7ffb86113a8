"""The warning of the estimators' default score in scikit-learn searches.

The default score (the mean log-likelihood of the reports) compares
estimates of the *same* reports only. A scikit-learn search that varies the
mechanism and keeps that score picks a meaningless "best" candidate, so
:meth:`DistributionEstimator.score
<sklearn_uldp.estimators.DistributionEstimator.score>` warns.
"""

from __future__ import annotations

import sys
import warnings

from sklearn.base import BaseEstimator

from ..mechanisms._base import BaseMechanism

__all__ = ["warn_if_default_score_compares_mechanisms"]


def _is_mechanism(obj):
    """Whether ``obj`` decides what the reports are.

    Mechanisms and ``DataFramePrivatizer`` spend a budget (a class attribute
    ``epsilon_spent_``); ``JointEncoder`` builds a mechanism's domain
    (``make_mechanism``). Read by duck typing: this layer sits below
    :mod:`sklearn_uldp.compose`.
    """
    cls = type(obj)
    return isinstance(obj, BaseMechanism) or (
        isinstance(obj, BaseEstimator)
        and (hasattr(cls, "epsilon_spent_") or callable(getattr(cls, "make_mechanism", None)))
    )


def _mechanism_parameters(estimator, parameters):
    """The keys of ``parameters`` that set (or replace) a privacy mechanism."""
    found = []
    for key, value in parameters.items():
        if _is_mechanism(value):
            found.append(key)
            continue
        obj = estimator
        for part in key.split("__")[:-1]:
            try:
                obj = obj.get_params(deep=True)[part]
            except (AttributeError, KeyError, TypeError):
                break
            if _is_mechanism(obj):
                found.append(key)
                break
        else:
            if _is_mechanism(obj) and obj is not estimator:
                found.append(key)
    return found


def warn_if_default_score_compares_mechanisms():
    """Warn when a scikit-learn search compares mechanisms by the default score.

    Called by :meth:`DistributionEstimator.score
    <sklearn_uldp.estimators.DistributionEstimator.score>`. The default score
    is the mean log-likelihood of the reports under the estimate: it
    compares estimates of the *same* reports, but reports of different
    mechanisms (another epsilon, theta or mechanism) have different
    likelihoods, whatever the accuracy, and no score without the true data
    can compare privacy budgets. When the caller is scikit-learn's
    ``_fit_and_score`` (``GridSearchCV``, ``RandomizedSearchCV``,
    ``validation_curve``, ...) with the default scoring and a candidate that
    changes a mechanism, this warns and names the remedy.
    """
    frame = sys._getframe(1)
    for _ in range(12):  # score <- Pipeline.score <- scorer <- _score <- _fit_and_score
        frame = frame.f_back
        if frame is None:
            return
        code = frame.f_code
        if code.co_name == "_fit_and_score" and "sklearn" in code.co_filename:
            break
    else:
        return
    local = frame.f_locals
    scorer = local.get("scorer")
    if type(scorer).__name__ != "_PassthroughScorer":
        return  # an explicit scoring: the user chose it
    keys = _mechanism_parameters(local.get("estimator"), local.get("parameters") or {})
    if keys:
        warnings.warn(
            f"This search varies the privacy mechanism ({', '.join(sorted(keys))}) "
            "and scores candidates with the estimator's default score, the mean "
            "log-likelihood of the reports. Reports of different mechanisms "
            "cannot be compared by their likelihood (nor can any score without "
            "the true data compare privacy budgets), so the 'best' candidate is "
            "meaningless. On simulated data, pass "
            "scoring=make_simulation_scorer('tv') (from "
            "sklearn_uldp.model_selection), or use PrivacyUtilitySearchCV.",
            UserWarning,
            stacklevel=3,
        )
