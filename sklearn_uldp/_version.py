"""The package's version, read once from the installed metadata."""

# The version is written once, in pyproject.toml; the installed metadata
# carries it. A source tree that was never installed has no metadata.
try:
    from importlib.metadata import version as _version

    __version__ = _version("sklearn-uldp")
except ImportError:  # pragma: no cover - PackageNotFoundError is an ImportError
    __version__ = "0+unknown"

__all__ = ["__version__"]
