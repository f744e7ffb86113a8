"""Type aliases of the public API (for annotations; see the ``py.typed`` marker).

The aliases are evaluated at import time, so they only use what Python 3.10
and numpy 1.24 provide.
"""

from collections.abc import Callable
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "ArrayLike",
    "Categories",
    "RandomStateLike",
    "ReportsLike",
    "Sensitive",
    "TransformOutput",
]

#: ``random_state`` of every mechanism, search and simulation.
RandomStateLike = (
    None
    | int
    | np.integer
    | np.random.SeedSequence
    | np.random.Generator
    | np.random.RandomState
    | Literal["secure"]
)

#: ``categories`` of a mechanism: the domain, or "auto" to learn it in fit.
Categories = ArrayLike | Literal["auto"]

#: What ``transform`` returns: a numpy array (``Reports``), a sparse array or,
#: under ``set_output(transform="pandas")``, a DataFrame. ``Any`` so that code
#: using either form type-checks without narrowing.
TransformOutput = Any

#: ``sensitive`` of a ULDP mechanism: the sensitive values, a boolean mask
#: aligned with the categories, or a predicate ``f(category) -> bool``.
Sensitive = ArrayLike | Callable[[Any], bool]

#: Reports an estimator fits on: a mechanism's ``transform`` output (an
#: array, a DataFrame or a sparse matrix), hence the same ``Any``.
ReportsLike = Any
