"""Write a tiny multimodal projector (``mmproj-*.gguf``) and a text model it pairs with.

The projector is a CLIP vision encoder with a LLaVA MLP projector (``clip.projector_type
= mlp``), the plainest one llama.cpp's multimodal library loads: a patch convolution,
learned positions, ``n_layer`` ViT blocks (the LLaVA graph runs all but the last) and a
two-matrix MLP whose output width is the text model's ``n_embd``. Images are resized to
``image_size`` squared and cut into ``(image_size / patch_size) ** 2`` tokens.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from gguf import GGUFWriter

from tests.helpers.gguf_factory import Shape, _aligned, write_gemma3, write_llama


@dataclass(frozen=True)
class VisionShape:
    """Hyper-parameters of a synthetic CLIP vision encoder + MLP projector."""

    image_size: int = 32
    patch_size: int = 8
    n_embd: int = 32
    n_head: int = 2
    n_ff: int = 64
    n_layer: int = 2
    proj_hidden: int = 64
    n_embd_text: int = 64
    kind: str = "mlp"          # "mlp" (LLaVA) or "gemma3" (SigLIP, average pool, RMS norm)
    scale_factor: int = 4      # gemma3: the pool's side

    @property
    def image_tokens(self) -> int:
        """Tokens one image becomes in the text model's sequence."""
        side = self.image_size // self.patch_size
        if self.kind == "gemma3":
            side //= self.scale_factor
        return side * side

    @property
    def n_patches(self) -> int:
        return (self.image_size // self.patch_size) ** 2


def mmproj_tensors(v: VisionShape) -> list[tuple[str, tuple[int, ...], str]]:
    """The projector's tensor table (GGUF shapes, ne0 first)."""
    n_pos = v.n_patches
    out: list[tuple[str, tuple[int, ...], str]] = [
        ("v.patch_embd.weight", (v.patch_size, v.patch_size, 3, v.n_embd), "F16"),
        ("v.patch_embd.bias", (v.n_embd,), "F32"),
        ("v.position_embd.weight", (v.n_embd, n_pos), "F32"),
        ("v.pre_ln.weight", (v.n_embd,), "F32"),
        ("v.pre_ln.bias", (v.n_embd,), "F32"),
    ]
    for i in range(v.n_layer):
        p = f"v.blk.{i}"
        out += [(f"{p}.ln1.weight", (v.n_embd,), "F32"), (f"{p}.ln1.bias", (v.n_embd,), "F32")]
        for name in ("attn_q", "attn_k", "attn_v", "attn_out"):
            out += [(f"{p}.{name}.weight", (v.n_embd, v.n_embd), "F16"),
                    (f"{p}.{name}.bias", (v.n_embd,), "F32")]
        out += [(f"{p}.ln2.weight", (v.n_embd,), "F32"), (f"{p}.ln2.bias", (v.n_embd,), "F32"),
                (f"{p}.ffn_up.weight", (v.n_embd, v.n_ff), "F16"),
                (f"{p}.ffn_up.bias", (v.n_ff,), "F32"),
                (f"{p}.ffn_down.weight", (v.n_ff, v.n_embd), "F16"),
                (f"{p}.ffn_down.bias", (v.n_embd,), "F32")]
    if v.kind == "gemma3":
        out += [("v.post_ln.weight", (v.n_embd,), "F32"),
                ("v.post_ln.bias", (v.n_embd,), "F32"),
                ("mm.soft_emb_norm.weight", (v.n_embd,), "F32"),
                ("mm.input_projection.weight", (v.n_embd_text, v.n_embd), "F16")]
        return out
    out += [("mm.0.weight", (v.n_embd, v.proj_hidden), "F16"),
            ("mm.0.bias", (v.proj_hidden,), "F32"),
            ("mm.2.weight", (v.proj_hidden, v.n_embd_text), "F16"),
            ("mm.2.bias", (v.n_embd_text,), "F32")]
    return out


def write_mmproj(path: Path, shape: VisionShape | None = None, seed: int = 1,
                 header_only: bool = False) -> Path:
    """Write a loadable projector GGUF with small random weights; returns ``path``.

    ``header_only``: the data is left as a hole (all zeros when read), for projectors of
    real sizes whose memory llama.cpp reports without the weights mattering."""
    v = shape or VisionShape()
    if v.image_size % v.patch_size:
        raise ValueError("image_size must be a multiple of patch_size")
    path = Path(path)
    rng = np.random.default_rng(seed)
    w = GGUFWriter(str(path), "clip")
    w.add_name("synthetic-mmproj")
    w.add_string("clip.projector_type", v.kind)
    if v.kind == "gemma3":
        w.add_uint32("clip.vision.projector.scale_factor", v.scale_factor)
    w.add_bool("clip.has_vision_encoder", True)
    w.add_bool("clip.use_gelu", True)
    w.add_uint32("clip.vision.image_size", v.image_size)
    w.add_uint32("clip.vision.patch_size", v.patch_size)
    w.add_uint32("clip.vision.embedding_length", v.n_embd)
    w.add_uint32("clip.vision.feed_forward_length", v.n_ff)
    w.add_uint32("clip.vision.projection_dim", v.n_embd_text)
    w.add_uint32("clip.vision.attention.head_count", v.n_head)
    w.add_float32("clip.vision.attention.layer_norm_epsilon", 1e-6)
    w.add_uint32("clip.vision.block_count", v.n_layer)
    w.add_array("clip.vision.image_mean", [0.5, 0.5, 0.5])
    w.add_array("clip.vision.image_std", [0.5, 0.5, 0.5])
    w.add_uint32("general.file_type", 1)
    if header_only:
        return _write_header_only(w, path, v)
    for name, shape_, type_name in mmproj_tensors(v):
        arr = rng.standard_normal(tuple(reversed(shape_)), dtype=np.float32) * 0.05
        if name.endswith(("ln1.weight", "ln2.weight", "pre_ln.weight", "post_ln.weight",
                          "soft_emb_norm.weight")):
            arr = np.ones_like(arr)
        w.add_tensor(name, arr.astype(np.float16 if type_name == "F16" else np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def _write_header_only(w: GGUFWriter, path: Path, v: VisionShape) -> Path:
    size = 0
    for name, shape_, type_name in mmproj_tensors(v):
        dtype = np.dtype(np.float16 if type_name == "F16" else np.float32)
        nbytes = int(np.prod(shape_)) * dtype.itemsize
        w.add_tensor_info(name, tuple(reversed(shape_)), dtype, nbytes)
        size = _aligned(size, w.data_alignment) + nbytes
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    w.close()
    with open(path, "r+b") as f:
        f.truncate(_aligned(path.stat().st_size, w.data_alignment) + size)
    return path


def write_vision_pair(folder: Path, shape: VisionShape | None = None,
                      text: Shape | None = None, stem: str = "tiny-vision") -> tuple[Path, Path]:
    """A text model and its projector side by side, named as hub repos name them:
    ``<stem>-F16.gguf`` and ``mmproj-<stem>-F16.gguf``. Returns (model, projector)."""
    v = shape or VisionShape()
    t = text or Shape(n_embd=v.n_embd_text)
    if t.n_embd != v.n_embd_text:
        raise ValueError("the projector's output width must be the text model's n_embd")
    folder.mkdir(parents=True, exist_ok=True)
    writer = write_gemma3 if v.kind == "gemma3" else write_llama
    model = writer(folder / f"{stem}-F16.gguf", t)
    projector = write_mmproj(folder / f"mmproj-{stem}-F16.gguf", v)
    return model, projector


def png_bytes(width: int, height: int, seed: int = 0) -> bytes:
    """A valid RGB PNG of the given size with random pixels (zlib, no PIL needed)."""
    import struct
    import zlib

    rng = np.random.default_rng(seed)
    pixels = rng.integers(0, 256, size=(height, width, 3), dtype=np.uint8)
    raw = b"".join(b"\x00" + pixels[y].tobytes() for y in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw))
            + chunk(b"IEND", b""))
