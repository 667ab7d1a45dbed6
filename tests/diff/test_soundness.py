"""`flowc diff` is sound, on random flows and random edits of them.

- When diff says "the same", an independent brute-force enumerator of runs
  (:mod:`tests.diff.brute_force`, which shares no code with flowc's analysis) finds no
  run of up to :data:`DEPTH` turns that tells the two versions apart, whatever the
  participants do and whatever custom conditions and targets decide.
- When diff says "changed", its distinguishing run, replayed with ``flowc.run`` on both
  versions (under two plugins that decide custom conditions and targets differently),
  goes where diff says on each, and the two really differ.
- "unknown" claims nothing; it must give a reason.

The edits are those a pull request makes: a priority, a removed rule, a rule's target,
a close reason, a rule's condition, a declaration (a human's keys, a tool's
alternatives), a cap or an initiator.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Iterator
from typing import Any, ClassVar

import attrs
import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

import flowc
from flowc import compile_flow
from flowc.compiler.analysis import graph_contexts
from flowc.compiler.analysis.changes import CHANGED, SAME, Version, diff_versions
from flowc.compiler.analysis.facts import CheckOptions
from flowc.compiler.analysis.lockstep import MAX_TURNS, Routed, Turn
from flowc.compiler.analysis.system import UNSET, Action
from flowc.compiler.lower import CompiledFlow, ToolEffectInfo
from flowc.compiler.model import values_equal
from flowc.compiler.pipeline import compile_source
from flowc.diagnostics import has_errors
from flowc.runtime import TransitionDecision
from flowc.runtime.script import Script, ScriptCall, ScriptError, ScriptTurn
from flowc.runtime.transitions import default_registry
from flowc.source import SourceFile
from tests.diff.brute_force import Effect, first_difference

#: the brute force's depth: runs of up to this many turns
DEPTH = 7
OPTIONS = CheckOptions(max_states=20_000)

NAMES = ["user", "a", "b", "c"]
VALUES = {"k": ['"x"', '"y"', "true", "1"], "j": ["1", "2", "1.0"]}
REASONS = ['"t"', '"u"']
FINISHES = ['"fin"', '"fin2"']


# ── the flows ─────────────────────────────────────────────────────────────────


@attrs.define
class Spec:
    """A flow as data, so that an edit changes one thing."""

    speakers: list[str]
    human: bool  # `user` is a human
    human_sets: list[str]
    tools: dict[str, dict[str, list[str]]]  # speaker -> tool -> alternatives (empty: a plain tool)
    rules: list[list[str]]  # [condition, target, priority]
    default: str | None
    max_turns: int | None
    initiator: str | None
    context: bool  # `context k = "x"`
    customs: bool  # declare and use the custom condition and target
    start: str = "user"
    picks: tuple[str, ...] = ()  # the custom target's declared results (no edit changes them)

    def text(self) -> str:
        lines = []
        if self.customs:
            lines += [
                "condition urgent(level: int = 1)",
                "target pick() -> " + " | ".join(self.picks) + " | terminate",
            ]
        for s in self.speakers:
            role = ": human" if s == "user" and self.human else ""
            body = []
            if role and self.human_sets:
                body.append(f"  sets {', '.join(self.human_sets)}")
            for tool, alts in self.tools.get(s, {}).items() if not role else ():
                body.append(f"  tool {tool} {' | '.join(alts)}".rstrip())
            lines += [f"speaker {s}{role} {{", *body, "}"] if body else [f"speaker {s}{role}"]
        lines.append(f"start {self.start}")
        if self.max_turns is not None:
            lines.append(f"max_turns {self.max_turns}")
        if self.initiator is not None:
            lines.append(f"initiator {self.initiator}")
        if self.context:
            lines.append('context k = "x"')
        for cond, target, prio in self.rules:
            lines.append(
                f"when {cond} then {target}" + (f" priority {prio}" if prio != "0" else "")
            )
        if self.default is not None:
            lines.append(f"otherwise {self.default}")
        return "\n".join(lines) + "\n"


@st.composite
def condition(draw: Any, spec: Spec, depth: int = 0) -> str:
    kinds = ["from", "from", "tool", "ctx", "ctxne", "always"]
    if spec.customs:
        kinds.append("custom")
    if depth == 0:
        kinds += ["and", "not"]
    kind = draw(st.sampled_from(kinds))
    if kind == "from":
        return f"from {draw(st.sampled_from(spec.speakers))}"
    if kind == "tool":
        return f"tool {draw(st.sampled_from(['t1', 't2']))}"
    if kind in ("ctx", "ctxne"):
        key = draw(st.sampled_from(sorted(VALUES)))
        op = "==" if kind == "ctx" else "!="
        return f"context.{key} {op} {draw(st.sampled_from([*VALUES[key], 'null']))}"
    if kind == "always":
        return "always"
    if kind == "custom":
        return draw(st.sampled_from(["urgent()", "urgent(level = 2)"]))
    if kind == "not":
        return f"not ({draw(condition(spec, depth + 1))})"
    return f"({draw(condition(spec, depth + 1))}) and ({draw(condition(spec, depth + 1))})"


@st.composite
def target(draw: Any, spec: Spec) -> str:
    options = [*spec.speakers, "next", "stay", "initiator", *(f"terminate {r}" for r in REASONS)]
    if spec.customs:
        options.append("pick()")
    return draw(st.sampled_from(options))


@st.composite
def alternative(draw: Any, spec: Spec) -> str:
    effect = draw(st.sampled_from(["set", "set", "clear", "handoff", "finish"]))
    key = draw(st.sampled_from(sorted(VALUES)))
    if effect == "set":
        return f"sets {key} = {draw(st.sampled_from(VALUES[key]))}"
    if effect == "clear":
        return f"clears {key}"
    if effect == "handoff":
        return f"hands off to {draw(st.sampled_from(spec.speakers))}"
    return f"finishes {draw(st.sampled_from(FINISHES))}"


@st.composite
def tool_alternatives(draw: Any, spec: Spec) -> list[str]:
    alts = draw(st.lists(alternative(spec), max_size=2, unique=True))
    return alts


@st.composite
def rule(draw: Any, spec: Spec) -> list[str]:
    return [draw(condition(spec)), draw(target(spec)), draw(st.sampled_from(["0", "0", "5", "-1"]))]


@st.composite
def spec(draw: Any) -> Spec:
    n = draw(st.integers(2, 4))
    s = Spec(
        NAMES[:n],
        draw(st.booleans()),
        [],
        {},
        [],
        None,
        None,
        None,
        draw(st.booleans()),
        draw(st.integers(0, 3)) == 0,
    )
    s.picks = tuple(s.speakers[1:])
    if s.human:
        s.human_sets = draw(st.lists(st.sampled_from(sorted(VALUES)), unique=True, max_size=2))
    for who in s.speakers:
        if who == "user" and s.human:
            continue
        names = draw(st.lists(st.sampled_from(["t1", "t2"]), unique=True, max_size=2))
        s.tools[who] = {t: draw(tool_alternatives(s)) for t in names}
    s.rules = draw(st.lists(rule(s), min_size=1, max_size=6))
    if draw(st.booleans()):
        s.default = draw(target(s))
    if draw(st.booleans()):
        s.max_turns = draw(st.integers(1, 8))
    if draw(st.integers(0, 3)) == 0:
        s.initiator = draw(st.sampled_from(s.speakers))
    return s


EDITS = [
    "tool alternatives",
    "removal",
    "target",
    "close reason",
    "condition",
    "human sets",
    "priority",
    "tools",
    "max_turns",
    "initiator",
    "speakers",
    "human",
]


@st.composite
def edit(draw: Any, old: Spec) -> tuple[Spec, str]:
    new = copy.deepcopy(old)
    kind = draw(st.sampled_from(EDITS))
    i = draw(st.integers(0, len(new.rules) - 1))
    if kind == "priority":
        new.rules[i][2] = draw(
            st.sampled_from([p for p in ("0", "5", "-1", "100") if p != new.rules[i][2]])
        )
    elif kind == "removal":
        assume(len(new.rules) > 1)
        del new.rules[i]
    elif kind == "target":
        new.rules[i][1] = draw(target(new))
    elif kind == "close reason":
        places = [j for j, r in enumerate(new.rules) if r[1].startswith("terminate")]
        tools = [
            (w, t, a)
            for w, ts in new.tools.items()
            for t, alts in ts.items()
            for a, x in enumerate(alts)
            if x.startswith("finishes")
        ]
        choice = draw(st.sampled_from(["rule", "default", "tool"]))
        if choice == "rule" and places:
            j = draw(st.sampled_from(places))
            new.rules[j][1] = "terminate " + ('"u"' if new.rules[j][1].endswith('"t"') else '"t"')
        elif choice == "tool" and tools:
            w, t, a = draw(st.sampled_from(tools))
            alts = new.tools[w][t]
            alts[a] = 'finishes "fin2"' if alts[a].endswith('"fin"') else 'finishes "fin"'
            assume(len(set(alts)) == len(alts))
        else:
            new.default = (
                'terminate "closed"' if new.default != 'terminate "closed"' else 'terminate "t"'
            )
    elif kind == "condition":
        new.rules[i][0] = draw(condition(new))
    elif kind == "human sets":
        assume(new.human)
        key = draw(st.sampled_from(sorted(VALUES)))
        new.human_sets = (
            [k for k in new.human_sets if k != key]
            if key in new.human_sets
            else sorted([*new.human_sets, key])
        )
    elif kind == "tool alternatives":
        owned = [(w, t) for w, ts in new.tools.items() for t in ts]
        assume(owned)
        w, t = draw(st.sampled_from(owned))
        alts = new.tools[w][t]
        how = draw(st.sampled_from(["add", "drop", "change", "reorder"]))
        if how == "add" or not alts:
            alts.append(draw(alternative(new)))
        elif how == "drop":
            alts.pop(draw(st.integers(0, len(alts) - 1)))
        elif how == "change":
            alts[draw(st.integers(0, len(alts) - 1))] = draw(alternative(new))
        else:
            alts.reverse()
        assume(len(set(alts)) == len(alts))
    elif kind == "tools":
        models = [w for w in new.speakers if w in new.tools]
        assume(models)
        w = draw(st.sampled_from(models))
        missing = [t for t in ("t1", "t2") if t not in new.tools[w]]
        if missing and draw(st.booleans()):
            new.tools[w][missing[0]] = draw(tool_alternatives(new))
        else:
            assume(new.tools[w])
            del new.tools[w][draw(st.sampled_from(sorted(new.tools[w])))]
    elif kind == "speakers":  # the participants: one more, or another order (`next` goes round it)
        if len(new.speakers) < len(NAMES) and draw(st.booleans()):
            new.speakers.append(NAMES[len(new.speakers)])
        else:
            j = draw(st.integers(0, len(new.speakers) - 2))
            new.speakers[j], new.speakers[j + 1] = new.speakers[j + 1], new.speakers[j]
    elif kind == "human":  # `user` becomes a human, or a model speaker
        new.human = not new.human
        if new.human:
            new.human_sets = draw(
                st.lists(st.sampled_from(sorted(VALUES)), unique=True, max_size=2)
            )
        else:
            new.tools["user"] = {
                t: draw(tool_alternatives(new))
                for t in draw(st.lists(st.sampled_from(["t1", "t2"]), unique=True, max_size=2))
            }
    elif kind == "max_turns":
        new.max_turns = draw(st.sampled_from([None, 1, 2, 3, 5]))
    else:
        new.initiator = draw(st.sampled_from([None, *new.speakers]))
    return new, kind


@st.composite
def flow_and_edit(draw: Any) -> tuple[str, str, str]:
    old = draw(spec())
    new, kind = draw(edit(old))
    old_text, new_text = old.text(), new.text()
    for text in (old_text, new_text):
        compiled, diags = compile_source(SourceFile("gen.flow", text))
        assume(compiled is not None and not has_errors(diags))
    return old_text, new_text, kind


# ── replaying a distinguishing run ────────────────────────────────────────────

#: how the test plugins decide: the custom condition's answer, and the custom target's
#: pick (the first or the last of its declared results)
MODE: dict[str, Any] = {"urgent": False, "pick": 0}


@attrs.frozen
class Urgent:
    name: ClassVar[str] = "urgent"
    level: int = 1

    def evaluate(self, state: Any, envelope: Any) -> bool:
        return bool(MODE["urgent"])


@attrs.frozen
class Pick:
    name: ClassVar[str] = "pick"

    def resolve(self, state: Any, envelope: Any) -> TransitionDecision:
        options = MODE["options"]
        chosen = options[0] if MODE["pick"] == 0 else options[-1]
        return (
            TransitionDecision(chosen)
            if chosen is not None
            else TransitionDecision(None, "picked_end")
        )


@pytest.fixture(scope="module", autouse=True)
def plugins() -> Iterator[None]:
    reg = default_registry()
    conditions, targets = dict(reg._conditions), dict(reg._targets)
    flowc.register_condition(Urgent)
    flowc.register_target(Pick)
    yield
    reg._conditions, reg._targets = conditions, targets


OTHER = "§another value§"


def _call(compiled: CompiledFlow, other: CompiledFlow, turn: Turn) -> ScriptCall:
    """A turn's tool call as a script gives it: for a tool of several alternatives, the one
    with the turn's effects (a scenario's `calls T EFFECTS`, which names it exactly)."""
    assert turn.tool is not None
    if turn.effects is None:  # (and every call of a bare graph's tools)
        return ScriptCall(tool=turn.tool)
    declared = [
        a
        for c in (compiled, other)
        for t in c.tools_of(turn.speaker)
        if t.name == turn.tool
        for a in t.alternatives
    ]
    key = next(Effect.of(a) for a in declared if a.text() == turn.effects)
    mine = [
        a for t in compiled.tools_of(turn.speaker) if t.name == turn.tool for a in t.alternatives
    ]
    chosen = next(
        (a for a in mine if Effect.of(a) == key), next(a for a in declared if Effect.of(a) == key)
    )
    return ScriptCall(
        tool=turn.tool,
        effects=ToolEffectInfo(chosen.sets, chosen.clears, chosen.handoff, chosen.finish),
    )


def script_of(
    compiled: CompiledFlow, other: CompiledFlow, run: tuple[Turn, ...], graphs: bool
) -> Script:
    turns: dict[str, list[ScriptTurn]] = {}
    kickoff: str | None = None
    for i, turn in enumerate(run):
        calls: tuple[ScriptCall, ...] = ()
        writes = {
            "set": {
                k: OTHER if v == "another value" else v for k, v in turn.context if v is not None
            },
            "delete": tuple(k for k, v in turn.context if v is None),
        }
        if graphs and (turn.tool is not None or turn.handoff is not None):
            # a graph's participant: the call writes the turn's context and may hand off
            calls = (ScriptCall(tool=turn.tool, handoff=turn.handoff, **writes),)
        elif turn.tool is not None:
            calls = (_call(compiled, other, turn),)
        elif turn.context:
            calls = (
                ScriptCall(
                    set={
                        k: OTHER if v == "another value" else v
                        for k, v in turn.context
                        if v is not None
                    },
                    delete=tuple(k for k, v in turn.context if v is None),
                ),
            )
        say = f"turn {i + 1}"
        if i == 0 and not calls:
            kickoff = say
            continue
        mine = turns.setdefault(turn.speaker, [])
        mine.append(ScriptTurn(say, calls, f"script.{turn.speaker}[{len(mine)}]"))
    if graphs:  # a bare graph: the participants and the creator are the script's
        # (a graph does not say who is human: one whose kickoff writes context is)
        opener = (run[0].speaker,) if run and run[0].context else ()
        return Script(
            kickoff,
            {s: tuple(t) for s, t in turns.items()},
            tuple(compiled.speakers),
            opener,
            compiled.initiator,
        )
    return Script(kickoff, {s: tuple(t) for s, t in turns.items()})


def _kinds_conflict(run: tuple[Turn, ...]) -> bool:
    """Whether a run of graphs has its opener write at the kickoff, as a human does, and
    call a tool or hand off later, as a model speaker does."""
    opener = run[0] if run else None
    return (
        opener is not None
        and bool(opener.context)
        and any(t.speaker == opener.speaker and (t.tool or t.handoff) for t in run[1:])
    )


def replay(text: str, other_text: str, run: tuple[Turn, ...], graphs: bool) -> tuple[Any, ...]:
    """What ``flowc.run`` does after the run's turns: ("refused",), ("end", reason) or
    ("speaker", who scheduled next). ``graphs``: run the compiled graph (no declarations)."""
    compiled, other = compile_flow(text), compile_flow(other_text)
    if run and run[0].context and run[0].speaker not in compiled.humans and not graphs:
        # a model start speaker's kickoff is a plain message (AG2's channel.send; the
        # checker and diff read it so), though a script may give it a tool call
        return ("refused",)
    pick = next((d.results for d in compiled.customs if d.name == "pick"), None)
    MODE["options"] = list(pick) if pick else [None]
    try:
        result = flowc.run(
            compiled.knobs if graphs else compiled, script_of(compiled, other, run, graphs)
        )
    except ScriptError:
        return ("refused",)
    assert result.error is None, result.error
    assert result.turn_count == len(run), (
        result.turn_count,
        result.close_reason,
        result.stalled_on,
    )
    if result.close_reason is not None:
        return ("end", result.close_reason)
    return ("speaker", result.stalled_on)


def expected(r: Routed) -> tuple[Any, ...]:
    if r.refused is not None:
        return ("refused",)
    if r.next is None:
        return ("end", MAX_TURNS if r.reason == MAX_TURNS else r.reason)
    return ("speaker", r.next)


def check(old_text: str, new_text: str, as_graphs: bool = False) -> str:
    d = diff_versions(
        Version("old.flow", compile_flow(old_text)),
        Version("new.flow", compile_flow(new_text)),
        OPTIONS,
        as_graphs=as_graphs,
    )
    if d.verdict == SAME:
        found = first_difference(old_text, new_text, DEPTH, graphs=d.as_graphs)
        assert found is None, ("diff says the same", d.as_graphs, old_text, new_text, found)
    elif d.verdict == CHANGED:
        assert d.first is not None and d.first.run is not None and d.first.old and d.first.new
        run = d.first.run
        assert all(t.certain for t in run)
        if d.as_graphs and _kinds_conflict(run):
            # a graph does not say who is human: the run's opener writes at the kickoff (a
            # human) and calls a tool later (a model), which no one script can play; the
            # brute force, which reads the graphs alike, tells them apart as soon
            found = first_difference(old_text, new_text, len(run), graphs=True)
            assert found is not None and len(found.run) == len(run), (old_text, new_text, run)
            event("graphs: a run no one script plays")
            return d.verdict
        seen = []
        for urgent, pick in ((False, 0), (True, 1)):
            MODE.update(urgent=urgent, pick=pick)
            got_old = replay(old_text, new_text, run, d.as_graphs)
            got_new = replay(new_text, old_text, run, d.as_graphs)
            for got, want in ((got_old, expected(d.first.old)), (got_new, expected(d.first.new))):
                if want[0] == "end" and want[1] is None:  # ended by a custom target
                    assert got == ("end", "picked_end"), (old_text, new_text, run, got)
                else:
                    assert got == want, (old_text, new_text, run, got, want)
            assert got_old != got_new, (old_text, new_text, run, got_old)
            seen.append((got_old, got_new))
    else:
        assert d.reason, (old_text, new_text)
        if d.first is not None and d.first.run is not None and len(d.first.run) <= DEPTH:
            # a run that custom conditions or targets may tell apart: the brute force,
            # which tries what they decide, tells the versions apart too
            found = first_difference(old_text, new_text, len(d.first.run), graphs=d.as_graphs)
            assert found is not None, (
                "diff says a run may differ",
                old_text,
                new_text,
                d.first.run,
            )
    return d.verdict


@pytest.mark.parametrize("as_graphs", [False, True], ids=["flows", "as-graphs"])
@settings(
    max_examples=500,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(case=flow_and_edit())
def test_diff_verdicts_hold_on_random_edits(as_graphs: bool, case: tuple[str, str, str]) -> None:
    """Each verdict on a random edit, checked by the brute force and by replaying its run.
    As graphs (`--as-graphs`, or a side that is a JSON graph) nothing is declared: any
    participant may call any tool, write any context and hand off to any participant; the
    brute force reads both versions so too, and each run is replayed on the graphs."""
    old_text, new_text, kind = case
    event(f"edit: {kind}")
    event(f"verdict: {check(old_text, new_text, as_graphs=as_graphs)}")


def _every_context(
    self: graph_contexts.Contexts, io: int, in_: int, ao: Action | str, an: Action | str
) -> list[Any]:
    """A turn's contexts as the search tried them before it told them apart by the keys
    the turn's rules read: every context of every key, in order (the first for a
    hand-off). Worked out here, not by :class:`Contexts`: the reference of the test below."""
    full = getattr(self, "every", None)
    if full is None:
        full = self.every = _all_contexts(self.old, self.new)  # type: ignore[attr-defined]
    handoff = any(isinstance(a, Action) and a.handoff is not None for a in (ao, an))
    return full[:1] if handoff else full


def _all_contexts(old: Any, new: Any) -> list[Any]:
    """Every context the participants of two graphs may write, in order: keys in order
    (the first most significant), each unset, a value a rule of either compares it with,
    or another, the key's value before the run first; as each side abstracts it."""
    keys: dict[str, list[Any]] = {}
    for side in (old, new):
        for k, lits in zip(side.system.keys, side.system.literals, strict=True):
            seen = keys.setdefault(k, [])
            seen += [lit for lit in lits if not any(values_equal(lit, x) for x in seen)]
    domains = []
    for k, lits in keys.items():
        domain = [graph_contexts.UNSET_VALUE, *lits, graph_contexts.OTHER_VALUE]
        before = [s.system.initial_context[k] for s in (old, new) if k in s.system.initial_context]
        if before:
            first = next((x for x in lits if values_equal(x, before[0])), domain[-1])
            domain.remove(first)
            domain.insert(0, first)
        domains.append(domain)
    out, seen_pairs = [], set()
    for values in itertools.islice(itertools.product(*domains), graph_contexts.MAX_CONTEXTS):
        given = dict(zip(keys, values, strict=True))
        vo, vn = (
            tuple(s.abstract(k, given[k]) if k in s.key_index else UNSET for k in s.system.keys)
            for s in (old, new)
        )
        if (vo, vn) not in seen_pairs:
            seen_pairs.add((vo, vn))
            shown = tuple(
                (k, None if v is graph_contexts.UNSET_VALUE else "another value")
                if isinstance(v, graph_contexts.Token)
                else (k, v)
                for k, v in given.items()
            )
            out.append((shown, vo, vn))
    return out


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(case=flow_and_edit())
def test_graph_turns_give_the_report_of_every_context(case: tuple[str, str, str]) -> None:
    """Between graphs a turn tries one context of each set that the keys its rules read
    tell apart: the report (verdict, reason, runs, changes) is the one that trying every
    context on every turn gives."""
    old_text, new_text, _ = case

    def report() -> Any:
        return diff_versions(
            Version("old.flow", compile_flow(old_text)),
            Version("new.flow", compile_flow(new_text)),
            OPTIONS,
            as_graphs=True,
        )

    told = report()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(graph_contexts.Contexts, "of", _every_context)
        every = report()
    assert told == every, (old_text, new_text)


#: only a tool's hand-off reaches `b`: as graphs, where any tool may hand off, the
#: versions differ (a run of the graphs that hands off to `b` ends "x" or "y")
HANDED = """\
speaker u: human
speaker a {
  tool t hands off to b
}
speakers b, c
start u
max_turns 5
when from u then a
when from b, c then terminate "x"
"""


def test_a_difference_only_a_hand_off_reaches_is_one_as_graphs() -> None:
    new = HANDED.replace('"x"', '"y"')
    found = first_difference(HANDED, new, 4, graphs=True)
    assert found is not None and str(found.run[-2][1]) == "hands off to b"
    assert (found.old.goes, found.new.goes) == (("end", "x"), ("end", "y"))
    assert check(HANDED, new, as_graphs=True) == CHANGED
    assert check(HANDED, new) == CHANGED  # with its declarations: `a` calls `t`
    assert check(HANDED, HANDED, as_graphs=True) == SAME


# ── the brute force itself, on the known cases ────────────────────────────────

HUMAN_WRITES = """\
speaker user: human {
  sets done
}
speaker bot
start user
when context.done == true then terminate "done"
when from user then bot
when from bot then user
"""


def test_the_brute_force_tells_a_priority_apart() -> None:
    new = HUMAN_WRITES.replace('terminate "done"', 'terminate "done" priority 100')
    found = first_difference(HUMAN_WRITES, new, 3)
    assert found is not None and len(found.run) == 1
    assert (found.old.goes, found.new.goes) == (("end", "done"), ("speaker", "bot"))
    assert first_difference(HUMAN_WRITES, HUMAN_WRITES, 6) is None
    assert check(HUMAN_WRITES, new) == CHANGED


def test_the_brute_force_sees_declarations() -> None:
    tools = 'speaker u: human\nspeaker a {\n  tool go hands off to u | finishes "f"\n}\nwhen from u then a\n'
    reordered = tools.replace('hands off to u | finishes "f"', 'finishes "f" | hands off to u')
    _same_and_refused(tools, reordered, tools.replace(' | finishes "f"', ""), 5)


def _same_and_refused(old: str, same: str, refusing: str, depth: int) -> None:
    """``same`` behaves as ``old`` (for the brute force and for the diff); ``refusing``
    refuses a turn ``old`` takes."""
    assert first_difference(old, same, depth) is None
    assert check(old, same) == SAME
    found = first_difference(old, refusing, depth)
    assert found is not None and found.new.refused is not None
    assert check(old, refusing) == CHANGED


#: a tool's alternatives equal under `==` but not the same JSON value across versions
TYPED_OLD = """\
speaker user: human
speaker bot {
  tool mark sets done = true | sets done = 2
}
start user
max_turns 6
when context.done == 1 and from bot then terminate "ok"
when from user then bot
when from bot then user
"""


def test_a_call_takes_an_alternative_equal_under_eq_when_none_writes_its_very_value() -> None:
    """`sets done = true` in OLD and `sets done = 1` in NEW: a call of OLD's alternative
    takes NEW's (a run takes the first alternative equal under `==` when none writes the
    call's very value), so no run routes differently; `sets done = 3` is another value."""
    new = TYPED_OLD.replace("sets done = true", "sets done = 1")
    other = TYPED_OLD.replace("sets done = true", "sets done = 3")
    _same_and_refused(TYPED_OLD, new, other, 4)
