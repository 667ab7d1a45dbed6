"""The VS Code extension's Show Diagram and ``flowc lsp`` agree: the command the extension
sends (read from its source) is one the server offers, and called as the extension calls it
(``workspace/executeCommand`` with the document's URI) it answers ``{"svg": ...}``, the flow
drawn with its findings, which the extension shows."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from tests.editors.conftest import VSCODE

pytestmark = [
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz `dot` is not installed"),
]

FLOW = """\
speaker user: human
speaker drafter
speaker reviewer
when from user then drafter
when from drafter then reviewer priority 5
when always then terminate "done" priority 9
when from reviewer then drafter
"""


def extension_command() -> str:
    source = (VSCODE / "src" / "extension.ts").read_text(encoding="utf-8")
    match = re.search(r'const DIAGRAM_COMMAND = "([^"]+)"', source)
    assert match, "editors/vscode/src/extension.ts: no DIAGRAM_COMMAND"
    return match.group(1)


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[sys.executable, "-m", "flowc", "lsp"]),
    scope="module",
)
async def client(lsp_client: LanguageClient, request: pytest.FixtureRequest):
    root = request.getfixturevalue("tmp_path_factory").mktemp("project")

    @lsp_client.feature(lsp.CLIENT_REGISTER_CAPABILITY)
    def register(params: lsp.RegistrationParams) -> None:  # VS Code accepts a registration
        return None

    result = await lsp_client.initialize_session(
        lsp.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"), root_uri=root.as_uri()
        )
    )
    lsp_client.root = root  # type: ignore[attr-defined]
    lsp_client.init_result = result  # type: ignore[attr-defined]
    yield
    await lsp_client.shutdown_session()


async def test_show_diagram_gets_the_svg_from_the_server(client: LanguageClient) -> None:
    command = extension_command()
    result: lsp.InitializeResult = client.init_result  # type: ignore[attr-defined]
    provider = result.capabilities.execute_command_provider
    assert provider is not None and command in provider.commands
    root: Path = client.root  # type: ignore[attr-defined]
    path = root / "review.flow"
    path.write_text(FLOW, encoding="utf-8")
    uri = path.as_uri()
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            lsp.TextDocumentItem(uri=uri, language_id="flow", version=1, text=FLOW)
        )
    )
    answer = await client.workspace_execute_command_async(
        lsp.ExecuteCommandParams(command=command, arguments=[uri])
    )
    assert isinstance(answer, dict) and isinstance(answer.get("svg"), str), answer
    svg = answer["svg"]
    assert "<svg" in svg and "</svg>" in svg
    for speaker in ("user", "drafter", "reviewer"):
        assert speaker in svg


async def test_a_flow_with_errors_gets_the_reason_the_panel_shows(client: LanguageClient) -> None:
    """The extension shows the failed request's message: it must name the error."""
    root: Path = client.root  # type: ignore[attr-defined]
    path = root / "broken.flow"
    text = FLOW.replace("then reviewer priority 5", "then reviwer priority 5")
    path.write_text(text, encoding="utf-8")
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            lsp.TextDocumentItem(uri=path.as_uri(), language_id="flow", version=1, text=text)
        )
    )
    with pytest.raises(JsonRpcException) as failure:
        await client.workspace_execute_command_async(
            lsp.ExecuteCommandParams(command=extension_command(), arguments=[path.as_uri()])
        )
    assert "E101" in str(failure.value) and "reviwer" in str(failure.value)
