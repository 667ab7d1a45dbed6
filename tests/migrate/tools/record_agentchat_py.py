"""Record scenarios of a Python AgentChat team by running the team object itself.

Not part of the test suite (it needs ``autogen-agentchat==0.7.5`` and ``autogen-ext`` in a
throw-away venv). ``record_agentchat.py`` goes through ``dump_component()``, which loses
lambda edge conditions; this runs the team as the file builds it, so callable conditions
survive. Usage::

    /tmp/ac/bin/python tests/migrate/tools/record_agentchat_py.py PLAN.json

where the plan is ``{"file": ..., "scenarios": [{"title", "turns", "ends"}]}`` (the format
``record_agentchat.py`` writes); prints ``{title: {"speakers": [...], "stop_reason": ...}}``.
Each participant's model client is replaced by a replay client that answers with the
scenario's turns for it, so the real GraphFlow decides who speaks and when the run ends.
"""

from __future__ import annotations

import asyncio
import collections
import json
import runpy
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from agentchat_runner import completion  # type: ignore[import-not-found]
from autogen_agentchat.base import Team  # type: ignore[import-not-found]
from autogen_agentchat.messages import BaseChatMessage  # type: ignore[import-not-found]
from autogen_ext.models.replay import ReplayChatCompletionClient  # type: ignore[import-not-found]

INFO = {
    "vision": False,
    "function_calling": True,
    "json_output": False,
    "family": "unknown",
    "structured_output": False,
}


async def run_one(path: str, turns: list[dict[str, Any]], ends: bool) -> dict[str, Any]:
    real_run = asyncio.run
    asyncio.run = lambda coro, **kw: coro.close()  # the file's own `asyncio.run(main())` is skipped
    try:
        namespace = runpy.run_path(path, run_name="__main__")
    finally:
        asyncio.run = real_run
    team = next(v for v in namespace.values() if isinstance(v, Team))
    per_agent: dict[str, list[Any]] = collections.defaultdict(list)
    for turn in turns[1:]:
        per_agent[turn["speaker"]].append(completion(turn))
    for participant in team._participants:
        if hasattr(participant, "_model_client"):
            participant._model_client = ReplayChatCompletionClient(
                per_agent[participant.name] + ["(unscripted)"] * 5, model_info=INFO
            )
    if not ends:
        team._max_turns = len(turns)
    result = await team.run(task=turns[0]["text"])
    return {
        "speakers": [m.source for m in result.messages if isinstance(m, BaseChatMessage)],
        "stop_reason": result.stop_reason,
    }


def main() -> None:
    plan = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    results = {
        sc["title"]: asyncio.run(run_one(plan["file"], sc["turns"], sc["ends"]))
        for sc in plan["scenarios"]
    }
    print(json.dumps(results))


if __name__ == "__main__":
    main()
