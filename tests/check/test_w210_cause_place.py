"""W210's help names the line of the finding that says why its terminate rule never fires
(W208, W209): that line is where `flowc check` reports that finding, also when the first
read of the key is not in the terminate rule, is nested, or comes after a statement of
another kind that reads it (a scenario's `expect context.KEY`). Both are found by one
function (``declarations.placed_on``); these tests keep them from drifting apart."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from flowc.cli import main

HEAD = """\
speaker user: human
speaker bot {
  tool t sets done = false
}
start user
max_turns 4
scenario "reads gone" {
  user: "hi"
  expect context.gone == 3
}
"""
CAUSED = "make a terminate condition hold on some turn: {} says why this one never does"


def check(text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    path = tmp_path / "f.flow"
    path.write_text(text, encoding="utf-8")
    main(["check", "--format", "json", str(path)])
    found: list[dict[str, Any]] = json.loads(capsys.readouterr().out)
    return found


def rows(found: list[dict[str, Any]], code: str, start: str) -> list[int]:
    return [
        f["location"]["row"] for f in found if f["code"] == code and f["message"].startswith(start)
    ]


@pytest.mark.parametrize(
    ("rules", "keys", "line"),
    [
        (  # `gone` is read first inside another rule's `not (... and ...)`, line 12
            "when from user then bot\n"
            "when from bot and not (context.done == true and context.gone == 1) then user\n"
            'when context.other == 1 and context.gone == 1 then terminate "x"\n'
            "when from bot then user\n",
            ("other", "gone"),
            13,
        ),
        (  # the terminate rule reads `gone` before any other rule does
            'when context.gone == 1 then terminate "x"\n'
            "when from user then bot\n"
            "when from bot and context.gone == 2 then bot\n"
            "when from bot then user\n",
            ("gone",),
            11,
        ),
    ],
    ids=["first read elsewhere, nested", "first read in the terminate rule"],
)
def test_w209_named_where_reported(
    rules: str,
    keys: tuple[str, ...],
    line: int,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    text = HEAD + rules
    found = check(text, tmp_path, capsys)
    (w210,) = [f for f in found if f["code"] == "W210"]
    assert w210["location"]["row"] == line, text  # the terminate rule
    # W209 is reported once per key: the help names the first of those the rule reads
    reported = [r for key in keys for r in rows(found, "W209", f"`context.{key}`")]
    assert len(reported) == len(keys), text
    assert w210["fix"] == CAUSED.format(f"W209 on line {min(reported)}"), text


def test_w208_named_where_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # `nope` is routed on twice: W208 is on each, the help names the terminate rule's own
    text = HEAD + (
        "when from user then bot\n"
        "when from bot and tool nope then user\n"
        'when tool nope then terminate "x"\n'
        "when from bot then user\n"
    )
    found = check(text, tmp_path, capsys)
    (w210,) = [f for f in found if f["code"] == "W210"]
    line = w210["location"]["row"]
    assert line == 13, text
    assert line in rows(found, "W208", "`when tool nope`"), text
    assert w210["fix"] == CAUSED.format(f"W208 on line {line}"), text


@pytest.mark.parametrize(
    ("comment", "options", "why"),
    [
        ("  # flowc: ignore[W209]", [], " (silenced there by an ignore comment)"),
        ("", ["--ignore", "W209"], " (not reported: the codes selected leave it out)"),
        ("", ["--select", "W210"], " (not reported: the codes selected leave it out)"),
        ("", [], ""),
    ],
)
def test_a_cause_the_reader_does_not_see_is_said_to_be_hidden(
    comment: str,
    options: list[str],
    why: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # (W210's help sends the reader to a finding they do not see when an ignore comment
    # silenced it or the codes selected leave it out: it says so)
    path = tmp_path / "f.flow"
    path.write_text(
        "speaker user: human\nspeaker bot {\n  tool t sets done = false\n}\nstart user\n"
        f'max_turns 4\nwhen context.gone == 1 then terminate "x"{comment}\n'
        "when from user then bot\nwhen from bot then user\n",
        encoding="utf-8",
    )
    main(["check", "--format", "json", *options, str(path)])
    found: list[dict[str, Any]] = json.loads(capsys.readouterr().out)
    (w210,) = [f for f in found if f["code"] == "W210"]
    assert w210["fix"] == CAUSED.format(f"W209 on line 7{why}")
    assert rows(found, "W209", "`context.gone`") == ([] if why else [7])
