"""Run one classic AG2 GroupChat file under the real ag2 0.9.10, with scripted replies.

Executed by the throw-away venv's python (never imported by the test suite):
``python classic_driver.py PLAN.json`` where the plan is ``{"file": PATH, "replies":
{AGENT: [TEXT, ...]}}``. Every agent's model reply (``generate_oai_reply``) and every
human answer (``get_human_input``) is the next text of that agent's list, so ag2's own
GroupChat code picks the speakers and decides when the chat ends. Prints
``{"speakers": [...], "end": REASON}`` on a line starting with ``@@RESULT@@``.
"""

from __future__ import annotations

import collections
import json
import sys
from pathlib import Path
from typing import Any

# the recorder's runner (tests/migrate/tools/classic_runner.py) sets classic up and runs
# the file: it imports nothing but the standard library and ag2, both in this venv
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))

from classic_runner import run_scripted  # type: ignore[import-not-found]


def main() -> None:
    plan = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    queues: dict[str, collections.deque[Any]] = collections.defaultdict(collections.deque)
    for name, texts in plan["replies"].items():
        queues[name].extend(texts)
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
