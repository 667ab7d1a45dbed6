"""`flowc diff`'s verdict holds, or it says that it does not know: every source of change
a flow declares is explored (humans' writes, each tool alternative, custom conditions'
outcomes, the participants), a JSON graph is compared on what it carries, and a verdict
that cannot be decided is "unknown" with exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flowc import compile_flow, decompile
from flowc.cli import main
from flowc.compiler.analysis.changes import (
    CHANGED,
    SAME,
    UNKNOWN,
    FlowDiff,
    Version,
    diff_versions,
)
from flowc.compiler.analysis.facts import CheckOptions
from flowc.compiler.analysis.lockstep import Product, explore_pair
from flowc.compiler.analysis.run_phrases import render_run
from flowc.compiler.analysis.system import System, system_of_flow, system_of_graph
from flowc.compiler.compiled import CompiledFlow
from flowc.compiler.pipeline import LoadedGraph

HUMAN = """\
speaker user: human {
  sets done
}
speaker bot
start user
when context.done == true then terminate "done"
when from user then bot
when from bot then user
"""


def diff(old: str, new: str, **kw: object) -> FlowDiff:
    return diff_versions(
        Version("old.flow", compile_flow(old)), Version("new.flow", compile_flow(new)), **kw
    )  # type: ignore[arg-type]


def write(tmp_path: Path, name: str, text: str) -> str:
    (tmp_path / name).write_text(text, encoding="utf-8")
    return str(tmp_path / name)


# ── humans' writes ────────────────────────────────────────────────────────────


def test_a_humans_declared_writes_are_explored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's example: `priority 100` sorts the terminate rule after the rules that take
    the human's turns; the human's own kickoff writing `done` tells the versions apart."""
    new = HUMAN.replace('terminate "done"', 'terminate "done" priority 100')
    d = diff(HUMAN, new)
    assert d.verdict == CHANGED and d.behaviour_changed is True
    assert d.first is not None and render_run(d.first.run) == "user (done = true)"
    assert (d.first.old.reason, d.first.new.next) == ("done", "bot")
    old_path, new_path = write(tmp_path, "old.flow", HUMAN), write(tmp_path, "new.flow", new)
    assert main(["diff", old_path, new_path]) == 1
    out = capsys.readouterr().out
    assert "behaviour: changed" in out and "run: user (done = true)" in out
    assert main(["diff", old_path, new_path, "--format", "json"]) == 1
    assert json.loads(capsys.readouterr().out)["behaviour_changed"] is True


def test_a_human_who_may_write_another_key_is_a_change() -> None:
    new = HUMAN.replace("sets done", "sets done, notes")
    d = diff(HUMAN, new)
    assert [c.text for c in d.structural] == ["human `user` writes: done → done, notes"]
    assert d.verdict == CHANGED and d.first is not None
    assert d.first.old.refused == "`user` may not write `notes` (it declares `sets done`)"
    assert d.first.new.refused is None


# ── tools' alternatives ───────────────────────────────────────────────────────

TOOLS = """\
speaker user: human
speaker triage {
  tool decide hands off to billing | finishes "done"
}
speakers billing, tech
start user
when from user then triage
when from billing then terminate "billed"
"""


def test_alternatives_are_matched_by_what_they_do() -> None:
    reordered = TOOLS.replace(
        'hands off to billing | finishes "done"', 'finishes "done" | hands off to billing'
    )
    d = diff(TOOLS, reordered)
    assert [c.kind for c in d.structural] == ["tool-changed"] and d.verdict == SAME


def test_an_alternative_the_tool_no_longer_has_is_refused() -> None:
    d = diff(TOOLS, TOOLS.replace('hands off to billing | finishes "done"', "hands off to billing"))
    assert d.verdict == CHANGED and d.first is not None
    assert render_run(d.first.run) == 'user → triage (decide: finishes "done")'
    assert d.first.old.reason == "done"
    assert (
        d.first.new.refused
        == "`decide` of `triage` has no alternative that does that (it does hands off to billing)"
    )
    # another alternative: each one is a turn of its own
    d = diff(TOOLS, TOOLS.replace("hands off to billing", "hands off to tech"))
    assert d.verdict == CHANGED and d.first is not None
    assert render_run(d.first.run) == "user → triage (decide: hands off to billing)"


# ── participants ──────────────────────────────────────────────────────────────

NEXT = """\
speaker user: human
speakers a, b
start user
when from user then a
when from a then next
"""


def test_diff_compares_the_participants(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The decompiled flow lost `b`: `next` from `a` now goes back to `user`."""
    back = decompile(compile_flow(NEXT).knobs)
    d = diff(NEXT, back)
    assert "speaker-removed" in [c.kind for c in d.structural]
    assert d.verdict == CHANGED and d.first is not None
    assert render_run(d.first.run) == "user → a"
    assert (d.first.old.next, d.first.new.next) == ("b", "user")
    # given the participants, decompiling changes nothing
    whole = decompile(compile_flow(NEXT).knobs, participants=["user", "a", "b"])
    assert diff(NEXT, whole).verdict == SAME


def test_the_order_next_goes_round_is_compared() -> None:
    d = diff(NEXT, NEXT.replace("speakers a, b", "speakers b, a"))
    assert [c.kind for c in d.structural] == ["speakers-reordered"]
    assert d.verdict == CHANGED and d.first is not None and d.first.new.next == "user"


def test_the_initiator_is_compared() -> None:
    flow = (
        "speakers u, a, b\nstart u\ninitiator a\nwhen from u then b\nwhen from b then initiator\n"
    )
    d = diff(flow, flow.replace("initiator a\n", ""))
    assert [c.text for c in d.structural] == ["initiator: `a` → `u`"]
    assert (
        d.verdict == CHANGED
        and d.first is not None
        and (d.first.old.next, d.first.new.next) == ("a", "u")
    )


# ── a flow against its JSON graph ─────────────────────────────────────────────

REVIEW = """\
speaker client: human {
  sets signed_off
}
speaker drafter
speaker reviewer {
  tool approve sets done = true
  tool reject hands off to drafter | finishes "rejected"
}
start client
max_turns 12
context done = false
when context.done == true then terminate "approved"
when context.signed_off == true then terminate "signed"
when from client then drafter
when from drafter then reviewer
when from reviewer then next
"""


def test_a_flow_against_its_own_json_has_no_phantom_change(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flow = write(tmp_path, "review.flow", REVIEW)
    knobs = write(tmp_path, "review.json", compile_flow(REVIEW).to_json())
    assert main(["diff", flow, knobs]) == 0
    out = capsys.readouterr().out
    assert "structural changes: none" in out and "behaviour: the same" in out
    assert "is now a model agent" not in out and "removed" not in out
    assert (
        "note: not compared: speaker kinds (human or model), tool declarations and humans' writes, "
        "which NEW (a JSON graph) does not carry" in out
    )
    assert main(["diff", flow, knobs, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (
        data["structural"] == []
        and data["verdict"] == "same"
        and data["notes"][0].startswith("not compared")
    )
    # a graph dict alone carries no context either: the flow's is assumed, and said so
    graph = write(tmp_path, "graph.json", compile_flow(REVIEW).to_json(graph_only=True))
    assert main(["diff", flow, graph]) == 0
    out = capsys.readouterr().out
    assert "structural changes: none" in out
    assert "NEW is a graph dict without `context_vars`: it is run with OLD's initial context" in out


def test_a_graph_is_run_with_the_flows_participants(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flow = write(tmp_path, "next.flow", NEXT)
    graph = write(tmp_path, "next.json", compile_flow(NEXT).to_json())
    assert main(["diff", flow, graph]) == 0
    out = capsys.readouterr().out
    assert (
        "NEW is a graph, which does not carry the channel's participants: it is run with OLD's "
        "(user, a, b, in that order)" in out
    )
    assert "behaviour: the same" in out


# ── what diff cannot decide ───────────────────────────────────────────────────

CUSTOM = """\
condition urgent()
speaker user: human
speakers a, b, c
when from user then a
when from a and urgent() then b
when from a then c
when from b then terminate "b"
when from c then terminate "c"
"""


def test_a_custom_condition_deciding_the_only_difference_is_unknown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    new = CUSTOM.replace("when from a and urgent() then b", "when from a and urgent() then c")
    d = diff(CUSTOM, new)
    assert d.verdict == UNKNOWN and d.behaviour_changed is None
    assert d.first is not None and render_run(d.first.run) == "user → a (urgent() is true)"
    old_path, new_path = write(tmp_path, "old.flow", CUSTOM), write(tmp_path, "new.flow", new)
    assert main(["diff", old_path, new_path]) == 2
    out = capsys.readouterr().out
    assert (
        "behaviour: unknown — OLD and NEW route a run differently only when custom conditions or "
        "targets decide so" in out
    )
    assert main(["diff", old_path, new_path, "--format", "json"]) == 2
    data = json.loads(capsys.readouterr().out)
    assert data["behaviour_changed"] is None and data["verdict"] == "unknown" and data["reason"]
    assert main(["diff", old_path, new_path, "--format", "markdown"]) == 2
    assert "**behaviour unknown**" in capsys.readouterr().out


def test_a_change_no_custom_condition_decides_is_certain() -> None:
    """The same custom condition on both sides: a change before it is decided is certain;
    one that only a run past `urgent()` being false reaches is not (if it is always true,
    no run reaches `c`)."""
    d = diff(CUSTOM, CUSTOM.replace("when from user then a", "when from user then b"))
    assert d.verdict == CHANGED and d.first is not None and render_run(d.first.run) == "user"
    d = diff(CUSTOM, CUSTOM.replace('then terminate "c"', 'then terminate "cc"'))
    assert d.verdict == UNKNOWN and d.first is not None
    assert render_run(d.first.run) == "user → a (urgent() is false) → c"
    assert diff(CUSTOM, CUSTOM).verdict == SAME


def test_custom_targets_resolve_alike_for_the_same_call() -> None:
    flow = (
        "target pick(level: int = 1) -> a | b\nspeaker user: human\nspeakers a, b\n"
        'when from user then pick()\nwhen from a then terminate "a"\nwhen from b then terminate "b"\n'
    )
    assert (
        diff(flow, flow.replace('then terminate "a"', 'then terminate "a" priority 1')).verdict
        == SAME
    )
    d = diff(flow, flow.replace("then pick()", "then pick(level = 2)"))
    assert d.verdict == UNKNOWN and d.first is not None
    assert d.first.run is not None and d.first.run[0].chosen


def test_the_state_bound_makes_the_verdict_unknown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d = diff(REVIEW, REVIEW, options=CheckOptions(max_states=3))
    assert d.verdict == UNKNOWN and "bound of 3 states" in d.reason
    path = write(tmp_path, "review.flow", REVIEW)
    assert main(["diff", path, path, "--max-states", "3"]) == 2
    assert (
        "behaviour: unknown — the exploration stopped at its bound of 3 states (raise --max-states)"
        in capsys.readouterr().out
    )
    # a difference found within the bound is one all the same
    changed = write(tmp_path, "changed.flow", REVIEW.replace('"signed"', '"signed off"'))
    assert main(["diff", path, changed, "--max-states", "3"]) == 1


class _Spent:
    """A memory budget already spent (the product of two many-key flows grows by about a
    kilobyte a state: tests/hostile/test_memory_shapes.py runs one under a limit)."""

    budget = 7 * 2**20

    def exceeded(self) -> bool:
        return True


def test_the_memory_budget_makes_the_verdict_unknown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from flowc.compiler.analysis import lockstep

    monkeypatch.setattr(lockstep, "MemoryGuard", _Spent)
    monkeypatch.setattr(lockstep, "MEMORY_EVERY", 2)  # looked at every second new state
    d = diff(REVIEW, REVIEW)
    assert d.verdict == UNKNOWN and d.truncated
    assert d.reason == (
        "the exploration stopped at 2 states, at its memory budget (7 MiB; a larger "
        "--max-states stops there too: fewer context keys, or fewer values per key, make "
        "the pair smaller)"
    )
    path = write(tmp_path, "review.flow", REVIEW)
    assert main(["diff", path, path]) == 2
    assert "behaviour: unknown — the exploration stopped at 2 states, at its memory" in (
        capsys.readouterr().out
    )
    # a difference found before the budget is one all the same
    changed = write(tmp_path, "changed.flow", REVIEW.replace('"signed"', '"signed off"'))
    assert main(["diff", path, changed]) == 1


def test_the_help_gives_the_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["diff", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "0 the behaviour is the same, 1 it changed, 2 flowc could not decide" in out


def test_a_bare_write_two_tools_make_is_refused_as_a_run_refuses_it() -> None:
    # the new bot's bare `sets k = 1` is a call of `a` or of `b`: a run refuses it as
    # ambiguous, and so does diff's model (it took the first tool, `a`, and saw no change)
    old = """\
speaker user: human
speaker bot: human { sets k }
start user
max_turns 6
when from user then bot
when context.k == 1 then terminate "one"
otherwise user
"""
    new = old.replace(
        "speaker bot: human { sets k }",
        "speaker bot {\n  tool a sets k = 1\n  tool b sets k = 1\n}",
    )
    pair = explore_pair(system_of_flow(compile_flow(old)), system_of_flow(compile_flow(new)), 1000)
    refused = [
        div.new.refused
        for div in pair.divergences
        if (div.turns[-1].speaker, div.turns[-1].tool, div.turns[-1].context)
        == ("bot", None, (("k", 1),))
    ]
    assert refused == [
        "`bot`'s step sets k = 1 is ambiguous: its tools `a` and `b` both do that, and the "
        "step is a call of one of them; write `bot calls a` or `bot calls b`"
    ]


def test_a_turn_past_the_custom_conditions_limit_counts_the_rest() -> None:
    """Past 10 custom conditions on one turn, the rest are left open, counted in the run."""
    conds = "".join(f"condition c{i}()\n" for i in range(11))
    both = " and ".join(f"c{i}()" for i in range(11))
    old = (
        f"{conds}speaker user: human\nspeakers a, b, c\nwhen from user then a\n"
        f"when from a and {both} then b\nwhen from a then c\n"
        'when from b then terminate "b"\nwhen from c then terminate "c"\n'
    )
    d = diff(old, old.replace(" then b\n", " then c\n", 1))
    assert d.verdict == UNKNOWN and "more than 10 custom conditions" in d.reason
    assert d.first is not None
    chosen = [c for step in d.first.run for c in step.chosen]
    assert chosen[-1] == "1 more custom condition, as they may be", chosen


def _with_itself_as_graphs(flow: CompiledFlow) -> tuple[System, Product]:
    """The flow's graph, and the lock-step search of it against itself (no difference,
    complete)."""
    graph = system_of_graph(
        LoadedGraph(flow.graph, dict(flow.context_vars), True),
        tuple(flow.agent_id(s) for s in flow.speakers),
        flow.agent_id(flow.initiator),
    )
    pair = explore_pair(graph, graph, 10_000)
    assert not pair.divergences and not pair.truncated and not pair.partial
    return graph, pair


def test_a_hand_off_between_graphs_is_one_turn_whatever_the_context() -> None:
    """Between graphs, a hand-off goes past the rules and a node keeps no context, so each
    hand-off from a product state is one turn, not one per context the participants may
    write (at 50 speakers and 5 keys, 1,024 contexts: a minute and 1.9 GB)."""
    flow = compile_flow(
        "speaker user: human\nspeaker a\nspeaker b\nstart user\nmax_turns 6\n"
        "when context.k1 == 1 then a\nwhen context.k2 == 1 then b\n"
        'when context.k3 == 2 then terminate "x"\nwhen from user then a\notherwise user\n'
    )
    pair = _with_itself_as_graphs(flow)[1]
    expanded = sum(
        1 for (ko, _, _), d in zip(pair.keys, pair.dist, strict=True) if ko[0] != "end" and d < 6
    )
    contexts = 3**3  # each key unset, the one value a rule compares it with, or another
    # from each state: a turn with text alone in each context, and, but on the kickoff (a
    # plain message), a hand-off to each of the three participants
    assert expanded > 1 and pair.turns == contexts + (expanded - 1) * (contexts + 3)
    # equal caps: no walk to the cap reads the turns, so none is kept
    assert not pair.edges


def test_a_graph_turn_tries_the_contexts_its_rules_tell_apart() -> None:
    """Twelve keys, 3 ** 12 contexts (each key unset, its one compared value, or another):
    more than the bound. But each worker's rules read one key, so a worker's plain turn is
    three turns, and the pair is decided ("the same"), where trying every context on every
    turn made it partial ("unknown")."""
    lines = ["speaker user: human", *(f"speaker w{i}" for i in range(12)), "start user"]
    lines += ["max_turns 8", "when from user then w0"]
    for i in range(12):
        lines += [f"when context.k{i} == 1 and from w{i} then w0"]
        lines += [f"when from w{i} then w{(i + 1) % 12}"]
    flow = compile_flow("\n".join(lines) + "\n")
    same = diff_versions(Version("old", flow), Version("new", flow), as_graphs=True)
    assert same.verdict == SAME, same.reason
    graph, pair = _with_itself_as_graphs(flow)
    expanded = [
        graph.speakers[graph.start if d == 0 else int(ko[0])]
        for (ko, _, _), d in zip(pair.keys, pair.dist, strict=True)
        if ko[0] != "end" and d < 8
    ]
    assert len(expanded) > 12
    # the kickoff (the user's plain message: its rule reads no key) is one turn; from each
    # later state, a plain turn per value of the worker's key (one for the user), and a
    # hand-off to each of the 13 participants
    later = [3 if name.startswith("w") else 1 for name in expanded[1:]]
    assert pair.turns == 1 + sum(n + 13 for n in later)


def test_a_graph_pair_past_the_contexts_bound_is_partial(monkeypatch: pytest.MonkeyPatch) -> None:
    """More contexts than the participants may be tried with makes the diff unknown (exit
    2, with the reason), never "the same" on the contexts tried."""
    from flowc.compiler.analysis import graph_contexts

    flow = (
        "speaker user: human\nspeaker a\nspeaker b\nstart user\nmax_turns 6\n"
        "when context.k1 == 1 then a\nwhen context.k2 == 1 then b\n"
        'when context.k3 == 2 then terminate "x"\nwhen from user then a\notherwise user\n'
    )
    monkeypatch.setattr(graph_contexts, "MAX_CONTEXTS", 3**3 - 1)
    same = diff_versions(
        Version("old", compile_flow(flow)), Version("new", compile_flow(flow)), as_graphs=True
    )
    assert same.verdict == UNKNOWN
    assert "the rules of a turn tell apart more than 26 contexts the participants may write" in (
        same.reason
    )
    monkeypatch.setattr(graph_contexts, "MAX_CONTEXTS", 3**3)
    same = diff_versions(
        Version("old", compile_flow(flow)), Version("new", compile_flow(flow)), as_graphs=True
    )
    assert same.verdict == SAME
