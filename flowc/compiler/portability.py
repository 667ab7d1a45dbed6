"""What a compiled flow needs registered before a bare AG2 1.2.1 can load it.

AG2's ``TransitionRegistry`` knows its own built-ins only: ``always``,
``from_speaker``, ``tool_called``, ``context_equals`` and the targets ``agent``,
``round_robin``, ``stay``, ``revert_to_initiator``, ``terminate``. flowc compiles
``and`` to ``all_of``, an ``or`` inside a condition (and ``from a, b`` there) to
``any_of``, and ``not`` / ``!=`` to ``not``: flowc's composites, which
``flowc.ag2.register_composites()`` (or ``open_workflow``) registers. A declared
custom condition or target is the team's own class, registered with
``flowc.ag2.register_customs``. A top-level ``or`` and a top-level ``from a, b``
become separate rules, which AG2 loads as they are.

>>> from flowc import compile_flow
>>> flow = compile_flow("speakers u: human, b\\nwhen from u and context.k != 1 then b")
>>> needs_registration(flow)
('all_of', 'not')
>>> [d.message for d in bare_ag2_problems(flow)][0]
'`and` compiles to `all_of`, which a bare AG2 1.2.1 cannot load'
"""

from __future__ import annotations

from collections.abc import Iterator

from flowc.compiler import model as m
from flowc.compiler.compiled import CompiledFlow
from flowc.diagnostics import E112, Diagnostic
from flowc.dsl import nodes as n
from flowc.source import Span

__all__ = [
    "AG2_CONDITIONS",
    "AG2_TARGETS",
    "bare_ag2_graph_problems",
    "bare_ag2_problems",
    "needs_registration",
    "registration_note",
]

#: what AG2 1.2.1's ``TransitionRegistry()`` loads without registration
AG2_CONDITIONS = frozenset(c.NAME for c in m.BUILTIN_CONDITIONS)
AG2_TARGETS = frozenset(t.NAME for t in m.BUILTIN_TARGETS)
COMPOSITES = frozenset(c.NAME for c in m.COMPOSITE_CONDITIONS)


def needs_registration(compiled: CompiledFlow) -> tuple[str, ...]:
    """Every condition / target name of the compiled graph that bare AG2 does not have
    (flowc's composites and the declared customs), sorted."""
    names: set[str] = set()

    graph = compiled.graph
    for t in graph.transitions:
        for c in m.walk_condition(t.when):
            if m.condition_name(c) not in AG2_CONDITIONS:
                names.add(m.condition_name(c))
        if m.target_name(t.then) not in AG2_TARGETS:
            names.add(m.target_name(t.then))
    if m.target_name(graph.default_target) not in AG2_TARGETS:
        names.add(m.target_name(graph.default_target))
    return tuple(sorted(names))


def registration_note(compiled: CompiledFlow) -> str | None:
    """One line saying what to register in AG2, or ``None`` when bare AG2 loads it."""
    names = needs_registration(compiled)
    if not names:
        return None
    composites = [x for x in names if x in COMPOSITES]
    customs = [x for x in names if x not in COMPOSITES]
    parts = []
    if composites:
        parts.append(
            f"flowc's composites {', '.join(composites)} "
            "(flowc.ag2.register_composites(), or open it with flowc.ag2.open_workflow)"
        )
    if customs:
        parts.append(f"your classes for {', '.join(customs)} (flowc.ag2.register_customs)")
    return (
        "bare AG2 cannot load this graph until these are registered in its "
        f"TransitionRegistry: {'; '.join(parts)}; `--target ag2` shows where they come from"
    )


def bare_ag2_problems(compiled: CompiledFlow, filename: str = "<input>") -> tuple[Diagnostic, ...]:
    """E112 for every construct of the source that compiles to something bare AG2 1.2.1
    cannot load, at its span (``flowc compile --target ag2``)."""
    out: list[Diagnostic] = []
    name = filename

    def problem(span: Span, message: str, help: str) -> None:
        out.append(Diagnostic(E112, message, name, span, help=help))

    composite_help = (
        "register flowc's composites in AG2 (`flowc.ag2.register_composites()`, or open "
        "the channel with `flowc.ag2.open_workflow`), or write the rule with AG2's "
        "built-ins only (split it into rules, ordered by priority)"
    )
    for item, top in _conditions(compiled):
        if isinstance(item, n.AndCond):
            problem(
                item.span,
                "`and` compiles to `all_of`, which a bare AG2 1.2.1 cannot load",
                composite_help,
            )
        elif isinstance(item, n.OrCond) and not top:
            problem(
                item.span,
                "`or` inside a condition compiles to `any_of`, which a bare AG2 "
                "1.2.1 cannot load (a top-level `or` becomes separate rules)",
                composite_help,
            )
        elif isinstance(item, n.FromCond) and len(item.speakers) > 1 and not top:
            problem(
                item.span,
                "`from` with several speakers inside a condition compiles to "
                "`any_of`, which a bare AG2 1.2.1 cannot load",
                composite_help,
            )
        elif isinstance(item, n.NotCond):
            problem(
                item.span,
                "`not` compiles to flowc's `not`, which a bare AG2 1.2.1 cannot load",
                composite_help,
            )
        elif isinstance(item, n.ContextCond) and item.op != "==":
            problem(
                item.span,
                f"`{item.op}` compiles to `not` of `context_equals`, which a bare "
                "AG2 1.2.1 cannot load",
                composite_help,
            )
        elif isinstance(item, n.CallCond):
            problem(
                item.span,
                f"custom condition `{item.name.value}` is not one of AG2's "
                "built-ins: a bare AG2 1.2.1 cannot load it",
                "register your class in AG2's TransitionRegistry "
                "(`flowc.ag2.register_customs([...])`) before the channel opens",
            )
    for target in _targets(compiled):
        problem(
            target.span,
            f"custom target `{target.name.value}` is not one of AG2's built-ins: "
            "a bare AG2 1.2.1 cannot load it",
            "register your class in AG2's TransitionRegistry "
            "(`flowc.ag2.register_customs(targets=[...])`) before the channel opens",
        )
    return tuple(sorted(out, key=Diagnostic.sort_key))


def _conditions(compiled: CompiledFlow) -> Iterator[tuple[n.Cond, bool]]:
    """Every condition node of every rule, and whether it is at the top level (where
    `or` and `from a, b` split into separate rules)."""

    def walk(cond: n.Cond, top: bool) -> Iterator[tuple[n.Cond, bool]]:
        yield cond, top
        if isinstance(cond, n.OrCond):
            for item in cond.items:
                yield from walk(item, top)
        elif isinstance(cond, n.AndCond):
            for item in cond.items:
                yield from walk(item, False)
        elif isinstance(cond, n.NotCond):
            yield from walk(cond.item, False)

    for st in compiled.flow.statements:
        if isinstance(st, n.Rule):
            yield from walk(st.cond, True)


def _targets(compiled: CompiledFlow) -> Iterator[n.CallTarget]:
    for st in compiled.flow.statements:
        if isinstance(st, n.Rule | n.Otherwise) and isinstance(st.target, n.CallTarget):
            yield st.target


def bare_ag2_graph_problems(
    graph: m.TransitionGraph, filename: str, prefix: str = ""
) -> tuple[Diagnostic, ...]:
    """E112 for every name of a JSON graph that bare AG2 1.2.1 does not have, at its
    JSON path (``prefix`` is ``graph.`` for a knobs dict)."""
    out: list[Diagnostic] = []

    def problem(path: str, name: str, kind: str) -> None:
        what = "flowc's composite" if name in COMPOSITES else f"custom {kind}"
        out.append(
            Diagnostic(
                E112,
                f"{prefix}{path}: {what} `{name}` is not one of AG2's built-ins: a bare AG2 1.2.1 "
                "cannot load it",
                filename,
                json_path=prefix + path,
                help="register it in AG2's TransitionRegistry first (flowc.ag2.register_composites / "
                "register_customs)",
            )
        )

    def cond(c: m.Condition, path: str) -> None:
        name = m.condition_name(c)
        if name not in AG2_CONDITIONS:
            problem(f"{path}.name", name, "condition")
        if isinstance(c, m.AllOf | m.AnyOf):
            for i, item in enumerate(c.conditions):
                cond(item, f"{path}.args.conditions[{i}]")
        elif isinstance(c, m.Not):
            cond(c.condition, f"{path}.args.condition")

    for i, t in enumerate(graph.transitions):
        cond(t.when, f"transitions[{i}].when")
        if m.target_name(t.then) not in AG2_TARGETS:
            problem(f"transitions[{i}].then.name", m.target_name(t.then), "target")
    if m.target_name(graph.default_target) not in AG2_TARGETS:
        problem("default_target.name", m.target_name(graph.default_target), "target")
    return tuple(out)
