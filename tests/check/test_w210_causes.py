"""W210 (no `terminate` is reachable, every run ends at the cap) stands on its own: a
terminate rule that never fires because of another finding (a key nothing sets, W209; a
tool nobody declares, W208; senders no run reaches, W201) is still listed by it, so that
ignoring or not selecting that other code never leaves a flow that cannot terminate
reported as clean."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flowc.cli import main

HEAD = "speaker user: human\nspeaker a\nspeaker c\nstart user\nmax_turns 6\n"
LOOP = "when from user then a\nwhen from a then user\n"

#: (the terminate rule, the code that says why it never fires)
CAUSES = [
    ('when context.nope == 1 then terminate "nope"', "W209"),
    ('when tool nope then terminate "nope"', "W208"),
    ('when from c then terminate "nope"', "W201"),
]


def _codes(capsys: pytest.CaptureFixture[str], path: Path, *options: str) -> list[str]:
    main(["check", "--format", "json", *options, str(path)])
    return [f["code"] for f in json.loads(capsys.readouterr().out)]


@pytest.mark.parametrize(("rule", "cause"), CAUSES, ids=[c for _, c in CAUSES])
def test_w210_is_reported_beside_the_finding_that_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], rule: str, cause: str
) -> None:
    path = tmp_path / "f.flow"
    path.write_text(HEAD + rule + "\n" + LOOP, encoding="utf-8")
    assert {cause, "W210"} <= set(_codes(capsys, path))
    assert "W210" in _codes(capsys, path, "--ignore", cause)
    assert _codes(capsys, path, "--select", "W210") == ["W210"]
    path.write_text(HEAD + f"{rule}  # flowc: ignore[{cause}]\n" + LOOP, encoding="utf-8")
    assert "W210" in _codes(capsys, path)


def test_w210_points_at_a_rule_no_other_finding_is_about(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With a terminate rule dead for its own sake too, W210 sits on that one, and lists both."""
    path = tmp_path / "f.flow"
    text = HEAD + f'{CAUSES[0][0]}\nwhen from a and from user then terminate "never"\n' + LOOP
    path.write_text(text, encoding="utf-8")
    main(["check", "--format", "json", str(path)])
    (w210,) = [f for f in json.loads(capsys.readouterr().out) if f["code"] == "W210"]
    assert w210["location"]["row"] == 7
    assert "rule 1, line 6" in " ".join(w210["notes"]) and "rule 2, line 7" in " ".join(
        w210["notes"]
    )
