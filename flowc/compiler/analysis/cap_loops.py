"""`flowc diff`'s words for a loop finding (W205, W206) that only the cap makes come or go.

A lower ``max_turns`` can close every run before a sticky loop's rule routes a turn in it
(W205 is not reported then), and a ``max_turns`` added to a flow with a loop that has no
exit ends its runs there (no W206): the loop is still in the flow, what changed is where
the cap closes the runs. Whether that is so is decided by checking the version without
the finding under the other version's cap: its state space is the same (``max_turns`` is
not part of a state), only the findings read the cap.
"""

from __future__ import annotations

import re

import attrs

from flowc.compiler.analysis.facts import Facts
from flowc.compiler.analysis.loops import check_non_termination, check_sticky_loops
from flowc.escaping import Phrase, Quoted, phrase


def _has_under(facts: Facts, cap: int | None, code: str, message: str) -> bool:
    """Whether ``facts``' flow, with ``max_turns cap`` instead of its own, has the very
    loop finding ``code`` the other version has (``message``, word for word but for its
    line numbers: the same rule, key and values; some other loop of the same code is a
    change of the rules)."""
    if facts.space.truncated or facts.system.json_mode or facts.system.max_turns == cap:
        return False
    other = Facts(attrs.evolve(facts.system, max_turns=cap), facts.space, facts.filename)
    found = check_sticky_loops(other) if code == "W205" else check_non_termination(other)
    return any(
        f.diagnostic.code.id == code and _unplaced(f.diagnostic.message) == _unplaced(message)
        for f in found
    )


def _unplaced(message: str) -> str:
    """``message`` without the lines it names (a comment added above the loop moves them).

    >>> _unplaced("rule 2, line 12 (`when from a then b`)")
    'rule 2, line (`when from a then b`)'
    """
    return re.sub(r"\bline \d+", "line", message)


def _cap(cap: int | None) -> str:
    return "none" if cap is None else str(cap)


def loop_came(old: Facts, new: Facts, code: str, what: str, message: str) -> Phrase:
    """Words for a loop finding ``code`` (``message``) that NEW has and OLD has not: it
    appears, or, when OLD's flow under NEW's cap has it too, the caps let runs go round
    it now."""
    if code not in ("W205", "W206") or not _has_under(old, new.system.max_turns, code, message):
        # the checker's message quotes names of the flow: a piece of it, as a whole
        return phrase(f"{what} appears ({code}): ", Quoted(message))
    caps = f"with max_turns {_cap(old.system.max_turns)} → {_cap(new.system.max_turns)}"
    if code == "W206":
        return phrase(
            f"{caps}, runs that enter a loop with no exit now never end ({code}): the loop"
            " was there, the cap closed its runs"
        )
    return phrase(
        f"{caps}, runs now go round a sticky context loop that the cap closed before ({code}): ",
        Quoted(message),
    )


def loop_gone_by_cap(old: Facts, new: Facts, code: str, message: str) -> Phrase | None:
    """Words for a loop finding OLD has (``message``) and NEW has not only because of
    their caps (NEW's flow under OLD's cap has it too), else None."""
    if code not in ("W205", "W206") or not _has_under(new, old.system.max_turns, code, message):
        return None
    caps = f"with max_turns {_cap(old.system.max_turns)} → {_cap(new.system.max_turns)}"
    if code == "W206":
        return phrase(
            f"{caps}, runs that enter the loop with no exit now end at the cap ({code}): the"
            " loop is still there"
        )
    return phrase(
        f"{caps}, no run goes round the sticky context loop any more ({code}): the cap closes"
        " every run before the loop's rule routes a turn in it (the loop is still there)"
    )
