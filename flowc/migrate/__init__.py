"""`flowc migrate`: classic AG2 / AutoGen group-chat configurations -> `.flow`.

One reader per input format, one printer (:mod:`flowc.migrate.model`):

- Python (:mod:`.python` finds what the file builds; every Python reader starts from the
  agents it creates, :mod:`.agents`): classic AG2 ``GroupChat`` / ``GroupChatManager``
  (:mod:`.classic`, speaker selection in :mod:`.classic_selection`), the AG2 0.9+ group API
  (:mod:`.group`) and the legacy swarm (:mod:`.swarm`), which share :mod:`.handoffs`;
  AgentChat teams in Python (:mod:`.agentchat_py`, with :mod:`.agentchat_graph` and
  :mod:`.agentchat_selector`); scenarios that encode a known speaking order come from
  :mod:`.speaking_order`;
- AgentChat / AutoGen Studio 0.4
  component JSON (``RoundRobinGroupChat``, ``SelectorGroupChat``, ``Swarm`` and their
  termination conditions): :mod:`.agentchat`, the names in it bounded by :mod:`.json_names`;
- AutoGen Studio 0.1 workflow JSON (``"type": "groupchat"``): :mod:`.studio`.

:func:`migrate_source` picks the reader from the file's content and returns the
`.flow` text with the findings (M001 left out, M002 lossy, M003 no effect), or no
text and E-/M-coded findings when the input is unreadable or not recognised.

>>> from flowc.source import SourceFile, Span
>>> result = migrate_source(SourceFile("x.py", "print('hello')\\n"))
>>> result.text is None, [d.code.id for d in result.findings]
(True, ['M001'])
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from typing import Any

import attrs

from flowc.diagnostics import E001, M001, Diagnostic, has_errors
from flowc.inputs import DataError, DuplicateKeyError, load_json
from flowc.migrate.agentchat import translate_component
from flowc.migrate.model import NotRecognised, UnspellableName, emit
from flowc.migrate.pyread import PyModule
from flowc.migrate.python import translate_python
from flowc.migrate.studio import is_studio_workflow, translate_studio
from flowc.source import SourceFile, Span

#: inputs larger than this are refused before parsing (a group chat file is a few KB)
MAX_INPUT_BYTES = 2_000_000


@attrs.frozen
class MigrateResult:
    """``text`` is None when nothing could be translated (exit 2)."""

    text: str | None
    findings: tuple[Diagnostic, ...]
    input_format: str
    #: the speaker order each generated scenario encodes, in scenario order
    sequences: tuple[tuple[str, ...], ...] = ()

    @property
    def left_out(self) -> bool:
        """Something was left out (an M001 or another error): exit 1."""
        return has_errors(self.findings)


def _looks_like_json(source: SourceFile) -> bool:
    return source.name.endswith(".json") or source.text.lstrip().startswith(("{", "["))


def migrate_source(source: SourceFile, pick: str | None = None) -> MigrateResult:
    """Translate one configuration file (Python or component JSON) into `.flow` text;
    ``pick`` names the chat to translate (a variable name or a line) when a Python file
    builds several (the others are reported). An exception other than those
    findings is a bug in flowc: it is raised, never turned into a finding."""
    size = len(source.text.encode("utf-8"))
    if size > MAX_INPUT_BYTES:
        return MigrateResult(
            None,
            (
                Diagnostic(
                    M001,
                    f"the input is {size:,} bytes, more than the {MAX_INPUT_BYTES:,} bytes a group-chat "
                    "configuration can plausibly need; it was not read",
                    source.name,
                    help="pass the file that builds the group chat, not a bundle or a data file",
                ),
            ),
            "unknown",
        )
    if source.name.lower().endswith((".yaml", ".yml")):
        return _not_read(source, "YAML")
    try:
        if _looks_like_json(source):
            return _migrate_json(source)
        return _migrate_python(source, pick)
    except UnspellableName as err:
        span, path = _where_written(source, err.name)
        return MigrateResult(
            None,
            (
                Diagnostic(
                    M001,
                    str(err),
                    source.name,
                    span,
                    help=err.fix,
                    json_path=path,
                ),
            ),
            "unknown",
        )
    # anything else raised is a bug in flowc, not a finding about the input: it reaches
    # the command line, which reports it as an internal error (exit 2)


#: what migrate reads, for the finding on a file in another format
READS = (
    "Python files (classic `GroupChat`, the AG2 group API, the legacy swarm, AgentChat "
    "teams), AutoGen Studio workflow JSON and AgentChat component JSON"
)


def _not_read(source: SourceFile, kind: str) -> MigrateResult:
    """A file in a format migrate does not read: refused with what it reads (exit 2)."""
    return MigrateResult(
        None,
        (
            Diagnostic(
                M001,
                f"{source.name} is a {kind} file, not a format migrate reads: it reads {READS}",
                source.name,
                help="save an AgentChat component as JSON "
                "(`team.dump_component().model_dump_json()`), or pass the Python file "
                "that builds the team",
            ),
        ),
        "unknown",
    )


def _where_written(source: SourceFile, name: str) -> tuple[Span | None, str | None]:
    """Where the input writes the string ``name``: the span of the first Python string
    literal that is it (one passed as ``name=`` first), or the JSON path of the first
    JSON string that is it (a ``name`` field first); nothing when it is not written
    whole (built by the program, say)."""
    if _looks_like_json(source):
        try:
            data = load_json(source.text)
        except (DataError, ValueError, RecursionError):
            return None, None
        found = sorted(_json_strings(data, name, ""), key=lambda hit: not hit[0])
        return None, (found[0][1] if found else None)
    try:
        module = PyModule.parse(source.name, source.text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None, None
    named = {
        id(kw.value)
        for kw in ast.walk(module.tree)
        if isinstance(kw, ast.keyword) and kw.arg == "name"
    }
    literals = [
        node
        for node in ast.walk(module.tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value == name
    ]
    if not literals:
        return None, None
    first = min(literals, key=lambda c: (id(c) not in named, c.lineno, c.col_offset))
    return module.span(first), None


def _json_strings(data: Any, name: str, path: str) -> Iterator[tuple[bool, str]]:
    """The JSON paths of the strings equal to ``name`` in ``data``, in document order,
    each with whether it is the value of a ``name`` field."""
    if isinstance(data, dict):
        for key, value in data.items():
            at = f"{path}.{key}" if path else str(key)
            if value == name and isinstance(value, str):
                yield key == "name", at
            else:
                yield from _json_strings(value, name, at)
    elif isinstance(data, list):
        for i, value in enumerate(data):
            if value == name and isinstance(value, str):
                yield False, f"{path}[{i}]"
            else:
                yield from _json_strings(value, name, f"{path}[{i}]")


def _migrate_python(source: SourceFile, pick: str | None = None) -> MigrateResult:
    try:
        result = translate_python(source, pick)
    except SyntaxError as err:
        line = err.lineno or 1
        col = max(1, err.offset or 1)
        start = min(
            source.line_starts[min(line, len(source.line_starts)) - 1] + col - 1, len(source.text)
        )
        return MigrateResult(
            None,
            (
                Diagnostic(
                    E001,
                    f"the Python file does not parse: {err.msg}",
                    source.name,
                    source.span(start, min(start + 1, len(source.text))),
                    help="migrate reads the source without running it, but it must be valid Python",
                ),
            ),
            "python",
        )
    except RecursionError:
        return MigrateResult(None, (_too_deep(source),), "python")
    except (MemoryError, ValueError) as err:
        return MigrateResult(
            None,
            (
                Diagnostic(
                    E001,
                    f"the Python file cannot be read: {type(err).__name__}",
                    source.name,
                ),
            ),
            "python",
        )
    except NotRecognised as err:
        return MigrateResult(None, err.findings, "python")
    text = emit(result.migration, source.name.rsplit(".", 1)[0] + ".flow")
    return MigrateResult(text, result.findings, "python", result.sequences)


def _too_deep(source: SourceFile) -> Diagnostic:
    """The finding for a Python file nested too deeply to read (Python's parser, or the
    reading of its tree, ran out of stack): at the top-level statement that does it, found
    by parsing the statements one by one; without a place when none can be singled out."""
    line = _too_deep_statement(source.text)
    if line is None:
        return Diagnostic(
            E001,
            "the Python file cannot be read: an expression in it is nested too deeply",
            source.name,
            help="split the deeply nested expression into several statements",
        )
    start = source.line_starts[line - 1]
    text = source.line_text(line)
    start += len(text) - len(text.lstrip())
    return Diagnostic(
        E001,
        f"the Python file cannot be read: the statement on line {line} is nested too deeply "
        "(a chain of operators or brackets too long to parse)",
        source.name,
        source.span(start, min(start + 1, len(source.text))),
        help="split the deeply nested expression into several statements",
    )


#: the keywords that open a further clause of the compound statement before them
_CONTINUED = frozenset({"else", "elif", "except", "finally"})


def _too_deep_statement(text: str) -> int | None:
    """The first line of the first top-level statement of ``text`` that is nested too deeply
    to parse on its own (or, when each parses, that holds the most deeply nested node);
    None when that cannot be told (the file does not tokenize). A compound statement is one:
    its ``else:`` / ``elif`` / ``except`` / ``finally:`` continue it, and decorators start
    the ``def`` or ``class`` they decorate."""
    import io
    import tokenize

    starts: list[int] = []
    level, fresh, decorated = 0, True, False
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.INDENT:
                level += 1
            elif tok.type == tokenize.DEDENT:
                level -= 1
            elif tok.type in (tokenize.NEWLINE, tokenize.NL, tokenize.COMMENT):
                fresh = fresh or tok.type == tokenize.NEWLINE
            elif tok.type != tokenize.ENDMARKER:
                if fresh and level == 0:
                    if tok.type == tokenize.NAME and tok.string in _CONTINUED:
                        pass  # a clause of the statement before
                    elif decorated:  # the decorated definition (or another decorator)
                        decorated = tok.string == "@"
                    else:
                        starts.append(tok.start[0])
                        decorated = tok.string == "@"
                fresh = False
    except (tokenize.TokenError, SyntaxError, RecursionError, MemoryError, ValueError):
        return None
    lines = text.splitlines(keepends=True)
    deepest: tuple[int, int] | None = None  # (depth, line)
    for i, first in enumerate(starts):
        last = starts[i + 1] - 1 if i + 1 < len(starts) else len(lines)
        chunk = "".join(lines[first - 1 : last])
        try:
            tree = ast.parse(chunk)
        except RecursionError:
            return first
        except (SyntaxError, ValueError, MemoryError):
            continue
        depth = _depth(tree)
        if deepest is None or depth > deepest[0]:
            deepest = (depth, first)
    return deepest[1] if deepest is not None else None


def _depth(tree: ast.AST) -> int:
    """How deeply the nodes of ``tree`` nest (without recursion)."""
    most, todo = 0, [(tree, 0)]
    while todo:
        node, depth = todo.pop()
        most = max(most, depth)
        todo += [(child, depth + 1) for child in ast.iter_child_nodes(node)]
    return most


def _migrate_json(source: SourceFile) -> MigrateResult:
    try:
        # the bounded reader every JSON input goes through: nesting, integer length and
        # finite numbers capped, each refusal with its place (flowc.inputs.load_json)
        data = load_json(source.text)
    except DataError as err:
        at = err.offset if err.offset is not None else 0
        span = source.span(at, min(at + 1, len(source.text)))
        where = f" (at {err.path})" if err.path else ""
        # (a key given twice is well-formed JSON that flowc refuses: not "invalid JSON")
        twice = isinstance(err, DuplicateKeyError)
        return MigrateResult(
            None,
            (
                Diagnostic(
                    E001,
                    f"{err.message}{where}" if twice else f"invalid JSON: {err.message}{where}",
                    source.name,
                    span,
                    help=None  # (the message says what to do)
                    if twice
                    else "the file must hold one JSON object: an AgentChat component",
                ),
            ),
            "json",
        )
    except json.JSONDecodeError as err:
        span = source.span(err.pos, min(err.pos + 1, len(source.text)))
        return MigrateResult(
            None,
            (
                Diagnostic(
                    E001,
                    f"invalid JSON: {err.msg}",
                    source.name,
                    span,
                    help="the file must hold one JSON object: an AgentChat component",
                ),
            ),
            "json",
        )
    except RecursionError:
        return MigrateResult(
            None, (Diagnostic(E001, "invalid JSON: nested too deeply", source.name),), "json"
        )
    try:
        if is_studio_workflow(data):
            res = translate_studio(data, source.name)
            text = emit(res.migration, source.name.rsplit(".", 1)[0] + ".flow")
            return MigrateResult(text, res.findings, "studio", res.sequences)
        result = translate_component(data, source.name)
    except NotRecognised as err:
        return MigrateResult(None, err.findings, "json")
    text = emit(result.migration, source.name.rsplit(".", 1)[0] + ".flow")
    return MigrateResult(text, result.findings, "json", result.sequences)


__all__ = ["MAX_INPUT_BYTES", "MigrateResult", "migrate_source"]
