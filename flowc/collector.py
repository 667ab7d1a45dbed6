"""The cycle collector's policy: the one module of flowc that switches Python's cycle
collector (:mod:`gc`), for the programs whose process flowc owns.

The collector is the interpreter's, shared by every thread and every library in the
process, so only flowc's entry points set it: the ``flowc`` command (:mod:`flowc.cli`,
while its modules load and for one file's batch work), and the language server's
loop (:mod:`flowc.lsp.core`, between analyses). Library functions
(:func:`flowc.parse`, :func:`flowc.compile_flow`, :func:`flowc.check`, the language
server's analysis itself) leave it as they found it; an architecture test keeps
``gc`` out of every other module.

Why an entry point would switch it at all: a command builds a large model of a file
(its tree, the compiled graph, the checker's states) that stays alive until the
command ends, and each pass of the collector walks all of it again; the same for the
modules a command loads at start-up. None of that is garbage, so the passes find
nothing.

Every function works on an interpreter without :func:`gc.freeze` (it then does
without the freezing)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["collect_all", "freeze", "hold", "paused", "release"]


@contextmanager
def paused() -> Iterator[None]:
    """No automatic passes of the collector during the ``with`` block (nested uses are
    fine); as it was afterwards, so the cyclic garbage of one batch job is collected
    before the next. For an entry point's own process only.

    >>> with paused():
    ...     gc.isenabled()
    False
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def hold() -> bool:
    """Turn automatic collection off while a program's modules load; True when this
    turned it off (then call :func:`release` with it), False when it was off already
    (a caller that runs with it off keeps it so)."""
    if not gc.isenabled():
        return False
    gc.disable()
    return True


def release(held: bool) -> None:
    """The program's modules are loaded and it starts its work: what was loaded is
    moved out of the collector's sight (modules, classes and code live as long as the
    process) and automatic collection runs again, if :func:`hold` turned it off.

    >>> was = gc.isenabled()
    >>> release(hold()); gc.isenabled() == was
    True
    """
    if held:
        freeze()
        gc.enable()


def freeze() -> None:
    """Move every object alive now out of the collector's generations (:func:`gc.freeze`,
    where the interpreter has it): later passes do not walk them again."""
    freeze_all = getattr(gc, "freeze", None)
    if freeze_all is not None:
        freeze_all()


def collect_all() -> None:
    """A full pass over everything, frozen objects included, which stay frozen after."""
    unfreeze = getattr(gc, "unfreeze", None)
    if unfreeze is not None:
        unfreeze()
    gc.collect()
    freeze()
