"""The app's HTTP client of the engine process: the same API every external client uses.

Plain functions and classes, no Qt: they block, so they only ever run in worker threads.
:class:`ChatStream` reads a streamed ``/v1/chat/completions`` answer as server-sent events;
:meth:`ChatStream.cancel` (from any thread) shuts the socket down, which ends the blocking
read at once and tells the server to cancel the request (its slot is freed within a step).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import logging
import socket
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

log = logging.getLogger(__name__)


class EngineHttpError(RuntimeError):
    """The engine answered with an error status, or could not be reached."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Endpoint:
    """Where an engine process answers: ``url`` is ``http://HOST:PORT`` (no ``/v1``)."""

    url: str
    model: str = ""
    api_key: str | None = None

    @property
    def base_url(self) -> str:
        """The OpenAI base URL (``.../v1``)."""
        return f"{self.url}/v1"

    def headers(self) -> dict[str, str]:
        """Request headers, with the key when one is set."""
        out = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            out["Authorization"] = f"Bearer {self.api_key}"
        return out

    def connection(self, timeout: float) -> http.client.HTTPConnection:
        """A new connection to the engine."""
        parts = urlsplit(self.url)
        return http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port or 80,
                                          timeout=timeout)


def get_json(endpoint: Endpoint, path: str, timeout: float = 5.0) -> tuple[int, Any]:
    """``GET path``: the status code and the decoded JSON body (None if not JSON).

    Raises:
        EngineHttpError: the engine could not be reached.
    """
    return _request_json(endpoint, "GET", path, None, timeout)


def post_json(endpoint: Endpoint, path: str, body: Any, timeout: float = 5.0
              ) -> tuple[int, Any]:
    """``POST path`` with a JSON body: the status code and the decoded JSON answer.

    Raises:
        EngineHttpError: the engine could not be reached.
    """
    return _request_json(endpoint, "POST", path, json.dumps(body).encode("utf-8"), timeout)


def _request_json(endpoint: Endpoint, method: str, path: str, body: bytes | None,
                  timeout: float) -> tuple[int, Any]:
    conn = endpoint.connection(timeout)
    try:
        conn.request(method, path, body=body, headers=endpoint.headers())
        resp = conn.getresponse()
        raw = resp.read()
    except (OSError, http.client.HTTPException) as exc:
        raise EngineHttpError(f"the engine does not answer at {endpoint.url}: {exc}") from exc
    finally:
        conn.close()
    try:
        return resp.status, json.loads(raw)
    except ValueError:
        return resp.status, None


@dataclass
class StreamResult:
    """What a streamed answer came to.

    Attributes:
        text: the whole answer so far.
        finish_reason: ``stop``, ``length`` (OpenAI's), or ``cancelled`` when stopped here.
        timings: the engine's speed figures (``ttft_s``, ``prefill_tps``, ``decode_tps``,
            ``e2e_tps``, token counts, ``acceptance`` when speculating, ``loop_guard``).
        error: the engine's error message, if the answer ended in one.
        request_id: the answer's id (``chatcmpl-...``), which names its slot in the
            engine's status while it streams.
    """

    text: str = ""
    finish_reason: str | None = None
    timings: dict[str, Any] = field(default_factory=dict)
    usage: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    request_id: str | None = None


def sse_data(lines: Iterator[bytes]) -> Iterator[str]:
    """The ``data:`` payloads of a server-sent event stream, one per event."""
    parts: list[str] = []
    for raw in lines:
        line = raw.decode("utf-8").rstrip("\r\n")
        if not line:
            if parts:
                yield "\n".join(parts)
                parts = []
            continue
        if line.startswith("data:"):
            parts.append(line[5:].lstrip(" "))
    if parts:
        yield "\n".join(parts)


class ChatStream:
    """One streamed chat answer. Iterate :meth:`deltas` in a worker; ``result`` fills up.

    Args:
        endpoint: the engine.
        body: the ``/v1/chat/completions`` request (``stream`` is set here).
        timeout: seconds to wait for the connection and for each read.
    """

    def __init__(self, endpoint: Endpoint, body: Mapping[str, Any],
                 timeout: float = 600.0) -> None:
        self.endpoint = endpoint
        self.body = {**body, "stream": True, "model": body.get("model") or endpoint.model}
        self.timeout = timeout
        self.result = StreamResult()
        self._cancelled = threading.Event()
        self._lock = threading.Lock()
        self._conn: http.client.HTTPConnection | None = None

    @property
    def cancelled(self) -> bool:
        """Whether :meth:`cancel` was called."""
        return self._cancelled.is_set()

    def cancel(self) -> None:
        """Stop reading (any thread): the server sees the client leave and cancels."""
        self._cancelled.set()
        with self._lock:
            conn = self._conn
        sock = getattr(conn, "sock", None) if conn is not None else None
        if isinstance(sock, socket.socket):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def deltas(self) -> Iterator[str]:
        """Yield the answer's text pieces as they arrive (blocking).

        Raises:
            EngineHttpError: the engine refused the request or the connection broke.
        """
        conn = self.endpoint.connection(self.timeout)
        with self._lock:
            self._conn = conn
        try:
            yield from self._read(conn)
        except (OSError, http.client.HTTPException, ValueError) as exc:
            if not self._cancelled.is_set():
                raise EngineHttpError(f"the answer broke off: {exc}") from exc
        finally:
            with self._lock:
                self._conn = None
            conn.close()
        if self._cancelled.is_set():
            self.result.finish_reason = "cancelled"

    def _read(self, conn: http.client.HTTPConnection) -> Iterator[str]:
        payload = json.dumps(self.body).encode("utf-8")
        conn.request("POST", "/v1/chat/completions", body=payload,
                     headers=self.endpoint.headers())
        if self._cancelled.is_set():
            return
        resp = conn.getresponse()
        if resp.status != 200:
            raise EngineHttpError(_error_message(resp.read(), resp.status), resp.status)
        for data in sse_data(iter(resp.readline, b"")):
            if self._cancelled.is_set():
                return
            if data == "[DONE]":
                return
            piece = self._take(json.loads(data))
            if piece:
                yield piece
        if not self._cancelled.is_set():
            raise EngineHttpError("the engine closed the connection before the answer ended")

    def _take(self, doc: Mapping[str, Any]) -> str:
        if "error" in doc:
            err = doc["error"]
            self.result.error = str(err.get("message") if isinstance(err, Mapping) else err)
            return ""
        if self.result.request_id is None and isinstance(doc.get("id"), str):
            self.result.request_id = doc["id"]
        if isinstance(doc.get("timings"), Mapping):
            self.result.timings = dict(doc["timings"])
        if isinstance(doc.get("usage"), Mapping):
            self.result.usage = dict(doc["usage"])
        piece = ""
        for choice in doc.get("choices") or ():
            delta = choice.get("delta") or {}
            piece += str(delta.get("content") or "")
            if choice.get("finish_reason"):
                self.result.finish_reason = str(choice["finish_reason"])
        self.result.text += piece
        return piece


def _error_message(raw: bytes, status: int) -> str:
    try:
        doc = json.loads(raw)
        return f"{status}: {doc['error']['message']}"
    except (ValueError, KeyError, TypeError):
        return f"{status}: {raw[:200].decode('utf-8', 'replace')}"
