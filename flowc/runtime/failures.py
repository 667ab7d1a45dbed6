"""Where an agent's or a plugin's exception came from: the user's file and line.

A run calls the team's own Python: an agent (``--agents``, an AG2 ``Agent``), a custom
condition's ``evaluate``, a custom target's ``resolve``, a class's constructor. When one
raises, the run names the exception and the deepest line of the team's code it went
through (not flowc's, not the standard library's or an installed package's, when there
is such a line): ``KeyError: 'missing' (agents.py:2, in helper)``. The whole traceback
is kept with the failure and shown when asked for (``FLOWC_TRACEBACK=1``).

>>> def helper(d): return d["missing"]
>>> try:
...     helper({})
... except KeyError as err:
...     info = failure_of(err)
>>> info.error.startswith("KeyError: 'missing' (") and "in helper)" in info.error
True
>>> "Traceback (most recent call last)" in info.traceback
True
"""

from __future__ import annotations

import functools
import inspect
import os
import traceback
from pathlib import Path
from typing import Any

import attrs

__all__ = [
    "Failure",
    "PluginFailed",
    "describe_exception",
    "failure_of",
    "flowc_frame",
    "tracebacks_wanted",
    "user_frame",
    "where_defined",
]

#: the most of a traceback kept with a failure (a deep recursion's is cut in the middle)
MAX_TRACEBACK = 16_000

_FLOWC = str(Path(__file__).resolve().parents[1]) + os.sep


@functools.cache
def _library() -> tuple[str, ...]:
    """The folders of the standard library and of installed packages (found on the
    first failure: a run that fails nowhere does not import ``sysconfig``)."""
    import sysconfig

    paths = {sysconfig.get_path(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    return tuple(str(Path(p).resolve()) + os.sep for p in paths if p)


def tracebacks_wanted() -> bool:
    """Whether a failure shows its whole traceback: ``FLOWC_TRACEBACK`` set (not ``0``)."""
    return os.environ.get("FLOWC_TRACEBACK", "") not in ("", "0")


def _shown_path(filename: str) -> str:
    """A path relative to the current folder when it is inside it."""
    try:
        rel = os.path.relpath(filename)
    except ValueError:  # another drive
        return filename
    return filename if rel.startswith("..") else rel


def user_frame(err: BaseException) -> traceback.FrameSummary | None:
    """The deepest frame of ``err``'s traceback in the team's code: outside flowc, the
    standard library and installed packages; else the deepest outside flowc; else None."""
    frames = traceback.extract_tb(err.__traceback__)
    outside = [f for f in frames if not _resolved(f.filename).startswith(_FLOWC)]
    own = [
        f
        for f in outside
        if not _resolved(f.filename).startswith(_library())
        and not f.filename.startswith("<frozen ")
    ]
    found = own or outside
    return found[-1] if found else None


def flowc_frame(err: BaseException) -> traceback.FrameSummary | None:
    """The deepest frame of ``err``'s traceback in flowc's own code, or None: where a
    maintainer looks when flowc itself failed (a bug of its adapter's, however deep in a
    library it ended)."""
    frames = traceback.extract_tb(err.__traceback__)
    found = [f for f in frames if _resolved(f.filename).startswith(_FLOWC)]
    return found[-1] if found else None


def _resolved(filename: str) -> str:
    try:
        return str(Path(filename).resolve())
    except (OSError, ValueError):
        return filename


def describe_exception(err: BaseException) -> str:
    """``Kind: message (FILE:LINE, in FUNCTION)`` at :func:`user_frame`."""
    text = f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
    frame = user_frame(err)
    if frame is None:
        return text
    return f"{text} ({_shown_path(frame.filename)}:{frame.lineno}, in {frame.name})"


def where_defined(obj: Any) -> str | None:
    """``FILE:LINE`` of a class or function's definition, when Python knows it."""
    try:
        filename = inspect.getsourcefile(obj)
        _, line = inspect.getsourcelines(obj)
    except (OSError, TypeError):
        return None
    if filename is None:
        return None
    return f"{_shown_path(filename)}:{max(line, 1)}"


class PluginFailed(Exception):
    """A custom condition's ``evaluate`` or a custom target's ``resolve`` failed while
    a turn was routed: it raised (the plugin's exception is the ``__cause__``), or its
    answer is not one flowc can use. ``kind`` is ``condition`` or ``target``.

    >>> str(PluginFailed("target", "pick", "it chose 7"))
    'target `pick`: it chose 7'
    """

    def __init__(self, kind: str, name: str, problem: str) -> None:
        super().__init__(kind, name, problem)
        self.kind, self.name, self.problem = kind, name, problem

    def __str__(self) -> str:
        return f"{self.kind} `{self.name}`: {self.problem}"


@attrs.frozen
class Failure:
    """An exception as a run records it: ``error`` is :func:`describe_exception`'s line,
    ``where`` the frame's ``FILE:LINE`` (or None), ``traceback`` the whole traceback."""

    error: str
    where: str | None
    traceback: str

    def to_json(self) -> dict[str, Any]:
        return {"error": self.error, "where": self.where, "traceback": self.traceback}


def failure_of(err: BaseException) -> Failure:
    """The :class:`Failure` of ``err``; for an error raised *from* another (a refusal
    that a plugin's exception caused), the cause is what is described, and the error's
    own words lead (through a :class:`PluginFailed`, to the plugin's exception). A
    refusal of flowc's raised from an exception that is no plugin's (its adapter
    failed: a bug in flowc) is placed at the deepest frame of flowc's own code
    (:func:`flowc_frame`), not in the library it ended in; else at :func:`user_frame`."""
    cause = err.__cause__
    plugin = isinstance(cause, PluginFailed)
    if isinstance(cause, PluginFailed):  # (narrows the type, as `plugin` cannot)
        cause = cause.__cause__
    cause = cause if cause is not None and not _is_ours(cause) else None
    inner = cause if cause is not None else err
    own = cause is not None and not plugin and _is_ours(err)
    frame = (flowc_frame(inner) if own else None) or user_frame(inner)
    where = f"{_shown_path(frame.filename)}:{frame.lineno}" if frame is not None else None
    if cause is not None:
        error = _with_location(str(err), frame)
    elif _is_ours(err):
        error = str(err)  # flowc's own refusal says what it is
    else:
        error = describe_exception(err)
    text = "".join(traceback.format_exception(err))
    if len(text) > MAX_TRACEBACK:
        half = MAX_TRACEBACK // 2
        text = text[:half] + "\n  ...\n" + text[-half:]
    return Failure(error, where, text)


def _is_ours(err: BaseException) -> bool:
    """An exception flowc raised about something else (a refusal), not the team's."""
    return type(err).__module__.startswith("flowc.")


def _with_location(message: str, frame: traceback.FrameSummary | None) -> str:
    """``message`` with the cause's place (``frame``) added, unless it already names one."""
    if frame is None:
        return message
    at = f"{_shown_path(frame.filename)}:{frame.lineno}, in {frame.name}"
    return message if at in message else f"{message} ({at})"
