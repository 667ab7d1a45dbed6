"""AST -> model: the compiler proper, with the name and shape checks (E101-E117).

``lower`` never raises on user input; it returns the compiled flow (``None`` when an
error stopped it) and the diagnostics. What it produces is
:class:`~flowc.compiler.compiled.CompiledFlow`; the tools' effects are read by
:mod:`flowc.compiler.tool_effects`, the scenarios checked by
:mod:`flowc.compiler.scenario_checks`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import attrs

from flowc.compiler import model as m
from flowc.compiler import properties as pr
from flowc.compiler.compiled import CompiledFlow as CompiledFlow  # re-exported
from flowc.compiler.compiled import CustomDecl, ParamInfo, RuleInfo, ToolInfo
from flowc.compiler.properties import Property
from flowc.compiler.scenario_checks import ScenarioChecks, close_match, empty_reason_help
from flowc.compiler.serde import describe
from flowc.compiler.tool_effects import ToolEffectInfo as ToolEffectInfo  # re-exported
from flowc.compiler.tool_effects import effects_info, finish_reason, terminate_reason
from flowc.diagnostics import (
    E101,
    E102,
    E103,
    E104,
    E105,
    E106,
    E107,
    E109,
    E110,
    E113,
    E114,
    E117,
    Code,
    Diagnostic,
    has_errors,
)
from flowc.dsl import nodes as n
from flowc.dsl.formatter import format_name, format_property, format_value
from flowc.identity import ByIdentity
from flowc.source import Span

#: names AG2's registry (and flowc's composites) already own
RESERVED_CONDITIONS = frozenset(
    cls.NAME for cls in (*m.BUILTIN_CONDITIONS, *m.COMPOSITE_CONDITIONS)
)
RESERVED_TARGETS = frozenset(cls.NAME for cls in m.BUILTIN_TARGETS)

PARAM_TYPES = ("string", "int", "float", "number", "bool", "list", "object", "any", "speaker")


# ── the pass ──────────────────────────────────────────────────────────────────


class _Lowering:
    def __init__(
        self,
        flow: n.Flow,
        filename: str,
        bindings: Mapping[str, str],
        cache: RuleCache | None = None,
    ):
        self.flow = flow
        self.cache = cache
        self.filename = filename
        self.bindings = dict(bindings)
        self.diags: list[Diagnostic] = []
        self.speakers: dict[str, n.SpeakerDecl] = {}
        self.customs: dict[str, CustomDecl] = {}

    def error(self, code: Code, message: str, span: Span, help: str | None = None) -> None:
        self.diags.append(Diagnostic(code, message, self.filename, span, help=help))

    def bind(self, name: str) -> str:
        return self.bindings.get(name, name)

    # declarations ---------------------------------------------------------

    def collect(self) -> None:
        once: dict[type[Any], n.Statement] = {}
        labels = {
            n.FlowDecl: "flow",
            n.StartDecl: "start",
            n.InitiatorDecl: "initiator",
            n.MaxTurnsDecl: "max_turns",
            n.Otherwise: "otherwise",
        }
        for st in self.flow.statements:
            kind = type(st)
            if kind in labels:
                if kind in once:
                    first = once[kind].span
                    self.error(
                        E109,
                        f"`{labels[kind]}` appears twice (first at line {first.line})",
                        st.span,
                        help=f"keep one `{labels[kind]}` statement",
                    )
                else:
                    once[kind] = st
        for sp in self.flow.speakers():
            name = sp.name.value
            if name in self.speakers:
                first = self.speakers[name].span
                self.error(
                    E102,
                    f"speaker `{name}` is declared twice (first at line {first.line})",
                    sp.name.span,
                    help="remove one declaration or rename it",
                )
                continue
            self.speakers[name] = sp
            seen_tools: dict[str, n.ToolDecl] = {}
            for tool in sp.tools:
                if tool.name.value in seen_tools:
                    self.error(
                        E102,
                        f"tool `{tool.name.value}` is declared twice on `{name}`",
                        tool.name.span,
                        help="merge the effects into one declaration with `|` or `,`",
                    )
                seen_tools[tool.name.value] = tool
            self.check_kind(sp)
        for st in self.flow.statements:
            if isinstance(st, n.ConditionDecl | n.TargetDecl):
                self.declare_custom(st)

    def check_kind(self, sp: n.SpeakerDecl) -> None:
        """One rule for humans, as in AG2: a human posts text and may write context keys
        (it has no model and no tools); a model speaker writes context through its tools."""
        name = _show_name(sp.name.value)
        if sp.human:
            for tool in sp.tools:
                self.error(
                    E113,
                    f"`{name}` is a human: a human posts text and writes context, it calls "
                    f"no tools, so `tool {_show_name(tool.name.value)}` can never be called",
                    tool.name.span,
                    help=f"give the tool to a model speaker, or declare the context keys the "
                    f"human writes: `speaker {name}: human {{ sets KEY }}`",
                )
        else:
            for w in sp.writes:
                self.error(
                    E113,
                    f"`sets` declares the context keys a human writes, but `{name}` is a "
                    "model speaker: its context writes are its tools' effects",
                    w.span,
                    help=f"mark it `speaker {name}: human`, or declare a tool: "
                    f"`tool NAME sets {_show_name(w.keys[0].value)} = VALUE`",
                )

    def declare_custom(self, st: n.ConditionDecl | n.TargetDecl) -> None:
        kind = "condition" if isinstance(st, n.ConditionDecl) else "target"
        name = st.name.value
        reserved = RESERVED_CONDITIONS if kind == "condition" else RESERVED_TARGETS
        if name in reserved:
            self.error(
                E102,
                f"`{name}` is already a built-in {kind}",
                st.name.span,
                help=f"give the custom {kind} another name",
            )
            return
        if name in self.customs:
            first = self.customs[name]
            self.error(
                E102,
                f"`{name}` is declared twice (first as a {first.kind} at line {first.span.line})",
                st.name.span,
                help="custom conditions and targets share one namespace; rename one",
            )
            return
        params: list[ParamInfo] = []
        seen: set[str] = set()
        for p in st.params:
            if p.name.value in seen:
                self.error(E102, f"parameter `{p.name.value}` is declared twice", p.name.span)
                continue
            seen.add(p.name.value)
            if not _known_type(p.type):
                self.error(
                    E104,
                    f"unknown parameter type `{p.type}`",
                    p.type.span,
                    help="use one of "
                    + ", ".join(f"`{t}`" for t in PARAM_TYPES)
                    + ", or `list[T]`",
                )
                continue
            default = None
            if p.default is not None:
                default = p.default.value
                problem = _type_problem(default, p.type)
                if problem:
                    self.error(
                        E104,
                        f"default of `{p.name.value}` {problem}",
                        p.default.span,
                    )
            params.append(ParamInfo(p.name.value, str(p.type), default, p.default is not None))
        results: tuple[str | None, ...] | None = None
        if isinstance(st, n.TargetDecl) and st.results is not None:
            out: list[str | None] = []
            for r in st.results:
                if isinstance(r, n.ResultSpeaker):
                    self.need_speaker(r.speaker, f"target `{name}` resolves to")
                    out.append(r.speaker.value)
                else:
                    out.append(None)
            results = tuple(dict.fromkeys(out))
        self.customs[name] = CustomDecl(kind, name, tuple(params), results, st.span)

    def need_speaker(self, name: n.Name, context: str) -> bool:
        if name.value in self.speakers:
            return True
        self.error(
            E101,
            f"{context} `{name.value}`, which is not a declared speaker",
            name.span,
            help=_suggest_speaker(name.value, self.speakers)
            or f"declare it: `speaker {_show_name(name.value)}`",
        )
        return False

    # conditions -----------------------------------------------------------

    def alternatives(self, cond: n.Cond) -> Iterator[n.Cond]:
        """Top-level `or` and multi-speaker `from` become separate rules."""
        if isinstance(cond, n.OrCond):
            for item in cond.items:
                yield from self.alternatives(item)
        elif isinstance(cond, n.FromCond) and len(cond.speakers) > 1:
            for sp in cond.speakers:
                yield n.FromCond((sp,), sp.span)
        else:
            yield cond

    def condition(self, cond: n.Cond) -> m.Condition | None:
        kind = type(cond)  # the AST's classes have no subclasses: one test each, commonest first
        if kind is n.FromCond:
            froms: list[m.Condition] = []
            for sp in cond.speakers:  # type: ignore[union-attr]
                self.need_speaker(sp, "`from` names")
                froms.append(m.FromSpeaker(self.bind(sp.value)))
            return froms[0] if len(froms) == 1 else m.AnyOf(tuple(froms))
        if kind is n.ContextCond:
            eq = m.ContextEquals(cond.key.value, cond.value.value)  # type: ignore[union-attr]
            return eq if cond.op == "==" else m.Not(eq)  # type: ignore[union-attr]
        if kind is n.ToolCond:
            return m.ToolCalled(cond.tool.value)  # type: ignore[union-attr]
        if kind is n.AndCond or kind is n.OrCond:
            items = [self.condition(c) for c in cond.items]  # type: ignore[union-attr]
            if any(i is None for i in items):
                return None
            kept = tuple(i for i in items if i is not None)
            return m.AllOf(kept) if kind is n.AndCond else m.AnyOf(kept)
        if kind is n.NotCond:
            inner = self.condition(cond.item)  # type: ignore[union-attr]
            return None if inner is None else m.Not(inner)
        if kind is n.AlwaysCond:
            return m.Always()
        assert isinstance(cond, n.CallCond)
        args = self.call_args(cond.name, cond.args, "condition", cond.span)
        if args is not None and cond.name.value == "text_matches":
            self.check_pattern(cond.args)
        return None if args is None else m.CustomCondition(cond.name.value, args)

    def check_pattern(self, args: tuple[n.Arg, ...]) -> None:
        """E114 at the part of a ``text_matches`` pattern flowc cannot match in linear
        time (:func:`flowc.regex.refusal`: the same test ``run`` and ``test`` make)."""
        from flowc.regex import refusal

        for arg in args:
            if arg.name.value != "pattern" or not isinstance(arg.value.value, str):
                continue
            problem = refusal(arg.value.value)
            if problem is not None:
                span = pattern_span(arg.value.span, arg.value.value, problem.offset, problem.length)
                self.error(E114, f"`text_matches`: {problem.message}", span, help=PATTERN_HELP)

    def call_args(
        self, name: n.Name, args: tuple[n.Arg, ...], kind: str, span: Span
    ) -> dict[str, Any] | None:
        decl = self.customs.get(name.value)
        if decl is None or decl.kind != kind:
            if decl is not None:
                message = f"`{name.value}` is declared as a {decl.kind}, not a {kind}"
                help_text = f"declare `{kind} {name.value}(...)` separately under another name"
            else:
                message = f"custom {kind} `{name.value}` is not declared"
                help_text = f"declare it: `{kind} {name.value}(...)`"
                if kind == "target" and name.value in self.speakers:
                    help_text = f"`{name.value}` is a speaker: write it without parentheses"
            self.error(E103, message, name.span, help=help_text)
            return None
        params = {p.name: p for p in decl.params}
        out: dict[str, Any] = {}
        ok = True
        for arg in args:
            p = params.get(arg.name.value)
            if p is None:
                expected = ", ".join(f"`{x}`" for x in params) or "no arguments"
                self.error(
                    E104,
                    f"`{name.value}` has no parameter `{arg.name.value}`",
                    arg.name.span,
                    help=f"`{name.value}` takes {expected}",
                )
                ok = False
                continue
            if arg.name.value in out:
                self.error(E104, f"argument `{arg.name.value}` is given twice", arg.name.span)
                ok = False
                continue
            problem = _type_problem(arg.value.value, _parse_type(p.type))
            if problem:
                self.error(
                    E104,
                    f"argument `{arg.name.value}` of `{name.value}` {problem}",
                    arg.value.span,
                    help=f"`{arg.name.value}` is declared as `{p.type}`",
                )
                ok = False
                continue
            out[arg.name.value] = self.bind_value(arg.value.value, p.type, arg.value.span)
        for p in decl.params:
            if p.name not in out and ok:
                if p.has_default:
                    out[p.name] = self.bind_value(p.default, p.type, span)
                else:
                    self.error(
                        E104,
                        f"`{name.value}` needs the argument `{p.name}` ({p.type})",
                        span,
                        help=f"pass it: `{name.value}({p.name} = ...)`",
                    )
                    ok = False
        return out if ok else None

    def bind_value(self, value: Any, type_name: str, span: Span) -> Any:
        """Speaker-typed values are checked and bound to agent ids."""
        if type_name == "speaker":
            if value not in self.speakers:
                self.error(
                    E101,
                    f"argument names `{value}`, which is not a declared speaker",
                    span,
                    help=_suggest_speaker(str(value), self.speakers),
                )
            return self.bind(value)
        if type_name == "list[speaker]":
            return [self.bind_value(v, "speaker", span) for v in value]
        return value

    # targets --------------------------------------------------------------

    def target(self, target: n.Target) -> m.Target | None:
        if isinstance(target, n.SpeakerTarget):
            if not self.need_speaker(target.speaker, "the rule routes to"):
                return None
            return m.AgentTarget(self.bind(target.speaker.value))
        if isinstance(target, n.NextTarget):
            return m.RoundRobinTarget()
        if isinstance(target, n.StayTarget):
            return m.StayTarget()
        if isinstance(target, n.InitiatorTarget):
            return m.RevertToInitiatorTarget()
        if isinstance(target, n.TerminateTarget):
            return m.TerminateTarget(target.reason.value if target.reason else "after_work")
        args = self.call_args(target.name, target.args, "target", target.span)
        return None if args is None else m.CustomTarget(target.name.value, args)

    # the whole flow -------------------------------------------------------

    def run(self) -> CompiledFlow | None:
        """The pass, in the order its diagnostics come: declarations, speakers, rules,
        start / initiator / max_turns / otherwise, then scenarios and properties."""
        self.collect()
        flow = self.flow
        speakers = list(self.speakers)
        self.check_speaker_count(speakers)
        self.check_tool_handoffs()
        rules = self.rules()
        start, initiator = self.start_and_initiator(rules.start, speakers)
        max_turns = self.max_turns(rules.max_turns)
        otherwise: n.Otherwise | None = _first(flow, n.Otherwise)
        default: m.Target | None = rules.default or m.TerminateTarget()
        if otherwise is not None:
            default = self.target(otherwise.target)
        context = self.context()

        reasons = self.close_reasons(rules.transitions, default, max_turns)
        checks = ScenarioChecks(self.filename, self.speakers, self.diags, self.need_speaker, start)
        for sc in flow.of_type(n.Scenario):
            checks.check_scenario(sc, reasons)
        properties = self.properties(rules.transitions, default, max_turns, context)

        if has_errors(self.diags) or default is None:
            return None
        return self.compiled(
            rules, start, initiator, default, max_turns, otherwise, context, properties
        )

    def check_speaker_count(self, speakers: list[str]) -> None:
        """E110 for a flow of fewer than two speakers."""
        flow = self.flow
        if len(speakers) < 2:
            where = flow.speakers()[0].span if flow.speakers() else flow.span
            if not flow.statements:
                where = Span(1, 1, 1, 1, 0, 0)
            self.error(
                E110,
                f"a flow needs at least two speakers; this one declares {len(speakers)}",
                where,
                help="a workflow channel has two or more participants: declare them with `speaker NAME`",
            )

    def check_tool_handoffs(self) -> None:
        """E107 for a tool that hands off to a speaker the flow does not declare."""
        for tool in (t for sp in self.speakers.values() for t in sp.tools):
            for alt in tool.alternatives:
                for eff in alt:
                    if isinstance(eff, n.HandoffEffect) and eff.target.value not in self.speakers:
                        self.error(
                            E107,
                            f"tool `{tool.name.value}` hands off to `{eff.target.value}`, which is not a declared speaker",
                            eff.target.span,
                            help=_suggest_speaker(eff.target.value, self.speakers)
                            or f"declare `speaker {_show_name(eff.target.value)}`",
                        )

    def rule(self, st: n.Rule) -> list[tuple[n.Cond, m.Transition | None]]:
        """Each branch of a `when` rule (:meth:`alternatives`) and its transition (None
        for one that did not lower: its findings are in :attr:`diags`)."""
        target = self.target(st.target)
        priority = st.priority.value if st.priority else 0
        out: list[tuple[n.Cond, m.Transition | None]] = []
        for branch in self.alternatives(st.cond):
            cond = self.condition(branch)
            made = (
                m.Transition(cond, target, priority)
                if cond is not None and target is not None
                else None
            )
            out.append((branch, made))
        return out

    def rules(self) -> _Rules:
        """The transitions of the rules, sequences and round robins, in file order, and
        what the first sequence or round robin implies (start, default, max_turns)."""
        transitions: list[m.Transition] = []
        infos: list[RuleInfo] = []
        implied_start: str | None = None
        implied_default: m.Target | None = None
        implied_max: int | None = None
        cache = self.cache
        for st in self.flow.statements:
            if isinstance(st, n.Rule):
                made = cache.get(st) if cache is not None else None
                if made is None:
                    before = len(self.diags)
                    parts = self.rule(st)
                    kept = tuple(t for _, t in parts if t is not None)
                    if cache is not None and len(self.diags) == before and len(kept) == len(parts):
                        cache.put(st, kept)
                    pairs: Iterable[tuple[n.Cond, m.Transition | None]] = parts
                elif len(made) == 1 and type(st.cond) is not n.OrCond:
                    pairs = ((st.cond, made[0]),)  # (a one-branch rule is its own branch)
                else:
                    pairs = zip(self.alternatives(st.cond), made, strict=True)
                for branch, transition in pairs:
                    if transition is not None:
                        infos.append(RuleInfo(len(transitions), st, st, branch.span))
                        transitions.append(transition)
            elif isinstance(st, n.SequenceDecl):
                ok = all([self.need_speaker(s, "`sequence` names") for s in st.steps])
                if ok:
                    for a, b in zip(st.steps, st.steps[1:], strict=False):
                        infos.append(RuleInfo(len(transitions), None, st, a.span.cover(b.span)))
                        transitions.append(
                            m.Transition(
                                m.FromSpeaker(self.bind(a.value)), m.AgentTarget(self.bind(b.value))
                            )
                        )
                if implied_start is None:
                    implied_start = st.steps[0].value
                    implied_default = m.TerminateTarget("sequence_complete")
                    implied_max = len(st.steps)
            elif isinstance(st, n.RoundRobinDecl):
                for s in st.speakers:
                    self.need_speaker(s, "`round_robin` names")
                infos.append(RuleInfo(len(transitions), None, st, st.span))
                transitions.append(m.Transition(m.Always(), m.RoundRobinTarget()))
                if implied_start is None:
                    implied_start = st.speakers[0].value
                    implied_default = m.TerminateTarget("round_robin_complete")
        return _Rules(transitions, infos, implied_start, implied_default, implied_max)

    def start_and_initiator(self, implied: str | None, speakers: list[str]) -> tuple[str, str]:
        """The speaker that starts a run and the initiator (E105 for an undeclared one):
        written, else implied by a sequence or round robin, else the first speaker."""
        flow = self.flow
        start_decl = _first(flow, n.StartDecl)
        if start_decl is not None:
            self.check_named(start_decl.speaker, "start")
            start = start_decl.speaker.value
        else:
            start = implied or (speakers[0] if speakers else "")
        initiator_decl = _first(flow, n.InitiatorDecl)
        if initiator_decl is not None:
            self.check_named(initiator_decl.speaker, "initiator")
            initiator = initiator_decl.speaker.value
        else:
            initiator = start
        return start, initiator

    def max_turns(self, implied: int | None) -> int | None:
        """The written ``max_turns`` (E106 when it is not a whole number >= 1), else the
        one a sequence implies."""
        max_decl = _first(self.flow, n.MaxTurnsDecl)
        max_turns = implied
        if max_decl is not None:
            value = max_decl.value.value
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                self.error(
                    E106,
                    f"`max_turns` must be an integer >= 1, got {describe(value)}",
                    max_decl.value.span,
                    help="write a whole number of turns, e.g. `max_turns 20`",
                )
            else:
                max_turns = value
        return max_turns

    def context(self) -> dict[str, Any]:
        """The context variables' initial values (a later entry of a key wins)."""
        context: dict[str, Any] = {}
        for st in self.flow.statements:
            if isinstance(st, n.ContextDecl):
                for entry in st.entries:
                    context[entry.key.value] = entry.value.value
        return context

    def compiled(
        self,
        rules: _Rules,
        start: str,
        initiator: str,
        default: m.Target,
        max_turns: int | None,
        otherwise: n.Otherwise | None,
        context: dict[str, Any],
        properties: tuple[Property, ...],
    ) -> CompiledFlow:
        """The compiled flow of a pass that found no error."""
        flow = self.flow
        graph = m.TransitionGraph(self.bind(start), tuple(rules.transitions), default, max_turns)
        flow_decl = _first(flow, n.FlowDecl)
        tools = tuple(
            ToolInfo(
                sp.name.value,
                t.name.value,
                tuple(effects_info(alt) for alt in t.alternatives),
                t.span,
            )
            for sp in self.speakers.values()
            for t in sp.tools
        )
        return CompiledFlow(
            name=flow_decl.name.value if flow_decl else None,
            description=flow_decl.description.value
            if flow_decl and flow_decl.description
            else None,
            graph=graph,
            context_vars=context,
            speakers=tuple(self.speakers),
            humans=frozenset(s for s, d in self.speakers.items() if d.human),
            start=start,
            initiator=initiator,
            tools=tools,
            customs=tuple(self.customs.values()),
            rules=tuple(rules.infos),
            default_span=otherwise.span if otherwise else None,
            default_implied=otherwise is None and rules.default is not None,
            bindings=dict(self.bindings),
            scenarios=flow.of_type(n.Scenario),
            flow=flow,
            human_writes={s: d.written_keys for s, d in self.speakers.items() if d.human},
            properties=properties,
        )

    def check_named(self, name: n.Name, what: str) -> None:
        if name.value not in self.speakers:
            self.error(
                E105,
                f"`{what}` names `{name.value}`, which is not a declared speaker",
                name.span,
                help=_suggest_speaker(name.value, self.speakers)
                or f"declare `speaker {_show_name(name.value)}` or name another speaker",
            )

    def close_reasons(
        self, transitions: list[m.Transition], default: m.Target | None, max_turns: int | None
    ) -> set[str] | None:
        """Every reason the flow writes a run's close with; ``None`` when a custom target
        may end it with a reason of its own choosing. (Which of them a run really reaches
        is worked out by the exploration: :mod:`flowc.compiler.analysis.endings`.)"""
        out: set[str] = set()
        for target in (*(t.then for t in transitions), default):
            if isinstance(target, m.TerminateTarget):
                out.add(terminate_reason(target.reason))
            elif isinstance(target, m.CustomTarget):
                decl = self.customs.get(target.name)
                if decl is None or decl.results is None or None in decl.results:
                    return None
        for sp in self.speakers.values():
            for tool in sp.tools:
                for alt in tool.alternatives:
                    info = effects_info(alt)
                    if info.finish is not None:
                        out.add(finish_reason(info.finish))
        if max_turns is not None:
            out.add("max_turns")
        return out

    # properties -----------------------------------------------------------

    def properties(
        self,
        transitions: list[m.Transition],
        default: m.Target | None,
        max_turns: int | None,
        context: Mapping[str, Any],
    ) -> tuple[Property, ...]:
        """The ``property`` statements, in file order, lowered: E101 for a speaker, E102
        for a name used twice, E117 for a tool, context key or end reason the flow does
        not have. A property changes nothing in the graph."""
        decls = [st for st in self.flow.statements if isinstance(st, n.PropertyDecl)]
        if not decls:
            return ()
        tools = {t.name.value for sp in self.speakers.values() for t in sp.tools}
        keys = set(context)
        for sp in self.speakers.values():
            keys.update(sp.written_keys)
            for tool in sp.tools:
                for alt in tool.alternatives:
                    keys.update(k for k, _ in effects_info(alt).sets)
        names = _PropertyNames(
            tuple(sorted(tools)),
            tuple(sorted(keys)),
            self.end_reasons(transitions, default, max_turns),
        )
        seen: dict[str, n.PropertyDecl] = {}
        out: list[Property] = []
        for decl in decls:
            name = decl.name.value
            if name in seen:
                self.error(
                    E102,
                    f"property `{name}` is declared twice (first at line {seen[name].span.line})",
                    decl.name.span,
                    help="give each property a name of its own",
                )
            else:
                seen[name] = decl
            pattern = self.pattern(decl.pattern, names)
            scope = self.scope(decl.scope, names)
            out.append(Property(name, pattern, scope, decl.span, format_property(decl)))
        return tuple(out)

    def end_reasons(
        self, transitions: list[m.Transition], default: m.Target | None, max_turns: int | None
    ) -> frozenset[str] | None:
        """Every reason a run of the flow may close with (``ends "r"`` of a property);
        ``None`` when a custom target may end a run with a reason chosen as it runs (one
        with no ``->`` list, or with a bare ``terminate`` in it)."""
        out: set[str] = set()
        declared = {st.name.value: st for st in self.flow.of_type(n.TargetDecl)}
        for target in (*(t.then for t in transitions), default):
            if isinstance(target, m.TerminateTarget):
                out.add(terminate_reason(target.reason))
            elif isinstance(target, m.CustomTarget):
                decl = declared.get(target.name)
                if decl is None or decl.results is None:
                    return None
                for result in decl.results:
                    if isinstance(result, n.ResultTerminate):
                        if result.reason is None:
                            return None
                        out.add(terminate_reason(result.reason.value))
        for sp in self.speakers.values():
            for tool in sp.tools:
                for alt in tool.alternatives:
                    finish = effects_info(alt).finish
                    if finish is not None:
                        out.add(finish_reason(finish))
        if max_turns is not None:
            out.add("max_turns")
        return frozenset(out)

    def pattern(self, pat: n.Pattern, names: _PropertyNames) -> pr.Pattern:
        p = self.prop_expr(pat.p, names)
        if isinstance(pat, n.NeverPattern):
            return pr.Never(p)
        if isinstance(pat, n.AlwaysPattern):
            return pr.Always(p)
        if isinstance(pat, n.EventuallyPattern):
            return pr.Eventually(p, pat.within.turns if pat.within is not None else None)
        if isinstance(pat, n.AtMostPattern):
            return pr.AtMost(p, pat.times)
        s = self.prop_expr(pat.s, names)
        if isinstance(pat, n.OnlyAfterPattern):
            return pr.OnlyAfter(p, s)
        return pr.Responds(p, s, pat.within.turns if pat.within is not None else None)

    def scope(self, scope: n.Scope | None, names: _PropertyNames) -> pr.Scope:
        if scope is None:
            return pr.Globally()
        if isinstance(scope, n.BeforeScope):
            return pr.Before(self.prop_expr(scope.r, names))
        q = self.prop_expr(scope.q, names)
        if isinstance(scope, n.AfterScope):
            return pr.After(q)
        r = self.prop_expr(scope.r, names)
        return pr.Between(q, r) if isinstance(scope, n.BetweenScope) else pr.AfterUntil(q, r)

    def prop_expr(self, e: n.Cond, names: _PropertyNames) -> pr.Expr:
        """A property expression, lowered as a rule's condition is (``from a, b`` is
        ``any_of`` of ``from_speaker``, ``!=`` is ``not`` of ``context_equals``)."""
        if isinstance(e, n.FromCond):
            froms: list[m.FromSpeaker] = []
            for sp in e.speakers:
                self.need_speaker(sp, "`from` names")
                froms.append(m.FromSpeaker(self.bind(sp.value)))
            return froms[0] if len(froms) == 1 else m.AnyOf(tuple(froms))
        if isinstance(e, n.ToolCond):
            tool = e.tool.value
            if tool not in names.tools:
                close = close_match(tool, names.tools)
                self.error(
                    E117,
                    f"the property names tool `{tool}`, which no speaker declares",
                    e.tool.span,
                    help=f"did you mean `{close}`?"
                    if close
                    else "declare it on the speaker that calls it: "
                    f"`speaker NAME {{ tool {_show_name(tool)} }}`",
                )
            return m.ToolCalled(tool)
        if isinstance(e, n.ContextCond):
            key = e.key.value
            if key not in names.keys:
                close = close_match(key, names.keys)
                self.error(
                    E117,
                    f"the property reads `context.{_show_name(key)}`, which nothing sets: it "
                    "has no initial value, and no tool or human writes it",
                    e.key.span,
                    help=f"did you mean `{_show_name(close)}`?"
                    if close
                    else f"give it an initial value (`context {_show_name(key)} = ...`), or "
                    "declare the tool or human that writes it",
                )
            eq = m.ContextEquals(key, e.value.value)
            return eq if e.op == "==" else m.Not(eq)
        # the model's composites hold a property's own atoms too (flowc.compiler.properties)
        if isinstance(e, n.AndCond | n.OrCond):
            items: Any = tuple(self.prop_expr(i, names) for i in e.items)
            return m.AllOf(items) if isinstance(e, n.AndCond) else m.AnyOf(items)
        if isinstance(e, n.NotCond):
            inner: Any = self.prop_expr(e.item, names)
            return m.Not(inner)
        if isinstance(e, n.PreviousCond):
            return pr.Previous(self.prop_expr(e.item, names))
        if isinstance(e, n.EndsCond):
            if e.reason is not None:
                self.check_end_reason(e.reason, names.reasons)
            return pr.Ends(e.reason.value if e.reason is not None else None)
        if isinstance(e, n.TurnCond):
            return pr.TurnIs(e.op, e.number)  # type: ignore[arg-type]
        # the parsers refuse them in a property (an AST built by hand may hold them)
        raise TypeError(f"not a property expression: {type(e).__name__}")

    def check_end_reason(self, reason: n.Str, reasons: frozenset[str] | None) -> None:
        """E117 for ``ends "r"`` when no run of the flow closes with r."""
        want = reason.value
        if want != "" and (reasons is None or want in reasons):
            return
        closes = reasons or frozenset()
        listed = ", ".join(format_value(r) for r in sorted(closes))
        if want == "":
            message = 'no run ends with "": a run never closes with an empty reason'
            help_text = empty_reason_help(set(closes))
        else:
            message = f"no run of the flow ends with {format_value(want)}: " + (
                f"its runs close with {listed}" if listed else "it writes no close reason"
            )
            close = close_match(want, closes)
            help_text = (
                f"did you mean {format_value(close)}?"
                if close
                else "name a reason the flow ends with, or write `ends` for any reason"
            )
        self.error(E117, message, reason.span, help=help_text)


@attrs.frozen
class _Rules:
    """The transitions the rules, sequences and round robins make, where each came from,
    and what the first sequence or round robin implies (``None``: nothing)."""

    transitions: list[m.Transition]
    infos: list[RuleInfo]
    start: str | None
    default: m.Target | None
    max_turns: int | None


@attrs.frozen
class _PropertyNames:
    """What a property may name: the declared tools, the context keys something sets
    (or that have an initial value), the reasons a run may end with (``None``: any)."""

    tools: tuple[str, ...]
    keys: tuple[str, ...]
    reasons: frozenset[str] | None


#: the help of every E114
PATTERN_HELP = (
    "text_matches is Python's re.search matched in linear time; `flowc explain E114` "
    "lists what a pattern may use"
)


def pattern_span(span: Span, pattern: str, offset: int, length: int) -> Span:
    """The part of a string literal's ``span`` that holds ``pattern[offset:offset+length]``.

    Exact when the literal is written as JSON writes it (``\\`` for a backslash, ``\"``
    for a quote, other characters as they are); otherwise the whole literal.
    """
    import json

    def written(text: str) -> int:
        return len(json.dumps(text, ensure_ascii=False)) - 2

    if length <= 0 or span.end_line != span.line or written(pattern) + 2 != span.end - span.start:
        return span
    start = 1 + written(pattern[:offset])
    end = 1 + written(pattern[: offset + length])
    return Span(
        span.line,
        span.column + start,
        span.line,
        span.column + end,
        span.start + start,
        span.start + end,
    )


def _first(flow: n.Flow, cls: type[Any]) -> Any:
    for st in flow.statements:
        if isinstance(st, cls):
            return st
    return None


def _known_type(t: n.TypeRef) -> bool:
    if t.item is not None:
        return t.name == "list" and _known_type(t.item) and t.item.item is None
    return t.name in PARAM_TYPES


def _parse_type(text: str) -> n.TypeRef:
    from flowc.source import NO_SPAN

    if text.startswith("list[") and text.endswith("]"):
        return n.TypeRef("list", n.TypeRef(text[5:-1], None, NO_SPAN), NO_SPAN)
    return n.TypeRef(text, None, NO_SPAN)


def _type_problem(value: Any, t: n.TypeRef) -> str | None:
    """None when ``value`` fits type ``t``, else what is wrong, in words."""
    name = t.name
    checks: dict[str, Callable[[Any], bool]] = {
        "string": lambda v: isinstance(v, str),
        "speaker": lambda v: isinstance(v, str),
        "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "float": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
        "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
        "bool": lambda v: isinstance(v, bool),
        "list": lambda v: isinstance(v, list),
        "object": lambda v: isinstance(v, dict),
        "any": lambda v: True,
    }
    words = {
        "string": "a string",
        "speaker": "a speaker name (a string)",
        "int": "an integer",
        "float": "a number",
        "number": "a number",
        "bool": "`true` or `false`",
        "list": "a list",
        "object": "an object",
        "any": "a value",
    }
    check = checks.get(name)
    if check is None:
        return None
    if not check(value):
        return f"must be {words[name]}, got {describe(value)}"
    if t.item is not None and isinstance(value, list):
        for i, item in enumerate(value):
            problem = _type_problem(item, t.item)
            if problem:
                return f"item {i} {problem}"
    return None


def _show_name(name: str) -> str:
    return format_name(name)


def _suggest_speaker(name: str, speakers: Mapping[str, Any]) -> str | None:
    import difflib

    close = difflib.get_close_matches(name, list(speakers), n=1, cutoff=0.6)
    return f"did you mean `{close[0]}`?" if close else None


class RuleCache:
    """The transitions each `when` rule lowered to, kept from one version of a document
    to the next (the language server's: :mod:`flowc.lsp.incremental` keeps the statements
    an edit did not touch, the same objects). A rule kept, under the same declarations
    (every other statement the same object) and bindings, lowers to the same
    transitions; only rules that lowered with no finding are kept, so every finding is
    made again. On a 10,000-rule file an edit then lowers the rules it touched."""

    def __init__(self) -> None:
        self._decls: tuple[n.Statement, ...] = ()
        self._bindings: dict[str, str] = {}
        self._of: ByIdentity[n.Rule, tuple[m.Transition, ...]] = ByIdentity()

    @property
    def reused(self) -> int:
        """How many rules were taken from it (for tests and benchmarks)."""
        return self._of.reused

    def begin(self, flow: n.Flow, bindings: Mapping[str, str]) -> None:
        """Before lowering ``flow``: forget every rule if a declaration or a binding changed."""
        decls = tuple(st for st in flow.statements if not isinstance(st, n.Rule))
        same = len(decls) == len(self._decls) and all(
            a is b for a, b in zip(decls, self._decls, strict=True)
        )
        if not same or dict(bindings) != self._bindings:
            self._of.clear()
        self._decls, self._bindings = decls, dict(bindings)

    def get(self, st: n.Rule) -> tuple[m.Transition, ...] | None:
        return self._of.get(st)

    def put(self, st: n.Rule, made: tuple[m.Transition, ...]) -> None:
        self._of.put(st, made)

    def __len__(self) -> int:
        return len(self._of)

    def end(self, flow: n.Flow) -> None:
        """After lowering ``flow``: keep only its rules."""
        self._of.keep_only(st for st in flow.statements if isinstance(st, n.Rule))


def lower(
    flow: n.Flow,
    filename: str = "<input>",
    bindings: Mapping[str, str] | None = None,
    cache: RuleCache | None = None,
) -> tuple[CompiledFlow | None, tuple[Diagnostic, ...]]:
    """Compile a parsed flow; returns ``(compiled or None, diagnostics)``. With
    ``cache``, the rules an earlier version lowered are taken from it (:class:`RuleCache`)."""
    if cache is not None:
        cache.begin(flow, bindings or {})
    lowering = _Lowering(flow, filename, bindings or {}, cache)
    compiled = lowering.run()
    if cache is not None:
        cache.end(flow)
    return compiled, tuple(lowering.diags)
