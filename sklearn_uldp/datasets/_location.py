"""Generated location data in the spirit of the ULDP paper's Foursquare grid."""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.utils import Bunch

from ..utils._random import check_random_generator
from ..utils._typing import RandomStateLike

__all__ = ["make_location_grid", "grid_cell_labels"]


def grid_cell_labels(n_rows: int, n_cols: int) -> np.ndarray:
    """Labels ``"r{row:02d}c{col:02d}"`` of a grid's cells, row-major.

    Parameters
    ----------
    n_rows, n_cols : int

    Returns
    -------
    labels : ndarray of object of shape (n_rows * n_cols,)

    Examples
    --------
    >>> from sklearn_uldp.datasets import grid_cell_labels
    >>> grid_cell_labels(2, 2).tolist()
    ['r00c00', 'r00c01', 'r01c00', 'r01c01']
    """
    return np.asarray(
        [f"r{r:02d}c{c:02d}" for r in range(n_rows) for c in range(n_cols)],
        dtype=object,
    )


def location_distribution(
    shape: tuple[int, int] = (25, 25),
    n_hotspots: int = 8,
    random_state: RandomStateLike = None,
) -> np.ndarray:
    """A skewed distribution over grid cells: a mixture of Gaussian hotspots.

    Parameters
    ----------
    shape : tuple of int, default=(25, 25)
    n_hotspots : int, default=8
    random_state : None, int or Generator

    Returns
    -------
    p : ndarray of shape (n_rows * n_cols,)

    Examples
    --------
    >>> from sklearn_uldp.datasets import location_distribution
    >>> p = location_distribution(shape=(5, 5), n_hotspots=2, random_state=0)
    >>> p.shape
    (25,)
    >>> round(float(p.sum()), 6)
    1.0
    """
    rng = check_random_generator(random_state)
    n_rows, n_cols = shape
    rr, cc = np.meshgrid(np.arange(n_rows), np.arange(n_cols), indexing="ij")
    density = np.full(shape, 0.02)  # a floor: every cell is visited sometimes
    centres = rng.uniform((0, 0), (n_rows - 1, n_cols - 1), size=(n_hotspots, 2))
    widths = rng.uniform(0.8, 3.0, size=n_hotspots) * max(shape) / 25
    weights = rng.dirichlet(np.ones(n_hotspots)) * 10
    for (r0, c0), w, a in zip(centres, widths, weights, strict=True):
        density += a * np.exp(-((rr - r0) ** 2 + (cc - c0) ** 2) / (2 * w**2))
    p = density.ravel()
    return p / p.sum()


def _grid_setup(shape, n_sensitive, random_state):
    """The generator, the grid's rows and columns and its k cells, of which
    ``n_sensitive`` (checked) are sensitive."""
    rng = check_random_generator(random_state)
    n_rows, n_cols = shape
    k = n_rows * n_cols
    if not 0 < n_sensitive < k:
        raise ValueError(f"n_sensitive must be in [1, {k - 1}], got {n_sensitive}.")
    return rng, n_rows, n_cols, k


def _island_mask(shape, land_fraction, rng):
    """A long, narrow, slightly tilted strip of land cells (Manhattan-like).

    The strip runs along the grid's main axis with a width chosen so that
    about ``land_fraction`` of the cells are land; its edges wiggle a little so
    the footprint is not a perfect parallelogram.
    """
    n_rows, n_cols = shape
    rr, cc = np.meshgrid(np.arange(n_rows), np.arange(n_cols), indexing="ij")
    # Distance of each cell from a tilted centre line (the island's axis).
    tilt = 0.35
    centre = (n_cols - 1) / 2 + tilt * (rr - (n_rows - 1) / 2)
    wiggle = rng.normal(0.0, 0.6, size=n_rows).cumsum() * 0.3
    wiggle -= wiggle.mean()
    dist = np.abs(cc - centre - wiggle[:, None])
    # The half-width that leaves the requested share of cells on land.
    half_width = np.quantile(dist, land_fraction)
    return dist <= half_width


def make_location_grid(
    n_users: int = 100_000,
    *,
    shape: tuple[int, int] = (25, 25),
    n_sensitive: int = 15,
    n_population: int | None = None,
    land_fraction: float | None = None,
    min_sensitive_visits: int = 10,
    random_state: RandomStateLike = None,
) -> Bunch:
    """Generate one location per user on a grid with a few sensitive cells.

    A synthetic stand-in for the ULDP paper's Foursquare/Manhattan data
    (Murakami & Kawamoto, USENIX Security 2019, Sec. 6.1): 25 x 25 regions
    (``|X| = 625``), 15 sensitive "hospital" regions, visits concentrated
    around a few hotspots.

    With the defaults, every cell has some probability and each user's cell
    is drawn from that distribution (``distribution``). The paper's set-up is
    reproduced with ``n_population=359_054, n_users=179_527,
    land_fraction=0.45``: a finite population of 359,054 check-ins is drawn
    first, its frequencies are the true distribution (as the paper used "all
    people"), and the users are a random half of it (drawn without
    replacement); the cells lie on a narrow tilted island so that most cells
    are empty (Manhattan fills little of its bounding box), and the sensitive
    cells are drawn among the cells with at least ``min_sensitive_visits``
    check-ins (the paper's hospitals "visited by at least ten users").

    Matched with the paper: the grid (25 x 25), the population size
    (359,054), the number of users (179,527, a random half), the number of
    sensitive cells (15) and their rule (visited at least ten times), a
    majority of empty or near-empty cells. Not matched (not published): the
    per-cell counts, which here come from a mixture of Gaussian hotspots;
    where the sensitive cells lie and how much mass they hold; the share of
    land cells (``land_fraction`` is our guess).

    Parameters
    ----------
    n_users : int, default=100000
        Number of users (rows of ``frame``); at most ``n_population`` when
        that is given.
    shape : tuple of int, default=(25, 25)
    n_sensitive : int, default=15
    n_population : int or None, default=None
        Size of a finite population of check-ins whose frequencies are the
        true distribution; the users are then drawn from it without
        replacement. ``None`` draws the users from the generating
        distribution directly.
    land_fraction : float in (0, 1] or None, default=None
        Share of the cells that can be visited (a Manhattan-like strip); the
        others have probability 0. ``None`` lets every cell be visited.
    min_sensitive_visits : int, default=10
        With ``n_population``, the sensitive cells are drawn among the cells
        with at least this many check-ins in the population.
    random_state : None, int or Generator

    Returns
    -------
    data : Bunch
        ``frame`` (DataFrame with column ``"cell"``), ``categories`` (the
        cells), ``sensitive`` (the sensitive cells), ``distribution`` (the
        true distribution: the generating one, or the population's
        frequencies with ``n_population``), ``empirical`` (the users'
        empirical distribution), ``shape``, and with ``n_population`` also
        ``population_counts`` (check-ins per cell).

    Examples
    --------
    >>> from sklearn_uldp.datasets import make_location_grid
    >>> data = make_location_grid(1000, random_state=0)
    >>> data.frame.shape, len(data.categories), len(data.sensitive)
    ((1000, 1), 625, 15)

    The paper's sizes (a population of check-ins, a random half reporting):

    >>> data = make_location_grid(179_527, n_population=359_054,
    ...                           land_fraction=0.45, random_state=0)
    >>> int(data.population_counts.sum()), len(data.frame)
    (359054, 179527)
    >>> bool((data.population_counts < 10).mean() > 0.5)   # most cells near-empty
    True
    """
    rng, n_rows, n_cols, k = _grid_setup(shape, n_sensitive, random_state)
    if n_population is not None and not 0 < n_users <= n_population:
        raise ValueError(
            f"n_users must be in [1, n_population={n_population}] when drawing "
            f"users from a finite population, got {n_users}; lower n_users or "
            "raise n_population."
        )
    if land_fraction is not None and not 0 < land_fraction <= 1:
        raise ValueError(
            f"land_fraction must be in (0, 1], got {land_fraction}; use None "
            "to let every cell be visited."
        )
    categories = grid_cell_labels(n_rows, n_cols)
    p = location_distribution(shape, random_state=rng)
    if land_fraction is not None:
        land = _island_mask(shape, land_fraction, rng).ravel()
        # Sharper hotspots than the default floor: on the island, a few
        # areas (Midtown, downtown) take most check-ins.
        p = np.where(land, (p - p.min()) ** 1.5 + 1e-5, 0.0)
        p = p / p.sum()
    if n_population is None:
        sensitive = categories[np.sort(rng.choice(k, size=n_sensitive, replace=False))]
        codes = rng.choice(k, size=n_users, p=p)
        frame = pd.DataFrame({"cell": categories[codes]})
        empirical = np.bincount(codes, minlength=k) / n_users
        return Bunch(
            frame=frame,
            categories=categories,
            sensitive=sensitive,
            distribution=p,
            empirical=empirical,
            shape=shape,
        )
    population = rng.multinomial(n_population, p)
    visited = np.flatnonzero(population >= min_sensitive_visits)
    if visited.size < n_sensitive:
        raise ValueError(
            f"Only {visited.size} cells have at least {min_sensitive_visits} "
            f"check-ins, fewer than n_sensitive={n_sensitive}; raise "
            "n_population or land_fraction, or lower min_sensitive_visits."
        )
    sensitive = categories[np.sort(rng.choice(visited, size=n_sensitive, replace=False))]
    # The users: a random subset of the population's check-ins.
    user_counts = rng.multivariate_hypergeometric(population, n_users)
    codes = rng.permutation(np.repeat(np.arange(k), user_counts))
    frame = pd.DataFrame({"cell": categories[codes]})
    return Bunch(
        frame=frame,
        categories=categories,
        sensitive=sensitive,
        distribution=population / n_population,
        empirical=user_counts / n_users,
        shape=shape,
        population_counts=population,
    )
