"""Run one AgentChat team (a Python file, or a component JSON file) under the real
autogen-agentchat 0.7.5, scripted.

Executed by the throw-away venv's python: ``python agentchat_driver.py PLAN.json`` where the
plan is ``{"file": PATH, "task": TEXT, "replies": {AGENT: [TURN, ...]}}``, a turn being a
text or ``{"tool": NAME, ...}``. The file runs as ``__main__`` with ``asyncio.run`` held
back; its team (the last one built at module level) then runs ``task``. With
``"component": PATH`` instead of ``"file"``, the team is the one AgentChat's component loader
(``Team.load_component``) builds from that JSON file. The team then runs ``task``, every
agent's model client replaced by a ``ReplayChatCompletionClient`` that replies that agent's turns: a text,
or a call of the tool (a handoff's too) with each required argument filled in, which the
agent then runs as AgentChat does (when one runs out, the run ends as "script ran out").
With ``"choices": [NAME, ...]`` in the plan, a ``SelectorGroupChat``'s own model client is
replaced too, replying those names when AgentChat asks it for the next speaker.
Prints ``{"speakers": [...], "stop_reason": ...}`` on a line starting with ``@@RESULT@@``.
"""

from __future__ import annotations

import asyncio
import json
import os
import runpy
import sys
from pathlib import Path
from typing import Any

# a value of each JSON type, for a tool's required arguments (what they are does not route)
_PLACEHOLDER = {
    "string": "x",
    "integer": 1,
    "number": 1,
    "boolean": True,
    "array": [],
    "object": {},
}


def reply(agent: Any, turn: Any) -> Any:
    """What ``agent``'s model says for one scripted turn: the text, or a ``CreateResult``
    calling the tool the turn names (one of the agent's tools or handoffs)."""
    if isinstance(turn, str):
        return turn
    from autogen_core import FunctionCall
    from autogen_core.models import CreateResult, RequestUsage

    # (an agent loaded from JSON holds its tools in its static workbench only; these are
    # AgentChat's private attributes, checked against the pinned autogen-agentchat 0.7.5)
    benched = [t for wb in agent._workbench or [] for t in getattr(wb, "_tools", [])]
    tools = {t.name: t for t in [*benched, *agent._tools, *agent._handoff_tools]}
    schema = tools[turn["tool"]].schema.get("parameters", {})
    props = schema.get("properties", {})
    args = {
        k: _PLACEHOLDER.get(props.get(k, {}).get("type"), "x") for k in schema.get("required", [])
    }
    return CreateResult(
        finish_reason="function_calls",
        content=[FunctionCall(id="call-1", name=turn["tool"], arguments=json.dumps(args))],
        usage=RequestUsage(prompt_tokens=0, completion_tokens=0),
        cached=False,
    )


def main() -> None:
    plan = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    os.environ.setdefault("OPENAI_API_KEY", "sk-test")  # clients built without a key
    from autogen_agentchat.base import TaskResult, Team
    from autogen_agentchat.messages import BaseChatMessage
    from autogen_ext.models.replay import ReplayChatCompletionClient

    real_run = asyncio.run
    if "component" in plan:  # a component JSON file: the team AgentChat loads from it
        data = json.loads(Path(plan["component"]).read_text(encoding="utf-8"))
        team = Team.load_component(data)
    else:
        asyncio.run = lambda coro, **kw: coro.close()  # type: ignore[assignment]
        try:
            ns = runpy.run_path(plan["file"], run_name="__main__")
        finally:
            asyncio.run = real_run
        team = [v for v in ns.values() if isinstance(v, Team)][-1]
    for agent in getattr(team, "_participants", []):
        if getattr(agent, "_model_client", None) is not None:
            turns = plan["replies"].get(agent.name, [])
            agent._model_client = ReplayChatCompletionClient(
                [reply(agent, t) for t in turns],
                model_info={
                    "vision": False,
                    "function_calling": True,
                    "json_output": False,
                    "family": "unknown",
                    "structured_output": False,
                },
            )

    if plan.get("choices") is not None and getattr(team, "_model_client", None) is not None:
        # a SelectorGroupChat's model replies the names the flow's selector speaker chose
        team._model_client = ReplayChatCompletionClient(list(plan["choices"]))

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
