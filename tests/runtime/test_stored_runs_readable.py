"""Every run the runtime writes is readable by every reader of runs: real runs, written
by the real hub into a real SQLite file, whose agents reply with the odd values the hub
admits (a reply's text that is a list, an object, a number or null; context writes of
nested values and unicode; a delete of a key that is not a string; an envelope's
``ttl_seconds`` of 2.5), read back by `flowc log` (the list and one run, text, JSON and
JSON lines, ``--why``, ``--scenario-upto``), `replay`, `resume`, `fork`, a worker's
read of a run (:func:`~flowc.runtime.script_run.resume_script`, as a worker drives a
run it claims) and `flowc view` (the runs list, a run, its turns, why, scenario): none
may call it damaged, and none may fail.

(The hub's own definition of a record, :mod:`flowc.runtime.stored`, is the one its
readers check: a value it would read back as damaged is refused when it is written.)
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import flowc
from flowc.cli import main
from flowc.runtime import Reply, ToolCall
from flowc.runtime.adapters.base import ProtocolError
from flowc.runtime.envelope import EV_CONTEXT_SET, EV_TEXT, Envelope
from flowc.runtime.hub import Hub
from flowc.runtime.script import parse_script
from flowc.runtime.script_run import resume_script, run_script
from flowc.runtime.target import RunTarget
from flowc.runtime.wal import SqliteStore
from tests.stored_runs import TOKEN, cli_readers

FLOW = """speaker user: human
speaker bot {
  tool note
}
start user
max_turns 6
when from user then bot
when from bot then user
"""
SCRIPT = {"kickoff": "hello", "script": {"user": ["more", "again"]}}

#: a JSON value as an agent may put it in a reply or a context write
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(10**20), 10**20)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)
#: what a context write may delete: any key the hub takes (a JSON scalar)
delete_keys = (
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(-2, 2) | st.text(max_size=4)
)


@st.composite
def replies(draw: st.DrawFn) -> Reply:
    text = draw(values)
    calls = draw(
        st.lists(
            st.builds(
                lambda s, d: ToolCall("note", set=s, delete=d),
                st.dictionaries(st.text(min_size=1, max_size=4), values, max_size=2),
                st.lists(delete_keys, max_size=2),
            ),
            max_size=2,
        )
    )
    return Reply(text, tuple(calls))


def _target() -> RunTarget:
    return RunTarget.from_compiled(flowc.compile_flow(FLOW))


def _write_run(db: Path, answers: list[Reply]) -> str:
    """A run of :data:`FLOW` whose agent ``bot`` replies ``answers`` in turn, written by
    the real runtime into ``db``: its id."""
    queue = list(answers)

    async def bot(turn: Any) -> Reply:
        return queue.pop(0) if queue else Reply("done")

    async def go() -> str:
        store = SqliteStore(db)
        try:
            result = await run_script(
                _target(), parse_script(SCRIPT), store=store, agents={"bot": bot}, contracts="warn"
            )
        finally:
            store.close()
        assert result.error is None, result.error
        return result.channel_id

    return asyncio.run(go())


def _hub_run(db: Path) -> str:
    """A run written through the hub's own API (as AG2's clients write): a text with a
    list as its text and a ``ttl_seconds`` of 2.5, a context write deleting a key that
    is not a string (7), then the close."""

    async def go() -> str:
        store = SqliteStore(db)
        hub = await Hub.open(store)
        try:
            a, b = hub.register_human("a"), hub.register_human("b")
            graph = {
                "initial_speaker": "a",
                "transitions": [],
                "max_turns": 3,
                "default_target": {"name": "revert_to_initiator", "args": {}},
            }
            ch = await a.open("workflow", target=["b"], knobs={"graph": graph})
            cid = ch.channel_id
            hub.admit(
                Envelope(
                    cid, a.agent_id, None, EV_TEXT, {"text": ["part", {"n": 1}]}, ttl_seconds=2.5
                )
            )
            await a.set_context(cid, set={"k": [1, "é"]}, delete=[7])  # type: ignore[list-item]
            hub.admit(
                Envelope(cid, b.agent_id, None, EV_CONTEXT_SET, {"set": {}, "delete": [7, "k"]})
            )
            hub.close_channel(cid, "done")
            await hub.idle()
            return cid
        finally:
            await hub.close()

    return asyncio.run(go())


def _not_here(code: int, err: str) -> bool:
    """The turn asked about is not one the reader answers for (said, not damaged)."""
    return (code == 2 and "has 1 turn: no turn 2" in err) or (
        code == 1 and "no scenario line does that" in err
    )


def _read_everywhere(db: Path, cid: str, capsys: pytest.CaptureFixture[str], turns: bool) -> None:
    for argv in cli_readers(db, cid, why=2, scenario=2):
        if not turns and ("--why" in argv or "--scenario-upto" in argv):
            continue
        code = main(argv)
        out, err = capsys.readouterr()
        where = f"flowc {' '.join(argv)}: exit {code}\n{err[-2000:]}"
        # (a reply with nothing to say, such as null, makes no turn: the run stalls on
        # it, and `resume` says so with exit 1; every other reader reads it)
        # (and a run that stalled on its first reply has no turn 2 to explain; a turn
        # let through with a contract's warning is no scenario's line)
        stalled = argv[0] == "resume" and "stalled" in out + err
        assert code == 0 or stalled or _not_here(code, err), where
        assert "damaged" not in out + err and "internal error" not in err, where
    if turns:  # a fork from turn 1, driven on by the script's human turns
        (db.parent / "fork.json").write_text(json.dumps({"script": {"user": ["x"]}}))
        code = main(["fork", cid, "1", "--script", str(db.parent / "fork.json"), "--db", str(db)])
        out, err = capsys.readouterr()
        assert "damaged" not in out + err and "internal error" not in err and "Traceback" not in err
        assert code in (0, 1), err  # (1: the fork's run stalls when its script runs out)

    async def worker_read() -> None:  # what a worker does with a run it claims
        store = SqliteStore(db)
        try:
            result = await resume_script(store, cid)
        finally:
            store.close()
        assert result.error is None or "stalled" in result.error, result.error

    asyncio.run(worker_read())
    _read_in_view(db, cid, turns)


def _read_in_view(db: Path, cid: str, turns: bool) -> None:
    from starlette.testclient import TestClient

    from flowc.view.server import ViewSettings, make_app

    client = TestClient(
        make_app(ViewSettings(str(db), TOKEN)),  # type: ignore[arg-type]
        base_url="http://127.0.0.1:8125",
        raise_server_exceptions=True,
    )
    listed = client.get(f"/api/runs?token={TOKEN}")
    assert listed.status_code == 200, listed.text
    assert all(line["status"] != "damaged" for line in listed.json()), listed.text
    paths = [f"/api/run/{cid}", f"/run/{cid}", f"/api/run/{cid}/turns"]
    if turns:
        paths += [f"/api/run/{cid}/why/2", f"/api/run/{cid}/scenario/2"]
    for path in paths:
        answer = client.get(f"{path}?token={TOKEN}")
        if answer.status_code != 200:  # (as `_not_here`: no turn 2, no scenario line)
            assert answer.status_code in (404, 422), (path, answer.text)
            assert "no turn 2" in answer.text or "no scenario line" in answer.text, answer.text
        assert "damaged" not in answer.text, (path, answer.text)


def test_every_run_the_runtime_writes_is_readable_by_every_reader(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    count = [0]

    @settings(
        derandomize=True,
        max_examples=12,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(st.lists(replies(), min_size=3, max_size=3))
    def check(answers: list[Reply]) -> None:
        count[0] += 1
        db = tmp_path / f"runs{count[0]}.db"
        cid = _write_run(db, answers)
        _read_everywhere(db, cid, capsys, turns=True)

    check()


@pytest.mark.parametrize(
    "answer",
    [
        Reply(["a list", {"as": "text"}]),  # type: ignore[arg-type]
        Reply({"an": ["object"]}),  # type: ignore[arg-type]
        Reply(2.5),  # type: ignore[arg-type]
        Reply("ok", (ToolCall("note", set={"k": None}, delete=[7]),)),  # type: ignore[list-item]
        Reply("ünïcode ☃", (ToolCall("note", set={"é": {"x": [None, 1.5]}}),)),
    ],
    ids=["list-text", "object-text", "number-text", "delete-7", "unicode"],
)
def test_an_accepted_odd_reply_stays_readable(
    answer: Reply, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The cases the hub always admitted, one by one: a reply whose text is a list, an
    object or a number; a context write deleting 7; unicode keys and nested values."""
    db = tmp_path / "runs.db"
    cid = _write_run(db, [answer, answer])
    _read_everywhere(db, cid, capsys, turns=True)


def test_a_float_ttl_and_a_non_string_delete_through_the_hub_stay_readable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "runs.db"
    cid = _hub_run(db)
    _read_everywhere(db, cid, capsys, turns=False)


def test_what_no_reader_could_read_back_is_refused_when_written(tmp_path: Path) -> None:
    """The one definition at admission: a value it would read back as damaged (a
    routing reason that is a number, a key to delete that is a list, a ``ttl_seconds``
    that is a string) is refused with what is wrong, and nothing is written."""

    async def go() -> list[str]:
        store = SqliteStore(tmp_path / "r.db")
        hub = await Hub.open(store)
        errors = []
        try:
            a = hub.register_human("a")
            hub.register_human("b")
            graph = {
                "initial_speaker": "a",
                "transitions": [],
                "max_turns": None,
                "default_target": {"name": "revert_to_initiator", "args": {}},
            }
            ch = await a.open("workflow", target=["b"], knobs={"graph": graph})
            cid = ch.channel_id
            before = len(hub.read_wal(cid))
            for env in (
                Envelope(cid, a.agent_id, None, EV_TEXT, {"text": "x"}, ttl_seconds="soon"),  # type: ignore[arg-type]
                Envelope(cid, a.agent_id, None, EV_CONTEXT_SET, {"delete": [[1]]}),
                Envelope(cid, a.agent_id, None, "ag2.packet", {"routing": {"reason": 5}}),
                Envelope(cid, a.agent_id, ("b", 7), EV_TEXT, {"text": "x"}),  # type: ignore[arg-type]
            ):
                with pytest.raises(ProtocolError) as caught:
                    hub.admit(env)
                errors.append(str(caught.value))
            assert len(hub.read_wal(cid)) == before
            return errors
        finally:
            await hub.close()

    assert asyncio.run(go()) == [  # (who sent it, and what is wrong)
        'a\'s reply was refused: ttl_seconds: expected a number or null, got "soon"',
        "a's context write was refused: event_data.delete[0]: expected a string, number, "
        "boolean or null, got a list",
        "a's reply was refused: event_data.routing.reason: expected a string or null, got 5",
        "a's reply was refused: audience[1]: expected a string, got 7",
    ]


def _graph() -> dict[str, Any]:
    return {
        "initial_speaker": "a",
        "transitions": [],
        "max_turns": None,
        "default_target": {"name": "revert_to_initiator", "args": {}},
    }


@pytest.mark.parametrize(
    ("name", "seconds", "said"),
    [
        # a participant's name that is no string: the opening was written, then every
        # reader called the run damaged (ChannelMetadata.from_dict)
        (7, 5, "event_data.metadata.participants[1].agent_id: expected a string, got 7"),
        # a turn limit float() cannot convert: the hub's float() raised OverflowError
        (
            "b",
            10**400,
            "event_data.expectations[0].params.seconds: expected a finite number of seconds, "
            "not negative, got 1" + "0" * 36 + "...",
        ),
        (
            "b",
            float("nan"),
            "event_data.expectations[0].params.seconds: expected a finite "
            "number of seconds, not negative, got nan",
        ),
        (
            "b",
            "5",
            "event_data.expectations[0].params.seconds: expected a finite number "
            'of seconds, not negative, got "5"',
        ),
    ],
)
def test_an_opening_no_reader_could_read_back_is_refused_when_opened(
    tmp_path: Path, name: Any, seconds: Any, said: str
) -> None:
    """The opening is checked with the definition readers use (its metadata as
    ChannelMetadata.from_dict reads it): refused at open, naming who opened it and the
    value, and nothing written."""
    from flowc.runtime.adapters.base import Expectation

    async def go() -> tuple[str, list[str]]:
        store = SqliteStore(tmp_path / "r.db")
        hub = await Hub.open(store)
        try:
            a = hub.register_human("a")
            b = hub.register_human(name)
            with pytest.raises(ProtocolError) as caught:
                hub.open_channel(
                    a.agent_id,
                    "workflow",
                    [b.agent_id],
                    {"graph": _graph()},
                    expectations=[Expectation("turn_within", "warn", {"seconds": seconds})],
                )
            return str(caught.value), list(store.channel_ids())
        finally:
            await hub.close()

    assert asyncio.run(go()) == (f"a's opening of a run was refused: {said}", [])


def test_a_routing_tool_of_any_json_scalar_is_admitted_and_read_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The hub always admitted a packet whose routing names its tool with a number (the
    fold only compares it): still admitted, and every reader reads the run."""

    async def go() -> str:
        store = SqliteStore(tmp_path / "runs.db")
        hub = await Hub.open(store)
        try:
            a = hub.register_human("a")
            hub.register_human("b")
            ch = await a.open("workflow", target=["b"], knobs={"graph": _graph()})
            for tool in (7, 2.5, True, None, "t"):
                hub.admit(
                    Envelope(
                        ch.channel_id,
                        a.agent_id,
                        None,
                        "ag2.packet",
                        {"body": "x", "routing": {"kind": "text", "tool": tool}},
                    )
                )
            hub.close_channel(ch.channel_id, "done")
            await hub.idle()
            return ch.channel_id
        finally:
            await hub.close()

    cid = asyncio.run(go())
    _read_everywhere(tmp_path / "runs.db", cid, capsys, turns=False)
