"""Child process for the SIGKILL test: runs (or, after a crash, hydrates and continues)
one long workflow run on a SQLite WAL, printing each envelope id once it is accepted."""

from __future__ import annotations

import asyncio
import sys

from flowc.runtime import EV_CONTEXT_SET, Hub, SqliteStore

GRAPH = {
    "initial_speaker": "a",
    "max_turns": 1_000_000,
    "transitions": [
        {
            "when": {"name": "always", "args": {}},
            "then": {"name": "round_robin", "args": {}},
            "priority": 0,
        }
    ],
    "default_target": {"name": "terminate", "args": {"reason": "after_work"}},
}


async def main(db: str) -> None:
    hub = await Hub.open(SqliteStore(db))
    open_ids = await hub.hydrate()
    users = {n: hub.register_human(n, buffer=False) for n in ("a", "b", "c")}
    if open_ids:
        cid = open_ids[0]
    else:
        ch = await users["a"].open(
            "workflow", target=["b", "c"], knobs={"graph": GRAPH}, expectations=()
        )
        cid = ch.channel_id
    out = sys.stdout
    channel = hub.channel(cid)
    while True:
        who = channel.expected_next()
        assert who is not None
        n = channel.state.turn_count
        env = users[who].send_nowait(
            cid, event_type=EV_CONTEXT_SET, event_data={"set": {"n": n, who: n}, "delete": []}
        )
        out.write(env.envelope_id + "\n")
        env = users[who].send_nowait(cid, f"turn {n}")
        out.write(env.envelope_id + "\n")
        out.flush()
        if n % 50 == 0:
            await asyncio.sleep(0)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
