"""Work off the event loop that stops when its time is up.

``asyncio.wait_for(asyncio.to_thread(f), t)`` answers at ``t`` but leaves ``f`` running
in the pool: a request refused for taking too long kept a thread (and its memory) busy
for as long as it liked, and a few such requests filled the pool every other request
needs. :func:`run_bounded` runs ``f`` in a thread of its own and, past the time, raises
:class:`WorkCancelled` inside that thread (at its next Python instruction), so the work
ends with the request. Work inside one C call ends when that call returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")


class WorkCancelled(BaseException):
    """Raised inside a worker thread whose time ran out (a BaseException, so that no
    ``except Exception`` in the work swallows it)."""


class _Worker(Generic[T]):
    def __init__(self, fn: Callable[[], T], loop: asyncio.AbstractEventLoop,
                 future: asyncio.Future[T]) -> None:
        self.fn, self.loop, self.future = fn, loop, future
        self.lock = threading.Lock()
        self.finished = False
        self.thread = threading.Thread(target=self._run, name="loadout-bounded", daemon=True)

    def _run(self) -> None:
        try:
            try:
                result = self.fn()
            finally:
                with self.lock:  # from here on no cancellation is sent to this thread
                    self.finished = True
        except WorkCancelled:
            return
        except BaseException as exc:  # handed to the awaiting request
            self._hand(_set_exception, exc)
            return
        self._hand(_set_result, result)

    def _hand(self, setter: Callable[[asyncio.Future[T], Any], None], value: Any) -> None:
        # the loop may have closed (the server stopped): then nobody waits
        with contextlib.suppress(RuntimeError):
            self.loop.call_soon_threadsafe(setter, self.future, value)

    def cancel(self) -> bool:
        """Stop the work; False when it had already ended."""
        with self.lock:
            if self.finished or self.thread.ident is None:
                return False
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self.thread.ident),
                                                       ctypes.py_object(WorkCancelled))
            return True


def _set_result(future: asyncio.Future[T], value: T) -> None:
    if not future.done():
        future.set_result(value)


def _set_exception(future: asyncio.Future[T], exc: BaseException) -> None:
    if not future.done():
        future.set_exception(exc)


async def run_bounded(fn: Callable[[], T], timeout_s: float) -> T:
    """``fn()`` in a thread of its own, stopped after ``timeout_s`` seconds.

    Raises:
        TimeoutError: the time ran out (the thread has been told to stop).
        Exception: whatever ``fn`` raised.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()
    worker = _Worker(fn, loop, future)
    worker.thread.start()
    try:
        return await asyncio.wait_for(asyncio.shield(future), timeout_s)
    except (TimeoutError, asyncio.CancelledError):
        if worker.cancel():
            log.info("stopped work that ran past %.3g s", timeout_s)
        raise


def live_workers() -> int:
    """Bounded workers still running (tests check that none is left behind)."""
    return sum(1 for t in threading.enumerate() if t.name == "loadout-bounded")


__all__ = ["WorkCancelled", "live_workers", "run_bounded"]
