"""The runtime's import rules and the examples in its docstrings."""

from __future__ import annotations

import ast
import doctest
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUNTIME = sorted((ROOT / "flowc" / "runtime").rglob("*.py"))


def imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
    return out


@pytest.mark.parametrize("path", RUNTIME, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_runtime_imports_downward_only_and_never_ag2(path: Path) -> None:
    for name in imports(path):
        top = name.split(".")
        assert top[0] != "ag2", f"{path.name} imports {name}"
        if top[0] == "flowc" and len(top) > 1:
            # (_compat, the one module reaching dependencies' private APIs, and escaping,
            # the text escapes every output uses, import no flowc module: below every layer)
            below = (
                "runtime",
                "compiler",
                "dsl",
                "source",
                "diagnostics",
                "escaping",
                "regex",
                "_compat",
            )
            assert top[1] in below, f"{path.name} imports {name}, which is above the runtime"


def test_only_the_bridge_imports_ag2() -> None:
    offenders = [
        str(p.relative_to(ROOT))
        for p in (ROOT / "flowc").rglob("*.py")
        if p.name != "ag2.py" and any(n.split(".")[0] == "ag2" for n in imports(p))
    ]
    assert offenders == []


MODULES = [
    "flowc.runtime",
    "flowc.runtime.envelope",
    "flowc.runtime.wal",
    "flowc.runtime.hub",
    "flowc.runtime.clients",
    "flowc.runtime.replies",
    "flowc.runtime.transitions",
    "flowc.runtime.scenarios",
    "flowc.runtime.adapters.workflow",
    "flowc.runtime.script",
    "flowc.runtime.target",
    "flowc.runtime.scripted_replies",
    "flowc.runtime.transcript",
    "flowc.runtime.script_run",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert result.attempted > 0 or name == "flowc.runtime.adapters.base"


def test_bridge_docstring_examples() -> None:
    pytest.importorskip("ag2.network")
    result = doctest.testmod(importlib.import_module("flowc.ag2"))
    assert result.failed == 0 and result.attempted > 0


def test_the_modules_below_every_layer_import_no_flowc_module() -> None:
    for name in ("escaping.py", "_compat.py"):
        found = {n for n in imports(ROOT / "flowc" / name) if n.split(".")[0] == "flowc"}
        assert found == set(), f"{name} imports {found}"
