"""The fast path of the parser: a hand-written recursive-descent parser for valid files.

It accepts exactly the language of ``flowc/grammar/flow.lark`` and builds the same AST,
spans included, as the LALR parser of :mod:`flowc.dsl.lalr` does, in about a quarter of
the time, and without importing Lark at all (which is most of a small command's
start-up). It only ever answers for a file that parses cleanly: on anything else (a
syntax error, a number or string it would refuse, nesting past the limit) it gives up
and returns ``None``, and the caller parses again with the LALR parser, which says what
is wrong and where, with Lark's list of what it expected. A test compares the two
parsers' trees, spans included, on every flow of the test suite and on mutated ones.

>>> statements, comments = parse_valid('speaker a  # hi\\nwhen from a then a')
>>> [type(s).__name__ for s in statements], list(comments)
(['SpeakerDecl', 'Rule'], [11])
>>> parse_valid('when from a then') is None
True
"""

from __future__ import annotations

import json
import math
import pkgutil
import re
from array import array
from collections.abc import Iterator
from typing import Any

import attrs

from flowc.dsl import nodes as n
from flowc.dsl.keywords import MAX_NESTING
from flowc.inputs import MAX_INT_DIGITS
from flowc.source import Span, lone_returns_as_newlines, offsets

__all__ = ["parse_valid", "scan"]

#: recursion this parser allows itself before it hands the file to the LALR parser
#: (which needs no recursion: parentheses that only group may nest without limit)
_MAX_DEPTH = 150

_SURROGATE = re.compile("[\ud800-\udfff]")

# token kinds: a keyword or punctuation is its own text; these are the others
NAME, QUOTED, STRING, NUMBER, END = "NAME", "QUOTED_NAME", "STRING", "NUMBER", "$END"


class _GiveUp(Exception):
    """Not a clean parse: the LALR parser takes the file."""


def _grammar_tokens() -> tuple[re.Pattern[str], frozenset[str]]:
    """The scanner and the keywords, read from the grammar (one source of truth)."""
    # read through the package's loader: from an installed folder and from a zip on
    # sys.path alike (a path made from __file__ names no file inside a zip). Not through
    # importlib.resources as the LALR parser does: it would load tempfile, shutil, random,
    # bz2 and lzma into every command that parses, `flowc run` among them
    data = pkgutil.get_data("flowc", "grammar/flow.lark")
    if data is None:  # pragma: no cover - a loader without get_data (none of Python's own)
        raise ImportError("flowc: cannot read its grammar, flowc/grammar/flow.lark")
    grammar = data.decode("utf-8")
    patterns = dict(re.findall(r"^([A-Z_]+): /(.*)/$", grammar, re.M))
    literals = {
        word
        for line in grammar.splitlines()
        if not re.match(r"[A-Z_]+:|%", line)  # the rules, not the terminals' patterns
        for word in re.findall(r'"([^"\s]+)"', line.split("//", 1)[0])
    }
    keywords = frozenset(w for w in literals if w[0].isalpha())
    punct = sorted((p for p in literals if not p[0].isalpha()), key=len, reverse=True)
    # tokens never span lines: a line is scanned at a time, blanks skipped before each
    scanner = re.compile(
        r"[ \t\r\f]*(?:"
        + "|".join(
            [
                r"(#[^\n]*)",
                f"({patterns['NAME']})",
                f"({patterns['QUOTED_NAME']})",
                f"({patterns['STRING']})",
                f"({patterns['NUMBER']})",
                "(" + "|".join(re.escape(p) for p in punct) + ")",
                r"([^ \t\r\f])",
            ]
        )
        + ")"
    )
    return scanner, keywords


_SCANNER, _KEYWORDS = _grammar_tokens()

#: a token: (kind, text, offset, line, column)
_Token = tuple[str, str, int, int, int]


_COMMENT, _NAME, _QUOTED, _STRING, _NUMBER, _PUNCT, _BAD = range(1, 8)
_KINDS = {_QUOTED: QUOTED, _STRING: STRING, _NUMBER: NUMBER}


class _Lexer:
    """Tokens a chunk of lines at a time, so a large file never holds all its tokens
    (a statement is parsed from tokens, then only its tree is kept), nor all its lines;
    a comment is kept as the offset of its ``#`` (:class:`~flowc.dsl.comments.Comments`)."""

    def __init__(self, text: str, line: int = 1, offset: int = 0) -> None:
        self.text = lone_returns_as_newlines(text)  # (as a SourceFile reads it)
        self.pos = 0  # where the next line to scan starts in ``text``
        self.done = False
        self.offset = offset  # where it starts in the file
        #: the file's line number of the last line scanned (of ``text``'s first, less one)
        self.line = line - 1
        self.comments = offsets(offset + len(text))

    def more(self, tokens: list[_Token], count: int) -> None:
        """Append the tokens of the next ``count`` lines (the end token after the last)."""
        add = tokens.append
        comment = self.comments.append
        keywords = _KEYWORDS
        kinds = _KINDS
        finditer = _SCANNER.finditer
        text = self.text
        find = text.find
        line_start = self.offset
        pos = self.pos
        line = self.line
        stop = line + count
        line_text = ""
        while line < stop:
            end = find("\n", pos)
            last = end < 0
            line_text = text[pos:] if last else text[pos:end]
            line += 1
            code = line_text.lstrip(" \t\r\f")
            if not code or code[0] == "#":  # blank, or a comment alone (a file of them)
                if code:
                    comment(line_start + len(line_text) - len(code))
                line_start += len(line_text) + 1
                if last:
                    self.done = True
                    break
                pos = end + 1
                continue
            # blanks at the end of a line are left out before scanning (a comment gets
            # them back): the scanner skips blanks before a token, and where none follows,
            # it would try again from each blank (quadratic in a long run of them)
            for m in finditer(line_text.rstrip(" \t\r\f")):
                group: int = m.lastindex  # type: ignore[assignment]  # one group matches
                value = m.group(group)
                column = m.end() - len(value) + 1
                if group == _NAME:
                    add(
                        (
                            value if value in keywords else NAME,
                            value,
                            line_start + column - 1,
                            line,
                            column,
                        )
                    )
                elif group == _PUNCT:
                    add((value, value, line_start + column - 1, line, column))
                elif group == _COMMENT:
                    comment(line_start + column - 1)  # it runs to the end of the line
                elif group == _BAD:
                    raise _GiveUp
                else:
                    add((kinds[group], value, line_start + column - 1, line, column))
            line_start += len(line_text) + 1
            if last:
                self.done = True
                break
            pos = end + 1
        self.pos, self.offset, self.line = pos, line_start, line
        if self.done:
            # where Lark's end token is: after the last character, on the last line
            add((END, "", line_start - 1, line, len(line_text) + 1))
        else:
            add(_MORE)


def scan(text: str, *, comments: bool = False) -> Iterator[_Token]:
    """Every token of ``text`` as (kind, text, offset, line, column), blanks left out,
    comments (kind ``COMMENT``, to the end of their line) only when asked for, up to the
    first character no token starts with. A keyword's or punctuation's kind is its own
    text; the others' are ``NAME``, ``QUOTED_NAME``, ``STRING`` and ``NUMBER``. For tools
    that read a flow token by token (:func:`flowc.dsl.parser.tokens`), so that they see
    the tokens the parser sees.

    >>> [t[:2] for t in scan('when from a # hi\\n then "b" ?', comments=True)]
    [('when', 'when'), ('from', 'from'), ('NAME', 'a'), ('COMMENT', '# hi'), ('then', 'then'), ('STRING', '"b"')]
    >>> [t[:2] for t in scan('# hi\\rspeaker a', comments=True)]  # a lone \\r ends a line too
    [('COMMENT', '# hi'), ('speaker', 'speaker'), ('NAME', 'a')]
    >>> [t[:2] for t in scan('# hi \\r\\nspeaker a', comments=True)]  # and \\r\\n, before its \\r
    [('COMMENT', '# hi '), ('speaker', 'speaker'), ('NAME', 'a')]
    """
    text = lone_returns_as_newlines(text)  # (lines as a SourceFile reads them)
    keywords = _KEYWORDS
    finditer = _SCANNER.finditer
    pos, line = 0, 0
    while True:
        end = text.find("\n", pos)
        line_text = text[pos:] if end < 0 else text[pos:end]
        line += 1
        for m in finditer(line_text.rstrip(" \t\r\f")):  # as :meth:`_Lexer.more` does
            group: int = m.lastindex  # type: ignore[assignment]  # one group matches
            value = m.group(group)
            column = m.end() - len(value) + 1
            if group == _BAD:
                return
            if group == _COMMENT:
                if comments:  # with the blanks after it, which the scan left out (not
                    # the `\r` of a `\r\n`: the line ends there, as Comments has it)
                    value = line_text[column - 1 :].removesuffix("\r")
                    yield ("COMMENT", value, pos + column - 1, line, column)
                continue
            if group == _NAME:
                kind = value if value in keywords else NAME
            elif group == _PUNCT:
                kind = value
            else:
                kind = _KINDS[group]
            yield (kind, value, pos + column - 1, line, column)
        if end < 0:
            return
        pos = end + 1


#: the end of the tokens scanned so far (never matches: the parser asks for more)
_MORE: _Token = ("$MORE", "", 0, 0, 0)
#: lines scanned at a time
_CHUNK = 2000


def _tspan(t: _Token) -> Span:
    size = len(t[1])
    return Span(t[3], t[4], t[3], t[4] + size, t[2], t[2] + size)


def _span(first: Any, last: Any) -> Span:
    """From the start of ``first`` to the end of ``last`` (each a token or a node)."""
    if type(first) is tuple:
        line, column, start = first[3], first[4], first[2]
    else:
        s = first.span
        line, column, start = s.line, s.column, s.start
    if type(last) is tuple:
        size = len(last[1])
        return Span(line, column, last[3], last[4] + size, start, last[2] + size)
    e = last.span
    return Span(line, column, e.end_line, e.end_column, start, e.end)


def parse_valid(
    text: str, line: int = 1, offset: int = 0
) -> tuple[list[n.Statement], array[int]] | None:
    """``text``'s statements and comments (the offsets of their ``#``, as
    :class:`~flowc.dsl.comments.Comments` keeps them), or ``None`` when the file is not a
    clean parse (the LALR parser then reports why).

    ``text`` may be a part of a file that starts at the beginning of its line ``line``
    (1-based), ``offset`` characters into it: the spans are then the file's.

    >>> statements, _ = parse_valid('speaker b', line=3, offset=20)
    >>> statements[0].span
    Span(line=3, column=1, end_line=3, end_column=10, start=20, end=29)
    """
    try:
        lexer = _Lexer(text, line, offset)
        return _Parser(lexer).statements(), lexer.comments
    except (_GiveUp, RecursionError):
        return None


class _Parser:
    def __init__(self, lexer: _Lexer) -> None:
        self.lexer = lexer
        self.tokens: list[_Token] = []
        lexer.more(self.tokens, _CHUNK)
        self.i = 0
        self.depth = 0  # JSON and condition nesting, as the LALR parser counts it

    # ── tokens ──

    def peek(self) -> str:
        return self.tokens[self.i][0]

    def take(self, kind: str) -> _Token:
        t = self.tokens[self.i]
        if t[0] != kind:
            raise _GiveUp
        self.i += 1
        return t

    def accept(self, kind: str) -> _Token | None:
        t = self.tokens[self.i]
        if t[0] != kind:
            return None
        self.i += 1
        return t

    # ── leaves ──

    def name(self) -> n.Name:
        t = self.tokens[self.i]
        kind = t[0]
        if kind == NAME:
            self.i += 1
            return n.Name(t[1], _tspan(t))
        if kind == QUOTED:
            self.i += 1
            return n.Name(t[1][1:-1], _tspan(t), quoted=True)
        raise _GiveUp

    def string(self) -> n.Str:
        t = self.take(STRING)
        return n.Str(_decode(t[1]), _tspan(t))

    def opt_string(self) -> n.Str | None:
        return self.string() if self.tokens[self.i][0] == STRING else None

    def number(self) -> n.Value:
        return n.Value(_number(self.take(NUMBER)[1]), _tspan(self.tokens[self.i - 1]))

    def value(self) -> n.Value:
        v, _ = self._value(0)
        return v

    def _value(self, level: int) -> tuple[n.Value, int]:
        """A JSON value and its nesting (arrays and objects count one each)."""
        t = self.tokens[self.i]
        kind = t[0]
        self.i += 1
        if kind == STRING:
            return n.Value(_decode(t[1]), _tspan(t)), 0
        if kind == NUMBER:
            return n.Value(_number(t[1]), _tspan(t)), 0
        if kind == "true":
            return n.Value(True, _tspan(t)), 0
        if kind == "false":
            return n.Value(False, _tspan(t)), 0
        if kind == "null":
            return n.Value(None, _tspan(t)), 0
        if level >= MAX_NESTING:
            raise _GiveUp
        if kind == "[":
            items: list[Any] = []
            deepest = 0
            if self.tokens[self.i][0] != "]":
                while True:
                    v, d = self._value(level + 1)
                    items.append(v.value)
                    deepest = max(deepest, d)
                    if not self.accept(","):
                        break
            end = self.take("]")
            return n.Value(items, _span(t, end)), deepest + 1
        if kind == "{":
            pairs: dict[str, Any] = {}
            deepest = 0
            if self.tokens[self.i][0] != "}":
                while True:
                    key = _decode(self.take(STRING)[1])
                    if key in pairs:  # a key given twice: the full parser says where
                        raise _GiveUp
                    self.take(":")
                    v, d = self._value(level + 1)
                    pairs[key] = v.value
                    deepest = max(deepest, d)
                    if not self.accept(","):
                        break
            end = self.take("}")
            return n.Value(pairs, _span(t, end)), deepest + 1
        raise _GiveUp

    # ── statements ──

    def statements(self) -> list[n.Statement]:
        out: list[n.Statement] = []
        tokens = self.tokens
        lexer = self.lexer
        dispatch = _STATEMENTS
        chunk = grow = _CHUNK
        while True:
            i = self.i
            kind = tokens[i][0]
            if kind == END:
                return out
            if kind == "$MORE":  # every token scanned is used: scan the next lines
                tokens.clear()
                self.i = 0
                lexer.more(tokens, chunk)
                continue
            method = dispatch.get(kind)
            if method is None:
                raise _GiveUp
            try:
                statement = method(self)
                # a statement that ends where the scanned lines end may go on after them
                # (an optional part on the next line): it is parsed again with more lines
                complete = tokens[self.i] is not _MORE
            except _GiveUp:
                if lexer.done:
                    raise
                complete = False
            if complete:
                out.append(statement)
                grow = chunk
                continue
            # the statement may go on past the lines scanned: scan more, try again (twice
            # as many lines each time, so a statement of any length is parsed a few times)
            del tokens[:i]  # the statements before it are done with their tokens
            tokens.pop()  # the end of the scanned lines
            lexer.more(tokens, grow)
            grow *= 2
            self.i, self.depth = 0, 0

    def flow_decl(self) -> n.FlowDecl:
        first = self.take("flow")
        name = self.name()
        desc = self.opt_string()
        return n.FlowDecl(name, desc, _span(first, desc or name))

    def _human(self) -> _Token | None:
        if self.tokens[self.i][0] != ":":
            return None
        self.i += 1
        return self.take("human")

    def speaker_decl(self) -> n.SpeakerDecl:
        first = self.take("speaker")
        name = self.name()
        human = self._human()
        last: Any = human or name
        tools: list[n.ToolDecl] = []
        writes: list[n.WritesDecl] = []
        block = self.tokens[self.i][0] == "{"
        if block:
            self.i += 1
            while True:
                kind = self.tokens[self.i][0]
                if kind == "tool":
                    tools.append(self.tool_decl())
                elif kind == "sets":
                    writes.append(self.writes_decl())
                else:
                    break
            last = self.take("}")
        return n.SpeakerDecl(
            name,
            human is not None,
            tuple(tools),
            _span(first, last),
            block=block,
            writes=tuple(writes),
        )

    def writes_decl(self) -> n.WritesDecl:
        first = self.take("sets")
        keys = [self.name()]
        while self.accept(","):
            keys.append(self.name())
        return n.WritesDecl(tuple(keys), _span(first, keys[-1]))

    def tool_decl(self) -> n.ToolDecl:
        first = self.take("tool")
        name = self.name()
        alternatives: list[tuple[n.Effect, ...]] = []
        if self.tokens[self.i][0] in _EFFECTS:
            alternatives.append(self.effect_group())
            while self.accept("|"):
                if self.tokens[self.i][0] in (NAME, QUOTED):
                    target = self.name()
                    alternatives.append((n.HandoffEffect(target, target.span),))
                else:
                    alternatives.append(self.effect_group())
        last = alternatives[-1][-1] if alternatives else name
        return n.ToolDecl(name, tuple(alternatives), _span(first, last))

    def effect_group(self) -> tuple[n.Effect, ...]:
        effects = [self.effect()]
        while self.accept(","):
            effects.append(self.effect())
        return tuple(effects)

    def effect(self) -> n.Effect:
        t = self.tokens[self.i]
        kind = t[0]
        self.i += 1
        if kind == "sets":
            key = self.name()
            self.take("=")
            value = self.value()
            return n.SetEffect(key, value, _span(t, value))
        if kind == "clears":
            key = self.name()
            return n.ClearEffect(key, _span(t, key))
        if kind == "hands":
            self.take("off")
            self.take("to")
            target = self.name()
            return n.HandoffEffect(target, _span(t, target))
        if kind == "finishes":
            reason = self.opt_string()
            return n.FinishEffect(reason, _span(t, reason or t))
        raise _GiveUp

    def speakers_decl(self) -> n.SpeakersDecl:
        first = self.take("speakers")
        items = [self.speaker_item()]
        while self.accept(","):
            items.append(self.speaker_item())
        return n.SpeakersDecl(tuple(items), _span(first, items[-1]))

    def speaker_item(self) -> n.SpeakerDecl:
        name = self.name()
        human = self._human()
        return n.SpeakerDecl(name, human is not None, (), _span(name, human or name))

    def start_decl(self) -> n.StartDecl:
        first = self.take("start")
        name = self.name()
        return n.StartDecl(name, _span(first, name))

    def initiator_decl(self) -> n.InitiatorDecl:
        first = self.take("initiator")
        name = self.name()
        return n.InitiatorDecl(name, _span(first, name))

    def max_turns_decl(self) -> n.MaxTurnsDecl:
        first = self.take("max_turns")
        value = self.number()
        return n.MaxTurnsDecl(value, _span(first, value))

    def context_decl(self) -> n.ContextDecl:
        first = self.take("context")
        if self.tokens[self.i][0] != "{":
            entry = self.context_entry()
            return n.ContextDecl((entry,), False, _span(first, entry))
        self.i += 1
        entries: list[n.ContextEntry] = []
        if self.tokens[self.i][0] != "}":
            entries.append(self.context_entry())
            while self.accept(","):
                if self.tokens[self.i][0] == "}":
                    break
                entries.append(self.context_entry())
        last = self.take("}")
        return n.ContextDecl(tuple(entries), True, _span(first, last))

    def context_entry(self) -> n.ContextEntry:
        key = self.name()
        self.take("=")
        value = self.value()
        return n.ContextEntry(key, value, _span(key, value))

    def rule(self) -> n.Rule:
        first = self.take("when")
        cond = self.cond()
        self.take("then")
        target = self.target()
        priority = None
        t = self.accept("priority")
        if t is not None:
            value = self.number()
            if not isinstance(value.value, int):
                raise _GiveUp
            priority = n.Priority(value.value, _span(t, value))
        return n.Rule(cond, target, priority, _span(first, priority or target))

    def otherwise(self) -> n.Otherwise:
        first = self.take("otherwise")
        target = self.target()
        return n.Otherwise(target, _span(first, target))

    def sequence_decl(self) -> n.SequenceDecl:
        first = self.take("sequence")
        steps = [self.name()]
        self.take("->")
        steps.append(self.name())
        while self.accept("->"):
            steps.append(self.name())
        return n.SequenceDecl(tuple(steps), _span(first, steps[-1]))

    def round_robin_decl(self) -> n.RoundRobinDecl:
        first = self.take("round_robin")
        names = [self.name()]
        while self.accept(","):
            names.append(self.name())
        return n.RoundRobinDecl(tuple(names), _span(first, names[-1]))

    def _params(self) -> tuple[list[n.Param], _Token]:
        self.take("(")
        params: list[n.Param] = []
        if self.tokens[self.i][0] != ")":
            params.append(self.param())
            while self.accept(","):
                params.append(self.param())
        return params, self.take(")")

    def condition_decl(self) -> n.ConditionDecl:
        first = self.take("condition")
        name = self.name()
        params, last = self._params()
        return n.ConditionDecl(name, tuple(params), _span(first, last))

    def target_decl(self) -> n.TargetDecl:
        first = self.take("target")
        name = self.name()
        params, last = self._params()
        results: list[n.Result] | None = None
        if self.accept("->"):
            results = [self.result()]
            while self.accept("|"):
                results.append(self.result())
            last = results[-1]  # type: ignore[assignment]
        return n.TargetDecl(
            name, tuple(params), tuple(results) if results else None, _span(first, last)
        )

    def result(self) -> n.Result:
        t = self.accept("terminate")
        if t is not None:
            reason = self.opt_string()
            return n.ResultTerminate(reason, _span(t, reason or t))
        speaker = self.name()
        return n.ResultSpeaker(speaker, speaker.span)

    def param(self) -> n.Param:
        name = self.name()
        self.take(":")
        type_ref = self.type_ref(0)
        default = self.value() if self.accept("=") else None
        return n.Param(name, type_ref, default, _span(name, default or type_ref))

    def type_ref(self, level: int) -> n.TypeRef:
        t = self.tokens[self.i]
        if t[0] not in (NAME, "speaker") or level > _MAX_DEPTH:
            raise _GiveUp
        self.i += 1
        item = None
        last: Any = t
        if self.accept("["):
            item = self.type_ref(level + 1)
            last = self.take("]")
        return n.TypeRef(t[1], item, _span(t, last))

    # ── conditions: or < and < not < atom ──

    def cond(self) -> n.Cond:
        """A condition and (in ``self.depth``) its nesting, as the LALR parser counts it."""
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise _GiveUp
        first, depth = self.and_cond()
        if self.tokens[self.i][0] != "or":
            self.depth -= 1
            self.last_depth = depth
            return first
        items = [first]
        deepest = depth
        while self.accept("or"):
            item, depth = self.and_cond()
            items.append(item)
            deepest = max(deepest, depth)
        self.depth -= 1
        return self._nested(n.OrCond(tuple(items), _span(first, items[-1])), deepest)

    def _nested(self, node: n.Cond, deepest: int) -> n.Cond:
        depth = deepest + 1
        if depth > MAX_NESTING:
            raise _GiveUp
        self.last_depth = depth
        return node

    def and_cond(self) -> tuple[n.Cond, int]:
        first, depth = self.not_cond()
        if self.tokens[self.i][0] != "and":
            return first, depth
        items = [first]
        deepest = depth
        while self.accept("and"):
            item, depth = self.not_cond()
            items.append(item)
            deepest = max(deepest, depth)
        node = self._nested(n.AndCond(tuple(items), _span(first, items[-1])), deepest)
        return node, self.last_depth

    def not_cond(self) -> tuple[n.Cond, int]:
        t = self.tokens[self.i]
        if t[0] != "not":
            return self.atom()
        self.i += 1
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise _GiveUp
        item, depth = self.not_cond()
        self.depth -= 1
        node = self._nested(n.NotCond(item, _span(t, item)), depth)
        return node, self.last_depth

    def atom(self) -> tuple[n.Cond, int]:
        t = self.tokens[self.i]
        kind = t[0]
        if kind == "from":
            self.i += 1
            speakers = [self.name()]
            while self.accept(","):
                speakers.append(self.name())
            return n.FromCond(tuple(speakers), _span(t, speakers[-1])), 0
        if kind == "tool":
            self.i += 1
            tool = self.name()
            return n.ToolCond(tool, _span(t, tool)), 0
        if kind == "context":
            self.i += 1
            self.take(".")
            key = self.name()
            op = self.tokens[self.i][0]
            if op != "==" and op != "!=":
                raise _GiveUp
            self.i += 1
            value, depth = self._value(0)
            return n.ContextCond(key, op, value, _span(t, value)), depth
        if kind == "always":
            self.i += 1
            return n.AlwaysCond(_tspan(t)), 0
        if kind == "(":
            self.i += 1
            cond = self.cond()
            depth = self.last_depth
            self.take(")")
            return cond, depth
        if kind in (NAME, QUOTED):
            name = self.name()
            args, last, depth = self._args()
            return n.CallCond(name, args, _span(name, last)), depth
        raise _GiveUp

    def _args(self) -> tuple[tuple[n.Arg, ...], _Token, int]:
        self.take("(")
        args: list[n.Arg] = []
        deepest = 0
        if self.tokens[self.i][0] != ")":
            while True:
                name = self.name()
                self.take("=")
                value, depth = self._value(0)
                deepest = max(deepest, depth)
                args.append(n.Arg(name, value, _span(name, value)))
                if not self.accept(","):
                    break
        return tuple(args), self.take(")"), deepest

    # ── properties ──

    def property_decl(self) -> n.PropertyDecl:
        first = self.take("property")
        name = self.name()
        self.take(":")
        pattern = self.prop_pattern()
        scope = self.prop_scope()
        decl = n.PropertyDecl(name, pattern, scope, _span(first, scope or pattern))
        if n.refused_in_property(decl) is not None:
            raise _GiveUp  # `always`, a custom condition: the LALR parser says why
        return decl

    def prop_pattern(self) -> n.Pattern:
        t = self.tokens[self.i]
        kind = t[0]
        if kind in ("never", "always", "eventually", "after"):
            self.i += 1
            p = self.prop()
            if kind == "never":
                return n.NeverPattern(p, _span(t, p))
            if kind == "always":
                return n.AlwaysPattern(p, _span(t, p))
            if kind == "eventually":
                within = self.within()
                return n.EventuallyPattern(p, within, _span(t, within or p))
            self.take(",")
            s = self.prop()
            within = self.within()
            return n.RespondsPattern(p, s, within, _span(t, within or s))
        p = self.prop()
        if self.accept("at"):
            self.take("most")
            times = self.count(0)
            last = self.tokens[self.i]
            if last[0] != "times" and (last[0] != "time" or times != 1):
                raise _GiveUp
            self.i += 1
            return n.AtMostPattern(p, times, _span(p, last))
        self.take("only")
        self.take("after")
        s = self.prop()
        return n.OnlyAfterPattern(p, s, _span(p, s))

    def count(self, least: int) -> int:
        """A whole number >= ``least`` (the LALR parser words anything else)."""
        value = self.number().value
        if not isinstance(value, int) or isinstance(value, bool) or value < least:
            raise _GiveUp
        return value

    def within(self) -> n.Within | None:
        t = self.accept("within")
        if t is None:
            return None
        turns = self.count(1)
        unit = self.tokens[self.i]
        if unit[0] != "turns" and (unit[0] != "turn" or turns != 1):
            raise _GiveUp
        self.i += 1
        return n.Within(turns, _span(t, unit))

    def prop_scope(self) -> n.Scope | None:
        t = self.tokens[self.i]
        if t[0] == "before":
            self.i += 1
            r = self.prop()
            return n.BeforeScope(r, _span(t, r))
        if t[0] != "after":
            return None
        self.i += 1
        q = self.prop()
        if self.accept("before"):
            r = self.prop()
            return n.BetweenScope(q, r, _span(t, r))
        if self.accept("until"):
            r = self.prop()
            return n.AfterUntilScope(q, r, _span(t, r))
        return n.AfterScope(q, _span(t, q))

    # property expressions: or < and < not, previous < atom; the nesting as the LALR
    # parser counts it (parentheses that only group do not count)

    def prop(self) -> n.Cond:
        return self._prop()[0]

    def _prop(self) -> tuple[n.Cond, int]:
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise _GiveUp
        first, deepest = self._prop_and()
        if self.tokens[self.i][0] != "or":
            self.depth -= 1
            return first, deepest
        items = [first]
        while self.accept("or"):
            item, depth = self._prop_and()
            items.append(item)
            deepest = max(deepest, depth)
        self.depth -= 1
        return n.OrCond(tuple(items), _span(first, items[-1])), _deeper(deepest)

    def _prop_and(self) -> tuple[n.Cond, int]:
        first, deepest = self._prop_not()
        if self.tokens[self.i][0] != "and":
            return first, deepest
        items = [first]
        while self.accept("and"):
            item, depth = self._prop_not()
            items.append(item)
            deepest = max(deepest, depth)
        return n.AndCond(tuple(items), _span(first, items[-1])), _deeper(deepest)

    def _prop_not(self) -> tuple[n.Cond, int]:
        t = self.tokens[self.i]
        kind = t[0]
        if kind != "not" and kind != "previous":
            return self._prop_atom()
        self.i += 1
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise _GiveUp
        item, depth = self._prop_not()
        self.depth -= 1
        span = _span(t, item)
        node = n.NotCond(item, span) if kind == "not" else n.PreviousCond(item, span)
        return node, _deeper(depth)

    def _prop_atom(self) -> tuple[n.Cond, int]:
        t = self.tokens[self.i]
        kind = t[0]
        if kind == "from":
            self.i += 1
            speakers = [self.name()]
            tokens = self.tokens
            # a comma goes on with the list when a name follows (`after from a, b, S`)
            while tokens[self.i][0] == ",":
                after = tokens[self.i + 1]
                if after is _MORE:
                    raise _GiveUp  # the next lines say: parsed again with them
                if after[0] != NAME and after[0] != QUOTED:
                    break
                self.i += 1
                speakers.append(self.name())
            return n.FromCond(tuple(speakers), _span(t, speakers[-1])), 0
        if kind == "tool":
            self.i += 1
            tool = self.name()
            return n.ToolCond(tool, _span(t, tool)), 0
        if kind == "context":
            self.i += 1
            self.take(".")
            key = self.name()
            op = self.tokens[self.i][0]
            if op != "==" and op != "!=":
                raise _GiveUp
            self.i += 1
            value, depth = self._value(0)
            return n.ContextCond(key, op, value, _span(t, value)), depth
        if kind == "ends":
            self.i += 1
            reason = self.opt_string()
            return n.EndsCond(reason, _span(t, reason or t)), 0
        if kind == "turn":
            self.i += 1
            op = self.tokens[self.i][0]
            if op not in _TURN_OPS:
                raise _GiveUp
            self.i += 1
            number = self.count(0)
            return n.TurnCond(op, number, _span(t, self.tokens[self.i - 1])), 0
        if kind == "(":
            self.i += 1
            node, depth = self._prop()
            last = self.take(")")
            # in a property, a node's span covers the parentheses around it
            return attrs.evolve(node, span=_span(t, last)), depth
        raise _GiveUp  # `always` and custom conditions among them: refused in a property

    # ── targets ──

    def target(self) -> n.Target:
        t = self.tokens[self.i]
        kind = t[0]
        if kind in (NAME, QUOTED):
            name = self.name()
            if self.tokens[self.i][0] != "(":
                return n.SpeakerTarget(name, name.span)
            args, last, _ = self._args()
            return n.CallTarget(name, args, _span(name, last))
        self.i += 1
        if kind == "next":
            return n.NextTarget(_tspan(t))
        if kind == "stay":
            return n.StayTarget(_tspan(t))
        if kind == "initiator":
            return n.InitiatorTarget(_tspan(t))
        if kind == "terminate":
            reason = self.opt_string()
            return n.TerminateTarget(reason, _span(t, reason or t))
        raise _GiveUp

    # ── scenarios ──

    def scenario(self) -> n.Scenario:
        first = self.take("scenario")
        title = self.string()
        self.take("{")
        items: list[n.ScenarioItem] = []
        while self.tokens[self.i][0] != "}":
            items.append(self.scenario_item())
        last = self.take("}")
        return n.Scenario(title, tuple(items), _span(first, last))

    def _text(self) -> n.Str | None:
        return self.string() if self.accept(":") else None

    def scenario_item(self) -> n.ScenarioItem:
        t = self.tokens[self.i]
        if t[0] == "expect":
            self.i += 1
            kind = self.tokens[self.i][0]
            self.i += 1
            if kind == "next":
                speaker = self.name()
                return n.ExpectNext(speaker, _span(t, speaker))
            if kind == "terminate":
                reason = self.opt_string()
                return n.ExpectTerminate(reason, _span(t, reason or self.tokens[self.i - 1]))
            if kind == "context":
                self.take(".")
                key = self.name()
                self.take("==")
                value = self.value()
                return n.ExpectContext(key, value, _span(t, value))
            if kind == "turns":
                count = self.number()
                return n.ExpectTurns(count, _span(t, count))
            raise _GiveUp
        speaker = self.name()
        kind = self.tokens[self.i][0]
        self.i += 1
        if kind == ":":
            text = self.string()
            return n.SayTurn(speaker, text, _span(speaker, text))
        if kind == "calls":
            tool = self.name()
            args = None
            if self.accept("with"):
                args = self.value()
                if not isinstance(args.value, dict):
                    raise _GiveUp
            effects: tuple[n.Effect, ...] = ()
            if self.tokens[self.i][0] in _EFFECTS:
                effects = self.effect_group()
            said = self._text()
            last = said or (effects[-1] if effects else None) or args or tool
            return n.CallTurn(speaker, tool, args, said, _span(speaker, last), effects)
        if kind == "sets":
            assigns = [self.assign()]
            while self.accept(","):
                assigns.append(self.assign())
            said = self._text()
            return n.SetTurn(speaker, tuple(assigns), said, _span(speaker, said or assigns[-1]))
        if kind == "clears":
            keys = [self.name()]
            while self.accept(","):
                keys.append(self.name())
            said = self._text()
            return n.ClearTurn(speaker, tuple(keys), said, _span(speaker, said or keys[-1]))
        if kind == "hands":
            self.take("off")
            self.take("to")
            target = self.name()
            said = self._text()
            return n.HandoffTurn(speaker, target, said, _span(speaker, said or target))
        if kind == "finishes":
            reason = self.opt_string()
            return n.FinishTurn(speaker, reason, _span(speaker, reason or self.tokens[self.i - 1]))
        raise _GiveUp

    def assign(self) -> n.Assign:
        key = self.name()
        self.take("=")
        value = self.value()
        return n.Assign(key, value, _span(key, value))


_EFFECTS = frozenset({"sets", "clears", "hands", "finishes"})

_STATEMENTS: dict[str, Any] = {
    "flow": _Parser.flow_decl,
    "speaker": _Parser.speaker_decl,
    "speakers": _Parser.speakers_decl,
    "start": _Parser.start_decl,
    "initiator": _Parser.initiator_decl,
    "max_turns": _Parser.max_turns_decl,
    "context": _Parser.context_decl,
    "when": _Parser.rule,
    "otherwise": _Parser.otherwise,
    "sequence": _Parser.sequence_decl,
    "round_robin": _Parser.round_robin_decl,
    "condition": _Parser.condition_decl,
    "target": _Parser.target_decl,
    "scenario": _Parser.scenario,
    "property": _Parser.property_decl,
}

_TURN_OPS = frozenset({"==", "!=", "<", "<=", ">", ">="})


def _deeper(deepest: int) -> int:
    """The nesting of a node over children nested ``deepest``; past the limit, the LALR
    parser reports it."""
    if deepest + 1 > MAX_NESTING:
        raise _GiveUp
    return deepest + 1


def _decode(token: str) -> str:
    text: str = json.loads(token)
    if "\\u" in token and _SURROGATE.search(text):
        raise _GiveUp  # half of a surrogate pair: the LALR parser says so
    return text


def _number(token: str) -> Any:
    digits = len(token.lstrip("-").split(".")[0].split("e")[0].split("E")[0])
    if digits > MAX_INT_DIGITS:
        raise _GiveUp
    value = json.loads(token)
    if isinstance(value, float) and not math.isfinite(value):
        raise _GiveUp
    return value
