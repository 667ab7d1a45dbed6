"""`flowc view`'s AG-UI stream (``/api/run/ID/ag-ui``): every event validated against the
protocol's published models (the ``ag-ui-protocol`` package, pydantic), in the order
the protocol asks (a run starts, messages and tool calls open before their content and
close after it, steps pair up, the run finishes last), and what a front end rebuilds
from it compared with what ``flowc log --json`` says of the run: the speakers, texts,
tool calls, the context after each turn (by applying the JSON Patches), why each turn
went where it went. A reconnection goes on after its last turn, with no gap and no
duplicate; a run that is still going streams its turns as they are committed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")
import ag_ui.core as ag_ui_core  # the dev extra's ag-ui-protocol: the protocol's models
from pydantic import BaseModel, TypeAdapter
from starlette.testclient import TestClient

from flowc.view.server import ViewSettings, make_app
from tests.view.conftest import ROOT, SCRIPT, TOKEN, flowc

EVENT = TypeAdapter(ag_ui_core.Event)


def _no_extra(model: BaseModel, where: str) -> None:
    """The protocol's models keep unknown fields: a misspelled wire name would pass them,
    so none may be there (recursively)."""
    assert not model.model_extra, f"{where}: fields the protocol does not have: {model.model_extra}"
    for name in type(model).model_fields:
        value = getattr(model, name)
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, BaseModel):
                _no_extra(item, f"{where}.{name}")


def agui_events(body: str) -> list[tuple[str | None, dict[str, Any]]]:
    """``(id, event)`` of each event of an AG-UI stream, each validated."""
    out = []
    for block in body.split("\n\n"):
        lines = [line for line in block.splitlines() if not line.startswith(":")]
        fields = dict(line.split(": ", 1) for line in lines if ": " in line)
        if "data" not in fields:
            continue
        data = json.loads(fields["data"])
        model = EVENT.validate_python(data)
        _no_extra(model, data["type"])
        # and what a client reads back is what was sent (by the protocol's own encoder)
        assert json.loads(model.model_dump_json(by_alias=True)) == data
        out.append((fields.get("id"), data))
    return out


def _apply(state: dict[str, Any], ops: list[dict[str, Any]]) -> dict[str, Any]:
    """RFC 6902 ``add`` and ``remove`` of top-level members (what the stream sends)."""
    state = dict(state)
    for op in ops:
        key = op["path"][1:].replace("~1", "/").replace("~0", "~")
        if op["op"] == "add":
            state[key] = op["value"]
        else:
            assert op["op"] == "remove" and key in state, op
            del state[key]
    return state


def rebuild(
    sent: list[tuple[str | None, dict[str, Any]]], state: dict[str, Any] | None = None
) -> tuple[list[dict[str, Any]], dict[str, Any] | None, list[str]]:
    """What a front end makes of a stream: the turns (speaker, text, tool calls, the
    context after it, flowc's why), the state, and the protocol's order checked."""
    turns: list[dict[str, Any]] = []
    open_messages: dict[str, str] = {}
    open_calls: dict[str, dict[str, Any]] = {}
    step: str | None = None
    current: dict[str, Any] | None = None
    kinds = [e["type"] for _, e in sent]
    for event_id, e in sent:
        kind = e["type"]
        if kind == "RUN_STARTED":
            assert not turns and step is None
        elif kind == "STEP_STARTED":
            assert step is None, "a step opened inside another"
            step = e["stepName"]
            current = {"speaker": step, "text": "", "tool_calls": [], "id": None}
        elif kind == "TEXT_MESSAGE_START":
            assert step is not None and e["messageId"] not in open_messages
            assert e["name"] == step
            open_messages[e["messageId"]] = ""
        elif kind == "TEXT_MESSAGE_CONTENT":
            open_messages[e["messageId"]] += e["delta"]
        elif kind == "TEXT_MESSAGE_END":
            assert current is not None
            current["text"] = open_messages.pop(e["messageId"])
        elif kind == "TOOL_CALL_START":
            assert e["parentMessageId"] is not None
            open_calls[e["toolCallId"]] = {"name": e["toolCallName"], "args": ""}
        elif kind == "TOOL_CALL_ARGS":
            open_calls[e["toolCallId"]]["args"] += e["delta"]
        elif kind == "TOOL_CALL_END":
            call = open_calls.pop(e["toolCallId"])
            assert current is not None
            current["tool_calls"].append({"name": call["name"], "args": json.loads(call["args"])})
        elif kind == "STATE_SNAPSHOT":
            state = dict(e["snapshot"])
        elif kind == "STATE_DELTA":
            assert state is not None, "a delta before any snapshot"
            state = _apply(state, e["delta"])
        elif kind == "CUSTOM" and e["name"] == "flowc.turn":
            assert current is not None
            current["why"] = e["value"]
        elif kind == "STEP_FINISHED":
            assert current is not None and e["stepName"] == step
            assert not open_messages and not open_calls, "a step closed with content open"
            current["id"] = event_id
            current["context"] = state
            turns.append(current)
            step, current = None, None
        elif kind == "RUN_FINISHED":
            assert step is None and not open_messages
    if "RUN_FINISHED" in kinds:
        assert kinds[-1] == "RUN_FINISHED"
    return turns, state, kinds


def _as_logged(turn: dict[str, Any]) -> dict[str, Any]:
    return {
        "speaker": turn["speaker"],
        "text": turn["text"],
        "tool_calls": turn["tool_calls"],
        "decided_by": turn["decided_by"],
        "next_speaker": turn["next_speaker"],
        "id": str(turn["number"]),
    }


def _as_streamed(turn: dict[str, Any]) -> dict[str, Any]:
    return {
        "speaker": turn["speaker"],
        "text": turn["text"],
        "tool_calls": turn["tool_calls"],
        "decided_by": turn["why"]["decided_by"],
        "next_speaker": turn["why"]["next_speaker"],
        "id": turn["id"],
    }


def _contexts(log: dict[str, Any]) -> list[dict[str, Any]]:
    """The context after each turn, from the log's own per-turn writes."""
    state: dict[str, Any] = {}
    out = []
    for t in log["turns"]:
        state = {k: v for k, v in state.items() if k not in t["context"]["delete"]}
        state.update(t["context"]["set"])
        out.append(state)
    return out


def test_a_finished_run_as_ag_ui_events(
    client: TestClient, run: tuple[Path, dict[str, Any]]
) -> None:
    log = run[1]
    body = client.get(f"/api/run/{log['run_id']}/ag-ui?token={TOKEN}").text
    sent = agui_events(body)
    turns, state, kinds = rebuild(sent)
    assert kinds[:2] == ["RUN_STARTED", "STATE_SNAPSHOT"] and kinds[-1] == "RUN_FINISHED"
    assert sent[0][1]["runId"] == log["run_id"]
    assert [_as_streamed(t) for t in turns] == [_as_logged(t) for t in log["turns"]]
    assert any(t["tool_calls"] for t in turns)  # the example calls tools
    assert [t["context"] for t in turns] == _contexts(log)
    assert state == log["context_vars"]
    finished = sent[-1][1]
    assert finished["result"] == {"close_reason": log["close_reason"], "turns": len(log["turns"])}
    # a human's message is the user's, an agent's the assistant's
    roles = {e["name"]: e["role"] for _, e in sent if e["type"] == "TEXT_MESSAGE_START"}
    assert roles["customer"] == "user" and roles["billing"] == "assistant"


@pytest.mark.parametrize("after", [1, 3])
def test_a_reconnection_goes_on_after_its_last_turn(
    client: TestClient, run: tuple[Path, dict[str, Any]], after: int
) -> None:
    log = run[1]
    url = f"/api/run/{log['run_id']}/ag-ui?token={TOKEN}"
    whole = agui_events(client.get(url).text)
    first = [(i, e) for i, e in whole if i is None or int(i) <= after]
    # the part a client had: everything up to the STEP_FINISHED of turn `after`
    cut = next(k for k, (i, _) in enumerate(whole) if i == str(after)) + 1
    had = whole[:cut]
    rest = agui_events(client.get(url, headers={"Last-Event-ID": str(after)}).text)
    assert rest[0][1]["type"] == "STEP_STARTED"  # no second RUN_STARTED
    turns_had, state, _ = rebuild(had)
    turns_rest, _, _ = rebuild(rest, state)
    assert [t["id"] for t in turns_had + turns_rest] == [str(t["number"]) for t in log["turns"]]
    assert [_as_streamed(t) for t in turns_had + turns_rest] == [
        _as_logged(t) for t in log["turns"]
    ]
    # the first turn after the reconnection brings the whole state
    assert [e["type"] for _, e in rest].count("STATE_SNAPSHOT") == 1
    assert turns_rest[-1]["context"] == log["context_vars"]
    assert first  # (the events before the cut, ids included, are what `had` holds)


def test_a_live_run_streams_its_turns_as_they_are_committed(tmp_path: Path) -> None:
    """A run driven by another process, read from a real `flowc view` over HTTP while it
    goes: each agent's turn waits until the stream has brought the turn before it (so
    every turn came live, not from a finished log), the run finishes in the stream, and
    the whole equals the log."""
    import httpx

    from tests.view.conftest import LIVE_TURNS, ViewServer, start_live_run

    db, run, gate = start_live_run(tmp_path, tmp_path / "runs.db")
    server = ViewServer(Path(db), cwd=tmp_path)
    try:
        listed = httpx.get(f"{server.base}/api/runs?token={server.token}", timeout=30).json()
        run_id = listed[0]["run_id"]
        url = f"{server.base}/api/run/{run_id}/ag-ui?token={server.token}"
        body, opened = "", 0
        with httpx.stream("GET", url, timeout=60) as response:
            for chunk in response.iter_text():
                body += chunk
                arrived = body.count('"type": "STEP_FINISHED"')
                # turn k+1 (an agent's k-th) may be written once turn k was streamed
                while opened < min(arrived, LIVE_TURNS - 1):
                    opened += 1
                    (gate / f"go-{opened}").touch()
                if '"type": "RUN_FINISHED"' in body:
                    break
        assert run.wait(timeout=60) == 0
    finally:
        server.stop()
        if run.poll() is None:
            run.kill()
        run.communicate()
    log = json.loads(flowc("log", run_id, "--json", "--db", str(db), cwd=tmp_path).stdout)
    turns, _, kinds = rebuild(agui_events(body))
    assert kinds[0] == "RUN_STARTED" and kinds[-1] == "RUN_FINISHED"
    assert opened == LIVE_TURNS - 1
    assert [_as_streamed(t) for t in turns] == [_as_logged(t) for t in log["turns"]]


def test_hostile_names_and_texts_stay_inside_their_events(tmp_path: Path) -> None:
    """A text with line breaks and what looks like SSE fields, a key with ``/`` and ``~``:
    each event is still one JSON object, and the patch's path escapes the key."""
    flow = tmp_path / "h.flow"
    flow.write_text(
        "speaker user: human { sets `a/b~c` }\nspeaker bot\nmax_turns 3\n"
        "when from user then bot\nwhen from bot then user\n",
        encoding="utf-8",
    )
    script = tmp_path / "s.yaml"
    script.write_text(
        'kickoff: "hi"\nscript:\n  bot: ["line\\n\\ndata: {\\"type\\": \\"RUN_ERROR\\"}\\nid: 99"]\n'
        '  user: [{say: "x", set: {"a/b~c": 1}}]\n',
        encoding="utf-8",
    )
    db = tmp_path / "runs.db"
    done = flowc("run", str(flow), "--script", str(script), "--db", str(db), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    log = json.loads(flowc("log", "last", "--json", "--db", str(db), cwd=tmp_path).stdout)
    app = make_app(ViewSettings(str(db), TOKEN, poll=0.01))
    client = TestClient(app, base_url="http://127.0.0.1:8123")  # type: ignore[arg-type]
    sent = agui_events(client.get(f"/api/run/{log['run_id']}/ag-ui?token={TOKEN}").text)
    assert "RUN_ERROR" not in [e["type"] for _, e in sent]
    assert all(i is None or int(i) <= len(log["turns"]) for i, _ in sent)
    turns, state, _ = rebuild(sent)
    assert [t["text"] for t in turns] == [t["text"] for t in log["turns"]]
    assert state == log["context_vars"]


def test_a_forked_run_names_its_parent(tmp_path: Path) -> None:
    """A run started from turn 2 of another (``flowc fork``, with a script that takes it
    to its end) starts its AG-UI stream with ``parentRunId``; its turns are the copied ones,
    then its own, as ``flowc log`` reports them. (The run ends, so the stream does: read
    whole, as every Starlette's test client can.)"""
    (tmp_path / "s.yaml").write_text(SCRIPT, encoding="utf-8")
    (tmp_path / "rest.yaml").write_text(
        'script:\n  billing:\n    - "Which one?"\n    - tool: close_ticket\n'
        '      say: "Refunded."\n  customer:\n    - "The second."\n',
        encoding="utf-8",
    )
    db = tmp_path / "runs.db"
    flow = ROOT / "examples" / "context_routing.flow"
    assert (
        flowc("run", str(flow), "--script", "s.yaml", "--db", str(db), cwd=tmp_path).returncode == 0
    )
    parent = json.loads(flowc("log", "last", "--json", "--db", str(db), cwd=tmp_path).stdout)
    forked = flowc(
        "fork", parent["run_id"], "2", "--script", "rest.yaml", "--db", str(db), cwd=tmp_path
    )
    assert forked.returncode == 0, forked.stderr
    child = json.loads(flowc("log", "last", "--json", "--db", str(db), cwd=tmp_path).stdout)
    assert child["run_id"] != parent["run_id"] and child["close_reason"] is not None
    app = make_app(ViewSettings(str(db), TOKEN, poll=0.01))
    client = TestClient(app, base_url="http://127.0.0.1:8123")  # type: ignore[arg-type]
    sent = agui_events(client.get(f"/api/run/{child['run_id']}/ag-ui?token={TOKEN}").text)
    assert sent[0][1]["type"] == "RUN_STARTED"
    assert sent[0][1]["parentRunId"] == parent["run_id"]
    assert sent[-1][1]["type"] == "RUN_FINISHED"
    turns, _, _ = rebuild(sent)
    assert [_as_streamed(t) for t in turns] == [_as_logged(t) for t in child["turns"]]
    assert [_as_logged(t) for t in child["turns"][:2]] == [
        _as_logged(t) for t in parent["turns"][:2]
    ]


def test_a_reconnection_gets_the_context_of_its_own_turn(tmp_path: Path) -> None:
    """A run whose context changes on every human turn: reconnecting after any turn N, the
    first turn sent carries the context after that very turn (not the state after all
    the rows the server read at once), on the page's stream and in AG-UI's, and the
    context after every later turn is right."""
    from tests.view.test_view_http import events as page_events

    flow = tmp_path / "stages.flow"
    flow.write_text(
        "speaker user: human { sets stage }\nspeaker bot\nmax_turns 8\n"
        "when from user then bot\nwhen from bot then user\n",
        encoding="utf-8",
    )
    script = tmp_path / "s.yaml"
    script.write_text(
        'kickoff: "go"\nscript:\n  bot: ["w", "x", "y", "z"]\n  user:\n'
        '    - {say: "a", set: {stage: 1}}\n    - {say: "b", set: {stage: 2}}\n'
        '    - {say: "c", set: {stage: 3}}\n',
        encoding="utf-8",
    )
    db = tmp_path / "runs.db"
    done = flowc("run", str(flow), "--script", str(script), "--db", str(db), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    log = json.loads(flowc("log", "last", "--json", "--db", str(db), cwd=tmp_path).stdout)
    after_each = _contexts(log)
    assert len({json.dumps(c) for c in after_each}) >= 4  # it does change along the run
    client = TestClient(
        make_app(ViewSettings(str(db), TOKEN, poll=0.01)), base_url="http://127.0.0.1:8123"
    )  # type: ignore[arg-type]
    run_id = log["run_id"]
    for after in range(1, len(log["turns"])):
        headers = {"Last-Event-ID": str(after)}
        page = [
            d
            for _, kind, d in page_events(
                client.get(f"/api/run/{run_id}/events?token={TOKEN}", headers=headers).text
            )
            if kind == "turn"
        ]
        assert page[0]["n"] == after + 1 and page[0]["context"] == after_each[after]
        state = None
        for d in page:  # the page's own fold: the whole context when it changed
            state = d.get("context", state)
            assert state == after_each[d["n"] - 1]
        rest = agui_events(
            client.get(f"/api/run/{run_id}/ag-ui?token={TOKEN}", headers=headers).text
        )
        turns, _, _ = rebuild(rest)
        assert [t["context"] for t in turns] == after_each[after:]
