"""Synthetic gpt-oss models (``gpt-oss`` in llama.cpp): attention sinks, biases on every
projection, sliding-window attention on every other block, routed experts with biases.

Written with the same writer as :mod:`tests.helpers.gguf_factory`.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers.gguf_factory import Shape, TensorSpec, _common_kv, write_gguf

GPT_OSS_SWA = 128


def gpt_oss_tensors(s: Shape) -> list[TensorSpec]:
    """The tensor table of a gpt-oss model of shape ``s`` (``n_expert`` routed experts)."""
    wt, e, f, n = s.weight_type, s.n_embd, s.n_ff_exp, s.n_expert
    q, kv = s.n_head * s.head_dim, s.n_head_kv * s.head_dim
    out: list[TensorSpec] = [("token_embd.weight", (e, s.n_vocab), wt)]
    for i in range(s.n_layers):
        p = f"blk.{i}."
        out += [
            (p + "attn_norm.weight", (e,), "F32"),
            (p + "post_attention_norm.weight", (e,), "F32"),
            (p + "attn_q.weight", (e, q), wt), (p + "attn_q.bias", (q,), "F32"),
            (p + "attn_k.weight", (e, kv), wt), (p + "attn_k.bias", (kv,), "F32"),
            (p + "attn_v.weight", (e, kv), wt), (p + "attn_v.bias", (kv,), "F32"),
            (p + "attn_output.weight", (q, e), wt), (p + "attn_output.bias", (e,), "F32"),
            (p + "attn_sinks.weight", (s.n_head,), "F32"),
            (p + "ffn_gate_inp.weight", (e, n), "F32"), (p + "ffn_gate_inp.bias", (n,), "F32"),
            (p + "ffn_gate_exps.weight", (e, f, n), wt),
            (p + "ffn_gate_exps.bias", (f, n), "F32"),
            (p + "ffn_up_exps.weight", (e, f, n), wt), (p + "ffn_up_exps.bias", (f, n), "F32"),
            (p + "ffn_down_exps.weight", (f, e, n), wt),
            (p + "ffn_down_exps.bias", (e, n), "F32"),
        ]
    return [*out, ("output_norm.weight", (e,), "F32"), ("output.weight", (e, s.n_vocab), wt)]


def write_gpt_oss(path: Path, shape: Shape | None = None, header_only: bool = False,
                  seed: int = 0) -> Path:
    """A small gpt-oss model (8 experts, 2 used, window 128 by default)."""
    s = shape or Shape(n_layers=4, n_expert=8, n_expert_used=2, n_ff_exp=64)
    s.extra_kv.setdefault("gpt-oss.attention.sliding_window", GPT_OSS_SWA)
    return write_gguf(path, "gpt-oss", gpt_oss_tensors(s), _common_kv("gpt-oss", s),
                      s.n_vocab, header_only=header_only, seed=seed)
