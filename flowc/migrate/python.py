"""Python input: find what the file builds and hand it to the reader for that API.

One file may use classic AG2 (``GroupChat`` + ``GroupChatManager``, :mod:`.classic`), the
AG2 0.9+ group API (``initiate_group_chat`` / ``run_group_chat`` with a pattern,
:mod:`.group`), the legacy swarm (``initiate_swarm_chat``, :mod:`.swarm`) or a Microsoft
AgentChat team (``RoundRobinGroupChat``, ``SelectorGroupChat``, ``Swarm``, ``GraphFlow``,
:mod:`.agentchat_py`). Every reader starts from the same :class:`~.agents.AgentReader`.

>>> from flowc.source import SourceFile
>>> translate_python(SourceFile("x.py", "import autogen\\n"))
Traceback (most recent call last):
...
flowc.migrate.model.NotRecognised: no classic group chat found: the file has no `GroupChat(...)` call
"""

from __future__ import annotations

import ast

import flowc.migrate.model as mm
from flowc.diagnostics import M001
from flowc.migrate.agentchat_py import TEAMS, translate_agentchat_python
from flowc.migrate.agents import AgentReader
from flowc.migrate.classic import translate_groupchats
from flowc.migrate.group import RUNNERS, translate_group
from flowc.migrate.pyread import PyModule, callee
from flowc.migrate.swarm import SWARM_RUNNERS, translate_swarm
from flowc.source import SourceFile

#: what an M001 calls an API this version recognises but does not translate
NOT_TRANSLATED = {
    "MagenticOneGroupChat": "a Microsoft AgentChat team in Python (`MagenticOneGroupChat`)",
}


def _after(call: ast.Call) -> tuple[int, int]:
    """Functions passed to a chat run when it runs: they read the module's names as they
    are after the call that builds (or runs) the chat."""
    return (call.end_lineno or call.lineno, call.end_col_offset or call.col_offset)


def translate_python(source: SourceFile) -> mm.Translation:
    """Translate the group chat a Python file builds.

    Raises ``SyntaxError`` for a file that does not parse and :class:`~.model.NotRecognised`
    when it holds nothing this version translates.
    """
    mod = PyModule.parse(source.name, source.text)
    reader = AgentReader(mod)
    reader.collect_agents()
    calls = list(mod.calls())
    groupchats = [c for c in calls if callee(c) == "GroupChat"]
    if groupchats:
        mod.horizon = _after(groupchats[0])
        return translate_groupchats(reader, groupchats, calls)
    runners = [c for c in calls if callee(c) in RUNNERS]
    if runners:
        mod.horizon = _after(runners[0])
        return translate_group(reader, calls)
    swarms = [c for c in calls if callee(c) in SWARM_RUNNERS]
    if swarms:
        mod.horizon = _after(swarms[0])
        return translate_swarm(reader, calls)
    teams = [c for c in calls if callee(c) in TEAMS]
    if teams:
        mod.horizon = _after(teams[-1])
        return translate_agentchat_python(reader, teams[-1])
    found = [c for c in calls if callee(c) in NOT_TRANSLATED]
    if found:
        reader.report(
            M001,
            f"{NOT_TRANSLATED[callee(found[0])]} is not translated by this version of `flowc migrate`",
            found[0],
            help="see docs/migrate.md for the inputs translated today; port this chat by hand",
        )
    else:
        reader.report(
            M001,
            "no classic group chat found: the file has no `GroupChat(...)` call",
            None,
            help="migrate translates files that build an autogen GroupChat and its GroupChatManager",
        )
    raise mm.NotRecognised(reader.findings)


__all__ = ["translate_python"]
