"""Parsed GGUF headers -> :class:`ModelProfile`.

Tensors are grouped by name (generic for every architecture llama.cpp loads); only the KV
geometry needs per-architecture rules (which layers are sliding-window or recurrent), and
those mirror the ``load_arch_hparams`` of each model in llama.cpp's ``src/models/``.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from planner.errors import GGUFError, UnsupportedModelError
from planner.ggml_types import FILE_TYPES, GGML_TYPES
from planner.gguf_header import GGUFHeader, printable
from planner.known_archs import (
    FULL_ATTN_INTERVAL_ARCHS,
    HYBRID_ARCHS,
    KNOWN_ARCHITECTURES,
    RECURRENT_ARCHS,
    SWA_PATTERNS,
)
from planner.profile import LayerKind, LayerProfile, ModelProfile, TensorInfo, TensorKind

_BLOCK = re.compile(r"^blk\.(\d+)\.(.+)$")
_RECURRENT_PARTS = ("ssm_", "time_mix", "channel_mix", "shortconv", "conv1d", "lerp",
                    "linear_attn", "kda_")
_ATTN_PARTS = ("attn_", "wkv", "indexer")
_MAX_LAYERS = 1 << 14


def classify(part: str) -> TensorKind:
    """The kind of a block tensor from its name after ``blk.N.``."""
    if "_exps" in part or part.startswith("exp_probs"):
        return TensorKind.FFN if part.startswith("exp_probs") else TensorKind.EXPERTS
    if "_shexp" in part:
        return TensorKind.SHARED_EXPERTS
    if "norm" in part:
        return TensorKind.NORM
    if part.startswith(_RECURRENT_PARTS):
        return TensorKind.RECURRENT
    if part.startswith(_ATTN_PARTS):
        return TensorKind.ATTENTION
    if part.startswith("ffn_"):
        return TensorKind.FFN
    return TensorKind.OTHER


def _top_kind(name: str) -> TensorKind:
    if name.startswith(("token_embd", "per_layer_token_embd", "token_types")):
        return TensorKind.TOKEN_EMBD
    if name.startswith(("output.", "output_norm")):
        return TensorKind.OUTPUT
    return TensorKind.OTHER


def _count(key: str, value: int | float) -> int:
    """A stored count or length as an int; refuses NaN, infinities and negatives."""
    if isinstance(value, float) and not math.isfinite(value):
        raise GGUFError(f"metadata '{printable(key)}' is {value} (not a finite number)")
    if value < 0:
        raise UnsupportedModelError(f"metadata '{printable(key)}' is negative ({value})")
    return int(value)


def _u(md: dict[str, Any], key: str, default: int = 0) -> int:
    """A non-negative integer fact; ``default`` when absent or not a number."""
    value = md.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return default
    return default if key not in md else _count(key, value)


def _f(md: dict[str, Any], key: str) -> float:
    value = md.get(key, 0.0)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) \
        else 0.0


def _per_layer(md: dict[str, Any], key: str, n: int, default: int) -> list[int]:
    """A per-layer count stored as one number or an array, stretched to ``n`` layers."""
    value = md.get(key)
    if isinstance(value, list):
        values = [_count(key, v) for v in value[:n]]
        return values + [values[-1] if values else default] * (n - len(values))
    if isinstance(value, int | float) and not isinstance(value, bool):
        return [_count(key, value)] * n
    return [default] * n


def _swa_flags(arch: str, md: dict[str, Any], n_layer: int, n_all: int) -> list[bool]:
    """Which layers use sliding-window attention (llama.cpp's ``is_swa_impl``)."""
    a = arch
    if _u(md, f"{a}.attention.sliding_window") <= 0:
        return [False] * n_all
    raw = md.get(f"{a}.attention.sliding_window_pattern")
    if isinstance(raw, list):
        flags = [bool(v) for v in raw[:n_all]]
        return flags + [False] * (n_all - len(flags))
    rule = SWA_PATTERNS.get(arch)
    if rule is None:
        return [False] * n_all
    period, dense_first = rule
    if isinstance(raw, int) and not isinstance(raw, bool):
        period = raw
    flags = []
    for il in range(n_all):
        if il >= n_layer:
            flags.append(False)
        elif period == 0:
            flags.append(True)
        elif dense_first:
            flags.append(il % period != 0)
        else:
            flags.append(il % period < period - 1)
    return flags


def _recurrent_flags(arch: str, md: dict[str, Any], n_layer: int, n_all: int,
                     n_head_kv: list[int]) -> list[bool]:
    """Which layers hold a recurrent state instead of a KV cache (``is_recr_impl``)."""
    if arch in RECURRENT_ARCHS:
        return [il < n_layer for il in range(n_all)]
    if arch not in HYBRID_ARCHS:
        return [False] * n_all
    raw = md.get(f"{arch}.attention.recurrent_layers")
    if isinstance(raw, list):
        flags = [bool(v) for v in raw[:n_all]]
        return flags + [False] * (n_all - len(flags))
    if arch in FULL_ATTN_INTERVAL_ARCHS:
        interval = max(1, _u(md, f"{arch}.full_attention_interval", 4))
        return [il < n_layer and (il + 1) % interval != 0 for il in range(n_all)]
    if arch == "falcon-h1":
        return [il < n_layer for il in range(n_all)]
    return [il < n_layer and n_head_kv[il] == 0 for il in range(n_all)]


def _recurrent_state(arch: str, md: dict[str, Any], n_embd: int, n_head: int) -> int:
    """Bytes of one sequence's recurrent state in one layer (f32 r + s, as llama.cpp)."""
    a = arch
    wkv = _u(md, f"{a}.wkv.head_size")
    if wkv:
        return 4 * (_u(md, f"{a}.token_shift_count", 2) * n_embd + n_embd * wkv)
    l_cache = _u(md, f"{a}.shortconv.l_cache")
    if l_cache:
        return 4 * n_embd * (l_cache - 1)
    d_conv = _u(md, f"{a}.ssm.conv_kernel")
    d_inner = _u(md, f"{a}.ssm.inner_size")
    d_state = _u(md, f"{a}.ssm.state_size")
    n_group = _u(md, f"{a}.ssm.group_count")
    kda = _u(md, f"{a}.kda.head_dim")
    if kda:
        conv = 3 * (d_conv - 1 if d_conv > 0 else 3) * n_head * kda
        return 4 * (conv + kda * kda * n_head)
    conv = (d_conv - 1 if d_conv > 0 else 0) * (d_inner + 2 * n_group * d_state)
    return 4 * (conv + d_state * d_inner)


def _widths(part: str, shape: tuple[int, ...], widths: dict[str, int]) -> None:
    """Record the FFN / recurrent widths a block tensor reveals (from its weight: a
    bias of routed experts, as gpt-oss has, is ``(width, n_expert)`` and would give the
    expert count as the width)."""
    if len(shape) < 2 or part.endswith(".bias"):
        return
    if part.startswith("ffn_gate_up_exps"):
        widths["exp"] = shape[1] // 2
    elif part.startswith("ffn_up_exps"):
        widths["exp"] = shape[1]
    elif part.startswith("ffn_up_shexp"):
        widths["shexp"] = shape[1]
    elif part.startswith("ffn_up."):
        widths["ff"] = shape[1]
    elif part.startswith("ssm_conv1d"):
        widths["recr"] = shape[1]


def _flags(part: str, widths: dict[str, int]) -> None:
    """Record the block features that add intermediate tensors."""
    if part.startswith(("attn_q_norm", "attn_k_norm")):
        widths["qk_norm"] = 1
    elif part.startswith(("post_ffw_norm", "ffn_post_norm")):
        # norms after attention and after the FFN come in pairs (gemma); a lone
        # post_attention_norm is the FFN's input norm (qwen35)
        widths["post_norms"] = 1


def _tensors(headers: Sequence[GGUFHeader], nextn_start: int
             ) -> tuple[list[TensorInfo], dict[int, dict[TensorKind, int]],
                        dict[int, dict[str, int]]]:
    tensors: list[TensorInfo] = []
    per_layer: dict[int, dict[TensorKind, int]] = defaultdict(lambda: defaultdict(int))
    widths: dict[int, dict[str, int]] = defaultdict(dict)
    for shard, header in enumerate(headers):
        for t in header.tensors:
            m = _BLOCK.match(t.name)
            layer = int(m.group(1)) if m else None
            if m is not None and layer is not None:
                kind = TensorKind.NEXTN if layer >= nextn_start else classify(m.group(2))
                per_layer[layer][kind] += t.nbytes
                _widths(m.group(2), t.shape, widths[layer])
                _flags(m.group(2), widths[layer])
            else:
                kind = _top_kind(t.name)
            tensors.append(TensorInfo(t.name, GGML_TYPES[t.type_id].name, t.shape, t.nbytes,
                                      header.data_offset + t.offset, layer, kind, shard))
    return tensors, per_layer, widths


def _layer_profiles(arch: str, md: dict[str, Any], n_all: int, n_layer: int,
                    per_layer: dict[int, dict[TensorKind, int]],
                    widths: dict[int, dict[str, int]]) -> list[LayerProfile]:
    """Every block's bytes by kind and KV geometry (heads, head sizes, window, state)."""
    a = arch
    n_embd = _u(md, f"{a}.embedding_length")
    n_head = _per_layer(md, f"{a}.attention.head_count", n_all, 0)
    n_head_kv = list(n_head)
    if f"{a}.attention.head_count_kv" in md:
        n_head_kv = _per_layer(md, f"{a}.attention.head_count_kv", n_all, 0)
    head0 = max(n_head) if n_head else 0
    dk = _u(md, f"{a}.attention.key_length", n_embd // head0 if head0 else 0)
    dv = _u(md, f"{a}.attention.value_length", n_embd // head0 if head0 else 0)
    dk_swa = _u(md, f"{a}.attention.key_length_swa", dk)
    dv_swa = _u(md, f"{a}.attention.value_length_swa", dv)
    n_swa = _u(md, f"{a}.attention.sliding_window")
    swa = _swa_flags(arch, md, n_layer, n_all)
    recr = _recurrent_flags(arch, md, n_layer, n_all, n_head_kv)
    # MLA (llama_hparams::is_mla): the GGUF stores the cached latent as key_length with
    # one KV head, and the V cache is not kept
    is_mla = (_u(md, f"{a}.attention.key_length_mla") > 0
              and _u(md, f"{a}.attention.value_length_mla") > 0)
    state = _recurrent_state(arch, md, n_embd, head0) if any(recr) else 0
    inner, heads = _u(md, f"{a}.ssm.inner_size"), _u(md, f"{a}.ssm.time_step_rank")
    layers = []
    for il in range(n_all):
        kinds = per_layer.get(il, {})
        kind = (LayerKind.NEXTN if il >= n_layer else LayerKind.RECURRENT if recr[il]
                else LayerKind.SWA if swa[il] else LayerKind.FULL)
        hk, hdk, hdv = n_head_kv[il], (dk_swa if swa[il] else dk), (dv_swa if swa[il] else dv)
        if is_mla:
            hdv = 0
        if recr[il]:
            hk = 0
        layers.append(LayerProfile(
            index=il, kind=kind,
            bytes_by_kind=tuple((k, kinds[k]) for k in TensorKind if kinds.get(k)),
            n_head=n_head[il], n_head_kv=hk, head_dim_k=hdk if hk else 0,
            head_dim_v=hdv if hk else 0, swa_window=n_swa if swa[il] else 0,
            recurrent_state_bytes=state if recr[il] else 0,
            recurrent_inner=inner if recr[il] else 0, recurrent_heads=heads if recr[il] else 0,
            n_ff=widths[il].get("ff", 0), n_ff_exp=widths[il].get("exp", 0),
            n_ff_shexp=widths[il].get("shexp", 0), recurrent_width=widths[il].get("recr", 0),
            qk_norm=bool(widths[il].get("qk_norm")),
            post_norms=bool(widths[il].get("post_norms"))))
    return layers


def build_profile(headers: Sequence[GGUFHeader]) -> ModelProfile:
    """Build the profile of a model from the headers of its file(s), first shard first.

    Raises:
        UnsupportedModelError: no or unknown architecture, or no layer count.
    """
    md = headers[0].metadata
    arch = md.get("general.architecture")
    if not isinstance(arch, str) or not arch:
        raise UnsupportedModelError("GGUF has no general.architecture")
    if arch not in KNOWN_ARCHITECTURES:
        raise UnsupportedModelError(f"unknown architecture '{printable(arch)}'")
    a = arch
    n_all = _u(md, f"{a}.block_count", -1)
    if not 0 < n_all <= _MAX_LAYERS:
        raise UnsupportedModelError(f"{arch}: block_count missing, zero or absurd ({n_all})")
    nextn = min(_u(md, f"{a}.nextn_predict_layers"), n_all)
    n_layer = n_all - nextn
    tensors, per_layer, widths = _tensors(headers, n_layer)
    if any(layer >= n_all for layer in per_layer):
        raise GGUFError(f"tensor of block {max(per_layer)} but block_count is {n_all}")
    n_embd = _u(md, f"{a}.embedding_length")
    if n_embd <= 0:
        raise UnsupportedModelError(f"{arch}: embedding_length missing or zero")
    layers = _layer_profiles(arch, md, n_all, n_layer, per_layer, widths)
    _check_heads(arch, md, layers)
    by_kind: dict[TensorKind, int] = defaultdict(int)
    quant: dict[str, int] = defaultdict(int)
    n_params = 0
    for t in tensors:
        if t.layer is None:
            by_kind[t.kind] += t.nbytes
        quant[t.ggml_type] += t.nbytes
        n_params += t.n_elements
    tokens = md.get("tokenizer.ggml.tokens")
    embd = next((t for t in tensors if t.name == "token_embd.weight"), None)
    n_vocab = (getattr(tokens, "length", 0) or (len(tokens) if isinstance(tokens, list) else 0)
               or _u(md, f"{a}.vocab_size") or (embd.shape[1] if embd and embd.shape[1:] else 0))
    scaling = md.get(f"{a}.rope.scaling.type")
    template = md.get("tokenizer.chat_template")
    name = md.get("general.name")
    return ModelProfile(
        architecture=arch,
        name=name if isinstance(name, str) else "",
        file_bytes=sum(h.file_size for h in headers),
        n_layers=n_all, n_embd=n_embd, n_vocab=n_vocab,
        n_ctx_train=_u(md, f"{a}.context_length"),
        layers=tuple(layers), tensors=tuple(tensors),
        token_embd_bytes=by_kind[TensorKind.TOKEN_EMBD],
        output_bytes=by_kind[TensorKind.OUTPUT],
        other_bytes=by_kind[TensorKind.OTHER],
        expert_count=_u(md, f"{a}.expert_count"),
        expert_used_count=_u(md, f"{a}.expert_used_count"),
        nextn_layers=nextn,
        rope_scaling=scaling if isinstance(scaling, str) and scaling != "none" else None,
        rope_scaling_factor=_f(md, f"{a}.rope.scaling.factor"),
        chat_template=template if isinstance(template, str) else None,
        file_type=FILE_TYPES.get(_u(md, "general.file_type", -1), "unknown"),
        quant_bytes=tuple(sorted(quant.items(), key=lambda kv: -kv[1])),
        n_params=n_params,
        shards=len(headers),
        tied_output=not any(t.name == "output.weight" for t in tensors),
        metadata=tuple((k, _scalar_text(v)) for k, v in md.items()
                       if k != "tokenizer.chat_template" and _is_scalar(v)),
    )


def _check_heads(arch: str, md: dict[str, Any], layers: list[LayerProfile]) -> None:
    """Refuse attention layers the header gives no heads for (they cannot be priced)."""
    attn = [la for la in layers if la.kind in (LayerKind.FULL, LayerKind.SWA)]
    if not attn:
        return
    if f"{arch}.attention.head_count" not in md:
        raise UnsupportedModelError(f"{arch}: attention.head_count missing")
    if all(la.n_head == 0 for la in attn) and any(la.bytes_of(TensorKind.ATTENTION)
                                                  for la in attn):
        raise UnsupportedModelError(f"{arch}: attention.head_count is 0 on every layer")


def _is_scalar(value: Any) -> bool:
    return isinstance(value, str | int | float | bool)


def _scalar_text(value: Any) -> str:
    text = str(value)
    return text if len(text) <= 256 else text[:256]
