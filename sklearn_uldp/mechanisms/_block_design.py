"""Utility-optimized block design (uBD) and utility-optimized OUE (uOUE).

References
----------
Utility-optimized block design: arXiv 2509.24173 (2025). Outputs are
h-subsets of the sensitive set X_S or a non-sensitive value; with h = 1 it is
the uRR of Murakami & Kawamoto (USENIX Security 2019).
Utility-optimized OUE: uRAP (Murakami & Kawamoto 2019, Def. 5) with theta =
1/2, the choice of optimized unary encoding (Wang, Blocki, Li & Jha, USENIX
Security 2017).

Derivation of the uBD channel and its unbiased estimator
---------------------------------------------------------
Let s = ``|X_S|``, E = e^eps, D = h E + s - h, C = binom(s, h) and c0 = s/(D C).

* Sensitive x: x enters the subset T w.p. hE/D (the other h - 1 members
  uniform among X_S minus x), otherwise T is a uniform h-subset of X_S minus
  x. Since binom(s-1, h-1) = C h/s and binom(s-1, h) = C (s-h)/s, this gives
  ``Q(T|x) = c0 E`` if x in T and ``c0`` otherwise.
* Non-sensitive x: reported as itself w.p. h(E-1)/D (invertible), otherwise a
  uniform h-subset: ``Q(T|x) = (s/D)/C = c0``.

So every protected output T has ``max_x Q(T|x) / min_x Q(T|x) = E``: it is
(X_S, Y_P, eps)-ULDP with Y_P the h-subsets. With h = 1, D = s + E - 1 is
uRR's normaliser.

Estimator. For sensitive x let P(x in T) be the chance that a report is a
subset holding x. Another sensitive x' puts x in T w.p.
``c_S = h (E (h-1) + s - h) / (D (s-1))`` and a non-sensitive x' w.p.
``c_N = h/D``; since ``c_N - c_S = -(h/D)(h-1)(E-1)/(s-1)`` and a report is
the non-sensitive x' w.p. ``h(E-1)/D p(x')``, the statistic

    f(x) = q(x in T) + (h-1)/(s-1) q(report in X_N)

has mean ``c_S + p(x) h (s-h)(E-1)/(D (s-1))`` (for a distribution p), so
``p_hat(x) = a f(x) + b`` with ``a = D (s-1) / (h (s-h) (E-1))`` and
``b = -(E (h-1) + s - h) / ((s-h)(E-1))`` (h = 1 gives uRR's u/(E-1) and
-1/(E-1)). For non-sensitive x, ``p_hat(x) = D/(h(E-1)) q(x)``. The
estimator needs h < s (for s = 1 only h = 1).

Mixture over subset sizes (``subset_size={h: w_h}``): a user first draws h
with probability w_h, then runs uBD with that h. Subsets of different sizes
are different outputs, so every protected output keeps the ratio bound E. With
pooled constants (sums over h weighted by w_h) the same statistic
``f(x) = q(x in T) + beta q(report in X_N)``, ``beta = sum w_h (c_S,h - c_N,h)
/ sum w_h h (E-1)/D_h``, is unbiased after the affine map, and the EM
likelihood keeps its structure (the report-only factor is w_h c0_h).

Sampling draws every choice from an independent uniform (the public MATLAB
code of the paper reuses one uniform for two choices in its mixture path,
which correlates them and breaks the privacy guarantee).

The optimal design and its decoder (arXiv 2509.24173)
------------------------------------------------------
Write t = k - s, and for a mixture ``w`` over sizes and a weight alpha in
(0, 1) let P_alpha be the distribution with mass alpha / s on each sensitive
and (1 - alpha) / t on each non-sensitive category. The Fisher information of
the mixture channel at P_alpha is diagonal on three subspaces of the tangent
space (centred sensitive vectors H1, centred non-sensitive vectors H2, and
the direction u = [t 1_S, -s 1_N] of H3), with eigenvalues

    J1 = s (E-1)^2 / (s-1) sum_h w_h h (s-h) / ((alpha h (E-1) + s) D_h)
    J2 = t (E-1) / (1-alpha) sum_h w_h h / D_h
    J3 = s t (E-1) / (k (1-alpha)) sum_h w_h h / (alpha h (E-1) + s)

and ``M(alpha, w) = (s-1)/J1 + (t-1)/J2 + 1/J3`` is the variance (times n)
of the locally efficient estimator at P_alpha. The paper's converse bound is
``sup_alpha inf_w M(alpha, w) / n``: no estimator does better in the worst
case, and uBD with the optimal mixture and the *projection decoder*

    p_hat = P_alpha + Phi_1(eta)/J1 + Phi_2(eta)/J2 + Phi_3(eta)/J3,
    eta(x) = (1/n) sum_i Q(y_i | x) / Q_alpha(y_i),

(Phi_j the orthogonal projection onto H_j) reaches it. The decoder is
unbiased for every p (``E eta = F p`` with F the information matrix, and
F P_alpha = 1), and it is linear in additive counts: for a protected report
of size h, ``Q(y|x)/Q_alpha(y) = E^[x in T] / (1 + alpha h (E-1)/s)``, and for
the invertible report of a non-sensitive x it is ``t / (1-alpha)`` at x and 0
elsewhere. So each report adds a per-category contribution that takes
2H + 1 values for a sensitive x (size h, x in T or not; invertible) and H + 2
for a non-sensitive one, which gives its exact variance in closed form
(:meth:`UtilityOptimizedBlockDesignChannel.estimator_variance`). The counts
it needs are the per-size counts of each sensitive bit and of the protected
reports, appended to the statistics of a channel with ``alpha`` set.
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Literal

import numpy as np
import scipy.sparse as sp
from scipy.optimize import minimize, minimize_scalar
from scipy.special import gammaln
from sklearn.utils._param_validation import Interval, StrOptions

from ..exceptions import ReportMismatchError
from ..utils._bits import (
    column_counts,
    masked_row_counts,
    pack_rows,
    packed_width,
    set_packed_bits,
)
from ..utils._typing import ArrayLike, Categories, RandomStateLike, Sensitive
from ..utils._validation import check_sensitive, realized_probability
from ._channel import MAX_MATRIX_OUTPUTS, Channel, ReportStatistics
from ._docs import fill_mechanism_doc
from ._rappor import (
    UnaryEncodingChannel,
    UtilityOptimizedRAPPOR,
    _UnaryEncodingMechanism,
)
from ._reports import PackedReports

__all__ = [
    "UtilityOptimizedBlockDesignChannel",
    "UtilityOptimizedBlockDesign",
    "UtilityOptimizedOUE",
]


def _uniform_subsets(n, N, m, rng):
    """``n`` independent uniform m-subsets of range(N), as an (n, m) array."""
    if m == 0 or n == 0:
        return np.zeros((n, m), dtype=np.int64)
    if m * m <= 4 * N:
        # Floyd's algorithm, vectorized over users: m passes, O(n m^2).
        chosen = np.empty((n, m), dtype=np.int64)
        for i, j in enumerate(range(N - m, N)):
            t = rng.integers(0, j + 1, size=n, dtype=np.int64)
            dup = (chosen[:, :i] == t[:, None]).any(axis=1)
            chosen[:, i] = np.where(dup, j, t)
        return chosen
    # Large subsets: the m smallest of N i.i.d. uniform keys, by row chunks.
    out = np.empty((n, m), dtype=np.int64)
    step = max(1, (1 << 22) // N)
    for lo in range(0, n, step):
        keys = rng.random((min(n, lo + step) - lo, N))
        out[lo : lo + step] = np.argpartition(keys, m - 1, axis=1)[:, :m]
    return out


def _ubd_keep(epsilon, h, s):
    """P(x in T | x sensitive) and P(report x | x non-sensitive), per size h.

    hE / D and h(E - 1) / D with D = hE + s - h, divided by E so that no
    e^eps overflows and 1 - e^-eps keeps its precision.
    """
    z = np.exp(-epsilon)
    den = h + (s - h) * z
    return h / den, h * -np.expm1(-epsilon) / den


def _check_subset_size(subset_size):
    """Validate the type of ``subset_size`` (an int, or a mixture {h: weight})."""
    if isinstance(subset_size, dict):  # JSON specs have string keys
        out = {}
        for h, w in subset_size.items():
            if isinstance(h, str) and h.isdigit():
                h = int(h)
            if isinstance(h, bool) or not isinstance(h, Integral):
                raise TypeError(
                    f"subset_size mixture keys are subset sizes (integers), got "
                    f"{h!r}. Write e.g. {{1: 0.5, 2: 0.5}}."
                )
            if isinstance(w, bool) or not isinstance(w, Real):
                raise TypeError(f"subset_size mixture weights are numbers, got {w!r} for size {h}.")
            out[int(h)] = float(w)
        return out
    if isinstance(subset_size, bool) or not isinstance(subset_size, Integral):
        raise TypeError(
            "subset_size must be an integer h >= 1 or a mixture {h: weight}, "
            f"got {subset_size!r} of type {type(subset_size).__name__}."
        )
    return int(subset_size)


def _check_mixture(subset_size, s):
    """Resolve ``subset_size`` (int or {h: weight}) into (sizes, weights)."""
    hmax = max(1, s - 1)
    if isinstance(subset_size, dict):
        items = sorted((int(h), float(w)) for h, w in subset_size.items() if float(w) != 0.0)
        if not items:
            raise ValueError("The subset-size mixture has no positive weight.")
        sizes = np.array([h for h, _ in items], dtype=np.int64)
        weights = np.array([w for _, w in items])
        if (weights < 0).any() or not np.isfinite(weights).all():
            raise ValueError("Mixture weights must be non-negative and finite.")
        weights = weights / weights.sum()
    else:
        sizes, weights = np.array([int(subset_size)], dtype=np.int64), np.ones(1)
    if sizes.min() < 1 or sizes.max() > hmax:
        raise ValueError(
            f"subset_size must be between 1 and s - 1 = {hmax} (s = {s} sensitive "
            f"categories), got {subset_size}."
        )
    return sizes, weights


def _design_vectors(alpha, hmax, k, s, epsilon):
    """Per-size coefficients g_j(h) with J_j = sum_h w_h g_j(h) (docstring).

    A subspace of dimension 0 (s = 1 for H1; t = 0 for H2 and H3) gets
    g = None.
    """
    E1 = np.expm1(epsilon)
    h = np.arange(1, hmax + 1, dtype=float)
    t = k - s
    D = h * (E1 + 1.0) + s - h
    tilt = alpha * h * E1 + s
    g1 = s * E1**2 / (s - 1) * h * (s - h) / (tilt * D) if s > 1 else None
    if t == 0:
        return g1, None, None
    g2 = t * E1 / (1.0 - alpha) * h / D
    g3 = s * t * E1 / (k * (1.0 - alpha)) * h / tilt
    return g1, g2, g3


def _design_information(alpha, weights, k, s, epsilon):
    """(J1, J2, J3) of a size mixture at P_alpha (inf for an empty subspace)."""
    w = np.asarray(weights, dtype=float)
    gs = _design_vectors(alpha, w.size, k, s, epsilon)
    return tuple(np.inf if g is None else float(w @ g) for g in gs)


def _bound_and_gradient(alpha, k, s, epsilon, hmax):
    """Functions w -> M(alpha, w) and its gradient (each J is linear in w)."""
    gs = _design_vectors(alpha, hmax, k, s, epsilon)
    dims = (s - 1, k - s - 1, 1)
    terms = [(d, g) for d, g in zip(dims, gs, strict=True) if g is not None and d > 0]

    def value(w):
        total = 0.0
        for d, g in terms:
            J = float(w @ g)
            if J <= 0:
                return np.inf
            total += d / J
        return total

    def grad(w):
        out = np.zeros(hmax)
        for d, g in terms:
            out -= d * g / max(float(w @ g), 1e-300) ** 2
        return out

    return value, grad


def _design_bound(alpha, weights, k, s, epsilon):
    """M(alpha, w) = (s-1)/J1 + (t-1)/J2 + 1/J3 (n times the variance)."""
    w = np.asarray(weights, dtype=float)
    return _bound_and_gradient(alpha, k, s, epsilon, w.size)[0](w)


def _best_mixture(alpha, k, s, epsilon):
    """inf over mixtures w of M(alpha, w): a convex problem on the simplex.

    Each J is linear in w, so M is convex in w, and since it depends on w
    through three linear functionals an optimum uses few sizes. An active
    set: SLSQP (exact gradient) on a window of sizes around the best single
    one, grown while some size outside it has a smaller partial derivative
    than the sizes in use (the optimality condition on the simplex).
    """
    hmax = max(1, s - 1)
    value, grad = _bound_and_gradient(alpha, k, s, epsilon, hmax)
    singles = np.array([value(row) for row in np.eye(hmax)])
    best_h = int(np.argmin(singles))
    best_w, best_val = np.eye(hmax)[best_h], float(singles[best_h])
    if hmax == 1:
        return best_w, best_val
    g = grad(best_w)
    if (g >= g[best_h] - 1e-12 * abs(g[best_h])).all():
        return best_w, best_val  # the vertex is optimal (no descent direction)
    active = set(range(max(0, best_h - 4), min(hmax, best_h + 5)))
    for _ in range(20):  # rounds of the active set, not users
        idx = np.array(sorted(active))
        start = np.full(idx.size, 0.1 / idx.size)
        start[np.searchsorted(idx, best_h)] += 0.9

        def sub_value(v, idx=idx):
            w = np.zeros(hmax)
            w[idx] = np.clip(v, 0.0, None)
            return value(w)

        def sub_grad(v, idx=idx):
            w = np.zeros(hmax)
            w[idx] = np.clip(v, 0.0, None)
            return grad(w)[idx]

        res = minimize(
            sub_value,
            start,
            jac=sub_grad,
            method="SLSQP",
            bounds=[(0.0, 1.0)] * idx.size,
            constraints=[
                {"type": "eq", "fun": lambda v: np.sum(v) - 1.0, "jac": lambda v: np.ones_like(v)}
            ],
            options={"ftol": 1e-15, "maxiter": 300},
        )
        w = np.zeros(hmax)
        w[idx] = np.clip(res.x, 0.0, None)
        w /= w.sum()
        val = value(w)
        if val < best_val:
            best_w, best_val = w, val
        g = grad(best_w)
        level = float(g[best_w > 1e-9].min())
        better = np.flatnonzero(g < level - 1e-9 * abs(level))
        new = [int(h) for h in better[np.argsort(g[better])][:5] if h not in active]
        if not new:
            break
        active.update(new)
    return best_w, best_val


def _optimal_design(k, s, epsilon):
    """The (alpha, mixture) saddle point of arXiv 2509.24173, and M.

    Returns ``(alpha, weights, bound)``: ``bound = sup_alpha inf_w M`` is n
    times the converse (minimax) bound on the expected squared l2 loss, and
    the mixture ``weights`` (over h = 1..max(1, s-1); sizes below 1e-8 are
    dropped, as in the paper's code) attains it with the projection decoder
    at ``alpha``. The outer problem is a bounded scalar maximization over
    alpha, started from a grid so that it does not stop at an end point.
    """
    if k == s:  # no non-sensitive value: P_alpha is uniform on X_S
        w, val = _best_mixture(1.0, k, s, epsilon)
        return 1.0, w, val

    def neg(alpha):
        return -_best_mixture(alpha, k, s, epsilon)[1]

    grid = np.linspace(0.05, 0.95, 10)
    vals = [neg(a) for a in grid]
    i = int(np.argmin(vals))
    lo, hi = (
        grid[max(i - 1, 0)] if i > 0 else 1e-9,
        (grid[i + 1] if i + 1 < grid.size else 1.0 - 1e-9),
    )
    res = minimize_scalar(neg, bounds=(lo, hi), method="bounded", options={"xatol": 1e-9})
    alpha = float(res.x)
    w, val = _best_mixture(alpha, k, s, epsilon)
    w = np.where(w < 1e-8, 0.0, w)
    return alpha, w / w.sum(), val


def ubd_converse_bound(n_categories: int, n_sensitive: int, epsilon: float, n: int = 1) -> float:
    """The converse bound of ULDP distribution estimation (arXiv 2509.24173).

    ``sup_alpha inf_w M(alpha, w) / n``: the expected squared l2 loss below
    which no (X_S, Y_P, epsilon)-ULDP mechanism and estimator can go for
    every distribution (the minimax risk, to first order in 1/n). The
    utility-optimized block design with ``subset_size="optimal"`` reaches it
    (its exact loss at the least favourable distribution P_alpha equals the
    bound).

    Parameters
    ----------
    n_categories : int
        k, the size of the domain.
    n_sensitive : int
        s = ``|X_S|``, between 1 and k.
    epsilon : float
        Privacy budget (> 0).
    n : int, default=1
        Number of users.

    Returns
    -------
    bound : float

    Examples
    --------
    >>> from sklearn_uldp.mechanisms._block_design import ubd_converse_bound
    >>> round(ubd_converse_bound(20, 4, 1.0, n=1), 3)
    9.057
    """
    k, s = int(n_categories), int(n_sensitive)
    if not 1 <= s <= k or k < 2:
        raise ValueError(
            f"Need 1 <= n_sensitive <= n_categories and n_categories >= 2, got "
            f"n_categories={n_categories}, n_sensitive={n_sensitive}."
        )
    from ..utils._validation import check_epsilon

    epsilon = check_epsilon(epsilon)
    return _optimal_design(k, s, epsilon)[2] / n


class UtilityOptimizedBlockDesignChannel(UnaryEncodingChannel):
    """Channel of utility-optimized block design, (X_S, h, epsilon)-uBD.

    Reports are 0/1 vectors over the categories (like uRAP): a protected
    report has exactly h sensitive bits set (the subset T), an invertible one
    exactly one non-sensitive bit. The derivation of the channel and of the
    unbiased estimator is in the module docstring. The likelihood of a
    protected report is ``c0 E^{[x in T]}``, so EM runs with the two sparse
    products of the RAPPOR family.

    A *mixture* over subset sizes (``subset_size={h: w_h}``) first draws h
    with probability w_h (its own uniform draw), then runs uBD with that h.
    Each protected output keeps the ratio bound E (subsets of different sizes
    are different outputs), and the unbiased statistic is the same with
    pooled constants: ``f(x) = q(x in T) + beta q(report in X_N)`` with
    ``beta = sum_h w_h (c_S,h - c_N,h) / sum_h w_h h (E-1)/D_h``, mean
    ``sum_h w_h c_S,h + p(x) sum_h w_h (hE/D_h - c_S,h)``.

    Parameters
    ----------
    categories : array-like of shape (k,)
    epsilon : float
    sensitive : array-like of bool of shape (k,)
    subset_size : int or dict
        h, with 1 <= h <= max(1, s - 1), or a mixture ``{h: weight}``.

    Examples
    --------
    >>> from sklearn_uldp.mechanisms import UtilityOptimizedBlockDesignChannel
    >>> channel = UtilityOptimizedBlockDesignChannel(
    ...     ["a", "b", "c", "d"], epsilon=1.0, sensitive=[True, True, True, False],
    ...     subset_size=1)
    >>> channel
    UtilityOptimizedBlockDesignChannel(k=4, epsilon=1.0, subset_size=1)
    >>> channel.report_format, channel.n_outputs, channel.report_bits
    ('bits', 4, 2.0)
    """

    name = "ubd"
    _spec_field_schemas = {
        **Channel._spec_field_schemas,
        "sensitive": UnaryEncodingChannel._spec_field_schemas["sensitive"],
        "subset_size": {
            "oneOf": [
                {"type": "integer", "minimum": 1},
                {
                    "type": "object",
                    "propertyNames": {"pattern": "^[1-9][0-9]*$"},
                    "additionalProperties": {"type": "number", "minimum": 0},
                    "minProperties": 1,
                },
            ],
            "description": (
                "h, the number of sensitive categories in a protected report "
                "(1 <= h <= max(1, s - 1)), or a mixture {h: weight}."
            ),
        },
        "alpha": {
            "type": ["number", "null"],
            "exclusiveMinimum": 0,
            "exclusiveMaximum": 1,
            "description": (
                "Mass of the sensitive set in the reference distribution of "
                "the projection decoder (arXiv 2509.24173); absent or null for "
                "the per-category estimator."
            ),
        },
    }
    _own_budget_check = True

    def __init__(
        self,
        categories: ArrayLike,
        epsilon: float,
        sensitive: ArrayLike,
        subset_size: int | dict[int, float],
        alpha: float | None = None,
    ) -> None:
        super().__init__(categories, epsilon, 0.5, sensitive)
        self.theta = None
        s = int(self._s_codes.size)
        subset_size = _check_subset_size(subset_size)
        sizes, weights = _check_mixture(subset_size, s)
        self._sizes, self._weights = sizes, weights
        self.subset_size = (
            int(sizes[0])
            if sizes.size == 1 and not isinstance(subset_size, dict)
            else {int(h): float(w) for h, w in zip(sizes, weights, strict=True)}
        )
        self.s, self.t = s, int(self._n_codes.size)
        self._check_budget(
            f"uBD (h={self.subset_size}) with {s} sensitive of k={self.n_categories} categories"
        )
        h = sizes.astype(float)
        self._keep_s_h, self._keep_n_h = _ubd_keep(self.epsilon, h, s)
        E = np.exp(self.epsilon)
        D = h * E + s - h
        self._E, self._D_h = E, D
        # P(x in T | another sensitive x', size h); for h = 1 it equals
        # c_N = 1/D (then right for s = 1 too, with no other sensitive x').
        with np.errstate(divide="ignore", invalid="ignore"):
            c_s = np.where(h > 1, h * (E * (h - 1.0) + s - h) / (D * (s - 1.0)), 1.0 / D)
        c_n = h / D
        self._c_s_h, self._c_n_h = c_s, c_n
        w = weights
        self._keep_s = float(w @ self._keep_s_h)
        self._keep_n = float(w @ self._keep_n_h)
        self._c_s = float(w @ c_s)
        self._c_n = float(w @ c_n)
        self._gamma = float(w @ (c_s - c_n)) / self._keep_n
        # Likelihood structure reused by the RAPPOR-family EM: f_x(T) = E if
        # x in T (x sensitive), 1 otherwise; C(T) = w_h c0_h for |T| = h.
        self._w = np.ones(self.n_categories)
        self._w_s, self._r = 1.0, E
        self.d2 = 1.0 - self._keep_n
        self._one_minus_d2 = self._keep_n
        self._log_c0_h = (
            np.log(w)
            + math.log(s)
            - np.log(D)
            - (gammaln(s + 1) - gammaln(h + 1) - gammaln(s - h + 1))
        )
        self.alpha = self._check_alpha(alpha)
        if self.alpha is not None:
            self._setup_projection()

    def _check_alpha(self, alpha):
        if alpha is None:
            return None
        if isinstance(alpha, bool) or not isinstance(alpha, Real):
            raise TypeError(
                f"alpha must be a number in (0, 1) or None, got {alpha!r} of "
                f"type {type(alpha).__name__}."
            )
        alpha = float(alpha)
        if not 0.0 < alpha < 1.0:
            raise ValueError(
                f"alpha must be in (0, 1) (the mass of the sensitive set in the "
                f"decoder's reference distribution), got {alpha}; use None for "
                "the per-category estimator."
            )
        if self.s < 2 or self.t < 1:
            raise ValueError(
                "The projection decoder (alpha) needs at least two sensitive and "
                f"one non-sensitive category, got s={self.s}, t={self.t}; use "
                "alpha=None."
            )
        return alpha

    def _setup_projection(self):
        """Per-report contributions of the projection decoder (module docstring)."""
        s, t, k = self.s, self.t, self.n_categories
        a, E1 = self.alpha, np.expm1(self.epsilon)
        h = self._sizes.astype(float)
        weights = np.zeros(max(1, s - 1))
        weights[self._sizes - 1] = self._weights
        J1, J2, J3 = _design_information(a, weights, k, s, self.epsilon)
        self._J = (J1, J2, J3)
        Qy = 1.0 + a * h * E1 / s  # Q_alpha(T) / (w_h c0_h), size h
        r = t / (1.0 - a)  # Q(y|x) / Q_alpha(y) of an invertible report
        phi3 = t * h * E1 / (s * k * Qy * J3)  # H3 part at a sensitive x
        self._A_in = E1 * (1.0 - h / s) / (Qy * J1) + phi3
        self._A_out = -E1 * h / s / (Qy * J1) + phi3
        self._B = -r / (k * J3)
        self._G = -h * E1 / (k * Qy * J3)
        self._own = r * (1.0 - 1.0 / t) / J2 + s * r / (t * k * J3)
        self._other = -r / (t * J2) + s * r / (t * k * J3)
        self._p_alpha = np.where(self._sensitive, a / s, (1.0 - a) / t)

    def _draw_probabilities(self, epsilon):
        keep_s, keep_n = _ubd_keep(epsilon, self._sizes.astype(float), self.s)
        # keep_n is the probability of an invertible output, which no
        # privacy ratio involves; its complement is.
        probs = [1.0 - keep_n] if self.t else []
        if self.s > 1:  # with s = 1 the only sensitive value is always in T
            probs += [keep_s, 1.0 - keep_s]
        return np.concatenate(probs) if probs else np.ones(1)

    def get_params(self):
        params = {
            "epsilon": self.epsilon,
            "sensitive": self._sensitive.copy(),
            "subset_size": self.subset_size,
        }
        if self.alpha is not None:  # specs without a decoder stay as they were
            params["alpha"] = self.alpha
        return params

    @property
    def exact_categories(self):
        # The projection decoder spreads every report over all categories.
        if self.alpha is not None:
            return np.zeros(self.n_categories, dtype=bool)
        return super().exact_categories

    def _key(self):
        name, cats, params = super()._key()
        params = tuple(
            (key, tuple(sorted(v.items())) if isinstance(v, dict) else v) for key, v in params
        )
        return name, cats, params

    @property
    def _protected_bit_density(self):
        return float(self._weights @ self._sizes) / self.s

    @property
    def n_subsets(self):
        """Number of protected outputs: binom(s, h) summed over the sizes used."""
        return sum(math.comb(self.s, int(h)) for h in self._sizes)

    @property
    def n_outputs(self):
        return self.n_subsets + self.t

    @property
    def report_bits(self):
        """log2(number of outputs): the size of one report, encoded compactly.

        (The 0/1 vectors returned by ``transform`` are a convenient, not a
        compact, encoding; a client sends the index of its output.)
        """
        return float(math.log2(self.n_outputs))

    # ----------------------------------------------------------- exact matrix
    def output_labels(self):
        if self.n_outputs > MAX_MATRIX_OUTPUTS:
            raise ValueError(
                f"{self.n_outputs} outputs: the full channel matrix is only built "
                "for small designs."
            )
        from itertools import combinations

        k = self.n_categories
        Y = np.zeros((self.n_outputs, k), dtype=np.uint8)
        i = 0
        for h in self._sizes:
            for T in combinations(self._s_codes.tolist(), int(h)):
                Y[i, list(T)] = 1
                i += 1
        Y[self.n_subsets + np.arange(self.t), self._n_codes] = 1
        return Y

    def realized_matrix(self):
        """The channel :meth:`sample` realizes (see :meth:`Channel.realized_matrix`).

        Membership is one comparison of a 53-bit uniform with the keep
        probability; the subsets are uniform integer draws (exact).
        """
        Y = self.output_labels().astype(bool)
        C = self.n_subsets
        size_of = Y[:C].sum(axis=1)
        pos = np.searchsorted(self._sizes, size_of)
        w = self._weights[pos]
        h = self._sizes[pos]
        s = self.s
        keep_s = realized_probability(self._keep_s_h)[pos]
        keep_n = realized_probability(self._keep_n_h)
        n_with = np.array([math.comb(s - 1, int(hh) - 1) for hh in h], dtype=float)
        n_without = np.array([math.comb(s - 1, int(hh)) for hh in h], dtype=float)
        n_all = np.array([math.comb(s, int(hh)) for hh in h], dtype=float)
        Q = np.zeros((self.n_categories, self.n_outputs))
        inside = Y[:C].T  # (k, C): x in T
        with np.errstate(divide="ignore", invalid="ignore"):
            sens = np.where(
                inside, keep_s / n_with, np.where(n_without > 0, (1.0 - keep_s) / n_without, 0.0)
            )
        Q[self._s_codes, :C] = (w * sens)[self._s_codes]
        Q[self._n_codes, :C] = (w * (1.0 - keep_n[pos]) / n_all)[None, :]
        own = np.zeros(self.t)
        for c in range(self._sizes.size):  # mixture components, not users
            own += self._weights[c] * keep_n[c]
        Q[self._n_codes, C + np.arange(self.t)] = own
        return Q

    def matrix(self):
        """The exact channel: a dense (k, n_outputs) array of Q(y | x)."""
        Y = self.output_labels().astype(bool)
        C = self.n_subsets
        size_of = Y[:C].sum(axis=1)
        pos = np.searchsorted(self._sizes, size_of)
        c0 = np.exp(self._log_c0_h[pos])  # w_h c0_h per protected output
        Q = np.zeros((self.n_categories, self.n_outputs))
        Q[:, :C] = c0 * np.where(Y[:C].T & self._sensitive[:, None], self._E, 1.0)
        Q[self._n_codes, C + np.arange(self.t)] = self._keep_n
        return Q

    def protected_outputs(self):
        mask = np.zeros(self.n_outputs, dtype=bool)
        mask[: self.n_subsets] = True
        return mask

    # --------------------------------------------------------------- sampling
    def sample(self, codes, rng, *, sparse=False, packed=False):
        """Privatize coded inputs: a dense uint8 (n, k) array, a CSR array or
        packed rows (``packed=True``, ceil(k / 8) bytes a user).

        Each choice uses its own uniform draws (the subset size of a mixture,
        the membership of x, then the subset members), never one uniform for
        two choices.
        """
        codes = np.asarray(codes, dtype=np.intp)
        n, k, s = codes.size, self.n_categories, self.s
        if self._sizes.size == 1:
            comp = np.zeros(n, dtype=np.intp)
        else:
            comp = rng.choice(self._sizes.size, size=n, p=self._weights)
        is_s = self._sensitive[codes]
        u_keep = rng.random(n)  # a fresh uniform: membership / self-report
        keep = u_keep < np.where(is_s, self._keep_s_h[comp], self._keep_n_h[comp])
        S = self._s_codes
        own = np.flatnonzero(~is_s & keep)
        rows, cols = [own], [codes[own]]
        for c, h in enumerate(self._sizes):
            h = int(h)
            mine = comp == c
            s_in = np.flatnonzero(mine & is_s & keep)
            s_out = np.flatnonzero(mine & is_s & ~keep)
            n_sub = np.flatnonzero(mine & ~is_s & ~keep)
            # x in T: x plus h-1 others; the ranks of others skip x's own rank
            for users, m, include in ((s_in, h - 1, True), (s_out, h, False)):
                if users.size == 0:
                    continue
                rank_x = self._rank[codes[users]]
                others = _uniform_subsets(users.size, s - 1, m, rng)
                others = others + (others >= rank_x[:, None])
                rows.append(np.repeat(users, m))
                cols.append(S[others].ravel())
                if include:
                    rows.append(users)
                    cols.append(codes[users])
            if n_sub.size:
                sub = _uniform_subsets(n_sub.size, s, h, rng)
                rows.append(np.repeat(n_sub, h))
                cols.append(S[sub].ravel())
        rows, cols = np.concatenate(rows), np.concatenate(cols)
        if packed:
            out = np.zeros((n, packed_width(k)), dtype=np.uint8)
            set_packed_bits(out, rows.astype(np.int64) * k + cols, k)
            return out
        if sparse:
            out = sp.csr_array((np.ones(rows.size, dtype=np.uint8), (rows, cols)), shape=(n, k))
            out.sum_duplicates()
            return out
        out = np.zeros((n, k), dtype=np.uint8)
        out[rows, cols] = 1
        return out

    # ------------------------------------------------------------- estimation
    def encode_reports(self, reports):
        X = super().encode_reports(reports)
        n_s, n_n = self._report_sizes(X)
        ok = ((n_n == 1) & (n_s == 0)) | ((n_n == 0) & np.isin(n_s, self._sizes))
        if not ok.all():
            raise ReportMismatchError(
                f"{int((~ok).sum())} reports are neither an h-subset of the "
                f"sensitive categories (h in {self._sizes.tolist()}) nor one "
                f"non-sensitive category, so {self!r} cannot have produced them."
            )
        return X

    # The linear estimator. Without ``alpha``: the per-category statistic of
    # the module docstring. With ``alpha``: the projection decoder, written
    # as p_hat = f + P_alpha with f the mean of the reports' contributions.
    def statistics(self, codes, *, keep_reports=False):
        stats = super().statistics(codes, keep_reports=keep_reports)
        if self.alpha is None:
            return stats
        return ReportStatistics(
            self, stats.n, np.concatenate([stats.counts, self._size_counts(codes)]), stats.extra
        )

    def _size_counts(self, codes):
        """Per-size counts of each sensitive bit (H x s) and of protected reports (H).

        Only protected reports (no non-sensitive bit) count; flattened, size
        by size, as appended to the statistics of a channel with ``alpha``.
        """
        H, s = self._sizes.size, self.s
        bits = np.zeros((H, s), dtype=np.int64)
        rows_h = np.zeros(H, dtype=np.int64)
        if isinstance(codes, PackedReports):
            size, n_n = self._packed_sizes(codes.data)
            protected = n_n == 0
            for c, h in enumerate(self._sizes):  # mixture components
                rows = protected & (size == h)
                rows_h[c] += int(rows.sum())
                if rows.any():
                    bits[c] += column_counts(codes.data[rows])[self._s_codes]
        elif sp.issparse(codes):
            sizes = np.diff(codes.indptr)
            row_of = np.repeat(np.arange(codes.shape[0]), sizes)
            nonsens = np.bincount(row_of[~self._sensitive[codes.indices]], minlength=codes.shape[0])
            protected = nonsens == 0
            comp = np.searchsorted(self._sizes, sizes)
            comp = np.where(protected & (comp < H), comp, H)
            keep = comp[row_of] < H
            bits += np.bincount(
                comp[row_of][keep] * s + self._rank[codes.indices[keep]], minlength=H * s
            ).reshape(H, s)
            rows_h += np.bincount(comp[comp < H], minlength=H)
        else:
            step = max(1, (1 << 24) // max(self.n_categories, 1))
            for lo in range(0, codes.shape[0], step):  # chunks of rows
                block = codes[lo : lo + step]
                S = block[:, self._s_codes]
                size = S.sum(axis=1, dtype=np.int64)
                protected = ~block[:, self._n_codes].any(axis=1)
                for c, h in enumerate(self._sizes):  # mixture components
                    rows = protected & (size == h)
                    rows_h[c] += int(rows.sum())
                    bits[c] += S[rows].sum(axis=0, dtype=np.int64)
        return np.concatenate([bits.ravel(), rows_h])

    def _report_sizes(self, X):
        """Set sensitive and non-sensitive bits of each report (packed, sparse or dense)."""
        if isinstance(X, PackedReports):
            return self._packed_sizes(X.data)
        if sp.issparse(X):
            row_of = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
            n_s = np.bincount(row_of[self._sensitive[X.indices]], minlength=X.shape[0])
            n_n = np.bincount(row_of[~self._sensitive[X.indices]], minlength=X.shape[0])
            return n_s, n_n
        return (
            X[:, self._s_codes].sum(axis=1, dtype=np.int64),
            X[:, self._n_codes].sum(axis=1, dtype=np.int64),
        )

    def _packed_sizes(self, data):
        """Set sensitive and non-sensitive bits of each packed report."""
        sensitive = pack_rows(self._sensitive.view(np.uint8)[None, :])[0]
        others = pack_rows((~self._sensitive).view(np.uint8)[None, :])[0]
        return masked_row_counts(data, sensitive), masked_row_counts(data, others)

    def _projection_contributions(self, stats):
        k, H, s = self.n_categories, self._sizes.size, self.s
        tail = np.asarray(stats.counts[k:], dtype=float)
        Nx = tail[: H * s].reshape(H, s)
        Nc = tail[H * s : H * s + H]
        inv = np.asarray(stats.counts[self._n_codes], dtype=float)
        f = np.empty(k)
        f[self._s_codes] = (self._A_in - self._A_out) @ Nx + self._A_out @ Nc + self._B * inv.sum()
        f[self._n_codes] = self._G @ Nc + (self._own - self._other) * inv + self._other * inv.sum()
        return f

    def observed_frequency(self, stats):
        if self.alpha is not None:
            if stats.counts.size != self.n_categories + self._sizes.size * (self.s + 1):
                raise ValueError(
                    "These statistics lack the per-size counts the projection "
                    "decoder needs; compute them with this channel's statistics()."
                )
            return self._projection_contributions(stats) / stats.n
        f = stats.counts / stats.n
        q_n = float(stats.counts[self._n_codes].sum()) / stats.n
        return np.where(self._sensitive, f + self._gamma * q_n, f)

    def expected_frequency(self, p):
        p = np.asarray(p, dtype=float)
        if self.alpha is not None:
            return p - self._p_alpha
        slope_s = self._keep_s - self._c_s
        return np.where(self._sensitive, self._c_s * p.sum() + slope_s * p, self._keep_n * p)

    @property
    def coef_a(self):
        if self.alpha is not None:
            return np.ones(self.n_categories)
        return np.where(self._sensitive, 1.0 / (self._keep_s - self._c_s), 1.0 / self._keep_n)

    @property
    def coef_b(self):
        if self.alpha is not None:
            return self._p_alpha.copy()
        return np.where(self._sensitive, -self._c_s / (self._keep_s - self._c_s), 0.0)

    def estimator_variance(self, p, n):
        """Exact Var[p_hat(x)] of the channel's linear estimator.

        Per-category estimator: the sensitive statistic takes values 0, gamma
        and 1. Projection decoder (``alpha`` set): x's contribution takes
        2H + 1 (sensitive x) or H + 2 (non-sensitive x) values whose
        probabilities are linear in p (module docstring).

        :meth:`null_variance` keeps the generic ``a^2 m0 (1 - m0) / n``: with
        p(x) = 0 the exact value is that minus a non-negative term
        proportional to p(X_N), so it is the worst case over distributions.
        """
        p = np.asarray(p, dtype=float)
        if self.alpha is not None:
            second = self._projection_second_moment(p)
            return (second - (p - self._p_alpha) ** 2) / n
        P_n = p[self._n_codes].sum()
        m = self.expected_frequency(p)
        p_in = self._keep_s * p + self._c_s * (p[self._s_codes].sum() - p) + self._c_n * P_n
        p_inv = self._keep_n * P_n
        second = np.where(self._sensitive, p_in + self._gamma**2 * p_inv, m)
        return self.coef_a**2 * (second - m**2) / n

    def _projection_second_moment(self, p):
        """E[c_x(y)^2] of the projection decoder's contribution, per category."""
        w = self._weights
        P_s, P_n = p[self._s_codes].sum(), p[self._n_codes].sum()
        p_s = p[self._s_codes]
        # P(size h, x in T) and P(size h) for the sensitive x (rows: sizes)
        p_in = w[:, None] * (
            self._keep_s_h[:, None] * p_s
            + self._c_s_h[:, None] * (P_s - p_s)
            + self._c_n_h[:, None] * P_n
        )
        p_size = w * (P_s + self.s / self._D_h * P_n)
        inv = self._keep_n * P_n
        out = np.empty(self.n_categories)
        out[self._s_codes] = (
            self._A_in**2 @ p_in + self._A_out**2 @ (p_size[:, None] - p_in) + self._B**2 * inv
        )
        p_n = p[self._n_codes]
        out[self._n_codes] = (
            self._G**2 @ p_size
            + self._own**2 * self._keep_n * p_n
            + self._other**2 * self._keep_n * (P_n - p_n)
        )
        return out

    def null_variance(self, n, stats=None):
        """Var[p_hat(x)] when p(x) = 0, the worst case over the other categories.

        For the per-category estimator, the generic ``a^2 m0 (1 - m0) / n``
        (see :meth:`estimator_variance`). For the projection decoder (``alpha``
        set) the mean of x's contribution is fixed (-P_alpha(x)) once p(x) = 0
        and its second moment is linear in p, so the worst case is a point
        mass on another category: the largest of those variances.
        """
        if self.alpha is None:
            return super().null_variance(n, stats)
        k = self.n_categories
        worst = np.zeros(k)
        candidates = [self._s_codes[:2], self._n_codes[:2]]
        for y in np.concatenate(candidates):  # at most four point masses
            point = np.zeros(k)
            point[y] = 1.0
            var = self.estimator_variance(point, n)
            var[y] = 0.0  # the point mass is on y itself: not a null case
            worst = np.maximum(worst, var)
        return worst

    def _log_c(self, stats):
        """sum_i log(w_h c0_h) over the protected reports (h = their size)."""
        if self._sizes.size == 1:
            n_protected = stats.n - int(stats.counts[self._n_codes].sum())
            return n_protected * float(self._log_c0_h[0])
        # Every protected report has one of the mixture's sizes (checked by
        # encode_reports), so the size histogram at those sizes is complete.
        size_counts = stats.extra.row_size_counts()
        per_size = np.zeros(self._sizes.size)
        present = self._sizes < size_counts.size
        per_size[present] = size_counts[self._sizes[present]]
        return float(per_size @ self._log_c0_h)


@fill_mechanism_doc
class UtilityOptimizedBlockDesign(_UnaryEncodingMechanism):
    """Utility-optimized block design (uBD), an (X_S, Y_P, epsilon)-ULDP mechanism.

    The output is an h-subset of the sensitive categories X_S or a
    non-sensitive value (arXiv 2509.24173, 2025). With D = h e^eps + s - h, a
    sensitive x enters the subset with probability h e^eps / D, the rest of
    the subset being uniform; a non-sensitive x is reported as itself with
    probability h (e^eps - 1) / D and otherwise as a uniform h-subset. With
    ``subset_size=1`` it is exactly :class:`UtilityOptimizedRR`; larger h
    spread a sensitive value over several reported values, like the block
    designs that are optimal for LDP frequency estimation in the
    medium-privacy regime. The channel and its unbiased estimator are derived
    in the module docstring of ``sklearn_uldp.mechanisms._block_design``.

    Reports are 0/1 vectors over the categories (h sensitive bits, or one
    non-sensitive bit), so every estimator, including EM, works unchanged.
    ``channel_.report_bits`` is log2(binom(s, h) + k - s), the size of a
    compactly encoded report.

    Parameters
    ----------
    %(epsilon_sensitive)s
    subset_size : int, dict or "auto", default=1
        h, between 1 and max(1, s - 1); or a mixture over subset sizes
        ``{h: weight}`` (each user first draws h, with its own uniform draw,
        then runs uBD with that h); ``"auto"`` picks the single h with the
        smallest expected l2 loss of the empirical estimator at the uniform
        distribution; ``"optimal"`` solves the paper's design problem
        (``sup_alpha inf_w M(alpha, w)``, see the module docstring) for the
        mixture that reaches the converse bound
        (:func:`~sklearn_uldp.metrics.ubd_converse_bound`), and, when it
        mixes several sizes, estimates with the paper's projection decoder
        at that alpha (``channel_.alpha``; its statistics then also hold
        per-size counts). With one size it is the per-category estimator.
    %(categories)s
    %(bit_vector_output)s
    random_state : None, "secure", int, Generator, SeedSequence or RandomState, default=None
        Source of randomness. Every random choice uses its own uniform draw.

    Attributes
    ----------
    %(fitted_domain_sensitive)s
    subset_size_ : int or dict
        The h (or the mixture ``{h: weight}``) in use; with
        ``subset_size="optimal"`` the decoder's alpha is ``channel_.alpha``.
    channel_ : UtilityOptimizedBlockDesignChannel
    %(fitted_input)s

    See Also
    --------
    UtilityOptimizedRR : the case h = 1.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp import UtilityOptimizedBlockDesign, EmpiricalEstimator
    >>> from sklearn_uldp.privacy import check_uldp
    >>> cats = list(range(8))
    >>> mech = UtilityOptimizedBlockDesign(epsilon=1.0, sensitive=[0, 1, 2, 3, 4],
    ...     subset_size=2, categories=cats, random_state=0).fit()
    >>> bool(check_uldp(mech)), mech.channel_.n_outputs
    (True, 13)
    >>> X = np.random.default_rng(0).choice(8, size=(100000, 1))
    >>> est = EmpiricalEstimator().fit(mech.transform(X))
    >>> bool(np.abs(est.distribution_ - 1 / 8).max() < 0.03)
    True
    >>> mixture = UtilityOptimizedBlockDesign(epsilon=1.0, sensitive=[0, 1, 2, 3, 4],
    ...     subset_size={1: 0.5, 2: 0.5}, categories=cats).fit()
    >>> bool(check_uldp(mixture)), mixture.channel_.n_outputs
    (True, 18)
    >>> optimal = UtilityOptimizedBlockDesign(epsilon=1.0, sensitive=[0, 1, 2, 3],
    ...     subset_size="optimal", categories=range(20)).fit()
    >>> {h: round(w, 3) for h, w in optimal.subset_size_.items()}
    {1: 0.669, 2: 0.331}
    >>> round(optimal.channel_.alpha, 3)
    0.452
    """

    _parameter_constraints = {
        **_UnaryEncodingMechanism._parameter_constraints,
        "epsilon": UtilityOptimizedRAPPOR._parameter_constraints["epsilon"],
        "categories": UtilityOptimizedRAPPOR._parameter_constraints["categories"],
        "random_state": UtilityOptimizedRAPPOR._parameter_constraints["random_state"],
        "sparse_output": ["boolean"],
        "packed_output": ["boolean"],
        "sensitive": ["array-like", callable],
        "subset_size": [
            Interval(Integral, 1, None, closed="left"),
            StrOptions({"auto", "optimal"}),
            dict,
        ],
    }

    def __init__(
        self,
        epsilon: float = 1.0,
        *,
        sensitive: Sensitive,
        subset_size: int | dict[int, float] | Literal["auto", "optimal"] = 1,
        categories: Categories = "auto",
        sparse_output: bool = False,
        packed_output: bool = False,
        random_state: RandomStateLike = None,
    ) -> None:
        self.epsilon = epsilon
        self.sensitive = sensitive
        self.subset_size = subset_size
        self.categories = categories
        self.sparse_output = sparse_output
        self.packed_output = packed_output
        self.random_state = random_state

    theta = None  # no theta: keep the shared RAPPOR-family checks happy

    def _make_channel(self):
        self.sensitive_mask_ = check_sensitive(self.sensitive, self.categories_)
        h = self.subset_size
        if h == "optimal":
            s = int(self.sensitive_mask_.sum())
            k = self.sensitive_mask_.size
            alpha, weights, _ = _optimal_design(k, s, float(self.epsilon))
            used = np.flatnonzero(weights > 0)
            if used.size == 1:  # one size: the per-category estimator
                channel = UtilityOptimizedBlockDesignChannel(
                    self.categories_, self.epsilon, self.sensitive_mask_, int(used[0]) + 1
                )
            else:
                channel = UtilityOptimizedBlockDesignChannel(
                    self.categories_,
                    self.epsilon,
                    self.sensitive_mask_,
                    {int(i) + 1: float(weights[i]) for i in used},
                    alpha=alpha,
                )
            self.subset_size_ = channel.subset_size
            return channel
        if isinstance(h, str):
            s = int(self.sensitive_mask_.sum())
            k = self.sensitive_mask_.size
            uniform = np.full(k, 1.0 / k)
            losses = [
                UtilityOptimizedBlockDesignChannel(
                    self.categories_, self.epsilon, self.sensitive_mask_, hh
                )
                .estimator_variance(uniform, 1)
                .sum()
                for hh in range(1, max(1, s - 1) + 1)
            ]
            h = int(np.argmin(losses)) + 1
        channel = UtilityOptimizedBlockDesignChannel(
            self.categories_, self.epsilon, self.sensitive_mask_, h
        )
        self.subset_size_ = channel.subset_size
        return channel

    @property
    def theta_(self):
        raise AttributeError("uBD has no theta.")


@fill_mechanism_doc
class UtilityOptimizedOUE(UtilityOptimizedRAPPOR):
    """Utility-optimized OUE (uOUE): uRAP with theta = 1/2.

    Optimized unary encoding (OUE, Wang et al. 2017) reports the true
    category's bit with probability 1/2 and flips every other bit to 1 with
    probability 1 / (e^eps + 1), which minimizes the variance of unary
    encoding. Its utility-optimized version is exactly
    ``UtilityOptimizedRAPPOR(theta=0.5)`` (Murakami & Kawamoto 2019, Def. 5):
    the channels are equal (same spec, same ``channel_``), so reports of
    either can be estimated with the other.

    Parameters
    ----------
    %(epsilon_sensitive)s
    %(domain_bits_and_seed)s

    Attributes
    ----------
    %(fitted_domain_sensitive)s
    channel_ : UnaryEncodingChannel
    theta_ : float
        Always 0.5.
    %(fitted_input)s

    Examples
    --------
    >>> from sklearn_uldp import UtilityOptimizedOUE, UtilityOptimizedRAPPOR
    >>> cats = ["a", "b", "c"]
    >>> uoue = UtilityOptimizedOUE(epsilon=1.0, sensitive=["a"], categories=cats).fit()
    >>> urap = UtilityOptimizedRAPPOR(epsilon=1.0, sensitive=["a"], theta=0.5,
    ...                               categories=cats).fit()
    >>> uoue.channel_ == urap.channel_, uoue.theta_
    (True, 0.5)
    """

    theta = 0.5

    def __init__(
        self,
        epsilon: float = 1.0,
        *,
        sensitive: Sensitive,
        categories: Categories = "auto",
        sparse_output: bool = False,
        packed_output: bool = False,
        random_state: RandomStateLike = None,
    ) -> None:
        self.epsilon = epsilon
        self.sensitive = sensitive
        self.categories = categories
        self.sparse_output = sparse_output
        self.packed_output = packed_output
        self.random_state = random_state
