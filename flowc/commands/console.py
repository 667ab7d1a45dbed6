"""What every subcommand shares: exit codes, usage errors, reading inputs, printing
findings (coloured only on a terminal) and writing outputs.

Command modules import this module, never :mod:`flowc.cli`: the command line sits
on top and loads the command modules, so nothing imports back up into it.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import attrs

from flowc.diagnostics import (
    Diagnostic,
    decode_source,
    iter_json,
    iter_text,
    render_concise,
    render_github,
    render_sarif,
)
from flowc.escaping import written_as
from flowc.project.errors import UsageError as UsageError  # the commands raise it too
from flowc.source import SourceFile

if TYPE_CHECKING:
    from flowc.compiler.compiled import CompiledFlow

EXIT_OK, EXIT_ERRORS, EXIT_USAGE = 0, 1, 2
#: stdout was closed before the command was done (``flowc log | head -1``): the status a
#: shell reports for a program ended by SIGPIPE (128 + 13), as ``cat`` or ``git`` end
EXIT_PIPE = 141


# ── terminal ─────────────────────────────────────────────────────────────────


def isatty(stream: Any) -> bool:
    """Whether ``stream`` is a terminal (``False`` for anything that cannot say: a closed
    or detached stream, an object without ``isatty``)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def use_color(stream: TextIO, environ: Mapping[str, str] | None = None) -> bool:
    """Whether to colour what goes to ``stream``.

    ``NO_COLOR`` (set and not empty) turns colour off, whatever else is set;
    ``FORCE_COLOR`` (set and not empty) turns it on even into a pipe or a file;
    otherwise colour only goes to a terminal whose ``TERM`` is not ``dumb``.

    >>> import io
    >>> use_color(io.StringIO(), {})
    False
    >>> use_color(io.StringIO(), {"FORCE_COLOR": "1"})
    True
    >>> use_color(io.StringIO(), {"FORCE_COLOR": "1", "NO_COLOR": "1"})
    False
    """
    env = os.environ if environ is None else environ
    if env.get("NO_COLOR"):
        return False
    if env.get("FORCE_COLOR"):
        return True
    if env.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty is not None and isatty())
    except (OSError, ValueError):  # a closed or detached stream
        return False


# ── input ────────────────────────────────────────────────────────────────────


def read_source(path: str) -> tuple[SourceFile | None, tuple[Diagnostic, ...]]:
    """Read a file (``-`` is stdin) as UTF-8.

    A missing or unreadable file, one that is not a regular file, or one larger than
    :data:`flowc.inputs.MAX_INPUT_BYTES` raises :class:`UsageError`; text that is not UTF-8
    is an E001 diagnostic pointing at the first bad byte.
    """
    return read_source_bytes(path)[1:]


def read_source_bytes(path: str) -> tuple[bytes, SourceFile | None, tuple[Diagnostic, ...]]:
    """:func:`read_source`, with the bytes read (what ``flowc fmt`` compares its output
    with: the text flowc reads has each lone carriage return made a newline)."""
    from flowc.inputs import InputFileError, read_bytes

    name = "<stdin>" if path == "-" else path
    try:
        # regular files (and stdin) only, at most 16 MiB: never /dev/zero or a FIFO
        data = read_bytes(path)
    except InputFileError as err:
        raise UsageError(str(err)) from None
    return (data, *decode_source(name, data))


__all__ = ["decode_source"]  # re-exported: the commands decode through this module


def folder_files(
    folder: str, suffixes: tuple[str, ...], onerror: Callable[[OSError], None] | None = None
) -> list[str]:
    """The files a command reads in ``folder``, the one way every command walks a folder
    (``check DIR``, ``fmt DIR``, ``test DIR``): :func:`flowc.inputs.walk_files` (those
    ending in ``suffixes``, sorted; hidden folders and folder links not entered), each
    symbolic link that leads out of the folder skipped with a note on stderr, never read.
    """
    from flowc.inputs import walk_files

    found, outside = walk_files(folder, suffixes, onerror)
    for link in outside:
        print(f"{link}: skipped: a symbolic link to a file outside {folder}", file=sys.stderr)
    return found


@attrs.define
class Inputs:
    """The files a command reads, and the paths that could not be read (each said as
    ``PATH: reason``): a folder's unreadable entry is one of them, and the command goes on
    with the rest (:func:`collect`, :meth:`read`), then exits 2."""

    files: list[tuple[str, bool]] = attrs.field(factory=list)  # (path, found in a folder walk)
    problems: list[str] = attrs.field(factory=list)
    #: each path that could not be read, with its reason (kept apart: a report names the
    #: path, never cut out of the message, which may hold ``: `` itself)
    unread: list[tuple[str, str]] = attrs.field(factory=list)

    def cannot(self, where: str, why: str, path: str | None = None) -> None:
        """``where`` (the ``path`` given, if it is said otherwise: ``<stdin>`` for ``-``)
        could not be read, for the reason ``why``."""
        self.problems.append(f"{where}: {why}")
        self.unread.append((where if path is None else path, why))

    def read(self, path: str) -> tuple[bytes, SourceFile | None, tuple[Diagnostic, ...]] | None:
        """:func:`read_source_bytes`, or None with the reason kept in :attr:`problems`."""
        try:
            return read_source_bytes(path)
        except UsageError as err:
            where = "<stdin>" if path == "-" else path
            self.cannot(where, str(err).removeprefix(f"{where}: "), path)
            return None

    def report(self, command: str) -> None:
        """Each path that could not be read, on stderr, as ``check`` says them."""
        for problem in self.problems:
            print(f"flowc {command}: error: {problem}", file=sys.stderr)


def collect(paths: Sequence[str], suffixes: tuple[str, ...] = (".flow",)) -> Inputs:
    """Files named, and those ending in ``suffixes`` under folders (:func:`folder_files`);
    a folder or entry that cannot be read, and a path that is not there, are
    :attr:`Inputs.problems` (the way ``check``, ``fmt`` and ``test`` read their inputs)."""
    out = Inputs()
    for path in paths:
        if path != "-" and os.path.isdir(path):

            def onerror(err: OSError) -> None:
                out.cannot(str(err.filename), f"cannot read ({err.strerror})")

            # a link leading out of the folder is never read (its text could end in a report)
            for f in folder_files(path, suffixes, onerror):
                if os.path.exists(f):
                    out.files.append((f, True))
                else:  # (a link to nothing, or to itself: said as a path named is)
                    out.cannot(f, _missing(f))
        elif path != "-" and not os.path.exists(path):
            out.cannot(path, _missing(path))
        else:
            out.files.append((path, False))
    return out


def _missing(path: str) -> str:
    """Why ``path``, which :func:`os.path.exists` does not find, is not there: a symbolic
    link to itself is "too many levels of symbolic links", a link to nothing says so, and
    neither is a missing file."""
    try:
        os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            return "cannot read (a symbolic link to something that is not there)"
    except OSError as err:
        return f"cannot read ({err.strerror or err})"
    return "no such file or folder"


def no_inputs(paths: Sequence[str], kinds: str, purpose: str) -> UsageError:
    """The error of a command given folders that hold no file it reads (an empty input
    set is exit 2 in every command, never a clean report of nothing).

    >>> str(no_inputs(["flows", "more"], ".flow files", "nothing to check"))
    'no .flow files in flows, more: nothing to check'
    """
    return UsageError(f"no {kinds} in {', '.join(paths)}: {purpose}")


def is_json_input(path: str, text: str | None = None) -> bool:
    """A JSON graph rather than a ``.flow``: by suffix, else by a leading ``{``."""
    if path.endswith(".json"):
        return True
    return text is not None and not path.endswith(".flow") and text.lstrip().startswith("{")


# ── output ───────────────────────────────────────────────────────────────────


def print_diagnostics(
    diags: Sequence[Diagnostic],
    sources: dict[str, SourceFile],
    fmt: str = "text",
    stream: TextIO | None = None,
) -> None:
    """Findings in one of the output formats, on stderr unless told otherwise."""
    out = stream or sys.stderr
    if fmt == "text":
        # one finding at a time: a report of many findings is never held whole
        encoding = written_as(out)
        out.writelines(iter_text(diags, sources, color=use_color(out), encoding=encoding))
        return
    if fmt == "json":
        out.writelines(iter_json(diags))
        return
    if fmt == "concise":
        text = render_concise(diags)
    elif fmt == "sarif":
        text = render_sarif(diags)
    elif fmt == "github":
        text = render_github(diags)
    else:  # pragma: no cover - argparse restricts the choices
        raise UsageError(f"unknown format {fmt}")
    out.write(text)


def check_output(out: str | None, option: str = "-o", inputs: Sequence[str | None] = ()) -> None:
    """Refuse (:class:`UsageError`, exit 2) an output file whose folder does not exist, or
    is not a folder: flowc creates no folders, as a compiler's ``-o`` does not. Refuse as
    well an output that is one of the command's ``inputs`` (the same file, however it is
    spelled: a relative path, a symbolic link or a hard link), which writing would
    destroy. Commands check each output before they do their work, so nothing is
    computed for nothing and nothing is written. ``None`` and ``-`` (stdout) always pass.

    >>> try:
    ...     check_output("no-such-folder/out.json")
    ... except UsageError as err:
    ...     print(err)
    -o no-such-folder/out.json: no such folder: no-such-folder (create it first)
    """
    if out is None or out == "-":
        return
    folder = Path(out).parent
    if not folder.is_dir():
        if folder.exists() or any(p.exists() and not p.is_dir() for p in folder.parents):
            raise UsageError(f"{option} {out}: {folder} is not a folder")
        raise UsageError(f"{option} {out}: no such folder: {folder} (create it first)")
    for given in inputs:
        if given is not None and given != "-" and _same_file(out, given):
            raise UsageError(
                f"{option} {out}: the same file as the input {given}: writing it would "
                "destroy the input (name another file)"
            )


def check_distinct_outputs(outputs: Sequence[tuple[str, str | None]]) -> None:
    """Refuse two output options (``(option, file)`` pairs) that name the same file: the
    second would overwrite the first."""
    named = [(option, out) for option, out in outputs if out is not None and out != "-"]
    for i, (option, out) in enumerate(named):
        for other_option, other in named[:i]:
            if os.path.realpath(out) == os.path.realpath(other) or _same_file(out, other):
                raise UsageError(
                    f"{option} {out}: the same file as {other_option} {other}: "
                    "give each output its own file"
                )


def _same_file(a: str, b: str) -> bool:
    """Whether two paths are one file (both exist and are the same, links followed)."""
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):  # one of them does not exist (yet), or cannot be read
        return False


def write_output(text: str, out: str | None, option: str = "-o") -> None:
    """``text`` to the file ``out`` (its folder must exist: :func:`check_output`), or to
    stdout for None or ``-``."""
    if out is None or out == "-":
        sys.stdout.write(text)
        return
    # (a name read from a path that is not UTF-8 is written back as the bytes it was)
    write_file(text.encode("utf-8", "surrogateescape"), out, option)


def write_file(data: bytes, out: str, option: str = "-o") -> None:
    """``data`` to the file ``out`` (its folder must exist: :func:`check_output`), whole
    or not at all: into a temporary file beside it, then put in its place, so a failed or
    interrupted write leaves what was there. A symbolic link is written where it points
    and stays a link; a file that was there keeps its permissions; a device or a pipe
    (``/dev/null``) is written to directly."""
    check_output(out, option)
    target = os.path.realpath(out)
    try:
        if os.path.exists(target) and not os.path.isfile(target):
            with open(target, "wb") as stream:
                stream.write(data)
            return
        _replace(target, data)
    except OSError as err:
        raise UsageError(f"{out}: cannot write ({err.strerror or err})") from None


def _replace(target: str, data: bytes) -> None:
    """Write ``data`` to a new file in ``target``'s folder, then rename it to ``target``."""
    import secrets

    folder, name = os.path.split(target)
    temporary = os.path.join(folder, f".{name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    # created as a plain open would (the umask applies), never over an existing file
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as stream:
            stream.write(data)
        with contextlib.suppress(FileNotFoundError):  # a new file: the umask's mode
            os.chmod(temporary, os.stat(target).st_mode & 0o7777)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def parse_bindings(items: Sequence[str] | None) -> dict[str, str]:
    """``--bind NAME=ID`` values as a dict; one speaker bound twice to different ids is
    refused (the last would win silently), the same binding repeated is one.

    >>> parse_bindings(["a=x", "b=y", "a=x"])
    {'a': 'x', 'b': 'y'}
    >>> parse_bindings(["a=x", "a=y"])
    Traceback (most recent call last):
    flowc.project.errors.UsageError: --bind binds `a` twice: to 'x' and to 'y'
    """
    out: dict[str, str] = {}
    for item in items or ():
        name, sep, agent_id = item.partition("=")
        if not sep or not name or not agent_id:
            raise UsageError(f"--bind takes NAME=ID, got {item!r}")
        if out.get(name, agent_id) != agent_id:
            raise UsageError(f"--bind binds `{name}` twice: to {out[name]!r} and to {agent_id!r}")
        out[name] = agent_id
    return out


# ── plugins ──────────────────────────────────────────────────────────────────


def report_unimplemented(compiled: CompiledFlow, filename: str) -> bool:
    """Print what the flow's custom names lack for a run; ``True`` when something does."""
    from flowc.runtime.plugins import implementation_problems, implementations_text

    problems = implementation_problems(compiled, filename)
    if problems:
        sys.stderr.write(implementations_text(problems))
    return bool(problems)
