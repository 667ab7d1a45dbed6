"""The differential harness on the public corpus (tests/migrate/real/manifest.json): every
public input whose translation reports nothing lost or different (no M001 / M002) is run
under the real old framework and as its translation, with the harness's scripts, as the
corpus cases are (test_classic_differential.py, test_agentchat_differential.py).

The inputs are not committed (their licences allow it, but the corpus records only where
they are); the test runs where the repository snapshots are on the machine, as
tests/migrate/test_real_manifest.py does, and is skipped elsewhere. A notebook's cells
become one script: its top-level ``await``s (the cells that run the team) are left out,
since the driver runs the team itself. What each input gave is recorded in its manifest
entry (``differential``: ``agrees``, or ``does not run: WHY``), and the test checks the
record, so docs/migrate.md's count of mismatches is the one observed."""

from __future__ import annotations

import ast
import importlib.util
import json
import re
from pathlib import Path
from typing import Any

import pytest

from . import test_agentchat_differential as agentchat
from . import test_classic_differential as classic

ROOT = Path(__file__).resolve().parents[3]
REAL = ROOT / "tests" / "migrate" / "real"
MIRROR = Path("/work/.mirror")
MANIFEST = json.loads((REAL / "manifest.json").read_text(encoding="utf-8"))
EXACT = [
    e
    for e in MANIFEST["inputs"]
    if e["exit"] in (0, 1) and not {"M001", "M002"} & set(e["findings"])
]


def _runner() -> Any:
    spec = importlib.util.spec_from_file_location("run_real", REAL / "run_real.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def runnable(text: str) -> str:
    """The script with its top-level statements that ``await`` (or ``async for``/``with``) left out (a notebook runs
    them in its event loop; a script cannot, and the driver runs the team itself)."""
    tree = ast.parse(text)
    tree.body = [
        s
        for s in tree.body
        if not any(isinstance(n, (ast.Await, ast.AsyncFor, ast.AsyncWith)) for n in ast.walk(s))
        or isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    ] or [ast.Pass()]
    return ast.unparse(tree) + "\n"


#: what AG2's ``config_list_from_json("OAI_CONFIG_LIST", filter_dict=...)`` reads from the
#: environment in place of the notebooks' own key file: one config per model and tag they
#: filter on (no request is made: the driver replaces every model reply)
_MODELS = ["gpt-4o", "gpt-4o-mini", "gpt-4", "gpt-4-turbo", "gpt-3.5-turbo", "gpt-4-1106-preview"]
CONFIG_LIST = json.dumps([{"model": m, "api_key": "sk-test", "tags": [m, "tool"]} for m in _MODELS])


#: the exact public inputs the pinned frameworks cannot run as a script, why, and a text of
#: the error that shows it (checked: when one of them runs, the test says so)
DOES_NOT_RUN = {
    "microsoft_autogen_autogen_uniformed_api_calling": (
        "the notebook calls each model directly (OpenAIWrapper.create) before any chat",
        "TypeError: Missing required arguments",
    ),
    "microsoft_autogen_tutorial": (
        "it imports AutoGen Studio, which the pinned environment does not have",
        "No module named 'autogenstudio'",
    ),
    "microsoft_autogen_app_team": (
        "a Chainlit app: its team is built inside a Chainlit handler",
        "No module named 'chainlit'",
    ),
    "microsoft_autogen_app_team_user_proxy": (
        "a Chainlit app: its team is built inside a Chainlit handler",
        "No module named 'chainlit'",
    ),
}


def _stem(entry: dict[str, Any]) -> str:
    return re.sub(r"\W", "_", f"{entry['repository']}_{Path(entry['path']).stem}")


@pytest.mark.skipif(
    not all(
        (MIRROR / r.replace("/", "+") / "repo").is_dir() for r in {e["repository"] for e in EXACT}
    ),
    reason="the repository snapshots are not on this machine (search tool `fetch`)",
)
@pytest.mark.parametrize("entry", EXACT, ids=[_stem(e) for e in EXACT])
def test_a_public_exact_translation_runs_as_the_original(
    entry: dict[str, Any],
    request: pytest.FixtureRequest,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OAI_CONFIG_LIST", CONFIG_LIST)
    from flowc.migrate import migrate_source
    from flowc.source import SourceFile

    run_real = _runner()
    text, name = run_real.extract(entry["path"], run_real.read(MIRROR, entry))
    result = migrate_source(SourceFile(name, text))
    assert result.text is not None
    py = tmp_path / f"{_stem(entry)}.py"
    py.write_text(runnable(text), encoding="utf-8")
    flow = py.with_suffix(".flow")
    flow.write_text(result.text, encoding="utf-8")
    py.with_suffix(".expected.json").write_text(
        json.dumps({"findings": [{"code": d.code.id} for d in result.findings]}),
        encoding="utf-8",
    )
    family = agentchat if entry["family"] == "agentchat" else classic
    fixture = "agentchat_python" if entry["family"] == "agentchat" else "classic_python"
    python = request.getfixturevalue(fixture)
    if _stem(entry) in DOES_NOT_RUN:
        why, error = DOES_NOT_RUN[_stem(entry)]
        with pytest.raises(AssertionError, match=re.escape(error)):
            family.compare(python, py, flow, tmp_path, capsys)
        pytest.skip(f"the original does not run as a script: {why}")
    found = family.compare(python, py, flow, tmp_path, capsys)
    assert found == [], "\n".join(found)


def test_the_docs_count_the_public_exact_translations_run() -> None:
    """docs/migrate.md says how many exact public translations ran and agreed: the
    numbers of this test's lists (the runs themselves need the snapshots)."""
    docs = (ROOT / "docs" / "migrate.md").read_text(encoding="utf-8")
    ran = len(EXACT) - len(DOES_NOT_RUN)
    assert (
        f"Of the {len(EXACT)} exact translations, {ran} run under the pinned frameworks "
        "with the harness's scripts and every one agrees with its original"
    ) in " ".join(docs.split())
    assert set(DOES_NOT_RUN) <= {_stem(e) for e in EXACT}
