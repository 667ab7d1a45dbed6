"""The examples in the migrate modules' docstrings are true."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "flowc.migrate",
    "flowc.migrate.model",
    "flowc.migrate.pyread",
    "flowc.migrate.textpred",
    "flowc.runtime.ctxexpr",
    "flowc.migrate.agents",
    "flowc.migrate.speaking_order",
    "flowc.migrate.python",
    "flowc.migrate.classic",
    "flowc.migrate.classic_selection",
    "flowc.migrate.agentchat",
    "flowc.migrate.agentchat_py",
    "flowc.runtime.vocabulary",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name))
    assert result.failed == 0
