"""W210's help fits the rule it sits on: when that terminate rule's condition never holds
because of another finding (senders no run reaches, W201; a tool no speaker declares,
W208; a context key nothing sets, W209), it points at that finding and its line, not at
declaring a tool or routing on one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flowc.cli import main

HEAD = """\
speaker user: human
speaker bot {
  tool t sets done = false
}
speaker c
start user
max_turns 4
"""
LOOP = "when from user then bot\nwhen from bot then user\n"
CAUSED = "make a terminate condition hold on some turn: {} says why this one never does"


@pytest.mark.parametrize(
    ("rules", "help"),
    [
        (  # no other finding: the help as before
            'when context.done == true then terminate "done"\n' + LOOP,
            "make the terminate condition reachable: declare the tool that sets its "
            "context key, or route on a tool",
        ),
        (  # `c` is never scheduled: W201 on its declaration (line 5)
            LOOP + 'when from c then terminate "nope"\n',
            CAUSED.format("W201 on line 5"),
        ),
        (  # ... and when a rule that would route to it never fires, that W203 says why
            LOOP + 'when from bot then c\nwhen from c then terminate "nope"\n',
            CAUSED.format("W203 on line 10"),
        ),
        (  # no speaker declares `nope`: W208 on its condition
            LOOP + 'when tool nope then terminate "nope"\n',
            CAUSED.format("W208 on line 10"),
        ),
        (  # nothing sets `gone`: W209 on the first condition that reads it
            'when context.gone == true then bot\nwhen context.gone == 1 then terminate "x"\n'
            + LOOP,
            CAUSED.format("W209 on line 8"),
        ),
    ],
    ids=["no cause", "W201", "W201 by W203", "W208", "W209"],
)
def test_w210_help(
    rules: str, help: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = HEAD + rules
    path = tmp_path / "f.flow"
    path.write_text(text, encoding="utf-8")
    main(["check", "--format", "json", str(path)])
    found = json.loads(capsys.readouterr().out)
    (w210,) = [f for f in found if f["code"] == "W210"]
    assert w210["fix"] == help, text
    if help.startswith("make a terminate condition hold"):
        # the finding it names is there, on that line
        code, _, _, line = help.split(": ")[1].split(" says")[0].split(" ")
        assert (code, int(line)) in {(f["code"], f["location"]["row"]) for f in found}, text
