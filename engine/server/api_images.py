"""Images of Responses and Messages requests as the chat route's ``image_url`` parts.

A Responses ``input_image`` part (``image_url``: a data URL or an ``http(s)`` URL) and an
Anthropic ``image`` block (``source``: ``base64`` with its ``media_type``, or ``url``)
become ``{"type": "image_url", "image_url": {"url": ...}}``. Each image is checked here,
against the same limits as the chat route, so a refusal names the field of the API it came
in; ``http(s)`` URLs are downloaded afterwards by :func:`fetch_images` (only when the server
allows image URLs), before the chat request is parsed.
"""

from __future__ import annotations

import base64
import binascii
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.server.errors import ApiError, bad
from engine.server.images import ImageLimits, decode_data_url, fetch_image_urls, image_size
from engine.server.openai_schema import ServedModel

log = logging.getLogger(__name__)

# Anthropic's media types and the format each one's bytes must be
MEDIA_TYPES = {"image/jpeg": "jpeg", "image/png": "png", "image/gif": "gif",
               "image/webp": "webp"}
DETAILS = ("auto", "low", "high", "original")


@dataclass
class ImageParts:
    """The images of one request, collected while it is translated.

    Attributes:
        limits: the server's image limits.
        found: each chat ``image_url`` part with the API field it came from.
    """

    limits: ImageLimits
    found: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def add(self, url: str, where: str) -> tuple[dict[str, Any], bytes | None]:
        """A chat part for the image at ``url``: a data URL is checked now (its bytes come
        back), an ``http(s)`` URL is left for :func:`fetch_images` (None).

        Raises:
            ApiError: 400: too many images, not a usable URL, or over the limits.
        """
        if len(self.found) >= self.limits.max_images:
            raise bad(f"at most {self.limits.max_images} images per request", where,
                      "too_many_images")
        data = None
        if not url.lower().startswith(("http:", "https:")):
            data = decode_data_url(url, where, self.limits)
        part: dict[str, Any] = {"type": "image_url", "image_url": {"url": url}}
        self.found.append((where, part))
        return part, data


def responses_image(part: Mapping[str, Any], where: str, images: ImageParts
                    ) -> dict[str, Any]:
    """The chat part of a Responses ``input_image`` content part.

    Raises:
        ApiError: 400 naming the field: a ``file_id`` (no file store here), no
            ``image_url``, an unknown ``detail``, or an image the limits refuse.
    """
    detail = part.get("detail")
    if detail is not None and detail not in DETAILS:
        raise bad(f"'{where}.detail' must be one of {', '.join(DETAILS)}", f"{where}.detail")
    url = part.get("image_url")
    if url is None and part.get("file_id") is not None:
        raise bad("images by 'file_id' are not supported (this server keeps no files): send "
                  "'image_url' as a data URL", f"{where}.file_id", "unsupported_value")
    if not isinstance(url, str):
        raise bad(f"'{where}.image_url' must be a string (a data:image/...;base64, URL or an "
                  "http(s) URL)", f"{where}.image_url", "invalid_type")
    return images.add(url, f"{where}.image_url")[0]


def anthropic_image(block: Mapping[str, Any], where: str, images: ImageParts
                    ) -> dict[str, Any]:
    """The chat part of an Anthropic ``image`` block.

    A ``base64`` source's ``media_type`` must be one of :data:`MEDIA_TYPES` and agree with
    the bytes' own format.

    Raises:
        ApiError: 400 naming the field.
    """
    source = block.get("source")
    here = f"{where}.source"
    if not isinstance(source, Mapping):
        raise bad(f"'{here}' must be an object with a 'type' (base64 or url)", here,
                  "invalid_type")
    kind = source.get("type")
    if kind == "url":
        url = source.get("url")
        if not isinstance(url, str) or not url.lower().startswith(("http:", "https:")):
            raise bad(f"'{here}.url' must be an http(s) URL", f"{here}.url", "invalid_image_url")
        return images.add(url, f"{here}.url")[0]
    if kind != "base64":
        raise bad(f"'{here}.type' must be base64 or url"
                  f"{'' if kind is None else f', not {kind!r}'}", f"{here}.type",
                  "unsupported_value")
    media_type, data = source.get("media_type"), source.get("data")
    if not isinstance(media_type, str) or media_type not in MEDIA_TYPES:
        raise bad(f"'{here}.media_type' must be one of {', '.join(MEDIA_TYPES)}",
                  f"{here}.media_type", "invalid_value")
    if not isinstance(data, str):
        raise bad(f"'{here}.data' must be a base64 string", f"{here}.data", "invalid_type")
    _valid_base64(data, f"{here}.data", images.limits)
    part, raw = images.add(f"data:{media_type};base64,{data}", f"{here}.data")
    fmt = (image_size(raw or b"") or ("",))[0]
    if fmt != MEDIA_TYPES[str(media_type)]:
        raise bad(f"'{here}.media_type' is {media_type} but the data is "
                  f"{'a ' + fmt.upper() + ' image' if fmt else 'not an image'}",
                  f"{here}.media_type", "invalid_image")
    return part


def _valid_base64(data: str, where: str, limits: ImageLimits) -> None:
    """Refuse what is not base64 with Anthropic's words (the data URL check says
    'data URL', which this API's client never wrote)."""
    if len(data) > (limits.max_bytes + 2) // 3 * 4 + 4:
        return  # the size check that follows names the limit
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise bad(f"'{where}' is not valid base64: {exc}", where, "invalid_image") from exc


async def fetch_images(images: ImageParts, served: ServedModel) -> None:
    """Refuse images a text-only model cannot take, then download the ``http(s)`` images
    (when the server allows it) into their parts as data URLs.

    Raises:
        ApiError: 400 naming the API field: ``images_not_supported``,
            ``image_urls_disabled``, or a download that failed or was too big.
    """
    if not images.found:
        return
    if served.vision_refusal is not None:
        raise bad(f"this model cannot take images: {served.vision_refusal}",
                  images.found[0][0], "images_not_supported")
    for where, part in images.found:
        try:  # the chat route's download, one part at a time, answering for this field
            await fetch_image_urls({"messages": [{"content": [part]}]}, images.limits)
        except ApiError as err:
            raise bad(err.message, where, err.code or "image_fetch_failed") from err
