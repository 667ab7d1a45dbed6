"""How `text_matches` patterns cost: flowc's linear-time matcher against Python's `re`.

Run: ``.venv/bin/python benchmarks/bench_regex.py`` (``--quick`` for the small sizes).
For each pattern and text length it reports the seconds (CPU) of one search with
flowc's matcher (:func:`flowc.regex.compile_pattern`, text encoding included) and with
Python's ``re.search`` (skipped, shown as ``-``, where Python backtracks exponentially),
and once per pattern the cost of compiling it (translation, class tables, RE2).
Target: time grows linearly with the text; ``^(a+)+$`` on 40 ``a`` and ``!`` (Python:
hours) well under a second.
"""

from __future__ import annotations

import argparse
import re
import time
from collections.abc import Callable

from flowc.regex import compile_pattern

CASES = [
    # (pattern, text of length n, whether Python's re finishes)
    (r"^(a+)+$", lambda n: "a" * n + "!", False),
    (r"(?i)TERMINATE\s*\Z", lambda n: "x" * n + " terminate\n", True),
    (r"\b(?:\d[ -]?){13,16}\b", lambda n: ("card 4111 1111 " * (n // 15 + 1))[:n], True),
    (r"(\w+\s?)*$", lambda n: "word " * (n // 5) + "!", False),
    (r"a*b", lambda n: "a" * n, True),  # Python: quadratic
]


def cpu(fn: Callable[..., object], *args: object) -> float:
    start = time.process_time()
    fn(*args)
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    sizes = [40, 10_000, 100_000] if args.quick else [40, 10_000, 100_000, 1_000_000]
    for pattern, make, python_ok in CASES:
        compile_pattern.cache_clear()
        compiled = cpu(compile_pattern, pattern)
        print(f"{pattern!r}: compile {compiled * 1000:.1f} ms")
        matcher = compile_pattern(pattern)
        for n in sizes:
            text = make(n)
            ours = cpu(matcher.search, text)
            py_ok = python_ok and not (pattern == r"a*b" and n > 100_000)
            theirs = f"{cpu(re.search, pattern, text):9.4f} s" if py_ok else "        -  "
            print(f"  n={n:>9,}  flowc {ours:9.4f} s   python re {theirs}")


if __name__ == "__main__":
    main()
