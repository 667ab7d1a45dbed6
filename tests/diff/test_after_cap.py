"""What happens only after `max_turns` closed every run is not behaviour: `flowc diff`
says a speaker "now speaks" or a rule "now fires" only when it does so within the cap,
as `check` (W215) and `run` see it. Before, an added `when from a then b` under
`max_turns 2` made diff say `b` now speaks, while `check` said b never speaks (its turn
would be turn 3) and every run closed at the cap before it."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.cli_runs import flowc

OLD = "speaker u: human\nspeakers a, b\nmax_turns 2\nwhen from u then a\n"


def kinds(tmp_path: Path, new: str) -> list[tuple[str, str | None]]:
    (tmp_path / "old.flow").write_text(OLD)
    (tmp_path / "new.flow").write_text(new)
    got = flowc(tmp_path, "diff", "old.flow", "new.flow", "--format", "json")
    assert got.returncode in (0, 1), got.stdout + got.stderr
    return [(c["kind"], c.get("subject")) for c in json.loads(got.stdout)["behavioural"]]


def test_a_speaker_whose_turn_comes_after_the_cap_does_not_now_speak(tmp_path: Path) -> None:
    new = OLD + "when from a then b\n"
    (tmp_path / "n.flow").write_text(new)
    check = flowc(tmp_path, "check", "--format", "json", "n.flow")
    assert '"W215"' in check.stdout  # b never speaks: its turn would be turn 3
    got = kinds(tmp_path, new)
    assert not [k for k in got if k[0] == "speaker-reachable"], got
    assert ("ending-removed", None) in [(k, None) for k, _ in got]  # (what does change)


def test_an_added_rule_that_fires_only_after_the_cap_can_never_fire(tmp_path: Path) -> None:
    got = kinds(tmp_path, OLD + "when from a then b\nwhen from b then u\n")
    assert ("rule-dead", "rule 3") in got, got
    assert not [k for k in got if k[0] in ("speaker-reachable", "rule-live")], got
