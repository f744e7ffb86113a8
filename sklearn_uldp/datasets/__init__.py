"""Generated datasets for simulations and examples, and a real census table."""

from ._census import load_census_tuples
from ._flights import load_flights
from ._location import grid_cell_labels, location_distribution, make_location_grid
from ._personalized import make_personalized_locations
from ._survey import load_election_survey
from ._wages import load_wage_survey

__all__ = [
    "make_location_grid",
    "grid_cell_labels",
    "location_distribution",
    "make_personalized_locations",
    "load_census_tuples",
    "load_election_survey",
    "load_wage_survey",
    "load_flights",
]
