"""A "did you mean" names what a flow holds as the rest of a finding's text does: a zero-width
space (U+200B) or a right-to-left override (U+202E) in a name is written as an escape, never
printed raw (a terminal would show it as another name, or reverse what follows it).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from flowc.cli import main

ZWSP, RLO = "\u200b", "\u202e"
FLOW = (
    'flow x "t"\n'
    f"speaker `wr{ZWSP}iter{RLO}x`\n"
    "speaker b\n"
    "start b\n"
    f"when from b then `wr{ZWSP}iter{RLO}y`\n"
)


@pytest.mark.parametrize("fmt", ["text", "concise"])
def test_a_suggested_name_and_the_wrong_one_are_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    path = tmp_path / "a.flow"
    path.write_text(FLOW, encoding="utf-8")
    code = main(["check", str(path), "--format", fmt])
    out, err = capsys.readouterr()
    assert code == 1, out + err
    assert ZWSP not in out + err and RLO not in out + err
    assert "routes to `wr\\u200biter\\u202ey`" in out
    if fmt == "text":
        assert "did you mean `wr\\u200biter\\u202ex`?" in out


def test_a_misspelt_setting_is_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pyproject.toml").write_text(f'[tool.flowc]\n"ign{RLO}ore" = []\n', "utf-8")
    (tmp_path / "a.flow").write_text(FLOW, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["check", "a.flow"]) == 2
    out, err = capsys.readouterr()
    assert RLO not in out + err
    assert "has no setting `ign\\u202eore` (did you mean `ignore`?)" in err
