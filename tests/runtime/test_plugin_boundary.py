"""A plugin's failure is told from a bug in flowc by where it happened, not by reading
the traceback: what a custom condition's ``evaluate`` or a custom target's ``resolve``
raises, or answers that flowc cannot use, is the plugin's (said naming it); anything else
raised while a turn is routed is flowc's own. Live, the turn is refused with the one or
the other; on replay, a plugin that fails now stops the re-fold, said as the plugin
failing (not as a broken WAL), and a bug in flowc is an internal error."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

from flowc.cli import main
from flowc.runtime import vocabulary
from flowc.runtime.adapters import workflow as workflow_mod
from flowc.runtime.adapters.workflow import WorkflowAdapter
from flowc.runtime.hub import Hub
from flowc.runtime.stores import open_store
from tests.plugin_registry import remember_plugins

FLOW = """\
speaker user: human
speaker writer
speaker reviewer
condition draft_is_long(min: int = 10)
target pick_reviewer() -> writer | reviewer
max_turns 6
when from writer and draft_is_long() then pick_reviewer()
when from user then writer
when from reviewer then terminate "reviewed"
"""

PLUGIN = """\
from typing import Any, ClassVar

import attrs

import flowc
from flowc.runtime import TransitionDecision


@flowc.register_condition
@attrs.frozen
class LongText:
    name: ClassVar[str] = "draft_is_long"
    min: int = 10

    def evaluate(self, state: Any, envelope: Any) -> bool:
        return CONDITION


@flowc.register_target
@attrs.frozen
class Pick:
    name: ClassVar[str] = "pick_reviewer"

    def resolve(self, state: Any, envelope: Any) -> Any:
        return TARGET
"""

SCRIPT = {"kickoff": "hi", "script": {"writer": ["a long enough draft"], "reviewer": ["ok"]}}

RUN = ["run", "review.flow", "--script", "script.json", "--db", "runs.db"]


def plugin(condition: str = "True", target: str = 'TransitionDecision("reviewer")') -> str:
    """The plugin module, its condition answering ``condition`` and its target ``target``
    (Python expressions, on line 16 and line 25 of the file)."""
    return PLUGIN.replace("CONDITION", condition).replace("TARGET", target)


@pytest.fixture
def forget_plugins() -> Iterator[Callable[[], None]]:
    """Forgets the custom classes and plugin files loaded since the test began (called
    by the test to load a changed plugin file; and at its end)."""
    forget = remember_plugins()
    yield forget
    forget()


@pytest.fixture
def project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forget_plugins: Callable[[], None]
) -> Path:
    (tmp_path / "review.flow").write_text(FLOW)
    (tmp_path / "routing.py").write_text(plugin())
    (tmp_path / "script.json").write_text(json.dumps(SCRIPT))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("FLOWC_TRACEBACK", raising=False)
    return tmp_path


def flowc_bug(method: str, sender: str = "writer") -> Callable[..., Any]:
    """A stand-in for the adapter's ``method`` with a bug on ``sender``'s turns: its code
    is flowc's own (its frames are in flowc/runtime/adapters/workflow.py) and it fails in
    an installed library's frame (json's), as flowc calling a library wrongly would."""
    code = compile(
        "def bug(self, *args):\n"
        "    if args[-2].sender_id == sender:\n"
        "        json.loads('{')\n"
        "    return method(self, *args)\n",
        workflow_mod.__file__,
        "exec",
    )
    scope: dict[str, Any] = {"json": json, "method": getattr(WorkflowAdapter, method)}
    scope["sender"] = sender
    exec(code, scope)
    return scope["bug"]  # type: ignore[no-any-return]


def refusal(out: str) -> str:
    """The transcript's line of the writer's refused turn."""
    [line] = [ln for ln in out.splitlines() if ln.startswith("  turn 2 failed (writer): ")]
    return line.removeprefix("  turn 2 failed (writer): ")


# ── live: the turn is refused, saying whose code failed ──────────────────────────


def test_a_target_answering_a_list_is_the_plugins_failure(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """flowc's code fails on what the plugin returned (a list is no speaker's id): that
    is the plugin's failure, named, not the adapter's."""
    (project / "routing.py").write_text(plugin(target='["reviewer"]'))
    assert main([*RUN, "--plugin", "routing.py"]) == 1
    out, err = capsys.readouterr()
    assert refusal(out) == (
        "refused: routing the turn failed in a plugin's code: target `pick_reviewer`: chose "
        "['reviewer'], which is neither an agent's id (a string) nor None"
    ), out
    assert "adapter failed" not in out + err and "Traceback" not in out + err


def test_a_target_whose_answer_fails_when_read_is_the_plugins_failure(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Reading the decision's ``next_speaker`` runs the plugin's object: what it raises
    is the plugin's, with the plugin's file and line."""
    (project / "routing.py").write_text(
        plugin(target="type('D', (), {'next_speaker': property(lambda d: 1 / 0)})()")
    )
    assert main([*RUN, "--plugin", "routing.py"]) == 1
    assert refusal(capsys.readouterr().out) == (
        "refused: routing the turn failed in a plugin's code: target `pick_reviewer`: "
        "ZeroDivisionError: division by zero (routing.py:25, in <lambda>)"
    )


def test_a_condition_raising_is_the_plugins_failure_named(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "routing.py").write_text(plugin(condition="int('many')"))
    assert main([*RUN, "--plugin", "routing.py"]) == 1
    out = capsys.readouterr().out
    assert refusal(out) == (
        "refused: routing the turn failed in a plugin's code: condition `draft_is_long`: "
        "ValueError: invalid literal for int() with base 10: 'many' (routing.py:16, in "
        "evaluate)"
    )
    assert main(["log", "last", "--db", "runs.db", "--json", "--plugin", "routing.py"]) == 0
    [failure] = json.loads(capsys.readouterr().out)["failures"]
    assert failure["where"] == "routing.py:16"  # the plugin's line, through the boundary


def test_a_condition_whose_answer_has_no_truth_value_is_the_plugins_failure(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Taking the answer's truth runs the plugin's object (its ``__bool__``)."""
    answer = "type('A', (), {'__bool__': lambda a: {}['truth']})()"
    (project / "routing.py").write_text(plugin(condition=answer))
    assert main([*RUN, "--plugin", "routing.py"]) == 1
    assert refusal(capsys.readouterr().out) == (
        "refused: routing the turn failed in a plugin's code: condition `draft_is_long`: "
        "KeyError: 'truth' (routing.py:16, in <lambda>)"
    )


def test_a_bug_in_flowc_failing_in_a_library_is_the_adapters_failure(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The deepest frame is a library's (json's) and no plugin ran: flowc's bug, said as
    the adapter failing, not blamed on a plugin."""
    monkeypatch.setattr(WorkflowAdapter, "fold", flowc_bug("fold"))
    assert main([*RUN, "--plugin", "routing.py"]) == 1
    said = refusal(capsys.readouterr().out)
    assert said.startswith(
        "refused: the workflow adapter failed on this envelope (JSONDecodeError: "
    ), said
    assert "plugin" not in said


def test_a_bug_in_flowc_is_recorded_where_flowcs_code_failed_not_in_the_library(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The failure's "where" (and the place its error names) is the deepest frame of
    flowc's own code (the stand-in's line 3, in flowc/runtime/adapters/workflow.py),
    where a maintainer must look; it was json's decoder, the deepest frame outside
    flowc."""
    monkeypatch.setattr(WorkflowAdapter, "fold", flowc_bug("fold"))
    assert main([*RUN, "--plugin", "routing.py"]) == 1
    capsys.readouterr()
    assert main(["log", "last", "--db", "runs.db", "--json", "--plugin", "routing.py"]) == 0
    [failure] = json.loads(capsys.readouterr().out)["failures"]
    assert failure["where"] == f"{workflow_mod.__file__}:3", failure
    assert failure["error"].startswith(
        "refused: the workflow adapter failed on this envelope (JSONDecodeError: "
    )
    assert failure["error"].endswith(f"({workflow_mod.__file__}:3, in bug)"), failure


def test_a_target_choosing_no_participant_is_the_plugins_failure(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The plugin's choice, named as the plugin's (flowc's own vocabulary choosing so is
    refused as a hand-off to no participant, as a stored one is)."""
    (project / "routing.py").write_text(plugin(target='"nobody"'))
    assert main([*RUN, "--plugin", "routing.py", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["error"] == (
        "refused: routing the turn failed in a plugin's code: target `pick_reviewer`: chose "
        "'nobody', which is not a participant"
    )


def test_a_decisions_close_reason_failing_when_read_is_the_plugins_failure(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Reading the decision's ``close_reason`` runs the plugin's object too."""
    decision = "type('D', (), {'next_speaker': 'reviewer', 'close_reason': property(lambda d: {}['why'])})()"
    (project / "routing.py").write_text(plugin(target=decision))
    assert main([*RUN, "--plugin", "routing.py"]) == 1
    assert refusal(capsys.readouterr().out) == (
        "refused: routing the turn failed in a plugin's code: target `pick_reviewer`: "
        "KeyError: 'why' (routing.py:25, in <lambda>)"
    )


VOCABULARY_FLOW = """\
speaker user: human
speaker writer
speaker reviewer
condition text_contains(text: string)
target random_agent(agent_ids: list[speaker], allow_repeat: bool) -> writer | reviewer
max_turns 6
when from writer and text_contains(text = "draft") then random_agent(agent_ids = ["reviewer"], allow_repeat = true)
when from user then writer
when from reviewer then terminate "reviewed"
"""


@pytest.mark.parametrize(
    ("cls", "method"), [(vocabulary.TextContains, "evaluate"), (vocabulary.RandomAgent, "resolve")]
)
def test_a_bug_in_flowcs_own_vocabulary_is_the_adapters_failure(
    project: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    cls: type[Any],
    method: str,
) -> None:
    """``text_contains`` and ``random_agent`` are registered as custom names, but their
    code is flowc's: what they raise is not blamed on a plugin (none is loaded)."""
    (project / "review.flow").write_text(VOCABULARY_FLOW)
    assert main(RUN) == 0  # the vocabulary routes the run
    capsys.readouterr()

    def bug(self: Any, state: Any, envelope: Any) -> Any:
        raise ZeroDivisionError("a bug in flowc's vocabulary")

    monkeypatch.setattr(cls, method, bug)
    assert main(RUN) == 1
    said = refusal(capsys.readouterr().out)
    assert said.startswith(
        "refused: the workflow adapter failed on this envelope (ZeroDivisionError: a bug in "
        "flowc's vocabulary)"
    ), said
    assert "a plugin's code" not in said


# ── replay: the plugin does not decide now what it decided then ─────────────────


def test_a_plugin_failing_on_replay_is_said_as_such_not_as_a_broken_wal(
    project: Path, capsys: pytest.CaptureFixture[str], forget_plugins: Callable[[], None]
) -> None:
    assert main([*RUN, "--plugin", "routing.py"]) == 0
    assert 'closed: "reviewed"' in capsys.readouterr().out
    forget_plugins()  # the changed file is imported afresh
    (project / "routing.py").write_text(plugin(target="{}['gone']"))
    replay = ["replay", "last", "--db", "runs.db", "--plugin", "routing.py"]
    assert main(replay) == 1
    out, err = capsys.readouterr()
    assert out.startswith("run "), out
    cid, rest = out.removeprefix("run ").split(": ", 1)
    assert rest.startswith("cannot be re-folded: envelope 3 ("), out
    said = (
        "the plugin's target `pick_reviewer` failed on replay: KeyError: 'gone' "
        "(routing.py:25, in resolve)\n  re-folded 1 turn before it\n"
    )
    assert rest.endswith(said), out
    assert "broken" not in out + err and "two writers" not in out + err and err == ""

    # resume rebuilds the run the same way, and says the same (nothing is written)
    assert main(["resume", "last", "--db", "runs.db", "--plugin", "routing.py"]) == 1
    out, err = capsys.readouterr()
    assert err.startswith(f"{cid}: error: run {cid}: cannot be re-folded: envelope 3 ("), err
    assert said.split("\n")[0] in err and "broken" not in out + err


def test_a_plugin_target_choosing_no_participant_on_replay_is_said_as_its_failure(
    project: Path, capsys: pytest.CaptureFixture[str], forget_plugins: Callable[[], None]
) -> None:
    """The target chose a participant when the run was written and chooses "nobody" now:
    the WAL is intact, the plugin changed; the replay's result does not match."""
    assert main([*RUN, "--plugin", "routing.py"]) == 0
    capsys.readouterr()
    forget_plugins()
    (project / "routing.py").write_text(plugin(target='"nobody"'))
    assert main(["replay", "last", "--db", "runs.db", "--plugin", "routing.py"]) == 1
    out, err = capsys.readouterr()
    said = (
        "the plugin's target `pick_reviewer` failed on replay: chose 'nobody', which is not "
        "a participant\n  re-folded 1 turn before it\n"
    )
    assert out.startswith("run ") and ": cannot be re-folded: envelope 3 (" in out, out
    assert out.endswith(said), out
    assert "broken" not in out + err and "cannot be folded" not in out + err and err == ""

    async def replay() -> Any:
        hub = await Hub.open(open_store("runs.db"))
        try:
            return hub.replay(hub.store.channel_ids()[0])
        finally:
            await hub.close()

    result = asyncio.run(replay())
    assert result.failed is not None and result.broken is None
    assert not result.matches
    # a re-fold that stopped matches nothing, even where the rest agrees
    same = attrs.evolve(result, close_reason="reviewed", recorded_close_reason="reviewed")
    same = attrs.evolve(same, replayed_state=same.recorded_state)
    assert not same.matches and attrs.evolve(same, failed=None).matches


# ── readers: a plugin that fails on a stored run now is named, not an internal error ──


def test_readers_say_a_plugin_failing_on_a_stored_run_as_the_plugins_failure(
    project: Path, capsys: pytest.CaptureFixture[str], forget_plugins: Callable[[], None]
) -> None:
    """The condition worked when the run was written and raises now: `flowc log RUN`,
    `--why N`, `--scenario-upto N` and the view's why and scenario answers name it."""
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from flowc.view.server import ViewSettings, make_app

    assert main([*RUN, "--plugin", "routing.py"]) == 0
    capsys.readouterr()
    forget_plugins()
    (project / "routing.py").write_text(plugin(condition="int('many')"))
    said = (
        "the plugin's condition `draft_is_long` failed on it: ValueError: invalid literal "
        "for int() with base 10: 'many' (routing.py:16, in evaluate)"
    )
    log = ["log", "last", "--db", "runs.db", "--plugin", "routing.py"]
    for extra in (["--why", "2"], ["--scenario-upto", "2"], []):
        assert main([*log, *extra]) == 1, extra
        out, err = capsys.readouterr()
        assert err.startswith("flowc log: error: runs.db: run "), (extra, err)
        assert err.endswith(f": {said}\n"), (extra, err)
        assert "internal error" not in err and "damaged" not in err and out == ""
    token = "t" * 32
    app = make_app(ViewSettings("runs.db", token, poll=0.01))
    client = TestClient(app, base_url="http://127.0.0.1:8123")  # type: ignore[arg-type]
    store = open_store("runs.db", readonly=True)
    [cid] = store.channel_ids()
    store.close()
    for what in ("why", "scenario"):
        answer = client.get(f"/api/run/{cid}/{what}/2?token={token}")
        assert answer.status_code == 422, (what, answer.text)
        assert answer.json() == {"error": f"run {cid}: {said}"}


PLAIN_FLOW = """\
speaker user: human
speaker writer
speaker reviewer
max_turns 6
when from user then writer
when from writer then reviewer
when from reviewer then terminate "reviewed"
"""


def test_listing_says_a_run_a_plugin_fails_on_now_as_its_own_status(
    project: Path, capsys: pytest.CaptureFixture[str], forget_plugins: Callable[[], None]
) -> None:
    """`flowc log` (text, --json, --jsonl) and the view's runs list and run page (its
    event streams and backlog) list the run whose intact records a plugin fails on now as
    `plugin-failed`, naming the plugin, and go on with the other runs (they were an
    internal error, exit 2, and a 500)."""
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from flowc.view.server import ViewSettings, make_app

    (project / "plain.flow").write_text(PLAIN_FLOW)
    assert main(["run", "plain.flow", "--script", "script.json", "--db", "runs.db"]) == 0
    assert main([*RUN, "--plugin", "routing.py"]) == 0
    capsys.readouterr()
    store = open_store("runs.db", readonly=True)
    plain, cid = store.channel_ids()
    store.close()
    forget_plugins()
    (project / "routing.py").write_text(plugin(condition="int('many')"))
    said = (
        f"run {cid}: the plugin's condition `draft_is_long` failed on it: ValueError: invalid "
        "literal for int() with base 10: 'many' (routing.py:16, in evaluate)"
    )
    failed = {"run_id": cid, "status": "plugin-failed", "error": said}
    log = ["log", "--db", "runs.db", "--plugin", "routing.py"]
    assert main(log) == 1
    out, err = capsys.readouterr()
    first, second = out.splitlines()
    assert first.startswith(f"{plain}  ") and first.endswith('  3 turns  "reviewed"'), out
    assert second == f"{cid}  plugin-failed"
    assert err == f"flowc log: error: runs.db: {said}\n"
    assert main([*log, "--json"]) == 1
    listed = json.loads(capsys.readouterr().out)
    assert listed[0]["status"] == "closed" and listed[1] == failed, listed
    assert main([*log, "--jsonl"]) == 1
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert lines[0]["status"] == "closed" and lines[1] == failed, lines

    token = "t" * 32
    app = make_app(ViewSettings("runs.db", token, poll=0.01))
    client = TestClient(app, base_url="http://127.0.0.1:8123")  # type: ignore[arg-type]
    answer = client.get(f"/api/runs?token={token}")
    assert answer.status_code == 200, answer.text
    assert [r["status"] for r in answer.json()] == ["closed", "plugin-failed"]
    assert answer.json()[1] == failed
    # the page reads the opening only (intact): the stream that reads the turns says it,
    # in place of the run's status, and ends; so do AG-UI's stream and the backlog
    assert client.get(f"/run/{cid}?token={token}").status_code == 200
    error = json.dumps({"error": said})
    events = client.get(f"/api/run/{cid}/events?token={token}")
    assert events.text.endswith(f"event: plugin-failed\ndata: {error}\n\n"), events.text
    agui = client.get(f"/api/run/{cid}/ag-ui?token={token}").text
    last = json.loads(agui.strip().split("\n\n")[-1].removeprefix("data: "))
    assert last == {"type": "RUN_ERROR", "message": said, "code": "plugin-failed"}, agui
    backlog = client.get(f"/api/run/{cid}/turns?after=0&token={token}")
    assert backlog.text == error + "\n", backlog.text


def test_fork_refuses_a_run_a_plugin_fails_on_before_writing_anything(
    project: Path, capsys: pytest.CaptureFixture[str], forget_plugins: Callable[[], None]
) -> None:
    """`flowc fork RUN N` and the view's fork re-fold the run up to turn N before they
    write: a plugin failing on those records now is said in `replay`'s words, and the
    store holds the runs it held (a new run was written, then refused by its resume)."""
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from flowc.view.server import ViewSettings, make_app

    assert main([*RUN, "--plugin", "routing.py"]) == 0
    capsys.readouterr()
    forget_plugins()
    (project / "routing.py").write_text(plugin(condition="int('many')"))

    def runs() -> list[str]:
        store = open_store("runs.db", readonly=True)
        try:
            return store.channel_ids()
        finally:
            store.close()

    [cid] = runs()
    assert main(["fork", cid, "2", "--db", "runs.db", "--plugin", "routing.py"]) == 1
    out, err = capsys.readouterr()
    said = (
        "the plugin's condition `draft_is_long` failed on replay: ValueError: invalid literal "
        "for int() with base 10: 'many' (routing.py:16, in evaluate)"
    )
    assert err.startswith(f"flowc fork: error: runs.db: run {cid}: cannot be re-folded: "), err
    assert err.endswith(f"envelope 3 ({ids(cid)[2]}): {said}\n"), err
    assert out == "" and runs() == [cid]
    token = "t" * 32
    app = make_app(ViewSettings("runs.db", token, poll=0.01))
    client = TestClient(app, base_url="http://127.0.0.1:8123")  # type: ignore[arg-type]
    answer = client.post(
        f"/api/run/{cid}/fork/2?token={token}",
        headers={"origin": "http://127.0.0.1:8123", "content-type": "application/json"},
        content=b"{}",
    )
    assert answer.status_code == 422, answer.text
    assert answer.json()["error"].startswith(f"run {cid}: cannot be re-folded: envelope 3 (")
    assert runs() == [cid]
    # up to turn 1 (the user's), the plugin decides nothing: that fork is written
    assert main(["fork", cid, "1", "--db", "runs.db", "--plugin", "routing.py"]) == 1
    assert "forked from" in capsys.readouterr().err and len(runs()) == 2


def test_replay_resume_and_fork_refuse_a_run_they_cannot_re_fold_in_one_wording(
    project: Path, capsys: pytest.CaptureFixture[str], forget_plugins: Callable[[], None]
) -> None:
    """The three commands that re-fold a stored run say the same refusal line for a run a
    plugin fails on now (they said `RUN: cannot ...`, `run RUN cannot ...` and `run RUN:
    cannot ...`), each after its own prefix, and exit 1 writing nothing."""
    assert main([*RUN, "--plugin", "routing.py"]) == 0
    capsys.readouterr()
    forget_plugins()
    (project / "routing.py").write_text(plugin(condition="int('many')"))
    store = open_store("runs.db", readonly=True)
    [cid] = store.channel_ids()
    store.close()
    want = (
        f"run {cid}: cannot be re-folded: envelope 3 ({ids(cid)[2]}): the plugin's condition "
        "`draft_is_long` failed on replay: ValueError: invalid literal for int() with base "
        "10: 'many' (routing.py:16, in evaluate)"
    )
    said = {}
    for cmd, args, prefix in (
        ("replay", ["replay", cid], ""),
        ("resume", ["resume", cid], f"{cid}: error: "),
        ("fork", ["fork", cid, "2"], "flowc fork: error: runs.db: "),
    ):
        assert main([*args, "--db", "runs.db", "--plugin", "routing.py"]) == 1, cmd
        out, err = capsys.readouterr()
        line = (out if cmd == "replay" else err).splitlines()[0]
        assert line.startswith(prefix), (cmd, line)
        said[cmd] = line.removeprefix(prefix)
    assert said == dict.fromkeys(("replay", "resume", "fork"), want), said
    store = open_store("runs.db", readonly=True)
    assert store.channel_ids() == [cid]  # (no fork was written)
    store.close()


def ids(cid: str) -> list[str]:
    """The envelope ids of the stored run ``cid``, in order."""
    store = open_store("runs.db", readonly=True)
    try:
        return [env.envelope_id for env in store.read(cid)]
    finally:
        store.close()
