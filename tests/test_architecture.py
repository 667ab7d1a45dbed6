"""Project-wide habits: layers import downward only, and every docstring example runs."""

from __future__ import annotations

import ast
import doctest
import importlib
import pkgutil
from pathlib import Path

import pytest

import flowc

ROOT = Path(flowc.__file__).parent

#: lower layers never import higher ones (architecture.md)
LAYERS = [
    ("flowc.source", 0),
    ("flowc.diagnostics", 1),
    ("flowc.dsl", 2),
    ("flowc.compiler", 3),
    ("flowc.runtime", 4),
    ("flowc.migrate", 4),  # a frontend from Python/JSON: emits .flow, checks it with the compiler
    ("flowc.ag2", 5),
    ("flowc.cli", 6),
    ("flowc.commands", 6),
    ("flowc.__main__", 7),
    ("flowc", 7),  # the package itself: the public API on top of everything
]


def layer_of(module: str) -> int:
    for prefix, layer in LAYERS:
        if module == prefix or module.startswith(prefix + "."):
            return layer
    raise AssertionError(f"{module} is in no layer")


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def flowc_imports(path: Path) -> set[str]:
    """Every flowc module a file imports (at module level or inside functions)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.split(".")[0] == "flowc"}
        elif (
            isinstance(node, ast.ImportFrom)
            and node.module
            and node.level == 0
            and node.module.split(".")[0] == "flowc"
        ):
            # `from flowc import cli` imports the submodule flowc.cli
            if node.module == "flowc":
                out |= {f"flowc.{a.name}" for a in node.names}
            else:
                out.add(node.module)
    return out


SOURCES = sorted(p for p in ROOT.rglob("*.py"))


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_layers_import_downward_only(path: Path) -> None:
    me = module_name(path)
    mine = layer_of(me)
    for imported in sorted(flowc_imports(path)):
        if imported.startswith("flowc.") and imported.split(".")[1] in {
            "check", "render", "run", "Hub", "parse", "compile_flow", "format_source", "decompile",
        }:
            imported = "flowc"  # a public API name, not a module
        assert layer_of(imported) <= mine, f"{me} (layer {mine}) imports {imported} (layer {layer_of(imported)})"


def all_modules() -> list[str]:
    names = ["flowc"]
    for info in pkgutil.walk_packages([str(ROOT)], prefix="flowc."):
        names.append(info.name)
    return sorted(names)


@pytest.mark.parametrize("name", all_modules())
def test_docstring_examples_run(name: str) -> None:
    if name == "flowc.ag2":
        pytest.importorskip("ag2.network")
    if name == "flowc.__main__":
        return  # running it is running the command line
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


PUBLIC = ["flowc", "flowc.dsl.parser", "flowc.dsl.formatter", "flowc.compiler.decompile",
          "flowc.compiler.serde", "flowc.compiler.describe", "flowc.source"]


@pytest.mark.parametrize("name", PUBLIC)
def test_public_modules_document_an_example(name: str) -> None:
    assert doctest.testmod(importlib.import_module(name)).attempted > 0
