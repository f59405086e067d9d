"""The server's error: a request answered with an OpenAI-style error document."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.errors import EngineError

_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                408: "invalid_request_error",
                404: "invalid_request_error", 405: "invalid_request_error",
                413: "invalid_request_error", 415: "invalid_request_error",
                422: "invalid_request_error", 429: "rate_limit_error",
                500: "server_error", 503: "server_error"}


# the longest error message: one that quotes a client's value (an id of megabytes, an
# integer of thousands of digits) is cut there, so an error never echoes a whole body back
MAX_MESSAGE_CHARS = 2000


class ApiError(EngineError):
    """A request the server answers with an OpenAI-style error document.

    Attributes:
        status: the HTTP status code.
        param: the request field at fault, when there is one.
        code: a short machine-readable code (``context_length_exceeded`` ...).
        headers: extra response headers (``Retry-After`` ...).
    """

    def __init__(self, status: int, message: str, *, param: str | None = None,
                 code: str | None = None, err_type: str | None = None,
                 headers: Mapping[str, str] | None = None,
                 extra: Mapping[str, Any] | None = None) -> None:
        if len(message) > MAX_MESSAGE_CHARS:  # a message that quotes what a client sent
            message = message[:MAX_MESSAGE_CHARS] + "..."
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param
        self.code = code
        self.err_type = err_type or _ERROR_TYPES.get(status, "invalid_request_error")
        self.headers = dict(headers or {})
        self.extra = dict(extra or {})  # more fields of the error object (llama-server's)

    def to_json(self) -> dict[str, Any]:
        """The ``{"error": {...}}`` document (``ErrorResponse`` in the OpenAI schemas)."""
        return {"error": {"message": self.message, "type": self.err_type,
                          "param": self.param, "code": self.code, **self.extra}}


def bad(message: str, param: str | None = None, code: str = "invalid_value") -> ApiError:
    """A 400 error about ``param``."""
    return ApiError(400, message, param=param, code=code)
