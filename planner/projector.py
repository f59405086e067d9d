"""A vision projector (``mmproj-*.gguf``): its weights, its compute buffer, and what an image
costs in TTFT, from its GGUF header alone.

llama.cpp's ``--fit`` leaves the projector out of its sums (llama.cpp #18181); here it is
priced. The compute buffer follows the ViT graph llama.cpp's clip library builds and the
peak its graph allocator reaches (checked by ``bench/vision.py`` for LLaVA's MLP and
Gemma 3's projector). LLaVA's graph: the larger of a
transformer block (the FFN's ``n_patches x n_ff`` floats plus three rows of width
``n_embd``, or without flash attention the ``n_patches^2 x n_head`` attention scores plus
four rows, and the raw image beside them unless a row fits into its block) and the
projector MLP (its hidden and output rows, the gathered patches and the raw image).
The SigLIP graph (Gemma 3 and kin): the FFN's floats plus three rows, or the attention
scores plus six. Other projector types get the LLaVA estimate with their own token count
(``exact`` is False for them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from planner.gguf import GGUFHeader

_F32 = 4
# projector types that shrink each side of the patch grid by a factor (the header's
# clip.vision.projector.scale_factor, else llama.cpp's default for the type)
_SCALED = {"gemma3": 4, "idefics3": 3, "llama4": 2, "internvl": 2}
# types built by llama.cpp's SigLIP graph (the generic ViT builder, then their projector)
_SIGLIP_GRAPH = frozenset({"gemma3", "idefics3", "lfm2", "janus_pro", "phi4"})
# types whose patches merge 2x2 into one token
_MERGE_2X2 = frozenset({"qwen2vl_merger", "qwen2.5vl_merger", "qwen3vl_merger", "glm4v",
                        "ldp", "ldpv2", "glm_edge", "pixtral", "kimivl"})


@dataclass(frozen=True)
class ProjectorProfile:
    """What the planner needs of a projector, read from its header.

    Attributes:
        projector_type: ``clip.projector_type`` (``mlp``, ``gemma3`` ...).
        weights_bytes: the bytes of its tensors (llama.cpp loads them all).
        n_embd, n_ff, n_head, n_layer: the vision encoder's shape.
        image_size, patch_size: the encoder's input side and patch side (pixels).
        proj_hidden: the projector MLP's hidden width (0 when it has none).
        n_embd_text: the width of the embeddings it hands the text model.
        image_tokens: tokens one image becomes in the text model's sequence.
        exact: whether the compute buffer model was checked on this projector type.
    """

    projector_type: str
    weights_bytes: int
    n_embd: int
    n_ff: int
    n_head: int
    n_layer: int
    image_size: int
    patch_size: int
    proj_hidden: int
    n_embd_text: int
    image_tokens: int
    exact: bool

    @property
    def n_patches(self) -> int:
        """Patches the encoder attends over (one image at its input size)."""
        side = self.image_size // max(1, self.patch_size)
        return side * side

    @property
    def params(self) -> int:
        """Multiply-add weights of the encoder and projector (what encoding reads)."""
        block = 4 * self.n_embd * self.n_embd + 2 * self.n_embd * self.n_ff
        return self.n_layer * block + self.n_embd * self.proj_hidden + \
            self.proj_hidden * self.n_embd_text


def _int(meta: dict[str, Any], key: str) -> int:
    value = meta.get(key)
    return int(value) if isinstance(value, int | float) else 0


def is_projector(header: GGUFHeader) -> bool:
    """Whether a parsed GGUF is a multimodal projector (``general.architecture = clip``)."""
    return header.metadata.get("general.architecture") == "clip"


def projector_profile(header: GGUFHeader) -> ProjectorProfile:
    """Read a projector's profile from its parsed header.

    Raises:
        ValueError: the file is not a projector with a vision encoder.
    """
    meta = header.metadata
    if not is_projector(header) or not meta.get("clip.has_vision_encoder", True):
        raise ValueError("not a vision projector (general.architecture is not clip)")
    kind = str(meta.get("clip.projector_type") or meta.get("clip.vision.projector_type") or "")
    shapes = {t.name: t.shape for t in header.tensors}
    hidden = shapes.get("mm.0.weight", (0, 0))[1] if "mm.2.weight" in shapes else 0
    if "mm.2.weight" in shapes:
        out = shapes["mm.2.weight"][1]
    elif "mm.input_projection.weight" in shapes:  # gemma3
        out = shapes["mm.input_projection.weight"][0]
    else:
        out = _int(meta, "clip.vision.projection_dim")
    size, patch = _int(meta, "clip.vision.image_size"), _int(meta, "clip.vision.patch_size")
    side = size // max(1, patch)
    if kind in _SCALED:
        scale = _int(meta, "clip.vision.projector.scale_factor") or _SCALED[kind]
        tokens = (side // scale) ** 2
    elif kind in _MERGE_2X2:
        tokens = (side // 2) ** 2
    else:
        tokens = side * side
    return ProjectorProfile(
        projector_type=kind, weights_bytes=sum(t.nbytes for t in header.tensors),
        n_embd=_int(meta, "clip.vision.embedding_length"),
        n_ff=_int(meta, "clip.vision.feed_forward_length"),
        n_head=max(1, _int(meta, "clip.vision.attention.head_count")),
        n_layer=_int(meta, "clip.vision.block_count"), image_size=size, patch_size=patch,
        proj_hidden=hidden, n_embd_text=out, image_tokens=tokens,
        exact=kind in ("mlp", "", "gemma3"))


def compute_bytes(p: ProjectorProfile, flash_attn: bool = True) -> int:
    """The compute buffer llama.cpp's clip library reserves for one image at input size."""
    n = p.n_patches
    raw = p.image_size * p.image_size * 3 * _F32
    hidden = n * p.n_embd * _F32
    scores = n * p.n_ff if flash_attn else n * n * p.n_head  # the FFN's or attention's
    if p.projector_type in _SIGLIP_GRAPH:
        # the ViT builder (build_vit): Q, K and V made contiguous beside the scores
        return scores * _F32 + (3 if flash_attn else 6) * hidden
    block = scores * _F32 + (3 if flash_attn else 4) * hidden
    # the raw image's block (or the patch convolution's, of the same size) stays apart
    # while a block runs unless a row of hidden states fits into it (measured)
    if raw < hidden:
        block += raw
    projector = p.image_tokens * (p.proj_hidden + p.n_embd_text) * _F32 + hidden + raw
    return max(block, projector)


def encode_flops(p: ProjectorProfile) -> float:
    """Floating-point operations to encode one image (2 per multiply-add; attention too)."""
    n = p.n_patches
    attention = p.n_layer * 2 * 2 * n * n * p.n_embd
    return 2.0 * p.params * n + attention


@dataclass(frozen=True)
class ProjectorUse:
    """Where the projector lives and what an image costs.

    Attributes:
        device: ``gpu0`` ... or ``host``.
        weights_bytes, compute_bytes: its memory on that device.
        image_tokens: prompt tokens per image.
        encode_s: seconds to encode one image there.
    """

    device: str
    weights_bytes: int
    compute_bytes: int
    image_tokens: int
    encode_s: float

    @property
    def total_bytes(self) -> int:
        return self.weights_bytes + self.compute_bytes

    def to_json(self) -> dict[str, Any]:
        return {"device": self.device, "weights_bytes": self.weights_bytes,
                "compute_bytes": self.compute_bytes, "image_tokens": self.image_tokens,
                "encode_s": round(self.encode_s, 4)}


def place_projector(p: ProjectorProfile, device: str, flops_per_s: float,
                    flash_attn: bool = True) -> ProjectorUse:
    """The projector on ``device``, which computes ``flops_per_s`` in prefill."""
    return ProjectorUse(device=device, weights_bytes=p.weights_bytes,
                        compute_bytes=compute_bytes(p, flash_attn),
                        image_tokens=p.image_tokens,
                        encode_s=encode_flops(p) / max(1.0, flops_per_s))


def image_ttft_s(text_ttft_s: float, prefill_tps: float, use: ProjectorUse,
                 images: int = 1) -> float:
    """TTFT of a prompt with ``images`` images: the text's TTFT, each image's tokens as
    prefill, and each image's encoding."""
    per_image = use.image_tokens / max(1e-9, prefill_tps) + use.encode_s
    return text_ttft_s + images * per_image
