"""`flowc lsp` and the trust rule (docs/trust.md): opening a flow of an untrusted folder
imports none of the plugins its pyproject.toml lists, says so once (an information
message naming the folder and how to trust it), and the server reads the user's list of
trusted folders again, so that `flowc trust` in a terminal takes effect at the next check.

(tests/hostile/test_trust.py opens a hostile repository through every request the server
answers, and through every command.)"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.lsp.client import change, open_doc, wait_version
from tests.lsp.conftest import start

pytestmark = pytest.mark.asyncio(loop_scope="module")

#: the server's own $XDG_CONFIG_HOME: its list of trusted folders, empty at first
CONFIG = Path(tempfile.mkdtemp(prefix="flowc-lsp-trust-"))
ENV = {**os.environ, "XDG_CONFIG_HOME": str(CONFIG)}
ENV.pop("FLOWC_TRUST", None)

FLOW = """\
speaker user: human
speaker bot
condition odd()
when odd() then bot
when from user then bot
"""


@pytest_lsp.fixture(
    config=ClientServerConfig(
        server_command=[sys.executable, "-m", "flowc", "lsp"], server_env=ENV
    ),
    scope="module",
)
async def client(lsp_client: LanguageClient, request: pytest.FixtureRequest):
    await start(lsp_client, request)
    yield
    await lsp_client.shutdown_session()


async def test_plugins_load_once_the_folder_is_trusted(client: LanguageClient) -> None:
    root: Path = client.root  # type: ignore[attr-defined]
    project = root / "cloned"
    project.mkdir()
    marker = project / "MARKER"
    (project / "evil.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    (project / "pyproject.toml").write_text('[tool.flowc]\nplugins = ["evil.py"]\n')
    before = len(client.messages)
    uri = await open_doc(client, FLOW, "cloned/a.flow")
    await open_doc(client, FLOW, "cloned/b.flow")
    assert not marker.exists()
    said = client.messages[before:]
    assert len(said) == 1, said  # once, not once a document
    assert said[0].type == lsp.MessageType.Info
    assert said[0].message == (
        f"flowc: {project / 'pyproject.toml'}: its plugins were not imported: {project} is "
        "not a trusted folder, so custom conditions and targets have no implementation; run "
        f"`flowc trust {project}` (read again at the next check)"
    )
    # the user trusts it in a terminal: the next check of a document imports the plugin
    trusted = subprocess.run(
        [sys.executable, "-m", "flowc", "trust", str(project)],
        env=ENV,
        capture_output=True,
        text=True,
        check=False,
    )
    assert trusted.returncode == 0, trusted.stderr
    change(client, uri, 2, FLOW + "\n")
    await wait_version(client, uri, 2)
    assert marker.read_text() == "ran"
    assert len(client.messages) == before + 1
