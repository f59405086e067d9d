"""Images in chat requests: ``image_url`` content parts, checked against the limits.

A part's URL is a ``data:image/...;base64,`` URL, or (only when the server was started with
``--allow-image-urls``) an ``http(s)`` URL that :func:`fetch_image_urls` downloads, within a
size limit and a timeout, and replaces by the data it got before the request is parsed.
Every image is checked before the engine sees it: its byte size, its format and pixel
count read from the file's header (nothing is decoded here), and the count per request.
"""

from __future__ import annotations

import base64
import binascii
import logging
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from engine.server.errors import ApiError, bad

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ImageLimits:
    """What images a request may carry.

    Attributes:
        max_images: images in one request.
        max_bytes: the size of one image file.
        max_pixels: width x height of one image.
        allow_urls: fetch ``http(s)`` image URLs (off: data URLs only).
        allow_private_urls: fetch them from any address, loopback and private ones
            included (off: public addresses only, :mod:`engine.server.image_fetch`).
        fetch_timeout_s: the whole download of one URL.
    """

    max_images: int = 8
    max_bytes: int = 5 * 1024 * 1024
    max_pixels: int = 4096 * 4096
    allow_urls: bool = False
    allow_private_urls: bool = False
    fetch_timeout_s: float = 10.0


DEFAULT_IMAGE_LIMITS = ImageLimits()


def image_size(data: bytes) -> tuple[str, int, int] | None:
    """(format, width, height) from a PNG, JPEG, GIF, BMP or WebP header; None otherwise."""
    if data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 24:
        w, h = struct.unpack(">II", data[16:24])
        return "png", w, h
    if data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        w, h = struct.unpack("<HH", data[6:10])
        return "gif", w, h
    if data[:2] == b"BM" and len(data) >= 26:
        w, h = struct.unpack("<ii", data[18:26])
        return "bmp", abs(w), abs(h)
    if data[:2] == b"\xff\xd8":
        return _jpeg_size(data)
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return ("webp", 0, 0)  # read by the engine only when its build has a decoder
    return None


def _jpeg_size(data: bytes) -> tuple[str, int, int] | None:
    i = 2
    while i + 9 < len(data):
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            i += 2
            continue
        length = struct.unpack(">H", data[i + 2:i + 4])[0]
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            h, w = struct.unpack(">HH", data[i + 5:i + 9])
            return "jpeg", w, h
        i += 2 + length
    return None


def check_image(data: bytes, where: str, limits: ImageLimits) -> bytes:
    """Refuse an image over the limits or in no known format; returns ``data``.

    Raises:
        ApiError: 400 naming ``where``.
    """
    if len(data) > limits.max_bytes:
        raise bad(f"the image is {len(data)} bytes; at most {limits.max_bytes} are accepted",
                  where, "image_too_large")
    size = image_size(data)
    if size is None or size[0] == "webp":
        raise bad("the image is not a PNG, JPEG, GIF or BMP file", where, "invalid_image")
    _fmt, w, h = size
    if w <= 0 or h <= 0:
        raise bad("the image has no pixels", where, "invalid_image")
    if w * h > limits.max_pixels:
        raise bad(f"the image is {w}x{h} pixels; at most {limits.max_pixels} pixels are "
                  "accepted", where, "image_too_large")
    return data


def decode_data_url(url: str, where: str, limits: ImageLimits) -> bytes:
    """The bytes of a ``data:image/...;base64,`` URL, checked.

    Raises:
        ApiError: 400: not a base64 image data URL, or over the limits.
    """
    head, sep, payload = url.partition(",")
    if not sep or not head.startswith("data:image/") or not head.endswith(";base64"):
        raise bad("an image URL must be a data:image/...;base64, URL" +
                  ("" if limits.allow_urls else
                   " (http URLs are fetched only when the server runs with "
                   "--allow-image-urls)"), where, "invalid_image_url")
    if len(payload) > (limits.max_bytes + 2) // 3 * 4 + 4:
        raise bad(f"the image is larger than {limits.max_bytes} bytes", where,
                  "image_too_large")
    try:
        data = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise bad(f"the image data URL is not valid base64: {exc}", where,
                  "invalid_image_url") from exc
    return check_image(data, where, limits)


def image_parts(body: Any) -> list[tuple[str, Mapping[str, Any]]]:
    """Every ``image_url`` content part of a chat body's messages, with its parameter path."""
    out: list[tuple[str, Mapping[str, Any]]] = []
    messages = body.get("messages") if isinstance(body, Mapping) else None
    for i, msg in enumerate(messages if isinstance(messages, list) else ()):
        content = msg.get("content") if isinstance(msg, Mapping) else None
        for j, part in enumerate(content if isinstance(content, list) else ()):
            if isinstance(part, Mapping) and part.get("type") == "image_url":
                out.append((f"messages[{i}].content[{j}].image_url", part))
    return out


def part_url(part: Mapping[str, Any], where: str) -> str:
    """The URL of an ``image_url`` part (``{"url": ...}`` or, loosely, a bare string)."""
    value = part.get("image_url")
    url = value.get("url") if isinstance(value, Mapping) else value
    if not isinstance(url, str):
        raise bad("an image_url part needs {'url': '...'}", where, "invalid_type")
    return url


async def fetch_image_urls(body: Any, limits: ImageLimits,
                           vision_refusal: str | None = None) -> Any:
    """Download the ``http(s)`` image URLs of a chat body (when allowed) and put their data
    in place as data URLs; the body is returned unchanged when it has none.

    Args:
        vision_refusal: why the model takes no images (None: it does); such a request is
            refused before anything is fetched.

    Raises:
        ApiError: 400: URLs are off, too many images, the model takes none, or a download
            failed.
    """
    parts = image_parts(body)
    if len(parts) > limits.max_images:
        raise bad(f"at most {limits.max_images} images per request", "messages",
                  "too_many_images")
    remote = [(w, p) for w, p in parts if part_url(p, w).lower().startswith(("http:", "https:"))]
    if remote and not limits.allow_urls:
        raise bad("http image URLs are off on this server: send the image as a data URL, "
                  "or start the server with --allow-image-urls", remote[0][0],
                  "image_urls_disabled")
    if parts and vision_refusal is not None:  # before anything is fetched
        raise bad(f"this model cannot take images: {vision_refusal}", "messages",
                  "images_not_supported")
    if not remote:
        return body
    for where, part in remote:
        url = part_url(part, where)
        data = await _download(url, where, limits)
        check_image(data, where, limits)
        fmt = (image_size(data) or ("png", 0, 0))[0]
        encoded = base64.b64encode(data).decode("ascii")
        # the caller's body is a fresh json.loads result: changed in place
        part["image_url"] = {"url": f"data:image/{fmt};base64,{encoded}"}  # type: ignore[index]
    return body


async def _download(url: str, where: str, limits: ImageLimits) -> bytes:
    """The image at ``url`` (public addresses only, :mod:`.image_fetch`); every failure is
    the same 400, so that no answer tells what lies on the network behind the server."""
    from engine.server.image_fetch import FetchFailed, TooLarge, fetch_image, is_public
    from engine.server.offloop import run_bounded

    allowed = (lambda _address: True) if limits.allow_private_urls else is_public
    try:
        return await run_bounded(lambda: fetch_image(url, limits.max_bytes,
                                                     limits.fetch_timeout_s, allowed=allowed),
                                 limits.fetch_timeout_s)
    except TooLarge as exc:  # the image's own size, from a host it was allowed to reach
        raise bad(f"the image at the URL is larger than {limits.max_bytes} bytes", where,
                  "image_too_large") from exc
    except (FetchFailed, TimeoutError) as exc:
        log.info("image URL at %s not fetched: %s", where, exc or "timed out")
        raise bad(FETCH_FAILED.format(bytes=limits.max_bytes, s=limits.fetch_timeout_s),
                  where, "image_fetch_failed") from None


FETCH_FAILED = ("the image URL could not be fetched (only public http(s) addresses are "
                "fetched, an image of at most {bytes} bytes within {s:g} s)")


__all__ = ["DEFAULT_IMAGE_LIMITS", "ApiError", "ImageLimits", "check_image",
           "decode_data_url", "fetch_image_urls", "image_parts", "image_size"]
