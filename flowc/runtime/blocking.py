"""A plain (blocking) agent function, called in a thread of its own.

An agents file may give a plain function for a speaker (``def triage(turn): ...``), one
that calls a model over HTTP and waits for the answer. Called on the event loop, it
would hold the whole run while it waits: no ``turn_within`` limit could fire, a Ctrl-C
would wait for it, and a run's close could not cancel its turn. So each call runs in a
daemon thread of its own, and the turn awaits its result: a turn the hub cancels (its
time is up, the run closed, Ctrl-C) is dropped at once, and what the function returns
later is thrown away (the thread is never waited for, so it holds up no exit).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
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
            try:
                result = context.run(fn, turn)
            except BaseException as err:  # (``sys.exit`` too: the turn's failure)
                _settle(loop, done, None, err)
            else:
                _settle(loop, done, result, None)

        threading.Thread(target=work, name="flowc-agent", daemon=True).start()
        result = await done
        return await result if inspect.isawaitable(result) else result

    return call


def _settle(
    loop: asyncio.AbstractEventLoop,
    done: asyncio.Future[Any],
    result: Any,
    error: BaseException | None,
) -> None:
    """Hand a thread's outcome to the turn awaiting it (nothing, when the turn was
    cancelled meanwhile or the loop is gone)."""

    def settle() -> None:
        if done.done():
            return
        if error is None:
            done.set_result(result)
        else:
            done.set_exception(error)

    with contextlib.suppress(RuntimeError):  # (the loop closed: nobody waits for it)
        loop.call_soon_threadsafe(settle)
