"""Image files decoded into RGB in Python before llama.cpp sees them: every pixel or a
clear error, the pixel limit read from the header, and an id that follows the pixels."""

from __future__ import annotations

import io
import re
import struct
import zlib
from pathlib import Path

import pytest
from PIL import Image

from engine.errors import ImageInputError
from engine.pixels import decode_rgb
from tests.helpers.gguf_mmproj import png_bytes

ROOT = Path(__file__).resolve().parents[2]


def encoded(img: Image.Image, fmt: str, **kwargs: object) -> bytes:
    out = io.BytesIO()
    img.save(out, fmt, **kwargs)
    return out.getvalue()


def png_header(width: int, height: int) -> bytes:
    """A PNG with a header and an end but no pixel data."""
    def chunk(body: bytes) -> bytes:
        return struct.pack(">I", len(body) - 4) + body + struct.pack(">I", zlib.crc32(body))

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR" + struct.pack(">IIBBBBB", width, height, 8,
                                                                   2, 0, 0, 0))
            + chunk(b"IEND"))


def test_a_png_decodes_to_its_rgb_pixels_with_a_stable_id() -> None:
    data = png_bytes(5, 3, seed=7)
    image = decode_rgb(data)
    assert (image.width, image.height, len(image.rgb)) == (5, 3, 45)
    assert image.rgb == Image.open(io.BytesIO(data)).convert("RGB").tobytes()
    assert decode_rgb(data).image_id == image.image_id
    assert decode_rgb(png_bytes(5, 3, seed=8)).image_id != image.image_id


def test_the_same_pixels_in_another_format_have_the_same_id() -> None:
    img = Image.open(io.BytesIO(png_bytes(6, 4, seed=1))).convert("RGB")
    assert decode_rgb(encoded(img, "BMP")).image_id == decode_rgb(encoded(img, "PNG")).image_id


def test_an_animated_gif_gives_its_first_frame() -> None:
    frames = [Image.new("RGB", (4, 4), c) for c in ((255, 0, 0), (0, 0, 255))]
    data = encoded(frames[0], "GIF", save_all=True, append_images=frames[1:])
    assert decode_rgb(data).rgb[:3] == b"\xff\x00\x00"


def test_alpha_is_dropped_and_16_bit_grey_is_scaled() -> None:
    assert decode_rgb(encoded(Image.new("RGBA", (2, 2), (1, 2, 3, 0)), "PNG")).rgb[:3] \
        == b"\x01\x02\x03"
    assert decode_rgb(encoded(Image.new("I;16", (2, 2), 40000), "PNG")).rgb[:3] \
        == bytes([40000 // 256] * 3)


@pytest.mark.parametrize("data", [
    png_header(20, 20),
    png_bytes(64, 64, seed=1)[:300],
    encoded(Image.new("RGB", (64, 64), (9, 9, 9)), "JPEG")[:200],
    b"GIF89a" + struct.pack("<HH", 16, 16) + b"\x00\x00\x00",
    encoded(Image.new("RGB", (8, 8)), "BMP")[:60],
    b"RIFF\x00\x00\x00\x00WEBPVP8 ",
    b"not an image",
], ids=["png-no-pixel-data", "png-truncated", "jpeg-truncated", "gif-no-image",
        "bmp-truncated", "webp", "text"])
def test_what_does_not_decode_fully_is_refused(data: bytes) -> None:
    with pytest.raises(ImageInputError, match="could not be decoded"):
        decode_rgb(data)


@pytest.mark.parametrize("size", [(5000, 5000), (100000, 100000)])
def test_the_pixel_limit_is_read_from_the_header(size: tuple[int, int]) -> None:
    with pytest.raises(ImageInputError, match="pixels"):
        decode_rgb(png_header(*size), max_pixels=4096 * 4096)


def test_no_module_calls_libmtmds_media_loaders() -> None:
    """Those fall back to running ffprobe/ffmpeg on bytes stb cannot read."""
    loader = re.compile(r"mtmd_helper_(bitmap_init_from_(buf|file)|video_init)")
    callers = [str(p.relative_to(ROOT)) for package in ("engine", "app", "loadout")
               for p in (ROOT / package).rglob("*.py")
               if loader.search(p.read_text(encoding="utf-8"))]
    assert callers == []
