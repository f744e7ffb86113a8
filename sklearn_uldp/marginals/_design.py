"""Which marginals to measure, and which frequency oracle measures each.

* :func:`choose_oracle`: the frequency oracle of least variance for one
  marginal's product domain and sensitive cells, as
  :func:`~sklearn_uldp.model_selection.choose_mechanism` ranks them (one
  report per user: one-symbol and bit-vector oracles);
* :func:`choose_marginals`: the size of the marginals (``marginal_size="auto"``),
  after CALM's analysis (Zhang, Wang, Li, He & Chen, CCS 2018): the error of
  a pairwise marginal is the noise of the measured marginals it is read from
  plus, for a pair no measured marginal covers, the error of reconstructing
  it. The derivation is on the "Marginals" page of the documentation.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from numbers import Integral
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import clone

from ..exceptions import PrivacyLeakWarning
from ..mechanisms._memo import is_memoized
from ..utils._validation import check_epsilon
from ._channel import all_subsets

__all__ = ["choose_oracle", "choose_marginals", "ORACLE_NAMES", "MAX_CELLS"]

#: Largest product domain of a measured marginal: a report of a bit-vector
#: oracle takes K bits, and an estimate over more cells than this is noise
#: at any realistic number of users.
MAX_CELLS = 1 << 16

#: The oracles ``mechanism=`` may name (the rows of ``choose_mechanism``'s
#: table whose reports are one symbol or one bit vector).
ORACLE_NAMES = (
    "RR",
    "RAPPOR",
    "OUE",
    "HR",
    "OLH",
    "BLH",
    "SS",
    "HCMS",
    "uRR",
    "uRAP",
    "uOUE",
    "uHR",
    "uSS",
    "uBD",
)

#: A utility-optimized oracle named for a marginal whose every cell is
#: sensitive is its LDP counterpart (the same mechanism with X_S = X).
_LDP_COUNTERPART = {
    "uRR": "RR",
    "uRAP": "RAPPOR",
    "uOUE": "OUE",
    "uHR": "HR",
    "uSS": "SS",
    "uBD": "SS",
}


def _one_shot_oracle(channel):
    """Whether ``channel`` can be a marginal's oracle: one output symbol or one
    bit vector per report (the channel says so), sent once (not memoized)."""
    return (channel.histogram_reports or channel.bit_vector_reports) and not (
        channel.memoized_reports
    )


def _table(k, epsilon, mask):
    from ..model_selection import choose_mechanism

    sensitive = None if mask is None or mask.all() else mask
    with warnings.catch_warnings():
        # Advice the candidates give when fitted (e.g. uRR's "almost k-RR"
        # with many sensitive cells) is about them, not about the choice.
        warnings.simplefilter("ignore", UserWarning)
        warnings.simplefilter("default", PrivacyLeakWarning)
        return choose_mechanism(k, epsilon, sensitive=sensitive)[1]


def choose_oracle(
    n_cells: int,
    epsilon: float,
    sensitive: Any = None,
    mechanism: Any = "auto",
    *,
    cache: dict | None = None,
) -> tuple[str, Any]:
    """The fitted oracle of one marginal, over the codes of its cells.

    Parameters
    ----------
    n_cells : int
        K, the number of cells of the marginal.
    epsilon : float
    sensitive : array-like of bool of shape (K,) or None, default=None
        The sensitive cells (None: all, plain LDP).
    mechanism : "auto", str or mechanism, default="auto"
        ``"auto"``: the oracle with the smallest worst-case expected squared
        error (the variance of its unbiased estimator) among those of
        :func:`~sklearn_uldp.model_selection.choose_mechanism` whose reports
        are one symbol or one bit vector (count-mean sketches excepted). A
        name of :data:`ORACLE_NAMES` takes that row of the table (a
        utility-optimized name for a marginal without non-sensitive cells
        takes its LDP counterpart). A mechanism instance is a template: it
        is cloned with this budget, domain and sensitive set.
    cache : dict, default=None
        Tables already computed, keyed by (K, sensitive cells).

    Returns
    -------
    name : str
        The oracle's short name (its row in the table, or the template's
        class name).
    mechanism : BaseMechanism
        Fitted, over the categories ``np.arange(n_cells)``.

    Examples
    --------
    >>> from sklearn_uldp.marginals import choose_oracle
    >>> choose_oracle(4, 1.0)[0], choose_oracle(64, 1.0)[0]
    ('RR', 'SS')
    >>> import numpy as np
    >>> mask = np.zeros(64, dtype=bool); mask[:4] = True
    >>> choose_oracle(64, 1.0, sensitive=mask)[0]
    'uBD'
    """
    from ..mechanisms._base import BaseMechanism

    epsilon = check_epsilon(epsilon)
    k = int(n_cells)
    mask = None if sensitive is None else np.asarray(sensitive, dtype=bool)
    all_sensitive = mask is None or bool(mask.all())
    categories = np.arange(k)
    if isinstance(mechanism, BaseMechanism):
        mech = clone(mechanism)
        params = mech.get_params()
        update: dict[str, Any] = {"categories": categories}
        if "epsilon" in params:
            update["epsilon"] = epsilon
        if "sensitive" in params:
            update["sensitive"] = np.ones(k, dtype=bool) if all_sensitive else mask
        elif not all_sensitive:
            pass  # an LDP oracle is (X_S, epsilon)-ULDP for every X_S
        mech.set_params(**update)
        if "random_state" in params:
            mech.set_params(random_state=None)  # the privatizer draws the noise
        fitted = mech.fit()
        _check_format(fitted, type(mech).__name__)
        return type(mech).__name__, fitted
    key = (k, None if mask is None or all_sensitive else mask.tobytes())
    if cache is not None and key in cache:
        table = cache[key]
    else:
        table = _table(k, epsilon, None if all_sensitive else mask)
        if cache is not None:
            cache[key] = table
    if isinstance(mechanism, str) and mechanism != "auto":
        if mechanism not in ORACLE_NAMES:
            raise ValueError(
                f"mechanism must be 'auto', a mechanism instance, or one of "
                f"{list(ORACLE_NAMES)}; got {mechanism!r}."
            )
        name = _LDP_COUNTERPART.get(mechanism, mechanism) if all_sensitive else mechanism
        if name not in table.index:
            raise ValueError(
                f"mechanism={mechanism!r} cannot measure a marginal of {k} cells at "
                f"epsilon={epsilon}: its sampler cannot realize that budget there. "
                "Use mechanism='auto'."
            )
        candidates = [name]
    else:
        candidates = list(table.index)
    for name in candidates:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            warnings.simplefilter("default", PrivacyLeakWarning)
            fitted = clone(table.loc[name, "mechanism"]).fit()
        if _one_shot_oracle(fitted.channel_):
            return name, fitted
    raise ValueError(  # pragma: no cover - k-RR is always a candidate
        f"No frequency oracle can measure a marginal of {k} cells at epsilon={epsilon}."
    )


def _check_format(fitted, what):
    channel = fitted.channel_
    if not _one_shot_oracle(channel) or is_memoized(fitted):
        raise ValueError(
            f"{what} cannot measure a marginal: its reports are "
            f"{channel.report_format!r}, and a marginal's oracle sends one symbol or "
            "one bit vector per report, once (k-RR, OUE, local hashing, subset "
            "selection, Hadamard response and their utility-optimized versions)."
        )


def _pair_variances(channel, shape, pair_axes, n_users):
    """Per-cell variance of a pair's cells read from one marginal (null model).

    The unbiased estimate of a pair's cell sums the estimates of the
    marginal's cells that project onto it; their variances add (the
    covariances of the oracles' statistics across cells are <= 0 for k-RR,
    unary encoding and subset selection, and ~0 for local hashing: the sum
    is an upper bound, or close to one). At the uniform distribution.
    """
    k = math.prod(shape)
    var = np.asarray(channel.estimator_variance(np.full(k, 1.0 / k), n_users), dtype=float)
    other = tuple(a for a in range(len(shape)) if a not in pair_axes)
    return var.reshape(shape).sum(axis=other).ravel()


def choose_marginals(
    domains: Mapping[str, Any],
    n: int,
    epsilon: float,
    *,
    sensitive: Mapping[str, Any] | None = None,
    mechanism: Any = "auto",
    max_cells: int = MAX_CELLS,
    max_marginals: int = 1000,
) -> tuple[list[tuple[str, ...]], pd.DataFrame]:
    """The marginals to measure so that every pairwise marginal is most accurate.

    For each size s = 2 .. d of the marginals, the design measures every
    set of s columns (each pair of columns is then covered by C(d-2, s-2)
    marginals, each reported by n / C(d, s) users) and predicts the mean
    total variation of the d(d-1)/2 pairwise marginals: a pair's cell sums
    the cells of a covering marginal that project onto it, so its variance
    is the sum of theirs (at the uniform distribution, from the oracle's
    exact variance, :meth:`Channel.estimator_variance
    <sklearn_uldp.mechanisms.Channel.estimator_variance>`), the covering
    marginals are combined by inverse variance (the consistency step), and
    ``TV ~ 0.5 sqrt(2 / pi) sum_v sd(v)``. Larger marginals cover each
    pair more often and with more users each, but spread those users over
    more cells; the size with the smallest prediction wins (CALM's noise
    error; the reconstruction error of every pair is 0, since every pair is
    measured).

    Size 1 is never chosen: with one-way marginals only, every pair is
    reconstructed as independent, an error that depends on the data, which
    the design cannot see (pass ``marginal_size=1`` when the columns are
    known to be nearly independent).

    Parameters
    ----------
    domains : dict of {str: array-like or int}
        Column -> its domain (or its number of values).
    n : int
        Number of users.
    epsilon : float
    sensitive : dict of {str: array-like of bool}, default=None
        Column -> sensitive mask over its domain (columns left out: every
        value sensitive).
    mechanism : "auto", str or mechanism, default="auto"
        The oracle of each marginal (see :func:`choose_oracle`).
    max_cells : int, default=65536
        Sizes whose largest marginal has more cells are not considered.
    max_marginals : int, default=1000
        Sizes with more sets of columns are not considered.

    Returns
    -------
    marginals : list of tuple of str
        The chosen sets of columns.
    table : DataFrame
        One row per size considered: ``n_marginals``, ``users_per_marginal``,
        ``max_cells``, ``coverage`` (marginals covering each pair),
        ``predicted_tv`` (mean over the pairs); the chosen size first.

    Examples
    --------
    >>> from sklearn_uldp.marginals import choose_marginals
    >>> domains = {"a": 2, "b": 2, "c": 2, "d": 2, "e": 2}
    >>> marginals, table = choose_marginals(domains, n=100_000, epsilon=1.0)
    >>> int(table.index[0]), len(marginals)
    (3, 10)
    >>> marginals, table = choose_marginals(
    ...     {"a": 3, "b": 16, "c": 4, "d": 4, "e": 3}, n=300_000, epsilon=1.0)
    >>> int(table.index[0])
    2
    """
    epsilon = check_epsilon(epsilon)
    if isinstance(n, bool) or not isinstance(n, Integral) or n < 1:
        raise ValueError(f"n must be a number of users >= 1, got {n!r}.")
    if not isinstance(domains, Mapping) or not domains:
        raise ValueError("domains must be a non-empty dict {column: domain or size}.")
    columns = list(domains)
    sizes = {
        c: int(v) if isinstance(v, Integral) and not isinstance(v, bool) else len(v)
        for c, v in domains.items()
    }
    for c, k in sizes.items():
        if k < 2:
            raise ValueError(f"Column {c!r} needs at least two values, got {k}.")
    masks = {
        c: np.asarray(sensitive[c], dtype=bool)
        if sensitive and c in sensitive
        else np.ones(sizes[c], dtype=bool)
        for c in columns
    }
    d = len(columns)
    if d < 2:
        return [tuple(columns)], pd.DataFrame(
            [
                {
                    "n_marginals": 1,
                    "users_per_marginal": float(n),
                    "max_cells": sizes[columns[0]],
                    "coverage": 0,
                    "predicted_tv": np.nan,
                }
            ],
            index=pd.Index([1], name="marginal_size"),
        )
    pairs = all_subsets(columns, 2)
    cache: dict = {}
    rows = []
    designs = {}
    for s in range(2, d + 1):
        sets = all_subsets(columns, s)
        cells = [math.prod(sizes[c] for c in m) for m in sets]
        if len(sets) > max_marginals or max(cells) > max_cells:
            continue
        users = n / len(sets)
        inverse = {pair: 0.0 for pair in pairs}
        variance_of = {}
        for m, k in zip(sets, cells, strict=True):
            shape = tuple(sizes[c] for c in m)
            cell_mask = np.zeros(shape, dtype=bool)
            for axis, c in enumerate(m):
                view = [1] * len(shape)
                view[axis] = shape[axis]
                cell_mask = cell_mask | masks[c].reshape(view)
            _, oracle = choose_oracle(k, epsilon, cell_mask.ravel(), mechanism, cache=cache)
            for pair in all_subsets(m, 2):
                axes = (m.index(pair[0]), m.index(pair[1]))
                v = _pair_variances(oracle.channel_, shape, axes, users)
                variance_of.setdefault(pair, []).append(v)
        tvs = []
        for pair in pairs:
            parts = variance_of[pair]
            combined = 1.0 / np.sum([1.0 / np.maximum(v, 1e-300) for v in parts], axis=0)
            tvs.append(0.5 * math.sqrt(2.0 / math.pi) * float(np.sqrt(combined).sum()))
            inverse[pair] = len(parts)
        designs[s] = sets
        rows.append(
            {
                "marginal_size": s,
                "n_marginals": len(sets),
                "users_per_marginal": users,
                "max_cells": max(cells),
                "coverage": math.comb(d - 2, s - 2),
                "predicted_tv": float(np.mean(tvs)),
            }
        )
    if not rows:
        raise ValueError(
            f"No size of marginals fits: even pairs of these columns have more than "
            f"{max_cells} cells (or more than {max_marginals} marginals). Coarsen the "
            "columns, or pass the marginals to measure."
        )
    table = pd.DataFrame(rows).set_index("marginal_size")
    best = int(table["predicted_tv"].idxmin())
    table = pd.concat([table.loc[[best]], table.drop(index=best)])
    return designs[best], table


def marginal_sets(
    columns: Sequence[str], marginal_size: Any, marginals: Any
) -> list[tuple[str, ...]]:
    """The measured sets from the privatizer's parameters (``"auto"`` excepted)."""
    position = {c: j for j, c in enumerate(columns)}
    if marginals is not None:
        if isinstance(marginals, (str, bytes)) or not isinstance(marginals, (list, tuple)):
            raise ValueError(
                "marginals must be a list of column tuples, e.g. [('age', 'sex'), "
                "('sex', 'income')]."
            )
        if not marginals:
            raise ValueError("marginals must hold at least one set of columns.")
        out = []
        for j, m in enumerate(marginals):
            if isinstance(m, (str, bytes)) or not isinstance(m, (list, tuple, set, frozenset)):
                raise ValueError(
                    f"marginals[{j}] must be a tuple of column names (a one-column "
                    "marginal is a one-element tuple)."
                )
            m = list(m)
            unknown = [c for c in m if c not in position]
            if unknown or not m:
                raise ValueError(
                    f"marginals[{j}] names {len(unknown)} column(s) that are not among "
                    f"the privatized columns {list(columns)[:20]}."
                    if unknown
                    else f"marginals[{j}] is empty."
                )
            if len(set(m)) != len(m):
                raise ValueError(f"marginals[{j}] names a column twice.")
            out.append(tuple(sorted(m, key=position.__getitem__)))
        if len(set(out)) != len(out):
            raise ValueError("marginals lists the same set of columns twice.")
        return out
    if marginal_size > len(columns):
        raise ValueError(
            f"marginal_size={marginal_size} is larger than the number of columns ({len(columns)})."
        )
    return all_subsets(columns, marginal_size)
