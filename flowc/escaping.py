r"""How every output quotes what it takes from a flow: names, values, reasons, titles,
messages that hold them, and file paths.

A flow's text is anybody's: a pull request's, a JSON graph's (whose names may hold any
character), a generated file's. Each output is read by something that acts on markup, so
each quotes that text for its reader, in one of these ways:

- **Markdown** (``flowc diff --format markdown``, a pull-request comment rendered as
  GitHub Flavored Markdown): flowc's own words are plain text, with the characters
  Markdown acts on backslash-escaped (:func:`md_text`); what comes from a flow is a code
  span whose backquote fence is longer than any run of backquotes in it, padded with a
  space where CommonMark strips one (:func:`md_code`). A :class:`Phrase` holds a sentence
  as those pieces, so one sentence is written as text (backquotes around code) and as
  Markdown alike. Nothing a name holds becomes an element, a link, an autolink or a
  ``@mention``: those are never recognised inside a code span.
- **XML** (JUnit, Cobertura, the SVG): the serialiser escapes ``<``, ``&`` and quotes;
  characters XML 1.0 cannot hold at all (control characters) are written as visible
  escapes (:func:`xml_chars`, :func:`visible`).
- **Graphviz** labels are HTML-like labels (:func:`dot_html`), node names quoted DOT
  ids (:func:`dot_id`); **Mermaid** labels use its entity codes (:func:`mermaid_text`).
- **GitHub Actions workflow commands** (``::error file=...::message``): ``%``, ``\r`` and
  ``\n`` are percent-encoded in the message, ``:`` and ``,`` too in a property
  (:func:`workflow_data`, :func:`workflow_property`).
- **SARIF** plain-text messages: ``[text](target)`` is an embedded link there, so ``[``,
  ``]`` and the backslash are backslash-escaped (:func:`sarif_text`).
- **Lines of a log** (``flowc worker``): one event, one line (:func:`one_line`).

The HTML page quotes with :func:`html.escape`; JSON outputs need nothing beyond
:func:`json.dumps`.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterable

import attrs

__all__ = [
    "Code",
    "Phrase",
    "Quoted",
    "as_phrase",
    "dot_html",
    "dot_id",
    "dot_tooltip",
    "has_invisible",
    "in_encoding",
    "md_code",
    "md_text",
    "mermaid_text",
    "one_line",
    "phrase",
    "sarif_text",
    "visible",
    "workflow_data",
    "workflow_property",
    "written_as",
    "xml_chars",
]


# ── characters ────────────────────────────────────────────────────────────────


def _escape_of(ch: str) -> str:
    code = ord(ch)
    short = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(ch)
    if short is not None:
        return short
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}"


#: what :func:`visible` writes as an escape: C0 controls but the tab, DEL, C1 controls
#: (NEL among them), the line and paragraph separators, lone surrogates, U+FFFE, U+FFFF;
#: and the characters that show nothing or reorder what follows: the bidirectional marks,
#: embeddings, overrides and isolates (U+061C, U+200E, U+200F, U+202A to U+202E, U+2066 to
#: U+2069), the zero-width space and word joiner (U+200B, U+2060) and U+FEFF, so that a
#: name holding them is told from the name it looks like (the joiners U+200C and U+200D,
#: which scripts and emoji are written with, stay)
_INVISIBLE = re.compile(
    "[\x00-\x08\x0a-\x1f\x7f-\x9f\u061c\u200b\u200e\u200f\u202a-\u202e\u2028\u2029"
    "\u2060\u2066-\u2069\ud800-\udfff\ufeff\ufffe\uffff]"
)


def in_encoding(text: str, encoding: str | None) -> str:
    r"""``text`` as a text output in ``encoding`` writes it: ``encoding`` is the output's
    encoding and error handler as ``PYTHONIOENCODING`` writes them (``ascii:replace``,
    :func:`written_as`); a character the encoding lacks is what the handler makes of it,
    by default (and for a handler that raises: flowc's text outputs and Python's stderr
    do not) its backslash escape. ``None``, or an encoding Python does not know: as it
    is. What pads or underlines such text measures this form, so columns stay in line.

    >>> in_encoding("用户 é", "ascii"), in_encoding("用户 é", "latin-1"), in_encoding("é", None)
    ('\\u7528\\u6237 \\xe9', '\\u7528\\u6237 é', 'é')
    >>> in_encoding("用户 é", "ascii:replace"), in_encoding("用户 é", "ascii:ignore")
    ('?? ?', ' ')
    >>> in_encoding("用户", "ascii:no-such-handler"), in_encoding("用户", "no-such-encoding")
    ('\\u7528\\u6237', '用户')
    """
    if encoding is None or text.isascii():
        return text
    name, _, errors = encoding.partition(":")
    if errors in ("", "strict"):
        errors = "backslashreplace"
    try:
        codecs.lookup(name)
    except LookupError:  # an encoding Python does not know
        return text
    try:
        return text.encode(name, errors).decode(name)
    except (LookupError, UnicodeError):  # a handler unknown, or that replaces nothing
        return text.encode(name, "backslashreplace").decode(name)


def written_as(stream: object) -> str | None:
    """A text stream's encoding and error handler for :func:`in_encoding` (``None`` for
    a stream with no encoding: a :class:`io.StringIO` holds every character).

    >>> import io, sys
    >>> written_as(io.StringIO()), written_as(io.TextIOWrapper(io.BytesIO(), "ascii", "replace"))
    (None, 'ascii:replace')
    """
    encoding = getattr(stream, "encoding", None)
    if not encoding:
        return None
    errors = getattr(stream, "errors", None)
    return f"{encoding}:{errors}" if errors else str(encoding)


def visible(text: str) -> str:
    r"""``text`` on one line, with every character that a terminal, a line reader or an
    XML parser would act on (or refuse) written as an escape: ``\n``, ``\r``, ``\x1b``,
    ``\u2028``, and those that show nothing or reorder the text (``\u200b``, ``\u202e``).
    The tab and every printable character stay as they are.

    >>> visible("a\nb\x1b[2J\u2028c\td")
    'a\\nb\\x1b[2J\\u2028c\td'
    >>> visible("wr\u200biter\u202ex")
    'wr\\u200biter\\u202ex'
    """
    return _INVISIBLE.sub(lambda m: _escape_of(m[0]), text)


def has_invisible(text: str) -> bool:
    r"""Whether ``text`` holds a character :func:`visible` writes as an escape.

    >>> has_invisible("wr\u200biter"), has_invisible("support desk\t用户 👩\u200d💻")
    (True, False)
    """
    return _INVISIBLE.search(text) is not None


def one_line(text: str) -> str:
    r"""``text`` as one line of a log: :func:`visible` (a database's error message often
    runs over several lines).

    >>> one_line('cannot connect\nDETAIL:  server closed the connection')
    'cannot connect\\nDETAIL:  server closed the connection'
    """
    return text if text.isprintable() else visible(text)  # (most text: nothing to escape)


#: the characters XML 1.0 cannot hold, not even as a character reference
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_chars(text: str) -> str:
    r"""``text`` with the characters XML 1.0 cannot hold (control characters but the tab
    and line ends; lone surrogates; U+FFFE, U+FFFF) written as visible escapes: an XML
    serialiser escapes ``<``, ``&`` and quotes, but writes these as they are, and the
    document is then not XML.

    >>> xml_chars("t\x01 <x>\n")
    't\\x01 <x>\n'
    """
    return _NOT_XML.sub(lambda m: _escape_of(m[0]), text)


# ── Markdown ──────────────────────────────────────────────────────────────────

#: what CommonMark or GitHub act on in text: backslash escapes, code spans, emphasis,
#: strikethrough, links and images, raw HTML and autolinks, entities, table cells,
#: headings, math
_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>&|~#$])")
#: a name or a number, which Markdown shows as it is (no link, mention or markup can form)
_PLAIN = re.compile(r"[A-Za-z0-9_\-]+")


def md_text(text: str) -> str:
    r"""``text`` as Markdown that shows it as written: on one line (:func:`visible`), each
    character Markdown acts on backslash-escaped (CommonMark lets any ASCII punctuation be
    escaped). For flowc's own words: a name from a flow goes in :func:`md_code`.

    >>> print(md_text("rule 1, transitions[0]: max_turns | <b>"))
    rule 1, transitions\[0\]: max\_turns \| \<b\>
    """
    return _MD_SPECIAL.sub(r"\\\1", visible(text))


def md_code(text: str, *, in_table: bool = False) -> str:
    r"""``text`` as a Markdown code span that shows it as written, whatever it holds: on
    one line (:func:`visible`: a line break would end the paragraph, and a line could
    start a block of HTML), fenced by one backquote more than the longest run of
    backquotes in it, padded with a space when it starts or ends with a backquote (or
    with a space at both ends, which CommonMark strips one of).

    ``in_table``: in a GFM table cell, where ``|`` ends the cell even inside a code span,
    each ``|`` is an escaped ``\|`` between code spans.

    >>> print(md_code("support desk"), md_code("a`b"), md_code("`x`"), md_code("a|b", in_table=True))
    `support desk` ``a`b`` `` `x` `` `a`\|`b`
    """
    text = visible(text)
    if in_table and "|" in text:
        return "\\|".join(md_code(part) if part else "" for part in text.split("|"))
    if not text:
        return "` `"
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    pad = (
        " "
        if text[0] == "`" or text[-1] == "`" or (text[0] == text[-1] == " " and text.strip(" "))
        else ""
    )
    return f"{fence}{pad}{text}{pad}{fence}"


@attrs.frozen
class Code:
    """A piece of a flow that flowc's words quote as code: a rule, a condition, a name:
    in backquotes as text, a code span in Markdown."""

    text: str


@attrs.frozen
class Quoted:
    """A name or value as a `.flow` writes it (a name backquoted when it is not an
    identifier, a value as JSON), where flowc's words give it no backquotes of their own:
    as it is in text; in Markdown as it is when it is a plain name or number, else a
    code span."""

    text: str


Piece = str | Code | Quoted


@attrs.frozen
class Phrase:
    """A sentence of flowc's words (``str`` pieces) and pieces of a flow (:class:`Code`,
    :class:`Quoted`), written as text by ``str()`` and as Markdown by :meth:`markdown`.

    >>> p = phrase("rule 2: ", Code("when from `a b` then c"), " moved; ", Quoted("next_one"))
    >>> print(p)
    rule 2: `when from `a b` then c` moved; next_one
    >>> print(p.markdown())
    rule 2: ``when from `a b` then c`` moved; next\\_one
    """

    pieces: tuple[Piece, ...] = ()

    def __str__(self) -> str:
        return "".join(
            p if isinstance(p, str) else f"`{p.text}`" if isinstance(p, Code) else p.text
            for p in self.pieces
        )

    def markdown(self, *, in_table: bool = False) -> str:
        """The sentence as Markdown (``in_table``: for a GFM table cell, see
        :func:`md_code`)."""
        out = []
        for p in self.pieces:
            if isinstance(p, str):
                out.append(md_text(p))
            elif isinstance(p, Quoted) and _PLAIN.fullmatch(p.text):
                out.append(md_text(p.text))
            else:
                out.append(md_code(p.text, in_table=in_table))
        return "".join(out)

    def __add__(self, other: Phrase | Piece) -> Phrase:
        return phrase(self, other)

    def __radd__(self, other: Piece) -> Phrase:
        return phrase(other, self)

    def join(self, phrases: Iterable[Phrase]) -> Phrase:
        """The phrases with this one between each two (as :meth:`str.join`)."""
        out: list[Phrase | Piece] = []
        for i, p in enumerate(phrases):
            if i:
                out.append(self)
            out.append(p)
        return phrase(*out)


def phrase(*parts: Phrase | Piece) -> Phrase:
    """One :class:`Phrase` of pieces and phrases, in order (empty words left out)."""
    pieces: list[Piece] = []
    for part in parts:
        if isinstance(part, Phrase):
            pieces += part.pieces
        elif part != "":
            pieces.append(part)
    return Phrase(tuple(pieces))


def as_phrase(value: str | Phrase) -> Phrase:
    """``value`` as a :class:`Phrase` (a ``str`` is flowc's words)."""
    return value if isinstance(value, Phrase) else phrase(value)


# ── Graphviz and Mermaid labels ───────────────────────────────────────────────


def dot_id(text: str) -> str:
    """A quoted DOT id. Graphviz reads ``\\"`` as ``"`` and keeps ``\\\\`` as two
    characters, so this is one-to-one: distinct names stay distinct ids. A character XML
    cannot hold (Graphviz writes the id into the SVG) is written as an escape with one
    backslash, which no doubled backslash can be taken for.

    >>> print(dot_id('say "hi"'))
    "say \\"hi\\""
    """
    text = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + _NOT_XML.sub(lambda m: _escape_of(m[0]), text) + '"'


def dot_html(text: str) -> str:
    """Text for a Graphviz HTML-like label.

    >>> dot_html('a < "b" & c')
    'a &lt; &quot;b&quot; &amp; c'
    """
    # characters XML cannot hold (Graphviz refuses even their references): as escapes
    out = _NOT_XML.sub(lambda m: _escape_of(m[0]), text)
    out = out.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    # Graphviz collapses a doubled backslash to one even in HTML-like labels: double them
    out = out.replace('"', "&quot;").replace("\\", "\\\\")
    # the line ends and the tab, which XML holds, as character references
    return "".join(ch if ch >= " " else f"&#{ord(ch)};" for ch in out)


#: the characters of one quoted string of a tooltip: at most 9 bytes each in DOT (an escape
#: such as ``\ud800``, its backslash written four times), so each string stays well under
#: the 16 KiB Graphviz reads in one string
_TOOLTIP_CHUNK = 1500


def dot_tooltip(text: str) -> str:
    r"""A Graphviz tooltip that shows ``text`` as it is, of any length.

    Graphviz reads a tooltip's backslashes twice (``\N`` is the node's name, ``\n`` a
    line break) and decodes its entities, so each backslash is written four times and each
    ``&`` as ``&amp;``; a character XML cannot hold is written as an escape, as in
    :func:`xml_chars`. The value is quoted strings that Graphviz joins (``"..." + "..."``),
    each short enough for it.

    >>> print(dot_tooltip('a\\N "b" &amp;'))
    "a\\\\N \"b\" &amp;amp;"
    >>> dot_tooltip("x" * 1501).count('" + "')
    1
    """
    pieces = [text[i : i + _TOOLTIP_CHUNK] for i in range(0, len(text), _TOOLTIP_CHUNK)] or [""]
    return " + ".join(
        '"'
        + xml_chars(piece).replace("\\", "\\" * 4).replace("&", "&amp;").replace('"', '\\"')
        + '"'
        for piece in pieces
    )


_MERMAID_ENTITIES = {
    "#": "#35;",
    '"': "#quot;",
    "&": "#amp;",
    "<": "#lt;",
    ">": "#gt;",
    "`": "#96;",
    "|": "#124;",
    # `%%{init: ...}%%` anywhere in the text is a Mermaid directive (theme, CSS, fetches):
    # none of its characters may reach the text as themselves
    "%": "#37;",
    "{": "#123;",
    "}": "#125;",
    "'": "#39;",
}

#: Before it parses a diagram, Mermaid cuts the last ``;`` off every line in which
#: ``style`` or ``classDef`` is followed by ``:`` and then by ``#...;`` (it takes the line
#: for a style statement), so the entity that ``;`` ended shows as written (``#gt``,
#: ``#96``): a label never holds either word as itself, one letter of it is an entity
_MERMAID_STYLE_WORDS = (("style", "st#121;le"), ("classDef", "cl#97;ssDef"))


def mermaid_text(text: str) -> str:
    """Text for inside a quoted Mermaid label.

    >>> mermaid_text('terminate "done" #1 `next`')
    'terminate #quot;done#quot; #35;1 #96;next#96;'
    >>> mermaid_text("%%{init: {'theme': 'dark'}}%%")
    '#37;#37;#123;init: #123;#39;theme#39;: #39;dark#39;#125;#125;#37;#37;'
    >>> mermaid_text("</style> a: b")
    '#lt;/st#121;le#gt; a: b'
    """
    out = "".join(_MERMAID_ENTITIES.get(ch, ch) if ch >= " " else f"#{ord(ch)};" for ch in text)
    for word, written in _MERMAID_STYLE_WORDS:
        out = out.replace(word, written)
    return out


# ── GitHub workflow commands and SARIF ────────────────────────────────────────


def workflow_data(text: str) -> str:
    r"""The message of a GitHub Actions workflow command (``::error ...::MESSAGE``): ``%``,
    ``\r`` and ``\n`` percent-encoded, so that the command stays one line.

    >>> workflow_data("100% sure\nnext line")
    '100%25 sure%0Anext line'
    """
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def workflow_property(text: str) -> str:
    """A property value of a workflow command (``file=...,title=...``): as
    :func:`workflow_data`, and ``:`` and ``,``, which end a property, percent-encoded.

    >>> workflow_property("a:b,c.flow")
    'a%3Ab%2Cc.flow'
    """
    return workflow_data(text).replace(":", "%3A").replace(",", "%2C")


def sarif_text(text: str) -> str:
    r"""A SARIF plain-text message: ``[text](target)`` is an embedded link there, which
    viewers (GitHub code scanning among them) draw as a link, so a literal ``[`` or ``]``
    and the backslash are backslash-escaped.

    >>> print(sarif_text("speaker `[x](https://e.com)` at transitions[0] \\ done"))
    speaker `\[x\](https://e.com)` at transitions\[0\] \\ done
    """
    return text.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")
