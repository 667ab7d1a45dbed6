"""What docs/editors.md and the set-up promise about the editors stays true: the keywords the
Emacs mode of the page colours are the language's (read from the Lark grammar, as the
TextMate grammar's are), and ``make test`` installs the editor tools."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from tests.editors.conftest import ROOT
from tests.editors.test_textmate import lark_keywords

DOC = ROOT / "docs" / "editors.md"


def section(title: str) -> str:
    text = DOC.read_text(encoding="utf-8")
    start = text.index(f"## {title}")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


def test_the_emacs_mode_colours_the_languages_keywords() -> None:
    (code,) = re.findall(r"```elisp\n(.*?)```", section("Emacs"), re.S)
    lists = [
        set(re.findall(r'"([a-z_]+)"', body))
        for body in re.findall(r"regexp-opt\s*'\(([^)]*)\)", code)
    ]
    keywords, constants = lists
    assert constants == {"true", "false", "null"}
    assert keywords | constants == lark_keywords()


def test_make_test_installs_the_editor_tools() -> None:
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    plan = subprocess.run(
        ["make", "-n", "-B", "test"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    ).stdout
    assert "scripts/deps/node-editors.sh" in plan and "scripts/deps/neovim.sh" in plan
    demo = subprocess.run(
        ["make", "-n", "-B", "demo"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    ).stdout
    assert "node-editors" not in demo and "neovim" not in demo
