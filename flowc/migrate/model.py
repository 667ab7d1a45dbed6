"""What every migrate reader produces, and how it becomes `.flow` text.

A reader turns one input (classic Python, AgentChat component JSON, ...) into a
:class:`Migration`: speakers with their roles and tools, rules as `.flow` AST nodes,
settings, scenarios, and the findings (M001/M002/M003). :func:`emit` prints it with
the language's own formatter and checks that the result compiles.

>>> from flowc.dsl import nodes as n
>>> from flowc.source import NO_SPAN as S
>>> mig = Migration(title="demo", source_kind="test", speakers=(
...     Speaker("user", human=True), Speaker("bot", role="Answers questions.")),
...     start="user", rules=(Rule(n.FromCond((n.Name("user", S),), S),
...                               n.SpeakerTarget(n.Name("bot", S), S)),))
>>> "speaker bot" in emit(mig)
True
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from flowc.compiler.pipeline import compile_source
from flowc.diagnostics import Diagnostic, FlowError, has_errors
from flowc.dsl import nodes as n
from flowc.dsl.formatter import (
    format_item,
    format_name,
    format_source,
    format_statement_line,
    format_tool,
    format_value,
)
from flowc.source import NO_SPAN, SourceFile

S = NO_SPAN

#: the custom vocabulary (``flowc.runtime.vocabulary``), declared in every flow that uses it
VOCABULARY: dict[str, str] = {
    "text_contains": "condition text_contains(text: string)",
    "text_matches": "condition text_matches(pattern: string)",
    "context_expression": "condition context_expression(expression: string)",
    "turn_count_at_most": "condition turn_count_at_most(`turns`: int)",
    "random_agent": "target random_agent(agent_ids: list[speaker], allow_repeat: bool)",
}


class MigrateBug(Exception):
    """The translator produced a flow that does not compile: a bug in flowc."""


@attrs.frozen
class Tool:
    """A tool on a speaker; ``alternatives`` as in :class:`flowc.dsl.nodes.ToolDecl`."""

    name: str
    doc: str | None = None
    alternatives: tuple[tuple[n.Effect, ...], ...] = ()


@attrs.frozen
class Speaker:
    """A participant; ``role`` is printed as a comment above its declaration."""

    name: str
    human: bool = False
    role: str | None = None
    tools: tuple[Tool, ...] = ()


@attrs.frozen
class Rule:
    """One ``when`` rule, with an optional comment line above it."""

    cond: n.Cond
    target: n.Target
    priority: int = 0
    comment: str | None = None


@attrs.frozen
class Migration:
    """A translated configuration, ready to print."""

    title: str
    source_kind: str
    speakers: tuple[Speaker, ...]
    start: str
    rules: tuple[Rule, ...] = ()
    description: str | None = None
    initiator: str | None = None
    max_turns: int | None = None
    max_turns_comment: str | None = None
    context: tuple[tuple[str, Any], ...] = ()
    otherwise: n.Target | None = None
    otherwise_comment: str | None = None
    scenarios: tuple[n.Scenario, ...] = ()
    notes: tuple[str, ...] = ()


@attrs.frozen
class Translation:
    """What a reader returns: the migration, its findings, and the speaker order each
    generated scenario encodes (in scenario order, for checks against real AG2 runs)."""

    migration: Migration
    findings: tuple[Diagnostic, ...]
    sequences: tuple[tuple[str, ...], ...] = ()


class NotRecognised(Exception):
    """The input is not a configuration a reader understands (exit 2, nothing written)."""

    def __init__(self, findings: Sequence[Diagnostic]):
        self.findings = tuple(findings)
        super().__init__("; ".join(d.message for d in findings))


# ── made-up speaker names ─────────────────────────────────────────────────────


def free_name(taken: Iterable[str], *choices: str) -> str:
    """The first of ``choices`` that is not in ``taken``, else the last with ``_`` appended
    until it is free: every speaker migrate makes up (the person who sends the task, a
    selector speaker, ...) is named this way, free of every agent's name and of the other
    made-up names (pass those in ``taken`` too).

    >>> free_name({"user"}, "user", "task_user")
    'task_user'
    >>> free_name({"user", "task_user"}, "user", "task_user")
    'task_user_'
    """
    used = set(taken)
    for choice in choices:
        if choice not in used:
            return choice
    name = choices[-1]
    while name in used:
        name += "_"
    return name


# ── small AST helpers for readers ─────────────────────────────────────────────


def name(value: str) -> n.Name:
    return n.Name(value, S)


def from_(*speakers: str) -> n.FromCond:
    return n.FromCond(tuple(name(s) for s in speakers), S)


def tool_cond(tool: str) -> n.ToolCond:
    return n.ToolCond(name(tool), S)


def call_cond(fn: str, **args: Any) -> n.CallCond:
    return n.CallCond(name(fn), tuple(n.Arg(name(k), n.Value(v, S), S) for k, v in args.items()), S)


def speaker_target(speaker: str) -> n.SpeakerTarget:
    return n.SpeakerTarget(name(speaker), S)


def terminate(reason: str | None = None) -> n.TerminateTarget:
    return n.TerminateTarget(n.Str(reason, S) if reason is not None else None, S)


def call_target(fn: str, **args: Any) -> n.CallTarget:
    return n.CallTarget(
        name(fn), tuple(n.Arg(name(k), n.Value(v, S), S) for k, v in args.items()), S
    )


def scenario(title: str, items: Sequence[n.ScenarioItem]) -> n.Scenario:
    return n.Scenario(n.Str(title, S), tuple(items), S)


def say(speaker: str, text: str) -> n.SayTurn:
    return n.SayTurn(name(speaker), n.Str(text, S), S)


def calls(speaker: str, tool: str, text: str | None = None) -> n.CallTurn:
    return n.CallTurn(
        name(speaker), name(tool), None, n.Str(text, S) if text is not None else None, S
    )


def expect_next(speaker: str) -> n.ExpectNext:
    return n.ExpectNext(name(speaker), S)


def expect_terminate(reason: str) -> n.ExpectTerminate:
    return n.ExpectTerminate(n.Str(reason, S), S)


def expect_turns(count: int) -> n.ExpectTurns:
    return n.ExpectTurns(n.Value(count, S), S)


def max_rounds_comment(selector_used: bool, tools: bool = True) -> str:
    """The comment above ``max_turns`` for the ``max_rounds`` of a group or a swarm (both
    readers write it): the classic count also took the tool executor's turns (when there
    are tools), and a selector speaker's turns count in the flow too.

    >>> max_rounds_comment(False)
    'classic max_rounds (it also counted tool-executor turns)'
    >>> max_rounds_comment(False, tools=False)
    'classic max_rounds'
    """
    return (
        "classic max_rounds"
        + (" (it also counted tool-executor turns)" if tools else "")
        + ("; the selector's turns count too, raise it if runs end early" if selector_used else "")
    )


def always_routed(rules: Iterable[Rule]) -> set[str]:
    """Speakers that a bare ``when from X`` rule always routes (``otherwise`` never sees them)."""
    out: set[str] = set()
    for r in rules:
        if isinstance(r.cond, n.FromCond):
            out.update(s.value for s in r.cond.speakers)
    return out


# ── printing ──────────────────────────────────────────────────────────────────


def comment_lines(text: str, *, width: int = 96, limit: int = 3, indent: str = "") -> list[str]:
    """``text`` as at most ``limit`` comment lines (whitespace folded, ``…`` when cut).

    >>> comment_lines("You are a   helpful\\nwriter.")
    ['# You are a helpful writer.']
    """
    words = " ".join(text.split())
    if not words:
        return []
    lines: list[str] = []
    current = ""
    for word in words.split(" "):
        if current and len(current) + 1 + len(word) > width:
            lines.append(current)
            current = word
        else:
            current = f"{current} {word}" if current else word
    lines.append(current)
    if len(lines) > limit:
        lines = lines[:limit]
        lines[-1] = lines[-1] + " …"
    return [f"{indent}# {line}" for line in lines]


def _custom_names(rules: Iterable[Rule], otherwise: n.Target | None) -> list[str]:
    seen: dict[str, None] = {}

    def walk(c: n.Cond) -> None:
        if isinstance(c, n.CallCond):
            seen.setdefault(c.name.value, None)
        elif isinstance(c, n.AndCond | n.OrCond):
            for item in c.items:
                walk(item)
        elif isinstance(c, n.NotCond):
            walk(c.item)

    targets: list[n.Target] = []
    for r in rules:
        walk(r.cond)
        targets.append(r.target)
    if otherwise is not None:
        targets.append(otherwise)
    for t in targets:
        if isinstance(t, n.CallTarget):
            seen.setdefault(t.name.value, None)
    return list(seen)


def _random_results(rules: Iterable[Rule], otherwise: n.Target | None) -> list[str]:
    """Every speaker a ``random_agent`` target may pick, for its ``->`` list."""
    out: dict[str, None] = {}
    targets = [r.target for r in rules] + ([otherwise] if otherwise is not None else [])
    for t in targets:
        if isinstance(t, n.CallTarget) and t.name.value == "random_agent":
            for arg in t.args:
                if arg.name.value == "agent_ids" and isinstance(arg.value.value, list):
                    for a in arg.value.value:
                        out.setdefault(str(a), None)
    return list(out)


def render(mig: Migration) -> str:
    """The unformatted `.flow` text of a migration."""
    out: list[str] = [f"# Migrated by `flowc migrate` from {mig.source_kind}."]
    for note in mig.notes:
        out += comment_lines(note)
    out.append(
        format_statement_line(
            n.FlowDecl(name(mig.title), n.Str(mig.description, S) if mig.description else None, S)
        )
    )
    out.append("")
    for i, sp in enumerate(mig.speakers):
        if sp.role:
            if i > 0:
                out.append("")
            out += comment_lines(sp.role)
        decl = n.SpeakerDecl(name(sp.name), sp.human, (), S)
        line = format_statement_line(decl)
        if not sp.tools:
            out.append(line)
            continue
        out.append(line + " {")
        for tool in sp.tools:
            if tool.doc:
                out += comment_lines(tool.doc, indent="  ", limit=2)
            out.append("  " + format_tool(n.ToolDecl(name(tool.name), tool.alternatives, S)))
        out.append("}")
    out.append("")
    out.append(format_statement_line(n.StartDecl(name(mig.start), S)))
    if mig.initiator is not None and mig.initiator != mig.start:
        out.append(format_statement_line(n.InitiatorDecl(name(mig.initiator), S)))
    if mig.max_turns is not None:
        if mig.max_turns_comment:
            out += comment_lines(mig.max_turns_comment)
        out.append(f"max_turns {mig.max_turns}")
    if mig.context:
        out.append("context {")
        out += [f"  {format_name(k)} = {format_value(v)}," for k, v in mig.context]
        out.append("}")
    customs = _custom_names(mig.rules, mig.otherwise)
    if customs:
        out.append("")
        out.append(
            "# Custom vocabulary of `flowc migrate`, registered by flowc.runtime.vocabulary."
        )
        for c in customs:
            decl_line = VOCABULARY[c]
            if c == "random_agent":
                results = _random_results(mig.rules, mig.otherwise)
                if results:
                    decl_line += " -> " + " | ".join(format_name(r) for r in results)
            out.append(decl_line)
    out.append("")
    for rule in mig.rules:
        if rule.comment:
            out += comment_lines(rule.comment)
        priority = n.Priority(rule.priority, S) if rule.priority != 0 else None
        out.append(format_statement_line(n.Rule(rule.cond, rule.target, priority, S)))
    if mig.otherwise is not None:
        if mig.otherwise_comment:
            out += comment_lines(mig.otherwise_comment)
        out.append(format_statement_line(n.Otherwise(mig.otherwise, S)))
    for sc in mig.scenarios:
        out.append("")
        out.append(f"scenario {format_value(sc.title.value)} {{")
        out += ["  " + format_item(item) for item in sc.items]
        out.append("}")
    return "\n".join(out) + "\n"


def shown(value: Any) -> str:
    """A setting's value as JSON writes it, cut short, for a finding's message.

    >>> shown(True), shown([1, 2]), shown("x" * 50)
    ('true', '[1, 2]', '"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...')
    """
    try:
        text = json.dumps(value, default=repr)
    except (TypeError, ValueError, RecursionError):
        text = type(value).__name__
    return text if len(text) <= 40 else text[:37] + "..."


class UnspellableName(Exception):
    """A name no `.flow` can write (a backquote or a line break in it, or empty): the
    input is refused with an M001 naming it, never reported as a bug in flowc. ``name``
    is the name, for the finding to point at where the input writes it; ``fix`` what to
    do about it."""

    def __init__(self, message: str, name: str = "", fix: str = "") -> None:
        super().__init__(message)
        self.name = name
        self.fix = fix


def _check_names(mig: Migration) -> None:
    named = [("agent", s.name) for s in mig.speakers]
    named += [("tool", t.name) for s in mig.speakers for t in s.tools]
    named += [("context key", k) for k, _ in mig.context]
    for what, value in named:
        problem = _unspellable(value)
        if problem is None:
            continue
        surrogate = "surrogate" in problem
        shown = json.dumps(value, ensure_ascii=surrogate)
        if surrogate:
            raise UnspellableName(
                f"the {what} name {shown} {problem}, so no .flow can hold it; nothing was written",
                value,
                "rename it in the input (a lone surrogate is half of a character: remove it)",
            )
        raise UnspellableName(
            f"the {what} name {shown} {problem}, which no .flow name can hold (a `backquoted"
            " name` holds any other character); nothing was written",
            value,
            "rename it in the input (e.g. replace the backquote or line break with `_`)",
        )


def _unspellable(name: str) -> str | None:
    """Why no `.flow` can write ``name``, or None: a backquoted name ends at a backquote
    or at the end of its line, and a line ends at a newline or at a carriage return (a
    lone one too); a `.flow` is UTF-8 text, which holds no lone surrogate.

    >>> _unspellable("wr\\riter"), _unspellable("support desk")
    ('holds a backquote or a line break', None)
    """
    if not name:
        return "is empty"
    if "`" in name or "\n" in name or "\r" in name:
        return "holds a backquote or a line break"
    if any("\ud800" <= c <= "\udfff" for c in name):
        return "holds a lone surrogate (UTF-8 text, as a .flow is, cannot hold one)"
    return None


def emit(mig: Migration, filename: str = "<migrated>") -> str:
    """Print ``mig`` as formatted `.flow` text that compiles; raises :class:`UnspellableName`
    for a name no `.flow` can write and :class:`MigrateBug` for anything else that fails."""
    _check_names(mig)
    text = render(mig)
    try:
        text = format_source(text, filename)
    except FlowError as err:
        raise MigrateBug(f"the migrated flow does not parse:\n{err}\n---\n{text}") from None
    compiled, diags = compile_source(SourceFile(filename, text))
    if compiled is None or has_errors(diags):
        raise MigrateBug(
            "the migrated flow does not compile:\n"
            + "\n".join(d.message for d in diags)
            + "\n---\n"
            + text
        )
    return text


_SAFE = re.compile(r"[^A-Za-z0-9_]+")


def identifier(text: str, fallback: str = "migrated") -> str:
    """A flow name from arbitrary text (file stem, team name).

    >>> identifier("my team.v2")
    'my_team_v2'
    """
    out = _SAFE.sub("_", text).strip("_")
    if not out:
        return fallback
    return out if not out[0].isdigit() else f"_{out}"


__all__ = [
    "VOCABULARY",
    "Diagnostic",
    "MigrateBug",
    "Migration",
    "NotRecognised",
    "Rule",
    "Speaker",
    "Tool",
    "Translation",
    "UnspellableName",
    "emit",
    "free_name",
    "render",
]
