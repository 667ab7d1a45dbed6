"""A damaged stored run, whatever a corrupt or hostile database holds in its rows (wrong
JSON types, missing keys, nulls, huge numbers, nested junk): every reader of runs
(`flowc log`, `log RUN`, `log --json`, `replay`, `flowc view`'s runs list, run page,
the answers about a turn and the graph, and the run's streams) either reads it or says
the run is damaged,
naming it; never a traceback, never an internal error (a bug in flowc shown as a
damaged run, or a damaged run shown as a bug).

The property test mutates one value of one record of a real run, written by the real
runtime into a real SQLite file; the examples are derandomized and bounded.
"""

from __future__ import annotations

import asyncio
import copy
import io
import json
import re
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flowc.cli import main
from flowc.runtime.fork import FORKED_FROM
from tests.stored_runs import TOKEN, cli_readers, copy_with, json_paths, rewrite_row, store_run

#: what a damaged value is replaced with
JUNK: list[Any] = [
    None,
    True,
    0,
    -1,
    10**30,
    1.5e308,
    "",
    "x",
    "wf-nope",
    [],
    [None],
    [1, "a", {}],
    {},
    {"a": None},
    {"x": [{"y": [1, 2, {"z": None}]}]},
]


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, list[tuple[int, Any]]]:
    """A closed run of examples/context_routing.flow (a tool that routes and sets the
    context, a human's reply, a tool that ends it) written by the real `flowc run`: the
    database, the run id and its rows ``(seq, envelope JSON)``."""
    return store_run(tmp_path_factory.mktemp("damaged"))


def _mutate(doc: Any, path: tuple[Any, ...], junk: Any, delete: bool) -> Any:
    """``doc`` with the value at ``path`` replaced by ``junk``, or deleted (a key or an
    item); the whole record replaced when ``path`` is empty."""
    if not path:
        return junk
    doc = json.loads(json.dumps(doc))
    parent = doc
    for step in path[:-1]:
        parent = parent[step]
    if delete:
        del parent[path[-1]]
    else:
        parent[path[-1]] = junk
    return doc


@st.composite
def damage(draw: st.DrawFn, rows: list[tuple[int, Any]]) -> tuple[int, Any]:
    """One record of the run with one value damaged: ``(seq, new envelope)``."""
    seq, env = draw(st.sampled_from(rows))
    paths = [p for p in json_paths(env) if p[:1] != ("channel_id",)]
    path = draw(st.sampled_from(paths))
    delete = bool(path) and draw(st.booleans())
    junk = draw(st.sampled_from(JUNK))
    return seq, _mutate(env, path, junk, delete)


def _readers(db: Path, cid: str) -> list[list[str]]:
    return [*cli_readers(db, cid, why=3, scenario=4), ["fork", cid, "2", "--db", str(db)]]


#: the one wording of a damaged run: its record (event type, row), the value's JSON path, what
DAMAGED_TEXT = (
    r"run wf-[0-9a-f]+ is damaged: record \d+ \([^)]*\), "
    r"(\(the record\)|[a-z_]+(\.[A-Za-z_0-9]+|\[\d+\])*): \w"
)


def _check_cli(argv: list[str], cid: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(argv)
    out, err = capsys.readouterr()
    where = f"flowc {' '.join(argv)}: exit {code}\n{err[-2000:]}"
    assert "Traceback" not in err and "internal error" not in err, where
    assert code in (0, 1), where
    # (a fork with no script stalls; a fork whose copied records break the run's rules
    # says so of the new run, forked from this one)
    forked = argv[0] == "fork" and ("stalled: " in out or f"forked from {cid} " in err)
    if code == 1 and not forked:  # (replay says where the WAL breaks on stdout)
        assert f"run {cid}" in err + out or f"{cid}:" in err + out, where
    if "is damaged:" in err:  # a damaged value: its record and its JSON path
        assert f"run {cid}" in err, where
        assert re.search(DAMAGED_TEXT, err), where


def _check_view(db: Path, cid: str) -> None:
    from starlette.testclient import TestClient

    from flowc.view.server import ViewSettings, make_app

    app = make_app(ViewSettings(str(db), TOKEN, poll=0.01))
    client = TestClient(
        app,  # type: ignore[arg-type]
        base_url="http://127.0.0.1:8125",
        raise_server_exceptions=True,
    )
    listed = client.get(f"/api/runs?token={TOKEN}")
    assert listed.status_code == 200, listed.text
    lines = [line for line in listed.json() if FORKED_FROM not in line]  # (`fork`'s runs)
    said = None  # the list's words for the damaged run
    for line in lines:
        assert line["run_id"] == cid, line
        if line["status"] == "damaged":
            assert "internal error" not in line["error"], line
            said = line["error"]
    # the run's streams (the page's events, AG-UI's, the backlog) read it as the list
    # does: one that meets the damage answers 422 or ends saying it in the list's words
    for path, damaged in STREAMS.items():
        status, body = asyncio.run(_stream(app, f"/api/run/{cid}/{path}?token={TOKEN}"))
        if status == 422:
            assert json.loads(body) == {"error": said}, (path, body)
            continue
        assert status == 200, (path, status, body)
        found = damaged.findall(body)
        assert [json.loads(f'"{error}"') for error in found] == ([said] if said else []), (
            path,
            said,
            body[-2000:],
        )
    # a damaged run (any record, the opening included) is a 422 everywhere, naming the run
    # once (not its database): a 500 is a bug in flowc, and none is
    for path in (f"/api/run/{cid}", f"/run/{cid}"):
        page = client.get(f"{path}?token={TOKEN}")
        if page.status_code != 200:
            _damaged_answer(page, cid, str(db))
    # what the run page asks about a turn, the stored graph's findings (not a stream), a fork
    for path in ("why/3", "scenario/4", "findings"):
        answer = client.get(f"/api/run/{cid}/{path}?token={TOKEN}")
        if answer.status_code not in (200, 404):
            _damaged_answer(answer, cid, str(db))
    fork = client.post(
        f"/api/run/{cid}/fork/1?token={TOKEN}",
        headers={"origin": "http://127.0.0.1:8125", "content-type": "application/json"},
        content=b"",
    )
    if fork.status_code not in (201, 404):
        _damaged_answer(fork, cid, str(db))


#: each stream of a run, and how it says the run is damaged (its error, JSON-escaped)
STREAMS = {
    "events": re.compile(r'event: damaged\ndata: \{"error": "((?:[^"\\]|\\.)*)"\}\n\n\Z'),
    "ag-ui": re.compile(
        r'data: \{"type": "RUN_ERROR", "message": "((?:[^"\\]|\\.)*)", "code": "damaged"\}\n\n\Z'
    ),
    "turns": re.compile(r'\{"error": "((?:[^"\\]|\\.)*)"\}\n\Z'),
}


async def _stream(app: Any, path: str) -> tuple[int, str]:
    """The status and body of the app's answer to ``GET path``, read until it ends, or
    (a stream of a run that is open, which streams on for ever) until it read the run to
    its last record and said its status; a stream that hangs fails the test."""
    where, _, query = path.partition("?")
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": where,
        "raw_path": where.encode(),
        "query_string": query.encode(),
        "root_path": "",
        "headers": [(b"host", b"127.0.0.1:8125")],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8125),
    }
    status, chunks, asked = 0, [], False
    enough = asyncio.Event()

    async def receive() -> dict[str, Any]:
        nonlocal asked
        if not asked:
            asked = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await enough.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b"").decode())
            if not message.get("more_body") or _open_run_read("".join(chunks)):
                enough.set()

    await asyncio.wait_for(app(scope, receive, send), 60)
    return status, "".join(chunks)


def _open_run_read(body: str) -> bool:
    """A stream said the status of a run it read to its end, and the run is open."""
    return bool(re.search(r'"close_reason": null, "next_speaker"', body))


def _damaged_answer(answer: Any, cid: str, db: str) -> None:
    assert answer.status_code == 422, answer.text
    assert f"run {cid}" in answer.text and answer.text.count(cid) == 1, answer.text
    assert db not in answer.text and "internal error" not in answer.text, answer.text


def test_every_reader_reads_a_damaged_run_or_says_so(
    stored: tuple[Path, str, list[tuple[int, Any]]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    db, cid, rows = stored
    copy = tmp_path / "copy.db"
    monkeypatch.setattr("sys.stdin", io.StringIO(""))  # (a fork's human: nobody answers)

    @settings(
        derandomize=True,
        max_examples=300,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(damage(rows))
    def check(damaged: tuple[int, Any]) -> None:
        seq, env = damaged
        for beside in ("-wal", "-shm"):  # left by the last example's readers
            Path(f"{copy}{beside}").unlink(missing_ok=True)
        shutil.copyfile(db, copy)
        rewrite_row(copy, seq, env)
        for argv in _readers(copy, cid):
            _check_cli(argv, cid, capsys)
        _check_view(copy, cid)

    check()


def test_a_damaged_value_is_named_by_run_record_and_json_path(
    stored: tuple[Path, str, list[tuple[int, Any]]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    db, cid, rows = stored
    copy = tmp_path / "copy.db"
    shutil.copyfile(db, copy)
    (pos, seq, env), *_ = [
        (i, s, e) for i, (s, e) in enumerate(rows, 1) if e["event_data"].get("routing")
    ]
    env = _mutate(env, ("event_data", "routing", "kind"), 10**30, False)
    rewrite_row(copy, seq, env)
    assert main(["log", "--db", str(copy)]) == 1
    out, err = capsys.readouterr()
    assert out == f"{cid}  damaged\n"
    assert err == (
        f"flowc log: error: {copy}: run {cid} is damaged: record {pos} (ag2.packet, row {seq}), "
        "event_data.routing.kind: expected a string or null, got 1000000000000000000000000000000\n"
    )
    # the listing's JSON names the run as damaged, with what the error line says
    assert main(["log", "--json", "--db", str(copy)]) == 1
    out, err = capsys.readouterr()
    said = err.removeprefix(f"flowc log: error: {copy}: ").rstrip("\n")
    assert json.loads(out) == [{"run_id": cid, "status": "damaged", "error": said}], out
    # a value of the opening's metadata (it was "damaged (TypeError: '<' not supported
    # between instances of 'str' and 'int')": no record, no value named)
    opening = _mutate(
        rows[0][1], ("event_data", "metadata", "participants", 1, "order"), "2", False
    )
    shutil.copyfile(db, copy)  # (the damaged routing undone)
    rewrite_row(copy, rows[0][0], opening)
    assert main(["log", cid, "--db", str(copy)]) == 1
    assert capsys.readouterr().err == (
        f"flowc log: error: {copy}: run {cid} is damaged: record 1 (ag2.channel.opened), "
        'event_data.metadata.participants[1].order: expected an integer, got "2"\n'
    )


@pytest.mark.parametrize("error", [TypeError, AttributeError, KeyError, ValueError])
def test_a_bug_while_reading_a_run_is_an_internal_error_not_a_damaged_run(
    stored: tuple[Path, str, list[tuple[int, Any]]],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    error: type[Exception],
) -> None:
    """`flowc log` took any KeyError, TypeError, ValueError or AttributeError met while
    it read a run for a damaged run (exit 1, "damaged"): a bug in flowc hidden as the
    user's data."""
    from flowc.runtime.transcript import TranscriptFolder

    db, cid, _ = stored

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise error("injected fault in TranscriptFolder.feed")

    monkeypatch.setattr(TranscriptFolder, "feed", broken)
    for argv in (["log", "--db", str(db)], ["log", cid, "--json", "--db", str(db)]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "flowc log: internal error: " in err and "injected fault" in err, err
        assert "damaged" not in err
    # the view: a bug is the server's error (500), not a run listed as damaged
    from starlette.testclient import TestClient

    from flowc.view.server import ViewSettings, make_app

    client = TestClient(
        make_app(ViewSettings(str(db), TOKEN)),  # type: ignore[arg-type]
        base_url="http://127.0.0.1:8125",
        raise_server_exceptions=False,
    )
    for path in ("/api/runs",):
        answer = client.get(f"{path}?token={TOKEN}")
        assert answer.status_code == 500 and "damaged" not in answer.text, (path, answer.text)


def test_a_run_that_does_not_open_is_damaged_for_why_and_scenario(
    stored: tuple[Path, str, list[tuple[int, Any]]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`log RUN --why N` and `--scenario-upto N` on a run whose first record is not its
    opening: a damaged run (it was caught as a ValueError; with READ_ERRORS narrowed it
    would be an internal error)."""
    db, cid, rows = stored
    copy = tmp_path / "copy.db"
    shutil.copyfile(db, copy)
    rewrite_row(copy, rows[0][0], _mutate(rows[0][1], ("event_type",), "x", False))
    for option in ("--why", "--scenario-upto"):
        assert main(["log", cid, option, "3", "--db", str(copy)]) == 1
        assert capsys.readouterr().err == (
            f"flowc log: error: {copy}: run {cid}: the WAL of this run does not start with "
            "its opening\n"
        )


def test_log_and_log_run_agree_on_a_run_that_does_not_open(
    stored: tuple[Path, str, list[tuple[int, Any]]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A run whose first record is not its opening: `flowc log RUN` raised KeyError
    'metadata' (an internal error once the catch was narrowed) while `flowc log` and
    `flowc view` left the run out of their lists; all now say it is damaged, in the same
    words."""
    db, cid, rows = stored
    copy = tmp_path / "copy.db"
    shutil.copyfile(db, copy)
    rewrite_row(copy, rows[0][0], _mutate(rows[0][1], ("event_type",), "ag2.msg.text", False))
    said = f"flowc log: error: {copy}: run {cid}: the WAL of this run does not start with its opening\n"
    assert main(["log", "--db", str(copy)]) == 1
    out, err = capsys.readouterr()
    assert (out, err) == (f"{cid}  damaged\n", said)
    for argv in (["log", cid], ["log", cid, "--json"]):
        assert main([*argv, "--db", str(copy)]) == 1
        assert capsys.readouterr().err == said
    # the view lists it as damaged in the same words (it left it out, and its page was 404)
    from starlette.testclient import TestClient

    from flowc.view.server import ViewSettings, make_app

    client = TestClient(
        make_app(ViewSettings(str(copy), TOKEN)),  # type: ignore[arg-type]
        base_url="http://127.0.0.1:8125",
        raise_server_exceptions=True,
    )
    error = "the WAL of this run does not start with its opening"
    listed = client.get(f"/api/runs?token={TOKEN}").json()
    assert listed == [{"run_id": cid, "status": "damaged", "error": f"run {cid}: {error}"}]
    page = client.get(f"/api/run/{cid}?token={TOKEN}")  # (a damaged run: 422, not a bug's 500)
    assert (page.status_code, page.json()) == (422, {"error": f"run {cid}: {error}"})


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        ('"soon"', '"soon"'),
        ('"5"', '"5"'),
        ("1" + "0" * 400, "1" + "0" * 36 + "..."),  # (float() raised OverflowError)
        ("NaN", "nan"),
        ("Infinity", "inf"),
        ("-1", "-1"),
    ],
)
def test_a_stored_turn_limit_that_is_no_time_is_a_damaged_run(
    stored: tuple[Path, str, list[tuple[int, Any]]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    seconds: str,
    shown: str,
) -> None:
    """A turn_within whose seconds are not a finite number, not negative, that float()
    converts: the hub's float() raised ValueError (or OverflowError for 10**400) on
    resume, an internal error; it is a damaged record, named by its JSON path, for every
    reader."""
    db, cid, rows = stored
    copy = tmp_path / "copy.db"
    shutil.copyfile(db, copy)
    opening = rows[0][1]
    assert opening["event_data"]["expectations"][0]["name"] == "turn_within"
    path = ("event_data", "expectations", 0, "params", "seconds")
    raw = json.dumps(_mutate(opening, path, "@@seconds@@", False))
    con = sqlite3.connect(copy)
    text = raw.replace('"@@seconds@@"', seconds)
    con.execute("UPDATE wal SET envelope = ? WHERE seq = ?", (text, rows[0][0]))
    con.commit()
    con.close()
    said = (
        f"{copy}: run {cid} is damaged: record 1 (ag2.channel.opened, row {rows[0][0]}), "
        "event_data.expectations[0].params.seconds: expected a finite number of seconds, "
        f"not negative, got {shown}\n"
    )
    for argv in (["log", cid], ["replay", cid], ["resume", cid], ["log"]):
        code = main([*argv, "--db", str(copy)])
        err = capsys.readouterr().err
        assert code == 1 and err.endswith(said), (argv, err)
        assert "internal error" not in err


def test_the_views_fork_says_a_damaged_row_is_damaged(
    stored: tuple[Path, str, list[tuple[int, Any]]], tmp_path: Path
) -> None:
    """POST /api/run/ID/fork/N on a run with a damaged row past its opening: said as the
    view's answers about a turn say it (422, the run, record and JSON path), not as a
    database that failed (503); and by each stream of the run, as its last event."""
    from starlette.testclient import TestClient

    from flowc.view.server import ViewSettings, make_app

    db, cid, rows = stored
    copy = tmp_path / "copy.db"
    shutil.copyfile(db, copy)
    pos, seq, env = next(
        (i, s, e) for i, (s, e) in enumerate(rows, 1) if e["event_data"].get("routing")
    )
    rewrite_row(copy, seq, _mutate(env, ("event_data", "routing", "kind"), 5, False))
    client = TestClient(
        make_app(ViewSettings(str(copy), TOKEN)),  # type: ignore[arg-type]
        base_url="http://127.0.0.1:8125",
        raise_server_exceptions=True,
    )
    said = (  # (the run named once, its database not at all)
        f"run {cid} is damaged: record {pos} (ag2.packet, row {seq}), "
        "event_data.routing.kind: expected a string or null, got 5"
    )
    why = client.get(f"/api/run/{cid}/why/2?token={TOKEN}")
    assert (why.status_code, why.json()) == (422, {"error": said})
    # the page itself reads the opening only (not every record of a long run): a damaged
    # record past it is said by the answers that read it
    page = client.get(f"/api/run/{cid}?token={TOKEN}")
    assert page.status_code == 200
    fork = client.post(
        f"/api/run/{cid}/fork/1?token={TOKEN}",
        content=b"{}",
        headers={"origin": "http://127.0.0.1:8125", "content-type": "application/json"},
    )
    assert (fork.status_code, fork.json()) == (422, {"error": said})
    # each stream says it as its last event, and ends (the damaged record's page is read
    # whole: no turn of it is sent); the damaged record raised out of the stream, which
    # broke off with no word said
    events = client.get(f"/api/run/{cid}/events?token={TOKEN}").text
    assert events == f"retry: 1000\n\nevent: damaged\ndata: {json.dumps({'error': said})}\n\n"
    from tests.view.test_view_agui import agui_events  # (each event validated)

    sent = [e for _, e in agui_events(client.get(f"/api/run/{cid}/ag-ui?token={TOKEN}").text)]
    assert [e["type"] for e in sent] == ["RUN_STARTED", "STATE_SNAPSHOT", "RUN_ERROR"]
    assert sent[-1] == {"type": "RUN_ERROR", "message": said, "code": "damaged"}
    backlog = client.get(f"/api/run/{cid}/turns?token={TOKEN}")
    assert (backlog.status_code, backlog.text) == (200, json.dumps({"error": said}) + "\n")


def test_null_expectations_in_an_opening_are_read_as_none(
    stored: tuple[Path, str, list[tuple[int, Any]]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """An opening whose ``expectations`` is null (the definition allows it: a list or
    null): every reader reads the run as one with no turn limits, no internal error."""
    db, cid, rows = stored
    copy = tmp_path / "copy.db"
    shutil.copyfile(db, copy)
    rewrite_row(copy, rows[0][0], _mutate(rows[0][1], ("event_data", "expectations"), None, False))
    for argv in (["log", cid], ["log", cid, "--json"], ["replay", cid], ["resume", cid], ["log"]):
        code = main([*argv, "--db", str(copy)])
        out, err = capsys.readouterr()
        assert code == 0, (argv, out, err)
        assert "damaged" not in out + err and "internal error" not in err, (argv, err)


def test_a_run_whose_graph_names_no_participant_is_not_forked(
    stored: tuple[Path, str, list[tuple[int, Any]]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A run whose stored graph names a speaker who is none of its participants (one
    deleted from its opening): `flowc fork` wrote a new run that no reader could read
    (listed as damaged, its parent not named); it says the parent is damaged, as `flowc
    log` does, and writes nothing."""
    db, cid, rows = stored
    opening = rows[0][1]
    (billing,) = [
        i
        for i, p in enumerate(opening["event_data"]["metadata"]["participants"])
        if p["agent_id"] == "billing"
    ]
    path = ("event_data", "metadata", "participants", billing)
    damaged = copy_with(db, tmp_path, rows[0][0], _mutate(opening, path, None, True))
    said = (
        f"{damaged}: run {cid}: invalid workflow graph: transitions[2].then.args.agent_id: "
        '"billing" is not a participant (customer, triage, tech)\n'
    )
    assert main(["log", "--db", str(damaged)]) == 1
    assert capsys.readouterr() == (f"{cid}  damaged\n", f"flowc log: error: {said}")
    assert main(["fork", cid, "2", "--db", str(damaged)]) == 1
    assert capsys.readouterr().err == f"flowc fork: error: {said}"
    con = sqlite3.connect(damaged)
    assert con.execute("SELECT DISTINCT channel_id FROM wal").fetchall() == [(cid,)]
    con.close()


def test_a_run_whose_records_break_its_rules_is_not_forked(
    stored: tuple[Path, str, list[tuple[int, Any]]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A record of the right kinds that the flow's rules refuse (a hand-off to someone
    who is no participant) before turn N: `flowc fork` wrote a copy that `resume` then
    refused; it says, before writing anything and in `resume`'s words, where the WAL
    breaks (exit 1)."""
    db, cid, rows = stored
    seq, env = rows[2][0], copy.deepcopy(rows[2][1])
    env["event_data"]["routing"] = {"kind": "handoff", "target": "nobody", "reason": ""}
    damaged = copy_with(db, tmp_path, seq, env)
    assert main(["resume", cid, "--db", str(damaged)]) == 1
    resumed = capsys.readouterr().err
    assert f"run {cid}: the WAL is broken at envelope 3 (" in resumed, resumed
    assert main(["fork", cid, "3", "--db", str(damaged), "--run-id", "wf-child"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"flowc fork: error: {damaged}: run {cid}: the WAL is broken at "), err
    assert resumed.split("the WAL is broken at ", 1)[1] in err, (resumed, err)
    con = sqlite3.connect(damaged)
    assert con.execute("SELECT DISTINCT channel_id FROM wal").fetchall() == [(cid,)]
    con.close()


def test_an_opening_that_names_another_run_is_damaged(
    stored: tuple[Path, str, list[tuple[int, Any]]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run rebuilt from an opening whose metadata names another run answered to that
    other id: `flowc resume` of such an open run waited for ever (its turn failed
    looking for a run of that name). Every reader says the record is damaged."""
    db, cid, rows = stored
    copy = tmp_path / "copy.db"
    shutil.copyfile(db, copy)
    seq, opening = rows[0]
    rewrite_row(
        copy, seq, _mutate(opening, ("event_data", "metadata", "channel_id"), "wf-other", False)
    )
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    for argv in _readers(copy, cid):
        code = main(argv)
        err = capsys.readouterr().err
        assert code == 1, (argv, err)
        assert (
            f"run {cid} is damaged: record 1 (ag2.channel.opened, row {seq}), "
            'event_data.metadata.channel_id: expected this run\'s id, got "wf-other"'
        ) in err, (argv, err)
    _check_view(copy, cid)
