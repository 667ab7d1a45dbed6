"""Scripted humans' turns run back to back (the relay, up to `_Relay.TURNS` in one loop
callback) against the plain way, one loop round per turn (`TURNS = 1`), on mixed runs:
scripted humans, a scripted model agent and a real agent that awaits, routed by the text
of each turn (`text_matches`), with stretches of human turns longer than the relay's
limit. The WAL holds the same envelopes (types, senders, audience, data, links) in the
same order, the transcript the same turns, and a run cancelled at any turn stops after
that turn either way."""

from __future__ import annotations

import asyncio
import functools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import flowc
from flowc.runtime import MemoryStore
from flowc.runtime.envelope import EV_PACKET, EV_TEXT
from flowc.runtime.script import parse_script
from flowc.runtime.script_run import _Relay, run_script
from flowc.runtime.target import RunTarget

FLOW = """flow mix
speaker h1: human
speaker h2: human
speaker m
speaker r
start h1
max_turns {turns}
condition text_matches(pattern: string)
when from h1 and text_matches(pattern = "^h") then h2
when from h1 and text_matches(pattern = "^m") then m
when from h1 then r
when from h2 and text_matches(pattern = "^h") then h1
when from h2 and text_matches(pattern = "^r") then r
when from h2 then m
when from m then h2
when from r and text_matches(pattern = "^m") then m
when from r then h1
"""

#: a turn's text: its first letter picks who speaks next
says = st.sampled_from(["h", "h", "h", "h", "m", "r", "hx", "m2", "r!"])


def _real(plan: list[tuple[int, str]]) -> Any:
    """An async agent that awaits a few loop rounds (or a timer) before each reply."""
    turns = iter(plan)

    async def agent(turn: Any) -> str:
        waits, text = next(turns, (0, "h"))
        for _ in range(waits):
            await asyncio.sleep(0)
        if waits > 2:
            await asyncio.sleep(0.0005)
        return text

    return agent


def _timeless(value: Any) -> Any:
    """``value`` without the wall-clock times a channel's metadata records."""
    if isinstance(value, dict):
        return {k: _timeless(v) for k, v in value.items() if k != "created_at"}
    if isinstance(value, list):
        return [_timeless(v) for v in value]
    return value


@functools.cache
def _target(turns: int) -> RunTarget:
    return RunTarget.from_compiled(flowc.compile_flow(FLOW.format(turns=turns)))


def _run(
    turns: int,
    script: dict[str, Any],
    plan: list[tuple[int, str]],
    per_callback: int,
    cancel_at: int | None = None,
) -> tuple[list[tuple[Any, ...]], Any]:
    target = _target(turns)
    store = MemoryStore()

    class Watch:
        task: asyncio.Task[Any] | None = None

        def opened(self, run_id: str) -> None:
            self.task = asyncio.current_task()

        def turn(self, record: Any, state: Any) -> None:
            if record.number == cancel_at and self.task is not None:
                self.task.cancel()

    async def go() -> Any:
        return await run_script(
            target,
            parse_script(script),
            store=store,
            agents={"r": _real(plan)},
            watch=Watch(),
            channel_id="wf-x",
        )

    saved = _Relay.TURNS
    _Relay.TURNS = per_callback
    try:
        result: Any = asyncio.run(go())
    except asyncio.CancelledError:
        result = "cancelled"
    finally:
        _Relay.TURNS = saved
    ids: dict[str, str] = {}

    def same_id(eid: str | None) -> str | None:  # ids are random: compare their places
        return None if eid is None else ids.setdefault(eid, f"#{len(ids)}")

    wal = [
        (
            e.event_type,
            e.sender_id,
            e.audience,
            _timeless(e.event_data),
            same_id(e.envelope_id),
            same_id(e.causation_id),
            e.depth,
            e.priority,
        )
        for e in store.read("wf-x")
    ]
    if result != "cancelled":
        result = (
            result.close_reason,
            result.turn_count,
            result.stalled_on,
            result.error,
            result.context_vars,
            [
                (
                    t.number,
                    t.speaker,
                    t.kind,
                    t.text,
                    t.next_speaker,
                    t.decided_by,
                    t.closes,
                    t.routing,
                )
                for t in result.turns
            ],
        )
    return wal, result


scripts = st.fixed_dictionaries(
    {
        "kickoff": says,
        "script": st.fixed_dictionaries(
            {
                "h1": st.lists(says, min_size=30, max_size=90),
                "h2": st.lists(says, min_size=30, max_size=90),
                "m": st.lists(says, min_size=10, max_size=20),
            }
        ),
    }
)
plans = st.lists(st.tuples(st.integers(0, 4), says), max_size=8)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 150), scripts, plans)
def test_the_relay_writes_what_one_turn_per_round_writes(
    turns: int, script: dict[str, Any], plan: list[tuple[int, str]]
) -> None:
    plain = _run(turns, script, plan, per_callback=1)
    assert _run(turns, script, plan, per_callback=_Relay.TURNS) == plain
    assert _run(turns, script, plan, per_callback=3) == plain


def _humans_then(n: int) -> dict[str, Any]:
    """A script whose humans hand each other more turns in a row than the relay takes."""
    return {
        "kickoff": "h",
        "script": {"h1": ["h"] * n, "h2": ["h"] * (n - 1) + ["r"], "m": ["h"] * 4},
    }


def test_a_stretch_longer_than_the_relay_reads_the_same() -> None:
    n = 2 * _Relay.TURNS + 3
    plain = _run(5 * n, _humans_then(n), [(1, "m"), (3, "h")], per_callback=1)
    assert plain[1][1] > 2 * _Relay.TURNS  # the stretch did run past the relay's limit
    assert _run(5 * n, _humans_then(n), [(1, "m"), (3, "h")], per_callback=_Relay.TURNS) == plain


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 40), scripts, plans)
def test_a_cancelled_mixed_run_stops_after_the_turn_in_hand(
    cancel_at: int, script: dict[str, Any], plan: list[tuple[int, str]]
) -> None:
    plain = _run(200, script, plan, per_callback=1, cancel_at=cancel_at)
    relayed = _run(200, script, plan, per_callback=_Relay.TURNS, cancel_at=cancel_at)
    assert relayed == plain
    wal, result = relayed
    if result == "cancelled":  # the run got that far: exactly that many turns were written
        assert len([e for e in wal if e[0] in (EV_TEXT, EV_PACKET)]) == cancel_at
        assert not any(e[0].endswith("closed") for e in wal)


@pytest.mark.parametrize("cancel_at", [1, 2, _Relay.TURNS, _Relay.TURNS + 1])
def test_a_cancel_in_a_long_stretch_stops_after_the_turn_in_hand(cancel_at: int) -> None:
    n = 2 * _Relay.TURNS + 3
    for per_callback in (1, _Relay.TURNS):
        wal, result = _run(5 * n, _humans_then(n), [(1, "m")], per_callback, cancel_at)
        assert result == "cancelled"
        assert len([e for e in wal if e[0] in (EV_TEXT, EV_PACKET)]) == cancel_at, per_callback
