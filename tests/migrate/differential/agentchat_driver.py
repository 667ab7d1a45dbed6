"""Run one AgentChat Python team under the real autogen-agentchat 0.7.5, scripted.

Executed by the throw-away venv's python: ``python agentchat_driver.py PLAN.json`` where the
plan is ``{"file": PATH, "task": TEXT, "replies": {AGENT: [TEXT, ...]}}``. The file runs as
``__main__`` with ``asyncio.run`` held back; its team (the last one built at module level)
then runs ``task``, every agent's model client replaced by a ``ReplayChatCompletionClient``
that says that agent's texts (when one runs out, the run ends as "script ran out"). Prints ``{"speakers": [...], "stop_reason": ...}`` on a line
starting with ``@@RESULT@@``.
"""

from __future__ import annotations

import asyncio
import json
import os
import runpy
import sys
from pathlib import Path
from typing import Any


def main() -> None:
    plan = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    os.environ.setdefault("OPENAI_API_KEY", "sk-test")  # clients built without a key
    from autogen_agentchat.base import TaskResult, Team
    from autogen_agentchat.messages import BaseChatMessage
    from autogen_ext.models.replay import ReplayChatCompletionClient

    real_run = asyncio.run
    asyncio.run = lambda coro, **kw: coro.close()  # type: ignore[assignment]
    try:
        ns = runpy.run_path(plan["file"], run_name="__main__")
    finally:
        asyncio.run = real_run
    teams = [v for v in ns.values() if isinstance(v, Team)]
    team = teams[-1]
    for agent in getattr(team, "_participants", []):
        if getattr(agent, "_model_client", None) is not None:
            texts = plan["replies"].get(agent.name, [])
            agent._model_client = ReplayChatCompletionClient(list(texts))

    speakers: list[str] = []

    async def go() -> Any:
        async for item in team.run_stream(task=plan["task"]):
            if isinstance(item, BaseChatMessage):
                speakers.append(item.source)
            elif isinstance(item, TaskResult):
                return item.stop_reason
        return None

    try:
        stop_reason = real_run(go())
    except Exception as exc:  # the replay client ran out: the script ended
        if "No more mock responses" not in str(exc):
            raise
        stop_reason = "script ran out"
    print("@@RESULT@@" + json.dumps({"speakers": speakers, "stop_reason": stop_reason}))


if __name__ == "__main__":
    main()
