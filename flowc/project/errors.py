"""The error of a request that cannot be carried out as given."""

from __future__ import annotations

__all__ = ["UsageError"]


class UsageError(Exception):
    """The command could not run (exit 2); the language server shows it as a message."""
