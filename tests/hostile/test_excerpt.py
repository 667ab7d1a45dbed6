"""The text report's excerpt of a source line: whole when short, a window when long."""

from __future__ import annotations

from flowc.diagnostics import (
    EXCERPT_WIDTH,
    W203,
    Diagnostic,
    display_width,
    elide,
    excerpt,
    listing,
    render_text,
)
from flowc.source import SourceFile


def test_short_line_is_quoted_whole() -> None:
    src = SourceFile("f.flow", "speaker a\nwhen from a then b\n")
    assert excerpt(src, src.span(15, 16)) == ("when from a then b", 5, 1)


def test_long_line_window_keeps_the_span_under_the_caret() -> None:
    text = "x" * 1000 + "TARGET" + "y" * 1000
    src = SourceFile("f.flow", text)
    quoted, at, width = excerpt(src, src.span(1000, 1006))
    assert quoted.startswith("...") and quoted.endswith("...")
    assert len(quoted) == EXCERPT_WIDTH + 6
    assert quoted[at : at + width] == "TARGET"


def test_window_at_the_start_and_end_of_a_long_line() -> None:
    text = "HEAD" + "x" * 1000 + "TAIL"
    src = SourceFile("f.flow", text)
    quoted, at, width = excerpt(src, src.span(0, 4))
    assert not quoted.startswith("...") and quoted.endswith("...")
    assert quoted[at : at + width] == "HEAD"
    quoted, at, width = excerpt(src, src.span(1004, 1008))
    assert quoted.startswith("...") and not quoted.endswith("...")
    assert quoted[at : at + width] == "TAIL"
    # the end of file, just after the last character
    quoted, at, width = excerpt(src, src.span(1008, 1008))
    assert (at, width) == (len(quoted), 1)


def test_underline_of_a_long_span_stops_at_the_window() -> None:
    text = "a" * 50 + "b" * 5000 + "\nnext line"
    src = SourceFile("f.flow", text)
    quoted, at, width = excerpt(src, src.span(50, 5050))
    assert at + width <= len(quoted)
    assert width < 100
    # a span over several lines underlines to the end of its first line (windowed too)
    quoted, at, width = excerpt(src, src.span(50, len(text)))
    assert at + width <= len(quoted) + 1


def test_tabs_and_carriage_returns() -> None:
    src = SourceFile("f.flow", "when\tfrom a then b\r\nx")
    assert excerpt(src, src.span(5, 9)) == ("when from a then b", 5, 4)


def test_render_text_output_is_bounded_per_finding() -> None:
    text = "when from a then b " * 10_000
    src = SourceFile("f.flow", text)
    diags = [
        Diagnostic(W203, "dead", "f.flow", src.span(i * 19, i * 19 + 18))
        for i in range(0, 10_000, 100)
    ]
    out = render_text(diags, {"f.flow": src})
    assert len(out) < 400 * len(diags)


def test_listing_and_elide() -> None:
    assert listing(["a", "b"], 2) == ["a", "b"]
    assert listing([str(i) for i in range(1000)], 3) == ["0", "1", "2", "and 997 more"]
    assert elide("short") == "short"
    long = "when " + " or ".join(["from a"] * 1000) + " then b"
    cut = elide(long, 60)
    assert len(cut) == 60 and cut.startswith("when from a") and cut.endswith("then b")


def _caret_under(out: str, line_no: int) -> tuple[str, str]:
    """The quoted source line and the caret line under it, from a text report."""
    lines = out.splitlines()
    i = next(i for i, ln in enumerate(lines) if ln.startswith(f"{line_no} | "))
    return lines[i].split(" | ", 1)[1], lines[i + 1].split(" | ", 1)[1]


def test_carets_count_display_columns_after_wide_and_combining_characters() -> None:
    """CJK and emoji take two terminal columns, a combining accent none: the carets still
    stand under the span (the columns reported stay counts of characters)."""
    for before in ("日本語", "🎉🎉", "e\u0301te\u0301", "\tx"):
        text = f'speaker a\nwhen context.k == "{before}" then bott\n'
        src = SourceFile("f.flow", text)
        start = text.index("bott")
        d = Diagnostic(W203, "m", "f.flow", src.span(start, start + 4))
        quoted, caret = _caret_under(render_text([d], {"f.flow": src}), 2)
        lead = quoted[: quoted.index("bott")]
        assert len(caret) - len(caret.lstrip(" ")) == display_width(lead), before
        assert caret.strip() == "^^^^"
        assert d.span is not None and d.span.column == start - text.index("when") + 1
    # a span of wide characters is underlined over all of their columns
    text = 'speaker a\nwhen context.k == "日本🎉" then b\n'
    src = SourceFile("f.flow", text)
    start = text.index('"')
    d = Diagnostic(W203, "m", "f.flow", src.span(start, start + 5))
    quoted, caret = _caret_under(render_text([d], {"f.flow": src}), 2)
    assert caret == " " * len("when context.k == ") + "^" * 8


def test_display_width() -> None:
    assert display_width("when") == 4
    assert display_width("日本語🎉") == 8
    assert display_width("e\u0301") == 1  # a combining acute accent takes no column
    assert display_width("a\u200db") == 2  # nor does a zero-width joiner
    assert display_width("ｆｕｌｌ") == 8  # fullwidth forms take two
