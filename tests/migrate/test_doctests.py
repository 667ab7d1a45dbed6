"""The examples in the migrate modules' docstrings are true."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "flowc.compiler.migrate",
    "flowc.compiler.migrate.model",
    "flowc.compiler.migrate.pyread",
    "flowc.compiler.migrate.textpred",
    "flowc.compiler.migrate.ctxexpr",
    "flowc.compiler.migrate.classic",
    "flowc.compiler.migrate.agentchat",
    "flowc.compiler.migrate.agentchat_py",
    "flowc.runtime.vocabulary",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name))
    assert result.failed == 0
