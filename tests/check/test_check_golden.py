"""``flowc check``'s output, byte for byte, on generated flows: text, JSON and SARIF.

The digests in ``golden/check_outputs.json`` were recorded from the checker before
it was made faster (main at d32a676); a change to the analysis that is meant to
change nothing visible must keep every one of them. The inputs are generated here:
the seeded flows of :mod:`tests.check.golden_flows` (also as compiled JSON graphs,
the knobs dict and the bare graph), and the benchmark's 1,000-rule mix.

A change that is *meant* to change what ``check`` prints re-records the digests, as
every golden file is rewritten (``.venv/bin/pytest tests/check/test_check_golden.py
--update-golden``), and says so in its commit. Beside its digests each input keeps its
findings as ``CODE@line`` (``findings``), so that such a commit's diff of the golden file,
and a failure here, say which findings came or went (a digest alone says only that some
byte changed; a message worded anew keeps the list and changes the digests).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from flowc.cli import main
from flowc.compiler.registry import default_registry
from tests.check.golden_flows import flow

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).parent / "golden" / "check_outputs.json"
FORMATS = ("text", "json", "sarif")
SEEDS = range(100)
GRAPH_SEEDS = range(0, 100, 5)
BENCH_SIZES = (25, 400, 1000)


def _bench(rules: int) -> str:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from bench_compile import generate
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return str(generate(rules))


def inputs() -> Iterator[str]:
    """The names of every golden input (see :func:`write_input`)."""
    yield from (f"seed{s}.flow" for s in SEEDS)
    for s in GRAPH_SEEDS:
        yield f"seed{s}.knobs.json"
        yield f"seed{s}.graph.json"
    yield from (f"bench{n}.flow" for n in BENCH_SIZES)


def _run(argv: list[str]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        main(argv)
    return out.getvalue()


def write_input(name: str, folder: Path) -> str:
    """Write the input ``name`` into ``folder`` (the current directory); returns its file name."""
    stem = name.split(".")[0]
    if stem.startswith("bench"):
        (folder / name).write_text(_bench(int(stem[len("bench") :])), encoding="utf-8")
        return name
    text = flow(int(stem[len("seed") :]))
    if name.endswith(".flow"):
        (folder / name).write_text(text, encoding="utf-8")
        return name
    source = folder / f"{stem}.src.flow"
    source.write_text(text, encoding="utf-8")
    graph = ["--graph"] if name.endswith(".graph.json") else []
    (folder / name).write_text(_run(["compile", *graph, source.name]), encoding="utf-8")
    return name


def outputs(name: str) -> dict[str, str]:
    """sha256 of ``flowc check --format F name`` for each format (run in the input's
    folder), and ``findings``: each finding of the JSON report as ``CODE@line``, in its
    order."""
    printed = {fmt: _run(["check", "--format", fmt, name]) for fmt in FORMATS}
    got = {fmt: hashlib.sha256(text.encode()).hexdigest() for fmt, text in printed.items()}
    got["findings"] = " ".join(
        f"{d['code']}@{(d.get('location') or {}).get('row', 0)}"
        for d in json.loads(printed["json"])
    )
    return got


def _changed(recorded: str, got: str) -> str:
    """The findings that came and went, as a failure's message says them."""
    before, after = Counter(recorded.split()), Counter(got.split())
    gone = sorted((before - after).elements())  # (a finding reported once less counts)
    came = sorted((after - before).elements())
    if not gone and not came:
        return "the same findings (CODE@line), worded or ordered otherwise"
    return f"findings gone: {' '.join(gone) or 'none'}; new: {' '.join(came) or 'none'}"


def _recorded() -> dict[str, dict[str, str]]:
    return dict(json.loads(GOLDEN.read_text(encoding="utf-8")))


@pytest.fixture(autouse=True)
def no_registered_customs(monkeypatch: pytest.MonkeyPatch) -> None:
    """The digests were recorded with no custom condition or target registered (a JSON
    graph's custom names are then E103); other test modules may register some on the
    process-wide registry when they are imported."""
    monkeypatch.setattr(default_registry(), "_conditions", {})
    monkeypatch.setattr(default_registry(), "_targets", {})


@pytest.mark.parametrize("name", list(inputs()))
def test_check_output_is_unchanged(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, update_golden: bool
) -> None:
    monkeypatch.chdir(tmp_path)
    write_input(name, tmp_path)
    got = outputs(name)
    if update_golden:
        recorded = _recorded() if GOLDEN.exists() else {}
        recorded[name] = got
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        return
    recorded = _recorded()[name]
    assert got == recorded, f"`flowc check` prints something else for {name}: " + _changed(
        recorded.get("findings", ""), got["findings"]
    )


def test_the_golden_inputs_are_varied(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The seeds reach every flow-analysis code, so that the digests cover all of them."""
    monkeypatch.chdir(tmp_path)
    codes: set[str] = set()
    for s in SEEDS:
        name = write_input(f"seed{s}.flow", tmp_path)
        codes |= {d["code"] for d in json.loads(_run(["check", "--format", "json", name]))}
    wanted = {
        "W201",
        "W202",
        "W203",
        "W204",
        "W205",
        "W207",
        "W208",
        "W209",
        "W210",
        "W212",
        "W206",
        "W213",
        "W215",
        "X001",
        "E101",
        "I302",
    }
    assert wanted <= codes, sorted(wanted - codes)


def test_a_failure_names_the_findings_that_came_and_went() -> None:
    assert _changed("W201@3 W203@5 W203@5", "W203@5 W205@9") == (
        "findings gone: W201@3 W203@5; new: W205@9"  # one W203@5 of two is gone
    )
    assert _changed("W201@0 W203@0", "W203@0 W201@0").startswith("the same findings")
