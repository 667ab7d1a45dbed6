"""The language server explores a document's state space once for as long as edits keep
the flow's shape (`SpaceCache`, `System.shape`): its findings after such an edit are
exactly a fresh check's, and an edit that changes the shape is explored anew.

Differential: every flow of the repository and the golden test's 300 seeded flows, each
edited in ways that keep the shape (comment and blank lines above it, a scenario after
it, a reworded description, the file's statements reformatted) and in a way that does
not (a rule's target changed); each version is checked through one cache, in order, and
compared with a check of that version alone.
"""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

import attrs
import pytest

from flowc.compiler.analysis import CheckOptions, SpaceCache, check_compiled
from flowc.compiler.pipeline import compile_source
from flowc.diagnostics import Diagnostic
from flowc.dsl.formatter import format_source
from flowc.source import SourceFile
from tests.check.golden_flows import flow as golden_flow

ROOT = Path(__file__).resolve().parents[2]
FLOWS = sorted((ROOT / "examples").glob("*.flow"))


def _seen(d: Diagnostic) -> tuple[object, ...]:
    """Everything a finding shows: code, message, where, notes, help, fix."""
    return (d.code.id, d.message, d.span, d.notes, d.help, d.json_path, d.explanation)


def _check(text: str, spaces: SpaceCache | None, options: CheckOptions) -> list[tuple[object, ...]]:
    src = SourceFile("f.flow", text)
    compiled, diags = compile_source(src)
    return [
        _seen(d) for d in check_compiled(compiled, diags, options, filename=src.name, spaces=spaces)
    ]


def _kept_shape(text: str, rnd: random.Random) -> list[str]:
    """Versions of ``text`` with the same shape."""
    comments = "".join(f"# note {i}\n\n" for i in range(rnd.randint(1, 4)))
    versions = [comments + text, text + '\nscenario "added" {\n  expect turns 1\n}\n']
    described = re.sub(r'^(flow \S+) "[^"]*"', r'\1 "described anew"', text, count=1, flags=re.M)
    if described != text:
        versions.append(described)
    try:
        formatted = format_source(text)
    except Exception:  # a flow with an error does not format; its other versions do
        formatted = text
    if formatted != text:
        versions.append(formatted)
    return versions


def _changed_shape(text: str) -> str | None:
    """``text`` with the first `then SPEAKER` of a rule routed elsewhere (None: no such rule)."""
    match = re.search(r"^(when .* then )(\w+)(.*)$", text, flags=re.M)
    if match is None or match.group(2) in ("terminate", "stay", "next", "initiator"):
        return None
    return (
        text[: match.start()] + f"{match.group(1)}terminate{match.group(3)}" + text[match.end() :]
    )


def _differential(text: str, seed: int, options: CheckOptions) -> int:
    rnd = random.Random(seed)
    spaces = SpaceCache()
    first = _check(text, spaces, options)
    assert first == _check(text, None, options)
    versions = _kept_shape(text, rnd)
    reused = 0
    for version in versions:
        before = spaces.reused
        got = _check(version, spaces, options)
        assert got == _check(version, None, options), version
        reused += spaces.reused - before
    capped = re.sub(
        r"^max_turns (\d+)", lambda m: f"max_turns {int(m.group(1)) + 1}", text, flags=re.M
    )
    for changed in (_changed_shape(text), capped if capped != text else None):
        if changed is None:
            continue
        before = spaces.reused
        got = _check(changed, spaces, options)
        assert got == _check(changed, None, options), changed
        if compile_source(SourceFile("f.flow", changed))[0] is not None:
            assert spaces.reused == before, "a changed shape must be explored anew"
    return reused


@pytest.mark.parametrize("path", FLOWS, ids=[p.name for p in FLOWS])
def test_the_cache_gives_a_fresh_checks_findings_on_the_examples(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert _differential(text, 0, CheckOptions()) > 0  # the cache was used


@pytest.mark.parametrize("seed", range(0, 300, 5))
def test_the_cache_gives_a_fresh_checks_findings_on_seeded_flows(seed: int) -> None:
    _differential(golden_flow(seed), seed, CheckOptions())


def test_the_cache_past_the_bound() -> None:
    """A flow cut short at the bound: the same I301 and findings from the cached space,
    and a new bound is a new exploration."""
    from tests.check.test_partial import big_flow

    text = big_flow(40, 8)
    options = CheckOptions(max_states=2_000)
    assert _differential(text, 1, options) > 0
    spaces = SpaceCache()
    _check(text, spaces, options)
    _check(text, spaces, attrs.evolve(options, max_states=3_000))
    assert spaces.reused == 0


def test_a_property_added_gets_a_space_that_keeps_its_turns() -> None:
    """The checker of properties reads each node's turns, which only an exploration for a
    flow with properties keeps: adding a property (the same shape otherwise) explores
    again, and removing it keeps the space."""
    from flowc.compiler.analysis.system import system_of_flow

    text = "speaker user: human\nspeaker bot\nstart user\nmax_turns 4\nwhen from user then bot\n"
    spaces = SpaceCache()
    plain = spaces.space(system_of_flow(compile_source(SourceFile("f.flow", text))[0]), 100)
    assert plain.recorded is None
    with_property = text + "property p: never from bot and previous from bot\n"
    compiled = compile_source(SourceFile("f.flow", with_property))[0]
    watched = spaces.space(system_of_flow(compiled), 100)
    assert watched.recorded is not None and spaces.reused == 0
    again = spaces.space(system_of_flow(compile_source(SourceFile("f.flow", text))[0]), 100)
    assert again.graph is watched.graph and spaces.reused == 1


def test_what_the_checks_work_out_from_the_space_comes_with_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The checks' work on the state space alone (the first turn each dead rule could
    match and where it would fire in file order, the loops, the states that can end, who
    is scheduled and when, each speaker's first turn) is kept with the space: a version
    of the same shape works none of it out again, and a changed shape all of it."""
    from flowc.compiler.analysis.facts import Facts

    worked: list[str] = []
    shared = Facts.shared

    def counted(self: Facts, key: tuple[object, ...], work: Any) -> Any:
        def counting() -> Any:
            worked.append(str(key[0]))
            return work()

        return shared(self, key, counting)

    monkeypatch.setattr(Facts, "shared", counted)
    text = (
        "speaker a\nspeaker b\nspeaker c\nstart a\nmax_turns 6\n"
        "when from a then b\nwhen from a then c priority 5\nwhen from b then a\n"
    )
    spaces, options = SpaceCache(), CheckOptions()
    first = _check(text, spaces, options)
    every = sorted(set(worked))
    assert every == sorted(
        [
            "can end",
            "first matches",
            "first node by speaker",
            "loops",
            "traps",
        ]
    )
    worked.clear()
    assert _check("# why b\n" + text, spaces, options) != first  # the spans moved
    assert worked == [] and spaces.reused == 1
    _check(text.replace("then c priority 5", "then terminate priority 5"), spaces, options)
    assert sorted(set(worked)) == every
