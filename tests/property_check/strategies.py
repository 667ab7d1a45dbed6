"""Generated small flows (as `.flow` text) and random properties over their names.

The flows are in the style of the soundness tests' generators (``tests/diff/test_soundness.py``,
``tests/check/test_check_soundness.py``), kept small enough to enumerate every run: 2-4
speakers, ``user`` sometimes a human writing 0-2 keys, 0-2 context keys with 2-3 values
each (sometimes an initial value), model speakers with 0-2 tools whose alternatives set,
clear, hand off or finish, 1-5 rules over ``from`` / ``tool`` / context comparisons /
custom conditions (nested in ``and``, ``or``, ``not``) with priorities, an ``otherwise``
or not, sometimes a custom target, an initiator, and ``max_turns`` 2-7 (lowered, when the
flow has more than :data:`MAX_RUNS` runs, until it has no more).

The properties use every pattern under every scope; their expressions (depth <= 3) read
the flow's speakers, tools, keys, values - including values no rule compares and values
equal to a rule's under Python's equality (``true == 1``) - endings with and without a
reason, the turn number and ``previous``.
"""

from __future__ import annotations

import random
from typing import Any

import attrs
from hypothesis import strategies as st

from flowc.compiler import model as m
from flowc.compiler import properties as p
from tests.property_check.runs import Runs

NAMES = ["user", "a", "b", "c"]
TOOLS = ["t1", "t2"]
#: key -> the values the flows use, as `.flow` literals and as values
KEYS: dict[str, list[tuple[str, Any]]] = {
    "k": [('"x"', "x"), ('"y"', "y"), ("true", True), ("null", None)],
    "j": [("1", 1), ("2", 2)],
}
#: values properties compare with that no flow writes or compares (some equal to one
#: that does under Python's equality: 1 == true, 1.0 == 1)
UNSEEN: dict[str, list[Any]] = {"k": ["z", 1, 0], "j": [3, True, 1.0, "1"]}
REASONS = ["t", "u"]
FINISHES = ["fin", "fin2"]
#: reasons to try where a custom target may end a run (then any reason may be written)
ANY_REASONS = ["after_work", "workflow_terminated", "finished", "elsewhere"]
#: a flow with more runs than this has its max_turns lowered
MAX_RUNS = 300
#: the odds of a human `user`, of a custom condition and target; the range of max_turns
#: (a hunt for disagreements may change them)
HUMAN, CUSTOMS, CAPS = 0.5, 0.3, (2, 7)


@attrs.define
class Flow:
    """A generated flow: its text, and the names properties may read."""

    lines: list[str]  # without max_turns
    max_turns: int
    speakers: list[str]
    tools: list[str]  # tools some speaker declares
    #: keys the flow sets (an initial value, a tool's or a human's write): those a property
    #: may read (E117)
    keys: list[str]
    #: the reasons a run may close with (those ``ends "r"`` may name, E117)
    reasons: list[str]

    @property
    def text(self) -> str:
        return "\n".join([*self.lines, f"max_turns {self.max_turns}"]) + "\n"


def _literal(rng: random.Random, key: str) -> str:
    return rng.choice([lit for lit, _ in KEYS[key]])


def _condition(rng: random.Random, flow: Flow, customs: bool, depth: int = 0) -> str:
    kinds = ["from", "from", "from", "tool", "always"]
    if flow.keys:
        kinds += ["ctx", "ctx", "ctxne"]
    if customs:
        kinds += ["custom", "custom"]
    if depth < 2:
        kinds += ["and", "or", "not"]
    kind = rng.choice(kinds)
    if kind == "from":
        return f"from {rng.choice(flow.speakers)}"
    if kind == "tool":
        return f"tool {rng.choice(TOOLS)}"
    if kind in ("ctx", "ctxne"):
        key = rng.choice(flow.keys)
        value = rng.choice([_literal(rng, key), "null"])
        return f"context.{key} {'==' if kind == 'ctx' else '!='} {value}"
    if kind == "always":
        return "always"
    if kind == "custom":
        return rng.choice(["urgent()", "urgent(level = 2)"])
    if kind == "not":
        return f"not ({_condition(rng, flow, customs, depth + 1)})"
    left = _condition(rng, flow, customs, depth + 1)
    return f"({left}) {kind} ({_condition(rng, flow, customs, depth + 1)})"


def random_flow(rng: random.Random) -> Flow:
    """A flow drawn with Python's generator, so that its shape is as likely as this
    function says (Hypothesis's choices lean to the smallest, and a flow without choices
    has one run)."""
    speakers = NAMES[: rng.randint(2, 4)]
    human = rng.random() < HUMAN
    keys = sorted(rng.sample(sorted(KEYS), rng.choice([0, 1, 1, 2, 2])))
    customs = rng.random() < CUSTOMS
    flow = Flow([], rng.randint(*CAPS), speakers, [], keys, [])
    settable: set[str] = set()
    tools: set[str] = set()
    reasons: set[str] = set()
    lines = flow.lines
    if customs:
        picks = rng.sample(speakers, rng.randint(1, len(speakers)))
        lines += [
            "condition urgent(level: int = 1)",
            "target pick() -> " + " | ".join([*picks, "terminate"]),
        ]
    for s in speakers:
        body: list[str] = []
        role = ""
        if s == "user" and human:
            role = ": human"
            writes = sorted(rng.sample(keys, rng.randint(0, len(keys))))
            if writes:
                body.append(f"  sets {', '.join(writes)}")
                settable.update(writes)
        else:
            for tool in rng.sample(TOOLS, rng.choice([0, 1, 1, 2, 2])):
                alts: list[str] = []
                for _ in range(rng.choice([0, 1, 1, 2, 2])):
                    effect = rng.choice(
                        ["set", "set", "clear", "handoff", "finish"]
                        if keys
                        else ["handoff", "finish"]
                    )
                    if effect == "set":
                        key = rng.choice(keys)
                        alts.append(f"sets {key} = {_literal(rng, key)}")
                        settable.add(key)
                    elif effect == "clear":
                        key = rng.choice(keys)
                        alts.append(f"clears {key}")
                    elif effect == "handoff":
                        alts.append(f"hands off to {rng.choice(speakers)}")
                    else:
                        reason = rng.choice(FINISHES)
                        alts.append(f'finishes "{reason}"')
                        reasons.add(reason)
                alts = list(dict.fromkeys(alts))
                body.append(f"  tool {tool} {' | '.join(alts)}".rstrip())
                tools.add(tool)
        lines += [f"speaker {s}{role} {{", *body, "}"] if body else [f"speaker {s}{role}"]
    lines.append(f"start {rng.choice(['user', 'user', 'user', 'a'])}")
    if rng.random() < 0.25:
        lines.append(f"initiator {rng.choice(speakers)}")
    for key in keys:
        if rng.random() < 0.5:
            lines.append(f"context {key} = {_literal(rng, key)}")
            settable.add(key)
    targets = [*speakers, *speakers, "next", "next", "stay", "initiator"]
    targets += [f'terminate "{r}"' for r in REASONS] + (["pick()", "pick()"] if customs else [])
    for _ in range(rng.randint(1, 5)):
        cond = _condition(rng, flow, customs)
        target = rng.choice(targets)
        prio = rng.choice(["", "", "", " priority 5", " priority -1"])
        lines.append(f"when {cond} then {target}{prio}")
        reasons.update(r for r in REASONS if f'"{r}"' in target)
    if rng.random() < 0.8:  # the default is `terminate "after_work"`: most runs go on
        target = rng.choice([*speakers, "next", "stay", "initiator", *targets])
        lines.append(f"otherwise {target}")
        reasons.update(r for r in REASONS if f'"{r}"' in target)
    else:
        reasons.add("after_work")
    reasons.add("max_turns")
    if any(
        line.endswith(("then pick()", "otherwise pick()")) or " then pick() " in line
        for line in lines
    ):
        # `pick()` may terminate with a reason its code chooses: any may be named
        reasons.update(ANY_REASONS)
    flow.tools, flow.keys, flow.reasons = sorted(tools), sorted(settable), sorted(reasons)
    return flow


# ── properties ────────────────────────────────────────────────────────────────


def expression(rng: random.Random, flow: Flow, depth: int = 1) -> Any:
    """An expression of at most 3 levels (``depth`` counts the levels above it)."""
    kinds = ["from", "from", "ends", "turn"]
    if flow.tools:
        kinds += ["tool", "tool"]
    if flow.keys:
        kinds += ["ctx", "ctx", "ctxne"]
    if depth < 3:
        kinds += ["not", "and", "or", "previous"]
    kind = rng.choice(kinds)
    if kind == "from":
        who = rng.sample(flow.speakers, rng.choice([1, 1, 2]))
        parts = tuple(m.FromSpeaker(s) for s in who)
        return parts[0] if len(parts) == 1 else m.AnyOf(parts)
    if kind == "tool":
        return m.ToolCalled(rng.choice(flow.tools))
    if kind in ("ctx", "ctxne"):
        key = rng.choice(flow.keys)
        atom = m.ContextEquals(key, rng.choice([v for _, v in KEYS[key]] + [None] + UNSEEN[key]))
        return atom if kind == "ctx" else m.Not(atom)
    if kind == "ends":
        return p.Ends(rng.choice([None, None, *flow.reasons]))
    if kind == "turn":
        return p.TurnIs(rng.choice(["==", "!=", "<", "<=", ">", ">="]), rng.randint(0, 8))
    if kind == "not":
        return m.Not(expression(rng, flow, depth + 1))
    if kind == "previous":
        return p.Previous(expression(rng, flow, depth + 1))
    parts = tuple(expression(rng, flow, depth + 1) for _ in range(rng.choice([2, 2, 3])))
    return m.AllOf(parts) if kind == "and" else m.AnyOf(parts)


def pattern(rng: random.Random, flow: Flow) -> Any:
    kind = rng.choice(["never", "always", "eventually", "at most", "only after", "after"])
    within = rng.choice([None, None, 1, 2, 3, 4])
    if kind == "never":
        return p.Never(expression(rng, flow))
    if kind == "always":
        return p.Always(expression(rng, flow))
    if kind == "eventually":
        return p.Eventually(expression(rng, flow), within)
    if kind == "at most":
        return p.AtMost(expression(rng, flow), rng.randint(0, 2))
    if kind == "only after":
        return p.OnlyAfter(expression(rng, flow), expression(rng, flow))
    return p.Responds(expression(rng, flow), expression(rng, flow), within)


def scope(rng: random.Random, flow: Flow) -> Any:
    kind = rng.choice(["globally", "globally", "before", "after", "between", "until"])

    def e() -> Any:
        # a scope whose Q or R never holds cuts no interval (the property holds,
        # vacuously): its expressions are most often an atom that holds on some turns
        if rng.random() < 0.4:
            return expression(rng, flow)
        atoms: list[Any] = [m.FromSpeaker(s) for s in flow.speakers]
        atoms.append(p.TurnIs(rng.choice(["==", ">=", ">"]), rng.randint(1, 4)))
        atoms += [m.ToolCalled(t) for t in flow.tools]
        return rng.choice(atoms)

    if kind == "globally":
        return p.Globally()
    if kind == "before":
        return p.Before(e())
    if kind == "after":
        return p.After(e())
    if kind == "between":
        return p.Between(e(), e())
    return p.AfterUntil(e(), e())


def random_properties(flow: Flow, seed: int, n: int) -> list[p.Property]:
    """``n`` properties of ``flow``, drawn from ``seed`` (Python's generator: drawing
    thousands of nested expressions through Hypothesis's strategies costs more than
    checking them)."""
    rng = random.Random(seed)
    return [p.Property(f"p{i}", pattern(rng, flow), scope(rng, flow)) for i in range(n)]


# ── the cases of the differential test ────────────────────────────────────────


@attrs.frozen
class Case:
    text: str
    props: tuple[p.Property, ...]
    runs: Runs = attrs.field(eq=False, repr=False)


def case_of_seed(seed: int, n_props: int) -> Case:
    """The case of ``seed``: a flow (its cap lowered until it has at most
    :data:`MAX_RUNS` runs; most flows of a single run are drawn again) and ``n_props``
    properties of it, with the flow's runs enumerated for them."""
    rng = random.Random(seed)
    while True:
        flow = random_flow(rng)
        props = random_properties(flow, rng.getrandbits(64), n_props)
        while True:
            runs = Runs(flow.text, props)
            if runs.count() <= MAX_RUNS or flow.max_turns == 2:
                break
            flow.max_turns -= 1
        if runs.count() > 1 or rng.random() < 0.25:
            return Case(flow.text, tuple(props), runs)


def cases(n_props: int) -> st.SearchStrategy[Case]:
    return st.integers(0, 2**64 - 1).map(lambda seed: case_of_seed(seed, n_props))
