"""The maximum-entropy table given measured marginals, and samples of it.

Among all distributions of the rows whose marginals on the measured sets
(the cliques) are the estimated ones, the one of maximum entropy is the
log-linear model ``p(x) ∝ prod_A phi_A(x_A)`` with one factor per clique
(Csiszár 1975). It adds no dependence beyond what was measured: a set of
columns never measured is read from it (two columns measured only apart
come out independent given what links them).

* **Dense** (the product domain has at most :data:`MAX_DENSE_CELLS`
  cells): iterative proportional fitting (Deming & Stephan 1940) on the
  full table, which converges to the maximum-entropy distribution when the
  marginals are those of some distribution (after consistency they agree
  on every shared set, which is necessary; for cliques that form a cycle it
  is not sufficient, and IPF then converges to the table closest in
  Kullback-Leibler divergence). Marginals of any set are sums of the
  table; samples are drawn by systematic sampling from it.
* **Tree** (larger domains): a Chow-Liu tree over the columns, each edge a
  measured pair (weighted by its mutual information), ``p(x) = prod p(x_a,
  x_b) / prod p(x_a)^(deg(a) - 1)``: the maximum-entropy distribution given
  the tree's pairs (exact, decomposable, sampled ancestrally). Cliques of
  three or more columns enter through their pairs only.

Private-PGM (McKenna, Sheldon & Miklau, ICML 2019; ``mbi`` on PyPI) fits
the same log-linear family to noisy marginals by mirror descent on a
junction tree; the "Library choices" section of ``docs/architecture.md``
says why the package keeps this small module instead.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["MaxEntModel", "MAX_DENSE_CELLS"]

#: Largest product domain kept as a dense table (32 MB of float64).
MAX_DENSE_CELLS = 1 << 22


class MaxEntModel:
    """The maximum-entropy distribution of rows given marginals on cliques.

    Parameters
    ----------
    sizes : sequence of int
        The domain size of each column.
    cliques : sequence of tuple of int
        The columns (by position, increasing) of each measured marginal.
    tables : sequence of ndarray
        The marginal of each clique (one axis per column, summing to 1).
    tol : float, default=1e-9
        IPF stops when every clique's marginal is within ``tol`` (largest
        absolute difference of a cell).
    max_iter : int, default=1000
        Sweeps of IPF.
    max_dense_cells : int, default=MAX_DENSE_CELLS

    Attributes
    ----------
    kind : {"dense", "tree"}
    n_iter : int
        IPF sweeps (0 for the tree).
    residual : float
        Largest difference between a clique's marginal under the model and
        its table.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp.marginals._maxent import MaxEntModel
    >>> ab = np.array([[0.4, 0.1], [0.1, 0.4]])
    >>> bc = np.array([[0.25, 0.25], [0.1, 0.4]])
    >>> model = MaxEntModel([2, 2, 2], [(0, 1), (1, 2)], [ab, bc])
    >>> model.marginal((0, 2)).round(3).tolist()   # a and c meet through b only
    [[0.22, 0.28], [0.13, 0.37]]
    """

    def __init__(
        self,
        sizes: Sequence[int],
        cliques: Sequence[tuple[int, ...]],
        tables: Sequence[np.ndarray],
        *,
        tol: float = 1e-9,
        max_iter: int = 1000,
        max_dense_cells: int = MAX_DENSE_CELLS,
    ) -> None:
        self.sizes = tuple(int(s) for s in sizes)
        self.cliques = [tuple(int(a) for a in c) for c in cliques]
        self.tables = [np.clip(np.asarray(t, dtype=float), 0.0, None) for t in tables]
        self.tables = [t / t.sum() if t.sum() > 0 else t for t in self.tables]
        self.n_iter = 0
        if math.prod(self.sizes) <= max_dense_cells:
            self.kind = "dense"
            self._fit_dense(tol, max_iter)
        else:
            self.kind = "tree"
            self._fit_tree()

    # ------------------------------------------------------------ dense
    def _fit_dense(self, tol, max_iter):
        d = len(self.sizes)
        p = np.full(self.sizes, 1.0 / math.prod(self.sizes))
        covered = sorted({a for c in self.cliques for a in c})
        others = [tuple(a for a in range(d) if a not in c) for c in self.cliques]
        residual = np.inf
        for it in range(1, max_iter + 1):
            for rest, target in zip(others, self.tables, strict=True):
                current = p.sum(axis=rest)
                with np.errstate(divide="ignore", invalid="ignore"):
                    ratio = np.where(current > 0, target / current, 0.0)
                p = p * np.expand_dims(ratio, rest)
            residual = max(
                float(np.abs(p.sum(axis=rest) - target).max())
                for rest, target in zip(others, self.tables, strict=True)
            )
            self.n_iter = it
            if residual <= tol:
                break
        total = p.sum()
        self.joint = p / total if total > 0 else np.full(self.sizes, 1.0 / p.size)
        self.residual = float(residual)
        self._covered = covered

    # ------------------------------------------------------------ tree
    def _pair_table(self, a, b):
        """The measured marginal of columns a < b (from a clique holding both), or None."""
        for clique, table in zip(self.cliques, self.tables, strict=True):
            if a in clique and b in clique:
                rest = tuple(i for i, c in enumerate(clique) if c not in (a, b))
                return table.sum(axis=rest)
        return None

    def _one_table(self, a):
        for clique, table in zip(self.cliques, self.tables, strict=True):
            if a in clique:
                rest = tuple(i for i, c in enumerate(clique) if c != a)
                return table.sum(axis=rest)
        return np.full(self.sizes[a], 1.0 / self.sizes[a])

    def _fit_tree(self):
        d = len(self.sizes)
        edges = []
        for a in range(d):
            for b in range(a + 1, d):
                pab = self._pair_table(a, b)
                if pab is None:
                    continue
                pa, pb = pab.sum(axis=1), pab.sum(axis=0)
                with np.errstate(divide="ignore", invalid="ignore"):
                    terms = np.where(pab > 0, pab * np.log(pab / np.outer(pa, pb)), 0.0)
                edges.append((float(np.nansum(terms)), a, b, pab))
        edges.sort(key=lambda e: -e[0])
        parent = list(range(d))

        def root(i):
            while parent[i] != i:
                parent[i] = parent[parent[i]]
                i = parent[i]
            return i

        kept = []
        for _, a, b, pab in edges:
            ra, rb = root(a), root(b)
            if ra != rb:
                parent[ra] = rb
                kept.append((a, b, pab))
        self.edges = kept
        self.ones = [self._one_table(a) for a in range(d)]
        # Root every tree at its smallest column; conditionals child | parent.
        neighbours: dict[int, list[tuple[int, np.ndarray]]] = {a: [] for a in range(d)}
        for a, b, pab in kept:
            neighbours[a].append((b, pab))
            neighbours[b].append((a, pab.T))
        self.order, self.parents, self.conditionals = [], {}, {}
        seen = set()
        for start in range(d):
            if start in seen:
                continue
            seen.add(start)
            stack = [start]
            while stack:
                node = stack.pop()
                self.order.append(node)
                for child, table in neighbours[node]:  # table[node, child]
                    if child in seen:
                        continue
                    seen.add(child)
                    row = table.sum(axis=1, keepdims=True)
                    with np.errstate(divide="ignore", invalid="ignore"):
                        cond = np.where(row > 0, table / row, 1.0 / table.shape[1])
                    self.parents[child] = node
                    self.conditionals[child] = cond
                    stack.append(child)
        self.residual = 0.0

    def _tree_factors(self):
        """(arrays, axes) whose product is the tree's joint."""
        arrays, axes = [], []
        for node in self.order:
            if node in self.parents:
                arrays.append(self.conditionals[node])
                axes.append((self.parents[node], node))
            else:
                arrays.append(self.ones[node])
                axes.append((node,))
        return arrays, axes

    # ------------------------------------------------------------ queries
    def marginal(self, columns: Sequence[int]) -> np.ndarray:
        """The model's marginal over ``columns`` (positions), axes in that order."""
        columns = tuple(int(c) for c in columns)
        if self.kind == "dense":
            rest = tuple(a for a in range(len(self.sizes)) if a not in columns)
            table = self.joint.sum(axis=rest)
            order = sorted(columns)
            return np.transpose(table, [order.index(c) for c in columns])
        arrays, axes = self._tree_factors()
        operands = []
        for arr, ax in zip(arrays, axes, strict=True):
            operands += [arr, list(ax)]
        return np.einsum(*operands, list(columns), optimize="greedy")

    def sample_codes(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` rows of per-column codes, shape (n, d).

        Dense: systematic sampling from the table (each cell gets the floor
        or the ceiling of ``n p(x)`` rows, ``n p(x)`` on average), rows in a
        random order. Tree: ancestral sampling, independent rows.
        """
        d = len(self.sizes)
        if n == 0:
            return np.zeros((0, d), dtype=np.intp)
        if self.kind == "dense":
            cumulative = np.cumsum(self.joint.ravel()) * n
            cumulative[-1] = n  # round-off: the last cell ends at n
            positions = rng.random() + np.arange(n)
            flat = np.searchsorted(cumulative, positions, side="right")
            flat = np.minimum(flat, self.joint.size - 1)
            rng.shuffle(flat)
            return np.stack(np.unravel_index(flat, self.sizes), axis=1).astype(np.intp)
        out = np.empty((n, d), dtype=np.intp)
        for node in self.order:
            if node in self.parents:
                probs = self.conditionals[node][out[:, self.parents[node]]]
            else:
                probs = np.broadcast_to(self.ones[node], (n, self.sizes[node]))
            cdf = np.cumsum(probs, axis=1)
            u = rng.random(n) * cdf[:, -1]
            out[:, node] = np.minimum((u[:, None] >= cdf).sum(axis=1), self.sizes[node] - 1)
        return out
