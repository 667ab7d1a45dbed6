"""The symbolic explorer against the explicit one: on every flow the explicit explorer
completes, both must find the same states (their number), the same scheduled speakers,
rules, defaults and endings, each first at the same distance.

The explicit explorer (``explore.py``) steps through one valuation at a time; the
symbolic one (``symbolic.py``) holds each speaker's valuations as a decision diagram
and shares only the system they both read (``system.py``) and the rule index. The
flows: the soundness test's generator (every condition form, custom conditions and
targets, humans' writes, hand-offs and finishes), the benchmark family's generator at
small sizes, and every `.flow` in the repository.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flowc.cli import main
from flowc.compiler.analysis import CheckOptions, facts_of
from flowc.compiler.analysis.endings import ending_reasons
from flowc.compiler.analysis.explore import DEFAULT, KICKOFF, explore
from flowc.compiler.analysis.symbolic import SymbolicFacts, explore_symbolic
from flowc.compiler.analysis.system import System, system_of_flow
from flowc.compiler.pipeline import compile_source
from flowc.diagnostics import MAX_LISTED, listing_of
from flowc.source import SourceFile
from tests.check.check_replay import replay_finding
from tests.check.test_check_soundness import flow_text

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_analysis import Shape, generate  # noqa: E402

#: the explicit bound for the comparison: every flow below completes well under it
BOUND = 200_000


def explicit_facts(system: System) -> SymbolicFacts | None:
    """What the explicit explorer found, in the symbolic explorer's terms (None: partial)."""
    space = explore(system, BOUND)
    if space.truncated:
        return None
    scheduled = {system.start: 0}
    for node, key in enumerate(space.keys):
        if key != KICKOFF and key[0] != "end":
            scheduled.setdefault(key[0], space.dist[node])
    return SymbolicFacts(
        states=len(space.keys),
        scheduled=scheduled,
        fired={f: space.dist[u] for f, u in space.first_fired.items()},
        ends={space.keys[v][1]: space.dist[v] for v in space.ends},
        plain_default={s: space.dist[u] for s, u in space.plain_default.items()},
        layers=max(space.dist) + 1,
        deepest=max(d for v, d in enumerate(space.dist) if not space.is_end(v)),
    )


def compare(text: str) -> None:
    compiled, _ = compile_source(SourceFile("gen.flow", text))
    if compiled is None:
        return
    system = system_of_flow(compiled)
    want = explicit_facts(system)
    if want is None:
        return
    got = explore_symbolic(system)
    assert got is not None and got.reach is not None, text
    got_reach = got.reach
    # the explicit explorer records first firings of rules and the default only
    got = SymbolicFacts(
        states=got.states,
        scheduled=got.scheduled,
        fired={f: d for f, d in got.fired.items() if f >= 0 or f == DEFAULT},
        ends=got.ends,
        plain_default=got.plain_default,
        layers=got.layers,
        deepest=got.deepest,
    )
    assert got == want, text
    # a state no end can be reached from exists exactly when the explicit analysis has a
    # closed loop (a bottom component no run leaves)
    from flowc.compiler.analysis.facts import Facts

    facts = Facts(system, explore(system, BOUND), "gen.flow")
    assert got_reach.trapped() == bool(facts.traps), text
    # some run can go on for ever exactly when the turns between states that are not
    # endings have a cycle
    turns = facts.space.graph.subgraph(
        v for v in range(len(facts.space.keys)) if not facts.space.is_end(v)
    )
    assert got_reach.cyclic() == (not nx.is_directed_acyclic_graph(turns)), text


@settings(max_examples=400)
@given(flow_text())
def test_symbolic_agrees_on_generated_flows(text: str) -> None:
    compare(text)


@settings(max_examples=60)
@given(
    st.builds(
        Shape,
        speakers=st.integers(2, 12),
        keys=st.integers(1, 4),
        values=st.integers(1, 3),
        rules=st.integers(0, 3),
        max_turns=st.integers(1, 30),
        custom=st.sampled_from([0.0, 0.3]),
        seed=st.integers(0, 10_000),
    )
)
def test_symbolic_agrees_on_the_benchmark_family(shape: Shape) -> None:
    compare(generate(shape))


def test_the_family_instances_the_explicit_explorer_completes() -> None:
    """Fixed instances up to 70,624 states (the 200-speaker one with one value per key)."""
    for shape in (
        Shape(50, 5, 2),
        Shape(100, 8, 1),
        Shape(200, 10, 1),
        Shape(30, 4, 3, 2, 20, 0.2),
    ):
        compare(generate(shape))


FLOWS = sorted(
    p
    for p in ROOT.rglob("*.flow")
    if not any(part.startswith(".") or part in ("node_modules",) for part in p.parts)
)


@pytest.mark.parametrize("path", FLOWS, ids=lambda p: str(p.relative_to(ROOT)))
def test_symbolic_agrees_on_every_flow_in_the_repository(path: Path) -> None:
    compare(path.read_text(encoding="utf-8"))


def test_a_json_graph_is_refused() -> None:
    from flowc.compiler import model as m
    from flowc.compiler.analysis.symbolic import Symbolic
    from flowc.compiler.analysis.system import system_of_graph
    from flowc.compiler.pipeline import LoadedGraph

    g = m.TransitionGraph("a", (m.Transition(m.FromSpeaker("a"), m.AgentTarget("b")),))
    with pytest.raises(ValueError, match="JSON graph"):
        Symbolic(system_of_graph(LoadedGraph(g, {}, False)))


# ── I301: what the symbolic count establishes when the bound cut the exploration short ──

PARTIAL_FLOW = """\
flow partial
speaker user: human { sets a, b, c }
speaker bot { tool done finishes "finished" }
speaker lost
condition lucky()
start user
when context.a == 1 and from bot then bot priority 1
when context.a == 1 and from bot then lost priority 2
when context.b == 1 and context.c == 1 then terminate "both"
when lucky() then bot
otherwise bot
"""


def test_i301_says_what_the_symbolic_count_found(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "partial.flow"
    path.write_text(PARTIAL_FLOW, encoding="utf-8")
    assert main(["check", str(path), "--max-states", "10", "--format", "json"]) == 0
    found = json.loads(capsys.readouterr().out)
    (i301,) = [d for d in found if d["code"] == "I301"]
    notes = i301["notes"]
    system = system_of_flow(compile_source(SourceFile("p.flow", PARTIAL_FLOW))[0])  # type: ignore[arg-type]
    complete = explicit_facts(system)
    assert complete is not None
    # the kickoff alone was explored (the human's writes make more than 10 states of it)
    assert notes == [
        f"every state was counted symbolically ({complete.states} abstract states); explored one"
        " by one: 1 state (every state within 0 turns of the start); a finding's run among them"
        " is the one a complete analysis shows, a longer one is read back from the count (as"
        " short, see `flowc explain I301`)",
        "reported for every state: who can speak (W201), which rules and defaults can fire"
        " (W202-W204), a `max_turns` shorter than every run that terminates (W212), speakers"
        " and rules only a run past the cap reaches (W215), endings a scenario expects that no"
        " run reaches (E111), loops no run leaves (W205, W206: there are none)",
        "not reported: a `max_turns` implied by a `sequence` that cuts runs short (W217), what"
        " goes differently on AG2 and plain replies that end the run (W213, W218-W222) beyond"
        " the explored states",
    ]
    (cut,) = [d for d in found if d["code"] == "W203"]
    # the same finding as a complete exploration's, its run read from the symbolic layers
    assert main(["check", str(path), "--format", "json"]) == 0
    full = json.loads(capsys.readouterr().out)
    assert not any(d["code"] == "I301" for d in full)
    assert [d for d in full if d["code"] == "W203"] == [cut]
    assert cut["location"]["row"] == 8


def test_i301_names_the_verdicts_whose_runs_it_cannot_show() -> None:
    """With a loop no run leaves, whether W205 takes a dead rule over is not known: the
    rule is named in I301 (and is dead in the complete analysis too)."""
    system = system_of_flow(
        compile_source(SourceFile("g.flow", generate(Shape(40, 5, 2, 2, 30, 0.3))))[0]
    )  # type: ignore[arg-type]
    facts, found = facts_of(system, CheckOptions(max_states=100), "g.flow")
    assert not facts.loops_known and facts.unknown_rules
    (i301,) = [f.diagnostic for f in found if f.diagnostic.code.id == "I301"]
    (named,) = [n for n in i301.notes if n.startswith("these rules can never fire, but which")]
    unknown = [r for r in system.rules if r.index in facts.unknown_rules]
    shown = ", ".join(listing_of(unknown, system.label))
    assert named.endswith(": " + shown)
    assert all(system.label(r) in named for r in unknown[:MAX_LISTED])
    assert "loops (W205, W206, W210)" in i301.notes[-1]
    complete, _ = facts_of(system, CheckOptions(max_states=BOUND), "g.flow")
    assert not complete.space.truncated
    assert not facts.unknown_rules & complete.space.fired


# ── a cut-short exploration reports only what a complete one does, and says the rest ──

#: what a cut-short exploration does not report (I301 says so)
NOT_REPORTED = {
    "W205",
    "W206",
    "W210",
    "W217",
    "W213",
    "W218",
    "W219",
    "W220",
    "W221",
    "W222",
    "I304",
}


def shown(d: Any) -> tuple[Any, ...]:
    span = (d.span.line, d.span.column, d.span.end_line, d.span.end_column) if d.span else None
    return (d.code.id, d.message, span, d.notes, d.help, d.explanation)


def cut_short_agrees(text: str, bound: int) -> bool:
    """Check ``text`` with ``bound`` states and completely: every finding of the first is
    one of the second, and every finding of the second that the first lacks is one it
    says it does not report. True when the bound cut the exploration short."""
    compiled, _ = compile_source(SourceFile("gen.flow", text))
    if compiled is None:
        return False
    system = system_of_flow(compiled)
    whole, complete = facts_of(system, CheckOptions(max_states=BOUND), "gen.flow")
    if any(f.diagnostic.code.id == "I301" for f in complete):
        return False
    facts, partial = facts_of(system, CheckOptions(max_states=bound), "gen.flow")
    if not facts.space.truncated:
        return False
    assert facts.complete, text
    # what E111 and the cap's findings read: the endings, how soon, and whether the cap is met
    assert facts.end_distances == whole.end_distances, text
    assert facts.cap_reached == whole.cap_reached, text
    assert ending_reasons(facts) == ending_reasons(whole), text
    assert facts.after_cap_speakers == whole.after_cap_speakers, text
    assert facts.after_cap_rules == whole.after_cap_rules, text
    want = {shown(f.diagnostic)[:3]: f for f in complete}
    got: set[tuple[Any, ...]] = set()
    for f in partial:
        if f.diagnostic.code.id == "I301" or f.diagnostic.code.id in NOT_REPORTED:
            continue  # (what is found only among the explored states may be fewer)
        key = shown(f.diagnostic)[:3]
        assert key in want, (text, key)
        got.add(key)
        same = want[key]
        if shown(f.diagnostic) == shown(same.diagnostic):
            continue
        # a run read from the symbolic layers: as short as the complete analysis's, and a
        # real run that shows what the finding says (the rest of the finding is the same)
        assert f.run is not None and same.run is not None, (text, key)
        assert len(f.run.turns) == len(same.run.turns), (
            text,
            key,
            f.run.render(),
            same.run.render(),
        )
        assert shown(f.diagnostic)[4:] == shown(same.diagnostic)[4:], (text, key)
        # the notes too, but for the runs they render (and that the states were counted)
        mine = [
            re.sub(
                r"^counted (\S+) (states?) symbolically;",
                lambda m: f"explored {m[1].replace(',', '')} {m[2]};",
                note,
            ).replace(f.run.render(), "RUN")
            for note in f.diagnostic.notes
        ]
        theirs = [note.replace(same.run.render(), "RUN") for note in same.diagnostic.notes]
        assert mine == theirs, (text, key)
        replay_finding(system, f)
    (i301,) = [f.diagnostic for f in partial if f.diagnostic.code.id == "I301"]
    for key in set(want) - got:
        f = want[key]
        code = f.diagnostic.code.id
        if code in NOT_REPORTED:
            continue
        if code == "W201":
            (speaker,) = [
                s
                for s in range(len(system.speakers))
                if f"speaker `{system.name(s)}` can" in f.diagnostic.message
            ]
            assert speaker not in facts.scheduled, (text, key)
            # named in I301: with the loop unknown, or when a dead rule's finding may say it
            assert not facts.sample_known or speaker in facts.unknown_speakers, (text, key)
            continue
        if code == "W202":
            assert not facts.sample_known and not facts.default_fired, (text, key)
            assert any(note.startswith("the default `otherwise") for note in i301.notes)
            continue
        if code in ("W203", "W204") and f.rule in facts.unknown_rules:
            continue
        if code == "W215" and (DEFAULT if f.rule is None else f.rule) in facts.unknown_late:
            continue
        raise AssertionError((text, key, facts.unknown_rules))
    return True


@settings(max_examples=300)
@given(flow_text(), st.integers(2, 40))
def test_a_cut_short_check_reports_only_what_a_complete_one_does(text: str, bound: int) -> None:
    cut_short_agrees(text, bound)


def test_cut_short_family_instances() -> None:
    cut = 0
    for shape in (
        Shape(50, 5, 2),
        Shape(100, 8, 1),
        Shape(30, 4, 3, 2, 20, 0.2),
        Shape(40, 5, 2, 2, 30, 0.3),
    ):
        for bound in (100, 1_000, 5_000):
            cut += cut_short_agrees(generate(shape), bound)
    assert cut >= 10


def test_cut_short_speakers_and_rules_past_the_cap() -> None:
    """W215 from the symbolic count: the same speakers and rules, each with as short a run
    (these instances have 3 to 17 of them, most beyond the explored turns)."""
    late = 0
    for shape in (
        Shape(20, 5, 1, 1, 10, 0.0, 0),
        Shape(30, 3, 1, 1, 10, 0.0, 1),
        Shape(20, 4, 1, 1, 15, 0.0, 1),
    ):
        text = generate(shape)
        assert cut_short_agrees(text, 50)
        system = system_of_flow(compile_source(SourceFile("g.flow", text))[0])  # type: ignore[arg-type]
        _, found = facts_of(system, CheckOptions(max_states=50), "g.flow")
        late += sum(f.diagnostic.code.id == "W215" for f in found)
    assert late >= 20


NO_END_FLOW = """\
flow noend
speaker user: human
speaker bot { tool t sets x = 1 | sets x = 2 }
speaker lost
start user
max_turns 10
when from user then bot
when from bot then user
when context.x == 1 and from bot then lost
otherwise terminate "never"
"""


def test_i301_when_no_run_ends_names_what_it_knows_without_claiming_findings() -> None:
    """No state reaches an end, so every finding's run would be a loop, which a cut-short
    exploration does not know: none of W201-W204 is reported, and I301 lists what the
    symbolic count knows (each speaker once) and says why."""
    system = system_of_flow(compile_source(SourceFile("n.flow", NO_END_FLOW))[0])  # type: ignore[arg-type]
    facts, found = facts_of(system, CheckOptions(max_states=2), "n.flow")
    assert facts.space.truncated and not facts.sample_known
    # (and I304: the bot's two writes of `x` in one reply, W222, on the first turns explored)
    assert [f.diagnostic.code.id for f in found] == ["I301", "I304"]
    notes = found[0].diagnostic.notes
    reported = [note for note in notes if note.startswith("reported for every state")]
    assert reported == [
        "reported for every state: speakers and rules only a run past the cap reaches (W215),"
        " endings a scenario expects that no run reaches (E111)"
    ]
    assert notes[1].startswith(
        "no run terminates, finishes or is closed by a custom target: every run ends at"
        " `max_turns 10`"
    )
    assert notes[3:6] == (
        "these speakers can never be scheduled to speak: `lost`",
        'the default `otherwise terminate "never"` is never taken',
        "these rules can never fire, but which finding says so is not known: rule 3, line 9"
        " (`when context.x == 1 and from bot then lost`)",
    )
    assert sum("`lost`" in note for note in notes) == 1
    assert "(W201-W204)" in notes[-1] and "loops (W205, W206, W210)" in notes[-1]
    # what they say holds in the complete analysis
    complete, full = facts_of(system, CheckOptions(max_states=BOUND), "n.flow")
    assert not complete.space.truncated and not complete.space.ends
    assert 2 not in complete.scheduled and not complete.default_fired
    assert {f.diagnostic.code.id for f in full} == {"W202", "W203", "I304"}


def test_the_symbolic_count_gives_up_when_its_diagrams_outgrow_their_memory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """CUDD is given a memory ceiling; past it an operation fails, and the symbolic
    explorer gives up (None: I301 says what is not reported) instead of raising."""
    from flowc.compiler.analysis import symbolic

    system = system_of_flow(compile_source(SourceFile("g.flow", generate(Shape(100, 8, 2))))[0])  # type: ignore[arg-type]
    assert explore_symbolic(system) is not None
    monkeypatch.setattr(symbolic, "_CUDD_MAX_MEMORY", 2**20)
    assert explore_symbolic(system) is None
    facts, found = facts_of(system, CheckOptions(max_states=100), "g.flow")
    assert facts.symbolic is None and not facts.complete
    (i301,) = [f.diagnostic for f in found if f.diagnostic.code.id == "I301"]
    assert i301.notes == (
        "unreachable speakers, dead rules and defaults, loops and turn limits are not reported",
    )
    assert [f.diagnostic.code.id for f in found] == ["I301"]


LATE_FLOW = """\
flow late
speaker user: human { sets a, b, c }
speaker bot { tool t sets x = 1 }
speaker closer
speaker checker
start user
max_turns 3
when from user then bot
when context.x == 1 and from bot then closer
when from bot then user
when from closer then checker
when from checker then terminate "done"

scenario "done" {
  user: "hi"
  expect terminate "done"
}
"""


def test_a_cut_short_check_still_refuses_an_ending_past_the_cap(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """E111 and W215 from the symbolic count: the same errors as a complete check, in
    `check` and in `test` (which explores the flow only for the expected endings)."""
    path = tmp_path / "late.flow"
    path.write_text(LATE_FLOW, encoding="utf-8")
    assert main(["check", str(path), "--format", "json"]) == 1
    full = json.loads(capsys.readouterr().out)
    assert main(["check", str(path), "--format", "json", "--max-states", "3"]) == 1
    cut = json.loads(capsys.readouterr().out)
    assert [d["code"] for d in cut] == ["I301", "W215", "W212", "E111"]
    assert cut[1:] == full
    assert main(["test", str(path), "--max-states", "3"]) == 1
    said = capsys.readouterr()
    assert 'no run of the flow ends with "done"' in said.out + said.err


LASTS_FLOW = """\
condition lucky()
speaker user: human
speaker a
speaker b
speaker c
speaker d
start user
max_turns CAP
when lucky() and from user then c
when from user then a
when from a then b
when from b then c
when from c then d
when from d then terminate "done"
"""


@pytest.mark.parametrize(("cap", "lasts"), [(4, True), (5, False)])
def test_whether_a_run_lasts_the_cap_without_a_loop(cap: int, lasts: bool) -> None:
    """No loop, and every state is reached within 2 turns, yet a longer way round lasts 4
    turns: the cap is met by a run that is not the shortest to any state."""
    text = LASTS_FLOW.replace("CAP", str(cap))
    system = system_of_flow(compile_source(SourceFile("l.flow", text))[0])  # type: ignore[arg-type]
    found = explore_symbolic(system)
    assert found is not None and found.reach is not None
    assert not found.reach.cyclic() and found.deepest < cap
    assert found.reach.lasts(cap) is lasts
    facts, _ = facts_of(system, CheckOptions(max_states=2), "l.flow")
    whole, _ = facts_of(system, CheckOptions(max_states=BOUND), "l.flow")
    assert facts.space.truncated and not whole.space.truncated
    assert facts.cap_reached is whole.cap_reached is lasts
    assert cut_short_agrees(text, 2)


def test_a_check_whose_symbolic_count_runs_out_of_memory_later_still_answers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """CUDD's memory can run out after the exploration too, while a check asks whether
    every state can end: the flow is checked again from the explored states alone (I301
    says what is not reported), not an internal error."""
    from flowc.compiler.analysis.symbolic import Reach

    def failed(self: Reach) -> bool:
        raise ValueError("`DdNode *node` is `NULL` pointer.")

    monkeypatch.setattr(Reach, "trapped", failed)
    system = system_of_flow(compile_source(SourceFile("p.flow", PARTIAL_FLOW))[0])  # type: ignore[arg-type]
    facts, found = facts_of(system, CheckOptions(max_states=10), "p.flow")
    assert facts.symbolic is None
    (i301,) = [f.diagnostic for f in found if f.diagnostic.code.id == "I301"]
    assert i301.notes == (
        "unreachable speakers, dead rules and defaults, loops and turn limits are not reported",
    )
    # a bug is not taken for a lack of memory
    monkeypatch.setattr(Reach, "trapped", lambda self: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        facts_of(system, CheckOptions(max_states=10), "p.flow")


FOLD_FLOW = """\
target pick() -> b | c
speaker user: human
speaker a { tool t sets x = 1 }
speaker b
speaker c
speaker d
start user
max_turns 3
when from d then pick()
when context.x == 1 and not from a then terminate "done"
when context.x == 1 and from a then d
when from a then b
when from b then user
when from user then a
"""


@pytest.mark.parametrize("bound", [2, 4, 6])
def test_a_late_terminate_that_w212_says_is_not_named_in_i301(bound: int) -> None:
    """The terminate fires only after the cap, and W212 says every run ends at the cap:
    a complete check says nothing more of it, whoever takes its turn first, so a cut-short
    one does not call it unknown."""
    system = system_of_flow(compile_source(SourceFile("f.flow", FOLD_FLOW))[0])  # type: ignore[arg-type]
    facts, found = facts_of(system, CheckOptions(max_states=bound), "f.flow")
    assert facts.space.truncated and not facts.unknown_late
    (i301,) = [f.diagnostic for f in found if f.diagnostic.code.id == "I301"]
    assert not any("only after the cap" in note for note in i301.notes)
    assert cut_short_agrees(FOLD_FLOW, bound)
