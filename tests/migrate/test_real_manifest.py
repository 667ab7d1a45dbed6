"""The manifest of real public inputs (issue 12): well formed, and every failure class it
names has a reduction in the corpus, written for flowc, whose golden output is checked by
test_migrate.py. The inputs themselves are not in the repository (see real/run_real.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
MANIFEST = json.loads((HERE / "real" / "manifest.json").read_text(encoding="utf-8"))
FAMILIES = {"classic", "group", "swarm", "agentchat", "agentchat-json", "studio"}
VERDICTS = {None, "correct", "loss reported", "wrong"}


def test_entries_are_complete() -> None:
    seen = set()
    for e in MANIFEST["inputs"]:
        assert re.fullmatch(r"[\w.-]+/[\w.-]+", e["repository"]), e
        assert re.fullmatch(r"[0-9a-f]{40}", e["commit"]), e
        assert e["path"] and e["licence"], e
        assert e["family"] in FAMILIES, e
        assert e["exit"] in (0, 1, 2), e
        assert e["verdict"] in VERDICTS, e
        assert set(e["classes"]) <= set(range(1, 11)) | {"nested", "exact"}, e
        if e["classes"]:
            assert e.get("reduction") and (HERE / "corpus" / e["reduction"]).exists(), e
        key = (e["repository"], e["path"])
        assert key not in seen, key
        seen.add(key)


def test_no_fetched_file_is_committed() -> None:
    assert sorted(p.name for p in (HERE / "real").iterdir() if p.name != "__pycache__") == [
        "manifest.json", "run_real.py"]


def test_reductions_say_what_they_reduce() -> None:
    for name in {e["reduction"] for e in MANIFEST["inputs"] if e.get("reduction")}:
        text = (HERE / "corpus" / name).read_text(encoding="utf-8")
        assert "Reduction (written for flowc)" in text and "issue 12" in text, name
