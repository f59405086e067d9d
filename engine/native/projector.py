"""A model's multimodal projector (``mmproj-*.gguf``) through llama.cpp's ``libmtmd``.

:class:`NativeProjector` loads the projector beside a loaded text model, turns a rendered
prompt with media markers plus image bytes into chunks (text tokens and image chunks),
encodes an image chunk into embeddings and decodes those into a sequence of a context.
Tokenizing (which decodes and resizes the image) is thread-safe; encoding and decoding
run on the engine thread only, as every other decode does.
"""

from __future__ import annotations

import ctypes
import logging
import re
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.errors import ImageInputError, ModelLoadError, ModelNotFoundError
from engine.logs import native_log_callback
from engine.native.model import NativeModel, capture_native_log, failure_message, llama
from engine.pixels import decode_rgb

log = logging.getLogger(__name__)

_MIB = re.compile(r"([\d.]+) MiB")


def mtmd() -> Any:
    """llama-cpp-python's ``mtmd_cpp`` bindings, with the library's log routed."""
    from llama_cpp import mtmd_cpp

    llama()
    callback = native_log_callback()
    mtmd_cpp.mtmd_log_set(callback, ctypes.c_void_p(0))
    mtmd_cpp.mtmd_helper_log_set(callback, ctypes.c_void_p(0))
    return mtmd_cpp


@dataclass(frozen=True)
class ProjectorMemory:
    """What llama.cpp's clip loader reported: weights and compute buffer, in bytes."""

    weights_bytes: int
    compute_bytes: int


class ImageChunk:
    """One image of a prompt, preprocessed: ``n_tokens`` embeddings once encoded.

    Owns a copy of the native chunk; freed with the object.
    """

    def __init__(self, ptr: Any, n_tokens: int, n_pos: int, image_id: str) -> None:
        self.ptr = ptr
        self.n_tokens = n_tokens
        self.n_pos = n_pos
        self.image_id = image_id
        self._finalizer = weakref.finalize(self, _free_chunk, ptr)

    def free(self) -> None:
        self._finalizer()


def _free_chunk(ptr: Any) -> None:
    from llama_cpp import mtmd_cpp

    mtmd_cpp.mtmd_input_chunk_free(ptr)


class NativeProjector:
    """A loaded projector bound to ``model``; :meth:`free` releases it.

    Args:
        model: the text model the projector feeds (its ``n_embd`` must match).
        path: the projector GGUF.
        threads: CPU threads for encoding.
        use_gpu: put the projector on the GPU llama.cpp chooses (False: on the CPU).

    Raises:
        ModelNotFoundError: no file at ``path``.
        ModelLoadError: llama.cpp refused the projector (the message says why).
    """

    def __init__(self, model: NativeModel, path: str, *, threads: int,
                 use_gpu: bool = True) -> None:
        if not Path(path).is_file():
            raise ModelNotFoundError(f"projector not found: {path}")
        lib = mtmd()
        params = lib.mtmd_context_params_default()
        params.use_gpu = use_gpu
        params.n_threads = max(1, threads)
        params.print_timings = False
        params.warmup = True  # reserves the compute buffer now, as llama.cpp's server does
        with capture_native_log() as captured:
            ptr = lib.mtmd_init_from_file(str(path).encode(), model.ptr, params)
        self.load_log = captured.lines
        if not ptr:
            raise ModelLoadError(failure_message(
                captured, f"loading the projector {Path(path).name} failed"))
        self.ptr = ptr
        self.path = path
        self.marker: str = lib.mtmd_default_marker().decode()  # = requests.MEDIA_MARKER
        self.vision = bool(lib.mtmd_support_vision(ptr))
        self.mrope = bool(lib.mtmd_decode_use_mrope(ptr))
        self.memory = loader_memory(captured.lines)
        log.info("projector loaded: %s (vision %s, %.1f MiB weights, %.1f MiB compute)",
                 Path(path).name, self.vision, self.memory.weights_bytes / 2**20,
                 self.memory.compute_bytes / 2**20)

    def refusal(self) -> str | None:
        """Why images cannot be asked about with this projector (None when they can)."""
        if not self.vision:
            return "the projector has no vision encoder"
        if self.mrope:
            # M-RoPE gives an image fewer positions than tokens; the scheduler counts one
            # position per token
            return "this model's image positions (M-RoPE) are not supported yet"
        return None

    def tokenize(self, text: str, images: Sequence[bytes]) -> list[list[int] | ImageChunk]:
        """Split ``text`` at its media markers into text tokens and image chunks.

        Images are decoded here in Python (:mod:`engine.pixels`), never by libmtmd's
        buffer or file helpers: those fall back to running ``ffmpeg`` on bytes stb cannot
        read.

        Raises:
            ImageInputError: an image cannot be decoded, or markers and images disagree.
        """
        markers = text.count(self.marker)
        if markers != len(images):
            raise ImageInputError(f"the prompt has a different number of image markers "
                                  f"({markers} {self.marker}) than images ({len(images)})")
        lib = mtmd()
        bitmaps = []
        chunks = lib.mtmd_input_chunks_init()
        try:
            for i, data in enumerate(images):
                bitmaps.append(_bitmap(lib, data, i))
            raw = text.encode("utf-8")
            inp = lib.mtmd_input_text(raw, len(raw), False, True)
            arr = (lib.mtmd_bitmap_p_ctypes * max(1, len(bitmaps)))(*bitmaps)
            rc = lib.mtmd_tokenize(self.ptr, chunks, ctypes.byref(inp), arr, len(bitmaps))
            if rc != 0:
                raise ImageInputError("an image could not be preprocessed")
            return self._parts(chunks)
        finally:
            lib.mtmd_input_chunks_free(chunks)
            for bitmap in bitmaps:
                lib.mtmd_bitmap_free(bitmap)

    def _parts(self, chunks: Any) -> list[list[int] | ImageChunk]:
        lib = mtmd()
        out: list[list[int] | ImageChunk] = []
        for i in range(lib.mtmd_input_chunks_size(chunks)):
            chunk = lib.mtmd_input_chunks_get(chunks, i)
            kind = lib.mtmd_input_chunk_get_type(chunk)
            if kind == lib.MTMD_INPUT_CHUNK_TYPE_TEXT:
                n = ctypes.c_size_t(0)
                tokens = lib.mtmd_input_chunk_get_tokens_text(chunk, ctypes.byref(n))
                out.append([int(tokens[j]) for j in range(n.value)])
            elif kind == lib.MTMD_INPUT_CHUNK_TYPE_IMAGE:
                raw_id = lib.mtmd_input_chunk_get_id(chunk) or b""
                out.append(ImageChunk(lib.mtmd_input_chunk_copy(chunk),
                                      int(lib.mtmd_input_chunk_get_n_tokens(chunk)),
                                      int(lib.mtmd_input_chunk_get_n_pos(chunk)),
                                      raw_id.decode("ascii", "replace")))
            else:
                raise ImageInputError("only images are supported, not audio")
        return out

    def non_causal(self, image: ImageChunk) -> bool:
        """Whether the text model reads this image's tokens all at once (Gemma 3): they
        must then fit in one micro-batch."""
        return bool(mtmd().mtmd_decode_use_non_causal(self.ptr, image.ptr))

    def encode(self, image: ImageChunk) -> Any:
        """Run the vision encoder on ``image``; returns the embeddings (valid until the next
        encode).

        Raises:
            ImageInputError: llama.cpp's encoder failed.
        """
        lib = mtmd()
        if lib.mtmd_encode_chunk(self.ptr, image.ptr) != 0:
            raise ImageInputError("the vision encoder failed on this image")
        return lib.mtmd_get_output_embd(self.ptr)

    def decode(self, ctx_ptr: Any, image: ImageChunk, embd: Any, n_past: int, seq: int,
               n_batch: int) -> int:
        """Decode ``image``'s embeddings into sequence ``seq`` from position ``n_past``;
        returns the position after it.

        Raises:
            ImageInputError: ``llama_decode`` failed on the embeddings.
        """
        lib = mtmd()
        new_n_past = llama().llama_pos(0)
        rc = lib.mtmd_helper_decode_image_chunk(
            self.ptr, ctx_ptr, image.ptr, embd, n_past, seq, n_batch,
            ctypes.byref(new_n_past), lib.mtmd_helper_post_decode_callback(), None)
        if rc != 0:
            raise ImageInputError(f"decoding the image's embeddings failed ({rc})")
        return int(new_n_past.value)

    def free(self) -> None:
        """Release the projector. Idempotent."""
        if self.ptr:
            mtmd().mtmd_free(self.ptr)
            self.ptr = None


def _bitmap(lib: Any, data: bytes, index: int) -> Any:
    """A native bitmap of ``data``'s pixels, its id the pixels' hash (prefix reuse)."""
    try:
        image = decode_rgb(data)
    except ImageInputError as exc:
        raise ImageInputError(f"image {index + 1}: {exc}") from exc
    buf = (ctypes.c_uint8 * len(image.rgb)).from_buffer_copy(image.rgb)
    bitmap = lib.mtmd_bitmap_init(image.width, image.height, buf)
    if not bitmap:
        raise ImageInputError(f"image {index + 1} could not be decoded")
    lib.mtmd_bitmap_set_id(bitmap, image.image_id.encode("ascii"))
    return bitmap


def loader_memory(lines: Sequence[str]) -> ProjectorMemory:
    """Weights and compute buffer from the clip loader's log lines ("model size: X MiB",
    "<backend> compute buffer size = X MiB"); 0 where a line is missing."""
    weights = compute = 0.0
    for line in lines:
        found = _MIB.search(line)
        if found is None:
            continue
        if "model size:" in line:
            weights += float(found.group(1))
        elif "compute buffer size" in line:
            compute += float(found.group(1))
    return ProjectorMemory(int(weights * 2**20), int(compute * 2**20))
