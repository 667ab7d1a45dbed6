"""Memory in proportion to what a file means, not to its bytes: under an address-space
limit, the shapes a reviewer found (a file of comment lines just under the 16 MiB input
cap) give a result, or a clean error, never a MemoryError or a traceback.

A comment costs 4 bytes (the offset of its ``#``, :class:`flowc.dsl.comments.Comments`);
the lines of such a file are never all held at once, by the parser nor by the formatter.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from flowc.inputs import MAX_INPUT_BYTES
from tests.hostile.limits import run_limited

#: what check and fmt may take for the 16 MB comment file (the address-space limit too:
#: the interpreter and its libraries take ~250 MiB of it before a byte is read)
MEMORY_MIB = 500
HEAD = "speakers a, b\nwhen from a then b\n"


def comment_file(folder: Path, line: str = "#\n", tail: str = "") -> Path:
    """A flow, then `#` lines up to just under the input cap (8 million of them for
    ``#\\n``)."""
    count = (MAX_INPUT_BYTES - 64 - len(HEAD) - len(tail)) // len(line)
    path = folder / "comments.flow"
    path.write_text(HEAD + line * count + tail, encoding="utf-8")
    assert MAX_INPUT_BYTES - 4096 < path.stat().st_size <= MAX_INPUT_BYTES
    return path


@pytest.mark.parametrize(
    ("args", "line", "code"),
    [
        (["check"], "#\n", 0),
        (["fmt", "--check"], "#\n", 0),
        (["fmt", "--diff"], "#  trailing blanks  \n", 1),  # every line changes: verified
    ],
    ids=["check", "fmt-check", "fmt-diff"],
)
def test_a_file_of_comment_lines_stays_small(
    args: list[str], line: str, code: int, tmp_path: Path
) -> None:
    path = comment_file(tmp_path, line)
    r = run_limited([*args, str(path)], memory_mib=MEMORY_MIB, cpu_seconds=120, wall_seconds=180)
    assert not r.timed_out and not r.traceback, r.stderr[-2000:]
    assert r.returncode == code, r.stderr[-2000:]
    assert "MemoryError" not in r.stderr and "internal error" not in r.stderr
    assert r.peak_mib < MEMORY_MIB


def test_a_file_of_comment_lines_with_a_syntax_error_is_reported(tmp_path: Path) -> None:
    """The other parser (Lark's, which words syntax errors) keeps comments as offsets too."""
    path = comment_file(tmp_path, tail="when from\n")
    r = run_limited(["check", str(path)], memory_mib=MEMORY_MIB, cpu_seconds=120, wall_seconds=180)
    assert not r.timed_out and not r.traceback, r.stderr[-2000:]
    assert r.returncode == 1
    assert "error[E001]: unexpected end of file" in r.stdout + r.stderr
    assert r.peak_mib < MEMORY_MIB


# ── many context keys ──────────────────────────────────────────────────────────

#: flows of 30-50 KB with many context keys (benchmarks/bench_analysis.py's family: S
#: speakers, K keys of V values, R context rules a worker): the checker's state bound is
#: reached or nearly, and diff explores two of them and their product
MANY_KEYS = [(30, 16, 1, 30), (20, 20, 2, 40)]


def many_keys(folder: Path, shape: tuple[int, int, int, int]) -> dict[str, Path]:
    """The flow, a NEW version with one rule's target changed, and the flow with a
    scenario (for `test --coverage`)."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from bench_analysis import Shape, generate

    speakers, keys, values, rules = shape
    text = generate(Shape(speakers=speakers, keys=keys, values=values, rules=rules))
    changed = text.replace("when from w3 then w4\n", "when from w3 then w1\n")
    assert changed != text
    scenario = 'scenario "one" {\n  user: "hi"\n  expect next w0\n}\n'
    out = {"flow": text, "new": changed, "scenario": text + scenario}
    paths = {}
    for name, body in out.items():
        paths[name] = folder / f"{name}.flow"
        paths[name].write_text(body, encoding="utf-8")
    return paths


@pytest.mark.parametrize("shape", MANY_KEYS, ids=lambda s: "S{}-K{}-V{}-R{}".format(*s))
def test_every_command_fits_in_a_gigabyte_on_many_keys(
    shape: tuple[int, int, int, int], tmp_path: Path
) -> None:
    paths = many_keys(tmp_path, shape)
    commands = {
        "check": (["check", str(paths["flow"])], {0, 1}),
        "fmt": (["fmt", "--check", str(paths["flow"])], {0, 1}),
        "diff": (["diff", str(paths["flow"]), str(paths["new"])], {1, 2}),
        "scenarios": (["scenarios", str(paths["flow"])], {0}),
        "coverage": (["test", "--coverage", str(paths["scenario"])], {0}),
    }
    for name, (args, codes) in commands.items():
        r = run_limited(args, memory_mib=1024, cpu_seconds=180, wall_seconds=240)
        said = f"{name}: exit {r.returncode}, {r.peak_mib:.0f} MiB\n{r.stderr[-2000:]}"
        assert not r.timed_out and not r.traceback, said
        assert "MemoryError" not in r.stderr and "internal error" not in r.stderr, said
        assert r.returncode in codes, said
        assert r.peak_mib < 1024, said


# ── a state space with no small description ──────────────────────────────────────

#: 60 speakers, 40 two-valued keys, 4 context rules a worker (14 KB): the symbolic count
#: past the bound found no small diagrams for its sets; with 512 MiB for them and
#: reorderings of any length, it ran on for minutes (one reordering took over 50 s
#: inside a single operation)
NO_SMALL_FORM = (60, 40, 1, 4)


def test_the_symbolic_count_gives_up_within_its_budget(tmp_path: Path) -> None:
    """`flowc check` says its findings are partial (I301), in bounded time and memory,
    instead of counting on: each reordering is bounded, and so are the diagrams."""
    path = many_keys(tmp_path, NO_SMALL_FORM)["flow"]
    r = run_limited(["check", str(path)], memory_mib=1024, cpu_seconds=90, wall_seconds=300)
    said = f"exit {r.returncode}, {r.cpu:.0f} s of CPU, {r.peak_mib:.0f} MiB\n{r.stderr[-2000:]}"
    assert not r.timed_out and not r.traceback, said
    assert r.returncode == 0, said
    assert "info[I301]" in r.stdout and "findings are partial" in r.stdout, r.stdout
    assert "are not reported" in r.stdout, r.stdout


def test_a_diff_between_graphs_on_many_keys_stays_within_its_budget(tmp_path: Path) -> None:
    """Between graphs the participants may write any context: 3 ** 16 of them here, each
    tried on every turn, where the diff ran out of memory after half a minute. It tries
    the first 65,536 (then its answer is partial) within its memory budget, and the run
    that tells the versions apart is among them: a change (exit 1), which a partial
    search may find, since the run it shows is a real one."""
    paths = many_keys(tmp_path, MANY_KEYS[0])
    r = run_limited(
        ["diff", str(paths["flow"]), str(paths["new"]), "--as-graphs"],
        memory_mib=1024,
        cpu_seconds=150,
        wall_seconds=300,
    )
    said = f"exit {r.returncode}, {r.cpu:.0f} s of CPU, {r.peak_mib:.0f} MiB\n{r.stderr[-2000:]}"
    assert not r.timed_out and not r.traceback, said
    assert r.returncode == 1 and "out of memory" not in r.stderr, said
    assert "behaviour: changed" in r.stdout and "OLD: → w4" in r.stdout, r.stdout
    assert r.peak_mib < 1024, said
