"""Agents for the kill-and-resume test: each turn answers ``t<N+1>`` to ``t<N>``, so the
WAL of a run that lost or repeated a turn shows a gap or a repeat."""

from __future__ import annotations

import asyncio

from flowc.runtime import Turn


async def count(turn: Turn) -> str:
    await asyncio.sleep(0.001)  # a model takes time: kills land inside turns too
    text = turn.text
    return f"t{int(text[1:]) + 1}" if text.startswith("t") else "t0"


AGENTS = {"a": count, "b": count, "c": count}
