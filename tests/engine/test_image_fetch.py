"""Image URLs (``--allow-image-urls``) never reach the server's own network: addresses are
checked after DNS resolution and on every redirect, and every failure reads the same.

A real HTTP server on loopback stands for both "a service only the server can reach" and,
where a test says so through the address check, "a public image host"."""

from __future__ import annotations

import asyncio
import base64
import http.server
import struct
import threading
import zlib
from collections.abc import Iterator
from typing import Any

import pytest

from engine.server.errors import ApiError
from engine.server.image_fetch import FetchFailed, fetch_image, is_public
from engine.server.images import ImageLimits, fetch_image_urls


def _png() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(
            ">I", zlib.crc32(kind + data))

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"\x00\x00")) + chunk(b"IEND", b""))


PNG = _png()


class _Host:
    """A loopback HTTP server: ``/img.png`` is an image, ``/to?u=URL`` redirects there;
    ``hits`` lists every path asked for."""

    def __init__(self) -> None:
        hits: list[str] = []
        self.hits = hits

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                hits.append(self.path)
                if self.path.startswith("/to?u="):
                    self.send_response(302)
                    self.send_header("Location", self.path.split("=", 1)[1])
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Type", "image/png")
                self.send_header("Content-Length", str(len(PNG)))
                self.end_headers()
                self.wfile.write(PNG)

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"


@pytest.fixture(name="host")
def host_fixture() -> Iterator[_Host]:
    host = _Host()
    try:
        yield host
    finally:
        host.server.shutdown()
        host.server.server_close()


@pytest.mark.parametrize("address", [
    "127.0.0.1", "::1", "10.1.2.3", "172.16.0.1", "192.168.1.20", "169.254.169.254",
    "fe80::1", "fc00::1", "224.0.0.1", "ff02::1", "0.0.0.0", "::", "100.64.0.1",
    "::ffff:127.0.0.1", "255.255.255.255", "not-an-ip"])
def test_private_loopback_link_local_and_multicast_are_not_public(address: str) -> None:
    assert not is_public(address)


def test_public_addresses_are() -> None:
    assert is_public("93.184.216.34") and is_public("2606:4700::1111")


def test_a_loopback_url_is_never_connected_to(host: _Host) -> None:
    with pytest.raises(FetchFailed):
        fetch_image(host.url("/img.png"), 10_000, 5)
    assert host.hits == []


def test_a_name_that_resolves_to_loopback_is_refused_after_resolution(host: _Host) -> None:
    def resolver(name: str, port: int) -> list[str]:
        return ["127.0.0.1"] if name == "images.example" else []

    with pytest.raises(FetchFailed, match="not public"):
        fetch_image(host.url("/img.png", "images.example"), 10_000, 5, resolver)
    assert host.hits == []


def test_every_redirect_is_checked(host: _Host) -> None:
    """127.0.0.1 stands for a public host here; it redirects to 127.0.0.2 (loopback)."""
    def allowed(address: str) -> bool:
        return address == "127.0.0.1"

    assert fetch_image(host.url("/img.png"), 10_000, 5, allowed=allowed) == PNG
    target = host.url("/secret.png", "127.0.0.2")
    with pytest.raises(FetchFailed, match="not public"):
        fetch_image(host.url(f"/to?u={target}"), 10_000, 5, allowed=allowed)
    assert host.hits == ["/img.png", f"/to?u={target}"]  # /secret.png was never asked


def test_every_failure_reads_the_same_to_the_client(host: _Host) -> None:
    """The error text told whether a port answered."""
    closed = socket_port()
    limits = ImageLimits(allow_urls=True, fetch_timeout_s=3)
    messages = set()
    for url in (host.url("/img.png"), f"http://127.0.0.1:{closed}/x.png",
                "http://no-such-host.invalid/x.png", "http://[::1]:1/x.png"):
        body = {"messages": [{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": url}}]}]}
        with pytest.raises(ApiError) as info:
            asyncio.run(fetch_image_urls(body, limits))
        assert info.value.code == "image_fetch_failed"
        messages.add(info.value.message)
    assert len(messages) == 1 and host.hits == []


def test_a_text_only_model_fetches_nothing(host: _Host) -> None:
    body = {"messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": host.url("/img.png")}}]}]}
    with pytest.raises(ApiError) as info:
        asyncio.run(fetch_image_urls(body, ImageLimits(allow_urls=True),
                                     "the model has no vision projector"))
    assert info.value.code == "images_not_supported" and host.hits == []


def test_a_data_url_still_needs_no_fetch() -> None:
    url = "data:image/png;base64," + base64.b64encode(PNG).decode()
    body = {"messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": url}}]}]}
    assert asyncio.run(fetch_image_urls(body, ImageLimits())) is body


def socket_port() -> int:
    """A loopback port nothing listens on."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_private_addresses_only_when_the_server_says_so(host: _Host) -> None:
    """``--allow-private-image-urls``: a LAN image host is reachable; a too-large image from
    a host the server may reach is named as too large."""
    def body() -> dict[str, Any]:
        return {"messages": [{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": host.url("/img.png")}}]}]}

    doc = asyncio.run(fetch_image_urls(body(), ImageLimits(allow_urls=True,
                                                           allow_private_urls=True)))
    assert doc["messages"][0]["content"][0]["image_url"]["url"].startswith("data:image/png")
    with pytest.raises(ApiError) as info:
        asyncio.run(fetch_image_urls(body(), ImageLimits(allow_urls=True, max_bytes=10,
                                                       allow_private_urls=True)))
    assert info.value.code == "image_too_large"
