"""Small builders for AG2 graph dicts used across the runtime tests."""

from __future__ import annotations

import itertools
from typing import Any


def cond(name: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args}


def frm(agent: str) -> dict[str, Any]:
    return cond("from_speaker", agent_id=agent)


def tool(name: str) -> dict[str, Any]:
    return cond("tool_called", tool_name=name)


def ctx(key: str, value: Any) -> dict[str, Any]:
    return cond("context_equals", key=key, value=value)


def always() -> dict[str, Any]:
    return cond("always")


def to(agent: str) -> dict[str, Any]:
    return cond("agent", agent_id=agent)


def term(reason: str = "after_work") -> dict[str, Any]:
    return cond("terminate", reason=reason)


def rule(when: dict[str, Any], then: dict[str, Any], priority: int = 0) -> dict[str, Any]:
    return {"when": when, "then": then, "priority": priority}


def graph(
    start: str,
    *rules: dict[str, Any],
    default: dict[str, Any] | None = None,
    max_turns: int | None = None,
) -> dict[str, Any]:
    return {
        "initial_speaker": start,
        "transitions": list(rules),
        "default_target": default or term(),
        "max_turns": max_turns,
    }


def chain(n: int) -> dict[str, Any]:
    """A pipeline of ``n`` speakers s0 -> s1 -> ... (a sequence graph)."""
    names = [f"s{i}" for i in range(n)]
    return graph(
        names[0],
        *(rule(frm(a), to(b)) for a, b in itertools.pairwise(names)),
        default=term("sequence_complete"),
        max_turns=None,
    )
