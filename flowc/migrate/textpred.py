r"""Classic text predicates (``is_termination_msg`` lambdas) -> `.flow` text conditions.

Recognised, on the message content (``x["content"]``, ``x.get("content", "")``,
``content_str(...)``, ``str(...)``, ``(... or "")``, then ``.strip()`` /
``.rstrip()`` / ``.lstrip()`` / ``.lower()``): ``"T" in c``, ``"T" not in c``,
``c == "T"``, ``c != "T"``, ``c.endswith("T")``, ``c.startswith("T")``, and
``and`` / ``or`` / ``not`` of those. Each becomes ``text_contains`` or
``text_matches`` (an anchored regular expression that says exactly the same).

>>> import ast
>>> from flowc.dsl.formatter import format_condition
>>> tree = ast.parse('lambda m: m.get("content", "").rstrip().endswith("TERMINATE")', mode="eval")
>>> p = text_predicate(tree.body, None)
>>> print(format_condition(p.cond), "/", p.witness)
text_matches(pattern = "TERMINATE\\s*\\Z") / Done. TERMINATE
"""

from __future__ import annotations

import ast
import re
from typing import Any

import attrs

from flowc.dsl import nodes as n
from flowc.migrate.model import S, call_cond

_TRANSFORMS = ("strip", "rstrip", "lstrip", "lower")


@attrs.frozen
class TextPredicate:
    """A recognised predicate; ``witness`` is a text that satisfies it (or None)."""

    cond: n.Cond
    witness: str | None


def _escape(text: str) -> str:
    """``re.escape`` without the needless backslash before spaces (easier to read)."""
    return re.escape(text).replace("\\ ", " ")


def _is_content(node: ast.expr, param: str) -> bool:
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or) and len(node.values) == 2:
        fallback = node.values[1]
        return (
            _is_content(node.values[0], param)
            and isinstance(fallback, ast.Constant)
            and fallback.value == ""
        )
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("content_str", "str")
        and len(node.args) == 1
        and not node.keywords
    ):
        return _is_content(node.args[0], param)
    if isinstance(node, ast.Subscript):
        return (
            isinstance(node.value, ast.Name)
            and node.value.id == param
            and isinstance(node.slice, ast.Constant)
            and node.slice.value == "content"
        )
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "get"
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == param
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and node.args[0].value == "content"
        and len(node.args) <= 2
    ):
        return len(node.args) == 1 or (
            isinstance(node.args[1], ast.Constant) and node.args[1].value in ("", None)
        )
    return False


def _content(node: ast.expr, param: str) -> tuple[str, ...] | None:
    """The transforms applied to the content (innermost first), or None."""
    transforms: list[str] = []
    while (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in _TRANSFORMS
        and not node.args
        and not node.keywords
    ):
        transforms.append(node.func.attr)
        node = node.func.value
    if not _is_content(node, param):
        return None
    return tuple(reversed(transforms))


def _strs(node: ast.expr) -> list[str] | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Tuple) and all(
        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts
    ):
        return [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return None


def _pattern(transforms: tuple[str, ...], text: str, *, start: bool, end: bool) -> str | None:
    """A regex for "content with ``transforms`` starts/ends with/equals ``text``"."""
    lower = "lower" in transforms
    if lower and text.lower() != text:
        return None  # never true: a lowered text cannot hold upper-case letters
    left = any(t in ("strip", "lstrip") for t in transforms)
    right = any(t in ("strip", "rstrip") for t in transforms)
    if (left and text[:1].isspace()) or (right and text[-1:].isspace()):
        return None
    body = _escape(text)
    if start:
        body = r"\A" + (r"\s*" if left else "") + body
    if end:
        body = body + (r"\s*" if right else "") + r"\Z"
    return ("(?i)" if lower else "") + body


def _tail(node: ast.expr) -> tuple[ast.expr, int] | None:
    """``X[-k:]`` -> (X, k)."""
    if (
        isinstance(node, ast.Subscript)
        and isinstance(node.slice, ast.Slice)
        and node.slice.upper is None
        and node.slice.step is None
        and isinstance(node.slice.lower, ast.UnaryOp)
        and isinstance(node.slice.lower.op, ast.USub)
        and isinstance(node.slice.lower.operand, ast.Constant)
        and isinstance(node.slice.lower.operand.value, int)
        and not isinstance(node.slice.lower.operand.value, bool)
        and node.slice.lower.operand.value > 0
    ):
        return node.value, node.slice.lower.operand.value
    return None


def _in_tail(text: str, transforms: tuple[str, ...], k: int, *, negate: bool) -> TextPredicate | None:
    """``"T" in c[-k:]`` (AutoGen Studio's default termination test): T ends within the
    last k characters (after an ``rstrip``, trailing whitespace does not count)."""
    if transforms not in ((), ("rstrip",), ("strip",)) or not text or len(text) > k:
        return None
    if any(ch.isspace() for ch in text[-1:]) and transforms:
        return None
    slack = k - len(text)
    pattern = "(?s)" + _escape(text) + f".{{0,{slack}}}" + (r"\s*\Z" if transforms else r"\Z")
    cond: n.Cond = call_cond("text_matches", pattern=pattern)
    if negate:
        return TextPredicate(n.NotCond(cond, S), None)
    return TextPredicate(cond, "Plan complete. " + text)


def _atom(node: ast.expr, param: str) -> TextPredicate | None:
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        op, left, right = node.ops[0], node.left, node.comparators[0]
        if isinstance(op, ast.In | ast.NotIn):
            needle = _strs(left)
            tail = _tail(right)
            transforms = _content(tail[0] if tail else right, param)
            if needle is None or len(needle) != 1 or transforms is None:
                return None
            text = needle[0]
            if tail is not None:
                return _in_tail(text, transforms, tail[1], negate=isinstance(op, ast.NotIn))
            if "lower" in transforms:
                if text.lower() != text:
                    return None
                cond: n.Cond = call_cond("text_matches", pattern="(?i)" + _escape(text))
            else:
                cond = call_cond("text_contains", text=text)
            if isinstance(op, ast.NotIn):
                return TextPredicate(n.NotCond(cond, S), None)
            return TextPredicate(cond, text)
        if isinstance(op, ast.Eq | ast.NotEq):
            transforms = _content(left, param)
            other = right
            if transforms is None:
                transforms, other = _content(right, param), left
            value = _strs(other)
            if transforms is None or value is None or len(value) != 1:
                return None
            pattern = _pattern(transforms, value[0], start=True, end=True)
            if pattern is None:
                return None
            cond = call_cond("text_matches", pattern=pattern)
            if isinstance(op, ast.NotEq):
                return TextPredicate(n.NotCond(cond, S), None)
            return TextPredicate(cond, value[0])
        return None
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("endswith", "startswith")
        and len(node.args) == 1
        and not node.keywords
    ):
        transforms = _content(node.func.value, param)
        values = _strs(node.args[0])
        if transforms is None or not values:
            return None
        end = node.func.attr == "endswith"
        patterns = [_pattern(transforms, v, start=not end, end=end) for v in values]
        if any(p is None for p in patterns):
            return None
        conds = [call_cond("text_matches", pattern=p) for p in patterns]
        witness = ("Done. " + values[0]) if end else (values[0] + " done.")
        if len(conds) == 1:
            return TextPredicate(conds[0], witness)
        return TextPredicate(n.OrCond(tuple(conds), S), witness)
    return None


def text_expression(node: ast.expr, param: str) -> TextPredicate | None:
    """A boolean expression over the content of the message named ``param``, or None."""
    if isinstance(node, ast.BoolOp):
        parts = [text_expression(v, param) for v in node.values]
        if any(p is None for p in parts):
            return None
        items = tuple(p.cond for p in parts if p is not None)
        if isinstance(node.op, ast.Or):
            return TextPredicate(n.OrCond(items, S), parts[0].witness if parts[0] else None)
        return TextPredicate(n.AndCond(items, S), None)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        inner = text_expression(node.operand, param)
        return TextPredicate(n.NotCond(inner.cond, S), None) if inner is not None else None
    return _atom(node, param)


def _body_of(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.expr | None:
    body = list(fn.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # docstring
    if len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None:
        return body[0].value
    return None


def text_predicate(node: ast.expr, functions: Any) -> TextPredicate | None:
    """Translate a predicate over a classic message dict, or None when not recognised.

    ``node`` is a ``lambda`` or the name of a ``def`` (looked up in ``functions``,
    a name -> ``FunctionDef`` mapping) whose body is a single ``return``.
    """
    if isinstance(node, ast.Lambda):
        params = node.args.args
        if len(params) != 1:
            return None
        return text_expression(node.body, params[0].arg)
    if isinstance(node, ast.Name) and functions is not None and node.id in functions:
        fn = functions[node.id]
        if len(fn.args.args) != 1:
            return None
        body = _body_of(fn)
        return text_expression(body, fn.args.args[0].arg) if body is not None else None
    return None


def evaluate(cond: n.Cond, text: str) -> bool | None:
    """Evaluate a text condition on ``text`` (None when it is not a pure text condition)."""
    if isinstance(cond, n.CallCond):
        args = {a.name.value: a.value.value for a in cond.args}
        if cond.name.value == "text_contains":
            return str(args["text"]) in text
        if cond.name.value == "text_matches":
            return re.search(str(args["pattern"]), text) is not None
        return None
    if isinstance(cond, n.NotCond):
        inner = evaluate(cond.item, text)
        return None if inner is None else not inner
    if isinstance(cond, n.AndCond | n.OrCond):
        values = [evaluate(c, text) for c in cond.items]
        if any(v is None for v in values):
            return None
        return all(values) if isinstance(cond, n.AndCond) else any(values)
    return None
