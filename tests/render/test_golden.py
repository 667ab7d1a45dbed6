"""Golden diagrams: every ``tests/cases/render/*.flow`` and every ``examples/*.flow``
renders to the committed ``.dot`` and ``.mmd`` byte for byte.

The cases go through the real command line (``flowc render -f dot|mermaid``) in
process. ``pytest --update-golden`` rewrites the goldens; review the diff like code
(and look at one: ``flowc render FILE -o out.png``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from flowc.cli import main

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "tests" / "cases" / "render"
EXAMPLES = ROOT / "examples"
GOLDEN_EXAMPLES = CASES / "examples"

FLOWS = sorted(CASES.glob("*.flow"))
EXAMPLE_FLOWS = sorted(EXAMPLES.glob("*.flow"))
SUFFIXES = {"dot": ".dot", "mermaid": ".mmd"}


def golden_path(flow: Path, fmt: str) -> Path:
    folder = GOLDEN_EXAMPLES if flow.parent == EXAMPLES else flow.parent
    return folder / (flow.stem + SUFFIXES[fmt])


def run_render(flow: Path, fmt: str, capsysbinary: pytest.CaptureFixture[bytes]) -> str:
    code = main(["render", str(flow), "-f", fmt])
    out, err = capsysbinary.readouterr()
    assert code == 0, err.decode()
    assert err == b""
    return out.decode("utf-8")


def test_there_are_cases() -> None:
    assert len(FLOWS) >= 5
    assert EXAMPLE_FLOWS, "examples/*.flow are gone"
    # no golden without its flow
    for folder, flows in ((CASES, FLOWS), (GOLDEN_EXAMPLES, EXAMPLE_FLOWS)):
        stems = {p.stem for p in flows}
        for golden in [*folder.glob("*.dot"), *folder.glob("*.mmd")]:
            assert golden.stem in stems, f"stale golden {golden}"


@pytest.mark.parametrize("fmt", sorted(SUFFIXES))
@pytest.mark.parametrize(
    "flow",
    FLOWS + EXAMPLE_FLOWS,
    ids=[p.stem for p in FLOWS] + [f"ex-{p.stem}" for p in EXAMPLE_FLOWS],
)
def test_golden(
    flow: Path, fmt: str, capsysbinary: pytest.CaptureFixture[bytes], update_golden: bool
) -> None:
    out = run_render(flow, fmt, capsysbinary)
    expected = golden_path(flow, fmt)
    if update_golden:
        expected.parent.mkdir(parents=True, exist_ok=True)
        expected.write_text(out, encoding="utf-8")
    assert expected.exists(), f"no golden for {flow.name}: run pytest --update-golden"
    assert out == expected.read_text(encoding="utf-8")
    # deterministic: a second run in the same process gives the same bytes
    assert run_render(flow, fmt, capsysbinary) == out
