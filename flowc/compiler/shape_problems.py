"""What is wrong with a graph or knobs dict: :class:`ShapeProblem` (a JSON path and what
is wrong there) and :class:`ShapeError`, shared by :mod:`flowc.compiler.serde`, which
reads well-formed dicts, and :mod:`flowc.compiler.shapes`, which says where the others
go wrong.

>>> str(ShapeProblem("transitions[0].priority", f"expected an integer, got {describe('1')}"))
'transitions[0].priority: expected an integer, got "1"'
"""

from __future__ import annotations

import json
from typing import Any

import attrs

__all__ = ["ShapeError", "ShapeProblem", "describe"]


@attrs.frozen
class ShapeProblem:
    """One reason a dict is not a valid graph: where (JSON path) and what."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class ShapeError(Exception):
    """A dict did not have the model's shape; ``problems`` says where and why."""

    def __init__(self, problems: list[ShapeProblem]):
        self.problems = problems
        super().__init__("; ".join(str(p) for p in problems))


def describe(value: Any) -> str:
    """A short description of a JSON value for messages: ``5``, ``a list``, ``null``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return json.dumps(value)
    if isinstance(value, str):
        shown = value if len(value) <= 30 else value[:27] + "..."
        return json.dumps(shown)
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__
