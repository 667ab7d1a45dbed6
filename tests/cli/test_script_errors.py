"""A bad `--script` is reported in the same words by every command that takes one
(`flowc run`, `flowc submit`, `flowc resume`): one helper reads it."""

from __future__ import annotations

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
