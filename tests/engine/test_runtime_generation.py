"""The Engine on the real demo model: answers, streaming, stops, metrics, cancellation."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.errors import ContextOverflowError, EngineClosedError, QueueFullError
from engine.launch import LaunchSpec
from engine.native.batch import Batch
from engine.native.sampler import SamplerChain
from engine.requests import GenerationRequest, SamplingParams
from engine.runtime import Engine

pytestmark = pytest.mark.slow

QUESTION = "What is the capital of France? Answer briefly."
GREEDY = SamplingParams(temperature=0.0, max_tokens=24)


@pytest.fixture(scope="module")
def engine(demo_model: Path) -> Iterator[Engine]:
    eng = Engine(LaunchSpec(str(demo_model), n_threads=1, n_ctx=2048, n_seq_max=2))
    yield eng
    eng.close()


def test_warm_up_decodes_once_at_load_and_leaves_nothing_behind(
        demo_model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    decode = Batch.decode

    def counted(self: Batch, ctx: Any) -> int:
        calls.append(self.n_tokens)
        return decode(self, ctx)

    monkeypatch.setattr(Batch, "decode", counted)
    answers = []
    for warm in (True, False):
        calls.clear()
        with Engine(LaunchSpec(str(demo_model), n_threads=1, n_ctx=1024,
                               warm_up=warm)) as eng:
            loaded_with = list(calls)
            assert eng._ctx.seq_pos_max(0) == -1  # the warm-up's cells are gone
            final = eng.submit(ask(QUESTION)).result(60)
        assert loaded_with == ([2] if warm else [])  # BOS and EOS, once
        assert final.metrics.cached_tokens == 0
        answers.append(final.text)
    assert answers[0] == answers[1] and "paris" in answers[0].lower()


def ask(text: str) -> GenerationRequest:
    return GenerationRequest(messages=({"role": "user", "content": text},), params=GREEDY)


def test_answers_paris_and_stops_at_end_of_turn(engine: Engine) -> None:
    final = engine.submit(ask(QUESTION)).result(timeout=60)
    assert "paris" in final.text.lower()
    assert final.finish_reason == "stop"


def test_streamed_chunks_add_up_to_the_result(engine: Engine) -> None:
    handle = engine.submit(ask(QUESTION))
    chunks = list(handle)
    assert [c.finish_reason for c in chunks[:-1]] == [None] * (len(chunks) - 1)
    assert chunks[-1].finish_reason is not None
    final = handle.result(timeout=1)
    assert "".join(c.text for c in chunks) == final.text
    assert sum(len(c.token_ids) for c in chunks) == final.metrics.generated_tokens
    # figures grow as the answer streams: every chunk carries the metrics so far
    counts = [c.metrics.generated_tokens for c in chunks]
    assert counts == sorted(counts) and counts[0] == 1


def test_metrics_follow_the_design_definitions(engine: Engine) -> None:
    final = engine.submit(GenerationRequest(
        prompt="Once upon a time", params=SamplingParams(temperature=0.0, max_tokens=16,
                                                         loop_guard="off"))).result(60)
    m = final.metrics
    assert final.finish_reason == "length" and m.generated_tokens == 16
    assert m.prompt_tokens == len(engine.tokenize("Once upon a time"))
    assert m.ttft_s is not None and m.ttft_s > 0
    assert m.prefill_tps is not None and m.decode_tps is not None and m.e2e_tps is not None
    # end-to-end includes the prompt time, so it is slower than decode alone
    assert m.e2e_tps < m.decode_tps
    # some of the decode time is the engine's own (sampling, streaming), most is llama.cpp's
    assert m.decode_overhead is not None and 0.0 < m.decode_overhead < 0.5


def test_decode_overhead_counts_the_time_spent_outside_llama_cpp(
        engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    pause = 0.02
    sample = SamplerChain.sample

    def slow_sample(self: SamplerChain, ctx: Any, index: int) -> int:
        time.sleep(pause)  # work of the engine's own, between two llama_decode calls
        return sample(self, ctx, index)

    monkeypatch.setattr(SamplerChain, "sample", slow_sample)
    m = engine.submit(GenerationRequest(
        prompt="Once upon a time", params=SamplingParams(temperature=0.0, max_tokens=12,
                                                         loop_guard="off",
                                                         ignore_eos=True))).result(60).metrics
    assert m.decode_tps is not None and m.decode_overhead is not None
    decode_s = (m.generated_tokens - 1) / m.decode_tps
    outside = m.decode_overhead * decode_s
    # 11 decode steps after the first token, each with one slowed sample
    assert outside >= 11 * pause * 0.9
    assert outside < decode_s


def test_second_request_reuses_the_cached_prompt_prefix(engine: Engine) -> None:
    system = {"role": "system", "content": "You are terse. " * 20}
    first = GenerationRequest(messages=(system, {"role": "user", "content": "Hi"}),
                              params=GREEDY)
    second = GenerationRequest(messages=(system, {"role": "user", "content": "Hello"}),
                               params=GREEDY)
    engine.submit(first).result(60)
    m = engine.submit(second).result(60).metrics
    assert m.cached_tokens >= 60
    assert m.cached_tokens < m.prompt_tokens


def test_stop_sequence_ends_the_answer_before_it(engine: Engine) -> None:
    plain = engine.submit(ask(QUESTION)).result(60).text
    word = plain.split()[1]
    params = SamplingParams(temperature=0.0, max_tokens=24, stop=(word,))
    final = engine.submit(GenerationRequest(
        messages=({"role": "user", "content": QUESTION},), params=params)).result(60)
    assert final.finish_reason == "stop"
    assert word not in final.text
    assert plain.startswith(final.text)


def test_parallel_requests_give_the_same_greedy_answers(engine: Engine) -> None:
    alone = engine.submit(ask(QUESTION)).result(60).text
    handles = [engine.submit(ask(QUESTION)) for _ in range(3)]  # 2 slots + 1 queued
    assert [h.result(120).text for h in handles] == [alone] * 3


def test_cancel_frees_the_slot(engine: Engine) -> None:
    long = GenerationRequest(prompt="Count: one, two,",
                             params=SamplingParams(max_tokens=2000, loop_guard="off"))
    handle = engine.submit(long)
    first = next(iter(handle))
    assert first.finish_reason is None
    handle.cancel()
    final = handle.result(timeout=30)
    assert final.finish_reason == "cancelled"
    assert final.metrics.generated_tokens < 2000
    assert "paris" in engine.submit(ask(QUESTION)).result(60).text.lower()


def test_async_iteration_streams_the_same_answer(engine: Engine) -> None:
    async def collect() -> str:
        handle = engine.submit(ask(QUESTION))
        return "".join([c.text async for c in handle])

    assert "paris" in asyncio.run(collect()).lower()


def test_prompt_longer_than_a_sequence_is_refused(engine: Engine) -> None:
    with pytest.raises(ContextOverflowError) as info:
        engine.submit(GenerationRequest(prompt="word " * 3000))
    assert info.value.n_ctx_seq == engine.n_ctx_per_seq == 1024


def test_status_reports_slots_and_devices(engine: Engine) -> None:
    status = engine.status()
    assert len(status["slots"]) == 2
    assert status["load_progress"] == 1.0
    assert status["n_ctx_per_seq"] == 1024
    assert any(d["name"] == "CPU" for d in status["devices"])


def test_full_queue_refuses_and_closed_engine_refuses(demo_model: Path) -> None:
    eng = Engine(LaunchSpec(str(demo_model), n_threads=1, n_ctx=512), queue_size=1)
    try:
        slow = GenerationRequest(prompt="Hello", params=SamplingParams(max_tokens=500,
                                                                       loop_guard="off"))
        first = eng.submit(slow)
        next(iter(first))  # the first request now holds the only slot
        eng.submit(slow)  # waits in the queue
        with pytest.raises(QueueFullError):
            eng.submit(slow)
    finally:
        eng.close()
    assert first.result(5).finish_reason == "cancelled"
    with pytest.raises(EngineClosedError):
        eng.submit(GenerationRequest(prompt="Hello"))
    eng.close()  # idempotent
