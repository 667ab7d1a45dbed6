"""Character-level mutation fuzzing of `.flow` files.

:func:`mutate` makes a random small edit to a text (insert, delete, replace, duplicate
or swap characters, drawn from the characters the language cares about and a few it
does not). :func:`probe` runs one text through every stage a user can reach with it and
returns what went wrong, if anything:

- ``crash``: an exception escaped compile, check (and its text/JSON reports), fmt or
  render (DOT and Mermaid); a bad input must give a diagnostic, never a traceback;
- ``fmt-internal``: ``fmt`` rejected its own output (:class:`FormatterBug`);
- ``fmt-unstable``: formatting the formatted text changed it again;
- ``fmt-meaning``: the input compiles, but its formatted text compiles to a different
  graph (or no longer compiles).

Run many at once with ``.venv/bin/python -m tests.hostile.fuzz [N] [--seed S]``; the
suite runs a few hundred (``tests/hostile/test_fuzz.py``, ``FLOWC_FUZZ`` for more).
"""

from __future__ import annotations

import argparse
import random
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path

import attrs

from flowc.compiler.analysis import check_source
from flowc.compiler.pipeline import compile_source
from flowc.compiler.render.diagram import build_diagram, mark_findings
from flowc.compiler.render.rendering import Rendering
from flowc.diagnostics import FlowError, has_errors, render_json, render_text
from flowc.dsl.formatter import FormatterBug, format_source
from flowc.source import SourceFile

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

#: what a mutation inserts: the language's punctuation and quotes, keyword fragments,
#: whitespace of every kind, and characters it has no use for
ALPHABET = (
    list("{}()[],:=|-><!.#`\"\\'")
    + list("abz_09")
    + [
        " ",
        "\t",
        "\n",
        "\r",
        "\f",
        "\v",
        "\x00",
        "\x1b",
        "\u00e9",
        "\u200b",
        "\u2028",
        "\ufeff",
        "\U0001f600",
    ]
    + [
        "when ",
        " then ",
        " or ",
        " and ",
        "not ",
        "from ",
        "tool ",
        "context.",
        " priority ",
        "->",
        "speaker ",
        "scenario ",
        "expect ",
        "1e400",
        "-0",
        "9" * 30,
        '"\\u',
        "`x`",
        "# c\n",
    ]
)


def mutate(text: str, rng: random.Random) -> str:
    """One random small edit of ``text``."""
    if not text:
        return rng.choice(ALPHABET)
    i = rng.randrange(len(text) + 1)
    op = rng.randrange(6)
    if op == 0:  # insert
        return text[:i] + rng.choice(ALPHABET) + text[i:]
    if op == 1:  # delete a few characters
        return text[:i] + text[i + rng.randint(1, 8) :]
    if op == 2:  # replace one character
        return text[:i] + rng.choice(ALPHABET) + text[i + 1 :]
    if op == 3:  # duplicate a slice
        j = min(len(text), i + rng.randint(1, 40))
        return text[:j] + text[i:j] + text[j:]
    if op == 4:  # swap two neighbours
        if i + 1 >= len(text):
            return text
        return text[:i] + text[i + 1] + text[i] + text[i + 2 :]
    # move a line elsewhere
    lines = text.split("\n")
    line = lines.pop(rng.randrange(len(lines)))
    lines.insert(rng.randrange(len(lines) + 1), line)
    return "\n".join(lines)


@attrs.frozen
class Problem:
    kind: str
    detail: str
    text: str


def _compiled_json(text: str) -> str | None:
    compiled, diags = compile_source(SourceFile("fuzz.flow", text))
    if compiled is None or has_errors(diags):
        return None
    return compiled.to_json()


def probe(text: str) -> Problem | None:
    """Everything a user can do with ``text``; the first thing that goes wrong."""
    stage = "compile"
    try:
        source = SourceFile("fuzz.flow", text)
        compiled, diags = compile_source(source)
        render_text(diags, {"fuzz.flow": source})
        stage = "check"
        found = check_source(source)
        render_text(found, {"fuzz.flow": source})
        render_json(found)
        if compiled is not None and not has_errors(diags):
            stage = "render"
            diagram = mark_findings(build_diagram(compiled), found)
            rendering = Rendering(diagram, source=source)
            rendering.to_bytes("dot")
            rendering.to_bytes("mermaid")
        stage = "fmt"
        try:
            formatted = format_source(text, "fuzz.flow")
        except FlowError:
            return None  # a syntax error, reported as such
        except FormatterBug as err:
            return Problem("fmt-internal", str(err), text)
        stage = "fmt again"
        again = format_source(formatted, "fuzz.flow")
        if again != formatted:
            return Problem("fmt-unstable", "formatting the formatted text changed it", text)
        if compiled is not None and not has_errors(diags):
            stage = "compile formatted"
            if _compiled_json(formatted) != compiled.to_json():
                return Problem("fmt-meaning", "the formatted text compiles to another graph", text)
    except Exception:  # any escape is the finding
        return Problem("crash", f"{stage}: {traceback.format_exc(limit=-3)}", text)
    return None


def examples() -> list[tuple[str, str]]:
    return [(p.name, p.read_text(encoding="utf-8")) for p in sorted(EXAMPLES.glob("*.flow"))]


def campaign(count: int, seed: int, max_edits: int = 3) -> Iterator[tuple[str, Problem]]:
    """``count`` mutants (1 to ``max_edits`` edits each) of the examples, round-robin."""
    rng = random.Random(seed)
    bases = examples()
    for k in range(count):
        name, text = bases[k % len(bases)]
        for _ in range(rng.randint(1, max_edits)):
            text = mutate(text, rng)
        problem = probe(text)
        if problem is not None:
            yield name, problem


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="mutation-fuzz flowc on the examples")
    ap.add_argument("count", nargs="?", type=int, default=2500)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--show", type=int, default=3, help="mutants to print per kind")
    args = ap.parse_args(argv)
    by_kind: dict[str, list[tuple[str, Problem]]] = {}
    for name, problem in campaign(args.count, args.seed):
        by_kind.setdefault(problem.kind, []).append((name, problem))
    for kind, items in sorted(by_kind.items()):
        print(f"== {kind}: {len(items)}")
        for name, problem in items[: args.show]:
            print(f"-- from {name}: {problem.detail}\n{problem.text!r}\n")
    print(
        f"{sum(len(v) for v in by_kind.values())} problems in {args.count} mutants (seed {args.seed})"
    )
    return 1 if by_kind else 0


if __name__ == "__main__":
    sys.exit(main())
