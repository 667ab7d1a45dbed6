"""Custom ``speaker_selection_method`` functions -> per-speaker guarded outcomes.

Classic calls ``fn(last_speaker, groupchat)`` before every turn and uses what it returns:
an agent (speaks next), ``None`` (the chat ends), or a method name (``"auto"``,
``"round_robin"``, ...). The recognisable shape — the one of AG2's own examples — is an
``if``/``elif`` chain on the last speaker whose branches return, possibly under tests
on the last message's content or on the number of messages::

    def state_transition(last_speaker, groupchat):
        messages = groupchat.messages
        if last_speaker is coder:
            if "exitcode: 1" in messages[-1]["content"]:
                return coder
            return executor
        elif last_speaker is executor:
            return scientist
        return None

Each path becomes an outcome ``(source, guards, returned expression)``; falling off the
end returns ``None``. Anything else makes the whole function unrecognised (None).
"""

from __future__ import annotations

import ast
from collections.abc import Callable

import attrs

from flowc.compiler.migrate import model as mm
from flowc.compiler.migrate.textpred import _expr as text_expr
from flowc.dsl import nodes as n

MSG = "__last_message__"


class Unsupported(Exception):
    """A statement the lowering does not understand; ``node`` says where."""

    def __init__(self, node: ast.AST, what: str):
        self.node, self.what = node, what
        super().__init__(what)


@attrs.frozen
class Outcome:
    source: str
    guards: tuple[n.Cond, ...]
    returned: ast.expr | None  # None: the function returns None (or falls off the end)
    #: a message text that satisfies the guards (when there is one guard and it is about text)
    witness: str | None = None


class _Lower:
    def __init__(self, fn: ast.FunctionDef, agent_name: Callable[[ast.expr], str | None]):
        params = [a.arg for a in fn.args.args]
        if len(params) != 2:
            raise Unsupported(fn, "the function does not take (last_speaker, groupchat)")
        self.speaker, self.groupchat = params
        self.agent_name = agent_name
        self.messages: set[str] = set()
        self.outcomes: list[Outcome] = []
        self.witnesses: dict[int, str | None] = {}

    # ── expressions ──

    def is_messages(self, node: ast.expr) -> bool:
        if isinstance(node, ast.Name):
            return node.id in self.messages
        return (isinstance(node, ast.Attribute) and node.attr == "messages"
                and isinstance(node.value, ast.Name) and node.value.id == self.groupchat)

    def speakers_of(self, test: ast.expr, sources: list[str]) -> list[str] | None:
        """The sources a test on ``last_speaker`` selects; None when it is not one."""
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
            parts = [self.speakers_of(v, sources) for v in test.values]
            if any(p is None for p in parts):
                return None
            chosen = {s for p in parts if p is not None for s in p}
            return [s for s in sources if s in chosen]
        if not isinstance(test, ast.Compare) or len(test.ops) != 1:
            return None
        op, left, right = test.ops[0], test.left, test.comparators[0]
        if isinstance(right, ast.Name) and right.id == self.speaker:
            left, right = right, left
        names: list[str] | None = None
        if isinstance(left, ast.Name) and left.id == self.speaker:
            if isinstance(op, ast.Is | ast.IsNot | ast.Eq | ast.NotEq):
                name = self.agent_name(right)
                names = [name] if name is not None else None
            elif isinstance(op, ast.In | ast.NotIn) and isinstance(right, ast.List | ast.Tuple | ast.Set):
                got = [self.agent_name(e) for e in right.elts]
                names = None if any(g is None for g in got) else [g for g in got if g]
        elif (isinstance(left, ast.Attribute) and left.attr == "name"
              and isinstance(left.value, ast.Name) and left.value.id == self.speaker
              and isinstance(op, ast.Eq | ast.NotEq)
              and isinstance(right, ast.Constant) and isinstance(right.value, str)):
            names = [right.value]
        if names is None:
            if isinstance(left, ast.Name) and left.id == self.speaker:
                raise Unsupported(test, "a test on the last speaker that names no agent of this file")
            return None
        if isinstance(op, ast.IsNot | ast.NotEq | ast.NotIn):
            return [s for s in sources if s not in names]
        return [s for s in sources if s in names]

    def guard(self, test: ast.expr) -> n.Cond:
        """A test on the last message or on the number of messages."""
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            left, op, right = test.left, test.ops[0], test.comparators[0]
            if (isinstance(left, ast.Call) and isinstance(left.func, ast.Name) and left.func.id == "len"
                    and len(left.args) == 1 and self.is_messages(left.args[0])
                    and isinstance(right, ast.Constant) and isinstance(right.value, int)):
                limit = {ast.LtE: right.value, ast.Lt: right.value - 1,
                         ast.Gt: right.value, ast.GtE: right.value - 1}.get(type(op))
                if limit is not None:
                    cond = mm.call_cond("turn_count_at_most", turns=limit)
                    return n.NotCond(cond, mm.S) if isinstance(op, ast.Gt | ast.GtE) else cond
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return n.NotCond(self.guard(test.operand), mm.S)
        rewritten = _LastMessage(self).visit(ast.fix_missing_locations(_copy(test)))
        pred = text_expr(rewritten, MSG)
        if pred is None:
            raise Unsupported(test, "a test the lowering does not recognise")
        self.witnesses[id(pred.cond)] = pred.witness
        return pred.cond

    # ── statements ──

    def walk(self, stmts: list[ast.stmt], sources: list[str], guards: tuple[n.Cond, ...]) -> list[str]:
        """Record outcomes; return the sources that reach the end of ``stmts``."""
        for st in stmts:
            if not sources:
                return []
            if isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant):
                continue  # docstring
            if isinstance(st, ast.Pass):
                continue
            if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
                if self.is_messages(st.value):
                    self.messages.add(st.targets[0].id)
                    continue
                raise Unsupported(st, "an assignment the lowering does not follow")
            if isinstance(st, ast.Return):
                for s in sources:
                    value = st.value
                    if isinstance(value, ast.Constant) and value.value is None:
                        value = None
                    witness = self.witnesses.get(id(guards[0])) if len(guards) == 1 else None
                    self.outcomes.append(Outcome(s, guards, value, witness))
                return []
            if isinstance(st, ast.If):
                chosen = self.speakers_of(st.test, sources)
                if chosen is not None:
                    rest = [s for s in sources if s not in chosen]
                    through = self.walk(st.body, chosen, guards) + self.walk(st.orelse, rest, guards)
                    sources = [s for s in sources if s in through]
                    continue
                cond = self.guard(st.test)
                if self.walk(st.body, sources, (*guards, cond)):
                    raise Unsupported(st, "a branch under a message test that does not return")
                sources = self.walk(st.orelse, sources, guards)
                continue
            raise Unsupported(st, f"a `{type(st).__name__}` statement")
        return sources


class _LastMessage(ast.NodeTransformer):
    """``messages[-1]`` / ``groupchat.messages[-1]`` -> the name ``__last_message__``."""

    def __init__(self, lower: _Lower) -> None:
        self.lower = lower

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        if (
            self.lower.is_messages(node.value)
            and isinstance(node.slice, ast.UnaryOp)
            and isinstance(node.slice.op, ast.USub)
            and isinstance(node.slice.operand, ast.Constant)
            and node.slice.operand.value == 1
        ):
            return ast.copy_location(ast.Name(MSG, ast.Load()), node)
        self.generic_visit(node)
        return node


def _copy(node: ast.expr) -> ast.expr:
    copied = ast.parse(ast.unparse(node), mode="eval").body
    return copied


def lower_selection(
    fn: ast.FunctionDef, sources: list[str], agent_name: Callable[[ast.expr], str | None]
) -> list[Outcome]:
    """Every (source, guards, returned expression) path of ``fn``, in evaluation order.

    Raises :class:`Unsupported` when the function is not the recognisable shape.
    """
    lower = _Lower(fn, agent_name)
    remaining = lower.walk(list(fn.body), list(sources), ())
    for s in remaining:
        lower.outcomes.append(Outcome(s, (), None))
    return lower.outcomes
