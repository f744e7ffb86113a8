"""Longitudinal local hashing (LOLOHA): a permanent hash function, memoized per bucket."""

from __future__ import annotations

from numbers import Integral
from typing import Literal

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from ..mechanisms._local_hashing import LocalHashingChannel, optimal_hash_range
from ..mechanisms._memo import check_rounds
from ..utils._docstrings import fill_doc
from ..utils._sampling import randomized_response_codes
from ..utils._typing import ArrayLike, Categories, RandomStateLike
from ._base import (
    _BUDGET_SCHEMAS,
    _DOCS,
    _check_budgets,
    _LongitudinalMechanism,
    _LongitudinalMixin,
)
from ._grr import (
    _check_lgrr_realizable,
    _grr_keep,
    _grr_memo_exposure,
    _lgrr_instantaneous,
    _realized_grr_round,
    _realized_rr_codes,
)

__all__ = ["LongitudinalLocalHashing", "LongitudinalLocalHashingChannel"]


# ---------------------------------------------------------------- LOLOHA
@fill_doc(_DOCS)
class LongitudinalLocalHashingChannel(_LongitudinalMixin, LocalHashingChannel):
    """Channel of one report of longitudinal local hashing (LOLOHA).

    A user draws one hash function of the linear family over GF(g) (a
    permanent seed, derived from the secret), hashes the value to a bucket
    ``v = h(x)`` in [0, g) and memoizes a g-ary randomized response of v at
    ``epsilon_perm`` -- per (user, *bucket*), so values with the same hash
    share the memoized answer; each report is a fresh g-ary randomized
    response of it (exact L-GRR parameters on g symbols). One report is
    then exactly local hashing at ``epsilon_1`` with range g
    (:class:`~sklearn_uldp.mechanisms.LocalHashingChannel`), and a user
    whose value changes d times spends at most ``min(d + 1, g)`` times
    ``epsilon_perm`` (at most g distinct buckets).

    %(channel_parameters)s
    hash_range : int
        g, a prime.

    Examples
    --------
    >>> from sklearn_uldp.longitudinal import LongitudinalLocalHashingChannel
    >>> ch = LongitudinalLocalHashingChannel(list(range(10)), 2.0, 1.0, hash_range=3)
    >>> ch.n_seeds, round(ch.epsilon_inst, 4)
    (27, 1.4938)
    """

    name = "loloha"
    _extra_params = ("hash_range",)
    _spec_field_schemas = {
        **_BUDGET_SCHEMAS,
        "hash_range": LocalHashingChannel._spec_field_schemas["hash_range"],
    }

    def __init__(
        self, categories: ArrayLike, epsilon_perm: float, epsilon_1: float, hash_range: int
    ) -> None:
        self.epsilon_perm, self.epsilon_1 = _check_budgets(epsilon_perm, epsilon_1)
        super().__init__(categories, self.epsilon_1, hash_range)
        g = self.hash_range
        self.p1 = float(_grr_keep(self.epsilon_perm, g))
        self.p2, self.q2 = _lgrr_instantaneous(self.epsilon_perm, self.epsilon_1, g)
        self.epsilon_inst = float(np.log(self.p2) - np.log(self.q2))
        self.permanent_channel()
        _check_lgrr_realizable(self.epsilon_perm, self.epsilon_1, g, f"LOLOHA with g={g}")

    def permanent_channel(self):
        return LocalHashingChannel(self.categories, self.epsilon_perm, self.hash_range)

    def sample_permanent(self, codes, draws):
        """(seed, memoized bucket answer) per user: the seed is per user (value
        0), the answer per (user, bucket)."""
        codes = np.asarray(codes, dtype=np.intp)
        g = self.hash_range
        seeds = draws.integers("seed", np.zeros(codes.size, np.uint64), self.n_seeds, 1)[:, 0]
        buckets = self.hash(seeds, codes)
        keep = draws.uniforms("keep", buckets, 1)[:, 0] < self.p1
        move = draws.integers("move", buckets, g - 1, 1)[:, 0]
        answer = np.where(keep, buckets, move + (move >= buckets))
        return np.column_stack([seeds, answer])

    def sample_instantaneous(self, permanent, rng):
        seeds, answer = permanent[:, 0], permanent[:, 1]
        values = randomized_response_codes(answer, self.hash_range, self.p2, rng)
        return seeds * self.hash_range + values

    def permanent_reports(self, permanent):
        """(seed, memoized bucket answer) pairs as reports of local hashing
        (:meth:`permanent_channel`): ``seed * g + answer``."""
        permanent = np.asarray(permanent)
        return permanent[:, 0] * self.hash_range + permanent[:, 1]

    def realized_matrix(self):
        g = self.hash_range
        return self._matrix_from(_realized_grr_round(g, self.p1) @ _realized_rr_codes(g, self.p2))

    def exposure(self, n_rounds):
        g = self.hash_range
        return _grr_memo_exposure(
            check_rounds(n_rounds), g, self.p1, (1 - self.p1) / (g - 1), self.p2, self.q2
        )


@fill_doc(_DOCS)
class LongitudinalLocalHashing(_LongitudinalMechanism):
    """Longitudinal local hashing (LOLOHA), memoized per hashed value.

    Each user keeps one hash function of the linear family over GF(g) (a
    permanent seed derived from the secret), hashes the value to one of g
    buckets and memoizes a g-ary randomized response of the bucket at
    ``epsilon_perm``; each report is the seed and a fresh g-ary randomized
    response of the memoized bucket, with L-GRR's exact parameters on g
    symbols (Arcolezi, Pinzón, Palamidessi & Gambs, EDBT 2023). One report
    is exactly optimized local hashing at ``epsilon_1`` with range g
    (:attr:`channel_`). The memo is per *bucket*: a user whose value
    changes spends ``epsilon_perm`` per distinct bucket, at most g of them,
    whatever the number of changes.

    Parameters
    ----------
    %(budgets)s
    hash_range : "optimal" or int, default="optimal"
        g, a prime. ``"optimal"`` minimizes the variance of one report (the
        prime closest in variance to ``e^epsilon_1 + 1``; see
        :func:`~sklearn_uldp.mechanisms._local_hashing.optimal_hash_range`);
        ``2`` (BiLOLOHA) bounds the longitudinal budget by 2 epsilon_perm.
    %(memo_parameters)s

    Attributes
    ----------
    categories_ : ndarray of shape (k,)
    hash_range_ : int
    channel_ : LongitudinalLocalHashingChannel
        One report, end to end: local hashing at ``epsilon_1``.
    permanent_channel_ : LocalHashingChannel
        The memoized round: local hashing at ``epsilon_perm``.
    %(fitted_columns)s

    Examples
    --------
    >>> from sklearn_uldp.longitudinal import LongitudinalLocalHashing
    >>> from sklearn_uldp.privacy import check_ldp
    >>> mech = LongitudinalLocalHashing(2.0, 1.0, categories=range(6)).fit()
    >>> mech.hash_range_, bool(check_ldp(mech)), bool(check_ldp(mech.permanent_channel_))
    (3, True, True)
    """

    _reports_are_values = False
    _parameter_constraints = {
        **_LongitudinalMechanism._parameter_constraints,
        "hash_range": [StrOptions({"optimal"}), Interval(Integral, 2, None, closed="left")],
    }

    def __init__(
        self,
        epsilon_perm: float = 2.0,
        epsilon_1: float = 1.0,
        *,
        hash_range: int | Literal["optimal"] = "optimal",
        categories: Categories = "auto",
        memo_label: str = "",
        random_state: RandomStateLike = None,
    ) -> None:
        self.hash_range = hash_range
        super().__init__(epsilon_perm, epsilon_1, categories, memo_label, random_state)

    def _make_channel(self):
        g = self.hash_range
        if isinstance(g, str):
            g = optimal_hash_range(self.epsilon_1, len(self.categories_))
        self.hash_range_ = int(g)
        return LongitudinalLocalHashingChannel(
            self.categories_, self.epsilon_perm, self.epsilon_1, g
        )
