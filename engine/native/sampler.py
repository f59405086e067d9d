"""A llama.cpp sampler chain built from SamplingParams (one per slot)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from engine.errors import EngineError
from engine.native.logits import LogitsRows
from engine.native.model import llama

PENALTY_LAST_N = 64
BAN_BIAS = -100.0  # a bias this low bans the token outright (its logit becomes -inf)


class SamplerChain:
    """grammar -> logit bias -> penalties -> top-k -> top-p -> min-p -> temperature ->
    dist (or greedy)."""

    def __init__(self, vocab: Any, n_vocab: int, *, temperature: float, top_p: float,
                 top_k: int, min_p: float, repeat_penalty: float, presence_penalty: float,
                 frequency_penalty: float, seed: int | None, grammar: str | None,
                 logit_bias: Sequence[tuple[int, float]] = ()) -> None:
        lib = llama()
        self.ptr: Any = lib.llama_sampler_chain_init(lib.llama_sampler_chain_default_params())
        add = lib.llama_sampler_chain_add
        if grammar:
            g = lib.llama_sampler_init_grammar(vocab, grammar.encode(), b"root")
            if not g:
                self.free()
                raise EngineError("the grammar does not parse (GBNF)")
            add(self.ptr, g)
        if logit_bias:
            add(self.ptr, _logit_bias_sampler(n_vocab, logit_bias))
        if repeat_penalty != 1.0 or presence_penalty or frequency_penalty:
            add(self.ptr, lib.llama_sampler_init_penalties(
                n_vocab, PENALTY_LAST_N, repeat_penalty, frequency_penalty, presence_penalty))
        self._rows = LogitsRows(n_vocab)
        # plain greedy needs no sampler at all: an argmax over the logits row is ~10x
        # cheaper than filling llama.cpp's candidate array for the whole vocabulary
        self.plain_greedy = temperature <= 0.0 and not grammar and repeat_penalty == 1.0 \
            and not presence_penalty and not frequency_penalty and not logit_bias
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
            token = self._rows.find(ctx, index)
            if token is not None:
                return token
        return int(llama().llama_sampler_sample(self.ptr, ctx, index))

    def free(self) -> None:
        """Release the chain and its samplers; idempotent."""
        if self.ptr:
            llama().llama_sampler_free(self.ptr)
            self.ptr = None


def _logit_bias_sampler(n_vocab: int, logit_bias: Sequence[tuple[int, float]]) -> Any:
    """llama.cpp's logit-bias sampler (it copies the array); a ban is -inf, so no other
    logit, however low, can lose to it."""
    lib = llama()
    for token, _ in logit_bias:
        if not 0 <= token < n_vocab:
            raise EngineError(f"logit_bias names token {token}, outside the vocabulary "
                              f"(0..{n_vocab - 1})")
    items = (lib.llama_logit_bias * len(logit_bias))()
    for item, (token, bias) in zip(items, logit_bias, strict=True):
        item.token = token
        item.bias = float("-inf") if bias <= BAN_BIAS else bias
    return lib.llama_sampler_init_logit_bias(n_vocab, len(logit_bias), items)
