"""The memory model: bytes llama.cpp allocates per device for a configuration.

Mirrors llama.cpp (the version bundled with llama-cpp-python 0.3.36):
- weights: each tensor on the device of its block (routed experts may be elsewhere);
  the token embeddings stay in host memory; a tied output is copied to a GPU output device;
- KV cache (``llama_kv_cache``): ``n_ctx`` padded to 256, split into ``n_seq`` streams
  unless unified; SWA layers hold ``pad256(min(n_ctx_seq, window + n_ubatch))`` cells per
  stream unless ``swa_full``; V is stored transposed (width of the widest layer) without
  flash attention; MLA caches no V; recurrent layers hold f32 states per sequence;
- output buffer: ``n_vocab`` f32 logits per sequence, in host memory;
- compute buffers: :mod:`planner.compute_buffer` replays ggml's allocator;
- overhead: fixed per-device runtime cost (backend context, kernels), 0 for host here.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

from planner.compute_buffer import GraphParams, LayerShape, compute_bytes
from planner.ggml_types import ggml_type
from planner.profile import LayerKind, LayerProfile, ModelProfile, TensorKind

HOST = "host"
F32_BYTES = 4
# A CUDA/ROCm context plus cuBLAS workspace and kernels (not measurable on CPU-only builds).
GPU_OVERHEAD_BYTES = 300 * 1024 * 1024
_NON_EXPERT = tuple(k for k in TensorKind if k != TensorKind.EXPERTS)


@dataclass(frozen=True)
class Placement:
    """Where tensors live; device ids are "host", "gpu0", "gpu1", ...

    ``layer_devices[i]``: device of block i's non-expert tensors (and its KV when
    ``offload_kqv``); ``expert_devices[i]``: device of its routed experts (``*_exps``).
    The token embeddings always live in host memory, as llama.cpp keeps the input layer
    on the CPU.
    """

    layer_devices: tuple[str, ...]
    expert_devices: tuple[str, ...]
    output_device: str = HOST
    # the GPU that runs the prompt's matrix products of host weights (ggml's op offload:
    # the first GPU llama.cpp is given), when no tensor of the model is on a GPU
    offload_device: str = ""

    def __post_init__(self) -> None:
        if self.expert_devices and len(self.expert_devices) != len(self.layer_devices):
            raise ValueError(f"Placement: {len(self.expert_devices)} expert devices for "
                             f"{len(self.layer_devices)} layers (give one per layer, or none)")

    @staticmethod
    def all_on(device: str, n_layers: int) -> Placement:
        """Every block, expert and the output on ``device``."""
        return Placement((device,) * n_layers, (device,) * n_layers, device)


@dataclass(frozen=True)
class MemoryConfig:
    """A llama.cpp context configuration (names as ``llama_context_params``)."""

    n_ctx: int                 # total KV cells (context per sequence x n_seq)
    n_seq: int = 1
    type_k: str = "f16"
    type_v: str = "f16"
    flash_attn: bool = False
    n_batch: int = 2048
    n_ubatch: int = 512
    offload_kqv: bool = True
    swa_full: bool = False
    load_mtp: bool = False     # NextN/MTP layers allocated (weights + KV) only when True
    kv_unified: bool = False


@dataclass(frozen=True)
class DeviceMemory:
    """Bytes one device holds for a loaded model and context."""

    device: str
    weights_bytes: int
    kv_bytes: int
    compute_bytes: int
    output_bytes: int
    overhead_bytes: int

    @property
    def total_bytes(self) -> int:
        """Everything this device holds, in bytes."""
        return (self.weights_bytes + self.kv_bytes + self.compute_bytes + self.output_bytes
                + self.overhead_bytes)


@dataclass(frozen=True)
class ContextSize:
    """How llama.cpp sizes a context from a :class:`MemoryConfig`."""

    n_ctx: int        # total cells after padding
    n_ctx_seq: int    # cells per stream
    n_stream: int
    n_batch: int
    n_ubatch: int


def _pad(n: int, to: int = 256) -> int:
    return -(-n // to) * to


def context_size(config: MemoryConfig) -> ContextSize:
    """The padded context, per-stream size and batch sizes llama.cpp will use."""
    n_seq = max(1, config.n_seq)
    n_ctx = _pad(max(1, config.n_ctx))
    if config.kv_unified:
        n_ctx_seq, n_stream = n_ctx, 1
    else:
        n_ctx_seq = _pad(max(1, n_ctx // n_seq))
        n_ctx, n_stream = n_ctx_seq * n_seq, n_seq
    n_batch = min(n_ctx, config.n_batch)
    n_ubatch = min(n_batch, config.n_ubatch or n_batch)
    return ContextSize(n_ctx, n_ctx_seq, n_stream, n_batch, n_ubatch)


def _layer_cells(layer: LayerProfile, config: MemoryConfig, size: ContextSize) -> int:
    """KV cells per stream of one attention layer."""
    if layer.kind == LayerKind.SWA and not config.swa_full:
        window = layer.swa_window * (max(1, config.n_seq) if config.kv_unified else 1)
        return _pad(min(size.n_ctx_seq, window + size.n_ubatch))
    return size.n_ctx_seq


def _v_width_max(profile: ModelProfile) -> int:
    return max((la.n_head_kv * la.head_dim_v for la in profile.layers), default=0)


def kv_bytes_per_cell(profile: ModelProfile, type_k: str = "f16", type_v: str = "f16",
                      flash_attn: bool = False) -> int:
    """KV bytes one context cell costs across the full-attention layers.

    ``flash_attn`` defaults to False, as :class:`MemoryConfig` does: V is then stored
    transposed at the width of the widest layer.

    SWA layers cost a fixed amount per sequence (see :func:`kv_layer_bytes`); recurrent
    layers a fixed state. Use this to size the context left after fixed costs.
    """
    tk, tv = ggml_type(type_k), ggml_type(type_v)
    v_max = _v_width_max(profile)
    total = 0
    for la in profile.layers:
        if la.kind != LayerKind.FULL or la.n_head_kv == 0:
            continue
        total += tk.row_bytes(la.n_head_kv * la.head_dim_k)
        if la.head_dim_v:
            total += tv.row_bytes(la.n_head_kv * la.head_dim_v if flash_attn else v_max)
    return total


def kv_layer_bytes(profile: ModelProfile, layer: LayerProfile, config: MemoryConfig,
                   v_width_max: int | None = None) -> int:
    """KV (or recurrent-state) bytes of one layer under ``config``.

    ``v_width_max`` (the widest V row of the model) may be passed to save recomputing it.
    """
    if layer.kind == LayerKind.RECURRENT:
        return layer.recurrent_state_bytes * max(1, config.n_seq)
    if layer.n_head_kv == 0:
        return 0
    size = context_size(config)
    cells = _layer_cells(layer, config, size) * size.n_stream
    k = ggml_type(config.type_k).row_bytes(layer.n_head_kv * layer.head_dim_k) * cells
    if not layer.head_dim_v:
        return k
    if config.flash_attn:
        width = layer.n_head_kv * layer.head_dim_v
    else:
        width = _v_width_max(profile) if v_width_max is None else v_width_max
    return k + ggml_type(config.type_v).row_bytes(width) * cells


def output_buffer_bytes(profile: ModelProfile, config: MemoryConfig) -> int:
    """llama.cpp's output buffer: f32 logits for one output per sequence."""
    return profile.n_vocab * F32_BYTES * max(1, config.n_seq)


_GATED_ATTN = frozenset({"qwen3next", "qwen35", "qwen35moe"})
# builders that pick the output rows after the last block, not inside it, keeping the
# block's hidden state as an output (llama.cpp's models/openai-moe.cpp). Others written
# the same way (qwen35, deepseek2, glm4moe, ...) measure closer with the rows picked in
# the last block (bench/memory_accuracy.py: qwen35 +16% with them picked late)
_LATE_ROWS = frozenset({"gpt-oss"})
# recurrent blocks built as a gated delta net (llama.cpp's qwen35 / qwen3next builders)
_DELTA_NET = frozenset({"qwen3next", "qwen35", "qwen35moe"})
_MULTI_POS = frozenset({"qwen2vl", "qwen3vl", "qwen3vlmoe", "qwen35", "qwen35moe"})


def _layer_shape(profile: ModelProfile, layer: LayerProfile, config: MemoryConfig,
                 size: ContextSize, device: str, expert_device: str) -> LayerShape:
    moe = bool(layer.n_ff_exp) and profile.expert_count > 1
    gated = profile.architecture in _GATED_ATTN
    shape = LayerShape(
        "attn", layer.n_head or layer.n_head_kv, layer.head_dim_k,
        layer.head_dim_v or layer.head_dim_k,  # MLA: the latent comes out of attention
        layer.n_head_kv, _layer_cells(layer, config, size), n_ff=layer.n_ff,
        n_ff_exp=layer.n_ff_exp, n_expert=profile.expert_count if moe else 0,
        n_expert_used=profile.expert_used_count if moe else 0, n_ff_shexp=layer.n_ff_shexp,
        swa=layer.kind == LayerKind.SWA, qk_norm=layer.qk_norm,
        post_norms=layer.post_norms, gated_attn=gated, device=device,
        attn_device=device if config.offload_kqv else HOST,
        # experts left in RAM under a GPU layer: prompt batches copy them in (op offload)
        offload_copy=layer.bytes_of(TensorKind.EXPERTS) // 3
        if moe and device != HOST and expert_device == HOST else 0)
    if layer.kind == LayerKind.RECURRENT:
        delta = profile.architecture in _DELTA_NET
        return replace(shape, kind="recurrent", n_head_kv=0, n_kv=0, swa=False,
                       recurrent_width=layer.recurrent_width or 2 * profile.n_embd,
                       recurrent_state=layer.recurrent_state_bytes // 4,
                       delta_inner=layer.recurrent_inner if delta else 0,
                       delta_heads=layer.recurrent_heads if delta else 0)
    return shape


def _rot(type_name: str, head_dim: int, grow: bool) -> int:
    """Size of the Hadamard rotation llama.cpp applies before a quantized KV cache."""
    if not ggml_type(type_name).is_quantized or head_dim <= 0 or head_dim % 64:
        return 0
    n = 64
    while grow and head_dim % (n * 2) == 0:
        n *= 2
    return n


def estimate(profile: ModelProfile, config: MemoryConfig, placement: Placement,
             op_limits: tuple[tuple[str, int], ...] = (),
             reorder_devices: tuple[str, ...] = ()) -> tuple[DeviceMemory, ...]:
    """Bytes per device llama.cpp will allocate for ``profile`` under ``config``.

    Args:
        op_limits: per GPU device, the largest tensor its kernels take (see
            :attr:`planner.inventory.Gpu.max_tensor_bytes`); none: no limit.
        reorder_devices: GPU devices whose backend reorders the graph's nodes before
            allocating them (Vulkan), which changes what the allocator can reuse.

    Returns one :class:`DeviceMemory` per device named in ``placement`` (host first).
    Pure arithmetic over the profile's per-layer sums; cheap enough to call in loops.
    """
    size = context_size(config)
    others = {*placement.layer_devices, *placement.expert_devices, placement.output_device,
              placement.offload_device or HOST}
    devices = [HOST, *sorted(others - {HOST})]
    weights = dict.fromkeys(devices, 0)
    kv = dict.fromkeys(devices, 0)
    layers_of: dict[str, list[LayerProfile]] = {d: [] for d in devices}
    v_max = _v_width_max(profile)
    mtp: list[tuple[LayerProfile, str]] = []
    weights[HOST] += profile.token_embd_bytes + profile.other_bytes
    weights[placement.output_device] += profile.output_bytes
    if placement.output_device != HOST and profile.tied_output:
        weights[placement.output_device] += profile.token_embd_bytes  # tied: a copy
    for la in profile.layers:
        if la.kind == LayerKind.NEXTN and not config.load_mtp:
            continue
        i = min(la.index, len(placement.layer_devices) - 1)
        dev = placement.layer_devices[i] if placement.layer_devices else HOST
        exp_dev = placement.expert_devices[i] if placement.expert_devices else dev
        weights[dev] += la.bytes_of(*_NON_EXPERT)
        weights[exp_dev] += la.bytes_of(TensorKind.EXPERTS)
        kv[dev if config.offload_kqv else HOST] += kv_layer_bytes(profile, la, config, v_max)
        if la.kind != LayerKind.NEXTN:
            layers_of[dev].append(la)
        else:
            mtp.append((la, dev))
    compute = _compute(profile, config, size, placement, devices, layers_of, mtp, op_limits,
                       reorder_devices)
    outputs = 2 if config.load_mtp and mtp else 1  # the MTP context has its own
    out = []
    for d in devices:
        out.append(DeviceMemory(
            device=d, weights_bytes=weights[d], kv_bytes=kv[d], compute_bytes=compute[d],
            output_bytes=outputs * output_buffer_bytes(profile, config) if d == HOST else 0,
            overhead_bytes=0 if d == HOST else GPU_OVERHEAD_BYTES))
    return tuple(out)


def _compute(profile: ModelProfile, config: MemoryConfig, size: ContextSize,
             placement: Placement, devices: list[str],
             layers_of: dict[str, list[LayerProfile]],
             mtp: list[tuple[LayerProfile, str]],
             op_limits: tuple[tuple[str, int], ...] = (),
             reorder_devices: tuple[str, ...] = ()) -> dict[str, int]:
    result = dict.fromkeys(devices, 0)
    ordered = [(la, d) for d in devices for la in layers_of[d]]
    ordered.sort(key=lambda item: item[0].index)
    experts = placement.expert_devices
    gpus = [d for d in devices if d != HOST]
    # with a GPU present, llama.cpp runs the matmuls of host-resident weights on the first
    # GPU for prompt batches (op offload), copying the weights into its compute buffer
    offload = gpus[0] if gpus else None
    shapes = tuple(_compress(tuple(
        _offloaded(_layer_shape(profile, la, config, size, d,
                                experts[min(la.index, len(experts) - 1)] if experts else d),
                   la, offload, _kv_split(profile, la, config))
        for la, d in ordered)))
    # the output head's weight: the token embeddings when tied (output_bytes is the norm)
    head = (profile.token_embd_bytes if profile.tied_output
            else profile.output_bytes or profile.token_embd_bytes)
    attn = [la for la, _ in ordered if la.n_head_kv]
    head_k = attn[0].head_dim_k if attn else 0
    head_v = attn[0].head_dim_v if attn else 0
    params = GraphParams(
        n_tokens=size.n_ubatch, n_outputs=min(size.n_ubatch, size.n_batch),
        n_embd=profile.n_embd, n_vocab=profile.n_vocab, n_seq=max(1, config.n_seq),
        n_stream=size.n_stream, flash=config.flash_attn,
        k_rot=_rot(config.type_k, head_k, grow=True),
        v_rot=_rot(config.type_v, head_v, grow=False) if head_v else 0,
        v_trans_width=0 if config.flash_attn else _v_width_max(profile),
        n_pos=4 if profile.architecture in _MULTI_POS else 1,
        late_rows=profile.architecture in _LATE_ROWS,
        output_device=offload if placement.output_device == HOST and offload
        else placement.output_device,
        output_copy=head if placement.output_device == HOST and offload else 0,
        output_weight=head,
        op_limits=tuple(sorted(op_limits)), reorder_devices=tuple(sorted(reorder_devices)))
    for dev, nbytes in compute_bytes(shapes, params, True):
        result[dev] = result.get(dev, 0) + nbytes
    if config.load_mtp and mtp:
        for dev, nbytes in _mtp_compute(profile, config, size, params, mtp):
            result[dev] = result.get(dev, 0) + nbytes
    return result


def _offloaded(shape: LayerShape, layer: LayerProfile, offload: str | None,
               kv: tuple[int, int]) -> LayerShape:
    """A host layer's share of the graph when a GPU runs it for prompt batches (op
    offload: ggml's scheduler sends every op that reads a host weight to the GPU and
    the ops between them follow): the weights of each split are copied in, the new K/V
    rows go back to the host cache and the cache is copied in for attention."""
    if shape.device != HOST or offload is None:
        return shape
    if shape.kind != "attn":
        if shape.delta_inner:  # each weight copied at its own split, the states too
            ffn = layer.bytes_of(TensorKind.EXPERTS) or layer.bytes_of(TensorKind.FFN)
            return moved_layer(shape, offload, offload, ffn // 3, 0, 0,
                               layer.bytes_of(TensorKind.RECURRENT, TensorKind.ATTENTION))
        copied = layer.total_bytes - layer.bytes_of(TensorKind.ATTENTION) * 3 // 4
        return moved_layer(shape, offload, HOST, copied // 3, 0, 0, 0)
    # each matmul's weight is copied at the start of its own split: the FFN's three
    # (a MoE's routed experts) and attention's four projections
    ffn = layer.bytes_of(TensorKind.EXPERTS) or layer.bytes_of(TensorKind.FFN)
    return moved_layer(shape, offload, offload, ffn // 3, kv[0], kv[1],
                       layer.bytes_of(TensorKind.ATTENTION))


@lru_cache(maxsize=4096)
def moved_layer(shape: LayerShape, device: str, attn_device: str, copy: int, kv_k: int,
                kv_v: int, attn_copy: int = 0) -> LayerShape:
    """``shape`` run on ``device`` (its attention on ``attn_device``) with ``copy`` bytes
    of weights copied in per FFN matmul, ``attn_copy`` bytes of attention projections and
    ``kv_k`` / ``kv_v`` bytes of host cache copied in for attention (cached: every plan
    asks it for every host layer)."""
    return replace(shape, device=device, attn_device=attn_device, offload_copy=copy,
                   kv_host_k=kv_k, kv_host_v=kv_v, attn_copy=attn_copy)


def _kv_split(profile: ModelProfile, layer: LayerProfile, config: MemoryConfig) -> tuple[int, int]:
    """Bytes of one layer's K cache and V cache."""
    total = kv_layer_bytes(profile, layer, config)
    if layer.kind == LayerKind.RECURRENT or not layer.n_head_kv:
        return 0, 0
    size = context_size(config)
    cells = _layer_cells(layer, config, size) * size.n_stream
    k = ggml_type(config.type_k).row_bytes(layer.n_head_kv * layer.head_dim_k) * cells
    return k, total - k


def _mtp_compute(profile: ModelProfile, config: MemoryConfig, size: ContextSize,
                 params: GraphParams, mtp: list[tuple[LayerProfile, str]]
                 ) -> list[tuple[str, int]]:
    """Compute buffers of the MTP draft context: its own llama.cpp context running the
    NextN block(s) and a second output head, fed the token embeddings concatenated with
    the trunk's hidden state."""
    shapes = tuple(_layer_shape(profile, la, config, size, d, d) for la, d in mtp)
    # the head does not reliably land in the attention mask's freed memory (the replay
    # says it does, llama.cpp's reserve only in part): price the mask as still held there
    head = (profile.n_vocab + profile.n_embd) * params.n_outputs * F32_BYTES
    mask = max(_layer_cells(la, config, size) for la, _ in mtp) * size.n_ubatch * (
        2 if config.flash_attn else F32_BYTES)
    hidden = 2 * profile.n_embd * size.n_ubatch * F32_BYTES  # hidden-state input, concat
    out = []
    for dev, nbytes in compute_bytes(shapes, replace(params, mtp=True), True):
        floor = head + mask + hidden if dev == params.output_device else 0
        out.append((dev, max(nbytes, floor)))
    return out


def _compress(shapes: tuple[LayerShape, ...], keep: int = 3) -> list[LayerShape]:
    """Shorten long repeats of the same block pattern (period up to 8): the allocator's
    state repeats with the pattern, so ``keep`` repeats and the last one price the run."""
    out: list[LayerShape] = []
    i, n = 0, len(shapes)
    while i < n:
        for period in range(1, 9):
            unit = shapes[i:i + period]
            reps = 1
            while shapes[i + reps * period:i + (reps + 1) * period] == unit:
                reps += 1
            if reps > keep + 1:
                out += list(unit) * keep + list(unit)
                i += reps * period
                break
        else:
            out.append(shapes[i])
            i += 1
    return out
