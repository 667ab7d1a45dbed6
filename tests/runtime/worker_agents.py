"""Agents for the worker tests: each turn answers ``t<N+1>`` to ``t<N>`` (a lost or
repeated turn shows in the WAL) after 10 ms, so a run lasts long enough to be paused,
stopped or killed inside.

A worker started with ``FLOWC_TEST_HOLD_AT=N`` holds its run at turn N: the agent whose
answer would be ``t<N>`` waits, without answering, until the file named by
``FLOWC_TEST_GATE`` exists (never, when that is not set). Such a run cannot finish by
itself, so a test can stop, pause or kill its worker inside it at a known turn instead of
racing the run to its end. With ``FLOWC_TEST_FAIL_AT=N`` the agent whose answer would be
``t<N>`` raises instead (once the gate is open, when it holds there too): a turn that
fails, every time it is tried."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from flowc.runtime import Turn

HOLD_AT = os.environ.get("FLOWC_TEST_HOLD_AT")
GATE = os.environ.get("FLOWC_TEST_GATE")
FAIL_AT = os.environ.get("FLOWC_TEST_FAIL_AT")


async def count(turn: Turn) -> str:
    await asyncio.sleep(0.01)
    text = turn.text
    answer = f"t{int(text[1:]) + 1}" if text.startswith("t") else "t0"
    if HOLD_AT is not None and answer == f"t{HOLD_AT}":
        while GATE is None or not Path(GATE).exists():
            await asyncio.sleep(0.01)
    if FAIL_AT is not None and answer == f"t{FAIL_AT}":
        raise RuntimeError(f"the agent fails instead of answering {answer}")
    return answer


AGENTS = {"a": count, "b": count, "c": count}
