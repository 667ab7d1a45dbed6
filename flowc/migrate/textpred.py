r"""Classic text predicates (``is_termination_msg``) -> `.flow` text conditions.

A predicate is a ``lambda`` or a ``def`` over the message dict. On the content
(``x["content"]``, ``x.get("content", "")``, ``content_str(...)``, ``str(...)``,
``(... or "")``, then ``.strip()`` / ``.rstrip()`` / ``.lstrip()`` / ``.lower()`` /
``.upper()`` and a ``[-k:]`` tail) it recognises ``"T" in c`` / ``not in``, ``c == "T"`` /
``!=``, ``c.endswith(...)`` / ``startswith``, ``c.find("T") >= 0`` (``!= -1``, ``== -1``,
...), the truthiness of ``c`` and ``c is not None`` guards, ``"content" in x`` and
``isinstance(x, dict)`` (always true of a classic message), ``and`` / ``or`` / ``not`` /
``X if T else Y`` of those, and in a ``def`` local names and ``if ...: return ...`` chains.
Each becomes ``text_contains`` or ``text_matches`` (an anchored regular expression that says
exactly the same), or ``always``; a predicate that can never hold is refused, not guessed.
Content ``None`` (a tool-call message) is read as the empty text, as the flow sees it.

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

#: classic ``ConversableAgent``'s default ``is_termination_msg``, the group manager's when
#: its arguments set none: a message that is exactly "TERMINATE" (ag2 0.9.10)
DEFAULT_TERMINATION = call_cond("text_matches", pattern=r"\ATERMINATE\Z")

_TRANSFORMS = ("strip", "rstrip", "lstrip", "lower", "upper")
_CASE = ("lower", "upper")
#: the guard "the content is not empty" (``x.get("content", "") and ...``)
NON_EMPTY = "(?s)."
_MAX_DEPTH = 40


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


@attrs.frozen
class _View:
    """The content with string methods applied: ``before`` a ``[-tail:]`` slice, then
    ``after`` it (innermost first)."""

    before: tuple[str, ...]
    tail: int | None = None
    after: tuple[str, ...] = ()

    @property
    def transforms(self) -> tuple[str, ...]:
        return self.before + self.after


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


def _view(node: ast.expr, param: str) -> _View | None:
    ops: list[str] = []
    tail: int | None = None
    after: tuple[str, ...] = ()
    while True:
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _TRANSFORMS
            and not node.args
            and not node.keywords
        ):
            ops.append(node.func.attr)
            node = node.func.value
            continue
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "str"
            and len(node.args) == 1
            and not node.keywords
            and not _is_content(node, param)
        ):
            node = node.args[0]  # str() of a string
            continue
        sliced = _tail(node) if tail is None else None
        if sliced is not None:
            node, tail = sliced
            after, ops = tuple(reversed(ops)), []
            continue
        break
    if not _is_content(node, param):
        return None
    return _View(tuple(reversed(ops)), tail, after)


def _strs(node: ast.expr) -> list[str] | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Tuple) and all(
        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts
    ):
        return [
            e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)
        ]
    return None


def _case_ok(transforms: tuple[str, ...], text: str) -> bool | None:
    """Whether ``text`` can appear in content with these case transforms; None: mixed."""
    cases = {t for t in transforms if t in _CASE}
    if len(cases) > 1:
        return None
    if "lower" in cases:
        return text.lower() == text
    if "upper" in cases:
        return text.upper() == text
    return True


def _pattern(transforms: tuple[str, ...], text: str, *, start: bool, end: bool) -> str | None:
    """A regex for "content with ``transforms`` starts/ends with/equals ``text``"."""
    if not _case_ok(transforms, text):
        return None  # never true (a lowered text cannot hold upper-case letters), or mixed
    left = any(t in ("strip", "lstrip") for t in transforms)
    right = any(t in ("strip", "rstrip") for t in transforms)
    if (left and text[:1].isspace()) or (right and text[-1:].isspace()):
        return None
    body = _escape(text)
    if start:
        body = r"\A" + (r"\s*" if left else "") + body
    if end:
        body = body + (r"\s*" if right else "") + r"\Z"
    return ("(?i)" if any(t in _CASE for t in transforms) else "") + body


_Lowered = n.Cond | bool


class _Lowering:
    """One predicate over one message parameter: conditions, with witness candidates."""

    def __init__(self, param: str) -> None:
        self.param = param
        self.env: dict[str, ast.expr] = {}
        self.witnesses: list[str] = []

    # ── atoms ──

    def contains(self, view: _View, text: str) -> _Lowered | None:
        if view.tail is not None:
            return self.in_tail(view, text)
        ok = _case_ok(view.transforms, text)
        if ok is None or not ok:
            return None
        if text != text.strip() and any(
            t in ("strip", "lstrip", "rstrip") for t in view.transforms
        ):
            return None
        self.witnesses.append(text)
        if any(t in _CASE for t in view.transforms):
            return call_cond("text_matches", pattern="(?i)" + _escape(text))
        return call_cond("text_contains", text=text)

    def in_tail(self, view: _View, text: str) -> _Lowered | None:
        """``"T" in c[-k:]`` (AutoGen Studio's default termination test): T ends within the
        last k characters (after an ``rstrip``, trailing whitespace does not count)."""
        k = view.tail
        assert k is not None
        before = view.before
        if before not in ((), ("rstrip",), ("strip",)) or not text or len(text) > k or view.after:
            return None
        if text[-1:].isspace() and before:
            return None
        slack = k - len(text)
        self.witnesses.append("Plan complete. " + text)
        return call_cond(
            "text_matches",
            pattern="(?s)" + _escape(text) + f".{{0,{slack}}}" + (r"\s*\Z" if before else r"\Z"),
        )

    def edge(self, view: _View, values: list[str], *, start: bool, end: bool) -> _Lowered | None:
        if view.tail is not None:
            # c[-k:] == T with len(T) == k: c ends with T (case transforms after the slice only)
            if not (
                end
                and start
                and len(values) == 1
                and len(values[0]) == view.tail
                and all(t in _CASE for t in view.after)
            ):
                return None
            start = False
        patterns = [_pattern(view.transforms, v, start=start, end=end) for v in values]
        if any(p is None for p in patterns) or not patterns:
            return None
        for v in values:
            self.witnesses.append(v if start and end else "Done. " + v if end else v + " done.")
        conds: list[n.Cond] = [call_cond("text_matches", pattern=p) for p in patterns]
        return conds[0] if len(conds) == 1 else n.OrCond(tuple(conds), S)

    def non_empty(self, view: _View) -> _Lowered:
        if any(t in ("strip", "lstrip", "rstrip") for t in view.transforms):
            return call_cond("text_matches", pattern=r"\S")
        return call_cond("text_matches", pattern=NON_EMPTY)

    # ── expressions ──

    def name(self, node: ast.expr) -> ast.expr:
        for _ in range(_MAX_DEPTH):
            if isinstance(node, ast.Name) and node.id in self.env:
                node = self.env[node.id]
            else:
                break
        return node

    def expr(self, node: ast.expr, depth: int = 0) -> _Lowered | None:
        if depth > _MAX_DEPTH:
            return None
        node = self.name(node)
        if isinstance(node, ast.Constant) and isinstance(node.value, bool):
            return node.value
        if isinstance(node, ast.BoolOp):
            parts = [self.expr(v, depth + 1) for v in node.values]
            if any(p is None for p in parts):
                return None
            done = [p for p in parts if p is not None]
            return _and(done) if isinstance(node.op, ast.And) else _or(done)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            inner = self.expr(node.operand, depth + 1)
            return None if inner is None else _not(inner)
        if isinstance(node, ast.IfExp):
            test, yes, no = (self.expr(x, depth + 1) for x in (node.test, node.body, node.orelse))
            if test is None or yes is None or no is None:
                return None
            return _or([_and([test, yes]), _and([_not(test), no])])
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "bool"
            and len(node.args) == 1
        ):
            return self.expr(node.args[0], depth + 1)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "isinstance"
            and len(node.args) == 2
            and isinstance(node.args[0], ast.Name)
            and node.args[0].id == self.param
        ):
            return True  # classic always passes the message dict
        if isinstance(node, ast.Name) and node.id == self.param:
            return True  # a message dict is never empty
        view = _view(node, self.param)
        if view is not None:
            return self.non_empty(view)
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            return self.compare(node.ops[0], self.name(node.left), self.name(node.comparators[0]))
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("endswith", "startswith")
            and len(node.args) == 1
            and not node.keywords
        ):
            view = _view(self.name(node.func.value), self.param)
            values = _strs(self.name(node.args[0]))
            if view is None or not values or view.tail is not None:
                return None
            end = node.func.attr == "endswith"
            return self.edge(view, values, start=not end, end=end)
        return None

    def compare(self, op: ast.cmpop, left: ast.expr, right: ast.expr) -> _Lowered | None:
        if isinstance(op, ast.In | ast.NotIn):
            if (
                isinstance(left, ast.Constant)
                and left.value == "content"
                and isinstance(right, ast.Name)
                and right.id == self.param
            ):
                return isinstance(op, ast.In)  # classic messages always carry "content"
            needle = _strs(left)
            view = _view(right, self.param)
            if needle is None or len(needle) != 1 or view is None:
                return None
            found = self.contains(view, needle[0])
            return None if found is None else (found if isinstance(op, ast.In) else _not(found))
        if (
            isinstance(op, ast.Is | ast.IsNot)
            and isinstance(right, ast.Constant)
            and right.value is None
        ):
            if _view(left, self.param) is None:
                return None
            # a message without text (a tool call) has content None; the flow reads it as ""
            return isinstance(op, ast.IsNot) or call_cond("text_matches", pattern=r"\A\Z")
        find = self.find(left, right, op)
        if find is not None:
            return find
        if isinstance(op, ast.Eq | ast.NotEq):
            view, other = _view(left, self.param), right
            if view is None:
                view, other = _view(right, self.param), left
            value = _strs(other)
            if view is None or value is None or len(value) != 1:
                return None
            found = self.edge(view, value, start=True, end=True)
            return None if found is None else (found if isinstance(op, ast.Eq) else _not(found))
        return None

    def find(self, left: ast.expr, right: ast.expr, op: ast.cmpop) -> _Lowered | None:
        """``c.find("T") >= 0`` (and ``!= -1``, ``> -1``; ``== -1``, ``< 0``): a containment test."""
        if not (
            isinstance(left, ast.Call)
            and isinstance(left.func, ast.Attribute)
            and left.func.attr in ("find", "index")
            and len(left.args) == 1
            and not left.keywords
        ):
            return None
        number: object = None
        if isinstance(right, ast.Constant):
            number = right.value
        elif (
            isinstance(right, ast.UnaryOp)
            and isinstance(right.op, ast.USub)
            and isinstance(right.operand, ast.Constant)
        ):
            number = -right.operand.value if isinstance(right.operand.value, int) else None
        present = {(ast.GtE, 0), (ast.NotEq, -1), (ast.Gt, -1)}
        absent = {(ast.Eq, -1), (ast.Lt, 0), (ast.LtE, -1)}
        key = (type(op), number)
        if key not in present | absent:
            return None
        view = _view(self.name(left.func.value), self.param)
        needle = _strs(self.name(left.args[0]))
        if view is None or needle is None or len(needle) != 1:
            return None
        found = self.contains(view, needle[0])
        return None if found is None else (found if key in present else _not(found))

    # ── a def's body ──

    def body(self, stmts: list[ast.stmt], depth: int = 0) -> _Lowered | None:
        """``x = ...`` bindings, ``if t: ... return`` and ``return e``; falling off the end
        returns None (false)."""
        if depth > _MAX_DEPTH:
            return None
        for i, st in enumerate(stmts):
            if isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant):
                continue  # a docstring
            if (
                isinstance(st, ast.Assign)
                and len(st.targets) == 1
                and isinstance(st.targets[0], ast.Name)
            ):
                self.env[st.targets[0].id] = st.value
                continue
            if isinstance(st, ast.Return):
                return False if st.value is None else self.expr(st.value, depth + 1)
            if isinstance(st, ast.If):
                saved = dict(self.env)
                test = self.expr(st.test, depth + 1)
                yes = self.body([*st.body, *stmts[i + 1 :]], depth + 1)
                self.env = dict(saved)
                no = self.body([*st.orelse, *stmts[i + 1 :]], depth + 1)
                self.env = saved
                if test is None or yes is None or no is None:
                    return None
                return _or([_and([test, yes]), _and([_not(test), no])])
            return None
        return False


def _and(items: list[_Lowered]) -> _Lowered:
    out: list[n.Cond] = []
    for it in items:
        if it is False:
            return False
        if it is True:
            continue
        assert not isinstance(it, bool)
        out.extend(it.items if isinstance(it, n.AndCond) else (it,))
    # `content and "T" in content`: the non-empty guard adds nothing when the rest needs text
    guard = [c for c in out if _is_guard(c)]
    if guard and any(evaluate(c, "") is False for c in out if not _is_guard(c)):
        out = [c for c in out if not _is_guard(c)]
    unique = list(dict.fromkeys(out))
    if not unique:
        return True
    return unique[0] if len(unique) == 1 else n.AndCond(tuple(unique), S)


def _or(items: list[_Lowered]) -> _Lowered:
    out: list[n.Cond] = []
    for it in items:
        if it is True:
            return True
        if it is False:
            continue
        assert not isinstance(it, bool)
        out.extend(it.items if isinstance(it, n.OrCond) else (it,))
    unique = list(dict.fromkeys(out))
    if not unique:
        return False
    return unique[0] if len(unique) == 1 else n.OrCond(tuple(unique), S)


def _not(item: _Lowered) -> _Lowered:
    if isinstance(item, bool):
        return not item
    if isinstance(item, n.NotCond):
        return item.item
    return n.NotCond(item, S)


def _is_guard(cond: n.Cond) -> bool:
    return (
        isinstance(cond, n.CallCond)
        and cond.name.value == "text_matches"
        and cond.args[0].value.value == NON_EMPTY
    )


def text_expression(node: ast.expr, param: str) -> TextPredicate | None:
    """A boolean expression over the content of the message named ``param``, or None."""
    low = _Lowering(param)
    return _predicate(low, low.expr(node))


def _predicate(low: _Lowering, cond: _Lowered | None) -> TextPredicate | None:
    if cond is None or cond is False:
        return None  # unrecognised, or never true: refused, not guessed
    if cond is True:
        return TextPredicate(n.AlwaysCond(S), "anything")
    witness = next((w for w in low.witnesses if evaluate(cond, w)), None)
    return TextPredicate(cond, witness)


def text_predicate(node: ast.expr, functions: Any) -> TextPredicate | None:
    """Translate a predicate over a classic message dict, or None when not recognised.

    ``node`` is a ``lambda`` or the name of a ``def`` (looked up in ``functions``: a
    name -> ``FunctionDef`` mapping, or a function from the name node to its ``def``).
    A ``def`` may bind local names and return under ``if`` tests.
    """
    if isinstance(node, ast.Lambda):
        params = node.args.args
        if len(params) != 1:
            return None
        return text_expression(node.body, params[0].arg)
    fn = None
    if isinstance(node, ast.Name) and callable(functions):
        fn = functions(node)
    elif isinstance(node, ast.Name) and functions is not None and node.id in functions:
        fn = functions[node.id]
    if fn is not None:
        if len(fn.args.args) != 1:
            return None
        low = _Lowering(fn.args.args[0].arg)
        return _predicate(low, low.body(list(fn.body)))
    return None


def evaluate(cond: n.Cond, text: str) -> bool | None:
    """Evaluate a text condition on ``text`` (None when it is not a pure text condition)."""
    if isinstance(cond, n.AlwaysCond):
        return True
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
