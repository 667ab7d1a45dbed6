"""`[tool.flowc]`: only known settings; a typo is an error that lists them (every command)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from flowc.cli import main
from flowc.project.config import KEYS

FLOW = "speaker user: human\nspeaker bot\nwhen from user then bot\n"


@pytest.mark.parametrize(
    "command",
    [
        ["check"],
        ["compile"],
        ["test"],
        ["render", "-f", "dot"],
        ["fmt", "--check"],
        ["scenarios"],
        ["decompile"],
        ["migrate"],
    ],
)
def test_an_unknown_setting_is_an_error_listing_the_settings(
    tmp_path: Path, command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.flowc]\nignroe = ["W201"]\n')
    (tmp_path / "a.flow").write_text(FLOW)
    assert main([*command, str(tmp_path / "a.flow")]) == 2
    err = capsys.readouterr().err
    assert "[tool.flowc] has no setting `ignroe` (did you mean `ignore`?)" in err
    assert "the settings are: ignore, max-states, plugins, select, strict" in err


def test_known_settings_and_the_alias_are_accepted(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.flowc]\nselect = ["W"]\nignore = "W213"\nstrict = false\nmax_states = 500\n'
        "plugins = []\n"
    )
    (tmp_path / "a.flow").write_text(FLOW)
    assert main(["check", str(tmp_path / "a.flow")]) == 0


def test_the_settings_are_documented() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "configuration.md").read_text()
    table = page.split("| setting |", 1)[1].split("\n\n", 1)[0]
    documented = {m.group(1) for m in re.finditer(r"^\| `([a-z-]+)`", table, re.M)}
    assert documented == set(KEYS)


def test_check_of_a_missing_file_prints_no_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", str(tmp_path / "nope.flow")]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "nope.flow: no such file" in err


def test_render_refuses_an_output_suffix_it_cannot_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a.flow").write_text(FLOW)
    assert main(["render", str(tmp_path / "a.flow"), "-o", str(tmp_path / "x.jpg")]) == 2
    assert "no format writes `.jpg` files" in capsys.readouterr().err
    assert not (tmp_path / "x.jpg").exists()
    assert main(["render", str(tmp_path / "a.flow"), "-o", str(tmp_path / "x.mmd")]) == 0
    assert (tmp_path / "x.mmd").read_text().lstrip().startswith(("flowchart", "%%", "---"))


@pytest.mark.parametrize("command", [["check"], ["compile"], ["render", "-f", "dot"]])
@pytest.mark.parametrize("order", [("max-states", "max_states"), ("max_states", "max-states")])
def test_a_setting_given_under_both_spellings_is_an_error(
    tmp_path: Path, command: list[str], order: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pyproject.toml").write_text(
        f"[tool.flowc]\n{order[0]} = 1\n{order[1]} = 1000000\n"
    )
    (tmp_path / "a.flow").write_text(FLOW)
    assert main([*command, str(tmp_path / "a.flow")]) == 2
    err = capsys.readouterr().err
    assert (
        f"{tmp_path / 'pyproject.toml'}: [tool.flowc] gives the setting `max-states` twice, "
        "as `max-states` and as `max_states`; give it once"
    ) in err
