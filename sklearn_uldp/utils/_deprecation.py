"""Deprecated aliases of names that moved to another subpackage."""

from __future__ import annotations

import warnings
from types import ModuleType
from typing import Any


def moved_alias(home: ModuleType, name: str, old_module: str) -> Any:
    """``home.<name>``, with a ``FutureWarning`` that ``old_module.<name>`` moved there.

    For a package's PEP 562 ``__getattr__``: the old import keeps working
    and says which import replaces it.

    Parameters
    ----------
    home : module
        Where the name lives now (imported by the caller).
    name : str
    old_module : str
        The module the name was imported from (the caller's ``__name__``).

    Returns
    -------
    value : object
        ``getattr(home, name)``.

    Examples
    --------
    >>> import warnings
    >>> import sklearn_uldp.longitudinal as home
    >>> from sklearn_uldp.utils._deprecation import moved_alias
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     cls = moved_alias(home, "LongitudinalGRR", "sklearn_uldp.mechanisms")
    >>> cls is home.LongitudinalGRR, caught[0].category.__name__
    (True, 'FutureWarning')
    >>> print(caught[0].message)  # doctest: +NORMALIZE_WHITESPACE
    sklearn_uldp.mechanisms.LongitudinalGRR moved to sklearn_uldp.longitudinal: import it
    with `from sklearn_uldp.longitudinal import LongitudinalGRR` (or from sklearn_uldp).
    The old import will be removed in a future release.
    """
    new = home.__name__
    warnings.warn(
        f"{old_module}.{name} moved to {new}: import it with `from {new} import {name}` "
        "(or from sklearn_uldp). The old import will be removed in a future release.",
        FutureWarning,
        stacklevel=3,
    )
    return getattr(home, name)
