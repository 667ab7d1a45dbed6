"""Run one classic AG2 GroupChat file under the real ag2 0.9.10, with scripted replies.

Executed by the throw-away venv's python (never imported by the test suite):
``python classic_driver.py PLAN.json`` where the plan is ``{"file": PATH, "replies":
{AGENT: [TURN, ...]}, "choices": {SELECTOR: [NAME, ...]}, "selector_after": {AGENT:
SELECTOR}, "typed": BOOL, "swarm": BOOL}``. Every agent's model reply (``generate_oai_reply``) and every human answer
(``get_human_input``) is the next turn of that agent's list (a text, or a tool call), and
every reply of ag2's speaker selection model (``"auto"``) the next name of the choices of
the flow's selector speaker that follows the last speaker (with ``"typed"``, every answer
the person of ``"manual"`` selection types at ag2's console), so ag2's own GroupChat code
picks the speakers and decides when the chat ends. With ``"swarm"``, a legacy swarm file
in pyautogen 0.8's spelling imports (:func:`legacy_swarm_names`). Prints
``{"speakers": [...], "end": REASON}`` on a line starting with ``@@RESULT@@``.
"""

from __future__ import annotations

import collections
import json
import os
import sys
from pathlib import Path
from typing import Any

# the recorder's runner (tests/migrate/tools/classic_runner.py) sets classic up and runs
# the file: it imports nothing but the standard library and ag2, both in this venv
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))

from classic_runner import run_scripted  # type: ignore[import-not-found]


def ask_selector(queues: dict[str, collections.deque[Any]], after: dict[str, str]) -> None:
    """Make ag2's speaker selection model (its internal ``speaker_selection_agent``, asked
    when the method is ``"auto"``) reply the choices of the flow's selector speaker that
    follows the last speaker (``after[NAME]``, or ``after[""]`` for any other)."""
    if not after:
        return
    os.environ.setdefault("OPENAI_API_KEY", "sk-test")  # configs without a key still build
    from autogen import GroupChat

    def choosing(original: Any) -> Any:
        def select(self: Any, last_speaker: Any, *args: Any, **kwargs: Any) -> Any:
            name = after.get(last_speaker.name, after.get("", ""))
            queues["speaker_selection_agent"] = queues[name]
            return original(self, last_speaker, *args, **kwargs)

        return select

    GroupChat._auto_select_speaker = choosing(GroupChat._auto_select_speaker)  # type: ignore[method-assign]
    GroupChat.a_auto_select_speaker = choosing(GroupChat.a_auto_select_speaker)  # type: ignore[method-assign]


def type_choices(queues: dict[str, collections.deque[Any]], after: dict[str, str]) -> None:
    """Make the person of classic's ``"manual"`` selection type the choices of the flow's
    person selector that follows the last speaker: ag2 reads them from the console
    (``IOStream.input``, classic's number of the agent in its list); an empty answer once
    the choices run out (ag2 then moves to the next agent)."""
    if not after:
        return
    from autogen import GroupChat
    from autogen.io.console import IOConsole

    # (a private method of classic's GroupChat, checked against the pinned ag2 0.9.10)
    prepare, console_input = GroupChat._prepare_and_select_agents, IOConsole.input
    typing: list[collections.deque[Any]] = []  # the queue being typed, while ag2 asks

    def prepare_choosing(self: Any, last_speaker: Any) -> Any:
        name = after.get(last_speaker.name, after.get("", ""))
        typing[:] = [queues[name]]
        try:
            return prepare(self, last_speaker)
        finally:
            typing.clear()

    def typed(self: Any, prompt: str = "", *, password: bool = False) -> str:
        if not typing:
            return console_input(self, prompt, password=password)
        return str(typing[0].popleft()) if typing[0] else ""

    GroupChat._prepare_and_select_agents = prepare_choosing  # type: ignore[method-assign]
    IOConsole.input = typed  # type: ignore[method-assign]


def legacy_swarm_names() -> None:
    """The top-level names of the legacy swarm that pyautogen 0.8 exported
    (``from autogen import AFTER_WORK, ON_CONDITION, SwarmAgent, ...``): ag2 0.9.10 still
    ships them, the same classes, in ``autogen.agentchat.contrib.swarm_agent`` only."""
    os.environ.setdefault("OPENAI_API_KEY", "sk-test")
    import autogen
    from autogen.agentchat.contrib import swarm_agent

    for name in swarm_agent.__all__:
        if not hasattr(autogen, name):
            setattr(autogen, name, getattr(swarm_agent, name))


def main() -> None:
    plan = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    if plan.get("swarm"):
        legacy_swarm_names()
    queues: dict[str, collections.deque[Any]] = collections.defaultdict(collections.deque)
    for name, texts in plan["replies"].items():
        queues[name].extend(texts)
    for name, names in plan.get("choices", {}).items():
        queues[name] = collections.deque(names)  # (in place of the selector's own turns)
    if plan.get("typed"):  # the flow's selector is a person: classic's "manual"
        type_choices(queues, plan.get("selector_after", {}))
    else:
        ask_selector(queues, plan.get("selector_after", {}))
    gc, ns = run_scripted(plan["file"], queues)
    import autogen  # (after run_scripted: its key set first)

    speakers = [m.get("name") for m in gc.messages]
    managers = [v for v in ns.values() if isinstance(v, autogen.GroupChatManager)]
    # (the manager may run a copy of the GroupChat it was given: prefer its own when found)
    managers = [m for m in managers if m.groupchat is gc] or managers
    last = gc.messages[-1] if gc.messages else {}
    if managers and managers[0]._is_termination_msg(last):
        end = "is_termination_msg"
    elif len(gc.messages) >= gc.max_round:
        end = "max_turns"
    elif any(
        a.name != last.get("name") and a._is_termination_msg(last) for a in gc.agents
    ):  # an agent's own is_termination_msg refused to answer the last message
        end = "is_termination_msg"
    else:
        end = "no_next_speaker"
    print("@@RESULT@@" + json.dumps({"speakers": speakers, "end": end}), flush=True)


if __name__ == "__main__":
    main()
