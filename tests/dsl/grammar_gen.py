"""Flows generated from the grammar itself (``flowc/grammar/flow.lark``): statements
derived at random from its ``statement`` rule, and the same token strings with one token dropped, doubled,
replaced or moved (near-valid files, most of which do not parse).

The generator reads the rules from Lark's parser of the grammar, so a rule added to the
grammar is generated without a change here; only the four pattern terminals (names,
quoted names, strings and numbers) get sample texts, chosen to reach the builder's own
checks (huge numbers, escapes) too. Deterministic for a given ``random.Random``.

>>> import random
>>> text = generate(random.Random(1))
>>> isinstance(text, str)
True
"""

from __future__ import annotations

import random
from functools import cache
from typing import Any

from flowc.dsl.lalr import _parser

#: texts for the terminals that are patterns (every other terminal is its literal)
SAMPLES = {
    "NAME": ["a", "b", "writer", "x_1", "go-on", "_k", "whenever"],
    "QUOTED_NAME": ["`a b`", "`when`", "`x-y`"],
    "STRING": ['"r"', '""', '"a\\nb"', '"\\u00e9"', '"speaker"'],
    # mostly 1 (`at most 1 time`, `within 1 turn` want it) and small counts
    "NUMBER": ["1", "1", "1", "1", "2", "3", "0", "1.5", "-2", "1e3", "9" * 30, "1e400"],
}
#: expansions the grammar has only so that the builder can refuse them with a reason
#: (``always`` and a custom condition inside a property): never in a valid file
NEVER_VALID = frozenset({("prop_other", "always_cond"), ("prop_other", "call_cond")})
#: a value is an object half the time (a scripted call's `with` takes only an object)
OBJECT_SHARE = 0.5
#: blanks and comments put between tokens
GAPS = [" ", " ", " ", "\n", "\n  ", "\t", " # note\n", "\r\n"]


@cache
def _grammar() -> tuple[dict[str, list[tuple[Any, ...]]], dict[str, str]]:
    """Each rule's expansions (tuples of symbols) and each literal terminal's text."""
    parser = _parser()
    literals = {t.name: str(t.pattern.value) for t in parser.terminals if t.pattern.type == "str"}
    rules: dict[str, list[tuple[Any, ...]]] = {}
    for rule in parser.rules:
        rules.setdefault(rule.origin.name, []).append(tuple(rule.expansion))
    return rules, literals


@cache
def _heights() -> dict[str, int]:
    """The height of each rule's shortest derivation (terminals are 0): past the depth
    budget, only expansions this short are chosen, so every derivation ends."""
    rules, _ = _grammar()
    height: dict[str, int] = {}
    changed = True
    while changed:
        changed = False
        for name, expansions in rules.items():
            for expansion in expansions:
                parts = [0 if s.is_term else height.get(s.name) for s in expansion]
                if any(p is None for p in parts):
                    continue
                h = 1 + max((p for p in parts if p is not None), default=0)
                if h < height.get(name, h + 1):
                    height[name] = h
                    changed = True
    return height


def tokens(
    rng: random.Random,
    symbol: str = "statement",
    depth: int = 12,
    used: set[Any] | None = None,
    refused: bool = False,
) -> list[str]:
    """The texts of the tokens of one random derivation of ``symbol`` (each expansion
    it chose added to ``used``; those of :data:`NEVER_VALID` only if ``refused``)."""
    rules, literals = _grammar()
    heights = _heights()
    out: list[str] = []

    def expand(name: str, budget: int) -> None:
        choices = rules[name]
        if not refused:
            choices = [e for e in choices if not never_valid(name, e)]
        if name == "value" and budget > 0 and rng.random() < OBJECT_SHARE:
            choices = [e for e in choices if e[0].name == "object"]
        if budget <= 0:  # only the shortest ways out from here on
            least = min(_height(e, heights) for e in choices)
            choices = [e for e in choices if _height(e, heights) == least]
        chosen = rng.choice(choices)
        if used is not None:
            used.add((name, chosen))
        for sym in chosen:
            if sym.is_term:
                out.append(literals.get(sym.name) or rng.choice(SAMPLES[sym.name]))
            else:
                expand(sym.name, budget - 1)

    expand(symbol, depth)
    return out


def never_valid(name: str, expansion: tuple[Any, ...]) -> bool:
    """Whether the expansion is one of :data:`NEVER_VALID`."""
    return len(expansion) == 1 and (name, expansion[0].name) in NEVER_VALID


def _height(expansion: tuple[Any, ...], heights: dict[str, int]) -> int:
    return max((0 if s.is_term else heights[s.name] for s in expansion), default=0)


def join(rng: random.Random, toks: list[str]) -> str:
    """The tokens as a file, blanks or a comment between each two."""
    return "".join(t + rng.choice(GAPS) for t in toks)


def expansions() -> set[Any]:
    """Every (rule, expansion) of the grammar."""
    return {(name, e) for name, es in _grammar()[0].items() for e in es}


def generate(rng: random.Random, used: set[Any] | None = None, refused: bool = False) -> str:
    """A random file of a few statements, valid as far as the grammar goes (the builder
    may still refuse a number or a count; and what :data:`NEVER_VALID` names if
    ``refused``)."""
    statements = rng.randint(1, 4)
    return join(
        rng, [t for _ in range(statements) for t in tokens(rng, used=used, refused=refused)]
    )


def near(rng: random.Random) -> str:
    """A generated file with one token dropped, doubled, replaced by another or moved."""
    toks = [t for _ in range(rng.randint(1, 3)) for t in tokens(rng, refused=True)]
    if not toks:
        return join(rng, [rng.choice(list(_grammar()[1].values()))])
    i = rng.randrange(len(toks))
    how = rng.choice(["drop", "double", "replace", "move"])
    if how == "drop":
        del toks[i]
    elif how == "double":
        toks.insert(i, toks[i])
    elif how == "replace":
        pool = [*(_grammar()[1].values()), *(s for v in SAMPLES.values() for s in v)]
        toks[i] = rng.choice(pool)
    else:
        toks.insert(rng.randrange(len(toks)), toks.pop(i))
    return join(rng, toks)
