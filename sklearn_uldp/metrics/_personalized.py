"""Theorem 1 of the personalized mechanism: where the l1 loss comes from."""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
from numpy.typing import ArrayLike
from sklearn.utils import Bunch

from ._losses import l1_loss

__all__ = ["personalized_loss_terms"]


class _FittedPersonalizedEstimator(Protocol):
    """What Theorem 1 reads of a fitted PersonalizedEstimator.

    A protocol rather than the class: metrics sit below the estimators in
    the package's layers (docs/architecture.md).
    """

    distribution_: np.ndarray
    intermediate_distribution_: np.ndarray
    tags_: Any
    bot_masses_: dict[Any, float]
    tag_distributions_: dict[Any, np.ndarray]
    loss_bound_: float


def _tag_truth(true_tag_distributions, tags, k):
    if isinstance(true_tag_distributions, dict):
        missing = [t for t in tags if t not in true_tag_distributions]
        if missing:
            raise ValueError(f"true_tag_distributions lacks the tags {missing}.")
        rows = [np.asarray(true_tag_distributions[t], dtype=float) for t in tags]
    else:
        rows = list(np.asarray(true_tag_distributions, dtype=float))
        if len(rows) != len(tags):
            raise ValueError(f"true_tag_distributions has {len(rows)} rows for {len(tags)} tags.")
    for tag, row in zip(tags, rows, strict=True):
        if row.shape != (k,):
            raise ValueError(
                f"The true distribution of tag {tag!r} must have length {k}, got shape {row.shape}."
            )
    return dict(zip(tags, rows, strict=True))


def personalized_loss_terms(
    estimator: _FittedPersonalizedEstimator,
    true_distribution: ArrayLike,
    true_intermediate: ArrayLike,
    true_tag_distributions: dict[str, Any] | ArrayLike,
) -> Bunch:
    """Both terms of Theorem 1 for a fitted PersonalizedEstimator.

    Theorem 1 (Murakami & Kawamoto 2019, Sec. 5.4; mathematics §4):
    ``l1(p̂, p) <= l1(r̂, r) + Σ_k r̂(⊥k) l1(π̂_k, π_k) <= l1(r̂, r) + 2 Σ_k r̂(⊥k)``.
    The first term is the error of the common mechanism over Z, the second
    that of the background knowledge weighted by the bot masses. For an
    estimate r̂ with negative bot masses (the unbiased empirical estimator)
    the bound holds with ``|r̂(⊥k)|``, which is what is used here. With the
    truth computed from the same users as the reports (as the simulation
    generator does), the inequality holds for every realisation.

    Parameters
    ----------
    estimator : PersonalizedEstimator
        Fitted.
    true_distribution : array-like of shape (k,)
        p over X.
    true_intermediate : array-like of shape (k + κ,)
        r over Z (X, then the bots in the estimator's ``tags_`` order).
    true_tag_distributions : dict or array-like of shape (κ, k)
        Tag -> π_k over X (a zero vector for a tag nobody used).

    Returns
    -------
    terms : Bunch
        ``l1_loss`` (l1(p̂, p)), ``first_term`` (l1(r̂, r)), ``second_term``
        (``Σ_k abs(r̂(⊥k)) l1(π̂_k, π_k)``), ``bound`` (their sum),
        ``second_term_bound`` (``estimator.loss_bound_``), ``per_tag`` (dict
        tag -> l1(π̂_k, π_k)) and ``holds`` (l1_loss <= bound, up to
        round-off).

    Examples
    --------
    >>> from sklearn_uldp import PersonalizedMechanism, PersonalizedEstimator
    >>> from sklearn_uldp.datasets import make_personalized_locations
    >>> from sklearn_uldp.metrics import personalized_loss_terms
    >>> data = make_personalized_locations(20000, shape=(10, 10), n_sensitive=5,
    ...                                    random_state=0)
    >>> mech = PersonalizedMechanism(epsilon=4.0, sensitive=data.sensitive,
    ...     tags=data.tags, categories=data.categories, random_state=0)
    >>> est = PersonalizedEstimator(background=data.background)
    >>> est = est.fit(mech.fit_transform(data.frame))
    >>> terms = personalized_loss_terms(est, data.empirical,
    ...     data.intermediate_distribution, data.tag_distributions)
    >>> bool(terms.holds), bool(terms.bound <= terms.first_term + est.loss_bound_)
    (True, True)
    """
    p_hat = estimator.distribution_
    r_hat = estimator.intermediate_distribution_
    k = p_hat.size
    tags = list(estimator.tags_)
    p = np.asarray(true_distribution, dtype=float)
    r = np.asarray(true_intermediate, dtype=float)
    if r.shape != r_hat.shape:
        raise ValueError(
            f"true_intermediate must be a distribution over the {r_hat.size} "
            f"intermediate categories (X then the bots), got shape {r.shape}."
        )
    truth = _tag_truth(true_tag_distributions, tags, k)
    masses = estimator.bot_masses_
    pis = estimator.tag_distributions_
    per_tag = {t: l1_loss(truth[t], pis[t]) for t in tags}
    loss = l1_loss(p, p_hat)
    first = l1_loss(r, r_hat)
    second = float(sum(abs(masses[t]) * per_tag[t] for t in tags))
    bound = first + second
    return Bunch(
        l1_loss=loss,
        first_term=first,
        second_term=second,
        bound=bound,
        second_term_bound=estimator.loss_bound_,
        per_tag=per_tag,
        holds=bool(loss <= bound * (1 + 1e-9) + 1e-12),
    )
