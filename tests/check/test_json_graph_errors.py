"""A JSON graph or knobs file with a wrong value anywhere: every error names the JSON path
of the value and what was expected there, in flowc's words (never Python's, such as
"argument of type 'int' is not iterable"), through check, decompile, run and the hub."""

from __future__ import annotations

import asyncio
import copy
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flowc.compiler.analysis import check_source
from flowc.compiler.decompile import decompile
from flowc.diagnostics import FlowError
from flowc.runtime.adapters.workflow import GraphError
from flowc.runtime.hub import Hub
from flowc.source import SourceFile

KNOBS: dict[str, Any] = {
    "graph": {
        "initial_speaker": "a",
        "max_turns": 5,
        "default_target": {"name": "terminate", "args": {"reason": "x"}},
        "transitions": [
            {
                "when": {"name": "from_speaker", "args": {"agent_id": "a"}},
                "then": {"name": "agent", "args": {"agent_id": "b"}},
                "priority": 0,
            },
            {
                "when": {
                    "name": "all_of",
                    "args": {
                        "conditions": [
                            {"name": "context_equals", "args": {"key": "k", "value": 1}},
                            {
                                "name": "not",
                                "args": {
                                    "condition": {"name": "tool_called", "args": {"tool_name": "t"}}
                                },
                            },
                        ]
                    },
                },
                "then": {"name": "round_robin", "args": {}},
                "priority": 1,
            },
            {
                "when": {"name": "always", "args": {}},
                "then": {"name": "terminate", "args": {"reason": "y"}},
                "priority": 2,
            },
        ],
    },
    "context_vars": {"k": 1},
}
#: one value of each JSON type (and a few shapes that look right at a glance)
VALUES: list[Any] = [
    None,
    True,
    5,
    0,
    -1,
    1.5,
    "s",
    "",
    [],
    [1],
    {},
    {"x": 1},
    [{"name": "always"}],
    {"name": "always", "args": {}},
]
DELETE = object()
#: Python's own words, which must never reach a user
LEAKS = re.compile(
    r"invalid value|not iterable|has no attribute|NoneType|unhashable|object is not"
    r"|'(int|str|list|dict|float|bool)'|Traceback|positional|argument"
)
#: what each message must say it expected (or that nothing fits there)
SAYS_WHAT = re.compile(
    r"expected|required key missing|registered as|not a target"
    r"|no keys|is a condition|cannot be written as a .flow|no .flow spelling"
    r"|must be at least"
)
STEP = re.compile(r"\.?([^.\[\]]+)|\[(\d+)\]")


def paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    if isinstance(value, dict):
        for k, v in value.items():
            yield from paths(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from paths(v, (*path, i))


def replaced(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    out = copy.deepcopy(doc)
    cur = out
    for step in path[:-1]:
        cur = cur[step]
    if value is DELETE:
        del cur[path[-1]]
    else:
        cur[path[-1]] = value
    return out


def mutants() -> Iterator[tuple[str, Any]]:
    for base in (KNOBS, KNOBS["graph"]):
        for path in paths(base):
            for value in [*VALUES, DELETE]:
                if value is DELETE and (not path or isinstance(path[-1], int)):
                    continue
                yield (
                    f"{'knobs' if base is KNOBS else 'graph'}{list(path)}={value!r}",
                    replaced(base, path, value),
                )


def resolves(doc: Any, json_path: str) -> bool:
    """The path leads into the document (its last key may be the missing one)."""
    steps = [int(i) if i else k for k, i in STEP.findall(json_path)]
    if "".join(f".{s}" if isinstance(s, str) else f"[{s}]" for s in steps).lstrip(".") != json_path:
        return False  # not a well-formed path (a stray dot, an empty step)
    cur = doc
    for n, step in enumerate(steps):
        last = n == len(steps) - 1
        if (isinstance(step, int) and isinstance(cur, list) and step < len(cur)) or (
            isinstance(step, str) and isinstance(cur, dict) and step in cur
        ):
            cur = cur[step]
        elif step == "args" and isinstance(cur, dict):  # absent `args` is `{}`, as in AG2
            cur = {}
        elif not (last and (isinstance(cur, dict) or cur is None)):  # `args: null` is `{}`
            return False
    return True


def assert_in_our_words(
    doc: Any, where: str, path: str | None, message: str, shape: bool = True
) -> None:
    """``shape``: a value of the wrong type or shape (else a graph with no `.flow` text)."""
    assert path is not None, (where, message)
    assert resolves(doc, path), (where, path, message)
    assert not LEAKS.search(message), (where, message)
    if shape:
        assert SAYS_WHAT.search(message), (where, message)
        if path:
            assert message.startswith(f"{path}: "), (where, message)


def test_the_issues_example_names_the_path_and_what_was_expected() -> None:
    (d,) = check_source(SourceFile("g.json", '{"graph": 5}'))
    assert (d.code.id, d.json_path) == ("E108", "graph")
    assert d.message == (
        "graph: expected a graph object (`initial_speaker`, `transitions`, "
        "`default_target`, `max_turns`), got 5"
    )


def test_a_wrong_type_anywhere_is_reported_at_its_path_in_our_words() -> None:
    checked = 0
    for where, doc in mutants():
        for d in check_source(SourceFile("g.json", json.dumps(doc))):
            if d.is_error:
                assert_in_our_words(doc, where, d.json_path, d.message)
                checked += 1
        if isinstance(doc, dict):
            try:
                decompile(doc, filename="g.json")
            except FlowError as err:
                for d in err.diagnostics:
                    if d.json_path is not None:
                        assert_in_our_words(
                            doc,
                            where,
                            d.json_path,
                            d.message,
                            shape="only one agent" not in d.message,
                        )
    assert checked > 300


def test_a_knobs_file_without_its_graph_says_the_graph_is_missing() -> None:
    diags = check_source(SourceFile("k.json", '{"context_vars": {"k": 1}}'))
    assert [(d.json_path, d.message) for d in diags] == [
        ("graph", "graph: required key missing: expected the graph object")
    ]


def test_unexpected_keys_list_the_keys_the_object_takes() -> None:
    doc = replaced(KNOBS, ("graph", "transitions", 0, "prio"), 1)
    (d,) = check_source(SourceFile("k.json", json.dumps(doc)))
    assert d.message == (
        "graph.transitions[0].prio: unexpected key; expected `when`, `then` or `priority`"
    )


def test_the_hub_names_paths_inside_the_graph() -> None:
    async def open_with(knobs: Any) -> GraphError:
        hub = await Hub.open()
        try:
            hub.register_human("a", agent_id="a", buffer=False)
            hub.register_human("b", agent_id="b", buffer=False)
            with pytest.raises(GraphError) as info:
                hub.open_channel("a", "workflow", ["a", "b"], knobs, expectations=())
            return info.value
        finally:
            await hub.close()

    for path, value in [
        (("graph", "transitions", 1), 5),
        (("graph", "transitions"), {}),
        (("graph", "default_target", "args"), [1]),
    ]:
        doc = replaced(KNOBS, path, value)
        err = asyncio.run(open_with(doc))
        for p in err.problems:  # the hub's paths are inside `knobs["graph"]`
            assert_in_our_words(doc["graph"], str(path), p.path, f"{p.path}: {p.message}")


@pytest.mark.parametrize(
    "command", [["check"], ["decompile"], ["render", "-f", "dot"], ["run", "--script", "SCRIPT"]]
)
def test_the_commands_print_the_path_in_our_words(tmp_path: Path, command: list[str]) -> None:
    graph = tmp_path / "g.json"
    graph.write_text('{"graph": 5}')
    script = tmp_path / "s.json"
    script.write_text('{"script": {}}')
    args = [a.replace("SCRIPT", str(script)) for a in command]
    done = subprocess.run(
        [sys.executable, "-m", "flowc", args[0], str(graph), *args[1:]],
        capture_output=True,
        text=True,
        timeout=60,
    )
    said = done.stdout + done.stderr  # check reports on stdout, the others on stderr
    assert done.returncode == 1, said
    assert f"{graph}:graph" in said
    assert "graph: expected a graph object (`initial_speaker`, " in said
    assert not LEAKS.search(said) and "Traceback" not in said


def test_findings_on_a_knobs_file_point_into_it() -> None:
    # was `k.json:graph.` for the whole graph and `graph.graph.transitions[1]` for a rule
    doc = copy.deepcopy(KNOBS)
    doc["graph"]["transitions"].insert(
        0,
        {
            "when": {"name": "from_speaker", "args": {"agent_id": "ghost"}},
            "then": {"name": "agent", "args": {"agent_id": "a"}},
            "priority": 0,
        },
    )
    doc["graph"]["transitions"][3]["when"] = {"name": "from_speakr", "args": {"agent_id": "a"}}
    (unknown,) = check_source(SourceFile("k.json", json.dumps(doc)))
    assert unknown.json_path == "graph.transitions[3].when.name"
    assert unknown.message.startswith("graph.transitions[3].when.name: no condition registered")
    del doc["graph"]["transitions"][3]
    found = check_source(SourceFile("k.json", json.dumps(doc)))
    by_code = {d.code.id: d.json_path for d in found}
    assert by_code["I303"] == "graph"
    assert by_code["W201"] == "graph.transitions[0]"
    for d in found:
        assert d.json_path is not None and resolves(doc, d.json_path), d


def test_a_cap_below_one_is_refused_by_check_as_by_run(tmp_path: Path) -> None:
    # `run` refuses it when the channel opens; `check` called it clean (with W215s)
    doc = replaced(KNOBS, ("graph", "max_turns"), 0)
    (d,) = check_source(SourceFile("k.json", json.dumps(doc)))
    assert (d.code.id, d.json_path) == ("E108", "graph.max_turns")
    assert d.message == "graph.max_turns: must be at least 1, got 0"
    graph = tmp_path / "k.json"
    graph.write_text(json.dumps(doc))
    script = tmp_path / "s.json"
    script.write_text('{"script": {}}')
    ran = subprocess.run(
        [sys.executable, "-m", "flowc", "run", str(graph), "--script", str(script)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ran.returncode == 1 and "graph.max_turns: must be at least 1, got 0" in ran.stderr, (
        ran.stderr
    )
