"""Utility-optimized heavy hitters: a public list of sensitive items, an open domain.

Murakami & Kawamoto's utility-optimized randomized response (uRR) gives the
sensitive values eps-LDP over the *protected* outputs and lets non-sensitive
values through *invertible* outputs. Its rows of non-sensitive values do not
depend on how many non-sensitive values there are, which is what an open
domain needs; but its protected outputs are the sensitive values
themselves, so the non-sensitive values' share of clear reports shrinks as
``(e^eps - 1) / (|S| + e^eps - 1)`` with the size of the sensitive list.
Here the protected outputs are those of an eps'-LDP frequency oracle over
the whole open domain (keyed optimized local hashing, eps' < eps):

* a sensitive item x (in the public list S) is reported through the
  oracle: ``Q(y | x) = M(y | x)`` for protected y;
* a non-sensitive item x is reported in clear with probability
  ``c = 1 - e^(eps' - eps)``, else through the oracle:
  ``Q(x | x) = c``, ``Q(y | x) = (1 - c) M(y | x)``.

**Guarantee: (S, Y_P, eps)-ULDP over the open domain** (Murakami &
Kawamoto, Def. 2). (1) A clear report x is produced by x alone, which is
not sensitive: invertible outputs never come from S. (2) For a protected y
and any items x, x': both rows are ``w(x) M(y | x)`` with ``w = 1`` on S and
``1 - c = e^(eps' - eps)`` off S, and M is eps'-LDP, so
``Q(y | x) / Q(y | x') <= e^eps' w(x) / w(x') <= e^eps' e^(eps - eps') = e^eps``.
The protected outputs do not depend on which sensitive item a user holds
beyond M's eps'-LDP, and the sensitive items are never revealed.

The collector counts the clear reports (``p_hat(x) = count(x) / (n c)``,
unbiased, variance ``p (1/c - p) / n``: the non-sensitive heavy hitters are
discovered from exact reports, no candidates to guess) and estimates each
sensitive item with the oracle: with ``Pi`` the share of protected reports,
``E[S(x) / n] = c1 p(x) + (Pi - p(x)) / g`` for x in S, hence
``p_hat = (S/n - Pi_hat / g) / (c1 - 1/g)``.
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any

import numpy as np
import pandas as pd
from sklearn.utils._param_validation import Interval, StrOptions

from ..exceptions import ReportMismatchError
from ..mechanisms._channel import ReportStatistics
from ..utils._typing import ArrayLike
from ..utils._validation import check_epsilon, check_list_shape
from ._encoding import ItemEncoding
from ._mechanism import ORACLE_CONSTRAINTS, OpenDomainMechanism, require_items
from ._oracle import KeyedLocalHashing, check_hash_range
from ._protocol import _int_param, _Protocol

__all__ = ["UtilityOptimizedHeavyHitters", "UtilityOptimizedProtocol"]

#: Report code of a clear report (the item is in the second column).
CLEAR = -1


class UtilityOptimizedProtocol(_Protocol):
    """Public spec of :class:`UtilityOptimizedHeavyHitters` (see the module notes)."""

    name = "uldp_heavy_hitters"

    @property
    def report_width(self):
        return 2

    def report_column_names(self, column):
        """``<column>_code`` and ``<column>_item`` (the item when reported in clear)."""
        return [f"{column}_code", f"{column}_item"]

    def report_dtypes(self, column):
        """Objects: the integer code (or ``CLEAR``), then the item or None."""
        return [np.dtype(object)] * 2

    def __init__(
        self,
        epsilon,
        sensitive,
        protected_epsilon=None,
        item_type="str",
        normalization="NFC",
        top_k=20,
        hash_range=None,
        n_hashes=1024,
        hash_seed=0,
    ):
        self.epsilon = check_epsilon(epsilon)
        if protected_epsilon is None:
            protected_epsilon = self.epsilon / 2
        self.protected_epsilon = check_epsilon(protected_epsilon, "protected_epsilon")
        if not self.protected_epsilon < self.epsilon:
            raise ValueError(
                f"protected_epsilon must be smaller than epsilon ({self.epsilon}), got "
                f"{self.protected_epsilon}: the clear reports' probability is "
                "1 - e^(protected_epsilon - epsilon)."
            )
        self.top_k = _int_param(top_k, "top_k", 1, 1 << 16)
        if item_type == "str" and normalization is None:
            raise ValueError(
                "The utility-optimized protocol needs normalized text (normalization="
                "'NFC' or 'NFKC'): a sensitive item is recognized by its normalized "
                "form, and without normalization a canonically equivalent spelling of "
                "a sensitive item (e.g. 'e' + U+0301 for 'é') would be another, "
                "non-sensitive item and be reported in clear, looking the same. NFC "
                "leaves normalized text unchanged; for text you normalize yourself, "
                "pass item_type='bytes' with its UTF-8."
            )
        max_bytes = 8 if item_type == "int" else 64
        self.encoding = ItemEncoding(item_type, max_bytes, normalization, "error")
        if isinstance(sensitive, (str, bytes)) or not hasattr(sensitive, "__iter__"):
            # list("abc") would be the items a, b, c (a spec read from a file
            # may hold a string where the list belongs).
            raise ValueError(
                f"sensitive must be a list of items, got a {type(sensitive).__name__}; "
                "e.g. sensitive=['flu', 'hiv']."
            )
        check_list_shape(sensitive, name="sensitive", what="items", example="['flu', 'hiv']")
        items = list(sensitive)
        # dicts and sets are not items (nested lists were refused above)
        odd = [type(v).__name__ for v in items if isinstance(v, (dict, set, frozenset))]
        if odd:
            raise TypeError(
                f"sensitive holds {len(odd)} entries that are not items (a {odd[0]}): an "
                "item is one string, bytes or integer."
            )
        if not items:
            raise ValueError(
                "sensitive is empty: pass the list of sensitive items (with none, use "
                "PrefixExtendingMethod or report everything in clear)."
            )
        data = items if item_type == "int" else np.asarray(items, dtype=object)
        codes, keys, distinct = self.encoding.whole_keys(data, return_items=True)
        if np.unique(keys[codes]).size != len(items):
            raise ValueError("sensitive holds duplicates (after Unicode normalization).")
        # The list as users report items (normalized text, bytes, Python ints),
        # sorted: two specs of one mechanism compare equal and serialize alike
        # whatever the order or spelling they were given in.
        order = sorted(range(len(distinct)), key=distinct.__getitem__)
        self.sensitive = [distinct[i] for i in order]
        self.sensitive_keys = keys[order]
        g = check_hash_range(
            "optimal" if hash_range is None else hash_range, self.protected_epsilon
        )
        self.oracle = KeyedLocalHashing(self.protected_epsilon, g, n_hashes, hash_seed)
        # P(clear report | non-sensitive item) = 1 - e^(eps' - eps).
        self.clear_probability = float(-np.expm1(self.protected_epsilon - self.epsilon))

    def get_params(self):
        return {
            "epsilon": self.epsilon,
            "sensitive": list(self.sensitive),
            "protected_epsilon": self.protected_epsilon,
            "item_type": self.encoding.item_type,
            "normalization": self.encoding.normalization,
            "top_k": self.top_k,
            **self.oracle.to_dict(),
        }

    def to_dict(self):
        """The public spec, a JSON-serialisable dict (bytes items as hex strings)."""
        spec = super().to_dict()
        if self.encoding.item_type == "bytes":
            spec["sensitive"] = [item.hex() for item in self.sensitive]
        return spec

    @classmethod
    def _from_spec(cls, spec):
        items = spec.get("sensitive")
        if spec.get("item_type") == "bytes" and isinstance(items, (list, tuple)):
            try:
                items = [bytes.fromhex(v) if isinstance(v, str) else v for v in items]
            except ValueError:
                raise ValueError(
                    "sensitive of a bytes protocol holds hex strings (as to_dict writes "
                    "them); found one that is not hex."
                ) from None
            spec = {**spec, "sensitive": items}
        return cls(**spec)

    @property
    def n_outputs(self):
        return self.oracle.n_outputs

    def normalized(self, items):
        """Items as users report them in clear (normalized text, bytes or ints)."""
        if self.encoding.item_type != "str":
            return list(items)
        return [self.encoding._normalized(v) for v in items]

    # --------------------------------------------------------------- users
    def sample(self, codes, keys, uniques, rng):
        """Rows ``[code, item]``: code ``j g + y`` (protected) or -1 (clear, item given).

        ``keys[codes[i]]`` is user i's key and ``uniques[codes[i]]`` the item
        as it is shown in clear (normalized), both from one
        :meth:`ItemEncoding.whole_keys` pass. An item is sensitive when its
        key is a sensitive item's: whatever normalizes to a sensitive item
        is sensitive (never shown), and a 61-bit collision of another item
        with a sensitive key only protects that item too.
        """
        n = codes.size
        user_keys = keys[codes]
        sensitive = np.isin(keys, self.sensitive_keys)[codes]
        clear = ~sensitive & (rng.random(n) < self.clear_probability)
        out = np.empty((n, 2), dtype=object)
        protected = np.flatnonzero(~clear)
        code = np.full(n, CLEAR, dtype=np.int64)
        code[protected] = self.oracle.sample(user_keys[protected], rng)
        out[:, 0] = code
        out[:, 1] = None
        shown = np.flatnonzero(clear)
        values = np.empty(len(uniques), dtype=object)
        values[:] = uniques
        out[shown, 1] = values[codes[shown]]
        return out

    # ----------------------------------------------------------- collector
    def encode_reports(self, reports):
        if hasattr(reports, "to_numpy"):
            reports = reports.to_numpy()
        arr = np.asarray(reports, dtype=object)
        if arr.ndim != 2 or arr.shape[1] != 2:
            raise ReportMismatchError(
                f"Reports of {self.name!r} are rows [code, item] of shape (n, 2); got "
                f"shape {arr.shape}."
            )
        try:
            code = np.asarray(arr[:, 0].tolist(), dtype=np.int64)
        except (TypeError, ValueError):
            raise ReportMismatchError("The first report column holds integer codes.") from None
        if code.size and (code.min() < CLEAR or code.max() >= self.n_outputs):
            raise ReportMismatchError(
                f"Report codes must be -1 (clear) or in [0, {self.n_outputs})."
            )
        clear = code == CLEAR
        items = arr[clear, 1]
        if any(v is None for v in items):
            raise ReportMismatchError("A clear report (code -1) must carry its item.")
        return code, items

    def statistics(self, codes, *, keep_reports=False):
        """Counts of the protected (j, y) and of the clear items (a Series), additive."""
        code, items = codes
        protected = code[code != CLEAR]
        counts = np.bincount(protected, minlength=self.n_outputs).astype(np.int64)
        clear = pd.Series(items, dtype=object).value_counts(sort=False)
        clear.index = clear.index.astype(object)
        return ReportStatistics(self, int(code.size), counts, clear.astype(np.int64))

    def merge_extra(self, a, b):
        return a.add(b, fill_value=0).astype(np.int64)

    def decode(self, stats, width=None):
        """Every item seen in clear and every sensitive item, with estimates."""
        n = float(stats.n)
        c = self.clear_probability
        clear = stats.extra if stats.extra is not None else pd.Series(dtype=np.int64)
        p_ns = clear.to_numpy(dtype=float) / (n * c)
        se_ns = np.sqrt(np.clip(p_ns * (1 / c - p_ns), 0, None) / n)
        table = np.asarray(stats.counts, dtype=float)
        g = self.oracle.hash_range
        f = self.oracle.support(table, self.sensitive_keys) / n
        share = table.sum() / n  # Pi_hat, the share of protected reports
        p_s = (f - share / g) / self.oracle.gap
        m = np.clip(f, 0, 1)
        var_s = m * (1 - m) / (n * self.oracle.gap**2)
        # The fixed hash functions' collisions (see KeyedLocalHashing.estimate):
        # variance sum_{y != x} q(y)^2 / (h (g - 1)), q the protected reports'
        # mass of each item: p for a sensitive item, (1 - c) p for another.
        # Both are estimated (squares less their noise: a lower bound).
        q2_s = np.clip(p_s**2 - var_s, 0.0, None)
        q2_ns = np.clip(p_ns**2 - se_ns**2, 0.0, None) * (1 - c) ** 2
        collisions = np.clip(q2_s.sum() + q2_ns.sum() - q2_s, 0.0, None) / (
            self.oracle.n_hashes * (g - 1)
        )
        se_s = np.sqrt(var_s + collisions)
        null_s = np.sqrt(share / g * (1 - share / g) / n) / self.oracle.gap
        # No protected report (share 0, e.g. no sensitive item among few users
        # at a large epsilon): every sensitive estimate is exactly 0 and
        # carries no evidence, so its z-score is 0, not 0 / 0.
        score_s = p_s / null_s if null_s > 0 else np.zeros_like(p_s)
        frame = pd.DataFrame(
            {
                "item": list(clear.index) + list(self.normalized(self.sensitive)),
                "frequency": np.concatenate([p_ns, p_s]),
                "std_error": np.concatenate([se_ns, se_s]),
                "score": np.concatenate([np.full(p_ns.size, np.inf), score_s]),
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
        items = list(universe)
        data = items if self.encoding.item_type == "int" else np.asarray(items, dtype=object)
        codes, keys = self.encoding.whole_keys(data)
        keys = keys[codes]
        sens = np.isin(keys, self.sensitive_keys)
        weight = np.where(sens, 1.0, 1.0 - self.clear_probability)
        M = self.oracle.matrix(keys, realized=realized) * weight[:, None]
        clear = np.zeros((len(items), int((~sens).sum())))
        clear[np.flatnonzero(~sens), np.arange(clear.shape[1])] = self.clear_probability
        return np.concatenate([M, clear], axis=1)

    def protected_outputs(self, universe):
        """Mask of the protected columns of :meth:`channel_matrix`."""
        items = list(universe)
        data = items if self.encoding.item_type == "int" else np.asarray(items, dtype=object)
        codes, keys = self.encoding.whole_keys(data)
        n_clear = int((~np.isin(keys[codes], self.sensitive_keys)).sum())
        return np.r_[np.ones(self.n_outputs, bool), np.zeros(n_clear, bool)]

    def sensitive_mask(self, universe):
        items = list(universe)
        data = items if self.encoding.item_type == "int" else np.asarray(items, dtype=object)
        codes, keys = self.encoding.whole_keys(data)
        return np.isin(keys[codes], self.sensitive_keys)


class UtilityOptimizedHeavyHitters(OpenDomainMechanism):
    """Heavy hitters of an open domain with a public list of sensitive items (ULDP).

    A sensitive item (in ``sensitive``) is reported with eps'-LDP keyed
    optimized local hashing (eps' = ``protected_epsilon``) and is never
    revealed; any other item is reported in clear with probability
    ``1 - e^(eps' - eps)``, and otherwise through the same oracle. The
    mechanism is (S, Y_P, eps)-ULDP over the open domain (proof on the Heavy
    hitters page): the sensitive items get eps-LDP, and the non-sensitive
    heavy hitters are counted from exact reports.

    Parameters
    ----------
    epsilon : float, default=1.0
        The ULDP budget.
    sensitive : list of items
        The public list of sensitive items (normalized like the reports).
    protected_epsilon : float or None, default=None
        eps' < eps of the oracle (None: eps / 2).
    top_k : int, default=20
    item_type : {"str", "bytes", "int"}, default="str"
    normalization : {"NFC", "NFKC"}, default="NFC"
        Text is matched against ``sensitive`` on its normalized form: NFC
        merges canonically equivalent spellings, NFKC also compatibility
        ones. None is refused for text (an unnormalized spelling of a
        sensitive item would be shown in clear).
    hash_range, n_hashes, hash_seed, random_state
        As :class:`PrefixExtendingMethod`.

    Attributes
    ----------
    channel_ : UtilityOptimizedProtocol
        The public spec (what reports carry); ``protocol_`` is its deprecated name.
    clear_probability_ : float
        P(clear report | non-sensitive item).
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp.heavy_hitters import (UtilityOptimizedHeavyHitters,
    ...                                         HeavyHitterEstimator)
    >>> rng = np.random.default_rng(0)
    >>> visits = rng.choice(["cafe", "gym", "park", "clinic"], p=[.4, .3, .2, .1],
    ...                     size=20_000)
    >>> mech = UtilityOptimizedHeavyHitters(epsilon=2.0, sensitive=["clinic"],
    ...                                     top_k=4, random_state=0)
    >>> reports = mech.fit_transform(visits)
    >>> bool((reports[:, 1] == "clinic").any())   # never in clear
    False
    >>> est = HeavyHitterEstimator().fit(reports)
    >>> est.heavy_hitters_.round(1).to_dict()
    {'cafe': 0.4, 'gym': 0.3, 'park': 0.2, 'clinic': 0.1}
    """

    _protocol_class = UtilityOptimizedProtocol
    _parameter_constraints = {
        **OpenDomainMechanism._parameter_constraints,
        **ORACLE_CONSTRAINTS,
        "sensitive": ["array-like"],
        "protected_epsilon": [Interval(Real, 0, None, closed="neither"), None],
        "top_k": [Interval(Integral, 1, 1 << 16, closed="both")],
        "item_type": [StrOptions({"str", "bytes", "int"})],
        "normalization": [StrOptions({"NFC", "NFKC"}), None],
    }

    def __init__(
        self,
        epsilon: float = 1.0,
        *,
        sensitive: Any = (),
        protected_epsilon: float | None = None,
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
        self.protected_epsilon = protected_epsilon
        self.top_k = top_k
        self.item_type = item_type
        self.normalization = normalization
        self.hash_range = hash_range
        self.n_hashes = n_hashes
        self.hash_seed = hash_seed
        self.random_state = random_state

    def fit(self, X: ArrayLike | None = None, y: object = None) -> UtilityOptimizedHeavyHitters:
        super().fit(X, y)
        self.clear_probability_ = self.channel_.clear_probability
        return self

    def _encode(self, X):
        # One pass gives each user's key and the item shown if in clear, so
        # the two can never disagree.
        codes, keys, items = self.channel_.encoding.whole_keys(require_items(X), return_items=True)
        return codes, (keys, items)

    def _sample(self, codes, encoded, rng):
        keys, uniques = encoded
        return self.channel_.sample(codes, keys, uniques, rng)
