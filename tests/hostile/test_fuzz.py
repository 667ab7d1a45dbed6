"""Character-level mutation fuzzing of the examples (see ``tests/hostile/fuzz.py``).

Seeded, so a failure reproduces: a few hundred mutants in the suite; set
``FLOWC_FUZZ=5000`` (and ``FLOWC_FUZZ_SEED``) for a longer run, or run
``python -m tests.hostile.fuzz N --seed S``. Every mutant must give a diagnostic or a
result, never a traceback; ``fmt`` must accept its own output, be idempotent, and keep
the compiled graph of every input that compiles.
"""

from __future__ import annotations

import os
import random

import pytest

from flowc.dsl.formatter import FormatterBug
from tests.hostile import fuzz
from tests.hostile.fuzz import Problem, campaign, examples, mutate, probe

COUNT = int(os.environ.get("FLOWC_FUZZ", "300"))
SEED = int(os.environ.get("FLOWC_FUZZ_SEED", "11"))


def test_mutants_of_the_examples() -> None:
    problems: list[tuple[str, Problem]] = list(campaign(COUNT, SEED))
    report = "\n\n".join(
        f"[{p.kind}] from {name}: {p.detail}\n{p.text!r}" for name, p in problems[:5]
    )
    assert not problems, f"{len(problems)} of {COUNT} mutants (seed {SEED}) went wrong:\n{report}"


def test_the_examples_themselves_pass() -> None:
    for name, text in examples():
        assert probe(text) is None, name


def test_probe_catches_each_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    """The oracle is not vacuous: each kind of failure is told apart from a clean input."""
    good = "speaker a\nspeaker b\nwhen from a then b\n"
    assert probe(good) is None
    assert probe("speaker a\nwhen from\n") is None  # a syntax error is a diagnostic
    real = fuzz.format_source

    def bug(text: str, name: str) -> str:
        raise FormatterBug("lost a comment")

    calls = iter(range(100))
    monkeypatch.setattr(fuzz, "format_source", bug)
    assert (p := probe(good)) is not None and p.kind == "fmt-internal"
    monkeypatch.setattr(fuzz, "format_source", lambda t, n: real(t, n) + "#" * next(calls) + "\n")
    assert (p := probe(good)) is not None and p.kind == "fmt-unstable"
    monkeypatch.setattr(fuzz, "format_source", lambda t, n: "speaker a\nspeaker b\n")
    assert (p := probe(good)) is not None and p.kind == "fmt-meaning"
    monkeypatch.setattr(fuzz, "check_source", lambda s: 1 / 0)
    assert (p := probe(good)) is not None and p.kind == "crash" and "ZeroDivisionError" in p.detail


def test_mutations_are_seeded_and_varied() -> None:
    text = examples()[0][1]
    one = [mutate(text, random.Random(5)) for _ in range(3)]
    assert one == [mutate(text, random.Random(5)) for _ in range(3)]
    rng = random.Random(5)
    assert len({mutate(text, rng) for _ in range(50)}) > 40
