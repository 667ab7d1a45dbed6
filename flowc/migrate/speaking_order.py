"""Who speaks after whom, and the scenarios that encode a source's speaking order.

A reader that knows the source's order statically (classic ``round_robin``, a transitions
graph with one successor each, a lowered selection function, an AgentChat
``selector_func``) states it as :class:`Next` per previous speaker. From that,
:func:`order_scenarios` writes the run to its end (and one where the termination text
ends it) and :func:`guard_scenarios` one run per message test of a selection function.
Each scenario's turns say neutral texts (:func:`turn_text`) that no termination or guard
condition matches, so the scenario exercises exactly the order.

>>> nexts = {"user": Next("agent", "a"), "a": Next("agent", "b"), "b": Next("end")}
>>> [(title, seq) for title, seq, _ in order_scenarios("user", nexts, 10, None, None, "Go.")]
[('classic speaking order', ('user', 'a', 'b'))]
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import attrs

import flowc.migrate.model as mm
from flowc.dsl import nodes as n
from flowc.migrate.textpred import TextPredicate, evaluate

END_REASON = "no_next_speaker"
TERM_REASON = "is_termination_msg"


@attrs.frozen
class Next:
    """Who speaks after a source: ``kind`` agent / end / select / random."""

    kind: str
    agent: str | None = None
    candidates: tuple[str, ...] = ()
    allow_repeat: bool = True


def turn_text(speaker: str, index: int, avoid: Sequence[n.Cond]) -> str:
    """A message text that none of the ``avoid`` text conditions matches."""
    for text in (
        f"{speaker}, turn {index}",
        f"reply {index}",
        f"message number {index}",
        f"({index})",
    ):
        if all(evaluate(c, text) is False for c in avoid):
            return text
    raise NoText()


def guard_scenarios(
    start: str,
    defaults: dict[str, Next],
    lowered: list[tuple[str, tuple[n.Cond, ...], Next, str | None]],
    max_round: int,
    avoid: Sequence[n.Cond],
    kickoff: str | None,
) -> list[tuple[str, tuple[str, ...], list[n.ScenarioItem]]]:
    """One scenario per message test of a lowered selection function: the default path up
    to the tested speaker, who then says a text that passes the test (none for a test
    whose path has no turn text that passes no test: :class:`NoText`)."""
    out: list[tuple[str, tuple[str, ...], list[n.ScenarioItem]]] = []
    for src, guards, nx, witness in lowered:
        if not guards or witness is None or nx.kind not in ("agent", "end"):
            continue
        if any(evaluate(c, witness) is not False for c in avoid if c not in guards):
            continue  # the witness would also end the chat or pass another test
        seq = [start]
        while seq[-1] != src and len(seq) < min(max_round, 24):
            d = defaults.get(seq[-1])
            if d is None or d.kind != "agent" or d.agent is None:
                break
            seq.append(d.agent)
        if seq[-1] != src or len(seq) >= max_round:
            continue
        items: list[n.ScenarioItem] = []
        try:
            for i, sp in enumerate(seq[:-1]):
                text = (
                    kickoff
                    if i == 0 and kickoff and all(evaluate(c, kickoff) is False for c in avoid)
                    else turn_text(sp, i + 1, avoid)
                )
                items.append(mm.say(sp, text))
        except NoText:  # a test every text passes (`"" in content`): no turn avoids it
            continue
        items.append(mm.say(src, witness))
        if nx.kind == "agent" and nx.agent is not None:
            items.append(mm.expect_next(nx.agent))
            out.append((f"after `{src}` says {json.dumps(witness)}", (*seq, nx.agent), items))
        else:
            items.append(mm.expect_terminate(END_REASON))
            out.append((f"after `{src}` says {json.dumps(witness)}", tuple(seq), items))
    return out


class NoText(Exception):
    """No neutral message text: the scenario is not generated."""


def order_scenarios(
    start: str,
    nexts: dict[str, Next],
    max_round: int,
    predicate: TextPredicate | None,
    witness: str | None,
    kickoff: str | None,
    avoid: Sequence[n.Cond] = (),
) -> list[tuple[str, tuple[str, ...], list[n.ScenarioItem]]]:
    """Scenarios that encode classic's order: the run to its end, and a termination.

    ``avoid`` are the text conditions (termination rules, message guards) that the
    neutral turns must not match; none when a condition is not about text.
    """
    if any(evaluate(c, "") is None for c in avoid):
        return []
    try:
        seq = [start]
        ended = False
        limit = min(max_round, 24)
        while len(seq) < limit:
            nxt = nexts[seq[-1]]
            if nxt.kind == "end":
                ended = True
                break
            assert nxt.agent is not None
            seq.append(nxt.agent)
        first = kickoff if kickoff and all(evaluate(c, kickoff) is False for c in avoid) else None
        items: list[n.ScenarioItem] = []
        for i, sp in enumerate(seq):
            text = first if i == 0 and first is not None else turn_text(sp, i + 1, avoid)
            items.append(mm.say(sp, text))
        if ended:
            items.append(mm.expect_terminate(END_REASON))
        elif len(seq) == max_round:
            items.append(mm.expect_terminate("max_turns"))
        else:
            nxt = nexts[seq[-1]]
            items.append(mm.expect_next(nxt.agent or ""))
        items.append(mm.expect_turns(len(seq)))
        out = [("classic speaking order", tuple(seq), items)]
        if (
            witness is not None
            and predicate is not None
            and max_round >= 2
            and nexts[start].kind == "agent"
        ):
            second = nexts[start].agent
            assert second is not None
            if evaluate(predicate.cond, witness):
                t_items: list[n.ScenarioItem] = [
                    mm.say(start, first if first is not None else turn_text(start, 1, avoid)),
                    mm.say(second, witness),
                    mm.expect_terminate(TERM_REASON),
                ]
                out.append(("the termination message ends the chat", (start, second), t_items))
        return out
    except NoText:
        return []


__all__ = [
    "END_REASON",
    "TERM_REASON",
    "Next",
    "NoText",
    "guard_scenarios",
    "order_scenarios",
    "turn_text",
]
