"""llama-server's ``--cors-origins`` syntax: origins, ``*``, and the keyword
``localhost``, which allows any page served from this machine (``http(s)://localhost``,
``127.x.x.x`` or ``[::1]``, any port) and nothing else (``localhost.evil.com`` is not
local)."""

from __future__ import annotations

import re

LOCALHOST = "localhost"
# scheme, a loopback host, an optional port, nothing after
LOCAL_ORIGIN = r"^https?://(localhost|127(\.\d{1,3}){3}|\[::1\])(:\d{1,5})?$"
_LOCAL = re.compile(LOCAL_ORIGIN, re.IGNORECASE)


def origin_listed(origin: str, allowed: tuple[str, ...]) -> bool:
    """Whether ``origin`` is allowed by the list (an origin, ``*`` or ``localhost``)."""
    origin = origin.rstrip("/")
    if "*" in allowed or origin in {o.rstrip("/") for o in allowed}:
        return True
    return LOCALHOST in allowed and _LOCAL.match(origin) is not None


def origin_regex(allowed: tuple[str, ...]) -> str | None:
    """The regular expression Starlette's CORS middleware matches origins with (None
    when the list has no ``localhost``)."""
    return LOCAL_ORIGIN if LOCALHOST in allowed else None
