"""A llama.cpp sampler chain built from SamplingParams (one per slot)."""

from __future__ import annotations

import ctypes
import random
from collections.abc import Sequence
from typing import Any

import numpy as np

from engine.errors import EngineError
from engine.native.logits import LogitsRows
from engine.native.model import llama

PENALTY_LAST_N = 64
BAN_BIAS = -100.0  # a bias this low bans the token outright (its logit becomes -inf)
# llama_token_data is {int32 id; float logit; float p}
_TOKEN_DATA = np.dtype([("id", "<i4"), ("logit", "<f4"), ("p", "<f4")])


GRAMMAR_DEAD_END = "the grammar allows no token at this point of the answer"


class GrammarDeadEndError(EngineError, ValueError):
    """The request's grammar allows no token here (all of them rejected by the grammar,
    banned by a logit bias, or an end-of-generation token where the grammar is not
    complete). The request ends; the chain is left as it was and the engine goes on.
    Its message starts with :data:`GRAMMAR_DEAD_END` (the server answers it as the
    request's fault)."""


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
        self._checked = _Candidates(n_vocab) if grammar else None
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
        if self._checked is not None:
            return self._checked.sample(self.ptr, self._rows, ctx, index)
        return int(llama().llama_sampler_sample(self.ptr, ctx, index))

    def free(self) -> None:
        """Release the chain and its samplers; idempotent."""
        if self.ptr:
            llama().llama_sampler_free(self.ptr)
            self.ptr = None


class _Candidates:
    """``llama_sampler_sample`` in two halves, for a chain with a grammar: apply the chain
    to the candidates, then accept the chosen token only when the grammar allows it.

    llama.cpp accepts whatever the chain chose; where the grammar rejected every token it
    chooses a rejected one anyway, and the grammar's accept throws a C++ exception (or
    aborts, for an end-of-generation token) that ends the whole process. The grammar sets
    a rejected token's logit to -inf and no later sampler raises it again, so the chosen
    token's logit says whether the grammar (and the biases) let it through.
    """

    def __init__(self, n_vocab: int) -> None:
        lib = llama()
        self.n_vocab = n_vocab
        self._ids = np.arange(n_vocab, dtype=np.int32)
        self._data = np.zeros(n_vocab, dtype=_TOKEN_DATA)
        self._array = lib.llama_token_data_array(
            data=ctypes.cast(self._data.ctypes.data, ctypes.POINTER(lib.llama_token_data)),
            size=n_vocab, selected=-1, sorted=False)
        self._ref = ctypes.byref(self._array)

    def sample(self, chain: Any, rows: LogitsRows, ctx: Any, index: int) -> int:
        """The chain's token at batch ``index``, accepted by every sampler of the chain.

        Raises:
            GrammarDeadEndError: no token survives the grammar and the biases.
            EngineError: llama.cpp holds no logits at ``index``.
        """
        row = rows.row(ctx, index)
        if row is None:
            raise EngineError(f"llama.cpp holds no logits at batch index {index}")
        data, array = self._data, self._array
        data["id"] = self._ids  # the samplers sort and cut the array in place
        data["logit"] = row
        array.size, array.selected, array.sorted = self.n_vocab, -1, False
        lib = llama()
        lib.llama_sampler_apply(chain, self._ref)
        chosen = array.selected
        if not 0 <= chosen < array.size or not data["logit"][chosen] > -np.inf:
            raise GrammarDeadEndError(
                f"{GRAMMAR_DEAD_END} (every token it accepts is banned by logit_bias, "
                "or it matches no token of this model)")
        token = int(data["id"][chosen])
        lib.llama_sampler_accept(chain, token)
        return token


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
