"""A reusable ``llama_batch``: allocated once, refilled every decode step."""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import Any

from engine.native.model import llama


class Batch:
    """Tokens of one ``llama_decode`` call, for up to ``capacity`` tokens over many sequences."""

    def __init__(self, capacity: int, n_seq_max: int) -> None:
        self.capacity = capacity
        self._raw: Any = llama().llama_batch_init(capacity, 0, max(1, n_seq_max))
        self._token = self._raw.token
        self._pos = self._raw.pos
        self._n_seq_id = self._raw.n_seq_id
        self._seq_id = self._raw.seq_id
        self._logits = self._raw.logits
        self.n_tokens = 0

    def clear(self) -> None:
        """Empty the batch (the memory stays allocated)."""
        self.n_tokens = 0

    @property
    def free_space(self) -> int:
        """How many more tokens fit."""
        return self.capacity - self.n_tokens

    def add(self, token: int, pos: int, seq: int, logits: bool) -> int:
        """Append one token; returns its index in the batch (where its logits land)."""
        i = self.n_tokens
        self._token[i] = token
        self._pos[i] = pos
        self._n_seq_id[i] = 1
        self._seq_id[i][0] = seq
        self._logits[i] = 1 if logits else 0
        self.n_tokens = i + 1
        return i

    def add_run(self, tokens: Sequence[int], first_pos: int, seq: int,
                logits_last: bool, logits_all: bool = False) -> int:
        """Append consecutive tokens of one sequence; returns the index of the last one.

        ``logits_all``: logits at every one of them (to score a prompt), not only the last.
        """
        start = self.n_tokens
        n = len(tokens)
        arr = (ctypes.c_int32 * n)(*tokens)
        ctypes.memmove(ctypes.addressof(self._token.contents) + 4 * start, arr, 4 * n)
        pos_arr = (ctypes.c_int32 * n)(*range(first_pos, first_pos + n))
        ctypes.memmove(ctypes.addressof(self._pos.contents) + 4 * start, pos_arr, 4 * n)
        ctypes.memset(ctypes.addressof(self._logits.contents) + start, int(logits_all), n)
        n_seq_id, seq_id = self._n_seq_id, self._seq_id
        for i in range(start, start + n):
            n_seq_id[i] = 1
            seq_id[i][0] = seq
        if logits_last:
            self._logits[start + n - 1] = 1
        self.n_tokens = start + n
        return start + n - 1

    def decode(self, ctx: Any) -> int:
        """Run ``llama_decode`` on the batch; returns llama.cpp's status (0 = ok)."""
        self._raw.n_tokens = self.n_tokens
        return int(llama().llama_decode(ctx, self._raw))

    def free(self) -> None:
        """Release the native arrays; idempotent."""
        if self._raw is not None:
            llama().llama_batch_free(self._raw)
            self._raw = None
