"""A llama.cpp sampler chain built from SamplingParams (one per slot)."""

from __future__ import annotations

import ctypes
import random
from functools import cache
from typing import Any

import numpy as np

from engine.errors import EngineError
from engine.native.model import llama

PENALTY_LAST_N = 64


@cache
def _logits_address() -> Any:
    """``llama_get_logits_ith`` returning the row's address as an int (the bindings return
    a ctypes pointer, which costs an object per call)."""
    import llama_cpp.llama_cpp as bindings

    fn = ctypes.CDLL(bindings._lib._name).llama_get_logits_ith  # the handle already loaded
    fn.argtypes = [ctypes.c_void_p, ctypes.c_int32]
    fn.restype = ctypes.c_void_p
    return fn


class SamplerChain:
    """grammar -> penalties -> top-k -> top-p -> min-p -> temperature -> dist (or greedy)."""

    def __init__(self, vocab: Any, n_vocab: int, *, temperature: float, top_p: float,
                 top_k: int, min_p: float, repeat_penalty: float, presence_penalty: float,
                 frequency_penalty: float, seed: int | None, grammar: str | None) -> None:
        lib = llama()
        self.ptr: Any = lib.llama_sampler_chain_init(lib.llama_sampler_chain_default_params())
        add = lib.llama_sampler_chain_add
        if grammar:
            g = lib.llama_sampler_init_grammar(vocab, grammar.encode(), b"root")
            if not g:
                self.free()
                raise EngineError("the grammar does not parse (GBNF)")
            add(self.ptr, g)
        if repeat_penalty != 1.0 or presence_penalty or frequency_penalty:
            add(self.ptr, lib.llama_sampler_init_penalties(
                n_vocab, PENALTY_LAST_N, repeat_penalty, frequency_penalty, presence_penalty))
        self._n_vocab = n_vocab
        self._row_address: int | None = None
        self._row: Any = None  # a numpy view of the last logits row, reused while it stays
        # plain greedy needs no sampler at all: an argmax over the logits row is ~10x
        # cheaper than filling llama.cpp's candidate array for the whole vocabulary
        self.plain_greedy = temperature <= 0.0 and not grammar and repeat_penalty == 1.0 \
            and not presence_penalty and not frequency_penalty
        if temperature <= 0.0:
            add(self.ptr, lib.llama_sampler_init_greedy())
            return
        if top_k > 0:
            add(self.ptr, lib.llama_sampler_init_top_k(top_k))
        if 0.0 < top_p < 1.0:
            add(self.ptr, lib.llama_sampler_init_top_p(top_p, 1))
        if min_p > 0.0:
            add(self.ptr, lib.llama_sampler_init_min_p(min_p, 1))
        add(self.ptr, lib.llama_sampler_init_temp(temperature))
        use_seed = seed if seed is not None else random.getrandbits(32)
        add(self.ptr, lib.llama_sampler_init_dist(use_seed & 0xFFFFFFFF))

    def sample(self, ctx: Any, index: int) -> int:
        """Sample (and accept) the next token from the logits at batch ``index``."""
        if self.plain_greedy:
            # the decode step's cost after llama_decode returns runs with caches the
            # weights have just flushed: the fewer Python objects per token, the better
            address = _logits_address()(ctx, index)
            if address:
                if address != self._row_address:
                    buffer = (ctypes.c_float * self._n_vocab).from_address(address)
                    self._row = np.frombuffer(memoryview(buffer), dtype=np.float32)
                    self._row_address = address
                return int(self._row.argmax())
        return int(llama().llama_sampler_sample(self.ptr, ctx, index))

    def free(self) -> None:
        """Release the chain and its samplers; idempotent."""
        if self.ptr:
            llama().llama_sampler_free(self.ptr)
            self.ptr = None
