"""Differential check of classic AG2 GroupChat translations: run both sides, compare.

For every classic GroupChat input of the corpus with a translation (``corpus/NAME.py``
and its golden ``NAME.flow``), and every AG2 group API pattern (ag2 runs those on a classic
GroupChat too), each script derived from the case is run twice:

- the original file under the real ``ag2==0.9.10`` (a throw-away venv, see conftest.py),
  by ``classic_driver.py``, with every agent's model reply and human answer taken from
  the script;
- the golden flow under ``flowc run --script --json`` with the same script.

Who speaks, turn by turn, and how the run ends must be the same. Neither side is written
down: both are computed. The scripts are derived from the case: one where each speaker
says ``turn K of NAME`` (K counts that speaker's turns), and one per scenario of the flow,
where each speaker says the texts its scenario turns give (so termination messages and
text-driven selection are exercised), then ``turn K of NAME``.

A translation whose findings report nothing lost or different (no M001 / M002) must match;
the others are listed as not exact and skipped with their findings.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from flowc.cli import main
from flowc.dsl import nodes as n
from flowc.dsl.parser import parse_source
from flowc.source import SourceFile

from .conftest import TIMINGS

HERE = Path(__file__).resolve().parent
CORPUS = HERE.parent / "corpus"
DRIVER = HERE / "classic_driver.py"
INEXACT = {"M001", "M002"}


def _classic_cases() -> list[Path]:
    out = []
    for py in sorted(CORPUS.glob("*.py")):
        text = py.read_text(encoding="utf-8")
        if "autogen_agentchat" in text:
            continue  # AgentChat: another family
        # classic GroupChat, and the AG2 group API's patterns (run on a classic GroupChat)
        if not re.search(r"(?<![A-Za-z_])GroupChat\(|Pattern\(", text):
            continue
        if py.with_suffix(".flow").exists():
            out.append(py)
    return out


CASES = _classic_cases()


def _findings(py: Path) -> set[str]:
    data = json.loads(py.with_suffix(".expected.json").read_text(encoding="utf-8"))
    return {f["code"] for f in data["findings"]}


def _flow(py: Path) -> n.Flow:
    path = py.with_suffix(".flow")
    flow, diags = parse_source(SourceFile(str(path), path.read_text(encoding="utf-8")))
    assert not diags, diags
    return flow


def _speakers(flow: n.Flow) -> list[str]:
    names = [s.name.value for s in flow.of_type(n.SpeakerDecl)]
    for group in flow.of_type(n.SpeakersDecl):
        names.extend(s.name.value for s in group.speakers)
    return list(dict.fromkeys(names))


def _max_turns(flow: n.Flow) -> int:
    for item in flow.of_type(n.MaxTurnsDecl):
        return int(item.value.value)
    return 20


def scripts(py: Path) -> list[tuple[str, dict[str, list[str]]]]:
    """(title, replies per speaker) for every script of the case; the kickoff is the file's."""
    flow = _flow(py)
    names = _speakers(flow)
    length = _max_turns(flow) + 2
    out: list[tuple[str, dict[str, list[str]]]] = []
    generic = {name: [] for name in names}
    out.append(("turn K of NAME", generic))
    for sc in flow.of_type(n.Scenario):
        replies: dict[str, list[str]] = {name: [] for name in names}
        turns = [t for t in sc.items if isinstance(t, n.SayTurn)]
        for turn in turns[1:]:  # the first is the kickoff, which the file itself sends
            replies.setdefault(turn.speaker.value, []).append(turn.text.value)
        out.append((f"scenario {sc.title.value}", replies))
    for _, replies in out:
        for name, texts in replies.items():
            texts.extend(f"turn {k} of {name}" for k in range(len(texts) + 1, length + 1))
    return out


def run_classic(python: Path, py: Path, replies: dict[str, list[str]], tmp: Path) -> Any:
    plan = tmp / "plan.json"
    plan.write_text(json.dumps({"file": str(py), "replies": replies}), encoding="utf-8")
    done = subprocess.run(
        [str(python), str(DRIVER), str(plan)],
        capture_output=True,
        text=True,
        cwd=str(CORPUS),
        timeout=300,
    )
    lines = [x for x in done.stdout.splitlines() if x.startswith("@@RESULT@@")]
    assert done.returncode == 0 and lines, done.stdout[-2000:] + done.stderr[-4000:]
    return json.loads(lines[-1][len("@@RESULT@@") :])


def run_flow(
    flow: Path, replies: dict[str, list[str]], tmp: Path, capsys: pytest.CaptureFixture[str]
) -> Any:
    script = tmp / "script.json"
    script.write_text(json.dumps({"script": replies}), encoding="utf-8")
    capsys.readouterr()
    code = main(["run", str(flow), "--script", str(script), "--json", "--db", ":memory:"])
    out, err = capsys.readouterr()
    assert code in (0, 1), out + err
    run = json.loads(out)
    return {
        "speakers": [t["speaker"] for t in run["turns"]],
        "end": run.get("close_reason") or f"stalled: {run.get('stalled_on')}",
    }


def compare(
    python: Path, py: Path, flow: Path, tmp: Path, capsys: pytest.CaptureFixture[str]
) -> list[str]:
    """Every script of ``py`` run under ag2 and under ``flow``: the runs that differ."""
    mismatches = []
    for title, replies in scripts(py):
        classic = run_classic(python, py, replies, tmp)
        translated = run_flow(flow, replies, tmp, capsys)
        if classic != translated:
            mismatches.append(f"{title}:\n  ag2 0.9.10: {classic}\n  flowc run:  {translated}")
    return mismatches


@pytest.mark.parametrize("py", CASES, ids=[p.stem for p in CASES])
def test_classic_and_translation_agree(
    py: Path,
    classic_python: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    inexact = _findings(py) & INEXACT
    if inexact:
        pytest.skip(f"the findings say the translation is not exact ({', '.join(sorted(inexact))})")
    started = time.monotonic()
    mismatches = compare(classic_python, py, py.with_suffix(".flow"), tmp_path, capsys)
    TIMINGS[f"classic {py.stem}"] = time.monotonic() - started
    assert not mismatches, f"{py.name}: the translation does not run as the original\n" + "\n".join(
        mismatches
    )


def test_the_harness_covers_the_exact_classic_cases() -> None:
    exact = [p for p in CASES if not _findings(p) & INEXACT]
    assert len(exact) >= 6, [p.name for p in exact]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("when from critic then editor", "when from critic then writer"),  # who speaks
        ("max_turns 7", "max_turns 8"),  # one turn more
        ('"\\\\ATERMINATE\\\\Z"', '"\\\\ADONE\\\\Z"'),  # TERMINATE no longer ends it
    ],
)
def test_the_harness_reports_a_perturbed_translation(
    old: str,
    new: str,
    classic_python: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """One rule of a translation that matches, changed: the harness must see it."""
    py = CORPUS / "round_robin_blog.py"
    text = py.with_suffix(".flow").read_text(encoding="utf-8")
    assert old in text
    flow = tmp_path / "perturbed.flow"
    flow.write_text(text.replace(old, new), encoding="utf-8")
    mismatches = compare(classic_python, py, flow, tmp_path, capsys)
    assert mismatches, f"changing {old!r} to {new!r} went unnoticed"
