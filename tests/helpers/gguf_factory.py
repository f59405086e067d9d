"""Write small synthetic GGUF models with the ``gguf`` package, for tests and benchmarks.

Two flavours:
- *loadable* files with random weights that llama.cpp really loads and runs (they loop and
  babble, which is what a loop-guard test wants);
- *header-only* sparse files: the full header of a big model (e.g. 70B) and a file size to
  match, with no data written (``truncate`` leaves a hole), for the planner and reader.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from gguf import GGML_QUANT_SIZES, GGMLQuantizationType, GGUFWriter, LlamaFileType
from gguf.quants import quantize

TensorSpec = tuple[str, tuple[int, ...], str]  # name, GGUF shape (ne0 first), ggml type


@dataclass
class Shape:
    """The hyper-parameters of a synthetic transformer."""

    n_layers: int = 2
    n_embd: int = 64
    n_head: int = 4
    n_head_kv: int = 2
    head_dim: int = 16
    n_ff: int = 128
    n_vocab: int = 384
    n_ctx_train: int = 4096
    n_expert: int = 0
    n_expert_used: int = 0
    n_ff_exp: int = 64
    n_shared_ff: int = 0
    weight_type: str = "F16"
    n_nextn: int = 0          # trailing NextN/MTP blocks (block_count = n_layers + n_nextn)
    extra_kv: dict[str, Any] = field(default_factory=dict)


# The llama ftype (``general.file_type``) a model whose weights are mostly this type has.
FILE_TYPE_OF: dict[str, int] = {
    "F32": LlamaFileType.ALL_F32, "F16": LlamaFileType.MOSTLY_F16,
    "BF16": LlamaFileType.MOSTLY_BF16, "Q4_0": LlamaFileType.MOSTLY_Q4_0,
    "Q4_1": LlamaFileType.MOSTLY_Q4_1, "Q5_0": LlamaFileType.MOSTLY_Q5_0,
    "Q5_1": LlamaFileType.MOSTLY_Q5_1, "Q8_0": LlamaFileType.MOSTLY_Q8_0,
    "Q2_K": LlamaFileType.MOSTLY_Q2_K, "Q3_K": LlamaFileType.MOSTLY_Q3_K_M,
    "Q4_K": LlamaFileType.MOSTLY_Q4_K_M, "Q5_K": LlamaFileType.MOSTLY_Q5_K_M,
    "Q6_K": LlamaFileType.MOSTLY_Q6_K, "IQ4_NL": LlamaFileType.MOSTLY_IQ4_NL,
    "IQ4_XS": LlamaFileType.MOSTLY_IQ4_XS, "MXFP4": LlamaFileType.MOSTLY_MXFP4_MOE,
}


def _nbytes(shape: tuple[int, ...], type_name: str) -> int:
    qtype = GGMLQuantizationType[type_name]
    block, size = GGML_QUANT_SIZES[qtype]
    n = int(np.prod(shape))
    if shape[0] % block:
        raise ValueError(f"row of {shape[0]} is not a multiple of {type_name}'s block {block}")
    return n // block * size


def _vocab(writer: GGUFWriter, n_vocab: int) -> None:
    tokens: list[str] = ["<unk>", "<s>", "</s>"]
    types = [2, 3, 3]  # UNKNOWN, CONTROL, CONTROL
    tokens += [f"<0x{b:02X}>" for b in range(256)]
    types += [6] * 256  # BYTE
    letters = "abcdefghijklmnopqrstuvwxyz"
    seen = set(tokens)
    i = 0
    while len(tokens) < n_vocab:
        a, b = divmod(i, 26)
        word = ("\u2581" if i % 2 == 0 else "") + letters[b] + (letters[a % 26] * (a // 26))
        if word not in seen:
            seen.add(word)
            tokens.append(word)
            types.append(1)
        i += 1
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens[:n_vocab])
    writer.add_token_scores([-float(j) for j in range(n_vocab)])
    writer.add_token_types(types[:n_vocab])
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_unk_token_id(0)
    writer.add_chat_template(
        "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}</s>{% endfor %}"
        "{% if add_generation_prompt %}<|assistant|>{% endif %}"
    )


def write_gguf(
    path: Path,
    arch: str,
    tensors: Iterable[TensorSpec],
    metadata: Callable[[GGUFWriter], None],
    n_vocab: int,
    header_only: bool = False,
    seed: int = 0,
    shards: int = 1,
) -> Path:
    """Write a GGUF with the given tensors. ``header_only`` leaves the data as a hole.

    With ``shards`` > 1 the model is split like ``gguf-split`` does: ``path`` must end in
    ``-00001-of-0000N.gguf``; the first file holds the metadata, every file a run of
    tensors and the ``split.*`` keys. Returns the first file's path.
    """
    path = Path(path)
    specs = list(tensors)
    rng = np.random.default_rng(seed)
    if shards <= 1:
        _write_file(path, arch, specs, metadata, n_vocab, header_only, rng, None)
        return path
    suffix = f"-00001-of-{shards:05d}.gguf"
    if not path.name.endswith(suffix):
        raise ValueError(f"a {shards}-file split model's first file must end in {suffix}")
    stem = path.name[: -len(suffix)]
    per = -(-len(specs) // shards)
    for i in range(shards):
        part = specs[i * per:(i + 1) * per]
        shard_path = path.with_name(f"{stem}-{i + 1:05d}-of-{shards:05d}.gguf")
        _write_file(shard_path, arch, part, metadata if i == 0 else None, n_vocab,
                    header_only, rng, (i, shards, len(specs)))
    return path


def _write_file(path: Path, arch: str, specs: list[TensorSpec],
                metadata: Callable[[GGUFWriter], None] | None, n_vocab: int,
                header_only: bool, rng: np.random.Generator,
                split: tuple[int, int, int] | None) -> None:
    writer = GGUFWriter(str(path), arch)
    if metadata is not None:
        metadata(writer)
        _vocab(writer, n_vocab)
    if split is not None:
        writer.add_uint16("split.no", split[0])
        writer.add_uint16("split.count", split[1])
        writer.add_int32("split.tensors.count", split[2])
    if header_only:
        for name, shape, type_name in specs:
            qtype = GGMLQuantizationType[type_name]
            nbytes = _nbytes(shape, type_name)
            np_shape = list(reversed(shape))
            if type_name in ("F32", "F16"):
                dtype = np.dtype(np.float32 if type_name == "F32" else np.float16)
            else:  # quantized: the writer wants the byte shape of each row
                block, size = GGML_QUANT_SIZES[qtype]
                np_shape[-1] = shape[0] // block * size
                dtype = np.dtype(np.uint8)
            writer.add_tensor_info(name, tuple(np_shape), dtype, nbytes, raw_dtype=qtype)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_ti_data_to_file()
        writer.close()
        data_start = _aligned(path.stat().st_size, writer.data_alignment)
        size = data_start
        for _name, shape, type_name in specs:  # same layout rule GGUFWriter uses
            size = _aligned(size, writer.data_alignment) + _nbytes(shape, type_name)
        with open(path, "r+b") as f:
            f.truncate(size)
        return
    for name, shape, type_name in specs:
        arr = rng.standard_normal(tuple(reversed(shape)), dtype=np.float32) * 0.5
        if name.endswith("norm.weight"):
            arr = np.ones_like(arr)
        if type_name == "F32" or len(shape) == 1:
            writer.add_tensor(name, arr.astype(np.float32))
        elif type_name == "F16":
            writer.add_tensor(name, arr.astype(np.float16))
        else:
            qtype = GGMLQuantizationType[type_name]
            writer.add_tensor(name, quantize(arr, qtype), raw_dtype=qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def _aligned(n: int, alignment: int) -> int:
    return (n + alignment - 1) // alignment * alignment


def _common_kv(arch: str, s: Shape) -> Callable[[GGUFWriter], None]:
    def fill(w: GGUFWriter) -> None:
        w.add_name(f"synthetic-{arch}")
        w.add_block_count(s.n_layers + s.n_nextn)
        w.add_context_length(s.n_ctx_train)
        w.add_embedding_length(s.n_embd)
        w.add_feed_forward_length(s.n_ff)
        w.add_head_count(s.n_head)
        w.add_head_count_kv(s.n_head_kv)
        w.add_key_length(s.head_dim)
        w.add_value_length(s.head_dim)
        w.add_rope_dimension_count(s.head_dim)
        w.add_layer_norm_rms_eps(1e-6)
        w.add_rope_freq_base(10000.0)
        w.add_file_type(FILE_TYPE_OF[s.weight_type.upper()])
        if s.n_expert:
            w.add_expert_count(s.n_expert)
            w.add_expert_used_count(s.n_expert_used)
            w.add_expert_feed_forward_length(s.n_ff_exp)
        for key, value in s.extra_kv.items():
            if isinstance(value, bool):
                w.add_bool(key, value)
            elif isinstance(value, list):
                w.add_array(key, value)
            elif isinstance(value, int):
                w.add_uint32(key, value)
            elif isinstance(value, float):
                w.add_float32(key, value)
            else:
                w.add_string(key, str(value))

    return fill


def _attention(i: int, s: Shape, wt: str, qk_norm: bool) -> list[TensorSpec]:
    q, kv = s.n_head * s.head_dim, s.n_head_kv * s.head_dim
    out: list[TensorSpec] = [
        (f"blk.{i}.attn_norm.weight", (s.n_embd,), "F32"),
        (f"blk.{i}.attn_q.weight", (s.n_embd, q), wt),
        (f"blk.{i}.attn_k.weight", (s.n_embd, kv), wt),
        (f"blk.{i}.attn_v.weight", (s.n_embd, kv), wt),
        (f"blk.{i}.attn_output.weight", (q, s.n_embd), wt),
        (f"blk.{i}.ffn_norm.weight", (s.n_embd,), "F32"),
    ]
    if qk_norm:
        out += [(f"blk.{i}.attn_q_norm.weight", (s.head_dim,), "F32"),
                (f"blk.{i}.attn_k_norm.weight", (s.head_dim,), "F32")]
    return out


def _ends(s: Shape, wt: str) -> tuple[list[TensorSpec], list[TensorSpec]]:
    head = [("token_embd.weight", (s.n_embd, s.n_vocab), wt)]
    tail = [("output_norm.weight", (s.n_embd,), "F32"),
            ("output.weight", (s.n_embd, s.n_vocab), wt)]
    return head, tail


def llama_tensors(s: Shape) -> list[TensorSpec]:
    """The tensor table of a llama-architecture model of shape ``s``."""
    wt = s.weight_type
    head, tail = _ends(s, wt)
    body: list[TensorSpec] = []
    for i in range(s.n_layers):
        body += _attention(i, s, wt, qk_norm=False)
        body += [(f"blk.{i}.ffn_gate.weight", (s.n_embd, s.n_ff), wt),
                 (f"blk.{i}.ffn_up.weight", (s.n_embd, s.n_ff), wt),
                 (f"blk.{i}.ffn_down.weight", (s.n_ff, s.n_embd), wt)]
    return head + body + tail


def qwen3moe_tensors(s: Shape) -> list[TensorSpec]:
    """The tensor table of a qwen3moe model (routed experts in ``*_exps``)."""
    wt = s.weight_type
    head, tail = _ends(s, wt)
    body: list[TensorSpec] = []
    for i in range(s.n_layers):
        body += _attention(i, s, wt, qk_norm=True)
        body += [
            (f"blk.{i}.ffn_gate_inp.weight", (s.n_embd, s.n_expert), "F32"),
            (f"blk.{i}.ffn_gate_exps.weight", (s.n_embd, s.n_ff_exp, s.n_expert), wt),
            (f"blk.{i}.ffn_up_exps.weight", (s.n_embd, s.n_ff_exp, s.n_expert), wt),
            (f"blk.{i}.ffn_down_exps.weight", (s.n_ff_exp, s.n_embd, s.n_expert), wt),
        ]
    return head + body + tail


def write_llama(path: Path, shape: Shape | None = None, header_only: bool = False,
                seed: int = 0) -> Path:
    """A small (loadable) llama model; ``header_only`` for a sparse file of any size."""
    s = shape or Shape()
    return write_gguf(path, "llama", llama_tensors(s), _common_kv("llama", s), s.n_vocab,
                      header_only=header_only, seed=seed)


def write_qwen3moe(path: Path, shape: Shape | None = None, header_only: bool = False,
                   seed: int = 0) -> Path:
    """A small (loadable) qwen3moe MoE model with 8 experts, 2 used per token by default."""
    s = shape or Shape(n_expert=8, n_expert_used=2, n_ff_exp=64)
    return write_gguf(path, "qwen3moe", qwen3moe_tensors(s), _common_kv("qwen3moe", s),
                      s.n_vocab, header_only=header_only, seed=seed)


LLAMA_70B = Shape(n_layers=80, n_embd=8192, n_head=64, n_head_kv=8, head_dim=128,
                  n_ff=28672, n_vocab=128256, n_ctx_train=131072, weight_type="Q4_K")


def write_sparse_70b(path: Path) -> Path:
    """A header-only, sparse llama-70B Q4_K file (~40 GB apparent, ~1 MB on disk)."""
    return write_llama(path, LLAMA_70B, header_only=True)


def disk_usage(path: Path) -> int:
    """Bytes the file really occupies on disk (a sparse file occupies little)."""
    return os.stat(path).st_blocks * 512


def write_llama_split(path: Path, shards: int, shape: Shape | None = None,
                      header_only: bool = False) -> Path:
    """A llama model split into ``shards`` files; ``path`` ends in ``-00001-of-0000N.gguf``."""
    s = shape or Shape()
    return write_gguf(path, "llama", llama_tensors(s), _common_kv("llama", s), s.n_vocab,
                      header_only=header_only, shards=shards)


def gemma3_tensors(s: Shape) -> list[TensorSpec]:
    """The tensor table of a gemma3 model (post-norms, q/k norms, tied output)."""
    wt = s.weight_type
    head = [("token_embd.weight", (s.n_embd, s.n_vocab), wt)]
    body: list[TensorSpec] = []
    for i in range(s.n_layers):
        body += _attention(i, s, wt, qk_norm=True)
        body += [(f"blk.{i}.post_attention_norm.weight", (s.n_embd,), "F32"),
                 (f"blk.{i}.ffn_gate.weight", (s.n_embd, s.n_ff), wt),
                 (f"blk.{i}.ffn_up.weight", (s.n_embd, s.n_ff), wt),
                 (f"blk.{i}.ffn_down.weight", (s.n_ff, s.n_embd), wt),
                 (f"blk.{i}.post_ffw_norm.weight", (s.n_embd,), "F32")]
    return head + body + [("output_norm.weight", (s.n_embd,), "F32")]


GEMMA3_SWA = 256


def write_gemma3(path: Path, shape: Shape | None = None, header_only: bool = False,
                 seed: int = 0) -> Path:
    """A small gemma3 model: sliding-window attention (window 256 by default), 5 SWA
    layers then 1 global, as llama.cpp's default gemma3 pattern."""
    s = shape or Shape(n_layers=6, extra_kv={"gemma3.attention.sliding_window": GEMMA3_SWA})
    if "gemma3.attention.sliding_window" not in s.extra_kv:
        s.extra_kv["gemma3.attention.sliding_window"] = GEMMA3_SWA
    return write_gguf(path, "gemma3", gemma3_tensors(s), _common_kv("gemma3", s), s.n_vocab,
                      header_only=header_only, seed=seed)


def qwen35_kv(s: Shape, d_state: int = 16, n_k_heads: int = 2, n_v_heads: int = 4,
              interval: int = 4) -> dict[str, Any]:
    """Metadata of a qwen35 hybrid: gated delta-net layers, every 4th layer attention."""
    return {"qwen35.ssm.conv_kernel": 4, "qwen35.ssm.inner_size": d_state * n_v_heads,
            "qwen35.ssm.state_size": d_state, "qwen35.ssm.time_step_rank": n_v_heads,
            "qwen35.ssm.group_count": n_k_heads, "qwen35.full_attention_interval": interval,
            "qwen35.rope.dimension_sections": [s.head_dim // 4, s.head_dim // 4, 0, 0],
            "qwen35.nextn_predict_layers": s.n_nextn}


def qwen35_tensors(s: Shape) -> list[TensorSpec]:
    """The tensor table of a qwen35 hybrid (NextN blocks written last, after the output)."""
    wt = s.weight_type
    kv = s.extra_kv
    d_state, n_k = kv["qwen35.ssm.state_size"], kv["qwen35.ssm.group_count"]
    n_v, interval = kv["qwen35.ssm.time_step_rank"], kv["qwen35.full_attention_interval"]
    key_dim, value_dim = d_state * n_k, d_state * n_v
    head, tail = _ends(s, wt)

    def attention_block(i: int) -> list[TensorSpec]:
        q, kvd = s.n_head * s.head_dim, s.n_head_kv * s.head_dim
        return [(f"blk.{i}.attn_q.weight", (s.n_embd, 2 * q), wt),
                (f"blk.{i}.attn_k.weight", (s.n_embd, kvd), wt),
                (f"blk.{i}.attn_v.weight", (s.n_embd, kvd), wt),
                (f"blk.{i}.attn_output.weight", (q, s.n_embd), wt),
                (f"blk.{i}.attn_q_norm.weight", (s.head_dim,), "F32"),
                (f"blk.{i}.attn_k_norm.weight", (s.head_dim,), "F32")]

    def ffn(i: int) -> list[TensorSpec]:
        return [(f"blk.{i}.attn_norm.weight", (s.n_embd,), "F32"),
                (f"blk.{i}.post_attention_norm.weight", (s.n_embd,), "F32"),
                (f"blk.{i}.ffn_gate.weight", (s.n_embd, s.n_ff), wt),
                (f"blk.{i}.ffn_up.weight", (s.n_embd, s.n_ff), wt),
                (f"blk.{i}.ffn_down.weight", (s.n_ff, s.n_embd), wt)]

    body: list[TensorSpec] = []
    for i in range(s.n_layers):
        body += ffn(i)
        if (i + 1) % interval == 0:
            body += attention_block(i)
        else:
            body += [(f"blk.{i}.attn_qkv.weight", (s.n_embd, 2 * key_dim + value_dim), wt),
                     (f"blk.{i}.attn_gate.weight", (s.n_embd, value_dim), wt),
                     (f"blk.{i}.ssm_conv1d.weight", (4, 2 * key_dim + value_dim), "F32"),
                     (f"blk.{i}.ssm_dt.bias", (n_v,), "F32"),
                     (f"blk.{i}.ssm_a", (n_v,), "F32"),
                     (f"blk.{i}.ssm_beta.weight", (s.n_embd, n_v), wt),
                     (f"blk.{i}.ssm_alpha.weight", (s.n_embd, n_v), wt),
                     (f"blk.{i}.ssm_norm.weight", (d_state,), "F32"),
                     (f"blk.{i}.ssm_out.weight", (value_dim, s.n_embd), wt)]
    mtp: list[TensorSpec] = []
    for i in range(s.n_layers, s.n_layers + s.n_nextn):
        mtp += ffn(i) + attention_block(i)
        mtp += [(f"blk.{i}.nextn.eh_proj.weight", (2 * s.n_embd, s.n_embd), wt),
                (f"blk.{i}.nextn.enorm.weight", (s.n_embd,), "F32"),
                (f"blk.{i}.nextn.hnorm.weight", (s.n_embd,), "F32"),
                (f"blk.{i}.nextn.shared_head_norm.weight", (s.n_embd,), "F32")]
    return head + body + tail + mtp


def write_qwen35(path: Path, shape: Shape | None = None, header_only: bool = False,
                 seed: int = 0) -> Path:
    """A small qwen35 hybrid (3 delta-net layers per attention layer, one MTP block)."""
    s = shape or Shape(n_layers=4, n_nextn=1)
    if "qwen35.ssm.state_size" not in s.extra_kv:
        s.extra_kv.update(qwen35_kv(s))
    return write_gguf(path, "qwen35", qwen35_tensors(s), _common_kv("qwen35", s), s.n_vocab,
                      header_only=header_only, seed=seed)
