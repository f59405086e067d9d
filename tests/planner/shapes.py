"""Model profiles of a given shape, built in memory (no files): for planner tests and
the speed calibration benchmark.

A :class:`ModelShape` holds a model's published hyper-parameters; :func:`build` turns it
into the :class:`ModelProfile` the GGUF reader would produce for a file of that shape and
quantization (tensor names, kinds and bytes as llama.cpp lays them out).
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.profile import LayerKind, LayerProfile, ModelProfile, TensorInfo, TensorKind
from planner.quant import NOMINAL_BITS

GB = 10**9


@dataclass(frozen=True)
class ModelShape:
    """Published hyper-parameters of a model (a config.json, in llama.cpp's terms)."""

    name: str
    arch: str
    n_layers: int
    n_embd: int
    n_head: int
    n_head_kv: int
    head_dim: int
    n_ff: int
    n_vocab: int
    n_ctx_train: int
    n_expert: int = 0
    n_expert_used: int = 0
    n_ff_exp: int = 0
    n_shared_ff: int = 0
    dense_first: int = 0           # leading dense blocks of a MoE (DeepSeek)
    swa_period: int = 0            # every swa_period-th block is full attention
    swa_window: int = 0
    full_attn_interval: int = 0    # hybrid: (i + 1) % interval == 0 -> attention
    linear_heads: int = 0          # hybrid: delta-net value heads
    linear_head_dim: int = 128
    mla: tuple[int, int, int] | None = None   # (q_lora_rank, kv_lora_rank, rope_dim)
    nextn: int = 0
    tied: bool = False


def _w(name: str, layer: int | None, kind: TensorKind, shape: tuple[int, ...],
       bits: float, f32: bool = False) -> TensorInfo:
    n = 1
    for d in shape:
        n *= d
    nbytes = n * 4 if f32 else int(n * bits / 8)
    return TensorInfo(name, "F32" if f32 else "Q", shape, nbytes, 0, layer, kind)


def _attention(s: ModelShape, i: int, bits: float) -> list[TensorInfo]:
    p, e = f"blk.{i}.", s.n_embd
    A = TensorKind.ATTENTION
    if s.mla is not None:
        q_lora, kv_lora, rope = s.mla
        hd = s.head_dim
        return [_w(p + "attn_q_a.weight", i, A, (e, q_lora), bits),
                _w(p + "attn_q_b.weight", i, A, (q_lora, s.n_head * (hd + rope)), bits),
                _w(p + "attn_kv_a_mqa.weight", i, A, (e, kv_lora + rope), bits),
                _w(p + "attn_kv_b.weight", i, A, (kv_lora, s.n_head * 2 * hd), bits),
                _w(p + "attn_output.weight", i, A, (s.n_head * hd, e), bits)]
    q, kv = s.n_head * s.head_dim, s.n_head_kv * s.head_dim
    return [_w(p + "attn_q.weight", i, A, (e, q), bits),
            _w(p + "attn_k.weight", i, A, (e, kv), bits),
            _w(p + "attn_v.weight", i, A, (e, kv), bits),
            _w(p + "attn_output.weight", i, A, (q, e), bits)]


def _linear_attention(s: ModelShape, i: int, bits: float) -> list[TensorInfo]:
    p, e, R = f"blk.{i}.", s.n_embd, TensorKind.RECURRENT
    width = s.linear_heads * s.linear_head_dim
    return [_w(p + "ssm_in.weight", i, R, (e, 4 * width), bits),
            _w(p + "ssm_conv1d.weight", i, R, (4, 2 * width), bits, f32=True),
            _w(p + "ssm_out.weight", i, R, (width, e), bits)]


def _ffn(s: ModelShape, i: int, bits: float) -> list[TensorInfo]:
    p, e = f"blk.{i}.", s.n_embd
    if not s.n_expert or i < s.dense_first:
        return [_w(p + f"ffn_{n}.weight", i, TensorKind.FFN, (e, s.n_ff), bits)
                for n in ("gate", "up", "down")]
    out = [_w(p + "ffn_gate_inp.weight", i, TensorKind.FFN, (e, s.n_expert), 0, f32=True)]
    out += [_w(p + f"ffn_{n}_exps.weight", i, TensorKind.EXPERTS,
               (e, s.n_ff_exp, s.n_expert), bits) for n in ("gate", "up", "down")]
    if s.n_shared_ff:
        out += [_w(p + f"ffn_{n}_shexp.weight", i, TensorKind.SHARED_EXPERTS,
                   (e, s.n_shared_ff), bits) for n in ("gate", "up", "down")]
    return out


def _kind(s: ModelShape, i: int) -> LayerKind:
    if i >= s.n_layers:
        return LayerKind.NEXTN
    if s.full_attn_interval and (i + 1) % s.full_attn_interval:
        return LayerKind.RECURRENT
    if s.swa_period and i % s.swa_period != s.swa_period - 1:
        return LayerKind.SWA
    return LayerKind.FULL


def _tensors(s: ModelShape, bits: float) -> list[TensorInfo]:
    e = s.n_embd
    out = [_w("token_embd.weight", None, TensorKind.TOKEN_EMBD, (e, s.n_vocab), bits)]
    for i in range(s.n_layers + s.nextn):
        kind = _kind(s, i)
        block = [_w(f"blk.{i}.attn_norm.weight", i, TensorKind.NORM, (e,), 0, f32=True),
                 _w(f"blk.{i}.ffn_norm.weight", i, TensorKind.NORM, (e,), 0, f32=True)]
        block += (_linear_attention(s, i, bits) if kind == LayerKind.RECURRENT
                  else _attention(s, i, bits))
        block += _ffn(s, i, bits)
        if kind == LayerKind.NEXTN:
            block = [TensorInfo(t.name, t.ggml_type, t.shape, t.nbytes, 0, i,
                                TensorKind.NEXTN) for t in block]
            block.append(_w(f"blk.{i}.nextn.eh_proj.weight", i, TensorKind.NEXTN,
                            (2 * e, e), bits))
        out += block
    out.append(_w("output_norm.weight", None, TensorKind.OUTPUT, (e,), 0, f32=True))
    if not s.tied:
        out.append(_w("output.weight", None, TensorKind.OUTPUT, (e, s.n_vocab), bits))
    return out


def build(s: ModelShape, file_type: str = "Q4_K_M", file_gb: float | None = None
          ) -> ModelProfile:
    """The profile of ``s`` quantized as ``file_type``.

    Args:
        file_gb: the published file size; when given, quantized tensors are scaled so the
            total matches it (real files mix types within a "Q4_K_M").
    """
    bits = NOMINAL_BITS[file_type]
    tensors = _tensors(s, bits)
    if file_gb:
        quantized = sum(t.nbytes for t in tensors if t.ggml_type != "F32")
        fixed = sum(t.nbytes for t in tensors if t.ggml_type == "F32")
        ratio = (file_gb * GB - fixed) / quantized
        tensors = [t if t.ggml_type == "F32" else
                   TensorInfo(t.name, t.ggml_type, t.shape, int(t.nbytes * ratio), 0, t.layer,
                              t.kind) for t in tensors]
    tensors = [TensorInfo(t.name, file_type if t.ggml_type == "Q" else t.ggml_type, t.shape,
                          t.nbytes, 0, t.layer, t.kind) for t in tensors]
    layers = []
    for i in range(s.n_layers + s.nextn):
        kind = _kind(s, i)
        by_kind: dict[TensorKind, int] = {}
        for t in tensors:
            if t.layer == i:
                by_kind[t.kind] = by_kind.get(t.kind, 0) + t.nbytes
        hk, dk, dv = s.n_head_kv, s.head_dim, s.head_dim
        if s.mla is not None:
            hk, dk, dv = 1, s.mla[1] + s.mla[2], 0
        state = 0
        if kind == LayerKind.RECURRENT:
            hk = dk = dv = 0
            width = s.linear_heads * s.linear_head_dim
            state = 4 * (s.linear_heads * s.linear_head_dim * s.linear_head_dim + 3 * 2 * width)
        moe = bool(s.n_expert) and i >= s.dense_first
        layers.append(LayerProfile(
            index=i, kind=kind, bytes_by_kind=tuple(by_kind.items()), n_head=s.n_head,
            n_head_kv=hk, head_dim_k=dk, head_dim_v=dv,
            swa_window=s.swa_window if kind == LayerKind.SWA else 0,
            recurrent_state_bytes=state, n_ff=0 if moe else s.n_ff,
            n_ff_exp=s.n_ff_exp if moe else 0, n_ff_shexp=s.n_shared_ff if moe else 0,
            recurrent_width=2 * s.linear_heads * s.linear_head_dim if state else 0))

    def total(kind: TensorKind) -> int:
        return sum(t.nbytes for t in tensors if t.layer is None and t.kind == kind)

    return ModelProfile(
        architecture=s.arch, name=s.name, file_bytes=sum(t.nbytes for t in tensors),
        n_layers=s.n_layers + s.nextn, n_embd=s.n_embd, n_vocab=s.n_vocab,
        n_ctx_train=s.n_ctx_train, layers=tuple(layers), tensors=tuple(tensors),
        token_embd_bytes=total(TensorKind.TOKEN_EMBD), output_bytes=total(TensorKind.OUTPUT),
        other_bytes=0, expert_count=s.n_expert, expert_used_count=s.n_expert_used,
        nextn_layers=s.nextn, file_type=file_type,
        n_params=sum(t.n_elements for t in tensors), tied_output=s.tied)


# Published shapes (config.json of each model family) used by tests and the calibration.
LLAMA2_7B = ModelShape("Llama-2-7B", "llama", 32, 4096, 32, 32, 128, 11008, 32000, 4096)
LLAMA2_70B = ModelShape("Llama-2-70B", "llama", 80, 8192, 64, 8, 128, 28672, 32000, 4096)
LLAMA3_8B = ModelShape("Llama-3-8B", "llama", 32, 4096, 32, 8, 128, 14336, 128256, 8192)
LLAMA3_70B = ModelShape("Llama-3-70B", "llama", 80, 8192, 64, 8, 128, 28672, 128256, 8192)
QWEN3_8B = ModelShape("Qwen3-8B", "qwen3", 36, 4096, 32, 8, 128, 12288, 151936, 40960)
QWEN25_32B = ModelShape("Qwen2.5-32B", "qwen2", 64, 5120, 40, 8, 128, 27648, 152064, 32768)
QWEN25_3B = ModelShape("Qwen2.5-3B", "qwen2", 36, 2048, 16, 2, 128, 11008, 151936, 32768,
                       tied=True)
MIXTRAL_8X7B = ModelShape("Mixtral-8x7B", "llama", 32, 4096, 32, 8, 128, 14336, 32000, 32768,
                          n_expert=8, n_expert_used=2, n_ff_exp=14336)
QWEN3_30B_A3B = ModelShape("Qwen3-30B-A3B", "qwen3moe", 48, 2048, 32, 4, 128, 6144, 151936,
                           40960, n_expert=128, n_expert_used=8, n_ff_exp=768)
QWEN35_35B_A3B = ModelShape("Qwen3.6-35B-A3B", "qwen35moe", 40, 2048, 16, 2, 256, 0, 248320,
                            262144, n_expert=256, n_expert_used=8, n_ff_exp=512,
                            n_shared_ff=512, full_attn_interval=4, linear_heads=32, nextn=1)
QWEN3_NEXT_80B = ModelShape("Qwen3-Next-80B-A3B", "qwen3next", 48, 2048, 16, 2, 256, 0,
                            151936, 262144, n_expert=512, n_expert_used=10, n_ff_exp=512,
                            n_shared_ff=512, full_attn_interval=4, linear_heads=32)
QWEN35_27B = ModelShape("Qwen3.8-27B", "qwen35", 64, 5120, 24, 4, 256, 17408, 248320, 262144,
                        full_attn_interval=4, linear_heads=48, nextn=1)
QWEN35_122B_A10B = ModelShape("Qwen3.5-122B-A10B", "qwen35moe", 48, 3072, 32, 2, 256, 0,
                              248320, 262144, n_expert=256, n_expert_used=8, n_ff_exp=1024,
                              n_shared_ff=1024, full_attn_interval=4, linear_heads=64, nextn=1)
GPT_OSS_120B = ModelShape("gpt-oss-120b", "gpt-oss", 36, 2880, 64, 8, 64, 0, 201088, 131072,
                          n_expert=128, n_expert_used=4, n_ff_exp=2880, swa_period=2,
                          swa_window=128)
GPT_OSS_20B = ModelShape("gpt-oss-20b", "gpt-oss", 24, 2880, 64, 8, 64, 0, 201088, 131072,
                         n_expert=32, n_expert_used=4, n_ff_exp=2880, swa_period=2,
                         swa_window=128)
DEEPSEEK_V3 = ModelShape("DeepSeek-V3", "deepseek2", 61, 7168, 128, 128, 128, 18432, 129280,
                         163840, n_expert=256, n_expert_used=8, n_ff_exp=2048,
                         n_shared_ff=2048, dense_first=3, mla=(1536, 512, 64), nextn=1)
GEMMA3_27B = ModelShape("Gemma-3-27B", "gemma3", 62, 5376, 32, 16, 128, 21504, 262144, 131072,
                        swa_period=6, swa_window=1024, tied=True)
# Shapes of the partial-offload rows of the speed calibration (config.json of each model).
QWEN3_14B = ModelShape("Qwen3-14B", "qwen3", 40, 5120, 40, 8, 128, 17408, 151936, 40960)
QWEN3_32B = ModelShape("Qwen3-32B", "qwen3", 64, 5120, 64, 8, 128, 25600, 151936, 40960)
QWEN25_14B = ModelShape("Qwen2.5-14B", "qwen2", 48, 5120, 40, 8, 128, 13824, 152064, 32768)
MISTRAL_SMALL_24B = ModelShape("Mistral-Small-24B", "llama", 40, 5120, 32, 8, 128, 32768,
                               131072, 32768)
GEMMA3_12B = ModelShape("Gemma-3-12B", "gemma3", 48, 3840, 16, 8, 256, 15360, 262144, 131072,
                        swa_period=6, swa_window=1024, tied=True)
