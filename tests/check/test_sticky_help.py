"""W205 (sticky context loop) on a key that changes only as its rule cannot see (unset
and `null`, which an unset key reads as), and the writes the fixes of W205 and W209
propose: each one must make the rule (or the comparison) stop matching, checked against
its condition, never the write the speaker already has."""

from __future__ import annotations

import re

import pytest

import flowc

HEAD = "speaker user: human\nspeaker a\n"
RULES = (
    "start user\nmax_turns 6\n"
    "when from user then a\nwhen context.k == null then b\nwhen from b then user\n"
)

#: b may unset `k` or set it to null: both keep `context.k == null` true
TOGGLE = HEAD + "speaker b {\n  tool done clears k\n  tool w sets k = null\n}\n" + RULES
CLEARS = HEAD + "speaker b {\n  tool done clears k\n}\n" + RULES
NULL_ONLY = HEAD + "speaker b {\n  tool w sets k = null\n}\n" + RULES

NOT_ONE = """\
speaker user: human
speaker bot {
  tool done clears x
}
start user
max_turns 6
when from user then bot
when context.x != 1 then user
"""

ROUTE = (
    'speaker user: human\nspeaker triage {\n  tool route_security sets route = "security"\n}\n'
    "speaker security\nspeaker general\nstart user\nmax_turns 20\n"
    'when context.route == "security" then security\nwhen from user then triage\n'
    "when from triage then general\n"
    'when from security then terminate "handled"\nwhen from general then terminate "answered"\n'
)

_TOOL = re.compile(r"`(tool \S+ (?:clears [^`\s]+|sets \S+ = [^`]+))`\) on (\S+)")


def found(src: str, code: str) -> list[flowc.Diagnostic]:
    return [d for d in flowc.check(src) if d.code.id == code]


def with_tool(src: str, speaker: str, tool: str) -> str:
    """``src`` with ``tool`` declared on ``speaker`` (a block of its own or its own block)."""
    block = f"speaker {speaker} {{\n"
    if block in src:
        return src.replace(block, f"{block}  {tool}\n")
    return re.sub(rf"^speaker {speaker}$", f"speaker {speaker} {{\n  {tool}\n}}", src, flags=re.M)


@pytest.mark.parametrize("src", [TOGGLE, CLEARS, NULL_ONLY], ids=["toggle", "clears", "null"])
def test_a_key_that_is_unset_or_null_is_one_value_to_the_rule(src: str) -> None:
    """Unset or null, `context.k == null` holds: b is stuck whichever of its tools it
    calls, and W205 says so (rule 3 never fires because of it, not as a W203 of its own)."""
    (sticky,) = found(src, "W205")
    assert (
        sticky.span is not None
        and sticky.span.line == src.splitlines().index("when context.k == null then b") + 1
    )
    assert "rule 2" in sticky.message and "the run ends only at `max_turns 6`" in sticky.message
    assert "so rule 3, line" in " ".join(sticky.notes)
    assert found(src, "W203") == []


def test_the_message_names_every_value_the_key_takes_on_the_loop() -> None:
    (sticky,) = found(TOGGLE, "W205")
    assert "keeps routing while `k` stays unset or null, and nothing anyone on the loop (b) " in (
        sticky.message
    )
    assert "writes to it stops the rule matching" in sticky.message


@pytest.mark.parametrize(
    ("src", "proposed"),
    [
        (TOGGLE, 'tool done_2 sets k = "done"'),  # `done` is b's own (it clears k)
        (CLEARS, 'tool done_2 sets k = "done"'),
        (NULL_ONLY, 'tool done sets k = "done"'),
        (NOT_ONE, "tool done_2 sets x = 1"),  # clearing keeps `x != 1` true
        (ROUTE, "tool done clears route"),  # clearing stops `route == "security"`
    ],
    ids=["toggle", "clears", "null", "not-equal", "equal"],
)
def test_the_sticky_fix_proposes_a_write_that_stops_the_rule(src: str, proposed: str) -> None:
    (sticky,) = found(src, "W205")
    assert sticky.help is not None
    match = _TOOL.search(sticky.help)
    assert match is not None, sticky.help
    assert match.group(1) == proposed, sticky.help
    # declared as proposed, the tool lets the run out of the loop: no W205 is left
    assert found(with_tool(src, match.group(2), match.group(1)), "W205") == []


def test_the_sticky_fix_says_when_no_write_stops_the_rule() -> None:
    src = CLEARS.replace(
        "when context.k == null then b",
        "when from a then b\nwhen from b and (context.k == null or context.k != null) then b",
    )
    (sticky,) = found(src, "W205")
    assert sticky.help == (
        "put a `from` rule for the loop's speaker before this rule (no write to `k` stops "
        "the rule matching)"
    )


@pytest.mark.parametrize(
    ("cond", "proposed"),
    [
        ("context.k == null", 'sets k = "done"'),  # null keeps it true: any other value
        ("context.k != null", 'sets k = "done"'),
        ("context.k == 1", "sets k = 1"),
        ("context.k != 1", "sets k = 1"),
        ('context.k == null or context.k == "x"', 'sets k = "x"'),  # a value the flow names
    ],
)
def test_the_unset_key_fix_proposes_a_value_that_turns_the_comparison(
    cond: str, proposed: str
) -> None:
    src = (
        "speaker user: human\nspeaker bot\nstart user\nmax_turns 6\n"
        f'when from user then bot\nwhen {cond} then user\nwhen from bot then terminate "x"\n'
    )
    (unset,) = found(src, "W209")
    assert unset.help is not None and f"e.g. `tool NAME {proposed}`" in unset.help, unset.help
