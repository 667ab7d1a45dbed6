"""``docs/properties.md`` shows what ``flowc check`` says: each ```flow block followed by a
```text block that starts ``$ flowc check NAME.flow`` is checked as NAME.flow, and every line
of the text block (but the command) is a line of the output, in order."""

from __future__ import annotations

import contextlib
import io
import itertools
import re
from pathlib import Path

import pytest

from flowc.cli import main

ROOT = Path(__file__).resolve().parent.parent.parent
PAGE = ROOT / "docs" / "properties.md"
BLOCK = re.compile(r"```(?P<info>[^\n]*)\n(?P<body>.*?)\n```", re.S)


def shown() -> list[tuple[str, str, list[str]]]:
    """(file name, flow text, the output lines shown) of every command on the page."""
    blocks = [(m.group("info").strip(), m.group("body")) for m in BLOCK.finditer(PAGE.read_text())]
    out = []
    for (info, body), (next_info, next_body) in itertools.pairwise(blocks):
        if info != "flow" or next_info != "text" or not next_body.startswith("$ flowc check "):
            continue
        command, *lines = next_body.splitlines()
        out.append((command.split()[-1], body + "\n", lines))
    return out


def test_the_page_shows_commands() -> None:
    assert len(shown()) >= 7


@pytest.mark.parametrize(("name", "text", "lines"), shown(), ids=lambda x: str(x)[:20])
def test_the_output_is_what_check_prints(
    name: str, text: str, lines: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / name).write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    with contextlib.redirect_stdout(io.StringIO()) as out:
        main(["check", name])
    printed = out.getvalue().splitlines()
    at = 0
    for line in lines:
        assert line in printed[at:], f"{line!r} not in the output:\n{out.getvalue()}"
        at = printed.index(line, at) + 1
