"""Prefix-tree heavy-hitter mechanisms: PEM and TreeHist (users' side).

References
----------
Wang, Li & Jha, "Locally Differentially Private Heavy Hitter
Identification", IEEE TDSC 2019 (arXiv 1708.06674) (PEM).
Bassily, Nissim, Stemmer & Thakurta, "Practical Locally Private Heavy
Hitters", NeurIPS 2017 (TreeHist).
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any

from sklearn.utils._param_validation import Interval

from ._mechanism import ENCODING_CONSTRAINTS, ORACLE_CONSTRAINTS, OpenDomainMechanism
from ._protocol import PEMProtocol, TreeHistProtocol

__all__ = ["PrefixExtendingMethod", "TreeHist"]

#: max_bytes=None: the encoding's default length (24 bytes of text, 8 of an integer).
MAX_BYTES_OR_DEFAULT: dict[str, list[Any]] = {
    "max_bytes": [*ENCODING_CONSTRAINTS["max_bytes"], None],
}


class PrefixExtendingMethod(OpenDomainMechanism):
    """Prefix Extending Method (PEM): heavy hitters of an open domain, eps-LDP.

    Users are split uniformly at random into g groups; group i reports the
    first ``gamma + (i + 1) eta`` bits of its item (``gamma =
    ceil(log2 top_k)``, eta = ``step_bits``; the last group the whole item)
    with optimized local hashing (Wang, Li & Jha, TDSC 2019). The collector
    (:class:`HeavyHitterEstimator`) extends the ``top_k`` most frequent
    prefixes of each group by eta bits and ranks the extensions with the next
    group. One more group (``final_fraction`` of the users) reports the whole
    item and is held out of the ranking: the kept items' frequencies and
    confidence intervals come from it alone, so they are not biased by the
    selection (see the Heavy hitters page). Items are strings (UTF-8 after
    Unicode NFC normalization), bytes or integers, written as ``8 *
    max_bytes`` bits; no ``categories``.

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy budget of the one report each user sends.
    top_k : int, default=20
        k, the number of prefixes kept per level.
    step_bits : int or None, default=None
        eta, the bits added per level. None: the largest eta with at most
        4096 candidates per level (``top_k 2^eta <= 4096``, at most 8).
    final_fraction : float in (0, 1) or None, default=None
        Share of the users in the held-out estimation group. None: an equal
        share with the g ranking groups, ``1 / (g + 1)``.
    item_type : {"str", "bytes", "int"}, default="str"
    max_bytes : int or None, default=None
        Item length in bytes (the protocol works on ``8 max_bytes`` bits);
        None: 24 for text and bytes, 8 (64 bits) for integers. Longer items
        are cut (``on_long``), shorter ones padded; each byte adds prefix
        levels, hence fewer users per level. 24 bytes keep 89 % of real job
        titles and 93 % of pet breeds whole; for short items (names: 8 bytes
        keep 92 % of pet names) a smaller value finds more (see "Choosing
        max_bytes" on the Heavy hitters page).
    normalization : {"NFC", "NFKC"} or None, default="NFC"
        Unicode normalization of text items.
    on_long : {"truncate", "error"}, default="truncate"
        Longer items are cut to whole characters, with a warning, or refused.
    hash_range : "optimal" or int, default="optimal"
        OLH's g (about e^eps + 1).
    n_hashes : int, default=1024
        Public hash functions of the oracle.
    hash_seed : int, default=0
        Public seed of the hash functions.
    random_state : None, "secure", int, Generator, SeedSequence or RandomState, default=None

    Attributes
    ----------
    channel_ : PEMProtocol
        The public spec (what reports carry).
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (1,)

    See Also
    --------
    TreeHist : a prefix tree with threshold pruning and a final oracle.
    HeavyHitterEstimator : the collector.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp.heavy_hitters import PrefixExtendingMethod, HeavyHitterEstimator
    >>> rng = np.random.default_rng(0)
    >>> names = rng.choice(["ada", "bob", "eve", "zoe"], p=[.4, .3, .2, .1], size=100_000)
    >>> mech = PrefixExtendingMethod(epsilon=4.0, top_k=4, max_bytes=4, random_state=0)
    >>> est = HeavyHitterEstimator().fit(mech.fit_transform(names))
    >>> est.heavy_hitters_.index.tolist()
    ['ada', 'bob', 'eve', 'zoe']
    """

    _protocol_class = PEMProtocol
    _parameter_constraints = {
        **OpenDomainMechanism._parameter_constraints,
        **ENCODING_CONSTRAINTS,
        **MAX_BYTES_OR_DEFAULT,
        **ORACLE_CONSTRAINTS,
        "top_k": [Interval(Integral, 1, 1 << 16, closed="both")],
        "step_bits": [Interval(Integral, 1, 16, closed="both"), None],
        "final_fraction": [Interval(Real, 0, 1, closed="neither"), None],
    }

    def __init__(
        self,
        epsilon: float = 1.0,
        *,
        top_k: int = 20,
        step_bits: int | None = None,
        final_fraction: float | None = None,
        item_type: str = "str",
        max_bytes: int | None = None,
        normalization: str | None = "NFC",
        on_long: str = "truncate",
        hash_range: Any = "optimal",
        n_hashes: int = 1024,
        hash_seed: int = 0,
        random_state: Any = None,
    ) -> None:
        self.epsilon = epsilon
        self.top_k = top_k
        self.step_bits = step_bits
        self.final_fraction = final_fraction
        self.item_type = item_type
        self.max_bytes = max_bytes
        self.normalization = normalization
        self.on_long = on_long
        self.hash_range = hash_range
        self.n_hashes = n_hashes
        self.hash_seed = hash_seed
        self.random_state = random_state


class TreeHist(OpenDomainMechanism):
    """TreeHist: prefix-tree heavy hitters with a final frequency oracle, eps-LDP.

    A fraction ``final_fraction`` of the users (drawn at random) reports its
    whole item; the others fall uniformly on the levels of a prefix tree of
    ``step_bits`` bits per level and report their prefix of that length
    (Bassily, Nissim, Stemmer & Thakurta, NeurIPS 2017; every report is
    optimized local hashing). The collector keeps, level by level, the
    children whose estimate passes the significance threshold (Bonferroni
    over the children at level ``beta``; at least ``top_k`` and at most
    ``width`` of them), and estimates the surviving items with the final
    group.

    Parameters
    ----------
    epsilon : float, default=1.0
    top_k : int, default=20
    step_bits : int, default=8
        Bits per tree level (8: one byte, a character of ASCII text).
    final_fraction : float in (0, 1), default=0.5
        Share of the users in the final frequency oracle.
    width : int or None, default=None
        Most nodes kept per level (None: ``4 top_k``).
    beta : float in (0, 1), default=0.05
        Level of the pruning threshold.
    item_type, max_bytes, normalization, on_long, hash_range, n_hashes, hash_seed, random_state
        As :class:`PrefixExtendingMethod`.

    Attributes
    ----------
    channel_ : TreeHistProtocol
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (1,)

    See Also
    --------
    PrefixExtendingMethod
    HeavyHitterEstimator

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp.heavy_hitters import TreeHist, HeavyHitterEstimator
    >>> rng = np.random.default_rng(0)
    >>> names = rng.choice(["ada", "bob", "eve"], p=[.5, .3, .2], size=100_000)
    >>> mech = TreeHist(epsilon=4.0, top_k=3, max_bytes=4, random_state=0)
    >>> est = HeavyHitterEstimator().fit(mech.fit_transform(names))
    >>> est.heavy_hitters_.index.tolist()
    ['ada', 'bob', 'eve']
    """

    _protocol_class = TreeHistProtocol
    _parameter_constraints = {
        **OpenDomainMechanism._parameter_constraints,
        **ENCODING_CONSTRAINTS,
        **MAX_BYTES_OR_DEFAULT,
        **ORACLE_CONSTRAINTS,
        "top_k": [Interval(Integral, 1, 1 << 16, closed="both")],
        "step_bits": [Interval(Integral, 1, 16, closed="both")],
        "final_fraction": [Interval(Real, 0, 1, closed="neither")],
        "width": [Interval(Integral, 1, 1 << 16, closed="both"), None],
        "beta": [Interval(Real, 0, 1, closed="neither")],
    }

    def __init__(
        self,
        epsilon: float = 1.0,
        *,
        top_k: int = 20,
        step_bits: int = 8,
        final_fraction: float = 0.5,
        width: int | None = None,
        beta: float = 0.05,
        item_type: str = "str",
        max_bytes: int | None = None,
        normalization: str | None = "NFC",
        on_long: str = "truncate",
        hash_range: Any = "optimal",
        n_hashes: int = 1024,
        hash_seed: int = 0,
        random_state: Any = None,
    ) -> None:
        self.epsilon = epsilon
        self.top_k = top_k
        self.step_bits = step_bits
        self.final_fraction = final_fraction
        self.width = width
        self.beta = beta
        self.item_type = item_type
        self.max_bytes = max_bytes
        self.normalization = normalization
        self.on_long = on_long
        self.hash_range = hash_range
        self.n_hashes = n_hashes
        self.hash_seed = hash_seed
        self.random_state = random_state
