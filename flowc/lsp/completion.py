"""Completion: what may be written at the cursor.

The keywords come from the grammar itself: the tokens before the cursor are fed to
Lark's interactive LALR parser (the parser ``flowc`` reads files with), and the
terminals it accepts next are the candidates. Where it accepts a name, the tokens just
before the cursor say which kind (``from`` / ``then`` / ``start`` -> a speaker, ``tool``
/ ``calls`` -> a tool, ``context.`` / ``sets`` -> a context key, ...) and the last good
:class:`~flowc.lsp.index.Index` gives the declared names; where it accepts a string
after ``terminate`` or ``finishes``, the reasons the flow already uses (after
``expect terminate`` and a property's ``ends``, those some run closes with too).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import attrs
from lark import Token
from lark.exceptions import UnexpectedInput
from lark.lexer import PatternStr

from flowc.compiler.tool_effects import finish_reason, terminate_reason
from flowc.dsl import nodes as n
from flowc.dsl.formatter import format_name
from flowc.dsl.parser import _parser, tokens
from flowc.lsp.index import CONDITION, KEY, SPEAKER, TARGET, TOOL, Index

KEYWORD, REASON = "keyword", "reason"

#: keywords that start a statement wherever they stand outside brackets (``initiator``
#: is also a target, ``context`` also starts a condition when a `.` follows)
_STATEMENT_STARTS = frozenset(
    {
        "FLOW",
        "SPEAKER",
        "SPEAKERS",
        "START",
        "MAX_TURNS",
        "CONTEXT",
        "WHEN",
        "OTHERWISE",
        "SEQUENCE",
        "ROUND_ROBIN",
        "CONDITION",
        "TARGET",
        "SCENARIO",
        "PROPERTY",
    }
)
_OPEN = {"LBRACE": "RBRACE", "LPAR": "RPAR", "LSQB": "RSQB"}


@attrs.frozen
class Candidate:
    """One completion: the text to insert and what it is."""

    label: str
    kind: str
    detail: str = ""


def _keyword_of(terminal: str) -> str | None:
    try:
        term = _parser().get_terminal(terminal)
    except KeyError:
        return None
    pattern = term.pattern
    if isinstance(pattern, PatternStr) and pattern.value[:1].isalpha():
        return str(pattern.value)
    return None


def _fresh() -> Any:
    return _parser().parse_interactive("")


def _feed(toks: Sequence[Token]) -> Any | None:
    """An interactive parser after ``toks``, or None when they do not parse."""
    ip = _fresh()
    try:
        for tok in toks:
            ip.feed_token(tok)
    except (UnexpectedInput, Exception):
        return None
    return ip


def _recovering(toks: Sequence[Token]) -> tuple[Any, list[Token]]:
    """Feed ``toks``; after a token the parser refuses, start again at the next token
    a fresh parser accepts (an unfinished statement earlier in the file does not stop
    completion further down). Returns the parser and the tokens it took since it last
    started."""
    ip = _fresh()
    taken: list[Token] = []
    for tok in toks:
        try:
            ip.feed_token(tok)
            taken.append(tok)
            continue
        except Exception:
            pass
        ip = _fresh()
        taken = []
        try:
            ip.feed_token(tok)
            taken.append(tok)
        except Exception:
            ip = _fresh()
    return ip, taken


def _restart_point(toks: Sequence[Token]) -> int:
    """Where the statement around the cursor probably starts: the last statement keyword
    at the start of a line (formatted flows indent everything inside a block)."""
    for i in range(len(toks) - 1, -1, -1):
        tok = toks[i]
        if tok.type in _STATEMENT_STARTS and tok.column == 1:
            if tok.type == "CONTEXT" and i + 1 < len(toks) and toks[i + 1].type == "DOT":
                continue
            return i
    return 0


def _list_head(toks: Sequence[Token]) -> str | None:
    """The keyword a comma-separated list of names hangs from (``from a, b,``)."""
    for tok in reversed(toks):
        if tok.type in (
            "NAME",
            "QUOTED_NAME",
            "COMMA",
            "EQUAL",
            "NUMBER",
            "STRING",
            "TRUE",
            "FALSE",
            "NULL",
        ):
            continue  # `from a, b,` / `user sets a = 1, b = 2,`
        return tok.type
    return None


def _enclosing(toks: Sequence[Token]) -> str | None:
    """The keyword that opened the innermost `{` still open: SPEAKER, SCENARIO, CONTEXT."""
    depth = 0
    for i in range(len(toks) - 1, -1, -1):
        kind = toks[i].type
        if kind == "RBRACE":
            depth += 1
        elif kind == "LBRACE":
            if depth == 0:
                for back in range(i - 1, -1, -1):
                    if toks[back].type in ("SPEAKER", "SCENARIO", "CONTEXT", "WITH", "COLON"):
                        return toks[back].type
                    if toks[back].type in _STATEMENT_STARTS:
                        return toks[back].type
                return None
            depth -= 1
    return None


def _name_kinds(before: Sequence[Token]) -> tuple[str, ...]:
    """Which kinds of declared names fit where the parser accepts a name."""
    if not before:
        return ()
    prev = before[-1].type
    if prev in ("FROM", "START", "INITIATOR", "TO", "NEXT") or (
        prev == "COMMA" and _list_head(before) in ("FROM", "ROUND_ROBIN")
    ):
        return (SPEAKER,)
    if prev == "THEN":
        return (SPEAKER, TARGET)
    if prev in ("TOOL", "CALLS"):
        return (TOOL,)
    if prev in ("DOT", "CLEARS") or (prev == "COMMA" and _list_head(before) in ("SETS", "CLEARS")):
        return (KEY,)
    if prev == "SETS":
        # `sets KEY = ...` in a tool or a scenario turn, `sets KEY` in a human's block
        return (KEY,)
    if _in_property(before):
        pass  # a property names no custom condition (the parser refuses them there)
    elif prev in ("WHEN", "AND", "OR", "NOT") or (
        prev == "LPAR"
        and len(before) > 1
        and before[-2].type in ("WHEN", "AND", "OR", "NOT", "LPAR")
    ):
        return (CONDITION,)
    if prev in ("SEQUENCE", "ROUND_ROBIN", "VBAR") or str(before[-1]) == "->":
        return (SPEAKER,)
    if _enclosing(before) == "SCENARIO" and prev in (
        "LBRACE",
        "STRING",
        "NAME",
        "QUOTED_NAME",
        "NUMBER",
        "RSQB",
        "RBRACE",
        "TRUE",
        "FALSE",
        "NULL",
    ):
        return (SPEAKER,)  # a scenario turn starts with who speaks
    return ()


def _in_property(before: Sequence[Token]) -> bool:
    """Whether the statement being written (its tokens so far) is a ``property``."""
    return bool(before) and before[0].type == "PROPERTY"


def _reasons(flow: n.Flow, closing: bool = False, cap: bool = True) -> list[str]:
    """Every close reason the flow writes, in file order. With ``closing`` (after
    `expect terminate`), the reasons a run records instead: an empty `terminate ""` as
    "workflow_terminated", an empty `finishes ""` as "finished" (as AG2 closes them),
    and "max_turns" when the flow has a cap (and ``cap``), since no run closes with \"\"."""
    out: dict[str, None] = {}

    def visit(node: Any) -> None:
        if (
            isinstance(
                node,
                (
                    n.TerminateTarget,
                    n.FinishEffect,
                    n.ResultTerminate,
                    n.ExpectTerminate,
                    n.FinishTurn,
                ),
            )
            and node.reason is not None
        ):
            reason = node.reason.value
            if closing and isinstance(node, (n.TerminateTarget, n.ResultTerminate)):
                reason = terminate_reason(reason)
            elif closing and isinstance(node, (n.FinishEffect, n.FinishTurn)):
                reason = finish_reason(reason)
            if reason or not closing:
                out.setdefault(reason)
        elif closing and cap and isinstance(node, n.MaxTurnsDecl):
            out.setdefault("max_turns")
        elif isinstance(node, (tuple, list)):
            for item in node:
                visit(item)
        elif attrs.has(type(node)) and not isinstance(node, (n.Name, n.Value, n.Str)):
            for field in attrs.fields(type(node)):
                if field.name != "span":
                    visit(getattr(node, field.name))

    visit(flow.statements)
    return list(out)


#: what a reason offered is
_WRITTEN = "close reason used in this flow"
_RUNS_END = "a run of this flow closes with it"
_NO_RUN = "written in this flow, but no run of it closes with it"


def _reason_candidates(index: Index, closing: bool) -> list[Candidate]:
    """The reasons offered as a string after `terminate`, `finishes` (``closing``
    false: those the flow writes) or after `expect terminate` and a property's `ends`
    (``closing``): there, every reason some run closes with as the check found them
    (:attr:`Index.endings`, the reasons E111 lists), those the flow writes first, in
    file order, then the others; then the written ones no run closes with, said so
    (where the check cannot say, the written ones, and "max_turns" with a cap)."""
    endings = index.endings if closing else None
    if endings is None:
        return [Candidate(json.dumps(r), REASON, _WRITTEN) for r in _reasons(index.flow, closing)]
    written = _reasons(index.flow, closing, cap="max_turns" in endings)
    return [
        *(Candidate(json.dumps(r), REASON, _RUNS_END) for r in written if r in endings),
        *(Candidate(json.dumps(r), REASON, _RUNS_END) for r in sorted(endings - set(written))),
        *(Candidate(json.dumps(r), REASON, _NO_RUN) for r in written if r not in endings),
    ]


def _declared(index: Index, kind: str) -> list[str]:
    names: dict[str, None] = {}
    for occ in index.occurrences:
        # speakers, tools, conditions and targets by their declarations; context keys by
        # every use (a key is declared by being written)
        if occ.kind == kind and (occ.definition or kind == KEY):
            names.setdefault(occ.name)
    return list(names)


def complete(text: str, offset: int, index: Index | None) -> tuple[list[Candidate], int]:
    """The candidates at ``offset`` in ``text`` and where the word they replace starts."""
    prefix = text[:offset]
    toks = list(tokens(prefix))
    last_end = toks[-1].end_pos if toks else 0
    gap = prefix[last_end or 0 :]
    start = offset
    typed = ""
    if toks and not gap and (toks[-1].type == "NAME" or _keyword_of(toks[-1].type)):
        typed = str(toks[-1])
        start = offset - len(typed)
        toks.pop()
        gap = prefix[toks[-1].end_pos or 0 : start] if toks else prefix[:start]
    elif gap.lstrip().startswith('"') and '"' not in gap.lstrip()[1:]:
        # an unfinished string: only a reason fits
        start = offset - len(gap.lstrip())
        typed = gap.lstrip()
        gap = ""
    if "#" in gap or '"' in gap or "`" in gap:
        return [], offset  # in a comment or an unfinished name: nothing to offer
    cut = _restart_point(toks)
    ip = _feed(toks[cut:])
    before = toks[cut:]
    if ip is None:
        ip, before = _recovering(toks)
    try:
        accepted = set(ip.accepts())
    except Exception:
        return [], offset
    out: list[Candidate] = []
    reason_here = (
        "STRING" in accepted
        and bool(before)
        and before[-1].type in ("TERMINATE", "FINISHES", "ENDS")
    )
    # after `expect terminate` and a property's `ends`: the reasons a run closes with
    closing = reason_here and (
        before[-1].type == "ENDS" or (len(before) > 1 and str(before[-2]) == "expect")
    )
    if typed.startswith('"'):
        if reason_here and index:
            out = _reason_candidates(index, closing)
        return [c for c in out if c.label.startswith(typed)], start
    if reason_here and index:
        out += _reason_candidates(index, closing)
    if "NAME" in accepted and index is not None:
        for kind in _name_kinds(before):
            out += [Candidate(format_name(name), kind) for name in _declared(index, kind)]
    # in a property, `always` is the pattern (right after the colon), never a condition
    no_always = _in_property(before) and before[-1].type != "COLON"
    for terminal in sorted(accepted):
        word = _keyword_of(terminal)
        if word is not None and not (no_always and word == "always"):
            out.append(Candidate(word, KEYWORD))
    if typed:
        out = [c for c in out if c.label.startswith(typed)]
    return out, start
