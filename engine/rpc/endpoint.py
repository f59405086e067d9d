"""Worker addresses: ``HOST:PORT`` as llama.cpp's RPC client takes it, and who is local."""

from __future__ import annotations

import ipaddress
import socket

DEFAULT_PORT = 50052


def parse_endpoint(text: str) -> tuple[str, int]:
    """Split ``HOST:PORT``; the port defaults to 50052.

    Raises:
        ValueError: an empty host, a port outside 1..65535, or an IPv6 literal (llama.cpp's
            RPC client splits its address at the first colon: name the host instead).
    """
    text = text.strip()
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port_text = rest.lstrip(":")
    elif text.count(":") == 1:
        host, port_text = text.split(":")
    else:
        host, port_text = text, ""
    if ":" in host:
        raise ValueError(f"{text!r}: llama.cpp's RPC backend cannot reach an IPv6 address; "
                         "use the worker's host name or IPv4 address")
    port = int(port_text) if port_text else DEFAULT_PORT
    if not host or not 0 < port < 65536:
        raise ValueError(f"not a worker address: {text!r} (expected HOST:PORT)")
    return host, port


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only (127.0.0.0/8, ::1, localhost)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def accepts(endpoint: str, timeout_s: float = 0.5) -> bool:
    """Whether something still accepts connections at ``endpoint`` (a worker serving
    another client still does: its listening socket queues us)."""
    try:
        host, port = parse_endpoint(endpoint)
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except (OSError, ValueError):
        return False
