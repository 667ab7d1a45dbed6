"""docs/trust.md gives the limits flowc keeps with their values: each value it quotes is the
one in the code, read from the constant itself, so that a changed limit changes the page."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from flowc import inputs, regex
from flowc.compiler import shapes
from flowc.compiler.analysis import facts, graph_contexts, lockstep, runs, symbolic
from flowc.compiler.render import dot, image
from flowc.diagnostics import EXCERPT_WIDTH, MAX_LISTED, MAX_QUOTED
from flowc.dsl import keywords, lalr
from flowc.lsp import stdio
from flowc.migrate import MAX_INPUT_BYTES as MIGRATE_MAX_BYTES
from flowc.project import config
from flowc.runtime import failures, stored, wal

#: (flowc.compiler.analysis's `explore` is also a function it exports)
explore = importlib.import_module("flowc.compiler.analysis.explore")
PAGE = Path(__file__).resolve().parent.parent / "docs" / "trust.md"
MIB = 2**20


def size(n: int) -> str:
    """``16 MiB``, ``8 KiB``."""
    return f"{n // MIB} MiB" if n % MIB == 0 else f"{n // 1024} KiB"


def diff_default_max_states() -> int:
    import argparse

    from flowc.commands import diff

    sub = argparse.ArgumentParser().add_subparsers()
    diff.register(sub)
    (parser,) = sub.choices.values()
    return int(parser.get_default("max_states"))


#: each limit, as the page writes it
QUOTED = {
    "files": f"is a regular file of at most {size(inputs.MAX_INPUT_BYTES)}",
    "migrate": f"reads inputs of at most {MIGRATE_MAX_BYTES:,} bytes",
    "flow nesting": f"conditions nest at most {keywords.MAX_NESTING} levels (E001)",
    "digits": f"has at most {inputs.MAX_INT_DIGITS:,} digits",
    "suggestions": f"syntax error over {lalr._SUGGEST_MAX_CHARS:,} characters gets no",
    "json nesting": f"values nest at most {inputs.MAX_DEPTH} levels; conditions at most "
    f"{shapes.MAX_CONDITION_DEPTH} (E108)",
    "script nesting": f"Run scripts**: values nest at most {inputs.SCRIPT_MAX_DEPTH} levels",
    "record nesting": f"nests lists and objects at most {stored.MAX_NESTING} levels deep",
    "aliases": f"expand a script to at most {size(inputs.MAX_ALIAS_EXPANSION)}",
    "repeats": f"repeat counts up to {regex.MAX_REPEAT}",
    "groups": f"groups nested at most {regex.MAX_DEPTH} deep, {size(regex._MAX_MEM)} of the engine",
    "states": f"at most {facts.DEFAULT_MAX_STATES:,} abstract states one by one by default",
    "config states": f"`max-states` up to {config.MAX_STATES_CONFIG:,} only",
    "diff states": f"`flowc diff` explores at most {diff_default_max_states():,} states",
    "turns": f"at most {explore.TURNS_PER_STATE} turns per state of the bound",
    "memory": f"and {size(explore.MEMORY_BUDGET)} of memory",
    "symbolic": f"at most {symbolic.WORK_BUDGET:,} speaker-layers of work and "
    f"{size(symbolic._CUDD_MAX_MEMORY)} of decision diagrams",
    "sifting": f"moves at most {symbolic._SIFT_MAX_VARS} variables by at most "
    f"{symbolic._SIFT_MAX_SWAPS} swaps",
    "atoms": f"at most {lockstep.MAX_ATOMS} custom conditions on a turn and "
    f"{lockstep.MAX_WRITES:,} combinations",
    "contexts": f"between graphs at most {graph_contexts.MAX_CONTEXTS:,} contexts the",
    "excerpt": f"a window of {EXCERPT_WIDTH} characters around the finding",
    "quoted": f"a rule quoted in a message to {MAX_QUOTED} characters, a list of names to "
    f"{MAX_LISTED} items",
    "runs": f"a counterexample run longer than {runs.MAX_SHOWN_TURNS} turns",
    "traceback": f"is at most {failures.MAX_TRACEBACK:,} characters",
    "sfdp": f"above a layout cost of {dot.MAX_DOT_COST:,}",
    "layout time": f"runs for at most {image.LAYOUT_TIMEOUT:g} seconds (`--layout-timeout",
    "layout size": f"a diagram of more than {image.MAX_LAYOUT_SIZE:,} nodes and edges is "
    "refused before it starts (`--max-layout-size N`)",
    "labels": f"a name, reason or line is cut to {dot.MAX_LABEL_TEXT:,} characters, and a "
    f"label to {dot.MAX_LABEL_BYTES:,} bytes of text",
    "message": f"A message is at most {size(stdio.MAX_MESSAGE_BYTES)} (room for a document "
    f"of {size(inputs.MAX_INPUT_BYTES)} in JSON), a header at most "
    f"{size(stdio.MAX_HEADER_BYTES)}",
    "reason": f"at most {stdio._MAX_REASON} characters of reason",
    "lease": f"a lease ({wal.LEASE_SECONDS:g} seconds, `FLOWC_LEASE_SECONDS`)",
}


@pytest.mark.parametrize("name", list(QUOTED))
def test_the_page_quotes_the_limit_the_code_keeps(name: str) -> None:
    text = re.sub(r"\s+", " ", PAGE.read_text(encoding="utf-8"))
    assert QUOTED[name] in text, f"docs/trust.md does not say: {QUOTED[name]}"


#: other pages that quote a limit: the page, and what it must say
ELSEWHERE = {
    "checks/I301.md": [
        f"{symbolic.WORK_BUDGET:,} speaker-layers of work, or "
        f"{size(symbolic._CUDD_MAX_MEMORY)} of diagrams",
    ],
}


@pytest.mark.parametrize("page", list(ELSEWHERE))
def test_other_pages_quote_the_limits_the_code_keeps(page: str) -> None:
    text = re.sub(r"\s+", " ", (PAGE.parent / page).read_text(encoding="utf-8"))
    for quoted in ELSEWHERE[page]:
        assert quoted in text, f"docs/{page} does not say: {quoted}"
