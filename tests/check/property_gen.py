"""Small random flows and properties (a fixed seed makes the same ones every time), for
the differential test against :mod:`tests.check.property_reference`."""

from __future__ import annotations

import random
from typing import Any

from flowc.compiler import model as m
from flowc.compiler.properties import (
    After,
    AfterUntil,
    Always,
    AtMost,
    Before,
    Between,
    Ends,
    Eventually,
    Globally,
    Never,
    OnlyAfter,
    Previous,
    Property,
    Responds,
    TurnIs,
)

SPEAKERS = ["s0", "s1", "s2", "s3"]
REASONS = ["r1", "r2"]


def flow_text(rnd: random.Random) -> str:
    """A flow of 2-4 speakers, tools that write ``k`` (values the rules compare, others,
    null, in alternatives) or ``j`` (no rule reads it) or finish, ``k`` set at the start
    or not, a few rules (some on a custom condition, some to a custom target),
    ``max_turns`` 2-6."""
    n = rnd.randint(2, 4)
    speakers = SPEAKERS[:n]
    lines = ["condition lucky()", "target pick() -> " + " | ".join(speakers[1:]) + " | terminate"]
    human = rnd.random() < 0.4
    for i, s in enumerate(speakers):
        if i == 0 and human:
            lines.append(f"speaker {s}: human" + (" { sets k }" if rnd.random() < 0.3 else ""))
            continue
        tools = []
        for j in range(rnd.randint(0, 2)):
            effect = rnd.choice(
                [
                    "",
                    " sets k = 1",
                    " sets k = 2",
                    " sets k = 3",
                    " clears k",
                    ' finishes "r2"',
                    # (writes no rule compares: null, alternatives, a key no rule reads)
                    " sets k = null",
                    " sets k = 1 | sets k = 3",
                    " sets k = 2 | clears k",
                    " sets j = 1",
                ]
            )
            tools.append(f"tool t{i}{j}{effect}")
        lines.append(f"speaker {s}" + (" { " + " ".join(tools) + " }" if tools else ""))
    lines.append(f"start {speakers[0]}")
    lines.append(f"max_turns {rnd.randint(2, 6)}")
    if rnd.random() < 0.4:
        lines.append(f"context {{ k = {rnd.choice(['1', '3', 'null'])} }}")
    tools = [f"t{i}{j}" for i in range(n) for j in range(2)]
    for _ in range(rnd.randint(1, 5)):
        cond = rnd.choice(
            [
                f"from {rnd.choice(speakers)}",
                f"tool {rnd.choice(tools)}",
                f"context.k == {rnd.choice(['1', '2'])}",
                "lucky()",
                f"from {rnd.choice(speakers)} and context.k != 1",
            ]
        )
        target = rnd.choice(
            [*speakers, *speakers, 'terminate "r1"', "terminate", "pick()", "next", "stay"]
        )
        lines.append(f"when {cond} then {target}")
    otherwise = rnd.choice([*speakers, 'terminate "r1"'])
    lines.append(f"otherwise {otherwise}")
    return "\n".join(lines) + "\n"


def expr(rnd: random.Random, ids: list[str], depth: int = 0) -> Any:
    kinds = ["from", "tool", "ctx", "ends", "turn"]
    if depth < 2:
        kinds += ["not", "and", "or", "previous"]
    kind = rnd.choice(kinds)
    if kind == "from":
        return m.FromSpeaker(rnd.choice(ids))
    if kind == "tool":
        return m.ToolCalled(f"t{rnd.randint(0, len(ids) - 1)}{rnd.randint(0, 1)}")
    if kind == "ctx":
        cmp = m.ContextEquals(rnd.choice(["k", "k", "j"]), rnd.choice([1, 2, 3, None]))
        return m.Not(cmp) if rnd.random() < 0.3 else cmp
    if kind == "ends":
        return Ends(rnd.choice([None, "r1", "r2", "max_turns", "workflow_terminated"]))
    if kind == "turn":
        return TurnIs(rnd.choice(["==", "!=", "<", "<=", ">", ">="]), rnd.randint(0, 6))
    if kind == "not":
        return m.Not(expr(rnd, ids, depth + 1))
    if kind == "previous":
        return Previous(expr(rnd, ids, depth + 1))
    parts = (expr(rnd, ids, depth + 1), expr(rnd, ids, depth + 1))
    return m.AllOf(parts) if kind == "and" else m.AnyOf(parts)


def prop(rnd: random.Random, ids: list[str], name: str = "p") -> Property:
    p = expr(rnd, ids)
    within = rnd.choice([None, None, 1, 2, 3])
    pattern = rnd.choice(
        [
            Never(p),
            Always(p),
            Eventually(p, within),
            AtMost(p, rnd.randint(0, 2)),
            OnlyAfter(p, expr(rnd, ids)),
            Responds(p, expr(rnd, ids), within),
        ]
    )
    scope = rnd.choice(
        [
            Globally(),
            Globally(),
            Before(expr(rnd, ids)),
            After(expr(rnd, ids)),
            Between(expr(rnd, ids), expr(rnd, ids)),
            AfterUntil(expr(rnd, ids), expr(rnd, ids)),
        ]
    )
    return Property(name, pattern, scope)  # type: ignore[arg-type]
