"""Who may talk to the server: bind address policy, API key, body size limit, CORS.

- Loopback only by default; any other bind address requires an API key (one is
  generated when none is given, and shown once by ``loadout serve``).
- Keys are compared in constant time (``hmac.compare_digest`` over bytes).
- Request bodies are limited by an ASGI middleware that counts bytes as they arrive, so
  a client cannot make the server buffer more than the limit, with or without a
  ``Content-Length`` header.
- CORS is off unless an origin is named.
- Local protections (on by default): the ``Host`` header must name the bound address,
  ``localhost``, a loopback address or a configured name (a page whose name was rebound
  to 127.0.0.1 cannot reach the server); a browser ``Origin`` other than the CORS origins
  is refused; POST bodies must be ``application/json`` (a cross-site HTML form cannot
  send that without a CORS preflight, which is refused).
- The desktop app's own engine also has a private key (from the environment, never the
  command line) that is accepted on every route; until the app makes the server public
  (``POST /v1/loadout/access``, with that key) every other request is refused, loopback
  included.
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

from starlette.datastructures import Headers
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import Response

log = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024
# How a parent process hands ``loadout serve`` its key: the environment, which (unlike the
# command line) other local users cannot read.
API_KEY_ENV = "LOADOUT_API_KEY"
# The desktop app's private key for its own engine, and whether that engine starts public.
APP_KEY_ENV = "LOADOUT_APP_KEY"
APP_PUBLIC_ENV = "LOADOUT_APP_PUBLIC"
# The route by which the app (only with its private key) makes its engine public or private.
ACCESS_PATH = "/v1/loadout/access"
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
    bound_host: str = "127.0.0.1"
    allowed_hosts: tuple[str, ...] = ()

    @classmethod
    def resolve(cls, host: str, api_key: str | None, cors_origins: tuple[str, ...] = (),
                max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
                allowed_hosts: tuple[str, ...] = ()) -> SecurityPolicy:
        """The policy for a server bound to ``host``: a key is required off loopback."""
        generated = False
        if not api_key and not is_loopback(host):
            api_key = generate_api_key()
            generated = True
        return cls(api_key=api_key or None, key_generated=generated,
                   cors_origins=tuple(cors_origins), max_body_bytes=max_body_bytes,
                   bound_host=host, allowed_hosts=tuple(h.lower() for h in allowed_hosts))

    def host_allowed(self, host_header: str | None) -> bool:
        """Whether a request's ``Host`` names this server (DNS-rebinding protection).

        Allowed: the bound address, ``localhost``, a loopback address, a configured name
        (``*``: any), and any IP address when bound to every interface (an address, unlike
        a name, cannot be rebound by a web page).
        """
        if "*" in self.allowed_hosts:
            return True
        if not host_header:
            return False
        name = _host_name(host_header)
        if name in ("localhost", self.bound_host.lower().strip("[]")) \
                or name in self.allowed_hosts:
            return True
        try:
            address = ipaddress.ip_address(name)
        except ValueError:
            return False
        return address.is_loopback or self.bound_host.strip("[]") in ("0.0.0.0", "::", "")

    def origin_allowed(self, origin: str) -> bool:
        """Whether a browser page from ``origin`` may call the server (the CORS list)."""
        from engine.server.llamacpp.cors import origin_listed  # 'localhost' too

        return origin_listed(origin, self.cors_origins)

    def key_matches(self, presented: str | None) -> bool:
        """Constant-time check of a presented key (always true when no key is set)."""
        if self.api_key is None:
            return True
        return _same_key(presented, self.api_key)


def _same_key(presented: str | None, key: str) -> bool:
    # a missing key is compared too, so it takes as long as a wrong one
    return hmac.compare_digest((presented or "").encode("utf-8"), key.encode("utf-8"))


class AppAccess:
    """The desktop app's hold on its own engine (mutable: the app switches it at run time).

    Attributes:
        app_key: the app's private key, accepted on every route (None: no app, as when
            ``loadout serve`` runs from a terminal).
        public: whether requests without the app key are served (under the policy's API
            key, if any); always true without an app key.
    """

    def __init__(self, app_key: str | None = None, public: bool = False) -> None:
        self.app_key = app_key or None
        self.public = public or self.app_key is None

    def is_app(self, presented: str | None) -> bool:
        """Constant-time check that ``presented`` is the app's key."""
        return self.app_key is not None and _same_key(presented, self.app_key)


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


def _host_name(host_header: str) -> str:
    """The name in a ``Host`` header, without the port, lower case."""
    text = host_header.strip().lower()
    if text.startswith("["):
        return text[1:text.find("]")] if "]" in text else text[1:]
    if text.count(":") == 1:
        text = text.split(":", 1)[0]
    return text.rstrip(".")


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


async def error_response(send: Send, status: int, message: str, code: str,
                         extra_headers: list[tuple[bytes, bytes]] | None = None) -> None:
    """Send a whole OpenAI-style error answer."""
    err_type = {401: "authentication_error", 403: "permission_error"}.get(
        status, "invalid_request_error" if status < 500 else "server_error")
    await _send_json(send, status, _error_body(message, err_type, code), extra_headers)


class AuthMiddleware:
    """Rejects requests without the right key with 401 (``/health`` and CORS preflight
    excepted).

    The app's key (``access``) passes everywhere; the access route wants it; while the
    app's engine is not public nothing else passes; otherwise the policy's API key rules.
    """

    def __init__(self, app: ASGIApp, policy: SecurityPolicy,
                 access: AppAccess | None = None) -> None:
        self.app = app
        self.policy = policy
        self.access = access or AppAccess()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in PUBLIC_PATHS \
                or scope["method"] == "OPTIONS":
            await self.app(scope, receive, send)
            return
        presented = presented_key(scope.get("headers", []))
        if self.access.is_app(presented):
            await self.app(scope, receive, send)
            return
        if scope["path"] == ACCESS_PATH and self.access.app_key is None:
            await _send_json(send, 404, _error_body(
                f"{ACCESS_PATH}: this server was not started by the app",
                "invalid_request_error", "not_found"))
            return
        if scope["path"] == ACCESS_PATH or not self.access.public:
            message = "this server answers only the app that started it (turn its server on)"
        elif self.policy.key_matches(presented):
            await self.app(scope, receive, send)
            return
        else:
            message = "missing or wrong API key (send 'Authorization: Bearer KEY')"
        body = _error_body(message, "authentication_error", "invalid_api_key")
        await _send_json(send, 401, body, [(b"www-authenticate", b"Bearer")])


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


class JsonCORSMiddleware(CORSMiddleware):
    """Starlette's CORS middleware, whose refused preflight answers in the API's error
    shape (403 for an origin not allowed, 400 for a method or header) instead of text."""

    def preflight_response(self, request_headers: Headers) -> Response:
        response = super().preflight_response(request_headers)
        if response.status_code < 400:
            return response
        refused = bytes(response.body).decode("utf-8", "replace").removeprefix(
            "Disallowed CORS ")
        origin = "origin" in refused.split(", ")
        body = _error_body(
            f"this cross-origin request is refused ({refused} not allowed; start the server "
            "with --cors ORIGIN to allow an origin)",
            "permission_error" if origin else "invalid_request_error",
            "origin_not_allowed" if origin else "cors_refused")
        headers = {k: v for k, v in response.headers.items()
                   if k.lower() not in ("content-length", "content-type")}
        return Response(body, status_code=403 if origin else 400, headers=headers,
                        media_type="application/json")


JSON_TYPES = (b"application/json",)


class LocalGuardMiddleware:
    """Refuses requests a web page could forge against a local server.

    403 when ``Host`` does not name this server or ``Origin`` is not a CORS origin; 415
    when a POST body is not ``application/json``.
    """

    def __init__(self, app: ASGIApp, policy: SecurityPolicy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {name.lower(): value for name, value in scope.get("headers", [])}
        host = headers.get(b"host")
        if not self.policy.host_allowed(host.decode("latin-1") if host else None):
            await _send_json(send, 403, _error_body(
                "the Host header does not name this server (start it with --allow-host "
                "NAME to serve that name)", "permission_error", "host_not_allowed"))
            return
        origin = headers.get(b"origin")
        if origin is not None and not self.policy.origin_allowed(origin.decode("latin-1")):
            await _send_json(send, 403, _error_body(
                "requests from this web origin are refused (start the server with --cors "
                "ORIGIN to allow it)", "permission_error", "origin_not_allowed"))
            return
        if scope["method"] == "POST":
            media = headers.get(b"content-type", b"").split(b";")[0].strip().lower()
            if media not in JSON_TYPES:
                await _send_json(send, 415, _error_body(
                    "send the body as JSON with 'Content-Type: application/json'",
                    "invalid_request_error", "unsupported_media_type"))
                return
        await self.app(scope, receive, send)
