"""Synthetic GGUFs for DFlash speculation: a block-diffusion drafter (architecture
``dflash``) and a llama target it drafts for.

The drafter has no token embeddings or output head of its own: llama.cpp lends it the
target's (through ``ctx_other``), as real DFlash exports with the target's vocabulary do.
It reads the inputs of the target's layers ``target_layers`` (concatenated, fused by
``fc`` and normed by ``enc.output_norm``) into its KV cache, and decodes one block
``[last token, <mask> ...]`` with non-causal attention over that cache.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
from gguf import GGUFWriter

from tests.helpers.gguf_factory import (
    Shape,
    TensorSpec,
    _common_kv,
    _vocab,
    llama_tensors,
    write_gguf,
)

MASK_TOKEN = 3  # the first byte token of the synthetic vocabulary serves as <mask>
BLOCK_SIZE = 8


def dflash_tensors(s: Shape, n_target_layers: int) -> list[TensorSpec]:
    """The tensor table of a DFlash drafter (no ``token_embd`` / ``output``)."""
    wt = s.weight_type
    q, kv = s.n_head * s.head_dim, s.n_head_kv * s.head_dim
    out: list[TensorSpec] = [
        ("fc.weight", (n_target_layers * s.n_embd, s.n_embd), wt),
        ("enc.output_norm.weight", (s.n_embd,), "F32"),
        ("output_norm.weight", (s.n_embd,), "F32")]
    for i in range(s.n_layers):
        out += [(f"blk.{i}.attn_norm.weight", (s.n_embd,), "F32"),
                (f"blk.{i}.attn_q.weight", (s.n_embd, q), wt),
                (f"blk.{i}.attn_k.weight", (s.n_embd, kv), wt),
                (f"blk.{i}.attn_v.weight", (s.n_embd, kv), wt),
                (f"blk.{i}.attn_output.weight", (q, s.n_embd), wt),
                (f"blk.{i}.attn_q_norm.weight", (s.head_dim,), "F32"),
                (f"blk.{i}.attn_k_norm.weight", (s.head_dim,), "F32"),
                (f"blk.{i}.ffn_norm.weight", (s.n_embd,), "F32"),
                (f"blk.{i}.ffn_gate.weight", (s.n_embd, s.n_ff), wt),
                (f"blk.{i}.ffn_up.weight", (s.n_embd, s.n_ff), wt),
                (f"blk.{i}.ffn_down.weight", (s.n_ff, s.n_embd), wt)]
    return out


def write_dflash(path: Path, target_layers: tuple[int, ...] = (0, 1),
                 shape: Shape | None = None, seed: int = 1) -> Path:
    """A one-layer DFlash drafter with random weights for a :class:`Shape` llama target."""
    s = shape or Shape(n_layers=1, weight_type="F32")
    s.extra_kv.update({"dflash.target_layers": list(target_layers),
                       "dflash.block_size": BLOCK_SIZE,
                       "tokenizer.ggml.mask_token_id": MASK_TOKEN})
    return write_gguf(path, "dflash", dflash_tensors(s, len(target_layers)),
                      _common_kv("dflash", s), s.n_vocab, seed=seed)


def write_llama_target(path: Path, seed: int = 0) -> Path:
    """A two-layer llama target (F32) of the drafter's width and vocabulary."""
    s = Shape(n_layers=2, weight_type="F32")
    return write_gguf(path, "llama", llama_tensors(s), _common_kv("llama", s), s.n_vocab,
                      seed=seed)


def write_llama_echo(path: Path, seed: int = 0) -> Path:
    """A llama target that repeats its last token: its layers add nothing and its output
    head is its token embedding, whose rows live in the first half of the width only (the
    second half is left to :func:`write_dflash_copy`)."""
    s = Shape(n_layers=2, weight_type="F32")
    rng = np.random.default_rng(seed)
    embd = rng.standard_normal((s.n_vocab, s.n_embd), dtype=np.float32)
    embd[:, s.n_embd // 2:] = 0.0
    _write(path, "llama", s, llama_tensors(s), rng,
           lambda name, arr: embd if name in ("token_embd.weight", "output.weight") else None)
    return path


def write_dflash_copy(path: Path, seed: int = 1, gain: float = 10.0) -> Path:
    """A DFlash drafter for :func:`write_llama_echo` that drafts the token the target's
    layer inputs carry: ``fc`` copies the first half of layer 0's input (the token
    embedding) into the second half of the width, where the block's own tokens have
    nothing; attention is uniform (no query, no key) and reads that half as values, and
    ``attn_output`` adds it back into the first half, ``gain`` times. Over a context of
    one repeated token every draft is that token and accepted; with the layer inputs
    withheld the drafts are the mask token."""
    s = Shape(n_layers=1, weight_type="F32")
    s.extra_kv.update({"dflash.target_layers": [0, 1], "dflash.block_size": BLOCK_SIZE,
                       "tokenizer.ggml.mask_token_id": MASK_TOKEN})
    half, kv = s.n_embd // 2, s.n_head_kv * s.head_dim
    per_kv = s.n_head // s.n_head_kv  # query heads reading each key/value head

    def weights(name: str, arr: np.ndarray) -> np.ndarray | None:
        if name == "fc.weight":  # (out n_embd, in 2 n_embd)
            out = np.zeros_like(arr)
            out[half:, :half] = np.eye(half, dtype=np.float32)
            return out
        if name.endswith(("attn_q.weight", "attn_k.weight", "ffn_down.weight")):
            return np.zeros_like(arr)
        if name.endswith("attn_v.weight"):  # (out kv, in n_embd): the second half
            out = np.zeros_like(arr)
            out[:, half:half + kv] = np.eye(kv, dtype=np.float32)
            return out
        if name.endswith("attn_output.weight"):  # (out n_embd, in n_head * head_dim)
            out = np.zeros_like(arr)
            for h in range(s.n_head_kv):  # the first query head of each kv head
                rows = slice(h * s.head_dim, (h + 1) * s.head_dim)
                cols = slice(h * per_kv * s.head_dim, (h * per_kv + 1) * s.head_dim)
                out[rows, cols] = gain * np.eye(s.head_dim, dtype=np.float32)
            return out
        return None

    _write(path, "dflash", s, dflash_tensors(s, 2), np.random.default_rng(seed), weights)
    return path


def _write(path: Path, arch: str, s: Shape, specs: list[TensorSpec],
           rng: np.random.Generator,
           override: Callable[[str, np.ndarray], np.ndarray | None]) -> None:
    writer = GGUFWriter(str(path), arch)
    _common_kv(arch, s)(writer)
    _vocab(writer, s.n_vocab)
    for name, shape, _type in specs:
        arr = rng.standard_normal(tuple(reversed(shape)), dtype=np.float32) * 0.5
        if name.endswith("norm.weight"):
            arr = np.ones_like(arr)
        elif arch == "llama" and name.split(".")[-2] in ("attn_output", "ffn_down"):
            arr = np.zeros_like(arr)
        changed = override(name, arr)
        writer.add_tensor(name, arr if changed is None else changed)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
