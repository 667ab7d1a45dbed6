"""I307 (issue 26, point 4): the most turns a run takes before it ends, or a run that only
``max_turns`` ends, or (without a cap) a run that never ends, with the run that shows it.

The cross-check compares :func:`flowc.compiler.analysis.worst.worst_case` with the
brute-force enumerator of :mod:`tests.property_check.runs` (every choice on every turn,
on concrete contexts, with :mod:`tests.diff.brute_force`'s stepping; it shares no code
with ``flowc.compiler.analysis``) over flows drawn from fixed seeds by
:func:`tests.property_check.strategies.random_flow`:

- the checker says "every run ends, the longest after W turns" exactly when no
  enumerated run is closed by the cap, and W is the longest enumerated run; its run
  replays on the flow from the kickoff, has W turns and ends with its reason;
- it says "the cap closes some run" exactly when an enumerated run is closed by the
  cap; its run replays (on the flow with one more turn allowed) and has ``max_turns``
  turns without ending;
- the same flow without ``max_turns``: "the longest after W" holds when the enumerator,
  allowed W + 1 turns, closes no run with the cap and its longest run is W (and then,
  with ``max_turns W - 1``, both say the cap closes a run, and with ``max_turns W`` the
  checker says none); "some run never ends" when, allowed more turns than the flow has
  states, the enumerator closes one with the cap, and the checker's run (into a loop and
  once around) replays.
"""

from __future__ import annotations

import itertools
import random
from collections import Counter
from collections.abc import Iterator

import pytest

from flowc import compile_flow
from flowc.cli import main
from flowc.compiler.analysis import CheckOptions, check
from flowc.compiler.analysis.explore import explore
from flowc.compiler.analysis.facts import Facts
from flowc.compiler.analysis.system import system_of_flow
from flowc.compiler.analysis.worst import WorstCase, check_worst_case, worst_case
from tests.check.check_replay import replay_finding
from tests.property_check.runs import Runs
from tests.property_check.strategies import MAX_RUNS, Flow, random_flow

#: generated flows cross-checked (each with and without its cap)
FLOWS = 400
SEED = 20261203


def checker(text: str) -> tuple[WorstCase | None, int]:
    system = system_of_flow(compile_flow(text))
    space = explore(system, 100_000)
    assert not space.truncated
    return worst_case(Facts(system, space, "f.flow")), len(space.keys)


def brute(runs: Runs) -> tuple[bool, int | None]:
    """Whether the cap closes some run, and the most turns of a run that ends by itself:
    over every run, worked out per concrete state (who speaks, the context, the turn
    number) of the enumerator, each state once."""
    memo: dict[object, tuple[bool, int | None]] = {}

    def of(state: object) -> tuple[bool, int | None]:
        found = memo.get(state)
        if found is None:
            capped, longest = False, None
            for succ in runs.successors(state):  # type: ignore[arg-type]
                nxt = runs.after(succ)
                if nxt is None:
                    if succ.record.ended == "max_turns":
                        capped = True
                    else:
                        longest = max(longest or 0, 1)
                    continue
                more_capped, more = of(nxt)
                capped = capped or more_capped
                if more is not None:
                    longest = max(longest or 0, more + 1)
            found = memo[state] = (capped, longest)
        return found

    return of(runs.initial)


def with_cap(lines: list[str], cap: int | None) -> str:
    return "\n".join([*lines, *([f"max_turns {cap}"] if cap is not None else [])]) + "\n"


def forward_flow(rng: random.Random) -> Flow:
    """A flow whose rules only route forward (to a later speaker, or to an end), branching
    on tools, context and a custom condition: no loop, runs of up to 6 turns of which
    the longest is the worst case (:func:`random_flow` mostly draws loops)."""
    speakers = ["user", "a", "b", "c", "d", "e"][: rng.randint(3, 6)]
    lines = ["condition urgent()", "speaker user: human"]
    for s in speakers[1:]:
        tools = [f"  tool t{i} sets k = {rng.choice(['1', '2'])}" for i in range(rng.randint(0, 2))]
        if rng.random() < 0.3:
            tools.append('  tool stop finishes "fin"')
        lines += [f"speaker {s} {{", *tools, "}"] if tools else [f"speaker {s}"]
    lines.append("start user")
    for i, s in enumerate(speakers):
        later = speakers[i + 1 :]
        for _ in range(rng.randint(1, 3)):
            target = rng.choice([*later, *later, 'terminate "t"']) if later else 'terminate "u"'
            cond = rng.choice(
                [f"from {s}", f"from {s} and context.k == 1", f"from {s} and urgent()"]
                + ([f"from {s} and tool t0"] if i else [])
            )
            lines.append(f"when {cond} then {target}")
    lines.append(rng.choice(['otherwise terminate "t"', "", ""]))
    return Flow([line for line in lines if line], 6, speakers, [], ["k"], [])


def flows(rng: random.Random) -> Iterator[Flow]:
    """:data:`FLOWS` flows of :func:`random_flow`, and a fifth as many forward ones."""
    for i in range(FLOWS):
        yield random_flow(rng)
        if i % 5 == 0:
            yield forward_flow(rng)


def test_worst_case_agrees_with_the_brute_force() -> None:
    rng = random.Random(SEED)
    kinds = Counter[str]()
    for flow in flows(rng):
        # a run that ends by itself never has the cap's reason in these flows
        assert '"max_turns"' not in "\n".join(flow.lines)
        while Runs(flow.text).count() > MAX_RUNS and flow.max_turns > 2:
            flow.max_turns -= 1
        cap = flow.max_turns
        text = flow.text
        runs = Runs(text)
        found, _ = checker(text)
        assert found is not None
        capped, longest = brute(runs)
        where = f"\n{text}"
        if capped:
            assert (found.kind, found.turns) == ("cap", cap), where
            assert found.run.loop_from is None and len(found.run.turns) == cap, where
            # a real run: on the flow allowed one more turn it goes on to `run.next`
            Runs(with_cap(flow.lines, cap + 1)).replay(found.run.turns, found.run.next, None)
            kinds["cap"] += 1
        else:
            assert (found.kind, found.turns) == ("ends", longest), where
            replayed = runs.replay(found.run.turns, None, found.run.reason)
            assert all(len(r) == longest and r[-1].ended is not None for r in replayed), where
            kinds["ends"] += 1
        # the same flow with no cap
        bare = with_cap(flow.lines, None)
        found, states = checker(bare)
        assert found is not None
        if found.kind == "ends":
            assert found.turns is not None
            capped, longest = brute(Runs(with_cap(flow.lines, found.turns + 1)))
            assert not capped and longest == found.turns, bare
            Runs(with_cap(flow.lines, found.turns)).replay(found.run.turns, None, found.run.reason)
            kinds["ends, no cap"] += 1
            # a cap one turn short of the longest run closes it (no loop: the longest
            # path reaches the cap); a cap of exactly its length closes none
            if found.turns >= 2:
                short = with_cap(flow.lines, found.turns - 1)
                tight, _ = checker(short)
                assert tight is not None and (tight.kind, tight.turns) == ("cap", found.turns - 1)
                assert brute(Runs(short))[0], short
                Runs(with_cap(flow.lines, found.turns)).replay(
                    tight.run.turns, tight.run.next, None
                )
                exact, _ = checker(with_cap(flow.lines, found.turns))
                assert exact is not None and (exact.kind, exact.turns) == ("ends", found.turns)
                kinds["cap one short of the longest run"] += 1
        else:
            assert found.kind == "endless", bare
            assert found.run.loop_from is not None
            # a loop: allowed more turns than there are states, some run is still going
            capped, _ = brute(Runs(with_cap(flow.lines, states + 1)))
            assert capped, bare
            allowed = Runs(with_cap(flow.lines, len(found.run.turns) + 1))
            allowed.replay(found.run.turns, found.run.next, None)
            kinds["endless"] += 1
    print(f"\n{kinds['cap'] + kinds['ends']} flows, each with and without its cap: {dict(kinds)}")
    # the generator draws every case often enough for the comparison to mean something
    assert min(kinds.values()) >= FLOWS // 20, kinds


def counted(text: str) -> WorstCase | None:
    """:func:`worst_case` read from the symbolic count: the explicit exploration cut
    short at its first state, so that every answer comes from the count."""
    system = system_of_flow(compile_flow(text))
    space = explore(system, 1)
    assert space.truncated
    return worst_case(Facts(system, space, "f.flow"))


def test_the_worst_case_read_from_the_count_agrees_with_the_brute_force() -> None:
    """When the exploration stops at its bound, the worst case comes from the symbolic
    count (the states some run is in after exactly 1, 2, ... turns): on the generated
    flows, with and without their cap, it is the brute force's, and its run replays
    (without a cap, a run that never ends: into a loop and round it, back to the state
    the loop starts from)."""
    rng = random.Random(SEED + 1)
    kinds = Counter[str]()
    for i, flow in enumerate(flows(rng)):
        if i >= FLOWS // 2:
            break
        while Runs(flow.text).count() > MAX_RUNS and flow.max_turns > 2:
            flow.max_turns -= 1
        cap = flow.max_turns
        runs = Runs(flow.text)
        found = counted(flow.text)
        assert found is not None, flow.text
        capped, longest = brute(runs)
        if capped:
            assert (found.kind, found.turns) == ("cap", cap), flow.text
            assert len(found.run.turns) == cap, flow.text
            Runs(with_cap(flow.lines, cap + 1)).replay(found.run.turns, found.run.next, None)
            kinds["cap"] += 1
        else:
            assert (found.kind, found.turns) == ("ends", longest), flow.text
            replayed = runs.replay(found.run.turns, None, found.run.reason)
            assert all(len(r) == longest and r[-1].ended is not None for r in replayed)
            kinds["ends"] += 1
        bare = with_cap(flow.lines, None)
        whole, _ = checker(bare)
        assert whole is not None
        found = counted(bare)
        if whole.kind == "endless":
            assert found is not None and found.kind == "endless", bare
            assert found.run.loop_from is not None
            # a lasso: it replays, and goes round to the state its loop starts from
            system = system_of_flow(compile_flow(bare))
            (finding,) = check_worst_case(Facts(system, explore(system, 1), "f.flow"))
            assert finding.run == found.run
            replay_finding(system, finding)
            capped, _ = brute(Runs(with_cap(flow.lines, len(found.run.turns) + 1)))
            assert capped, bare
            Runs(with_cap(flow.lines, len(found.run.turns) + 1)).replay(
                found.run.turns, found.run.next, None
            )
            kinds["endless"] += 1
        else:
            assert found is not None and (found.kind, found.turns) == ("ends", whole.turns), bare
            assert whole.turns is not None
            Runs(with_cap(flow.lines, whole.turns)).replay(found.run.turns, None, found.run.reason)
            kinds["ends, no cap"] += 1
    print(f"\n{kinds}")
    assert min(kinds.values()) >= FLOWS // 40, kinds


FLOW = """\
speaker user: human
speaker bot {
  tool done sets ok = true
}
start user
when context.ok == true then terminate "done"
when from user then bot
when from bot then user
"""


def test_i307_is_reported_only_when_selected() -> None:
    text = FLOW + "max_turns 10\n"
    assert [d.code.id for d in check(text)] == []
    assert [d.code.id for d in check(text, options=CheckOptions(select=("I",)))] == []
    (found,) = check(text, options=CheckOptions(select=("I307",)))
    assert found.code.id == "I307"
    assert found.message.startswith("some run does not end by itself: `max_turns 10` closes it")
    assert found.span is not None and found.span.line == 9
    both = check(text, options=CheckOptions(select=("W", "I307"), ignore=("I3",)))
    assert both == ()


def test_the_longest_run_that_ends() -> None:
    text = """\
speakers user: human, a, b
start user
max_turns 9
when from user then a
when from a then b
when from b then terminate "done"
"""
    (found,) = check(text, options=CheckOptions(select=("I307",)))
    assert found.message == (
        "the longest run takes 3 turns before it ends; `max_turns 9` closes no run"
    )
    assert found.notes[0] == 'a longest run: user → a → b → terminate "done"'


def test_a_run_that_never_ends_without_a_cap() -> None:
    (found,) = check(FLOW, options=CheckOptions(select=("I307",)))
    assert found.message == (
        "some run never ends: it can go around a loop, and no `max_turns` closes it"
    )
    assert found.notes[0] == "a run that never ends: user → bot → user → bot → …"


def test_a_partial_exploration_reads_the_worst_case_from_the_count() -> None:
    text = """\
speaker user: human
speaker worker {
  tool a sets x = 1 | sets x = 2 | sets x = 3
  tool b sets y = 1 | sets y = 2 | sets y = 3
}
start user
max_turns 30
when context.x == 3 and context.y == 3 then terminate "done"
when from user then worker
when from worker then user
"""
    codes = check(text, options=CheckOptions(select=("I301", "I307"), max_states=10))
    assert [d.code.id for d in codes] == ["I301", "I307"]
    # the count says what a complete check says: a run goes round until the cap
    (whole,) = check(text, options=CheckOptions(select=("I307",)))
    assert codes[1].message == whole.message
    assert "closes it after turn 30" in codes[1].message
    # with no cap, some run never ends: a run into a loop and round it, from the count
    bare = text.replace("max_turns 30\n", "")
    codes = check(bare, options=CheckOptions(select=("I301", "I307"), max_states=10))
    assert [d.code.id for d in codes] == ["I301", "I307"]
    assert codes[1].message.startswith("some run never ends"), codes[1].message
    assert "…" in "\n".join(codes[1].notes)
    # when the count itself gives up, the worst case is not known: every state is needed
    system = system_of_flow(compile_flow(text))
    facts = Facts(system, explore(system, 10), "f.flow", symbolic=False)
    assert worst_case(facts) is None


def test_the_cli_selects_it(tmp_path: object, capsys: pytest.CaptureFixture[str]) -> None:
    from pathlib import Path

    path = Path(str(tmp_path)) / "f.flow"
    path.write_text(FLOW + "max_turns 4\n")
    assert main(["check", str(path), "--format", "concise"]) == 0
    assert capsys.readouterr().out == "no findings in 1 file\n"
    assert main(["check", str(path), "--format", "concise", "--select", "W,I307"]) == 0
    out = capsys.readouterr().out
    assert "I307 some run does not end by itself: `max_turns 4` closes it after turn 4" in out


@pytest.mark.parametrize(("cap", "kind", "turns"), [(4, "cap", 4), (5, "ends", 5), (3, "cap", 3)])
def test_the_count_follows_runs_longer_than_any_shortest_one(
    cap: int, kind: str, turns: int
) -> None:
    """No loop, and every state is first reached within 2 turns, yet a longer way round
    takes 5 turns before it ends: the count follows every run turn by turn (not only the
    shortest to each state), as a complete check does, and its run replays."""
    from tests.check.test_symbolic import LASTS_FLOW

    text = LASTS_FLOW.replace("CAP", str(cap))
    whole, _ = checker(text)
    found = counted(text)
    assert whole is not None and found is not None
    assert (found.kind, found.turns) == (whole.kind, whole.turns) == (kind, turns)
    assert len(found.run.turns) == turns
    system = system_of_flow(compile_flow(text))
    (finding,) = check_worst_case(Facts(system, explore(system, 1), "f.flow"))
    assert finding.run == found.run
    replay_finding(system, finding)


def test_a_count_out_of_memory_here_leaves_the_other_findings_as_they_are(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """CUDD running out of memory while I307 follows the runs says so in I307 alone: the
    other checks' findings (I301's count of every state) stay those of the count, not
    those of a check made again without it."""
    from flowc.compiler.analysis.symbolic import Reach

    def out_of_memory(*_: object) -> None:
        raise ValueError("`DdNode *node` is `NULL` pointer.")

    text = FLOW + "max_turns 30\n"
    monkeypatch.setattr(Reach, "longest", out_of_memory)
    i301, i307 = check(text, options=CheckOptions(select=("I301", "I307"), max_states=2))
    assert "counted symbolically" in "\n".join(i301.notes)
    assert "is not known" in i307.message
    assert i307.notes == (
        "the symbolic count ran out of the memory it is given while following the runs turn"
        " by turn for the longest (its states were counted: see I301)",
    )


def test_whether_a_run_reaches_the_cap_agrees_with_the_brute_force_and_the_walk() -> None:
    """``Facts.cap_reached`` (what E111 and the editor's completion of closing reasons
    read) is worked out in one pass over the edges (``StateSpace.runs_to_cap``): it agrees with
    the enumerator, and with :attr:`Facts.cap_walk` (a run of exactly ``max_turns``
    turns, built a turn at a time), on every generated flow, under the caps 1, 2 and 3,
    the flow's own ``max_turns`` and three turns past it (a cap under which the flow has
    more than ``MAX_RUNS`` runs to enumerate is skipped)."""
    rng = random.Random(SEED + 1)
    seen = Counter[bool]()
    for flow in itertools.islice(flows(rng), FLOWS // 4):
        for cap in sorted({1, 2, 3, flow.max_turns, flow.max_turns + 3}):
            text = with_cap(flow.lines, cap)
            runs = Runs(text)
            if runs.count() > MAX_RUNS:
                continue
            system = system_of_flow(compile_flow(text))
            facts = Facts(system, explore(system, 100_000), "f.flow")
            capped, _ = brute(runs)
            assert facts.space.runs_to_cap(cap) is capped, text
            assert facts.cap_reached is capped, text
            assert (facts.cap_walk is not None) is capped, text
            seen[capped] += 1
    assert min(seen[True], seen[False]) >= FLOWS // 20, seen
