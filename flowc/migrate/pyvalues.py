"""The values migrate works out of a Python file without running it, and their bounds.

:class:`Values` is the part of :class:`~.pyread.PyModule` that computes the Python value of
a static expression (literals, ``+`` of strings and lists, f-strings, lists, tuples, dicts,
``textwrap.dedent``, members of an ``Enum`` class of the file) and the element expressions
of a list. Each value is bounded while it is built, never built first: at most
:data:`MAX_TEXT` characters and :data:`MAX_ITEMS` items, and one reading copies at most
:data:`MAX_BUILT`; each expression of the file is worked out once per reading, so that
``s = s + s`` written n times costs n steps, not 2**n. A value past a bound is
:class:`TooLarge`, recorded in ``too_large`` for the reader to report.
"""

from __future__ import annotations

import ast
import textwrap
from typing import Any


class NotStatic(Exception):
    """A value that cannot be computed without running the code."""


#: the most text one value migrate works out may hold (as the script reader's aliases may
#: expand to 1 MiB): a prompt is a few KB; past it the value is not resolved
MAX_TEXT = 1 << 20
#: the most items (through nested lists, tuples and dicts) one value migrate works out may
#: hold: a group chat has a few agents; past it the value is not resolved
MAX_ITEMS = 10_000
#: the most text one reading may build on its way to a value (each ``+`` and f-string
#: copies its parts): keeps a chain of ``s = s + ...`` from filling memory
MAX_BUILT = 8 * MAX_TEXT
#: the longest name migrate takes (of an agent, a tool, a context key: a value the
#: translation repeats in each rule and line that names it, where a prompt is written once);
#: OpenAI's API, which AG2 sends an agent's name to, takes at most 64 characters. A literal
#: is bounded alike, as a variable naming it costs the file a few characters per rule
MAX_NAME = 256
#: what :meth:`Values.const_name` records in :attr:`Values.too_large` for a name past
#: :data:`MAX_NAME` (the translation words its M001 apart from the other bounds')
NAME_TOO_LONG = f"it is a name of more than {MAX_NAME} characters"


class TooLarge(NotStatic):
    """A value over :data:`MAX_TEXT` / :data:`MAX_ITEMS` (or built through more than
    :data:`MAX_BUILT` of text): refused while it is built, never built first."""

    def __init__(self, node: ast.AST, what: str) -> None:
        super().__init__(what)
        self.node = node
        self.what = what


class _Reading:
    """One top-level reading of a value: each expression of the file is worked out once
    (``s = s + s`` read twice per line would take 2**n steps), and the text and items
    copied into new values are counted against :data:`MAX_BUILT` (the values kept for
    reuse take no more memory than that)."""

    def __init__(self) -> None:
        #: id(node) -> (node, its value with its (text, items) size); the node is kept so
        #: that its id is not reused by another within the reading
        self.memo: dict[int, tuple[ast.AST, tuple[Any, tuple[int, int]]]] = {}
        self.built = 0

    def spend(self, chars: int, node: ast.AST) -> None:
        """Count ``chars`` characters (or items) about to be copied into a new value."""
        self.built += chars
        if self.built > MAX_BUILT:
            raise TooLarge(
                node, f"working it out builds more than {MAX_BUILT // 2**20} MiB of text"
            )


def _check(size: tuple[int, int], node: ast.AST) -> tuple[int, int]:
    chars, items = size
    if chars > MAX_TEXT:
        raise TooLarge(node, f"it holds more than {MAX_TEXT // 2**20} MiB of text")
    if items > MAX_ITEMS:
        raise TooLarge(node, f"it holds more than {MAX_ITEMS:,} items")
    return size


def callee(call: ast.Call) -> str:
    """The last name of what is called: ``autogen.GroupChat(...)`` -> ``GroupChat``."""
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


class Values:
    """Static values of expressions, through the names a module binds (a mixin of
    :class:`~.pyread.PyModule`, which resolves the names)."""

    #: values too large to work out (:class:`TooLarge`), by where the bound was passed:
    #: (the expression, why); a reader reports them
    too_large: dict[tuple[int, int], tuple[ast.AST, str]]

    def deref(self, node: ast.expr, depth: int = 0) -> ast.expr:
        raise NotImplementedError

    def _enum_member(self, node: ast.expr) -> tuple[str, ast.expr] | None:
        raise NotImplementedError

    def const(self, node: ast.expr | None, depth: int = 0) -> Any:
        """The Python value of a static expression; raises :class:`NotStatic`, and
        :class:`TooLarge` (recorded in :attr:`too_large`) for a value past
        :data:`MAX_TEXT` or :data:`MAX_ITEMS`."""
        try:
            return self._const(node, depth, _Reading())[0]
        except TooLarge as err:
            self._too_large(err.node, err.what)
            raise

    def _too_large(self, node: ast.AST, what: str) -> None:
        self.too_large.setdefault(
            (getattr(node, "lineno", 0), getattr(node, "col_offset", 0)), (node, what)
        )

    def _const(
        self, node: ast.expr | None, depth: int, reading: _Reading
    ) -> tuple[Any, tuple[int, int]]:
        """:meth:`const` with the value's size (characters, items), each expression of the
        file worked out once per reading."""
        if node is None or depth > 50:
            raise NotStatic("no value")
        known = reading.memo.get(id(node))
        if known is not None and known[0] is node:
            return known[1]
        found = self._const_of(node, depth, reading)  # a failure ends the whole reading
        reading.memo[id(node)] = (node, found)
        return found

    def _const_of(
        self, node: ast.expr, depth: int, reading: _Reading
    ) -> tuple[Any, tuple[int, int]]:
        node = self.deref(node)
        at = node  # where a value past the bounds is reported: the expression that builds it
        if isinstance(node, ast.Constant):
            value = node.value
            if isinstance(value, str | bytes):
                return value, (len(value), 0)
            return value, (len(repr(value)) if isinstance(value, int | float | complex) else 4, 0)
        if isinstance(node, ast.List | ast.Tuple):
            items: list[Any] = []
            size = (0, 0)
            for e in node.elts:
                if isinstance(e, ast.Starred):
                    inner, (c, n) = self._const(e.value, depth + 1, reading)
                    if not isinstance(inner, list):
                        raise NotStatic("* of a non-list")
                    size = _check((size[0] + c, size[1] + n), at)
                    items += inner
                else:
                    item, (c, n) = self._const(e, depth + 1, reading)
                    size = _check((size[0] + c, size[1] + n + 1), at)
                    items.append(item)
            reading.spend(len(items), at)
            return items, size
        if isinstance(node, ast.Dict):
            out: dict[Any, Any] = {}
            size = (0, 0)
            for k, v in zip(node.keys, node.values, strict=True):
                if k is None:
                    raise NotStatic("** in a dict")
                key, (c1, n1) = self._const(k, depth + 1, reading)
                value, (c2, n2) = self._const(v, depth + 1, reading)
                size = _check((size[0] + c1 + c2, size[1] + n1 + n2 + 1), at)
                out[key] = value
            return out, size
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, (c1, n1) = self._const(node.left, depth + 1, reading)
            right, (c2, n2) = self._const(node.right, depth + 1, reading)
            if isinstance(left, str) and isinstance(right, str):
                size = _check((c1 + c2, 0), at)  # before the text is built
                reading.spend(c1 + c2, at)
                return left + right, size
            if isinstance(left, list) and isinstance(right, list):
                size = _check((c1 + c2, n1 + n2), at)
                reading.spend(len(left) + len(right), at)
                return left + right, size
            raise NotStatic("+ of mixed values")
        if isinstance(node, ast.JoinedStr):
            parts: list[str] = []
            chars = 0
            for v in node.values:
                if isinstance(v, ast.Constant):
                    part = str(v.value)
                elif (
                    isinstance(v, ast.FormattedValue)
                    and v.format_spec is None
                    and v.conversion == -1
                ):
                    value, (c, n) = self._const(v.value, depth + 1, reading)
                    # before str() writes it: the repr of a list writes a few characters
                    # per item, and an escape (10 characters at most) per character
                    _check((chars + (c if isinstance(value, str) else 10 * c + 4 * n + 64), 0), at)
                    part = str(value)
                else:
                    raise NotStatic("f-string")
                chars += len(part)
                _check((chars, 0), at)
                parts.append(part)
            reading.spend(chars, at)
            return "".join(parts), (chars, 0)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            value, size = self._const(node.operand, depth + 1, reading)
            if isinstance(value, int | float):
                return -value, size
        member = self._enum_member(node)
        if member is not None:
            name, expr = member
            if node.attr == "name":  # type: ignore[attr-defined]
                return name, (len(name), 0)
            return self._const(expr, depth + 1, reading)
        if isinstance(node, ast.Call) and callee(node) == "dedent" and node.args:
            value, size = self._const(node.args[0], depth + 1, reading)
            if isinstance(value, str):
                return textwrap.dedent(value), size
        raise NotStatic(type(node).__name__)

    def const_or(self, node: ast.expr | None, default: Any) -> Any:
        try:
            return self.const(node)
        except NotStatic:
            return default

    def const_name(self, node: ast.expr | None) -> Any:
        """:meth:`const` of a value the translation uses as a name: a name of more than
        :data:`MAX_NAME` characters is :class:`TooLarge`, recorded in :attr:`too_large` at
        ``node``. Of a dict, whose keys it uses as names (context keys), such a key is
        left out (recorded alike) and the others kept."""
        value = self.const(node)
        what = NAME_TOO_LONG
        if isinstance(value, dict):
            kept = {
                k: v for k, v in value.items() if not (isinstance(k, str) and len(k) > MAX_NAME)
            }
            if len(kept) < len(value):
                assert node is not None  # (a value was worked out of it)
                self._too_large(node, what)
            return kept
        if isinstance(value, str) and len(value) > MAX_NAME:
            assert node is not None
            self._too_large(node, what)
            raise TooLarge(node, what)
        return value

    def const_name_or(self, node: ast.expr | None, default: Any) -> Any:
        """:meth:`const_name`, or ``default`` when it cannot be worked out or is too long."""
        try:
            return self.const_name(node)
        except NotStatic:
            return default

    def elements(self, node: ast.expr | None) -> list[ast.expr] | None:
        """The element expressions of a list/tuple (through variables), else None; None too
        (recorded in :attr:`too_large`) for a list of more than :data:`MAX_ITEMS`."""
        if node is None:
            return None
        try:
            return self._elements(node, {})
        except TooLarge as err:
            self._too_large(err.node, err.what)
            return None

    def _elements(
        self, node: ast.expr, memo: dict[int, tuple[ast.expr, list[ast.expr] | None]]
    ) -> list[ast.expr] | None:
        known = memo.get(id(node))
        if known is not None and known[0] is node:
            return known[1]
        key = node
        node = at = self.deref(node)
        out: list[ast.expr] | None = None
        if isinstance(node, ast.List | ast.Tuple):
            out = []
            for e in node.elts:
                if isinstance(e, ast.Starred):
                    inner = self._elements(e.value, memo)
                    if inner is None:
                        out = None
                        break
                    if len(out) + len(inner) > MAX_ITEMS:
                        raise TooLarge(at, f"it holds more than {MAX_ITEMS:,} items")
                    out += inner
                else:
                    out.append(e)
            if out is not None and len(out) > MAX_ITEMS:
                raise TooLarge(at, f"it holds more than {MAX_ITEMS:,} items")
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self._elements(node.left, memo), self._elements(node.right, memo)
            if left is not None and right is not None:
                if len(left) + len(right) > MAX_ITEMS:
                    raise TooLarge(at, f"it holds more than {MAX_ITEMS:,} items")
                out = left + right
        memo[id(key)] = (key, out)
        return out


__all__ = [
    "MAX_BUILT",
    "MAX_ITEMS",
    "MAX_NAME",
    "MAX_TEXT",
    "NAME_TOO_LONG",
    "NotStatic",
    "TooLarge",
    "Values",
    "callee",
]
