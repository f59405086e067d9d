"""A grammar that leaves no token ends its request with an error, never the process."""

from __future__ import annotations

import ctypes
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from engine.launch import LaunchSpec
from engine.native.batch import Batch
from engine.native.context import NativeContext
from engine.native.model import NativeModel, llama
from engine.native.sampler import GrammarDeadEndError, SamplerChain
from engine.native.tokens import Vocab
from engine.requests import GenerationRequest, SamplingParams
from engine.runtime import Engine
from engine.server.errors import ApiError
from engine.server.generation import _raise_for_engine_failure

pytestmark = pytest.mark.slow

NOTHING = "root ::= [z-a]"  # an empty character range: matches no text at all
ZERO = 'root ::= "0"'
YES_NO = 'root ::= "yes" | "no"'
PROMPT = "Is the sky blue? Answer yes or no:"


@dataclass
class Native:
    model: NativeModel
    ctx: NativeContext
    vocab: Vocab
    index: int  # the batch index of the prompt's logits

    def chain(self, grammar: str | None, temperature: float = 0.0,
              bias: tuple[tuple[int, float], ...] = ()) -> SamplerChain:
        return SamplerChain(self.model.vocab, self.model.n_vocab, temperature=temperature,
                            top_p=0.95, top_k=40, min_p=0.05, repeat_penalty=1.0,
                            presence_penalty=0.0, frequency_penalty=0.0, seed=7,
                            grammar=grammar, logit_bias=bias)


@pytest.fixture(scope="module")
def native(demo_model: Path) -> Iterator[Native]:
    spec = LaunchSpec(str(demo_model), n_threads=1, n_ctx=256)
    model = NativeModel(spec)
    ctx = NativeContext(model, spec)
    vocab = Vocab(model.vocab)
    batch = Batch(spec.n_batch, 1)
    index = batch.add_run(vocab.tokenize(PROMPT), 0, 0, logits_last=True)
    assert batch.decode(ctx.ptr) == 0
    yield Native(model, ctx, vocab, index)
    batch.free()
    ctx.free()
    model.free()


def allowed_tokens(native: Native, grammar: str) -> list[int]:
    """The tokens llama.cpp's grammar sampler lets through at the grammar's start."""
    lib = llama()
    n_vocab = native.model.n_vocab
    sampler = lib.llama_sampler_init_grammar(native.model.vocab, grammar.encode(), b"root")
    data = np.zeros(n_vocab, dtype=[("id", "<i4"), ("logit", "<f4"), ("p", "<f4")])
    data["id"] = np.arange(n_vocab, dtype=np.int32)
    array = lib.llama_token_data_array(
        data=ctypes.cast(data.ctypes.data, ctypes.POINTER(lib.llama_token_data)),
        size=n_vocab, selected=-1, sorted=False)
    try:
        lib.llama_sampler_apply(sampler, ctypes.byref(array))
    finally:
        lib.llama_sampler_free(sampler)
    return [int(t) for t in data["id"][np.isfinite(data["logit"])]]


def expect_dead_end(chain: SamplerChain, native: Native) -> None:
    try:
        with pytest.raises(GrammarDeadEndError, match="the grammar allows no token"):
            chain.sample(native.ctx.ptr, native.index)
    finally:
        chain.free()


@pytest.mark.parametrize("temperature", [0.0, 0.8])
def test_a_grammar_that_matches_nothing_raises_and_the_context_samples_on(
        native: Native, temperature: float) -> None:
    expect_dead_end(native.chain(NOTHING, temperature), native)
    # the same context, right after: a grammar that can match, and no grammar at all
    chain = native.chain(YES_NO, temperature)
    try:
        first = native.vocab.piece(chain.sample(native.ctx.ptr, native.index)).decode()
    finally:
        chain.free()
    assert first and ("yes".startswith(first) or "no".startswith(first))
    plain = native.chain(None)
    try:
        token = plain.sample(native.ctx.ptr, native.index)
    finally:
        plain.free()
    row = np.ctypeslib.as_array(llama().llama_get_logits_ith(native.ctx.ptr, native.index),
                                shape=(native.model.n_vocab,))
    assert token == int(row.argmax())


@pytest.mark.parametrize("temperature", [0.0, 0.8])
def test_a_grammar_whose_tokens_are_all_banned_raises(native: Native,
                                                      temperature: float) -> None:
    allowed = allowed_tokens(native, ZERO)
    assert allowed  # "0" is a token of the vocabulary
    ban = tuple((t, -100.0) for t in allowed)
    expect_dead_end(native.chain(ZERO, temperature, ban), native)
    # banning all but one leaves that one
    kept = native.chain(ZERO, temperature, ban[1:])
    try:
        assert kept.sample(native.ctx.ptr, native.index) == allowed[0]
    finally:
        kept.free()


def test_a_complete_grammar_with_its_end_token_banned_raises(native: Native) -> None:
    eog = [t for t in range(native.model.n_vocab) if native.vocab.is_eog(t)]
    chain = native.chain(ZERO, bias=tuple((t, -100.0) for t in eog))
    try:
        token = chain.sample(native.ctx.ptr, native.index)  # "0": the grammar is complete
        assert native.vocab.piece(token) == b"0"
        # now only an end-of-generation token would do, and all of them are banned
        with pytest.raises(GrammarDeadEndError):
            chain.sample(native.ctx.ptr, native.index)
    finally:
        chain.free()


CHILD = textwrap.dedent("""
    import sys
    from tests.engine.test_sampler_grammar import native_for_child
    model, ctx, index, lib = native_for_child(sys.argv[1])
    from engine.native.sampler import GrammarDeadEndError, SamplerChain
    chain = SamplerChain(model.vocab, model.n_vocab, temperature=0.0, top_p=1.0, top_k=0,
                         min_p=0.0, repeat_penalty=1.0, presence_penalty=0.0,
                         frequency_penalty=0.0, seed=1, grammar="root ::= [z-a]")
    if sys.argv[2] == "raw":
        lib.llama_sampler_sample(chain.ptr, ctx.ptr, index)  # llama.cpp on its own
    else:
        try:
            chain.sample(ctx.ptr, index)
        except GrammarDeadEndError:
            print("refused", flush=True)
    print("alive", flush=True)
""")


def native_for_child(model_path: str) -> tuple[NativeModel, NativeContext, int, Any]:
    """The child's model, context and decoded prompt (see ``CHILD``)."""
    spec = LaunchSpec(model_path, n_threads=1, n_ctx=256)
    model = NativeModel(spec)
    ctx = NativeContext(model, spec)
    batch = Batch(spec.n_batch, 1)
    index = batch.add_run(Vocab(model.vocab).tokenize(PROMPT), 0, 0, logits_last=True)
    assert batch.decode(ctx.ptr) == 0
    return model, ctx, index, llama()


def test_llama_cpp_alone_kills_the_process_the_chain_does_not(demo_model: Path) -> None:
    def child(mode: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", CHILD, str(demo_model), mode],
                              capture_output=True, text=True, timeout=120,
                              cwd=Path(__file__).parents[2])

    raw = child("raw")
    assert raw.returncode != 0 and "alive" not in raw.stdout
    assert "grammar" in raw.stderr.lower()  # llama.cpp's own complaint, then the abort
    safe = child("checked")
    assert safe.returncode == 0, safe.stderr[-2000:]
    assert safe.stdout.split() == ["refused", "alive"]


@pytest.fixture(scope="module")
def engine(demo_model: Path) -> Iterator[Engine]:
    eng = Engine(LaunchSpec(str(demo_model), n_threads=1, n_ctx=1024, n_seq_max=2))
    yield eng
    eng.close()


def test_the_engine_ends_the_request_and_serves_the_others(engine: Engine) -> None:
    story = engine.submit(GenerationRequest(
        prompt="Once upon a time", params=SamplingParams(
            temperature=0.0, max_tokens=24, ignore_eos=True, loop_guard="off")))
    dead = engine.submit(GenerationRequest(
        prompt=PROMPT, params=SamplingParams(temperature=0.0, max_tokens=8,
                                             grammar=NOTHING))).result(60)
    assert dead.finish_reason == "error"
    assert dead.error is not None and "the grammar allows no token" in dead.error
    assert dead.metrics.generated_tokens == 0
    assert story.result(60).finish_reason == "length"
    after = engine.submit(GenerationRequest(
        prompt=PROMPT, params=SamplingParams(temperature=0.0, max_tokens=4,
                                             grammar=YES_NO))).result(60)
    assert after.finish_reason == "stop" and after.text in ("yes", "no")


def test_a_dead_end_mid_answer_is_the_request_s_fault(engine: Engine, native: Native) -> None:
    """After some tokens the answer is not a 500 from the engine: a 400 on the grammar."""
    eog = tuple((t, -100.0) for t in range(native.model.n_vocab) if native.vocab.is_eog(t))
    last = engine.submit(GenerationRequest(
        prompt=PROMPT, params=SamplingParams(temperature=0.0, max_tokens=8, grammar=ZERO,
                                             logit_bias=eog))).result(60)
    assert last.finish_reason == "error" and last.metrics.generated_tokens == 1
    with pytest.raises(ApiError) as refused:
        _raise_for_engine_failure(last, user_grammar=True)
    assert refused.value.status == 400 and refused.value.code == "invalid_grammar"
    assert str(refused.value).startswith("the grammar allows no token")
