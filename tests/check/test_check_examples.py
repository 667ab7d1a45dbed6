"""The cookbook patterns in ``examples/`` are correct flows: ``flowc check`` reports no warning."""

from __future__ import annotations

from pathlib import Path

import pytest

from flowc.compiler.analysis import check_source
from flowc.diagnostics import Severity
from flowc.source import SourceFile

EXAMPLES = sorted((Path(__file__).parent.parent.parent / "examples").glob("*.flow"))


def test_the_cookbook_is_there() -> None:
    assert len(EXAMPLES) >= 8


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_has_no_warning(path: Path) -> None:
    found = check_source(SourceFile(path.name, path.read_text(encoding="utf-8")))
    bad = [d for d in found if d.severity is not Severity.INFO]
    assert not bad, "\n".join(f"{d.span}: {d.code.id} {d.message}" for d in bad)
