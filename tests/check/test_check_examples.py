"""The cookbook patterns in ``examples/`` are correct flows: ``flowc check`` reports no warning
(``approval.flow`` shows a property that some run breaks: that E116 and nothing else)."""

from __future__ import annotations

from pathlib import Path

import pytest

from flowc.compiler.analysis import check_source
from flowc.diagnostics import Severity
from flowc.source import SourceFile

EXAMPLES = sorted((Path(__file__).parent.parent.parent / "examples").glob("*.flow"))
#: what an example reports on purpose: (code, the start of its message)
MEANT = {"approval": [("E116", "property clear_outcome is violated")]}


def test_the_cookbook_is_there() -> None:
    assert len(EXAMPLES) >= 8


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_has_no_warning(path: Path) -> None:
    found = check_source(SourceFile(path.name, path.read_text(encoding="utf-8")))
    bad = [d for d in found if d.severity is not Severity.INFO]
    meant = MEANT.get(path.stem, [])
    assert [
        (d.code.id, d.message[: len(m)]) for d, (_, m) in zip(bad, meant, strict=False)
    ] == meant
    bad = bad[len(meant) :]
    assert not bad, "\n".join(f"{d.span}: {d.code.id} {d.message}" for d in bad)


def test_the_approval_example_shows_a_property_that_holds_and_one_that_is_broken() -> None:
    path = Path(__file__).parent.parent.parent / "examples" / "approval.flow"
    found = check_source(SourceFile(path.name, path.read_text(encoding="utf-8")))
    verdicts = sorted((d.code.id, d.message.split(" (")[0]) for d in found)
    assert verdicts == [
        ("E116", "property clear_outcome is violated"),
        ("I306", "property paid_after_approval holds"),
    ]
    (broken,) = [d for d in found if d.code.id == "E116"]
    assert any(
        n.startswith("a shortest run that breaks it: employee → assistant") for n in broken.notes
    )
