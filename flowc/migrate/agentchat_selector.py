"""``SelectorGroupChat(selector_func=, candidate_func=)`` in Python -> rules.

Neither function is written to component JSON; in Python they are visible. Each is read
statically (never imported or run) and lowered by :mod:`flowc.migrate.selectfn` (AgentChat
dialect) where its body is recognisable; the rest is reported (M001) instead of being
silently lost. See :class:`SelectorFunctions` for the semantics followed.
"""

from __future__ import annotations

import ast
from typing import Any

import attrs

import flowc.migrate.model as mm
from flowc.diagnostics import M001, M002, M003, Diagnostic
from flowc.dsl import nodes as n
from flowc.migrate.agentchat import AGENTS, REPEAT_MSG
from flowc.migrate.agents import AgentReader
from flowc.migrate.pyread import callee, kwarg
from flowc.migrate.selectfn import Outcome, Unsupported, lower_selection
from flowc.migrate.speaking_order import Next, NoText, guard_scenarios, order_scenarios, turn_text
from flowc.migrate.textpred import evaluate

#: what the JSON translation says about callables it cannot see (Python shows them)
#: a lowered path: source, guards, the names it returns (None: the model chooses), a witness text
_Lowered = tuple[str, tuple[n.Cond, ...], tuple[str, ...] | None, str | None]
JSON_ONLY_SELECTOR = "is never written to component JSON: if the Python team had one"
_SELECTOR_MSG = "model-based speaker selection became the selector speaker"
_REPEAT_MSG = REPEAT_MSG


class SelectorFunctions:
    """``SelectorGroupChat(selector_func=, candidate_func=)`` -> rules.

    autogen-agentchat 0.7.5 (``SelectorGroupChatManager.select_speaker``) calls
    ``selector_func(thread)`` before every turn, the first included (the thread then holds
    only the task, source ``"user"``); a name it returns speaks next, without the model and
    without the ``allow_repeated_speaker`` filter (so it may pick the previous speaker), and
    it does not update the manager's "previous speaker". ``None`` lets the model choose,
    among ``candidate_func(thread)`` when given (exactly one candidate: no model call) or
    among all participants but the previous model-chosen speaker when
    ``allow_repeated_speaker=False``.

    Each recognised outcome becomes ``when from S [and tests] then X``; a ``None`` becomes
    ``then selector`` (the selector speaker of the JSON translation, which stays for those
    turns only); when no path returns ``None`` the selector is dropped and the routing is
    exact.
    """

    def __init__(
        self,
        reader: AgentReader,
        team: ast.Call,
        data: dict[str, Any],
        mig: mm.Migration,
        findings: list[Diagnostic],
    ) -> None:
        self.r = reader
        self.mod = reader.mod
        self.team = team
        self.cfg: dict[str, Any] = data["config"]
        self.mig = mig
        self.findings = findings
        self.participants = [p["config"]["name"] for p in self.cfg["participants"]]
        self.user = mig.start
        self.selector = mm.free_name([*self.participants, self.user], "selector", "team_selector")
        self.sources = [self.user, *self.participants]
        self.uses_len = False
        #: a part of a function could not be lowered and the model stands in for it
        self.stood_in = False

    # ── reading ──

    def agent_name(self, e: ast.expr) -> str | None:
        """``"x"`` or ``x_agent.name`` -> a speaker (AgentChat's task source ``"user"`` is
        the synthesized task sender)."""
        value = self.mod.const_or(e, None)
        name: str | None = value if isinstance(value, str) else None
        if name is None and isinstance(e, ast.Attribute) and e.attr == "name":
            call = self.mod.deref(e.value)
            if isinstance(call, ast.Call) and callee(call) in AGENTS:
                got = self.mod.const_name_or(kwarg(call, "name", 0), None)
                name = got if isinstance(got, str) else None
        if name == "user" and "user" not in self.participants:
            return self.user
        return name if name in self.participants else None

    def function(
        self, key: str
    ) -> tuple[ast.expr, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda] | None:
        node = kwarg(self.team, key)
        if node is None or self.mod.const_or(node, "?") is None:
            return None
        value = self.mod.deref(node)
        fn: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | None = None
        if isinstance(value, ast.Lambda):
            fn = value
        elif isinstance(value, ast.Name):
            fn = self.mod.function_of(value)
        if fn is None:
            self.report_left_out(key, node, "it is not a `def` or a `lambda` of this file")
            return None
        return node, fn

    def report_left_out(self, key: str, at: ast.AST, why: str) -> None:
        instead = (
            "the selector speaker picks every turn instead"
            if key == "selector_func"
            else "the selector chooses among all participants instead"
        )
        self.findings.append(
            Diagnostic(
                M001,
                f"`{key}` could not be lowered to rules ({why}); {instead}",
                self.mod.source.name,
                self.mod.span(at),
                help="write it as an if/elif chain on `messages[-1].source` whose branches return a "
                "participant's name (or None), or write the `when from X then Y` rules by hand",
            )
        )

    def lower(
        self,
        key: str,
        fn: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda,
    ) -> list[tuple[Outcome, tuple[str, ...] | None]] | None:
        """Outcomes with the names they return (None: the model chooses); None if unrecognised."""
        label = fn.name if not isinstance(fn, ast.Lambda) else "lambda"
        try:
            outcomes = lower_selection(
                fn, self.sources, self.agent_name, dialect="agentchat", partial=True
            )
        except Unsupported as err:  # not the signature AgentChat calls
            self.report_left_out(key, err.node, f"`{label}`: {err.what}")
            return None
        out: list[tuple[Outcome, tuple[str, ...] | None]] = []
        # a part that cannot be lowered: the model chooses there (among all participants
        # for a candidate_func); each part is reported once, where it stands
        stand_in = None if key == "selector_func" else tuple(self.participants)
        parts: dict[int, tuple[ast.AST, str, list[str]]] = {}
        for o in outcomes:
            if o.unsupported is not None:
                node, what = o.unsupported.node, o.unsupported.what
            else:
                try:
                    out.append((o, self.returned(key, o)))
                    continue
                except Unsupported as err:
                    node, what = err.node, err.what
            out.append(
                (attrs.evolve(o, returned=None, witness=None, unsupported=None, rest=()), stand_in)
            )
            parts.setdefault(id(node), (node, what, []))[2].append(o.source)
            self.stood_in = True
        for node, what, whom in parts.values():
            instead = (
                "the selector speaker picks"
                if key == "selector_func"
                else "the selector chooses among all participants"
            )
            self.findings.append(
                Diagnostic(
                    M001,
                    f"part of `{key}` `{label}` could not be lowered to rules ({what}); it decides "
                    f"the next speaker after {', '.join(f'`{w}`' for w in dict.fromkeys(whom))} (where "
                    f"no branch before it applies): {instead} there instead; the other branches "
                    "became rules",
                    self.mod.source.name,
                    self.mod.span(node),
                    help="write that part as a test on `messages[-1].source` or on the last message's "
                    "text, or write its `when from X then Y` rules by hand",
                )
            )
        self.uses_len = self.uses_len or any(
            "turn_count_at_most" in repr(g) for o, _ in out for g in o.guards
        )
        return out

    def returned(self, key: str, o: Outcome) -> tuple[str, ...] | None:
        node = o.returned
        if key == "selector_func":
            if node is None:
                return None
            name = self.agent_name(node)
            if name is None or name == self.user:
                raise Unsupported(node, self.not_a_name(node))
            return (name,)
        elements = self.mod.elements(node) if node is not None else None
        if not elements:
            raise Unsupported(
                node or self.team,
                "a path that returns no candidate list (AgentChat raises ValueError)",
            )
        names = [self.agent_name(e) for e in elements]
        if any(x is None or x == self.user for x in names):
            raise Unsupported(node or self.team, "a candidate that is not a participant's name")
        return tuple(dict.fromkeys(x for x in names if x is not None))

    def not_a_name(self, node: ast.expr) -> str:
        if isinstance(self.mod.const_or(node, None), str):
            return (
                f"`{ast.unparse(node)}` is not a participant's name (AgentChat raises ValueError)"
            )
        text = ast.unparse(node)
        why = f"`{text}` is computed at run time"
        if "[-2]" in text:
            why += "; the speaker before the last is history a flow's state does not keep"
        return why

    # ── writing ──

    def apply(
        self, sequences: tuple[tuple[str, ...], ...]
    ) -> tuple[mm.Migration, tuple[tuple[str, ...], ...]]:
        sel = self.function("selector_func")
        cand = self.function("candidate_func")
        sel_out = self.lower("selector_func", sel[1]) if sel is not None else None
        cand_out = self.lower("candidate_func", cand[1]) if cand is not None else None
        if sel_out is None and cand_out is None:
            return self.mig, sequences
        if sel_out is None:  # the model (with candidates) picks after every turn
            sel_out = [(Outcome(s, (), None), None) for s in self.sources]
        # (source, guards, candidates): one candidate speaks next; several: the selector
        lowered: list[_Lowered] = []
        for o, names in sel_out:
            if names is not None or cand_out is None:
                lowered.append((o.source, o.guards, names, o.witness))
                continue
            for c, cnames in cand_out:
                if c.source == o.source:
                    both = o.guards + c.guards
                    lowered.append(
                        (o.source, both, cnames, c.witness if both == c.guards else None)
                    )
        advisory = [x for x in lowered if x[2] is None or len(x[2]) > 1]
        rules = self.rules(lowered)
        mig = self.mig
        kept: list[mm.Rule] = []
        for rule in mig.rules:
            if (
                isinstance(rule.target, n.SpeakerTarget)
                and rule.target.speaker.value == self.selector
                and isinstance(rule.cond, n.FromCond)
            ):
                kept += rules  # the selector no longer speaks after every turn
            elif not advisory and self.selector_only(rule):
                continue
            else:
                kept.append(rule)
        notes = list(mig.notes)
        what = " and ".join(
            f"{k}={self.label(f[1])}"
            for k, f in (("selector_func", sel), ("candidate_func", cand))
            if f is not None
        )
        speakers = list(mig.speakers)
        max_turns = mig.max_turns
        max_comment = mig.max_turns_comment
        if advisory:
            self.rewrite_selector_finding(sel is not None, cand_out is not None)
            if max_turns is not None:
                max_turns = (max_turns + 1) // 2
                max_comment = (
                    "AgentChat's cap; the selector's turns count too (it speaks only "
                    "where the functions leave the choice to the model): raise it if "
                    "runs end early"
                )
            speakers = self.restrict_selector(speakers, advisory, cand_out is not None)
            if cand_out is not None:
                kept = [
                    r for r in kept if not self.selector_only(r) or self.transfer_kept(r, speakers)
                ]
        else:
            speakers = [s for s in speakers if s.name != self.selector]
            if max_turns is not None:
                max_turns = (max_turns + 1) // 2
            self.drop_selector_findings()
        exact = not advisory and not any(d.code is M001 for d in self.findings)
        if exact and self.uses_len and any(s.tools for s in speakers):
            exact = False
            self.findings.append(
                Diagnostic(
                    M002,
                    "`len(messages)` also counts AgentChat's tool-call events; the flow counts "
                    "turns",
                    self.mod.source.name,
                    self.mod.span(self.team),
                )
            )
        scenarios: list[n.Scenario] = []
        new_sequences: list[tuple[str, ...]] = []
        if exact:
            scenarios, new_sequences = self.scenarios(lowered, kept, max_turns)
            exact = bool(scenarios)
        if advisory and not any(d.code is M001 for d in self.findings):
            scenarios = self.selector_scenario(lowered, kept, speakers, max_turns)
        notes = [
            f"SelectorGroupChat with {what} (lowered to rules)"
            + (", speaker order read statically (the scenarios state it)" if exact else "")
            + ".",
            *notes[1:],
        ]
        mig = attrs.evolve(
            mig,
            rules=tuple(kept),
            speakers=tuple(speakers),
            max_turns=max_turns,
            max_turns_comment=max_comment,
            notes=tuple(notes),
            scenarios=tuple(scenarios) if exact or advisory else mig.scenarios,
        )
        return mig, (tuple(new_sequences) if exact else sequences)

    def label(self, fn: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> str:
        return "a lambda" if isinstance(fn, ast.Lambda) else fn.name

    def target(self, names: tuple[str, ...] | None) -> n.Target:
        if names is not None and len(names) == 1:
            return mm.speaker_target(names[0])
        return mm.speaker_target(self.selector)

    def rules(self, lowered: list[_Lowered]) -> list[mm.Rule]:
        """Guarded outcomes in order, then each source's final outcome grouped by target
        (rules of different sources never overlap: only each source's order matters)."""
        rules: list[mm.Rule] = []
        finals: dict[str, tuple[n.Target, list[str], str | None]] = {}
        for src, guards, names, _ in lowered:
            target = self.target(names)
            if guards:
                rules.append(mm.Rule(n.AndCond((mm.from_(src), *guards), mm.S), target))
                continue
            comment = (
                (
                    "the model chooses (selector_func returned None, or it could not be lowered "
                    "there: see the findings)"
                    if self.stood_in
                    else "the model chooses (selector_func returned None)"
                )
                if names is None
                else "the model chooses among candidate_func's list"
                if len(names) > 1
                else None
            )
            finals.setdefault(repr(target), (target, [], comment))[1].append(src)
        for target, members, comment in finals.values():
            rules.append(mm.Rule(mm.from_(*members), target, 0, comment))
        return rules

    def selector_only(self, rule: mm.Rule) -> bool:
        """The JSON translation's selector rules: its transfer tools and its `from selector`."""
        if isinstance(rule.cond, n.ToolCond) and isinstance(rule.target, n.SpeakerTarget):
            return rule.cond.tool.value == f"transfer_to_{rule.target.speaker.value}"
        return isinstance(rule.cond, n.FromCond) and [s.value for s in rule.cond.speakers] == [
            self.selector
        ]

    def transfer_kept(self, rule: mm.Rule, speakers: list[mm.Speaker]) -> bool:
        if not isinstance(rule.cond, n.ToolCond):
            return True
        tools = {t.name for s in speakers if s.name == self.selector for t in s.tools}
        return rule.cond.tool.value in tools

    def restrict_selector(
        self, speakers: list[mm.Speaker], advisory: list[_Lowered], with_candidates: bool
    ) -> list[mm.Speaker]:
        if not with_candidates:
            return speakers
        union = [p for p in self.participants if any(p in (x[2] or ()) for x in advisory)]
        per_source = "; ".join(
            f"after {src}: {', '.join(names)}" for src, _, names, _ in advisory if names is not None
        )
        self.findings.append(
            Diagnostic(
                M002,
                "`candidate_func`'s lists became advice to the selector speaker (its role and its "
                f"transfer tools): {per_source}; the flow does not stop it from picking another "
                "of its tools",
                self.mod.source.name,
                self.mod.span(kwarg(self.team, "candidate_func") or self.team),
            )
        )
        out = []
        for s in speakers:
            if s.name == self.selector:
                s = attrs.evolve(
                    s,
                    role=f"Candidates (candidate_func): {per_source}. {s.role or ''}",
                    tools=tuple(t for t in s.tools if t.name.removeprefix("transfer_to_") in union),
                )
            out.append(s)
        return out

    def rewrite_selector_finding(self, has_selector_func: bool, has_candidates: bool) -> None:
        for i, d in enumerate(self.findings):
            if _SELECTOR_MSG in d.message and has_selector_func:
                at = kwarg(self.team, "selector_func")
                self.findings[i] = attrs.evolve(
                    d,
                    span=self.mod.span(at or self.team),
                    message=(
                        f"where `selector_func` returns None the model chooses: those turns go to the "
                        f"selector speaker `{self.selector}` with one `transfer_to_<agent>` tool per "
                        "candidate; its turns count toward max_turns"
                    ),
                )
            elif _REPEAT_MSG in d.message:
                at = kwarg(self.team, "allow_repeated_speaker")
                self.findings[i] = attrs.evolve(
                    d,
                    span=self.mod.span(at or self.team),
                    message=(
                        d.message + " (with `selector_func` that is the speaker the model chose "
                        "last, not the last one who spoke: its own picks do not count, which the "
                        "flow's rules cannot follow)"
                        if has_selector_func
                        else f"{_REPEAT_MSG}: AgentChat takes the candidates from "
                        "`candidate_func`, but still asks the model again when it names the "
                        "previous speaker; the selector speaker may pick that speaker among "
                        "its transfer tools"
                    ),
                )

    def drop_selector_findings(self) -> None:
        repeat = next((d for d in self.findings if _REPEAT_MSG in d.message), None)
        self.findings[:] = [
            d
            for d in self.findings
            if _SELECTOR_MSG not in d.message
            and _REPEAT_MSG not in d.message
            and not (d.code is M003 and "configures the selector model" in d.message)
        ]
        at = kwarg(self.team, "allow_repeated_speaker")
        if repeat is not None and at is not None:  # the default is not worth a word
            self.findings.append(
                attrs.evolve(
                    repeat,
                    code=M003,
                    span=self.mod.span(at or self.team),
                    message=(
                        "`allow_repeated_speaker=False` has no effect: `selector_func` picks every speaker "
                        "and AgentChat does not filter its picks; dropped"
                    ),
                )
            )

    def kickoff(self) -> str | None:
        for c in self.mod.calls():
            if callee(c) in ("run", "run_stream"):
                task = self.mod.const_or(kwarg(c, "task", 0), None)
                if isinstance(task, str) and task:
                    return task
        return None

    def scenarios(
        self,
        lowered: list[_Lowered],
        rules: list[mm.Rule],
        max_turns: int | None,
    ) -> tuple[list[n.Scenario], list[tuple[str, ...]]]:
        term = [r for r in rules if r.priority < 0]
        avoid: list[n.Cond] = [r.cond for r in term if isinstance(r.cond, n.CallCond)]
        defaults: dict[str, Next] = {}
        guarded: list[tuple[str, tuple[n.Cond, ...], Next, str | None]] = []
        for src, guards, names, witness in lowered:
            assert names is not None and len(names) == 1
            if not guards:
                defaults.setdefault(src, Next("agent", names[0]))
            else:
                avoid += list(guards)
                guarded.append((src, guards, Next("agent", names[0]), witness))
        if any(evaluate(c, "") is None for c in avoid):
            return [], []
        cap = max_turns if max_turns is not None else 10**6
        kickoff = self.kickoff()
        found = order_scenarios(self.user, defaults, cap, None, None, kickoff, avoid)
        found = [(t.replace("classic", "AgentChat"), seq, items) for t, seq, items in found]
        found += guard_scenarios(self.user, defaults, guarded, cap, avoid, kickoff)
        mention = [
            r.cond
            for r in term
            if isinstance(r.cond, n.CallCond)
            and r.cond.name.value == "text_contains"
            and isinstance(r.target, n.TerminateTarget)
        ]
        first = defaults[self.user].agent if self.user in defaults else None
        if mention and first is not None and cap >= 2:
            text = f"All done. {mention[0].args[0].value.value}"
            if all(evaluate(g, text) is False for g in avoid if g is not mention[0]):
                start = (
                    kickoff
                    if kickoff and all(evaluate(c, kickoff) is False for c in avoid)
                    else "the task"
                )
                found.append(
                    (
                        "the mention ends the run",
                        (self.user, first),
                        [
                            mm.say(self.user, start),
                            mm.say(first, text),
                            mm.expect_terminate("text_mention"),
                        ],
                    )
                )
        return [mm.scenario(t, items) for t, _, items in found], [seq for _, seq, _ in found]

    def selector_scenario(
        self,
        lowered: list[_Lowered],
        rules: list[mm.Rule],
        speakers: list[mm.Speaker],
        max_turns: int | None,
    ) -> list[n.Scenario]:
        """The translated behaviour where the model chooses (not a claim about AgentChat: the
        model's choice is scripted): the functions' own picks up to the first model turn,
        then the selector speaker transfers to its first candidate."""
        finals = {src: names for src, guards, names, _ in lowered if not guards}
        avoid = [r.cond for r in rules if r.priority < 0] + [g for x in lowered for g in x[1]]
        if any(evaluate(c, "") is None for c in avoid):
            return []
        seq = [self.user]
        while seq[-1] in finals and (names := finals[seq[-1]]) is not None and len(names) == 1:
            if len(seq) >= 6:
                return []
            seq.append(names[0])
        tools = [t.name for s in speakers if s.name == self.selector for t in s.tools]
        if (
            seq[-1] not in finals
            or not tools
            or (max_turns is not None and max_turns < len(seq) + 2)
        ):
            return []
        pick = tools[0].removeprefix("transfer_to_")
        try:
            items: list[n.ScenarioItem] = [
                mm.say(sp, turn_text(sp, i + 1, avoid)) for i, sp in enumerate(seq)
            ]
        except NoText:
            return []
        kickoff = self.kickoff()
        if kickoff and all(evaluate(c, kickoff) is False for c in avoid):
            items[0] = mm.say(self.user, kickoff)
        items += [
            mm.expect_next(self.selector),
            mm.calls(self.selector, tools[0]),
            mm.expect_next(pick),
        ]
        return [
            mm.scenario("the selector speaker picks where the functions leave the choice", items)
        ]


__all__ = ["JSON_ONLY_SELECTOR", "SelectorFunctions"]
