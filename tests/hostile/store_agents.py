"""Agents for the full-disk test: every turn says 4 KB, so the WAL outgrows a small disk."""

from __future__ import annotations

from flowc.runtime import Turn


async def talk(turn: Turn) -> str:
    return f"{turn.name} " + "x" * 4096


AGENTS = {"a": talk, "b": talk, "c": talk}
