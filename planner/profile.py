"""What a GGUF model is, from its header alone: the ``ModelProfile``.

Produced by :func:`planner.gguf.read_profile` (the reader is an input adapter over a
``read_at(offset, size) -> bytes`` function); consumed by the memory model and planner.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property


class TensorKind(StrEnum):
    """How the planner groups tensors (by what is read per token and where it may go)."""

    ATTENTION = "attention"        # q/k/v/o projections, MLA, attention-side norms excluded
    NORM = "norm"                  # every *_norm tensor
    FFN = "ffn"                    # dense FFN (gate/up/down) and the MoE router
    EXPERTS = "experts"            # routed experts: *_exps
    SHARED_EXPERTS = "shared_experts"  # *_shexp
    RECURRENT = "recurrent"        # SSM / linear-attention tensors of hybrid models
    NEXTN = "nextn"                # NextN / MTP layers (every tensor of such a layer)
    TOKEN_EMBD = "token_embd"
    OUTPUT = "output"              # output projection and output_norm
    OTHER = "other"


class LayerKind(StrEnum):
    """How a layer holds context: a full KV cache, a windowed one, or a fixed state."""

    FULL = "full"          # global attention: KV grows with context
    SWA = "swa"            # sliding-window attention: KV capped at the window
    RECURRENT = "recurrent"  # SSM / linear attention: fixed state per sequence
    NEXTN = "nextn"        # MTP head layer (KV only when MTP is loaded)


@dataclass(frozen=True)
class TensorInfo:
    """One entry of the GGUF tensor table."""

    name: str
    ggml_type: str           # "Q4_K", "F16", ... (gguf's GGMLQuantizationType name)
    shape: tuple[int, ...]   # GGUF order (ne0 first)
    nbytes: int
    offset: int              # absolute offset of the data in its file
    layer: int | None        # block index for ``blk.N.*`` tensors
    kind: TensorKind
    shard: int = 0           # which file of a split model holds it

    @property
    def n_elements(self) -> int:
        count = 1
        for dim in self.shape:
            count *= dim
        return count


@dataclass(frozen=True)
class LayerProfile:
    """One transformer block: its tensor bytes by kind and its KV geometry.

    ``n_head_kv`` of 0 means the layer keeps no attention KV (recurrent layers).
    ``recurrent_state_bytes`` is per sequence (f32 conv + ssm state, as llama.cpp keeps it).
    For MLA models (deepseek2-style) ``head_dim_k``/``head_dim_v`` are the cached widths
    (kv_lora_rank + rope dim and 0... as llama.cpp caches them) with ``n_head_kv`` = 1.
    """

    index: int
    kind: LayerKind
    bytes_by_kind: tuple[tuple[TensorKind, int], ...]
    n_head: int = 0
    n_head_kv: int = 0
    head_dim_k: int = 0
    head_dim_v: int = 0
    swa_window: int = 0
    recurrent_state_bytes: int = 0
    n_ff: int = 0             # dense FFN width (ffn_up rows)
    n_ff_exp: int = 0         # routed expert FFN width
    n_ff_shexp: int = 0       # shared expert FFN width
    recurrent_width: int = 0  # conv channels of a recurrent block (ssm_conv1d)
    recurrent_inner: int = 0  # its inner (value) width (ssm.inner_size)
    recurrent_heads: int = 0  # its value heads (ssm.time_step_rank)
    qk_norm: bool = False     # per-head norms on Q and K (attn_q_norm / attn_k_norm)
    post_norms: bool = False  # norms after attention / FFN (post_attention_norm, ...)

    def bytes_of(self, *kinds: TensorKind) -> int:
        """Bytes of this layer's tensors of the given kinds (all kinds if none given)."""
        if not kinds:
            return self.total_bytes
        by_kind = self._by_kind
        if len(kinds) == 1:
            return by_kind.get(kinds[0], 0)
        return sum(by_kind.get(k, 0) for k in set(kinds))

    # the planner asks these thousands of times per plan: computed once per layer
    @cached_property
    def _by_kind(self) -> dict[TensorKind, int]:
        out: dict[TensorKind, int] = {}
        for k, b in self.bytes_by_kind:
            out[k] = out.get(k, 0) + b
        return out

    @cached_property
    def total_bytes(self) -> int:
        return sum(b for _, b in self.bytes_by_kind)


@dataclass(frozen=True)
class ModelProfile:
    """Everything the planner needs to know about a model, read from its header."""

    architecture: str
    name: str
    file_bytes: int                      # all shards together
    n_layers: int                        # block_count (NextN layers included, as in GGUF)
    n_embd: int
    n_vocab: int
    n_ctx_train: int
    layers: tuple[LayerProfile, ...]
    tensors: tuple[TensorInfo, ...]
    token_embd_bytes: int
    output_bytes: int                    # output.weight + output_norm (0 if tied)
    other_bytes: int                     # tensors outside blocks and not embd/output
    expert_count: int = 0
    expert_used_count: int = 0
    nextn_layers: int = 0                # trailing NextN/MTP blocks (counted in n_layers)
    rope_scaling: str | None = None      # "linear" / "yarn" / ... when the file sets one
    rope_scaling_factor: float = 0.0
    chat_template: str | None = None
    file_type: str = "unknown"           # "Q4_K_M", "Q8_0", ... (general.file_type)
    quant_bytes: tuple[tuple[str, int], ...] = ()  # ggml type -> bytes
    n_params: int = 0
    shards: int = 1
    tied_output: bool = False            # no output.weight: the embeddings double as output
    metadata: tuple[tuple[str, str], ...] = field(default=(), repr=False)  # scalar KVs

    @property
    def is_moe(self) -> bool:
        return self.expert_count > 1

    @cached_property
    def weights_bytes(self) -> int:
        """Bytes of every tensor (what llama.cpp's model buffers hold in total)."""
        return sum(t.nbytes for t in self.tensors)

    @cached_property
    def _block_matrices(self) -> tuple[dict[str, int], int]:
        out: dict[str, int] = {}
        weights = 0
        for t in self.tensors:
            if t.layer is not None and len(t.shape) > 1:
                out[t.ggml_type] = out.get(t.ggml_type, 0) + t.nbytes
                weights += t.n_elements
        return out, weights

    @property
    def block_quant_bytes(self) -> tuple[tuple[str, int], ...]:
        """ggml type -> bytes of the matrices inside the blocks (what a prompt's tokens are
        all multiplied by: the embedding is a lookup, the output layer runs for the last
        token only); :attr:`quant_bytes` when the tensor table is not known."""
        return tuple(self._block_matrices[0].items()) or self.quant_bytes

    @property
    def block_bits_per_weight(self) -> float:
        """Bits per weight of the blocks' matrices (a file's embedding and output are often
        of another type); :attr:`bits_per_weight` when the tensor table is not known."""
        nbytes, weights = self._block_matrices
        return 8.0 * sum(nbytes.values()) / weights if weights else self.bits_per_weight

    @property
    def bits_per_weight(self) -> float:
        return 8.0 * self.weights_bytes / self.n_params if self.n_params else 0.0

    def meta(self, key: str, default: str = "") -> str:
        """A scalar metadata value as text (arrays are not kept)."""
        for k, v in self.metadata:
            if k == key:
                return v
        return default
