"""Downloading a request's image URL without letting the request probe the network.

With ``--allow-image-urls`` a client names a URL and the server fetches it: a client could
make the server reach what only the server can reach (its own ports, the LAN, a cloud's
metadata address) and learn from the error whether something answered there. So:

- the host name is resolved here, and every address it resolves to must be a public one
  (not loopback, link-local, private, shared, multicast, reserved or unspecified);
- the connection goes to the address that was checked (a second lookup could answer
  otherwise: DNS rebinding), with the name kept for the ``Host`` header and TLS;
- each redirect is checked the same way (at most :data:`MAX_REDIRECTS`);
- every failure, whatever the network said, is the one :class:`FetchFailed` (the reason
  goes to the server's log only); only an image too large, from a host it was allowed to
  reach, is :class:`TooLarge`.
"""

from __future__ import annotations

import http.client
import ipaddress
import logging
import socket
import ssl
from collections.abc import Callable
from urllib.parse import urljoin, urlsplit

log = logging.getLogger(__name__)

MAX_REDIRECTS = 3
Resolver = Callable[[str, int], list[str]]
AddressCheck = Callable[[str], bool]


class FetchFailed(Exception):
    """The image could not be fetched (the reason is logged, never shown)."""


class TooLarge(FetchFailed):
    """The image is larger than allowed."""


def is_public(address: str) -> bool:
    """Whether an IP address is one the server may fetch from: a global unicast address
    (an IPv4 address inside IPv6 is judged as IPv4)."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not (ip.is_multicast or ip.is_private or ip.is_loopback
                                 or ip.is_link_local or ip.is_reserved
                                 or ip.is_unspecified)


def resolve(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to (TCP)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


class _PinnedHTTPS(http.client.HTTPSConnection):
    """HTTPS to a checked address, with the URL's name for SNI and the certificate."""

    def __init__(self, address: str, name: str, port: int, timeout: float) -> None:
        super().__init__(address, port, timeout=timeout,
                         context=ssl.create_default_context())
        self._name = name

    def connect(self) -> None:
        sock = socket.create_connection((self.host, self.port), self.timeout)
        self.sock = self._context.wrap_socket(  # type: ignore[attr-defined]
            sock, server_hostname=self._name)


def _open(url: str, timeout: float, resolver: Resolver, allowed: AddressCheck
          ) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
    parts = urlsplit(url)
    scheme, host = parts.scheme.lower(), parts.hostname
    if scheme not in ("http", "https") or not host:
        raise FetchFailed(f"not an http(s) URL: {scheme}")
    port = parts.port or (443 if scheme == "https" else 80)
    addresses = resolver(host, port)
    refused = [a for a in addresses if not allowed(a)]
    if not addresses or refused:
        raise FetchFailed(f"{host} resolves to an address that is not public: "
                          f"{', '.join(refused) or 'none'}")
    address = addresses[0]
    conn: http.client.HTTPConnection = (
        _PinnedHTTPS(address, host, port, timeout) if scheme == "https"
        else http.client.HTTPConnection(address, port, timeout=timeout))
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    netloc = host if parts.port is None else f"{host}:{parts.port}"
    conn.request("GET", target, headers={"Host": netloc, "User-Agent": "loadout",
                                         "Accept": "image/*"})
    return conn, conn.getresponse()


def fetch_image(url: str, max_bytes: int, timeout: float, resolver: Resolver = resolve,
                allowed: AddressCheck = is_public) -> bytes:
    """The bytes at ``url``, fetched from public addresses only (blocking).

    Raises:
        TooLarge: the image is over ``max_bytes``.
        FetchFailed: anything else went wrong (the reason is in the exception's text,
            for the log).
    """
    for _hop in range(MAX_REDIRECTS + 1):
        try:
            conn, resp = _open(url, timeout, resolver, allowed)
        except (OSError, http.client.HTTPException, ValueError, UnicodeError) as exc:
            raise FetchFailed(f"{type(exc).__name__}: {exc}") from exc
        try:
            if resp.status in (301, 302, 303, 307, 308):
                location = resp.getheader("Location")
                if not location:
                    raise FetchFailed(f"a redirect ({resp.status}) without a Location")
                url = urljoin(url, location)
                continue
            if resp.status != 200:
                raise FetchFailed(f"HTTP {resp.status}")
            declared = resp.getheader("Content-Length")
            if declared is not None and declared.isdigit() and int(declared) > max_bytes:
                raise TooLarge(f"Content-Length {declared}")
            data = resp.read(max_bytes + 1)
            if len(data) > max_bytes:
                raise TooLarge(f"more than {max_bytes} bytes")
            return data
        except (OSError, http.client.HTTPException) as exc:
            raise FetchFailed(f"{type(exc).__name__}: {exc}") from exc
        finally:
            conn.close()
    raise FetchFailed(f"more than {MAX_REDIRECTS} redirects")


__all__ = ["MAX_REDIRECTS", "FetchFailed", "TooLarge", "fetch_image", "is_public",
           "resolve"]
