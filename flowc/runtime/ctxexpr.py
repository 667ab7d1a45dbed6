"""AG2 ``ContextExpression`` strings: parsing and evaluation, shared by the migrate
translator (which turns simple expressions into built-in conditions) and the runtime's
``context_expression`` condition.

Syntax (``autogen.agentchat.group.context_expression``): ``${var}``, ``not`` / ``!``,
``and`` / ``&``, ``or`` / ``|``, ``== != < <= > >=``, ``len(${var})``, numbers, quoted
strings, ``True`` / ``False`` / ``None``, parentheses.

>>> tree = parse_context_expression("${count} >= 3 and not ${done}")
>>> evaluate_expression(tree, {"count": 3, "done": False})
True
>>> evaluate_expression(tree, {})   # a missing variable: false (classic raises KeyError)
False
"""

from __future__ import annotations

import re
from typing import Any

from flowc.compiler.model import COMPARISONS

__all__ = ["ExpressionError", "Node", "evaluate_expression", "parse_context_expression"]


class ExpressionError(ValueError):
    """A ``ContextExpression`` string that does not parse."""


class _Missing(Exception):
    """A ``${var}`` that the context does not hold."""


_TOKEN = re.compile(
    r"\s*(?:(?P<var>\$\{[A-Za-z_][A-Za-z0-9_]*\})|(?P<num>-?\d+(?:\.\d+)?)"
    r"|(?P<str>'[^']*'|\"[^\"]*\")|(?P<op>==|!=|<=|>=|<|>|\(|\)|!|&|\|)"
    r"|(?P<word>[A-Za-z_][A-Za-z0-9_]*))"
)

Node = tuple[Any, ...]


def _tokens(expression: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    text = expression.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise ExpressionError(f"unexpected text at {pos}: {text[pos : pos + 10]!r}")
        kind = m.lastgroup
        assert kind is not None
        out.append((kind, m.group(kind)))
        pos = m.end()
    return out


class _Parser:
    """or < and < not < comparison < atom, as AG2's ``ContextExpression``."""

    def __init__(self, tokens: list[tuple[str, str]]) -> None:
        self.tokens, self.i = tokens, 0

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self) -> tuple[str, str]:
        tok = self.peek()
        if tok is None:
            raise ExpressionError("the expression ends too early")
        self.i += 1
        return tok

    def at(self, *values: str) -> bool:
        tok = self.peek()
        return tok is not None and tok[1] in values and tok[0] in ("op", "word")

    def parse(self) -> Node:
        node = self.or_()
        if self.peek() is not None:
            raise ExpressionError(f"unexpected {self.peek()[1]!r}")  # type: ignore[index]
        return node

    def or_(self) -> Node:
        node = self.and_()
        while self.at("or", "|"):
            self.take()
            node = ("or", node, self.and_())
        return node

    def and_(self) -> Node:
        node = self.not_()
        while self.at("and", "&"):
            self.take()
            node = ("and", node, self.not_())
        return node

    def not_(self) -> Node:
        if self.at("not", "!"):
            self.take()
            return ("not", self.not_())
        return self.comparison()

    def comparison(self) -> Node:
        node = self.atom()
        if self.at("==", "!=", "<", "<=", ">", ">="):
            op = self.take()[1]
            node = ("cmp", op, node, self.atom())
        return node

    def atom(self) -> Node:
        kind, value = self.take()
        if kind == "var":
            return ("var", value[2:-1])
        if kind == "num":
            return ("lit", float(value) if "." in value else int(value))
        if kind == "str":
            return ("lit", value[1:-1])
        if kind == "word" and value in ("True", "true", "False", "false", "None", "null"):
            return ("lit", {"True": True, "true": True, "False": False, "false": False}.get(value))
        if kind == "word" and value == "len":
            if self.take()[1] != "(":
                raise ExpressionError("`len` needs parentheses")
            inner = self.atom()
            if self.take()[1] != ")":
                raise ExpressionError("`len(` is not closed")
            return ("len", inner)
        if value == "(":
            node = self.or_()
            if self.take()[1] != ")":
                raise ExpressionError("a parenthesis is not closed")
            return node
        raise ExpressionError(f"unexpected {value!r}")


def parse_context_expression(expression: str) -> Node:
    """Parse an AG2 ``ContextExpression`` string; raises :class:`ExpressionError`.

    >>> parse_context_expression("${a} and not ${b}")
    ('and', ('var', 'a'), ('not', ('var', 'b')))
    """
    return _Parser(_tokens(expression)).parse()


_COMPARE = COMPARISONS


def _eval(node: Node, context: dict[str, Any]) -> Any:
    kind = node[0]
    if kind == "lit":
        return node[1]
    if kind == "var":
        if node[1] not in context:
            raise _Missing(node[1])
        return context[node[1]]
    if kind == "len":
        return len(_eval(node[1], context))
    if kind == "not":
        return not _eval(node[1], context)
    if kind == "and":
        return bool(_eval(node[1], context)) and bool(_eval(node[2], context))
    if kind == "or":
        return bool(_eval(node[1], context)) or bool(_eval(node[2], context))
    return _COMPARE[node[1]](_eval(node[2], context), _eval(node[3], context))


def evaluate_expression(tree: Node, context: dict[str, Any]) -> bool:
    """Evaluate a parsed expression; a missing variable or an impossible comparison is false."""
    try:
        return bool(_eval(tree, context))
    except (_Missing, TypeError):
        return False
