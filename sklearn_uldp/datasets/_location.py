"""Generated location data in the spirit of the ULDP paper's Foursquare grid."""

import numpy as np
import pandas as pd
from sklearn.utils import Bunch

from ..utils._random import check_random_generator

__all__ = ["make_location_grid", "grid_cell_labels"]


def grid_cell_labels(n_rows, n_cols):
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


def location_distribution(shape=(25, 25), n_hotspots=8, random_state=None):
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


def make_location_grid(
    n_users=100_000, *, shape=(25, 25), n_sensitive=15, random_state=None
):
    """Generate one location per user on a grid with a few sensitive cells.

    A synthetic stand-in for the ULDP paper's Foursquare/Manhattan data
    (25 x 25 cells, ``|X| = 625``, 15 sensitive "hospital" cells, n = 179,527):
    visits concentrate around a few hotspots; the sensitive cells are drawn
    among all cells.

    Parameters
    ----------
    n_users : int, default=100000
    shape : tuple of int, default=(25, 25)
    n_sensitive : int, default=15
    random_state : None, int or Generator

    Returns
    -------
    data : Bunch
        ``frame`` (DataFrame with column ``"cell"``), ``categories`` (the
        cells), ``sensitive`` (the sensitive cells), ``distribution`` (the
        distribution the users were drawn from), ``empirical`` (the users'
        empirical distribution), ``shape``.

    Examples
    --------
    >>> from sklearn_uldp.datasets import make_location_grid
    >>> data = make_location_grid(1000, random_state=0)
    >>> data.frame.shape, len(data.categories), len(data.sensitive)
    ((1000, 1), 625, 15)
    """
    rng = check_random_generator(random_state)
    n_rows, n_cols = shape
    k = n_rows * n_cols
    if not 0 < n_sensitive < k:
        raise ValueError(f"n_sensitive must be in [1, {k - 1}], got {n_sensitive}.")
    categories = grid_cell_labels(n_rows, n_cols)
    p = location_distribution(shape, random_state=rng)
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
