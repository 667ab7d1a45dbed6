"""Classic tools: which agent proposes which tool, and what a tool's returned text does.

Classic runs a tool in a separate executor turn whose message is the returned text; the
translation folds that turn into the caller's (reported), so a returned text that passes
the manager's ``is_termination_msg`` becomes the tool's own ``finishes``.
"""

from __future__ import annotations

import ast

import flowc.migrate.model as mm
from flowc.diagnostics import M002
from flowc.dsl import nodes as n
from flowc.migrate.agents import AgentReader
from flowc.migrate.pyread import callee, kwarg
from flowc.migrate.speaking_order import TERM_REASON
from flowc.migrate.textpred import TextPredicate, evaluate


def collect_tools(
    reader: AgentReader,
    calls: list[ast.Call],
    speakers: set[str],
    fns: dict[tuple[str, str], ast.FunctionDef | ast.AsyncFunctionDef],
) -> dict[str, list[mm.Tool]]:
    """The tools each agent proposes (``register_function(f, caller=A, ...)``,
    ``@A.register_for_llm(...)``); ``fns`` gets the ``def`` of each one the file writes."""
    mod = reader.mod
    out: dict[str, list[mm.Tool]] = {}

    def add(
        agent_name: str,
        tool: str,
        doc: str | None,
        at: ast.AST,
        fn: ast.FunctionDef | ast.AsyncFunctionDef | None,
    ) -> None:
        if agent_name not in speakers:
            return
        if any(t.name == tool for t in out.get(agent_name, [])):
            return
        if fn is not None:
            fns[(agent_name, tool)] = fn
        out.setdefault(agent_name, []).append(mm.Tool(tool, doc))
        reader.report(
            M002,
            f"tool `{tool}` runs inside `{agent_name}`'s turn: the separate executor turn of "
            "classic (`func_call_filter`) disappears, so turn counts differ",
            at,
        )

    for c in calls:
        name = callee(c)
        if name == "register_function":
            fn = kwarg(c, "f", 0)
            caller = reader.agent_of(kwarg(c, "caller"))
            if caller is None or fn is None:
                continue
            tool = mod.const_or(kwarg(c, "name"), None)
            fn_name = fn.id if isinstance(fn, ast.Name) else None
            tool = tool if isinstance(tool, str) else fn_name
            if tool is None:
                continue
            doc = mod.const_or(kwarg(c, "description"), None)
            doc = doc if isinstance(doc, str) else mod.docstring(fn)
            add(caller.name, tool, doc, c, mod.function_of(fn))
    for func in mod.functions.values():
        for deco in func.decorator_list:
            if (
                isinstance(deco, ast.Call)
                and isinstance(deco.func, ast.Attribute)
                and deco.func.attr == "register_for_llm"
            ):
                caller = reader.agent_of(deco.func.value)
                if caller is None:
                    continue
                tool = mod.const_or(kwarg(deco, "name"), None)
                doc = mod.const_or(kwarg(deco, "description"), None)
                add(
                    caller.name,
                    tool if isinstance(tool, str) else func.name,
                    doc if isinstance(doc, str) else ast.get_docstring(func),
                    deco,
                    func,
                )
    return out


def _returns(
    stmts: list[ast.stmt],
) -> list[ast.Return]:
    out: list[ast.Return] = []
    for st in stmts:
        for node in ast.walk(st):
            if isinstance(node, ast.Return):
                out.append(node)
    return out


def finishing_tools(
    reader: AgentReader,
    tools: dict[str, list[mm.Tool]],
    fns: dict[tuple[str, str], ast.FunctionDef | ast.AsyncFunctionDef],
    predicate: TextPredicate | None,
) -> None:
    """A tool whose returned text passes the manager's ``is_termination_msg``: classic's
    executor sends that text as its message (``generate_tool_calls_reply``: the content is
    the returned string) and the manager's test on it ends the chat; the flow declares the
    tool ``finishes "is_termination_msg"``. Only constant returns are judged."""
    if predicate is None:
        return
    mod = reader.mod
    for owner, owned in tools.items():
        for i, tool in enumerate(owned):
            fn = fns.get((owner, tool.name))
            if fn is None:
                continue
            nested = [
                x
                for x in ast.walk(fn)
                if x is not fn
                and isinstance(x, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            ]
            inner = {id(r) for x in nested for r in ast.walk(x) if isinstance(r, ast.Return)}
            returns = [r for r in _returns(list(fn.body)) if id(r) not in inner]
            ends = [
                r
                for r in returns
                if isinstance(text := mod.const_or(r.value, None), str)
                and evaluate(predicate.cond, text) is True
            ]
            if not ends:
                continue
            owned[i] = mm.Tool(
                tool.name, tool.doc, ((n.FinishEffect(n.Str(TERM_REASON, mm.S), mm.S),),)
            )
            if len(ends) != len(returns):
                reader.report(
                    M002,
                    f"tool `{tool.name}` returns the termination text at line "
                    f"{ends[0].lineno}, which ends the chat in classic (the manager tests the "
                    "executor's message), and other texts elsewhere; the flow declares it "
                    '`finishes "is_termination_msg"` and lists only the calls that finish',
                    fn,
                )


__all__ = ["collect_tools", "finishing_tools"]
