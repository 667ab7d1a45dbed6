"""`flowc diff` reads each side as `flowc check` does: a JSON graph naming a custom
condition or target that does not load is refused (exit 2) with check's own errors, not
compared as if the name meant something; the note on what graphs do not carry agrees
with its subject."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flowc.cli import main

GRAPH = {
    "initial_speaker": "a",
    "max_turns": 5,
    "transitions": [
        {"when": {"name": "foo", "args": {}}, "then": {"name": "agent", "args": {"agent_id": "b"}}},
        {
            "when": {"name": "from_speaker", "args": {"agent_id": "a"}},
            "then": {"name": "agent", "args": {"agent_id": "b"}},
        },
    ],
}


def _outputs(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    return captured.out + captured.err


def test_an_unloadable_custom_name_is_refused_as_check_refuses_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "cust.json"
    bad.write_text(json.dumps(GRAPH))
    good = tmp_path / "good.json"
    good.write_text(json.dumps({**GRAPH, "transitions": GRAPH["transitions"][1:]}))
    assert main(["check", str(bad)]) == 1
    said = _outputs(capsys)
    error = said[: said.index("1 error in 1 file")].strip()
    assert error.startswith("error[E103]: transitions[0].when.name: no condition registered")
    for old, new in ((bad, bad), (good, bad), (bad, good)):
        assert main(["diff", str(old), str(new)]) == 2
        out = _outputs(capsys)
        assert error in out
        assert "behaviour" not in out
    # as git's diff driver it never fails the diff, but still compares nothing
    assert main(["diff", "--git", "g.json", str(good), "0", "0", str(bad), "0", "0"]) == 0
    out = _outputs(capsys)
    assert "error[E103]" in out and "behaviour" not in out


def test_the_note_on_two_graphs_agrees_with_its_subject(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "good.json"
    good.write_text(json.dumps({**GRAPH, "transitions": GRAPH["transitions"][1:]}))
    assert main(["diff", str(good), str(good)]) == 0
    assert (
        "humans' writes, which OLD and NEW (both JSON graphs) do not carry; both are compared"
        in _outputs(capsys)
    )
    bare = tmp_path / "bare.flow"
    bare.write_text("speaker a\nspeaker b\nstart a\nmax_turns 5\nwhen from a then b\n")
    assert main(["diff", str(bare), str(good)]) == 0
    assert "which OLD (a .flow that declares none) and NEW (a JSON graph) do not carry" in _outputs(
        capsys
    )
