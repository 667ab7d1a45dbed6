"""The client every `flowc lsp` test module talks through: pytest-lsp starts the real
`flowc lsp` command as a subprocess (one per module) and speaks LSP over its stdio."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[sys.executable, "-m", "flowc", "lsp"]),
    scope="module",
)
async def client(lsp_client: LanguageClient, request: pytest.FixtureRequest):
    await start(lsp_client, request)
    yield
    await lsp_client.shutdown_session()


#: the file whose presence holds the checks of the `held_client` server (held_server.py)
HOLD = Path(tempfile.mkdtemp(prefix="flowc-lsp-hold-")) / "hold"


@pytest_lsp.fixture(
    config=ClientServerConfig(
        server_command=[sys.executable, "-m", "tests.lsp.held_server"],
        server_env={**os.environ, "FLOWC_TEST_HOLD": str(HOLD)},
    ),
    scope="module",
)
async def held_client(lsp_client: LanguageClient, request: pytest.FixtureRequest):
    """A client of a `flowc lsp` whose checks wait while the file ``HOLD`` exists."""
    await start(lsp_client, request)
    yield
    HOLD.unlink(missing_ok=True)
    await lsp_client.shutdown_session()


async def start(lsp_client: LanguageClient, request: pytest.FixtureRequest) -> None:
    """Initialise the session as an editor does, recording what the tests read."""
    root = request.getfixturevalue("tmp_path_factory").mktemp("project")
    registrations: list[lsp.Registration] = []

    @lsp_client.feature(lsp.CLIENT_REGISTER_CAPABILITY)
    def register(params: lsp.RegistrationParams) -> None:  # as an editor does: note, accept
        registrations.extend(params.registrations)

    lsp_client.registrations = registrations  # type: ignore[attr-defined]
    # every publishDiagnostics with its version, beside pytest-lsp's last one per document
    published: list[lsp.PublishDiagnosticsParams] = []
    features = lsp_client.protocol.fm.features
    keep_last = features[lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS]

    def record(params: lsp.PublishDiagnosticsParams) -> None:
        published.append(params)
        keep_last(params)

    features[lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = record
    lsp_client.published = published  # type: ignore[attr-defined]
    result = await lsp_client.initialize_session(
        lsp.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"), root_uri=root.as_uri()
        )
    )
    lsp_client.root = root  # type: ignore[attr-defined]
    lsp_client.server_caps = result.capabilities  # type: ignore[attr-defined]
