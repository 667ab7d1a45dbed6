"""What the two differential tests share: the corpus and its scripts, running an old
framework's driver and ``flowc run --script --json`` on one script, and the comparison
of the two over every script of a case.

Each test says only what differs between the families: how its driver is asked (the plan)
and how each side's end is put in the flow's words.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Callable, Container
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
INEXACT = {"M001", "M002"}

#: a script: each speaker's turns in order, a turn being a text or a tool call (:func:`call`)
Script = dict[str, list[str | dict[str, str]]]
#: one script run on one side: who spoke and how the run ended
Side = Callable[[Script], Any]


def findings(py: Path) -> set[str]:
    data = json.loads(py.with_suffix(".expected.json").read_text(encoding="utf-8"))
    return {f["code"] for f in data["findings"]}


def _flow(py: Path) -> n.Flow:
    path = py.with_suffix(".flow")
    flow, diags = parse_source(SourceFile(str(path), path.read_text(encoding="utf-8")))
    assert not diags, diags
    return flow


def kickoff(py: Path) -> str | None:
    """The kickoff of ``py``'s flow (its header's text: the message the original file
    sends), so that the start speaker's script turns follow it as the original's do."""
    for decl in _flow(py).of_type(n.FlowDecl):
        return decl.description.value if decl.description is not None else None
    return None


def start_speaker(py: Path) -> str:
    """The ``start`` speaker of ``py``'s flow."""
    (start,) = _flow(py).of_type(n.StartDecl)
    return str(start.speaker.value)


def _speakers(flow: n.Flow) -> list[str]:
    names = [s.name.value for s in flow.of_type(n.SpeakerDecl)]
    for group in flow.of_type(n.SpeakersDecl):
        names.extend(s.name.value for s in group.speakers)
    return list(dict.fromkeys(names))


def _max_turns(flow: n.Flow) -> int:
    for item in flow.of_type(n.MaxTurnsDecl):
        return int(item.value.value)
    return 20


def _tools(flow: n.Flow) -> dict[str, list[str]]:
    """The tools each model speaker can call in a script: its declared tools with at most
    one alternative (a tool with several lets its own code choose the outcome, which a
    script cannot tell the original)."""
    decls = list(flow.of_type(n.SpeakerDecl))
    for group in flow.of_type(n.SpeakersDecl):
        decls.extend(group.speakers)
    out: dict[str, list[str]] = {}
    for s in decls:
        names = [t.name.value for t in s.tools if len(t.alternatives) <= 1]
        if names and not s.human:
            out.setdefault(s.name.value, []).extend(names)
    return out


def selectors(py: Path) -> dict[str, dict[str, str]]:
    """The flow's selector speakers (the translation of a model, or of classic ``manual``'s
    person, that picks the next speaker: a speaker whose own turn, when it calls no transfer
    tool or types no answer of its rules, ends the run as ``"no_speaker_selected"``), each
    with its transfer tools (a person: its answers, :func:`_typed`) and the speaker each
    routes to."""
    flow = _flow(py)
    rules = list(flow.of_type(n.Rule))
    names = [
        s.value
        for r in rules
        if isinstance(r.cond, n.FromCond)
        and isinstance(r.target, n.TerminateTarget)
        and r.target.reason is not None
        and r.target.reason.value == "no_speaker_selected"
        for s in r.cond.speakers
    ]
    routes = {
        r.cond.tool.value: r.target.speaker.value
        for r in rules
        if isinstance(r.cond, n.ToolCond) and isinstance(r.target, n.SpeakerTarget)
    }
    tools = _tools(flow)
    typed = _typed(flow)
    return {
        name: typed[name]
        if name in typed
        else {t: routes[t] for t in tools.get(name, []) if t in routes}
        for name in names
    }


def typed_selectors(py: Path) -> dict[str, dict[str, str]]:
    """The person selectors of ``py``'s flow (:func:`_typed`)."""
    return _typed(_flow(py))


def _typed(flow: n.Flow) -> dict[str, dict[str, str]]:
    """The flow's person selectors (classic ``manual`` selection: a person types the next
    speaker), each with the answer that picks each speaker: the number in the list classic
    prints (classic's console reads only the number). The rules read ``when from SEL and
    text_matches(pattern = "\\A\\s*\\+?(?:0_?)*K\\s*\\Z") then NAME``, the digits of ``K``
    joined by ``_?``."""
    out: dict[str, dict[str, str]] = {}
    for r in flow.of_type(n.Rule):
        if not (isinstance(r.cond, n.AndCond) and isinstance(r.target, n.SpeakerTarget)):
            continue
        who, said = r.cond.items[0], r.cond.items[-1]
        if not (
            len(r.cond.items) == 2
            and isinstance(who, n.FromCond)
            and isinstance(said, n.CallCond)
            and said.name.value == "text_matches"
        ):
            continue
        pattern = str(said.args[0].value.value)
        m = re.fullmatch(r"\\A\\s\*\\\+\?\(\?:0_\?\)\*([0-9_?]+)\\s\*\\Z", pattern)
        if m is None:
            continue
        answer = m.group(1).replace("_?", "")
        for sel in who.speakers:
            out.setdefault(sel.value, {})[answer] = r.target.speaker.value
    return out


def selector_after(py: Path) -> dict[str, str]:
    """Which selector speaker of the flow chooses after each speaker (``""``: after any
    other), as its rules send the turns: ``when from A, B then SEL``, ``otherwise SEL``."""
    flow = _flow(py)
    chosen = selectors(py)
    out: dict[str, str] = {}
    for r in flow.of_type(n.Rule):
        if (
            isinstance(r.cond, n.FromCond)
            and isinstance(r.target, n.SpeakerTarget)
            and r.target.speaker.value in chosen
        ):
            out.update({s.value: r.target.speaker.value for s in r.cond.speakers})
    for o in flow.of_type(n.Otherwise):
        if isinstance(o.target, n.SpeakerTarget) and o.target.speaker.value in chosen:
            out[""] = o.target.speaker.value
    if len(chosen) == 1:
        out.setdefault("", next(iter(chosen)))
    return out


def choices(py: Path, script: Script) -> dict[str, list[str]]:
    """What the original's selector model replies, per selector speaker of the flow, for
    the same decisions as ``script``: the name of the speaker its transfer call routes to,
    or its text (which names nobody) when the turn calls none."""
    out = {}
    for name, routes in selectors(py).items():
        out[name] = [
            t if isinstance(t, str) else routes.get(t["tool"], t["tool"])
            for t in script.get(name, [])
        ]
    return out


def call(tool: str) -> dict[str, str]:
    """A scripted turn that calls ``tool`` (with no arguments written: each driver fills
    in what the tool requires); its text is the flow's only, as the original's message is
    the one its framework makes of the call."""
    return {"tool": tool, "say": f"(calls {tool})"}


def scripts(py: Path) -> list[tuple[str, Script]]:
    """(title, turns per speaker) for every script of the case; the kickoff is the file's.

    A turn is a text or a tool call (:func:`call`). Besides the texts-only script, one where
    each speaker's first turn (a selector speaker's excepted) says ``TERMINATE`` (classic's
    default termination text), and one per scenario (its texts and its calls), a case whose speakers declare tools gets one
    script per tool position ``j``: each such speaker's K-th turn calls its tool
    ``j + K - 1`` (counting round its tools), so every tool is called first once and the
    routes after it are followed; then it says texts. A selector speaker (:func:`selectors`)
    goes on choosing, its transfer tools (a person: its answers) in turn, where its script
    ends: the original's
    selector model is fed the same choices (:func:`choices`), so both sides run on.
    """
    flow = _flow(py)
    names = _speakers(flow)
    tools = _tools(flow)
    length = _max_turns(flow) + 2
    out: list[tuple[str, Script]] = []
    generic: Script = {name: [] for name in names}
    out.append(("turn K of NAME", generic))
    # classic's default termination text (the manager's, every agent's own), said by whoever
    # speaks after the kickoff: a translation must end there exactly when the original does
    # (selector speakers choose: they stand for no speaker of the original's chat)
    chooses = selectors(py)
    out.append(
        (
            "every speaker says TERMINATE",
            {name: [] if name in chooses else ["TERMINATE"] for name in names},
        )
    )
    for sc in flow.of_type(n.Scenario):
        replies: Script = {name: [] for name in names}
        turns = [t for t in sc.items if isinstance(t, (n.SayTurn, n.CallTurn))]
        for turn in turns[1:]:  # the first is the kickoff, which the file itself sends
            said: str | dict[str, str]
            if isinstance(turn, n.SayTurn):
                said = turn.text.value
            else:
                said = call(turn.tool.value)
                if turn.text is not None:
                    said["say"] = turn.text.value
            replies.setdefault(turn.speaker.value, []).append(said)
        out.append((f"scenario {sc.title.value}", replies))
    for j in range(max((len(v) for v in tools.values()), default=0)):
        calls: Script = {name: [] for name in names}
        for name, own in tools.items():
            calls[name] = [call(own[(j + k) % len(own)]) for k in range(len(own))]
        out.append((f"tools from position {j + 1}", calls))
    typed = _typed(flow)
    for _, replies in out:
        for name, texts in replies.items():
            if chooses.get(name):  # a selector speaker goes on choosing, in turn
                own = list(chooses[name])
                texts.extend(
                    # (a person selector types the answer; a model calls the transfer tool)
                    own[k % len(own)] if name in typed else call(own[k % len(own)])
                    for k in range(len(texts), length)
                )
            texts.extend(f"turn {k} of {name}" for k in range(len(texts) + 1, length + 1))
    return out


def spoken(py: Path, run: Any) -> list[str]:
    """The speakers of a ``flowc run --json`` run's turns, its selector speakers' left out:
    they stand for the original's selector model, whose answers are no messages of its
    chat (that their turns count toward ``max_turns`` is a finding of its own)."""
    chooses = selectors(py)
    return [t["speaker"] for t in run["turns"] if t["speaker"] not in chooses]


def run_driver(python: Path, driver: Path, plan: dict[str, Any], tmp: Path) -> Any:
    """What ``driver`` printed on its ``@@RESULT@@`` line, run by the old framework's
    ``python`` on ``plan`` (from the corpus folder, as the files expect)."""
    path = tmp / "plan.json"
    path.write_text(json.dumps(plan), encoding="utf-8")
    done = subprocess.run(
        [str(python), str(driver), str(path)],
        capture_output=True,
        text=True,
        cwd=str(CORPUS),
        timeout=300,
    )
    lines = [x for x in done.stdout.splitlines() if x.startswith("@@RESULT@@")]
    assert done.returncode == 0 and lines, done.stdout[-2000:] + done.stderr[-4000:]
    return json.loads(lines[-1][len("@@RESULT@@") :])


def run_flow(
    flow: Path, script: dict[str, Any], tmp: Path, capsys: pytest.CaptureFixture[str]
) -> Any:
    """The run of ``flowc run FLOW --script --json`` on ``script`` (the file's contents),
    as the JSON it prints."""
    path = tmp / "script.json"
    path.write_text(json.dumps(script), encoding="utf-8")
    capsys.readouterr()
    code = main(["run", str(flow), "--script", str(path), "--json", "--db", ":memory:"])
    out, err = capsys.readouterr()
    assert code in (0, 1), out + err
    return json.loads(out)


def compare(
    py: Path, original: tuple[str, Side], translated: Side, only: Container[str] | None = None
) -> list[str]:
    """Every script of ``py`` (those titled in ``only``, when given) run on both sides
    (``original`` named by its label, e.g. ``ag2 0.9.10``): the runs that differ, each
    told with both sides' runs."""
    label, run_original = original
    width = max(len(label), len("flowc run")) + 1
    mismatches = []
    ran: set[str] = set()
    for title, replies in scripts(py):
        if only is not None and title not in only:
            continue
        ran.add(title)
        real = run_original(replies)
        got = translated(replies)
        if real != got:
            mismatches.append(
                f"{title}:\n  {(label + ':').ljust(width)} {real}"
                f"\n  {'flowc run:'.ljust(width)} {got}"
            )
    if only is not None and isinstance(only, (set, frozenset, list, tuple)):
        missing = set(only) - ran
        assert not missing, f"no script of {py.name} is titled {sorted(missing)}"
    return mismatches


def assert_agree(family: str, py: Path, mismatches: Callable[[], list[str]]) -> None:
    """The test of one case: skipped when its findings say the translation is not exact,
    else every script must run the same on both sides (``mismatches`` compares them)."""
    inexact = findings(py) & INEXACT
    if inexact:
        pytest.skip(f"the findings say the translation is not exact ({', '.join(sorted(inexact))})")
    started = time.monotonic()
    found = mismatches()
    TIMINGS[f"{family} {py.stem}"] = time.monotonic() - started
    assert not found, f"{py.name}: the translation does not run as the original\n" + "\n".join(
        found
    )
