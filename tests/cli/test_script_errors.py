"""A bad `--script` is reported in the same words by every command that takes one
(`flowc run`, `flowc submit`, `flowc resume`): one helper reads it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from flowc.cli import main

FLOW = """speaker user: human
speaker bot {
  tool go hands off to user
}
when from user then bot
when from bot then user
"""

#: name -> (file text, exit code, stderr with PATH for the script's path)
BAD: dict[str, tuple[str | None, int, str]] = {
    "missing.json": (None, 2, "flowc {cmd}: error: PATH: no such file"),
    "broken.json": (
        '{"kickoff": "hi",\n  "script": {"bot": [\n}\n',
        1,
        "PATH:3:1: error: not valid JSON: Expecting value",
    ),
    "broken.yaml": (
        "kickoff: hi\nscript:\n  bot: [x\n",
        1,
        "PATH:4:1: error: not valid YAML: while parsing a flow sequence, "
        "expected ',' or ']', but got '<stream end>'",
    ),
    "shape.json": (
        '{"kickoff": "hi", "script": {"bot": ["x", 42]}}',
        1,
        "PATH: error: script.bot[1]: a turn is a string or an object, got int",
    ),
    "huge.json": (
        '{"kickoff": "hi",\n "context_vars": {"k": ' + "9" * 4301 + "}}",
        1,
        "PATH:2:24: error: a number may have at most 4,300 digits (found 4,301) "
        "(at context_vars.k)",
    ),
}


@pytest.fixture(scope="module")
def stalled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A database holding one run stalled on `user` (for `flowc resume`)."""
    root = tmp_path_factory.mktemp("stalled")
    (root / "loop.flow").write_text(FLOW)
    (root / "ok.json").write_text('{"kickoff": "hi", "script": {"bot": ["x"]}}')
    db = root / "runs.db"
    assert (
        main(["run", str(root / "loop.flow"), "--script", str(root / "ok.json"), "--db", str(db)])
        == 1
    )  # stalled: user has no turn left
    from flowc.runtime.stores import open_store

    store = open_store(str(db))
    try:
        [run_id] = store.channel_ids()
    finally:
        store.close()
    return db, run_id


def _args(cmd: str, flow: Path, script: Path, db: Path, run_id: str) -> list[str]:
    if cmd == "resume":
        return ["resume", run_id, "--script", str(script), "--db", str(db)]
    return [
        cmd,
        str(flow),
        "--script",
        str(script),
        "--db",
        ":memory:" if cmd == "run" else str(db.parent / "shared.db"),
    ]


@pytest.mark.parametrize("name", sorted(BAD))
def test_every_command_reports_a_bad_script_in_the_same_words(
    name: str, stalled: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, run_id = stalled
    text, code, want = BAD[name]
    flow = tmp_path / "loop.flow"
    flow.write_text(FLOW)
    script = tmp_path / name
    if text is not None:
        script.write_text(text)
    capsys.readouterr()
    for cmd in ("run", "submit", "resume"):
        assert main(_args(cmd, flow, script, db, run_id)) == code, cmd
        err = capsys.readouterr().err
        assert err == want.format(cmd=cmd).replace("PATH", str(script)) + "\n", (cmd, err)
    # nothing was written: not the shared database of submit, not the stalled run
    assert not (db.parent / "shared.db").exists()


@pytest.mark.parametrize(
    "flow_text, place",
    [
        (FLOW, "2:9"),
        ("# two speakers on one line\nspeakers user: human, bot\nsequence user -> bot\n", "2:23"),
    ],
)
def test_a_refused_bare_step_names_where_the_speaker_is_declared(
    flow_text: str, place: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A model speaker's `finish` without `tool` that none of its tools makes is refused at
    the script's turn (its JSON path) and names the speaker's declaration in the flow, the
    place to add the tool, as `flowc check` prints a place."""
    flow = tmp_path / "bare.flow"
    flow.write_text(flow_text)
    script = tmp_path / "bare.json"
    script.write_text('{"kickoff": "hi", "script": {"bot": ["ok", {"finish": "x"}]}}')
    capsys.readouterr()
    for cmd in ("run", "submit"):
        db = ":memory:" if cmd == "run" else str(tmp_path / "shared.db")
        assert main([cmd, str(flow), "--script", str(script), "--db", db]) == 1, cmd
        err = capsys.readouterr().err
        assert err.startswith(
            f"{script}: error: script.bot[1]: `bot` is a model speaker and "
            'none of its tools finishes "x"'
        ), err
        assert err.endswith(
            f"; `bot` is declared at {flow}:{place}: give the call the `tool` "
            "that does it, or declare one there\n"
        ), err


#: scripts whose errors have a place, as LF files: (name, text, stderr with PATH)
PLACED = [
    *(
        (name, text, want)
        for name, (text, _, want) in sorted(BAD.items())
        if text and re.match(r"PATH:\d+:\d+:", want)
    ),
    (
        "cycle.yaml",
        "kickoff: hi\nscript:\n  bot: &x [*x]\n",
        "PATH:3:12: error: the alias *x refers to a value that holds it (a cycle) (at script.bot[0])",
    ),
    (  # no extension: JSON first, then YAML
        "broken",
        "kickoff: hi\nscript:\n  bot: [x\n",
        "PATH:4:1: error: not valid JSON or YAML: while parsing a flow sequence, "
        "expected ',' or ']', but got '<stream end>'",
    ),
]


@pytest.mark.parametrize("end", ["\r", "\r\n"], ids=["cr", "crlf"])
@pytest.mark.parametrize(("name", "text", "want"), PLACED, ids=[p[0] for p in PLACED])
def test_a_scripts_error_is_placed_on_the_same_line_whatever_its_line_ends(
    name: str, text: str, want: str, end: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A lone \\r ends a line as \\n and \\r\\n do, as for a `.flow` (tests/dsl/test_line_ends.py):
    a JSON script saved with old Mac line ends was placed on line 1 at a column past its
    length (json counts lines at \\n only)."""
    flow = tmp_path / "loop.flow"
    flow.write_text(FLOW)
    script = tmp_path / name
    script.write_bytes(text.replace("\n", end).encode())
    assert main(["run", str(flow), "--script", str(script), "--db", ":memory:"]) == 1
    assert capsys.readouterr().err == want.replace("PATH", str(script)) + "\n"


def test_yaml_places_count_only_the_line_ends_flowc_counts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """PyYAML also ends a line at U+2028 (and U+0085, U+2029); flowc, an editor and the
    JSON path do not: the place is on the line they show."""
    flow = tmp_path / "loop.flow"
    flow.write_text(FLOW)
    script = tmp_path / "sep.yaml"
    script.write_text('kickoff: "hi\u2028there"\nscript:\n  bot: &x [*x]\n')
    assert main(["run", str(flow), "--script", str(script), "--db", ":memory:"]) == 1
    assert capsys.readouterr().err == (
        f"{script}:3:12: error: the alias *x refers to a value that holds it (a cycle) "
        "(at script.bot[0])\n"
    )
    script.write_text('kickoff: "hi\u2028there"\nscript:\n  bot: [x\n')  # (a syntax error)
    assert main(["run", str(flow), "--script", str(script), "--db", ":memory:"]) == 1
    assert capsys.readouterr().err.startswith(f"{script}:4:1: error: not valid YAML: ")


@pytest.mark.parametrize("end", ["\n", "\r", "\r\n"], ids=["lf", "cr", "crlf"])
def test_a_knobs_files_error_is_placed_on_the_same_line_whatever_its_line_ends(
    end: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    knobs = tmp_path / "knobs.json"
    knobs.write_bytes(end.join(["{", '  "x": 1,', '  "y": [1, }', "}", ""]).encode())
    script = tmp_path / "ok.json"
    script.write_text('{"kickoff": "hi", "script": {}}')
    assert main(["run", str(knobs), "--script", str(script), "--db", ":memory:"]) == 1
    assert f" --> {knobs}:3:12\n" in capsys.readouterr().err


#: a script key only a bare JSON graph takes -> (its value, the refusal's words after the key)
BARE_GRAPH_ONLY = {
    "participants": (["user", "bot"], "where `speaker NAME` declares each speaker"),
    "humans": (["user"], "where `speaker NAME: human` declares a human"),
    "creator": ("user", "where `initiator NAME` names who opens the run"),
    "context_vars": ({"ready": True}, "where `context KEY = VALUE` sets the initial context"),
}


@pytest.mark.parametrize("key", sorted(BARE_GRAPH_ONLY))
def test_a_new_run_of_a_flow_refuses_the_keys_only_a_bare_graph_takes(
    key: str, stalled: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A `.flow` declares its speakers, humans, initiator and context: a script that gives
    them is refused where it would open a new run (`run`, `submit`, `fork`), naming the
    script and the key, before anything is written (they would silently override the flow,
    or, for a fork, whose opening is its parent's, silently do nothing). Resume rebuilds
    the run from its stored opening, where the keys never had an effect: it takes such a
    script as before."""
    db, run_id = stalled
    value, words = BARE_GRAPH_ONLY[key]
    flow = tmp_path / "loop.flow"
    flow.write_text(FLOW)
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"kickoff": "hi", key: value, "script": {"bot": ["x"]}}))
    want = (
        f"{script}: error: {key}: only for a bare JSON graph, not for a .flow, {words}; "
        "drop it from the script\n"
    )
    capsys.readouterr()
    for cmd in ("run", "submit"):
        assert main(_args(cmd, flow, script, db, run_id)) == 1, cmd
        assert capsys.readouterr().err == want, cmd
    from flowc.runtime.stores import open_store

    store = open_store(str(db.parent / "shared.db"))
    try:  # nothing was submitted
        assert store.channel_ids() == []
    finally:
        store.close()
    copy = tmp_path / "copy.db"  # (the module's run stays as it is for the other tests)
    copy.write_bytes(db.read_bytes())
    without_kickoff = tmp_path / "s2.json"  # (a fork past turn 0 goes on: no kickoff)
    without_kickoff.write_text(
        json.dumps({key: value, "script": {"user": ["hi", "ok"], "bot": ["x", "y"]}})
    )
    for n, given in (("0", script), ("2", without_kickoff)):
        fork = ["fork", run_id, n, "--script", str(given), "--db", str(copy), "--json"]
        assert main(fork) == 1, n
        assert capsys.readouterr() == ("", want.replace(str(script), str(given))), n
    store = open_store(str(copy))
    try:  # no fork was written
        assert store.channel_ids() == [run_id]
    finally:
        store.close()
    resume = ["resume", run_id, "--script", str(without_kickoff), "--db", str(copy), "--json"]
    main(resume)
    out, err = capsys.readouterr()
    assert "bare JSON graph" not in err, err
    assert json.loads(out)["turns"][-1]["text"] == "y", out


@pytest.mark.parametrize("key", sorted(BARE_GRAPH_ONLY))
def test_run_script_from_python_refuses_the_keys_only_a_bare_graph_takes(key: str) -> None:
    """`run_script(...)` called from Python refuses them as `flowc run` does, in the same
    words, before the hub opens: nothing is written to the store it was given."""
    import asyncio

    import flowc
    from flowc.runtime.script import ScriptError, parse_script
    from flowc.runtime.script_run import run_script
    from flowc.runtime.target import RunTarget
    from flowc.runtime.wal import MemoryStore

    target = RunTarget.from_compiled(flowc.compile_flow(FLOW), source_text=FLOW)
    value, words = BARE_GRAPH_ONLY[key]
    script = parse_script({"kickoff": "hi", key: value, "script": {"bot": ["x"]}})
    store = MemoryStore()
    with pytest.raises(ScriptError) as refused:
        asyncio.run(run_script(target, script, store=store))
    assert str(refused.value) == (
        f"{key}: only for a bare JSON graph, not for a .flow, {words}; drop it from the script"
    )
    assert store.channel_ids() == []


def test_a_refusal_names_every_bare_graph_key_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flow = tmp_path / "loop.flow"
    flow.write_text(FLOW)
    script = tmp_path / "s.yaml"
    script.write_text("kickoff: hi\nhumans: [user]\nparticipants: [user, bot]\ncontext_vars: {}\n")
    assert main(["run", str(flow), "--script", str(script), "--db", ":memory:"]) == 1
    assert capsys.readouterr().err == (
        f"{script}: error: participants: only for a bare JSON graph, not for a .flow, "
        "where `speaker NAME` declares each speaker; drop it from the script "
        "(and `humans`, `context_vars`, for the same reason)\n"
    )


#: a bare JSON graph: its script gives the speakers, humans, creator and context
BARE_GRAPH = {
    "graph": {
        "initial_speaker": "u",
        "max_turns": None,
        "default_target": {"name": "terminate", "args": {"reason": "after_work"}},
        "transitions": [
            {
                "priority": 0,
                "when": {"name": "context_equals", "args": {"key": "ready", "value": True}},
                "then": {"name": "terminate", "args": {"reason": "shipped"}},
            },
        ],
    },
}


def test_a_bare_graph_keeps_the_keys(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A bare JSON graph declares no speakers, humans or context: the script gives them."""
    (tmp_path / "g.json").write_text(json.dumps(BARE_GRAPH))
    script = tmp_path / "s.json"
    script.write_text(
        json.dumps(
            {
                "kickoff": "go",
                "participants": ["u", "b"],
                "humans": ["u"],
                "creator": "b",
                "context_vars": {"ready": True},
            }
        )
    )
    args = ["run", str(tmp_path / "g.json"), "--script", str(script), "--db", ":memory:", "--json"]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["close_reason"] == "shipped" and out["context_vars"] == {"ready": True}


def test_a_fork_of_a_bare_graph_run_takes_the_keys_only_as_the_run_has_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A fork's opening is a copy of its run's: the script of a bare graph's run may be
    given again (its keys are the run's), but a key that says otherwise is refused before
    anything is written, naming the run's value (it used to be ignored without a word)."""
    from flowc.runtime.stores import open_store

    (tmp_path / "g.json").write_text(json.dumps(BARE_GRAPH))
    db = tmp_path / "runs.db"
    script = tmp_path / "s.json"
    given = {
        "kickoff": "go",
        "participants": ["u", "b"],
        "humans": ["u"],
        "creator": "b",
        "context_vars": {"ready": True},
    }
    script.write_text(json.dumps(given))
    args = ["run", str(tmp_path / "g.json"), "--script", str(script), "--db", str(db), "--json"]
    assert main(args) == 0
    run_id = json.loads(capsys.readouterr().out)["run_id"]
    fork = ["fork", run_id, "0", "--script", str(script), "--db", str(db), "--json"]
    assert main(fork) == 0  # the same script: its keys are the run's
    assert json.loads(capsys.readouterr().out)["close_reason"] == "shipped"
    for key, value, stored in (
        ("participants", ["b", "u"], '["u", "b"]'),
        ("humans", ["b"], '["u"]'),
        ("creator", "u", '"b"'),
        ("context_vars", {"ready": False}, '{"ready": true}'),
        # (`1 == True` in Python, but the fork's context would hold `true`, not `1`)
        ("context_vars", {"ready": 1}, '{"ready": true}'),
    ):
        other = tmp_path / f"{key}-{len(list(tmp_path.glob(key + '-*')))}.json"
        other.write_text(json.dumps({**given, key: value}))
        fork = ["fork", run_id, "0", "--script", str(other), "--db", str(db), "--json"]
        assert main(fork) == 1, key
        assert capsys.readouterr() == (
            "",
            f"{other}: error: {key}: a fork keeps the opening of the run it forks, where it"
            f" is {stored}; the script's {json.dumps(value, sort_keys=True)} would be"
            " ignored: drop it from the script, or give the run's own\n",
        ), key
    store = open_store(str(db))
    try:  # the run and the one fork of the same script, no other
        assert len(store.channel_ids()) == 2
    finally:
        store.close()


def test_a_run_submitted_before_with_a_bare_graph_key_is_still_worked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run submitted before the keys were refused (its stored script has
    `context_vars`) is worked as it was: the worker rebuilds it from its opening and
    does not refuse the script it stored (it used to mark the run failed for ever)."""
    import asyncio

    import flowc
    from flowc.runtime import worker as worker_module
    from flowc.runtime.target import RunTarget
    from flowc.runtime.wal import MemoryStore

    flow = flowc.compile_flow("speaker a: human\nspeaker b\nsequence a -> b")
    store = MemoryStore()
    doc = {"kickoff": "hi", "context_vars": {"k": 1}, "script": {"b": ["hello"]}}
    with monkeypatch.context() as before:  # (as a flowc that took the key submitted it)
        before.setattr(worker_module, "refuse_bare_graph_keys", lambda target, script: None)
        run_id = asyncio.run(worker_module.submit_run(store, RunTarget.from_compiled(flow), doc))

    async def serve() -> list[str]:
        worker = worker_module.Worker(store, poll_seconds=0.01)
        task = asyncio.ensure_future(worker.serve())
        while worker.stats.closed + worker.stats.failed < 1:
            await asyncio.sleep(0.01)
        worker.stop()
        await task
        return [e.event_type.rsplit(".", 1)[1] for e in store.read(run_id)]

    assert asyncio.run(asyncio.wait_for(serve(), 30)) == ["opened", "text", "packet", "closed"]


def test_agents_are_checked_after_the_script_keys(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`flowc run F.flow --script S --agents A`: a script with `participants` is refused
    for what it is, not as if AGENTS named no speaker of the flow (the script's
    participants were applied first)."""
    flow = tmp_path / "f.flow"
    flow.write_text(FLOW)
    script = tmp_path / "s.yaml"
    script.write_text("kickoff: hi\nparticipants: [user]\n")
    agents = tmp_path / "agents.py"
    agents.write_text('async def bot(*a, **k):\n    return "hello"\n\nAGENTS = {"bot": bot}\n')
    args = ["run", str(flow), "--script", str(script), "--agents", str(agents), "--db", ":memory:"]
    assert main(args) == 1
    assert capsys.readouterr().err == (
        f"{script}: error: participants: only for a bare JSON graph, not for a .flow, "
        "where `speaker NAME` declares each speaker; drop it from the script\n"
    )


def test_a_script_refused_before_the_run_leaves_no_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`run` and `submit` check the script before they open the database: a wrong one
    creates no file (and leaves one that exists as it was)."""
    flow = tmp_path / "loop.flow"
    flow.write_text(FLOW)
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"script": {"nobody": ["x"]}}))
    for cmd in ("run", "submit"):
        db = tmp_path / f"{cmd}.db"
        assert main([cmd, str(flow), "--script", str(script), "--db", str(db)]) == 1, cmd
        assert "`nobody` is not a speaker" in capsys.readouterr().err
        assert not db.exists(), cmd
