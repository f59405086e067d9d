"""Who may talk to the server: bind address policy, API key, body size limit, CORS.

- Loopback only by default; any other bind address requires an API key (one is
  generated when none is given, and shown once by ``loadout serve``).
- Keys are compared in constant time (``hmac.compare_digest`` over bytes).
- Request bodies are limited by an ASGI middleware that counts bytes as they arrive, so
  a client cannot make the server buffer more than the limit, with or without a
  ``Content-Length`` header.
- CORS is off unless an origin is named.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024
KEY_PREFIX = "sk-loadout-"
# Paths anyone may read without a key: liveness for load balancers and the GUI's probe.
PUBLIC_PATHS = frozenset({"/health"})


def is_loopback(host: str) -> bool:
    """True when ``host`` only accepts connections from this machine."""
    if host in ("localhost", "ip6-localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def generate_api_key() -> str:
    """A new random key (256 bits), recognisable by its prefix."""
    return KEY_PREFIX + secrets.token_urlsafe(32)


@dataclass(frozen=True)
class SecurityPolicy:
    """The resolved access rules of one server.

    Attributes:
        api_key: the key clients must send as ``Authorization: Bearer KEY`` (or
            ``X-Api-Key``), or ``None`` for no key.
        key_generated: the key was generated here (so the caller shows it once).
        cors_origins: origins allowed by CORS; empty means CORS is off.
        max_body_bytes: the largest request body accepted.
    """

    api_key: str | None = None
    key_generated: bool = False
    cors_origins: tuple[str, ...] = ()
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES

    @classmethod
    def resolve(cls, host: str, api_key: str | None, cors_origins: tuple[str, ...] = (),
                max_body_bytes: int = DEFAULT_MAX_BODY_BYTES) -> SecurityPolicy:
        """The policy for a server bound to ``host``: a key is required off loopback."""
        generated = False
        if not api_key and not is_loopback(host):
            api_key = generate_api_key()
            generated = True
        return cls(api_key=api_key or None, key_generated=generated,
                   cors_origins=tuple(cors_origins), max_body_bytes=max_body_bytes)

    def key_matches(self, presented: str | None) -> bool:
        """Constant-time check of a presented key (always true when no key is set)."""
        if self.api_key is None:
            return True
        if presented is None:
            # Compare anyway so a missing key takes as long as a wrong one.
            presented = ""
        return hmac.compare_digest(presented.encode("utf-8"), self.api_key.encode("utf-8"))


def presented_key(headers: list[tuple[bytes, bytes]]) -> str | None:
    """The key a request carries: ``Authorization: Bearer K`` or ``X-Api-Key: K``."""
    for name, value in headers:
        lname = name.lower()
        if lname == b"authorization":
            text = value.decode("latin-1").strip()
            scheme, _, token = text.partition(" ")
            if scheme.lower() == "bearer":
                return token.strip()
        elif lname == b"x-api-key":
            return value.decode("latin-1").strip()
    return None


def _error_body(message: str, err_type: str, code: str) -> bytes:
    doc = {"error": {"message": message, "type": err_type, "param": None, "code": code}}
    return json.dumps(doc).encode("utf-8")


async def _send_json(send: Send, status: int, body: bytes,
                     extra_headers: list[tuple[bytes, bytes]] | None = None) -> None:
    headers = [(b"content-type", b"application/json"),
               (b"content-length", str(len(body)).encode())]
    headers += extra_headers or []
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class AuthMiddleware:
    """Rejects requests without the right key with 401 (``/health`` and CORS preflight
    excepted)."""

    def __init__(self, app: ASGIApp, policy: SecurityPolicy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.policy.api_key is None \
                or scope["path"] in PUBLIC_PATHS or scope["method"] == "OPTIONS":
            await self.app(scope, receive, send)
            return
        if not self.policy.key_matches(presented_key(scope.get("headers", []))):
            body = _error_body("missing or wrong API key (send 'Authorization: Bearer KEY')",
                               "authentication_error", "invalid_api_key")
            await _send_json(send, 401, body, [(b"www-authenticate", b"Bearer")])
            return
        await self.app(scope, receive, send)


class BodyTooLarge(Exception):
    """Raised inside the app's ``receive`` once a body passes the limit."""


class BodyLimitMiddleware:
    """Answers 413 to bodies over ``limit`` bytes, counting as they stream in."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", []):
            if name.lower() == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = 0
                if declared > self.limit:
                    await self._reject(send)
                    return
        received = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    raise BodyTooLarge()
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except BodyTooLarge:
            if not started:
                await self._reject(send)

    async def _reject(self, send: Send) -> None:
        body = _error_body(f"request body larger than {self.limit} bytes",
                           "invalid_request_error", "request_too_large")
        await _send_json(send, 413, body)
