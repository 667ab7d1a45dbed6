"""Seeded random flows for the golden test of ``flowc check``'s output.

Each seed gives one flow text (``random.Random(seed)``, so the same text on every
machine and Python version): speakers (a human that writes keys, model speakers
with tools that set, clear, hand off or finish, alternatives), context keys and
initial values, custom conditions and targets, rules over ``from`` / ``tool`` /
``context`` / custom calls joined by ``and`` / ``or`` / ``not``, priorities, an
``otherwise``, ``max_turns``, ignore comments, and now and then an undeclared name
(an error). Small enough that every seed checks in a fraction of a second, varied
enough that every flow-analysis code shows up over the seeds.
"""

from __future__ import annotations

import random

KEY_VALUES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("stage", ("0", "1", "2")),
    ("status", ('"open"', '"done"', '"review"')),
    ("done", ("true", "false")),
)


def flow(seed: int) -> str:
    """The flow of ``seed``.

    >>> flow(3) == flow(3), flow(3) != flow(4)
    (True, True)
    """
    rnd = random.Random(seed)
    n = rnd.randint(3, 7)
    names = [f"s{i}" for i in range(n)]
    keys = KEY_VALUES[: rnd.randint(1, 3)]
    lines = [f'flow golden_{seed} "seed {seed}"']
    human = names[0]
    written = [k for k, _ in keys if rnd.random() < 0.3]
    if written:
        lines += [f"speaker {human}: human {{", f"  sets {', '.join(written)}", "}"]
    else:
        lines.append(f"speaker {human}: human")
    tools: list[str] = []
    for i, name in enumerate(names[1:], start=1):
        count = rnd.choice((0, 1, 1, 2, 3))
        if not count:
            lines.append(f"speaker {name}")
            continue
        lines.append(f"speaker {name} {{")
        for j in range(count):
            tool = f"t{i}_{j}"
            tools.append(tool)
            effects = [_effect(rnd, names, keys) for _ in range(rnd.choice((0, 1, 1, 2)))]
            lines.append(f"  tool {tool}" + (" " + " | ".join(effects) if effects else ""))
        lines.append("}")
    customs = rnd.random() < 0.3
    if customs:
        picks = " | ".join(rnd.sample(names, 2) + (["terminate"] if rnd.random() < 0.5 else []))
        lines += ["condition urgent(level: int = 1)", f"target pick() -> {picks}"]
    start = human if rnd.random() < 0.85 else names[1]
    lines.append(f"start {start}")
    if rnd.random() < 0.7:
        lines.append(f"max_turns {rnd.choice((rnd.randint(1, 3), rnd.randint(2, 40)))}")
    inits = [f"{k} = {rnd.choice(vals)}" for k, vals in keys if rnd.random() < 0.6]
    if inits:
        lines.append("context { " + ", ".join(inits) + " }")
    lines.append(f"when from {human} then {names[1]}")
    for r in range(rnd.choice((rnd.randint(1, 6), rnd.randint(6, 40)))):
        rule = f"when {_condition(rnd, names, tools, keys, customs, top=True)} then {_target(rnd, names, customs, r)}"
        if rnd.random() < 0.25:
            rule += f" priority {rnd.randint(-3, 3)}"
        if rnd.random() < 0.08:
            rule += f"  # flowc: ignore[{rnd.choice(('W203', 'W204', 'W201', 'W209'))}]"
        lines.append(rule)
    if rnd.random() < 0.6:
        lines.append(f"otherwise {_target(rnd, names, customs, 99)}")
    return "\n".join(lines) + "\n"


def _effect(
    rnd: random.Random, names: list[str], keys: tuple[tuple[str, tuple[str, ...]], ...]
) -> str:
    key, values = rnd.choice(keys)
    kind = rnd.random()
    if kind < 0.4:
        effect = f"sets {key} = {rnd.choice(values)}"
        if rnd.random() < 0.2:
            effect += f", hands off to {rnd.choice(names)}"
        return effect
    if kind < 0.5:
        return f"clears {key}"
    if kind < 0.8:
        return f"hands off to {rnd.choice(names)}"
    return f'finishes "f{rnd.randint(0, 3)}"'


def _condition(
    rnd: random.Random,
    names: list[str],
    tools: list[str],
    keys: tuple[tuple[str, tuple[str, ...]], ...],
    customs: bool,
    *,
    top: bool = False,
    depth: int = 0,
) -> str:
    kind = rnd.random()
    if depth < 2 and kind < 0.25:
        op = rnd.choice(("and", "and", "or"))
        parts = [_condition(rnd, names, tools, keys, customs, depth=depth + 1) for _ in range(2)]
        text = f" {op} ".join(parts)
        return text if top else f"({text})"
    if depth < 2 and kind < 0.32:
        return "not " + _condition(rnd, names, tools, keys, customs, depth=depth + 1)
    atom = rnd.random()
    if atom < 0.45:
        who = rnd.sample(names, rnd.choice((1, 1, 1, 2))) if top else [rnd.choice(names)]
        return "from " + ", ".join(who)
    if atom < 0.65:
        tool = rnd.choice(tools) if tools and rnd.random() < 0.9 else "nobody_declares"
        return f"tool {tool}"
    if atom < 0.9:
        key, values = rnd.choice(keys)
        if rnd.random() < 0.05:
            key = "never_set"
        return f"context.{key} {rnd.choice(('==', '==', '!='))} {rnd.choice(values)}"
    if customs:
        return "urgent()" if rnd.random() < 0.5 else "urgent(level = 2)"
    return "always" if rnd.random() < 0.3 else f"from {rnd.choice(names)}"


def _target(rnd: random.Random, names: list[str], customs: bool, r: int) -> str:
    kind = rnd.random()
    if kind < 0.5:
        return rnd.choice(names) if rnd.random() < 0.98 else "ghost"
    if kind < 0.6:
        return "next"
    if kind < 0.67:
        return "stay"
    if kind < 0.72:
        return "initiator"
    if customs and kind < 0.8:
        return "pick()"
    return f'terminate "r{r}"' if rnd.random() < 0.8 else "terminate"
