"""A plain (blocking) agent function, called in a thread of its own.

An agents file may give a plain function for a speaker (``def triage(turn): ...``), one
that calls a model over HTTP and waits for the answer. Called on the event loop, it
would hold the whole run while it waits: no ``turn_within`` limit could fire, a Ctrl-C
would wait for it, and a run's close could not cancel its turn. So each call runs in a
daemon thread of its own, and the turn awaits its result: a turn the hub cancels (its
time is up, the run closed, Ctrl-C) is dropped at once, and what the function returns
later is thrown away (the thread is never waited for, so it holds up no exit).

What that asks of a plain function: it runs on a thread that did not import it, and on
no event loop. An object bound to the thread that made it (a ``sqlite3`` connection
opened while the agents file loads) is opened in the function instead, and asyncio is
not called from it (``asyncio.ensure_future`` finds no loop): an agent that needs the
loop is written ``async def``, and runs on it.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import signal
import threading
from collections.abc import Awaitable, Callable
from typing import Any


def in_thread(fn: Callable[[Any], Any]) -> Callable[[Any], Awaitable[Any]]:
    """An async callable that calls ``fn(turn)`` in a daemon thread and returns its result
    (awaited, on the event loop, when it is awaitable); what ``fn`` raises is raised.

    >>> import asyncio, threading
    >>> call = in_thread(lambda turn: (turn, threading.current_thread().name))
    >>> asyncio.run(call(7))
    (7, 'flowc-agent')
    """

    async def call(turn: Any) -> Any:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[Any] = loop.create_future()
        context = contextvars.copy_context()

        def work() -> None:
            _leave_signals_to_the_main_thread()
            try:
                result = context.run(fn, turn)
            except StopIteration as err:  # (a future cannot hold it: as a coroutine says it)
                failed = RuntimeError("the agent raised StopIteration")
                failed.__cause__ = err
                _settle(loop, done, None, failed)
            except BaseException as err:  # (``sys.exit`` too: the turn's failure)
                _settle(loop, done, None, err)
            else:
                _settle(loop, done, result, None)

        threading.Thread(target=work, name="flowc-agent", daemon=True).start()
        result = await done
        return await result if inspect.isawaitable(result) else result

    return call


#: the signals a fault raises in the thread that made it: never blocked
_FAULTS = {
    getattr(signal, name)
    for name in ("SIGSEGV", "SIGBUS", "SIGFPE", "SIGILL", "SIGTRAP", "SIGSYS")
    if hasattr(signal, name)
}


def _leave_signals_to_the_main_thread() -> None:
    """Block, in this (agent) thread, every signal a fault does not raise: the kernel may
    hand a process's Ctrl-C to any thread that does not block it, and Python runs its
    handlers in the main thread only when that thread next runs, which the event loop,
    waiting for this very thread, would not do until the function returned. Blocked here,
    it goes to the main thread, and stops the run at once."""
    if hasattr(signal, "pthread_sigmask"):  # (POSIX)
        signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals() - _FAULTS)


def _settle(
    loop: asyncio.AbstractEventLoop,
    done: asyncio.Future[Any],
    result: Any,
    error: BaseException | None,
) -> None:
    """Hand a thread's outcome to the turn awaiting it (nothing, when the turn was
    cancelled meanwhile or the loop is gone)."""

    def settle() -> None:
        if done.done():  # (cancelled: a coroutine it returned is never run)
            if inspect.iscoroutine(result):
                result.close()
            return
        if error is None:
            done.set_result(result)
        else:
            done.set_exception(error)

    with contextlib.suppress(RuntimeError):  # (the loop closed: nobody waits for it)
        loop.call_soon_threadsafe(settle)
