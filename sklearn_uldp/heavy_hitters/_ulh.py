"""Utility-optimized local hashing over an open domain (He et al. 2025's uLH).

:class:`~sklearn_uldp.heavy_hitters.UtilityOptimizedHeavyHitters` splits the
budget: the sensitive items get an eps'-LDP oracle (eps' = eps/2 by
default) and a non-sensitive item goes through the same oracle (with its
value) when it is not shown in clear. He et al.'s transformation of OLH
(the fixed-domain version is
:class:`~sklearn_uldp.mechanisms.UtilityOptimizedLocalHashing`; derivation
on the docs' "Utility-optimized frontier" page) spends the whole budget on
the sensitive items and hides a non-sensitive item *without* its value:

* a sensitive item x (in the public list S): keyed OLH with budget eps,
  ``Q((j, y) | x) = c1/h`` if ``h_j(x) = y``, else ``c2/h``;
* a non-sensitive item x: in clear w.p. ``1 - g c2 = (e^eps - 1)/(e^eps + g - 1)``,
  else a uniform ``(j, y)``: ``Q((j, y) | x) = c2/h``.

**Guarantee: (S, Y_P, eps)-ULDP over the open domain.** A clear report comes
from its item alone, never a sensitive one; every protected column is
``c2/h`` or ``c1/h`` for a sensitive item and ``c2/h`` for any other, so no
two items' probabilities are more than ``c1/c2 = e^eps`` apart.

**Estimation.** A clear report counts its item (``p_hat = count / (n c)``,
c the clear probability). The support frequency f(x) of a sensitive x has
mean ``c1 p(x) + (P_S - p(x))/g + c2 (1 - P_S)`` (collisions over the random
functions, as OLH's), and a clear report counts ``1/g`` towards it (the
pure-ULDP aggregation's lambda), so
``p_hat(x) = (f(x) + q_clear / g - 1/g) / (c1 - 1/g)`` is unbiased, with
OLH's variance over a domain of sensitive items only, plus the fixed hash
functions' collisions among the sensitive items (the hidden non-sensitive
reports are uniform: they collide with nothing).

Against :class:`UtilityOptimizedHeavyHitters` at the same eps the sensitive
estimates have OLH's variance at eps instead of eps/2, and the clear
probability is about the same (``(e^eps - 1)/(e^eps + g - 1)`` against
``1 - e^(-eps/2)``); ``benchmarks/bench_ulh.py --open-domain`` measures it.
"""

from __future__ import annotations

from numbers import Real
from typing import Any

import numpy as np
import pandas as pd

from ..mechanisms._transformed import optimal_ulh_hash_range
from ._oracle import KeyedLocalHashing, check_hash_range
from ._utility import CLEAR, UtilityOptimizedHeavyHitters, UtilityOptimizedProtocol

__all__ = ["UtilityOptimizedLocalHashingProtocol", "UtilityOptimizedLocalHashingHeavyHitters"]


class UtilityOptimizedLocalHashingProtocol(UtilityOptimizedProtocol):
    """Public spec of :class:`UtilityOptimizedLocalHashingHeavyHitters` (module notes).

    The sensitive list, the item encoding and the statistics are those of
    :class:`UtilityOptimizedProtocol`; the oracle spends the whole budget and
    a hidden non-sensitive item is a uniform (j, y).
    """

    name = "uldp_local_hashing"

    def __init__(
        self,
        epsilon,
        sensitive,
        item_type="str",
        normalization="NFC",
        top_k=20,
        hash_range=None,
        n_hashes=1024,
        hash_seed=0,
    ):
        # The sensitive list's checks and normalization are the parent's; its
        # split budget is replaced by one oracle at the whole budget.
        super().__init__(
            epsilon,
            sensitive,
            protected_epsilon=float(epsilon) / 2 if _is_real(epsilon) else epsilon,
            item_type=item_type,
            normalization=normalization,
            top_k=top_k,
            hash_range=None,
            n_hashes=n_hashes,
            hash_seed=hash_seed,
        )
        self.protected_epsilon = self.epsilon
        if hash_range is None or hash_range == "optimal":
            # uLH's worst-case optimum for this many sensitive items; the
            # non-sensitive items' share of the loss is at most 1 / c whatever
            # their number (an open domain: counted as 2^20 of them).
            # (g is bounded as OLH's default g of the open domain is)
            g = optimal_ulh_hash_range(self.epsilon, len(self.sensitive), 1 << 20)
        else:
            g = check_hash_range(hash_range, self.epsilon)
        self.oracle = KeyedLocalHashing(self.epsilon, g, n_hashes, hash_seed)
        # P(clear | non-sensitive) = 1 - g c2 = (E - 1)/(E + g - 1), stably
        z = np.exp(-self.epsilon)
        self.clear_probability = float(-np.expm1(-self.epsilon) / (1.0 + (g - 1) * z))

    def get_params(self):
        params = super().get_params()
        del params["protected_epsilon"]
        return params

    # --------------------------------------------------------------- users
    def sample(self, codes, keys, uniques, rng):
        """Rows ``[code, item]``: code ``j g + y`` (protected) or -1 (clear, item given).

        A sensitive user's code is keyed OLH of its key; a non-sensitive
        user is in clear w.p. ``clear_probability``, else a uniform code
        (one uniform, then one uniform integer: independent draws).
        """
        n = codes.size
        user_keys = keys[codes]
        sensitive = np.isin(keys, self.sensitive_keys)[codes]
        others = ~sensitive
        clear = others & (rng.random(n) < self.clear_probability)
        code = np.full(n, CLEAR, dtype=np.int64)
        users = np.flatnonzero(sensitive)
        code[users] = self.oracle.sample(user_keys[users], rng)
        hidden = np.flatnonzero(others & ~clear)
        code[hidden] = rng.integers(0, self.n_outputs, size=hidden.size, dtype=np.int64)
        out = np.empty((n, 2), dtype=object)
        out[:, 0] = code
        out[:, 1] = None
        shown = np.flatnonzero(clear)
        values = np.empty(len(uniques), dtype=object)
        values[:] = uniques
        out[shown, 1] = values[codes[shown]]
        return out

    # ----------------------------------------------------------- collector
    def decode(self, stats, width=None):
        """Every item seen in clear and every sensitive item, with estimates."""
        n = float(stats.n)
        c = self.clear_probability
        clear = stats.extra if stats.extra is not None else pd.Series(dtype=np.int64)
        p_ns = clear.to_numpy(dtype=float) / (n * c)
        se_ns = np.sqrt(np.clip(p_ns * (1 / c - p_ns), 0, None) / n)
        table = np.asarray(stats.counts, dtype=float)
        g, gap = self.oracle.hash_range, self.oracle.gap
        q_clear = float(clear.sum()) / n
        f = self.oracle.support(table, self.sensitive_keys) / n
        m = f + q_clear / g  # the statistic: 1/g per clear report
        p_s = (m - 1.0 / g) / gap
        # Var of the statistic (values 0, 1/g, 1): E t^2 - m^2, plug-in
        var_s = np.clip(f + q_clear / g**2 - m**2, 0.0, None) / (n * gap**2)
        # collisions of the fixed functions among the sensitive items only
        q2 = np.clip(p_s**2 - var_s, 0.0, None)
        collisions = np.clip(q2.sum() - q2, 0.0, None) / (self.oracle.n_hashes * (g - 1))
        se_s = np.sqrt(var_s + collisions)
        null_s = np.sqrt(self.oracle.null_variance_factor() / n)
        frame = pd.DataFrame(
            {
                "item": list(clear.index) + list(self.normalized(self.sensitive)),
                "frequency": np.concatenate([p_ns, p_s]),
                "std_error": np.concatenate([se_ns, se_s]),
                "score": np.concatenate([np.full(p_ns.size, np.inf), p_s / null_s]),
                "sensitive": np.r_[np.zeros(p_ns.size, bool), np.ones(p_s.size, bool)],
            }
        )
        return frame.sort_values("frequency", ascending=False, kind="stable").reset_index(drop=True)

    # -------------------------------------------------------- exact channel
    def channel_matrix(self, universe, *, realized=False):
        """Exact channel over a finite universe: (K, h g + #non-sensitive).

        Columns: the protected outputs (j, y), then one invertible output
        "x in clear" per non-sensitive item of the universe, in order.
        """
        from ..utils._validation import realized_probability

        items = list(universe)
        data = items if self.encoding.item_type == "int" else np.asarray(items, dtype=object)
        codes, keys = self.encoding.whole_keys(data)
        keys = keys[codes]
        sens = np.isin(keys, self.sensitive_keys)
        clear_p = (
            realized_probability(self.clear_probability) if realized else self.clear_probability
        )
        M = self.oracle.matrix(keys, realized=realized)
        M[~sens] = (1.0 - clear_p) / self.n_outputs
        clear = np.zeros((len(items), int((~sens).sum())))
        clear[np.flatnonzero(~sens), np.arange(clear.shape[1])] = clear_p
        return np.concatenate([M, clear], axis=1)


def _is_real(value):
    return isinstance(value, Real) and not isinstance(value, bool)


class UtilityOptimizedLocalHashingHeavyHitters(UtilityOptimizedHeavyHitters):
    """Heavy hitters of an open domain with uLH: a public sensitive list, the whole budget.

    He et al.'s transformation of OLH (USENIX Security 2025) over an open
    domain: a sensitive item (in ``sensitive``) is reported with keyed OLH at
    the whole budget eps and never revealed; any other item is reported in
    clear w.p. ``(e^eps - 1)/(e^eps + g - 1)`` and otherwise as a uniform
    (hash, bucket) that carries nothing of it. (S, Y_P, eps)-ULDP over the
    open domain (proof in ``sklearn_uldp.heavy_hitters._ulh``).
    :class:`UtilityOptimizedHeavyHitters` instead gives the sensitive items
    an oracle at ``protected_epsilon`` (eps/2 by default): uLH's sensitive
    estimates have OLH's variance at eps, about a quarter of it at eps = 1.

    Parameters
    ----------
    epsilon : float, default=1.0
        The ULDP budget (all of it for the sensitive items' oracle).
    sensitive : list of items
        The public list of sensitive items.
    top_k : int, default=20
    item_type : {"str", "bytes", "int"}, default="str"
    normalization : {"NFC", "NFKC"}, default="NFC"
    hash_range : "optimal" or int, default="optimal"
        g. ``"optimal"``: uLH's g with the smallest worst-case l2 loss for
        this many sensitive items
        (:func:`~sklearn_uldp.mechanisms.optimal_ulh_hash_range`; OLH's
        e^eps + 1 for many of them, smaller for few).
    n_hashes, hash_seed, random_state
        As :class:`PrefixExtendingMethod`.

    Attributes
    ----------
    protocol_ : UtilityOptimizedLocalHashingProtocol
    clear_probability_ : float
        P(clear report | non-sensitive item).
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp.heavy_hitters import (
    ...     UtilityOptimizedLocalHashingHeavyHitters, HeavyHitterEstimator)
    >>> rng = np.random.default_rng(0)
    >>> visits = rng.choice(["cafe", "gym", "park", "clinic"], p=[.4, .3, .2, .1],
    ...                     size=20_000)
    >>> mech = UtilityOptimizedLocalHashingHeavyHitters(
    ...     epsilon=2.0, sensitive=["clinic"], top_k=4, random_state=0)
    >>> reports = mech.fit_transform(visits)
    >>> bool((reports[:, 1] == "clinic").any())   # never in clear
    False
    >>> est = HeavyHitterEstimator().fit(reports)
    >>> est.heavy_hitters_.round(1).to_dict()
    {'cafe': 0.4, 'gym': 0.3, 'park': 0.2, 'clinic': 0.1}
    """

    # its own constructor (no protected_epsilon): typed as the base does it
    _protocol_class: Any = UtilityOptimizedLocalHashingProtocol
    _parameter_constraints = {
        key: value
        for key, value in UtilityOptimizedHeavyHitters._parameter_constraints.items()
        if key != "protected_epsilon"
    }

    def __init__(
        self,
        epsilon: float = 1.0,
        *,
        sensitive: Any = (),
        top_k: int = 20,
        item_type: str = "str",
        normalization: str | None = "NFC",
        hash_range: Any = "optimal",
        n_hashes: int = 1024,
        hash_seed: int = 0,
        random_state: Any = None,
    ) -> None:
        self.epsilon = epsilon
        self.sensitive = sensitive
        self.top_k = top_k
        self.item_type = item_type
        self.normalization = normalization
        self.hash_range = hash_range
        self.n_hashes = n_hashes
        self.hash_seed = hash_seed
        self.random_state = random_state
