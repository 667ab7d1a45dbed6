"""Static reading of Python source with ``ast``: constants, variables, calls, spans.

Nothing here imports or runs the user's code. Values are resolved through simple
assignments (``name = <expr>``, the last one in the file wins), literals, string
concatenation, lists, tuples and dicts; anything else is "not static".

>>> import ast
>>> mod = PyModule.parse("<t>", "x = 'a' + 'b'\\ny = [x, 'c']\\n")
>>> mod.const(ast.parse("y", mode="eval").body)
['ab', 'c']
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import Any

from flowc.source import SourceFile, Span


class NotStatic(Exception):
    """A value that cannot be computed without running the code."""


def callee(call: ast.Call) -> str:
    """The last name of what is called: ``autogen.GroupChat(...)`` -> ``GroupChat``."""
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def kwarg(call: ast.Call, key: str, position: int | None = None) -> ast.expr | None:
    """The expression passed as ``key=`` (or at ``position``), if any."""
    for kw in call.keywords:
        if kw.arg == key:
            return kw.value
    if position is not None and len(call.args) > position:
        arg = call.args[position]
        return None if isinstance(arg, ast.Starred) else arg
    return None


class PyModule:
    """A parsed Python file with its assignments and function definitions."""

    def __init__(self, source: SourceFile, tree: ast.Module):
        self.source = source
        self.tree = tree
        self.assigned: dict[str, ast.expr] = {}
        self.functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
        nodes = sorted(
            (nd for nd in ast.walk(tree) if isinstance(nd, ast.Assign | ast.AnnAssign)),
            key=lambda nd: (nd.lineno, nd.col_offset),
        )
        for nd in nodes:
            targets = nd.targets if isinstance(nd, ast.Assign) else [nd.target]
            if nd.value is None:
                continue
            for t in targets:
                if isinstance(t, ast.Name):
                    self.assigned[t.id] = nd.value
        for fn in ast.walk(tree):
            if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                self.functions.setdefault(fn.name, fn)

    @classmethod
    def parse(cls, filename: str, text: str) -> PyModule:
        """Parse ``text``; raises ``SyntaxError`` (and ``RecursionError``/``ValueError``)."""
        return cls(SourceFile(filename, text), ast.parse(text, filename=filename))

    # ── spans ──

    def _offset(self, line: int, col_bytes: int) -> int:
        starts = self.source.line_starts
        if line < 1 or line > len(starts):
            return len(self.source.text)
        text = self.source.line_text(line)
        col = len(text.encode("utf-8")[:col_bytes].decode("utf-8", errors="ignore"))
        return starts[line - 1] + col

    def span(self, node: ast.AST) -> Span:
        """The span of an ``ast`` node in the file."""
        line = getattr(node, "lineno", 1)
        col = getattr(node, "col_offset", 0)
        end_line = getattr(node, "end_lineno", None) or line
        end_col = getattr(node, "end_col_offset", None)
        start = self._offset(line, col)
        end = self._offset(end_line, end_col) if end_col is not None else start + 1
        return self.source.span(start, max(end, start))

    # ── values ──

    def deref(self, node: ast.expr, depth: int = 0) -> ast.expr:
        """Follow ``name`` -> its assigned expression (a few hops)."""
        while isinstance(node, ast.Name) and node.id in self.assigned and depth < 20:
            node = self.assigned[node.id]
            depth += 1
        return node

    def const(self, node: ast.expr | None, depth: int = 0) -> Any:
        """The Python value of a static expression; raises :class:`NotStatic`."""
        if node is None or depth > 50:
            raise NotStatic("no value")
        node = self.deref(node)
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.List | ast.Tuple):
            return [self.const(e, depth + 1) for e in node.elts]
        if isinstance(node, ast.Dict):
            out: dict[Any, Any] = {}
            for k, v in zip(node.keys, node.values, strict=True):
                if k is None:
                    raise NotStatic("** in a dict")
                out[self.const(k, depth + 1)] = self.const(v, depth + 1)
            return out
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self.const(node.left, depth + 1), self.const(node.right, depth + 1)
            if isinstance(left, str) and isinstance(right, str):
                return left + right
            if isinstance(left, list) and isinstance(right, list):
                return left + right
            raise NotStatic("+ of mixed values")
        if isinstance(node, ast.JoinedStr):
            parts: list[str] = []
            for v in node.values:
                if isinstance(v, ast.Constant):
                    parts.append(str(v.value))
                elif isinstance(v, ast.FormattedValue) and v.format_spec is None and v.conversion == -1:
                    value = self.const(v.value, depth + 1)
                    parts.append(str(value))
                else:
                    raise NotStatic("f-string")
            return "".join(parts)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            value = self.const(node.operand, depth + 1)
            if isinstance(value, int | float):
                return -value
        if isinstance(node, ast.Call) and callee(node) == "dedent" and node.args:
            import textwrap

            value = self.const(node.args[0], depth + 1)
            if isinstance(value, str):
                return textwrap.dedent(value)
        raise NotStatic(type(node).__name__)

    def const_or(self, node: ast.expr | None, default: Any) -> Any:
        try:
            return self.const(node)
        except NotStatic:
            return default

    def elements(self, node: ast.expr | None) -> list[ast.expr] | None:
        """The element expressions of a list/tuple (through variables), else None."""
        if node is None:
            return None
        node = self.deref(node)
        if isinstance(node, ast.List | ast.Tuple):
            out: list[ast.expr] = []
            for e in node.elts:
                if isinstance(e, ast.Starred):
                    inner = self.elements(e.value)
                    if inner is None:
                        return None
                    out += inner
                else:
                    out.append(e)
            return out
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self.elements(node.left), self.elements(node.right)
            if left is None or right is None:
                return None
            return left + right
        return None

    def calls(self) -> Iterator[ast.Call]:
        """Every call in the file, in source order."""
        found = [nd for nd in ast.walk(self.tree) if isinstance(nd, ast.Call)]
        yield from sorted(found, key=lambda c: (c.lineno, c.col_offset))

    def docstring(self, fn_name: str) -> str | None:
        fn = self.functions.get(fn_name)
        return ast.get_docstring(fn) if fn is not None else None
