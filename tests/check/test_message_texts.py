"""Findings say what is true of the flow: a count of one in the singular (I301), a key
that a tool only clears is not one that no tool writes (W209), and the ignore comment the
I307 page proposes is no X001 in a check that does not select I307."""

from __future__ import annotations

import re
from pathlib import Path

from flowc.compiler.analysis import CheckOptions, check_source
from flowc.diagnostics import Diagnostic
from flowc.source import SourceFile

ROOT = Path(__file__).resolve().parents[2]

LOOP = """\
speaker user: human
speaker a
speaker b
start user
when from user then a
when from a then b
when from b then a
"""


def _check(text: str, **options: object) -> tuple[Diagnostic, ...]:
    return check_source(SourceFile("f.flow", text), CheckOptions(**options))  # type: ignore[arg-type]


def _one(found: tuple[Diagnostic, ...], code: str) -> str:
    [message] = [d.message for d in found if d.code.id == code]
    return message


def test_a_bound_of_one_state_is_said_in_the_singular() -> None:
    message = _one(_check(LOOP, max_states=1), "I301")
    assert "(1 abstract state, 20 explored turns)" in message, message
    message = _one(_check(LOOP, max_states=2), "I301")
    assert "(2 abstract states, 40 explored turns)" in message, message


def _reads_k(tools: str) -> str:
    return (
        "speaker user: human\n"
        f"speaker a {{\n{tools}}}\n"
        "start user\n"
        "max_turns 6\n"
        "when from user then a\n"
        "when context.k == 1 then user\n"
        "when from a then user\n"
    )


def test_w209_names_the_tools_that_only_clear_the_key() -> None:
    said = _one(_check(_reads_k("  tool t clears k\n")), "W209")
    assert said == (
        "`context.k` is read here but nothing sets it: no initial value, and tool `t` only "
        "clears it"
    )
    said = _one(_check(_reads_k("  tool t clears k | sets j = 1\n  tool v clears k\n")), "W209")
    assert said.endswith("no initial value, and tools `t`, `v` only clear it"), said
    said = _one(_check(_reads_k("  tool t sets j = 1\n")), "W209")
    assert said.endswith("nothing sets it: no initial value, no tool writes it"), said


def _use_instead(code: str) -> str:
    page = (ROOT / "flowc" / "docs" / f"{code}.md").read_text()
    found = re.search(r"## Use instead\n\n```flow[^\n]*\n(.*?)```", page, re.S)
    assert found is not None
    return found.group(1)


def test_the_i307_pages_ignore_comment_passes_check_with_and_without_i307() -> None:
    text = _use_instead("I307")
    assert "# flowc: ignore[I307]" in text
    assert _check(text) == ()
    assert _check(text, select=("E", "W", "I", "X", "I307")) == ()
    # selected, a comment where no I307 is is still one that silences nothing
    moved = text.replace("  # flowc: ignore[I307]", "").replace(
        "start user", "start user  # flowc: ignore[I307]"
    )
    found = _check(moved, select=("E", "W", "I", "X", "I307"))
    assert sorted(d.code.id for d in found) == ["I307", "X001"], found


CAPPED = """\
speaker a: human
speakers b, c, d
max_turns 2
when from a then b
when from b then c
when from c then a
when from d then a
"""


def test_a_sample_run_the_cap_stops_says_so() -> None:
    """A finding's sample run of exactly `max_turns` turns ends on the speaker scheduled
    next, who never speaks: the note says that the cap closes the run before it (as
    W210's run does), and says nothing of the kind of a run the cap does not stop."""
    [w201] = [d for d in _check(CAPPED) if d.code.id == "W201"]
    assert w201.notes[0] == (
        "explored 4 states; a shortest run: a → b → c (`max_turns 2` closes it before `c` speaks)"
    )
    roomy = CAPPED.replace("max_turns 2", "max_turns 9")
    [w201] = [d for d in _check(roomy) if d.code.id == "W201"]
    assert w201.notes[0].startswith("explored 4 states; a shortest run: a → b → c → a"), w201
    assert not any("closes it before" in n for n in w201.notes), w201.notes
