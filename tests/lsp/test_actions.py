"""Code actions (the checker's fixes, ignore comments), hover on codes in diagnostics,
the diagram command and the configuration watch, through `flowc lsp` (pytest-lsp)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from flowc.compiler.analysis import check_source
from flowc.compiler.render.options import COLORS
from flowc.source import SourceFile
from tests.lsp.client import TRAP, apply, open_doc, wait_diagnostics

pytestmark = pytest.mark.asyncio(loop_scope="module")


def codes(text: str) -> list[str]:
    return sorted(d.code.id for d in check_source(SourceFile("f.flow", text)))


async def actions_on(client: LanguageClient, uri: str, line: int) -> dict[str, lsp.CodeAction]:
    diags = client.last_diagnostics  # type: ignore[attr-defined]
    result = await client.text_document_code_action_async(
        lsp.CodeActionParams(
            lsp.TextDocumentIdentifier(uri),
            lsp.Range(lsp.Position(line, 0), lsp.Position(line, 0)),
            lsp.CodeActionContext(diagnostics=[d for d in diags if d.range.start.line == line]),
        )
    )
    assert result is not None
    out = {}
    for a in result:
        assert isinstance(a, lsp.CodeAction) and a.kind == lsp.CodeActionKind.QuickFix
        out[a.title] = a
    return out


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines()) if needle in line)


async def test_priority_trap_fix(client: LanguageClient) -> None:
    uri = await open_doc(client, TRAP)
    assert codes(TRAP) == ["W204"]
    found = await actions_on(client, uri, line_of(TRAP, "priority 100"))
    fix = found["Give this rule `priority -1` (lower numbers run first)"]
    assert fix.is_preferred
    assert fix.diagnostics and fix.diagnostics[0].code == "W204"
    assert fix.edit is not None
    fixed = apply(TRAP, fix.edit)
    assert fixed == TRAP.replace("priority 100", "priority -1")
    assert codes(fixed) == []


async def test_priority_fix_sorts_before_the_lowest_written_priority(
    client: LanguageClient,
) -> None:
    text = TRAP.replace(
        "when from user     then drafter", "when from user     then drafter priority -5"
    )
    text = text.replace(
        "when from reviewer then drafter", "when from reviewer then drafter priority -3"
    )
    assert "W204" in codes(text)
    uri = await open_doc(client, text)
    found = await actions_on(client, uri, line_of(text, "priority 100"))
    fix = found["Give this rule `priority -6` (lower numbers run first)"]
    assert fix.edit is not None and "W204" not in codes(apply(text, fix.edit))
    # `flowc check`'s help gives the same priority
    (trap,) = [d for d in check_source(SourceFile("f.flow", text)) if d.code.id == "W204"]
    assert trap.help is not None and "`priority -6`" in trap.help


async def test_dead_otherwise_and_dead_rule_are_removed(client: LanguageClient) -> None:
    text = (
        "speaker user: human\n"
        "speaker bot\n"
        "start user\n"
        "max_turns 10\n"
        "when from user then bot\n"
        "when from bot then user\n"
        'when from bot then terminate "never"  # shadowed\n'
        'otherwise terminate "unused"\n'
    )
    assert codes(text) == ["W202", "W203"]
    uri = await open_doc(client, text)
    fix = (await actions_on(client, uri, 7))["Remove the dead `otherwise`"]
    assert fix.edit is not None
    fixed = apply(text, fix.edit)
    assert fixed == text.replace('otherwise terminate "unused"\n', "")
    assert codes(fixed) == ["W203"]
    fix = (await actions_on(client, uri, 6))["Remove the dead rule"]
    assert fix.edit is not None
    fixed = apply(text, fix.edit)
    assert fixed == text.replace('when from bot then terminate "never"  # shadowed\n', "")
    assert codes(fixed) == ["W202"]


async def test_undeclared_speaker_fixes(client: LanguageClient) -> None:
    text = "speaker user: human\nspeaker drafter\nstart user\nwhen from user then draftr\n"
    assert codes(text) == ["E101"]
    uri = await open_doc(client, text)
    found = await actions_on(client, uri, 3)
    suggested = found["Change to `drafter`"]
    assert suggested.edit is not None
    assert apply(text, suggested.edit) == text.replace("draftr", "drafter")
    declare = found["Declare `speaker draftr`"]
    assert declare.edit is not None
    declared = apply(text, declare.edit)
    assert declared == text.replace("speaker drafter\n", "speaker drafter\nspeaker draftr\n")
    assert "E101" not in codes(declared)


async def test_max_turns_fix(client: LanguageClient) -> None:
    text = (
        "speaker user: human\nspeaker a\nspeaker b\nspeaker c\nstart user\nmax_turns 2\n"
        "when from user then a\nwhen from a then b\nwhen from b then c\n"
        'when from c then terminate "done"\n'
    )
    assert "W212" in codes(text)
    uri = await open_doc(client, text)
    found = await actions_on(client, uri, 5)
    title = next(t for t in found if t.startswith("Raise to `max_turns "))
    fixed = apply(text, found[title].edit)  # type: ignore[arg-type]
    assert "W212" not in codes(fixed)


async def test_ignore_comment_insertion(client: LanguageClient) -> None:
    uri = await open_doc(client, TRAP)
    line = line_of(TRAP, "priority 100")
    fix = (await actions_on(client, uri, line))["Ignore W204 on this line (# flowc: ignore[W204])"]
    assert fix.edit is not None
    ignored = apply(TRAP, fix.edit)
    assert ignored.splitlines()[line].endswith("priority 100  # flowc: ignore[W204]")
    assert codes(ignored) == []
    # a line with another comment: the ignore goes first; with an ignore comment: the code joins it
    for before, after in (
        (" # why", " # flowc: ignore[W204] # why"),
        (" # flowc: ignore[W203]", " # flowc: ignore[W203, W204]"),
    ):
        text = TRAP.replace("priority 100", "priority 100" + before)
        other = await open_doc(client, text)
        fix = (await actions_on(client, other, line))[
            "Ignore W204 on this line (# flowc: ignore[W204])"
        ]
        assert fix.edit is not None
        done = apply(text, fix.edit)
        assert done.splitlines()[line].endswith("priority 100" + after), done
        assert "W204" not in codes(done)


async def test_ignore_on_a_rule_over_lines_joins_its_first_ignore_comment(
    client: LanguageClient,
) -> None:
    """A rule broken over lines with an ignore comment on its last line: the fix adds the
    code to that comment (only the first ignore comment of such a rule counts), not a
    second comment on the finding's line, which would be X001."""
    text = TRAP.replace("then terminate", "\n  then terminate").replace(
        "priority 100", "priority 100  # flowc: ignore[W203]"
    )
    line = next(i for i, t in enumerate(text.splitlines()) if "context.approved" in t)
    assert "W204" in codes(text)
    uri = await open_doc(client, text)
    fix = (await actions_on(client, uri, line))["Ignore W204 on this line (# flowc: ignore[W204])"]
    assert fix.edit is not None
    done = apply(text, fix.edit)
    assert "priority 100  # flowc: ignore[W203, W204]" in done, done
    assert done.count("flowc: ignore") == 1
    assert codes(done) == [c for c in codes(text) if c != "W204"]


async def test_unused_ignore_is_removed(client: LanguageClient) -> None:
    text = TRAP.replace(
        "when from user     then drafter", "when from user     then drafter  # flowc: ignore[W203]"
    )
    assert codes(text) == ["W204", "X001"]
    uri = await open_doc(client, text)
    fix = (await actions_on(client, uri, line_of(text, "ignore[W203]")))[
        "Remove the ignore comment"
    ]
    assert fix.edit is not None
    assert apply(text, fix.edit) == TRAP


async def test_hover_on_a_diagnostic_code_and_a_quick_fix_needs_current_text(
    client: LanguageClient,
) -> None:
    """Hovering the squiggle of a finding shows its `flowc explain` page."""
    from flowc.project.explain import page

    uri = await open_doc(client, TRAP)
    line = line_of(TRAP, "priority 100")
    hover = await client.text_document_hover_async(
        lsp.HoverParams(lsp.TextDocumentIdentifier(uri), lsp.Position(line, 60))
    )  # on `priority 100`
    assert hover is not None
    assert page("W204") in hover.contents.value  # type: ignore[union-attr]


async def test_diagram_command_is_render_check(client: LanguageClient, tmp_path: Path) -> None:
    uri = await open_doc(client, TRAP, "diagram.flow")
    svg = await client.workspace_execute_command_async(
        lsp.ExecuteCommandParams(command="flowc.diagram", arguments=[uri])
    )
    assert svg["findings"] == 1
    assert svg["svg"].lstrip().startswith(("<?xml", "<svg", "<!DOCTYPE"))
    assert COLORS["trap"] in svg["svg"]  # the priority trap is drawn
    path = client.root / "diagram.flow"  # type: ignore[attr-defined]
    cli = subprocess.run(
        [sys.executable, "-m", "flowc", "render", "--check", "-f", "svg", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert cli.returncode == 0, cli.stderr
    assert svg["svg"] == cli.stdout
    # a flow with errors has no diagram: the request fails with the reason
    bad = await open_doc(client, "speaker a\nwhen from a then b\n")
    with pytest.raises(Exception) as refused:
        await client.workspace_execute_command_async(
            lsp.ExecuteCommandParams(command="flowc.diagram", arguments=[bad])
        )
    assert "E101" in str(refused.value)


async def test_a_changed_pyproject_rechecks_open_documents(client: LanguageClient) -> None:
    root: Path = client.root  # type: ignore[attr-defined]
    project = root / "watched"
    project.mkdir()
    uri = await open_doc(client, TRAP, "watched/trap.flow")
    assert [d.code for d in client.last_diagnostics] == ["W204"]  # type: ignore[attr-defined]
    # the server asked the editor to watch every pyproject.toml
    watches = [
        r
        for r in client.registrations  # type: ignore[attr-defined]
        if r.method == lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES
    ]
    assert len(watches) == 1
    assert watches[0].register_options["watchers"][0]["globPattern"] == "**/pyproject.toml"
    pyproject = project / "pyproject.toml"
    pyproject.write_text('[tool.flowc]\nignore = ["W204"]\n', encoding="utf-8")
    client.workspace_did_change_watched_files(
        lsp.DidChangeWatchedFilesParams(
            changes=[lsp.FileEvent(uri=pyproject.as_uri(), type=lsp.FileChangeType.Created)]
        )
    )
    assert await wait_diagnostics(client, uri) == []
