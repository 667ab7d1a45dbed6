"""Agents for the worker tests: each turn answers ``t<N+1>`` to ``t<N>`` (a lost or
repeated turn shows in the WAL) after 10 ms, so a run lasts long enough to be paused,
stopped or killed inside."""

from __future__ import annotations

import asyncio

from flowc.runtime import Turn


async def count(turn: Turn) -> str:
    await asyncio.sleep(0.01)
    text = turn.text
    return f"t{int(text[1:]) + 1}" if text.startswith("t") else "t0"


AGENTS = {"a": count, "b": count, "c": count}
