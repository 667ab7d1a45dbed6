"""Golden compile cases: ``tests/cases/compile/NAME.flow`` -> ``NAME.json``.

Each case is compiled through the real command line (``flowc compile``) in process.
A first line ``# flowc-args: ...`` adds options (``--graph``, ``--bind NAME=ID``).
``pytest --update-golden`` rewrites the ``.json`` files; review the diff like code.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flowc.cli import main
from flowc.compiler.pipeline import compile_source
from flowc.compiler.portability import registration_note
from flowc.compiler.serde import canonical_json
from flowc.dsl import nodes as n
from flowc.dsl.parser import parse_source
from flowc.source import SourceFile

CASES = Path(__file__).resolve().parents[1] / "cases" / "compile"
FLOWS = sorted(CASES.glob("*.flow"))


def case_args(path: Path) -> list[str]:
    """Extra CLI options from a ``# flowc-args:`` first line."""
    first = path.read_text(encoding="utf-8").splitlines()[0]
    prefix = "# flowc-args:"
    return shlex.split(first[len(prefix) :]) if first.startswith(prefix) else []


def run_compile(path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    code = main(["compile", str(path), *case_args(path)])
    out, err = capsys.readouterr()
    assert code == 0, err
    # stderr carries only the note on what a bare AG2 must register, when it must
    compiled, _ = compile_source(SourceFile(path.name, path.read_text(encoding="utf-8")))
    assert compiled is not None
    note = registration_note(compiled)
    assert err == ("" if note is None else f"{path}: note: {note}\n")
    return out


def test_there_are_cases() -> None:
    assert len(FLOWS) >= 20
    assert not sorted(set(CASES.glob("*.json")) - {p.with_suffix(".json") for p in FLOWS})


@pytest.mark.parametrize("path", FLOWS, ids=[p.stem for p in FLOWS])
def test_golden(path: Path, capsys: pytest.CaptureFixture[str], update_golden: bool) -> None:
    out = run_compile(path, capsys)
    expected_path = path.with_suffix(".json")
    if update_golden:
        expected_path.write_text(out, encoding="utf-8")
    assert expected_path.exists(), f"no golden for {path.name}: run pytest --update-golden"
    assert out == expected_path.read_text(encoding="utf-8")
    # canonical JSON: sorted keys, 2-space indent, one trailing newline
    data = json.loads(out)
    assert out == json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


@pytest.mark.parametrize("path", FLOWS, ids=[p.stem for p in FLOWS])
def test_compiling_twice_gives_the_same_text(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_compile(path, capsys) == run_compile(path, capsys)


def _without_scenarios(text: str) -> str:
    flow, diags = parse_source(SourceFile("x.flow", text))
    assert diags == ()
    out = text
    for sc in sorted(flow.of_type(n.Scenario), key=lambda s: -s.span.start):
        out = out[: sc.span.start] + out[sc.span.end :]
    return out


@pytest.mark.parametrize(
    "path",
    [p for p in FLOWS if "scenario" in p.read_text(encoding="utf-8")]
    + sorted((CASES.parents[2] / "examples").glob("*.flow")),
    ids=lambda p: p.stem,
)
def test_scenarios_do_not_change_the_output(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    stripped = _without_scenarios(text)
    assert stripped != text
    with_sc, d1 = compile_source(SourceFile(path.name, text))
    without, d2 = compile_source(SourceFile(path.name, stripped))
    assert with_sc is not None and without is not None, (d1, d2)
    assert with_sc.scenarios  # the scenarios were parsed ...
    assert not without.scenarios
    assert with_sc.to_json() == without.to_json()  # ... and change nothing


def test_graph_option_prints_the_graph_of_the_knobs(capsys: pytest.CaptureFixture[str]) -> None:
    path = CASES / "statements.flow"
    knobs = json.loads(run_compile(path, capsys))
    assert main(["compile", str(path), "--graph"]) == 0
    graph = json.loads(capsys.readouterr().out)
    assert graph == knobs["graph"]
    assert set(knobs) == {"graph", "context_vars"}


def test_output_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = CASES / "sequence.flow"
    out = tmp_path / "graph.json"
    assert main(["compile", str(path), "-o", str(out)]) == 0
    assert capsys.readouterr().out == ""
    assert out.read_text(encoding="utf-8") == path.with_suffix(".json").read_text(encoding="utf-8")


def test_bind_of_an_undeclared_speaker_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["compile", str(CASES / "sequence.flow"), "--bind", "nobody=x"]) == 2
    assert "nobody" in capsys.readouterr().err


def test_bind_without_an_id_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compile", str(CASES / "sequence.flow"), "--bind", "user"]) == 2
    assert "NAME=ID" in capsys.readouterr().err


def test_scenario_turn_forms_keep_every_part() -> None:
    text = """speakers a, b
scenario "forms" {
  a: "say"
  a calls t
  a calls t: "text only"
  a calls t with {"x": 1}
  a calls t with {"x": 2}: "both"
  a sets k = 1, j = [2]: "set"
  a clears k, j
  a hands off to b: "over"
  b finishes "why"
  b finishes
  expect next a
  expect terminate
  expect terminate "why"
  expect context.k == {"v": null}
  expect turns 3
}
"""
    flow, diags = parse_source(SourceFile("s.flow", text))
    assert diags == ()
    (sc,) = flow.of_type(n.Scenario)
    items = sc.items
    calls = [
        (i.args.value if i.args else None, i.text.value if i.text else None)
        for i in items
        if isinstance(i, n.CallTurn)
    ]
    assert calls == [(None, None), (None, "text only"), ({"x": 1}, None), ({"x": 2}, "both")]
    sets = items[5]
    assert isinstance(sets, n.SetTurn)
    assert [(a.key.value, a.value.value) for a in sets.assigns] == [("k", 1), ("j", [2])]
    assert sets.text is not None and sets.text.value == "set"
    clears = items[6]
    assert isinstance(clears, n.ClearTurn) and [k.value for k in clears.keys] == ["k", "j"]
    assert clears.text is None
    hand = items[7]
    assert isinstance(hand, n.HandoffTurn) and hand.target.value == "b"
    assert hand.text is not None and hand.text.value == "over"
    fins = [i.reason.value if i.reason else None for i in items if isinstance(i, n.FinishTurn)]
    assert fins == ["why", None]
    terms = [
        i.reason.value if i.reason else None for i in items if isinstance(i, n.ExpectTerminate)
    ]
    assert terms == [None, "why"]
    (ctx,) = [i for i in items if isinstance(i, n.ExpectContext)]
    assert ctx.key.value == "k" and ctx.value.value == {"v": None}
    (turns,) = [i for i in items if isinstance(i, n.ExpectTurns)]
    assert turns.count.value == 3


ANY_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(), inner, max_size=5)
        | st.dictionaries(st.integers(), inner, max_size=3)
    ),
    max_leaves=25,
)


@settings(max_examples=500, deadline=None)
@given(ANY_JSON)
def test_canonical_json_is_exactly_json_dumps(value: object) -> None:
    expected = json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    assert canonical_json(value) == expected


def test_canonical_json_raises_as_json_does() -> None:
    for bad in ({1: "a", "b": 2}, {"k": object()}, [{1, 2}]):
        with pytest.raises(TypeError):
            json.dumps(bad, indent=2, sort_keys=True)
        with pytest.raises(TypeError):
            canonical_json(bad)


def test_compile_command_leaves_the_garbage_collector_as_it_found_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import gc

    assert gc.isenabled()
    run_compile(CASES / "sequence.flow", capsys)
    assert gc.isenabled()
    gc.disable()
    try:
        run_compile(CASES / "sequence.flow", capsys)
        assert not gc.isenabled()
    finally:
        gc.enable()
