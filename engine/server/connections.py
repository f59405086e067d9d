"""Connection limits: a slow or idle client cannot hold one of the server's connections.

- Headers must arrive within ``header_timeout_s`` of the connection opening (or of a
  keep-alive request's first byte), else the connection is closed (slowloris).
- A request body must arrive within ``body_timeout_s`` of its first byte, else 408.
- At most ``max_connections`` connections and requests at once (uvicorn's
  ``limit_concurrency``; past it the server answers 503).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from engine.server.security import ASGIApp, Message, Receive, Scope, Send, error_response

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ConnectionLimits:
    """How long and how many.

    Attributes:
        max_connections: connections (and requests) served at once.
        header_timeout_s: time for a request's headers to arrive.
        body_timeout_s: time for a request's body to arrive.
        keep_alive_s: how long an idle keep-alive connection stays open.
    """

    max_connections: int = 128
    header_timeout_s: float = 10.0
    body_timeout_s: float = 30.0
    keep_alive_s: float = 10.0


DEFAULT_CONNECTION_LIMITS = ConnectionLimits()


class _HeaderTimeoutProtocol(HttpToolsProtocol):
    """uvicorn's HTTP protocol with a deadline for the request headers."""

    header_timeout_s = 10.0

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        self._header_timer: asyncio.TimerHandle | None = None
        self._arm_header_timer()

    def _arm_header_timer(self) -> None:
        if getattr(self, "_header_timer", None) is None:
            self._header_timer = self.loop.call_later(self.header_timeout_s,
                                                      self._on_header_timeout)

    def _disarm_header_timer(self) -> None:
        timer = getattr(self, "_header_timer", None)
        if timer is not None:
            timer.cancel()
            self._header_timer = None

    def _on_header_timeout(self) -> None:
        self._header_timer = None
        if not self.transport.is_closing():
            log.info("closing a connection whose headers did not arrive in %.0f s",
                     self.header_timeout_s)
            self.transport.close()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._arm_header_timer()

    def on_headers_complete(self) -> None:
        self._disarm_header_timer()
        limit = self.limit_concurrency
        if limit is None or (len(self.connections) < limit and len(self.tasks) < limit):
            super().on_headers_complete()
            return
        # over the cap: answer with our 503 document (uvicorn's own is plain text)
        app, self.app, self.limit_concurrency = self.app, _server_busy, None
        try:
            super().on_headers_complete()
        finally:
            self.app, self.limit_concurrency = app, limit

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_header_timer()
        super().connection_lost(exc)


async def _server_busy(scope: Scope, receive: Receive, send: Send) -> None:
    await error_response(send, 503, "the server has too many connections open; retry "
                                    "shortly", "too_many_connections",
                         [(b"retry-after", b"1")])


def http_protocol(limits: ConnectionLimits) -> type[HttpToolsProtocol]:
    """The uvicorn ``http`` protocol class enforcing ``limits.header_timeout_s``."""
    return type("HeaderTimeoutProtocol", (_HeaderTimeoutProtocol,),
                {"header_timeout_s": limits.header_timeout_s})


class BodyTimeout(Exception):
    """Raised inside the app's ``receive`` once a body is late."""


class BodyTimeoutMiddleware:
    """Answers 408 when a request body does not arrive within ``timeout_s``.

    Only reads of an unfinished body are timed: waiting for the client to leave (while an
    answer streams) is not.
    """

    def __init__(self, app: ASGIApp, timeout_s: float) -> None:
        self.app = app
        self.timeout_s = timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout_s
        body_done = False
        started = False

        async def timed_receive() -> Message:
            nonlocal body_done
            if body_done:
                return await receive()
            try:
                message = await asyncio.wait_for(receive(), max(0.0, deadline - loop.time()))
            except TimeoutError:
                raise BodyTimeout() from None
            if message["type"] != "http.request" or not message.get("more_body", False):
                body_done = True
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, timed_receive, tracking_send)
        except BodyTimeout:
            if not started:
                await error_response(send, 408, f"the request body did not arrive within "
                                                f"{self.timeout_s:g} s", "request_timeout")
