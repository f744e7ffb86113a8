"""Privacy/utility search (see the workflow issue; grows here)."""

__all__ = []
