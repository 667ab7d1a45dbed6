"""The examples in the analysis docstrings run."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "flowc.compiler.analysis",
    "flowc.compiler.analysis.system",
    "flowc.compiler.analysis.explore",
    "flowc.compiler.analysis.facts",
    "flowc.compiler.analysis.suppress",
]


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0 and result.failed == 0
