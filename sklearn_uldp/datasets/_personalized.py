"""Generated location data with personal sensitive places (home, work).

In the spirit of the ULDP paper's personalized experiment on the Foursquare
Manhattan data (Murakami & Kawamoto 2019, Sec. 6: 25 x 25 cells, 15 hospital
cells sensitive to all, 359,054 check-ins of which 5,040 at home and 19,532
at work, n = 179,527 of them as users, and a distribution of
"home"/"workplace" POIs as background knowledge).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd
from sklearn.utils import Bunch

from ..mechanisms._personalized import _preprocess, bot_label
from ..utils._typing import RandomStateLike
from ._location import _grid_setup, grid_cell_labels, location_distribution

__all__ = ["make_personalized_locations"]

TAGS = ("home", "work")
#: Share of the residential / business distributions that is specific to
#: them (the rest follows the general visits).
_OWN_SHARE = 0.33


def make_personalized_locations(
    n_users: int = 179_527,
    *,
    shape: tuple[int, int] = (25, 25),
    n_sensitive: int = 15,
    home_fraction: float = 5_040 / 359_054,
    work_fraction: float = 19_532 / 359_054,
    employment_rate: float = 0.9,
    poi_noise: float = 0.3,
    n_population: Literal["double"] | int = "double",
    random_state: RandomStateLike = None,
) -> Bunch:
    """Generate one location per user plus her own home and work cells.

    Every user has a home cell drawn from a residential distribution and,
    with probability ``employment_rate``, a work cell drawn from a business
    distribution (both mixtures of Gaussian hotspots, different from the
    distribution of other visits). She is at home with probability
    ``home_fraction``, at work with probability ``work_fraction`` and
    elsewhere (a draw from the general visit distribution) otherwise. A few
    "hospital" cells are sensitive to everybody; a user's home and work cells
    are sensitive to her only (the PUM's tags ``"home"`` and ``"work"``).

    As in the paper, the users are a random sample of a population (by
    default twice as large) and the *truth* is the population's: its
    empirical distribution p, the distribution r of its intermediate values
    over Z = X ∪ {⊥home, ⊥work} after the pre-processors (a cell that is both
    a user's home and work cell counts as home), and the distributions π_k
    of the true values sent through each bot, so that
    ``p = r[:k] + Σ_k r(⊥k) π_k`` holds exactly (and Theorem 1 holds for
    every realisation). The residential and business distributions share
    part of their mass with the general visits. The "POI-like" background
    knowledge (the paper's case II) is the residential (resp. business)
    distribution perturbed cell by cell with log-normal noise of scale
    ``poi_noise``: close to, but not equal to, π_k.

    Parameters
    ----------
    n_users : int, default=179527
        Number of users (the paper's n).
    shape : tuple of int, default=(25, 25)
        Grid shape; ``|X| = rows * columns``.
    n_sensitive : int, default=15
        Number of hospital cells (the common X_S).
    home_fraction : float, default=5040 / 359054
        Probability that a user is at home: the paper's 5,040 check-ins at
        home among its 359,054 check-ins (1.4 %). The paper counts them in
        the whole data set (the population), not among the 179,527 users
        sampled from it, so the fraction is over 359,054.
    work_fraction : float, default=19532 / 359054
        Probability that a user is at work: 19,532 among 359,054 (5.4 %).
    employment_rate : float, default=0.9
        Probability that a user has a work cell (the others have a missing
        ``work`` value).
    poi_noise : float, default=0.3
        Scale of the log-normal perturbation of the POI-like background
        knowledge (0 gives the generating distributions themselves).
    n_population : "double" or int, default="double"
        Size of the population the users are sampled from (without
        replacement); ``"double"`` is ``2 * n_users`` as in the paper,
        ``n_users`` makes the users their own population.
    random_state : None, int or Generator
        Source of randomness.

    Returns
    -------
    data : Bunch
        ``frame`` (DataFrame with columns ``"cell"``, ``"home"``, ``"work"``;
        ``work`` is None for users without work), ``categories`` (the cells,
        X), ``sensitive`` (hospital cells), ``tags`` (``["home", "work"]``),
        ``intermediate_categories`` (Z), ``distribution`` (the distribution
        the locations are drawn from), ``empirical`` (the population's
        distribution p: the truth), ``users_empirical`` (the users'
        distribution), ``intermediate_distribution`` (true r over Z),
        ``tag_distributions`` (dict tag -> true π_k over X),
        ``background`` (dict tag -> POI-like π̂_k), ``shape``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp.datasets import make_personalized_locations
    >>> data = make_personalized_locations(5000, random_state=0)
    >>> data.frame.columns.tolist(), len(data.categories), len(data.sensitive)
    (['cell', 'home', 'work'], 625, 15)
    >>> k = len(data.categories)
    >>> r, pi = data.intermediate_distribution, data.tag_distributions
    >>> p = r[:k] + r[k] * pi["home"] + r[k + 1] * pi["work"]
    >>> bool(np.allclose(p, data.empirical))
    True
    """
    rng, n_rows, n_cols, k = _grid_setup(shape, n_sensitive, random_state)
    if not (0 <= home_fraction and 0 <= work_fraction and home_fraction + work_fraction <= 1):
        raise ValueError("home_fraction and work_fraction must be >= 0 with sum <= 1.")
    if not 0 < employment_rate <= 1 or (home_fraction + work_fraction / employment_rate > 1):
        raise ValueError(
            "employment_rate must be in (0, 1] with "
            "home_fraction + work_fraction / employment_rate <= 1."
        )
    n_pop = 2 * n_users if n_population == "double" else int(n_population)
    if n_pop < n_users:
        raise ValueError(f"n_population={n_pop} is smaller than n_users={n_users}.")
    categories = grid_cell_labels(n_rows, n_cols)
    p_visit = location_distribution(shape, n_hotspots=8, random_state=rng)
    own_home = location_distribution(shape, n_hotspots=12, random_state=rng)
    own_work = location_distribution(shape, n_hotspots=4, random_state=rng)
    p_home = (1.0 - _OWN_SHARE) * p_visit + _OWN_SHARE * own_home
    p_work = (1.0 - _OWN_SHARE) * p_visit + _OWN_SHARE * own_work
    sensitive = categories[np.sort(rng.choice(k, size=n_sensitive, replace=False))]

    home = rng.choice(k, size=n_pop, p=p_home)
    has_work = rng.random(n_pop) < employment_rate
    work = rng.choice(k, size=n_pop, p=p_work)
    u = rng.random(n_pop)
    at_home = u < home_fraction
    at_work = ~at_home & has_work & (u < home_fraction + work_fraction / employment_rate)
    cell = rng.choice(k, size=n_pop, p=p_visit)
    cell[at_work] = work[at_work]
    cell[at_home] = home[at_home]

    # The truth (population), through the same pre-processor as the mechanism.
    people = np.arange(n_pop, dtype=np.int64)
    pairs = [(people, home.astype(np.int64)), (people[has_work], work[has_work].astype(np.int64))]
    z = _preprocess(cell[:, None].astype(np.intp), pairs, k)[:, 0]
    r = np.bincount(z, minlength=k + len(TAGS)) / n_pop
    tag_distributions = {}
    for b, tag in enumerate(TAGS):
        counts = np.bincount(cell[z == k + b], minlength=k).astype(float)
        tag_distributions[tag] = counts / counts.sum() if counts.sum() else counts
    background = {}
    for tag, base in (("home", p_home), ("work", p_work)):
        poi = base * rng.lognormal(0.0, poi_noise, size=k) if poi_noise else base
        background[tag] = poi / poi.sum()

    users = np.sort(rng.choice(n_pop, size=n_users, replace=False))
    work_labels = np.empty(n_users, dtype=object)
    work_labels[:] = None
    employed = has_work[users]
    work_labels[employed] = categories[work[users][employed]]
    frame = pd.DataFrame(
        {
            "cell": pd.Series(categories[cell[users]], dtype=object),
            "home": pd.Series(categories[home[users]], dtype=object),
            "work": pd.Series(work_labels, dtype=object),
        }
    )
    z_labels = np.empty(k + len(TAGS), dtype=object)
    z_labels[:] = categories.tolist() + [bot_label(t) for t in TAGS]
    return Bunch(
        frame=frame,
        categories=categories,
        sensitive=sensitive,
        tags=list(TAGS),
        intermediate_categories=z_labels,
        distribution=(
            home_fraction * p_home
            + work_fraction * p_work
            + (1.0 - home_fraction - work_fraction) * p_visit
        ),
        empirical=np.bincount(cell, minlength=k) / n_pop,
        users_empirical=np.bincount(cell[users], minlength=k) / n_users,
        intermediate_distribution=r,
        tag_distributions=tag_distributions,
        background=background,
        shape=shape,
    )
