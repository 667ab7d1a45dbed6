"""A loop the cap alone makes come or go is a change of the cap, not a loop removed.

Lowering ``max_turns`` so far that every run closes before a sticky loop's rule routes a
turn in it makes W205 go from ``flowc check``; the loop's rules are the same, and the runs
still enter it: ``flowc diff`` says the cap cuts the loop's turns off (with the run where
OLD goes on into the loop and NEW stops at the cap), not that the loop is gone. So too
for a loop with no exit (W206) that an added ``max_turns`` now closes, and the other way
round.
"""

from __future__ import annotations

from flowc import compile_flow
from flowc.compiler.analysis.changes import Change, FlowDiff, Version, diff_versions
from flowc.compiler.analysis.run_phrases import render_run

STICKY = """\
speaker user: human
speaker triage {
  tool route_security sets route = "security"
}
speaker security
speaker general
start user
max_turns CAP
when context.route == "security" then security
when from user     then triage
when from triage   then general
when from security then terminate "handled"
when from general  then terminate "answered"
"""

LOOP = "speakers a, b\nCAPwhen from a then b\nwhen from b then a\n"


def diff(old: str, new: str) -> FlowDiff:
    return diff_versions(
        Version("old.flow", compile_flow(old)), Version("new.flow", compile_flow(new))
    )


def loop_change(d: FlowDiff, code: str) -> Change:
    (change,) = [c for c in d.behavioural if c.subject == code]
    return change


def test_a_lower_cap_cuts_a_sticky_loop_off() -> None:
    for cap in ("2", "3"):  # security speaks on turn 3: the cap's last turn, or past it
        d = diff(STICKY.replace("CAP", "20"), STICKY.replace("CAP", cap))
        change = loop_change(d, "W205")
        assert change.kind == "loop-removed"
        assert "is gone" not in change.text, change.text
        assert f"with max_turns 20 → {cap}" in change.text
        assert "the cap closes every run" in change.text
        # the run where OLD goes on into the loop and NEW stops at the cap
        assert change.run is not None and change.new is not None and change.old is not None
        assert change.new.next is None and change.old.next == "security"
        assert len(change.run) <= int(cap)
    # raised again: the loop's turns come back, said so
    d = diff(STICKY.replace("CAP", "3"), STICKY.replace("CAP", "20"))
    change = loop_change(d, "W205")
    assert change.kind == "loop-added" and "with max_turns 3 → 20" in change.text
    assert "runs now go round a sticky context loop" in change.text


def test_a_cap_high_enough_for_the_loop_changes_no_loop() -> None:
    d = diff(STICKY.replace("CAP", "20"), STICKY.replace("CAP", "4"))
    assert not [c for c in d.behavioural if c.subject == "W205"], [c.text for c in d.behavioural]


def test_a_loop_that_is_really_gone_is_gone() -> None:
    new = STICKY.replace("CAP", "20").replace(
        'when context.route == "security" then security\n', ""
    )
    change = loop_change(diff(STICKY.replace("CAP", "20"), new), "W205")
    assert change.text == "a sticky context loop is gone (W205)"


def test_an_added_cap_closes_a_loop_with_no_exit() -> None:
    d = diff(LOOP.replace("CAP", ""), LOOP.replace("CAP", "max_turns 5\n"))
    change = loop_change(d, "W206")
    assert "is gone" not in change.text and "with max_turns none → 5" in change.text
    assert change.run is not None and render_run(change.run) == "a → b → a → b → a"
    d = diff(LOOP.replace("CAP", "max_turns 5\n"), LOOP.replace("CAP", ""))
    change = loop_change(d, "W206")
    assert "with max_turns 5 → none" in change.text and "never end" in change.text


def test_an_ending_past_the_cap_is_shown_on_the_side_that_reaches_it() -> None:
    """W212 (the shortest ending is beyond `max_turns`) coming or going: the run goes on,
    past the distinguishing turn, in the version whose cap lets it reach the ending (the
    other stops at its cap), never in the capped one."""
    low, high = STICKY.replace("CAP", "2"), STICKY.replace("CAP", "20")
    for old, new, kind, side in (
        (high, low, "cap-too-small", "old"),
        (low, high, "cap-fits", "new"),
    ):
        change = loop_change(diff(old, new), "W212")
        assert change.kind == kind and change.then_side == side
        assert change.then and str(change.then[-1]).startswith("terminate ")


def test_a_loop_of_another_rule_is_no_change_of_the_cap() -> None:
    """The cap and a rule changed together: the loop NEW has (on another rule) is not the
    one OLD's cap cut off, so neither direction puts the change on the cap."""
    old = STICKY.replace("CAP", "3")
    new = STICKY.replace("CAP", "6").replace(
        'when context.route == "security" then security',
        'when context.route == "security" then general',
    )
    came = loop_change(diff(old, new), "W205")
    assert came.kind == "loop-added" and "with max_turns" not in came.text, came.text
    assert came.text.startswith("a sticky context loop appears (W205)")
    gone = loop_change(diff(new, old), "W205")
    assert gone.kind == "loop-removed" and gone.text == "a sticky context loop is gone (W205)"


def test_a_cap_change_is_the_cap_when_a_comment_moved_the_loop_down() -> None:
    """Only the cap changed the loop's runs, and a comment added above moved its lines: the
    same loop (its rule, key and values), so the change is still put on the cap."""
    new = "# a note\n" + STICKY.replace("CAP", "20")
    change = loop_change(diff(STICKY.replace("CAP", "3"), new), "W205")
    assert "with max_turns 3 → 20" in change.text, change.text
    change = loop_change(diff(new, STICKY.replace("CAP", "3")), "W205")
    assert "with max_turns 20 → 3" in change.text, change.text
