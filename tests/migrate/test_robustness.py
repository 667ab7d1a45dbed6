"""Damaged inputs never crash `flowc migrate`: every corpus file cut short or missing a
line (Python), or with any setting removed, nulled or of the wrong type (JSON), gives a
flow or findings — never an exception."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flowc.migrate import MigrateResult, migrate_source
from flowc.source import SourceFile

CORPUS = Path(__file__).resolve().parent / "corpus"
RECORDS = (".classic.json", ".agentchat.json", ".expected.json")
PY = sorted(CORPUS.glob("*.py"))
JSON = sorted(p for p in CORPUS.glob("*.json") if not p.name.endswith(RECORDS))
#: model settings: migrate never reads inside them
SKIP = {"model_client", "llm_config", "model_info", "models", "skills", "code_execution_config"}
_DELETE = object()


def _clean(result: MigrateResult) -> bool:
    """A flow or findings (an internal error is raised: it fails the test as it comes)."""
    return result.text is not None or bool(result.findings)


def _paths(obj: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k not in SKIP:
                yield from _paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, (*prefix, i))


def _mutate(obj: Any, path: tuple[Any, ...], value: Any) -> Any:
    out = copy.deepcopy(obj)
    cur = out
    for p in path[:-1]:
        cur = cur[p]
    if value is _DELETE:
        del cur[path[-1]]
    else:
        cur[path[-1]] = value
    return out


@pytest.mark.parametrize("path", PY, ids=[p.name for p in PY])
def test_python_cut_short_or_missing_a_line(path: Path) -> None:
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    for k in range(len(lines) + 1):
        for text in ("".join(lines[:k]), "".join(x for i, x in enumerate(lines) if i != k)):
            result = migrate_source(SourceFile(path.name, text))
            assert _clean(result), (k, [d.message for d in result.findings])


@pytest.mark.parametrize("path", JSON, ids=[p.name for p in JSON])
def test_json_with_a_damaged_setting(path: Path) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    for where in list(_paths(data))[1:]:
        for value in (None, 7, _DELETE):
            text = json.dumps(_mutate(data, where, value))
            result = migrate_source(SourceFile(path.name, text))
            assert _clean(result), (where, value, [d.message for d in result.findings])
