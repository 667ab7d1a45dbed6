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
end returns ``None``. Anything else makes the whole function unrecognised — or, with
``partial=True``, only the statement that holds it: the sources (under the guards) that reach
that statement get one outcome carrying the :class:`Unsupported` and the statements that may
still run from there (``rest``), and every other branch is lowered as usual.

A test of ``last_speaker`` (an agent object) against a string is always false in Python
(agents define no ``__eq__``), so ``last_speaker == "Scientist"`` selects no source and
``!=`` every source; such tests are listed in ``never`` for the caller to report.

The AgentChat dialect (``SelectorGroupChat(selector_func=)`` / ``candidate_func=``) is the
same shape over AgentChat's message objects: the function takes the message thread (the task
message, source ``"user"``, first), the last speaker is ``messages[-1].source`` (compared with
a name or ``agent.name``), the text is ``messages[-1].content`` / ``.to_model_text()`` /
``.to_text()``, and a ``lambda`` with ``X if test else Y`` bodies reads as the ``if`` chain::

    def selector_func(messages):
        if messages[-1].source == "user":
            return planner.name
        if messages[-1].source == planner.name and "APPROVED" in messages[-1].to_model_text():
            return writer.name
        return None

``return X if test else Y`` reads as ``if test: return X`` / ``return Y`` in both dialects.

>>> import ast
>>> fn = ast.parse('lambda m: "b" if m[-1].source == "a" else None', mode="eval").body
>>> names = {"a": "a", "b": "b", "user": "user"}
>>> out = lower_selection(fn, ["user", "a", "b"],
...                       lambda e: names.get(e.value) if isinstance(e, ast.Constant) else None,
...                       dialect="agentchat")
>>> [(o.source, ast.unparse(o.returned) if o.returned else None) for o in out]
[('a', "'b'"), ('user', None), ('b', None)]
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Literal

import attrs

import flowc.migrate.model as mm
from flowc.dsl import nodes as n
from flowc.migrate.textpred import text_expression

MSG = "__last_message__"
#: AgentChat message attributes that hold the message's text
AGENTCHAT_TEXT = ("content",)
AGENTCHAT_TEXT_METHODS = ("to_model_text", "to_text")
Dialect = Literal["classic", "agentchat"]


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
    #: partial lowering: the statement that could not be lowered for this source under these
    #: guards; ``rest`` is that statement and the ones that may run after it
    unsupported: Unsupported | None = None
    rest: tuple[ast.stmt, ...] = ()


class _Lower:
    def __init__(
        self,
        fn: ast.FunctionDef | ast.AsyncFunctionDef,
        agent_name: Callable[[ast.expr], str | None],
        dialect: Dialect = "classic",
        partial: bool = False,
    ):
        params = [a.arg for a in fn.args.args]
        self.dialect = dialect
        self.partial = partial
        #: tests of the last speaker against a string (always false in Python)
        self.never: list[ast.expr] = []
        self.speaker: str | None = None
        self.groupchat: str | None = None
        self.messages: set[str] = set()
        if dialect == "agentchat":
            if len(params) != 1:
                raise Unsupported(fn, "the function does not take the message thread `(messages)`")
            self.messages.add(params[0])
        else:
            if len(params) != 2:
                raise Unsupported(fn, "the function does not take (last_speaker, groupchat)")
            self.speaker, self.groupchat = params
        self.agent_name = agent_name
        self.last: set[str] = set()  # names bound to the last message
        self.sources: set[str] = set()  # names bound to the last message's source (AgentChat)
        #: names bound to ``len(messages) + k``: the ``len`` call and ``k``
        self.lengths: dict[str, tuple[ast.expr, int]] = {}
        self.outcomes: list[Outcome] = []
        self.witnesses: dict[int, str | None] = {}

    # ── expressions ──

    def is_messages(self, node: ast.expr) -> bool:
        if isinstance(node, ast.Name):
            return node.id in self.messages
        return (
            self.groupchat is not None
            and isinstance(node, ast.Attribute)
            and node.attr == "messages"
            and isinstance(node.value, ast.Name)
            and node.value.id == self.groupchat
        )

    def is_last(self, node: ast.expr) -> bool:
        """``messages[-1]`` (or a name bound to it)."""
        if isinstance(node, ast.Name):
            return node.id in self.last
        return (
            isinstance(node, ast.Subscript)
            and self.is_messages(node.value)
            and isinstance(node.slice, ast.UnaryOp)
            and isinstance(node.slice.op, ast.USub)
            and isinstance(node.slice.operand, ast.Constant)
            and node.slice.operand.value == 1
        )

    def is_source(self, node: ast.expr) -> bool:
        """AgentChat's last speaker: ``messages[-1].source`` (or a name bound to it)."""
        if self.dialect != "agentchat":
            return False
        if isinstance(node, ast.Name):
            return node.id in self.sources
        return (
            isinstance(node, ast.Attribute) and node.attr == "source" and self.is_last(node.value)
        )

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
        if (isinstance(right, ast.Name) and right.id == self.speaker) or (
            self.is_source(right) and isinstance(op, ast.Eq | ast.NotEq)
        ):
            left, right = right, left
        names: list[str] | None = None
        if self.is_source(left):
            if isinstance(op, ast.Eq | ast.NotEq):
                name = self.agent_name(right)
                names = [name] if name is not None else None
            elif isinstance(op, ast.In | ast.NotIn) and isinstance(
                right, ast.List | ast.Tuple | ast.Set
            ):
                got = [self.agent_name(e) for e in right.elts]
                names = None if any(g is None for g in got) else [g for g in got if g]
            if names is None:
                raise Unsupported(test, "a test on the last speaker that names no participant")
        elif isinstance(left, ast.Name) and left.id == self.speaker:
            if isinstance(op, ast.Is | ast.IsNot | ast.Eq | ast.NotEq):
                name = "" if _is_str(right) else self.agent_name(right)
                names = [name] if name is not None else None
            elif isinstance(op, ast.In | ast.NotIn) and isinstance(
                right, ast.List | ast.Tuple | ast.Set
            ):
                got = ["" if _is_str(e) else self.agent_name(e) for e in right.elts]
                names = None if any(g is None for g in got) else [g for g in got if g]
            if names is not None and (
                _is_str(right)
                or (
                    isinstance(right, ast.List | ast.Tuple | ast.Set)
                    and any(_is_str(e) for e in right.elts)
                )
            ):
                # an agent object is never equal to a string: that part of the test is false
                self.never.append(test)
        elif (
            isinstance(left, ast.Attribute)
            and left.attr == "name"
            and isinstance(left.value, ast.Name)
            and left.value.id == self.speaker
            and isinstance(op, ast.Eq | ast.NotEq)
            and isinstance(right, ast.Constant)
            and isinstance(right.value, str)
        ):
            names = [right.value]
        if names is None:
            if isinstance(left, ast.Name) and left.id == self.speaker:
                raise Unsupported(
                    test, "a test on the last speaker that names no agent of this file"
                )
            return None
        if isinstance(op, ast.IsNot | ast.NotEq | ast.NotIn):
            return [s for s in sources if s not in names]
        return [s for s in sources if s in names]

    def length_of(self, node: ast.expr) -> tuple[ast.expr, int] | None:
        """``len(messages)``, ``len(messages) + k``, ``len(messages) - k`` (or a name bound to
        one): the ``len`` call and ``k``."""
        if isinstance(node, ast.Name):
            return self.lengths.get(node.id)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "len"
            and len(node.args) == 1
            and not node.keywords
            and self.is_messages(node.args[0])
        ):
            return node, 0
        if (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Add | ast.Sub)
            and isinstance(node.right, ast.Constant)
            and type(node.right.value) is int
        ):
            inner = self.length_of(node.left)
            if inner is not None:
                k = node.right.value if isinstance(node.op, ast.Add) else -node.right.value
                return inner[0], inner[1] + k
        return None

    def guard(self, test: ast.expr) -> n.Cond:
        """A test on the last message or on the number of messages."""
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            left, op, right = test.left, test.ops[0], test.comparators[0]
            counted = self.length_of(left)
            if (
                counted is not None
                and counted[1]
                and isinstance(right, ast.Constant)
                and type(right.value) is int
            ):
                # `len(messages) + k OP c` is `len(messages) OP c - k`
                left, right = (
                    counted[0],
                    ast.copy_location(ast.Constant(right.value - counted[1]), right),
                )
            elif counted is not None:
                left = counted[0]
            if (
                isinstance(left, ast.Call)
                and isinstance(left.func, ast.Name)
                and left.func.id == "len"
                and len(left.args) == 1
                and self.is_messages(left.args[0])
                and isinstance(right, ast.Constant)
                and type(right.value) is int  # never a bool: `len(messages) <= True`
            ):
                limit = {
                    ast.LtE: right.value,
                    ast.Lt: right.value - 1,
                    ast.Gt: right.value,
                    ast.GtE: right.value - 1,
                }.get(type(op))
                if limit is not None:
                    cond = mm.call_cond("turn_count_at_most", turns=limit)
                    return n.NotCond(cond, mm.S) if isinstance(op, ast.Gt | ast.GtE) else cond
                if isinstance(op, ast.Eq | ast.NotEq) and right.value >= 1:
                    # the thread always holds the kickoff: `len(messages) == 1` is the first turn
                    at_most = mm.call_cond("turn_count_at_most", turns=right.value)
                    exactly: n.Cond = (
                        at_most
                        if right.value == 1
                        else n.AndCond(
                            (
                                at_most,
                                n.NotCond(
                                    mm.call_cond("turn_count_at_most", turns=right.value - 1), mm.S
                                ),
                            ),
                            mm.S,
                        )
                    )
                    return n.NotCond(exactly, mm.S) if isinstance(op, ast.NotEq) else exactly
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return n.NotCond(self.guard(test.operand), mm.S)
        rewritten = _LastMessage(self).visit(ast.fix_missing_locations(_copy(test)))
        pred = text_expression(rewritten, MSG)
        if pred is None and isinstance(test, ast.BoolOp):
            # a mix of text and turn-count tests: combine the parts
            items = tuple(self.guard(v) for v in test.values)
            return n.OrCond(items, mm.S) if isinstance(test.op, ast.Or) else n.AndCond(items, mm.S)
        if pred is None:
            raise Unsupported(test, f"a test the lowering does not recognise: `{_short(test)}`")
        self.witnesses[id(pred.cond)] = pred.witness
        return pred.cond

    def split(self, test: ast.expr, sources: list[str]) -> tuple[list[str], ast.expr | None] | None:
        """``<speaker test> and <message tests>`` -> (the sources, the rest of the test)."""
        if not (isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And)):
            return None
        chosen = list(sources)
        rest: list[ast.expr] = []
        for v in test.values:
            picked = self.speakers_of(v, sources)
            if picked is None:
                rest.append(v)
            else:
                chosen = [s for s in chosen if s in picked]
        if len(rest) == len(test.values):
            return None
        if not rest:
            return chosen, None
        return chosen, rest[0] if len(rest) == 1 else ast.copy_location(
            ast.BoolOp(ast.And(), rest), test
        )

    # ── statements ──

    def walk(
        self,
        stmts: list[ast.stmt],
        sources: list[str],
        guards: tuple[n.Cond, ...],
        after: tuple[ast.stmt, ...] = (),
    ) -> list[str]:
        """Record outcomes; return the sources that reach the end of ``stmts`` (``after``: the
        statements that run when ``stmts`` fall through, for partial lowering)."""
        for i, st in enumerate(stmts):
            if not sources:
                return []
            later = (*stmts[i + 1 :], *after)
            try:
                sources = self.step(st, sources, guards, later)
            except Unsupported as err:
                if not self.partial:
                    raise
                for s in sources:
                    self.outcomes.append(Outcome(s, guards, None, None, err, (st, *later)))
                return []
        return sources

    def step(
        self,
        st: ast.stmt,
        sources: list[str],
        guards: tuple[n.Cond, ...],
        later: tuple[ast.stmt, ...],
    ) -> list[str]:
        """One statement: record its outcomes, return the sources that go on after it
        (``later``: the statements that run after it)."""
        if isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant):
            return sources  # docstring
        if isinstance(st, ast.Pass):
            return sources
        if (
            isinstance(st, ast.Assign)
            and len(st.targets) == 1
            and isinstance(st.targets[0], ast.Name)
        ):
            bound = st.targets[0].id
            if self.is_messages(st.value):
                self.messages.add(bound)
            elif self.is_last(st.value):
                self.last.add(bound)
            elif self.is_source(st.value):
                self.sources.add(bound)
            elif (counted := self.length_of(st.value)) is not None:
                self.lengths[bound] = counted
            else:
                raise Unsupported(st, "an assignment the lowering does not follow")
            return sources
        if isinstance(st, ast.Return) and isinstance(st.value, ast.IfExp):
            # `return X if test else Y` is `if test: return X` then `return Y`
            branch = ast.copy_location(
                ast.If(
                    st.value.test,
                    [ast.copy_location(ast.Return(st.value.body), st)],
                    [ast.copy_location(ast.Return(st.value.orelse), st)],
                ),
                st,
            )
            return self.walk([branch], sources, guards, later)
        if isinstance(st, ast.Return):
            for s in sources:
                value = st.value
                if isinstance(value, ast.Constant) and value.value is None:
                    value = None
                witness = self.witnesses.get(id(guards[0])) if len(guards) == 1 else None
                self.outcomes.append(Outcome(s, guards, value, witness))
            return []
        if not isinstance(st, ast.If):
            raise Unsupported(st, f"a `{type(st).__name__}` statement")
        chosen = self.speakers_of(st.test, sources)
        if chosen is not None:
            rest = [s for s in sources if s not in chosen]
            through = self.walk(st.body, chosen, guards, later) + self.walk(
                st.orelse, rest, guards, later
            )
            return [s for s in sources if s in through]
        parts = self.split(st.test, sources)
        if parts is not None:
            # `if <speaker test> and <message tests>:` — those speakers take the body
            # when the tests hold and the `else` otherwise; everyone else the `else`
            picked, extra = parts
            rest = [s for s in sources if s not in picked]
            if extra is None:
                through = self.walk(st.body, picked, guards, later)
            else:
                inner = ast.copy_location(ast.If(extra, st.body, st.orelse), st)
                through = self.walk([inner], picked, guards, later)
            through += self.walk(st.orelse, rest, guards, later)
            return [s for s in sources if s in through]
        cond = self.guard(st.test)
        if self.walk(st.body, sources, (*guards, cond), later):
            raise Unsupported(st, "a branch under a message test that does not return")
        return self.walk(st.orelse, sources, guards, later)


def _is_str(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


class _LastMessage(ast.NodeTransformer):
    """``messages[-1]`` / ``groupchat.messages[-1]`` (or a name bound to it) -> the name
    ``__last_message__``; in the AgentChat dialect its text (``.content``,
    ``.to_model_text()``, ``.to_text()``) -> ``__last_message__["content"]``."""

    def __init__(self, lower: _Lower) -> None:
        self.lower = lower

    def _msg(self, node: ast.AST) -> ast.AST:
        return ast.copy_location(ast.Name(MSG, ast.Load()), node)

    def _text(self, node: ast.AST) -> ast.AST:
        sub = ast.Subscript(ast.Name(MSG, ast.Load()), ast.Constant("content"), ast.Load())
        return ast.copy_location(sub, node)

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        if self.lower.is_last(node):
            return self._msg(node)
        self.generic_visit(node)
        return node

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return self._msg(node) if node.id in self.lower.last else node

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        if (
            self.lower.dialect == "agentchat"
            and node.attr in AGENTCHAT_TEXT
            and self.lower.is_last(node.value)
        ):
            return self._text(node)
        self.generic_visit(node)
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        func = node.func
        if (
            self.lower.dialect == "agentchat"
            and isinstance(func, ast.Attribute)
            and func.attr in AGENTCHAT_TEXT_METHODS
            and not node.args
            and not node.keywords
            and self.lower.is_last(func.value)
        ):
            return self._text(node)
        self.generic_visit(node)
        return node


def _short(node: ast.AST, limit: int = 60) -> str:
    """One line of the Python text, shortened (for a finding)."""
    text = " ".join(ast.unparse(node).split()).replace("`", "'")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _copy(node: ast.expr) -> ast.expr:
    copied = ast.parse(ast.unparse(node), mode="eval").body
    return copied


def as_function(
    node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda,
) -> ast.FunctionDef | ast.AsyncFunctionDef:
    """A ``lambda`` as the ``def`` that returns its body (locations kept)."""
    if not isinstance(node, ast.Lambda):
        return node
    ret = ast.copy_location(ast.Return(node.body), node.body)
    fn = ast.FunctionDef("<lambda>", node.args, [ret], [], None, None)
    return ast.copy_location(fn, node)


def lower_selection(
    fn: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda,
    sources: list[str],
    agent_name: Callable[[ast.expr], str | None],
    *,
    dialect: Dialect = "classic",
    partial: bool = False,
    never: list[ast.expr] | None = None,
) -> list[Outcome]:
    """Every (source, guards, returned expression) path of ``fn``, in evaluation order.

    ``dialect="agentchat"`` reads an AgentChat ``selector_func`` / ``candidate_func`` (one
    parameter, the message thread); ``agent_name`` then maps a name expression (``"x"``,
    ``agent.name``) to a speaker. Raises :class:`Unsupported` when the function is not the
    recognisable shape — with ``partial=True`` only when the function's signature is not the
    dialect's; an unrecognised statement then becomes outcomes carrying it (``unsupported``).
    ``never`` receives the tests of the last speaker against a string (always false).
    """
    func = as_function(fn)
    lower = _Lower(func, agent_name, dialect, partial)
    remaining = lower.walk(list(func.body), list(sources), ())
    for s in remaining:
        lower.outcomes.append(Outcome(s, (), None))
    if never is not None:
        never.extend(lower.never)
    return lower.outcomes


def returns_in(stmts: tuple[ast.stmt, ...]) -> tuple[list[ast.expr | None], bool]:
    """The values the statements may return (None for a bare ``return``), outside nested
    functions and classes, and whether they may fall through (then the function returns
    None). Over-approximated: every ``return`` up to the first statement that cannot fall
    through counts (only ``return``/``raise`` and an ``if`` whose branches both end so are
    taken to end)."""
    values: list[ast.expr | None] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            return
        if isinstance(node, ast.Return):
            values.append(node.value)
        for child in ast.iter_child_nodes(node):
            visit(child)

    for st in stmts:
        visit(st)
        if not _falls_through([st]):
            return values, False  # what follows is not reached
    return values, True


def _falls_through(stmts: list[ast.stmt]) -> bool:
    for st in stmts:
        if isinstance(st, ast.Return | ast.Raise):
            return False
        if (
            isinstance(st, ast.If)
            and st.orelse
            and not _falls_through(st.body)
            and not _falls_through(st.orelse)
        ):
            return False
    return True
