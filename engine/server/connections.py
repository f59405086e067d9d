"""Connection limits: no slow, idle or anonymous crowd of clients can starve the server.

- Only requests being *served* count toward ``max_connections`` (their body has arrived
  and their answer has not ended): a connection that is idle, still sending its headers or
  still sending its body costs a socket and a timer, nothing more. Past the cap the
  server answers 503 ``too_many_connections`` with ``Retry-After``; a request carrying the
  desktop app's private key, and ``/health``, are served even then.
- Headers must arrive within ``header_timeout_s`` of the connection opening (or of a
  keep-alive request's first byte), else the connection is closed (slowloris).
- A request body must arrive within ``body_timeout_s`` of its first byte, else 408.
- At most ``max_open`` sockets are open; a new one past that closes the oldest connection
  that is not in the middle of a request (an idle crowd makes room for new clients rather
  than locking them out), never one the desktop app's key has used.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from engine.server.security import (
    ASGIApp,
    Message,
    Receive,
    Scope,
    Send,
    error_response,
    presented_key,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ConnectionLimits:
    """How long and how many.

    Attributes:
        max_connections: requests served at once (body received, answer not ended).
        max_open: sockets open at once (idle, sending or served).
        header_timeout_s: time for a request's headers to arrive.
        body_timeout_s: time for a request's body to arrive.
        keep_alive_s: how long an idle keep-alive connection stays open.
    """

    max_connections: int = 128
    max_open: int = 768
    header_timeout_s: float = 5.0
    body_timeout_s: float = 30.0
    keep_alive_s: float = 10.0


DEFAULT_CONNECTION_LIMITS = ConnectionLimits()

KeyCheck = Callable[[str | None], bool]


def _serving(conn: Any) -> bool:
    """Whether a connection holds a request being served (its body is all here)."""
    cycle = getattr(conn, "cycle", None)
    return cycle is not None and not cycle.response_complete and not cycle.more_body


def _is_health(url: bytes) -> bool:
    """``/health`` answers at once and says little: it is never refused for being busy."""
    return url.split(b"?", 1)[0] == b"/health"


def _idle(conn: Any) -> bool:
    """Whether a connection is between requests or still sending a request's headers."""
    cycle = getattr(conn, "cycle", None)
    return cycle is None or cycle.response_complete


class _LimitedProtocol(HttpToolsProtocol):
    """uvicorn's HTTP protocol with a header deadline, a cap on requests being served
    (not on connections), and a cap on open sockets that closes the oldest idle one."""

    limits = DEFAULT_CONNECTION_LIMITS
    is_app_key: KeyCheck = staticmethod(lambda key: False)

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        self.limit_concurrency = None  # uvicorn's own cap counts idle connections: ours
        self._opened_at = time.monotonic()
        self._header_timer: asyncio.TimerHandle | None = None
        self._arm_header_timer()
        if len(self.connections) > self.limits.max_open:
            self._make_room()

    def _make_room(self) -> None:
        idle = [c for c in self.connections if c is not self and _idle(c)
                and not getattr(c, "_app", False) and not c.transport.is_closing()]
        if not idle:
            log.info("refusing a connection: %d open, all of them busy",
                     len(self.connections))
            self.transport.close()
            return
        oldest = min(idle, key=lambda c: getattr(c, "_opened_at", 0.0))
        oldest.transport.close()

    def _arm_header_timer(self) -> None:
        if getattr(self, "_header_timer", None) is None:
            self._header_timer = self.loop.call_later(self.limits.header_timeout_s,
                                                      self._on_header_timeout)

    def _disarm_header_timer(self) -> None:
        timer = getattr(self, "_header_timer", None)
        if timer is not None:
            timer.cancel()
            self._header_timer = None

    def _on_header_timeout(self) -> None:
        self._header_timer = None
        if not self.transport.is_closing():
            log.debug("closing a connection whose headers did not arrive in %.0f s",
                      self.limits.header_timeout_s)
            self.transport.close()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._arm_header_timer()

    def on_headers_complete(self) -> None:
        self._disarm_header_timer()
        if self.is_app_key(presented_key(self.headers)):
            self._app = True  # the app's connection: never closed to make room
            super().on_headers_complete()
            return
        serving = sum(1 for c in self.connections if _serving(c))
        if serving < self.limits.max_connections or _is_health(self.url):
            super().on_headers_complete()
            return
        # over the cap: answer with our 503 document (uvicorn's own is plain text)
        log.info("answering 503: %d requests are being served", serving)
        app, self.app = self.app, _server_busy
        try:
            super().on_headers_complete()
        finally:
            self.app = app

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_header_timer()
        super().connection_lost(exc)


async def _server_busy(scope: Scope, receive: Receive, send: Send) -> None:
    await error_response(send, 503, "the server is answering as many requests as it "
                                    "allows; retry shortly", "too_many_connections",
                         [(b"retry-after", b"1")])


def http_protocol(limits: ConnectionLimits,
                  is_app_key: KeyCheck | None = None) -> type[HttpToolsProtocol]:
    """The uvicorn ``http`` protocol class enforcing ``limits`` (``is_app_key``: whether a
    presented key is the desktop app's own, which is never refused for being busy)."""
    attrs: dict[str, Any] = {"limits": limits}
    if is_app_key is not None:
        attrs["is_app_key"] = staticmethod(is_app_key)
    return type("LimitedProtocol", (_LimitedProtocol,), attrs)


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
