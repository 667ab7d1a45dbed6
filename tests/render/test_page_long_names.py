"""The HTML page of ``flowc render --check`` lists a finding's message as every report does:
a quoted name longer than a quote may be is cut around ``...`` (``elide_quoted``)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from flowc.cli import main
from flowc.diagnostics import elide

needs_dot = pytest.mark.skipif(
    shutil.which("dot") is None, reason="Graphviz `dot` is not installed (scripts/deps/graphviz.sh)"
)


@needs_dot
def test_a_long_speaker_name_is_elided_in_the_pages_findings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name = "a" * 3000
    flow = tmp_path / "long.flow"
    flow.write_text(
        f"speaker user: human\nspeaker writer\nspeaker {name}\nstart user\n"
        'when from user then writer\nwhen from writer then terminate "done"\n',
        encoding="utf-8",
    )
    out = tmp_path / "long.html"
    code = main(["render", str(flow), "--check", "-o", str(out)])
    capsys.readouterr()
    assert code == 0
    page = out.read_text(encoding="utf-8")
    # the source pane shows the flow as written; the findings list is what is cut
    findings = re.search(r'<section id="findings">.*?</section>', page, re.S)
    assert findings is not None
    (item,) = re.findall(r'<li class="finding[^"]*".*?</li>', findings.group(), re.S)
    assert 'data-code="W201"' in item
    assert name not in item
    assert elide(name) in item
    assert len(item) < 600
