"""Write a small synthetic BERT embedding model (random weights) that llama.cpp loads and runs.

The layout is llama.cpp's ``bert`` architecture as ``convert_hf_to_gguf.py`` writes it:
token, token-type and position embeddings with their layer norm, then per block separate
Q/K/V with biases, the attention output and its norm, a GELU feed-forward and the output
norm; ``bert.pooling_type`` says how a sequence is pooled. The tokenizer is WordPiece
(``tokenizer.ggml.model = "bert"``) in llama.cpp's "phantom space" form: a token that
starts a word carries a leading ``▁``, a word piece after it none. The vocabulary holds
the special tokens, every lower-case letter, digit and common punctuation mark in both
forms, and a few whole words, so any ASCII text tokenizes without ``[UNK]``.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from gguf import GGUFWriter, PoolingType, TokenType

SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
WORDS = ("the", "cat", "sat", "on", "mat", "dog", "hello", "world", "embedding", "token")


@dataclass(frozen=True)
class BertShape:
    """The hyper-parameters of a synthetic BERT."""

    n_layers: int = 2
    n_embd: int = 64
    n_head: int = 4
    n_ff: int = 128
    n_ctx_train: int = 512
    pooling: str = "mean"  # mean | cls | last | none | rank
    seed: int = 0


def bert_vocab() -> tuple[list[str], list[int]]:
    """The token texts and token types of the synthetic WordPiece vocabulary."""
    tokens = list(SPECIALS)
    types = [int(TokenType.CONTROL)] * len(SPECIALS)
    types[1] = int(TokenType.UNKNOWN)
    pieces = string.ascii_lowercase + string.digits + string.punctuation
    for ch in pieces:
        tokens += ["\u2581" + ch, ch]
        types += [int(TokenType.NORMAL)] * 2
    for word in WORDS:
        tokens.append("\u2581" + word)
        types.append(int(TokenType.NORMAL))
    return tokens, types


def write_bert(path: Path, shape: BertShape = BertShape()) -> Path:
    """Write a loadable BERT embedding GGUF at ``path`` (F32 norms, biases and token types;
    F16 matrices)."""
    tokens, types = bert_vocab()
    n_vocab = len(tokens)
    s = shape
    rng = np.random.default_rng(s.seed)
    w = GGUFWriter(str(path), "bert")
    w.add_name("synthetic-bert")
    w.add_context_length(s.n_ctx_train)
    w.add_embedding_length(s.n_embd)
    w.add_feed_forward_length(s.n_ff)
    w.add_block_count(s.n_layers)
    w.add_head_count(s.n_head)
    w.add_layer_norm_eps(1e-12)
    w.add_causal_attention(False)
    w.add_pooling_type(PoolingType[s.pooling.upper()])
    w.add_file_type(1)  # mostly F16
    w.add_tokenizer_model("bert")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_type_count(2)
    w.add_bos_token_id(SPECIALS.index("[CLS]"))
    w.add_sep_token_id(SPECIALS.index("[SEP]"))
    w.add_unk_token_id(SPECIALS.index("[UNK]"))
    w.add_pad_token_id(SPECIALS.index("[PAD]"))
    w.add_mask_token_id(SPECIALS.index("[MASK]"))

    def matrix(name: str, rows: int, cols: int, f32: bool = False) -> None:
        # GGUF shape (cols, rows): numpy (rows, cols); scaled so activations stay tame
        arr = (rng.standard_normal((rows, cols)) / np.sqrt(cols)).astype(np.float32)
        w.add_tensor(name, arr if f32 else arr.astype(np.float16))

    def vector(name: str, n: int, value: float | None = None) -> None:
        arr = np.full(n, value, np.float32) if value is not None \
            else rng.standard_normal(n, dtype=np.float32) * 0.02
        w.add_tensor(name, arr)

    e, ff = s.n_embd, s.n_ff
    matrix("token_embd.weight", n_vocab, e)
    matrix("token_types.weight", 2, e, f32=True)  # added to F32 rows as is
    matrix("position_embd.weight", s.n_ctx_train, e)
    vector("token_embd_norm.weight", e, 1.0)
    vector("token_embd_norm.bias", e)
    for i in range(s.n_layers):
        for part in ("attn_q", "attn_k", "attn_v", "attn_output"):
            matrix(f"blk.{i}.{part}.weight", e, e)
            vector(f"blk.{i}.{part}.bias", e)
        vector(f"blk.{i}.attn_output_norm.weight", e, 1.0)
        vector(f"blk.{i}.attn_output_norm.bias", e)
        matrix(f"blk.{i}.ffn_up.weight", ff, e)
        vector(f"blk.{i}.ffn_up.bias", ff)
        matrix(f"blk.{i}.ffn_down.weight", e, ff)
        vector(f"blk.{i}.ffn_down.bias", e)
        vector(f"blk.{i}.layer_output_norm.weight", e, 1.0)
        vector(f"blk.{i}.layer_output_norm.bias", e)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path
