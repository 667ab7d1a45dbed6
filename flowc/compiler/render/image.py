"""DOT text to SVG / PNG / PDF through Graphviz's real ``dot``, within a budget.

``dot`` runs as a child process with a time limit (:data:`LAYOUT_TIMEOUT` seconds by
default): past it the child is killed and waited for, and :class:`LayoutTimeout` says so.
A diagram larger than :data:`MAX_LAYOUT_SIZE` nodes and edges is refused before ``dot``
starts (:class:`LayoutTooLarge`, raised by
:class:`~flowc.compiler.render.rendering.Rendering`), and any other failure of ``dot`` is a
:class:`DotFailed` with the first line of what it said. The DOT and Mermaid text need no
layout: they are the fallback each error names.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from flowc.escaping import one_line

IMAGE_FORMATS = ("svg", "png", "pdf")

#: seconds ``dot`` is given to lay out a diagram (``--layout-timeout``): a flow of 1,000
#: rules takes about a second, a few thousand speakers tens of seconds
LAYOUT_TIMEOUT = 30.0
#: nodes and edges ``dot`` is given to lay out (``--max-layout-size``): past it a diagram
#: is refused at once, since its layout would take minutes (the drawing would not be
#: readable either); a flow of 1,000 rules draws about 1,000 to 3,000
MAX_LAYOUT_SIZE = 10_000
#: what of ``dot``'s complaint an error quotes
_MAX_COMPLAINT = 300
#: how often a layout that may be stopped (``render_image(stop=...)``) looks at its event
_STOP_POLL = 0.1

INSTALL_HINT = (
    "Graphviz's `dot` is not installed: install it (Debian/Ubuntu: `apt-get install graphviz`, "
    "macOS: `brew install graphviz`, or `make setup`), or use `-f dot` / `-f mermaid`, "
    "which need no Graphviz"
)


class DotNotFoundError(RuntimeError):
    """Graphviz's ``dot`` binary is not on ``PATH``."""

    def __init__(self) -> None:
        super().__init__(INSTALL_HINT)


class LayoutError(RuntimeError):
    """``dot`` did not draw the diagram: it ran past its budget, or failed. The message
    says what happened; the command that meets it adds how to raise the budget and the
    text formats that need no layout."""


class LayoutTimeout(LayoutError):
    """``dot`` ran past its time budget and was stopped."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        super().__init__(
            f"Graphviz's dot did not lay out the diagram within {seconds:g} seconds, "
            "and was stopped"
        )


class LayoutTooLarge(LayoutError):
    """The diagram has more nodes and edges than ``dot`` is given to lay out."""

    def __init__(self, size: int, limit: int) -> None:
        self.size = size
        self.limit = limit
        super().__init__(
            f"the diagram has {size:,} nodes and edges, more than the {limit:,} "
            "Graphviz's dot is given to lay out"
        )


class DotFailed(LayoutError):
    """``dot`` ended with an error (or was killed: out of memory, a crash)."""


class LayoutStopped(LayoutError):
    """The caller stopped the layout (``render_image``'s ``stop``: a server shutting down)."""

    def __init__(self) -> None:
        super().__init__("Graphviz's dot was stopped before it was done")


def have_dot() -> bool:
    return shutil.which("dot") is not None


def _complaint(stderr: bytes) -> str:
    """The first line of what ``dot`` wrote on stderr that says something, one line, cut."""
    for line in stderr.decode("utf-8", "replace").splitlines():
        if line.strip():
            text = one_line(line.strip())
            return text if len(text) <= _MAX_COMPLAINT else text[: _MAX_COMPLAINT - 3] + "..."
    return "it said nothing"


#: ``prctl``'s option that names the signal a process gets when its parent dies (Linux)
_PR_SET_PDEATHSIG = 1
_SIGKILL = int(signal.SIGKILL)


@functools.cache
def _prctl() -> Any:
    """The C library's ``prctl`` (Linux), made ready to call once; ``None`` elsewhere."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    return prctl


def _die_with(prctl: Any, parent: int) -> None:
    """Run in ``dot``'s process before its program starts: the kernel is to kill it when
    its parent (this process) dies. A flowc killed outright (SIGKILL, the out-of-memory
    killer) cannot kill its ``dot`` itself, and a layout past its budget could run on for
    a long time. The check of the parent afterwards closes the window in which the
    parent died before the request. Between fork and exec the child runs no more than
    this: one call into the C library and one system call. The kernel sends the signal
    when the *thread* that started ``dot`` ends, not only the process: that thread
    waits for ``dot`` (:func:`render_image` returns only once it is reaped), so it never
    ends first."""
    prctl(_PR_SET_PDEATHSIG, _SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


def _dies_with_us() -> Callable[[], None] | None:
    """What ``dot`` runs before its program starts so that it dies with this process
    (:func:`_die_with`); ``None`` where that cannot be asked for (not Linux): there, a
    ``dot`` whose flowc was killed outright runs on to its end."""
    prctl = _prctl()
    return None if prctl is None else functools.partial(_die_with, prctl, os.getpid())


def render_image(
    dot_text: str,
    fmt: str,
    *,
    timeout: float = LAYOUT_TIMEOUT,
    stop: threading.Event | None = None,
) -> bytes:
    """Lay out DOT text with ``dot`` (at most ``timeout`` seconds) and return the image bytes.

    Raises :class:`DotNotFoundError` when ``dot`` is missing, :class:`LayoutTimeout` when it
    runs past ``timeout`` (it is killed and waited for: no process is left behind),
    :class:`LayoutStopped` when ``stop`` is set meanwhile (likewise), and
    :class:`DotFailed` when it fails.

    >>> render_image('digraph { a -> b }', "svg").startswith(b"<?xml")  # doctest: +SKIP
    True
    """
    if fmt not in IMAGE_FORMATS:
        raise ValueError(f"image format must be one of {', '.join(IMAGE_FORMATS)}, got {fmt!r}")
    if not timeout > 0:
        raise ValueError(f"the layout's time budget must be a positive number, got {timeout!r}")
    program = shutil.which("dot")
    if program is None:
        raise DotNotFoundError()
    try:
        proc = subprocess.Popen(
            [program, "-Kdot", f"-T{fmt}"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            preexec_fn=_dies_with_us(),
        )
    except FileNotFoundError:
        raise DotNotFoundError() from None
    except OSError as err:
        raise DotFailed(f"Graphviz's dot could not be started: {err.strerror}") from None
    data: bytes | None = dot_text.encode("utf-8")
    deadline = time.monotonic() + timeout
    try:
        while True:
            left = deadline - time.monotonic()
            try:
                # communicate() may be called again after its timeout (without the input,
                # which it goes on writing): nothing is lost
                out, said = proc.communicate(
                    data, timeout=max(0.0, left if stop is None else min(left, _STOP_POLL))
                )
                break
            except subprocess.TimeoutExpired:
                data = None
                if stop is not None and stop.is_set():
                    raise LayoutStopped() from None
                if time.monotonic() >= deadline:
                    raise LayoutTimeout(timeout) from None
    finally:
        # past the budget, or interrupted (Ctrl-C, a thread's error): never leave dot
        # running, nor unwaited for
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            proc.communicate()
    if proc.returncode != 0:
        how = (
            f"was killed by signal {-proc.returncode}"
            if proc.returncode < 0
            else f"failed (exit {proc.returncode})"
        )
        raise DotFailed(f"Graphviz's dot {how}: {_complaint(said)}")
    return out


def render_svg(dot_text: str, *, timeout: float = LAYOUT_TIMEOUT) -> str:
    """The SVG text of a DOT graph (see :func:`render_image`)."""
    return render_image(dot_text, "svg", timeout=timeout).decode("utf-8")
