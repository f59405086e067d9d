"""Server-sent events, and noticing a client that went away.

:class:`EventStreamResponse` writes an async iterator of JSON documents as SSE while a
second task listens for ``http.disconnect``; when the client leaves it calls
``on_disconnect`` at once (the server cancels the engine request there, which frees the
slot within one decode step), instead of waiting for the next write to fail.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

log = logging.getLogger(__name__)

DONE = b"data: [DONE]\n\n"


def encode_event(doc: Mapping[str, Any] | None) -> bytes:
    """One SSE ``data:`` event holding ``doc`` as compact JSON (``None``: ``[DONE]``)."""
    if doc is None:
        return DONE
    return b"data: " + json.dumps(doc, separators=(",", ":")).encode("utf-8") + b"\n\n"


async def wait_for_disconnect(receive: Receive) -> None:
    """Return when the client has disconnected (the request body must be read already)."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return


async def race_disconnect(work: Awaitable[Any], receive: Receive,
                          on_disconnect: Callable[[], None]) -> tuple[bool, Any]:
    """Await ``work`` unless the client leaves first.

    Returns:
        ``(True, result)`` when the work finished, ``(False, None)`` when the client left
        (``on_disconnect`` has been called and the work awaited to its end).
    """
    work_task = asyncio.ensure_future(work)
    watcher = asyncio.ensure_future(wait_for_disconnect(receive))
    try:
        done, _ = await asyncio.wait({work_task, watcher},
                                     return_when=asyncio.FIRST_COMPLETED)
        if work_task in done:
            return True, work_task.result()
        on_disconnect()
        with contextlib.suppress(Exception):
            await work_task  # the engine ends the request within one step
        return False, None
    finally:
        watcher.cancel()
        if not work_task.done():
            work_task.cancel()


class EventStreamResponse(Response):
    """A ``text/event-stream`` response fed by an async iterator of SSE-encoded bytes."""

    media_type = "text/event-stream"

    def __init__(self, events: AsyncIterator[bytes], on_disconnect: Callable[[], None],
                 headers: Mapping[str, str] | None = None) -> None:
        self.events = events
        self.on_disconnect = on_disconnect
        self.status_code = 200
        self.background = None
        merged = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
        merged.update(headers or {})
        self.init_headers(merged)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        watcher = asyncio.ensure_future(wait_for_disconnect(receive))
        left = completed = False

        def client_left(_: object = None) -> None:
            nonlocal left
            if not left:
                left = True
                log.info("client disconnected mid-stream; cancelling its request")
                self.on_disconnect()

        watcher.add_done_callback(lambda t: client_left() if not t.cancelled() else None)
        try:
            await send({"type": "http.response.start", "status": self.status_code,
                        "headers": self.raw_headers})
            async for data in self.events:
                if left:
                    break
                await send({"type": "http.response.body", "body": data, "more_body": True})
            if not left:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
                completed = True
        except OSError:
            client_left()
        finally:
            watcher.cancel()
            if not completed:  # however the stream ended early, its request must end too
                client_left()
            aclose = getattr(self.events, "aclose", None)
            if aclose is not None:
                with contextlib.suppress(Exception):
                    await aclose()


class DeltaEvents:
    """Fast encoding of the many identical-but-for-the-text events of one stream.

    ``template`` is a whole chunk document whose text field holds ``PLACEHOLDER``; each
    :meth:`event` splices the JSON-escaped text in, so a token costs one ``json.dumps``
    of a short string instead of one of the whole nested document. The bytes are exactly
    those of :func:`encode_event` on the same document.
    """

    PLACEHOLDER = "\x00loadout-text\x00"

    def __init__(self, template: Mapping[str, Any]) -> None:
        whole = encode_event(template)
        marker = json.dumps(self.PLACEHOLDER).encode("utf-8")
        self._head, found, self._tail = whole.partition(marker)
        if not found:
            raise ValueError("the template does not hold the placeholder")

    def event(self, text: str) -> bytes:
        """The event carrying ``text``."""
        return self._head + json.dumps(text).encode("utf-8") + self._tail
