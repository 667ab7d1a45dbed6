"""Plugins: custom conditions and targets loaded with `--plugin`, `[tool.flowc] plugins`
and `plugins=` in the Python API, for every command that reads a flow; a flow whose
custom names nobody implements gets a clean error naming each, never a traceback."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import flowc
from flowc.cli import main
from flowc.runtime.transitions import default_registry
from tests.plugin_registry import remember_plugins

FLOW = """\
speaker user: human
speaker writer
speaker reviewer
condition draft_is_long(min: int = 10)
target pick_reviewer() -> writer | reviewer
max_turns 6
when draft_is_long() then reviewer
when from user then writer
when from writer then pick_reviewer()
when from reviewer then terminate "reviewed"

scenario "a long draft goes to the reviewer" {
  user: "hi"
  expect next writer
  writer: "a draft that is long enough"
  expect next reviewer
  reviewer: "ok"
  expect terminate "reviewed"
}
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
        data = envelope.event_data  # an agent's reply: "body"; a posted text: "text"
        return len(data.get("body", data.get("text")) or "") >= self.min


@flowc.register_target
@attrs.frozen
class Pick:
    name: ClassVar[str] = "pick_reviewer"

    def resolve(self, state: Any, envelope: Any) -> TransitionDecision:
        return TransitionDecision("reviewer")
"""

CLEAN = """\
speaker user: human
speaker bot
when from user then bot
scenario "hello" {
  user: "hi"
  bot: "hello"
  expect terminate "after_work"
}
"""

SCRIPT = {
    "kickoff": "hi",
    "script": {"writer": ["a draft that is long enough"], "reviewer": ["ok"]},
}


@pytest.fixture(autouse=True)
def isolated_registry() -> Iterator[None]:
    """Each test starts with no custom classes and no plugin imported."""
    restore = remember_plugins()
    modules = set(sys.modules)
    ag2_transitions = sys.modules.get("ag2.network.transitions")
    ag2_default = getattr(ag2_transitions, "TransitionRegistry", None)
    ag2_saved = ag2_default._DEFAULT if ag2_default is not None else None
    ag2_tables = (dict(ag2_saved._conditions), dict(ag2_saved._targets)) if ag2_saved else None
    yield
    transitions_now = sys.modules.get("ag2.network.transitions")
    if transitions_now is not None:  # AG2's registry is process-wide too
        transitions_now.TransitionRegistry._DEFAULT = ag2_saved
        if ag2_saved is not None and ag2_tables is not None:
            ag2_saved._conditions, ag2_saved._targets = ag2_tables
    restore()
    for name in set(sys.modules) - modules:
        if name.startswith(("flowc_plugin_", "routing")):
            del sys.modules[name]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "review.flow").write_text(FLOW)
    (tmp_path / "routing.py").write_text(PLUGIN)
    (tmp_path / "script.json").write_text(json.dumps(SCRIPT))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_test_without_plugin_names_each_missing_name(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["test", "review.flow"]) == 1
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    assert (
        "review.flow:4:1: error: condition `draft_is_long` has no implementation (used on line 7)"
        in err
    )
    assert (
        "review.flow:5:1: error: target `pick_reviewer` has no implementation (used on line 9)"
        in err
    )
    assert "`@flowc.register_condition`" in err and "--plugin MODULE_OR_FILE" in err
    assert "ERROR" in out and "1 file lacked custom implementations" in out


def test_test_dir_goes_on_after_a_file_without_implementations(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flows = project / "flows"
    flows.mkdir()
    (flows / "a_custom.flow").write_text(FLOW)
    (flows / "b_clean.flow").write_text(CLEAN)
    assert main(["test", "flows"]) == 1
    out = capsys.readouterr().out
    assert "ok    hello" in out  # the file after the broken one ran
    assert out.strip().endswith(
        "1 scenario: 1 passed, 0 failed; 1 file lacked custom implementations"
    )


@pytest.mark.parametrize("spec", ["routing.py", "routing", "{root}/routing.py"])
def test_plugin_file_or_module(
    project: Path, spec: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["test", "review.flow", "--plugin", spec.format(root=project)]) == 0
    assert "1 scenario: 1 passed" in capsys.readouterr().out


def test_plugins_in_pyproject_are_relative_to_it(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "pyproject.toml").write_text('[tool.flowc]\nplugins = ["routing.py"]\n')
    sub = project / "elsewhere"
    sub.mkdir()
    monkeypatch.chdir(sub)
    assert main(["test", str(project / "review.flow"), "--trust"]) == 0
    assert "1 passed" in capsys.readouterr().out


def test_run_needs_and_uses_the_plugin(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["run", "review.flow", "--script", "script.json", "--db", ":memory:"]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "condition `draft_is_long` has no implementation" in err and "Traceback" not in err
    assert main([*args, "--plugin", "routing.py"]) == 0
    out = capsys.readouterr().out
    assert 'closed: "reviewed" after 3 turns' in out


@pytest.mark.parametrize("command", [["compile"], ["check"], ["render", "-f", "dot"]])
def test_every_command_takes_plugins(
    project: Path, command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "half.py").write_text(PLUGIN.split("@flowc.register_target")[0])
    assert main([*command, "review.flow", "--plugin", "half.py"]) == 1
    out, err = capsys.readouterr()
    said = out if command == ["check"] else err  # check: a finding (E115) in its report
    assert "target `pick_reviewer` has no implementation" in said
    assert "`draft_is_long` has no implementation" not in said
    assert main([*command, "review.flow", "--plugin", "routing.py"]) == 0


def test_static_commands_need_no_plugin(project: Path) -> None:
    for command in (["compile"], ["check"], ["render", "-f", "dot"]):
        assert main([*command, "review.flow"]) == 0


def test_arguments_that_do_not_fit_the_class(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "strict.py").write_text(PLUGIN.replace("    min: int = 10\n", ""))
    assert main(["test", "review.flow", "--plugin", "strict.py"]) == 1
    err = capsys.readouterr().err
    # at the call (`when draft_is_long() then reviewer`), naming the class and its file
    assert (
        "review.flow:7:6: error: `draft_is_long(min = 10)`: the class registered for "
        "this condition, `LongText` (strict.py:9), does not take these arguments: "
        "TypeError: LongText.__init__() got an unexpected keyword argument 'min'" in err
    )


def test_a_plugin_that_fails_to_import(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "broken.py").write_text("import attrs\n\nraise RuntimeError('no config')\n")
    assert main(["test", "review.flow", "--plugin", "broken.py"]) == 2
    err = capsys.readouterr().err
    assert "--plugin broken.py: cannot import it: RuntimeError: no config" in err
    assert "broken.py:3)" in err and "Traceback" not in err
    assert main(["check", "review.flow", "--plugin", "no_such_module_xyz"]) == 2
    assert "no module named 'no_such_module_xyz'" in capsys.readouterr().err
    (project / "pyproject.toml").write_text('[tool.flowc]\nplugins = "missing.py"\n')
    assert main(["compile", "review.flow", "--trust"]) == 2
    assert "plugins: missing.py: no such file" in capsys.readouterr().err


def test_a_plugin_written_for_ag2(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Classes registered into AG2's own registry work unchanged."""
    pytest.importorskip("ag2")
    ag2_plugin = (
        PLUGIN.replace("import flowc\n", "from ag2.network import transitions as t\n")
        .replace("@flowc.register_condition\n", "")
        .replace("@flowc.register_target\n", "")
        + "\nt.register_condition(LongText)\nt.register_target(Pick)\n"
    )
    (project / "ag2_routing.py").write_text(ag2_plugin)
    assert main(["test", "review.flow", "--plugin", "ag2_routing.py"]) == 0
    assert "1 passed" in capsys.readouterr().out


def test_python_api(project: Path) -> None:
    with pytest.raises(flowc.PluginError, match="condition `draft_is_long` has no implementation"):
        flowc.run(flowc.compile_flow(FLOW), SCRIPT)
    with pytest.raises(flowc.PluginError, match="no such file"):
        flowc.compile_flow(FLOW, plugins=["nope.py"])
    compiled = flowc.compile_flow(FLOW, plugins=["routing.py"])
    assert flowc.run(compiled, SCRIPT).close_reason == "reviewed"
    # (I304: `when draft_is_long() then reviewer` can give the reviewer its own turn back)
    assert [d.code.id for d in flowc.check(FLOW, plugins=["routing.py"])] == ["I304"]


def test_python_api_check_refuses_unimplemented(project: Path) -> None:
    (project / "half.py").write_text(PLUGIN.split("@flowc.register_target")[0])
    with pytest.raises(flowc.PluginError, match="target `pick_reviewer` has no implementation"):
        flowc.check(project / "review.flow", plugins=["half.py"])
    flowc.load_plugins("routing.py", base=project)
    assert flowc.run(flowc.compile_flow(FLOW), SCRIPT).close_reason == "reviewed"


def test_the_documented_plugin_works(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/configuration.md's example plugin, as printed, implements the flow above."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "configuration.md").read_text()
    code = page.split("```python\n", 1)[1].split("```", 1)[0]
    (project / "conditions.py").write_text(code)
    (project / "doc.flow").write_text(
        FLOW.replace("draft_is_long", "long_text").replace("pick_reviewer", "pick")
    )
    assert main(["test", "doc.flow", "--plugin", "conditions.py"]) == 0
    assert "1 passed" in capsys.readouterr().out
    # the condition reads an agent's reply (a packet's ``body``), not only a posted text:
    # with the writer's turns routed back to the writer, only the condition hands a long
    # draft to the reviewer
    (project / "doc.flow").write_text(
        FLOW.replace("draft_is_long", "long_text")
        .replace("pick_reviewer() -> writer | reviewer", "pick() -> writer | reviewer")
        .replace("when from writer then pick_reviewer()", "when from writer then writer")
    )
    assert main(["test", "doc.flow", "--plugin", "conditions.py"]) == 0, capsys.readouterr()
    assert "1 passed" in capsys.readouterr().out


# ── trust: the plugins a pyproject.toml lists load only from a trusted folder ─────────

NOTICE = "its plugins were not imported"


@pytest.fixture
def configured(
    project: Path, monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """The project with `plugins = ["routing.py"]`, and a user with no trusted folder."""
    (project / "pyproject.toml").write_text('[tool.flowc]\nplugins = ["routing.py"]\n')
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("config")))
    monkeypatch.delenv("FLOWC_TRUST", raising=False)
    return project


def _imported() -> bool:
    return default_registry().condition("draft_is_long") is not None


def test_an_untrusted_folder_s_plugins_are_not_imported(
    configured: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """check, compile and render take the custom names as declared but not implemented;
    test says which have no implementation. Each says once why (one line on stderr)."""
    for command in (["compile"], ["check"], ["render", "-f", "dot"]):
        assert main([*command, "review.flow"]) == 0, command
        err = capsys.readouterr().err
        assert err.count(NOTICE) == 1, err
        (line,) = [x for x in err.splitlines() if NOTICE in x]
        assert line == (
            f"{configured / 'pyproject.toml'}: note: its plugins were not imported: "
            f"{configured} is not a trusted folder, so custom conditions and targets have no "
            f"implementation; run `flowc trust {configured}`, or give --trust once "
            "(docs/trust.md)"
        )
    assert not _imported()
    assert main(["test", "review.flow"]) == 1
    err = capsys.readouterr().err
    assert err.index(NOTICE) < err.index("condition `draft_is_long` has no implementation")
    assert not _imported() and "Traceback" not in err


def test_the_notice_comes_once_a_command(
    configured: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flows = configured / "flows"
    flows.mkdir()
    for name in ("a.flow", "b.flow", "c.flow"):
        (flows / name).write_text(FLOW)
    assert main(["check", "flows"]) == 0
    assert capsys.readouterr().err.count(NOTICE) == 1
    assert main(["test", "flows"]) == 1
    assert capsys.readouterr().err.count(NOTICE) == 1


def test_no_notice_without_plugins_in_the_configuration(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "pyproject.toml").write_text('[tool.flowc]\nignore = ["I304"]\n')
    assert main(["check", "review.flow"]) == 0
    assert main(["test", "review.flow", "--plugin", "routing.py"]) == 0
    assert NOTICE not in capsys.readouterr().err


def test_plugins_on_the_command_line_load_in_an_untrusted_folder(
    configured: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (configured / "pyproject.toml").write_text('[tool.flowc]\nplugins = ["half.py"]\n')
    (configured / "half.py").write_text("raise RuntimeError('the configured one ran')\n")
    assert main(["test", "review.flow", "--plugin", "routing.py"]) == 0
    out, err = capsys.readouterr()
    assert "1 passed" in out and NOTICE in err and "the configured one ran" not in err


@pytest.mark.parametrize("route", ["--trust", "FLOWC_TRUST", "flowc trust", "a parent listed"])
def test_each_way_to_trust_a_folder(
    configured: Path,
    route: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    extra: list[str] = []
    if route == "--trust":
        extra = ["--trust"]
    elif route == "FLOWC_TRUST":
        monkeypatch.setenv("FLOWC_TRUST", "1")
    elif route == "flowc trust":
        inner = configured / "flows"
        inner.mkdir()
        monkeypatch.chdir(inner)  # `flowc trust` there trusts the nearest pyproject's folder
        assert main(["trust"]) == 0
        monkeypatch.chdir(configured)
    else:
        listed = Path(os.environ["XDG_CONFIG_HOME"]) / "flowc" / "trusted"
        listed.parent.mkdir()
        listed.write_text(f"# mine\n\n{configured.parent}\n")
    capsys.readouterr()
    assert main(["test", "review.flow", *extra]) == 0
    out, err = capsys.readouterr()
    assert "1 passed" in out and NOTICE not in err
    assert _imported()


def test_flowc_trust_0_trusts_no_folder_but_trust_does(
    configured: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["trust", str(configured)]) == 0
    monkeypatch.setenv("FLOWC_TRUST", "0")
    assert main(["test", "review.flow"]) == 1
    err = capsys.readouterr().err
    assert "its plugins were not imported: FLOWC_TRUST=0 trusts no folder" in err
    assert "give --trust, or unset FLOWC_TRUST" in err
    assert main(["test", "review.flow", "--trust"]) == 0


def test_a_flowc_trust_that_means_nothing_is_an_error(
    configured: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("FLOWC_TRUST", "maybe")
    assert main(["check", "review.flow"]) == 2
    err = capsys.readouterr().err
    assert err == (
        "flowc check: error: FLOWC_TRUST='maybe': give 1 to trust every folder, 0 to trust "
        "none, or leave it unset for the list of trusted folders (`flowc trust --list`) to "
        "decide\n"
    )
    assert not _imported()


def test_the_help_for_a_missing_implementation_names_flowc_trust() -> None:
    """E103 (a JSON graph's custom name that does not load) and E115 (a `.flow`'s custom
    name nobody implements) say how plugins from a folder not yet trusted get loaded."""
    from flowc.compiler import model as m
    from flowc.compiler.analysis import unloadable_names
    from flowc.runtime.plugins import implementation_problems

    graph = m.TransitionGraph(
        "a", (m.Transition(m.CustomCondition("odd", {}), m.TerminateTarget()),)
    )
    (e103,) = unloadable_names(graph, "g.json", default_registry())
    flow = flowc.compile_flow("speakers a, b\ncondition odd()\nwhen odd() then b\n")
    (e115,) = [p.diagnostic() for p in implementation_problems(flow, "f.flow")]
    for found in (e103, e115):
        assert found.help is not None and "`flowc trust FOLDER`" in found.help, found.help
        assert "`--trust`" in found.help
