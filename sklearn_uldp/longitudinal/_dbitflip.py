"""dBitFlipPM (Ding, Kulkarni & Yekhanin, NeurIPS 2017): d sampled bucket bits, all permanent.

Every draw is permanent, so a user whose value stays in one bucket sends the
same report in every round (epsilon over any number of rounds). The draws of
different values share their randomness (the sampled buckets, and one bit per
sampled bucket for every value outside it), so a value that changes bucket
has no finite bound: see :attr:`DBitFlipPM.changes_add_up` and the
"Collecting over time" page.
"""

from __future__ import annotations

from math import comb
from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ..mechanisms._base import RANDOM_STATE_CONSTRAINT
from ..mechanisms._channel import CategoricalChannel
from ..mechanisms._memo import GeneratorDraws, check_rounds
from ..mechanisms._rappor import _byte_realized
from ..utils._docstrings import fill_doc
from ..utils._typing import ArrayLike, Categories, RandomStateLike
from ..utils._validation import check_epsilon
from ._base import _DOCS, _MEMO_LABEL_HINT, _LongitudinalMechanism, _LongitudinalMixin

__all__ = ["DBitFlipPM", "DBitFlipChannel"]


# -------------------------------------------------------------- dBitFlipPM
class DBitFlipChannel(_LongitudinalMixin, CategoricalChannel):
    """Channel of dBitFlipPM (Ding, Kulkarni & Yekhanin 2017) over b buckets.

    A user samples d distinct buckets ``j_1 < ... < j_d`` uniformly and
    reports, for each, a bit that is 1 with probability
    ``p = e^(eps/2) / (e^(eps/2) + 1)`` if the value's bucket is ``j_t``
    and ``1 - p`` otherwise: epsilon-LDP (only the bits of the buckets of x
    and x' differ, each by at most e^(eps/2)). The report is one integer,
    ``rank(J) 2^d + sum_t bit_t 2^t`` with ``rank`` the combinatorial
    (colex) rank of the set J among the C(b, d) sets; :meth:`split_reports`
    gives ``(J, bits)``. Everything is permanent (memoized per user): the
    buckets and, for each, the bit reported when the value is in it and
    the bit reported when it is not; a user whose value stays put sends
    the same report in every round.

    The statistic of bucket x is "x sampled and its bit 1", of mean
    ``(d / b)(q + (p - q) pi(x))`` (q = 1 - p), which gives the unbiased
    estimate; the likelihood is ``prod_t`` of the bit probabilities, which
    EM uses through structured products over the C(b, d) 2^d outputs.

    Parameters
    ----------
    categories : array-like of shape (b,)
        The buckets.
    epsilon : float
    d : int, default=1
        Buckets sampled (bits sent) per user, 1 <= d <= b.

    Examples
    --------
    >>> from sklearn_uldp.longitudinal import DBitFlipChannel
    >>> ch = DBitFlipChannel(list(range(4)), epsilon=1.0, d=2)
    >>> ch.n_outputs, ch.matrix().shape
    (24, (4, 24))
    >>> ch.split_reports([5])
    (array([[0, 2]]), array([[1, 0]]))
    """

    name = "dbitflip"
    report_bits = property(lambda self: float(np.log2(self.n_outputs)))
    _spec_field_schemas = {
        **CategoricalChannel._spec_field_schemas,
        "d": {
            "type": "integer",
            "minimum": 1,
            "description": "Buckets sampled (bits sent) per user.",
        },
    }
    #: Largest output space (sets times bit patterns).
    MAX_OUTPUTS = 1 << 24

    def __init__(self, categories: ArrayLike, epsilon: float, d: int = 1) -> None:
        super().__init__(categories, epsilon)
        b = self.n_categories
        if isinstance(d, bool) or not isinstance(d, Integral) or not 1 <= d <= b:
            raise ValueError(
                f"d must be an integer in [1, {b}] (the number of buckets), got {d!r}."
            )
        self.d = int(d)
        self.n_sets = comb(b, self.d)
        if self.n_sets * 2**self.d > self.MAX_OUTPUTS:
            raise ValueError(
                f"d={self.d} of b={b} buckets gives {self.n_sets * 2**self.d} possible "
                f"reports, more than {self.MAX_OUTPUTS}: pass a smaller d (d=1 sends "
                "one bit)."
            )
        self._check_budget(f"dBitFlipPM with b={b}")
        # Every draw is permanent: one value costs epsilon in any number of rounds.
        self.epsilon_perm = self.epsilon_1 = self.epsilon
        self.epsilon_inst = 0.0
        self.p = float(1.0 / (1.0 + np.exp(-self.epsilon / 2.0)))
        self.q = 1.0 - self.p
        self._sets = None
        self._binom = np.array(
            [[comb(j, t) for t in range(self.d + 1)] for j in range(b + 1)], dtype=np.int64
        )

    def _draw_probabilities(self, epsilon):
        p = 1.0 / (1.0 + np.exp(-epsilon / 2.0))
        return np.array([p, 1.0 - p])

    def get_params(self):
        return {"epsilon": self.epsilon, "d": self.d}

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_sets"] = None  # a cache
        return state

    @property
    def n_outputs(self):
        return self.n_sets * 2**self.d

    def protected_outputs(self):
        return np.ones(self.n_outputs, dtype=bool)

    # -------------------------------------------------------- set encoding
    def _rank(self, sets):
        """Colex ranks of sorted index sets (n, d)."""
        t = np.arange(1, self.d + 1)
        return self._binom[sets, t[None, :]].sum(axis=1)

    def _all_sets(self):
        """(C(b, d), d) table: row r is the set of colex rank r."""
        if self._sets is None:
            b, d = self.n_categories, self.d
            # Colex order: sets by their largest element, then recursively.
            sets = np.zeros((1, 0), dtype=np.int64)
            for t in range(d):
                rows = []
                for top in range(t, b - d + t + 1):
                    below = sets[sets[:, -1] < top] if sets.shape[1] else sets
                    rows.append(np.column_stack([below, np.full(len(below), top)]))
                sets = np.concatenate(rows)
            order = np.argsort(self._rank(sets), kind="stable")
            self._sets = sets[order]
        return self._sets

    def split_reports(self, codes):
        """``(J, bits)`` of report codes: the sampled buckets and their bits.

        Returns
        -------
        sets : ndarray of shape (n, d)
        bits : ndarray of shape (n, d)
        """
        codes = np.asarray(codes, dtype=np.int64)
        rank, pattern = np.divmod(codes, 2**self.d)
        bits = (pattern[:, None] >> np.arange(self.d)) & 1
        return self._all_sets()[rank], bits

    def encode_pairs(self, sets, bits):
        """Report codes of sorted sets (n, d) and their bits (n, d)."""
        weights = 1 << np.arange(self.d)
        return self._rank(np.asarray(sets)) * 2**self.d + (np.asarray(bits) * weights).sum(axis=1)

    # ----------------------------------------------------------- structure
    def _pattern_terms(self, p, q):
        """base(bits) and r_t(bits) - 1 for the 2^d bit patterns."""
        d = self.d
        B = (np.arange(2**d)[:, None] >> np.arange(d)) & 1  # (2^d, d)
        base = np.prod(np.where(B == 1, q, 1.0 - q), axis=1)
        ratio = np.where(B == 1, p / q, (1.0 - p) / (1.0 - q)) - 1.0
        return base, ratio, B

    def _forward_with(self, p_in, p, q):
        p_in = np.asarray(p_in, dtype=float)
        base, ratio, _ = self._pattern_terms(p, q)
        P = p_in[self._all_sets()]  # (C, d)
        m = base[None, :] * (p_in.sum() + P @ ratio.T)
        return (m / self.n_sets).ravel()

    def forward(self, p):
        return self._forward_with(p, self.p, self.q)

    def adjoint(self, v):
        V = np.asarray(v, dtype=float).reshape(self.n_sets, 2**self.d)
        base, ratio, _ = self._pattern_terms(self.p, self.q)
        W = V * base[None, :]
        per_member = W @ ratio  # (C, d)
        out = np.full(self.n_categories, W.sum())
        out += np.bincount(
            self._all_sets().ravel(), weights=per_member.ravel(), minlength=self.n_categories
        )
        return out / self.n_sets

    def matrix(self):
        return np.stack(
            [self._forward_with(row, self.p, self.q) for row in np.eye(self.n_categories)]
        )

    def realized_matrix(self):
        """Sets exactly uniform; bits from one byte and a uniform on ties."""
        p, q = _byte_realized(self.p), _byte_realized(self.q)
        return np.stack([self._forward_with(row, p, q) for row in np.eye(self.n_categories)])

    def observed_frequency(self, stats):
        H = np.asarray(stats.counts, dtype=float).reshape(self.n_sets, 2**self.d)
        _, _, B = self._pattern_terms(self.p, self.q)
        ones = H @ B  # (C, d): reports of each set with bit t set
        f = np.bincount(self._all_sets().ravel(), weights=ones.ravel(), minlength=self.n_categories)
        return f / stats.n

    def expected_frequency(self, p):
        p = np.asarray(p, dtype=float)
        return self.d / self.n_categories * (self.q * p.sum() + (self.p - self.q) * p)

    @property
    def coef_a(self):
        return np.full(self.n_categories, self.n_categories / (self.d * (self.p - self.q)))

    @property
    def coef_b(self):
        return np.full(self.n_categories, -self.q / (self.p - self.q))

    def likelihood(self, codes):
        sets, bits = self.split_reports(codes)
        n = sets.shape[0]
        L = np.ones((n, self.n_categories))
        ratio = np.where(bits == 1, self.p / self.q, (1.0 - self.p) / (1.0 - self.q))
        L[np.arange(n)[:, None], sets] = ratio
        return L

    # ------------------------------------------------------------ sampling
    def sample_sets(self, n, draws):
        """d distinct buckets per user, uniformly (Floyd's algorithm)."""
        b, d = self.n_categories, self.d
        zero = np.zeros(n, dtype=np.uint64)
        highs = np.arange(b - d + 1, b + 1)
        r = draws.integers("buckets", zero, highs[None, :], d)
        chosen = np.empty((n, d), dtype=np.int64)
        for t in range(d):
            j = b - d + t  # draw uniformly in [0, j]: take it, or j if taken
            pick = r[:, t]
            taken = (chosen[:, :t] == pick[:, None]).any(axis=1) if t else np.zeros(n, bool)
            chosen[:, t] = np.where(taken, j, pick)
        return np.sort(chosen, axis=1)

    def sample_permanent(self, codes, draws):
        """Per user: the sets, the bit if in the bucket, the bit if not."""
        codes = np.asarray(codes, dtype=np.intp)
        n, d = codes.size, self.d
        sets = self.sample_sets(n, draws)
        probs = np.concatenate([np.full(d, self.p), np.full(d, self.q)])
        bits = draws.bernoulli("bits", np.zeros(n, dtype=np.uint64), probs).view(np.uint8)
        inside = sets == codes[:, None]
        reported = np.where(inside, bits[:, :d], bits[:, d:])
        return self.encode_pairs(sets, reported)

    def sample_instantaneous(self, permanent, rng):
        return np.asarray(permanent, dtype=np.int64)

    def sample(self, codes, rng):
        return self.sample_permanent(codes, GeneratorDraws(rng))

    def permanent_channel(self):
        """The channel itself: every draw of dBitFlipPM is permanent."""
        return self

    def exposure(self, n_rounds):
        check_rounds(n_rounds)
        return float(self.epsilon)


@fill_doc(_DOCS)
class DBitFlipPM(_LongitudinalMechanism):
    """dBitFlipPM: d sampled bucket bits, memoized (Ding, Kulkarni & Yekhanin 2017).

    The k categories are grouped into ``n_buckets`` contiguous buckets
    (``bucket(x) = floor(code * b / k)``). Each user samples d distinct
    buckets once (per input column: each column has its own memo), and for
    each draws once the bit to report while the value is in that bucket
    (1 w.p. ``e^(eps/2) / (e^(eps/2) + 1)``) and the bit while it is not
    (1 w.p. ``1 / (e^(eps/2) + 1)``); all of this is derived from the
    user's secret, so a user whose bucket does not change
    sends the same report in every round: epsilon for one value over any
    number of rounds. The estimated distribution is over the buckets.

    A value that **changes bucket** has no finite bound: the bit of a
    sampled bucket is shared by every value outside it, so when the user
    enters or leaves a sampled bucket that bit changes exactly then (with
    probability ``p^2 + q^2 >= 1/2``), which no user who never visits that
    bucket can produce: the reports show that the user was in it, and
    when. Two users whose values change at the same rounds between other
    buckets are told apart by an event of probability zero for one of them
    (the "Collecting over time" page derives it and bounds the chance,
    ``1 - C(b - w, d) / C(b, d)`` for w buckets visited). So
    :attr:`changes_add_up` is False, and
    :meth:`~sklearn_uldp.privacy.BudgetAccountant.spend_longitudinal`
    refuses ``n_values`` > 1 (count distinct *buckets*: values that share
    a bucket are one).

    Parameters
    ----------
    epsilon : float, default=1.0
    d : int, default=1
        Buckets sampled (bits sent) per user.
    n_buckets : int or None, default=None
        b; ``None`` is one bucket per category.
    %(categories)s
    %(memo_label)s
    random_state : None, "secure", int, Generator, SeedSequence or RandomState, default=None
        An integer makes missing ``user_secrets`` simulated users
        (simulations only); the mechanism draws no other randomness.

    Attributes
    ----------
    categories_ : ndarray of shape (k,)
    bucket_of_ : ndarray of shape (k,)
        The bucket of each category, an int in [0, b).
    channel_ : DBitFlipChannel
        Over the buckets (its categories are each bucket's first category).
    permanent_channel_ : DBitFlipChannel
        The same channel (every draw is permanent).
    %(fitted_columns)s

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp.longitudinal import DBitFlipPM
    >>> mech = DBitFlipPM(1.0, d=2, n_buckets=4, categories=range(8)).fit()
    >>> mech.bucket_of_.tolist(), mech.channel_.categories.tolist()
    ([0, 0, 1, 1, 2, 2, 3, 3], [0, 2, 4, 6])
    >>> from sklearn_uldp.utils import generate_user_secrets
    >>> reports = mech.transform(np.arange(8).reshape(-1, 1),
    ...                          user_secrets=generate_user_secrets(8))
    >>> sets, bits = mech.channel_.split_reports(reports.ravel())
    >>> sets.shape, bits.shape
    ((8, 2), (8, 2))
    """

    _reports_are_values = False
    #: The sampled buckets and the bit "not in this bucket" are shared by all
    #: values: a change of bucket can show the bucket (see the class notes).
    changes_add_up = False
    _parameter_constraints = {
        "epsilon": [Interval(Real, 0, None, closed="neither")],
        "d": [Interval(Integral, 1, None, closed="left")],
        "n_buckets": [None, Interval(Integral, 2, None, closed="left")],
        "categories": [StrOptions({"auto"}), "array-like"],
        "memo_label": [str],
        "random_state": RANDOM_STATE_CONSTRAINT,
    }
    _parameter_hints = {
        "d": "d is the number of buckets each user samples (bits sent): pass an int >= 1.",
        "n_buckets": "Pass None (one bucket per category) or an int in [2, k].",
        "memo_label": _MEMO_LABEL_HINT,
    }

    def __init__(
        self,
        epsilon: float = 1.0,
        *,
        d: int = 1,
        n_buckets: int | None = None,
        categories: Categories = "auto",
        memo_label: str = "",
        random_state: RandomStateLike = None,
    ) -> None:
        self.epsilon = epsilon
        self.d = d
        self.n_buckets = n_buckets
        self.categories = categories
        self.memo_label = memo_label
        self.random_state = random_state

    def _check_params(self):
        check_epsilon(self.epsilon)

    def _make_channel(self):
        k = len(self.categories_)
        b = k if self.n_buckets is None else int(self.n_buckets)
        if b > k:
            raise ValueError(
                f"n_buckets={b} is more than the k={k} categories: pass n_buckets <= k "
                "(or None, one bucket per category)."
            )
        self.bucket_of_ = (np.arange(k) * b) // k
        first = np.searchsorted(self.bucket_of_, np.arange(b))
        return DBitFlipChannel(self.categories_[first], self.epsilon, self.d)

    def _values(self, codes):
        return self.bucket_of_[codes]

    @fill_doc(_DOCS)
    def exposure(self, n_rounds: int) -> float:
        """Privacy loss of ``n_rounds`` reports of one value: ``epsilon``
        (the same report every round).

        For a value that stays in one bucket (values of one bucket are one
        value here). A value that changes bucket has no finite bound (see
        the class notes).

        %(exposure_sections)s
        """
        check_is_fitted(self, "channel_")
        check_rounds(n_rounds)
        return float(self.channel_.epsilon)

    @property
    def epsilon_perm_spent_(self) -> float:
        """Budget of one row's memoized reports: ``epsilon`` per input column
        (each column has its own buckets and bits, so the losses add up)."""
        check_is_fitted(self, "channel_")
        return float(self.n_features_in_ * self.channel_.epsilon)
