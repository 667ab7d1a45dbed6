"""The JSON report is written one finding at a time, and is the same text as one
``json.dumps`` of the whole list (so a 10 MB flow's report is never held whole)."""

from __future__ import annotations

import io
import json

from flowc.commands.console import print_diagnostics
from flowc.compiler.analysis import CheckOptions, check_source
from flowc.diagnostics import Diagnostic, diagnostic_to_json, iter_json, render_json
from flowc.source import SourceFile

FLOW = 'speaker a\nspeaker b\nspeaker c  # unreachable: "quoted" \u00e9\nstart a\n'


def _diags() -> tuple[Diagnostic, ...]:
    return check_source(SourceFile("t.flow", FLOW), CheckOptions())


def test_pieces_equal_one_dump() -> None:
    diags = _diags()
    assert len(diags) >= 2
    items = [diagnostic_to_json(d) for d in sorted(diags, key=Diagnostic.sort_key)]
    whole = json.dumps(items, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    pieces = list(iter_json(diags))
    assert len(pieces) == len(diags) + 1  # one per finding and the closing bracket
    assert "".join(pieces) == whole == render_json(diags)
    out = io.StringIO()
    print_diagnostics(diags, {}, "json", stream=out)
    assert out.getvalue() == whole


def test_no_findings_is_an_empty_list() -> None:
    assert render_json([]) == json.dumps([], indent=2) + "\n" == "[]\n"
