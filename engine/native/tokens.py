"""Tokenization and incremental detokenization (UTF-8 split across tokens handled)."""

from __future__ import annotations

import codecs
import ctypes
from typing import Any

from engine.native.model import llama


class Vocab:
    """Tokenizer of one model, with a cache of token pieces."""

    def __init__(self, vocab: Any) -> None:
        self.ptr = vocab
        lib = llama()
        self.n_tokens = int(lib.llama_vocab_n_tokens(vocab))
        self.bos = int(lib.llama_vocab_bos(vocab))
        self.eos = int(lib.llama_vocab_eos(vocab))
        self._pieces: dict[int, bytes] = {}
        self._shown: dict[int, bytes] = {}
        self._eog: dict[int, bool] = {}

    def tokenize(self, text: str, add_special: bool = True,
                 parse_special: bool = True) -> list[int]:
        """Token ids of ``text``; ``add_special`` adds BOS where the model wants it."""
        lib = llama()
        raw = text.encode("utf-8")
        n_max = len(raw) + 8
        out = (ctypes.c_int32 * n_max)()
        n = lib.llama_tokenize(self.ptr, raw, len(raw), out, n_max, add_special, parse_special)
        if n < 0:
            n_max = -n
            out = (ctypes.c_int32 * n_max)()
            n = lib.llama_tokenize(self.ptr, raw, len(raw), out, n_max, add_special,
                                   parse_special)
        return list(out[:n])

    def piece(self, token: int) -> bytes:
        """The bytes a token stands for (control tokens render as nothing)."""
        cached = self._pieces.get(token)
        if cached is not None:
            return cached
        data = self._pieces[token] = self._to_piece(token, special=False)
        return data

    def shown(self, token: int) -> bytes:
        """The bytes a token stands for, control tokens written out (``<|im_end|>``): how
        a token is named in log-probabilities."""
        cached = self._shown.get(token)
        if cached is not None:
            return cached
        data = self._shown[token] = self._to_piece(token, special=True)
        return data

    def _to_piece(self, token: int, special: bool) -> bytes:
        lib = llama()
        buf = ctypes.create_string_buffer(64)  # per call: any thread may ask
        n = lib.llama_token_to_piece(self.ptr, token, buf, len(buf), 0, special)
        if n < 0:
            buf = ctypes.create_string_buffer(-n)
            n = lib.llama_token_to_piece(self.ptr, token, buf, len(buf), 0, special)
        return buf.raw[:n]

    def is_eog(self, token: int) -> bool:
        """Whether ``token`` ends generation (EOS, EOT ...)."""
        known = self._eog.get(token)
        if known is None:
            known = self._eog[token] = bool(llama().llama_vocab_is_eog(self.ptr, token))
        return known

    def add_bos(self) -> bool:
        """Whether the model expects a BOS token at the start."""
        return bool(llama().llama_vocab_get_add_bos(self.ptr))


class Detokenizer:
    """Turns a stream of tokens into text; bytes of a character split across tokens wait."""

    def __init__(self, vocab: Vocab) -> None:
        self._vocab = vocab
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def feed(self, token: int) -> str:
        """The text that ``token`` completes (may be empty)."""
        return self._decoder.decode(self._vocab.piece(token))

    def flush(self) -> str:
        """Whatever is pending at the end (an incomplete character becomes U+FFFD)."""
        return self._decoder.decode(b"", final=True)
