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
from collections.abc import Callable

import attrs

import flowc.migrate.model as mm
from flowc.diagnostics import M001, M002, Diagnostic
from flowc.migrate.agentchat_py import TEAMS, translate_agentchat_python
from flowc.migrate.agents import AgentReader
from flowc.migrate.classic import report_no_groupchat, translate_groupchat
from flowc.migrate.group import RUNNERS, translate_group
from flowc.migrate.pyread import PyModule, callee, kwarg
from flowc.migrate.pyvalues import NAME_TOO_LONG
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


def _label(mod: PyModule, call: ast.Call) -> str:
    var = mod.var_of(call)
    return f"`{var}` (line {call.lineno})" if var else f"line {call.lineno}"


def _nested(mod: PyModule, calls: list[ast.Call]) -> set[int]:
    """Teams inside another team (a participant, or a ``SocietyOfMindAgent``'s ``team``):
    part of that chat, not chats of their own."""
    out: set[int] = set()
    for call in calls:
        inside = mod.elements(kwarg(call, "participants", 0)) or [] if callee(call) in TEAMS else []
        if callee(call) == "SocietyOfMindAgent":
            inside = [x for x in [kwarg(call, "team", 1)] if x is not None]
        for e in inside:
            inner = mod.deref(e)
            if isinstance(inner, ast.Call) and callee(inner) in TEAMS:
                out.add(id(inner))
    return out


def _chosen(
    reader: AgentReader, chats: list[ast.Call], pick: str | None, what: str
) -> list[ast.Call]:
    """The chats to try, in order: the one ``pick`` names (a variable name or a line number),
    or all of them in the default order."""
    if pick is None:
        return chats
    mod = reader.mod
    matches = [c for c in chats if pick in (mod.var_of(c), str(c.lineno))]
    if len(matches) != 1:
        listed = ", ".join(_label(mod, c) for c in sorted(chats, key=lambda c: c.lineno))
        reader.report(
            M001,
            (
                f"no {what} is named `{pick}`"
                if not matches
                else f"several {what}s are named `{pick}`: pick one by its line"
            )
            + f"; the file has {listed}",
            None,
            help="pass --pick with a variable name or a line number from that list",
        )
        raise mm.NotRecognised(reader.findings)
    return matches


def _others(reader: AgentReader, chats: list[ast.Call], chosen: ast.Call, what: str) -> None:
    """Every chat but the translated one is reported (M001): a file with several chats never
    loses one silently."""
    mod = reader.mod
    listed = ", ".join(_label(mod, x) for x in sorted(chats, key=lambda c: c.lineno))
    for c in sorted(chats, key=lambda c: c.lineno):
        if c is chosen:
            continue
        reader.report(
            M001,
            f"this file builds {len(chats)} {what}s; {_label(mod, chosen)} was translated and this one, "
            f"{_label(mod, c)}, was left out",
            c,
            help=f"translate it with `flowc migrate --pick {mod.var_of(c) or c.lineno}` "
            f"(the {what}s: {listed})",
        )


#: the calls that run a chat: ``team.run(...)`` / ``run_stream``, ``x.initiate_chat(manager)``
_RUN_CALLS = ("run", "run_stream", "a_run", "initiate_chat", "a_initiate_chat")


def _runs(mod: PyModule, calls: list[ast.Call], chat: ast.Call) -> bool:
    """Whether the file runs ``chat``: a team's own ``run`` / ``run_stream``, or an
    ``initiate_chat`` / ``run`` sent to a ``GroupChatManager`` built on the ``GroupChat``."""
    for c in calls:
        if callee(c) not in _RUN_CALLS or not isinstance(c.func, ast.Attribute):
            continue
        targets = [c.func.value, *[x for x in [kwarg(c, "recipient", 0)] if x is not None]]
        for t in targets:
            target = mod.deref(t)
            if target is chat:
                return True
            if (
                isinstance(target, ast.Call)
                and callee(target) == "GroupChatManager"
                and mod.deref(kwarg(target, "groupchat", 0) or target) is chat
            ):
                return True
    return False


def _run_first(mod: PyModule, calls: list[ast.Call], chats: list[ast.Call]) -> list[ast.Call]:
    """The chats the file runs come first (in their default order): a chat built but never
    run is a sketch, or one whose run was commented out."""
    run = [c for c in chats if _runs(mod, calls, c)]
    return run + [c for c in chats if c not in run]


def _translate(
    mod: PyModule,
    chats: list[ast.Call],
    pick: str | None,
    what: str,
    translate: Callable[[AgentReader, ast.Call], mm.Translation],
) -> mm.Translation:
    """The first of ``chats`` (or the picked one) that translates; when the default one cannot
    be read (a docs page's sketch), the next one is tried."""
    first = AgentReader(mod)
    first.collect_agents()
    failed: mm.NotRecognised | None = None
    for chat in _chosen(first, chats, pick, what):
        mod.undecided = {}  # the names this translation reads, its agents' names included
        mod.too_large = {}
        reader = AgentReader(mod)
        reader.collect_agents()
        mod.horizon = _after(chat)
        _others(reader, chats, chat, what)
        try:
            result = translate(reader, chat)
        except mm.NotRecognised as err:
            failed = failed or mm.NotRecognised((*err.findings, *_too_large(reader)))
            continue
        drop = reader.dropped_unnamed({s.name for s in result.migration.speakers})
        findings = tuple(d for d in result.findings if id(d) not in drop)
        return attrs.evolve(result, findings=(*findings, *_undecided(reader), *_too_large(reader)))
    assert failed is not None
    raise failed


def _undecided(reader: AgentReader) -> list[Diagnostic]:
    """The names the translation read whose value an ``if`` with an unknown test decides
    (bound in both branches, or before it and in one): each is an M002 at the test."""
    mod = reader.mod
    start = len(reader.findings)
    for name, (branch, pos) in sorted(mod.undecided.items(), key=lambda x: x[1][1]):
        in_body = branch.body[0].lineno <= pos[0] <= (branch.body[-1].end_lineno or pos[0])
        test = " ".join(ast.unparse(branch.test).split()).replace("`", "'")
        reader.report(
            M002,
            f"`{name}` depends on this `if`, whose test `{test}` is not known statically: "
            f"the translation used its value from line {pos[0]}, which holds only when the "
            f"test is {'true' if in_body else 'false'}",
            branch.test,
            help="set the test to a constant in the file (`USE_API = True`), or migrate "
            "each variant from a file that builds only it",
        )
    return reader.findings[start:]


def _too_large(reader: AgentReader) -> list[Diagnostic]:
    """The values the translation read that were too large to work out (past
    :data:`~.pyvalues.MAX_TEXT` or :data:`~.pyvalues.MAX_ITEMS`, or a name past
    :data:`~.pyvalues.MAX_NAME`): each is an M001 where the
    bound was passed, as the value was left unresolved."""
    start = len(reader.findings)
    for _, (node, what) in sorted(reader.mod.too_large.items(), key=lambda x: x[0]):
        if what == NAME_TOO_LONG:  # (:meth:`~.pyvalues.Values.const_name`)
            reader.report(
                M001,
                f"this value is not worked out: {what}; the translation does not use it",
                node,
                help="give a shorter name (an agent whose name is refused is migrated under "
                "its variable's name, a tool under its function's; a context key is left "
                "out of the initial context)",
            )
            continue
        reader.report(
            M001,
            f"this value is not worked out: {what}, more than a group-chat configuration "
            "needs; what reads it was left unresolved",
            node,
            help="write the value out (a prompt as one string literal, the agents as a list)",
        )
    reader.mod.too_large = {}
    return reader.findings[start:]


def translate_python(source: SourceFile, pick: str | None = None) -> mm.Translation:
    """Translate the group chat a Python file builds (``pick``: which one, by variable name or
    line, when it builds several; by default the first ``GroupChat``, group chat or swarm that
    can be read, or the last AgentChat team, as notebooks refine a team cell by cell; a chat
    the file runs comes before one it only builds).

    Raises ``SyntaxError`` for a file that does not parse and :class:`~.model.NotRecognised`
    when it holds nothing this version translates.
    """
    mod = PyModule.parse(source.name, source.text)
    # (a function or class the file defines is never AG2's, whatever its name)
    calls = [c for c in mod.calls() if not mod.defined_here(c)]
    groupchats = [c for c in calls if callee(c) == "GroupChat"]
    if groupchats:
        return _translate(
            mod,
            _run_first(mod, calls, groupchats),
            pick,
            "GroupChat",
            lambda r, gc: translate_groupchat(r, gc, calls),
        )
    runners = [c for c in calls if callee(c) in RUNNERS]
    if runners:
        return _translate(
            mod, runners, pick, "group chat run", lambda r, c: translate_group(r, calls, c)
        )
    swarms = [c for c in calls if callee(c) in SWARM_RUNNERS]
    if swarms:
        return _translate(mod, swarms, pick, "swarm run", lambda r, c: translate_swarm(r, calls, c))
    nested = _nested(mod, calls)
    teams = [c for c in calls if callee(c) in TEAMS and id(c) not in nested]
    if teams:
        return _translate(
            mod, _run_first(mod, calls, teams[::-1]), pick, "team", translate_agentchat_python
        )
    reader = AgentReader(mod)
    found = [c for c in calls if callee(c) in NOT_TRANSLATED]
    if found:
        reader.report(
            M001,
            f"{NOT_TRANSLATED[callee(found[0])]} is not translated by this version of `flowc migrate`",
            found[0],
            help="see docs/migrate.md for the inputs translated today; port this chat by hand",
        )
    else:
        report_no_groupchat(reader)
    raise mm.NotRecognised(reader.findings)


__all__ = ["translate_python"]
