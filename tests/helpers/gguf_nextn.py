"""Synthetic GGUFs for speculative decoding: a glm4moe model with a NextN (MTP) block, and a
llama model whose vocabulary differs from another's.

glm4moe is an attention-only MoE architecture whose NextN head llama.cpp drives as an MTP
drafter (``LLAMA_CONTEXT_TYPE_MTP``); unlike qwen35 its KV cache can drop rejected drafts.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from gguf import GGUFWriter

from tests.helpers.gguf_factory import (
    Shape,
    TensorSpec,
    _common_kv,
    _ends,
    _vocab,
    llama_tensors,
    write_gguf,
)

# written by layers into the residual stream: zero in an echo model
_OUTPUTS = ("attn_output", "ffn_down", "ffn_down_exps", "ffn_down_shexp")


def glm4moe_kv(s: Shape) -> dict[str, object]:
    """Metadata of a glm4moe model: one dense lead layer, one shared expert, NextN blocks."""
    return {"glm4moe.expert_shared_count": 1, "glm4moe.leading_dense_block_count": 1,
            "glm4moe.expert_weights_scale": 1.0, "glm4moe.expert_weights_norm": True,
            "glm4moe.expert_gating_func": 2, "glm4moe.nextn_predict_layers": s.n_nextn}


def glm4moe_tensors(s: Shape) -> list[TensorSpec]:
    """The tensor table: layer 0 dense, later layers MoE, the last ``n_nextn`` NextN blocks."""
    wt = s.weight_type
    head, tail = _ends(s, wt)
    q, kv = s.n_head * s.head_dim, s.n_head_kv * s.head_dim
    body: list[TensorSpec] = []
    for i in range(s.n_layers + s.n_nextn):
        body += [(f"blk.{i}.attn_norm.weight", (s.n_embd,), "F32"),
                 (f"blk.{i}.attn_q.weight", (s.n_embd, q), wt),
                 (f"blk.{i}.attn_k.weight", (s.n_embd, kv), wt),
                 (f"blk.{i}.attn_v.weight", (s.n_embd, kv), wt),
                 (f"blk.{i}.attn_output.weight", (q, s.n_embd), wt),
                 (f"blk.{i}.post_attention_norm.weight", (s.n_embd,), "F32")]
        if i == 0:
            body += [(f"blk.{i}.ffn_gate.weight", (s.n_embd, s.n_ff), wt),
                     (f"blk.{i}.ffn_up.weight", (s.n_embd, s.n_ff), wt),
                     (f"blk.{i}.ffn_down.weight", (s.n_ff, s.n_embd), wt)]
        else:
            body += [
                (f"blk.{i}.ffn_gate_inp.weight", (s.n_embd, s.n_expert), "F32"),
                (f"blk.{i}.exp_probs_b.bias", (s.n_expert,), "F32"),
                (f"blk.{i}.ffn_gate_exps.weight", (s.n_embd, s.n_ff_exp, s.n_expert), wt),
                (f"blk.{i}.ffn_up_exps.weight", (s.n_embd, s.n_ff_exp, s.n_expert), wt),
                (f"blk.{i}.ffn_down_exps.weight", (s.n_ff_exp, s.n_embd, s.n_expert), wt),
                (f"blk.{i}.ffn_gate_shexp.weight", (s.n_embd, s.n_ff_exp), wt),
                (f"blk.{i}.ffn_up_shexp.weight", (s.n_embd, s.n_ff_exp), wt),
                (f"blk.{i}.ffn_down_shexp.weight", (s.n_ff_exp, s.n_embd), wt)]
        if i >= s.n_layers:
            body += [(f"blk.{i}.nextn.eh_proj.weight", (2 * s.n_embd, s.n_embd), wt),
                     (f"blk.{i}.nextn.enorm.weight", (s.n_embd,), "F32"),
                     (f"blk.{i}.nextn.hnorm.weight", (s.n_embd,), "F32"),
                     (f"blk.{i}.nextn.shared_head_norm.weight", (s.n_embd,), "F32")]
    return head + body + tail


def write_glm4moe_nextn(path: Path, shape: Shape | None = None, seed: int = 0) -> Path:
    """A small loadable glm4moe model (2 trunk layers, 4 experts) with one NextN block."""
    s = shape or Shape(n_layers=2, n_nextn=1, n_expert=4, n_expert_used=2, n_ff_exp=64,
                       weight_type="F32")
    s.extra_kv.update(glm4moe_kv(s))
    return write_gguf(path, "glm4moe", glm4moe_tensors(s), _common_kv("glm4moe", s),
                      s.n_vocab, seed=seed)


def write_glm4moe_echo(path: Path, seed: int = 0) -> Path:
    """A glm4moe model with a NextN block whose trunk and head both predict the current
    token again (layers add nothing, tied output, ``eh_proj`` passes the token embedding):
    every MTP draft is accepted, which a random head never achieves."""
    s = Shape(n_layers=2, n_nextn=1, n_expert=4, n_expert_used=2, n_ff_exp=64,
              weight_type="F32")
    s.extra_kv.update(glm4moe_kv(s))
    rng = np.random.default_rng(seed)
    writer = GGUFWriter(str(path), "glm4moe")
    _common_kv("glm4moe", s)(writer)
    _vocab(writer, s.n_vocab)
    embd = rng.standard_normal((s.n_vocab, s.n_embd), dtype=np.float32)
    for name, shape, _type in glm4moe_tensors(s):
        arr = rng.standard_normal(tuple(reversed(shape)), dtype=np.float32) * 0.5
        if name.endswith("norm.weight"):
            arr = np.ones_like(arr)
        elif name.split(".")[-2] in _OUTPUTS:
            arr = np.zeros_like(arr)
        elif name in ("token_embd.weight", "output.weight"):
            arr = embd
        elif name.endswith("nextn.eh_proj.weight"):
            arr = np.zeros_like(arr)
            arr[:, :s.n_embd] = np.eye(s.n_embd, dtype=np.float32)
        writer.add_tensor(name, arr)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def write_llama_vocab(path: Path, n_vocab: int, seed: int = 0) -> Path:
    """A small loadable llama model with ``n_vocab`` tokens (a vocabulary of its own)."""
    s = Shape(n_vocab=n_vocab)
    return write_gguf(path, "llama", llama_tensors(s), _common_kv("llama", s), s.n_vocab,
                      seed=seed)
