"""Image files decoded into RGB pixels, in Python (Pillow), before llama.cpp sees them.

llama.cpp's multimodal helper decodes a buffer with stb and, when that fails, tries it as
audio and then as video by running ``ffprobe``/``ffmpeg`` from ``PATH`` on the bytes. A
request's image therefore never reaches that helper: it is decoded here, in full, and only
its pixels go to ``mtmd_bitmap_init``. Only PNG, JPEG, GIF and BMP are read; the pixel
count is checked from the header before anything is decompressed; an animated image gives
its first frame; a truncated or corrupt file is refused.
"""

from __future__ import annotations

import hashlib
import io
import logging
import warnings
from dataclasses import dataclass

from PIL import Image, UnidentifiedImageError

from engine.errors import ImageInputError

log = logging.getLogger(__name__)

FORMATS = ("PNG", "JPEG", "GIF", "BMP")
# a ceiling for every caller (192 MiB of RGB); the server's own limit, --max-image-pixels
# (4096 x 4096 by default), is checked from the header before a request reaches the engine
DEFAULT_MAX_PIXELS = 8192 * 8192


@dataclass(frozen=True)
class RgbImage:
    """An image's pixels: ``width * height * 3`` bytes, rows top to bottom.

    Attributes:
        image_id: a hash of the size and pixels (the same image always has the same id).
    """

    width: int
    height: int
    rgb: bytes
    image_id: str


def decode_rgb(data: bytes, *, max_pixels: int = DEFAULT_MAX_PIXELS) -> RgbImage:
    """Decode a PNG, JPEG, GIF or BMP file fully into RGB (the first frame if animated).

    Raises:
        ImageInputError: not one of those formats, over ``max_pixels`` (checked from the
            header, before decoding), or truncated or corrupt.
    """
    try:
        with warnings.catch_warnings():
            # over MAX_IMAGE_PIXELS Pillow warns; our own limit below decides instead
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            img = Image.open(io.BytesIO(data), formats=FORMATS)
            width, height = img.size
            if width <= 0 or height <= 0:
                raise ImageInputError("the image has no pixels")
            if width * height > max_pixels:
                raise ImageInputError(f"the image is {width}x{height} pixels; at most "
                                      f"{max_pixels} pixels are accepted")
            img.load()  # every pixel now, or an error: truncated files are not padded
            rgb = _to_rgb(img)
    except ImageInputError:
        raise
    except Image.DecompressionBombError as exc:  # Pillow's own cap, hit at the header
        raise ImageInputError(f"the image has more than {max_pixels} pixels") from exc
    except UnidentifiedImageError as exc:
        raise ImageInputError("the image could not be decoded: it is not a PNG, JPEG, GIF "
                              "or BMP file") from exc
    except (OSError, ValueError, SyntaxError, EOFError) as exc:
        # Pillow's plugins signal a broken file with any of these
        raise ImageInputError(f"the image could not be decoded ({exc})") from exc
    pixels = rgb.tobytes()
    if len(pixels) != width * height * 3:
        raise ImageInputError("the image could not be decoded (pixel data incomplete)")
    digest = hashlib.blake2b(digest_size=16)
    digest.update(f"{width}x{height}:".encode())
    digest.update(pixels)
    return RgbImage(width, height, pixels, digest.hexdigest())


def _to_rgb(img: Image.Image) -> Image.Image:
    if img.mode.startswith("I;16") or img.mode == "I":
        # 16-bit grey: scaled to 8 bits (a plain conversion would clip at 255)
        img = img.convert("I").point(lambda v: v / 256, "L")
    return img.convert("RGB")
