"""The examples in the render modules' docstrings run and hold."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "flowc.compiler.render.diagram",
    "flowc.compiler.render.dot",
    "flowc.compiler.render.mermaid",
    "flowc.compiler.render.options",
    "flowc.compiler.render.page",
    "flowc.compiler.render.rendering",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
