"""The manifest of real public inputs (issue 12): well formed, every failure class it
names has a reduction in the corpus, written for flowc, whose golden output is checked by
test_migrate.py, and every entry carries a review verdict. Its summary (exit codes and
verdicts per family) is recomputed from the entries; where the repository snapshots are on
this machine (real/run_real.py reads them) each input is migrated again and must exit as
recorded. The inputs themselves are not in the repository."""

from __future__ import annotations

import collections
import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType

import pytest

HERE = Path(__file__).resolve().parent
MANIFEST = json.loads((HERE / "real" / "manifest.json").read_text(encoding="utf-8"))
FAMILIES = {"classic", "group", "swarm", "agentchat", "agentchat-json", "studio"}
#: side-by-side review of the translation with its source: right with accurate findings;
#: something lost and reported (M001); wrong with no finding; or not reviewed
VERDICTS = ("correct", "loss reported", "wrong", "not reviewed")
MIRROR = Path("/work/.mirror")


def test_entries_are_complete() -> None:
    seen = set()
    for e in MANIFEST["inputs"]:
        assert re.fullmatch(r"[\w.-]+/[\w.-]+", e["repository"]), e
        assert re.fullmatch(r"[0-9a-f]{40}", e["commit"]), e
        assert e["path"] and e["licence"], e
        assert e["family"] in FAMILIES, e
        assert e["exit"] in (0, 1, 2), e
        assert e["verdict"] in VERDICTS, e
        assert all(
            re.fullmatch(r"[EM]\d{3}", code) and count > 0 for code, count in e["findings"].items()
        ), e
        assert e["exit"] != 1 or e["findings"].get("M001"), e  # exit 1: something left out
        assert set(e["classes"]) <= set(range(1, 11)) | {"nested", "exact"}, e
        if e["classes"]:
            assert e.get("reduction") and (HERE / "corpus" / e["reduction"]).exists(), e
        key = (e["repository"], e["path"])
        assert key not in seen, key
        seen.add(key)


def test_no_fetched_file_is_committed() -> None:
    assert sorted(p.name for p in (HERE / "real").iterdir() if p.name != "__pycache__") == [
        "manifest.json",
        "run_real.py",
    ]


def test_reductions_say_what_they_reduce() -> None:
    for name in {e["reduction"] for e in MANIFEST["inputs"] if e.get("reduction")}:
        text = (HERE / "corpus" / name).read_text(encoding="utf-8")
        assert "Reduction (written for flowc)" in text and "issue 12" in text, name


def _counts(key: str, entries: list[dict[str, object]]) -> dict[str, dict[str, int]]:
    out: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for e in entries:
        out[str(e["family"])][str(e[key])] += 1
    return {fam: dict(c) for fam, c in out.items()}


def _drop_zeros(table: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    return {fam: {k: v for k, v in row.items() if v} for fam, row in table.items()}


def test_every_entry_has_a_verdict_consistent_with_its_exit() -> None:
    for e in MANIFEST["inputs"]:
        assert e["verdict"] in VERDICTS, e
        if e["verdict"] == "correct":
            assert e["exit"] == 0, e  # nothing left out
        elif e["verdict"] == "loss reported":
            assert e["exit"] in (1, 2), e  # the loss is an M001 (or nothing was written)
        if e["verdict"] != "not reviewed":
            assert e.get("review") or e["verdict"] == "correct", e
    reviewed = [e for e in MANIFEST["inputs"] if e["verdict"] != "not reviewed"]
    assert len(reviewed) >= 30


def test_summary_counts_are_those_of_the_entries() -> None:
    summary = MANIFEST["summary"]
    assert _drop_zeros(summary["exits"]) == _drop_zeros(_counts("exit", MANIFEST["inputs"]))
    assert summary["verdicts"] == _counts("verdict", MANIFEST["inputs"])


def test_the_docs_show_the_corpus_figures_of_the_manifest() -> None:
    """docs/migrate.md's table of the public corpus is the one the manifest's records give."""
    docs = (HERE.parents[1] / "docs" / "migrate.md").read_text(encoding="utf-8")
    assert _runner().table(MANIFEST["inputs"]) in docs


def _runner() -> ModuleType:
    spec = importlib.util.spec_from_file_location("run_real", HERE / "real" / "run_real.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(
    not all(
        (MIRROR / r.replace("/", "+") / "repo").is_dir()
        for r in {e["repository"] for e in MANIFEST["inputs"]}
    ),
    reason="the repository snapshots are not on this machine (search tool `fetch`)",
)
def test_real_inputs_exit_as_recorded() -> None:
    """Migrate every real input again: its exit code and findings are those recorded."""
    run_real = _runner()
    got: list[dict[str, object]] = []
    for e in MANIFEST["inputs"]:
        code, found = run_real.outcome(MIRROR, e)
        got.append({**e, "exit": code, "findings": found})
    changed = [
        (e["repository"], e["path"], e["exit"], e["findings"], g["exit"], g["findings"])
        for e, g in zip(MANIFEST["inputs"], got, strict=True)
        if (e["exit"], e["findings"]) != (g["exit"], g["findings"])
    ]
    assert changed == []
    assert _drop_zeros(_counts("exit", got)) == _drop_zeros(MANIFEST["summary"]["exits"])
