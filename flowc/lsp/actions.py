"""Code actions: the checker's fixes as quick fixes, and ignore comments.

Each fix is the one the finding's own ``help:`` line proposes, applied to the parsed
flow (the statement the finding points at, found by its span):

- W204 (priority trap): give the rule a priority that sorts it first (``priority -1``,
  or one below the lowest priority written, when that is lower);
- W202 (dead ``otherwise``) and W203 (dead rule): remove the statement;
- E101 / E107 (a name that is no declared speaker): use the speaker the help suggests
  (``did you mean `drafter`?``), or declare it (``speaker NAME``) after the last speaker;
- W212 (``max_turns`` too small): raise it to the shortest run the help names;
- X001 (an ignore comment that silences nothing): remove the code, or the comment.

And for every warning and info: ``# flowc: ignore[CODE]`` on the finding's line (added
to an ignore comment already there), as ``flowc check`` reads it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import attrs

from flowc.compiler.analysis.rules import trap_priority
from flowc.diagnostics import E101, E107, W202, W203, W204, W212, X001, Diagnostic
from flowc.dsl import nodes as n
from flowc.dsl.comments import line_end
from flowc.dsl.formatter import format_name, joined_lines
from flowc.dsl.ignores import IGNORE, named_codes
from flowc.lsp.index import Index
from flowc.source import Span

_SUGGESTED = re.compile(r"did you mean `([^`]+)`\?")
_MAX_TURNS = re.compile(r"`max_turns (\d+)`")


@attrs.frozen
class Edit:
    """Replace ``text[start:end]`` of the analysed text with ``new``."""

    start: int
    end: int
    new: str


@attrs.frozen
class Action:
    title: str
    diagnostic: Diagnostic
    edits: tuple[Edit, ...]
    preferred: bool = False


def _statement_at(index: Index, span: Span) -> n.Statement | None:
    """The top-level statement holding ``span``."""
    for st in index.flow.statements:
        if st.span.start <= span.start and span.end <= st.span.end:
            return st
    return None


def _whole_lines(text: str, start: int, end: int) -> Edit:
    """Delete ``text[start:end]`` with its lines when nothing else is on them (a comment
    after it goes too); otherwise just the text."""
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    line_end = len(text) if line_end < 0 else line_end + 1
    before = text[line_start:start]
    after = text[end:line_end].rstrip("\n")
    if not before.strip() and (not after.strip() or after.strip().startswith("#")):
        return Edit(line_start, line_end, "")
    return Edit(start, end, "")


def _priority_fix(index: Index, d: Diagnostic) -> Iterator[Action]:
    assert d.span is not None
    rule = _statement_at(index, d.span)
    if not isinstance(rule, n.Rule) or rule.priority is None:
        return
    written = [
        st.priority.value
        for st in index.flow.statements
        if isinstance(st, n.Rule) and st.priority is not None and st is not rule
    ]
    value = trap_priority(written)
    p = rule.priority.span
    yield Action(
        f"Give this rule `priority {value}` (lower numbers run first)",
        d,
        (Edit(p.start, p.end, f"priority {value}"),),
        preferred=True,
    )


def _remove_fix(index: Index, d: Diagnostic) -> Iterator[Action]:
    assert d.span is not None
    st = _statement_at(index, d.span)
    if d.code is W202 and isinstance(st, n.Otherwise):
        yield Action(
            "Remove the dead `otherwise`",
            d,
            (_whole_lines(index.source.text, st.span.start, st.span.end),),
            preferred=True,
        )
    elif d.code is W203 and isinstance(st, n.Rule) and st.span == d.span:
        # a rule whose every branch is dead (a dead branch of `from a, b` is not removed)
        yield Action(
            "Remove the dead rule",
            d,
            (_whole_lines(index.source.text, st.span.start, st.span.end),),
        )


def _speaker_fix(index: Index, d: Diagnostic) -> Iterator[Action]:
    assert d.span is not None
    text = index.source.text
    name = text[d.span.start : d.span.end]
    if d.help and (match := _SUGGESTED.search(d.help)):
        yield Action(
            f"Change to `{match.group(1)}`",
            d,
            (Edit(d.span.start, d.span.end, format_name(match.group(1))),),
            preferred=True,
        )
    declared = [
        st for st in index.flow.statements if isinstance(st, (n.SpeakerDecl, n.SpeakersDecl))
    ]
    if declared:
        at = text.find("\n", declared[-1].span.end)
        at = len(text) if at < 0 else at + 1
        prefix = "" if at == 0 or text[at - 1] == "\n" else "\n"
    else:
        flows = [st for st in index.flow.statements if isinstance(st, n.FlowDecl)]
        at = 0
        if flows:
            end = text.find("\n", flows[0].span.end)
            at = len(text) if end < 0 else end + 1
        prefix = "" if at == 0 or text[at - 1] == "\n" else "\n"
    decl = f"speaker {format_name(name.strip('`'))}"
    yield Action(f"Declare `{decl}`", d, (Edit(at, at, f"{prefix}{decl}\n"),))


def _max_turns_fix(index: Index, d: Diagnostic) -> Iterator[Action]:
    match = _MAX_TURNS.search(d.help or "")
    for st in index.flow.statements:
        if match and isinstance(st, n.MaxTurnsDecl):
            v = st.value.span
            yield Action(
                f"Raise to `max_turns {match.group(1)}`",
                d,
                (Edit(v.start, v.end, match.group(1)),),
                preferred=True,
            )


def _unused_ignore_fix(index: Index, d: Diagnostic) -> Iterator[Action]:
    assert d.span is not None
    comment = next((c for c in index.flow.comments if c.span == d.span), None)
    if comment is None:
        return
    match = IGNORE.match(comment.text)
    codes = named_codes(match) if match else []
    named = re.search(r"`# flowc: ignore\[(\w+)\]`|`(\w+)` is not a flowc code", d.message)
    code = next((g for g in named.groups() if g), None) if named else None
    text = index.source.text
    if match and code in codes and len(codes) > 1:
        kept = ", ".join(c for c in codes if c != code)
        begin = comment.span.start + 1 + match.start("codes")
        yield Action(
            f"Remove `{code}` from the ignore comment",
            d,
            (Edit(begin, begin + len(match.group("codes")), kept),),
            preferred=True,
        )
        return
    # the whole comment, and the blanks before it
    start = comment.span.start
    while start > 0 and text[start - 1] in " \t":
        start -= 1
    yield Action(
        "Remove the ignore comment",
        d,
        (
            _whole_lines(text, start, comment.span.end)
            if not text[text.rfind("\n", 0, start) + 1 : start].strip()
            else Edit(start, comment.span.end, ""),
        ),
        preferred=True,
    )


def _ignore(index: Index, d: Diagnostic) -> Iterator[Action]:
    """``# flowc: ignore[CODE]`` on the line the finding starts on; on an item written
    over several lines that has an ignore comment naming a code already, CODE added to
    its first one (only that one counts there:
    :func:`~flowc.compiler.analysis.suppress.apply_ignores`). An ignore comment without
    brackets (which names nothing) is left as it is, after the new one."""
    assert d.span is not None
    text = index.source.text
    code = d.code.id
    title = f"Ignore {code} on this line (# flowc: ignore[{code}])"
    lines = joined_lines(index.flow).get(d.span.line)
    if lines is not None:
        for comment in index.flow.comments:
            match = IGNORE.match(comment.text) if comment.span.line in lines else None
            if match and named_codes(match):
                begin = comment.span.start + 1 + match.end("codes")
                yield Action(title, d, (Edit(begin, begin, f", {code}"),))
                return
    for comment in index.flow.comments:
        if comment.span.line != d.span.line:
            continue
        match = IGNORE.match(comment.text)
        if match and match.group("codes") is not None:
            begin = comment.span.start + 1 + match.end("codes")
            yield Action(title, d, (Edit(begin, begin, f", {code}"),))
        else:  # another comment: the ignore goes first, as flowc reads it only there
            begin = comment.span.start + 1
            rest = comment.text.lstrip()
            yield Action(
                title, d, (Edit(begin, comment.span.end, f" flowc: ignore[{code}] # {rest}"),)
            )
        return
    end = line_end(text, d.span.start)
    yield Action(title, d, (Edit(end, end, f"  # flowc: ignore[{code}]"),))


_FIXES = {
    W204: _priority_fix,
    W202: _remove_fix,
    W203: _remove_fix,
    E101: _speaker_fix,
    E107: _speaker_fix,
    W212: _max_turns_fix,
    X001: _unused_ignore_fix,
}


def actions(
    index: Index, diagnostics: tuple[Diagnostic, ...], first_line: int, last_line: int
) -> list[Action]:
    """The fixes for the findings on lines ``first_line`` .. ``last_line`` (1-based)."""
    out: list[Action] = []
    for d in diagnostics:
        if d.span is None or d.span.end_line < first_line or d.span.line > last_line:
            continue
        fix = _FIXES.get(d.code)
        if fix is not None:
            out.extend(fix(index, d))
        if not d.is_error and d.code is not X001:
            out.extend(_ignore(index, d))
    return out
