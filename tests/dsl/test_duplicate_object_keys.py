"""A `.flow` object literal gives each key once: a key given twice is E001 at the second
key (JSON's own reading keeps the last, and `flowc fmt` then dropped the first member
from the file). Both parsers agree: the fast one hands such a file to the full one."""

from __future__ import annotations

from pathlib import Path

import pytest

from flowc.cli import main
from flowc.dsl.parser import parse_source
from flowc.source import SourceFile

FLOW = """speaker a
speaker b
context k = {VALUE}
when from a then b
"""


@pytest.mark.parametrize(
    ("value", "found"),
    [
        ('{"a": 1, "a": 2}', '"a"'),
        ('{"a": 1, "b": {"x": [1], "x": 2}}', '"x"'),
        ('[{"a": 1}, {"a": 1, "\\u0061": 3}]', '"\\u0061"'),  # the same key, escaped
    ],
)
def test_a_key_given_twice_is_an_error_at_the_second(value: str, found: str) -> None:
    text = FLOW.replace("{VALUE}", value)
    column = text.splitlines()[2].rindex(found) + 1  # (the last time it is written)
    _, diags = parse_source(SourceFile("f.flow", text))
    assert [(d.code.id, d.span.line, d.span.column) for d in diags if d.span] == [
        ("E001", 3, column)
    ]
    assert f"found {found} a second time (first at 3:" in diags[0].message


def test_distinct_keys_and_equal_keys_in_different_objects_parse() -> None:
    text = FLOW.replace("{VALUE}", '[{"a": 1}, {"a": 2, "b": {"a": 3}}]')
    flow, diags = parse_source(SourceFile("f.flow", text))
    assert flow is not None and not diags


def test_fmt_refuses_the_file_and_leaves_it_as_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "f.flow"
    text = FLOW.replace("{VALUE}", '{"team": "ops",\n             "team": "sec"}')
    path.write_text(text)
    assert main(["fmt", str(path)]) == 1
    assert path.read_text() == text
    assert "error[E001]" in "".join(capsys.readouterr())
    assert main(["check", str(path)]) == 1
