"""Run a classic corpus file under the REAL classic package, offline, with scripted replies.

Not part of the test suite (it needs `ag2==0.9.*` in a throw-away venv); run through
``record_classic.py`` (the differential test's ``classic_driver.py`` runs its scripts
through :func:`run_scripted` too). Usage: ``CLASSIC_PYTHON classic_runner.py PLAN.json``
where the plan is ``{"file": ..., "scenarios": [{"title": ..., "turns": [[speaker, text], ...]}]}``; prints
``{title: {"speakers": [...], "end": reason}}`` as JSON on a line that starts with
``@@RESULT@@``.

Every agent's LLM reply (``generate_oai_reply``) and human input (``get_human_input``) is
replaced by the scenario's next text for that agent, so classic's own GroupChat code picks
the speakers and decides when the chat ends.
"""

from __future__ import annotations

import collections
import json
import runpy
import sys
from pathlib import Path
from typing import Any


def run_scripted(path: str, queues: dict[str, collections.deque[Any]]) -> tuple[Any, Any]:
    """Run the file at ``path`` as ``__main__``, every agent's LLM reply and human input
    being the next turn of its queue in ``queues`` (``(unscripted reply of NAME)`` once
    it is empty): the GroupChat that ran last and the file's namespace. A turn is a text,
    or ``{"tool": NAME, ...}``: a model reply that calls that tool (:func:`tool_call`),
    which classic then runs as it runs a model's call.

    The differential test's driver (``tests/migrate/differential/classic_driver.py``)
    runs its scripts through this too, so both see classic's runs set up alike.
    """
    import os

    os.environ.setdefault("OPENAI_API_KEY", "sk-test")  # configs without a key still build
    from autogen import ConversableAgent, GroupChat

    def next_text(agent: Any) -> Any:
        q = queues[agent.name]
        return q.popleft() if q else f"(unscripted reply of {agent.name})"

    def model_reply(agent: Any) -> Any:
        turn = next_text(agent)
        return turn if isinstance(turn, str) else tool_call(agent, turn["tool"])

    def fake_reply(self: Any, messages: Any = None, sender: Any = None, config: Any = None) -> Any:
        return True, model_reply(self)

    async def a_fake_reply(
        self: Any, messages: Any = None, sender: Any = None, config: Any = None
    ) -> Any:
        return True, model_reply(self)

    ConversableAgent.generate_oai_reply = fake_reply  # type: ignore[method-assign]
    ConversableAgent.a_generate_oai_reply = a_fake_reply  # type: ignore[method-assign]
    ConversableAgent.get_human_input = lambda self, prompt, **kw: str(next_text(self))  # type: ignore[method-assign]
    seen: list[Any] = []
    original_append = GroupChat.append

    def append(self: Any, message: Any, speaker: Any) -> None:
        if not seen or seen[-1] is not self:
            seen.append(self)
        original_append(self, message, speaker)

    GroupChat.append = append  # type: ignore[method-assign]
    ns = runpy.run_path(path, run_name="__main__")
    # (`run_group_chat` runs in a thread: corpus scripts call `response.process()` to wait)
    return seen[-1], ns


# a value of each JSON type, for a tool's required arguments (what they are does not route)
_PLACEHOLDER = {
    "string": "x",
    "integer": 1,
    "number": 1,
    "boolean": True,
    "array": [],
    "object": {},
}


def tool_call(agent: Any, name: str) -> dict[str, Any]:
    """The model message of ``agent`` that calls its tool ``name`` (a handoff's too), each
    required argument filled in from the tool's schema in the agent's ``llm_config``."""
    params: dict[str, Any] = {}
    for tool in (agent.llm_config or {}).get("tools", []):
        if tool.get("function", {}).get("name") == name:
            params = tool["function"].get("parameters") or {}
    props = params.get("properties", {})
    args = {
        k: _PLACEHOLDER.get(props.get(k, {}).get("type"), "x") for k in params.get("required", [])
    }
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
        ],
    }


def run_one(path: str, turns: list[list[str]]) -> dict[str, Any]:
    queues: dict[str, collections.deque[str]] = collections.defaultdict(collections.deque)
    for speaker, text in turns[1:]:  # turn 1 is the script's own kickoff
        queues[speaker].append(text)
    gc, ns = run_scripted(path, queues)
    import autogen  # (after run_scripted: its key set first)

    speakers = [m.get("name") for m in gc.messages]
    managers = [v for v in ns.values() if isinstance(v, autogen.GroupChatManager)]
    last = gc.messages[-1] if gc.messages else {}
    if managers and managers[0]._is_termination_msg(last):
        end = "is_termination_msg"
    elif len(gc.messages) >= gc.max_round:
        end = "max_turns"
    else:
        end = "no_next_speaker"
    return {"speakers": speakers, "end": end}


def main() -> None:
    plan = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    out = {}
    for sc in plan["scenarios"]:
        out[sc["title"]] = run_one(plan["file"], sc["turns"])
    print("@@RESULT@@" + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
