"""Run an AgentChat component-JSON corpus file under the REAL autogen-agentchat, offline.

Not part of the test suite; run through ``record_agentchat.py``. Each participant's model
client is a ``ReplayChatCompletionClient`` whose replies are replaced by the scenario's
turns for that participant (a ``calls`` turn becomes a function call), then
``team.run(task=...)`` runs (one agent turn past the script when the
scenario does not end the run) and the message sources and ``stop_reason`` are printed.
"""

from __future__ import annotations

import asyncio
import collections
import copy
import json
import sys
from pathlib import Path
from typing import Any

from autogen_agentchat.base import Team
from autogen_agentchat.messages import BaseChatMessage


def completion(turn: dict[str, Any]) -> Any:
    if turn.get("tool") is None:
        return turn["text"]
    return {
        "finish_reason": "function_calls",
        "content": [{"id": "call-1", "name": turn["tool"], "arguments": "{}"}],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0},
        "cached": False,
    }


async def run_one(
    component: dict[str, Any], turns: list[dict[str, Any]], ends: bool
) -> dict[str, Any]:
    data = copy.deepcopy(component)
    per_agent: dict[str, list[Any]] = collections.defaultdict(list)
    for t in turns[1:]:
        per_agent[t["speaker"]].append(completion(t))
    for p in data["config"]["participants"]:
        name = p["config"]["name"]
        client = p["config"].get("model_client")
        if client is not None:
            client["config"]["chat_completions"] = per_agent[name] + ["(unscripted)"] * 5
    if not ends:
        # the scenario stops at `expect next X`: run one more agent turn to see who X is
        data["config"]["max_turns"] = len(turns)
    team = Team.load_component(data)
    result = await team.run(task=turns[0]["text"])
    sources = [m.source for m in result.messages if isinstance(m, BaseChatMessage)]
    return {"speakers": sources, "stop_reason": result.stop_reason}


def load(path: str) -> dict[str, Any]:
    """A component JSON file, or a Python file whose module-level team is dumped."""
    if not path.endswith(".py"):
        return dict(json.loads(Path(path).read_text(encoding="utf-8")))
    import runpy

    real_run = asyncio.run
    asyncio.run = lambda coro, **kw: coro.close()  # type: ignore[assignment]
    try:
        ns = runpy.run_path(path, run_name="__main__")
    finally:
        asyncio.run = real_run
    team = next(v for v in ns.values() if isinstance(v, Team))
    return dict(team.dump_component().model_dump(mode="json"))


def replay_clients(component: dict[str, Any]) -> None:
    """Every participant's model client becomes a replay client (set per scenario)."""
    for p in component["config"]["participants"]:
        if p["config"].get("model_client") is not None:
            p["config"]["model_client"] = {
                "provider": "autogen_ext.models.replay.ReplayChatCompletionClient",
                "component_type": "replay_chat_completion_client",
                "config": {
                    "chat_completions": [],
                    "model_info": {
                        "vision": False,
                        "function_calling": True,
                        "json_output": False,
                        "family": "unknown",
                        "structured_output": False,
                    },
                },
            }


def main() -> None:
    plan = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    component = load(plan["file"])
    replay_clients(component)
    out = {
        sc["title"]: asyncio.run(run_one(component, sc["turns"], sc["ends"]))
        for sc in plan["scenarios"]
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
