"""Hand-made flows whose coverage is known, shared by the coverage tests."""

from __future__ import annotations

#: 11 live targets; the one scenario exercises 6 of them (worked out by hand below)
REVIEW = """flow review "a reviewer approves or rejects"
speaker user: human
speaker drafter
speaker reviewer {
  tool approve sets done = true
  tool reject
}
max_turns 6
context done = false
when context.done == true then terminate "approved"
when from user, drafter then reviewer
when from reviewer then drafter
when from drafter then user
otherwise terminate "fallback"

scenario "approve at once" {
  user: "x"
  reviewer calls approve: "ok"
  expect terminate "approved"
}
"""
# live: speakers user, drafter, reviewer; rules 1-4 (`from user, drafter` is rules 2 and 3);
# endings "approved" and max_turns 6; tools approve and reject.
# not coverable: rule 5 (W203, shadowed by rule 3), the default (W202) and "fallback",
# which only the default writes.
# the scenario: user speaks (rule 2), reviewer calls approve (rule 1, "approved").
REVIEW_HIT = {
    "speaker:user",
    "speaker:reviewer",
    "rule:0",
    "rule:1",
    "tool:reviewer:approve:0",
    "end:approved",
}
REVIEW_MISSING = {"speaker:drafter", "rule:2", "rule:3", "end:max_turns", "tool:reviewer:reject:0"}
REVIEW_DEAD = {"rule:4": "W203", "default": "W202", "end:fallback": "W202"}

#: a speaker nothing routes to: it, its tool, the ending only its tool writes and the
#: rule from it are not coverable, with W201
GHOST = """speaker user: human
speaker a { tool done finishes "ok" }
speaker ghost { tool boo finishes "scared" }
when from user then a
when from ghost then a
"""

#: `max_turns 2` closes every run before rule 3 could fire (on turn 3)
CAPPED = """speaker a: human
speaker b
speaker c
max_turns 2
when from a then b
when from b then c
when from c then a
"""

#: a tool with alternatives: each alternative is a target of its own
CHOICE = """speaker user: human
speaker triage {
  tool decide hands off to billing | hands off to tech | finishes "closed"
}
speaker billing
speaker tech
when from user then triage
when from billing, tech then terminate "done"
"""

#: alternatives whose values are equal under Python's `==` (as AG2 compares them) but are
#: not the same JSON value: each is a target of its own, taken by the call that writes it
TYPED = """speaker user: human
speaker bot {
  tool mark sets done = true | sets done = 1 | sets done = 1.0
}
speaker rev
start user
max_turns 8
when context.done == 1 and from bot then terminate "ok"
when from user then bot
when from bot then rev
when from rev then bot
"""
