"""A `null` in a JSON graph is read as AG2 1.2.1's ``TransitionGraph.loads`` reads it.

Where AG2 takes a `null` for the key left out (``data.get("transitions") or []``,
``data.get("args") or {}``, ``target_from_dict(None)`` for ``default_target`` and a rule's
``then``, ``data.get("max_turns")``), every flowc command reads it as the key left out:
the graph means what AG2's loaded graph means. Every other `null` is refused (E108) with
its JSON path and a message that says what is accepted there.
"""

from __future__ import annotations

import asyncio
import copy
import json
from pathlib import Path
from typing import Any

import pytest
from ag2.knowledge import MemoryKnowledgeStore
from ag2.network import EV_CHANNEL_CLOSED, HubClient, LocalLink, Passport, TransitionGraph
from ag2.network import Hub as AG2Hub
from ag2.network.transitions import TransitionRegistry, WorkflowGraphError

import flowc
from flowc.cli import main
from flowc.compiler import model as m
from flowc.compiler.pipeline import load_graph_json
from flowc.compiler.serde import structure_graph, structure_knobs, unstructure_graph
from flowc.compiler.shapes import structure
from flowc.source import SourceFile

FROM_USER = {"name": "from_speaker", "args": {"agent_id": "user"}}
TO_WRITER = {"name": "agent", "args": {"agent_id": "writer"}}


def graph(**over: Any) -> dict[str, Any]:
    g: dict[str, Any] = {
        "initial_speaker": "user",
        "transitions": [{"when": FROM_USER, "then": TO_WRITER, "priority": 0}],
        "default_target": {"name": "terminate", "args": {"reason": "done"}},
        "max_turns": 4,
    }
    g.update(over)
    return g


def without(g: dict[str, Any], key: str) -> dict[str, Any]:
    out = copy.deepcopy(g)
    del out[key]
    return out


def rule(**over: Any) -> dict[str, Any]:
    r: dict[str, Any] = {"when": FROM_USER, "then": TO_WRITER, "priority": 0}
    r.update(over)
    return r


# ── accepted: AG2 reads the null as the key left out ────────────────────────────

#: (id, graph with a null, the same graph with the key left out or its default written)
ACCEPTED: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("default_target", graph(default_target=None), without(graph(), "default_target")),
    (
        "transitions",
        graph(transitions=None, default_target={"name": "terminate", "args": None}),
        without(graph(default_target={"name": "terminate"}), "transitions"),
    ),
    ("max_turns", graph(max_turns=None), without(graph(), "max_turns")),
    (
        "then",
        graph(transitions=[rule(then=None)]),
        graph(transitions=[rule(then={"name": "terminate", "args": {"reason": "after_work"}})]),
    ),
    (
        "condition_args",
        graph(transitions=[rule(when={"name": "always", "args": None})]),
        graph(transitions=[rule(when={"name": "always"})]),
    ),
    (
        "target_args",
        graph(transitions=[rule(then={"name": "round_robin", "args": None})]),
        graph(transitions=[rule(then={"name": "round_robin"})]),
    ),
    (
        "terminate_args",
        graph(default_target={"name": "terminate", "args": None}),
        graph(default_target={"name": "terminate", "args": {"reason": "after_work"}}),
    ),
    (
        "all_at_once",
        {
            "initial_speaker": "user",
            "transitions": None,
            "default_target": None,
            "max_turns": None,
        },
        {"initial_speaker": "user"},
    ),
]
ACCEPTED_IDS = [c[0] for c in ACCEPTED]


def ag2_dict(data: dict[str, Any]) -> dict[str, Any]:
    """What AG2 loads ``data`` as, written back by AG2 itself."""
    loaded = TransitionGraph.loads(copy.deepcopy(data), registry=TransitionRegistry())
    out: dict[str, Any] = loaded.to_dict()
    return out


@pytest.mark.parametrize(("data", "absent"), [c[1:] for c in ACCEPTED], ids=ACCEPTED_IDS)
def test_a_null_ag2_reads_as_absent_means_what_ag2_loads(
    data: dict[str, Any], absent: dict[str, Any]
) -> None:
    theirs = ag2_dict(data)
    assert theirs == ag2_dict(absent)  # AG2 itself: the null is the key left out
    # flowc's fast reader and its converter read the same model, AG2's graph
    mine = structure_graph(copy.deepcopy(data))
    assert structure(copy.deepcopy(data), m.TransitionGraph) == mine
    assert mine == structure_graph(copy.deepcopy(absent))
    assert unstructure_graph(mine) == theirs
    # and the loader every command uses takes it, with no diagnostic
    loaded, diags = load_graph_json(SourceFile("g.json", json.dumps(data)))
    assert diags == () and loaded is not None and loaded.graph == mine


def test_the_reported_graphs_load_with_ag2s_default_target() -> None:
    """The two graphs of the report: AG2 gives both `terminate "after_work"`."""
    first = {
        "initial_speaker": "a",
        "transitions": [
            {
                "when": {"name": "from_speaker", "args": {"agent_id": "a"}},
                "then": {"name": "agent", "args": {"agent_id": "b"}},
                "priority": 0,
            }
        ],
        "default_target": None,
    }
    second = {
        "initial_speaker": "a",
        "transitions": None,
        "default_target": {"name": "terminate", "args": None},
    }
    for data in (first, second):
        theirs = TransitionGraph.loads(copy.deepcopy(data), registry=TransitionRegistry())
        assert theirs.default_target.reason == "after_work"  # type: ignore[attr-defined]
        mine = structure_graph(copy.deepcopy(data))
        assert mine.default_target == m.TerminateTarget("after_work")
        assert unstructure_graph(mine) == theirs.to_dict()
    assert structure_graph(second).transitions == ()


def test_a_knobs_dict_with_null_graph_fields_loads() -> None:
    knobs = {"graph": graph(default_target=None, transitions=None), "context_vars": {}}
    read = structure_knobs(copy.deepcopy(knobs))
    assert unstructure_graph(read.graph) == ag2_dict(knobs["graph"])
    loaded, diags = load_graph_json(SourceFile("k.json", json.dumps(knobs)))
    assert diags == () and loaded is not None and loaded.is_knobs and loaded.graph == read.graph


# ── every command, and a run on both hubs ───────────────────────────────────────

NULLS = graph(default_target=None, max_turns=None)
SCRIPT = {
    "kickoff": "hi",
    "script": {"writer": ["ok"]},
    "participants": ["user", "writer"],
    "humans": ["user"],
}


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_every_command_reads_the_nulls_as_absent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nulls = tmp_path / "nulls.json"
    nulls.write_text(json.dumps(NULLS), encoding="utf-8")
    absent = tmp_path / "absent.json"
    absent.write_text(json.dumps(without(without(NULLS, "default_target"), "max_turns")))
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT), encoding="utf-8")

    code, out, err = cli(capsys, "check", str(nulls))
    assert code == 0 and "E108" not in out + err, out + err
    code, out, err = cli(capsys, "render", "-f", "mermaid", str(nulls))
    assert code == 0 and "after_work" in out, err
    code, out, err = cli(capsys, "decompile", str(nulls))
    assert code == 0 and "E108" not in out + err, out + err
    code, out, err = cli(capsys, "diff", str(nulls), str(absent))
    assert code == 0, out + err
    code, out, err = cli(capsys, "run", str(nulls), "--script", str(script), "--json")
    assert code == 0, err
    assert json.loads(out)["close_reason"] == "after_work"


def ag2_close_reason(graph: dict[str, Any]) -> str | None:
    """Run ``graph`` on AG2's hub between the humans `user` (the kickoff "hi") and
    `writer` ("ok" when its turn comes); the reason its channel closes with."""

    async def go() -> str | None:
        hub = await AG2Hub.open(MemoryKnowledgeStore(), ttl_sweep_interval=0)
        try:
            link = LocalLink(hub)
            user = await HubClient(link, hub=hub).register_human(
                Passport(name="user", kind="human")
            )
            writer = await HubClient(link, hub=hub).register_human(
                Passport(name="writer", kind="human")
            )
            ids = {"user": user.agent_id, "writer": writer.agent_id}
            text = json.dumps(graph)
            for name, agent_id in ids.items():
                text = text.replace(f'"{name}"', f'"{agent_id}"')
            channel = await user.open(
                type="workflow", target=list(ids.values()), knobs={"graph": json.loads(text)}
            )
            cid = channel.channel_id
            await user.send(cid, "hi")
            for _ in range(200):
                await asyncio.sleep(0.01)
                state = hub.adapter_state(cid)
                if state is not None and state.expected_next_speaker == ids["writer"]:
                    await writer.send(cid, "ok")
                    break
            for _ in range(200):
                wal = await hub.read_wal(cid)
                closed = [e for e in wal if e.event_type == EV_CHANNEL_CLOSED]
                if closed:
                    reason: str | None = closed[0].event_data.get("reason")
                    return reason
                await asyncio.sleep(0.01)
            return None
        finally:
            await hub.close()

    return asyncio.run(go())


def test_a_null_default_target_runs_alike_on_both_hubs() -> None:
    theirs = ag2_close_reason(NULLS)
    mine = flowc.run(copy.deepcopy(NULLS), SCRIPT)
    assert theirs == mine.close_reason == "after_work"
    assert [t.speaker for t in mine.turns] == ["user", "writer"]


# ── refused: AG2 fails on the null, or keeps it as a value of the wrong type ───

#: (id, graph, flowc's E108 messages, whether AG2's loads raises on it)
REFUSED: list[tuple[str, dict[str, Any], list[str], bool]] = [
    (
        "initial_speaker",
        graph(initial_speaker=None),
        ["initial_speaker: expected a string, got null"],
        False,  # AG2 keeps None and refuses it when the channel opens (not a participant)
    ),
    (
        "transition",
        graph(transitions=[None]),
        ["transitions[0]: expected a transition object (`when`, `then`, `priority`), got null"],
        True,
    ),
    (
        "when",
        graph(transitions=[rule(when=None)]),
        [
            "transitions[0].when: expected a condition object with `name` (and optional "
            "`args`), got null"
        ],
        True,
    ),
    (
        "priority",
        graph(transitions=[rule(priority=None)]),
        ["transitions[0].priority: expected an integer, got null"],
        False,  # AG2 keeps None: sorting it with another rule's priority raises
    ),
    (
        "condition_name",
        graph(transitions=[rule(when={"name": None})]),
        ["transitions[0].when.name: expected a condition name (a string), got null"],
        True,
    ),
    (
        "target_name",
        graph(default_target={"name": None}),
        ["default_target.name: expected a target name (a string), got null"],
        True,
    ),
    (
        "agent_id",
        graph(transitions=[rule(then={"name": "agent", "args": {"agent_id": None}})]),
        ["transitions[0].then.args.agent_id: expected a string, got null"],
        False,  # AG2 keeps None: the run stalls on a speaker nobody is
    ),
    (
        "reason",
        graph(default_target={"name": "terminate", "args": {"reason": None}}),
        ["default_target.args.reason: expected a string, got null"],
        False,  # AG2 keeps None, not its default "after_work"
    ),
]


@pytest.mark.parametrize(
    ("data", "messages", "ag2_raises"), [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED]
)
def test_a_null_ag2_does_not_read_as_absent_is_refused_in_words(
    data: dict[str, Any], messages: list[str], ag2_raises: bool
) -> None:
    try:
        TransitionGraph.loads(copy.deepcopy(data), registry=TransitionRegistry())
        raised = False
    except (TypeError, KeyError, WorkflowGraphError):
        raised = True
    assert raised == ag2_raises
    loaded, diags = load_graph_json(SourceFile("g.json", json.dumps(data)))
    assert loaded is None
    assert [d.code.id for d in diags] == ["E108"] * len(messages)
    assert [d.message for d in diags] == messages


def test_ag2_keeps_a_refused_null_as_a_value_not_as_its_default() -> None:
    """Why the nulls AG2 loads without raising are still refused: AG2 does not read them
    as the key left out but keeps `None`, which its defaults never are."""
    reg = TransitionRegistry()
    reason = TransitionGraph.loads(
        graph(default_target={"name": "terminate", "args": {"reason": None}}), registry=reg
    )
    assert reason.default_target.reason is None  # type: ignore[attr-defined]
    priority = TransitionGraph.loads(graph(transitions=[rule(priority=None)]), registry=reg)
    assert priority.transitions[0].priority is None


def test_a_rule_without_then_is_still_refused_as_on_ag2() -> None:
    """`"then": null` is AG2's default target, but a `then` left out is a KeyError there."""
    data = graph(transitions=[{"when": FROM_USER}])
    with pytest.raises(KeyError):
        TransitionGraph.loads(copy.deepcopy(data), registry=TransitionRegistry())
    loaded, diags = load_graph_json(SourceFile("g.json", json.dumps(data)))
    assert loaded is None
    assert [d.message for d in diags] == [
        "transitions[0].then: required key missing: expected a target object (`name`, `args`)"
    ]
