"""What the language server knows about one document, without any LSP types.

An :class:`Index` is built from the same parse and compile as ``flowc check``
(:func:`flowc.compiler.pipeline.compile_source`); it lists every name written in the
file with what it names (a speaker, a tool, a context key, a custom condition or
target), where each is declared, and answers hover questions in Markdown.
Positions here are flowc's: 1-based lines and 0-based character columns.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterator, Mapping
from functools import cached_property
from typing import Any

import attrs

from flowc._compat import dd_out_of_memory
from flowc.compiler import model as m
from flowc.compiler.analysis.endings import ending_reasons
from flowc.compiler.analysis.facts import Facts
from flowc.compiler.analysis.system import System, system_of_flow
from flowc.compiler.compiled import CompiledFlow
from flowc.compiler.describe import rule_label, transition_text
from flowc.dsl import nodes as n
from flowc.dsl.formatter import format_name
from flowc.dsl.parser import scan
from flowc.escaping import has_invisible, visible
from flowc.source import SourceFile, Span

#: what a name written in a flow refers to
SPEAKER, TOOL, KEY, CONDITION, TARGET = "speaker", "tool", "context key", "condition", "target"
PROPERTY = "property"

_CODE = re.compile(r"\b[EWIMX]\d{3}\b")
#: the categories of the characters a new name may not hold, besides a backquote and
#: what :func:`~flowc.escaping.visible` escapes: line ends and other controls (the tab
#: among them), and format characters, which show nothing or reorder the text around them
#: (the zero-width space, the bidirectional marks and overrides, the soft hyphen): a name
#: holding one would look like another. The joiners U+200C and U+200D are kept, as
#: :func:`~flowc.escaping.visible` keeps them: scripts and emoji sequences need them
_NOT_IN_NAMES = frozenset({"Cc", "Zl", "Zp", "Cf"})
_JOINERS = frozenset("\u200c\u200d")
#: of those, the line ends and other controls
_CONTROLS = frozenset({"Cc", "Zl", "Zp"})


@attrs.frozen
class Occurrence:
    """One written name: what it names, where, and whether this is its declaration."""

    kind: str
    name: str
    span: Span
    definition: bool = False
    #: written as a JSON string (a speaker passed to a custom call's `speaker` parameter)
    literal: bool = False


class Refused(Exception):
    """A rename that would break the flow: the message says why, for the editor to show."""


@attrs.frozen
class _Walk:
    """What a walk over the statements needs besides the nodes: the text, and each
    custom condition's and target's parameter types, so that a speaker passed as an
    argument (``pick(who = "reviewer")``) counts as a use."""

    text: str
    types: Mapping[str, Mapping[str, str]]


def _names(node: Any, ctx: _Walk) -> Iterator[Occurrence]:
    """Every name in a statement (or part of one) with its kind, in source order."""
    if isinstance(node, n.SpeakerDecl):
        yield Occurrence(SPEAKER, node.name.value, node.name.span, True)
        for tool in node.tools:
            yield from _names(tool, ctx)
        for writes in node.writes:
            for key in writes.keys:
                yield Occurrence(KEY, key.value, key.span)
    elif isinstance(node, n.SpeakersDecl):
        for sp in node.speakers:
            yield from _names(sp, ctx)
    elif isinstance(node, n.ToolDecl):
        yield Occurrence(TOOL, node.name.value, node.name.span, True)
        for alt in node.alternatives:
            for effect in alt:
                yield from _names(effect, ctx)
    elif isinstance(node, (n.SetEffect, n.ClearEffect)):
        yield Occurrence(KEY, node.key.value, node.key.span)
    elif isinstance(node, (n.HandoffEffect, n.HandoffTurn)):
        if isinstance(node, n.HandoffTurn):
            yield Occurrence(SPEAKER, node.speaker.value, node.speaker.span)
        yield Occurrence(SPEAKER, node.target.value, node.target.span)
    elif isinstance(
        node,
        (
            n.StartDecl,
            n.InitiatorDecl,
            n.SpeakerTarget,
            n.ResultSpeaker,
            n.ExpectNext,
            n.SayTurn,
            n.FinishTurn,
        ),
    ):
        yield Occurrence(SPEAKER, node.speaker.value, node.speaker.span)
    elif isinstance(node, n.ContextDecl):
        for entry in node.entries:
            yield Occurrence(KEY, entry.key.value, entry.key.span, True)
    elif isinstance(node, n.Rule):
        yield from _names(node.cond, ctx)
        yield from _names(node.target, ctx)
    elif isinstance(node, n.Otherwise):
        yield from _names(node.target, ctx)
    elif isinstance(node, n.FromCond):
        for who in node.speakers:
            yield Occurrence(SPEAKER, who.value, who.span)
    elif isinstance(node, n.ToolCond):
        yield Occurrence(TOOL, node.tool.value, node.tool.span)
    elif isinstance(node, (n.ContextCond, n.ExpectContext)):
        yield Occurrence(KEY, node.key.value, node.key.span)
    elif isinstance(node, (n.CallCond, n.CallTarget)):
        kind = CONDITION if isinstance(node, n.CallCond) else TARGET
        yield Occurrence(kind, node.name.value, node.name.span)
        declared = ctx.types.get(node.name.value, {})
        for arg in node.args:
            yield from _speaker_values(arg.value, declared.get(arg.name.value), ctx.text)
    elif isinstance(node, (n.AndCond, n.OrCond)):
        for part in node.items:
            yield from _names(part, ctx)
    elif isinstance(node, (n.NotCond, n.PreviousCond)):
        yield from _names(node.item, ctx)
    elif isinstance(node, n.PropertyDecl):
        yield Occurrence(PROPERTY, node.name.value, node.name.span, True)
        for expr in n.property_expressions(node):
            yield from _names(expr, ctx)
    elif isinstance(node, (n.SequenceDecl, n.RoundRobinDecl)):
        for step in node.steps if isinstance(node, n.SequenceDecl) else node.speakers:
            yield Occurrence(SPEAKER, step.value, step.span)
    elif isinstance(node, n.ConditionDecl):
        yield Occurrence(CONDITION, node.name.value, node.name.span, True)
        yield from _param_defaults(node.params, ctx)
    elif isinstance(node, n.TargetDecl):
        yield Occurrence(TARGET, node.name.value, node.name.span, True)
        yield from _param_defaults(node.params, ctx)
        for result in node.results or ():
            yield from _names(result, ctx)
    elif isinstance(node, n.Scenario):
        for item in node.items:
            yield from _names(item, ctx)
    elif isinstance(node, n.CallTurn):
        yield Occurrence(SPEAKER, node.speaker.value, node.speaker.span)
        yield Occurrence(TOOL, node.tool.value, node.tool.span)
        for effect in node.effects:
            yield from _names(effect, ctx)
    elif isinstance(node, n.SetTurn):
        yield Occurrence(SPEAKER, node.speaker.value, node.speaker.span)
        for assign in node.assigns:
            yield Occurrence(KEY, assign.key.value, assign.key.span)
    elif isinstance(node, n.ClearTurn):
        yield Occurrence(SPEAKER, node.speaker.value, node.speaker.span)
        for key in node.keys:
            yield Occurrence(KEY, key.value, key.span)


def _param_defaults(params: tuple[n.Param, ...], ctx: _Walk) -> Iterator[Occurrence]:
    """The speakers a custom call's parameter defaults name (``who: speaker = "b"``): a
    call that leaves the argument out passes them, so they are uses like an argument."""
    for param in params:
        if param.default is not None:
            yield from _speaker_values(param.default, str(param.type), ctx.text)


def _speaker_values(value: n.Value, type_name: str | None, text: str) -> Iterator[Occurrence]:
    """The speakers an argument names: a `speaker` parameter's string, or each string
    of a `list[speaker]` one (found by the flow's own lexer inside the array)."""
    if type_name == "speaker" and isinstance(value.value, str):
        yield Occurrence(SPEAKER, value.value, value.span, literal=True)
    elif type_name == "list[speaker]" and isinstance(value.value, list):
        # the array's items keep no spans of their own: read its text again, token by token
        start_line, start_col, offset = value.span.line, value.span.column, value.span.start
        # the array may span lines; the lexer counts from (1, 1) of the slice it gets
        for kind, tok, tok_start, tok_line, tok_column in scan(
            text[value.span.start : value.span.end]
        ):
            if kind != "STRING":
                continue
            named = json.loads(tok)
            line = start_line + tok_line - 1
            column = (start_col if tok_line == 1 else 1) + tok_column - 1
            end_column = column + len(tok)
            begin = offset + tok_start
            yield Occurrence(
                SPEAKER,
                named,
                Span(line, column, line, end_column, begin, begin + len(tok)),
                literal=True,
            )


def _inside(span: Span, line: int, column: int) -> bool:
    """Whether 1-based ``line`` / 0-based ``column`` falls in ``span`` (end inclusive, so
    that a cursor just after a name still finds it)."""
    start = (span.line, span.column - 1)
    end = (span.end_line, span.end_column - 1)
    return start <= (line, column) <= end


def _speakers_of(cond: m.Condition) -> set[str]:
    """The speakers a compiled condition's `from` parts name."""
    if isinstance(cond, m.FromSpeaker):
        return {cond.agent_id}
    if isinstance(cond, (m.AllOf, m.AnyOf)):
        return set().union(*(_speakers_of(c) for c in cond.conditions))
    return set()


def _keys_of(cond: m.Condition) -> set[str]:
    """The context keys a compiled condition reads."""
    if isinstance(cond, m.ContextEquals):
        return {cond.key}
    if isinstance(cond, (m.AllOf, m.AnyOf)):
        return set().union(*(_keys_of(c) for c in cond.conditions))
    if isinstance(cond, m.Not):
        return _keys_of(cond.condition)
    return set()


def _tools_of(cond: m.Condition) -> set[str]:
    if isinstance(cond, m.ToolCalled):
        return {cond.tool_name}
    if isinstance(cond, (m.AllOf, m.AnyOf)):
        return set().union(*(_tools_of(c) for c in cond.conditions))
    if isinstance(cond, m.Not):
        return _tools_of(cond.condition)
    return set()


def _hidden(char: str) -> bool:
    """Whether a new name may not hold ``char``: see :data:`_NOT_IN_NAMES`."""
    if has_invisible(char):
        return True
    return unicodedata.category(char) in _NOT_IN_NAMES and char not in _JOINERS


def _escaped(char: str) -> str:
    r"""``char`` as an escape: as :func:`~flowc.escaping.visible` writes it, else as
    Python does (``\t``, ``\xad``)."""
    shown = visible(char)
    return shown if shown != char else char.encode("unicode_escape").decode("ascii")


def run_endings(facts: Facts) -> frozenset[str] | None:
    """Every reason some run of the analysed flow closes with (as E111 lists them), from
    the facts its checks read; None when the analysis cannot say, or when counting the
    runs the cap closes ran out of the memory the symbolic count was given."""
    try:
        return ending_reasons(facts)
    except (MemoryError, RuntimeError, ValueError) as error:
        if not dd_out_of_memory(error):
            raise
        return None


@attrs.frozen(eq=False, slots=False)
class Index:
    """One analysed version of a document. Its names are listed when a request first
    needs them, not while the diagnostics of an edit are on their way."""

    source: SourceFile
    flow: n.Flow
    compiled: CompiledFlow | None
    #: every reason some run of the flow closes with, as the check found them
    #: (:func:`~flowc.compiler.analysis.endings.ending_reasons`, ``"max_turns"`` when a
    #: run reaches the cap); None when not known (not analysed, or the analysis cannot say)
    endings: frozenset[str] | None = None

    @classmethod
    def build(
        cls,
        source: SourceFile,
        flow: n.Flow,
        compiled: CompiledFlow | None,
        endings: frozenset[str] | None = None,
    ) -> Index:
        return cls(source, flow, compiled, endings)

    @cached_property
    def occurrences(self) -> tuple[Occurrence, ...]:
        flow = self.flow
        types = {
            st.name.value: {p.name.value: str(p.type) for p in st.params}
            for st in flow.statements
            if isinstance(st, (n.ConditionDecl, n.TargetDecl))
        }
        walk = _Walk(self.source.text, types)
        found: list[Occurrence] = []
        for st in flow.statements:
            found.extend(_names(st, walk))
        return tuple(found)

    def at(self, line: int, column: int) -> Occurrence | None:
        """The name under a cursor (1-based line, 0-based column)."""
        for occ in self.occurrences:
            if _inside(occ.span, line, column):
                return occ
        return None

    def definitions(self, kind: str, name: str) -> list[Occurrence]:
        return [o for o in self.occurrences if o.definition and o.kind == kind and o.name == name]

    def references(self, kind: str, name: str, *, declarations: bool = True) -> list[Occurrence]:
        """Every place ``name`` is written as a ``kind``, in file order."""
        found = [
            o
            for o in self.occurrences
            if o.kind == kind and o.name == name and (declarations or not o.definition)
        ]
        return sorted(found, key=lambda o: o.span.start)

    def can_rename(self, occ: Occurrence) -> None:
        """Raise :class:`Refused` when the name under the cursor cannot be renamed here."""
        if occ.kind in (CONDITION, TARGET):
            raise Refused(
                f"`{occ.name}` is a custom {occ.kind}: its name is the one its Python class is "
                "registered under, so rename it there and in the flow together"
            )

    def rename(self, occ: Occurrence, new_name: str) -> list[tuple[Span, str]]:
        """The edits that rename what ``occ`` names to ``new_name`` everywhere in the file
        (scenarios included): ``(span, text)`` pairs. A name that is not a bare one (a
        keyword, `support desk`, `用户`) is written in backquotes; the editor's blanks
        around the new name, and backquotes around it, are left out.

        Raises :class:`Refused` for a name already taken by another of its kind (the two
        would merge), and for a name the flow would not show as it is: an empty or
        all-blank one, one starting or ending with a blank, or holding a backquote, a
        line end or another control character (the tab too), a format character (Unicode
        category Cf but the joiners: the zero-width space, a bidirectional override, ...) or another
        character :func:`~flowc.escaping.visible` escapes. Some of those a file can write
        in backquotes (`flowc check` reads a tab there), but each would read as another
        name, or as none."""
        self.can_rename(occ)
        new = new_name.strip()
        if len(new) >= 2 and new[0] == new[-1] == "`":
            new = new[1:-1]
        shown = visible(new)
        if not new.strip():
            blank = f" (`{shown}` is all blank)" if new else ""
            raise Refused(f"the {occ.kind} `{occ.name}` cannot be renamed to an empty name{blank}")
        if "`" in new:
            raise Refused(f"`{shown}` cannot be a name: a name cannot hold a backquote")
        hidden = next((c for c in new if _hidden(c)), None)
        if hidden is not None:
            if unicodedata.category(hidden) in _CONTROLS:
                what = "a line end or another control character"
            else:
                what = (
                    "a character that shows nothing or reorders the text around it, so the"
                    " name would look like another"
                )
            raise Refused(f"`{shown}` cannot be a name: it holds `{_escaped(hidden)}`, {what}")
        if new != new.strip():
            raise Refused(
                f"`{shown}` cannot be a name: it starts or ends with a blank, so it would"
                f" look like `{visible(new.strip())}`"
            )
        if new == occ.name:
            return []
        taken = self.references(occ.kind, new)
        if taken:
            where = next((o for o in taken if o.definition), taken[0]).span
            raise Refused(
                f"there is already a {occ.kind} `{new}` (line {where.line}); renaming "
                f"`{occ.name}` to it would merge the two"
            )
        edits = []
        for use in self.references(occ.kind, occ.name):
            edits.append((use.span, json.dumps(new) if use.literal else format_name(new)))
        return edits

    def code_at(self, line: int, column: int) -> str | None:
        """A diagnostic code (``W204``) written in a comment under the cursor."""
        for comment in self.flow.comments:
            if not comment.span.line <= line <= comment.span.end_line:
                continue
            # the comment's text starts after its `#`
            text_start = comment.span.column  # 0-based column of the first character after `#`
            for match in _CODE.finditer(comment.text):
                if text_start + match.start() <= column <= text_start + match.end():
                    return match.group()
        return None

    # ── hover ────────────────────────────────────────────────────────────────

    def _rule_line(self, index: int) -> str:
        assert self.compiled is not None
        info = self.compiled.rules[index]
        text = transition_text(self.compiled.graph.transitions[index])
        return f"- {rule_label(index, info.line, text, code=True)}"

    def hover(self, occ: Occurrence) -> str | None:
        """Markdown for the name under the cursor; None when there is nothing to say."""
        if self.compiled is None:
            return None
        if occ.kind == SPEAKER:
            return self._hover_speaker(occ.name)
        if occ.kind == TOOL:
            return self._hover_tool(occ.name)
        if occ.kind == KEY:
            return self._hover_key(occ.name)
        if occ.kind == PROPERTY:
            return self._hover_property(occ.name)
        return None

    @cached_property
    def _system(self) -> System | None:
        """The compiled flow as the checker sees it (who each rule's target may be)."""
        return system_of_flow(self.compiled) if self.compiled is not None else None

    def _hover_property(self, name: str) -> str | None:
        c = self.compiled
        assert c is not None
        found = [p for p in c.properties if p.name == name]
        if not found:
            return None
        prop = found[0]
        return "\n".join(
            [
                f"**property `{name}`**",
                "",
                "```flow",
                prop.text,
                "```",
                "",
                "Must hold on every run: `flowc check` decides it, and `flowc test` holds "
                "each scenario's run to it (docs/properties.md).",
            ]
        )

    def _hover_speaker(self, name: str) -> str | None:
        c = self.compiled
        assert c is not None
        if name not in c.speakers:
            return None
        role = "human" if name in c.humans else "model agent"
        out = [f"**speaker `{name}`** ({role})"]
        extra = []
        if name == c.start:
            extra.append("speaks first (`start`)")
        if name == c.initiator:
            extra.append("the initiator")
        if extra:
            out.append("; ".join(extra).capitalize() + ".")
        tools = [t for t in c.tools if t.speaker == name]
        if tools:
            out.append("Tools:")
            for t in tools:
                effects = " | ".join(a.text() for a in t.alternatives) or "no effect on the route"
                out.append(f"- `{t.name}`: {effects}")
        else:
            out.append("Tools: none.")
        system = self._system
        assert system is not None
        me = system.speaker_index(name)
        # `next`, `stay`, `initiator` and custom targets too, as the checker resolves them
        to = [r.index for r in system.rules if me in system.routes_to(r)]
        frm = [i for i, tr in enumerate(c.graph.transitions) if name in _speakers_of(tr.when)]
        out.append("Rules routing to it:" if to else "Rules routing to it: none.")
        out.extend(self._rule_line(i) for i in to)
        out.append("Rules routing from it:" if frm else "Rules routing from it: none.")
        out.extend(self._rule_line(i) for i in frm)
        return "\n\n".join(out[:1]) + "\n\n" + "\n".join(out[1:])

    def _hover_tool(self, name: str) -> str | None:
        c = self.compiled
        assert c is not None
        tools = [t for t in c.tools if t.name == name]
        if not tools:
            return f"**tool `{name}`**: no speaker declares it."
        out = [f"**tool `{name}`**", ""]
        for t in tools:
            effects = " | ".join(a.text() for a in t.alternatives) or "no effect on the route"
            out.append(f"- on `{t.speaker}`: {effects}")
        rules = [i for i, tr in enumerate(c.graph.transitions) if name in _tools_of(tr.when)]
        out.append("Rules on it:" if rules else "Rules on it: none.")
        out.extend(self._rule_line(i) for i in rules)
        return "\n".join(out)

    def _hover_key(self, name: str) -> str:
        c = self.compiled
        assert c is not None
        out = [f"**context key `{name}`**", ""]
        if name in c.context_vars:
            out.append(f"Initial value: `{json.dumps(c.context_vars[name])}`.")
        else:
            out.append("Initial value: none (not in `context`).")
        writers = []
        for t in c.tools:
            for alt in t.alternatives:
                if name in alt.clears or any(k == name for k, _ in alt.sets):
                    writers.append(f"- `{t.speaker}` via tool `{t.name}`: {alt.text()}")
        out.append("Written by:" if writers else "Written by: no tool.")
        out.extend(writers)
        readers = [i for i, tr in enumerate(c.graph.transitions) if name in _keys_of(tr.when)]
        out.append("Read by:" if readers else "Read by: no rule.")
        out.extend(self._rule_line(i) for i in readers)
        return "\n".join(out)
