"""Classic tools: which agent proposes which tool, and what a tool's returned text does.

Classic runs a tool in a separate executor turn whose message is the returned text; the
translation folds that turn into the caller's (reported), so a returned text that passes
the manager's ``is_termination_msg`` becomes the tool's own ``finishes``.
"""

from __future__ import annotations

import ast

import flowc.migrate.model as mm
from flowc.diagnostics import M001, M002
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
    ``@A.register_for_llm(...)``, ``A.register_for_llm(...)(f)``, ``tool.register_tool(A)`` /
    ``tool.register_for_llm(A)`` for ``tool = Tool(func_or_tool=f, ...)``); ``fns`` gets the
    ``def`` of each one the file writes."""
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
            f"tool `{tool}` runs inside `{agent_name}`'s turn: classic gives the turn after "
            "the call to the tool's executor (`func_call_filter`), and the speaker after it is "
            f"picked from the executor, not from `{agent_name}`; the flow has no executor "
            "turn, so turn counts differ and so may who speaks after a call",
            at,
        )

    for c in calls:
        name = callee(c)
        if name == "register_function":
            fn = kwarg(c, "f", 0)
            caller = reader.agent_of(kwarg(c, "caller"))
            if caller is None or fn is None:
                continue
            tool = mod.const_name_or(kwarg(c, "name"), None)
            fn_name = fn.id if isinstance(fn, ast.Name) else None
            tool = tool if isinstance(tool, str) else fn_name
            if tool is None:
                continue
            doc = mod.const_or(kwarg(c, "description"), None)
            doc = doc if isinstance(doc, str) else mod.docstring(fn)
            add(caller.name, tool, doc, c, mod.function_of(fn))
    for c in calls:
        inner = c.func
        if (  # agent.register_for_llm(...)(f)
            isinstance(inner, ast.Call)
            and callee(inner) == "register_for_llm"
            and isinstance(inner.func, ast.Attribute)
            and (caller := reader.agent_of(inner.func.value)) is not None
            and c.args
            and isinstance(c.args[0], ast.Name)
        ):
            tool = mod.const_name_or(kwarg(inner, "name"), None)
            doc = mod.const_or(kwarg(inner, "description"), None)
            add(
                caller.name,
                tool if isinstance(tool, str) else c.args[0].id,
                doc if isinstance(doc, str) else mod.docstring(c.args[0]),
                c,
                mod.function_of(c.args[0]),
            )
        elif (  # tool.register_tool(agent) / tool.register_for_llm(agent) (ag2 Tool objects)
            callee(c) in ("register_tool", "register_for_llm")
            and isinstance(c.func, ast.Attribute)
            and (caller := reader.agent_of(kwarg(c, "agent", 0))) is not None
            and caller.name in speakers
        ):
            obj = mod.deref(c.func.value)
            fn = kwarg(obj, "func_or_tool") if isinstance(obj, ast.Call) else None
            if not (isinstance(obj, ast.Call) and callee(obj) == "Tool" and fn is not None):
                reader.report(
                    M001,
                    f"`{ast.unparse(c.func.value)}` is registered as a tool of `{caller.name}`, "
                    "but it is not a `Tool(...)` of a function of this file: its name and what "
                    "it does are unknown, and it was left out",
                    c,
                    help="declare it by hand in the .flow: `tool NAME` on the speaker",
                )
                continue
            tool = mod.const_name_or(kwarg(obj, "name"), None)
            doc = mod.const_or(kwarg(obj, "description"), None)
            fn_name = fn.id if isinstance(fn, ast.Name) else None
            tool = tool if isinstance(tool, str) else fn_name
            if tool is not None:
                add(
                    caller.name,
                    tool,
                    doc if isinstance(doc, str) else mod.docstring(fn),
                    c,
                    mod.function_of(fn),
                )
    for func, deco, obj in mod.decorated("register_for_llm"):
        caller = reader.agent_of(obj)
        if caller is None:
            continue
        tool = mod.const_name_or(kwarg(deco, "name"), None)
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
