"""The formatter's work grows linearly with the file: counted, not timed (timing belongs
in ``benchmarks/bench_filesize.py``).

The unit of work is an element that the layout step compares when it aligns `then`
and trailing comments. A run of k consecutive commented lines used to take the widest
line again for each of them (k² elements: 47 s of ``fmt --check`` on a 10 MB flow).
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable
from typing import Any

import pytest

from flowc.dsl import formatter
from flowc.dsl.formatter import format_source


def commented_rules(n: int) -> str:
    lines = ["speaker a", "speaker b"]
    lines += [f"when from a then b priority {i % 7}  # rule {i}" for i in range(n)]
    return "\n".join(lines) + "\n"


def compared(text: str, monkeypatch: pytest.MonkeyPatch) -> int:
    count = 0

    def counting(fn: Any) -> Any:
        def wrapped(values: Iterable[Any], *args: Any, **kwargs: Any) -> Any:
            nonlocal count
            values = list(values)
            count += len(values)
            return fn(values, *args, **kwargs)

        return wrapped

    # the module's own names shadow the builtins for its code only
    monkeypatch.setattr(formatter, "max", counting(builtins.max), raising=False)
    monkeypatch.setattr(formatter, "min", counting(builtins.min), raising=False)
    format_source(text)
    return count


def test_aligning_comments_is_linear(monkeypatch: pytest.MonkeyPatch) -> None:
    small = compared(commented_rules(500), monkeypatch)
    large = compared(commented_rules(1000), monkeypatch)
    assert small > 0 and large <= 2.3 * small, (small, large)
