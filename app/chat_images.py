"""Images a chat question carries: read from a file, the clipboard or a drop, made small
enough for the server's limits, sent as data URLs, and shown as thumbnails.

Everything the model reads is a PNG or JPEG the app wrote itself: a picture of any format
Qt reads (WebP, TIFF ...) is decoded here and re-encoded, a side longer than
:data:`MAX_SIDE` pixels is scaled down (the model's projector resizes it much smaller
anyway), and a PNG that would be large becomes a JPEG.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QMimeData, Qt
from PySide6.QtGui import QImage

log = logging.getLogger(__name__)

MAX_SIDE = 2048
MAX_PNG_BYTES = 3 * 1024 * 1024
THUMB_SIDE = 160
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".bmp", ".webp", ".tif", ".tiff")


@dataclass(frozen=True)
class ImageFile:
    """An image ready to send: its MIME type and bytes."""

    mime: str
    data: bytes

    def data_url(self) -> str:
        return f"data:{self.mime};base64,{base64.b64encode(self.data).decode('ascii')}"


def _encode(image: QImage, fmt: str, quality: int = -1) -> bytes:
    array = QByteArray()
    buffer = QBuffer(array)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    image.save(buffer, fmt, quality)  # type: ignore[call-overload]  # the stub wants bytes
    buffer.close()
    return bytes(array.data())


def from_image(image: QImage) -> ImageFile | None:
    """An image to send, from a decoded picture (None when it is empty)."""
    if image.isNull():
        return None
    if max(image.width(), image.height()) > MAX_SIDE:
        image = image.scaled(MAX_SIDE, MAX_SIDE, Qt.AspectRatioMode.KeepAspectRatio,
                             Qt.TransformationMode.SmoothTransformation)
    png = _encode(image, "PNG")
    if len(png) <= MAX_PNG_BYTES:
        return ImageFile("image/png", png)
    return ImageFile("image/jpeg", _encode(image.convertToFormat(QImage.Format.Format_RGB888),
                                           "JPEG", 90))


def from_bytes(data: bytes) -> ImageFile | None:
    """An image to send, from a file's bytes (None when Qt cannot read them)."""
    image = QImage()
    if not image.loadFromData(data):
        return None
    return from_image(image)


def from_file(path: Path) -> ImageFile | None:
    """An image to send, from a file (None when it cannot be read as a picture)."""
    try:
        return from_bytes(Path(path).read_bytes())
    except OSError as exc:
        log.warning("could not read %s: %s", path, exc)
        return None


def from_mime(mime: QMimeData) -> list[ImageFile]:
    """The images a paste or a drop carries: a picture, or image files."""
    if mime.hasImage():
        image = from_image(QImage(mime.imageData()))
        return [image] if image is not None else []
    out = []
    for url in mime.urls() if mime.hasUrls() else ():
        if url.isLocalFile() and url.toLocalFile().lower().endswith(IMAGE_SUFFIXES):
            found = from_file(Path(url.toLocalFile()))
            if found is not None:
                out.append(found)
    return out


def carries_images(mime: QMimeData) -> bool:
    """Whether a paste or drop holds a picture or an image file."""
    if mime.hasImage():
        return True
    return mime.hasUrls() and any(
        u.isLocalFile() and u.toLocalFile().lower().endswith(IMAGE_SUFFIXES)
        for u in mime.urls())


def thumbnail(data: bytes, side: int = THUMB_SIDE) -> QImage:
    """A picture no larger than ``side`` pixels each way (a null image when unreadable)."""
    image = QImage()
    if not image.loadFromData(data):
        return QImage()
    if max(image.width(), image.height()) > side:
        image = image.scaled(side, side, Qt.AspectRatioMode.KeepAspectRatio,
                             Qt.TransformationMode.SmoothTransformation)
    return image


def question_content(text: str, images: Sequence[ImageFile]) -> Any:
    """A user message's ``content``: the text alone, or OpenAI content parts with images."""
    if not images:
        return text
    parts: list[Mapping[str, Any]] = [{"type": "text", "text": text}] if text else []
    parts += [{"type": "image_url", "image_url": {"url": i.data_url()}} for i in images]
    return parts
