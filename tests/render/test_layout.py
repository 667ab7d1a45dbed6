"""Big diagrams switch to Graphviz's ``sfdp`` engine so they lay out in seconds."""

from __future__ import annotations

import itertools

from flowc.compiler.render.dot import MAX_DOT_COST, layout_cost, render_dot
from tests.render.helpers import diagram_of


def chain(count: int, broadcast: bool) -> str:
    names = [f"s{i}" for i in range(count)]
    text = "speakers " + ", ".join(names) + "\n"
    text += "".join(f"when from {a} then {b}\n" for a, b in itertools.pairwise(names))
    if broadcast:
        text += 'when context.done == true then terminate "done" priority -1\n'
    return text


def test_cost_counts_the_rank_steps_long_edges_span() -> None:
    _, short = diagram_of(chain(30, broadcast=False))
    _, wide = diagram_of(chain(30, broadcast=True))
    # 30 nodes + start + terminal; every edge spans one rank (labelled ones count twice)
    assert layout_cost(short) == len(short.nodes) + 1 + 2 * 29 + 2
    assert layout_cost(wide) > 10 * layout_cost(short)


def test_small_and_long_but_thin_diagrams_keep_the_dot_layout() -> None:
    _, d = diagram_of(chain(300, broadcast=False))
    assert layout_cost(d) <= MAX_DOT_COST
    assert "layout=sfdp" not in render_dot(d)


def test_wide_fan_in_switches_to_sfdp() -> None:
    _, d = diagram_of(chain(80, broadcast=True))
    assert layout_cost(d) > MAX_DOT_COST
    assert "layout=sfdp, overlap=prism, splines=false" in render_dot(d)
